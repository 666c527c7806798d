//! Writing a [`Plan`](crate::Plan) all or nothing.
//!
//! 1. Create missing parent directories.
//! 2. Stage every new file's data in a temporary file beside its target, and
//! 3. make all staged data durable, in one batch ([`FileSystem::create_many`]).
//! 4. Rename each staged file over its target (one atomic step per file); a deleted file is
//!    renamed aside. If any step fails, every earlier step is undone in reverse order: a replaced
//!    file gets its original bytes back (kept in memory from planning), a new file is removed, a
//!    deleted one renamed back.
//! 5. Make the directory entries durable, then remove the deleted files' bytes.
//!
//! A crash can leave some of a multi-file patch applied, but never a torn or empty file.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::CommitError;
use crate::fs::{FileKind, FileSystem, NewFile};
use crate::plan::FileOp;

/// How hard to try to make the result survive a crash.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// Sync staged data before any rename and the directories after (the default).
    #[default]
    Durable,
    /// Skip both syncs (tests, throwaway trees).
    Relaxed,
}

/// Options for [`commit`].
#[derive(Clone, Debug)]
pub struct CommitOptions {
    /// Whether to sync.
    pub durability: Durability,
    /// Marks temporary files (`.NAME.TAG-N.tmp`); include something unique to the process. The
    /// default, `toolshed-PID`, makes them [`crate::temp`] files.
    pub temp_tag: String,
}

impl Default for CommitOptions {
    fn default() -> Self {
        CommitOptions { durability: Durability::Durable, temp_tag: crate::temp::tag() }
    }
}

/// One step that may need undoing.
enum Step<'a> {
    /// A temporary file that another step now accounts for.
    Claimed,
    /// A directory this commit created.
    CreatedDir(PathBuf),
    /// A staged (or reserved) temporary file that is not in place yet.
    Temp(PathBuf),
    /// `path` now holds the new content; `original` is what it held before, if anything, and
    /// `restore` a copy of it with its permissions (when the new content's came from elsewhere).
    Installed { path: &'a Path, original: Option<&'a [u8]>, restore: Option<PathBuf> },
    /// `path` was renamed aside to `backup`.
    Deleted { path: &'a Path, backup: PathBuf },
}

struct Txn<'a, F: FileSystem + ?Sized> {
    fs: &'a F,
    opts: &'a CommitOptions,
    steps: Vec<Step<'a>>,
    counter: usize,
}

fn fail(action: &str, display: &str, e: &io::Error) -> CommitError {
    CommitError { action: action.into(), path: display.into(), reason: e.to_string(), unrestored: Vec::new() }
}

/// Writes `ops` (from one plan) so that either all of them land or none does.
pub fn commit<F: FileSystem + ?Sized>(fs: &F, ops: &[FileOp], opts: &CommitOptions) -> Result<(), CommitError> {
    let mut txn = Txn { fs, opts, steps: Vec::new(), counter: 0 };
    match txn.run(ops) {
        Ok(()) => {
            txn.cleanup();
            Ok(())
        }
        Err(mut e) => {
            e.unrestored = txn.rollback();
            Err(e)
        }
    }
}

impl<'a, F: FileSystem + ?Sized> Txn<'a, F> {
    fn run(&mut self, ops: &'a [FileOp]) -> Result<(), CommitError> {
        self.create_dirs(ops)?;
        let staged = self.stage(ops)?;
        let mut staged = staged.into_iter();
        for op in ops {
            match op {
                FileOp::Write { path, display, original, mode_from, .. } => {
                    let Some(tmp) = staged.next() else { break };
                    let keep_mode = mode_from.is_some();
                    self.install(path, tmp, original.as_deref(), keep_mode).map_err(|e| fail("write", display, &e))?;
                }
                FileOp::Delete { path, display } => self.delete(path).map_err(|e| fail("delete file", display, &e))?,
            }
        }
        if self.opts.durability == Durability::Durable {
            let mut dirs: Vec<PathBuf> =
                ops.iter().filter_map(|op| op.path().parent().map(Path::to_path_buf)).collect();
            dirs.sort();
            dirs.dedup();
            self.fs.sync_dirs(&dirs).map_err(|e| fail("sync the directories of", "the patched files", &e))?;
        }
        Ok(())
    }

    /// Creates the missing parents of new files, outermost first.
    fn create_dirs(&mut self, ops: &[FileOp]) -> Result<(), CommitError> {
        let mut known: HashSet<PathBuf> = HashSet::new();
        for op in ops {
            let FileOp::Write { path, display, original: None, .. } = op else { continue };
            let mut missing = Vec::new();
            for dir in path.ancestors().skip(1) {
                if dir.as_os_str().is_empty() || known.contains(dir) {
                    break;
                }
                match self.fs.kind(dir).map_err(|e| fail("create the directory for", display, &e))? {
                    FileKind::Dir => {
                        known.insert(dir.to_path_buf());
                        break;
                    }
                    FileKind::Missing => missing.push(dir.to_path_buf()),
                    _ => {
                        let e = io::Error::new(
                            io::ErrorKind::NotADirectory,
                            format!("{} is not a directory", dir.display()),
                        );
                        return Err(fail("write", display, &e));
                    }
                }
            }
            for dir in missing.into_iter().rev() {
                self.fs.create_dir(&dir).map_err(|e| fail("create the directory for", display, &e))?;
                known.insert(dir.clone());
                self.steps.push(Step::CreatedDir(dir));
            }
        }
        Ok(())
    }

    /// Creates a temporary file beside each written target holding its new content, in one
    /// batch, synced when durable. Returns each temporary path with the index of its step.
    fn stage(&mut self, ops: &[FileOp]) -> Result<Vec<(PathBuf, usize)>, CommitError> {
        // (target, display, data, the file whose permissions it gets)
        let writes: Vec<(&Path, &str, &[u8], Option<&Path>)> = ops
            .iter()
            .filter_map(|op| match op {
                FileOp::Write { path, display, contents, original, mode_from } => Some((
                    path.as_path(),
                    display.as_str(),
                    contents.as_slice(),
                    mode_from.as_deref().or(original.is_some().then_some(path.as_path())),
                )),
                FileOp::Delete { .. } => None,
            })
            .collect();
        let durable = self.opts.durability == Durability::Durable;
        let mut staged: Vec<Option<(PathBuf, usize)>> = vec![None; writes.len()];
        let mut pending: Vec<usize> = (0..writes.len()).collect();
        for _attempt in 0..100 {
            if pending.is_empty() {
                break;
            }
            let names: Vec<PathBuf> = pending.iter().map(|&i| self.temp_name(writes[i].0)).collect();
            let files: Vec<NewFile<'_>> = pending
                .iter()
                .zip(&names)
                .map(|(&i, tmp)| {
                    let (_, _, data, like) = writes[i];
                    NewFile { path: tmp, data, like }
                })
                .collect();
            let results = self.fs.create_many(&files, durable);
            let mut retry = Vec::new();
            let mut failure = None;
            for ((&i, tmp), result) in pending.iter().zip(names).zip(results) {
                match result {
                    // Someone else's file: pick another name, and never remove it.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => retry.push(i),
                    result => {
                        self.steps.push(Step::Temp(tmp.clone()));
                        staged[i] = Some((tmp, self.steps.len() - 1));
                        if let Err(e) = result {
                            failure.get_or_insert((i, e));
                        }
                    }
                }
            }
            if let Some((i, e)) = failure {
                return Err(fail("write", writes[i].1, &e));
            }
            pending = retry;
        }
        staged
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                s.ok_or_else(|| {
                    fail("write", writes[i].1, &io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary name"))
                })
            })
            .collect()
    }

    fn temp_name(&mut self, target: &Path) -> PathBuf {
        self.counter += 1;
        let name = target.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        let mut short: String = name.chars().take(80).collect();
        if short.is_empty() {
            short.push('f');
        }
        // With the default tag this is `crate::temp::name`: the file tools hide such files and
        // `crate::temp::sweep_stale` removes them once their process is gone.
        target.with_file_name(format!(".{short}.{}-{}.tmp", self.opts.temp_tag, self.counter))
    }

    /// Creates a fresh temporary file beside `target` holding `data`; returns its path and the
    /// index of its step.
    fn new_temp(&mut self, target: &Path, data: &[u8], like: Option<&Path>) -> io::Result<(PathBuf, usize)> {
        loop {
            let tmp = self.temp_name(target);
            match self.fs.create_new(&tmp, data, like) {
                Ok(()) => {
                    self.steps.push(Step::Temp(tmp.clone()));
                    return Ok((tmp, self.steps.len() - 1));
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && self.counter < 1_000_000 => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Marks the `Temp` step `index` as accounted for by another step.
    fn claim(&mut self, index: usize) {
        if let Some(step) = self.steps.get_mut(index) {
            *step = Step::Claimed;
        }
    }

    /// Renames the staged `tmp` over `path`. With `keep_mode` (the new file's permissions are
    /// not those of the file it replaces), the file there is first copied beside it with its own
    /// permissions, so that an undo puts back its mode as well as its bytes.
    fn install(
        &mut self,
        path: &'a Path,
        (tmp, tmp_step): (PathBuf, usize),
        original: Option<&'a [u8]>,
        keep_mode: bool,
    ) -> io::Result<()> {
        let restore = match original {
            Some(bytes) if keep_mode => Some(self.new_temp(path, bytes, Some(path))?.0),
            _ => None,
        };
        self.fs.rename(&tmp, path)?;
        self.claim(tmp_step);
        self.steps.push(Step::Installed { path, original, restore });
        Ok(())
    }

    /// Puts `original` back at `path` through a temporary file (with the permissions the new
    /// file carried over from it).
    fn restore(&mut self, path: &Path, original: &[u8]) -> io::Result<()> {
        let (tmp, step) = self.new_temp(path, original, Some(path))?;
        self.fs.rename(&tmp, path)?;
        self.claim(step);
        Ok(())
    }

    fn delete(&mut self, path: &'a Path) -> io::Result<()> {
        let (backup, backup_step) = self.new_temp(path, b"", None)?;
        self.fs.rename(path, &backup)?;
        self.claim(backup_step);
        self.steps.push(Step::Deleted { path, backup });
        Ok(())
    }

    /// Undoes every step, newest first; returns what could not be put back.
    fn rollback(&mut self) -> Vec<String> {
        let mut unrestored = Vec::new();
        let steps = std::mem::take(&mut self.steps);
        for step in steps.into_iter().rev() {
            let (result, path) = match step {
                Step::Claimed => continue,
                Step::CreatedDir(dir) => (self.fs.remove_dir(&dir), None),
                Step::Temp(tmp) => (self.fs.remove_file(&tmp), None),
                // (The copy's own `Temp` step, undone after this one, then finds nothing to remove.)
                Step::Installed { path, restore: Some(copy), .. } => (self.fs.rename(&copy, path), Some(path)),
                Step::Installed { path, original: Some(original), .. } => (self.restore(path, original), Some(path)),
                Step::Installed { path, original: None, .. } => (self.fs.remove_file(path), Some(path)),
                Step::Deleted { path, backup } => (self.fs.rename(&backup, path), Some(path)),
            };
            if let (Err(e), Some(path)) = (result, path) {
                unrestored.push(format!("{} ({e})", path.display()));
            }
        }
        // Temporary files of restores that failed half-way.
        for step in std::mem::take(&mut self.steps) {
            if let Step::Temp(tmp) = step {
                let _ = self.fs.remove_file(&tmp);
            }
        }
        unrestored
    }

    /// Removes what is left after success: the deleted files' bytes (best effort: a leftover
    /// is only clutter).
    fn cleanup(&mut self) {
        let old: Vec<PathBuf> = self
            .steps
            .drain(..)
            .filter_map(|step| match step {
                Step::Deleted { backup, .. } | Step::Temp(backup) => Some(backup),
                Step::Installed { .. } | Step::CreatedDir(_) | Step::Claimed => None,
            })
            .collect();
        self.fs.remove_many(&old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{FailOn, MemFs};
    use std::collections::BTreeMap;

    fn write(path: &str, data: &str, original: Option<&str>) -> FileOp {
        FileOp::Write {
            path: path.into(),
            display: path.into(),
            contents: data.into(),
            original: original.map(Into::into),
            mode_from: None,
        }
    }

    fn tree() -> MemFs {
        let fs = MemFs::new();
        fs.insert_file("/w/a.txt", "old a\n");
        fs.insert_file("/w/b.txt", "old b\n");
        fs.insert_file("/w/gone.txt", "bye\n");
        fs
    }

    fn ops() -> Vec<FileOp> {
        vec![
            write("/w/a.txt", "new a\n", Some("old a\n")),
            FileOp::Delete { path: "/w/gone.txt".into(), display: "gone.txt".into() },
            write("/w/new/deep/c.txt", "c\n", None),
            write("/w/b.txt", "new b\n", Some("old b\n")),
        ]
    }

    fn snapshot(fs: &MemFs) -> (BTreeMap<PathBuf, Vec<u8>>, Vec<PathBuf>) {
        (fs.files(), fs.dirs())
    }

    #[test]
    fn success_writes_everything_and_leaves_no_temporaries() {
        let fs = tree();
        commit(&fs, &ops(), &CommitOptions::default()).unwrap();
        let files: Vec<_> = fs.files().into_iter().map(|(p, d)| (p, String::from_utf8(d).unwrap())).collect();
        assert_eq!(
            files,
            [
                ("/w/a.txt".into(), "new a\n".into()),
                ("/w/b.txt".into(), "new b\n".into()),
                ("/w/new/deep/c.txt".into(), "c\n".into())
            ]
        );
    }

    #[test]
    fn any_failure_restores_the_tree_exactly() {
        let failures = [
            (FailOn::CreateNew, "tmp"),
            (FailOn::SyncFiles, "tmp"),
            (FailOn::Rename, "a.txt"),
            (FailOn::Rename, "b.txt"),
            (FailOn::Rename, "c.txt"),
            (FailOn::SyncDirs, "deep"),
        ];
        for (on, suffix) in failures {
            let fs = tree();
            let before = snapshot(&fs);
            fs.fail(on, suffix);
            let err = commit(&fs, &ops(), &CommitOptions::default()).unwrap_err();
            assert!(err.unrestored.is_empty(), "{err}");
            assert_eq!(snapshot(&fs), before, "{on:?} {suffix}");
        }
    }

    #[test]
    fn relaxed_skips_syncs() {
        let fs = tree();
        fs.fail(FailOn::SyncFiles, "tmp");
        commit(&fs, &ops(), &CommitOptions { durability: Durability::Relaxed, ..Default::default() }).unwrap();
        assert_eq!(fs.read(Path::new("/w/b.txt")).unwrap(), b"new b\n");
    }

    #[test]
    fn failure_message_says_nothing_changed() {
        let fs = tree();
        fs.fail(FailOn::Rename, "b.txt");
        let err = commit(&fs, &ops(), &CommitOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to write /w/b.txt: injected failure (Rename). No file was changed: everything written before \
             the failure was undone."
        );
    }
}
