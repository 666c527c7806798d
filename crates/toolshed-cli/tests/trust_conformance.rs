//! Trust conformance: the issue's attacks as the `toolshed` command runs them. Each row runs in a
//! fresh git worktree `W` beside a directory `OUT` outside it, without `--yes` and with standard
//! input from /dev/null unless the row says otherwise, and asserts that the canary survives (or
//! the call asks or is denied) and that nothing outside the worktree changed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use toolshed_llm::testing::{FakeServer, Reply, chat};

struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    out: PathBuf,
}

impl World {
    fn new(config: &str) -> World {
        // Not under /tmp: the sandbox lets commands write the temp dirs.
        let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("W");
        let out = base.join("OUT");
        for dir in [&root, &out, &base.join("home"), &root.join("src")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let git = Command::new("git").args(["init", "-q"]).arg(&root).status().unwrap();
        assert!(git.success());
        std::fs::write(root.join("x"), "canary\n").unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        std::fs::write(root.join(".env"), "API_KEY=sk-secret-canary\n").unwrap();
        std::fs::write(out.join("o.txt"), "outside canary\n").unwrap();
        let w = World { _tmp: tmp, base, root, out };
        if !config.is_empty() {
            std::fs::write(w.root.join("toolshed.toml"), w.fill(config)).unwrap();
        }
        w
    }

    /// `@W@` and `@OUT@` in `text` replaced by the directories.
    fn fill(&self, text: &str) -> String {
        text.replace("@W@", self.root.to_str().unwrap()).replace("@OUT@", self.out.to_str().unwrap())
    }

    fn toolshed(&self, args: &[&str]) -> Output {
        let args: Vec<String> = args.iter().map(|a| self.fill(a)).collect();
        Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .args(&args)
            .current_dir(&self.root)
            .env("HOME", self.base.join("home"))
            .env("XDG_CONFIG_HOME", self.base.join("home/.config"))
            .env("TOOLSHED_DATA_DIR", self.base.join("home/.data"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap()
    }

    /// Every file outside the worktree (the data directory aside) with its contents.
    fn outside(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut files = BTreeMap::new();
        let mut stack = vec![self.base.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path == self.root || path == self.base.join("home/.data") {
                    continue;
                }
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.is_dir() {
                    stack.push(path);
                } else {
                    files.insert(path.clone(), std::fs::read(&path).unwrap_or_default());
                }
            }
        }
        files
    }
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// What a row expects.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// The call was not run: it asked, and with no one to answer it was rejected.
    Asked,
    /// A rule denied it.
    Denied,
    /// It ran but could not do the harm (the sandbox, the tool itself); the canaries decide.
    Contained,
}

struct Row {
    name: &'static str,
    config: &'static str,
    args: &'static [&'static str],
    expect: Expect,
    /// Text that must not appear in the output (a secret).
    hidden: Option<&'static str>,
}

const ROWS: &[Row] = &[
    // 2. custom tools ask in every entry point: see entry_points.rs (call, mcp serve, run, chat).
    // 3. plan mode yields to no project rule.
    Row {
        name: "3: plan edits with edit = allow",
        config: "[permission]\nedit = \"allow\"\n",
        args: &["call", "write", r#"{"file_path":"x","content":"gone"}"#, "--agent", "plan"],
        expect: Expect::Denied,
        hidden: None,
    },
    Row {
        name: "3: plan edits with edit = ask, under --yes",
        config: "[permission]\nedit = \"ask\"\n",
        args: &[
            "call",
            "edit",
            r#"{"file_path":"x","old_string":"canary","new_string":"gone"}"#,
            "--agent",
            "plan",
            "--yes",
        ],
        expect: Expect::Denied,
        hidden: None,
    },
    Row {
        name: "3: plan runs rm with a bash allow-all and rm deny",
        config: "[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\" }\n",
        args: &["call", "bash", r#"{"command":"rm x"}"#, "--agent", "plan", "--yes"],
        expect: Expect::Denied,
        hidden: None,
    },
    Row {
        name: "3: plan applies a patch with edit = allow",
        config: "[permission]\nedit = \"allow\"\n",
        args: &[
            "call",
            "apply_patch",
            "*** Begin Patch\n*** Delete File: x\n*** End Patch",
            "--agent",
            "plan",
            "--yes",
        ],
        expect: Expect::Denied,
        hidden: None,
    },
    // 9. the model cannot lift its own limits.
    Row {
        name: "9: write toolshed.toml",
        config: "",
        args: &[
            "call",
            "write",
            r#"{"file_path":"toolshed.toml","content":"[sandbox]\nmode = \"full-access\"\n[permission]\n\"*\" = \"allow\"\n"}"#,
        ],
        expect: Expect::Asked,
        hidden: None,
    },
    Row {
        name: "9: write a custom tool",
        config: "",
        args: &[
            "call",
            "write",
            r#"{"file_path":".toolshed/tools/evil.toml","content":"description = \"x\"\ncommand = [\"rm\", \"x\"]\n"}"#,
        ],
        expect: Expect::Asked,
        hidden: None,
    },
    Row {
        name: "9: write an OpenCode tool",
        config: "",
        args: &["call", "write", r#"{"file_path":".opencode/tools/evil.ts","content":"export default {}"}"#],
        expect: Expect::Asked,
        hidden: None,
    },
    Row {
        name: "9: write a git hook",
        config: "",
        args: &["call", "write", r##"{"file_path":".git/hooks/pre-commit","content":"#!/bin/sh\nrm x\n"}"##],
        expect: Expect::Asked,
        hidden: None,
    },
    Row {
        name: "9: edit git's config",
        config: "",
        args: &[
            "call",
            "edit",
            r#"{"file_path":".git/config","old_string":"[core]","new_string":"[core]\n\tfsmonitor = rm x"}"#,
        ],
        expect: Expect::Asked,
        hidden: None,
    },
    Row {
        name: "9: a skill through apply_patch",
        config: "",
        args: &[
            "call",
            "apply_patch",
            "*** Begin Patch\n*** Add File: .claude/skills/s/SKILL.md\n+---\n+name: s\n+---\n*** End Patch",
        ],
        expect: Expect::Asked,
        hidden: None,
    },
    Row {
        name: "9: write the user's config through an allowed external directory",
        config: "[permission]\nexternal_directory = { \"*\" = \"allow\" }\n",
        args: &[
            "call",
            "write",
            r#"{"file_path":"../home/.config/toolshed/config.toml","content":"[permission]\n\"*\" = \"allow\"\n"}"#,
        ],
        expect: Expect::Asked,
        hidden: None,
    },
    // 10. the read rules apply to every file a tool shows the contents of.
    Row {
        name: "10: grep the worktree for a secret",
        config: "",
        args: &["call", "grep", r#"{"pattern":"API_KEY"}"#],
        expect: Expect::Contained,
        hidden: Some("sk-secret-canary"),
    },
    Row {
        name: "10: grep the .env file itself",
        config: "",
        args: &["call", "grep", r#"{"pattern":"API_KEY","path":".env"}"#],
        expect: Expect::Asked,
        hidden: Some("sk-secret-canary"),
    },
    Row {
        name: "10: grep counts in .env",
        config: "",
        args: &["call", "grep", r#"{"pattern":"sk-","output_mode":"count"}"#],
        expect: Expect::Contained,
        hidden: Some(".env: 1"),
    },
    // 11. --yes never lifts the sandbox.
    Row {
        name: "11: --yes and a write outside the worktree the analysis cannot see",
        config: "",
        args: &["call", "bash", r#"{"command":"d=@OUT@; echo pwned > $d/o.txt"}"#, "--yes"],
        expect: Expect::Contained,
        hidden: None,
    },
    Row {
        name: "11: --yes with network blocked",
        config: "[sandbox]\nblock_network = true\n",
        args: &["call", "bash", r#"{"command":"d=$(dirname $PWD)/OUT; touch $d/new; cp x $d/o.txt"}"#, "--yes"],
        expect: Expect::Contained,
        hidden: None,
    },
    // 12. patterns that climb out of the worktree match what they name.
    Row {
        name: "12: read ../OUT with ../* denied",
        config: "[permission]\nexternal_directory = { \"*\" = \"allow\" }\nread = { \"../*\" = \"deny\" }\n",
        args: &["call", "read", r#"{"file_path":"../OUT/o.txt"}"#],
        expect: Expect::Denied,
        hidden: Some("outside canary"),
    },
    Row {
        name: "12: read an absolute path with ../OUT/* denied",
        config: "[permission]\nexternal_directory = { \"*\" = \"allow\" }\nread = { \"./../OUT/*\" = \"deny\" }\n",
        args: &["call", "read", r#"{"file_path":"@OUT@/o.txt"}"#],
        expect: Expect::Denied,
        hidden: Some("outside canary"),
    },
    Row {
        name: "12: grep ../OUT with ../* denied",
        config: "[permission]\nexternal_directory = { \"*\" = \"allow\" }\ngrep = { \"../*\" = \"deny\" }\n",
        args: &["call", "grep", r#"{"pattern":"canary","path":"../OUT"}"#],
        expect: Expect::Denied,
        hidden: Some("outside canary"),
    },
    Row {
        name: "12: write ../OUT with edit ../* denied, under --yes",
        config: "[permission]\nexternal_directory = { \"*\" = \"allow\" }\nedit = { \"../*\" = \"deny\" }\n",
        args: &["call", "write", r#"{"file_path":"../OUT/o.txt","content":"pwned"}"#, "--yes"],
        expect: Expect::Denied,
        hidden: None,
    },
];

fn sandbox_available() -> bool {
    Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .arg("doctor")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("enforced with Landlock"))
        .unwrap_or(false)
}

#[test]
fn every_attack_is_asked_denied_or_contained() {
    let sandboxed = sandbox_available();
    let mut checked = 0;
    for row in ROWS {
        if row.name.starts_with("11:") && !sandboxed {
            eprintln!("skipped (no Landlock here): {}", row.name);
            continue;
        }
        let w = World::new(row.config);
        let before = w.outside();
        let out = w.toolshed(row.args);
        let said = text(&out);
        match row.expect {
            Expect::Asked => {
                assert!(said.contains("was not granted"), "{}: expected an ask, got: {said}", row.name);
                assert_eq!(out.status.code(), Some(1), "{}: {said}", row.name);
            }
            Expect::Denied => {
                assert!(said.contains("Permission denied"), "{}: expected a deny, got: {said}", row.name);
                assert_eq!(out.status.code(), Some(1), "{}: {said}", row.name);
            }
            Expect::Contained => {}
        }
        assert_eq!(
            std::fs::read_to_string(w.root.join("x")).unwrap(),
            "canary\n",
            "{}: the canary changed: {said}",
            row.name
        );
        assert_eq!(w.outside(), before, "{}: something outside the worktree changed: {said}", row.name);
        for (file, text) in [("toolshed.toml", "full-access"), (".git/hooks/pre-commit", "rm x")] {
            let written = std::fs::read_to_string(w.root.join(file)).unwrap_or_default();
            assert!(!written.contains(text), "{}: {file} was written: {said}", row.name);
        }
        for file in [".toolshed/tools/evil.toml", ".opencode/tools/evil.ts", ".claude/skills/s/SKILL.md"] {
            assert!(!w.root.join(file).exists(), "{}: {file} was written: {said}", row.name);
        }
        if let Some(hidden) = row.hidden {
            assert!(!said.contains(hidden), "{}: the output shows `{hidden}`: {said}", row.name);
        }
        checked += 1;
    }
    eprintln!("{checked} trust conformance rows");
}

/// 3: `tools --agent plan` never lists the editing tools, and `run --agent plan` never edits,
/// whatever `[permission] edit` says.
#[test]
fn plan_mode_never_sees_or_runs_editing_tools() {
    for edit in ["allow", "ask"] {
        let server = FakeServer::start(vec![
            Reply::sse(chat::tool_calls(&[("c1", "write", r#"{"file_path":"x","content":"gone"}"#)])),
            Reply::sse(chat::tool_calls(&[("c2", "bash", r#"{"command":"echo gone > x"}"#)])),
            Reply::sse(chat::text("done")),
        ])
        .unwrap();
        let config = format!(
            "model = \"fake/m\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nedit = \"{edit}\"\n",
            server.base_url()
        );
        let w = World::new(Box::leak(config.into_boxed_str()));
        let listed = String::from_utf8_lossy(&w.toolshed(&["tools", "--agent", "plan", "--all"]).stdout).into_owned();
        for tool in ["edit", "write", "apply_patch"] {
            assert!(!listed.contains(&format!("\"name\": \"{tool}\"")), "edit = {edit}: plan lists {tool}");
        }
        let out = w.toolshed(&["run", "change x", "--agent", "plan", "--yes"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(std::fs::read_to_string(w.root.join("x")).unwrap(), "canary\n", "edit = {edit}: {}", text(&out));
    }
}

/// 9: the protected key can be allowed by the user, and then the same write goes through.
#[test]
fn a_user_may_allow_protected_writes() {
    let w = World::new("[permission]\nprotected = \"allow\"\n");
    let out = w.toolshed(&[
        "call",
        "write",
        r#"{"file_path":".toolshed/tools/mine.toml","content":"description = \"Mine.\"\ncommand = [\"true\"]\n"}"#,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(w.root.join(".toolshed/tools/mine.toml").exists());
}
