//! `toolshed acp`: toolshed as an Agent Client Protocol agent over stdio, for editors (Zed,
//! JetBrains, Neovim plugins). Built on the official `agent-client-protocol` crate and on the
//! same runtime builder as `run` and `chat`: a session's worktree is its `cwd`, its rules,
//! tools, store, snapshots and locks are the CLI's, and the client's MCP servers are attached
//! as `[mcp.NAME]` entries would be (beside the user's own, never replacing one: see
//! `attach_client_mcp`). A prompt's images go to the model with its text.
//!
//! The agent's events become `session/update`s ([`updates`]): answer and reasoning chunks, tool
//! calls with their exact command or path, kind, locations and, when done, a diff with the
//! whole file before and after; the plan from `todo_write`; usage after each step; the mode
//! when the agent switches. A permission ask becomes `session/request_permission` with all four
//! options; "reject always" holds for the rest of the session.
//!
//! A client that offers both `fs.readTextFile` and `fs.writeTextFile` gets the file tools'
//! text through `fs/read_text_file` / `fs/write_text_file` ([`EditorFiles`]): the model sees
//! unsaved buffers and edits land in the editor's undo history, while which files a call may
//! touch, and the diff, stay toolshed's (see `toolshed_tools::fs::buffers`).
//!
//! Standard output carries protocol frames only: nothing else in the process writes to it
//! (warnings go to standard error).

pub mod updates;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommand, AvailableCommandsUpdate, CancelNotification, ContentBlock, ContentChunk,
    CurrentModeUpdate, EmbeddedResourceResource, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse,
    PermissionOption, PermissionOptionKind, PromptCapabilities, PromptRequest, PromptResponse, ReadTextFileRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionMode, SessionModeState, SessionNotification,
    SessionUpdate, SetSessionModeRequest, SetSessionModeResponse, StopReason, ToolCallUpdate, ToolCallUpdateFields,
    UsageUpdate, WriteTextFileRequest,
};
use agent_client_protocol::{Agent, Client, Error, ErrorCode};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolshed_agent::{AgentError, Event, EventSink, LiveSession, Runtime, Store, Trigger};
use toolshed_core::config::{McpConfig, Override};
use toolshed_core::file_access::FileAccess;
use toolshed_core::permission::{ApprovalRequest, Approver, Reply};
use toolshed_core::tool::BoxFuture;
use toolshed_llm::{Image, Part};
use toolshed_runtime::{Scope, Workspace};

use crate::updates::{CallIds, Journal, Tracker};

/// How `toolshed acp` was started.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `--config FILE`, read instead of the user's config.
    pub config_file: Option<PathBuf>,
    /// `--config KEY=VALUE` overrides, applied after the files.
    pub overrides: Vec<Override>,
    /// The agent sessions start as (`--agent`), else the config's default.
    pub agent: Option<String>,
    /// The model (`--model`), else the agent's or the config's.
    pub model: Option<String>,
}

/// Serves ACP on standard input and output until the client closes the connection.
pub async fn serve(options: Options, store: Arc<Store>) -> Result<(), String> {
    let server = Arc::new(Server { options, store, sessions: Mutex::default(), client_fs: AtomicBool::new(false) });
    let result = connect(server.clone()).await;
    // The language servers started for the sessions end with the connection, as with `run`.
    let configs: Vec<_> = lock(&server.sessions).values().map(|s| s.config.clone()).collect();
    for config in &configs {
        toolshed_runtime::shutdown_language_servers(config).await;
    }
    result
}

/// Answers the client until it closes the connection.
async fn connect(server: Arc<Server>) -> Result<(), String> {
    let (s1, s2, s3, s4, s5, s6) =
        (server.clone(), server.clone(), server.clone(), server.clone(), server.clone(), server.clone());
    Agent
        .v1()
        .name("toolshed")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| responder.respond(s1.initialize(&request)),
            agent_client_protocol::on_receive_request!(),
        )
        // A session is opened beside the connection (its MCP servers may take a while to
        // start), which goes on reading: other sessions' prompts, cancels, answers.
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let server = s2.clone();
                tokio::spawn(async move {
                    let _ = match server.open(cx, None, request.cwd, request.mcp_servers).await {
                        Ok((id, modes)) => responder.respond(NewSessionResponse::new(id).modes(modes)),
                        Err(e) => responder.respond_with_error(e),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let server = s3.clone();
                tokio::spawn(async move {
                    let id = request.session_id.0.to_string();
                    let _ = match server.open(cx, Some(id), request.cwd, request.mcp_servers).await {
                        Ok((_, modes)) => responder.respond(LoadSessionResponse::new().modes(modes)),
                        Err(e) => responder.respond_with_error(e),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                let (session, number, cancel) = match s4.begin(&request) {
                    Ok(started) => started,
                    Err(e) => return responder.respond_with_error(e),
                };
                // The turn runs beside the connection, which goes on reading (cancel, answers
                // to permission requests).
                tokio::spawn(async move {
                    let _ = match Server::prompt(session, number, cancel, request).await {
                        Ok(response) => responder.respond(response),
                        Err(e) => responder.respond_with_error(e),
                    };
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| match s5.set_mode(&request) {
                Ok(()) => responder.respond(SetSessionModeResponse::new()),
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |cancel: CancelNotification, _cx| {
                s6.cancel(&cancel.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(stdio_lines())
        .await
        .map_err(|e| e.to_string())
}

/// Standard input and output as lines of JSON-RPC. A line that is not UTF-8 reaches the SDK
/// as a line that is not JSON, so it is answered with a parse error (`-32700`) and the
/// connection goes on; the SDK's own stdio transport would end the connection, and every
/// session with it.
fn stdio_lines() -> agent_client_protocol::Lines<
    impl futures_util::Sink<String, Error = std::io::Error> + Send + 'static,
    impl futures_util::Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    use tokio::io::AsyncWriteExt;
    let incoming = futures_util::stream::unfold(tokio::io::BufReader::new(tokio::io::stdin()), |mut input| async {
        let mut line = Vec::new();
        match toolshed_core::lines::read_line(&mut input, &mut line, toolshed_core::lines::MAX_LINE).await {
            Ok(toolshed_core::lines::Line::End) => None,
            // Not held whole (a line that never ends would take the memory): what is given
            // instead is no JSON, so the client gets the parse error.
            Ok(toolshed_core::lines::Line::TooLong) => {
                Some((Ok(format!("(a message over {} MiB, not read)", toolshed_core::lines::MAX_LINE >> 20)), input))
            }
            Ok(toolshed_core::lines::Line::Whole) => {
                if line.ends_with(b"\n") {
                    line.pop();
                    if line.ends_with(b"\r") {
                        line.pop();
                    }
                }
                let line = String::from_utf8(line).unwrap_or_else(|e| {
                    format!("(bytes that are not UTF-8) {}", String::from_utf8_lossy(e.as_bytes()))
                });
                Some((Ok(line), input))
            }
            Err(e) => Some((Err(e), input)),
        }
    });
    let outgoing = futures_util::sink::unfold(tokio::io::stdout(), |mut out, line: String| async move {
        out.write_all(line.as_bytes()).await?;
        out.write_all(b"\n").await?;
        out.flush().await?;
        Ok::<_, std::io::Error>(out)
    });
    agent_client_protocol::Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

struct Server {
    options: Options,
    store: Arc<Store>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The client offered `fs/read_text_file` and `fs/write_text_file` at `initialize`.
    client_fs: AtomicBool,
}

/// A session this process runs for the client.
struct Session {
    runtime: Arc<Runtime>,
    live: Arc<LiveSession>,
    /// The latest turn asked for, until it ends: a prompt is refused while it runs, unless it
    /// was cancelled (the prompt then waits for it to wind down).
    turn: Mutex<Option<Turn>>,
    /// Numbers the turns.
    turns: AtomicU64,
    /// Held by the turn that runs: one at a time, in the order they were asked for.
    running: Arc<tokio::sync::Mutex<()>>,
    /// Events and flushes to the task that sends updates.
    outgoing: mpsc::UnboundedSender<Outgoing>,
    /// How the last step of the session's own model stopped.
    last_stop: Arc<Mutex<String>>,
    /// The worktree's configuration (what its language servers were started for).
    config: toolshed_core::config::Config,
    _lock: toolshed_core::paths::FileLock,
    _mcp: Option<toolshed_runtime::mcp::Attached>,
}

/// A turn asked for by `session/prompt`.
struct Turn {
    number: u64,
    cancel: CancellationToken,
}

// Events are the common case; a flush is rare.
#[allow(clippy::large_enum_variant)]
enum Outgoing {
    /// An event, and for an edit the files' text before it ran.
    Event(Event, Option<updates::Before>),
    /// Answered once everything before it was sent (a turn's response follows its updates).
    Flush(oneshot::Sender<()>),
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(serde_json::Value::String(message.into()))
}

fn failed(message: impl Into<String>) -> Error {
    Error::internal_error().data(serde_json::Value::String(message.into()))
}

/// Slash commands the client may offer.
const COMMANDS: &[(&str, &str)] = &[("compact", "summarise the older history now to free context")];

impl Server {
    fn initialize(&self, request: &InitializeRequest) -> InitializeResponse {
        let fs = &request.client_capabilities.fs;
        self.client_fs.store(fs.read_text_file && fs.write_text_file, Ordering::Relaxed);
        // The one version this agent speaks; a client that cannot speak it disconnects.
        let _ = request;
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(PromptCapabilities::new().image(true).audio(false).embedded_context(true))
                    .mcp_capabilities(McpCapabilities::new().http(true)),
            )
            .agent_info(Implementation::new("toolshed", env!("CARGO_PKG_VERSION")))
    }

    fn session(&self, id: &str) -> Result<Arc<Session>, Error> {
        lock(&self.sessions)
            .get(id)
            .cloned()
            .ok_or_else(|| invalid(format!("no session {id} in this connection; create or load it first")))
    }

    /// `session/new` (`id` None) or `session/load`: the worktree at `cwd` with the client's MCP
    /// servers, a runtime whose events and questions go to the client, the session locked for
    /// this process. A loaded session's history is sent as updates first.
    async fn open(
        self: Arc<Self>,
        cx: ConnectionTo<Client>,
        id: Option<String>,
        cwd: PathBuf,
        mcp: Vec<McpServer>,
    ) -> Result<(String, SessionModeState), Error> {
        let cwd = session_dir(&cwd)?;
        if let Some(id) = &id {
            if lock(&self.sessions).contains_key(id) {
                return Err(invalid(format!("session {id} is already open in this connection")));
            }
            self.store
                .session(id)
                .map_err(|_| Error::new(ErrorCode::RESOURCE_NOT_FOUND, format!("no stored session {id}")))?;
        }
        let roots: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let ids: Arc<Mutex<CallIds>> = Arc::default();
        let (outgoing, receiver) = mpsc::unbounded_channel();
        let sink_tx = outgoing.clone();
        // Where the session's relative paths start, set once the workspace is open.
        let places: Arc<OnceLock<(PathBuf, PathBuf)>> = Arc::default();
        let sink_places = places.clone();
        let sink: EventSink = Arc::new(move |e: &Event| {
            // The text an edit starts from is read now, before the tool runs.
            let before = match (e, sink_places.get()) {
                (Event::ToolCall { tool, input, .. }, Some((root, cwd))) => updates::before(root, cwd, tool, input),
                _ => None,
            };
            let _ = sink_tx.send(Outgoing::Event(e.clone(), before));
        });
        let approver = Arc::new(EditorApprover {
            cx: cx.clone(),
            roots: roots.clone(),
            ids: ids.clone(),
            rejected: Mutex::default(),
            outgoing: outgoing.clone(),
        });
        let journal = Arc::new(Journal::default());
        let files = self
            .client_fs
            .load(Ordering::Relaxed)
            .then(|| Arc::new(EditorFiles { cx: cx.clone(), session: OnceLock::new(), journal: journal.clone() }));
        let server = self.clone();
        let access = files.clone().map(|f| f as Arc<dyn FileAccess>);
        let store = self.store.clone();
        let resume = id.clone();
        // Built, locked and opened off the async threads: a failure drops the MCP servers
        // started for it where that may block.
        let opened = tokio::task::spawn_blocking(move || {
            let (runtime, mcp, agent, model, config) = server.build(&cwd, mcp, approver, sink, access)?;
            let (live, held) = match &resume {
                Some(id) => {
                    // Its conversation and snapshots are its own worktree's.
                    let info = store.session(id).map_err(|e| failed(e.to_string()))?;
                    if let toolshed_agent::store::SessionPlace::Elsewhere(root) = info.place(&runtime.settings().root) {
                        return Err(invalid(format!(
                            "session {id} worked in {root}, not in {}: load it with a cwd inside {root}",
                            runtime.settings().root.display()
                        )));
                    }
                    let held = store.lock_session(id, "load the session").map_err(failed)?;
                    let live = runtime.resume_session(id, None, None).map_err(|e| invalid(e.to_string()))?;
                    (live, held)
                }
                None => {
                    let live = runtime.create_session(&agent, &model, None).map_err(|e| invalid(e.to_string()))?;
                    let held = store.lock_session(&live.id, "load the session").map_err(failed)?;
                    (live, held)
                }
            };
            Ok::<_, Error>((runtime, mcp, live, held, config))
        })
        .await
        .map_err(|e| failed(e.to_string()))??;
        let (runtime, mcp, live, held, config) = opened;
        let store = self.store.clone();
        let session_id = live.id.clone();
        if let Some(files) = &files {
            let _ = files.session.set(session_id.clone());
        }
        lock(&roots).insert(session_id.clone(), session_id.clone());
        let root = runtime.settings().root.clone();
        let work = runtime.settings().cwd.clone();
        let _ = places.set((root.clone(), work.clone()));
        if id.is_some() {
            let messages = store.messages(&session_id).map_err(|e| failed(e.to_string()))?;
            let replayed = updates::replay(&work, &messages, &mut lock(&ids));
            for update in replayed {
                let _ = cx.send_notification(SessionNotification::new(session_id.clone(), update));
            }
        }
        let last_stop: Arc<Mutex<String>> = Arc::default();
        let tracker = Tracker::new(&root, &work).with_journal(journal);
        let ids_of_calls = ids;
        tokio::spawn(forward(
            cx.clone(),
            receiver,
            tracker,
            roots,
            ids_of_calls,
            session_id.clone(),
            last_stop.clone(),
        ));
        let commands =
            COMMANDS.iter().map(|(name, what)| AvailableCommand::new(name.to_string(), what.to_string())).collect();
        let _ = cx.send_notification(SessionNotification::new(
            session_id.clone(),
            SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)),
        ));
        let modes = modes(&runtime, &live);
        let session = Session {
            runtime,
            live,
            turn: Mutex::default(),
            turns: AtomicU64::new(0),
            running: Arc::default(),
            outgoing,
            last_stop,
            config,
            _lock: held,
            _mcp: mcp,
        };
        lock(&self.sessions).insert(session_id.clone(), Arc::new(session));
        Ok((session_id, modes))
    }

    /// The runtime for the worktree at `cwd` (blocking: it may start MCP servers).
    #[allow(clippy::type_complexity)]
    fn build(
        &self,
        cwd: &Path,
        mcp: Vec<McpServer>,
        approver: Arc<dyn Approver>,
        sink: EventSink,
        files: Option<Arc<dyn FileAccess>>,
    ) -> Result<
        (Arc<Runtime>, Option<toolshed_runtime::mcp::Attached>, String, String, toolshed_core::config::Config),
        Error,
    > {
        let o = &self.options;
        let mut ws = Workspace::open_in(cwd, o.config_file.as_deref(), &o.overrides, &Scope::All)
            .map_err(|e| invalid(e.to_string()))?;
        if ws.root.parent().is_none() {
            return Err(invalid(format!(
                "the worktree of {} would be {}, the root of the file system; toolshed will not take all of it as the worktree: open a project folder in the editor",
                cwd.display(),
                ws.root.display()
            )));
        }
        // For the editor's log: the project's files that do not apply as they are on disk.
        for note in ws.trust_notices() {
            eprintln!("toolshed: {note}");
        }
        ws.file_access = files;
        // Relative paths start where the editor's session is, not where the process started.
        if let Ok(dir) = cwd.canonicalize()
            && dir.starts_with(&ws.root)
        {
            ws.cwd = dir;
        }
        for server in mcp {
            let (name, config) = mcp_config(server)?;
            attach_client_mcp(&mut ws.config.mcp, name, config);
        }
        let agent = ws.primary_agent(o.agent.as_deref()).map_err(|e| invalid(e.to_string()))?;
        let model = o
            .model
            .clone()
            .or_else(|| ws.agents.get(&agent).and_then(|a| a.model.clone()))
            .or_else(|| ws.config.model.clone())
            .ok_or_else(|| match ws.unapplied_project_hint() {
                Some(hint) => invalid(format!("no model is configured in the settings that apply: {hint}")),
                None => invalid(
                    "no model is configured: set `model = \"PROVIDER/MODEL\"` in the worktree's toolshed.toml (or ~/.config/toolshed/config.toml), or start `toolshed acp --model PROVIDER/MODEL`",
                ),
            })?;
        let parsed = toolshed_llm::provider::ModelRef::parse(&model).map_err(|e| invalid(e.to_string()))?;
        toolshed_llm::provider::resolve(&ws.config, &parsed, &toolshed_llm::provider::process_env)
            .map_err(|e| invalid(e.to_string()))?;
        let mut registry = ws.registry();
        let attached =
            toolshed_runtime::mcp::attach(&ws, &mut registry, toolshed_runtime::mcp::McpScope::All, &|line| {
                eprintln!("toolshed: {line}");
            })
            .map_err(|e| failed(e.to_string()))?;
        let runtime = ws.agent_runtime(registry, self.store.clone(), approver, sink);
        Ok((runtime, attached, agent, model, ws.config.clone()))
    }

    /// Starts a turn of `session/prompt` (in the dispatch loop, so a `session/cancel` that
    /// follows finds it). A turn still running is refused, unless it was cancelled: the new
    /// one then runs once it has wound down.
    fn begin(&self, request: &PromptRequest) -> Result<(Arc<Session>, u64, CancellationToken), Error> {
        let session = self.session(&request.session_id.0)?;
        check_images(&request.prompt)?;
        let cancel = CancellationToken::new();
        let mut turn = lock(&session.turn);
        if turn.as_ref().is_some_and(|t| !t.cancel.is_cancelled()) {
            return Err(invalid("a turn is already running in this session; cancel it or wait for it"));
        }
        let number = session.turns.fetch_add(1, Ordering::Relaxed) + 1;
        *turn = Some(Turn { number, cancel: cancel.clone() });
        drop(turn);
        Ok((session, number, cancel))
    }

    /// `session/prompt`: one turn; its response is sent after all of its updates.
    async fn prompt(
        session: Arc<Session>,
        number: u64,
        cancel: CancellationToken,
        request: PromptRequest,
    ) -> Result<PromptResponse, Error> {
        // After the turn before it (cancelled, or `begin` would have refused this one).
        let _running = session.running.clone().lock_owned().await;
        lock(&session.last_stop).clear();
        let parts = prompt_parts(&request.prompt);
        let outcome = match &parts[..] {
            // Cancelled while it waited for the turn before: nothing is stored or sent.
            _ if cancel.is_cancelled() => Err(AgentError::Interrupted),
            [Part::Text { text }] if text.trim() == "/compact" => {
                session.runtime.compact(&session.live, Trigger::Manual, &cancel).await.map(|_| String::new())
            }
            _ => session.runtime.prompt_with(&session.live, &parts, &cancel).await,
        };
        let (done, flushed) = oneshot::channel();
        if session.outgoing.send(Outgoing::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
        let last = lock(&session.last_stop).clone();
        let stop = match outcome {
            // However the loop noticed it, a cancelled turn ends as cancelled.
            _ if cancel.is_cancelled() => Ok(StopReason::Cancelled),
            Ok(_) if last == "maxtokens" => Ok(StopReason::MaxTokens),
            Ok(_) if last == "refusal" => Ok(StopReason::Refusal),
            Ok(_) => Ok(StopReason::EndTurn),
            Err(AgentError::Interrupted) => Ok(StopReason::Cancelled),
            Err(AgentError::StepLimit(_)) => Ok(StopReason::MaxTurnRequests),
            Err(e) => Err(failed(e.to_string())),
        };
        let mut turn = lock(&session.turn);
        if turn.as_ref().is_some_and(|t| t.number == number) {
            *turn = None;
        }
        drop(turn);
        let stop = stop?;
        Ok(PromptResponse::new(stop))
    }

    fn set_mode(&self, request: &SetSessionModeRequest) -> Result<(), Error> {
        let session = self.session(&request.session_id.0)?;
        session.runtime.switch_agent(&session.live, &request.mode_id.0).map_err(|e| invalid(e.to_string()))
    }

    fn cancel(&self, id: &str) {
        if let Ok(session) = self.session(id)
            && let Some(turn) = lock(&session.turn).as_ref()
        {
            turn.cancel.cancel();
        }
    }
}

/// The session's `cwd` as the directory it names: an absolute path of an existing directory,
/// never the root of the file system (the agent's worktree would be all of it).
fn session_dir(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "the session's cwd must be an absolute path, not {:?}: open a folder in the editor and start the session there",
            cwd.display().to_string()
        )));
    }
    let dir = cwd.canonicalize().map_err(|e| {
        invalid(format!(
            "the session's cwd {} cannot be opened ({e}): open an existing folder in the editor",
            cwd.display()
        ))
    })?;
    if !dir.is_dir() {
        return Err(invalid(format!(
            "the session's cwd {} is not a directory: open a folder in the editor",
            cwd.display()
        )));
    }
    if dir.parent().is_none() {
        return Err(invalid(format!(
            "the session's cwd is {}, the root of the file system; toolshed will not take all of it as the worktree: open a project folder in the editor",
            dir.display()
        )));
    }
    Ok(dir)
}

/// The modes: the primary agents (build, plan and the user's), the session's current one.
fn modes(runtime: &Runtime, live: &LiveSession) -> SessionModeState {
    let available = runtime
        .agents()
        .all()
        .filter(|a| toolshed_agent::is_primary(a))
        .map(|a| {
            let mode = SessionMode::new(a.name.clone(), a.name.clone());
            if a.description.is_empty() { mode } else { mode.description(a.description.clone()) }
        })
        .collect();
    SessionModeState::new(live.agent(), available)
}

/// Adds a client's MCP server to the configured ones. The user's `[mcp.NAME]` entry is never
/// replaced: a client's server of the same name is attached as `editor-NAME` (numbered if that
/// is taken too), unless it is the same server (same command, arguments, environment, or URL
/// and headers), which is attached once. Returns the name it is attached under.
fn attach_client_mcp(configured: &mut BTreeMap<String, McpConfig>, name: String, config: McpConfig) -> String {
    let same = |c: &McpConfig| {
        c.command == config.command
            && c.args == config.args
            && c.env == config.env
            && c.url == config.url
            && c.headers == config.headers
    };
    match configured.get(&name) {
        None => {
            configured.insert(name.clone(), config);
            name
        }
        Some(existing) if same(existing) => name,
        Some(_) => {
            let mut distinct = format!("editor-{name}");
            let mut n = 1;
            while configured.contains_key(&distinct) {
                n += 1;
                distinct = format!("editor-{name}-{n}");
            }
            configured.insert(distinct.clone(), config);
            distinct
        }
    }
}

/// A client's MCP server as a `[mcp.NAME]` entry.
fn mcp_config(server: McpServer) -> Result<(String, McpConfig), Error> {
    match server {
        McpServer::Stdio(s) => Ok((
            s.name,
            McpConfig {
                command: Some(s.command.display().to_string()),
                args: s.args,
                env: s.env.into_iter().map(|v| (v.name, v.value)).collect(),
                ..McpConfig::default()
            },
        )),
        McpServer::Http(h) => Ok((
            h.name,
            McpConfig {
                url: Some(h.url),
                headers: h.headers.into_iter().map(|v| (v.name, v.value)).collect(),
                ..McpConfig::default()
            },
        )),
        _ => Err(invalid("only MCP servers over stdio and HTTP are supported")),
    }
}

/// The prompt's blocks as what the model gets, in order: text as is, embedded files in
/// `<file>` tags, links named so the model can read them, images as images (each checked by
/// [`check_images`] first).
fn prompt_parts(blocks: &[ContentBlock]) -> Vec<Part> {
    let mut parts = Vec::new();
    // The text since the last image, a block a line.
    let mut lines: Vec<String> = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => lines.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => {
                let path = link.uri.strip_prefix("file://").unwrap_or(&link.uri);
                lines.push(format!("@{path}"));
            }
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    let path = r.uri.strip_prefix("file://").unwrap_or(&r.uri);
                    lines.push(format!("<file path=\"{path}\">\n{}\n</file>", r.text));
                }
                _ => lines.push("[a binary resource was attached; toolshed cannot read it]".into()),
            },
            ContentBlock::Image(image) => {
                if !lines.is_empty() {
                    parts.push(Part::Text { text: std::mem::take(&mut lines).join("\n") });
                }
                parts.push(Part::Image(Image { media_type: image.mime_type.clone(), data_base64: image.data.clone() }));
            }
            _ => lines.push("[an audio clip was attached; toolshed cannot use audio]".into()),
        }
    }
    if !lines.is_empty() || parts.is_empty() {
        parts.push(Part::Text { text: lines.join("\n") });
    }
    parts
}

/// Refuses a prompt whose images no model would take, with what to do instead, before the
/// turn starts.
fn check_images(blocks: &[ContentBlock]) -> Result<(), Error> {
    for block in blocks {
        if let ContentBlock::Image(image) = block {
            toolshed_agent::store::prompt_image(&image.mime_type, &image.data).map_err(invalid)?;
        }
    }
    Ok(())
}

/// Sends a session's events as updates, in order; sub-agents' tool calls show under the
/// session that started them.
async fn forward(
    cx: ConnectionTo<Client>,
    mut events: mpsc::UnboundedReceiver<Outgoing>,
    mut tracker: Tracker,
    roots: Arc<Mutex<HashMap<String, String>>>,
    ids: Arc<Mutex<CallIds>>,
    main: String,
    last_stop: Arc<Mutex<String>>,
) {
    while let Some(out) = events.recv().await {
        let (event, before) = match out {
            Outgoing::Flush(done) => {
                let _ = done.send(());
                continue;
            }
            Outgoing::Event(event, before) => (event, before),
        };
        if let Event::SessionStart { session_id, parent_id: Some(parent), .. } = &event {
            let mut map = lock(&roots);
            let top = map.get(parent).cloned().unwrap_or_else(|| parent.clone());
            map.insert(session_id.clone(), top);
        }
        let own = event.session_id() == main;
        let updates: Vec<SessionUpdate> = match &event {
            Event::Text { text, .. } if own => {
                vec![SessionUpdate::AgentMessageChunk(ContentChunk::new(updates::text(text)))]
            }
            Event::Reasoning { text, .. } if own => {
                vec![SessionUpdate::AgentThoughtChunk(ContentChunk::new(updates::text(text)))]
            }
            Event::ToolCall { call_id, tool, input, .. } => {
                let id = lock(&ids).start(event.session_id(), call_id);
                let shown = tracker.call(&id, tool, input, before);
                if let SessionUpdate::ToolCall(call) = &shown {
                    lock(&ids).titled(&id, &call.title);
                }
                vec![shown]
            }
            // A sub-agent's todo list is its own, not the session's plan.
            Event::ToolResult { call_id, tool, is_error, output, .. } => tracker
                .result(&lock(&ids).finish(event.session_id(), call_id), tool, *is_error, output)
                .into_iter()
                .filter(|u| own || !matches!(u, SessionUpdate::Plan(_)))
                .collect(),
            Event::AgentSwitch { to, .. } if own => {
                vec![SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(to.clone()))]
            }
            Event::StepFinish { stop, input_tokens, context_window, .. } if own => {
                stop.clone_into(&mut lock(&last_stop));
                vec![SessionUpdate::UsageUpdate(UsageUpdate::new(*input_tokens, *context_window))]
            }
            _ => Vec::new(),
        };
        for update in updates {
            let _ = cx.send_notification(SessionNotification::new(main.clone(), update));
        }
    }
}

/// The client's files, when it offers `fs`: the file tools' text is read from and written to its
/// buffers, with the session's id. Called from the tools' tasks, never from a handler of the
/// connection (which must go on reading to see the answer).
struct EditorFiles {
    cx: ConnectionTo<Client>,
    /// The client's session, known once it is created.
    session: OnceLock<String>,
    /// What was read and written, for the calls' diffs.
    journal: Arc<Journal>,
}

impl EditorFiles {
    fn session(&self) -> std::io::Result<String> {
        self.session.get().cloned().ok_or_else(|| std::io::Error::other("the session is not open yet"))
    }
}

impl FileAccess for EditorFiles {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, std::io::Result<String>> {
        Box::pin(async move {
            let request = ReadTextFileRequest::new(self.session()?, path);
            let response = self.cx.send_request(request).block_task().await.map_err(std::io::Error::other)?;
            self.journal.read(path, &response.content);
            Ok(response.content)
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, text: &'a str) -> BoxFuture<'a, std::io::Result<()>> {
        Box::pin(async move {
            let request = WriteTextFileRequest::new(self.session()?, path, text);
            self.cx.send_request(request).block_task().await.map_err(std::io::Error::other)?;
            self.journal.wrote(path, text);
            Ok(())
        })
    }
}

/// Puts permission asks to the editor.
struct EditorApprover {
    cx: ConnectionTo<Client>,
    /// Sub-agent sessions → the client's session.
    roots: Arc<Mutex<HashMap<String, String>>>,
    /// The ids the calls are shown with.
    ids: Arc<Mutex<CallIds>>,
    /// What "reject always" refused: (permission, patterns).
    rejected: Mutex<HashSet<(String, String)>>,
    /// The session's updates, flushed before a question so its call is shown first.
    outgoing: mpsc::UnboundedSender<Outgoing>,
}

impl Approver for EditorApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let r = &request.request;
            let key = (r.permission.clone(), r.patterns.join("\n"));
            if lock(&self.rejected).contains(&key) {
                return Reply::Reject(Some(
                    "The user rejected calls like this one for the rest of the session; do not retry it.".into(),
                ));
            }
            let session = lock(&self.roots).get(&request.session_id).cloned().unwrap_or(request.session_id.clone());
            // The call the question is about reaches the editor before the question.
            let (done, flushed) = oneshot::channel();
            if self.outgoing.send(Outgoing::Flush(done)).is_ok() {
                let _ = flushed.await;
            }
            let what = if r.patterns.is_empty() { String::new() } else { format!(": {}", r.patterns.join(", ")) };
            // The permission is named when it is not the tool's own (a command reaching outside
            // the worktree asks for `external_directory`, not for `bash`).
            let title = if r.permission == request.tool {
                format!("{}{what}", request.tool)
            } else {
                format!("{} needs `{}`{what}", request.tool, r.permission)
            };
            let mut fields = ToolCallUpdateFields::new().title(title).kind(updates::kind(&request.tool));
            if !r.metadata.is_empty() {
                fields = fields.raw_input(serde_json::Value::Object(r.metadata.clone()));
            }
            let always = if r.always.is_empty() {
                "Always allow".to_string()
            } else {
                format!("Always allow {}", r.always.join(", "))
            };
            let options = vec![
                PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new("allow_always", always, PermissionOptionKind::AllowAlways),
                PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
                PermissionOption::new("reject_always", "Always reject", PermissionOptionKind::RejectAlways),
            ];
            let id = lock(&self.ids).of(&request.session_id, &request.call_id);
            let asked =
                RequestPermissionRequest::new(session.clone(), ToolCallUpdate::new(id.clone(), fields), options);
            let answered = self.cx.send_request(asked).block_task().await;
            // The question's title replaced the call's in the editor: the call's comes back.
            if let Some(title) = lock(&self.ids).title(&id) {
                let restored = ToolCallUpdate::new(id, ToolCallUpdateFields::new().title(title));
                let _ = self
                    .cx
                    .send_notification(SessionNotification::new(session, SessionUpdate::ToolCallUpdate(restored)));
            }
            match answered {
                Ok(answer) => match answer.outcome {
                    RequestPermissionOutcome::Selected(chosen) => match chosen.option_id.0.as_ref() {
                        "allow_once" => Reply::Once,
                        "allow_always" => Reply::Always,
                        "reject_always" => {
                            lock(&self.rejected).insert(key);
                            Reply::Reject(Some(
                                "The user rejected this call and calls like it for the rest of the session.".into(),
                            ))
                        }
                        _ => Reply::Reject(Some("The user rejected this call in the editor.".into())),
                    },
                    _ => Reply::Reject(None),
                },
                Err(_) => Reply::Reject(None),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str) -> McpConfig {
        McpConfig { command: Some(command.to_string()), ..McpConfig::default() }
    }

    #[test]
    fn a_clients_mcp_server_never_replaces_a_configured_one() {
        let mut configured = BTreeMap::from([("git".to_string(), stdio("git-mcp"))]);
        // Another server under a configured name is attached beside it, numbered if need be.
        assert_eq!(attach_client_mcp(&mut configured, "git".into(), stdio("other")), "editor-git");
        assert_eq!(attach_client_mcp(&mut configured, "git".into(), stdio("third")), "editor-git-2");
        assert_eq!(configured["git"], stdio("git-mcp"));
        assert_eq!(configured["editor-git"], stdio("other"));
        // The very same server runs once; a new name is attached as it is.
        assert_eq!(attach_client_mcp(&mut configured, "git".into(), stdio("git-mcp")), "git");
        assert_eq!(attach_client_mcp(&mut configured, "docs".into(), stdio("docs-mcp")), "docs");
        assert_eq!(configured.len(), 4);
    }

    #[test]
    fn a_sessions_cwd_is_an_absolute_existing_directory_other_than_the_root() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap_or_else(|e| panic!("{e}"));
        assert!(session_dir(dir.path()).is_ok());
        let missing = dir.path().join("missing");
        for bad in [Path::new("/"), Path::new("relative"), missing.as_path(), file.as_path()] {
            assert!(session_dir(bad).is_err(), "{} was taken", bad.display());
        }
    }

    #[test]
    fn a_prompts_blocks_keep_their_order_with_images_between_texts() {
        use agent_client_protocol::v1::schema::{ImageContent, TextContent};
        let blocks = vec![
            ContentBlock::Text(TextContent::new("look at")),
            ContentBlock::Text(TextContent::new("this")),
            ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
            ContentBlock::Text(TextContent::new("please")),
        ];
        let png = Image { media_type: "image/png".into(), data_base64: "iVBORw0KGgo=".into() };
        assert_eq!(
            prompt_parts(&blocks),
            vec![Part::Text { text: "look at\nthis".into() }, Part::Image(png), Part::Text { text: "please".into() }]
        );
        assert!(check_images(&blocks).is_ok());
        let svg = [ContentBlock::Image(ImageContent::new("PHN2Zy8+", "image/svg+xml"))];
        assert!(check_images(&svg).is_err());
    }
}
