//! `toolshed chat` on a terminal is the terminal UI: driven in a real pseudo-terminal, its
//! screen read by a terminal emulator, against the loopback model server.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod pty;

use std::time::{Duration, Instant};

use pty::Terminal;
use serde_json::Value;
use toolshed_llm::testing::{FakeServer, Reply, chat};

/// The text of the last user message of a Chat Completions request.
fn last_prompt(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &last["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[test]
fn the_terminal_ui_streams_markdown_asks_in_a_dialog_takes_a_paste_whole_and_interrupts() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("# Greeting\n\nHello **there**, `friend`.\n\n- one\n- two\n")),
        Reply::sse(chat::tool_calls(&[(
            "e1",
            "edit",
            r#"{"file_path":"notes.txt","old_string":"old line","new_string":"new line"}"#,
        )])),
        Reply::sse(chat::text("Edited.")),
        Reply::sse(chat::text("Got the paste.")),
        Reply::sse(chat::text("a slow answer that takes its time to arrive word by word"))
            .delay(Duration::from_millis(700)),
        Reply::sse(chat::text("It holds three lines.")),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "keep\nold line\nkeep\n").unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nedit = \"ask\"\nbash = \"allow\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let started = Instant::now();
    let mut term = Terminal::start(dir.path(), &["chat"]);
    term.wait_for("build ·", Duration::from_secs(30));
    eprintln!("first frame after {:.0} ms (debug build)", started.elapsed().as_secs_f64() * 1000.0);

    // A prompt; the answer rendered without Markdown markers.
    term.type_text("hello\r");
    let screen = term.wait_for("Hello there, friend.", Duration::from_secs(30));
    assert!(screen.contains("Greeting") && !screen.contains("# Greeting") && !screen.contains("**"), "{screen}");
    assert!(screen.contains("• one"), "{screen}");

    // An edit that asks: the dialog stays until answered.
    term.type_text("edit the notes\r");
    term.wait_for("asks for `edit`", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(3));
    let screen = term.contents();
    assert!(
        screen.contains("asks for `edit`") && screen.contains("[o] once"),
        "the dialog is gone after 3 s:\n{screen}"
    );
    assert!(screen.contains("notes.txt"), "{screen}");
    assert!(
        screen.contains("-old line") && screen.contains("+new line"),
        "the dialog shows the edit's diff:\n{screen}"
    );
    assert!(screen.contains("rule: edit") && screen.contains("toolshed.toml"), "the rule that asked:\n{screen}");
    term.type_text("o");
    let screen = term.wait_for("Edited.", Duration::from_secs(30));
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "keep\nnew line\nkeep\n");
    assert!(screen.contains("-old line") && screen.contains("+new line"), "the edit's diff is shown:\n{screen}");

    // A three-line bracketed paste is one prompt.
    term.type_text("\x1b[200~first line\nsecond line\nthird line\x1b[201~");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(server.received().len(), 3, "a paste sends nothing by itself");
    term.type_text("\r");
    term.wait_for("Got the paste.", Duration::from_secs(30));
    assert_eq!(last_prompt(&server.received()[3].body), "first line\nsecond line\nthird line");

    // Ctrl-C during a slow answer: an idle composer within 3 s.
    term.type_text("take your time\r");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.received().len() < 5 {
        assert!(Instant::now() < deadline, "the slow prompt was not sent");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(800));
    let interrupted = Instant::now();
    term.type_text("\x03");
    let screen = term.wait_for("interrupted", Duration::from_secs(3));
    assert!(interrupted.elapsed() < Duration::from_secs(3));
    assert!(!screen.contains("working"), "the status line still says busy:\n{screen}");
    // The composer takes input again.
    term.type_text("/exit\r");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());

    // The session is consistent: every prompt stored, the interrupted answer marked so.
    let id = term
        .contents()
        .lines()
        .find_map(|l| l.trim().strip_prefix("session ").map(|s| s.trim().to_string()))
        .or_else(|| {
            let data = dir.path().join(".data");
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolshed"))
                .args(["session", "list", "--json"])
                .env("TOOLSHED_DATA_DIR", &data)
                .output()
                .unwrap();
            let list: Value = serde_json::from_slice(&out.stdout).unwrap();
            list[0]["id"].as_str().map(str::to_string)
        })
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .args(["--root", dir.path().to_str().unwrap(), "session", "export", &id])
        .env("TOOLSHED_DATA_DIR", dir.path().join(".data"))
        .env("XDG_CONFIG_HOME", dir.path().join(".xdg"))
        .output()
        .unwrap();
    let export: Value = serde_json::from_slice(&out.stdout).unwrap();
    let prompts: Vec<String> = export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["parts"][0]["text"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(prompts, ["hello", "edit the notes", "first line\nsecond line\nthird line", "take your time"]);
    let last = export["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "assistant");
    assert!(last["error"].as_str().is_some_and(|e| e.contains("interrupted")), "{last}");

    // Resumed, the session shows what it said; /diff shows its change and /undo reverts it.
    let mut term = Terminal::start(dir.path(), &["chat", "--session", &id]);
    let screen = term.wait_for("› take your time", Duration::from_secs(30));
    assert!(screen.contains("Got the paste."), "{screen}");
    // Ctrl-R finds an earlier prompt; it is put back in the composer, not sent.
    term.type_text("\x12edit");
    term.wait_for("(history search) edit: edit the notes", Duration::from_secs(10));
    term.type_text("\r");
    std::thread::sleep(Duration::from_millis(300));
    let screen = term.contents();
    let rows: Vec<&str> = screen.lines().collect();
    let status = rows.iter().rposition(|l| l.starts_with("build ·")).unwrap();
    assert_eq!(rows[status - 1].trim_end(), "› edit the notes", "in the composer:\n{screen}");
    assert_eq!(server.received().len(), 5, "not sent");
    term.type_text("\x03");
    // @ completes a file of the worktree, and the file goes with the prompt.
    term.type_text("what is in @note");
    term.wait_for("@notes.txt", Duration::from_secs(10));
    term.type_text("\t");
    std::thread::sleep(Duration::from_millis(300));
    let screen = term.contents();
    let rows: Vec<&str> = screen.lines().collect();
    let status = rows.iter().rposition(|l| l.starts_with("build ·")).unwrap();
    assert_eq!(rows[status - 1].trim_end(), "› what is in @notes.txt", "completed:\n{screen}");
    term.type_text("\r");
    term.wait_for("It holds three lines.", Duration::from_secs(30));
    let sent = last_prompt(&server.received()[5].body);
    assert!(
        sent.starts_with("what is in @notes.txt") && sent.contains("<file path=\"notes.txt\">\nkeep\nnew line\nkeep\n"),
        "{sent}"
    );
    // !cmd runs through the bash tool and shows its output.
    term.type_text("!echo hi-from-$((40+2))\r");
    term.wait_for("hi-from-42", Duration::from_secs(30));
    term.type_text("/diff\r");
    let screen = term.wait_for("+new line", Duration::from_secs(30));
    assert!(screen.contains("-old line"), "{screen}");
    term.type_text("/undo\r");
    term.wait_for("undone (step", Duration::from_secs(30));
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "keep\nold line\nkeep\n");
    // /new starts another session; /sessions picks the first one again.
    term.type_text("/new\r");
    let screen = term.wait_for("new session ses_", Duration::from_secs(10));
    let new_id = screen.lines().find_map(|l| l.split("new session ").nth(1)).unwrap().trim().to_string();
    assert_ne!(new_id, id);
    term.type_text("/sessions\r");
    term.wait_for("pick a session", Duration::from_secs(10));
    term.type_text("\r");
    // The resumed transcript follows (the notice scrolls away); the status line names it.
    term.wait_for(&format!("· {id} ·"), Duration::from_secs(10));
    assert!(term.contents().contains("The user reverted files"), "{}", term.contents());
    term.type_text("/exit\r");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
}
