//! Property tests of the edit matcher: whatever the model sends, it never panics, an exact
//! unique match is a plain replacement, and a loose match only ever changes the lines it
//! reports: everything before and after them is byte for byte what it was.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use toolshed_tools::fs::edit::matcher::{Edit, Strategy as Matcher, apply};

/// Lines that look like code, with a few near-duplicates so loose matchers have work to do.
const POOL: &[&str] = &[
    "fn main() {",
    "}",
    "let x = 1;",
    "let x = 2;",
    "let y = x + 1;",
    "return y;",
    "if ready {",
    "    start();",
    "log(\"done\");",
    "log(“done”);",
    "",
    "// a — comment",
    "value = compute(a,",
    "    b)",
];

fn line() -> impl Strategy<Value = String> {
    let indent = prop_oneof![Just(""), Just("  "), Just("    "), Just("\t"), Just("        ")];
    let trailing = prop_oneof![Just(""), Just(" "), Just("\t")];
    (0..POOL.len(), indent, trailing).prop_map(|(i, indent, trailing)| format!("{indent}{}{trailing}", POOL[i]))
}

fn file() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(line(), 1..40)
}

/// A slip a model makes when copying lines.
fn slip(line: &str, kind: u8, n: usize) -> String {
    match kind % 6 {
        0 => line.to_string(),
        1 => line.trim_start().to_string(),
        2 => format!("  {line}"),
        3 => format!("{line}  "),
        4 => format!("{}: {line}", n + 1),
        _ => line.replace("    ", "\t"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn loose_matches_only_touch_the_reported_lines(
        lines in file(),
        start in 0usize..40,
        len in 1usize..6,
        kinds in proptest::collection::vec(0u8..6, 6),
        new_lines in proptest::collection::vec(line(), 0..5),
        replace_all in proptest::bool::ANY,
    ) {
        let content = format!("{}\n", lines.join("\n"));
        let start = start % lines.len();
        let end = (start + len).min(lines.len());
        let old: Vec<String> = lines[start..end].iter().enumerate().map(|(i, l)| slip(l, kinds[i % kinds.len()], start + i)).collect();
        let old = old.join("\n");
        let new = new_lines.join("\n");
        prop_assume!(old != new);
        if let Ok(done) = apply(&Edit { content: &content, old: &old, new: &new, replace_all, crlf: false }) {
            if done.strategy == Matcher::Exact && !replace_all && !done.stripped_line_numbers {
                prop_assert_eq!(&done.content, &content.replacen(&old, &new, 1));
            }
            // Bytes before the first reported line, and after the newline ending the last one,
            // are unchanged.
            let first = done.lines.iter().map(|r| r.0).min().unwrap();
            let last = done.lines.iter().map(|r| r.1).max().unwrap();
            let starts: Vec<usize> = std::iter::once(0).chain(content.match_indices('\n').map(|(i, _)| i + 1)).collect();
            let head = &content[..starts[first - 1]];
            let tail = starts.get(last).map_or("", |&s| &content[s..]);
            prop_assert!(done.content.starts_with(head), "text before line {} changed", first);
            prop_assert!(done.content.ends_with(tail), "text after line {} changed", last);
            prop_assert!(done.content.len() >= head.len() + tail.len(), "the kept text overlaps");
        }
    }

    #[test]
    fn arbitrary_input_never_panics(content in ".{0,300}", old in ".{0,60}", new in ".{0,60}", replace_all in proptest::bool::ANY) {
        let _ = apply(&Edit { content: &content, old: &old, new: &new, replace_all, crlf: false });
    }
}
