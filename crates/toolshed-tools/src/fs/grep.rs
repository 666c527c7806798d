//! `grep`: regex search over file contents, in process with ripgrep's crates (`grep-regex`,
//! `grep-searcher`, `ignore`'s parallel walker); no external `rg`. Hits are grouped by file in
//! path order, long lines are cut around the match, binary files are skipped, and the output
//! is capped with a note saying how much more there was.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::context::CancellationToken;
use toolshed_core::permission::{Action, PermissionRequest};
use toolshed_core::tool::{Alias, ToolFlags, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};

use super::glob::{display_path, worker_threads};
use super::{PathGlob, blocking, path_order, plural, walker};
use toolshed_path::{self as path, Permitted, ResolvedPath};

/// Results shown when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;
/// Largest `limit` accepted.
const MAX_LIMIT: usize = 1000;
/// Largest `context` accepted.
const MAX_CONTEXT: usize = 10;
/// Characters of a matching line shown; longer lines are cut around the match.
pub const MAX_GREP_LINE_CHARS: usize = 400;
/// Lines kept in memory across all files (matches and context); beyond it hits are only counted.
const MAX_STORED_LINES: usize = 20_000;

const DESCRIPTION: &str = "Searches file contents for a regular expression (ripgrep syntax), skipping binary and `.gitignore`d files. Escape literal `( ) [ ] { } . * + ? | ^ $ \\` with `\\`, e.g. `fn main\\(`; matches never span lines. Content mode prints `N: text` under each file. If results are cut, narrow the search rather than raising `limit`.";

/// What grep reports: matching lines grouped by file (`content`), only the paths of files that
/// match (`files_with_matches`), or the number of matching lines per file (`count`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(description = "")] // the values say it
#[allow(missing_docs)] // variant docs would turn the schema's plain `enum` into a `oneOf`
pub enum OutputMode {
    #[default]
    Content,
    FilesWithMatches,
    Count,
}

/// Arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// The regular expression.
    #[schemars(description = "")]
    pub pattern: String,
    /// A directory or file.
    #[schemars(description = "")]
    pub path: Option<String>,
    /// A glob, e.g. `*.{ts,tsx}`.
    pub include: Option<String>,
    /// Ignore case.
    #[schemars(description = "")]
    pub case_insensitive: Option<bool>,
    /// At most 10.
    pub context: Option<u32>,
    /// Default `content`.
    #[schemars(description = "")]
    pub output_mode: Option<OutputMode>,
    /// Default 100.
    #[schemars(range(min = 1))]
    pub limit: Option<u32>,
    #[serde(skip)]
    #[schemars(skip)]
    permitted: Permitted,
}

impl GrepArgs {
    fn target(&self) -> &str {
        self.path.as_deref().filter(|p| !p.trim().is_empty()).unwrap_or(".")
    }
}

/// The `grep` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrepTool;

impl TypedTool for GrepTool {
    type Args = GrepArgs;

    fn name(&self) -> &str {
        "grep"
    }

    // Claude Code's names (lines are always numbered here).
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[
            ("-i", Alias::Param("case_insensitive")),
            ("-C", Alias::Param("context")),
            // One side's context is shown with the other's too.
            ("-A", Alias::Param("context")),
            ("-B", Alias::Param("context")),
            ("glob", Alias::Param("include")),
            ("head_limit", Alias::Param("limit")),
            ("-n", Alias::NoEffect),
        ]
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &GrepArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let resolved = path::resolve(ctx, args.target())?;
        args.permitted.remember(&resolved);
        let mut requests = resolved.requests(&spec.permission);
        // Searching one file shows its contents: the `read` rules apply to it as to `read`.
        if resolved.path().is_file() {
            requests.push(PermissionRequest::new("read", [resolved.pattern()]));
        }
        Ok(requests)
    }

    async fn run(&self, args: GrepArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let now = path::resolve(&ctx, args.target())?;
        let resolved = path::confirm(&ctx, &args.permitted, now, "grep").await?;
        if !resolved.exists() {
            return Err(super::not_found(&resolved, "Path"));
        }
        let mut query = Query::new(&args, &resolved)?;
        query.reveal = Some(ctx.clone());
        let cwd = path::Confinement::from_context(&ctx).cwd().to_path_buf();
        let cancel = ctx.cancellation().clone();
        blocking(move || Ok(query.run(&resolved, &cwd, cancel))).await
    }
}

/// Which files `include` lets grep search.
enum Include {
    /// Only those the glob matches.
    Only(PathGlob),
    /// All but those the glob matches, and those under a directory it matches (`!vendor`).
    Skip(PathGlob),
}

impl Include {
    /// Whether the file at `path`, found under the search directory `base`, is left out.
    fn skips(&self, base: &Path, path: &Path) -> bool {
        match self {
            Include::Only(glob) => !glob.matches_under(base, path),
            Include::Skip(glob) => {
                path.ancestors().take_while(|a| a.starts_with(base) && *a != base).any(|a| glob.matches_under(base, a))
            }
        }
    }
}

/// A compiled search.
pub struct Query {
    pattern: String,
    matcher: RegexMatcher,
    include: Option<Include>,
    context: usize,
    mode: OutputMode,
    limit: usize,
    /// The call whose `read` rules decide which files of a directory may be searched (a file
    /// whose `read` would ask or is denied is skipped and counted); `None` searches every file.
    reveal: Option<ToolContext>,
}

/// Files of a directory search that the `read` rules kept out.
#[derive(Debug, Default)]
struct Skipped {
    /// Files whose `read` asks, shown relative to the worktree.
    ask: Vec<String>,
    /// Files whose `read` is denied.
    denied: usize,
}

/// The hits in one file.
#[derive(Debug, Default)]
struct FileHits {
    path: PathBuf,
    /// Matching lines.
    count: u64,
    /// Stored lines (matches and context), in order.
    lines: Vec<Line>,
}

#[derive(Debug)]
struct Line {
    number: u64,
    text: String,
    is_match: bool,
    /// A gap (`--`) comes before this line.
    gap: bool,
}

impl Query {
    /// Compiles the arguments, or explains to the model what is wrong with them.
    pub fn new(args: &GrepArgs, dir: &ResolvedPath) -> Result<Query, ToolError> {
        if args.pattern.is_empty() {
            return Err(ToolError::model("The pattern is empty. Send the regular expression to search for."));
        }
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(args.case_insensitive.unwrap_or(false))
            .line_terminator(Some(b'\n'))
            .build(&args.pattern)
            .map_err(|e| {
                // The engine quotes the pattern as it wrapped it; keep just its verdict.
                let text = e.to_string();
                let reason = text.rsplit_once("\nerror: ").map_or(text.as_str(), |(_, r)| r).trim();
                let hint = if args.pattern.contains('\n') || args.pattern.contains("\\n") {
                    "grep matches one line at a time, so a pattern cannot span lines: search for the text of one line"
                } else {
                    "Escape literal special characters with a backslash (for example `\\(` or `\\{`)"
                };
                ToolError::model(format!(
                    "The pattern `{}` is not a valid regular expression: {reason}.\n{hint} and call grep again.",
                    args.pattern
                ))
            })?;
        // As ripgrep's `-g` (which OpenCode's `include` and Claude Code's `glob` are passed to):
        // a leading `!` leaves the files it matches out.
        let include = args
            .include
            .as_deref()
            .map(str::trim)
            .filter(|g| !g.is_empty())
            .map(|g| match g.strip_prefix('!').map(|rest| rest.trim().trim_end_matches('/')) {
                Some("") => Err(ToolError::model(format!(
                    "The include `{g}` leaves nothing out: after `!` comes a glob of what to skip, such as `!*.md` or `!vendor`."
                ))),
                Some(rest) if rest.starts_with('(') || super::negates(rest) => Err(misplaced_bang(g)),
                None if super::negates(g) => Err(misplaced_bang(g)),
                Some(rest) => PathGlob::new(rest, dir.path()).map(Include::Skip),
                None => PathGlob::new(g, dir.path()).map(Include::Only),
            })
            .transpose()?;
        Ok(Query {
            pattern: args.pattern.clone(),
            matcher,
            include,
            context: args.context.unwrap_or(0).min(MAX_CONTEXT as u32) as usize,
            mode: args.output_mode.unwrap_or_default(),
            limit: args.limit.map_or(DEFAULT_LIMIT, |l| (l as usize).clamp(1, MAX_LIMIT)),
            reveal: None,
        })
    }

    /// Runs the search under `dir` and renders the result; paths are shown relative to `cwd`.
    pub fn run(&self, dir: &ResolvedPath, cwd: &Path, cancel: CancellationToken) -> ToolOutput {
        let (files, skipped) = self.search(dir.path(), cancel);
        let mut output = self.render(files, dir, cwd);
        if let Some(note) = skipped_note(&skipped) {
            output.text.push_str(&note);
            output = output.with_metadata("skipped", skipped.ask.len() + skipped.denied);
        }
        output
    }

    fn searcher(&self) -> Searcher {
        let context = if self.mode == OutputMode::Content { self.context } else { 0 };
        SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(b'\0'))
            .before_context(context)
            .after_context(context)
            .build()
    }

    fn search(&self, base: &Path, cancel: CancellationToken) -> (Vec<FileHits>, Skipped) {
        let found: Mutex<Vec<FileHits>> = Mutex::default();
        let skipped: Mutex<Skipped> = Mutex::default();
        let stored = AtomicUsize::new(0);
        // `base` is the path the permission stage resolved (every link followed): what is
        // opened must be it, or under it. (Resolving it again here would follow a link swapped
        // in since.)
        let explicit_file = base.is_file();
        // toolshed's data directory, where a search of a directory above it must not look
        // (the spill directory aside, which the permission stage let through).
        let private = self.reveal.as_ref().and_then(|ctx| {
            let spill = ctx.environment().spill_dir();
            let root = ctx.root().to_path_buf();
            path::private_dir(&root).map(|dir| (dir, spill.canonicalize().unwrap_or(spill), root))
        });
        let private = &private;
        walker(base).threads(worker_threads()).build_parallel().run(|| {
            let mut searcher = self.searcher();
            let found = &found;
            let stored = &stored;
            let skipped = &skipped;
            let cancel = cancel.clone();
            Box::new(move |entry| {
                if cancel.is_cancelled() {
                    return WalkState::Quit;
                }
                let Ok(entry) = entry else { return WalkState::Continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return WalkState::Continue;
                }
                if !explicit_file && self.include.as_ref().is_some_and(|include| include.skips(base, entry.path())) {
                    return WalkState::Continue;
                }
                // The rules are checked against the file that was opened, not only the name the
                // walk found: a directory renamed or swapped for a link between the two would
                // otherwise open a file the rules keep out (review 14).
                // Without blocking: a file swapped for a FIFO since the walk saw it would
                // otherwise hold the search until a writer comes (review 15).
                let Some(file) = open_regular(entry.path()) else { return WalkState::Continue };
                // One file, checked by the permission stage as `base`: only that file is read.
                if explicit_file && opened_path(&file, entry.path()).as_deref() != Some(base) {
                    skipped.lock().unwrap_or_else(PoisonError::into_inner).denied += 1;
                    return WalkState::Continue;
                }
                if !explicit_file && let Some(ctx) = &self.reveal {
                    let pattern = path::pattern_for(ctx.root(), entry.path());
                    let opened = opened_path(&file, entry.path());
                    let decision = match &opened {
                        // Outside what was asked to be searched: never approved.
                        Some(real) if !real.starts_with(base) => Action::Ask,
                        Some(real)
                            if private.as_ref().is_some_and(|(dir, spill, root)| {
                                path::is_private(real, dir, root) && !real.starts_with(spill)
                            }) =>
                        {
                            Action::Deny
                        }
                        Some(real) if real != entry.path() => stricter(
                            ctx.decide("read", &pattern),
                            ctx.decide("read", &path::pattern_for(ctx.root(), real)),
                        ),
                        Some(_) => ctx.decide("read", &pattern),
                        None => Action::Deny,
                    };
                    match decision {
                        Action::Allow => {}
                        Action::Ask => {
                            skipped.lock().unwrap_or_else(PoisonError::into_inner).ask.push(pattern);
                            return WalkState::Continue;
                        }
                        Action::Deny => {
                            skipped.lock().unwrap_or_else(PoisonError::into_inner).denied += 1;
                            return WalkState::Continue;
                        }
                    }
                }
                let mut sink = Collect {
                    matcher: &self.matcher,
                    hits: FileHits { path: entry.path().to_path_buf(), ..Default::default() },
                    store: self.mode == OutputMode::Content,
                    stored,
                    gap: false,
                    stop_at_first: self.mode == OutputMode::FilesWithMatches,
                };
                if searcher.search_file(&self.matcher, &file, &mut sink).is_ok() && sink.hits.count > 0 {
                    found.lock().unwrap_or_else(PoisonError::into_inner).push(sink.hits);
                }
                WalkState::Continue
            })
        });
        let mut files = found.into_inner().unwrap_or_else(PoisonError::into_inner);
        files.sort_by(|a, b| path_order(&a.path, &b.path));
        let mut skipped = skipped.into_inner().unwrap_or_else(PoisonError::into_inner);
        skipped.ask.sort();
        (files, skipped)
    }

    fn render(&self, files: Vec<FileHits>, dir: &ResolvedPath, cwd: &Path) -> ToolOutput {
        let total_matches: u64 = files.iter().map(|f| f.count).sum();
        let total_files = files.len();
        let title = self.pattern.clone();
        if files.is_empty() {
            return ToolOutput::text(format!("No matches for `{}` in `{}`.", self.pattern, dir.display()))
                .with_title(title)
                .with_metadata("matches", 0)
                .with_metadata("files", 0);
        }
        let mut out = String::new();
        let truncated;
        match self.mode {
            OutputMode::FilesWithMatches => {
                for f in files.iter().take(self.limit) {
                    out.push_str(&display_path(cwd, &f.path));
                    out.push('\n');
                }
                truncated = total_files > self.limit;
                if truncated {
                    out.push_str(&format!(
                        "\n({total_files} files match; showing the first {}. Narrow the pattern, path or include to see the others.)",
                        self.limit
                    ));
                }
            }
            OutputMode::Count => {
                for f in files.iter().take(self.limit) {
                    out.push_str(&format!("{}: {}\n", display_path(cwd, &f.path), f.count));
                }
                out.push_str(&format!(
                    "\n({} in {}",
                    plural(total_matches as usize, "matching line"),
                    plural(total_files, "file")
                ));
                truncated = total_files > self.limit;
                if truncated {
                    out.push_str(&format!("; showing the first {} files", self.limit));
                }
                out.push_str(".)");
            }
            OutputMode::Content => {
                let shown = render_content(&files, cwd, self.limit, self.context, &mut out);
                truncated = (shown as u64) < total_matches;
                let header = format!(
                    "Found {} in {}.\n",
                    plural(total_matches as usize, "matching line"),
                    plural(total_files, "file")
                );
                out.insert_str(0, &header);
                if truncated {
                    let more = total_matches - shown as u64;
                    let noun = if more == 1 { "matching line" } else { "matching lines" };
                    out.push_str(&format!(
                        "\n({more} more {noun} not shown. Narrow the pattern, path or include, or raise limit.)"
                    ));
                }
            }
        }
        ToolOutput::text(out.trim_end().to_string())
            .with_title(title)
            .with_metadata("matches", total_matches)
            .with_metadata("files", total_files)
            .with_metadata("truncated", truncated)
    }
}

/// What the model is told about files left out by the `read` rules, if any were.
/// Where the open `file`, opened as `path`, really is (`None`: unknown, and then nothing of it
/// is shown). Elsewhere than on Linux, where `path` leads now.
fn opened_path(file: &std::fs::File, path: &Path) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        let _ = path;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        path.canonicalize().ok()
    }
}

/// `path` opened for reading when it is a regular file, without waiting on a FIFO or device.
fn open_regular(path: &Path) -> Option<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// The stricter of two decisions.
fn stricter(a: Action, b: Action) -> Action {
    match (a, b) {
        (Action::Deny, _) | (_, Action::Deny) => Action::Deny,
        (Action::Ask, _) | (_, Action::Ask) => Action::Ask,
        _ => Action::Allow,
    }
}

fn skipped_note(skipped: &Skipped) -> Option<String> {
    if skipped.ask.is_empty() && skipped.denied == 0 {
        return None;
    }
    let mut note = String::from("\n\n(");
    if !skipped.ask.is_empty() {
        const SHOWN: usize = 5;
        let mut names = skipped.ask.iter().take(SHOWN).map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ");
        if skipped.ask.len() > SHOWN {
            names.push_str(&format!(" and {} more", skipped.ask.len() - SHOWN));
        }
        note.push_str(&format!(
            "{} not searched: reading {} needs the user's permission ({names}). To search one, read it with the read tool, which asks the user",
            plural(skipped.ask.len(), "file"),
            if skipped.ask.len() == 1 { "it" } else { "them" },
        ));
    }
    if skipped.denied > 0 {
        if !skipped.ask.is_empty() {
            note.push_str("; ");
        }
        note.push_str(&format!(
            "{} not searched: the rules forbid reading {}",
            plural(skipped.denied, "file"),
            if skipped.denied == 1 { "it" } else { "them" }
        ));
    }
    note.push_str(".)");
    Some(note)
}

/// Writes up to `limit` matching lines (with their context) grouped by file; returns how many
/// matching lines were written. Context after the last shown match is kept; context leading up
/// to a match that is not shown is not.
fn render_content(files: &[FileHits], cwd: &Path, limit: usize, context: usize, out: &mut String) -> usize {
    let mut shown = 0usize;
    for file in files {
        if shown >= limit {
            break;
        }
        out.push_str(&display_path(cwd, &file.path));
        out.push('\n');
        let mut wrote_any = false;
        let mut last_match = 0u64;
        for line in &file.lines {
            if line.is_match {
                if shown >= limit {
                    break;
                }
                shown += 1;
                last_match = line.number;
            } else if shown >= limit && line.number > last_match + context as u64 {
                break;
            }
            if line.gap && wrote_any {
                out.push_str("  --\n");
            }
            let sep = if line.is_match { ':' } else { '-' };
            out.push_str(&format!("  {}{sep} {}\n", line.number, line.text));
            wrote_any = true;
        }
    }
    shown
}

/// Collects one file's hits.
struct Collect<'a> {
    matcher: &'a RegexMatcher,
    hits: FileHits,
    store: bool,
    stored: &'a AtomicUsize,
    gap: bool,
    stop_at_first: bool,
}

impl Collect<'_> {
    fn keep(&mut self, number: Option<u64>, bytes: &[u8], is_match: bool) {
        if !self.store || self.stored.fetch_add(1, Ordering::Relaxed) >= MAX_STORED_LINES {
            return;
        }
        let text = excerpt(self.matcher, bytes, is_match);
        self.hits.lines.push(Line { number: number.unwrap_or(0), text, is_match, gap: std::mem::take(&mut self.gap) });
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.hits.count += 1;
        if self.stop_at_first {
            return Ok(false);
        }
        self.keep(mat.line_number(), mat.bytes(), true);
        Ok(true)
    }

    fn context(&mut self, _searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.keep(ctx.line_number(), ctx.bytes(), false);
        Ok(true)
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        self.gap = true;
        Ok(true)
    }
}

/// The text of a line as shown: without its line ending, and cut around the first match when
/// longer than [`MAX_GREP_LINE_CHARS`].
fn excerpt(matcher: &RegexMatcher, bytes: &[u8], is_match: bool) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    let chars = text.chars().count();
    if chars <= MAX_GREP_LINE_CHARS {
        return text.into_owned();
    }
    let match_at = if is_match { matcher.find(bytes).ok().flatten().map_or(0, |m| m.start()) } else { 0 };
    let match_char = String::from_utf8_lossy(&bytes[..match_at.min(bytes.len())]).chars().count();
    let start = match_char.saturating_sub(MAX_GREP_LINE_CHARS / 4);
    let start = start.min(chars - MAX_GREP_LINE_CHARS);
    let window: String = text.chars().skip(start).take(MAX_GREP_LINE_CHARS).collect();
    let before = if start > 0 { "…" } else { "" };
    format!("{before}{window}… (line of {chars} chars cut)")
}

/// The model's error for an include with `!` anywhere but at its start.
fn misplaced_bang(include: &str) -> ToolError {
    ToolError::model(format!(
        "In the include `{include}`, `!` leaves files out only at the very start, once: send `!src/*.rs` to skip those files, or a glob without `!` to search only those. A name that begins with `!` is written `\\!name`."
    ))
}

#[cfg(test)]
#[cfg(test)]
mod tests;
