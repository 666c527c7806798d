//! What `run` and `chat` share: choosing the model, building the agent runtime over the
//! session database, and printing its events (text to stdout, tool calls to stderr, or JSON
//! Lines with `--json`).

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use toolshed_agent::{Event, EventSink, Runtime, Store};
use toolshed_core::paths::FileLock;
use toolshed_core::permission::Approver;
use toolshed_llm::provider::{self, ModelRef};

use crate::CliError;
use crate::workspace::Workspace;

/// What to tell someone who has no model set up.
pub const NO_MODEL: &str = "no model is configured. Pass --model PROVIDER/MODEL, or set `model = \"PROVIDER/MODEL\"` in toolshed.toml (or ~/.config/toolshed/config.toml). Then make the provider reachable: for openai/... set OPENAI_API_KEY, for anthropic/... set ANTHROPIC_API_KEY, or for a local OpenAI-compatible server (llama.cpp, vLLM, Ollama, LM Studio) add\n\n  [provider.local]\n  kind = \"openai-chat\"\n  base_url = \"http://127.0.0.1:8080/v1\"\n\nto toolshed.toml and use --model local/MODEL";

/// [`NO_MODEL`], or, when the worktree's toolshed.toml is not applied as it is on disk, that.
pub fn no_model(ws: &Workspace) -> CliError {
    match ws.unapplied_project_hint() {
        Some(hint) => CliError::usage(format!(
            "no model is configured in the settings that apply: {hint}; or pass --model PROVIDER/MODEL"
        )),
        None => CliError::usage(NO_MODEL),
    }
}

/// The model to run: the flag, else the agent's own, else the config's `model`. Checks that its
/// provider is configured (key set, base URL known); failures are configuration errors.
pub fn choose_model(ws: &Workspace, agent: &str, flag: Option<&str>) -> Result<String, CliError> {
    let model = flag
        .map(str::to_string)
        .or_else(|| ws.agents.get(agent).and_then(|a| a.model.clone()))
        .or_else(|| ws.config.model.clone())
        .ok_or_else(|| no_model(ws))?;
    check_model(ws, &model)?;
    Ok(model)
}

/// Checks that `model`'s provider can be reached as configured.
pub fn check_model(ws: &Workspace, model: &str) -> Result<(), CliError> {
    check_model_in(&ws.config, model)
}

/// Checks that `model`'s provider can be reached as `config` sets it up.
pub fn check_model_in(config: &toolshed_core::config::Config, model: &str) -> Result<(), CliError> {
    let parsed = ModelRef::parse(model).map_err(CliError::usage)?;
    provider::resolve(config, &parsed, &provider::process_env).map_err(CliError::usage)?;
    Ok(())
}

/// A wait for people: "5 s", "0.5 s".
fn seconds(ms: u64) -> String {
    if ms >= 10_000 || ms.is_multiple_of(1000) {
        format!("{} s", ms.div_ceil(1000))
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// A session this process is running. While it is held, `--session ID` in another toolshed
/// process is refused, so two runs never interleave their messages in one session. The lock is
/// an advisory file lock: the kernel releases it when its process ends, so the lock of a killed
/// process is free to take.
pub struct SessionLock {
    _held: FileLock,
}

impl SessionLock {
    /// Takes the lock of session `id` in `store`'s directory.
    pub fn acquire(store: &Store, id: &str) -> Result<SessionLock, CliError> {
        SessionLock::acquire_then(store, id, "continue the session")
    }

    /// [`SessionLock::acquire`]; a refusal says to wait, then do `next`.
    pub fn acquire_then(store: &Store, id: &str, next: &str) -> Result<SessionLock, CliError> {
        store.lock_session(id, next).map(|held| SessionLock { _held: held }).map_err(CliError::failure)
    }
}

/// The session a `run` or `chat` works in, locked for this process: stored session `resume`
/// (locked before it is touched) or a new one as `agent` on `model`.
pub fn open_session(
    rt: &Runtime,
    resume: Option<&str>,
    agent: &str,
    model: &str,
) -> Result<(Arc<toolshed_agent::LiveSession>, SessionLock), CliError> {
    let early_lock = match resume {
        Some(id) => Some(SessionLock::acquire(rt.store(), id)?),
        None => None,
    };
    let session = match resume {
        Some(id) => rt.resume_session(id, Some(model), Some(agent)),
        None => rt.create_session(agent, model, None),
    }
    .map_err(CliError::failure)?;
    let lock = match early_lock {
        Some(lock) => lock,
        None => SessionLock::acquire(rt.store(), &session.id)?,
    };
    Ok((session, lock))
}

/// The whole id of the stored session `given` names (its id, or the start of one, as a person
/// copies it from `session list`); a usage error when none or several match.
pub fn resolve_session(given: &str) -> Result<String, CliError> {
    let path = Store::default_path(&toolshed_core::paths::data_dir());
    if !path.exists() {
        return Err(CliError::usage(toolshed_agent::store::StoreError::NoSession(given.to_string())));
    }
    let store = Store::open(path).map_err(CliError::failure)?;
    store.resolve_id(given).map_err(|e| match e {
        e @ (toolshed_agent::store::StoreError::NoSession(_) | toolshed_agent::store::StoreError::Ambiguous { .. }) => {
            CliError::usage(e)
        }
        other => CliError::failure(other),
    })
}

pub fn open_store() -> Result<Arc<Store>, CliError> {
    let path = Store::default_path(&toolshed_core::paths::data_dir());
    Store::open(path).map(Arc::new).map_err(CliError::failure)
}

/// The most recently updated session (not a sub-agent's, not one without a message: a chat
/// opened and left at once) that worked in this worktree, for `--continue`.
pub fn latest_session(ws: &Workspace) -> Result<String, CliError> {
    let path = Store::default_path(&toolshed_core::paths::data_dir());
    let sessions = if path.exists() {
        Store::open(&path).and_then(|store| store.list_sessions()).map_err(CliError::failure)?
    } else {
        Vec::new()
    };
    let root = ws.root.display().to_string();
    let found = sessions.into_iter().find(|s| s.parent_id.is_none() && s.root == root && s.messages > 0);
    found.map(|s| s.id).ok_or_else(|| {
        CliError::usage(format!(
            "--continue: no session has worked in {root} yet; start one with toolshed run \"...\" (`toolshed session list --all` shows the sessions of every worktree)"
        ))
    })
}

/// Refuses to go on with a stored session here when it worked in another worktree that still
/// exists: its conversation is about those files, and its tools would act on these. A session
/// whose worktree is gone (moved, renamed) goes on here, with a warning.
pub fn in_this_worktree(ws: &Workspace, info: &toolshed_agent::store::SessionInfo) -> Result<(), CliError> {
    use toolshed_agent::store::SessionPlace;
    let here = ws.root.display();
    match info.place(&ws.root) {
        SessionPlace::Here => Ok(()),
        SessionPlace::Elsewhere(root) => Err(CliError::usage(format!(
            "session {} worked in {root}, not in {here}: run toolshed there (or pass --root {root}) to go on with it",
            info.id
        ))),
        SessionPlace::Gone(root) => {
            eprintln!(
                "toolshed: session {} worked in {root}, which no longer exists; going on with it in {here}",
                info.id
            );
            Ok(())
        }
    }
}

/// The store, agent and model a `run` or `chat` uses: a stored session's unless the flags say
/// otherwise, else the flags' or the config's. A new session's model is checked before the
/// database is touched, so a missing key costs nothing.
pub fn session_target(
    ws: &Workspace,
    session: Option<&str>,
    agent: Option<&str>,
    model: Option<&str>,
) -> Result<(Arc<Store>, String, String), CliError> {
    match session {
        Some(id) => {
            let store = open_store()?;
            let info = store.session(id).map_err(CliError::usage)?;
            in_this_worktree(ws, &info)?;
            let agent = match agent {
                Some(a) => ws.primary_agent(Some(a))?,
                None => info.agent.clone(),
            };
            let model = model.map(str::to_string).or(info.model.clone()).ok_or_else(|| no_model(ws))?;
            check_model(ws, &model)?;
            Ok((store, agent, model))
        }
        None => {
            let agent = ws.primary_agent(agent)?;
            let model = choose_model(ws, &agent, model)?;
            Ok((open_store()?, agent, model))
        }
    }
}

/// The agent runtime for this worktree, with the MCP servers' tools attached (keep the returned
/// connections alive while the runtime runs). Call it outside any async runtime.
pub fn runtime(
    ws: &Workspace,
    store: Arc<Store>,
    approver: Arc<dyn Approver>,
    events: EventSink,
) -> Result<(Arc<Runtime>, Option<crate::mcp::Attached>), CliError> {
    let mut registry = ws.registry();
    let mcp = crate::mcp::attach(ws, &mut registry, crate::mcp::Scope::All)?;
    Ok((ws.agent_runtime(registry, store, approver, events), mcp))
}

/// Prints events for a person: the main session's text on stdout as it streams; each tool call
/// on stderr as one line (sub-agents' indented), with a spinner while a call runs long.
pub struct Printer {
    main: Mutex<Option<String>>,
    state: Mutex<PrintState>,
    terminal: bool,
    json: bool,
}

#[derive(Default)]
struct PrintState {
    text_open: bool,
    spinner_shown: bool,
    running: HashMap<String, (String, Instant)>,
    /// The main session asked the model, and nothing of its answer has come yet: since then.
    waiting: Option<Instant>,
    frame: usize,
    /// A question is on screen since then: nothing else is written until it is answered.
    asking: Option<Instant>,
    /// What arrived meanwhile, in order (`true`: standard output).
    held: Vec<(bool, String)>,
}

impl Printer {
    /// A printer; `json` prints every event as one JSON line on stdout instead.
    pub fn new(json: bool) -> Arc<Printer> {
        Arc::new(Printer {
            main: Mutex::new(None),
            state: Mutex::default(),
            terminal: std::io::stderr().is_terminal(),
            json,
        })
    }

    /// The events sink that prints through this printer.
    pub fn sink(self: &Arc<Self>) -> EventSink {
        let me = self.clone();
        Arc::new(move |e: &Event| me.print(e))
    }

    /// Starts the spinner ticker (on a terminal only).
    pub fn start_spinner(self: &Arc<Self>) {
        if !self.terminal || self.json {
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(120)).await;
                me.tick();
            }
        });
    }

    /// A question is about to be written: the spinner goes, streamed text ends its line, and
    /// nothing else is written until [`Printer::end_question`].
    pub fn begin_question(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        close_lines(&mut s);
        s.asking = Some(Instant::now());
    }

    /// The question was answered: what arrived meanwhile is written, and the time it waited
    /// is not counted in the running calls' time.
    pub fn end_question(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(since) = s.asking.take() else { return };
        let waited = since.elapsed();
        for (_, start) in s.running.values_mut() {
            *start += waited;
        }
        for (stdout, text) in std::mem::take(&mut s.held) {
            if stdout {
                print!("{text}");
                let _ = std::io::stdout().flush();
                s.text_open = !text.ends_with('\n');
            } else {
                if s.text_open {
                    println!();
                    s.text_open = false;
                }
                eprintln!("{text}");
            }
        }
    }

    fn tick(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.asking.is_some() {
            return;
        }
        // A running call, else the model's first word awaited (on a line of its own).
        let (what, since) = match s.running.values().min_by_key(|(_, t)| *t).cloned() {
            Some(running) => running,
            None => match s.waiting {
                Some(since) if !s.text_open => ("waiting for the model".to_string(), since),
                _ => return,
            },
        };
        if since.elapsed() < Duration::from_secs(1) {
            return;
        }
        const FRAMES: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
        s.frame = (s.frame + 1) % FRAMES.len();
        let more = if s.running.len() > 1 { format!(" (+{} more)", s.running.len() - 1) } else { String::new() };
        eprint!("\r\x1b[2K{} {what} {}s{more}", FRAMES[s.frame], since.elapsed().as_secs());
        s.spinner_shown = true;
    }

    /// Ends a line of streamed text that is still open (an answer cut off by an interrupt or
    /// an error), so what is written next starts on a line of its own.
    pub fn end_text(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.waiting = None;
        s.running.clear();
        close_lines(&mut s);
    }

    fn is_main(&self, session: &str) -> bool {
        let mut main = self.main.lock().unwrap_or_else(PoisonError::into_inner);
        main.get_or_insert_with(|| session.to_string()) == session
    }

    /// Writes a line to stderr, clearing the spinner and ending streamed text first.
    fn line(&self, s: &mut PrintState, text: &str) {
        if s.asking.is_some() {
            let text = if self.terminal { toolshed_core::terminal::visible(text) } else { text.into() };
            s.held.push((false, text.into_owned()));
            return;
        }
        if s.spinner_shown {
            eprint!("\r\x1b[2K");
            s.spinner_shown = false;
        }
        if s.text_open {
            println!();
            s.text_open = false;
        }
        // Tool inputs and outputs come from the model and the tools: shown, never obeyed.
        let text = if self.terminal { toolshed_core::terminal::visible(text) } else { text.into() };
        eprintln!("{text}");
    }

    fn print(&self, event: &Event) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                println!("{line}");
            }
            return;
        }
        let main = self.is_main(event.session_id());
        let indent = if main { "" } else { "    " };
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if main {
            match event {
                Event::StepStart { .. } => s.waiting = Some(Instant::now()),
                Event::Text { .. }
                | Event::Reasoning { .. }
                | Event::ToolCall { .. }
                | Event::StepFinish { .. }
                | Event::Finish { .. } => {
                    s.waiting = None;
                }
                _ => {}
            }
        }
        match event {
            Event::Text { text, .. } if main && s.asking.is_some() => {
                let text = if crate::stdout_is_terminal() { toolshed_core::terminal::visible(text) } else { text.into() };
                s.held.push((true, text.into_owned()));
            }
            Event::Text { text, .. } if main => {
                if s.spinner_shown {
                    eprint!("\r\x1b[2K");
                    s.spinner_shown = false;
                }
                if crate::stdout_is_terminal() {
                    print!("{}", toolshed_core::terminal::visible(text));
                } else {
                    print!("{text}");
                }
                let _ = std::io::stdout().flush();
                s.text_open = !text.ends_with('\n');
            }
            Event::ToolCall { call_id, tool, input, .. } => {
                s.running.insert(call_id.clone(), (tool.clone(), Instant::now()));
                self.line(&mut s, &format!("{indent}→ {tool} {}", one_line(input, 100)));
            }
            Event::ToolResult { call_id, tool, is_error, output, title, duration_ms, metadata, .. } => {
                s.running.remove(call_id);
                // A command that failed is no error of the tool's (the model reads its exit
                // code), but a person reads ✓ as "it worked".
                let failed = metadata.get("exit_code").and_then(serde_json::Value::as_i64).filter(|c| *c != 0);
                let line = if *is_error {
                    format!("{indent}  ✗ {tool}: {}", one_line(&failure_for_people(tool, output), 160))
                } else if let Some(code) = failed {
                    let what = title.clone().unwrap_or_else(|| first_line(output));
                    format!("{indent}  ✗ {tool} {} (exit {code}, {duration_ms} ms)", one_line(&what, 100))
                } else {
                    let what = title.clone().unwrap_or_else(|| first_line(output));
                    format!("{indent}  ✓ {tool} {} ({duration_ms} ms)", one_line(&what, 100))
                };
                self.line(&mut s, &line);
            }
            Event::AgentSwitch { from, to, .. } => self.line(&mut s, &format!("[agent: {from} → {to}]")),
            Event::Notice { message, .. } => self.line(&mut s, &format!("[{message}]")),
            Event::Retry { reason, wait_ms, attempt, .. } => self.line(
                &mut s,
                &format!("{indent}[{reason}, retrying in {} (attempt {attempt})]", seconds(*wait_ms)),
            ),
            Event::StepFinish { stop, .. } if main && stop == "maxtokens" => self.line(
                &mut s,
                "[the model hit its output-token limit: this response is cut off, and a tool call in it may be incomplete]",
            ),
            Event::Pruned { tokens_dropped, tokens_before, .. } if main => self.line(
                &mut s,
                &format!(
                    "[context ~{} tokens: old tool outputs dropped from what is sent (~{} tokens); the session keeps them]",
                    thousands(*tokens_before),
                    thousands(*tokens_dropped)
                ),
            ),
            Event::Compaction { trigger, summarised, tokens_before, tokens_after, .. } => self.line(
                &mut s,
                &format!(
                    "{indent}[compaction ({trigger}): {summarised} messages summarised, next request ~{} → ~{} tokens; `toolshed session show` lists it, the messages stay stored]",
                    thousands(*tokens_before),
                    thousands(*tokens_after)
                ),
            ),
            Event::SessionStart { agent, parent_id: Some(_), .. } => {
                self.line(&mut s, &format!("{indent}[sub-agent {agent} started]"));
            }
            Event::Finish { .. } if main && s.text_open => {
                println!();
                s.text_open = false;
            }
            _ => {}
        }
    }
}

/// Clears the spinner's line and ends a line of streamed text, so what comes next starts on a
/// line of its own.
fn close_lines(s: &mut PrintState) {
    if s.spinner_shown {
        eprint!("\r\x1b[2K");
        s.spinner_shown = false;
    }
    if s.text_open {
        println!();
        let _ = std::io::stdout().flush();
        s.text_open = false;
    }
}

/// `12345` as `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A failed call's result in words for people (what the model is told to do next left out);
/// for a call that was interrupted or timed out, that, not what its command printed first.
fn failure_for_people(tool: &str, output: &str) -> String {
    if output.trim_end().ends_with(&format!("The {tool} call was interrupted by the user.")) {
        return "interrupted".to_string();
    }
    let said = toolshed_tui::people::failure(tool, output);
    match said.lines().last() {
        Some(last) if last.starts_with("(timed out") => last.trim_matches(['(', ')']).to_string(),
        _ => said,
    }
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_string()
}

/// `text` on one line, cut to `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_session_is_run_by_one_process_at_a_time_and_a_dead_owner_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("sessions.db")).unwrap();
        let held = SessionLock::acquire(&store, "ses_1").unwrap();
        let err = SessionLock::acquire(&store, "ses_1").err().unwrap();
        assert!(format!("{err:?}").contains("is in use by another toolshed process"), "{err:?}");
        assert!(SessionLock::acquire(&store, "ses_2").is_ok());
        drop(held);
        let again = SessionLock::acquire(&store, "ses_1").unwrap();
        drop(again);
        // A lock file left by a process that no longer exists (it names a pid, holds no lock).
        std::fs::write(dir.path().join("locks/ses_1.lock"), "4294967").unwrap();
        assert!(SessionLock::acquire(&store, "ses_1").is_ok());
    }
}
