use super::*;
use std::fs;

fn root() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    (tmp, root)
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

async fn call(root: &Path, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext::standalone(root, root.join(".data"));
    GrepTool.run(serde_json::from_value(args).unwrap(), ctx).await
}

fn sample() -> (tempfile::TempDir, PathBuf) {
    let (tmp, root) = root();
    write(&root, "src/lib.rs", "pub fn alpha() {}\nfn beta() {}\npub fn gamma() {}\n");
    write(&root, "src/main.rs", "fn main() {\n    alpha();\n}\n");
    write(&root, "docs/notes.md", "Alpha and ALPHA\n");
    write(&root, "target/debug/gen.rs", "pub fn alpha_generated() {}\n");
    write(&root, ".gitignore", "target/\n");
    fs::write(root.join("blob.bin.txt"), b"alpha\0binary").unwrap();
    (tmp, root)
}

#[tokio::test]
async fn grep_groups_hits_by_file_in_path_order() {
    let (_tmp, root) = sample();
    let out = call(&root, serde_json::json!({"pattern": "alpha"})).await.unwrap();
    insta::assert_snapshot!(out.text, @r"
    Found 2 matching lines in 2 files.
    src/lib.rs
      1: pub fn alpha() {}
    src/main.rs
      2:     alpha();
    ");
    assert_eq!(out.metadata["matches"], 2);
}

#[tokio::test]
async fn grep_modes_include_and_case() {
    let (_tmp, root) = sample();
    let out = call(&root, serde_json::json!({"pattern": "alpha", "case_insensitive": true, "output_mode": "count"}))
        .await
        .unwrap();
    insta::assert_snapshot!(out.text, @r"
    docs/notes.md: 1
    src/lib.rs: 1
    src/main.rs: 1

    (3 matching lines in 3 files.)
    ");
    let out = call(
        &root,
        serde_json::json!({"pattern": "fn \\w+\\(", "output_mode": "files_with_matches", "include": "*.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(out.text, "src/lib.rs\nsrc/main.rs");
    // A leading `!` leaves out what it matches, as ripgrep's `-g` does.
    let out = call(
        &root,
        serde_json::json!({"pattern": "alpha", "case_insensitive": true, "output_mode": "files_with_matches", "include": " !*.rs"}),
    )
    .await
    .unwrap();
    assert_eq!(out.text, "docs/notes.md");
    // ... and a directory it names, with what is under it.
    for skip in ["!src", "!src/", "!src/**"] {
        let out = call(
            &root,
            serde_json::json!({"pattern": "alpha", "case_insensitive": true, "output_mode": "files_with_matches", "include": skip}),
        )
        .await
        .unwrap();
        assert_eq!(out.text, "docs/notes.md", "{skip}");
    }
    let err = call(&root, serde_json::json!({"pattern": "alpha", "include": "! "})).await.unwrap_err();
    assert!(err.to_string().contains("leaves nothing out"), "{err}");
    for misplaced in ["src/!*.rs", "!!*.rs", "!src/!x", "*.!(md)", "!(weird).md", "!{a,!b}", "!docs\\!todo.md"] {
        let err = call(&root, serde_json::json!({"pattern": "alpha", "include": misplaced})).await.unwrap_err();
        assert!(err.to_string().contains("only at the very start"), "{misplaced}: {err}");
    }
    // A name's own `!` is escaped.
    write(&root, "docs/!todo.md", "Alpha\n");
    for (include, found) in [
        ("\\!todo.md", "docs/!todo.md"),
        ("docs/\\!*", "docs/!todo.md"),
        ("!\\!*", "docs/notes.md\nsrc/lib.rs\nsrc/main.rs"),
    ] {
        let out = call(
            &root,
            serde_json::json!({"pattern": "alpha", "case_insensitive": true, "output_mode": "files_with_matches", "include": include}),
        )
        .await
        .unwrap();
        assert_eq!(out.text, found, "{include}");
    }
    let err = call(&root, serde_json::json!({"pattern": "alpha", "include": "docs/!todo.md"})).await.unwrap_err();
    assert!(err.to_string().contains("`\\!name`"), "{err}");
    let out = call(&root, serde_json::json!({"pattern": "fn", "path": "src/main.rs"})).await.unwrap();
    assert!(out.text.starts_with("Found 1 matching line in 1 file.\nsrc/main.rs\n  1: fn main() {"), "{}", out.text);
}

#[tokio::test]
async fn grep_shows_context_with_gaps() {
    let (_tmp, root) = root();
    let text: String =
        (1..=12).map(|i| if i == 3 || i == 10 { format!("hit {i}\n") } else { format!("line {i}\n") }).collect();
    write(&root, "f.txt", &text);
    let out = call(&root, serde_json::json!({"pattern": "hit", "context": 1})).await.unwrap();
    insta::assert_snapshot!(out.text, @r"
    Found 2 matching lines in 1 file.
    f.txt
      2- line 2
      3: hit 3
      4- line 4
      --
      9- line 9
      10: hit 10
      11- line 11
    ");
}

#[tokio::test]
async fn grep_caps_hits_and_says_how_many_more() {
    let (_tmp, root) = root();
    for f in 0..3 {
        let text: String = (0..50).map(|i| format!("needle {f}-{i}\n")).collect();
        write(&root, &format!("f{f}.txt"), &text);
    }
    let out = call(&root, serde_json::json!({"pattern": "needle"})).await.unwrap();
    let lines: Vec<&str> = out.text.lines().collect();
    assert_eq!(lines[0], "Found 150 matching lines in 3 files.");
    assert_eq!(lines.iter().filter(|l| l.contains(": needle")).count(), 100);
    insta::assert_snapshot!(lines.last().unwrap(), @"(50 more matching lines not shown. Narrow the pattern, path or include, or raise limit.)");
    write(&root, "sub/g.txt", "x\nhit a\nx\nx\nhit b\nx\nx\nx\nhit c\n");
    let out =
        call(&root, serde_json::json!({"pattern": "hit", "path": "sub", "limit": 2, "context": 1})).await.unwrap();
    insta::assert_snapshot!(out.text, @r"
    Found 3 matching lines in 1 file.
    sub/g.txt
      1- x
      2: hit a
      3- x
      4- x
      5: hit b
      6- x

    (1 more matching line not shown. Narrow the pattern, path or include, or raise limit.)
    ");
}

#[tokio::test]
async fn grep_cuts_long_lines_around_the_match() {
    let (_tmp, root) = root();
    let line = format!("{}NEEDLE{}", "a".repeat(3000), "b".repeat(3000));
    write(&root, "min.js", &format!("{line}\n"));
    let out = call(&root, serde_json::json!({"pattern": "NEEDLE"})).await.unwrap();
    let hit = out.text.lines().nth(2).unwrap();
    assert!(hit.contains("NEEDLE"), "{hit}");
    assert!(hit.len() < 600, "{}", hit.len());
    assert!(hit.ends_with("… (line of 6006 chars cut)"), "{hit}");
}

#[tokio::test]
async fn grep_explains_bad_patterns_and_empty_results() {
    let (_tmp, root) = sample();
    let err = call(&root, serde_json::json!({"pattern": "fn main("})).await.unwrap_err();
    assert!(err.to_string().starts_with("The pattern `fn main(` is not a valid regular expression:"), "{err}");
    assert!(err.to_string().contains("Escape literal special characters"), "{err}");
    let out = call(&root, serde_json::json!({"pattern": "zebra"})).await.unwrap();
    assert_eq!(out.text, "No matches for `zebra` in `.`.");
    let err = call(&root, serde_json::json!({"pattern": "x", "path": "nowhere"})).await.unwrap_err();
    assert!(err.to_string().contains("Path not found"), "{err}");
}
