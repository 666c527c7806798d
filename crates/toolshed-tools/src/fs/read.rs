//! `read`: a window of a text file as numbered lines, streamed so that a window deep inside a
//! huge file costs a scan, not the file's size in memory; directories list their entries;
//! images come back as attachments; other binary files are refused with the reason.

use std::borrow::Cow;
use std::io::{self, BufRead, BufReader, Read};

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Alias, Attachment, ToolFlags, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{
    MAX_LINE_CHARS, Sniff, blocking, buffers, cut_line, not_found, open_regular, plural, read_regular, sniff_file,
    special_file_error, special_kind,
};
use toolshed_path::{self as path, Permitted, ResolvedPath};

/// Lines shown when `limit` is not given.
pub const DEFAULT_LIMIT: u64 = 2000;
/// Largest image returned as an attachment.
const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;
/// After the window, the rest of the file is scanned for a total line count only if it is this small.
const COUNT_REST_BYTES: u64 = 8 * 1024 * 1024;
/// Bytes of output kept free for the closing line.
const FOOTER_RESERVE: usize = 400;

const DESCRIPTION: &str = "Reads a file as `N: text` lines; the `N: ` prefixes are not part of the file. Stops after `limit` lines (default 2000) or 50 KB and says the `offset` to continue from; lines over 2000 characters are cut. Images come back as images; other binary files are refused.";

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadArgs {
    /// The file: relative to the working directory, or absolute.
    #[schemars(description = "")]
    pub file_path: String,
    /// First line, from 1.
    #[schemars(description = "", range(min = 1))]
    pub offset: Option<u64>,
    /// How many lines to show.
    #[schemars(description = "")]
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
    #[serde(skip)]
    #[schemars(skip)]
    permitted: Permitted,
}

/// The `read` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadTool;

impl TypedTool for ReadTool {
    type Args = ReadArgs;

    fn name(&self) -> &str {
        "read"
    }

    // Other agents' name for the file. Not Gemini's `absolute_path`: its `offset` counts from 0.
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[("path", Alias::Param("file_path"))]
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
        args: &ReadArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let resolved = path::resolve(ctx, &args.file_path)?;
        args.permitted.remember(&resolved);
        Ok(resolved.requests(&spec.permission))
    }

    async fn run(&self, args: ReadArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let now = path::resolve(&ctx, &args.file_path)?;
        let resolved = path::confirm(&ctx, &args.permitted, now, "read").await?;
        let limits = ctx.output_limits();
        let window = Window {
            offset: args.offset.unwrap_or(1).max(1),
            limit: args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, DEFAULT_LIMIT),
            max_lines: limits.max_lines.saturating_sub(2).max(1) as u64,
            max_bytes: limits.max_bytes.saturating_sub(FOOTER_RESERVE).max(1024),
        };
        // A text file an editor has open is read from its buffer, unsaved changes and all.
        let editor_text = buffers::read_to_show(&ctx, resolved.path()).await;
        blocking(move || read(&resolved, window, editor_text)).await
    }
}

/// Which part of a file to show and the output budget.
#[derive(Clone, Copy, Debug)]
struct Window {
    offset: u64,
    limit: u64,
    max_lines: u64,
    max_bytes: usize,
}

/// Reads the file at `resolved`; a text file's lines come from `editor_text` when given.
fn read(resolved: &ResolvedPath, window: Window, editor_text: Option<String>) -> Result<ToolOutput, ToolError> {
    let path = resolved.path();
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(not_found(resolved, "File")),
        Err(e) => return Err(ToolError::model(format!("Cannot read `{}`: {e}.", resolved.display()))),
    };
    if meta.is_dir() {
        return read_dir(resolved, window);
    }
    if let Some(kind) = special_kind(meta.file_type()) {
        return Err(special_file_error("read", &resolved.display(), kind));
    }
    let io_err = |e: io::Error| ToolError::model(format!("Cannot read `{}`: {e}.", resolved.display()));
    match sniff_file(path).map_err(io_err)? {
        Sniff::Image(mime) => read_image(resolved, mime, meta.len()),
        Sniff::Binary(reason) => Err(ToolError::model(format!(
            "Cannot read `{}`: it is a binary file ({reason}). Inspect it with the shell (for example `file` or `xxd | head`) if you need to.",
            resolved.display()
        ))),
        Sniff::Text => match editor_text {
            Some(text) => read_text(resolved, window, text.len() as u64, io::Cursor::new(text.into_bytes())),
            None => {
                let file = open_regular(path)
                    .and_then(|f| f.map_err(|kind| io::Error::other(format!("it is {kind}"))))
                    .map_err(io_err)?;
                read_text(resolved, window, meta.len(), file)
            }
        }
        .map_err(io_err),
    }
}

fn read_image(resolved: &ResolvedPath, mime: &'static str, size: u64) -> Result<ToolOutput, ToolError> {
    if size > MAX_IMAGE_BYTES {
        return Err(ToolError::model(format!(
            "Cannot read `{}`: the image is {} bytes, over the {MAX_IMAGE_BYTES}-byte limit for images.",
            resolved.display(),
            size
        )));
    }
    let data = read_regular(resolved.path())
        .map_err(|e| ToolError::model(format!("Cannot read `{}`: {e}.", resolved.display())))?
        .map_err(|kind| special_file_error("read", &resolved.display(), kind))?;
    Ok(ToolOutput::text(format!("Image read successfully: `{}` ({mime}, {} bytes).", resolved.display(), data.len()))
        .with_title(resolved.display())
        .with_attachment(Attachment::Image { mime_type: mime.to_string(), data }))
}

fn read_dir(resolved: &ResolvedPath, window: Window) -> Result<ToolOutput, ToolError> {
    let io_err = |e: io::Error| ToolError::model(format!("Cannot list `{}`: {e}.", resolved.display()));
    let mut entries: Vec<String> = std::fs::read_dir(resolved.path())
        .map_err(io_err)?
        .filter_map(Result::ok)
        .map(|e| {
            let mut name = e.file_name().to_string_lossy().into_owned();
            if std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir()) {
                name.push('/');
            }
            name
        })
        .collect();
    entries.sort_by(|a, b| a.to_lowercase().cmp(&b.to_lowercase()).then_with(|| a.cmp(b)));
    let total = entries.len() as u64;
    let first = window.offset.min(total.max(1));
    // The header line counts against the budget too.
    let count = window.limit.min(window.max_lines.saturating_sub(1).max(1));
    let shown: Vec<&String> = entries.iter().skip((first - 1) as usize).take(count as usize).collect();
    let noun = if entries.len() == 1 { "entry" } else { "entries" };
    let mut out = format!("`{}` is a directory with {} {noun}:\n", resolved.display(), entries.len());
    for name in &shown {
        out.push_str(name);
        out.push('\n');
    }
    let last = first + shown.len() as u64 - 1;
    if last < total {
        out.push_str(&format!("\n(Showing entries {first}-{last} of {total}. Use offset={} to continue.)", last + 1));
    }
    Ok(ToolOutput::text(out.trim_end().to_string()).with_title(resolved.display()).with_metadata("entries", total))
}

/// How the window ended.
enum Stop {
    /// The file ended inside the window.
    Eof,
    /// `limit` lines were shown.
    Limit,
    /// The byte budget ran out.
    Bytes,
}

/// The window of the text `source` (`size` bytes long) as numbered lines.
fn read_text(resolved: &ResolvedPath, window: Window, size: u64, source: impl Read) -> io::Result<ToolOutput> {
    let mut reader = Lines::new(source);
    let display = resolved.display();
    let skipped = reader.skip_lines(window.offset - 1)?;
    if skipped < window.offset - 1 || (window.offset > 1 && reader.at_eof()?) {
        let total = skipped;
        return Err(io::Error::other(format!(
            "offset {} is past the end of the file, which has {}. Send an offset between 1 and {}",
            window.offset,
            plural(total as usize, "line"),
            total.max(1)
        )));
    }
    let wanted = window.limit.min(window.max_lines);
    let mut out = String::new();
    let mut line = Vec::new();
    let mut shown = 0u64;
    let stop = loop {
        if shown == wanted {
            break Stop::Limit;
        }
        let Some(cut) = reader.next_line(&mut line)? else { break Stop::Eof };
        let number = window.offset + shown;
        let mut text = String::from_utf8_lossy(&line);
        if number == 1
            && let Some(rest) = text.strip_prefix('\u{feff}')
        {
            text = rest.to_string().into();
        }
        let text = text.strip_suffix('\r').unwrap_or(&text);
        let mut rendered = format!("{number}: ");
        match cut_line(text, MAX_LINE_CHARS) {
            Cow::Borrowed(whole) if cut => {
                rendered.push_str(whole);
                rendered.push_str(&format!("... (line truncated to {MAX_LINE_CHARS} chars)"));
            }
            shown => rendered.push_str(&shown),
        }
        if shown > 0 && out.len() + rendered.len() + 1 > window.max_bytes {
            reader.unread_line();
            break Stop::Bytes;
        }
        out.push_str(&rendered);
        out.push('\n');
        shown += 1;
    };
    let first = window.offset;
    let last = first + shown - 1;
    let more = !matches!(stop, Stop::Eof) && !reader.at_eof()?;
    let total = if !more {
        Some(last)
    } else if size.saturating_sub(reader.consumed()) <= COUNT_REST_BYTES {
        Some(last + reader.count_rest()?)
    } else {
        None
    };
    if shown == 0 {
        out.push_str("(The file is empty.)");
    } else if !more {
        out.push_str(&format!("\n(End of file - total {})", plural(last as usize, "line")));
    } else {
        let of = match total {
            Some(t) => format!(" of {t}"),
            None => format!(", {} bytes of the file follow", size.saturating_sub(reader.consumed())),
        };
        let why = if matches!(stop, Stop::Bytes) { "Output capped at 50 KB. " } else { "" };
        out.push_str(&format!("\n({why}Showing lines {first}-{last}{of}. Use offset={} to continue.)", last + 1));
    }
    let mut output =
        ToolOutput::text(out).with_title(display).with_metadata("first_line", first).with_metadata("truncated", more);
    if shown > 0 {
        output = output.with_metadata("last_line", last);
    }
    if let Some(t) = total {
        output = output.with_metadata("total_lines", t);
    }
    Ok(output)
}

/// A line reader over a file that keeps at most a few KiB of any one line, so a window of a
/// file with gigantic lines (or none) still costs little memory.
struct Lines<R> {
    inner: BufReader<R>,
    consumed: u64,
    /// A line was read but not shown; it still counts as remaining.
    held_back: bool,
}

/// Bytes of one line kept: enough for [`MAX_LINE_CHARS`] characters of any width, plus one.
const LINE_KEEP: usize = MAX_LINE_CHARS * 4 + 4;

impl<R: Read> Lines<R> {
    fn new(inner: R) -> Self {
        Lines { inner: BufReader::with_capacity(256 * 1024, inner), consumed: 0, held_back: false }
    }

    fn consumed(&self) -> u64 {
        self.consumed
    }

    fn at_eof(&mut self) -> io::Result<bool> {
        Ok(!self.held_back && self.inner.fill_buf()?.is_empty())
    }

    /// Skips `n` lines; returns how many there were (fewer at the end of the file).
    fn skip_lines(&mut self, n: u64) -> io::Result<u64> {
        let mut done = 0u64;
        let mut partial = false;
        while done < n {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(done + u64::from(partial));
            }
            let mut used = buf.len();
            for pos in memchr::memchr_iter(b'\n', buf) {
                done += 1;
                if done == n {
                    used = pos + 1;
                    break;
                }
            }
            partial = used > 0 && buf[used - 1] != b'\n';
            self.inner.consume(used);
            self.consumed += used as u64;
        }
        Ok(done)
    }

    /// Reads the next line (without its `\n`) into `line`, keeping at most [`LINE_KEEP`] bytes;
    /// returns whether it was cut, or `None` at the end of the file.
    fn next_line(&mut self, line: &mut Vec<u8>) -> io::Result<Option<bool>> {
        line.clear();
        let mut cut = false;
        let mut any = false;
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Ok(any.then_some(cut));
            }
            any = true;
            let (chunk, used, done) = match memchr::memchr(b'\n', buf) {
                Some(pos) => (&buf[..pos], pos + 1, true),
                None => (buf, buf.len(), false),
            };
            let room = LINE_KEEP.saturating_sub(line.len());
            if chunk.len() > room {
                cut = true;
            }
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            self.inner.consume(used);
            self.consumed += used as u64;
            if done {
                return Ok(Some(cut));
            }
        }
    }

    /// Marks the line just read as not shown (it did not fit the budget).
    fn unread_line(&mut self) {
        self.held_back = true;
    }

    /// Counts the lines left after the current position.
    fn count_rest(&mut self) -> io::Result<u64> {
        let mut lines = u64::from(std::mem::take(&mut self.held_back));
        let mut last = b'\n';
        let mut any = false;
        loop {
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                break;
            }
            any = true;
            lines += memchr::memchr_iter(b'\n', buf).count() as u64;
            last = buf[buf.len() - 1];
            let n = buf.len();
            self.inner.consume(n);
            self.consumed += n as u64;
        }
        Ok(lines + u64::from(any && last != b'\n'))
    }
}

#[cfg(test)]
mod tests;
