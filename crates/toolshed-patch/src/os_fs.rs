//! [`OsFs`]: the real file system, with batched durability (one `syncfs` per file system, or
//! `fdatasync` on several threads).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::fs::{FileKind, FileSystem, NewFile};

/// How [`OsFs`] makes a batch of files durable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncStrategy {
    /// `fdatasync` every file, spread over a few threads. Costs only our own files, whatever
    /// else is waiting to be written on the machine. The default.
    #[default]
    ParallelFsync,
    /// One `syncfs` per file system (Linux): cheapest on a quiet disk, but it also waits for
    /// every other process's unwritten data on that file system.
    Syncfs,
}

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsFs {
    /// How batches are synced.
    pub sync: SyncStrategy,
}

impl OsFs {
    /// The real file system with the default sync strategy.
    pub fn new() -> Self {
        OsFs::default()
    }

    /// The real file system syncing with `strategy`.
    pub fn with_sync(strategy: SyncStrategy) -> Self {
        OsFs { sync: strategy }
    }
}

/// Runs `f` on every item, on up to `threads` threads; returns the first error.
fn parallel<T: Sync>(items: &[T], threads: usize, f: impl Fn(&T) -> io::Result<()> + Sync) -> io::Result<()> {
    if items.len() <= 1 || threads <= 1 {
        return items.iter().try_for_each(&f);
    }
    let per = items.len().div_ceil(threads.min(items.len()));
    std::thread::scope(|scope| {
        let handles: Vec<_> = items.chunks(per).map(|chunk| scope.spawn(|| chunk.iter().try_for_each(&f))).collect();
        handles.into_iter().try_for_each(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("sync thread panicked"))))
    })
}

/// Runs `f` on every item, on up to `threads` threads; one result per item, in order.
fn map_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> io::Result<R> + Sync,
) -> Vec<io::Result<R>> {
    if items.len() <= 1 || threads <= 1 {
        return items.iter().map(&f).collect();
    }
    let per = items.len().div_ceil(threads.min(items.len()));
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            items.chunks(per).map(|chunk| scope.spawn(|| chunk.iter().map(&f).collect::<Vec<_>>())).collect();
        handles
            .into_iter()
            .zip(items.chunks(per))
            .flat_map(|(h, chunk)| {
                h.join()
                    .unwrap_or_else(|_| chunk.iter().map(|_| Err(io::Error::other("worker thread panicked"))).collect())
            })
            .collect()
    })
}

/// Creates `path` (which must not exist) holding `data`, with the permissions (and, for root,
/// the owner) of `like`. On failure nothing is left behind.
fn create_file(path: &Path, data: &[u8], like: Option<&Path>) -> io::Result<File> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    let result = (|| {
        if let Some(like) = like {
            let meta = fs::metadata(like)?;
            file.set_permissions(meta.permissions())?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::MetadataExt;
                let mine = file.metadata()?;
                if (mine.uid(), mine.gid()) != (meta.uid(), meta.gid()) {
                    // Only root may give a file away; anyone else keeps their own ownership.
                    let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
                }
            }
        }
        file.write_all(data)
    })();
    match result {
        Ok(()) => Ok(file),
        Err(e) => {
            drop(file);
            let _ = fs::remove_file(path);
            Err(e)
        }
    }
}

const SYNC_THREADS: usize = 16;

/// Most staged files held open at once by [`OsFs::create_many`].
const OPEN_AT_ONCE: usize = 256;

fn fdatasync(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_data()
}

fn fsync_dir(path: &Path) -> io::Result<()> {
    match File::open(path)?.sync_all() {
        // Some file systems cannot sync a directory; their entries are as durable as they get.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        other => other,
    }
}

#[cfg(target_os = "linux")]
fn syncfs_all(paths: &[PathBuf]) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let mut devices: Vec<u64> = Vec::new();
    for path in paths {
        let meta = fs::metadata(path)?;
        if devices.contains(&meta.dev()) {
            continue;
        }
        devices.push(meta.dev());
        let file = File::open(path)?;
        // SAFETY: syncfs only reads the descriptor, which `file` keeps open for the call.
        if unsafe { libc::syncfs(file.as_raw_fd()) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn syncfs_all(paths: &[PathBuf]) -> io::Result<()> {
    parallel(paths, SYNC_THREADS, |p| fdatasync(p))
}

impl FileSystem for OsFs {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        fs::read(path)
    }

    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        match fs::metadata(path) {
            Ok(m) if m.is_file() => Ok(FileKind::File),
            Ok(m) if m.is_dir() => Ok(FileKind::Dir),
            Ok(_) => Ok(FileKind::Other),
            Err(e) if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::NotADirectory => {
                Ok(FileKind::Missing)
            }
            Err(e) => Err(e),
        }
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        fs::create_dir(path)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    fn create_new(&self, path: &Path, data: &[u8], like: Option<&Path>) -> io::Result<()> {
        create_file(path, data, like).map(drop)
    }

    /// Creates and writes the files on several threads, then (with `durable`) syncs them all on
    /// the descriptors already open. Syncing only after every file is written lets the file
    /// system commit all the new inodes in one journal transaction instead of one per file.
    fn create_many(&self, files: &[NewFile<'_>], durable: bool) -> Vec<io::Result<()>> {
        if files.len() > OPEN_AT_ONCE {
            // Bounded so a huge patch never runs out of file descriptors.
            return files.chunks(OPEN_AT_ONCE).flat_map(|batch| self.create_many(batch, durable)).collect();
        }
        let created: Vec<io::Result<File>> = map_parallel(files, SYNC_THREADS, |f| create_file(f.path, f.data, f.like));
        if !durable {
            return created.into_iter().map(|r| r.map(drop)).collect();
        }
        match self.sync {
            SyncStrategy::ParallelFsync => map_parallel(&created, SYNC_THREADS, |r| match r {
                Ok(file) => file.sync_data(),
                Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
            }),
            SyncStrategy::Syncfs => {
                let paths: Vec<PathBuf> =
                    files.iter().zip(&created).filter(|(_, r)| r.is_ok()).map(|(f, _)| f.path.to_path_buf()).collect();
                let synced = syncfs_all(&paths);
                created
                    .into_iter()
                    .map(|r| match (r, &synced) {
                        (Ok(_), Ok(())) => Ok(()),
                        (Ok(_), Err(e)) => Err(io::Error::new(e.kind(), e.to_string())),
                        (Err(e), _) => Err(e),
                    })
                    .collect()
            }
        }
    }

    fn remove_many(&self, paths: &[PathBuf]) {
        map_parallel(paths, SYNC_THREADS, |p| fs::remove_file(p));
    }

    fn sync_files(&self, paths: &[PathBuf]) -> io::Result<()> {
        match self.sync {
            SyncStrategy::ParallelFsync => parallel(paths, SYNC_THREADS, |p| fdatasync(p)),
            SyncStrategy::Syncfs => syncfs_all(paths),
        }
    }

    fn sync_dirs(&self, dirs: &[PathBuf]) -> io::Result<()> {
        match self.sync {
            SyncStrategy::ParallelFsync => parallel(dirs, SYNC_THREADS, |d| fsync_dir(d)),
            SyncStrategy::Syncfs => syncfs_all(dirs),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn create_new_copies_permissions_and_refuses_existing_paths() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("run.sh");
        fs::write(&script, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o751)).unwrap();
        let tmp = dir.path().join(".run.sh.tmp");
        OsFs::new().create_new(&tmp, b"echo\n", Some(&script)).unwrap();
        assert_eq!(fs::metadata(&tmp).unwrap().permissions().mode() & 0o777, 0o751);
        let again = OsFs::new().create_new(&tmp, b"x", None).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
    }

    #[test]
    fn create_many_reports_each_file_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let taken = dir.path().join("taken");
        fs::write(&taken, "mine").unwrap();
        let paths: Vec<PathBuf> = (0..40).map(|i| dir.path().join(format!("n{i}"))).collect();
        let mut files: Vec<NewFile<'_>> =
            paths.iter().map(|p| NewFile { path: p, data: b"data", like: None }).collect();
        files.insert(7, NewFile { path: &taken, data: b"theirs", like: None });
        for durable in [true, false] {
            for p in &paths {
                let _ = fs::remove_file(p);
            }
            let results = OsFs::new().create_many(&files, durable);
            assert_eq!(results.len(), 41);
            assert_eq!(results[7].as_ref().unwrap_err().kind(), io::ErrorKind::AlreadyExists);
            assert!(results.iter().enumerate().all(|(i, r)| i == 7 || r.is_ok()));
            assert_eq!(fs::read(&taken).unwrap(), b"mine");
            assert_eq!(fs::read(&paths[39]).unwrap(), b"data");
        }
        OsFs::new().remove_many(&paths);
        assert!(paths.iter().all(|p| !p.exists()));
    }

    #[test]
    fn both_sync_strategies_sync_real_files() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = (0..20).map(|i| dir.path().join(format!("f{i}"))).collect();
        for f in &files {
            fs::write(f, "data").unwrap();
        }
        for strategy in [SyncStrategy::ParallelFsync, SyncStrategy::Syncfs] {
            let fs_ = OsFs::with_sync(strategy);
            fs_.sync_files(&files).unwrap();
            fs_.sync_dirs(&[dir.path().to_path_buf()]).unwrap();
        }
        let missing = OsFs::new().sync_files(&[dir.path().join("nope")]).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn kind_reports_missing_for_paths_through_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f"), "x").unwrap();
        let osfs = OsFs::new();
        assert_eq!(osfs.kind(&dir.path().join("f/g")).unwrap(), FileKind::Missing);
        assert_eq!(osfs.kind(&dir.path().join("f")).unwrap(), FileKind::File);
        assert_eq!(osfs.kind(dir.path()).unwrap(), FileKind::Dir);
    }
}
