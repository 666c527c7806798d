//! Custom tools through the `toolshed` command: listing, `tools --check`, overrides, default
//! permissions, and calls of manifest and OpenCode tools.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `toolshed` in `root` with an isolated config and data dir and `PATH` as given.
fn toolshed_with_path(root: &Path, args: &[&str], path: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("HOME", root.join(".home"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn toolshed(root: &Path, args: &[&str]) -> Output {
    toolshed_with_path(root, args, &std::env::var("PATH").unwrap())
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    write(&root, ".toolshed/tools/greet.toml", GREET);
    (tmp, root)
}

const GREET: &str = r#"description = "Greet someone."
command = ["sed", "-E", 's/.*"name": *"([^"]*)".*/Hello, \1!/']

[args.name]
type = "string"
description = "Who to greet."
"#;

#[test]
fn check_prints_file_line_and_problem_and_exits_1() {
    let (_tmp, root) = project();
    write(&root, ".toolshed/tools/bad.toml", "description = \"Bad.\"\ncommand = [\"true\"]\ntimeout = 5\n");
    let out = toolshed(&root, &["tools", "--check"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "ok  greet  .toolshed/tools/greet.toml\n\
         .toolshed/tools/bad.toml:3: unknown field `timeout`, expected one of `description`, `command`, `args`, `timeout_ms`, `read_only`, `exposure`, `tool`\n\
         1 custom tool ok, 1 problem\n"
    );
    std::fs::remove_file(root.join(".toolshed/tools/bad.toml")).unwrap();
    let out = toolshed(&root, &["tools", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).ends_with("1 custom tool ok, 0 problems\n"));

    // A definition every request would carry at 50 KB is not offered.
    let values: Vec<String> = (0..5000).map(|i| format!("\"value{i}\"")).collect();
    write(
        &root,
        ".toolshed/tools/huge.toml",
        &format!(
            "description = \"Huge.\"\ncommand = [\"true\"]\n[args.pick]\ntype = \"string\"\nenum = [{}]\n",
            values.join(", ")
        ),
    );
    let out = toolshed(&root, &["tools", "--check"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("huge: its description and arguments take"), "{}", stdout(&out));
}

#[test]
fn listing_shows_broken_tools_as_unavailable_instead_of_failing() {
    let (_tmp, root) = project();
    write(&root, ".toolshed/tools/bad.toml", "description = \"Bad.\"\n");
    let out = toolshed(&root, &["tools"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names: Vec<String> = json(&out)
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["source"].as_str().unwrap().starts_with("custom:"))
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["greet"]);
    assert!(stderr(&out).contains("custom tool `bad` is unavailable: missing `command`"), "{}", stderr(&out));
    let all = json(&toolshed(&root, &["tools", "--all"]));
    let bad = all.as_array().unwrap().iter().find(|t| t["name"] == "bad").unwrap();
    assert_eq!(bad["exposure"], "hidden");
    assert!(bad["unavailable"].as_str().unwrap().starts_with("missing `command`"), "{bad}");
}

#[test]
fn a_project_tool_overriding_a_user_tool_shows_the_override() {
    let (_tmp, root) = project();
    let user = write(
        &root,
        ".xdg-config/toolshed/tools/greet.toml",
        "description = \"User greet.\"\ncommand = [\"echo\", \"hi\"]\n",
    );
    let tools = json(&toolshed(&root, &["tools"]));
    let greet = tools.as_array().unwrap().iter().find(|t| t["name"] == "greet").unwrap();
    assert_eq!(greet["name"], "greet");
    assert_eq!(greet["description"], "Greet someone.");
    assert_eq!(greet["source"], format!("custom:{}", root.join(".toolshed/tools/greet.toml").display()));
    assert_eq!(greet["overrides"], format!("custom:{}", user.display()));
}

#[test]
fn calls_ask_by_default_and_permission_rules_can_allow_them() {
    let (_tmp, root) = project();
    let out = toolshed(&root, &["call", "greet", r#"{"name": "Ada"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("Permission for `greet` on `*` was not granted"), "{}", stderr(&out));

    let out = toolshed(&root, &["call", "greet", r#"{"name": "Ada"}"#, "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello, Ada!\n");

    write(&root, "toolshed.toml", "[permission]\ngreet = \"allow\"\n");
    let out = toolshed(&root, &["call", "greet", r#"{"name": "Ada"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["output"], "Hello, Ada!");

    let explain = toolshed(&root, &["permission", "explain", "greet", r#"{"name": "Ada"}"#, "--json"]);
    assert_eq!(json(&explain)["decision"], "allow");
}

/// The node_modules holding Bun and zod 4 that `.ci/run` prepares.
fn js_modules() -> PathBuf {
    let dir = std::env::var_os("TOOLSHED_TEST_JS_MODULES")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/toolshed-ci/node_modules")))
        .unwrap();
    assert!(
        dir.join(".bin/bun").exists() && dir.join("zod/package.json").exists(),
        "the JS tool tests need Bun and zod 4 in {}: run .ci/run",
        dir.display()
    );
    dir
}

/// Bun on `PATH` and zod in the project's data dir, prepared as `.ci/run` leaves them: the
/// `PATH` to run toolshed with.
fn js_path(root: &Path) -> String {
    let modules = js_modules();
    std::fs::create_dir_all(root.join(".data/custom-tools/node_modules")).unwrap();
    std::os::unix::fs::symlink(modules.join("zod"), root.join(".data/custom-tools/node_modules/zod")).unwrap();
    format!("{}:{}", modules.join(".bin").display(), std::env::var("PATH").unwrap())
}

#[test]
fn opencode_tools_list_and_run_through_bun_and_manifest_calls_never_start_it() {
    let (_tmp, root) = project();
    let path = js_path(&root);
    write(
        &root,
        ".opencode/tools/math.ts",
        r#"import { tool } from "@opencode-ai/plugin"
import { writeFileSync } from "node:fs"
writeFileSync(".imported", "")

export default tool({
  description: "Add two integers.",
  args: { a: tool.schema.number().int(), b: tool.schema.number().int() },
  async execute(args) {
    return String(args.a + args.b)
  },
})
"#,
    );
    let marker = root.join(".imported");

    let out = toolshed_with_path(&root, &["call", "greet", r#"{"name": "Bo"}"#, "--yes"], &path);
    assert_eq!(stdout(&out), "Hello, Bo!\n", "{}", stderr(&out));
    assert!(!marker.exists(), "calling a manifest tool imported the OpenCode tool file");

    let out = toolshed_with_path(&root, &["tools"], &path);
    let names: Vec<String> = json(&out)
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["source"].as_str().unwrap().starts_with("custom:"))
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["math", "greet"], "{}", stderr(&out));
    assert!(marker.exists());

    std::fs::remove_file(&marker).unwrap();
    let out = toolshed_with_path(&root, &["tools"], &path);
    let custom =
        json(&out).as_array().unwrap().iter().filter(|t| t["source"].as_str().unwrap().starts_with("custom:")).count();
    assert_eq!(custom, 2);
    assert!(!marker.exists(), "an unchanged tool file was imported again instead of using the cache");

    let out = toolshed_with_path(&root, &["call", "math", r#"{"a": 2, "b": 40}"#, "--yes"], &path);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "42\n");
}

/// The README's custom tools example works exactly as printed: every fenced block whose info string
/// names a file (```toml path) is written into a fresh project, then every `$ command` of the
/// console blocks runs there and must print what the doc shows.
#[test]
fn docs_example_works_as_printed() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let modules = js_modules();
    std::fs::create_dir_all(root.join(".data/custom-tools/node_modules")).unwrap();
    std::os::unix::fs::symlink(modules.join("zod"), root.join(".data/custom-tools/node_modules/zod")).unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_toolshed")).parent().unwrap();
    let path = format!("{}:{}:{}", bin.display(), modules.join(".bin").display(), std::env::var("PATH").unwrap());

    let mut steps: Vec<(String, String)> = Vec::new();
    let mut lines = doc.lines();
    let mut files = 0;
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else { continue };
        let body: Vec<&str> = lines.by_ref().take_while(|l| !l.starts_with("```")).collect();
        match info.split_once(' ') {
            Some((_, file)) => {
                write(&root, file, &format!("{}\n", body.join("\n")));
                files += 1;
            }
            None if info == "console" => {
                for l in body {
                    match l.strip_prefix("$ ") {
                        Some(cmd) => steps.push((cmd.to_string(), String::new())),
                        None => steps.last_mut().unwrap().1.push_str(&format!("{l}\n")),
                    }
                }
            }
            None => {}
        }
    }
    assert_eq!(files, 4, "the doc shows four files");
    assert!(steps.len() >= 4);
    for (cmd, expected) in steps {
        let out = Command::new("sh")
            .args(["-c", &cmd])
            .current_dir(&root)
            .env("PATH", &path)
            .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
            .env("TOOLSHED_DATA_DIR", root.join(".data"))
            .env_remove("OPENCODE_CONFIG_DIR")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "$ {cmd}\n{}{}", stdout(&out), stderr(&out));
        assert_eq!(stdout(&out), expected, "$ {cmd}");
    }
}

/// A helper module next to the tools (no tool export), as OpenCode projects have them: OpenCode
/// ignores it, so `tools --check` passes and a listing says nothing about it.
#[test]
fn a_helper_module_in_the_tools_directory_is_not_a_broken_tool() {
    let (_tmp, root) = project();
    let path = js_path(&root);
    write(
        &root,
        ".opencode/tools/api.ts",
        "export function apiUrl(path: string): string {\n  return `https://api.example.com/${path}`\n}\n",
    );
    write(
        &root,
        ".opencode/tools/endpoint.ts",
        r#"import { tool } from "@opencode-ai/plugin"
import { apiUrl } from "./api"

export default tool({
  description: "Show the API URL of a path.",
  args: { path: tool.schema.string() },
  async execute(args) {
    return apiUrl(args.path)
  },
})
"#,
    );
    let out = toolshed_with_path(&root, &["tools", "--check"], &path);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(!stdout(&out).contains("api.ts"), "{}", stdout(&out));
    assert!(stdout(&out).ends_with("2 custom tools ok, 0 problems\n"), "{}", stdout(&out));
    for _ in 0..2 {
        let out = toolshed_with_path(&root, &["tools"], &path);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(!stderr(&out).contains("api"), "{}", stderr(&out));
        let names: Vec<String> = json(&out)
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["source"].as_str().unwrap().starts_with("custom:"))
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["endpoint", "greet"]);
    }
    let out = toolshed_with_path(&root, &["call", "endpoint", r#"{"path": "v2/users"}"#, "--yes"], &path);
    assert_eq!(stdout(&out), "https://api.example.com/v2/users\n", "{}", stderr(&out));
}

/// OpenCode tool files run in the calling agent's sandbox: `plan` runs commands read-only, so a
/// tool it calls cannot write either, while `build`'s call of the same tool can (each agent gets
/// a host process of its own).
#[test]
fn an_opencode_tool_runs_in_the_calling_agents_sandbox() {
    let (_tmp, root) = project();
    let path = js_path(&root);
    write(
        &root,
        ".opencode/tools/touch.js",
        r#"import { writeFileSync } from "node:fs";
export default {
  description: "Writes made.txt",
  args: {},
  async execute() {
    try { writeFileSync("made.txt", "x"); return "wrote"; } catch (e) { return "refused: " + e.code; }
  },
}
"#,
    );
    let probe = toolshed_with_path(&root, &["call", "bash", r#"{"command": "true"}"#, "--json"], &path);
    if json(&probe)["metadata"]["sandbox"] != "workspace-write" {
        let _ = std::io::Write::write_all(&mut std::io::stderr(), b"SKIP: no Landlock here\n");
        return;
    }
    let out = toolshed_with_path(&root, &["call", "touch", "{}", "--yes", "-a", "plan"], &path);
    assert_eq!(stdout(&out).trim_end(), "refused: EACCES", "{}", stderr(&out));
    assert!(!root.join("made.txt").exists());
    let out = toolshed_with_path(&root, &["call", "touch", "{}", "--yes"], &path);
    assert_eq!(stdout(&out).trim_end(), "wrote", "{}", stderr(&out));
}

/// A process an OpenCode tool starts with its output inherited writes into the host's stream
/// too, here without a newline: the call still gets its result (it waited for its 10-minute
/// time limit).
#[test]
fn output_a_tools_child_writes_into_the_host_stream_does_not_hide_the_result() {
    let (_tmp, root) = project();
    let path = js_path(&root);
    write(
        &root,
        ".opencode/tools/inherit.ts",
        r#"import { tool } from "@opencode-ai/plugin"
import { execSync } from "node:child_process"

export default tool({
  description: "Reports progress through a child process, then answers.",
  args: {},
  async execute() {
    execSync("printf 'progress: 50%%'", { stdio: "inherit" })
    return "done"
  },
})
"#,
    );
    let out = toolshed_with_path(&root, &["call", "inherit", "{}", "--yes"], &path);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
}

/// A JS tool's huge result is not carried whole: the host sends its first and last 8 M
/// characters with a line saying how much it left out, and toolshed keeps that in a spill file
/// as it does any long output.
#[test]
fn a_huge_js_result_is_cut_in_the_host_before_it_crosses_the_pipe() {
    let (_tmp, root) = project();
    let path = js_path(&root);
    write(
        &root,
        ".opencode/tools/huge.ts",
        r#"import { tool } from "@opencode-ai/plugin"

export default tool({
  description: "Returns a very long text.",
  args: {},
  async execute() {
    return "start\n" + "x".repeat(60_000_000) + "\nEND"
  },
})
"#,
    );
    let out = toolshed_with_path(&root, &["call", "huge", "{}", "--yes"], &path);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("start\n"), "{}", &text[..100.min(text.len())]);
    let saved = text.split("The full output is saved in ").nth(1).and_then(|t| t.split(';').next()).unwrap();
    let spill = std::fs::read_to_string(saved.trim()).unwrap();
    assert!(spill.len() < 17 << 20, "{} bytes", spill.len());
    assert!(spill.contains("characters of this tool's output left out"));
    assert!(spill.trim_end().ends_with("END"));
}
