//! The session's todo list: `todo_write` replaces it, `todo_read` shows it. Where the list
//! lives is a [`TodoStore`] (`toolshed_core::todo`): in memory by default, the session database
//! under the agent.

mod read;
mod write;

pub use read::TodoReadTool;
pub use toolshed_core::todo::{MemoryTodos, Todo, TodoStatus, TodoStore, render_list};
pub use write::TodoWriteTool;
