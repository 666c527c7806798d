//! Finding `old_string` in a file and splicing in `new_string`, safely.
//!
//! Matchers run from strict to loose and the first that finds anything decides:
//!
//! 1. **exact** — `old_string` as a substring (any position, partial lines included);
//! 2. the same after removing **line-number prefixes** copied from `read` output (`12: ` or
//!    `cat -n`'s `    12<TAB>`), when every line of `old_string` carries one, numbered consecutively;
//! 3. **trailing whitespace** ignored on each line;
//! 4. **indentation**: lines equal apart from leading whitespace, shifted uniformly (including
//!    tabs for spaces);
//! 5. **trimmed lines**: lines equal apart from leading and trailing whitespace; the first line
//!    of `old_string` may also be the tail of a file line (a partial first line);
//! 6. **whitespace**: runs of whitespace inside lines treated as one (within one line for a
//!    one-line `old_string`);
//! 7. **escapes**: `\n`, `\t`, `\"`, `\'`, `` \` ``, `\\`, `\$` in `old_string` (and `new_string`)
//!    read as the characters they stand for;
//! 8. **punctuation**: typographic dashes, quotes and spaces read as their ASCII forms (Codex's table);
//! 9. **block anchor**: first and last lines equal (trimmed), at least half of the lines equal,
//!    the block within a quarter of `old_string`'s length.
//!
//! A loose match never overwrites text the model did not see: lines the model leaves unchanged
//! keep the file's own text, lines it changes or deletes must equal their file counterparts
//! (under the matcher's normalisation), and lines the file has but `old_string` lacks are kept
//! where they sit between unchanged lines; anything else is a conflict and the edit is refused.
//! New lines follow the matched block's indentation when it is a uniform shift of
//! `old_string`'s; otherwise each goes by its own depth: the file's indentation for the lines of
//! `old_string` at that depth, or the level mapping all of them fit (2 spaces a level to 4), and
//! a new line neither places is refused. `new_string` is read the way `old_string` was (its
//! line-number prefixes removed, its escapes read) only when it is certainly written the same
//! way; when unsure the edit is refused. More than one candidate is refused with every candidate's line number; a
//! candidate far larger than `old_string` is refused (OpenCode's rule as the floor).

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use similar::{Algorithm, DiffOp};
// Codex's table of typographic dashes, quotes and spaces and their ASCII forms, kept once.
use toolshed_patch::seek::normalize_char;

/// The matcher that found the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `old_string` verbatim.
    Exact,
    /// Trailing whitespace ignored.
    TrailingWhitespace,
    /// A uniform indentation shift ignored.
    Indentation,
    /// Leading and trailing whitespace ignored, line by line.
    TrimmedLines,
    /// Whitespace runs treated as one.
    Whitespace,
    /// Backslash escapes in `old_string` read as characters.
    Escapes,
    /// Typographic punctuation read as ASCII.
    Punctuation,
    /// First and last lines as anchors, small differences between.
    BlockAnchor,
}

impl Strategy {
    /// How the match was made, for the model.
    pub fn describe(self) -> &'static str {
        match self {
            Strategy::Exact => "exactly",
            Strategy::TrailingWhitespace => "ignoring trailing whitespace",
            Strategy::Indentation => "ignoring a uniform indentation shift",
            Strategy::TrimmedLines => "ignoring leading and trailing whitespace on each line",
            Strategy::Whitespace => "ignoring differences in whitespace",
            Strategy::Escapes => {
                "after reading backslash escapes (\\n, \\t, \\\") in old_string and new_string as characters"
            }
            Strategy::Punctuation => "treating typographic quotes, dashes and spaces as ASCII",
            Strategy::BlockAnchor => "by its first and last lines, with small differences in lines you did not change",
        }
    }

    /// A short name for metadata.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::TrailingWhitespace => "trailing_whitespace",
            Strategy::Indentation => "indentation",
            Strategy::TrimmedLines => "trimmed_lines",
            Strategy::Whitespace => "whitespace",
            Strategy::Escapes => "escapes",
            Strategy::Punctuation => "punctuation",
            Strategy::BlockAnchor => "block_anchor",
        }
    }
}

/// One edit: replace `old` with `new` in `content` (all with `\n` line endings).
#[derive(Clone, Copy, Debug)]
pub struct Edit<'a> {
    /// The file's text.
    pub content: &'a str,
    /// The text to find.
    pub old: &'a str,
    /// What to put in its place.
    pub new: &'a str,
    /// Replace every match instead of requiring exactly one.
    pub replace_all: bool,
    /// The file's lines all end in `\r\n`, made `\n` in `content` (and written back as
    /// `\r\n`): a `\r` left before a `\n` in `content` is the file's text, never a line ending.
    pub crlf: bool,
}

/// A successful edit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The new text of the file.
    pub content: String,
    /// The matcher that found the text.
    pub strategy: Strategy,
    /// Line ranges (1-based, inclusive) of the replaced text in the original file.
    pub lines: Vec<(usize, usize)>,
    /// How `new_string` was re-indented, if it was.
    pub reindent: Option<String>,
    /// Line-number prefixes were removed from `old_string`.
    pub stripped_line_numbers: bool,
    /// They were removed from `new_string` too (every one of its lines had one).
    pub stripped_from_new: bool,
}

/// Why an edit was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Nothing matched; the closest region of the file, if any looked related.
    NotFound {
        /// The most similar region.
        closest: Option<Closest>,
    },
    /// More than one place matched.
    Ambiguous {
        /// The matcher that found them.
        strategy: Strategy,
        /// The first line (1-based) of every candidate.
        lines: Vec<usize>,
    },
    /// The only matches span far more lines than `old_string`.
    TooLarge {
        /// The matcher that found it.
        strategy: Strategy,
        /// The candidate's first and last lines (1-based).
        first: usize,
        /// Last line.
        last: usize,
        /// Lines in `old_string`.
        old_lines: usize,
    },
    /// `new_string` cannot be written as sent, nor read for certain another way (line-number
    /// prefixes on some of its lines, escapes that may or may not be meant); `detail` says why
    /// and what to send instead.
    NewString {
        /// What is wrong and what to send, for the model.
        detail: String,
    },
    /// `old_string` carried read's line numbers, and the text at the line they name is not
    /// `old_string`: it matched elsewhere only.
    Moved {
        /// The line (1-based) the numbers put `old_string`'s first line at.
        line: usize,
        /// The first line (1-based) of every place it matched instead.
        found: Vec<usize>,
    },
    /// A loose match would change or delete lines that differ from what the model sent.
    Conflict {
        /// The matcher that found the block.
        strategy: Strategy,
        /// The block's first line (1-based).
        first: usize,
        /// The block's last line.
        last: usize,
        /// What is wrong, for the model.
        detail: String,
    },
}

/// The region of the file most like `old_string`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closest {
    /// First line (1-based).
    pub first: usize,
    /// Last line (1-based, inclusive).
    pub last: usize,
    /// The region's text.
    pub text: String,
    /// `old_string` as it was compared (line-number prefixes removed).
    pub old: String,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Finds `edit.old` in `edit.content` and replaces it, or says why not.
pub fn apply(edit: &Edit<'_>) -> Result<Applied, Refusal> {
    let applied = find_and_replace(edit)?;
    // read's numbers on every line of new_string, the very lines it replaces: copied from read's
    // output, never the file's text (which old_string, without them, shows). When old_string's
    // lines start with such numbers too, they are the file's text (`2: two` in a numbered list),
    // and new_string's are as well.
    if !applied.stripped_line_numbers
        && let Some(&(first, _)) = applied.lines.first()
        && let Some((number, style)) = numbered_from(edit.new)
        && number == first as u64
        && !edit.old.split('\n').any(|l| line_number_prefix(l).is_some_and(|(_, s, _)| s == style))
    {
        return Err(Refusal::NewString {
            detail: format!(
                "every line of new_string starts with a line number (`{}` on the first), counting up from line {first}, the first line it replaces, as read shows the lines; old_string has no such numbers. They are read's, not part of the file. Send new_string without the `N: ` prefixes.",
                style.shown(number)
            ),
        });
    }
    Ok(applied)
}

/// The number on new_string's first line and the prefixes' style when every line carries a
/// line-number prefix of one style, numbered consecutively.
fn numbered_from(new: &str) -> Option<(u64, Numbering)> {
    let (_, from, style) = strip_line_numbers(new)?;
    Some((from, style))
}

fn find_and_replace(edit: &Edit<'_>) -> Result<Applied, Refusal> {
    let mut text = Text::new(edit.content);
    text.crlf = edit.crlf;
    let mut too_large: Option<Refusal> = None;
    if let Some(done) =
        exact(&text, edit.old, edit.new, edit.replace_all, Strategy::Exact, Within::default(), &mut too_large)?
    {
        return Ok(done);
    }
    // With read's line numbers removed, they say where old_string starts (0-based here): a
    // match at another line is not the text the model read there.
    let (old, new, stripped, stripped_from_new, anchor) = match strip_line_numbers(edit.old) {
        Some((old, from, style)) => match strip_line_numbers(edit.new) {
            // Numbered like old_string, from the same line: read's numbers, copied twice.
            Some((new, new_from, new_style)) if new_style == style && new_from == from => {
                (old, new, true, true, Some(from_line(from)))
            }
            // No line of new_string starts like old_string's numbered lines: text as sent (a
            // YAML `  200: ok` or a TSV `2<TAB>bob` is not read's numbering).
            _ if !edit.new.split('\n').any(|l| line_number_prefix(l).is_some_and(|(_, s, _)| s == style)) => {
                (old, edit.new.to_string(), true, false, Some(from_line(from)))
            }
            // Some lines numbered, some not, or numbered from another line: written as sent the
            // numbers may land in the file, and removed they may take text with them.
            _ => {
                return Err(Refusal::NewString {
                    detail: format!(
                        "old_string carries the line-number prefixes of read's output (`{}` on its first line), and new_string's lines are not all numbered the same way counting up from {from}, so which of its numbers are read's to remove and which are text is unclear. Send old_string and new_string without the `N: ` prefixes, exactly as the lines are in the file.",
                        style.shown(from)
                    ),
                });
            }
        },
        None => (edit.old.to_string(), edit.new.to_string(), false, false, None),
    };
    let mark = |mut a: Applied| {
        a.stripped_line_numbers = stripped;
        a.stripped_from_new = stripped_from_new;
        a
    };
    if stripped
        && let Some(done) =
            exact(&text, &old, &new, edit.replace_all, Strategy::Exact, Within { raw: None, anchor }, &mut too_large)?
    {
        return Ok(mark(done));
    }
    let old_lines_count = split_lines(&old).0.len();
    if !old.trim().is_empty() {
        let mut plan = Plan::new(&text, &old, &new, edit.replace_all, old_lines_count);
        plan.anchor = anchor;
        for strategy in
            [Strategy::TrailingWhitespace, Strategy::Indentation, Strategy::TrimmedLines, Strategy::Whitespace]
        {
            if let Some(outcome) = plan.run(strategy, &mut too_large) {
                return outcome.map(mark);
            }
        }
        // Escaped line endings read like sent ones: `\r\n` is a line break (the file's own
        // endings are kept on writing).
        let old_u = unescape(&old).replace("\r\n", "\n");
        if old_u != old {
            // new_string is read the same way only when it is escaped the way old_string was;
            // otherwise it is tried as sent, and a match is refused rather than guessed at.
            let new_u = unescape_like(&old, &new).map(|n| n.replace("\r\n", "\n"));
            let new_try = new_u.as_deref().unwrap_or(&new);
            let raw = (old_lines_count, old.trim().len());
            let mut loose = Plan::new(&text, &old_u, new_try, edit.replace_all, old_lines_count);
            loose.anchor = anchor;
            let found = match exact(
                &text,
                &old_u,
                new_try,
                edit.replace_all,
                Strategy::Escapes,
                Within { raw: Some(raw), anchor },
                &mut too_large,
            ) {
                // Read loosely (leading whitespace aside, inside other lines) it may be found
                // in more places: every one counts.
                Ok(Some(done)) if loose.fit_candidates(Strategy::Escapes) <= done.lines.len() => Some(Ok(done)),
                Ok(_) => loose.run(Strategy::Escapes, &mut too_large),
                Err(refusal) => Some(Err(refusal)),
            };
            if let Some(outcome) = found {
                if let Err(why) = new_u {
                    return Err(Refusal::NewString {
                        detail: format!(
                            "old_string was found only after reading its backslash escapes as characters (such as `\\\"` as `\"`), and new_string cannot be read the same way for certain: {why}. Written either way it could put a character where you meant an escape, or the reverse. Send old_string and new_string unescaped, exactly as the text is in the file (a line break as a line break, a backslash only where the file has one)."
                        ),
                    });
                }
                return outcome.map(mark);
            }
        }
        for strategy in [Strategy::Punctuation, Strategy::BlockAnchor] {
            if let Some(outcome) = plan.run(strategy, &mut too_large) {
                return outcome.map(mark);
            }
        }
    }
    if let Some(refusal) = too_large {
        return Err(refusal);
    }
    Err(Refusal::NotFound { closest: closest(&text, &old) })
}

/// The 0-based line a read-style line number names (`0`, which read never shows, names none).
fn from_line(number: u64) -> usize {
    usize::try_from(number).ok().and_then(|n| n.checked_sub(1)).unwrap_or(usize::MAX)
}

/// The refusal for a match only away from the line old_string's line numbers name, kept in
/// `slot` unless a refusal is there already.
fn set_moved(slot: &mut Option<Refusal>, anchor: usize, mut found: Vec<usize>) {
    found.dedup();
    if slot.is_none() {
        *slot = Some(Refusal::Moved { line: anchor.saturating_add(1), found });
    }
}

/// The file split into lines, with the byte offset of each line's start.
struct Text<'a> {
    src: &'a str,
    lines: Vec<&'a str>,
    starts: Vec<usize>,
    /// Line endings were CRLF and are `\n` here (see [`Edit::crlf`]).
    crlf: bool,
}

impl<'a> Text<'a> {
    fn new(src: &'a str) -> Self {
        let mut lines = Vec::new();
        let mut starts = Vec::new();
        let mut at = 0;
        for line in src.split('\n') {
            starts.push(at);
            lines.push(line);
            at += line.len() + 1;
        }
        Text { src, lines, starts, crlf: false }
    }

    /// The 0-based line holding byte `offset`.
    fn line_of(&self, offset: usize) -> usize {
        match self.starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    /// Bytes of lines `first..=last`, without the final newline.
    fn span(&self, first: usize, last: usize) -> Range<usize> {
        self.starts[first]..self.starts[last] + self.lines[last].len()
    }
}

/// Splits text into lines; a final newline ends the last line rather than starting an empty one.
/// Returns the lines and whether there was a final newline.
fn split_lines(text: &str) -> (Vec<&str>, bool) {
    match text.strip_suffix('\n') {
        Some(body) => (body.split('\n').collect(), true),
        None => (text.split('\n').collect(), false),
    }
}

/// What bounds an exact match of a string derived from `old_string`.
#[derive(Clone, Copy, Debug, Default)]
struct Within {
    /// The lines and trimmed length of `old_string` as sent, when the string matched was derived
    /// from it: a match disproportionate to what was sent is set aside as too large.
    raw: Option<(usize, usize)>,
    /// The line (0-based) read's line numbers put the match's first line at.
    anchor: Option<usize>,
}

/// Exact substring matching (for `old` verbatim, or after line numbers or escapes are removed),
/// bounded by `within`; a match set aside is recorded in `too_large`.
fn exact(
    text: &Text<'_>,
    old: &str,
    new: &str,
    replace_all: bool,
    strategy: Strategy,
    within: Within,
    too_large: &mut Option<Refusal>,
) -> Result<Option<Applied>, Refusal> {
    let Within { raw, anchor } = within;
    let Some(first_char) = old.chars().next() else { return Ok(None) };
    let mut starts = Vec::new();
    let mut from = 0;
    while let Some(i) = text.src[from..].find(old) {
        starts.push(from + i);
        from += i + first_char.len_utf8();
        if starts.len() > 10_000 {
            break;
        }
    }
    if starts.is_empty() {
        return Ok(None);
    }
    if let Some(anchor) = anchor {
        let (at, away): (Vec<usize>, Vec<usize>) = starts.iter().partition(|&&s| text.line_of(s) == anchor);
        if at.is_empty() {
            set_moved(too_large, anchor, away.iter().map(|&s| text.line_of(s) + 1).collect());
            return Ok(None);
        }
        if !replace_all {
            starts = at;
        }
    }
    if let Some((raw_lines, raw_len)) = raw {
        let s = starts[0];
        let (first, last) = (text.line_of(s), text.line_of(s + old.len().saturating_sub(1)));
        if too_large_span(raw_lines, raw_len, last - first + 1, old.trim().len()) {
            if too_large.is_none() {
                *too_large =
                    Some(Refusal::TooLarge { strategy, first: first + 1, last: last + 1, old_lines: raw_lines });
            }
            return Ok(None);
        }
    }
    let mut chosen: Vec<usize> = Vec::new();
    for s in &starts {
        if chosen.last().is_none_or(|&prev| *s >= prev + old.len()) {
            chosen.push(*s);
        }
    }
    if starts.len() > 1 && !replace_all {
        return Err(Refusal::Ambiguous { strategy, lines: starts.iter().map(|&s| text.line_of(s) + 1).collect() });
    }
    // In a file of mixed endings new_string's line breaks, sent as `\n`, take the endings of
    // the lines they replace or follow (when neither string has a `\r`: sent `\r\n` bytes are
    // the model's own).
    let mixed =
        !text.crlf && text.src.contains("\r\n") && new.contains('\n') && !old.contains('\r') && !new.contains('\r');
    let mut content = String::with_capacity(text.src.len() + new.len());
    let mut last = 0;
    let mut lines = Vec::new();
    for s in &chosen {
        content.push_str(&text.src[last..*s]);
        if mixed {
            content.push_str(&with_endings(text, *s, old, new));
        } else {
            content.push_str(new);
        }
        last = s + old.len();
        lines.push((text.line_of(*s) + 1, text.line_of(last.saturating_sub(1).max(*s)) + 1));
    }
    content.push_str(&text.src[last..]);
    Ok(Some(Applied {
        content,
        strategy,
        lines,
        reindent: None,
        stripped_line_numbers: false,
        stripped_from_new: false,
    }))
}

/// `new`, replacing `old` found at byte `s`, with each of its line breaks ending like the file
/// line that the line before it replaces (line for line, as a diff pairs them), else like the
/// new line before it, else like the line it is put before. `old`'s own line breaks matched
/// plain `\n`s; its last line ends as its file line does.
fn with_endings(text: &Text<'_>, s: usize, old: &str, new: &str) -> String {
    let old_parts: Vec<&str> = old.split('\n').collect();
    let new_parts: Vec<&str> = new.split('\n').collect();
    let last_old = old_parts.len() - 1;
    let end_line = text.line_of(s + old.len());
    let cr_of_old = |o: usize| o == last_old && text.lines[end_line].ends_with('\r');
    let mut maps: Vec<Option<usize>> = vec![None; new_parts.len()];
    let mut before: Vec<usize> = vec![last_old; new_parts.len()];
    for op in similar::capture_diff_slices(Algorithm::Myers, &old_parts, &new_parts) {
        match op {
            DiffOp::Equal { old_index, new_index, len } => {
                (0..len).for_each(|k| maps[new_index + k] = Some(old_index + k));
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                (0..old_len.min(new_len)).for_each(|k| maps[new_index + k] = Some(old_index + k));
                (0..new_len).for_each(|k| before[new_index + k] = old_index.min(last_old));
            }
            DiffOp::Insert { old_index, new_index, new_len } => {
                (0..new_len).for_each(|k| before[new_index + k] = old_index.min(last_old));
            }
            DiffOp::Delete { .. } => {}
        }
    }
    let mut out = String::with_capacity(new.len() + new_parts.len());
    let mut prev_cr: Option<bool> = None;
    for (j, part) in new_parts.iter().enumerate() {
        out.push_str(part);
        if j + 1 == new_parts.len() {
            break;
        }
        let cr = match maps[j] {
            Some(o) => cr_of_old(o),
            None => prev_cr.unwrap_or_else(|| cr_of_old(before[j])),
        };
        if cr {
            out.push('\r');
        }
        out.push('\n');
        prev_cr = Some(cr);
    }
    out
}

/// How a line-number prefix is written: read's `12: ` (`12:` on an empty line), `cat -n`'s
/// `    12<TAB>`, or an arrow `    12→`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Numbering {
    Read,
    Tab,
    Arrow,
}

impl Numbering {
    /// The prefix for line `n`, as the model is shown it.
    fn shown(self, n: u64) -> String {
        match self {
            Numbering::Read => format!("{n}: "),
            Numbering::Tab => format!("{n}<TAB>"),
            Numbering::Arrow => format!("{n}→"),
        }
    }
}

/// Removes line-number prefixes when every line carries one, all written one way (see
/// [`Numbering`]) and counting up by one: the text without them, the first number and the style.
fn strip_line_numbers(text: &str) -> Option<(String, u64, Numbering)> {
    let (lines, trailing) = split_lines(text);
    if lines.is_empty() || text.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(lines.len());
    let mut first: Option<(u64, Numbering)> = None;
    for (i, line) in lines.into_iter().enumerate() {
        let (number, style, rest) = line_number_prefix(line)?;
        match first {
            None => first = Some((number, style)),
            Some((from, s)) if s != style || number != from + i as u64 => return None,
            Some(_) => {}
        }
        out.push(rest);
    }
    let mut joined = out.join("\n");
    if trailing {
        joined.push('\n');
    }
    let (from, style) = first?;
    Some((joined, from, style))
}

/// The line-number prefix `line` starts with, as read (`12: `, no leading spaces), `cat -n`
/// (`    12<TAB>`) or an arrow (`    12→`) print it: the number, the style and the rest.
fn line_number_prefix(line: &str) -> Option<(u64, Numbering, &str)> {
    let body = line.trim_start_matches(' ');
    let padded = body.len() != line.len();
    let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 9 {
        return None;
    }
    let number: u64 = body[..digits].parse().ok()?;
    let after = &body[digits..];
    let (style, rest) = if let Some(r) = after.strip_prefix('\t') {
        (Numbering::Tab, r)
    } else if let Some(r) = after.strip_prefix('→') {
        (Numbering::Arrow, r)
    } else if padded {
        // read never pads its numbers: `  200: ok` is text.
        return None;
    } else if let Some(r) = after.strip_prefix(": ") {
        (Numbering::Read, r)
    } else if after == ":" {
        (Numbering::Read, "")
    } else {
        return None;
    };
    Some((number, style, rest))
}

/// Backslash escapes read as the characters they stand for (others kept as they are).
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.peek().copied() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(q @ ('\'' | '"' | '`' | '\\' | '$')) => out.push(q),
            Some('\n') => out.push('\n'),
            _ => {
                out.push('\\');
                continue;
            }
        }
        chars.next();
    }
    out
}

/// The characters that may follow a backslash in an escape [`unescape`] reads.
fn is_escape(c: char) -> bool {
    matches!(c, 'n' | 't' | 'r' | '\'' | '"' | '`' | '\\' | '$' | '\n')
}

/// What the escape `\c` stands for.
fn escaped(c: char) -> char {
    match c {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        other => other,
    }
}

/// The escape `\c` as the model is shown it.
fn shown_escape(c: char) -> String {
    match c {
        '\n' => "a backslash ending a line".into(),
        c => format!("`\\{c}`"),
    }
}

/// The escapes `text` uses (the character after each backslash that starts one).
fn escapes_in(text: &str) -> HashSet<char> {
    let mut used = HashSet::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(next) = chars.next()
            && is_escape(next)
        {
            used.insert(next);
        }
    }
    used
}

/// Whether `text` has `target` outside an escape.
fn has_bare(text: &str, target: char) -> bool {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            chars.next();
        } else if c == target {
            return true;
        }
    }
    false
}

/// `new` with its escapes read as characters, when that is certainly how it was meant:
/// old_string's escapes matched the file as characters, so new_string, escaped the same way,
/// holds only escapes old_string uses too (a `\n` of its own may be text, as in
/// `print("hi\n")`), every backslash starts one (escaped text has `\\` for a backslash, so
/// `\d` is not escaped text), and no escaped character also appears bare (`\"` beside `"`). Else
/// why not, for the model.
fn unescape_like(old: &str, new: &str) -> Result<String, String> {
    if !new.contains('\\') {
        return Ok(new.to_string());
    }
    let confirmed = escapes_in(old);
    let mut used = HashSet::new();
    let mut chars = new.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            continue;
        }
        match chars.next() {
            Some(k) if is_escape(k) && confirmed.contains(&k) => {
                used.insert(k);
            }
            Some(k) if is_escape(k) => {
                return Err(format!("it has {}, an escape old_string does not use", shown_escape(k)));
            }
            Some(k) => return Err(format!("it has a backslash that starts no escape (`\\{k}`)")),
            None => return Err("it ends with a backslash".into()),
        }
    }
    for k in confirmed.union(&used) {
        if matches!(k, '\\' | '\n') {
            continue;
        }
        let bare = escaped(*k);
        if has_bare(new, bare) {
            let what = match bare {
                '\n' => "a line break".to_string(),
                '\t' => "a tab".to_string(),
                '\r' => "a carriage return".to_string(),
                c => format!("`{c}`"),
            };
            return Err(format!("it has {what} as it is, where old_string has {}", shown_escape(*k)));
        }
    }
    Ok(unescape(new))
}

/// `line` with typographic dashes, quotes and spaces in their ASCII forms.
fn punctuation_ascii(line: &str) -> Cow<'_, str> {
    if line.is_ascii() || line.chars().all(|c| normalize_char(c) == c) {
        return Cow::Borrowed(line);
    }
    Cow::Owned(line.chars().map(normalize_char).collect())
}

fn collapse_whitespace(line: &str) -> Cow<'_, str> {
    let trimmed = line.trim();
    if !trimmed.contains(|c: char| c.is_whitespace()) || !has_run(trimmed) {
        return Cow::Borrowed(trimmed);
    }
    let mut out = String::with_capacity(trimmed.len());
    let mut in_space = false;
    for c in trimmed.chars() {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    Cow::Owned(out)
}

fn has_run(text: &str) -> bool {
    let mut prev_space = false;
    for c in text.chars() {
        let space = c.is_whitespace();
        if space && (prev_space || c != ' ') {
            return true;
        }
        prev_space = space;
    }
    false
}

fn leading_ws(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// How one old line lines up with the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pair {
    /// Old line `o` corresponds to block line `f`; `eq` when equal under the matcher.
    Both { o: usize, f: usize, eq: bool },
    /// Old line `o` has no counterpart in the file.
    OldOnly { o: usize },
    /// Block line `f` has no counterpart in `old_string`.
    FileOnly { f: usize },
}

/// One place that matched.
#[derive(Clone, Debug)]
struct Candidate {
    /// First and last file line (0-based, inclusive).
    first: usize,
    last: usize,
    /// Bytes of the first line left untouched (the part before a partial first line).
    prefix: usize,
    /// For an in-line match: the exact byte span replaced by `new` verbatim.
    inline: Option<Range<usize>>,
    pairs: Vec<Pair>,
}

/// What a loose match needs: the file, `old_string` and `new_string` split into lines.
struct Plan<'a> {
    text: &'a Text<'a>,
    old: &'a str,
    old_lines: Vec<&'a str>,
    new_lines: Vec<&'a str>,
    replace_all: bool,
    /// Lines of `old_string` as sent (before escapes were read), for the size rule.
    raw_old_lines: usize,
    /// The line (0-based) read's line numbers on `old_string` put its first line at, if it had
    /// them: only a candidate starting there counts (with `replace_all`, it must be one of them).
    anchor: Option<usize>,
}

impl<'a> Plan<'a> {
    fn new(text: &'a Text<'a>, old: &'a str, new: &'a str, replace_all: bool, raw_old_lines: usize) -> Self {
        let (old_lines, old_trailing) = split_lines(old);
        let new_lines = if new.is_empty() || (old_trailing && new == "\n") {
            Vec::new()
        } else if old_trailing {
            split_lines(new).0
        } else {
            new.split('\n').collect()
        };
        Plan { text, old, old_lines, new_lines, replace_all, raw_old_lines, anchor: None }
    }

    /// How many places (not far too large) one matcher finds, away from the anchor left out.
    fn fit_candidates(&self, strategy: Strategy) -> usize {
        let mut ignored = None;
        self.anchored(self.candidates(strategy), &mut ignored).iter().filter(|c| !self.disproportionate(c)).count()
    }

    /// `found` kept to the anchor line, when there is one: only the candidate there (all of
    /// them with `replace_all`), none when no candidate starts there (set aside in `slot`).
    fn anchored(&self, found: Vec<Candidate>, slot: &mut Option<Refusal>) -> Vec<Candidate> {
        let Some(anchor) = self.anchor else { return found };
        if found.is_empty() {
            return found;
        }
        if !found.iter().any(|c| c.first == anchor) {
            set_moved(slot, anchor, found.iter().map(|c| c.first + 1).collect());
            return Vec::new();
        }
        if self.replace_all { found } else { found.into_iter().filter(|c| c.first == anchor).collect() }
    }

    /// Runs one matcher: `None` when it found nothing usable, else the outcome.
    fn run(&self, strategy: Strategy, too_large: &mut Option<Refusal>) -> Option<Result<Applied, Refusal>> {
        let candidates = self.anchored(self.candidates(strategy), too_large);
        if candidates.is_empty() {
            return None;
        }
        let (fit, large): (Vec<Candidate>, Vec<Candidate>) =
            candidates.into_iter().partition(|c| !self.disproportionate(c));
        if fit.is_empty() {
            if too_large.is_none()
                && let Some(c) = large.first()
            {
                *too_large = Some(Refusal::TooLarge {
                    strategy,
                    first: c.first + 1,
                    last: c.last + 1,
                    old_lines: self.raw_old_lines,
                });
            }
            return None;
        }
        if fit.len() > 1 && !self.replace_all {
            return Some(Err(Refusal::Ambiguous { strategy, lines: fit.iter().map(|c| c.first + 1).collect() }));
        }
        Some(self.splice(strategy, fit))
    }

    /// Every place one matcher finds.
    fn candidates(&self, strategy: Strategy) -> Vec<Candidate> {
        // A one-line old_string found as whole lines may be inside other lines too, and a
        // multi-line one may start inside a line (a partial first line: the trimmed-lines tier
        // finds those before the escape and punctuation tiers, whose text differs more): every
        // candidate of a tier counts before one is chosen.
        let with_inline = |mut found: Vec<Candidate>, needle: &str, map: fn(char) -> char| {
            if !found.is_empty() && self.old_lines.len() == 1 {
                let covered: HashSet<usize> = found.iter().map(|c| c.first).collect();
                found.extend(self.inline_exact(needle, &covered, map));
            }
            found
        };
        let partial = |map: fn(char) -> char| (self.old_lines.len() > 1).then_some(map);
        match strategy {
            Strategy::TrailingWhitespace => {
                with_inline(self.windows(|l| Cow::Borrowed(l.trim_end()), None), self.old.trim_end(), same)
            }
            Strategy::Indentation => with_inline(
                self.windows(|l| Cow::Borrowed(l.trim()), None)
                    .into_iter()
                    .filter(|c| Shift::measure(self, c).is_some())
                    .collect(),
                self.old.trim(),
                same,
            ),
            Strategy::TrimmedLines => {
                with_inline(self.windows(|l| Cow::Borrowed(l.trim()), Some(same)), self.old.trim(), same)
            }
            Strategy::Whitespace => {
                let mut found = self.windows(collapse_whitespace, None);
                if self.old_lines.len() == 1 {
                    // In-line places on the lines that do not match whole.
                    let covered: HashSet<usize> = found.iter().map(|c| c.first).collect();
                    found.extend(self.inline_whitespace().into_iter().filter(|c| !covered.contains(&c.first)));
                }
                found
            }
            Strategy::Escapes => {
                with_inline(self.windows(|l| Cow::Borrowed(l.trim()), partial(same)), self.old.trim(), same)
            }
            Strategy::Punctuation => with_inline(
                self.windows(|l| Cow::Owned(punctuation_ascii(l).trim().to_string()), partial(normalize_char)),
                punctuation_ascii(self.old).trim(),
                normalize_char,
            ),
            Strategy::BlockAnchor => self.block_anchor(),
            Strategy::Exact => Vec::new(),
        }
    }

    /// Windows of `old_lines.len()` file lines equal to `old_string` line by line under `norm`.
    /// With `partial` (how the matcher reads each character), the first old line may instead be
    /// the tail of its file line.
    fn windows(&self, norm: impl Fn(&str) -> Cow<'_, str>, partial: Option<fn(char) -> char>) -> Vec<Candidate> {
        let partial_first = partial.is_some();
        let r = self.old_lines.len();
        let n = self.text.lines.len();
        if r == 0 || r > n {
            return Vec::new();
        }
        let old: Vec<Cow<'_, str>> = self.old_lines.iter().map(|l| norm(l)).collect();
        if old.iter().all(|l| l.trim().is_empty()) {
            return Vec::new();
        }
        let file: Vec<Cow<'_, str>> = self.text.lines.iter().map(|l| norm(l)).collect();
        let mut found = Vec::new();
        for start in 0..=n - r {
            let mut prefix = 0;
            let first_ok = if file[start] == old[0] {
                true
            } else if partial_first {
                match partial_prefix_mapped(self.text.lines[start], self.old_lines[0], partial.unwrap_or(same)) {
                    Some(p) => {
                        prefix = p;
                        true
                    }
                    None => false,
                }
            } else {
                false
            };
            if !first_ok || !(1..r).all(|k| file[start + k] == old[k]) {
                continue;
            }
            if partial_first && prefix == 0 {
                // The first line starts at the file line's indentation when old_string's first
                // line has none of its own (a copy that began at the first visible character).
                let file_ws = leading_ws(self.text.lines[start]);
                if leading_ws(self.old_lines[0]).is_empty() && !file_ws.is_empty() && r > 1 {
                    prefix = file_ws.len();
                }
            }
            found.push(Candidate {
                first: start,
                last: start + r - 1,
                prefix,
                inline: None,
                pairs: (0..r).map(|k| Pair::Both { o: k, f: k, eq: true }).collect(),
            });
        }
        found
    }

    /// For a one-line `old_string`: places inside a line where its words appear in order,
    /// separated by any whitespace (or none). Every place counts, several on one line included:
    /// the second on a line is as much a candidate as one on another line (ambiguous, or also
    /// replaced with `replace_all`).
    fn inline_whitespace(&self) -> Vec<Candidate> {
        let words: Vec<&str> = self.old.split_whitespace().collect();
        if words.is_empty() || words.concat().chars().count() < 3 {
            return Vec::new();
        }
        let mut found = Vec::new();
        for (i, line) in self.text.lines.iter().enumerate() {
            let mut from = 0;
            while let Some(pos) = line[from..].find(words[0]) {
                let start = from + pos;
                if let Some(end) = match_words(line, start, &words) {
                    let base = self.text.starts[i];
                    found.push(Candidate {
                        first: i,
                        last: i,
                        prefix: 0,
                        inline: Some(base + start..base + end),
                        pairs: Vec::new(),
                    });
                }
                // Places may overlap (`0, 0` twice in `0,  0,  0`): each start counts.
                from = start + words[0].chars().next().map_or(1, char::len_utf8);
            }
        }
        found
    }

    /// For a one-line `old_string` found as whole lines: the places where `needle` (it, as the
    /// tier compares it) is part of another line, each start counted.
    /// Lines are read through `map` (character for character), as the tier reads them.
    fn inline_exact(&self, needle: &str, covered: &HashSet<usize>, map: fn(char) -> char) -> Vec<Candidate> {
        let Some(step) = needle.chars().next().map(char::len_utf8) else { return Vec::new() };
        let mut found = Vec::new();
        for (i, raw) in self.text.lines.iter().enumerate() {
            if covered.contains(&i) {
                continue;
            }
            let mapped = Mapped::new(raw, map);
            let line = mapped.text.as_ref();
            let mut from = 0;
            while let Some(pos) = line[from..].find(needle) {
                let start = from + pos;
                let base = self.text.starts[i];
                let span = mapped.original(start)..mapped.original(start + needle.len());
                found.push(Candidate {
                    first: i,
                    last: i,
                    prefix: 0,
                    inline: Some(base + span.start..base + span.end),
                    pairs: Vec::new(),
                });
                from = start + step;
            }
        }
        found
    }

    /// Blocks whose first and last lines equal `old_string`'s (trimmed), within a quarter of its
    /// length, with at least half of the lines equal.
    fn block_anchor(&self) -> Vec<Candidate> {
        let r = self.old_lines.len();
        if r < 3 {
            return Vec::new();
        }
        let first = self.old_lines[0].trim();
        let last = self.old_lines[r - 1].trim();
        if first.is_empty() || last.is_empty() || (first.len() < 3 && last.len() < 3) {
            return Vec::new();
        }
        let tolerance = (r / 4).max(1);
        let old_t: Vec<&str> = self.old_lines.iter().map(|l| l.trim()).collect();
        let lines = &self.text.lines;
        let mut found = Vec::new();
        for a in 0..lines.len() {
            if lines[a].trim() != first {
                continue;
            }
            let min_end = a + 2;
            let max_end = (a + r - 1 + tolerance).min(lines.len().saturating_sub(1));
            let Some(g) = (min_end..=max_end).find(|&g| lines[g].trim() == last) else { continue };
            let c = g - a + 1;
            if c.abs_diff(r) > tolerance {
                continue;
            }
            let block_t: Vec<&str> = lines[a..=g].iter().map(|l| l.trim()).collect();
            let pairs = align(&old_t, &block_t);
            let equal = pairs.iter().filter(|p| matches!(p, Pair::Both { eq: true, .. })).count();
            if equal * 2 < r.max(c) {
                continue;
            }
            let ratio = similar::TextDiff::configure()
                .timeout(std::time::Duration::from_millis(50))
                .diff_chars(&old_t.join("\n"), &block_t.join("\n"))
                .ratio();
            if ratio < 0.7 {
                continue;
            }
            found.push(Candidate { first: a, last: g, prefix: 0, inline: None, pairs });
        }
        found
    }

    /// Whether a candidate is far larger than `old_string` (see [`too_large_span`]).
    fn disproportionate(&self, c: &Candidate) -> bool {
        let span_len = match &c.inline {
            Some(span) => span.len(),
            None => self.text.src[self.text.span(c.first, c.last)].trim().len(),
        };
        too_large_span(self.raw_old_lines, self.old.trim().len(), c.last - c.first + 1, span_len)
    }

    /// Replaces every chosen candidate (greedily skipping overlaps), last first. In-line
    /// candidates overlap only when their bytes do: two on one line are both replaced.
    fn splice(&self, strategy: Strategy, mut candidates: Vec<Candidate>) -> Result<Applied, Refusal> {
        candidates.sort_by_key(|c| (c.first, c.inline.as_ref().map_or(0, |span| span.start)));
        let mut chosen: Vec<Candidate> = Vec::new();
        for c in candidates {
            let apart = |prev: &Candidate| match (&prev.inline, &c.inline) {
                (Some(before), Some(this)) => this.start >= before.end,
                _ => c.first > prev.last,
            };
            if chosen.last().is_none_or(apart) {
                chosen.push(c);
            }
        }
        let mut replacements = Vec::with_capacity(chosen.len());
        let mut reindent = None;
        for c in &chosen {
            let (span, text, shift) = self.replacement(strategy, c)?;
            if reindent.is_none() {
                reindent = shift;
            }
            replacements.push((span, text));
        }
        let src = self.text.src;
        let mut content = src.to_string();
        for (span, text) in replacements.iter().rev() {
            content.replace_range(span.clone(), text);
        }
        Ok(Applied {
            content,
            strategy,
            lines: chosen.iter().map(|c| (c.first + 1, c.last + 1)).collect(),
            reindent,
            stripped_line_numbers: false,
            stripped_from_new: false,
        })
    }

    /// The byte span a candidate replaces and its new text, merged line by line.
    fn replacement(
        &self,
        strategy: Strategy,
        c: &Candidate,
    ) -> Result<(Range<usize>, String, Option<String>), Refusal> {
        if let Some(span) = &c.inline {
            // The whitespace around old_string was not part of the place matched; nor is
            // new_string's.
            let text = self.new_lines.join("\n");
            let text = text.strip_prefix(leading_ws(self.old)).unwrap_or(&text);
            let trailing = &self.old[self.old.trim_end().len()..];
            let text = text.strip_suffix(trailing).unwrap_or(text);
            let text = match strategy {
                // Smart quotes become ASCII where the line has none of them.
                Strategy::Punctuation => ascii_unless_in(text, self.text.lines[c.first]),
                _ => text.to_string(),
            };
            return Ok((span.clone(), text, None));
        }
        let block = &self.text.lines[c.first..=c.last];
        let conflict = |detail: String| Refusal::Conflict { strategy, first: c.first + 1, last: c.last + 1, detail };
        let global = Shift::measure(self, c);
        // No uniform shift: each new line goes by its own depth (never a neighbour's shift,
        // which puts a line at another depth wrong).
        let levels = match global {
            Some(_) => None,
            None => Some(Levels::measure(self, c)),
        };
        let mut by_levels = false;
        let new_cont = continuations(&self.new_lines);
        let old = &self.old_lines;
        let new = &self.new_lines;
        let mut kept = vec![false; old.len()];
        let mut before: Vec<Vec<usize>> = vec![Vec::new(); old.len() + 1];
        // The old line each new line takes the place of, line for line in a replaced run.
        let mut replaces: Vec<Option<usize>> = vec![None; new.len()];
        for op in similar::capture_diff_slices(Algorithm::Myers, old, new) {
            match op {
                DiffOp::Equal { old_index, len, .. } => {
                    kept[old_index..old_index + len].iter_mut().for_each(|k| *k = true);
                }
                DiffOp::Delete { .. } => {}
                DiffOp::Insert { old_index, new_index, new_len } => {
                    before[old_index].extend(new_index..new_index + new_len);
                }
                DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                    before[old_index].extend(new_index..new_index + new_len);
                    for k in 0..old_len.min(new_len) {
                        replaces[new_index + k] = Some(old_index + k);
                    }
                }
            }
        }
        // Where the file's lines end in `\r\n` (a file of mixed endings, not made `\n` on
        // reading): a new line ends like the file line it replaces, else like the line before it.
        let file_of_old = |o: usize| {
            c.pairs.iter().find_map(|p| match *p {
                Pair::Both { o: po, f, .. } if po == o => Some(f),
                _ => None,
            })
        };
        let cr_of_new = |j: usize, out: &[String], o: usize| -> bool {
            if self.text.crlf {
                // Every line ending is written as CRLF; a `\r` here is the file's text.
                return false;
            }
            if let Some(f) = replaces[j].and_then(file_of_old) {
                return block[f].ends_with('\r');
            }
            match out.last() {
                Some(prev) => prev.ends_with('\r'),
                None => file_of_old(o).map_or(block[0].ends_with('\r'), |f| block[f].ends_with('\r')),
            }
        };
        let block_text = block.concat();
        let translate = |line: String| -> String {
            if strategy != Strategy::Punctuation {
                return line;
            }
            ascii_unless_in(&line, &block_text)
        };
        let prefix_is_indent = block[0][..c.prefix].trim().is_empty();
        let mut out: Vec<String> = Vec::new();
        let mut emit_new = |out: &mut Vec<String>, o: usize| -> Result<(), Refusal> {
            for &j in &before[o] {
                let mut line = if out.is_empty() && c.prefix > 0 {
                    new[j].trim_start().to_string()
                } else if let Some(shift) = &global {
                    shift.apply(new[j])
                } else {
                    let line = levels.as_ref().and_then(|l| l.apply(new[j], new_cont[j])).ok_or_else(|| {
                        conflict(if new_cont[j] {
                            format!(
                                "its indentation is no uniform shift of old_string's; the new line `{}` (indented {}) continues the line before it (inside a bracket) and is aligned unlike any line the file and old_string share, so where it belongs is a guess",
                                new[j].trim(),
                                describe_ws(leading_ws(new[j]))
                            )
                        } else {
                            format!(
                                "its indentation is no uniform shift or level-for-level mapping of old_string's, so where the new line `{}` (indented {}) belongs is a guess",
                                new[j].trim(),
                                describe_ws(leading_ws(new[j]))
                            )
                        })
                    })?;
                    by_levels |= line != new[j];
                    line
                };
                if cr_of_new(j, out, o) && !line.ends_with('\r') {
                    line.push('\r');
                }
                out.push(translate(line));
            }
            Ok(())
        };
        let emit_file = |out: &mut Vec<String>, f: usize| -> Result<(), Refusal> {
            if f > 0 || c.prefix == 0 {
                out.push(block[f].to_string());
            } else if out.is_empty() {
                out.push(block[0][c.prefix..].to_string());
            } else if prefix_is_indent {
                out.push(block[0].to_string());
            } else {
                return Err(conflict(format!(
                    "your edit adds lines before `{}`, which starts in the middle of line {}",
                    old[0].trim(),
                    c.first + 1
                )));
            }
            Ok(())
        };
        let old_positions: Vec<(usize, usize)> =
            c.pairs.iter().enumerate().filter_map(|(i, p)| old_index(p).map(|o| (i, o))).collect();
        for (i, pair) in c.pairs.iter().enumerate() {
            match *pair {
                Pair::Both { o, f, eq } => {
                    emit_new(&mut out, o)?;
                    if kept[o] {
                        emit_file(&mut out, f)?;
                    } else if !eq {
                        return Err(conflict(format!(
                            "line {} of the file, which your edit changes, is `{}` but old_string has `{}`",
                            c.first + f + 1,
                            block[f].trim(),
                            old[o].trim()
                        )));
                    }
                }
                Pair::OldOnly { o } => {
                    emit_new(&mut out, o)?;
                    if !kept[o] {
                        return Err(conflict(format!(
                            "your edit removes or changes `{}`, which is not in the file at that place",
                            old[o].trim()
                        )));
                    }
                }
                Pair::FileOnly { f } => {
                    let prev = old_positions.iter().rev().find(|(at, _)| *at < i).map(|&(_, o)| o);
                    let next = old_positions.iter().find(|(at, _)| *at > i).map(|&(_, o)| o);
                    let prev_ok = prev.is_none_or(|o| kept[o]);
                    let next_ok = match next {
                        Some(o) => kept[o] && before[o].is_empty(),
                        None => before[old.len()].is_empty(),
                    };
                    if !(prev_ok && next_ok) {
                        return Err(conflict(format!(
                            "line {} of the file (`{}`) is not in old_string and sits inside the lines your edit changes",
                            c.first + f + 1,
                            block[f].trim()
                        )));
                    }
                    emit_file(&mut out, f)?;
                }
            }
        }
        emit_new(&mut out, old.len())?;
        let mut span = self.text.span(c.first, c.last);
        span.start += c.prefix;
        if out.is_empty() && c.prefix == 0 {
            // The lines go away entirely, newline included: the one ending the last of them, or,
            // for the file's last line, the one before it. A block that reaches the empty line
            // after the file's final newline holds its own newline already; the line before it
            // keeps its own.
            if span.end < self.text.src.len() {
                span.end += 1;
            } else if span.start > 0 && !self.text.src.ends_with('\n') {
                span.start -= 1;
            }
        }
        let how = match global {
            Some(shift) => shift.describe(),
            None if by_levels => levels.as_ref().map(Levels::describe),
            None => None,
        };
        Ok((span, out.join("\n"), how))
    }
}

/// OpenCode's size rule, the floor: a match of `lines` lines (`span_len` bytes, trimmed) is too
/// large for an `old_string` of `old_lines` lines (`old_len` bytes, trimmed) when it has at
/// least `max(r + 3, 2r)` lines, or, for several lines, more than `max(len + 500, 4 len)` bytes.
fn too_large_span(old_lines: usize, old_len: usize, lines: usize, span_len: usize) -> bool {
    let r = old_lines.max(1);
    lines >= (r + 3).max(2 * r) || (r > 1 && span_len > (old_len + 500).max(4 * old_len))
}

fn old_index(p: &Pair) -> Option<usize> {
    match *p {
        Pair::Both { o, .. } | Pair::OldOnly { o } => Some(o),
        Pair::FileOnly { .. } => None,
    }
}

/// Lines `old` and `block` in order: equal lines paired, replaced runs paired as far as they go.
fn align(old: &[&str], block: &[&str]) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for op in similar::capture_diff_slices(Algorithm::Myers, old, block) {
        match op {
            DiffOp::Equal { old_index, new_index, len } => {
                pairs.extend((0..len).map(|k| Pair::Both { o: old_index + k, f: new_index + k, eq: true }));
            }
            DiffOp::Delete { old_index, old_len, .. } => {
                pairs.extend((0..old_len).map(|k| Pair::OldOnly { o: old_index + k }));
            }
            DiffOp::Insert { new_index, new_len, .. } => {
                pairs.extend((0..new_len).map(|k| Pair::FileOnly { f: new_index + k }));
            }
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                let both = old_len.min(new_len);
                pairs.extend((0..both).map(|k| Pair::Both { o: old_index + k, f: new_index + k, eq: false }));
                pairs.extend((both..old_len).map(|k| Pair::OldOnly { o: old_index + k }));
                pairs.extend((both..new_len).map(|k| Pair::FileOnly { f: new_index + k }));
            }
        }
    }
    pairs
}

/// `line` with typographic punctuation in ASCII, each character that `file` does not have.
fn ascii_unless_in(line: &str, file: &str) -> String {
    line.chars()
        .map(|ch| match normalize_char(ch) {
            ascii if ascii != ch && !file.contains(ch) => ascii,
            _ => ch,
        })
        .collect()
}

/// A character read as itself.
fn same(c: char) -> char {
    c
}

/// A line read character for character through a map (punctuation as ASCII), with the way
/// back to the line's own byte offsets.
struct Mapped<'a> {
    text: Cow<'a, str>,
    /// For each character of `text` (and its end): its offset there and in the line.
    offsets: Vec<(usize, usize)>,
}

impl<'a> Mapped<'a> {
    fn new(line: &'a str, map: fn(char) -> char) -> Self {
        if line.chars().all(|c| map(c) == c) {
            return Mapped { text: Cow::Borrowed(line), offsets: Vec::new() };
        }
        let mut text = String::with_capacity(line.len());
        let mut offsets = Vec::with_capacity(line.len() + 1);
        for (at, c) in line.char_indices() {
            offsets.push((text.len(), at));
            text.push(map(c));
        }
        offsets.push((text.len(), line.len()));
        Mapped { text: Cow::Owned(text), offsets }
    }

    /// The line's own offset of offset `at` (a character boundary) of the mapped text.
    fn original(&self, at: usize) -> usize {
        if self.offsets.is_empty() {
            return at;
        }
        match self.offsets.binary_search_by_key(&at, |p| p.0) {
            Ok(i) => self.offsets[i].1,
            Err(i) => self.offsets[i.saturating_sub(1)].1,
        }
    }
}

/// [`partial_prefix`] with both lines read through `map`; the offset in `file_line` itself.
fn partial_prefix_mapped(file_line: &str, old_first: &str, map: fn(char) -> char) -> Option<usize> {
    let file = Mapped::new(file_line, map);
    let old = Mapped::new(old_first, map);
    partial_prefix(&file.text, &old.text).map(|at| file.original(at))
}

/// Where a partial first line starts in `file_line`: `old_first` (trimmed) is its tail, at a
/// word boundary, and long enough to mean something.
fn partial_prefix(file_line: &str, old_first: &str) -> Option<usize> {
    let tail = old_first.trim();
    let body = file_line.trim_end();
    if tail.chars().count() < 4 || !body.ends_with(tail) || body.len() == tail.len() {
        return None;
    }
    let at = body.len() - tail.len();
    let before = body[..at].chars().next_back()?;
    let first = tail.chars().next()?;
    let word = |c: char| c.is_alphanumeric() || c == '_';
    (!(word(before) && word(first))).then_some(at)
}

/// From `start` in `line`, the words in order with any whitespace between; the end offset.
/// The match never starts or ends inside a word of the line, and two words that would join
/// into one (both sides word characters) need whitespace between them.
fn match_words(line: &str, start: usize, words: &[&str]) -> Option<usize> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let joins = |left: Option<char>, right: Option<char>| left.is_some_and(word) && right.is_some_and(word);
    if joins(line[..start].chars().next_back(), words.first()?.chars().next()) {
        return None;
    }
    let mut at = start;
    for (i, w) in words.iter().enumerate() {
        if i > 0 {
            let skipped = line.len() - line[at..].trim_start().len();
            if skipped == at && joins(line[..at].chars().next_back(), w.chars().next()) {
                return None;
            }
            at = skipped;
        }
        if !line[at..].starts_with(w) {
            return None;
        }
        at += w.len();
    }
    if joins(line[..at].chars().next_back(), line[at..].chars().next()) {
        return None;
    }
    Some(at)
}

/// How the matched block's indentation relates to `old_string`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Shift {
    /// The same.
    Same,
    /// The file has this much more in front of every line.
    Add(String),
    /// The file has this much less.
    Remove(String),
    /// Spaces for tabs or tabs for spaces (`width` spaces a tab), shifted by `delta` levels.
    Convert { old_tabs: bool, width: usize, delta: isize },
}

/// How old_string's indentation maps to the file's when no uniform [`Shift`] does: depth by
/// depth, from the lines both have.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Levels {
    /// Each indentation of old_string's matched lines and the file's for it (`None`: the file
    /// has several).
    seen: Vec<(String, Option<String>)>,
    /// Indentation levels mapped linearly: old_string's unit, the file's unit, and how many
    /// levels deeper the file is (`2 spaces → 4 spaces, +0` for a block copied with 2-space
    /// indentation from a 4-space file), when every matched line fits one such mapping.
    linear: Option<(Unit, Unit, isize)>,
    /// The uniform shift of the lines that continue no other (outside brackets), if any.
    shift: Option<Shift>,
    /// Like `seen`, for continuation lines (inside a bracket or after a `\`): their indentation
    /// is alignment, not depth, so they map only to each other, indentation for indentation.
    continued: Vec<(String, Option<String>)>,
}

/// One level of indentation: `width` spaces or tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Unit {
    tabs: bool,
    width: usize,
}

impl Levels {
    fn measure(plan: &Plan<'_>, c: &Candidate) -> Levels {
        let all = indent_pairs(plan, c);
        let pairs: Vec<(&str, &str)> = all.iter().filter(|p| !p.2).map(|p| (p.0, p.1)).collect();
        let continued: Vec<(&str, &str)> = all.iter().filter(|p| p.2).map(|p| (p.0, p.1)).collect();
        let table = |pairs: &[(&str, &str)]| {
            let mut seen: Vec<(String, Option<String>)> = Vec::new();
            for &(o, f) in pairs {
                match seen.iter_mut().find(|(known, _)| known == o) {
                    Some((_, mapped)) if mapped.as_deref() != Some(f) => *mapped = None,
                    Some(_) => {}
                    None => seen.push((o.to_string(), Some(f.to_string()))),
                }
            }
            seen
        };
        Levels {
            seen: table(&pairs),
            linear: Levels::linear(&pairs),
            shift: if pairs.is_empty() { None } else { Shift::between(&pairs) },
            continued: table(&continued),
        }
    }

    /// The one linear mapping of levels the pairs fit, if any: each side indents with one
    /// character, its unit the largest that divides all its indentations.
    fn linear(pairs: &[(&str, &str)]) -> Option<(Unit, Unit, isize)> {
        let unit = |side: &mut dyn Iterator<Item = &str>| -> Option<Unit> {
            let (mut tabs, mut spaces, mut width) = (false, false, 0usize);
            for ws in side {
                tabs |= ws.contains('\t');
                spaces |= ws.contains(' ');
                width = gcd(width, ws.len());
            }
            (!(tabs && spaces) && width > 0).then_some(Unit { tabs, width })
        };
        let old = unit(&mut pairs.iter().map(|p| p.0))?;
        let file = unit(&mut pairs.iter().map(|p| p.1))?;
        let delta = |(o, f): &(&str, &str)| (f.len() / file.width) as isize - (o.len() / old.width) as isize;
        let first = delta(pairs.first()?);
        pairs.iter().all(|p| delta(p) == first).then_some((old, file, first))
    }

    /// `line` (from new_string; `continued` when it continues the line before it) at the
    /// file's indentation for its depth; `None` when that is unclear (a depth no matched line
    /// has, and no linear mapping of levels; a continuation line aligned unlike any matched one).
    fn apply(&self, line: &str, continued: bool) -> Option<String> {
        if is_blank(line) {
            return Some(line.to_string());
        }
        let ws = leading_ws(line);
        let rest = &line[ws.len()..];
        if continued {
            let (_, mapped) = self.continued.iter().find(|(o, _)| o == ws)?;
            return mapped.as_ref().map(|f| format!("{f}{rest}"));
        }
        if let Some(shift) = &self.shift {
            return Some(shift.apply(line));
        }
        if let Some((_, mapped)) = self.seen.iter().find(|(o, _)| o == ws) {
            // A depth old_string's lines show but the file indents two ways has no answer.
            return mapped.as_ref().map(|f| format!("{f}{rest}"));
        }
        let (old, file, delta) = self.linear?;
        let ch = if old.tabs { '\t' } else { ' ' };
        if !ws.chars().all(|c| c == ch) || !ws.len().is_multiple_of(old.width) {
            return None;
        }
        let level = usize::try_from((ws.len() / old.width) as isize + delta).ok()?;
        let indent = (if file.tabs { "\t" } else { " " }).repeat(level * file.width);
        Some(format!("{indent}{rest}"))
    }

    /// How new_string was re-indented, for the model.
    fn describe(&self) -> String {
        if let Some(how) = self.shift.as_ref().and_then(Shift::describe) {
            return format!("{how} (the lines that continue another kept as the file has them)");
        }
        match self.linear {
            Some((old, file, _)) if old != file => {
                let unit = |u: Unit| crate::fs::plural(u.width, if u.tabs { "tab" } else { "space" });
                format!("re-indented level by level ({} a level in old_string, {} in the file)", unit(old), unit(file))
            }
            _ => "re-indented line by line like the lines of old_string at the same depth".into(),
        }
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// An indentation as the model is told it.
fn describe_ws(ws: &str) -> String {
    let tabs = ws.chars().filter(|&c| c == '\t').count();
    match (ws.len() - tabs, tabs) {
        (0, 0) => "not at all".into(),
        (s, 0) => crate::fs::plural(s, "space"),
        (0, t) => crate::fs::plural(t, "tab"),
        (s, t) => format!("{} and {}", crate::fs::plural(s, "space"), crate::fs::plural(t, "tab")),
    }
}

/// The indentation of each non-blank old line and of the (equal) file line it matched, and
/// whether either continues the line before it (see [`continuations`]).
fn indent_pairs<'a>(plan: &Plan<'a>, c: &Candidate) -> Vec<(&'a str, &'a str, bool)> {
    let block = &plan.text.lines[c.first..=c.last];
    let old_cont = continuations(&plan.old_lines);
    let file_cont = continuations(block);
    c.pairs
        .iter()
        .filter_map(|p| match *p {
            Pair::Both { o, f, eq: true } if !(f == 0 && c.prefix > 0) => {
                Some((plan.old_lines[o], block[f], old_cont[o] || file_cont[f]))
            }
            _ => None,
        })
        .filter(|(o, f, _)| !is_blank(o) && !is_blank(f))
        .map(|(o, f, cont)| (leading_ws(o), leading_ws(f), cont))
        .collect()
}

/// For each line, whether it continues the one before it: it starts inside a `(` or `[` opened
/// above (outside quotes), or the line before ends with `\`. Its indentation is alignment, not
/// a block's depth.
fn continuations(lines: &[&str]) -> Vec<bool> {
    let mut out = Vec::with_capacity(lines.len());
    let mut depth = 0usize;
    let mut backslash = false;
    for line in lines {
        out.push(depth > 0 || backslash);
        let mut chars = line.chars().peekable();
        while let Some(ch) = chars.next() {
            match ch {
                // A quoted string, when it closes on this line (a Rust lifetime does not).
                '"' | '\'' | '`' if closes(chars.clone(), ch) => {
                    while let Some(q) = chars.next() {
                        if q == '\\' {
                            chars.next();
                        } else if q == ch {
                            break;
                        }
                    }
                }
                '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        backslash = line.trim_end().ends_with('\\');
    }
    out
}

/// Whether `quote` appears, unescaped, in what is left of the line.
fn closes(mut rest: impl Iterator<Item = char>, quote: char) -> bool {
    while let Some(c) = rest.next() {
        if c == '\\' {
            rest.next();
        } else if c == quote {
            return true;
        }
    }
    false
}

impl Shift {
    /// The uniform shift between old lines and their (equal) file lines, if there is one.
    fn measure(plan: &Plan<'_>, c: &Candidate) -> Option<Shift> {
        let pairs: Vec<(&str, &str)> = indent_pairs(plan, c).into_iter().map(|(o, f, _)| (o, f)).collect();
        Shift::between(&pairs)
    }

    fn between(pairs: &[(&str, &str)]) -> Option<Shift> {
        if pairs.iter().all(|(o, f)| o == f) {
            return Some(Shift::Same);
        }
        let (o0, f0) = pairs[0];
        if f0.len() > o0.len() && f0.ends_with(o0) {
            let add = &f0[..f0.len() - o0.len()];
            if pairs.iter().all(|(o, f)| f.len() == o.len() + add.len() && f.starts_with(add) && f.ends_with(o)) {
                return Some(Shift::Add(add.to_string()));
            }
        }
        if o0.len() > f0.len() && o0.ends_with(f0) {
            let remove = &o0[..o0.len() - f0.len()];
            if pairs.iter().all(|(o, f)| o.len() == f.len() + remove.len() && o.starts_with(remove) && o.ends_with(f)) {
                return Some(Shift::Remove(remove.to_string()));
            }
        }
        let only = |s: &str, c: char| s.chars().all(|x| x == c);
        for old_tabs in [false, true] {
            let (old_c, file_c) = if old_tabs { ('\t', ' ') } else { (' ', '\t') };
            if !pairs.iter().all(|(o, f)| only(o, old_c) && only(f, file_c)) {
                continue;
            }
            for width in [4usize, 2, 8, 3] {
                let levels = |(o, f): &(&str, &str)| -> Option<isize> {
                    let (spaces, tabs) = if old_tabs { (f.len(), o.len()) } else { (o.len(), f.len()) };
                    if spaces % width != 0 {
                        return None;
                    }
                    let space_levels = (spaces / width) as isize;
                    Some(if old_tabs { space_levels - tabs as isize } else { tabs as isize - space_levels })
                };
                let Some(delta) = levels(&pairs[0]) else { continue };
                if pairs.iter().all(|p| levels(p) == Some(delta)) {
                    return Some(Shift::Convert { old_tabs, width, delta });
                }
            }
        }
        None
    }

    /// `line` (from `new_string`) with the same shift applied.
    fn apply(&self, line: &str) -> String {
        if is_blank(line) {
            return line.to_string();
        }
        match self {
            Shift::Same => line.to_string(),
            Shift::Add(p) => format!("{p}{line}"),
            Shift::Remove(p) => match line.strip_prefix(p.as_str()) {
                Some(rest) => rest.to_string(),
                None => {
                    let ws = leading_ws(line);
                    let cut = ws.len().min(p.len());
                    line[cut..].to_string()
                }
            },
            Shift::Convert { old_tabs, width, delta } => {
                let ws = leading_ws(line);
                let rest = &line[ws.len()..];
                if *old_tabs {
                    if !ws.chars().all(|c| c == '\t') {
                        return line.to_string();
                    }
                    let level = (ws.len() as isize + delta).max(0) as usize;
                    format!("{}{rest}", " ".repeat(level * width))
                } else {
                    if !ws.chars().all(|c| c == ' ') {
                        return line.to_string();
                    }
                    let level = ((ws.len() / width) as isize + delta).max(0) as usize;
                    format!("{}{}{rest}", "\t".repeat(level), " ".repeat(ws.len() % width))
                }
            }
        }
    }

    /// How new_string was re-indented, for the model; `None` when it was not.
    fn describe(&self) -> Option<String> {
        let amount = |s: &str| {
            let tabs = s.chars().filter(|&c| c == '\t').count();
            let spaces = s.len() - tabs;
            match (spaces, tabs) {
                (s, 0) => crate::fs::plural(s, "space"),
                (0, t) => crate::fs::plural(t, "tab"),
                (s, t) => format!("{} and {}", crate::fs::plural(s, "space"), crate::fs::plural(t, "tab")),
            }
        };
        match self {
            Shift::Same => None,
            Shift::Add(p) => Some(format!("indented {} more to fit", amount(p))),
            Shift::Remove(p) => Some(format!("indented {} less to fit", amount(p))),
            Shift::Convert { old_tabs: false, width, .. } => {
                Some(format!("indented with tabs ({width} spaces a tab) like the file"))
            }
            Shift::Convert { old_tabs: true, width, .. } => {
                Some(format!("indented with spaces ({width} a tab) like the file"))
            }
        }
    }
}

/// The region of the file most like `old`: the window with the most lines equal (trimmed) to
/// one of its lines, else the most shared words.
fn closest(text: &Text<'_>, old: &str) -> Option<Closest> {
    let (old_lines, _) = split_lines(old);
    let r = old_lines.len().max(1);
    let n = text.lines.len();
    if n == 0 {
        return None;
    }
    let wanted: HashSet<&str> = old_lines.iter().map(|l| l.trim()).filter(|l| l.len() > 2).collect();
    let words: HashSet<&str> =
        old.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| w.len() >= 3).collect();
    let line_score: Vec<u32> = text
        .lines
        .iter()
        .map(|l| {
            let t = l.trim();
            if wanted.contains(t) {
                return 1000;
            }
            t.split(|c: char| !(c.is_alphanumeric() || c == '_')).filter(|w| words.contains(w)).count() as u32
        })
        .collect();
    let width = r.min(n);
    let mut sum: u32 = line_score[..width].iter().sum();
    let (mut best, mut best_sum) = (0usize, sum);
    for start in 1..=n - width {
        sum = sum - line_score[start - 1] + line_score[start + width - 1];
        if sum > best_sum {
            best = start;
            best_sum = sum;
        }
    }
    if best_sum == 0 {
        return None;
    }
    let last = best + width - 1;
    Some(Closest { first: best + 1, last: last + 1, text: text.lines[best..=last].join("\n"), old: old.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(content: &str, old: &str, new: &str) -> Result<Applied, Refusal> {
        apply(&Edit { content, old, new, replace_all: false, crlf: false })
    }

    #[test]
    fn shift_between_recognises_adds_removes_and_tab_conversion() {
        assert_eq!(Shift::between(&[("", "    "), ("  ", "      ")]), Some(Shift::Add("    ".into())));
        assert_eq!(Shift::between(&[("    ", ""), ("      ", "  ")]), Some(Shift::Remove("    ".into())));
        assert_eq!(
            Shift::between(&[("    ", "\t"), ("        ", "\t\t")]),
            Some(Shift::Convert { old_tabs: false, width: 4, delta: 0 })
        );
        assert_eq!(Shift::between(&[("  ", "    "), ("  ", "  ")]), None);
        assert_eq!(Shift::Convert { old_tabs: false, width: 4, delta: 1 }.apply("    x"), "\t\tx");
        assert_eq!(Shift::Convert { old_tabs: true, width: 2, delta: 0 }.apply("\t\tx"), "    x");
    }

    #[test]
    fn line_number_prefixes_need_every_line_and_consecutive_numbers() {
        let stripped = |t: &str| strip_line_numbers(t).map(|(text, _, _)| text);
        assert_eq!(stripped("12: a\n13: b").as_deref(), Some("a\nb"));
        assert_eq!(stripped("    12\ta\n    13\tb\n").as_deref(), Some("a\nb\n"));
        assert_eq!(stripped("12: a\n14: b"), None);
        assert_eq!(stripped("12: a\nb"), None);
        assert_eq!(stripped("7:\n8: x").as_deref(), Some("\nx"));
        // read never pads its numbers, and one prefix style throughout.
        assert_eq!(stripped("  200: ok\n  201: x"), None);
        assert_eq!(stripped("12: a\n13\tb"), None);
    }

    #[test]
    fn unescape_reads_common_escapes_and_keeps_others() {
        assert_eq!(unescape(r#"a\nb\t\"c\" \d"#), "a\nb\t\"c\" \\d");
    }

    #[test]
    fn partial_prefix_needs_a_boundary_and_some_length() {
        assert_eq!(partial_prefix("    let x = compute(a,", "compute(a,"), Some(12));
        assert_eq!(partial_prefix("    recompute(a,", "compute(a,"), None);
        assert_eq!(partial_prefix("    x = f(", "f("), None);
    }

    #[test]
    fn words_never_match_inside_identifiers() {
        assert_eq!(match_words("max=10", 2, &["x", "=", "1"]), None);
        assert_eq!(match_words("x=1;", 0, &["x", "=", "1;"]), Some(4));
        assert_eq!(match_words("foobar()", 0, &["foo", "bar()"]), None);
        assert_eq!(match_words("if (a &&  b) {", 4, &["a", "&&", "b)"]), Some(12));
    }

    #[test]
    fn deleting_lines_removes_their_newline() {
        let out = run("a\n  b\n  c\nd\n", "b\nc\n", "").unwrap();
        assert_eq!(out.content, "a\nd\n");
        assert_eq!(out.strategy, Strategy::Indentation);
    }

    /// Found by `edit_props` in CI: a loose match of the file's last line and the empty line
    /// after its final newline took the newline of the line before too.
    #[test]
    fn deleting_the_last_line_with_a_blank_after_it_keeps_the_line_before() {
        let out = run("a\n  \nb\n\tif x {\n", "\tif x {\n    ", "").unwrap();
        assert_eq!(out.strategy, Strategy::TrailingWhitespace);
        assert_eq!(out.content, "a\n  \nb\n");
        let out = run("a\nb  \n", "b\n  ", "").unwrap();
        assert_eq!(out.content, "a\n");
        let out = run("a\n  b", "b\n", "").unwrap();
        assert_eq!((out.content.as_str(), out.strategy), ("a", Strategy::Indentation));
    }
}
