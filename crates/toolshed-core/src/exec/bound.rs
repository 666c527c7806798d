//! Stage 7, bound: an output over the budget (2,000 lines or 50 KiB by default) keeps its
//! head and tail, cut on line or UTF-8 boundaries, and the complete text goes to a spill file
//! whose path the model is told (spill files and streaming output: [`crate::output`]).

use serde_json::Value;

use super::ToolResult;
use crate::context::Environment;
use crate::output::{OutputLimits, SpillInfo, write_spill};

/// Bytes of the budget kept free for the truncation notices.
const NOTICE_RESERVE: usize = 512;

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
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
            refused_at: None,
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
}
