//! The Codex `apply_patch` format: parse a patch, plan every change in memory, then write it
//! all or nothing.
//!
//! Everything this crate reads or writes goes through the [`FileSystem`] trait; [`OsFs`] is the
//! real disk and [`MemFs`] an in-memory tree. The steps can be used one by one ([`parse`],
//! [`plan()`], [`commit()`]) or together with [`apply`].
//!
//! ```
//! use toolshed_patch::{apply, CommitOptions, MemFs};
//!
//! let fs = MemFs::new();
//! fs.insert_file("/w/hello.txt", "Hello\n");
//! let patch = "*** Begin Patch\n*** Update File: hello.txt\n@@\n-Hello\n+Hello, world\n*** End Patch";
//! let summary = apply(patch, &fs, |p| Ok(std::path::Path::new("/w").join(p)), &CommitOptions::default()).unwrap();
//! assert_eq!(summary.to_string(), "Success. Updated the following files:\nM hello.txt (+1 -1)");
//! assert_eq!(fs.files()[std::path::Path::new("/w/hello.txt")], b"Hello, world\n");
//! ```

pub mod commit;
mod error;
pub mod fs;
mod os_fs;
pub mod parser;
pub mod plan;
pub mod seek;
pub mod temp;
mod text;

use std::path::PathBuf;

pub use commit::{CommitOptions, Durability, commit};
pub use error::{ApplyError, ChunkPos, CommitError, NotFound, Region};
pub use fs::{FileKind, FileSystem, MemFs};
pub use os_fs::{OsFs, SyncStrategy};
pub use parser::{Chunk, ChunkLine, Hunk, ParseError, Patch, parse};
pub use plan::{Action, FileOp, FileSummary, Plan, Summary, plan};

/// Parses, plans and commits `text` in one go. `resolve` maps each path as written in the
/// patch to the path to use, or refuses it with a message.
pub fn apply<F, R>(text: &str, fs: &F, resolve: R, options: &CommitOptions) -> Result<Summary, ApplyError>
where
    F: FileSystem + ?Sized,
    R: Fn(&str) -> Result<PathBuf, String>,
{
    let patch = parse(text)?;
    let plan = plan(&patch, fs, resolve)?;
    commit(fs, &plan.ops, options)?;
    Ok(plan.summary)
}

impl Patch<'_> {
    /// Every path the patch names (sources and move destinations), as written, in order,
    /// without repeats.
    pub fn paths(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<&str> = Vec::new();
        for hunk in &self.hunks {
            let dest = match hunk {
                Hunk::Update { move_to, .. } => *move_to,
                _ => None,
            };
            out.extend(std::iter::once(hunk.path()).chain(dest).filter(|p| seen.insert(*p)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_lists_sources_and_destinations_once_in_order() {
        let patch = parse(
            "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Add File: c\n+x\n*** Delete File: a\n\
             *** Update File: b\n@@\n-x\n+y\n*** End Patch",
        )
        .unwrap();
        assert_eq!(patch.paths(), ["a", "b", "c"]);
    }
}
