//! Wrappers: programs (and shell builtins) that run another command given as their arguments —
//! `env`, `sudo`, `timeout`, `xargs`, `nohup`, `taskset`, `flock`, `strace`, `bash -c`,
//! `eval`, `trap`, ... Each entry of the table says how the wrapper's own options and
//! positional arguments are skipped to find the command (GNU `getopt_long` rules where the
//! program uses them: clustered short options, attached or separate values, unambiguous
//! abbreviations of long options, `--`), and what the wrapper itself does besides (a file it
//! writes, a variable it sets). An option not in the table is never guessed at: the command
//! cannot be analysed and asks. Behind the table, the general rule in [`super`] checks every
//! later word of a command that names a program as a possible command of its own.

use super::Word;
use super::environment;
use super::programs::Effect;
use super::shells::{self, Invocation};

/// What a wrapper runs.
#[derive(Debug, PartialEq)]
pub(super) enum Next {
    /// This command (program and arguments; more wrappers may follow).
    Command(Vec<Word>),
    /// This text, as a shell command line.
    Line(Word),
    /// The shell script in this file.
    File(Word),
    /// A script read from standard input.
    Stdin,
    /// Nothing more (called without a command, or only looking one up as `command -v` does).
    Nothing,
    /// Not a wrapper: the program is the command.
    Program,
    /// Something that cannot be analysed; the reason.
    Unclassified(String),
}

/// One wrapper peeled off.
#[derive(Debug)]
pub(super) struct Peeled {
    pub next: Next,
    /// The command gets more arguments at run time (`xargs`): a wrapper it runs without a
    /// command of its own would run those.
    pub appends: bool,
    /// What the wrapper does itself: files it writes, variables it sets that run programs.
    pub effects: Vec<Effect>,
}

impl Peeled {
    fn next(next: Next) -> Self {
        Peeled { next, appends: false, effects: Vec::new() }
    }

    fn unclassified(why: impl Into<String>) -> Self {
        Peeled::next(Next::Unclassified(why.into()))
    }

    fn command(rest: Vec<Word>) -> Self {
        Peeled::next(if rest.is_empty() { Next::Nothing } else { Next::Command(rest) })
    }
}

/// How a wrapper's options are written.
#[derive(Default)]
struct Spec {
    /// Short options that take a value (`-n 5`, `-n5`).
    short_values: &'static str,
    /// Short options whose value is optional and only attached (`-d`, `-dpermanent`).
    short_optional: &'static str,
    /// Short options without a value.
    short_flags: &'static str,
    /// Long options that take a value (`--signal KILL`, `--signal=KILL`).
    long_values: &'static [&'static str],
    /// Long options without a value, or with an optional one only after `=`.
    long_flags: &'static [&'static str],
    /// Operands before the command (`timeout`'s duration, `taskset`'s mask).
    positional: usize,
    /// `NAME=value` words before the command set variables (`env`, `sudo`).
    assignments: bool,
    /// Long options may be abbreviated (GNU `getopt_long`).
    abbreviations: bool,
}

/// One option as parsed: its short letter or full long name, and its value.
#[derive(Debug)]
struct Opt {
    short: Option<char>,
    long: Option<&'static str>,
    value: Option<Word>,
}

impl Opt {
    fn is(&self, short: char, long: &str) -> bool {
        self.short == Some(short) || self.long == Some(long)
    }

    fn long_is(&self, long: &str) -> bool {
        self.long == Some(long)
    }
}

#[derive(Debug, Default)]
struct Parsed {
    options: Vec<Opt>,
    assignments: Vec<Word>,
    positional: Vec<Word>,
    rest: Vec<Word>,
}

impl Parsed {
    fn has(&self, short: char, long: &str) -> bool {
        self.options.iter().any(|o| o.is(short, long))
    }

    fn values<'a>(&'a self, short: char, long: &'a str) -> impl Iterator<Item = &'a Word> + 'a {
        self.options.iter().filter(move |o| o.is(short, long)).filter_map(|o| o.value.as_ref())
    }
}

fn parse(program: &str, spec: &Spec, args: &[Word]) -> Result<Parsed, String> {
    let mut out = Parsed::default();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        // Options stop at the first operand (these programs use `+` in their getopt string).
        if t.starts_with('-') && t.len() > 1 && out.positional.is_empty() {
            if !w.is_plain() {
                return Err(format!("the options of `{program}` are computed at run time"));
            }
            i += 1;
            if let Some(long) = t.strip_prefix("--") {
                let (name, attached) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(Word::literal(v))),
                    None => (long, None),
                };
                let full =
                    lookup(spec, name).ok_or_else(|| format!("`{program} --{name}` is not an option known here"))?;
                let value = if attached.is_some() || !spec.long_values.contains(&full) {
                    attached
                } else {
                    i += 1;
                    Some(args.get(i - 1).cloned().ok_or_else(|| format!("`{program} --{name}` lacks its value"))?)
                };
                out.options.push(Opt { short: None, long: Some(full), value });
                continue;
            }
            let cluster = &t[1..];
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                if spec.short_values.contains(c) {
                    let value = if rest.is_empty() {
                        i += 1;
                        args.get(i - 1).cloned().ok_or_else(|| format!("`{program} -{c}` lacks its value"))?
                    } else {
                        Word::literal(rest)
                    };
                    out.options.push(Opt { short: Some(c), long: None, value: Some(value) });
                    break;
                }
                if spec.short_optional.contains(c) {
                    let value = (!rest.is_empty()).then(|| Word::literal(rest));
                    out.options.push(Opt { short: Some(c), long: None, value });
                    break;
                }
                if !spec.short_flags.contains(c) {
                    return Err(format!("`{program} -{c}` is not an option known here"));
                }
                out.options.push(Opt { short: Some(c), long: None, value: None });
            }
            continue;
        }
        if w.open && out.positional.len() < spec.positional {
            // A value known only at run time where an operand is due may be options instead.
            return Err(format!("an operand of `{program}` is computed at run time and may be an option"));
        }
        if spec.assignments && is_assignment(w) {
            out.assignments.push(w.clone());
            i += 1;
            continue;
        }
        // A program (not bash's `time` or `!`) may take any word with `=` for a variable
        // setting, as env does (`sudo 'BASH_FUNC_ls%%=() { ...; }' bash`): it cannot be checked.
        if spec.assignments && !matches!(program, "time" | "!") && w.text.contains('=') {
            return Err(format!("`{program}` may take `{}` for a variable setting", w.text));
        }
        if out.positional.len() < spec.positional {
            out.positional.push(w.clone());
            i += 1;
            continue;
        }
        break;
    }
    out.rest = args.get(i..).unwrap_or_default().to_vec();
    Ok(out)
}

/// The long option `name` (given, maybe abbreviated) names.
fn lookup(spec: &Spec, name: &str) -> Option<&'static str> {
    let all = spec.long_values.iter().chain(spec.long_flags);
    if let Some(exact) = all.clone().find(|l| **l == name) {
        return Some(exact);
    }
    if !spec.abbreviations || name.is_empty() {
        return None;
    }
    let mut matches = all.filter(|l| l.starts_with(name));
    let first = matches.next()?;
    matches.next().is_none().then_some(*first)
}

pub(super) fn is_assignment(w: &Word) -> bool {
    w.text.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// env's own rule: every argument with a `=` before the command is a variable setting, whatever
/// the name (`env 'BASH_FUNC_ls%%=() { ...; }' bash -c ls` exports a function to bash).
fn is_env_assignment(w: &Word) -> bool {
    w.text.contains('=')
}

/// Effects of `NAME=value` words a wrapper (or the shell, after `time` or `!`) sets: a variable
/// that runs programs asks; one whose value is computed or would run a command as arithmetic is
/// noted.
fn assignment_effects(assignments: &[Word]) -> Vec<Effect> {
    let mut out = Vec::new();
    for a in assignments {
        out.extend(environment::check_assignment(&a.text).map(Effect::Unclassified));
        if let Some((name, value)) = a.text.split_once('=')
            && (a.dynamic || environment::arithmetic_payload(value))
        {
            out.push(Effect::SetsAtRunTime(name.trim_end_matches('+').to_string()));
        }
    }
    out
}

/// The table: how each wrapper's options are written.
fn spec(program: &str) -> Option<Spec> {
    let gnu = |short_values, short_flags, long_values, long_flags, positional| Spec {
        short_values,
        short_flags,
        long_values,
        long_flags,
        positional,
        abbreviations: true,
        ..Spec::default()
    };
    Some(match program {
        "nohup" => gnu("", "", &[], &["help", "version"], 0),
        "setsid" => gnu("", "cfw", &[], &["ctty", "fork", "wait", "help", "version"], 0),
        // bash's `time` keyword (`-p`, then a simple command with its assignments) and GNU time.
        "time" => Spec {
            assignments: true,
            ..gnu(
                "fo",
                "apqvV",
                &["format", "output"],
                &["append", "portability", "verbose", "quiet", "help", "version"],
                0,
            )
        },
        "doas" => Spec { short_values: "Cu", short_flags: "Lns", ..Spec::default() },
        "unbuffer" => Spec { short_flags: "p", ..Spec::default() },
        "nice" => gnu("n", "", &["adjustment"], &["help", "version"], 0),
        "ionice" => {
            gnu("cnpPu", "thV", &["class", "classdata", "pid", "pgid", "uid"], &["ignore", "help", "version"], 0)
        }
        "stdbuf" => gnu("ioe", "", &["input", "output", "error"], &["help", "version"], 0),
        "timeout" => gnu(
            "sk",
            "fpv",
            &["signal", "kill-after"],
            &["foreground", "preserve-status", "verbose", "help", "version"],
            1,
        ),
        "chroot" => gnu("", "", &["userspec", "groups"], &["skip-chdir", "help", "version"], 1),
        "watch" => Spec {
            short_values: "nq",
            short_optional: "d",
            short_flags: "bcCegprtwxhv",
            long_values: &["interval", "equexit"],
            long_flags: &[
                "beep",
                "color",
                "no-color",
                "differences",
                "errexit",
                "chgexit",
                "precise",
                "no-rerun",
                "no-title",
                "no-wrap",
                "exec",
                "help",
                "version",
            ],
            abbreviations: true,
            ..Spec::default()
        },
        "xargs" => Spec {
            short_values: "aEILnPsd",
            short_optional: "eil",
            short_flags: "0oprtx",
            long_values: &["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
            long_flags: &[
                "null",
                "interactive",
                "no-run-if-empty",
                "verbose",
                "exit",
                "open-tty",
                "show-limits",
                "max-lines",
                "replace",
                "eof",
                "help",
                "version",
            ],
            abbreviations: true,
            ..Spec::default()
        },
        "sudo" => Spec {
            short_values: "CDghpRrTtUu",
            short_optional: "h",
            short_flags: "AbBEeHiKklNnPSsVv",
            long_values: &[
                "close-from",
                "chdir",
                "group",
                "host",
                "prompt",
                "chroot",
                "role",
                "type",
                "command-timeout",
                "other-user",
                "user",
            ],
            long_flags: &[
                "askpass",
                "background",
                "bell",
                "edit",
                "preserve-env",
                "set-home",
                "help",
                "login",
                "remove-timestamp",
                "reset-timestamp",
                "list",
                "non-interactive",
                "preserve-groups",
                "stdin",
                "shell",
                "version",
                "validate",
            ],
            assignments: true,
            abbreviations: true,
            ..Spec::default()
        },
        "taskset" => gnu("", "acphV", &[], &["all-tasks", "cpu-list", "pid", "help", "version"], 1),
        "chrt" => gnu(
            "TPD",
            "abdfiomRprvhV",
            &["sched-runtime", "sched-period", "sched-deadline"],
            &[
                "all-tasks",
                "batch",
                "deadline",
                "fifo",
                "idle",
                "other",
                "rr",
                "reset-on-fork",
                "pid",
                "max",
                "verbose",
                "help",
                "version",
            ],
            0,
        ),
        "numactl" => gnu(
            "iwpPmNCcMISfoL",
            "albsHtuThVdD",
            &[
                "interleave",
                "weighted-interleave",
                "preferred",
                "preferred-many",
                "membind",
                "cpunodebind",
                "physcpubind",
                "cpubind",
                "shmmode",
                "shmid",
                "shm",
                "file",
                "offset",
                "length",
            ],
            &[
                "all",
                "localalloc",
                "balancing",
                "show",
                "hardware",
                "strict",
                "huge",
                "touch",
                "dump",
                "dump-nodes",
                "help",
                "version",
            ],
            0,
        ),
        "prlimit" => Spec {
            short_values: "po",
            short_optional: "cdefilmnqrstuvxy",
            short_flags: "hV",
            long_values: &["pid", "output"],
            long_flags: &[
                "as",
                "core",
                "cpu",
                "data",
                "fsize",
                "locks",
                "memlock",
                "msgqueue",
                "nice",
                "nofile",
                "nproc",
                "rss",
                "rtprio",
                "rttime",
                "sigpending",
                "stack",
                "noheadings",
                "raw",
                "verbose",
                "help",
                "version",
            ],
            abbreviations: true,
            ..Spec::default()
        },
        "flock" => gnu(
            "wE",
            "sexnouFhV",
            &["timeout", "wait", "conflict-exit-code"],
            &[
                "shared",
                "exclusive",
                "unlock",
                "nonblocking",
                "nonblock",
                "nb",
                "close",
                "no-fork",
                "verbose",
                "help",
                "version",
            ],
            1,
        ),
        "setpriv" => gnu(
            "",
            "dhV",
            &[
                "reuid",
                "regid",
                "ruid",
                "euid",
                "rgid",
                "egid",
                "groups",
                "inh-caps",
                "ambient-caps",
                "bounding-set",
                "securebits",
                "pdeathsig",
                "selinux-label",
                "apparmor-profile",
                "landlock-access",
                "landlock-rule",
            ],
            &[
                "clear-groups",
                "keep-groups",
                "init-groups",
                "nnp",
                "no-new-privs",
                "reset-env",
                "dump",
                "help",
                "version",
            ],
            0,
        ),
        "su" | "runuser" => gnu(
            if program == "su" { "cgGsw" } else { "cgGswu" },
            "flmpPhV",
            &["command", "session-command", "group", "supp-group", "shell", "whitelist-environment", "user"],
            &["fast", "login", "preserve-environment", "pty", "help", "version"],
            0,
        ),
        "unshare" => Spec {
            short_values: "RwSGl",
            short_optional: "",
            short_flags: "fhVmuinpCTUrc",
            long_values: &[
                "propagation",
                "setgroups",
                "root",
                "wd",
                "setuid",
                "setgid",
                "map-user",
                "map-group",
                "map-users",
                "map-groups",
                "monotonic",
                "boottime",
                "load-interp",
            ],
            long_flags: &[
                "mount",
                "uts",
                "ipc",
                "net",
                "pid",
                "user",
                "cgroup",
                "time",
                "kill-child",
                "mount-proc",
                "mount-binfmt",
                "fork",
                "map-root-user",
                "map-current-user",
                "map-auto",
                "keep-caps",
                "help",
                "version",
            ],
            abbreviations: true,
            ..Spec::default()
        },
        "nsenter" => Spec {
            short_values: "tSGWN",
            short_optional: "muinpUCTrw",
            short_flags: "aheFZc",
            long_values: &["target", "setuid", "setgid", "wdns", "net-socket"],
            long_flags: &[
                "mount",
                "uts",
                "ipc",
                "net",
                "pid",
                "user",
                "cgroup",
                "time",
                "root",
                "wd",
                "all",
                "env",
                "no-fork",
                "follow-context",
                "preserve-credentials",
                "user-parent",
                "keep-caps",
                "join-cgroup",
                "help",
                "version",
            ],
            abbreviations: true,
            ..Spec::default()
        },
        "systemd-run" => Spec {
            short_values: "upEHMC",
            short_flags: "rtPqGdShV",
            long_values: &[
                "unit",
                "property",
                "description",
                "slice",
                "uid",
                "gid",
                "nice",
                "working-directory",
                "setenv",
                "host",
                "machine",
                "capsule",
                "on-active",
                "on-boot",
                "on-startup",
                "on-unit-active",
                "on-unit-inactive",
                "on-calendar",
                "timer-property",
                "path-property",
                "socket-property",
                "service-type",
                "expand-environment",
            ],
            long_flags: &[
                "user",
                "system",
                "scope",
                "remain-after-exit",
                "send-sighup",
                "pty",
                "pipe",
                "quiet",
                "wait",
                "collect",
                "no-block",
                "no-ask-password",
                "same-dir",
                "shell",
                "on-clock-change",
                "on-timezone-change",
                "slice-inherit",
                "verbose",
                "help",
                "version",
            ],
            abbreviations: false,
            ..Spec::default()
        },
        "xvfb-run" => gnu(
            "efnpsw",
            "alh",
            &["error-file", "auth-file", "server-num", "xauth-protocol", "server-args", "wait"],
            &["auto-servernum", "auto-display", "listen-tcp", "help"],
            0,
        ),
        "strace" => Spec {
            short_values: "abeEIoOpPsSuUX",
            short_flags: "ACcdDfFhiknqQrtTvVwxyYzZ",
            long_values: &[
                "output",
                "trace",
                "signal",
                "status",
                "quiet",
                "silent",
                "decode-fds",
                "abbrev",
                "verbose",
                "raw",
                "read",
                "write",
                "fault",
                "inject",
                "kvm",
                "string-limit",
                "columns",
                "const-print-style",
                "user",
                "env",
                "attach",
                "trace-path",
                "detach-on",
                "summary-sort-by",
                "absolute-timestamps",
                "timestamps",
                "syscall-times",
                "overhead",
                "interruptible",
                "secontext",
                "daemonize",
                "stack-traces",
                "seccomp-bpf-on",
            ],
            long_flags: &[
                "follow-forks",
                "output-separately",
                "summary-only",
                "summary",
                "summary-wall-clock",
                "debug",
                "no-abbrev",
                "instruction-pointer",
                "relative-timestamps",
                "seccomp-bpf",
                "strings-in-hex",
                "successful-only",
                "failed-only",
                "decode-pids",
                "tips",
                "help",
                "version",
                "always-show-pid",
                "argv0",
            ],
            abbreviations: true,
            ..Spec::default()
        },
        "ltrace" => Spec {
            short_values: "aAeoDFlLnpsuwxX",
            short_flags: "bcCfhirStTV",
            long_values: &["output", "library", "align", "indent"],
            long_flags: &["demangle", "help", "version", "no-signals", "no-plt"],
            abbreviations: true,
            ..Spec::default()
        },
        "caffeinate" => Spec { short_values: "tw", short_flags: "disum", ..Spec::default() },
        "exec" => Spec { short_values: "a", short_flags: "cl", ..Spec::default() },
        "command" => Spec { short_flags: "pvV", ..Spec::default() },
        "script" => Spec {
            short_values: "cEBIOTmo",
            short_optional: "t",
            short_flags: "aefqhV",
            long_values: &[
                "command",
                "echo",
                "log-io",
                "log-in",
                "log-out",
                "log-timing",
                "logging-format",
                "output-limit",
            ],
            long_flags: &["append", "return", "flush", "force", "quiet", "timing", "help", "version"],
            abbreviations: true,
            ..Spec::default()
        },
        "ssh" => Spec {
            short_values: "BbcDEeFIiJLlmOopQRSWw",
            short_flags: "46AaCfGgKkMNnqsTtVvXxYy",
            positional: 1,
            ..Spec::default()
        },
        "dbus-run-session" => {
            Spec { long_values: &["config-file", "dbus-daemon"], long_flags: &["help", "version"], ..Spec::default() }
        }
        _ => return None,
    })
}

/// Peels `program` (a basename) off `args` if it is a wrapper.
pub(super) fn peel(program: &str, args: &[Word]) -> Peeled {
    match program {
        "env" => return env(args),
        "eval" => {
            let args = if args.first().is_some_and(|w| w.text == "--") { &args[1..] } else { args };
            let text = args.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
            return Peeled::next(Next::Line(Word::new(text, args.iter().any(|w| !w.is_plain()))));
        }
        "trap" => return trap(args),
        "source" | "." => {
            return match args.first() {
                Some(file) => Peeled::next(Next::File(file.clone())),
                None => Peeled::next(Next::Nothing),
            };
        }
        "builtin" => return Peeled::command(args.to_vec()),
        // `! ! cmd`: tree-sitter takes the second `!` for a command name; bash negates twice. The
        // words after it are a simple command of their own, assignments included.
        "!" => {
            let spec = Spec { assignments: true, ..Spec::default() };
            return match parse(program, &spec, args) {
                Ok(parsed) => {
                    Peeled { effects: assignment_effects(&parsed.assignments), ..Peeled::command(parsed.rest) }
                }
                Err(why) => Peeled::unclassified(why),
            };
        }
        "{" | "}" | "[[" | "]]" | "if" | "then" | "else" | "elif" | "fi" | "do" | "done" | "case" | "esac"
        | "while" | "until" | "for" | "select" | "function" | "in" => {
            return Peeled::unclassified(format!("the shell keyword `{program}` stands where a command name should"));
        }
        "coproc" => return Peeled::unclassified("`coproc` runs a command in the background with its own pipes"),
        "busybox" => {
            return match args.first().map(|w| w.text.as_str()) {
                None | Some("--list" | "--list-full" | "--help") => Peeled::next(Next::Nothing),
                Some(t) if t.starts_with('-') => {
                    Peeled::unclassified(format!("`busybox {t}` is not an option known here"))
                }
                Some(_) => Peeled::command(args.to_vec()),
            };
        }
        "firejail" => return firejail(args),
        "gdb" => return gdb(args),
        "valgrind" => return valgrind(args),
        "perf" => return perf(args),
        "parallel" => return parallel(args),
        "nix-shell" => return nix_shell(args),
        p if shells::is_shell(p) => {
            return shell(p, args);
        }
        _ => {}
    }
    let Some(spec) = spec(program) else { return Peeled::next(Next::Program) };
    let args = if program == "nice" { nice_numbers(args) } else { args.to_vec() };
    let parsed = match parse(program, &spec, &args) {
        Ok(parsed) => parsed,
        Err(why) => return Peeled::unclassified(why),
    };
    let mut peeled = finish(program, parsed);
    if let Next::Command(words) = &peeled.next
        && words.first().is_some_and(|w| w.text.is_empty() && !w.dynamic)
    {
        peeled.next = Next::Nothing;
    }
    peeled
}

/// `nice -10 cmd` and `nice --10 cmd` (an adjustment written as an option) as `nice -n ...`.
fn nice_numbers(args: &[Word]) -> Vec<Word> {
    let mut out = args.to_vec();
    if let Some(first) = out.first_mut() {
        let t = first.text.trim_start_matches('-');
        if first.text.starts_with('-') && !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
            first.text = format!("-n{t}");
        }
    }
    out
}

/// What a wrapper parsed by its [`Spec`] runs.
fn finish(program: &str, parsed: Parsed) -> Peeled {
    let mut effects = assignment_effects(&parsed.assignments);
    let next = match program {
        "time" => {
            effects.extend(parsed.values('o', "output").cloned().map(Effect::Writes));
            command_or_nothing(parsed.rest)
        }
        "ionice" if parsed.has('p', "pid") || parsed.has('P', "pgid") || parsed.has('u', "uid") => Next::Nothing,
        "chroot" => return Peeled::unclassified("paths inside a `chroot` cannot be checked"),
        "watch" if !parsed.has('x', "exec") => line_of(&parsed.rest),
        "xargs" => return xargs(parsed),
        "sudo" => {
            effects.extend(parsed.values('D', "chdir").cloned().map(Effect::Chdir));
            if parsed.has('e', "edit") {
                return Peeled::unclassified("`sudo -e` edits files as another user");
            }
            if parsed.has('l', "list")
                || parsed.has('v', "validate")
                || parsed.has('V', "version")
                || parsed.has('h', "help")
            {
                Next::Nothing
            } else if parsed.rest.is_empty() && (parsed.has('i', "login") || parsed.has('s', "shell")) {
                Next::Stdin
            } else {
                command_or_nothing(parsed.rest)
            }
        }
        // `doas -s` runs the user's shell, which reads standard input.
        "doas" if parsed.rest.is_empty() && parsed.has('s', "") => Next::Stdin,
        "taskset" | "chrt" if parsed.has('p', "pid") => Next::Nothing,
        "chrt" => {
            // The priority is optional for some policies: skip it when it is a number.
            let mut rest = parsed.rest;
            if parsed.options.iter().any(|o| o.is('m', "max")) {
                Next::Nothing
            } else {
                if rest.first().is_some_and(|w| !w.text.is_empty() && w.text.chars().all(|c| c.is_ascii_digit())) {
                    rest.remove(0);
                }
                command_or_nothing(rest)
            }
        }
        "numactl" if parsed.has('s', "show") || parsed.has('H', "hardware") => Next::Nothing,
        "prlimit" if parsed.has('p', "pid") => Next::Nothing,
        "flock" => {
            let mut rest = parsed.rest.into_iter();
            match rest.next() {
                Some(w) if w.text == "-c" || w.text == "--command" => match (rest.next(), rest.next()) {
                    (Some(line), None) => Next::Line(line),
                    _ => Next::Nothing,
                },
                Some(first) => Next::Command(std::iter::once(first).chain(rest).collect()),
                None => Next::Nothing,
            }
        }
        "su" | "runuser" => return su(program, parsed),
        "unshare" | "nsenter" => {
            let root = if program == "unshare" { 'R' } else { 'r' };
            if parsed.has(root, "root") {
                return Peeled::unclassified(format!("paths inside `{program} --root` cannot be checked"));
            }
            for o in parsed.options.iter().filter(|o| o.is('w', "wd")) {
                effects.push(Effect::Chdir(o.value.clone().unwrap_or_else(|| Word::new("$PWD", true))));
            }
            if parsed.rest.is_empty() { Next::Stdin } else { Next::Command(parsed.rest) }
        }
        "systemd-run" => {
            if let Some(o) = parsed
                .options
                .iter()
                .find(|o| o.is('p', "property") || o.long.is_some_and(|l| l.ends_with("-property")))
            {
                let value = o.value.as_ref().map_or("", |v| v.text.as_str());
                return Peeled::unclassified(format!(
                    "`systemd-run` sets the unit property `{value}`, which may run programs"
                ));
            }
            effects.extend(
                parsed
                    .options
                    .iter()
                    .filter(|o| o.long_is("working-directory"))
                    .filter_map(|o| o.value.clone())
                    .map(Effect::Chdir),
            );
            if parsed.has('d', "same-dir") {
                effects.push(Effect::Chdir(Word::literal(".")));
            }
            let setenv: Vec<Word> = parsed.values('E', "setenv").cloned().collect();
            effects.extend(assignment_effects(&setenv));
            if parsed.has('S', "shell") {
                Next::Stdin
            } else {
                // systemd expands `$VAR` and `${VAR}` in the command itself.
                let rest = parsed
                    .rest
                    .into_iter()
                    .map(|mut w| {
                        w.dynamic |= w.text.contains('$');
                        w
                    })
                    .collect();
                command_or_nothing(rest)
            }
        }
        "dbus-run-session" if parsed.options.iter().any(|o| o.long_is("dbus-daemon")) => {
            return Peeled::unclassified("`dbus-run-session --dbus-daemon` runs the given program");
        }
        "xvfb-run" => {
            effects.extend(parsed.values('e', "error-file").cloned().map(Effect::Writes));
            command_or_nothing(parsed.rest)
        }
        "strace" | "ltrace" => {
            for file in parsed.values('o', "output") {
                if let Some(line) = file.text.strip_prefix('|').or_else(|| file.text.strip_prefix('!')) {
                    effects.push(Effect::Line(Word::new(line, file.dynamic)));
                } else {
                    effects.push(Effect::Writes(file.clone()));
                }
            }
            let env: Vec<Word> = parsed.values('E', "env").cloned().collect();
            effects.extend(assignment_effects(&env));
            command_or_nothing(parsed.rest)
        }
        "command" if parsed.has('v', "") || parsed.has('V', "") => Next::Nothing,
        "script" => {
            let mut writes: Vec<Word> = parsed.positional.clone();
            writes.extend(parsed.rest.first().cloned());
            for (short, long) in
                [('B', "log-io"), ('I', "log-in"), ('O', "log-out"), ('T', "log-timing"), ('t', "timing")]
            {
                writes.extend(parsed.values(short, long).cloned());
            }
            effects.extend(writes.into_iter().filter(|w| w.text != "/dev/null").map(Effect::Writes));
            match parsed.values('c', "command").last() {
                Some(line) => Next::Line(line.clone()),
                None => Next::Stdin,
            }
        }
        "ssh" => {
            if parsed.options.iter().any(|o| o.value.as_ref().is_some_and(|v| !v.is_plain())) {
                return Peeled::unclassified("an `ssh` option is computed at run time and may run a local command");
            }
            for o in &parsed.options {
                let value = o.value.as_ref().map_or(String::new(), |v| v.text.to_ascii_lowercase());
                let key = value.split(['=', ' ']).next().unwrap_or_default().to_string();
                if o.short == Some('F')
                    || (o.short == Some('o')
                        && matches!(
                            key.as_str(),
                            "proxycommand"
                                | "localcommand"
                                | "permitlocalcommand"
                                | "knownhostscommand"
                                | "match"
                                | "include"
                        ))
                {
                    return Peeled::unclassified("an `ssh` option may run a local command");
                }
                // Files ssh writes: its log (`-E`), a control socket (`-S`, `ControlPath`), the
                // known hosts (review 26).
                if matches!(o.short, Some('E' | 'S')) {
                    effects.extend(o.value.clone().map(Effect::Writes));
                }
                if o.short == Some('o')
                    && matches!(key.as_str(), "controlpath" | "userknownhostsfile" | "globalknownhostsfile")
                    && let Some(v) = &o.value
                    && let Some((_, file)) = v.text.split_once(['=', ' '])
                {
                    effects.push(Effect::Writes(Word::like(v, file.trim())));
                }
            }
            if parsed.rest.is_empty() { Next::Nothing } else { line_of(&parsed.rest) }
        }
        _ => command_or_nothing(parsed.rest),
    };
    Peeled { next, appends: false, effects }
}

fn command_or_nothing(rest: Vec<Word>) -> Next {
    if rest.is_empty() { Next::Nothing } else { Next::Command(rest) }
}

/// The words joined into one command line (what `watch`, `ssh` and `sudo -s` hand a shell).
fn line_of(words: &[Word]) -> Next {
    if words.is_empty() {
        return Next::Nothing;
    }
    let text = words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
    Next::Line(Word::new(text, words.iter().any(|w| !w.is_plain())))
}

/// `env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...]`; `-S STRING` splits STRING into
/// words that take its place, options included.
fn env(args: &[Word]) -> Peeled {
    let mut args: Vec<Word> = args.to_vec();
    let mut effects = Vec::new();
    let mut i = 0;
    let mut splits = 0;
    // Options end at `--` or the first other word; settings (any word with `=`) follow.
    let mut options_done = false;
    while let Some(w) = args.get(i).cloned() {
        let t = w.text.as_str();
        if !options_done && t == "--" {
            i += 1;
            options_done = true;
            continue;
        }
        if !options_done && t == "-" {
            i += 1;
            continue;
        }
        if !options_done && t.starts_with('-') {
            if !w.is_plain() {
                return Peeled::unclassified("the options of `env` are computed at run time");
            }
            let mut split: Option<String> = None;
            let mut consumed = 1;
            if let Some(long) = t.strip_prefix("--") {
                let (name, value) = match long.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (long, None),
                };
                const LONG: &[&str] = &[
                    "ignore-environment",
                    "null",
                    "unset",
                    "chdir",
                    "split-string",
                    "argv0",
                    "block-signal",
                    "default-signal",
                    "ignore-signal",
                    "list-signal-handling",
                    "debug",
                    "help",
                    "version",
                ];
                let mut found = LONG.iter().filter(|l| l.starts_with(name));
                let full = match (LONG.iter().find(|l| **l == name), found.next(), found.next()) {
                    (Some(exact), _, _) => *exact,
                    (None, Some(only), None) if !name.is_empty() => *only,
                    _ => return Peeled::unclassified(format!("`env --{name}` is not an option known here")),
                };
                let takes_value = matches!(full, "unset" | "chdir" | "split-string" | "argv0");
                let is_chdir = full == "chdir";
                let value = match value {
                    Some(v) => Some(v),
                    None if takes_value => {
                        consumed = 2;
                        match args.get(i + 1) {
                            Some(v) if v.is_plain() => Some(v.text.clone()),
                            Some(_) => {
                                return Peeled::unclassified("the value of an `env` option is computed at run time");
                            }
                            None => None,
                        }
                    }
                    None => None,
                };
                if is_chdir {
                    effects.push(Effect::Chdir(Word::new(value.clone().unwrap_or_default(), value.is_none())));
                }
                if full == "split-string" {
                    split = value;
                }
            } else {
                let cluster = t.strip_prefix('-').unwrap_or_default();
                for (at, c) in cluster.char_indices() {
                    let rest = &cluster[at + 1..];
                    match c {
                        'i' | '0' | 'v' => {}
                        'u' | 'C' | 'S' | 'a' | 'P' => {
                            let value = if rest.is_empty() {
                                consumed = 2;
                                match args.get(i + 1) {
                                    Some(v) if v.is_plain() => Some(v.text.clone()),
                                    Some(_) => {
                                        return Peeled::unclassified(
                                            "the value of an `env` option is computed at run time",
                                        );
                                    }
                                    None => None,
                                }
                            } else {
                                Some(rest.to_string())
                            };
                            if c == 'C' {
                                effects
                                    .push(Effect::Chdir(Word::new(value.clone().unwrap_or_default(), value.is_none())));
                            }
                            if c == 'S' {
                                split = value;
                            }
                            if c == 'P' {
                                return Peeled::unclassified("`env -P` looks programs up on another path");
                            }
                            break;
                        }
                        _ => return Peeled::unclassified(format!("`env -{c}` is not an option known here")),
                    }
                }
            }
            match split {
                Some(text) if text.len() > super::bounds::MAX_SPLIT_STRING => {
                    return Peeled::unclassified("the string of `env -S` is too long to check");
                }
                Some(text) => {
                    splits += 1;
                    if splits > 8 {
                        return Peeled::unclassified("`env -S` is nested too deeply to check");
                    }
                    let words = match split_string(&text) {
                        Ok(words) => words,
                        Err(why) => return Peeled::unclassified(format!("`env -S`: {why}")),
                    };
                    args.splice(i..i + consumed.min(args.len() - i), words);
                }
                None => i += consumed,
            }
            continue;
        }
        if is_env_assignment(&w) {
            effects.extend(assignment_effects(std::slice::from_ref(&w)));
            i += 1;
            options_done = true;
            continue;
        }
        break;
    }
    let rest = args.get(i..).unwrap_or_default().to_vec();
    Peeled { next: command_or_nothing(rest), appends: false, effects }
}

/// GNU env's `-S` splitting: whitespace separates words; `'...'` and `"..."` quote; backslash
/// escapes; `${NAME}` is replaced by a variable's value (so the word is computed at run time);
/// `#` at the start of a word ends the string; `\c` ends it too.
fn split_string(text: &str) -> Result<Vec<Word>, String> {
    let mut words = Vec::new();
    let mut current: Option<Word> = None;
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c') => {
                words.extend(current.take());
            }
            (None, '#') if current.is_none() => break,
            (None, '\'' | '"') => {
                quote = Some(c);
                current.get_or_insert_with(|| Word::literal(""));
            }
            (Some(q), _) if c == q => quote = None,
            (Some('\''), '\\') if matches!(chars.peek(), Some('\\' | '\'')) => {
                let next = chars.next().unwrap_or_default();
                current.get_or_insert_with(|| Word::literal("")).text.push(next);
            }
            (Some('\''), _) => current.get_or_insert_with(|| Word::literal("")).text.push(c),
            (_, '\\') => {
                let next = chars.next().ok_or("a trailing backslash")?;
                let decoded = match next {
                    'c' => break,
                    'f' => '\x0c',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'v' => '\x0b',
                    '_' if quote.is_none() => {
                        words.extend(current.take());
                        continue;
                    }
                    '_' => ' ',
                    '#' | '$' | '\\' | '"' | '\'' => next,
                    other => return Err(format!("the escape `\\{other}` is not known here")),
                };
                current.get_or_insert_with(|| Word::literal("")).text.push(decoded);
            }
            (_, '$') => {
                let w = current.get_or_insert_with(|| Word::literal(""));
                w.dynamic = true;
                w.text.push('$');
            }
            _ => current.get_or_insert_with(|| Word::literal("")).text.push(c),
        }
    }
    if quote.is_some() {
        return Err("an unterminated quote".into());
    }
    words.extend(current);
    Ok(words)
}

/// `trap [-lpP] [[ACTION] SIGNAL...]`: ACTION is a command line run on the signal.
fn trap(args: &[Word]) -> Peeled {
    let rest = match args.first().map(|w| w.text.as_str()) {
        Some("--") => &args[1..],
        Some("-l" | "-p" | "-P" | "-lp" | "-pl") => return Peeled::next(Next::Nothing),
        Some(t) if t.starts_with('-') && t.len() > 1 => {
            return Peeled::unclassified(format!("`trap {t}` is not an option known here"));
        }
        _ => args,
    };
    match rest {
        [] => Peeled::next(Next::Nothing),
        [action, ..] if action.text == "-" => Peeled::next(Next::Nothing),
        [action, ..] if !action.dynamic && action.text.chars().all(|c| c.is_ascii_digit()) => {
            Peeled::next(Next::Nothing)
        }
        [action, ..] => Peeled::next(Next::Line(action.clone())),
    }
}

/// `xargs [OPTION]... [COMMAND [ARG]...]`: the command gets more arguments from the input, or
/// with `-I R` has R replaced by input anywhere in it.
fn xargs(parsed: Parsed) -> Peeled {
    let replace = parsed
        .options
        .iter()
        .rev()
        .find(|o| o.is('I', "") || o.is('i', "replace"))
        .map(|o| o.value.as_ref().map_or("{}".to_string(), |v| v.text.clone()));
    // `-a FILE` / `--arg-file=FILE`: the arguments come from FILE, which the command shows.
    let reads: Vec<Effect> = parsed
        .options
        .iter()
        .filter(|o| o.is('a', "arg-file"))
        .filter_map(|o| o.value.clone())
        .map(Effect::Reads)
        .collect();
    if parsed.rest.is_empty() {
        // xargs runs `echo` with the input.
        return Peeled { effects: reads, ..Peeled::next(Next::Nothing) };
    }
    let mut rest = parsed.rest;
    if let Some(r) = &replace {
        for w in &mut rest {
            if !r.is_empty() && w.text.contains(r.as_str()) {
                w.dynamic = true;
            }
        }
    }
    Peeled { next: Next::Command(rest), appends: replace.is_none(), effects: reads }
}

/// `su [options] [-] [USER [ARG]...]`, `runuser [options] -u USER [COMMAND]`: `-c COMMAND` is a
/// command line for the user's shell; without it, the arguments after USER go to that shell.
fn su(program: &str, parsed: Parsed) -> Peeled {
    if let Some(shell) = parsed.values('s', "shell").last() {
        let base = shell.text.rsplit('/').next().unwrap_or_default();
        if !shell.is_plain() || !matches!(base, "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash") {
            return Peeled::unclassified(format!("`{program} -s` runs the given program as the shell"));
        }
    }
    let command = parsed.options.iter().rev().find(|o| o.is('c', "command") || o.long_is("session-command"));
    if let Some(line) = command.and_then(|o| o.value.clone()) {
        return Peeled::next(Next::Line(line));
    }
    if program == "runuser" && parsed.has('u', "user") {
        return Peeled::command(parsed.rest);
    }
    let mut rest = parsed.rest;
    if rest.first().is_some_and(|w| w.text == "-") {
        rest.remove(0);
    }
    if rest.is_empty() {
        return Peeled::next(Next::Stdin);
    }
    // The user, then the shell's own arguments.
    let shell_args = &rest[1..];
    shell("sh", shell_args)
}

/// A shell run with `args`: what it reads (a command line, a script, its input), and its
/// start-up files when it reads them (a login or interactive shell).
fn shell(program: &str, args: &[Word]) -> Peeled {
    let (invocation, startup) = shells::invocation_and_startup(program, args);
    let effects = startup.map(Effect::Unclassified).into_iter().collect();
    Peeled {
        effects,
        ..Peeled::next(match invocation {
            Invocation::Line(w) => Next::Line(w),
            Invocation::File(w) => Next::File(w),
            Invocation::Stdin => Next::Stdin,
            Invocation::Nothing => Next::Nothing,
            Invocation::Unclassified(why) => Next::Unclassified(why),
        })
    }
}

/// `firejail [OPTIONS] [PROGRAM [ARGS]]`: every option is one word (`--name` or `--name=value`).
fn firejail(args: &[Word]) -> Peeled {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') {
            break;
        }
        if !w.is_plain() {
            return Peeled::unclassified("the options of `firejail` are computed at run time");
        }
        if t.starts_with("--shell=") && t != "--shell=none" {
            return Peeled::unclassified("`firejail --shell` runs the given program as the shell");
        }
        if matches!(t, "--list" | "--tree" | "--top" | "--help" | "--version") || t.starts_with("--join") {
            return Peeled::next(Next::Nothing);
        }
        i += 1;
    }
    let rest = args.get(i..).unwrap_or_default().to_vec();
    if rest.is_empty() { Peeled::next(Next::Stdin) } else { Peeled::next(Next::Command(rest)) }
}

/// `gdb`: its commands (`-ex`, `-x`, `-eval-command`, ...) can run programs (`shell`, `run`,
/// `python`), and without `-batch` it reads commands from its input. gdb reads its options with
/// `getopt_long_only` — one dash or two, `=VALUE` or the next word, any unique prefix (`-eval`,
/// `--eval-comm=`, `-comm=`) — so only options known not to run anything, written in full, are
/// understood; any other asks. A command string that runs a shell command (`shell CMD`, `!CMD`)
/// is analysed as well, so a rule's deny holds.
fn gdb(args: &[Word]) -> Peeled {
    const QUIET: &[&str] = &["batch", "batch-silent", "q", "quiet", "silent", "nx", "n", "nh", "readnow", "readnever"];
    const DONE: &[&str] = &["version", "help", "configuration"];
    let mut effects = Vec::new();
    let mut batch = false;
    let mut why = None;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        if t == "--args" || t == "-args" {
            break;
        }
        if !w.is_plain() {
            why = Some("an option of `gdb` is computed at run time".to_string());
            continue;
        }
        let Some(option) = t.strip_prefix("--").or_else(|| t.strip_prefix('-')).filter(|o| !o.is_empty()) else {
            continue;
        };
        let (name, attached) = match option.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (option, None),
        };
        if attached.is_none() && DONE.contains(&name) {
            return Peeled { effects, ..Peeled::next(Next::Nothing) };
        }
        if attached.is_none() && QUIET.contains(&name) {
            batch |= name.starts_with("batch");
            continue;
        }
        // `-ex`, `-iex` and the prefixes of `-eval-command`, `-init-eval-command` take a command.
        let command = matches!(name, "ex" | "iex" | "eiex")
            || (name.len() >= 3 && "eval-command".starts_with(name))
            || (name.len() >= 6 && "init-eval-command".starts_with(name));
        if command {
            let value = match attached {
                Some(v) => Some(Word::like(w, v)),
                None => {
                    i += 1;
                    args.get(i - 1).cloned()
                }
            };
            if let Some(line) = value.as_ref().and_then(|v| shell_escape(&v.text).map(|l| Word::like(v, l))) {
                effects.push(Effect::Line(line));
            }
        }
        why.get_or_insert_with(|| format!("gdb runs the commands `{t}` gives it, or its option is not known here"));
    }
    if let Some(why) = why {
        return Peeled { effects, ..Peeled::unclassified(why) };
    }
    if !batch {
        return Peeled::next(Next::Stdin);
    }
    Peeled::next(Next::Nothing)
}

/// The shell command an editor's or debugger's command runs (`!CMD`, `:!CMD`, `shell CMD`),
/// if it is one.
pub(super) fn shell_escape(command: &str) -> Option<&str> {
    let command = command.trim_start().trim_start_matches(':').trim_start();
    if let Some(rest) = command.strip_prefix('!') {
        return Some(rest.trim_start());
    }
    let (first, rest) = command.split_once([' ', '\t'])?;
    matches!(first, "shell" | "sh" | ".shell" | ".system" | "system" | "!").then(|| rest.trim_start())
}

/// `valgrind [OPTIONS] PROGRAM [ARGS]`: every option is one word.
fn valgrind(args: &[Word]) -> Peeled {
    let mut effects = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if !t.starts_with('-') {
            break;
        }
        i += 1;
        if t == "--" {
            break;
        }
        if !w.is_plain() {
            return Peeled::unclassified("the options of `valgrind` are computed at run time");
        }
        if t.starts_with("--db-command") || t.starts_with("--db-attach") {
            return Peeled::unclassified("`valgrind --db-command` runs the given command");
        }
        for prefix in ["--log-file=", "--xml-file="] {
            if let Some(file) = t.strip_prefix(prefix) {
                effects.push(Effect::Writes(Word::new(file, file.contains('%'))));
            }
        }
    }
    Peeled { next: command_or_nothing(args.get(i..).unwrap_or_default().to_vec()), appends: false, effects }
}

/// `perf stat|record|trace [OPTIONS] [--] COMMAND`; other subcommands run nothing given, and
/// `perf script` runs scripts.
fn perf(args: &[Word]) -> Peeled {
    let Some(pos) = args.iter().position(|w| !w.text.starts_with('-')) else { return Peeled::next(Next::Nothing) };
    if args[..pos].iter().any(|w| !matches!(w.text.as_str(), "-v" | "-vv" | "--no-pager" | "--debug")) {
        return Peeled::unclassified("the options of `perf` are not known here");
    }
    let mut sub = args[pos].text.as_str();
    let mut rest = &args[pos + 1..];
    if matches!(sub, "mem" | "lock" | "sched" | "kmem" | "kwork" | "timechart" | "c2c")
        && rest.first().is_some_and(|w| w.text == "record")
    {
        sub = "record";
        rest = &rest[1..];
    }
    let spec = Spec {
        short_values: "eoptCrxGIMFcmjuDSL",
        short_flags: "aAgnNqsvBTRdPiHW",
        long_values: &[
            "event",
            "output",
            "pid",
            "tid",
            "cpu",
            "repeat",
            "field-separator",
            "cgroup",
            "interval-print",
            "metrics",
            "freq",
            "count",
            "mmap-pages",
            "uid",
            "call-graph",
            "branch-filter",
            "filter",
            "delay",
            "control",
            "post",
            "pre",
            "duration",
            "expr",
            "max-stack",
        ],
        long_flags: &[
            "all-cpus",
            "no-inherit",
            "scale",
            "verbose",
            "quiet",
            "null",
            "no-aggr",
            "per-socket",
            "per-core",
            "per-thread",
            "per-node",
            "detailed",
            "big-num",
            "no-big-num",
            "append",
            "stat",
            "sample-cpu",
            "timestamp",
            "raw-samples",
            "no-buildid",
            "no-buildid-cache",
            "summary",
            "topdown",
            "help",
        ],
        abbreviations: true,
        ..Spec::default()
    };
    match sub {
        "stat" | "record" | "trace" => match parse("perf", &spec, rest) {
            Ok(parsed) => {
                if parsed.options.iter().any(|o| o.long_is("pre") || o.long_is("post")) {
                    return Peeled::unclassified("`perf stat --pre/--post` runs the given commands");
                }
                let effects = parsed.values('o', "output").cloned().map(Effect::Writes).collect();
                Peeled { next: command_or_nothing(parsed.rest), appends: false, effects }
            }
            Err(why) => Peeled::unclassified(why),
        },
        "script" => Peeled::unclassified("`perf script` runs scripts"),
        _ => Peeled::next(Next::Nothing),
    }
}

/// GNU `parallel [OPTIONS] [COMMAND [ARGS]] [::: ARGS | :::: FILES]...`: the command words are
/// joined into a line for the shell, the inputs (quoted by parallel) replacing `{}`; without a
/// command, the inputs themselves are the commands.
fn parallel(args: &[Word]) -> Peeled {
    let spec = Spec {
        short_values: "jnNLPdEIaCS",
        short_flags: "0kquvrtX",
        long_values: &[
            "jobs",
            "max-procs",
            "max-args",
            "max-replace-args",
            "max-lines",
            "delimiter",
            "eof",
            "arg-file",
            "colsep",
            "delay",
            "timeout",
            "retries",
            "halt",
            "joblog",
            "results",
            "tagstring",
        ],
        long_flags: &[
            "null",
            "keep-order",
            "quote",
            "ungroup",
            "verbose",
            "no-run-if-empty",
            "tag",
            "dry-run",
            "progress",
            "bar",
            "eta",
            "will-cite",
            "line-buffer",
            "lb",
            "group",
            "xargs",
            "trim",
            "halt-on-error",
            "citation",
            "help",
            "version",
        ],
        abbreviations: false,
        ..Spec::default()
    };
    let end = args.iter().position(|w| w.text.starts_with(":::")).unwrap_or(args.len());
    let parsed = match parse("parallel", &spec, &args[..end]) {
        Ok(parsed) => parsed,
        Err(why) => return Peeled::unclassified(why),
    };
    if parsed.has('S', "") {
        return Peeled::unclassified("`parallel -S` runs the commands on other machines");
    }
    let mut effects: Vec<Effect> = parsed
        .options
        .iter()
        .filter(|o| o.long_is("joblog"))
        .filter_map(|o| o.value.clone())
        .map(Effect::Writes)
        .collect();
    effects.extend(
        parsed.options.iter().filter(|o| o.long_is("results")).filter_map(|o| o.value.clone()).map(Effect::WritesUnder),
    );
    if parsed.rest.is_empty() {
        return Peeled {
            next: Next::Unclassified("`parallel` without a command runs its inputs as commands".into()),
            appends: false,
            effects,
        };
    }
    if parsed.rest.iter().any(|w| w.text.contains("{=")) {
        return Peeled::unclassified("`parallel {= ... =}` runs Perl code");
    }
    let rest: Vec<Word> = parsed
        .rest
        .into_iter()
        .map(|mut w| {
            if w.text.starts_with('{') && w.text.ends_with('}') {
                w.dynamic = true;
            }
            w
        })
        .collect();
    let next = if parsed.options.iter().any(|o| o.is('q', "quote")) { Next::Command(rest) } else { line_of(&rest) };
    Peeled { next, appends: false, effects }
}

/// `nix-shell [OPTIONS] --run CMD | --command CMD`: the command is a shell line.
fn nix_shell(args: &[Word]) -> Peeled {
    let mut lines = args.windows(2).filter(|p| p[0].text == "--run" || p[0].text == "--command").map(|p| p[1].clone());
    match lines.next() {
        Some(line) => Peeled::next(Next::Line(line)),
        None => Peeled::next(Next::Nothing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    /// The command a wrapper runs, as text, or how it ends.
    fn next(line: &str) -> String {
        let w = words(line);
        show(peel(&w[0].text, &w[1..]).next)
    }

    fn show(next: Next) -> String {
        match next {
            Next::Command(words) => words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "),
            Next::Line(w) => format!("line: {}", w.text),
            Next::File(w) => format!("file: {}", w.text),
            Next::Stdin => "stdin".into(),
            Next::Nothing => "nothing".into(),
            Next::Program => "program".into(),
            Next::Unclassified(_) => "unclassified".into(),
        }
    }

    #[test]
    fn the_wrapper_table() {
        // (command, what it runs): one row per wrapper and option form.
        let table = [
            ("env rm x", "rm x"),
            ("env -i A=1 rm x", "rm x"),
            ("env -u HOME -C /tmp rm x", "rm x"),
            ("env --chdir=/tmp rm x", "rm x"),
            ("env - rm x", "rm x"),
            ("env", "nothing"),
            ("env --frob rm x", "unclassified"),
            ("nohup rm x", "rm x"),
            ("setsid -f rm x", "rm x"),
            ("time -p rm x", "rm x"),
            ("time -o t.txt rm x", "rm x"),
            ("doas -u root rm x", "rm x"),
            ("unbuffer rm x", "rm x"),
            ("nice rm x", "rm x"),
            ("nice -n 5 rm x", "rm x"),
            ("nice -10 rm x", "rm x"),
            ("nice --adj=3 rm x", "rm x"),
            ("ionice -c 3 rm x", "rm x"),
            ("ionice -p 123", "nothing"),
            ("stdbuf -oL -e 0 rm x", "rm x"),
            ("timeout 5 rm x", "rm x"),
            ("timeout -s KILL -k 1 5 rm x", "rm x"),
            ("timeout --signal=KILL 5 rm x", "rm x"),
            ("timeout --sig KILL 5 rm x", "rm x"),
            ("timeout -x 5 rm x", "unclassified"),
            ("chroot /srv rm x", "unclassified"),
            ("watch -n 1 rm x", "line: rm x"),
            ("watch -x rm x", "rm x"),
            ("xargs rm", "rm"),
            ("xargs -0 -n 1 -P4 rm -f", "rm -f"),
            ("xargs -I {} rm {}", "rm {}"),
            ("xargs", "nothing"),
            ("sudo rm x", "rm x"),
            ("sudo -u root -E rm x", "rm x"),
            ("sudo -s -- rm x", "rm x"),
            ("sudo -i", "stdin"),
            ("sudo -l rm", "nothing"),
            ("sudo -e /etc/hosts", "unclassified"),
            ("sudo A=1 rm x", "rm x"),
            ("taskset 1 rm x", "rm x"),
            ("taskset -c 0 rm x", "rm x"),
            ("taskset -p 1 123", "nothing"),
            ("chrt 10 rm x", "rm x"),
            ("chrt -f 10 rm x", "rm x"),
            ("chrt -o rm x", "rm x"),
            ("chrt -p 123", "nothing"),
            ("numactl --interleave=all rm x", "rm x"),
            ("numactl -N 0 -m 0 rm x", "rm x"),
            ("numactl --show", "nothing"),
            ("prlimit --nofile=1024 rm x", "rm x"),
            ("prlimit -n1024 rm x", "rm x"),
            ("prlimit -p 1", "nothing"),
            ("flock /tmp/l rm x", "rm x"),
            ("flock -w 5 /tmp/l rm x", "rm x"),
            ("flock /tmp/l -c X", "line: X"),
            ("flock -x 3", "nothing"),
            ("setpriv --reuid=1000 --clear-groups rm x", "rm x"),
            ("runuser -u nobody rm x", "rm x"),
            ("runuser -u nobody -- rm x", "rm x"),
            ("runuser nobody -c X", "line: X"),
            ("su -c X", "line: X"),
            ("su - root -c X", "line: X"),
            ("su root", "stdin"),
            ("su -s /bin/rm root", "unclassified"),
            ("unshare -r rm x", "rm x"),
            ("unshare --mount --map-root-user rm x", "rm x"),
            ("unshare -m", "stdin"),
            ("nsenter -t 1 -m -u rm x", "rm x"),
            ("nsenter --target 1 --mount=/proc/1/ns/mnt rm x", "rm x"),
            ("firejail --private --net=none rm x", "rm x"),
            ("firejail", "stdin"),
            ("systemd-run --user --scope rm x", "rm x"),
            ("systemd-run -p ExecStopPost=/bin/rm true", "unclassified"),
            ("systemd-run --shell", "stdin"),
            ("dbus-run-session -- rm x", "rm x"),
            ("dbus-run-session --config-file=c rm x", "rm x"),
            ("xvfb-run -a rm x", "rm x"),
            ("strace -f -o t.txt rm x", "rm x"),
            ("strace -e trace=file rm x", "rm x"),
            ("strace -p 1", "nothing"),
            ("ltrace -o t rm x", "rm x"),
            ("gdb -batch -ex X --args rm x", "unclassified"),
            ("gdb -batch --args rm x", "nothing"),
            ("valgrind --tool=memcheck -q rm x", "rm x"),
            ("valgrind --db-command=X rm x", "unclassified"),
            ("perf stat rm x", "rm x"),
            ("perf stat -e cycles -r 3 -- rm x", "rm x"),
            ("perf record -g -o p.data rm x", "rm x"),
            ("perf report", "nothing"),
            ("perf script", "unclassified"),
            ("caffeinate -i rm x", "rm x"),
            ("busybox rm x", "rm x"),
            ("busybox sh -c X", "sh -c X"),
            ("parallel rm ::: x", "line: rm"),
            ("parallel -j 2 rm {} ::: x", "line: rm {}"),
            ("parallel ::: X", "unclassified"),
            ("exec rm x", "rm x"),
            ("exec -a name rm x", "rm x"),
            ("exec", "nothing"),
            ("command rm x", "rm x"),
            ("command -v rm", "nothing"),
            ("builtin eval X", "eval X"),
            ("coproc rm x", "unclassified"),
            ("eval rm x", "line: rm x"),
            ("eval -- rm x", "line: rm x"),
            ("trap X EXIT", "line: X"),
            ("trap -- X EXIT", "line: X"),
            ("trap - EXIT", "nothing"),
            ("trap -p", "nothing"),
            ("source f.sh", "file: f.sh"),
            (". f.sh", "file: f.sh"),
            ("script -qc X /dev/null", "line: X"),
            ("script -q log", "stdin"),
            ("ssh host rm x", "line: rm x"),
            ("ssh -p 22 -i key host rm x", "line: rm x"),
            ("ssh -o ProxyCommand=X host", "unclassified"),
            ("nix-shell -p hello --run X", "line: X"),
            ("bash -c X", "line: X"),
            ("ls -la", "program"),
            ("! rm x", "rm x"),
            ("! A=1 rm x", "rm x"),
            ("time A=1 rm x", "rm x"),
            ("{ rm x", "unclassified"),
            ("then rm x", "unclassified"),
        ];
        let mut failures = Vec::new();
        for (line, expected) in table {
            let got = next(line);
            if got != expected {
                failures.push(format!("{line}: got {got}, expected {expected}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn env_split_string_takes_the_place_of_its_option() {
        let peel_env = |args: Vec<Word>| show(peel("env", &args).next);
        assert_eq!(peel_env(vec![Word::literal("-Srm x")]), "rm x");
        assert_eq!(peel_env(vec![Word::literal("-S"), Word::literal("rm x"), Word::literal("y")]), "rm x y");
        assert_eq!(peel_env(vec![Word::literal("--split-string=rm x")]), "rm x");
        assert_eq!(peel_env(vec![Word::literal("-iS-u HOME rm 'a b'")]), "rm a b");
        assert_eq!(peel_env(vec![Word::literal("-S"), Word::literal("-S rm x")]), "rm x");
        assert_eq!(peel_env(vec![Word::literal("-Srm\\_x")]), "rm x");
        assert_eq!(peel_env(vec![Word::literal("-Srm x #c")]), "rm x");
        let dynamic = peel("env", &[Word::literal("-S${CMD} x")]);
        assert!(matches!(&dynamic.next, Next::Command(w) if w[0].dynamic), "{dynamic:?}");
        assert_eq!(peel_env(vec![Word::literal("-S'rm x")]), "unclassified");
    }

    #[test]
    fn wrappers_report_what_they_write_and_set() {
        let effects = |line: &str| {
            let w = words(line);
            peel(&w[0].text, &w[1..]).effects
        };
        assert_eq!(effects("time -o t.txt ls"), [Effect::Writes(Word::literal("t.txt"))]);
        assert_eq!(effects("strace -o t.txt ls"), [Effect::Writes(Word::literal("t.txt"))]);
        assert_eq!(effects("strace -o |X ls"), [Effect::Line(Word::literal("X"))]);
        assert!(matches!(effects("env GIT_EDITOR=x git commit")[..], [Effect::Unclassified(_)]));
        assert!(matches!(effects("sudo LD_PRELOAD=x ls")[..], [Effect::Unclassified(_)]));
        assert!(matches!(effects("strace -E LD_PRELOAD=x ls")[..], [Effect::Unclassified(_)]));
        assert!(effects("env FOO=1 ls").is_empty());
        assert_eq!(effects("env -C /tmp ls"), [Effect::Chdir(Word::literal("/tmp"))]);
        assert_eq!(effects("sudo -D /tmp ls"), [Effect::Chdir(Word::literal("/tmp"))]);
        let xargs = peel("xargs", &words("env"));
        assert!(xargs.appends);
        let replaced = peel("xargs", &words("-I % sh -c %"));
        assert!(!replaced.appends);
        assert!(matches!(&replaced.next, Next::Command(w) if w[2].dynamic));
    }
}
