//! [`ToolContext`]: what every tool call gets besides its arguments.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Map, Value};
pub use tokio_util::sync::CancellationToken;

use crate::file_access::FileAccess;
use crate::hooks::Hooks;
use crate::locks::{PathGuard, PathLocks};
use crate::output::{OutputLimits, OutputSink};
use crate::permission::{AllowAll, Asker, PermissionRequest};
use crate::tool::{ToolError, ToolSpec};

/// What `tool_search` may ask of the executor running a call, without seeing its registry or
/// session: the tools deferred for the call's agent and model, and loading some of them.
pub trait ToolDiscovery: Send + Sync {
    /// An identity of the deferred set (it changes when the set does), so an index built over
    /// the set can be reused.
    fn deferred_key(&self) -> u64;
    /// The deferred tools: each one's spec and the MCP server it comes from, if any.
    fn deferred(&self) -> Vec<(ToolSpec, Option<String>)>;
    /// Puts `tool` in the session's tool list from the next step on.
    fn load(&self, tool: &str);
}

/// Who is calling: the ids of the session, message and call, the agent and the tool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallInfo {
    /// The session the call belongs to.
    pub session_id: String,
    /// The assistant message that made the call.
    pub message_id: String,
    /// The provider's id of this call.
    pub call_id: String,
    /// The agent running the call (its permissions apply).
    pub agent: String,
    /// The tool being called.
    pub tool: String,
}

/// What stays the same for every call an executor runs: where the tools live and act.
pub struct Environment {
    /// The worktree the tools are confined to (canonical).
    pub root: PathBuf,
    /// The working directory relative paths start from (inside `root`).
    pub cwd: PathBuf,
    /// Where spill files and other data go (`$XDG_DATA_HOME/toolshed`).
    pub data_dir: PathBuf,
    /// The output budget of the bound stage.
    pub limits: OutputLimits,
    /// Hooks later capabilities fill (post-write diagnostics, ...).
    pub hooks: Hooks,
    /// Per-file locks shared by every session of this process.
    pub path_locks: PathLocks,
    /// Where the file tools read and write text instead of the disk (an editor's buffers);
    /// `None`: the disk.
    pub file_access: Option<Arc<dyn FileAccess>>,
}

impl Environment {
    /// An environment rooted at `root`, with data under `data_dir` and default limits.
    pub fn new(root: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Environment {
            cwd: root.clone(),
            root,
            data_dir: data_dir.into(),
            limits: OutputLimits::default(),
            hooks: Hooks::default(),
            path_locks: PathLocks::default(),
            file_access: None,
        }
    }

    /// The directory spill files are written to: this worktree's own ([`crate::paths::spill_dir`]).
    pub fn spill_dir(&self) -> PathBuf {
        crate::paths::spill_dir(&self.data_dir, &self.root)
    }
}

/// Context passed to every tool call: ids, agent, directories, cancellation, the permission
/// handle, hooks, per-file locks and a place to put metadata. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    info: Arc<CallInfo>,
    env: Arc<Environment>,
    cancel: CancellationToken,
    asker: Arc<dyn Asker>,
    metadata: Arc<Mutex<Map<String, Value>>>,
    discovery: Option<Arc<dyn ToolDiscovery>>,
}

impl ToolContext {
    /// A context for one call.
    pub fn new(info: CallInfo, env: Arc<Environment>, cancel: CancellationToken, asker: Arc<dyn Asker>) -> Self {
        ToolContext { info: Arc::new(info), env, cancel, asker, metadata: Arc::default(), discovery: None }
    }

    /// The same context with the executor's [`ToolDiscovery`] handle, for `tool_search`.
    pub fn with_discovery(mut self, discovery: Arc<dyn ToolDiscovery>) -> Self {
        self.discovery = Some(discovery);
        self
    }

    /// The executor's handle on the deferred tools, if the call runs inside an executor.
    pub fn discovery(&self) -> Option<&Arc<dyn ToolDiscovery>> {
        self.discovery.as_ref()
    }

    /// A context outside any executor, rooted at `root`, that allows every permission request;
    /// for running a tool directly (tests, embedding) without the chain.
    pub fn standalone(root: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        let info = CallInfo {
            session_id: "standalone".into(),
            message_id: "standalone".into(),
            call_id: "standalone".into(),
            agent: "build".into(),
            tool: String::new(),
        };
        ToolContext::new(info, Arc::new(Environment::new(root, data_dir)), CancellationToken::new(), Arc::new(AllowAll))
    }

    /// The same context with another permission handle.
    pub fn with_asker(mut self, asker: Arc<dyn Asker>) -> Self {
        self.asker = asker;
        self
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        &self.info.session_id
    }

    /// The id of the assistant message that made this call.
    pub fn message_id(&self) -> &str {
        &self.info.message_id
    }

    /// The provider's id of this call.
    pub fn call_id(&self) -> &str {
        &self.info.call_id
    }

    /// The agent running this call.
    pub fn agent(&self) -> &str {
        &self.info.agent
    }

    /// The tool being called.
    pub fn tool_name(&self) -> &str {
        &self.info.tool
    }

    /// The ids of this call.
    pub fn info(&self) -> &CallInfo {
        &self.info
    }

    /// The worktree root the tools are confined to.
    pub fn root(&self) -> &Path {
        &self.env.root
    }

    /// The working directory relative paths start from.
    pub fn cwd(&self) -> &Path {
        &self.env.cwd
    }

    /// The data directory (spill files, sessions).
    pub fn data_dir(&self) -> &Path {
        &self.env.data_dir
    }

    /// The shared environment.
    pub fn environment(&self) -> &Arc<Environment> {
        &self.env
    }

    /// Where the file tools read and write text instead of the disk, if anywhere (see
    /// [`FileAccess`]).
    pub fn file_access(&self) -> Option<&Arc<dyn FileAccess>> {
        self.env.file_access.as_ref()
    }

    /// The output budget of the bound stage.
    pub fn output_limits(&self) -> OutputLimits {
        self.env.limits
    }

    /// Cancelled when the user interrupts the turn or the call's time limit passes.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Asks for a permission the tool discovers it needs while running. `Ok` means allowed;
    /// an error carries the message for the model (denied or rejected).
    pub async fn ask(&self, request: PermissionRequest) -> Result<(), ToolError> {
        self.asker.ask(&self.info, request).await
    }

    /// What the rules say about `permission` on `pattern` for this call, without asking (see
    /// [`Asker::decide`]).
    pub fn decide(&self, permission: &str, pattern: &str) -> crate::permission::Action {
        self.asker.decide(&self.info, permission, pattern)
    }

    /// Whether `request` is allowed without asking (the rules or an "always" answer allow every
    /// pattern). Asks no one; see [`Asker::allows`].
    pub fn allows(&self, request: &PermissionRequest) -> bool {
        self.asker.allows(&self.info, request)
    }

    /// Reports files the call changed; returns what post-write hooks have to add to the result
    /// (e.g. diagnostics), if anything.
    pub async fn files_changed(&self, files: &[PathBuf]) -> Option<String> {
        self.env.hooks.run_post_write(self, files).await
    }

    /// Locks one file against concurrent edits from any session of this process.
    pub async fn lock_path(&self, path: &Path) -> PathGuard {
        self.env.path_locks.lock(path).await
    }

    /// A bounded sink for output that may be huge: keeps head and tail in memory and spills
    /// everything to a file once the output outgrows `memory_budget` bytes.
    pub fn output_sink(&self, memory_budget: usize) -> OutputSink {
        OutputSink::with_limits(self.env.spill_dir(), memory_budget, self.env.limits)
    }

    /// Records a metadata entry; it is merged into the call's result even if the call fails.
    pub fn set_metadata(&self, key: impl Into<String>, value: impl Into<Value>) {
        self.metadata.lock().unwrap_or_else(PoisonError::into_inner).insert(key.into(), value.into());
    }

    /// Takes the metadata recorded with [`ToolContext::set_metadata`].
    pub(crate) fn take_metadata(&self) -> Map<String, Value> {
        std::mem::take(&mut *self.metadata.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
