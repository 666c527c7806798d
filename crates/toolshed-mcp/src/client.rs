//! The MCP client: connects to the servers of `[mcp.NAME]`, imports their tools into a
//! [`Registry`] as `NAME_TOOL`, and keeps each server isolated. A server that fails to start,
//! crashes or hangs is marked unavailable with the reason, and every other tool keeps working.
//! A server that crashes after a good start is started again on the next call of one of its
//! tools, up to [`MAX_RESTARTS`] times per process; the call that saw the crash is not repeated
//! (it may have had effects), the model is told what happened.
//! A tool with an invalid schema is left out with its reason while the server's other tools
//! stay usable; a server none of whose tools can be used is marked unavailable.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use toolshed_core::env::ChildEnv;

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::watch;
use toolshed_core::config::McpConfig;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::registry::{Registry, Source, qualified_name};
use toolshed_core::tool::{BoxFuture, Exposure, Invocation, Tool, ToolFlags};
use toolshed_core::wildcard;
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};
use toolshed_process::{GroupList, ProcessGroup, SIGKILL};

use crate::convert;

/// How long a server may take to start and list its tools when `startup_timeout_ms` is not set
/// (`npx -y some-server` with a cold npm cache downloads the package first).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one tool call may take when `timeout_ms` is not set.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How many times a server that crashed is started again in one process.
pub const MAX_RESTARTS: u32 = 3;

/// How many lines of a server's standard error are kept to explain a failure.
const STDERR_LINES: usize = 20;

/// What the client knows about one configured server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// Connected; its tools are imported.
    Connected,
    /// `enabled = false`.
    Disabled,
    /// Not usable, and why.
    Unavailable(String),
}

/// A server's status, as `toolshed mcp list` shows it.
#[derive(Clone, Debug)]
pub struct ServerStatus {
    /// The config name.
    pub name: String,
    /// `stdio: COMMAND ARGS` or `http: URL`.
    pub transport: String,
    /// Connected, disabled or unavailable.
    pub state: State,
    /// The imported tools' full names.
    pub tools: Vec<String>,
    /// Tools left out, with the reason (invalid schema, name collision).
    pub skipped: Vec<(String, String)>,
}

/// Options for connecting.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    /// The directory stdio servers start in (the worktree root); the current one if `None`.
    pub cwd: Option<PathBuf>,
    /// What stdio servers inherit of toolshed's environment: only its minimal set (`HOME`,
    /// `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`) and `[env] pass`, plus their own `env`.
    pub env: ChildEnv,
    /// How a stdio server is confined before it starts (unless its config says `sandbox =
    /// false`); `None`: not at all.
    pub confine: Option<Confine>,
}

/// Confines a stdio server's process before it starts (toolshed's runtime uses the sandbox of a
/// shell command, `toolshed_shell::confine_tool`). An error leaves the server unavailable.
#[derive(Clone)]
pub struct Confine(pub std::sync::Arc<ConfineFn>);

/// What [`Confine`] calls: the command about to start.
pub type ConfineFn = dyn Fn(&mut std::process::Command) -> Result<(), String> + Send + Sync;

impl std::fmt::Debug for Confine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Confine")
    }
}

/// One imported tool: the server's name for it and the spec the model sees.
#[derive(Clone, Debug)]
struct Imported {
    raw_name: String,
    spec: ToolSpec,
}

#[derive(Default)]
struct ToolTable {
    tools: Vec<Imported>,
    skipped: Vec<(String, String)>,
}

type Service = RunningService<RoleClient, Handler>;

/// One configured MCP server and its connection.
pub struct McpServer {
    name: String,
    config: McpConfig,
    state: RwLock<State>,
    service: RwLock<Option<Arc<Service>>>,
    table: Arc<RwLock<ToolTable>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    changes: watch::Sender<u64>,
    options: ConnectOptions,
    /// Set when a connection that worked closed; cleared by a restart or a failed one.
    crashed: AtomicBool,
    restarts: AtomicU32,
    restarting: tokio::sync::Mutex<()>,
    /// The process group of a stdio server's current process: killed when replaced or dropped.
    group: Mutex<Option<ProcessGroup>>,
}

/// Receives the server's notifications: a changed tool list is fetched again.
pub struct Handler {
    server: String,
    config: McpConfig,
    table: Arc<RwLock<ToolTable>>,
    changes: watch::Sender<u64>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("toolshed", env!("CARGO_PKG_VERSION")))
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let peer = context.peer.clone();
        let (server, config, table, changes) =
            (self.server.clone(), self.config.clone(), self.table.clone(), self.changes.clone());
        // Fetch outside the notification handler so the connection keeps reading meanwhile.
        tokio::spawn(async move {
            let timeout = startup_timeout(&config);
            if let Ok(Ok(tools)) = tokio::time::timeout(timeout, peer.list_all_tools()).await {
                *table.write().unwrap_or_else(PoisonError::into_inner) = build_table(&server, &config, tools);
                changes.send_modify(|n| *n += 1);
            }
        });
    }
}

fn startup_timeout(config: &McpConfig) -> Duration {
    config.startup_timeout_ms.map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_millis)
}

fn call_timeout(config: &McpConfig) -> Duration {
    config.timeout_ms.map_or(DEFAULT_CALL_TIMEOUT, Duration::from_millis)
}

/// Whether `config` lets a tool named `raw` (by the server) in.
fn included(config: &McpConfig, raw: &str) -> bool {
    (config.include.is_empty() || config.include.iter().any(|p| wildcard::matches(raw, p)))
        && !config.exclude.iter().any(|p| wildcard::matches(raw, p))
}

/// The spec of each tool the server lists, or why it is left out.
fn build_table(server: &str, config: &McpConfig, tools: Vec<rmcp::model::Tool>) -> ToolTable {
    let mut table = ToolTable::default();
    let mut names = HashSet::new();
    for tool in tools {
        let raw = tool.name.to_string();
        if !included(config, &raw) {
            continue;
        }
        let parameters = match crate::schema::normalize(&tool.input_schema) {
            Ok(p) => p,
            Err(reason) => {
                table.skipped.push((raw, reason));
                continue;
            }
        };
        let mut name = qualified_name(server, &raw);
        if names.contains(&name) {
            // Two server names that sanitise alike: the later one gets a distinguishing suffix.
            name = qualified_name(server, &format!("{raw}{}", "_".repeat(toolshed_core::registry::MAX_TOOL_NAME)));
            if names.contains(&name) {
                table.skipped.push((raw, format!("its name collides with another tool's (`{name}`)")));
                continue;
            }
        }
        names.insert(name.clone());
        let description = tool
            .description
            .as_deref()
            .filter(|d| !d.trim().is_empty())
            .map(str::to_string)
            .or_else(|| tool.title.clone())
            .unwrap_or_else(|| format!("The `{raw}` tool of the MCP server `{server}`."));
        let annotations = tool.annotations.as_ref();
        let flags = if annotations.and_then(|a| a.read_only_hint) == Some(true) {
            ToolFlags::READ_ONLY
        } else {
            ToolFlags { mutating: annotations.and_then(|a| a.destructive_hint) == Some(true), ..ToolFlags::default() }
        };
        let exposure = config.exposure.unwrap_or(Exposure::Direct);
        let mut spec = ToolSpec::new(name, description, parameters).with_flags(flags).with_exposure(exposure);
        // What toolshed does not use itself passes through when it serves the tool over MCP.
        if let Ok(Value::Object(mut fields)) = serde_json::to_value(&tool) {
            fields.retain(|k, _| !matches!(k.as_str(), "name" | "description" | "inputSchema"));
            spec.mcp = fields;
        }
        table.tools.push(Imported { raw_name: raw, spec });
    }
    table
}

impl McpServer {
    /// The config name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set_unavailable(&self, reason: String) {
        *self.state.write().unwrap_or_else(PoisonError::into_inner) = State::Unavailable(reason);
    }

    fn transport(&self) -> String {
        match (&self.config.command, &self.config.url) {
            (Some(command), _) => {
                let mut parts = vec![command.clone()];
                parts.extend(self.config.args.iter().cloned());
                format!("stdio: {}", parts.join(" "))
            }
            (None, Some(url)) => format!("http: {url}"),
            (None, None) => "none".to_string(),
        }
    }

    /// The status `toolshed mcp list` shows.
    pub fn status(&self) -> ServerStatus {
        let table = self.table.read().unwrap_or_else(PoisonError::into_inner);
        ServerStatus {
            name: self.name.clone(),
            transport: self.transport(),
            state: self.state(),
            tools: table.tools.iter().map(|t| t.spec.name.clone()).collect(),
            skipped: table.skipped.clone(),
        }
    }

    /// The last lines the server wrote to standard error.
    fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        let tail: Vec<&str> = lines.iter().rev().take(3).rev().map(String::as_str).collect();
        if tail.is_empty() {
            return String::new();
        }
        // A server refused a write by the sandbox should say how to run it without.
        let sandboxed =
            self.config.command.is_some() && self.config.sandbox != Some(false) && self.options.confine.is_some();
        let denied = ["Read-only file system", "Permission denied", "EACCES", "EROFS", "Operation not permitted"];
        let hint = if sandboxed && lines.iter().any(|l| denied.iter().any(|d| l.contains(d))) {
            format!(
                "; it runs in toolshed's sandbox (it may write the worktree, temp dirs and caches; .git and toolshed's own files are read-only): if it must write elsewhere, set `sandbox = false` in [mcp.{}]",
                self.name
            )
        } else {
            String::new()
        };
        format!(" (its last output: {}){hint}", tail.join(" | "))
    }

    /// Connects to the server named `name` and lists its tools; never fails: a server that
    /// cannot be used comes back unavailable, with the reason.
    pub async fn connect(name: &str, config: &McpConfig, options: &ConnectOptions) -> Arc<McpServer> {
        let server = Arc::new(McpServer {
            name: name.to_string(),
            config: config.clone(),
            state: RwLock::new(State::Connected),
            service: RwLock::new(None),
            table: Arc::default(),
            stderr: Arc::default(),
            changes: watch::channel(0).0,
            options: options.clone(),
            crashed: AtomicBool::new(false),
            restarts: AtomicU32::new(0),
            restarting: tokio::sync::Mutex::new(()),
            group: Mutex::new(None),
        });
        if config.enabled == Some(false) {
            *server.state.write().unwrap_or_else(PoisonError::into_inner) = State::Disabled;
            return server;
        }
        let timeout = startup_timeout(config);
        match tokio::time::timeout(timeout, server.start(options)).await {
            Ok(Ok(())) => {}
            Ok(Err(reason)) => {
                server.kill_group();
                server.set_unavailable(format!("{reason}{}", server.stderr_tail()));
            }
            Err(_) => {
                server.service.write().unwrap_or_else(PoisonError::into_inner).take();
                server.kill_group();
                server.set_unavailable(format!(
                    "it did not answer within {} ms while starting and listing its tools{}",
                    timeout.as_millis(),
                    server.stderr_tail()
                ));
            }
        }
        server
    }

    async fn start(&self, options: &ConnectOptions) -> Result<(), String> {
        let handler = Handler {
            server: self.name.clone(),
            config: self.config.clone(),
            table: self.table.clone(),
            changes: self.changes.clone(),
        };
        let service = match (&self.config.command, &self.config.url) {
            (Some(command), _) => {
                // `${workspaceFolder}` (VS Code's, kept by `mcp import`) is the worktree root.
                let root = options.cwd.as_ref().map(|d| d.to_string_lossy().into_owned());
                let expand = |text: &str| match &root {
                    Some(root) => text.replace(WORKSPACE_FOLDER, root),
                    None => text.to_string(),
                };
                let in_root = |path: &str| match &options.cwd {
                    Some(root) => root.join(expand(path)),
                    None => PathBuf::from(expand(path)),
                };
                let mut cmd = tokio::process::Command::new(expand(command));
                // A group of its own: stopping it stops what it started too.
                #[cfg(unix)]
                cmd.process_group(0);
                options.env.apply_minimal(cmd.as_std_mut());
                if let Some(file) = &self.config.env_file {
                    cmd.envs(read_env_file(&in_root(file))?);
                }
                cmd.args(self.config.args.iter().map(|a| expand(a)));
                cmd.envs(self.config.env.iter().map(|(k, v)| (k, expand(v))));
                match (&self.config.cwd, &options.cwd) {
                    (Some(dir), _) => {
                        let dir = in_root(dir);
                        if !dir.is_dir() {
                            return Err(format!("its `cwd` {} is not a directory", dir.display()));
                        }
                        cmd.current_dir(dir);
                    }
                    (None, Some(dir)) => {
                        cmd.current_dir(dir);
                    }
                    (None, None) => {}
                }
                if self.config.sandbox != Some(false)
                    && let Some(confine) = &options.confine
                {
                    (confine.0)(cmd.as_std_mut()).map_err(|e| {
                        format!("cannot start it sandboxed: {e} (`sandbox = false` in its [mcp.NAME] runs it without)")
                    })?;
                }
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                // Listed before the first await, so a start-up cancelled at any point still
                // leaves a group to kill (replacing a crashed process's group kills what it left).
                *self.group.lock().unwrap_or_else(PoisonError::into_inner) =
                    transport.id().and_then(|pid| ProcessGroup::listed(pid, SIGKILL, &STDIO_SERVERS));
                let mut reader = None;
                if let Some(stderr) = stderr {
                    let keep = self.stderr.clone();
                    reader = Some(tokio::spawn(async move {
                        let mut lines = tokio::io::BufReader::new(stderr).lines();
                        while let Ok(Some(line)) = lines.next_line().await {
                            let mut kept = keep.lock().unwrap_or_else(PoisonError::into_inner);
                            if kept.len() == STDERR_LINES {
                                kept.pop_front();
                            }
                            kept.push_back(line);
                        }
                    }));
                }
                match handler.serve(transport).await {
                    Ok(service) => service,
                    Err(e) => {
                        // A server that died on start usually said why: let its last words arrive.
                        if let Some(reader) = reader {
                            let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
                        }
                        let text = e.to_string();
                        // rmcp's words for a child that is already gone name its internals.
                        if text.contains("Broken pipe") || text.contains("closed") || text.contains("EOF") {
                            return Err("it exited (or closed its standard input and output) before answering the MCP handshake".to_string());
                        }
                        return Err(format!("the MCP handshake failed: {text}"));
                    }
                }
            }
            (None, Some(url)) => {
                install_crypto_provider();
                let config = http_config(url, &self.config.headers)?;
                let transport = StreamableHttpClientTransport::from_config(config);
                handler.serve(transport).await.map_err(|e| format!("the MCP handshake with {url} failed: {e}"))?
            }
            (None, None) => return Err("neither `command` nor `url` is set".to_string()),
        };
        let service = Arc::new(service);
        *self.service.write().unwrap_or_else(PoisonError::into_inner) = Some(service.clone());
        let tools = service.list_all_tools().await.map_err(|e| format!("listing its tools failed: {e}"))?;
        let table = build_table(&self.name, &self.config, tools);
        let unusable = table.tools.is_empty() && !table.skipped.is_empty();
        let reason = unusable.then(|| {
            let (tool, why) = &table.skipped[0];
            let more = table.skipped.len() - 1;
            let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
            format!("none of its tools can be used: `{tool}` {why}{more}")
        });
        *self.table.write().unwrap_or_else(PoisonError::into_inner) = table;
        reason.map_or(Ok(()), Err)
    }

    /// Marks the server unavailable after a crash; whether a restart is still allowed (it is
    /// then attempted by the next call).
    fn mark_crashed(&self, reason: &str) -> bool {
        self.set_unavailable(reason.to_string());
        let restartable = self.restarts.load(Ordering::SeqCst) < MAX_RESTARTS;
        self.crashed.store(restartable, Ordering::SeqCst);
        restartable
    }

    /// Marks the server crashed and says so to the model: unavailable, and whether the next
    /// call starts it again.
    fn crashed_error(&self, reason: String) -> ToolError {
        if !self.mark_crashed(&reason) {
            return self.unavailable_error(&format!("{reason}; it was already restarted {MAX_RESTARTS} times"));
        }
        ToolError::model(format!(
            "The MCP server `{}` crashed: {reason}. The call's outcome is unknown. The server is started again on the next call of one of its tools; check whether this call took effect before repeating it.",
            self.name
        ))
    }

    /// Starts a crashed server again, if it may be; whether it is connected afterwards.
    async fn restart_after_crash(&self) -> bool {
        let _one_at_a_time = self.restarting.lock().await;
        if self.state() == State::Connected {
            return true;
        }
        if !self.crashed.swap(false, Ordering::SeqCst) || self.restarts.load(Ordering::SeqCst) >= MAX_RESTARTS {
            return false;
        }
        let attempt = self.restarts.fetch_add(1, Ordering::SeqCst) + 1;
        drop(self.service.write().unwrap_or_else(PoisonError::into_inner).take());
        self.stderr.lock().unwrap_or_else(PoisonError::into_inner).clear();
        let timeout = startup_timeout(&self.config);
        let failure = match tokio::time::timeout(timeout, self.start(&self.options)).await {
            Ok(Ok(())) => None,
            Ok(Err(reason)) => Some(reason),
            Err(_) => Some(format!("it did not answer within {} ms", timeout.as_millis())),
        };
        match failure {
            None => {
                *self.state.write().unwrap_or_else(PoisonError::into_inner) = State::Connected;
                self.changes.send_modify(|n| *n += 1);
                true
            }
            Some(reason) => {
                self.service.write().unwrap_or_else(PoisonError::into_inner).take();
                self.kill_group();
                self.set_unavailable(format!(
                    "it crashed, and starting it again (attempt {attempt}) failed: {reason}{}",
                    self.stderr_tail()
                ));
                false
            }
        }
    }

    /// Calls `raw_name` with `args`; a dead connection marks the server crashed.
    async fn call(&self, raw_name: &str, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if self.state() != State::Connected && !self.restart_after_crash().await {
            return Err(self.unavailable_now());
        }
        let Some(service) = self.service.read().unwrap_or_else(PoisonError::into_inner).clone() else {
            return Err(self.unavailable_error("it is not connected"));
        };
        if service.is_closed() || service.peer().is_transport_closed() {
            // It died between calls; nothing was sent, so this call may go to a fresh start.
            self.mark_crashed(&format!("its connection closed (the server exited){}", self.stderr_tail()));
            if !self.restart_after_crash().await {
                return Err(self.unavailable_now());
            }
            return Box::pin(self.call(raw_name, args, ctx)).await;
        }
        let mut params = CallToolRequestParams::new(raw_name.to_string());
        params.arguments = match args {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::model(format!("Arguments must be a JSON object, not {other}. Send an object.")));
            }
        };
        let result = tokio::select! {
            result = service.call_tool(params) => result,
            () = ctx.cancellation().cancelled() => {
                return Err(ToolError::model(format!("The call to the MCP server `{}` was stopped.", self.name)));
            }
        };
        match result {
            Ok(result) => convert::from_mcp(result, ctx.output_limits().max_blob_bytes),
            Err(rmcp::ServiceError::McpError(e)) => Err(ToolError::model(format!(
                "The MCP server `{}` rejected the call: {}. Check the tool name and arguments.",
                self.name, e.message
            ))),
            Err(e @ (rmcp::ServiceError::TransportClosed | rmcp::ServiceError::TransportSend(_))) => {
                // Let the server's last words arrive before quoting them.
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(self.crashed_error(format!("the connection failed during the call ({e}){}", self.stderr_tail())))
            }
            Err(e) => Err(ToolError::model(format!("The call to the MCP server `{}` failed: {e}.", self.name))),
        }
    }

    /// The error for a call while the server is not connected, with the current reason.
    fn unavailable_now(&self) -> ToolError {
        match self.state() {
            State::Unavailable(reason) => self.unavailable_error(&reason),
            _ => self.unavailable_error("it is not connected"),
        }
    }

    fn unavailable_error(&self, reason: &str) -> ToolError {
        ToolError::model(format!(
            "The MCP server `{}` is unavailable: {reason}. Its tools cannot be used now; do not retry, use another approach.",
            self.name
        ))
    }

    /// Notified whenever the server's tool list changes.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The server's tools as registry tools.
    pub fn tools(self: &Arc<Self>) -> Vec<McpTool> {
        if self.state() != State::Connected {
            return Vec::new();
        }
        let table = self.table.read().unwrap_or_else(PoisonError::into_inner);
        table
            .tools
            .iter()
            .map(|t| McpTool { server: self.clone(), raw_name: t.raw_name.clone(), spec: t.spec.clone() })
            .collect()
    }

    /// Closes the connection (a stdio server is asked to exit, then killed, with everything
    /// left in its process group).
    pub async fn shutdown(&self) {
        let service = self.service.write().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(service) = service
            && let Ok(mut service) = Arc::try_unwrap(service)
        {
            let _ = service.close_with_timeout(Duration::from_secs(2)).await;
        }
        self.kill_group();
    }

    /// Kills the process group of a stdio server's current process (a no-op for others).
    fn kill_group(&self) {
        drop(self.group.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}

/// The process groups of the stdio servers this process started. Each server is started as the
/// leader of a group of its own, so stopping it also stops what it started (a wrapper's `sleep`,
/// `npx`'s node, ...). A group is listed from its spawn until its server stops, whatever the
/// server's start-up was doing (spawned, in the handshake, listing its tools, or given up on),
/// and whatever is still listed is killed by [`kill_all_servers`] and when the process exits (any
/// command, by any path that runs `atexit` handlers).
static STDIO_SERVERS: GroupList = GroupList::new();

/// Kills every stdio server's process group still listed, with everything in it. Safe to call
/// more than once; what `mcp serve` does when it stops.
pub fn kill_all_servers() {
    STDIO_SERVERS.stop_all();
}

/// VS Code's variable for the workspace root; in a stdio server's `command`, `args`, `env`,
/// `cwd` and `env_file` it stands for the worktree root.
pub const WORKSPACE_FOLDER: &str = "${workspaceFolder}";

/// The variables of a dotenv file: `KEY=VALUE` lines, `#` comments, an optional `export `, and
/// values optionally in matching quotes.
fn read_env_file(path: &std::path::Path) -> Result<Vec<(String, String)>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read its `env_file` {}: {e}", path.display()))?;
    let mut vars = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("its `env_file` {} line {}: expected KEY=VALUE", path.display(), n + 1));
        };
        let value = value.trim();
        let unquoted =
            ['"', '\''].iter().find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q))).unwrap_or(value);
        vars.push((key.trim().to_string(), unquoted.to_string()));
    }
    Ok(vars)
}

/// Selects rustls's `ring` provider for HTTPS (no C toolchain needed); harmless if already set.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn http_config(url: &str, headers: &BTreeMap<String, String>) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    let mut custom = std::collections::HashMap::new();
    for (name, value) in headers {
        if name.eq_ignore_ascii_case("authorization") {
            let token = value.strip_prefix("Bearer ").unwrap_or(value);
            config = config.auth_header(token.to_string());
            continue;
        }
        let name = http::HeaderName::try_from(name.as_str()).map_err(|e| format!("header `{name}`: {e}"))?;
        let value = http::HeaderValue::try_from(value.as_str()).map_err(|e| format!("header `{name}`: {e}"))?;
        custom.insert(name, value);
    }
    Ok(config.custom_headers(custom))
}

/// A tool of an MCP server, called through its connection.
pub struct McpTool {
    server: Arc<McpServer>,
    raw_name: String,
    spec: ToolSpec,
}

impl McpTool {
    /// The server's own name for the tool.
    pub fn raw_name(&self) -> &str {
        &self.raw_name
    }
}

struct McpInvocation {
    server: Arc<McpServer>,
    raw_name: String,
    name: String,
    args: Value,
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, args: Value) -> Result<Box<dyn Invocation + '_>, ToolError> {
        Ok(Box::new(McpInvocation {
            server: self.server.clone(),
            raw_name: self.raw_name.clone(),
            name: self.spec.name.clone(),
            args,
        }))
    }
}

impl Invocation for McpInvocation {
    /// MCP tools are guarded by their full name, as key and as pattern.
    fn permissions(&self, _ctx: &ToolContext) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(vec![PermissionRequest::new(&self.name, [self.name.as_str()])])
    }

    fn time_limit(&self) -> Option<Duration> {
        Some(call_timeout(&self.server.config))
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            // A local server runs where the model's files are: protected paths a call creates
            // are removed after it (the sandbox keeps only existing ones read-only).
            let local = self.server.config.command.is_some();
            let absent = if local { toolshed_core::protected::absent(ctx.root(), ctx.cwd()) } else { Vec::new() };
            let result = self.server.call(&self.raw_name, self.args, &ctx).await;
            toolshed_core::protected::settle(ctx.root(), &absent, result)
        })
    }
}

/// The configured servers, connected.
#[derive(Default)]
pub struct McpClients {
    servers: Vec<Arc<McpServer>>,
}

impl McpClients {
    /// Connects to every server in `configs` concurrently.
    pub async fn connect<'a>(
        configs: impl IntoIterator<Item = (&'a String, &'a McpConfig)>,
        options: &ConnectOptions,
    ) -> McpClients {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, (name, config)) in configs.into_iter().enumerate() {
            let (name, config, options) = (name.clone(), config.clone(), options.clone());
            tasks.spawn(async move { (i, McpServer::connect(&name, &config, &options).await) });
        }
        let mut servers: Vec<(usize, Arc<McpServer>)> = Vec::new();
        while let Some(done) = tasks.join_next().await {
            if let Ok(pair) = done {
                servers.push(pair);
            }
        }
        servers.sort_by_key(|(i, _)| *i);
        McpClients { servers: servers.into_iter().map(|(_, s)| s).collect() }
    }

    /// The servers given, in this order (servers connected one by one, as `mcp serve` does so
    /// that it can answer its own clients before every upstream server has started).
    pub fn new(servers: Vec<Arc<McpServer>>) -> McpClients {
        McpClients { servers }
    }

    /// The servers, in config order.
    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// Registers every connected server's tools with [`Source::Mcp`]. Two servers whose
    /// tools come out with the same full name (`a` + `b_echo`, `a_b` + `echo`) do not shadow
    /// each other silently: the later one's tool is left out, with the reason in its status.
    pub fn register(&self, registry: &mut Registry) {
        let mut owners: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        for server in &self.servers {
            for tool in server.tools() {
                let name = tool.spec.name.clone();
                if let Some(first) = owners.get(&name) {
                    let reason = format!(
                        "its full name `{name}` is already taken by a tool of the MCP server `{first}`; rename one of the two servers in the config"
                    );
                    let mut table = server.table.write().unwrap_or_else(PoisonError::into_inner);
                    if !table.skipped.iter().any(|(raw, _)| raw == &tool.raw_name) {
                        table.skipped.push((tool.raw_name.clone(), reason));
                    }
                    continue;
                }
                owners.insert(name, server.name.clone());
                registry.register(tool, Source::Mcp(server.name.clone()));
            }
        }
    }

    /// Every server's status.
    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|s| s.status()).collect()
    }

    /// Closes every connection.
    pub async fn shutdown(&self) {
        for server in &self.servers {
            server.shutdown().await;
        }
    }
}

/// The servers among `configs` whose tools could be called `tool`: those whose sanitised name
/// followed by `_` starts it (or, for names cut to 64 characters, the part that survived).
pub fn servers_for_tool<'a>(
    configs: impl IntoIterator<Item = (&'a String, &'a McpConfig)>,
    tool: &str,
) -> Vec<(&'a String, &'a McpConfig)> {
    configs
        .into_iter()
        .filter(|(name, _)| {
            let prefix = format!("{}_", toolshed_core::registry::sanitize_name(name));
            let cut = (tool.len() == toolshed_core::registry::MAX_TOOL_NAME)
                .then(|| tool.get(..tool.len() - 13))
                .flatten()
                .is_some_and(|kept| prefix.starts_with(kept) || kept.starts_with(&prefix));
            tool.starts_with(&prefix) || cut
        })
        .collect()
}
