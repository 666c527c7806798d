//! Property tests: the parser and planner never panic; a patch generated from a random edit of a
//! random file reproduces the edited file; a failing patch or a failing write changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use toolshed_patch::fs::FailOn;
use toolshed_patch::seek::{Tier, seek};
use toolshed_patch::{CommitOptions, Durability, MemFs, apply, parse};

fn relaxed() -> CommitOptions {
    CommitOptions { durability: Durability::Relaxed, ..Default::default() }
}

fn resolve(p: &str) -> Result<PathBuf, String> {
    if p.is_empty() || p.contains('\0') {
        return Err(format!("bad path {p:?}"));
    }
    Ok(Path::new("/w").join(p.trim_start_matches('/')))
}

/// Lines from a small alphabet, so files repeat themselves and matching must use position.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("}".to_string()),
        Just("    x += 1;".to_string()),
        Just("fn f() {".to_string()),
        Just("  a".to_string()),
        Just("a".to_string()),
        "[a-c ]{0,4}",
        "\\PC{0,6}",
    ]
}

#[derive(Clone, Debug)]
enum Edit {
    Keep,
    Delete,
    Replace(String),
    InsertBefore(String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        6 => Just(Edit::Keep),
        1 => Just(Edit::Delete),
        1 => line().prop_map(Edit::Replace),
        1 => line().prop_map(Edit::InsertBefore),
    ]
}

/// One step of the alignment between the old and the new file.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Keep(usize),
    Del(usize),
    Add(String),
}

fn align(old: &[String], edits: &[Edit], tail: &[String]) -> Vec<Step> {
    let mut steps = Vec::new();
    for (i, e) in edits.iter().enumerate().take(old.len()) {
        match e {
            Edit::Keep => steps.push(Step::Keep(i)),
            Edit::Delete => steps.push(Step::Del(i)),
            Edit::Replace(s) => {
                steps.push(Step::Del(i));
                steps.push(Step::Add(s.clone()));
            }
            Edit::InsertBefore(s) => {
                steps.push(Step::Add(s.clone()));
                steps.push(Step::Keep(i));
            }
        }
    }
    for i in edits.len().min(old.len())..old.len() {
        steps.push(Step::Keep(i));
    }
    steps.extend(tail.iter().cloned().map(Step::Add));
    steps
}

/// Writes the `*** Update File` section turning `old` into the new file along `steps`, with
/// `context` lines around changes, widened where needed so every chunk's first match after the
/// previous chunk is the right place. `bare_blank` writes empty context lines as bare blank lines.
fn update_section(path: &str, old: &[String], steps: &[Step], context: usize, bare_blank: bool, eof: bool) -> String {
    let changed: Vec<usize> = (0..steps.len()).filter(|&i| !matches!(steps[i], Step::Keep(_))).collect();
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for &i in &changed {
        match groups.last_mut() {
            Some((_, end)) if i - *end <= 2 * context + 1 => *end = i,
            _ => groups.push((i, i)),
        }
    }
    let mut out = format!("*** Update File: {path}\n");
    let mut index = 0; // old-file line where the next search starts
    let mut consumed = 0; // first step not yet covered by a chunk
    for (gi, &(first, last)) in groups.iter().enumerate() {
        let mut start = first;
        let mut keeps = 0;
        while start > consumed && keeps < context && matches!(steps[start - 1], Step::Keep(_)) {
            start -= 1;
            keeps += 1;
        }
        let next_first = groups.get(gi + 1).map_or(steps.len(), |g| g.0);
        let mut end = last + 1;
        let mut keeps = 0;
        while end < next_first && keeps < context && matches!(steps[end], Step::Keep(_)) {
            end += 1;
            keeps += 1;
        }
        let old_of = |s: &[Step]| -> Vec<usize> {
            s.iter()
                .filter_map(|st| match st {
                    Step::Keep(i) | Step::Del(i) => Some(*i),
                    Step::Add(_) => None,
                })
                .collect()
        };
        let old_at = |s: usize| -> usize {
            steps[s..]
                .iter()
                .find_map(|st| match st {
                    Step::Keep(i) | Step::Del(i) => Some(*i),
                    Step::Add(_) => None,
                })
                .unwrap_or(old.len())
        };
        // Widen until the first match at or after `index` is this chunk's place.
        loop {
            let idx = old_of(&steps[start..end]);
            let pattern: Vec<&str> = idx.iter().map(|&i| old[i].as_str()).collect();
            let at = old_at(start);
            let ok = if pattern.is_empty() {
                // A pure addition without context lands at the end of the file.
                at == old.len() && old.last().is_none_or(|l| !l.is_empty())
            } else {
                seek(&old.iter().map(String::as_str).collect::<Vec<_>>(), &pattern, index, false)
                    == Some((at, Tier::Exact))
            };
            if ok {
                break;
            }
            if start > consumed {
                start -= 1;
            } else if end < next_first {
                end += 1;
            } else {
                unreachable!("a chunk that starts where the search starts always matches there");
            }
        }
        out.push_str("@@\n");
        for st in &steps[start..end] {
            match st {
                Step::Keep(i) if bare_blank && old[*i].is_empty() => out.push('\n'),
                Step::Keep(i) => out.push_str(&format!(" {}\n", old[*i])),
                Step::Del(i) => out.push_str(&format!("-{}\n", old[*i])),
                Step::Add(s) => out.push_str(&format!("+{s}\n")),
            }
        }
        let idx = old_of(&steps[start..end]);
        if eof && end == steps.len() && !idx.is_empty() && *idx.last().unwrap() == old.len() - 1 {
            out.push_str("*** End of File\n");
        }
        index = idx.last().map_or(index, |&i| i + 1);
        consumed = end;
    }
    out
}

fn render(lines: &[String], eol: &str) -> String {
    lines.iter().map(|l| format!("{l}{eol}")).collect()
}

fn new_lines(old: &[String], steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Keep(i) => Some(old[*i].clone()),
            Step::Del(_) => None,
            Step::Add(s) => Some(s.clone()),
        })
        .collect()
}

/// A random file, a random edit of it, and the patch for that edit.
fn edited_file() -> impl Strategy<Value = (Vec<String>, Vec<String>, String, &'static str)> {
    (
        prop::collection::vec(line(), 0..30),
        prop::collection::vec(edit(), 0..30),
        prop::collection::vec(line(), 0..3),
        1usize..4,
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just("\n"), Just("\r\n")],
    )
        .prop_filter_map("no change", |(old, edits, tail, context, bare, eof, eol)| {
            let steps = align(&old, &edits, &tail);
            if steps.iter().all(|s| matches!(s, Step::Keep(_))) {
                return None;
            }
            let new = new_lines(&old, &steps);
            let section = update_section("f.txt", &old, &steps, context, bare, eof);
            Some((old, new, format!("*** Begin Patch\n{section}*** End Patch\n"), eol))
        })
}

/// Lines that look like patch syntax, to reach deep into the parser.
fn patchy_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*** Begin Patch".to_string()),
        Just("*** End Patch".to_string()),
        Just("*** Add File: a.txt".to_string()),
        Just("*** Delete File: a.txt".to_string()),
        Just("*** Update File: a.txt".to_string()),
        Just("*** Update File: b/c.txt".to_string()),
        Just("*** Move to: d.txt".to_string()),
        Just("*** End of File".to_string()),
        Just("*** Environment ID: x".to_string()),
        Just("@@".to_string()),
        Just("@@ a".to_string()),
        Just("@@ -1,2 +1,3 @@ a".to_string()),
        Just("<<'EOF'".to_string()),
        Just("EOF".to_string()),
        Just("```".to_string()),
        Just(String::new()),
        "[ +-][a-c ]{0,3}",
        "\\PC{0,8}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn parsing_never_panics(text in "\\PC*") {
        let _ = parse(&text);
    }

    #[test]
    fn parsing_and_applying_patch_like_text_never_panics(lines in prop::collection::vec(patchy_line(), 0..24), crlf in any::<bool>()) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        let _ = parse(&text);
        let fs = MemFs::new();
        fs.insert_file("/w/a.txt", "a\nb\n  a\n\nc\n");
        fs.insert_file("/w/b/c.txt", "a\r\n");
        let before = fs.files();
        if apply(&text, &fs, resolve, &relaxed()).is_err() {
            prop_assert_eq!(fs.files(), before);
        }
    }

    #[test]
    fn a_generated_patch_reproduces_the_edited_file((old, new, patch, eol) in edited_file()) {
        let fs = MemFs::new();
        fs.insert_file("/w/f.txt", render(&old, eol));
        let result = apply(&patch, &fs, resolve, &relaxed());
        prop_assert!(result.is_ok(), "{:?}\n{}", result, patch);
        let got = String::from_utf8(fs.files()[Path::new("/w/f.txt")].clone()).unwrap();
        // An empty file has no line ending to follow, so new lines get `\n`.
        let new_eol = if old.is_empty() { "\n" } else { eol };
        prop_assert_eq!(got, render(&new, new_eol), "patch:\n{}", patch);
    }

    #[test]
    fn a_failed_write_anywhere_restores_every_file(
        (old, _new, patch, eol) in edited_file(),
        fail_at in 0usize..5,
    ) {
        let fs = MemFs::new();
        fs.insert_file("/w/f.txt", render(&old, eol));
        fs.insert_file("/w/gone.txt", "bye\n");
        let body = patch.trim_start_matches("*** Begin Patch\n").trim_end_matches("*** End Patch\n");
        let patch = format!(
            "*** Begin Patch\n*** Add File: new/dir/n.txt\n+n\n*** Delete File: gone.txt\n{body}*** End Patch\n"
        );
        let (on, suffix) = [
            (FailOn::CreateNew, "tmp"),
            (FailOn::SyncFiles, "tmp"),
            (FailOn::Rename, "n.txt"),
            (FailOn::Rename, "f.txt"),
            (FailOn::SyncDirs, "w"),
        ][fail_at];
        fs.fail(on, suffix);
        let before = (fs.files(), fs.dirs());
        let result = apply(&patch, &fs, resolve, &CommitOptions::default());
        prop_assert!(result.is_err());
        prop_assert_eq!((fs.files(), fs.dirs()), before);
    }
}

/// With `CODEX_APPLY_PATCH` set, Codex's `apply_patch` and this crate turn the same random
/// patches into the same files.
#[test]
fn codex_agrees_on_generated_patches() {
    let Some(codex) = std::env::var_os("CODEX_APPLY_PATCH") else {
        eprintln!("CODEX_APPLY_PATCH not set; skipping the comparison with Codex");
        return;
    };
    let cases: u32 = std::env::var("CODEX_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases, ..ProptestConfig::default() });
    runner
        .run(&edited_file(), |(old, _new, patch, eol)| {
            let dir = tempfile::tempdir().unwrap();
            let (a, b) = (dir.path().join("codex"), dir.path().join("ours"));
            for d in [&a, &b] {
                std::fs::create_dir(d).unwrap();
                std::fs::write(d.join("f.txt"), render(&old, eol)).unwrap();
            }
            std::process::Command::new(&codex).arg(&patch).current_dir(&a).output().unwrap();
            let ours = apply(&patch, &toolshed_patch::OsFs::new(), |p| Ok(b.join(p)), &relaxed());
            prop_assert!(ours.is_ok(), "{:?}", ours);
            prop_assert_eq!(
                std::fs::read(a.join("f.txt")).unwrap(),
                std::fs::read(b.join("f.txt")).unwrap(),
                "patch:\n{}",
                patch
            );
            Ok(())
        })
        .unwrap();
}
