//! `toolshed doctor`: what works in this worktree and what does not, and why.
//!
//! Each check is an independent function from the workspace to a [`Report`]; adding a section
//! means adding one entry to [`CHECKS`]. The command prints every report and exits with 1 when
//! any check found a problem, 0 otherwise (a feature that is simply not configured is `off`,
//! not a problem). What can be tried is tried, not assumed from the config: each configured model
//! answers one short request, each MCP server is started and lists its tools, custom tools are
//! loaded afresh, and the search backend answers one query.

use std::fmt;
use std::process::ExitCode;
use std::time::{Duration, Instant};

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
    Check { name: "project", run: project },
    Check { name: "model", run: model },
    Check { name: "mcp", run: mcp },
    Check { name: "custom tools", run: custom_tools },
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

#[derive(clap::Args)]
pub struct DoctorArgs {
    /// Print one JSON object: `sections`, each with `name`, `status` (ok, off, warning,
    /// problem) and `lines`.
    #[arg(long)]
    json: bool,
}

pub fn run(ws: &Workspace, args: &DoctorArgs) -> Result<ExitCode, CliError> {
    let mut worst_is_problem = false;
    // Some checks wait on a server (a model answers within a minute at most): each section is
    // printed as soon as it is known, and a terminal says which check is running meanwhile.
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut sections = Vec::new();
    for check in CHECKS {
        if terminal {
            eprint!("checking {}…", check.name);
        }
        let report = (check.run)(ws);
        if terminal {
            eprint!("\r\x1b[2K");
        }
        worst_is_problem |= report.status == Status::Problem;
        if args.json {
            let lines: Vec<&str> = report.lines.iter().flat_map(|l| l.lines()).collect();
            sections.push(serde_json::json!({"name": check.name, "status": report.status.to_string(), "lines": lines}));
            continue;
        }
        let mut out = format!("{}: {}", check.name, report.status);
        for line in &report.lines {
            for part in line.lines() {
                out.push_str(&format!("\n  {part}"));
            }
        }
        crate::out(out);
    }
    if args.json {
        crate::out_exact(serde_json::json!({"sections": sections}));
    }
    Ok(if worst_is_problem { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// How long a model may take to answer the probe.
const MODEL_PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether the worktree's own toolshed.toml and tool directories apply as they are on disk.
fn project(ws: &Workspace) -> Report {
    let notes = ws.trust_notices();
    if !notes.is_empty() {
        return Report::new(Status::Warning, notes);
    }
    let has_file = ws.root.join(toolshed_core::config::PROJECT_FILE).exists();
    let dirs = toolshed_core::trust::items(&ws.root, &ws.cwd)
        .into_iter()
        .filter(|item| !item.is_config && ws.root.join(&item.path).is_dir())
        .count();
    if !has_file && dirs == 0 {
        return Report::new(Status::Off, ["no toolshed.toml or custom tool directory in the worktree".to_string()]);
    }
    if std::env::var_os(toolshed_core::trust::ENV).is_some_and(|v| v == "1") {
        return Report::new(
            Status::Warning,
            [format!(
                "{}=1: toolshed.toml and the tool directories apply as they are, whoever wrote them",
                toolshed_core::trust::ENV
            )],
        );
    }
    Report::new(Status::Ok, ["toolshed.toml and the tool directories apply as you accepted them".to_string()])
}

/// The default model and every agent's own model answer one short request, sent the way `run`
/// sends it (same provider, URL, key and wire format), without retries.
fn model(ws: &Workspace) -> Report {
    let mut models: Vec<(String, String)> = Vec::new();
    if let Some(id) = &ws.config.model {
        models.push((id.clone(), "model".to_string()));
    }
    for (name, agent) in &ws.config.agents {
        if let Some(id) = &agent.model {
            match models.iter_mut().find(|(m, _)| m == id) {
                Some((_, users)) => users.push_str(&format!(", [agent.{name}]")),
                None => models.push((id.clone(), format!("[agent.{name}]"))),
            }
        }
    }
    if models.is_empty() {
        let why = match ws.unapplied_project_hint() {
            Some(hint) => format!("no model configured in the settings that apply: {hint}"),
            None => "no model configured: set model = \"PROVIDER/MODEL\" in toolshed.toml (`toolshed init` writes an example), or give `run` and `chat` -m".to_string(),
        };
        return Report::new(Status::Off, [why]);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return Report::new(Status::Problem, [format!("cannot start the async runtime: {e}")]),
    };
    let mut status = Status::Ok;
    let mut lines = Vec::new();
    for (id, users) in &models {
        match runtime.block_on(probe_model(&ws.config, id)) {
            Ok(answered) => lines.push(format!("{id} ({users}): {answered}")),
            Err(error) => {
                status = Status::Problem;
                lines.push(format!("{id} ({users}): {error}"));
            }
        }
    }
    Report::new(status, lines)
}

/// One short request to `id`: where it went and how long the answer took, or the exact error.
async fn probe_model(config: &toolshed_core::config::Config, id: &str) -> Result<String, String> {
    use toolshed_core::config::ProviderKind;
    use toolshed_llm::client::{Client, RetryPolicy};
    use toolshed_llm::provider::{self, ModelRef};
    use toolshed_llm::types::{Message, Request};
    let model = ModelRef::parse(id).map_err(|e| e.to_string())?;
    let settings = provider::resolve(config, &model, &provider::process_env).map_err(|e| e.to_string())?;
    let (kind, url) = (settings.kind, settings.base_url.clone());
    let client = Client::new(settings)
        .map_err(|e| e.to_string())?
        .with_retry(RetryPolicy { max_retries: 0, ..RetryPolicy::default() })
        .with_idle_timeout(MODEL_PROBE_TIMEOUT);
    let request = Request {
        model: model.model.clone(),
        system: String::new(),
        messages: vec![Message::user("Reply with the single word OK.")],
        tools: Vec::new(),
        // Anthropic requires a cap; OpenAI's newer models refuse `max_tokens` on Chat Completions.
        max_tokens: (kind == ProviderKind::Anthropic).then_some(16),
    };
    let started = Instant::now();
    let answer = async {
        let stream = client.stream(&request).await?;
        toolshed_llm::collect(stream, |_| {}).await
    };
    tokio::time::timeout(MODEL_PROBE_TIMEOUT, answer)
        .await
        .map_err(|_| format!("no answer from {url} within {} s", MODEL_PROBE_TIMEOUT.as_secs()))?
        .map_err(|e| e.to_string())?;
    let kind = match kind {
        ProviderKind::OpenaiChat => "openai-chat",
        ProviderKind::OpenaiResponses => "openai-responses",
        ProviderKind::Anthropic => "anthropic",
    };
    Ok(format!("answers ({kind} at {url}, {} ms)", started.elapsed().as_millis()))
}

/// Each configured MCP server is started (or reached) and lists its tools.
fn mcp(ws: &Workspace) -> Report {
    use toolshed_mcp::{McpClients, State};
    if ws.config.mcp.is_empty() {
        return Report::new(
            Status::Off,
            ["no MCP servers configured; add [mcp.NAME] tables to toolshed.toml, or run `toolshed mcp import FILE`"
                .to_string()],
        );
    }
    let runtime = match toolshed_runtime::mcp::io_runtime() {
        Ok(runtime) => runtime,
        Err(e) => return Report::new(Status::Problem, [e.to_string()]),
    };
    let options = toolshed_runtime::mcp::options(ws);
    let clients = runtime.block_on(McpClients::connect(ws.config.mcp.iter(), &options));
    let statuses = clients.statuses();
    runtime.block_on(clients.shutdown());
    let mut status = Status::Off;
    let mut lines = Vec::new();
    for s in &statuses {
        match &s.state {
            State::Connected => {
                if status == Status::Off {
                    status = Status::Ok;
                }
                lines.push(format!("{} ({}): {} tool(s): {}", s.name, s.transport, s.tools.len(), s.tools.join(", ")));
            }
            State::Disabled => lines.push(format!("{} ({}): disabled (enabled = false)", s.name, s.transport)),
            State::Unavailable(reason) => {
                status = Status::Problem;
                lines.push(format!("{} ({}): does not start: {reason}", s.name, s.transport));
            }
        }
        for (tool, why) in &s.skipped {
            if status == Status::Ok {
                status = Status::Warning;
            }
            lines.push(format!("  tool `{tool}` left out: {why}"));
        }
    }
    Report::new(status, lines)
}

/// Every custom tool is loaded afresh (OpenCode tool files imported again, not read from the
/// cache), as `toolshed tools --check` does.
fn custom_tools(ws: &Workspace) -> Report {
    let shown = |file: &std::path::Path| file.strip_prefix(&ws.root).unwrap_or(file).display().to_string();
    let mut lines: Vec<String> =
        ws.custom.tools().map(|(spec, file)| format!("{}: {}", spec.name, shown(file))).collect();
    // A tool whose file has a problem is said once, by the problem (it names the line).
    let unexplained = ws.custom.unavailable().iter().filter(|u| !ws.custom.problems().iter().any(|p| p.file == u.file));
    for u in unexplained {
        lines.push(format!("{} ({}) is unavailable: {}", u.name, shown(&u.file), u.reason));
    }
    for problem in ws.custom.problems() {
        lines.push(format!("broken, left out: {problem}"));
    }
    for (dir, _) in ws.custom.not_accepted() {
        lines.push(format!("not loaded, not accepted as it is (see project): {}", shown(dir)));
    }
    let status = if !ws.custom.problems().is_empty() || !ws.custom.unavailable().is_empty() {
        Status::Problem
    } else if !ws.custom.not_accepted().is_empty() {
        Status::Warning
    } else if lines.is_empty() {
        lines.push("no custom tools in .toolshed/tools, .opencode/tool(s) or the user config directory".to_string());
        Status::Off
    } else {
        Status::Ok
    };
    Report::new(status, lines)
}

/// The query the websearch probe sends.
const PROBE_QUERY: &str = "rust programming language";

fn websearch(ws: &Workspace) -> Report {
    match web::search::backend(ws.config.websearch.as_ref()) {
        Ok(backend) => {
            let offered = format!("websearch is offered, using the {} backend at {}", backend.name(), backend.url());
            let probed = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the async runtime: {e}"))
                .and_then(|runtime| runtime.block_on(web::search::probe(&backend, PROBE_QUERY)));
            match probed {
                Ok(n) => Report::new(
                    Status::Ok,
                    [offered, format!("a test query (\"{PROBE_QUERY}\") returned {n} result(s)")],
                ),
                Err(why) => Report::new(Status::Problem, [offered, format!("but a test query failed: {why}")]),
            }
        }
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
    let (data, readable) = sandbox::data_dir_report(&policy, &ws.root).map_or((None, false), |(l, w)| (Some(l), w));
    let (sockets, reachable) = sandbox::sockets_report(&policy, &ws.root).map_or((None, false), |(l, w)| (Some(l), w));
    let (home, home_writable) = sandbox::home_report(&policy, &ws.root).map_or((None, false), |(l, w)| (Some(l), w));
    let warn = unprotected || readable || reachable || home_writable;
    let status = if warn && status == Status::Ok { Status::Warning } else { status };
    let mut lines = vec![line, protection];
    lines.extend(data);
    lines.extend(sockets);
    lines.extend(home);
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
