//! The `toolshed` command: a thin layer that parses arguments and wires the crates together.

mod approver;
mod call;
mod permission;
mod tools;
mod workspace;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A coding-agent tool runtime: file, search, patch and shell tools for language models.
#[derive(Parser)]
#[command(name = "toolshed", version, about, long_about = None)]
struct Cli {
    /// The worktree the tools are confined to (default: the git worktree containing the
    /// current directory, else the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Use this file instead of ~/.config/toolshed/config.toml (the worktree's toolshed.toml
    /// is still read after it).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the tools a model would see, in a provider's wire format if asked.
    Tools(tools::ToolsArgs),
    /// Run one tool through the full execution chain (validation, permissions, limits).
    Call(call::CallArgs),
    /// Inspect permission rules.
    #[command(subcommand)]
    Permission(permission::PermissionCommand),
}

/// A command's failure: the message and the exit code (1 failure, 2 usage or configuration).
#[derive(Debug)]
pub struct CliError {
    code: u8,
    message: String,
}

impl CliError {
    /// A usage or configuration error (exit code 2).
    pub fn usage(message: impl std::fmt::Display) -> Self {
        CliError { code: 2, message: message.to_string() }
    }

    /// A runtime failure (exit code 1).
    pub fn failure(message: impl std::fmt::Display) -> Self {
        CliError { code: 1, message: message.to_string() }
    }
}

/// Prints a line to standard output; a closed pipe (`toolshed ... | head`) is not an error.
pub fn out(text: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// Prints a line to standard error, ignoring a closed pipe.
pub fn err(text: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Only what the command needs is loaded: `call` never starts the JS host for another tool.
    let scope = match &cli.command {
        Command::Tools(args) => args.scope(),
        Command::Call(args) => args.scope(),
        Command::Permission(cmd) => cmd.scope(),
    };
    let result =
        workspace::Workspace::open(cli.root.as_deref(), cli.config.as_deref(), &scope).and_then(|ws| {
            match cli.command {
                Command::Tools(args) => tools::run(&ws, args),
                Command::Call(args) => call::run(&ws, args),
                Command::Permission(cmd) => permission::run(&ws, cmd),
            }
        });
    match result {
        Ok(code) => code,
        Err(e) => {
            err(format_args!("toolshed: {}", e.message));
            ExitCode::from(e.code)
        }
    }
}
