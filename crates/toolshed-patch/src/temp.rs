//! The temporary files written beside a file that is replaced atomically (write, edit,
//! apply_patch): `.NAME.toolshed-PID-N.tmp`, renamed over `NAME` when complete. A process killed
//! between the two leaves one behind; [`sweep_stale`] removes those whose process is gone, and
//! [`is_temp`] tells the file tools not to show them as the user's files.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The tag of this process's temporary files (`toolshed-PID`).
pub fn tag() -> String {
    format!("toolshed-{}", std::process::id())
}

/// The temporary name for replacing `file_name`, the `n`th of this process.
pub fn name(file_name: &str, n: u64) -> String {
    let mut short: String = file_name.chars().take(80).collect();
    if short.is_empty() {
        short.push('f');
    }
    format!(".{short}.{}-{n}.tmp", tag())
}

/// The process that wrote the temporary file `file_name`, if it is one: `.NAME.toolshed-PID-N.tmp`
/// (also the older `.NAME.toolshedPID-N.tmp`).
pub fn owner(file_name: &OsStr) -> Option<u32> {
    let name = file_name.to_str()?;
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, tail) = rest.rsplit_once(".toolshed")?;
    let tail = tail.strip_prefix('-').unwrap_or(tail);
    let (pid, n) = tail.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

/// Whether `file_name` is a temporary file of toolshed's (see [`owner`]).
pub fn is_temp(file_name: &OsStr) -> bool {
    owner(file_name).is_some()
}

/// Removes the temporary files in `dir` whose process no longer runs; once per directory per
/// process (later calls return 0 at once). Returns how many were removed.
pub fn sweep_stale(dir: &Path) -> usize {
    static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    {
        let mut swept = SWEPT.lock().unwrap_or_else(PoisonError::into_inner);
        if !swept.get_or_insert_with(HashSet::new).insert(dir.to_path_buf()) {
            return 0;
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let me = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = owner(&entry.file_name()) else { continue };
        if pid == me || alive(pid) || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether a process `pid` exists (one of another user's counts).
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_recognised_and_others_are_not() {
        let mine = name("main.rs", 3);
        assert_eq!(owner(OsStr::new(&mine)), Some(std::process::id()));
        assert_eq!(owner(OsStr::new(".a.b.toolshed12345-7.tmp")), Some(12345));
        assert_eq!(owner(OsStr::new(".x.toolshed-1-2.tmp")), Some(1));
        for other in
            ["main.rs", ".x.toolshed-a-2.tmp", "x.toolshed-1-2.tmp", ".x.toolshed-1-.tmp", ".x.tmp", ".toolshed-1-2"]
        {
            assert_eq!(owner(OsStr::new(other)), None, "{other}");
        }
    }

    #[test]
    fn stale_files_are_swept_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        // A process that has exited: its pid is free (until reused; a reused pid is kept).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = dir.path().join(format!(".a.txt.toolshed-{dead}-1.tmp"));
        let old_format = dir.path().join(format!(".b.txt.toolshed{dead}-2.tmp"));
        let live = dir.path().join(name("c.txt", 1));
        let user = dir.path().join(".d.toolshed-x.tmp");
        for f in [&stale, &old_format, &live, &user] {
            std::fs::write(f, "x").unwrap();
        }
        assert_eq!(sweep_stale(dir.path()), 2);
        assert!(!stale.exists() && !old_format.exists() && live.exists() && user.exists());
        // Once per directory.
        std::fs::write(&stale, "x").unwrap();
        assert_eq!(sweep_stale(dir.path()), 0);
    }
}
