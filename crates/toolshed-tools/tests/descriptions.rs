//! The exact definitions a model receives for the file tools: description, parameters,
//! flags and permission key. A changed word shows up here in review.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use toolshed_core::config::Config;
use toolshed_core::registry::Registry;

#[test]
fn file_tool_definitions_are_stable() {
    let mut registry = Registry::new();
    toolshed_tools::register_builtins(&mut registry, &Config::default());
    for name in ["read", "list", "glob", "grep", "write", "edit"] {
        let spec = registry.get(name).unwrap().spec();
        let text = format!(
            "{}\n\n{}\n\nparameters: {}\nflags: {:?}\npermission: {}\nbytes: {}",
            spec.name,
            spec.description,
            serde_json::to_string_pretty(&spec.parameters).unwrap(),
            spec.flags,
            spec.permission,
            toolshed_core::render::definition_bytes(spec)
        );
        insta::assert_snapshot!(format!("tool_{name}"), text);
    }
}
