//! What diagnostics add to an edit in a long session, where the language server is warm: the
//! same edit through the full chain with the real pyright answering (the hook syncs the file,
//! waits for its diagnostics and 150 ms more for a revision) and with no language server.
//!
//! `cargo bench -p toolshed-tools --bench lsp_warm` (installs pyright from npm on first use,
//! like the tests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/servers/mod.rs"]
mod servers;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolshed_core::config::LspConfig;
use toolshed_core::exec::{Executor, Session, ToolCall};
use toolshed_core::hooks::Hooks;
use toolshed_core::registry::Registry;
use toolshed_core::tool::Typed;
use toolshed_tools::fs::EditTool;
use toolshed_tools::lsp::{Diagnostics, LspService, ServerTable};

fn executor(root: &std::path::Path, lsp_toml: &str) -> Executor {
    let sections: BTreeMap<String, LspConfig> = toml::from_str(lsp_toml).unwrap();
    let service = Arc::new(LspService::from_table(ServerTable::from_config(&sections)));
    let mut registry = Registry::new();
    registry.register_builtin(Typed::new(EditTool));
    let mut hooks = Hooks::default();
    hooks.add_post_write(Arc::new(Diagnostics::new(service)));
    Executor::builder(registry, root).data_dir(root.join(".data")).hooks(hooks).build()
}

fn bench_warm_edit(c: &mut Criterion) {
    let Some(program) = servers::pyright() else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::write(root.join("lib.py"), "def twice(n: int) -> int:\n    return 2 * n\n").unwrap();
    let with = executor(&root, &format!("[pyright]\ncommand = {}\n", json!(program.to_str().unwrap())));
    let without = executor(&root, "[pyright]\nenabled = false\n");
    let session = Session::new("bench", "build");
    let n = AtomicU64::new(0);
    let mut group = c.benchmark_group("lsp_warm");
    group.sample_size(20).measurement_time(Duration::from_secs(20));
    for (name, exec) in [("edit_with_pyright_diagnostics", &with), ("edit_without_language_server", &without)] {
        group.bench_function(name, |b| {
            b.to_async(&runtime).iter(|| {
                // Alternate between two bodies so every edit changes the file.
                let i = n.fetch_add(1, Ordering::Relaxed);
                let (old, new) = if i.is_multiple_of(2) { ("2 * n", "n + n") } else { ("n + n", "2 * n") };
                let call = ToolCall::json(
                    format!("c{i}"),
                    "edit",
                    json!({"file_path": "lib.py", "old_string": old, "new_string": new}),
                );
                let (exec, session) = (exec, &session);
                async move {
                    let r = exec.call(session, call).await;
                    assert!(!r.is_error && !r.output.contains("unavailable"), "{}", r.output);
                }
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_warm_edit);
criterion_main!(benches);
