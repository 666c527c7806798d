//! One runtime builder for every entry point: a custom tool gets the same decision through
//! `call`, `mcp serve`, `run` and `chat`, as `build` and as `plan`, because all of them take
//! their rules from `toolshed-runtime`'s workspace (custom tools ask by default).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use toolshed_llm::testing::{FakeServer, Reply, chat};

const TOOLSHED: &str = env!("CARGO_BIN_EXE_toolshed");

/// A manifest tool that leaves a marker file when it runs.
const MARK: &str = r#"description = "Leaves a marker."
command = ["sh", "-c", "touch ran.marker; echo marked"]
"#;

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl World {
    fn new(server: &FakeServer, permission: &str) -> World {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".toolshed/tools")).unwrap();
        std::fs::write(root.join(".toolshed/tools/mark.toml"), MARK).unwrap();
        std::fs::write(
            root.join("toolshed.toml"),
            format!(
                "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n{permission}",
                server.base_url()
            ),
        )
        .unwrap();
        World { _tmp: tmp, root }
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(TOOLSHED);
        cmd.env("TOOLSHED_TRUST_PROJECT", "1");
        self.env(&mut cmd);
        cmd
    }

    fn env(&self, cmd: &mut Command) {
        cmd.arg("--root")
            .arg(&self.root)
            .current_dir(&self.root)
            .env("XDG_CONFIG_HOME", self.root.join(".xdg-config"))
            .env("HOME", self.root.join(".home"))
            .env("TOOLSHED_DATA_DIR", self.root.join(".data"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY");
    }

    fn run(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    }

    /// Whether the tool ran, and removes its marker.
    fn ran(&self) -> bool {
        let marker = self.root.join("ran.marker");
        let ran = marker.exists();
        let _ = std::fs::remove_file(marker);
        ran
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The last tool message the model was sent in request `n`.
fn tool_message(server: &FakeServer, n: usize) -> String {
    let body = &server.received()[n].body["messages"];
    let m = body.as_array().unwrap().iter().rev().find(|m| m["role"] == "tool").unwrap().clone();
    m["content"].as_str().unwrap().to_string()
}

#[derive(Clone)]
struct NoElicitation;

impl ClientHandler for NoElicitation {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("entry-point-test", "1.0.0"))
    }
}

/// Calls `mark` through `mcp serve --agent AGENT` with a client that cannot be asked; returns
/// the result's text and whether it was an error.
async fn through_mcp(w: &World, agent: &str) -> (String, bool) {
    let root = w.root.clone();
    let agent = agent.to_string();
    let cmd = tokio::process::Command::new(TOOLSHED).configure(|c| {
        c.env("TOOLSHED_TRUST_PROJECT", "1")
            .arg("--root")
            .arg(&root)
            .args(["mcp", "serve", "--agent", &agent])
            .current_dir(&root)
            .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
            .env("HOME", root.join(".home"))
            .env("TOOLSHED_DATA_DIR", root.join(".data"));
    });
    let client = NoElicitation.serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let result = client.call_tool(CallToolRequestParams::new("mark")).await.unwrap();
    let out = result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n");
    client.cancel().await.unwrap();
    (out, result.is_error == Some(true))
}

fn model_calls_mark() -> FakeServer {
    FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "mark", "{}")])),
        Reply::sse(chat::text("done")),
        Reply::sse(chat::tool_calls(&[("c2", "mark", "{}")])),
        Reply::sse(chat::text("done")),
    ])
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_tool_asks_through_every_entry_point_and_every_agent() {
    for agent in ["build", "plan"] {
        let server = model_calls_mark();
        let w = World::new(&server, "");
        let what = format!("as {agent}");

        let out = w.run(&["call", "mark", "{}", "--agent", agent], "");
        assert_eq!(out.status.code(), Some(1), "call {what}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("Permission for `mark` on `*` was not granted"),
            "call {what}: {}",
            text(&out.stderr)
        );
        assert!(!w.ran(), "call {what}");

        let (output, is_error) = through_mcp(&w, agent).await;
        assert!(is_error && output.contains("Permission for `mark` on `*` was not granted"), "mcp {what}: {output}");
        assert!(!w.ran(), "mcp serve {what}");

        let out = w.run(&["run", "mark it", "--agent", agent], "");
        assert_eq!(out.status.code(), Some(0), "run {what}: {}", text(&out.stderr));
        assert!(
            tool_message(&server, 1).contains("Permission for `mark` on `*` was not granted"),
            "run {what}: {}",
            tool_message(&server, 1)
        );
        assert!(!w.ran(), "run {what}");

        // chat asks the person (the next line) and the answer is no.
        let out = w.run(&["chat", "--agent", agent], "mark it\nr\n/exit\n");
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "chat {what}: {err}");
        assert!(err.contains("mark needs permission `mark`"), "chat {what}: {err}");
        assert!(tool_message(&server, 3).contains("Permission for `mark` on `*` was not granted"), "chat {what}");
        assert!(!w.ran(), "chat {what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rule_that_allows_or_denies_the_tool_holds_through_every_entry_point() {
    for (permission, runs) in [("[permission]\nmark = \"allow\"\n", true), ("[permission]\nmark = \"deny\"\n", false)] {
        let server = model_calls_mark();
        let w = World::new(&server, permission);
        let what = permission.trim();

        let out = w.run(&["call", "mark", "{}"], "");
        assert_eq!(out.status.success(), runs, "call {what}: {}", text(&out.stderr));
        assert_eq!(w.ran(), runs, "call {what}");
        // Plan mode runs only what it knows to be read-only: an allowed custom tool still asks.
        let out = w.run(&["call", "mark", "{}", "--agent", "plan"], "");
        assert!(!out.status.success(), "plan {what}: {}", text(&out.stderr));
        assert!(!w.ran(), "plan {what}");

        let (output, is_error) = through_mcp(&w, "build").await;
        assert_eq!(!is_error, runs, "mcp {what}: {output}");
        assert_eq!(w.ran(), runs, "mcp serve {what}");

        let out = w.run(&["run", "mark it"], "");
        assert_eq!(out.status.code(), Some(0), "run {what}: {}", text(&out.stderr));
        assert_eq!(w.ran(), runs, "run {what}: {}", tool_message(&server, 1));

        let out = w.run(&["chat"], "mark it\n/exit\n");
        assert_eq!(out.status.code(), Some(0), "chat {what}: {}", text(&out.stderr));
        assert_eq!(w.ran(), runs, "chat {what}: {}", tool_message(&server, 3));
    }
}

/// `permission explain` shows the layers in order, and plan mode keeps its rules whatever the
/// project's `[permission]` says.
#[test]
fn plan_mode_holds_against_project_rules() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "write", r#"{"file_path":"new.txt","content":"x"}"#)])),
        Reply::sse(chat::text("done")),
    ])
    .unwrap();
    for edit in ["allow", "ask"] {
        let w = World::new(&server, &format!("[permission]\nedit = \"{edit}\"\n"));
        let out = w.run(&["tools", "--agent", "plan", "--all"], "");
        let listed = text(&out.stdout);
        for tool in ["\"edit\"", "\"write\"", "\"apply_patch\""] {
            assert!(!listed.contains(&format!("\"name\": {tool}")), "edit = {edit}: plan lists {tool}");
        }
        let out = w.run(
            &["permission", "explain", "write", r#"{"file_path":"new.txt","content":"x"}"#, "--agent", "plan"],
            "",
        );
        let explained = text(&out.stdout);
        assert!(explained.contains("decision: deny"), "{explained}");
        let default = explained.find("[default]").unwrap();
        let config = explained.find(&format!("[config {}]", w.root.join("toolshed.toml").display())).unwrap();
        let builtin = explained.find("[agent plan, built in]").unwrap();
        assert!(default < config && config < builtin, "layers in order: {explained}");
    }
    let w = World::new(&server, "[permission]\nedit = \"allow\"\n");
    let out = w.run(&["run", "write it", "--agent", "plan", "--yes"], "");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!w.root.join("new.txt").exists(), "plan mode wrote a file");
}

/// 8: a command nested past the analysis' bounds asks in `mcp serve` too, and the server lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_serve_survives_commands_nested_past_the_bounds() {
    let server = model_calls_mark();
    let w = World::new(&server, "");
    std::fs::write(w.root.join("notes.txt"), "still here\n").unwrap();
    let root = w.root.clone();
    let cmd = tokio::process::Command::new(TOOLSHED).configure(|c| {
        c.env("TOOLSHED_TRUST_PROJECT", "1")
            .arg("--root")
            .arg(&root)
            .args(["mcp", "serve"])
            .current_dir(&root)
            .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
            .env("HOME", root.join(".home"))
            .env("TOOLSHED_DATA_DIR", root.join(".data"));
    });
    let client = NoElicitation.serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
    let text = |r: &rmcp::model::CallToolResult| {
        r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
    };
    for command in [
        format!("{}true{}", "(".repeat(15_000), ")".repeat(15_000)),
        format!("{}rm x{}", "\"$(echo ".repeat(10_000), ")\"".repeat(10_000)),
    ] {
        let mut params = CallToolRequestParams::new("bash");
        params.arguments = serde_json::json!({ "command": command }).as_object().cloned();
        let result = client.call_tool(params).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{}", text(&result));
        assert!(text(&result).contains("was not granted"), "{}", text(&result));
    }
    let mut params = CallToolRequestParams::new("read");
    params.arguments = serde_json::json!({ "file_path": "notes.txt" }).as_object().cloned();
    let result = client.call_tool(params).await.unwrap();
    assert!(text(&result).contains("still here"), "{}", text(&result));
    client.cancel().await.unwrap();
}
