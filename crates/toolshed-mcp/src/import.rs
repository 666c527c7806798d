//! The `mcpServers` JSON other MCP clients keep their servers in (Claude Desktop, Claude Code's
//! `.mcp.json`, Cursor, Windsurf, Cline; VS Code's `servers`), read into `[mcp.NAME]` configs
//! and written out as TOML.

use std::collections::BTreeMap;

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
    timeout: Option<u64>,
    cwd: Option<String>,
    env_file: Option<String>,
    /// Fields toolshed has no equivalent for; each is named in a warning.
    #[serde(flatten)]
    other: BTreeMap<String, serde_json::Value>,
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
        let placeholder = &rest[start..start + len + 1];
        if placeholder != crate::client::WORKSPACE_FOLDER {
            found.push(placeholder);
        }
        rest = &rest[start + len + 1..];
    }
    found
}

/// Reads `text` (JSON with `mcpServers` or `servers`).
pub fn parse(text: &str) -> Result<Imported, String> {
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
        let config = McpConfig {
            command: server.command,
            args: server.args,
            env: server.env,
            cwd: server.cwd,
            env_file: server.env_file,
            url,
            headers: server.headers,
            enabled: if unresolved { Some(false) } else { server.disabled.map(|d| !d) },
            timeout_ms: server.timeout,
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
        let imported = parse(text).unwrap();
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
        let vscode = parse(r#"{"servers": {"fs": {"type": "stdio", "command": "mcp-fs"}}}"#).unwrap();
        assert_eq!(vscode.servers[0].1.command.as_deref(), Some("mcp-fs"));
        assert!(parse("{}").is_err());
    }
}
