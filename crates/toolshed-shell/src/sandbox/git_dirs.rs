//! The git directories outside the worktree that a `workspace-write` command may write (so that
//! `git commit` works in a linked worktree or a submodule), validated from the outside.
//!
//! The worktree's `.git` *file* (`gitdir: PATH`) is written by whoever writes the worktree, so
//! the model can rewrite it; it is only a hint. A git directory it names is used only when files
//! **outside** the worktree confirm that it belongs to this worktree:
//!
//! - a linked worktree (`git worktree add`): the git dir `G` holds `HEAD`, a `commondir` naming
//!   the repository's common dir `C`, and a `gitdir` back-pointer naming this worktree's `.git`
//!   file; `G` must be `C/worktrees/<name>`, and `C` a git directory (`HEAD`, `objects/`,
//!   `refs/`). Both `G` and `C` become writable.
//! - a submodule (or any separate git dir): `G` is a git directory whose `config` sets
//!   `core.worktree` to this worktree. `G` becomes writable.
//!
//! Anything else — `.git` a symbolic link, a directory or missing; trailing junk; a git dir
//! inside the worktree; a path that is `/`, a system directory, `$HOME` or an ancestor of it —
//! adds nothing. The result is resolved once per process and worktree ([`pin`]), so a command
//! that rewrites `.git` does not change what later commands of the same process may write.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The largest `.git` file, `commondir`, `gitdir` or `config` read.
const MAX_FILE: u64 = 64 * 1024;

/// Directories a git dir may never be in (or be): writing there is no worktree's business.
const SYSTEM_DIRS: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/nix", "/proc", "/run", "/sbin", "/sys",
    "/usr",
];

/// Directories a git dir may be inside of but never be.
const NOT_ITSELF: &[&str] = &["/home", "/media", "/mnt", "/opt", "/root", "/snap", "/srv", "/tmp", "/var/tmp"];

/// Resolves the git directories of `root` for this process, once: later calls (and every
/// command's sandbox) get the same answer even if `.git` changes meanwhile. Cheap when `.git`
/// is a directory or missing (one `lstat`); spawns nothing.
pub fn pin(root: &Path) -> Vec<PathBuf> {
    static PINNED: Mutex<Vec<(PathBuf, Vec<PathBuf>)>> = Mutex::new(Vec::new());
    let mut pinned = PINNED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, dirs)) = pinned.iter().find(|(r, _)| r == root) {
        return dirs.clone();
    }
    let home = toolshed_core::paths::home_dir();
    let dirs = resolve(root, home.as_deref());
    pinned.push((root.to_path_buf(), dirs.clone()));
    dirs
}

/// The validated git directories of the worktree `root` (canonical), read now.
pub(super) fn resolve(root: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let Some(text) = read_small(&dot_git, true) else { return Vec::new() };
    let Some(gitdir) = gitdir_line(&text) else { return Vec::new() };
    let Ok(g) = root.join(gitdir).canonicalize() else { return Vec::new() };
    if g.starts_with(root) || !g.is_dir() || !is_file(&g.join("HEAD")) {
        return Vec::new();
    }
    let dirs = if g.join("commondir").exists() { linked(&g, &dot_git) } else { separate(&g, root) };
    if dirs.iter().any(|d| forbidden(d, root, home)) {
        return Vec::new();
    }
    dirs
}

/// A linked worktree's git dir `g` and its common dir, if they confirm each other.
fn linked(g: &Path, dot_git: &Path) -> Vec<PathBuf> {
    let Some(common) = read_small(&g.join("commondir"), false).as_deref().and_then(single_line).map(PathBuf::from)
    else {
        return Vec::new();
    };
    let Ok(c) = g.join(common).canonicalize() else { return Vec::new() };
    let parent = g.parent();
    if parent.and_then(Path::file_name).is_none_or(|n| n != "worktrees") || parent.and_then(Path::parent) != Some(&c) {
        return Vec::new();
    }
    if !is_git_dir(&c) {
        return Vec::new();
    }
    let Some(back) = read_small(&g.join("gitdir"), false).as_deref().and_then(single_line).map(PathBuf::from) else {
        return Vec::new();
    };
    // Git writes an absolute path, or (worktree.useRelativePaths) one relative to `g`.
    match (g.join(back).canonicalize(), dot_git.canonicalize()) {
        (Ok(back), Ok(ours)) if back == ours => vec![g.to_path_buf(), c],
        _ => Vec::new(),
    }
}

/// A separate git dir (a submodule's) whose `core.worktree` is `root`.
fn separate(g: &Path, root: &Path) -> Vec<PathBuf> {
    if !is_git_dir(g) {
        return Vec::new();
    }
    let Some(config) = read_small(&g.join("config"), false) else { return Vec::new() };
    match core_worktree(&config).map(|w| g.join(w).canonicalize()) {
        Some(Ok(worktree)) if worktree == root => vec![g.to_path_buf()],
        _ => Vec::new(),
    }
}

/// The text of a small regular file; `no_symlink`: the file itself must not be a symbolic link.
fn read_small(path: &Path, no_symlink: bool) -> Option<String> {
    let meta = if no_symlink { std::fs::symlink_metadata(path) } else { std::fs::metadata(path) }.ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// `PATH` of a `.git` file that is exactly `gitdir: PATH` (and a line end).
fn gitdir_line(text: &str) -> Option<&str> {
    single_line(text)?.strip_prefix("gitdir: ")
}

/// The one line of `text` (a final `\n` or `\r\n` allowed), non-empty, with no NUL.
fn single_line(text: &str) -> Option<&str> {
    let line = text.strip_suffix('\n').map_or(text, |t| t.strip_suffix('\r').unwrap_or(t));
    (!line.is_empty() && !line.contains(['\n', '\r', '\0']) && line.trim() == line).then_some(line)
}

fn is_file(path: &Path) -> bool {
    path.is_file()
}

/// Whether `dir` looks like a git directory: `HEAD`, `objects/`, `refs/`.
fn is_git_dir(dir: &Path) -> bool {
    is_file(&dir.join("HEAD")) && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// `core.worktree` of a git config file, when it is written plainly (a quoted value without
/// escapes is fine); anything the small parser does not understand counts as unset.
fn core_worktree(config: &str) -> Option<&str> {
    let mut in_core = false;
    let mut found = None;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line.eq_ignore_ascii_case("[core]");
            continue;
        }
        if !in_core {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if !key.trim().eq_ignore_ascii_case("worktree") {
            continue;
        }
        let value = value.trim();
        let value = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(value);
        if value.is_empty() || value.contains(['\\', '"', ';', '#']) {
            return None;
        }
        found = Some(value);
    }
    found
}

/// Whether a git directory may not be made writable: `/`; inside the worktree (the model wrote
/// whatever is there); in or at a system directory (`/var` but for `/var/tmp`); one of
/// [`NOT_ITSELF`]; `$HOME`, `/root` or an ancestor of either.
fn forbidden(dir: &Path, root: &Path, home: Option<&Path>) -> bool {
    if dir == Path::new("/") || dir.starts_with(root) {
        return true;
    }
    let in_var = dir.starts_with("/var") && !dir.starts_with("/var/tmp");
    if in_var || SYSTEM_DIRS.iter().any(|s| dir.starts_with(s)) {
        return true;
    }
    if NOT_ITSELF.iter().any(|s| dir == Path::new(s)) {
        return true;
    }
    home.into_iter().chain([Path::new("/root")]).any(|h| h.starts_with(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A main repository `<tmp>/main` with a linked worktree `<tmp>/wt`, as `git worktree add`
    /// lays them out (without running git).
    struct Layout {
        _tmp: tempfile::TempDir,
        base: PathBuf,
        common: PathBuf,
        wt_git: PathBuf,
        wt: PathBuf,
    }

    fn git_dir(dir: &Path) {
        std::fs::create_dir_all(dir.join("objects")).unwrap();
        std::fs::create_dir_all(dir.join("refs")).unwrap();
        std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }

    fn layout() -> Layout {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let common = base.join("main/.git");
        git_dir(&common);
        let wt_git = common.join("worktrees/wt");
        std::fs::create_dir_all(&wt_git).unwrap();
        std::fs::write(wt_git.join("HEAD"), "ref: refs/heads/wt\n").unwrap();
        std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        let wt = base.join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt_git.join("gitdir"), format!("{}\n", wt.join(".git").display())).unwrap();
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", wt_git.display())).unwrap();
        Layout { _tmp: tmp, base, common, wt_git, wt }
    }

    fn dirs(l: &Layout) -> Vec<PathBuf> {
        resolve(&l.wt, Some(Path::new("/nonexistent-home")))
    }

    #[test]
    fn a_real_linked_worktree_gets_its_git_dir_and_the_common_dir() {
        let l = layout();
        assert_eq!(dirs(&l), vec![l.wt_git.clone(), l.common.clone()]);
        // Relative paths, as worktree.useRelativePaths writes them.
        std::fs::write(l.wt.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").unwrap();
        std::fs::write(l.wt_git.join("gitdir"), "../../../../wt/.git\n").unwrap();
        assert_eq!(dirs(&l), vec![l.wt_git.clone(), l.common.clone()]);
    }

    #[test]
    fn a_gitdir_naming_the_root_or_a_system_directory_adds_nothing() {
        let l = layout();
        for text in ["gitdir: /\n", "gitdir: /etc\n", "gitdir: ..\n", "gitdir: /usr/lib\n", "gitdir: .\n"] {
            std::fs::write(l.wt.join(".git"), text).unwrap();
            assert_eq!(dirs(&l), Vec::<PathBuf>::new(), "{text}");
        }
    }

    #[test]
    fn a_fake_git_dir_inside_the_worktree_adds_nothing() {
        // `mv .git .git.real` plus a hand-made git dir whose commondir points anywhere.
        let l = layout();
        let fake = l.wt.join("fake/worktrees/x");
        std::fs::create_dir_all(&fake).unwrap();
        std::fs::write(fake.join("HEAD"), "x\n").unwrap();
        std::fs::write(fake.join("commondir"), format!("{}\n", l.common.display())).unwrap();
        std::fs::write(fake.join("gitdir"), format!("{}\n", l.wt.join(".git").display())).unwrap();
        std::fs::write(l.wt.join(".git"), "gitdir: fake/worktrees/x\n").unwrap();
        assert_eq!(dirs(&l), Vec::<PathBuf>::new());
    }

    #[test]
    fn another_repositorys_worktree_is_not_ours() {
        // The git dir is real, but its back-pointer names another worktree.
        let l = layout();
        std::fs::write(l.wt_git.join("gitdir"), format!("{}\n", l.base.join("elsewhere/.git").display())).unwrap();
        assert_eq!(dirs(&l), Vec::<PathBuf>::new());
        // Another repository's plain git dir (no commondir, no core.worktree naming us).
        let other = l.base.join("other/.git");
        git_dir(&other);
        std::fs::write(other.join("config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(l.wt.join(".git"), format!("gitdir: {}\n", other.display())).unwrap();
        assert_eq!(dirs(&l), Vec::<PathBuf>::new());
    }

    #[test]
    fn commondir_must_be_the_git_dirs_grandparent_and_a_git_dir() {
        let l = layout();
        let elsewhere = l.base.join("elsewhere/.git");
        git_dir(&elsewhere);
        std::fs::write(l.wt_git.join("commondir"), format!("{}\n", elsewhere.display())).unwrap();
        assert_eq!(dirs(&l), Vec::<PathBuf>::new(), "commondir naming another repository");
        std::fs::write(l.wt_git.join("commondir"), "/\n").unwrap();
        assert_eq!(dirs(&l), Vec::<PathBuf>::new(), "commondir naming /");
        std::fs::write(l.wt_git.join("commondir"), "../..\n").unwrap();
        std::fs::remove_dir(l.common.join("objects")).unwrap();
        assert_eq!(dirs(&l), Vec::<PathBuf>::new(), "common dir without objects/");
    }

    #[test]
    fn trailing_junk_symlinks_and_odd_spellings_add_nothing() {
        let l = layout();
        let good = format!("gitdir: {}", l.wt_git.display());
        for text in [
            format!("{good}\nextra\n"),
            format!("{good}\n\n"),
            format!(" {good}\n"),
            format!("{good} \n"),
            format!("gitdir:{}\n", l.wt_git.display()),
            format!("GITDIR: {}\n", l.wt_git.display()),
            format!("{good}\0\n"),
            String::new(),
        ] {
            std::fs::write(l.wt.join(".git"), &text).unwrap();
            assert_eq!(dirs(&l), Vec::<PathBuf>::new(), "{text:?}");
        }
        std::fs::write(l.wt.join(".git"), format!("{good}\r\n")).unwrap();
        assert_eq!(dirs(&l).len(), 2, "CRLF is a line end");
        // `.git` as a symbolic link to a file holding the right text.
        let elsewhere = l.base.join("dotgit");
        std::fs::write(&elsewhere, format!("{good}\n")).unwrap();
        std::fs::remove_file(l.wt.join(".git")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, l.wt.join(".git")).unwrap();
        assert_eq!(dirs(&l), Vec::<PathBuf>::new());
    }

    #[test]
    fn home_and_its_ancestors_are_never_writable() {
        let l = layout();
        // A layout whose common dir is `$HOME` itself would make all of it writable.
        assert!(forbidden(&l.common, &l.wt, Some(&l.common)));
        assert!(forbidden(&l.base, &l.wt, Some(&l.common)));
        assert!(!forbidden(&l.common, &l.wt, Some(Path::new("/home/u"))));
        for dir in ["/", "/etc", "/etc/x/.git", "/usr", "/var/lib/git/x.git", "/home", "/root", "/tmp"] {
            assert!(forbidden(Path::new(dir), &l.wt, Some(Path::new("/home/u"))), "{dir}");
        }
        assert!(!forbidden(Path::new("/var/tmp/x/.git"), &l.wt, None));
        assert!(!forbidden(Path::new("/root/src/x/.git"), &l.wt, Some(Path::new("/root"))));
    }

    #[test]
    fn a_submodules_git_dir_is_confirmed_by_core_worktree() {
        let l = layout();
        let modules = l.common.join("modules/sub");
        git_dir(&modules);
        let sub = l.base.join("main/sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/sub\n").unwrap();
        std::fs::write(modules.join("config"), "[core]\n\tworktree = ../../../sub\n").unwrap();
        assert_eq!(resolve(&sub, None), vec![modules.clone()]);
        std::fs::write(modules.join("config"), "[core]\n\tworktree = ../../../elsewhere\n").unwrap();
        assert_eq!(resolve(&sub, None), Vec::<PathBuf>::new());
        std::fs::write(modules.join("config"), "[core]\n\tbare = false\n").unwrap();
        assert_eq!(resolve(&sub, None), Vec::<PathBuf>::new());
    }

    #[test]
    fn pin_keeps_the_first_answer_for_the_process() {
        let l = layout();
        let first = pin(&l.wt);
        assert_eq!(first.len(), 2);
        std::fs::write(l.wt.join(".git"), "gitdir: /\n").unwrap();
        assert_eq!(pin(&l.wt), first);
    }
}
