//! What reaches a terminal: text from tools and models is shown with its control sequences made
//! visible (an OSC 52 clipboard write is printed, not performed), while pipes and `--json` get
//! the exact bytes. The terminal is a real pseudo-terminal (util-linux `script`).
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use toolshed_llm::testing::{FakeServer, Reply, chat};

const TOOLSHED: &str = env!("CARGO_BIN_EXE_toolshed");
/// A command that prints an OSC 52 clipboard write, a cursor-up-and-erase, and an 8-bit CSI.
const PRINTS_ESCAPES: &str = r#"{"command":"printf 'A\\033]52;c;cHduZWQ=\\007B\\033[1A\\033[2KC\\302\\233D\\n'"}"#;

fn have_script() -> bool {
    Command::new("script").arg("--version").output().is_ok_and(|o| o.status.success())
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Runs `toolshed args` with its standard output and error on a pseudo-terminal; returns what
/// the terminal received.
fn on_terminal(dir: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let line = std::iter::once(TOOLSHED).chain(args.iter().copied()).map(shell_quote).collect::<Vec<_>>().join(" ");
    let mut cmd = Command::new("script");
    cmd.args(["-q", "-e", "-c", &format!("{line} </dev/null"), "/dev/null"])
        .current_dir(dir)
        .env("HOME", dir.join(".home"))
        .env("XDG_CONFIG_HOME", dir.join(".xdg"))
        .env("TOOLSHED_DATA_DIR", dir.join(".data"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn project() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    Command::new("git").args(["init", "-q"]).arg(tmp.path()).status().unwrap();
    tmp
}

#[test]
fn call_output_on_a_terminal_shows_escapes_and_a_pipe_gets_the_bytes() {
    if !have_script() {
        eprintln!("SKIP call_output_on_a_terminal_shows_escapes_and_a_pipe_gets_the_bytes: no script(1)");
        return;
    }
    let tmp = project();
    let dir = tmp.path();
    let out = on_terminal(dir, &["call", "bash", PRINTS_ESCAPES], &[]);
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07), "raw escapes reached the terminal: {seen:?}");
    assert!(seen.contains(r"A\e]52;c;cHduZWQ=\aB\e[1A\e[2KC\u{9b}D"), "{seen:?}");

    // A pipe gets exactly what the command printed.
    let piped = Command::new(TOOLSHED)
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["call", "bash", PRINTS_ESCAPES])
        .current_dir(dir)
        .env("HOME", dir.join(".home"))
        .env("TOOLSHED_DATA_DIR", dir.join(".data"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let exact = "A\x1b]52;c;cHduZWQ=\x07B\x1b[1A\x1b[2KC\u{9b}D";
    assert!(String::from_utf8_lossy(&piped.stdout).contains(exact), "{:?}", String::from_utf8_lossy(&piped.stdout));

    // `--json` on a terminal stays exact JSON: the escapes are JSON's own.
    let json = on_terminal(dir, &["call", "--json", "bash", PRINTS_ESCAPES], &[]);
    let text = String::from_utf8_lossy(&json.stdout);
    let value: serde_json::Value = serde_json::from_str(text.trim()).expect("one JSON document");
    assert!(value["output"].as_str().unwrap().contains(exact), "{value}");
}

#[test]
fn model_text_and_tool_lines_of_run_show_escapes_on_a_terminal() {
    if !have_script() {
        eprintln!("SKIP model_text_and_tool_lines_of_run_show_escapes_on_a_terminal: no script(1)");
        return;
    }
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "bash", r#"{"command":"printf 'x\\033]52;c;aGk=\\007y'"}"#)])),
        Reply::sse(chat::text("done \x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ \x1b[2J")),
    ])
    .unwrap();
    let tmp = project();
    let dir = tmp.path();
    std::fs::write(
        dir.join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let out = on_terminal(dir, &["run", "--yes", "print it"], &[]);
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(seen.contains(r"done \e]8;;https://evil.example\e\link"), "{seen:?}");
    assert!(seen.contains(r"\e[2J"), "{seen:?}");
    // The only raw ESCs are toolshed's own (clearing its spinner line), never an OSC.
    assert!(!seen.contains("\x1b]"), "an OSC sequence reached the terminal: {seen:?}");
}
