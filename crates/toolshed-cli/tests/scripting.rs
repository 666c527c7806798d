//! The command line's conventions for scripts and shells, through the real binary against a
//! fake OpenAI-compatible server on loopback: the prompt from standard input, `--continue`,
//! `-o`, `--config KEY=VALUE`, short flags, `session list | delete`, `tools --format table`,
//! completions and man pages, examples in `--help`, and a person's wording of `call` errors.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolshed_llm::testing::{FakeServer, Reply, chat};

fn command(root: &Path, data: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
    cmd.env("TOOLSHED_TRUST_PROJECT", "1");
    cmd.args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", data)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs toolshed in `root` with `stdin` written to a pipe (closed after it).
fn toolshed_in(root: &Path, data: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = command(root, data, args).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn toolshed(root: &Path, args: &[&str], stdin: &str) -> Output {
    toolshed_in(root, &root.join(".data"), args, stdin)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn config(server: &FakeServer) -> String {
    format!(
        "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n",
        server.base_url()
    )
}

fn worktree(server: &FakeServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolshed.toml"), config(server)).unwrap();
    dir
}

fn session_id(stderr: &str) -> String {
    stderr.lines().rev().find_map(|l| l.strip_prefix("session ")).unwrap().trim().to_string()
}

/// The text of the last user message of request `n`.
fn last_user_text(server: &FakeServer, n: usize) -> String {
    let messages = server.received()[n].body["messages"].as_array().unwrap().clone();
    let last = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    match &last["content"] {
        Value::String(s) => s.clone(),
        parts => parts.as_array().unwrap().iter().filter_map(|p| p["text"].as_str()).collect(),
    }
}

#[test]
fn run_takes_its_prompt_from_standard_input_and_appends_piped_input_to_a_prompt() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("one")),
        Reply::sse(chat::text("two")),
        Reply::sse(chat::text("three")),
        Reply::sse(chat::text("four")),
    ])
    .unwrap();
    let dir = worktree(&server);

    let out = toolshed(dir.path(), &["run"], "fix the failing test\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(last_user_text(&server, 0).trim(), "fix the failing test");

    let out = toolshed(dir.path(), &["run", "-"], "explain the parser");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(last_user_text(&server, 1), "explain the parser");

    let out = toolshed(dir.path(), &["run", "review this change"], "-a\n+b\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(last_user_text(&server, 2), "review this change\n\n<stdin>\n-a\n+b\n</stdin>");

    // Empty piped input adds nothing.
    let out = toolshed(dir.path(), &["run", "just this"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(last_user_text(&server, 3), "just this");

    // Nothing to do: a usage error, and the model is not asked.
    let out = toolshed(dir.path(), &["run"], "  \n");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("the prompt is empty"), "{}", text(&out.stderr));
    assert_eq!(server.received().len(), 4);
}

#[test]
fn continue_resumes_the_most_recent_session_of_this_worktree_only() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::text("first answer")),
        Reply::sse(chat::text("other worktree")),
        Reply::sse(chat::text("second answer")),
    ])
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let (here, there) = (worktree(&server), worktree(&server));

    let out = toolshed_in(here.path(), data.path(), &["run", "remember 42"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stderr));
    // A later session in another worktree is not this worktree's most recent.
    let out = toolshed_in(there.path(), data.path(), &["run", "elsewhere"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Nor is a chat opened here and left without a word.
    let out = toolshed_in(here.path(), data.path(), &["chat", "--plain"], "/exit\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let out = toolshed_in(here.path(), data.path(), &["run", "--continue", "what did I say?"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(session_id(&text(&out.stderr)), id);
    let sent = server.received()[2].body["messages"].to_string();
    assert!(sent.contains("remember 42") && sent.contains("first answer"), "{sent}");

    // A session is named by the start of its id too (with or without `ses_`), as long as no
    // other's id starts the same.
    let out = toolshed_in(here.path(), data.path(), &["session", "list", "--json", "--all"], "");
    let ids: Vec<String> = serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let needed = ids.iter().filter(|o| **o != id).map(|o| common(o, &id)).max().unwrap_or(0) + 1;
    let short = &id[..needed.max(8)];
    let out = toolshed_in(here.path(), data.path(), &["session", "show", short], "");
    assert_eq!(out.status.code(), Some(0), "{short}: {}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&id), "{}", text(&out.stdout));
    let out = toolshed_in(here.path(), data.path(), &["session", "show", &short["ses_".len()..]], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shared = ids.iter().filter(|o| **o != id).map(|o| common(o, &id)).max().unwrap_or(0);
    if shared >= 8 {
        let out = toolshed_in(here.path(), data.path(), &["session", "show", &id[..shared]], "");
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains("several sessions"), "{}", text(&out.stderr));
    }

    // chat --continue opens the same session.
    let out = toolshed_in(here.path(), data.path(), &["chat", "--plain", "--continue"], "/session\n/exit\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("session {id}")), "{}", text(&out.stderr));

    // --continue where nothing ran yet: a usage error that says what to do.
    let empty = worktree(&server);
    let out = toolshed_in(empty.path(), data.path(), &["run", "--continue", "hi"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no session has worked in"), "{}", text(&out.stderr));
    let out = toolshed_in(here.path(), data.path(), &["run", "--continue", "-s", &id, "hi"], "");
    assert_eq!(out.status.code(), Some(2), "--continue and --session together are refused");
    assert_eq!(server.received().len(), 3);
}

#[test]
fn output_last_message_writes_the_final_answer_and_a_bad_path_costs_no_request() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "todo_read", "{}")])),
        Reply::sse(chat::text("The final answer.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["run", "answer", "-o", "nested/missing/last.txt"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--output-last-message"), "{}", text(&out.stderr));
    assert!(server.received().is_empty());

    let out = toolshed(dir.path(), &["run", "answer", "--output-last-message", "last.txt", "--json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("last.txt")).unwrap(), "The final answer.");

    // A usage error asks no model and leaves the file alone.
    let out = toolshed(dir.path(), &["run", "again", "-o", "last.txt", "-a", "no-such-agent"], "");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("last.txt")).unwrap(), "The final answer.");
    // A run that fails leaves no earlier answer behind (the server has no reply left).
    let out = toolshed(dir.path(), &["run", "again", "-o", "last.txt"], "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("last.txt")).unwrap(), "");
}

#[test]
fn config_overrides_apply_after_the_files_on_every_command() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("configured by flags"))]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The project file denies webfetch; an override later allows it again.
    std::fs::write(dir.path().join("toolshed.toml"), "[permission]\nwebfetch = \"deny\"\n").unwrap();
    let names = |out: &Output| -> Vec<String> {
        let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
        tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    let out = toolshed(dir.path(), &["tools"], "");
    assert!(!names(&out).contains(&"webfetch".to_string()));
    let out = toolshed(dir.path(), &["-c", "permission.webfetch=allow", "tools"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(names(&out).contains(&"webfetch".to_string()));
    // In order: the last override wins.
    let out = toolshed(
        dir.path(),
        &["tools", "--config", "permission.webfetch=allow", "--config", "permission.webfetch=deny"],
        "",
    );
    assert!(!names(&out).contains(&"webfetch".to_string()));

    // A model and its provider from overrides alone (a string value, then TOML ones).
    let base = format!("provider.fake.base_url={}", server.base_url());
    let args = ["run", "hi", "-c", "model=fake/test-model", "-c", "provider.fake.kind=\"openai-chat\"", "-c", &base];
    let out = toolshed(dir.path(), &args, "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "configured by flags\n");

    // Bad overrides are usage errors that name themselves; nothing runs.
    for (bad, says) in [
        ("session.max_step=3", "unknown field `max_step`"),
        ("session.max_steps=0", "max_steps must be at least 1"),
        ("a..b=1", "is not a TOML key path"),
    ] {
        let out = toolshed(dir.path(), &["-c", bad, "tools"], "");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(text(&out.stderr).contains(says), "{bad}: {}", text(&out.stderr));
        assert!(out.stdout.is_empty());
    }
    let out = toolshed(dir.path(), &["--config", "one.toml", "--config", "two.toml", "tools"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("second config file"), "{}", text(&out.stderr));
    assert_eq!(server.received().len(), 1);
}

/// Waits until a toolshed process holds session `id`'s lock.
fn wait_for_lock(data: &Path, id: &str, child: &mut Child) {
    let lock = data.join("locks").join(format!("{id}.lock"));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&lock).is_ok_and(|pid| pid.trim().parse::<u32>().is_ok()) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before it locked the session");
        assert!(Instant::now() < deadline, "the session was never locked");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn session_delete_refuses_a_running_session_then_deletes_it_with_its_snapshot_refs() {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipped: no git (snapshots need it)");
        return;
    }
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "write", r#"{"file_path": "a.txt", "content": "one\n"}"#)])),
        Reply::sse(chat::text("wrote it")),
        Reply::sse(chat::text("kept")),
        Reply::sse(chat::text("slow answer")).delay(Duration::from_secs(3)),
    ])
    .unwrap();
    let dir = worktree(&server);
    let data = dir.path().join(".data");
    let out = toolshed(dir.path(), &["run", "write a file", "-y"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stderr));
    let out = toolshed(dir.path(), &["run", "another"], "");
    let other = session_id(&text(&out.stderr));
    let refs = |session: &str| -> usize {
        let snapshots = data.join("snapshots");
        let shadow = std::fs::read_dir(&snapshots).unwrap().next().unwrap().unwrap().path();
        let out = Command::new("git")
            .env("GIT_DIR", &shadow)
            .args(["for-each-ref", "--format=%(refname)", "refs/toolshed/"])
            .output()
            .unwrap();
        text(&out.stdout).lines().filter(|r| r.contains(&format!("/{session}/"))).count()
    };
    assert!(refs(&id) > 0, "the session's step keeps its snapshots");

    // While a run holds the session, delete is refused and changes nothing.
    let mut running = command(dir.path(), &data, &["run", "-s", &id, "slowly"]).stdin(Stdio::null()).spawn().unwrap();
    wait_for_lock(&data, &id, &mut running);
    let out = toolshed(dir.path(), &["session", "delete", &id], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("in use by another toolshed process"), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("then delete it"), "{}", text(&out.stderr));
    assert!(refs(&id) > 0);
    assert!(running.wait().unwrap().success());

    let out = toolshed(dir.path(), &["session", "delete", &id], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("deleted session {id}")), "{}", text(&out.stdout));
    assert_eq!(refs(&id), 0, "its snapshot refs are gone");
    let out = toolshed(dir.path(), &["session", "show", &id], "");
    assert_eq!(out.status.code(), Some(2));
    let out = toolshed(dir.path(), &["session", "list", "--json"], "");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = list.as_array().unwrap().iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [other.as_str()], "the other session stays");

    let out = toolshed(dir.path(), &["session", "delete", "ses_nope"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no session `ses_nope`"), "{}", text(&out.stderr));
}

#[test]
fn session_list_shows_this_worktrees_sessions_under_a_header_and_all_with_all() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("a")), Reply::sse(chat::text("b"))]).unwrap();
    let data = tempfile::tempdir().unwrap();
    let (here, there) = (worktree(&server), worktree(&server));
    let out = toolshed_in(here.path(), data.path(), &["run", "here", "-m", "fake/test-model"], "");
    let mine = session_id(&text(&out.stderr));
    let out = toolshed_in(there.path(), data.path(), &["run", "there"], "");
    let theirs = session_id(&text(&out.stderr));

    let out = toolshed_in(here.path(), data.path(), &["session", "list"], "");
    let shown = text(&out.stdout);
    let lines: Vec<&str> = shown.lines().collect();
    assert!(lines[0].starts_with("ID") && lines[0].contains("UPDATED") && lines[0].contains("TITLE"), "{shown}");
    assert!(!lines[0].contains("WORKTREE"), "{shown}");
    assert_eq!(lines.len(), 2, "{shown}");
    assert!(lines[1].starts_with(&mine) && lines[1].ends_with("here"), "{shown}");

    let out = toolshed_in(here.path(), data.path(), &["session", "list", "--all"], "");
    let shown = text(&out.stdout);
    assert!(shown.lines().next().unwrap().contains("WORKTREE"), "{shown}");
    assert!(shown.contains(&mine) && shown.contains(&theirs), "{shown}");
    let root = there.path().canonicalize().unwrap();
    assert!(shown.contains(root.to_str().unwrap()), "{shown}");

    let out = toolshed_in(here.path(), data.path(), &["session", "list", "--json"], "");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);

    let empty = tempfile::tempdir().unwrap();
    let out = toolshed_in(empty.path(), data.path(), &["session", "list"], "");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("--all"), "{}", text(&out.stderr));
}

#[test]
fn tools_format_table_is_a_header_and_one_row_per_tool() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolshed(dir.path(), &["tools", "--format", "table", "-a", "plan"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let mut lines = shown.lines();
    let header = lines.next().unwrap();
    for column in ["TOOL", "EXPOSURE", "SOURCE", "BYTES", "DESCRIPTION"] {
        assert!(header.contains(column), "{header}");
    }
    let rows: Vec<&str> = lines.collect();
    assert!(rows.iter().any(|r| r.starts_with("read ") && r.contains("direct") && r.contains("builtin")), "{shown}");
    assert!(!rows.iter().any(|r| r.starts_with("edit ")), "plan mode has no edit: {shown}");
    let json: Value = serde_json::from_slice(&toolshed(dir.path(), &["tools", "-a", "plan"], "").stdout).unwrap();
    assert_eq!(rows.len(), json.as_array().unwrap().len());

    // With --all, what is not sent yet says when it would be, or why not.
    let out = toolshed(dir.path(), &["tools", "--format", "table", "--all"], "");
    let all = text(&out.stdout);
    let row = |name: &str| all.lines().find(|r| r.starts_with(&format!("{name} "))).unwrap_or_default().to_string();
    assert!(row("task_wait").contains("after a task"), "{all}");
    assert!(row("lsp").contains("hidden (no server)"), "an empty worktree: {all}");
    assert!(row("todo_read").contains("hidden") && !row("todo_read").contains("no server"), "{all}");

    let out = toolshed(dir.path(), &["tools", "--format", "tabel"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("expected json, table,"), "{}", text(&out.stderr));
}

#[test]
fn completions_and_man_pages_come_from_the_command_definitions_without_a_worktree() {
    let dir = tempfile::tempdir().unwrap();
    // A broken config does not stop what needs no config.
    std::fs::write(dir.path().join("toolshed.toml"), "this is not toml").unwrap();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = toolshed(dir.path(), &["completions", shell], "");
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        assert!(script.contains("toolshed") && script.contains("output-last-message"), "{shell}: {script}");
    }
    let out = toolshed(dir.path(), &["completions", "nushell"], "");
    assert_eq!(out.status.code(), Some(2));

    let script = dir.path().join("toolshed.bash");
    std::fs::write(&script, toolshed(dir.path(), &["completions", "bash"], "").stdout).unwrap();
    if let Ok(out) =
        Command::new("bash").arg("-c").arg(format!("source {} && complete -p toolshed", script.display())).output()
    {
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("toolshed"), "{}", text(&out.stdout));
    }

    let out = toolshed(dir.path(), &["man"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    assert!(page.starts_with(".ie") || page.contains(".TH toolshed"), "{page}");
    assert!(page.contains("completions"), "{page}");

    let pages = dir.path().join("man/man1");
    let out = toolshed(dir.path(), &["man", "--out", pages.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = std::fs::read_to_string(pages.join("toolshed-run.1")).unwrap();
    assert!(run.contains("output\\-last\\-message") && run.contains("continue"), "{run}");
    assert!(pages.join("toolshed.1").exists() && pages.join("toolshed-session-delete.1").exists());
}

#[test]
fn help_of_each_command_ends_with_examples() {
    let dir = tempfile::tempdir().unwrap();
    for command in [
        &["run", "--help"][..],
        &["call", "--help"],
        &["tools", "--help"],
        &["session", "delete", "--help"],
        &["completions", "--help"],
        &["--help"],
    ] {
        let out = toolshed(dir.path(), command, "");
        assert_eq!(out.status.code(), Some(0), "{command:?}");
        let help = text(&out.stdout);
        let examples = help.split("Examples:").nth(1).unwrap_or_else(|| panic!("{command:?}: {help}"));
        assert!(examples.contains("toolshed "), "{command:?}: {help}");
    }
}

#[test]
fn call_errors_tell_a_person_what_to_do_and_the_model_keeps_its_wording() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();

    let out = toolshed(dir.path(), &["call", "read", r#"{"file_path": 5}"#], "");
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stderr);
    assert!(!said.contains("call read again"), "{said}");
    assert!(said.contains("file_path") && said.contains("Correct ARGS_JSON and run the command again"), "{said}");
    let out = toolshed(dir.path(), &["call", "read", "-"], "{not json");
    let said = text(&out.stderr);
    assert!(said.contains("not valid JSON") && said.contains("Correct the JSON on standard input"), "{said}");
    assert!(!said.contains("Send one JSON object"), "{said}");
    // What a program (and the model) reads is unchanged.
    let out = toolshed(dir.path(), &["call", "read", r#"{"file_path": 5}"#, "--json"], "");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(result["output"].as_str().unwrap().ends_with("Fix the arguments and call read again."), "{result}");

    // `permission explain` decodes the same arguments for a person.
    let out = toolshed(dir.path(), &["permission", "explain", "read", r#"{"file_path": 5}"#], "");
    assert_eq!(out.status.code(), Some(2));
    let said = text(&out.stderr);
    assert!(said.contains("Correct ARGS_JSON") && !said.contains("call read again"), "{said}");

    let out = toolshed(dir.path(), &["call", "raed", "{}"], "");
    let said = text(&out.stderr);
    assert!(
        said.contains("Did you mean")
            && said.contains("\"read\"")
            && said.contains("toolshed tools --all --format table"),
        "{said}"
    );

    // An ask with no one to answer: the person is told how to answer it.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("b.txt"), "x\n").unwrap();
    let args = format!(r#"{{"file_path": "{}"}}"#, outside.path().join("b.txt").display());
    let out = toolshed(dir.path(), &["call", "read", &args], "");
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stderr);
    assert!(said.contains("was not granted: no one could be asked (no terminal). Nothing was run."), "{said}");
    assert!(said.contains("add --yes") && !said.contains("non-interactive run"), "{said}");
    let out = toolshed(dir.path(), &["call", "read", &args, "-y"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // What --yes never grants: the person is told the rule that does, not to add --yes.
    for extra in [&[][..], &["--yes"][..]] {
        let mut call = vec!["call", "write", r#"{"file_path": "toolshed.toml", "content": "x"}"#];
        call.extend_from_slice(extra);
        let out = toolshed(dir.path(), &call, "");
        assert_eq!(out.status.code(), Some(1));
        let said = text(&out.stderr);
        assert!(
            said.contains("--yes never approves `protected`")
                || said.contains("--yes would not approve `protected` either"),
            "{said}"
        );
        assert!(said.contains(r#"[permission] protected = { "toolshed.toml" = "allow" }"#), "{said}");
        assert!(!said.contains("add --yes") && !said.contains("tell the user"), "{said}");
    }

    // A deny: where the rule is and how to see it.
    let out = toolshed(dir.path(), &["-c", "permission.read=deny", "call", "read", r#"{"file_path": "a.txt"}"#], "");
    let said = text(&out.stderr);
    assert!(said.contains("Permission denied") && said.contains("toolshed permission explain read"), "{said}");
    assert!(!said.contains("do not retry it"), "{said}");
}

#[test]
fn a_sessions_found_tools_stay_when_it_resumes_and_tools_shows_them() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "tool_search", r#"{"query": "search file contents regex"}"#)])),
        Reply::sse(chat::text("Found it.")),
        Reply::sse(chat::text("Still here.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let inner = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(dir.path().join("toolshed.toml")).unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "{config}[mcp.inner]\ncommand = \"{}\"\nargs = [\"--root\", \"{}\", \"mcp\", \"serve\"]\nexposure = \"deferred\"\n",
            env!("CARGO_BIN_EXE_toolshed"),
            inner.path().display()
        ),
    )
    .unwrap();
    let names = |body: &Value| -> Vec<String> {
        body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_string()).collect()
    };

    let out = toolshed(dir.path(), &["run", "find the grep tool"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stderr));
    let received = server.received();
    assert!(names(&received[0].body).iter().all(|n| !n.starts_with("inner")), "deferred at first");
    let found: Vec<String> = names(&received[1].body).into_iter().filter(|n| n.starts_with("inner")).collect();
    assert!(found.iter().any(|n| n.ends_with("grep")), "the search found inner's grep: {found:?}");

    // `tools --session` shows what the search added, as JSON and for people.
    let out = toolshed(dir.path(), &["tools", "-s", &id], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let marked: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["found"] == true)
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(marked, found);
    let out = toolshed(dir.path(), &["tools", "--session", &id, "--format", "table"], "");
    let table = text(&out.stdout);
    let row = table.lines().find(|l| l.starts_with(&found[0])).unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains(" found "), "{row}");
    // Without the session nothing was found.
    let out = toolshed(dir.path(), &["tools"], "");
    assert!(!text(&out.stdout).contains(&found[0]), "{}", text(&out.stdout));

    // Resumed in a new process, the found tools are still sent.
    let out = toolshed(dir.path(), &["run", "-s", &id, "and now?"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let again: Vec<String> = names(&server.received()[2].body).into_iter().filter(|n| n.starts_with("inner")).collect();
    assert_eq!(again, found);

    // An unknown session is a usage error that says where to look.
    let out = toolshed(dir.path(), &["tools", "-s", "ses_nope"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("toolshed session list"), "{}", text(&out.stderr));
}
