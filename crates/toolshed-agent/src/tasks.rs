//! The runtime's own tools: `task` runs a sub-agent in a child session (in the foreground, or
//! in the background with `task_wait`, `task_result`, `task_continue` and `task_cancel`), and
//! `plan_exit` asks the user to leave plan mode. Background tasks are stored with the session,
//! so after a resume a task whose process died is reported as lost, not forgotten.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Alias, ToolFlags, Typed, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::runtime::{AgentError, LiveSession, Runtime, RuntimeHandle, RuntimeTool, is_subagent};
use crate::store::{StoredTask, new_id};

/// Longest `task_wait` may wait.
pub const MAX_WAIT: Duration = Duration::from_secs(600);
/// How long a `task` call may run in the foreground.
pub const TASK_TIME_LIMIT: Duration = Duration::from_secs(3600);

/// The runtime's tools, bound to `handle`.
pub(crate) fn runtime_tools(handle: RuntimeHandle) -> Vec<RuntimeTool> {
    vec![
        Arc::new(Typed::new(TaskTool(handle.clone()))),
        Arc::new(Typed::new(TaskWaitTool(handle.clone()))),
        Arc::new(Typed::new(TaskResultTool(handle.clone()))),
        Arc::new(Typed::new(TaskContinueTool(handle.clone()))),
        Arc::new(Typed::new(TaskCancelTool(handle.clone()))),
        Arc::new(Typed::new(PlanExitTool(handle))),
    ]
}

/// The runtime's tools as `toolshed tools` lists them: the same specs, bound to no runtime (a
/// call says the runtime has shut down).
pub fn listed_tools() -> Vec<RuntimeTool> {
    runtime_tools(RuntimeHandle::default())
}

/// Whether a session that `has_tasks` (a background task, running or not, now or in an earlier
/// run) is sent the tool `name`: the tools that wait for, read, continue or cancel a background
/// task are sent only once there is one.
pub fn sent(name: &str, has_tasks: bool) -> bool {
    has_tasks || !TASK_FOLLOW_UPS.contains(&name)
}

/// The tools that act on a background task `task` started.
pub const TASK_FOLLOW_UPS: &[&str] = &["task_wait", "task_result", "task_continue", "task_cancel"];

impl Tasks {
    /// Whether `session` started a background task in this process.
    pub(crate) fn started_by(&self, session: &str) -> bool {
        self.entries().values().any(|e| e.parent == session)
    }
}

fn runtime(handle: &RuntimeHandle) -> Result<Arc<Runtime>, ToolError> {
    handle.get().ok_or_else(|| ToolError::fatal("the agent runtime has shut down"))
}

fn live(rt: &Runtime, ctx: &ToolContext) -> Result<Arc<LiveSession>, ToolError> {
    rt.live(ctx.session_id()).ok_or_else(|| {
        ToolError::model(format!("{} only works inside an agent session (toolshed run or chat).", ctx.tool_name()))
    })
}

/// Where a background task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    /// Still running.
    Running,
    /// Finished with an answer.
    Completed,
    /// Finished with an error.
    Failed,
    /// Stopped by task_cancel.
    Cancelled,
    /// Its process ended before it finished.
    Lost,
}

impl TaskStatus {
    fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Lost => "lost",
        }
    }

    fn parse(s: &str) -> TaskStatus {
        match s {
            "running" => TaskStatus::Running,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => TaskStatus::Lost,
        }
    }
}

struct TaskEntry {
    parent: String,
    child: String,
    agent: String,
    status: TaskStatus,
    result: Option<String>,
    error: Option<String>,
    cancel: CancellationToken,
}

/// The background tasks this process runs.
#[derive(Default)]
pub struct Tasks {
    entries: Mutex<HashMap<String, TaskEntry>>,
    finished: Notify,
}

impl Tasks {
    fn entries(&self) -> MutexGuard<'_, HashMap<String, TaskEntry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A task as seen by the tools: live in this process, or only stored.
struct TaskView {
    id: String,
    parent: String,
    child: String,
    agent: String,
    status: TaskStatus,
    result: Option<String>,
    error: Option<String>,
}

fn find(rt: &Runtime, parent: &str, id: &str) -> Result<TaskView, ToolError> {
    if let Some(e) = rt.tasks.entries().get(id) {
        return Ok(TaskView {
            id: id.to_string(),
            parent: e.parent.clone(),
            child: e.child.clone(),
            agent: e.agent.clone(),
            status: e.status,
            result: e.result.clone(),
            error: e.error.clone(),
        });
    }
    let stored = rt.store().tasks(parent).map_err(|e| ToolError::fatal(e.to_string()))?;
    let known: Vec<String> = stored.iter().map(|t| t.id.clone()).collect();
    let t = stored.into_iter().find(|t| t.id == id).ok_or_else(|| {
        let list = if known.is_empty() { "this session has none".to_string() } else { known.join(", ") };
        ToolError::model(format!(
            "No background task `{id}` in this session (its tasks: {list}). Use an id that task returned."
        ))
    })?;
    // A task stored as running that this process does not run has lost its process.
    let status = match TaskStatus::parse(&t.status) {
        TaskStatus::Running => TaskStatus::Lost,
        s => s,
    };
    Ok(TaskView {
        id: t.id,
        parent: t.session_id,
        child: t.child_session_id,
        agent: t.agent,
        status,
        result: t.result,
        error: t.error,
    })
}

/// Runs `prompt` on `child` in the background as task `id`.
fn spawn(rt: Arc<Runtime>, id: String, child: Arc<LiveSession>, prompt: String) {
    let cancel = CancellationToken::new();
    if let Some(e) = rt.tasks.entries().get_mut(&id) {
        e.cancel = cancel.clone();
    }
    tokio::spawn(async move {
        // Its changes belong to the parent session: recorded there as a step when it finishes.
        let parent = child.parent_id.clone().filter(|_| child.depth == 1);
        let before = match (&parent, rt.undo()) {
            (Some(_), Some(undo)) => undo.snapshot().await.ok(),
            _ => None,
        };
        let outcome = rt.prompt(&child, &prompt, &cancel).await;
        if let (Some(parent), Some(before)) = (parent, before) {
            rt.record_task_step(&parent, &before).await;
        }
        let (status, result, error) = match outcome {
            Ok(answer) => (TaskStatus::Completed, Some(answer), None),
            Err(AgentError::Interrupted) => (TaskStatus::Cancelled, None, Some("cancelled".to_string())),
            Err(e) => (TaskStatus::Failed, None, Some(e.to_string())),
        };
        let _ = rt.store().update_task(&id, status.as_str(), result.as_deref(), error.as_deref());
        if let Some(e) = rt.tasks.entries().get_mut(&id) {
            e.status = status;
            e.result = result;
            e.error = error;
        }
        rt.tasks.finished.notify_waiters();
    });
}

fn task_output(view: &TaskView) -> String {
    match view.status {
        TaskStatus::Completed => format!(
            "<task id=\"{}\" session=\"{}\" agent=\"{}\" state=\"completed\">\n<task_result>\n{}\n</task_result>\n</task>",
            view.id,
            view.child,
            view.agent,
            view.result.as_deref().unwrap_or("(no output)")
        ),
        TaskStatus::Running => {
            format!("Task {} is still running. Use task_wait to wait for it, or continue with other work.", view.id)
        }
        TaskStatus::Failed => {
            format!("Task {} failed: {}", view.id, view.error.as_deref().unwrap_or("unknown error"))
        }
        TaskStatus::Cancelled => format!("Task {} was cancelled before it finished.", view.id),
        TaskStatus::Lost => format!(
            "Task {} was lost: the process running it ended before it finished. Its session {} keeps what it did; continue it with task_continue or start a new task.",
            view.id, view.child
        ),
    }
}

/// Arguments of `task`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskArgs {
    /// 3-5 words, for the user.
    pub description: String,
    /// The complete instructions.
    #[schemars(description = "")]
    pub prompt: String,
    /// Default `general`, else `explore`.
    #[serde(default)]
    pub agent: Option<String>,
    /// Run in the background and return a task id at once.
    #[serde(default)]
    #[schemars(description = "")]
    pub background: Option<bool>,
}

/// `task`: runs a sub-agent.
pub struct TaskTool(RuntimeHandle);

/// The sub-agent `task` runs when none is named: `general` if one is defined, else `explore`.
fn default_subagent(rt: &Runtime) -> &'static str {
    if rt.agents().get("general").is_some_and(is_subagent) { "general" } else { "explore" }
}

/// The names of the task tools (hidden from sessions that may not start sub-agents).
pub const TASK_TOOLS: &[&str] = &["task", "task_wait", "task_result", "task_continue", "task_cancel"];

impl TypedTool for TaskTool {
    type Args = TaskArgs;

    fn name(&self) -> &str {
        "task"
    }

    // Claude Code's names.
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[("subagent_type", Alias::Param("agent")), ("run_in_background", Alias::Param("background"))]
    }

    fn description(&self) -> String {
        "Runs a sub-agent in a session of its own and returns its final answer. Use it for broad searches (agent `explore`) or independent multi-step work (`general`). It sees only `prompt`: include everything it needs. `background: true` returns a task id at once; tools to wait for, read, continue or cancel it then appear.".to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags { parallel_safe: true, mutating: false, read_only: false }
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &TaskArgs,
        _ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let agent = match (&args.agent, runtime(&self.0)) {
            (Some(a), _) => a.clone(),
            (None, Ok(rt)) => default_subagent(&rt).to_string(),
            (None, Err(e)) => return Err(e),
        };
        Ok(vec![PermissionRequest::new(&spec.permission, [agent]).with_always(["*"])])
    }

    fn time_limit(&self, _args: &TaskArgs) -> Option<Duration> {
        Some(TASK_TIME_LIMIT)
    }

    async fn run(&self, args: TaskArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let rt = runtime(&self.0)?;
        let parent = live(&rt, &ctx)?;
        let max = rt.settings().max_depth;
        if parent.depth >= max {
            return Err(ToolError::model(format!(
                "Sub-agent depth limit reached ({max}): a sub-agent cannot start another sub-agent. Do this part yourself."
            )));
        }
        let name = args.agent.as_deref().unwrap_or(default_subagent(&rt));
        let Some(profile) = rt.agents().get(name).filter(|a| is_subagent(a)) else {
            let available: Vec<String> = rt
                .agents()
                .all()
                .filter(|a| is_subagent(a))
                .map(|a| format!("{} ({})", a.name, a.description))
                .collect();
            return Err(ToolError::model(format!(
                "`{name}` is not a sub-agent. Set agent to one of: {}.",
                available.join("; ")
            )));
        };
        let model = profile.model.clone().unwrap_or_else(|| parent.model());
        let child = rt.create_session(name, &model, Some(&parent)).map_err(|e| ToolError::fatal(e.to_string()))?;
        if args.background.unwrap_or(false) {
            let id = new_id("task");
            let stored = StoredTask {
                id: id.clone(),
                session_id: parent.id.clone(),
                child_session_id: child.id.clone(),
                agent: name.to_string(),
                description: args.description.clone(),
                status: "running".into(),
                result: None,
                error: None,
            };
            rt.store().add_task(&stored).map_err(|e| ToolError::fatal(e.to_string()))?;
            rt.tasks.entries().insert(
                id.clone(),
                TaskEntry {
                    parent: parent.id.clone(),
                    child: child.id.clone(),
                    agent: name.to_string(),
                    status: TaskStatus::Running,
                    result: None,
                    error: None,
                    cancel: CancellationToken::new(),
                },
            );
            let child_id = child.id.clone();
            spawn(rt.clone(), id.clone(), child, args.prompt);
            return Ok(ToolOutput::text(format!(
                "Started background task {id} (agent {name}, session {child_id}). It runs while you continue; use task_wait to wait for it and task_result to read its answer."
            ))
            .with_metadata("task_id", id)
            .with_metadata("session_id", child_id));
        }
        let answer = rt
            .prompt(&child, &args.prompt, ctx.cancellation())
            .await
            .map_err(|e| ToolError::model(format!("The sub-agent failed (session {}): {e}", child.id)))?;
        let view = TaskView {
            id: child.id.clone(),
            parent: parent.id.clone(),
            child: child.id.clone(),
            agent: name.to_string(),
            status: TaskStatus::Completed,
            result: Some(answer),
            error: None,
        };
        Ok(ToolOutput::text(task_output(&view))
            .with_title(args.description)
            .with_metadata("session_id", child.id.clone()))
    }
}

/// Arguments of `task_wait`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskWaitArgs {
    /// The background task ids to wait for.
    pub ids: Vec<String>,
    /// Longest wait in milliseconds (default 30000, at most 600000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

/// `task_wait`: waits for the first of some background tasks to finish.
pub struct TaskWaitTool(RuntimeHandle);

impl TypedTool for TaskWaitTool {
    type Args = TaskWaitArgs;

    fn name(&self) -> &str {
        "task_wait"
    }

    fn description(&self) -> String {
        "Waits until the first of the given background tasks finishes, or until timeout_ms passes, and returns the state of each. Then read a finished task's answer with task_result.".to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec.with_permission("task")
    }

    fn time_limit(&self, _args: &TaskWaitArgs) -> Option<Duration> {
        Some(MAX_WAIT + Duration::from_secs(5))
    }

    async fn run(&self, args: TaskWaitArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let rt = runtime(&self.0)?;
        if args.ids.is_empty() {
            return Err(ToolError::model("ids is empty. Pass the ids that task returned."));
        }
        let timeout = Duration::from_millis(args.timeout_ms.unwrap_or(30_000)).min(MAX_WAIT);
        let deadline = Instant::now() + timeout;
        loop {
            let notified = rt.tasks.finished.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let views = args.ids.iter().map(|id| find(&rt, ctx.session_id(), id)).collect::<Result<Vec<_>, _>>()?;
            let done = views.iter().any(|v| v.status != TaskStatus::Running);
            let now = Instant::now();
            if done || now >= deadline {
                let lines: Vec<String> = views.iter().map(|v| format!("{}: {}", v.id, v.status.as_str())).collect();
                let head = if done { "" } else { "Timed out; none finished yet.\n" };
                return Ok(ToolOutput::text(format!("{head}{}", lines.join("\n"))));
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep(deadline - now) => {}
                () = ctx.cancellation().cancelled() => return Err(ToolError::model("task_wait was interrupted.")),
            }
        }
    }
}

/// Arguments of `task_result`, `task_cancel`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskIdArgs {
    /// The background task id.
    pub id: String,
}

/// `task_result`: a background task's answer or state.
pub struct TaskResultTool(RuntimeHandle);

impl TypedTool for TaskResultTool {
    type Args = TaskIdArgs;

    fn name(&self) -> &str {
        "task_result"
    }

    fn description(&self) -> String {
        "Returns a background task's final answer, or says whether it is still running, failed, was cancelled or was lost.".to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec.with_permission("task")
    }

    async fn run(&self, args: TaskIdArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let rt = runtime(&self.0)?;
        let view = find(&rt, ctx.session_id(), &args.id)?;
        Ok(ToolOutput::text(task_output(&view)).with_metadata("status", view.status.as_str()))
    }
}

/// Arguments of `task_continue`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TaskContinueArgs {
    /// The background task id.
    pub id: String,
    /// What the sub-agent should do next (it remembers its own session).
    pub prompt: String,
}

/// `task_continue`: sends a finished task's sub-agent another prompt, in the background.
pub struct TaskContinueTool(RuntimeHandle);

impl TypedTool for TaskContinueTool {
    type Args = TaskContinueArgs;

    fn name(&self) -> &str {
        "task_continue"
    }

    fn description(&self) -> String {
        "Gives a finished (completed, failed, cancelled or lost) background task's sub-agent another prompt; it continues in its own session, in the background. Collect it again with task_wait / task_result.".to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags { parallel_safe: true, mutating: false, read_only: false }
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec.with_permission("task")
    }

    async fn run(&self, args: TaskContinueArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let rt = runtime(&self.0)?;
        let view = find(&rt, ctx.session_id(), &args.id)?;
        if view.status == TaskStatus::Running {
            return Err(ToolError::model(format!(
                "Task {} is still running. Wait for it with task_wait before continuing it.",
                view.id
            )));
        }
        let child = rt.resume_session(&view.child, None, None).map_err(|e| ToolError::fatal(e.to_string()))?;
        rt.store().update_task(&view.id, "running", None, None).map_err(|e| ToolError::fatal(e.to_string()))?;
        rt.tasks.entries().insert(
            view.id.clone(),
            TaskEntry {
                parent: view.parent.clone(),
                child: view.child.clone(),
                agent: view.agent.clone(),
                status: TaskStatus::Running,
                result: None,
                error: None,
                cancel: CancellationToken::new(),
            },
        );
        spawn(rt.clone(), view.id.clone(), child, args.prompt);
        Ok(ToolOutput::text(format!("Task {} is running again. Use task_wait to wait for it.", view.id)))
    }
}

/// `task_cancel`: stops a running background task.
pub struct TaskCancelTool(RuntimeHandle);

impl TypedTool for TaskCancelTool {
    type Args = TaskIdArgs;

    fn name(&self) -> &str {
        "task_cancel"
    }

    fn description(&self) -> String {
        "Stops a running background task. Its session keeps what it did so far.".to_string()
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec.with_permission("task")
    }

    async fn run(&self, args: TaskIdArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let rt = runtime(&self.0)?;
        let view = find(&rt, ctx.session_id(), &args.id)?;
        if view.status != TaskStatus::Running {
            return Ok(ToolOutput::text(format!("Task {} is not running ({}).", view.id, view.status.as_str())));
        }
        if let Some(e) = rt.tasks.entries().get(&view.id) {
            e.cancel.cancel();
        }
        Ok(ToolOutput::text(format!("Task {} is being cancelled.", view.id)))
    }
}

/// Arguments of `plan_exit` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanExitArgs {}

/// `plan_exit`: asks the user to leave plan mode for build mode.
pub struct PlanExitTool(RuntimeHandle);

impl TypedTool for PlanExitTool {
    type Args = PlanExitArgs;

    fn name(&self) -> &str {
        "plan_exit"
    }

    fn description(&self) -> String {
        "Asks the user to leave plan mode and switch to build mode, where you can edit files and run commands. Call it once your plan is complete and the user agrees with it; if the user says no, keep planning.".to_string()
    }

    async fn run(&self, _args: PlanExitArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let rt = runtime(&self.0)?;
        let session = live(&rt, &ctx)?;
        if session.agent() != "plan" {
            return Err(ToolError::model("You are not in plan mode; carry on with the task."));
        }
        session.request_switch("build");
        Ok(ToolOutput::text(
            "The user approved leaving plan mode. From your next step on you are the build agent and can edit files and run commands: carry out the plan.",
        ))
    }
}
