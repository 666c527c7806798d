//! Conformance rows for the sandbox ("Trust I"): every spelling of an attack on the writable set
//! (a rewritten `.git`), on protected paths, on file metadata in `read-only`, and on secrets in
//! the environment, run through the real bash tool and the real chain. Each row checks that the
//! canary survived and nothing outside the worktree changed.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scratch;

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolshed_core::agents::Agents;
use toolshed_core::config::Config;
use toolshed_core::exec::{Executor, Session, ToolCall, ToolResult};
use toolshed_core::permission::{Action, ApprovalRequest, Approver, Reply, Rule, Ruleset};
use toolshed_core::registry::Registry;
use toolshed_core::tool::BoxFuture;
use toolshed_tools::shell::sandbox::{self, NamespaceSupport, SandboxMode, SandboxSupport};
use toolshed_tools::shell::{SandboxPolicy, Shell};

const WORKSPACE_WRITE: SandboxPolicy = SandboxPolicy {
    mode: SandboxMode::WorkspaceWrite,
    allow_unsandboxed: false,
    block_network: false,
    allow_sockets: &[],
};
const READ_ONLY: SandboxPolicy = SandboxPolicy { mode: SandboxMode::ReadOnly, ..WORKSPACE_WRITE };

/// An approver answering per permission key (default: once), remembering what it was asked.
#[derive(Default)]
struct Answers {
    replies: BTreeMap<&'static str, Reply>,
    asked: Mutex<Vec<String>>,
}

impl Answers {
    fn with(replies: &[(&'static str, Reply)]) -> Arc<Self> {
        Arc::new(Answers { replies: replies.iter().cloned().collect(), asked: Mutex::default() })
    }

    fn asked(&self) -> Vec<String> {
        std::mem::take(&mut *self.asked.lock().unwrap())
    }
}

impl Approver for Answers {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        let key = request.request.permission.clone();
        let reply = self.replies.get(key.as_str()).cloned().unwrap_or(Reply::Once);
        self.asked.lock().unwrap().push(key);
        Box::pin(async move { reply })
    }
}

fn reject() -> Reply {
    Reply::Reject(Some("conformance test".into()))
}

struct Harness {
    executor: Executor,
    root: PathBuf,
    _dirs: Vec<tempfile::TempDir>,
}

impl Harness {
    fn new(policy: SandboxPolicy, rules: Ruleset, approver: Arc<dyn Approver>) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        Harness::at(root, vec![tmp], policy, rules, approver)
    }

    fn at(
        root: PathBuf,
        mut dirs: Vec<tempfile::TempDir>,
        policy: SandboxPolicy,
        rules: Ruleset,
        approver: Arc<dyn Approver>,
    ) -> Self {
        let data = tempfile::tempdir().unwrap();
        let mut registry = Registry::new();
        Shell::new(policy).register(&mut registry);
        let executor = Executor::builder(registry, &root)
            .data_dir(data.path())
            .permission(Arc::new(rules))
            .approver(approver)
            .build();
        dirs.push(data);
        Harness { executor, root, _dirs: dirs }
    }

    async fn bash(&self, command: &str) -> ToolResult {
        self.call("bash", json!({ "command": command })).await
    }

    async fn call(&self, tool: &str, args: serde_json::Value) -> ToolResult {
        self.executor.call(&Session::new("s", "build"), ToolCall::json("c", tool, args)).await
    }
}

fn skip(test: &str, why: impl std::fmt::Display) {
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {why}");
}

/// Whether the sandbox and its read-only binds work here; prints a SKIP line otherwise.
fn binds_or_skip(test: &str) -> bool {
    if !sandbox::support().available() {
        skip(test, sandbox::support());
        return false;
    }
    if let NamespaceSupport::Missing { reason } = sandbox::namespaces() {
        skip(test, format!("no mount namespace for read-only binds: {reason}"));
        return false;
    }
    true
}

fn landlock_or_skip(test: &str) -> bool {
    if sandbox::support().available() {
        return true;
    }
    skip(test, sandbox::support());
    false
}

fn have(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
}

/// A directory outside every writable root of a worktree at `root`, holding a file `canary`
/// that says `original`.
fn outside(test: &str, root: &Path) -> Option<(tempfile::TempDir, PathBuf)> {
    let dir = scratch::outside_sandbox(test, Some(root))?;
    let canary = dir.path().canonicalize().unwrap().join("canary");
    std::fs::write(&canary, "original\n").unwrap();
    Some((dir, canary))
}

/// The protected files of a project, with the text each holds.
fn protected_project(root: &Path) -> Vec<(PathBuf, String)> {
    let files = [
        ".git/config",
        ".git/HEAD",
        "toolshed.toml",
        ".toolshed/tools/x.toml",
        ".opencode/tools/t.ts",
        ".opencode/skills/s/SKILL.md",
        ".claude/skills/s/SKILL.md",
    ];
    files
        .iter()
        .map(|rel| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let text = format!("canary of {rel}\n");
            std::fs::write(&path, &text).unwrap();
            (path, text)
        })
        .collect()
}

fn assert_unchanged(files: &[(PathBuf, String)], row: &str, r: &ToolResult) {
    for (path, text) in files {
        let now = std::fs::read_to_string(path).unwrap_or_else(|e| format!("<{e}>"));
        assert_eq!(&now, text, "row `{row}` changed {}: {}", path.display(), r.output);
    }
}

// ---------------------------------------------------------------------------------------------
// Item 9: protected paths are read-only for workspace-write commands.

/// Every spelling of a write to a protected path, refused by the read-only binds.
const PROTECTED_ROWS: &[&str] = &[
    "echo pwned > .git/config",
    "echo pwned >> .git/HEAD",
    "echo pwned > .git/hooks-pre-commit-new",
    "echo pwned > toolshed.toml",
    "echo pwned > .toolshed/tools/x.toml",
    "echo pwned > .toolshed/tools/new.toml",
    "echo pwned > .opencode/tools/t.ts",
    "echo pwned > .opencode/skills/s/SKILL.md",
    "echo pwned > .claude/skills/s/SKILL.md",
    "cd .git && echo pwned > config",
    "sed -i s/canary/pwned/ toolshed.toml",
    "cp /dev/null .git/config",
    "truncate -s 0 toolshed.toml",
    "mv .git moved-git",
    "mv toolshed.toml moved.toml",
    "mv .toolshed moved-toolshed",
    "rm -rf .git",
    "rm -f toolshed.toml",
    "rm -rf .opencode",
    "ln -s .git/config link && echo pwned > link",
    "ln .git/config hardlink; echo pwned > hardlink; cat hardlink; false",
    "p=.git; echo pwned > $p/config",
    "echo pwned > \"$PWD/.git/config\"",
    "echo pwned > /proc/self/cwd/.git/config",
    "echo pwned > /proc/$PPID/root$PWD/.git/config",
    "umount .git; echo pwned > .git/config",
    "umount -l toolshed.toml; echo pwned > toolshed.toml",
    "unshare -m sh -c 'umount .git; echo pwned > .git/config'",
    "unshare -Urm sh -c 'umount .git; echo pwned > .git/config'",
    "mount -o remount,rw,bind .git; echo pwned > .git/config",
];

#[tokio::test]
async fn protected_paths_are_read_only_and_ordinary_files_stay_writable() {
    let test = "protected_paths_are_read_only_and_ordinary_files_stay_writable";
    if !binds_or_skip(test) {
        return;
    }
    if std::env::var_os("TOOLSHED_CONFORMANCE_REQUIRE_USERNS").is_some() {
        assert_eq!(*sandbox::namespaces(), NamespaceSupport::UserAndMount, "run unprivileged");
    }
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers.clone());
    let files = protected_project(&h.root);
    for row in PROTECTED_ROWS {
        let r = h.bash(row).await;
        assert_unchanged(&files, row, &r);
        assert!(h.root.join(".git").is_dir() && h.root.join(".opencode/tools").is_dir(), "row `{row}`: {}", r.output);
        // A write the analysis sees is asked about before the command runs (and refused here);
        // the binds stop the rest.
        if r.metadata.get("read_only_paths").is_none() {
            assert!(r.output.contains("Permission for `protected`"), "row `{row}`: {}", r.output);
            assert_eq!(answers.asked(), ["protected"], "row `{row}`: {}", r.output);
            continue;
        }
        // (Tool directories in the home directory, such as `~/.cargo/bin`, are bound too.)
        let root = h.root.to_str().unwrap();
        let bound = r.metadata["read_only_paths"]
            .as_array()
            .map_or(0, |a| a.iter().filter(|p| p.as_str().is_some_and(|p| p.starts_with(root))).count());
        assert_eq!(bound, 6, "row `{row}`: every existing protected path is bound: {}", r.metadata["read_only_paths"]);
        // A refused `protected` is final; a row Landlock refused (`/proc/$PPID/root`) may ask
        // to escalate, which is refused here.
        let asked = answers.asked();
        let both = asked.iter().any(|a| a == "protected") && asked.iter().any(|a| a == "sandbox_escalation");
        assert!(!both, "row `{row}` asked {asked:?}: {}", r.output);
    }
    let r = h.bash("echo fine > ordinary.txt && mkdir -p src && echo ok > src/lib.rs && cat ordinary.txt").await;
    assert!(r.output.starts_with("fine\n"), "{}", r.output);
    assert!(answers.asked().is_empty());
}

/// The same rows as an unprivileged user (a user namespace instead of a plain mount namespace):
/// the test binary runs itself as `nobody` when this process is root and `setpriv` exists.
#[test]
fn protected_paths_are_read_only_for_an_unprivileged_user_too() {
    let test = "protected_paths_are_read_only_for_an_unprivileged_user_too";
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        return skip(test, "not root: the other test already ran unprivileged");
    }
    if !Path::new("/usr/bin/setpriv").exists() {
        return skip(test, "no setpriv");
    }
    let out = std::process::Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "protected_paths_are_read_only_and_ordinary_files_stay_writable", "--nocapture"])
        .env("TOOLSHED_CONFORMANCE_REQUIRE_USERNS", "1")
        .env("TMPDIR", "/tmp")
        .env("HOME", "/nonexistent")
        .current_dir("/")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if text.contains("SKIP") {
        return skip(test, text.trim());
    }
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

#[tokio::test]
async fn approved_protected_reruns_sandboxed_without_the_binds() {
    let test = "approved_protected_reruns_sandboxed_without_the_binds";
    if !binds_or_skip(test) {
        return;
    }
    let answers = Answers::with(&[("protected", Reply::Once), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers.clone());
    protected_project(&h.root);
    let Some((_outside, canary)) = outside(test, &h.root) else { return };
    let d = canary.parent().unwrap().display();
    // `$f`: a path the analysis cannot see, so only the sandbox's binds stop the write.
    let r = h.bash(&format!("f=toolshed.toml; echo changed > $f; d={d}; echo pwned > $d/canary")).await;
    assert_eq!(std::fs::read_to_string(h.root.join("toolshed.toml")).unwrap(), "changed\n", "{}", r.output);
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "original\n", "the rerun is still sandboxed: {}", r.output);
    assert!(r.output.contains("still sandboxed, with them writable"), "{}", r.output);
    assert_eq!(r.metadata["sandbox"], "workspace-write");
    assert_eq!(r.metadata["escalated"], false);
    // Only toolshed's data directory (the records of what a person accepted) stays read-only.
    assert_eq!(r.metadata["read_only_paths"], data_dir_only());
    assert_eq!(answers.asked(), ["protected", "sandbox_escalation"]);
}

#[tokio::test]
async fn one_answer_covers_a_protected_write_the_analysis_sees_and_its_binds() {
    let test = "one_answer_covers_a_protected_write_the_analysis_sees_and_its_binds";
    if !binds_or_skip(test) {
        return;
    }
    let answers = Answers::with(&[("protected", Reply::Once), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers.clone());
    protected_project(&h.root);
    for (command, file) in [
        ("echo changed > toolshed.toml", "toolshed.toml"),
        (
            "printf 'description = \"y\"\\n' > .toolshed/tools/y.toml && echo changed > .toolshed/tools/y.toml",
            ".toolshed/tools/y.toml",
        ),
    ] {
        let r = h.bash(command).await;
        assert_eq!(std::fs::read_to_string(h.root.join(file)).unwrap(), "changed\n", "{command}: {}", r.output);
        assert_eq!(answers.asked(), ["protected"], "{command}: asked once, before it ran: {}", r.output);
        assert_eq!(r.metadata["escalated"], false, "{command}");
        let bound = r.metadata["read_only_paths"].to_string();
        assert!(bound.contains(".git") && !bound.contains(file.split('/').next().unwrap()), "{command}: {bound}");
    }
}

#[tokio::test]
async fn refusing_protected_is_not_undone_by_an_escalation() {
    let test = "refusing_protected_is_not_undone_by_an_escalation";
    if !binds_or_skip(test) {
        return;
    }
    // Escalation would be approved: it must not even be asked once `protected` was refused.
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", Reply::Once)]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers.clone());
    let files = protected_project(&h.root);
    let Some((_outside, canary)) = outside(test, &h.root) else { return };
    let d = canary.parent().unwrap().display();
    let r = h.bash(&format!("d={d}; echo pwned > $d/canary; f=toolshed.toml; echo pwned > $f")).await;
    assert_unchanged(&files, "escalation after refusal", &r);
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "original\n", "{}", r.output);
    assert_eq!(answers.asked(), ["protected"], "{}", r.output);
    assert!(r.output.contains("writing them was not allowed"), "{}", r.output);
}

#[tokio::test]
async fn rules_that_allow_protected_paths_bind_nothing_of_them() {
    let test = "rules_that_allow_protected_paths_bind_nothing_of_them";
    if !binds_or_skip(test) {
        return;
    }
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("protected", ".git/*", Action::Allow));
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, rules, answers.clone());
    protected_project(&h.root);
    let r = h.bash("echo allowed > .git/description && f=toolshed.toml && echo denied > $f").await;
    assert_eq!(std::fs::read_to_string(h.root.join(".git/description")).unwrap(), "allowed\n", "{}", r.output);
    assert!(std::fs::read_to_string(h.root.join("toolshed.toml")).unwrap().starts_with("canary"), "{}", r.output);
    assert!(!r.metadata["read_only_paths"].to_string().contains(".git"), "{}", r.metadata["read_only_paths"]);
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("protected", "*", Action::Allow));
    let h = Harness::new(WORKSPACE_WRITE, rules, answers.clone());
    protected_project(&h.root);
    answers.asked();
    let r = h.bash("echo allowed > toolshed.toml").await;
    assert_eq!(std::fs::read_to_string(h.root.join("toolshed.toml")).unwrap(), "allowed\n", "{}", r.output);
    assert_eq!(r.metadata["read_only_paths"], data_dir_only(), "no rule lifts the data directory's bind");
    assert!(answers.asked().is_empty(), "allowed by the rules: nobody is asked");
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap()
}

#[tokio::test]
async fn git_commit_works_for_a_user_who_allows_protected() {
    let test = "git_commit_works_for_a_user_who_allows_protected";
    if !binds_or_skip(test) {
        return;
    }
    if !have("git") {
        return skip(test, "no git");
    }
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers.clone());
    assert!(git(&h.root, &["init", "-q"]).status.success());
    let commit = "echo a > a.txt && git add a.txt && git -c user.name=t -c user.email=t@example.com commit -qm one && echo committed";
    let r = h.bash(commit).await;
    assert!(r.output.contains("Read-only file system"), "{}", r.output);
    assert!(!git(&h.root, &["log", "--oneline"]).status.success(), "no commit without `protected`");
    assert_eq!(answers.asked(), ["protected"]);
    let answers = Answers::with(&[("sandbox_escalation", reject())]);
    let h2 = Harness::at(h.root.clone(), Vec::new(), WORKSPACE_WRITE, Ruleset::defaults(), answers.clone());
    let r = h2.bash(commit).await;
    assert!(r.output.starts_with("committed\n"), "{}", r.output);
    assert_eq!(answers.asked(), ["protected"]);
    assert!(String::from_utf8_lossy(&git(&h.root, &["log", "--oneline"]).stdout).contains("one"));
}

// ---------------------------------------------------------------------------------------------
// Item 1: the writable git dirs of a linked worktree come from validated files, not `.git`.

/// A repository whose main checkout lies outside the sandbox's writable roots, and a linked
/// worktree of it (by `git worktree add`) as the root.
fn linked_worktree(test: &str) -> Option<(tempfile::TempDir, PathBuf, PathBuf, tempfile::TempDir, PathBuf)> {
    if !have("git") {
        skip(test, "no git");
        return None;
    }
    let wt_tmp = tempfile::tempdir().unwrap();
    let wt = wt_tmp.path().canonicalize().unwrap().join("wt");
    let (main_tmp, canary) = outside(test, &wt_tmp.path().canonicalize().unwrap())?;
    let main = main_tmp.path().canonicalize().unwrap();
    assert!(git(&main, &["init", "-q"]).status.success());
    assert!(git(&main, &["commit", "-q", "--allow-empty", "-m", "init"]).status.success());
    let out = git(&main, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some((main_tmp, main, canary, wt_tmp, wt))
}

#[tokio::test]
async fn a_validated_linked_worktree_commits_and_its_git_dirs_are_protected() {
    let test = "a_validated_linked_worktree_commits_and_its_git_dirs_are_protected";
    if !binds_or_skip(test) {
        return;
    }
    let Some((_main_tmp, main, canary, wt_tmp, wt)) = linked_worktree(test) else { return };
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::at(wt.clone(), vec![wt_tmp], WORKSPACE_WRITE, Ruleset::defaults(), answers.clone());
    let hooks = main.join(".git/hooks");
    let d = hooks.display();
    // The hooks of a linked worktree live in the common dir: bound read-only like `.git`.
    let r = h.bash(&format!("d={d}; echo pwned > $d/pre-commit")).await;
    assert!(!hooks.join("pre-commit").exists(), "{}", r.output);
    assert!(r.output.contains("Read-only file system"), "{}", r.output);
    let commit = "echo b > b.txt && git add b.txt && git -c user.name=t -c user.email=t@example.com commit -qm two && echo committed";
    let r = h.bash(commit).await;
    assert!(!r.output.starts_with("committed"), "{}", r.output);
    // Allowed: the validated git dirs are writable (they lie outside every other writable root).
    let answers = Answers::with(&[("sandbox_escalation", reject())]);
    let h = Harness::at(wt.clone(), Vec::new(), WORKSPACE_WRITE, Ruleset::defaults(), answers);
    let r = h.bash(commit).await;
    assert!(r.output.starts_with("committed\n"), "{}", r.output);
    // ...but nothing else outside.
    let c = canary.display();
    let r = h.bash(&format!("c={c}; echo pwned > $c")).await;
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "original\n", "{}", r.output);
}

#[tokio::test]
async fn a_bare_repository_holding_its_worktree_keeps_the_worktree_writable() {
    let test = "a_bare_repository_holding_its_worktree_keeps_the_worktree_writable";
    if !binds_or_skip(test) {
        return;
    }
    if !have("git") {
        return skip(test, "no git");
    }
    let Some((bare_tmp, canary)) = outside(test, Path::new("/nonexistent")) else { return };
    std::fs::remove_file(&canary).unwrap();
    let bare = bare_tmp.path().canonicalize().unwrap();
    assert!(git(&bare, &["init", "-q", "--bare", "."]).status.success());
    let out = git(&bare, &["worktree", "add", "-q", "--orphan", "main"]);
    if !out.status.success() {
        return skip(test, format!("git worktree add --orphan: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let root = bare.join("main");
    assert_eq!(sandbox::pin_git_dirs(&root), vec![bare.join("worktrees/main"), bare.clone()]);
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::at(root.clone(), Vec::new(), WORKSPACE_WRITE, Ruleset::defaults(), answers);
    let r = h
        .bash("echo hi > f.txt && cat f.txt; p=../hooks; echo pwned > $p/pre-commit; q=..; echo pwned > $q/config")
        .await;
    assert!(r.output.starts_with("hi\n"), "the worktree inside the common dir stays writable: {}", r.output);
    assert!(!bare.join("hooks/pre-commit").exists(), "{}", r.output);
    assert!(!std::fs::read_to_string(bare.join("config")).unwrap().contains("pwned"), "{}", r.output);
    let answers = Answers::with(&[("sandbox_escalation", reject())]);
    let h = Harness::at(root, Vec::new(), WORKSPACE_WRITE, Ruleset::defaults(), answers);
    let r = h
        .bash("git add f.txt && git -c user.name=t -c user.email=t@example.com commit -qm one && echo committed")
        .await;
    assert!(r.output.starts_with("committed\n"), "{}", r.output);
}

#[tokio::test]
async fn a_rewritten_git_file_widens_nothing() {
    let test = "a_rewritten_git_file_widens_nothing";
    if !landlock_or_skip(test) {
        return;
    }
    let Some((_main_tmp, main, canary, _wt_tmp, wt)) = linked_worktree(test) else { return };
    let common = main.join(".git");
    let g = common.join("worktrees/wt");
    let real = std::fs::read_to_string(wt.join(".git")).unwrap();
    let d = canary.parent().unwrap().display().to_string();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    // (what `.git` says, what else the setup writes, relative to the worktree)
    let rows: Vec<(String, Vec<(String, String)>)> = vec![
        ("gitdir: /\n".into(), vec![]),
        (format!("gitdir: {d}\n"), vec![]),
        ("gitdir: ..\n".into(), vec![]),
        (format!("gitdir: {home}\n"), vec![]),
        (format!("gitdir: {}\n", common.display()), vec![]),
        (format!("{real}gitdir: /\n"), vec![]),
        (format!("{}junk\n", real.trim_end()), vec![]),
        (format!("gitdir:{}", real.trim_start_matches("gitdir:").trim_start()), vec![]),
        (
            "gitdir: fake/worktrees/x\n".into(),
            vec![
                ("fake/worktrees/x/HEAD".into(), "ref: refs/heads/x\n".into()),
                ("fake/worktrees/x/commondir".into(), format!("{d}\n")),
                ("fake/worktrees/x/gitdir".into(), format!("{}\n", wt.join(".git").display())),
                ("fake/HEAD".into(), "ref: refs/heads/x\n".into()),
                ("fake/objects/.keep".into(), String::new()),
                ("fake/refs/.keep".into(), String::new()),
            ],
        ),
    ];
    let mut rules = Ruleset::defaults();
    // No binds to hide behind, never unsandboxed: only the writable set decides.
    rules.push(Rule::new("protected", "*", Action::Allow));
    rules.push(Rule::new("sandbox_escalation", "*", Action::Deny));
    for (text, extra) in rows {
        // A fresh root path per row: the writable set is pinned per process and worktree.
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::write(root.join(".git"), &text).unwrap();
        for (rel, content) in &extra {
            std::fs::create_dir_all(root.join(rel).parent().unwrap()).unwrap();
            std::fs::write(root.join(rel), content).unwrap();
        }
        assert_eq!(sandbox::pin_git_dirs(&root), Vec::<PathBuf>::new(), "{text:?}");
        let h = Harness::at(root, vec![tmp], WORKSPACE_WRITE, rules.clone(), Answers::with(&[]));
        let r = h.bash(&format!("d={d}; echo pwned > $d/canary; g={}; echo pwned > $g/HEAD", g.display())).await;
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "original\n", "{text:?}: {}", r.output);
        assert!(std::fs::read_to_string(g.join("HEAD")).unwrap().starts_with("ref:"), "{text:?}: {}", r.output);
    }
    // A symbolic link `.git` pointing at the real git dir is not trusted either.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::os::unix::fs::symlink(wt.join(".git"), root.join(".git")).unwrap();
    assert_eq!(sandbox::pin_git_dirs(&root), Vec::<PathBuf>::new());
    // The real worktree is validated (both dirs), and pinned: rewriting `.git` later changes nothing.
    assert_eq!(sandbox::pin_git_dirs(&wt), vec![g.clone(), common.clone()]);
    std::fs::write(wt.join(".git"), "gitdir: /\n").unwrap();
    assert_eq!(sandbox::pin_git_dirs(&wt), vec![g, common]);
}

// ---------------------------------------------------------------------------------------------
// Item 13: read-only changes no metadata, inside the worktree or outside.

#[derive(Debug, PartialEq)]
struct Meta {
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
    atime_set: bool,
    xattr: bool,
}

fn meta(path: &Path) -> Meta {
    let m = std::fs::metadata(path).unwrap();
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let name = c"user.toolshed_conformance";
    // SAFETY: a size query on valid NUL-terminated strings.
    let xattr = unsafe { libc::getxattr(c.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0) } >= 0;
    Meta {
        mode: m.mode(),
        uid: m.uid(),
        gid: m.gid(),
        mtime: (m.mtime(), m.mtime_nsec()),
        atime_set: m.atime() == 946_684_800,
        xattr,
    }
}

fn python() -> Option<&'static str> {
    ["/usr/bin/python3", "/usr/local/bin/python3"].into_iter().find(|p| Path::new(p).exists())
}

#[tokio::test]
async fn read_only_changes_no_metadata_inside_or_outside_the_worktree() {
    let test = "read_only_changes_no_metadata_inside_or_outside_the_worktree";
    if !landlock_or_skip(test) {
        return;
    }
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("sandbox_escalation", "*", Action::Deny));
    let h = Harness::new(READ_ONLY, rules, Answers::with(&[]));
    let inside = h.root.join("a.txt");
    std::fs::write(&inside, "inside\n").unwrap();
    let Some((_outside, canary)) = outside(test, &h.root) else { return };
    let mut rows = vec![
        "chmod 600 $F",
        "chmod +x $F",
        "chmod u+s $F",
        "chown $(id -u):$(id -g) $F",
        "chown 65534 $F",
        "chgrp 65534 $F",
        "touch -d 2000-01-01 $F",
        "touch -c $F",
        "touch -c -m -d @0 $F",
        "touch -a -d 2000-01-01 $F",
    ];
    if have("setfattr") {
        rows.push("setfattr -n user.toolshed_conformance -v 1 $F");
    }
    if have("chattr") {
        rows.push("chattr +A $F");
    }
    let py = python();
    let py_rows = [
        "import os,sys; os.chmod(sys.argv[1], 0o600)",
        "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fchmod(fd, 0o600)",
        "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fchown(fd, os.getuid(), os.getgid())",
        "import os,sys; os.utime(sys.argv[1], (0, 0))",
        "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.utime(fd, (0, 0))",
        "import os,sys; os.setxattr(sys.argv[1], 'user.toolshed_conformance', b'1')",
        "import os,sys; os.removexattr(sys.argv[1], 'user.selinux')",
        "import os,sys,fcntl,array; fd=os.open(sys.argv[1], os.O_RDONLY); fcntl.ioctl(fd, 0x40086602, array.array('l',[0x80]))",
        "import ctypes,sys; l=ctypes.CDLL(None, use_errno=True); r=l.syscall(452, -100, sys.argv[1].encode(), 0o600, 0); sys.exit(1 if r else 0)",
        "import ctypes,sys; l=ctypes.CDLL(None, use_errno=True); r=l.syscall(0x40000000|90, sys.argv[1].encode(), 0o600); sys.exit(1 if r else 0)",
    ];
    let py_commands: Vec<String> =
        py.map(|py| py_rows.iter().map(|code| format!("{py} -c \"{code}\" $F")).collect()).unwrap_or_default();
    if py.is_none() {
        skip(test, "no /usr/bin/python3: the system-call rows did not run");
    }
    for file in [&inside, &canary] {
        let before = meta(file);
        for row in rows.iter().map(std::string::ToString::to_string).chain(py_commands.iter().cloned()) {
            // A variable hides the path from the permission analysis: only the sandbox decides.
            let r = h.bash(&format!("F={}; {row}", file.display())).await;
            assert_eq!(meta(file), before, "row `{row}` on {}: {}", file.display(), r.output);
            assert_ne!(r.metadata["exit_code"], 0, "row `{row}` claims success: {}", r.output);
        }
    }
    // Ordinary reading still works.
    let mut reads = vec![
        "ls -la >/dev/null",
        "cat a.txt",
        "stat a.txt >/dev/null",
        "find . -name a.txt",
        "head -c 8 /dev/urandom | wc -c",
        "echo x > /dev/null",
    ];
    if have("git") {
        assert!(git(&h.root, &["init", "-q"]).status.success());
        reads.push("git status --short");
    }
    for row in reads {
        let r = h.bash(row).await;
        assert_eq!(r.metadata["exit_code"], 0, "row `{row}`: {}", r.output);
    }
}

#[tokio::test]
async fn the_plan_agent_cannot_chmod_either() {
    let test = "the_plan_agent_cannot_chmod_either";
    if !landlock_or_skip(test) {
        return;
    }
    let root_tmp = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let root = root_tmp.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    let config = Config::default();
    let agents = Arc::new(Agents::from_config(&config, &root, None));
    let mut registry = Registry::new();
    Shell::from_config(&config).register(&mut registry);
    let executor = Executor::builder(registry, &root)
        .data_dir(data.path())
        .permission(agents)
        .approver(Answers::with(&[]))
        .build();
    let before = meta(&root.join("a.txt"));
    let r = executor
        .call(
            &Session::new("s", "plan"),
            ToolCall::json("c", "bash", json!({ "command": "chmod 777 a.txt; touch -c a.txt" })),
        )
        .await;
    // The analysis sees the writers: plan denies them before they run.
    assert!(r.is_error && r.output.contains("Permission denied"), "{}", r.output);
    assert_eq!(meta(&root.join("a.txt")), before, "{}", r.output);
    // Ones it cannot see run in plan's read-only sandbox, which refuses the metadata change.
    let r = executor
        .call(
            &Session::new("s", "plan"),
            ToolCall::json(
                "c2",
                "bash",
                json!({ "command": "python3 -c \"import os; os.chmod('a.txt', 0o777); os.utime('a.txt', (0, 0))\"" }),
            ),
        )
        .await;
    assert_eq!(r.metadata["sandbox"], "read-only", "{}", r.output);
    assert_eq!(meta(&root.join("a.txt")), before, "{}", r.output);
}

// ---------------------------------------------------------------------------------------------
// Item 14: commands do not inherit toolshed's secrets.

const CHILD_FLAG: &str = "TOOLSHED_CONFORMANCE_ENV_CHILD";

/// Runs in a child of this test binary (see `bash_env_lacks_the_secrets_of_toolsheds_environment`),
/// whose environment holds the secret; does nothing when run directly.
#[tokio::test]
async fn env_child_bash_sees_no_secret() {
    if std::env::var_os(CHILD_FLAG).is_none() {
        return;
    }
    let mut config = Config::default();
    config.merge_str(Path::new("toolshed.toml"), "[env]\npass = [\"CONFORMANCE_DEPLOY_TOKEN\"]\n").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let mut registry = Registry::new();
    Shell::from_config(&config).register(&mut registry);
    let executor = Executor::builder(registry, &root).data_dir(root.join(".data")).build();
    let session = Session::new("s", "build");
    for args in [json!({ "command": "env" }), json!({ "command": "env; sleep 0.2", "yield_ms": 50 })] {
        let r = executor.call(&session, ToolCall::json("c", "bash", args.clone())).await;
        let r = match r.metadata.get("session_id").and_then(Value::as_u64) {
            Some(id) => {
                let more = json!({ "session_id": id, "wait_ms": 3000 });
                let rest = executor.call(&session, ToolCall::json("c", "bash_output", more)).await;
                format!("{}{}", r.output, rest.output)
            }
            None => r.output,
        };
        assert!(!r.contains("sk-conformance") && !r.contains("CONFORMANCE_API_KEY"), "{args}: {r}");
        assert!(!r.contains("CONFORMANCE_DB_PASSWORD"), "{args}: {r}");
        assert!(r.contains("CONFORMANCE_DEPLOY_TOKEN=passed-on-purpose"), "{args}: {r}");
        assert!(r.contains("CONFORMANCE_PLAIN=plain"), "{args}: {r}");
    }
}

#[test]
fn bash_env_lacks_the_secrets_of_toolsheds_environment() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "env_child_bash_sees_no_secret", "--nocapture"])
        .env(CHILD_FLAG, "1")
        .env("CONFORMANCE_API_KEY", "sk-conformance")
        .env("CONFORMANCE_DB_PASSWORD", "hunter2")
        .env("CONFORMANCE_DEPLOY_TOKEN", "passed-on-purpose")
        .env("CONFORMANCE_PLAIN", "plain")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

const HOME_CHILD_FLAG: &str = "TOOLSHED_CONFORMANCE_HOME_CHILD";

/// Runs in a child of this test binary whose `HOME` is a scratch directory (see
/// `tool_dirs_on_path_and_sourced_files_in_home_are_read_only`); does nothing when run directly.
#[tokio::test]
async fn home_child_cannot_plant_programs_or_shell_code() {
    if std::env::var_os(HOME_CHILD_FLAG).is_none() {
        return;
    }
    let test = "tool_dirs_on_path_and_sourced_files_in_home_are_read_only";
    if !binds_or_skip(test) {
        return;
    }
    let home = PathBuf::from(std::env::var_os("HOME").unwrap());
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers);
    // Paths computed at run time: the analysis cannot see them; the sandbox must refuse.
    for command in [
        "d=$(printf %s ~/.cargo); echo 'echo PWNED' >> \"$d/env\"",
        "d=$(printf %s ~/.cargo); printf '#!/bin/sh\\necho fake\\n' > \"$d/bin/git\"",
        "d=$(printf %s ~/.cargo); mv \"$d/bin\" \"$d/bin2\"",
        "d=$(printf %s ~/.cargo); ln -s /bin/true \"$d/bin/ls\"",
        "d=$(printf %s ~/.cargo); echo '[build]' >> \"$d/config.toml\"",
        "d=$(printf %s ~/go); cp /bin/true \"$d/bin/git\"",
        "d=$(printf %s ~/.bun); cp /bin/true \"$d/bin/node\"",
    ] {
        let r = h.bash(command).await;
        assert!(!r.output.contains("Exit code: 0"), "{command}: {}", r.output);
    }
    assert_eq!(std::fs::read_to_string(home.join(".cargo/env")).unwrap(), "export PATH=x\n");
    assert_eq!(std::fs::read_to_string(home.join(".cargo/config.toml")).unwrap(), "");
    for dir in [".cargo/bin", "go/bin", ".bun/bin"] {
        assert_eq!(std::fs::read_dir(home.join(dir)).unwrap().count(), 0, "{dir}");
    }
    // The rest of the tool dirs stays writable (cargo's registry, locks, caches).
    let r = h.bash("d=$(printf %s ~/.cargo); mkdir -p \"$d/registry\" && echo ok > \"$d/registry/x\" && echo ok > \"$d/.package-cache\"").await;
    assert!(r.output.contains("Exit code: 0"), "{}", r.output);
}

#[test]
fn tool_dirs_on_path_and_sourced_files_in_home_are_read_only() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().canonicalize().unwrap();
    for dir in [".cargo/bin", "go/bin", ".bun/bin"] {
        std::fs::create_dir_all(h.join(dir)).unwrap();
    }
    std::fs::write(h.join(".cargo/env"), "export PATH=x\n").unwrap();
    std::fs::write(h.join(".cargo/config.toml"), "").unwrap();
    let path = format!("{}:{}", h.join(".cargo/bin").display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "home_child_cannot_plant_programs_or_shell_code", "--nocapture"])
        .env(HOME_CHILD_FLAG, "1")
        .env("HOME", &h)
        .env("PATH", path)
        .env_remove("CARGO_HOME")
        .env_remove("GOPATH")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

const ENVIRON_CHILD_FLAG: &str = "TOOLSHED_CONFORMANCE_ENVIRON_CHILD";

/// Runs in a child of this test binary that holds a secret and hides its environment as the
/// cli does (see `a_sandboxed_command_cannot_read_toolsheds_environ_even_as_root`).
#[tokio::test]
async fn environ_child_sandboxed_command_reads_no_parent_environ() {
    if std::env::var_os(ENVIRON_CHILD_FLAG).is_none() {
        return;
    }
    if !landlock_or_skip("a_sandboxed_command_cannot_read_toolsheds_environ_even_as_root") {
        return;
    }
    toolshed_core::env::hide_own_environment();
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers);
    for command in [
        "p=/proc/$PPID; cat $p/environ",
        "p=/proc/$PPID; tr '\\0' '\\n' < $p/environ",
        "for p in /proc/[0-9]*; do cat $p/environ; done 2>/dev/null",
    ] {
        let r = h.bash(command).await;
        assert!(!r.output.contains("sk-environ-conformance"), "{command}: {}", r.output);
    }
}

/// As root a sandboxed command kept CAP_SYS_PTRACE and read toolshed's `/proc/<pid>/environ`
/// (found in review 1); the capability is now dropped from the bounding set.
#[test]
fn a_sandboxed_command_cannot_read_toolsheds_environ_even_as_root() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "environ_child_sandboxed_command_reads_no_parent_environ", "--nocapture"])
        .env(ENVIRON_CHILD_FLAG, "1")
        .env("CONFORMANCE_ENVIRON_KEY", "sk-environ-conformance")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}

/// Review 1: a protected path that does not exist yet could be created by a write the analysis
/// cannot see, and the next toolshed process loaded it. In a project without a `toolshed.toml`
/// (most projects), `f=toolshed.toml; printf '[sandbox]\nmode = "full-access"\n' > $f` turned
/// the sandbox off for every later process. Now the protected locations missing before a command
/// are looked at when it ends: what appeared asks `protected`, and is removed without it.
#[tokio::test]
async fn a_missing_toolshed_toml_cannot_be_created_through_a_computed_path() {
    if !binds_or_skip("a_missing_toolshed_toml_cannot_be_created_through_a_computed_path") {
        return;
    }
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers);
    std::fs::create_dir_all(h.root.join(".git")).unwrap();
    for command in [
        "f=toolshed.toml; printf '[sandbox]\\nmode = \"full-access\"\\n' > $f",
        "d=.toolshed; mkdir -p $d/tools && echo x > $d/tools/x.toml",
        "d=.opencode/tools; mkdir -p $d && echo x > $d/t.ts",
        // Paths built at run time: named in the command, the policy asks `protected` first.
        "python3 -c 'import os; d = \".cla\" + \"ude/skills/s\"; os.makedirs(d); open(d + \"/SKILL.md\", \"w\").write(\"x\")'",
    ] {
        let r = h.bash(command).await;
        assert!(r.output.contains("so they were removed"), "{command}: {}", r.output);
    }
    for created in ["toolshed.toml", ".toolshed", ".opencode/tools", ".claude/skills"] {
        assert!(!h.root.join(created).exists(), "{created} was created");
    }
    // A command still running as a session is looked at when it is polled.
    let r = h
        .call("bash", json!({ "command": "sleep 0.3; f=toolshed.toml; echo x > $f; sleep 0.2", "yield_ms": 100 }))
        .await;
    let id = r.metadata["session_id"].as_u64().unwrap();
    let r = h.call("bash_output", json!({ "session_id": id, "wait_ms": 5000 })).await;
    assert!(r.output.contains("so they were removed"), "{}", r.output);
    assert!(!h.root.join("toolshed.toml").exists());
    // Review 6: nobody polls a session that makes one (a `.git` with `core.fsmonitor` would run
    // at the person's next `git status`): it is removed while the session runs on.
    let r = h
        .call("bash", json!({ "command": "sleep 0.2; f=toolshed.toml; echo x > $f; sleep 30", "yield_ms": 100 }))
        .await;
    let id = r.metadata["session_id"].as_u64().unwrap();
    let made = h.root.join("toolshed.toml");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while made.exists() || std::time::Instant::now() < deadline - std::time::Duration::from_millis(2500) {
        assert!(std::time::Instant::now() < deadline, "still there while the session ran");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let r = h.call("bash_output", json!({ "session_id": id, "stop": true })).await;
    assert!(r.output.contains("removed as they appeared"), "{}", r.output);
    assert!(!h.root.join("toolshed.toml").exists());
    // One that makes it again as soon as it is removed would keep it in place part of the time:
    // it is stopped.
    let r = h
        .call(
            "bash",
            json!({ "command": "while :; do f=toolshed.toml; echo x > $f 2>/dev/null; done", "yield_ms": 100 }),
        )
        .await;
    let id = r.metadata["session_id"].as_u64().unwrap();
    let r = h.call("bash_output", json!({ "session_id": id, "wait_ms": 5000 })).await;
    assert!(r.output.contains("so it was stopped") && r.output.contains("has ended"), "{}", r.output);
    assert!(!made.exists());
}

#[tokio::test]
async fn protected_paths_a_command_creates_are_kept_when_allowed() {
    let answers = Answers::with(&[("protected", Reply::Once)]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers.clone());
    let r = h.bash("f=toolshed.toml; echo '# mine' > $f").await;
    assert_eq!(std::fs::read_to_string(h.root.join("toolshed.toml")).unwrap(), "# mine\n", "{}", r.output);
    assert!(r.output.contains("allowed keeping them"), "{}", r.output);
    assert_eq!(answers.asked(), ["protected"]);
    // Once it exists it is bound read-only: the next hidden write is refused by the sandbox.
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("protected", "*", Action::Allow));
    let h = Harness::new(WORKSPACE_WRITE, rules, answers.clone());
    let r = h.bash("f=toolshed.toml; echo '# mine' > $f").await;
    assert!(h.root.join("toolshed.toml").exists(), "{}", r.output);
    assert!(answers.asked().is_empty(), "allowed by the rules: nobody is asked");
}

/// Review 1 (the bare-repository gap of docs/shell.md in another spelling): a repository nested
/// in the worktree, its config written through a computed path, made `git -C r z` run any
/// program. Now git run in a nested repository, a line that runs git and writes a file named at
/// run time, and a git command that is not git's own (an alias) ask.
#[tokio::test]

async fn a_nested_repositorys_config_is_not_writable_through_a_computed_path() {
    if !binds_or_skip("a_nested_repositorys_config_is_not_writable_through_a_computed_path") || !have("git") {
        return;
    }
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject()), ("bash", reject())]);
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("bash", "rm *", Action::Deny));
    let h = Harness::new(WORKSPACE_WRITE, rules, answers);
    std::fs::write(h.root.join("x"), "canary\n").unwrap();
    let _ = h.bash("git init -q r; f=r/.git/config; printf '[alias]\\n\\tz = !rm ../x\\n' >> $f; git -C r z").await;
    assert!(h.root.join("x").exists(), "the canary was deleted");
}

/// The read-only paths left when everything of the worktree's may be written: toolshed's data
/// directory (the records of what a person accepted), which no approval and no rule lifts.
fn data_dir_only() -> serde_json::Value {
    json!([toolshed_core::paths::data_dir().display().to_string()])
}

/// Review 6: a server outside the sandbox listening on an abstract Unix socket (which no file
/// permission guards) took a command's connection, and could have run what it asked, outside
/// the sandbox and after the command. A command connects only to abstract sockets of its own
/// (Landlock 6 scoping, where the kernel has it).
#[tokio::test]
async fn a_command_cannot_reach_an_abstract_socket_outside_it() {
    let abi = match sandbox::support() {
        SandboxSupport::Landlock { abi } => *abi,
        other => return skip("a_command_cannot_reach_an_abstract_socket_outside_it", other),
    };
    if abi < 6 || !have("python3") {
        return skip(
            "a_command_cannot_reach_an_abstract_socket_outside_it",
            "no Landlock scoping (ABI < 6) or python3",
        );
    }
    use std::os::linux::net::SocketAddrExt;
    let name = format!("toolshed-test-{}", std::process::id());
    let address = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind_addr(&address).unwrap();
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), Answers::with(&[]));
    let connect = |name: &str| {
        format!(
            "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0{name}\"); print(\"connected\")' 2>&1 | tail -1"
        )
    };
    let r = h.bash(&connect(&name)).await;
    assert!(r.output.contains("Operation not permitted") && !r.output.contains("connected"), "{}", r.output);
    // Its own are fine.
    let own = "python3 -c 'import socket; a = socket.socket(socket.AF_UNIX); a.bind(\"\\0own\"); a.listen(1); b = socket.socket(socket.AF_UNIX); b.connect(\"\\0own\"); print(\"own ok\")'";
    let r = h.bash(own).await;
    assert!(r.output.contains("own ok"), "{}", r.output);
}

/// Review 6: in a worktree without `.git`, a command made the top a repository git finds by
/// itself (`HEAD`, `objects/`, `refs/` and a `config` with `core.fsmonitor`), and the person's
/// next `git status` there ran it. A `HEAD` git would take counts as a made `.git`; a project's
/// own `refs/` or `config` stays.
#[tokio::test]
async fn a_repository_made_without_a_git_directory_is_removed() {
    if !landlock_or_skip("a_repository_made_without_a_git_directory_is_removed") {
        return;
    }
    let answers = Answers::with(&[("protected", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers);
    let r = h
        .bash("mkdir -p objects refs; echo 'ref: refs/heads/main' > HEAD; printf '[core]\\n\\tfsmonitor = touch x\\n' > config")
        .await;
    // Without its `HEAD` it is no repository; the rest is left as ordinary files.
    assert!(r.output.contains("so they were removed") && !h.root.join("HEAD").exists(), "{}", r.output);
    std::fs::remove_dir_all(h.root.join("refs")).unwrap();
    std::fs::remove_dir_all(h.root.join("objects")).unwrap();
    std::fs::remove_file(h.root.join("config")).unwrap();
    let r = h.bash("mkdir -p refs objects; echo x > config").await;
    assert!(!r.output.contains("removed"), "{}", r.output);
    assert!(h.root.join("refs").is_dir() && h.root.join("config").is_file());
    // Review 7: a `HEAD` is what makes it one, whatever holds the objects (`commondir`), and
    // whether the name was free before or held a directory.
    let r = h.bash("echo 'ref: refs/heads/main' > HEAD; echo /elsewhere > commondir").await;
    assert!(r.output.contains("so they were removed") && !h.root.join("HEAD").exists(), "{}", r.output);
    std::fs::create_dir(h.root.join("HEAD")).unwrap();
    let r = h.bash("rmdir HEAD; echo 'ref: refs/heads/main' > HEAD").await;
    assert!(r.output.contains("so they were removed") && !h.root.join("HEAD").exists(), "{}", r.output);
}

/// A sandboxed command makes no device node (one of the disk reaches every file on it: review
/// 14 wrote into a file the sandbox refused through `mknod lp b 7 0`), and as root it keeps only
/// a container runtime's default capabilities (review 14 added an address to the host's `lo`
/// with CAP_NET_ADMIN).
#[tokio::test]
async fn a_command_makes_no_device_node_and_keeps_only_ordinary_capabilities() {
    let test = "a_command_makes_no_device_node_and_keeps_only_ordinary_capabilities";
    if !landlock_or_skip(test) {
        return;
    }
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("sandbox_escalation", "*", Action::Deny));
    let h = Harness::new(WORKSPACE_WRITE, rules, Answers::with(&[]));
    let in_tmp = std::env::temp_dir().join(format!("toolshed-null2-{}", std::process::id()));
    let rows = [
        ("mknod null2 c 1 3".to_string(), h.root.join("null2")),
        ("mknod disk b 7 0".to_string(), h.root.join("disk")),
        ("mkdir d && mknod d/null2 c 1 3".to_string(), h.root.join("d/null2")),
        (format!("mknod {} c 1 3", in_tmp.display()), in_tmp.clone()),
    ];
    for (row, node) in rows {
        let r = h.bash(&row).await;
        assert!(!r.output.contains("Exit code: 0"), "row `{row}` made a node: {}", r.output);
        assert!(std::fs::symlink_metadata(&node).is_err(), "row `{row}`: {}", r.output);
    }
    let r = h.bash("mkfifo fifo && echo fifo ok").await;
    assert!(r.output.contains("fifo ok"), "a named pipe is no device: {}", r.output);
    // CapEff and CapBnd of the sandboxed shell: within the kept set.
    let r = h.bash("grep -E '^Cap(Eff|Bnd):' /proc/self/status").await;
    let kept: u64 = [0u32, 1, 3, 5, 6, 7, 8, 10, 18, 29].iter().fold(0, |bits, cap| bits | (1 << cap));
    let mut seen = 0;
    for line in r.output.lines().filter(|l| l.starts_with("Cap")) {
        let bits = u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap();
        if line.starts_with("CapEff") || running_as_root() {
            assert_eq!(bits & !kept, 0, "{line}: capabilities beyond the kept set");
        }
        seen += 1;
    }
    assert_eq!(seen, 2, "{}", r.output);
    let r = h.bash("ip addr add 127.1.4.15/32 dev lo && echo added").await;
    assert!(!r.output.contains("added"), "{}", r.output);
    let _ = std::process::Command::new("ip").args(["addr", "del", "127.1.4.15/32", "dev", "lo"]).output();
    // No file leaves with a set-user-ID or set-group-ID bit, nor a raw socket is opened (review
    // 15: a set-user-ID copy of python ran as root for anyone; a raw socket read loopback).
    let script = r#"import os, socket
for name, mode in [('a', 0o4755), ('b', 0o2755)]:
    open(name, 'w').close()
    try: os.chmod(name, mode)
    except OSError as e: print('chmod refused', e.errno)
try: os.close(os.open('c', os.O_CREAT | os.O_WRONLY, 0o4755))
except OSError as e: print('open refused', e.errno)
try: os.mknod('d', 0o100000 | 0o2745)
except OSError as e: print('mknod refused', e.errno)
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
how = struct.pack('QQQ', os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o4755, 0)
fd = libc.syscall(437, -100, b'e', how, 24)
print('openat2', fd, ctypes.get_errno())
try: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300)
except OSError as e: print('raw refused', e.errno)
open('plain', 'w').close(); os.chmod('plain', 0o755); print('plain ok')
"#;
    std::fs::write(h.root.join("setid.py"), script).unwrap();
    if have("python3") {
        let r = h.bash("python3 setid.py").await;
        assert!(r.output.contains("plain ok"), "{}", r.output);
        for name in ["a", "b", "c", "d", "e"] {
            let mode = std::fs::metadata(h.root.join(name)).map(|m| m.mode()).unwrap_or(0);
            assert_eq!(mode & 0o6000, 0, "{name}: {mode:o} {}", r.output);
        }
        if running_as_root() {
            assert!(r.output.contains("raw refused"), "{}", r.output);
        }
    }
}

/// Whether this test runs as root (the bounding set is only dropped by a process that may).
fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .is_some_and(|uid| uid == "0")
}

/// A server on a Unix socket outside the sandbox, answering `hello` to every connection.
fn socket_server(path: &Path) -> std::os::unix::net::UnixListener {
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    let serving = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        for mut stream in serving.incoming().flatten() {
            let _ = stream.write_all(b"hello from outside\n");
        }
    });
    listener
}

/// The ninth note's "servers outside the sandbox can be reached through sockets": a command
/// had a `tmux` server outside run `touch` for it. The sockets of servers outside are hidden
/// from commands in both modes (found in the kernel's list, whatever their name), but for those
/// in the worktree and those `[sandbox] allow_sockets` names; the model is told why.
#[tokio::test]
async fn a_command_cannot_reach_a_server_outside_through_its_socket() {
    if !binds_or_skip("a_command_cannot_reach_a_server_outside_through_its_socket") || python().is_none() {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    let socket = outside.path().canonicalize().unwrap().join("srv.sock");
    let _outside = socket_server(&socket);
    let connect = |path: &Path| {
        format!(
            "python3 -c 'import socket,sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(64).decode().strip())' {} 2>&1 | tail -1",
            path.display()
        )
    };
    for policy in [WORKSPACE_WRITE, READ_ONLY] {
        let h = Harness::new(policy, Ruleset::defaults(), Answers::with(&[("sandbox_escalation", reject())]));
        let _inside = socket_server(&h.root.join("own.sock"));
        let r = h.bash(&connect(&socket)).await;
        assert!(!r.output.contains("hello from outside"), "{:?}: {}", policy.mode, r.output);
        assert!(r.output.contains("allow_sockets") && r.output.contains("srv.sock"), "{}", r.output);
        // Through a link made now, and by a relative name from its directory.
        let r = h.bash(&format!("ln -s {} l.sock; {}", socket.display(), connect(Path::new("l.sock")))).await;
        assert!(!r.output.contains("hello from outside"), "{:?}: {}", policy.mode, r.output);
        let r = h.bash(&format!("cd {}; {}", outside.path().display(), connect(Path::new("srv.sock")))).await;
        assert!(!r.output.contains("hello from outside"), "{:?}: {}", policy.mode, r.output);
        let r = h.bash(&connect(&h.root.join("own.sock"))).await;
        assert!(r.output.contains("hello from outside"), "the worktree's own server: {}", r.output);
        // Review 17: its directory moved away (it lies in /tmp, where commands write), the
        // next command would not have known the socket by its new name. It cannot be moved.
        let moved = outside.path().with_extension("moved");
        let r = h
            .bash(&format!(
                "python3 -c 'import os,sys; os.rename(sys.argv[1], sys.argv[2])' {} {}",
                outside.path().display(),
                moved.display()
            ))
            .await;
        assert!(outside.path().exists() && !moved.exists(), "{:?}: {}", policy.mode, r.output);
        if policy.mode == SandboxMode::WorkspaceWrite {
            assert!(r.output.contains("hold the sockets of servers outside"), "{}", r.output);
        }
    }
    // Review 18: a server bound through a link in a directory commands write; the link
    // re-pointed by one command, the next still may not reach the socket where it really is.
    let real = outside.path().canonicalize().unwrap().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = outside.path().canonicalize().unwrap().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let _linked = socket_server(&link.join("l.sock"));
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), Answers::with(&[("sandbox_escalation", reject())]));
    let r = h.bash(&format!("rm {0}; ln -s /var/tmp {0}; {1}", link.display(), connect(&real.join("l.sock")))).await;
    assert!(!r.output.contains("hello from outside"), "{}", r.output);
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("/var/tmp"), "{}", r.output);
    let r = h.bash(&connect(&real.join("l.sock"))).await;
    assert!(!r.output.contains("hello from outside"), "after the link was re-pointed: {}", r.output);

    let allowed: &'static [PathBuf] = Box::leak(vec![socket.clone()].into_boxed_slice());
    let h = Harness::new(
        SandboxPolicy { allow_sockets: allowed, ..WORKSPACE_WRITE },
        Ruleset::defaults(),
        Answers::with(&[]),
    );
    let r = h.bash(&connect(&socket)).await;
    assert!(r.output.contains("hello from outside"), "allowed: {}", r.output);
}

/// Review 19: a command moved the worktree (under /tmp, where commands write) away and made a
/// repository with a `core.fsmonitor` at its path, which the person's `git status` then ran.
/// The worktree, and what holds it under a writable root, cannot be moved; a file moved into
/// it from elsewhere in that root is copied.
#[tokio::test]
async fn the_worktree_cannot_be_moved_away_and_replaced() {
    if !binds_or_skip("the_worktree_cannot_be_moved_away_and_replaced") || python().is_none() {
        return;
    }
    let answers = Answers::with(&[("protected", reject()), ("sandbox_escalation", reject())]);
    let h = Harness::new(WORKSPACE_WRITE, Ruleset::defaults(), answers);
    std::fs::write(h.root.join("x"), "canary\n").unwrap();
    let elsewhere = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(elsewhere.path(), "moved in\n").unwrap();
    let r = h
        .bash(&format!(
            "python3 -c 'import os; w=os.getcwd(); os.rename(w, w+\"-old\"); os.mkdir(w); print(\"swapped\")'; mv {} ./in.txt && cat in.txt",
            elsewhere.path().display()
        ))
        .await;
    assert!(!r.output.contains("swapped") && r.output.contains("Device or resource busy"), "{}", r.output);
    assert_eq!(std::fs::read_to_string(h.root.join("x")).unwrap(), "canary\n");
    assert!(!h.root.with_file_name(format!("{}-old", h.root.file_name().unwrap().to_string_lossy())).exists());
    assert!(r.output.contains("moved in"), "{}", r.output);
}

/// Review 20: a root command read toolshed's hidden data directory off the disk's block device
/// (Landlock lets commands read anywhere; root passes the file permissions), and with `/dev`
/// approved through `external_directory` (which `--yes` gives) wrote it. Every block device
/// is covered by `/dev/null` in both modes, and no approval makes `/dev` writable.
#[tokio::test]
async fn a_command_reads_and_writes_no_block_device() {
    use std::os::unix::fs::FileTypeExt as _;
    if !binds_or_skip("a_command_reads_and_writes_no_block_device") {
        return;
    }
    let Some(device) = std::fs::read_dir("/dev")
        .unwrap()
        .flatten()
        .find(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
        .map(|e| e.path())
    else {
        return skip("a_command_reads_and_writes_no_block_device", "no block device in /dev");
    };
    for policy in [WORKSPACE_WRITE, READ_ONLY] {
        let h = Harness::new(policy, Ruleset::defaults(), Answers::with(&[("sandbox_escalation", reject())]));
        let r = h
            .bash(&format!("d={}; test -b $d && echo block || echo covered; head -c 4096 $d | wc -c", device.display()))
            .await;
        assert!(r.output.starts_with("covered\n0\n"), "{:?}: {}", policy.mode, r.output);
    }
    let root = Path::new("/nonexistent-root");
    let extra = [PathBuf::from("/dev"), PathBuf::from("/dev/disk"), PathBuf::from("/proc/self"), PathBuf::from("/sys")];
    let writable = sandbox::writable_roots(root, &extra);
    assert!(writable.iter().all(|d| !d.starts_with("/dev") || d.starts_with("/dev/shm")), "{writable:?}");
    assert!(writable.iter().all(|d| !d.starts_with("/proc") && !d.starts_with("/sys")), "{writable:?}");
}
