//! `toolshed config schema | show`: the config file's JSON Schema, and the effective
//! configuration with the file (or override) each value came from. Neither discovers tools nor
//! starts anything; `schema` reads no config at all, so it works while a file is broken.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolshed_core::config::{Config, Explained, Override, Setting};

use crate::CliError;

/// `toolshed config ...`.
#[derive(Subcommand)]
pub enum ConfigCommand {
    /// Print the JSON Schema of the config file (toolshed.toml, ~/.config/toolshed/config.toml),
    /// for editors: Taplo and Even Better TOML read it through a `#:schema PATH` first line.
    #[command(after_help = SCHEMA_EXAMPLES)]
    Schema,
    /// Print the effective configuration, each value with the file or override it came from
    /// ("default": toolshed's own).
    #[command(after_help = SHOW_EXAMPLES)]
    Show(ShowArgs),
}

const SCHEMA_EXAMPLES: &str = "Examples:
  toolshed config schema > .toolshed/config.schema.json   # then `#:schema ./.toolshed/config.schema.json` as the first line of toolshed.toml
  toolshed init                                            # writes both";

const SHOW_EXAMPLES: &str = "Examples:
  toolshed config show
  toolshed config show -c session.max_steps=5       # what an override changes
  toolshed config show --json | jq '.config.model'";

#[derive(Args)]
pub struct ShowArgs {
    /// Print JSON: {"layers": [{"path", "kind"}], "settings": [{"key", "value", "from"}],
    /// "config": the effective document}.
    #[arg(long)]
    json: bool,
}

/// Runs a `config` command; `root` and the config arguments as the global options gave them.
pub fn run(
    root: Option<&Path>,
    config_file: Option<&Path>,
    overrides: &[Override],
    command: &ConfigCommand,
) -> Result<ExitCode, CliError> {
    match command {
        ConfigCommand::Schema => {
            crate::out_exact(schema_text()?);
            Ok(ExitCode::SUCCESS)
        }
        ConfigCommand::Show(args) => {
            let (root, _) = toolshed_runtime::locate(root).map_err(CliError::from)?;
            let explained = Config::explain(config_file, &root, overrides)
                .map_err(|e| CliError::usage(format!("config error: {e}")))?;
            for note in explained.config.user_note.iter().chain(&explained.config.project_note) {
                crate::err(format_args!("toolshed: {note}"));
            }
            if args.json {
                let doc = json!({
                    "layers": explained.layers,
                    "settings": explained.settings,
                    "config": explained.config.document(),
                });
                crate::out_exact(serde_json::to_string_pretty(&doc).map_err(CliError::failure)?);
            } else {
                crate::out(show(&explained).trim_end());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The schema as printed and as `toolshed init` writes it.
pub fn schema_text() -> Result<String, CliError> {
    serde_json::to_string_pretty(&toolshed_core::config::schema()).map_err(CliError::failure)
}

/// The human form: TOML, each value followed by `# from FILE` (or `# default`). Lists that
/// several files add to show one line per rule (`[permission]`) or each element's origin.
fn show(explained: &Explained) -> String {
    let mut out = String::new();
    if explained.layers.is_empty() {
        out.push_str("# No config file or override: every value is toolshed's default.\n");
    } else {
        out.push_str("# Read in this order (later ones win):\n");
        for layer in &explained.layers {
            out.push_str(&format!("#   {:<14} {}\n", layer.kind.describe(), layer.path.display()));
        }
    }
    let mut table: Option<Vec<String>> = None;
    let settings = &explained.settings;
    let mut i = 0;
    while i < settings.len() {
        let (path, line, used) = entry(&settings[i..]);
        i += used;
        if table.as_ref() != Some(&path) {
            out.push('\n');
            if !path.is_empty() {
                let header: Vec<String> = path.iter().map(|k| key(k)).collect();
                out.push_str(&format!("[{}]\n", header.join(".")));
            }
            table = Some(path);
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The table, the line and how many settings it took, for the first of `settings`.
fn entry(settings: &[Setting]) -> (Vec<String>, String, usize) {
    let first = &settings[0];
    let key_path = &first.key;
    let is_element = key_path.last().is_some_and(|k| k.parse::<usize>().is_ok());
    if !is_element {
        let (name, table) = key_path.split_last().map_or((String::new(), Vec::new()), |(n, t)| (n.clone(), t.to_vec()));
        let shown = if hidden(key_path) { "\"…\"".to_string() } else { toml_value(&first.value) };
        let note = if hidden(key_path) { ", hidden; --json shows it" } else { "" };
        return (table, format!("{} = {shown}  # {}{note}", key(&name), origin(first)), 1);
    }
    let list = &key_path[..key_path.len() - 1];
    let Some((list_name, table)) = list.split_last() else {
        return (Vec::new(), String::new(), 1);
    };
    if let Some(rule) = first.value.as_object() {
        // A permission rule: `bash."git *" = "allow"`, or in an agent `permission.bash."*" = ...`.
        let text = |field: &str| rule.get(field).and_then(Value::as_str).unwrap_or_default().to_string();
        let prefix = if table.is_empty() { String::new() } else { format!("{}.", key(list_name)) };
        let (table, prefix) =
            if table.is_empty() { (vec![list_name.clone()], prefix) } else { (table.to_vec(), prefix) };
        let line = format!(
            "{prefix}{}.{} = {}  # {}",
            key(&text("permission")),
            key(&text("pattern")),
            toml_value(&Value::String(text("action"))),
            origin(first)
        );
        return (table, line, 1);
    }
    // A list of values several files add to (`[env] pass`): one line, each element's origin.
    let members: Vec<&Setting> =
        settings.iter().take_while(|s| s.key.len() == key_path.len() && s.key[..list.len()] == *list).collect();
    let values: Vec<String> = members.iter().map(|s| toml_value(&s.value)).collect();
    let mut origins: Vec<(String, Vec<String>)> = Vec::new();
    for (member, value) in members.iter().zip(&values) {
        let from = origin(member);
        match origins.last_mut() {
            Some((last, shown)) if *last == from => shown.push(value.clone()),
            _ => origins.push((from, vec![value.clone()])),
        }
    }
    let notes: Vec<String> = origins.iter().map(|(from, shown)| format!("{} {from}", shown.join(", "))).collect();
    let line = format!("{} = [{}]  # {}", key(list_name), values.join(", "), notes.join("; "));
    (table.to_vec(), line, members.len())
}

/// `from FILE` or `default`.
fn origin(setting: &Setting) -> String {
    match &setting.from {
        Some(path) => format!("from {}", path.display()),
        None => "default".to_string(),
    }
}

/// Values that often hold secrets, left out of the human form: an MCP server's `env` and
/// `headers`.
fn hidden(key: &[String]) -> bool {
    matches!(key, [mcp, _, table, _] if mcp == "mcp" && (table == "env" || table == "headers"))
}

/// A TOML key: bare when it can be, else quoted.
fn key(name: &str) -> String {
    let bare = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { name.to_string() } else { toml::Value::String(name.to_string()).to_string() }
}

/// A JSON value written as a TOML value.
fn toml_value(value: &Value) -> String {
    toml::Value::try_from(value).map_or_else(|_| value.to_string(), |v| v.to_string())
}
