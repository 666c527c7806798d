//! `toolshed run PROMPT`: one prompt, answered by the agent loop; the answer streams to
//! stdout, tool calls show on stderr, and the session is stored for `--session` and
//! `toolshed session`.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use tokio_util::sync::CancellationToken;
use toolshed_agent::AgentError;

use crate::CliError;
use crate::agent::{Printer, runtime};
use crate::workspace::Workspace;

#[derive(Args)]
pub struct RunArgs {
    /// What to ask; `-` reads it from standard input. Without it, piped standard input is the
    /// prompt; with it, piped standard input is added after it as context.
    prompt: Option<String>,
    /// The model (`provider/model`); default: the agent's, else the config's `model`.
    #[arg(short, long)]
    model: Option<String>,
    /// Run as this agent (default: the config's, else `build`).
    #[arg(short, long)]
    agent: Option<String>,
    /// Continue this stored session.
    #[arg(short, long, value_name = "ID", conflicts_with = "continue_")]
    session: Option<String>,
    /// Continue this worktree's most recent session.
    #[arg(long = "continue")]
    continue_: bool,
    /// Approve every permission request that asks (never one that denies).
    #[arg(short, long)]
    yes: bool,
    /// Print events as JSON Lines on stdout.
    #[arg(long)]
    json: bool,
    /// When the run finishes, write the last assistant message to FILE (emptied when the model
    /// is first asked, so a failed run never leaves an earlier answer there).
    #[arg(short = 'o', long, value_name = "FILE")]
    output_last_message: Option<PathBuf>,
}

pub const EXAMPLES: &str = "Examples:
  toolshed run \"why does the parser test fail?\" -m anthropic/claude-sonnet-4-5
  git diff | toolshed run \"review this change\"          # piped input is added as context
  toolshed run - < task.md                                # the prompt from a file
  toolshed run --continue \"now add a test for it\" -y     # the worktree's last session
  toolshed run \"summarise TODO.md\" -o summary.txt --json > events.jsonl
  toolshed run \"fix it\" -c model=local/qwen3-coder -c session.max_steps=20";

/// The prompt: the argument, standard input for `-` or when there is no argument and input is
/// piped, or the argument followed by piped input as a `<stdin>` block.
fn prompt(arg: Option<String>) -> Result<String, CliError> {
    let read_stdin = || {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| CliError::usage(format!("cannot read the prompt from standard input: {e}")))?;
        Ok::<_, CliError>(text)
    };
    let piped = !std::io::stdin().is_terminal();
    let prompt = match arg {
        Some(dash) if dash == "-" => read_stdin()?,
        Some(prompt) if piped => match read_stdin()? {
            context if context.trim().is_empty() => prompt,
            context => format!("{prompt}\n\n<stdin>\n{}\n</stdin>", context.trim_end()),
        },
        Some(prompt) => prompt,
        None if piped => read_stdin()?,
        None => {
            return Err(CliError::usage(
                "say what to do: toolshed run \"fix the failing test\", or pipe it in: echo \"fix the failing test\" | toolshed run",
            ));
        }
    };
    if prompt.trim().is_empty() {
        return Err(CliError::usage("the prompt is empty: say what to do, e.g. toolshed run \"fix the failing test\""));
    }
    Ok(prompt)
}

pub fn run(ws: &Workspace, args: RunArgs) -> Result<ExitCode, CliError> {
    if let Some(file) = &args.output_last_message {
        // Checked before the model is asked: a run is not paid for to lose its answer.
        let dir = file.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if file.is_dir() {
            return Err(CliError::usage(format!(
                "--output-last-message {}: that is a directory; name a file (in it, or elsewhere)",
                file.display()
            )));
        }
        if !dir.is_dir() {
            return Err(CliError::usage(format!(
                "--output-last-message {}: {} is not a directory to write into; name a file in an existing directory",
                file.display(),
                dir.display()
            )));
        }
    }
    let prompt = prompt(args.prompt)?;
    let resume = match (args.session, args.continue_) {
        (Some(id), _) => Some(crate::agent::resolve_session(&id)?),
        (None, true) => Some(crate::agent::latest_session(ws)?),
        (None, false) => None,
    };
    let (store, agent, model) =
        crate::agent::session_target(ws, resume.as_deref(), args.agent.as_deref(), args.model.as_deref())?;
    let printer = Printer::new(args.json);
    let approver = crate::approver::for_command_printing(args.yes, Some(printer.clone()));
    let (rt, _mcp) = runtime(ws, store, approver, printer.sink())?;
    let runtime_handle = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime_handle.block_on(async {
        let (session, _lock) = crate::agent::open_session(&rt, resume.as_deref(), &agent, &model)?;
        // Emptied as the model is first asked (not on a usage error): a run that fails leaves
        // no earlier answer for a script to take as its.
        if let Some(file) = &args.output_last_message {
            std::fs::write(file, "").map_err(|e| {
                CliError::usage(format!("--output-last-message {}: cannot write it: {e}", file.display()))
            })?;
        }
        printer.start_spinner();
        let cancel = CancellationToken::new();
        let on_interrupt = cancel.clone();
        tokio::spawn(async move {
            crate::stop_requested().await;
            on_interrupt.cancel();
        });
        let outcome = rt.prompt(&session, &prompt, &cancel).await;
        printer.end_text();
        if !args.json {
            eprintln!("session {}", session.id);
        }
        match outcome {
            Ok(last) => match &args.output_last_message {
                Some(file) => std::fs::write(file, last).map(|()| ExitCode::SUCCESS).map_err(|e| {
                    CliError::failure(format!(
                        "cannot write the last message to {}: {e}; `toolshed session show {}` shows it",
                        file.display(),
                        session.id
                    ))
                }),
                None => Ok(ExitCode::SUCCESS),
            },
            Err(AgentError::Interrupted) => {
                Err(CliError::failure(format!("interrupted; continue with --session {}", session.id)))
            }
            Err(e) => Err(CliError::failure(e)),
        }
    });
    // Language servers started for post-edit diagnostics end with the command.
    runtime_handle.block_on(toolshed_runtime::shutdown_language_servers(&ws.config));
    outcome
}
