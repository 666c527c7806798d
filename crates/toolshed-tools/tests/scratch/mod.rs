//! A scratch directory the workspace-write sandbox does not let commands write, for tests that
//! check what a sandboxed command cannot reach. Shared by the tools and cli tests (`#[path]`).

use std::io::Write;
use std::path::{Path, PathBuf};

use toolshed_tools::shell::sandbox;

/// A directory outside every writable root the sandbox gives a worktree at `root` (or at any
/// worktree, when `root` is `None`): under the target dir, else under `$HOME`, whichever lies
/// outside them (a checkout under /tmp puts the target dir inside a writable temp dir). Removed
/// on drop. `None`, after a SKIP line naming `test`, when neither does.
pub fn outside_sandbox(test: &str, root: Option<&Path>) -> Option<tempfile::TempDir> {
    let probe = tempfile::tempdir().ok()?;
    let writable = sandbox::writable_roots(root.unwrap_or(probe.path()), &[]);
    let candidates = [Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))), std::env::var_os("HOME").map(PathBuf::from)];
    for base in candidates.into_iter().flatten() {
        let Ok(base) = base.canonicalize() else { continue };
        if writable.iter().any(|w| w.canonicalize().is_ok_and(|w| base.starts_with(w))) {
            continue;
        }
        if let Ok(dir) = tempfile::Builder::new().prefix("toolshed-outside-").tempdir_in(&base) {
            return Some(dir);
        }
    }
    let _ = writeln!(std::io::stderr(), "SKIP {test}: no scratch directory outside the sandbox's writable roots");
    None
}
