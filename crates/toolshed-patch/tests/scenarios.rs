//! The scenario suite: `tests/fixtures/scenarios/*/{input,patch.txt,expected}` (Codex's layout),
//! applied with the real file system and compared byte for byte, directories included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use toolshed_patch::{CommitOptions, OsFs, apply};

/// Scenarios where toolshed deliberately differs from Codex's `apply_patch` (release 0.171.0).
const CODEX_DIFFERS: &[(&str, &str)] = &[
    ("015_failure_after_success_writes_nothing", "all or nothing: Codex keeps the earlier hunks"),
    ("026_bom_is_kept", "Codex matches the BOM as part of the first line and fails"),
    ("031_stacked_context_headers", "Codex rejects a second @@ line"),
    ("037_rename_without_changes", "Codex rejects an Update with only a Move to"),
    ("038_pure_addition_after_context", "Codex appends pure additions at the end of the file"),
    ("039_end_of_file_falls_back_to_search", "Codex tries only the end of the file"),
    ("040_failure_in_second_file_writes_nothing", "all or nothing: Codex keeps the earlier hunks"),
    ("043_unified_diff_header", "Codex looks for the range text as a context line"),
    ("044_code_fence_wrapper", "Codex rejects a fenced patch"),
    ("046_add_file_blank_lines_between_plus_lines", "Codex rejects a blank line in an Add File"),
    ("049_non_utf8_bytes_survive", "Codex cannot read a file that is not UTF-8"),
    ("053_move_to_same_path_is_an_update", "Codex writes the file, then deletes it as the moved source"),
    ("059_rejects_adding_one_file_twice", "Codex writes the second Add File's lines"),
];

#[derive(Debug, PartialEq, Eq)]
enum Entry {
    Dir,
    File(Vec<u8>),
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if path.is_dir() {
                out.insert(rel, Entry::Dir);
                walk(root, &path, out);
            } else {
                out.insert(rel, Entry::File(fs::read(&path).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    let Ok(entries) = fs::read_dir(from) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        let dest = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &dest);
        } else {
            fs::copy(&path, &dest).unwrap();
        }
    }
}

fn scenarios() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios");
    let mut dirs: Vec<PathBuf> =
        fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    dirs
}

fn show(tree: &BTreeMap<PathBuf, Entry>) -> String {
    tree.iter()
        .map(|(p, e)| match e {
            Entry::Dir => format!("{}/\n", p.display()),
            Entry::File(d) => format!("{}: {:?}\n", p.display(), String::from_utf8_lossy(d)),
        })
        .collect()
}

/// Runs one scenario with `run(work_dir, patch_text)` and returns whether the tree matched.
fn check(dir: &Path, run: impl FnOnce(&Path, &str)) -> Result<(), String> {
    let work = tempfile::tempdir().unwrap();
    copy_tree(&dir.join("input"), work.path());
    let patch = String::from_utf8(fs::read(dir.join("patch.txt")).unwrap()).unwrap();
    run(work.path(), &patch);
    let got = snapshot(work.path());
    let want = snapshot(&dir.join("expected"));
    if got == want { Ok(()) } else { Err(format!("got:\n{}want:\n{}", show(&got), show(&want))) }
}

#[test]
fn every_scenario_produces_its_expected_tree() {
    let dirs = scenarios();
    assert!(dirs.len() >= 40, "only {} scenarios", dirs.len());
    let mut failures = Vec::new();
    for dir in &dirs {
        let result = check(dir, |work, patch| {
            let _ = apply(patch, &OsFs::new(), |p| Ok(work.join(p)), &CommitOptions::default());
        });
        if let Err(diff) = result {
            failures.push(format!("{}:\n{diff}", dir.file_name().unwrap().to_string_lossy()));
        }
    }
    assert!(failures.is_empty(), "{} of {} scenarios failed:\n{}", failures.len(), dirs.len(), failures.join("\n"));
}

#[test]
fn failing_scenarios_report_an_error_and_the_others_succeed() {
    for dir in scenarios() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let should_fail = name.contains("rejects")
            || name.contains("writes_nothing")
            || name.contains("fails")
            || name.starts_with("007")
            || name.starts_with("009");
        let mut outcome = None;
        check(&dir, |work, patch| {
            outcome = Some(apply(patch, &OsFs::new(), |p| Ok(work.join(p)), &CommitOptions::default()));
        })
        .unwrap_or_default();
        let outcome = outcome.unwrap();
        assert_eq!(outcome.is_err(), should_fail, "{name}: {outcome:?}");
    }
}

/// With `CODEX_APPLY_PATCH` pointing at Codex's `apply_patch`, checks that Codex agrees on every
/// scenario except the deliberate differences, and disagrees on those.
#[test]
fn codex_agrees_except_where_listed() {
    let Some(codex) = std::env::var_os("CODEX_APPLY_PATCH") else {
        eprintln!("CODEX_APPLY_PATCH not set; skipping the comparison with Codex");
        return;
    };
    let mut report = Vec::new();
    for dir in scenarios() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let result = check(&dir, |work, patch| {
            Command::new(&codex).arg(patch).current_dir(work).output().unwrap();
        });
        let listed = CODEX_DIFFERS.iter().any(|(n, _)| *n == name);
        match (result, listed) {
            (Ok(()), true) => report.push(format!("{name}: listed as different, but Codex agrees")),
            (Err(diff), false) => report.push(format!("{name}: Codex differs:\n{diff}")),
            _ => {}
        }
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}
