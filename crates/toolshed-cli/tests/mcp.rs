//! `toolshed mcp serve` driven by a real MCP client (rmcp) over stdio and streamable HTTP;
//! `mcp list`, `mcp import`, and lazy MCP startup for `call` and `tools`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

const TOOLSHED: &str = env!("CARGO_BIN_EXE_toolshed");

fn workspace(config: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "alpha\nneedle in a haystack\nomega\n").unwrap();
    std::fs::write(tmp.path().join("toolshed.toml"), config).unwrap();
    tmp
}

fn toolshed(root: &Path) -> Command {
    let mut cmd = Command::new(TOOLSHED);
    cmd.env("TOOLSHED_TRUST_PROJECT", "1");
    cmd.arg("--root")
        .arg(root)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"));
    cmd
}

/// A test client; `answer` is its reply to elicitations (`None`: it does not support them).
#[derive(Clone)]
struct Client {
    answer: Option<&'static str>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let caps = if self.answer.is_some() {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(caps, Implementation::new("toolshed-test-client", "1.0.0"))
    }

    async fn create_elicitation(
        &self,
        _request: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        let decision = self.answer.unwrap_or("reject");
        let mut result = rmcp::model::ElicitResult::new(rmcp::model::ElicitationAction::Accept);
        result.content = Some(json!({"decision": decision}));
        Ok(result)
    }
}

async fn stdio_client<C: ClientHandler>(root: &Path, client: C) -> RunningService<RoleClient, C> {
    stdio_client_with(root, &[], client).await
}

/// A client of `mcp serve` with `args` after it.
async fn stdio_client_with<C: ClientHandler>(root: &Path, args: &[&str], client: C) -> RunningService<RoleClient, C> {
    let root = root.to_path_buf();
    let cmd = tokio::process::Command::new(TOOLSHED).configure(|c| {
        c.env("TOOLSHED_TRUST_PROJECT", "1")
            .arg("--root")
            .arg(&root)
            .args(["mcp", "serve"])
            .args(args)
            .current_dir(&root)
            .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
            .env("TOOLSHED_DATA_DIR", root.join(".data"));
    });
    client.serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap()
}

async fn call<C: ClientHandler>(client: &RunningService<RoleClient, C>, tool: &str, args: Value) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_string());
    params.arguments = args.as_object().cloned();
    client.call_tool(params).await.unwrap()
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

/// initialize, tools/list, tools/call of read and grep, and an error result.
async fn exercise(client: &RunningService<RoleClient, Client>) {
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().map(|s| s.name.as_str()), Some("toolshed"));
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for expected in ["read", "grep"] {
        assert!(names.contains(&expected), "{names:?}");
    }
    assert!(!names.contains(&"tool_search"), "nothing is deferred: {names:?}");
    // A client sees the todo list only through todo_read, and is told so.
    assert!(names.contains(&"todo_read"), "{names:?}");
    let todo_write = tools.iter().find(|t| t.name == "todo_write").unwrap();
    let said = todo_write.description.as_deref().unwrap_or_default();
    assert!(said.contains("todo_read") && !said.contains("shown to you every step"), "{said}");
    let todos = json!({"todos": [{"content": "Write the test", "status": "in_progress"}]});
    let wrote = call(client, "todo_write", todos).await;
    assert_ne!(wrote.is_error, Some(true), "{}", text(&wrote));
    let list = call(client, "todo_read", json!({})).await;
    assert!(text(&list).contains("Write the test"), "{}", text(&list));
    let read = call(client, "read", json!({"file_path": "notes.txt"})).await;
    assert_ne!(read.is_error, Some(true), "{}", text(&read));
    assert!(text(&read).contains("needle in a haystack"), "{}", text(&read));
    let grep = call(client, "grep", json!({"pattern": "needle"})).await;
    assert_ne!(grep.is_error, Some(true), "{}", text(&grep));
    assert!(text(&grep).contains("notes.txt"), "{}", text(&grep));
    let missing = call(client, "read", json!({"file_path": "nope.txt"})).await;
    assert_eq!(missing.is_error, Some(true));
    let invalid = call(client, "read", json!({"bogus": 1})).await;
    assert_eq!(invalid.is_error, Some(true));
    assert!(text(&invalid).contains("file_path"), "{}", text(&invalid));
}

#[tokio::test]
async fn serve_over_stdio_lists_and_calls_tools_through_the_chain() {
    let tmp = workspace("");
    let client = stdio_client(tmp.path(), Client { answer: None }).await;
    exercise(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn serve_over_http_lists_and_calls_tools_through_the_chain() {
    let tmp = workspace("");
    let mut server = toolshed(tmp.path())
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut line, mut shown) = (String::new(), String::new());
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    // The first start shows the token it made, once.
    stderr.read_line(&mut shown).unwrap();
    let token = shown.trim().rsplit(' ').next().unwrap().to_string();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token.trim());
    let client = Client { answer: None }.serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    exercise(&client).await;
    client.cancel().await.unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
}

#[tokio::test]
async fn ask_uses_elicitation_when_the_client_supports_it_and_the_config_otherwise() {
    let tmp = workspace("[permission]\nread = \"ask\"\n");
    let yes = stdio_client(tmp.path(), Client { answer: Some("once") }).await;
    let r = call(&yes, "read", json!({"file_path": "notes.txt"})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    yes.cancel().await.unwrap();
    let no = stdio_client(tmp.path(), Client { answer: Some("reject") }).await;
    let r = call(&no, "read", json!({"file_path": "notes.txt"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("was not granted"), "{}", text(&r));
    no.cancel().await.unwrap();
    let cannot = stdio_client(tmp.path(), Client { answer: None }).await;
    let r = call(&cannot, "read", json!({"file_path": "notes.txt"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("does not support elicitation"), "{}", text(&r));
    cannot.cancel().await.unwrap();
}

/// A config with toolshed itself as an upstream MCP server (`inner`, serving the `sub`
/// directory, which has no config of its own), plus servers that hang and crash.
fn upstream_config(root: &Path, hang_ms: u64) -> String {
    let sub = root.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("inner.txt"), "needle from the inner server\n").unwrap();
    format!(
        r#"[mcp.inner]
command = "{TOOLSHED}"
args = ["--root", "{root}/sub", "mcp", "serve"]
env = {{ XDG_CONFIG_HOME = "{root}/.xdg-inner" }}

[mcp.stuck]
command = "sleep"
args = ["1000"]
startup_timeout_ms = {hang_ms}

[mcp.gone]
command = "false"
"#,
        root = root.display()
    )
}

#[test]
fn call_of_a_builtin_starts_no_mcp_server_and_an_mcp_call_starts_only_its_own() {
    let tmp = workspace("");
    std::fs::write(tmp.path().join("toolshed.toml"), upstream_config(tmp.path(), 20_000)).unwrap();
    let started = Instant::now();
    let out = toolshed(tmp.path()).args(["call", "read", r#"{"file_path": "notes.txt"}"#]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(5), "waited for MCP servers: {:?}", started.elapsed());
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let started = Instant::now();
    let out = toolshed(tmp.path()).args(["call", "inner_grep", r#"{"pattern": "needle"}"#, "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(result["output"].as_str().unwrap().contains("inner.txt"), "{result}");
}

#[test]
fn tools_and_list_report_unavailable_servers_and_keep_the_rest() {
    let tmp = workspace("");
    std::fs::write(tmp.path().join("toolshed.toml"), upstream_config(tmp.path(), 500)).unwrap();
    let out = toolshed(tmp.path()).args(["tools", "--all"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("MCP server `stuck` is unavailable: it did not answer within 500 ms"), "{stderr}");
    assert!(stderr.contains("MCP server `gone` is unavailable"), "{stderr}");
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let inner: Vec<&Value> = tools.as_array().unwrap().iter().filter(|t| t["source"] == "mcp:inner").collect();
    assert!(inner.iter().any(|t| t["name"] == "inner_read"), "{tools}");
    let out = toolshed(tmp.path()).args(["mcp", "list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let status = |name: &str| list.as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(status("inner")["status"], "connected");
    assert_eq!(status("stuck")["status"], "unavailable");
    assert_eq!(status("gone")["status"], "unavailable");
}

#[test]
fn import_appends_mcp_servers_to_the_project_config() {
    let tmp = workspace("");
    let file = tmp.path().join("claude.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {"github": {"command": "github-mcp", "args": ["stdio"]}, "docs": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}"#,
    )
    .unwrap();
    let out = toolshed(tmp.path()).args(["mcp", "import"]).arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let config = std::fs::read_to_string(tmp.path().join("toolshed.toml")).unwrap();
    assert!(config.contains("[mcp.github]") && config.contains("[mcp.docs]"), "{config}");
    let again = toolshed(tmp.path()).args(["mcp", "import"]).arg(&file).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("github: already configured"));
    let out = toolshed(tmp.path()).args(["mcp", "list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    // Before a person accepts the file, `list` says why its servers do not apply.
    let out = toolshed(tmp.path()).env_remove("TOOLSHED_TRUST_PROJECT").args(["mcp", "list"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("toolshed trust") && !said.contains("mcp import"), "{said}");
}

/// `timeout` counts seconds in Cline's file and milliseconds in Claude Code's and Gemini CLI's:
/// each becomes the right `timeout_ms`; a number that is implausible in its file's unit, or
/// whose unit the file's client does not document, is left out with a warning naming it.
#[test]
fn import_converts_each_clients_timeout_to_milliseconds_or_warns() {
    let tmp = workspace("");
    let write = |rel: &str, body: Value| {
        let path = tmp.path().join("clients").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&body).unwrap()).unwrap();
        path
    };
    let import = |path: &Path| {
        let out = toolshed(tmp.path()).args(["mcp", "import", "--print"]).arg(path).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // Cline (VS Code extension storage): seconds, default 60.
    let cline = write(
        "saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        json!({"mcpServers": {
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                       "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "t"}, "disabled": false, "autoApprove": [],
                       "timeout": 120, "type": "stdio"},
            "milliseconds": {"command": "srv", "disabled": false, "autoApprove": [], "timeout": 60000, "type": "stdio"}
        }}),
    );
    let (toml, stderr) = import(&cline);
    assert!(toml.contains("[mcp.github]") && toml.contains("timeout_ms = 120000"), "{toml}");
    assert!(!toml.contains("timeout_ms = 60000"), "{toml}");
    assert!(
        stderr.contains("milliseconds: `timeout` (60000) was not imported: Cline counts it in seconds")
            && stderr.contains("write `timeout_ms = 60000`"),
        "{stderr}"
    );
    // Claude Code's .mcp.json: milliseconds.
    let claude_code = write(
        "repo/.mcp.json",
        json!({"mcpServers": {
            "api": {"type": "http", "url": "https://mcp.example.test/mcp", "headers": {"Authorization": "Bearer k"}, "timeout": 30000},
            "seconds": {"type": "stdio", "command": "srv", "args": [], "env": {}, "timeout": 30}
        }}),
    );
    let (toml, stderr) = import(&claude_code);
    assert!(toml.contains("timeout_ms = 30000") && toml.matches("timeout_ms").count() == 1, "{toml}");
    assert!(
        stderr.contains("seconds: `timeout` (30) was not imported: Claude Code counts it in milliseconds"),
        "{stderr}"
    );
    // Gemini CLI's .gemini/settings.json: milliseconds (default 600,000).
    let gemini = write(
        "repo/.gemini/settings.json",
        json!({"theme": "Default", "mcpServers": {
            "py": {"command": "python", "args": ["-m", "srv"], "cwd": "./srv", "timeout": 600000, "trust": false}
        }}),
    );
    let (toml, stderr) = import(&gemini);
    assert!(toml.contains("timeout_ms = 600000"), "{toml}");
    assert!(stderr.contains("py: `trust` was not imported"), "{stderr}");
    // Clients that document no `timeout`, and a file whose client is unknown: not guessed.
    let undocumented = [
        (
            "Claude/claude_desktop_config.json",
            json!({"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "timeout": 60}}}),
            "Claude Desktop does not document",
        ),
        (
            "repo/.cursor/mcp.json",
            json!({"mcpServers": {"fs": {"url": "https://mcp.example.test/mcp", "headers": {"X-Key": "k"}, "timeout": 60}}}),
            "Cursor does not document",
        ),
        (
            "codeium/windsurf/mcp_config.json",
            json!({"mcpServers": {"fs": {"serverUrl": "https://mcp.example.test/mcp", "disabled": false, "timeout": 60}}}),
            "Windsurf does not document",
        ),
        (
            "repo/.vscode/mcp.json",
            json!({"servers": {"fs": {"type": "stdio", "command": "mcp-fs", "timeout": 60}}}),
            "VS Code does not document",
        ),
        (
            "servers.json",
            json!({"mcpServers": {"fs": {"command": "mcp-fs", "timeout": 60}}}),
            "the file's name does not say which client wrote it",
        ),
    ];
    for (rel, body, why) in undocumented {
        let (toml, stderr) = import(&write(rel, body));
        assert!(toml.contains("[mcp.fs]") && !toml.contains("timeout_ms"), "{rel}: {toml}");
        assert!(stderr.contains("fs: `timeout` (60) was not imported") && stderr.contains(why), "{rel}: {stderr}");
        assert!(stderr.contains("set `timeout_ms` (milliseconds) in its table by hand"), "{rel}: {stderr}");
    }
}

/// A client that sends a standard method with params that do not parse is told "invalid
/// params" (-32602) and why, not "method not found"; an unknown method is -32601; a line that
/// is not JSON (a request cut short, bytes that are not UTF-8) is answered with a parse error
/// (-32700, id null) instead of silence, and so is a byte that is not UTF-8 inside a string; a
/// JSON value that is no object (`null`, `5`) is an invalid request (-32600, id null); a blank
/// line gets nothing.
#[test]
fn malformed_params_get_invalid_params_and_unknown_methods_method_not_found() {
    use std::io::{BufRead, Write};
    let tmp = workspace("");
    let mut child = toolshed(tmp.path())
        .args(["mcp", "serve"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read","arguments":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"bogus/x","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"tools/list""#,
        "",
        "not json \u{fffd}",
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read","arguments":{"file_path":"notes.txt"}}}"#,
    ] {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.write_all(b"\xff\xfe\n").unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\xff\"}}\n")
        .unwrap();
    stdin.write_all(b"null\n5\n").unwrap();
    // A line over 64 MiB is not held whole: refused, and the next one is read.
    let mut long = vec![b'x'; (64 << 20) + 10];
    long.push(b'\n');
    stdin.write_all(&long).unwrap();
    drop(long);
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}\n").unwrap();
    let mut replies = std::collections::HashMap::new();
    let mut parse_errors = Vec::new();
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let reply: Value = serde_json::from_str(&line.unwrap()).unwrap();
        match reply["id"].as_i64() {
            Some(id) => {
                replies.insert(id, reply);
            }
            None => parse_errors.push(reply),
        }
        if replies.len() == 6 && parse_errors.len() == 7 {
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(replies[&2]["error"]["code"], -32602, "{}", replies[&2]);
    assert!(replies[&2]["error"]["message"].as_str().unwrap().contains("params are missing"), "{}", replies[&2]);
    assert_eq!(replies[&3]["error"]["code"], -32602, "{}", replies[&3]);
    assert!(replies[&3]["error"]["message"].as_str().unwrap().contains("expected a map"), "{}", replies[&3]);
    assert_eq!(replies[&4]["error"]["code"], -32601, "{}", replies[&4]);
    assert_eq!(replies[&5]["result"]["isError"], false, "{}", replies[&5]);
    assert!(!replies.contains_key(&6) && !replies.contains_key(&7));
    assert!(replies[&8]["result"]["tools"].is_array(), "{}", replies[&8]);
    assert_eq!(parse_errors.len(), 7, "{parse_errors:?}");
    for (error, (line, code)) in parse_errors.iter().zip([
        (r#"{"jsonrpc":"2.0","id":6,"method":"tools/list""#, -32700),
        ("not json \u{fffd}", -32700),
        ("\u{fffd}\u{fffd}", -32700),
        ("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\",\"params\":{\"cursor\":\"\u{fffd}\"}}", -32700),
        ("null", -32600),
        ("5", -32600),
        (&"x".repeat(200), -32600),
    ]) {
        assert_eq!(error["id"], Value::Null, "{error}");
        assert_eq!(error["error"]["code"], code, "{error}");
        assert_eq!(error["error"]["data"]["line"], line, "{error}");
    }
}

/// Over MCP the client runs the loop: re-running the same call (the same test, a file that
/// changed) is not refused as a doom loop unless `[mcp_server] doom_loop = true` asks for it.
#[tokio::test]
async fn doom_loop_is_off_over_mcp_unless_the_config_turns_it_on() {
    let tmp = workspace("");
    let client = stdio_client(tmp.path(), Client { answer: None }).await;
    for i in 0..4 {
        let r = call(&client, "read", json!({"file_path": "notes.txt"})).await;
        assert_ne!(r.is_error, Some(true), "call {i}: {}", text(&r));
    }
    client.cancel().await.unwrap();
    let tmp = workspace("[mcp_server]\ndoom_loop = true\n");
    let client = stdio_client(tmp.path(), Client { answer: None }).await;
    for _ in 0..2 {
        let r = call(&client, "read", json!({"file_path": "notes.txt"})).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
    }
    let r = call(&client, "read", json!({"file_path": "notes.txt"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("three times in a row"), "{}", text(&r));
    client.cancel().await.unwrap();
}

/// `permission explain` knows every tool `call` can run: an MCP server's tool is explained with
/// its full name as the permission key, and rules written for it decide.
#[test]
fn permission_explain_knows_mcp_tools_as_call_does() {
    let tmp = workspace("");
    let config = format!("{}\n[permission]\ninner_grep = \"deny\"\n", upstream_config(tmp.path(), 500));
    std::fs::write(tmp.path().join("toolshed.toml"), config).unwrap();
    let out = toolshed(tmp.path())
        .args(["permission", "explain", "inner_read", r#"{"file_path": "inner.txt"}"#, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let explained: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(explained["decision"], "allow", "{explained}");
    assert_eq!(explained["requests"][0]["permission"], "inner_read", "{explained}");
    let out =
        toolshed(tmp.path()).args(["permission", "explain", "inner_grep", r#"{"pattern": "x"}"#]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("inner_grep = deny") || shown.contains("decision: deny"), "{shown}");
    let call = toolshed(tmp.path()).args(["call", "inner_grep", r#"{"pattern": "x"}"#]).output().unwrap();
    assert_eq!(call.status.code(), Some(1), "the rule explain shows is the one call meets");
    let out = toolshed(tmp.path()).args(["permission", "explain", "inner_nope", "{}"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("inner_nope"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A client that notes `notifications/tools/list_changed`.
#[derive(Clone, Default)]
struct Watcher {
    changed: std::sync::Arc<tokio::sync::Notify>,
}

impl ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.changed.notify_one();
    }
}

/// `mcp serve` answers `initialize` before its upstream servers are up (one of them hangs far
/// longer than the client would wait), serves the built-in tools meanwhile, and the upstream
/// tools join with `notifications/tools/list_changed`.
#[tokio::test]
async fn serve_answers_initialize_at_once_and_upstream_tools_join_later() {
    let tmp = workspace("");
    std::fs::write(tmp.path().join("toolshed.toml"), upstream_config(tmp.path(), 120_000)).unwrap();
    let watcher = Watcher::default();
    let started = Instant::now();
    let client = tokio::time::timeout(Duration::from_secs(60), stdio_client(tmp.path(), watcher.clone()))
        .await
        .expect("initialize was not answered while an upstream server hangs");
    assert!(started.elapsed() < Duration::from_secs(60));
    let read = call(&client, "read", json!({"file_path": "notes.txt"})).await;
    assert!(text(&read).contains("needle in a haystack"), "{}", text(&read));
    let joined = async {
        loop {
            let tools = client.list_all_tools().await.unwrap();
            if tools.iter().any(|t| t.name == "inner_grep") {
                return;
            }
            watcher.changed.notified().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), joined).await.expect("the upstream tools never joined");
    let grep = call(&client, "inner_grep", json!({"pattern": "needle"})).await;
    assert!(text(&grep).contains("inner.txt"), "{}", text(&grep));
    client.cancel().await.unwrap();
}

/// One raw HTTP/1.1 request; the status code and the response head.
fn http_request(addr: &str, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    http_request_as(addr, Some(TOKEN), method, headers, body)
}

/// The token the test servers of [`http_server`] ask for.
const TOKEN: &str = "test-token-0123456789abcdef";

/// [`http_request`] with `Authorization: Bearer TOKEN` for this `token` (`None`: no such header).
fn http_request_as(
    addr: &str,
    token: Option<&str>,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut request = format!("{method} /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\n", body.len());
    if let Some(token) = token {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head)
}

/// `mcp serve --http` on a free loopback port in `root`: the process and its `host:port`.
fn http_server(root: &std::path::Path) -> (std::process::Child, String) {
    let mut server = toolshed(root)
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .env("TOOLSHED_MCP_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    (server, url.trim_start_matches("http://").trim_end_matches("/mcp").to_string())
}

/// Every user of the machine can reach a loopback port: `mcp serve --http` answers only requests
/// that carry its token, kept in a file only its owner can read (made on first start, the same
/// on the next), unless `--no-auth` says otherwise.
#[test]
fn http_serve_answers_only_requests_with_its_token() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = workspace("");
    let start = |extra: &[&str]| {
        let mut server = toolshed(tmp.path())
            .args(["mcp", "serve", "--http", "127.0.0.1:0"])
            .args(extra)
            .env_remove("TOOLSHED_MCP_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(server.stderr.take().unwrap());
        let (mut url, mut how) = (String::new(), String::new());
        stderr.read_line(&mut url).unwrap();
        stderr.read_line(&mut how).unwrap();
        let addr = url.trim().rsplit(' ').next().unwrap().trim_start_matches("http://").trim_end_matches("/mcp");
        (server, addr.to_string(), how)
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let headers = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];

    let (mut server, addr, how) = start(&[]);
    let file = tmp.path().join(".data/mcp-http-token");
    assert!(how.contains("Authorization: Bearer TOKEN") && how.contains(file.to_str().unwrap()), "{how}");
    // Shown once; the file keeps only its digest, which is no token a reader could send.
    let token = how.trim().rsplit(' ').next().unwrap().to_string();
    assert_eq!(token.len(), 64, "{token}");
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.starts_with("sha256:") && !kept.contains(&token), "{kept}");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(http_request_as(&addr, Some(kept.trim()), "POST", &headers, init).0, 401);
    for refused in [None, Some("wrong"), Some(&token[..63]), Some(&format!("{token}x"))] {
        let (status, head) = http_request_as(&addr, refused, "POST", &headers, init);
        assert_eq!(status, 401, "{refused:?}: {head}");
        assert!(head.to_ascii_lowercase().contains("www-authenticate: bearer"), "{head}");
    }
    let (status, head) = http_request_as(&addr, None, "GET", &headers, "");
    assert_eq!(status, 401, "{head}");
    let (status, head) = http_request_as(&addr, Some(&token), "POST", &headers, init);
    assert_eq!(status, 200, "{head}");
    server.kill().unwrap();
    server.wait().unwrap();

    // The next start asks for the same token, and does not show it.
    let (mut server, addr, how) = start(&[]);
    assert!(!how.contains(&token) && how.contains("the token made when"), "{how}");
    assert_eq!(http_request_as(&addr, Some(&token), "POST", &headers, init).0, 200);
    server.kill().unwrap();
    server.wait().unwrap();

    let (mut server, addr, how) = start(&["--no-auth"]);
    assert!(how.contains("every user of this machine"), "{how}");
    assert_eq!(http_request_as(&addr, None, "POST", &headers, init).0, 200);
    server.kill().unwrap();
    server.wait().unwrap();

    // A file with another name (a hard link), a FIFO, a directory: refused, at once.
    let planted = tmp.path().join("planted");
    std::fs::rename(&file, &planted).unwrap();
    std::fs::hard_link(&planted, &file).unwrap();
    let refused = |why: &str| {
        let out = toolshed(tmp.path())
            .args(["mcp", "serve", "--http", "127.0.0.1:0"])
            .env_remove("TOOLSHED_MCP_TOKEN")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stderr).contains(why), "{}", String::from_utf8_lossy(&out.stderr));
    };
    refused("hard links");
    std::fs::remove_file(&file).unwrap();
    let fifo = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    refused("not a file of this user");
    // A file that is a link (to a token someone else knows) is refused.
    std::fs::remove_file(&file).unwrap();
    std::fs::write(
        tmp.path().join("known"),
        "sha256:0000000000000000000000000000000000000000000000000000000000000000\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(tmp.path().join("known"), &file).unwrap();
    refused("symbolic link");
    // A token of its own, if it is not one a guess finds.
    let out = toolshed(tmp.path())
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .env("TOOLSHED_MCP_TOKEN", "short")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TOOLSHED_MCP_TOKEN must be at least 16"));
}

/// HTTP `mcp serve` refuses requests from a page of another origin (DNS rebinding: the spec
/// says servers must validate `Origin`), answers local origins and clients that send none, and
/// ends a session with 204 on DELETE (404 once it is gone).
#[test]
fn http_serve_rejects_foreign_origins_and_answers_delete_with_204() {
    let tmp = workspace("");
    let (mut server, addr) = http_server(tmp.path());
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let base = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")];
    let with = |origin: &'static str| {
        let mut h = base.to_vec();
        h.push(("Origin", origin));
        h
    };
    let (status, head) = http_request(&addr, "POST", &with("http://evil.example"), init);
    assert_eq!(status, 403, "{head}");
    let (status, head) = http_request(&addr, "POST", &with("null"), init);
    assert_eq!(status, 403, "{head}");
    let (status, head) = http_request(&addr, "POST", &with("http://localhost:3000"), init);
    assert_eq!(status, 200, "{head}");
    let (status, head) = http_request(&addr, "POST", &base, init);
    assert_eq!(status, 200, "{head}");
    let session = head
        .lines()
        .find_map(|l| {
            l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id")).map(|(_, v)| v.trim())
        })
        .unwrap_or_else(|| panic!("no session id: {head}"))
        .to_string();
    let mut delete = base.to_vec();
    delete.push(("Mcp-Session-Id", &session));
    delete.push(("MCP-Protocol-Version", "2025-11-25"));
    let (status, head) = http_request(&addr, "DELETE", &delete, "");
    assert!(status == 204 || status == 200, "{head}");
    // A session that is not there (ended, or never was) is not found.
    let (status, head) = http_request(&addr, "DELETE", &delete, "");
    assert_eq!(status, 404, "{head}");
    // A body that is no JSON-RPC message gets its JSON-RPC error, with 400.
    let (status, head) = http_request(&addr, "POST", &base, r#"{"jsonrpc":"2.0","id":1,"method":"#);
    assert_eq!(status, 400, "{head}");
    assert!(head.to_ascii_lowercase().contains("content-type: application/json"), "{head}");
    server.kill().unwrap();
    server.wait().unwrap();
}

/// `mcp import` takes over `cwd`, `envFile` and `${workspaceFolder}` (the server then really
/// starts there, with those variables), imports a server whose values need `${input:...}` disabled
/// with a warning naming the field, names fields it has no equivalent for, and does not take an
/// SSE `url` without `type` for streamable HTTP.
#[test]
fn import_maps_cwd_env_file_and_workspace_folder_and_warns_about_the_rest() {
    let tmp = workspace("");
    std::fs::create_dir_all(tmp.path().join("sub")).unwrap();
    std::fs::write(tmp.path().join("sub/inner.txt"), "inner\n").unwrap();
    std::fs::write(tmp.path().join("inner.env"), "# from VS Code\nexport MARKER=\"from the env file\"\n").unwrap();
    let file = tmp.path().join("mcp.json");
    let servers = json!({
        "inputs": [{"type": "promptString", "id": "token", "password": true}],
        "servers": {
            "inner": {
                "type": "stdio",
                "command": TOOLSHED,
                "args": ["--root", "${workspaceFolder}/sub", "mcp", "serve"],
                "cwd": "${workspaceFolder}/sub",
                "envFile": "${workspaceFolder}/inner.env",
                "env": {"XDG_CONFIG_HOME": "${workspaceFolder}/.xdg-inner"}
            },
            "gh": {"command": "github-mcp", "env": {"GITHUB_TOKEN": "${input:token}"}, "alwaysAllow": ["get_issue"]},
            "legacy": {"url": "http://127.0.0.1:1/sse"}
        }
    });
    std::fs::write(&file, servers.to_string()).unwrap();
    let out = toolshed(tmp.path()).args(["mcp", "import"]).arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("gh: `env.GITHUB_TOKEN` uses ${input:token}"), "{stderr}");
    assert!(stderr.contains("gh: `alwaysAllow` was not imported"), "{stderr}");
    assert!(stderr.contains("legacy: its `url` ends in /sse"), "{stderr}");
    let config = std::fs::read_to_string(tmp.path().join("toolshed.toml")).unwrap();
    assert!(!config.contains("[mcp.legacy]"), "{config}");
    let list = toolshed(tmp.path()).args(["mcp", "list", "--json"]).output().unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let status = |name: &str| list.as_array().unwrap().iter().find(|s| s["name"] == name).unwrap().clone();
    assert_eq!(status("gh")["status"], "disabled", "{list}");
    assert_eq!(status("inner")["status"], "connected", "{list}");
    let out = toolshed(tmp.path())
        .args(["call", "inner_bash", r#"{"command": "pwd; echo \"$MARKER\"", "description": "where"}"#, "--json"])
        .output()
        .unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    let output = result["output"].as_str().unwrap();
    assert!(output.lines().next().unwrap().ends_with("/sub"), "{result}");
    assert!(output.contains("from the env file"), "{result}");
}

/// A client may call only the tools it was listed, as a model may call only those it was sent:
/// a tool its agent hides is refused (and does not run), a deferred tool is refused until
/// `tool_search` has found it (then it is listed and runs), and an unknown name is matched
/// against the listed tools only.
#[tokio::test]
async fn a_client_may_call_only_the_tools_it_was_listed() {
    let tmp = workspace("");
    let plan = stdio_client_with(tmp.path(), &["--agent", "plan"], Client { answer: Some("once") }).await;
    let names: Vec<String> = plan.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(names.iter().any(|n| n == "read") && !names.iter().any(|n| n == "write"), "{names:?}");
    let refused = call(&plan, "write", json!({"file_path": "made.txt", "content": "made\n"})).await;
    assert_eq!(refused.is_error, Some(true), "{}", text(&refused));
    assert!(text(&refused).contains("not one of your tools"), "{}", text(&refused));
    assert!(!tmp.path().join("made.txt").exists(), "a tool the client was not listed ran");
    let unknown = call(&plan, "reed", json!({"file_path": "notes.txt"})).await;
    assert_eq!(unknown.is_error, Some(true), "{}", text(&unknown));
    assert!(text(&unknown).contains("read"), "{}", text(&unknown));
    plan.cancel().await.unwrap();

    let inner = tmp.path().join("sub");
    std::fs::create_dir_all(&inner).unwrap();
    std::fs::write(inner.join("inner.txt"), "needle from the inner server\n").unwrap();
    let config = format!(
        "[mcp.inner]\ncommand = \"{TOOLSHED}\"\nargs = [\"--root\", \"{}\", \"mcp\", \"serve\"]\nenv = {{ XDG_CONFIG_HOME = \"{}\" }}\nexposure = \"deferred\"\n",
        inner.display(),
        tmp.path().join(".xdg-inner").display()
    );
    std::fs::write(tmp.path().join("toolshed.toml"), config).unwrap();
    let watcher = Watcher::default();
    let client = stdio_client(tmp.path(), watcher.clone()).await;
    // The upstream server joins later; wait until tool_search is listed (something deferred).
    let deferred = async {
        loop {
            let tools = client.list_all_tools().await.unwrap();
            if tools.iter().any(|t| t.name == "tool_search") {
                return tools;
            }
            watcher.changed.notified().await;
        }
    };
    let tools = tokio::time::timeout(Duration::from_secs(60), deferred).await.expect("nothing was deferred");
    assert!(!tools.iter().any(|t| t.name == "inner_grep"), "deferred but listed");
    let early = call(&client, "inner_grep", json!({"pattern": "needle"})).await;
    assert_eq!(early.is_error, Some(true), "{}", text(&early));
    assert!(text(&early).contains("tool_search"), "{}", text(&early));
    assert!(!text(&early).contains("inner.txt"), "{}", text(&early));

    let found = call(&client, "tool_search", json!({"query": "inner grep"})).await;
    assert!(text(&found).contains("inner_grep"), "{}", text(&found));
    let names: Vec<String> = client.list_all_tools().await.unwrap().iter().map(|t| t.name.to_string()).collect();
    assert!(names.iter().any(|n| n == "inner_grep"), "{names:?}");
    let grep = call(&client, "inner_grep", json!({"pattern": "needle"})).await;
    assert_ne!(grep.is_error, Some(true), "{}", text(&grep));
    assert!(text(&grep).contains("inner.txt"), "{}", text(&grep));
    client.cancel().await.unwrap();
}

/// Review 6: `mcp serve` stopped serving on SIGTERM but did not exit while its client kept
/// standard input open (the runtime waited for the blocked read); and SIGHUP ended it at once,
/// before what a session left was cleaned up. Both now end it like a closed input.
#[test]
fn serve_exits_on_sigterm_and_sighup_while_its_input_stays_open() {
    for signal in ["TERM", "HUP"] {
        let ws = workspace("");
        let mut server = toolshed(ws.path())
            .args(["mcp", "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut input = server.stdin.take().unwrap();
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        std::io::Write::write_all(&mut input, format!("{initialize}\n").as_bytes()).unwrap();
        let mut line = String::new();
        BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert!(line.contains("\"result\""), "{line}");
        let sent = Command::new("kill").args([&format!("-{signal}"), &server.id().to_string()]).status().unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = server.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "still serving 10 s after SIG{signal}");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(status.success(), "SIG{signal}: {status:?}");
        drop(input);
    }
}

/// `--http` listens only on loopback (a request from the network naming `localhost` as its
/// host would pass the host check, and nothing authenticates a client); a connection that
/// never finishes its request head is closed, and one whose body never comes is answered 408,
/// so idle ones cannot hold the server's slots; with every slot taken, the next is told 503.
#[test]
fn http_listens_only_on_loopback_and_closes_a_connection_that_sends_no_request() {
    use std::io::{Read, Write};
    let tmp = workspace("");
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:8700", "127.1.2.3:0"] {
        let out = toolshed(tmp.path()).args(["mcp", "serve", "--http", addr]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{addr}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("ssh -L"), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (mut server, addr) = http_server(tmp.path());
    // A whole head, then a body that never comes: answered 408 once the body's time is up
    // (without the token, 401 at once: no body is waited for).
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    let head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n";
    silent.write_all(format!("{head}Authorization: Bearer {TOKEN}\r\n\r\n").as_bytes()).unwrap();
    silent.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: ").unwrap();
    slow.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(started.elapsed() < std::time::Duration::from_secs(25), "the connection was held open");
    // Every slot taken (idle connections): the next is told so at once, not left waiting.
    let mut held: Vec<std::net::TcpStream> = (0..520).map(|_| std::net::TcpStream::connect(&addr).unwrap()).collect();
    let last = held.last_mut().unwrap();
    last.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let mut busy = String::new();
    let _ = last.read_to_string(&mut busy);
    assert!(busy.starts_with("HTTP/1.1 503"), "{busy:?}");
    drop(held);
    let mut answer = String::new();
    let _ = silent.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    server.kill().unwrap();
    server.wait().unwrap();
}
