//! Finding a chunk's lines in a file: Codex's four tiers, from strictest to loosest. The first
//! tier that matches anywhere after the start wins, so an exact match is always preferred to a
//! fuzzy one further up.

/// How closely the file matched the patch's lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Byte for byte.
    Exact,
    /// Equal after trimming trailing whitespace.
    TrailingWhitespace,
    /// Equal after trimming whitespace at both ends.
    Trimmed,
    /// Equal after trimming and mapping typographic dashes, quotes and spaces to ASCII.
    Punctuation,
}

const TIERS: [Tier; 4] = [Tier::Exact, Tier::TrailingWhitespace, Tier::Trimmed, Tier::Punctuation];

/// Maps the typographic characters models and editors swap for ASCII ones (Codex's table;
/// `…` is deliberately not mapped).
pub fn normalize_char(c: char) -> char {
    match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}' | '\u{2212}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}' | '\u{2003}' | '\u{2004}' | '\u{2005}' | '\u{2006}' | '\u{2007}' | '\u{2008}'
        | '\u{2009}' | '\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

fn line_eq(tier: Tier, a: &str, b: &str) -> bool {
    match tier {
        Tier::Exact => a == b,
        Tier::TrailingWhitespace => a.trim_end() == b.trim_end(),
        Tier::Trimmed => a.trim() == b.trim(),
        Tier::Punctuation => a.trim().chars().map(normalize_char).eq(b.trim().chars().map(normalize_char)),
    }
}

fn matches_at<L: AsRef<str>>(tier: Tier, lines: &[L], pattern: &[&str], pos: usize) -> bool {
    lines[pos..pos + pattern.len()].iter().zip(pattern).all(|(l, p)| line_eq(tier, l.as_ref(), p))
}

/// Finds `pattern` in `lines` at or after `start`. With `end_of_file`, the position that ends
/// the file is tried first in every tier, then the rest as usual (Codex tries only that one).
/// An empty pattern matches at `start`.
pub fn seek<L: AsRef<str>>(lines: &[L], pattern: &[&str], start: usize, end_of_file: bool) -> Option<(usize, Tier)> {
    if pattern.is_empty() {
        return Some((start.min(lines.len()), Tier::Exact));
    }
    let last = lines.len().checked_sub(pattern.len())?;
    if start > last {
        return None;
    }
    if end_of_file {
        for tier in TIERS {
            if matches_at(tier, lines, pattern, last) {
                return Some((last, tier));
            }
        }
    }
    for tier in TIERS {
        if let Some(pos) = (start..=last).find(|&pos| matches_at(tier, lines, pattern, pos)) {
            return Some((pos, tier));
        }
    }
    None
}

/// The window of `pattern.len()` lines most similar to `pattern` (for error messages): its
/// start and a score in 0..=1. Lines are compared trimmed; on large inputs only equal lines
/// score, to bound the cost.
pub fn closest<L: AsRef<str>>(lines: &[L], pattern: &[&str]) -> Option<(usize, f64)> {
    let n = pattern.len();
    if n == 0 || lines.is_empty() {
        return None;
    }
    let windows = lines.len().saturating_sub(n) + 1;
    let fine = windows.saturating_mul(n) <= 40_000;
    let score_line = |a: &str, b: &str| {
        let (a, b) = (a.trim(), b.trim());
        if a == b {
            1.0
        } else if fine {
            strsim::normalized_levenshtein(a, b)
        } else {
            0.0
        }
    };
    let mut best: Option<(usize, f64)> = None;
    for pos in 0..windows {
        let window = &lines[pos..(pos + n).min(lines.len())];
        let total: f64 = window.iter().zip(pattern).map(|(l, p)| score_line(l.as_ref(), p)).sum();
        let score = total / n as f64;
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((pos, score));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_go_from_exact_to_punctuation() {
        let lines = ["fn a() {", "  let x = 1;  ", "\u{a0} say(\u{201c}hi\u{201d}) \u{2013} ok"];
        assert_eq!(seek(&lines, &["fn a() {"], 0, false), Some((0, Tier::Exact)));
        assert_eq!(seek(&lines, &["  let x = 1;"], 0, false), Some((1, Tier::TrailingWhitespace)));
        assert_eq!(seek(&lines, &["let x = 1;"], 0, false), Some((1, Tier::Trimmed)));
        assert_eq!(seek(&lines, &["say(\"hi\") - ok"], 0, false), Some((2, Tier::Punctuation)));
        assert_eq!(seek(&lines, &["say(\"hi\") ... ok"], 0, false), None);
    }

    #[test]
    fn an_exact_match_later_beats_a_fuzzy_one_earlier() {
        let lines = ["x ", "y", "x"];
        assert_eq!(seek(&lines, &["x"], 0, false), Some((2, Tier::Exact)));
    }

    #[test]
    fn search_starts_at_start_and_never_runs_past_the_end() {
        let lines = ["a", "b", "a"];
        assert_eq!(seek(&lines, &["a"], 1, false), Some((2, Tier::Exact)));
        assert_eq!(seek(&lines, &["a", "b", "a", "b"], 0, false), None);
        assert_eq!(seek(&lines, &["a"], 3, false), None);
        assert_eq!(seek(&lines, &[], 2, false), Some((2, Tier::Exact)));
    }

    #[test]
    fn end_of_file_prefers_the_last_position_then_falls_back() {
        let lines = ["a", "b", "a"];
        assert_eq!(seek(&lines, &["a"], 0, true), Some((2, Tier::Exact)));
        assert_eq!(seek(&lines, &["b"], 0, true), Some((1, Tier::Exact)));
    }

    #[test]
    fn closest_finds_the_most_similar_window() {
        let lines = ["fn main() {", "    let x = 1;", "    println!(x);", "}"];
        let (pos, score) = closest(&lines, &["    let x = 2;", "    println!(x);"]).unwrap();
        assert_eq!(pos, 1);
        assert!(score > 0.9 && score < 1.0, "{score}");
    }
}
