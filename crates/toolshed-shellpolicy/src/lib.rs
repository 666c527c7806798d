//! # toolshed-shellpolicy
//!
//! Owns: the analysis of a bash command line into permission requests ([`permission_requests`],
//! [`analyse`]). Pure: it parses and reads the file system's metadata (which programs are on
//! `PATH`, where links lead) but never runs a process and never writes; it is fuzzed
//! (`tests/shell_analysis_props.rs`) and bounded (`tests/shell_analysis_bounds.rs`). Fails
//! closed: what it does not positively understand becomes a request that asks. Used by
//! `toolshed-shell`, the only crate that runs commands.
//!
//! What a shell command line needs permission for.
//!
//! The line is parsed with tree-sitter-bash and walked (iteratively, never recursing with the
//! input's nesting) over an explicit set of node kinds the analysis understands — see
//! `docs/shell.md`, "The command-line analysis", for the grammar. Anything else, and anything
//! whose effect cannot be resolved to plain words, is "unclassified": the `bash` request needs at
//! least `ask`. A line is split into simple commands (across `&&`, `||`, `;`, newlines, pipes,
//! subshells, braces, `if`/`while`/`for`/`case`, function bodies, command and process
//! substitution, backticks, here-documents, and the strings of `bash -c`, `eval`, `trap`, `su
//! -c`, `watch`, ...). Each simple command is matched in several views — as written (OpenCode's
//! view), with environment prefixes removed, the program name unquoted and stripped of its path,
//! and each wrapper of the table in [`wrappers`] (`env`, `sudo`, `timeout`, `xargs`, `taskset`,
//! `flock`, `strace`, shells' `-c`, ...) peeled off — and the strictest decision wins (every
//! view is a pattern of one `bash` request, and a request is denied if any pattern is denied).
//! Behind the table, every later word of a command that names a program on `PATH` (or an
//! executable file, or a builtin that runs commands) starts a *secondary* view: a secondary
//! request whose deny asks (the word may only be an argument, as in `echo rm x`).
//!
//! Redirection targets are file writes (`edit`) or reads (`read`), and so are the files known
//! writers write (`cp`, `mv`, `rm`, `touch`, `mkdir`, `chmod`, `tee`, `tar -x`, `patch`, `git
//! apply`, sed's `w` and `-i`, `sort -o`, ...: see [`programs`] and [`sed`]). Programs that
//! options run (`rg --pre CMD`, `find -exec CMD ;`, `git rebase -x CMD`) are commands checked
//! like any other. Setting a variable that makes programs run programs (`GIT_EDITOR`, `PATH`,
//! `LD_PRELOAD`, ...: [`environment`]), `git config` of a key not known to be harmless, and
//! builtins that change what words mean (`alias`, `hash -p`, `enable -f`: [`builtins`]) ask. Path
//! arguments that resolve outside the worktree, symlinks included, need `external_directory`. A
//! path known only at run time (`> $f`, `rm "$dir"/x`) cannot be checked here; the sandbox
//! confines what such a command may write. The analysis is bounded ([`bounds`]): past its limits
//! a command is too complex to analyse and asks.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use toolshed_core::paths::lexical_normalise;
use toolshed_core::permission::{Action, PermissionRequest};
use tree_sitter::{ParseOptions, Parser};

use bounds::Budget;
use programs::Effect;
use toolshed_path::{Confinement, ResolvedPath};
use wrappers::Next;

mod bounds;
mod builtins;
mod environment;
mod programs;
mod reach;
mod sed;
mod shells;
mod syntax;
mod words;
mod wrappers;

use words::Word;

/// How deep `bash -c` / `eval` strings and commands run by options are followed.
const MAX_NESTING: usize = 4;
/// How many wrappers one command may have.
const MAX_PEELS: usize = 32;

/// Programs whose arguments are paths to check (after skipping the ones noted in `path_args`).
const FILE_COMMANDS: &[&str] = &[
    "cat", "ls", "cp", "mv", "rm", "rmdir", "mkdir", "touch", "chmod", "chown", "chgrp", "ln", "tee", "head", "tail",
    "less", "more", "wc", "stat", "file", "du", "tree", "diff", "cmp", "find", "grep", "rg", "truncate", "shred",
    "install", "rsync", "scp", "dd", "source", ".", "unlink", "egrep", "fgrep", "tac", "nl", "strings", "xxd", "od",
    "hexdump", "base64", "base32", "cut", "paste", "fold", "fmt", "rev", "bat", "batcat", "comm", "expand", "iconv",
];

/// Programs that do not show the contents of the files their arguments name (the names, sizes
/// or metadata at most, or they change them): their arguments are not `read` requests. Every
/// other program's are (see `Analyzer::named_files`) — `mv` and `ln` too: a secret renamed or
/// linked under another name is no longer guarded by its name.
const NO_CONTENTS: &[&str] = &[
    "rm", "rmdir", "unlink", "touch", "chmod", "chown", "chgrp", "ls", "stat", "test", "[", "[[", "file", "du",
    "mkdir", "echo", "printf", "basename", "dirname", "realpath", "readlink", "wc", "cd", "pushd", "export", "unset",
    "local", "declare", "typeset", "readonly", "true", "false", ":", "sleep", "which", "type", "command", "hash",
    "mktemp", "truncate", "shred", "tree", "exit", "return", "kill", "wait", "jobs",
];

/// Programs that read the files they are given (their in-worktree paths are checked as `read`).
/// The `read` rules apply to them (`.env` asks), and a file-name pattern among their arguments
/// (`cat *`, `grep KEY .e*`) is a [`TreeRead`].
const READERS: &[&str] = &[
    "cat", "head", "tail", "less", "more", "source", ".", "grep", "egrep", "fgrep", "rg", "tac", "nl", "strings",
    "xxd", "od", "hexdump", "base64", "base32", "cut", "paste", "fold", "fmt", "rev", "bat", "batcat", "diff", "cmp",
    "comm", "expand", "iconv",
];

/// Programs that only read or list the paths they name, or whose writes [`programs`] analyses
/// in full: a protected path among their arguments is not taken for a write (see
/// `Analyzer::protected_arguments`).
const NAMES_ONLY: &[&str] = &[
    "ls",
    "stat",
    "test",
    "[",
    "file",
    "du",
    "echo",
    "printf",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "wc",
    "which",
    "type",
    "true",
    "false",
    ":",
    "tree",
    "find",
    "git",
    "grep",
    "egrep",
    "fgrep",
    "zgrep",
    "rg",
    "ag",
    "ack",
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "bat",
    "batcat",
    "tac",
    "nl",
    "strings",
    "od",
    "hexdump",
    "base64",
    "base32",
    "cut",
    "paste",
    "fold",
    "fmt",
    "rev",
    "diff",
    "cmp",
    "comm",
    "expand",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "jq",
    "sed",
    "sort",
    "uniq",
    "tar",
    "rsync",
    "scp",
    "cp",
    "dd",
    "source",
    ".",
];

/// Builtins that run the command in their arguments; as later words they start a secondary view
/// whether or not a program of that name is on `PATH`.
/// Programs that take their later words as data, never as a command to run (what of them runs
/// programs through options is in `programs`): a secondary view of their words counts for a
/// deny only. Every other program's secondary views count in full, but for the patterns.
const ARGUMENTS_ARE_DATA: &[&str] = &[
    "echo", "printf", "git", "grep", "egrep", "fgrep", "rg", "sed", "awk", "gawk", "mawk", "jq", "cat", "head", "tail",
    "wc", "cut", "tr", "sort", "uniq", "diff", "ls", "mkdir", "touch", "cp", "mv", "rm", "ln", "chmod", "test", "[",
    "true", "false", "cd", "export", "local", "declare", "readonly", "set", "read", "curl",
];

/// Programs that run their later words as a command inside a container or a cluster, where the
/// host's paths and rules do not apply: what they run is heard for a deny only, as data is
/// (`docker exec web ls /app` reads no host directory).
const RUNS_IN_A_CONTAINER: &[&str] = &["docker", "podman", "nerdctl", "kubectl", "oc", "crictl", "lxc", "incus"];

/// The executable files a shell pattern (`/usr/bin/r[m]`, `/*/*/c?t`, relative to `base`) matches,
/// a few at most, each component matched against the directory's entries; `None` when that
/// takes more than a bounded look.
fn executables_matching(base: &Path, pattern: &str) -> Option<Vec<PathBuf>> {
    const MAX_MATCHES: usize = 8;
    const MAX_ENTRIES: usize = 20_000;
    let mut dirs: Vec<PathBuf> = vec![if pattern.starts_with('/') { PathBuf::from("/") } else { base.to_path_buf() }];
    let mut looked = 0usize;
    let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    for (n, part) in parts.iter().enumerate() {
        let mut next = Vec::new();
        for dir in &dirs {
            if !part.contains(['*', '?', '[']) {
                next.push(dir.join(part));
                continue;
            }
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            for entry in entries.flatten() {
                looked += 1;
                if looked > MAX_ENTRIES {
                    return None;
                }
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                if (name.starts_with('.') && !part.starts_with('.')) || !shell_pattern_matches(part, name) {
                    continue;
                }
                next.push(entry.path());
            }
        }
        if n + 1 < parts.len() && next.len() > 256 {
            return None;
        }
        dirs = next;
    }
    use std::os::unix::fs::PermissionsExt;
    Some(
        dirs.into_iter()
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
            .take(MAX_MATCHES)
            .collect(),
    )
}

/// The entries of the directory `dir` whose names match the shell pattern `glob` (hidden ones
/// only when it starts with `.`); `None` when the directory cannot be listed or has too many
/// entries to look at.
fn entries_matching(dir: &Path, glob: &str) -> Option<Vec<PathBuf>> {
    const MAX_ENTRIES: usize = 10_000;
    let mut out = Vec::new();
    for (i, entry) in std::fs::read_dir(dir).ok()?.enumerate() {
        if i >= MAX_ENTRIES {
            return None;
        }
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if (name.starts_with('.') && !glob.starts_with('.')) || !shell_pattern_matches(glob, name) {
            continue;
        }
        out.push(entry.path());
    }
    Some(out)
}

/// Whether `name` matches the shell pattern `pattern` (`*`, `?`, `[...]` with ranges and `!`/`^`).
fn shell_pattern_matches(pattern: &str, name: &str) -> bool {
    fn class(p: &[char], c: char) -> Option<(bool, usize)> {
        // p starts after '['; returns (matched, length consumed including ']').
        let mut i = 0;
        let negate = matches!(p.first(), Some('!' | '^'));
        if negate {
            i += 1;
        }
        let mut matched = false;
        let mut first = true;
        while i < p.len() {
            if p[i] == ']' && !first {
                return Some((matched != negate, i + 1));
            }
            first = false;
            if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                matched |= p[i] <= c && c <= p[i + 2];
                i += 3;
            } else {
                matched |= p[i] == c;
                i += 1;
            }
        }
        None
    }
    let p: Vec<char> = pattern.chars().take(256).collect();
    let n: Vec<char> = name.chars().collect();
    // The classic walk: on a mismatch, the last `*` takes one more character (linear in both).
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        let step = match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
                continue;
            }
            Some('?') => Some(1),
            Some('[') => match class(&p[pi + 1..], n[ni]) {
                Some((true, used)) => Some(1 + used),
                Some((false, _)) => None,
                // No closing bracket: a literal `[`.
                None => (n[ni] == '[').then_some(1),
            },
            Some(&c) => (n[ni] == c).then_some(1),
            None => None,
        };
        match (step, star) {
            (Some(used), _) => {
                pi += used;
                ni += 1;
            }
            (None, Some((sp, sn))) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            (None, None) => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Whether the program a simple command runs in the end (past its variable settings and the
/// wrappers the tables peel) takes its later words as data or runs them only as the tables
/// know ([`ARGUMENTS_ARE_DATA`], [`programs::RUN_BY_OPTIONS`], interpreters, whose code is an
/// opaque request); a wrapper that runs a line, a
/// file or its input has that analysed in full anyway.
fn arguments_are_data(words: &[Word]) -> bool {
    let mut words: Vec<Word> = words.iter().skip_while(|w| wrappers::is_assignment(w)).cloned().collect();
    for _ in 0..MAX_PEELS {
        let Some(head) = words.first().filter(|w| w.is_plain()) else { return false };
        let program = basename(&head.text).to_string();
        match wrappers::peel(&program, &words[1..]).next {
            Next::Program => {
                return ARGUMENTS_ARE_DATA.contains(&program.as_str())
                    || RUNS_IN_A_CONTAINER.contains(&program.as_str())
                    || programs::RUN_BY_OPTIONS.contains(&program.as_str())
                    || programs::interpreter_family(&program).is_some();
            }
            Next::Command(rest) => {
                words = rest.into_iter().skip_while(wrappers::is_assignment).collect();
            }
            Next::Unclassified(_) => return false,
            Next::Line(_) | Next::File(_) | Next::Stdin | Next::Nothing => {
                return true;
            }
        }
    }
    false
}

const RUNNING_BUILTINS: &[&str] = &["eval", "exec", "command", "builtin", "source", ".", "trap", "time", "coproc"];

/// The permission requests of one command line run in `workdir`.
pub fn permission_requests(command: &str, workdir: &Path, root: &Path, home: Option<&Path>) -> Vec<PermissionRequest> {
    analyse(command, workdir, root, home).requests
}

/// What the analysis found: the permission requests, and the directory trees whose files the
/// command shows (`grep -r KEY .`, `cat *`), whose `read` rules only the tool can check file by
/// file (see [`TreeRead`]).
pub struct Analysis {
    /// The permission requests.
    pub requests: Vec<PermissionRequest>,
    /// Trees whose files' contents the command may show.
    pub tree_reads: Vec<TreeRead>,
}

/// Files under a directory inside the worktree whose contents a command shows: recursive
/// searchers (`grep -r`, `rg`, `ag`) and readers given a file-name pattern (`cat *`,
/// `head config/.e*`). Every `read` rule applies to each of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TreeRead {
    /// The directory (absolute, symlinks resolved), or a single file.
    pub path: PathBuf,
    /// Hidden files too.
    pub hidden: bool,
    /// Files that `.gitignore`/`.ignore` exclude too.
    pub ignored: bool,
    /// Only the files matching this shell pattern, relative to `path`, searched one directory
    /// level per pattern component (`*`, `*/.env*`); none: everything below, recursively.
    pub glob: Option<String>,
}

/// Analyses a command line: see [`permission_requests`] and [`Analysis`].
pub fn analyse(command: &str, workdir: &Path, root: &Path, home: Option<&Path>) -> Analysis {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut a = Analyzer::new(root, home, workdir, &path);
    a.check_outside(workdir);
    a.line(command, 0);
    a.finish();
    let tree_reads = std::mem::take(&mut a.out.tree_reads);
    Analysis { requests: a.out.into_requests(command), tree_reads }
}

/// An ordered set of patterns.
#[derive(Default)]
struct Patterns {
    list: Vec<String>,
    seen: HashSet<String>,
}

impl Patterns {
    fn push(&mut self, item: String) {
        if !self.seen.contains(&item) {
            self.seen.insert(item.clone());
            self.list.push(item);
        }
    }

    fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

#[derive(Default)]
struct Collected {
    patterns: Patterns,
    secondary: Patterns,
    /// Commands that run code no rule can read (see [`PermissionRequest::opaque`]), and why.
    opaque: Patterns,
    opaque_why: Patterns,
    always: Patterns,
    unclassified: Patterns,
    edits: Patterns,
    /// Writes whose files the line does not name (known only at run time, or anywhere under a
    /// directory), and why: an edit rule about one file cannot be matched against them.
    unknown_edits: Patterns,
    reads: Patterns,
    external: Patterns,
    tree_reads: Vec<TreeRead>,
}

impl Collected {
    fn into_requests(self, command: &str) -> Vec<PermissionRequest> {
        let mut out = Vec::new();
        let mut patterns = self.patterns.list;
        if patterns.is_empty() {
            patterns.push(command.trim().to_string());
        }
        let always = if self.always.is_empty() { patterns.clone() } else { self.always.list };
        let mut bash = PermissionRequest::new("bash", patterns).with_always(always).with_metadata("command", command);
        if !self.unclassified.is_empty() {
            bash = bash.at_least(Action::Ask).with_metadata("unclassified", self.unclassified.list.join("; "));
        }
        let secondary: Vec<String> = self.secondary.list.into_iter().filter(|p| !bash.patterns.contains(p)).collect();
        out.push(bash);
        if !secondary.is_empty() {
            out.push(PermissionRequest::new("bash", secondary).secondary().with_metadata("command", command));
        }
        if !self.opaque.is_empty() {
            out.push(
                PermissionRequest::new("bash", self.opaque.list)
                    .opaque()
                    .with_metadata("command", command)
                    .with_metadata("opaque", self.opaque_why.list.join("; ")),
            );
        }
        if !self.edits.is_empty() {
            out.push(PermissionRequest::new("edit", self.edits.list));
        }
        // Files no pattern names may be the one an edit rule denies: asked when some edit rule
        // denies something (review 14: `gzip`, `git checkout --`, `fallocate` changed an
        // edit-denied file).
        if !self.unknown_edits.is_empty() {
            out.push(
                PermissionRequest::new("edit", ["*"])
                    .opaque()
                    .with_metadata("command", command)
                    .with_metadata("unknown", self.unknown_edits.list.join("; ")),
            );
        }
        if !self.reads.is_empty() {
            out.push(PermissionRequest::new("read", self.reads.list));
        }
        if !self.external.is_empty() {
            out.push(PermissionRequest::new("external_directory", self.external.list));
        }
        out
    }
}

/// What the line does with variables evaluated as arithmetic. Bash runs `$(...)` found in an
/// array subscript of any value it evaluates as arithmetic (`x='a[$(cmd)]'; echo $((x))`), and
/// a variable's value may come from anywhere (the environment, a file, a branch not taken), so
/// a variable used in arithmetic is understood only when this line set it to a plain integer
/// before the use, unconditionally, and never to anything else (fail closed).
#[derive(Default)]
struct Arithmetic {
    /// Orders uses and assignments in the walk.
    seq: usize,
    /// Variables evaluated as arithmetic, and when.
    uses: Vec<(String, usize)>,
    /// Variables this line sets to a plain integer unconditionally, and when first.
    proofs: HashMap<String, usize>,
    /// Variables this line sets to anything but a plain integer, anywhere.
    tainted: HashSet<String>,
    /// Variables with the integer attribute (`declare -i`): every value assigned to them is
    /// evaluated as arithmetic.
    integer: HashSet<String>,
    /// Every value assigned to a variable (for the integer attribute, which works in any order
    /// in a loop).
    assigned: Vec<(String, String)>,
    /// The line declares a name reference (`declare -n r=x`: setting `r` sets `x`).
    namerefs: bool,
    /// Arithmetic evaluates the output of `$(... | wc -l)` or `$(nproc)`, trusted to be a number.
    counted_output: bool,
    /// The line defines a function (which could be named `wc`).
    functions: bool,
}

/// Shell variables whose value is always an integer.
const INTEGER_SPECIALS: &[&str] =
    &["RANDOM", "SRANDOM", "SECONDS", "LINENO", "BASHPID", "PPID", "UID", "EUID", "EPOCHSECONDS", "OPTIND"];

/// Shell variables bash evaluates every assigned value of as arithmetic (they have the integer
/// attribute, or their assignment function evaluates the value: `RANDOM=$x` with `x='a[$(cmd)]'`
/// runs `cmd`). Measured with bash 5.2: `RANDOM`, `SRANDOM`, `HISTCMD`, `OPTIND`; the others are
/// integer (or numeric) variables of other versions or settings, kept here to fail closed.
const ARITHMETIC_ON_ASSIGNMENT: &[&str] = &[
    "RANDOM",
    "SRANDOM",
    "HISTCMD",
    "OPTIND",
    "OPTERR",
    "BASH_COMPAT",
    "BASH_XTRACEFD",
    "SECONDS",
    "LINENO",
    "BASHPID",
    "PPID",
    "UID",
    "EUID",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "COLUMNS",
    "LINES",
    "HISTSIZE",
    "HISTFILESIZE",
    "TMOUT",
    "MAILCHECK",
    "SHLVL",
    "COMP_CWORD",
    "COMP_POINT",
    "COMP_TYPE",
    "COMP_KEY",
];

fn syntax_identifier(text: &str) -> bool {
    text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A value that is a plain integer literal as bash reads it in arithmetic (or empty, which is 0).
fn is_integer_literal(text: &str) -> bool {
    let digits = text.trim().trim_start_matches(['+', '-']);
    digits.is_empty() && text.trim().is_empty() || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

struct Analyzer<'a> {
    root: &'a Path,
    home: Option<&'a Path>,
    workdir: &'a Path,
    /// The directory after the `cd`s seen so far; `None` once a `cd` went somewhere unknowable.
    cwd: Option<PathBuf>,
    out: Collected,
    budget: Budget,
    /// Set once a bound is reached: the analysis stops adding work.
    gave_up: bool,
    /// Inside a secondary view: patterns are secondary (a deny asks, nothing else counts).
    secondary: bool,
    /// Paths and reasons to ask do not count: inside a secondary view of a program known not to
    /// run its arguments ([`ARGUMENTS_ARE_DATA`]).
    quiet: bool,
    /// The directories of `PATH`.
    path_dirs: Vec<PathBuf>,
    /// Words already looked up as programs.
    programs: HashMap<String, bool>,
    /// Files run as programs or scripts (`./x`, `bash x`, `source x`).
    executed: Vec<PathBuf>,
    /// Files the command writes.
    written: HashSet<PathBuf>,
    /// The command runs a file (`./x`, `bash x`, `source x`) that does not exist yet: the line
    /// itself must create it, maybe in a way the analysis does not see.
    runs_missing: bool,
    /// The command runs git.
    runs_git: bool,
    /// The command writes a file whose name is known only at run time.
    dynamic_writes: bool,
    /// Variables set to values known only at run time (`read x`, `x=$(...)`).
    run_time_vars: HashSet<String>,
    /// Variables the shell evaluates as arithmetic or names (`$((x))`, `${a[x]}`, `${!x}`).
    arithmetic_vars: HashSet<String>,
    /// Arithmetic bookkeeping (see [`Arithmetic`]).
    arith: Arithmetic,
    /// Other directories the command may be in: where it was before a `cd` that may not run (in
    /// a branch, a loop, after `&&`/`||`, in the background). Paths are checked against each.
    other_dirs: Vec<PathBuf>,
    /// The statement being walked runs whenever the line reaches it, in the line's own shell.
    unconditional: bool,
    /// The directories git runs in.
    git_dirs: Vec<PathBuf>,
    /// Functions the line defines: calling one may change the directory.
    functions: HashSet<String>,
    /// The literal text the current simple command gets on its input (here-documents and
    /// here-strings), for the files an interpreter's code names.
    input_texts: Vec<String>,
}

impl<'a> Analyzer<'a> {
    fn new(root: &'a Path, home: Option<&'a Path>, workdir: &'a Path, path: &std::ffi::OsStr) -> Self {
        let path_dirs =
            std::env::split_paths(path).map(|d| if d.is_absolute() { d } else { workdir.join(d) }).collect();
        Analyzer {
            root,
            home,
            workdir,
            cwd: Some(workdir.to_path_buf()),
            out: Collected::default(),
            budget: Budget::new(),
            gave_up: false,
            secondary: false,
            quiet: false,
            path_dirs,
            programs: HashMap::new(),
            executed: Vec::new(),
            written: HashSet::new(),
            runs_missing: false,
            runs_git: false,
            dynamic_writes: false,
            run_time_vars: HashSet::new(),
            arithmetic_vars: HashSet::new(),
            arith: Arithmetic {
                integer: ARITHMETIC_ON_ASSIGNMENT.iter().map(|n| (*n).to_string()).collect(),
                ..Arithmetic::default()
            },
            input_texts: Vec::new(),
            functions: HashSet::new(),
            git_dirs: Vec::new(),
            other_dirs: Vec::new(),
            unconditional: true,
        }
    }

    /// A reason the command needs asking (ignored inside a secondary view).
    fn unclassified(&mut self, why: String) {
        if !self.quiet {
            self.out.unclassified.push(why);
        }
    }

    /// A variable evaluated as arithmetic here (ignored inside a secondary view).
    fn arith_use(&mut self, name: &str) {
        if self.quiet || name.is_empty() {
            return;
        }
        self.arith_sets(name);
        self.arith.seq += 1;
        self.arith.uses.push((name.to_string(), self.arith.seq));
    }

    /// A name in arithmetic, which may assign it (`PATH=7`, `PATH+=1`, `PATH++`, `$[PATH=1]`): a
    /// variable whose setting asks ([`environment::check_name`]) asks wherever it appears there.
    fn arith_sets(&mut self, name: &str) {
        if let Some(why) = environment::check_name(name) {
            self.unclassified(why);
        }
    }

    /// `name` set to `value` (`integer`: a plain integer literal or the result of arithmetic);
    /// `proves`: unconditionally, where the rest of the line sees it.
    fn arith_assign(&mut self, name: &str, value: &str, integer: bool, proves: bool) {
        if self.quiet || name.is_empty() {
            return;
        }
        self.arith.seq += 1;
        if !integer {
            self.arith.tainted.insert(name.to_string());
        } else if proves {
            let seq = self.arith.seq;
            self.arith.proofs.entry(name.to_string()).or_insert(seq);
        }
        self.arith.assigned.push((name.to_string(), value.to_string()));
    }

    /// Text bash evaluates as an arithmetic expression (a quoted operand of `[[ -eq ]]`, an
    /// argument of `let`, a subscript of a compound array assignment): every name in it is a
    /// variable evaluated as arithmetic, and an expansion or substitution in it asks.
    fn arithmetic_text(&mut self, text: &str) {
        if text.contains(['$', '`', '\\', '\'', '"']) {
            let shown: String = text.chars().take(60).collect();
            self.unclassified(format!("`{shown}` is evaluated as arithmetic, which can run commands"));
            return;
        }
        for token in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '#')) {
            if token.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
                let name: String = token.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                self.arith_use(&name);
            }
        }
    }

    /// `let EXPR...`: each argument is an arithmetic expression; `NAME=EXPR` sets NAME to an
    /// integer.
    fn let_arguments(&mut self, args: &[Word]) {
        for arg in args {
            if !arg.is_plain() {
                continue; // `let` with an expansion asks (see `builtins`).
            }
            match arg.text.split_once('=') {
                Some((name, expr)) if syntax_identifier(name) && !expr.starts_with('=') => {
                    self.arithmetic_text(expr);
                    self.arith_assign(name, "0", true, false);
                }
                _ => self.arithmetic_text(&arg.text),
            }
        }
    }

    /// Stops the analysis: the command is too complex; it asks.
    fn too_complex(&mut self, detail: &str) {
        self.out.unclassified.push(format!("the command is too complex to analyse: {detail}"));
        self.gave_up = true;
    }

    /// A `bash` pattern (secondary inside a secondary view), within the byte budget.
    fn pattern(&mut self, text: &str) {
        if self.gave_up {
            return;
        }
        if !Budget::take(&mut self.budget.pattern_bytes, text.len()) {
            self.too_complex("its commands are too long");
            return;
        }
        if self.secondary {
            self.out.secondary.push(text.to_string());
        } else {
            self.out.patterns.push(text.to_string());
        }
    }

    /// Parses and walks one command line (the command, or a string run by `bash -c`, `eval`, ...).
    fn line(&mut self, source: &str, depth: usize) {
        if self.gave_up {
            return;
        }
        if depth > 0 && !Budget::take(&mut self.budget.nested_bytes, source.len()) {
            self.too_complex("the command lines it runs are too long");
            return;
        }
        let scan = bounds::scan(source);
        if let Some(why) = bounds::too_complex(&scan, self.budget.tokens) {
            self.too_complex(&why);
            return;
        }
        self.budget.tokens -= scan.tokens.min(self.budget.tokens);
        if bounds::unsafe_for_parser(source) {
            self.unclassified("the command has characters the shell parser cannot read safely".into());
            return;
        }
        let mut parser = Parser::new();
        if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
            self.out.unclassified.push("the shell parser is unavailable".into());
            return;
        }
        let deadline = self.budget.deadline;
        let mut progress = |_: &tree_sitter::ParseState| {
            if std::time::Instant::now() >= deadline {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        };
        let bytes = source.as_bytes();
        let mut input = |at: usize, _| bytes.get(at..).unwrap_or_default();
        let options = ParseOptions::new().progress_callback(&mut progress);
        let Some(tree) = parser.parse_with_options(&mut input, None, Some(options)) else {
            self.too_complex("it takes too long to parse");
            return;
        };
        let root = tree.root_node();
        if root.descendant_count() > bounds::MAX_NODES {
            self.too_complex("it has too many parts");
            return;
        }
        // Not for a secondary view's line: words given to a program are often plain text
        // (`cargo run -- "don't stop"`); what tree-sitter makes of the rest still counts.
        if root.has_error() && !self.secondary {
            self.unclassified("the command has a syntax error".into());
        }
        self.walk(root, source, depth);
    }

    /// A simple command: its views, then a secondary view from each later word naming a program.
    fn command_words(&mut self, words: Vec<Word>, written: &str, depth: usize) {
        if words.is_empty() || self.gave_up {
            return;
        }
        let candidates: Vec<usize> = if self.secondary {
            Vec::new()
        } else {
            (1..words.len()).filter(|&i| self.names_program(&words[i])).collect()
        };
        // Later words that read as command lines (`'rm x'`, `--run=rm x`, `--pre=rm`): a program
        // not in the tables may run them (`npx -c 'rm x'`, `man -P 'rm x'`).
        // A line that is an editor's or debugger's shell escape (`!rm x`, `:!rm x`, `shell rm x`)
        // is also read without its prefix, where the program it runs is a rule's first word.
        let lines: Vec<String> = if self.secondary {
            Vec::new()
        } else {
            words[1..]
                .iter()
                .filter_map(embedded_line)
                .flat_map(|line| {
                    let escaped = wrappers::shell_escape(&line).map(str::to_string);
                    std::iter::once(line).chain(escaped)
                })
                .collect()
        };
        // Only a program known to take its arguments as data (`echo`, `git commit -m`) has them
        // heard for a deny alone; any other may run them (`setarch x86_64 sh -c 'x=rm; $x f'`,
        // `npx -c 'cat .env'`), so their paths and reasons to ask count (review 5).
        let data = arguments_are_data(&words);
        // Behind a program that may run its words, a program name written as a pattern
        // (`setarch x86_64 /usr/bin/r[m] f`) is each executable it matches; one known only at
        // run time (`setarch x86_64 "$x" f`) is code no rule can read (an opaque request: it
        // asks where some `bash` pattern is denied).
        let mut expanded: Vec<(usize, Word)> = Vec::new();
        if !self.secondary && !data {
            for word in words.iter().skip(1) {
                if word.dynamic {
                    let shown: String = word.text.chars().take(60).collect();
                    self.out.opaque.push(written.to_string());
                    self.out.opaque_why.push(format!(
                        "`{shown}` is known only at run time, and the program before it may run it as a command"
                    ));
                    break;
                }
            }
            let base = self.cwd.clone().unwrap_or_else(|| self.workdir.to_path_buf());
            for (i, word) in words.iter().enumerate().skip(1) {
                if word.glob && !word.dynamic {
                    match executables_matching(&base, &word.text) {
                        Some(programs) => {
                            expanded.extend(programs.into_iter().map(|p| (i, Word::literal(p.to_string_lossy()))));
                        }
                        // Too wide to look at (`/*/*/r[m]`): as if known only at run time.
                        None => {
                            self.out.opaque.push(written.to_string());
                            self.out.opaque_why.push(format!(
                                "`{}` matches too many files to check which programs it names",
                                word.text.chars().take(60).collect::<String>()
                            ));
                        }
                    }
                }
            }
        }
        self.views(words.clone(), written, depth);
        for line in lines {
            if self.gave_up || depth >= MAX_NESTING {
                break;
            }
            self.secondary = true;
            self.quiet = data;
            self.line(&line, depth + 1);
            self.secondary = false;
            self.quiet = false;
        }
        // The bytes of the view starting at each word, to refuse one before building it.
        let mut tail_bytes = vec![0usize; words.len() + 1];
        for i in (0..words.len()).rev() {
            tail_bytes[i] = tail_bytes[i + 1] + words[i].text.len() + 1;
        }
        for i in candidates {
            if self.gave_up {
                break;
            }
            if tail_bytes[i].saturating_mul(2) > self.budget.pattern_bytes {
                self.too_complex("its commands are too long");
                break;
            }
            let view = words[i..].to_vec();
            self.secondary = true;
            self.quiet = data;
            let text = join(&view);
            self.views(view, &text, depth);
            self.secondary = false;
            self.quiet = false;
        }
        for (i, program) in expanded {
            if self.gave_up || tail_bytes[i].saturating_mul(2) > self.budget.pattern_bytes {
                break;
            }
            let mut view = vec![program];
            view.extend_from_slice(&words[i + 1..]);
            self.secondary = true;
            let text = join(&view);
            self.views(view, &text, depth);
            self.secondary = false;
        }
    }

    /// Whether `word` may be a program's name: a builtin that runs commands, a name found on
    /// `PATH`, or a path to an executable file.
    fn names_program(&mut self, word: &Word) -> bool {
        let text = word.text.as_str();
        if !word.is_plain() || text.is_empty() || text.starts_with('-') || text.len() > 255 || text.contains('\n') {
            return false;
        }
        if RUNNING_BUILTINS.contains(&text) {
            return true;
        }
        if !text.contains('/') && text.contains('=') {
            return false;
        }
        if let Some(&known) = self.programs.get(text) {
            return known;
        }
        if !Budget::take(&mut self.budget.lookups, 1) {
            return true;
        }
        let executable = |p: &Path| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        let found = if text.contains('/') {
            let base = self.cwd.as_deref().unwrap_or(self.workdir);
            executable(&base.join(text))
        } else {
            self.path_dirs.iter().any(|d| executable(&d.join(text)))
        };
        self.programs.insert(text.to_string(), found);
        found
    }

    /// Adds the normalised views of one simple command, peeling wrappers, and checks its paths.
    fn views(&mut self, mut words: Vec<Word>, written: &str, depth: usize) {
        let saved_cwd = self.cwd.clone();
        let mut moved = false;
        // A function, a trap's action or a sourced script may `cd` anywhere (review 26).
        let mut lost_dir = false;
        let mut appended = false;
        let mut first = true;
        let mut peels = 0;
        loop {
            if self.gave_up {
                break;
            }
            peels += 1;
            if peels > MAX_PEELS {
                self.unclassified(format!("`{written}` has too many wrappers to check"));
                break;
            }
            if !Budget::take(&mut self.budget.commands, 1) {
                self.too_complex("it has too many commands");
                break;
            }
            let Some(name) = words.first() else { break };
            if !name.is_plain() {
                self.pattern(written);
                self.unclassified(format!("the program name of `{written}` is computed at run time"));
                break;
            }
            let full = name.text.clone();
            let program = basename(&full).to_string();
            if self.functions.contains(&program)
                || (matches!(program.as_str(), "source" | ".") && !self.sourced_keeps_directory(words.get(1)))
                || (program == "trap" && words.len() > 1)
            {
                lost_dir = true;
            }
            if matches!(program.as_str(), "cd" | "pushd" | "popd" | "chdir") {
                if !self.quiet && !self.unconditional {
                    // A `cd` that may not run: the directory before it stays possible.
                    match self.cwd.clone() {
                        Some(dir) if self.other_dirs.len() < MAX_OTHER_DIRS => {
                            if !self.other_dirs.contains(&dir) {
                                self.other_dirs.push(dir);
                            }
                        }
                        _ => {
                            self.cwd = None;
                            break;
                        }
                    }
                }
                if !self.quiet {
                    let stack = |w: &Word| w.text.starts_with(['+', '-']) && w.text != "--" || !w.is_plain();
                    if program == "popd" || (program == "pushd" && (words.len() == 1 || words[1..].iter().any(stack))) {
                        // A directory of the stack (`popd`, `pushd +1`, `pushd -n`): not known here.
                        self.cwd = None;
                    } else {
                        self.change_dir(&words[1..]);
                    }
                }
                break;
            }
            if first {
                self.pattern(written);
                first = false;
            }
            if full.contains('/') {
                if ["/proc/", "/dev/"].iter().any(|p| full.starts_with(p)) {
                    self.pattern(written);
                    self.unclassified(format!("`{written}` runs a program through `{full}`"));
                    break;
                }
                self.linked_program(&full, &words[1..], depth);
            } else if !self.secondary
                && !RUNNING_BUILTINS.contains(&full.as_str())
                && let Some(found) = self.on_path(&full)
            {
                self.target_view(&found, &full, &words[1..], depth);
            }
            words[0].text.clone_from(&program);
            self.pattern(&join(&words));
            // `git-X` (on `PATH` or in git's exec path, `/usr/lib/git-core/git-push`) is `git X`.
            if let Some(sub) = program.strip_prefix("git-").filter(|s| !s.is_empty()) {
                let mut view = vec![Word::literal("git"), Word::like(&words[0], sub)];
                view.extend_from_slice(&words[1..]);
                words = view;
                continue;
            }
            // git's global options are removed from a view of their own (`git -C . push x` is
            // matched as `git push x` too), and "always" approves the subcommand's prefix.
            let mut always_words = None;
            let mut exact_always = false;
            if program == "git" {
                match programs::git_subcommand(&words[1..]) {
                    Ok(rest) => {
                        let mut view = vec![words[0].clone()];
                        view.extend(rest);
                        self.pattern(&join(&view));
                        // Plumbing that does what a porcelain command does is matched as it
                        // too (`git send-pack` under a `git push *` deny).
                        if let Some(porcelain) = view.get(1).and_then(|w| programs::git_porcelain(&w.text)) {
                            let mut same = view.clone();
                            same[1] = Word::like(&view[1], porcelain);
                            self.pattern(&join(&same));
                        }
                        if view.len() > 1 {
                            always_words = Some(view);
                        } else if words.len() > 1 {
                            // Options without a subcommand: "always" approves this command only.
                            always_words = Some(words.clone());
                            exact_always = true;
                        }
                    }
                    Err(why) => {
                        self.unclassified(format!("`{written}`: {why}"));
                        always_words = Some(words.clone());
                        exact_always = true;
                    }
                }
            }
            let peeled = wrappers::peel(&program, &words[1..]);
            for effect in peeled.effects {
                match effect {
                    Effect::Chdir(dir) if !self.quiet => {
                        moved = true;
                        self.change_dir(std::slice::from_ref(&dir));
                    }
                    effect => self.effect(effect, written, depth),
                }
            }
            let was_appended = appended;
            appended |= peeled.appends;
            match peeled.next {
                Next::Command(inner) => words = inner,
                Next::Line(script) => {
                    self.nested_line(&script, written, depth);
                    break;
                }
                Next::File(file) => {
                    self.always(&words);
                    self.script_file(&file, written);
                    break;
                }
                Next::Stdin => {
                    self.unclassified(format!("`{written}` runs a script read from standard input"));
                    break;
                }
                Next::Nothing => {
                    if was_appended {
                        self.unclassified(format!("`{written}` runs a command made of its input"));
                    }
                    self.always(&words);
                    break;
                }
                Next::Program => {
                    match always_words.as_deref() {
                        Some(exact) if exact_always => {
                            if !self.secondary {
                                self.out.always.push(join(exact));
                            }
                        }
                        Some(view) => self.always(view),
                        None => self.always(&words),
                    }
                    if program == "let" {
                        self.let_arguments(&words[1..]);
                    }
                    // `builtin declare -i ...`, `command local -n ...`: the attributes are not
                    // followed through a wrapper.
                    if matches!(program.as_str(), "declare" | "typeset" | "local" | "readonly" | "export")
                        && words[1..].iter().any(|w| w.text.starts_with('-') && w.text.contains(['i', 'n']))
                    {
                        self.unclassified(format!("`{written}` sets attributes through a wrapper"));
                    }
                    if !self.quiet {
                        self.file_arguments(&program, &words[1..]);
                        self.named_files(&program, &words[1..], appended);
                        self.protected_arguments(&program, &words[1..], written, depth);
                    }
                    if appended && programs::RUN_BY_OPTIONS.contains(&program.as_str()) {
                        self.unclassified(format!(
                            "`{written}` gets more arguments from its input, which may be options that run programs"
                        ));
                    }
                    if let Some(effect) = programs::run_time_option(&program, &words[1..]) {
                        self.effect(effect, written, depth);
                    }
                    self.program_effects(&program, &words[1..], written, depth);
                    break;
                }
                Next::Unclassified(why) => {
                    self.unclassified(format!("`{written}`: {why}"));
                    break;
                }
            }
        }
        if moved {
            self.cwd = saved_cwd;
        }
        if lost_dir && !self.quiet {
            self.cwd = None;
        }
    }

    /// A program named by a path: remembered as run, and when it is a symbolic link to a program
    /// of another name (`./del` → `/bin/rm`), that name starts a secondary view.
    fn linked_program(&mut self, full: &str, args: &[Word], depth: usize) {
        let file = Word::literal(full);
        let paths = self.resolve_all(&file);
        // Not in a secondary view: a quoted argument with a `/` and a blank (`-run 'TestA/with
        // spaces'`) reads as a path-named program that does not exist, and runs nothing.
        if !self.secondary && !paths.is_empty() && paths.iter().all(|p| std::fs::symlink_metadata(p).is_err()) {
            self.runs_missing = true;
        }
        for path in paths {
            self.target_view(&path, full, args, depth);
            if !self.quiet {
                self.executed.push(path);
            }
        }
    }

    /// When `path` (the program `full` names) is a symbolic link to a program of another name
    /// (`./v` → `/usr/bin/vim.basic`, `editor` → `/etc/alternatives/editor` → `vim.basic`), the
    /// command is viewed as that program too: its patterns are secondary (a deny asks), and what
    /// the target's own analysis asks for counts in full (review 26: a vi behind a link ran the
    /// editor commands of its input). A link whose target does not resolve is seen by the name
    /// it points to.
    fn target_view(&mut self, path: &Path, full: &str, args: &[Word], depth: usize) {
        if self.secondary {
            return;
        }
        let target = std::fs::canonicalize(path).ok().or_else(|| std::fs::read_link(path).ok());
        let Some(name) = target.as_deref().and_then(Path::file_name).and_then(|n| n.to_str()) else { return };
        if name == basename(full) || name == "busybox" {
            return;
        }
        let mut view = vec![Word::literal(name)];
        view.extend_from_slice(args);
        self.secondary = true;
        let text = join(&view);
        self.views(view, &text, depth);
        self.secondary = false;
    }

    /// Whether the script `source FILE` runs is known not to change the directory: a file of
    /// at most 64 KiB with no word that changes it or runs other code in this shell (`cd`,
    /// `pushd`, `popd`, `source`, `.`, `eval`, `exec`, `trap`, `builtin`, `command`, `CDPATH`,
    /// `shopt`, `alias`), comments aside (a virtualenv's `activate`).
    fn sourced_keeps_directory(&self, file: Option<&Word>) -> bool {
        const MOVES: &[&str] = &[
            "cd", "pushd", "popd", "source", ".", "eval", "exec", "trap", "builtin", "command", "CDPATH", "shopt",
            "alias",
        ];
        let Some(file) = file.filter(|f| f.is_plain()) else { return false };
        let Some(path) = self.resolve(file) else { return false };
        if std::fs::metadata(&path).map_or(true, |m| !m.is_file() || m.len() > 64 * 1024) {
            return false;
        }
        let Ok(text) = std::fs::read_to_string(&path) else { return false };
        !text.lines().any(|line| {
            let code = match line.find('#') {
                Some(at) if at == 0 || line[..at].ends_with(char::is_whitespace) => &line[..at],
                _ => line,
            };
            code.split(|c: char| c.is_whitespace() || ";|&(){}`$'\"=<>".contains(c)).any(|t| MOVES.contains(&t))
        })
    }

    /// The file `PATH` finds for the program `name` (no `/` in it), within the lookup budget.
    fn on_path(&mut self, name: &str) -> Option<PathBuf> {
        if name.is_empty() || name.contains('/') || !Budget::take(&mut self.budget.lookups, 1) {
            return None;
        }
        use std::os::unix::fs::PermissionsExt;
        self.path_dirs
            .iter()
            .map(|d| d.join(name))
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
    }

    fn always(&mut self, words: &[Word]) {
        if !self.secondary {
            self.out.always.push(format!("{} *", arity_prefix(words)));
        }
    }

    /// A string run as a shell command line (`bash -c`, `eval`, `trap`, ...).
    fn nested_line(&mut self, script: &Word, written: &str, depth: usize) {
        if !script.is_plain() {
            self.unclassified(format!("`{written}` runs a script computed at run time"));
        } else if depth >= MAX_NESTING {
            self.unclassified(format!("`{written}` nests shells too deeply to check"));
        } else {
            self.line(&script.text, depth + 1);
        }
    }

    /// A shell script run from a file (`bash FILE`, `source FILE`): read, and remembered as run.
    fn script_file(&mut self, file: &Word, written: &str) {
        if !file.is_plain() {
            self.unclassified(format!("`{written}` runs a script computed at run time"));
            return;
        }
        if ["/dev/", "/proc/"].iter().any(|p| file.text.starts_with(p)) {
            self.unclassified(format!("`{written}` runs a script from a file descriptor"));
            return;
        }
        if self.quiet {
            return;
        }
        let paths = self.paths(file);
        if !paths.is_empty() && paths.iter().all(|p| std::fs::symlink_metadata(p).is_err()) {
            self.runs_missing = true;
        }
        for path in paths {
            self.check_outside(&path);
            let pattern = self.relative(&path);
            self.out.reads.push(pattern);
            self.executed.push(path);
        }
    }

    fn change_dir(&mut self, args: &[Word]) {
        let target = args.iter().find(|w| !w.text.starts_with('-') || w.text == "-");
        let Some(target) = target else {
            self.cwd = self.home.map(Path::to_path_buf);
            return;
        };
        if target.text == "-" {
            self.cwd = None;
            return;
        }
        // `cd sec*`: the one directory the pattern matches now, else unknown (fail closed).
        if target.glob {
            let glob = glob_rest(&target.text).filter(|g| !g.contains('/'));
            let base = self.resolve(target);
            let matched = match (glob, base) {
                (Some(glob), Some(base)) => entries_matching(&base, &glob).unwrap_or_default(),
                _ => Vec::new(),
            };
            match matched.as_slice() {
                [one] if one.is_dir() => {
                    let one = one.clone();
                    self.check_outside(&one);
                    self.cwd = Some(one);
                }
                _ => self.cwd = None,
            }
            return;
        }
        match self.resolve(target) {
            // bash's `cd` takes `..` lexically (`cd -P`, `set -P`: after symbolic links): where
            // the two differ the directory is not known here.
            Some(path) if self.cwd.is_some() || Path::new(&target.text).is_absolute() => {
                let logical = if Path::new(&target.text).is_absolute() {
                    lexical_normalise(Path::new(&target.text))
                } else {
                    lexical_normalise(&self.cwd.clone().unwrap_or_default().join(&target.text))
                };
                if target.text.contains("..") && !target.dynamic && logical != path {
                    self.cwd = None;
                    return;
                }
                self.check_outside(&path);
                self.cwd = Some(path);
            }
            Some(path) => {
                self.check_outside(&path);
                self.cwd = Some(path);
            }
            None => self.cwd = None,
        }
    }

    fn file_arguments(&mut self, program: &str, args: &[Word]) {
        if !FILE_COMMANDS.contains(&program) {
            return;
        }
        for arg in path_args(program, args) {
            let glob = if arg.glob && READERS.contains(&program) { glob_rest(&arg.text) } else { None };
            for path in self.paths(&arg) {
                let inside = self.check_outside(&path);
                if READERS.contains(&program) {
                    let pattern = self.relative(&path);
                    self.out.reads.push(pattern);
                }
                if inside
                    && READERS.contains(&program)
                    && let Some(glob) = &glob
                {
                    let hidden = glob.starts_with('.') || glob.contains("/.");
                    self.tree_read(TreeRead { path, hidden, ignored: true, glob: Some(glob.clone()) });
                }
            }
        }
    }

    /// Files a program may show the contents of, beyond the readers' path arguments: any
    /// existing file of the worktree that an argument names — the word, its value after `=`, or
    /// a path-like part of it (`awk 1 .env`, `dd if=.env`, `python3 -c 'open(".env")'`, `cp .env
    /// y`) — is a `read` request, for every program that is not known to leave contents unshown
    /// ([`NO_CONTENTS`]). A reader whose file is known only at run time (`cat "$f"`, `find -exec
    /// cat {}`, `xargs cat`) shows any file: the whole worktree is a [`TreeRead`].
    fn named_files(&mut self, program: &str, args: &[Word], appended: bool) {
        if READERS.contains(&program) && (appended || args.iter().any(|w| w.dynamic || w.text.contains("{}"))) {
            let root = self.root.to_path_buf();
            self.tree_read(TreeRead { path: root, hidden: true, ignored: true, glob: None });
        }
        if NO_CONTENTS.contains(&program) {
            return;
        }
        for arg in args {
            if arg.is_plain() && !self.files_named_in(&arg.text) {
                return;
            }
        }
        // An interpreter's code on its input (`python3 <<EOF`, `<<<`) names files the same way.
        if programs::interpreter_family(program).is_some() {
            for text in std::mem::take(&mut self.input_texts) {
                if !self.files_named_in(&text) {
                    return;
                }
            }
        }
    }

    /// A protected path (`.git/...`, `toolshed.toml`, ...) that an argument names — the word,
    /// its value after `=`, or the path starting at a protected name inside it (`-MF.git/x`) — is
    /// written, unless the program is known only to read or list what it names or has its
    /// writes analysed ([`NAMES_ONLY`]): any other program may write it (`split`, `zip`, `gcc
    /// -o`, `ssh-keygen -f`, `ln -s`, ...), so it is a `protected` request (review 26).
    fn protected_arguments(&mut self, program: &str, args: &[Word], written: &str, depth: usize) {
        let links = program == "cp"
            && args.iter().any(|w| {
                (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains(['s', 'l']))
                    || ["--link", "--symbolic-link", "--sym"].iter().any(|o| w.text.starts_with(o))
            });
        if NAMES_ONLY.contains(&program) && !links {
            return;
        }
        // Run in a protected directory (`cd .git/hooks && ar x a.a`), it may write there.
        let dirs: Vec<PathBuf> = self.cwd.iter().chain(self.other_dirs.iter()).cloned().collect();
        for dir in dirs {
            let pattern = self.relative(&dir);
            if !matches!(pattern.as_str(), "." | "./" | "") && toolshed_core::protected::is_protected(&pattern, None) {
                self.effect(Effect::WritesUnder(Word::literal(dir.to_string_lossy())), written, depth);
            }
        }
        let names: Vec<&str> = toolshed_core::protected::LOCATIONS.iter().filter_map(|l| l.split('/').next()).collect();
        for arg in args {
            if !arg.is_plain() || !names.iter().any(|n| arg.text.contains(n)) {
                continue;
            }
            let text = arg.text.as_str();
            let mut candidates: Vec<&str> = vec![text];
            candidates.extend(text.split_once('=').map(|(_, v)| v));
            for name in &names {
                candidates.extend(text.match_indices(name).map(|(at, _)| &text[at..]));
            }
            for candidate in candidates {
                if candidate.is_empty() || !names.iter().any(|n| candidate.contains(n)) {
                    continue;
                }
                let Some(path) = self.resolve(&Word::literal(candidate)) else { continue };
                let pattern = self.relative(&path);
                if toolshed_core::protected::is_protected(&pattern, None) {
                    self.effect(Effect::Writes(Word::like(arg, candidate)), written, depth);
                    break;
                }
            }
        }
    }

    /// Adds a `read` request for each existing file of the worktree that `text`, or a path-like
    /// part of it, names. False (after asking) when the budget of checks is spent.
    fn files_named_in(&mut self, text: &str) -> bool {
        let base = self.cwd.clone().unwrap_or_else(|| self.workdir.to_path_buf());
        let parts = text.split(|c: char| !(c.is_alphanumeric() || "._-/~+@%".contains(c)));
        for part in std::iter::once(text).chain(parts) {
            let part = part.trim_start_matches('-');
            if part.is_empty() || part.len() > 4096 || part.chars().all(|c| c == '.' || c == '/') {
                continue;
            }
            if !Budget::take(&mut self.budget.file_checks, 1) {
                self.unclassified("it names too many files to check them against the read rules".into());
                return false;
            }
            let Some(path) = resolve_in(Some(&base), self.home, &Word::literal(part)) else { continue };
            if path.starts_with(self.root) && path.is_file() {
                let pattern = self.relative(&path);
                self.out.reads.push(pattern);
            }
        }
        true
    }

    /// Notes a tree whose files the command shows (at most [`MAX_TREE_READS`]; beyond that the
    /// command asks).
    fn tree_read(&mut self, mut read: TreeRead) {
        // Symbolic links resolved (`s -> secrets`: `cat s/*` shows `secrets/*`), so the files
        // found are checked under their real names.
        if let Ok(real) = read.path.canonicalize() {
            // Kept under the worktree's own spelling, which its patterns are relative to.
            let root = self.root.canonicalize().unwrap_or_else(|_| self.root.to_path_buf());
            read.path = match real.strip_prefix(&root) {
                Ok(rel) => self.root.join(rel),
                Err(_) => real,
            };
        }
        if self.out.tree_reads.contains(&read) {
            return;
        }
        if self.out.tree_reads.len() >= MAX_TREE_READS {
            self.unclassified(
                "the command shows the files of too many directories to check them against the read rules".into(),
            );
            return;
        }
        self.out.tree_reads.push(read);
    }

    /// Checks what `program`'s options make it do: the files it writes or reads and the
    /// programs it runs.
    fn program_effects(&mut self, program: &str, args: &[Word], written: &str, depth: usize) {
        for effect in programs::effects(program, args).into_iter().chain(reach::effects(program, args)) {
            self.effect(effect, written, depth);
        }
    }

    fn effect(&mut self, effect: Effect, written: &str, depth: usize) {
        match effect {
            Effect::Writes(_) | Effect::WritesUnder(_) | Effect::Deletes(..) if self.quiet => {}
            Effect::Deletes(file, recursive) => {
                for path in self.paths(&file) {
                    self.check_outside(&path);
                    let pattern = self.relative(&path);
                    if recursive || file.glob || path.is_dir() {
                        self.out.edits.push(under_pattern(&pattern));
                    }
                    self.out.edits.push(pattern);
                }
            }
            Effect::Writes(file) if is_device(&file.text) => {}
            Effect::Writes(file) => {
                if file.glob {
                    return self.effect(Effect::WritesUnder(file), written, depth);
                }
                let paths = self.paths(&file);
                if paths.is_empty() {
                    self.dynamic_writes = true;
                    self.out.unknown_edits.push(format!("`{written}` writes {}, known only at run time", file.text));
                }
                for path in paths {
                    self.check_outside(&path);
                    let pattern = self.relative(&path);
                    self.out.edits.push(pattern.clone());
                    if path.is_dir() {
                        self.out.edits.push(under_pattern(&pattern));
                    }
                    self.written.insert(path);
                }
            }
            Effect::WritesUnder(dir) => {
                let paths = self.paths(&dir);
                if paths.is_empty() {
                    self.dynamic_writes = true;
                    self.out
                        .unknown_edits
                        .push(format!("`{written}` writes under {}, known only at run time", dir.text));
                }
                for path in paths {
                    self.check_outside(&path);
                    let pattern = under_pattern(&self.relative(&path));
                    self.out.unknown_edits.push(format!("`{written}` writes files under `{pattern}`"));
                    self.out.edits.push(pattern);
                    self.written.insert(path);
                }
            }
            Effect::ReadsTree(dir, filter) => {
                if self.quiet {
                    return;
                }
                if dir.dynamic {
                    self.unclassified(format!(
                        "`{written}` shows the files under `{}`, a directory known only at run time, so the read rules cannot be checked for them",
                        dir.text
                    ));
                    return;
                }
                // A pattern in the last component (`ln -s secret? s`): each entry it matches, and
                // everything under it.
                let matches = if dir.glob {
                    glob_rest(&dir.text).and_then(|glob| (!glob.contains('/')).then_some(glob))
                } else {
                    None
                };
                for path in self.paths(&dir) {
                    let trees = match &matches {
                        Some(glob) => entries_matching(&path, glob).unwrap_or_else(|| vec![path.clone()]),
                        None => vec![path],
                    };
                    for path in trees {
                        if self.check_outside(&path) {
                            self.tree_read(TreeRead {
                                path,
                                hidden: filter.hidden,
                                ignored: filter.ignored,
                                glob: None,
                            });
                        }
                    }
                }
            }
            Effect::Reads(file) => {
                if self.quiet {
                    return;
                }
                // A file named at run time (`curl file://$PWD/.env`) may be any: the worktree.
                if file.dynamic {
                    let root = self.root.to_path_buf();
                    self.tree_read(TreeRead { path: root, hidden: true, ignored: true, glob: None });
                    return;
                }
                // A pattern (`xargs -a .e*`): the files it matches, as a reader's pattern is read.
                let glob = if file.glob { glob_rest(&file.text) } else { None };
                for path in self.paths(&file) {
                    let inside = self.check_outside(&path);
                    let pattern = self.relative(&path);
                    self.out.reads.push(pattern);
                    if inside && let Some(glob) = &glob {
                        let hidden = glob.starts_with('.') || glob.contains("/.");
                        self.tree_read(TreeRead { path, hidden, ignored: true, glob: Some(glob.clone()) });
                    }
                }
            }
            Effect::Runs(command) if depth < MAX_NESTING => {
                let text = join(&command);
                self.pattern(&text);
                self.command_words(command, &text, depth + 1);
            }
            Effect::Runs(_) => self.unclassified(format!("`{written}` nests commands too deeply to check")),
            Effect::RunsLine(line) => {
                self.unclassified(format!("`{written}` runs the command `{line}`"));
                self.nested_line(&Word::literal(line), written, depth);
            }
            Effect::Line(line) => self.nested_line(&line, written, depth),
            Effect::Executes(file) => {
                if self.quiet {
                    return;
                }
                if !file.is_plain() {
                    self.unclassified(format!("`{written}` runs code from a file named at run time"));
                    return;
                }
                for path in self.paths(&file) {
                    // Code from a device or a process's file (`../../dev/stdin`, a link to
                    // `/proc/self/fd/0`): what it runs is not in the command line.
                    let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                    if [&path, &real].iter().any(|p| p.starts_with("/dev") || p.starts_with("/proc")) {
                        self.unclassified(format!(
                            "`{written}` runs code from `{}`, which the command does not show",
                            path.display()
                        ));
                    }
                    self.executed.push(path);
                }
            }
            Effect::Chdir(_) => {}
            Effect::RunsGitIn(_) if self.quiet => {}
            Effect::RunsGitIn(dir) => {
                self.runs_git = true;
                for path in self.paths(&dir) {
                    if let Some(why) = foreign_repository(self.root, &path) {
                        self.unclassified(format!(
                            "git runs in `{}`, {why}, whose configuration a command may have written (it can make git run any program)",
                            path.strip_prefix(self.root).unwrap_or(&path).display()
                        ));
                    }
                    self.git_dirs.push(path);
                }
            }
            Effect::SetsAtRunTime(name) => {
                if !self.quiet {
                    self.run_time_vars.insert(name);
                }
            }
            Effect::RunsCode(why) => {
                self.out.opaque.push(written.to_string());
                self.out.opaque_why.push(why);
            }
            Effect::Unclassified(why) => self.unclassified(format!("`{written}`: {why}")),
        }
    }

    /// What only the whole line shows: a file it writes and also runs, and arithmetic on values
    /// known only at run time.
    fn finish(&mut self) {
        if !self.executed.is_empty() && (self.dynamic_writes || self.executed.iter().any(|p| self.written.contains(p)))
        {
            self.out.unclassified.push("the command runs a file that it writes itself".into());
        }
        // Git files written where git then runs (`printf ... > r/config; git -C r fetch`).
        let own = self.root.join(".git");
        let made =
            self.git_dirs.iter().filter(|g| *g != self.root && g.starts_with(self.root) && !g.starts_with(&own)).find(
                |g| {
                    g.ancestors()
                        .take_while(|d| *d != self.root)
                        .any(|d| self.written.iter().any(|w| makes_repository(w, d)))
                },
            );
        if let Some(dir) = made {
            self.out.unclassified.push(format!(
                "the command writes git's files in `{}` and runs git there (its configuration can make git run any program)",
                dir.strip_prefix(self.root).unwrap_or(dir).display()
            ));
        }
        if self.runs_git && self.dynamic_writes {
            self.out.unclassified.push(
                "the command runs git and writes a file whose name is known only at run time, which may be git's configuration (it can make git run any program)".into(),
            );
        }
        if self.runs_missing {
            self.out
                .unclassified
                .push("the command runs a file that does not exist yet, so the command itself creates it".into());
        }
        let arith = std::mem::take(&mut self.arith);
        let unproven = arith.uses.iter().find(|(name, seq)| {
            !INTEGER_SPECIALS.contains(&name.as_str())
                && (arith.tainted.contains(name)
                    || self.run_time_vars.contains(name)
                    || arith.proofs.get(name).is_none_or(|proof| proof > seq))
        });
        if let Some((name, _)) = unproven {
            self.out.unclassified.push(format!(
                "`{name}` is evaluated as arithmetic, and the command does not set it to a plain integer before (bash runs commands in subscripts of such values)"
            ));
        }
        if arith.counted_output && arith.functions {
            self.out.unclassified.push(
                "the command defines a function and evaluates a command's output as arithmetic, which the function may print".into(),
            );
        }
        // `declare -n r=RANDOM; r=$x` evaluates `$x` as arithmetic.
        if arith.namerefs && arith.assigned.iter().any(|(_, value)| !is_integer_literal(value)) {
            self.out.unclassified.push(
                "the command declares a name reference and assigns values that may reach a variable evaluating them as arithmetic".into(),
            );
        }
        if arith.namerefs && !arith.uses.is_empty() {
            self.out.unclassified.push(
                "the command declares a name reference and evaluates variables as arithmetic, whose values it then cannot follow".into(),
            );
        }
        let read_in =
            arith.integer.iter().find(|name| arith.tainted.contains(*name) || self.run_time_vars.contains(*name));
        if let Some(name) = read_in {
            self.out.unclassified.push(format!(
                "`{name}` has the integer attribute and is set to a value known only at run time, which is evaluated as arithmetic"
            ));
        }
        let integer =
            arith.assigned.iter().find(|(name, value)| arith.integer.contains(name) && !is_integer_literal(value));
        if let Some((name, value)) = integer {
            let value: String = value.chars().take(60).collect();
            self.out.unclassified.push(format!(
                "`{name}` has the integer attribute, so the value `{value}` assigned to it is evaluated as arithmetic, which can run commands"
            ));
        }
        let mut evaluated: Vec<&String> = self.arithmetic_vars.intersection(&self.run_time_vars).collect();
        if !evaluated.is_empty() {
            evaluated.sort();
            self.out.unclassified.push(format!(
                "`{}` is set at run time and evaluated as arithmetic, which can run commands",
                evaluated[0]
            ));
        }
    }

    /// The paths an argument may name ([`Analyzer::resolve_all`]); a relative path after a `cd`
    /// to a directory known only at run time cannot be checked, so it asks.
    fn paths(&mut self, arg: &Word) -> Vec<PathBuf> {
        let out = self.resolve_all(arg);
        if self.cwd.is_none() && !self.quiet && arg.is_plain() && out.is_empty() {
            self.unclassified(format!(
                "the directory the command runs in is known only at run time, so the path `{}` cannot be checked",
                arg.text
            ));
        }
        out
    }

    /// Resolves a path argument against every directory the command may run in: the
    /// directory after the `cd`s seen so far and the original working directory (a `cd` inside
    /// a subshell does not outlive it). Empty when the argument is computed at run time.
    fn resolve_all(&self, arg: &Word) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.resolve(arg).into_iter().collect();
        if !Path::new(&arg.text).is_absolute() && !out.is_empty() {
            for dir in &self.other_dirs {
                if let Some(p) = resolve_in(Some(dir), self.home, arg)
                    && !out.contains(&p)
                {
                    out.push(p);
                }
            }
        }
        if !Path::new(&arg.text).is_absolute() && self.cwd.as_deref() != Some(self.workdir) && !out.is_empty() {
            let here = resolve_in(Some(self.workdir), self.home, arg);
            if let Some(p) = here
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
        out
    }

    /// Resolves a path argument against the current directory; `None` when it is computed at
    /// run time.
    fn resolve(&self, arg: &Word) -> Option<PathBuf> {
        resolve_in(self.cwd.as_deref(), self.home, arg)
    }

    /// Resolves `path` with every symbolic link followed, as the file tools do.
    fn locate(&self, path: &Path) -> Option<ResolvedPath> {
        Confinement::new(self.root, self.root).resolve(path.to_str()?).ok()
    }

    /// Requests `external_directory` when `path`, symlinks resolved, lies outside the worktree.
    /// Returns whether it is inside.
    fn check_outside(&mut self, path: &Path) -> bool {
        if self.quiet {
            return true;
        }
        match self.locate(path) {
            Some(resolved) => match resolved.external_request() {
                None => true,
                Some(request) => {
                    for p in request.patterns {
                        self.out.external.push(p);
                    }
                    false
                }
            },
            None => {
                self.out.unclassified.push(format!("the path {} cannot be checked", path.display()));
                false
            }
        }
    }

    /// The pattern file rules match for `path`: relative to the worktree, else absolute.
    fn relative(&self, path: &Path) -> String {
        self.locate(path).map_or_else(|| path.to_string_lossy().into_owned(), |r| r.pattern())
    }
}

/// Resolves a path argument against `base`; `None` when it is computed at run time.
fn resolve_in(base: Option<&Path>, home: Option<&Path>, arg: &Word) -> Option<PathBuf> {
    let mut text = arg.text.clone();
    let mut home_known = false;
    if let Some(home) = home.and_then(Path::to_str) {
        if text == "~" || text == "$HOME" || text == "${HOME}" {
            text = home.to_string();
            home_known = true;
        } else if let Some(rest) =
            text.strip_prefix("~/").or_else(|| text.strip_prefix("$HOME/")).or_else(|| text.strip_prefix("${HOME}/"))
        {
            text = format!("{}/{rest}", home.trim_end_matches('/'));
            home_known = true;
        }
    }
    // A dynamic word is known only when its one unknown part was the home directory.
    if arg.dynamic && (!home_known || text.contains('$') || text.contains('`')) {
        return None;
    }
    if let Some(i) = text.find(['*', '?', '[']) {
        text = text[..i].rsplit_once('/').map_or(String::new(), |(dir, _)| format!("{dir}/"));
    }
    let path = Path::new(&text);
    if path.is_absolute() {
        return Some(physical_normalise(path));
    }
    Some(physical_normalise(&base?.join(path)))
}

/// `path` with `.` and `..` removed as the kernel resolves them: a `..` after a symbolic link
/// leaves the link's target, not the directory holding the link (`h/../config` with `h` →
/// `.git/hooks` is `.git/config`, review 26).
fn physical_normalise(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if std::fs::symlink_metadata(&out).is_ok_and(|m| m.file_type().is_symlink())
                    && let Ok(real) = std::fs::canonicalize(&out)
                {
                    out = real;
                }
                if !out.pop() {
                    out.push(component.as_os_str());
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    lexical_normalise(&out)
}

/// Why git run in `dir` may use a repository other than the worktree's own: a directory from
/// `dir` up to (not including) the worktree `root` that holds a `.git`, looks like a git
/// directory itself (`HEAD`, or `objects` and `refs`: a bare repository), or does not exist
/// yet (the line may create one, review 26). Inside the worktree's own `.git` (protected) git
/// uses the worktree's repository.
fn foreign_repository(root: &Path, dir: &Path) -> Option<&'static str> {
    if !dir.starts_with(root) || dir == root || dir.starts_with(root.join(".git")) {
        return None;
    }
    for d in dir.ancestors().take_while(|d| *d != root) {
        if std::fs::symlink_metadata(d).is_err() {
            return Some("a directory that does not exist yet (the command may make it a repository)");
        }
        let has = |name: &str| std::fs::symlink_metadata(d.join(name)).is_ok();
        if has(".git") || has("HEAD") || (has("objects") && has("refs")) {
            return Some("a repository nested in the worktree");
        }
    }
    None
}

/// The files that make a directory `d` a repository git finds, or configure one.
fn makes_repository(written: &Path, d: &Path) -> bool {
    const GIT_FILES: &[&str] = &[".git", "HEAD", "config", "commondir", "gitdir", "objects", "refs", "packed-refs"];
    d.starts_with(written)
        || written.starts_with(d.join(".git"))
        || (written.parent() == Some(d)
            && written.file_name().and_then(|n| n.to_str()).is_some_and(|n| GIT_FILES.contains(&n)))
}

/// How many other directories a command may be in (`cd`s that may not run) before the
/// directory counts as unknown.
const MAX_OTHER_DIRS: usize = 8;

/// How many directory trees one command may read before it asks instead.
const MAX_TREE_READS: usize = 32;

/// The part of a file-name pattern from its first component with a wildcard on (`src/*.rs` →
/// `*.rs`, `*/x` → `*/x`), which the shell matches against the files of the directory before it.
fn glob_rest(text: &str) -> Option<String> {
    let at = text.find(['*', '?', '['])?;
    let start = text[..at].rfind('/').map_or(0, |i| i + 1);
    Some(text[start..].to_string())
}

/// The command line a later word may hold: a plain word with a blank or a shell operator in
/// it, or the value of a `--option=VALUE` word (which may be a lone program name).
fn embedded_line(word: &Word) -> Option<String> {
    if !word.is_plain() {
        return None;
    }
    let text = word.text.as_str();
    let looks_like_line = |t: &str| t.contains([' ', '\t', '\n', ';', '|', '&']);
    if text.starts_with('-') {
        let (_, value) = text.split_once('=')?;
        let first = value.trim_start().split([' ', '\t', '\n']).next().unwrap_or_default();
        return (!first.is_empty() && (looks_like_line(value) || !first.contains('='))).then(|| value.to_string());
    }
    looks_like_line(text).then(|| text.to_string())
}

/// Files that take writes without storing them.
fn is_device(path: &str) -> bool {
    matches!(path, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "-")
}

/// The edit pattern of everything under the directory `pattern` (`./*` for the worktree's top
/// directory: a bare `*` would name no path, see [`toolshed_core::protected::is_protected`]).
fn under_pattern(pattern: &str) -> String {
    match pattern {
        "." | "" => "./*".to_string(),
        dir => format!("{}/*", dir.trim_end_matches('/')),
    }
}

fn join(words: &[Word]) -> String {
    words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")
}

fn path_args(program: &str, args: &[Word]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut options_done = false;
    let mut skip_first = matches!(program, "chmod" | "chown" | "chgrp" | "grep" | "egrep" | "fgrep" | "rg");
    let mut iter = args.iter().peekable();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if !options_done && t == "--" {
            options_done = true;
            continue;
        }
        if !options_done && t.starts_with('-') && t.len() > 1 {
            if program == "find" {
                break;
            }
            if matches!((program, t), ("grep" | "egrep" | "fgrep" | "rg", "-e" | "-f" | "--regexp" | "--file")) {
                skip_first = false;
                iter.next();
            }
            continue;
        }
        if program == "find" && (t == "(" || t == "!") {
            break;
        }
        if skip_first {
            skip_first = false;
            continue;
        }
        if program == "dd" {
            if let Some(p) = t.strip_prefix("if=").or_else(|| t.strip_prefix("of=")) {
                out.push(Word::like(w, p));
            }
            continue;
        }
        out.push(w.clone());
    }
    out
}

/// How many leading words identify a command for an "always" approval (OpenCode's arity idea:
/// `git status --short` → `git status`, `npm run build` → `npm run build`).
fn arity_prefix(words: &[Word]) -> String {
    const THREE: &[(&str, &[&str])] = &[
        ("bun", &["run", "x"]),
        ("cargo", &["add", "run"]),
        ("docker", &["builder", "compose", "container", "image", "network", "volume"]),
        ("git", &["config", "remote", "stash"]),
        ("npm", &["exec", "init", "run", "view"]),
        ("pnpm", &["dlx", "exec", "run"]),
        ("yarn", &["dlx", "run"]),
        ("kubectl", &["kustomize", "rollout"]),
        ("ip", &["addr", "link", "netns", "route"]),
        ("podman", &["container", "image"]),
        ("terraform", &["workspace"]),
        ("deno", &["task"]),
    ];
    const THREE_ALWAYS: &[&str] = &["aws", "az", "gcloud", "gh", "doctl", "sfdx"];
    const TWO: &[&str] = &[
        "git",
        "npm",
        "pnpm",
        "yarn",
        "bun",
        "deno",
        "docker",
        "podman",
        "cargo",
        "rustup",
        "go",
        "kubectl",
        "helm",
        "make",
        "cmake",
        "python",
        "python3",
        "pip",
        "pip3",
        "uv",
        "poetry",
        "node",
        "npx",
        "brew",
        "apt",
        "apt-get",
        "systemctl",
        "terraform",
        "gradle",
        "mvn",
        "dotnet",
        "swift",
        "mix",
        "bundle",
        "rake",
        "composer",
        "ip",
        "pytest",
        "java",
        "ruby",
        "perl",
        "php",
    ];
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    let first = texts.first().copied().unwrap_or_default();
    let n = if THREE_ALWAYS.contains(&first)
        || THREE.iter().any(|(p, subs)| *p == first && texts.get(1).is_some_and(|s| subs.contains(s)))
    {
        3
    } else if TWO.contains(&first) {
        2
    } else {
        1
    };
    let n = (1..=n.min(texts.len())).rev().find(|&k| k == 1 || !texts[k - 1].starts_with('-')).unwrap_or(1);
    texts[..n].join(" ")
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().filter(|b| !b.is_empty()).unwrap_or(program)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Case {
        _tmp: tempfile::TempDir,
        root: PathBuf,
    }

    fn case() -> Case {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("w");
        std::fs::create_dir_all(root.join("src")).unwrap();
        // Scripts the tests run exist: running one that does not asks (the line would create it).
        for script in ["script.sh", "build.sh", "unzip.sh"] {
            std::fs::write(root.join(script), "true\n").unwrap();
        }
        Case { _tmp: tmp, root }
    }

    fn requests(c: &Case, cmd: &str) -> Vec<PermissionRequest> {
        permission_requests(cmd, &c.root, &c.root, Some(Path::new("/home/u")))
    }

    #[test]
    fn searches_and_patterns_of_readers_are_tree_reads() {
        let c = case();
        let trees = |cmd: &str| -> Vec<(String, bool, bool, Option<String>)> {
            analyse(cmd, &c.root, &c.root, None)
                .tree_reads
                .into_iter()
                .map(|t| {
                    let rel = t.path.strip_prefix(&c.root).unwrap().display().to_string();
                    (rel, t.hidden, t.ignored, t.glob)
                })
                .collect()
        };
        assert_eq!(trees("grep -r KEY src"), [("src".into(), true, true, None)]);
        assert_eq!(trees("grep -rn KEY"), [(String::new(), true, true, None)]);
        assert_eq!(trees("grep -e KEY -R src"), [("src".into(), true, true, None)]);
        assert_eq!(trees("grep --directories=recurse KEY src"), [("src".into(), true, true, None)]);
        assert_eq!(trees("rg KEY"), [(String::new(), false, false, None)]);
        assert_eq!(trees("rg -uu KEY src"), [("src".into(), true, true, None)]);
        assert_eq!(trees("rg --hidden KEY"), [(String::new(), true, false, None)]);
        assert_eq!(trees("rg --files"), []);
        assert_eq!(trees("cat *.txt"), [(String::new(), false, true, Some("*.txt".into()))]);
        assert_eq!(trees("head src/.e*"), [("src".into(), true, true, Some(".e*".into()))]);
        assert_eq!(trees("grep KEY src/a.txt"), []);
        assert_eq!(trees("ls; git status"), []);
        // A searched directory known only at run time cannot be checked: it asks.
        let bash = requests(&c, "d=src; grep -r KEY \"$d\"").into_iter().find(|r| r.permission == "bash").unwrap();
        assert_eq!(bash.minimum, Action::Ask);
    }

    fn bash(c: &Case, cmd: &str) -> PermissionRequest {
        requests(c, cmd).into_iter().find(|r| r.permission == "bash").unwrap()
    }

    fn of<'a>(reqs: &'a [PermissionRequest], key: &str) -> Option<&'a PermissionRequest> {
        reqs.iter().find(|r| r.permission == key)
    }

    #[test]
    fn compound_commands_split_into_simple_ones() {
        let c = case();
        let r = bash(&c, "git status && rm -rf / ; ls | wc -l || (echo a) ; echo `pwd` $(whoami) <(id)");
        for p in ["git status", "rm -rf /", "ls", "wc -l", "echo a", "pwd", "whoami", "id"] {
            assert!(r.patterns.contains(&p.to_string()), "{p} missing from {:?}", r.patterns);
        }
        assert_eq!(r.minimum, Action::Allow);
    }

    #[test]
    fn views_strip_env_quotes_paths_and_wrappers() {
        let c = case();
        let r = bash(&c, r#"FOO=1 "rm" x"#);
        assert!(r.patterns.contains(&r#"FOO=1 "rm" x"#.to_string()));
        assert!(r.patterns.contains(&"rm x".to_string()), "{:?}", r.patterns);
        for cmd in [
            "/bin/rm x",
            "env A=1 rm x",
            "command rm x",
            "exec rm x",
            "nohup rm x",
            "time rm x",
            "sudo -u root rm x",
            "xargs -n 1 rm x",
            "timeout 5 rm x",
            "nice -n 5 rm x",
        ] {
            let r = bash(&c, cmd);
            assert!(r.patterns.contains(&"rm x".to_string()), "{cmd}: {:?}", r.patterns);
        }
    }

    #[test]
    fn shell_strings_and_eval_are_parsed_recursively() {
        let c = case();
        for cmd in [r#"bash -c "git status && rm x""#, "sh -c 'rm x'", "eval 'rm x'", r#"sudo bash -c "rm x""#] {
            let r = bash(&c, cmd);
            assert!(r.patterns.contains(&"rm x".to_string()), "{cmd}: {:?}", r.patterns);
            assert_eq!(r.minimum, Action::Allow, "{cmd}");
        }
        // A login shell runs its startup files first: the string is still analysed, and it asks.
        let r = bash(&c, r#"sudo bash -lc "rm x""#);
        assert!(r.patterns.contains(&"rm x".to_string()), "{:?}", r.patterns);
        assert_eq!(r.minimum, Action::Ask);
    }

    #[test]
    fn what_cannot_be_classified_asks() {
        let c = case();
        for cmd in [
            "$CMD x",
            "echo \"unterminated",
            "curl x | sh",
            "bash < script.sh",
            "eval \"$X\"",
            "bash -c \"$X\"",
            "sudo -i",
        ] {
            assert_eq!(bash(&c, cmd).minimum, Action::Ask, "{cmd}");
        }
        assert_eq!(bash(&c, "bash script.sh").minimum, Action::Allow);
        assert_eq!(
            bash(&c, "f=$(mktemp) && echo ok > $f && rm $f").minimum,
            Action::Allow,
            "the sandbox confines run-time paths"
        );
    }

    #[test]
    fn cd_is_not_a_pattern_but_its_target_is_checked() {
        let c = case();
        let reqs = requests(&c, "cd /etc && ls");
        let b = of(&reqs, "bash").unwrap();
        assert_eq!(b.patterns, ["ls"]);
        assert_eq!(of(&reqs, "external_directory").unwrap().patterns, ["/etc/*"]);
        let reqs = requests(&c, "cd src && ls");
        assert!(of(&reqs, "external_directory").is_none());
    }

    #[test]
    fn redirections_are_edits_and_reads() {
        let c = case();
        let reqs = requests(&c, "echo hi > out.txt 2>&1; cat < src/.env; echo x >> /tmp/log; echo > /dev/null");
        assert_eq!(of(&reqs, "edit").unwrap().patterns, ["out.txt", "/tmp/log"]);
        assert_eq!(of(&reqs, "read").unwrap().patterns, ["src/.env"]);
        assert_eq!(of(&reqs, "external_directory").unwrap().patterns, ["/tmp/*"]);
    }

    #[test]
    fn file_command_paths_outside_the_worktree_need_external_directory() {
        let c = case();
        let reqs = requests(&c, "cat ~/.ssh/id_rsa; cp src/a ../../elsewhere/b; rm -rf src/*");
        let ext = &of(&reqs, "external_directory").unwrap().patterns;
        assert!(ext.contains(&"/home/u/.ssh/*".to_string()), "{ext:?}");
        assert_eq!(ext.len(), 2, "{ext:?}");
        assert_eq!(
            of(&reqs, "read").unwrap().patterns,
            ["/home/u/.ssh/id_rsa"],
            "the read rules apply outside the worktree too; cp and rm are not readers"
        );
        let reqs = requests(&c, "head -n 5 src/.env");
        assert!(of(&reqs, "read").unwrap().patterns.contains(&"src/.env".to_string()));
    }

    #[test]
    fn symlinks_out_of_the_worktree_are_external() {
        let c = case();
        let outside = c.root.parent().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, c.root.join("link")).unwrap();
        let reqs = requests(&c, "cat link/secret");
        assert_eq!(of(&reqs, "external_directory").unwrap().patterns, [format!("{}/*", outside.display())]);
    }

    #[test]
    fn always_uses_the_command_prefix() {
        let c = case();
        assert_eq!(bash(&c, "git status --short").always, ["git status *"]);
        assert_eq!(bash(&c, "npm run build -- --watch").always, ["npm run build *"]);
        assert_eq!(bash(&c, "ls -la src").always, ["ls *"]);
        assert_eq!(bash(&c, "FOO=1 cargo test -p x").always, ["cargo test *"]);
        // git's global options are not part of the prefix: approving `git --no-pager log`
        // "always" must not approve every git command.
        assert_eq!(bash(&c, "git -C x status").always, ["git status *"]);
        assert_eq!(bash(&c, "git --no-pager log --oneline").always, ["git log *"]);
    }

    #[test]
    fn options_that_write_are_edits_and_options_that_run_are_commands() {
        let c = case();
        let reqs = requests(&c, "git diff --output=a.txt HEAD~0 && sort -o /tmp/s x && sed -n 'w pwn' src/a");
        assert_eq!(of(&reqs, "edit").unwrap().patterns, ["a.txt", "/tmp/s", "pwn"]);
        assert_eq!(of(&reqs, "external_directory").unwrap().patterns, ["/tmp/*"]);
        assert_eq!(of(&reqs, "read").unwrap().patterns, ["src/a"]);
        assert_eq!(of(&reqs, "bash").unwrap().minimum, Action::Allow);
        let r = bash(&c, r#"sed "1e rm -rf src" a.txt"#);
        assert!(r.patterns.contains(&"rm -rf src".to_string()), "{:?}", r.patterns);
        assert_eq!(r.minimum, Action::Ask);
        let r = bash(&c, r"find . -name x -exec rm {} \; ; rg --pre ./unzip.sh -e x a.txt");
        for p in ["rm {}", "./unzip.sh", "unzip.sh"] {
            assert!(r.patterns.contains(&p.to_string()), "{p}: {:?}", r.patterns);
        }
        assert_eq!(r.minimum, Action::Allow, "the nested commands are decided by their own rules");
        assert_eq!(bash(&c, "rg --pre sh -e x a.txt").minimum, Action::Ask, "`sh FILE` runs FILE");
        assert_eq!(bash(&c, "git grep -O x").minimum, Action::Ask);
        let reqs = requests(&c, "find src -delete");
        assert_eq!(of(&reqs, "edit").unwrap().patterns, ["src/*"]);
    }

    #[test]
    fn a_quoted_newline_in_a_word_with_braces_still_ends_the_command_of_bash_c() {
        // Found by the property test: brace expansion re-escaped the quoted newline, and
        // unescaping took it for a line continuation, so `python3` and `\r\m x` were one command.
        let c = case();
        let reqs = requests(&c, "bash -c \\p\\y\\t\\h\\o\\n\\3'\n'\\\\\\r\\\\\\m\\ \\c\\{\\a\\,\\}\\x");
        let bash = of(&reqs, "bash").unwrap();
        // The newline reaches the string bash runs; tree-sitter then keeps `\r\m` in `python3`'s
        // command, which bash ends at the newline: that asks.
        assert!(bash.patterns.iter().any(|p| p.contains("python3\n")), "{:?}", bash.patterns);
        assert_eq!(bash.minimum, Action::Ask, "{bash:?}");
        // A line tree-sitter folds into a word after a comment.
        let reqs = requests(&c, "x=1 # comment\n\\rm canary");
        assert_eq!(of(&reqs, "bash").unwrap().minimum, Action::Ask, "{reqs:?}");
    }

    #[test]
    fn files_any_program_names_are_reads() {
        let c = case();
        std::fs::write(c.root.join(".env"), "K=v\n").unwrap();
        let reads = |cmd: &str| -> Vec<String> {
            requests(&c, cmd).into_iter().filter(|r| r.permission == "read").flat_map(|r| r.patterns).collect()
        };
        for cmd in [
            "awk 1 .env",
            "sort .env",
            "dd if=.env",
            "jq -R . ./.env",
            "cp .env y",
            "tar c .env",
            "git diff --no-index /dev/null .env",
            "python3 -c 'print(open(\".env\").read())'",
            "python3 <<'EOF'\nprint(open('.env').read())\nEOF",
            "timeout 5 python3 <<< 'open(\".env\")'",
            "cd src && awk 1 ../.env",
            "mv .env e1",
            "ln .env h",
        ] {
            assert!(reads(cmd).contains(&".env".to_string()), "{cmd}: {:?}", requests(&c, cmd));
        }
        // Names, metadata and changes show no contents; nor does text a non-interpreter echoes.
        for cmd in ["ls .env", "rm .env", "echo .env", "stat .env", "test -f .env", "cat > n.md <<'EOF'\n.env\nEOF"] {
            assert!(!reads(cmd).contains(&".env".to_string()), "{cmd}: {:?}", requests(&c, cmd));
        }
        // A reader whose file is known only at run time may show any file.
        for cmd in ["cat \"$f\"", "ls | xargs cat", "find . -name x -exec cat {} +"] {
            let trees = analyse(cmd, &c.root, &c.root, None).tree_reads;
            assert!(trees.iter().any(|t| t.path == c.root && t.hidden && t.ignored), "{cmd}: {trees:?}");
        }
    }

    #[test]
    fn code_no_rule_can_read_is_an_opaque_request() {
        let c = case();
        let opaque = |cmd: &str| -> Vec<String> {
            requests(&c, cmd).into_iter().filter(|r| r.opaque).flat_map(|r| r.patterns).collect()
        };
        for cmd in [
            "python3 -c 'import os; os.remove(\"x\")'",
            "python3.12 -Bc 'print(1)'",
            "python3 -c 'print(1)' --help",
            "perl -pi -e 's/a/b/' x",
            "perl -le 'print 1'",
            "node --eval='1'",
            "node -p 1",
            "ruby -e 'File.delete(\"x\")'",
            "php -r 'unlink(\"x\");'",
            "bun -e 1",
            "deno eval 1",
            "Rscript -e 1",
            "osascript -e 1",
            "python3 <<'EOF'\nimport os\nEOF",
            "python3 - < x.py",
            "python3",
            "sqlite3 db '.shell rm x'",
            "sqlite3 db < dump.sql",
            "psql -f setup.sql",
            "perl '-Mstrict;unlink(q(x))' ok.pl",
            "node --import='data:text/javascript,1' ok.js",
            "python3 -m timeit 'import os'",
            "python3 -m code",
            "python3 -i ok.py",
            "perl -d ok.pl",
            "python3 /dev/stdin",
            "sqlite3 :memory: '.sh rm x'",
            "sqlite3 :memory: \".read '|rm x'\"",
        ] {
            assert!(!opaque(cmd).is_empty(), "{cmd}: {:?}", requests(&c, cmd));
        }
        // Through a wrapper the command as written is the pattern.
        assert!(opaque("timeout 5 python3 -c 'print(1)'").contains(&"timeout 5 python3 -c 'print(1)'".to_string()));
        // Scripts are files the command runs; versions and help run no code.
        for cmd in [
            "python3 script.sh",
            "python3 -m venv .venv",
            "python3 -m pytest -q",
            "python3 -Wignore script.sh",
            "sqlite3 ./app.db 'select 1'",
            "node build.sh",
            "python3 --version",
            "node -v",
            "sqlite3 db 'select 1'",
            "psql -c 'select 1'",
        ] {
            assert!(opaque(cmd).is_empty(), "{cmd}: {:?}", requests(&c, cmd));
        }
    }

    #[test]
    fn later_words_that_name_programs_are_secondary_views() {
        let c = case();
        let reqs = requests(&c, "echo rm x; grep -n foo src");
        let secondary = reqs.iter().find(|r| r.secondary).unwrap();
        assert_eq!(secondary.patterns, ["rm x"], "`foo` and `src` are no programs");
        assert!(secondary.always.is_empty());
        let primary = of(&reqs, "bash").unwrap();
        assert!(!primary.patterns.contains(&"rm x".to_string()));
        let reqs = requests(&c, "nohup bash -c 'echo rm y'");
        let secondary = reqs.iter().find(|r| r.secondary).unwrap();
        assert!(secondary.patterns.contains(&"rm y".to_string()), "{:?}", secondary.patterns);
    }

    #[test]
    fn a_file_the_line_writes_and_runs_asks() {
        let c = case();
        for cmd in ["cp /bin/true ./t && ./t", "echo true > s.sh; bash s.sh", "ln -s /bin/true t; ./t"] {
            assert_eq!(bash(&c, cmd).minimum, Action::Ask, "{cmd}");
        }
        assert_eq!(bash(&c, "./build.sh; echo ok > out.txt").minimum, Action::Allow);
    }

    #[test]
    fn a_wrapper_that_changes_directory_moves_only_its_command() {
        let c = case();
        let reqs = requests(&c, "env -C /etc cat passwd; cat a.txt");
        let external = &of(&reqs, "external_directory").unwrap().patterns;
        assert_eq!(external, &["/etc/*"]);
        assert!(of(&reqs, "read").unwrap().patterns.contains(&"a.txt".to_string()), "the second cat reads here");
        assert_eq!(bash(&c, "cd \"$D\" && cat f").minimum, Action::Ask);
    }

    #[test]
    fn a_workdir_outside_the_worktree_is_external() {
        let c = case();
        let reqs = permission_requests("ls", Path::new("/tmp"), &c.root, None);
        assert_eq!(of(&reqs, "external_directory").unwrap().patterns, ["/tmp/*"]);
    }
}
