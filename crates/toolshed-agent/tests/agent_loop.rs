//! The loop against fake models that are real HTTP servers on loopback, in a temp worktree
//! with tools that touch real files and processes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolshed_agent::store::{CallState, StoredPart};
use toolshed_agent::{AgentError, ConfiguredModels, Event, Runtime, Settings, Store, default_rules};
use toolshed_core::agents::Agents;
use toolshed_core::config::Config;
use toolshed_core::permission::{Approver, Permission, RejectAll};
use toolshed_core::registry::{PermissionHook, Registry};
use toolshed_core::tool::{ToolOutput, Typed, tool_fn};
use toolshed_core::{ToolContext, ToolError};
use toolshed_llm::RetryPolicy;
use toolshed_llm::testing::{FakeServer, Reply, anthropic, chat, responses};

#[derive(Deserialize, JsonSchema)]
struct PathArgs {
    /// File path relative to the worktree.
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct EditArgs {
    /// File path.
    path: String,
    /// Text to replace.
    old: String,
    /// Replacement.
    new: String,
}

#[derive(Deserialize, JsonSchema)]
struct BashArgs {
    /// Shell command.
    command: String,
}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// Milliseconds.
    ms: u64,
}

fn test_registry(rules: Arc<dyn Permission>) -> Registry {
    let mut r = Registry::new();
    r.register_builtin(
        tool_fn("read", "Read a file.", |a: PathArgs, ctx: ToolContext| async move {
            std::fs::read_to_string(ctx.root().join(&a.path))
                .map(ToolOutput::text)
                .map_err(|_| ToolError::model(format!("File not found: {}", a.path)))
        })
        .read_only(),
    );
    r.register_builtin(
        tool_fn("edit", "Replace text in a file.", |a: EditArgs, ctx: ToolContext| async move {
            let path = ctx.root().join(&a.path);
            let text = std::fs::read_to_string(&path).map_err(|_| ToolError::model("File not found"))?;
            if !text.contains(&a.old) {
                return Err(ToolError::model("old not found"));
            }
            std::fs::write(&path, text.replacen(&a.old, &a.new, 1)).map_err(ToolError::fatal)?;
            Ok(ToolOutput::text("Edited."))
        })
        .mutating(),
    );
    r.register_builtin(
        tool_fn("bash", "Run a shell command.", |a: BashArgs, ctx: ToolContext| async move {
            let child = tokio::process::Command::new("sh")
                .arg("-c")
                .arg(&a.command)
                .current_dir(ctx.root())
                .kill_on_drop(true)
                .output();
            tokio::select! {
                out = child => {
                    let out = out.map_err(ToolError::fatal)?;
                    Ok(ToolOutput::text(format!("{}exit {}", String::from_utf8_lossy(&out.stdout), out.status.code().unwrap_or(-1))))
                }
                () = ctx.cancellation().cancelled() => Err(ToolError::model("killed")),
            }
        })
        .mutating(),
    );
    r.register_builtin(
        tool_fn("sleep", "Wait.", |a: SleepArgs, ctx: ToolContext| async move {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(a.ms)) => Ok(ToolOutput::text(format!("slept {}", a.ms))),
                () = ctx.cancellation().cancelled() => Err(ToolError::model("woken")),
            }
        })
        .read_only(),
    );
    r.add_hook(Arc::new(PermissionHook(rules)));
    r
}

struct Harness {
    _dir: tempfile::TempDir,
    root: PathBuf,
    db: PathBuf,
    server: FakeServer,
    rt: Arc<Runtime>,
    events: Arc<Mutex<Vec<Event>>>,
}

fn config(kind: &str, base_url: &str) -> Config {
    let mut config = Config::default();
    let text = format!(
        "[provider.fake]\nkind = \"{kind}\"\nbase_url = \"{base_url}\"\n[agent.general]\ndescription = \"Does one task\"\nmode = \"subagent\"\n"
    );
    config.merge_str(Path::new("toolshed.toml"), &text).unwrap();
    config
}

fn runtime(
    root: &Path,
    db: &Path,
    config: &Config,
    approver: Arc<dyn Approver>,
    events: Arc<Mutex<Vec<Event>>>,
) -> Arc<Runtime> {
    runtime_with(root, db, config, approver, events, test_registry)
}

/// Only the built-in `read`, which returns images as attachments.
fn builtin_read(rules: Arc<dyn Permission>) -> Registry {
    let mut r = Registry::new();
    r.register_builtin(Typed::new(toolshed_tools::fs::ReadTool));
    r.add_hook(Arc::new(PermissionHook(rules)));
    r
}

fn runtime_with(
    root: &Path,
    db: &Path,
    config: &Config,
    approver: Arc<dyn Approver>,
    events: Arc<Mutex<Vec<Event>>>,
    registry: fn(Arc<dyn Permission>) -> Registry,
) -> Arc<Runtime> {
    let agents = Arc::new(Agents::with_defaults(config, root, None, &default_rules()));
    let rules: Arc<dyn Permission> = agents.clone();
    let models = ConfiguredModels::new(config.clone()).with_retry(RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_secs(5),
    });
    let settings =
        Settings { max_steps: 8, max_depth: 1, root: root.to_path_buf(), cwd: root.to_path_buf(), compact_at: 0.85 };
    let store = Arc::new(Store::open(db).unwrap());
    let data = root.join(".data");
    // As toolshed-runtime does: the todo list lives in the session database.
    let mut registry = registry(rules.clone());
    toolshed_tools::register_todo(&mut registry, store.clone());
    Runtime::builder(registry, store, Arc::new(models), agents, settings)
        .events(Arc::new(move |e: &Event| events.lock().unwrap().push(e.clone())))
        .build(|b| b.permission(rules).approver(approver).data_dir(data))
}

fn harness(kind: &str, replies: Vec<Reply>, approver: Arc<dyn Approver>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let db = dir.path().join("sessions.db");
    let server = FakeServer::start(replies).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime(&root, &db, &config(kind, &server.base_url()), approver, events.clone());
    Harness { _dir: dir, root, db, server, rt, events }
}

/// The tool results the model was sent in request `n` (chat format), as (call id, content).
fn chat_results(server: &FakeServer, n: usize) -> Vec<(String, String)> {
    server.received()[n].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().to_string()))
        .collect()
}

fn tool_names(body: &Value, key: &str) -> Vec<String> {
    body["tools"].as_array().map_or(Vec::new(), |t| {
        t.iter().map(|t| t.pointer(key).and_then(Value::as_str).unwrap_or_default().to_string()).collect()
    })
}

#[tokio::test]
async fn a_session_reads_edits_runs_a_command_and_finishes() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[("c1", "read", r#"{"path":"greet.txt"}"#)])),
            Reply::sse(chat::tool_calls(&[("c2", "edit", r#"{"path":"greet.txt","old":"hello","new":"goodbye"}"#)])),
            Reply::sse(chat::tool_calls(&[("c3", "bash", r#"{"command":"cat greet.txt"}"#)])),
            Reply::sse(chat::text("I changed hello to goodbye.")),
        ],
        Arc::new(RejectAll),
    );
    std::fs::write(h.root.join("greet.txt"), "hello world\n").unwrap();
    let session = h.rt.create_session("build", "fake/test-model", None).unwrap();
    let answer = h.rt.prompt(&session, "Change hello to goodbye", &CancellationToken::new()).await.unwrap();
    assert_eq!(answer, "I changed hello to goodbye.");
    assert_eq!(std::fs::read_to_string(h.root.join("greet.txt")).unwrap(), "goodbye world\n");
    assert_eq!(chat_results(&h.server, 1), [("c1".into(), "hello world\n".into())]);
    assert_eq!(chat_results(&h.server, 3)[2], ("c3".into(), "goodbye world\nexit 0".into()));
    let first = &h.server.received()[0].body;
    assert_eq!(first["model"], "test-model");
    assert_eq!(tool_names(first, "/function/name"), ["read", "edit", "bash", "sleep", "todo_write", "task"]);
    assert!(first["messages"][0]["content"].as_str().unwrap().contains("You are toolshed"));

    let messages = h.rt.store().messages(&session.id).unwrap();
    assert_eq!(messages.len(), 5, "user + 4 assistant steps");
    let states: Vec<(String, CallState)> = messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            StoredPart::Tool { tool, state, .. } => Some((tool.clone(), *state)),
            _ => None,
        })
        .collect();
    assert_eq!(
        states,
        [
            ("read".into(), CallState::Completed),
            ("edit".into(), CallState::Completed),
            ("bash".into(), CallState::Completed)
        ]
    );
    assert_eq!(h.rt.store().session(&session.id).unwrap().title, "Change hello to goodbye");
    let kinds: Vec<&str> = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { tool, .. } => Some(if tool == "read" { "read" } else { "other" }),
            Event::Finish { .. } => Some("finish"),
            _ => None,
        })
        .collect::<Vec<_>>();
    assert_eq!(kinds, ["read", "other", "other", "finish"]);
}

#[tokio::test]
async fn parallel_calls_in_one_response_run_together_and_return_in_call_order() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[
                ("slow", "sleep", r#"{"ms":400}"#),
                ("fast", "sleep", r#"{"ms":350}"#),
                ("miss", "read", r#"{"path":"nope.txt"}"#),
            ])),
            Reply::sse(chat::text("done")),
        ],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    let started = Instant::now();
    h.rt.prompt(&session, "wait twice", &CancellationToken::new()).await.unwrap();
    assert!(started.elapsed() < Duration::from_millis(700), "ran one after the other: {:?}", started.elapsed());
    assert_eq!(
        chat_results(&h.server, 1),
        [
            ("slow".into(), "slept 400".into()),
            ("fast".into(), "slept 350".into()),
            ("miss".into(), "File not found: nope.txt".into())
        ]
    );
}

#[tokio::test]
async fn anthropic_results_carry_is_error_and_arguments_arrive_in_pieces() {
    let h = harness(
        "anthropic",
        vec![
            Reply::sse(anthropic::tool_calls(&[("t1", "read", r#"{"path":"missing.txt"}"#)])).split(7),
            Reply::sse(anthropic::text("It is missing.")),
        ],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/claude-x", None).unwrap();
    let answer = h.rt.prompt(&session, "read it", &CancellationToken::new()).await.unwrap();
    assert_eq!(answer, "It is missing.");
    let second = &h.server.received()[1].body;
    assert_eq!(
        second["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "t1", "content": "File not found: missing.txt", "is_error": true})
    );
    assert_eq!(tool_names(&h.server.received()[0].body, "/name")[0], "read");
}

#[tokio::test]
async fn responses_pairs_every_call_with_its_output_by_call_id() {
    let h = harness(
        "openai-responses",
        vec![
            Reply::sse(responses::tool_calls(&[
                ("call_a", "bash", r#"{"command":"echo hi > out.txt"}"#, false),
                ("call_b", "read", r#"{"path":"out.txt"}"#, false),
            ])),
            Reply::sse(responses::text("ok")),
        ],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/gpt-x", None).unwrap();
    h.rt.prompt(&session, "go", &CancellationToken::new()).await.unwrap();
    let input = h.server.received()[1].body["input"].as_array().unwrap().clone();
    let calls: Vec<&str> =
        input.iter().filter(|i| i["type"] == "function_call").map(|i| i["call_id"].as_str().unwrap()).collect();
    let outputs: Vec<&str> =
        input.iter().filter(|i| i["type"] == "function_call_output").map(|i| i["call_id"].as_str().unwrap()).collect();
    assert_eq!(calls, ["call_a", "call_b"]);
    assert_eq!(outputs, calls);
    assert_eq!(std::fs::read_to_string(h.root.join("out.txt")).unwrap(), "hi\n");
}

#[tokio::test]
async fn a_429_is_retried_and_the_turn_succeeds() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::error(429, json!({"error": {"message": "slow down"}})).header("retry-after", "0"),
            Reply::sse(chat::text("fine")),
        ],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    assert_eq!(h.rt.prompt(&session, "hi", &CancellationToken::new()).await.unwrap(), "fine");
    assert_eq!(h.server.received().len(), 2);
}

#[tokio::test]
async fn a_provider_error_mid_stream_fails_the_turn_and_the_session_can_go_on() {
    let h = harness(
        "openai-chat",
        vec![Reply::sse(chat::text("partial answer that breaks")).break_after(2), Reply::sse(chat::text("second try"))],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    let err = h.rt.prompt(&session, "hi", &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, AgentError::Model(toolshed_llm::LlmError::Stream { .. })), "{err:?}");
    let messages = h.rt.store().messages(&session.id).unwrap();
    assert!(messages[1].error.as_deref().unwrap().contains("stream"), "{:?}", messages[1]);
    assert_eq!(h.rt.prompt(&session, "again", &CancellationToken::new()).await.unwrap(), "second try");
}

#[tokio::test]
async fn an_interrupted_turn_is_recorded_and_resumes_in_a_new_process() {
    let h = harness(
        "openai-chat",
        vec![Reply::sse(chat::tool_calls(&[("long", "sleep", r#"{"ms":30000}"#)])), Reply::sse(chat::text("resumed"))],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let err = h.rt.prompt(&session, "wait", &cancel).await.unwrap_err();
    assert!(matches!(err, AgentError::Interrupted), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let parts = h.rt.store().messages(&session.id).unwrap()[1].parts.clone();
    assert!(
        matches!(&parts[0], StoredPart::Tool { state: CallState::Error, metadata, .. } if metadata["interrupted"] == true),
        "{parts:?}"
    );

    // A new runtime on the same database (as after a restart) picks the session up.
    let events = Arc::new(Mutex::new(Vec::new()));
    let rt2 = runtime(&h.root, &h.db, &config("openai-chat", &h.server.base_url()), Arc::new(RejectAll), events);
    let resumed = rt2.resume_session(&session.id, None, None).unwrap();
    assert_eq!(resumed.model(), "fake/m");
    assert_eq!(rt2.prompt(&resumed, "go on", &CancellationToken::new()).await.unwrap(), "resumed");
    let results = chat_results(&h.server, 1);
    assert_eq!(results[0].0, "long");
    assert!(results[0].1.contains("interrupted by the user"), "{results:?}");
}

#[tokio::test]
async fn a_crash_mid_call_leaves_the_call_marked_interrupted_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let store = Store::open(&db).unwrap();
    let s = store.create_session(None, "build", Some("fake/m"), dir.path()).unwrap();
    let m = store.add_message(&s.id, toolshed_llm::Role::Assistant, Some("build"), Some("fake/m")).unwrap();
    let call = toolshed_llm::ToolCall {
        id: "c9".into(),
        name: "bash".into(),
        arguments: "{}".into(),
        kind: Default::default(),
    };
    store.add_tool_call(&s.id, &m, &call).unwrap();
    store.set_running(&s.id, "c9").unwrap();
    drop(store); // the process dies here: the call was running

    let server = FakeServer::start(vec![Reply::sse(chat::text("ok"))]).unwrap();
    let rt = runtime(dir.path(), &db, &config("openai-chat", &server.base_url()), Arc::new(RejectAll), Arc::default());
    let live = rt.resume_session(&s.id, None, None).unwrap();
    rt.prompt(&live, "what happened?", &CancellationToken::new()).await.unwrap();
    let results = chat_results(&server, 0);
    assert_eq!(results, [("c9".into(), toolshed_agent::store::INTERRUPTED.into())]);
}

#[tokio::test]
async fn the_step_limit_ends_a_run_that_never_stops_calling_tools() {
    let replies = (0..8).map(|i| Reply::sse(chat::tool_calls(&[(&format!("c{i}"), "sleep", r#"{"ms":1}"#)]))).collect();
    let h = harness("openai-chat", replies, Arc::new(RejectAll));
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    let err = h.rt.prompt(&session, "loop", &CancellationToken::new()).await.unwrap_err();
    assert!(matches!(err, AgentError::StepLimit(8)), "{err:?}");
}

/// A person who approves everything they are asked (unlike `ApproveAll`, which never grants
/// `plan_exit` or `sandbox_escalation`).
struct ApprovingPerson;

impl Approver for ApprovingPerson {
    fn approve<'a>(
        &'a self,
        _request: &'a toolshed_core::permission::ApprovalRequest,
    ) -> toolshed_core::tool::BoxFuture<'a, toolshed_core::permission::Reply> {
        Box::pin(async { toolshed_core::permission::Reply::Once })
    }
}

#[tokio::test]
async fn plan_mode_hides_edits_until_the_user_approves_plan_exit() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[("p1", "plan_exit", "{}")])),
            Reply::sse(chat::tool_calls(&[("e1", "edit", r#"{"path":"a.txt","old":"1","new":"2"}"#)])),
            Reply::sse(chat::text("edited")),
        ],
        Arc::new(ApprovingPerson),
    );
    std::fs::write(h.root.join("a.txt"), "1").unwrap();
    let session = h.rt.create_session("plan", "fake/m", None).unwrap();
    h.rt.prompt(&session, "plan then do", &CancellationToken::new()).await.unwrap();
    let got = h.server.received();
    let plan_tools = tool_names(&got[0].body, "/function/name");
    assert!(
        !plan_tools.contains(&"edit".to_string()) && plan_tools.contains(&"plan_exit".to_string()),
        "{plan_tools:?}"
    );
    assert!(got[0].body["messages"][0]["content"].as_str().unwrap().contains("# Plan mode"));
    let build_tools = tool_names(&got[1].body, "/function/name");
    assert!(build_tools.contains(&"edit".to_string()) && !build_tools.contains(&"plan_exit".to_string()));
    assert_eq!(std::fs::read_to_string(h.root.join("a.txt")).unwrap(), "2");
    assert_eq!(h.rt.store().session(&session.id).unwrap().agent, "build");
}

#[tokio::test]
async fn plan_exit_rejected_by_the_user_keeps_plan_mode() {
    let h = harness(
        "openai-chat",
        vec![Reply::sse(chat::tool_calls(&[("p1", "plan_exit", "{}")])), Reply::sse(chat::text("still planning"))],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("plan", "fake/m", None).unwrap();
    h.rt.prompt(&session, "go", &CancellationToken::new()).await.unwrap();
    assert_eq!(session.agent(), "plan");
    let results = chat_results(&h.server, 1);
    assert!(results[0].1.contains("non-interactive"), "{results:?}");
}

#[tokio::test]
async fn todo_list_is_summarised_into_the_next_request() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[(
                "t1",
                "todo_write",
                r#"{"todos":[{"content":"Write the parser","status":"in_progress"},{"content":"Test it","status":"pending"}]}"#,
            )])),
            Reply::sse(chat::text("working")),
        ],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    h.rt.prompt(&session, "plan the work", &CancellationToken::new()).await.unwrap();
    let system = h.server.received()[1].body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(
        system
            .contains("# Your todo list\n\n2 of 2 todos open:\n- [in_progress] Write the parser\n- [pending] Test it"),
        "{system}"
    );
    assert_eq!(h.rt.store().todos(&session.id).unwrap().len(), 2);
}

#[tokio::test]
async fn agents_md_is_part_of_the_system_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "Always run `make check`.\n").unwrap();
    let server = FakeServer::start(vec![Reply::sse(chat::text("ok"))]).unwrap();
    let rt = runtime(
        dir.path(),
        &dir.path().join("s.db"),
        &config("openai-chat", &server.base_url()),
        Arc::new(RejectAll),
        Arc::default(),
    );
    let s = rt.create_session("build", "fake/m", None).unwrap();
    rt.prompt(&s, "hi", &CancellationToken::new()).await.unwrap();
    let system = server.received()[0].body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("<instructions scope=\"project\""), "{system}");
    assert!(system.contains("Always run `make check`."), "{system}");
}

#[tokio::test]
async fn a_foreground_task_runs_a_read_only_subagent_in_a_child_session() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[(
                "t1",
                "task",
                // Claude Code's name for the agent, taken as `agent` (without it: `general`).
                r#"{"description":"find it","prompt":"Where is the secret?","subagent_type":"explore"}"#,
            )])),
            Reply::sse(chat::tool_calls(&[("r1", "read", r#"{"path":"notes.txt"}"#)])),
            Reply::sse(chat::text("It is in notes.txt line 1.")),
            Reply::sse(chat::text("The sub-agent found it in notes.txt.")),
        ],
        Arc::new(RejectAll),
    );
    std::fs::write(h.root.join("notes.txt"), "secret=42\n").unwrap();
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    let answer = h.rt.prompt(&session, "find the secret", &CancellationToken::new()).await.unwrap();
    assert_eq!(answer, "The sub-agent found it in notes.txt.");
    let got = h.server.received();
    let child_tools = tool_names(&got[1].body, "/function/name");
    assert_eq!(child_tools, ["read"], "explore sees read-only tools and no task");
    assert_eq!(got[1].body["messages"][1], json!({"role": "user", "content": "Where is the secret?"}));
    let result = &chat_results(&h.server, 3)[0].1;
    assert!(result.contains("state=\"completed\"") && result.contains("It is in notes.txt line 1."), "{result}");
    let sessions = h.rt.store().list_sessions().unwrap();
    let child = sessions.iter().find(|s| s.parent_id.as_deref() == Some(session.id.as_str())).unwrap();
    assert_eq!(child.agent, "explore");
}

#[tokio::test]
async fn background_tasks_return_an_id_at_once_and_are_collected_with_task_wait() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[(
                "t1",
                "task",
                r#"{"description":"count","prompt":"Count to three","agent":"general","background":true}"#,
            )])),
            // The parent's next step and the child's first step race for the next replies, so
            // both get the same kind of reply: plain text.
            Reply::sse(chat::text("one two three")),
            Reply::sse(chat::text("one two three")),
            Reply::sse(chat::text("finished")),
        ],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    let answer = h.rt.prompt(&session, "count in the background", &CancellationToken::new()).await.unwrap();
    assert_eq!(answer, "one two three");
    let started = &chat_results(&h.server, 1);
    let started = if started.is_empty() { chat_results(&h.server, 2) } else { started.clone() };
    assert!(started[0].1.starts_with("Started background task task_"), "{started:?}");
    let id = started[0].1.split_whitespace().nth(3).unwrap().to_string();
    // The tools that act on a background task are sent once there is one, not before.
    let received = h.server.received();
    let follow_ups = ["task_wait", "task_result", "task_continue", "task_cancel"];
    let first = tool_names(&received[0].body, "/function/name");
    assert!(follow_ups.iter().all(|t| !first.contains(&t.to_string())), "{first:?}");
    let after = received
        .iter()
        .find(|r| r.body["messages"].to_string().contains("Started background task"))
        .expect("the parent's step after starting the task");
    let after = tool_names(&after.body, "/function/name");
    assert!(follow_ups.iter().all(|t| after.contains(&t.to_string())), "{after:?}");
    // Wait for the background run to store its answer.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let tasks = h.rt.store().tasks(&session.id).unwrap();
        if tasks[0].status != "running" {
            assert_eq!(tasks[0].status, "completed");
            assert_eq!(tasks[0].result.as_deref(), Some("one two three"));
            assert_eq!(tasks[0].id, id);
            break;
        }
        assert!(Instant::now() < deadline, "task never finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn task_wait_and_result_report_a_task_lost_with_its_process() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db");
    let parent;
    {
        let store = Store::open(&db).unwrap();
        parent = store.create_session(None, "build", Some("fake/m"), dir.path()).unwrap().id;
        let child = store.create_session(Some(&parent), "general", Some("fake/m"), dir.path()).unwrap().id;
        store
            .add_task(&toolshed_agent::store::StoredTask {
                id: "task_lost".into(),
                session_id: parent.clone(),
                child_session_id: child,
                agent: "general".into(),
                description: "long job".into(),
                status: "running".into(),
                result: None,
                error: None,
            })
            .unwrap();
    }
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("w", "task_wait", r#"{"ids":["task_lost"],"timeout_ms":5000}"#),
            ("r", "task_result", r#"{"id":"task_lost"}"#),
        ])),
        Reply::sse(chat::text("it was lost")),
    ])
    .unwrap();
    let rt = runtime(dir.path(), &db, &config("openai-chat", &server.base_url()), Arc::new(RejectAll), Arc::default());
    let live = rt.resume_session(&parent, None, None).unwrap();
    let started = Instant::now();
    rt.prompt(&live, "how is the job?", &CancellationToken::new()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "task_wait waited on a dead task");
    let system = server.received()[0].body["messages"][0]["content"].as_str().unwrap().to_string();
    assert!(system.contains("- task_lost [lost] (general): long job"), "{system}");
    let results = chat_results(&server, 1);
    assert_eq!(results[0].1, "task_lost: lost");
    assert!(results[1].1.starts_with("Task task_lost was lost: the process running it ended"), "{}", results[1].1);
}

#[tokio::test]
async fn sub_agents_cannot_start_sub_agents() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[("t1", "task", r#"{"description":"d","prompt":"p","agent":"general"}"#)])),
            Reply::sse(chat::tool_calls(&[("t2", "task", r#"{"description":"d","prompt":"p","agent":"general"}"#)])),
            Reply::sse(chat::text("child done")),
            Reply::sse(chat::text("parent done")),
        ],
        Arc::new(RejectAll),
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    h.rt.prompt(&session, "go", &CancellationToken::new()).await.unwrap();
    // The general sub-agent is not shown `task`; calling it anyway is refused as a tool it was
    // not sent (behind that, the task tool itself refuses past the depth limit).
    let got = h.server.received();
    assert!(!tool_names(&got[1].body, "/function/name").contains(&"task".to_string()));
    let child_results = chat_results(&h.server, 2);
    assert!(child_results[0].1.starts_with("\"task\" is not one of your tools."), "{child_results:?}");
    assert_eq!(got.len(), 4, "no grandchild session asked the model anything");
}

#[tokio::test]
async fn responses_reasoning_items_are_stored_and_replayed_before_their_calls() {
    let reasoning = responses::reasoning_item("rs_1", "Read the file before answering.", "gAAAA-secret");
    let h = harness(
        "openai-responses",
        vec![
            Reply::sse(responses::reasoning_then_tool_calls(
                reasoning.clone(),
                &[("call_r", "read", r#"{"path":"a.txt"}"#, false)],
            )),
            Reply::sse(responses::text("It says hi.")),
            Reply::sse(responses::text("Still hi.")),
            Reply::sse(responses::text("Hi, from another model.")),
        ],
        Arc::new(RejectAll),
    );
    std::fs::write(h.root.join("a.txt"), "hi\n").unwrap();
    let session = h.rt.create_session("build", "fake/gpt-x", None).unwrap();
    h.rt.prompt(&session, "what does a.txt say?", &CancellationToken::new()).await.unwrap();

    let got = h.server.received();
    assert_eq!(got[0].body["include"], json!(["reasoning.encrypted_content"]));
    // The reasoning item comes back without its id (a stateless request cannot resolve it),
    // right before the call it led to.
    let expected_reasoning =
        json!({"type": "reasoning", "summary": reasoning["summary"], "encrypted_content": "gAAAA-secret"});
    let second = got[1].body["input"].as_array().unwrap().clone();
    let kinds: Vec<&str> = second.iter().map(|i| i["type"].as_str().unwrap_or("message")).collect();
    assert_eq!(kinds, ["message", "reasoning", "function_call", "function_call_output"]);
    assert_eq!(second[1], expected_reasoning);
    assert_eq!(second[2]["call_id"], "call_r");

    // The part is stored with its summary, and a resumed session in a new runtime replays it.
    let parts = h.rt.store().messages(&session.id).unwrap()[1].parts.clone();
    assert!(
        matches!(&parts[0], StoredPart::Reasoning { format, model, summary, item }
            if format == "openai-responses" && model == "fake/gpt-x"
                && summary == "Read the file before answering." && item["id"] == "rs_1"),
        "{parts:?}"
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let rt2 = runtime(&h.root, &h.db, &config("openai-responses", &h.server.base_url()), Arc::new(RejectAll), events);
    let resumed = rt2.resume_session(&session.id, None, None).unwrap();
    rt2.prompt(&resumed, "and now?", &CancellationToken::new()).await.unwrap();
    let third = h.server.received()[2].body["input"].as_array().unwrap().clone();
    let reasoning_at = third.iter().position(|i| i["type"] == "reasoning").unwrap();
    assert_eq!(third[reasoning_at], expected_reasoning);
    assert_eq!(third[reasoning_at + 1]["call_id"], "call_r");

    // Another model cannot read that encrypted content: it is not sent the item.
    let events = Arc::new(Mutex::new(Vec::new()));
    let rt3 = runtime(&h.root, &h.db, &config("openai-responses", &h.server.base_url()), Arc::new(RejectAll), events);
    let switched = rt3.resume_session(&session.id, Some("fake/gpt-y"), None).unwrap();
    rt3.prompt(&switched, "and from you?", &CancellationToken::new()).await.unwrap();
    let fourth = h.server.received()[3].body.clone();
    assert_eq!(fourth["model"], "gpt-y");
    let items = fourth["input"].as_array().unwrap();
    assert!(!items.iter().any(|i| i["type"] == "reasoning"), "{items:?}");
    assert!(items.iter().any(|i| i["call_id"] == "call_r"), "{items:?}");
}

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0a, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// `PNG` as base64.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACklEQVR4nGMAAQAABQABDQottAAAAABJRU5ErkJggg==";

/// A temp worktree holding `pic.png`, a fake model of `kind` answering `replies`, and a
/// runtime whose `read` is the built-in one.
fn image_harness(kind: &str, replies: Vec<Reply>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("pic.png"), PNG).unwrap();
    let db = dir.path().join("sessions.db");
    let server = FakeServer::start(replies).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let config = config(kind, &server.base_url());
    let rt = runtime_with(&root, &db, &config, Arc::new(RejectAll), events.clone(), builtin_read);
    Harness { _dir: dir, root, db, server, rt, events }
}

const READ_PIC: &str = r#"{"file_path":"pic.png"}"#;
const READ_TEXT: &str = "Image read successfully: `pic.png` (image/png, 67 bytes).";

#[tokio::test]
async fn a_call_under_another_agents_parameter_name_is_recorded_under_the_tools_own() {
    // Gemini's and others' `path` for read's `file_path`: the call runs, and the session (the
    // history sent back, the events a screen shows) has it as `file_path`.
    let h = image_harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[("c1", "read", r#"{"path":"pic.png"}"#)])),
            Reply::sse(chat::text("A dot.")),
        ],
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    h.rt.prompt(&session, "what is in pic.png?", &CancellationToken::new()).await.unwrap();
    let second = h.server.received()[1].body["messages"].as_array().unwrap().clone();
    let call = second.iter().find_map(|m| m["tool_calls"].get(0)).expect("the assistant's call");
    assert_eq!(call["function"]["arguments"], READ_PIC, "{call}");
    assert!(second.iter().any(|m| m["role"] == "tool" && m["content"] == READ_TEXT), "{second:?}");
    let inputs: Vec<String> = h
        .events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event::ToolCall { input, .. } => Some(input.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(inputs, [READ_PIC]);
}

#[tokio::test]
async fn an_image_read_by_a_tool_reaches_an_anthropic_model_as_an_image_block() {
    let h = image_harness(
        "anthropic",
        vec![Reply::sse(anthropic::tool_calls(&[("t1", "read", READ_PIC)])), Reply::sse(anthropic::text("A dot."))],
    );
    let session = h.rt.create_session("build", "fake/claude-x", None).unwrap();
    assert_eq!(h.rt.prompt(&session, "what is in pic.png?", &CancellationToken::new()).await.unwrap(), "A dot.");
    assert_eq!(
        h.server.received()[1].body["messages"][2]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": READ_TEXT},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}}
        ]})
    );
}

#[tokio::test]
async fn an_image_read_by_a_tool_reaches_a_responses_model_as_an_input_image() {
    let h = image_harness(
        "openai-responses",
        vec![
            Reply::sse(responses::tool_calls(&[("call_1", "read", READ_PIC, false)])),
            Reply::sse(responses::text("A dot.")),
        ],
    );
    let session = h.rt.create_session("build", "fake/gpt-x", None).unwrap();
    h.rt.prompt(&session, "what is in pic.png?", &CancellationToken::new()).await.unwrap();
    let input = h.server.received()[1].body["input"].as_array().unwrap().clone();
    assert_eq!(
        input.last().unwrap(),
        &json!({"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": READ_TEXT},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}")}
        ]})
    );
}

#[tokio::test]
async fn an_image_read_by_a_tool_reaches_a_chat_model_in_a_user_message_and_again_after_a_resume() {
    let h = image_harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[("c1", "read", READ_PIC)])),
            Reply::sse(chat::text("A dot.")),
            Reply::sse(chat::text("Still a dot.")),
        ],
    );
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    h.rt.prompt(&session, "what is in pic.png?", &CancellationToken::new()).await.unwrap();
    let image_message = json!({"role": "user", "content": [
        {"type": "text", "text": "The image returned by the read call c1:"},
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_BASE64}")}}
    ]});
    let second = h.server.received()[1].body["messages"].as_array().unwrap().clone();
    assert_eq!(second[second.len() - 2], json!({"role": "tool", "tool_call_id": "c1", "content": READ_TEXT}));
    assert_eq!(second[second.len() - 1], image_message);

    // The image is stored with the call: a new runtime on the same database sends it again.
    let parts = h.rt.store().messages(&session.id).unwrap()[1].parts.clone();
    assert!(
        matches!(&parts[0], StoredPart::Tool { images, .. }
            if images.len() == 1 && images[0].bytes == 67 && images[0].data_base64.as_deref() == Some(PNG_BASE64)),
        "{parts:?}"
    );
    let config = config("openai-chat", &h.server.base_url());
    let rt2 = runtime_with(&h.root, &h.db, &config, Arc::new(RejectAll), Arc::default(), builtin_read);
    let resumed = rt2.resume_session(&session.id, None, None).unwrap();
    rt2.prompt(&resumed, "and now?", &CancellationToken::new()).await.unwrap();
    let third = h.server.received()[2].body["messages"].as_array().unwrap().clone();
    assert!(third.contains(&image_message), "{third:?}");
}

#[tokio::test]
async fn an_image_too_large_to_send_is_replaced_by_a_note() {
    let h = image_harness(
        "anthropic",
        vec![
            Reply::sse(anthropic::tool_calls(&[("t1", "read", r#"{"file_path":"big.png"}"#)])),
            Reply::sse(anthropic::text("Too big.")),
        ],
    );
    // 4 MiB of PNG: over the 5 MiB limit once base64-encoded.
    let mut big = PNG.to_vec();
    big.resize(4 * 1024 * 1024, 0);
    std::fs::write(h.root.join("big.png"), &big).unwrap();
    let session = h.rt.create_session("build", "fake/claude-x", None).unwrap();
    h.rt.prompt(&session, "look at big.png", &CancellationToken::new()).await.unwrap();
    let result = h.server.received()[1].body["messages"][2]["content"][0].clone();
    let content = result["content"].as_str().unwrap();
    assert!(
        content.ends_with(
            "[An image/png image of 4.0 MiB was returned but not shown to you: images over 5 MiB (as base64) are left out.]"
        ),
        "{content}"
    );
    assert!(h.server.received()[1].body.to_string().len() < 100_000);
}

/// A server that repeats call ids (within one response, and across steps) must not make one
/// call overwrite another in the session, nor pair a call with another's result.
#[tokio::test]
async fn repeated_call_ids_get_fresh_ones_and_every_call_keeps_its_own_result() {
    let h = harness(
        "openai-chat",
        vec![
            Reply::sse(chat::tool_calls(&[
                ("same", "read", r#"{"path":"a.txt"}"#),
                ("same", "read", r#"{"path":"b.txt"}"#),
            ])),
            Reply::sse(chat::tool_calls(&[("same", "read", r#"{"path":"c.txt"}"#)])),
            Reply::sse(chat::text("done")),
        ],
        Arc::new(RejectAll),
    );
    for (name, text) in [("a.txt", "AAA"), ("b.txt", "BBB"), ("c.txt", "CCC")] {
        std::fs::write(h.root.join(name), format!("{text}\n")).unwrap();
    }
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    h.rt.prompt(&session, "read them", &CancellationToken::new()).await.unwrap();
    // The last request carries all three calls, each with a distinct id and its own result.
    let body = &h.server.received()[2].body;
    let messages = body["messages"].as_array().unwrap();
    let calls: Vec<(String, String)> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
        .map(|c| (c["id"].as_str().unwrap().to_string(), c["function"]["arguments"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(calls.len(), 3, "{calls:?}");
    let ids: std::collections::HashSet<&String> = calls.iter().map(|(id, _)| id).collect();
    assert_eq!(ids.len(), 3, "{calls:?}");
    let results = chat_results(&h.server, 2);
    for (id, args) in &calls {
        let expected = if args.contains("a.txt") {
            "AAA"
        } else if args.contains("b.txt") {
            "BBB"
        } else {
            "CCC"
        };
        let (_, output) = results.iter().find(|(rid, _)| rid == id).unwrap();
        assert!(output.contains(expected), "{id} {args} -> {output}");
    }
}

/// Arguments cut off at the output-token limit are not valid JSON; the model is told why, so
/// it sends a smaller call instead of the same one again.
#[tokio::test]
async fn arguments_cut_off_at_the_token_limit_are_explained_to_the_model() {
    let data = |v: Value| format!("data: {v}\n\n");
    let cut = vec![
        data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\": \"a.t"}}
        ]}}]})),
        data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})),
        "data: [DONE]\n\n".to_string(),
    ];
    let h = harness("openai-chat", vec![Reply::sse(cut), Reply::sse(chat::text("ok"))], Arc::new(RejectAll));
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    h.rt.prompt(&session, "read a.txt", &CancellationToken::new()).await.unwrap();
    let results = chat_results(&h.server, 1);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1.contains("not valid JSON"), "{}", results[0].1);
    assert!(results[0].1.contains("hit the output-token limit, so these arguments were cut off"), "{}", results[0].1);
}

#[tokio::test]
async fn a_prompt_image_is_sent_as_the_type_its_bytes_say() {
    use base64::Engine;
    let h = harness("openai-chat", vec![Reply::sse(chat::text("a tiny gif"))], Arc::new(RejectAll));
    let session = h.rt.create_session("build", "fake/m", None).unwrap();
    let gif = base64::engine::general_purpose::STANDARD.encode(b"GIF89a\x01\x00\x01\x00");
    let prompt = [
        toolshed_llm::Part::Text { text: "what is this?".into() },
        // Called a PNG by whoever attached it.
        toolshed_llm::Part::Image(toolshed_llm::Image { media_type: "image/png".into(), data_base64: gif.clone() }),
    ];
    h.rt.prompt_with(&session, &prompt, &CancellationToken::new()).await.unwrap();
    let sent = h.server.received()[0].body["messages"].to_string();
    assert!(sent.contains(&format!("data:image/gif;base64,{gif}")), "{sent}");
    assert!(!sent.contains("image/png"), "{sent}");
}

/// `test_registry` with a deferred tool and `tool_search`.
fn registry_with_a_deferred_tool(rules: Arc<dyn Permission>) -> Registry {
    let mut r = test_registry(rules);
    r.register(
        tool_fn("gh_star", "Star a GitHub repository.", |a: PathArgs, _| async move {
            Ok(ToolOutput::text(format!("starred {}", a.path)))
        })
        .exposure(toolshed_core::tool::Exposure::Deferred),
        toolshed_core::registry::Source::Mcp("gh".into()),
    );
    r.register(Typed::new(toolshed_core::search::ToolSearch::new()), toolshed_core::registry::Source::Runtime);
    r
}

#[tokio::test]
async fn a_model_calls_only_the_tools_it_was_sent_and_those_its_searches_found() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(&root).unwrap();
    let server = FakeServer::start(vec![
        // A hidden tool, a tool not registered, a deferred tool not searched for, and the other
        // model family's edit tool (this model is sent `edit`).
        Reply::sse(chat::tool_calls(&[
            ("h1", "todo_read", "{}"),
            ("h2", "apply_patch", r#"{"input":"*** Begin Patch\n*** End Patch"}"#),
            ("h3", "gh_star", r#"{"path":"acme/api"}"#),
            ("h4", "todo_raed", "{}"),
        ])),
        // A search and a call of what it finds, in one response: the call waits for the next.
        Reply::sse(chat::tool_calls(&[
            ("s1", "tool_search", r#"{"query":"star a repository"}"#),
            ("s2", "gh_star", r#"{"path":"acme/api"}"#),
        ])),
        Reply::sse(chat::tool_calls(&[("s3", "gh_star", r#"{"path":"acme/api"}"#)])),
        Reply::sse(chat::text("done")),
    ])
    .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let rt = runtime_with(
        &root,
        &dir.path().join("s.db"),
        &config("openai-chat", &server.base_url()),
        Arc::new(ApprovingPerson),
        events,
        registry_with_a_deferred_tool,
    );
    let session = rt.create_session("build", "fake/m", None).unwrap();
    rt.prompt(&session, "go", &CancellationToken::new()).await.unwrap();
    let got = server.received();
    let sent = tool_names(&got[0].body, "/function/name");
    assert!(!sent.contains(&"todo_read".to_string()) && !sent.contains(&"gh_star".to_string()), "{sent:?}");
    let first = chat_results(&server, 1);
    assert!(
        first[0].1.starts_with("\"todo_read\" is not one of your tools. Did you mean one of \"todo_write\""),
        "{}",
        first[0].1
    );
    assert!(first[0].1.ends_with("Your todo list, once it has items, is shown to you in every request."));
    // Not registered at all: the model's own edit tool is named.
    assert_eq!(first[1].1, "Unknown tool \"apply_patch\". Edit files with edit.");
    assert_eq!(
        first[2].1,
        "The tool \"gh_star\" is not loaded yet: find it with tool_search, and call it in your next response (a search loads tools for the responses after it)."
    );
    assert!(first[3].1.starts_with("Unknown tool \"todo_raed\". Did you mean one of \"todo_write\""), "{}", first[3].1);
    assert!(!first[3].1.contains("todo_read"), "a tool it cannot call is not suggested: {}", first[3].1);
    let second = chat_results(&server, 2);
    assert!(second.iter().any(|(id, out)| id == "s2" && out.starts_with("The tool \"gh_star\" is not loaded yet")));
    assert!(tool_names(&got[2].body, "/function/name").contains(&"gh_star".to_string()));
    let third = chat_results(&server, 3);
    let star = third.iter().find(|(id, _)| id == "s3").unwrap();
    assert_eq!(star.1, "starred acme/api");
}
