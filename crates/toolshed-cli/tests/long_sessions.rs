//! Sessions longer than the context window, end to end: `toolshed run` against a loopback
//! model with a 16,000-token window that counts every request it receives (4 bytes a token of
//! the body as sent), refuses one that does not fit as a real provider does, and answers
//! summary requests (those without tools) with notes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolshed_llm::testing::{FakeServer, Received, Reply, chat};

const WINDOW: u64 = 16_000;
const PROMPT: &str = "Check every file fNNN.txt in order: read it, then mark the file you read before as checked by replacing its MARKER line.";
const TODO: &str = "Mark every file as checked";

fn command(root: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_toolshed"));
    cmd.env("TOOLSHED_TRUST_PROJECT", "1");
    cmd.args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

fn toolshed(root: &Path, args: &[&str]) -> Output {
    command(root, args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A worktree with `files` files of 8 KB, each with a `MARKER-N` line, configured for the
/// fake model with a 16,000-token window.
fn worktree(server: &FakeServer, files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "model = \"fake/small\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[provider.fake.models.small]\ncontext = {WINDOW}\n[session]\nmax_steps = 400\n",
            server.base_url()
        ),
    )
    .unwrap();
    for n in 1..=files {
        let mut body = format!("MARKER-{n}\n");
        let mut line = 0;
        while body.len() < 8_000 {
            line += 1;
            body.push_str(&format!("file {n} line {line}: the quick brown fox jumps over the lazy dog {}\n", n * line));
        }
        std::fs::write(dir.path().join(format!("f{n:03}.txt")), body).unwrap();
    }
    dir
}

#[derive(Default)]
struct Model {
    /// Model steps answered (summary requests and refused requests not counted).
    steps: usize,
    /// Requests over the window.
    violations: Vec<u64>,
    /// Requests without the first prompt, or (steps) without the todo list.
    missing: Vec<String>,
    summaries: usize,
    summary_input: u64,
    summary_output: u64,
    largest: u64,
    /// Pause before answering a summary request (to kill the client during one).
    summary_delay: Duration,
    /// Steps whose first request is refused as too long, whatever its size.
    refuse_once: Vec<usize>,
    /// Refuse every step's request as too long from this step on.
    refuse_from: Option<usize>,
    /// Requests refused so.
    refused: usize,
    /// Report a constant 100 prompt tokens, as the test helpers do (usage that cannot be right).
    constant_usage: bool,
    /// Requests that listed the files changed with a diff stat.
    with_diff_stat: usize,
    /// Prompt tokens of the model steps (summary requests apart).
    step_input: u64,
}

const NOTES: &str = "## Task\n- Check every file fNNN.txt in order, marking the previous one as checked.\n## Decisions\n- One file per step.\n## Files\n- Files up to the latest read are checked.\n## Commands\n- none\n## Open problems\n- none\n## Next steps\n- Continue with the next file.";

/// The scripted model: step 1 writes the todo list and reads f001; step n reads fNNN and edits
/// the file before it; after `files` steps it answers.
fn model(state: Arc<Mutex<Model>>, files: usize) -> impl Fn(&Received) -> Reply + Send + Sync + 'static {
    move |r: &Received| {
        let body = r.body.to_string();
        let tokens = body.len().div_ceil(4) as u64;
        let mut s = state.lock().unwrap();
        s.largest = s.largest.max(tokens);
        if tokens > WINDOW {
            s.violations.push(tokens);
            return Reply::error(
                400,
                json!({"error": {"code": "context_length_exceeded", "message": format!("This model's maximum context length is {WINDOW} tokens; the request has {tokens}")}}),
            );
        }
        if !body.contains(PROMPT) {
            let step = s.steps;
            s.missing.push(format!("prompt missing from a request after step {step}"));
        }
        let has_tools = r.body.get("tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
        if !has_tools {
            s.summaries += 1;
            s.summary_input += tokens;
            s.summary_output += (NOTES.len() / 4) as u64;
            let delay = s.summary_delay;
            return Reply::sse(chat::with_usage(chat::text(NOTES), tokens, (NOTES.len() / 4) as u64)).delay(delay);
        }
        let next = s.steps + 1;
        if s.refuse_once.contains(&next) || s.refuse_from.is_some_and(|from| next >= from) {
            s.refuse_once.retain(|&n| n != next);
            s.refused += 1;
            return Reply::error(
                400,
                json!({"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 16000 tokens"}}),
            );
        }
        if body.contains("## Files changed in this session") && body.contains("files changed, ") {
            s.with_diff_stat += 1;
        }
        if s.steps > 0 && !body.contains(TODO) {
            let step = s.steps + 1;
            s.missing.push(format!("todo list missing from step {step}"));
        }
        s.steps += 1;
        s.step_input += tokens;
        let n = s.steps;
        let events = if n == 1 {
            let todos = json!({"todos": [{"content": TODO, "status": "in_progress"}]}).to_string();
            chat::tool_calls(&[("c1-todo", "todo_write", &todos), ("c1-read", "read", r#"{"file_path":"f001.txt"}"#)])
        } else if n <= files {
            let read = json!({"file_path": format!("f{n:03}.txt")}).to_string();
            let prev = n - 1;
            let edit = json!({"file_path": format!("f{prev:03}.txt"), "old_string": format!("MARKER-{prev}\n"), "new_string": format!("CHECKED-{prev}\n")})
                .to_string();
            chat::tool_calls(&[(&format!("c{n}-read"), "read", &read), (&format!("c{n}-edit"), "edit", &edit)])
        } else {
            chat::text("All files are checked.")
        };
        let reported = if s.constant_usage { 100 } else { tokens };
        Reply::sse(chat::with_usage(events, reported, 40))
    }
}

fn session_id(stderr: &str) -> String {
    stderr.lines().rev().find_map(|l| l.strip_prefix("session ")).unwrap().trim().to_string()
}

#[test]
fn a_150_step_session_stays_inside_a_16000_token_window() {
    const FILES: usize = 150;
    let state = Arc::new(Mutex::new(Model::default()));
    let server = FakeServer::with_handler(model(state.clone(), FILES)).unwrap();
    let dir = worktree(&server, FILES);
    let started = Instant::now();
    let out = toolshed(dir.path(), &["run", PROMPT, "--yes"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {}",
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    assert!(stdout.contains("All files are checked."), "{stdout}");
    let s = state.lock().unwrap();
    assert_eq!(s.steps, FILES + 1);
    assert!(s.violations.is_empty(), "requests over the window: {:?}", s.violations);
    assert!(s.missing.is_empty(), "{:?}", s.missing);
    assert!(s.summaries >= 1, "a 150-step session of 8 KB reads needs compaction");
    assert!(s.with_diff_stat > 0, "compacted requests list the files changed with their diff stat");
    // Every edit landed, on the file it was meant for.
    for n in 1..FILES {
        let body = std::fs::read_to_string(dir.path().join(format!("f{n:03}.txt"))).unwrap();
        assert!(body.starts_with(&format!("CHECKED-{n}\n")), "f{n:03}.txt was not edited");
    }
    let id = session_id(&stderr);
    let show = toolshed(dir.path(), &["session", "show", &id]);
    let shown = text(&show.stdout);
    assert_eq!(shown.matches("── compaction (auto").count(), s.summaries, "{}", &shown[..2000.min(shown.len())]);
    assert!(shown.contains("[tokens] in "), "usage shown per step");
    let export: Value = serde_json::from_slice(&toolshed(dir.path(), &["session", "export", &id]).stdout).unwrap();
    let compactions = export["compactions"].as_array().unwrap();
    assert_eq!(compactions.len(), s.summaries);
    assert!(compactions.iter().all(|c| c["type"] == "compaction"));
    // Nothing stored is lost: every call and its full output are still there.
    let outputs: Vec<&str> = export["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap())
        .filter(|p| p["type"] == "tool" && p["tool"] == "read")
        .map(|p| p["output"].as_str().unwrap())
        .collect();
    assert_eq!(outputs.len(), FILES);
    assert!(outputs.iter().all(|o| o.len() > 8_000), "stored outputs are whole");
    let prune_lines = stderr.matches("old tool outputs dropped").count();
    eprintln!(
        "150-step session: {} model steps ({} prompt tokens), {} compactions ({} summary tokens in, {:.1}% more, {} out), {} prunings, largest request {} of {WINDOW} tokens, {:.1} s",
        s.steps,
        s.step_input,
        s.summaries,
        s.summary_input,
        100.0 * s.summary_input as f64 / s.step_input as f64,
        s.summary_output,
        prune_lines,
        s.largest,
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn an_overflow_the_estimate_missed_compacts_and_retries_once() {
    const FILES: usize = 10;
    let state = Arc::new(Mutex::new(Model { refuse_once: vec![6], ..Model::default() }));
    let server = FakeServer::with_handler(model(state.clone(), FILES)).unwrap();
    let dir = worktree(&server, FILES);
    let out = toolshed(dir.path(), &["run", PROMPT, "--yes"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    {
        let s = state.lock().unwrap();
        assert_eq!((s.refused, s.summaries, s.steps), (1, 1, FILES + 1));
    }
    let id = session_id(&stderr);
    let export: Value = serde_json::from_slice(&toolshed(dir.path(), &["session", "export", &id]).stdout).unwrap();
    assert_eq!(export["compactions"][0]["trigger"], "overflow");

    // A provider that refuses whatever it is sent: one compaction, one retry, then the run
    // ends with the provider's reason (no loop).
    let state = Arc::new(Mutex::new(Model { refuse_from: Some(4), ..Model::default() }));
    let server = FakeServer::with_handler(model(state.clone(), FILES)).unwrap();
    let dir = worktree(&server, FILES);
    let out = toolshed(dir.path(), &["run", PROMPT, "--yes"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("maximum context length is 16000 tokens"), "{stderr}");
    let s = state.lock().unwrap();
    assert_eq!((s.refused, s.summaries, s.steps), (2, 1, 3));
}

#[test]
fn a_window_too_small_for_the_tools_alone_is_refused_with_what_to_do() {
    let state = Arc::new(Mutex::new(Model::default()));
    let server = FakeServer::with_handler(model(state.clone(), 2)).unwrap();
    let dir = worktree(&server, 2);
    let config = std::fs::read_to_string(dir.path().join("toolshed.toml")).unwrap();
    std::fs::write(dir.path().join("toolshed.toml"), config.replace("context = 16000", "context = 1000")).unwrap();
    let out = toolshed(dir.path(), &["run", PROMPT, "--yes"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for needle in [
        "does not fit the model's context window",
        "tool definitions alone take about",
        "[provider.NAME.models.ID] context",
    ] {
        assert!(stderr.contains(needle), "{needle}: {stderr}");
    }
    assert!(server.received().is_empty(), "nothing was sent");
}

#[test]
fn a_provider_whose_usage_cannot_be_right_is_kept_inside_the_window_by_the_estimate() {
    const FILES: usize = 60;
    let state = Arc::new(Mutex::new(Model { constant_usage: true, ..Model::default() }));
    let server = FakeServer::with_handler(model(state.clone(), FILES)).unwrap();
    let dir = worktree(&server, FILES);
    let out = toolshed(dir.path(), &["run", PROMPT, "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = state.lock().unwrap();
    assert_eq!(s.steps, FILES + 1);
    assert!(s.violations.is_empty(), "requests over the window: {:?}", s.violations);
    assert!(s.missing.is_empty(), "{:?}", s.missing);
    eprintln!("without usage: largest request {} of {WINDOW} tokens, {} compactions", s.largest, s.summaries);
}

fn wait_for(what: &str, child: &mut Child, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(child.try_wait().unwrap().is_none(), "toolshed ended before {what}");
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_kill_during_compaction_loses_nothing_and_the_session_continues() {
    const FILES: usize = 90;
    let state = Arc::new(Mutex::new(Model { summary_delay: Duration::from_secs(3), ..Model::default() }));
    let server = FakeServer::with_handler(model(state.clone(), FILES)).unwrap();
    let dir = worktree(&server, FILES);
    let mut child = command(dir.path(), &["run", PROMPT, "--yes", "--json"]).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut out);
        out
    });
    wait_for("a summary request", &mut child, || state.lock().unwrap().summaries > 0);
    let steps_before = state.lock().unwrap().steps;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let events = text(&reader.join().unwrap());
    let id = events
        .lines()
        .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(|v| v["type"] == "session_start"))
        .map(|v| v["session_id"].as_str().unwrap().to_string())
        .unwrap();
    let export =
        |dir: &Path| -> Value { serde_json::from_slice(&toolshed(dir, &["session", "export", &id]).stdout).unwrap() };
    let before = export(dir.path());
    assert_eq!(before["compactions"].as_array().unwrap().len(), 0, "the interrupted compaction left nothing");
    let stored_calls = |v: &Value| -> Vec<(String, String)> {
        v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["parts"].as_array().unwrap())
            .filter(|p| p["type"] == "tool")
            .map(|p| (p["call_id"].as_str().unwrap().to_string(), p["output"].to_string()))
            .collect()
    };
    let calls_before = stored_calls(&before);
    assert_eq!(calls_before.len(), 2 * steps_before, "every finished call is stored");
    state.lock().unwrap().summary_delay = Duration::ZERO;
    let out = toolshed(dir.path(), &["run", "Go on.", "--yes", "--session", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = export(dir.path());
    let calls_after = stored_calls(&after);
    assert_eq!(&calls_after[..calls_before.len()], &calls_before[..], "what was stored is unchanged");
    assert!(!after["compactions"].as_array().unwrap().is_empty());
    let s = state.lock().unwrap();
    assert_eq!(s.steps, FILES + 1, "the session went on to the end");
    assert!(s.violations.is_empty(), "{:?}", s.violations);
    for n in 1..FILES {
        let body = std::fs::read_to_string(dir.path().join(format!("f{n:03}.txt"))).unwrap();
        assert!(body.starts_with(&format!("CHECKED-{n}\n")), "f{n:03}.txt was not edited");
    }
}

#[test]
fn session_compact_summarises_on_demand_and_a_failed_one_changes_nothing() {
    const FILES: usize = 4;
    let state = Arc::new(Mutex::new(Model::default()));
    let server = FakeServer::with_handler(model(state.clone(), FILES)).unwrap();
    let dir = worktree(&server, FILES);
    let out = toolshed(dir.path(), &["run", PROMPT, "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stderr));
    assert_eq!(state.lock().unwrap().summaries, 0, "a short session is not compacted");
    let out = toolshed(dir.path(), &["session", "compact", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("compacted session {id}")), "{}", text(&out.stdout));
    assert_eq!(state.lock().unwrap().summaries, 1);
    let shown = text(&toolshed(dir.path(), &["session", "show", &id]).stdout);
    assert!(shown.contains("── compaction (manual"), "{shown}");
    assert!(shown.contains("Continue with the next file."), "the summary is shown");

    // A model that fails the summary request: exit 1, the reason, nothing stored.
    drop(server);
    let broken =
        FakeServer::start(vec![Reply::sse(chat::text("One more answer.")), Reply::sse(chat::text(""))]).unwrap();
    let config = std::fs::read_to_string(dir.path().join("toolshed.toml")).unwrap();
    let old_url = config.lines().find_map(|l| l.strip_prefix("base_url = ")).unwrap().to_string();
    std::fs::write(dir.path().join("toolshed.toml"), config.replace(&old_url, &format!("\"{}\"", broken.base_url())))
        .unwrap();
    // Everything is summarised: nothing to do until the session goes on.
    let out = toolshed(dir.path(), &["session", "compact", &id]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("there is nothing to summarise yet"), "{}", text(&out.stderr));
    let out = toolshed(dir.path(), &["run", "One more thing.", "--session", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let sent = broken.received()[0].body["messages"].to_string();
    assert!(sent.contains("Continue with the next file.") && sent.contains(PROMPT), "{sent}");
    let before = toolshed(dir.path(), &["session", "export", &id]).stdout;
    let out = toolshed(dir.path(), &["session", "compact", &id]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("compaction failed, the session is unchanged") && err.contains("no text"), "{err}");
    let after = toolshed(dir.path(), &["session", "export", &id]).stdout;
    let strip = |b: &[u8]| {
        let mut v: Value = serde_json::from_slice(b).unwrap();
        v["session"]["updated_at"] = Value::Null;
        v
    };
    assert_eq!(strip(&before), strip(&after));
    let _ = std::io::stderr().flush();
}

// ---------------------------------------------------------------------------------------------
// Adversarial review: other wire formats, tokenizers, step patterns and windows.
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Chat,
    Anthropic,
    Responses,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Pattern {
    /// Step n reads fNNN and edits the file before it (as above).
    SameStep,
    /// Step 2k-1 reads fk, step 2k edits it: every file takes two model steps.
    NextStep,
    /// Each step reads `k` files and edits the `k` read by the step before.
    Several(usize),
}

struct Script {
    wire: Wire,
    pattern: Pattern,
    files: usize,
    window: u64,
    /// Bytes a token the server counts.
    bytes_per_token: usize,
}

#[derive(Default)]
struct Seen {
    steps: usize,
    summaries: usize,
    violations: Vec<u64>,
    /// Requests a real provider would reject as malformed (role order, unpaired tool results).
    malformed: Vec<String>,
    missing: Vec<String>,
    largest: u64,
    done: bool,
}

fn role_of(m: &Value) -> &str {
    m["role"].as_str().unwrap_or("")
}

/// What a real provider would reject in `body`: Anthropic's alternation and tool_use /
/// tool_result pairing, Responses' call / output pairing, Chat's tool messages.
fn malformed(wire: Wire, body: &Value) -> Option<String> {
    match wire {
        Wire::Anthropic => {
            let msgs = body["messages"].as_array()?;
            if msgs.first().map(role_of) != Some("user") {
                return Some("first message is not a user message".into());
            }
            for (i, m) in msgs.iter().enumerate() {
                if i > 0 && role_of(&msgs[i - 1]) == role_of(m) {
                    return Some(format!("two {} messages in a row at {i}", role_of(m)));
                }
                let blocks: Vec<&Value> = m["content"].as_array().map(|a| a.iter().collect()).unwrap_or_default();
                let uses: Vec<&str> =
                    blocks.iter().filter(|b| b["type"] == "tool_use").filter_map(|b| b["id"].as_str()).collect();
                let results: Vec<&str> = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_result")
                    .filter_map(|b| b["tool_use_id"].as_str())
                    .collect();
                if !results.is_empty() {
                    // tool_result blocks first, each answering a tool_use of the message before.
                    let first_other = blocks.iter().position(|b| b["type"] != "tool_result").unwrap_or(blocks.len());
                    if blocks[..first_other].len() != results.len() {
                        return Some(format!("message {i}: text before tool_result blocks"));
                    }
                    let prev: Vec<&str> = msgs[i - 1]["content"]
                        .as_array()
                        .map(|a| {
                            a.iter().filter(|b| b["type"] == "tool_use").filter_map(|b| b["id"].as_str()).collect()
                        })
                        .unwrap_or_default();
                    if results.iter().any(|r| !prev.contains(r)) || prev.iter().any(|p| !results.contains(p)) {
                        return Some(format!("message {i}: tool_result ids {results:?} vs tool_use ids {prev:?}"));
                    }
                }
                if !uses.is_empty() {
                    let next = msgs.get(i + 1);
                    let answered = next
                        .and_then(|n| n["content"].as_array())
                        .map_or(0, |a| a.iter().filter(|b| b["type"] == "tool_result").count());
                    if answered != uses.len() {
                        return Some(format!("message {i}: {} tool_use blocks, {answered} results after", uses.len()));
                    }
                }
            }
            None
        }
        Wire::Responses => {
            let items = body["input"].as_array()?;
            let mut calls = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item["type"].as_str() {
                    Some("function_call" | "custom_tool_call") => calls.push(item["call_id"].as_str()?.to_string()),
                    Some("function_call_output" | "custom_tool_call_output") => {
                        let id = item["call_id"].as_str()?;
                        if !calls.iter().any(|c| c == id) {
                            return Some(format!("item {i}: output for {id} without its call"));
                        }
                    }
                    _ => {}
                }
            }
            for c in &calls {
                let answered = items.iter().any(|it| {
                    it["call_id"].as_str() == Some(c)
                        && matches!(it["type"].as_str(), Some("function_call_output" | "custom_tool_call_output"))
                });
                if !answered {
                    return Some(format!("call {c} has no output"));
                }
            }
            None
        }
        Wire::Chat => {
            let msgs = body["messages"].as_array()?;
            let mut open: Vec<String> = Vec::new();
            for (i, m) in msgs.iter().enumerate() {
                match role_of(m) {
                    "assistant" => {
                        if !open.is_empty() {
                            return Some(format!("message {i}: calls {open:?} unanswered"));
                        }
                        open = m["tool_calls"]
                            .as_array()
                            .map(|a| a.iter().filter_map(|c| c["id"].as_str().map(str::to_string)).collect())
                            .unwrap_or_default();
                    }
                    "tool" => {
                        let id = m["tool_call_id"].as_str().unwrap_or("");
                        if !open.iter().any(|c| c == id) {
                            return Some(format!("message {i}: tool result {id} without its call"));
                        }
                        open.retain(|c| c != id);
                    }
                    _ => {
                        if !open.is_empty() {
                            return Some(format!("message {i}: calls {open:?} unanswered"));
                        }
                    }
                }
            }
            None
        }
    }
}

fn with_prompt_tokens(wire: Wire, events: Vec<String>, tokens: u64) -> Vec<String> {
    match wire {
        Wire::Chat => chat::with_usage(events, tokens, 40),
        Wire::Anthropic => events
            .into_iter()
            .map(|e| e.replace("\"input_tokens\":100", &format!("\"input_tokens\":{tokens}")))
            .collect(),
        Wire::Responses => events
            .into_iter()
            .map(|e| e.replace("\"input_tokens\":100", &format!("\"input_tokens\":{tokens}")))
            .collect(),
    }
}

fn text_events(wire: Wire, text: &str) -> Vec<String> {
    use toolshed_llm::testing::{anthropic, responses};
    match wire {
        Wire::Chat => chat::text(text),
        Wire::Anthropic => anthropic::text(text),
        Wire::Responses => responses::text(text),
    }
}

fn call_events(wire: Wire, calls: &[(String, &str, String)]) -> Vec<String> {
    use toolshed_llm::testing::{anthropic, responses};
    match wire {
        Wire::Chat => {
            let c: Vec<(&str, &str, &str)> = calls.iter().map(|(i, n, a)| (i.as_str(), *n, a.as_str())).collect();
            chat::tool_calls(&c)
        }
        Wire::Anthropic => {
            let c: Vec<(&str, &str, &str)> = calls.iter().map(|(i, n, a)| (i.as_str(), *n, a.as_str())).collect();
            anthropic::tool_calls(&c)
        }
        Wire::Responses => {
            let c: Vec<(&str, &str, &str, bool)> =
                calls.iter().map(|(i, n, a)| (i.as_str(), *n, a.as_str(), false)).collect();
            responses::tool_calls(&c)
        }
    }
}

fn read_call(id: String, n: usize) -> (String, &'static str, String) {
    (id, "read", json!({"file_path": format!("f{n:03}.txt")}).to_string())
}

fn edit_call(id: String, n: usize) -> (String, &'static str, String) {
    let args = json!({"file_path": format!("f{n:03}.txt"), "old_string": format!("MARKER-{n}\n"), "new_string": format!("CHECKED-{n}\n")});
    (id, "edit", args.to_string())
}

/// The calls of model step `n` (from 1), or none when the work is done.
fn calls_for(pattern: Pattern, files: usize, n: usize) -> Vec<(String, &'static str, String)> {
    let mut calls = Vec::new();
    if n == 1 {
        let todos = json!({"todos": [{"content": TODO, "status": "in_progress"}]}).to_string();
        calls.push(("c1-todo".to_string(), "todo_write", todos));
    }
    match pattern {
        Pattern::SameStep => {
            if n <= files {
                calls.push(read_call(format!("c{n}-read"), n));
            }
            if (2..=files).contains(&n) {
                calls.push(edit_call(format!("c{n}-edit"), n - 1));
            }
        }
        Pattern::NextStep => {
            let file = n.div_ceil(2);
            if file <= files {
                if n % 2 == 1 {
                    calls.push(read_call(format!("c{n}-read"), file));
                } else {
                    calls.push(edit_call(format!("c{n}-edit"), file));
                }
            }
        }
        Pattern::Several(k) => {
            for j in 0..k {
                let f = (n - 1) * k + j + 1;
                if f <= files {
                    calls.push(read_call(format!("c{n}-read{j}"), f));
                }
                if n > 1 {
                    let e = (n - 2) * k + j + 1;
                    if e <= files {
                        calls.push(edit_call(format!("c{n}-edit{j}"), e));
                    }
                }
            }
        }
    }
    calls
}

fn scripted(script: Script, state: Arc<Mutex<Seen>>) -> impl Fn(&Received) -> Reply + Send + Sync + 'static {
    move |r: &Received| {
        let body = r.body.to_string();
        let tokens = body.len().div_ceil(script.bytes_per_token) as u64;
        let mut s = state.lock().unwrap();
        s.largest = s.largest.max(tokens);
        if tokens > script.window {
            s.violations.push(tokens);
            let status = 400;
            let err = match script.wire {
                Wire::Anthropic => {
                    json!({"type": "error", "error": {"type": "invalid_request_error", "message": format!("prompt is too long: {tokens} tokens > {} maximum", script.window)}})
                }
                _ => {
                    json!({"error": {"code": "context_length_exceeded", "message": format!("This model's maximum context length is {} tokens; the request has {tokens}", script.window)}})
                }
            };
            return Reply::error(status, err);
        }
        if let Some(why) = malformed(script.wire, &r.body) {
            let step = s.steps;
            s.malformed.push(format!("after step {step}: {why}"));
        }
        if !body.contains(PROMPT) {
            let step = s.steps;
            s.missing.push(format!("prompt missing from a request after step {step}"));
        }
        let has_tools = r.body.get("tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
        if !has_tools {
            s.summaries += 1;
            return Reply::sse(with_prompt_tokens(script.wire, text_events(script.wire, NOTES), tokens));
        }
        if s.steps > 0 && !body.contains(TODO) {
            let step = s.steps + 1;
            s.missing.push(format!("todo list missing from step {step}"));
        }
        s.steps += 1;
        let calls = calls_for(script.pattern, script.files, s.steps);
        let events = if calls.is_empty() {
            s.done = true;
            text_events(script.wire, "All files are checked.")
        } else {
            call_events(script.wire, &calls)
        };
        Reply::sse(with_prompt_tokens(script.wire, events, tokens))
    }
}

fn configure(dir: &Path, server: &FakeServer, wire: Wire, window: u64) {
    let kind = match wire {
        Wire::Chat => "openai-chat",
        Wire::Anthropic => "anthropic",
        Wire::Responses => "openai-responses",
    };
    std::fs::write(
        dir.join("toolshed.toml"),
        format!(
            "model = \"fake/small\"\n[provider.fake]\nkind = \"{kind}\"\nbase_url = \"{}\"\napi_key_env = \"FAKE_KEY\"\n[provider.fake.models.small]\ncontext = {window}\n[provider.fake.models.big]\ncontext = 64000\n[session]\nmax_steps = 400\n",
            server.base_url()
        ),
    )
    .unwrap();
}

/// Runs `script` to the end and checks what every acceptance line asks.
fn run_script(script: Script) -> (Arc<Mutex<Seen>>, tempfile::TempDir, String) {
    let (wire, files, window) = (script.wire, script.files, script.window);
    let state = Arc::new(Mutex::new(Seen::default()));
    let server = FakeServer::with_handler(scripted(script, state.clone())).unwrap();
    let dir = worktree(&server, files);
    configure(dir.path(), &server, wire, window);
    let out = command(dir.path(), &["run", PROMPT, "--yes"]).env("FAKE_KEY", "k").output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let s = state.lock().unwrap();
    assert!(s.malformed.is_empty(), "malformed requests: {:?}", &s.malformed[..s.malformed.len().min(5)]);
    assert!(s.violations.is_empty(), "requests over the window: {:?}", s.violations);
    assert!(s.missing.is_empty(), "{:?}", s.missing);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {}",
        &stderr[stderr.len().saturating_sub(3000)..]
    );
    assert!(s.done && stdout.contains("All files are checked."), "{stdout}");
    for n in 1..files {
        let body = std::fs::read_to_string(dir.path().join(format!("f{n:03}.txt"))).unwrap();
        assert!(body.starts_with(&format!("CHECKED-{n}\n")), "f{n:03}.txt was not edited");
    }
    eprintln!("{wire:?}: {} steps, {} summaries, largest {} of {window}", s.steps, s.summaries, s.largest);
    drop(s);
    let id = session_id(&stderr);
    (state, dir, id)
}

#[test]
fn anthropic_compaction_keeps_roles_alternating_and_tool_results_paired() {
    let (state, ..) = run_script(Script {
        wire: Wire::Anthropic,
        pattern: Pattern::SameStep,
        files: 60,
        window: WINDOW,
        bytes_per_token: 4,
    });
    assert!(state.lock().unwrap().summaries >= 1);
}

#[test]
fn responses_compaction_keeps_calls_and_outputs_paired() {
    let (state, ..) = run_script(Script {
        wire: Wire::Responses,
        pattern: Pattern::SameStep,
        files: 60,
        window: WINDOW,
        bytes_per_token: 4,
    });
    assert!(state.lock().unwrap().summaries >= 1);
}

#[test]
fn a_tokenizer_of_three_bytes_a_token_stays_inside_the_window() {
    run_script(Script { wire: Wire::Chat, pattern: Pattern::SameStep, files: 60, window: WINDOW, bytes_per_token: 3 });
}

#[test]
fn reading_in_one_step_and_editing_in_the_next() {
    let (state, ..) = run_script(Script {
        wire: Wire::Anthropic,
        pattern: Pattern::NextStep,
        files: 150,
        window: WINDOW,
        bytes_per_token: 4,
    });
    assert!(state.lock().unwrap().summaries >= 1);
}

#[test]
fn several_reads_and_edits_per_step() {
    run_script(Script {
        wire: Wire::Chat,
        pattern: Pattern::Several(3),
        files: 45,
        window: WINDOW,
        bytes_per_token: 4,
    });
}

/// A model that reads one file of 60 KB (more than the window's room once the tools are sent),
/// then answers.
#[test]
fn one_tool_output_larger_than_the_window() {
    let state = Arc::new(Mutex::new(Seen::default()));
    let st = state.clone();
    let server = FakeServer::with_handler(move |r: &Received| {
        let body = r.body.to_string();
        let tokens = body.len().div_ceil(4) as u64;
        let mut s = st.lock().unwrap();
        s.largest = s.largest.max(tokens);
        if tokens > WINDOW {
            s.violations.push(tokens);
            return Reply::error(
                400,
                json!({"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 16000 tokens"}}),
            );
        }
        if !body.contains(PROMPT) {
            s.missing.push("prompt missing".into());
        }
        let has_tools = r.body.get("tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
        if !has_tools {
            s.summaries += 1;
            return Reply::sse(chat::with_usage(chat::text(NOTES), tokens, 100));
        }
        s.steps += 1;
        let events = if s.steps == 1 {
            chat::tool_calls(&[("c1", "read", r#"{"file_path":"big.txt"}"#)])
        } else {
            chat::text("All files are checked.")
        };
        Reply::sse(chat::with_usage(events, tokens, 40))
    })
    .unwrap();
    let dir = worktree(&server, 1);
    let line = "0123456789 the quick brown fox jumps over the lazy dog, again and again and again.\n";
    std::fs::write(dir.path().join("big.txt"), line.repeat(60_000 / line.len())).unwrap();
    let out = toolshed(dir.path(), &["run", PROMPT, "--yes"]);
    let s = state.lock().unwrap();
    assert!(s.violations.is_empty(), "requests over the window: {:?}\n{}", s.violations, text(&out.stderr));
    assert!(s.missing.is_empty(), "{:?}", s.missing);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(s.steps, 2);
}

/// A session grown on a 64k model goes on with a 16k one.
#[test]
fn a_session_resumed_on_a_model_with_a_smaller_window() {
    const FILES: usize = 15;
    let state = Arc::new(Mutex::new(Seen::default()));
    let script =
        Script { wire: Wire::Chat, pattern: Pattern::SameStep, files: FILES, window: 64_000, bytes_per_token: 4 };
    let inner = scripted(script, state.clone());
    let violations = Arc::new(Mutex::new(Vec::new()));
    let v = violations.clone();
    let server = FakeServer::with_handler(move |r: &Received| {
        let tokens = r.body.to_string().len().div_ceil(4) as u64;
        if r.body["model"] == "small" && tokens > WINDOW {
            v.lock().unwrap().push(tokens);
            return Reply::error(
                400,
                json!({"error": {"code": "context_length_exceeded", "message": "This model's maximum context length is 16000 tokens"}}),
            );
        }
        inner(r)
    })
    .unwrap();
    let dir = worktree(&server, FILES);
    configure(dir.path(), &server, Wire::Chat, WINDOW);
    let out =
        command(dir.path(), &["run", PROMPT, "--yes", "--model", "fake/big"]).env("FAKE_KEY", "k").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(state.lock().unwrap().summaries, 0, "fits the big window");
    let id = session_id(&text(&out.stderr));
    let out = command(
        dir.path(),
        &["run", "Now summarise what you checked.", "--yes", "--session", &id, "--model", "fake/small"],
    )
    .env("FAKE_KEY", "k")
    .output()
    .unwrap();
    let stderr = text(&out.stderr);
    assert!(
        violations.lock().unwrap().is_empty(),
        "requests over the small window: {:?}\n{stderr}",
        violations.lock().unwrap()
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("old tool outputs dropped"), "the smaller window prunes: {stderr}");
}

/// Swaps the session's provider for `server`.
fn point_at(dir: &Path, server: &FakeServer) {
    let config = std::fs::read_to_string(dir.join("toolshed.toml")).unwrap();
    let old_url = config.lines().find_map(|l| l.strip_prefix("base_url = ")).unwrap().to_string();
    std::fs::write(dir.join("toolshed.toml"), config.replace(&old_url, &format!("\"{}\"", server.base_url()))).unwrap();
}

fn export_without_time(dir: &Path, id: &str) -> Value {
    let mut v: Value = serde_json::from_slice(&toolshed(dir, &["session", "export", id]).stdout).unwrap();
    v["session"]["updated_at"] = Value::Null;
    v
}

#[test]
fn session_compact_refuses_odd_summary_answers_and_odd_targets() {
    const FILES: usize = 4;
    let state = Arc::new(Mutex::new(Model::default()));
    let server = FakeServer::with_handler(model(state.clone(), FILES)).unwrap();
    let dir = worktree(&server, FILES);
    let out = toolshed(dir.path(), &["run", PROMPT, "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let id = session_id(&text(&out.stderr));
    let before = export_without_time(dir.path(), &id);

    // The summary model calls a tool instead of answering.
    let odd =
        FakeServer::start(vec![Reply::sse(chat::tool_calls(&[("x", "read", r#"{"file_path":"f001.txt"}"#)]))]).unwrap();
    point_at(dir.path(), &odd);
    let out = toolshed(dir.path(), &["session", "compact", &id]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("compaction failed, the session is unchanged"), "{err}");
    assert_eq!(export_without_time(dir.path(), &id), before);

    // The summary stops at its token limit.
    let mut cut = chat::text("## Task\n- part of the notes");
    for e in &mut cut {
        *e = e.replace("\"finish_reason\":\"stop\"", "\"finish_reason\":\"length\"");
    }
    let cut_server = FakeServer::start(vec![Reply::sse(cut)]).unwrap();
    point_at(dir.path(), &cut_server);
    let out = toolshed(dir.path(), &["session", "compact", &id]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("compaction failed, the session is unchanged"), "{err}");
    assert_eq!(export_without_time(dir.path(), &id), before);

    // A provider error.
    let failing = FakeServer::start(vec![Reply::error(400, json!({"error": {"message": "bad request"}}))]).unwrap();
    point_at(dir.path(), &failing);
    let out = toolshed(dir.path(), &["session", "compact", &id]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("compaction failed, the session is unchanged"), "{err}");
    assert_eq!(export_without_time(dir.path(), &id), before);

    // An unknown session: a usage error.
    let out = toolshed(dir.path(), &["session", "compact", "ses_nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));

    // A session of one message (its only request failed): nothing to summarise, and nothing
    // is asked of the model.
    let refusing = FakeServer::start(vec![Reply::error(400, json!({"error": {"message": "bad request"}}))]).unwrap();
    point_at(dir.path(), &refusing);
    let out = toolshed(dir.path(), &["run", "hi"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let short = session_id(&text(&out.stderr));
    let out = toolshed(dir.path(), &["session", "compact", &short]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(refusing.received().len(), 1, "no summary request for a session without an answer: {err}");
    assert!(err.contains("nothing to summarise"), "{err}");
}

/// An Anthropic or Responses provider that refuses one step as too long (its own error
/// shape): one compaction, the step again, well-formed requests, the session goes on.
#[test]
fn overflow_in_the_anthropic_and_responses_formats() {
    for wire in [Wire::Anthropic, Wire::Responses] {
        const FILES: usize = 10;
        let state = Arc::new(Mutex::new(Seen::default()));
        let inner = scripted(
            Script { wire, pattern: Pattern::SameStep, files: FILES, window: WINDOW, bytes_per_token: 4 },
            state.clone(),
        );
        let tool_requests = Arc::new(Mutex::new(0usize));
        let t = tool_requests.clone();
        let server = FakeServer::with_handler(move |r: &Received| {
            if r.body.get("tools").and_then(Value::as_array).is_some_and(|t| !t.is_empty()) {
                let mut n = t.lock().unwrap();
                *n += 1;
                if *n == 6 {
                    return match wire {
                        Wire::Anthropic => Reply::error(
                            400,
                            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 17000 tokens > 16000 maximum"}}),
                        ),
                        _ => Reply::error(
                            400,
                            json!({"error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}),
                        ),
                    };
                }
            }
            inner(r)
        })
        .unwrap();
        let dir = worktree(&server, FILES);
        configure(dir.path(), &server, wire, WINDOW);
        let out = command(dir.path(), &["run", PROMPT, "--yes"]).env("FAKE_KEY", "k").output().unwrap();
        let stderr = text(&out.stderr);
        let s = state.lock().unwrap();
        assert!(s.malformed.is_empty(), "{wire:?}: {:?}", s.malformed);
        assert_eq!(out.status.code(), Some(0), "{wire:?}: {stderr}");
        assert_eq!((s.summaries, s.steps), (1, FILES + 1), "{wire:?}");
        let id = session_id(&stderr);
        let export: Value = serde_json::from_slice(&toolshed(dir.path(), &["session", "export", &id]).stdout).unwrap();
        assert_eq!(export["compactions"][0]["trigger"], "overflow", "{wire:?}");
    }
}

/// `kill -9` just after a summary answer arrives (while the compaction is being stored), at a
/// few different moments, then `--session ID`: what was stored stays, the session goes on.
#[test]
fn kill_right_after_the_summary_arrives() {
    // Enough files that each of the four runs still meets a summary (the window is filled anew
    // in each; 70 left the last run none once the tool list shrank by a few bytes).
    const FILES: usize = 100;
    let state = Arc::new(Mutex::new(Model::default()));
    let server = FakeServer::with_handler(model(state.clone(), FILES)).unwrap();
    let dir = worktree(&server, FILES);
    let mut id: Option<String> = None;
    let stored_calls = |v: &Value| -> Vec<(String, String)> {
        v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["parts"].as_array().unwrap())
            .filter(|p| p["type"] == "tool" && p["state"] == "completed")
            .map(|p| (p["call_id"].as_str().unwrap().to_string(), p["output"].to_string()))
            .collect()
    };
    let mut previous: Vec<(String, String)> = Vec::new();
    for pause_ms in [0u64, 2, 10, 30] {
        let summaries = state.lock().unwrap().summaries;
        let mut args = vec!["run", "Go on.", "--yes", "--json"];
        if id.is_none() {
            args[1] = PROMPT;
        }
        let session = id.clone().unwrap_or_default();
        if id.is_some() {
            args.extend(["--session", &session]);
        }
        let mut child = command(dir.path(), &args).spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stdout, &mut out);
            out
        });
        wait_for("a summary answer", &mut child, || state.lock().unwrap().summaries > summaries);
        std::thread::sleep(Duration::from_millis(pause_ms));
        child.kill().unwrap();
        child.wait().unwrap();
        let events = text(&reader.join().unwrap());
        if id.is_none() {
            id = events
                .lines()
                .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(|v| v["type"] == "session_start"))
                .map(|v| v["session_id"].as_str().unwrap().to_string());
        }
        let export = toolshed(dir.path(), &["session", "export", id.as_ref().unwrap()]);
        assert_eq!(export.status.code(), Some(0), "{}", text(&export.stderr));
        let v: Value = serde_json::from_slice(&export.stdout).unwrap();
        let calls = stored_calls(&v);
        assert!(calls.len() >= previous.len() && calls[..previous.len()] == previous[..], "stored calls changed");
        previous = calls;
    }
    let id = id.unwrap();
    let out = toolshed(dir.path(), &["run", "Go on.", "--yes", "--session", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = state.lock().unwrap();
    assert!(s.violations.is_empty(), "{:?}", s.violations);
    assert!(s.missing.is_empty(), "{:?}", s.missing);
    let shown = text(&toolshed(dir.path(), &["session", "show", &id]).stdout);
    assert!(shown.contains("── compaction (auto"), "compactions stored after all");
}

/// The review's request checker catches what it should (so its passing tests mean something).
#[test]
fn the_request_checker_catches_malformed_requests() {
    let bad_anthropic = json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r"}]},
    ]});
    assert!(malformed(Wire::Anthropic, &bad_anthropic).is_some());
    let unpaired = json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "read", "input": {}}]},
        {"role": "user", "content": [{"type": "text", "text": "block"}, {"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
    ]});
    assert!(malformed(Wire::Anthropic, &unpaired).is_some());
    let orphan = json!({"input": [{"type": "function_call_output", "call_id": "z", "output": "r"}]});
    assert!(malformed(Wire::Responses, &orphan).is_some());
    let fine = json!({"input": [{"type": "function_call", "call_id": "z", "name": "read", "arguments": "{}"}, {"type": "function_call_output", "call_id": "z", "output": "r"}]});
    assert!(malformed(Wire::Responses, &fine).is_none());
}
