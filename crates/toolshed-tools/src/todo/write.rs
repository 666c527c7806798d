//! `todo_write`: replaces the session's todo list.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::tool::{ToolFlags, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};

use super::{Todo, TodoStatus, TodoStore, render_list};

const DESCRIPTION: &str = "Replaces your todo list: send the whole list each time. For work of three or more steps, list the steps first, mark one in_progress before starting it and completed once done (one in_progress at a time). The list is shown to you every step.";

/// Arguments of `todo_write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoWriteArgs {
    /// The whole list, in order.
    #[schemars(description = "")]
    pub todos: Vec<Todo>,
}

/// The `todo_write` tool.
#[derive(Clone)]
pub struct TodoWriteTool {
    store: Arc<dyn TodoStore>,
    shown_each_step: bool,
}

impl TodoWriteTool {
    /// A tool writing lists to `store`, for toolshed's agent, which puts the list in every
    /// request (the description says so).
    pub fn new(store: Arc<dyn TodoStore>) -> Self {
        TodoWriteTool { store, shown_each_step: true }
    }

    /// A tool writing lists to `store` for a client that does not see the list unless it
    /// calls `todo_read` (`toolshed mcp serve`).
    pub fn standalone(store: Arc<dyn TodoStore>) -> Self {
        TodoWriteTool { store, shown_each_step: false }
    }
}

impl TypedTool for TodoWriteTool {
    type Args = TodoWriteArgs;

    fn name(&self) -> &str {
        "todo_write"
    }

    fn description(&self) -> String {
        if self.shown_each_step {
            DESCRIPTION.to_string()
        } else {
            DESCRIPTION.replace("The list is shown to you every step.", "todo_read shows it again.")
        }
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags { parallel_safe: false, mutating: false, read_only: false }
    }

    async fn run(&self, args: TodoWriteArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let mut todos = args.todos;
        for t in &mut todos {
            t.content = t.content.trim().to_string();
        }
        if let Some(i) = todos.iter().position(|t| t.content.is_empty()) {
            return Err(ToolError::model(format!(
                "todos[{i}].content is empty. Give every item a short description of the step, then call todo_write again."
            )));
        }
        let in_progress = todos.iter().filter(|t| t.status == TodoStatus::InProgress).count();
        self.store
            .set(ctx.session_id(), &todos)
            .map_err(|e| ToolError::fatal(format!("cannot save the todo list: {e}")))?;
        let open = todos.iter().filter(|t| t.status.is_open()).count();
        let mut text = render_list(&todos);
        if in_progress > 1 {
            text.push_str(&format!(
                "\n\nNote: {in_progress} items are in_progress; keep only the one you are working on in_progress."
            ));
        }
        Ok(ToolOutput::text(text).with_title(format!("{open} todos")).with_metadata("open", open))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::todo::MemoryTodos;
    use toolshed_core::tool::Typed;
    use toolshed_core::{Registry, exec::Executor, exec::Session, exec::ToolCall};

    #[tokio::test]
    async fn writing_replaces_the_list_per_session() {
        let store = Arc::new(MemoryTodos::default());
        let mut registry = Registry::new();
        registry.register_builtin(Typed::new(TodoWriteTool::new(store.clone())));
        let dir = tempfile::tempdir().unwrap();
        let exec = Executor::builder(registry, dir.path()).data_dir(dir.path()).build();
        let s = Session::new("s1", "build");
        let args = serde_json::json!({"todos": [
            {"content": " Read the code ", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress"},
            {"content": "Run the tests", "status": "pending"}
        ]});
        let r = exec.call(&s, ToolCall::json("c1", "todo_write", args)).await;
        assert!(!r.is_error, "{}", r.output);
        insta::assert_snapshot!(r.output, @r"
        2 of 3 todos open:
        - [completed] Read the code
        - [in_progress] Fix the bug
        - [pending] Run the tests
        ");
        assert_eq!(store.get("s1").unwrap().len(), 3);
        assert!(store.get("other").unwrap().is_empty());
        let r = exec
            .call(
                &s,
                ToolCall::json(
                    "c2",
                    "todo_write",
                    serde_json::json!({"todos": [{"content": "", "status": "pending"}]}),
                ),
            )
            .await;
        assert!(r.is_error);
        assert_eq!(
            r.output,
            "todos[0].content is empty. Give every item a short description of the step, then call todo_write again."
        );
        let r = exec
            .call(
                &s,
                ToolCall::json("c3", "todo_write", serde_json::json!({"todos": [{"content": "x", "status": "done"}]})),
            )
            .await;
        assert!(r.is_error && r.output.contains("todos[0].status"), "{}", r.output);
    }
}
