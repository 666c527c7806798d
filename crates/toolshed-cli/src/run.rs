//! `toolshed run PROMPT`: one prompt, answered by the agent loop; the answer streams to
//! stdout, tool calls show on stderr, and the session is stored for `--session` and
//! `toolshed session`.

use std::process::ExitCode;

use clap::Args;
use tokio_util::sync::CancellationToken;
use toolshed_agent::AgentError;

use crate::CliError;
use crate::agent::{Printer, runtime};
use crate::workspace::Workspace;

#[derive(Args)]
pub struct RunArgs {
    /// What to ask.
    prompt: String,
    /// The model (`provider/model`); default: the agent's, else the config's `model`.
    #[arg(long)]
    model: Option<String>,
    /// Run as this agent (default: the config's, else `build`).
    #[arg(long)]
    agent: Option<String>,
    /// Continue this stored session.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Approve every permission request that asks (never one that denies).
    #[arg(long)]
    yes: bool,
    /// Print events as JSON Lines on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(ws: &Workspace, args: RunArgs) -> Result<ExitCode, CliError> {
    if args.prompt.trim().is_empty() {
        return Err(CliError::usage("the prompt is empty: say what to do, e.g. toolshed run \"fix the failing test\""));
    }
    let (store, agent, model) =
        crate::agent::session_target(ws, args.session.as_deref(), args.agent.as_deref(), args.model.as_deref())?;
    let printer = Printer::new(args.json);
    let approver = crate::approver::for_command_printing(args.yes, Some(printer.clone()));
    let (rt, _mcp) = runtime(ws, store, approver, printer.sink())?;
    let runtime_handle = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime_handle.block_on(async {
        let (session, _lock) = crate::agent::open_session(&rt, args.session.as_deref(), &agent, &model)?;
        printer.start_spinner();
        let cancel = CancellationToken::new();
        let on_interrupt = cancel.clone();
        tokio::spawn(async move {
            crate::stop_requested().await;
            on_interrupt.cancel();
        });
        let outcome = rt.prompt(&session, &args.prompt, &cancel).await;
        if !args.json {
            eprintln!("session {}", session.id);
        }
        match outcome {
            Ok(_) => Ok(ExitCode::SUCCESS),
            Err(AgentError::Interrupted) => {
                Err(CliError::failure(format!("interrupted; continue with --session {}", session.id)))
            }
            Err(e) => Err(CliError::failure(e)),
        }
    });
    // Language servers started for post-edit diagnostics end with the command.
    runtime_handle.block_on(toolshed_tools::lsp::shared(&ws.config).shutdown());
    outcome
}
