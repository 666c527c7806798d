//! `apply_patch`: edits files with a patch in the Codex format, all or nothing.
//!
//! A freeform tool: on the OpenAI Responses API the model writes the patch as raw text
//! constrained by Codex's Lark grammar; elsewhere it sends `{"input": "<patch>"}`. Parsing,
//! matching and the durable all-or-nothing write live in `toolshed-patch`; this module adds
//! path confinement, the one `edit` permission request naming every file, per-file locks and
//! the post-write hooks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Grammar, GrammarSyntax, ToolFlags, ToolSpec, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};
use toolshed_patch::{Action, ApplyError, CommitOptions, FileKind, FileOp, FileSystem, Hunk, Patch, Plan, Summary};

use toolshed_path::{ConfinedFs, Confinement, ResolvedPath};

/// Codex's grammar for the patch, sent byte for byte as the freeform tool's format.
pub const GRAMMAR: &str = r#"start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
"#;

const DESCRIPTION: &str = r#"Adds, deletes, updates and moves files; the whole patch applies or none of it. Send the patch text itself (in `input` when called with JSON).

*** Begin Patch
*** Add File: <path>       then each line of the file after `+`
*** Delete File: <path>
*** Update File: <path>    optionally `*** Move to: <path>`, then chunks
*** End Patch

A chunk starts with `@@`, or `@@ <line>` quoting a line above the change (a function header) when the place is ambiguous; repeat to narrow. Its lines are ` ` context (about 3 before and after each change), `-` removed and `+` added; context and `-` lines must match the file as it is, with no line numbers. Chunks go in file order; `*** End of File` follows a chunk that ends the file. Example:

*** Begin Patch
*** Update File: src/app.py
@@ def greet():
-    print("Hi")
+    print("Hello")
*** End Patch"#;

/// The arguments of `apply_patch`: one string, the patch.
#[derive(Deserialize, JsonSchema)]
pub struct ApplyPatchArgs {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`.
    pub input: String,
    /// The paths as resolved when permission was checked, for the run to confirm.
    #[serde(skip)]
    #[schemars(skip)]
    permitted: OnceLock<Vec<ResolvedPath>>,
}

/// The `apply_patch` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApplyPatch;

fn verification_failed(e: &ApplyError) -> ToolError {
    let hint = match e {
        ApplyError::Parse(_) => {
            "Nothing was changed. Send the whole patch again: it starts with '*** Begin Patch', ends with \
             '*** End Patch', and every line of an Update chunk starts with ' ', '+' or '-'."
        }
        ApplyError::Empty => {
            "The patch has no file sections. Add '*** Add File: <path>', '*** Delete File: <path>' or \
             '*** Update File: <path>' sections between the markers."
        }
        ApplyError::ContextNotFound(_) | ApplyError::LinesNotFound(_) => {
            "Nothing was changed. Read the file again and send the whole patch with context and '-' lines \
             copied exactly from it."
        }
        // A file named by several sections: its message says what to send instead.
        ApplyError::Delete { .. } | ApplyError::Write { .. } if e.to_string().contains(toolshed_patch::plan::TWICE) => {
            "Nothing was changed."
        }
        ApplyError::Path { .. } | ApplyError::Read { .. } | ApplyError::Delete { .. } | ApplyError::Write { .. } => {
            "Nothing was changed. Check the path and send the whole patch again."
        }
        ApplyError::Commit(_) => "",
    };
    let prefix =
        if matches!(e, ApplyError::Commit(_)) { "apply_patch failed" } else { "apply_patch verification failed" };
    if hint.is_empty() {
        ToolError::model(format!("{prefix}: {e}"))
    } else {
        ToolError::model(format!("{prefix}: {e}\n\n{hint}"))
    }
}

fn parse(text: &str) -> Result<Patch<'_>, ToolError> {
    toolshed_patch::parse(text).map_err(|e| verification_failed(&ApplyError::Parse(e)))
}

/// Resolves every path the patch names for writing, in patch order.
fn resolve_all(paths: &Confinement, patch: &Patch<'_>) -> Result<Vec<ResolvedPath>, ToolError> {
    let resolved: Vec<ResolvedPath> = patch
        .paths()
        .into_iter()
        .map(|p| paths.resolve_for_write(p).map_err(ToolError::from))
        .collect::<Result<_, _>>()?;
    // A path resolves to where its links lead: deleting a link would delete what it points to
    // and leave the link dangling, so a link is not deleted at all; nor moved, which deletes its
    // source the same way; nor moved onto or added over, which writes through it (review 28). Whether a path names a link
    // is read from its resolution, the one the write uses (`sub\l`, `file://…/sub/l` alike).
    let is_link = |path: &str| resolved.iter().any(|r| r.input() == path && r.names_link());
    for hunk in &patch.hunks {
        match hunk {
            Hunk::Delete { path } if is_link(path) => {
                return Err(ToolError::model(format!(
                    "`{path}` is a symbolic link: apply_patch does not delete links (it would delete the file the link points to). Nothing was changed. Remove the link with bash (`rm {path}`), and send the patch without that Delete File section."
                )));
            }
            Hunk::Update { path, move_to: Some(to), .. } if to != path && is_link(path) => {
                return Err(ToolError::model(format!(
                    "`{path}` is a symbolic link: apply_patch does not move links (it would move the file the link points to and leave the link dangling). Nothing was changed. To change the text, send that section without `*** Move to`; to rename the link itself, use bash (`mv {path} {to}`)."
                )));
            }
            Hunk::Add { path, .. } if is_link(path) => {
                return Err(ToolError::model(format!(
                    "`{path}` is a symbolic link: apply_patch does not add a file over a link (it would write the file the link points to, or make it where the link dangles). Nothing was changed. To change that file, send an Update File section for the file itself; to replace the link with a file, remove it with bash (`rm {path}`) first."
                )));
            }
            Hunk::Update { path, move_to: Some(to), .. } if to != path && is_link(to) => {
                return Err(ToolError::model(format!(
                    "`{to}` is a symbolic link: apply_patch does not move a file onto a link (it would write the file the link points to, and give it `{path}`'s mode). Nothing was changed. Remove the link with bash (`rm {to}`) first, or move to another path."
                )));
            }
            _ => {}
        }
    }
    Ok(resolved)
}

/// `add`, `delete`, `update` or `move` for each file section, as the approver sees it.
fn file_kinds(patch: &Patch<'_>, resolved: &[ResolvedPath]) -> Value {
    let pattern_of = |input: &str| resolved.iter().find(|r| r.input() == input).map(ResolvedPath::pattern);
    let kinds = patch.hunks.iter().map(|hunk| match hunk {
        Hunk::Add { path, .. } => json!({ "path": pattern_of(path), "type": "add" }),
        Hunk::Delete { path } => json!({ "path": pattern_of(path), "type": "delete" }),
        Hunk::Update { path, move_to: Some(to), .. } => {
            json!({ "path": pattern_of(path), "type": "move", "move_path": pattern_of(to) })
        }
        Hunk::Update { path, .. } => json!({ "path": pattern_of(path), "type": "update" }),
    });
    Value::Array(kinds.collect())
}

/// The requests a patch needs: `external_directory` for files outside the worktree (one
/// request, every directory), `read` of the files there already (its result shows their text: a
/// diff, the lines nearest a chunk it did not find), then one `edit` request naming every file.
fn requests(patch: &Patch<'_>, resolved: &[ResolvedPath], permission: &str) -> Vec<PermissionRequest> {
    // Each pattern once, in order.
    let once = |patterns: &mut dyn Iterator<Item = String>| {
        let mut seen = std::collections::HashSet::new();
        patterns.filter(|p| seen.insert(p.clone())).collect::<Vec<String>>()
    };
    let mut out = Vec::new();
    let external = once(&mut resolved.iter().filter_map(ResolvedPath::external_request).flat_map(|r| r.patterns));
    if !external.is_empty() {
        out.push(PermissionRequest::new("external_directory", external));
    }
    let shown = once(&mut resolved.iter().filter_map(ResolvedPath::read_request).flat_map(|r| r.patterns));
    if !shown.is_empty() {
        out.push(PermissionRequest::new("read", shown));
    }
    let patterns = once(&mut resolved.iter().flat_map(ResolvedPath::patterns));
    let filepath = patterns.join(", ");
    out.push(
        PermissionRequest::new(permission, patterns)
            .with_always(["*"])
            .with_metadata("filepath", json!(filepath))
            .with_metadata("files", file_kinds(patch, resolved)),
    );
    out
}

impl TypedTool for ApplyPatch {
    type Args = ApplyPatchArgs;

    fn name(&self) -> &str {
        "apply_patch"
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::MUTATING
    }

    fn customize(&self, mut spec: ToolSpec) -> ToolSpec {
        spec.parameters =
            toolshed_core::schema::freeform_parameters("The whole patch, from `*** Begin Patch` to `*** End Patch`.");
        spec.with_permission("edit")
            .with_freeform(Grammar { syntax: GrammarSyntax::Lark, definition: GRAMMAR.to_string() })
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &ApplyPatchArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let patch = parse(&args.input)?;
        let resolved = resolve_all(&Confinement::from_context(ctx), &patch)?;
        let requests = requests(&patch, &resolved, &spec.permission);
        let _ = args.permitted.set(resolved);
        Ok(requests)
    }

    async fn run(&self, args: ApplyPatchArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let ApplyPatchArgs { input, permitted } = args;
        let confinement = Confinement::from_context(&ctx);
        let permitted = match permitted.into_inner() {
            Some(permitted) => permitted,
            None => {
                // Run outside the chain: nothing was asked yet.
                let patch = parse(&input)?;
                let now = resolve_all(&confinement, &patch)?;
                for request in requests(&patch, &now, "edit") {
                    ctx.ask(request).await?;
                }
                now
            }
        };
        let paths: Vec<PathBuf> = permitted.iter().map(|r| r.path().to_path_buf()).collect();
        let _guard = ctx.environment().path_locks.lock_many(&paths).await;
        if ctx.is_cancelled() {
            return Err(ToolError::model("apply_patch was cancelled before it wrote anything. Nothing was changed."));
        }
        let (summary, changed) = match ctx.file_access() {
            None => tokio::task::spawn_blocking(move || apply_blocking(&input, &confinement, &permitted))
                .await
                .map_err(|e| ToolError::fatal(format!("apply_patch stopped unexpectedly: {e}")))??,
            Some(_) => apply_through_editor(&ctx, &input, confinement, permitted).await?,
        };
        let mut text = summary.to_string();
        if let Some(note) = ctx.files_changed(&changed).await {
            text.push_str("\n\n");
            text.push_str(&note);
        }
        let files: Vec<Value> = summary
            .files
            .iter()
            .map(|f| {
                let action = match f.action {
                    Action::Added => "added",
                    Action::Modified => "modified",
                    Action::Deleted => "deleted",
                };
                json!({
                    "path": f.path,
                    "action": action,
                    "moved_from": f.moved_from,
                    "additions": f.added,
                    "deletions": f.removed,
                })
            })
            .collect();
        let title = match summary.files.len() {
            1 => format!("Patched {}", summary.files[0].path),
            n => format!("Patched {n} files"),
        };
        Ok(ToolOutput::text(text).with_title(title).with_metadata("files", Value::Array(files)))
    }
}

/// Parses the patch, checks that every path still leads where it did when permission was
/// given, then plans and writes. Returns the summary and the files written or removed.
fn apply_blocking(
    input: &str,
    confinement: &Confinement,
    permitted: &[ResolvedPath],
) -> Result<(Summary, Vec<PathBuf>), ToolError> {
    let (patch, now) = checked(input, confinement, permitted)?;
    // Every read and write from here on walks from the root without following links: a
    // directory swapped for a link since the check leads nowhere.
    let fs = ConfinedFs::new(confinement.root());
    let plan = plan_over(&patch, &now, &fs)?;
    // Temporary files a killed toolshed left where this patch writes.
    for op in &plan.ops {
        if let Some(parent) = op.path().parent() {
            toolshed_patch::temp::sweep_stale(parent);
        }
    }
    let options = CommitOptions::default();
    toolshed_patch::commit(&fs, &plan.ops, &options).map_err(|e| verification_failed(&ApplyError::Commit(e)))?;
    let changed = plan.ops.iter().map(|op| op.path().to_path_buf()).collect();
    Ok((plan.summary, changed))
}

/// The parsed patch and its paths resolved now, each checked to lead where it did when
/// permission was given.
fn checked<'p>(
    input: &'p str,
    confinement: &Confinement,
    permitted: &[ResolvedPath],
) -> Result<(Patch<'p>, Vec<ResolvedPath>), ToolError> {
    let patch = parse(input)?;
    if patch.hunks.is_empty() {
        return Err(verification_failed(&ApplyError::Empty));
    }
    let now = resolve_all(confinement, &patch)?;
    if now.len() != permitted.len() {
        return Err(ToolError::fatal("apply_patch: the patch changed between the permission check and the run"));
    }
    if let Some((was, is)) = permitted.iter().zip(&now).find(|(b, n)| !b.same_target(n)) {
        return Err(ToolError::model(format!(
            "`{}` resolved to `{}` when permission was checked but to `{}` now (a symbolic link changed). \
             Nothing was changed. Check the path and call again.",
            is.input(),
            was.path().display(),
            is.path().display()
        )));
    }
    Ok((patch, now))
}

/// Plans `patch` over `fs`, its paths resolved as `now`.
fn plan_over(patch: &Patch<'_>, now: &[ResolvedPath], fs: &dyn FileSystem) -> Result<Plan, ToolError> {
    let by_input: HashMap<&str, &Path> = now.iter().map(|r| (r.input(), r.path())).collect();
    toolshed_patch::plan(patch, fs, |p| {
        by_input
            .get(p)
            .map(|p| p.to_path_buf())
            .ok_or_else(|| format!("The path `{p}` was not resolved. Send the patch again."))
    })
    .map_err(|e| verification_failed(&e))
}

/// Applies the patch to an editor's buffers (see [`crate::fs::buffers`]): the current text of
/// every text file comes from the editor, every new text goes to it. The editor cannot delete,
/// so deletions (and the source of a move) happen on the disk, after every write succeeded. A
/// write the editor refuses puts back the files already written and reports what was left.
async fn apply_through_editor(
    ctx: &ToolContext,
    input: &str,
    confinement: Confinement,
    permitted: Vec<ResolvedPath>,
) -> Result<(Summary, Vec<PathBuf>), ToolError> {
    let mut texts = HashMap::new();
    for resolved in &permitted {
        if let Some(text) = crate::fs::buffers::read_to_change(ctx, resolved, "apply_patch").await? {
            texts.insert(resolved.path().to_path_buf(), text);
        }
    }
    let input_owned = input.to_string();
    let (plan, now) = tokio::task::spawn_blocking(move || {
        let (patch, now) = checked(&input_owned, &confinement, &permitted)?;
        let plan = plan_over(&patch, &now, &Buffers { texts, disk: ConfinedFs::new(confinement.root()) })?;
        Ok::<_, ToolError>((plan, now))
    })
    .await
    .map_err(|e| ToolError::fatal(format!("apply_patch stopped unexpectedly: {e}")))??;
    let mut targets = Vec::with_capacity(plan.ops.len());
    for op in &plan.ops {
        let target =
            now.iter().find(|r| r.path() == op.path()).cloned().ok_or_else(|| {
                ToolError::fatal(format!("apply_patch: `{}` was planned but not resolved", op.display()))
            })?;
        targets.push(target);
    }
    let mut written: Vec<(&ResolvedPath, Option<&Vec<u8>>)> = Vec::new();
    let mut deletions = Vec::new();
    for (op, target) in plan.ops.iter().zip(&targets) {
        let FileOp::Write { contents, original, .. } = op else {
            deletions.push(target.clone());
            continue;
        };
        let text = String::from_utf8_lossy(contents).into_owned();
        if let Err(e) = crate::fs::buffers::write(ctx, target, text, "apply_patch").await {
            let mut kept = Vec::new();
            for (done, original) in written.into_iter().rev() {
                let restored = match original {
                    Some(bytes) => {
                        crate::fs::buffers::write(ctx, done, String::from_utf8_lossy(bytes).into_owned(), "apply_patch")
                            .await
                            .is_ok()
                    }
                    None => false,
                };
                if !restored {
                    kept.push(done.display());
                }
            }
            let left = if kept.is_empty() {
                "Nothing was changed.".to_string()
            } else {
                format!("These files were written and could not be put back: {}.", kept.join(", "))
            };
            return Err(ToolError::model(format!("apply_patch failed: {e} {left}")));
        }
        written.push((target, original.as_ref()));
    }
    if !deletions.is_empty() {
        tokio::task::spawn_blocking(move || {
            deletions.iter().try_for_each(|r| {
                r.remove_file().map_err(|e| {
                    ToolError::model(format!(
                        "apply_patch failed: removing `{}`: {e}. The other files of the patch were written.",
                        r.display()
                    ))
                })
            })
        })
        .await
        .map_err(|e| ToolError::fatal(format!("apply_patch stopped unexpectedly: {e}")))??;
    }
    let changed = plan.ops.iter().map(|op| op.path().to_path_buf()).collect();
    Ok((plan.summary, changed))
}

/// The disk, with the editor's text in place of the text files it provided; planning only
/// reads through it.
struct Buffers {
    texts: HashMap<PathBuf, String>,
    disk: ConfinedFs,
}

impl FileSystem for Buffers {
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match self.texts.get(path) {
            Some(text) => Ok(text.clone().into_bytes()),
            None => self.disk.read(path),
        }
    }

    fn kind(&self, path: &Path) -> std::io::Result<FileKind> {
        self.disk.kind(path)
    }

    fn create_dir(&self, path: &Path) -> std::io::Result<()> {
        self.disk.create_dir(path)
    }

    fn remove_dir(&self, path: &Path) -> std::io::Result<()> {
        self.disk.remove_dir(path)
    }

    fn create_new(&self, path: &Path, data: &[u8], like: Option<&Path>) -> std::io::Result<()> {
        self.disk.create_new(path, data, like)
    }

    fn sync_files(&self, paths: &[PathBuf]) -> std::io::Result<()> {
        self.disk.sync_files(paths)
    }

    fn sync_dirs(&self, dirs: &[PathBuf]) -> std::io::Result<()> {
        self.disk.sync_dirs(dirs)
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.disk.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        self.disk.remove_file(path)
    }
}

#[cfg(test)]
mod tests;
