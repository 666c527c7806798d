//! The todo list's data: its items, where a session's list is kept ([`TodoStore`]) and how it
//! reads. The `todo_write` and `todo_read` tools (in `toolshed-tools`) work on a store; the
//! agent keeps lists in its session database.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where an item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(description = "")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now (keep at most one).
    InProgress,
    /// Done.
    Completed,
    /// Dropped.
    Cancelled,
}

impl TodoStatus {
    /// The word shown in lists.
    pub fn as_str(self) -> &'static str {
        match self {
            TodoStatus::Pending => "pending",
            TodoStatus::InProgress => "in_progress",
            TodoStatus::Completed => "completed",
            TodoStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the item still needs work.
    pub fn is_open(self) -> bool {
        matches!(self, TodoStatus::Pending | TodoStatus::InProgress)
    }
}

/// One item of the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// A short imperative sentence.
    #[schemars(description = "")]
    pub content: String,
    /// Where it stands.
    #[schemars(description = "")]
    pub status: TodoStatus,
}

/// Keeps each session's todo list.
pub trait TodoStore: Send + Sync {
    /// The session's list (empty if it has none).
    fn get(&self, session_id: &str) -> Result<Vec<Todo>, String>;
    /// Replaces the session's list.
    fn set(&self, session_id: &str, todos: &[Todo]) -> Result<(), String>;
}

/// Lists kept in memory, for runs without a session database.
#[derive(Debug, Default)]
pub struct MemoryTodos {
    lists: Mutex<HashMap<String, Vec<Todo>>>,
}

impl TodoStore for MemoryTodos {
    fn get(&self, session_id: &str) -> Result<Vec<Todo>, String> {
        Ok(self.lists.lock().unwrap_or_else(PoisonError::into_inner).get(session_id).cloned().unwrap_or_default())
    }

    fn set(&self, session_id: &str, todos: &[Todo]) -> Result<(), String> {
        self.lists.lock().unwrap_or_else(PoisonError::into_inner).insert(session_id.to_string(), todos.to_vec());
        Ok(())
    }
}

/// The list as the model and the user read it: one `- [status] content` line per item, or a
/// note that it is empty.
pub fn render_list(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "The todo list is empty.".to_string();
    }
    let open = todos.iter().filter(|t| t.status.is_open()).count();
    let mut out = format!("{open} of {} todos open:\n", todos.len());
    for t in todos {
        out.push_str(&format!("- [{}] {}\n", t.status.as_str(), t.content));
    }
    out.pop();
    out
}
