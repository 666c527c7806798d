//! `toolshed acp` driven by an ACP client nobody on this project wrote: the official Python SDK
//! (`agent-client-protocol` from PyPI, installed by `.ci/test`; its interpreter is
//! `TOOLSHED_TEST_ACP_PYTHON`), against the loopback model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use toolshed_llm::testing::{FakeServer, Reply, chat};

fn python() -> String {
    let python = std::env::var("TOOLSHED_TEST_ACP_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = Command::new(&python).args(["-c", "import acp"]).output().is_ok_and(|o| o.status.success());
    assert!(
        found,
        "the ACP tests need the Python SDK: `.ci/test` installs it (python3 -m venv DIR && DIR/bin/pip install agent-client-protocol==0.12.1, then TOOLSHED_TEST_ACP_PYTHON=DIR/bin/python)"
    );
    python
}

/// Runs the client script in `mode`; what it recorded.
fn client(dir: &Path, mode: &str, extra: &[&str]) -> Value {
    let out = dir.join(format!(".acp-{mode}.json"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/client.py");
    let run = Command::new(python())
        .arg(script)
        .args([env!("CARGO_BIN_EXE_toolshed"), dir.to_str().unwrap(), out.to_str().unwrap(), mode])
        .args(extra)
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .env("TOOLSHED_DATA_DIR", dir.join(".data"))
        .env("XDG_CONFIG_HOME", dir.join(".xdg"))
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "the client failed:\n{}\n{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

fn worktree(server: &FakeServer) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    // Canonical: the session's worktree is what the agent resolves it to.
    let path = dir.path().canonicalize().unwrap();
    std::fs::write(path.join("notes.txt"), "keep\nold line\nkeep\n").unwrap();
    std::fs::write(
        path.join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nedit = \"ask\"\nbash = \"allow\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    dir
}

fn of_kind<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates.iter().filter(|u| u["sessionUpdate"] == kind).collect()
}

#[test]
fn an_editor_prompts_reads_edits_asks_runs_cancels_and_loads_the_session_again() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("r1", "read", r#"{"file_path":"notes.txt"}"#)])),
        Reply::sse(chat::tool_calls(&[(
            "e1",
            "edit",
            r#"{"file_path":"notes.txt","old_string":"old line","new_string":"new line"}"#,
        )])),
        Reply::sse(chat::tool_calls(&[("b1", "bash", r#"{"command":"echo ran-$((6*7))","description":"say"}"#)])),
        Reply::sse(chat::text("All done.")),
        Reply::sse(chat::text("a slow answer")).delay(Duration::from_secs(8)),
        Reply::sse(chat::text("After the cancel.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let root = dir.path().canonicalize().unwrap();
    let notes = root.join("notes.txt");
    let got = client(&root, "turns", &[]);

    assert_eq!(got["init"]["agentCapabilities"]["loadSession"], true, "{}", got["init"]);
    assert_eq!(got["stop1"], "end_turn");
    assert_eq!(got["stop2"], "cancelled", "a cancelled turn ends with `cancelled`");
    assert_eq!(got["stop3"], "end_turn", "a prompt right after a cancel runs once the cancelled turn is over");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "keep\nnew line\nkeep\n");
    let modes: Vec<&str> =
        got["modes"]["availableModes"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert!(modes.contains(&"build") && modes.contains(&"plan"), "{modes:?}");

    let updates = got["updates"].as_array().unwrap();
    let calls = of_kind(updates, "tool_call");
    let read = calls.iter().find(|c| c["kind"] == "read").expect("a read call");
    assert_eq!(read["title"], "read: notes.txt");
    assert_eq!(read["locations"][0]["path"], notes.to_str().unwrap());
    // The edit: located, asked about, then a diff of the whole file.
    let edit = calls.iter().find(|c| c["kind"] == "edit").expect("an edit call");
    assert_eq!(edit["locations"][0]["path"], notes.to_str().unwrap());
    let permissions = got["permissions"].as_array().unwrap();
    assert_eq!(permissions.len(), 1, "only the edit asks: {permissions:?}");
    let kinds: Vec<&str> =
        permissions[0]["options"].as_array().unwrap().iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
    assert!(permissions[0]["tool_call"]["title"].as_str().unwrap().starts_with("edit"), "{}", permissions[0]);
    let done: Vec<&Value> =
        of_kind(updates, "tool_call_update").into_iter().filter(|u| u["toolCallId"] == edit["toolCallId"]).collect();
    // The question showed its own title; the call's comes back after the answer.
    assert!(done.iter().any(|u| u["title"] == edit["title"]), "{} {done:?}", edit["title"]);
    let diff =
        done.iter().flat_map(|u| u["content"].as_array().cloned().unwrap_or_default()).find(|c| c["type"] == "diff");
    let diff = diff.expect("a diff for the edit");
    assert_eq!(diff["path"], notes.to_str().unwrap());
    assert_eq!(diff["oldText"], "keep\nold line\nkeep\n");
    assert_eq!(diff["newText"], "keep\nnew line\nkeep\n");
    // The command: its exact text as the title, its output in the content.
    let bash = calls.iter().find(|c| c["kind"] == "execute").expect("a bash call");
    assert_eq!(bash["title"], "bash: echo ran-$((6*7))");
    let output = serde_json::to_string(
        &of_kind(updates, "tool_call_update")
            .into_iter()
            .filter(|u| u["toolCallId"] == bash["toolCallId"])
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(output.contains("ran-42"), "{output}");
    let said: String =
        of_kind(updates, "agent_message_chunk").iter().map(|c| c["content"]["text"].as_str().unwrap_or("")).collect();
    assert!(said.contains("All done.") && said.contains("After the cancel."), "{said}");
    assert!(!of_kind(updates, "available_commands_update").is_empty());
    assert!(!of_kind(updates, "usage_update").is_empty());

    // Loaded in a new process, the session's history arrives as updates.
    let session = got["session"].as_str().unwrap().to_string();
    let loaded = client(&root, "load", &[&session]);
    let updates = loaded["updates"].as_array().unwrap();
    let prompts: Vec<&str> =
        of_kind(updates, "user_message_chunk").iter().map(|c| c["content"]["text"].as_str().unwrap()).collect();
    assert_eq!(prompts, ["read, edit and run", "take your time", "and now this"]);
    let replayed: Vec<&str> = of_kind(updates, "tool_call").iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(replayed, ["read: notes.txt", "edit: notes.txt", "bash: echo ran-$((6*7))"]);
    let said: String =
        of_kind(updates, "agent_message_chunk").iter().map(|c| c["content"]["text"].as_str().unwrap_or("")).collect();
    assert!(said.contains("All done."), "{said}");
}

#[test]
fn with_an_editor_that_offers_fs_the_model_reads_and_edits_its_unsaved_buffer() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("r1", "read", r#"{"file_path":"notes.txt"}"#)])),
        Reply::sse(chat::tool_calls(&[(
            "e1",
            "edit",
            r#"{"file_path":"notes.txt","old_string":"unsaved text","new_string":"edited text"}"#,
        )])),
        Reply::sse(chat::text("Edited.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let root = dir.path().canonicalize().unwrap();
    let notes = root.join("notes.txt");
    let got = client(&root, "fs", &[]);
    assert_eq!(got["stop1"], "end_turn", "{got}");

    // The model saw the editor's buffer, not the file on disk.
    let requests = server.received();
    let second = serde_json::to_string(&requests[1].body).unwrap();
    assert!(second.contains("1: unsaved text in the editor"), "{second}");
    assert!(!second.contains("old line"), "the disk's text reached the model: {second}");

    // The edit was made to the buffer, through the editor; the disk is the editor's to save.
    let reads = got["reads"].as_array().unwrap();
    assert!(!reads.is_empty() && reads.iter().all(|r| r == notes.to_str().unwrap()), "{reads:?}");
    assert_eq!(
        got["writes"],
        serde_json::json!([{"path": notes.to_str().unwrap(), "content": "edited text in the editor\n"}])
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "keep\nold line\nkeep\n");
    let edited = serde_json::to_string(&requests[2].body).unwrap();
    assert!(
        edited.contains("-unsaved text in the editor") && edited.contains("+edited text in the editor"),
        "{edited}"
    );

    // The editor is shown the change to its buffer.
    let updates = got["updates"].as_array().unwrap();
    let edit = of_kind(updates, "tool_call").into_iter().find(|c| c["kind"] == "edit").expect("an edit call");
    let diff = of_kind(updates, "tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == edit["toolCallId"])
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .find(|c| c["type"] == "diff")
        .expect("a diff for the edit");
    assert_eq!(diff["path"], notes.to_str().unwrap());
    assert_eq!(diff["oldText"], "unsaved text in the editor\n");
    assert_eq!(diff["newText"], "edited text in the editor\n");
}

#[test]
fn an_image_in_a_prompt_reaches_the_model_and_one_no_model_takes_is_refused() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("A single pixel."))]).unwrap();
    let dir = worktree(&server);
    let root = dir.path().canonicalize().unwrap();
    let got = client(&root, "image", &[]);
    let prompts = &got["init"]["agentCapabilities"]["promptCapabilities"];
    assert_eq!((prompts["image"].as_bool(), prompts["audio"].as_bool()), (Some(true), Some(false)), "{prompts}");
    assert_eq!(got["stop1"], "end_turn", "{got}");

    // The image travels between its texts, as the OpenAI chat format takes it.
    let requests = server.received();
    assert_eq!(requests.len(), 1, "the refused prompt reached the model");
    let user = requests[0].body["messages"].as_array().unwrap().iter().find(|m| m["role"] == "user").unwrap().clone();
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    assert_eq!(
        user["content"],
        serde_json::json!([
            {"type": "text", "text": "what is in"},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}},
            {"type": "text", "text": "this screenshot?"}
        ])
    );
    let error = got["svg_error"].as_str().expect("the SVG prompt was refused");
    assert!(error.contains("only PNG, JPEG, GIF and WebP"), "{error}");

    // The image is stored with the session and shown again when it is loaded.
    let session = got["session"].as_str().unwrap().to_string();
    let loaded = client(&root, "load", &[&session]);
    let updates = loaded["updates"].as_array().unwrap();
    let images: Vec<&Value> =
        of_kind(updates, "user_message_chunk").into_iter().filter(|c| c["content"]["type"] == "image").collect();
    assert_eq!(images.len(), 1, "{updates:?}");
    assert_eq!(
        (images[0]["content"]["mimeType"].as_str(), images[0]["content"]["data"].as_str()),
        (Some("image/png"), Some(png))
    );
}

#[test]
fn a_session_needs_an_absolute_existing_directory_that_is_not_the_root() {
    let server = FakeServer::start(Vec::new()).unwrap();
    let dir = worktree(&server);
    let root = dir.path().canonicalize().unwrap();
    let got = client(&root, "badcwd", &[]);
    let errors: Vec<&str> = got["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap_or("")).collect();
    assert_eq!(errors.len(), 3);
    assert!(errors[0].contains("the root of the file system"), "{}", errors[0]);
    assert!(errors[1].contains("must be an absolute path"), "{}", errors[1]);
    assert!(errors[2].contains("cannot be opened"), "{}", errors[2]);
}

#[test]
fn a_clients_mcp_server_named_like_a_configured_one_is_attached_beside_it() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("m1", "inner_read", r#"{"file_path":"inner.txt"}"#),
            ("m2", "editor-inner_read", r#"{"file_path":"inner.txt"}"#),
        ])),
        Reply::sse(chat::text("Read both.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let root = dir.path().canonicalize().unwrap();
    // The configured `inner` serves `config/`; the editor's `inner` serves `editor/`.
    for (sub, text) in [("config", "from the configured server"), ("editor", "from the editor's server")] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
        std::fs::write(root.join(sub).join("inner.txt"), format!("{text}\n")).unwrap();
    }
    let toolshed = env!("CARGO_BIN_EXE_toolshed");
    let config = std::fs::read_to_string(root.join("toolshed.toml")).unwrap();
    std::fs::write(
        root.join("toolshed.toml"),
        format!(
            "{config}[mcp.inner]\ncommand = \"{toolshed}\"\nargs = [\"--root\", \"{}/config\", \"mcp\", \"serve\"]\nenv = {{ XDG_CONFIG_HOME = \"{}/.xdg-inner\" }}\n",
            root.display(),
            root.display()
        ),
    )
    .unwrap();
    let servers = serde_json::json!([{
        "name": "inner",
        "command": toolshed,
        "args": ["--root", format!("{}/editor", root.display()), "mcp", "serve"],
        "env": {"XDG_CONFIG_HOME": format!("{}/.xdg-inner", root.display())},
    }]);
    let got = client(&root, "mcp", &[&servers.to_string()]);
    assert_eq!(got["stop1"], "end_turn", "{got}");
    let requests = server.received();
    assert_eq!(requests.len(), 2, "{got}");
    let results: Vec<(String, String)> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().to_string()))
        .collect();
    let of = |id: &str| results.iter().find(|(i, _)| i == id).map(|(_, c)| c.clone()).unwrap_or_default();
    assert!(of("m1").contains("from the configured server"), "{results:?}");
    assert!(of("m2").contains("from the editor's server"), "{results:?}");
}

#[test]
fn a_session_whose_mcp_server_is_slow_to_start_does_not_hold_up_another_sessions_prompt() {
    let server = FakeServer::start(vec![Reply::sse(chat::text("Quick."))]).unwrap();
    let dir = worktree(&server);
    let root = dir.path().canonicalize().unwrap();
    let got = client(&root, "concurrent", &[]);
    assert_eq!(got["stop1"], "end_turn", "{got}");
    let (prompt, slow) = (got["prompt_done"].as_f64().unwrap(), got["slow_done"].as_f64().unwrap());
    assert!(slow >= 3.5, "the slow server was not waited for: {got}");
    assert!(prompt < slow - 1.0, "the prompt waited for the other session to open: {got}");
}

#[test]
fn a_sub_agents_call_ids_never_name_its_parents_calls() {
    // The parent's `task` call and the sub-agent's `read` call have the same provider id.
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[(
            "c1",
            "task",
            r#"{"description":"look at notes","prompt":"read notes.txt","agent":"explore"}"#,
        )])),
        Reply::sse(chat::tool_calls(&[("c1", "read", r#"{"file_path":"notes.txt"}"#)])),
        Reply::sse(chat::text("The notes say keep.")),
        Reply::sse(chat::text("Done.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let root = dir.path().canonicalize().unwrap();
    let got = client(&root, "once", &[]);
    assert_eq!(got["stop1"], "end_turn", "{got}");
    let updates = got["updates"].as_array().unwrap();
    let calls = of_kind(updates, "tool_call");
    let task = calls.iter().find(|c| c["title"].as_str().unwrap().starts_with("task")).expect("the task call");
    let read = calls.iter().find(|c| c["kind"] == "read").expect("the sub-agent's read");
    assert_ne!(task["toolCallId"], read["toolCallId"], "{calls:?}");
    // Each call's result goes to its own call.
    let finished = |id: &Value| {
        serde_json::to_string(
            &of_kind(updates, "tool_call_update").into_iter().filter(|u| u["toolCallId"] == *id).collect::<Vec<_>>(),
        )
        .unwrap()
    };
    let task_done = finished(&task["toolCallId"]);
    assert!(task_done.contains("The notes say keep."), "{task_done}");
    let read_done = finished(&read["toolCallId"]);
    assert!(read_done.contains("old line") && !read_done.contains("The notes say keep."), "{read_done}");
}

#[test]
fn the_language_servers_a_session_started_are_shut_down_when_the_editor_closes_the_connection() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("w1", "write", r#"{"file_path":"a.py","content":"x = 1\n"}"#)])),
        Reply::sse(chat::text("Written.")),
    ])
    .unwrap();
    let dir = worktree(&server);
    let root = dir.path().canonicalize().unwrap();
    let marker = root.join(".lsp-shutdown");
    let lsp = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/fake_lsp.py");
    let config = std::fs::read_to_string(root.join("toolshed.toml")).unwrap();
    std::fs::write(
        root.join("toolshed.toml"),
        format!("{config}[lsp.pyright]\ncommand = \"{lsp}\"\nargs = [\"{}\"]\n", marker.display()),
    )
    .unwrap();
    let got = client(&root, "once", &[]);
    assert_eq!(got["stop1"], "end_turn", "{got}");
    assert_eq!(std::fs::read_to_string(root.join("a.py")).unwrap(), "x = 1\n");
    // The write started the language server for diagnostics; it was asked to shut down.
    assert!(marker.exists(), "the language server was not shut down: {got}");
}

/// `toolshed acp` in `dir`, spoken to in raw JSON-RPC lines: each of `lines` is sent after
/// the answer to the one before (notifications skipped); the answers and the exit status.
fn raw_acp(dir: &Path, lines: &[&[u8]]) -> (Vec<Value>, Option<i32>) {
    use std::io::{BufRead, Write};
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .arg("acp")
        .current_dir(dir)
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .env("TOOLSHED_DATA_DIR", dir.parent().unwrap().join(".acp-data"))
        .env("XDG_CONFIG_HOME", dir.join(".xdg"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut replies = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut got = Vec::new();
    for line in lines {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        for reply in replies.by_ref() {
            let reply: Value = serde_json::from_str(&reply.unwrap()).unwrap();
            if reply.get("id").is_some() {
                got.push(reply);
                break;
            }
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    (got, status.code())
}

const INITIALIZE: &[u8] =
    br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;

/// A line that is not UTF-8 gets a parse error and the connection goes on (the SDK's own stdio
/// transport ended it, and every session with it); so does a line over 64 MiB, which is not
/// held whole.
#[test]
fn a_line_that_is_not_utf8_gets_a_parse_error_and_the_connection_goes_on() {
    let server = FakeServer::start(vec![]).unwrap();
    let dir = worktree(&server);
    let path = dir.path().canonicalize().unwrap();
    let long = vec![b'{'; (64 << 20) + 1];
    let (answers, code) = raw_acp(
        &path,
        &[
            INITIALIZE,
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"s\xff\",\"prompt\":[]}}",
            b"\xff\xfe",
            &long,
            br#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#,
        ],
    );
    assert_eq!(code, Some(0), "{answers:?}");
    assert_eq!(answers.len(), 5, "{answers:?}");
    for parse_error in &answers[1..4] {
        assert_eq!(parse_error["id"], Value::Null, "{parse_error}");
        assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    }
    assert_eq!(answers[4]["id"], 2, "{:?}", answers[4]);
    assert!(answers[4]["error"]["message"].as_str().is_some(), "{:?}", answers[4]);
}

/// A session goes on only in the worktree it worked in (as `run -s` does): loaded with a cwd in
/// another, its edits would land where its snapshots cannot see them.
#[test]
fn a_session_is_loaded_only_in_the_worktree_it_worked_in() {
    let server = FakeServer::start(vec![]).unwrap();
    let parent = tempfile::tempdir().unwrap();
    let (a, b) = (parent.path().join("a"), parent.path().join("b"));
    for dir in [&a, &b] {
        std::fs::create_dir(dir).unwrap();
        std::fs::write(
            dir.join("toolshed.toml"),
            format!(
                "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n",
                server.base_url()
            ),
        )
        .unwrap();
    }
    let (a, b) = (a.canonicalize().unwrap(), b.canonicalize().unwrap());
    let new = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session/new","params":{{"cwd":"{}","mcpServers":[]}}}}"#,
        a.display()
    );
    let (answers, _) = raw_acp(&a, &[INITIALIZE, new.as_bytes()]);
    let id = answers[1]["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("{answers:?}")).to_string();
    let load = |cwd: &Path| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"session/load","params":{{"sessionId":"{id}","cwd":"{}","mcpServers":[]}}}}"#,
            cwd.display()
        )
    };
    let (answers, _) = raw_acp(&b, &[INITIALIZE, load(&b).as_bytes()]);
    let error = answers[1]["error"].to_string();
    assert!(error.contains(&format!("worked in {}", a.display())), "{answers:?}");
    let (answers, _) = raw_acp(&a, &[INITIALIZE, load(&a).as_bytes()]);
    assert!(answers[1].get("result").is_some(), "{answers:?}");
}

/// A folder inside a worktree is a place in that worktree, as for the CLI: its toolshed.toml
/// and rules apply, and a session of the worktree loads there.
#[test]
fn a_folder_inside_a_worktree_works_in_that_worktree() {
    let server = FakeServer::start(vec![]).unwrap();
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().canonicalize().unwrap().join("proj");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    assert!(Command::new("git").args(["init", "-q"]).arg(&root).status().unwrap().success());
    std::fs::write(
        root.join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let sub = root.join("sub");
    let new = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session/new","params":{{"cwd":"{}","mcpServers":[]}}}}"#,
        sub.display()
    );
    let (answers, _) = raw_acp(&sub, &[INITIALIZE, new.as_bytes()]);
    let id = answers[1]["result"]["sessionId"].as_str().unwrap_or_else(|| panic!("{answers:?}")).to_string();
    let list = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .args(["session", "list", "--json", "--all"])
        .env("TOOLSHED_DATA_DIR", sub.parent().unwrap().join(".acp-data"))
        .env("XDG_CONFIG_HOME", sub.join(".xdg"))
        .current_dir(&root)
        .output()
        .unwrap();
    let sessions: Value = serde_json::from_slice(&list.stdout).unwrap();
    let stored = sessions.as_array().unwrap().iter().find(|s| s["id"] == id.as_str()).unwrap();
    assert_eq!(stored["root"], root.display().to_string(), "{stored}");
    let load = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session/load","params":{{"sessionId":"{id}","cwd":"{}","mcpServers":[]}}}}"#,
        sub.display()
    );
    let (answers, _) = raw_acp(&sub, &[INITIALIZE, load.as_bytes()]);
    assert!(answers[1].get("result").is_some(), "{answers:?}");
}
