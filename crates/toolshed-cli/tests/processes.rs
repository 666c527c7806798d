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
        let dir = self.data().join("tool-output");
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
        std::thread::sleep(std::time::Duration::from_millis(20));
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
        let mut child = Command::new(TOOLSHED)
            .args(["call", "--yes", "apply_patch", "-"])
            .current_dir(&w.root)
            .env("HOME", w.root.join("../home"))
            .env("TOOLSHED_DATA_DIR", w.data())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
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
