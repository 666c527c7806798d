//! toolshed's built-in tools, one module per tool family: each tool is one file holding its
//! arguments, the description a model reads, `execute`, and its unit tests.

pub mod fs;
pub mod patch;
pub mod skill;
pub mod todo;

// The tool families that are crates of their own, under the names they had here.
pub use toolshed_custom as custom;
pub use toolshed_lsp as lsp;
pub use toolshed_path as path;
#[cfg(unix)]
pub use toolshed_shell as shell;
pub use toolshed_shellpolicy as bash_permission;
pub use toolshed_web as web;

use std::path::Path;
use std::sync::Arc;

use toolshed_core::Registry;
use toolshed_core::config::Config;
use toolshed_core::tool::Typed;

/// Registers every built-in tool, in the order a model sees them, configured by `config`.
///
/// `websearch` is registered only when `[websearch]` names a usable backend
/// ([`web::search::backend`] says why not). Nothing here touches the network: the HTTP client
/// is built on the first call that needs it.
pub fn register_builtins(registry: &mut Registry, config: &Config) {
    registry.register_builtin(Typed::new(fs::ReadTool));
    registry.register_builtin(Typed::new(fs::ListTool));
    registry.register_builtin(Typed::new(fs::GlobTool));
    registry.register_builtin(Typed::new(fs::GrepTool));
    registry.register_builtin(Typed::new(fs::WriteTool));
    registry.register_builtin(Typed::new(fs::EditTool));
    registry.register_builtin(Typed::new(patch::ApplyPatch));
    registry.register_builtin(Typed::new(lsp::LspTool::new(lsp::shared(config))));
    #[cfg(unix)]
    shell::Shell::from_config(config).register(registry);
    registry.register_builtin(Typed::new(web::fetch::WebFetch));
    if let Ok(backend) = web::search::backend(config.websearch.as_ref()) {
        registry.register_builtin(Typed::new(web::search::WebSearch::new(backend)));
    }
    register_todo(registry, Arc::new(todo::MemoryTodos::default()));
}

/// Registers `todo_write` and `todo_read` over `store` (replacing earlier ones, in place): the
/// agent passes its session database here. `todo_read` is hidden from models, whose every
/// request carries the list.
pub fn register_todo(registry: &mut Registry, store: Arc<dyn todo::TodoStore>) {
    registry.register_builtin(Typed::new(todo::TodoWriteTool::new(store.clone())));
    registry.register_builtin(Typed::new(todo::TodoReadTool::new(store)));
}

/// Registers `todo_write` and `todo_read` for clients whose requests do not carry the list
/// (`toolshed mcp serve`): `todo_read` is sent, and `todo_write` points at it.
pub fn register_todo_standalone(registry: &mut Registry, store: Arc<dyn todo::TodoStore>) {
    registry.register_builtin(Typed::new(todo::TodoWriteTool::standalone(store.clone())));
    registry.register_builtin(Typed::new(todo::TodoReadTool::standalone(store)));
}

/// Registers the tools that depend on the worktree's files: `skill`, when skills are found
/// from `cwd` up to `root` or in the user's config directory. Returns what discovery found,
/// broken skills included (they are left out of the tool; `toolshed doctor` lists them).
pub fn register_worktree_tools(registry: &mut Registry, root: &Path, cwd: &Path) -> skill::Skills {
    let skills = skill::discover(root, cwd);
    skill::register(registry, &skills);
    skills
}
