//! # toolshed-lsp
//!
//! Owns: the language-server client, the `lsp` tool and the post-write diagnostics hook. Must
//! never fail an edit (a missing, slow or crashing server becomes a note) and never start a
//! server before a file of its language is written or asked about. Public face: [`LspTool`],
//! [`hooks`], [`shared`], [`ServerTable`], [`doctor`].
//!
//! Code intelligence from real language servers: an LSP client (JSON-RPC over the server's
//! standard streams, typed with `lsp-types`), the [`LspTool`] a model calls, and the
//! [`Diagnostics`] post-write hook that appends a changed file's errors to edit, write and
//! apply_patch results.
//!
//! Servers come from the built-in table (rust-analyzer, pyright, typescript-language-server,
//! gopls, clangd; used when found on `PATH`) and `[lsp.NAME]` sections. Nothing starts, and
//! nothing is looked up, until a file of the server's language is written or asked about;
//! then the server starts for that file's project root, stays warm for the session, is
//! restarted after a crash, and is stopped when the [`LspService`] is dropped (or at exit).
//!
//! The CLI builds both halves from the config: [`hooks`] for the executor, and
//! `toolshed_tools::register_builtins` registers the tool; both use the process's [`shared`] service,
//! so a server the tool started also answers the next edit.

mod client;
pub mod doctor;
mod exposure;
pub mod failures;
mod format;
mod hook;
pub mod position;
mod rpc;
pub mod servers;
mod tool;
mod tsserver;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use toolshed_core::config::Config;
use toolshed_core::hooks::Hooks;

pub use client::{Server, Synced, WaitError, seconds};
pub use doctor::lsp_report;
pub use exposure::Availability;
pub use hook::Diagnostics;
pub use servers::{ServerSpec, ServerTable};
pub use tool::{LspArgs, LspTool, Operation};

/// Failed starts in a row after which a server is not tried again this session.
const MAX_FAILED_STARTS: u32 = 3;
/// Crashes after which a server is not restarted again this session.
const MAX_CRASHES: u32 = 5;
/// The longest a start may take in the background, whatever the caller waits.
const START_LIMIT: Duration = Duration::from_secs(60);
/// After a failed start, how long before the server is tried again in this process (so one
/// write of many files tries it once, not once per file).
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// The language servers of one session (or process): which server handles a file, and the
/// running ones, one per server and project root.
pub struct LspService {
    table: ServerTable,
    programs: Mutex<HashMap<String, Result<PathBuf, String>>>,
    slots: Mutex<HashMap<(String, PathBuf), Arc<Slot>>>,
}

/// The server for a file, or why there is none.
pub enum Lookup {
    /// A running server, with the deadline for this use (the server's timeout from the start
    /// of the lookup) and a note if it had to be restarted after a crash.
    Ready {
        /// The server.
        server: Arc<Server>,
        /// When the caller should stop waiting for answers.
        deadline: Instant,
        /// Set when the server had crashed and was restarted for this call.
        restarted: Option<String>,
    },
    /// No server is configured or found for this kind of file; the reason, for a model.
    NoServer(String),
    /// A server should handle the file but cannot be used now.
    Unavailable {
        /// The server's name.
        server: String,
        /// Why, completing "`<server>` ...".
        reason: String,
    },
}

impl LspService {
    /// A service for the servers of `config`; starts and looks up nothing.
    pub fn new(config: &Config) -> Self {
        LspService::from_table(ServerTable::for_config(config))
    }

    /// A service for an explicit table of servers.
    pub fn from_table(table: ServerTable) -> Self {
        LspService { table, programs: Mutex::default(), slots: Mutex::default() }
    }

    /// The servers this service may use.
    pub fn table(&self) -> &ServerTable {
        &self.table
    }

    /// The running server for `file` (an absolute path) in the worktree `worktree`, starting
    /// it if needed. Waits at most the server's timeout for it to start.
    pub async fn server_for(&self, file: &Path, worktree: &Path) -> Lookup {
        let started = Instant::now();
        let candidates = self.table.candidates(file);
        if candidates.is_empty() {
            if let Some(invalid) = self.table.invalid_for(file) {
                return Lookup::Unavailable {
                    server: invalid.name.clone(),
                    reason: format!(
                        "cannot be used: its [lsp.{}] section is incomplete ({})",
                        invalid.name, invalid.reason
                    ),
                };
            }
            let ext = servers::extension(file).map_or_else(|| "extensionless".to_string(), |e| format!("`.{e}`"));
            return Lookup::NoServer(format!(
                "no language server is configured for {ext} files. Add an [lsp.NAME] section with `command` and `extensions` to toolshed.toml to use one."
            ));
        }
        let mut missing = Vec::new();
        for spec in candidates {
            let program = match self.program(spec, worktree) {
                Ok(program) => program,
                Err(why) if spec.configured => {
                    return Lookup::Unavailable {
                        server: spec.name.clone(),
                        reason: format!("cannot be started: {why}. Install it or set `command` in [lsp.{}]", spec.name),
                    };
                }
                Err(_) => {
                    missing.push(format!("{} (`{}`)", spec.name, spec.command));
                    continue;
                }
            };
            let root = servers::project_root(&spec.root_markers, file, worktree);
            let slot = self.slot(spec, root, worktree, program);
            let deadline = started + spec.timeout;
            return slot.get(deadline).await;
        }
        Lookup::NoServer(format!(
            "the language server for these files was not found on PATH: {}. Install it, or set its `command` in an [lsp.NAME] section of toolshed.toml.",
            missing.join(", ")
        ))
    }

    /// Closes `file` on every running server that has it open (it was deleted).
    pub async fn forget(&self, file: &Path) {
        for server in self.running().await {
            server.close(file).await;
        }
    }

    /// The servers running now.
    pub async fn running(&self) -> Vec<Arc<Server>> {
        let slots: Vec<Arc<Slot>> =
            self.slots.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        let mut running = Vec::new();
        for slot in slots {
            if let Phase::Running(server) = &slot.state.lock().await.phase {
                running.push(server.clone());
            }
        }
        running
    }

    /// Shuts every running server down (`shutdown` then `exit`, killed if slow).
    pub async fn shutdown(&self) {
        for server in self.running().await {
            server.shutdown().await;
        }
    }

    fn program(&self, spec: &ServerSpec, worktree: &Path) -> Result<PathBuf, String> {
        let mut programs = self.programs.lock().unwrap_or_else(PoisonError::into_inner);
        programs.entry(spec.name.clone()).or_insert_with(|| servers::find_program(&spec.command, worktree)).clone()
    }

    fn slot(&self, spec: &ServerSpec, root: PathBuf, worktree: &Path, program: PathBuf) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots
            .entry((spec.name.clone(), root.clone()))
            .or_insert_with(|| {
                Arc::new(Slot {
                    spec: spec.clone(),
                    root,
                    worktree: worktree.to_path_buf(),
                    program,
                    state: tokio::sync::Mutex::new(SlotState::default()),
                })
            })
            .clone()
    }
}

type Starting = watch::Receiver<Option<Result<Arc<Server>, String>>>;

/// One server for one project root: idle, starting, or running.
struct Slot {
    spec: ServerSpec,
    root: PathBuf,
    /// The worktree the project is in: what the server's sandbox lets it write.
    worktree: PathBuf,
    program: PathBuf,
    state: tokio::sync::Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    phase: Phase,
    failed_starts: u32,
    failed_at: Option<Instant>,
    crashes: u32,
    last_failure: Option<String>,
}

#[derive(Default)]
enum Phase {
    #[default]
    Idle,
    Starting(Starting),
    Running(Arc<Server>),
}

impl Slot {
    /// The running server, started (or restarted after a crash) if need be; waits for a start
    /// until `deadline`, and lets it go on in the background after that.
    async fn get(self: Arc<Self>, deadline: Instant) -> Lookup {
        let mut restarted = None;
        let mut starting = {
            let mut state = self.state.lock().await;
            match &state.phase {
                Phase::Running(server) if server.is_alive() => {
                    return Lookup::Ready { server: server.clone(), deadline, restarted: None };
                }
                Phase::Running(server) => {
                    let death = server.death().await.unwrap_or_else(|| "stopped".into());
                    state.crashes += 1;
                    state.phase = Phase::Idle;
                    if state.crashes > MAX_CRASHES {
                        state.last_failure = Some(format!("crashed {} times; the last time it {death}", state.crashes));
                        state.failed_starts = MAX_FAILED_STARTS;
                    } else {
                        restarted = Some(format!("{} had stopped ({death}) and was restarted", self.spec.name));
                    }
                }
                Phase::Starting(_) | Phase::Idle => {}
            }
            match &state.phase {
                Phase::Starting(rx) => rx.clone(),
                _ if state.failed_starts >= MAX_FAILED_STARTS => {
                    let last = state.last_failure.clone().unwrap_or_default();
                    return Lookup::Unavailable {
                        server: self.spec.name.clone(),
                        reason: format!("is not started again this session: it {last}"),
                    };
                }
                _ if state.failed_at.is_some_and(|at| at.elapsed() < RETRY_AFTER) => {
                    let last = state.last_failure.clone().unwrap_or_default();
                    return Lookup::Unavailable {
                        server: self.spec.name.clone(),
                        reason: format!("(`{}`) {last}", self.program.display()),
                    };
                }
                _ if restarted.is_none()
                    && let Some((why, age)) = failures::recent(&self.failure_key()) =>
                {
                    state.failed_starts = MAX_FAILED_STARTS;
                    state.last_failure = Some(format!("failed to start {} s ago: {why}", age.as_secs()));
                    return Lookup::Unavailable {
                        server: self.spec.name.clone(),
                        reason: format!(
                            "(`{}`) failed to start {} s ago: {why} (not tried again for {} minutes; `toolshed doctor` checks it now)",
                            self.program.display(),
                            age.as_secs(),
                            failures::REMEMBER.as_secs() / 60
                        ),
                    };
                }
                _ => {
                    let rx = self.clone().start();
                    state.phase = Phase::Starting(rx.clone());
                    rx
                }
            }
        };
        let waited = tokio::time::timeout_at(deadline, starting.wait_for(Option::is_some)).await;
        let outcome = match waited {
            Ok(Ok(outcome)) => outcome.clone(),
            Ok(Err(_)) => Some(Err("stopped while starting".to_string())),
            Err(_) => None,
        };
        match outcome {
            Some(Ok(server)) => Lookup::Ready { server, deadline, restarted },
            Some(Err(why)) => Lookup::Unavailable { server: self.spec.name.clone(), reason: why },
            None => Lookup::Unavailable {
                server: self.spec.name.clone(),
                reason: format!("is still starting after {}", seconds(self.spec.timeout)),
            },
        }
    }

    /// What identifies this server in the record of failed starts.
    fn failure_key(&self) -> String {
        failures::key(&self.spec.name, &self.program, &self.spec.args, &self.root)
    }

    /// Starts the server in a background task; the receiver gets the outcome.
    fn start(self: Arc<Self>) -> Starting {
        let (tx, rx) = watch::channel(None);
        tokio::spawn(async move {
            let limit = self.spec.timeout.max(START_LIMIT);
            let outcome =
                Server::start(&self.spec, &self.root, &self.worktree, &self.program, limit).await.map(Arc::new);
            let mut state = self.state.lock().await;
            match &outcome {
                Ok(server) => {
                    state.phase = Phase::Running(server.clone());
                    if state.failed_starts > 0 {
                        failures::clear(&self.failure_key());
                    }
                    state.failed_starts = 0;
                    state.failed_at = None;
                }
                Err(why) => {
                    failures::record(&self.failure_key(), why);
                    state.phase = Phase::Idle;
                    state.failed_at = Some(Instant::now());
                    state.failed_starts += 1;
                    state.last_failure = Some(if state.failed_starts >= MAX_FAILED_STARTS {
                        format!("failed to start {} times; the last time it {why}", state.failed_starts)
                    } else {
                        why.clone()
                    });
                }
            }
            drop(state);
            let outcome = outcome.map_err(|why| format!("(`{}`) {why}", self.program.display()));
            tx.send_replace(Some(outcome));
        });
        rx
    }
}

/// The service shared by every user in this process with the same servers configured: the
/// `lsp` tool registered by `toolshed_tools::register_builtins` and the hooks from [`hooks`]. It lives
/// while someone holds it; servers stop when the last holder drops it.
pub fn shared(config: &Config) -> Arc<LspService> {
    static SHARED: Mutex<Vec<(ServerTable, Weak<LspService>)>> = Mutex::new(Vec::new());
    let table = ServerTable::for_config(config);
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    shared.retain(|(_, weak)| weak.strong_count() > 0);
    if let Some(service) = shared.iter().find(|(t, _)| *t == table).and_then(|(_, weak)| weak.upgrade()) {
        return service;
    }
    let service = Arc::new(LspService::from_table(table.clone()));
    shared.push((table, Arc::downgrade(&service)));
    service
}

/// The executor hooks for `config`: diagnostics after every write, from the [`shared`]
/// service. Cheap; starts and looks up nothing until a file is written.
pub fn hooks(config: &Config) -> Hooks {
    let mut hooks = Hooks::default();
    hooks.add_post_write(Arc::new(Diagnostics::new(shared(config))));
    hooks
}
