//! `toolshed run`, `chat`, `session` and `call --session` as processes, against a fake
//! OpenAI-compatible server on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use toolshed_llm::testing::{FakeServer, Reply, chat};

fn toolshed(root: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn worktree(server: &FakeServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    dir
}

fn session_id(stderr: &str) -> String {
    stderr.lines().rev().find_map(|l| l.strip_prefix("session ")).unwrap().trim().to_string()
}

#[test]
fn run_without_a_model_says_what_to_set_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = toolshed(dir.path(), &["run", "hello"], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    for needle in ["--model PROVIDER/MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "base_url", "[provider.local]"] {
        assert!(err.contains(needle), "{needle} missing: {err}");
    }
    assert!(!dir.path().join(".data").exists(), "no database for a configuration error");
    let out = toolshed(dir.path(), &["run", "hello", "--model", "anthropic/claude-sonnet-4-5"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("set the environment variable ANTHROPIC_API_KEY"));
}

/// A sub-agent runs only inside `task`: `run` and `chat` refuse it as chat's `/agent` does;
/// `tools`, `call` and `mcp serve` still show, run and serve what it gets.
#[test]
fn a_sub_agent_is_not_an_agent_to_run_a_session_as() {
    let server = FakeServer::start(Vec::new()).unwrap();
    let dir = worktree(&server);
    for args in [&["run", "hello", "-a", "explore"][..], &["chat", "-a", "explore"]] {
        let out = toolshed(dir.path(), args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains("`explore` is a sub-agent") && err.contains("build, plan"), "{args:?}: {err}");
    }
    assert!(server.received().is_empty());
    let out = toolshed(dir.path(), &["tools", "-a", "explore", "--format", "table"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn run_streams_the_answer_stores_the_session_and_resumes_it() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[(
            "c1",
            "todo_write",
            r#"{"todos":[{"content":"Say hello","status":"completed"}]}"#,
        )])),
        Reply::sse(chat::text("Hello from the fake model.")),
        Reply::sse(chat::text("Still here.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["run", "say hello"], "");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "Hello from the fake model.\n");
    assert!(err.contains("→ todo_write"), "{err}");
    assert!(err.contains("✓ todo_write 0 todos"), "{err}");
    let id = session_id(&err);

    let out = toolshed(dir.path(), &["run", "are you there?", "--session", &id], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Still here.\n");
    let third = &server.received()[2].body["messages"];
    let roles: Vec<&str> = third.as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant", "user"]);

    let out = toolshed(dir.path(), &["session", "list", "--json"], "");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["title"], "say hello");
    assert_eq!(list[0]["messages"], 5);

    let out = toolshed(dir.path(), &["session", "show", &id], "");
    let shown = text(&out.stdout);
    assert!(shown.contains("[todo_write completed]") && shown.contains("Still here."), "{shown}");

    let out = toolshed(dir.path(), &["session", "export", &id], "");
    let export: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(export["todos"][0]["content"], "Say hello");
    assert_eq!(export["messages"][1]["parts"][0]["state"], "completed");

    let out = toolshed(dir.path(), &["session", "show", "ses_nope"], "");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn run_json_emits_one_event_per_line() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("ok then"))]).unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["run", "hi", "--json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"session_start"));
    assert!(kinds.contains(&"text") && kinds.contains(&"step_finish"));
    assert_eq!(events.last().unwrap()["type"], "finish");
    assert_eq!(events.last().unwrap()["text"], "ok then");
}

#[test]
fn a_provider_failure_exits_1_and_names_the_problem() {
    let server =
        FakeServer::start(vec![Reply::error(401, serde_json::json!({"error": {"message": "bad key"}}))]).unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["run", "hi"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("fake rejected the API key (HTTP 401): bad key"), "{}", text(&out.stderr));
}

#[test]
fn call_with_session_records_into_the_stored_session_and_without_it_touches_no_database() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("first"))]).unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["call", "todo_read", "{}"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!dir.path().join(".data/sessions.db").exists(), "a plain call opened the database");

    let out = toolshed(dir.path(), &["run", "start"], "");
    let id = session_id(&text(&out.stderr));
    let args = r#"{"todos":[{"content":"From the CLI","status":"pending"}]}"#;
    let out = toolshed(dir.path(), &["call", "todo_write", args, "--session", &id, "--json"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = toolshed(dir.path(), &["session", "export", &id], "");
    let export: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(export["todos"][0]["content"], "From the CLI");
    let last = export["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["parts"][0]["tool"], "todo_write");
    assert_eq!(last["parts"][0]["state"], "completed");
    let out = toolshed(dir.path(), &["call", "todo_read", "{}", "--session", "ses_missing"], "");
    assert_eq!(out.status.code(), Some(2));
    // The runtime's own tools need a model's turn: said in words, not "unknown tool".
    let out = toolshed(dir.path(), &["call", "task", r#"{"description":"a","prompt":"b"}"#], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("runs only inside `toolshed run`, `chat` and `acp`"), "{}", text(&out.stderr));
}

#[test]
fn chat_takes_prompts_line_by_line_and_switches_to_plan_mode() {
    let server =
        FakeServer::start(vec![Reply::sse(chat::text("first answer")), Reply::sse(chat::text("planning now"))])
            .unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["chat"], "hello\n/plan\n/plan\nmake a plan\n/exit\n");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "first answer\nplanning now\n");
    // One line for the switch, one for staying.
    assert_eq!(err.matches("[agent: build → plan]").count(), 1, "{err}");
    assert!(err.contains("[already plan]") && !err.contains("[now plan]"), "{err}");
    let second = &server.received()[1].body;
    assert!(second["messages"][0]["content"].as_str().unwrap().contains("# Plan mode"));
    let tools: Vec<&str> =
        second["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert!(tools.contains(&"plan_exit"), "{tools:?}");
}

#[test]
fn chat_compacts_on_demand_and_goes_on_from_the_summary() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "read", r#"{"file_path":"toolshed.toml"}"#)])),
        Reply::sse(chat::text("read it")),
        Reply::sse(chat::text("## Task\n- look at the config")),
        Reply::sse(chat::text("still on it")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["chat"], "look at the config\n/compact\nand now?\n/exit\n");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("[compaction (manual): 3 messages summarised"), "{err}");
    let received = server.received();
    assert!(received[2].body.get("tools").is_none(), "the summary request has no tools");
    // The next step is sent the user's message, the summary and the new prompt.
    let last = received[3].body["messages"].to_string();
    assert!(last.contains("look at the config") && last.contains("## Task") && last.contains("and now?"), "{last}");
    assert!(!last.contains("read it"), "the summarised answer is not sent again: {last}");
}

#[test]
fn chat_answers_permission_requests_from_the_next_line() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("p1", "plan_exit", "{}")])),
        Reply::sse(chat::text("building")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["chat", "--agent", "plan"], "we agree on the plan\no\n/exit\n");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("plan_exit needs permission `plan_exit`"), "{err}");
    assert!(err.contains("[agent: plan → build]"), "{err}");
    // Read from a pipe, the answer is echoed: what follows starts on a line of its own.
    let asked = err.lines().find(|l| l.contains("[o]nce")).unwrap_or_else(|| panic!("{err}"));
    assert!(asked.trim_end().ends_with(" o"), "{err}");
}

/// A command that failed is shown to a person as a failure (✗ and its exit code), though the
/// tool did its job; an answer cut off ends its line.
#[test]
fn run_shows_a_failed_command_as_failed() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("b1", "bash", r#"{"command":"echo hi; exit 3"}"#)])),
        Reply::sse(chat::text("It failed.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "{}[permission]\nbash = \"allow\"\n",
            std::fs::read_to_string(dir.path().join("toolshed.toml")).unwrap()
        ),
    )
    .unwrap();
    let out = toolshed(dir.path(), &["run", "try it"], "");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.lines().any(|l| l.contains("✗ bash") && l.contains("exit 3")), "{err}");
}

/// A call that needed an answer no one could give (no terminal, no --yes): the person is told
/// so in their words, with what they can do; the advice for the model is not shown.
#[test]
fn run_without_a_terminal_says_what_needed_approval_and_how_to_give_it() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("b1", "bash", r#"{"command":"touch made.txt"}"#)])),
        Reply::sse(chat::text("It needs approval.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!("{}[permission]\nbash = \"ask\"\n", std::fs::read_to_string(dir.path().join("toolshed.toml")).unwrap()),
    )
    .unwrap();
    let out = toolshed(dir.path(), &["run", "make the file"], "");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let line = err.lines().find(|l| l.contains("✗ bash")).unwrap_or_else(|| panic!("{err}"));
    assert_eq!(
        line.trim(),
        "✗ bash: not run: `bash` on `touch made.txt` needs approval; rerun at a terminal or with --yes",
        "{err}"
    );
    assert!(!dir.path().join("made.txt").exists());
}

#[test]
fn run_reads_edits_and_runs_a_command_with_the_builtin_tools_and_stores_the_session() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "read", r#"{"file_path":"src/lib.txt"}"#)])),
        Reply::sse(chat::tool_calls(&[(
            "c2",
            "edit",
            r#"{"file_path":"src/lib.txt","old_string":"answer = 41","new_string":"answer = 42"}"#,
        )])),
        Reply::sse(chat::tool_calls(&[("c3", "bash", r#"{"command":"grep -c 42 src/lib.txt"}"#)])),
        Reply::sse(chat::text("Fixed the answer.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.txt"), "let answer = 41;\n").unwrap();
    let out = toolshed(dir.path(), &["run", "fix the answer"], "");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "Fixed the answer.\n");
    assert_eq!(std::fs::read_to_string(dir.path().join("src/lib.txt")).unwrap(), "let answer = 42;\n");
    let tool_message = |n: usize| {
        let body = &server.received()[n].body["messages"];
        let m = body.as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap().clone();
        m["content"].as_str().unwrap().to_string()
    };
    assert!(tool_message(1).contains("1: let answer = 41;"), "{}", tool_message(1));
    assert!(tool_message(3).starts_with('1'), "bash output: {}", tool_message(3));
    let id = session_id(&err);
    let out = toolshed(dir.path(), &["session", "export", &id], "");
    let export: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools: Vec<(String, String)> = export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().clone())
        .filter(|p| p["type"] == "tool")
        .map(|p| (p["tool"].as_str().unwrap().to_string(), p["state"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        tools,
        [("read".into(), "completed".into()), ("edit".into(), "completed".into()), ("bash".into(), "completed".into())]
    );
}

#[test]
fn a_run_killed_mid_call_resumes_with_the_call_marked_interrupted() {
    use std::io::{BufRead, BufReader};
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("slow", "bash", r#"{"command":"sleep 5"}"#)])),
        Reply::sse(chat::text("The command was cut off; I will check.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", dir.path().to_str().unwrap(), "run", "wait a bit", "--json"])
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", dir.path().join(".data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut session = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["type"] == "tool_call" {
            session = Some(event["session_id"].as_str().unwrap().to_string());
            break;
        }
    }
    let id = session.expect("the run never started its tool call");
    std::thread::sleep(std::time::Duration::from_millis(200));
    child.kill().unwrap(); // SIGKILL: nothing gets to clean up
    child.wait().unwrap();

    let out = toolshed(dir.path(), &["run", "what happened?", "--session", &id], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let messages = &server.received()[1].body["messages"];
    let result = messages.as_array().unwrap().iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "slow");
    assert!(result["content"].as_str().unwrap().starts_with("[Tool execution was interrupted"), "{result}");
    let out = toolshed(dir.path(), &["session", "export", &id], "");
    let export: Value = serde_json::from_slice(&out.stdout).unwrap();
    let part = &export["messages"][1]["parts"][0];
    assert_eq!((part["tool"].as_str(), part["state"].as_str()), (Some("bash"), Some("error")));
    assert_eq!(part["metadata"]["interrupted"], true);
}

/// Parallel calls of one step overlap, so they are not "in a row": three identical reads in
/// one response all run, while a third identical read in a third step still meets `doom_loop`.
#[test]
fn doom_loop_never_counts_parallel_calls_of_one_step_as_consecutive() {
    let read = r#"{"file_path":"notes.txt"}"#;
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("p1", "read", read), ("p2", "read", read), ("p3", "read", read)])),
        Reply::sse(chat::tool_calls(&[("s1", "read", read)])),
        Reply::sse(chat::tool_calls(&[("s2", "read", read)])),
        Reply::sse(chat::tool_calls(&[("s3", "read", read)])),
        Reply::sse(chat::text("done")),
    ])
    .unwrap();
    let dir = worktree(&server);
    std::fs::write(dir.path().join("notes.txt"), "the note\n").unwrap();
    let out = toolshed(dir.path(), &["run", "read the note"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let received = server.received();
    let results = |n: usize| -> Vec<(String, String)> {
        received[n].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| (m["tool_call_id"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().to_string()))
            .collect()
    };
    let all = results(4);
    for (id, content) in &all[..5] {
        assert!(content.contains("the note"), "{id}: {content}");
    }
    assert_eq!(all[5].0, "s3");
    assert!(all[5].1.contains("three times in a row"), "{}", all[5].1);
}

#[test]
fn run_says_when_it_waits_to_retry_and_json_reports_the_retry() {
    let limited = || {
        Reply::error(429, serde_json::json!({"error": {"message": "slow down", "type": "rate_limit_exceeded"}}))
            .header("retry-after", "1")
    };
    let server = FakeServer::start(vec![
        limited(),
        Reply::sse(chat::text("Made it.")),
        limited(),
        Reply::sse(chat::text("Again.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let out = toolshed(dir.path(), &["run", "hello"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "Made it.");
    assert!(text(&out.stderr).contains("[rate limited, retrying in 1 s (attempt 2)]"), "{}", text(&out.stderr));
    let out = toolshed(dir.path(), &["run", "--json", "hello"], "");
    let retry: Vec<Value> = text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "retry")
        .collect();
    assert_eq!(retry.len(), 1, "{}", text(&out.stdout));
    assert_eq!((retry[0]["attempt"].as_u64(), retry[0]["wait_ms"].as_u64()), (Some(2), Some(1000)));
    assert_eq!(retry[0]["reason"], "rate limited");
}

#[test]
fn a_session_goes_on_only_in_its_own_worktree_while_that_exists() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("first")), Reply::sse(chat::text("moved on"))]).unwrap();
    let (a, b) = (worktree(&server), worktree(&server));
    let data = tempfile::tempdir().unwrap();
    let run = |root: &Path, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .env("TOOLSHED_TRUST_PROJECT", "1")
            .args(["--root", root.to_str().unwrap()])
            .args(args)
            .current_dir(root)
            .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
            .env("TOOLSHED_DATA_DIR", data.path())
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = run(a.path(), &["run", "start"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stderr));
    for args in [vec!["run", "-s", &id, "go on"], vec!["tools", "-s", &id]] {
        let out = run(b.path(), &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(&format!("session {id} worked in {}", a.path().display())), "{err}");
        assert!(err.contains("--root"), "{err}");
    }
    assert_eq!(server.received().len(), 1, "nothing was sent for the refused run");
    // Its worktree gone, the session goes on where it is asked to, with a warning.
    let gone = a.path().to_path_buf();
    drop(a);
    let out = run(b.path(), &["run", "-s", &id, "go on"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("worked in {}, which no longer exists", gone.display())));
    assert_eq!(text(&out.stdout).trim(), "moved on");
}
