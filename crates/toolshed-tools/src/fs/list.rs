//! `list`: a compact, gitignore-aware tree of a directory. Breadth first, so a capped listing
//! still shows the top of the tree; directories whose entries did not fit say how many are
//! missing, and tool caches (`node_modules`, `target`, ...) are named but not expanded.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Alias, ToolFlags, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{NOISE_DIRS, PathGlob, blocking, walker};
use toolshed_path::{self as path, Permitted, ResolvedPath};

/// Most entries shown.
pub const MAX_ENTRIES: usize = 500;
/// Most entries scanned before giving up on counting.
const MAX_SCANNED: usize = 50_000;

const DESCRIPTION: &str = "Lists a directory as an indented tree, without `.gitignore`d files and `.git`; `node_modules`, `target` and the like are not expanded. Stops at 500 entries, saying how many are missing where.";

/// Arguments of `list`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// The directory to list.
    #[schemars(description = "")]
    pub path: Option<String>,
    /// Globs to leave out.
    pub ignore: Option<Vec<String>>,
    #[serde(skip)]
    #[schemars(skip)]
    permitted: Permitted,
}

impl ListArgs {
    fn target(&self) -> &str {
        self.path.as_deref().filter(|p| !p.trim().is_empty()).unwrap_or(".")
    }
}

/// The `list` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct ListTool;

impl TypedTool for ListTool {
    type Args = ListArgs;

    fn name(&self) -> &str {
        "list"
    }

    // Codex's list_dir.
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[("dir_path", Alias::Param("path"))]
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
        args: &ListArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let resolved = path::resolve(ctx, args.target())?;
        args.permitted.remember(&resolved);
        Ok(resolved.requests(&spec.permission))
    }

    async fn run(&self, args: ListArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let now = path::resolve(&ctx, args.target())?;
        let resolved = path::confirm(&ctx, &args.permitted, now, "list").await?;
        if !resolved.exists() {
            return Err(super::not_found(&resolved, "Directory"));
        }
        if !resolved.is_dir() {
            return Err(ToolError::model(format!(
                "`{}` is a file, not a directory. Use read to see its contents.",
                resolved.display()
            )));
        }
        let ignore = args
            .ignore
            .unwrap_or_default()
            .iter()
            .filter(|p| !p.trim().is_empty())
            .map(|p| match p.trim().strip_prefix('!') {
                // gitignore's "do not ignore": nothing here is left out unless `ignore` says so.
                Some(rest) => Err(ToolError::model(format!(
                    "`ignore` lists what to leave out, and `!` (keep) has no meaning there: send `{}` to leave it out, or drop `{p}` to keep it.",
                    rest.trim()
                ))),
                None if super::negates(p) => Err(ToolError::model(format!(
                    "`ignore` lists what to leave out, and `!` has no meaning inside `{p}`: send the pattern of what to leave out, without `!`."
                ))),
                None => PathGlob::new(p, resolved.path()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cancel = ctx.cancellation().clone();
        blocking(move || Ok(list(&resolved, &ignore, MAX_ENTRIES, &|| cancel.is_cancelled()))).await
    }
}

/// One entry of the tree.
#[derive(Clone, Debug)]
struct Node {
    name: String,
    path: PathBuf,
    kind: Kind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Dir,
    /// A directory named but not expanded (a tool cache).
    Noise,
    File,
    Link(String),
}

fn list(resolved: &ResolvedPath, ignore: &[PathGlob], cap: usize, cancelled: &dyn Fn() -> bool) -> ToolOutput {
    let root = resolved.path().to_path_buf();
    let noise: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    let mut builder = walker(&root);
    {
        let noise = noise.clone();
        let ignore = ignore.to_vec();
        let base = root.clone();
        let private = super::private_below(&root);
        builder.filter_entry(move |e| {
            if e.depth() == 0 {
                return true;
            }
            if private.as_deref() == Some(e.path()) {
                return false;
            }
            let name = e.file_name().to_string_lossy();
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            if matches!(name.as_ref(), ".git" | ".hg" | ".svn") && is_dir {
                return false;
            }
            if toolshed_patch::temp::is_temp(e.file_name()) {
                return false;
            }
            let rel = e.path().strip_prefix(&base).unwrap_or(e.path());
            if ignore.iter().any(|g| g.is_match(rel)) {
                return false;
            }
            if is_dir && NOISE_DIRS.contains(&name.as_ref()) {
                noise.lock().unwrap_or_else(PoisonError::into_inner).push(e.path().to_path_buf());
                return false;
            }
            true
        });
    }
    let mut children: HashMap<PathBuf, Vec<Node>> = HashMap::new();
    let mut scanned = 0usize;
    let mut complete = true;
    for entry in builder.build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        scanned += 1;
        if scanned > MAX_SCANNED || (scanned.is_multiple_of(1024) && cancelled()) {
            complete = false;
            break;
        }
        let Some(parent) = entry.path().parent() else { continue };
        let kind = match entry.file_type() {
            Some(t) if t.is_dir() => Kind::Dir,
            Some(t) if t.is_symlink() => {
                Kind::Link(std::fs::read_link(entry.path()).map(|t| t.display().to_string()).unwrap_or_default())
            }
            _ => Kind::File,
        };
        children.entry(parent.to_path_buf()).or_default().push(Node {
            name: entry.file_name().to_string_lossy().into_owned(),
            path: entry.path().to_path_buf(),
            kind,
        });
    }
    for path in noise.lock().unwrap_or_else(PoisonError::into_inner).drain(..) {
        if let Some(parent) = path.parent() {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            children.entry(parent.to_path_buf()).or_default().push(Node {
                name,
                path: path.clone(),
                kind: Kind::Noise,
            });
        }
    }
    for nodes in children.values_mut() {
        nodes.sort_by(|a, b| {
            let dir = |n: &Node| !matches!(n.kind, Kind::Dir | Kind::Noise);
            dir(a)
                .cmp(&dir(b))
                .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
                .then_with(|| a.name.cmp(&b.name))
        });
    }
    let total: usize = children.values().map(Vec::len).sum();

    // Breadth first: how many of each directory's entries fit under the cap.
    let mut shown: HashMap<PathBuf, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([root.clone()]);
    let mut budget = cap;
    while let Some(dir) = queue.pop_front() {
        let Some(nodes) = children.get(&dir) else { continue };
        let take = nodes.len().min(budget);
        budget -= take;
        shown.insert(dir.clone(), take);
        queue.extend(nodes[..take].iter().filter(|n| n.kind == Kind::Dir).map(|n| n.path.clone()));
        if budget == 0 {
            break;
        }
    }

    let mut out = format!("{}/\n", resolved.display().trim_end_matches('/'));
    render(&root, 1, &children, &shown, complete, &mut out);
    let count: usize = shown.values().sum();
    if count == 0 {
        out.push_str("  (empty)\n");
    }
    if count < total || !complete {
        out.push('\n');
        let seen = if complete { format!("{total}") } else { format!("more than {scanned}") };
        out.push_str(&format!(
            "(Showing {count} of {seen} entries. `… N more` marks where entries were left out: list that directory with `path`, or leave things out with `ignore`.)"
        ));
    }
    ToolOutput::text(out.trim_end().to_string())
        .with_title(resolved.display())
        .with_metadata("count", count)
        .with_metadata("truncated", count < total || !complete)
}

fn render(
    dir: &Path,
    depth: usize,
    children: &HashMap<PathBuf, Vec<Node>>,
    shown: &HashMap<PathBuf, usize>,
    complete: bool,
    out: &mut String,
) {
    let Some(nodes) = children.get(dir) else { return };
    let take = shown.get(dir).copied().unwrap_or(0);
    let indent = "  ".repeat(depth);
    for node in &nodes[..take] {
        out.push_str(&indent);
        out.push_str(&node.name);
        match &node.kind {
            Kind::Dir => {
                out.push_str("/\n");
                render(&node.path, depth + 1, children, shown, complete, out);
            }
            Kind::Noise => out.push_str("/ (not expanded)\n"),
            Kind::File => out.push('\n'),
            Kind::Link(target) => out.push_str(&format!(" -> {target}\n")),
        }
    }
    if take < nodes.len() {
        // When the scan stopped early, a directory may hold more than was counted.
        let at_least = if complete { "" } else { "at least " };
        out.push_str(&format!("{indent}… {at_least}{} more\n", nodes.len() - take));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(files: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for f in files {
            let p = root.join(f);
            if f.ends_with('/') {
                fs::create_dir_all(&p).unwrap();
            } else {
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(&p, "x").unwrap();
            }
        }
        (tmp, root)
    }

    async fn call(root: &Path, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        let ctx = ToolContext::standalone(root, root.join(".data"));
        let args: ListArgs = serde_json::from_value(args).unwrap();
        ListTool.run(args, ctx).await
    }

    #[tokio::test]
    async fn list_shows_a_gitignore_aware_tree_with_caches_not_expanded() {
        let (_tmp, root) = tree(&[
            ".gitignore",
            "src/main.rs",
            "src/fs/read.rs",
            "README.md",
            "build.log",
            "node_modules/left-pad/index.js",
            ".github/workflows/ci.yml",
            ".git/HEAD",
        ]);
        fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        fs::remove_dir_all(root.join(".data")).ok();
        let out = call(&root, serde_json::json!({})).await.unwrap();
        insta::assert_snapshot!(out.text, @r"
        ./
          .github/
            workflows/
              ci.yml
          node_modules/ (not expanded)
          src/
            fs/
              read.rs
            main.rs
          .gitignore
          README.md
        ");
    }

    #[tokio::test]
    async fn list_caps_breadth_first_and_says_where() {
        let mut files: Vec<String> = (0..30).map(|i| format!("deep/d{i:02}.txt")).collect();
        files.extend((0..5).map(|i| format!("top{i}.txt")));
        let refs: Vec<&str> = files.iter().map(String::as_str).collect();
        let (_tmp, root) = tree(&refs);
        let resolved = toolshed_path::Confinement::new(&root, &root).resolve(".").unwrap();
        let out = list(&resolved, &[], 10, &|| false);
        insta::assert_snapshot!(out.text, @r"
        ./
          deep/
            d00.txt
            d01.txt
            d02.txt
            d03.txt
            … 26 more
          top0.txt
          top1.txt
          top2.txt
          top3.txt
          top4.txt

        (Showing 10 of 36 entries. `… N more` marks where entries were left out: list that directory with `path`, or leave things out with `ignore`.)
        ");
    }

    #[tokio::test]
    async fn list_honours_ignore_patterns_and_refuses_files() {
        let (_tmp, root) = tree(&["a/keep.rs", "a/skip.log", "fixtures/x/y.json", "f.txt"]);
        let out = call(&root, serde_json::json!({"path": "", "ignore": ["*.log", "fixtures"]})).await.unwrap();
        assert!(
            out.text.contains("keep.rs") && !out.text.contains("skip.log") && !out.text.contains("fixtures"),
            "{}",
            out.text
        );
        let err = call(&root, serde_json::json!({"path": "", "ignore": ["!*.log"]})).await.unwrap_err();
        assert!(err.to_string().contains("send `*.log` to leave it out"), "{err}");
        let err = call(&root, serde_json::json!({"path": "", "ignore": ["**/!x"]})).await.unwrap_err();
        assert!(err.to_string().contains("has no meaning inside"), "{err}");
        let err = call(&root, serde_json::json!({"path": "f.txt"})).await.unwrap_err();
        assert!(err.to_string().contains("is a file, not a directory"), "{err}");
        let err = call(&root, serde_json::json!({"path": "nope"})).await.unwrap_err();
        assert!(err.to_string().contains("Directory not found"), "{err}");
    }
}
