//! `@` mentions: the worktree's files (as `.gitignore` leaves them) matched fuzzily against
//! what follows the `@`, and, when the prompt is sent, the mentioned files attached to it.

use std::path::Path;

/// The most files listed from a worktree.
const MAX_FILES: usize = 50_000;
/// The most bytes of one attached file.
pub const MAX_ATTACHED_BYTES: usize = 100 * 1024;

/// The worktree's files, relative, sorted; hidden files and ignored ones left out.
pub fn files(root: &Path) -> Vec<String> {
    let mut out: Vec<String> = ignore::WalkBuilder::new(root)
        .require_git(false)
        .build()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|e| e.path().strip_prefix(root).ok().map(|p| p.to_string_lossy().into_owned()))
        .take(MAX_FILES)
        .collect();
    out.sort();
    out
}

/// How well `path` matches `query` (its characters in order, case-insensitive), higher is
/// better; `None` when it does not. Consecutive characters, matches in the file name and
/// shorter paths score higher.
pub fn score(query: &str, path: &str) -> Option<i64> {
    if query.is_empty() {
        return Some(-(path.len() as i64));
    }
    let lower = path.to_lowercase();
    let name_start = lower.rfind('/').map_or(0, |i| i + 1);
    let mut score = 0i64;
    let mut at = 0usize;
    let mut previous: Option<usize> = None;
    for q in query.to_lowercase().chars() {
        let found = lower[at..].find(q)? + at;
        score += 10;
        if previous.is_some_and(|p| p + 1 == found) {
            score += 15;
        }
        if found >= name_start {
            score += 10;
        }
        if found == name_start || lower[..found].ends_with(['/', '_', '-', '.']) {
            score += 8;
        }
        previous = Some(found);
        at = found + q.len_utf8();
    }
    Some(score * 100 - path.len() as i64)
}

/// The best `limit` matches of `query` among `files`.
pub fn best<'a>(query: &str, files: &'a [String], limit: usize) -> Vec<&'a str> {
    let mut scored: Vec<(i64, &str)> = files.iter().filter_map(|f| score(query, f).map(|s| (s, f.as_str()))).collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(limit).map(|(_, f)| f).collect()
}

/// `prompt` with the files it mentions (`@path`, inside the worktree) attached after it.
pub fn attach(prompt: &str, root: &Path) -> String {
    let mut out = prompt.to_string();
    let mut seen = Vec::new();
    for word in prompt.split_whitespace() {
        let Some(rel) = word.strip_prefix('@').map(|w| w.trim_end_matches([',', '.', ';', ':', ')', '?', '!'])) else {
            continue;
        };
        if rel.is_empty() || seen.contains(&rel) || rel.split('/').any(|c| c == "..") || Path::new(rel).is_absolute() {
            continue;
        }
        // A link inside the worktree that leads out of it is not followed.
        let (Ok(real), Ok(real_root)) = (root.join(rel).canonicalize(), root.canonicalize()) else { continue };
        if !real.starts_with(&real_root) {
            continue;
        }
        let Ok(bytes) = std::fs::read(real) else { continue };
        seen.push(rel);
        let cut = bytes.len() > MAX_ATTACHED_BYTES;
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_ATTACHED_BYTES)]).into_owned();
        out.push_str(&format!("\n\n<file path=\"{rel}\">\n{text}"));
        if cut {
            out.push_str(&format!("\n[… {} more bytes; read the file for the rest]", bytes.len() - MAX_ATTACHED_BYTES));
        }
        out.push_str("\n</file>");
    }
    out
}

/// What the person typed of a prompt [`attach`] made: the files attached after it left out (a
/// resumed session shows the prompt as it was written, not the files' contents), and how many
/// there were. A `<file path=...>` block counts only where the text before it mentions that
/// path (`@path`), so a prompt that quotes such a tag itself is shown whole.
pub fn typed_part(stored: &str) -> (&str, usize) {
    let mut end = stored.len();
    let mut files = 0;
    let mut rest = stored;
    while let Some(at) = rest.find("\n\n<file path=\"") {
        let start = stored.len() - rest.len() + at;
        let after = &stored[start + "\n\n<file path=\"".len()..];
        let Some(quote) = after.find('"') else { break };
        let path = &after[..quote];
        if !stored[..start.min(end)].contains(&format!("@{path}")) {
            break;
        }
        if files == 0 {
            end = start;
        }
        files += 1;
        let Some(close) = after.find("\n</file>") else { break };
        rest = &after[close + "\n</file>".len()..];
    }
    (&stored[..end], files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_matches_prefer_names_and_runs() {
        let files: Vec<String> = ["src/main.rs", "src/lib.rs", "docs/maintenance.md", "crates/toolshed-tui/src/app.rs"]
            .map(String::from)
            .to_vec();
        assert_eq!(best("main", &files, 2), ["src/main.rs", "docs/maintenance.md"]);
        assert_eq!(best("tuiapp", &files, 1), ["crates/toolshed-tui/src/app.rs"]);
        assert!(best("zzz", &files, 5).is_empty());
        assert_eq!(best("", &files, 1), ["src/lib.rs"], "no query: the shortest");
    }

    #[test]
    fn mentioned_files_are_attached_and_nothing_outside_the_worktree() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(dir.path().join("ignored.txt"), "x").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        let out = attach("look at @a.txt, and @../etc/passwd and @missing.txt and @link", dir.path());
        assert!(!out.contains("s3cret"), "a link out of the worktree is not followed: {out}");
        assert!(out.starts_with("look at @a.txt,"));
        assert!(out.contains("<file path=\"a.txt\">\nalpha\n\n</file>"), "{out}");
        assert!(!out.contains("passwd\">") && !out.contains("missing.txt\">"), "{out}");
        let listed = files(dir.path());
        assert!(listed.contains(&"a.txt".to_string()) && !listed.contains(&"ignored.txt".to_string()), "{listed:?}");
    }

    #[test]
    fn the_typed_part_leaves_the_attached_files_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
        std::fs::write(dir.path().join("b.txt"), "beta\n\n<file path=\"x\">\n").unwrap();
        let sent = attach("compare @a.txt with @b.txt", dir.path());
        assert_eq!(typed_part(&sent), ("compare @a.txt with @b.txt", 2));
        assert_eq!(typed_part("no files"), ("no files", 0));
        // A tag the person typed, for a path not mentioned, stays.
        let typed = "what does this mean?\n\n<file path=\"z\">\nq\n</file>";
        assert_eq!(typed_part(typed), (typed, 0));
    }
}
