//! tool_search figures: index build time and query latency (p50/p99) over 10,000 synthetic
//! tools, and the time to assemble the visible tool list with 1,000 deferred tools.
//! Run: `cargo bench -p toolshed-core --bench tool_search`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use toolshed_core::permission::Ruleset;
use toolshed_core::registry::{PermissionHook, Registry, Source, View, qualified_name};
use toolshed_core::search::{AutoDefer, SearchDoc, SearchIndex, ToolSearch};
use toolshed_core::tool::{Exposure, ToolOutput, Typed, tool_fn};

const NOUNS: &[&str] = &[
    "issue",
    "pull_request",
    "invoice",
    "dashboard",
    "container",
    "page",
    "record",
    "message",
    "branch",
    "alert",
    "user",
    "workflow_run",
    "deployment",
    "bucket",
    "secret",
    "ticket",
    "table",
    "query",
    "metric",
    "incident",
];
const VERBS: &[&str] = &["list", "get", "create", "update", "delete", "search", "archive", "export", "merge", "sync"];

fn doc(i: usize) -> SearchDoc {
    let (noun, verb) = (NOUNS[i % NOUNS.len()], VERBS[(i / NOUNS.len()) % VERBS.len()]);
    let server = format!("service{}", i / 50);
    let tool = format!("{verb}_{noun}_{i}");
    SearchDoc {
        name: qualified_name(&server, &tool),
        original_name: Some(tool),
        server: Some(server),
        description: format!(
            "{verb} a {} in service {}; returns it as JSON with its id, owner, timestamps and state.",
            noun.replace('_', " "),
            i / 50
        ),
        params: vec!["owner".into(), "id".into(), "limit".into(), format!("{noun}_id")],
        param_descriptions: vec!["The account that owns it.".into(), "Its id.".into()],
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    /// An id.
    #[allow(dead_code)]
    id: String,
}

fn main() {
    let docs: Vec<SearchDoc> = (0..10_000).map(doc).collect();
    let mut builds = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        black_box(SearchIndex::build(&docs));
        builds.push(started.elapsed());
    }
    builds.sort();
    let index = SearchIndex::build(&docs);
    let queries = [
        "open a PR",
        "list failing CI runs",
        "create a ticket",
        "delete a secret from the bucket",
        "archive old dashboards",
        "search incidents by owner",
        "merge pull request",
        "export metrics table",
        "sync deployment status",
        "get user invoice",
    ];
    let mut times = Vec::new();
    for round in 0..200 {
        for q in &queries {
            let started = Instant::now();
            black_box(index.search(q, 8));
            if round > 0 {
                times.push(started.elapsed());
            }
        }
    }
    times.sort();
    println!("tool_search index over 10,000 tools: build median {:?}", builds[builds.len() / 2]);
    println!(
        "tool_search query over 10,000 tools ({} queries): p50 {:?}, p99 {:?}",
        times.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );

    // The visible list: 10 direct built-ins and 1,000 deferred MCP tools, with the permission
    // and auto-deferral hooks, as `toolshed tools` and every model request assemble it.
    let mut registry = Registry::new();
    for name in ["read", "list", "glob", "grep", "write", "edit", "apply_patch", "bash", "webfetch", "todowrite"] {
        registry.register_builtin(tool_fn(name, "A built-in tool.", |_: Args, _| async { Ok(ToolOutput::text("")) }));
    }
    for i in 0..1_000 {
        let d = doc(i);
        registry.register(
            tool_fn(d.name.clone(), d.description.clone(), |_: Args, _| async { Ok(ToolOutput::text("")) })
                .exposure(Exposure::Deferred),
            Source::Mcp(d.server.clone().unwrap_or_default()),
        );
    }
    registry.register(Typed::new(ToolSearch::new()), Source::Runtime);
    registry.add_hook(Arc::new(PermissionHook(Arc::new(Ruleset::defaults()))));
    registry.add_hook(Arc::new(AutoDefer::new(0.1, Vec::new(), HashMap::new())));
    let view = View { agent: "build", model: Some("openai/gpt-5.1"), found: None };
    assert_eq!(registry.direct(&view).len(), 11);
    let mut times = Vec::new();
    for _ in 0..2_000 {
        let started = Instant::now();
        black_box(registry.direct(&view));
        times.push(started.elapsed());
    }
    times.sort();
    println!(
        "visible list with 1,000 deferred tools: p50 {:?}, p99 {:?}",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
}
