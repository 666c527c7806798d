//! The project's own files (`toolshed.toml`, custom tool directories) apply only as a person
//! accepted them with `toolshed trust`: a file left behind by a process the model started (which
//! outlives every check of the command that started it) changes nothing until then. Real
//! processes, with the record in a data directory outside the worktree, and no
//! `TOOLSHED_TRUST_PROJECT`.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "pty/mod.rs"]
mod pty;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
    /// A file outside the worktree, for `external_directory`.
    outside: PathBuf,
}

fn project() -> Project {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("proj");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let outside = base.join("outside.txt");
    std::fs::write(&outside, "outside text\n").unwrap();
    Project { _tmp: tmp, data: base.join("data"), root, outside }
}

impl Project {
    fn toolshed(&self, args: &[&str]) -> Output {
        let mut all = vec!["--root", self.root.to_str().unwrap()];
        all.extend_from_slice(args);
        self.toolshed_in(&self.root, &all)
    }

    /// `toolshed ARGS` started in `dir` as a shell would start it there (`$PWD` says `dir`), which
    /// finds its worktree itself.
    fn toolshed_in(&self, dir: &Path, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .args(args)
            .current_dir(dir)
            .env("PWD", dir)
            .env_remove("TOOLSHED_TRUST_PROJECT")
            .env("XDG_CONFIG_HOME", self.root.parent().unwrap().join("xdg"))
            .env("TOOLSHED_DATA_DIR", &self.data)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// `call read` of the file outside the worktree: (exit code, stdout, stderr).
    fn read_outside(&self, path: &Path) -> (i32, String, String) {
        let args = serde_json::json!({ "file_path": path }).to_string();
        let out = self.toolshed(&["call", "read", &args]);
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const LOOSE: &str = "[permission]\nexternal_directory = \"allow\"\n";

#[test]
fn a_detached_process_is_stopped_and_a_config_left_behind_applies_only_once_accepted() {
    let p = project();
    // A script the model wrote (`write` may create it), then a command that returns at once and
    // leaves a process behind that would write toolshed.toml a moment later, after every check
    // of the command is over: it is stopped when the command ends.
    let body = LOOSE.replace('"', "\\\"").replace('\n', "\\n");
    p.write("later.sh", &format!("sleep 1\nprintf \"{body}\" > \"$(printf 'toolshed.%s' toml)\"\n"));
    let script = "setsid nohup sh later.sh >/dev/null 2>&1 < /dev/null & echo started";
    let args = serde_json::json!({ "command": script }).to_string();
    let out = p.toolshed(&["call", "bash", &args, "--yes"]);
    assert!(text(&out.stdout).contains("started"), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("stopped when it ended"), "{}", text(&out.stdout));
    std::thread::sleep(Duration::from_millis(2500));
    assert!(std::fs::read_to_string(p.root.join("toolshed.toml")).map_or(true, |t| t != LOOSE));
    // A file left behind some other way (a process that escaped, anyone writing the worktree)
    // is there, and it is not obeyed: reading outside still asks (no one to ask).
    std::fs::write(p.root.join("toolshed.toml"), LOOSE).unwrap();
    let (code, stdout, stderr) = p.read_outside(&p.outside);
    assert_ne!(code, 0, "{stdout}{stderr}");
    assert!(!stdout.contains("outside text"), "{stdout}");
    assert!(stderr.contains("is not applied") && stderr.contains("toolshed trust"), "{stderr}");

    // `toolshed trust` without a terminal shows it and accepts nothing.
    let out = p.toolshed(&["trust"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("+external_directory = \"allow\""), "{}", text(&out.stdout));
    assert_ne!(p.read_outside(&p.outside).0, 0);

    // Accepted: it applies, with no notice.
    let out = p.toolshed(&["trust", "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (code, stdout, stderr) = p.read_outside(&p.outside);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("outside text") && !stderr.contains("toolshed trust"), "{stdout}{stderr}");
    let out = p.toolshed(&["trust"]);
    assert!(out.status.success() && text(&out.stdout).contains("accepted as it is"), "{}", text(&out.stdout));

    // `--forget`: not applied again.
    assert!(p.toolshed(&["trust", "--forget"]).status.success());
    assert_ne!(p.read_outside(&p.outside).0, 0);
}

#[test]
fn a_changed_config_keeps_the_accepted_version_denials_included() {
    let p = project();
    let secret = p.root.parent().unwrap().join("keys.secret");
    std::fs::write(&secret, "the secret\n").unwrap();
    let accepted = format!("{LOOSE}read = {{ \"*\" = \"allow\", \"*.secret\" = \"deny\" }}\n");
    p.write("toolshed.toml", &accepted);
    assert!(p.toolshed(&["trust", "--yes"]).status.success());
    let (code, stdout, _) = p.read_outside(&secret);
    assert_ne!(code, 0, "denied: {stdout}");
    assert_eq!(p.read_outside(&p.outside).0, 0);

    // The deny removed, behind the person's back: the accepted file still decides.
    p.write("toolshed.toml", LOOSE);
    let (code, stdout, stderr) = p.read_outside(&secret);
    assert_ne!(code, 0, "{stdout}");
    assert!(!stdout.contains("the secret"), "{stdout}");
    assert!(stderr.contains("changed since it was accepted"), "{stderr}");
    let doctor = text(&p.toolshed(&["doctor"]).stdout);
    assert!(doctor.starts_with("project: warning\n") && doctor.contains("changed since it was accepted"), "{doctor}");
    // So does deleting the file.
    std::fs::remove_file(p.root.join("toolshed.toml")).unwrap();
    let (code, _, stderr) = p.read_outside(&secret);
    assert_ne!(code, 0);
    assert!(stderr.contains("was removed"), "{stderr}");
    assert_eq!(p.read_outside(&p.outside).0, 0, "the accepted external_directory rule still applies");

    // `toolshed trust` shows the difference before accepting it.
    p.write("toolshed.toml", LOOSE);
    let out = p.toolshed(&["trust"]);
    assert!(
        text(&out.stdout).contains("-read = { \"*\" = \"allow\", \"*.secret\" = \"deny\" }"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_tool_directory_loads_only_as_accepted_scripts_beside_it_included() {
    let p = project();
    p.write(".toolshed/tools/hello.toml", "description = \"Says hello\"\ncommand = [\"sh\", \"{dir}/hello.sh\"]\n");
    p.write(".toolshed/tools/hello.sh", "echo hello\n");
    let names = |p: &Project| {
        let out = p.toolshed(&["tools"]);
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let names: Vec<String> =
            list.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
        (names, text(&out.stderr))
    };
    let (list, stderr) = names(&p);
    assert!(!list.contains(&"hello".to_string()), "{list:?}");
    assert!(stderr.contains(".toolshed/tools are not loaded"), "{stderr}");

    assert!(p.toolshed(&["trust", "--yes"]).status.success());
    let (list, stderr) = names(&p);
    assert!(list.contains(&"hello".to_string()), "{list:?} {stderr}");
    let out = p.toolshed(&["call", "hello", "{}", "--yes"]);
    assert_eq!(text(&out.stdout).trim_end().lines().next(), Some("hello"), "{}", text(&out.stderr));

    // The script the manifest runs changes: the directory is not the accepted one any more.
    p.write(".toolshed/tools/hello.sh", "echo changed\n");
    let (list, _) = names(&p);
    assert!(!list.contains(&"hello".to_string()), "{list:?}");
    let out = p.toolshed(&["call", "hello", "{}", "--yes"]);
    assert!(!text(&out.stdout).contains("changed"), "{}", text(&out.stdout));
}

#[test]
fn init_accepts_its_file_and_mcp_import_accepts_nothing() {
    let p = project();
    let out = p.toolshed(&["init"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = p.toolshed(&["config", "show"]);
    assert!(!text(&out.stderr).contains("toolshed trust"), "{}", text(&out.stderr));

    // A servers file the model may have written: its commands start only once accepted.
    let servers = p.root.join(".mcp.json");
    std::fs::write(
        &servers,
        r#"{"mcpServers": {"docs": {"command": "sh", "args": ["-c", "echo started > started.txt"]}}}"#,
    )
    .unwrap();
    let out = p.toolshed(&["mcp", "import", servers.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("toolshed trust"), "{}", text(&out.stdout));
    let out = p.toolshed(&["tools"]);
    assert!(text(&out.stderr).contains("changed since it was accepted"), "{}", text(&out.stderr));
    assert!(!p.root.join("started.txt").exists(), "an unaccepted server was started");
    let out = p.toolshed(&["trust"]);
    assert!(text(&out.stdout).contains("+[mcp.docs]"), "{}", text(&out.stdout));
}

/// A newcomer who follows `init`, writes a model and a typo into the file and runs: told that
/// the file must be accepted (not to set a model the file already sets), and of the typo now.
#[test]
fn an_edited_file_not_yet_accepted_is_named_when_no_model_applies_and_its_errors_are_said() {
    let p = project();
    let out = p.toolshed(&["init"]);
    assert!(text(&out.stdout).contains("`toolshed trust`"), "{}", text(&out.stdout));
    let file = p.root.join("toolshed.toml");
    let mut edited = std::fs::read_to_string(&file).unwrap();
    edited.push_str("model = \"local/m\"\n[provider.local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\n[sesion]\nmax_steps = 3\n");
    std::fs::write(&file, edited).unwrap();
    let out = p.toolshed(&["run", "hi"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(said.contains("unknown field `sesion`"), "{said}");
    assert!(
        said.contains("no model is configured in the settings that apply") && said.contains("run `toolshed trust`"),
        "{said}"
    );
    assert!(!said.contains("set `model = "), "{said}");
}

#[test]
fn what_trust_shows_is_whole_and_escaped_and_broken_config_is_refused() {
    let p = project();
    let long = format!("echo formatted{}; echo pwned", " ".repeat(3000));
    p.write(".toolshed/tools/t.sh", &format!("{long}\n{}\u{0}nul\n\u{1b}[1Ahidden\n", "line\n".repeat(300)));
    let out = p.toolshed(&["trust"]);
    let shown = text(&out.stdout);
    assert!(shown.contains("; echo pwned") && shown.lines().count() > 300, "cut: {}", shown.len());
    assert!(!shown.contains('\u{1b}') && !shown.contains('\u{0}'), "control characters shown raw");
    // A toolshed.toml that does not load is not accepted (every command would stop on it);
    // the tool directory still is.
    p.write("toolshed.toml", "[sandbox]\nmode = \"bogus\"\n");
    let out = p.toolshed(&["trust", "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("cannot be accepted as it is"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Accepted as they are now: .toolshed/tools."), "{}", text(&out.stdout));
}

#[test]
fn the_record_is_protected_from_tools_and_from_sandboxed_commands() {
    let p = project();
    p.write("toolshed.toml", LOOSE);
    assert!(p.toolshed(&["trust", "--yes"]).status.success());
    let records = p.data.join("trust");
    let record = std::fs::read_dir(&records).unwrap().next().unwrap().unwrap().path();
    let before = std::fs::read(&record).unwrap();
    // The write tool: `protected` is the person's to grant, not `--yes`'s.
    let args = serde_json::json!({ "file_path": record, "content": "{}" }).to_string();
    let out = p.toolshed(&["call", "write", &args, "--yes"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // A sandboxed command (the data directory lies under a temp dir the sandbox may write).
    let script = format!("echo '{{}}' > '{}'; echo '{{}}' > '{}/other.json'", record.display(), records.display());
    let args = serde_json::json!({ "command": script }).to_string();
    let _ = p.toolshed(&["call", "bash", &args, "--yes"]);
    assert_eq!(std::fs::read(&record).unwrap(), before, "the record was rewritten");
    assert!(!records.join("other.json").exists(), "a record was added");
}

#[test]
fn a_git_directory_planted_in_a_subdirectory_keeps_the_accepted_project_its_worktree() {
    let p = project();
    let secret = p.root.parent().unwrap().join("keys.secret");
    std::fs::write(&secret, "the secret\n").unwrap();
    p.write("sub/prod/db.key", "PROD-KEY\n");
    let rules = "read = { \"*\" = \"allow\", \"*.secret\" = \"deny\", \"sub/prod/*\" = \"deny\" }\nbash = \"allow\"\n";
    p.write("toolshed.toml", &format!("{LOOSE}{rules}"));
    assert!(p.toolshed(&["trust", "--yes"]).status.success());
    // What a command could leave behind: `sub` made a repository of its own, with a config that
    // would lift the denials.
    std::fs::create_dir_all(p.root.join("sub/.git")).unwrap();
    p.write("sub/toolshed.toml", "[permission]\nexternal_directory = \"allow\"\nread = \"allow\"\n");
    let sub = p.root.join("sub");
    let read = |path: &str| {
        let args = serde_json::json!({ "file_path": path }).to_string();
        let out = p.toolshed_in(&sub, &["call", "read", &args]);
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    };
    // The project's rules, with the paths they were written for.
    for path in [secret.to_str().unwrap(), "prod/db.key"] {
        let (code, stdout, _) = read(path);
        assert_ne!(code, 0, "{path}: the accepted project's deny must hold in the nested repository: {stdout}");
        assert!(!stdout.contains("the secret") && !stdout.contains("PROD-KEY"), "{stdout}");
    }
    let (code, _, stderr) = read(p.outside.to_str().unwrap());
    assert_eq!(code, 0, "the accepted project's other settings apply: {stderr}");
    let how = format!("toolshed --root {} trust", sub.display());
    assert!(stderr.contains("is a git repository inside") && stderr.contains(&how), "{stderr}");
    // The project's own `.git` stays read-only for commands started there.
    let before = std::fs::read_dir(p.root.join(".git")).unwrap().count();
    let script = "python3 -c \"open('../.git/config', 'a').write('[core]\\n')\"; echo done";
    let args = serde_json::json!({ "command": script }).to_string();
    let out = p.toolshed_in(&sub, &["call", "bash", &args]);
    assert!(!p.root.join(".git/config").exists(), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(std::fs::read_dir(p.root.join(".git")).unwrap().count(), before);
    let doctor = text(&p.toolshed_in(&sub, &["doctor"]).stdout);
    assert!(doctor.starts_with("project: warning\n") && doctor.contains("is a git repository inside"), "{doctor}");
    // A person who wants the repository on its own says so, told what that gives up; then its
    // own accepted files apply.
    let out = p.toolshed_in(&sub, &["--root", sub.to_str().unwrap(), "trust"]);
    assert!(!out.status.success());
    assert!(text(&out.stdout).contains("no longer apply there"), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains(&format!("toolshed --root {} trust --yes", sub.display())),
        "{}",
        text(&out.stderr)
    );
    let out = p.toolshed_in(&sub, &["--root", sub.to_str().unwrap(), "trust", "--yes"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (code, stdout, _) = read(secret.to_str().unwrap());
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("the secret"));
}

#[test]
fn a_git_directory_planted_above_an_accepted_project_does_not_move_its_worktree() {
    // A project without a `.git` of its own, in a directory every sandboxed command may write
    // (a temp dir): a `.git` planted above it would make that directory the worktree.
    let p = project();
    std::fs::remove_dir_all(p.root.join(".git")).unwrap();
    let secret = p.root.parent().unwrap().join("keys.secret");
    std::fs::write(&secret, "the secret\n").unwrap();
    p.write("toolshed.toml", &format!("{LOOSE}read = {{ \"*\" = \"allow\", \"*.secret\" = \"deny\" }}\n"));
    let inner = p.root.join("src");
    std::fs::create_dir_all(&inner).unwrap();
    assert!(p.toolshed_in(&p.root, &["trust", "--yes"]).status.success());
    std::fs::create_dir_all(p.root.parent().unwrap().join(".git")).unwrap();
    std::fs::write(p.root.parent().unwrap().join("toolshed.toml"), "[permission]\nread = \"allow\"\n").unwrap();
    for dir in [&p.root, &inner] {
        let args = serde_json::json!({ "file_path": &secret }).to_string();
        let out = p.toolshed_in(dir, &["call", "read", &args]);
        assert_ne!(out.status.code(), Some(0), "from {}: {}", dir.display(), text(&out.stdout));
        assert!(!text(&out.stdout).contains("the secret"));
        let args = serde_json::json!({ "file_path": &p.outside }).to_string();
        assert_eq!(p.toolshed_in(dir, &["call", "read", &args]).status.code(), Some(0), "the accepted settings apply");
    }
}

#[test]
fn a_link_or_a_move_that_takes_the_shells_directory_out_of_an_accepted_project_stops_toolshed() {
    let p = project();
    p.write("toolshed.toml", &format!("{LOOSE}read = {{ \"*.secret\" = \"deny\" }}\n"));
    assert!(p.toolshed(&["trust", "--yes"]).status.success());
    let elsewhere = p.root.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("sub")).unwrap();
    // A link a command made in the project, into which the person changes directory.
    std::os::unix::fs::symlink(&elsewhere, p.root.join("docs")).unwrap();
    let out = p.toolshed_in(&p.root.join("docs"), &["call", "list", "{}"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("outside it"), "{}", text(&out.stderr));
    // A directory moved away under the shell: `$PWD` names where it was.
    let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .args(["call", "list", "{}"])
        .current_dir(elsewhere.join("sub"))
        .env("PWD", p.root.join("a/sub"))
        .env_remove("TOOLSHED_TRUST_PROJECT")
        .env("XDG_CONFIG_HOME", p.root.parent().unwrap().join("xdg"))
        .env("TOOLSHED_DATA_DIR", &p.data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    // `--root` says where to work; a `$PWD` inherited from elsewhere is not a move.
    assert!(
        p.toolshed_in(&p.root.join("docs"), &["--root", elsewhere.to_str().unwrap(), "call", "list", "{}"])
            .status
            .success()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .args(["call", "list", "{}"])
        .current_dir(&elsewhere)
        .env("PWD", &p.root)
        .env("TOOLSHED_DATA_DIR", &p.data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    // In a repository no one accepted, the same link is refused; a link to a repository of its
    // own (`~/code -> /data/code`, entering `~/code/proj`) is not.
    let plain = p.root.parent().unwrap().join("plain");
    std::fs::create_dir_all(plain.join(".git")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, plain.join("docs")).unwrap();
    let out = p.toolshed_in(&plain.join("docs"), &["call", "list", "{}"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("a git worktree"), "{}", text(&out.stderr));
    std::fs::create_dir_all(elsewhere.join("proj/.git")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, plain.join("code")).unwrap();
    let out = p.toolshed_in(&plain.join("code/proj"), &["call", "list", "{}"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // `/` is never the worktree unless named.
    let out = p.toolshed_in(Path::new("/"), &["call", "list", "{}"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("will not take / as the worktree"), "{}", text(&out.stderr));
}

#[test]
fn a_git_directory_in_a_temp_dir_itself_does_not_make_it_the_worktree() {
    // `base` plays `/tmp` (through TMPDIR): a sandboxed command may write `.git` and
    // `toolshed.toml` there, above a project that has no `.git` of its own.
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join(".git")).unwrap();
    std::fs::write(base.join("toolshed.toml"), "model = \"planted/model\"\n").unwrap();
    let project = base.join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let show = |tmpdir: &Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .args(["config", "show", "--json"])
            .current_dir(&project)
            .env("TMPDIR", tmpdir)
            .env("TOOLSHED_TRUST_PROJECT", "1")
            .env("XDG_CONFIG_HOME", base.join("xdg"))
            .env("TOOLSHED_DATA_DIR", base.join("data"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        text(&out.stdout)
    };
    assert!(!show(&base).contains("planted/model"), "the temp dir's toolshed.toml applied: {}", show(&base));
    // Elsewhere, the nearest `.git` above is still the worktree.
    assert!(show(Path::new("/nonexistent-tmp")).contains("planted/model"));
}

#[test]
fn run_at_a_terminal_shows_what_changed_and_accepts_on_yes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("toolshed.toml"), LOOSE).unwrap();
    // A control sequence in a tool's script would clear the screen if printed raw.
    std::fs::create_dir_all(root.join(".toolshed/tools")).unwrap();
    std::fs::write(root.join(".toolshed/tools/run.sh"), "# \u{1b}[2Jcleared\n").unwrap();
    let off = [("TOOLSHED_TRUST_PROJECT", "0")];
    let mut term = pty::Terminal::start_with(&root, &["run", "hello"], &off);
    let screen = term.wait_for("[y/N]", Duration::from_secs(20));
    assert!(screen.contains("toolshed.toml — new: never accepted"), "{screen}");
    assert!(screen.contains("+external_directory = \"allow\""), "{screen}");
    assert!(screen.contains("# \\e[2Jcleared"), "escapes shown: {screen}");
    // A line, as the terminal driver hands it over (this pseudo-terminal does not turn Enter's
    // carriage return into one).
    term.type_text("y\n");
    let screen = term.wait_for("no model is configured", Duration::from_secs(20));
    assert!(screen.contains("Accepted as they are now: toolshed.toml, .toolshed/tools."), "{screen}");
    term.wait_exit(Duration::from_secs(10));

    // Accepted: the next run asks nothing and prints no notice.
    let mut term = pty::Terminal::start_with(&root, &["run", "hello"], &off);
    let screen = term.wait_for("no model is configured", Duration::from_secs(20));
    assert!(!screen.contains("[y/N]") && !screen.contains("toolshed trust"), "{screen}");
    term.wait_exit(Duration::from_secs(10));
}

/// Bun and zod as `.ci/run` leaves them: the `PATH` to run toolshed with, zod linked into `data`.
fn js_path(data: &Path) -> String {
    let modules = std::env::var_os("TOOLSHED_TEST_JS_MODULES")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/toolshed-ci/node_modules")))
        .unwrap();
    assert!(modules.join(".bin/bun").exists(), "the JS tool tests need Bun in {}: run .ci/run", modules.display());
    std::fs::create_dir_all(data.join("custom-tools/node_modules")).unwrap();
    std::os::unix::fs::symlink(modules.join("zod"), data.join("custom-tools/node_modules/zod")).unwrap();
    format!("{}:{}", modules.join(".bin").display(), std::env::var("PATH").unwrap())
}

/// A long-lived process (`mcp serve`) checks a custom tool's directory at each call, not only
/// when it found the tool: a script changed after that is not run until a person accepts it
/// again, which takes effect in the running process.
#[test]
fn a_tool_file_changed_while_a_server_runs_is_not_run_until_accepted_again() {
    use std::io::{BufRead, BufReader, Write};
    let p = project();
    p.write("toolshed.toml", "[permission]\nhello = \"allow\"\nadd = \"allow\"\n");
    p.write(".toolshed/tools/hello.toml", "description = \"Says hello\"\ncommand = [\"sh\", \"{dir}/hello.sh\"]\n");
    p.write(".toolshed/tools/hello.sh", "echo hello\n");
    p.write(
        ".opencode/tools/add.ts",
        "import { tool } from \"@opencode-ai/plugin\"\nimport { n } from \"./n\"\n\nexport default tool({\n  description: \"Adds n.\",\n  args: { a: tool.schema.number() },\n  async execute(args) { return String(args.a + n) },\n})\n",
    );
    p.write(".opencode/tools/n.ts", "export const n = 1\n");
    assert!(p.toolshed(&["trust", "--yes"]).status.success());
    let path = js_path(&p.data);

    let mut server = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .args(["--root", p.root.to_str().unwrap(), "mcp", "serve"])
        .current_dir(&p.root)
        .env("PWD", &p.root)
        .env_remove("TOOLSHED_TRUST_PROJECT")
        .env("XDG_CONFIG_HOME", p.root.parent().unwrap().join("xdg"))
        .env("TOOLSHED_DATA_DIR", &p.data)
        .env("PATH", &path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = server.stdin.take().unwrap();
    let mut output = BufReader::new(server.stdout.take().unwrap());
    let mut next_id = 0;
    let mut send = |method: &str, params: serde_json::Value| -> serde_json::Value {
        next_id += 1;
        let line = serde_json::json!({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params});
        writeln!(input, "{line}").unwrap();
        if method == "initialize" {
            writeln!(input, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
        }
        loop {
            let mut line = String::new();
            assert!(output.read_line(&mut line).unwrap() > 0, "the server ended");
            let reply: serde_json::Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == next_id {
                return reply;
            }
        }
    };
    let init = serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    send("initialize", init);
    let mut call = |tool: &str, args: serde_json::Value| -> String {
        let reply = send("tools/call", serde_json::json!({"name": tool, "arguments": args}));
        reply["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(call("hello", serde_json::json!({})).trim(), "hello");
    assert_eq!(call("add", serde_json::json!({"a": 41})).trim(), "42");

    // Changed behind the server's back (another process; the model's commands cannot write here).
    p.write(".toolshed/tools/hello.sh", "echo changed > changed.txt\n");
    p.write(".opencode/tools/n.ts", "export const n = 100\n");
    let refused = call("hello", serde_json::json!({}));
    assert!(refused.contains("was not run: its files changed after a person accepted them"), "{refused}");
    assert!(!p.root.join("changed.txt").exists(), "the changed script ran");
    let refused = call("add", serde_json::json!({"a": 41}));
    assert!(refused.contains("toolshed trust"), "{refused}");

    // A person accepts the new version: the running server runs it.
    assert!(p.toolshed(&["trust", "--yes"]).status.success());
    call("hello", serde_json::json!({}));
    assert!(p.root.join("changed.txt").exists(), "the accepted script did not run");
    // The JS runtime imported the helper module as it was; the new version is what runs now.
    assert_eq!(call("add", serde_json::json!({"a": 41})).trim(), "141");
    drop(input);
    server.wait().unwrap();
}
