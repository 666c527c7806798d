//! What every request carries: the build agent's tool list stays within its byte budget for both
//! model families, and every description still says the facts docs/tool-descriptions.md lists
//! for it — through the real binary, as `toolshed tools --format openai-chat` prints the list.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The most bytes the build agent's tool list may take (issue 21), as `tools --format
/// openai-chat` prints it: everything a first request carries, the runtime's `task` included.
const BUDGET: usize = 12_000;

/// The runtime's tools `run`, `chat` and `acp` add for an agent that may start sub-agents.
const RUNTIME_TOOLS: &[&str] = &["task", "task_wait", "task_result", "task_continue", "task_cancel", "plan_exit"];

/// One model of each family: `edit` + `write`, and `apply_patch`.
const FAMILIES: &[&str] = &["anthropic/claude-sonnet-4-5", "openai/gpt-5"];

fn tools(root: &Path, model: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap(), "tools", "--format", "openai-chat", "--model", model])
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The tool's name and every description in its entry (its own and its parameters').
fn described(entry: &Value) -> (String, String) {
    fn collect(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("description", Value::String(text)) => {
                            out.push_str(text);
                            out.push('\n');
                        }
                        _ => collect(v, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
            _ => {}
        }
    }
    let tool = entry.get("function").or_else(|| entry.get("custom")).unwrap();
    let mut text = String::new();
    collect(tool, &mut text);
    (tool["name"].as_str().unwrap().to_string(), text)
}

/// The must-say facts of docs/tool-descriptions.md: `### tool` headings, then `- \`words\`: why`.
fn facts() -> Vec<(String, String)> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tool-descriptions.md")).unwrap();
    let section = doc.split("## What each description must say").nth(1).expect("the facts section");
    let mut tool = None;
    let mut facts = Vec::new();
    for line in section.lines() {
        if let Some(name) = line.strip_prefix("### ") {
            tool = Some(name.trim().to_string());
        } else if let Some(rest) = line.strip_prefix("- `") {
            let needle = rest.split('`').next().unwrap();
            facts.push((tool.clone().expect("a fact under a tool heading"), needle.to_string()));
        }
    }
    facts
}

/// A worktree where `lsp` is sent: a configured language server (`/bin/sh` stands in for its
/// program; nothing starts it) and a file of its language.
fn worktree_with_a_language_server() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("toolshed.toml"), "[lsp.fake]\ncommand = \"/bin/sh\"\nextensions = [\"fk\"]\n")
        .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/main.fk"), "").unwrap();
    dir
}

#[test]
fn lsp_is_sent_only_where_a_language_server_can_serve_the_worktree() {
    let names = |root: &Path| -> Vec<String> {
        let entries: Vec<Value> = serde_json::from_str(&tools(root, FAMILIES[0])).unwrap();
        entries.iter().map(|e| described(e).0).collect()
    };
    let served = worktree_with_a_language_server();
    assert!(names(served.path()).contains(&"lsp".to_string()));
    // No file of its language: not sent.
    std::fs::remove_file(served.path().join("src/main.fk")).unwrap();
    assert!(!names(served.path()).contains(&"lsp".to_string()));
    // Its program missing: not sent either, whatever the files.
    std::fs::write(served.path().join("src/main.fk"), "").unwrap();
    std::fs::write(
        served.path().join("toolshed.toml"),
        "[lsp.fake]\ncommand = \"/nonexistent/fake-ls\"\nextensions = [\"fk\"]\n",
    )
    .unwrap();
    assert!(!names(served.path()).contains(&"lsp".to_string()));
    // A program that cannot start: sent until it has failed to, then not.
    std::fs::write(
        served.path().join("toolshed.toml"),
        "[lsp.fake]\ncommand = \"/bin/false\"\nextensions = [\"fk\"]\n",
    )
    .unwrap();
    assert!(names(served.path()).contains(&"lsp".to_string()));
    let root = served.path();
    let call = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap(), "call", "lsp"])
        .arg(r#"{"operation":"document_symbols","file_path":"src/main.fk"}"#)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&call.stderr).contains("exited with status 1"), "{call:?}");
    assert!(!names(served.path()).contains(&"lsp".to_string()));
}

#[test]
fn the_build_agents_tools_fit_the_budget_and_say_what_they_must() {
    // With `lsp` sent, the largest list a plain worktree gets.
    let dir = worktree_with_a_language_server();
    let facts = facts();
    assert!(facts.len() >= 40, "the facts list was not read: {facts:?}");
    let mut seen = std::collections::BTreeSet::new();
    for model in FAMILIES {
        let printed = tools(dir.path(), model);
        let entries: Vec<Value> = serde_json::from_str(&printed).unwrap();
        let names: Vec<String> = entries.iter().map(|e| described(e).0).collect();
        let own: Vec<&Value> = entries.iter().filter(|e| !RUNTIME_TOOLS.contains(&described(e).0.as_str())).collect();
        let own_bytes = serde_json::to_string_pretty(&own).unwrap().len();
        eprintln!(
            "{model}: {} bytes as printed, {own_bytes} of them the agent's own tools; {} tools: {}",
            printed.len(),
            names.len(),
            names.join(" ")
        );
        assert!(printed.len() <= BUDGET, "{model}: {} bytes over the budget of {BUDGET}", printed.len());
        // The sub-agent tool is sent, its background follow-ups only once a task runs.
        assert!(names.iter().any(|n| n == "task"), "{names:?}");
        for later in ["task_wait", "task_result", "task_continue", "task_cancel"] {
            assert!(!names.iter().any(|n| n == later), "{model} sends {later} before any background task");
        }
        for name in ["read", "list", "glob", "grep", "bash", "bash_output", "webfetch", "todo_write", "lsp"] {
            assert!(names.iter().any(|n| n == name), "{model} lost {name}: {names:?}");
        }
        for gone in ["bash_kill", "todo_read"] {
            assert!(!names.iter().any(|n| n == gone), "{model} still sends {gone}");
        }
        for entry in &entries {
            let (name, text) = described(entry);
            for (_, needle) in facts.iter().filter(|(tool, _)| *tool == name) {
                assert!(text.contains(needle.as_str()), "{model}: {name}'s description lost `{needle}`:\n{text}");
            }
            seen.insert(name);
        }
    }
    for (tool, _) in &facts {
        assert!(seen.contains(tool), "docs/tool-descriptions.md lists facts for {tool}, which no family sends");
    }
    // Each family edits files one way.
    let anthropic = tools(dir.path(), FAMILIES[0]);
    assert!(anthropic.contains("\"name\": \"edit\"") && !anthropic.contains("\"name\": \"apply_patch\""));
    let gpt = tools(dir.path(), FAMILIES[1]);
    assert!(gpt.contains("\"name\": \"apply_patch\"") && !gpt.contains("\"name\": \"edit\""));
}

/// The table of other agents' parameter names in docs/tool-descriptions.md: per tool, each name
/// and the parameter it is taken as (`None`: taken, with no effect).
fn documented_aliases() -> std::collections::BTreeMap<String, Vec<(String, Option<String>)>> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/tool-descriptions.md")).unwrap();
    let table = doc.split("| tool | other names |").nth(1).expect("the table of other names");
    let mut out = std::collections::BTreeMap::new();
    for row in table.lines().skip(2).map(str::trim).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let pairs = cells[1]
            .split(", ")
            .map(|pair| {
                let (name, to) = pair.split_once(" → ").unwrap();
                let to = (to != "no effect").then(|| to.trim_matches('`').to_string());
                (name.trim_matches('`').to_string(), to)
            })
            .collect();
        out.insert(cells[0].to_string(), pairs);
    }
    out
}

#[test]
fn the_other_agents_names_each_tool_takes_are_the_documented_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut taken = std::collections::BTreeMap::new();
    for model in FAMILIES {
        let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .env("TOOLSHED_TRUST_PROJECT", "1")
            .args(["--root", dir.path().to_str().unwrap(), "tools", "--all", "--model", model])
            .current_dir(dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join(".xdg-config"))
            .env("TOOLSHED_DATA_DIR", dir.path().join(".data"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
        for tool in listed.as_array().unwrap() {
            let Some(aliases) = tool["aliases"].as_object() else { continue };
            let pairs: Vec<(String, Option<String>)> =
                aliases.iter().map(|(name, to)| (name.clone(), to.as_str().map(String::from))).collect();
            taken.insert(tool["name"].as_str().unwrap().to_string(), pairs);
        }
    }
    assert_eq!(taken, documented_aliases());
}

#[test]
fn a_listing_model_is_checked_wherever_it_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (args, said) in [
        (vec!["tools", "-m", "gpt5"], "--model: model `gpt5` is not of the form PROVIDER/MODEL"),
        (vec!["tools", "-c", "model=gpt5"], "the config's `model`: model `gpt5` is not of the form PROVIDER/MODEL"),
        (vec!["tools", "-c", "agent.build.model=x"], "the agent's `model`: model `x` is not of the form"),
        (vec!["tools", "-c", "model=foo/x"], "the config's `model`: unknown provider `foo` in model `foo/x`"),
        (vec!["tools", "-m", "foo/x", "--format", "table"], "--model: unknown provider `foo`"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .env("TOOLSHED_TRUST_PROJECT", "1")
            .args(["--root", root.to_str().unwrap()])
            .args(&args)
            .current_dir(root)
            .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
            .env("TOOLSHED_DATA_DIR", root.join(".data"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // A known provider needs no API key to list what its models get.
    let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap(), "tools", "-m", "openai/gpt-5.1", "--format", "table"])
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("apply_patch"));
}
