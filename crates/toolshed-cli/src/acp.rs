//! `toolshed acp`: the Agent Client Protocol agent an editor starts (see `toolshed-acp`).

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use crate::CliError;

/// Arguments of `toolshed acp`.
#[derive(Args, Debug)]
pub struct AcpArgs {
    /// The agent sessions start as (default: the config's, else build).
    #[arg(short = 'a', long)]
    agent: Option<String>,
    /// The model (PROVIDER/MODEL; default: the agent's, else the config's `model`).
    #[arg(short = 'm', long)]
    model: Option<String>,
}

/// What `toolshed acp --help` ends with.
pub const EXAMPLES: &str = "Examples:\n  toolshed acp                            # started by an editor; speaks ACP on stdin/stdout\n  toolshed acp --model openai/gpt-5.1\n\nZed (settings.json):\n  \"agent_servers\": { \"toolshed\": { \"type\": \"custom\", \"command\": \"toolshed\", \"args\": [\"acp\"] } }";

/// Serves ACP on standard input and output until the editor closes them.
pub fn run(
    args: AcpArgs,
    config_file: Option<&Path>,
    overrides: Vec<toolshed_core::config::Override>,
) -> Result<ExitCode, CliError> {
    if std::io::stdin().is_terminal() {
        return Err(CliError::usage(
            "toolshed acp speaks the Agent Client Protocol on standard input and output: an editor starts it (for Zed, add it under \"agent_servers\" in settings.json; the README's \"In your editor\" section shows how). To talk to the agent yourself, run `toolshed chat`.",
        ));
    }
    let store = crate::agent::open_store()?;
    let options = toolshed_acp::Options {
        config_file: config_file.map(Path::to_path_buf),
        overrides,
        agent: args.agent,
        model: args.model,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(toolshed_acp::serve(options, store)).map_err(CliError::failure)?;
    Ok(ExitCode::SUCCESS)
}
