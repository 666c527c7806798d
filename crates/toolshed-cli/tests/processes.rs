//! Processes and files a call leaves behind, through the `toolshed` command: what a flood of
//! output leaves on disk.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const TOOLSHED: &str = env!("CARGO_BIN_EXE_toolshed");

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl World {
    fn new(config: &str) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("w");
        std::fs::create_dir_all(&root).unwrap();
        Command::new("git").args(["init", "-q"]).arg(&root).status().unwrap();
        if !config.is_empty() {
            std::fs::write(root.join("toolshed.toml"), config).unwrap();
        }
        World { _tmp: tmp, root }
    }

    fn data(&self) -> PathBuf {
        self.root.join("../data")
    }

    fn toolshed(&self, args: &[&str]) -> Output {
        Command::new(TOOLSHED)
            .env("TOOLSHED_TRUST_PROJECT", "1")
            .args(args)
            .current_dir(&self.root)
            .env("HOME", self.root.join("../home"))
            .env("XDG_CONFIG_HOME", self.root.join("../home/.config"))
            .env("TOOLSHED_DATA_DIR", self.data())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The spill files and their sizes.
    fn spills(&self) -> Vec<(PathBuf, u64)> {
        let dir = toolshed_core::paths::spill_dir(&self.data(), &self.root);
        let Ok(entries) = std::fs::read_dir(&dir) else { return Vec::new() };
        entries.flatten().map(|e| (e.path(), e.metadata().unwrap().len())).collect()
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn total(files: &[(PathBuf, u64)]) -> u64 {
    files.iter().map(|f| f.1).sum()
}

/// The bytes of `path` from `at`, up to `n`.
fn slice(path: &Path, at: u64, n: usize) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).unwrap();
    f.seek(SeekFrom::Start(at)).unwrap();
    let mut buf = vec![0; n];
    let got = f.read(&mut buf).unwrap();
    buf.truncate(got);
    buf
}

#[test]
fn a_flood_of_output_leaves_at_most_the_spill_cap_on_disk() {
    let w = World::new("");
    // The issue's example: `yes` for 10 s wrote 1.86 GB before the cap.
    let out = w.toolshed(&["call", "bash", r#"{"command":"yes","timeout_ms":10000}"#]);
    let said = text(&out);
    let spills = w.spills();
    assert_eq!(spills.len(), 1, "{spills:?}\n{said}");
    let (path, size) = &spills[0];
    let cap = 64 << 20;
    assert!(*size <= cap + 200, "{size} bytes on disk");
    // It passed the cap: the file says where it dropped bytes, the model is told so.
    assert!(*size > cap - 1024, "{size}");
    let middle = String::from_utf8_lossy(&slice(path, cap / 2, 200)).into_owned();
    assert!(middle.contains("bytes not kept here: the output passed toolshed's spill limit"), "{middle:?}");
    assert!(said.contains("bytes from the middle were not kept"), "{said}");
    assert_eq!(slice(path, 0, 4), b"y\ny\n");
    assert_eq!(slice(path, size - 4, 4), b"y\ny\n");
}

#[test]
fn the_spill_caps_are_configurable_and_the_directory_keeps_its_total() {
    let w = World::new("[output]\nspill_max_bytes = 1048576\nspill_dir_max_bytes = 3145728\n");
    for _ in 0..5 {
        let out = w.toolshed(&["call", "bash", r#"{"command":"yes | head -c 5000000"}"#]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        // Outputs of the last minute are never deleted (a call may still be writing or
        // reporting them): age the ones there are, as if the calls were minutes apart.
        for (path, _) in w.spills() {
            let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
            let older = modified - std::time::Duration::from_secs(120);
            std::fs::File::options().write(true).open(&path).unwrap().set_modified(older).unwrap();
        }
    }
    let spills = w.spills();
    assert!(spills.iter().all(|s| s.1 <= (1 << 20) + 200), "{spills:?}");
    assert!(total(&spills) <= 3 << 20, "{spills:?}");
    assert!(spills.len() >= 2, "{spills:?}");

    // A cap below the minimum is refused, saying which.
    let w = World::new("[output]\nspill_max_bytes = 10\n");
    let out = w.toolshed(&["call", "bash", r#"{"command":"true"}"#]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("spill_max_bytes and spill_dir_max_bytes must be at least 65536 bytes"),
        "{}",
        text(&out)
    );
}

/// Temporary files in `dir` (toolshed's `.NAME.toolshed…-N.tmp`).
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n.ends_with(".tmp") && n.contains(".toolshed"))
        .collect()
}

#[test]
fn temporary_files_of_a_killed_toolshed_are_swept_and_never_shown() {
    let w = World::new("");
    // A patch that writes several large files: a kill lands during the writes often enough.
    let body: String = (0..40_000).map(|i| format!("+line {i} of a file written by apply_patch\n")).collect();
    let mut patch = String::from("*** Begin Patch\n");
    for f in 0..6 {
        patch.push_str(&format!("*** Add File: big{f}.txt\n{body}"));
    }
    patch.push_str("*** End Patch\n");
    let args = serde_json::json!({ "input": patch }).to_string();
    let mut killed_mid_write = 0;
    for attempt in 0..10u64 {
        for f in 0..6 {
            let _ = std::fs::remove_file(w.root.join(format!("big{f}.txt")));
        }
        let mut child = spawn_toolshed(&w, &["call", "--yes", "apply_patch", "-"]);
        {
            use std::io::Write;
            let mut stdin = child.stdin.take().unwrap();
            let _ = stdin.write_all(args.as_bytes());
        }
        // Spread over the time the writes happen in a debug build (~0.6 s after start).
        std::thread::sleep(std::time::Duration::from_millis(400 + attempt * 50));
        // `Child::kill` is SIGKILL.
        let _ = child.kill();
        let _ = child.wait();
        if !temp_files(&w.root).is_empty() {
            killed_mid_write += 1;
        }
    }
    // A leftover of the same shape from a process that is surely gone, so the check below never
    // depends on where the kills landed.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    std::fs::write(w.root.join(format!(".a.txt.toolshed-{dead}-1.tmp")), "partial").unwrap();
    eprintln!("{killed_mid_write} of 10 kills left temporary files");
    assert!(!temp_files(&w.root).is_empty());

    // Not the user's files: glob, list and grep do not show them.
    for (tool, args) in [
        ("glob", r#"{"pattern":"**/*"}"#),
        ("list", r#"{"path":"."}"#),
        ("grep", r#"{"pattern":"partial|line 1 of","output_mode":"files_with_matches"}"#),
    ] {
        let out = w.toolshed(&["call", tool, args]);
        assert!(!text(&out).contains(".tmp"), "{tool}: {}", text(&out));
    }
    // The next write in the directory sweeps them.
    let out = w.toolshed(&["call", "write", r#"{"file_path":"after.txt","content":"x\n"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(temp_files(&w.root), Vec::<String>::new());
}

/// Processes whose command line starts with `tag` (other than this test).
fn running(tag: &str) -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) || name == me {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // The program itself (a `sh -c '... sleep N'` on its way to exec is not it yet).
        if cmdline.starts_with(tag) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

/// Waits until `check` holds, for at most `secs` seconds.
fn wait_until(secs: u64, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    check()
}

/// A command that leaves the process group and its environment behind: a double fork,
/// `setsid`, `env -i`; then waits itself. `n` makes the sleeps unique to the test.
fn escaping_command(n: u32) -> String {
    format!("(setsid sh -c 'exec env -i sleep 3{n}.71' &); sleep 3{n}.72")
}

fn spawn_toolshed(w: &World, args: &[&str]) -> std::process::Child {
    Command::new(TOOLSHED)
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(args)
        .current_dir(&w.root)
        .env("HOME", w.root.join("../home"))
        .env("TOOLSHED_DATA_DIR", w.data())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn a_killed_call_takes_its_command_and_every_descendant_along() {
    let w = World::new("");
    let command = escaping_command(1);
    let args = serde_json::json!({ "command": command }).to_string();
    let mut child = spawn_toolshed(&w, &["call", "bash", &args]);
    assert!(wait_until(10, || running("sleep 31.7").len() == 2), "{:?}", running("sleep 31.7"));
    child.kill().unwrap(); // SIGKILL: no handler, no atexit.
    child.wait().unwrap();
    assert!(wait_until(1, || running("sleep 31.7").is_empty()), "left behind: {:?}", running("sleep 31.7"));
}

#[test]
fn a_killed_run_takes_its_command_along() {
    use toolshed_llm::testing::{FakeServer, Reply, chat};
    let command = serde_json::json!({ "command": escaping_command(2) }).to_string();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "bash", &command)])),
        Reply::sse(chat::text("done")),
    ])
    .unwrap();
    let w = World::new(&format!(
        "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n",
        server.base_url()
    ));
    let mut child = spawn_toolshed(&w, &["run", "--yes", "wait"]);
    // `run` reads piped standard input to its end before it starts (it is context): nothing.
    drop(child.stdin.take());
    assert!(wait_until(10, || running("sleep 32.7").len() == 2), "{:?}", running("sleep 32.7"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(wait_until(1, || running("sleep 32.7").is_empty()), "left behind: {:?}", running("sleep 32.7"));
}

/// `toolshed mcp serve` in `w`, initialized as a client does, then sent `lines`.
fn mcp_serve(w: &World, lines: &[String]) -> std::process::Child {
    use std::io::Write;
    let mut child = spawn_toolshed(w, &["mcp", "serve"]);
    let stdin = child.stdin.as_mut().unwrap();
    let init = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    ];
    for line in init.iter().copied().chain(lines.iter().map(String::as_str)) {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    child
}

/// Stops `child` with `stop` as a client would (the Python SDK waits 2 s after closing stdin,
/// then sends SIGTERM; either must suffice), then finds nothing matching `left` a second later.
fn stopped_leaves_nothing(
    mut child: std::process::Child,
    stop: impl FnOnce(&mut std::process::Child),
    left: &[String],
) {
    stop(&mut child);
    let _ = wait_until(3, || child.try_wait().unwrap().is_some());
    let _ = child.kill();
    child.wait().unwrap();
    for tag in left {
        assert!(wait_until(1, || running(tag).is_empty()), "left behind: {:?}", running(tag));
    }
}

/// `mcp serve` with a bash call running; `stop` ends the server the way a client would.
fn mcp_serve_stopped_during_a_call(n: u32, stop: impl FnOnce(&mut std::process::Child)) {
    let w = World::new("");
    let tag = format!("sleep 3{n}.7");
    let call = serde_json::json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "bash", "arguments": { "command": escaping_command(n) } }
    });
    let child = mcp_serve(&w, &[call.to_string()]);
    assert!(wait_until(15, || running(&tag).len() == 2), "{:?}", running(&tag));
    stopped_leaves_nothing(child, stop, &[tag]);
}

#[test]
fn mcp_serve_stopped_by_sigterm_takes_its_commands_along() {
    mcp_serve_stopped_during_a_call(3, |child| {
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(status.success());
    });
}

#[test]
fn mcp_serve_whose_input_closes_takes_its_commands_along() {
    mcp_serve_stopped_during_a_call(4, |child| drop(child.stdin.take()));
}

/// `mcp serve` stopped while an upstream server is still starting (a wrapper that sleeps before
/// it starts the real server, so `initialize` is not answered yet): the upstream and what it
/// started (a sleep in the background, a sleep in the foreground) go with it.
fn mcp_serve_stopped_while_an_upstream_starts(n: u32, stop: impl FnOnce(&mut std::process::Child)) {
    let tag = format!("sleep 5.5{n}");
    let upstream = format!("sleep 5.5{n}1 & sleep 5.5{n}2; exec '{TOOLSHED}' mcp serve");
    let config = format!("[mcp.slow]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n", serde_json::Value::String(upstream));
    let w = World::new(&config);
    let child = mcp_serve(&w, &[]);
    assert!(wait_until(15, || running(&tag).len() == 2), "{:?}", running(&tag));
    stopped_leaves_nothing(child, stop, &[tag, format!("sh -c sleep 5.5{n}")]);
}

#[test]
fn mcp_serve_stopped_by_sigterm_takes_an_upstream_still_starting_along() {
    mcp_serve_stopped_while_an_upstream_starts(1, |child| {
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(status.success());
    });
}

#[test]
fn mcp_serve_whose_input_closes_takes_an_upstream_still_starting_along() {
    mcp_serve_stopped_while_an_upstream_starts(2, |child| drop(child.stdin.take()));
}

#[test]
fn a_timeout_reaches_a_descendant_that_left_the_group_and_its_environment() {
    let w = World::new("");
    let args = serde_json::json!({ "command": escaping_command(5), "timeout_ms": 1500 }).to_string();
    let out = w.toolshed(&["call", "bash", &args]);
    assert!(text(&out).contains("timed out") || text(&out).contains("time"), "{}", text(&out));
    assert!(wait_until(1, || running("sleep 35.7").is_empty()), "left behind: {:?}", running("sleep 35.7"));
}

#[test]
fn outputs_still_streaming_are_never_deleted_to_keep_the_directory_cap() {
    let w = World::new("[output]\nspill_max_bytes = 100000\nspill_dir_max_bytes = 150000\n");
    // Three calls at once, each writing past the cap in bursts: no call's file may vanish.
    let args = r#"{"command":"for i in 1 2 3 4; do seq 1 100000; sleep 0.3; done"}"#;
    let children: Vec<_> = (0..3)
        .map(|_| {
            let mut child = spawn_toolshed(&w, &["call", "--json", "bash", args]);
            drop(child.stdin.take());
            child
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let path = result["metadata"]["output_path"].as_str().expect("spilled");
        assert!(Path::new(path).exists(), "the reported output file is gone: {path}");
    }
}

#[test]
fn a_command_that_kills_the_watchdog_still_dies_with_toolshed() {
    let w = World::new("");
    // Kill the watchdog (a child of toolshed, the shell's parent), then escape and wait.
    let command = format!(
        "for d in /proc/[0-9]*; do [ \"$(awk '{{print $4}}' $d/stat 2>/dev/null)\" = \"$PPID\" ] && [ \"${{d#/proc/}}\" != $$ ] && grep -qa toolshed-watchdog $d/cmdline 2>/dev/null && kill -9 ${{d#/proc/}}; done; sleep 0.5; {}",
        escaping_command(6)
    );
    let args = serde_json::json!({ "command": command }).to_string();
    // Approved: the point is what the command can do once it runs.
    let mut child = spawn_toolshed(&w, &["call", "--yes", "bash", &args]);
    assert!(wait_until(10, || running("sleep 36.7").len() == 2), "{:?}", running("sleep 36.7"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(wait_until(1, || running("sleep 36.7").is_empty()), "left behind: {:?}", running("sleep 36.7"));
}

/// A shell session `toolshed call bash` leaves running stops with that call, and says so; a
/// later `toolshed call bash_output` is told why it finds none (each call is its own process).
#[test]
fn call_says_that_a_shell_session_ends_with_it_and_bash_output_why_it_finds_none() {
    let world = World::new("");
    let started = world.toolshed(&["call", "bash", r#"{"command": "sleep 30; echo late", "yield_ms": 100}"#]);
    // The command did not finish (it was stopped with the call): a script sees a failure.
    assert_eq!(started.status.code(), Some(1), "{}", text(&started));
    assert!(text(&started).contains("was stopped with it"), "{}", text(&started));
    let polled = world.toolshed(&["call", "bash_output", r#"{"session_id": 1}"#]);
    assert_eq!(polled.status.code(), Some(1), "{}", text(&polled));
    let said = String::from_utf8_lossy(&polled.stderr);
    assert!(said.contains("No shell session 1"), "{said}");
    assert!(said.contains("a process of its own") && said.contains("toolshed chat"), "{said}");
    // Wrong arguments are about the arguments only.
    let wrong = world.toolshed(&["call", "bash_output", "{}"]);
    assert_eq!(wrong.status.code(), Some(1), "{}", text(&wrong));
    assert!(!String::from_utf8_lossy(&wrong.stderr).contains("a process of its own"), "{}", text(&wrong));
}
