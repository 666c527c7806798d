//! `toolshed trust`: a person accepts the worktree's `toolshed.toml` and custom tool directories
//! as they are now, after seeing what changed since they last did (see `toolshed_core::trust`).

use std::io::{BufRead as _, IsTerminal as _, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::Args;
use toolshed_core::trust::{self, Acceptance, Snapshot, State};

use crate::CliError;

#[derive(Args)]
pub struct TrustArgs {
    /// Accept without asking (scripts; read what `toolshed trust` shows first).
    #[arg(short, long, conflicts_with = "forget")]
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
  toolshed --root vendor/lib trust   # a repository inside an accepted project, as a project of its own

What is accepted: the worktree's toolshed.toml, and its custom tool directories (.toolshed/tools,
.opencode/tool, .opencode/tools) from the worktree root down to the current directory. Until you
accept a file, toolshed applies the version you last accepted (or none), so a file the model or
a program it started left behind cannot widen the sandbox, loosen the rules or add tools.
TOOLSHED_TRUST_PROJECT=1 applies them as they are (CI over repositories you control).";

pub fn run(root: Option<&Path>, config_file: Option<&Path>, args: &TrustArgs) -> Result<ExitCode, CliError> {
    let explicit_root = root.is_some();
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
    let mut review = review(&acceptance, &root, &cwd, config_file);
    for problem in &review.refused {
        crate::err(format_args!("toolshed: {problem}"));
    }
    // A directory inside an accepted project becomes a project of its own once it has a record
    // (`trust::find_worktree`): say what that gives up, and ask, even with nothing to show.
    let new = !trust::record_file(&data_dir, &root).is_file();
    if new && let Some(outer) = trust::enclosing_project(&data_dir, &root) {
        let warning = format!(
            "{} lies in {}, a project you accepted. Accepting it as a project of its own means that toolshed started in it works there alone: the settings, rules and protected paths (its .git) of {} no longer apply there. Do this only for a repository you made or cloned yourself: a command may have created it.\n\n",
            root.display(),
            outer.display(),
            outer.display()
        );
        review.shown.insert_str(0, &toolshed_core::terminal::visible(&warning));
        if review.pending.is_empty() && review.refused.is_empty() {
            crate::out_exact(review.shown.trim_end());
            if !args.yes && !confirm(explicit_root, &root)? {
                crate::out("Nothing was accepted.");
                return Ok(ExitCode::from(1));
            }
        }
    }
    if review.pending.is_empty() {
        if review.refused.is_empty() {
            // Nothing to show, but a record all the same: the directory is a project someone
            // accepted, so it is its own worktree even inside another (`trust::find_worktree`).
            if new {
                trust::accept_snapshots(&data_dir, &root, &[]).map_err(CliError::failure)?;
            }
            crate::out(format_args!(
                "Everything {} sets is accepted as it is (toolshed.toml and the tool directories){}.",
                root.display(),
                if new { "; toolshed now takes it as a project of its own" } else { "" }
            ));
            return Ok(ExitCode::SUCCESS);
        }
        return Ok(ExitCode::from(1));
    }
    crate::out_exact(review.shown.trim_end());
    if !args.yes && !confirm(explicit_root, &root)? {
        crate::out("Nothing was accepted; the versions accepted before (if any) still apply.");
        return Ok(ExitCode::from(1));
    }
    crate::out(accept(&data_dir, &root, &review.pending)?);
    Ok(if review.refused.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Asks on the terminal whether to accept what was shown; without one, the failure that says
/// what to run instead.
fn confirm(explicit_root: bool, root: &Path) -> Result<bool, CliError> {
    if !std::io::stdin().is_terminal() {
        return Err(CliError::failure(format!(
            "nothing was accepted: there is no terminal to ask on. Read the above, then run `{}` to accept it.",
            command_for(explicit_root.then_some(root), "trust --yes")
        )));
    }
    Ok(ask(&mut std::io::stdout()))
}

/// Before `chat` or `run` opens the worktree, on a terminal: shows what is new or changed since
/// it was accepted and asks whether to accept it now (on standard error, so `run`'s answer on
/// standard output stays clean). Without a terminal, or when everything is accepted, nothing.
pub fn offer(root: Option<&Path>, config_file: Option<&Path>) -> Result<(), CliError> {
    if !std::io::stdin().is_terminal() || !crate::stderr_is_terminal() {
        return Ok(());
    }
    let Ok((root, cwd)) = toolshed_runtime::locate(root) else { return Ok(()) };
    let data_dir = toolshed_core::paths::data_dir();
    let acceptance = Acceptance::load(&data_dir, &root);
    if acceptance.is_everything() {
        return Ok(());
    }
    // What cannot be accepted is reported by the notices the worktree prints.
    let review = review(&acceptance, &root, &cwd, config_file);
    if review.pending.is_empty() {
        return Ok(());
    }
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "This worktree's own settings or tools are not what you last accepted:\n");
    let _ = stderr.write_all(review.shown.as_bytes());
    let yes = ask(&mut stderr);
    drop(stderr);
    if yes {
        crate::err(accept(&data_dir, &root, &review.pending)?);
    } else {
        crate::err("Not accepted: the versions accepted before (if any) apply; `toolshed trust` accepts them later.");
    }
    Ok(())
}

/// One item that differs from what was accepted.
struct Pending {
    snapshot: Snapshot,
    /// One of the user's own items (recorded apart, by absolute path).
    is_user: bool,
    /// What to call it for people.
    shown: std::path::PathBuf,
}

/// What differs from the record, read once: what is shown is what is accepted.
struct Review {
    /// The items that differ, exactly as read.
    pending: Vec<Pending>,
    /// What to show a person: every difference in full, control characters made visible.
    shown: String,
    /// Items that cannot be accepted, and why (for people).
    refused: Vec<String>,
}

fn review(acceptance: &Acceptance, root: &Path, cwd: &Path, config_file: Option<&Path>) -> Review {
    let mut review = Review { pending: Vec::new(), shown: String::new(), refused: Vec::new() };
    let project = trust::items(root, cwd).into_iter().map(|item| (root.join(&item.path), item, false));
    // The user's own files that lie where a command may write (a dotfiles checkout).
    // `--config FILE` stands in for the user's file, and is theirs as much.
    let user_config = match config_file {
        Some(file) => Some(
            std::path::absolute(file)
                .map(|p| toolshed_core::paths::lexical_normalise(&p))
                .unwrap_or_else(|_| file.to_path_buf()),
        ),
        None => toolshed_core::paths::config_dir().map(|d| d.join("config.toml")),
    };
    let user = trust::user_items(user_config.as_deref()).into_iter().map(|(item, shown)| (shown, item, true));
    for (shown_path, item, is_user) in project.chain(user) {
        let base = if is_user { Path::new("/") } else { root };
        let now = match trust::snapshot(base, &item) {
            Ok(now) => now,
            Err(why) => {
                review.refused.push(format!("{} cannot be accepted: {why}.", shown_path.display()));
                continue;
            }
        };
        let state = if is_user { acceptance.compare_user(&now) } else { acceptance.compare(&now) };
        let what = match state {
            State::Accepted | State::Unreadable(_) => continue,
            State::New if is_user => "yours, but where a command may write: never accepted",
            State::New => "new: never accepted",
            State::Changed => "changed since you accepted it",
            State::Removed if item.is_config => "removed since you accepted it (the accepted version still applies)",
            State::Removed => "removed since you accepted it",
        };
        // A config file that does not load would stop every command once accepted.
        if item.is_config
            && let Some(bytes) = now.files.get(&item.path)
        {
            let text = String::from_utf8_lossy(bytes);
            if let Err(e) = toolshed_core::config::Config::default().merge_str(&shown_path, &text) {
                review
                    .refused
                    .push(format!("{} cannot be accepted as it is: {e}; fix it first.", shown_path.display()));
                continue;
            }
        }
        review.shown.push_str(&format!("{} — {what}\n", shown_path.display()));
        let changes = if is_user { acceptance.changes_user(&now) } else { acceptance.changes(&now) };
        for change in changes {
            let before = change.before.as_deref().map(readable).unwrap_or_default();
            let after = change.after.as_deref().map(readable).unwrap_or_default();
            review.shown.push_str(toolshed_tools::fs::full_diff(&before, &after, &change.path).trim_end());
            review.shown.push('\n');
        }
        review.shown.push('\n');
        review.pending.push(Pending { snapshot: now, is_user, shown: shown_path });
    }
    // Escaped wherever it goes: a pipe may end at a terminal too.
    review.shown = toolshed_core::terminal::visible(&review.shown).into_owned();
    review
}

/// `bytes` as text a person can read: bytes that are not UTF-8 as `\xNN`, so two contents that
/// differ never look the same.
fn readable(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Asks on `out` and reads the answer from standard input: whether it was yes.
fn ask(out: &mut dyn Write) -> bool {
    let _ = write!(out, "Accept these as they are now? [y/N] ");
    let _ = out.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES")
}

/// Records `pending`, exactly as shown, as accepted; what to tell the person.
fn accept(data_dir: &Path, root: &Path, pending: &[Pending]) -> Result<String, CliError> {
    let (user, project): (Vec<&Pending>, Vec<&Pending>) = pending.iter().partition(|p| p.is_user);
    let snapshots = |of: &[&Pending]| of.iter().map(|p| p.snapshot.clone()).collect::<Vec<Snapshot>>();
    if !project.is_empty() {
        trust::accept_snapshots(data_dir, root, &snapshots(&project)).map_err(CliError::failure)?;
    }
    if !user.is_empty() {
        trust::accept_user_snapshots(data_dir, &snapshots(&user)).map_err(CliError::failure)?;
    }
    let names: Vec<String> = pending
        .iter()
        .map(|p| if p.is_user { p.shown.display().to_string() } else { p.snapshot.item.path.clone() })
        .collect();
    Ok(format!("Accepted as they are now: {}.", names.join(", ")))
}

/// The command line `toolshed [--root ROOT] ARGS`, with the root quoted for a POSIX shell where
/// it needs it, for a person to copy.
pub fn command_for(root: Option<&Path>, args: &str) -> String {
    match root {
        Some(root) => {
            format!("toolshed --root {} {args}", toolshed_core::terminal::shell_word(&root.to_string_lossy()))
        }
        None => format!("toolshed {args}"),
    }
}
