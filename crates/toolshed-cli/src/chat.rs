//! `toolshed chat`: an interactive session. On a terminal it is the terminal UI
//! (`toolshed-tui`); with `--plain`, or when standard input or output is not a terminal, it is
//! line-based: each line is a prompt; `/plan` and `/build` switch agents; permission requests
//! are answered on the next line; Ctrl-C interrupts the running turn, not the program.

use std::io::{BufRead, IsTerminal};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use clap::Args;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolshed_agent::AgentError;
use toolshed_core::permission::{ApprovalRequest, Approver, Reply};
use toolshed_core::tool::BoxFuture;

use crate::CliError;

use crate::agent::{Printer, runtime};
use crate::workspace::Workspace;

#[derive(Args)]
pub struct ChatArgs {
    /// The model (`provider/model`); default: the agent's, else the config's `model`.
    #[arg(short, long)]
    model: Option<String>,
    /// Start as this agent (default: the config's, else `build`).
    #[arg(short, long)]
    agent: Option<String>,
    /// Continue this stored session.
    #[arg(short, long, value_name = "ID", conflicts_with = "continue_")]
    session: Option<String>,
    /// Continue this worktree's most recent session.
    #[arg(long = "continue")]
    continue_: bool,
    /// Line mode: no terminal UI even on a terminal (it is line mode anyway when standard input
    /// or output is not a terminal).
    #[arg(long)]
    plain: bool,
}

type Lines = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>>;

/// Answers permission requests with the next line the user types.
struct LineApprover {
    lines: Lines,
    printer: Arc<Printer>,
}

impl Approver for LineApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let mut lines = self.lines.lock().await;
            let _question = crate::approver::Question::open(&self.printer);
            // The commands and paths asked about come from the model: shown, never obeyed.
            eprint!("{}", toolshed_core::terminal::visible(&crate::approver::prompt_text(request)));
            let answer = lines.recv().await;
            // Typed at a terminal, the answer ended the line; read from a pipe, it is echoed so
            // that what follows starts on a line of its own.
            if !std::io::stdin().is_terminal() {
                eprintln!("{}", answer.as_deref().map(str::trim_end).unwrap_or("(end of input: rejected)"));
            }
            match answer {
                Some(line) => crate::approver::parse_answer(&line),
                // Nobody said no: the input ended.
                None => Reply::Reject(Some(
                    "No one answered: the chat's input ended before the question was answered. Do not retry it; say in your answer what needs approval.".into(),
                )),
            }
        })
    }
}

const HELP: &str = "Type a prompt, or: /plan (plan mode: read and plan only), /build (build mode), /agent NAME, /diff (what this session changed), /undo (put back the files of its last step that changed files; again to redo), /session (show the session id), /compact (summarise the older history now to free context), /exit. Ctrl-C interrupts a running turn; Ctrl-D quits.";

/// `/diff` and `/undo`: the same as `session diff` and `session revert` on this session; a
/// question about files edited by hand is answered on the next line.
async fn undo_command(rt: &toolshed_agent::Runtime, id: &str, revert: bool, lines: &Lines) {
    let Some(undo) = rt.undo() else { return };
    if let Err(why) = undo.shadow() {
        crate::err(format_args!("toolshed: {why}"));
        return;
    }
    let store = rt.store();
    if !revert {
        match toolshed_agent::undo::session_diff(store, undo, id, None, false) {
            Ok(diff) => crate::session::print_diff(id, None, &diff),
            Err(e) => crate::err(format_args!("toolshed: {e}")),
        }
        return;
    }
    let plan = match toolshed_agent::undo::plan_revert(store, undo, id, None).await {
        Ok(toolshed_agent::undo::Planned::Revert(plan)) => plan,
        Ok(toolshed_agent::undo::Planned::Nothing { kept }) => {
            crate::err(format_args!("{}", toolshed_agent::undo::nothing_to_revert(&kept)));
            return;
        }
        Err(e) => {
            crate::err(format_args!("toolshed: {e}"));
            return;
        }
    };
    let mut guard = lines.lock().await;
    let force = crate::session::confirm_overwrite(&plan, true, false, &mut || {
        tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(guard.recv()))
    });
    drop(guard);
    let force = match force {
        Ok(force) => force,
        Err(e) => {
            crate::err(format_args!("toolshed: {}", e.message));
            return;
        }
    };
    match toolshed_agent::undo::apply_revert(store, undo, plan, force).await {
        Ok(outcome) => crate::session::print_revert(&outcome, false),
        Err(e) => crate::err(format_args!("toolshed: {e}")),
    }
}

/// The terminal UI over the same runtime, session lock and sessions as line mode.
fn tui(
    ws: &Workspace,
    args: &ChatArgs,
    store: Arc<toolshed_agent::Store>,
    agent: &str,
    model: &str,
) -> Result<ExitCode, CliError> {
    let (sink, approver, messages) = toolshed_tui::app::channel();
    let (rt, _mcp) = runtime(ws, store, approver, sink)?;
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    let history_file = history_path(&rt.settings().root);
    let history: Vec<String> =
        std::fs::read_to_string(&history_file).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default();
    let outcome = tokio_rt.block_on(async {
        let (session, lock) = crate::agent::open_session(&rt, args.session.as_deref(), agent, model)?;
        // `/new` and `/sessions` go on in another session: its lock is taken before this one's
        // is let go.
        let mut held = Some(lock);
        let opener = rt.clone();
        let open: toolshed_tui::app::OpenSession = Box::new(move |id, agent, model| {
            let (session, lock) =
                crate::agent::open_session(&opener, id, agent, model).map_err(|e| e.message().to_string())?;
            drop(held.replace(lock));
            Ok(session)
        });
        let config = ws.config.clone();
        let check_model: toolshed_tui::app::CheckModel =
            Box::new(move |model| crate::agent::check_model_in(&config, model).map_err(|e| e.message().to_string()));
        let status = toolshed_tui::views::Status { worktree: home_relative(&rt.settings().root), ..Default::default() };
        // A resumed session shows what it said so far.
        let transcript = match &args.session {
            Some(id) => {
                toolshed_tui::cell::Transcript::from_stored(&rt.store().messages(id).map_err(CliError::failure)?)
            }
            None => toolshed_tui::cell::Transcript::default(),
        };
        let mut transcript = transcript;
        for note in ws.trust_notices() {
            transcript.push_notice(&note, false);
        }
        let setup = toolshed_tui::app::Setup {
            runtime: rt.clone(),
            session: session.clone(),
            messages,
            status,
            history,
            transcript,
            open,
            check_model,
        };
        let ended = toolshed_tui::app::run(setup).await.map_err(|e| {
            CliError::failure(format!("the terminal UI failed: {e}; `toolshed chat --plain` works without it"))
        })?;
        let history = &ended.history;
        let kept = &history[history.len().saturating_sub(HISTORY_KEPT)..];
        if let Some(dir) = history_file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(&history_file, serde_json::to_string(kept).unwrap_or_default());
        // The application's last line named the session it ended in. Ended by a signal, it
        // says so as a shell would: 128 and the signal's number.
        Ok(match ended.signal {
            Some(signal) => ExitCode::from(u8::try_from(128 + signal).unwrap_or(1)),
            None => ExitCode::SUCCESS,
        })
    });
    tokio_rt.block_on(toolshed_runtime::shutdown_language_servers(&ws.config));
    outcome
}

/// Prompts kept per worktree for the composer's Up.
const HISTORY_KEPT: usize = 500;

/// Where the composer's history of the worktree `root` is kept: named by the same stable hash
/// of the worktree's path as its undo snapshots.
fn history_path(root: &std::path::Path) -> std::path::PathBuf {
    let data = toolshed_core::paths::data_dir();
    let shadow = toolshed_agent::snapshot::shadow_dir(&data, root);
    let name = shadow.file_name().map_or_else(|| "worktree".into(), |n| n.to_string_lossy().into_owned());
    data.join("history").join(format!("{name}.json"))
}

/// `root` with the home directory written `~`.
fn home_relative(root: &std::path::Path) -> String {
    match toolshed_core::paths::home_dir()
        .and_then(|home| root.strip_prefix(home).ok().map(std::path::Path::to_path_buf))
    {
        Some(rest) => format!("~/{}", rest.display()),
        None => root.display().to_string(),
    }
}

pub fn run(ws: &Workspace, mut args: ChatArgs) -> Result<ExitCode, CliError> {
    if args.continue_ {
        args.session = Some(crate::agent::latest_session(ws)?);
    } else if let Some(given) = &args.session {
        args.session = Some(crate::agent::resolve_session(given)?);
    }
    let (store, agent, model) =
        crate::agent::session_target(ws, args.session.as_deref(), args.agent.as_deref(), args.model.as_deref())?;
    if !args.plain && std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        return tui(ws, &args, store, &agent, &model);
    }
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let lines: Lines = Arc::new(tokio::sync::Mutex::new(rx));
    let printer = Printer::new(false);
    let interactive = std::io::stdin().is_terminal();
    let approver = Arc::new(LineApprover { lines: lines.clone(), printer: printer.clone() });
    let (rt, _mcp) = runtime(ws, store, approver, printer.sink())?;
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    let outcome = tokio_rt.block_on(async {
        let (session, _lock) = crate::agent::open_session(&rt, args.session.as_deref(), &agent, &model)?;
        printer.start_spinner();
        eprintln!("toolshed chat: session {} ({}, {model}). {HELP}", session.id, session.agent());
        let current: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
        let on_interrupt = current.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                match on_interrupt.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    Some(turn) => {
                        turn.cancel();
                        eprintln!("\n[interrupting the turn]");
                    }
                    None => eprintln!("\n(Ctrl-C interrupts a running turn; type /exit or press Ctrl-D to quit)"),
                }
            }
        });
        // SIGTERM, or standard output closed by its reader, ends the chat: the running turn is
        // interrupted (and recorded so), then the loop stops.
        let quit = CancellationToken::new();
        let (on_quit, turn_of) = (quit.clone(), current.clone());
        tokio::spawn(async move {
            crate::terminated_or_unread().await;
            on_quit.cancel();
            if let Some(turn) = turn_of.lock().unwrap_or_else(PoisonError::into_inner).take() {
                turn.cancel();
            }
        });
        loop {
            if quit.is_cancelled() {
                break;
            }
            if interactive {
                eprint!("{}> ", session.agent());
            }
            let line = tokio::select! {
                line = async { lines.lock().await.recv().await } => line,
                () = quit.cancelled() => break,
            };
            let Some(line) = line else { break };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let switch_to = match line {
                "/exit" | "/quit" => break,
                "/help" => {
                    eprintln!("{HELP}");
                    continue;
                }
                "/session" => {
                    eprintln!("session {}", session.id);
                    continue;
                }
                "/compact" => {
                    let cancel = CancellationToken::new();
                    *current.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
                    // The printer reports the compaction; only a failure needs saying here.
                    let outcome = rt.compact(&session, toolshed_agent::Trigger::Manual, &cancel).await;
                    current.lock().unwrap_or_else(PoisonError::into_inner).take();
                    if let Err(e) = outcome {
                        eprintln!("toolshed: {e}");
                    }
                    continue;
                }
                "/diff" | "/undo" => {
                    undo_command(&rt, &session.id, line == "/undo", &lines).await;
                    continue;
                }
                "/plan" => Some("plan"),
                "/build" => Some("build"),
                other => other.strip_prefix("/agent ").map(str::trim),
            };
            if let Some(to) = switch_to {
                // A switch is reported by the printer (`[agent: build → plan]`); staying is said here.
                let before = session.agent();
                match rt.switch_agent(&session, to) {
                    Ok(()) if before == session.agent() => eprintln!("[already {before}]"),
                    Ok(()) => {}
                    Err(e) => eprintln!("toolshed: {e}"),
                }
                continue;
            }
            if line.starts_with('/') {
                eprintln!("unknown command {line}. {HELP}");
                continue;
            }
            let cancel = CancellationToken::new();
            *current.lock().unwrap_or_else(PoisonError::into_inner) = Some(cancel.clone());
            let outcome = rt.prompt(&session, line, &cancel).await;
            printer.end_text();
            current.lock().unwrap_or_else(PoisonError::into_inner).take();
            match outcome {
                Ok(_) => {}
                Err(AgentError::Interrupted) => eprintln!("[interrupted; the session is intact]"),
                Err(e) => eprintln!("toolshed: {e}"),
            }
        }
        eprintln!("session {}", session.id);
        Ok(ExitCode::SUCCESS)
    });
    // Language servers started for post-edit diagnostics end with the command.
    tokio_rt.block_on(toolshed_runtime::shutdown_language_servers(&ws.config));
    outcome
}
