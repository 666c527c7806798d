//! `toolshed init`: a commented `toolshed.toml` for the worktree, and the config schema beside
//! it (`.toolshed/config.schema.json`) so editors validate and complete it offline.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use toolshed_core::config::PROJECT_FILE;

use crate::CliError;

#[derive(Args)]
pub struct InitArgs {
    /// Replace an existing toolshed.toml (and the schema beside it).
    #[arg(long)]
    force: bool,
}

pub const EXAMPLES: &str = "Examples:
  toolshed init
  toolshed init --root ../other-checkout
  toolshed init --force            # replace an existing toolshed.toml";

/// Where the schema is written, relative to the worktree, and what the `#:schema` line names
/// (Taplo resolves a relative path against the file it is in).
pub const SCHEMA_FILE: &str = ".toolshed/config.schema.json";

/// The file `init` writes, with its examples active: each line that is neither empty nor a
/// comment is written commented out. A unit test loads and validates this active form, so every
/// example a person uncomments works.
const TEMPLATE: &str = r##"#:schema ./.toolshed/config.schema.json
# toolshed's settings for this worktree. ~/.config/toolshed/config.toml is read first; this
# file wins. Every setting below is an example: remove the "# " in front to use it.
#   toolshed config show     what is in effect, and the file each value came from
#   toolshed doctor          whether the model, MCP servers and tools answer
# Your editor validates and completes this file with the schema named on the first line
# (Taplo, Even Better TOML); `toolshed config schema` prints it again after an upgrade.

# The model `run` and `chat` use: openai/MODEL, anthropic/MODEL, or NAME/MODEL for a
# [provider.NAME] below. The built-in providers read OPENAI_API_KEY / ANTHROPIC_API_KEY.
model = "anthropic/claude-sonnet-4-5"

# A local or other OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio, OpenRouter);
# use it as model = "local/MODEL". Set api_key_env to the variable holding a key if it needs one.
[provider.local]
kind = "openai-chat"
base_url = "http://127.0.0.1:8080/v1"

# Permission rules: "allow", "ask" or "deny" per permission, the last matching rule wins.
[permission]
edit = "ask"
bash = { "*" = "ask", "git status *" = "allow", "git diff *" = "allow", "rm *" = "deny" }

# What shell commands may touch: "workspace-write", "read-only" or "full-access".
[sandbox]
mode = "workspace-write"

# An MCP server whose tools the model may call ("deferred": found through tool_search).
[mcp.github]
command = "github-mcp-server"
args = ["stdio"]
exposure = "deferred"

# Web search through a SearXNG instance (or backend = "brave" / "exa" with an API key).
[websearch]
backend = "searxng"
url = "http://localhost:8080"

# Variables child processes get although their names look secret.
[env]
pass = ["GITHUB_TOKEN"]
"##;

/// The file as written: every example commented out.
fn commented() -> String {
    TEMPLATE
        .lines()
        .map(|line| if line.is_empty() || line.starts_with('#') { line.to_string() } else { format!("# {line}") })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

pub fn run(root: Option<&Path>, args: &InitArgs) -> Result<ExitCode, CliError> {
    let (root, _) = toolshed_runtime::locate(root).map_err(CliError::from)?;
    let config = root.join(PROJECT_FILE);
    let schema = root.join(SCHEMA_FILE);
    if !args.force && config.symlink_metadata().is_ok() {
        return Err(CliError::usage(format!(
            "{} already exists; nothing was written. Keep it, or run `toolshed init --force` to replace it (`toolshed config schema > {SCHEMA_FILE}` refreshes only the schema)",
            config.display()
        )));
    }
    let schema_text = crate::config::schema_text()? + "\n";
    if let Some(dir) = schema.parent() {
        std::fs::create_dir_all(dir).map_err(|e| cannot_write(dir, &e))?;
    }
    // Both files are written beside their place first, then moved in: a failure leaves neither
    // half-written.
    let staged = [stage(&schema, &schema_text)?, stage(&config, &commented())?];
    for (temp, target) in &staged {
        std::fs::rename(temp, target).map_err(|e| {
            for (temp, _) in &staged {
                let _ = std::fs::remove_file(temp);
            }
            cannot_write(target, &e)
        })?;
    }
    // The person's own command wrote it: it applies without a `toolshed trust`.
    if let Err(e) =
        toolshed_core::trust::accept_config(&toolshed_core::paths::data_dir(), &root, commented().as_bytes())
    {
        crate::err(format_args!("toolshed: {e}; run `toolshed trust` before the file applies"));
    }
    crate::out(format_args!(
        "Wrote {} (every setting commented out) and {}.\nNext: uncomment what you need, run `toolshed trust` to accept your edits (a worktree's toolshed.toml applies only as a person accepted it: a model could have written it), then `toolshed config show` and `toolshed doctor`.",
        config.display(),
        schema.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// Writes `text` to a temporary file beside `target`; returns (temporary, target).
fn stage(target: &Path, text: &str) -> Result<(PathBuf, PathBuf), CliError> {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = target.with_file_name(format!(".{name}.toolshed-init-{}.tmp", std::process::id()));
    std::fs::write(&temp, text).map_err(|e| cannot_write(&temp, &e))?;
    Ok((temp, target.to_path_buf()))
}

fn cannot_write(path: &Path, e: &std::io::Error) -> CliError {
    CliError::failure(format!("cannot write {}: {e}; nothing was changed", path.display()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use toolshed_core::config::Config;

    fn validates(text: &str) {
        let mut config = Config::default();
        config.merge_str(Path::new("toolshed.toml"), text).unwrap();
        let doc = serde_json::to_value(toml::from_str::<toml::Table>(text).unwrap()).unwrap();
        let validator = jsonschema::validator_for(&toolshed_core::config::schema()).unwrap();
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn every_example_in_the_template_loads_and_validates_once_uncommented() {
        validates(TEMPLATE);
        let written = commented();
        validates(&written);
        assert!(written.starts_with("#:schema ./.toolshed/config.schema.json\n"));
        assert!(written.contains("\n# model = \"anthropic/claude-sonnet-4-5\"\n"), "{written}");
        assert!(written.lines().all(|l| l.is_empty() || l.starts_with('#')), "{written}");
    }
}
