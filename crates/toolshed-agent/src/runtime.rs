//! The agent loop. [`Runtime::prompt`] adds the user's text to the session, then repeats one
//! step until the model answers without tool calls or the step limit is reached: build the
//! system prompt (agent prompt, AGENTS.md, context providers), send the conversation and the
//! tools the agent may see for this model, stream the answer, run every tool call of the
//! response through the execution chain concurrently (admission decides what really runs in
//! parallel), and store each part as it happens.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use futures_util::StreamExt;
use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;
use toolshed_core::agents::{Agent, Agents};
use toolshed_core::config::{AgentMode, Config};
use toolshed_core::exec::{Executor, ExecutorBuilder, Session as CoreSession, ToolCall as CoreCall, ToolResult};
use toolshed_core::permission::{Action, Rule};
use toolshed_core::registry::{Registry, Source, View};
use toolshed_core::tool::{Tool, ToolSpec};
use toolshed_llm::provider::{self, ModelRef};
use toolshed_llm::{Client, EventStream, LlmError, Part, Request, RetryPolicy, Retrying, StreamEvent, ToolCall, Usage};

use crate::context::{self, Budget};
use crate::events::{Event, EventSink};
use crate::providers::{self, ContextProvider};
use crate::store::{Compaction, StepKind, Store, StoreError};
use crate::tasks::{self, Tasks};
use crate::undo::Undo;

pub use crate::context::IMAGE_TOKENS;

/// Why a prompt did not get an answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The provider failed (after retries).
    #[error("{0}")]
    Model(#[from] LlmError),
    /// The session database failed.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// The model kept calling tools past the step limit.
    #[error(
        "the step limit ({0}) was reached before the model finished; raise [session] max_steps or continue with --session"
    )]
    StepLimit(u32),
    /// The user interrupted the turn.
    #[error("interrupted")]
    Interrupted,
    /// A tool failed in a way that ends the turn.
    #[error("a tool failed fatally: {0}")]
    Fatal(String),
    /// The request cannot be served as asked (unknown agent, no model...).
    #[error("{0}")]
    Usage(String),
    /// The next request cannot fit the model's context window, even pruned and compacted.
    #[error("the conversation does not fit the model's context window: {0}")]
    ContextFull(String),
    /// A compaction failed; the session is as it was.
    #[error("compaction failed, the session is unchanged: {0}")]
    Compaction(String),
}

/// Something that streams model responses (a provider client, or a test double).
pub trait ModelClient: Send + Sync {
    /// Sends one request.
    fn stream<'a>(&'a self, request: &'a Request) -> toolshed_core::tool::BoxFuture<'a, Result<EventStream, LlmError>>;

    /// Sends one request, telling `on_retry` before each wait between attempts (clients that do
    /// not retry never call it).
    fn stream_observed<'a>(
        &'a self,
        request: &'a Request,
        on_retry: &'a (dyn Fn(&Retrying) + Send + Sync),
    ) -> toolshed_core::tool::BoxFuture<'a, Result<EventStream, LlmError>> {
        let _ = on_retry;
        self.stream(request)
    }
}

impl ModelClient for Client {
    fn stream<'a>(&'a self, request: &'a Request) -> toolshed_core::tool::BoxFuture<'a, Result<EventStream, LlmError>> {
        Box::pin(Client::stream(self, request))
    }

    fn stream_observed<'a>(
        &'a self,
        request: &'a Request,
        on_retry: &'a (dyn Fn(&Retrying) + Send + Sync),
    ) -> toolshed_core::tool::BoxFuture<'a, Result<EventStream, LlmError>> {
        Box::pin(Client::stream_observed(self, request, on_retry))
    }
}

/// Hands out a client per model id, and knows each model's context window.
pub trait ModelSource: Send + Sync {
    /// The client for `model` (`provider/model`).
    fn client(&self, model: &str) -> Result<Arc<dyn ModelClient>, LlmError>;
    /// The context window of `model` in tokens.
    fn context_window(&self, model: &str) -> u64;
}

/// Clients built from the config and the environment, cached per provider.
pub struct ConfiguredModels {
    config: Config,
    retry: Option<RetryPolicy>,
    cache: Mutex<HashMap<String, Arc<dyn ModelClient>>>,
}

impl ConfiguredModels {
    /// Models from `config`, with the default retry policy.
    pub fn new(config: Config) -> Self {
        ConfiguredModels { config, retry: None, cache: Mutex::default() }
    }

    /// Uses `retry` for every client.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }
}

impl ModelSource for ConfiguredModels {
    fn client(&self, model: &str) -> Result<Arc<dyn ModelClient>, LlmError> {
        let model = ModelRef::parse(model)?;
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cache.get(&model.provider) {
            return Ok(c.clone());
        }
        let settings = provider::resolve(&self.config, &model, &provider::process_env)?;
        let mut client = Client::new(settings)?;
        if let Some(retry) = self.retry {
            client = client.with_retry(retry);
        }
        let client: Arc<dyn ModelClient> = Arc::new(client);
        cache.insert(model.provider.clone(), client.clone());
        Ok(client)
    }

    fn context_window(&self, model: &str) -> u64 {
        ModelRef::parse(model).map_or(provider::DEFAULT_CONTEXT, |m| provider::context_window(&self.config, &m))
    }
}

/// Limits and inputs of the loop.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Most model steps per prompt.
    pub max_steps: u32,
    /// How deep sub-agents may nest (1: the main agent may start sub-agents, they may not).
    pub max_depth: u32,
    /// The worktree.
    pub root: PathBuf,
    /// The working directory.
    pub cwd: PathBuf,
    /// The share of the context window a request may reach before old tool outputs are
    /// pruned from what is sent and, if that is not enough, the history is summarised.
    pub compact_at: f64,
}

/// A session being run in this process.
pub struct LiveSession {
    /// The session id.
    pub id: String,
    /// The session that started it as a task.
    pub parent_id: Option<String>,
    /// 0 for a user's session, 1 for its sub-agents, ...
    pub depth: u32,
    state: Mutex<LiveState>,
}

struct LiveState {
    agent: String,
    /// The model (`provider/model`).
    model: String,
    core: CoreSession,
    pending_switch: Option<String>,
}

impl LiveSession {
    fn new(id: String, parent_id: Option<String>, depth: u32, model: String, agent: String) -> Self {
        let core = CoreSession::new(id.clone(), agent.clone());
        core.set_model(Some(model.clone()));
        LiveSession { id, parent_id, depth, state: Mutex::new(LiveState { agent, model, core, pending_switch: None }) }
    }

    /// The model the session talks to (`provider/model`).
    pub fn model(&self) -> String {
        self.state().model.clone()
    }

    fn set_model(&self, model: &str) {
        let mut s = self.state();
        s.model = model.to_string();
        s.core.set_model(Some(model.to_string()));
    }

    fn state(&self) -> MutexGuard<'_, LiveState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The agent the session runs as now.
    pub fn agent(&self) -> String {
        self.state().agent.clone()
    }

    /// The chain's session (approvals, admission, found tools) for the current agent.
    pub fn core(&self) -> CoreSession {
        self.state().core.clone()
    }

    /// Asks for a switch to `agent` once the current step's calls are done.
    pub fn request_switch(&self, agent: &str) {
        self.state().pending_switch = Some(agent.to_string());
    }

    fn take_switch(&self) -> Option<String> {
        self.state().pending_switch.take()
    }

    /// Runs as `agent` from now on; tools found through tool_search stay found.
    fn set_agent(&self, agent: &str) -> String {
        let mut s = self.state();
        let core = CoreSession::new(self.id.clone(), agent.to_string());
        core.set_model(Some(s.model.clone()));
        for tool in s.core.found() {
            core.mark_found(&tool);
        }
        s.core = core;
        std::mem::replace(&mut s.agent, agent.to_string())
    }
}

/// A late-bound reference to the runtime, for the runtime's own tools (which live in the
/// registry the runtime owns).
#[derive(Clone, Default)]
pub struct RuntimeHandle(Arc<OnceLock<Weak<Runtime>>>);

impl RuntimeHandle {
    /// The runtime, while it lives.
    pub fn get(&self) -> Option<Arc<Runtime>> {
        self.0.get().and_then(Weak::upgrade)
    }
}

/// Everything a process needs to run agents: the chain, the store, the models, the agents.
pub struct Runtime {
    executor: Executor,
    store: Arc<Store>,
    models: Arc<dyn ModelSource>,
    agents: Arc<Agents>,
    settings: Settings,
    events: EventSink,
    providers: Vec<Arc<dyn ContextProvider>>,
    sessions: Mutex<HashMap<String, Arc<LiveSession>>>,
    pub(crate) tasks: Tasks,
    undo: Option<Arc<Undo>>,
}

/// Builds a [`Runtime`].
pub struct RuntimeBuilder {
    registry: Registry,
    store: Arc<Store>,
    models: Arc<dyn ModelSource>,
    agents: Arc<Agents>,
    settings: Settings,
    events: EventSink,
    providers: Vec<Arc<dyn ContextProvider>>,
    undo: Option<Arc<Undo>>,
}

impl Runtime {
    /// A builder. `registry` holds the tools (the runtime adds its own: todo tools over the
    /// store, `task` and its background companions, `plan_exit`).
    pub fn builder(
        registry: Registry,
        store: Arc<Store>,
        models: Arc<dyn ModelSource>,
        agents: Arc<Agents>,
        settings: Settings,
    ) -> RuntimeBuilder {
        RuntimeBuilder {
            registry,
            store,
            models,
            agents,
            settings,
            events: crate::events::no_events(),
            providers: Vec::new(),
            undo: None,
        }
    }

    /// The session store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The execution chain.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The agents (profiles and rules).
    pub fn agents(&self) -> &Agents {
        &self.agents
    }

    /// The loop's settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Undo's snapshots, when the runtime takes them.
    pub fn undo(&self) -> Option<&Arc<Undo>> {
        self.undo.as_ref()
    }

    /// A snapshot for undo before a user's session (not a sub-agent's: its changes belong to
    /// its parent) runs tool calls; `None` when undo is off (said once) or failed (said).
    pub(crate) async fn snapshot_for(&self, session: &LiveSession) -> Option<String> {
        let undo = self.undo.as_ref().filter(|_| session.depth == 0)?;
        if let Some(why) = undo.warn_once() {
            self.emit(Event::Notice { session_id: session.id.clone(), message: why });
        }
        let snapshot = undo.snapshot();
        tokio::pin!(snapshot);
        // A first snapshot of a large worktree reads every file: say so when it takes a while.
        let taken = tokio::select! {
            taken = &mut snapshot => taken,
            () = tokio::time::sleep(std::time::Duration::from_secs(2)) => {
                self.emit(Event::Notice {
                    session_id: session.id.clone(),
                    message: "undo: snapshotting the worktree before the tool calls run (a worktree's first snapshot reads every file; later ones are incremental)…".into(),
                });
                snapshot.await
            }
        };
        match taken {
            Ok(id) => Some(id),
            Err(e) => {
                if let Some(why) = undo.warn_once() {
                    self.emit(Event::Notice { session_id: session.id.clone(), message: why });
                } else if undo.shadow().is_ok() {
                    self.emit(Event::Notice { session_id: session.id.clone(), message: format!("undo: {e}") });
                }
                None
            }
        }
    }

    /// Records what step `step` of `session_id` changed since `before`.
    pub(crate) async fn record_step(&self, session_id: &str, step: u32, before: &str) {
        let Some(undo) = &self.undo else { return };
        if let Err(e) = undo.record(&self.store, session_id, step, before).await {
            self.emit(Event::Notice { session_id: session_id.to_string(), message: format!("undo: {e}") });
        }
    }

    /// Records what a background task of `parent` changed since `before` as a step of the
    /// parent (none when it changed nothing).
    pub(crate) async fn record_task_step(&self, parent: &str, before: &str) {
        let Some(undo) = &self.undo else { return };
        match undo.snapshot().await {
            Ok(now) if now != before => match self.store.begin_step(parent, StepKind::Task) {
                Ok(step) => self.record_step(parent, step, before).await,
                Err(e) => self.emit(Event::Notice { session_id: parent.to_string(), message: format!("undo: {e}") }),
            },
            Ok(_) => {}
            Err(e) => self.emit(Event::Notice { session_id: parent.to_string(), message: format!("undo: {e}") }),
        }
    }

    pub(crate) fn emit(&self, event: Event) {
        (self.events)(&event);
    }

    /// The live session `id`, if this process runs it.
    pub fn live(&self, id: &str) -> Option<Arc<LiveSession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).get(id).cloned()
    }

    fn keep(&self, session: Arc<LiveSession>) -> Arc<LiveSession> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner).insert(session.id.clone(), session.clone());
        session
    }

    /// Starts a new session as `agent` on `model`.
    pub fn create_session(
        &self,
        agent: &str,
        model: &str,
        parent: Option<&LiveSession>,
    ) -> Result<Arc<LiveSession>, AgentError> {
        if self.agents.get(agent).is_none() {
            let known: Vec<&str> = self.agents.all().map(|a| a.name.as_str()).collect();
            return Err(AgentError::Usage(format!("unknown agent `{agent}`; known agents: {}", known.join(", "))));
        }
        let info = self.store.create_session(parent.map(|p| p.id.as_str()), agent, Some(model), &self.settings.root)?;
        let depth = parent.map_or(0, |p| p.depth + 1);
        let live =
            LiveSession::new(info.id.clone(), info.parent_id.clone(), depth, model.to_string(), agent.to_string());
        self.emit(Event::SessionStart {
            session_id: info.id,
            parent_id: info.parent_id,
            agent: agent.to_string(),
            model: model.to_string(),
        });
        Ok(self.keep(Arc::new(live)))
    }

    /// Resumes a stored session: calls that never finished are marked interrupted and
    /// background tasks that were running are marked lost. `model` overrides the stored model;
    /// `agent` the stored agent.
    pub fn resume_session(
        &self,
        id: &str,
        model: Option<&str>,
        agent: Option<&str>,
    ) -> Result<Arc<LiveSession>, AgentError> {
        if let Some(live) = self.live(id) {
            return Ok(live);
        }
        let info = self.store.session(id)?;
        self.store.mark_interrupted(id)?;
        self.store.mark_tasks_lost(id)?;
        let model = model.map(str::to_string).or(info.model.clone()).ok_or_else(|| {
            AgentError::Usage(format!("session {id} has no model stored; pass --model PROVIDER/MODEL"))
        })?;
        let agent = agent.unwrap_or(&info.agent).to_string();
        if agent != info.agent {
            self.store.set_agent(id, &agent)?;
        }
        if info.model.as_deref() != Some(model.as_str()) {
            self.store.set_model(id, &model)?;
        }
        let depth = if info.parent_id.is_some() { 1 } else { 0 };
        let live = LiveSession::new(info.id.clone(), info.parent_id.clone(), depth, model.clone(), agent.clone());
        // What earlier searches found stays in the list, as it did before the session stopped.
        let core = live.core();
        for tool in self.store.found_tools(id)? {
            core.mark_found(&tool);
        }
        self.emit(Event::SessionStart { session_id: info.id, parent_id: info.parent_id, agent, model });
        Ok(self.keep(Arc::new(live)))
    }

    /// Talks to `model` (`provider/model`) from the session's next request on; the session
    /// keeps it when resumed. The caller checks that the provider is reachable.
    pub fn switch_model(&self, session: &LiveSession, model: &str) -> Result<(), AgentError> {
        ModelRef::parse(model).map_err(|e| AgentError::Usage(e.to_string()))?;
        self.store.set_model(&session.id, model)?;
        session.set_model(model);
        Ok(())
    }

    /// Switches a session to another primary agent (plan ↔ build).
    pub fn switch_agent(&self, session: &LiveSession, to: &str) -> Result<(), AgentError> {
        match self.agents.get(to) {
            Some(p) if is_primary(p) => {}
            _ => {
                let primary: Vec<&str> = self.agents.all().filter(|a| is_primary(a)).map(|a| a.name.as_str()).collect();
                return Err(AgentError::Usage(format!(
                    "`{to}` is not an agent you can switch to; primary agents: {}",
                    primary.join(", ")
                )));
            }
        }
        self.store.set_agent(&session.id, to)?;
        let from = session.set_agent(to);
        if from != to {
            self.emit(Event::AgentSwitch { session_id: session.id.clone(), from, to: to.to_string() });
        }
        Ok(())
    }

    /// The tools `agent` is sent on `model` this step.
    pub fn visible_tools(&self, session: &LiveSession) -> Vec<ToolSpec> {
        let agent = session.agent();
        let found = session.core().found();
        let model = session.model();
        let view = View { agent: &agent, model: Some(&model), found: Some(&found) };
        let nested_too_deep = session.depth >= self.settings.max_depth;
        let has_tasks =
            self.tasks.started_by(&session.id) || self.store.tasks(&session.id).is_ok_and(|stored| !stored.is_empty());
        self.executor
            .registry()
            .direct(&view)
            .iter()
            .map(toolshed_core::registry::Visible::spec)
            .filter(|spec| !(nested_too_deep && tasks::TASK_TOOLS.contains(&spec.name.as_str())))
            .filter(|spec| tasks::sent(&spec.name, has_tasks))
            .cloned()
            .collect()
    }

    /// The system prompt for the session's next step.
    pub fn system_prompt(&self, session: &LiveSession) -> String {
        let agent = session.agent();
        let mut sections = vec![providers::base_prompt(&self.settings)];
        if let Some(prompt) = self.agents.get(&agent).and_then(|p| p.prompt.clone()) {
            sections.push(prompt);
        }
        for provider in &self.providers {
            if let Some(text) = provider.instructions(self, session) {
                sections.push(text);
            }
        }
        sections.join("\n\n")
    }

    /// Answers one user prompt: runs steps until the model stops calling tools. Returns the
    /// final answer. Cancelling `cancel` interrupts the turn: calls in flight are stopped and
    /// recorded as interrupted, and the session stays resumable.
    pub async fn prompt(
        &self,
        session: &Arc<LiveSession>,
        text: &str,
        cancel: &CancellationToken,
    ) -> Result<String, AgentError> {
        self.prompt_with(session, &[Part::Text { text: text.to_string() }], cancel).await
    }

    /// [`Runtime::prompt`] of a prompt made of text and images the person attached, in order
    /// (only [`Part::Text`] and [`Part::Image`]). An image a model would not take (see
    /// [`crate::store::prompt_image`]) is refused before anything is stored.
    pub async fn prompt_with(
        &self,
        session: &Arc<LiveSession>,
        prompt: &[Part],
        cancel: &CancellationToken,
    ) -> Result<String, AgentError> {
        // Each image as checked: refused, or labelled with the type its bytes say.
        let prompt = prompt
            .iter()
            .map(|part| match part {
                Part::Text { .. } => Ok(part.clone()),
                Part::Image(image) => crate::store::prompt_image(&image.media_type, &image.data_base64)
                    .map(Part::Image)
                    .map_err(AgentError::Usage),
                _ => Err(AgentError::Usage("a prompt holds only text and images".to_string())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let result = self.prompt_inner(session, &prompt, cancel).await;
        match &result {
            Ok(text) => self.emit(Event::Finish { session_id: session.id.clone(), text: text.clone() }),
            Err(e) => {
                // Calls the model asked for that never ran (the turn ended first) are closed
                // now, so the stored session reads the same as the model will see it.
                if let Err(store) = self.store.mark_interrupted(&session.id) {
                    self.emit(Event::Error { session_id: session.id.clone(), message: store.to_string() });
                }
                self.emit(Event::Error { session_id: session.id.clone(), message: e.to_string() });
            }
        }
        result
    }

    async fn prompt_inner(
        &self,
        session: &Arc<LiveSession>,
        prompt: &[Part],
        cancel: &CancellationToken,
    ) -> Result<String, AgentError> {
        let text: String = prompt
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        self.store.set_title_once(&session.id, &text)?;
        let user = self.store.add_message(&session.id, toolshed_llm::Role::User, None, None)?;
        for part in prompt {
            match part {
                Part::Image(image) => self.store.add_image(&session.id, &user, image)?,
                Part::Text { text } => self.store.add_text(&session.id, &user, text)?,
                _ => {}
            }
        }
        for _ in 1..=self.settings.max_steps {
            if cancel.is_cancelled() {
                return Err(AgentError::Interrupted);
            }
            if let Some(to) = session.take_switch() {
                self.switch_agent(session, &to)?;
            }
            // Numbered across the session (every prompt), as `session show` and undo count.
            let step = self.store.begin_step(&session.id, StepKind::Model)?;
            let (answer, calls, message, offered) = match self.step(session, step, cancel).await {
                // The provider counted more than the estimate: compact and try once more.
                Err(AgentError::Model(LlmError::ContextOverflow { message })) => {
                    self.compact(session, Trigger::Overflow, cancel).await.map_err(|e| {
                        AgentError::Usage(format!("the provider refused the request as too long ({message}), and {e}"))
                    })?;
                    self.step(session, step, cancel).await?
                }
                other => other?,
            };
            self.store.link_step(&session.id, step, &message)?;
            if calls.is_empty() {
                return Ok(answer);
            }
            let before = self.snapshot_for(session).await;
            if let (Some(before), Some(undo)) = (&before, &self.undo)
                && let Err(e) = undo.begin(&self.store, &session.id, step, before)
            {
                self.emit(Event::Notice { session_id: session.id.clone(), message: format!("undo: {e}") });
            }
            let results = self.run_calls(session, &message, &calls, &offered, cancel).await;
            if calls.iter().any(|c| c.name == toolshed_core::search::TOOL_SEARCH) {
                let found: Vec<String> = session.core().found().into_iter().collect();
                self.store.set_found_tools(&session.id, &found)?;
            }
            if let Some(before) = before {
                self.record_step(&session.id, step, &before).await;
            }
            if cancel.is_cancelled() {
                return Err(AgentError::Interrupted);
            }
            if let Some(fatal) = results.iter().find(|r| r.fatal) {
                return Err(AgentError::Fatal(fatal.output.clone()));
            }
        }
        Err(AgentError::StepLimit(self.settings.max_steps))
    }

    /// One model step: send, stream, store. Returns the answer text, the tool calls, the
    /// message id, and the names of the tools the model was sent (the only ones it may call).
    async fn step(
        &self,
        session: &LiveSession,
        step: u32,
        cancel: &CancellationToken,
    ) -> Result<(String, Vec<ToolCall>, String, Arc<[String]>), AgentError> {
        let agent = session.agent();
        let client = self.models.client(&session.model())?;
        let (request, estimate) = self.prepare(session, cancel).await?;
        let offered: Arc<[String]> = request.tools.iter().map(|t| t.name.clone()).collect();
        self.emit(Event::StepStart { session_id: session.id.clone(), step });
        let message =
            self.store.add_message(&session.id, toolshed_llm::Role::Assistant, Some(&agent), Some(&session.model()))?;
        self.store.set_request_tokens(&message, estimate)?;
        let mut streamed = Streamed::default();
        let outcome = tokio::select! {
            r = self.stream_step(client.as_ref(), &request, session, &message, &mut streamed) => r,
            () = cancel.cancelled() => Err(AgentError::Interrupted),
        };
        if !streamed.pending_text.is_empty() {
            self.store.add_text(&session.id, &message, &streamed.pending_text)?;
        }
        match outcome {
            Ok((stop, usage)) => {
                let stop = format!("{stop:?}").to_ascii_lowercase();
                self.store.finish_message(&message, Some(usage), Some(&stop), None)?;
                self.emit(Event::StepFinish {
                    session_id: session.id.clone(),
                    step,
                    stop,
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cached_input_tokens: usage.cached_input_tokens,
                    cache_write_tokens: usage.cache_write_tokens,
                    reasoning_tokens: usage.reasoning_tokens,
                    context_window: self.models.context_window(&session.model()),
                });
                Ok((streamed.answer, streamed.calls, message, offered))
            }
            Err(e) => {
                self.store.finish_message(&message, None, None, Some(&e.to_string()))?;
                Err(e)
            }
        }
    }

    async fn stream_step(
        &self,
        client: &dyn ModelClient,
        request: &Request,
        session: &LiveSession,
        message: &str,
        out: &mut Streamed,
    ) -> Result<(toolshed_llm::StopReason, Usage), AgentError> {
        let on_retry = |r: &Retrying| {
            self.emit(Event::Retry {
                session_id: session.id.clone(),
                attempt: r.attempt,
                wait_ms: u64::try_from(r.wait.as_millis()).unwrap_or(u64::MAX),
                reason: r.reason.clone(),
            });
        };
        let mut stream = client.stream_observed(request, &on_retry).await?;
        while let Some(event) = stream.next().await {
            match event? {
                StreamEvent::TextDelta(text) => {
                    out.answer.push_str(&text);
                    out.pending_text.push_str(&text);
                    self.emit(Event::Text { session_id: session.id.clone(), text });
                }
                StreamEvent::ToolCall(mut call) => {
                    if !out.pending_text.is_empty() {
                        self.store.add_text(&session.id, message, &std::mem::take(&mut out.pending_text))?;
                    }
                    // Ids pair calls with results in the session: a missing one, or one used
                    // before (servers that number calls per response, or repeat an id), gets a
                    // fresh id, so no call overwrites or takes the result of another.
                    if call.id.trim().is_empty() {
                        call.id = crate::store::new_id("call");
                    }
                    // Recorded, shown and summarised under the tool's own parameter names
                    // (`file_path` for a model's `path`), as the call runs.
                    if let Some(args) = self
                        .executor
                        .registry()
                        .get(&call.name)
                        .and_then(|entry| toolshed_core::exec::decode::canonical_arguments(entry, &call.arguments))
                    {
                        call.arguments = args;
                    }
                    while !self.store.add_tool_call(&session.id, message, &call)? {
                        call.id = crate::store::new_id("call");
                    }
                    out.calls.push(call);
                }
                StreamEvent::Reasoning(mut reasoning) => {
                    reasoning.model.clone_from(&session.model());
                    // Kept in arrival order: it is replayed before the items it led to.
                    if !out.pending_text.is_empty() {
                        self.store.add_text(&session.id, message, &std::mem::take(&mut out.pending_text))?;
                    }
                    self.store.add_reasoning(&session.id, message, &reasoning)?;
                }
                StreamEvent::Finished { stop, usage } => return Ok((stop, usage)),
                StreamEvent::ReasoningDelta(text) => {
                    self.emit(Event::Reasoning { session_id: session.id.clone(), text });
                }
                StreamEvent::ToolCallStarted { .. } => {}
            }
        }
        Err(AgentError::Model(LlmError::Stream {
            provider: session.model(),
            message: "the stream ended without a finish event".into(),
        }))
    }

    /// The sizes that follow from the session's model's context window.
    pub fn budget(&self, session: &LiveSession) -> Budget {
        Budget { window: self.models.context_window(&session.model()), compact_at: self.settings.compact_at }
    }

    /// The request for the session's next step and its estimated size (4 bytes a token). When
    /// the size the provider will count (the estimate calibrated by the last response's usage)
    /// would pass `compact_at` of the window, old tool outputs are pruned from what is sent;
    /// if that is not enough, the history is compacted (once). A request that still cannot fit
    /// the window is refused with what to do.
    async fn prepare(&self, session: &LiveSession, cancel: &CancellationToken) -> Result<(Request, u64), AgentError> {
        let budget = self.budget(session);
        let mut compacted = false;
        loop {
            let stored = self.store.messages(&session.id)?;
            let compaction = self.store.compactions(&session.id)?.pop();
            let pruned_through = self.store.pruned_through(&session.id)?;
            let request =
                self.request(session, context::view(&stored, compaction.as_ref(), pruned_through, &budget))?;
            let estimate = context::estimate_request(&request);
            let ratio = context::calibration(&stored);
            let projected = context::project(estimate, ratio);
            if projected <= budget.trigger() {
                return Ok((request, estimate));
            }
            let from = compaction.as_ref().map_or(i64::MIN, |c| c.kept_from);
            let fixed = context::project(context::estimate(&request.system, &[], &request.tools), ratio);
            let (protected, minimum) = budget.pruning(fixed);
            let sizes = ((protected as f64 / ratio) as u64, (minimum as f64 / ratio) as u64);
            if let Some((seq, dropped)) = context::prune_point(&stored, from, pruned_through, sizes) {
                self.store.set_pruned_through(&session.id, seq)?;
                self.emit(Event::Pruned {
                    session_id: session.id.clone(),
                    tokens_dropped: dropped,
                    tokens_before: projected,
                });
                continue;
            }
            let mut failed = String::new();
            if !compacted {
                compacted = true;
                match self.compact(session, Trigger::Auto, cancel).await {
                    Ok(_) => continue,
                    // E.g. nothing left to summarise: what is sent is as small as it gets.
                    Err(AgentError::Compaction(why)) => failed = format!("; summarising failed: {why}"),
                    Err(e) => return Err(e),
                }
            }
            if projected <= budget.window {
                return Ok((request, estimate));
            }
            let summarised = if compacted && failed.is_empty() { " and the history summarised" } else { "" };
            return Err(AgentError::ContextFull(format!(
                "about {projected} tokens against a window of {} for {}, even with old tool outputs pruned{summarised} (the system prompt and tool definitions alone take about {fixed}{failed}); set the real window in [provider.NAME.models.ID] context, use a model with a larger one, or start a new session",
                budget.window,
                session.model()
            )));
        }
    }

    /// A request of `messages` with the session's system prompt and tools.
    fn request(&self, session: &LiveSession, messages: Vec<toolshed_llm::Message>) -> Result<Request, AgentError> {
        let model = ModelRef::parse(&session.model())?;
        Ok(Request {
            model: model.model,
            system: self.system_prompt(session),
            messages: history_for(messages, &session.model()),
            tools: self.visible_tools(session),
            max_tokens: None,
        })
    }

    /// The files the session changed, for a compaction: the diff stat of its snapshots when
    /// undo has them (a user's session), else what its edit tools' calls name.
    fn files_changed(&self, session: &LiveSession, stored: &[crate::store::StoredMessage]) -> String {
        let stat = self.undo().filter(|_| session.depth == 0).and_then(|undo| {
            match crate::undo::session_diff(&self.store, undo, &session.id, None, true) {
                Ok(crate::undo::SessionDiff::Changed(stat)) => Some(stat),
                _ => None,
            }
        });
        let Some(stat) = stat else { return context::files_list(stored) };
        // The summary line, and the last files when there are many.
        let lines: Vec<&str> = stat.lines().collect();
        let (files, summary) = lines.split_at(lines.len().saturating_sub(1));
        let shown = files.len().min(context::MAX_FILES_LISTED);
        let mut out = String::new();
        if shown < files.len() {
            out.push_str(&format!("({} earlier ones not listed)\n", files.len() - shown));
        }
        for line in files[files.len() - shown..].iter().chain(summary) {
            out.push_str(line.trim_start());
            out.push('\n');
        }
        out
    }

    /// Summarises the session's older history: one request to the session's model, without
    /// tools. What is sent from then on is the user's messages, the summary and the files
    /// changed, followed by the most recent messages verbatim; the stored messages stay as
    /// they were. A compaction that fails (error, empty or overlong summary, nothing to
    /// summarise) stores nothing.
    pub async fn compact(
        &self,
        session: &LiveSession,
        trigger: Trigger,
        cancel: &CancellationToken,
    ) -> Result<Compaction, AgentError> {
        let fail = |why: String| AgentError::Compaction(why);
        let budget = self.budget(session);
        let stored = self.store.messages(&session.id)?;
        let previous = self.store.compactions(&session.id)?.pop();
        let pruned_through = self.store.pruned_through(&session.id)?;
        let ratio = context::calibration(&stored);
        let before = {
            let request = self.request(session, context::view(&stored, previous.as_ref(), pruned_through, &budget))?;
            context::project(context::estimate_request(&request), ratio)
        };
        let from = previous.as_ref().map_or(i64::MIN, |c| c.kept_from);
        // The tail kept verbatim gets half of what the fixed part (system prompt, tools, the
        // block with the user's messages and the summary) leaves under the trigger; a
        // provider's overflow means the estimate ran short, so then a quarter.
        let bare = self.request(session, Vec::new())?;
        let fixed =
            context::estimate(&bare.system, &[], &bare.tools) + budget.user_messages_tokens() + budget.summary_tokens();
        let left = budget.trigger().saturating_sub(context::project(fixed, ratio));
        // Asked for by a person, it summarises everything: the block quotes their messages.
        let room = match trigger {
            Trigger::Auto => left / 2,
            Trigger::Overflow => left / 4,
            Trigger::Manual => 0,
        };
        let room = (room as f64 / ratio) as u64;
        let kept_from = context::tail_start(&stored, from, pruned_through, room)
            .ok_or_else(|| fail("there is nothing to summarise yet".into()))?;
        let range: Vec<_> = stored.iter().filter(|m| m.seq >= from && m.seq < kept_from).cloned().collect();
        // The user's messages are kept as they are: a range of nothing else (an assistant
        // message that failed before anything arrived has no parts) has nothing to add.
        if !range.iter().any(|m| m.role == toolshed_llm::Role::Assistant && !m.parts.is_empty()) {
            return Err(fail("there is nothing to summarise yet".into()));
        }
        let model = ModelRef::parse(&session.model())?;
        let prior = previous.as_ref().map(|c| c.summary.as_str());
        let users = context::user_messages(&stored, kept_from, &budget);
        let (request, _left_out) = context::summary_request(&model.model, prior, &users, &range, &budget, ratio)
            .ok_or_else(|| {
                fail(format!("even the summary request does not fit the context window of {}", session.model()))
            })?;
        let client = self.models.client(&session.model())?;
        let response = tokio::select! {
            r = async { toolshed_llm::collect(client.stream(&request).await?, |_| {}).await } => r,
            () = cancel.cancelled() => return Err(AgentError::Interrupted),
        }
        .map_err(|e| fail(format!("the summary request failed: {e}")))?;
        let summary = response.message.text();
        if summary.trim().is_empty() {
            return Err(fail("the model answered the summary request with no text".into()));
        }
        let summary_tokens = context::project(context::tokens_of(summary.len()), ratio);
        if response.stop == toolshed_llm::StopReason::MaxTokens || summary_tokens > budget.summary_tokens() * 5 / 4 {
            return Err(fail(format!(
                "the summary is too long (about {summary_tokens} tokens; at most {} fit)",
                budget.summary_tokens()
            )));
        }
        let summarised = stored.iter().filter(|m| m.seq < kept_from).count() as i64;
        let mut compaction = Compaction {
            kind: crate::store::COMPACTION,
            id: crate::store::new_id("cmp"),
            session_id: session.id.clone(),
            created_at: crate::store::now_ms(),
            trigger: trigger.as_str().to_string(),
            kept_from,
            summarised,
            summary,
            files: self.files_changed(session, &stored),
            model: Some(session.model()),
            tokens_before: before,
            tokens_after: 0,
            usage: Some(response.usage),
        };
        let after = self.request(session, context::view(&stored, Some(&compaction), pruned_through, &budget))?;
        compaction.tokens_after = context::project(context::estimate_request(&after), ratio);
        self.store.add_compaction(&compaction)?;
        self.emit(Event::Compaction {
            session_id: session.id.clone(),
            trigger: compaction.trigger.clone(),
            summarised,
            tokens_before: before,
            tokens_after: compaction.tokens_after,
            input_tokens: response.usage.input_tokens,
            output_tokens: response.usage.output_tokens,
        });
        Ok(compaction)
    }

    /// Runs the calls of one response through the chain, concurrently; results in call order.
    /// The model may call only what it was sent for that response (`offered`): a tool a search
    /// finds is sent, and callable, from the next response on.
    async fn run_calls(
        &self,
        session: &LiveSession,
        message: &str,
        calls: &[ToolCall],
        offered: &Arc<[String]>,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let core = session.core();
        // The calls of one response are parallel: none of them follows another in a row.
        let _batch = (calls.len() > 1).then(|| core.begin_batch());
        let runs = calls.iter().map(|call| {
            let core = core.clone();
            let offered = offered.clone();
            async move {
                if let Err(e) = self.store.set_running(&session.id, &call.id) {
                    self.emit(Event::Error { session_id: session.id.clone(), message: e.to_string() });
                }
                self.emit(Event::ToolCall {
                    session_id: session.id.clone(),
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    input: call.arguments.clone(),
                });
                let core_call = CoreCall::raw(&call.id, &call.name, &call.arguments)
                    .with_message(message)
                    .with_cancel(cancel.clone())
                    .with_offered(offered);
                let result = self.executor.call(&core, core_call).await;
                self.emit(Event::ToolResult {
                    session_id: session.id.clone(),
                    call_id: result.call_id.clone(),
                    tool: result.tool.clone(),
                    is_error: result.is_error,
                    output: result.output.clone(),
                    title: result.title.clone(),
                    duration_ms: result.duration.as_millis() as u64,
                    metadata: result.metadata.clone(),
                });
                result
            }
        });
        join_all(runs).await
    }
}

/// The stored history as `model` is sent it: reasoning items other models produced are left
/// out (their encrypted content is readable only by the model, and account, that wrote it).
fn history_for(mut messages: Vec<toolshed_llm::Message>, model: &str) -> Vec<toolshed_llm::Message> {
    for message in &mut messages {
        message.parts.retain(|p| !matches!(p, Part::Reasoning(r) if r.model != model));
    }
    messages
}

/// What started a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The next request would have passed `[session] compact_at` of the window.
    Auto,
    /// The provider refused a request as longer than the window.
    Overflow,
    /// Someone asked (`/compact`, `toolshed session compact`).
    Manual,
}

impl Trigger {
    /// `auto`, `overflow` or `manual`.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Overflow => "overflow",
            Trigger::Manual => "manual",
        }
    }
}

#[derive(Default)]
struct Streamed {
    answer: String,
    pending_text: String,
    calls: Vec<ToolCall>,
}

impl RuntimeBuilder {
    /// Takes snapshots for undo around the steps of users' sessions that run tool calls.
    pub fn undo(mut self, undo: Undo) -> Self {
        self.undo = Some(Arc::new(undo));
        self
    }

    /// Sets where events go.
    pub fn events(mut self, events: EventSink) -> Self {
        self.events = events;
        self
    }

    /// Adds a context provider after the built-in ones.
    pub fn provider(mut self, provider: Arc<dyn ContextProvider>) -> Self {
        self.providers.push(provider);
        self
    }

    /// Builds the runtime; `configure` sets the executor's permission, approver, limits and
    /// directories (the runtime sets the recorder: the store).
    pub fn build(mut self, configure: impl FnOnce(ExecutorBuilder) -> ExecutorBuilder) -> Arc<Runtime> {
        let handle = RuntimeHandle::default();
        for tool in tasks::runtime_tools(handle.clone()) {
            self.registry.register_arc(tool, Source::Runtime);
        }
        let executor = configure(Executor::builder(self.registry, self.settings.root.clone()))
            .recorder(self.store.clone())
            .build();
        let mut providers = providers::builtin_providers(&self.settings.root, &self.settings.cwd);
        providers.extend(self.providers);
        let runtime = Arc::new(Runtime {
            executor,
            store: self.store,
            models: self.models,
            agents: self.agents,
            settings: self.settings,
            events: self.events,
            providers,
            sessions: Mutex::default(),
            tasks: Tasks::default(),
            undo: self.undo,
        });
        let _ = handle.0.set(Arc::downgrade(&runtime));
        runtime
    }
}

/// Whether `task` may start `agent`.
pub fn is_subagent(agent: &Agent) -> bool {
    matches!(agent.mode, AgentMode::Subagent | AgentMode::All)
}

/// Whether a user may run `agent` directly (and switch a session to it).
pub fn is_primary(agent: &Agent) -> bool {
    matches!(agent.mode, AgentMode::Primary | AgentMode::All)
}

/// Default rules the runtime's tools need in every agent: only the plan agent (whose built-in
/// rules ask for it) may call `plan_exit`. Pass them to [`Agents::with_defaults`].
pub fn default_rules() -> Vec<Rule> {
    vec![Rule::new("plan_exit", "*", Action::Deny)]
}

/// A tool as registered by the runtime.
pub(crate) type RuntimeTool = Arc<dyn Tool>;
