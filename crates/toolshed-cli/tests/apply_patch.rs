//! `toolshed call apply_patch -`: raw patch text on standard input, JSON too, and the freeform
//! rendering of the tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn toolshed(root: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn raw_patch_on_stdin_is_applied() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "one\ntwo\n").unwrap();
    let patch =
        "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+2\n*** Add File: b/c.txt\n+c\n*** End Patch\n";
    let out = toolshed(tmp.path(), &["call", "apply_patch", "-"], patch);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Success. Updated the following files:\nA b/c.txt (+1)\nM a.txt (+1 -1)\n"
    );
    assert_eq!(std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(), "one\n2\n");
    assert_eq!(std::fs::read_to_string(tmp.path().join("b/c.txt")).unwrap(), "c\n");
}

#[test]
fn a_failing_patch_exits_1_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "one\n").unwrap();
    let patch = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: a.txt\n@@\n-nine\n+9\n*** End Patch";
    let out = toolshed(tmp.path(), &["call", "apply_patch", "-"], patch);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("apply_patch verification failed: Failed to find expected lines in a.txt:\nnine"), "{err}");
    assert!(!tmp.path().join("new.txt").exists());
}

#[test]
fn json_input_on_stdin_works_too() {
    let tmp = tempfile::tempdir().unwrap();
    let args = serde_json::json!({ "input": "*** Begin Patch\n*** Add File: j.txt\n+j\n*** End Patch" }).to_string();
    let out = toolshed(tmp.path(), &["call", "apply_patch", "-", "--json"], &args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["is_error"], false);
    assert_eq!(result["metadata"]["files"][0]["action"], "added");
    assert_eq!(std::fs::read_to_string(tmp.path().join("j.txt")).unwrap(), "j\n");
}

#[test]
fn responses_format_sends_the_lark_grammar() {
    let tmp = tempfile::tempdir().unwrap();
    let out = toolshed(tmp.path(), &["tools", "--all", "-m", "openai/gpt-5.1", "--format", "openai-responses"], "");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let tools: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let patch = tools.as_array().unwrap().iter().find(|t| t["name"] == "apply_patch").unwrap();
    assert_eq!(patch["type"], "custom");
    assert_eq!(patch["format"]["syntax"], "lark");
    assert!(patch["format"]["definition"].as_str().unwrap().starts_with("start: begin_patch hunk+ end_patch\n"));
}
