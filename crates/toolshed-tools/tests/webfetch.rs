//! `webfetch` against HTTP servers on loopback started by the tests, through the full chain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{Body, Reply, Server, call, executor, redact_port};
use toolshed_core::config::Config;
use toolshed_core::permission::{Action, Rule, Ruleset};
use toolshed_core::registry::Registry;
use toolshed_core::tool::Attachment;

const ARTICLE: &str = include_str!("fixtures/article.html");
/// A page as Sphinx writes it (docs.python.org's tutorial): code in `<pre>` without `<code>`,
/// highlighted by spans, the language on the wrapping `<div>`.
const SPHINX: &str = include_str!("fixtures/sphinx.html");
/// A page as texinfo 7 writes it (the Bash manual): `<pre class="example-preformatted">`.
const TEXINFO: &str = include_str!("fixtures/texinfo.html");

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0a, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

fn registry() -> Registry {
    let mut registry = Registry::new();
    toolshed_tools::register_builtins(&mut registry, &Config::default());
    registry
}

async fn fetch(args: serde_json::Value) -> toolshed_core::ToolResult {
    let tmp = tempfile::tempdir().unwrap();
    call(&executor(registry(), tmp.path()), "webfetch", args).await
}

/// A server answering every path with `reply()`.
async fn serving(reply: impl Fn() -> Reply + Send + Sync + 'static) -> Server {
    Server::start(move |_| reply()).await
}

#[tokio::test]
async fn article_page_becomes_markdown_without_scripts_styles_or_navigation() {
    let server = serving(|| Reply::ok("text/html; charset=utf-8", ARTICLE)).await;
    let result = fetch(json!({"url": server.url("/posts/async-cancellation")})).await;
    assert!(!result.is_error, "{}", result.output);
    for gone in [
        "gtag",
        "dataLayer",
        "font-family",
        "Careers",
        "Breadcrumbs",
        "cookies",
        "Related posts",
        "©",
        "JavaScript",
        "Search",
    ] {
        assert!(!result.output.contains(gone), "{gone} should be dropped:\n{}", result.output);
    }
    assert_eq!(result.metadata["status"], 200);
    assert_eq!(
        result.title.as_deref().map(|t| redact_port(t, server.addr)).as_deref(),
        Some("http://127.0.0.1:PORT/posts/async-cancellation (text/html)")
    );
    insta::assert_snapshot!(redact_port(&result.output, server.addr));
}

#[tokio::test]
async fn sphinx_code_without_a_code_element_is_a_fenced_block_in_the_page_language() {
    let server = serving(|| Reply::ok("text/html; charset=utf-8", SPHINX)).await;
    let result = fetch(json!({"url": server.url("/3/tutorial/introduction.html")})).await;
    assert!(!result.is_error, "{}", result.output);
    let out = &result.output;
    for block in [
        "```python\n# this is the first comment\nspam = 1  # and this is the second comment\n          \
         # ... and now a third!\ntext = \"# This is not a comment because it's inside quotes.\"\n```",
        "```python\n>>> 2 + 2\n4\n>>> 50 - 5*6\n20\n>>> 8 / 5  # division always returns a floating-point \
         number\n1.6\n```",
        "```\n>>> word = 'Python'\n>>> word[0]  # character in position 0\n'P'\n```",
    ] {
        assert!(out.contains(block), "missing\n{block}\nin\n{out}");
    }
    // Outside the fences nothing of the code is left to be read as Markdown.
    let mut in_code = false;
    for line in out.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            assert!(!line.contains(">>>") || line.contains("glossary"), "code read as Markdown: {line}\n{out}");
            assert!(!line.contains("comment"), "code read as Markdown: {line}\n{out}");
        }
    }
    assert!(!in_code, "a fence is left open:\n{out}");
}

#[tokio::test]
async fn texinfo_examples_are_fenced_blocks() {
    let server = serving(|| Reply::ok("text/html; charset=utf-8", TEXINFO)).await;
    let result = fetch(json!({"url": server.url("/manual/html_node/Shell-Functions.html")})).await;
    assert!(!result.is_error, "{}", result.output);
    let out = &result.output;
    for block in [
        "```\n# a comment, not a heading\nfunc1()\n{\n   echo \"$1\" > out   # quoted\n}\n```",
        "```\n> quoted? no: a prompt\nfname () compound-command [ redirections ]\n```",
    ] {
        assert!(out.contains(block), "missing\n{block}\nin\n{out}");
    }
}

#[tokio::test]
async fn article_page_as_plain_text() {
    let server = serving(|| Reply::ok("text/html", ARTICLE)).await;
    let result = fetch(json!({"url": server.url("/post"), "format": "text"})).await;
    assert!(!result.is_error, "{}", result.output);
    insta::assert_snapshot!(redact_port(&result.output, server.addr));
}

#[tokio::test]
async fn html_format_returns_the_source() {
    let server = serving(|| Reply::ok("text/html", ARTICLE)).await;
    let result = fetch(json!({"url": server.url("/post"), "format": "html"})).await;
    assert!(!result.is_error, "{}", result.output);
    assert!(result.output.contains("<script>\n    window.dataLayer"), "{}", result.output);
    assert!(result.output.ends_with("</html>\n") || result.output.ends_with("</html>"));
}

#[tokio::test]
async fn json_passes_through_unchanged() {
    let body = r#"{"name": "toolshed", "tags": ["rust", "agents"], "nested": {"ok": true}}"#;
    let server = serving(move || Reply::ok("application/json", body)).await;
    let result = fetch(json!({"url": server.url("/api/info.json")})).await;
    assert!(!result.is_error, "{}", result.output);
    assert!(result.output.ends_with(body));
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @r#"
    Fetched http://127.0.0.1:PORT/api/info.json (application/json, 72 bytes).

    {"name": "toolshed", "tags": ["rust", "agents"], "nested": {"ok": true}}
    "#);
}

#[tokio::test]
async fn a_redirect_chain_on_the_same_host_is_followed() {
    let chain = Server::start(|req| match req.path() {
        "/a" => Reply::redirect(301, "/b"),
        "/b" => Reply::redirect(302, "c"),
        "/c" => Reply::redirect(307, "/d?page=2"),
        "/d" => Reply::redirect(308, "/final"),
        _ => Reply::ok("text/plain; charset=utf-8", "arrived"),
    })
    .await;
    let result = fetch(json!({"url": chain.url("/a")})).await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(result.metadata["redirects"].as_array().unwrap().len(), 4);
    insta::assert_snapshot!(redact_port(&result.output, chain.addr), @r"
    Fetched http://127.0.0.1:PORT/final (text/plain, 7 bytes).
    Redirected from http://127.0.0.1:PORT/a.

    arrived
    ");
    let paths: Vec<String> = chain.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(paths, ["/a", "/b", "/c", "/d?page=2", "/final"]);
}

#[tokio::test]
async fn a_redirect_to_another_port_counts_as_another_host() {
    let server = Server::start(|req| match req.path() {
        "/old" => Reply::redirect(301, "/older"),
        "/older" => Reply::redirect(302, "/new?x=1"),
        _ => Reply::redirect(307, "http://127.0.0.1:1/unreachable"),
    })
    .await;
    let result = fetch(json!({"url": server.url("/old")})).await;
    assert!(!result.is_error);
    assert!(result.output.contains("to another host (after 2 redirects on the same host)"), "{}", result.output);
    assert_eq!(result.metadata["redirect"], "http://127.0.0.1:1/unreachable");
}

#[tokio::test]
async fn more_than_ten_redirects_is_an_error() {
    let server = Server::start(|req| {
        let n: u32 = req.path().trim_start_matches("/r").parse().unwrap_or(0);
        Reply::redirect(302, &format!("/r{}", n + 1))
    })
    .await;
    let result = fetch(json!({"url": server.url("/r0")})).await;
    assert!(result.is_error);
    assert_eq!(server.requests().len(), 11);
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @"http://127.0.0.1:PORT/r0 redirected more than 10 times (last to http://127.0.0.1:PORT/r11); giving up. The server may be in a redirect loop.");
}

#[tokio::test]
async fn a_redirect_to_another_host_is_reported_not_followed() {
    let server = Server::start(|req| match req.path() {
        "/moved" => Reply::redirect(302, "/moved-again"),
        "/moved-again" => Reply::redirect(
            301,
            &format!(
                "http://localhost:{}/elsewhere",
                req.header("Host").unwrap_or("").rsplit(':').next().unwrap_or("")
            ),
        ),
        _ => Reply::ok("text/plain", "should not be fetched"),
    })
    .await;
    let result = fetch(json!({"url": server.url("/moved")})).await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(server.requests().len(), 2, "the other host must not be contacted");
    assert_eq!(result.metadata["redirect"], server.localhost_url("/elsewhere"));
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @r#"
    http://127.0.0.1:PORT/moved-again redirects (HTTP 301 Moved Permanently) to another host (after 1 redirect on the same host):
    http://localhost:PORT/elsewhere

    webfetch does not follow a redirect to another host by itself. To read that page, call webfetch again with url "http://localhost:PORT/elsewhere".
    "#);
}

#[tokio::test]
async fn a_slow_response_hits_the_timeout() {
    let server =
        serving(|| Reply::ok("text/plain", "").with(Body::AfterDelay(Duration::from_secs(5), b"late".to_vec()))).await;
    let started = Instant::now();
    let result = fetch(json!({"url": server.url("/slow"), "timeout_ms": 300})).await;
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
    assert!(result.is_error);
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @"Fetching http://127.0.0.1:PORT/slow timed out after 300 ms waiting for the response. The server is slow or not answering; retry with a larger timeout_ms (at most 120000) or try another URL.");
}

#[tokio::test]
async fn a_body_that_trickles_in_hits_the_timeout_while_reading() {
    let chunks = vec![b"first part ".to_vec(), b"second part".to_vec()];
    let server = Server::start(move |_| {
        Reply::ok("text/plain", "").with(Body::Trickle { chunks: chunks.clone(), interval: Duration::from_secs(5) })
    })
    .await;
    let result = fetch(json!({"url": server.url("/trickle"), "timeout_ms": 400})).await;
    assert!(result.is_error);
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @"Fetching http://127.0.0.1:PORT/trickle timed out after 400 ms while reading the body (11 bytes received). The server is slow or not answering; retry with a larger timeout_ms (at most 120000) or try another URL.");
}

#[tokio::test]
async fn a_20_mb_body_is_cut_at_5_mib_with_a_note() {
    let server = serving(|| Reply::ok("text/plain", "").with(Body::Large { total: 20_000_000, fill: b'x' })).await;
    let tmp = tempfile::tempdir().unwrap();
    let result = call(&executor(registry(), tmp.path()), "webfetch", json!({"url": server.url("/huge.txt")})).await;
    assert!(!result.is_error, "{}", &result.output[..200]);
    assert_eq!(result.metadata["bytes"], 5 * 1024 * 1024);
    assert_eq!(result.metadata["truncated"], true);
    let head: String = result.output.lines().take(2).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!(redact_port(&head, server.addr), @r"
    Fetched http://127.0.0.1:PORT/huge.txt (text/plain, 5.0 MiB).
    Note: the response is larger than 5.0 MiB; only its first 5.0 MiB of 19.1 MiB was read, so the end is missing.
    ");
    // The chain's output bound then keeps head and tail and spills the whole text to a file.
    let spill = result.spill_path().expect("the 5 MiB text is spilled");
    assert!(std::fs::metadata(spill).unwrap().len() >= 5 * 1024 * 1024);
}

#[tokio::test]
async fn an_image_comes_back_as_an_attachment() {
    let server = serving(|| Reply::ok("image/png", PNG)).await;
    let result = fetch(json!({"url": server.url("/pixel.png")})).await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(result.attachments, vec![Attachment::Image { mime_type: "image/png".into(), data: PNG.to_vec() }]);
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @"Fetched http://127.0.0.1:PORT/pixel.png (image/png, 67 bytes); the image is attached.");
}

#[tokio::test]
async fn an_unlabelled_image_is_recognised_by_its_bytes() {
    let server = serving(|| Reply::new(200).header("Content-Type", "application/octet-stream").body(PNG)).await;
    let result = fetch(json!({"url": server.url("/download?id=7")})).await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(result.attachments.len(), 1);
}

#[tokio::test]
async fn binary_types_are_refused_with_a_reason() {
    let server = serving(|| Reply::ok("application/pdf", b"%PDF-1.7 binary".to_vec())).await;
    let result = fetch(json!({"url": server.url("/paper.pdf")})).await;
    assert!(result.is_error);
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @"http://127.0.0.1:PORT/paper.pdf is application/pdf, 15 bytes, a binary format webfetch cannot show as text. webfetch returns HTML pages, text, JSON and images (PNG, JPEG, GIF, WebP). Look for an HTML or text version of this content instead.");

    let zip = serving(|| Reply::new(200).body(b"PK\x03\x04\x14\0\0\0binary\0zip".to_vec())).await;
    let result = fetch(json!({"url": zip.url("/archive")})).await;
    assert!(result.is_error);
    assert!(result.output.contains("binary data without a Content-Type"), "{}", result.output);
}

#[tokio::test]
async fn a_404_reports_the_status_and_what_the_server_said() {
    let page = "<html><head><title>Not found</title><script>x()</script></head><body><nav>Home</nav><h1>404</h1><p>No page at this address.</p></body></html>";
    let server = serving(move || Reply::new(404).header("Content-Type", "text/html").body(page)).await;
    let result = fetch(json!({"url": server.url("/missing")})).await;
    assert!(result.is_error);
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @r"
    HTTP 404 Not Found from http://127.0.0.1:PORT/missing. The page does not exist (any more); check the URL, or search for where it moved.

    The server said: 404 No page at this address.
    ");
}

#[tokio::test]
async fn a_refused_connection_is_reported() {
    let server = serving(|| Reply::new(200)).await;
    let url = server.url("/");
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let result = fetch(json!({"url": url})).await;
    assert!(result.is_error);
    assert!(result.output.starts_with("Could not fetch http://127.0.0.1:"), "{}", result.output);
    assert!(result.output.to_lowercase().contains("refused"), "{}", result.output);
}

#[tokio::test]
async fn only_http_and_https_urls_are_fetched() {
    let result = fetch(json!({"url": "file:///etc/passwd"})).await;
    assert!(result.is_error);
    insta::assert_snapshot!(result.output, @r#"webfetch fetches http:// and https:// URLs only; "file:///etc/passwd" uses file:. To read a local file, use the read tool."#);
}

#[tokio::test]
async fn a_timeout_above_the_maximum_is_rejected_by_the_schema() {
    let result = fetch(json!({"url": "http://127.0.0.1:1/", "timeout_ms": 500000})).await;
    assert!(result.is_error);
    assert!(result.output.contains("timeout_ms"), "{}", result.output);
}

#[tokio::test]
async fn permission_rules_apply_to_the_url_and_to_each_redirect() {
    let server = Server::start(|req| match req.path() {
        "/public" => Reply::redirect(302, "/private/secret"),
        _ => Reply::ok("text/plain", "secret"),
    })
    .await;
    let rules = Ruleset::new(vec![
        Rule::new("*", "*", Action::Allow),
        Rule::new("webfetch", "http://127.0.0.1:*/private/*", Action::Deny),
    ]);
    let tmp = tempfile::tempdir().unwrap();
    let exec = toolshed_core::exec::Executor::builder(registry(), tmp.path().to_path_buf())
        .data_dir(tmp.path().join(".data"))
        .permission(Arc::new(rules))
        .build();
    let direct = call(&exec, "webfetch", json!({"url": server.url("/private/secret")})).await;
    assert!(direct.is_error);
    assert!(direct.output.contains("denied") || direct.output.contains("deny"), "{}", direct.output);
    let redirected = call(&exec, "webfetch", json!({"url": server.url("/public")})).await;
    assert!(redirected.is_error, "{}", redirected.output);
    let paths: Vec<String> = server.requests().iter().map(|r| r.target.clone()).collect();
    assert_eq!(paths, ["/public"], "the denied redirect target must not be fetched");
}

#[test]
fn description_and_schema() {
    let registry = registry();
    let spec = registry.get("webfetch").unwrap().spec();
    assert!(spec.flags.parallel_safe && spec.flags.read_only);
    insta::assert_snapshot!("description", spec.description);
    insta::assert_json_snapshot!("parameters", spec.parameters);
}

#[tokio::test]
async fn https_to_a_server_that_does_not_speak_tls_fails_cleanly() {
    // A server that answers every connection with plain HTTP at once, whatever it is sent.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut stream, _)) = listener.accept().await {
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n").await;
        }
    });
    let started = Instant::now();
    let result = fetch(json!({"url": format!("https://{addr}/")})).await;
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(result.is_error);
    assert!(result.output.starts_with("Could not fetch https://127.0.0.1:"), "{}", result.output);
    assert!(result.metadata.get("panic").is_none());
}

#[tokio::test]
async fn a_page_built_by_javascript_says_why_it_is_empty() {
    let page = "<html><head><title>App</title></head><body><div id=\"root\"></div><script src=\"/app.js\"></script></body></html>";
    let server = serving(move || Reply::ok("text/html", page)).await;
    let result = fetch(json!({"url": server.url("/app")})).await;
    assert!(!result.is_error, "{}", result.output);
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @r#"
    Fetched http://127.0.0.1:PORT/app (text/html, 109 bytes) as Markdown.
    Title: App

    The response has no readable text after conversion (the page may be built by JavaScript, which webfetch does not run). format "html" shows the source.
    "#);
    let empty = serving(|| Reply::ok("text/plain", "")).await;
    let result = fetch(json!({"url": empty.url("/empty")})).await;
    assert!(result.output.ends_with("\n\nThe response has no readable text."), "{}", result.output);
}

/// A page of `levels` nested `<div>`s around one paragraph.
fn nested_divs(levels: usize) -> String {
    format!(
        "<!doctype html><html><head><title>Deep</title></head><body>{}<p>the inner text</p>{}</body></html>",
        "<div>".repeat(levels),
        "</div>".repeat(levels)
    )
}

#[tokio::test]
async fn deeply_nested_pages_convert_with_a_note_instead_of_overflowing_the_stack() {
    for levels in [600, 10_000, 200_000] {
        let page = nested_divs(levels);
        let server = serving(move || Reply::ok("text/html", page.clone())).await;
        for format in ["markdown", "text"] {
            let started = Instant::now();
            let result = fetch(json!({"url": server.url("/nest.html"), "format": format})).await;
            let took = started.elapsed();
            assert!(!result.is_error, "{levels} {format}: {}", result.output);
            assert!(took < Duration::from_secs(10), "{levels} levels as {format} took {took:?}");
            assert!(result.output.ends_with("the inner text"), "{levels} {format}: {}", result.output);
            assert!(
                result.output.contains("Note: the page nests elements too deep (over 240 levels);"),
                "{levels} {format}: {}",
                result.output
            );
        }
    }
}

#[tokio::test]
async fn the_flattening_note_says_how_much_was_unwrapped() {
    let server = serving(|| Reply::ok("text/html", nested_divs(600))).await;
    let result = fetch(json!({"url": server.url("/nest.html")})).await;
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @r"
    Fetched http://127.0.0.1:PORT/nest.html (text/html, 6.5 KiB) as Markdown.
    Title: Deep
    Note: the page nests elements too deep (over 240 levels); 361 elements below that were unwrapped, so their text is kept but not their structure.

    the inner text
    ");
}

#[tokio::test]
async fn misnested_formatting_nests_deep_too_and_is_flattened_as_fast() {
    // Each `</b>` leaves its `<div>` open (HTML's adoption agency algorithm), so this page nests
    // 200,000 deep although every tag is closed; html5ever alone takes minutes on it.
    let page = format!("<body>{}<p>the end", "<b><div></b>x".repeat(200_000));
    let server = serving(move || Reply::ok("text/html", page.clone())).await;
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let args = json!({"url": server.url("/tangled.html"), "format": "text"});
    let result = call(&executor(registry(), tmp.path()), "webfetch", args).await;
    let took = started.elapsed();
    assert!(!result.is_error, "{}", &result.output[..result.output.len().min(500)]);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(result.output.contains("Note: the page nests elements too deep"), "{}", &result.output[..500]);
    let full = std::fs::read_to_string(result.spill_path().expect("the long text is spilled")).unwrap();
    assert!(full.ends_with("the end"), "{}", &full[full.len() - 200..]);
    // The converting thread has ended with the call.
    let deadline = Instant::now() + Duration::from_secs(10);
    while converting_threads() > 0 {
        assert!(Instant::now() < deadline, "a conversion thread is still running");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Threads of this process converting a page (names are cut to 15 bytes by Linux).
fn converting_threads() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("webfetch-conv"))
        .count()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

#[tokio::test]
async fn a_gzip_encoded_body_is_decoded() {
    let text = "Plain text that travelled gzip-compressed.\n".repeat(50);
    let body = gzip(text.as_bytes());
    let server =
        serving(move || Reply::ok("text/plain; charset=utf-8", body.clone()).header("Content-Encoding", "gzip")).await;
    let result = fetch(json!({"url": server.url("/notes.txt")})).await;
    assert!(!result.is_error, "{}", result.output);
    assert!(result.output.ends_with(&text), "{}", result.output);
    assert_eq!(result.metadata["bytes"], text.len());
    assert_eq!(result.metadata["content_encoding"], "gzip");
    let head = result.output.lines().next().unwrap_or("");
    insta::assert_snapshot!(redact_port(head, server.addr), @"Fetched http://127.0.0.1:PORT/notes.txt (text/plain, gzip, 2.1 KiB).");
    assert_eq!(server.requests()[0].header("Accept-Encoding"), Some("gzip, deflate"));
}

#[tokio::test]
async fn a_gzip_bomb_is_cut_at_5_mib_of_decoded_bytes() {
    // 1 GiB of text as 1024 gzip members of 1 MiB each (a valid gzip stream), about 1 MB on the wire.
    let member = gzip(&vec![b'a'; 1 << 20]);
    let bomb = member.repeat(1024);
    assert!(bomb.len() < 4 << 20, "{}", bomb.len());
    let server = serving(move || Reply::ok("text/plain", bomb.clone()).header("Content-Encoding", "gzip")).await;
    let result = fetch(json!({"url": server.url("/bomb.txt")})).await;
    assert!(!result.is_error, "{}", &result.output[..300]);
    assert_eq!(result.metadata["bytes"], 5 * 1024 * 1024);
    assert_eq!(result.metadata["truncated"], true);
    let head: String = result.output.lines().take(2).collect::<Vec<_>>().join("\n");
    insta::assert_snapshot!(redact_port(&head, server.addr), @r"
    Fetched http://127.0.0.1:PORT/bomb.txt (text/plain, gzip, 5.0 MiB).
    Note: the response decompresses (gzip) to more than 5.0 MiB; only its first 5.0 MiB was read, so the end is missing.
    ");
    // Memory stays bounded: the whole process (other tests included) never came near 1 GiB.
    if let Some(peak) = peak_rss_kib() {
        assert!(peak < 600 * 1024, "peak RSS {peak} KiB");
    }
}

/// The process's peak resident set size (Linux).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test]
async fn an_encoding_webfetch_did_not_ask_for_is_refused_with_the_reason() {
    let server = serving(|| Reply::ok("text/html", b"\x1b\x00binary".to_vec()).header("Content-Encoding", "br")).await;
    let result = fetch(json!({"url": server.url("/page")})).await;
    assert!(result.is_error);
    insta::assert_snapshot!(redact_port(&result.output, server.addr), @r#"http://127.0.0.1:PORT/page sent its body compressed as "br", which webfetch cannot decode (it asked for gzip or deflate, and the server ignored that). Try another URL for this content."#);
}
