//! Planning: every hunk of every file is located and every new content computed, in memory,
//! before anything is written. Hunks apply in order to a view of the tree that already holds
//! the earlier hunks' results (so `Add` then `Update` of one file works, as in Codex).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{ApplyError, ChunkPos, NotFound, Region};
use crate::fs::{FileKind, FileSystem};
use crate::parser::{Chunk, ChunkLine, Hunk, Patch};
use crate::seek::{closest, seek};
use crate::text::{Piece, TextFile};

/// One change to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    /// Write `contents` to `path`, replacing the file there if any (`original`).
    Write {
        /// Where.
        path: PathBuf,
        /// The path as written in the patch.
        display: String,
        /// The new bytes.
        contents: Vec<u8>,
        /// The bytes of the file at `path` now, if there is one (to put back if a later write
        /// fails).
        original: Option<Vec<u8>>,
        /// The file whose permissions the new file gets, when not the one it replaces: the
        /// source of a move (a moved file keeps its own mode, executable or private).
        mode_from: Option<PathBuf>,
    },
    /// Remove the file at `path`.
    Delete {
        /// Where.
        path: PathBuf,
        /// The path as written in the patch.
        display: String,
    },
}

impl FileOp {
    /// The path changed.
    pub fn path(&self) -> &Path {
        match self {
            FileOp::Write { path, .. } | FileOp::Delete { path, .. } => path,
        }
    }

    /// The path as written in the patch.
    pub fn display(&self) -> &str {
        match self {
            FileOp::Write { display, .. } | FileOp::Delete { display, .. } => display,
        }
    }
}

/// What happened to a file, in Codex's letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// `A`: created (or replaced by an `Add File`).
    Added,
    /// `M`: changed in place, or moved.
    Modified,
    /// `D`: removed.
    Deleted,
}

impl Action {
    /// Codex's letter.
    pub fn letter(self) -> char {
        match self {
            Action::Added => 'A',
            Action::Modified => 'M',
            Action::Deleted => 'D',
        }
    }
}

/// One line of the result: a file, what happened to it, and how many lines came and went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSummary {
    /// What happened.
    pub action: Action,
    /// The path as written in the patch (the destination of a move).
    pub path: String,
    /// The source of a move.
    pub moved_from: Option<String>,
    /// `+` lines (all lines of an added file).
    pub added: usize,
    /// `-` lines (all lines of a deleted file).
    pub removed: usize,
    /// An `Add File` or a move replaced a file that was there.
    pub replaced_existing: bool,
}

impl fmt::Display for FileSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} (", self.action.letter(), self.path)?;
        if let Some(from) = &self.moved_from {
            write!(f, "moved from {from}, ")?;
        }
        match self.action {
            Action::Added => write!(f, "+{}", self.added)?,
            Action::Deleted => write!(f, "-{}", self.removed)?,
            Action::Modified => write!(f, "+{} -{}", self.added, self.removed)?,
        }
        if self.replaced_existing {
            write!(f, ", replaced the existing file")?;
        }
        write!(f, ")")
    }
}

/// The outcome of a patch: one line per file, grouped A, M, D as Codex does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The files, grouped by action, each group in patch order.
    pub files: Vec<FileSummary>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Success. Updated the following files:")?;
        for file in &self.files {
            write!(f, "\n{file}")?;
        }
        Ok(())
    }
}

/// Everything a patch will do, computed without writing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The writes and deletions, one per path, in the order the patch first touches them.
    pub ops: Vec<FileOp>,
    /// The result to report once the ops are written.
    pub summary: Summary,
}

/// The state of one path while planning.
enum State {
    /// Nothing there (or removed by an earlier hunk).
    Absent,
    /// What is on disk, not yet read.
    Disk,
    /// New content from an earlier hunk.
    New(Vec<u8>),
}

/// What the last section of the patch that named a path did to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Touch {
    Added,
    Updated,
    Deleted,
    MovedAway,
    MovedIn,
}

/// A later section touching a path an earlier one touched, in a way whose outcome the summary
/// cannot show (content lost without a line saying so): why, for the model.
/// How a patch that names one file in several sections is told to send it instead.
pub const TWICE: &str = "Send one section per file: move each file straight to its final path, and to swap files or rename in a chain use bash.";

struct Slot {
    path: PathBuf,
    /// What the last section naming this path did to it.
    last: Option<Touch>,
    display: String,
    original: FileKind,
    state: State,
    added: usize,
    removed: usize,
    by_add: bool,
    moved_from: Option<String>,
    moved_away: bool,
    /// The file on disk whose mode the content here carries (the source of a move).
    mode_from: Option<PathBuf>,
    /// The file's bytes on disk, once read.
    disk: Option<Vec<u8>>,
}

struct Planner<'f, F: FileSystem + ?Sized> {
    fs: &'f F,
    slots: Vec<Slot>,
    index: HashMap<PathBuf, usize>,
}

/// Locates every hunk and computes every new file, reading through `fs`. `resolve` maps a path
/// as written in the patch to the path to use (and may refuse it).
pub fn plan<F, R>(patch: &Patch<'_>, fs: &F, resolve: R) -> Result<Plan, ApplyError>
where
    F: FileSystem + ?Sized,
    R: Fn(&str) -> Result<PathBuf, String>,
{
    if patch.hunks.is_empty() {
        return Err(ApplyError::Empty);
    }
    let mut planner = Planner { fs, slots: Vec::new(), index: HashMap::new() };
    let resolve = |p: &str| resolve(p).map_err(|message| ApplyError::Path { path: p.to_string(), message });
    for hunk in &patch.hunks {
        match hunk {
            Hunk::Add { path, lines } => {
                let slot = planner.slot(resolve(path)?, path)?;
                // Two whole contents for one file: which one the model meant is anyone's guess.
                if slot.by_add {
                    return Err(ApplyError::Write {
                        path: path.to_string(),
                        reason: "this patch adds it twice; put all its lines in one `*** Add File` section".into(),
                    });
                }
                // After a Delete File the path is free; after anything else an Add File would
                // throw away what the earlier section did.
                if slot.last.is_some_and(|t| t != Touch::Deleted) {
                    return Err(ApplyError::Write {
                        path: path.to_string(),
                        reason: format!(
                            "an earlier section of this patch already changes or moves it, and this `*** Add File` would replace that. {TWICE}"
                        ),
                    });
                }
                slot.last = Some(Touch::Added);
                if matches!(slot.original, FileKind::Dir | FileKind::Other) && !matches!(slot.state, State::New(_)) {
                    return Err(ApplyError::Write { path: path.to_string(), reason: reason_for_kind(slot.original) });
                }
                let mut contents = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
                for line in lines {
                    contents.extend_from_slice(line.as_bytes());
                    contents.push(b'\n');
                }
                slot.state = State::New(contents);
                slot.display = path.to_string();
                slot.added += lines.len();
                slot.by_add = true;
                slot.moved_away = false;
                slot.mode_from = None;
            }
            Hunk::Delete { path } => {
                let fs = planner.fs;
                let slot = planner.slot(resolve(path)?, path)?;
                let lines = match &slot.state {
                    State::Absent => {
                        return Err(ApplyError::Delete {
                            path: path.to_string(),
                            reason: reason_for_kind(FileKind::Missing),
                        });
                    }
                    State::Disk if slot.original != FileKind::File => {
                        return Err(ApplyError::Delete {
                            path: path.to_string(),
                            reason: reason_for_kind(slot.original),
                        });
                    }
                    State::Disk => {
                        if slot.disk.is_none() {
                            slot.disk = fs.read(&slot.path).ok();
                        }
                        slot.disk.as_deref().map_or(0, count_lines)
                    }
                    State::New(data) => count_lines(data),
                };
                // Content this patch put there (an Add File, a move onto it) deleted again: the
                // summary would show neither.
                if matches!(slot.last, Some(Touch::Added | Touch::MovedIn)) {
                    return Err(ApplyError::Delete {
                        path: path.to_string(),
                        reason: format!(
                            "an earlier section of this patch adds it or moves a file onto it, and deleting it here would lose that content. {TWICE}"
                        ),
                    });
                }
                slot.last = Some(Touch::Deleted);
                slot.state = State::Absent;
                slot.removed += lines;
                slot.display = path.to_string();
            }
            Hunk::Update { path, move_to, chunks } => planner.update(path, *move_to, chunks, &resolve)?,
        }
    }
    planner.finish()
}

fn count_lines(data: &[u8]) -> usize {
    let newlines = data.iter().filter(|&&b| b == b'\n').count();
    newlines + usize::from(data.last().is_some_and(|&b| b != b'\n'))
}

fn reason_for_kind(kind: FileKind) -> String {
    match kind {
        FileKind::Missing => "No such file or directory".into(),
        FileKind::Dir => "path is a directory".into(),
        FileKind::Other => "path is not a regular file".into(),
        FileKind::File => "path is a file".into(),
    }
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory".into(),
        std::io::ErrorKind::IsADirectory => "path is a directory".into(),
        _ => e.to_string(),
    }
}

impl<F: FileSystem + ?Sized> Planner<'_, F> {
    fn slot(&mut self, path: PathBuf, display: &str) -> Result<&mut Slot, ApplyError> {
        let i = match self.index.get(&path) {
            Some(&i) => i,
            None => {
                let original = self
                    .fs
                    .kind(&path)
                    .map_err(|e| ApplyError::Read { path: display.to_string(), reason: io_reason(&e) })?;
                let state = if original == FileKind::Missing { State::Absent } else { State::Disk };
                self.slots.push(Slot {
                    path: path.clone(),
                    last: None,
                    display: display.to_string(),
                    original,
                    state,
                    added: 0,
                    removed: 0,
                    by_add: false,
                    moved_from: None,
                    moved_away: false,
                    mode_from: None,
                    disk: None,
                });
                self.index.insert(path, self.slots.len() - 1);
                self.slots.len() - 1
            }
        };
        Ok(&mut self.slots[i])
    }

    fn update(
        &mut self,
        path: &str,
        move_to: Option<&str>,
        chunks: &[Chunk<'_>],
        resolve: &dyn Fn(&str) -> Result<PathBuf, ApplyError>,
    ) -> Result<(), ApplyError> {
        let fs = self.fs;
        let source = resolve(path)?;
        let slot = self.slot(source.clone(), path)?;
        let read_error = |reason: String| ApplyError::Read { path: path.to_string(), reason };
        let (current, from_disk): (Vec<u8>, bool) = match &slot.state {
            State::Absent => return Err(read_error(reason_for_kind(FileKind::Missing))),
            State::Disk if slot.original != FileKind::File => return Err(read_error(reason_for_kind(slot.original))),
            State::Disk => match slot.disk.take() {
                Some(bytes) => (bytes, true),
                None => (fs.read(&slot.path).map_err(|e| read_error(io_reason(&e)))?, true),
            },
            // A file an earlier hunk wrote: rarely large, so a copy is fine.
            State::New(data) => (data.clone(), false),
        };
        let new = if chunks.is_empty() { None } else { Some(apply_chunks(&current, chunks, path)?) };
        let (added, removed) = chunks.iter().fold((0, 0), |(a, r), c| (a + c.added, r + c.removed));
        let dest = match move_to {
            Some(dest_display) => Some((resolve(dest_display)?, dest_display)).filter(|(p, _)| *p != source),
            None => None,
        };
        let Some((dest, dest_display)) = dest else {
            if slot.last.is_none() {
                slot.last = Some(Touch::Updated);
            }
            if let Some(new) = new {
                slot.state = State::New(new);
            }
            if from_disk {
                slot.disk = Some(current);
            }
            slot.added += added;
            slot.removed += removed;
            return Ok(());
        };
        // A file this patch added or moved here, moved on: a chain (a→b, b→c) or a swap whose
        // summary would hide the file it replaced.
        if matches!(slot.last, Some(Touch::Added | Touch::MovedIn)) {
            return Err(ApplyError::Write {
                path: dest_display.to_string(),
                reason: format!(
                    "`{path}`, moved here, got its content from an earlier section of this patch (an Add File or a move onto it), so what happens to each file would not be clear. {TWICE}"
                ),
            });
        }
        if let Some(&i) = self.index.get(&dest)
            && self.slots[i].last.is_some()
        {
            return Err(ApplyError::Write {
                path: dest_display.to_string(),
                reason: format!(
                    "an earlier section of this patch already changes, moves or deletes it, and moving `{path}` onto it would replace that. {TWICE}"
                ),
            });
        }
        let slot = self.slot(source.clone(), path)?;
        slot.last = Some(Touch::MovedAway);
        let contents = match new {
            Some(new) => new,
            None => current.clone(),
        };
        if from_disk {
            slot.disk = Some(current);
        }
        slot.state = State::Absent;
        slot.moved_away = true;
        let origin = slot.moved_from.take().unwrap_or_else(|| slot.display.clone());
        // The mode of the file on disk the content came from, through any earlier moves.
        let mode_from = slot.mode_from.take().or_else(|| (slot.original == FileKind::File).then(|| slot.path.clone()));
        let (carried_added, carried_removed) = (slot.added + added, slot.removed + removed);
        slot.added = 0;
        slot.removed = 0;
        let target = self.slot(dest, dest_display)?;
        if matches!(target.original, FileKind::Dir | FileKind::Other) && !matches!(target.state, State::New(_)) {
            return Err(ApplyError::Write { path: dest_display.to_string(), reason: reason_for_kind(target.original) });
        }
        target.state = State::New(contents);
        target.last = Some(Touch::MovedIn);
        target.display = dest_display.to_string();
        target.moved_from = Some(origin);
        target.mode_from = mode_from;
        target.moved_away = false;
        target.added += carried_added;
        target.removed += carried_removed;
        Ok(())
    }

    fn finish(self) -> Result<Plan, ApplyError> {
        let mut ops = Vec::new();
        let mut files = Vec::new();
        for slot in self.slots {
            let existed = slot.original == FileKind::File;
            let mut added = slot.added;
            let action = match (&slot.state, existed) {
                (State::Absent, true) => {
                    ops.push(FileOp::Delete { path: slot.path, display: slot.display.clone() });
                    (!slot.moved_away).then_some(Action::Deleted)
                }
                (State::Absent, false) => None,
                (State::Disk, _) => Some(Action::Modified),
                (State::New(_), _) => {
                    let action = if slot.moved_from.is_some() {
                        Action::Modified
                    } else if !existed || slot.by_add {
                        Action::Added
                    } else {
                        Action::Modified
                    };
                    let original = match (existed, slot.disk) {
                        (false, _) => None,
                        (true, Some(bytes)) => Some(bytes),
                        // Replaced without being read (Add File or a move onto it): keep its bytes
                        // to put back if a later write fails.
                        (true, None) => Some(self.fs.read(&slot.path).map_err(|e| ApplyError::Write {
                            path: slot.display.clone(),
                            reason: format!("cannot read the file it replaces: {}", io_reason(&e)),
                        })?),
                    };
                    if let State::New(contents) = slot.state {
                        if action == Action::Added {
                            added = count_lines(&contents);
                        }
                        ops.push(FileOp::Write {
                            path: slot.path,
                            display: slot.display.clone(),
                            contents,
                            original,
                            mode_from: slot.mode_from,
                        });
                    }
                    Some(action)
                }
            };
            if let Some(action) = action {
                files.push(FileSummary {
                    action,
                    replaced_existing: existed && (slot.by_add || slot.moved_from.is_some()),
                    path: slot.display,
                    moved_from: slot.moved_from,
                    added,
                    removed: slot.removed,
                });
            }
        }
        files.sort_by_key(|f| f.action);
        Ok(Plan { ops, summary: Summary { files } })
    }
}

/// Applies `chunks` to the bytes of one file and returns the new bytes.
fn apply_chunks(current: &[u8], chunks: &[Chunk<'_>], path: &str) -> Result<Vec<u8>, ApplyError> {
    let file = TextFile::parse(current);
    let lines = file.lines();
    // (where in the file, how many file lines it replaces, the chunk lines that replace them)
    let mut replacements: Vec<(usize, usize, &[ChunkLine<'_>])> = Vec::with_capacity(chunks.len());
    let mut index = 0;
    for (k, chunk) in chunks.iter().enumerate() {
        let pos = |index: usize| ChunkPos {
            path: path.to_string(),
            chunk: k + 1,
            chunks: chunks.len(),
            searched_from: index + 1,
        };
        for context in &chunk.contexts {
            match seek(lines, &[context], index, false) {
                Some((at, _)) => index = at + 1,
                None => {
                    return Err(ApplyError::ContextNotFound(Box::new(NotFound {
                        pos: pos(index),
                        lines: vec![context.to_string()],
                        earlier_at: None,
                        closest: region(lines, index, &[context]),
                    })));
                }
            }
        }
        if chunk.old_lines.is_empty() {
            let at = if chunk.contexts.is_empty() || chunk.end_of_file {
                if lines.last().is_some_and(|l| l.is_empty()) { lines.len() - 1 } else { lines.len() }
            } else {
                index
            };
            replacements.push((at, 0, &chunk.lines));
            continue;
        }
        let mut old: &[&str] = &chunk.old_lines;
        let mut body: &[ChunkLine<'_>] = &chunk.lines;
        let mut found = seek(lines, old, index, chunk.end_of_file);
        // A blank line that only separated this chunk from the next hunk is not part of the file.
        while found.is_none() && body.last() == Some(&ChunkLine::Context("")) {
            old = &old[..old.len() - 1];
            body = &body[..body.len() - 1];
            found = seek(lines, old, index, chunk.end_of_file);
        }
        match found {
            Some((at, _)) => {
                replacements.push((at, old.len(), body));
                index = at + old.len();
            }
            None => {
                let old = &chunk.old_lines;
                let earlier_at = seek(lines, old, 0, false).map(|(at, _)| at + 1).filter(|&at| at <= index);
                return Err(ApplyError::LinesNotFound(Box::new(NotFound {
                    pos: pos(index),
                    lines: old.iter().map(std::string::ToString::to_string).collect(),
                    earlier_at,
                    closest: region(lines, 0, old),
                })));
            }
        }
    }
    replacements.sort_by_key(|r| r.0);
    let mut pieces = Vec::with_capacity(replacements.len() * 8 + 1);
    let mut cursor = 0;
    for (start, len, body) in replacements {
        if start > cursor {
            pieces.push(Piece::Keep(cursor, start));
        }
        // Context lines keep the file's own text (a fuzzy match must not rewrite them).
        let mut at = start;
        for line in body {
            match *line {
                ChunkLine::Context(_) if len > 0 => {
                    pieces.push(Piece::Keep(at, at + 1));
                    at += 1;
                }
                ChunkLine::Context(text) | ChunkLine::Added(text) => pieces.push(Piece::New(text)),
                ChunkLine::Removed(_) => at += 1,
            }
        }
        cursor = cursor.max(start + len);
    }
    if cursor < lines.len() {
        pieces.push(Piece::Keep(cursor, lines.len()));
    }
    Ok(file.render(&pieces, current.len()))
}

/// The lines of `lines[from..]` most like `pattern`, for an error message.
fn region<L: AsRef<str>>(lines: &[L], from: usize, pattern: &[&str]) -> Option<Region> {
    let tail = lines.get(from..)?;
    let (at, score) = closest(tail, pattern)?;
    let end = (at + pattern.len()).min(tail.len());
    Some(Region {
        first_line: from + at + 1,
        lines: tail[at..end].iter().map(|l| l.as_ref().to_string()).collect(),
        score,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;
    use crate::parser::parse;

    fn run(fs: &MemFs, text: &str) -> Result<Plan, ApplyError> {
        let patch = parse(text)?;
        plan(&patch, fs, |p| Ok(Path::new("/w").join(p)))
    }

    fn wrap(body: &str) -> String {
        format!("*** Begin Patch\n{body}\n*** End Patch\n")
    }

    fn write_of(plan: &Plan, i: usize) -> String {
        match &plan.ops[i] {
            FileOp::Write { contents, .. } => String::from_utf8(contents.clone()).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn later_hunks_see_earlier_ones() {
        let fs = MemFs::new();
        let plan = run(&fs, &wrap("*** Add File: n.txt\n+a\n*** Update File: n.txt\n@@\n-a\n+b")).unwrap();
        assert_eq!(plan.ops.len(), 1);
        assert_eq!(write_of(&plan, 0), "b\n");
        assert_eq!(plan.summary.to_string(), "Success. Updated the following files:\nA n.txt (+1)");
    }

    #[test]
    fn pure_addition_goes_after_its_context_or_at_the_end() {
        let fs = MemFs::new();
        fs.insert_file("/w/f", "a\nb\nc\n");
        let plan = run(&fs, &wrap("*** Update File: f\n@@ a\n+x\n@@\n+z")).unwrap();
        assert_eq!(write_of(&plan, 0), "a\nx\nb\nc\nz\n");
    }

    #[test]
    fn stacked_contexts_narrow_the_search() {
        let fs = MemFs::new();
        fs.insert_file("/w/f.py", "class A:\n  def f():\n    x=1\nclass B:\n  def f():\n    x=1\n");
        let plan = run(&fs, &wrap("*** Update File: f.py\n@@ class B:\n@@   def f():\n-    x=1\n+    x=2")).unwrap();
        assert_eq!(write_of(&plan, 0), "class A:\n  def f():\n    x=1\nclass B:\n  def f():\n    x=2\n");
    }

    #[test]
    fn missing_lines_report_the_chunk_and_the_closest_region() {
        let fs = MemFs::new();
        fs.insert_file("/w/f.rs", "fn main() {\n    let x = 1;\n    go(x);\n}\n");
        let err =
            run(&fs, &wrap("*** Update File: f.rs\n@@\n-    let x = 2;\n+    let x = 3;\n     go(x);")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Failed to find expected lines in f.rs:\n    let x = 2;\n    go(x);\n\nThese are the context and '-' lines of \
             chunk 1 of 1 for f.rs. The most similar lines of the file are:\n     2\t    let x = 1;\n     3\t    go(x);"
        );
    }

    #[test]
    fn chunks_out_of_order_are_named_as_such() {
        let fs = MemFs::new();
        fs.insert_file("/w/f", "a\nb\nc\n");
        let err = run(&fs, &wrap("*** Update File: f\n@@\n-c\n+C\n@@\n-a\n+A")).unwrap_err().to_string();
        assert!(err.contains("They occur at line 1, before the end of the previous chunk (line 4)"), "{err}");
    }

    #[test]
    fn move_reports_the_destination_and_removes_the_source() {
        let fs = MemFs::new();
        fs.insert_file("/w/a", "x\n");
        let plan = run(&fs, &wrap("*** Update File: a\n*** Move to: b\n@@\n-x\n+y")).unwrap();
        assert_eq!(plan.ops[0], FileOp::Delete { path: "/w/a".into(), display: "a".into() });
        assert_eq!(write_of(&plan, 1), "y\n");
        assert_eq!(plan.summary.to_string(), "Success. Updated the following files:\nM b (moved from a, +1 -1)");
    }

    #[test]
    fn delete_and_update_errors_use_codex_wording() {
        let fs = MemFs::new();
        fs.insert_dir("/w/dir");
        let e = run(&fs, &wrap("*** Delete File: dir")).unwrap_err();
        assert_eq!(e.to_string(), "Failed to delete file dir: path is a directory");
        let e = run(&fs, &wrap("*** Delete File: nope")).unwrap_err();
        assert_eq!(e.to_string(), "Failed to delete file nope: No such file or directory");
        let e = run(&fs, &wrap("*** Update File: nope\n@@\n-a")).unwrap_err();
        assert_eq!(e.to_string(), "Failed to read file to update nope: No such file or directory");
        assert_eq!(run(&fs, &wrap("")).unwrap_err(), ApplyError::Empty);
    }
}
