//! `toolshed doctor`: what works in this worktree and what does not, and why.
//!
//! Each check is an independent function from the workspace to a [`Report`]; adding a section
//! means adding one entry to [`CHECKS`]. The command prints every report and exits with 1 when
//! any check found a problem, 0 otherwise (a feature that is simply not configured is `off`,
//! not a problem).

use std::fmt;
use std::process::ExitCode;

use toolshed_agent::instructions;
use toolshed_tools::{skill, web};

use crate::CliError;
use crate::workspace::Workspace;

/// One section of the report.
pub struct Check {
    /// The section's name.
    pub name: &'static str,
    /// Inspects the workspace.
    pub run: fn(&Workspace) -> Report,
}

/// Every check, in the order printed.
pub const CHECKS: &[Check] = &[
    Check { name: "sandbox", run: sandbox },
    Check { name: "environment", run: environment },
    Check { name: "websearch", run: websearch },
    Check { name: "skills", run: skills },
    Check { name: "instructions", run: instructions },
    Check { name: "lsp", run: lsp },
];

/// How a section stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Working.
    Ok,
    /// Not configured or nothing to use; fine as it is.
    Off,
    /// Working, but something deserves a look.
    Warning,
    /// Configured but broken: the command exits with 1.
    Problem,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Off => "off",
            Status::Warning => "warning",
            Status::Problem => "problem",
        })
    }
}

/// What a check found: a status and lines explaining it.
pub struct Report {
    /// The overall status.
    pub status: Status,
    /// Explanations, one per line (may contain further indented lines).
    pub lines: Vec<String>,
}

impl Report {
    fn new(status: Status, lines: impl IntoIterator<Item = String>) -> Self {
        Report { status, lines: lines.into_iter().collect() }
    }
}

pub fn run(ws: &Workspace) -> Result<ExitCode, CliError> {
    let mut worst_is_problem = false;
    let mut out = String::new();
    for check in CHECKS {
        let report = (check.run)(ws);
        worst_is_problem |= report.status == Status::Problem;
        out.push_str(&format!("{}: {}\n", check.name, report.status));
        for line in &report.lines {
            for part in line.lines() {
                out.push_str(&format!("  {part}\n"));
            }
        }
    }
    crate::out(out.trim_end());
    Ok(if worst_is_problem { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn websearch(ws: &Workspace) -> Report {
    match web::search::backend(ws.config.websearch.as_ref()) {
        Ok(backend) => Report::new(
            Status::Ok,
            [format!("websearch is offered, using the {} backend at {}", backend.name(), backend.url())],
        ),
        Err(why) if ws.config.websearch.is_none() => Report::new(Status::Off, [why]),
        Err(why) => Report::new(Status::Problem, [format!("websearch is not offered: {why}")]),
    }
}

fn skills(ws: &Workspace) -> Report {
    let found = skill::discover(&ws.root, &ws.cwd);
    let mut lines = Vec::new();
    for s in &found.skills {
        lines.push(format!("{}: {}", s.name, s.file.display()));
    }
    for (hidden, by) in &found.shadowed {
        lines.push(format!("shadowed: {} ({}) is hidden by {}", hidden.name, hidden.file.display(), by.display()));
    }
    for warning in &found.warnings {
        lines.push(format!("loaded, but: {warning}"));
    }
    for problem in &found.problems {
        lines.push(format!("broken, left out: {problem}"));
    }
    let status = if !found.problems.is_empty() {
        Status::Problem
    } else if !found.shadowed.is_empty() || !found.warnings.is_empty() {
        Status::Warning
    } else if found.skills.is_empty() {
        Status::Off
    } else {
        Status::Ok
    };
    if found.skills.is_empty() && found.problems.is_empty() {
        lines.push("no skills found; looked in:".to_string());
        lines.extend(found.searched.iter().map(|d| format!("  {}", d.display())));
    }
    Report::new(status, lines)
}

fn instructions(ws: &Workspace) -> Report {
    let found = instructions::load(&ws.root, &ws.cwd);
    let mut lines: Vec<String> = found
        .files
        .iter()
        .map(|f| {
            let cut = if f.truncated { ", cut" } else { "" };
            format!("{} ({}, {} bytes{cut})", f.path.display(), f.scope.as_str(), f.text.len())
        })
        .collect();
    for (path, error) in &found.problems {
        lines.push(format!("cannot read {}: {error}", path.display()));
    }
    let status = if !found.problems.is_empty() {
        Status::Problem
    } else if found.files.is_empty() {
        lines.push(format!(
            "no AGENTS.md or CLAUDE.md from {} down to {}, nor in the user config directory",
            ws.root.display(),
            ws.cwd.display()
        ));
        Status::Off
    } else {
        Status::Ok
    };
    Report::new(status, lines)
}

/// Whether shell commands run sandboxed, as `[sandbox]` asks and the kernel allows.
#[cfg(unix)]
fn sandbox(ws: &Workspace) -> Report {
    use toolshed_tools::shell::{SandboxMode, SandboxPolicy, sandbox};
    let policy = SandboxPolicy::from(&ws.config.sandbox);
    let line = sandbox::report(&policy);
    let line = line.strip_prefix("sandbox: ").unwrap_or(&line).to_string();
    let status = match (policy.mode, sandbox::support().available()) {
        (SandboxMode::FullAccess, _) => Status::Off,
        (_, true) => Status::Ok,
        (_, false) if policy.allow_unsandboxed => Status::Warning,
        (_, false) => Status::Problem,
    };
    // Agents whose commands run in another mode than the global one (plan and explore are
    // read-only by default).
    let global = policy.mode;
    let per_agent: Vec<String> = ws
        .agents
        .all()
        .map(|a| (a.name.as_str(), toolshed_core::agents::sandbox_mode(&ws.config, &a.name)))
        .filter(|(_, mode)| *mode != global)
        .map(|(name, mode)| format!("{name}: {}", sandbox::mode_name(mode)))
        .collect();
    let (protection, unprotected) = sandbox::protection_report(&policy);
    let status = if unprotected && status == Status::Ok { Status::Warning } else { status };
    let mut lines = vec![line, protection];
    if !per_agent.is_empty() {
        lines.push(format!("per agent: {}", per_agent.join(", ")));
    }
    let git_dirs = sandbox::pin_git_dirs(&ws.root);
    if !git_dirs.is_empty() {
        let dirs: Vec<String> = git_dirs.iter().map(|d| d.display().to_string()).collect();
        lines.push(format!("git directories writable besides the worktree (validated): {}", dirs.join(", ")));
    }
    Report::new(status, lines)
}

/// Which of toolshed's environment variables its children do not get (names only, never
/// values), and what MCP servers get.
fn environment(ws: &Workspace) -> Report {
    let env = toolshed_core::env::ChildEnv::from_config(&ws.config);
    let withheld: Vec<String> = env.withheld().iter().map(|n| n.to_string_lossy().into_owned()).collect();
    let mut lines = Vec::new();
    if withheld.is_empty() {
        lines.push(
            "no variable with a secret-looking name is set, so commands, tools and servers get the whole environment"
                .to_string(),
        );
    } else {
        lines.push(format!(
            "withheld from shell commands, custom tools, the JS host and language servers (names only): {}",
            withheld.join(", ")
        ));
    }
    if !env.passed().is_empty() {
        lines.push(format!("passed anyway ([env] pass): {}", env.passed().join(", ")));
    }
    let mut mcp: Vec<&str> = toolshed_core::env::MCP_BASE.to_vec();
    mcp.extend(env.passed().iter().map(String::as_str));
    lines.push(format!("stdio MCP servers get only: {}, plus their own [mcp.NAME] env", mcp.join(", ")));
    Report::new(Status::Ok, lines)
}

#[cfg(not(unix))]
fn sandbox(_ws: &Workspace) -> Report {
    Report::new(Status::Off, ["the shell tools and their sandbox are available on Unix only".to_string()])
}

fn lsp(ws: &Workspace) -> Report {
    // Starts each server found (an `initialize` handshake, then shutdown) to see that it runs.
    let report = toolshed_tools::lsp::lsp_report(&ws.config, &ws.root);
    let status = if report.has_problem() {
        Status::Problem
    } else if report.has_warning() {
        Status::Warning
    } else if report.any_starts() {
        Status::Ok
    } else {
        Status::Off
    };
    Report::new(status, report.lines())
}
