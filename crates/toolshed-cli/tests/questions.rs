//! A question on a real terminal: `toolshed run` in a pseudo-terminal (portable-pty), its screen
//! read by a terminal emulator (vt100), against the loopback model server. While a slow call
//! runs (the spinner's case), a write asks; the question stays on screen until it is answered,
//! the answer typed is read whole, and the write's time does not include the wait.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod pty;

use std::time::Duration;

use pty::Terminal;
use toolshed_llm::testing::{FakeServer, Reply, chat};

#[test]
fn run_keeps_its_question_on_screen_and_does_not_count_the_wait_as_tool_time() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("slow", "bash", r#"{"command":"sleep 2; echo slept","description":"wait two seconds"}"#),
            ("w", "write", r#"{"file_path":"answer.txt","content":"written after the question\n"}"#),
        ])),
        Reply::sse(chat::text("Both done.")),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nbash = \"allow\"\nedit = \"ask\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let mut term = Terminal::start(dir.path(), &["run", "wait, then write the answer"]);
    term.wait_for("Allow? [o]nce", Duration::from_secs(30));
    // The bash call keeps running past a second (the spinner's threshold) and ends meanwhile.
    std::thread::sleep(Duration::from_secs(3));
    let screen = term.contents();
    assert!(screen.contains("write needs permission `edit` for:"), "{screen}");
    assert!(screen.contains("answer.txt"), "{screen}");
    assert!(screen.contains("+written after the question"), "the question shows what would be written:\n{screen}");
    assert!(screen.contains("Allow? [o]nce"), "the question is gone after 3 s:\n{screen}");
    assert!(!screen.contains("⠋ bash") && !screen.contains("⠙ bash"), "a spinner over the question:\n{screen}");
    term.type_text("o\r");
    assert_eq!(term.wait_exit(Duration::from_secs(30)), 0, "{}", term.contents());
    let screen = term.contents();
    assert_eq!(std::fs::read_to_string(dir.path().join("answer.txt")).unwrap(), "written after the question\n");
    assert!(screen.contains("Both done."), "{screen}");
    // What came while the question was up is shown after it, in order.
    let asked = screen.find("Allow? [o]nce").unwrap();
    let slept = screen.find("✓ bash").expect("the bash result is shown");
    assert!(slept > asked, "held back until answered:\n{screen}");
    let write_line = screen.lines().find(|l| l.contains("✓ write")).expect("the write result is shown");
    let ms: u64 = write_line
        .rsplit_once('(')
        .and_then(|(_, r)| r.strip_suffix(" ms)"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no duration in {write_line:?}"));
    assert!(ms < 1_000, "the 3 s the question waited are not the write's: {write_line}");
}

#[test]
fn ctrl_c_at_a_question_ends_run_at_once_on_lines_of_their_own() {
    let server = FakeServer::start(vec![Reply::sse(chat::tool_calls(&[(
        "b",
        "bash",
        r#"{"command":"echo hi","description":"say hi"}"#,
    )]))])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nbash = \"ask\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let mut term = Terminal::start(dir.path(), &["run", "say hi"]);
    term.wait_for("Allow? [o]nce", Duration::from_secs(30));
    let pressed = std::time::Instant::now();
    term.type_text("\x03");
    // No Enter is pressed: the run ends by itself, interrupted.
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 1, "{}", term.contents());
    assert!(pressed.elapsed() < Duration::from_secs(5), "the run waited for a line after Ctrl-C");
    let screen = term.contents();
    assert!(screen.contains("interrupted; continue with --session"), "{screen}");
    let cut = screen.lines().find(|l| l.contains("✗ bash")).unwrap_or_else(|| panic!("no ✗ line:\n{screen}"));
    assert!(cut.trim_start().starts_with('✗'), "the ✗ line shares a line with the question:\n{screen}");
}
