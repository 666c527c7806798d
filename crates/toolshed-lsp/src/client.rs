//! One running language server: the child process, the `initialize` handshake, the documents
//! it has open, and the diagnostics it has published.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lsp_types::notification::{DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, DidSaveTextDocument};
use lsp_types::{
    ClientCapabilities, ClientInfo, Diagnostic, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, InitializeParams, InitializeResult, PublishDiagnosticsParams,
    ServerCapabilities, TextDocumentContentChangeEvent, TextDocumentIdentifier, TextDocumentItem,
    TextDocumentSyncCapability, TextDocumentSyncSaveOptions, Uri, VersionedTextDocumentIdentifier, WorkspaceFolder,
};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;
use tokio::time::Instant;
use toolshed_process::{GroupList, ProcessGroup, SIGTERM};

use super::position::{file_uri, uri_path};
use super::rpc::{Connection, Handler, METHOD_NOT_FOUND, RpcError};
use super::servers::{ServerSpec, language_id};
use super::tsserver::{self, PullError};

/// Largest file handed to a server.
const MAX_DOCUMENT_BYTES: u64 = 8 * 1024 * 1024;
/// Bytes of the server's standard error kept for error messages.
const STDERR_TAIL_BYTES: usize = 8 * 1024;
/// After a file's diagnostics arrive, how long to wait for a revision of them.
const SETTLE: Duration = Duration::from_millis(150);
/// After a change to the project, how long to wait for diagnostics published after it before
/// taking older ones (a file the change does not affect may never be published again).
const FRESH_WAIT: Duration = Duration::from_secs(3);
/// After a file is first opened, how long a server that neither reports progress nor publishes
/// diagnostics is given to load what the file needs before questions about it are asked.
const QUIET: Duration = Duration::from_secs(3);
/// How long `shutdown` and `exit` may take before the server is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Diagnostics a server published for one file.
#[derive(Clone, Debug)]
struct Published {
    version: Option<i32>,
    seq: u64,
    diagnostics: Vec<Diagnostic>,
}

/// Work the server reported through `$/progress` (loading the project, indexing).
#[derive(Debug, Default)]
struct Work {
    /// Tokens of work begun and not ended yet.
    active: std::collections::HashSet<String>,
    /// How many pieces of work have ended.
    ended: u64,
}

/// What the server's own messages update.
struct Inbox {
    diagnostics: Mutex<HashMap<Uri, Published>>,
    seq: watch::Sender<u64>,
    work: watch::Sender<Work>,
    folders: Value,
}

impl Inbox {
    /// Notes a `$/progress` report: work begins or ends.
    fn progress(&self, params: &Value) {
        let token = params.get("token").map(Value::to_string).unwrap_or_default();
        match params.pointer("/value/kind").and_then(Value::as_str) {
            Some("begin") => {
                self.work.send_modify(|work| {
                    work.active.insert(token);
                });
            }
            Some("end") => self.work.send_modify(|work| {
                if work.active.remove(&token) {
                    work.ended += 1;
                }
            }),
            _ => {}
        }
    }
}

impl Handler for Inbox {
    fn notification(&self, method: &str, params: Value) {
        if method == "$/progress" {
            return self.progress(&params);
        }
        if method != "textDocument/publishDiagnostics" {
            return;
        }
        let Ok(params) = serde_json::from_value::<PublishDiagnosticsParams>(params) else { return };
        let mut map = self.diagnostics.lock().unwrap_or_else(PoisonError::into_inner);
        let seq = *self.seq.borrow() + 1;
        map.insert(params.uri, Published { version: params.version, seq, diagnostics: params.diagnostics });
        drop(map);
        self.seq.send_replace(seq);
    }

    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)> {
        match method {
            // No settings of our own: the server's defaults (and its project files) apply.
            "workspace/configuration" => {
                let items = params.get("items").and_then(Value::as_array).map_or(0, Vec::len);
                Ok(Value::Array(vec![Value::Null; items]))
            }
            "workspace/workspaceFolders" => Ok(self.folders.clone()),
            "workspace/applyEdit" => Ok(json!({"applied": false, "failureReason": "toolshed applies no server edits"})),
            "client/registerCapability"
            | "client/unregisterCapability"
            | "window/workDoneProgress/create"
            | "window/showMessageRequest"
            | "window/showDocument" => Ok(Value::Null),
            m if m.starts_with("workspace/") && m.ends_with("/refresh") => Ok(Value::Null),
            _ => Err((METHOD_NOT_FOUND, format!("toolshed does not handle {method}"))),
        }
    }
}

/// A document as last sent to the server.
struct Document {
    uri: Uri,
    version: i32,
    text: String,
}

/// A file brought up to date on the server: what to wait for its diagnostics by.
#[derive(Clone, Debug)]
pub struct Synced {
    /// The file's URI.
    pub uri: Uri,
    /// The version the server now has.
    pub version: i32,
    /// The text the server now has.
    pub text: String,
    /// Whether this sync sent anything (a new or changed document).
    pub changed: bool,
    /// The diagnostics sequence number before the change was sent.
    seq_before: u64,
    /// The diagnostics counter when a document last changed on the server (this one or another):
    /// diagnostics published before that may answer for an older state of the project.
    changed_seq: u64,
    /// When the sync happened, and how many pieces of the server's work had ended by then.
    at: Instant,
    work_ended: u64,
}

impl Synced {
    /// Whether this sync opened the file on the server.
    fn opened(&self) -> bool {
        self.changed && self.version == 1
    }
}

/// Why diagnostics did not come.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitError {
    /// The deadline passed.
    Timeout,
    /// The server exited; the reason.
    Exited(String),
}

/// A running language server.
pub struct Server {
    spec: ServerSpec,
    root: PathBuf,
    program: PathBuf,
    conn: Connection,
    inbox: Arc<Inbox>,
    capabilities: ServerCapabilities,
    documents: tokio::sync::Mutex<HashMap<PathBuf, Document>>,
    /// The diagnostics counter when a document was last opened or changed on the server.
    changed_seq: std::sync::atomic::AtomicU64,
    /// Set once the server was first ready ([`Server::settle`]): work it reports later (a
    /// `cargo check` after a save, re-indexing) no longer holds questions back.
    loaded: AtomicBool,
    exit: watch::Receiver<Option<String>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    pid: Option<u32>,
    /// Its process group, until the server is shut down.
    process: Mutex<Option<ProcessGroup>>,
}

impl Server {
    /// Starts `program` for `spec` in `root`, a project in the worktree `worktree`, and
    /// completes the `initialize` handshake within `limit`. It runs in the shell's sandbox for
    /// the worktree (`spec.sandbox`). The error says what went wrong, with the server's last
    /// words if it exited.
    pub async fn start(
        spec: &ServerSpec,
        root: &Path,
        worktree: &Path,
        program: &Path,
        limit: Duration,
    ) -> Result<Server, String> {
        let deadline = Instant::now() + limit;
        let mut command = tokio::process::Command::new(program);
        spec.env.apply(command.as_std_mut());
        let mode = toolshed_shell::confine_helper(command.as_std_mut(), &spec.sandbox, worktree)
            .map_err(|e| format!("could not be sandboxed: {e}"))?;
        // The worktree is read-only to a sandboxed server: cargo (rust-analyzer's checks) builds
        // in a cache directory of this worktree's own instead of its `target/`.
        if mode != "none"
            && std::env::var_os("CARGO_TARGET_DIR").is_none()
            && let Some(dir) = build_cache(worktree)
        {
            command.env("CARGO_TARGET_DIR", dir);
        }
        command
            .args(&spec.args)
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|e| format!("could not be started (`{}`): {e}", program.display()))?;
        let pid = child.id();
        let process = Mutex::new(pid.and_then(|pid| ProcessGroup::listed(pid, SIGTERM, &SERVERS)));
        let (Some(stdin), Some(stdout), Some(stderr_pipe)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err("could not be started: its standard streams were not available".into());
        };
        let stderr = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(keep_tail(stderr_pipe, stderr.clone()));
        let (exit_tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = match child.wait().await {
                Ok(status) => describe_exit(status),
                Err(e) => format!("could not be waited for: {e}"),
            };
            exit_tx.send_replace(Some(status));
        });

        let root_uri = file_uri(root).ok_or_else(|| format!("`{}` cannot be named by a file URI", root.display()))?;
        let folder_name = root.file_name().map_or_else(|| "root".to_string(), |n| n.to_string_lossy().into_owned());
        let folders = vec![WorkspaceFolder { uri: root_uri.clone(), name: folder_name }];
        let (seq, _) = watch::channel(0);
        let (work, _) = watch::channel(Work::default());
        let inbox = Arc::new(Inbox {
            diagnostics: Mutex::default(),
            seq,
            work,
            folders: serde_json::to_value(&folders).unwrap_or(Value::Null),
        });
        let conn = Connection::start(stdout, stdin, inbox.clone());

        #[allow(deprecated)] // root_uri: older servers read it instead of the workspace folders
        let params = InitializeParams {
            process_id: Some(std::process::id()),
            root_uri: Some(root_uri),
            workspace_folders: Some(folders),
            capabilities: client_capabilities(),
            client_info: Some(ClientInfo { name: "toolshed".into(), version: Some(env!("CARGO_PKG_VERSION").into()) }),
            ..InitializeParams::default()
        };
        let mut server = Server {
            spec: spec.clone(),
            root: root.to_path_buf(),
            program: program.to_path_buf(),
            conn,
            inbox,
            capabilities: ServerCapabilities::default(),
            documents: tokio::sync::Mutex::default(),
            changed_seq: std::sync::atomic::AtomicU64::new(0),
            loaded: AtomicBool::new(false),
            exit,
            stderr,
            pid,
            process,
        };
        match server.conn.call::<lsp_types::request::Initialize>(params, deadline).await {
            Ok(InitializeResult { capabilities, .. }) => server.capabilities = capabilities,
            Err(RpcError::Timeout) => {
                return Err(format!("did not answer `initialize` within {}", seconds(limit)));
            }
            Err(RpcError::Closed(_)) => {
                return Err(format!(
                    "{} before answering `initialize`{}",
                    server.wait_exit().await,
                    server.last_words()
                ));
            }
            Err(e) => return Err(format!("failed to initialize: {e}{}", server.last_words())),
        }
        server.conn.notify("initialized", json!({})).await.map_err(|e| e.to_string())?;
        Ok(server)
    }

    /// The server's name (`pyright`).
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Its spec.
    pub fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    /// The project root it was opened on.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The program that runs.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// Its process id.
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// What it said it can do.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }

    /// The JSON-RPC connection, for requests.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Whether it is still running and connected.
    pub fn is_alive(&self) -> bool {
        self.exit.borrow().is_none() && !self.conn.closed().is_cancelled()
    }

    /// Why it is no longer running (exit status and last words), once it is not. When the
    /// connection closed first, waits a moment for the exit status.
    pub async fn death(&self) -> Option<String> {
        if self.is_alive() {
            return None;
        }
        Some(format!("{}{}", self.wait_exit().await, self.last_words()))
    }

    /// Waits briefly for the exit status after the connection closed; describes it.
    async fn wait_exit(&self) -> String {
        let mut exit = self.exit.clone();
        let waited = tokio::time::timeout(Duration::from_millis(500), exit.wait_for(Option::is_some)).await;
        match waited {
            Ok(Ok(status)) => status.clone().unwrap_or_default(),
            _ => self.conn.close_reason().unwrap_or_else(|| "closed its connection".into()),
        }
    }

    /// The first lines of the server's standard error (at most 3, up to the first blank line,
    /// which usually ends the message before a backtrace), as `: line / line`, or nothing.
    fn last_words(&self) -> String {
        let bytes = self.stderr.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<String> = text
            .lines()
            .map(str::trim)
            .skip_while(|l| l.is_empty())
            .take_while(|l| !l.is_empty())
            .take(3)
            .map(|l| {
                if l.chars().count() > 200 {
                    format!("{}…", l.chars().take(200).collect::<String>())
                } else {
                    l.to_string()
                }
            })
            .collect();
        if lines.is_empty() { String::new() } else { format!(": {}", lines.join(" / ")) }
    }

    /// Sends the file's current content: opens it the first time, sends a change when it
    /// differs from what the server has, and nothing when it does not.
    pub async fn sync(&self, path: &Path) -> Result<Synced, String> {
        use std::sync::atomic::Ordering::SeqCst;
        let text = read_document(path)?;
        let mut documents = self.documents.lock().await;
        // Other open files changed on disk since they were sent (a shell command, another
        // editor): the server learns of it first, so answers about this file take it into account.
        for (other, doc) in documents.iter_mut() {
            if other == path {
                continue;
            }
            let Ok(now) = read_document(other) else { continue };
            if now != doc.text {
                let _ = self.send_change(doc, now).await;
            }
        }
        let seq_before = *self.inbox.seq.borrow();
        let changed_seq = self.changed_seq.load(SeqCst);
        let (at, work_ended) = (Instant::now(), self.inbox.work.borrow().ended);
        let failed = |e: RpcError| format!("{} {}", self.spec.name, e);
        match documents.get_mut(path) {
            Some(doc) if doc.text == text => Ok(Synced {
                uri: doc.uri.clone(),
                version: doc.version,
                text,
                changed: false,
                seq_before,
                changed_seq,
                at,
                work_ended,
            }),
            Some(doc) => {
                self.send_change(doc, text.clone()).await.map_err(failed)?;
                self.saved(&doc.uri, &text).await.map_err(failed)?;
                let changed_seq = seq_before;
                Ok(Synced {
                    uri: doc.uri.clone(),
                    version: doc.version,
                    text,
                    changed: true,
                    seq_before,
                    changed_seq,
                    at,
                    work_ended,
                })
            }
            None => {
                let uri =
                    file_uri(path).ok_or_else(|| format!("`{}` cannot be named by a file URI", path.display()))?;
                // The server may have read an older version from disk (the file was just written).
                self.changed_on_disk(&uri).await;
                let item = TextDocumentItem::new(uri.clone(), language_id(path), 1, text.clone());
                self.conn
                    .notify_typed::<DidOpenTextDocument>(DidOpenTextDocumentParams { text_document: item })
                    .await
                    .map_err(failed)?;
                documents.insert(path.to_path_buf(), Document { uri: uri.clone(), version: 1, text: text.clone() });
                self.changed_seq.store(seq_before, SeqCst);
                Ok(Synced { uri, version: 1, text, changed: true, seq_before, changed_seq: seq_before, at, work_ended })
            }
        }
    }

    /// Sends `doc`'s new `text` as its next version, announced as changed on disk too, and notes
    /// the change (diagnostics published before it may be stale).
    async fn send_change(&self, doc: &mut Document, text: String) -> Result<(), RpcError> {
        doc.version += 1;
        doc.text = text.clone();
        let params = DidChangeTextDocumentParams {
            text_document: VersionedTextDocumentIdentifier { uri: doc.uri.clone(), version: doc.version },
            content_changes: vec![TextDocumentContentChangeEvent { range: None, range_length: None, text }],
        };
        self.changed_seq.store(*self.inbox.seq.borrow(), std::sync::atomic::Ordering::SeqCst);
        self.changed_on_disk(&doc.uri).await;
        self.conn.notify_typed::<DidChangeTextDocument>(params).await
    }

    /// Tells the server that the file at `uri` changed on disk (`workspace/didChangeWatchedFiles`):
    /// pyright re-reads it and re-checks the files that import it, which a `didOpen` with new
    /// text alone does not make it do for a file it had read from disk.
    async fn changed_on_disk(&self, uri: &Uri) {
        let params = json!({"changes": [{"uri": uri, "type": 2}]});
        let _ = self.conn.notify("workspace/didChangeWatchedFiles", params).await;
    }

    /// Tells a server that wants saves that the file was saved (some check only on save).
    async fn saved(&self, uri: &Uri, text: &str) -> Result<(), RpcError> {
        let include_text = match &self.capabilities.text_document_sync {
            Some(TextDocumentSyncCapability::Options(options)) => match &options.save {
                Some(TextDocumentSyncSaveOptions::Supported(true)) => false,
                Some(TextDocumentSyncSaveOptions::SaveOptions(save)) => save.include_text.unwrap_or(false),
                _ => return Ok(()),
            },
            _ => return Ok(()),
        };
        let params = DidSaveTextDocumentParams {
            text_document: TextDocumentIdentifier { uri: uri.clone() },
            text: include_text.then(|| text.to_string()),
        };
        self.conn.notify_typed::<DidSaveTextDocument>(params).await
    }

    /// Closes the file if it is open (it was deleted) and forgets its diagnostics.
    pub async fn close(&self, path: &Path) {
        let Some(doc) = self.documents.lock().await.remove(path) else { return };
        self.inbox.diagnostics.lock().unwrap_or_else(PoisonError::into_inner).remove(&doc.uri);
        let params = DidCloseTextDocumentParams { text_document: TextDocumentIdentifier { uri: doc.uri } };
        let _ = self.conn.notify_typed::<DidCloseTextDocument>(params).await;
    }

    /// Waits until `deadline` for the diagnostics of the synced file's version, then a moment
    /// more in case the server revises them.
    pub async fn diagnostics(&self, synced: &Synced, deadline: Instant) -> Result<Vec<Diagnostic>, WaitError> {
        if self.asks_tsserver()
            && let Some(path) = uri_path(&synced.uri)
        {
            match tsserver::diagnostics(&self.conn, &path, deadline).await {
                Ok(all) => return Ok(all),
                Err(PullError::Rpc(RpcError::Timeout)) => return Err(WaitError::Timeout),
                Err(PullError::Rpc(RpcError::Closed(_))) => return Err(self.exited().await),
                // Another answer than expected: wait for the publications as for any server.
                Err(PullError::Rpc(_) | PullError::Unusable) => {}
            }
        }
        let mut seq = self.inbox.seq.subscribe();
        let mut exit = self.exit.clone();
        // After a change elsewhere in the project, diagnostics published before it may be
        // stale (pyright publishes a file's dependents again once it has re-checked them): wait
        // a moment for a publication that follows the change before taking the one there is.
        let fresh_until = (Instant::now() + FRESH_WAIT).min(deadline);
        let accepted = loop {
            if let Some(found) = self.current(synced) {
                let fresh = found.seq > synced.changed_seq || synced.changed_seq == 0;
                if fresh || Instant::now() >= fresh_until {
                    break found;
                }
                tokio::select! {
                    changed = seq.changed() => if changed.is_err() { return Err(self.exited().await) },
                    () = tokio::time::sleep_until(fresh_until) => {}
                    () = until_exited(&mut exit) => return Err(self.exited().await),
                }
                continue;
            }
            tokio::select! {
                changed = seq.changed() => if changed.is_err() { return Err(self.exited().await) },
                () = tokio::time::sleep_until(deadline) => return Err(WaitError::Timeout),
                () = until_exited(&mut exit) => return Err(self.exited().await),
                () = self.conn.closed().cancelled() => return Err(self.exited().await),
            }
        };
        // A revision of this file's diagnostics restarts the wait; other files' do not.
        let mut latest = accepted;
        let mut settle = (Instant::now() + SETTLE).min(deadline);
        loop {
            match tokio::time::timeout_at(settle, seq.changed()).await {
                Ok(Ok(())) => {
                    if let Some(newer) = self.current(synced).filter(|p| p.seq > latest.seq) {
                        latest = newer;
                        settle = (Instant::now() + SETTLE).min(deadline);
                    }
                }
                _ => return Ok(latest.diagnostics),
            }
        }
    }

    /// Waits until `deadline` for the server to be ready to answer questions about the synced
    /// file: until it was first ready, no work it reported (`$/progress`, as
    /// typescript-language-server reports loading the project) is still going on; and, when the sync opened the file, the server showed it
    /// has taken the file in (published its diagnostics or ended some work since), or stayed
    /// silent for a moment. A server asked earlier answers from a half-loaded project: "no
    /// definition" or a type of `any`. Whether it became ready; a server that exited is left
    /// for the question to report.
    pub async fn settle(&self, synced: &Synced, deadline: Instant) -> bool {
        let mut work = self.inbox.work.subscribe();
        let mut seq = self.inbox.seq.subscribe();
        let mut exit = self.exit.clone();
        let quiet_until = (synced.at + QUIET).min(deadline);
        loop {
            let (active, ended) = {
                let work = work.borrow_and_update();
                (work.active.len(), work.ended)
            };
            seq.borrow_and_update();
            let heard = !synced.opened()
                || ended > synced.work_ended
                || self.published_since(synced)
                || Instant::now() >= quiet_until;
            let busy = active > 0 && !self.loaded.load(Ordering::SeqCst);
            if !busy && heard {
                self.loaded.store(true, Ordering::SeqCst);
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            let wake = if busy { deadline } else { quiet_until };
            tokio::select! {
                _ = work.changed() => {}
                _ = seq.changed() => {}
                () = tokio::time::sleep_until(wake) => {}
                () = until_exited(&mut exit) => return true,
                () = self.conn.closed().cancelled() => return true,
            }
        }
    }

    /// Whether the server published diagnostics for the synced file after the sync.
    fn published_since(&self, synced: &Synced) -> bool {
        let map = self.inbox.diagnostics.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&synced.uri).is_some_and(|p| p.seq > synced.seq_before)
    }

    /// Whether diagnostics are asked of the TypeScript server behind it (typescript-language-server)
    /// rather than waited for.
    fn asks_tsserver(&self) -> bool {
        let commands = self.capabilities.execute_command_provider.as_ref().map(|p| p.commands.as_slice());
        commands.unwrap_or_default().iter().any(|c| c == tsserver::COMMAND)
    }

    /// The published diagnostics that answer `synced`, if they have arrived.
    fn current(&self, synced: &Synced) -> Option<Published> {
        let map = self.inbox.diagnostics.lock().unwrap_or_else(PoisonError::into_inner);
        let found = map.get(&synced.uri)?;
        let fits = match found.version {
            Some(version) => version >= synced.version,
            None => !synced.changed || found.seq > synced.seq_before,
        };
        fits.then(|| found.clone())
    }

    async fn exited(&self) -> WaitError {
        WaitError::Exited(self.death().await.unwrap_or_else(|| "stopped".into()))
    }

    /// Asks the server to shut down and exit; kills it if it does not within a moment.
    pub async fn shutdown(&self) {
        if self.is_alive() {
            let deadline = Instant::now() + SHUTDOWN_GRACE;
            if self.conn.request("shutdown", Value::Null, deadline).await.is_ok() {
                let _ = self.conn.notify("exit", Value::Null).await;
                let mut exit = self.exit.clone();
                let _ = tokio::time::timeout_at(deadline, exit.wait_for(Option::is_some)).await;
            }
        }
        // Stopped with everything it started, and no longer listed for the exit hook.
        drop(self.process.lock().unwrap_or_else(PoisonError::into_inner).take());
    }
}

/// Resolves once the process has exited (the status guard is released before returning).
async fn until_exited(exit: &mut watch::Receiver<Option<String>>) {
    let _ = exit.wait_for(Option::is_some).await;
}

fn client_capabilities() -> ClientCapabilities {
    serde_json::from_value(json!({
        "general": {"positionEncodings": ["utf-16"]},
        "window": {"workDoneProgress": true},
        "workspace": {
            "configuration": true,
            "workspaceFolders": true,
            "symbol": {},
            "didChangeWatchedFiles": {"dynamicRegistration": true}
        },
        "textDocument": {
            "synchronization": {"didSave": true, "dynamicRegistration": false},
            "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
            "hover": {"contentFormat": ["markdown", "plaintext"]},
            "definition": {"linkSupport": true},
            "references": {},
            "documentSymbol": {"hierarchicalDocumentSymbolSupport": true}
        }
    }))
    .unwrap_or_default()
}

fn read_document(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|e| format!("`{}` cannot be read: {e}", path.display()))?.len();
    if size > MAX_DOCUMENT_BYTES {
        return Err(format!("`{}` is {size} bytes, too large to hand to a language server", path.display()));
    }
    // Checked on the open handle, and the open does not wait for a FIFO's writer: a file swapped
    // for a FIFO after the tool's check cannot hang the call.
    let bytes = toolshed_path::read_regular(path)
        .map_err(|e| format!("`{}` cannot be read: {e}", path.display()))?
        .map_err(|kind| format!("`{}` is {kind}, not a regular file", path.display()))?;
    Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

async fn keep_tail(mut pipe: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buf = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut kept = tail.lock().unwrap_or_else(PoisonError::into_inner);
        // Keep the beginning (where errors are usually explained) and stop growing after that.
        let room = STDERR_TAIL_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
    }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("was killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "exited".into(),
    }
}

/// `20 s`, `1.5 s`.
pub fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{:.1} s", d.as_secs_f64()) }
}

/// The process groups of the servers still running: each server is stopped (SIGTERM, with
/// whatever it started) when its `Server` is dropped or shut down, and at exit (`atexit` also
/// runs on `std::process::exit`, where no destructor does).
static SERVERS: GroupList = GroupList::new();

/// Where a sandboxed server's builds for `worktree` go: under the user's cache directory, which
/// the sandbox lets it write, one directory per worktree.
fn build_cache(worktree: &Path) -> Option<PathBuf> {
    use std::hash::{Hash as _, Hasher as _};
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| toolshed_core::paths::home_dir().map(|h| h.join(".cache")))?;
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    worktree.hash(&mut hasher);
    let name = worktree.file_name().map_or_else(|| "root".into(), |n| n.to_string_lossy().into_owned());
    Some(cache.join("toolshed").join("lsp-target").join(format!("{name}-{:016x}", hasher.finish())))
}
