use super::*;
use std::fs;
use std::path::Path;
use std::sync::{Arc, Mutex};

use toolshed_core::exec::{Executor, Session, ToolCall, ToolResult};
use toolshed_core::hooks::{Hooks, PostWriteHook};
use toolshed_core::permission::{Action as Act, ApprovalRequest, Approver, Reply, Rule, Ruleset};
use toolshed_core::registry::{ModelFamilyHook, Registry, View};
use toolshed_core::tool::{BoxFuture, Tool, Typed};

struct Fixture {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/lib.rs"), "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n").unwrap();
    fs::write(root.join("notes.txt"), "old notes\n").unwrap();
    fs::create_dir_all(base.join("outside")).unwrap();
    fs::write(base.join("outside/secret.txt"), "secret\n").unwrap();
    Fixture { _tmp: tmp, base, root }
}

/// Records every approval request and answers with `reply`.
struct Recorder {
    seen: Mutex<Vec<PermissionRequest>>,
    reply: Reply,
}

impl Approver for Recorder {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        self.seen.lock().unwrap().push(request.request.clone());
        let reply = self.reply.clone();
        Box::pin(async move { reply })
    }
}

/// Remembers the files a tool reported changed.
#[derive(Default)]
struct Changed(Mutex<Vec<PathBuf>>);

impl PostWriteHook for Changed {
    fn after_write<'a>(&'a self, _ctx: &'a ToolContext, files: &'a [PathBuf]) -> BoxFuture<'a, Option<String>> {
        self.0.lock().unwrap().extend(files.iter().cloned());
        Box::pin(async { Some("diagnostics: none".to_string()) })
    }
}

fn executor(root: &Path, rules: Ruleset, approver: Arc<dyn Approver>, hooks: Hooks) -> Executor {
    let mut registry = Registry::new();
    crate::register_builtins(&mut registry, &toolshed_core::config::Config::default());
    Executor::builder(registry, root.to_path_buf())
        .data_dir(root.join(".data"))
        .permission(Arc::new(rules))
        .approver(approver)
        .hooks(hooks)
        .build()
}

async fn call_raw(exec: &Executor, text: &str) -> ToolResult {
    exec.call(&Session::new("s", "build"), ToolCall::raw("c1", "apply_patch", text)).await
}

fn allow_all() -> Arc<Recorder> {
    Arc::new(Recorder { seen: Mutex::default(), reply: Reply::Once })
}

const PATCH: &str = "*** Begin Patch
*** Add File: docs/new.md
+# New
*** Update File: src/lib.rs
@@ fn b() {
-    2
+    20
*** Delete File: notes.txt
*** End Patch
";

#[test]
fn spec_is_a_lark_freeform_tool_guarded_by_edit() {
    let tool = Typed::new(ApplyPatch);
    let spec = tool.spec();
    assert_eq!(spec.name, "apply_patch");
    assert_eq!(spec.permission, "edit");
    assert_eq!(spec.flags, ToolFlags::MUTATING);
    let grammar = spec.freeform.as_ref().unwrap();
    assert_eq!(grammar.syntax, GrammarSyntax::Lark);
    assert!(grammar.definition.starts_with("start: begin_patch hunk+ end_patch\n"));
    assert!(grammar.definition.ends_with("%import common.LF\n"));
    assert_eq!(
        spec.parameters,
        toolshed_core::schema::freeform_parameters("The whole patch, from `*** Begin Patch` to `*** End Patch`.")
    );
    insta::assert_snapshot!(spec.description);
}

#[tokio::test]
async fn raw_patch_text_applies_every_file_and_reports_each() {
    let f = fixture();
    let changed = Arc::new(Changed::default());
    let mut hooks = Hooks::default();
    hooks.add_post_write(changed.clone());
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), hooks);
    let result = call_raw(&exec, PATCH).await;
    assert!(!result.is_error, "{}", result.output);
    insta::assert_snapshot!(result.output, @r"
    Success. Updated the following files:
    A docs/new.md (+1)
    M src/lib.rs (+1 -1)
    D notes.txt (-1)

    diagnostics: none
    ");
    assert_eq!(fs::read_to_string(f.root.join("docs/new.md")).unwrap(), "# New\n");
    assert_eq!(fs::read_to_string(f.root.join("src/lib.rs")).unwrap(), "fn a() {\n    1\n}\n\nfn b() {\n    20\n}\n");
    assert!(!f.root.join("notes.txt").exists());
    let mut changed = changed.0.lock().unwrap().clone();
    changed.sort();
    assert_eq!(changed, [f.root.join("docs/new.md"), f.root.join("notes.txt"), f.root.join("src/lib.rs")]);
    assert_eq!(
        result.metadata["files"][1],
        json!({"path": "src/lib.rs", "action": "modified", "moved_from": null, "additions": 1, "deletions": 1})
    );
    let leftovers: Vec<_> = fs::read_dir(f.root.join("src")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["lib.rs"], "no temporary files remain");
}

#[tokio::test]
async fn json_input_field_works_like_raw_text() {
    let f = fixture();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let call = ToolCall::json(
        "c1",
        "apply_patch",
        json!({ "input": "*** Begin Patch\n*** Delete File: notes.txt\n*** End Patch" }),
    );
    let result = exec.call(&Session::new("s", "build"), call).await;
    assert!(!result.is_error, "{}", result.output);
    assert!(!f.root.join("notes.txt").exists());
}

#[tokio::test]
async fn one_edit_request_names_every_file_relative_to_the_root() {
    let f = fixture();
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("edit", "*", Act::Ask));
    let approver = allow_all();
    let exec = executor(&f.root, rules, approver.clone(), Hooks::default());
    let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n*** Move to: src/moved.rs\n@@\n-    1\n+    one\n\
                 *** Add File: ./docs/../docs/a.md\n+a\n*** End Patch";
    let result = call_raw(&exec, patch).await;
    assert!(!result.is_error, "{}", result.output);
    let seen = approver.seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].permission, "edit");
    assert_eq!(seen[0].patterns, ["src/lib.rs", "src/moved.rs", "docs/a.md"]);
    assert_eq!(seen[0].always, ["*"]);
    assert_eq!(
        seen[0].metadata["files"],
        json!([{"path": "src/lib.rs", "type": "move", "move_path": "src/moved.rs"}, {"path": "docs/a.md", "type": "add"}])
    );
    assert_eq!(
        result.output,
        "Success. Updated the following files:\nA ./docs/../docs/a.md (+1)\nM src/moved.rs (moved from src/lib.rs, +1 -1)"
    );
}

#[tokio::test]
async fn a_rejected_request_writes_nothing() {
    let f = fixture();
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("edit", "*", Act::Ask));
    let approver = Arc::new(Recorder { seen: Mutex::default(), reply: Reply::Reject(None) });
    let exec = executor(&f.root, rules, approver, Hooks::default());
    let result = call_raw(&exec, PATCH).await;
    assert!(result.is_error);
    assert!(f.root.join("notes.txt").exists());
    assert!(!f.root.join("docs").exists());
}

#[tokio::test]
async fn files_outside_the_worktree_need_external_directory() {
    let f = fixture();
    let approver = allow_all();
    let exec = executor(&f.root, Ruleset::defaults(), approver.clone(), Hooks::default());
    let outside = f.base.join("outside/secret.txt");
    let patch = format!("*** Begin Patch\n*** Update File: {}\n@@\n-secret\n+public\n*** End Patch", outside.display());
    let result = call_raw(&exec, &patch).await;
    assert!(!result.is_error, "{}", result.output);
    let seen = approver.seen.lock().unwrap();
    assert_eq!(seen[0].permission, "external_directory");
    assert_eq!(seen[0].patterns, [format!("{}/*", f.base.join("outside").display())]);
    assert_eq!(fs::read_to_string(&outside).unwrap(), "public\n");
}

#[tokio::test]
async fn a_denied_outside_file_stops_the_whole_patch() {
    let f = fixture();
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("external_directory", "*", Act::Deny));
    let exec = executor(&f.root, rules, allow_all(), Hooks::default());
    let outside = f.base.join("outside/secret.txt");
    let patch = format!(
        "*** Begin Patch\n*** Delete File: notes.txt\n*** Update File: {}\n@@\n-secret\n+public\n*** End Patch",
        outside.display()
    );
    let result = call_raw(&exec, &patch).await;
    assert!(result.is_error);
    assert!(f.root.join("notes.txt").exists());
    assert_eq!(fs::read_to_string(&outside).unwrap(), "secret\n");
}

#[tokio::test]
async fn a_link_out_of_the_worktree_is_refused() {
    let f = fixture();
    std::os::unix::fs::symlink(f.base.join("outside"), f.root.join("out")).unwrap();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let result = call_raw(&exec, "*** Begin Patch\n*** Add File: out/x.txt\n+x\n*** End Patch").await;
    assert!(result.is_error);
    assert!(result.output.contains("symbolic link"), "{}", result.output);
    assert!(!f.base.join("outside/x.txt").exists());
}

#[tokio::test]
async fn a_chunk_that_does_not_match_writes_nothing_and_shows_the_closest_lines() {
    let f = fixture();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let patch = "*** Begin Patch\n*** Add File: docs/new.md\n+x\n*** Update File: src/lib.rs\n@@\n fn b() {\n-    3\n+    30\n }\n*** End Patch";
    let result = call_raw(&exec, patch).await;
    assert!(result.is_error);
    insta::assert_snapshot!(result.output, @r"
    apply_patch verification failed: Failed to find expected lines in src/lib.rs:
    fn b() {
        3
    }

    These are the context and '-' lines of chunk 1 of 1 for src/lib.rs. The most similar lines of the file are:
         5	fn b() {
         6	    2
         7	}

    Nothing was changed. Read the file again and send the whole patch with context and '-' lines copied exactly from it.
    ");
    assert!(!f.root.join("docs").exists());
}

#[tokio::test]
async fn parse_errors_use_codex_wording_and_say_what_to_send() {
    let f = fixture();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let result = call_raw(&exec, "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch").await;
    assert!(result.is_error);
    insta::assert_snapshot!(result.output, @r"
    apply_patch verification failed: invalid hunk at line 2, '*** Frobnicate File: x' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'

    Nothing was changed. Send the whole patch again: it starts with '*** Begin Patch', ends with '*** End Patch', and every line of an Update chunk starts with ' ', '+' or '-'.
    ");
    let empty = call_raw(&exec, "*** Begin Patch\n*** End Patch").await;
    assert!(empty.is_error);
    assert!(empty.output.starts_with("apply_patch verification failed: No files were modified."), "{}", empty.output);
}

#[tokio::test]
async fn crlf_files_keep_their_line_endings_and_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    let script = f.root.join("run.sh");
    fs::write(&script, "#!/bin/sh\r\necho hi\r\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let result =
        call_raw(&exec, "*** Begin Patch\n*** Update File: run.sh\n@@\n-echo hi\n+echo hello\n*** End Patch").await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(fs::read(&script).unwrap(), b"#!/bin/sh\r\necho hello\r\n");
    assert_eq!(fs::metadata(&script).unwrap().permissions().mode() & 0o777, 0o755);
}

#[tokio::test]
async fn standalone_run_asks_through_the_context() {
    let f = fixture();
    let ctx = ToolContext::standalone(&f.root, f.root.join(".data"));
    let args = ApplyPatchArgs {
        input: "*** Begin Patch\n*** Delete File: notes.txt\n*** End Patch".into(),
        permitted: OnceLock::new(),
    };
    let out = ApplyPatch.run(args, ctx).await.unwrap();
    assert_eq!(out.text, "Success. Updated the following files:\nD notes.txt (-1)");
}

#[test]
fn gpt5_models_see_apply_patch_and_others_see_edit_and_write() {
    let mut registry = Registry::new();
    crate::register_builtins(&mut registry, &toolshed_core::config::Config::default());
    registry.add_hook(Arc::new(ModelFamilyHook::default()));
    let names = |model: &str| -> Vec<String> {
        let view = View { agent: "build", model: Some(model), found: None };
        registry.direct(&view).iter().map(|v| v.entry.spec().name.clone()).collect()
    };
    let gpt = names("openai/gpt-5.1");
    assert!(gpt.contains(&"apply_patch".to_string()) && !gpt.contains(&"edit".to_string()), "{gpt:?}");
    let claude = names("anthropic/claude-sonnet-4");
    assert!(!claude.contains(&"apply_patch".to_string()) && claude.contains(&"edit".to_string()), "{claude:?}");
}

/// Deleting a link would delete the file it points to (paths resolve to where links lead) and
/// leave the link dangling: a link is refused, nothing is asked or changed.
#[cfg(unix)]
#[tokio::test]
async fn a_delete_of_a_symbolic_link_is_refused_and_its_target_kept() {
    let f = fixture();
    std::os::unix::fs::symlink("notes.txt", f.root.join("link.txt")).unwrap();
    let recorder = allow_all();
    let exec = executor(&f.root, Ruleset::defaults(), recorder.clone(), Hooks::default());
    let result = call_raw(&exec, "*** Begin Patch\n*** Delete File: link.txt\n*** End Patch\n").await;
    assert!(result.is_error, "{}", result.output);
    assert!(result.output.contains("is a symbolic link") && result.output.contains("rm link.txt"), "{}", result.output);
    assert_eq!(fs::read_to_string(f.root.join("notes.txt")).unwrap(), "old notes\n");
    assert!(fs::symlink_metadata(f.root.join("link.txt")).is_ok());
    assert!(recorder.seen.lock().unwrap().is_empty(), "nothing is asked about a patch that cannot apply");
}

/// Review H6: moving a link moved the file it points to and left the link dangling.
#[cfg(unix)]
#[tokio::test]
async fn a_move_of_a_symbolic_link_is_refused_and_its_target_kept() {
    let f = fixture();
    fs::write(f.root.join("real.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink("real.txt", f.root.join("link.txt")).unwrap();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let patch = "*** Begin Patch\n*** Update File: link.txt\n*** Move to: new.txt\n@@\n-a\n+A\n*** End Patch";
    let result = call_raw(&exec, patch).await;
    assert!(result.is_error, "{}", result.output);
    insta::assert_snapshot!(result.output, @"`link.txt` is a symbolic link: apply_patch does not move links (it would move the file the link points to and leave the link dangling). Nothing was changed. To change the text, send that section without `*** Move to`; to rename the link itself, use bash (`mv link.txt new.txt`).");
    assert_eq!(fs::read_to_string(f.root.join("real.txt")).unwrap(), "a\n");
    assert_eq!(fs::read_to_string(f.root.join("link.txt")).unwrap(), "a\n");
    assert!(!f.root.join("new.txt").exists());
    // Updated in place, the link leads to the changed file.
    let result = call_raw(&exec, "*** Begin Patch\n*** Update File: link.txt\n@@\n-a\n+A\n*** End Patch").await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(fs::read_to_string(f.root.join("real.txt")).unwrap(), "A\n");
    assert!(fs::symlink_metadata(f.root.join("link.txt")).unwrap().file_type().is_symlink());
}

/// Review M3: a moved file keeps its own mode, on a new path and over an existing file.
#[cfg(unix)]
#[tokio::test]
async fn a_moved_file_keeps_its_own_mode() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    let mode = |p: &str| fs::metadata(f.root.join(p)).unwrap().permissions().mode() & 0o777;
    fs::write(f.root.join("tool.sh"), "echo a\n").unwrap();
    fs::set_permissions(f.root.join("tool.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(f.root.join("key.txt"), "k\n").unwrap();
    fs::set_permissions(f.root.join("key.txt"), fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(f.root.join("open.sh"), "o\n").unwrap();
    fs::set_permissions(f.root.join("open.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let patch = "*** Begin Patch\n*** Update File: tool.sh\n*** Move to: bin/tool.sh\n@@\n-echo a\n+echo b\n\
                 *** Update File: key.txt\n*** Move to: open.sh\n*** End Patch";
    let result = call_raw(&exec, patch).await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(fs::read_to_string(f.root.join("bin/tool.sh")).unwrap(), "echo b\n");
    assert_eq!(mode("bin/tool.sh"), 0o755);
    assert_eq!(fs::read_to_string(f.root.join("open.sh")).unwrap(), "k\n");
    assert_eq!(mode("open.sh"), 0o600);
}

/// Review 2 H4: the link check read the path unlike the write did: `sub\l` and
/// `file://<root>/sub/l` deleted or moved the link's target and left the link dangling.
#[cfg(unix)]
#[tokio::test]
async fn a_link_is_refused_however_its_path_is_spelled() {
    let f = fixture();
    fs::create_dir(f.root.join("sub")).unwrap();
    fs::write(f.root.join("sub/target.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink("target.txt", f.root.join("sub/l")).unwrap();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let url = format!("file://{}/sub/l", f.root.display());
    for spelled in ["sub\\l", url.as_str(), "./sub/../sub/l"] {
        for patch in [
            format!("*** Begin Patch\n*** Delete File: {spelled}\n*** End Patch"),
            format!("*** Begin Patch\n*** Update File: {spelled}\n*** Move to: moved.txt\n@@\n-a\n+A\n*** End Patch"),
        ] {
            let result = call_raw(&exec, &patch).await;
            assert!(result.is_error && result.output.contains("is a symbolic link"), "{patch}: {}", result.output);
            assert_eq!(fs::read_to_string(f.root.join("sub/target.txt")).unwrap(), "a\n");
            assert!(fs::symlink_metadata(f.root.join("sub/l")).unwrap().file_type().is_symlink());
            assert!(!f.root.join("moved.txt").exists());
        }
    }
}

/// Review 2 L: a move onto a link wrote through it, to the link's target, with the source's mode.
#[cfg(unix)]
#[tokio::test]
async fn a_move_onto_a_symbolic_link_is_refused() {
    let f = fixture();
    fs::write(f.root.join("real.txt"), "r\n").unwrap();
    fs::write(f.root.join("a.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink("real.txt", f.root.join("link.txt")).unwrap();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    let patch = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: link.txt\n*** End Patch";
    let result = call_raw(&exec, patch).await;
    assert!(result.is_error, "{}", result.output);
    insta::assert_snapshot!(result.output, @r#"`link.txt` is a symbolic link: apply_patch does not move a file onto a link (it would write the file the link points to, and give it `a.txt`'s mode). Nothing was changed. Remove the link with bash (`rm link.txt`) first, or move to another path."#);
    assert_eq!(fs::read_to_string(f.root.join("real.txt")).unwrap(), "r\n");
    assert_eq!(fs::read_to_string(f.root.join("a.txt")).unwrap(), "a\n");
}

/// Review 28: an Add File over a link wrote the file it points to (or made one where it
/// dangled) and the summary said "A link".
#[tokio::test]
async fn an_add_over_a_symbolic_link_is_refused() {
    let f = fixture();
    fs::write(f.root.join("real.txt"), "r\n").unwrap();
    std::os::unix::fs::symlink("real.txt", f.root.join("link.txt")).unwrap();
    std::os::unix::fs::symlink("nowhere.txt", f.root.join("dangling.txt")).unwrap();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    for path in ["link.txt", "./link.txt", "dangling.txt"] {
        let result = call_raw(&exec, &format!("*** Begin Patch\n*** Add File: {path}\n+NEW\n*** End Patch")).await;
        assert!(result.is_error && result.output.contains("does not add a file over a link"), "{}", result.output);
    }
    assert_eq!(fs::read_to_string(f.root.join("real.txt")).unwrap(), "r\n");
    assert!(!f.root.join("nowhere.txt").exists());
}

/// Review 2 M4 and L2: sections naming one path twice lost files while the summary hid it
/// (a move then a delete of the destination reported nothing; a swap or a chain of moves lost
/// a file; an Add File then a Delete File said "replaced the existing file").
#[tokio::test]
async fn sections_that_would_hide_what_happens_to_a_file_are_refused() {
    let f = fixture();
    let exec = executor(&f.root, Ruleset::defaults(), allow_all(), Hooks::default());
    for (body, said) in [
        ("*** Update File: a\n*** Move to: b\n*** Delete File: b", "Failed to delete file b: an earlier section"),
        (
            "*** Update File: a\n*** Move to: b\n*** Update File: b\n*** Move to: a",
            "Failed to write file a: `b`, moved here",
        ),
        (
            "*** Update File: a\n*** Move to: b\n*** Update File: b\n*** Move to: c",
            "Failed to write file c: `b`, moved here",
        ),
        (
            "*** Update File: b\n@@\n-b\n+B\n*** Update File: a\n*** Move to: b",
            "Failed to write file b: an earlier section",
        ),
        ("*** Add File: a\n+x\n*** Delete File: a", "Failed to delete file a: an earlier section"),
        ("*** Update File: a\n@@\n-a\n+A\n*** Add File: a\n+x", "Failed to write file a: an earlier section"),
    ] {
        fs::write(f.root.join("a"), "a\n").unwrap();
        fs::write(f.root.join("b"), "b\n").unwrap();
        let result = call_raw(&exec, &format!("*** Begin Patch\n{body}\n*** End Patch")).await;
        assert!(result.is_error && result.output.contains(said), "{body}: {}", result.output);
        assert_eq!(fs::read_to_string(f.root.join("a")).unwrap(), "a\n", "{body}");
        assert_eq!(fs::read_to_string(f.root.join("b")).unwrap(), "b\n", "{body}");
        assert!(!f.root.join("c").exists());
    }
    let result =
        call_raw(&exec, "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Delete File: b\n*** End Patch").await;
    insta::assert_snapshot!(result.output, @r"
    apply_patch verification failed: Failed to delete file b: an earlier section of this patch adds it or moves a file onto it, and deleting it here would lose that content. Send one section per file: move each file straight to its final path, and to swap files or rename in a chain use bash.

    Nothing was changed.
    ");
    // A move then an update of its destination, an update then a delete: each file's fate shows.
    let result = call_raw(
        &exec,
        "*** Begin Patch\n*** Update File: a\n*** Move to: c\n*** Update File: c\n@@\n-a\n+A\n*** Update File: b\n@@\n-b\n+B\n*** Delete File: b\n*** End Patch",
    )
    .await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(fs::read_to_string(f.root.join("c")).unwrap(), "A\n");
    assert!(!f.root.join("a").exists() && !f.root.join("b").exists());
}
