//! Snapshots of a worktree for undo: one shadow git repository per worktree under
//! `DATA_DIR/snapshots/<hash of the worktree's path>/`, driven through the `git` binary with
//! its own git dir, index and config, so the user's `.git` (HEAD, index, stash, refs, config,
//! hooks) is never read for state nor written.
//!
//! A snapshot is `git add -A` into the shadow index (its stat cache makes it incremental) and a
//! tree: `files` (the worktree's tree, `.gitignore` and `.git/info/exclude` honoured) beside
//! `modes`, a small manifest of what git cannot keep — exact permission bits other than
//! 644 / 755, and files left out for their size. Restoring never goes through git's checkout:
//! blobs are read with `git cat-file` and written byte for byte, then given their recorded mode.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Files larger than this are not snapshotted (a revert cannot restore them, and says so).
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// How often the shadow repository is pruned and packed, at most.
const GC_EVERY: Duration = Duration::from_secs(24 * 3600);

/// The most files a worktree's first snapshot reads; past it, undo is off for the worktree.
pub const FIRST_MAX_FILES: u64 = 200_000;

/// The most bytes a worktree's first snapshot reads (files over the per-file cap not counted).
pub const FIRST_MAX_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// Attributes that win over the worktree's `.gitattributes` (`$GIT_DIR/info/attributes` has the
/// highest precedence): bytes are stored as they are, never converted or filtered.
const ATTRIBUTES: &str = "* -text -crlf -eol -filter -ident -working-tree-encoding\n";

/// Why a snapshot, a diff or a restore failed.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// `git` is not installed (or not on `PATH`).
    #[error("undo is off: `git` was not found on PATH (snapshots are kept with git); install git to enable it")]
    GitMissing,
    /// The worktree cannot be written, so nothing could be restored into it.
    #[error("undo is off: the worktree {0} is not writable")]
    NotWritable(PathBuf),
    /// A git command failed.
    #[error("git {args} failed in the snapshot repository {git_dir}: {stderr}")]
    Git {
        /// The arguments.
        args: String,
        /// The shadow repository.
        git_dir: PathBuf,
        /// What git said.
        stderr: String,
    },
    /// The worktree is too large for a first snapshot to be cheap (a home directory, a data
    /// set): undo stays off rather than copy it.
    #[error(
        "undo is off for this worktree: it has {files} files ({mib} MiB) outside .gitignore, more than snapshots are kept for ({max_files} files, {max_mib} MiB); run toolshed in the project's own directory, or ignore the bulk in .gitignore",
        mib = .bytes / (1024 * 1024),
        max_mib = .max_bytes / (1024 * 1024)
    )]
    TooBig {
        /// Files the first snapshot would read.
        files: u64,
        /// Their bytes.
        bytes: u64,
        /// The most files allowed.
        max_files: u64,
        /// The most bytes allowed.
        max_bytes: u64,
    },
    /// A snapshot is gone (pruned after `[session] snapshot_retention_days`).
    #[error("snapshot {0} is no longer kept (snapshots are pruned after [session] snapshot_retention_days)")]
    Gone(String),
    /// A file's bytes are missing from the snapshot repository (damaged, or pruned by hand).
    #[error(
        "the snapshot's copy of {} (object {oid}) is missing from the snapshot repository, which looks damaged; nothing was changed",
        .path.display()
    )]
    Missing {
        /// The file.
        path: PathBuf,
        /// The blob that is missing.
        oid: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SnapshotError + '_ {
    move |source| SnapshotError::Io { path: path.to_path_buf(), source }
}

/// What a path is in a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A regular file: its blob and its exact permission bits.
    File {
        /// The blob id.
        oid: String,
        /// `st_mode & 0o7777`.
        mode: u32,
    },
    /// A symbolic link: the blob holds its target.
    Symlink {
        /// The blob id.
        oid: String,
    },
    /// A nested git repository, recorded as its commit only (its files are not snapshotted).
    Gitlink {
        /// The commit.
        oid: String,
    },
    /// A file left out for its size: present, but its bytes were not kept.
    TooLarge {
        /// Its size in bytes.
        size: u64,
        /// Its modification time (seconds), so a change is still noticed.
        mtime: i64,
    },
}

/// Every path of a snapshot (relative to the worktree) with what it was.
pub type Entries = BTreeMap<PathBuf, Entry>;

/// What a restore did, path by path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Files written back with their old bytes and mode (they existed in the target).
    pub written: Vec<PathBuf>,
    /// Of those, the ones that did not exist before the restore.
    pub recreated: Vec<PathBuf>,
    /// Files removed (they did not exist in the target).
    pub removed: Vec<PathBuf>,
    /// Files that could not be restored: their bytes were never kept (too large, or a nested
    /// repository).
    pub not_kept: Vec<PathBuf>,
}

/// The shadow repository of one worktree.
#[derive(Debug)]
pub struct Shadow {
    git_dir: PathBuf,
    worktree: PathBuf,
    max_file_bytes: u64,
    first_max: (u64, u64),
    /// The data directory, when it is inside the worktree: never snapshotted.
    data_inside: Option<PathBuf>,
    /// The `git` program, found outside where sandboxed commands write.
    git: PathBuf,
}

/// The shadow repository's directory for `worktree`: `DATA_DIR/snapshots/<16 hex digits>`, a
/// stable hash (FNV-1a) of the canonical path.
pub fn shadow_dir(data_dir: &Path, worktree: &Path) -> PathBuf {
    data_dir.join("snapshots").join(toolshed_core::paths::worktree_key(worktree))
}

/// Drops the refs that keep the snapshots of `sessions` (their steps' before and after) in the
/// shadow repository of `worktree`, in one `update-ref` transaction, so the next prune removes
/// what nothing else keeps. Works when the worktree itself is gone. Returns how many refs were
/// dropped: none when the worktree has no shadow repository.
pub fn forget_sessions(data_dir: &Path, worktree: &Path, sessions: &[String]) -> Result<usize, SnapshotError> {
    let git_dir = shadow_dir(data_dir, worktree);
    if !git_dir.join("HEAD").exists() {
        return Ok(0);
    }
    let Some(git) = git_on_path("git", worktree) else {
        return Err(SnapshotError::GitMissing);
    };
    let shadow = Shadow {
        worktree: git_dir.clone(),
        git_dir,
        max_file_bytes: MAX_FILE_BYTES,
        first_max: (FIRST_MAX_FILES, FIRST_MAX_BYTES),
        data_inside: None,
        git,
    };
    let _lock = shadow.lock()?;
    let refs = shadow.git(&["for-each-ref", "--format=%(refname)", "refs/toolshed/"], None)?;
    let mut delete = String::new();
    let mut dropped = 0;
    for name in String::from_utf8_lossy(&refs).lines() {
        // refs/toolshed/<secs>/<session>/<step>-before|after
        if name.split('/').nth(3).is_some_and(|session| sessions.iter().any(|s| s == session)) {
            delete.push_str(&format!("delete {name}\n"));
            dropped += 1;
        }
    }
    if dropped > 0 {
        shadow.git(&["update-ref", "--stdin"], Some(delete.as_bytes()))?;
    }
    Ok(dropped)
}

/// Whether this process may write `dir`.
fn writable(dir: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else { return false };
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

impl Shadow {
    /// Opens (creating if needed) the shadow repository of `worktree` under `data_dir`.
    pub fn open(data_dir: &Path, worktree: &Path) -> Result<Shadow, SnapshotError> {
        let worktree = worktree.canonicalize().map_err(io(worktree))?;
        let Some(git) = git_on_path("git", &worktree) else {
            return Err(SnapshotError::GitMissing);
        };
        if !writable(&worktree) {
            return Err(SnapshotError::NotWritable(worktree));
        }
        let git_dir = shadow_dir(data_dir, &worktree);
        let data = data_dir.canonicalize().unwrap_or_else(|_| data_dir.to_path_buf());
        let data_inside =
            data.strip_prefix(&worktree).ok().filter(|r| !r.as_os_str().is_empty()).map(Path::to_path_buf);
        let shadow = Shadow {
            git_dir,
            worktree,
            max_file_bytes: MAX_FILE_BYTES,
            first_max: (FIRST_MAX_FILES, FIRST_MAX_BYTES),
            data_inside,
            git,
        };
        if !shadow.git_dir.join("HEAD").exists() {
            std::fs::create_dir_all(&shadow.git_dir).map_err(io(&shadow.git_dir))?;
            let _lock = shadow.lock()?;
            if !shadow.git_dir.join("HEAD").exists() {
                shadow.git(&["init", "-q"], None)?;
                for (key, value) in [
                    ("core.autocrlf", "false"),
                    ("core.safecrlf", "false"),
                    ("core.fsmonitor", "false"),
                    ("core.filemode", "true"),
                    ("core.symlinks", "true"),
                    ("core.ignorecase", "false"),
                    ("core.precomposeunicode", "false"),
                    ("core.quotepath", "false"),
                    ("core.untrackedCache", "true"),
                    ("gc.auto", "0"),
                ] {
                    shadow.git(&["config", key, value], None)?;
                }
                let info = shadow.git_dir.join("info");
                std::fs::create_dir_all(&info).map_err(io(&info))?;
                std::fs::write(info.join("attributes"), ATTRIBUTES).map_err(io(&info))?;
                let note = shadow.git_dir.join("toolshed-worktree");
                std::fs::write(&note, shadow.worktree.as_os_str().as_bytes()).map_err(io(&note))?;
            }
        }
        Ok(shadow)
    }

    /// Refuses a first snapshot of more than `files` files or `bytes` bytes (default:
    /// [`FIRST_MAX_FILES`], [`FIRST_MAX_BYTES`]).
    pub fn with_first_limits(mut self, files: u64, bytes: u64) -> Self {
        self.first_max = (files, bytes);
        self
    }

    /// Sets the size over which files are left out (tests use small values).
    pub fn with_max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    /// The shadow repository (a git dir).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// The worktree, canonical.
    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    /// Serialises snapshot, restore and gc across processes: one shadow index, one writer.
    fn lock(&self) -> Result<std::fs::File, SnapshotError> {
        let path = self.git_dir.join("toolshed.lock");
        let file =
            std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(io(&path))?;
        file.lock().map_err(io(&path))?;
        Ok(file)
    }

    /// A `git` command isolated from the user's repository and configuration.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.git);
        for (key, _) in std::env::vars_os() {
            if key.as_bytes().starts_with(b"GIT_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.worktree)
            .env("GIT_INDEX_FILE", self.git_dir.join("index"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("LC_ALL", "C")
            .args([
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.autocrlf=false",
                "-c",
                "core.safecrlf=false",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "safe.directory=*",
                "-c",
                "gc.auto=0",
            ])
            .args(args)
            .current_dir(&self.worktree)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Runs git, feeding `input`; its standard output.
    fn git(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, SnapshotError> {
        run_git(self.command(args), args, input, &self.git_dir)
    }

    /// Takes a snapshot of the worktree; returns its id (a tree in the shadow repository).
    pub fn snapshot(&self) -> Result<String, SnapshotError> {
        let _lock = self.lock()?;
        self.copy_exclude()?;
        // A nested repository recorded before whose `.git` is gone (a vendored clone made plain)
        // stays a gitlink in the index, and its files would never be added: it leaves the
        // index, so they are (review 29).
        let gitlinks = std::fs::read(self.git_dir.join("toolshed-gitlinks")).unwrap_or_default();
        let mut plain = Vec::new();
        for raw in gitlinks.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            if std::fs::symlink_metadata(self.worktree.join(OsStr::from_bytes(raw)).join(".git")).is_err() {
                pathspec(&mut plain, b":(literal)", raw);
            }
        }
        if !plain.is_empty() {
            self.git(
                &[
                    "rm",
                    "-q",
                    "-r",
                    "-f",
                    "--cached",
                    "--ignore-unmatch",
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                ],
                Some(&plain),
            )?;
        }
        // Files new or changed since the last snapshot that are too large are left out.
        let candidates = self.git(&["ls-files", "-z", "--others", "--modified", "--exclude-standard"], None)?;
        let mut too_large: BTreeMap<PathBuf, (u64, i64)> = BTreeMap::new();
        let first = !self.git_dir.join("toolshed-last").exists();
        let (mut files, mut bytes) = (0u64, 0u64);
        // A repository nested in the worktree with no commit yet (`git init`, `cargo new`) makes
        // `git add` fail whole ("does not have a commit checked out"): each is left out, like an
        // ignored directory, so the rest of the worktree is still kept (review 22: one turned
        // undo off for every later step). git lists a nested repository as `dir/`; whether it
        // has a commit is read from its files, whatever bytes its name holds (review 27).
        let mut unborn: Vec<Vec<u8>> = Vec::new();
        for raw in candidates.split(|b| *b == 0).filter(|p| p.ends_with(b"/")) {
            if !has_commit(&self.worktree.join(OsStr::from_bytes(raw))) {
                unborn.push(raw.to_vec());
            }
        }
        for raw in candidates.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let rel = PathBuf::from(OsStr::from_bytes(raw));
            let Ok(meta) = std::fs::symlink_metadata(self.worktree.join(&rel)) else { continue };
            if meta.is_file() && meta.len() > self.max_file_bytes {
                too_large.insert(rel, (meta.len(), meta.mtime()));
            } else {
                files += 1;
                bytes += meta.len();
            }
        }
        if first && (files > self.first_max.0 || bytes > self.first_max.1) {
            return Err(SnapshotError::TooBig {
                files,
                bytes,
                max_files: self.first_max.0,
                max_bytes: self.first_max.1,
            });
        }
        // Ones left out before that are still too large stay out without being read again.
        for (rel, _) in self.previous_too_large()? {
            if let Ok(meta) = std::fs::symlink_metadata(self.worktree.join(&rel))
                && meta.is_file()
                && meta.len() > self.max_file_bytes
            {
                too_large.insert(rel, (meta.len(), meta.mtime()));
            }
        }
        let mut pathspecs: Vec<u8> = b".\0".to_vec();
        if !too_large.is_empty() {
            let mut literal = Vec::new();
            for rel in too_large.keys() {
                pathspec(&mut literal, b":(literal)", rel.as_os_str().as_bytes());
                pathspec(&mut pathspecs, b":(exclude,literal)", rel.as_os_str().as_bytes());
            }
            self.git(
                &["rm", "-q", "-f", "--cached", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"],
                Some(&literal),
            )?;
        }
        for path in &unborn {
            pathspec(&mut pathspecs, b":(exclude,literal)", path);
        }
        // One git still refuses (read otherwise than above) is left out by the name it gives.
        let mut retries = 0;
        loop {
            let added = self.git(&["add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"], Some(&pathspecs));
            let Err(SnapshotError::Git { stderr, .. }) = &added else {
                added?;
                break;
            };
            let found: Vec<Vec<u8>> = unborn_repositories(stderr).filter(|p| !unborn.contains(p)).collect();
            retries += 1;
            if found.is_empty() || retries > MAX_RETRIES {
                added?;
                break;
            }
            for path in found {
                pathspec(&mut pathspecs, b":(exclude,literal)", &path);
                unborn.push(path);
            }
        }
        let files = trim(&self.git(&["write-tree"], None)?);
        let manifest = self.manifest(&too_large)?;
        let modes = trim(&self.git(&["hash-object", "-w", "--stdin"], Some(&manifest))?);
        // What the rules left out now (a directory whole, as `dir/`), by git's own reading of
        // every rule at this moment: `.gitignore` files (one that ignores itself included),
        // `info/exclude` and the global excludes. A path absent from this snapshot and absent
        // from this list did not exist.
        let mut ignored =
            self.git(&["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"], None)?;
        for path in &unborn {
            ignored.extend_from_slice(path);
            ignored.push(0);
        }
        let ignored = trim(&self.git(&["hash-object", "-w", "--stdin"], Some(&ignored))?);
        let wrapper =
            format!("040000 tree {files}\tfiles\n100644 blob {ignored}\tignored\n100644 blob {modes}\tmodes\n");
        let id = trim(&self.git(&["mktree"], Some(wrapper.as_bytes()))?);
        std::fs::write(self.git_dir.join("toolshed-last"), &id).map_err(io(&self.git_dir))?;
        Ok(id)
    }

    /// Copies the user's `.git/info/exclude` (when the worktree has a `.git` directory) into the
    /// shadow repository, so what the user excludes is left out here too.
    fn copy_exclude(&self) -> Result<(), SnapshotError> {
        let mut theirs = std::fs::read(self.worktree.join(".git/info/exclude")).unwrap_or_default();
        if let Some(data) = &self.data_inside {
            // The sessions database and this repository change with every step.
            theirs.extend_from_slice(b"\n/");
            for b in data.as_os_str().as_bytes() {
                if matches!(b, b'*' | b'?' | b'[' | b'\\' | b'!' | b'#' | b' ') {
                    theirs.push(b'\\');
                }
                theirs.push(*b);
            }
            theirs.extend_from_slice(b"/\n");
        }
        let ours = self.git_dir.join("info/exclude");
        if std::fs::read(&ours).ok().as_deref() != Some(theirs.as_slice()) {
            std::fs::write(&ours, &theirs).map_err(io(&ours))?;
        }
        Ok(())
    }

    /// The files the last snapshot left out for their size.
    fn previous_too_large(&self) -> Result<Vec<(PathBuf, Entry)>, SnapshotError> {
        let Ok(last) = std::fs::read_to_string(self.git_dir.join("toolshed-last")) else { return Ok(Vec::new()) };
        let Ok(manifest) = self.git(&["cat-file", "blob", &format!("{}:modes", last.trim())], None) else {
            return Ok(Vec::new());
        };
        let large = parse_manifest(&manifest).into_iter().filter(|(_, e)| matches!(e, Manifested::Large(..)));
        Ok(large.map(|(p, e)| (p, e.entry())).collect())
    }

    /// The manifest of the index just written: exact modes git does not keep, left-out files.
    fn manifest(&self, too_large: &BTreeMap<PathBuf, (u64, i64)>) -> Result<Vec<u8>, SnapshotError> {
        let staged = self.git(&["ls-files", "-z", "--stage"], None)?;
        let mut out = Vec::new();
        let mut gitlinks = Vec::new();
        for (meta, path, _) in records(&staged) {
            let git_mode = meta.split(|b| *b == b' ').next().unwrap_or_default();
            if git_mode == b"160000" {
                gitlinks.extend_from_slice(path);
                gitlinks.push(0);
            }
            let default = match git_mode {
                b"100644" => 0o644,
                b"100755" => 0o755,
                _ => continue,
            };
            let Ok(m) = std::fs::symlink_metadata(self.worktree.join(OsStr::from_bytes(path))) else { continue };
            let mode = m.permissions().mode() & 0o7777;
            if m.is_file() && mode != default {
                out.extend_from_slice(format!("m {mode:o} ").as_bytes());
                out.extend_from_slice(path);
                out.push(0);
            }
        }
        let listed = self.git_dir.join("toolshed-gitlinks");
        if std::fs::read(&listed).unwrap_or_default() != gitlinks {
            std::fs::write(&listed, &gitlinks).map_err(io(&listed))?;
        }
        for (path, (size, mtime)) in too_large {
            out.extend_from_slice(format!("s {size} {mtime} ").as_bytes());
            out.extend_from_slice(path.as_os_str().as_bytes());
            out.push(0);
        }
        Ok(out)
    }

    /// Whether the shadow repository still holds snapshot `id`.
    pub fn has(&self, id: &str) -> bool {
        self.git(&["cat-file", "-e", &format!("{id}^{{tree}}")], None).is_ok()
    }

    /// Every path of snapshot `id`.
    pub fn entries(&self, id: &str) -> Result<Entries, SnapshotError> {
        if !self.has(id) {
            return Err(SnapshotError::Gone(id.to_string()));
        }
        let listing = self.git(&["ls-tree", "-r", "-z", "--full-tree", &format!("{id}:files")], None)?;
        let manifest = parse_manifest(&self.git(&["cat-file", "blob", &format!("{id}:modes")], None)?);
        let mut entries = Entries::new();
        for (meta, path, _) in records(&listing) {
            let meta = String::from_utf8_lossy(meta);
            let path = PathBuf::from(OsStr::from_bytes(path));
            let mut fields = meta.split(' ');
            let (mode, _kind, oid) = (fields.next(), fields.next(), fields.next().unwrap_or_default().to_string());
            let entry = match mode {
                Some("120000") => Entry::Symlink { oid },
                Some("160000") => Entry::Gitlink { oid },
                Some(m) => {
                    let default = if m == "100755" { 0o755 } else { 0o644 };
                    let mode = match manifest.get(&path) {
                        Some(Manifested::Mode(mode)) => *mode,
                        _ => default,
                    };
                    Entry::File { oid, mode }
                }
                None => continue,
            };
            entries.insert(path, entry);
        }
        for (path, m) in manifest {
            if let Manifested::Large(..) = m {
                entries.insert(path, m.entry());
            }
        }
        Ok(entries)
    }

    /// A unified diff (or a `--stat`) from snapshot `from` to `to`, limited to `paths` when
    /// given. Mode changes git cannot show (644 → 600) and files too large to keep are listed
    /// after it.
    pub fn diff(&self, from: &str, to: &str, paths: Option<&[PathBuf]>, stat: bool) -> Result<String, SnapshotError> {
        for id in [from, to] {
            if !self.has(id) {
                return Err(SnapshotError::Gone(id.to_string()));
            }
        }
        if paths.is_some_and(<[PathBuf]>::is_empty) {
            return Ok(String::new());
        }
        let set: Option<BTreeSet<&Path>> = paths.map(|ps| ps.iter().map(PathBuf::as_path).collect());
        let (old, new) = (self.entries(from)?, self.entries(to)?);
        let wanted = |p: &Path| set.as_ref().is_none_or(|set| set.contains(p));
        // A file too large to keep on either side is left out of git's diff, which would show
        // it as deleted or new (only one side has bytes), and said in a line of its own.
        let large: BTreeSet<&Path> = old
            .iter()
            .chain(new.iter())
            .filter(|(p, e)| matches!(e, Entry::TooLarge { .. }) && wanted(p))
            .map(|(p, _)| p.as_path())
            .collect();
        // Limited to `paths` by trees of only those (not by pathspecs: any number of names, in
        // any bytes, passes that way).
        let (a, b) = match &set {
            None if large.is_empty() => (format!("{from}:files"), format!("{to}:files")),
            _ => {
                let keep: BTreeSet<&Path> = match &set {
                    Some(set) => set.iter().copied().filter(|p| !large.contains(p)).collect(),
                    None => old.keys().chain(new.keys()).map(PathBuf::as_path).filter(|p| !large.contains(p)).collect(),
                };
                (self.tree_of(from, &keep)?, self.tree_of(to, &keep)?)
            }
        };
        let mut args = vec!["diff", "--no-color", "--no-ext-diff", "--no-renames"];
        if stat {
            args.push("--stat");
        }
        args.extend([a.as_str(), b.as_str()]);
        let mut text = String::from_utf8_lossy(&self.git(&args, None)?).into_owned();
        for (path, entry) in &new {
            if !wanted(path) {
                continue;
            }
            let name = toolshed_core::terminal::visible_path(path);
            // A new file with a mode git cannot show (600) reads as 644 there.
            if let (None, Entry::File { mode, .. }) = (old.get(path), entry)
                && ![0o644, 0o755].contains(mode)
            {
                text.push_str(&format!("new file with mode {mode:o}: {name}\n"));
            }
            if let (Some(Entry::File { oid: o1, mode: m1 }), Entry::File { oid: o2, mode: m2 }) = (old.get(path), entry)
                && m1 != m2
                // git shows only 644 and 755, so also when the execute bit changed but a mode is
                // another (755 → 600 reads as "new mode 100644" there).
                && ((m1 & 0o111 != 0) == (m2 & 0o111 != 0) || ![0o644, 0o755].contains(m1) || ![0o644, 0o755].contains(m2))
            {
                let same = if o1 == o2 { "" } else { " (and content)" };
                text.push_str(&format!("mode {m1:o} → {m2:o}{same}: {name}\n"));
            }
        }
        for path in large {
            let size = |e: Option<&Entry>| match e {
                Some(Entry::TooLarge { size, .. }) => format!("too large to keep, {size} bytes"),
                Some(_) => "kept".to_string(),
                None => "absent".to_string(),
            };
            let (was, is) = (old.get(path), new.get(path));
            let change = match (was, is) {
                (a, b) if a == b => continue,
                (Some(_), None) => format!("deleted ({})", size(was)),
                (None, Some(_)) => format!("new ({})", size(is)),
                _ => format!("changed ({} before, {} now)", size(was), size(is)),
            };
            let name = toolshed_core::terminal::visible_path(path);
            text.push_str(&format!("{change}, not in this diff: {name}\n"));
        }
        Ok(text)
    }

    /// Puts `paths` back as they are in snapshot `target`: files in it are written with its
    /// bytes and mode (symlinks as symlinks, parents created), files not in it are removed (and
    /// the directories that leaves empty, up to the worktree, unless `target` has files under
    /// them). What was done is in `restored`, also when it fails part-way; before anything is
    /// written, every byte needed is read.
    pub fn restore_into(&self, target: &str, paths: &[PathBuf], restored: &mut Restored) -> Result<(), SnapshotError> {
        self.restore_made_since(target, paths, restored, None)
    }

    /// [`Shadow::restore_into`], but a directory left empty is removed only where it was made
    /// at `made_since` or later (its birth time, where the file system keeps one): snapshots do
    /// not hold directories, and an empty one the person had before (`logs/`, with its mode)
    /// is not the session's to remove (review 22).
    pub fn restore_made_since(
        &self,
        target: &str,
        paths: &[PathBuf],
        restored: &mut Restored,
        made_since: Option<std::time::SystemTime>,
    ) -> Result<(), SnapshotError> {
        let entries = self.entries(target)?;
        let _lock = self.lock()?;
        let wanted: Vec<(&PathBuf, &str)> = paths
            .iter()
            .filter_map(|p| match entries.get(p) {
                Some(Entry::File { oid, .. } | Entry::Symlink { oid }) => Some((p, oid.as_str())),
                _ => None,
            })
            .collect();
        let blobs = self.blobs(wanted.iter().map(|(_, oid)| *oid).collect())?;
        if let Some((path, oid)) = wanted.iter().find(|(_, oid)| !blobs.contains_key(*oid)) {
            return Err(SnapshotError::Missing { path: (*path).clone(), oid: (*oid).to_string() });
        }
        let mut removed: BTreeSet<PathBuf> = restored.removed.iter().cloned().collect();
        for path in paths {
            let abs = self.worktree.join(path);
            // A directory on the way that is now a symlink (or a file) is not followed out of
            // the worktree: it is what the snapshot had there, a directory, that comes back.
            let through_link = !real_parents(&self.worktree, path);
            let existed = !through_link && std::fs::symlink_metadata(&abs).is_ok();
            if through_link && entries.contains_key(path) {
                for made_way in make_real_parents(&self.worktree, path)? {
                    if removed.insert(made_way.clone()) {
                        restored.removed.push(made_way);
                    }
                }
            }
            match entries.get(path) {
                Some(Entry::File { oid, mode }) => {
                    let bytes = blobs.get(oid.as_str()).map_or(&[][..], Vec::as_slice);
                    self.clear_way(&abs, restored, &mut removed)?;
                    write_file(&abs, bytes, *mode)?;
                    push_written(restored, path, existed);
                }
                Some(Entry::Symlink { oid }) => {
                    let target = blobs.get(oid.as_str()).map_or(&[][..], Vec::as_slice);
                    self.clear_way(&abs, restored, &mut removed)?;
                    write_symlink(&abs, OsStr::from_bytes(target))?;
                    push_written(restored, path, existed);
                }
                Some(Entry::Gitlink { .. } | Entry::TooLarge { .. }) => restored.not_kept.push(path.clone()),
                None => {
                    if existed {
                        self.clear_way(&abs, restored, &mut removed)?;
                        remove_entry(&abs)?;
                        if removed.insert(path.clone()) {
                            restored.removed.push(path.clone());
                        }
                        self.remove_empty_parents(path, &entries, made_since);
                    }
                }
            }
        }
        Ok(())
    }

    /// [`Shadow::restore_into`] into a fresh record.
    pub fn restore(&self, target: &str, paths: &[PathBuf]) -> Result<Restored, SnapshotError> {
        let mut restored = Restored::default();
        self.restore_into(target, paths, &mut restored)?;
        Ok(restored)
    }

    /// Removes a directory standing at `abs` (where a file goes back, or where none was),
    /// counting each file under it as removed. The plan of a revert refused it unforced when
    /// the directory held anything the session did not make ([`Shadow::directory_files`]).
    fn clear_way(
        &self,
        abs: &Path,
        restored: &mut Restored,
        removed: &mut BTreeSet<PathBuf>,
    ) -> Result<(), SnapshotError> {
        if !std::fs::symlink_metadata(abs).is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        let held = directory_files(abs);
        let result = std::fs::remove_dir_all(abs).map_err(io(abs));
        // What is gone, also when the removal stopped part-way.
        for file in held {
            let path = abs.join(&file);
            let rel = path.strip_prefix(&self.worktree).map(Path::to_path_buf).unwrap_or(file);
            if std::fs::symlink_metadata(&path).is_err() && removed.insert(rel.clone()) {
                restored.removed.push(rel);
            }
        }
        result
    }

    /// Which of `paths` (relative to the worktree), absent from snapshot `id`, may have
    /// existed then all the same: the rules left them out (they, or a directory above them,
    /// are in the list of what was ignored the snapshot keeps), or they lie in a nested
    /// repository, of which only the commit is kept. Absence says nothing of them.
    /// `entries` are the snapshot's ([`Shadow::entries`]).
    pub fn unknown_before(
        &self,
        id: &str,
        entries: &Entries,
        paths: &[PathBuf],
    ) -> Result<BTreeSet<PathBuf>, SnapshotError> {
        if paths.is_empty() {
            return Ok(BTreeSet::new());
        }
        let under_repository =
            |p: &Path| p.ancestors().skip(1).any(|a| matches!(entries.get(a), Some(Entry::Gitlink { .. })));
        let mut unknown: BTreeSet<PathBuf> = paths.iter().filter(|p| under_repository(p)).cloned().collect();
        let rest: Vec<PathBuf> = paths.iter().filter(|p| !unknown.contains(*p)).cloned().collect();
        match self.git(&["cat-file", "blob", &format!("{id}:ignored")], None) {
            Ok(list) => {
                let (mut files, mut dirs) = (BTreeSet::new(), BTreeSet::new());
                for raw in list.split(|b| *b == 0).filter(|r| !r.is_empty()) {
                    match raw.strip_suffix(b"/") {
                        Some(dir) => dirs.insert(PathBuf::from(OsStr::from_bytes(dir))),
                        None => files.insert(PathBuf::from(OsStr::from_bytes(raw))),
                    };
                }
                unknown
                    .extend(rest.into_iter().filter(|p| files.contains(p) || p.ancestors().any(|a| dirs.contains(a))));
            }
            // A snapshot taken before the list was kept: its `.gitignore` files, read again.
            Err(_) => unknown.extend(self.ignored_in(id, &rest)?),
        }
        Ok(unknown)
    }

    /// Which of `paths` (relative to the worktree) the `.gitignore` files of snapshot `id`
    /// ignore, as far as they are in it (for snapshots that keep no list of what was ignored).
    fn ignored_in(&self, id: &str, paths: &[PathBuf]) -> Result<BTreeSet<PathBuf>, SnapshotError> {
        if paths.is_empty() {
            return Ok(BTreeSet::new());
        }
        // The snapshot's ignore files, written into an empty directory with the paths'
        // directories (so a pattern for directories, `target/`, meets them as such), where git
        // is asked about the paths.
        let listing = self.git(&["ls-tree", "-r", "-z", "--full-tree", &format!("{id}:files")], None)?;
        let mut ignore_files = Vec::new();
        for (meta, path, _) in records(&listing) {
            let path = Path::new(OsStr::from_bytes(path));
            let oid = meta.split(|b| *b == b' ').nth(2).unwrap_or_default();
            if path.file_name() == Some(OsStr::new(".gitignore")) && meta.starts_with(b"100") {
                ignore_files.push((path.to_path_buf(), String::from_utf8_lossy(oid).into_owned()));
            }
        }
        let scratch = self.git_dir.join(format!("toolshed-ignore-{}-{}", std::process::id(), scratch_number()));
        let result = (|| {
            std::fs::create_dir_all(&scratch).map_err(io(&scratch))?;
            let blobs = self.blobs(ignore_files.iter().map(|(_, oid)| oid.as_str()).collect())?;
            for (path, oid) in &ignore_files {
                let at = scratch.join(path);
                if let Some(dir) = at.parent() {
                    std::fs::create_dir_all(dir).map_err(io(dir))?;
                }
                std::fs::write(&at, blobs.get(oid).map_or(&[][..], Vec::as_slice)).map_err(io(&at))?;
            }
            let mut input = Vec::new();
            for path in paths {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    // A name that cannot be a directory here (a file of the ignore files' tree)
                    // is simply not one.
                    let _ = std::fs::create_dir_all(scratch.join(dir));
                }
                input.extend_from_slice(path.as_os_str().as_bytes());
                input.push(0);
            }
            let mut cmd = self.command(&["check-ignore", "--no-index", "-z", "--stdin"]);
            // Names are names (`:(glob)x` is a file), never pathspec magic.
            cmd.env("GIT_WORK_TREE", &scratch)
                .env("GIT_LITERAL_PATHSPECS", "1")
                .current_dir(&scratch)
                .stdin(Stdio::piped());
            let mut child = cmd.spawn().map_err(io(&scratch))?;
            let mut stdin = child.stdin.take();
            let writer = std::thread::spawn(move || stdin.as_mut().map(|s| s.write_all(&input)));
            let out = child.wait_with_output().map_err(io(&scratch))?;
            let _ = writer.join();
            // 0: some are ignored, 1: none is; anything else failed.
            if !matches!(out.status.code(), Some(0 | 1)) {
                return Err(SnapshotError::Git {
                    args: "check-ignore --no-index -z --stdin".into(),
                    git_dir: self.git_dir.clone(),
                    stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
                });
            }
            Ok(out
                .stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| PathBuf::from(OsStr::from_bytes(p)))
                .collect())
        })();
        let _ = std::fs::remove_dir_all(&scratch);
        result
    }

    fn remove_empty_parents(&self, path: &Path, entries: &Entries, made_since: Option<std::time::SystemTime>) {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            // Paths order by component, so what is under `d` follows it.
            if entries.range(d.to_path_buf()..).next().is_some_and(|(p, _)| p.starts_with(d)) {
                break;
            }
            let abs = self.worktree.join(d);
            if let Some(since) = made_since {
                let made = std::fs::symlink_metadata(&abs).and_then(|m| m.created());
                if !made.is_ok_and(|made| made >= since) {
                    break;
                }
            }
            if std::fs::remove_dir(&abs).is_err() {
                break;
            }
            dir = d.parent();
        }
    }

    /// The contents of blobs, by id (`git cat-file --batch`).
    fn blobs(&self, oids: BTreeSet<&str>) -> Result<BTreeMap<String, Vec<u8>>, SnapshotError> {
        if oids.is_empty() {
            return Ok(BTreeMap::new());
        }
        let input: Vec<u8> = oids.iter().flat_map(|o| format!("{o}\n").into_bytes()).collect();
        let out = self.git(&["cat-file", "--batch"], Some(&input))?;
        let mut blobs = BTreeMap::new();
        let mut rest = out.as_slice();
        while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
            let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
            rest = &rest[nl + 1..];
            let mut fields = header.split(' ');
            let (oid, _kind, size) =
                (fields.next(), fields.next(), fields.next().and_then(|s| s.parse::<usize>().ok()));
            let (Some(oid), Some(size)) = (oid, size) else { continue };
            let size = size.min(rest.len());
            blobs.insert(oid.to_string(), rest[..size].to_vec());
            rest = rest.get(size + 1..).unwrap_or_default();
        }
        Ok(blobs)
    }

    /// A tree of snapshot `id`'s files at `paths` only (written through an index of its own).
    fn tree_of(&self, id: &str, paths: &BTreeSet<&Path>) -> Result<String, SnapshotError> {
        let listing = self.git(&["ls-tree", "-r", "-z", "--full-tree", &format!("{id}:files")], None)?;
        let mut info = Vec::new();
        for (_, path, record) in records(&listing) {
            if paths.contains(Path::new(OsStr::from_bytes(path))) {
                // `MODE TYPE OID\tPATH` is what `update-index --index-info` takes.
                info.extend_from_slice(record);
                info.push(0);
            }
        }
        let index = self.git_dir.join(format!("toolshed-diff-index-{}-{}", std::process::id(), scratch_number()));
        let run = |args: &[&str], input: Option<&[u8]>| -> Result<Vec<u8>, SnapshotError> {
            let mut cmd = self.command(args);
            cmd.env("GIT_INDEX_FILE", &index);
            run_git(cmd, args, input, &self.git_dir)
        };
        let tree = run(&["read-tree", "--empty"], None)
            .and_then(|_| run(&["update-index", "-z", "--index-info"], Some(&info)))
            .and_then(|_| run(&["write-tree"], None));
        let _ = std::fs::remove_file(&index);
        Ok(trim(&tree?))
    }

    /// The paths whose content, kind or mode differs between snapshots `from` and `to`.
    pub fn changed(&self, from: &str, to: &str) -> Result<Vec<PathBuf>, SnapshotError> {
        if from == to {
            return Ok(Vec::new());
        }
        let names = self.git(
            &["diff-tree", "-r", "-z", "--name-only", "--no-renames", &format!("{from}:files"), &format!("{to}:files")],
            None,
        )?;
        let mut paths: BTreeSet<PathBuf> =
            names.split(|b| *b == 0).filter(|n| !n.is_empty()).map(|n| PathBuf::from(OsStr::from_bytes(n))).collect();
        let manifest = |id: &str| -> Result<BTreeMap<PathBuf, Manifested>, SnapshotError> {
            Ok(parse_manifest(&self.git(&["cat-file", "blob", &format!("{id}:modes")], None)?))
        };
        let (old, new) = (manifest(from)?, manifest(to)?);
        for path in old.keys().chain(new.keys()) {
            if old.get(path) != new.get(path) {
                paths.insert(path.clone());
            }
        }
        Ok(paths.into_iter().collect())
    }

    /// Keeps snapshots from gc: each `(name, id)` becomes a ref `refs/toolshed/<secs>/<name>`,
    /// whose time part says when, for pruning.
    pub fn keep(&self, kept: &[(String, String)]) -> Result<(), SnapshotError> {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let input: String =
            kept.iter().map(|(name, id)| format!("update refs/toolshed/{secs}/{name} {id}\n")).collect();
        self.git(&["update-ref", "--stdin"], Some(input.as_bytes())).map(drop)
    }

    /// Drops the refs older than `retention` and, at most once a day, packs the repository and
    /// prunes what no ref keeps any more. Returns whether it ran.
    pub fn prune_if_due(&self, retention: Duration) -> Result<bool, SnapshotError> {
        let stamp = self.git_dir.join("toolshed-gc");
        let Ok(last) = std::fs::metadata(&stamp).and_then(|m| m.modified()) else {
            // A new repository: nothing to prune yet; the clock starts now.
            std::fs::write(&stamp, b"").map_err(io(&stamp))?;
            return Ok(false);
        };
        if last.elapsed().unwrap_or_default() < GC_EVERY {
            return Ok(false);
        }
        self.prune(retention)?;
        Ok(true)
    }

    /// Drops the refs older than `retention`, then gc.
    pub fn prune(&self, retention: Duration) -> Result<(), SnapshotError> {
        let _lock = self.lock()?;
        let stamp = self.git_dir.join("toolshed-gc");
        std::fs::write(&stamp, b"").map_err(io(&stamp))?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let refs = self.git(&["for-each-ref", "--format=%(refname)", "refs/toolshed/"], None)?;
        let mut delete = Vec::new();
        for name in String::from_utf8_lossy(&refs).lines() {
            let secs = name
                .strip_prefix("refs/toolshed/")
                .and_then(|r| r.split('/').next())
                .and_then(|s| s.parse::<u64>().ok());
            if secs.is_some_and(|s| now.saturating_sub(s) > retention.as_secs()) {
                delete.extend_from_slice(format!("delete {name}\n").as_bytes());
            }
        }
        if !delete.is_empty() {
            self.git(&["update-ref", "--stdin"], Some(&delete))?;
        }
        // Objects written in the last hour stay: a snapshot of another process may not have
        // its ref yet.
        self.git(&["gc", "--quiet", "--prune=1.hour.ago"], None).map(drop)
    }
}

/// What the manifest says of a path.
#[derive(PartialEq)]
enum Manifested {
    Mode(u32),
    Large(u64, i64),
}

impl Manifested {
    fn entry(&self) -> Entry {
        match self {
            Manifested::Mode(_) => Entry::TooLarge { size: 0, mtime: 0 },
            Manifested::Large(size, mtime) => Entry::TooLarge { size: *size, mtime: *mtime },
        }
    }
}

fn parse_manifest(bytes: &[u8]) -> BTreeMap<PathBuf, Manifested> {
    let mut out = BTreeMap::new();
    for record in bytes.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        let mut parts = record.splitn(2, |b| *b == b' ');
        let (Some(kind), Some(rest)) = (parts.next(), parts.next()) else { continue };
        match kind {
            b"m" => {
                let mut parts = rest.splitn(2, |b| *b == b' ');
                let (Some(mode), Some(path)) = (parts.next(), parts.next()) else { continue };
                if let Ok(mode) = u32::from_str_radix(&String::from_utf8_lossy(mode), 8) {
                    out.insert(PathBuf::from(OsStr::from_bytes(path)), Manifested::Mode(mode));
                }
            }
            b"s" => {
                let mut parts = rest.splitn(3, |b| *b == b' ');
                let (Some(size), Some(mtime), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
                    continue;
                };
                let number = |b: &[u8]| String::from_utf8_lossy(b).parse::<i64>().unwrap_or_default();
                out.insert(
                    PathBuf::from(OsStr::from_bytes(path)),
                    Manifested::Large(number(size) as u64, number(mtime)),
                );
            }
            _ => {}
        }
    }
    out
}

/// Appends `path` with the pathspec `magic` to a NUL-separated list for `--pathspec-from-file`.
fn pathspec(list: &mut Vec<u8>, magic: &[u8], path: &[u8]) {
    list.extend_from_slice(magic);
    list.extend_from_slice(path);
    list.push(0);
}

/// At most this many times `git add` is run again after it named a repository with no commit
/// that [`has_commit`] took for one with (each costs a `git add` of the whole worktree).
const MAX_RETRIES: usize = 16;

/// Whether the repository at `dir` has a commit checked out, read from its files as git reads
/// them: `HEAD` naming a ref that exists (loose or packed, in the repository or the one it
/// shares refs with) or holding a commit id. What cannot be read counts as none.
fn has_commit(dir: &Path) -> bool {
    let dotgit = dir.join(".git");
    let gitdir = match std::fs::symlink_metadata(&dotgit) {
        Ok(m) if m.is_dir() => dotgit,
        Ok(m) if m.is_file() => {
            let Ok(text) = std::fs::read_to_string(&dotgit) else { return false };
            let Some(target) = text.trim_end().strip_prefix("gitdir: ") else { return false };
            dir.join(target)
        }
        _ => return false,
    };
    let Ok(head) = std::fs::read_to_string(gitdir.join("HEAD")) else { return false };
    let head = head.trim_end();
    let Some(name) = head.strip_prefix("ref: ") else {
        return head.len() >= 40 && head.bytes().all(|b| b.is_ascii_hexdigit());
    };
    let common = std::fs::read_to_string(gitdir.join("commondir")).map(|c| gitdir.join(c.trim_end()));
    let packed = |g: &Path| {
        std::fs::read_to_string(g.join("packed-refs"))
            .is_ok_and(|refs| refs.lines().any(|l| l.split_once(' ').is_some_and(|(_, r)| r == name)))
    };
    std::iter::once(gitdir.clone()).chain(common).any(|g| g.join(name).is_file() || packed(&g))
}

/// The repositories `git add` refused for having no commit, as it names them (`dir/`).
fn unborn_repositories(stderr: &str) -> impl Iterator<Item = Vec<u8>> + '_ {
    stderr.lines().filter_map(|line| {
        let rest = line.strip_prefix("error: '")?;
        let path = rest.strip_suffix("' does not have a commit checked out")?;
        Some(path.as_bytes().to_vec())
    })
}

fn trim(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_string()
}

fn push_written(restored: &mut Restored, path: &Path, existed: bool) {
    restored.written.push(path.to_path_buf());
    if !existed {
        restored.recreated.push(path.to_path_buf());
    }
}

/// Makes room for a file or symlink at `abs`: its parents are created (a directory in its
/// place was removed by [`Shadow::clear_way`]).
fn prepare(abs: &Path) -> Result<(), SnapshotError> {
    if let Some(parent) = abs.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    Ok(())
}

/// Everything under the directory `dir` that is not a directory (files, symlinks, never
/// followed) and every empty directory, relative to `dir`.
pub fn directory_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(read) = std::fs::read_dir(dir.join(&rel)) else { continue };
        let mut empty = true;
        for entry in read.flatten() {
            empty = false;
            let path = rel.join(entry.file_name());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
        if empty && !rel.as_os_str().is_empty() {
            out.push(rel);
        }
    }
    out.sort();
    out
}

/// A number for scratch names, new on every call in this process.
fn scratch_number() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Whether every directory between the worktree and `rel` is a real directory (or absent).
fn real_parents(worktree: &Path, rel: &Path) -> bool {
    in_the_way(worktree, rel).is_none()
}

/// Replaces what stands where `rel`'s parent directories should be (a symlink, a file) by real
/// directories, so a write lands inside the worktree; what it removed, relative to `worktree`.
fn make_real_parents(worktree: &Path, rel: &Path) -> Result<Vec<PathBuf>, SnapshotError> {
    let mut removed = Vec::new();
    while let Some(way) = in_the_way(worktree, rel) {
        let abs = worktree.join(&way);
        std::fs::remove_file(&abs).map_err(io(&abs))?;
        std::fs::create_dir(&abs).map_err(io(&abs))?;
        removed.push(way);
    }
    // The rest of the way is real directories, or nothing yet.
    if let Some(parent) = worktree.join(rel).parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    Ok(removed)
}

/// What stands on the way to `rel` where a directory should be (a file, a symlink), relative
/// to `worktree`: a revert that puts `rel` back removes it.
pub fn in_the_way(worktree: &Path, rel: &Path) -> Option<PathBuf> {
    let mut dir = worktree.to_path_buf();
    let parents: Vec<_> = rel.components().collect();
    for part in parents.iter().take(parents.len().saturating_sub(1)) {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return dir.strip_prefix(worktree).ok().map(Path::to_path_buf),
            Err(_) => return None,
        }
    }
    None
}

/// A short name beside `abs` for a file renamed over it (a name built from `abs`'s own could
/// pass the file system's 255 bytes).
fn temp_beside(abs: &Path) -> PathBuf {
    abs.with_file_name(format!(".toolshed-undo-{}-{}.tmp", std::process::id(), scratch_number()))
}

/// Writes `bytes` with `mode` at `abs` through a temporary file renamed over it, so a symlink
/// there is replaced, never followed.
fn write_file(abs: &Path, bytes: &[u8], mode: u32) -> Result<(), SnapshotError> {
    prepare(abs)?;
    let tmp = temp_beside(abs);
    let _ = std::fs::remove_file(&tmp);
    let result = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        file.sync_data()?;
        std::fs::rename(&tmp, abs)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io(abs))
}

fn write_symlink(abs: &Path, target: &OsStr) -> Result<(), SnapshotError> {
    prepare(abs)?;
    let tmp = temp_beside(abs);
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp).map_err(io(abs))?;
    std::fs::rename(&tmp, abs).map_err(io(abs))
}

fn remove_entry(abs: &Path) -> Result<(), SnapshotError> {
    match std::fs::symlink_metadata(abs) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(abs).map_err(io(abs)),
        Ok(_) => std::fs::remove_file(abs).map_err(io(abs)),
        Err(_) => Ok(()),
    }
}

/// Where `program` is on `PATH`, taken only from absolute directories outside `worktree` and the
/// temp dirs: toolshed runs it unsandboxed, and a sandboxed command may write those (a
/// `node_modules/.bin` direnv put on `PATH`, `.`).
fn git_on_path(program: &str, worktree: &Path) -> Option<PathBuf> {
    let untrusted = [worktree.to_path_buf(), std::env::temp_dir(), "/tmp".into(), "/var/tmp".into(), "/dev/shm".into()];
    std::env::var_os("PATH")?
        .as_bytes()
        .split(|b| *b == b':')
        .map(|dir| Path::new(OsStr::from_bytes(dir)))
        .filter(|dir| dir.is_absolute() && !untrusted.iter().any(|u| dir.starts_with(u)))
        .map(|dir| dir.join(program))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
}

/// The records of git's `-z` listings (`ls-tree`, `ls-files --stage`): `META\tPATH`, as
/// (meta, path, the whole record).
fn records(listing: &[u8]) -> impl Iterator<Item = (&[u8], &[u8], &[u8])> {
    listing.split(|b| *b == 0).filter_map(|record| {
        let tab = record.iter().position(|b| *b == b'\t')?;
        Some((&record[..tab], &record[tab + 1..], record))
    })
}

/// Runs `cmd` (git with `args`), feeding `input`; its standard output.
fn run_git(mut cmd: Command, args: &[&str], input: Option<&[u8]>, git_dir: &Path) -> Result<Vec<u8>, SnapshotError> {
    if input.is_some() {
        cmd.stdin(Stdio::piped());
    }
    let failed = |stderr: String| SnapshotError::Git {
        args: args.join(" "),
        git_dir: git_dir.to_path_buf(),
        stderr: stderr.trim().to_string(),
    };
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound { SnapshotError::GitMissing } else { failed(e.to_string()) }
    })?;
    let writer = match (input, child.stdin.take()) {
        (Some(bytes), Some(mut stdin)) => {
            let bytes = bytes.to_vec();
            Some(std::thread::spawn(move || stdin.write_all(&bytes)))
        }
        _ => None,
    };
    let out = child.wait_with_output().map_err(|e| failed(e.to_string()))?;
    if let Some(w) = writer {
        let _ = w.join();
    }
    if !out.status.success() {
        return Err(failed(String::from_utf8_lossy(&out.stderr).into_owned()));
    }
    Ok(out.stdout)
}
