use super::*;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolshed_core::context::{CallInfo, CancellationToken, Environment};
use toolshed_core::hooks::PostWriteHook;
use toolshed_core::permission::AllowAll;
use toolshed_core::tool::BoxFuture;

fn root() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    (tmp, root)
}

fn args(file: &str, old: &str, new: &str) -> EditArgs {
    serde_json::from_value(serde_json::json!({"file_path": file, "old_string": old, "new_string": new})).unwrap()
}

#[tokio::test]
async fn edit_result_names_the_matcher_and_shows_the_diff() {
    let (_tmp, root) = root();
    fs::write(root.join("a.py"), "class A:\n    def f(self):\n        return 1\n").unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let out =
        EditTool.run(args("a.py", "def f(self):\n    return 1", "def f(self):\n    return 2"), ctx).await.unwrap();
    insta::assert_snapshot!(out.text, @r"
    Edited `a.py`: replaced 1 occurrence (lines 2-3). old_string was matched ignoring a uniform indentation shift; new_string was indented 4 spaces more to fit.

    --- a/a.py
    +++ b/a.py
    @@ -1,3 +1,3 @@
     class A:
         def f(self):
    -        return 1
    +        return 2
    ");
    assert_eq!(out.metadata["strategy"], "indentation");
}

#[tokio::test]
async fn edit_not_found_shows_the_closest_region() {
    let (_tmp, root) = root();
    fs::write(root.join("c.toml"), "[server]\nport = 8080\nhost = \"0.0.0.0\"\n").unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let err = EditTool
        .run(args("c.toml", "port = 8000\nhost = \"0.0.0.0\"", "port = 9000\nhost = \"0.0.0.0\""), ctx)
        .await
        .unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"
    Could not find old_string in `c.toml`. The most similar text is at lines 2-3; it differs like this (- old_string, + the file):
    -port = 8000
    +port = 8080
     host = "0.0.0.0"

    Copy old_string exactly from the file (read it with offset=1 limit=6) and call edit again.
    "#);
}

struct Diagnostics;

impl PostWriteHook for Diagnostics {
    fn after_write<'a>(&'a self, _ctx: &'a ToolContext, files: &'a [PathBuf]) -> BoxFuture<'a, Option<String>> {
        let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
        Box::pin(async move { Some(format!("LSP errors detected in {name}: none")) })
    }
}

fn context_with_hook(root: &Path) -> ToolContext {
    let mut env = Environment::new(root, root.join(".data"));
    env.hooks.add_post_write(Arc::new(Diagnostics));
    ToolContext::new(CallInfo::default(), Arc::new(env), CancellationToken::new(), Arc::new(AllowAll))
}

#[tokio::test]
async fn edit_appends_what_post_write_hooks_report() {
    let (_tmp, root) = root();
    fs::write(root.join("x.rs"), "let a = 1;\n").unwrap();
    let out = EditTool.run(args("x.rs", "a = 1", "a = 2"), context_with_hook(&root)).await.unwrap();
    assert!(out.text.ends_with("\n\nLSP errors detected in x.rs: none"), "{}", out.text);
}

#[tokio::test]
async fn concurrent_edits_of_one_file_are_serialised_and_none_is_lost() {
    let (_tmp, root) = root();
    let text: String = (0..16).map(|i| format!("value_{i} = 0\n")).collect();
    fs::write(root.join("many.txt"), text).unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let ctx = ctx.clone();
        tasks.push(tokio::spawn(async move {
            EditTool.run(args("many.txt", &format!("value_{i} = 0"), &format!("value_{i} = {}", i + 1)), ctx).await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let after = fs::read_to_string(root.join("many.txt")).unwrap();
    let expected: String = (0..16).map(|i| format!("value_{i} = {}\n", i + 1)).collect();
    assert_eq!(after, expected);
}

#[tokio::test]
async fn edit_refuses_directories_and_edits_that_change_nothing() {
    let (_tmp, root) = root();
    fs::create_dir(root.join("d")).unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let err = EditTool.run(args("d", "a", "b"), ctx.clone()).await.unwrap_err();
    assert!(err.to_string().contains("is a directory"), "{err}");
    fs::write(root.join("t.txt"), "x = 1  \ny = 2\n").unwrap();
    let err = EditTool.run(args("t.txt", "x = 1 \ny = 2", "x = 1  \ny = 2"), ctx).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"No changes to apply: the edit leaves `t.txt` as it is (the text was matched ignoring trailing whitespace). Check new_string.");
}

#[tokio::test]
async fn edit_refuses_to_write_through_a_link_out_of_the_worktree() {
    let (tmp, root) = root();
    let outside = tmp.path().join("outside.txt");
    let root = root.join("wt");
    fs::create_dir(&root).unwrap();
    fs::write(&outside, "secret = 1\n").unwrap();
    std::os::unix::fs::symlink(&outside, root.join("link.txt")).unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let err = EditTool.run(args("link.txt", "secret = 1", "secret = 2"), ctx).await.unwrap_err();
    assert!(err.to_string().contains("never write through a link that leaves the worktree"), "{err}");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "secret = 1\n");
}

/// Review H1: a `\r` of the file's own before a CRLF ending (`x\r\r\n`) was lost by an edit
/// elsewhere in the file.
#[tokio::test]
async fn edit_of_a_crlf_file_gives_back_untouched_bytes_exactly() {
    let (_tmp, root) = root();
    fs::write(root.join("c.txt"), b"x\r\r\na\r\nb\r\n").unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    EditTool.run(args("c.txt", "b", "B"), ctx).await.unwrap();
    assert_eq!(fs::read(root.join("c.txt")).unwrap(), b"x\r\r\na\r\nB\r\n");
}

/// Review L2: `a` → `a\r` in a CRLF file said "replaced 1 occurrence" and left the bytes as they
/// were.
#[tokio::test]
async fn edit_refuses_a_carriage_return_ending_new_string_in_a_crlf_file() {
    let (_tmp, root) = root();
    fs::write(root.join("c.txt"), b"a\r\nb\r\n").unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let err = EditTool.run(args("c.txt", "a", "a\r"), ctx.clone()).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"Refusing the edit: new_string ends a line with a carriage return (`\\r`) that old_string does not have. `c.txt` has CRLF line endings, which edit writes by itself, so a `\\r` in new_string would be an extra character in the file. Nothing was changed. Send new_string without the `\\r`.");
    let err = EditTool.run(args("c.txt", "a", "a\r\r\nc"), ctx).await.unwrap_err();
    assert!(err.to_string().contains("carriage return"), "{err}");
    assert_eq!(fs::read(root.join("c.txt")).unwrap(), b"a\r\nb\r\n");
}

fn args_all(file: &str, old: &str, new: &str) -> EditArgs {
    serde_json::from_value(
        serde_json::json!({"file_path": file, "old_string": old, "new_string": new, "replace_all": true}),
    )
    .unwrap()
}

/// Review H5: the whitespace matcher took the first of two matches on one line (and
/// `replace_all` counted 2 while replacing fewer).
#[tokio::test]
async fn whitespace_matches_on_one_line_are_all_seen() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("w.py"), "x = a  +  b; y = a +  b;\n").unwrap();
    let err = EditTool.run(args("w.py", "a + b", "c"), ctx.clone()).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"old_string matches 2 places in `w.py` (ignoring differences in whitespace), starting at line 1 (more than one on a line). Include more surrounding lines in old_string so it matches exactly one place, or set replace_all to true to change all of them.");
    assert_eq!(fs::read_to_string(root.join("w.py")).unwrap(), "x = a  +  b; y = a +  b;\n");
    fs::write(root.join("w.py"), "x = a  +  b; y = a +  b;\nz = a  + b;\n").unwrap();
    let out = EditTool.run(args_all("w.py", "a + b", "c"), ctx).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("w.py")).unwrap(), "x = c; y = c;\nz = c;\n");
    assert_eq!(out.metadata["replacements"], 3);
    assert!(out.text.starts_with("Edited `w.py`: replaced 3 occurrences"), "{}", out.text);
}

/// Review H3: with old_string numbered and new_string only partly, the numbers were written
/// into the file and the result said they had been removed.
#[tokio::test]
async fn partly_numbered_new_string_is_refused() {
    let (_tmp, root) = root();
    fs::write(root.join("n.txt"), "a\nb\nc\n").unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let err = EditTool.run(args("n.txt", "2: b\n3: c", "2: b\nX\n3: c"), ctx.clone()).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"Nothing was changed in `n.txt`: old_string carries the line-number prefixes of read's output (`2: ` on its first line), and new_string's lines are not all numbered the same way counting up from 2, so which of its numbers are read's to remove and which are text is unclear. Send old_string and new_string without the `N: ` prefixes, exactly as the lines are in the file."#);
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "a\nb\nc\n");
    // Numbered throughout, or not at all: both work, and the result says where numbers went.
    let out = EditTool.run(args("n.txt", "2: b\n3: c", "2: b\n3: X\n4: c"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "a\nb\nX\nc\n");
    assert!(out.text.contains("were removed from old_string and new_string;"), "{}", out.text);
    let out = EditTool.run(args("n.txt", "3: X\n4: c", "Y\nc"), ctx).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "a\nb\nY\nc\n");
    assert!(out.text.contains("were removed from old_string;"), "{}", out.text);
}

/// Review M6: read's numbers on every line of new_string (and none in old_string) were written
/// into the file.
#[tokio::test]
async fn new_string_numbered_like_read_output_is_refused() {
    let (_tmp, root) = root();
    fs::write(root.join("n.txt"), "a\nb\nc\n").unwrap();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let err = EditTool.run(args("n.txt", "b\nc", "2: B\n3: C"), ctx.clone()).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"Nothing was changed in `n.txt`: every line of new_string starts with a line number (`2: ` on the first), counting up from line 2, the first line it replaces, as read shows the lines; old_string has no such numbers. They are read's, not part of the file. Send new_string without the `N: ` prefixes."#);
    let err = EditTool.run(args("n.txt", "b\nc", "     2\tB\n     3\tC"), ctx.clone()).await.unwrap_err();
    assert!(err.to_string().contains("Send new_string without the `N: ` prefixes"), "{err}");
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "a\nb\nc\n");
    // Numbers that are not the lines replaced are text (a YAML map, say).
    EditTool.run(args("n.txt", "b\nc", "7: B\n8: C"), ctx).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "a\n7: B\n8: C\n");
}

/// Review H2: old_string found after reading its escapes, and new_string's own escapes (meant
/// as text) read as characters too: a real line break inside a string, a real tab in a regex.
#[tokio::test]
async fn escapes_in_new_string_are_read_only_when_certain() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("p.py"), "print(\"hi\")\n").unwrap();
    let err = EditTool.run(args("p.py", r#"print(\"hi\")"#, r#"print("hi\n")"#), ctx.clone()).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"Nothing was changed in `p.py`: old_string was found only after reading its backslash escapes as characters (such as `\"` as `"`), and new_string cannot be read the same way for certain: it has `\n`, an escape old_string does not use. Written either way it could put a character where you meant an escape, or the reverse. Send old_string and new_string unescaped, exactly as the text is in the file (a line break as a line break, a backslash only where the file has one)."#);
    let err = EditTool
        .run(args("p.py", r#"print(\"hi\")"#, r#"print(\"hi\")\nx = re.compile(r"\ta+\$")"#), ctx.clone())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("an escape old_string does not use"), "{err}");
    let err =
        EditTool.run(args("p.py", r#"print(\"hi\")"#, r#"x = re.compile(r\"\d+\")"#), ctx.clone()).await.unwrap_err();
    assert!(err.to_string().contains("a backslash that starts no escape (`\\d`)"), "{err}");
    let err = EditTool.run(args("p.py", r#"print(\"hi\")"#, r#"print(\"hi\", "x")"#), ctx.clone()).await.unwrap_err();
    assert!(err.to_string().contains("it has `\"` as it is, where old_string has `\\\"`"), "{err}");
    assert_eq!(fs::read_to_string(root.join("p.py")).unwrap(), "print(\"hi\")\n");
    // An escape old_string does not use is not certain, even a backslash's own (`"a\\n"` is
    // Python text as well as the escaped form of `"a\n"`).
    let err = EditTool.run(args("p.py", r#"print(\"hi\")"#, r#"print(\"a\\n\")"#), ctx.clone()).await.unwrap_err();
    assert!(err.to_string().contains("it has `\\\\`, an escape old_string does not use"), "{err}");
    // Escaped the way old_string was: read the same way.
    let out = EditTool.run(args("p.py", r#"print(\"hi\")"#, r#"print(\"bye\")"#), ctx.clone()).await.unwrap();
    assert_eq!(out.metadata["strategy"], "escapes");
    assert_eq!(fs::read_to_string(root.join("p.py")).unwrap(), "print(\"bye\")\n");
    fs::write(root.join("two.txt"), "a\nb\n").unwrap();
    EditTool.run(args("two.txt", r"a\nb", r"a\nc"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("two.txt")).unwrap(), "a\nc\n");
    // Without escapes, new_string is text as sent.
    EditTool.run(args("p.py", r#"print(\"bye\")"#, r#"print("b")"#), ctx).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("p.py")).unwrap(), "print(\"b\")\n");
}

/// Review H4: a line added at another depth than its neighbour took the neighbour's shift
/// (`b()` at 6 spaces after `a()`, an IndentationError; 10 instead of 8 in a method).
#[tokio::test]
async fn new_lines_are_reindented_by_their_own_depth() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("f.py"), "def f():\n    if x:\n        a()\n    return 1\n").unwrap();
    let old = "def f():\n  if x:\n    a()\n";
    let out = EditTool.run(args("f.py", old, "def f():\n  if x:\n    a()\n  b()\n"), ctx.clone()).await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join("f.py")).unwrap(),
        "def f():\n    if x:\n        a()\n    b()\n    return 1\n"
    );
    assert!(
        out.text.contains(
            "new_string was re-indented level by level (2 spaces a level in old_string, 4 spaces in the file)."
        ),
        "{}",
        out.text
    );
    // A depth no line of old_string has goes by the levels too.
    let old = "def f():\n  if x:\n    a()\n  b()\n";
    let new = "def f():\n  if x:\n    a()\n    if y:\n      c()\n  b()\n";
    EditTool.run(args("f.py", old, new), ctx.clone()).await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join("f.py")).unwrap(),
        "def f():\n    if x:\n        a()\n        if y:\n            c()\n    b()\n    return 1\n"
    );
    let file = "class A:\n    def f(self):\n        if x:\n            a()\n        return 1\n";
    fs::write(root.join("a.py"), file).unwrap();
    let old = "class A:\n  def f(self):\n    if x:\n      a()\n";
    EditTool.run(args("a.py", old, &format!("{old}    b()\n")), ctx.clone()).await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join("a.py")).unwrap(),
        "class A:\n    def f(self):\n        if x:\n            a()\n        b()\n        return 1\n"
    );
}

/// When the file's indentation is no mapping of old_string's, a new line at a depth old_string
/// does not show is refused, not placed by a guess.
#[tokio::test]
async fn a_new_line_whose_depth_cannot_be_mapped_is_refused() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let file = "def f():\n    if x:\n          a()\n    return 1\n";
    fs::write(root.join("f.py"), file).unwrap();
    let old = "def f():\n  if x:\n    a()\n";
    let err = EditTool.run(args("f.py", old, "def f():\n  if x:\n    a()\n      b()\n"), ctx).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"Refusing the edit: old_string only roughly matches lines 1-3 of `f.py` (ignoring leading and trailing whitespace on each line), and its indentation is no uniform shift or level-for-level mapping of old_string's, so where the new line `b()` (indented 6 spaces) belongs is a guess. Nothing was changed. Read lines 1-3 and send old_string exactly as the file has it.");
    assert_eq!(fs::read_to_string(root.join("f.py")).unwrap(), file);
}

/// Review 2 H1: old_string copied with read's prefixes, and new_string's own text taken for
/// numbers and cut (a YAML map's `  200: ok` became `ok`; a TSV row lost its first column).
#[tokio::test]
async fn text_in_new_string_that_looks_numbered_is_never_cut() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("c.yaml"), "codes:\n  200: ok\n  404: missing\n").unwrap();
    let out = EditTool
        .run(
            args("c.yaml", "2:   200: ok\n3:   404: missing", "  200: ok\n  404: not found\n  500: error"),
            ctx.clone(),
        )
        .await
        .unwrap();
    assert_eq!(fs::read_to_string(root.join("c.yaml")).unwrap(), "codes:\n  200: ok\n  404: not found\n  500: error\n");
    assert!(out.text.contains("were removed from old_string;"), "{}", out.text);
    fs::write(root.join("t.tsv"), "1\talice\n2\tbob\n3\tcarol\n").unwrap();
    EditTool.run(args("t.tsv", "2: 2\tbob", "2\tbobby"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("t.tsv")).unwrap(), "1\talice\n2\tbobby\n3\tcarol\n");
    // Numbered like old_string but from another line: which numbers are read's is unclear.
    fs::write(root.join("n.txt"), "a\nb\nc\n").unwrap();
    let err = EditTool.run(args("n.txt", "2: b\n3: c", "7: B\n8: C"), ctx).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"Nothing was changed in `n.txt`: old_string carries the line-number prefixes of read's output (`2: ` on its first line), and new_string's lines are not all numbered the same way counting up from 2, so which of its numbers are read's to remove and which are text is unclear. Send old_string and new_string without the `N: ` prefixes, exactly as the lines are in the file."#);
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "a\nb\nc\n");
}

/// Review 2 M1: a file whose own lines start with numbers could not be edited (`2: two` to
/// `2: deux` was refused as "numbered like read").
#[tokio::test]
async fn lines_that_start_with_numbers_in_the_file_are_edited_as_sent() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("l.txt"), "1: one\n2: two\n3: three\n").unwrap();
    EditTool.run(args("l.txt", "2: two", "2: deux"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("l.txt")).unwrap(), "1: one\n2: deux\n3: three\n");
    fs::write(root.join("t.tsv"), "1\talice\n2\tbob\n3\tcarol\n").unwrap();
    EditTool.run(args("t.tsv", "2\tbob", "2\tbobby"), ctx).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("t.tsv")).unwrap(), "1\talice\n2\tbobby\n3\tcarol\n");
}

/// Review 2 H2: an escaped `\r\n` in a CRLF file was read as a real `\r\n` after the check for
/// carriage returns, and written as `\r\r\n`.
#[tokio::test]
async fn escaped_crlf_in_a_crlf_file_is_a_line_break() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("c.txt"), b"a\r\nb\r\n").unwrap();
    EditTool.run(args("c.txt", r"a\r\nb", r"c\r\nd"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read(root.join("c.txt")).unwrap(), b"c\r\nd\r\n");
    // An escaped `\r` that stays a `\r` before a line break is refused, as a sent one is.
    fs::write(root.join("c.txt"), b"a\r\nb\r\n").unwrap();
    let err = EditTool.run(args("c.txt", r"a\r\nb", r"c\r\r\nd"), ctx).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"Refusing the edit: new_string (as matched, its escapes read as characters) ends a line with a carriage return (`\r`) that the text it replaces does not have. `c.txt` has CRLF line endings, which edit writes by itself, so the `\r` would be an extra character in the file. Nothing was changed. Send new_string with plain line breaks, without `\r`."#);
    assert_eq!(fs::read(root.join("c.txt")).unwrap(), b"a\r\nb\r\n");
}

/// Review 2 M2: in a file of mixed endings a replaced line lost its CRLF (the block was CRLF
/// only if all its lines were), and exact bytes sent with `\r\n` were written with `\n`.
#[tokio::test]
async fn in_a_file_of_mixed_endings_each_line_keeps_its_own() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("m.txt"), b"p\r\na\r\nb\nc\r\n").unwrap();
    EditTool.run(args("m.txt", "p\na\nb", "p\nA\nb"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read(root.join("m.txt")).unwrap(), b"p\r\nA\r\nb\nc\r\n");
    fs::write(root.join("m.txt"), b"a\r\nb\nc\r\n").unwrap();
    EditTool.run(args("m.txt", "a\r\nb", "A\r\nB"), ctx).await.unwrap();
    assert_eq!(fs::read(root.join("m.txt")).unwrap(), b"A\r\nB\nc\r\n");
}

/// Review 2 H3: the indentation of a call's continuation lines was taken for a block's depth,
/// and a new line at that depth was put at the continuation's (`log()` at 8 spaces under
/// `if x:`, an IndentationError; `w()` at 12 instead of 8).
#[tokio::test]
async fn continuation_lines_do_not_set_the_depth_of_new_lines() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let file = "result = compute(\n        arg1,\n        arg2)\nif x:\n    y()\n";
    fs::write(root.join("r.py"), file).unwrap();
    let old = "result = compute(\n    arg1,\n    arg2)\nif x:";
    EditTool.run(args("r.py", old, &format!("{old}\n    log()")), ctx.clone()).await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join("r.py")).unwrap(),
        "result = compute(\n        arg1,\n        arg2)\nif x:\n    log()\n    y()\n"
    );
    let file = "def f():\n    x = foo(a,\n            b)\n    if y:\n        z()\n";
    fs::write(root.join("f.py"), file).unwrap();
    let old = "    x = foo(a,\n        b)\n    if y:";
    EditTool.run(args("f.py", old, &format!("{old}\n        w()")), ctx.clone()).await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join("f.py")).unwrap(),
        "def f():\n    x = foo(a,\n            b)\n    if y:\n        w()\n        z()\n"
    );
    // A new continuation line aligned unlike any the file and old_string share is refused.
    fs::write(root.join("f.py"), file).unwrap();
    let new = "    x = foo(a,\n        b,\n          c)\n    if y:";
    let err = EditTool.run(args("f.py", old, new), ctx).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"Refusing the edit: old_string only roughly matches lines 2-4 of `f.py` (ignoring leading and trailing whitespace on each line), and its indentation is no uniform shift of old_string's; the new line `c)` (indented 10 spaces) continues the line before it (inside a bracket) and is aligned unlike any line the file and old_string share, so where it belongs is a guess. Nothing was changed. Read lines 2-4 and send old_string exactly as the file has it."#);
    assert_eq!(fs::read_to_string(root.join("f.py")).unwrap(), file);
}

/// Review 2 H5: the whitespace matcher skipped overlapping places on a line and in-line places
/// when a whole line matched, and the line matchers never looked inside lines, so an ambiguous
/// old_string was silently resolved (and `replace_all` left one behind).
#[tokio::test]
async fn every_candidate_of_a_matcher_counts_before_one_is_chosen() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    for (file, old, new) in [
        ("0,  0,  0\n", "0, 0", "1, 1"),
        ("pad  pad  pad\n", "pad pad", "pad"),
        ("foo  bar\nx = foo  bar + 1\n", "foo bar", "baz"),
        ("    i += 1\nfor j in range(3): i += 1\n", "i += 1 ", "i += 2"),
    ] {
        fs::write(root.join("w.txt"), file).unwrap();
        let err = EditTool.run(args("w.txt", old, new), ctx.clone()).await.unwrap_err();
        assert!(err.to_string().starts_with("old_string matches 2 places in `w.txt`"), "{file:?}: {err}");
        assert_eq!(fs::read_to_string(root.join("w.txt")).unwrap(), file);
    }
    let err = EditTool.run(args("w.txt", "i += 1 ", "i += 2"), ctx.clone()).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r#"old_string matches 2 places in `w.txt` (ignoring a uniform indentation shift), starting at lines 1, 2. Include more surrounding lines in old_string so it matches exactly one place, or set replace_all to true to change all of them."#);
    fs::write(root.join("w.txt"), "foo  bar\nx = foo  bar + 1\n").unwrap();
    let out = EditTool.run(args_all("w.txt", "foo bar", "baz"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("w.txt")).unwrap(), "baz\nx = baz + 1\n");
    assert_eq!(out.metadata["replacements"], 2);
    fs::write(root.join("w.txt"), "    i += 1\nfor j in range(3): i += 1\n").unwrap();
    let out = EditTool.run(args_all("w.txt", "i += 1 ", "i += 2"), ctx).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("w.txt")).unwrap(), "    i += 2\nfor j in range(3): i += 2\n");
    assert_eq!(out.metadata["replacements"], 2);
}

/// Review 3 H1/H4: read's line numbers were removed from old_string and then ignored, so the
/// same text elsewhere was edited (lines 5-6 for `2: load()\n3: run()`).
#[tokio::test]
async fn line_numbers_in_old_string_say_where_it_is() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    let file = "def setup():\n    load()\n    run()\n\nload()\nrun()\n";
    fs::write(root.join("s.py"), file).unwrap();
    let out =
        EditTool.run(args("s.py", "2: load()\n3: run()", "2: load()\n3: run(fast=True)"), ctx.clone()).await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join("s.py")).unwrap(),
        "def setup():\n    load()\n    run(fast=True)\n\nload()\nrun()\n"
    );
    assert!(out.text.contains("(lines 2-3)"), "{}", out.text);
    // At the numbered line it is edited there, though the text is elsewhere too.
    fs::write(root.join("s.py"), file).unwrap();
    let out =
        EditTool.run(args("s.py", "5: load()\n6: run()", "5: load()\n6: run(fast=True)"), ctx.clone()).await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join("s.py")).unwrap(),
        "def setup():\n    load()\n    run()\n\nload()\nrun(fast=True)\n"
    );
    assert!(out.text.contains("(lines 5-6)"), "{}", out.text);
    let file = "1: foo\n2: bar\n\nfoo\nbar\n";
    fs::write(root.join("n.txt"), file).unwrap();
    let err = EditTool.run(args("n.txt", "1: foo\n2: bar  ", "1: foo\n2: baz"), ctx).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"Refusing the edit: old_string starts with read's line numbers, which put it at line 1 of `n.txt`, but the text at line 1 differs from old_string (it matches at line 4 instead). Nothing was changed. The file may have changed since you read it: read it again, and send old_string exactly as the file has it now, without the `N: ` prefixes.");
    assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), file);
}

/// Review 3 C1-C4, C11: the punctuation matcher and the escape matcher's fallback counted only
/// whole-line places, so a place inside another line (or a first line starting mid-line) was
/// missed: an edit chosen silently, and `replace_all` leaving one behind.
#[tokio::test]
async fn punctuation_and_escape_matchers_count_places_inside_lines() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    for (file, old, new) in [
        ("print(\"hi\")\nlog(print(\"hi\"))\n", "print(\u{201c}hi\u{201d})", "print(\u{201c}bye\u{201d})"),
        ("    x = \"a\"\nfoo(x = \"a\", y)\n", r#"  x = \"a\""#, r#"  x = \"b\""#),
        (
            "val = fetch(\"a\")\nuse(val)\nfetch(\"a\")\nuse(val)\n",
            "fetch(\u{201c}a\u{201d})\nuse(val)",
            "fetch(\u{201c}b\u{201d})\nuse(val)",
        ),
    ] {
        fs::write(root.join("p.py"), file).unwrap();
        let err = EditTool.run(args("p.py", old, new), ctx.clone()).await.unwrap_err();
        assert!(err.to_string().starts_with("old_string matches 2 places in `p.py`"), "{file:?}: {err}");
        assert_eq!(fs::read_to_string(root.join("p.py")).unwrap(), file);
    }
    let err = EditTool.run(args("p.py", "fetch(\u{201c}a\u{201d})\nuse(val)", "x"), ctx.clone()).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"old_string matches 2 places in `p.py` (treating typographic quotes, dashes and spaces as ASCII), starting at lines 1, 3. Include more surrounding lines in old_string so it matches exactly one place, or set replace_all to true to change all of them.");
    fs::write(root.join("p.py"), "print(\"hi\")\nlog(print(\"hi\"))\n").unwrap();
    let out = EditTool
        .run(args_all("p.py", "print(\u{201c}hi\u{201d})", "print(\u{201c}bye\u{201d})"), ctx.clone())
        .await
        .unwrap();
    assert_eq!(fs::read_to_string(root.join("p.py")).unwrap(), "print(\"bye\")\nlog(print(\"bye\"))\n");
    assert_eq!(out.metadata["replacements"], 2);
    fs::write(root.join("p.py"), "    x = \"a\"\nfoo(x = \"a\", y)\n").unwrap();
    let out = EditTool.run(args_all("p.py", r#"  x = \"a\""#, r#"  x = \"b\""#), ctx).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("p.py")).unwrap(), "    x = \"b\"\nfoo(x = \"b\", y)\n");
    assert_eq!(out.metadata["replacements"], 2);
}

/// Review 3 E8, E7: in a file of mixed endings an exact match pasted new_string's `\n`s as
/// sent, so the unchanged `x=1` lost its CRLF to the new line after it.
#[tokio::test]
async fn exact_edits_in_a_file_of_mixed_endings_keep_each_line_s_ending() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("m.ini"), b"[a]\r\nx=1\r\n[b]\ny=2\n").unwrap();
    EditTool.run(args("m.ini", "x=1", "x=1\nz=3"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read(root.join("m.ini")).unwrap(), b"[a]\r\nx=1\r\nz=3\r\n[b]\ny=2\n");
    EditTool.run(args("m.ini", "y=2", "w=0\ny=2"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read(root.join("m.ini")).unwrap(), b"[a]\r\nx=1\r\nz=3\r\n[b]\nw=0\ny=2\n");
    // A block spanning both endings: each line ends like the one it replaces.
    fs::write(root.join("m.ini"), b"[a]\r\nx=1\n[b]\r\n").unwrap();
    EditTool.run(args("m.ini", "x=1\n[b]", "x=2\n[c]\nq=1"), ctx).await.unwrap();
    assert_eq!(fs::read(root.join("m.ini")).unwrap(), b"[a]\r\nx=2\n[c]\r\nq=1\r\n");
}

/// Review 3 E1: a CRLF file's own `\r` before a line ending (`a = 1\r\r\n`) was taken for a
/// line ending, so a line inserted after it was given one and the edit refused as if the model
/// had sent a `\r`.
#[tokio::test]
async fn a_crlf_file_s_own_carriage_return_is_not_a_line_ending() {
    let (_tmp, root) = root();
    let ctx = ToolContext::standalone(&root, root.join(".data"));
    fs::write(root.join("c.py"), b"a = 1\r\r\nb = 2\r\nc = 3\r\n").unwrap();
    EditTool.run(args("c.py", "a = 1\nb = 2\n", "a = 1\nx = 9\nb = 2\n"), ctx.clone()).await.unwrap();
    assert_eq!(fs::read(root.join("c.py")).unwrap(), b"a = 1\r\r\nx = 9\r\nb = 2\r\nc = 3\r\n");
    // A `\r` the model sends is still refused.
    let err = EditTool.run(args("c.py", "c = 3", "c = 3\r\nd = 4\r"), ctx).await.unwrap_err();
    assert!(err.to_string().contains("carriage return"), "{err}");
    assert_eq!(fs::read(root.join("c.py")).unwrap(), b"a = 1\r\r\nx = 9\r\nb = 2\r\nc = 3\r\n");
}
