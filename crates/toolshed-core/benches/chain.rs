//! Per-call overhead of the whole execution chain (resolve, decode with schema validation,
//! permit, admit, run, convert, bound, record) on a tool that does nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolshed_core::exec::{Executor, Session, ToolCall};
use toolshed_core::registry::Registry;
use toolshed_core::tool::{ToolOutput, tool_fn};

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct ReadLike {
    /// The file to read.
    file_path: String,
    /// 1-based first line.
    offset: Option<u64>,
    /// Most lines.
    limit: Option<u64>,
}

fn bench_chain(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tmp = std::env::temp_dir().join("toolshed-bench-chain");
    let mut registry = Registry::new();
    registry.register_builtin(
        tool_fn("noop", "Does nothing.", |_: ReadLike, _| async { Ok(ToolOutput::text("ok")) }).read_only(),
    );
    registry.register_builtin(tool_fn("noop_exclusive", "Does nothing, alone.", |_: ReadLike, _| async {
        Ok(ToolOutput::text("ok"))
    }));
    let exec = Executor::builder(registry, &tmp).data_dir(&tmp).build();
    let session = Session::new("bench", "build");
    let n = AtomicU64::new(0);
    for tool in ["noop", "noop_exclusive"] {
        c.bench_function(&format!("chain/{tool}"), |b| {
            b.to_async(&runtime).iter(|| {
                let i = n.fetch_add(1, Ordering::Relaxed);
                let call = ToolCall::json("c", tool, json!({"file_path": "src/main.rs", "offset": i, "limit": 100}));
                let (exec, session) = (&exec, &session);
                async move {
                    let r = exec.call(session, call).await;
                    assert!(!r.is_error, "{}", r.output);
                }
            });
        });
    }
}

criterion_group!(benches, bench_chain);
criterion_main!(benches);
