//! The `lsp` section of `toolshed doctor`: which language servers are configured or built in,
//! which were found, and whether each found one really starts (an `initialize` handshake, so
//! a broken install such as a rustup proxy without its component shows up here, not on the
//! first edit).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;
use toolshed_core::config::Config;

use super::client::Server;
use super::servers::{self, ServerSpec, ServerTable};

/// How long doctor waits for each server to answer `initialize`.
pub const HANDSHAKE_LIMIT: Duration = Duration::from_secs(15);

/// What doctor found about one server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Finding {
    /// Found, started and answered `initialize` in the given time.
    Starts {
        /// The program found.
        program: PathBuf,
        /// How long the handshake took.
        took: Duration,
    },
    /// Found, but it does not start; why.
    Broken {
        /// The program found.
        program: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// Not found; where it was looked for.
    Missing(String),
    /// A `[lsp.NAME]` section that cannot be used; why.
    Invalid(String),
}

/// One server's line in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerReport {
    /// The server's name.
    pub name: String,
    /// Its program as configured.
    pub command: String,
    /// The extensions it handles.
    pub extensions: Vec<String>,
    /// Set in the config (then a missing or broken server is a problem, not just absent).
    pub configured: bool,
    /// What was found.
    pub finding: Finding,
}

/// The whole `lsp` section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LspReport {
    /// One entry per server, configured ones first.
    pub servers: Vec<ServerReport>,
}

impl LspReport {
    /// Whether something configured is missing or broken (doctor then exits with 1).
    pub fn has_problem(&self) -> bool {
        self.servers.iter().any(|s| match s.finding {
            Finding::Invalid(_) => true,
            Finding::Missing(_) | Finding::Broken { .. } => s.configured,
            Finding::Starts { .. } => false,
        })
    }

    /// Whether a built-in server was found but does not start (worth a look, not a failure).
    pub fn has_warning(&self) -> bool {
        self.servers.iter().any(|s| !s.configured && matches!(s.finding, Finding::Broken { .. }))
    }

    /// Whether any server works.
    pub fn any_starts(&self) -> bool {
        self.servers.iter().any(|s| matches!(s.finding, Finding::Starts { .. }))
    }

    /// `ok`, `off` (nothing found), `warning` or `problem`.
    pub fn status(&self) -> &'static str {
        if self.has_problem() {
            "problem"
        } else if self.has_warning() {
            "warning"
        } else if self.any_starts() {
            "ok"
        } else {
            "off"
        }
    }

    /// The report's lines: one per server configured or found, then one naming the built-in
    /// servers not found (or, when nothing is configured or found, what was looked for).
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut absent = Vec::new();
        for s in &self.servers {
            let exts: Vec<String> = s.extensions.iter().map(|e| format!(".{e}")).collect();
            let origin = if s.configured { "configured" } else { "built-in" };
            let exts =
                if exts.is_empty() { "no file extensions, so no file uses it".to_string() } else { exts.join(" ") };
            let head = format!("{} ({origin}; {exts})", s.name);
            lines.push(match &s.finding {
                Finding::Starts { program, took } => {
                    format!("{head}: {} starts (initialize answered in {:.1} s)", program.display(), took.as_secs_f64())
                }
                Finding::Broken { program, why } => {
                    format!("{head}: {} was found but does not start: {why}", program.display())
                }
                Finding::Missing(_) if !s.configured => {
                    absent.push(s.command.clone());
                    continue;
                }
                Finding::Missing(why) => format!("{head}: not found: {why}"),
                Finding::Invalid(why) => format!("{head}: cannot be used: {why}"),
            });
        }
        if lines.is_empty() {
            lines.push(format!(
                "no language server is configured or found on PATH (looked for {}); install one, or add an [lsp.NAME] section to toolshed.toml",
                absent.join(", ")
            ));
        } else if !absent.is_empty() {
            lines.push(format!("not found on PATH: {}", absent.join(", ")));
        }
        lines
    }
}

impl fmt::Display for LspReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "lsp: {}", self.status())?;
        for line in self.lines() {
            writeln!(f, "  {line}")?;
        }
        Ok(())
    }
}

/// Checks every server of `config` for the worktree `root`: looks each up and, when found,
/// starts it, completes the handshake and shuts it down again (all at once, each bounded by
/// [`HANDSHAKE_LIMIT`]).
pub async fn check(config: &Config, root: &Path) -> LspReport {
    let table = ServerTable::for_config(config);
    let mut servers: Vec<ServerReport> = table
        .invalid()
        .iter()
        .map(|i| ServerReport {
            name: i.name.clone(),
            command: String::new(),
            extensions: i.extensions.clone(),
            configured: true,
            finding: Finding::Invalid(i.reason.clone()),
        })
        .collect();
    let mut tasks = tokio::task::JoinSet::new();
    for (index, spec) in table.servers().iter().enumerate() {
        let spec = spec.clone();
        let root = root.to_path_buf();
        tasks.spawn(async move { (index, probe(&spec, &root).await) });
    }
    let mut found: Vec<(usize, Finding)> = tasks.join_all().await;
    found.sort_by_key(|(index, _)| *index);
    for ((_, finding), spec) in found.into_iter().zip(table.servers()) {
        servers.push(ServerReport {
            name: spec.name.clone(),
            command: spec.command.clone(),
            extensions: spec.extensions.clone(),
            configured: spec.configured,
            finding,
        });
    }
    LspReport { servers }
}

async fn probe(spec: &ServerSpec, root: &Path) -> Finding {
    let program = match servers::find_program(&spec.command, root) {
        Ok(program) => program,
        Err(why) => return Finding::Missing(why),
    };
    let started = Instant::now();
    // A server configured with a shorter `timeout_ms` is given no longer here either.
    match Server::start(spec, root, root, &program, spec.timeout.min(HANDSHAKE_LIMIT)).await {
        Ok(server) => {
            let took = started.elapsed();
            server.shutdown().await;
            super::failures::clear(&super::failures::key(&spec.name, &program, &spec.args, root));
            Finding::Starts { program, took }
        }
        Err(why) => {
            super::failures::record(&super::failures::key(&spec.name, &program, &spec.args, root), &why);
            Finding::Broken { program, why }
        }
    }
}

/// [`check`] for a caller without an async runtime (the `doctor` command); must not be called
/// from inside one.
pub fn lsp_report(config: &Config, root: &Path) -> LspReport {
    match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime.block_on(check(config, root)),
        Err(e) => LspReport {
            servers: vec![ServerReport {
                name: "lsp".into(),
                command: String::new(),
                extensions: Vec::new(),
                configured: true,
                finding: Finding::Invalid(format!("cannot start the async runtime: {e}")),
            }],
        },
    }
}
