//! Whether the `lsp` tool is worth its bytes in a worktree: it is sent only when some language
//! server could serve one of the worktree's files — its program is found and the worktree has a
//! root marker of its language or a file of one of its extensions near the top. A model that is
//! sent `lsp` where no server can answer calls it and gets an error; a model that is not sent it
//! never pays its bytes.
//!
//! Decided on the first tool list (never on `toolshed call`, which lists nothing), from what
//! toolshed itself finds on disk and `PATH`, leaving out servers recorded as having failed to
//! start lately ([`failures`]). A yes stands until every server behind it has failed to start;
//! a no is looked at again on a later list once [`RECHECK`] has passed, so a session that
//! creates the first source file of an empty directory (or installs a server) gets `lsp` from
//! its next step on.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use toolshed_core::registry::{Registry, Source, View, VisibilityHook};
use toolshed_core::tool::{Exposure, ToolSpec};

use crate::failures;
use crate::servers::{ServerSpec, ServerTable, extension, find_program};

/// Directories the scan looks into below the worktree root.
const MAX_DEPTH: usize = 3;
/// Directory entries the scan reads at most, level by level from the root; a tree with no file
/// of a found server's language among them (a documentation or data tree) does not get `lsp`.
const MAX_ENTRIES: usize = 20_000;
/// Directories never looked into: dependencies and build output say nothing about the project.
const SKIPPED_DIRS: &[&str] = &["node_modules", "target", "vendor", "dist", "build", "__pycache__"];

/// How long a "no server can serve this worktree" stands before the worktree is looked at again.
pub const RECHECK: Duration = Duration::from_secs(5);

/// The visibility hook: the built-in `lsp` tool is hidden unless a server can serve the worktree.
pub struct Availability {
    table: ServerTable,
    root: PathBuf,
    recheck: Duration,
    /// `None` until first asked; then `Ok(keys)` once servers can serve the worktree (their keys
    /// in the record of failed starts: the yes stands until every one of them has failed to
    /// start), or `Err(when)` it was last found that none can.
    decided: Mutex<Option<Result<Vec<String>, Instant>>>,
}

impl Availability {
    /// The hook for `table`'s servers in the worktree at `root`.
    pub fn new(table: ServerTable, root: &Path) -> Self {
        Self::with_recheck(table, root, RECHECK)
    }

    /// As [`Availability::new`], with a "no" standing for `recheck`.
    pub fn with_recheck(table: ServerTable, root: &Path, recheck: Duration) -> Self {
        Availability { table, root: root.to_path_buf(), recheck, decided: Mutex::new(None) }
    }

    /// Whether some server can serve a file of the worktree.
    pub fn available(&self) -> bool {
        let mut decided = self.decided.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*decided {
            Some(Ok(keys)) if keys.iter().any(|key| !failed_lately(key)) => return true,
            Some(Err(when)) if when.elapsed() < self.recheck => return false,
            _ => {}
        }
        let usable = usable(&self.table, &self.root, &failed_lately);
        let yes = !usable.is_empty() && available(&usable, &self.root);
        *decided =
            Some(if yes { Ok(usable.iter().map(|(_, key)| key.clone()).collect()) } else { Err(Instant::now()) });
        yes
    }
}

impl VisibilityHook for Availability {
    fn apply(&self, registry: &Registry, _view: &View<'_>, spec: &ToolSpec, exposure: Exposure) -> Option<Exposure> {
        let builtin_lsp = spec.name == "lsp" && registry.get("lsp").is_some_and(|e| e.source == Source::Builtin);
        if !builtin_lsp || self.available() {
            return Some(exposure);
        }
        // Hidden, not gone: `toolshed call lsp` still reaches it, and says why it cannot answer.
        Some(Exposure::Hidden)
    }
}

/// The servers whose program is found and that have not failed to start here lately (a server
/// that cannot start is no reason to send `lsp`), with their keys in the record of failures.
fn usable<'a>(table: &'a ServerTable, root: &Path, failed: &dyn Fn(&str) -> bool) -> Vec<(&'a ServerSpec, String)> {
    table
        .servers()
        .iter()
        .filter_map(|s| {
            let program = find_program(&s.command, root).ok()?;
            let key = failures::key(&s.name, &program, &s.args, root);
            (!failed(&key)).then_some((s, key))
        })
        .collect()
}

/// Whether the server `key` names failed to start within [`failures::REMEMBER`].
fn failed_lately(key: &str) -> bool {
    failures::recent(key).is_some()
}

/// Whether one of the `found` servers can serve a file of the worktree at `root`.
fn available(found: &[(&ServerSpec, String)], root: &Path) -> bool {
    let found: Vec<&ServerSpec> = found.iter().map(|(s, _)| *s).collect();
    if found.is_empty() {
        return false;
    }
    if found.iter().any(|s| s.root_markers.iter().any(|m| root.join(m).is_file())) {
        return true;
    }
    let wanted = |path: &Path| extension(path).is_some_and(|ext| found.iter().any(|s| s.extensions.contains(&ext)));
    // Breadth first: a project's sources sit near its root.
    let mut dirs = std::collections::VecDeque::from([(root.to_path_buf(), 0)]);
    let mut seen = 0;
    while let Some((dir, depth)) = dirs.pop_front() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return false;
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                if depth < MAX_DEPTH && !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_ref()) {
                    dirs.push_back((entry.path(), depth + 1));
                }
            } else if kind.is_file() && wanted(&entry.path()) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use toolshed_core::config::LspConfig;

    fn table(toml: &str) -> ServerTable {
        let sections: BTreeMap<String, LspConfig> = toml::from_str(toml).unwrap();
        ServerTable::from_config(&sections)
    }

    fn serves(table: &ServerTable, root: &Path) -> bool {
        available(&usable(table, root, &|_| false), root)
    }

    #[test]
    fn a_server_that_failed_to_start_lately_is_no_reason_to_send_lsp() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("main.fk"), "").unwrap();
        let table = table(FAKE);
        let all = usable(&table, root, &|_| false);
        assert_eq!(all.len(), 1);
        assert!(all[0].1.starts_with("fake /bin/sh"), "{}", all[0].1);
        assert!(usable(&table, root, &|key| key == all[0].1).is_empty());
    }

    /// Only `[lsp.fake]`, run by `/bin/sh` (which every machine has), for `.fk` files.
    const FAKE: &str = "[fake]\ncommand = \"/bin/sh\"\nextensions = [\"fk\"]\nroot_markers = [\"fake.toml\"]\n[rust-analyzer]\nenabled = false\n[pyright]\nenabled = false\n[typescript]\nenabled = false\n[gopls]\nenabled = false\n[clangd]\nenabled = false\n";

    #[test]
    fn a_server_counts_when_its_program_exists_and_the_worktree_has_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(!serves(&table(FAKE), root), "an empty worktree");
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/main.fk"), "").unwrap();
        assert!(serves(&table(FAKE), root), "a file two levels down");
        let missing = FAKE.replace("/bin/sh", "/nonexistent/fake-language-server");
        assert!(!serves(&table(&missing), root), "the program is missing");
    }

    #[test]
    fn a_root_marker_counts_and_dependencies_hidden_or_deep_files_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for place in ["node_modules/x", ".hidden", "target", "a/b/c/d"] {
            std::fs::create_dir_all(root.join(place)).unwrap();
            std::fs::write(root.join(place).join("x.fk"), "").unwrap();
        }
        assert!(!serves(&table(FAKE), root));
        std::fs::write(root.join("fake.toml"), "").unwrap();
        assert!(serves(&table(FAKE), root));
    }

    #[test]
    fn a_large_tree_of_documents_is_not_served_and_a_source_near_its_top_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in 0..21 {
            let docs = root.join(format!("docs{d:02}"));
            std::fs::create_dir_all(&docs).unwrap();
            for f in 0..1_000 {
                std::fs::write(docs.join(format!("{f}.md")), "").unwrap();
            }
        }
        assert!(!serves(&table(FAKE), root), "21,000 documents and no source file");
        // A source file at the top is read before what the directories hold.
        std::fs::write(root.join("main.fk"), "").unwrap();
        assert!(serves(&table(FAKE), root));
    }

    #[test]
    fn a_no_is_looked_at_again_and_a_yes_stands() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let hook = Availability::with_recheck(table(FAKE), root, Duration::ZERO);
        assert!(!hook.available(), "an empty worktree");
        std::fs::write(root.join("main.fk"), "").unwrap();
        assert!(hook.available(), "the session wrote the first source file");
        std::fs::remove_file(root.join("main.fk")).unwrap();
        assert!(hook.available(), "once sent, lsp stays: the tool list does not flicker");
        // Within the recheck time a no stands, so a list per step does not rescan the tree.
        let slow = Availability::with_recheck(table(FAKE), root, Duration::from_secs(3600));
        assert!(!slow.available());
        std::fs::write(root.join("main.fk"), "").unwrap();
        assert!(!slow.available());
    }
}
