//! `apply_patch`: edits files with a patch in the Codex format, all or nothing.
//!
//! A freeform tool: on the OpenAI Responses API the model writes the patch as raw text
//! constrained by Codex's Lark grammar; elsewhere it sends `{"input": "<patch>"}`. Parsing,
//! matching and the durable all-or-nothing write live in `toolshed-patch`; this module adds
//! path confinement, the one `edit` permission request naming every file, per-file locks and
//! the post-write hooks.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Grammar, GrammarSyntax, ToolFlags, ToolSpec, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};
use toolshed_patch::{Action, ApplyError, CommitOptions, Hunk, OsFs, Patch, Summary};

use toolshed_path::{Confinement, ResolvedPath};

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

const DESCRIPTION: &str = r#"Edit files with a patch: add, delete, update and move files in one call. The whole patch applies or none of it does.

When this tool takes freeform input, send the patch text itself (not JSON); otherwise put the patch in the `input` field.

The patch starts with `*** Begin Patch` and ends with `*** End Patch`. In between, one section per file:

*** Add File: <path>        then every line of the new file, each starting with `+`
*** Delete File: <path>     nothing follows
*** Update File: <path>     optionally `*** Move to: <new path>`, then one or more chunks

A chunk starts with `@@` (optionally `@@ <line>`: a line such as a class or function header that comes before the change, to say which of several similar places is meant; stack several `@@ <line>` lines to narrow it down further). Then the lines of that region of the file, each with a one-character prefix:
- ` ` (a space) for a line that stays: about 3 lines before and after each change, enough to find the place;
- `-` for a line to remove;
- `+` for a line to add.
Context and `-` lines must match the file as it is now (copy them from the file; never add line numbers). Chunks of one file go in file order. Add `*** End of File` after a chunk that ends at the end of the file.

Paths are relative to the working directory (absolute paths work too). Example:

*** Begin Patch
*** Add File: docs/hello.txt
+Hello, world
*** Update File: src/app.py
*** Move to: src/main.py
@@ def greet():
-    print("Hi")
+    print("Hello, world!")
*** Delete File: obsolete.txt
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
    patch.paths().into_iter().map(|p| paths.resolve_for_write(p).map_err(ToolError::from)).collect()
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
/// request, every directory), then one `edit` request naming every file.
fn requests(patch: &Patch<'_>, resolved: &[ResolvedPath], permission: &str) -> Vec<PermissionRequest> {
    let mut out = Vec::new();
    let mut external: Vec<String> = Vec::new();
    for request in resolved.iter().filter_map(ResolvedPath::external_request) {
        for pattern in request.patterns {
            if !external.contains(&pattern) {
                external.push(pattern);
            }
        }
    }
    if !external.is_empty() {
        out.push(PermissionRequest::new("external_directory", external));
    }
    let mut patterns: Vec<String> = Vec::with_capacity(resolved.len());
    let mut seen = std::collections::HashSet::new();
    for r in resolved {
        let p = r.pattern();
        if seen.insert(p.clone()) {
            patterns.push(p);
        }
    }
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
        let (summary, changed) = tokio::task::spawn_blocking(move || apply_blocking(&input, &confinement, &permitted))
            .await
            .map_err(|e| ToolError::fatal(format!("apply_patch stopped unexpectedly: {e}")))??;
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
    let by_input: HashMap<&str, &std::path::Path> = now.iter().map(|r| (r.input(), r.path())).collect();
    let fs = OsFs::new();
    let plan = toolshed_patch::plan(&patch, &fs, |p| {
        by_input
            .get(p)
            .map(|p| p.to_path_buf())
            .ok_or_else(|| format!("The path `{p}` was not resolved. Send the patch again."))
    })
    .map_err(|e| verification_failed(&e))?;
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

#[cfg(test)]
mod tests;
