//! toolshed's agent: the loop that streams a model's answer, runs its tool calls through the
//! execution chain and sends the results back; sessions in SQLite; context providers (todo
//! list, plan / build mode, background tasks, AGENTS.md); and sub-agents.

pub mod store;
