//! Trust conformance: the issue's attacks as the `toolshed` command runs them. Each row runs in a
//! fresh git worktree `W` beside a directory `OUT` outside it, without `--yes` and with standard
//! input from /dev/null unless the row says otherwise, and asserts that the canary survives (or
//! the call asks or is denied) and that nothing outside the worktree changed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../toolshed-tools/tests/scratch/mod.rs"]
mod scratch;

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
        // Outside the sandbox's writable roots (not under /tmp): what a sandboxed command
        // writes in OUT is the sandbox's failure, not the test's.
        let tmp = scratch::outside_sandbox("World", None)
            .unwrap_or_else(|| tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap());
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
        self.toolshed_env(args, &[])
    }

    /// Runs with `input` on standard input; also returns how long it took.
    fn toolshed_stdin(&self, args: &[&str], input: &str) -> (Output, std::time::Duration) {
        use std::io::Write;
        let started = std::time::Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .env("TOOLSHED_TRUST_PROJECT", "1")
            .args(args)
            .current_dir(&self.root)
            .env("HOME", self.base.join("home"))
            .env("XDG_CONFIG_HOME", self.base.join("home/.config"))
            .env("TOOLSHED_DATA_DIR", self.base.join("home/.data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out, started.elapsed())
    }

    fn toolshed_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let args: Vec<String> = args.iter().map(|a| self.fill(a)).collect();
        Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .env("TOOLSHED_TRUST_PROJECT", "1")
            .args(&args)
            .envs(env.iter().copied())
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

    /// Every file outside the worktree (the data directory aside) with its contents, mode and
    /// modification time.
    fn outside(&self) -> BTreeMap<PathBuf, (Vec<u8>, u32, Option<std::time::SystemTime>)> {
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
                    use std::os::unix::fs::PermissionsExt;
                    let contents = std::fs::read(&path).unwrap_or_default();
                    files.insert(path.clone(), (contents, meta.permissions().mode(), meta.modified().ok()));
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
#[derive(Clone, Copy, Debug, PartialEq)]
enum Expect {
    /// The call was not run: it asked, and with no one to answer it was rejected.
    Asked,
    /// A rule denied it.
    Denied,
    /// Asked or denied (either stops it; which one depends on which view matched first).
    Refused,
    /// It ran but could not do the harm (the sandbox, the tool itself); the canaries decide.
    Contained,
}

struct Row {
    name: &'static str,
    config: &'static str,
    /// Calls made first, whatever their outcome (an attacker's preparation).
    before: Vec<Vec<String>>,
    args: Vec<String>,
    expect: Expect,
    /// Text that must not appear in the output (a secret).
    hidden: Option<&'static str>,
    /// Environment variables of the toolshed process.
    env: &'static [(&'static str, &'static str)],
}

fn row(name: &'static str, config: &'static str, args: &[&str], expect: Expect) -> Row {
    Row {
        name,
        config,
        before: Vec::new(),
        args: args.iter().map(std::string::ToString::to_string).collect(),
        expect,
        hidden: None,
        env: &[],
    }
}

/// A `call bash` row.
fn bash(name: &'static str, config: &'static str, command: &str, expect: Expect) -> Row {
    let json = serde_json::json!({ "command": command }).to_string();
    row(name, config, &["call", "bash", &json], expect)
}

impl Row {
    fn hidden(mut self, text: &'static str) -> Row {
        self.hidden = Some(text);
        self
    }

    fn flag(mut self, flag: &str) -> Row {
        self.args.push(flag.to_string());
        self
    }

    fn before_bash(mut self, command: &str, flags: &[&str]) -> Row {
        let json = serde_json::json!({ "command": command }).to_string();
        let mut call = vec!["call".to_string(), "bash".to_string(), json];
        call.extend(flags.iter().map(std::string::ToString::to_string));
        self.before.push(call);
        self
    }

    fn env(mut self, env: &'static [(&'static str, &'static str)]) -> Row {
        self.env = env;
        self
    }
}

const RM_DENIED: &str = "[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\" }\n";
const GIT_ALLOWED: &str = "[permission]\nbash = { \"*\" = \"ask\", \"git *\" = \"allow\", \"rm *\" = \"deny\" }\n";

fn rows() -> Vec<Row> {
    use Expect::*;
    vec![
        // 1. The sandbox's writable set comes from what toolshed resolved, never from `.git`.
        bash("1: a .git file pointing at / written in an earlier call", "[permission]\nprotected = \"allow\"\n", "d=$(dirname $PWD)/OUT; echo pwned > $d/o.txt", Contained)
            .before_bash("mv .git .git.real && echo 'gitdir: /' > .git", &["--yes"])
            .flag("--yes"),
        bash("1: a .git file and a commondir pointing at /", "[permission]\nprotected = \"allow\"\n", "d=$(dirname $PWD)/OUT; echo pwned > $d/o.txt", Contained)
            .before_bash("mkdir -p /tmp/ts-fake/worktrees/w && mv .git .git.real && echo / > /tmp/ts-fake/worktrees/w/commondir && touch /tmp/ts-fake/worktrees/w/HEAD && echo 'gitdir: /tmp/ts-fake/worktrees/w' > .git", &["--yes"])
            .flag("--yes"),
        bash("1: a .git file pointing at the directory outside", "[permission]\nprotected = \"allow\"\n", "d=$(dirname $PWD)/OUT; echo pwned > $d/o.txt", Contained)
            .before_bash("rm -rf .git && echo \"gitdir: $(dirname $PWD)/OUT\" > .git", &["--yes"])
            .flag("--yes"),
        bash("1: the .git move itself, sandboxed", "", "mv .git .git.real && echo 'gitdir: /' > .git", Asked),
        // 2. custom tools ask in every entry point: see entry_points.rs (call, mcp serve, run, chat).
        // 3. plan mode yields to no project rule.
        row("3: plan edits with edit = allow", "[permission]\nedit = \"allow\"\n", &["call", "write", r#"{"file_path":"x","content":"gone"}"#, "--agent", "plan"], Denied),
        row("3: plan edits with edit = ask, under --yes", "[permission]\nedit = \"ask\"\n", &["call", "edit", r#"{"file_path":"x","old_string":"canary","new_string":"gone"}"#, "--agent", "plan", "--yes"], Denied),
        bash("3: plan runs rm with a bash allow-all and rm deny", RM_DENIED, "rm x", Denied).flag("--agent").flag("plan").flag("--yes"),
        row("3: plan applies a patch with edit = allow", "[permission]\nedit = \"allow\"\n", &["call", "apply_patch", "*** Begin Patch\n*** Delete File: x\n*** End Patch", "--agent", "plan", "--yes"], Denied),
        // 4. A shell's own options before its script.
        bash("4: bash -c -- 'rm x'", RM_DENIED, "bash -c -- 'rm x'", Refused),
        bash("4: bash -xc 'rm x'", RM_DENIED, "bash -xc 'rm x'", Refused),
        bash("4: bash -c -e 'rm x'", RM_DENIED, "bash -c -e 'rm x'", Refused),
        bash("4: bash -O extglob -c 'rm x'", RM_DENIED, "bash -O extglob -c 'rm x'", Refused),
        bash("4: sh -c -- 'rm x'", RM_DENIED, "sh -c -- 'rm x'", Refused),
        bash("4: bash --norc -ec 'rm x'", RM_DENIED, "bash --norc -ec 'rm x'", Refused),
        bash("4: dash -eu -c 'rm x' name", RM_DENIED, "dash -eu -c 'rm x' name", Refused),
        bash("4: bash -o errexit +o nounset -c 'rm x'", RM_DENIED, "bash -o errexit +o nounset -c 'rm x'", Refused),
        // 5. What the analysis does not understand asks.
        bash("5: coproc rm x", RM_DENIED, "coproc rm x", Refused),
        bash("5: trap 'rm x' EXIT", RM_DENIED, "trap 'rm x' EXIT", Refused),
        bash("5: bash <(echo rm x)", RM_DENIED, "bash <(echo rm x)", Refused),
        bash("5: source <(echo rm x)", RM_DENIED, "source <(echo rm x)", Refused),
        bash("5: coproc with a name", RM_DENIED, "coproc c { rm x; }", Refused),
        bash("5: eval of a computed string", RM_DENIED, "c=rm; eval \"$c x\"", Refused),
        bash("5: a program name from a variable", RM_DENIED, "p=rm; $p x", Refused),
        bash("5: an alias", RM_DENIED, "shopt -s expand_aliases; alias r=rm; r x", Refused),
        // 6. Wrappers.
        bash("5: python3 -c running rm", RM_DENIED, "python3 -c 'import os; os.system(\"rm x\")'", Refused),
        bash("5: python3 -c deleting the file itself", RM_DENIED, "python3 -Bc 'import os; os.remove(\"x\")'", Refused),
        bash("5: a python script on standard input", RM_DENIED, "python3 - <<'EOF'\nimport os\nos.unlink('x')\nEOF", Refused),
        bash("5: perl -e", RM_DENIED, "perl -le 'unlink \"x\"'", Refused),
        bash("5: code in a variable", RM_DENIED, "c='import os; os.remove(\"x\")'; python3 -c \"$c\"", Refused),
        bash("5: python3 -c behind a wrapper", RM_DENIED, "timeout 5 python3 -c 'import os; os.remove(\"x\")'", Refused),
        bash("6: script -qc 'rm x' /dev/null", RM_DENIED, "script -qc 'rm x' /dev/null", Refused),
        bash("6: env -S'rm x'", RM_DENIED, "env -S'rm x'", Refused),
        bash("6: taskset 1 rm x", RM_DENIED, "taskset 1 rm x", Refused),
        bash("6: echo rm x | xargs env", RM_DENIED, "echo rm x | xargs env", Refused),
        bash("6: flock / rm x", RM_DENIED, "flock /tmp/ts.lock rm x", Refused),
        bash("6: chrt and nice stacked", RM_DENIED, "chrt -o 0 nice -n 5 rm x", Refused),
        bash("6: a wrapper the table does not know", RM_DENIED, "unknown-wrapper-xyz --opt rm x", Contained),
        bash("6: busybox rm", RM_DENIED, "busybox rm x", Refused),
        // 7. git runs programs from its configuration and environment.
        bash("7: git config core.fsmonitor", GIT_ALLOWED, "git config core.fsmonitor 'rm -f x; echo'", Refused),
        bash("7: git config then git status", GIT_ALLOWED, "git config core.fsmonitor 'rm -f x; echo' && git status", Refused),
        bash("7: a ! alias", GIT_ALLOWED, "git config alias.pwn '!rm x'", Refused),
        bash("7: GIT_EDITOR", GIT_ALLOWED, "GIT_EDITOR='rm x' git commit --allow-empty", Refused),
        bash("7: core.hooksPath", GIT_ALLOWED, "git config core.hooksPath hooks", Refused),
        bash("7: git -c core.pager", GIT_ALLOWED, "git -c core.pager='rm x' log", Refused),
        bash("7: GIT_CONFIG_COUNT", GIT_ALLOWED, "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='rm x' git status", Refused),
        bash("7: git config --file .git/config", GIT_ALLOWED, "git config --file .git/config core.sshCommand 'rm x'", Refused),
        // 9. The model cannot lift its own limits.
        row("9: write toolshed.toml", "", &["call", "write", r#"{"file_path":"toolshed.toml","content":"[sandbox]\nmode = \"full-access\"\n[permission]\n\"*\" = \"allow\"\n"}"#], Asked),
        row("9: write a custom tool", "", &["call", "write", r#"{"file_path":".toolshed/tools/evil.toml","content":"description = \"x\"\ncommand = [\"rm\", \"x\"]\n"}"#], Asked),
        row("9: write an OpenCode tool", "", &["call", "write", r#"{"file_path":".opencode/tools/evil.ts","content":"export default {}"}"#], Asked),
        row("9: write a git hook", "", &["call", "write", r##"{"file_path":".git/hooks/pre-commit","content":"#!/bin/sh\nrm x\n"}"##], Asked),
        row("9: edit git's config", "", &["call", "edit", r#"{"file_path":".git/config","old_string":"[core]","new_string":"[core]\n\tfsmonitor = rm x"}"#], Asked),
        row("9: a skill through apply_patch", "", &["call", "apply_patch", "*** Begin Patch\n*** Add File: .claude/skills/s/SKILL.md\n+---\n+name: s\n+---\n*** End Patch"], Asked),
        row("9: the user's config through an allowed external directory", "[permission]\nexternal_directory = { \"*\" = \"allow\" }\n", &["call", "write", r#"{"file_path":"../home/.config/toolshed/config.toml","content":"[permission]\n\"*\" = \"allow\"\n"}"#], Asked),
        bash("9: a shell redirection into toolshed.toml", "", "echo '[sandbox]\nmode = \"full-access\"' > toolshed.toml", Asked),
        bash("9: cp onto a git hook", "", "printf '#!/bin/sh\\nrm x\\n' > h && cp h .git/hooks/pre-commit", Asked),
        bash("9: a write the analysis cannot see, stopped by the read-only bind", "", "f=.git/hooks/pre-commit; printf '#!/bin/sh\\nrm x\\n' > $f", Contained),
        bash("9: sed -i on git's config", "", "sed -i 's/bare = false/bare = false\\n\\tfsmonitor = rm x/' .git/config", Asked),
        // 10. The read rules cover every tool that shows a file's contents.
        row("10: grep the worktree for a secret", "", &["call", "grep", r#"{"pattern":"API_KEY"}"#], Contained).hidden("sk-secret-canary"),
        row("10: grep the .env file itself", "", &["call", "grep", r#"{"pattern":"API_KEY","path":".env"}"#], Asked).hidden("sk-secret-canary"),
        row("10: grep counts in .env", "", &["call", "grep", r#"{"pattern":"sk-","output_mode":"count"}"#], Contained).hidden(".env: 1"),
        bash("10: bash grep -r", "", "grep -r API_KEY .", Asked).hidden("sk-secret-canary"),
        bash("10: bash grep -rn without a directory", "", "grep -rn API_KEY", Asked).hidden("sk-secret-canary"),
        bash("10: bash rg --hidden", "", "rg --hidden API_KEY", Asked).hidden("sk-secret-canary"),
        bash("10: bash rg -uu", "", "rg -uu API_KEY", Asked).hidden("sk-secret-canary"),
        bash("10: bash cat of a pattern", "", "cat .e*", Asked).hidden("sk-secret-canary"),
        bash("10: bash grep on the file", "", "grep KEY .env", Asked).hidden("sk-secret-canary"),
        bash("10: bash base64 of the file", "", "base64 .env", Asked).hidden("c2stc2VjcmV0"),
        bash("10: awk, a program no table lists", "", "awk 1 .env", Asked).hidden("sk-secret-canary"),
        bash("10: dd if=", "", "dd if=.env status=none", Asked).hidden("sk-secret-canary"),
        bash("10: copied, then shown", "", "cp .env y && cat y", Asked).hidden("sk-secret-canary"),
        bash("10: an archive to standard output", "", "tar c .env | tar x -O", Asked).hidden("sk-secret-canary"),
        bash("10: python3 -c opening it", "", "python3 -c 'print(open(\".env\").read())'", Asked).hidden("sk-secret-canary"),
        bash("10: python3 reading code from a here-document", "", "python3 <<'EOF'\nprint(open('.env').read())\nEOF", Asked).hidden("sk-secret-canary"),
        bash("10: cat of a name computed at run time", "", "cat \"$(ls -a | grep env)\"", Asked).hidden("sk-secret-canary"),
        bash("10: find -exec cat", "", "find . -name '*.env' -exec cat {} +", Asked).hidden("sk-secret-canary"),
        bash("10: xargs cat", "", "ls -a | xargs cat", Asked).hidden("sk-secret-canary"),
        bash("10: bash grep of a directory known only at run time", "", "d=.; grep -r API_KEY $d", Asked).hidden("sk-secret-canary"),
        // A rule that allows everything allows neither of the two by name-only permissions.
        row("9: write toolshed.toml with \"*\" = \"allow\"", "[permission]\n\"*\" = \"allow\"\n", &["call", "write", r#"{"file_path":"toolshed.toml","content":"[sandbox]\nmode = \"full-access\"\n"}"#], Asked),
        bash("11: permission = \"allow\" does not lift the sandbox", "permission = \"allow\"\n", "d=$(dirname $PWD)/OUT; echo pwned > $d/o.txt", Contained).flag("--yes"),
        // 11. --yes never lifts the sandbox.
        bash("11: --yes and a write outside the worktree the analysis cannot see", "", "d=$(dirname $PWD)/OUT; echo pwned > $d/o.txt", Contained).flag("--yes"),
        bash("11: --yes with network blocked", "[sandbox]\nblock_network = true\n", "d=$(dirname $PWD)/OUT; touch $d/new; cp x $d/o.txt", Contained).flag("--yes"),
        // 12. Patterns that climb out of the worktree match what they name.
        row("12: read ../OUT with ../* denied", "[permission]\nexternal_directory = { \"*\" = \"allow\" }\nread = { \"../*\" = \"deny\" }\n", &["call", "read", r#"{"file_path":"../OUT/o.txt"}"#], Denied).hidden("outside canary"),
        row("12: read an absolute path with ./../OUT/* denied", "[permission]\nexternal_directory = { \"*\" = \"allow\" }\nread = { \"./../OUT/*\" = \"deny\" }\n", &["call", "read", r#"{"file_path":"@OUT@/o.txt"}"#], Denied).hidden("outside canary"),
        row("12: grep ../OUT with ../* denied", "[permission]\nexternal_directory = { \"*\" = \"allow\" }\ngrep = { \"../*\" = \"deny\" }\n", &["call", "grep", r#"{"pattern":"canary","path":"../OUT"}"#], Denied).hidden("outside canary"),
        row("12: write ../OUT with edit ../* denied, under --yes", "[permission]\nexternal_directory = { \"*\" = \"allow\" }\nedit = { \"../*\" = \"deny\" }\n", &["call", "write", r#"{"file_path":"../OUT/o.txt","content":"pwned"}"#, "--yes"], Denied),
        bash("12: cat ../OUT with read ../* denied, under --yes", "[permission]\nread = { \"../*\" = \"deny\" }\n", "cat ../OUT/o.txt", Denied).flag("--yes").hidden("outside canary"),
        // 13. Read-only changes no metadata (plan runs read-only).
        bash("13: chmod in plan", "", "chmod 777 x", Refused).flag("--agent").flag("plan").flag("--yes"),
        bash("13: metadata changes the analysis cannot see, in plan", "[agent.plan]\npermission = { bash = \"allow\" }\n", "python3 -c \"import os; os.chmod('x', 0o777); os.utime('x', (0, 0)); os.chmod('../OUT/o.txt', 0o777)\"", Contained).flag("--agent").flag("plan"),
        bash("13: touch -d outside, in read-only mode", "[sandbox]\nmode = \"read-only\"\n[permission]\nexternal_directory = { \"*\" = \"allow\" }\n", "touch -d 2000-01-01 ../OUT/o.txt x", Contained).flag("--yes"),
        // 14. No secrets in children's environment.
        bash("14: env in bash", "", "env", Contained).env(&[("OPENAI_API_KEY", "sk-x-canary"), ("MY_SECRET", "s3cret-canary")]).hidden("canary"),
        bash("14: the parent's environ", "", "cat /proc/$PPID/environ; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep canary", Contained).env(&[("ANTHROPIC_API_KEY", "sk-ant-canary")]).hidden("sk-ant-canary"),
    ]
}

fn sandbox_available() -> bool {
    Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .arg("doctor")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("enforced with Landlock"))
        .unwrap_or(false)
}

#[test]
fn every_attack_is_asked_denied_or_contained() {
    let sandboxed = sandbox_available();
    let mut checked = 0;
    for row in rows() {
        let needs_sandbox = matches!(row.expect, Expect::Contained) && row.name.starts_with(['1', '9']);
        if needs_sandbox && !sandboxed {
            eprintln!("skipped (no Landlock here): {}", row.name);
            continue;
        }
        let w = World::new(row.config);
        for call in &row.before {
            let args: Vec<&str> = call.iter().map(String::as_str).collect();
            w.toolshed_env(&args, row.env);
        }
        let _ = std::fs::remove_dir_all("/tmp/ts-fake");
        let before = w.outside();
        let mode = std::fs::metadata(w.root.join("x")).map(|m| (m.permissions(), m.modified().ok())).unwrap();
        let args: Vec<&str> = row.args.iter().map(String::as_str).collect();
        let out = w.toolshed_env(&args, row.env);
        let said = text(&out);
        let refused = |s: &str| s.contains("was not granted") || s.contains("Permission denied");
        match row.expect {
            Expect::Asked => assert!(said.contains("was not granted"), "{}: expected an ask, got: {said}", row.name),
            Expect::Denied => assert!(said.contains("Permission denied"), "{}: expected a deny, got: {said}", row.name),
            Expect::Refused => assert!(refused(&said), "{}: expected an ask or a deny, got: {said}", row.name),
            Expect::Contained => {}
        }
        if row.expect != Expect::Contained {
            assert_eq!(out.status.code(), Some(1), "{}: {said}", row.name);
        }
        assert_eq!(
            std::fs::read_to_string(w.root.join("x")).unwrap(),
            "canary\n",
            "{}: the canary changed: {said}",
            row.name
        );
        let mode_now = std::fs::metadata(w.root.join("x")).map(|m| (m.permissions(), m.modified().ok())).unwrap();
        assert_eq!(mode_now, mode, "{}: the canary's metadata changed: {said}", row.name);
        assert_eq!(w.outside(), before, "{}: something outside the worktree changed: {said}", row.name);
        for (file, text) in
            [("toolshed.toml", "full-access"), (".git/hooks/pre-commit", "rm x"), (".git/config", "rm x")]
        {
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
    assert!(checked >= 60, "{checked} rows ran");
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

/// 8: nested and long command lines never crash or hang `call` or `permission explain`; past
/// the analysis' bounds they ask as too complex to analyse.
#[test]
fn nested_syntax_never_crashes_an_entry_point() {
    let w = World::new(RM_DENIED);
    let inputs = [
        format!("{}true{}", "(".repeat(15_000), ")".repeat(15_000)),
        format!("{}rm x{}", "\"$(echo ".repeat(50_000), ")\"".repeat(50_000)),
        format!("true{}", " && true".repeat(10_000)),
        format!("{}rm x{}", "$(".repeat(20_000), ")".repeat(20_000)),
        format!("{}rm x", "bash -c ".repeat(2_000)),
        "x{\u{F9265}".to_string(),
    ];
    for input in inputs {
        let json = serde_json::json!({ "command": input }).to_string();
        // Arguments over 128 KiB cannot be one argv entry: those go through standard input.
        let mut runs = vec![("call", w.toolshed_stdin(&["call", "bash", "-"], &json))];
        if json.len() < 100_000 {
            let started = std::time::Instant::now();
            runs.push(("explain", (w.toolshed(&["permission", "explain", "bash", &json]), started.elapsed())));
        }
        let head: String = input.chars().take(40).collect();
        for (what, (out, took)) in runs {
            let said = text(&out);
            assert!(matches!(out.status.code(), Some(0 | 1)), "`{head}…` {what}: {:?} {said:.300}", out.status);
            assert!(took < std::time::Duration::from_secs(20), "`{head}…` {what} took {took:?}");
            if what == "call" {
                assert!(
                    said.contains("was not granted") || said.contains("Permission denied"),
                    "`{head}…`: {said:.300}"
                );
            }
        }
    }
    assert_eq!(std::fs::read_to_string(w.root.join("x")).unwrap(), "canary\n");
}

/// The ninth note's "sessions are readable": a sandboxed command read every session's
/// transcript in `sessions.db`. toolshed's data directory is now hidden from commands (in both
/// sandbox modes, whatever `external_directory` approves) and from the file tools, but for the
/// saved outputs the model is told to read.
#[test]
fn the_data_directory_shows_commands_and_file_tools_only_saved_outputs() {
    if !sandbox_available() {
        eprintln!("SKIP the_data_directory_shows_commands_and_file_tools_only_saved_outputs: no sandbox here");
        return;
    }
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[("c1", "bash", r#"{"command":"echo transcript-$((7000+731))"}"#)])),
        Reply::sse(chat::text("done")),
    ])
    .unwrap();
    let model =
        format!("model = \"fake/m\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n", server.base_url());
    let w = World::new(Box::leak(model.clone().into_boxed_str()));
    let out = w.toolshed(&["run", "say it", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let data = w.base.join("home/.data");
    let stored = std::fs::read_dir(&data)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("sessions.db"))
        .any(|e| String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).contains("transcript-7731"));
    assert!(stored, "the session was not stored where this test looks");
    std::fs::write(data.join("notes.txt"), "private-canary\n").unwrap();
    // Another worktree's saved output.
    std::fs::create_dir_all(data.join("tool-output/0123456789abcdef")).unwrap();
    std::fs::write(data.join("tool-output/0123456789abcdef/1-bash.txt"), "private-canary\n").unwrap();
    let out = w.toolshed(&["call", "bash", r#"{"command":"seq 1 300000"}"#]);
    let said = text(&out);
    let spill = said.split("saved in ").nth(1).and_then(|s| s.split(';').next()).expect(&said).to_string();
    assert!(spill.starts_with(data.join("tool-output").to_str().unwrap()), "{spill}");

    for mode in ["workspace-write", "read-only"] {
        std::fs::write(w.root.join("toolshed.toml"), format!("{model}[sandbox]\nmode = \"{mode}\"\n")).unwrap();
        let d = data.display();
        let command = format!(
            "ls -A {d}; grep -rl \"transcript-$((7000+731))\\|private-$((0))canary\" {d} 2>&1; cat {d}/notes.txt; x={d}; wc -c < $x/sessions.db; head -1 {spill}; cat {d}/tool-output/0123456789abcdef/1-bash.txt"
        );
        let out = w.toolshed(&["call", "bash", &serde_json::json!({ "command": command }).to_string(), "--yes"]);
        let said = text(&out);
        assert!(said.contains("tool-output\n"), "{mode}: {said}");
        for hidden in ["sessions.db\n", "notes.txt\n", "trust\n", "private-canary", "transcript-7731"] {
            assert!(!said.contains(hidden), "{mode}: a command saw {hidden:?}: {said}");
        }
        assert!(said.contains("\n1\n"), "{mode}: the saved output was not readable: {said}");
        assert!(said.contains("No such file"), "{mode}: {said}");
    }

    // The file tools: nothing of it is read, approved or not, but the saved output.
    let notes = data.join("notes.txt");
    let out = w.toolshed(&["call", "read", &serde_json::json!({ "file_path": notes }).to_string(), "--yes"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out).contains("toolshed's own data directory") && !text(&out).contains("private-canary"),
        "{}",
        text(&out)
    );
    let other = data.join("tool-output/0123456789abcdef/1-bash.txt");
    let out = w.toolshed(&["call", "read", &serde_json::json!({ "file_path": other }).to_string(), "--yes"]);
    assert!(text(&out).contains("toolshed's own data directory"), "another worktree's output: {}", text(&out));
    let home = w.base.join("home");
    let out = w.toolshed(&[
        "call",
        "grep",
        &serde_json::json!({ "pattern": "private-canary", "path": home }).to_string(),
        "--yes",
    ]);
    assert!(!text(&out).contains("notes.txt"), "grep searched the data directory: {}", text(&out));
    let out = w.toolshed(&["call", "read", &serde_json::json!({ "file_path": spill, "limit": 2 }).to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("2: 2"), "{}", text(&out));
}

/// Review 17: a home directory kept in git is a worktree that holds the data directory. Its
/// files are neither read nor listed by the file tools, and glob, list and grep do not walk
/// into it.
#[test]
fn a_worktree_holding_the_data_directory_shows_nothing_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().canonicalize().unwrap().join("home");
    let data = home.join(".local/share/toolshed");
    std::fs::create_dir_all(data.join("snapshots/x")).unwrap();
    std::fs::write(data.join("snapshots/x/secretname.txt"), "private-canary\n").unwrap();
    std::fs::write(home.join("notes-secretname.txt"), "public canary\n").unwrap();
    assert!(Command::new("git").args(["init", "-q"]).arg(&home).status().unwrap().success());
    let call = |tool: &str, args: serde_json::Value| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .args(["call", tool, &args.to_string(), "--yes"])
            .current_dir(&home)
            .env("HOME", &home)
            .env_remove("TOOLSHED_DATA_DIR")
            .env_remove("XDG_DATA_HOME")
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (out.status.code(), text(&out))
    };
    let (_, glob) = call("glob", serde_json::json!({ "pattern": "**/*secretname*" }));
    assert!(glob.contains("notes-secretname.txt") && !glob.contains("snapshots"), "{glob}");
    let (_, list) = call("list", serde_json::json!({}));
    assert!(list.contains("notes-secretname.txt") && !list.contains("snapshots"), "{list}");
    let (_, grep) = call("grep", serde_json::json!({ "pattern": "canary" }));
    assert!(grep.contains("public canary") && !grep.contains("private-canary"), "{grep}");
    let (code, read) =
        call("read", serde_json::json!({ "file_path": ".local/share/toolshed/snapshots/x/secretname.txt" }));
    assert!(code != Some(0) && read.contains("toolshed's own data directory"), "{read}");
}

/// Review 18: with the worktree and the home directory side by side under a temp dir, a command
/// moved the directory that holds both away, moved the worktree back into a new one beside a
/// data directory of its own with forged trust records, and the next call ran unsandboxed.
/// What holds the worktree and a protected path outside it is pinned now.
#[test]
fn the_directory_holding_the_worktree_and_the_data_directory_cannot_be_moved() {
    if !sandbox_available() {
        eprintln!("SKIP the_directory_holding_the_worktree_and_the_data_directory_cannot_be_moved: no sandbox here");
        return;
    }
    let tmp = tempfile::tempdir_in("/var/tmp").unwrap();
    let base = tmp.path().canonicalize().unwrap().join("b");
    let (root, home) = (base.join("w"), base.join("home"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    assert!(Command::new("git").args(["init", "-q"]).arg(&root).status().unwrap().success());
    let call = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .args(args)
            .current_dir(&root)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("TOOLSHED_DATA_DIR", home.join(".data"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        text(&out)
    };
    call(&["call", "bash", r#"{"command":"seq 1 300000"}"#]);
    std::fs::write(home.join(".data/notes.txt"), "private-canary\n").unwrap();
    let b = base.display().to_string();
    let (head, tail) = b.split_at(b.len() / 2);
    let swap = format!(
        "python3 -c 'import os,sys; b=sys.argv[1]+sys.argv[2]; os.rename(b, b+\"x\"); os.mkdir(b); os.rename(b+\"x/w\", b+\"/w\"); print(\"swapped\")' {head} {tail}"
    );
    let said = call(&["call", "bash", &serde_json::json!({ "command": swap }).to_string(), "--yes"]);
    assert!(!said.contains("swapped") && said.contains("Device or resource busy"), "{said}");
    assert!(home.join(".data/notes.txt").exists() && !tmp.path().join("bx").exists(), "{said}");
}

/// A world whose home has a cargo cache holding only its registry (no `bin`, no config), and
/// the cache's path; `None`, after a SKIP line for `test`, where nothing is sandboxed.
fn world_with_a_cargo_cache(test: &str) -> Option<(World, PathBuf)> {
    if !sandbox_available() {
        eprintln!("SKIP {test}: no sandbox here");
        return None;
    }
    let w = World::new("");
    let cargo = w.base.join("home/.cargo");
    std::fs::create_dir_all(cargo.join("registry")).unwrap();
    Some((w, cargo))
}

/// Review 19: a `PATH` directory missing from a tool cache (`~/.cargo/bin` while `~/.cargo`
/// holds only the registry) was made by a command with a `git` in it, which the person's shell
/// and toolshed's own snapshots then ran. It is made empty and bound read-only first now.
#[test]
fn a_missing_path_directory_in_a_tool_cache_cannot_be_planted() {
    let Some((w, cargo)) = world_with_a_cargo_cache("a_missing_path_directory_in_a_tool_cache_cannot_be_planted")
    else {
        return;
    };
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", cargo.join("bin").display());
    let plant = r#"{"command":"d=$(printf %s ~/.car)go/bin; mkdir -p $d; printf '#!/bin/sh\necho planted\n' > $d/git; chmod +x $d/git; echo done"}"#;
    let out = w.toolshed_env(&["call", "bash", plant, "--yes"], &[("PATH", &path)]);
    assert!(!cargo.join("bin/git").exists(), "{}", text(&out));
    assert!(text(&out).contains("Read-only file system"), "{}", text(&out));
}

/// Review 20: what in a tool cache makes later programs run other code but does not exist yet
/// (`~/.cargo/config.toml` with a `rustc-wrapper`) could be made by a command. Made, it needs
/// `protected`, which `--yes` never grants, and goes.
#[test]
fn a_missing_tool_configuration_made_by_a_command_goes() {
    let Some((w, cargo)) = world_with_a_cargo_cache("a_missing_tool_configuration_made_by_a_command_goes") else {
        return;
    };
    let plant = r#"{"command":"f=$(printf %s ~/.car)go/config.toml; printf '[build]\nrustc-wrapper = \"/tmp/evil\"\n' > $f; echo wrote"}"#;
    let out = w.toolshed(&["call", "bash", plant, "--yes"]);
    assert!(text(&out).contains("wrote"), "{}", text(&out));
    assert!(!cargo.join("config.toml").exists(), "{}", text(&out));
    assert!(text(&out).contains(".cargo/config.toml") && text(&out).contains("were removed"), "{}", text(&out));
}

/// Review 19: a home directory in a temp dir (CI, containers) left `~/.bashrc`, `~/.gitconfig`
/// and the like writable to commands, and the person's own shell and git then ran what a
/// command put there. It is read-only to them now but for its tool caches and a worktree in it,
/// as it is where the home lies outside the temp dirs; the rest of the temp dir stays writable.
#[test]
fn a_home_directory_in_a_temp_dir_is_read_only_but_for_its_caches_and_the_worktree() {
    if !sandbox_available() {
        eprintln!(
            "SKIP a_home_directory_in_a_temp_dir_is_read_only_but_for_its_caches_and_the_worktree: no sandbox here"
        );
        return;
    }
    let tmp = tempfile::tempdir_in("/var/tmp").unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let home = base.join("home");
    std::fs::create_dir_all(home.join(".cargo/registry")).unwrap();
    std::fs::write(home.join(".bashrc"), "# the person's\n").unwrap();
    // The home found at run time: a path the command names is asked about (`external_directory`),
    // and approved, written as the person allowed.
    let command = r#"h=$(python3 -c 'import os; print(os.path.expanduser(chr(126)))'); echo evil >> "$h/.bashrc"; printf '[core]\n\tfsmonitor = /tmp/evil\n' > "$h/.gitconfig"; mkdir -p "$h/.local/bin"; echo ok > "$h/.cargo/registry/fetched"; echo ok > made-here; echo ok > "$(dirname "$h")/beside-home"; echo done"#;
    // The worktree beside the home, then inside it.
    for root in [base.join("w"), home.join("src/project")] {
        std::fs::create_dir_all(&root).unwrap();
        assert!(Command::new("git").args(["init", "-q"]).arg(&root).status().unwrap().success());
        let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
            .args(["call", "bash", &serde_json::json!({ "command": command }).to_string(), "--yes"])
            .current_dir(&root)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("TOOLSHED_DATA_DIR", home.join(".data"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let said = text(&out);
        assert!(said.contains("done") && said.contains("Read-only file system"), "{said}");
        assert_eq!(std::fs::read_to_string(home.join(".bashrc")).unwrap(), "# the person's\n", "{said}");
        assert!(!home.join(".gitconfig").exists() && !home.join(".local").exists(), "{said}");
        for made in [home.join(".cargo/registry/fetched"), root.join("made-here"), base.join("beside-home")] {
            assert!(made.exists(), "{} was not written: {said}", made.display());
            std::fs::remove_file(made).unwrap();
        }
    }
}
