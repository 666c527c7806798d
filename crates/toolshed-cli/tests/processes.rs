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
