//! `toolshed trust`: a person accepts the worktree's `toolshed.toml` and custom tool directories
//! as they are now, after seeing what changed since they last did (see `toolshed_core::trust`).

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use toolshed_core::trust::{self, Acceptance, Item, State};

use crate::CliError;

#[derive(Args)]
pub struct TrustArgs {
    /// Accept without asking (scripts; read what `toolshed trust` shows first).
    #[arg(long, conflicts_with = "forget")]
    yes: bool,
    /// Forget what was accepted for this worktree: its toolshed.toml and tools apply again only
    /// after the next `toolshed trust`.
    #[arg(long)]
    forget: bool,
}

pub const EXAMPLES: &str = "Examples:
  toolshed trust              # show what is new or changed since you last accepted, and ask
  toolshed trust --yes        # accept without a question (read it first)
  toolshed trust --forget     # stop applying this worktree's toolshed.toml and tools

What is accepted: the worktree's toolshed.toml, and its custom tool directories (.toolshed/tools,
.opencode/tool, .opencode/tools) from the worktree root down to the current directory. Until you
accept a file, toolshed applies the version you last accepted (or none), so a file the model or
a program it started left behind cannot widen the sandbox, loosen the rules or add tools.
TOOLSHED_TRUST_PROJECT=1 applies them as they are (CI over repositories you control).";

/// At most this many lines of difference per file.
const DIFF_LINES: usize = 200;

pub fn run(root: Option<&Path>, args: &TrustArgs) -> Result<ExitCode, CliError> {
    let (root, cwd) = toolshed_runtime::locate(root).map_err(CliError::from)?;
    let data_dir = toolshed_core::paths::data_dir();
    if args.forget {
        let had = trust::forget(&data_dir, &root)
            .map_err(|e| CliError::failure(format!("cannot remove the record of {}: {e}", root.display())))?;
        crate::out(if had {
            format!(
                "Forgot what was accepted for {}: its toolshed.toml and tools apply again after `toolshed trust`.",
                root.display()
            )
        } else {
            format!("Nothing was accepted for {}.", root.display())
        });
        return Ok(ExitCode::SUCCESS);
    }
    let acceptance = Acceptance::load(&data_dir, &root);
    let items = trust::items(&root, &cwd);
    let mut pending = Vec::new();
    for item in &items {
        match acceptance.state(item) {
            State::Accepted => {}
            State::Unreadable(why) => {
                return Err(CliError::failure(format!(
                    "{} cannot be accepted: {why}. Make it smaller (or readable), then run `toolshed trust` again.",
                    root.join(&item.path).display()
                )));
            }
            state => pending.push((item, state)),
        }
    }
    if pending.is_empty() {
        crate::out(format_args!(
            "Everything {} sets is accepted as it is (toolshed.toml and the tool directories).",
            root.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    for (item, state) in &pending {
        show(&acceptance, &root, item, state)?;
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(CliError::failure(
                "nothing was accepted: there is no terminal to ask on. Read the above, then run `toolshed trust --yes` to accept it.",
            ));
        }
        print!("Accept these as they are now? [y/N] ");
        let _ = std::io::stdout().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES") {
            crate::out("Nothing was accepted; the versions accepted before (if any) still apply.");
            return Ok(ExitCode::from(1));
        }
    }
    let accepted: Vec<Item> = pending.iter().map(|(item, _)| (*item).clone()).collect();
    trust::accept(&data_dir, &root, &accepted).map_err(CliError::failure)?;
    let names: Vec<&str> = accepted.iter().map(|i| i.path.as_str()).collect();
    crate::out(format_args!("Accepted as they are now: {}.", names.join(", ")));
    Ok(ExitCode::SUCCESS)
}

/// What changed in `item` since it was accepted: a heading, then each file's difference.
fn show(acceptance: &Acceptance, root: &Path, item: &Item, state: &State) -> Result<(), CliError> {
    let what = match state {
        State::New => "new: never accepted",
        State::Changed => "changed since you accepted it",
        State::Removed => "removed since you accepted it (the accepted version still applies)",
        State::Accepted | State::Unreadable(_) => return Ok(()),
    };
    crate::out(format_args!("{} — {what}", root.join(&item.path).display()));
    let changes = acceptance.changes(item).map_err(|why| CliError::failure(format!("{}: {why}", item.path)))?;
    for change in changes {
        let text =
            |b: &Option<Vec<u8>>| b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        let binary = |b: &Option<Vec<u8>>| b.as_ref().is_some_and(|b| b.contains(&0));
        if binary(&change.before) || binary(&change.after) {
            crate::out(format_args!("  {} (binary, {} bytes)", change.path, change.after.as_ref().map_or(0, Vec::len)));
            continue;
        }
        let diff =
            toolshed_tools::fs::unified_diff(&text(&change.before), &text(&change.after), &change.path, 3, DIFF_LINES);
        crate::out(diff.trim_end());
    }
    crate::out("");
    Ok(())
}
