//! The execution chain: one tool call in, one result out.
//!
//! [`Executor::call`] runs the stages in order — resolve, decode, permit, admit, run, convert,
//! bound, record — each a module of its own. Nothing a model sends can crash it: every failure
//! becomes a result with `is_error: true` and a message the model can act on.

pub mod admit;
pub mod bound;
pub mod convert;
pub mod decode;
pub mod permit;
pub mod record;
pub mod resolve;
pub mod run;

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::context::{CallInfo, Environment, ToolContext, ToolDiscovery};
use crate::hooks::Hooks;
use crate::output::{OutputLimits, SpillInfo};
use crate::permission::{Approver, Permission, RejectAll, Rule, Ruleset};
use crate::registry::Registry;
use crate::tool::{Attachment, ToolSpec};
use record::{NoRecorder, Recorder};

/// How long a call may run when its tool sets no limit of its own.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(600);

/// What the model sent as a tool's input.
#[derive(Clone, Debug, PartialEq)]
pub enum CallInput {
    /// Parsed JSON arguments.
    Json(Value),
    /// Raw text: a JSON arguments string as providers send it (possibly invalid), or the raw
    /// input of a freeform tool.
    Raw(String),
}

/// One tool call as a model (or `toolshed call`) made it.
#[derive(Clone, Debug)]
pub struct ToolCall {
    /// The provider's call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments.
    pub input: CallInput,
    /// The assistant message that made the call.
    pub message_id: String,
    /// Cancelled when the user interrupts the turn.
    pub cancel: CancellationToken,
    /// For a model's call, the tools it was sent with the request it answers: it may call only
    /// those. `None` (`toolshed call`, the runtime itself): any registered tool.
    pub offered: Option<std::sync::Arc<[String]>>,
}

impl ToolCall {
    /// A call with parsed JSON arguments.
    pub fn json(id: impl Into<String>, name: impl Into<String>, args: Value) -> Self {
        ToolCall::new(id, name, CallInput::Json(args))
    }

    /// A call with raw text input (an arguments string, or a freeform tool's input).
    pub fn raw(id: impl Into<String>, name: impl Into<String>, text: impl Into<String>) -> Self {
        ToolCall::new(id, name, CallInput::Raw(text.into()))
    }

    fn new(id: impl Into<String>, name: impl Into<String>, input: CallInput) -> Self {
        let id = id.into();
        ToolCall {
            message_id: id.clone(),
            id,
            name: name.into(),
            input,
            cancel: CancellationToken::new(),
            offered: None,
        }
    }

    /// Limits the call to the tools a model was sent (see [`ToolCall::offered`]).
    pub fn with_offered(mut self, offered: std::sync::Arc<[String]>) -> Self {
        self.offered = Some(offered);
        self
    }

    /// Sets the id of the message that made the call.
    pub fn with_message(mut self, message_id: impl Into<String>) -> Self {
        self.message_id = message_id.into();
        self
    }

    /// Ties the call to a cancellation token (the turn's).
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}

/// The result of one call, ready for the conversation.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// The call id.
    pub call_id: String,
    /// The tool name as called.
    pub tool: String,
    /// Whether the call failed (the model is told so).
    pub is_error: bool,
    /// Whether the failure ends the turn.
    pub fatal: bool,
    /// The text the model reads (bounded).
    pub output: String,
    /// A short title, if the tool gave one.
    pub title: Option<String>,
    /// Structured data for programs.
    pub metadata: Map<String, Value>,
    /// Images and other parts.
    pub attachments: Vec<Attachment>,
    /// How long the call took.
    pub duration: Duration,
    /// Where the tool already saved its complete output (consumed by the bound stage).
    pub(crate) spill: Option<SpillInfo>,
    /// The result as its source sent it ([`ToolOutput::passthrough`]); not recorded.
    pub passthrough: Option<Value>,
    /// The stage that refused the call before the tool ran, if one did: a front-end showing
    /// the error to a person words its next step for them (the model keeps `output`).
    pub refused_at: Option<Stage>,
}

/// A stage of the chain that can refuse a call before the tool runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// No tool of that name.
    Resolve,
    /// The arguments do not fit the tool's schema.
    Decode,
    /// The rules deny it, or the approver did not grant it.
    Permit,
}

impl ToolResult {
    /// The JSON object `toolshed call --json` prints.
    pub fn to_json(&self) -> Value {
        let attachments: Vec<Value> = self
            .attachments
            .iter()
            .map(|a| match a {
                Attachment::Image { mime_type, data } => json!({
                    "type": "image",
                    "mime_type": mime_type,
                    "data": base64::engine::general_purpose::STANDARD.encode(data),
                }),
            })
            .collect();
        json!({
            "tool": self.tool,
            "is_error": self.is_error,
            "output": self.output,
            "metadata": self.metadata,
            "attachments": attachments,
        })
    }

    /// The path of the spill file holding the complete output, if the output was cut.
    pub fn spill_path(&self) -> Option<PathBuf> {
        self.metadata.get("output_path").and_then(Value::as_str).map(PathBuf::from)
    }
}

/// Per-session state the chain keeps: the admission lock, approvals, recent calls for the
/// doom-loop check, and tools found through `tool_search`. Cheap to clone (shared).
#[derive(Clone)]
pub struct Session {
    inner: Arc<SessionInner>,
}

struct SessionInner {
    id: String,
    agent: String,
    admission: tokio::sync::RwLock<()>,
    /// Held while the approver is asked about a call of this session: parallel calls' questions
    /// come one after another, each checked against the "always" answers given before it.
    questions: tokio::sync::Mutex<()>,
    state: Mutex<SessionState>,
}

#[derive(Default)]
struct SessionState {
    recent: VecDeque<u64>,
    /// Calls of this session that entered the chain and have not finished.
    in_flight: usize,
    approvals: Ruleset,
    /// What a person approved for one call (once or always): (call id, permission, pattern),
    /// the most recent [`CALL_APPROVALS_KEPT`].
    call_approvals: VecDeque<(String, String, String)>,
    found: HashSet<String>,
    model: Option<String>,
}

/// How many per-call approvals a session keeps (the calls they belong to are long over).
const CALL_APPROVALS_KEPT: usize = 256;

/// How many identical consecutive calls trigger the `doom_loop` permission.
pub const DOOM_LOOP_THRESHOLD: usize = 3;

impl Session {
    /// A new session with this id, run as `agent`.
    pub fn new(id: impl Into<String>, agent: impl Into<String>) -> Self {
        Session {
            inner: Arc::new(SessionInner {
                id: id.into(),
                agent: agent.into(),
                admission: tokio::sync::RwLock::new(()),
                questions: tokio::sync::Mutex::new(()),
                state: Mutex::new(SessionState::default()),
            }),
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The agent whose permissions apply.
    pub fn agent(&self) -> &str {
        &self.inner.agent
    }

    fn state(&self) -> MutexGuard<'_, SessionState> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether an earlier "always" answer covers `permission` on `pattern`.
    pub fn approved(&self, permission: &str, pattern: &str) -> bool {
        self.state().approvals.rules().iter().any(|r| r.matches(permission, pattern))
    }

    /// Remembers an "always" answer.
    pub fn approve(&self, permission: &str, patterns: &[String]) {
        let mut state = self.state();
        for p in patterns {
            state.approvals.push(Rule::new(permission, p.as_str(), crate::permission::Action::Allow));
        }
    }

    /// Remembers that a person approved `permission` on `patterns` for the call `call_id`, so a
    /// tool that checks again during that call (the shell's sandbox deciding what stays
    /// read-only) does not ask a second time.
    pub fn approve_call(&self, call_id: &str, permission: &str, patterns: &[String]) {
        let mut state = self.state();
        for p in patterns {
            state.call_approvals.push_back((call_id.to_string(), permission.to_string(), p.clone()));
        }
        while state.call_approvals.len() > CALL_APPROVALS_KEPT {
            state.call_approvals.pop_front();
        }
    }

    /// Whether a person approved `permission` on `pattern` for the call `call_id`: a pattern
    /// approved then matches it as a rule would, and a directory pattern `dir/*` is covered by
    /// an approved path inside `dir` (the write the person approved needs its directory).
    pub fn approved_in_call(&self, call_id: &str, permission: &str, pattern: &str) -> bool {
        let dir = pattern.strip_suffix('*').filter(|d| d.ends_with('/'));
        self.state().call_approvals.iter().any(|(id, key, approved)| {
            id == call_id
                && key == permission
                && (crate::wildcard::matches(pattern, approved) || dir.is_some_and(|d| approved.starts_with(d)))
        })
    }

    /// Marks a call as running until the returned guard drops; the guard knows whether the call
    /// started while another call of this session was running (it overlaps it).
    pub(crate) fn begin_call(&self) -> InFlight {
        let mut state = self.state();
        let overlapping = state.in_flight > 0;
        state.in_flight += 1;
        InFlight { session: self.clone(), overlapping }
    }

    /// Marks the start of calls issued together (the calls of one model response): while the
    /// returned guard lives, each of them counts as overlapping the others, however quickly
    /// one finishes before the next starts.
    pub fn begin_batch(&self) -> Batch {
        Batch(self.begin_call())
    }

    /// Notes a call's fingerprint; true when it completes a run of identical calls that should
    /// trigger the doom-loop check. Only calls that follow each other count as a run: a call
    /// that overlaps another (parallel calls of one step, concurrent requests of an MCP client)
    /// has no well-defined place in the order, so it ends the run and does not start one.
    pub(crate) fn note_call(&self, fingerprint: u64, overlapping: bool) -> bool {
        let mut state = self.state();
        if overlapping {
            state.recent.clear();
            return false;
        }
        if state.recent.back().is_some_and(|last| *last != fingerprint) {
            state.recent.clear();
        }
        state.recent.push_back(fingerprint);
        if state.recent.len() > DOOM_LOOP_THRESHOLD {
            state.recent.pop_front();
        }
        state.recent.len() == DOOM_LOOP_THRESHOLD
    }

    /// Makes a deferred tool direct for the rest of the session.
    pub fn mark_found(&self, tool: &str) {
        self.state().found.insert(tool.to_string());
    }

    /// The deferred tools this session found.
    pub fn found(&self) -> HashSet<String> {
        self.state().found.clone()
    }

    /// Sets the model the session talks to (`provider/model`); exposure decisions such as
    /// automatic deferral depend on its context size.
    pub fn set_model(&self, model: Option<String>) {
        self.state().model = model;
    }

    /// The model the session talks to, if known.
    pub fn model(&self) -> Option<String> {
        self.state().model.clone()
    }

    pub(crate) fn questions(&self) -> &tokio::sync::Mutex<()> {
        &self.inner.questions
    }

    pub(crate) fn admission(&self) -> &tokio::sync::RwLock<()> {
        &self.inner.admission
    }
}

/// A call in flight (see [`Session::begin_call`]); finishing it is dropping it.
pub(crate) struct InFlight {
    session: Session,
    overlapping: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.session.state();
        state.in_flight = state.in_flight.saturating_sub(1);
    }
}

/// Calls issued together are in flight (see [`Session::begin_batch`]) until this drops.
pub struct Batch(#[allow(dead_code)] InFlight);

/// Runs tool calls through the chain. Shared by every session of a process.
pub struct Executor {
    registry: Arc<Registry>,
    permission: Arc<dyn Permission>,
    approver: Arc<dyn Approver>,
    recorder: Arc<dyn Recorder>,
    env: Arc<Environment>,
    default_time_limit: Duration,
    doom_loop: bool,
}

/// Builds an [`Executor`].
pub struct ExecutorBuilder {
    registry: Arc<Registry>,
    permission: Arc<dyn Permission>,
    approver: Arc<dyn Approver>,
    recorder: Arc<dyn Recorder>,
    env: Environment,
    default_time_limit: Duration,
    doom_loop: bool,
}

impl Executor {
    /// A builder for an executor over `registry`, confined to the worktree `root`. Defaults:
    /// OpenCode's permission defaults, an approver that rejects every `ask`, no recording,
    /// data under [`crate::paths::data_dir`].
    pub fn builder(registry: impl Into<Arc<Registry>>, root: impl Into<PathBuf>) -> ExecutorBuilder {
        ExecutorBuilder {
            registry: registry.into(),
            permission: Arc::new(Ruleset::defaults()),
            approver: Arc::new(RejectAll),
            recorder: Arc::new(NoRecorder),
            env: Environment::new(root, crate::paths::data_dir()),
            default_time_limit: DEFAULT_TIME_LIMIT,
            doom_loop: true,
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The permission rules.
    pub fn permission(&self) -> &Arc<dyn Permission> {
        &self.permission
    }

    /// The shared environment (root, data dir, limits, hooks, locks).
    pub fn environment(&self) -> &Arc<Environment> {
        &self.env
    }

    /// Runs one call through every stage and returns its result; never panics.
    pub async fn call(&self, session: &Session, call: ToolCall) -> ToolResult {
        let started = Instant::now();
        let flight = session.begin_call();
        let waited = Arc::new(permit::Waited::default());
        let ctx = self.context(session, &call, &waited);
        // The time a person takes to answer a question is not the tool's (asked before it runs,
        // or by the tool while it runs).
        let mut asking = Duration::ZERO;
        let mut refused_at = None;
        let outcome = async {
            let Some(entry) = self.registry.get(&call.name) else {
                refused_at = Some(Stage::Resolve);
                if let Some(offered) = &call.offered {
                    return Err(resolve::unknown_among(&call.name, offered).into());
                }
                let (found, model) = (session.found(), session.model());
                let view =
                    crate::registry::View { agent: session.agent(), model: model.as_deref(), found: Some(&found) };
                return Err(resolve::unknown(&self.registry, &call.name, &view).into());
            };
            if let Some(offered) = &call.offered
                && !offered.contains(&call.name)
            {
                // Without what searches found: a tool found by a search in this same response is
                // still one that waits behind `tool_search` for this response.
                let model = session.model();
                let view = crate::registry::View { agent: session.agent(), model: model.as_deref(), found: None };
                refused_at = Some(Stage::Resolve);
                return Err(resolve::not_offered(&self.registry, &call.name, offered, &view).into());
            }
            let args = decode::decode(entry, &call.input).inspect_err(|_| refused_at = Some(Stage::Decode))?;
            // The doom-loop check counts only calls that follow each other (see `note_call`).
            let fingerprint =
                self.doom_loop.then(|| (decode::fingerprint(&call.name, &call.input), flight.overlapping));
            let invocation = run::guard(entry.spec(), || entry.tool.prepare(args))?;
            let requests = run::guard(entry.spec(), || invocation.permissions(&ctx))?;
            let permitting = Instant::now();
            // An interrupt while a question waits ends the wait: the call is interrupted, and
            // an answer that comes later runs nothing.
            let permitted = tokio::select! {
                permitted = permit::permit(self, session, &ctx, entry.spec(), requests, fingerprint) => permitted,
                () = ctx.cancellation().cancelled() => Err(convert::Failure::Cancelled { partial: None }),
            };
            asking = permitting.elapsed();
            permitted.inspect_err(|_| refused_at = Some(Stage::Permit))?;
            let _admission = admit::admit(session, entry.spec()).await;
            let limit = invocation.time_limit().unwrap_or(self.default_time_limit);
            run::run(invocation, ctx.clone(), limit).await
        }
        .await;
        let mut result = convert::convert(&call, outcome, &ctx, started);
        result.refused_at = refused_at;
        result.duration = result.duration.saturating_sub(asking + waited.total());
        bound::bound(&mut result, &self.env);
        record::record(self.recorder.as_ref(), session, &call, &mut result);
        result
    }

    /// The context of `call`; the time its questions wait for answers while it runs is added to
    /// `waited`.
    fn context(&self, session: &Session, call: &ToolCall, waited: &Arc<permit::Waited>) -> ToolContext {
        let info = CallInfo {
            session_id: session.id().to_string(),
            message_id: call.message_id.clone(),
            call_id: call.id.clone(),
            agent: session.agent().to_string(),
            tool: call.name.clone(),
        };
        let gate = permit::Gate::while_running(
            self.permission.clone(),
            self.approver.clone(),
            session.clone(),
            waited.clone(),
        );
        let discovery =
            Discovery { registry: self.registry.clone(), session: session.clone(), agent: info.agent.clone() };
        ToolContext::new(info, self.env.clone(), call.cancel.child_token(), Arc::new(gate))
            .with_discovery(Arc::new(discovery))
    }

    /// An executor with the same rules, approver, recorder, environment (and so the same file
    /// locks) over another registry; for when the tool set changes while calls may be running
    /// (an MCP server's tool list changed).
    pub fn with_registry(&self, registry: impl Into<Arc<Registry>>) -> Executor {
        Executor {
            registry: registry.into(),
            permission: self.permission.clone(),
            approver: self.approver.clone(),
            recorder: self.recorder.clone(),
            env: self.env.clone(),
            default_time_limit: self.default_time_limit,
            doom_loop: self.doom_loop,
        }
    }
}

impl ExecutorBuilder {
    /// Sets the permission rules.
    pub fn permission(mut self, permission: Arc<dyn Permission>) -> Self {
        self.permission = permission;
        self
    }

    /// Sets who answers `ask`.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// Sets where calls are recorded.
    pub fn recorder(mut self, recorder: Arc<dyn Recorder>) -> Self {
        self.recorder = recorder;
        self
    }

    /// Sets the data directory (spill files).
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.env.data_dir = dir.into();
        self
    }

    /// Sets the working directory relative paths start from.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.env.cwd = dir.into();
        self
    }

    /// Sets the output budget of the bound stage.
    pub fn limits(mut self, limits: OutputLimits) -> Self {
        self.env.limits = limits;
        self
    }

    /// Sets the hooks.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.env.hooks = hooks;
        self
    }

    /// Sets where the file tools read and write text instead of the disk (an editor's
    /// buffers); by default, nowhere else.
    pub fn file_access(mut self, files: Arc<dyn crate::file_access::FileAccess>) -> Self {
        self.env.file_access = Some(files);
        self
    }

    /// Turns the `doom_loop` check (the third identical call in a row asks) on or off; on by
    /// default. A front-end whose client runs the loop itself (`mcp serve`) turns it off.
    pub fn doom_loop(mut self, on: bool) -> Self {
        self.doom_loop = on;
        self
    }

    /// Sets the time limit of calls whose tool sets none.
    pub fn default_time_limit(mut self, limit: Duration) -> Self {
        self.default_time_limit = limit;
        self
    }

    /// Builds the executor.
    pub fn build(self) -> Executor {
        Executor {
            registry: self.registry,
            permission: self.permission,
            approver: self.approver,
            recorder: self.recorder,
            env: Arc::new(self.env),
            default_time_limit: self.default_time_limit,
            doom_loop: self.doom_loop,
        }
    }
}

/// The executor's side of [`ToolDiscovery`]: the registry's tools deferred for one call's view.
struct Discovery {
    registry: Arc<Registry>,
    session: Session,
    agent: String,
}

impl Discovery {
    fn with_deferred<T>(&self, f: impl FnOnce(Vec<&crate::registry::Entry>) -> T) -> T {
        let model = self.session.model();
        let view = crate::registry::View { agent: &self.agent, model: model.as_deref(), found: None };
        let exposed = self.registry.exposed(&view);
        f(exposed.into_iter().filter(|v| v.exposure == crate::tool::Exposure::Deferred).map(|v| v.entry).collect())
    }
}

impl ToolDiscovery for Discovery {
    fn deferred_key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        self.with_deferred(|entries| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            for entry in entries {
                entry.spec().name.hash(&mut hasher);
                (Arc::as_ptr(&entry.tool) as *const () as usize).hash(&mut hasher);
            }
            hasher.finish()
        })
    }

    fn deferred(&self) -> Vec<(ToolSpec, Option<String>)> {
        self.with_deferred(|entries| {
            entries
                .into_iter()
                .map(|e| {
                    let server = match &e.source {
                        crate::registry::Source::Mcp(server) => Some(server.clone()),
                        _ => None,
                    };
                    (e.spec().clone(), server)
                })
                .collect()
        })
    }

    fn load(&self, tool: &str) {
        self.session.mark_found(tool);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doom_loop_fires_on_the_third_identical_call_in_a_row() {
        let s = Session::new("s", "build");
        assert!(!s.note_call(1, false));
        assert!(!s.note_call(1, false));
        assert!(s.note_call(1, false));
        assert!(s.note_call(1, false));
        assert!(!s.note_call(2, false));
        assert!(!s.note_call(1, false));
        // An overlapping call ends the run and does not start one.
        assert!(!s.note_call(1, false));
        assert!(!s.note_call(1, true));
        assert!(!s.note_call(1, false));
        assert!(!s.note_call(1, false));
        assert!(s.note_call(1, false));
    }

    #[test]
    fn always_approvals_match_wildcards() {
        let s = Session::new("s", "build");
        assert!(!s.approved("external_directory", "/etc/*"));
        s.approve("external_directory", &["/etc/*".to_string()]);
        assert!(s.approved("external_directory", "/etc/*"));
        assert!(!s.approved("bash", "/etc/*"));
    }
}
