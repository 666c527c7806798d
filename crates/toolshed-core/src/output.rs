//! Output that may be huge, kept within bounds: the limits ([`OutputLimits`]), spill files
//! (capped per call and per directory, old ones swept) and [`OutputSink`], which lets a
//! streaming tool (the shell) spill as it goes instead of holding everything in memory. The
//! executor's bound stage (`exec::bound`) cuts finished results to the same limits.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// Spill files older than this are deleted (at most once per process).
const SPILL_MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// Where a tool already saved its complete output, when it bounded its own text while
/// streaming (the shell does this so a huge output never sits in memory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillInfo {
    /// The file holding the complete output.
    pub path: PathBuf,
    /// Size of the complete output in bytes.
    pub total_bytes: u64,
    /// Number of lines of the complete output.
    pub total_lines: u64,
    /// Bytes of the middle of the output the file does not keep (it passed the spill limit).
    pub dropped_bytes: u64,
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

/// The directories whose spill files share one cap with those of `dir`: `dir`, and where it is
/// one worktree's directory under the data directory's `tool-output/`, every other worktree's
/// and `tool-output/` itself (what older versions saved there).
fn spill_scope(dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![dir.to_path_buf()];
    let Some(top) = dir.parent().filter(|p| p.file_name().is_some_and(|n| n == crate::paths::SPILLS)) else {
        return dirs;
    };
    dirs.push(top.to_path_buf());
    for entry in fs::read_dir(top).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) && entry.path() != dir {
            dirs.push(entry.path());
        }
    }
    dirs
}

fn clean_old_spills(dir: &Path) {
    static CLEANED: AtomicBool = AtomicBool::new(false);
    if CLEANED.swap(true, Ordering::Relaxed) {
        return;
    }
    let now = SystemTime::now();
    let old = |meta: io::Result<fs::Metadata>| {
        meta.and_then(|m| m.modified()).is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > SPILL_MAX_AGE))
    };
    for (i, dir) in spill_scope(dir).into_iter().enumerate() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if (name.ends_with(".txt") || name.ends_with(".ring")) && old(entry.metadata()) {
                let _ = fs::remove_file(entry.path());
            }
        }
        // Another worktree's directory, long unused and left empty, goes too (never this
        // worktree's, nor `tool-output/` itself: the first two).
        if i >= 2 && old(fs::metadata(&dir)) {
            let _ = fs::remove_dir(&dir);
        }
    }
}

/// Deletes the oldest spill files of `dir` until all of them together take at most `cap`
/// bytes. Never `keep`, and never an output still being written (any process's: its `.ring`
/// file exists, or it changed within the last minute), so a path a call reports stays valid
/// while the call runs; the total may pass the cap while several outputs stream at once.
fn enforce_dir_cap(dir: &Path, cap: u64, keep: &Path) {
    const BUSY: Duration = Duration::from_secs(60);
    let now = SystemTime::now();
    let mut files: Vec<(SystemTime, u64, PathBuf)> = spill_scope(dir)
        .iter()
        .flat_map(|d| fs::read_dir(d).into_iter().flatten().flatten())
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

    /// Each worktree saves its outputs in a directory of its own (the sandbox shows a command
    /// only its worktree's), and all of them keep one cap together.
    #[test]
    fn the_worktrees_directories_share_one_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b) = (tmp.path().join("wa"), tmp.path().join("wb"));
        let dir_a = crate::paths::spill_dir(tmp.path(), &a);
        let dir_b = crate::paths::spill_dir(tmp.path(), &b);
        assert!(
            dir_a != dir_b && dir_a.parent() == dir_b.parent() && dir_a.starts_with(tmp.path().join("tool-output"))
        );
        assert_eq!(dir_a, crate::paths::spill_dir(tmp.path(), &a), "stable");
        let limits =
            OutputLimits { spill_max_bytes: 64 * 1024, spill_dir_max_bytes: 150 * 1024, ..OutputLimits::default() };
        let (old, _) = write_spill(&dir_a, "t", &[b'x'; 64 * 1024], limits).unwrap();
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
        let (mid, _) = write_spill(&dir_b, "t", &[b'x'; 64 * 1024], limits).unwrap();
        File::options()
            .write(true)
            .open(&mid)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
        let (new, _) = write_spill(&dir_b, "t", &[b'x'; 64 * 1024], limits).unwrap();
        assert!(!old.exists() && mid.exists() && new.exists(), "the oldest of both went first");
    }
}
