//! Where the text file tools' text comes from and goes to: the editor's buffers when the call's
//! context carries a [`FileAccess`] (`toolshed acp` with a client that offers `fs`), else the
//! disk. `read`, `edit`, `write` and `apply_patch` decide nothing of this themselves.
//!
//! The disk still says what a path is: only a regular file whose first bytes are text is asked
//! of the editor (directories, images, binary and special files, and files missing on disk are
//! the disk's). Resolution, confinement, permissions, size limits and diffs are unchanged; the
//! diff is computed from the editor's text.
//!
//! When the editor cannot give a file's text: `read` falls back to the disk (the model then sees
//! the saved text, as it would without an editor); a tool about to change the file refuses,
//! because writing a change made to the disk's text would throw away the buffer's unsaved edits.
//! A write the editor refuses is an error for the model, never a write to the disk instead.

use std::path::Path;
use std::sync::Arc;

use toolshed_core::file_access::FileAccess;
use toolshed_core::{ToolContext, ToolError};
use toolshed_path::ResolvedPath;

use super::{Sniff, blocking, sniff_file};

/// The context's editor, if it has one and the file at `path` is text on disk.
async fn editor_for(ctx: &ToolContext, path: &Path) -> Option<Arc<dyn FileAccess>> {
    let files = ctx.file_access()?.clone();
    let path = path.to_path_buf();
    let text = blocking(move || {
        Ok(std::fs::metadata(&path).is_ok_and(|m| m.is_file()) && matches!(sniff_file(&path), Ok(Sniff::Text)))
    })
    .await
    .unwrap_or(false);
    text.then_some(files)
}

/// The text `read` shows: the editor's buffer, or `None` to read the disk (no editor, not a
/// text file, or the editor could not provide it).
pub async fn read_to_show(ctx: &ToolContext, path: &Path) -> Option<String> {
    editor_for(ctx, path).await?.read_text(path).await.ok()
}

/// The current text of a file `tool` is about to change: the editor's buffer, or `None` to read
/// the disk (no editor, or not a text file there). The editor failing is a refusal.
pub async fn read_to_change(
    ctx: &ToolContext,
    resolved: &ResolvedPath,
    tool: &str,
) -> Result<Option<String>, ToolError> {
    let Some(files) = editor_for(ctx, resolved.path()).await else { return Ok(None) };
    match files.read_text(resolved.path()).await {
        Ok(text) => Ok(Some(text)),
        Err(e) => Err(ToolError::model(format!(
            "Cannot {tool} `{}`: the editor could not provide its current text ({e}). Nothing was changed; ask the user to open or save the file, then try again.",
            resolved.display()
        ))),
    }
}

/// Writes `text` as the whole file: through the editor when there is one, else atomically to
/// the disk.
pub async fn write(ctx: &ToolContext, resolved: &ResolvedPath, text: String, tool: &str) -> Result<(), ToolError> {
    match ctx.file_access() {
        Some(files) => files.write_text(resolved.path(), &text).await.map_err(|e| {
            ToolError::model(format!(
                "Cannot {tool} `{}`: the editor refused the write ({e}). Nothing was written.",
                resolved.display()
            ))
        }),
        None => {
            let target = resolved.clone();
            blocking(move || target.write_atomic(text.as_bytes()).map_err(ToolError::from)).await
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::io;
    use std::path::PathBuf;
    use std::sync::Mutex;

    use serde_json::json;
    use toolshed_core::context::{CallInfo, CancellationToken, Environment};
    use toolshed_core::permission::AllowAll;
    use toolshed_core::tool::{BoxFuture, TypedTool};

    use super::*;
    use crate::fs::{EditTool, ReadTool, WriteTool};

    /// An editor with open buffers; a path without one cannot be read. Records every request.
    #[derive(Default)]
    struct FakeEditor {
        buffers: Mutex<HashMap<PathBuf, String>>,
        reads: Mutex<Vec<PathBuf>>,
        writes: Mutex<Vec<(PathBuf, String)>>,
    }

    impl FileAccess for FakeEditor {
        fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<String>> {
            Box::pin(async move {
                self.reads.lock().unwrap().push(path.to_path_buf());
                self.buffers.lock().unwrap().get(path).cloned().ok_or_else(|| io::Error::other("no such buffer"))
            })
        }

        fn write_text<'a>(&'a self, path: &'a Path, text: &'a str) -> BoxFuture<'a, io::Result<()>> {
            Box::pin(async move {
                self.writes.lock().unwrap().push((path.to_path_buf(), text.to_string()));
                self.buffers.lock().unwrap().insert(path.to_path_buf(), text.to_string());
                Ok(())
            })
        }
    }

    fn setup() -> (tempfile::TempDir, PathBuf, Arc<FakeEditor>, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::write(root.join("notes.txt"), "saved line\nsecond\n").unwrap();
        let editor = Arc::new(FakeEditor::default());
        editor.buffers.lock().unwrap().insert(root.join("notes.txt"), "unsaved line\nsecond\n".into());
        let mut env = Environment::new(&root, root.join(".data"));
        env.file_access = Some(editor.clone());
        let ctx = ToolContext::new(CallInfo::default(), Arc::new(env), CancellationToken::new(), Arc::new(AllowAll));
        (tmp, root, editor, ctx)
    }

    fn args<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    #[tokio::test]
    async fn read_and_edit_see_and_change_the_editors_buffer_not_the_disk() {
        let (_tmp, root, editor, ctx) = setup();
        let notes = root.join("notes.txt");
        let read = ReadTool.run(args(json!({"file_path": "notes.txt"})), ctx.clone()).await.unwrap();
        assert!(read.text.starts_with("1: unsaved line\n2: second\n"), "{}", read.text);

        let edit = json!({"file_path": "notes.txt", "old_string": "unsaved line", "new_string": "edited line"});
        let edited = EditTool.run(args(edit), ctx.clone()).await.unwrap();
        assert_eq!(*editor.writes.lock().unwrap(), [(notes.clone(), "edited line\nsecond\n".to_string())]);
        assert_eq!(
            std::fs::read_to_string(&notes).unwrap(),
            "saved line\nsecond\n",
            "the disk is the editor's to save"
        );
        assert!(
            edited.text.contains("-unsaved line\n+edited line"),
            "the diff is of the editor's text: {}",
            edited.text
        );

        let written = WriteTool.run(args(json!({"file_path": "notes.txt", "content": "whole\n"})), ctx).await.unwrap();
        assert!(written.text.contains("-edited line"), "{}", written.text);
        assert_eq!(editor.writes.lock().unwrap().last().unwrap().1, "whole\n");
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "saved line\nsecond\n");
    }

    #[tokio::test]
    async fn without_a_buffer_read_falls_back_to_the_disk_but_edit_refuses() {
        let (_tmp, root, editor, ctx) = setup();
        editor.buffers.lock().unwrap().clear();
        let read = ReadTool.run(args(json!({"file_path": "notes.txt"})), ctx.clone()).await.unwrap();
        assert!(read.text.starts_with("1: saved line\n"), "{}", read.text);

        let edit = json!({"file_path": "notes.txt", "old_string": "saved line", "new_string": "x"});
        let err = EditTool.run(args(edit), ctx).await.unwrap_err();
        assert!(err.to_string().contains("the editor could not provide its current text"), "{err}");
        assert!(editor.writes.lock().unwrap().is_empty());
        assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "saved line\nsecond\n");
    }

    #[tokio::test]
    async fn directories_and_binary_files_stay_on_the_disk() {
        let (_tmp, root, editor, ctx) = setup();
        std::fs::write(root.join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
        let err = ReadTool.run(args(json!({"file_path": "blob.bin"})), ctx.clone()).await.unwrap_err();
        assert!(err.to_string().contains("binary file"), "{err}");
        let listing = ReadTool.run(args(json!({"file_path": "."})), ctx).await.unwrap();
        assert!(listing.text.contains("notes.txt"), "{}", listing.text);
        assert!(editor.reads.lock().unwrap().is_empty(), "the editor is asked for text files only");
    }

    #[tokio::test]
    async fn apply_patch_patches_the_editors_text_and_writes_through_it() {
        let (_tmp, root, editor, ctx) = setup();
        let patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-unsaved line\n+patched line\n second\n*** Add File: new.txt\n+fresh\n*** End Patch\n";
        let out = crate::patch::ApplyPatch.run(args(json!({"input": patch})), ctx).await.unwrap();
        assert!(out.text.contains("M notes.txt"), "{}", out.text);
        let writes = editor.writes.lock().unwrap().clone();
        assert_eq!(
            writes,
            [
                (root.join("notes.txt"), "patched line\nsecond\n".to_string()),
                (root.join("new.txt"), "fresh\n".to_string())
            ]
        );
        assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "saved line\nsecond\n");
        assert!(!root.join("new.txt").exists());
    }
}
