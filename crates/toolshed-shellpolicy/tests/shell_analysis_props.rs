//! Property tests of the shell analysis.
//!
//! 1. It never panics and stays within its bounds, whatever the input: random bytes, deep
//!    nestings, and generated commands.
//! 2. The execution oracle: under `bash = { "*" = "allow", "rm *" = "deny" }`, a generated
//!    command that the real rule engine allows outright (no ask, no deny) is run with
//!    `/bin/bash -c` in a fresh directory holding a file `canary`; the canary must survive. The
//!    generator mixes nesting (subshells, `$( )`, backquotes, `{ }`, `bash -c` with its option
//!    spellings, `eval`, `trap`), quoting (single, double, `$'...'`, backslashes, concatenations),
//!    expansions, the wrappers of the analysis's table that are installed, pipes and lists, and
//!    spellings of `rm canary`. Commands only name relative paths and run in their own directory.
//!
//! `PROPTEST_CASES` sets the number of cases of each property (defaults keep CI fast).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence};
use toolshed_core::agents::Agents;
use toolshed_core::config::Config as ToolshedConfig;
use toolshed_core::permission::{Action, Permission, PermissionRequest};
use toolshed_shellpolicy::permission_requests;

const RULES: &str = "[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\" }\n";

/// How long one analysis may take (a debug build on a busy machine).
const ANALYSIS_LIMIT: Duration = Duration::from_millis(2500);

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn config(default: u32) -> Config {
    Config {
        cases: cases(default),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("proptest-regressions"))),
        ..Config::default()
    }
}

/// Spellings of the program `rm`.
const RM: &[&str] = &[
    "rm",
    "/bin/rm",
    "/usr/bin/rm",
    "\\rm",
    "r''m",
    "\"rm\"",
    "'rm'",
    "r\"m\"",
    "\"r\"m",
    "$'rm'",
    "$'\\x72m'",
    "$'\\162\\155'",
    "$'r\\u006d'",
    "r\\m",
    "\\r\\m",
    "command rm",
    "command -p rm",
    "builtin command rm",
    "rm -f",
    "rm -rf",
    "rm --",
    "rm -v",
    "r\\\nm",
    "\"${R:-rm}\"",
    "exec -a other rm",
    "time -p rm",
];

/// Spellings of the file `canary` (all relative).
const CANARY: &[&str] =
    &["canary", "./canary", "c*", "canar?", "\"canary\"", "'canary'", "can\\ary", "c{a,}nary", "ca''nary", "[c]anary"];

/// Commands that cannot delete the canary (some still ask: they name `rm` as an argument).
const HARMLESS: &[&str] = &[
    "true",
    ":",
    "echo hi",
    "ls",
    "echo rm canary",
    "printf '%s\\n' x",
    "x=1",
    "test -e canary",
    "echo \"$HOME\"",
    "wc -c canary",
    "grep -c x canary",
    "echo $((1 + 2))",
    "pwd",
];

/// Deletions whose program name is computed at run time.
const DYNAMIC: &[&str] = &[
    "$(echo rm) canary",
    "X=rm; $X canary",
    "`echo rm` canary",
    "\"$(printf rm)\" canary",
    "${R:-rm} canary",
    "eval \"$(echo rm canary)\"",
    "{rm,canary}",
    "r{m,} canary",
    "echo canary | xargs rm",
    "echo canary | xargs -I{} rm {}",
    "printf canary | xargs -0 rm",
    "find . -maxdepth 1 -name canary -exec rm {} \\;",
    "find . -maxdepth 1 -name 'c*' -exec rm {} +",
];

/// Deletions by interpreters running code the rules cannot read (inline, or on their input).
const INTERPRETED: &[&str] = &[
    "python3 -c 'import os; os.remove(\"canary\")'",
    "python3 -Bc 'import os; os.system(\"rm canary\")'",
    "python3 - <<< 'import os; os.unlink(\"canary\")'",
    "echo 'import os; os.remove(\"canary\")' | python3",
    "perl -e 'unlink \"canary\"'",
    "perl -le 'system \"rm canary\"'",
    "code='import os; os.remove(\"canary\")'; python3 -c \"$code\"",
];

/// Deletions through programs that run their input or the files they find (`RM` is replaced by
/// a spelling of `rm`).
const THROUGH: &[&str] = &[
    "echo canary | xargs RM",
    "echo canary | xargs -I{} RM {}",
    "printf canary | xargs -0 RM",
    "echo canary | xargs -n 1 -P 2 RM",
    "find . -maxdepth 1 -name canary -exec RM {} \\;",
    "find . -maxdepth 1 -name 'c*' -execdir RM {} +",
    "find . -maxdepth 1 -name canary -ok RM {} \\; < /dev/null",
];

/// Wrappers of the analysis's table, each with the program that must be installed for it.
const WRAPPERS: &[(&str, &str)] = &[
    ("env", "env"),
    ("env -i PATH=/usr/bin:/bin", "env"),
    ("env --", "env"),
    ("env -C .", "env"),
    ("env -u HOME", "env"),
    ("env FOO=1", "env"),
    ("nohup", "nohup"),
    ("timeout 5", "timeout"),
    ("timeout -s KILL 5", "timeout"),
    ("timeout --kill-after=1 5", "timeout"),
    ("nice", "nice"),
    ("nice -n 1", "nice"),
    ("nice -1", "nice"),
    ("command", "bash"),
    ("exec", "bash"),
    ("time", "bash"),
    ("time -p", "bash"),
    ("stdbuf -oL", "stdbuf"),
    ("setsid -w", "setsid"),
    ("taskset 1", "taskset"),
    ("taskset -c 0", "taskset"),
    ("flock lockfile", "flock"),
    ("chrt -o 0", "chrt"),
    ("ionice -c 3", "ionice"),
    ("prlimit --nofile=64", "prlimit"),
    ("setpriv --reuid=0", "setpriv"),
    ("runuser -u root --", "runuser"),
    ("strace -f -o /dev/null", "strace"),
    ("sudo", "sudo"),
    ("busybox", "busybox"),
    ("doas", "doas"),
];

fn installed(program: &str) -> bool {
    ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].iter().any(|d| Path::new(d).join(program).exists())
}

fn wrappers() -> &'static Vec<&'static str> {
    static LIST: OnceLock<Vec<&'static str>> = OnceLock::new();
    LIST.get_or_init(|| WRAPPERS.iter().filter(|(_, p)| installed(p)).map(|(w, _)| *w).collect())
}

/// Ways to quote a command line as one shell word.
#[derive(Clone, Copy, Debug)]
enum Quote {
    Single,
    Double,
    AnsiC,
    Backslashes,
}

fn quote(text: &str, how: Quote) -> String {
    match how {
        Quote::Single => format!("'{}'", text.replace('\'', "'\\''")),
        Quote::Double => {
            let mut out = String::from("\"");
            for c in text.chars() {
                if matches!(c, '"' | '\\' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
            out
        }
        Quote::AnsiC => format!("$'{}'", text.replace('\\', "\\\\").replace('\'', "\\'")),
        Quote::Backslashes => {
            text.chars().map(|c| if c == '\n' { "'\n'".to_string() } else { format!("\\{c}") }).collect()
        }
    }
}

fn quoting() -> impl Strategy<Value = Quote> {
    prop_oneof![Just(Quote::Single), Just(Quote::Double), Just(Quote::AnsiC), Just(Quote::Backslashes)]
}

/// The options a shell may be started with before its command string.
const SHELLS: &[&str] = &[
    "bash -c",
    "bash -xc",
    "bash -c --",
    "bash -ec",
    "bash -c -e",
    "bash -O extglob -c",
    "bash +O extglob -c",
    "bash --norc --noprofile -c",
    "bash -norc -c",
    "bash -o pipefail -c",
    "bash -eo pipefail -c",
    "bash +c",
    "bash -l -c",
    "sh -c",
    "sh -c --",
    "sh -ec",
    "dash -c",
    "/bin/sh -c",
    "/usr/bin/env bash -c",
];

/// A simple command: a deletion of the canary, a harmless command or a computed one, wrapped
/// in up to two wrappers.
fn simple() -> impl Strategy<Value = String> {
    let separator = prop::sample::select(&[" ", "\t", " \\\n ", "  "][..]);
    let deletion =
        (prop::sample::select(RM), separator, prop::sample::select(CANARY)).prop_map(|(r, s, c)| format!("{r}{s}{c}"));
    let through = (prop::sample::select(RM), prop::sample::select(THROUGH)).prop_map(|(r, t)| t.replace("RM", r));
    let leaf = prop_oneof![
        4 => deletion,
        1 => through,
        3 => prop::sample::select(HARMLESS).prop_map(str::to_string),
        1 => prop::sample::select(DYNAMIC).prop_map(str::to_string),
        1 => prop::sample::select(INTERPRETED).prop_map(str::to_string),
    ];
    let wrapper = prop::sample::select(wrappers().clone());
    (leaf, prop::collection::vec(wrapper, 0..=2), any::<bool>(), quoting()).prop_map(|(leaf, wrap, split, q)| {
        let simple_leaf = !leaf.contains([';', '|', '{']) && !leaf.starts_with("eval") && !leaf.contains('=');
        if !simple_leaf {
            return leaf;
        }
        let mut out = leaf;
        for w in wrap {
            out = format!("{w} {out}");
        }
        if split && installed("env") {
            // `env -S` splits its string itself.
            out = format!("env -S{}", quote(&out, q));
        }
        out
    })
}

/// Commands built from simple ones with the shell's compound forms.
fn command() -> impl Strategy<Value = String> {
    simple().prop_recursive(4, 24, 3, |inner| {
        let two = (inner.clone(), inner.clone());
        prop_oneof![
            two.clone().prop_map(|(a, b)| format!("{a}; {b}")),
            two.clone().prop_map(|(a, b)| format!("{a} && {b}")),
            two.clone().prop_map(|(a, b)| format!("false || {a} || {b}")),
            two.clone().prop_map(|(a, b)| format!("{a} | {b}")),
            two.clone().prop_map(|(a, b)| format!("{a}\n{b}")),
            inner.clone().prop_map(|a| format!("( {a} )")),
            inner.clone().prop_map(|a| format!("{{ {a}; }}")),
            inner.clone().prop_map(|a| format!("echo $( {a} )")),
            inner.clone().prop_map(|a| format!("echo \"$( {a} )\"")),
            inner.clone().prop_filter("no nested backquotes", |a| !a.contains('`')).prop_map(|a| format!("echo `{a}`")),
            inner.clone().prop_map(|a| format!("cat <( {a} )")),
            (prop::sample::select(SHELLS), inner.clone(), quoting())
                .prop_map(|(sh, a, q)| format!("{sh} {}", quote(&a, q))),
            (inner.clone(), quoting()).prop_map(|(a, q)| format!("eval {}", quote(&a, q))),
            (inner.clone(), quoting()).prop_map(|(a, q)| format!("trap {} EXIT", quote(&a, q))),
            two.clone().prop_map(|(a, b)| format!("if {a}; then {b}; fi")),
            inner.clone().prop_map(|a| format!("for i in 1; do {a}; done")),
            inner.clone().prop_map(|a| format!("f() {{ {a}; }}; f")),
            inner.clone().prop_map(|a| format!("case x in x) {a};; esac")),
            inner.clone().prop_map(|a| format!("{a} 2>/dev/null")),
            inner.clone().prop_map(|a| format!("{a} & wait")),
            inner.clone().prop_map(|a| format!("echo $(( $( {a} ) + 0 ))")),
            inner.clone().prop_map(|a| format!("x=$( {a} )")),
            inner.clone().prop_map(|a| format!("declare x=\"$( {a} )\"")),
            inner.clone().prop_map(|a| format!("[[ -n $( {a} ) ]]")),
            inner.clone().prop_map(|a| format!("case $( {a} ) in *) ;; esac")),
            inner.clone().prop_map(|a| format!("for i in $( {a} ); do :; done")),
            inner.clone().prop_map(|a| format!("cat <<EOF\n$( {a} )\nEOF")),
            inner.clone().prop_map(|a| format!("{a} # comment")),
            inner.clone().prop_map(|a| format!("echo x > >( {a} )")),
            (inner.clone(), quoting()).prop_map(|(a, q)| format!("bash <<< {}", quote(&a, q))),
            (inner.clone(), quoting())
                .prop_map(|(a, q)| format!("shopt -s expand_aliases; alias x={}; x", quote(&a, q))),
            inner.clone().prop_map(|a| format!("x='a[$( {} )]'; echo $((x))", a.replace('\'', "'\\''"))),
            (inner.clone(), quoting())
                .prop_map(|(a, q)| format!("x={}; echo ${{x@P}}", quote(&format!("$( {a} )"), q))),
            (inner.clone(), quoting()).prop_map(|(a, q)| format!("command eval {}", quote(&a, q))),
            (inner.clone(), quoting()).prop_map(|(a, q)| format!("builtin eval {}", quote(&a, q))),
            (inner.clone(), quoting()).prop_map(|(a, q)| format!("trap -- {} EXIT", quote(&a, q))),
            (inner.clone(), quoting()).prop_map(|(a, q)| format!("bash -c {} _ arg", quote(&a, q))),
            inner.clone().prop_map(|a| format!("time ( {a} )")),
            inner.clone().prop_map(|a| format!("time {{ {a}; }}")),
            inner.clone().prop_map(|a| format!("! ! {a}")),
            inner.clone().prop_map(|a| format!("! {{ {a}; }}")),
            inner.clone().prop_map(|a| format!("time ! {a}")),
            inner.clone().prop_map(|a| format!("! {a}")),
            (inner.clone(), quoting()).prop_map(|(a, q)| format!("flock lockfile -c {}", quote(&a, q))),
            (inner, quoting()).prop_map(|(a, q)| format!("script -qec {} /dev/null", quote(&a, q))),
        ]
    })
}

fn analyse(command: &str, dir: &Path) -> (Vec<PermissionRequest>, Duration) {
    let start = Instant::now();
    let requests = permission_requests(command, dir, dir, Some(dir));
    (requests, start.elapsed())
}

fn agents(root: &Path) -> Arc<Agents> {
    let mut cfg = ToolshedConfig::default();
    cfg.merge_str(&root.join("toolshed.toml"), RULES).unwrap();
    Arc::new(Agents::from_config(&cfg, root, Some(root)))
}

/// The decision of the real rule engine: the strictest over every pattern of every request.
fn decide(agents: &Agents, requests: &[PermissionRequest]) -> Action {
    let mut decision = Action::Allow;
    for request in requests {
        for pattern in &request.patterns {
            let action = request.action(&agents.evaluate("build", &request.permission, pattern), agents, "build");
            decision = match (decision, action) {
                (Action::Deny, _) | (_, Action::Deny) => Action::Deny,
                (Action::Ask, _) | (_, Action::Ask) => Action::Ask,
                _ => Action::Allow,
            };
        }
    }
    decision
}

/// Runs `command` with `/bin/bash -c` in `dir` (its own process group, minimal environment,
/// no input), killed after 2 s.
fn run(command: &str, dir: &Path) {
    let mut child = Command::new("/bin/bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: signals the group this test started; it may be gone already.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
}

proptest! {
    #![proptest_config(config(48))]

    /// The execution oracle: what the rules allow outright never deletes the canary.
    #[test]
    fn allowed_commands_never_delete_the_canary(command in command()) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        std::fs::write(dir.join("canary"), "alive\n").unwrap();
        let agents = agents(&dir);
        let (requests, took) = analyse(&command, &dir);
        prop_assert!(took < ANALYSIS_LIMIT, "took {:?}", took);
        let decision = decide(&agents, &requests);
        if std::env::var_os("SHELL_PROPS_TRACE").is_some() {
            eprintln!("{decision}\t{command:?}");
        }
        if decision == Action::Allow {
            run(&command, &dir);
            prop_assert!(dir.join("canary").exists(), "allowed, and it deleted the canary: {:?}\n{:#?}", command, requests);
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Any bytes at all: no panic, within the time bound.
    #[test]
    fn random_input_is_analysed_within_bounds(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let text = String::from_utf8_lossy(&bytes);
        let (_, took) = analyse(&text, Path::new("/tmp"));
        prop_assert!(took < ANALYSIS_LIMIT, "took {:?}", took);
    }

    /// Random shell-ish text: fragments of the grammar in any order.
    #[test]
    fn shell_fragments_are_analysed_within_bounds(parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..400)) {
        let text: String = parts.concat();
        let (_, took) = analyse(&text, Path::new("/tmp"));
        prop_assert!(took < ANALYSIS_LIMIT, "took {:?}", took);
    }

    /// Deep nestings of every kind around `rm x`, balanced or not: no stack overflow, within the
    /// time bound, and never allowed (the deletion is denied, or past the bounds it asks).
    #[test]
    fn deep_nesting_is_analysed_within_bounds(
        open in prop::sample::select(NESTINGS),
        depth in 0usize..20_000,
        balanced in any::<bool>(),
    ) {
        let (opener, closer) = open;
        let text = format!("{}rm x{}", opener.repeat(depth), if balanced { closer.repeat(depth) } else { String::new() });
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let (requests, took) = analyse(&text, &dir);
        prop_assert!(took < ANALYSIS_LIMIT, "took {:?}", took);
        prop_assert_ne!(decide(&agents(&dir), &requests), Action::Allow);
    }
}

const FRAGMENTS: &[&str] = &[
    " ",
    "\n",
    ";",
    "&&",
    "||",
    "|",
    "&",
    "(",
    ")",
    "{",
    "}",
    "$(",
    "`",
    "\"",
    "'",
    "$'",
    "\\",
    "<<",
    "EOF\n",
    "<<<",
    ">",
    "<",
    "2>&1",
    "$",
    "${",
    "[[",
    "]]",
    "((",
    "))",
    "=",
    "rm",
    "x",
    "bash -c",
    "eval",
    "if",
    "then",
    "fi",
    "for",
    "in",
    "do",
    "done",
    "case",
    "esac",
    ";;",
    "*",
    "?",
    "[",
    "]",
    "~",
    "#",
    "!",
    ",",
    "..",
    "env -S",
    "xargs",
    "trap",
    "-c",
    "--",
    "\u{F9265}",
    "é",
];

const NESTINGS: &[(&str, &str)] = &[
    ("(", ")"),
    ("{ ", "; }"),
    ("$(", ")"),
    ("\"$(echo ", ")\""),
    ("`", "`"),
    ("${x:-", "}"),
    ("$((1+", "))"),
    ("if true; then ", "; fi"),
    ("f() { ", "; }"),
    ("[[ -n ", " ]]"),
    ("bash -c '", "'"),
    ("eval '", "'"),
    ("<(", ")"),
    ("a=(", ")"),
    ("case x in x) ", ";; esac"),
];
