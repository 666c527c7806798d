//! toolshed's agent: the loop that streams a model's answer, runs its tool calls through the
//! execution chain and sends the results back; sessions in SQLite; context providers (todo
//! list, plan / build mode, sub-agents, background tasks, AGENTS.md); and sub-agents.

pub mod context;
pub mod events;
pub mod instructions;
pub mod providers;
pub mod runtime;
pub mod store;
pub mod tasks;

pub use events::{Event, EventSink};
pub use runtime::{
    AgentError, ConfiguredModels, LiveSession, ModelClient, ModelSource, Runtime, Settings, Trigger, default_rules,
    is_primary, is_subagent,
};
pub use store::Store;
