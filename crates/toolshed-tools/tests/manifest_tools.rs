//! Manifest tools written in Python and shell, run through the full execution chain.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Project, alive, call, wait_until};
use serde_json::{Value, json};
use toolshed_core::config::Config;
use toolshed_core::permission::{ApproveAll, RejectAll};
use toolshed_core::registry::Source;
use toolshed_core::tool::{ToolOutput, tool_fn};
use toolshed_tools::custom::Scope;

const ECHO_CONTEXT_PY: &str = r#"import json, os, sys
args = json.load(sys.stdin)
env = {k: v for k, v in os.environ.items() if k.startswith("TOOLSHED_")}
print(json.dumps({"output": "got " + args["word"] * args.get("times", 1), "title": "echo", "metadata": {"env": env, "cwd": os.getcwd()}}))
"#;

fn echo_project() -> Project {
    let p = Project::new();
    p.write(
        ".toolshed/tools/echo.toml",
        r#"description = "Repeat a word, and report the call's context."
command = ["python3", "{dir}/echo.py"]

[args.word]
type = "string"
description = "The word."

[args.times]
type = "integer"
minimum = 1
optional = true
"#,
    );
    p.write(".toolshed/tools/echo.py", ECHO_CONTEXT_PY);
    p
}

#[test]
fn python_tool_gets_arguments_on_stdin_and_context_in_variables() {
    let p = echo_project();
    let custom = p.custom(&Scope::All);
    assert!(custom.problems().is_empty(), "{:?}", custom.problems());
    let result = call(&p.executor(&custom), "echo", json!({"word": "ab", "times": 2}));
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(result.output, "got abab");
    assert_eq!(result.title.as_deref(), Some("echo"));
    let env = &result.metadata["env"];
    let root = p.root.display().to_string();
    assert_eq!(env["TOOLSHED_SESSION_ID"], "sess-1");
    assert_eq!(env["TOOLSHED_MESSAGE_ID"], "msg-1");
    assert_eq!(env["TOOLSHED_CALL_ID"], "call-1");
    assert_eq!(env["TOOLSHED_AGENT"], "build");
    assert_eq!(env["TOOLSHED_DIRECTORY"], root.as_str());
    assert_eq!(env["TOOLSHED_WORKTREE"], root.as_str());
    assert_eq!(env["TOOLSHED_TOOL"], "echo");
    assert_eq!(env["TOOLSHED_TOOL_DIR"], p.root.join(".toolshed/tools").display().to_string());
    assert_eq!(result.metadata["cwd"], root.as_str());
}

#[test]
fn invalid_arguments_are_refused_before_the_tool_runs() {
    let p = Project::new();
    p.write(
        ".toolshed/tools/touch.toml",
        "description = \"Create a marker.\"\ncommand = [\"sh\", \"-c\", \"touch ran\"]\n[args]\nn = \"integer\"\n",
    );
    let custom = p.custom(&Scope::All);
    let executor = p.executor(&custom);
    let result = call(&executor, "touch", json!({"n": "three", "extra": true}));
    assert!(result.is_error);
    insta::assert_snapshot!(result.output, @r#"
    Invalid arguments for touch:
    - `n` must be an integer, but got a string "three"
    - unknown parameter `extra`; the parameters are `n`
    Fix the arguments and call touch again.
    "#);
    assert!(!p.root.join("ran").exists());
    let result = call(&executor, "touch", json!({}));
    assert!(result.output.contains("missing required parameter `n`"), "{}", result.output);
    assert!(!p.root.join("ran").exists());
}

#[test]
fn shell_tool_exit_code_is_an_error_carrying_stderr() {
    let p = Project::new();
    p.write(".toolshed/tools/fail.toml", "description = \"Always fails.\"\ncommand = [\"{dir}/fail.sh\"]\n");
    p.write(".toolshed/tools/fail.sh", "#!/bin/sh\necho 'partial stdout'\necho 'no such branch: main2' >&2\nexit 3\n");
    let custom = p.custom(&Scope::All);
    let result = call(&p.executor(&custom), "fail", json!({}));
    assert!(result.is_error);
    assert!(!result.fatal);
    assert_eq!(result.output, "no such branch: main2\n\n[fail exited with code 3]");
    assert_eq!(result.metadata["exit_code"], 3);
}

#[test]
fn a_long_standard_error_keeps_its_end_and_says_how_much_was_dropped() {
    let p = Project::new();
    p.write(".toolshed/tools/noisy.toml", "description = \"Fails loudly.\"\ncommand = [\"{dir}/noisy.sh\"]\n");
    p.write(".toolshed/tools/noisy.sh", "#!/bin/sh\nyes 'noise noise noise noise noise noise noise noise noise noise noise' | head -c 600000 >&2\necho 'the real error' >&2\nexit 1\n");
    let custom = p.custom(&Scope::All);
    let result = call(&p.executor(&custom), "noisy", json!({}));
    assert!(result.is_error);
    assert!(result.output.starts_with("[... the first "), "{}", &result.output[..200]);
    assert!(result.output.contains(" bytes of standard error were dropped; its last "), "{}", &result.output[..200]);
    assert!(
        result.output.ends_with("the real error\n\n[noisy exited with code 1]"),
        "{:?}",
        &result.output[result.output.len() - 80..]
    );
}

#[test]
fn shell_tool_stdout_is_the_result_when_it_is_not_structured() {
    let p = Project::new();
    p.write(
        ".toolshed/tools/greet.toml",
        "description = \"Greets.\"\ncommand = [\"sh\", \"-c\", \"read args; echo \\\"hello $args\\\"\"]\n[args]\nname = \"string\"\n",
    );
    let custom = p.custom(&Scope::All);
    let result = call(&p.executor(&custom), "greet", json!({"name": "Ada"}));
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(result.output, "hello {\"name\":\"Ada\"}");
}

#[test]
fn timeout_stops_the_tool_and_everything_it_started() {
    let p = Project::new();
    p.write(".toolshed/tools/hang.toml", "description = \"Hangs.\"\ncommand = [\"{dir}/hang.sh\"]\ntimeout_ms = 700\n");
    p.write(
        ".toolshed/tools/hang.sh",
        "#!/bin/sh\nsleep 60 &\necho $! > \"$TOOLSHED_WORKTREE/child.pid\"\necho started\nsleep 60\n",
    );
    let custom = p.custom(&Scope::All);
    let started = Instant::now();
    let result = call(&p.executor(&custom), "hang", json!({}));
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    assert!(result.is_error);
    assert_eq!(result.output, "started\n\nhang timed out after 700 ms and was stopped.");
    assert_eq!(result.metadata["timed_out"], true);
    let pid: u32 = std::fs::read_to_string(p.root.join("child.pid")).unwrap().trim().parse().unwrap();
    assert!(wait_until(|| !alive(pid)), "the background child {pid} survived the timeout");
}

#[test]
fn long_output_is_bounded_and_spilled_whole() {
    let p = Project::new();
    p.write(".toolshed/tools/count.toml", "description = \"Counts.\"\ncommand = [\"seq\", \"1\", \"5000\"]\n");
    // Past the tool's in-memory budget: spilled while streaming.
    p.write(".toolshed/tools/flood.toml", "description = \"Floods.\"\ncommand = [\"seq\", \"1\", \"400000\"]\n");
    let custom = p.custom(&Scope::All);
    let executor = p.executor(&custom);

    let result = call(&executor, "count", json!({}));
    assert!(!result.is_error);
    assert_eq!(result.metadata["truncated"], true);
    assert!(result.output.starts_with("1\n2\n3\n"));
    assert!(result.output.contains("[Output truncated: 5000 lines"), "{}", result.output);
    let spilled = std::fs::read_to_string(result.spill_path().unwrap()).unwrap();
    assert_eq!(spilled.lines().count(), 5000);

    let result = call(&executor, "flood", json!({}));
    assert!(!result.is_error);
    assert!(result.output.len() <= 51200, "{} bytes", result.output.len());
    assert!(
        result.output.contains("[Output truncated: 400000 lines"),
        "{}",
        &result.output[result.output.len() - 300..]
    );
    let spilled = std::fs::read_to_string(result.spill_path().unwrap()).unwrap();
    assert_eq!(spilled.lines().count(), 400000);
    assert!(spilled.ends_with("399999\n400000\n"));
}

#[test]
fn a_custom_tool_replaces_a_builtin_of_its_name() {
    let p = Project::new();
    p.write(
        ".toolshed/tools/read.toml",
        "description = \"Reads, the project's way.\"\ncommand = [\"sh\", \"-c\", \"echo custom read\"]\n[args]\npath = \"string\"\n",
    );
    let custom = p.custom(&Scope::All);
    let builtin_read = |r: &mut toolshed_core::Registry| {
        r.register_builtin(tool_fn("read", "Built-in read.", |_: Value, _| async {
            Ok(ToolOutput::text("builtin read"))
        }));
    };
    let executor = p.executor_with(&custom, builtin_read, &Config::default(), Arc::new(ApproveAll), None);
    let entry = executor.registry().get("read").unwrap();
    assert_eq!(entry.overrides, Some(Source::Builtin));
    assert_eq!(entry.source, Source::Custom(p.root.join(".toolshed/tools/read.toml")));
    assert_eq!(entry.spec().description, "Reads, the project's way.");
    assert_eq!(executor.registry().len(), 1);
    let result = call(&executor, "read", json!({"path": "x"}));
    assert_eq!(result.output, "custom read");
}

#[test]
fn custom_tools_ask_by_default_and_config_rules_override() {
    let p = Project::new();
    p.write(".toolshed/tools/deploy.toml", "description = \"Deploys.\"\ncommand = [\"echo\", \"deployed\"]\n");
    let custom = p.custom(&Scope::All);
    assert_eq!(custom.default_rules()[0].to_string(), "deploy \"*\" = ask");

    let rejecting = p.executor_with(&custom, |_| {}, &Config::default(), Arc::new(RejectAll), None);
    let result = call(&rejecting, "deploy", json!({}));
    assert!(result.is_error);
    assert!(result.output.starts_with("Permission for `deploy` on `*` was not granted"), "{}", result.output);

    let mut config = Config::default();
    config.merge_str(&p.root.join("toolshed.toml"), "[permission]\ndeploy = \"allow\"\n").unwrap();
    let allowed = p.executor_with(&custom, |_| {}, &config, Arc::new(RejectAll), None);
    assert_eq!(call(&allowed, "deploy", json!({})).output, "deployed");
}

#[test]
fn later_directories_override_earlier_ones_and_the_override_is_recorded() {
    let p = Project::new();
    let user = p.tmp.path().join("user-tools");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::write(user.join("hi.toml"), "description = \"User hi.\"\ncommand = [\"echo\", \"user\"]\n").unwrap();
    p.write(".toolshed/tools/hi.toml", "description = \"Project hi.\"\ncommand = [\"echo\", \"project\"]\n");
    std::fs::create_dir_all(p.root.join("sub/.toolshed/tools")).unwrap();
    p.write("sub/.toolshed/tools/hi.toml", "description = \"Sub hi.\"\ncommand = [\"echo\", \"sub\"]\n");
    let mut discover = p.discover();
    discover.user_manifest_dirs = vec![user.clone()];
    discover.cwd = p.root.join("sub");
    let custom = discover.run(&Scope::All);
    let executor = p.executor(&custom);
    let entry = executor.registry().get("hi").unwrap();
    assert_eq!(entry.spec().description, "Sub hi.");
    assert_eq!(entry.overrides, Some(Source::Custom(p.root.join(".toolshed/tools/hi.toml"))));
    assert_eq!(call(&executor, "hi", json!({})).output, "sub");
}

#[test]
fn a_broken_manifest_is_unavailable_and_says_why_when_called() {
    let p = Project::new();
    p.write(".toolshed/tools/broken.toml", "description = \"Broken.\"\ncommand = [\"echo\"]\n[args]\nn = \"int\"\n");
    p.write(".toolshed/tools/fine.toml", "description = \"Fine.\"\ncommand = [\"echo\", \"fine\"]\n");
    let custom = p.custom(&Scope::All);
    let problems: Vec<String> = custom.problems().iter().map(std::string::ToString::to_string).collect();
    assert_eq!(
        problems,
        [format!(
            "{}:4: [args.n]: unknown type `int`; use one of string, number, integer, boolean, array, object, null",
            p.root.join(".toolshed/tools/broken.toml").display()
        )]
    );
    assert_eq!(custom.unavailable()[0].name, "broken");
    let executor = p.executor(&custom);
    let result = call(&executor, "broken", json!({}));
    assert!(result.is_error);
    assert!(
        result.output.starts_with("The custom tool broken cannot be used: [args.n]: unknown type `int`"),
        "{}",
        result.output
    );
    assert_eq!(call(&executor, "fine", json!({})).output, "fine");
}
