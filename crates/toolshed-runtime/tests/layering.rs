//! ARCHITECTURE.md's dependency rule, checked against every crate's `Cargo.toml`: which
//! toolshed crates each crate may depend on (normal dependencies; tests may use more).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// crate → the toolshed crates it may depend on.
const ALLOWED: &[(&str, &[&str])] = &[
    ("toolshed-core", &[]),
    ("toolshed-patch", &[]),
    ("toolshed-tools", &["toolshed-core", "toolshed-patch"]),
    ("toolshed-mcp", &["toolshed-core"]),
    ("toolshed-llm", &["toolshed-core"]),
    ("toolshed-agent", &["toolshed-core", "toolshed-llm", "toolshed-tools"]),
    ("toolshed-runtime", &["toolshed-core", "toolshed-tools", "toolshed-mcp", "toolshed-llm", "toolshed-agent"]),
    (
        "toolshed-cli",
        &["toolshed-core", "toolshed-tools", "toolshed-mcp", "toolshed-llm", "toolshed-agent", "toolshed-runtime"],
    ),
];

/// The toolshed crates named in the `[dependencies]` table of each crate of the workspace.
fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(crates).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else { continue };
        let doc: toml::Table = toml::from_str(&text).unwrap();
        let name = doc["package"]["name"].as_str().unwrap().to_string();
        let deps = doc
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|t| t.keys().filter(|k| k.starts_with("toolshed-")).cloned().collect())
            .unwrap_or_default();
        out.insert(name, deps);
    }
    out
}

#[test]
fn every_crate_depends_only_on_what_the_architecture_allows() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let deps = dependencies();
    for (name, uses) in &deps {
        let Some(ok) = allowed.get(name.as_str()) else {
            panic!("{name} is not in ARCHITECTURE.md's dependency rule (add it there and to ALLOWED here)");
        };
        for dep in uses {
            assert!(ok.contains(&dep.as_str()), "{name} must not depend on {dep} (ARCHITECTURE.md, dependency rule)");
        }
    }
    assert!(deps.len() >= ALLOWED.len(), "a crate listed here is gone: {:?}", deps.keys());
}

#[test]
fn only_front_ends_use_the_runtime_builder_and_nothing_uses_the_cli() {
    for (name, uses) in dependencies() {
        assert!(!uses.contains("toolshed-cli"), "{name} depends on the cli");
        if uses.contains("toolshed-runtime") {
            assert_eq!(name, "toolshed-cli", "only front-ends build on toolshed-runtime");
        }
    }
}
