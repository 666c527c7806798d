//! The one builder every front-end uses: from a worktree and its configuration to the registry
//! of tools (built-in, worktree, custom and MCP), the rules (every tool source's defaults, the
//! user's and the project's config, the agents' own rules), the hooks, the executor and the
//! agent runtime.
//!
//! What it owns: the order in which rules are layered (see [`toolshed_core::agents`]) and which
//! defaults every tool source contributes, so `toolshed call`, `mcp serve`, `run`, `chat` and
//! later front-ends (TUI, ACP) decide every call the same way. A front-end supplies only its
//! approver (terminal prompt, MCP elicitation, ...) and its event sink; it never builds rules
//! or an executor itself.
//!
//! What it must never do: print, parse command lines, or read from a terminal; those belong to
//! the front-ends. Nothing starts before it is needed (MCP servers, JS hosts, language servers
//! and the session database start lazily), since `toolshed call` pays start-up on every call.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolshed_core::exec::{Session, ToolCall};
//! use toolshed_core::permission::RejectAll;
//! use toolshed_runtime::{Scope, Workspace};
//!
//! let ws = Workspace::open(None, None, &Scope::All).unwrap();
//! let registry = ws.registry();
//! let executor = ws.executor(registry, Arc::new(RejectAll)).build();
//! # drop(executor);
//! ```

mod workspace;

pub mod mcp;

pub use toolshed_tools::custom::Scope;
pub use workspace::{Workspace, default_rules, locate};

/// Shuts down the language servers started for `config`'s worktree (post-edit diagnostics, the
/// `lsp` tool): `shutdown` then `exit`, killed if slow. What every front-end does when it ends.
pub async fn shutdown_language_servers(config: &toolshed_core::config::Config) {
    toolshed_tools::lsp::shared(config).shutdown().await;
}

/// Why a workspace or runtime could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A usage or configuration error: the person has to change an argument or a file.
    Usage(String),
    /// Something failed while starting (a directory, the async runtime, the database).
    Failure(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Usage(m) | Error::Failure(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}
