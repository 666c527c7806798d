//! toolshed's built-in tools, one module per tool family: each tool is one file holding its
//! arguments, the description a model reads, `execute`, and its unit tests.

pub mod bash_permission;
pub mod custom;
pub mod fs;
pub mod path;
#[cfg(unix)]
pub mod shell;

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
}
