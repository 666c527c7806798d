//! `glob`: files whose path matches a glob, gitignore-aware, newest-modified first, capped.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{ToolFlags, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{PathGlob, blocking, path_order, walker};
use toolshed_path::{self as path, Permitted, ResolvedPath, pattern_for};

/// Most paths returned.
pub const MAX_RESULTS: usize = 100;

const DESCRIPTION: &str = "Finds files by glob, newest first, at most 100. A pattern without `/` matches names at any depth (`*.md`); one with `/` matches the path under `path`. Leaves out `.gitignore`d files and `.git`; includes hidden files.";

/// Arguments of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// E.g. `src/**/*.{ts,tsx}`.
    #[schemars(description = "")]
    pub pattern: String,
    /// The directory to search.
    #[schemars(description = "")]
    pub path: Option<String>,
    #[serde(skip)]
    #[schemars(skip)]
    permitted: Permitted,
}

impl GlobArgs {
    fn target(&self) -> &str {
        self.path.as_deref().filter(|p| !p.trim().is_empty()).unwrap_or(".")
    }
}

/// The `glob` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct GlobTool;

impl TypedTool for GlobTool {
    type Args = GlobArgs;

    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &GlobArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let resolved = path::resolve(ctx, args.target())?;
        args.permitted.remember(&resolved);
        Ok(resolved.requests(&spec.permission))
    }

    async fn run(&self, args: GlobArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let now = path::resolve(&ctx, args.target())?;
        let resolved = path::confirm(&ctx, &args.permitted, now, "glob").await?;
        if !resolved.is_dir() {
            return Err(match resolved.exists() {
                true => ToolError::model(format!(
                    "`{}` is a file, not a directory. Send the directory to search as `path`.",
                    resolved.display()
                )),
                false => super::not_found(&resolved, "Directory"),
            });
        }
        if super::negates(&args.pattern) {
            return Err(ToolError::model(format!(
                "glob finds the files a pattern names; it cannot leave files out, so `{}` would match nothing. Send the pattern of the files you want (`**/*.rs`); grep's `include` takes `!` to leave files out. A name that begins with `!` is written `\\!name`.",
                args.pattern
            )));
        }
        let glob = PathGlob::new(&args.pattern, resolved.path())?;
        let cwd = path::Confinement::from_context(&ctx).cwd().to_path_buf();
        let cancel = ctx.cancellation().clone();
        blocking(move || Ok(glob_files(&resolved, &glob, &args.pattern, &cwd, MAX_RESULTS, cancel))).await
    }
}

fn glob_files(
    dir: &ResolvedPath,
    glob: &PathGlob,
    pattern: &str,
    cwd: &std::path::Path,
    cap: usize,
    cancel: toolshed_core::context::CancellationToken,
) -> ToolOutput {
    let found: Arc<Mutex<Vec<(SystemTime, PathBuf)>>> = Arc::default();
    let base = dir.path().to_path_buf();
    walker(&base).threads(worker_threads()).build_parallel().run(|| {
        let mut local = Local { found: Vec::new(), shared: found.clone() };
        let base = base.clone();
        let glob = glob.clone();
        let cancel = cancel.clone();
        Box::new(move |entry| {
            if cancel.is_cancelled() {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            if glob.matches_under(&base, entry.path()) {
                let modified = entry.metadata().ok().and_then(|m| m.modified().ok()).unwrap_or(SystemTime::UNIX_EPOCH);
                local.found.push((modified, entry.into_path()));
            }
            WalkState::Continue
        })
    });
    let mut found = std::mem::take(&mut *found.lock().unwrap_or_else(PoisonError::into_inner));
    let total = found.len();
    let newest_first =
        |a: &(SystemTime, PathBuf), b: &(SystemTime, PathBuf)| b.0.cmp(&a.0).then_with(|| path_order(&a.1, &b.1));
    if found.len() > cap {
        found.select_nth_unstable_by(cap, newest_first);
        found.truncate(cap);
    }
    found.sort_by(newest_first);
    if found.is_empty() {
        return ToolOutput::text(format!("No files match `{pattern}` under `{}`.", dir.display()))
            .with_title(pattern.to_string())
            .with_metadata("count", 0);
    }
    let mut out = String::new();
    for (_, path) in &found {
        out.push_str(&display_path(cwd, path));
        out.push('\n');
    }
    if total > found.len() {
        out.push_str(&format!(
            "\n(Showing the {} most recently modified of {total} matching files. Use a more specific pattern or path to see the others.)",
            found.len()
        ));
    }
    ToolOutput::text(out.trim_end().to_string())
        .with_title(pattern.to_string())
        .with_metadata("count", total)
        .with_metadata("truncated", total > found.len())
}

/// One walker thread's finds, handed over when the thread is done with them.
struct Local {
    found: Vec<(SystemTime, PathBuf)>,
    shared: Arc<Mutex<Vec<(SystemTime, PathBuf)>>>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner).append(&mut self.found);
    }
}

/// `path` relative to `cwd` when under it, else absolute, with `/` separators.
pub(crate) fn display_path(cwd: &std::path::Path, path: &std::path::Path) -> String {
    pattern_for(cwd, path)
}

/// Threads for the parallel walkers: the machine's cores, at most 8.
pub(crate) fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(8))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::time::Duration;

    async fn call(root: &std::path::Path, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext::standalone(root, root.join(".data"));
        GlobTool.run(serde_json::from_value(args).unwrap(), ctx).await
    }

    fn touch(root: &std::path::Path, rel: &str, age_secs: u64) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, "x").unwrap();
        let when = SystemTime::now() - Duration::from_secs(age_secs);
        fs::File::options().write(true).open(&p).unwrap().set_modified(when).unwrap();
    }

    #[tokio::test]
    async fn glob_lists_newest_first_and_honours_gitignore() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        touch(&root, "old.rs", 300);
        touch(&root, "src/new.rs", 10);
        touch(&root, "src/mid.rs", 100);
        touch(&root, "src/skip.txt", 5);
        touch(&root, "gen/built.rs", 1);
        touch(&root, ".hidden/h.rs", 200);
        fs::write(root.join(".gitignore"), "gen/\n").unwrap();
        let out = call(&root, serde_json::json!({"pattern": "**/*.rs"})).await.unwrap();
        assert_eq!(out.text, "src/new.rs\nsrc/mid.rs\n.hidden/h.rs\nold.rs");
        let out = call(&root, serde_json::json!({"pattern": "*.rs", "path": "src"})).await.unwrap();
        assert_eq!(out.text, "src/new.rs\nsrc/mid.rs");
        let out = call(&root, serde_json::json!({"pattern": "src/*.{rs,txt}"})).await.unwrap();
        assert_eq!(out.text, "src/skip.txt\nsrc/new.rs\nsrc/mid.rs");
    }

    #[tokio::test]
    async fn glob_caps_at_the_limit_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for i in 0..105 {
            touch(&root, &format!("f{i:03}.txt"), 1000 - i);
        }
        let out = call(&root, serde_json::json!({"pattern": "*.txt"})).await.unwrap();
        let lines: Vec<&str> = out.text.lines().collect();
        assert_eq!(lines[0], "f104.txt");
        assert_eq!(lines.len(), 102);
        insta::assert_snapshot!(lines[101], @"(Showing the 100 most recently modified of 105 matching files. Use a more specific pattern or path to see the others.)");
    }

    #[tokio::test]
    async fn glob_explains_empty_results_and_bad_patterns() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        touch(&root, "a.txt", 1);
        let out = call(&root, serde_json::json!({"pattern": "*.zig"})).await.unwrap();
        assert_eq!(out.text, "No files match `*.zig` under `.`.");
        for pattern in [
            "!*.md",
            " !a.txt",
            "./!*.md",
            "src/!*.rs",
            "**/!*.md",
            "*.!(md)",
            "{a,!b}.txt",
            "*.{md,!txt}",
            "docs\\!a.txt",
        ] {
            let err = call(&root, serde_json::json!({"pattern": pattern})).await.unwrap_err();
            assert!(err.to_string().contains("cannot leave files out"), "{err}");
        }
        // Several globs in one pattern: braces say it.
        for pattern in ["*.rs,*.toml", "*.@(rs|toml)", "*.(txt|md)"] {
            let err = call(&root, serde_json::json!({"pattern": pattern})).await.unwrap_err();
            assert!(err.to_string().contains("holds several globs"), "{pattern}: {err}");
        }
        for pattern in ["*.{txt,md}", "[,]*", "{a,b}.txt"] {
            call(&root, serde_json::json!({"pattern": pattern})).await.unwrap();
        }
        // A `!` escaped is a name's own.
        touch(&root, "!notes.md", 2);
        for pattern in ["\\!notes.md", "**/\\!*.md", "\\!*", "{\\!notes,x}.md", "**\\\\!*.md"] {
            let out = call(&root, serde_json::json!({"pattern": pattern})).await.unwrap();
            assert_eq!(out.text.trim(), "!notes.md", "{pattern}");
        }
        let err = call(&root, serde_json::json!({"pattern": "!notes.md"})).await.unwrap_err();
        assert!(err.to_string().contains("`\\!name`"), "{err}");
        // A negated class is a glob's own.
        let out = call(&root, serde_json::json!({"pattern": "[!b].txt"})).await.unwrap();
        assert_eq!(out.text.trim(), "a.txt");
        let err = call(&root, serde_json::json!({"pattern": "a[.txt"})).await.unwrap_err();
        assert!(err.to_string().contains("is invalid"), "{err}");
        let err = call(&root, serde_json::json!({"pattern": "*", "path": "a.txt"})).await.unwrap_err();
        assert!(err.to_string().contains("is a file, not a directory"), "{err}");
    }
}
