//! [`FileAccess`]: another program's view of the files, for the file tools' text. An editor
//! that hosts toolshed (ACP's `fs/read_text_file` / `fs/write_text_file`) has buffers whose
//! unsaved text is what the person sees; reads and writes through it show the model that text
//! and put edits in the editor's undo history. Without one, the tools use the disk.
//!
//! Only the text moves through it. Which file a call may touch (resolution, confinement,
//! permission patterns, protected paths), what kind of file it is (directory, image, binary,
//! size) and the diff shown stay the tools' own; see `toolshed_tools::fs::buffers` for the one
//! place that decides between the editor and the disk.

use std::io;
use std::path::Path;

use crate::tool::BoxFuture;

/// Reads and writes whole text files somewhere other than the disk (an editor's buffers).
/// Paths are absolute and already resolved and permitted.
pub trait FileAccess: Send + Sync {
    /// The file's current text (an open buffer's, saved or not).
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<String>>;

    /// Replaces the file's whole text (creating it if need be).
    fn write_text<'a>(&'a self, path: &'a Path, text: &'a str) -> BoxFuture<'a, io::Result<()>>;
}
