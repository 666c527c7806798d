//! Stage 7, bound: an output over the budget (2,000 lines or 50 KiB by default) keeps its
//! head and tail, cut on line or UTF-8 boundaries, and the complete text goes to a spill file
//! whose path the model is told. [`OutputSink`] lets streaming tools (the shell) spill as they
//! go instead of holding everything in memory.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::ToolResult;
use crate::context::Environment;
use crate::tool::SpillInfo;

/// The output budget, and what output may take on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputLimits {
    /// Most lines a model sees of one output.
    pub max_lines: usize,
    /// Most bytes a model sees of one output.
    pub max_bytes: usize,
    /// Most bytes one call's spill file keeps: its first and last halves, with a line saying
    /// how much was dropped between them (`[output] spill_max_bytes`, default 64 MiB).
    pub spill_max_bytes: u64,
    /// Most bytes all spill files keep together; the oldest are deleted first
    /// (`[output] spill_dir_max_bytes`, default 1 GiB).
    pub spill_dir_max_bytes: u64,
    /// Most bytes one binary part of an MCP tool's result (an image, audio, an embedded
    /// resource's blob) may take, decoded; a larger one is replaced by a note saying what was
    /// left out, for the model and for clients of `mcp serve` (`[output] max_blob_bytes`,
    /// default 5 MiB).
    pub max_blob_bytes: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            max_lines: 2000,
            max_bytes: 50 * 1024,
            spill_max_bytes: 64 << 20,
            spill_dir_max_bytes: 1 << 30,
            max_blob_bytes: 5 << 20,
        }
    }
}

/// The smallest spill caps a configuration may set.
pub const MIN_SPILL_BYTES: u64 = 64 * 1024;

/// The smallest `max_blob_bytes` a configuration may set.
pub const MIN_BLOB_BYTES: usize = 1024;

/// Bytes of the budget kept free for the truncation notices.
const NOTICE_RESERVE: usize = 512;
/// Spill files older than this are deleted (at most once per process).
const SPILL_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Cuts `result.output` to the budget, spilling the complete text, and records
/// `truncated` / `output_path` in the metadata.
pub fn bound(result: &mut ToolResult, env: &Environment) {
    let limits = env.limits;
    let spilled = result.spill.take();
    let text = &result.output;
    let lines = count_lines(text);
    let fits = lines <= limits.max_lines as u64 && text.len() <= limits.max_bytes;
    if fits && spilled.is_none() {
        return;
    }
    let exact = spilled.is_none();
    let saved: Result<SpillInfo, String> = match spilled {
        Some(info) => Ok(info),
        None => write_spill(&env.spill_dir(), &result.tool, text.as_bytes(), limits)
            .map(|(path, dropped_bytes)| SpillInfo {
                path,
                total_bytes: text.len() as u64,
                total_lines: lines,
                dropped_bytes,
            })
            .map_err(|e| e.to_string()),
    };
    let (total_lines, total_bytes) = match &saved {
        Ok(info) => (info.total_lines, info.total_bytes),
        Err(_) => (lines, text.len() as u64),
    };
    let mut out = String::new();
    let mut resume_line = None;
    if fits {
        out.push_str(text.trim_end_matches('\n'));
    } else {
        let cut = cut(text, limits);
        out.push_str(&text[..cut.head_end]);
        if !out.ends_with('\n') {
            out.push('\n');
        }
        let omitted = &text[cut.head_end..cut.tail_start];
        let at_line_start = |i: usize| i == 0 || text.as_bytes()[i - 1] == b'\n';
        let newlines = omitted.bytes().filter(|&b| b == b'\n').count() as u64;
        if exact && cut.head_end > 0 && at_line_start(cut.head_end) && at_line_start(cut.tail_start) && newlines > 0 {
            let first = count_lines(&text[..cut.head_end]) + 1;
            let last = first + newlines - 1;
            out.push_str(&format!("[... {newlines} lines omitted (lines {first}-{last} of {total_lines}) ...]\n"));
            resume_line = Some(first);
        } else if exact {
            // Part of a line (a very long one) was cut: say how much, and where.
            let line_of = |i: usize| text.as_bytes()[..i].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            let first = line_of(cut.head_end);
            let last = line_of(cut.tail_start.saturating_sub(1).max(cut.head_end));
            let place = if first == last { format!("line {first}") } else { format!("lines {first}-{last}") };
            out.push_str(&format!("[... {} bytes omitted ({place} of {total_lines}) ...]\n", omitted.len()));
        } else {
            out.push_str(&format!("[... {} bytes omitted ...]\n", omitted.len()));
        }
        out.push_str(text[cut.tail_start..].trim_end_matches('\n'));
    }
    out.push_str("\n\n");
    match &saved {
        Ok(info) if info.dropped_bytes > 0 => {
            out.push_str(&format!(
                "[Output truncated: {total_lines} lines, {total_bytes} bytes in all. Its first and last parts are saved in {} ({} bytes from the middle were not kept: the output passed the spill limit); grep it.]",
                info.path.display(),
                info.dropped_bytes
            ));
            result.metadata.insert("output_path".into(), Value::String(info.path.display().to_string()));
        }
        Ok(info) => {
            let how = match resume_line {
                Some(line) => format!("read it with offset={line} to see the omitted lines, or grep it"),
                None => "grep it (lines longer than 2,000 characters are cut when read)".to_string(),
            };
            out.push_str(&format!(
                "[Output truncated: {total_lines} lines, {total_bytes} bytes in all. The full output is saved in {}; {how}.]",
                info.path.display()
            ));
            result.metadata.insert("output_path".into(), Value::String(info.path.display().to_string()));
        }
        Err(e) => out.push_str(&format!(
            "[Output truncated: {total_lines} lines, {total_bytes} bytes in all. The full output could not be saved ({e}).]"
        )),
    }
    result.metadata.insert("truncated".into(), Value::Bool(true));
    result.output = out;
}

/// Number of lines: newlines, plus one for an unterminated last line.
pub fn count_lines(text: &str) -> u64 {
    let newlines = text.bytes().filter(|&b| b == b'\n').count() as u64;
    newlines + u64::from(!text.is_empty() && !text.ends_with('\n'))
}

struct Cut {
    head_end: usize,
    tail_start: usize,
}

/// Where to cut: whole lines from the head and the tail, each within half the budget; a single
/// line longer than that is cut at a character boundary.
fn cut(text: &str, limits: OutputLimits) -> Cut {
    let reserve = if limits.max_bytes > 4 * NOTICE_RESERVE { NOTICE_RESERVE } else { 0 };
    let byte_half = (limits.max_bytes - reserve) / 2;
    let line_half = (limits.max_lines / 2).max(1);

    let mut head_end = 0;
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if n >= line_half || head_end + line.len() > byte_half {
            if n == 0 {
                head_end = floor_char_boundary(text, byte_half);
            }
            break;
        }
        head_end += line.len();
    }

    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut tail_start = text.len();
    let mut taken_lines = 0;
    let mut line_end = body.len();
    loop {
        let start = body[..line_end].rfind('\n').map_or(0, |i| i + 1);
        if taken_lines >= line_half || text.len() - start > byte_half {
            if taken_lines == 0 {
                tail_start = ceil_char_boundary(text, text.len().saturating_sub(byte_half));
            }
            break;
        }
        tail_start = start;
        taken_lines += 1;
        if start == 0 {
            break;
        }
        line_end = start - 1;
    }
    Cut { head_end, tail_start: tail_start.max(head_end) }
}

fn floor_char_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Writes `data` to a new spill file in `dir`, keeping at most `limits.spill_max_bytes` of it
/// (the first and last halves); returns its path and how many bytes were dropped.
pub fn write_spill(dir: &Path, tool: &str, data: &[u8], limits: OutputLimits) -> io::Result<(PathBuf, u64)> {
    let (path, mut file) = create_spill(dir, tool, limits)?;
    let cap = limits.spill_max_bytes.max(2) as usize;
    let dropped = if data.len() > cap {
        let head = cap / 2;
        let tail = cap - head;
        let dropped = data.len() - cap;
        file.write_all(&data[..head])?;
        file.write_all(dropped_line(dropped as u64, limits.spill_max_bytes).as_bytes())?;
        file.write_all(&data[data.len() - tail..])?;
        dropped as u64
    } else {
        file.write_all(data)?;
        0
    };
    enforce_dir_cap(dir, limits.spill_dir_max_bytes, &path);
    Ok((path, dropped))
}

/// The line a capped spill file has where bytes were dropped.
fn dropped_line(dropped: u64, cap: u64) -> String {
    format!(
        "\n[... {dropped} bytes not kept here: the output passed toolshed's spill limit of {cap} bytes ([output] spill_max_bytes) ...]\n"
    )
}

fn create_spill(dir: &Path, tool: &str, limits: OutputLimits) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    fs::create_dir_all(dir)?;
    clean_old_spills(dir);
    let millis = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or_default();
    let safe: String =
        tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).take(40).collect();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!("{millis}-{}-{n}-{safe}.txt", std::process::id()));
    let file = File::options().write(true).create_new(true).open(&path)?;
    enforce_dir_cap(dir, limits.spill_dir_max_bytes, &path);
    Ok((path, file))
}

fn clean_old_spills(dir: &Path) {
    static CLEANED: AtomicBool = AtomicBool::new(false);
    if CLEANED.swap(true, Ordering::Relaxed) {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else { return };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > SPILL_MAX_AGE));
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if old && (name.ends_with(".txt") || name.ends_with(".ring")) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Deletes the oldest spill files of `dir` until all of them together take at most `cap`
/// bytes. Never `keep`, and never an output still being written (any process's: its `.ring`
/// file exists, or it changed within the last minute), so a path a call reports stays valid
/// while the call runs; the total may pass the cap while several outputs stream at once.
fn enforce_dir_cap(dir: &Path, cap: u64, keep: &Path) {
    const BUSY: Duration = Duration::from_secs(60);
    let Ok(entries) = fs::read_dir(dir) else { return };
    let now = SystemTime::now();
    let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(".txt") || name.ends_with(".ring")
        })
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| (meta.modified().unwrap_or(UNIX_EPOCH), meta.len(), e.path()))
        })
        .collect();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    if total <= cap {
        return;
    }
    files.sort();
    for (modified, len, path) in files {
        if total <= cap {
            break;
        }
        let streaming = path.extension().is_some_and(|e| e == "ring") || path.with_extension("ring").exists();
        let recent = now.duration_since(modified).is_ok_and(|age| age < BUSY);
        if path == keep || streaming || recent {
            continue;
        }
        if fs::remove_file(&path).is_ok() {
            total = total.saturating_sub(len);
        }
    }
}

/// Collects output that may be huge with bounded memory: everything is kept until it
/// outgrows the memory budget; from then on the complete stream goes to a spill file and only
/// the head and the tail (half the budget each) stay in memory.
/// On disk the spill file keeps at most `limits.spill_max_bytes`: the first half as it comes,
/// the last half in a ring file beside it, joined when the output ends.
pub struct OutputSink {
    dir: PathBuf,
    budget: usize,
    limits: OutputLimits,
    buf: Vec<u8>,
    tail: VecDeque<u8>,
    file: Option<(PathBuf, BufWriter<File>)>,
    /// Bytes written to the spill file itself (its head).
    written: u64,
    /// The ring file with the last bytes once the head is full, and how many bytes went to it.
    ring: Option<(PathBuf, File)>,
    ring_total: u64,
    error: Option<String>,
    total: u64,
    newlines: u64,
    ends_with_newline: bool,
}

/// What an [`OutputSink`] collected.
#[derive(Debug)]
pub struct SinkOutput {
    /// The text: everything, or head + omission marker + tail.
    pub text: String,
    /// Where the complete output is, when it did not fit.
    pub spill: Option<SpillInfo>,
    /// Why the complete output could not be saved, if it could not.
    pub spill_error: Option<String>,
}

impl OutputSink {
    /// A sink spilling into `dir` once more than `memory_budget` bytes arrive, with the default
    /// disk limits.
    pub fn new(dir: PathBuf, memory_budget: usize) -> Self {
        OutputSink::with_limits(dir, memory_budget, OutputLimits::default())
    }

    /// A sink spilling into `dir` once more than `memory_budget` bytes arrive, keeping on disk
    /// what `limits` allow.
    pub fn with_limits(dir: PathBuf, memory_budget: usize, limits: OutputLimits) -> Self {
        OutputSink {
            dir,
            budget: memory_budget.max(2),
            limits,
            buf: Vec::new(),
            tail: VecDeque::new(),
            file: None,
            written: 0,
            ring: None,
            ring_total: 0,
            error: None,
            total: 0,
            newlines: 0,
            ends_with_newline: false,
        }
    }

    /// Bytes received so far.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Whether the output outgrew the memory budget.
    pub fn overflowed(&self) -> bool {
        self.total > self.budget as u64
    }

    /// Adds output.
    pub fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.total += data.len() as u64;
        self.newlines += data.iter().filter(|&&b| b == b'\n').count() as u64;
        self.ends_with_newline = data.last() == Some(&b'\n');
        if !self.overflowed() {
            self.buf.extend_from_slice(data);
            return;
        }
        let half = self.budget / 2;
        if self.file.is_none() && self.error.is_none() {
            match create_spill(&self.dir, "output", self.limits) {
                Ok((path, file)) => {
                    self.file = Some((path, BufWriter::new(file)));
                    let first = std::mem::take(&mut self.buf);
                    self.spill(&first);
                    self.buf = first;
                }
                Err(e) => self.error = Some(e.to_string()),
            }
            let rest = self.buf.split_off(half.min(self.buf.len()));
            self.tail.extend(rest);
        }
        self.spill(data);
        self.tail.extend(data.iter().copied().skip(data.len().saturating_sub(half)));
        let excess = self.tail.len().saturating_sub(half);
        self.tail.drain(..excess);
    }

    /// Writes `data` to the spill file: into its head while that has room, then into the ring.
    fn spill(&mut self, mut data: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let cap = self.limits.spill_max_bytes.max(2);
        let head_cap = cap / 2;
        if self.written < head_cap {
            let n = data.len().min((head_cap - self.written) as usize);
            if let Some((_, w)) = &mut self.file
                && let Err(e) = w.write_all(&data[..n])
            {
                self.error = Some(e.to_string());
                return;
            }
            self.written += n as u64;
            data = &data[n..];
        }
        if data.is_empty() {
            return;
        }
        if let Err(e) = self.write_ring(data, cap - head_cap) {
            self.error = Some(e.to_string());
        }
    }

    /// Writes `data` into the ring of `ring_cap` bytes (only its last `ring_cap` bytes matter).
    fn write_ring(&mut self, data: &[u8], ring_cap: u64) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        if self.ring.is_none() {
            let Some((path, _)) = &self.file else { return Ok(()) };
            let ring_path = path.with_extension("ring");
            let file = File::options().read(true).write(true).create_new(true).open(&ring_path)?;
            self.ring = Some((ring_path, file));
        }
        let Some((_, ring)) = &self.ring else { return Ok(()) };
        let skip = data.len().saturating_sub(ring_cap as usize);
        let mut at = (self.ring_total + skip as u64) % ring_cap;
        let mut rest = &data[skip..];
        while !rest.is_empty() {
            let n = rest.len().min((ring_cap - at) as usize);
            ring.write_all_at(&rest[..n], at)?;
            rest = &rest[n..];
            at = (at + n as u64) % ring_cap;
        }
        self.ring_total += data.len() as u64;
        Ok(())
    }

    /// Appends the ring to the spill file, oldest byte first, with a line for what was
    /// dropped; returns how many bytes were.
    fn join_ring(&mut self) -> io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let Some((ring_path, ring)) = self.ring.take() else { return Ok(0) };
        // The ring goes whatever happens below.
        struct Remove(PathBuf);
        impl Drop for Remove {
            fn drop(&mut self) {
                let _ = fs::remove_file(&self.0);
            }
        }
        let _remove = Remove(ring_path);
        let Some((_, w)) = &mut self.file else { return Ok(0) };
        let cap = self.limits.spill_max_bytes.max(2);
        let ring_cap = cap - cap / 2;
        let kept = self.ring_total.min(ring_cap);
        let dropped = self.ring_total - kept;
        if dropped > 0 {
            w.write_all(dropped_line(dropped, self.limits.spill_max_bytes).as_bytes())?;
        }
        let start = if dropped > 0 { self.ring_total % ring_cap } else { 0 };
        let mut buf = vec![0u8; 1 << 16];
        let mut done = 0u64;
        while done < kept {
            let at = (start + done) % ring_cap;
            let n = (kept - done).min(ring_cap - at).min(buf.len() as u64) as usize;
            ring.read_exact_at(&mut buf[..n], at)?;
            w.write_all(&buf[..n])?;
            done += n as u64;
        }
        drop(ring);
        Ok(dropped)
    }

    /// The collected output.
    pub fn finish(mut self) -> SinkOutput {
        if !self.overflowed() {
            return SinkOutput {
                text: String::from_utf8_lossy(&self.buf).into_owned(),
                spill: None,
                spill_error: None,
            };
        }
        let head = utf8_prefix(&self.buf);
        let tail: Vec<u8> = std::mem::take(&mut self.tail).into_iter().collect();
        let tail = utf8_suffix(&tail);
        let omitted = self.total - (head.len() + tail.len()) as u64;
        let text = format!(
            "{}\n[... {omitted} bytes omitted ...]\n{}",
            String::from_utf8_lossy(head).trim_end_matches('\n'),
            String::from_utf8_lossy(tail)
        );
        let lines = self.newlines + u64::from(!self.ends_with_newline);
        let dropped_bytes = match self.join_ring() {
            Ok(dropped) => dropped,
            Err(e) => {
                self.error.get_or_insert(e.to_string());
                0
            }
        };
        if let Some((path, _)) = self.ring.take() {
            let _ = fs::remove_file(path);
        }
        let mut error = self.error;
        let spill = match self.file {
            Some((path, mut w)) if error.is_none() => match w.flush() {
                Ok(()) => {
                    enforce_dir_cap(&self.dir, self.limits.spill_dir_max_bytes, &path);
                    Some(SpillInfo { path, total_bytes: self.total, total_lines: lines, dropped_bytes })
                }
                Err(e) => {
                    error = Some(e.to_string());
                    None
                }
            },
            _ => None,
        };
        SinkOutput { text, spill, spill_error: error }
    }
}

/// The longest prefix of `bytes` that does not end inside a UTF-8 sequence.
fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes,
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        Err(_) => bytes,
    }
}

/// `bytes` without leading UTF-8 continuation bytes (at most three).
fn utf8_suffix(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take(3).take_while(|&&b| b & 0b1100_0000 == 0b1000_0000).count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn result(text: String) -> ToolResult {
        ToolResult {
            call_id: "c".into(),
            tool: "t".into(),
            is_error: false,
            fatal: false,
            output: text,
            title: None,
            metadata: Default::default(),
            attachments: vec![],
            duration: Duration::ZERO,
            spill: None,
            passthrough: None,
        }
    }

    fn env(dir: &Path, limits: OutputLimits) -> Environment {
        let mut env = Environment::new(dir, dir);
        env.limits = limits;
        env
    }

    #[test]
    fn small_output_is_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let mut r = result("a\nb\n".into());
        bound(&mut r, &env(tmp.path(), OutputLimits::default()));
        assert_eq!(r.output, "a\nb\n");
        assert!(r.metadata.is_empty());
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_spills_everything() {
        let tmp = tempfile::tempdir().unwrap();
        let text: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let mut r = result(text.clone());
        bound(&mut r, &env(tmp.path(), OutputLimits { max_lines: 10, max_bytes: 10_000, ..OutputLimits::default() }));
        let path = r.spill_path().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        let shown = r.output.replace(&path.display().to_string(), "<spill>");
        insta::assert_snapshot!(shown, @r"
        line 1
        line 2
        line 3
        line 4
        line 5
        [... 90 lines omitted (lines 6-95 of 100) ...]
        line 96
        line 97
        line 98
        line 99
        line 100

        [Output truncated: 100 lines, 792 bytes in all. The full output is saved in <spill>; read it with offset=6 to see the omitted lines, or grep it.]
        ");
        assert_eq!(r.metadata["truncated"], true);
    }

    #[test]
    fn one_huge_line_is_cut_on_char_boundaries() {
        let tmp = tempfile::tempdir().unwrap();
        let text = "é".repeat(10_000);
        let mut r = result(text.clone());
        bound(&mut r, &env(tmp.path(), OutputLimits { max_lines: 2000, max_bytes: 1000, ..OutputLimits::default() }));
        assert!(r.output.len() < 1500, "{}", r.output.len());
        assert!(r.output.starts_with("éé"));
        assert!(r.output.contains("bytes omitted"));
        assert_eq!(std::fs::read_to_string(r.spill_path().unwrap()).unwrap(), text);
    }

    #[test]
    fn a_huge_line_between_short_ones_is_reported_in_bytes_not_as_zero_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let text = format!("head 1\nhead 2\nhead 3\n{}\n", "x".repeat(5 * 1024 * 1024));
        let mut r = result(text.clone());
        bound(&mut r, &env(tmp.path(), OutputLimits::default()));
        let path = r.spill_path().unwrap();
        let shown = r.output.replace(&path.display().to_string(), "<spill>");
        let omitted = shown.lines().find(|l| l.starts_with("[... ")).unwrap();
        assert!(omitted.ends_with(" bytes omitted (line 4 of 4) ...]"), "{omitted}");
        assert!(!shown.contains("lines omitted") && !shown.contains("offset="), "{}", &shown[shown.len() - 300..]);
        assert!(
            shown.ends_with("grep it (lines longer than 2,000 characters are cut when read).]"),
            "{}",
            &shown[shown.len() - 300..]
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn unwritable_spill_dir_still_bounds_and_says_why() {
        let tmp = tempfile::tempdir().unwrap();
        let blocker = tmp.path().join("file");
        std::fs::write(&blocker, "x").unwrap();
        let mut r = result("x\n".repeat(5000));
        bound(&mut r, &env(&blocker, OutputLimits::default()));
        assert!(r.output.contains("The full output could not be saved"), "{}", &r.output[r.output.len() - 200..]);
        assert!(r.output.len() < 60_000);
    }

    #[test]
    fn sink_keeps_everything_under_budget() {
        let tmp = tempfile::tempdir().unwrap();
        let mut sink = OutputSink::new(tmp.path().into(), 100);
        sink.push(b"hello ");
        sink.push(b"world\n");
        let out = sink.finish();
        assert_eq!(out.text, "hello world\n");
        assert!(out.spill.is_none());
    }

    #[test]
    fn sink_spills_the_complete_stream_with_bounded_memory() {
        let tmp = tempfile::tempdir().unwrap();
        let mut sink = OutputSink::new(tmp.path().into(), 1000);
        let mut all = Vec::new();
        for i in 0..10_000 {
            let line = format!("row {i} ✓\n");
            all.extend_from_slice(line.as_bytes());
            sink.push(line.as_bytes());
            assert!(sink.buf.len() + sink.tail.len() <= 1000);
        }
        let out = sink.finish();
        let spill = out.spill.unwrap();
        assert_eq!(std::fs::read(&spill.path).unwrap(), all);
        assert_eq!(spill.total_lines, 10_000);
        assert!(out.text.starts_with("row 0 ✓\n"));
        assert!(out.text.ends_with("row 9999 ✓\n"));
        assert!(out.text.contains("bytes omitted"));
    }

    #[test]
    fn a_flood_keeps_the_first_and_last_halves_of_the_cap_on_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let limits = OutputLimits { spill_max_bytes: 64 * 1024, ..OutputLimits::default() };
        let mut sink = OutputSink::with_limits(tmp.path().to_path_buf(), 4096, limits);
        // 1 MiB of numbered lines, in uneven chunks (some larger than the ring).
        let text: String = (0..100_000).map(|i| format!("{i:09}\n")).collect();
        let bytes = text.as_bytes();
        let mut at = 0;
        for (n, size) in [7usize, 40_000, 100_000, 3, 1 << 20].iter().cycle().enumerate() {
            if at >= bytes.len() || n > 10_000 {
                break;
            }
            let end = (at + size).min(bytes.len());
            sink.push(&bytes[at..end]);
            at = end;
        }
        let out = sink.finish();
        let spill = out.spill.expect("spilled");
        assert_eq!(spill.total_bytes, bytes.len() as u64);
        assert_eq!(spill.dropped_bytes, bytes.len() as u64 - 64 * 1024);
        let on_disk = std::fs::read(&spill.path).unwrap();
        let marker = dropped_line(spill.dropped_bytes, 64 * 1024);
        assert_eq!(on_disk.len(), 64 * 1024 + marker.len());
        assert_eq!(&on_disk[..32 * 1024], &bytes[..32 * 1024]);
        assert_eq!(&on_disk[32 * 1024..32 * 1024 + marker.len()], marker.as_bytes());
        assert_eq!(&on_disk[32 * 1024 + marker.len()..], &bytes[bytes.len() - 32 * 1024..]);
        // The ring file is gone; only the spill file is left.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    }

    #[test]
    fn output_under_the_cap_is_kept_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let limits = OutputLimits { spill_max_bytes: 64 * 1024, ..OutputLimits::default() };
        let mut sink = OutputSink::with_limits(tmp.path().to_path_buf(), 1024, limits);
        let text: Vec<u8> = (0..50_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for chunk in text.chunks(999) {
            sink.push(chunk);
        }
        let spill = sink.finish().spill.unwrap();
        assert_eq!(spill.dropped_bytes, 0);
        assert_eq!(std::fs::read(&spill.path).unwrap(), text);
    }

    #[test]
    fn the_spill_directory_keeps_its_cap_oldest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let limits =
            OutputLimits { spill_max_bytes: 64 * 1024, spill_dir_max_bytes: 200 * 1024, ..OutputLimits::default() };
        let mut paths = Vec::new();
        for i in 0..6u64 {
            let (path, dropped) = write_spill(tmp.path(), "t", &[b'x'; 100 * 1024], limits).unwrap();
            assert_eq!(dropped, 100 * 1024 - 64 * 1024);
            // Written an hour ago and more, oldest first: files of the last minute are kept.
            let age = Duration::from_secs(3600 * (10 - i));
            File::options().write(true).open(&path).unwrap().set_modified(SystemTime::now() - age).unwrap();
            paths.push(path);
        }
        let total: u64 = std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.metadata().unwrap().len()).sum();
        assert!(total <= 200 * 1024, "{total}");
        assert!(paths.last().unwrap().exists() && !paths[0].exists());
    }
}
