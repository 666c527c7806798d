//! Undo through the CLI, on a real git repository: a session edits, creates and deletes files;
//! `session diff` shows it, `session revert` puts everything back (bytes and modes), a second
//! revert re-applies the session's changes, a hand edit made since is refused without --force,
//! and the user's own git state (HEAD, index, stash, untracked files, every file under .git)
//! never changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use toolshed_llm::testing::{FakeServer, Reply, chat};

fn toolshed(root: &Path, data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", data.join("xdg-config"))
        .env("TOOLSHED_DATA_DIR", data.join("data"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn git(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        // `git status` may otherwise refresh the index's stat data: the test must not write it.
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file under `dir` with its bytes and mode (`.git` included when asked).
fn tree_state(dir: &Path, skip: &[&str]) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if skip.iter().any(|s| rel == *s || rel.starts_with(&format!("{s}/"))) {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, (std::fs::read(&path).unwrap_or_default(), meta.permissions().mode() & 0o7777));
            }
        }
    }
    out
}

/// The user's git state: status, stash, HEAD, and a hash of every file under `.git` (the index
/// included) with its mode.
fn user_git_state(root: &Path) -> (String, String, String, BTreeMap<String, (u64, u32)>) {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let files = tree_state(&root.join(".git"), &[]);
    let hashed = files
        .into_iter()
        .map(|(name, (bytes, mode))| {
            let mut h = DefaultHasher::new();
            bytes.hash(&mut h);
            (name, (h.finish(), mode))
        })
        .collect();
    (
        git(root, &["status", "--porcelain", "--untracked-files=all"]),
        git(root, &["stash", "list"]),
        git(root, &["rev-parse", "HEAD"]),
        hashed,
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn revert_restores_edited_created_and_deleted_files_exactly_and_leaves_the_users_git_alone() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // The user's repository: a commit, a stash entry, a staged change and an untracked file.
    git(root, &["init", "-q"]);
    std::fs::write(root.join("secret.txt"), "secret v1\n").unwrap();
    std::fs::set_permissions(root.join("secret.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(root.join("run.sh"), "#!/bin/sh\necho v1\n").unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(root.join("gone.txt"), "to be deleted\r\nwith CRLF\r\n").unwrap();
    std::fs::write(root.join(".gitignore"), "ignored.log\n").unwrap();
    std::fs::write(root.join("staged.txt"), "base\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    std::fs::write(root.join("staged.txt"), "stashed change\n").unwrap();
    git(root, &["stash", "-q"]);
    std::fs::write(root.join("staged.txt"), "staged change\n").unwrap();
    git(root, &["add", "staged.txt"]);
    std::fs::write(root.join("mine.txt"), "the user's untracked file\n").unwrap();
    std::fs::write(root.join("ignored.log"), "ignored\n").unwrap();

    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            (
                "c1",
                "bash",
                r#"{"command":"printf 'secret v2\\n' > secret.txt && printf 'echo v2\\n' >> run.sh && rm gone.txt"}"#,
            ),
            ("c2", "write", r#"{"file_path":"new/dir/created.txt","content":"created by the session\n"}"#),
        ])),
        Reply::sse(chat::text("Done.")),
    ])
    .unwrap();
    std::fs::write(
        data.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let config = data.path().join("toolshed.toml");
    let config = config.to_str().unwrap();

    let files_before = tree_state(root, &[".git"]);
    let git_before = user_git_state(root);

    let out = toolshed(root, data.path(), &["--config", config, "run", "edit things", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let id = events[0]["session_id"].as_str().unwrap().to_string();
    let steps: Vec<u64> =
        events.iter().filter(|e| e["type"] == "step_start").map(|e| e["step"].as_u64().unwrap()).collect();
    assert_eq!(steps, [1, 2]);
    let errors: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_result" && e["is_error"] == true).collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(std::fs::read_to_string(root.join("secret.txt")).unwrap(), "secret v2\n");
    assert!(!root.join("gone.txt").exists());
    assert!(root.join("new/dir/created.txt").exists());
    let files_after_session = tree_state(root, &[".git"]);
    assert_eq!(user_git_state(root).1, git_before.1, "stash changed");
    assert_eq!(user_git_state(root).2, git_before.2, "HEAD changed");

    // The diff names the four files.
    let out = toolshed(root, data.path(), &["session", "diff", &id, "--stat"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stat = text(&out.stdout);
    for f in ["secret.txt", "run.sh", "gone.txt", "new/dir/created.txt"] {
        assert!(stat.contains(f), "{f} missing from the stat: {stat}");
    }
    assert!(!stat.contains("staged.txt") && !stat.contains("mine.txt"), "{stat}");
    let out = toolshed(root, data.path(), &["session", "diff", &id, "--step", "1"]);
    assert!(text(&out.stdout).contains("+secret v2"), "{}", text(&out.stdout));
    let out = toolshed(root, data.path(), &["session", "diff", &id, "--step", "2"]);
    assert!(text(&out.stdout).contains("step 2 changed no files"), "{}", text(&out.stdout));
    let out = toolshed(root, data.path(), &["session", "diff", &id, "--step", "9"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = toolshed(root, data.path(), &["session", "diff", "ses_nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));

    // Revert: all four back, bytes and modes; the new directories gone.
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    for f in ["secret.txt", "run.sh", "gone.txt", "new/dir/created.txt"] {
        assert!(said.contains(f), "{f} not named: {said}");
    }
    assert_eq!(tree_state(root, &[".git"]), files_before);
    assert_eq!(mode(&root.join("secret.txt")), 0o600);
    assert_eq!(mode(&root.join("run.sh")), 0o755);
    assert!(!root.join("new").exists(), "the directories the session created stay");
    assert_eq!(user_git_state(root), git_before);

    // session show numbers the steps, the revert among them.
    let out = toolshed(root, data.path(), &["session", "show", &id]);
    let shown = text(&out.stdout);
    assert!(shown.contains("── step 1, changed 4 files ──") && shown.contains("── step 2 ──"), "{shown}");
    assert!(shown.contains("── step 3 (revert), changed 4 files ──"), "{shown}");
    assert!(shown.contains("The user reverted files to how they were before step 1"), "{shown}");

    // Reverting again re-applies the session's changes.
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["step"], 4);
    assert_eq!(outcome["reverted_to_before_step"], 3);
    assert_eq!(tree_state(root, &[".git"]), files_after_session);

    // A hand edit since: refused with --json, naming the file, nothing changed or recorded.
    std::fs::write(root.join("secret.txt"), "edited by hand\n").unwrap();
    let edited = tree_state(root, &[".git"]);
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("secret.txt"), "{}", text(&out.stderr));
    let refused: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(refused["hand_edited"][0], "secret.txt");
    assert_eq!(tree_state(root, &[".git"]), edited);
    let out = toolshed(root, data.path(), &["session", "show", &id]);
    assert!(!text(&out.stdout).contains("── step 5"), "a refused revert was recorded");

    // --force overwrites it.
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(tree_state(root, &[".git"]), files_before);
    assert_eq!(user_git_state(root), git_before);
    assert!(root.join("ignored.log").exists());
}

#[test]
fn a_foreground_sub_agents_changes_belong_to_the_parent_step_that_ran_it() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("kept.txt"), "original\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[(
            "p1",
            "task",
            r#"{"description":"edit a file","prompt":"overwrite kept.txt","agent":"writer"}"#,
        )])),
        Reply::sse(chat::tool_calls(&[("s1", "write", r#"{"file_path":"made_by_child.txt","content":"child\n"}"#)])),
        Reply::sse(chat::text("child done")),
        Reply::sse(chat::text("parent done")),
    ])
    .unwrap();
    std::fs::write(
        data.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[agent.writer]\ndescription = \"writes\"\nmode = \"subagent\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let config = data.path().join("toolshed.toml");
    let out =
        toolshed(root, data.path(), &["--config", config.to_str().unwrap(), "run", "delegate", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(root.join("made_by_child.txt").exists(), "{}", text(&out.stdout));
    let events: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let id = events[0]["session_id"].as_str().unwrap().to_string();

    let out = toolshed(root, data.path(), &["session", "show", &id]);
    assert!(text(&out.stdout).contains("── step 1, changed 1 file ──"), "{}", text(&out.stdout));
    let out = toolshed(root, data.path(), &["session", "diff", &id, "--step", "1", "--stat"]);
    assert!(text(&out.stdout).contains("made_by_child.txt"), "{}", text(&out.stdout));
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!root.join("made_by_child.txt").exists());
    assert_eq!(std::fs::read_to_string(root.join("kept.txt")).unwrap(), "original\n");
}

#[test]
fn chat_shows_the_diff_and_undoes_and_redoes_the_last_change() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("kept.txt"), "original\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("w1", "write", r#"{"file_path":"made.txt","content":"made in chat\n"}"#),
            ("e1", "bash", r#"{"command":"printf 'changed\\n' > kept.txt","description":"change kept.txt"}"#),
        ])),
        Reply::sse(chat::text("done")),
    ])
    .unwrap();
    std::fs::write(
        data.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nbash = \"allow\"\nedit = \"allow\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let config = data.path().join("toolshed.toml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap(), "--config", config.to_str().unwrap(), "chat"])
        .current_dir(root)
        .env("XDG_CONFIG_HOME", data.path().join("xdg-config"))
        .env("TOOLSHED_DATA_DIR", data.path().join("data"))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"make a file\n/diff\n/undo\n/exit\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("+made in chat") && stdout.contains("-original") && stdout.contains("+changed"),
        "{stdout}"
    );
    assert!(!root.join("made.txt").exists(), "undone: {stdout}\n{stderr}");
    assert_eq!(std::fs::read_to_string(root.join("kept.txt")).unwrap(), "original\n");
    let out_text = format!("{stdout}{stderr}");
    assert!(out_text.contains("made.txt") && out_text.contains("kept.txt"), "names what it restored: {out_text}");
    // A second /undo in a later chat on the same session redoes it.
    let id = stderr.lines().rev().find_map(|l| l.strip_prefix("session ")).unwrap().trim().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap(), "--config", config.to_str().unwrap(), "chat", "--session", &id])
        .current_dir(root)
        .env("XDG_CONFIG_HOME", data.path().join("xdg-config"))
        .env("TOOLSHED_DATA_DIR", data.path().join("data"))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"/undo\n/exit\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("made.txt")).unwrap(), "made in chat\n");
    assert_eq!(std::fs::read_to_string(root.join("kept.txt")).unwrap(), "changed\n");
}

#[test]
fn chat_undo_asks_before_overwriting_a_hand_edit_and_no_keeps_it() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("kept.txt"), "original\n").unwrap();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("w1", "write", r#"{"file_path":"kept.txt","content":"by the agent\n"}"#)])),
        Reply::sse(chat::text("done")),
    ])
    .unwrap();
    std::fs::write(
        data.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nedit = \"allow\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let config = data.path().join("toolshed.toml");
    let chat_with = |answer: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .env("TOOLSHED_TRUST_PROJECT", "1")
            .args(["--root", root.to_str().unwrap(), "--config", config.to_str().unwrap(), "chat"])
            .current_dir(root)
            .env("XDG_CONFIG_HOME", data.path().join("xdg-config"))
            .env("TOOLSHED_DATA_DIR", data.path().join("data"))
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, b"change it\n").unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while server.received().len() < 2 || std::fs::read_to_string(root.join("kept.txt")).unwrap() != "by the agent\n"
        {
            assert!(std::time::Instant::now() < deadline, "the turn did not finish");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // Let the turn end (its after-step snapshot), then edit by hand.
        std::thread::sleep(std::time::Duration::from_millis(500));
        std::fs::write(root.join("kept.txt"), "by hand\n").unwrap();
        std::io::Write::write_all(&mut stdin, format!("/undo\n{answer}\n/exit\n").as_bytes()).unwrap();
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    let out = chat_with("n");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("kept.txt") && stderr.contains("Overwrite them? [y/N]"), "{stderr}");
    assert!(stderr.contains("revert cancelled; nothing changed"), "{stderr}");
    assert_eq!(std::fs::read_to_string(root.join("kept.txt")).unwrap(), "by hand\n");
}

// ---------------------------------------------------------------------------------------------
// Adversarial review.
// ---------------------------------------------------------------------------------------------

/// Runs one prompt whose single step runs `command` in bash (then answers), continuing
/// `session` when given; returns the session id.
fn bash_session(root: &Path, data: &Path, session: Option<&str>, command: &str) -> String {
    bash_session_with(root, data, session, command, "")
}

/// [`bash_session`] with `extra` appended to the `[permission]` table of its configuration.
fn bash_session_with(root: &Path, data: &Path, session: Option<&str>, command: &str, extra: &str) -> String {
    let args = serde_json::json!({"command": command, "description": "change files"}).to_string();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("b1", "bash", &args)])),
        Reply::sse(chat::text("Done.")),
    ])
    .unwrap();
    let config = data.join("toolshed.toml");
    std::fs::write(
        &config,
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nbash = \"allow\"\n{extra}",
            server.base_url()
        ),
    )
    .unwrap();
    let mut args = vec!["--config", config.to_str().unwrap(), "run", "change files", "--yes", "--json"];
    if let Some(id) = session {
        args.extend(["--session", id]);
    }
    let out = toolshed(root, data, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let errors: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_result" && e["is_error"] == true).collect();
    assert!(errors.is_empty(), "{errors:?}");
    events[0]["session_id"].as_str().unwrap().to_string()
}

#[test]
fn revert_restores_odd_file_names_symlinks_and_modes() {
    use std::os::unix::ffi::OsStrExt;
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(root.join("with space.txt"), "spaced v1\n").unwrap();
    std::fs::write(root.join(latin1), "latin-1 name\n").unwrap();
    std::fs::write(root.join("quote\"d.txt"), "quoted v1\n").unwrap();
    std::fs::write(root.join("target.txt"), "target\n").unwrap();
    std::os::unix::fs::symlink("target.txt", root.join("link")).unwrap();
    std::fs::write(root.join("plain.txt"), "plain\n").unwrap();
    let before = tree_state(root, &[]);
    let links_before = std::fs::read_link(root.join("link")).unwrap();
    let id = bash_session(
        root,
        data.path(),
        None,
        "printf 'spaced v2\\n' > 'with space.txt' && printf 'new\\n' > \"$(printf 'new\\nline.txt')\" && rm \"$(printf 'caf\\351.txt')\" && printf 'quoted v2\\n' > 'quote\"d.txt' && ln -sfn plain.txt link && chmod 600 plain.txt && printf 'x' > 'tab\there.txt'",
    );
    assert!(root.join("new\nline.txt").exists());
    assert!(!root.join(latin1).exists());
    let out = toolshed(root, data.path(), &["session", "diff", &id, "--stat"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(tree_state(root, &[]), before, "{}", text(&out.stdout));
    assert_eq!(std::fs::read_link(root.join("link")).unwrap(), links_before);
    assert_eq!(mode(&root.join("plain.txt")), 0o644);
}

#[test]
fn revert_restores_a_file_turned_directory_and_a_directory_turned_file() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("a"), "a file\n").unwrap();
    std::fs::create_dir_all(root.join("d/sub")).unwrap();
    std::fs::write(root.join("d/inner.txt"), "inner\n").unwrap();
    std::fs::write(root.join("d/sub/deep.txt"), "deep\n").unwrap();
    let before = tree_state(root, &[]);
    let id = bash_session(root, data.path(), None, "rm a && mkdir a && echo x > a/x && rm -r d && echo y > d");
    assert!(root.join("a").is_dir() && root.join("d").is_file());
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(tree_state(root, &[]), before, "{}", text(&out.stdout));
    assert!(root.join("a").is_file() && root.join("d").is_dir());
    // And back again.
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(root.join("a/x").is_file() && root.join("d").is_file(), "{}", text(&out.stdout));
}

#[test]
fn a_linked_git_worktree_is_left_alone() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("main");
    std::fs::create_dir(&main).unwrap();
    git(&main, &["init", "-q"]);
    std::fs::write(main.join("tracked.txt"), "v1\n").unwrap();
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-qm", "base"]);
    git(&main, &["worktree", "add", "-q", "../wt"]);
    let wt = dir.path().join("wt");
    std::fs::write(wt.join("tracked.txt"), "staged in wt\n").unwrap();
    git(&wt, &["add", "tracked.txt"]);
    let git_before = user_git_state(&main);
    let wt_status = git(&wt, &["status", "--porcelain", "--untracked-files=all"]);
    let dotgit = std::fs::read(wt.join(".git")).unwrap();
    let files_before = tree_state(&wt, &[]);
    let id = bash_session(&wt, data.path(), None, "printf 'session\\n' > tracked.txt && printf 'new\\n' > new.txt");
    let out = toolshed(&wt, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(tree_state(&wt, &[]), files_before);
    assert_eq!(std::fs::read(wt.join(".git")).unwrap(), dotgit);
    assert_eq!(user_git_state(&main), git_before);
    assert_eq!(git(&wt, &["status", "--porcelain", "--untracked-files=all"]), wt_status);
}

/// A hand edit made between two prompts of the session, to a file the first prompt changed and
/// the second did not: a revert to before the first must not overwrite it silently.
#[test]
fn a_hand_edit_between_prompts_is_not_silently_reverted() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("foo.txt"), "foo v1\n").unwrap();
    std::fs::write(root.join("bar.txt"), "bar v1\n").unwrap();
    let id = bash_session(root, data.path(), None, "printf 'foo by the session\\n' > foo.txt");
    std::fs::write(root.join("foo.txt"), "foo edited by hand\n").unwrap();
    bash_session(root, data.path(), Some(&id), "printf 'bar by the session\\n' > bar.txt");
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--step", "1", "--json"]);
    let after = std::fs::read_to_string(root.join("foo.txt")).unwrap();
    assert_eq!(after, "foo edited by hand\n", "the hand edit was overwritten: {}", text(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("foo.txt"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("bar.txt")).unwrap(), "bar by the session\n", "nothing changed");
}

/// Review 22: the same, when the later prompt changed that file too: the revert compared the
/// file only with how the last step left it, and the hand edit went without a question.
#[test]
fn a_hand_edit_between_prompts_to_a_file_the_later_prompt_changed_too_is_not_silently_reverted() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("a.txt"), "a v1\n").unwrap();
    let id = bash_session(root, data.path(), None, "printf 'a by the session\\n' > a.txt");
    std::fs::write(root.join("a.txt"), "a by the session\nMY PRECIOUS EDIT\n").unwrap();
    bash_session(root, data.path(), Some(&id), "printf 'step 2\\n' >> a.txt");
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--step", "1"]);
    let after = std::fs::read_to_string(root.join("a.txt")).unwrap();
    assert!(after.contains("MY PRECIOUS EDIT"), "the hand edit was overwritten: {}", text(&out.stdout));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("a.txt") && text(&out.stderr).contains("--force"), "{}", text(&out.stderr));
    // Reverting only the later step is no loss: it goes back to the hand edit.
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a by the session\nMY PRECIOUS EDIT\n");
}

/// Two sessions in one worktree: the later one's change to a file is, for the earlier one, a
/// change made since; reverting the later first, then the earlier, works.
#[test]
fn two_sessions_in_one_worktree() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("foo.txt"), "foo v1\n").unwrap();
    let a = bash_session(root, data.path(), None, "printf 'foo by A\\n' > foo.txt && printf 'a\\n' > a.txt");
    let b = bash_session(root, data.path(), None, "printf 'foo by B\\n' > foo.txt && printf 'b\\n' > b.txt");
    let out = toolshed(root, data.path(), &["session", "revert", &a, "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(root.join("foo.txt")).unwrap(), "foo by B\n");
    assert!(root.join("a.txt").exists(), "a refused revert changes nothing");
    let out = toolshed(root, data.path(), &["session", "revert", &b]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("foo.txt")).unwrap(), "foo by A\n");
    assert!(!root.join("b.txt").exists());
    let out = toolshed(root, data.path(), &["session", "revert", &a]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("foo.txt")).unwrap(), "foo v1\n");
    assert!(!root.join("a.txt").exists());
}

#[test]
fn session_diff_of_a_binary_file_and_a_mode_change() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("blob.bin"), b"\x00\x01\x02binary\xff").unwrap();
    std::fs::write(root.join("key.pem"), "key\n").unwrap();
    let before = tree_state(root, &[]);
    let id = bash_session(root, data.path(), None, "printf '\\000\\003changed\\377' > blob.bin && chmod 600 key.pem");
    let out = toolshed(root, data.path(), &["session", "diff", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let diff = text(&out.stdout);
    assert!(diff.contains("blob.bin") && diff.contains("key.pem"), "{diff}");
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(tree_state(root, &[]), before);
}

// ---------------------------------------------------------------------------------------------
// Review 9 (undo).
// ---------------------------------------------------------------------------------------------

/// A `.gitignore` the model rewrote makes a user's ignored `.env` part of the next snapshot;
/// its absence from the snapshot before says nothing, so the revert keeps it.
#[test]
fn a_gitignore_the_model_rewrote_does_not_get_an_ignored_file_deleted() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join(".gitignore"), ".env\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    std::fs::write(root.join(".env"), "SECRET=hunter2\n").unwrap();
    let id = bash_session(root, data.path(), None, "printf 'target/\\n' > .gitignore && printf 'n\\n' > new.txt");
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join(".env")).unwrap(), "SECRET=hunter2\n", "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(root.join(".gitignore")).unwrap(), ".env\n");
    assert!(!root.join("new.txt").exists(), "what the session made still goes");
    let said = text(&out.stdout);
    assert!(said.lines().any(|l| l.trim_start().starts_with("kept") && l.contains(".env")), "{said}");
    // Asked again for the same step, there is nothing to revert, and the file it keeps is
    // still named.
    let step = said.split("to before step ").nth(1).and_then(|r| r.split(' ').next()).unwrap().to_string();
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--step", &step]);
    let said = text(&out.stdout);
    assert!(said.contains("nothing to revert") && said.contains("kept") && said.contains(".env"), "{said}");
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--step", &step, "--json"]);
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcome["kept"], serde_json::json!([".env"]), "{outcome}");
}

/// A directory the session put where a file was is removed whole when the file comes back:
/// files added to it since are not the session's, and go only with --force, each one named;
/// an ignored one, which undo never kept and so could not bring back, not even then (review 22).
#[test]
fn a_directory_with_files_added_since_is_removed_only_when_forced_and_all_it_held_is_named() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("cfg"), "key=1\n").unwrap();
    let id = bash_session(root, data.path(), None, "rm cfg && mkdir cfg && printf 'm\\n' > cfg/main");
    std::fs::write(root.join("cfg/mine.txt"), "the user's\n").unwrap();
    std::fs::write(root.join("cfg/.gitignore"), "cache/\n").unwrap();
    std::fs::create_dir(root.join("cfg/cache")).unwrap();
    std::fs::write(root.join("cfg/cache/blob"), "ignored\n").unwrap();
    for force in [&[][..], &["--force"][..]] {
        let out = toolshed(root, data.path(), &[&["session", "revert", &id][..], force].concat());
        assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
        assert!(
            text(&out.stderr).contains("cfg/cache/blob") && text(&out.stderr).contains("never kept"),
            "{}",
            text(&out.stderr)
        );
        assert!(root.join("cfg/cache/blob").exists() && root.join("cfg/mine.txt").exists(), "nothing changed");
    }
    std::fs::remove_dir_all(root.join("cfg/cache")).unwrap();
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    for name in ["cfg/mine.txt", "cfg/.gitignore"] {
        assert!(text(&out.stderr).contains(name), "{name}: {}", text(&out.stderr));
    }
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--force", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("cfg")).unwrap(), "key=1\n");
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    let deleted: Vec<&str> = outcome["deleted"].as_array().unwrap().iter().map(|d| d.as_str().unwrap()).collect();
    for name in ["cfg/main", "cfg/mine.txt", "cfg/.gitignore"] {
        assert!(deleted.contains(&name), "{name}: {outcome}");
    }
    // Those were kept: reverting again brings them back.
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("cfg/mine.txt")).unwrap(), "the user's\n");
}

/// A name near the file system's limit is restored (the temporary file beside it has a short
/// name); a snapshot whose object is missing fails before anything is written.
#[test]
fn a_long_file_name_is_restored_and_a_damaged_snapshot_changes_nothing() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let long = format!("z{}", "x".repeat(249));
    std::fs::write(root.join("a.txt"), "a v1\n").unwrap();
    std::fs::write(root.join(&long), "long v1\n").unwrap();
    let id =
        bash_session(root, data.path(), None, &format!("printf 'a v2\\n' > a.txt && printf 'long v2\\n' > {long}"));
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join(&long)).unwrap(), "long v1\n");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a v1\n");
    // Revert the revert, then lose the object that holds "a v1".
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let blob =
        Command::new("git").args(["hash-object", "--stdin"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn();
    let mut blob = blob.unwrap();
    std::io::Write::write_all(&mut blob.stdin.take().unwrap(), b"a v1\n").unwrap();
    let oid = text(&blob.wait_with_output().unwrap().stdout).trim().to_string();
    let snapshots = data.path().join("data/snapshots");
    let shadow = std::fs::read_dir(&snapshots).unwrap().next().unwrap().unwrap().path();
    std::fs::remove_file(shadow.join("objects").join(&oid[..2]).join(&oid[2..])).unwrap();
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--step", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stderr).contains("missing") && text(&out.stderr).contains("a.txt"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a v2\n", "nothing changed");
    assert_eq!(std::fs::read_to_string(root.join(&long)).unwrap(), "long v2\n", "nothing changed");
}

/// Names that are not UTF-8 are in the diff and in the JSON report; a step that made more files
/// than fit in a command line diffs and reverts (in about 2 s; it took 70 s when each path was
/// looked up in lists).
#[test]
fn names_that_are_not_utf8_and_a_step_of_25000_files() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let id = bash_session(
        root,
        data.path(),
        None,
        "printf 'b\\n' > \"$(printf 'bad\\377.txt')\" && printf 'g\\n' > good.txt && mkdir gen && cd gen && seq -f 'generated_file_with_a_rather_long_name_for_the_argument_limit_%020g' 25000 | xargs touch",
    );
    let out = toolshed(root, data.path(), &["session", "diff", &id, "--stat"]);
    assert_eq!(out.status.code(), Some(0), "{}", &text(&out.stderr)[..text(&out.stderr).len().min(500)]);
    let stat = text(&out.stdout);
    assert!(stat.contains("bad\u{fffd}.txt") && stat.contains("good.txt"), "{}", &stat[..stat.len().min(2000)]);
    assert!(stat.contains("25002 files changed"), "{}", &stat[stat.len().saturating_sub(300)..]);
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    let deleted = outcome["deleted"].as_array().unwrap();
    assert_eq!(deleted.len(), 25002);
    assert!(deleted.iter().any(|d| d == "bad\u{fffd}.txt"), "{:?}", &deleted[..3]);
    assert!(std::fs::read_dir(root).unwrap().next().is_none(), "everything the session made is gone");
}

// ---------------------------------------------------------------------------------------------
// Review 11 (undo, round 2).
// ---------------------------------------------------------------------------------------------

/// What the ignore rules left out is decided by the list each snapshot keeps of it, not by
/// rules read again later: a `.gitignore` that ignores itself (as tools write `*` into their
/// cache directories) and `.git/info/exclude` count as they were.
#[test]
fn files_the_rules_left_out_before_are_kept_however_the_rules_changed() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::create_dir(root.join("data")).unwrap();
    std::fs::write(root.join("data/.gitignore"), "*\n").unwrap();
    std::fs::write(root.join("data/important.db"), "the user's data\n").unwrap();
    std::fs::write(root.join(".git/info/exclude"), ".env\n").unwrap();
    std::fs::write(root.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(root.join("a.txt"), "a v1\n").unwrap();
    // A model allowed to write `.git` (a rule says so) changes the exclude list too.
    let id = bash_session_with(
        root,
        data.path(),
        None,
        "printf '*.tmp\\n' > data/.gitignore && printf 'a v2\\n' > a.txt && : > .git/info/exclude",
        "protected = \"allow\"\n",
    );
    bash_session(root, data.path(), Some(&id), "printf 'new\\n' > made.txt");
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--step", "1", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("data/important.db")).unwrap(), "the user's data\n", "{outcome}");
    assert_eq!(std::fs::read_to_string(root.join(".env")).unwrap(), "SECRET=1\n", "{outcome}");
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a v1\n");
    assert!(!root.join("made.txt").exists(), "what the session made still goes: {outcome}");
    let kept: Vec<&str> = outcome["kept"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
    assert!(kept.contains(&"data/important.db") && kept.contains(&".env"), "{outcome}");
}

/// A nested repository is never removed, and files that may be one's taken apart are kept; a
/// file someone put where a directory comes back is refused like a hand edit.
#[test]
fn nested_repositories_and_a_file_in_a_directorys_place_are_not_lost() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("lib")).unwrap();
    git(&root.join("lib"), &["init", "-q"]);
    std::fs::write(root.join("lib/code.c"), "int main;\n").unwrap();
    git(&root.join("lib"), &["add", "-A"]);
    git(&root.join("lib"), &["commit", "-qm", "lib"]);
    std::fs::write(root.join("lib/wip.c"), "uncommitted\n").unwrap();
    std::fs::create_dir(root.join("notes")).unwrap();
    std::fs::write(root.join("notes/a.txt"), "note\n").unwrap();
    // Moved whole, then taken apart: neither loses a file.
    let allow = "protected = \"allow\"\n";
    let id = bash_session_with(root, data.path(), None, "mkdir vendor && mv lib vendor/lib && rm -r notes", allow);
    std::fs::write(root.join("notes"), "the user's file\n").unwrap();
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stderr).contains("notes"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("notes")).unwrap(), "the user's file\n", "nothing changed");
    std::fs::remove_file(root.join("notes")).unwrap();
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("notes/a.txt")).unwrap(), "note\n");
    assert_eq!(
        std::fs::read_to_string(root.join("vendor/lib/wip.c")).unwrap(),
        "uncommitted\n",
        "{}",
        text(&out.stdout)
    );
    assert!(root.join("vendor/lib/.git").is_dir());

    let id = bash_session_with(root, data.path(), None, "rm -rf vendor/lib/.git && mv vendor/lib lib2", allow);
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("lib2/wip.c")).unwrap(), "uncommitted\n", "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(root.join("lib2/code.c")).unwrap(), "int main;\n");
}

/// Names that look like pathspec magic are names.
#[test]
fn names_like_pathspec_magic_are_reverted_as_names() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("a.txt"), "a v1\n").unwrap();
    let id = bash_session(
        root,
        data.path(),
        None,
        "printf x > ':(glob)x' && printf y > ':!y' && printf z > ':.env' && printf 'a v2\\n' > a.txt",
    );
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    for name in [":(glob)x", ":!y", ":.env"] {
        assert!(!root.join(name).exists(), "{name}: {}", text(&out.stdout));
    }
    assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "a v1\n");
}

/// Review 22: `toolshed run` killed (`kill -9`, the OOM killer, a crash) while a step's tool
/// ran left a step whose snapshot before was never recorded: revert said nothing had changed
/// and the file the command overwrote was lost. The snapshot is recorded before the tools run
/// now, and the step is completed by the next diff or revert.
#[test]
fn a_step_cut_short_by_kill_9_can_still_be_reverted() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("notes.txt"), "precious\n").unwrap();
    let args = serde_json::json!({"command": "echo clobbered > notes.txt; sleep 60", "description": "x"}).to_string();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("b1", "bash", &args)])),
        Reply::sse(chat::text("Done.")),
    ])
    .unwrap();
    let config = data.path().join("toolshed.toml");
    std::fs::write(
        &config,
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nbash = \"allow\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap(), "--config", config.to_str().unwrap(), "run", "go", "--yes", "--json"])
        .current_dir(root)
        .env("XDG_CONFIG_HOME", data.path().join("xdg-config"))
        .env("TOOLSHED_DATA_DIR", data.path().join("data"))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::fs::read_to_string(root.join("notes.txt")).unwrap() != "clobbered\n" {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the command never ran");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let first = text(&out.stdout).lines().next().map(|l| serde_json::from_str::<Value>(l).unwrap()).unwrap();
    let id = first["session_id"].as_str().unwrap().to_string();
    let diff = toolshed(root, data.path(), &["session", "diff", &id]);
    assert!(
        text(&diff.stdout).contains("-precious") && text(&diff.stdout).contains("+clobbered"),
        "{}",
        text(&diff.stdout)
    );
    // The session goes on; the cut step keeps its place before the next one (review 27).
    let config_text = std::fs::read_to_string(&config).unwrap();
    let args = serde_json::json!({"command": "echo again > notes.txt", "description": "x"}).to_string();
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("b2", "bash", &args)])),
        Reply::sse(chat::text("Done.")),
    ])
    .unwrap();
    let base = config_text.lines().find(|l| l.starts_with("base_url")).unwrap();
    std::fs::write(&config, config_text.replace(base, &format!("base_url = \"{}\"", server.base_url()))).unwrap();
    let out = toolshed(
        root,
        data.path(),
        &["--config", config.to_str().unwrap(), "run", "more", "--session", &id, "--yes", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let diff = toolshed(root, data.path(), &["session", "diff", &id]);
    assert!(
        text(&diff.stdout).contains("-precious") && text(&diff.stdout).contains("+again"),
        "{}",
        text(&diff.stdout)
    );
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--step", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("notes.txt")).unwrap(), "precious\n");
}

/// Review 22: a revert removed the empty directories the person had before the session (their
/// mode with them) once it had removed the files the session put in them. Only directories
/// made since the step began go now.
#[test]
fn a_revert_keeps_the_empty_directories_the_person_had() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("uploads/2024")).unwrap();
    std::fs::create_dir(root.join("logs")).unwrap();
    std::fs::set_permissions(root.join("logs"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    if std::fs::metadata(root.join("logs")).and_then(|m| m.created()).is_err() {
        eprintln!("SKIP a_revert_keeps_the_empty_directories_the_person_had: no birth times here");
        return;
    }
    std::thread::sleep(std::time::Duration::from_millis(20));
    let id = bash_session(
        root,
        data.path(),
        None,
        "echo r > logs/run.txt && echo u > uploads/2024/u.txt && mkdir -p made/by/it && echo m > made/by/it/m.txt",
    );
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!root.join("logs/run.txt").exists() && !root.join("uploads/2024/u.txt").exists());
    assert!(root.join("uploads/2024").is_dir(), "{}", text(&out.stdout));
    let mode = std::fs::metadata(root.join("logs")).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o1777, "{}", text(&out.stdout));
    assert!(!root.join("made").exists(), "what the session made goes: {}", text(&out.stdout));
}

/// Review 22: a revert printed names as they are, so a name with a newline faked a line of
/// the listing of its own. Each name stays on its line now.
#[test]
fn a_name_with_a_newline_stays_on_its_line_in_the_revert_listing() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let id = bash_session(root, data.path(), None, "printf x > \"$(printf 'new\\nrestored    fake.txt')\"");
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    let listing = text(&out.stdout);
    assert!(listing.contains("deleted     new\\nrestored    fake.txt\n"), "{listing}");
    assert!(!listing.lines().any(|l| l.starts_with("restored")), "{listing}");
}

/// Review 27: a file on disk that the snapshot just taken lacks (ignored now, or in a
/// repository with no commit) looked unchanged since the session, and a revert wrote over it,
/// with nothing kept to bring it back. Not even --force does now.
#[test]
fn a_revert_never_writes_over_a_file_undo_never_kept() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q"]);
    std::fs::write(root.join("settings.json"), "{\"old\":1}\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "base"]);
    let id = bash_session(root, data.path(), None, "rm settings.json && echo settings.json >> .gitignore");
    std::fs::write(root.join("settings.json"), "{\"mine\":\"precious\"}\n").unwrap();
    for force in [&[][..], &["--force"][..]] {
        let out = toolshed(root, data.path(), &[&["session", "revert", &id][..], force].concat());
        assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
        assert!(
            text(&out.stderr).contains("settings.json") && text(&out.stderr).contains("never kept"),
            "{}",
            text(&out.stderr)
        );
        assert_eq!(std::fs::read_to_string(root.join("settings.json")).unwrap(), "{\"mine\":\"precious\"}\n");
    }
}

/// Review 27: reverting a revert left behind the directories the first revert made, which
/// looked older than its step.
#[test]
fn reverting_a_revert_removes_the_directories_the_revert_made() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("x/y")).unwrap();
    std::fs::write(root.join("x/y/z.txt"), "z\n").unwrap();
    let id = bash_session(root, data.path(), None, "rm -r x");
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("x/y/z.txt")).unwrap(), "z\n");
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!root.join("x").exists(), "{}", text(&out.stdout));
}

/// Review 29: `--force` removed a file over the size undo keeps that the person had put in a
/// directory the revert removes; a session's commit in a nested repository, and an empty
/// directory the session made, made the revert refuse for good.
#[test]
fn a_large_file_is_never_forced_away_and_nested_commits_or_empty_directories_block_nothing() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("f"), "f\n").unwrap();
    let id = bash_session(root, data.path(), None, "rm f && mkdir -p f/empty && echo n > f/n");
    std::fs::write(root.join("f/big"), vec![b'x'; 17 * 1024 * 1024]).unwrap();
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--force", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{}{}", text(&out.stdout), text(&out.stderr));
    let refusal: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(refusal["never_kept"], serde_json::json!(["f/big"]), "{refusal}");
    assert!(root.join("f/big").exists());
    std::fs::remove_file(root.join("f/big")).unwrap();
    let out = toolshed(root, data.path(), &["session", "revert", &id]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("f")).unwrap(), "f\n");

    let sub = root.join("sub");
    std::fs::create_dir(&sub).unwrap();
    git(&sub, &["init", "-q"]);
    std::fs::write(sub.join("s.txt"), "s\n").unwrap();
    git(&sub, &["add", "."]);
    git(&sub, &["commit", "-qm", "s"]);
    let id = bash_session(
        root,
        data.path(),
        None,
        "echo x >> f && cd sub && echo t > s.txt && git -c user.email=a@b -c user.name=n commit -qam two",
    );
    let out = toolshed(root, data.path(), &["session", "revert", &id, "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_to_string(root.join("f")).unwrap(), "f\n");
    assert_eq!(std::fs::read_to_string(sub.join("s.txt")).unwrap(), "t\n", "a nested repository is never touched");
}
