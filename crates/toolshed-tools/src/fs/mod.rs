//! The file tools: `read`, `list`, `glob`, `grep`, `write` and `edit`, one module each, all
//! confined to the worktree through [`toolshed_path`]. This module holds what several of them
//! share: binary sniffing, "did you mean" suggestions, walking, globs, text style and diffs.

pub mod buffers;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod list;
pub mod read;
pub mod write;

use std::borrow::Cow;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;
use toolshed_core::ToolError;
use toolshed_core::tool::image_mime;

use toolshed_path::ResolvedPath;

pub use edit::EditTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use list::ListTool;
pub use read::ReadTool;
/// The special-file refusal every tool shares lives with the path confinement.
pub use toolshed_path::{open_regular, read_regular, special_file_error, special_kind};
pub use write::WriteTool;

/// Longest line, in characters, a file tool shows before cutting it.
pub const MAX_LINE_CHARS: usize = 2000;

/// How many bytes of a file are sniffed to tell text from binary.
const SNIFF_BYTES: usize = 4096;

/// Extensions that are binary whatever their first bytes say (OpenCode's list).
const BINARY_EXTENSIONS: &[&str] = &[
    "zip", "tar", "gz", "tgz", "bz2", "xz", "zst", "7z", "rar", "exe", "dll", "so", "dylib", "class", "jar", "war",
    "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "bin", "dat", "obj", "o", "a", "lib", "wasm",
    "pyc", "pyo", "pdf", "sqlite", "db", "ico", "bmp", "tiff", "mp3", "mp4", "mov", "avi", "ogg", "wav", "flac",
    "woff", "woff2", "ttf", "otf", "eot",
];

/// Directories no listing or search wants: version-control data and tool caches.
pub const NOISE_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    "target",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".next",
    ".nuxt",
    ".cache",
    ".gradle",
    ".idea",
    ".zig-cache",
    "zig-out",
    ".terraform",
];

/// What the first bytes of a file say it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sniff {
    /// Text (UTF-8 or close to it).
    Text,
    /// An image a model can look at, with its MIME type.
    Image(&'static str),
    /// Binary; the reason says why, for the model.
    Binary(String),
}

/// Tells text from images and other binary data by the extension and the first 4 KiB
/// (OpenCode's rule: a NUL byte, or more than 30 % control bytes, means binary).
pub fn sniff(path: &Path, sample: &[u8]) -> Sniff {
    if let Some(mime) = image_mime(sample) {
        return Sniff::Image(mime);
    }
    let ext = path.extension().map(|e| e.to_string_lossy().to_ascii_lowercase()).unwrap_or_default();
    if BINARY_EXTENSIONS.contains(&ext.as_str()) {
        return Sniff::Binary(format!("its extension `.{ext}` marks a binary format"));
    }
    if sample.starts_with(&[0xFF, 0xFE]) || sample.starts_with(&[0xFE, 0xFF]) {
        return Sniff::Binary(
            "it is UTF-16 text, which the file tools do not handle; convert it to UTF-8 first".into(),
        );
    }
    if let Some(at) = memchr_nul(sample) {
        return Sniff::Binary(format!("it contains a NUL byte at offset {at}"));
    }
    let control = sample.iter().filter(|&&b| b < 9 || (b > 13 && b < 32)).count();
    if !sample.is_empty() && control * 10 > sample.len() * 3 {
        return Sniff::Binary(format!("{control} of its first {} bytes are control characters", sample.len()));
    }
    Sniff::Text
}

fn memchr_nul(sample: &[u8]) -> Option<usize> {
    sample.iter().position(|&b| b == 0)
}

/// Reads up to [`SNIFF_BYTES`] from the start of a file and sniffs them.
pub fn sniff_file(path: &Path) -> std::io::Result<Sniff> {
    let mut file = match open_regular(path)? {
        Ok(file) => file,
        Err(kind) => return Err(std::io::Error::other(format!("it is {kind}, not a regular file"))),
    };
    let mut sample = Vec::with_capacity(SNIFF_BYTES);
    (&mut file).take(SNIFF_BYTES as u64).read_to_end(&mut sample)?;
    Ok(sniff(path, &sample))
}

/// Cuts `line` to `max` characters, adding a marker saying so.
pub fn cut_line(line: &str, max: usize) -> Cow<'_, str> {
    match line.char_indices().nth(max) {
        None => Cow::Borrowed(line),
        Some((at, _)) => Cow::Owned(format!("{}... (line truncated to {max} chars)", &line[..at])),
    }
}

/// The "file not found" error, with up to three near paths when there are some.
pub fn not_found(path: &ResolvedPath, what: &str) -> ToolError {
    let mut message = format!("{what} not found: `{}`.", path.display());
    let near = near_paths(path, 3);
    if !near.is_empty() {
        message.push_str("\n\nDid you mean one of these?\n");
        for p in near {
            message.push_str(&p);
            message.push('\n');
        }
        message.pop();
    } else {
        message.push_str(" Use glob or list to find the right path.");
    }
    ToolError::model(message)
}

/// Up to `max` existing paths close to a missing one: siblings with a similar name, then files
/// with the same name elsewhere in the worktree.
pub fn near_paths(path: &ResolvedPath, max: usize) -> Vec<String> {
    let Some(name) = path.path().file_name().map(|n| n.to_string_lossy().to_lowercase()) else {
        return Vec::new();
    };
    let mut scored: Vec<(f64, PathBuf)> = Vec::new();
    let mut dir = path.path().parent().map(Path::to_path_buf);
    while let Some(d) = &dir {
        if d.is_dir() {
            break;
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    if let Some(dir) = dir.filter(|d| d.starts_with(path.root()) || !path.is_inside())
        && let Ok(entries) = std::fs::read_dir(&dir)
    {
        for entry in entries.flatten().take(5000) {
            let other = entry.file_name().to_string_lossy().to_lowercase();
            let score = name_similarity(&name, &other);
            if score >= 0.5 {
                scored.push((score, entry.path()));
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out: Vec<PathBuf> = scored.into_iter().map(|(_, p)| p).take(max).collect();
    if out.len() < max && path.is_inside() {
        let target = path.path().file_name().map(std::ffi::OsStr::to_os_string);
        let mut seen = 0usize;
        for entry in walker(path.root()).build().flatten() {
            seen += 1;
            if seen > 50_000 || out.len() >= max {
                break;
            }
            if entry.file_name() == target.as_deref().unwrap_or_default() && !out.iter().any(|p| p == entry.path()) {
                out.push(entry.into_path());
            }
        }
    }
    let cwd_root = path.root().to_path_buf();
    out.into_iter()
        .map(|p| {
            let shown = p.strip_prefix(&cwd_root).map(Path::to_path_buf).unwrap_or(p.clone());
            let mut s = shown.to_string_lossy().into_owned();
            if p.is_dir() {
                s.push('/');
            }
            s
        })
        .collect()
}

/// How alike two file names are (0 to 1): containment counts high, else edit distance.
fn name_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    if !a.is_empty() && !b.is_empty() && (a.contains(b) || b.contains(a)) {
        return 0.9;
    }
    let stem = |s: &str| s.rsplit_once('.').map_or(s.to_string(), |(stem, _)| stem.to_string());
    let whole = strsim::normalized_levenshtein(a, b);
    let stems = strsim::normalized_levenshtein(&stem(a), &stem(b));
    whole.max(stems * 0.9)
}

/// toolshed's data directory where a walk of `dir` would come upon it: never walked into from
/// above (a worktree that holds it: a home directory kept in git); a walk that starts inside
/// it (the saved outputs) walks it.
pub(crate) fn private_below(dir: &Path) -> Option<PathBuf> {
    toolshed_path::private_dir(dir).filter(|d| !dir.starts_with(d))
}

/// A walker over `dir` the way the file tools see a tree: `.gitignore`, `.ignore` and git's
/// excludes honoured (even outside a git repository), hidden files included, `.git` and other
/// version-control directories skipped, links not followed, toolshed's own temporary files
/// (`.NAME.toolshed-PID-N.tmp`, see `toolshed_patch::temp`) never shown, and toolshed's data
/// directory not entered ([`private_below`]).
pub fn walker(dir: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(dir);
    let private = private_below(dir);
    builder.hidden(false).require_git(false).follow_links(false).filter_entry(move |e| {
        !(e.depth() > 0
            && (toolshed_patch::temp::is_temp(e.file_name())
                || e.file_type().is_some_and(|t| t.is_dir())
                    && (matches!(e.file_name().to_str(), Some(".git" | ".hg" | ".svn"))
                        || private.as_deref() == Some(e.path()))))
    });
    builder
}

/// `pattern` with its backslashes read as Windows separators (`src\*.rs` is `src/*.rs`), except
/// `\!` at the start of a name: an escaped `!` that is the name's own (`\!notes.md`,
/// `docs/\!todo.md`). After a name's first character a backslash is a separator, so
/// `docs\!todo.md` reads as `docs/!todo.md` and is refused, never taken as `docs!todo.md`.
fn with_separators(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let name_start = out.is_empty() || out.ends_with(['/', '{', ',']);
            out.push(if name_start && chars.peek() == Some(&'!') { '\\' } else { '/' });
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `pattern` means to leave files out somewhere a glob cannot: a `!` at the start of any
/// of its names or brace alternatives (`!*.md`, `src/!*.rs`, `./!x`, `{a,!b}`) or an extended
/// glob `!(…)`. A glob would take the `!` literally and silently match nothing. `[!a]` (a negated
/// class) is a glob's own, and `\!` at a name's start is a `!` meant literally (a file named
/// `!notes.md` is `\!notes.md`).
pub(crate) fn negates(pattern: &str) -> bool {
    let pattern = with_separators(pattern);
    let mut chars = pattern.chars().peekable();
    let (mut name_start, mut class, mut braces) = (true, false, 0usize);
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
                name_start = false;
            }
            ']' if class => class = false,
            _ if class => {}
            '[' => (class, name_start) = (true, false),
            '/' => name_start = true,
            '{' => (braces, name_start) = (braces + 1, true),
            '}' if braces > 0 => (braces, name_start) = (braces - 1, false),
            ',' if braces > 0 => name_start = true,
            '!' if name_start || chars.peek() == Some(&'(') => return true,
            c if c.is_whitespace() && name_start => {}
            _ => name_start = false,
        }
    }
    false
}

/// Whether `pattern` is a list of globs (`*.rs,*.toml`, `*.@(rs|toml)`): a `,` or `|` outside
/// braces and brackets, which a glob would take literally and so match nothing.
fn several_globs(pattern: &str) -> bool {
    let (mut braces, mut brackets) = (0usize, false);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if !brackets => brackets = true,
            ']' if brackets => brackets = false,
            '{' if !brackets => braces += 1,
            '}' if !brackets => braces = braces.saturating_sub(1),
            ',' | '|' if !brackets && braces == 0 => return true,
            _ => {}
        }
    }
    false
}

/// A compiled path glob with ripgrep's `-g` meaning: a glob without `/` matches a file name at
/// any depth; one with `/` matches the path relative to the search directory, where `*` stays
/// within one name and `**` crosses directories. Braces (`*.{ts,tsx}`) work.
#[derive(Clone, Debug)]
pub struct PathGlob {
    matcher: GlobMatcher,
    by_name: bool,
}

impl PathGlob {
    /// Compiles `pattern`, or explains to the model what is wrong with it.
    pub fn new(pattern: &str, base: &Path) -> Result<PathGlob, ToolError> {
        let mut text = with_separators(pattern.trim());
        let base_text = format!("{}/", base.to_string_lossy());
        if let Some(rest) = text.strip_prefix(&base_text) {
            text = rest.to_string();
        }
        while let Some(rest) = text.strip_prefix("./") {
            text = rest.to_string();
        }
        if text.starts_with('/') {
            // `/src/*.rs` usually means the worktree's `src`; an absolute directory that exists
            // elsewhere is a search outside this directory, which a pattern cannot do.
            let literal = &text[..text.find(['*', '?', '[', '{']).unwrap_or(text.len())];
            let literal_dir = &literal[..literal.rfind('/').unwrap_or(0)];
            let relative = literal_dir.trim_start_matches('/');
            if !literal_dir.is_empty() && Path::new(literal_dir).is_dir() && !base.join(relative).is_dir() {
                return Err(ToolError::model(format!(
                    "The pattern `{pattern}` names a directory outside the one searched (`{}`). Send the directory as `path` (\"path\": \"{literal_dir}\") and the rest as the pattern.",
                    base.display()
                )));
            }
            text = text.trim_start_matches('/').to_string();
        }
        // `../x/*` climbs out of the directory searched, which a pattern never does: the
        // directory goes in `path` (review 14: it was "no files match").
        if text == ".." || text.starts_with("../") || text.contains("/../") || text.ends_with("/..") {
            let literal = &text[..text.find(['*', '?', '[', '{']).unwrap_or(text.len())];
            let literal_dir = literal.rfind('/').map_or(literal, |at| &literal[..at]);
            return Err(ToolError::model(format!(
                "The pattern `{pattern}` climbs out of the directory searched (`{}`) with `..`, which a pattern cannot do. Send the directory as `path` (\"path\": \"{literal_dir}\") and the rest as the pattern.",
                base.display()
            )));
        }
        if text.is_empty() {
            return Err(ToolError::model("The glob pattern is empty. Send a pattern such as `**/*.rs` or `src/*.ts`."));
        }
        if several_globs(&text) {
            return Err(ToolError::model(format!(
                "`{pattern}` holds several globs, and a pattern is one glob: write the alternatives in braces, such as `*.{{rs,toml}}` or `{{src,tests}}/**/*.rs`."
            )));
        }
        let by_name = !text.contains('/');
        let glob = GlobBuilder::new(&text).literal_separator(true).backslash_escape(true).build().map_err(|e| {
            ToolError::model(format!(
                "The glob pattern `{pattern}` is invalid: {e}. Send a valid glob such as `**/*.rs`."
            ))
        })?;
        Ok(PathGlob { matcher: glob.compile_matcher(), by_name })
    }

    /// Whether the file at `path`, found under the search directory `base`, matches (the
    /// relative path is only computed when the glob needs it).
    pub fn matches_under(&self, base: &Path, path: &Path) -> bool {
        if self.by_name {
            path.file_name().is_some_and(|n| self.matcher.is_match(n))
        } else {
            self.matcher.is_match(path.strip_prefix(base).unwrap_or(path))
        }
    }

    /// Whether the file at `relative` (to the search directory) matches.
    pub fn is_match(&self, relative: &Path) -> bool {
        if self.by_name {
            relative.file_name().is_some_and(|n| self.matcher.is_match(n))
        } else {
            self.matcher.is_match(relative)
        }
    }
}

/// The byte-order mark and line-ending style of a text file, kept across edits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TextStyle {
    /// The file starts with a UTF-8 byte-order mark.
    pub bom: bool,
    /// Every line ends in `\r\n`.
    pub crlf: bool,
}

const BOM: &str = "\u{feff}";

impl TextStyle {
    /// The style of `text`, and the text without its BOM and, for a CRLF file, with `\n` endings.
    pub fn split(text: &str) -> (TextStyle, String) {
        let (bom, body) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let crlf = is_crlf(body);
        let body = if crlf { body.replace("\r\n", "\n") } else { body.to_string() };
        (TextStyle { bom, crlf }, body)
    }

    /// `body` (with `\n` endings, as [`TextStyle::split`] gives it) in this style. Every `\n`
    /// gets its `\r` back and nothing else changes, so `apply` undoes `split` byte for byte: a
    /// `\r` of the file's own before a line ending (`x\r\r\n`, which `split` makes `x\r\n`)
    /// is text and stays.
    pub fn apply(&self, body: &str) -> String {
        let mut out = String::with_capacity(body.len() + body.len() / 30 + 3);
        if self.bom {
            out.push_str(BOM);
        }
        if self.crlf {
            out.push_str(&body.replace('\n', "\r\n"));
        } else {
            out.push_str(body);
        }
        out
    }
}

/// `text` whose lines end in `\r\n` or `\n` (a mixture a model may send) with `\n` endings
/// only, ready for [`TextStyle::apply`]: one `\r` before each `\n` is the line ending's.
pub fn lf_endings(text: &str) -> Cow<'_, str> {
    if text.contains("\r\n") { Cow::Owned(text.replace("\r\n", "\n")) } else { Cow::Borrowed(text) }
}

/// Whether every newline in `text` is part of `\r\n` (and there is at least one).
pub fn is_crlf(text: &str) -> bool {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines > 0 && text.matches("\r\n").count() == newlines
}

/// A unified diff of `old` to `new` labelled with `name`, whole: every line of both, none cut
/// (what a person accepts must be all there, with the context that gives a line its meaning,
/// such as the TOML table it is in).
pub fn full_diff(old: &str, new: &str, name: &str) -> String {
    let diff = similar::TextDiff::configure().diff_lines(old, new);
    let whole = old.lines().count().max(new.lines().count());
    diff.unified_diff().context_radius(whole).header(&format!("a/{name}"), &format!("b/{name}")).to_string()
}

/// A unified diff of `old` to `new` labelled with `name`, with `context` lines around changes,
/// cut after `max_lines` lines with a note.
pub fn unified_diff(old: &str, new: &str, name: &str, context: usize, max_lines: usize) -> String {
    let diff = similar::TextDiff::configure().timeout(std::time::Duration::from_millis(500)).diff_lines(old, new);
    let text =
        diff.unified_diff().context_radius(context).header(&format!("a/{name}"), &format!("b/{name}")).to_string();
    let mut out = String::new();
    let total = text.lines().count();
    for (n, line) in text.lines().enumerate() {
        if n >= max_lines {
            out.push_str(&format!("... ({} more diff lines)\n", total - max_lines));
            break;
        }
        out.push_str(&cut_line(line, 500));
        out.push('\n');
    }
    out
}

/// Lines added and removed between `old` and `new`.
pub fn diff_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = similar::TextDiff::configure().timeout(std::time::Duration::from_millis(500)).diff_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// Orders paths as their components would (`a/b` before `a-b`), but comparing bytes, which is
/// much faster than `Path::cmp` on the tens of thousands of paths a search can return.
pub fn path_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    let key = |c: &u8| if *c == b'/' { 0 } else { *c };
    a.as_os_str().as_encoded_bytes().iter().map(key).cmp(b.as_os_str().as_encoded_bytes().iter().map(key))
}

/// Runs blocking file-system work off the async runtime.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| ToolError::fatal(format!("file task failed: {e}")))?
}

/// "1 line" / "3 lines".
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_tells_text_images_and_binary_apart() {
        let p = Path::new("x.txt");
        assert_eq!(sniff(p, b"hello\nworld\n"), Sniff::Text);
        assert_eq!(sniff(p, "héllo wörld".as_bytes()), Sniff::Text);
        assert_eq!(sniff(p, b"\x89PNG\r\n\x1a\n...."), Sniff::Image("image/png"));
        assert_eq!(sniff(p, b"RIFF\0\0\0\0WEBPVP8 "), Sniff::Image("image/webp"));
        assert!(matches!(sniff(p, b"ab\0cd"), Sniff::Binary(r) if r.contains("NUL byte at offset 2")));
        assert!(matches!(sniff(Path::new("a.pyc"), b"text"), Sniff::Binary(r) if r.contains(".pyc")));
        assert!(matches!(sniff(p, &[1, 2, 3, 4, b'a']), Sniff::Binary(r) if r.contains("control")));
        assert!(matches!(sniff(p, &[0xFF, 0xFE, b'a', 0]), Sniff::Binary(r) if r.contains("UTF-16")));
    }

    #[test]
    fn cut_line_marks_long_lines() {
        assert_eq!(cut_line("short", 10), "short");
        assert_eq!(cut_line("ééééé", 3), "ééé... (line truncated to 3 chars)");
    }

    #[test]
    fn text_style_round_trips_bom_and_crlf() {
        let (style, body) = TextStyle::split("\u{feff}a\r\nb\r\n");
        assert_eq!(style, TextStyle { bom: true, crlf: true });
        assert_eq!(body, "a\nb\n");
        assert_eq!(style.apply("a\nc\n"), "\u{feff}a\r\nc\r\n");
        let (mixed, body) = TextStyle::split("a\r\nb\n");
        assert!(!mixed.crlf);
        assert_eq!(body, "a\r\nb\n");
    }

    /// Review: `x\r\r\n` in a CRLF file lost its own `\r` on the way back.
    #[test]
    fn text_style_gives_back_a_crlf_file_byte_for_byte() {
        for text in ["x\r\r\na\r\nb\r\n", "\u{feff}\r\r\n\r\n", "a\r\n\r\r\r\nb\r\n", "a\r\nb"] {
            let (style, body) = TextStyle::split(text);
            assert!(style.crlf, "{text:?}");
            assert_eq!(style.apply(&body), text, "{text:?}");
        }
    }

    #[test]
    fn path_order_matches_component_order() {
        let mut paths: Vec<&Path> = ["a-b/x", "a/b", "a", "a/b/c", "a.b", "ab", "a/a"].iter().map(Path::new).collect();
        let mut by_components = paths.clone();
        by_components.sort();
        paths.sort_by(|a, b| path_order(a, b));
        assert_eq!(paths, by_components);
    }

    #[test]
    fn path_glob_follows_ripgrep_meaning() {
        let base = Path::new("/w");
        let by_name = PathGlob::new("*.rs", base).unwrap();
        assert!(by_name.is_match(Path::new("src/deep/main.rs")));
        let anchored = PathGlob::new("src/*.rs", base).unwrap();
        assert!(anchored.is_match(Path::new("src/main.rs")));
        assert!(!anchored.is_match(Path::new("src/deep/main.rs")));
        let deep = PathGlob::new("./src/**/*.{rs,toml}", base).unwrap();
        assert!(deep.is_match(Path::new("src/a/b/c.toml")));
        let climbing = PathGlob::new("../outside/*", base).err().unwrap().to_string();
        assert!(climbing.contains("(\"path\": \"../outside\")"), "{climbing}");
        assert!(PathGlob::new("src/../../x/*.rs", base).is_err());
        assert!(PathGlob::new("a..b/*.rs", base).is_ok());
        let absolute = PathGlob::new("/w/src/*.rs", base).unwrap();
        assert!(absolute.is_match(Path::new("src/x.rs")));
        assert!(PathGlob::new("src/[", base).is_err());
    }
}
