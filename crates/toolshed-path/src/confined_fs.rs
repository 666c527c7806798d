//! The patch engine's file system, confined to the directories toolshed resolved: every
//! operation walks from the worktree root (or from `/`, for a path outside that was approved)
//! without following links, and acts on the last component inside the directory it reached. A
//! directory swapped for a link to elsewhere after the paths were checked leads nowhere: the
//! walk fails and nothing is read or written outside. Bulk work (creating, syncing) goes to
//! [`OsFs`] through `/proc/self/fd/N/NAME`, names that stay inside the directory opened.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{self, Read as _};
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use toolshed_patch::fs::NewFile;
use toolshed_patch::{FileKind, FileSystem, OsFs};

use crate::safe::Dir;

/// Files created at once, at most (each holds a directory open while it is created).
const BATCH: usize = 256;

/// [`FileSystem`] over the real disk, confined as the module says.
pub struct ConfinedFs {
    root: PathBuf,
    disk: OsFs,
}

/// The directory holding a path, opened without following links, and the path's last name.
struct At {
    dir: Dir,
    name: OsString,
}

impl At {
    /// A path for `name` that resolves through the open directory, not through its ancestors.
    fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.dir.fd().as_raw_fd())).join(&self.name)
    }
}

impl ConfinedFs {
    /// A file system for paths under the canonical worktree `root` (and approved absolute paths
    /// outside it, walked from `/`).
    pub fn new(root: &Path) -> Self {
        ConfinedFs { root: root.to_path_buf(), disk: OsFs::new() }
    }

    fn at(&self, path: &Path) -> io::Result<At> {
        let base = if path.starts_with(&self.root) { self.root.as_path() } else { Path::new("/") };
        let (dir, name) = crate::open_parent(base, path)?;
        Ok(At { dir, name: name.to_os_string() })
    }
}

impl ConfinedFs {
    /// The regular file `like` (whose permissions a new file gets), opened without following a
    /// link: `None` when it is anything else (a link swapped in would lend its target's mode,
    /// setuid bits included).
    fn like(&self, like: &Path) -> Option<std::os::fd::OwnedFd> {
        let at = self.at(like).ok()?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(at.dir.fd(), at.name.as_os_str(), flags, Mode::empty()).ok()?;
        let st = rustix::fs::fstat(&fd).ok()?;
        (st.st_mode & 0o170000 == 0o100000).then_some(fd)
    }
}

/// A path naming the open file `fd` itself.
fn fd_path(fd: &std::os::fd::OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

impl FileSystem for ConfinedFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let at = self.at(path)?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(at.dir.fd(), at.name.as_os_str(), flags, Mode::empty())?;
        let mut data = Vec::new();
        std::fs::File::from(fd).read_to_end(&mut data)?;
        Ok(data)
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        // The base itself, where every walk starts (the commit looks at a new file's ancestors).
        if path == self.root || path == Path::new("/") {
            return Ok(FileKind::Dir);
        }
        let at = match self.at(path) {
            Ok(at) => at,
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory => {
                return Ok(FileKind::Missing);
            }
            Err(e) => return Err(e),
        };
        match rustix::fs::statat(at.dir.fd(), at.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(match st.st_mode & 0o170000 {
                0o100000 => FileKind::File,
                0o040000 => FileKind::Dir,
                _ => FileKind::Other,
            }),
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => Ok(FileKind::Missing),
            Err(e) => Err(e.into()),
        }
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let at = self.at(path)?;
        Ok(rustix::fs::mkdirat(at.dir.fd(), at.name.as_os_str(), Mode::from_raw_mode(0o777))?)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let at = self.at(path)?;
        Ok(rustix::fs::unlinkat(at.dir.fd(), at.name.as_os_str(), AtFlags::REMOVEDIR)?)
    }

    fn create_new(&self, path: &Path, data: &[u8], like: Option<&Path>) -> io::Result<()> {
        let at = self.at(path)?;
        let like = like.and_then(|l| self.like(l));
        self.disk.create_new(&at.path(), data, like.as_ref().map(fd_path).as_deref())
    }

    fn create_many(&self, files: &[NewFile<'_>], durable: bool) -> Vec<io::Result<()>> {
        if files.len() > BATCH {
            return files.chunks(BATCH).flat_map(|batch| self.create_many(batch, durable)).collect();
        }
        // Each file's directory is opened (and kept open) first; the creating is OsFs's.
        let ats: Vec<io::Result<(At, Option<std::os::fd::OwnedFd>)>> =
            files.iter().map(|f| Ok((self.at(f.path)?, f.like.and_then(|l| self.like(l))))).collect();
        let paths: Vec<Option<(PathBuf, Option<PathBuf>)>> =
            ats.iter().map(|a| a.as_ref().ok().map(|(at, like)| (at.path(), like.as_ref().map(fd_path)))).collect();
        let ready: Vec<NewFile<'_>> = files
            .iter()
            .zip(&paths)
            .filter_map(|(f, p)| p.as_ref().map(|(path, like)| NewFile { path, data: f.data, like: like.as_deref() }))
            .collect();
        let mut created = self.disk.create_many(&ready, durable).into_iter();
        ats.into_iter().map(|a| a.and_then(|_| created.next().unwrap_or(Ok(())))).collect()
    }

    fn sync_files(&self, paths: &[PathBuf]) -> io::Result<()> {
        let ats = paths.iter().map(|p| self.at(p)).collect::<io::Result<Vec<At>>>()?;
        self.disk.sync_files(&ats.iter().map(At::path).collect::<Vec<_>>())
    }

    fn sync_dirs(&self, dirs: &[PathBuf]) -> io::Result<()> {
        // A directory itself: its own handle, opened by the walk.
        let mut opened: HashMap<&Path, Dir> = HashMap::new();
        for dir in dirs {
            let handle = if *dir == self.root {
                Dir::open_base(&self.root)?
            } else {
                let at = self.at(dir)?;
                at.dir.child(at.name.as_os_str(), false)?
            };
            opened.insert(dir, handle);
        }
        for dir in opened.values() {
            rustix::fs::fsync(dir.fd())?;
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (self.at(from)?, self.at(to)?);
        Ok(rustix::fs::renameat(from.dir.fd(), from.name.as_os_str(), to.dir.fd(), to.name.as_os_str())?)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let at = self.at(path)?;
        Ok(rustix::fs::unlinkat(at.dir.fd(), at.name.as_os_str(), AtFlags::empty())?)
    }

    fn remove_many(&self, paths: &[PathBuf]) {
        for path in paths {
            let _ = self.remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worktree whose `dir` was swapped for a link to `outside` after the paths were checked.
    fn swapped() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (root, outside) = (base.join("w"), base.join("outside"));
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("dir/v.txt"), "inside\n").unwrap();
        std::fs::write(outside.join("v.txt"), "outside\n").unwrap();
        std::fs::rename(root.join("dir"), base.join("dir-was")).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("dir")).unwrap();
        (tmp, root, outside)
    }

    #[test]
    fn nothing_is_read_or_written_through_a_directory_swapped_for_a_link() {
        let (_tmp, root, outside) = swapped();
        let fs = ConfinedFs::new(&root);
        let target = root.join("dir/v.txt");
        assert!(fs.read(&target).is_err());
        assert!(!matches!(fs.kind(&target), Ok(FileKind::File)), "the file behind the link was seen");
        assert!(fs.create_new(&root.join("dir/new.txt"), b"x", None).is_err());
        let many = [NewFile { path: &root.join("dir/many.txt"), data: b"x", like: None }];
        assert!(fs.create_many(&many, true)[0].is_err());
        assert!(fs.rename(&root.join("dir/v.txt"), &root.join("moved.txt")).is_err());
        assert!(fs.remove_file(&target).is_err());
        assert!(fs.create_dir(&root.join("dir/sub")).is_err());
        let left: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["v.txt"]);
        assert_eq!(std::fs::read_to_string(outside.join("v.txt")).unwrap(), "outside\n");
        // The link itself is a name in the worktree like any other.
        assert_eq!(fs.kind(&root.join("dir")).unwrap(), FileKind::Other);
    }

    #[test]
    fn a_new_file_never_takes_the_mode_of_what_a_link_points_to() {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("w");
        std::fs::create_dir(&root).unwrap();
        let outside = tmp.path().join("suid");
        std::fs::write(&outside, "x").unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o4755)).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("old.txt")).unwrap();
        let fs = ConfinedFs::new(&root);
        fs.create_new(&root.join("new.txt"), b"y", Some(&root.join("old.txt"))).unwrap();
        let many = [NewFile { path: &root.join("many.txt"), data: b"y", like: Some(&root.join("old.txt")) }];
        assert!(fs.create_many(&many, false)[0].is_ok());
        for name in ["new.txt", "many.txt"] {
            let mode = std::fs::metadata(root.join(name)).unwrap().permissions().mode();
            assert_eq!(mode & 0o7000, 0, "{name}: {mode:o}");
        }
        // A regular file lends its mode.
        std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
        fs.create_new(&root.join("run2.sh"), b"y", Some(&root.join("run.sh"))).unwrap();
        assert_eq!(std::fs::metadata(root.join("run2.sh")).unwrap().permissions().mode() & 0o777, 0o750);
    }

    #[test]
    fn plain_directories_work_as_on_the_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let fs = ConfinedFs::new(&root);
        assert_eq!(fs.kind(&root).unwrap(), FileKind::Dir);
        fs.create_dir(&root.join("d")).unwrap();
        let files = [
            NewFile { path: &root.join("d/a.txt"), data: b"a", like: None },
            NewFile { path: &root.join("d/b.txt"), data: b"b", like: None },
        ];
        assert!(fs.create_many(&files, true).iter().all(Result::is_ok));
        fs.create_new(&root.join("c.txt"), b"c", Some(&root.join("d/a.txt"))).unwrap();
        assert_eq!(fs.read(&root.join("d/b.txt")).unwrap(), b"b");
        fs.rename(&root.join("d/a.txt"), &root.join("a.txt")).unwrap();
        fs.sync_files(&[root.join("a.txt")]).unwrap();
        fs.sync_dirs(&[root.clone(), root.join("d")]).unwrap();
        fs.remove_file(&root.join("d/b.txt")).unwrap();
        fs.remove_dir(&root.join("d")).unwrap();
        assert_eq!(fs.kind(&root.join("d")).unwrap(), FileKind::Missing);
        assert_eq!(fs.kind(&root.join("a.txt/x")).unwrap(), FileKind::Missing);
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a");
        assert_eq!(std::fs::read_to_string(root.join("c.txt")).unwrap(), "c");
    }
}
