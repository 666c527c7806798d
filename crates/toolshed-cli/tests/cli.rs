//! The CLI contract: output shapes and exit codes (0 ok, 1 tool error, 2 usage/config error).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `toolshed` in `root` with an isolated config and data dir.
fn toolshed(root: &Path, args: &[&str]) -> Output {
    toolshed_stdin(root, args, "")
}

fn toolshed_stdin(root: &Path, args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn tools_json_lists_name_description_parameters_exposure_source_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let out = toolshed(tmp.path(), &["tools", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let tools = json(&out);
    for tool in tools.as_array().unwrap() {
        for key in ["name", "description", "parameters", "exposure", "source", "bytes"] {
            assert!(tool.get(key).is_some(), "{key} missing in {tool}");
        }
        assert_eq!(tool["exposure"], "direct");
        assert_eq!(tool["parameters"]["type"], "object");
    }
}

#[test]
fn every_wire_format_prints_a_tools_array() {
    let tmp = tempfile::tempdir().unwrap();
    for format in ["openai-chat", "openai-responses", "anthropic", "mcp"] {
        let out = toolshed(tmp.path(), &["tools", "--format", format]);
        assert_eq!(out.status.code(), Some(0), "{format}: {}", stderr(&out));
        assert!(json(&out).is_array(), "{format}");
    }
}

#[test]
fn unknown_tool_exits_1_with_an_error_result() {
    let tmp = tempfile::tempdir().unwrap();
    let out = toolshed(tmp.path(), &["call", "nosuch", "{}", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let result = json(&out);
    assert_eq!(result["tool"], "nosuch");
    assert_eq!(result["is_error"], true);
    assert!(result["output"].as_str().unwrap().starts_with("Unknown tool \"nosuch\"."), "{result}");
    assert_eq!(result["attachments"], serde_json::json!([]));
    let out = toolshed(tmp.path(), &["call", "raed", "{}", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let output = json(&out)["output"].as_str().unwrap().to_string();
    assert!(output.contains("Did you mean") && output.contains("\"read\""), "{output}");
    // One of toolshed's own tools that needs setting up: the person is told what and where.
    let out = toolshed(tmp.path(), &["call", "websearch", r#"{"query":"x"}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("[websearch]") && stderr(&out).contains("toolshed doctor"), "{}", stderr(&out));
}

#[test]
fn bad_flags_and_formats_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(toolshed(tmp.path(), &["tools", "--bogus"]).status.code(), Some(2));
    assert_eq!(toolshed(tmp.path(), &["tools", "--format", "xml"]).status.code(), Some(2));
    assert_eq!(toolshed(tmp.path(), &["frobnicate"]).status.code(), Some(2));
    let out = toolshed(tmp.path(), &["tools", "--agent", "nobody"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown agent `nobody`"), "{}", stderr(&out));
}

#[test]
fn config_errors_exit_2_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("toolshed.toml"), "[output]\nmax_lines = 10\nmax_byte = 5\n").unwrap();
    let out = toolshed(tmp.path(), &["tools"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("toolshed.toml:3:1: unknown field `max_byte`"), "{err}");
}

#[test]
fn missing_root_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", tmp.path().join("absent").to_str().unwrap(), "tools"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--root"), "{}", stderr(&out));
}

#[test]
fn malformed_arguments_exit_1_with_a_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let out = toolshed_stdin(tmp.path(), &["call", "read", "-", "--json"], "{\"file_path\": ");
    assert_eq!(out.status.code(), Some(1));
    let result = json(&out);
    assert_eq!(result["is_error"], true);
    assert!(result["output"].as_str().unwrap().starts_with("The arguments for read are not valid JSON"), "{result}");
    let out = toolshed(tmp.path(), &["call", "read", "{\"file_path\": 3}", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(json(&out)["output"].as_str().unwrap().contains("`file_path` must be a string"), "{}", json(&out));
}

#[test]
fn built_in_tools_take_other_agents_names_and_refuse_unknown_parameters() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "hello world\n").unwrap();
    // OpenCode's spellings of edit's parameters are the same words: taken.
    let out =
        toolshed(tmp.path(), &["call", "edit", r#"{"filePath": "a.txt", "oldString": "hello", "newString": "bye"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(), "bye world\n");
    // Claude Code's names for grep's parameters are what they say: `-i` ignores case (without it
    // `BYE` would not match), `-n` changes nothing (lines are always numbered).
    let out = toolshed(tmp.path(), &["call", "grep", r#"{"pattern": "BYE", "-i": true, "-n": true, "glob": "*.txt"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1: bye world"), "{}", String::from_utf8_lossy(&out.stdout));
    // Codex's exec_command spelling of bash's command.
    let out = toolshed(tmp.path(), &["call", "bash", r#"{"cmd": "echo from-cmd"}"#]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("from-cmd"));
    // Any other word is refused, never ignored: grep cannot match across lines.
    let out = toolshed(tmp.path(), &["call", "grep", r#"{"pattern": "BYE", "multiline": true}"#, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let output = json(&out)["output"].as_str().unwrap().to_string();
    assert!(output.contains("unknown parameter `multiline`; the parameters are `pattern`"), "{output}");
}

#[test]
fn call_runs_a_tool_and_reads_arguments_from_stdin() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let out = toolshed_stdin(tmp.path(), &["call", "read", "-"], "{\"file_path\": \"notes.txt\"}");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("1: alpha\n2: beta\n"), "{text}");
}

#[test]
fn plan_agent_sees_no_editing_tools_and_is_denied_edits_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a.txt"), "one\n").unwrap();
    let out = toolshed(tmp.path(), &["tools", "--agent", "plan", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let names: Vec<String> =
        json(&out).as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    for hidden in ["edit", "write", "apply_patch"] {
        assert!(!names.contains(&hidden.to_string()), "{hidden} shown to plan: {names:?}");
    }
    assert!(names.contains(&"read".to_string()));
    let args = r#"{"file_path": "a.txt", "old_string": "one", "new_string": "two"}"#;
    let out = toolshed(tmp.path(), &["call", "edit", args, "--agent", "plan", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let output = json(&out)["output"].as_str().unwrap().to_string();
    assert!(output.starts_with("Permission denied: the rules of agent `plan` forbid `edit` on `a.txt`"), "{output}");
    assert_eq!(std::fs::read_to_string(tmp.path().join("a.txt")).unwrap(), "one\n", "nothing may change");
}

#[test]
fn tools_lists_what_one_model_gets_never_the_union_of_the_families() {
    let tmp = tempfile::tempdir().unwrap();
    let names = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["tools", "--format", "json"];
        all.extend_from_slice(args);
        let out = toolshed(tmp.path(), &all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        json(&out).as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
    };
    let has = |names: &[String], tool: &str| names.iter().any(|n| n == tool);
    // No model anywhere: the documented default's family (edit and write).
    let default = names(&[]);
    assert!(has(&default, "edit") && has(&default, "write") && !has(&default, "apply_patch"), "{default:?}");
    // The flag's family.
    let gpt = names(&["-m", "openai/gpt-5.1"]);
    assert!(has(&gpt, "apply_patch") && !has(&gpt, "edit") && !has(&gpt, "write"), "{gpt:?}");
    // The configured model's family.
    std::fs::write(tmp.path().join("toolshed.toml"), "model = \"openai/gpt-5.1\"\n").unwrap();
    let configured = names(&[]);
    assert!(has(&configured, "apply_patch") && !has(&configured, "edit"), "{configured:?}");
}

#[test]
fn env_files_ask_and_yes_approves_but_never_a_deny() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(".env"), "TOKEN=1\n").unwrap();
    let out = toolshed(tmp.path(), &["call", "read", r#"{"file_path": ".env"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(json(&out)["output"].as_str().unwrap().contains("rerun with --yes"), "{}", json(&out));
    let out = toolshed(tmp.path(), &["call", "read", r#"{"file_path": ".env"}"#, "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::write(tmp.path().join("toolshed.toml"), "[permission]\nread = { \"*.env\" = \"deny\" }\n").unwrap();
    let out = toolshed(tmp.path(), &["call", "read", r#"{"file_path": ".env"}"#, "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(json(&out)["output"].as_str().unwrap().starts_with("Permission denied"), "{}", json(&out));
}

#[test]
fn permission_explain_shows_a_secondary_request_whose_deny_asks() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("toolshed.toml"),
        "[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\" }\n",
    )
    .unwrap();
    let args = r#"{"command": "echo rm x"}"#;
    let out = toolshed(tmp.path(), &["permission", "explain", "bash", args, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let explained = json(&out);
    assert_eq!(explained["decision"], "ask", "{explained}");
    let secondary = explained["requests"].as_array().unwrap().iter().find(|r| r["secondary"] == true).unwrap();
    assert_eq!(secondary["patterns"][0]["pattern"], "rm x", "{secondary}");
    assert_eq!(secondary["patterns"][0]["action"], "ask", "{secondary}");
    let out = toolshed(tmp.path(), &["permission", "explain", "bash", args]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("secondary request `bash`"), "{text}");
    assert!(text.contains("decision: ask"), "{text}");
}

/// Whether this kernel can sandbox shell commands; prints a SKIP line (to the real stderr, so
/// the test log shows it) when it cannot.
#[cfg(unix)]
fn sandbox_or_skip(test: &str) -> bool {
    use std::io::Write;
    let support = toolshed_tools::shell::sandbox::support();
    if !support.available() {
        let _ = writeln!(std::io::stderr(), "SKIP {test}: {support}");
    }
    support.available()
}

#[cfg(unix)]
#[test]
fn call_bash_prints_the_output_and_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let out = toolshed(tmp.path(), &["call", "bash", r#"{"command":"echo hi"}"#, "--yes", "--json"]);
    let result = json(&out);
    if !sandbox_or_skip("call_bash_prints_the_output_and_exit_code (default workspace-write sandbox)") {
        assert_eq!(out.status.code(), Some(1));
        assert!(result["output"].as_str().unwrap().contains("allow_unsandboxed = true"), "{result}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(result["output"], "hi\n\nExit code: 0");
    assert_eq!(result["metadata"]["exit_code"], 0);
    // A command that fails makes `toolshed call` fail, for scripts; the tool itself did not.
    let out = toolshed(tmp.path(), &["call", "bash", r#"{"command":"exit 3"}"#, "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(json(&out)["is_error"], false);
}

#[cfg(unix)]
#[test]
fn sandbox_mode_from_the_config_applies_to_bash() {
    let tmp = tempfile::tempdir().unwrap();
    if !sandbox_or_skip("sandbox_mode_from_the_config_applies_to_bash") {
        return;
    }
    std::fs::write(tmp.path().join("toolshed.toml"), "[sandbox]\nmode = \"read-only\"\n").unwrap();
    let out = toolshed(tmp.path(), &["call", "bash", r#"{"command":"echo x > made.txt"}"#, "--json"]);
    let result = json(&out);
    assert!(result["output"].as_str().unwrap().contains("Permission denied"), "{result}");
    assert_eq!(result["metadata"]["sandbox"], "read-only");
    assert!(!tmp.path().join("made.txt").exists());
}

#[test]
fn an_empty_prompt_a_zero_step_limit_and_a_bad_base_url_are_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = toolshed(tmp.path(), &["run", "  "]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("the prompt is empty"), "{}", stderr(&out));
    std::fs::write(tmp.path().join("toolshed.toml"), "[session]\nmax_steps = 0\n").unwrap();
    let out = toolshed(tmp.path(), &["tools"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("max_steps must be at least 1"), "{}", stderr(&out));
    std::fs::write(
        tmp.path().join("toolshed.toml"),
        "[provider.x]\nkind = \"openai-chat\"\nbase_url = \"not a url\"\n",
    )
    .unwrap();
    let out = toolshed(tmp.path(), &["run", "hi", "--model", "x/m"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("base_url `not a url` is not an http(s) URL"), "{}", stderr(&out));
}
