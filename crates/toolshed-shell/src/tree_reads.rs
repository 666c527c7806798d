//! The `read` rules for files a command shows without naming them: `grep -r KEY .`, `rg KEY`,
//! `cat *`. The analysis finds the trees ([`TreeRead`]); here each file under them is checked
//! against the call's `read` rules, and those that would ask or are denied become one `read`
//! request, so `.env` is asked about as `read` would ask. A tree too large to check in the time
//! and entry budget asks as a whole.

use std::path::Path;
use std::time::{Duration, Instant};

use globset::{GlobBuilder, GlobMatcher};
use toolshed_core::ToolContext;
use toolshed_core::permission::{Action, PermissionRequest};

use toolshed_path::pattern_for;
use toolshed_shellpolicy::TreeRead;

/// Entries looked at across all trees of one command before it asks instead.
const MAX_ENTRIES: usize = 200_000;
/// Time spent looking before the command asks instead.
const MAX_TIME: Duration = Duration::from_secs(2);

/// The requests the files under `reads` need: one `read` request for the files whose rules do
/// not allow reading them (asks or denies through the chain as usual), or, for a tree too large
/// to check, a `read` request that asks.
pub(super) fn requests(ctx: &ToolContext, reads: &[TreeRead]) -> Vec<PermissionRequest> {
    let started = Instant::now();
    let mut seen = 0usize;
    let mut guarded: Vec<String> = Vec::new();
    let mut too_large: Vec<String> = Vec::new();
    for read in reads {
        let dir = pattern_for(ctx.root(), &read.path);
        if !walk(ctx, read, started, &mut seen, &mut guarded) {
            too_large.push(if dir == "." { "./*".to_string() } else { format!("{dir}/*") });
        }
    }
    let mut out = Vec::new();
    if !guarded.is_empty() {
        guarded.sort();
        guarded.dedup();
        out.push(
            PermissionRequest::new("read", guarded).with_metadata("reason", "the command shows these files' contents"),
        );
    }
    if !too_large.is_empty() {
        out.push(PermissionRequest::new("read", too_large).at_least(Action::Ask).with_metadata(
            "unclassified",
            "the command shows the contents of more files than can be checked against the read rules in time",
        ));
    }
    out
}

/// Walks one tree, adding the patterns of files whose `read` is not allowed to `guarded`;
/// false when the budget ran out first.
fn walk(ctx: &ToolContext, read: &TreeRead, started: Instant, seen: &mut usize, guarded: &mut Vec<String>) -> bool {
    // The shell's file-name patterns go through linked directories (`cat */k` with `s ->
    // secrets` shows `s/k`), so a pattern's walk follows links, and names are resolved.
    let follow = read.glob.is_some();
    let root_real = ctx.root().canonicalize().unwrap_or_else(|_| ctx.root().to_path_buf());
    let mut check = |path: &Path| {
        // A symbolic link is read through: the rules of what it points to apply, as for `read`
        // (under the worktree's own spelling, which its patterns are relative to).
        let target = if follow || path.is_symlink() { path.canonicalize().ok() } else { None };
        let target = target.map(|t| match t.strip_prefix(&root_real) {
            Ok(rel) => ctx.root().join(rel),
            Err(_) => t,
        });
        let target = target.as_deref().unwrap_or(path);
        if !target.is_file() {
            return;
        }
        // The name it was found under counts too.
        let names: &[&Path] = if target == path { &[path] } else { &[target, path] };
        for named in names {
            let pattern = pattern_for(ctx.root(), named);
            if ctx.decide("read", &pattern) != Action::Allow {
                guarded.push(pattern);
            }
        }
    };
    if !read.path.is_dir() {
        check(&read.path);
        return true;
    }
    let glob: Option<GlobMatcher> = match read.glob.as_deref() {
        Some(g) => match GlobBuilder::new(g).literal_separator(true).backslash_escape(true).build() {
            Ok(glob) => Some(glob.compile_matcher()),
            // Not a pattern globset reads: every file of the tree is checked instead.
            Err(_) => None,
        },
        None => None,
    };
    let depth = read.glob.as_deref().filter(|_| glob.is_some()).map(|g| g.split('/').count());
    let mut walker = ignore::WalkBuilder::new(&read.path);
    walker
        .hidden(!read.hidden)
        .ignore(!read.ignored)
        .git_ignore(!read.ignored)
        .git_global(!read.ignored)
        .git_exclude(!read.ignored)
        .parents(!read.ignored)
        .require_git(false)
        .follow_links(follow)
        .max_depth(depth);
    for entry in walker.build() {
        *seen += 1;
        if *seen > MAX_ENTRIES || started.elapsed() > MAX_TIME {
            return false;
        }
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if let Some(glob) = &glob {
            let rel = entry.path().strip_prefix(&read.path).unwrap_or(entry.path());
            if !glob.is_match(rel) {
                continue;
            }
        }
        check(entry.path());
    }
    true
}
