//! Inside core, tool definition never depends on execution: the modules a tool is written
//! against (`tool`, `context`, `registry`, `render`, `permission`, `hooks`, `locks`, `output`,
//! `schema`) import nothing of `exec`, which drives them. `tool_search` sees the executor only
//! through the narrow `ToolDiscovery` handle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

const DEFINITION: &[&str] = &[
    "tool.rs",
    "context.rs",
    "registry.rs",
    "render.rs",
    "permission.rs",
    "hooks.rs",
    "locks.rs",
    "output.rs",
    "schema.rs",
    "file_access.rs",
];

/// The file's code before its unit tests.
fn code(file: &str) -> String {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(file)).unwrap();
    text.split("#[cfg(test)]").next().unwrap_or_default().to_string()
}

#[test]
fn tool_definition_does_not_depend_on_execution() {
    for file in DEFINITION {
        for (n, line) in code(file).lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            assert!(!line.contains("crate::exec"), "src/{file}:{}: definition depends on execution: {line}", n + 1);
        }
    }
}

#[test]
fn a_spec_does_not_render_itself() {
    // `definition_bytes` is computed by render from a spec (tool.rs does not import render).
    assert!(!code("tool.rs").contains("crate::render"), "tool.rs uses render");
}
