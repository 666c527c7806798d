//! toolshed's agent: the loop that streams a model's answer, runs its tool calls through the
//! execution chain and sends the results back; sessions in SQLite; context providers (todo
//! list, plan / build mode, sub-agents, background tasks, AGENTS.md); sub-agents; and undo
//! (snapshots of the worktree in a shadow git repository, session diff and revert).

pub mod calls;
pub mod context;
pub mod events;
pub mod instructions;
pub mod providers;
pub mod runtime;
pub mod snapshot;
pub mod store;
pub mod tasks;
pub mod undo;

pub use events::{Event, EventSink};
pub use runtime::{
    AgentError, ConfiguredModels, LiveSession, ModelClient, ModelSource, Runtime, Settings, Trigger, default_rules,
    is_primary, is_subagent,
};
pub use store::Store;
