//! Why a patch did not apply. Every message starts with Codex's wording (models know it) and
//! adds what a model needs to fix the patch: which chunk, and what the file holds instead.

use std::fmt;

use crate::parser::ParseError;

/// Lines of the file shown next to a failed chunk, with their 1-based numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    /// The 1-based number of the first line shown.
    pub first_line: usize,
    /// The lines.
    pub lines: Vec<String>,
    /// How similar they are to the chunk's lines (0..=1).
    pub score: f64,
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, line) in self.lines.iter().enumerate() {
            write!(f, "\n{:>6}\t{line}", self.first_line + i)?;
        }
        Ok(())
    }
}

/// Where in the patch a failed chunk is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkPos {
    /// The path as written in the patch.
    pub path: String,
    /// 1-based number of the chunk within its `Update File` hunk.
    pub chunk: usize,
    /// How many chunks that hunk has.
    pub chunks: usize,
    /// The 1-based file line the search started from (after the previous chunk).
    pub searched_from: usize,
}

/// Lines of a chunk that were not found in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct NotFound {
    /// Which chunk.
    pub pos: ChunkPos,
    /// The lines looked for: the `@@` context line, or the chunk's context and `-` lines.
    pub lines: Vec<String>,
    /// Set when the lines do occur, but before the previous chunk's end (chunks out of order).
    pub earlier_at: Option<usize>,
    /// The most similar lines of the file after the search start.
    pub closest: Option<Region>,
}

/// A patch that was not applied. Nothing was written, unless [`ApplyError::Commit`] says
/// some files could not be restored.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ApplyError {
    /// The text is not a valid patch.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The patch has no file operations.
    #[error("No files were modified.")]
    Empty,
    /// A path was refused (outside the worktree, malformed, ...).
    #[error("{message}")]
    Path {
        /// The path as written in the patch.
        path: String,
        /// Why.
        message: String,
    },
    /// An `@@ context` line was not found.
    #[error("{}", context_not_found(.0))]
    ContextNotFound(Box<NotFound>),
    /// A chunk's context and `-` lines were not found.
    #[error("{}", lines_not_found(.0))]
    LinesNotFound(Box<NotFound>),
    /// A file to update could not be read.
    #[error("Failed to read file to update {path}: {reason}")]
    Read {
        /// The path as written.
        path: String,
        /// Why.
        reason: String,
    },
    /// A file to delete is missing or not a file.
    #[error("Failed to delete file {path}: {reason}")]
    Delete {
        /// The path as written.
        path: String,
        /// Why.
        reason: String,
    },
    /// A file cannot be written there (a directory is in the way).
    #[error("Failed to write file {path}: {reason}")]
    Write {
        /// The path as written.
        path: String,
        /// Why.
        reason: String,
    },
    /// Writing failed part-way; see [`CommitError`].
    #[error(transparent)]
    Commit(#[from] CommitError),
}

impl ApplyError {
    /// Whether the file tree may have changed: only when a failed write could not be undone.
    pub fn left_changes(&self) -> bool {
        matches!(self, ApplyError::Commit(c) if !c.unrestored.is_empty())
    }
}

fn context_not_found(nf: &NotFound) -> String {
    let (pos, closest) = (&nf.pos, &nf.closest);
    let context = nf.lines.first().map_or("", String::as_str);
    let mut s = format!("Failed to find context '{context}' in {}", pos.path);
    s += &format!(
        "\n\nThe '@@ {context}' line of chunk {} of {} was looked for from line {} of {} on",
        pos.chunk, pos.chunks, pos.searched_from, pos.path
    );
    match closest {
        Some(region) if region.score >= 0.5 => s += &format!("; the most similar line is:{region}"),
        _ => s += "; no line is similar.",
    }
    s
}

fn lines_not_found(nf: &NotFound) -> String {
    let (pos, old_lines, earlier_at, closest) = (&nf.pos, &nf.lines, &nf.earlier_at, &nf.closest);
    let mut s = format!("Failed to find expected lines in {}:\n{}", pos.path, old_lines.join("\n"));
    s += &format!("\n\nThese are the context and '-' lines of chunk {} of {} for {}.", pos.chunk, pos.chunks, pos.path);
    if let Some(line) = earlier_at {
        s += &format!(
            " They occur at line {line}, before the end of the previous chunk (line {}): chunks must follow \
             the order of the file.",
            pos.searched_from
        );
    } else {
        match closest {
            Some(region) if region.score > 0.0 => s += &format!(" The most similar lines of the file are:{region}"),
            _ => s += " No similar lines are in the file.",
        }
    }
    s
}

/// Writing the planned changes failed. The files already written were put back as they were,
/// except those listed in `unrestored`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", commit_message(self))]
pub struct CommitError {
    /// What was being done (`write`, `delete`, `sync`, ...).
    pub action: String,
    /// The path involved, as written in the patch.
    pub path: String,
    /// The operating system's reason.
    pub reason: String,
    /// Paths that could not be put back, with why.
    pub unrestored: Vec<String>,
}

fn commit_message(e: &CommitError) -> String {
    let mut s = format!("Failed to {} {}: {}.", e.action, e.path, e.reason);
    if e.unrestored.is_empty() {
        s += " No file was changed: everything written before the failure was undone.";
    } else {
        s += " The patch is PARTLY APPLIED: these files could not be restored: ";
        s += &e.unrestored.join("; ");
    }
    s
}
