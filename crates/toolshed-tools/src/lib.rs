//! toolshed's built-in tools, one module per tool family: each tool is one file holding its
//! arguments, the description a model reads, `execute`, and its unit tests.

pub mod patch;
pub mod path;

use toolshed_core::Registry;

/// Registers every built-in tool, in the order a model sees them.
pub fn register_builtins(registry: &mut Registry) {
    registry.register_builtin(toolshed_core::tool::Typed::new(patch::ApplyPatch));
}
