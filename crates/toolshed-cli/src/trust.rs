//! `toolshed trust`: a person accepts the worktree's `toolshed.toml` and custom tool directories
//! as they are now, after seeing what changed since they last did (see `toolshed_core::trust`).

use std::io::{BufRead as _, IsTerminal as _};
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
    let pending = pending(&acceptance, &root, &cwd)?;
    if pending.is_empty() {
        crate::out(format_args!(
            "Everything {} sets is accepted as it is (toolshed.toml and the tool directories).",
            root.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    for (item, state) in &pending {
        crate::out(show(&acceptance, &root, item, state)?);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return Err(CliError::failure(
                "nothing was accepted: there is no terminal to ask on. Read the above, then run `toolshed trust --yes` to accept it.",
            ));
        }
        if !ask(&mut std::io::stdout()) {
            crate::out("Nothing was accepted; the versions accepted before (if any) still apply.");
            return Ok(ExitCode::from(1));
        }
    }
    crate::out(accept(&data_dir, &root, &pending)?);
    Ok(ExitCode::SUCCESS)
}

/// Before `chat` or `run` opens the worktree, on a terminal: shows what is new or changed since
/// it was accepted and asks whether to accept it now (on standard error, so `run`'s answer on
/// standard output stays clean). Without a terminal, or when everything is accepted, nothing.
pub fn offer(root: Option<&Path>) -> Result<(), CliError> {
    if !std::io::stdin().is_terminal() || !crate::stderr_is_terminal() {
        return Ok(());
    }
    let Ok((root, cwd)) = toolshed_runtime::locate(root) else { return Ok(()) };
    let data_dir = toolshed_core::paths::data_dir();
    let acceptance = Acceptance::load(&data_dir, &root);
    if acceptance.is_everything() {
        return Ok(());
    }
    // Something unreadable is reported by the notice the worktree prints; nothing to offer.
    let Ok(pending) = pending(&acceptance, &root, &cwd) else { return Ok(()) };
    if pending.is_empty() {
        return Ok(());
    }
    crate::err("This worktree's own settings or tools are not what you last accepted:\n");
    for (item, state) in &pending {
        crate::err(show(&acceptance, &root, item, state)?);
    }
    if ask(&mut std::io::stderr()) {
        crate::err(accept(&data_dir, &root, &pending)?);
    } else {
        crate::err("Not accepted: the versions accepted before (if any) apply; `toolshed trust` accepts them later.");
    }
    Ok(())
}

/// The items of `root` seen from `cwd` that differ from what was accepted.
fn pending(acceptance: &Acceptance, root: &Path, cwd: &Path) -> Result<Vec<(Item, State)>, CliError> {
    let mut pending = Vec::new();
    for item in trust::items(root, cwd) {
        match acceptance.state(&item) {
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
    Ok(pending)
}

/// Asks on `out` and reads the answer from standard input: whether it was yes.
fn ask(out: &mut dyn std::io::Write) -> bool {
    let _ = write!(out, "Accept these as they are now? [y/N] ");
    let _ = out.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES")
}

/// Records `pending` as accepted; what to tell the person.
fn accept(data_dir: &Path, root: &Path, pending: &[(Item, State)]) -> Result<String, CliError> {
    let items: Vec<Item> = pending.iter().map(|(item, _)| item.clone()).collect();
    trust::accept(data_dir, root, &items).map_err(CliError::failure)?;
    let names: Vec<&str> = items.iter().map(|i| i.path.as_str()).collect();
    Ok(format!("Accepted as they are now: {}.", names.join(", ")))
}

/// What changed in `item` since it was accepted: a heading, then each file's difference.
fn show(acceptance: &Acceptance, root: &Path, item: &Item, state: &State) -> Result<String, CliError> {
    let what = match state {
        State::New => "new: never accepted",
        State::Changed => "changed since you accepted it",
        State::Removed => "removed since you accepted it (the accepted version still applies)",
        State::Accepted | State::Unreadable(_) => return Ok(String::new()),
    };
    let mut out = format!("{} — {what}\n", root.join(&item.path).display());
    let changes = acceptance.changes(item).map_err(|why| CliError::failure(format!("{}: {why}", item.path)))?;
    for change in changes {
        let text =
            |b: &Option<Vec<u8>>| b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
        let binary = |b: &Option<Vec<u8>>| b.as_ref().is_some_and(|b| b.contains(&0));
        if binary(&change.before) || binary(&change.after) {
            let size = change.after.as_ref().map_or(0, Vec::len);
            out.push_str(&format!("  {} (binary, {size} bytes)\n", change.path));
            continue;
        }
        let diff =
            toolshed_tools::fs::unified_diff(&text(&change.before), &text(&change.after), &change.path, 3, DIFF_LINES);
        out.push_str(diff.trim_end());
        out.push('\n');
    }
    Ok(out)
}
