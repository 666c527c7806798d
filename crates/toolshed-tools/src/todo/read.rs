//! `todo_read`: shows the session's todo list. Hidden from toolshed's own agent, which puts the
//! list in every request (the tool would only cost bytes); sent to `toolshed mcp serve`'s
//! clients, which see the list only through it; `toolshed call todo_read` reaches it always.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::tool::{Exposure, ToolFlags, ToolSpec, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};

use super::{TodoStore, render_list};

const DESCRIPTION: &str = "Shows your todo list for this session, one `- [status] item` line each. The list is also shown to you at the start of every step, so call this only when you need it again mid-step.";

/// Arguments of `todo_read` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoReadArgs {}

/// The `todo_read` tool.
#[derive(Clone)]
pub struct TodoReadTool {
    store: Arc<dyn TodoStore>,
    exposure: Exposure,
}

impl TodoReadTool {
    /// A tool reading lists from `store`, hidden from models: toolshed's agent puts the list in
    /// every request.
    pub fn new(store: Arc<dyn TodoStore>) -> Self {
        TodoReadTool { store, exposure: Exposure::Hidden }
    }

    /// A tool reading lists from `store`, sent to a client that sees the list only through it
    /// (`toolshed mcp serve`).
    pub fn standalone(store: Arc<dyn TodoStore>) -> Self {
        TodoReadTool { store, exposure: Exposure::Direct }
    }
}

impl TypedTool for TodoReadTool {
    type Args = TodoReadArgs;

    fn name(&self) -> &str {
        "todo_read"
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        ToolSpec { exposure: self.exposure, ..spec }
    }

    async fn run(&self, _args: TodoReadArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let todos = self
            .store
            .get(ctx.session_id())
            .map_err(|e| ToolError::fatal(format!("cannot load the todo list: {e}")))?;
        Ok(ToolOutput::text(render_list(&todos)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::todo::{MemoryTodos, Todo, TodoStatus};

    #[tokio::test]
    async fn reading_shows_the_list_or_says_it_is_empty() {
        let store = Arc::new(MemoryTodos::default());
        let tool = TodoReadTool::new(store.clone());
        let ctx = ToolContext::standalone("/tmp", "/tmp");
        let out = tool.run(TodoReadArgs {}, ctx.clone()).await.unwrap();
        assert_eq!(out.text, "The todo list is empty.");
        store.set(ctx.session_id(), &[Todo { content: "Ship".into(), status: TodoStatus::Pending }]).unwrap();
        let out = tool.run(TodoReadArgs {}, ctx).await.unwrap();
        assert_eq!(out.text, "1 of 1 todos open:\n- [pending] Ship");
    }
}
