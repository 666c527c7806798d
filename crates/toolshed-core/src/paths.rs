//! Where toolshed keeps things: the data directory, the user config directory, and the
//! worktree a command works in; advisory lock files ([`FileLock`]).

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
/// file of a linked worktree), else `dir` itself. A temp dir itself (`/tmp`, `/var/tmp`,
/// `/dev/shm`, `$TMPDIR`) is never a worktree: anyone, a sandboxed command included, may put a
/// `.git` there, and a project under it would then take all of it as its worktree.
pub fn find_worktree(dir: &Path) -> PathBuf {
    dir.ancestors().find(|d| d.join(".git").exists() && !is_temp_dir(d)).unwrap_or(dir).to_path_buf()
}

/// A stable name for the worktree `root` among toolshed's data: 16 hex digits of a hash
/// (FNV-1a) of its canonical path. Names its snapshots' shadow repository and its saved outputs.
pub fn worktree_key(root: &Path) -> String {
    use std::os::unix::ffi::OsStrExt as _;
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in canonical.as_os_str().as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Where the outputs cut for the model in the worktree `root` are saved:
/// `DATA_DIR/tool-output/<worktree_key>`. One directory per worktree, so that the sandbox shows
/// a command the outputs of its own worktree only.
pub fn spill_dir(data_dir: &Path, root: &Path) -> PathBuf {
    data_dir.join(SPILLS).join(worktree_key(root))
}

/// The directory under the data directory that holds the saved outputs of every worktree.
pub const SPILLS: &str = "tool-output";

/// The tool caches every `workspace-write` command may write (`~/.cache`, `~/.cargo`, `~/.npm`,
/// `XDG_CACHE_HOME`, `GOPATH`, ...): the sandbox's list, and the places where nothing the user
/// relies on may come from unaccepted.
pub fn tool_cache_dirs() -> Vec<PathBuf> {
    let env = |name: &str| env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut dirs = Vec::new();
    if let Some(home) = env("HOME") {
        for cache in [".cache", ".cargo", ".npm", ".pnpm-store", ".yarn", ".m2", ".gradle", "go", ".bun"] {
            dirs.push(home.join(cache));
        }
    }
    for var in ["XDG_CACHE_HOME", "CARGO_HOME", "GOPATH", "GOMODCACHE", "GOCACHE", "npm_config_cache"] {
        dirs.extend(env(var));
    }
    dirs
}

/// The temp dirs, which anyone may write into: `$TMPDIR`, `/tmp`, `/var/tmp`, `/dev/shm`.
pub fn temp_dirs() -> [PathBuf; 4] {
    [env::temp_dir(), "/tmp".into(), "/var/tmp".into(), "/dev/shm".into()]
}

/// What every `workspace-write` command may write besides its worktree: the temp dirs and the
/// tool caches. The sandbox's list (`toolshed_shell`'s `writable_roots` adds the worktree, its
/// git dirs and approved directories).
pub fn command_writable_dirs() -> Vec<PathBuf> {
    let mut dirs = temp_dirs().to_vec();
    dirs.extend(tool_cache_dirs());
    dirs
}

/// Whether `dir` is a temp dir itself (`/tmp`, `/var/tmp`, `/dev/shm`, `$TMPDIR`), which anyone
/// may write into (not a directory under one).
pub fn is_temp_dir(dir: &Path) -> bool {
    temp_dirs().into_iter().any(|t| t == dir || t.canonicalize().is_ok_and(|t| t == dir))
}

/// An advisory lock on a file (`File::try_lock`: `flock(2)` on Unix), held while this value
/// lives. The kernel releases it when the holder's process ends, however it ends, so a lock left
/// by a dead process is simply free: no process id is checked and nothing is guessed from the
/// file's age. The holder writes its process id into the file, for messages only
/// ([`FileLock::holder`]). Dropping the lock removes the file.
#[derive(Debug)]
pub struct FileLock {
    file: std::fs::File,
    path: PathBuf,
}

impl FileLock {
    /// Takes the lock of `path` (creating the file) unless another open file holds it: `None`
    /// then, in this process or another. An error says why the file could not be opened or
    /// locked.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<FileLock>> {
        use std::io::Write as _;
        // A holder removes the file before it lets go: a lock taken on a file no longer at
        // `path` guards nothing, so the file at `path` is opened again.
        for _ in 0..16 {
            let mut file =
                std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                Err(std::fs::TryLockError::Error(e)) => return Err(e),
            }
            if !same_file(&file, path) {
                continue;
            }
            file.set_len(0)?;
            write!(file, "{}", std::process::id())?;
            return Ok(Some(FileLock { file, path: path.to_path_buf() }));
        }
        Err(std::io::Error::other(format!("{} keeps being replaced while it is locked", path.display())))
    }

    /// The process id the holder of `path`'s lock wrote into it, if the file holds one (a lock
    /// just taken may not yet). For messages: whether the lock is held is [`FileLock::try_acquire`]'s
    /// answer alone.
    pub fn holder(path: &Path) -> Option<u32> {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    }

    /// The locked file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Removed while still held (the lock goes when `file` closes, after this).
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `path` names the file `file` has open.
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
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

/// Where `path` really is, whether or not it exists: its nearest existing ancestor resolved
/// (links followed), with the rest of it as written; a link on the way that leads nowhere yet
/// is followed to where it would lead.
pub fn real_location(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    // A chain of links leading nowhere ends somewhere, or is given up on as written.
    for _ in 0..40 {
        let mut next = None;
        for base in path.ancestors() {
            let rest = path.strip_prefix(base).unwrap_or(Path::new(""));
            if let Ok(real) = base.canonicalize() {
                // Not `join("")`, which would add a trailing `/` (a file is then no file).
                return if rest.as_os_str().is_empty() { real } else { real.join(rest) };
            }
            if let Ok(target) = std::fs::read_link(base) {
                let parent = base.parent().unwrap_or(Path::new("/"));
                next = Some(lexical_normalise(&parent.join(target)).join(rest));
                break;
            }
        }
        match next {
            Some(next) => path = next,
            None => return path,
        }
    }
    path
}

/// Removes what a command made at `path`, an absolute path that had no link on its way when the
/// command started ([`real_location`] then), without following any link, however the command
/// changed its directories meanwhile: a directory on the way that is a link now was made (or
/// swapped in) by the command, and that link is removed, never what it leads to (a repository
/// elsewhere, the user's own directories).
pub fn remove_made(path: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
    use std::os::unix::ffi::OsStrExt as _;

    let invalid = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an absolute, resolved path");
    let mut names = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir => {}
            Component::Normal(name) => names.push(CString::new(name.as_bytes()).map_err(|_| invalid())?),
            _ => return Err(invalid()),
        }
    }
    let last = names.pop().ok_or_else(invalid)?;
    let open = |at: libc::c_int, name: &CString| -> std::io::Result<OwnedFd> {
        let flags = libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_RDONLY | libc::O_CLOEXEC;
        // SAFETY: `name` is a valid C string; the descriptor returned is owned by nobody else.
        let fd = unsafe { libc::openat(at, name.as_ptr(), flags) };
        if fd < 0 { Err(std::io::Error::last_os_error()) } else { Ok(unsafe { OwnedFd::from_raw_fd(fd) }) }
    };
    let is_link = |at: libc::c_int, name: &CString| {
        // SAFETY: `stat` is plain old data, written by the call before it is read.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        let done = unsafe { libc::fstatat(at, name.as_ptr(), &mut stat, libc::AT_SYMLINK_NOFOLLOW) };
        done == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFLNK
    };
    let mut dir = open(libc::AT_FDCWD, &CString::new("/").map_err(|_| invalid())?)?;
    for name in &names {
        match open(dir.as_raw_fd(), name) {
            Ok(next) => dir = next,
            Err(_) if is_link(dir.as_raw_fd(), name) => {
                // SAFETY: as above; removes the link itself (no AT_REMOVEDIR: never a directory).
                let done = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
                return if done == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) };
            }
            Err(e) => return Err(e),
        }
    }
    // The last name inside the directory reached, whatever its ancestors are by now.
    let inside =
        PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd())).join(std::ffi::OsStr::from_bytes(last.as_bytes()));
    match std::fs::symlink_metadata(&inside) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&inside),
        Ok(_) => std::fs::remove_file(&inside),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variable that makes `hold_a_lock_until_killed` take a lock.
    const HOLD: &str = "TOOLSHED_TEST_HOLD_LOCK";

    /// Run by `a_lock_is_held_while_its_process_lives_and_free_once_it_is_killed` in a child
    /// process: takes the lock of `$TOOLSHED_TEST_HOLD_LOCK`, says so, and waits to be killed.
    #[test]
    #[ignore = "a helper: run in a child process by a_lock_is_held_while_its_process_lives_and_free_once_it_is_killed"]
    fn hold_a_lock_until_killed() {
        let path = PathBuf::from(env::var_os(HOLD).unwrap());
        let _lock = FileLock::try_acquire(&path).unwrap().unwrap();
        println!("LOCK-TAKEN");
        std::thread::sleep(std::time::Duration::from_secs(60));
    }

    #[test]
    fn a_lock_is_held_while_its_process_lives_and_free_once_it_is_killed() {
        use std::io::BufRead as _;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.lock");
        let mut holder = std::process::Command::new(env::current_exe().unwrap())
            .args(["--exact", "paths::tests::hold_a_lock_until_killed", "--ignored", "--nocapture"])
            .args(["--test-threads=1"])
            .env(HOLD, &path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = std::io::BufReader::new(holder.stdout.take().unwrap());
        // The test harness prints the helper's name on the same line, before what it prints.
        let mut line = String::new();
        while !line.contains("LOCK-TAKEN") {
            line.clear();
            assert_ne!(out.read_line(&mut line).unwrap(), 0, "the holder ended without the lock");
        }
        // Held by a live process: refused, and the holder is named.
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        assert_eq!(FileLock::holder(&path), Some(holder.id()));
        // Killed: nothing ran to clean up (the file is still there), yet the lock is free.
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(path.exists());
        let lock = FileLock::try_acquire(&path).unwrap().expect("the dead holder's lock was not reclaimed");
        assert_eq!(FileLock::holder(&path), Some(std::process::id()));
        drop(lock);
        assert!(!path.exists(), "the lock file is removed when its lock is dropped");
    }

    #[test]
    fn a_lock_is_one_holder_at_a_time_in_one_process_too() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.lock");
        // A file left behind with a pid in it, unlocked: free.
        std::fs::write(&path, "4294967").unwrap();
        let held = FileLock::try_acquire(&path).unwrap().unwrap();
        assert_eq!(held.path(), path);
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        drop(held);
        let again = FileLock::try_acquire(&path).unwrap();
        assert!(again.is_some());
        let missing = tmp.path().join("no/such/dir/x.lock");
        assert!(FileLock::try_acquire(&missing).is_err());
    }

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

    #[test]
    fn what_was_made_is_removed_but_never_through_a_link_made_on_its_way() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (w, outside) = (base.join("w"), base.join("outside"));
        std::fs::create_dir_all(w.join("sub/.git/hooks")).unwrap();
        std::fs::create_dir_all(outside.join(".git")).unwrap();
        std::fs::write(outside.join(".git/HEAD"), "ref\n").unwrap();
        std::fs::write(w.join("toolshed.toml"), "x").unwrap();
        // A directory made where none was, and a file: removed.
        let before = real_location(&w.join("sub/.git"));
        remove_made(&before).unwrap();
        assert!(!w.join("sub/.git").exists() && w.join("sub").is_dir());
        remove_made(&w.join("toolshed.toml")).unwrap();
        assert!(!w.join("toolshed.toml").exists());
        // `sub` swapped for a link to a repository elsewhere: the link goes, not its `.git`.
        std::fs::remove_dir_all(w.join("sub")).unwrap();
        std::os::unix::fs::symlink(&outside, w.join("sub")).unwrap();
        remove_made(&before).unwrap();
        assert!(outside.join(".git/HEAD").exists());
        assert!(std::fs::symlink_metadata(w.join("sub")).is_err());
        // The last name a link: the link goes.
        std::os::unix::fs::symlink(&outside, w.join("l")).unwrap();
        remove_made(&w.join("l")).unwrap();
        assert!(outside.join(".git/HEAD").exists() && std::fs::symlink_metadata(w.join("l")).is_err());
        // A link that led nowhere before the command, which made where it leads: that goes, the
        // link stays.
        std::os::unix::fs::symlink(base.join("shared"), w.join(".claude")).unwrap();
        let before = real_location(&w.join(".claude/skills"));
        assert_eq!(before, base.join("shared/skills"));
        std::fs::create_dir_all(base.join("shared/skills/x")).unwrap();
        remove_made(&before).unwrap();
        assert!(!base.join("shared/skills").exists() && std::fs::symlink_metadata(w.join(".claude")).is_ok());
        assert!(remove_made(Path::new("relative/x")).is_err());
        assert!(remove_made(&w.join("absent/x")).is_err());
    }
}
