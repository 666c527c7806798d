//! All-or-nothing on a real disk: a failure injected at each rename restores the tree exactly,
//! permissions included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use toolshed_patch::fs::NewFile;
use toolshed_patch::{CommitOptions, FileKind, FileSystem, OsFs, apply};

/// The real file system, failing the `fail_at`-th rename.
struct Flaky {
    inner: OsFs,
    fail_at: usize,
    seen: Cell<usize>,
}

impl Flaky {
    fn tick(&self) -> io::Result<()> {
        self.seen.set(self.seen.get() + 1);
        if self.seen.get() == self.fail_at { Err(io::Error::other("disk on fire")) } else { Ok(()) }
    }
}

impl FileSystem for Flaky {
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read(path)
    }
    fn kind(&self, path: &Path) -> io::Result<FileKind> {
        self.inner.kind(path)
    }
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.create_dir(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir(path)
    }
    fn create_new(&self, path: &Path, data: &[u8], like: Option<&Path>) -> io::Result<()> {
        self.inner.create_new(path, data, like)
    }
    fn create_many(&self, files: &[NewFile<'_>], durable: bool) -> Vec<io::Result<()>> {
        self.inner.create_many(files, durable)
    }
    fn sync_files(&self, paths: &[PathBuf]) -> io::Result<()> {
        self.inner.sync_files(paths)
    }
    fn sync_dirs(&self, dirs: &[PathBuf]) -> io::Result<()> {
        self.inner.sync_dirs(dirs)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.tick()?;
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let mode = fs::symlink_metadata(&path).unwrap().permissions().mode();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if path.is_dir() {
                out.insert(rel, (Vec::new(), mode));
                stack.push(path);
            } else {
                out.insert(rel, (fs::read(&path).unwrap(), mode));
            }
        }
    }
    out
}

const PATCH: &str = "*** Begin Patch
*** Update File: a.sh
@@
-echo a
+echo A
*** Add File: new/deep/b.txt
+b
*** Delete File: gone.txt
*** Update File: c.txt
*** Move to: moved/c.txt
@@
-c
+C
*** Update File: d.txt
@@
-d
+D
*** End Patch";

#[test]
fn a_failed_rename_at_any_step_restores_the_real_tree() {
    let mut failures = 0;
    for fail_at in 1..=8 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::write(root.join("a.sh"), "echo a\n").unwrap();
        fs::set_permissions(root.join("a.sh"), fs::Permissions::from_mode(0o750)).unwrap();
        fs::write(root.join("gone.txt"), "bye\n").unwrap();
        fs::write(root.join("c.txt"), "c\n").unwrap();
        fs::write(root.join("d.txt"), "d\n").unwrap();
        let before = snapshot(root);
        let fs_ = Flaky { inner: OsFs::new(), fail_at, seen: Cell::new(0) };
        match apply(PATCH, &fs_, |p| Ok(root.join(p)), &CommitOptions::default()) {
            Err(e) => {
                failures += 1;
                assert!(!e.left_changes(), "{e}");
                assert!(e.to_string().contains("disk on fire"), "{e}");
                assert_eq!(snapshot(root), before, "fail_at={fail_at}");
            }
            Ok(_) => {
                assert_eq!(fs::read_to_string(root.join("a.sh")).unwrap(), "echo A\n");
                assert_eq!(fs::metadata(root.join("a.sh")).unwrap().permissions().mode() & 0o777, 0o750);
                assert_eq!(fs::read_to_string(root.join("moved/c.txt")).unwrap(), "C\n");
                assert!(!root.join("gone.txt").exists() && !root.join("c.txt").exists());
                let names: Vec<_> = fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name()).collect();
                assert!(names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")), "{names:?}");
            }
        }
    }
    assert_eq!(failures, 6, "one failure per rename: five sections, the move being two");
}

const MOVES: &str = "*** Begin Patch
*** Update File: run.sh
*** Move to: bin/run.sh
@@
-echo a
+echo A
*** Update File: secret.txt
*** Move to: public.sh
@@
-s
+S
*** Update File: d.txt
@@
-d
+D
*** End Patch";

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Review M3: a moved file came out with the default mode (a new path) or the replaced file's
/// (an existing one); it keeps its own, and a failure at any step puts back the replaced file's.
#[test]
fn a_moved_file_keeps_its_mode_and_a_failure_restores_the_one_it_replaced() {
    let mut failures = 0;
    for fail_at in 1..=12 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::write(root.join("run.sh"), "echo a\n").unwrap();
        fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(root.join("secret.txt"), "s\n").unwrap();
        fs::set_permissions(root.join("secret.txt"), fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(root.join("public.sh"), "p\n").unwrap();
        fs::set_permissions(root.join("public.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(root.join("d.txt"), "d\n").unwrap();
        let before = snapshot(root);
        let fs_ = Flaky { inner: OsFs::new(), fail_at, seen: Cell::new(0) };
        match apply(MOVES, &fs_, |p| Ok(root.join(p)), &CommitOptions::default()) {
            Err(e) => {
                failures += 1;
                assert!(!e.left_changes(), "{e}");
                assert_eq!(snapshot(root), before, "fail_at={fail_at}");
            }
            Ok(_) => {
                assert_eq!(fs::read_to_string(root.join("bin/run.sh")).unwrap(), "echo A\n");
                assert_eq!(mode(&root.join("bin/run.sh")), 0o755);
                assert_eq!(fs::read_to_string(root.join("public.sh")).unwrap(), "S\n");
                assert_eq!(mode(&root.join("public.sh")), 0o600);
                let names: Vec<_> = fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name()).collect();
                assert!(names.iter().all(|n| !n.to_string_lossy().ends_with(".tmp")), "{names:?}");
            }
        }
    }
    assert_eq!(failures, 5, "one failure per rename: three sections, each move being two");
}
