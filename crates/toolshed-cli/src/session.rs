//! `toolshed session list | show | export`: the stored sessions.

use std::process::ExitCode;

use clap::Subcommand;
use toolshed_agent::Store;
use toolshed_agent::store::{StoredPart, now_ms};
use toolshed_llm::Role;

use crate::CliError;

#[derive(Subcommand)]
pub enum SessionCommand {
    /// List stored sessions, most recent first.
    List {
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Show a session's conversation.
    Show {
        /// The session id.
        id: String,
    },
    /// Print a session as JSON: the session, its todos, messages with parts, and tasks.
    Export {
        /// The session id.
        id: String,
    },
}

pub fn run(cmd: SessionCommand) -> Result<ExitCode, CliError> {
    let path = Store::default_path(&toolshed_core::paths::data_dir());
    let store = if path.exists() { Some(Store::open(&path).map_err(CliError::failure)?) } else { None };
    match cmd {
        SessionCommand::List { json } => {
            let sessions = match &store {
                Some(s) => s.list_sessions().map_err(CliError::failure)?,
                None => Vec::new(),
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&sessions).map_err(CliError::failure)?);
            } else if sessions.is_empty() {
                eprintln!("no sessions yet (toolshed run and toolshed chat store theirs in {})", path.display());
            } else {
                for s in &sessions {
                    let model = s.model.as_deref().unwrap_or("-");
                    let child = if s.parent_id.is_some() { " (sub-agent)" } else { "" };
                    crate::out(format_args!(
                        "{}  {:>8}  {:<8} {:<28} {:>3} msgs  {}{child}",
                        s.id,
                        ago(s.updated_at),
                        s.agent,
                        model,
                        s.messages,
                        s.title
                    ));
                }
            }
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
            for m in store.messages(&id).map_err(CliError::failure)? {
                let who = match m.role {
                    Role::User => "user".to_string(),
                    Role::Assistant => format!("assistant ({})", m.agent.as_deref().unwrap_or("-")),
                };
                crate::out(format_args!("\n{who}:"));
                for p in &m.parts {
                    match p {
                        StoredPart::Text { text } => crate::out(format_args!("{}", text.trim_end())),
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
            }
            for t in store.tasks(&id).map_err(CliError::failure)? {
                crate::out(format_args!(
                    "\n[task {} {}] ({}) {} → session {}",
                    t.id, t.status, t.agent, t.description, t.child_session_id
                ));
            }
        }
        SessionCommand::Export { id } => {
            let store = store.ok_or_else(|| no_session(&id))?;
            let export = store.export(&id).map_err(CliError::usage)?;
            println!("{}", serde_json::to_string_pretty(&export).map_err(CliError::failure)?);
        }
    }
    Ok(ExitCode::SUCCESS)
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
