//! ARCHITECTURE.md's dependency rule, checked against `cargo metadata`: the arrows of the rule's
//! diagram are read from ARCHITECTURE.md itself (so the document and the check cannot drift),
//! and every normal dependency between the workspace's crates, target-specific ones included,
//! must follow an arrow or a path of arrows (a crate may use anything below its targets, never
//! sideways or upward). Tests and benchmarks may use more (dev-dependencies are not checked).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The arrows of the dependency rule, `crate → the crates it may depend on directly`, from the
/// first fenced block after "Dependency rule" in `text`. Statements are separated by three or
/// more spaces; `a → b → {c, d}` is `a → b` and `b → c, d`; short names mean `toolshed-NAME`;
/// `→ nothing of ours` declares crates with no arrows.
fn arrows(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let rule = text.find("Dependency rule").expect("ARCHITECTURE.md has no dependency rule");
    let block = text[rule..].split("```").nth(1).expect("the dependency rule has no diagram");
    let names = |part: &str| -> Vec<String> {
        part.trim()
            .trim_start_matches('{')
            .trim_end_matches('}')
            .split(',')
            .map(|n| format!("toolshed-{}", n.trim()))
            .collect()
    };
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in block.lines() {
        for statement in line.split("   ").map(str::trim).filter(|s| !s.is_empty()) {
            let parts: Vec<&str> = statement.split('→').collect();
            assert!(parts.len() >= 2, "not a rule: {statement:?}");
            for pair in parts.windows(2) {
                let targets = if pair[1].trim() == "nothing of ours" { Vec::new() } else { names(pair[1]) };
                for from in names(pair[0]) {
                    out.entry(from).or_default().extend(targets.iter().cloned());
                }
            }
            // The last target of a chain is declared too, even with no arrows of its own.
            if parts[parts.len() - 1].trim() != "nothing of ours" {
                for to in names(parts[parts.len() - 1]) {
                    out.entry(to).or_default();
                }
            }
        }
    }
    out
}

/// Everything `name` may reach by following arrows.
fn reachable(arrows: &BTreeMap<String, BTreeSet<String>>, name: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = arrows.get(name).into_iter().flatten().map(String::as_str).collect();
    while let Some(next) = todo.pop() {
        if seen.insert(next.to_string()) {
            todo.extend(arrows.get(next).into_iter().flatten().map(String::as_str));
        }
    }
    seen
}

/// The workspace crates and their normal dependencies on each other, from `cargo metadata`
/// output.
fn workspace_dependencies(metadata: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let members: BTreeSet<String> =
        metadata["packages"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    let mut out = BTreeMap::new();
    for package in metadata["packages"].as_array().unwrap() {
        let uses = package["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["kind"].is_null()) // normal: neither "dev" nor "build"
            .filter_map(|d| d["name"].as_str())
            .filter(|d| members.contains(*d))
            .map(str::to_string)
            .collect();
        out.insert(package["name"].as_str().unwrap().to_string(), uses);
    }
    out
}

/// What breaks the rule: a crate the rule does not list, a dependency no arrow allows.
fn violations(rule: &BTreeMap<String, BTreeSet<String>>, deps: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, uses) in deps {
        if !rule.contains_key(name) {
            out.push(format!("{name} is not in ARCHITECTURE.md's dependency rule: add it to the diagram"));
            continue;
        }
        let allowed = reachable(rule, name);
        for dep in uses {
            if !allowed.contains(dep) {
                out.push(format!("{name} must not depend on {dep} (ARCHITECTURE.md, dependency rule)"));
            }
        }
    }
    for name in rule.keys() {
        if !deps.contains_key(name) {
            out.push(format!("{name} is in ARCHITECTURE.md's dependency rule but not in the workspace"));
        }
    }
    out
}

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().parent().unwrap()
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn rule() -> BTreeMap<String, BTreeSet<String>> {
    arrows(&std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).unwrap())
}

#[test]
fn every_crate_depends_only_on_what_the_architecture_allows() {
    let found = violations(&rule(), &workspace_dependencies(&metadata()));
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn only_front_ends_use_the_runtime_builder_and_nothing_uses_the_cli() {
    for (name, uses) in workspace_dependencies(&metadata()) {
        assert!(!uses.contains("toolshed-cli"), "{name} depends on the cli");
        if uses.contains("toolshed-runtime") {
            assert!(
                ["toolshed-cli", "toolshed-tui", "toolshed-acp"].contains(&name.as_str()),
                "only front-ends build on toolshed-runtime, not {name}"
            );
        }
    }
}

#[test]
fn the_agent_compiles_no_tool_family() {
    let rule = rule();
    let deps = workspace_dependencies(&metadata());
    let agent: Vec<&String> = deps["toolshed-agent"].iter().collect();
    assert_eq!(agent, ["toolshed-core", "toolshed-llm"], "the agent's own workspace dependencies");
    for family in ["toolshed-tools", "toolshed-shell", "toolshed-web", "toolshed-lsp", "toolshed-custom"] {
        assert!(!reachable(&rule, "toolshed-agent").contains(family), "the rule lets the agent reach {family}");
    }
}

/// The check itself: a forbidden edge and an unlisted crate are both caught, including an edge
/// declared only for one target (`[target.'cfg(unix)'.dependencies]`), which `cargo metadata`
/// lists like any other.
#[test]
fn the_check_fails_on_a_forbidden_edge_and_on_an_unlisted_crate() {
    let doc = "Dependency rule (arrows):\n\n```\ncli → runtime → {agent, tools}   agent → core\ntools → core   core → nothing of ours\n```\n";
    let rule = arrows(doc);
    assert_eq!(rule.len(), 5, "{rule:?}");
    let package = |name: &str, deps: &[(&str, Value)]| {
        let deps: Vec<Value> =
            deps.iter().map(|(d, kind)| serde_json::json!({"name": d, "kind": kind, "target": "cfg(unix)"})).collect();
        serde_json::json!({"name": name, "dependencies": deps})
    };
    let good = serde_json::json!({"packages": [
        package("toolshed-cli", &[("toolshed-runtime", Value::Null), ("toolshed-core", Value::Null)]),
        package("toolshed-runtime", &[("toolshed-agent", Value::Null), ("toolshed-tools", Value::Null)]),
        package("toolshed-agent", &[("toolshed-core", Value::Null), ("toolshed-tools", "dev".into())]),
        package("toolshed-tools", &[("toolshed-core", Value::Null)]),
        package("toolshed-core", &[]),
    ]});
    assert_eq!(violations(&rule, &workspace_dependencies(&good)), Vec::<String>::new());

    let bad = serde_json::json!({"packages": [
        package("toolshed-cli", &[("toolshed-runtime", Value::Null)]),
        package("toolshed-runtime", &[("toolshed-agent", Value::Null)]),
        package("toolshed-agent", &[("toolshed-tools", Value::Null)]),
        package("toolshed-tools", &[("toolshed-core", Value::Null)]),
        package("toolshed-core", &[("toolshed-tools", Value::Null)]),
        package("toolshed-extra", &[]),
    ]});
    assert_eq!(
        violations(&rule, &workspace_dependencies(&bad)),
        [
            "toolshed-agent must not depend on toolshed-tools (ARCHITECTURE.md, dependency rule)",
            "toolshed-core must not depend on toolshed-tools (ARCHITECTURE.md, dependency rule)",
            "toolshed-extra is not in ARCHITECTURE.md's dependency rule: add it to the diagram",
        ]
    );
}

/// ARCHITECTURE.md's code map names only what exists: every `crates/...` path it quotes is in
/// the tree, and every crate of the workspace has its entry.
#[test]
fn the_code_map_matches_the_tree() {
    let text = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        if quoted.starts_with("crates/") && !quoted.contains(' ') && !workspace_root().join(quoted).exists() {
            missing.push(quoted.to_string());
        }
    }
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
    for name in workspace_dependencies(&metadata()).keys() {
        assert!(text.contains(&format!("`crates/{name}/")), "ARCHITECTURE.md's code map has no entry for {name}");
    }
}
