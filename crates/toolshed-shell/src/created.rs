//! Protected paths a command created where the analysis could not see it (`f=toolshed.toml;
//! echo ... > $f`, `python3 -c 'open(".toolshed/tools/x.toml", "w")'`). The sandbox's read-only
//! binds cover only protected paths that exist when a command starts, and a `toolshed.toml` that
//! did not exist would rule the next call. So the protected locations that are missing before a
//! command runs are looked at again when it ends: any that appeared needs `protected` like any
//! other protected write, and without it the command's creation is removed (it did not exist
//! before, so nothing of the user's is lost).

use std::path::{Path, PathBuf};

use toolshed_core::ToolContext;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::protected;

/// The protected locations from the root down to the working directory and to `cwd` that do not
/// exist now and that the call may not write without asking: those to look at afterwards.
pub(super) fn absent(ctx: &ToolContext, cwd: &Path) -> Vec<PathBuf> {
    let writable = crate::sandbox::writable_roots(ctx.root(), &[]);
    // toolshed's own made first (they are not the command's to make).
    protected::prepare_user_dirs(&writable);
    let mut out: Vec<PathBuf> = Vec::new();
    for path in protected::locations(ctx.root(), ctx.cwd()).into_iter().chain(protected::locations(ctx.root(), cwd)) {
        if out.contains(&path) || std::fs::symlink_metadata(&path).is_ok() {
            continue;
        }
        let request = PermissionRequest::new(protected::PERMISSION, [pattern(&path, ctx.root())]);
        if !ctx.allows(&request) {
            out.push(path);
        }
    }
    // A repository made without a `.git` (a `HEAD` git would take).
    for path in protected::repository_heads_absent(ctx.root(), ctx.cwd())
        .into_iter()
        .chain(protected::repository_heads_absent(ctx.root(), cwd))
    {
        let request = PermissionRequest::new(protected::PERMISSION, [pattern(&path, ctx.root())]);
        if !out.contains(&path) && !ctx.allows(&request) {
            out.push(path);
        }
    }
    // The user's own directories (`~/.config/toolshed`, the OpenCode tool and skill
    // directories) that do not exist yet where a command may write (a session started in `~`):
    // one made would be the user's configuration in every later session.
    for path in protected::user_dirs(toolshed_core::paths::config_dir().as_deref()) {
        if !out.contains(&path)
            && std::fs::symlink_metadata(&path).is_err()
            && writable.iter().any(|w| path.starts_with(w))
        {
            out.push(path);
        }
    }
    // What in a tool cache makes later programs run other code and does not exist yet
    // (`~/.cargo/config.toml` with a `rustc-wrapper`, a gradle init script): the sandbox
    // cannot bind what is missing (review 20).
    for path in crate::sandbox::tool_dir_candidates() {
        if !out.contains(&path)
            && std::fs::symlink_metadata(&path).is_err()
            && writable.iter().any(|w| path.starts_with(w))
        {
            out.push(path);
        }
    }
    protected::where_they_are(out)
}

/// Checks which of the `absent` locations exist now. Those need `protected`: asked now; if it
/// is not granted they are removed. Returns the note for the model, if anything appeared.
pub(super) async fn settle(ctx: &ToolContext, absent: &[PathBuf], command: &str) -> Option<String> {
    let appeared: Vec<&PathBuf> = absent.iter().filter(|p| protected::appeared(p)).collect();
    if appeared.is_empty() {
        return None;
    }
    let patterns: Vec<String> = appeared.iter().map(|p| pattern(p, ctx.root())).collect();
    let request = PermissionRequest::new(protected::PERMISSION, patterns.clone())
        .with_always(patterns.clone())
        .with_metadata("command", command.to_string())
        .with_metadata(
            "reason",
            "the command created protected paths (toolshed's configuration, custom tools, skills or a git directory); keep them?",
        );
    let shown = patterns.join(", ");
    match ctx.ask(request).await {
        Ok(()) => Some(format!(
            "(The command created protected paths: {shown}; permission `protected` allowed keeping them.)"
        )),
        Err(refusal) => {
            let mut failed = Vec::new();
            for path in &appeared {
                // Never through a link the command made on the way (a directory of the worktree
                // swapped for a link to another repository): that link goes instead.
                let removed = toolshed_core::paths::remove_made(path);
                if let Err(e) = removed
                    && std::fs::symlink_metadata(path).is_ok()
                {
                    failed.push(format!("{} ({e})", path.display()));
                }
            }
            let reason = refusal.to_string();
            let reason = toolshed_core::exec::permit::refusal_facts(&reason).trim_end_matches('.');
            let mut note = format!(
                "(The command created protected paths that did not exist before: {shown}. Keeping them was not allowed ({reason}), so they were removed. Do not create them another way; tell the user what you wanted to add.)"
            );
            if !failed.is_empty() {
                note.push_str(&format!(" (These could not be removed: {}.)", failed.join(", ")));
            }
            Some(note)
        }
    }
}

/// The `protected` pattern of a location: the file itself, `<dir>/*` for the directories.
fn pattern(path: &Path, root: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path).display().to_string();
    // Files: toolshed's project file, `.gitmodules`, a repository's `HEAD` and `config`, and
    // whatever is there now as a file (a tool's configuration: `~/.cargo/config.toml`).
    let file = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| protected::FILES.contains(&n) || matches!(n, "HEAD" | "config"))
        || std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir());
    if file { rel } else { format!("{rel}/*") }
}
