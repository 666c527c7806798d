//! `write`: creates or replaces a whole file, atomically, keeping the existing file's mode,
//! byte-order mark and line-ending style, and answering with a short diff summary.

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Alias, ToolFlags, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{TextStyle, blocking, buffers, diff_counts, plural, unified_diff};
use toolshed_path::{self as path, Permitted, ResolvedPath};

/// Diff lines shown in a write result.
const SUMMARY_DIFF_LINES: usize = 40;

const DESCRIPTION: &str = "Creates or replaces a whole file (and missing directories). `content` is the complete file as written: no line numbers or placeholders such as `// ... rest unchanged`. To change part of a file use edit; read a file before replacing it.";

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// The file: relative to the working directory, or absolute.
    #[schemars(description = "")]
    pub file_path: String,
    /// The complete file.
    pub content: String,
    #[serde(skip)]
    #[schemars(skip)]
    permitted: Permitted,
}

/// The `write` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteTool;

impl TypedTool for WriteTool {
    type Args = WriteArgs;

    fn name(&self) -> &str {
        "write"
    }

    // Other agents' names for the file.
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[("path", Alias::Param("file_path")), ("absolute_path", Alias::Param("file_path"))]
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::MUTATING
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec.with_permission("edit")
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &WriteArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let resolved = path::resolve_for_write(ctx, &args.file_path)?;
        args.permitted.remember(&resolved);
        let mut requests = resolved.requests(&spec.permission);
        // Its result shows the file's present text (a diff; the lines nearest a miss).
        if let Some(read) = resolved.read_request() {
            requests.insert(requests.len() - 1, read);
        }
        // Whoever is asked sees the change: the diff against what is there (small files only).
        // (Not with an editor's buffers: the disk's text may not be what is replaced.)
        if ctx.file_access().is_none()
            && let (Some(diff), Some(main)) = (preview(&resolved, &args.content), requests.last_mut())
        {
            main.metadata.insert("diff".into(), diff.into());
        }
        Ok(requests)
    }

    async fn run(&self, args: WriteArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let now = path::resolve_for_write(&ctx, &args.file_path)?;
        let resolved = path::confirm(&ctx, &args.permitted, now, "edit").await?;
        let _lock = ctx.lock_path(resolved.path()).await;
        let target = resolved.clone();
        let current = buffers::read_to_change(&ctx, &resolved, "write").await?;
        let (text, mut output) = blocking(move || plan_write(&target, &args.content, current)).await?;
        if let Some(text) = text {
            buffers::write(&ctx, &resolved, text, "write").await?;
        }
        if output.metadata.get("changed").and_then(serde_json::Value::as_bool) == Some(true)
            && let Some(note) = ctx.files_changed(&[resolved.path().to_path_buf()]).await
        {
            output.text.push_str("\n\n");
            output.text.push_str(&note);
        }
        Ok(output)
    }
}

/// Works out writing `content` over the file at `resolved`, whose text is `current` (an
/// editor's buffer) or else read from the disk: the text to write (`None`: nothing changes) and
/// the result for the model.
fn plan_write(
    resolved: &ResolvedPath,
    content: &str,
    current: Option<String>,
) -> Result<(Option<String>, ToolOutput), ToolError> {
    let display = resolved.display();
    let path = resolved.path();
    if path.is_dir() {
        return Err(ToolError::model(format!(
            "`{display}` is a directory. Send the path of a file inside it (for example `{display}/name.ext`)."
        )));
    }
    let disk = || match super::read_regular(path) {
        Ok(Ok(bytes)) => Ok(Some(bytes)),
        Ok(Err(kind)) => Err(super::special_file_error("write", &display, kind)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ToolError::model(format!("Cannot write `{display}`: reading the current file failed: {e}."))),
    };
    let existing = match current {
        Some(text) => Some(text.into_bytes()),
        None => disk()?,
    };
    let old_text = existing.as_deref().map(String::from_utf8_lossy);
    let (sent_style, body) = TextStyle::split(content);
    // A CRLF file stays CRLF; any other file gets the endings sent (CRLF content over an LF
    // file is written CRLF, and a mixture as it is), and the result says when that changed them.
    let old_style = old_text.as_deref().map(|old| TextStyle::split(old).0);
    let style = match old_style {
        Some(old_style) => TextStyle { bom: old_style.bom || sent_style.bom, crlf: old_style.crlf || sent_style.crlf },
        None => sent_style,
    };
    let lf_to_crlf = old_text.as_deref().is_some_and(|old| old.contains('\n'))
        && old_style.is_some_and(|s| !s.crlf)
        && sent_style.crlf;
    // A CRLF file written from a mixture of endings: every line ending becomes `\r\n` (a body
    // `split` gave has `\n` endings already, and its `\r`s are text).
    let body = if style.crlf && !sent_style.crlf { super::lf_endings(&body).into_owned() } else { body };
    let final_text = style.apply(&body);
    if existing.as_deref() == Some(final_text.as_bytes()) {
        let output = ToolOutput::text(format!("No changes: `{display}` already has exactly this content."))
            .with_title(display)
            .with_metadata("changed", false);
        return Ok((None, output));
    }
    let lines = body.lines().count();
    let bytes = final_text.len();
    let mut text = match &old_text {
        None => format!("Created `{display}` ({}, {bytes} bytes).", plural(lines, "line")),
        Some(old) => {
            let (_, old_body) = TextStyle::split(old);
            let (added, removed) = diff_counts(&old_body, &body);
            let mut t =
                format!("Replaced `{display}` ({}, {bytes} bytes): +{added} -{removed} lines.", plural(lines, "line"));
            if existing.as_deref().is_some_and(|b| std::str::from_utf8(b).is_err()) {
                t.push_str(" The previous content was not UTF-8 text.");
            }
            let diff = unified_diff(&old_body, &body, &resolved.pattern(), 1, SUMMARY_DIFF_LINES);
            if !diff.is_empty() {
                t.push_str("\n\n");
                t.push_str(diff.trim_end());
            }
            t
        }
    };
    // Only when it happened: content without a line break has no endings to convert.
    if style.crlf && !sent_style.crlf && body.contains('\n') {
        text.push_str("\n(Line endings written as CRLF, like the existing file.)");
    }
    if lf_to_crlf {
        text.push_str("\n(Line endings written as CRLF, as sent; the file had LF line endings. To keep LF, send the content with `\\n` line endings.)");
    }
    let output = ToolOutput::text(text)
        .with_title(display)
        .with_metadata("changed", true)
        .with_metadata("created", old_text.is_none())
        .with_metadata("lines", lines);
    Ok((Some(final_text), output))
}

/// The diff writing `content` would make to the file at `resolved` (a new file: all added);
/// `None` for a file too large, binary or unreadable.
fn preview(resolved: &ResolvedPath, content: &str) -> Option<String> {
    let before = match std::fs::symlink_metadata(resolved.path()) {
        Err(_) => String::new(),
        Ok(m) if m.is_file() && m.len() <= super::edit::PREVIEW_MAX_BYTES => {
            String::from_utf8(std::fs::read(resolved.path()).ok()?).ok()?
        }
        Ok(_) => return None,
    };
    let (_, body) = TextStyle::split(&before);
    Some(unified_diff(&body, &content.replace("\r\n", "\n"), &resolved.pattern(), 3, 120))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    async fn call(root: &std::path::Path, file_path: &str, content: &str) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext::standalone(root, root.join(".data"));
        let args: WriteArgs =
            serde_json::from_value(serde_json::json!({"file_path": file_path, "content": content})).unwrap();
        WriteTool.run(args, ctx).await
    }

    fn root() -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        (tmp, root)
    }

    #[tokio::test]
    async fn write_creates_parents_and_reports_the_size() {
        let (_tmp, root) = root();
        let out = call(&root, "a/b/new.txt", "one\ntwo\n").await.unwrap();
        assert_eq!(out.text, "Created `a/b/new.txt` (2 lines, 8 bytes).");
        assert_eq!(fs::read_to_string(root.join("a/b/new.txt")).unwrap(), "one\ntwo\n");
    }

    #[tokio::test]
    async fn write_keeps_mode_bom_and_crlf_and_shows_a_diff() {
        let (_tmp, root) = root();
        let file = root.join("run.bat");
        fs::write(&file, "\u{feff}echo one\r\necho two\r\n").unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).unwrap();
        let out = call(&root, "run.bat", "echo one\necho three\n").await.unwrap();
        assert_eq!(fs::read(&file).unwrap(), "\u{feff}echo one\r\necho three\r\n".as_bytes());
        assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o755);
        insta::assert_snapshot!(out.text, @r"
        Replaced `run.bat` (2 lines, 25 bytes): +1 -1 lines.

        --- a/run.bat
        +++ b/run.bat
        @@ -1,2 +1,2 @@
         echo one
        -echo two
        +echo three
        (Line endings written as CRLF, like the existing file.)
        ");
    }

    /// Review H1: a `\r` of the content's own before a CRLF ending (`x\r\r\n`) was dropped.
    #[tokio::test]
    async fn write_over_a_crlf_file_keeps_every_carriage_return_sent() {
        let (_tmp, root) = root();
        let file = root.join("w.txt");
        fs::write(&file, "a\r\nb\r\n").unwrap();
        call(&root, "w.txt", "x\r\r\ny\r\n").await.unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"x\r\r\ny\r\n");
        // A mixture of endings still becomes CRLF throughout.
        let out = call(&root, "w.txt", "x\r\nz\n").await.unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"x\r\nz\r\n");
        assert!(out.text.ends_with("(Line endings written as CRLF, like the existing file.)"), "{}", out.text);
    }

    /// Review L4: the CRLF note came with content that has no line ending at all.
    #[tokio::test]
    async fn write_mentions_crlf_only_when_it_converted_a_line_ending() {
        let (_tmp, root) = root();
        let file = root.join("w.txt");
        for content in ["one line, no newline", ""] {
            fs::write(&file, "a\r\nb\r\n").unwrap();
            let out = call(&root, "w.txt", content).await.unwrap();
            assert_eq!(fs::read(&file).unwrap(), content.as_bytes());
            assert!(!out.text.contains("CRLF"), "{}", out.text);
        }
    }

    #[tokio::test]
    async fn write_refuses_directories_and_reports_no_op_writes() {
        let (_tmp, root) = root();
        fs::create_dir(root.join("dir")).unwrap();
        let err = call(&root, "dir", "x").await.unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        fs::write(root.join("same.txt"), "same\n").unwrap();
        let out = call(&root, "same.txt", "same\n").await.unwrap();
        assert_eq!(out.text, "No changes: `same.txt` already has exactly this content.");
        let err = call(&root, "dir/", "x").await.unwrap_err();
        assert!(err.to_string().contains("ends with `/`"), "{err}");
    }

    /// Review 2 M3: CRLF content over an LF file was written LF, and the result said the file
    /// already had exactly this content.
    #[tokio::test]
    async fn crlf_content_over_an_lf_file_is_written_as_sent_and_said() {
        let (_tmp, root) = root();
        let file = root.join("w.txt");
        fs::write(&file, "a\nb\n").unwrap();
        let out = call(&root, "w.txt", "a\r\nb\r\n").await.unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"a\r\nb\r\n");
        insta::assert_snapshot!(out.text, @r"
        Replaced `w.txt` (2 lines, 6 bytes): +0 -0 lines.
        (Line endings written as CRLF, as sent; the file had LF line endings. To keep LF, send the content with `\n` line endings.)
        ");
        // A mixture over an LF file is written as sent too.
        fs::write(&file, "a\nb\n").unwrap();
        call(&root, "w.txt", "a\r\nb\n").await.unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"a\r\nb\n");
    }
}
