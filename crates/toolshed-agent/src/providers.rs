//! Context providers: each adds a section to the system prompt of every step, built fresh from
//! the session's state (so, unlike MAF's per-turn messages, nothing piles up in the history):
//! AGENTS.md, the todo list, plan mode, the sub-agents `task` can start, background tasks.

use std::path::Path;
use std::sync::Arc;

use crate::runtime::{LiveSession, Runtime, Settings};

/// Adds instructions to each step's system prompt.
pub trait ContextProvider: Send + Sync {
    /// The section for `session`'s next step, if there is anything to say.
    fn instructions(&self, runtime: &Runtime, session: &LiveSession) -> Option<String>;
}

/// The opening of every system prompt.
pub fn base_prompt(settings: &Settings) -> String {
    format!(
        "You are toolshed, a coding agent. You work in the repository at {} through the tools you are given; relative paths start at {}. Make the changes the user asks for, check them when you can (run the tests), and keep answers short. Call independent tools in one response: they run in parallel. When the task is done, answer without calling tools.",
        settings.root.display(),
        settings.cwd.display()
    )
}

/// The providers every runtime has, in order.
pub fn builtin_providers(root: &Path, cwd: &Path) -> Vec<Arc<dyn ContextProvider>> {
    vec![
        Arc::new(AgentsMd::load(root, cwd)),
        Arc::new(PlanMode),
        Arc::new(TodoList),
        Arc::new(Subagents),
        Arc::new(BackgroundTasks),
    ]
}

/// The project instructions (the user's and the worktree's `AGENTS.md` / `CLAUDE.md` files,
/// from the root down to the working directory), read once.
pub struct AgentsMd {
    text: String,
}

impl AgentsMd {
    /// Reads the instructions that apply to `cwd` in the worktree `root`.
    pub fn load(root: &Path, cwd: &Path) -> Self {
        AgentsMd { text: crate::instructions::load(root, cwd).render() }
    }
}

impl ContextProvider for AgentsMd {
    fn instructions(&self, _runtime: &Runtime, _session: &LiveSession) -> Option<String> {
        (!self.text.is_empty()).then(|| self.text.clone())
    }
}

/// In plan mode, says what the mode allows and how to leave it.
pub struct PlanMode;

/// What the `plan` agent is told each step.
pub const PLAN_MODE: &str = "# Plan mode\n\nYou are in plan mode: read and search the code and work out a plan with the user. You cannot edit files or run commands that change anything; those tools are not available to you. When the plan is ready and the user agrees with it, call plan_exit: it asks the user to switch to build mode, where you carry the plan out.";

impl ContextProvider for PlanMode {
    fn instructions(&self, _runtime: &Runtime, session: &LiveSession) -> Option<String> {
        (session.agent() == "plan").then(|| PLAN_MODE.to_string())
    }
}

/// The current todo list.
pub struct TodoList;

impl ContextProvider for TodoList {
    fn instructions(&self, runtime: &Runtime, session: &LiveSession) -> Option<String> {
        let todos = runtime.store().todos(&session.id).ok()?;
        if todos.is_empty() {
            return None;
        }
        Some(format!(
            "# Your todo list\n\n{}\n\nUpdate it with todo_write as you go.",
            toolshed_core::todo::render_list(&todos)
        ))
    }
}

/// The sub-agents `task` can start, when the agent may use `task`.
pub struct Subagents;

impl ContextProvider for Subagents {
    fn instructions(&self, runtime: &Runtime, session: &LiveSession) -> Option<String> {
        if session.depth >= runtime.settings().max_depth
            || !runtime.visible_tools(session).iter().any(|t| t.name == "task")
        {
            return None;
        }
        let lines: Vec<String> = runtime
            .agents()
            .all()
            .filter(|a| crate::runtime::is_subagent(a))
            .map(|a| format!("- {}: {}", a.name, a.description))
            .collect();
        (!lines.is_empty()).then(|| {
            format!(
                "# Sub-agents\n\nThe task tool runs one of these in a session of its own and returns its final answer; with background: true it runs while you continue.\n{}",
                lines.join("\n")
            )
        })
    }
}

/// The session's background tasks and where each stands.
pub struct BackgroundTasks;

impl ContextProvider for BackgroundTasks {
    fn instructions(&self, runtime: &Runtime, session: &LiveSession) -> Option<String> {
        let tasks = runtime.store().tasks(&session.id).ok()?;
        if tasks.is_empty() {
            return None;
        }
        let lines: Vec<String> =
            tasks.iter().map(|t| format!("- {} [{}] ({}): {}", t.id, t.status, t.agent, t.description)).collect();
        Some(format!(
            "# Background tasks\n\n{}\n\nUse task_wait, task_result, task_continue and task_cancel with these ids.",
            lines.join("\n")
        ))
    }
}
