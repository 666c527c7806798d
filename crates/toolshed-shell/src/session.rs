//! Long-running commands the model keeps talking to: a `bash` call whose `yield_ms` passed
//! becomes a session, polled, fed and stopped with `bash_output`.
//!
//! At most [`MAX_SESSIONS`] run at once; a session that ended stays until its last output was
//! read (the oldest such are dropped beyond the same number). Dropping the table kills every
//! session, and so does toolshed's exit (see `process`'s `atexit` hook).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use toolshed_core::ToolError;

use super::process::Run;

/// How many sessions may run at once.
pub const MAX_SESSIONS: usize = 16;

/// One long-running command.
pub(crate) struct ProcessSession {
    /// The id the model uses.
    pub id: u32,
    /// The command text.
    pub command: String,
    /// The process.
    pub run: Run,
    /// Set when the session's own `timeout_ms` stopped it.
    pub timed_out: AtomicBool,
    /// Protected locations that did not exist when the command started (see
    /// [`super::created`]): looked at again whenever the session is polled or stopped.
    absent: Mutex<Vec<std::path::PathBuf>>,
}

impl ProcessSession {
    /// Watches `absent` protected locations for this session's command.
    pub(crate) fn watch_protected(&self, absent: Vec<std::path::PathBuf>) {
        *self.absent.lock().unwrap_or_else(PoisonError::into_inner) = absent;
    }

    /// Settles what appeared of the watched locations (see [`super::created::settle`]); the
    /// rest stays watched.
    pub(crate) async fn settle_protected(&self, ctx: &toolshed_core::ToolContext) -> Option<String> {
        let absent = std::mem::take(&mut *self.absent.lock().unwrap_or_else(PoisonError::into_inner));
        let note = super::created::settle(ctx, &absent, &self.command).await;
        let still: Vec<_> = absent.into_iter().filter(|p| std::fs::symlink_metadata(p).is_err()).collect();
        self.absent.lock().unwrap_or_else(PoisonError::into_inner).extend(still);
        note
    }
}

/// The sessions of one [`super::Shell`].
#[derive(Default)]
pub(crate) struct ProcessSessions {
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next: u32,
    entries: BTreeMap<u32, Arc<ProcessSession>>,
}

impl ProcessSessions {
    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Fails with a model-facing message when no further session may start.
    pub(crate) fn check_capacity(&self) -> Result<(), ToolError> {
        let table = self.table();
        let running: Vec<&Arc<ProcessSession>> = table.entries.values().filter(|s| !s.run.is_done()).collect();
        if running.len() < MAX_SESSIONS {
            return Ok(());
        }
        let list: Vec<String> = running.iter().map(|s| format!("{} (`{}`)", s.id, short(&s.command))).collect();
        Err(ToolError::model(format!(
            "Cannot start another background session: {MAX_SESSIONS} are already running ({}). Stop one you no longer need with bash_output (stop: true), or run this command without yield_ms.",
            list.join(", ")
        )))
    }

    /// Adds a running command; `timeout` (if any) is how much longer it may run.
    pub(crate) fn insert(&self, command: &str, run: Run, timeout: Option<Duration>) -> Arc<ProcessSession> {
        let mut table = self.table();
        table.next += 1;
        let id = table.next;
        let session = Arc::new(ProcessSession {
            id,
            command: command.to_string(),
            run,
            timed_out: AtomicBool::new(false),
            absent: Mutex::default(),
        });
        table.entries.insert(id, session.clone());
        let ended: Vec<u32> = table.entries.values().filter(|s| s.run.is_done()).map(|s| s.id).collect();
        for old in ended.iter().take(ended.len().saturating_sub(MAX_SESSIONS)) {
            table.entries.remove(old);
        }
        drop(table);
        if let Some(limit) = timeout {
            let watched = Arc::downgrade(&session);
            tokio::spawn(async move {
                tokio::time::sleep(limit).await;
                if let Some(session) = watched.upgrade()
                    && !session.run.is_done()
                {
                    session.timed_out.store(true, Ordering::Relaxed);
                    session.run.terminate().await;
                }
            });
        }
        session
    }

    /// The session with this id, or a model-facing error listing the ones there are.
    pub(crate) fn get(&self, id: u32) -> Result<Arc<ProcessSession>, ToolError> {
        let table = self.table();
        if let Some(session) = table.entries.get(&id) {
            return Ok(session.clone());
        }
        let list: Vec<String> = table.entries.values().map(|s| format!("{} (`{}`)", s.id, short(&s.command))).collect();
        let known = if list.is_empty() {
            "There are no sessions.".to_string()
        } else {
            format!("Sessions: {}.", list.join(", "))
        };
        Err(ToolError::model(format!(
            "No shell session {id}: it never existed, or it ended and its final output was already returned. {known}"
        )))
    }

    /// Forgets a session (after its final output was returned).
    pub(crate) fn remove(&self, id: u32) {
        self.table().entries.remove(&id);
    }

    /// Stops every session (SIGTERM, then SIGKILL) and forgets them.
    pub(crate) async fn shutdown(&self) {
        let sessions: Vec<Arc<ProcessSession>> = std::mem::take(&mut self.table().entries).into_values().collect();
        for session in &sessions {
            session.run.terminate().await;
        }
    }

    /// How many sessions are still running.
    pub(crate) fn running(&self) -> usize {
        self.table().entries.values().filter(|s| !s.run.is_done()).count()
    }
}

/// The command shortened for listings.
pub(crate) fn short(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default();
    if line.chars().count() > 60 || command.contains('\n') {
        format!("{}…", line.chars().take(60).collect::<String>())
    } else {
        line.to_string()
    }
}
