use super::*;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    (tmp, root)
}

async fn call(root: &Path, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
    let ctx = ToolContext::standalone(root, root.join(".data"));
    let args: ReadArgs = serde_json::from_value(args).unwrap();
    ReadTool.run(args, ctx).await
}

#[tokio::test]
async fn read_numbers_lines_and_says_where_the_file_ends() {
    let (_tmp, root) = root();
    fs::write(root.join("a.txt"), "\u{feff}first\r\nsecond\r\n\r\nlast").unwrap();
    let out = call(&root, serde_json::json!({"file_path": "a.txt"})).await.unwrap();
    insta::assert_snapshot!(out.text, @r"
    1: first
    2: second
    3: 
    4: last

    (End of file - total 4 lines)
    ");
    assert_eq!(out.metadata["total_lines"], 4);
}

#[tokio::test]
async fn read_windows_tell_the_next_offset() {
    let (_tmp, root) = root();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    fs::write(root.join("ten.txt"), text).unwrap();
    let out = call(&root, serde_json::json!({"file_path": "ten.txt", "offset": 4, "limit": 3})).await.unwrap();
    insta::assert_snapshot!(out.text, @r"
    4: line 4
    5: line 5
    6: line 6

    (Showing lines 4-6 of 10. Use offset=7 to continue.)
    ");
    let out = call(&root, serde_json::json!({"file_path": "ten.txt", "offset": 9})).await.unwrap();
    assert!(out.text.ends_with("(End of file - total 10 lines)"), "{}", out.text);
    let out = call(&root, serde_json::json!({"file_path": "ten.txt", "offset": 0, "limit": 1})).await.unwrap();
    assert!(out.text.starts_with("1: line 1\n"), "{}", out.text);
}

#[tokio::test]
async fn read_refuses_an_offset_past_the_end() {
    let (_tmp, root) = root();
    fs::write(root.join("two.txt"), "a\nb\n").unwrap();
    let err = call(&root, serde_json::json!({"file_path": "two.txt", "offset": 3})).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"Cannot read `two.txt`: offset 3 is past the end of the file, which has 2 lines. Send an offset between 1 and 2.");
    fs::write(root.join("empty.txt"), "").unwrap();
    let out = call(&root, serde_json::json!({"file_path": "empty.txt"})).await.unwrap();
    assert_eq!(out.text, "(The file is empty.)");
}

#[tokio::test]
async fn read_cuts_long_lines_and_stops_at_the_byte_budget() {
    let (_tmp, root) = root();
    let long = "x".repeat(5000);
    fs::write(root.join("long.txt"), format!("{long}\nshort\n")).unwrap();
    let out = call(&root, serde_json::json!({"file_path": "long.txt"})).await.unwrap();
    let first = out.text.lines().next().unwrap();
    assert_eq!(first.len(), "1: ".len() + 2000 + "... (line truncated to 2000 chars)".len());
    assert!(first.ends_with("... (line truncated to 2000 chars)"));
    let wide: String = (0..100).map(|i| format!("{i:04}{}\n", "y".repeat(1500))).collect();
    fs::write(root.join("wide.txt"), wide).unwrap();
    let out = call(&root, serde_json::json!({"file_path": "wide.txt"})).await.unwrap();
    assert!(out.text.len() <= 50 * 1024, "{}", out.text.len());
    let footer = out.text.lines().last().unwrap();
    assert!(footer.starts_with("(Output capped at 50 KB. Showing lines 1-"), "{footer}");
    assert!(footer.ends_with(" of 100. Use offset=34 to continue.)"), "{footer}");
}

#[tokio::test]
async fn read_streams_a_window_deep_in_a_big_file() {
    let (_tmp, root) = root();
    let path = root.join("big.txt");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(fs::File::create(&path).unwrap());
        for i in 1..=300_000u32 {
            writeln!(f, "row {i} {}", "z".repeat(30)).unwrap();
        }
    }
    let out = call(&root, serde_json::json!({"file_path": "big.txt", "offset": 299_999, "limit": 5})).await.unwrap();
    assert!(out.text.starts_with("299999: row 299999 "), "{}", &out.text[..60]);
    assert!(out.text.ends_with("(End of file - total 300000 lines)"), "{}", out.text);
    let out = call(&root, serde_json::json!({"file_path": "big.txt", "offset": 10, "limit": 1})).await.unwrap();
    let first_ten: usize = (1..=10).map(|i: u32| format!("row {i} {}\n", "z".repeat(30)).len()).sum();
    let rest = fs::metadata(&path).unwrap().len() as usize - first_ten;
    let footer = format!("(Showing lines 10-10, {rest} bytes of the file follow. Use offset=11 to continue.)");
    assert!(out.text.ends_with(&footer), "{}", out.text);
}

#[tokio::test]
async fn read_lists_directories() {
    let (_tmp, root) = root();
    fs::create_dir_all(root.join("d/sub")).unwrap();
    fs::write(root.join("d/b.txt"), "").unwrap();
    fs::write(root.join("d/A.txt"), "").unwrap();
    let out = call(&root, serde_json::json!({"file_path": "d"})).await.unwrap();
    insta::assert_snapshot!(out.text, @r"
    `d` is a directory with 3 entries:
    A.txt
    b.txt
    sub/
    ");
    let out = call(&root, serde_json::json!({"file_path": "d", "offset": 2, "limit": 1})).await.unwrap();
    assert!(out.text.ends_with("(Showing entries 2-2 of 3. Use offset=3 to continue.)"), "{}", out.text);
}

#[tokio::test]
async fn read_returns_images_and_refuses_other_binary_files() {
    let (_tmp, root) = root();
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    fs::write(root.join("pic.png"), &png).unwrap();
    let out = call(&root, serde_json::json!({"file_path": "pic.png"})).await.unwrap();
    assert_eq!(out.text, "Image read successfully: `pic.png` (image/png, 16 bytes).");
    assert_eq!(out.attachments, vec![Attachment::Image { mime_type: "image/png".into(), data: png }]);
    fs::write(root.join("prog"), b"\x7fELF\x02\x01\x01\0\0\0").unwrap();
    let err = call(&root, serde_json::json!({"file_path": "prog"})).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @"Cannot read `prog`: it is a binary file (it contains a NUL byte at offset 7). Inspect it with the shell (for example `file` or `xxd | head`) if you need to.");
}

#[tokio::test]
async fn read_suggests_near_paths_for_a_missing_file() {
    let (_tmp, root) = root();
    fs::create_dir_all(root.join("src/deep")).unwrap();
    fs::write(root.join("src/config.rs"), "").unwrap();
    fs::write(root.join("src/deep/lexer.rs"), "").unwrap();
    let err = call(&root, serde_json::json!({"file_path": "src/confg.rs"})).await.unwrap_err();
    insta::assert_snapshot!(err.to_string(), @r"
    File not found: `src/confg.rs`.

    Did you mean one of these?
    src/config.rs
    ");
    let err = call(&root, serde_json::json!({"file_path": "lexer.rs"})).await.unwrap_err();
    assert!(err.to_string().contains("src/deep/lexer.rs"), "{err}");
    let err = call(&root, serde_json::json!({"file_path": "zzz/qqq.bin"})).await.unwrap_err();
    assert!(err.to_string().ends_with("Use glob or list to find the right path."), "{err}");
}

#[test]
fn lines_reader_keeps_little_of_a_giant_line() {
    let giant = vec![b'a'; 10 * 1024 * 1024];
    let mut reader = Lines::new(&giant[..]);
    let mut line = Vec::new();
    assert_eq!(reader.next_line(&mut line).unwrap(), Some(true));
    assert_eq!(line.len(), LINE_KEEP);
    assert_eq!(reader.next_line(&mut line).unwrap(), None);
}
