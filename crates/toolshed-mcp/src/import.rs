//! The `mcpServers` JSON other MCP clients keep their servers in (Claude Desktop, Claude Code's
//! `.mcp.json`, Cursor, Windsurf, Cline; VS Code's `servers`), read into `[mcp.NAME]` configs
//! and written out as TOML.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toolshed_core::config::McpConfig;

/// One server as those files write it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ForeignServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    server_url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(rename = "type")]
    transport: Option<String>,
    disabled: Option<bool>,
    /// Its unit depends on the client that wrote the file ([`Source::timeout_unit`]).
    timeout: Option<serde_json::Value>,
    cwd: Option<String>,
    env_file: Option<String>,
    /// Fields toolshed has no equivalent for; each is named in a warning.
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
}

/// Which client wrote the file, told by its name and folder: what its `timeout` counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Cline's `cline_mcp_settings.json`: `timeout` in seconds (default 60, at least 1).
    Cline,
    /// Claude Code's `.mcp.json` (or `~/.claude.json`): `timeout` in milliseconds.
    ClaudeCode,
    /// Gemini CLI's `.gemini/settings.json`: `timeout` in milliseconds (default 600,000).
    GeminiCli,
    /// Claude Desktop's `claude_desktop_config.json` (documents no `timeout`).
    ClaudeDesktop,
    /// Cursor's `.cursor/mcp.json` (documents no `timeout`).
    Cursor,
    /// Windsurf's `mcp_config.json` (documents no `timeout`).
    Windsurf,
    /// VS Code's `.vscode/mcp.json` (documents no `timeout`).
    VsCode,
    /// A file whose name does not say which client wrote it.
    Unknown,
}

/// The unit of a source's `timeout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutUnit {
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Milliseconds,
}

/// The shortest and longest call time limits an imported `timeout` may come to (1 s to 1 h);
/// outside them the number was most likely written in the other unit.
const PLAUSIBLE_TIMEOUT_MS: std::ops::RangeInclusive<f64> = 1_000.0..=3_600_000.0;

impl Source {
    /// The client that writes a file of this name in this folder.
    pub fn of_path(path: &Path) -> Source {
        let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        let parent =
            path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
        match (name.as_str(), parent.as_str()) {
            ("cline_mcp_settings.json", _) => Source::Cline,
            (".mcp.json" | ".claude.json", _) => Source::ClaudeCode,
            ("settings.json", ".gemini") => Source::GeminiCli,
            ("claude_desktop_config.json", _) => Source::ClaudeDesktop,
            ("mcp.json", ".cursor") => Source::Cursor,
            ("mcp_config.json", _) => Source::Windsurf,
            ("mcp.json", ".vscode") => Source::VsCode,
            _ => Source::Unknown,
        }
    }

    /// What people call it.
    pub fn label(self) -> &'static str {
        match self {
            Source::Cline => "Cline",
            Source::ClaudeCode => "Claude Code",
            Source::GeminiCli => "Gemini CLI",
            Source::ClaudeDesktop => "Claude Desktop",
            Source::Cursor => "Cursor",
            Source::Windsurf => "Windsurf",
            Source::VsCode => "VS Code",
            Source::Unknown => "an unknown client",
        }
    }

    /// What its `timeout` counts, when its documentation says.
    pub fn timeout_unit(self) -> Option<TimeoutUnit> {
        match self {
            Source::Cline => Some(TimeoutUnit::Seconds),
            Source::ClaudeCode | Source::GeminiCli => Some(TimeoutUnit::Milliseconds),
            Source::ClaudeDesktop | Source::Cursor | Source::Windsurf | Source::VsCode | Source::Unknown => None,
        }
    }
}

/// A server's `timeout` as `timeout_ms`, or why it was not taken over (for a warning).
fn timeout_ms(value: &serde_json::Value, source: Source) -> Result<u64, String> {
    let written = value.to_string();
    let Some(unit) = source.timeout_unit() else {
        let whose = match source {
            Source::Unknown => "the file's name does not say which client wrote it, so the unit of its `timeout` (seconds for Cline, milliseconds for Claude Code and Gemini CLI) is unknown".to_string(),
            other => format!("{} does not document a `timeout` setting, so its unit is unknown", other.label()),
        };
        return Err(format!(
            "`timeout` ({written}) was not imported: {whose}; set `timeout_ms` (milliseconds) in its table by hand"
        ));
    };
    let number = value.as_f64().filter(|n| n.is_finite() && *n > 0.0).ok_or_else(|| {
        format!("`timeout` ({written}) was not imported: it is not a positive number; set `timeout_ms` (milliseconds) in its table by hand")
    })?;
    let (ms, unit_name, other) = match unit {
        TimeoutUnit::Seconds => {
            (number * 1000.0, "seconds", format!("if {written} meant milliseconds, write `timeout_ms = {written}`"))
        }
        TimeoutUnit::Milliseconds => {
            (number, "milliseconds", format!("if {written} meant seconds, write `timeout_ms = {}`", number * 1000.0))
        }
    };
    if !PLAUSIBLE_TIMEOUT_MS.contains(&ms) {
        return Err(format!(
            "`timeout` ({written}) was not imported: {} counts it in {unit_name}, which makes a call time limit of {} ms, outside 1 s to 1 hour; {other} in its table, or leave toolshed's default (60 s)",
            source.label(),
            ms.round()
        ));
    }
    Ok(ms.round() as u64)
}

/// The servers of a file, and notes about the ones that could not be taken over.
#[derive(Debug, Default)]
pub struct Imported {
    /// Server name → config, in the file's order.
    pub servers: Vec<(String, McpConfig)>,
    /// One line per server left out, saying why.
    pub skipped: Vec<String>,
    /// One line per field of an imported server that was not taken over as written, naming it.
    pub warnings: Vec<String>,
}

/// Whether `url` is a legacy HTTP+SSE endpoint by its look (the path ends in `/sse`), for files
/// that leave `type` out (Cursor, Claude Desktop's remote servers).
fn looks_like_sse(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or(url).trim_end_matches('/');
    path.ends_with("/sse")
}

/// The `${...}` placeholders in `text` other than `${workspaceFolder}` (which toolshed expands
/// to the worktree root when it starts the server).
fn placeholders(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else { break };
        let placeholder = &rest[start..=(start + len)];
        if placeholder != crate::client::WORKSPACE_FOLDER {
            found.push(placeholder);
        }
        rest = &rest[start + len + 1..];
    }
    found
}

/// Reads `text` (JSON with `mcpServers` or `servers`), written by `source`.
pub fn parse(text: &str, source: Source) -> Result<Imported, String> {
    let root: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let table = root
        .get("mcpServers")
        .or_else(|| root.get("servers"))
        .and_then(|v| v.as_object())
        .ok_or("no `mcpServers` (or `servers`) object at the top level")?;
    let mut out = Imported::default();
    for (name, value) in table {
        let server: ForeignServer = match serde_json::from_value(value.clone()) {
            Ok(s) => s,
            Err(e) => {
                out.skipped.push(format!("{name}: {e}"));
                continue;
            }
        };
        let url = server.url.or(server.server_url);
        let sse_by_look = server.transport.is_none() && url.as_deref().is_some_and(looks_like_sse);
        if server.transport.as_deref() == Some("sse") || sse_by_look {
            let why = if sse_by_look {
                "its `url` ends in /sse, the legacy HTTP+SSE transport"
            } else {
                "its `type` is \"sse\", the legacy HTTP+SSE transport"
            };
            out.skipped.push(format!(
                "{name}: {why}, which toolshed does not speak (only streamable HTTP); if the server also offers streamable HTTP (often at /mcp), add it by hand"
            ));
            continue;
        }
        if server.command.is_some() == url.is_some() {
            out.skipped.push(format!("{name}: needs exactly one of `command` or `url`"));
            continue;
        }
        for field in server.other.keys() {
            let hint = match field.as_str() {
                "alwaysAllow" | "autoApprove" => {
                    "; allow its tools with [permission] rules instead (e.g. `NAME_TOOL = \"allow\"`)"
                }
                _ => "",
            };
            out.warnings.push(format!("{name}: `{field}` was not imported: toolshed has no such setting{hint}"));
        }
        let mut fields: Vec<(String, &str)> = Vec::new();
        fields.extend(server.command.as_deref().map(|c| ("command".to_string(), c)));
        fields.extend(server.args.iter().enumerate().map(|(i, a)| (format!("args[{i}]"), a.as_str())));
        fields.extend(server.env.iter().map(|(k, v)| (format!("env.{k}"), v.as_str())));
        fields.extend(url.as_deref().map(|u| ("url".to_string(), u)));
        fields.extend(server.headers.iter().map(|(k, v)| (format!("headers.{k}"), v.as_str())));
        fields.extend(server.cwd.as_deref().map(|c| ("cwd".to_string(), c)));
        fields.extend(server.env_file.as_deref().map(|f| ("envFile".to_string(), f)));
        let mut unresolved = false;
        for (field, value) in &fields {
            for placeholder in placeholders(value) {
                unresolved = true;
                let what = if placeholder.starts_with("${input:") {
                    "an input the other client asks its user for when the server starts"
                } else {
                    "a variable toolshed does not expand (it expands only ${workspaceFolder})"
                };
                out.warnings.push(format!(
                    "{name}: `{field}` uses {placeholder}, {what}; the server is imported with `enabled = false`: write the value into its table in toolshed.toml, then remove that line"
                ));
            }
        }
        let timeout = server.timeout.as_ref().and_then(|value| match timeout_ms(value, source) {
            Ok(ms) => Some(ms),
            Err(why) => {
                out.warnings.push(format!("{name}: {why}"));
                None
            }
        });
        let config = McpConfig {
            command: server.command,
            args: server.args,
            env: server.env,
            cwd: server.cwd,
            env_file: server.env_file,
            url,
            headers: server.headers,
            enabled: if unresolved { Some(false) } else { server.disabled.map(|d| !d) },
            timeout_ms: timeout,
            ..McpConfig::default()
        };
        out.servers.push((name.clone(), config));
    }
    Ok(out)
}

/// `[mcp.NAME]` tables for `servers`, ready to append to a toolshed.toml.
pub fn to_toml(servers: &[(String, McpConfig)]) -> String {
    let mut out = String::new();
    for (name, c) in servers {
        let mut table = toml::Table::new();
        if let Some(command) = &c.command {
            table.insert("command".into(), command.clone().into());
        }
        if !c.args.is_empty() {
            table.insert("args".into(), c.args.clone().into());
        }
        if !c.env.is_empty() {
            table.insert(
                "env".into(),
                toml::Value::Table(c.env.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect()),
            );
        }
        if let Some(cwd) = &c.cwd {
            table.insert("cwd".into(), cwd.clone().into());
        }
        if let Some(file) = &c.env_file {
            table.insert("env_file".into(), file.clone().into());
        }
        if let Some(url) = &c.url {
            table.insert("url".into(), url.clone().into());
        }
        if !c.headers.is_empty() {
            table.insert(
                "headers".into(),
                toml::Value::Table(c.headers.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect()),
            );
        }
        if let Some(enabled) = c.enabled {
            table.insert("enabled".into(), enabled.into());
        }
        if let Some(ms) = c.timeout_ms {
            table.insert("timeout_ms".into(), toml::Value::Integer(ms.min(i64::MAX as u64) as i64));
        }
        let mut mcp = toml::Table::new();
        mcp.insert(name.clone(), toml::Value::Table(table));
        let mut root = toml::Table::new();
        root.insert("mcp".into(), toml::Value::Table(mcp));
        out.push('\n');
        out.push_str(&toml::to_string(&root).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use toolshed_core::config::Config;

    #[test]
    fn claude_desktop_and_vscode_layouts_import_and_round_trip_through_the_config() {
        let text = r#"{"mcpServers": {
            "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "x"}},
            "remote": {"type": "http", "url": "https://example.test/mcp", "headers": {"X-Key": "k"}},
            "old": {"type": "sse", "url": "https://example.test/sse"},
            "off": {"command": "srv", "disabled": true},
            "bad": {"args": []}
        }}"#;
        let imported = parse(text, Source::ClaudeDesktop).unwrap();
        let names: Vec<&str> = imported.servers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["github", "remote", "off"]);
        assert_eq!(imported.skipped.len(), 2, "{:?}", imported.skipped);
        let toml_text = to_toml(&imported.servers);
        let mut config = Config::default();
        config.merge_str(Path::new("toolshed.toml"), &toml_text).unwrap();
        assert_eq!(config.mcp["github"].args, ["-y", "@modelcontextprotocol/server-github"]);
        assert_eq!(config.mcp["github"].env["GITHUB_TOKEN"], "x");
        assert_eq!(config.mcp["remote"].headers["X-Key"], "k");
        assert_eq!(config.mcp["off"].enabled, Some(false));
        let vscode = parse(r#"{"servers": {"fs": {"type": "stdio", "command": "mcp-fs"}}}"#, Source::VsCode).unwrap();
        assert_eq!(vscode.servers[0].1.command.as_deref(), Some("mcp-fs"));
        assert!(parse("{}", Source::Unknown).is_err());
    }

    #[test]
    fn each_client_is_known_by_its_file_and_its_timeout_unit_is_converted_or_warned_about() {
        let of = |p: &str| Source::of_path(Path::new(p));
        assert_eq!(
            of("/home/u/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
            Source::Cline
        );
        assert_eq!(of("/repo/.mcp.json"), Source::ClaudeCode);
        assert_eq!(of("/repo/.gemini/settings.json"), Source::GeminiCli);
        assert_eq!(of("/repo/.vscode/settings.json"), Source::Unknown);
        assert_eq!(of("/repo/.cursor/mcp.json"), Source::Cursor);
        assert_eq!(of("/repo/.vscode/mcp.json"), Source::VsCode);
        assert_eq!(of("/home/u/.codeium/windsurf/mcp_config.json"), Source::Windsurf);
        assert_eq!(of("/home/u/Library/Application Support/Claude/claude_desktop_config.json"), Source::ClaudeDesktop);
        assert_eq!(of("/tmp/servers.json"), Source::Unknown);
        let one = |source, timeout: &str| {
            let text = format!(r#"{{"mcpServers": {{"s": {{"command": "srv", "timeout": {timeout}}}}}}}"#);
            let imported = parse(&text, source).unwrap();
            (imported.servers[0].1.timeout_ms, imported.warnings)
        };
        assert_eq!(one(Source::Cline, "60"), (Some(60_000), vec![]));
        assert_eq!(one(Source::Cline, "1.5"), (Some(1_500), vec![]));
        assert_eq!(one(Source::ClaudeCode, "30000"), (Some(30_000), vec![]));
        assert_eq!(one(Source::GeminiCli, "600000"), (Some(600_000), vec![]));
        let (ms, warnings) = one(Source::Cline, "60000");
        assert_eq!(ms, None);
        assert!(
            warnings[0].contains("s: `timeout` (60000) was not imported: Cline counts it in seconds"),
            "{warnings:?}"
        );
        assert!(warnings[0].contains("write `timeout_ms = 60000`"), "{warnings:?}");
        let (ms, warnings) = one(Source::ClaudeCode, "30");
        assert_eq!(ms, None);
        assert!(warnings[0].contains("if 30 meant seconds, write `timeout_ms = 30000`"), "{warnings:?}");
        for source in [Source::ClaudeDesktop, Source::Cursor, Source::Windsurf, Source::VsCode, Source::Unknown] {
            let (ms, warnings) = one(source, "60");
            assert_eq!(ms, None, "{source:?}");
            assert!(
                warnings[0].contains("`timeout` (60) was not imported") && warnings[0].contains("unit"),
                "{warnings:?}"
            );
        }
        let (ms, warnings) = one(Source::Cline, r#""60s""#);
        assert_eq!(ms, None);
        assert!(warnings[0].contains("not a positive number"), "{warnings:?}");
    }
}
