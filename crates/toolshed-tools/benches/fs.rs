//! In-process benchmarks of the file tools (`cargo bench -p toolshed-tools --bench fs`).
//! The whole-process comparisons with ripgrep are in `bench/fs-tools.sh`.
//!
//! - `edit/fuzzy_match_20k_lines`: the matcher alone, old_string copied without the class's
//!   indentation so the exact matcher misses and the indentation matcher finds it, in a
//!   20,000-line file;
//! - `edit/tool_20k_lines`: the whole edit (read, match, atomic write, diff) of that file;
//! - `read/last_window_64mib`: the last 2,000 lines of a 64 MiB file;
//! - `grep/stdlib` and `glob/stdlib`: python3's standard library (skipped if python3 is missing).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use toolshed_core::ToolContext;
use toolshed_core::tool::TypedTool;
use toolshed_tools::fs::edit::matcher::{Edit, apply};
use toolshed_tools::fs::{EditTool, GlobTool, GrepTool, ReadTool};

fn handlers(n: usize) -> String {
    (0..n)
        .map(|i| format!("class Handler{i}:\n    def handle(self, request):\n        value = request.get('k{i}')\n        return value\n\n"))
        .collect()
}

const OLD: &str = "def handle(self, request):\n    value = request.get('k3999')\n    return value";
const NEW: &str = "def handle(self, request):\n    value = request.get('k3999', None)\n    return value";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

fn edit(c: &mut Criterion) {
    let content = handlers(4000);
    assert_eq!(content.lines().count(), 20_000);
    let mut group = c.benchmark_group("edit");
    group.bench_function("fuzzy_match_20k_lines", |b| {
        b.iter(|| {
            let done = apply(&Edit { content: &content, old: OLD, new: NEW, replace_all: false, crlf: false }).unwrap();
            assert_eq!(done.strategy.name(), "indentation");
            done
        });
    });
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let rt = runtime();
    group.bench_function("tool_20k_lines", |b| {
        b.to_async(&rt).iter_batched(
            || {
                std::fs::write(root.join("work.py"), &content).unwrap();
                let args = serde_json::json!({"file_path": "work.py", "old_string": OLD, "new_string": NEW});
                (serde_json::from_value(args).unwrap(), ToolContext::standalone(&root, root.join(".data")))
            },
            |(args, ctx)| async move { EditTool.run(args, ctx).await.unwrap() },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn read(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let lines = 64 * 1024 * 1024 / 64;
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(root.join("big.txt")).unwrap());
        for i in 0..lines {
            writeln!(f, "{i:012} the quick brown fox jumps over the lazy dog, again").unwrap();
        }
    }
    let rt = runtime();
    let offset = lines - 1999;
    c.bench_function("read/last_window_64mib", |b| {
        b.to_async(&rt).iter(|| {
            let args = serde_json::from_value(serde_json::json!({"file_path": "big.txt", "offset": offset})).unwrap();
            let ctx = ToolContext::standalone(&root, root.join(".data"));
            async move { ReadTool.run(args, ctx).await.unwrap() }
        });
    });
}

fn stdlib() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"])
        .output()
        .ok()?;
    let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    dir.is_dir().then_some(dir)
}

fn search(c: &mut Criterion) {
    let Some(dir) = stdlib() else { return };
    let rt = runtime();
    let mut group = c.benchmark_group("search");
    group.sample_size(10);
    let ctx = |root: &Path| ToolContext::standalone(root, std::env::temp_dir().join("toolshed-bench"));
    group.bench_function("grep/stdlib", |b| {
        b.to_async(&rt).iter(|| {
            let args = serde_json::from_value(serde_json::json!({"pattern": r"def \w+\(self"})).unwrap();
            let ctx = ctx(&dir);
            async move { GrepTool.run(args, ctx).await.unwrap() }
        });
    });
    group.bench_function("glob/stdlib", |b| {
        b.to_async(&rt).iter(|| {
            let args = serde_json::from_value(serde_json::json!({"pattern": "*.py"})).unwrap();
            let ctx = ctx(&dir);
            async move { GlobTool.run(args, ctx).await.unwrap() }
        });
    });
    group.finish();
}

criterion_group!(benches, edit, read, search);
criterion_main!(benches);
