//! The shadow repository on real files with the real `git`: bytes and modes round-trip,
//! symlinks stay symlinks, ignored files are neither kept nor touched, `.gitattributes` cannot
//! alter bytes, it works outside git, and the user's `.git` is never written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use toolshed_agent::snapshot::{Entry, Shadow};

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every entry under `dir` (not `.git`): file bytes + mode, or a symlink's target.
fn state(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().to_path_buf();
            if rel.starts_with(".git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, (target.to_string_lossy().as_bytes().to_vec(), 0o120000));
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, (std::fs::read(&path).unwrap(), meta.permissions().mode() & 0o7777));
            }
        }
    }
    out
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn all_paths(a: &BTreeMap<PathBuf, (Vec<u8>, u32)>, b: &BTreeMap<PathBuf, (Vec<u8>, u32)>) -> Vec<PathBuf> {
    a.keys().chain(b.keys()).cloned().collect::<std::collections::BTreeSet<_>>().into_iter().collect()
}

#[test]
fn bytes_modes_symlinks_and_nested_dirs_round_trip_outside_git() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("a/b/c")).unwrap();
    std::fs::write(root.join("a/b/c/deep.txt"), "deep\n").unwrap();
    std::fs::write(root.join("private"), "600\n").unwrap();
    set_mode(&root.join("private"), 0o600);
    std::fs::write(root.join("tool"), "#!/bin/sh\n").unwrap();
    set_mode(&root.join("tool"), 0o755);
    std::fs::write(root.join("readonly"), "444\n").unwrap();
    set_mode(&root.join("readonly"), 0o444);
    std::fs::write(root.join("crlf.txt"), b"a\r\nb\r\n\x00binary").unwrap();
    std::os::unix::fs::symlink("a/b/c/deep.txt", root.join("link")).unwrap();
    let before = state(root);

    let shadow = Shadow::open(data.path(), root).unwrap();
    let first = shadow.snapshot().unwrap();
    assert_eq!(
        shadow.entries(&first).unwrap()[Path::new("private")],
        Entry::File { oid: shadow_oid(&shadow, &first, "private"), mode: 0o600 }
    );

    // Everything changes: edits, modes, a deleted tree, a new file, the link replaced by a file.
    std::fs::write(root.join("private"), "changed\n").unwrap();
    set_mode(&root.join("tool"), 0o700);
    set_mode(&root.join("readonly"), 0o644);
    std::fs::remove_dir_all(root.join("a")).unwrap();
    std::fs::remove_file(root.join("link")).unwrap();
    std::fs::write(root.join("link"), "now a file").unwrap();
    std::fs::create_dir_all(root.join("new/dir")).unwrap();
    std::fs::write(root.join("new/dir/file"), "new").unwrap();
    let after_state = state(root);
    let second = shadow.snapshot().unwrap();
    let changed = shadow.changed(&first, &second).unwrap();
    for p in ["private", "tool", "readonly", "a/b/c/deep.txt", "link", "new/dir/file"] {
        assert!(changed.contains(&PathBuf::from(p)), "{p} not in {changed:?}");
    }
    assert!(!changed.contains(&PathBuf::from("crlf.txt")));

    let restored = shadow.restore(&first, &all_paths(&before, &after_state)).unwrap();
    assert_eq!(state(root), before);
    assert!(std::fs::symlink_metadata(root.join("link")).unwrap().is_symlink());
    assert!(!root.join("new").exists(), "directories only the removed files needed stay");
    assert!(restored.removed.contains(&PathBuf::from("new/dir/file")));
    assert!(restored.recreated.contains(&PathBuf::from("a/b/c/deep.txt")));

    // And forward again.
    shadow.restore(&second, &all_paths(&before, &after_state)).unwrap();
    assert_eq!(state(root), after_state);
}

fn shadow_oid(shadow: &Shadow, id: &str, path: &str) -> String {
    match &shadow.entries(id).unwrap()[Path::new(path)] {
        Entry::File { oid, .. } => oid.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn ignored_files_are_not_kept_nor_touched_and_gitattributes_cannot_change_bytes() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join(".gitignore"), "*.log\nbuild/\n").unwrap();
    std::fs::write(root.join(".git/info/exclude"), "secret.env\n").unwrap();
    std::fs::write(
        root.join(".gitattributes"),
        "*.txt text eol=crlf\n*.bin filter=lfs diff=lfs merge=lfs -text\n*.id ident\n",
    )
    .unwrap();
    std::fs::write(root.join("unix.txt"), "one\ntwo\n").unwrap();
    std::fs::write(root.join("dos.txt"), "one\r\ntwo\r\n").unwrap();
    std::fs::write(root.join("blob.bin"), b"\x00\x01 not an lfs pointer").unwrap();
    std::fs::write(root.join("x.id"), "$Id$\n").unwrap();
    std::fs::write(root.join("app.log"), "log v1").unwrap();
    std::fs::write(root.join("secret.env"), "TOKEN=1").unwrap();
    std::fs::create_dir(root.join("build")).unwrap();
    std::fs::write(root.join("build/out"), "artifact").unwrap();
    let before = state(root);

    let shadow = Shadow::open(data.path(), root).unwrap();
    let first = shadow.snapshot().unwrap();
    let entries = shadow.entries(&first).unwrap();
    for ignored in ["app.log", "secret.env", "build/out"] {
        assert!(!entries.contains_key(Path::new(ignored)), "{ignored} was snapshotted");
    }
    assert!(!entries.keys().any(|p| p.starts_with(".git")), "the user's .git was snapshotted");

    for f in ["unix.txt", "dos.txt", "blob.bin", "x.id"] {
        std::fs::write(root.join(f), "clobbered").unwrap();
    }
    std::fs::write(root.join("app.log"), "log v2").unwrap();
    let second = shadow.snapshot().unwrap();
    let changed = shadow.changed(&first, &second).unwrap();
    assert!(!changed.contains(&PathBuf::from("app.log")), "{changed:?}");
    shadow.restore(&first, &changed).unwrap();
    let now = state(root);
    for f in ["unix.txt", "dos.txt", "blob.bin", "x.id"] {
        assert_eq!(now[Path::new(f)], before[Path::new(f)], "{f} came back altered");
    }
    assert_eq!(std::fs::read(root.join("app.log")).unwrap(), b"log v2", "an ignored file was restored");
}

#[test]
fn undo_never_writes_the_users_git_dir() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("tracked"), "v1\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "one"]);
    std::fs::write(root.join("tracked"), "stashed\n").unwrap();
    git(root, &["stash", "-q"]);
    std::fs::write(root.join("tracked"), "staged\n").unwrap();
    git(root, &["add", "tracked"]);
    std::fs::write(root.join("untracked"), "mine\n").unwrap();
    let git_dir = |root: &Path| {
        let mut files = BTreeMap::new();
        let mut stack = vec![root.join(".git")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                let m = std::fs::symlink_metadata(&p).unwrap();
                if m.is_dir() {
                    stack.push(p);
                } else {
                    files
                        .insert(p.clone(), (std::fs::read(&p).unwrap(), m.permissions().mode(), m.modified().unwrap()));
                }
            }
        }
        (files, git(root, &["status", "--porcelain"]), git(root, &["stash", "list"]), git(root, &["rev-parse", "HEAD"]))
    };
    let before = git_dir(root);
    let index_before = std::fs::read(root.join(".git/index")).unwrap();

    let shadow = Shadow::open(data.path(), root).unwrap();
    let first = shadow.snapshot().unwrap();
    std::fs::write(root.join("tracked"), "edited by the session\n").unwrap();
    std::fs::write(root.join("created"), "new\n").unwrap();
    let second = shadow.snapshot().unwrap();
    let paths = shadow.changed(&first, &second).unwrap();
    shadow.diff(&first, &second, Some(&paths), false).unwrap();
    shadow.restore(&first, &paths).unwrap();
    shadow.keep(&[("s/1-before".into(), first.clone())]).unwrap();
    shadow.prune(std::time::Duration::from_secs(3600)).unwrap();

    assert_eq!(std::fs::read(root.join(".git/index")).unwrap(), index_before);
    assert_eq!(git_dir(root), before);
    assert!(!shadow.git_dir().starts_with(root));
}

#[test]
fn diff_shows_unified_text_a_stat_and_mode_changes_git_cannot_show() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("f.txt"), "old\n").unwrap();
    std::fs::write(root.join("m"), "same\n").unwrap();
    let shadow = Shadow::open(data.path(), root).unwrap();
    let first = shadow.snapshot().unwrap();
    std::fs::write(root.join("f.txt"), "new\n").unwrap();
    set_mode(&root.join("m"), 0o600);
    let second = shadow.snapshot().unwrap();
    let diff = shadow.diff(&first, &second, None, false).unwrap();
    assert!(diff.contains("-old\n+new"), "{diff}");
    assert!(diff.contains("mode 644 → 600: m"), "{diff}");
    let stat = shadow.diff(&first, &second, None, true).unwrap();
    assert!(stat.contains("f.txt | 2 +-"), "{stat}");
}

#[test]
fn files_over_the_size_cap_are_left_out_and_named() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("small"), "s").unwrap();
    let shadow = Shadow::open(data.path(), root).unwrap().with_max_file_bytes(10);
    let first = shadow.snapshot().unwrap();
    std::fs::write(root.join("big"), "more than ten bytes").unwrap();
    std::fs::write(root.join("small"), "grew past the cap").unwrap();
    let second = shadow.snapshot().unwrap();
    let entries = shadow.entries(&second).unwrap();
    assert!(matches!(entries[Path::new("big")], Entry::TooLarge { size: 19, .. }), "{entries:?}");
    assert!(matches!(entries[Path::new("small")], Entry::TooLarge { .. }), "{entries:?}");
    let restored = shadow.restore(&second, &[PathBuf::from("big")]).unwrap();
    assert_eq!(restored.not_kept, [PathBuf::from("big")]);
    shadow.restore(&first, &[PathBuf::from("small"), PathBuf::from("big")]).unwrap();
    assert_eq!(std::fs::read(root.join("small")).unwrap(), b"s");
    assert!(!root.join("big").exists());
}

/// Builds a worktree of ≥ 20,000 real files (the Python standard library, copied until there
/// are enough), then times the first snapshot and an incremental one after a one-file change,
/// with the shadow repository's size on disk. `cargo test -p toolshed-agent --release --test
/// snapshot -- --ignored --nocapture snapshot_benchmark`.
#[test]
#[ignore = "a benchmark: builds a 20,000-file worktree"]
fn snapshot_benchmark() {
    let source = ["/usr/lib/python3.11", "/usr/lib/python3.12", "/usr/lib/python3"]
        .iter()
        .map(Path::new)
        .find(|p| p.is_dir())
        .expect("a Python standard library under /usr/lib");
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let mut copies = 0;
    while count_files(root) < 20_000 {
        copies += 1;
        let status = Command::new("cp")
            .args(["-r", "--no-preserve=ownership"])
            .arg(source)
            .arg(root.join(format!("copy{copies}")))
            .status()
            .unwrap();
        assert!(status.success());
        // Every copy made distinct, so git cannot share their objects.
        for file in walk(&root.join(format!("copy{copies}"))) {
            if std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
                let mut f = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
                std::io::Write::write_all(&mut f, format!("\n# copy {copies}\n").as_bytes()).unwrap();
            }
        }
    }
    let files = count_files(root);
    let shadow = Shadow::open(data.path(), root).unwrap();
    let started = std::time::Instant::now();
    let first = shadow.snapshot().unwrap();
    let first_time = started.elapsed();
    let first_size = du(shadow.git_dir());
    let target = walk_first_py(root);
    let mut text = std::fs::read(&target).unwrap();
    text.extend_from_slice(b"\n# changed\n");
    std::fs::write(&target, text).unwrap();
    let started = std::time::Instant::now();
    let second = shadow.snapshot().unwrap();
    let second_time = started.elapsed();
    let second_size = du(shadow.git_dir());
    assert_eq!(shadow.changed(&first, &second).unwrap().len(), 1);
    println!(
        "worktree: {files} files ({copies} distinct copies of {}, {} MB)\nfirst snapshot: {:.2} s, shadow repository {:.1} MB\nincremental (one file changed): {:.2} s, +{:.2} MB",
        source.display(),
        du(root) / 1_000_000,
        first_time.as_secs_f64(),
        first_size as f64 / 1e6,
        second_time.as_secs_f64(),
        (second_size.saturating_sub(first_size)) as f64 / 1e6
    );
    assert!(second_time.as_secs_f64() < 3.0);
    assert!(second_size - first_size < 5_000_000);
}

fn count_files(dir: &Path) -> usize {
    walk(dir).len()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn walk_first_py(dir: &Path) -> PathBuf {
    walk(dir).into_iter().find(|p| p.extension().is_some_and(|e| e == "py")).unwrap()
}

fn du(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    walk(dir).iter().map(|p| std::fs::symlink_metadata(p).map_or(0, |m| m.blocks() * 512)).sum()
}

#[test]
fn a_directory_replaced_by_a_symlink_is_never_followed_out_of_the_worktree() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("out")).unwrap();
    std::fs::write(root.join("out/kept.txt"), "kept\n").unwrap();
    std::fs::write(outside.path().join("victim.txt"), "outside\n").unwrap();
    std::fs::write(outside.path().join("kept.txt"), "outside kept\n").unwrap();
    let shadow = Shadow::open(data.path(), root).unwrap();
    let first = shadow.snapshot().unwrap();
    // Later: a file appears in out/, then out/ becomes a link to a directory elsewhere that has
    // files of the same names.
    std::fs::write(root.join("out/victim.txt"), "made later\n").unwrap();
    let _second = shadow.snapshot().unwrap();
    std::fs::remove_dir_all(root.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
    // Restoring out/kept.txt and removing out/victim.txt must touch nothing outside.
    let paths = [PathBuf::from("out/kept.txt"), PathBuf::from("out/victim.txt")];
    shadow.restore(&first, &paths).unwrap();
    assert_eq!(std::fs::read_to_string(outside.path().join("victim.txt")).unwrap(), "outside\n");
    assert_eq!(std::fs::read_to_string(outside.path().join("kept.txt")).unwrap(), "outside kept\n");
    assert!(std::fs::symlink_metadata(root.join("out")).unwrap().is_dir(), "a real directory again");
    assert_eq!(std::fs::read_to_string(root.join("out/kept.txt")).unwrap(), "kept\n");
    assert!(!root.join("out/victim.txt").exists());
}

#[test]
fn a_worktree_too_large_for_a_first_snapshot_is_refused_with_what_to_do() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for i in 0..12 {
        std::fs::write(dir.path().join(format!("f{i}")), "x").unwrap();
    }
    std::fs::write(dir.path().join(".gitignore"), "ignored/\n").unwrap();
    std::fs::create_dir(dir.path().join("ignored")).unwrap();
    for i in 0..50 {
        std::fs::write(dir.path().join(format!("ignored/g{i}")), "x").unwrap();
    }
    let shadow = Shadow::open(data.path(), dir.path()).unwrap().with_first_limits(10, 1 << 30);
    let err = shadow.snapshot().unwrap_err().to_string();
    assert!(err.contains("undo is off for this worktree: it has 13 files"), "ignored files do not count: {err}");
    assert!(err.contains(".gitignore"), "{err}");
    // Within the limits (ignored files never count), it is taken.
    let shadow = Shadow::open(data.path(), dir.path()).unwrap().with_first_limits(13, 1 << 30);
    let first = shadow.snapshot().unwrap();
    // Later snapshots are incremental and not limited.
    for i in 0..5 {
        std::fs::write(dir.path().join(format!("h{i}")), "y").unwrap();
    }
    assert_ne!(shadow.snapshot().unwrap(), first);
}

/// Review 22: a repository nested in the worktree with no commit (`git init`, `cargo new`)
/// made `git add` fail whole, so no later step could be undone. It is left out now, like an
/// ignored directory, and the rest is kept.
#[test]
fn a_nested_repository_with_no_commit_is_left_out_and_the_rest_kept() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("main.txt"), "v1\n").unwrap();
    let shadow = Shadow::open(data.path(), root).unwrap();
    let first = shadow.snapshot().unwrap();

    std::fs::write(root.join("main.txt"), "the session's\n").unwrap();
    for nested in ["newproj", "deeper/other proj"] {
        std::fs::create_dir_all(root.join(nested)).unwrap();
        git(&root.join(nested), &["init", "-q"]);
        std::fs::write(root.join(nested).join("lib.rs"), "fn f() {}\n").unwrap();
    }
    let second = shadow.snapshot().unwrap();
    let changed = shadow.changed(&first, &second).unwrap();
    assert_eq!(changed, vec![PathBuf::from("main.txt")]);

    let restored = shadow.restore(&first, &changed).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("main.txt")).unwrap(), "v1\n", "{restored:?}");
    for nested in ["newproj", "deeper/other proj"] {
        assert!(root.join(nested).join("lib.rs").exists() && root.join(nested).join(".git").is_dir());
    }
    // A third snapshot, with the repositories still there, works too.
    assert!(shadow.snapshot().is_ok());
}

/// Review 22: files at the size limit were misreported by the diff: one grown past it showed
/// as deleted, one shrunk under it as new, and a deleted one not at all; a 755 → 600 change
/// read as 644.
#[test]
fn the_diff_says_how_files_at_the_size_limit_and_exact_modes_changed() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("exact"), vec![b'a'; 100]).unwrap();
    std::fs::write(root.join("over"), vec![b'b'; 101]).unwrap();
    std::fs::write(root.join("big"), vec![b'c'; 200]).unwrap();
    std::fs::write(root.join("tool"), "#!/bin/sh\n").unwrap();
    set_mode(&root.join("tool"), 0o755);
    let shadow = Shadow::open(data.path(), root).unwrap().with_max_file_bytes(100);
    let first = shadow.snapshot().unwrap();
    std::fs::write(root.join("exact"), vec![b'a'; 101]).unwrap();
    std::fs::write(root.join("over"), "short\n").unwrap();
    std::fs::remove_file(root.join("big")).unwrap();
    set_mode(&root.join("tool"), 0o600);
    std::fs::write(root.join("new\x1b[2Jkey"), "k\n").unwrap();
    set_mode(&root.join("new\x1b[2Jkey"), 0o600);
    let second = shadow.snapshot().unwrap();
    let diff = shadow.diff(&first, &second, None, false).unwrap();
    assert!(
        diff.contains("changed (kept before, too large to keep, 101 bytes now), not in this diff: exact"),
        "{diff}"
    );
    assert!(diff.contains("changed (too large to keep, 101 bytes before, kept now), not in this diff: over"), "{diff}");
    assert!(diff.contains("deleted (too large to keep, 200 bytes), not in this diff: big"), "{diff}");
    for large in ["exact", "over", "big"] {
        assert!(!diff.contains(&format!("diff --git a/{large}")), "{diff}");
    }
    assert!(diff.contains("mode 755 → 600: tool"), "{diff}");
    assert!(diff.contains("new file with mode 600: new\\e[2Jkey\n"), "{diff}");
    let stat = shadow.diff(&first, &second, Some(&[PathBuf::from("big"), PathBuf::from("tool")]), true).unwrap();
    assert!(stat.contains("deleted (too large to keep, 200 bytes), not in this diff: big"), "{stat}");
    assert!(!stat.contains("exact"), "{stat}");
}

/// Review 27: a repository with no commit whose name holds a newline or bytes that are not
/// UTF-8 could not be named back to git from its message, and undo stopped again.
#[test]
fn a_nested_repository_with_no_commit_and_an_odd_name_is_left_out_too() {
    use std::os::unix::ffi::OsStrExt;
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("main.txt"), "v1\n").unwrap();
    let shadow = Shadow::open(data.path(), root).unwrap();
    let first = shadow.snapshot().unwrap();
    std::fs::write(root.join("main.txt"), "v2\n").unwrap();
    for name in [&b"n\nl"[..], &b"x\xffy"[..]] {
        let nested = root.join(std::ffi::OsStr::from_bytes(name));
        std::fs::create_dir(&nested).unwrap();
        git(&nested, &["init", "-q"]);
    }
    for n in 0..70 {
        git(&root.join(format!("r{n}")).tap_mkdir(), &["init", "-q"]);
    }
    let second = shadow.snapshot().unwrap();
    assert_eq!(shadow.changed(&first, &second).unwrap(), vec![PathBuf::from("main.txt")]);
}

trait TapMkdir {
    fn tap_mkdir(self) -> Self;
}

impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).unwrap();
        self
    }
}

/// Review 29: a nested repository made plain (its `.git` removed, as with a vendored clone)
/// stayed a gitlink in the shadow index, and its files were never kept again.
#[test]
fn a_nested_repository_made_plain_is_kept_file_by_file() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let lib = root.join("vendor/lib");
    std::fs::create_dir_all(&lib).unwrap();
    git(&lib, &["init", "-q"]);
    std::fs::write(lib.join("code.c"), "code\n").unwrap();
    git(&lib, &["add", "."]);
    git(&lib, &["commit", "-qm", "s"]);
    let shadow = Shadow::open(data.path(), root).unwrap();
    let first = shadow.snapshot().unwrap();
    assert!(matches!(shadow.entries(&first).unwrap()[Path::new("vendor/lib")], Entry::Gitlink { .. }));
    std::fs::remove_dir_all(lib.join(".git")).unwrap();
    let plain = shadow.snapshot().unwrap();
    std::fs::write(lib.join("code.c"), "BROKEN\n").unwrap();
    let second = shadow.snapshot().unwrap();
    assert_eq!(shadow.changed(&plain, &second).unwrap(), vec![PathBuf::from("vendor/lib/code.c")]);
    shadow.restore(&plain, &[PathBuf::from("vendor/lib/code.c")]).unwrap();
    assert_eq!(std::fs::read_to_string(lib.join("code.c")).unwrap(), "code\n");
}
