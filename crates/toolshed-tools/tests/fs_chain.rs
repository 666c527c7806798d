//! The file tools through the whole execution chain: permissions (rules, `external_directory`,
//! approvers) decide with the patterns the tools send, and no path a model can send makes a
//! tool read or write outside the worktree without approval.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};
use toolshed_core::config::Config;
use toolshed_core::exec::{Executor, Session, ToolCall, ToolResult};
use toolshed_core::permission::{Action, ApproveAll, Approver, RejectAll, Rule, Ruleset};
use toolshed_core::registry::Registry;

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    fs::create_dir_all(root.join("folder")).unwrap();
    fs::write(root.join("file.md"), "inside\n").unwrap();
    fs::create_dir_all(base.join("outside")).unwrap();
    fs::write(base.join("outside/secret.txt"), "secret\n").unwrap();
    fs::write(base.join("escape.txt"), "outside\n").unwrap();
    World { _tmp: tmp, base, root }
}

fn executor(w: &World, rules: Ruleset, approver: Arc<dyn Approver>) -> Executor {
    let mut registry = Registry::new();
    toolshed_tools::register_builtins(&mut registry, &Config::default());
    Executor::builder(registry, &w.root)
        .data_dir(w.base.join("data"))
        .permission(Arc::new(rules))
        .approver(approver)
        .build()
}

async fn call(exec: &Executor, tool: &str, args: Value) -> ToolResult {
    exec.call(&Session::new("s", "build"), ToolCall::json("c", tool, args)).await
}

/// Every file under `dir`, relative, sorted.
fn snapshot_tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let meta = fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                stack.push(p);
            } else {
                out.push((p.strip_prefix(dir).unwrap().display().to_string(), fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

/// The MAF path cases (reference/maf.md §3), with absolute paths outside the worktree pointed
/// at the scratch directory so a failure could never touch the real system.
fn adversarial_paths(w: &World) -> Vec<String> {
    let base = w.base.display();
    let mut cases: Vec<String> = [
        "file.md",
        "folder/file.md",
        "a/b/c.txt",
        "folder\\file.md",
        "a\\b\\c.txt",
        "folder//file.md",
        "a///b////c.txt",
        "file.md/",
        "notes..md",
        "subdir/",
        "../file.md",
        "folder/../file.md",
        "./file.md",
        "folder/./file.md",
        "C:\\file.md",
        "C:/file.md",
        "D:file.md",
        "",
        "   ",
        "../folder",
        "../escape.txt",
        "C:\\temp\\file.txt",
        "./file.txt",
        "../other",
        "folder/../../escape.md",
        "C:\\temp\\file.md",
        "../../escape.txt",
        "foo/",
        "foo\\",
        "foo/../bar.txt",
        "./bar.txt",
        "C:/abs/path",
        "\\rooted",
        ".",
        "..",
        "../escape",
        "C:/Windows",
        "../../escape",
        "user/../../escape",
        "a\\b",
        "a\0b",
        "../outside/secret.txt",
        "folder/../../outside/new.txt",
    ]
    .iter()
    .map(std::string::ToString::to_string)
    .collect();
    cases.extend([
        format!("{base}/escape.txt"),
        format!("{base}/outside/secret.txt"),
        format!("{base}/root-evil/x.txt"),
        format!("{base}/root/../escape.txt"),
        format!("file://{base}/escape.txt"),
    ]);
    cases
}

#[tokio::test]
async fn no_adversarial_path_writes_outside_the_worktree_without_approval() {
    let w = world();
    std::os::unix::fs::symlink(w.base.join("outside"), w.root.join("linked")).unwrap();
    std::os::unix::fs::symlink(w.base.join("escape.txt"), w.root.join("leak.txt")).unwrap();
    let outside_before = snapshot_tree(&w.base.join("outside"));
    let escape_before = fs::read(w.base.join("escape.txt")).unwrap();
    let exec = executor(&w, Ruleset::defaults(), Arc::new(RejectAll));
    let mut paths = adversarial_paths(&w);
    paths.extend(["linked/new.txt", "linked/secret.txt", "leak.txt", "linked/../escape.txt"].map(String::from));
    for p in &paths {
        call(&exec, "write", json!({"file_path": p, "content": "pwned\n"})).await;
        call(&exec, "edit", json!({"file_path": p, "old_string": "secret", "new_string": "pwned"})).await;
        call(&exec, "edit", json!({"file_path": p, "old_string": "", "new_string": "pwned\n"})).await;
    }
    assert_eq!(snapshot_tree(&w.base.join("outside")), outside_before);
    assert_eq!(fs::read(w.base.join("escape.txt")).unwrap(), escape_before);
    let mut top: Vec<String> = fs::read_dir(&w.base)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "data")
        .collect();
    top.sort();
    assert_eq!(top, ["escape.txt", "outside", "root"], "something was created next to the worktree");
}

#[tokio::test]
async fn no_adversarial_path_reads_outside_the_worktree_without_approval() {
    let w = world();
    std::os::unix::fs::symlink(w.base.join("outside"), w.root.join("linked")).unwrap();
    let exec = executor(&w, Ruleset::defaults(), Arc::new(RejectAll));
    let mut paths = adversarial_paths(&w);
    paths.extend(["linked/secret.txt", "/etc/passwd", "../../../../../../etc/passwd", "~/.bashrc"].map(String::from));
    for p in &paths {
        for (tool, args) in [
            ("read", json!({"file_path": p})),
            ("list", json!({"path": p})),
            ("glob", json!({"pattern": "*", "path": p})),
            ("grep", json!({"pattern": "secret|root:", "path": p})),
        ] {
            let r = call(&exec, tool, args).await;
            assert!(
                !r.output.contains("secret\n") && !r.output.contains("root:x:"),
                "{tool} {p:?} leaked: {}",
                r.output
            );
            if r.output.contains("external_directory") {
                assert!(r.is_error, "{tool} {p:?}");
            }
        }
    }
}

#[tokio::test]
async fn outside_reads_ask_for_external_directory_and_run_when_approved() {
    let w = world();
    let rejecting = executor(&w, Ruleset::defaults(), Arc::new(RejectAll));
    let r = call(&rejecting, "read", json!({"file_path": "../outside/secret.txt"})).await;
    assert!(r.is_error);
    let dir = w.base.join("outside").display().to_string();
    assert!(
        r.output.starts_with(&format!("Permission for `external_directory` on `{dir}/*` was not granted")),
        "{}",
        r.output
    );
    let approving = executor(&w, Ruleset::defaults(), Arc::new(ApproveAll));
    let r = call(&approving, "read", json!({"file_path": "../outside/secret.txt"})).await;
    assert!(!r.is_error, "{}", r.output);
    assert!(r.output.starts_with("1: secret"), "{}", r.output);
}

#[tokio::test]
async fn symlink_escapes_are_refused_for_writes_even_when_everything_is_approved() {
    let w = world();
    std::os::unix::fs::symlink(w.base.join("outside"), w.root.join("linked")).unwrap();
    let exec = executor(&w, Ruleset::defaults(), Arc::new(ApproveAll));
    let r = call(&exec, "write", json!({"file_path": "linked/planted.txt", "content": "x"})).await;
    assert!(r.is_error && r.output.contains("never write through a link that leaves the worktree"), "{}", r.output);
    assert!(!w.base.join("outside/planted.txt").exists());
    // Named by its real path, the outside file is an ordinary approved external write.
    let real = w.base.join("outside/planted.txt");
    let r = call(&exec, "write", json!({"file_path": real, "content": "x"})).await;
    assert!(!r.is_error, "{}", r.output);
}

#[tokio::test]
async fn rules_see_worktree_relative_paths() {
    let w = world();
    fs::create_dir_all(w.root.join("secrets")).unwrap();
    fs::write(w.root.join("secrets/key.txt"), "k\n").unwrap();
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("edit", "secrets/*", Action::Deny));
    rules.push(Rule::new("read", "secrets/*", Action::Deny));
    rules.push(Rule::new("grep", "secrets", Action::Deny));
    let exec = executor(&w, rules, Arc::new(RejectAll));
    let r = call(&exec, "write", json!({"file_path": "secrets/new.txt", "content": "x"})).await;
    assert!(r.is_error && r.output.contains("forbid `edit` on `secrets/new.txt`"), "{}", r.output);
    let abs = w.root.join("secrets/key.txt");
    let r = call(&exec, "read", json!({"file_path": abs})).await;
    assert!(r.is_error && r.output.contains("forbid `read` on `secrets/key.txt`"), "{}", r.output);
    let r = call(&exec, "grep", json!({"pattern": "k", "path": "./secrets/"})).await;
    assert!(r.is_error && r.output.contains("forbid `grep` on `secrets`"), "{}", r.output);
    let r = call(&exec, "write", json!({"file_path": "ok.txt", "content": "x"})).await;
    assert!(!r.is_error, "{}", r.output);
    let r = call(&exec, "read", json!({"file_path": ".env"})).await;
    assert!(r.is_error && r.output.contains("Permission for `read` on `.env` was not granted"), "{}", r.output);
}

#[tokio::test]
async fn spilled_outputs_are_readable_without_asking() {
    let w = world();
    let exec = executor(&w, Ruleset::defaults(), Arc::new(RejectAll));
    let big: String = (0..5000).map(|i| format!("match {i} {}\n", "x".repeat(300))).collect();
    fs::write(w.root.join("big.txt"), big).unwrap();
    let r = call(&exec, "grep", json!({"pattern": "match", "limit": 1000})).await;
    let spill = r.spill_path().expect("grep output over the budget is spilled");
    let r = call(&exec, "read", json!({"file_path": spill, "limit": 3})).await;
    assert!(!r.is_error, "{}", r.output);
    assert!(r.output.starts_with("1: Found 5000 matching lines"), "{}", r.output);
}

#[tokio::test]
async fn read_only_tools_are_parallel_safe_and_writers_use_the_edit_key() {
    let mut registry = Registry::new();
    toolshed_tools::register_builtins(&mut registry, &Config::default());
    for name in ["read", "list", "glob", "grep"] {
        let spec = registry.get(name).unwrap().spec();
        assert!(spec.flags.read_only && spec.flags.parallel_safe, "{name}");
        assert_eq!(spec.permission, name);
    }
    for name in ["write", "edit"] {
        let spec = registry.get(name).unwrap().spec();
        assert!(spec.flags.mutating && !spec.flags.parallel_safe, "{name}");
        assert_eq!(spec.permission, "edit");
    }
}

/// A FIFO, a socket and a device (approved outside the worktree) are refused at once by every
/// file tool: nothing waits for a FIFO's writer or reads a device that never ends.
#[tokio::test]
async fn special_files_are_refused_at_once_and_left_alone() {
    let w = world();
    let fifo = w.root.join("pipe");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let _socket = std::os::unix::net::UnixListener::bind(w.root.join("sock")).unwrap();
    let exec = executor(&w, Ruleset::defaults(), Arc::new(ApproveAll));
    let started = std::time::Instant::now();
    for (name, kind) in [("pipe", "a named pipe (FIFO)"), ("sock", "a socket"), ("/dev/zero", "a character device")] {
        for (tool, args, verb) in [
            ("read", json!({"file_path": name}), "read"),
            ("write", json!({"file_path": name, "content": "x"}), "write"),
            ("edit", json!({"file_path": name, "old_string": "a", "new_string": "b"}), "edit"),
        ] {
            let r = call(&exec, tool, args).await;
            assert!(r.is_error, "{tool} {name}: {}", r.output);
            assert!(
                r.output.starts_with(&format!("Cannot {verb} `"))
                    && r.output.contains(&format!("it is {kind}, not a regular file")),
                "{tool} {name}: {}",
                r.output
            );
        }
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    let meta = fs::symlink_metadata(&fifo).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()), "the FIFO was replaced");
    // grep and glob walk past them.
    let r = call(&exec, "grep", json!({"pattern": "inside"})).await;
    assert!(!r.is_error && r.output.contains("file.md"), "{}", r.output);
}

#[tokio::test]
async fn grep_never_shows_files_whose_read_would_ask_or_is_denied() {
    let w = world();
    fs::write(w.root.join(".env"), "API_KEY=sk-secret-1\n").unwrap();
    fs::create_dir_all(w.root.join("config")).unwrap();
    fs::write(w.root.join("config/.env.production"), "API_KEY=sk-secret-2\n").unwrap();
    fs::write(w.root.join(".env.example"), "API_KEY=\n").unwrap();
    fs::create_dir_all(w.root.join("private")).unwrap();
    fs::write(w.root.join("private/keys.txt"), "API_KEY=sk-secret-3\n").unwrap();
    fs::write(w.root.join("folder/code.rs"), "let k = env(\"API_KEY\");\n").unwrap();
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("read", "private/*", Action::Deny));
    let exec = executor(&w, rules.clone(), Arc::new(RejectAll));
    for mode in ["content", "files_with_matches", "count"] {
        let r = call(&exec, "grep", json!({"pattern": "API_KEY", "output_mode": mode})).await;
        assert!(!r.is_error, "{mode}: {}", r.output);
        assert!(!r.output.contains("sk-secret"), "{mode}: {}", r.output);
        assert!(r.output.contains("code.rs") && r.output.contains(".env.example"), "{mode}: {}", r.output);
        assert!(
            r.output.contains(
                "2 files not searched: reading them needs the user's permission (`.env`, `config/.env.production`)"
            ),
            "{mode}: {}",
            r.output
        );
        assert!(r.output.contains("1 file not searched: the rules forbid reading it"), "{mode}: {}", r.output);
        assert_eq!(r.metadata["skipped"], 3);
    }
    // One file named as the path: the read rules ask, as for `read`.
    let r = call(&exec, "grep", json!({"pattern": "API_KEY", "path": ".env"})).await;
    assert!(r.is_error && r.output.contains("Permission for `read` on `.env` was not granted"), "{}", r.output);
    let r = call(&exec, "grep", json!({"pattern": "API_KEY", "path": "private/keys.txt"})).await;
    assert!(r.is_error && r.output.contains("Permission denied"), "{}", r.output);
    // Approved, the file is searched.
    let exec = executor(&w, rules, Arc::new(ApproveAll));
    let r = call(&exec, "grep", json!({"pattern": "API_KEY", "path": ".env"})).await;
    assert!(r.output.contains("sk-secret-1"), "{}", r.output);
}

/// A directory search checks the `read` rules against the file it opened: a directory swapped
/// for a link to a denied one between the walk and the open shows nothing of it (review 14:
/// 46 of 400 searches printed the denied file's line).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_link_mid_search_shows_no_denied_file() {
    let w = world();
    fs::create_dir_all(w.root.join("d")).unwrap();
    fs::write(w.root.join("d/a.txt"), "public\n").unwrap();
    fs::create_dir_all(w.root.join("secrets")).unwrap();
    fs::write(w.root.join("secrets/a.txt"), "sekrit\n").unwrap();
    std::os::unix::fs::symlink("secrets", w.root.join("x")).unwrap();
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("read", "*", Action::Allow));
    rules.push(Rule::new("read", "secrets/*", Action::Deny));
    let exec = executor(&w, rules, Arc::new(RejectAll));
    let swapper = Swapper::start(w.root.join("d"), w.root.join("x"));
    let mut public = 0;
    for _ in 0..400 {
        let r = call(&exec, "grep", json!({"pattern": "sekrit|public", "path": "d"})).await;
        assert!(!r.output.lines().any(|l| l.trim_end().ends_with(": sekrit")), "{}", r.output);
        public += usize::from(r.output.lines().any(|l| l.trim_end().ends_with(": public")));
    }
    assert!(swapper.stop() > 100);
    assert!(public > 0, "the search never found the allowed file");
}

/// Swaps two names atomically (`renameat2` with `RENAME_EXCHANGE`) until stopped.
#[cfg(target_os = "linux")]
struct Swapper {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<u64>,
}

#[cfg(target_os = "linux")]
impl Swapper {
    fn start(a: PathBuf, b: PathBuf) -> Swapper {
        use std::os::unix::ffi::OsStrExt as _;
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
            let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
            let mut swaps = 0u64;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: two valid C strings; RENAME_EXCHANGE swaps the two names atomically.
                unsafe {
                    libc::renameat2(libc::AT_FDCWD, a.as_ptr(), libc::AT_FDCWD, b.as_ptr(), libc::RENAME_EXCHANGE)
                };
                swaps += 1;
            }
            swaps
        });
        Swapper { stop, thread }
    }

    /// Stops swapping: how many swaps were made.
    fn stop(self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

/// `grep` on one file reads only the file the permission stage checked: one swapped for a link
/// to a denied file since shows nothing of it; and a file swapped for a FIFO does not hold the
/// search (review 15: `grep` on `pub.txt` printed the denied line 7 times in 300; a FIFO hung it).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_swapped_for_a_link_or_a_fifo_mid_search_shows_nothing_and_holds_nothing() {
    let w = world();
    fs::write(w.root.join("pub.txt"), "public\n").unwrap();
    fs::create_dir_all(w.root.join("secrets")).unwrap();
    fs::write(w.root.join("secrets/a.txt"), "sekrit\n").unwrap();
    std::os::unix::fs::symlink("secrets/a.txt", w.root.join("q.txt")).unwrap();
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("read", "*", Action::Allow));
    rules.push(Rule::new("read", "secrets/*", Action::Deny));
    let exec = executor(&w, rules, Arc::new(RejectAll));
    let swapper = Swapper::start(w.root.join("pub.txt"), w.root.join("q.txt"));
    for _ in 0..400 {
        let r = call(&exec, "grep", json!({"pattern": "sekrit|public", "path": "pub.txt"})).await;
        assert!(!r.output.lines().any(|l| l.trim_end().ends_with(": sekrit")), "{}", r.output);
    }
    swapper.stop();
    let fifo = std::ffi::CString::new(w.root.join("ff").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    fs::write(w.root.join("pub.txt"), "public\n").unwrap();
    let swapper = Swapper::start(w.root.join("pub.txt"), w.root.join("ff"));
    for _ in 0..200 {
        let search = call(&exec, "grep", json!({"pattern": "public"}));
        let r = tokio::time::timeout(std::time::Duration::from_secs(20), search).await;
        assert!(r.is_ok(), "the search waited on the FIFO");
    }
    swapper.stop();
}

/// The `read` rules cover every tool that shows a file's text: `edit`, `write` and
/// `apply_patch` show a changed file's present text (a diff, the lines nearest a miss), so they
/// need `read` of it too (review 14: an edit of a read-denied file with a wrong `old_string`
/// printed its secret line).
#[tokio::test]
async fn the_edit_tools_need_read_of_the_files_they_show() {
    let w = world();
    fs::create_dir_all(w.root.join("secrets")).unwrap();
    fs::write(w.root.join("secrets/a.txt"), "sekrit-line\n").unwrap();
    fs::write(w.root.join(".env"), "API_KEY=topsecret\n").unwrap();
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("edit", "*", Action::Allow));
    rules.push(Rule::new("read", "secrets/*", Action::Deny));
    let exec = executor(&w, rules, Arc::new(RejectAll));
    let calls = [
        ("edit", json!({"file_path": "secrets/a.txt", "old_string": "wrong", "new_string": "x"})),
        ("edit", json!({"file_path": "secrets/a.txt", "old_string": "sekrit", "new_string": "x"})),
        ("write", json!({"file_path": "secrets/a.txt", "content": "new\n"})),
        (
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: secrets/a.txt\n@@\n-wrong\n+x\n*** End Patch\n"}),
        ),
        ("apply_patch", json!({"input": "*** Begin Patch\n*** Delete File: secrets/a.txt\n*** End Patch\n"})),
        // The defaults ask before `.env` is read: asked here, and refused.
        ("edit", json!({"file_path": ".env", "old_string": "API_KEY=wrong", "new_string": "x"})),
        (
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: .env\n@@\n-API_KEY=wrong\n+x\n*** End Patch\n"}),
        ),
    ];
    for (tool, args) in calls {
        let r = call(&exec, tool, args.clone()).await;
        assert!(r.is_error, "{tool} {args}: {}", r.output);
        assert!(!r.output.contains("sekrit-line") && !r.output.contains("topsecret"), "{tool} {args}: {}", r.output);
        assert!(r.output.contains("read"), "{tool} {args}: {}", r.output);
    }
    assert_eq!(fs::read_to_string(w.root.join("secrets/a.txt")).unwrap(), "sekrit-line\n");
    // A new file shows nothing that was there: no `read` needed.
    let r = call(&exec, "write", json!({"file_path": "secrets/new.txt", "content": "mine\n"})).await;
    assert!(!r.is_error, "{}", r.output);
    // Allowed to read, the same edit runs.
    let r = call(&exec, "edit", json!({"file_path": "file.md", "old_string": "inside", "new_string": "in"})).await;
    assert!(!r.is_error, "{}", r.output);
}
