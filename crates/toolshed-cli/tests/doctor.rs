//! `toolshed doctor`, and the web and skill tools as the CLI wires them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn toolshed(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("HOME", root.join(".home"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .env_remove("BRAVE_API_KEY")
        // No language server on PATH, so the lsp section is the same on every machine.
        .env("PATH", root.join(".no-path"))
        .output()
        .unwrap()
}

/// Doctor's output with the root redacted and without the sandbox and environment sections,
/// which depend on the kernel and on this process's variables (tests of their own check them:
/// here and in `trust.rs`).
fn stdout(out: &Output, root: &Path) -> String {
    let text = String::from_utf8_lossy(&out.stdout).replace(&root.display().to_string(), "$ROOT");
    let (_, rest) = sections(&text, "sandbox");
    let (_, rest) = sections(&rest, "environment");
    rest
}

/// Splits off one section (`name: status` and its indented lines) from doctor's output.
fn sections(text: &str, name: &str) -> (String, String) {
    let (mut section, mut rest) = (String::new(), String::new());
    let mut inside = false;
    for line in text.lines() {
        if !line.starts_with(' ') {
            inside = line.starts_with(&format!("{name}: "));
        }
        let target = if inside { &mut section } else { &mut rest };
        target.push_str(line);
        target.push('\n');
    }
    (section, rest)
}

#[test]
fn doctor_reports_the_sandbox_the_shell_will_use() {
    let tmp = worktree();
    let out = toolshed(tmp.path(), &["doctor"]);
    let (sandbox, _) = sections(&String::from_utf8_lossy(&out.stdout), "sandbox");
    let landlock = sandbox.contains("Landlock ABI");
    if landlock {
        // A warning: this test's home directory lies in its worktree, where commands write.
        assert!(sandbox.starts_with("sandbox: warning\n  workspace-write enforced with Landlock ABI"), "{sandbox}");
        assert!(
            sandbox.contains(
                "\n  your home directory ($ROOT/.home) lies where sandboxed commands may write"
                    .replace("$ROOT", &tmp.path().canonicalize().unwrap().display().to_string())
                    .as_str()
            ),
            "{sandbox}"
        );
    } else {
        eprintln!(
            "SKIP doctor_reports_the_sandbox_the_shell_will_use (enforced case): Landlock unavailable: {sandbox}"
        );
        assert!(sandbox.starts_with("sandbox: problem\n  workspace-write requested but"), "{sandbox}");
        assert_eq!(out.status.code(), Some(1));
    }
    assert!(sandbox.contains("\n  per agent: explore: read-only, plan: read-only"), "{sandbox}");
    // The same sections as one JSON object, for scripts, with the same exit code.
    let json = toolshed(tmp.path(), &["doctor", "--json"]);
    assert_eq!(json.status.code(), out.status.code());
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    let names: Vec<&str> = doc["sections"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names.first(), Some(&"project"), "{doc}");
    let sandbox_json = doc["sections"].as_array().unwrap().iter().find(|s| s["name"] == "sandbox").unwrap();
    assert_eq!(sandbox_json["status"], if landlock { "warning" } else { "problem" }, "{doc}");
    assert!(
        sandbox_json["lines"].as_array().unwrap().iter().any(|l| l == "per agent: explore: read-only, plan: read-only"),
        "{doc}"
    );
    if landlock {
        let protection = sandbox.lines().nth(2).unwrap_or_default();
        assert!(
            protection.starts_with("  protected paths (.git, .toolshed, .opencode/tool, .opencode/tools, .opencode/skills, .opencode/skill, .claude/skills, .agents/skills, toolshed.toml, .gitmodules) "),
            "{sandbox}"
        );
        assert!(protection.contains("bound read-only") || protection.contains("stay WRITABLE"), "{sandbox}");
        let data = sandbox.lines().nth(3).unwrap_or_default();
        assert!(data.starts_with("  toolshed's data directory ("), "{sandbox}");
        assert!(data.contains("is hidden from sandboxed commands") || data.contains("stays READABLE"), "{sandbox}");
        let sockets = sandbox.lines().nth(4).unwrap_or_default();
        assert!(sockets.contains("socket(s) of servers outside the sandbox are hidden"), "{sandbox}");
    }
    write(&tmp.path().join("toolshed.toml"), "[sandbox]\nmode = \"full-access\"\n");
    let out = toolshed(tmp.path(), &["doctor"]);
    let (sandbox, _) = sections(&String::from_utf8_lossy(&out.stdout), "sandbox");
    assert!(sandbox.starts_with("sandbox: off\n  full-access (commands run unsandboxed)"), "{sandbox}");
    assert!(!sandbox.contains("per agent"), "full-access opts every agent out: {sandbox}");
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn worktree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    // Canonical, so the paths doctor prints start with the redacted root.
    let root = tmp.path().canonicalize().unwrap();
    assert_eq!(root, tmp.path());
    tmp
}

#[test]
fn doctor_in_a_bare_worktree_says_what_is_off_and_why() {
    let tmp = worktree();
    let out = toolshed(tmp.path(), &["doctor"]);
    // Only a kernel without Landlock makes the default sandbox a problem here.
    let (sandbox, _) = sections(&String::from_utf8_lossy(&out.stdout), "sandbox");
    let expected = if sandbox.starts_with("sandbox: problem") { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(expected), "{}", String::from_utf8_lossy(&out.stderr));
    insta::assert_snapshot!(stdout(&out, tmp.path()), @r#"
    project: off
      no toolshed.toml or custom tool directory in the worktree
    model: off
      no model configured: set model = "PROVIDER/MODEL" in toolshed.toml (`toolshed init` writes an example), or give `run` and `chat` -m
    mcp: off
      no MCP servers configured; add [mcp.NAME] tables to toolshed.toml, or run `toolshed mcp import FILE`
    custom tools: off
      no custom tools in .toolshed/tools, .opencode/tool(s) or the user config directory
    websearch: off
      no [websearch] section in the config, so the websearch tool is not offered. To enable it, add e.g.
        [websearch]
        backend = "searxng"
        url = "http://localhost:8080"
      or backend = "brave" / "exa" with the API key in BRAVE_API_KEY / EXA_API_KEY.
    skills: off
      no skills found; looked in:
        $ROOT/.toolshed/skills
        $ROOT/.opencode/skills
        $ROOT/.opencode/skill
        $ROOT/.claude/skills
        $ROOT/.agents/skills
        $ROOT/.xdg-config/toolshed/skills
        $ROOT/.home/.claude/skills
        $ROOT/.home/.agents/skills
        $ROOT/.xdg-config/opencode/skills
        $ROOT/.xdg-config/opencode/skill
        $ROOT/.home/.opencode/skills
        $ROOT/.home/.opencode/skill
    instructions: off
      no AGENTS.md or CLAUDE.md from $ROOT down to $ROOT, nor in the user config directory
    lsp: off
      no language server is configured or found on PATH (looked for rust-analyzer, pyright-langserver, typescript-language-server, gopls, clangd); install one, or add an [lsp.NAME] section to toolshed.toml
    "#);
}

#[test]
fn doctor_lists_skills_and_instructions_and_reports_a_broken_skill_with_its_line() {
    let tmp = worktree();
    let root = tmp.path();
    write(
        &root.join(".claude/skills/lint-fix/SKILL.md"),
        "---\nname: lint-fix\ndescription: Fix lint errors.\n---\nRun the linter.\n",
    );
    write(&root.join(".xdg-config/toolshed/skills/broken/SKILL.md"), "---\nname: broken\n---\n");
    write(&root.join("AGENTS.md"), "Be brief.\n");
    let url = serve_once("application/json", SEARXNG);
    let base = url.trim_end_matches("/page").to_string();
    write(&root.join("toolshed.toml"), &format!("[websearch]\nbackend = \"searxng\"\nurl = \"{base}\"\n"));
    let out = toolshed(root, &["doctor"]);
    assert_eq!(out.status.code(), Some(1), "a broken skill is a problem");
    insta::assert_snapshot!(stdout(&out, root).replace(&base, "$BASE"), @r#"
    project: warning
      TOOLSHED_TRUST_PROJECT=1: toolshed.toml and the tool directories apply as they are, whoever wrote them
    model: off
      no model configured: set model = "PROVIDER/MODEL" in toolshed.toml (`toolshed init` writes an example), or give `run` and `chat` -m
    mcp: off
      no MCP servers configured; add [mcp.NAME] tables to toolshed.toml, or run `toolshed mcp import FILE`
    custom tools: off
      no custom tools in .toolshed/tools, .opencode/tool(s) or the user config directory
    websearch: ok
      websearch is offered, using the searxng backend at $BASE/search
      a test query ("rust programming language") returned 1 result(s)
    skills: problem
      lint-fix: $ROOT/.claude/skills/lint-fix/SKILL.md
      broken, left out: $ROOT/.xdg-config/toolshed/skills/broken/SKILL.md:3: `description` is missing: say what the skill does and when to use it
    instructions: ok
      $ROOT/AGENTS.md (project, 9 bytes)
    lsp: off
      no language server is configured or found on PATH (looked for rust-analyzer, pyright-langserver, typescript-language-server, gopls, clangd); install one, or add an [lsp.NAME] section to toolshed.toml
    "#);

    // The broken skill does not break the tool list: the good one is offered.
    let tools = toolshed(root, &["tools", "--format", "json"]);
    assert_eq!(tools.status.code(), Some(0), "{}", String::from_utf8_lossy(&tools.stderr));
    let list: Value = serde_json::from_slice(&tools.stdout).unwrap();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"skill") && names.contains(&"websearch") && names.contains(&"webfetch"), "{names:?}");
    let skill = list.as_array().unwrap().iter().find(|t| t["name"] == "skill").unwrap();
    assert!(skill["description"].as_str().unwrap().contains("- lint-fix: Fix lint errors."));
}

#[test]
fn doctor_says_why_a_configured_websearch_is_not_offered() {
    let tmp = worktree();
    write(&tmp.path().join("toolshed.toml"), "[websearch]\nbackend = \"brave\"\n");
    let out = toolshed(tmp.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let text = section(&out, tmp.path(), "websearch");
    assert!(
        text.starts_with("websearch: problem\n  websearch is not offered: the brave backend needs an API key, but the environment variable BRAVE_API_KEY is not set\n"),
        "{text}"
    );
    let tools = toolshed(tmp.path(), &["tools", "--format", "json"]);
    assert!(!String::from_utf8_lossy(&tools.stdout).contains("\"websearch\""));
}

/// Serves one HTTP response on a loopback port from a thread; returns the URL.
fn serve_once(content_type: &'static str, body: &'static [u8]) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = stream.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
    });
    format!("http://{addr}/page")
}

#[test]
fn call_webfetch_prints_the_page_and_attachments_as_json() {
    let tmp = worktree();
    let url = serve_once(
        "text/html",
        b"<html><head><title>T</title></head><body><nav>menu</nav><h1>Hello</h1><p>World</p></body></html>",
    );
    let out = toolshed(tmp.path(), &["call", "webfetch", &format!("{{\"url\": \"{url}\"}}"), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["is_error"], false);
    assert!(result["output"].as_str().unwrap().ends_with("Title: T\n\n# Hello\n\nWorld"), "{result}");

    let png: &'static [u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
    let url = serve_once("image/png", png);
    let out = toolshed(tmp.path(), &["call", "webfetch", &format!("{{\"url\": \"{url}\"}}"), "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["attachments"][0]["type"], "image");
    assert_eq!(result["attachments"][0]["mime_type"], "image/png");
}

#[test]
fn doctor_warns_about_a_skill_description_over_the_limit_and_loads_the_skill() {
    let tmp = worktree();
    let root = tmp.path();
    // Anthropic's claude-api skill as published: a 1,068-character description.
    let skill = include_str!("../../toolshed-tools/tests/fixtures/skills/claude-api/SKILL.md");
    write(&root.join(".agents/skills/claude-api/SKILL.md"), skill);
    let out = toolshed(root, &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout).replace(&root.display().to_string(), "$ROOT");
    let (skills, _) = sections(&text, "skills");
    assert_eq!(
        skills,
        "skills: warning\n  claude-api: $ROOT/.agents/skills/claude-api/SKILL.md\n  loaded, but: $ROOT/.agents/skills/claude-api/SKILL.md:3: `description` is 1068 characters long, over the 1024 the Agent Skills rules allow; the skill is loaded with all of it, but agents that keep to the rules leave it out, so shorten it if you can\n"
    );
}

/// One section of doctor's output, with `$ROOT` for the root.
fn section(out: &Output, root: &Path, name: &str) -> String {
    let text = String::from_utf8_lossy(&out.stdout).replace(&root.display().to_string(), "$ROOT");
    sections(&text, name).0
}

#[test]
fn doctor_sends_the_configured_model_one_request_and_says_it_answers() {
    use toolshed_llm::testing::{FakeServer, Reply, chat};
    let server = FakeServer::start(vec![Reply::sse(chat::text("OK"))]).unwrap();
    let tmp = worktree();
    let base = server.base_url();
    write(
        &tmp.path().join("toolshed.toml"),
        &format!("model = \"fake/small\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{base}\"\n"),
    );
    let out = toolshed(tmp.path(), &["doctor"]);
    let model = section(&out, tmp.path(), "model").replace(&base, "$BASE");
    let model = regex_ms(&model);
    assert_eq!(model, "model: ok\n  fake/small (model): answers (openai-chat at $BASE, N ms)\n");
    let received = server.received();
    assert_eq!(received.len(), 1, "one request, no retries");
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[0].body["model"], "small");
    assert!(received[0].body.get("max_tokens").is_none(), "{}", received[0].body);
}

#[test]
fn doctor_reports_a_provider_that_refuses_with_its_exact_error_and_exits_1() {
    use toolshed_llm::testing::{FakeServer, Reply};
    let server = FakeServer::start(vec![Reply::error(
        401,
        serde_json::json!({"error": {"message": "Incorrect API key provided"}}),
    )])
    .unwrap();
    let tmp = worktree();
    let base = server.base_url();
    write(
        &tmp.path().join("toolshed.toml"),
        &format!(
            "model = \"fake/small\"\n[provider.fake]\nkind = \"anthropic\"\nbase_url = \"{base}\"\n[agent.review]\nmodel = \"nowhere/x\"\n"
        ),
    );
    let out = toolshed(tmp.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let model = section(&out, tmp.path(), "model");
    insta::assert_snapshot!(model, @r#"
    model: problem
      fake/small (model): fake rejected the API key (HTTP 401): Incorrect API key provided. Set `api_key_env` in [provider.fake] to the variable holding a valid key.
      nowhere/x ([agent.review]): unknown provider `nowhere` in model `nowhere/x`; known providers: openai, anthropic, fake. Add a [provider.nowhere] table with `kind` and `base_url` to toolshed.toml to define it
    "#);
    let received = server.received();
    assert_eq!(received.len(), 1, "a refused key is not retried");
    assert_eq!(received[0].path, "/v1/messages");
    assert_eq!(received[0].body["max_tokens"], 16);
}

/// `N ms)` for a number of milliseconds.
fn regex_ms(text: &str) -> String {
    let Some(end) = text.find(" ms)") else { return text.to_string() };
    let start = text[..end].trim_end_matches(|c: char| c.is_ascii_digit()).len();
    format!("{}N{}", &text[..start], &text[end..])
}

#[test]
fn doctor_starts_each_mcp_server_and_lists_its_tools_or_says_why_not() {
    let tmp = worktree();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("sub")).unwrap();
    write(
        &root.join("toolshed.toml"),
        &format!(
            "[mcp.inner]\ncommand = \"{bin}\"\nargs = [\"--root\", \"{root}/sub\", \"mcp\", \"serve\", \"-a\", \"explore\"]\nenv = {{ XDG_CONFIG_HOME = \"{root}/.xdg-inner\", TOOLSHED_DATA_DIR = \"{root}/.data-inner\" }}\ninclude = [\"read\", \"grep\"]\n\n[mcp.gone]\ncommand = \"{root}/no-such-server\"\n\n[mcp.off]\ncommand = \"x\"\nenabled = false\n",
            bin = env!("CARGO_BIN_EXE_toolshed"),
            root = root.display()
        ),
    );
    let out = toolshed(root, &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let mcp = section(&out, root, "mcp").replace(env!("CARGO_BIN_EXE_toolshed"), "$TOOLSHED");
    let lines: Vec<&str> = mcp.lines().collect();
    assert_eq!(lines[0], "mcp: problem", "{mcp}");
    assert!(lines.iter().any(|l| l.starts_with("  gone (stdio: $ROOT/no-such-server): does not start: ")), "{mcp}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  inner (stdio: $TOOLSHED") && l.ends_with(": 2 tool(s): inner_read, inner_grep")),
        "{mcp}"
    );
    assert!(lines.contains(&"  off (stdio: x): disabled (enabled = false)"), "{mcp}");
}

#[test]
fn doctor_loads_custom_tools_afresh_and_reports_a_broken_one_with_its_line() {
    let tmp = worktree();
    let root = tmp.path();
    write(&root.join(".toolshed/tools/shout.toml"), "description = \"Shout.\"\ncommand = [\"/bin/cat\"]\n");
    let out = toolshed(root, &["doctor"]);
    assert_eq!(section(&out, root, "custom tools"), "custom tools: ok\n  shout: .toolshed/tools/shout.toml\n");
    write(&root.join(".toolshed/tools/bad.toml"), "description = \"Bad.\"\ncommand = [\"true\"]\ntimeout = 5\n");
    let out = toolshed(root, &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let custom = section(&out, root, "custom tools");
    assert!(custom.starts_with("custom tools: problem\n  shout: .toolshed/tools/shout.toml\n  broken, left out: $ROOT/.toolshed/tools/bad.toml:3: unknown field `timeout`"), "{custom}");
}

/// A SearXNG answer with one result.
const SEARXNG: &[u8] =
    br#"{"results": [{"title": "Rust", "url": "https://www.rust-lang.org/", "content": "A language."}]}"#;

#[test]
fn doctor_probes_websearch_with_a_query_instead_of_trusting_the_config() {
    let tmp = worktree();
    let url = serve_once("application/json", SEARXNG);
    let base = url.trim_end_matches("/page");
    write(&tmp.path().join("toolshed.toml"), &format!("[websearch]\nbackend = \"searxng\"\nurl = \"{base}\"\n"));
    let out = toolshed(tmp.path(), &["doctor"]);
    let websearch = section(&out, tmp.path(), "websearch").replace(base, "$BASE");
    assert_eq!(
        websearch,
        "websearch: ok\n  websearch is offered, using the searxng backend at $BASE/search\n  a test query (\"rust programming language\") returned 1 result(s)\n"
    );
    // Nothing listens on port 9: configured, but broken.
    write(&tmp.path().join("toolshed.toml"), "[websearch]\nbackend = \"searxng\"\nurl = \"http://127.0.0.1:9\"\n");
    let out = toolshed(tmp.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(1));
    let websearch = section(&out, tmp.path(), "websearch");
    assert!(
        websearch.starts_with("websearch: problem\n  websearch is offered, using the searxng backend at http://127.0.0.1:9/search\n  but a test query failed: The web search failed: the searxng backend at http://127.0.0.1:9/search could not be reached"),
        "{websearch}"
    );
}

/// Each section is printed as soon as it is known: a model that takes its time to answer does
/// not hold back what was already found.
#[test]
fn sections_come_out_as_they_are_checked() {
    use std::io::BufRead;
    use toolshed_llm::testing::{FakeServer, Reply, chat};
    let server =
        FakeServer::start(vec![Reply::sse(chat::text("ok")).delay(std::time::Duration::from_millis(500))]).unwrap();
    let dir = worktree();
    let root = dir.path();
    write(
        &root.join("toolshed.toml"),
        &format!("model = \"fake/m\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n", server.base_url()),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap(), "doctor"])
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("HOME", root.join(".home"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("project: "), "{first}");
    assert!(child.try_wait().unwrap().is_none(), "the first section came only at the end");
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(rest.iter().any(|l| l.starts_with("model: ok")), "{rest:?}");
    child.wait().unwrap();
}
