//! # toolshed-path
//!
//! Owns: turning a model-given path into a [`ResolvedPath`] (inside or outside the worktree,
//! symbolic links resolved), the no-follow atomic writes and removals, and the refusal of special
//! files ([`special_kind`], [`open_regular`], [`read_regular`]). Must never decide a permission
//! itself (it builds the `external_directory` request; the chain decides) and never starts a
//! process. Used by the file tools, apply_patch, the shell's `workdir`, the command-line analysis
//! and the lsp tool.
//!
//! Path confinement shared by every tool that takes a path from a model (the file tools,
//! apply_patch, the shell's `workdir`).
//!
//! A model-given path is validated (no NUL, no control characters, not empty, not a Windows
//! drive path, not overlong), made absolute against the working directory, and resolved fully,
//! symlinks included, component by component, so a missing tail (a file about to be created)
//! still resolves. The result ([`ResolvedPath`]) knows whether it lies inside the worktree; a
//! path outside needs the `external_directory` permission ([`ResolvedPath::external_request`]),
//! with OpenCode's pattern `<dir>/*`.
//!
//! Writes are stricter ([`Confinement::resolve_for_write`]): a path that names a place inside the
//! worktree but reaches outside it through a symbolic link is refused outright, and
//! [`ResolvedPath::write_atomic`] / [`ResolvedPath::remove_file`] walk to the target again one
//! component at a time without following links, so a link swapped in after the check cannot
//! redirect the write.
//!
//! Permission patterns ([`ResolvedPath::pattern`]) are relative to the worktree root with `/`
//! separators (`src/main.rs`, `.` for the root itself); paths outside it use their absolute form.
//!
//! ```
//! # let tmp = tempfile::tempdir().unwrap();
//! # let root = tmp.path().canonicalize().unwrap();
//! # std::fs::create_dir(root.join("src")).unwrap();
//! use toolshed_path::Confinement;
//!
//! let paths = Confinement::new(&root, &root);
//! let main = paths.resolve("src/../src/main.rs").unwrap();
//! assert!(main.is_inside());
//! assert_eq!(main.pattern(), "src/main.rs");
//! assert!(main.external_request().is_none());
//!
//! let passwd = paths.resolve("/etc/passwd").unwrap();
//! assert!(!passwd.is_inside());
//! assert_eq!(passwd.external_request().unwrap().patterns, ["/etc/*"]);
//!
//! assert!(paths.resolve("").is_err());
//! assert!(paths.resolve("a\0b").is_err());
//! ```

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Read as _};
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use serde_json::json;
use toolshed_core::paths::lexical_normalise;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::{ToolContext, ToolError};

/// Most symbolic links followed while resolving one path (Linux's own limit).
pub const MAX_SYMLINKS: usize = 40;
/// Longest path accepted, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single file or directory name accepted, in bytes (Linux's `NAME_MAX`).
pub const MAX_NAME_BYTES: usize = 255;

/// Why a model-given path was refused. The message (its `Display`) is written for the model:
/// what was wrong and what to send instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path was empty or only whitespace.
    #[error(
        "The path is empty. Send a path relative to the working directory `{cwd}` (for example `src/main.rs`) or an absolute path."
    )]
    Empty {
        /// The working directory relative paths start from.
        cwd: String,
    },
    /// The path held a NUL byte.
    #[error("The path {input:?} contains a NUL byte, which no file name can hold. Send the path without it.")]
    Nul {
        /// The path as sent.
        input: String,
    },
    /// The path held another control character (newline, tab, escape, ...).
    #[error("The path {input:?} contains the control character U+{code:04X}. Send the path without it.")]
    Control {
        /// The path as sent.
        input: String,
        /// The offending character's code point.
        code: u32,
    },
    /// The path, or one of its names, was longer than the file system allows.
    #[error(
        "The path is too long ({bytes} bytes in {what}); paths are limited to {MAX_PATH_BYTES} bytes and each name to {MAX_NAME_BYTES} bytes. Send a shorter path."
    )]
    TooLong {
        /// Which part was too long ("the whole path" or a quoted name).
        what: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// A Windows drive (`C:\x`, `D:x`) or UNC (`\\server\share`) path.
    #[error(
        "`{input}` is a Windows path, but the worktree is at `{root}` on a POSIX file system. Send a path relative to the working directory, or an absolute path starting with `/`."
    )]
    Windows {
        /// The path as sent.
        input: String,
        /// The worktree root.
        root: String,
    },
    /// `~` was used but no home directory is known.
    #[error("`{input}` starts with `~`, but no home directory is set. Send an absolute path instead.")]
    NoHome {
        /// The path as sent.
        input: String,
    },
    /// Resolving the path followed too many symbolic links (a loop).
    #[error(
        "`{input}` cannot be resolved: it goes through more than {MAX_SYMLINKS} symbolic links (a link loop at `{at}`). Use a path that does not go through the loop."
    )]
    SymlinkLoop {
        /// The path as sent.
        input: String,
        /// Where the loop was detected.
        at: String,
    },
    /// A path component that must be a directory is a file.
    #[error("`{input}` cannot exist: `{file}` is a file, not a directory. Check the path and send it again.")]
    NotADirectory {
        /// The path as sent.
        input: String,
        /// The component that is a file.
        file: String,
    },
    /// A write target that names a place inside the worktree but reaches outside it through a link.
    #[error(
        "`{input}` goes through a symbolic link to `{target}`, outside the worktree `{root}`. File tools never write through a link that leaves the worktree. To change that file on purpose, send its real path `{target}` (that asks for the external_directory permission)."
    )]
    SymlinkEscape {
        /// The path as sent.
        input: String,
        /// Where the link leads.
        target: String,
        /// The worktree root.
        root: String,
    },
    /// A path in toolshed's own data directory.
    #[error(
        "`{input}` is in toolshed's own data directory `{dir}` (session transcripts, snapshots, trust records), which no tool reads or changes. Only a saved output whose path a cut result gave can be read there."
    )]
    Private {
        /// The path as sent.
        input: String,
        /// The data directory.
        dir: String,
    },
    /// A write target written with a trailing `/`.
    #[error(
        "`{input}` ends with `/`, which names a directory, but this call writes a file. Send the file path without the trailing slash."
    )]
    TrailingSlash {
        /// The path as sent.
        input: String,
    },
    /// The file system changed under a write between the check and the write (a link appeared).
    #[error(
        "`{path}` changed while it was being written (`{at}` is no longer a plain directory: {reason}). Nothing was written. Check the path and call again."
    )]
    Changed {
        /// The resolved target.
        path: String,
        /// The component that changed.
        at: String,
        /// What the file system said.
        reason: String,
    },
    /// Another I/O failure while resolving or writing.
    #[error("Could not access `{path}`: {reason}.")]
    Io {
        /// The path involved.
        path: String,
        /// What the file system said.
        reason: String,
    },
}

impl From<PathError> for ToolError {
    fn from(e: PathError) -> Self {
        ToolError::RespondToModel(e.to_string())
    }
}

/// What the resolved path will be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reading, listing, searching, or running a command in it.
    Read,
    /// Creating, changing or deleting it.
    Write,
}

/// The worktree a tool is confined to and the directory relative paths start from; resolves
/// model-given paths against them.
#[derive(Clone, Debug)]
pub struct Confinement {
    root: PathBuf,
    cwd: PathBuf,
    read_allowed: Vec<PathBuf>,
    /// toolshed's data directory, which no path may lead into ([`private_dir`]).
    private: Option<PathBuf>,
}

/// toolshed's own data directory, canonical: the transcripts of every session
/// (`sessions.db`), the worktrees' snapshots and the records of what a person accepted. A
/// model's tool reads nothing there but the saved outputs it is told about, whatever is
/// approved (the shell's sandbox hides it the same way). `None` when it is the worktree `root`
/// itself (or `/`); a worktree inside it stays the worktree's ([`is_private`]).
pub fn private_dir(root: &Path) -> Option<PathBuf> {
    let dir = canonical_or_self(&toolshed_core::paths::data_dir());
    (root != dir && dir.parent().is_some()).then_some(dir)
}

/// Whether `path` lies in the data directory `private` ([`private_dir`]) and not in the
/// worktree `root` that lies inside it.
pub fn is_private(path: &Path, private: &Path, root: &Path) -> bool {
    path.starts_with(private) && !(root.starts_with(private) && path.starts_with(root))
}

impl Confinement {
    /// Confinement to `root`, with relative paths starting at `cwd`. Both are canonicalised
    /// (symlinks resolved); a directory that cannot be is used as given.
    pub fn new(root: &Path, cwd: &Path) -> Self {
        Confinement {
            root: canonical_or_self(root),
            cwd: canonical_or_self(cwd),
            read_allowed: Vec::new(),
            private: None,
        }
    }

    /// Confinement to the call's worktree and working directory. Reading the chain's spill
    /// directory (where cut outputs are saved, and which the model is told about) needs no
    /// `external_directory` permission.
    /// Nothing else of toolshed's data directory can be resolved ([`private_dir`]).
    pub fn from_context(ctx: &ToolContext) -> Self {
        let mut confinement = Confinement::new(ctx.root(), ctx.cwd()).with_read_allowed(&ctx.environment().spill_dir());
        confinement.private = private_dir(&confinement.root);
        confinement
    }

    /// Also lets reads of anything under `dir` skip the `external_directory` permission.
    pub fn with_read_allowed(mut self, dir: &Path) -> Self {
        self.read_allowed.push(canonical_or_self(dir));
        self
    }

    /// The worktree root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory relative paths start from (canonical).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Resolves `input` for reading (or listing, searching, running a command in). Links are
    /// followed wherever they lead; a result outside the worktree needs `external_directory`.
    pub fn resolve(&self, input: &str) -> Result<ResolvedPath, PathError> {
        self.resolve_as(input, Access::Read)
    }

    /// Resolves `input` for creating, changing or deleting. Like [`Confinement::resolve`], but a
    /// path that names a place inside the worktree and reaches outside it through a symbolic
    /// link (to a file, a directory, or nothing yet: a dangling link) is refused, and so is a
    /// trailing `/`. A path that names a place outside the worktree itself resolves, and needs
    /// `external_directory` like any other.
    pub fn resolve_for_write(&self, input: &str) -> Result<ResolvedPath, PathError> {
        self.resolve_as(input, Access::Write)
    }

    /// Resolves `input` for `access`.
    pub fn resolve_as(&self, input: &str, access: Access) -> Result<ResolvedPath, PathError> {
        let cleaned = self.clean(input)?;
        let trailing_slash = cleaned.len() > 1 && cleaned.ends_with('/');
        if access == Access::Write && trailing_slash {
            return Err(PathError::TrailingSlash { input: input.to_string() });
        }
        let (start, rest) = match cleaned.strip_prefix('/') {
            Some(_) => (PathBuf::from("/"), cleaned.as_str()),
            None => (self.cwd.clone(), cleaned.as_str()),
        };
        let lexical = lexical_normalise(&start.join(rest));
        let walk = walk(&start, Path::new(rest), input)?;
        let inside = walk.path.starts_with(&self.root);
        if access == Access::Write && walk.via_symlink && !inside && lexical.starts_with(&self.root) {
            return Err(PathError::SymlinkEscape {
                input: input.to_string(),
                target: walk.path.display().to_string(),
                root: self.root.display().to_string(),
            });
        }
        let metadata = std::fs::metadata(&walk.path).ok();
        let allowed = access == Access::Read && self.read_allowed.iter().any(|d| walk.path.starts_with(d));
        if let Some(dir) = &self.private
            && is_private(&walk.path, dir, &self.root)
            && !allowed
        {
            return Err(PathError::Private { input: input.to_string(), dir: dir.display().to_string() });
        }
        let exempt = allowed && !inside;
        Ok(ResolvedPath {
            input: input.to_string(),
            relative: walk.path.strip_prefix(&self.root).ok().map(Path::to_path_buf),
            relative_to_cwd: walk.path.strip_prefix(&self.cwd).ok().map(Path::to_path_buf),
            root: self.root.clone(),
            path: walk.path,
            exists: metadata.is_some(),
            is_dir: metadata.as_ref().is_some_and(std::fs::Metadata::is_dir),
            via_symlink: walk.via_symlink,
            names_link: walk.names_link,
            access,
            external_exempt: exempt,
        })
    }

    /// Validates `input` and rewrites it into a `/`-separated path: surrounding whitespace and a
    /// `file://` prefix dropped, `\` read as `/`, `~` expanded.
    fn clean(&self, input: &str) -> Result<String, PathError> {
        if let Some(c) = input.chars().find(|c| c.is_control() && *c != '\0' && !c.is_ascii_whitespace()) {
            return Err(PathError::Control { input: input.to_string(), code: u32::from(c) });
        }
        if input.contains('\0') {
            return Err(PathError::Nul { input: input.to_string() });
        }
        let trimmed = input.trim();
        if let Some(c) = trimmed.chars().find(|c| c.is_control()) {
            return Err(PathError::Control { input: input.to_string(), code: u32::from(c) });
        }
        let trimmed = trimmed.strip_prefix("file://").unwrap_or(trimmed);
        if trimmed.is_empty() {
            return Err(PathError::Empty { cwd: self.cwd.display().to_string() });
        }
        let windows = || PathError::Windows { input: input.to_string(), root: self.root.display().to_string() };
        let bytes = trimmed.as_bytes();
        if trimmed.starts_with("\\\\") || (bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':') {
            return Err(windows());
        }
        let mut path = trimmed.replace('\\', "/");
        if path == "~" || path.starts_with("~/") {
            let home =
                toolshed_core::paths::home_dir().ok_or_else(|| PathError::NoHome { input: input.to_string() })?;
            path = format!("{}{}", home.to_string_lossy(), &path[1..]);
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong { what: "the whole path".into(), bytes: path.len() });
        }
        if let Some(name) = path.split('/').find(|n| n.len() > MAX_NAME_BYTES) {
            let shown: String = name.chars().take(40).collect();
            return Err(PathError::TooLong { what: format!("the name `{shown}…`"), bytes: name.len() });
        }
        Ok(path)
    }
}

/// A model-given path, resolved: absolute, with every symbolic link followed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPath {
    input: String,
    path: PathBuf,
    root: PathBuf,
    relative: Option<PathBuf>,
    relative_to_cwd: Option<PathBuf>,
    exists: bool,
    is_dir: bool,
    via_symlink: bool,
    names_link: bool,
    access: Access,
    external_exempt: bool,
}

impl ResolvedPath {
    /// The absolute path with every link resolved (a missing tail appended as given).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path as the model sent it.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The worktree root it was resolved against.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What the path was resolved for.
    pub fn access(&self) -> Access {
        self.access
    }

    /// Whether the resolved path lies inside the worktree (the root itself included).
    pub fn is_inside(&self) -> bool {
        self.relative.is_some()
    }

    /// The path relative to the worktree root, if inside (empty for the root itself).
    pub fn relative(&self) -> Option<&Path> {
        self.relative.as_deref()
    }

    /// Whether something existed at the path when it was resolved.
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// Whether the path was a directory when it was resolved.
    pub fn is_dir(&self) -> bool {
        self.is_dir
    }

    /// Whether the path's last name is itself a symbolic link (in the directory the names before
    /// it resolve to, exactly as [`Confinement::resolve_as`] reads the input: `\\` as `/`, a
    /// `file://` prefix dropped), which [`ResolvedPath::path`] follows: deleting or renaming
    /// that path acts on the link's target, not on the link.
    pub fn names_link(&self) -> bool {
        self.names_link
    }

    /// Whether resolving it went through at least one symbolic link.
    pub fn via_symlink(&self) -> bool {
        self.via_symlink
    }

    /// The pattern permission rules match: relative to the worktree root with `/` separators
    /// (`.` for the root), or the absolute path for anything outside.
    pub fn pattern(&self) -> String {
        match &self.relative {
            Some(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Some(rel) => slashed(rel),
            None => slashed(&self.path),
        }
    }

    /// How to show the path to the model: relative to the working directory when under it,
    /// else absolute. Either form is accepted back.
    pub fn display(&self) -> String {
        match &self.relative_to_cwd {
            Some(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Some(rel) => slashed(rel),
            None => slashed(&self.path),
        }
    }

    /// The directory an `external_directory` approval covers: the path itself when it is a
    /// directory, else its parent.
    pub fn external_dir(&self) -> &Path {
        if self.is_dir { &self.path } else { self.path.parent().unwrap_or(&self.path) }
    }

    /// The `external_directory` request this path needs: `None` inside the worktree (and, for
    /// reads, under an allowed directory such as the spill directory), else a request for
    /// `<dir>/*` (approving "always" covers the same pattern), with `filepath` and `parentDir`
    /// metadata for the approver.
    pub fn external_request(&self) -> Option<PermissionRequest> {
        if self.is_inside() || self.external_exempt {
            return None;
        }
        let dir = slashed(self.external_dir());
        let pattern = if dir.ends_with('/') { format!("{dir}*") } else { format!("{dir}/*") };
        Some(
            PermissionRequest::new("external_directory", [pattern])
                .with_metadata("filepath", json!(slashed(&self.path)))
                .with_metadata("parentDir", json!(dir)),
        )
    }

    /// Every request a call on this path needs: `external_directory` if the path is outside,
    /// then `permission` (the tool's key, e.g. `read` or `edit`) on [`ResolvedPath::pattern`].
    pub fn requests(&self, permission: &str) -> Vec<PermissionRequest> {
        let mut out: Vec<PermissionRequest> = self.external_request().into_iter().collect();
        out.push(PermissionRequest::new(permission, self.patterns()));
        out
    }

    /// The `read` request of a tool that shows this file's present text (an edit's diff, the
    /// lines nearest an `old_string` it did not find): the `read` rules cover every tool that
    /// shows a file's text, not only `read` (review 14: an edit of a read-denied `.env` with a
    /// wrong `old_string` printed its secrets). `None` for a file that is not there yet.
    pub fn read_request(&self) -> Option<PermissionRequest> {
        (self.exists && !self.is_dir).then(|| PermissionRequest::new("read", self.patterns()))
    }

    /// The patterns the rules see for this path: [`ResolvedPath::pattern`], and its absolute
    /// path too where that is one of the user's directories or what a link there leads to (a
    /// worktree holding `~/.config`, or a dotfiles checkout `~/.config/toolshed` links into):
    /// the file is the user's configuration, whatever the worktree calls it
    /// ([`toolshed_core::protected::user_places`]).
    pub fn patterns(&self) -> Vec<String> {
        let mut patterns = vec![self.pattern()];
        if self.relative.is_some()
            && toolshed_core::protected::user_places(toolshed_core::paths::config_dir().as_deref())
                .iter()
                .any(|target| self.path.starts_with(target) || target.starts_with(&self.path))
        {
            patterns.push(slashed(&self.path));
        }
        patterns
    }

    /// Whether two resolutions lead to the same place with the same standing (inside or not).
    pub fn same_target(&self, other: &ResolvedPath) -> bool {
        self.path == other.path && self.is_inside() == other.is_inside()
    }

    /// Writes `bytes` to the path atomically: a temporary file in the same directory, fsync,
    /// rename over the target, fsync of the directory. Missing parent directories are created.
    /// An existing file keeps its permission bits. The directories on the way are opened one
    /// at a time without following symbolic links, so a link that appeared after resolution
    /// makes the write fail ([`PathError::Changed`]) instead of leaving the checked place.
    pub fn write_atomic(&self, bytes: &[u8]) -> Result<(), PathError> {
        let (dir, name) = self.open_parent(true)?;
        // Temporary files left by a toolshed process killed mid-write (their pid is gone).
        if let Some(parent) = self.path.parent() {
            toolshed_patch::temp::sweep_stale(parent);
        }
        dir.write_atomic(name, bytes).map_err(|e| self.io_error(e))
    }

    /// Removes the file at the path (never a directory, never through a link that appeared
    /// after resolution: a link at the target itself is removed, not followed).
    pub fn remove_file(&self) -> Result<(), PathError> {
        let (dir, name) = self.open_parent(false)?;
        dir.remove_file(name).map_err(|e| self.io_error(e))
    }

    fn io_error(&self, e: io::Error) -> PathError {
        PathError::Io { path: self.path.display().to_string(), reason: e.to_string() }
    }

    /// Opens the parent directory without following links: from the worktree root for a path
    /// inside it, from `/` otherwise.
    fn open_parent(&self, create: bool) -> Result<(safe::Dir, &OsStr), PathError> {
        let name = self.path.file_name().ok_or_else(|| PathError::Io {
            path: self.path.display().to_string(),
            reason: "it names a directory, not a file".into(),
        })?;
        let parent = self.path.parent().unwrap_or(Path::new("/"));
        let (base, below) = match parent.strip_prefix(&self.root) {
            Ok(below) => (self.root.as_path(), below),
            Err(_) => (Path::new("/"), parent.strip_prefix("/").unwrap_or(parent)),
        };
        let mut dir = safe::Dir::open_base(base).map_err(|e| self.io_error(e))?;
        let mut at = base.to_path_buf();
        for comp in below.components() {
            let Component::Normal(part) = comp else { continue };
            at.push(part);
            dir = dir.child(part, create).map_err(|e| PathError::Changed {
                path: self.path.display().to_string(),
                at: at.display().to_string(),
                reason: e.to_string(),
            })?;
        }
        Ok((dir, name))
    }
}

impl fmt::Display for ResolvedPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display())
    }
}

/// Resolves `input` for reading against the call's worktree; see [`Confinement::resolve`].
pub fn resolve(ctx: &ToolContext, input: &str) -> Result<ResolvedPath, PathError> {
    Confinement::from_context(ctx).resolve(input)
}

/// Resolves `input` for writing against the call's worktree; see [`Confinement::resolve_for_write`].
pub fn resolve_for_write(ctx: &ToolContext, input: &str) -> Result<ResolvedPath, PathError> {
    Confinement::from_context(ctx).resolve_for_write(input)
}

/// The resolution a path argument got at permission time, kept for the run to confirm.
///
/// Put one in an args struct next to the path (`#[serde(skip)] #[schemars(skip)]`); fill it in
/// `permissions()` with [`Permitted::remember`] and pass it to [`confirm`] in `run()`.
#[derive(Debug, Default)]
pub struct Permitted(OnceLock<ResolvedPath>);

impl Permitted {
    /// Remembers the resolution permissions were computed from (the first one wins).
    pub fn remember(&self, path: &ResolvedPath) {
        let _ = self.0.set(path.clone());
    }

    /// The remembered resolution, if permissions were checked.
    pub fn get(&self) -> Option<&ResolvedPath> {
        self.0.get()
    }
}

/// Confirms at run time a path resolved again just before use (`now`).
///
/// When permissions were checked (`permitted` is filled), `now` must lead to the same place;
/// if a link changed in between, the call fails and the model is asked to call again. When
/// they were not (the tool runs outside the chain), the requests `now` needs — `external_directory`
/// and `permission` on its pattern — are asked through the context.
pub async fn confirm(
    ctx: &ToolContext,
    permitted: &Permitted,
    now: ResolvedPath,
    permission: &str,
) -> Result<ResolvedPath, ToolError> {
    match permitted.get() {
        Some(before) if before.same_target(&now) => Ok(now),
        Some(before) => Err(ToolError::model(format!(
            "`{}` resolved to `{}` when permission was checked but to `{}` now (a symbolic link changed). Nothing was done. Check the path and call again.",
            now.input(),
            before.path().display(),
            now.path().display()
        ))),
        None => {
            for request in now.requests(permission) {
                ctx.ask(request).await?;
            }
            Ok(now)
        }
    }
}

/// `path` relative to `root` with `/` separators (`.` for the root), or absolute when outside:
/// the permission pattern of an already-resolved path.
pub fn pattern_for(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => slashed(rel),
        Err(_) => slashed(path),
    }
}

fn slashed(path: &Path) -> String {
    let text = path.to_string_lossy();
    if std::path::MAIN_SEPARATOR == '/' { text.into_owned() } else { text.replace(std::path::MAIN_SEPARATOR, "/") }
}

fn canonical_or_self(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| lexical_normalise(path))
}

struct Walk {
    path: PathBuf,
    via_symlink: bool,
    /// The name the path ends with is a symbolic link (in the directory it resolved to).
    names_link: bool,
}

enum Step {
    Root,
    Parent,
    Name(OsString),
}

fn steps(path: &Path) -> impl DoubleEndedIterator<Item = Step> + '_ {
    path.components().filter_map(|c| match c {
        Component::RootDir | Component::Prefix(_) => Some(Step::Root),
        Component::CurDir => None,
        Component::ParentDir => Some(Step::Parent),
        Component::Normal(name) => Some(Step::Name(name.to_os_string())),
    })
}

/// Resolves `rest` from the canonical directory `start` like the kernel would, one name at a
/// time, following links (at most [`MAX_SYMLINKS`]); names that do not exist are appended as
/// they are, so a file about to be created resolves to where it will be.
fn walk(start: &Path, rest: &Path, input: &str) -> Result<Walk, PathError> {
    let mut out = start.to_path_buf();
    let mut todo: Vec<Step> = steps(rest).rev().collect();
    let mut links = 0;
    let mut via_symlink = false;
    let mut names_link = false;
    while let Some(step) = todo.pop() {
        let name = match step {
            Step::Root => {
                out = PathBuf::from("/");
                continue;
            }
            Step::Parent => {
                out.pop();
                continue;
            }
            Step::Name(name) => name,
        };
        let candidate = out.join(&name);
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(PathError::SymlinkLoop {
                        input: input.to_string(),
                        at: candidate.display().to_string(),
                    });
                }
                let target = std::fs::read_link(&candidate)
                    .map_err(|e| PathError::Io { path: candidate.display().to_string(), reason: e.to_string() })?;
                via_symlink = true;
                // The last name of the path as given (or of a link's target that replaced it).
                names_link |= !todo.iter().any(|s| matches!(s, Step::Name(_)));
                todo.extend(steps(&target).rev().collect::<Vec<_>>());
            }
            Ok(meta) => {
                if !meta.is_dir() && !todo.is_empty() && todo.iter().any(|s| matches!(s, Step::Name(_))) {
                    return Err(PathError::NotADirectory {
                        input: input.to_string(),
                        file: candidate.display().to_string(),
                    });
                }
                out = candidate;
            }
            Err(_) => out = candidate,
        }
    }
    Ok(Walk { path: out, via_symlink, names_link })
}

#[cfg(unix)]
mod confined_fs;
#[cfg(unix)]
pub use confined_fs::ConfinedFs;

#[cfg(unix)]
mod safe {
    //! Directory handles opened without following links, and writes relative to them.

    use std::ffi::OsStr;
    use std::io::{self, Write};
    use std::os::fd::OwnedFd;
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};

    use rustix::fs::{AtFlags, Mode, OFlags};

    /// An open directory.
    pub struct Dir(OwnedFd);

    static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

    impl Dir {
        /// Opens the trusted base directory (the canonical worktree root, or `/`).
        pub fn open_base(path: &Path) -> io::Result<Dir> {
            let fd = rustix::fs::open(path, OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
            Ok(Dir(fd))
        }

        /// The open directory.
        pub fn fd(&self) -> &OwnedFd {
            &self.0
        }

        /// Opens the subdirectory `name`, creating it first when `create`; fails on a link.
        pub fn child(&self, name: &OsStr, create: bool) -> io::Result<Dir> {
            let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC;
            match rustix::fs::openat(&self.0, name, flags, Mode::empty()) {
                Ok(fd) => Ok(Dir(fd)),
                Err(rustix::io::Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&self.0, name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    }
                    Ok(Dir(rustix::fs::openat(&self.0, name, flags, Mode::empty())?))
                }
                Err(e) => Err(e.into()),
            }
        }

        /// Writes `name` in this directory through a temporary file and a rename.
        pub fn write_atomic(&self, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
            let existing_mode = match rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if (st.st_mode & 0o170000) == 0o040000 => {
                    return Err(io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"));
                }
                Ok(st) if (st.st_mode & 0o170000) == 0o100000 => Some(st.st_mode & 0o7777),
                _ => None,
            };
            let tmp = toolshed_patch::temp::name(&name.to_string_lossy(), TEMP_COUNTER.fetch_add(1, Ordering::Relaxed));
            let flags = OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(&self.0, tmp.as_str(), flags, Mode::from_raw_mode(0o666))?;
            let result = (|| -> io::Result<()> {
                if let Some(mode) = existing_mode {
                    rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode as rustix::fs::RawMode))?;
                }
                let mut file = std::fs::File::from(fd);
                file.write_all(bytes)?;
                file.sync_all()?;
                drop(file);
                rustix::fs::renameat(&self.0, tmp.as_str(), &self.0, name)?;
                Ok(())
            })();
            if let Err(e) = result {
                let _ = rustix::fs::unlinkat(&self.0, tmp.as_str(), AtFlags::empty());
                return Err(e);
            }
            // The rename is durable once the directory entry is; a failure here leaves the new
            // content in place, so it is not reported as a failed write.
            let _ = rustix::fs::fsync(&self.0);
            Ok(())
        }

        /// Removes the file (or link) `name` in this directory.
        pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
            rustix::fs::unlinkat(&self.0, name, AtFlags::empty())?;
            let _ = rustix::fs::fsync(&self.0);
            Ok(())
        }
    }
}

#[cfg(not(unix))]
mod safe {
    //! Portable fallback: plain paths, re-checked for links just before use.

    use std::ffi::OsStr;
    use std::io::{self, Write};
    use std::path::{Path, PathBuf};

    /// A directory (by path).
    pub struct Dir(PathBuf);

    impl Dir {
        /// Opens the trusted base directory.
        pub fn open_base(path: &Path) -> io::Result<Dir> {
            Ok(Dir(path.to_path_buf()))
        }

        /// The subdirectory `name`, created when `create`; fails on a link.
        pub fn child(&self, name: &OsStr, create: bool) -> io::Result<Dir> {
            let path = self.0.join(name);
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() || !m.is_dir() => {
                    Err(io::Error::new(io::ErrorKind::Other, "not a plain directory"))
                }
                Ok(_) => Ok(Dir(path)),
                Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                    std::fs::create_dir(&path)?;
                    Ok(Dir(path))
                }
                Err(e) => Err(e),
            }
        }

        /// Writes `name` through a temporary file and a rename.
        pub fn write_atomic(&self, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
            let target = self.0.join(name);
            let perms = std::fs::metadata(&target).ok().map(|m| m.permissions());
            let mut tmp = tempfile::NamedTempFile::new_in(&self.0)?;
            tmp.write_all(bytes)?;
            tmp.as_file().sync_all()?;
            if let Some(p) = perms {
                tmp.as_file().set_permissions(p)?;
            }
            tmp.persist(&target).map_err(|e| e.error)?;
            Ok(())
        }

        /// Removes the file `name`.
        pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
            std::fs::remove_file(self.0.join(name))
        }
    }
}

// Special files: what they are and how to read only regular ones.

/// What kind of special file `file_type` is, when it is neither a regular file nor a directory
/// (a FIFO would block a reader forever, `/dev/zero` never ends).
pub fn special_kind(file_type: std::fs::FileType) -> Option<&'static str> {
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt as _;
    if file_type.is_file() || file_type.is_dir() {
        return None;
    }
    #[cfg(unix)]
    {
        if file_type.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some("a special file")
}

/// The refusal for a special file (see [`special_kind`]).
pub fn special_file_error(verb: &str, display: &str, kind: &str) -> ToolError {
    ToolError::model(format!(
        "Cannot {verb} `{display}`: it is {kind}, not a regular file. The file tools only work on regular files; use the shell if you really mean to touch it."
    ))
}

/// Opens `path` for reading, refusing anything but a regular file. The check is made on the
/// open handle, and the open itself does not wait for a FIFO's writer, so a file swapped for a
/// FIFO or a device after an earlier check can neither hang nor flood the caller. An absolute
/// `path` is a resolved one, with no link left in it: it is opened one directory at a time from
/// `/` without following links, so a directory swapped for a link after the check (to read a
/// file outside the worktree) makes the open fail.
pub fn open_regular(path: &Path) -> std::io::Result<Result<std::fs::File, &'static str>> {
    // Sockets cannot even be opened: tell them apart before trying.
    if let Some(kind) = special_kind(std::fs::metadata(path)?.file_type()) {
        return Ok(Err(kind));
    }
    let file = open_nonblocking(path)?;
    let file_type = file.metadata()?.file_type();
    if let Some(kind) = special_kind(file_type) {
        return Ok(Err(kind));
    }
    // O_NONBLOCK stays set: regular files ignore it.
    Ok(Ok(file))
}

/// Opens `path` read-only and non-blocking; an absolute path without following any link.
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    if path.is_absolute() {
        let (dir, name) = open_parent(Path::new("/"), path)?;
        let flags = rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::NONBLOCK
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::CLOEXEC;
        let fd = rustix::fs::openat(dir.fd(), name, flags, rustix::fs::Mode::empty())?;
        return Ok(std::fs::File::from(fd));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    options.open(path)
}

/// The directory holding `path`, a resolved path under the trusted `base` (the worktree root,
/// or `/`), opened one directory at a time from `base` without following links, and `path`'s
/// last name. A link on the way (a directory swapped for one after a check) is an error.
#[cfg(unix)]
fn open_parent<'p>(base: &Path, path: &'p Path) -> io::Result<(safe::Dir, &'p OsStr)> {
    let invalid =
        || io::Error::new(io::ErrorKind::InvalidInput, format!("`{}` is not a path toolshed resolved", path.display()));
    let rest = path.strip_prefix(base).map_err(|_| invalid())?;
    let mut names = Vec::new();
    for component in rest.components() {
        match component {
            Component::Normal(name) => names.push(name),
            _ => return Err(invalid()),
        }
    }
    let name = names.pop().ok_or_else(invalid)?;
    let mut dir = safe::Dir::open_base(base)?;
    for step in names {
        dir = dir.child(step, false)?;
    }
    Ok((dir, name))
}

/// Reads a whole regular file (see [`open_regular`]); `Ok(Err(kind))` for a special file.
pub fn read_regular(path: &Path) -> std::io::Result<Result<Vec<u8>, &'static str>> {
    let mut file = match open_regular(path)? {
        Ok(file) => file,
        Err(kind) => return Ok(Err(kind)),
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Ok(bytes))
}

#[cfg(test)]
mod tests;
