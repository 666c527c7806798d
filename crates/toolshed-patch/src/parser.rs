//! Parsing the patch text into [`Patch`]: Codex's grammar with Codex's leniencies, plus a few
//! more for what models are seen to write.
//!
//! Accepted on top of the Lark grammar:
//! - whitespace around the whole input and around the `*** Begin Patch` / `*** End Patch`
//!   markers and hunk headers; `\r\n` line ends;
//! - a heredoc wrapper (`<<EOF` … `EOF`, optionally quoted, optionally after `cat ` or
//!   `apply_patch `) and a Markdown code fence around the patch;
//! - an `Add File` with no lines (an empty file), and blank lines inside an `Add File` that are
//!   followed by more `+` lines (taken as empty lines of the file);
//! - blank lines between hunks and between chunks;
//! - a first chunk without `@@`; a bare blank line inside a chunk is an empty context line;
//! - several stacked `@@ context` headers (each one is looked for after the previous one),
//!   `@@` followed only by whitespace, and unified-diff headers `@@ -1,3 +1,4 @@ fn x()`;
//! - an `Update File` with `Move to` and no chunks (a plain rename).

use std::fmt;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";
const ENVIRONMENT: &str = "*** Environment ID:";

/// A parsed patch. Paths and lines borrow from the patch text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch<'a> {
    /// The `*** Environment ID:` line, if the patch names an environment.
    pub environment_id: Option<&'a str>,
    /// The file operations, in the order they appear.
    pub hunks: Vec<Hunk<'a>>,
}

/// One file operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hunk<'a> {
    /// `*** Add File:` — create (or overwrite) a file with these contents.
    Add {
        /// The path as written in the patch.
        path: &'a str,
        /// The new file's lines, without their `+`.
        lines: Vec<&'a str>,
    },
    /// `*** Delete File:` — remove a file.
    Delete {
        /// The path as written in the patch.
        path: &'a str,
    },
    /// `*** Update File:` — change a file in place, optionally moving it.
    Update {
        /// The path as written in the patch.
        path: &'a str,
        /// The `*** Move to:` destination.
        move_to: Option<&'a str>,
        /// The `@@` chunks, in order.
        chunks: Vec<Chunk<'a>>,
    },
}

impl<'a> Hunk<'a> {
    /// The path the hunk names first (the source of a move).
    pub fn path(&self) -> &'a str {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } | Hunk::Update { path, .. } => path,
        }
    }
}

/// One `@@` chunk of an update: where it is, what goes out, what comes in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk<'a> {
    /// The `@@ context` lines, outermost first; each is found after the previous one and the
    /// chunk's lines are looked for after the last.
    pub contexts: Vec<&'a str>,
    /// Context and `-` lines: what the file holds now.
    pub old_lines: Vec<&'a str>,
    /// Context and `+` lines: what it holds afterwards.
    pub new_lines: Vec<&'a str>,
    /// The chunk's lines in order, each marked context, removed or added.
    pub lines: Vec<ChunkLine<'a>>,
    /// Set by `*** End of File`: the old lines end the file.
    pub end_of_file: bool,
    /// Number of `+` lines.
    pub added: usize,
    /// Number of `-` lines.
    pub removed: usize,
}

/// One line of a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkLine<'a> {
    /// ` line` (or a bare empty line): stays as the file has it.
    Context(&'a str),
    /// `-line`: goes.
    Removed(&'a str),
    /// `+line`: comes.
    Added(&'a str),
}

/// Why a patch text could not be parsed. Displays as Codex does.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The patch as a whole is malformed.
    #[error("invalid patch: {0}")]
    InvalidPatch(String),
    /// One hunk is malformed; `line` is 1-based, counting `*** Begin Patch` as line 1.
    #[error("invalid hunk at line {line}, {message}")]
    InvalidHunk {
        /// The message.
        message: String,
        /// The line the problem was found on.
        line: usize,
    },
}

impl ParseError {
    /// The message without the `invalid patch:` / `invalid hunk at line N,` wrapper.
    pub fn message(&self) -> &str {
        match self {
            ParseError::InvalidPatch(m) | ParseError::InvalidHunk { message: m, .. } => m,
        }
    }

    /// The line the problem was found on, for hunk errors.
    pub fn line(&self) -> Option<usize> {
        match self {
            ParseError::InvalidPatch(_) => None,
            ParseError::InvalidHunk { line, .. } => Some(*line),
        }
    }

    /// The wording of Codex's command-line tool: `Invalid patch: …` / `Invalid patch hunk on line N: …`.
    pub fn cli_display(&self) -> impl fmt::Display + '_ {
        struct Cli<'e>(&'e ParseError);
        impl fmt::Display for Cli<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.0 {
                    ParseError::InvalidPatch(m) => write!(f, "Invalid patch: {m}"),
                    ParseError::InvalidHunk { message, line } => {
                        write!(f, "Invalid patch hunk on line {line}: {message}")
                    }
                }
            }
        }
        Cli(self)
    }
}

fn hunk_error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError::InvalidHunk { message: message.into(), line }
}

/// Parses a patch leniently (see the module docs for what is accepted).
///
/// ```
/// let patch = toolshed_patch::parse("*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n").unwrap();
/// assert_eq!(patch.hunks[0].path(), "a.txt");
/// ```
pub fn parse(text: &str) -> Result<Patch<'_>, ParseError> {
    let text = text.trim();
    let mut lines: Vec<&str> = Vec::with_capacity(memchr::memchr_iter(b'\n', text.as_bytes()).count() + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len())) {
        // '\n' is ASCII, so `start..end` always falls on character boundaries.
        let line = text.get(start..end).unwrap_or_default();
        lines.push(line.strip_suffix('\r').unwrap_or(line));
        start = end + 1;
    }
    let lines = unwrap_wrappers(&lines);
    let first = lines.first().map_or("", |l| l.trim());
    if first != BEGIN {
        return Err(ParseError::InvalidPatch("The first line of the patch must be '*** Begin Patch'".into()));
    }
    if lines.len() < 2 || lines[lines.len() - 1].trim() != END {
        return Err(ParseError::InvalidPatch("The last line of the patch must be '*** End Patch'".into()));
    }
    Parser { lines: &lines[..lines.len() - 1], pos: 1 }.patch()
}

/// Strips a heredoc wrapper or a Markdown code fence around the patch.
fn unwrap_wrappers<'l, 'a>(lines: &'l [&'a str]) -> &'l [&'a str] {
    if lines.len() >= 3 {
        let first = lines[0].trim();
        let last = lines[lines.len() - 1].trim();
        if let Some(word) = heredoc_word(first)
            && (last == word || (word == "EOF" && last.ends_with("EOF") && lines.len() >= 4))
        {
            return &lines[1..lines.len() - 1];
        }
        if first.starts_with("```") && last == "```" {
            return &lines[1..lines.len() - 1];
        }
    }
    lines
}

/// The delimiter of a heredoc opening line: `<<EOF`, `<<'EOF'`, `<<"EOF"`, `<<-EOF`, optionally
/// after `cat`, `apply_patch` or `applypatch`.
fn heredoc_word(line: &str) -> Option<&str> {
    let rest = ["cat", "apply_patch", "applypatch"]
        .iter()
        .find_map(|cmd| line.strip_prefix(cmd).filter(|r| r.starts_with(char::is_whitespace)))
        .map_or(line, str::trim_start);
    let rest = rest.strip_prefix("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    let word = match rest.chars().next()? {
        q @ ('\'' | '"') => rest[1..].strip_suffix(q)?,
        _ => rest,
    };
    (!word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(word)
}

/// Parses the lines between `*** Begin Patch` (index 0) and `*** End Patch` (excluded).
struct Parser<'l, 'a> {
    lines: &'l [&'a str],
    pos: usize,
}

/// The 1-based patch line number of index `i`.
fn line_no(i: usize) -> usize {
    i + 1
}

/// A line that ends the lines of an update: a hunk header or anything else starting `***`
/// in the first column (Codex's rule; an indented `***` line is context).
fn ends_update(line: &str) -> bool {
    line.starts_with("***") && line.trim_end() != END_OF_FILE
}

fn header_path<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    line.strip_prefix(marker).map(str::trim)
}

impl<'l, 'a> Parser<'l, 'a> {
    fn patch(mut self) -> Result<Patch<'a>, ParseError> {
        let mut environment_id = None;
        if let Some(id) = self.lines.get(1).and_then(|l| header_path(l.trim(), ENVIRONMENT)) {
            if id.is_empty() {
                return Err(ParseError::InvalidPatch("apply_patch environment_id cannot be empty".into()));
            }
            environment_id = Some(id);
            self.pos = 2;
        }
        let mut hunks = Vec::new();
        while self.pos < self.lines.len() {
            let raw = self.lines[self.pos];
            let line = raw.trim();
            if line.is_empty() {
                self.pos += 1;
                continue;
            }
            if line.starts_with(ENVIRONMENT) {
                let message = if environment_id.is_some() {
                    "apply_patch environment_id cannot be specified more than once"
                } else {
                    "'*** Environment ID: {id}' may only come directly after '*** Begin Patch'"
                };
                return Err(ParseError::InvalidPatch(message.into()));
            }
            let header = self.pos;
            if let Some(path) = header_path(line, ADD) {
                let path = self.require_path(path, line, "*** Add File: {path}")?;
                hunks.push(self.add(path));
            } else if let Some(path) = header_path(line, DELETE) {
                let path = self.require_path(path, line, "*** Delete File: {path}")?;
                self.pos += 1;
                hunks.push(Hunk::Delete { path });
            } else if let Some(path) = header_path(line, UPDATE) {
                let path = self.require_path(path, line, "*** Update File: {path}")?;
                hunks.push(self.update(path, header)?);
            } else {
                return Err(hunk_error(
                    line_no(self.pos),
                    format!(
                        "'{line}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', \
                         '*** Delete File: {{path}}', '*** Update File: {{path}}'"
                    ),
                ));
            }
        }
        Ok(Patch { environment_id, hunks })
    }

    fn require_path(&self, path: &'a str, line: &str, form: &str) -> Result<&'a str, ParseError> {
        if path.is_empty() {
            return Err(hunk_error(
                line_no(self.pos),
                format!("'{line}' names no file. Write the path after the colon: '{form}'"),
            ));
        }
        Ok(path)
    }

    /// `+` lines after an Add header. Blank lines count as empty lines of the file only when
    /// more `+` lines follow; otherwise they separate this hunk from the next.
    fn add(&mut self, path: &'a str) -> Hunk<'a> {
        self.pos += 1;
        let mut lines = Vec::new();
        let mut blanks = 0;
        while let Some(line) = self.lines.get(self.pos) {
            if let Some(text) = line.strip_prefix('+') {
                lines.extend(std::iter::repeat_n("", blanks));
                blanks = 0;
                lines.push(text);
            } else if line.trim().is_empty() {
                blanks += 1;
            } else {
                break;
            }
            self.pos += 1;
        }
        self.pos -= blanks;
        Hunk::Add { path, lines }
    }

    fn update(&mut self, path: &'a str, header: usize) -> Result<Hunk<'a>, ParseError> {
        self.pos += 1;
        let mut move_to = None;
        if let Some(dest) = self.lines.get(self.pos).and_then(|l| header_path(l.trim(), MOVE_TO)) {
            move_to = Some(self.require_path(dest, self.lines[self.pos].trim(), "*** Move to: {path}")?);
            self.pos += 1;
        }
        let mut chunks = Vec::new();
        while let Some(line) = self.lines.get(self.pos) {
            if line.trim().is_empty() {
                self.pos += 1;
                continue;
            }
            if ends_update(line) {
                break;
            }
            chunks.push(self.chunk(chunks.is_empty())?);
        }
        if chunks.is_empty() && move_to.is_none() {
            return Err(hunk_error(line_no(header), format!("Update file hunk for path '{path}' is empty")));
        }
        Ok(Hunk::Update { path, move_to, chunks })
    }

    fn chunk(&mut self, first: bool) -> Result<Chunk<'a>, ParseError> {
        let mut chunk = Chunk::default();
        let mut has_header = false;
        while let Some(header) = self.lines.get(self.pos).and_then(|l| context_header(l)) {
            has_header = true;
            chunk.contexts.extend(header);
            self.pos += 1;
        }
        if !has_header && !first {
            return Err(hunk_error(
                line_no(self.pos),
                format!("Expected update hunk to start with a @@ context marker, got: '{}'", self.lines[self.pos]),
            ));
        }
        // First find where the chunk ends, so its vectors are allocated once.
        let start = self.pos;
        let mut end = start;
        let (mut context, mut added, mut removed) = (0, 0, 0);
        let mut end_of_file = false;
        while let Some(&line) = self.lines.get(end) {
            if line.starts_with("***") && line.trim_end() == END_OF_FILE {
                end_of_file = true;
                break;
            }
            match line.as_bytes().first() {
                None | Some(b' ') => context += 1,
                Some(b'+') => added += 1,
                Some(b'-') => removed += 1,
                Some(_) => break,
            }
            end += 1;
        }
        if end == start {
            let empty = || hunk_error(line_no(start), "Update hunk does not contain any lines");
            return Err(match self.lines.get(start) {
                Some(line)
                    if !end_of_file && !(has_header && (ends_update(line) || context_header(line).is_some())) =>
                {
                    hunk_error(
                        line_no(start),
                        format!(
                            "Unexpected line found in update hunk: '{line}'. Every line should start with ' ' \
                             (context line), '+' (added line), or '-' (removed line)"
                        ),
                    )
                }
                _ => empty(),
            });
        }
        chunk.old_lines.reserve_exact(context + removed);
        chunk.new_lines.reserve_exact(context + added);
        chunk.lines.reserve_exact(end - start);
        for &line in &self.lines[start..end] {
            match line.as_bytes().first() {
                Some(b'+') => {
                    chunk.new_lines.push(&line[1..]);
                    chunk.lines.push(ChunkLine::Added(&line[1..]));
                }
                Some(b'-') => {
                    chunk.old_lines.push(&line[1..]);
                    chunk.lines.push(ChunkLine::Removed(&line[1..]));
                }
                _ => {
                    let text = line.get(1..).unwrap_or("");
                    chunk.old_lines.push(text);
                    chunk.new_lines.push(text);
                    chunk.lines.push(ChunkLine::Context(text));
                }
            }
        }
        chunk.added = added;
        chunk.removed = removed;
        chunk.end_of_file = end_of_file;
        self.pos = end + usize::from(end_of_file);
        Ok(chunk)
    }
}

/// Reads a chunk header: `Some(None)` for a bare `@@` (or a unified-diff range without a
/// section), `Some(Some(context))` for `@@ context`, `None` if the line is no header.
fn context_header(line: &str) -> Option<Option<&str>> {
    let rest = line.strip_prefix("@@")?;
    if rest.trim().is_empty() {
        return Some(None);
    }
    let rest = rest.strip_prefix(' ')?;
    if let Some(section) = unified_range_section(rest) {
        return Some((!section.trim().is_empty()).then_some(section.trim_start()));
    }
    Some(Some(rest))
}

/// For `-1,3 +1,4 @@ section`, the section after the closing `@@`.
fn unified_range_section(rest: &str) -> Option<&str> {
    let (ranges, section) = rest.split_once("@@")?;
    let mut parts = ranges.split_whitespace();
    let is_range = |p: Option<&str>, sign: char| {
        p.and_then(|p| p.strip_prefix(sign)).is_some_and(|r| {
            let mut nums = r.split(',');
            let ok = |n: Option<&str>| n.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            ok(nums.next()) && nums.next().is_none_or(|n| ok(Some(n))) && nums.next().is_none()
        })
    };
    (is_range(parts.next(), '-') && is_range(parts.next(), '+') && parts.next().is_none()).then_some(section)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Patch<'_> {
        parse(text).unwrap()
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn parses_every_hunk_kind() {
        let patch = p("*** Begin Patch\n*** Add File: a.txt\n+x\n+\n*** Delete File: b.txt\n*** Update File: c.txt\n\
             *** Move to: d.txt\n@@ fn main\n ctx\n-old\n+new\n*** End of File\n*** End Patch");
        assert_eq!(patch.hunks.len(), 3);
        assert_eq!(patch.hunks[0], Hunk::Add { path: "a.txt", lines: vec!["x", ""] });
        assert_eq!(patch.hunks[1], Hunk::Delete { path: "b.txt" });
        let Hunk::Update { path, move_to, chunks } = &patch.hunks[2] else { panic!() };
        assert_eq!((*path, *move_to), ("c.txt", Some("d.txt")));
        assert_eq!(chunks[0].contexts, ["fn main"]);
        assert_eq!(chunks[0].old_lines, ["ctx", "old"]);
        assert_eq!(chunks[0].new_lines, ["ctx", "new"]);
        assert!(chunks[0].end_of_file);
        assert_eq!((chunks[0].added, chunks[0].removed), (1, 1));
    }

    #[test]
    fn accepts_heredoc_fence_crlf_and_padded_markers() {
        for text in [
            "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
            "<<EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF",
            "apply_patch <<\"PATCH\"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nPATCH",
            "```\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n```",
            "  *** Begin Patch \r\n  *** Delete File: a\r\n *** End Patch\r\n",
        ] {
            assert_eq!(p(text).hunks, [Hunk::Delete { path: "a" }], "{text:?}");
        }
    }

    #[test]
    fn stacked_and_unified_headers_become_contexts() {
        let patch = p("*** Begin Patch\n*** Update File: a\n@@ class B\n@@     def f():\n-x\n+y\n\
                       @@ -10,3 +10,4 @@ fn g()\n-p\n@@ -1 +1 @@\n-q\n@@   \n-r\n*** End Patch");
        let Hunk::Update { chunks, .. } = &patch.hunks[0] else { panic!() };
        assert_eq!(chunks[0].contexts, ["class B", "    def f():"]);
        assert_eq!(chunks[1].contexts, ["fn g()"]);
        assert!(chunks[2].contexts.is_empty() && chunks[3].contexts.is_empty());
    }

    #[test]
    fn blank_lines_in_add_count_only_between_plus_lines() {
        let patch = p("*** Begin Patch\n*** Add File: a\n+1\n\n+3\n\n*** Add File: b\n*** End Patch");
        assert_eq!(patch.hunks[0], Hunk::Add { path: "a", lines: vec!["1", "", "3"] });
        assert_eq!(patch.hunks[1], Hunk::Add { path: "b", lines: vec![] });
    }

    #[test]
    fn a_move_without_chunks_is_a_rename() {
        let patch = p("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch");
        assert_eq!(patch.hunks, [Hunk::Update { path: "a", move_to: Some("b"), chunks: vec![] }]);
    }

    #[test]
    fn codex_error_strings() {
        assert_eq!(err("hello"), "invalid patch: The first line of the patch must be '*** Begin Patch'");
        assert_eq!(
            err("*** Begin Patch\n*** Add File: a\n+x"),
            "invalid patch: The last line of the patch must be '*** End Patch'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch"),
            "invalid hunk at line 2, '*** Frobnicate File: foo' is not a valid hunk header. Valid hunk headers: \
             '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: foo.txt\n*** End Patch"),
            "invalid hunk at line 2, Update file hunk for path 'foo.txt' is empty"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\n@@\n*** End Patch"),
            "invalid hunk at line 4, Update hunk does not contain any lines"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\nfoo\n*** End Patch"),
            "invalid hunk at line 3, Unexpected line found in update hunk: 'foo'. Every line should start with ' ' \
             (context line), '+' (added line), or '-' (removed line)"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Update File: a\n-x\nfoo\n*** End Patch"),
            "invalid hunk at line 4, Expected update hunk to start with a @@ context marker, got: 'foo'"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Environment ID:  \n*** End Patch"),
            "invalid patch: apply_patch environment_id cannot be empty"
        );
        assert_eq!(
            err("*** Begin Patch\n*** Environment ID: a\n*** Environment ID: b\n*** End Patch"),
            "invalid patch: apply_patch environment_id cannot be specified more than once"
        );
    }

    #[test]
    fn cli_display_matches_codex_cli() {
        let e = parse("*** Begin Patch\n*** Update File: foo.txt\n*** End Patch").unwrap_err();
        assert_eq!(
            e.cli_display().to_string(),
            "Invalid patch hunk on line 2: Update file hunk for path 'foo.txt' is empty"
        );
    }

    #[test]
    fn indented_star_lines_inside_a_chunk_are_context() {
        let patch = p("*** Begin Patch\n*** Update File: a\n@@\n *** Add File: x\n-y\n*** End Patch");
        let Hunk::Update { chunks, .. } = &patch.hunks[0] else { panic!() };
        assert_eq!(chunks[0].old_lines, ["*** Add File: x", "y"]);
    }

    #[test]
    fn empty_patch_parses_to_no_hunks() {
        assert!(p("*** Begin Patch\n*** End Patch").hunks.is_empty());
    }
}
