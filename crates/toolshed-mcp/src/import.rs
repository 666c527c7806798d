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
}

/// The servers of a file, and notes about the ones that could not be taken over.
#[derive(Debug, Default)]
pub struct Imported {
    /// Server name → config, in the file's order.
    pub servers: Vec<(String, McpConfig)>,
    /// One line per server left out, saying why.
    pub skipped: Vec<String>,
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
        if server.transport.as_deref() == Some("sse") {
            out.skipped.push(format!(
                "{name}: uses the legacy HTTP+SSE transport, which toolshed does not speak (only streamable HTTP)"
            ));
            continue;
        }
        let url = server.url.or(server.server_url);
        if server.command.is_some() == url.is_some() {
            out.skipped.push(format!("{name}: needs exactly one of `command` or `url`"));
            continue;
        }
        let config = McpConfig {
            command: server.command,
            args: server.args,
            env: server.env,
            url,
            headers: server.headers,
            enabled: server.disabled.map(|d| !d),
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
