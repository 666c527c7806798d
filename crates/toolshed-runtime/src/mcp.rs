//! Attaching the configured MCP servers' tools to a registry, lazily: a call of a built-in tool
//! starts no server, and a call of an MCP tool starts only the server(s) whose name prefixes
//! the tool's.

use toolshed_core::config::McpConfig;
use toolshed_core::env::ChildEnv;
use toolshed_core::registry::Registry;
use toolshed_mcp::client::servers_for_tool;
use toolshed_mcp::{ConnectOptions, McpClients, State};

use crate::{Error, Workspace};

/// Which servers a command needs.
pub enum McpScope<'a> {
    /// Every enabled server (`run`, `chat`, `tools`, `mcp serve`).
    All,
    /// Only what one tool needs: nothing for a built-in or custom tool, the server(s) whose
    /// name prefixes it for an MCP tool, every server for `tool_search`.
    Tool(&'a str),
}

/// Connections to MCP servers, driven by a runtime of their own; shut down when dropped. Keep it
/// alive while the registry it filled is used.
pub struct Attached {
    runtime: Option<tokio::runtime::Runtime>,
    clients: McpClients,
}

impl Drop for Attached {
    fn drop(&mut self) {
        let Some(runtime) = self.runtime.take() else { return };
        let clients = std::mem::take(&mut self.clients);
        let stop = move || {
            runtime.block_on(clients.shutdown());
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
        };
        // Dropped inside an async runtime (a long-lived server's session), the shutdown runs on
        // a thread of its own: blocking on a runtime from within one would panic.
        if tokio::runtime::Handle::try_current().is_ok() {
            let _ = std::thread::spawn(stop).join();
        } else {
            stop();
        }
    }
}

/// The servers of `[mcp.NAME]` that are not `enabled = false`.
pub fn enabled(ws: &Workspace) -> impl Iterator<Item = (&String, &McpConfig)> {
    ws.config.mcp.iter().filter(|(_, c)| c.enabled != Some(false))
}

/// How servers are started for this workspace: in the worktree, with the `[env]` policy.
pub fn options(ws: &Workspace) -> ConnectOptions {
    // What a server starts may depend on files the model can write (the `node_modules` npx
    // prefers, an `env_file`, a script in the worktree): it runs in the sandbox of a shell
    // command of the strictest agent that may write, with the network, and unsandboxed where
    // the kernel has no sandbox (as before: a server is the person's program, not the model's).
    let shell = toolshed_tools::shell::Shell::from_config(&ws.config);
    let policy = toolshed_tools::shell::SandboxPolicy {
        block_network: false,
        allow_unsandboxed: true,
        ..shell.strictest_writing_policy()
    };
    let (root, cwd) = (ws.root.clone(), ws.cwd.clone());
    let confine = toolshed_mcp::client::Confine(std::sync::Arc::new(move |command| {
        toolshed_tools::shell::confine_tool(command, &policy, &root, &cwd).map(|_| ()).map_err(|e| e.to_string())
    }));
    ConnectOptions { cwd: Some(ws.root.clone()), env: ChildEnv::from_config(&ws.config), confine: Some(confine) }
}

/// A small multi-threaded runtime that drives MCP connections on a thread of its own.
pub fn io_runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("toolshed-mcp")
        .enable_all()
        .build()
        .map_err(|e| Error::Failure(format!("cannot start the async runtime: {e}")))
}

/// Connects the servers `scope` needs and registers their tools. Servers that cannot be reached
/// are reported through `warn` (one line each) and left out. Call it outside any async runtime.
pub fn attach(
    ws: &Workspace,
    registry: &mut Registry,
    scope: McpScope<'_>,
    warn: &dyn Fn(&str),
) -> Result<Option<Attached>, Error> {
    let selected: Vec<(&String, &McpConfig)> = match scope {
        // tool_search searches the servers' tools, so it needs them all.
        McpScope::All | McpScope::Tool(toolshed_core::search::TOOL_SEARCH) => enabled(ws).collect(),
        McpScope::Tool(name) if registry.get(name).is_some() => return Ok(None),
        McpScope::Tool(name) => servers_for_tool(enabled(ws), name),
    };
    if selected.is_empty() {
        return Ok(None);
    }
    // A thread of its own drives the connections, so the caller may block on its own runtime.
    let runtime = io_runtime()?;
    let clients = runtime.block_on(McpClients::connect(selected, &options(ws)));
    report_unavailable(&clients, warn);
    clients.register(registry);
    Ok(Some(Attached { runtime: Some(runtime), clients }))
}

/// The registry one call of `tool` runs against (`toolshed call`) and is explained against
/// (`permission explain`): the workspace's tools, plus the tools of the MCP server(s) whose name
/// prefixes `tool` (started for it). Keep the [`Attached`] alive while the registry is used.
pub fn registry_for_tool(
    ws: &Workspace,
    tool: &str,
    warn: &dyn Fn(&str),
) -> Result<(Registry, Option<Attached>), Error> {
    let mut registry = ws.registry();
    let attached = attach(ws, &mut registry, McpScope::Tool(tool), warn)?;
    Ok((registry, attached))
}

/// Reports every server that could not be reached through `warn`.
pub fn report_unavailable(clients: &McpClients, warn: &dyn Fn(&str)) {
    for status in clients.statuses() {
        if let State::Unavailable(reason) = &status.state {
            warn(&format!("MCP server `{}` is unavailable: {reason}", status.name));
        }
    }
}
