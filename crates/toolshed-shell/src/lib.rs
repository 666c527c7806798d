#![cfg(unix)]
//! # toolshed-shell
//!
//! Owns: the `bash` and `bash_output` tools, the process runner (process groups, the
//! watchdog, PTY sessions, bounded output) and the Landlock / seccomp / mount-namespace sandbox.
//! Must never decide what a command may do by itself: the permission requests come from
//! `toolshed-shellpolicy`, and the sandbox's boundary from what toolshed resolved (never from a
//! file the command can write). Public face: [`Shell`] (register the tools), [`SandboxPolicy`].
//!
//! Shell tools: `bash` runs a command and returns when the shell exits (never waiting on a
//! background process that holds the output open), with bounded memory, a timeout that stops
//! the whole process group, and a Landlock sandbox; a command still running after `yield_ms`
//! becomes a session that `bash_output` polls, feeds and stops.
//!
//! ```no_run
//! use toolshed_core::Registry;
//! use toolshed_shell::{SandboxPolicy, Shell};
//!
//! let mut registry = Registry::new();
//! Shell::new(SandboxPolicy::default()).register(&mut registry);
//! ```

mod bash;
mod bash_output;
mod created;
mod process;
pub mod sandbox;
mod session;
mod tree_reads;

use std::collections::BTreeMap;
use std::sync::Arc;

use toolshed_core::Registry;
use toolshed_core::agents::{READ_ONLY_SANDBOX_AGENTS, sandbox_mode};
use toolshed_core::config::Config;
use toolshed_core::env::ChildEnv;
use toolshed_core::output::SinkOutput;
use toolshed_core::tool::{ToolOutput, Typed};

pub use bash::{Bash, BashArgs, confine_helper, confine_tool, confine_tool_tracked};
pub use bash_output::{BashOutput, BashOutputArgs};
pub use sandbox::{SandboxMode, SandboxPolicy, SandboxSupport};
pub use session::MAX_SESSIONS;

use process::Exit;

/// Bytes of output kept in memory per command (head and tail, half each); the rest goes to a
/// spill file.
pub const MEMORY_BUDGET: usize = 1024 * 1024;

/// The shell tools' shared state: the sandbox policy (per agent) and the running sessions.
/// Cheap to clone.
#[derive(Clone)]
pub struct Shell {
    state: Arc<ShellState>,
}

struct ShellState {
    policy: SandboxPolicy,
    /// What commands inherit of toolshed's environment.
    env: ChildEnv,
    /// Agents whose commands run in another mode than `policy.mode`.
    agent_modes: BTreeMap<String, SandboxMode>,
    sessions: session::ProcessSessions,
}

impl Shell {
    /// Shell tools that sandbox commands as `policy` says, except that the built-in agents that
    /// change nothing (`plan`, `explore`) run read-only unless `policy` is `full-access`.
    /// Commands lose toolshed's secret-looking variables ([`ChildEnv::default`]).
    pub fn new(policy: SandboxPolicy) -> Self {
        let agent_modes = if policy.mode == SandboxMode::FullAccess {
            BTreeMap::new()
        } else {
            READ_ONLY_SANDBOX_AGENTS.iter().map(|a| (a.to_string(), SandboxMode::ReadOnly)).collect()
        };
        Shell::with_agent_modes(policy, agent_modes, ChildEnv::default())
    }

    /// Shell tools configured by `[sandbox]` and each agent's `[agent.NAME] sandbox` (see
    /// [`toolshed_core::agents::sandbox_mode`]).
    pub fn from_config(config: &Config) -> Self {
        let names = READ_ONLY_SANDBOX_AGENTS.iter().copied().chain(config.agents.keys().map(String::as_str));
        let agent_modes = names.map(|name| (name.to_string(), sandbox_mode(config, name))).collect();
        Shell::with_agent_modes((&config.sandbox).into(), agent_modes, ChildEnv::from_config(config))
    }

    fn with_agent_modes(policy: SandboxPolicy, mut agent_modes: BTreeMap<String, SandboxMode>, env: ChildEnv) -> Self {
        agent_modes.retain(|_, mode| *mode != policy.mode);
        Shell {
            state: Arc::new(ShellState { policy, env, agent_modes, sessions: session::ProcessSessions::default() }),
        }
    }

    /// The sandbox policy of agents without a mode of their own.
    pub fn policy(&self) -> &SandboxPolicy {
        &self.state.policy
    }

    /// The sandbox policy `agent`'s commands run under.
    pub fn policy_for(&self, agent: &str) -> SandboxPolicy {
        match self.state.agent_modes.get(agent) {
            Some(&mode) => SandboxPolicy { mode, ..self.state.policy },
            None => self.state.policy,
        }
    }

    /// The policy for work done before any agent asks (reading custom tools' specs runs their
    /// files' top-level code): the strictest mode of the agents whose commands may write
    /// (`read-only` only when no agent's may), so it is never looser than what some agent
    /// that can change files may do, whatever the default mode says.
    pub fn strictest_writing_policy(&self) -> SandboxPolicy {
        let rank = |mode: &&SandboxMode| match mode {
            SandboxMode::ReadOnly => 2,
            SandboxMode::WorkspaceWrite => 0,
            SandboxMode::FullAccess => 1,
        };
        let modes = self.state.agent_modes.values().chain([&self.state.policy.mode]);
        let mode = modes.min_by_key(rank).copied().unwrap_or(self.state.policy.mode);
        SandboxPolicy { mode, ..self.state.policy }
    }

    /// Whether every agent's commands run without a sandbox (`full-access`).
    fn never_sandboxed(&self) -> bool {
        self.state.policy.mode == SandboxMode::FullAccess
            && self.state.agent_modes.values().all(|m| *m == SandboxMode::FullAccess)
    }

    /// Registers `bash` and `bash_output` (replacing tools of those names).
    pub fn register(&self, registry: &mut Registry) {
        registry.register_builtin(Typed::new(Bash::new(self.clone())));
        registry.register_builtin(Typed::new(BashOutput::new(self.clone())));
    }

    /// How many background sessions are running.
    pub fn running_sessions(&self) -> usize {
        self.state.sessions.running()
    }

    /// Stops every background session (SIGTERM, then SIGKILL). Sessions are also killed when
    /// the last handle is dropped and when the process exits.
    pub async fn shutdown(&self) {
        self.state.sessions.shutdown().await;
    }
}

/// Kills (SIGKILL) every command any shell tool of this process still runs, sessions included.
/// Also registered with `atexit`, so `std::process::exit` does it too.
pub fn kill_all_commands() {
    process::kill_all();
}

/// The name of a common signal.
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSYS => "SIGSYS",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return None,
    })
}

/// `Exit code: N`, or the signal that killed the shell.
fn exit_line(exit: Exit) -> String {
    match (exit.code, exit.signal) {
        (Some(code), _) => format!("Exit code: {code}"),
        (None, Some(signal)) => match signal_name(signal) {
            Some(name) => format!("Killed by signal {signal} ({name})."),
            None => format!("Killed by signal {signal}."),
        },
        (None, None) => "Exit status unknown.".to_string(),
    }
}

/// Puts the collected output, a status line and notes together into the model's text, and
/// hands the spill file (if the output outgrew memory) to the chain's bound stage.
fn compose(output: SinkOutput, status: &str, notes: &[String]) -> ToolOutput {
    let mut text = output.text;
    if text.is_empty() {
        text.push_str("(no output)");
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push('\n');
    text.push_str(status);
    if let Some(error) = &output.spill_error {
        text.push_str(&format!("\n(The complete output could not be saved: {error}.)"));
    }
    for note in notes {
        text.push('\n');
        text.push_str(note);
    }
    ToolOutput { text, spill: output.spill, ..Default::default() }
}

/// Records `exit_code` (or `signal`) in the metadata.
fn exit_metadata(mut out: ToolOutput, exit: Option<Exit>) -> ToolOutput {
    if let Some(code) = exit.and_then(|e| e.code) {
        out = out.with_metadata("exit_code", code);
    }
    if let Some(signal) = exit.and_then(|e| e.signal) {
        out = out.with_metadata("signal", signal);
    }
    out
}
