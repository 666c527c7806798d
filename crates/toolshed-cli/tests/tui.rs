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

/// A worktree whose model is `server`'s, with `extra` appended to its toolshed.toml.
fn worktree(server: &FakeServer, extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n{extra}",
            server.base_url()
        ),
    )
    .unwrap();
    dir
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
    let dir = worktree(&server, "[permission]\nedit = \"ask\"\nbash = \"allow\"\n");
    std::fs::write(dir.path().join("notes.txt"), "keep\nold line\nkeep\n").unwrap();
    let started = Instant::now();
    let mut term = Terminal::start(dir.path(), &["chat"]);
    term.wait_for("build ·", Duration::from_secs(30));
    eprintln!("first frame after {:.0} ms (debug build)", started.elapsed().as_secs_f64() * 1000.0);

    // A prompt; the answer rendered without Markdown markers.
    term.send_line("hello");
    // Waited for to its last item: the answer streams in, and a loaded machine draws it late.
    let screen = term.wait_for("• one", Duration::from_secs(30));
    assert!(screen.contains("Hello there, friend."), "{screen}");
    assert!(screen.contains("Greeting") && !screen.contains("# Greeting") && !screen.contains("**"), "{screen}");
    assert!(screen.contains("• one"), "{screen}");

    // An edit that asks: the dialog stays until answered.
    term.send_line("edit the notes");
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
    term.send_line("");
    term.wait_for("Got the paste.", Duration::from_secs(30));
    assert_eq!(last_prompt(&server.received()[3].body), "first line\nsecond line\nthird line");

    // Ctrl-C during a slow answer: an idle composer within 3 s.
    term.send_line("take your time");
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
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());

    // The session is consistent: every prompt stored, the interrupted answer marked so.
    let id = term
        .contents()
        .lines()
        .find_map(|l| l.trim().strip_prefix("· session ").and_then(|s| s.split(';').next()).map(str::to_string))
        .or_else(|| {
            let data = dir.path().join(".data");
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolshed"))
                .env("TOOLSHED_TRUST_PROJECT", "1")
                .args(["session", "list", "--json"])
                .env("TOOLSHED_DATA_DIR", &data)
                .output()
                .unwrap();
            let list: Value = serde_json::from_slice(&out.stdout).unwrap();
            list[0]["id"].as_str().map(str::to_string)
        })
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
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
    term.send_line("");
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
    term.send_line("");
    term.wait_for("It holds three lines.", Duration::from_secs(30));
    let sent = last_prompt(&server.received()[5].body);
    assert!(
        sent.starts_with("what is in @notes.txt") && sent.contains("<file path=\"notes.txt\">\nkeep\nnew line\nkeep\n"),
        "{sent}"
    );
    // !cmd runs through the bash tool and shows its output.
    term.send_line("!echo hi-from-$((40+2))");
    term.wait_for("hi-from-42", Duration::from_secs(30));
    term.send_line("/diff");
    // The whole patch, its file headers too.
    let screen = term.wait_for("+++ b/notes.txt", Duration::from_secs(30));
    let patch = &screen[screen.find("diff --git a/notes.txt b/notes.txt").expect(&screen)..];
    assert!(patch.contains("--- a/notes.txt") && patch.contains("-old line\n+new line"), "{screen}");
    term.send_line("/undo");
    term.wait_for("undone (step", Duration::from_secs(30));
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "keep\nold line\nkeep\n");
    // /new starts another session; /sessions picks the first one again.
    term.send_line("/new");
    let screen = term.wait_for("new session ses_", Duration::from_secs(10));
    let new_id = screen.lines().find_map(|l| l.split("new session ").nth(1)).unwrap().trim().to_string();
    assert_ne!(new_id, id);
    term.send_line("/sessions");
    term.wait_for("pick a session", Duration::from_secs(10));
    term.send_line("");
    // The resumed transcript follows (the notice scrolls away); the status line names it.
    term.wait_for(&format!("· {id} ·"), Duration::from_secs(10));
    assert!(term.contents().contains("The user reverted files"), "{}", term.contents());
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
}

/// The state letter of process `pid` (`T` when stopped), from /proc.
fn process_state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(')').next().and_then(|rest| rest.trim_start().chars().next()).unwrap_or('?')
}

fn signal(pid: u32, name: &str) {
    let status = std::process::Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

#[test]
fn retries_show_in_the_status_line_and_the_model_pager_bursts_task_progress_suspend_and_sigterm_work() {
    let server = FakeServer::start(vec![
        Reply::error(429, serde_json::json!({"error": {"message": "slow down", "type": "rate_limit_exceeded"}}))
            .header("retry-after", "2"),
        Reply::sse(chat::text("# Title\n\nplain **bold** text\n\n```rust\nfn main() {}\n```\n")),
        Reply::sse(chat::tool_calls(&[(
            "t1",
            "task",
            r#"{"description":"look at the notes","prompt":"Read notes.txt and say what it holds."}"#,
        )])),
        Reply::sse(chat::tool_calls(&[("r1", "read", r#"{"file_path":"notes.txt"}"#)])),
        Reply::sse(chat::text("The notes say hi.")),
        Reply::sse(chat::text("All done.")),
    ])
    .unwrap();
    let dir = worktree(&server, "");
    std::fs::write(dir.path().join("notes.txt"), "hi\n").unwrap();
    let mut term = Terminal::start_in_shell(dir.path(), &["chat"], &[("NO_COLOR", "1")]);
    term.wait_for("build ·", Duration::from_secs(30));

    // A rate limit: the status line says what is waited for instead of looking stuck.
    term.send_line("hi");
    term.wait_for("rate limited, retrying in", Duration::from_secs(10));
    term.wait_for("plain bold text", Duration::from_secs(30));

    // /model: the next request goes to the other model, and the session keeps it.
    term.send_line("/model fake/other-model");
    term.wait_for("fake/other-model ·", Duration::from_secs(10));
    term.send_line("/model nosuch/model");
    term.wait_for("model not switched", Duration::from_secs(10));

    // Keys typed in one burst are a paste (a terminal without bracketed paste): the Enters in
    // it are new lines. Shift-Enter (the keyboard protocol's spelling) is a new line too.
    term.type_text("one\rtwo\rthree");
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(server.received().len(), 2, "a burst sends nothing by itself:\n{}", term.contents());
    term.type_text("\x1b[13;2u");
    std::thread::sleep(Duration::from_millis(100));
    term.type_text("f");
    std::thread::sleep(Duration::from_millis(100));
    term.send_line("");

    // A task: the sub-agent's calls show in the task's cell.
    let screen = term.wait_for("All done.", Duration::from_secs(30));
    let received = server.received();
    assert_eq!(last_prompt(&received[2].body), "one\ntwo\nthree\nf");
    assert_eq!(received[2].body["model"], "other-model");
    let rows: Vec<&str> = screen.lines().collect();
    let task = rows.iter().position(|l| l.contains("✓ task look at the notes")).expect(&screen);
    assert!(rows[task + 1].starts_with("  ✓ read notes.txt"), "the sub-agent's call under its task:\n{screen}");
    assert_eq!(rows[task + 2].trim(), "The notes say hi.", "the sub-agent's answer, without the wrapper:\n{screen}");
    // NO_COLOR: not one coloured cell.
    let coloured = term.with_screen(|s| {
        let (rows, cols) = s.size();
        (0..rows)
            .flat_map(|r| (0..cols).map(move |c| (r, c)))
            .filter(|&(r, c)| {
                s.cell(r, c).is_some_and(|cell| {
                    cell.fgcolor() != vt100::Color::Default || cell.bgcolor() != vt100::Color::Default
                })
            })
            .count()
    });
    assert_eq!(coloured, 0, "coloured cells with NO_COLOR:\n{screen}");

    // PageUp: the whole transcript on the alternate screen, scrolled with the wheel; q returns.
    term.type_text("\x1b[5~");
    term.wait_for("transcript · cell", Duration::from_secs(10));
    assert!(term.with_screen(|s| s.alternate_screen() && s.mouse_protocol_mode() != vt100::MouseProtocolMode::None));
    term.type_text("\x1b[F");
    let pager = term.wait_for("All done.", Duration::from_secs(10));
    assert!(pager.contains("› hi"), "{pager}");
    term.type_text("q");
    term.wait_for("other-model ·", Duration::from_secs(10));
    assert!(term.with_screen(|s| !s.alternate_screen() && s.mouse_protocol_mode() == vt100::MouseProtocolMode::None));

    // Ctrl-Z stops the process with the terminal as it was; continued (`fg`), it draws itself
    // again.
    let pid = term.shell_child();
    term.type_text("\x1a");
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_state(pid) != 'T' {
        assert!(Instant::now() < deadline, "not stopped: {}", process_state(pid));
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(term.with_screen(|s| !s.bracketed_paste()), "the terminal was not restored before stopping");
    term.type_text("\r");
    term.wait_for("other-model ·", Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !term.with_screen(vt100::Screen::bracketed_paste) {
        assert!(Instant::now() < deadline, "bracketed paste is not back after fg");
        std::thread::sleep(Duration::from_millis(25));
    }
    term.send_line("/model");
    term.wait_for("model: fake/other-model;", Duration::from_secs(10));

    // SIGTERM ends it as /exit does, the terminal restored; its status says a signal ended it.
    signal(pid, "TERM");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 143, "{}", term.contents());
    assert!(term.contents().contains("session ses_"), "{}", term.contents());
    assert!(term.with_screen(|s| !s.bracketed_paste() && !s.alternate_screen()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", dir.path().to_str().unwrap(), "session", "list", "--json"])
        .env("TOOLSHED_DATA_DIR", dir.path().join(".data"))
        .env("XDG_CONFIG_HOME", dir.path().join(".xdg"))
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["model"], "fake/other-model", "{list}");
}

#[test]
fn the_terminal_ui_fits_80_by_24_and_300_columns() {
    let answer = "A line long enough to wrap on a narrow screen: the quick brown fox jumps over the lazy dog, twice over, and then once more for good measure.";
    let server = FakeServer::start(vec![Reply::sse(chat::text(answer)), Reply::sse(chat::text(answer))]).unwrap();
    let dir = worktree(&server, "");
    for (rows, cols) in [(24, 80), (50, 300)] {
        let mut term = Terminal::start_sized(dir.path(), &["chat"], rows, cols);
        term.wait_for("build ·", Duration::from_secs(30));
        term.send_line("hello");
        term.wait_for("once more for good", Duration::from_secs(30));
        // Words are wrapped whole at 80 columns; at 300 the answer is one row (once the frame
        // that moves the finished answer above the viewport is drawn whole).
        let rows_wanted = if cols == 80 { 2 } else { 1 };
        let answer_rows =
            |screen: &str| screen.lines().filter(|l| l.contains("quick") || l.contains("good measure")).count();
        let screen = term.wait_until(
            "settled answer",
            |s| answer_rows(s) == rows_wanted && s.contains("›") && s.lines().any(|l| l.starts_with("build ·")),
            Duration::from_secs(10),
        );
        for line in screen.lines() {
            assert!(unicode_width(line) <= usize::from(cols), "wider than {cols}: {line:?}");
        }
        let status = screen.lines().rfind(|l| l.starts_with("build ·")).unwrap();
        assert!(status.contains("fake/test-model"), "{status}");
        term.send_line("/exit");
        assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
    }
}

fn unicode_width(line: &str) -> usize {
    line.chars().count()
}

/// A question opens wherever the person is typing: keys typed for the composer (together, or
/// right after it opened, or while typing goes on) stay in the composer and answer nothing;
/// "always" takes a second `a`.
#[test]
fn keys_typed_for_the_composer_never_answer_a_question() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("b1", "bash", r#"{"command":"touch race.txt"}"#)])),
        Reply::sse(chat::text("Touched.")),
    ])
    .unwrap();
    let dir = worktree(&server, "[permission]\nbash = { \"*\" = \"allow\", \"touch *\" = \"ask\" }\n");
    let mut term = Terminal::start(dir.path(), &["chat"]);
    term.wait_for("build ·", Duration::from_secs(30));
    term.send_line("touch it");
    term.wait_for("asks for `bash`", Duration::from_secs(30));
    // Typed at once, as the question opens: the `a` of "also" and the `o` of "now" are letters.
    term.type_text("also now");
    std::thread::sleep(Duration::from_millis(300));
    term.type_text("o");
    std::thread::sleep(Duration::from_millis(300));
    let screen = term.contents();
    assert!(screen.contains("asks for `bash`"), "the question was answered by typing:\n{screen}");
    assert!(screen.contains("also nowo"), "the typing is kept in the composer:\n{screen}");
    assert!(!dir.path().join("race.txt").exists());
    // After a pause, a word typed at a person's pace: its first letter is followed at once.
    std::thread::sleep(Duration::from_millis(1000));
    for key in ["o", "k"] {
        term.type_text(key);
        std::thread::sleep(Duration::from_millis(120));
    }
    // And Enter over a composer holding text sends nothing and answers nothing.
    std::thread::sleep(Duration::from_millis(1000));
    term.type_text("\r");
    std::thread::sleep(Duration::from_millis(600));
    let screen = term.contents();
    assert!(screen.contains("asks for `bash`") && screen.contains("also nowook"), "{screen}");
    assert!(!dir.path().join("race.txt").exists());
    assert_eq!(server.received().len(), 1, "the composer's text was sent");
    // Once the typing has stopped, a single `a` asks for a second one.
    std::thread::sleep(Duration::from_millis(1000));
    term.type_text("a");
    term.wait_for("press a again", Duration::from_secs(5));
    assert!(!dir.path().join("race.txt").exists());
    term.type_text("a");
    term.wait_for("Touched.", Duration::from_secs(30));
    assert!(dir.path().join("race.txt").exists());
    // Ctrl-C clears the composer's leftover typing (waited for: a loaded machine is slow to
    // draw it).
    term.type_text("\x03");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while term.contents().contains("› also nowook") && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!term.contents().contains("› also nowook"), "{}", term.contents());
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
}

/// Enter while the model works keeps the text in the composer and says why in the status
/// line, not in the transcript: the answer streaming meanwhile stays one text, its list whole.
#[test]
fn enter_during_a_turn_keeps_the_text_says_why_and_leaves_the_answer_whole() {
    let answer = "Steps:\n\n1. first step\n2. second step\n3. third step\n\nAll done.";
    let server = FakeServer::start(vec![
        Reply::sse(chat::text(answer)).delay(Duration::from_millis(300)),
        Reply::sse(chat::text("Got it.")),
    ])
    .unwrap();
    let dir = worktree(&server, "");
    let mut term = Terminal::start(dir.path(), &["chat"]);
    term.wait_for("build ·", Duration::from_secs(30));
    term.send_line("first");
    term.wait_for("1. first", Duration::from_secs(30));
    term.type_text("second");
    std::thread::sleep(Duration::from_millis(300));
    term.type_text("\r");
    let screen = term.wait_for("Enter sends your message once the turn ends", Duration::from_secs(5));
    assert!(screen.contains("› second"), "the text stays in the composer:\n{screen}");
    assert_eq!(server.received().len(), 1, "{screen}");
    let screen = term.wait_until(
        "the answer's end, the turn over",
        |s| s.contains("All done.") && !s.contains("working"),
        Duration::from_secs(30),
    );
    let rows: Vec<&str> = screen.lines().map(str::trim).collect();
    let first = rows.iter().position(|r| r.starts_with("1. first step")).unwrap_or_else(|| panic!("{screen}"));
    assert_eq!(
        rows[first..first + 3],
        ["1. first step", "2. second step", "3. third step"],
        "the list is cut:\n{screen}"
    );
    assert!(!screen.contains("once the turn ends"), "the hint outlives the turn:\n{screen}");
    // The text waited; Enter sends it now.
    term.type_text("\r");
    term.wait_for("Got it.", Duration::from_secs(30));
    assert_eq!(last_prompt(&server.received()[1].body), "second");
}

#[test]
fn esc_closes_a_popup_before_it_stops_the_turn() {
    let server =
        FakeServer::start(vec![Reply::sse(chat::text("Finally done.")).delay(Duration::from_secs(3))]).unwrap();
    let dir = worktree(&server, "");
    let mut term = Terminal::start(dir.path(), &["chat"]);
    term.wait_for("build ·", Duration::from_secs(30));
    let popup_closed = |term: &mut Terminal| {
        term.type_text("\x1b");
        term.wait_until("the popup closed", |s| !s.contains("keys and commands"), Duration::from_secs(5))
    };
    term.type_text("/");
    term.wait_for("keys and commands", Duration::from_secs(10));
    let screen = popup_closed(&mut term);
    assert!(screen.lines().any(|l| l.trim_end() == "› /"), "the text stays:\n{screen}");
    // It opens again once the text changes.
    term.type_text("h");
    term.wait_for("keys and commands", Duration::from_secs(5));
    term.type_text("\x7f");
    term.type_text("\x7f");
    // During a turn, the first Esc closes the popup and the turn goes on; the next stops it.
    term.send_line("go");
    term.wait_for("working", Duration::from_secs(10));
    term.type_text("/");
    term.wait_for("keys and commands", Duration::from_secs(5));
    let screen = popup_closed(&mut term);
    assert!(screen.contains("working") && !screen.contains("interrupted"), "{screen}");
    term.type_text("\x1b");
    let screen = term.wait_for("interrupted", Duration::from_secs(10));
    assert!(!screen.contains("Finally done."), "{screen}");
}

/// The history rows joined, with runs of whitespace made one space.
fn flat(rows: &[String]) -> String {
    rows.join(" ").split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn the_composer_follows_the_transcript_and_a_resize_writes_it_again() {
    let first = format!("First answer: {}end-of-first.", "alpha beta gamma delta\n\n".repeat(7));
    let second = format!("Second answer: {}end-of-second.", "one two three four five ".repeat(10));
    let server = FakeServer::start(vec![
        Reply::sse(chat::text(&first)),
        Reply::sse(chat::text(&second)).delay(Duration::from_millis(40)),
        Reply::sse(chat::tool_calls(&[(
            "e1",
            "edit",
            r#"{"file_path":"notes.txt","old_string":"old","new_string":"new"}"#,
        )])),
        Reply::sse(chat::text("After the question.")),
    ])
    .unwrap();
    let dir = worktree(&server, "[permission]\nedit = \"ask\"\n");
    std::fs::write(dir.path().join("notes.txt"), "old\n").unwrap();
    let mut term = Terminal::start_sized(dir.path(), &["chat"], 24, 80);
    let screen = term.wait_for("build ·", Duration::from_secs(30));
    // Nothing is above it yet: the composer is the first row, the status line right below it.
    let rows: Vec<&str> = screen.lines().collect();
    assert!(rows[0].starts_with('›') && rows[1].starts_with("build ·"), "{screen}");

    // After an answer, one blank row separates it from the composer: no band of empty rows.
    term.send_line("hello");
    let screen = term.wait_until(
        "the answer, settled",
        |s| s.contains("end-of-first.") && !s.contains("working"),
        Duration::from_secs(30),
    );
    let rows: Vec<&str> = screen.lines().collect();
    // Finished, the answer stays where it streamed: nothing scrolled away with room left.
    assert_eq!(rows[0], "› hello", "{screen}");
    let last = rows.iter().position(|l| l.contains("end-of-first.")).expect(&screen);
    assert_eq!(rows[last + 1].trim(), "", "{screen}");
    assert_eq!(rows[last + 2].trim_end(), "›", "{screen}");
    assert!(rows[last + 3].starts_with("build ·"), "{screen}");

    // Narrower: the transcript is written again at the new width, whole and once, and no
    // old frame of the viewport is left in the scrollback.
    term.resize(24, 50);
    let written_again = |term: &Terminal, prompt: &str, answers: &[&str]| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let history = term.history();
            let text = flat(&history);
            let once = |what: &str| text.matches(&flat(&[what.to_string()])).count() == 1;
            if answers.iter().all(|a| once(a)) && once(prompt) && once("build ·") {
                return history;
            }
            assert!(Instant::now() < deadline, "not written again once:\n{}", history.join("\n"));
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let history = written_again(&term, "› hello", &[&first]);
    assert!(history.iter().all(|r| r.chars().count() <= 50), "{}", history.join("\n"));
    assert!(history.iter().any(|r| r.trim_end().ends_with("end-of-first.")), "{}", history.join("\n"));

    // Resized while an answer streams: the finished answer is whole, once. (The emulator
    // keeps no rows a scrolling region scrolls off, as terminals do, so all of it stays on
    // the screen here.)
    term.send_line("again");
    term.wait_for("Second answer:", Duration::from_secs(30));
    term.resize(24, 70);
    std::thread::sleep(Duration::from_millis(400));
    term.resize(40, 60);
    term.wait_until(
        "the second answer, settled",
        |s| s.contains("end-of-second.") && !s.contains("working"),
        Duration::from_secs(30),
    );
    written_again(&term, "› again", &[&first, &second]);

    // Ctrl-C while a question is open ends the turn: the question is answered no.
    term.send_line("change the notes");
    term.wait_for("asks for `edit`", Duration::from_secs(30));
    term.type_text("\x03");
    let screen = term.wait_for("interrupted", Duration::from_secs(5));
    assert!(!screen.contains("asks for `edit`"), "{screen}");
    assert_eq!(std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(), "old\n");

    // In a session opened with /new, the answers show (they were taken for a sub-agent's).
    term.send_line("/new");
    term.wait_for("new session ses_", Duration::from_secs(10));
    term.send_line("in the new session");
    term.wait_for("After the question.", Duration::from_secs(30));
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
    // The shell's prompt would come on the row after the last line written.
    let (row, col) = term.with_screen(vt100::Screen::cursor_position);
    let screen = term.contents();
    let last = screen.lines().collect::<Vec<_>>().iter().rposition(|l| !l.trim().is_empty()).unwrap();
    assert_eq!((usize::from(row), col), (last + 1, 0), "{screen}");

    // The display is never erased from a corner (`ESC [ J`, `ESC [ 2 J`) but together with
    // the scrollback: tmux and others keep what such an erase removes by scrolling it into
    // the scrollback, old viewport frames included.
    let raw = term.raw();
    let find = |what: &[u8]| -> Vec<usize> {
        raw.windows(what.len()).enumerate().filter(|(_, w)| *w == what).map(|(i, _)| i).collect()
    };
    assert!(find(b"\x1b[J").is_empty() && find(b"\x1b[0J").is_empty(), "an erase below the cursor");
    for at in find(b"\x1b[2J") {
        assert!(raw[at + 4..].starts_with(b"\x1b[3J"), "a screen erase that keeps the scrollback");
    }
}

#[test]
fn a_long_answer_goes_up_into_the_scrollback_as_it_streams() {
    let rows: String = (1..=30).map(|n| format!("Row {n} of the answer.\n\n")).collect();
    let answer = format!("{rows}{}end-of-long.", "still coming ".repeat(60));
    let server = FakeServer::start(vec![Reply::sse(chat::text(&answer)).delay(Duration::from_millis(25))]).unwrap();
    let dir = worktree(&server, "");
    let mut term = Terminal::start_sized(dir.path(), &["chat"], 40, 80);
    term.wait_for("build ·", Duration::from_secs(30));
    term.send_line("long");
    // Taller than the viewport while it streams: its start is on the screen above the
    // viewport, once, and nothing between it and the last row shown is missing.
    let screen = term.wait_for("Row 15 of", Duration::from_secs(30));
    assert!(screen.contains("working"), "finished too soon to tell:\n{screen}");
    assert!(screen.lines().next().unwrap().starts_with("› long"), "{screen}");
    for n in 1..=15 {
        assert_eq!(screen.matches(&format!("Row {n} of")).count(), 1, "Row {n}:\n{screen}");
    }
    let screen = term.wait_until(
        "the answer, settled",
        |s| s.contains("end-of-long.") && !s.contains("working"),
        Duration::from_secs(60),
    );
    // Finished, every row is in the terminal once, in order.
    let history = term.history();
    let text = history.join("\n");
    let mut at = 0;
    for n in 1..=30 {
        let row = format!("Row {n} of the answer.");
        assert_eq!(text.matches(&row).count(), 1, "{row}:\n{text}");
        let found = text.find(&row).unwrap();
        assert!(found > at, "{row} out of order:\n{text}");
        at = found;
    }
    assert!(screen.contains("end-of-long."), "{screen}");
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
}

/// Tool calls as a person reads them: a long output's real tail and how many lines the command
/// printed, a command that exited non-zero marked failed, refused calls said in words for
/// people (not what the model is told to do next), and an interrupted command with its command
/// line and the tail of what it printed.
#[test]
fn tool_calls_show_what_happened_in_words_for_people() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("b1", "bash", r#"{"command":"seq 3000","description":"count to 3000"}"#),
            ("b2", "bash", r#"{"command":"echo oops; exit 101","description":"fail on purpose"}"#),
            ("e1", "edit", r#"{"file_path":"a.txt"}"#),
            ("f1", "frobnicate", "{}"),
        ])),
        Reply::sse(chat::text("Looked.")),
        Reply::sse(chat::tool_calls(&[(
            "b3",
            "bash",
            r#"{"command":"seq 20; sleep 30","description":"count, then wait"}"#,
        )])),
        Reply::sse(chat::text("never sent")),
    ])
    .unwrap();
    let dir = worktree(&server, "[permission]\nbash = \"allow\"\n");
    let mut term = Terminal::start(dir.path(), &["chat"]);
    term.wait_for("build ·", Duration::from_secs(30));
    term.send_line("look around");
    term.wait_for("Looked.", Duration::from_secs(60));
    let all = term.history().join("\n");
    let rows: Vec<&str> = all.lines().map(str::trim).collect();
    let seq = rows.iter().position(|r| r.starts_with("$ seq 3000")).unwrap_or_else(|| panic!("{all}"));
    assert_eq!(rows[seq + 1..seq + 6], ["… +2996 lines", "2997", "2998", "2999", "3000"], "{all}");
    assert!(!all.contains("Output truncated") && !all.contains("offset=") && !all.contains("Exit code"), "{all}");
    assert!(rows.iter().any(|r| r.starts_with("✗ bash fail on purpose (exit 101")), "{all}");
    assert!(rows.contains(&"oops"), "{all}");
    assert!(all.contains("not run: the model's arguments do not fit the tool"), "{all}");
    assert!(all.contains("not run: the model called a tool that does not exist"), "{all}");
    for model_text in ["call edit again", "Did you mean", "Send one JSON"] {
        assert!(!all.contains(model_text), "{model_text}:\n{all}");
    }

    term.send_line("count and wait");
    term.wait_for("$ seq 20; sleep 30", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(1500));
    term.type_text("\x1b");
    term.wait_for("Interrupted by the user", Duration::from_secs(15));
    let all = term.history().join("\n");
    let rows: Vec<&str> = all.lines().map(str::trim).collect();
    let head = rows.iter().position(|r| r.starts_with("✗ bash count, then wait")).unwrap_or_else(|| panic!("{all}"));
    assert_eq!(rows[head + 1], "$ seq 20; sleep 30", "{all}");
    assert!(rows[head + 2].starts_with("… +") && rows[head + 2].ends_with(" lines"), "{all}");
    assert!(rows[head + 3..head + 6].contains(&"20"), "the tail of what it printed:\n{all}");
    assert!(!all.contains("interrupted by the user"), "{all}");
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
}

/// A resumed session shows its calls' own time, not the wait for an answer, and an answer cut
/// off by an interrupt says so, as it did live.
#[test]
fn a_resumed_session_shows_tool_time_without_the_wait_and_marks_a_cut_answer() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[(
            "b1",
            "bash",
            r#"{"command":"touch made.txt","description":"create a file"}"#,
        )])),
        Reply::sse(chat::text("Made the file, and now a long explanation that takes its time to arrive"))
            .delay(Duration::from_millis(400)),
    ])
    .unwrap();
    let dir = worktree(&server, "[permission]\nbash = \"ask\"\n");
    let mut term = Terminal::start(dir.path(), &["chat"]);
    term.wait_for("build ·", Duration::from_secs(30));
    term.send_line("make it");
    term.wait_for("asks for `bash`", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(2500));
    term.type_text("o");
    term.wait_for("Made the", Duration::from_secs(30));
    term.type_text("\x1b");
    term.wait_for("interrupted", Duration::from_secs(10));
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
    assert!(dir.path().join("made.txt").exists());

    let mut term = Terminal::start(dir.path(), &["chat", "--continue"]);
    let screen = term.wait_for("✓ bash create a file", Duration::from_secs(30));
    let header = screen.lines().find(|l| l.contains("✓ bash create a file")).unwrap();
    assert!(header.trim_end().ends_with(" ms)"), "the 2.5 s waited for the answer are counted: {header}");
    let rows: Vec<&str> = screen.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let answer = rows.iter().position(|r| r.starts_with("Made the")).unwrap_or_else(|| panic!("{screen}"));
    assert!(rows[answer + 1].contains("interrupted"), "the cut answer is not marked:\n{screen}");
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
}

/// The first screen says what to do until something is typed; `/help` is a list, a line for
/// each key and command; an Enter that ends a burst of typing sends the text, without a new
/// line (a busy machine reads a person's keys together).
#[test]
fn the_first_screen_hints_help_is_a_list_and_a_message_is_sent_without_its_trailing_newline() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("Hi."))]).unwrap();
    let dir = worktree(&server, "");
    let mut term = Terminal::start(dir.path(), &["chat"]);
    let screen = term.wait_for("type a message · /help", Duration::from_secs(30));
    assert!(screen.lines().any(|l| l.starts_with("› type a message")), "{screen}");
    term.send_line("/help");
    let screen = term.wait_until(
        "the help",
        |s| s.contains("commands") && s.contains("/exit") && !s.contains("type a message"),
        Duration::from_secs(10),
    );
    let rows: Vec<&str> = screen.lines().map(str::trim).collect();
    for command in ["/plan", "/model", "/sessions", "/undo", "/exit"] {
        assert!(rows.iter().any(|r| r.starts_with(command)), "{command} has no line of its own:\n{screen}");
    }
    assert!(rows.iter().any(|r| r.starts_with("Enter") && r.contains("send")), "{screen}");
    term.type_text("hello\r");
    std::thread::sleep(Duration::from_millis(300));
    term.type_text("\r");
    term.wait_for("Hi.", Duration::from_secs(30));
    assert_eq!(last_prompt(&server.received()[0].body), "hello");
    term.send_line("/exit");
    assert_eq!(term.wait_exit(Duration::from_secs(10)), 0, "{}", term.contents());
}

/// Two parallel calls that ask: "always" for the first answers the second, which is not asked.
#[test]
fn always_answers_a_parallel_calls_question_too() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("b1", "bash", r#"{"command":"echo one","description":"say one"}"#),
            ("b2", "bash", r#"{"command":"echo two","description":"say two"}"#),
        ])),
        Reply::sse(chat::text("Both said.")),
    ])
    .unwrap();
    let dir = worktree(&server, "[permission]\nbash = \"ask\"\n");
    let mut term = Terminal::start(dir.path(), &["chat"]);
    term.wait_for("build ·", Duration::from_secs(30));
    term.send_line("say both");
    let screen = term.wait_for("asks for `bash`", Duration::from_secs(30));
    assert!(screen.contains("echo *"), "{screen}");
    std::thread::sleep(Duration::from_millis(1000));
    term.type_text("a");
    term.wait_for("press a again", Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(500));
    term.type_text("a");
    let screen = term.wait_until(
        "the answer, or a second question",
        |s| s.contains("Both said.") || s.contains("│  echo two"),
        Duration::from_secs(30),
    );
    assert!(screen.contains("Both said."), "asked again:\n{screen}");
    let all = term.history().join("\n");
    assert!(all.contains("✓ bash say one") && all.contains("✓ bash say two"), "{all}");
}
