//! Long-running commands the model keeps talking to: a `bash` call whose `yield_ms` passed
//! becomes a session, polled, fed and stopped with `bash_output`.
//!
//! At most [`MAX_SESSIONS`] run at once; a session that ended stays until its last output was
//! read (the oldest such are dropped beyond the same number). Dropping the table kills every
//! session, and so does toolshed's exit (see `process`'s `atexit` hook).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
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
    /// The protected locations its command may not create (see [`Watched`]).
    watched: Mutex<Option<Arc<Watched>>>,
}

/// How often a running session's [`Watched`] locations are looked at (besides when an entry
/// appears in a directory that holds one).
const WATCH_EVERY: Duration = Duration::from_millis(200);
/// The least time between two looks.
const SWEEP_GAP: Duration = Duration::from_millis(20);

/// Protected locations that did not exist when a session's command started and that it may not
/// create (see [`super::created`]: those a rule allows are not among them). A command in the
/// foreground that creates one is asked about when it ends; a session runs on with nobody to
/// ask, and a `.git` it made (with `core.fsmonitor` set) would run its program at the person's
/// next `git status`, so they are looked at every [`WATCH_EVERY`] while it runs, when it ends,
/// when it is dropped and when toolshed exits, and whatever appeared is removed at once. The
/// model hears of it at its next poll.
pub(crate) struct Watched {
    absent: Vec<PathBuf>,
    removed: Mutex<Vec<PathBuf>>,
    failed: Mutex<Vec<(PathBuf, String)>>,
    /// Those removed: one found again was made again.
    gone: Mutex<Vec<PathBuf>>,
    /// Set when the session was stopped for making one again.
    stopped: AtomicBool,
}

impl Watched {
    /// Removes whatever of the locations exists now; they stay watched. Whether one was made
    /// again after it had been removed: a command that does that fights the removal, which it
    /// can win part of the time, so the session is stopped.
    fn sweep(&self) -> bool {
        let mut again = false;
        for path in self.absent.iter().filter(|p| toolshed_core::protected::appeared(p)) {
            again |= lock(&self.gone).contains(path);
            // Never through a link the command made on the way (see `created.rs`).
            let removed = toolshed_core::paths::remove_made(path);
            if let Err(e) = removed
                && std::fs::symlink_metadata(path).is_ok()
            {
                let mut list = lock(&self.failed);
                if !list.iter().any(|(p, _)| p == path) {
                    list.push((path.clone(), e.to_string()));
                }
            } else {
                let mut list = lock(&self.removed);
                if !list.contains(path) {
                    list.push(path.clone());
                }
                let mut gone = lock(&self.gone);
                if !gone.contains(path) {
                    gone.push(path.clone());
                }
            }
        }
        again
    }

    /// The model's note on what was removed since it was last told, if anything.
    fn note(&self, root: &Path) -> Option<String> {
        let removed = std::mem::take(&mut *lock(&self.removed));
        // Those that could not be removed once but are gone now are not worth a word.
        let failed: Vec<String> = std::mem::take(&mut *lock(&self.failed))
            .into_iter()
            .filter(|(p, _)| std::fs::symlink_metadata(p).is_ok())
            .map(|(p, e)| format!("{} ({e})", p.display()))
            .collect();
        if removed.is_empty() && failed.is_empty() {
            return None;
        }
        let shown: Vec<String> =
            removed.iter().map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string()).collect();
        let mut note = format!(
            "(The session's command created protected paths that did not exist before: {}. A command running in the background may not keep them (it needs permission `protected`, which only a command in the foreground can be asked for), so they were removed as they appeared. Do not create them another way; tell the user what you wanted to add.)",
            shown.join(", ")
        );
        if !failed.is_empty() {
            note.push_str(&format!(" (These could not be removed: {}.)", failed.join(", ")));
        }
        if self.stopped.load(Ordering::Relaxed) {
            note.push_str(" (The session made them again after they were removed, so it was stopped.)");
        }
        Some(note)
    }
}

/// An inotify instance watching directories for entries created or moved in.
struct Creations {
    fd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    watched: Vec<PathBuf>,
}

impl Creations {
    fn new() -> Option<Creations> {
        use std::os::fd::FromRawFd;
        // SAFETY: inotify_init1 returns a new descriptor we then own.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: as above.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        // SAFETY: the AsyncFd owns `owned`, so it stays open and the same for its lifetime.
        let fd = unsafe { tokio::io::unix::AsyncFd::register(owned) }.ok()?;
        Some(Creations { fd, watched: Vec::new() })
    }

    /// Watches the nearest existing directory above each of `absent` (again as directories
    /// appear on the way).
    fn watch(&mut self, absent: &[PathBuf]) {
        use std::os::fd::AsRawFd;
        use std::os::unix::ffi::OsStrExt;
        for path in absent {
            let Some(dir) = path.ancestors().skip(1).find(|d| d.is_dir()) else { continue };
            if self.watched.iter().any(|w| w == dir) {
                continue;
            }
            let Ok(name) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { continue };
            // SAFETY: a valid descriptor and a NUL-terminated path.
            let added = unsafe {
                libc::inotify_add_watch(
                    self.fd.as_raw_fd(),
                    name.as_ptr(),
                    libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_ONLYDIR,
                )
            };
            if added >= 0 {
                self.watched.push(dir.to_path_buf());
            }
        }
    }

    /// Waits for events and drains them.
    async fn next(&self) {
        use std::os::fd::AsRawFd;
        let Ok(mut guard) = self.fd.readable().await else { return };
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: read into a buffer of its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                break;
            }
        }
        guard.clear_ready();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Every [`Watched`] of this process, for the sweep at exit.
static WATCHED: Mutex<Vec<Weak<Watched>>> = Mutex::new(Vec::new());

/// Sweeps every session's [`Watched`] locations once more (at exit, after the commands were
/// killed). Never blocks: a list held elsewhere is skipped.
pub(crate) fn sweep_all_watched() {
    let Ok(list) = WATCHED.try_lock() else { return };
    let live: Vec<Arc<Watched>> = list.iter().filter_map(Weak::upgrade).collect();
    drop(list);
    if live.is_empty() {
        return;
    }
    // The commands were just sent SIGKILL; one still dying could make a path again after a
    // single look, so look again once they had time to die.
    for _ in 0..3 {
        for watched in &live {
            watched.sweep();
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

impl ProcessSession {
    /// Watches the `absent` protected locations of this session's command (see [`Watched`]).
    pub(crate) fn watch_protected(session: &Arc<ProcessSession>, absent: Vec<PathBuf>) {
        if absent.is_empty() {
            return;
        }
        let watched = Arc::new(Watched {
            absent,
            removed: Mutex::default(),
            failed: Mutex::default(),
            gone: Mutex::default(),
            stopped: AtomicBool::new(false),
        });
        {
            let mut list = lock(&WATCHED);
            list.retain(|w| w.strong_count() > 0);
            list.push(Arc::downgrade(&watched));
        }
        *lock(&session.watched) = Some(watched.clone());
        let weak = Arc::downgrade(session);
        tokio::spawn(async move {
            // Told by the kernel as soon as an entry appears where one may (inotify), and
            // looked at every WATCH_EVERY besides (a directory made on the way, no inotify).
            let mut creations = Creations::new();
            loop {
                let Some(session) = weak.upgrade() else {
                    watched.sweep();
                    break;
                };
                let ended = session.run.is_done();
                if watched.sweep() && !ended {
                    watched.stopped.store(true, Ordering::Relaxed);
                    session.run.signal(libc::SIGKILL);
                    session.run.wait_done().await;
                    watched.sweep();
                    break;
                }
                if ended {
                    break;
                }
                drop(session);
                if let Some(c) = creations.as_mut() {
                    c.watch(&watched.absent);
                }
                let swept = tokio::time::Instant::now();
                match creations.as_ref() {
                    Some(c) => {
                        tokio::select! {
                            () = c.next() => {}
                            () = tokio::time::sleep(WATCH_EVERY) => {}
                        }
                    }
                    None => tokio::time::sleep(WATCH_EVERY).await,
                }
                // A command that creates entries without pause must not keep this busy.
                tokio::time::sleep_until(swept + SWEEP_GAP).await;
            }
        });
    }

    /// Sweeps the watched locations now, and the note on what was removed since the model was
    /// last told.
    pub(crate) fn settle_protected(&self, root: &Path) -> Option<String> {
        let watched = lock(&self.watched).clone()?;
        watched.sweep();
        watched.note(root)
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
            watched: Mutex::default(),
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

    /// The sessions still running: id and shortened command.
    pub(crate) fn list_running(&self) -> Vec<(u32, String)> {
        self.table().entries.values().filter(|s| !s.run.is_done()).map(|s| (s.id, short(&s.command))).collect()
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
