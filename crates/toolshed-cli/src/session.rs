//! `toolshed session list | show | export | compact | diff | revert`: the stored sessions,
//! compacting them, and undoing
//! what they changed (the decisions are `toolshed_agent::undo`'s; this prints).

use std::io::BufRead;
use std::process::ExitCode;

use clap::Subcommand;
use tokio_util::sync::CancellationToken;
use toolshed_agent::Store;
use toolshed_agent::Trigger;
use toolshed_agent::store::{Compaction, StepKind, StoreError, StoredPart, StoredStep, now_ms};
use toolshed_agent::undo::{self, RevertOutcome, RevertPlan, SessionDiff, Undo, UndoError};
use toolshed_llm::{Role, Usage};

use crate::CliError;
use crate::agent::thousands;
use crate::workspace::Workspace;

#[derive(Subcommand)]
pub enum SessionCommand {
    /// List this worktree's stored sessions (every worktree's with --all), most recent first.
    #[command(after_help = "Examples:
  toolshed session list
  toolshed session list --all            # every worktree's, with a WORKTREE column
  toolshed session list --json | jq -r '.[0].id'")]
    List {
        /// List the sessions of every worktree.
        #[arg(long)]
        all: bool,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Delete a session with its sub-agent sessions, messages, compactions, steps and the undo
    /// snapshots only it kept. A session a running toolshed is using is refused.
    #[command(after_help = "Examples:
  toolshed session delete ses_1a2354de654fac79410
  toolshed session list --json | jq -r '.[1:][].id' | xargs -n1 toolshed session delete   # keep the latest")]
    Delete {
        /// The session id.
        id: String,
    },
    /// Show a session's conversation.
    #[command(after_help = "Examples:\n  toolshed session show ses_1a2354de654fac79410 | less")]
    Show {
        /// The session id.
        id: String,
    },
    /// Print a session as JSON: the session, its todos, messages with parts, compactions, and
    /// tasks.
    #[command(after_help = "Examples:\n  toolshed session export ses_1a2354de654fac79410 > session.json")]
    Export {
        /// The session id.
        id: String,
    },
    /// Summarise a session's older history now, so its next request is smaller (the messages
    /// stay stored; `session show` lists the compaction). Asks the session's model.
    #[command(after_help = "Examples:
  toolshed session compact ses_1a2354de654fac79410
  toolshed session compact ses_1a2354de654fac79410 -m openai/gpt-5-mini   # a cheaper model summarises")]
    Compact {
        /// The session id.
        id: String,
        /// The model to ask (default: the session's).
        #[arg(short, long)]
        model: Option<String>,
    },
    /// Show what a session changed in the worktree, as a unified diff.
    #[command(after_help = "Examples:
  toolshed session diff ses_1a2354de654fac79410
  toolshed session diff ses_1a2354de654fac79410 --step 3 --stat")]
    Diff {
        /// The session id.
        id: String,
        /// Only this step's change (numbers as `session show` lists them).
        #[arg(long, value_name = "N")]
        step: Option<u32>,
        /// A diffstat instead of the diff.
        #[arg(long)]
        stat: bool,
    },
    /// Put the files a session changed back as they were before a step (default: before its
    /// last step that changed files). Files changed by hand since are not overwritten unless
    /// --force. Reverting again undoes the revert.
    #[command(after_help = "Examples:
  toolshed session revert ses_1a2354de654fac79410            # undo its last step that changed files
  toolshed session revert ses_1a2354de654fac79410 --step 2   # back to before step 2
  toolshed session revert ses_1a2354de654fac79410 --json")]
    Revert {
        /// The session id.
        id: String,
        /// Revert to before this step.
        #[arg(long, value_name = "N")]
        step: Option<u32>,
        /// Overwrite files changed since the session last touched them.
        #[arg(long)]
        force: bool,
        /// Print a JSON object; never asks (files changed by hand refuse the revert).
        #[arg(long)]
        json: bool,
    },
}

impl SessionCommand {
    /// What the command loads: compacting measures requests with the session's tools, reading
    /// stored sessions needs none.
    pub fn scope(&self) -> toolshed_tools::custom::Scope {
        match self {
            SessionCommand::Compact { .. } => toolshed_tools::custom::Scope::All,
            _ => toolshed_tools::custom::Scope::Tool(String::new()),
        }
    }
}

pub fn run(ws: &Workspace, mut cmd: SessionCommand) -> Result<ExitCode, CliError> {
    let path = Store::default_path(&toolshed_core::paths::data_dir());
    let store = if path.exists() { Some(Store::open(&path).map_err(CliError::failure)?) } else { None };
    // An id may be given by its start, as a person copies it from `session list`.
    if let SessionCommand::Delete { id }
    | SessionCommand::Show { id }
    | SessionCommand::Compact { id, .. }
    | SessionCommand::Export { id }
    | SessionCommand::Diff { id, .. }
    | SessionCommand::Revert { id, .. } = &mut cmd
    {
        *id = crate::agent::resolve_session(id)?;
    }
    match cmd {
        SessionCommand::List { all, json } => {
            let mut sessions = match &store {
                Some(s) => s.list_sessions().map_err(CliError::failure)?,
                None => Vec::new(),
            };
            let root = ws.root.display().to_string();
            if !all {
                sessions.retain(|s| s.root == root);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&sessions).map_err(CliError::failure)?);
            } else if sessions.is_empty() && all {
                eprintln!("no sessions yet (toolshed run and toolshed chat store theirs in {})", path.display());
            } else if sessions.is_empty() {
                eprintln!(
                    "no sessions in {root} yet (toolshed run and toolshed chat store theirs); `toolshed session list --all` lists every worktree's"
                );
            } else {
                list(&sessions, all);
            }
        }
        SessionCommand::Delete { id } => {
            let store = store.ok_or_else(|| no_session(&id))?;
            return delete(&store, &id);
        }
        SessionCommand::Show { id } => {
            let store = store.ok_or_else(|| no_session(&id))?;
            let info = store.session(&id).map_err(CliError::usage)?;
            crate::out(format_args!(
                "session {} ({}, {}) {}",
                info.id,
                info.agent,
                info.model.as_deref().unwrap_or("-"),
                info.title
            ));
            if let Some(parent) = &info.parent_id {
                crate::out(format_args!("sub-agent of {parent}"));
            }
            let compactions = store.compactions(&id).map_err(CliError::failure)?;
            let steps = store.steps(&id).map_err(CliError::failure)?;
            let mut unlinked = steps.iter().filter(|s| s.message_id.is_none()).peekable();
            for m in store.messages(&id).map_err(CliError::failure)? {
                for c in compactions.iter().filter(|c| next_message_of(c, m.seq)) {
                    show_compaction(c);
                }
                while let Some(step) = unlinked.next_if(|s| s.created_at <= m.created_at) {
                    crate::out(format_args!("\n{}", step_line(step)));
                }
                if let Some(step) = steps.iter().find(|s| s.message_id.as_deref() == Some(m.id.as_str())) {
                    crate::out(format_args!("\n{}", step_line(step)));
                }
                let who = match m.role {
                    Role::User => "user".to_string(),
                    Role::Assistant => format!("assistant ({})", m.agent.as_deref().unwrap_or("-")),
                };
                crate::out(format_args!("\n{who}:"));
                for p in &m.parts {
                    match p {
                        StoredPart::Text { text } => crate::out(format_args!("{}", text.trim_end())),
                        StoredPart::Image { mime_type, data_base64 } => crate::out(format_args!(
                            "[image {mime_type}, {} bytes]",
                            (data_base64.len() / 4 * 3)
                                .saturating_sub(data_base64.chars().rev().take_while(|c| *c == '=').count())
                        )),
                        StoredPart::Reasoning { summary, .. } => match summary.lines().next() {
                            Some(first) => crate::out(format_args!("[reasoning] {first}")),
                            None => crate::out(format_args!("[reasoning]")),
                        },
                        StoredPart::Tool { tool, input, state, output, images, .. } => {
                            let state = serde_json::to_value(state).ok().and_then(|v| v.as_str().map(str::to_string));
                            crate::out(format_args!("[{tool} {}] {}", state.unwrap_or_default(), input));
                            if let Some(out) = output {
                                for line in out.lines().take(5) {
                                    crate::out(format_args!("  │ {line}"));
                                }
                                let more = out.lines().count().saturating_sub(5);
                                if more > 0 {
                                    crate::out(format_args!("  │ … {more} more lines"));
                                }
                            }
                            for image in images {
                                let sent = if image.data_base64.is_some() { "" } else { ", not sent to the model" };
                                crate::out(format_args!(
                                    "  │ [image {}, {} bytes{sent}]",
                                    image.mime_type, image.bytes
                                ));
                            }
                        }
                    }
                }
                if let Some(e) = &m.error {
                    crate::out(format_args!("[error] {e}"));
                }
                if let Some(u) = &m.usage {
                    crate::out(format_args!("[tokens] {}", usage_line(u)));
                }
            }
            // Compactions after the last message (everything summarised).
            let last = store.messages(&id).map_err(CliError::failure)?.last().map_or(0, |m| m.seq);
            for c in compactions.iter().filter(|c| c.kept_from > last) {
                show_compaction(c);
            }
            for step in unlinked {
                crate::out(format_args!("\n{}", step_line(step)));
            }
            for t in store.tasks(&id).map_err(CliError::failure)? {
                crate::out(format_args!(
                    "\n[task {} {}] ({}) {} → session {}",
                    t.id, t.status, t.agent, t.description, t.child_session_id
                ));
            }
        }
        SessionCommand::Compact { id, model } => return compact(ws, &id, model.as_deref()),
        SessionCommand::Export { id } => {
            let store = store.ok_or_else(|| no_session(&id))?;
            let export = store.export(&id).map_err(CliError::usage)?;
            println!("{}", serde_json::to_string_pretty(&export).map_err(CliError::failure)?);
        }
        SessionCommand::Diff { id, step, stat } => {
            let store = store.ok_or_else(|| no_session(&id))?;
            let undo = undo_for(ws, &store, &id)?;
            let diff = undo::session_diff(&store, &undo, &id, step, stat).map_err(undo_error)?;
            print_diff(&id, step, &diff);
        }
        SessionCommand::Revert { id, step, force, json } => {
            let store = store.ok_or_else(|| no_session(&id))?;
            let undo = undo_for(ws, &store, &id)?;
            let _lock = crate::agent::SessionLock::acquire(&store, &id)?;
            let tokio_rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
            let plan =
                tokio_rt.block_on(undo::plan_revert(&store, &undo, &id, step)).map_err(|e| refused(&id, e, json))?;
            let plan = match plan {
                undo::Planned::Revert(plan) => plan,
                undo::Planned::Nothing { kept } => {
                    if json {
                        let kept: Vec<_> = kept.iter().map(|p| p.to_string_lossy()).collect();
                        crate::out_exact(
                            serde_json::json!({"session_id": id, "step": null, "restored": [], "created": [], "deleted": [], "not_restored": [], "kept": kept}),
                        );
                    } else {
                        crate::out(format_args!("session {id}: {}", undo::nothing_to_revert(&kept)));
                    }
                    return Ok(ExitCode::SUCCESS);
                }
            };
            let ask = !json && crate::stderr_is_terminal() && std::fs::File::open("/dev/tty").is_ok();
            let force = force || confirm_overwrite(&plan, ask, json, &mut read_tty_line)?;
            let outcome =
                tokio_rt.block_on(undo::apply_revert(&store, &undo, plan, force)).map_err(|e| refused(&id, e, json))?;
            print_revert(&outcome, json);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `session list` for people: a header row, then one row per session (with `all`, the worktree
/// it worked in).
fn list(sessions: &[toolshed_agent::store::SessionInfo], all: bool) {
    let rows: Vec<[String; 7]> = sessions
        .iter()
        .map(|s| {
            let child = if s.parent_id.is_some() { " (sub-agent)" } else { "" };
            [
                s.id.clone(),
                ago(s.updated_at),
                s.agent.clone(),
                s.model.clone().unwrap_or_else(|| "-".into()),
                s.messages.to_string(),
                s.root.clone(),
                format!("{}{child}", s.title.split_whitespace().collect::<Vec<_>>().join(" ")),
            ]
        })
        .collect();
    let header = ["ID", "UPDATED", "AGENT", "MODEL", "MSGS", "WORKTREE", "TITLE"].map(String::from);
    let mut widths = [0; 6];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for [id, updated, agent, model, messages, root, title] in std::iter::once(&header).chain(&rows) {
        let root = if all { format!("{root:<w$}  ", w = widths[5]) } else { String::new() };
        crate::out(format_args!(
            "{id:<w0$}  {updated:>w1$}  {agent:<w2$}  {model:<w3$}  {messages:>w4$}  {root}{title}",
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
        ));
    }
}

/// `toolshed session delete ID`: refused while a toolshed process runs the session; the refs
/// that keep its undo snapshots go first (one transaction), then the session and its
/// sub-agents' sessions (another), so a failure leaves the session as it was.
fn delete(store: &Store, id: &str) -> Result<ExitCode, CliError> {
    let info = store.session(id).map_err(|_| no_session(id))?;
    if let Some(parent) = &info.parent_id {
        return Err(CliError::usage(format!(
            "session {id} is a sub-agent of session {parent}; delete {parent} (its sub-agents go with it)"
        )));
    }
    let _lock = crate::agent::SessionLock::acquire_then(store, id, "delete it")?;
    let ids = store.session_tree(id).map_err(CliError::failure)?;
    let data_dir = store.path().parent().map_or_else(toolshed_core::paths::data_dir, std::path::Path::to_path_buf);
    let kept = match toolshed_agent::snapshot::forget_sessions(&data_dir, std::path::Path::new(&info.root), &ids) {
        Ok(_) => None,
        // Without git nothing can be restored from the snapshots anyway; they expire.
        Err(toolshed_agent::snapshot::SnapshotError::GitMissing) => Some("git is not on PATH"),
        Err(e) => {
            return Err(CliError::failure(format!(
                "cannot release the undo snapshots of session {id}, so it was not deleted: {e}"
            )));
        }
    };
    store.delete_session(id).map_err(CliError::failure)?;
    let sub = match ids.len() - 1 {
        0 => String::new(),
        1 => " and its sub-agent session".into(),
        n => format!(" and its {n} sub-agent sessions"),
    };
    crate::out(format_args!("deleted session {id}{sub} ({} messages)", info.messages));
    if let Some(why) = kept {
        crate::err(format_args!(
            "its undo snapshots stay until they expire ({why}; `[session] snapshot_retention_days`)"
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether compaction `c` belongs right before the message numbered `seq`.
fn next_message_of(c: &Compaction, seq: i64) -> bool {
    c.kept_from == seq
}

fn show_compaction(c: &Compaction) {
    crate::out(format_args!(
        "\n── compaction ({}, {}): {} messages before this point are sent as the summary below; next request ~{} → ~{} tokens{} ──",
        c.trigger,
        c.model.as_deref().unwrap_or("-"),
        c.summarised,
        thousands(c.tokens_before),
        thousands(c.tokens_after),
        c.usage.map(|u| format!("; summary request {}", usage_line(&u))).unwrap_or_default()
    ));
    for line in c.summary.lines() {
        crate::out(format_args!("  ┊ {line}"));
    }
}

/// `in 12,345 (cached 10,000, written 0) · out 345 (reasoning 100)`.
fn usage_line(u: &Usage) -> String {
    let mut line = format!("in {}", thousands(u.input_tokens));
    if u.cached_input_tokens > 0 || u.cache_write_tokens > 0 {
        line.push_str(&format!(
            " (cached {}, written {})",
            thousands(u.cached_input_tokens),
            thousands(u.cache_write_tokens)
        ));
    }
    line.push_str(&format!(" · out {}", thousands(u.output_tokens)));
    if u.reasoning_tokens > 0 {
        line.push_str(&format!(" (reasoning {})", thousands(u.reasoning_tokens)));
    }
    line
}

/// `toolshed session compact ID`: one summary request, then what the next request will weigh.
fn compact(ws: &Workspace, id: &str, model: Option<&str>) -> Result<ExitCode, CliError> {
    let (store, agent, model) = crate::agent::session_target(ws, Some(id), None, model)?;
    let approver = crate::approver::for_command(false);
    let (rt, _mcp) = crate::agent::runtime(ws, store, approver, toolshed_agent::events::no_events())?;
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::failure(format!("cannot start the async runtime: {e}")))?;
    tokio_rt.block_on(async {
        let _lock = crate::agent::SessionLock::acquire(rt.store(), id)?;
        let session = rt.resume_session(id, Some(&model), Some(&agent)).map_err(CliError::failure)?;
        let cancel = CancellationToken::new();
        let on_interrupt = cancel.clone();
        tokio::spawn(async move {
            crate::stop_requested().await;
            on_interrupt.cancel();
        });
        eprintln!("asking {model} for a summary of session {id}…");
        let c = rt.compact(&session, Trigger::Manual, &cancel).await.map_err(CliError::failure)?;
        crate::out(format_args!(
            "compacted session {id}: {} messages are now sent as a summary; the next request is ~{} tokens instead of ~{} (the messages stay stored; `toolshed session show {id}` lists the compaction)",
            c.summarised,
            thousands(c.tokens_after),
            thousands(c.tokens_before)
        ));
        Ok(ExitCode::SUCCESS)
    })
}

/// Undo for the worktree session `id` worked in; an error saying why when it is off.
pub fn undo_for(ws: &Workspace, store: &Store, id: &str) -> Result<Undo, CliError> {
    let info = store.session(id).map_err(CliError::usage)?;
    let data_dir = store.path().parent().map_or_else(toolshed_core::paths::data_dir, std::path::Path::to_path_buf);
    let undo = Undo::new(&data_dir, std::path::Path::new(&info.root), ws.config.session.snapshot_retention_days);
    undo.shadow().map_err(CliError::failure)?;
    Ok(undo)
}

/// [`undo_error`], and with `json` a refusal that names files as one object on standard
/// output too (`refused`, and the files under `never_kept` or `changed_meanwhile`), as a hand
/// edit's refusal is.
fn refused(id: &str, e: UndoError, json: bool) -> CliError {
    let names =
        |files: &[std::path::PathBuf]| files.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>();
    let listed = match &e {
        UndoError::WouldLose(files) => Some(("never_kept", files)),
        UndoError::ChangedMeanwhile(files) => Some(("changed_meanwhile", files)),
        _ => None,
    };
    if let (true, Some((key, files))) = (json, listed) {
        let mut refusal = serde_json::json!({"session_id": id, "refused": true});
        refusal[key] = serde_json::json!(names(files));
        crate::out_exact(refusal);
    }
    undo_error(e)
}

/// Exit codes of undo's errors: an unknown session or step is a usage error (2); anything else,
/// a refused revert included, a failure (1).
pub fn undo_error(e: UndoError) -> CliError {
    match e {
        UndoError::BadStep { .. } | UndoError::Store(StoreError::NoSession(_)) => CliError::usage(e),
        UndoError::HandEdited(_) => CliError::failure(format!("revert refused, nothing changed: {e}")),
        e => CliError::failure(e),
    }
}

/// Prints a session's diff, or that it changed nothing.
pub fn print_diff(id: &str, step: Option<u32>, diff: &SessionDiff) {
    match (diff, step) {
        (SessionDiff::Changed(text), _) => crate::out(text.trim_end()),
        (SessionDiff::Unchanged, Some(n)) => crate::out(format_args!("session {id}: step {n} changed no files")),
        (SessionDiff::Unchanged, None) => crate::out(format_args!("session {id} changed no files")),
    }
}

/// Whether to overwrite files edited by hand since the session touched them: no question when
/// there are none; when no one can be asked (`--json`, no terminal) the revert is refused; else
/// the person says y/N. A refusal is an error (exit 1) that names the files.
pub fn confirm_overwrite(
    plan: &RevertPlan,
    ask: bool,
    json: bool,
    read_line: &mut dyn FnMut() -> Option<String>,
) -> Result<bool, CliError> {
    if plan.hand_edited.is_empty() {
        return Ok(false);
    }
    let names = toolshed_agent::undo::list_some(&plan.hand_edited);
    if !ask {
        if json {
            crate::out_exact(serde_json::json!({
                "session_id": plan.session_id,
                "refused": true,
                "hand_edited": plan.hand_edited.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>(),
            }));
        }
        return Err(undo_error(UndoError::HandEdited(plan.hand_edited.clone())));
    }
    crate::err(format_args!(
        "These files were changed or added since the session last touched them, and reverting would overwrite or remove them: {names}"
    ));
    eprint!("Overwrite them? [y/N] ");
    match read_line().map(|l| l.trim().to_ascii_lowercase()) {
        Some(answer) if answer == "y" || answer == "yes" => Ok(true),
        _ => Err(CliError::failure("revert cancelled; nothing changed")),
    }
}

fn read_tty_line() -> Option<String> {
    let tty = std::fs::File::open("/dev/tty").ok()?;
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line).ok()?;
    Some(line)
}

/// Prints what a revert did: for people, the files restored, created and deleted; with `json`,
/// one object.
pub fn print_revert(outcome: &RevertOutcome, json: bool) {
    if json {
        match serde_json::to_string(outcome) {
            Ok(line) => crate::out_exact(line),
            Err(e) => crate::err(format_args!(
                "toolshed: the revert was done, but its report could not be written as JSON: {e}"
            )),
        }
        return;
    }
    crate::out(format_args!(
        "reverted session {} to before step {} (recorded as step {}; revert again to undo this):",
        outcome.session_id, outcome.reverted_to_before_step, outcome.step
    ));
    let created: std::collections::BTreeSet<&std::path::PathBuf> = outcome.created.iter().collect();
    for path in &outcome.restored {
        let how = if created.contains(path) { "re-created" } else { "restored" };
        crate::out(format_args!("  {how:<11} {}", toolshed_core::terminal::visible_path(path)));
    }
    for path in &outcome.deleted {
        crate::out(format_args!("  {:<11} {}", "deleted", toolshed_core::terminal::visible_path(path)));
    }
    for path in &outcome.not_restored {
        crate::out(format_args!(
            "  NOT restored (too large or a nested repository, never kept): {}",
            toolshed_core::terminal::visible_path(path)
        ));
    }
    for path in &outcome.kept {
        crate::out(format_args!(
            "  kept        {} (undo cannot tell the session made it: ignored or in a nested repository before that step, or a nested repository now)",
            toolshed_core::terminal::visible_path(path)
        ));
    }
}

/// The line `session show` prints before a step.
fn step_line(step: &StoredStep) -> String {
    let what = match step.kind {
        StepKind::Model => String::new(),
        StepKind::Revert => " (revert)".to_string(),
        StepKind::Task => " (background task finished)".to_string(),
    };
    let changed = match step.changed.len() {
        0 => String::new(),
        1 => ", changed 1 file".to_string(),
        n => format!(", changed {n} files"),
    };
    format!("── step {}{what}{changed} ──", step.step)
}

fn no_session(id: &str) -> CliError {
    CliError::usage(format!("no session `{id}`; `toolshed session list` shows the stored sessions"))
}

/// "5s ago", "3m ago", "2h ago", "4d ago".
fn ago(ms: i64) -> String {
    let secs = (now_ms() - ms).max(0) / 1000;
    match secs {
        s if s < 60 => format!("{s}s ago"),
        s if s < 3600 => format!("{}m ago", s / 60),
        s if s < 86_400 => format!("{}h ago", s / 3600),
        s => format!("{}d ago", s / 86_400),
    }
}
