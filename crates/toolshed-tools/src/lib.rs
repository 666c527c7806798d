//! toolshed's built-in tools, one module per tool family: each tool is one file holding its
//! arguments, the description a model reads, `execute`, and its unit tests.

pub mod bash_permission;
pub mod custom;

use toolshed_core::Registry;
use toolshed_core::config::Config;

/// Registers every built-in tool, in the order a model sees them, configured by `config`.
pub fn register_builtins(registry: &mut Registry, config: &Config) {
    let _ = (registry, config);
}
