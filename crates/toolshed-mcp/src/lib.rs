//! toolshed's MCP client (import servers' tools) and server (export a registry).
//!
//! - [`client`]: connects to `[mcp.NAME]` servers over stdio or streamable HTTP and imports
//!   their tools as `NAME_TOOL`, each server isolated from the others.
//! - [`server`]: serves a registry to any MCP client, every call through the execution chain.
//! - [`import`]: reads the `mcpServers` JSON other MCP clients use.

pub mod client;
mod convert;
pub mod import;
pub mod schema;
pub mod server;

pub use client::kill_all_servers;
pub use client::{ConnectOptions, McpClients, McpServer, McpTool, ServerStatus, State};
