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
pub async fn read_to_change(ctx: &ToolContext, resolved: &ResolvedPath, tool: &str) -> Result<Option<String>, ToolError> {
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
