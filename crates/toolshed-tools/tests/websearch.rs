//! `websearch` against fake SearXNG, Brave and Exa backends on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::{Reply, Server, call, executor, redact_port};
use toolshed_core::config::{Config, WebsearchConfig};
use toolshed_core::registry::Registry;

/// API keys are read from the environment at call time; `PATH` is always set, so the tests use
/// it as the key variable instead of changing the process environment.
const KEY_ENV: &str = "PATH";

fn registry(backend: &str, url: &str) -> Registry {
    let config = Config {
        websearch: Some(WebsearchConfig {
            backend: backend.into(),
            url: Some(url.into()),
            api_key_env: Some(KEY_ENV.into()),
        }),
        ..Config::default()
    };
    let mut registry = Registry::new();
    toolshed_tools::register_builtins(&mut registry, &config);
    registry
}

async fn search(backend: &str, url: &str, args: Value) -> toolshed_core::ToolResult {
    let tmp = tempfile::tempdir().unwrap();
    call(&executor(registry(backend, url), tmp.path()), "websearch", args).await
}

fn searxng_answer() -> Value {
    json!({
        "query": "rust cancellation",
        "number_of_results": 4,
        "results": [
            {"url": "https://blog.example.com/async-cancellation", "title": "Understanding Async <b>Cancellation</b>",
             "content": "In async Rust, a future is <strong>cancelled</strong> when it is dropped &amp; never polled again.", "engine": "duckduckgo"},
            {"url": "https://docs.rs/tokio/latest/tokio/macro.select.html", "title": "select in tokio - Rust",
             "content": "Waits on multiple concurrent branches, returning when the first branch completes, cancelling the remaining branches."},
            {"url": "https://blog.example.com/async-cancellation", "title": "Duplicate", "content": "same URL again"},
            {"title": "No URL", "content": "skipped"},
            {"url": "https://example.org/untitled", "title": "", "content": ""}
        ],
        "answers": [], "suggestions": []
    })
}

#[tokio::test]
async fn searxng_results_come_back_as_a_compact_list() {
    let server = Server::start(|_| Reply::ok("application/json", searxng_answer().to_string())).await;
    let result = search("searxng", &server.url("/"), json!({"query": "  rust cancellation "})).await;
    assert!(!result.is_error, "{}", result.output);
    let request = &server.requests()[0];
    assert_eq!(request.path(), "/search");
    assert_eq!(request.query("q").as_deref(), Some("rust cancellation"));
    assert_eq!(request.query("format").as_deref(), Some("json"));
    assert_eq!(result.metadata["backend"], "searxng");
    insta::assert_snapshot!(result.output, @r#"
    3 results for "rust cancellation":

    1. Understanding Async Cancellation
       https://blog.example.com/async-cancellation
       In async Rust, a future is cancelled when it is dropped & never polled again.

    2. select in tokio - Rust
       https://docs.rs/tokio/latest/tokio/macro.select.html
       Waits on multiple concurrent branches, returning when the first branch completes, cancelling the remaining branches.

    3. (no title)
       https://example.org/untitled
    "#);
}

#[tokio::test]
async fn limit_caps_the_number_of_results() {
    let server = Server::start(|_| Reply::ok("application/json", searxng_answer().to_string())).await;
    let result = search("searxng", &server.url("/"), json!({"query": "rust", "limit": 1})).await;
    assert!(!result.is_error, "{}", result.output);
    assert!(result.output.starts_with("1 result for \"rust\":"), "{}", result.output);
    assert!(!result.output.contains("2."));
}

#[tokio::test]
async fn no_results_says_so_and_suggests_another_query() {
    let server = Server::start(|_| Reply::ok("application/json", r#"{"results": []}"#)).await;
    let result = search("searxng", &server.url("/"), json!({"query": "xyzzy plugh"})).await;
    assert!(!result.is_error);
    insta::assert_snapshot!(result.output, @r#"No results for "xyzzy plugh". Try fewer or different words, or a broader query."#);
}

#[tokio::test]
async fn brave_gets_the_key_header_and_count() {
    let answer = json!({"web": {"results": [
        {"title": "Tokio - An asynchronous Rust runtime", "url": "https://tokio.rs/", "description": "Tokio is an <strong>asynchronous</strong> runtime for the Rust programming language."}
    ]}});
    let server = Server::start(move |_| Reply::ok("application/json", answer.to_string())).await;
    let result = search("brave", &server.url("/res/v1/web/search"), json!({"query": "tokio", "limit": 5})).await;
    assert!(!result.is_error, "{}", result.output);
    let request = &server.requests()[0];
    assert_eq!(request.method, "GET");
    assert_eq!(request.query("count").as_deref(), Some("5"));
    assert_eq!(request.header("X-Subscription-Token"), std::env::var(KEY_ENV).ok().as_deref());
    insta::assert_snapshot!(result.output, @r#"
    1 result for "tokio":

    1. Tokio - An asynchronous Rust runtime
       https://tokio.rs/
       Tokio is an asynchronous runtime for the Rust programming language.
    "#);
}

#[tokio::test]
async fn exa_gets_a_json_post_with_the_key_and_returns_highlights() {
    let answer = json!({"results": [
        {"title": "Structured concurrency", "url": "https://example.com/sc", "highlights": ["Tasks form a tree.", "A parent outlives its children."]},
        {"title": "Summary only", "url": "https://example.com/sum", "summary": "A short summary."}
    ]});
    let server = Server::start(move |_| Reply::ok("application/json", answer.to_string())).await;
    let result = search("exa", &server.url("/search"), json!({"query": "structured concurrency", "limit": 2})).await;
    assert!(!result.is_error, "{}", result.output);
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.header("x-api-key"), std::env::var(KEY_ENV).ok().as_deref());
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    assert_eq!(body["query"], "structured concurrency");
    assert_eq!(body["numResults"], 2);
    insta::assert_snapshot!(result.output, @r#"
    2 results for "structured concurrency":

    1. Structured concurrency
       https://example.com/sc
       Tasks form a tree. … A parent outlives its children.

    2. Summary only
       https://example.com/sum
       A short summary.
    "#);
}

#[tokio::test]
async fn searxng_without_the_json_format_explains_the_setting() {
    let server = Server::start(|_| Reply::new(403).header("Content-Type", "text/html").body("Forbidden")).await;
    let result = search("searxng", &server.url("/"), json!({"query": "x"})).await;
    assert!(result.is_error);
    insta::assert_snapshot!(result.output, @"The web search failed: the searxng backend answered HTTP 403: SearXNG refused the JSON format; `json` must be listed under search.formats in its settings.yml. This is not a problem with your query.");
}

#[tokio::test]
async fn a_rejected_key_and_a_broken_answer_are_explained() {
    let server = Server::start(|req| match req.path() {
        "/denied" => Reply::new(401).body("bad token"),
        _ => Reply::ok("text/html", "<html>not an API</html>"),
    })
    .await;
    let denied = search("brave", &server.url("/denied"), json!({"query": "x"})).await;
    assert!(denied.is_error);
    assert!(denied.output.contains("HTTP 401: the API key in PATH was rejected"), "{}", denied.output);
    let html = search("searxng", &server.url("/"), json!({"query": "x"})).await;
    assert!(html.is_error);
    insta::assert_snapshot!(redact_port(&html.output, server.addr), @"The web search failed: the searxng backend at http://127.0.0.1:PORT/search could not be reached or answered badly: its answer is not JSON (expected value at line 1 column 1); check that [websearch] url points at the backend's API. Retry later; this is not a problem with your query.");
}

#[tokio::test]
async fn an_empty_query_is_refused() {
    let server = Server::start(|_| Reply::ok("application/json", "{}")).await;
    let result = search("searxng", &server.url("/"), json!({"query": "   "})).await;
    assert!(result.is_error);
    assert!(server.requests().is_empty());
    insta::assert_snapshot!(result.output, @"The query is empty. Send the words to search for in `query`.");
}

#[test]
fn websearch_is_offered_only_with_a_usable_backend() {
    let mut none = Registry::new();
    toolshed_tools::register_builtins(&mut none, &Config::default());
    assert!(none.get("websearch").is_none());
    assert!(none.get("webfetch").is_some());

    let mut unknown = Registry::new();
    let config = Config {
        websearch: Some(WebsearchConfig { backend: "altavista".into(), url: None, api_key_env: None }),
        ..Config::default()
    };
    toolshed_tools::register_builtins(&mut unknown, &config);
    assert!(unknown.get("websearch").is_none());

    assert!(registry("searxng", "http://127.0.0.1:9/").get("websearch").is_some());
}

#[test]
fn description_and_schema() {
    let registry = registry("searxng", "http://127.0.0.1:9/");
    let spec = registry.get("websearch").unwrap().spec();
    assert!(spec.flags.parallel_safe && spec.flags.read_only);
    insta::assert_snapshot!("description", spec.description);
    insta::assert_json_snapshot!("parameters", spec.parameters);
}
