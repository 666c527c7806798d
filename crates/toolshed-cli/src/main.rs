//! The `toolshed` command: a thin layer that parses arguments and wires the crates together.

// `print!`/`println!`/`eprint!`/`eprintln!` that never panic: a closed pipe (`toolshed run ... |
// head`) is noted (see `stdout_closed`) instead of aborting the process. Defined before the
// modules so that they use these.
macro_rules! print {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::note_stdout(write!(std::io::stdout(), $($arg)*));
    }};
}
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::note_stdout(writeln!(std::io::stdout(), $($arg)*));
    }};
}
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod acp;
mod agent;
mod approver;
mod call;
mod chat;
mod config;
mod doctor;
mod init;
mod manual;
mod mcp;
mod permission;
mod run;
mod session;
mod tools;
mod trust;
mod workspace;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A coding-agent tool runtime: file, search, patch and shell tools for language models.
#[derive(Parser)]
#[command(name = "toolshed", version, about, long_about = None, after_help = EXAMPLES)]
struct Cli {
    /// The worktree the tools are confined to (default: the git worktree containing the
    /// current directory, else the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// FILE: use it instead of ~/.config/toolshed/config.toml (the worktree's toolshed.toml is
    /// still read after it). KEY=VALUE: set one value after every file, KEY a dotted TOML path
    /// (session.max_steps, permission.bash."git *"), VALUE TOML or else a string. Repeatable;
    /// overrides apply in order.
    #[arg(short = 'c', long, global = true, value_name = "FILE|KEY=VALUE", value_parser = parse_config_arg)]
    config: Vec<ConfigArg>,
    #[command(subcommand)]
    command: Command,
}

/// One `--config`: a file, or (any value with `=`) an override.
#[derive(Clone)]
enum ConfigArg {
    File(PathBuf),
    Set(toolshed_core::config::Override),
}

fn parse_config_arg(value: &str) -> Result<ConfigArg, String> {
    if value.contains('=') {
        toolshed_core::config::Override::parse(value).map(ConfigArg::Set)
    } else {
        Ok(ConfigArg::File(value.into()))
    }
}

impl Cli {
    /// The config file `--config` names, and the overrides in order; two files are an error.
    fn config(&self) -> Result<(Option<&std::path::Path>, Vec<toolshed_core::config::Override>), CliError> {
        let mut file = None;
        let mut overrides = Vec::new();
        for arg in &self.config {
            match arg {
                ConfigArg::File(path) if file.is_some() => {
                    return Err(CliError::usage(format!(
                        "--config {} is a second config file; give one file (it replaces ~/.config/toolshed/config.toml), and set single values with --config KEY=VALUE",
                        path.display()
                    )));
                }
                ConfigArg::File(path) => file = Some(path.as_path()),
                ConfigArg::Set(o) => overrides.push(o.clone()),
            }
        }
        Ok((file, overrides))
    }
}

const EXAMPLES: &str = "Examples:
  toolshed tools --format table                     # what a model sees here
  toolshed call read '{\"file_path\": \"README.md\", \"limit\": 20}'
  toolshed run \"why does the test fail?\" -m openai/gpt-5.1
  toolshed chat
  toolshed COMMAND --help                            # each command's options and examples";

const CHAT_EXAMPLES: &str = "Examples:
  toolshed chat -m anthropic/claude-sonnet-4-5
  toolshed chat -a plan                              # start in plan mode
  toolshed chat -s ses_1a2354de654fac79410           # continue a stored session
  toolshed chat --plain < prompts.txt                # line mode: one prompt per line";

#[derive(Subcommand)]
enum Command {
    /// List the tools a model would see, in a provider's wire format if asked.
    #[command(after_help = tools::EXAMPLES)]
    Tools(tools::ToolsArgs),
    /// Run one tool through the full execution chain (validation, permissions, limits).
    #[command(after_help = call::EXAMPLES)]
    Call(call::CallArgs),
    /// Answer one prompt with the agent: the answer streams to stdout, tool calls to stderr.
    #[command(after_help = run::EXAMPLES)]
    Run(run::RunArgs),
    /// An interactive session with the agent (Ctrl-C interrupts a turn).
    #[command(after_help = CHAT_EXAMPLES)]
    Chat(chat::ChatArgs),
    /// List, show or export stored sessions; show or revert what they changed.
    #[command(
        subcommand,
        after_help = "Examples:\n  toolshed session list\n  toolshed session show ses_1a2354de654fac79410 | less\n  toolshed session diff ses_1a2354de654fac79410"
    )]
    Session(session::SessionCommand),
    /// Serve tools over MCP, or manage the MCP servers whose tools are imported.
    #[command(
        subcommand,
        after_help = "Examples:\n  toolshed mcp serve\n  toolshed mcp list\n  toolshed mcp import ~/.cursor/mcp.json"
    )]
    Mcp(mcp::McpCommand),
    /// Inspect permission rules.
    #[command(subcommand, after_help = "Examples:\n  toolshed permission explain bash '{\"command\": \"git push\"}'")]
    Permission(permission::PermissionCommand),
    /// Check what works in this worktree and why not: the model answers, MCP servers start,
    /// custom tools load, websearch answers; the sandbox, skills, instructions, language servers.
    #[command(
        after_help = "Examples:\n  toolshed doctor\n  toolshed doctor --root ../other-checkout\n  toolshed doctor --json | jq -r '.sections[] | select(.status == \"problem\") | .name'"
    )]
    Doctor(doctor::DoctorArgs),
    /// Serve the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, Neovim).
    #[command(after_help = acp::EXAMPLES)]
    Acp(acp::AcpArgs),
    /// Print the config file's JSON Schema, or the effective configuration and where each value
    /// came from.
    #[command(
        subcommand,
        after_help = "Examples:\n  toolshed config show\n  toolshed config schema > toolshed.schema.json"
    )]
    Config(config::ConfigCommand),
    /// Write a commented toolshed.toml for the worktree, and the schema editors check it with.
    #[command(after_help = init::EXAMPLES)]
    Init(init::InitArgs),
    /// Accept the worktree's toolshed.toml and custom tools as they are now, after seeing what
    /// changed: until then the version last accepted applies (a model cannot loosen its limits).
    #[command(after_help = trust::EXAMPLES)]
    Trust(trust::TrustArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    #[command(after_help = manual::COMPLETIONS_EXAMPLES)]
    Completions(manual::CompletionsArgs),
    /// Print the man page (roff), or write one page per command into a directory.
    #[command(after_help = manual::MAN_EXAMPLES)]
    Man(manual::ManArgs),
}

/// A command's failure: the message and the exit code (1 failure, 2 usage or configuration).
#[derive(Debug)]
pub struct CliError {
    code: u8,
    message: String,
}

impl CliError {
    /// What went wrong, for people.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// A usage or configuration error (exit code 2).
    pub fn usage(message: impl std::fmt::Display) -> Self {
        CliError { code: 2, message: message.to_string() }
    }

    /// A runtime failure (exit code 1).
    pub fn failure(message: impl std::fmt::Display) -> Self {
        CliError { code: 1, message: message.to_string() }
    }
}

/// Set once standard output is a closed pipe: whoever read it has gone.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes the outcome of a write to standard output.
pub fn note_stdout(written: std::io::Result<()>) {
    if written.is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) {
        STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether standard output turned out to be a closed pipe.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Resolves when the command should stop what it is doing: Ctrl-C (SIGINT), or
/// [`terminated_or_unread`].
pub async fn stop_requested() {
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated_or_unread() => {}
    }
}

/// Resolves on SIGTERM (what `timeout`, `docker stop` and service managers send), SIGHUP, or
/// once standard output turns out to be closed by its reader.
pub async fn terminated_or_unread() {
    let closed = async {
        while !stdout_closed() {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    };
    // SIGHUP too (the terminal closed, or a service manager's stop): without a handler it ends
    // the process at once, before what a session left of protected paths is removed.
    #[cfg(unix)]
    let term = async {
        use tokio::signal::unix::{SignalKind, signal};
        let wait = |kind: SignalKind| async move {
            match signal(kind) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending().await,
            }
        };
        tokio::select! {
            () = wait(SignalKind::terminate()) => {}
            () = wait(SignalKind::hangup()) => {}
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = term => {}
        () = closed => {}
    }
}

/// Prints a line to standard output; a closed pipe (`toolshed ... | head`) is not an error. On
/// a terminal, control sequences in the text are shown as visible escapes
/// ([`toolshed_core::terminal::visible`]): text from models, tools and servers must not drive
/// the terminal. JSON goes through [`out_exact`].
pub fn out(text: impl std::fmt::Display) {
    use std::io::Write;
    let text = text.to_string();
    let text = if stdout_is_terminal() { toolshed_core::terminal::visible(&text) } else { text.as_str().into() };
    note_stdout(writeln!(std::io::stdout().lock(), "{text}"));
}

/// Prints a line to standard output exactly as given (JSON, which escapes control characters
/// itself).
pub fn out_exact(text: impl std::fmt::Display) {
    use std::io::Write;
    note_stdout(writeln!(std::io::stdout().lock(), "{text}"));
}

/// Prints a line to standard error, ignoring a closed pipe; on a terminal, with control
/// sequences made visible as [`out`] does.
pub fn err(text: impl std::fmt::Display) {
    use std::io::Write;
    let text = text.to_string();
    let text = if stderr_is_terminal() { toolshed_core::terminal::visible(&text) } else { text.as_str().into() };
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Whether standard output is a terminal (asked once).
pub fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal;
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::stdout().is_terminal())
}

/// Whether standard error is a terminal (asked once).
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TERMINAL.get_or_init(|| std::io::stderr().is_terminal())
}

/// `acp` returns before the worktree is opened; reaching the dispatch with it is a bug, told
/// as a failure rather than a panic.
fn unreachable_acp() -> Result<ExitCode, CliError> {
    Err(CliError::failure("internal error: `acp` reached the worktree dispatch"))
}

fn main() -> ExitCode {
    // Children get the environment minus its secrets; they must not read ours from /proc.
    toolshed_core::env::hide_own_environment();
    let cli = Cli::parse();
    // What is generated from the argument definitions needs no worktree and no config.
    match &cli.command {
        Command::Completions(args) => return finish(manual::completions(args)),
        Command::Man(args) => return finish(manual::man(args)),
        _ => {}
    }
    let (config_file, overrides) = match cli.config() {
        Ok((file, overrides)) => (file.map(std::path::Path::to_path_buf), overrides),
        Err(e) => return finish(Err(e)),
    };
    // Each ACP session opens the worktree its editor names.
    if matches!(cli.command, Command::Acp(_)) {
        let Command::Acp(args) = cli.command else { return finish(unreachable_acp()) };
        return finish(acp::run(args, config_file.as_deref(), overrides));
    }
    // Neither needs the tools: they work while a custom tool or the config is broken.
    match &cli.command {
        Command::Config(cmd) => {
            return finish(config::run(cli.root.as_deref(), config_file.as_deref(), &overrides, cmd));
        }
        Command::Init(args) => return finish(init::run(cli.root.as_deref(), args)),
        Command::Trust(args) => return finish(trust::run(cli.root.as_deref(), config_file.as_deref(), args)),
        _ => {}
    }
    // A person at a terminal about to work with the agent may accept the project's files now.
    if matches!(cli.command, Command::Run(_) | Command::Chat(_))
        && let Err(e) = trust::offer(cli.root.as_deref(), config_file.as_deref())
    {
        return finish(Err(e));
    }
    // Only what the command needs is loaded: `call` never starts the JS host for another tool.
    let scope = match &cli.command {
        Command::Tools(args) => args.scope(),
        Command::Call(args) => args.scope(),
        Command::Permission(cmd) => cmd.scope(),
        Command::Run(_) | Command::Chat(_) => toolshed_tools::custom::Scope::All,
        Command::Session(cmd) => cmd.scope(),
        Command::Mcp(_) => toolshed_tools::custom::Scope::All,
        // Loaded afresh: doctor checks that each custom tool still loads.
        Command::Doctor(_) => toolshed_tools::custom::Scope::Fresh,
        Command::Completions(_)
        | Command::Man(_)
        | Command::Config(_)
        | Command::Init(_)
        | Command::Trust(_)
        | Command::Acp(_) => toolshed_tools::custom::Scope::Tool(String::new()),
    };
    let result = workspace::Workspace::open_with(cli.root.as_deref(), config_file.as_deref(), &overrides, &scope)
        .map_err(CliError::from)
        .inspect(|ws| {
            for note in ws.trust_notices() {
                err(format_args!("toolshed: {note}"));
            }
        })
        .and_then(|ws| match cli.command {
            Command::Tools(args) => tools::run(&ws, args),
            Command::Call(args) => call::run(&ws, args),
            Command::Run(args) => run::run(&ws, args),
            Command::Chat(args) => chat::run(&ws, args),
            Command::Session(cmd) => session::run(&ws, cmd),
            Command::Permission(cmd) => permission::run(&ws, cmd),
            Command::Mcp(cmd) => mcp::run(&ws, cmd),
            Command::Doctor(args) => doctor::run(&ws, &args),
            Command::Completions(args) => manual::completions(&args),
            Command::Man(args) => manual::man(&args),
            Command::Acp(_) => unreachable_acp(),
            Command::Config(cmd) => config::run(Some(&ws.root), config_file.as_deref(), &overrides, &cmd),
            Command::Init(args) => init::run(Some(&ws.root), &args),
            Command::Trust(args) => trust::run(Some(&ws.root), config_file.as_deref(), &args),
        });
    finish(result)
}

/// The exit code of a command's outcome; a failure's message goes to standard error.
fn finish(result: Result<ExitCode, CliError>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            err(format_args!("toolshed: {}", e.message));
            ExitCode::from(e.code)
        }
    }
}
