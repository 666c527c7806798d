//! OpenCode tool files (`.opencode/tools/*.ts`) run unchanged through the JS host under Bun.
//! Bun and zod 4 come prepared by `.ci/run`; nothing is fetched while these tests run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Project, call};
use serde_json::json;
use toolshed_core::config::Config;
use toolshed_core::permission::{ApprovalRequest, Approver, Reply};
use toolshed_core::tool::{BoxFuture, Exposure};
use toolshed_tools::custom::Scope;

const MATH_TS: &str = r#"import { tool } from "@opencode-ai/plugin"

export default tool({
  description: "Add two integers.",
  args: {
    a: tool.schema.number().int().describe("First number"),
    b: tool.schema.number().int().default(10).describe("Second number"),
  },
  async execute(args: { a: number; b: number }) {
    return String(args.a + args.b)
  },
})

export const multiply = tool({
  description: "Multiply two numbers.",
  args: { a: tool.schema.number(), b: tool.schema.number() },
  async execute(args) {
    return { output: `${args.a * args.b}`, title: "product", metadata: { factors: [args.a, args.b] } }
  },
})

export const notATool = 42
"#;

#[test]
fn default_and_named_exports_become_tools_with_zod_schemas() {
    let p = Project::new().with_bun();
    p.write(".opencode/tools/math.ts", MATH_TS);
    let custom = p.custom(&Scope::All);
    assert!(custom.problems().is_empty(), "{:?}", custom.problems());
    let specs: Vec<_> = custom.tools().map(|(spec, _)| (spec.name.clone(), spec.parameters.clone())).collect();
    assert_eq!(specs.len(), 2);
    assert_eq!(specs[0].0, "math");
    assert_eq!(
        specs[0].1,
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "First number"},
                "b": {"default": 10, "type": "integer", "description": "Second number"}
            },
            "required": ["a"]
        })
    );
    assert_eq!(specs[1].0, "math_multiply");

    let executor = p.executor(&custom);
    let added = call(&executor, "math", json!({"a": 2}));
    assert!(!added.is_error, "{}", added.output);
    assert_eq!(added.output, "12", "zod's default for b applies");
    let product = call(&executor, "math_multiply", json!({"a": 6, "b": 7}));
    assert_eq!(product.output, "42");
    assert_eq!(product.title.as_deref(), Some("product"));
    assert_eq!(product.metadata["factors"], json!([6, 7]));
    let invalid = call(&executor, "math", json!({"a": 1.5}));
    assert!(invalid.is_error);
    assert!(invalid.output.contains("`a` must be an integer"), "{}", invalid.output);
}

/// Records every approval request and answers with a fixed reply.
struct Recorder(Mutex<Vec<ApprovalRequest>>, Reply);

impl Approver for Recorder {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        self.0.lock().unwrap().push(request.clone());
        let reply = self.1.clone();
        Box::pin(async move { reply })
    }
}

const CONTEXT_TS: &str = r#"import { tool } from "@opencode-ai/plugin"

export default tool({
  description: "Shows its context after asking to deploy.",
  args: {},
  async execute(_args, context) {
    context.metadata({ title: "deploying", metadata: { stage: "asked" } })
    await context.ask({ permission: "deploy", patterns: ["prod"], always: ["prod"], metadata: {} })
    const { sessionID, messageID, callID, agent, directory, worktree } = context
    return JSON.stringify({ sessionID, messageID, callID, agent, directory, worktree, aborted: context.abort.aborted })
  },
})
"#;

#[test]
fn execute_gets_opencode_context_and_asks_through_the_permission_rules() {
    let p = Project::new().with_bun();
    p.write(".opencode/tools/ctx.ts", CONTEXT_TS);
    let custom = p.custom(&Scope::All);
    let mut config = Config::default();
    config.merge_str(&p.root.join("toolshed.toml"), "[permission]\nctx = \"allow\"\ndeploy = \"ask\"\n").unwrap();

    let approver = Arc::new(Recorder(Mutex::default(), Reply::Once));
    let executor = p.executor_with(&custom, |_| {}, &config, approver.clone(), None);
    let result = call(&executor, "ctx", json!({}));
    assert!(!result.is_error, "{}", result.output);
    let root = p.root.display().to_string();
    let seen: serde_json::Value = serde_json::from_str(&result.output).unwrap();
    assert_eq!(
        seen,
        json!({"sessionID": "sess-1", "messageID": "msg-1", "callID": "call-1", "agent": "build",
               "directory": root, "worktree": root, "aborted": false})
    );
    assert_eq!(result.title.as_deref(), Some("deploying"));
    assert_eq!(result.metadata["stage"], "asked");
    let asked = approver.0.lock().unwrap();
    assert_eq!(asked.len(), 1, "only deploy asks: ctx itself is allowed by config");
    assert_eq!(asked[0].request.permission, "deploy");
    assert_eq!(asked[0].request.patterns, ["prod"]);

    let rejecting = Arc::new(Recorder(Mutex::default(), Reply::Reject(Some("not on Fridays".into()))));
    let executor = p.executor_with(&custom, |_| {}, &config, rejecting, None);
    let result = call(&executor, "ctx", json!({}));
    assert!(result.is_error);
    assert!(result.output.contains("not on Fridays"), "{}", result.output);
    // It asked while running: it had started, and the model is not told otherwise.
    assert!(result.output.contains("The tool stopped at this request"), "{}", result.output);
    assert!(!result.output.contains("The call was not run"), "{}", result.output);

    // The time a person takes to answer is not the tool's.
    let slow = Arc::new(Slow(Duration::from_millis(1500)));
    let executor = p.executor_with(&custom, |_| {}, &config, slow, None);
    let result = call(&executor, "ctx", json!({}));
    assert!(!result.is_error, "{}", result.output);
    assert!(result.duration < Duration::from_millis(1200), "the answer's wait was counted: {:?}", result.duration);
}

/// Approves once, after `.0`.
struct Slow(Duration);

impl Approver for Slow {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        let wait = self.0;
        Box::pin(async move {
            tokio::time::sleep(wait).await;
            Reply::Once
        })
    }
}

#[test]
fn thrown_errors_and_failed_refinements_reach_the_model() {
    let p = Project::new().with_bun();
    p.write(
        ".opencode/tools/strict.ts",
        r#"import { tool } from "@opencode-ai/plugin"
export default tool({
  description: "Even numbers only.",
  args: { n: tool.schema.number().refine((n) => n % 2 === 0, "n must be even") },
  async execute(args) {
    if (args.n === 0) throw new Error("zero is not allowed here; send a non-zero even number")
    return `ok ${args.n}`
  },
})
"#,
    );
    let custom = p.custom(&Scope::All);
    let executor = p.executor(&custom);
    assert_eq!(call(&executor, "strict", json!({"n": 4})).output, "ok 4");
    let thrown = call(&executor, "strict", json!({"n": 0}));
    assert!(thrown.is_error);
    assert_eq!(thrown.output, "zero is not allowed here; send a non-zero even number");
    let refined = call(&executor, "strict", json!({"n": 3}));
    assert!(refined.is_error);
    assert!(refined.output.starts_with("The strict tool was called with invalid arguments:"), "{}", refined.output);
    assert!(refined.output.contains("n must be even"), "{}", refined.output);
}

#[test]
fn a_file_that_does_not_compile_is_a_problem_with_its_line() {
    let p = Project::new().with_bun();
    p.write(
        ".opencode/tools/broken.ts",
        "import { tool } from \"@opencode-ai/plugin\"\n\nexport default tool({\n  description: \"x\",\n  args: {},\n  async execute( { return 1 }\n})\n",
    );
    let custom = p.custom(&Scope::All);
    let problems = custom.problems();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].file, p.root.join(".opencode/tools/broken.ts"));
    assert_eq!(problems[0].line, Some(6));
    assert!(problems[0].message.starts_with("cannot import: "), "{}", problems[0].message);
    let names: Vec<&str> = custom.unavailable().iter().map(|u| u.name.as_str()).collect();
    assert_eq!(names, ["broken"]);
    let executor = p.executor(&custom);
    let entry = executor.registry().get("broken").unwrap();
    assert_eq!(entry.spec().exposure, Exposure::Hidden);
    assert!(
        call(&executor, "broken", json!({})).output.starts_with("The custom tool broken cannot be used: cannot import")
    );
}

/// A helper module next to the tools, as OpenCode projects have them: no tool export.
const API_TS: &str = r#"export const API_ROOT = "https://api.example.com"

export function apiUrl(path: string): string {
  return `${API_ROOT}/${path.replace(/^\//, "")}`
}
"#;

const FETCH_TS: &str = r#"import { tool } from "@opencode-ai/plugin"
import { apiUrl } from "./api"

export default tool({
  description: "Show the API URL of a path.",
  args: { path: tool.schema.string() },
  async execute(args) {
    return apiUrl(args.path)
  },
})
"#;

#[test]
fn a_helper_module_without_tool_exports_is_ignored_as_opencode_does() {
    let p = Project::new().with_bun();
    p.write(".opencode/tools/api.ts", API_TS);
    p.write(".opencode/tools/endpoint.ts", FETCH_TS);
    for scope in [Scope::Fresh, Scope::All] {
        // Fresh (`tools --check`) imports every file; All serves the second listing from the cache.
        let custom = p.custom(&scope);
        assert!(custom.problems().is_empty(), "{scope:?}: {:?}", custom.problems());
        assert!(custom.unavailable().is_empty(), "{scope:?}");
        let names: Vec<String> = custom.tools().map(|(spec, _)| spec.name.clone()).collect();
        assert_eq!(names, ["endpoint"], "{scope:?}");
    }
    let custom = p.custom(&Scope::All);
    let executor = p.executor(&custom);
    assert!(executor.registry().get("api").is_none());
    let out = call(&executor, "endpoint", json!({"path": "/v2/users"}));
    assert!(!out.is_error, "{}", out.output);
    assert_eq!(out.output, "https://api.example.com/v2/users");
}

#[test]
fn args_given_as_one_zod_object_get_a_message_that_says_what_to_pass() {
    let p = Project::new().with_bun();
    p.write(
        ".opencode/tools/greet.ts",
        r#"import { tool } from "@opencode-ai/plugin"
import { z } from "zod"

export default tool({
  description: "Greet someone.",
  args: z.object({ name: z.string() }),
  async execute(args) {
    return `hello ${args.name}`
  },
})

export const half = { description: "Half a tool.", args: {} }
"#,
    );
    let custom = p.custom(&Scope::Fresh);
    let messages: Vec<&str> = custom.problems().iter().map(|p| p.message.as_str()).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages[0].contains("greet: `args` is a zod schema")
            && messages[0].contains("pass a plain object of zod schemas"),
        "{messages:?}"
    );
    assert!(!messages.iter().any(|m| m.contains("JSON Schema")), "{messages:?}");
    assert!(messages[1].contains("greet_half: looks like a tool but has no `execute` function"), "{messages:?}");
    let executor = p.executor(&custom);
    let out = call(&executor, "greet", json!({"name": "x"}));
    assert!(out.is_error);
    assert!(out.output.contains("pass a plain object of zod schemas"), "{}", out.output);
}

#[test]
fn cached_specs_list_tools_without_the_host_and_check_imports_afresh() {
    let mut p = Project::new().with_bun();
    p.write(".opencode/tools/math.ts", MATH_TS);
    assert_eq!(p.custom(&Scope::All).tools().count(), 2);
    // A runtime that cannot start: the cache alone must serve the listing.
    p.runtime = Some(p.tmp.path().join("no-such-dir/bun"));
    let cached = p.custom(&Scope::All);
    assert!(cached.problems().is_empty(), "{:?}", cached.problems());
    assert_eq!(cached.tools().count(), 2);
    let fresh = p.custom(&Scope::Fresh);
    assert_eq!(fresh.tools().count(), 0);
    assert!(fresh.problems()[0].message.contains("cannot start the JS tool host"), "{:?}", fresh.problems());
}

#[test]
fn calling_another_tool_never_imports_a_changed_tool_file() {
    let p = Project::new().with_bun();
    let marker = p.root.join("imported");
    p.write(
        ".opencode/tools/side.ts",
        &format!(
            "import {{ writeFileSync }} from \"node:fs\"\nwriteFileSync({:?}, \"yes\")\nexport default {{ description: \"d\", args: {{}}, execute: async () => \"side\" }}\n",
            marker.display().to_string()
        ),
    );
    p.write(".toolshed/tools/plain.toml", "description = \"Plain.\"\ncommand = [\"echo\", \"plain\"]\n");
    let custom = p.custom(&Scope::Tool("plain".into()));
    assert_eq!(call(&p.executor(&custom), "plain", json!({})).output, "plain");
    assert!(!marker.exists(), "the JS file was imported for a call of another tool");
    let custom = p.custom(&Scope::Tool("side".into()));
    assert_eq!(call(&p.executor(&custom), "side", json!({})).output, "side");
    assert!(marker.exists());
}

#[test]
fn a_call_that_ignores_its_abort_signal_is_cut_off_and_the_host_restarts() {
    let p = Project::new().with_bun();
    p.write(
        ".opencode/tools/stuck.ts",
        r#"export default {
  description: "Never returns, and ignores its abort signal.",
  args: {},
  async execute(_args: unknown, context: { abort: AbortSignal }) {
    await new Promise(() => {})
  },
}
export const busy = {
  description: "Spins.",
  args: {},
  async execute() { for (;;) {} },
}
export const quick = { description: "Quick.", args: {}, async execute() { return "quick" } }
"#,
    );
    let custom = p.custom(&Scope::All);
    let executor = p.executor_with(
        &custom,
        |_| {},
        &Config::default(),
        Arc::new(toolshed_core::permission::ApproveAll),
        Some(Duration::from_millis(3000)),
    );
    let started = Instant::now();
    let result = call(&executor, "stuck_busy", json!({}));
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(result.is_error);
    assert!(result.output.contains("timed out after 3000 ms"), "{}", result.output);
    let after = call(&executor, "stuck_quick", json!({}));
    assert_eq!(after.output, "quick", "the host came back after being stopped");
}

#[test]
fn a_project_that_installed_the_plugin_package_uses_its_own() {
    let p = Project::new().with_bun();
    let modules = common::js_modules();
    let plugin = p.root.join(".opencode/node_modules/@opencode-ai/plugin");
    std::fs::create_dir_all(&plugin).unwrap();
    std::os::unix::fs::symlink(modules.join("zod"), p.root.join(".opencode/node_modules/zod")).unwrap();
    std::fs::write(
        plugin.join("package.json"),
        r#"{"name": "@opencode-ai/plugin", "version": "1.0.0", "type": "module", "exports": {".": {"import": "./dist/index.js"}}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(plugin.join("dist")).unwrap();
    std::fs::write(
        plugin.join("dist/index.js"),
        "import { z } from \"zod\"\nexport function tool(input) { return { ...input, description: input.description + \" (project plugin)\" } }\ntool.schema = z\n",
    )
    .unwrap();
    p.write(".opencode/tools/math.ts", MATH_TS);
    let custom = p.custom(&Scope::All);
    assert!(custom.problems().is_empty(), "{:?}", custom.problems());
    let (spec, _) = custom.tools().next().unwrap();
    assert_eq!(spec.description, "Add two integers. (project plugin)");
    assert_eq!(spec.parameters["properties"]["a"]["description"], "First number");
    assert_eq!(call(&p.executor(&custom), "math", json!({"a": 1, "b": 2})).output, "3");
}

#[test]
fn without_bun_node_runs_js_files_and_typescript_only_if_it_strips_types() {
    let node = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
        .expect("node on PATH (npm, which .ci/run needs, brings it)");
    let mut p = Project::new().with_bun();
    p.runtime = Some(node.clone());
    p.write(
        ".opencode/tools/hello.js",
        "import { tool } from \"@opencode-ai/plugin\"\nimport { z } from \"zod\"\nexport default tool({ description: \"Hello.\", args: { name: z.string().describe(\"Who\") }, async execute(args) { return `hello ${args.name}` } })\n",
    );
    p.write(
        ".opencode/tools/typed.ts",
        "export default { description: \"T.\", args: {}, async execute(): Promise<string> { return \"typed\" } }\n",
    );
    let custom = p.custom(&Scope::All);
    let executor = p.executor(&custom);
    let hello = executor.registry().get("hello").expect("hello.js loads under Node");
    assert_eq!(hello.spec().parameters["properties"]["name"]["description"], "Who");
    assert_eq!(call(&executor, "hello", json!({"name": "node"})).output, "hello node");

    let version = std::process::Command::new(&node).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().trim_start_matches('v').to_string();
    let mut parts = version.split('.').map(|n| n.parse::<u32>().unwrap());
    let (major, minor) = (parts.next().unwrap(), parts.next().unwrap());
    if major > 22 || (major == 22 && minor >= 6) {
        assert_eq!(call(&executor, "typed", json!({})).output, "typed");
    } else {
        let u = custom.unavailable().iter().find(|u| u.name == "typed").expect("typed.ts is unavailable");
        assert!(u.reason.starts_with("needs Bun on PATH to run TypeScript"), "{}", u.reason);
    }
}
