//! Where toolshed keeps things: the data directory, the user config directory, and the
//! worktree a command works in.

use std::env;
use std::path::{Component, Path, PathBuf};

fn env_path(name: &str) -> Option<PathBuf> {
    env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The user's base directories as the XDG Base Directory specification places them
/// (`etcetera`: `$XDG_CONFIG_HOME`, else `~/.config`, and so on; relative values are ignored,
/// as the specification says), read afresh on each call.
fn xdg() -> Option<etcetera::base_strategy::Xdg> {
    etcetera::base_strategy::choose_base_strategy().ok()
}

/// The user's home directory: `$HOME`, else the password database's entry.
pub fn home_dir() -> Option<PathBuf> {
    etcetera::home_dir().ok().filter(|h| !h.as_os_str().is_empty())
}

/// The user's configuration base: `$XDG_CONFIG_HOME`, else `~/.config`.
pub fn config_home() -> Option<PathBuf> {
    use etcetera::BaseStrategy as _;
    xdg().map(|x| x.config_dir())
}

/// The data directory: `$TOOLSHED_DATA_DIR`, else `$XDG_DATA_HOME/toolshed`, else
/// `~/.local/share/toolshed`, else a directory under the system temp dir.
pub fn data_dir() -> PathBuf {
    use etcetera::BaseStrategy as _;
    if let Some(dir) = env_path("TOOLSHED_DATA_DIR") {
        return dir;
    }
    match xdg() {
        Some(base) => base.data_dir().join("toolshed"),
        None => env::temp_dir().join("toolshed"),
    }
}

/// The user config directory: `$XDG_CONFIG_HOME/toolshed`, else `~/.config/toolshed`.
pub fn config_dir() -> Option<PathBuf> {
    config_home().map(|base| base.join("toolshed"))
}

/// The user's OpenCode configuration directories, whose `tool(s)` and `skill(s)` OpenCode loads:
/// `$XDG_CONFIG_HOME/opencode` (else `~/.config/opencode`), `~/.opencode`, and
/// `$OPENCODE_CONFIG_DIR` when set. One list for discovery and for the protected paths.
pub fn opencode_config_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = config_home().map(|c| c.join("opencode")).into_iter().collect();
    dirs.extend(home_dir().map(|h| h.join(".opencode")));
    dirs.extend(env_path("OPENCODE_CONFIG_DIR"));
    dirs
}

/// The worktree containing `dir`: the nearest ancestor holding `.git` (a directory, or the
/// file of a linked worktree), else `dir` itself.
pub fn find_worktree(dir: &Path) -> PathBuf {
    dir.ancestors().find(|d| d.join(".git").exists()).unwrap_or(dir).to_path_buf()
}

/// The process id written in a lock file, if it holds one (a lock just created may not yet).
pub fn lock_owner(lock: &Path) -> Option<u32> {
    std::fs::read_to_string(lock).ok()?.trim().parse().ok()
}

/// Whether process `pid` still exists (Linux: its `/proc` entry).
pub fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// `path` with `.` removed and `..` resolved against the components before it, without
/// touching the file system (so symbolic links are not followed, and wildcards stay as written).
pub fn lexical_normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalisation_resolves_dots_without_the_file_system() {
        assert_eq!(lexical_normalise(Path::new("/w/a/./b/../c/*")), PathBuf::from("/w/a/c/*"));
        assert_eq!(lexical_normalise(Path::new("/../x")), PathBuf::from("/x"));
    }

    #[test]
    fn worktree_is_the_nearest_git_ancestor() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("a/b")).unwrap();
        assert_eq!(find_worktree(&repo.join("a/b")), repo);
        let plain = tmp.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        assert_eq!(find_worktree(&plain), plain);
    }
}
