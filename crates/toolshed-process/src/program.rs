//! Where a command's program is.

use std::path::{Path, PathBuf};

/// Why a program was not found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProgramError {
    /// A bare name that no directory on `PATH` holds as an executable file.
    NotOnPath(String),
    /// A path (with a `/`) that is not an executable file: missing, a directory, or without
    /// permission to execute it. Holds the path looked at.
    NotExecutable(PathBuf),
}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProgramError::NotOnPath(name) => write!(f, "`{name}` was not found on PATH"),
            ProgramError::NotExecutable(path) => write!(f, "`{}` is not an executable file", path.display()),
        }
    }
}

impl std::error::Error for ProgramError {}

/// Finds `program`: a name with a `/` is a path, taken relative to `base` (an absolute one
/// stays as it is); a bare name is looked up in the directories of `PATH`, in order (relative
/// ones against the current directory, as a shell does). Either way the result is a file this
/// process may execute; the path is returned as joined, not canonicalised.
pub fn find_program(program: &str, base: &Path) -> Result<PathBuf, ProgramError> {
    if program.contains('/') {
        let path = base.join(program);
        // An absolute path is checked where it is: `which`'s existence and `access(X_OK)` checks.
        return match which::which_in_global(&path, None::<&str>).ok().and_then(|mut found| found.next()) {
            Some(_) => Ok(path),
            None => Err(ProgramError::NotExecutable(path)),
        };
    }
    let not_found = || ProgramError::NotOnPath(program.to_string());
    if program.is_empty() {
        return Err(not_found());
    }
    let path = std::env::var_os("PATH").ok_or_else(not_found)?;
    which::which_in_global(program, Some(path)).ok().and_then(|mut found| found.next()).ok_or_else(not_found)
}

/// [`find_program`] for a program toolshed itself runs outside any sandbox (a JS runtime, npm):
/// a bare name is looked up only in the absolute `PATH` directories outside `untrusted` (the
/// worktree, the temp dirs), where a sandboxed command may have put a program of that name (a
/// `node_modules/.bin` that direnv put on `PATH`, `.` or another relative entry).
pub fn find_trusted_program(program: &str, untrusted: &[PathBuf]) -> Result<PathBuf, ProgramError> {
    if program.contains('/') || program.is_empty() {
        return find_program(program, Path::new("/"));
    }
    let not_found = || ProgramError::NotOnPath(program.to_string());
    let path = std::env::var_os("PATH").ok_or_else(not_found)?;
    let dirs = std::env::split_paths(&path).filter(|d| d.is_absolute() && !untrusted.iter().any(|u| d.starts_with(u)));
    let trusted = std::env::join_paths(dirs).map_err(|_| not_found())?;
    which::which_in_global(program, Some(trusted)).ok().and_then(|mut found| found.next()).ok_or_else(not_found)
}

/// The directories a sandboxed command may write that programs are never taken from by
/// [`find_trusted_program`]: `root` (the worktree) and the temp dirs.
pub fn untrusted_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf(), std::env::temp_dir()];
    dirs.extend(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from));
    dirs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn write(path: &Path, mode: u32) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn bare_names_are_looked_up_on_path() {
        let found = find_program("sh", Path::new("/nowhere")).unwrap();
        assert!(found.is_absolute() && found.ends_with("sh"), "{}", found.display());
        assert_eq!(
            find_program("no-such-program-xyz", Path::new("/")).unwrap_err(),
            ProgramError::NotOnPath("no-such-program-xyz".into())
        );
        assert_eq!(find_program("", Path::new("/")).unwrap_err().to_string(), "`` was not found on PATH");
    }

    #[test]
    fn trusted_lookups_skip_untrusted_and_relative_path_entries() {
        // Only the PATH of this process is read, so the untrusted dirs are chosen to cover
        // where `sh` is: every absolute PATH entry.
        let path = std::env::var_os("PATH").unwrap();
        let all: Vec<PathBuf> = std::env::split_paths(&path).filter(|d| d.is_absolute()).collect();
        assert!(find_trusted_program("sh", &[]).is_ok());
        assert_eq!(find_trusted_program("sh", &all).unwrap_err(), ProgramError::NotOnPath("sh".into()));
        let dirs = untrusted_dirs(Path::new("/work/x"));
        assert!(dirs.contains(&PathBuf::from("/work/x")) && dirs.contains(&PathBuf::from("/tmp")));
    }

    #[test]
    fn paths_are_relative_to_the_base_and_must_be_executable() {
        let tmp = tempfile::tempdir().unwrap();
        write(&tmp.path().join("bin/tool"), 0o755);
        write(&tmp.path().join("bin/plain"), 0o644);
        std::fs::create_dir_all(tmp.path().join("bin/dir")).unwrap();
        assert_eq!(find_program("bin/tool", tmp.path()).unwrap(), tmp.path().join("bin/tool"));
        assert_eq!(find_program("./bin/tool", tmp.path()).unwrap(), tmp.path().join("./bin/tool"));
        let absolute = tmp.path().join("bin/tool");
        assert_eq!(find_program(absolute.to_str().unwrap(), Path::new("/elsewhere")).unwrap(), absolute);
        for name in ["bin/missing", "bin/dir", "./bin/missing"] {
            let err = find_program(name, tmp.path()).unwrap_err();
            assert_eq!(err, ProgramError::NotExecutable(tmp.path().join(name)));
            assert_eq!(err.to_string(), format!("`{}` is not an executable file", tmp.path().join(name).display()));
        }
        // Root may execute any file with an execute bit; a file with none is refused for everyone.
        assert!(matches!(find_program("bin/plain", tmp.path()), Err(ProgramError::NotExecutable(_))));
    }
}
