//! `toolshed completions SHELL` and `toolshed man`: shell completion scripts and man pages,
//! generated from the same argument definitions that parse the command line, so they cannot
//! drift from it.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::CliError;

#[derive(Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    shell: Shell,
}

#[derive(Args)]
pub struct ManArgs {
    /// Write one page per command (toolshed.1, toolshed-run.1, ...) into this directory,
    /// creating it if needed, instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub const COMPLETIONS_EXAMPLES: &str = "Examples:
  toolshed completions bash > ~/.local/share/bash-completion/completions/toolshed
  toolshed completions zsh > ~/.zfunc/_toolshed      # with fpath+=(~/.zfunc) before compinit in ~/.zshrc
  toolshed completions fish > ~/.config/fish/completions/toolshed.fish
  toolshed completions powershell >> $PROFILE";

pub const MAN_EXAMPLES: &str = "Examples:
  toolshed man | man -l -
  toolshed man --out ~/.local/share/man/man1 && man toolshed-run";

/// Prints the completion script for `args.shell` on standard output.
pub fn completions(args: &CompletionsArgs) -> Result<ExitCode, CliError> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut crate::Cli::command(), "toolshed", &mut script);
    write_stdout(&script)
}

/// Prints the main man page, or writes every command's page into `--out`.
pub fn man(args: &ManArgs) -> Result<ExitCode, CliError> {
    let command = crate::Cli::command();
    let Some(dir) = &args.out else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command)
            .render(&mut page)
            .map_err(|e| CliError::failure(format!("cannot render the man page: {e}")))?;
        return write_stdout(&page);
    };
    std::fs::create_dir_all(dir).map_err(|e| CliError::usage(format!("--out {}: {e}", dir.display())))?;
    clap_mangen::generate_to(command, dir)
        .map_err(|e| CliError::failure(format!("cannot write the man pages into {}: {e}", dir.display())))?;
    crate::err(format_args!(
        "wrote the man pages into {}; `man toolshed` finds them when that directory is a man1 directory on the man path (~/.local/share/man/man1 is)",
        dir.display()
    ));
    Ok(ExitCode::SUCCESS)
}

fn write_stdout(bytes: &[u8]) -> Result<ExitCode, CliError> {
    let mut stdout = std::io::stdout().lock();
    crate::note_stdout(stdout.write_all(bytes).and_then(|()| stdout.flush()));
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command's `--help` ends with examples, the commands added later and the groups
    /// (`session`, `mcp`, ...) included.
    #[test]
    fn every_command_has_examples_in_its_help() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            let path = format!("{path} {}", command.get_name());
            let examples = command.get_after_help().is_some_and(|h| h.to_string().starts_with("Examples:"));
            if !examples {
                missing.push(path.clone());
            }
            for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
                walk(sub, &path, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&crate::Cli::command(), "", &mut missing);
        assert!(missing.is_empty(), "commands without examples in --help: {missing:?}");
    }
}
