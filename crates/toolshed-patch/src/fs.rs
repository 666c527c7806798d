//! The file-system seam: everything the crate reads or writes goes through [`FileSystem`].
//! [`MemFs`] keeps a tree in memory (tests, dry runs) and can be told to fail an operation;
//! [`crate::OsFs`] is the real disk.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// What is at a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// Nothing.
    Missing,
    /// A regular file (symbolic links are followed).
    File,
    /// A directory.
    Dir,
    /// Something else (a socket, a device, ...).
    Other,
}

/// One file for [`FileSystem::create_many`].
#[derive(Clone, Copy, Debug)]
pub struct NewFile<'a> {
    /// Where to create it (nothing may be there).
    pub path: &'a Path,
    /// Its content.
    pub data: &'a [u8],
    /// A file whose permissions it gets.
    pub like: Option<&'a Path>,
}

/// The operations applying a patch needs. Staged files are created next to their targets, so a
/// rename never crosses file systems.
pub trait FileSystem {
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// What is at `path`; `Missing` rather than an error when nothing is.
    fn kind(&self, path: &Path) -> io::Result<FileKind>;

    /// Creates one directory (its parent exists).
    fn create_dir(&self, path: &Path) -> io::Result<()>;

    /// Removes an empty directory.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;

    /// Creates a new file holding `data`, failing with `AlreadyExists` if `path` exists. With
    /// `like`, the new file gets that file's permissions.
    fn create_new(&self, path: &Path, data: &[u8], like: Option<&Path>) -> io::Result<()>;

    /// Creates every file as [`FileSystem::create_new`] does (possibly in parallel), and with
    /// `durable` makes their data durable too. One result per file, in order; a file whose
    /// result is an error other than `AlreadyExists` may have been created.
    fn create_many(&self, files: &[NewFile<'_>], durable: bool) -> Vec<io::Result<()>> {
        let mut results: Vec<io::Result<()>> = files.iter().map(|f| self.create_new(f.path, f.data, f.like)).collect();
        if durable {
            let created: Vec<PathBuf> =
                files.iter().zip(&results).filter(|(_, r)| r.is_ok()).map(|(f, _)| f.path.to_path_buf()).collect();
            if let Err(e) = self.sync_files(&created) {
                for r in results.iter_mut().filter(|r| r.is_ok()) {
                    *r = Err(io::Error::new(e.kind(), e.to_string()));
                }
            }
        }
        results
    }

    /// Makes the data of these files durable, as one batched operation.
    fn sync_files(&self, paths: &[PathBuf]) -> io::Result<()>;

    /// Makes the entries of these directories (renames, removals) durable.
    fn sync_dirs(&self, dirs: &[PathBuf]) -> io::Result<()>;

    /// Renames `from` to `to`, atomically replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes a file.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Removes files, ignoring failures (cleanup of leftovers), possibly in parallel.
    fn remove_many(&self, paths: &[PathBuf]) {
        for path in paths {
            let _ = self.remove_file(path);
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    File(Vec<u8>),
    Dir,
}

/// Which operation of a [`MemFs`] should fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOn {
    /// Creating a file whose path ends with the given suffix.
    CreateNew,
    /// The data sync.
    SyncFiles,
    /// A rename whose destination ends with the suffix.
    Rename,
    /// The directory sync.
    SyncDirs,
}

struct Fault {
    on: FailOn,
    suffix: String,
}

/// An in-memory tree of files and directories, with optional fault injection. Paths are used
/// as given (no normalisation); the root `/` always exists.
#[derive(Default)]
pub struct MemFs {
    nodes: Mutex<BTreeMap<PathBuf, Node>>,
    faults: Mutex<Vec<Fault>>,
}

impl MemFs {
    /// An empty tree.
    pub fn new() -> Self {
        MemFs::default()
    }

    fn nodes(&self) -> std::sync::MutexGuard<'_, BTreeMap<PathBuf, Node>> {
        self.nodes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a file, creating its parent directories.
    pub fn insert_file(&self, path: impl AsRef<Path>, data: impl Into<Vec<u8>>) {
        let path = path.as_ref();
        let mut nodes = self.nodes();
        for dir in path.ancestors().skip(1) {
            if !dir.as_os_str().is_empty() {
                nodes.insert(dir.to_path_buf(), Node::Dir);
            }
        }
        nodes.insert(path.to_path_buf(), Node::File(data.into()));
    }

    /// Adds a directory and its parents.
    pub fn insert_dir(&self, path: impl AsRef<Path>) {
        let mut nodes = self.nodes();
        for dir in path.as_ref().ancestors() {
            if !dir.as_os_str().is_empty() {
                nodes.insert(dir.to_path_buf(), Node::Dir);
            }
        }
    }

    /// Makes the next matching operation on a path ending with `suffix` fail (once).
    pub fn fail(&self, on: FailOn, suffix: impl Into<String>) {
        self.faults.lock().unwrap_or_else(PoisonError::into_inner).push(Fault { on, suffix: suffix.into() });
    }

    fn check(&self, on: FailOn, path: &Path) -> io::Result<()> {
        let mut faults = self.faults.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = faults.iter().position(|f| f.on == on && path.to_string_lossy().ends_with(&f.suffix)) {
            faults.remove(i);
            return Err(io::Error::other(format!("injected failure ({on:?})")));
        }
        Ok(())
    }

    /// Every file and its contents, sorted by path.
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        self.nodes()
            .iter()
            .filter_map(|(p, n)| match n {
                Node::File(data) => Some((p.clone(), data.clone())),
                Node::Dir => None,
            })
            .collect()
    }

    /// Every directory, sorted.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.nodes().iter().filter(|(_, n)| **n == Node::Dir).map(|(p, _)| p.clone()).collect()
    }

    fn parent_is_dir(nodes: &BTreeMap<PathBuf, Node>, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() && parent != Path::new("/") => match nodes.get(parent) {
                Some(Node::Dir) => Ok(()),
                Some(Node::File(_)) => Err(io::Error::new(io::ErrorKind::NotADirectory, "not a directory")),
                None => Err(io::ErrorKind::NotFound.into()),
            },
            _ => Ok(()),
        }
    }
}

impl FileSystem for MemFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.nodes().get(path) {
            Some(Node::File(data)) => Ok(data.clone()),
            Some(Node::Dir) => Err(io::ErrorKind::IsADirectory.into()),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        if path == Path::new("/") {
            return Ok(FileKind::Dir);
        }
        Ok(match self.nodes().get(path) {
            Some(Node::File(_)) => FileKind::File,
            Some(Node::Dir) => FileKind::Dir,
            None => FileKind::Missing,
        })
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        let mut nodes = self.nodes();
        if nodes.contains_key(path) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        Self::parent_is_dir(&nodes, path)?;
        nodes.insert(path.to_path_buf(), Node::Dir);
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        let mut nodes = self.nodes();
        if nodes.get(path) != Some(&Node::Dir) {
            return Err(io::ErrorKind::NotFound.into());
        }
        if nodes.keys().any(|k| k.parent() == Some(path)) {
            return Err(io::ErrorKind::DirectoryNotEmpty.into());
        }
        nodes.remove(path);
        Ok(())
    }

    fn create_new(&self, path: &Path, data: &[u8], _like: Option<&Path>) -> io::Result<()> {
        self.check(FailOn::CreateNew, path)?;
        let mut nodes = self.nodes();
        if nodes.contains_key(path) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        Self::parent_is_dir(&nodes, path)?;
        nodes.insert(path.to_path_buf(), Node::File(data.to_vec()));
        Ok(())
    }

    fn sync_files(&self, paths: &[PathBuf]) -> io::Result<()> {
        for p in paths {
            self.check(FailOn::SyncFiles, p)?;
        }
        Ok(())
    }

    fn sync_dirs(&self, dirs: &[PathBuf]) -> io::Result<()> {
        for d in dirs {
            self.check(FailOn::SyncDirs, d)?;
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.check(FailOn::Rename, to)?;
        let mut nodes = self.nodes();
        match nodes.get(from) {
            Some(Node::File(_)) => {}
            Some(Node::Dir) => return Err(io::ErrorKind::IsADirectory.into()),
            None => return Err(io::ErrorKind::NotFound.into()),
        }
        if nodes.get(to) == Some(&Node::Dir) {
            return Err(io::ErrorKind::IsADirectory.into());
        }
        Self::parent_is_dir(&nodes, to)?;
        if let Some(node) = nodes.remove(from) {
            nodes.insert(to.to_path_buf(), node);
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut nodes = self.nodes();
        match nodes.get(path) {
            Some(Node::File(_)) => {
                nodes.remove(path);
                Ok(())
            }
            Some(Node::Dir) => Err(io::ErrorKind::IsADirectory.into()),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memfs_behaves_like_a_tree() {
        let fs = MemFs::new();
        fs.insert_file("/w/a/b.txt", "x");
        assert_eq!(fs.kind(Path::new("/w/a")).unwrap(), FileKind::Dir);
        assert_eq!(fs.kind(Path::new("/w/c")).unwrap(), FileKind::Missing);
        assert_eq!(
            fs.create_new(Path::new("/w/a/b.txt"), b"y", None).unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(fs.create_new(Path::new("/w/z/q"), b"y", None).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(fs.remove_dir(Path::new("/w/a")).unwrap_err().kind(), io::ErrorKind::DirectoryNotEmpty);
        fs.rename(Path::new("/w/a/b.txt"), Path::new("/w/b.txt")).unwrap();
        assert_eq!(fs.read(Path::new("/w/b.txt")).unwrap(), b"x");
        fs.remove_dir(Path::new("/w/a")).unwrap();
        fs.fail(FailOn::Rename, "c.txt");
        assert!(fs.rename(Path::new("/w/b.txt"), Path::new("/w/c.txt")).is_err());
        fs.rename(Path::new("/w/b.txt"), Path::new("/w/c.txt")).unwrap();
    }
}
