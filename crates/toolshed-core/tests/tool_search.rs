//! `tool_search` through the execution chain, and automatic deferral by context share.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::json;
use toolshed_core::exec::{Executor, Session, ToolCall};
use toolshed_core::registry::{Registry, Source, View, qualified_name};
use toolshed_core::search::{AutoDefer, ToolSearch};
use toolshed_core::tool::{Exposure, Tool, ToolOutput, Typed, tool_fn};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    /// The repository.
    #[allow(dead_code)]
    repo: String,
}

fn mcp_tool(server: &str, tool: &str, description: &str) -> impl Tool + use<> {
    tool_fn(qualified_name(server, tool), description.to_string(), |_: Args, _| async { Ok(ToolOutput::text("ok")) })
}

fn registry(deferred: bool) -> Registry {
    let mut r = Registry::new();
    r.register_builtin(tool_fn("read", "Read a file.", |_: Args, _| async { Ok(ToolOutput::text("")) }));
    let exposure = if deferred { Exposure::Deferred } else { Exposure::Direct };
    for (tool, description) in [
        ("create_pull_request", "Open a new pull request."),
        ("list_workflow_runs", "List the runs of an Actions workflow."),
        ("get_me", "Show the authenticated account."),
    ] {
        let t = mcp_tool("github", tool, description);
        let mut spec = t.spec().clone();
        spec.exposure = exposure;
        r.register(WithSpec(Box::new(t), spec), Source::Mcp("github".into()));
    }
    r.register(Typed::new(ToolSearch::new()), Source::Runtime);
    r
}

/// A tool with its spec replaced (to set an exposure on a closure tool).
struct WithSpec(Box<dyn Tool>, toolshed_core::ToolSpec);

impl Tool for WithSpec {
    fn spec(&self) -> &toolshed_core::ToolSpec {
        &self.1
    }
    fn prepare(
        &self,
        args: serde_json::Value,
    ) -> Result<Box<dyn toolshed_core::tool::Invocation + '_>, toolshed_core::ToolError> {
        self.0.prepare(args)
    }
}

fn direct_names(r: &Registry, found: Option<&std::collections::HashSet<String>>) -> Vec<String> {
    let view = View { agent: "build", model: None, found };
    r.direct(&view).iter().map(|v| v.entry.spec().name.clone()).collect()
}

#[tokio::test]
async fn search_returns_full_specs_and_found_tools_become_direct() {
    let r = registry(true);
    assert_eq!(direct_names(&r, None), ["read", "tool_search"]);
    let executor = Executor::builder(r, std::env::temp_dir()).build();
    let session = Session::new("s", "build");
    let result =
        executor.call(&session, ToolCall::json("c1", "tool_search", json!({"query": "open a PR", "limit": 1}))).await;
    assert!(!result.is_error, "{}", result.output);
    assert!(result.output.contains("\"name\": \"github_create_pull_request\""), "{}", result.output);
    assert!(result.output.contains("\"parameters\""), "{}", result.output);
    assert_eq!(result.metadata["tools"], json!(["github_create_pull_request"]));
    let found = session.found();
    assert_eq!(direct_names(executor.registry(), Some(&found)), ["read", "github_create_pull_request", "tool_search"]);
    let miss = executor.call(&session, ToolCall::json("c2", "tool_search", json!({"query": "zzzz"}))).await;
    assert!(!miss.is_error && miss.output.starts_with("No tool matches \"zzzz\""), "{}", miss.output);
    let empty = executor.call(&session, ToolCall::json("c3", "tool_search", json!({"query": "  "}))).await;
    assert!(empty.is_error && empty.output.starts_with("The query is empty."), "{}", empty.output);
}

#[tokio::test]
async fn a_long_query_is_read_up_to_its_cap_and_says_so() {
    let executor = Executor::builder(registry(true), std::env::temp_dir()).build();
    let session = Session::new("s", "build");
    // Past the cap nothing is read: a need named there finds nothing.
    let filler = "zq ".repeat(toolshed_core::search::MAX_QUERY_CHARS / 3 + 1);
    let past = executor
        .call(&session, ToolCall::json("c1", "tool_search", json!({"query": format!("{filler}create a pull request")})))
        .await;
    assert!(!past.is_error && past.output.starts_with("No tool matches \"zq zq"), "{}", past.output);
    assert!(past.output.contains("…\" among") && past.output.len() < 600, "{}", past.output);
    assert!(past.output.ends_with("(Only the query's first 2000 characters were read: a few words find tools best.)"));
    // A need said first is found however long the rest, and quotes, misspellings and words
    // without end in the rest cost no more than the cap allows (each of these used to take
    // seconds, and 65,536 words overflowed a counter).
    for rest in ["'x ".repeat(40_000), "\"a ".repeat(40_000), "delet fiel gihtub ".repeat(6_000), "w ".repeat(70_000)] {
        let long = executor
            .call(
                &session,
                ToolCall::json(
                    "c2",
                    "tool_search",
                    json!({"query": format!("open a pull request {rest}"), "limit": 1}),
                ),
            )
            .await;
        assert!(!long.is_error, "{}", long.output);
        assert_eq!(long.metadata["tools"], json!(["github_create_pull_request"]));
        assert!(long.output.contains("first 2000 characters were read"), "{}", long.output);
    }
}

#[test]
fn tool_search_is_absent_when_nothing_is_deferred() {
    assert_eq!(
        direct_names(&registry(false), None),
        ["read", "github_create_pull_request", "github_list_workflow_runs", "github_get_me"]
    );
}

#[test]
fn auto_defer_defers_servers_only_when_the_direct_list_exceeds_the_share() {
    let mut r = registry(false);
    let contexts = HashMap::from([("tiny/model".to_string(), 100u64), ("big/model".to_string(), 1_000_000u64)]);
    r.add_hook(Arc::new(AutoDefer::new(0.1, ["github".to_string()], contexts)));
    let names = |model: &str| -> Vec<String> {
        let view = View { agent: "build", model: Some(model), found: None };
        r.direct(&view).iter().map(|v| v.entry.spec().name.clone()).collect()
    };
    assert_eq!(names("tiny/model"), ["read", "tool_search"]);
    assert_eq!(names("big/model").len(), 4);
    let found: std::collections::HashSet<String> = ["github_get_me".to_string()].into();
    let view = View { agent: "build", model: Some("tiny/model"), found: Some(&found) };
    let direct: Vec<String> = r.direct(&view).iter().map(|v| v.entry.spec().name.clone()).collect();
    assert_eq!(direct, ["read", "github_get_me", "tool_search"]);
}
