//! toolshed's built-in tools, one module per tool family: each tool is one file holding its
//! arguments, the description a model reads, `execute`, and its unit tests.

pub mod bash_permission;
pub mod fs;
pub mod path;
#[cfg(unix)]
pub mod shell;
pub mod todo;

use std::sync::Arc;

use toolshed_core::Registry;
use toolshed_core::config::Config;
use toolshed_core::tool::Typed;

/// Registers every built-in tool, in the order a model sees them, configured by `config`.
pub fn register_builtins(registry: &mut Registry, config: &Config) {
    registry.register_builtin(Typed::new(fs::ReadTool));
    registry.register_builtin(Typed::new(fs::ListTool));
    registry.register_builtin(Typed::new(fs::GlobTool));
    registry.register_builtin(Typed::new(fs::GrepTool));
    registry.register_builtin(Typed::new(fs::WriteTool));
    registry.register_builtin(Typed::new(fs::EditTool));
    #[cfg(unix)]
    shell::Shell::new((&config.sandbox).into()).register(registry);
    register_todo(registry, Arc::new(todo::MemoryTodos::default()));
}

/// Registers `todo_write` and `todo_read` over `store` (replacing earlier ones, in place): the
/// agent passes its session database here.
pub fn register_todo(registry: &mut Registry, store: Arc<dyn todo::TodoStore>) {
    registry.register_builtin(Typed::new(todo::TodoWriteTool::new(store.clone())));
    registry.register_builtin(Typed::new(todo::TodoReadTool::new(store)));
}
