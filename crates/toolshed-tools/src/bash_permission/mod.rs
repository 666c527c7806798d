//! What a shell command line needs permission for.
//!
//! The line is parsed with tree-sitter-bash and split into simple commands (across `&&`, `||`,
//! `;`, newlines, pipes, subshells, command and process substitution, backticks, and the
//! strings of `bash -c`, `sh -c` and `eval`). Each simple command is matched in several views
//! — as written (OpenCode's view), then with environment prefixes removed, the program name
//! unquoted and stripped of its path, and each wrapper (`env`, `command`, `exec`, `nohup`,
//! `time`, `nice`, `timeout`, `xargs`, `sudo`, ...) peeled off — and the strictest decision
//! wins (every view is a pattern of one `bash` request, and a request is denied if any pattern
//! is denied). A deny cannot be dodged by rewriting the command, and an allow never covers more
//! than its text says.
//!
//! Redirection targets are file writes (`edit`) or reads (`read`), and so are the files that
//! options of common programs write or read (`git diff --output=F`, `sort -o F`, `uniq IN OUT`,
//! `tree -o F`, sed's `w F` and `-i`, `curl -o F`, ...: see [`programs`] and [`sed`]); programs
//! that options run (`rg --pre CMD`, `find -exec CMD ;`, `sort --compress-program=CMD`) are
//! simple commands checked like any other, and sed's `e COMMAND` both that and `ask`. Path
//! arguments of file commands and of `cd` that resolve outside the worktree, symlinks included,
//! need `external_directory`. A path known only at run time (`> $f`, `rm "$dir"/x`) cannot be
//! checked here; the sandbox confines what such a command may write. Anything the parser
//! cannot classify — syntax errors, a program name that is an expansion, a shell reading a
//! script from standard input, a `bash -c` or `eval` script computed at run time — needs at
//! least `ask`.

use std::path::{Path, PathBuf};

use toolshed_core::paths::lexical_normalise;
use toolshed_core::permission::{Action, PermissionRequest};

use crate::path::{Confinement, ResolvedPath};
use programs::Effect;
use tree_sitter::{Node, Parser};

mod programs;
mod sed;

/// How deep `bash -c` / `eval` strings are followed.
const MAX_NESTING: usize = 4;

/// Programs whose arguments are paths to check (after skipping the ones noted in `path_args`).
const FILE_COMMANDS: &[&str] = &[
    "cat", "ls", "cp", "mv", "rm", "rmdir", "mkdir", "touch", "chmod", "chown", "chgrp", "ln", "tee", "head", "tail",
    "less", "more", "wc", "stat", "file", "du", "tree", "diff", "cmp", "find", "grep", "rg", "truncate", "shred",
    "install", "rsync", "scp", "dd", "source", ".",
];

/// Programs that read the files they are given (their in-worktree paths are checked as `read`).
const READERS: &[&str] = &["cat", "head", "tail", "less", "more", "source", "."];

/// The permission requests of one command line run in `workdir`.
pub fn permission_requests(command: &str, workdir: &Path, root: &Path, home: Option<&Path>) -> Vec<PermissionRequest> {
    let mut a = Analyzer { root, home, workdir, cwd: Some(workdir.to_path_buf()), out: Collected::default() };
    a.check_outside(workdir);
    a.line(command, 0);
    a.out.into_requests(command)
}

#[derive(Default)]
struct Collected {
    patterns: Vec<String>,
    always: Vec<String>,
    unclassified: Vec<String>,
    edits: Vec<String>,
    reads: Vec<String>,
    external: Vec<String>,
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

impl Collected {
    fn into_requests(self, command: &str) -> Vec<PermissionRequest> {
        let mut out = Vec::new();
        let mut patterns = self.patterns;
        if patterns.is_empty() {
            patterns.push(command.trim().to_string());
        }
        let always = if self.always.is_empty() { patterns.clone() } else { self.always };
        let mut bash = PermissionRequest::new("bash", patterns).with_always(always).with_metadata("command", command);
        if !self.unclassified.is_empty() {
            bash = bash.at_least(Action::Ask).with_metadata("unclassified", self.unclassified.join("; "));
        }
        out.push(bash);
        if !self.edits.is_empty() {
            out.push(PermissionRequest::new("edit", self.edits));
        }
        if !self.reads.is_empty() {
            out.push(PermissionRequest::new("read", self.reads).with_always(["*"]));
        }
        if !self.external.is_empty() {
            out.push(PermissionRequest::new("external_directory", self.external));
        }
        out
    }
}

struct Analyzer<'a> {
    root: &'a Path,
    home: Option<&'a Path>,
    workdir: &'a Path,
    /// The directory after the `cd`s seen so far; `None` once a `cd` went somewhere unknowable.
    cwd: Option<PathBuf>,
    out: Collected,
}

/// One word of a command, unquoted.
#[derive(Clone, Debug, PartialEq)]
struct Word {
    text: String,
    /// Contains an expansion or substitution: its value is not known before running.
    dynamic: bool,
}

impl Analyzer<'_> {
    fn line(&mut self, source: &str, depth: usize) {
        let mut parser = Parser::new();
        if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
            push_unique(&mut self.out.unclassified, "the shell parser is unavailable".into());
            return;
        }
        let Some(tree) = parser.parse(source, None) else {
            push_unique(&mut self.out.unclassified, "the command could not be parsed".into());
            return;
        };
        let root = tree.root_node();
        if root.has_error() {
            push_unique(&mut self.out.unclassified, "the command has a syntax error".into());
        }
        self.walk(root, source, depth);
    }

    fn walk(&mut self, node: Node<'_>, src: &str, depth: usize) {
        match node.kind() {
            "command" => {
                let written = match node.parent() {
                    Some(p) if p.kind() == "redirected_statement" => text(p, src),
                    _ => text(node, src),
                };
                self.command(node, src, written.trim(), depth);
            }
            "file_redirect" => self.redirect(node, src),
            "heredoc_redirect" | "herestring_redirect" => {}
            "function_definition" => {}
            _ => {}
        }
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            self.walk(child, src, depth);
        }
    }

    fn command(&mut self, node: Node<'_>, src: &str, written: &str, depth: usize) {
        let mut words = Vec::new();
        let mut cursor = node.walk();
        for (i, child) in node.children(&mut cursor).enumerate() {
            let field = node.field_name_for_child(i as u32);
            if matches!(field, Some("name" | "argument")) {
                words.push(word(child, src));
            }
        }
        if words.is_empty() {
            return;
        }
        let reads_stdin_script = has_stdin_script(node, src);
        push_unique(&mut self.out.patterns, written.to_string());
        self.views(words, written, depth, reads_stdin_script);
    }

    /// Adds the normalised views of one simple command, peeling wrappers, and checks its paths.
    fn views(&mut self, mut words: Vec<Word>, written: &str, depth: usize, stdin_script: bool) {
        loop {
            let Some(first) = words.first() else { return };
            if first.dynamic {
                push_unique(
                    &mut self.out.unclassified,
                    format!("the program name of `{written}` is computed at run time"),
                );
                return;
            }
            let program = basename(&first.text).to_string();
            words[0].text = program.clone();
            let view = words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
            let is_cd = matches!(program.as_str(), "cd" | "pushd" | "popd" | "chdir");
            if is_cd {
                self.out.patterns.retain(|p| p != written);
                self.change_dir(&words[1..]);
                return;
            }
            push_unique(&mut self.out.patterns, view);
            match unwrap(&program, &words[1..]) {
                Unwrapped::Command(inner) => words = inner,
                Unwrapped::Script(script) => {
                    if script.dynamic {
                        push_unique(
                            &mut self.out.unclassified,
                            format!("`{written}` runs a script computed at run time"),
                        );
                    } else if depth >= MAX_NESTING {
                        push_unique(
                            &mut self.out.unclassified,
                            format!("`{written}` nests shells too deeply to check"),
                        );
                    } else {
                        self.line(&script.text, depth + 1);
                    }
                    return;
                }
                Unwrapped::StdinShell => {
                    push_unique(
                        &mut self.out.unclassified,
                        format!("`{written}` runs a script read from standard input"),
                    );
                    return;
                }
                Unwrapped::Done => {
                    if is_shell(&program) && stdin_script {
                        push_unique(
                            &mut self.out.unclassified,
                            format!("`{written}` runs a script read from standard input"),
                        );
                    }
                    push_unique(&mut self.out.always, format!("{} *", arity_prefix(&words)));
                    self.file_arguments(&program, &words[1..]);
                    self.program_effects(&program, &words[1..], written, depth);
                    return;
                }
            }
        }
    }

    fn change_dir(&mut self, args: &[Word]) {
        let target = args.iter().find(|w| !w.text.starts_with('-'));
        let Some(target) = target else {
            self.cwd = self.home.map(Path::to_path_buf);
            return;
        };
        match self.resolve(target) {
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
            for path in self.resolve_all(&arg) {
                let inside = self.check_outside(&path);
                if inside && READERS.contains(&program) {
                    let rel = self.relative(&path);
                    push_unique(&mut self.out.reads, rel);
                }
                if inside && program == "tee" {
                    let rel = self.relative(&path);
                    push_unique(&mut self.out.edits, rel);
                }
            }
        }
    }

    /// Checks what `program`'s options make it do: the files it writes or reads and the
    /// programs it runs.
    fn program_effects(&mut self, program: &str, args: &[Word], written: &str, depth: usize) {
        for effect in programs::effects(program, args) {
            match effect {
                Effect::Writes(file) => {
                    for path in self.resolve_all(&file) {
                        self.check_outside(&path);
                        let pattern = self.relative(&path);
                        push_unique(&mut self.out.edits, pattern);
                    }
                }
                Effect::WritesUnder(dir) => {
                    for path in self.resolve_all(&dir) {
                        self.check_outside(&path);
                        let pattern = match self.relative(&path) {
                            dir if dir == "." => "*".to_string(),
                            dir => format!("{}/*", dir.trim_end_matches('/')),
                        };
                        push_unique(&mut self.out.edits, pattern);
                    }
                }
                Effect::Reads(file) => {
                    for path in self.resolve_all(&file) {
                        if self.check_outside(&path) {
                            let pattern = self.relative(&path);
                            push_unique(&mut self.out.reads, pattern);
                        }
                    }
                }
                Effect::Runs(command) if depth < MAX_NESTING => {
                    let text = command.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
                    push_unique(&mut self.out.patterns, text.clone());
                    self.views(command, &text, depth + 1, false);
                }
                Effect::Runs(_) => {
                    push_unique(&mut self.out.unclassified, format!("`{written}` nests commands too deeply to check"))
                }
                Effect::RunsLine(line) => {
                    push_unique(&mut self.out.unclassified, format!("`{written}` runs the command `{line}`"));
                    if depth < MAX_NESTING {
                        self.line(&line, depth + 1);
                    }
                }
                Effect::Unclassified(why) => push_unique(&mut self.out.unclassified, format!("`{written}`: {why}")),
            }
        }
    }

    fn redirect(&mut self, node: Node<'_>, src: &str) {
        let Some(dest) = node.child_by_field_name("destination") else { return };
        let op = node.child(0).map(|c| text(c, src)).unwrap_or_default();
        let dest_word = word(dest, src);
        if dest.kind() == "number" || op.contains('&') && dest_word.text.chars().all(|c| c.is_ascii_digit() || c == '-')
        {
            return;
        }
        if matches!(dest_word.text.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty") {
            return;
        }
        let writes = op.contains('>');
        for path in self.resolve_all(&dest_word) {
            if self.check_outside(&path) {
                let rel = self.relative(&path);
                if writes {
                    push_unique(&mut self.out.edits, rel);
                } else {
                    push_unique(&mut self.out.reads, rel);
                }
            } else if writes {
                let absolute = self.relative(&path);
                push_unique(&mut self.out.edits, absolute);
            }
        }
    }

    /// Resolves a path argument against every directory the command may run in: the
    /// directory after the `cd`s seen so far and the original working directory (a `cd` inside
    /// a subshell does not outlive it). Empty when the argument is computed at run time.
    fn resolve_all(&self, arg: &Word) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self.resolve(arg).into_iter().collect();
        if !Path::new(&arg.text).is_absolute() && self.cwd.as_deref() != Some(self.workdir) && !out.is_empty() {
            let saved = Analyzer {
                root: self.root,
                home: self.home,
                workdir: self.workdir,
                cwd: Some(self.workdir.to_path_buf()),
                out: Collected::default(),
            };
            if let Some(p) = saved.resolve(arg)
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
        let mut text = arg.text.clone();
        if let Some(home) = self.home.and_then(Path::to_str) {
            if text == "~" || text == "$HOME" || text == "${HOME}" {
                text = home.to_string();
            } else if let Some(rest) = text
                .strip_prefix("~/")
                .or_else(|| text.strip_prefix("$HOME/"))
                .or_else(|| text.strip_prefix("${HOME}/"))
            {
                text = format!("{}/{rest}", home.trim_end_matches('/'));
            }
        }
        if arg.dynamic && (text.contains('$') || text.contains('`')) {
            return None;
        }
        if let Some(i) = text.find(['*', '?', '[']) {
            text = text[..i].rsplit_once('/').map_or(String::new(), |(dir, _)| format!("{dir}/"));
        }
        let path = Path::new(&text);
        if path.is_absolute() {
            return Some(lexical_normalise(path));
        }
        let base = self.cwd.as_deref()?;
        Some(lexical_normalise(&base.join(path)))
    }

    /// Resolves `path` with every symbolic link followed, as the file tools do.
    fn locate(&self, path: &Path) -> Option<ResolvedPath> {
        Confinement::new(self.root, self.root).resolve(path.to_str()?).ok()
    }

    /// Requests `external_directory` when `path`, symlinks resolved, lies outside the worktree.
    /// Returns whether it is inside.
    fn check_outside(&mut self, path: &Path) -> bool {
        match self.locate(path) {
            Some(resolved) => match resolved.external_request() {
                None => true,
                Some(request) => {
                    for p in request.patterns {
                        push_unique(&mut self.out.external, p);
                    }
                    false
                }
            },
            None => {
                push_unique(&mut self.out.unclassified, format!("the path {} cannot be checked", path.display()));
                false
            }
        }
    }

    /// The pattern file rules match for `path`: relative to the worktree, else absolute.
    fn relative(&self, path: &Path) -> String {
        self.locate(path).map_or_else(|| path.to_string_lossy().into_owned(), |r| r.pattern())
    }
}

enum Unwrapped {
    /// A wrapper around this command.
    Command(Vec<Word>),
    /// A shell or `eval` running this script text.
    Script(Word),
    /// A shell reading its script from standard input.
    StdinShell,
    /// Not a wrapper.
    Done,
}

fn is_shell(program: &str) -> bool {
    matches!(program, "bash" | "sh" | "zsh" | "dash" | "ksh" | "fish" | "ash" | "busybox")
}

/// Peels one wrapper off a command.
fn unwrap(program: &str, args: &[Word]) -> Unwrapped {
    // (options that take a value, whether `NAME=value` words are skipped, positional words skipped)
    let (with_value, assignments, positional): (&[&str], bool, usize) = match program {
        "env" => (&["-u", "--unset", "-C", "--chdir", "-S", "--split-string"], true, 0),
        "command" => {
            if args.iter().any(|w| w.text == "-v" || w.text == "-V") {
                return Unwrapped::Done;
            }
            (&[], false, 0)
        }
        "exec" => (&["-a"], false, 0),
        "nohup" | "setsid" | "time" | "doas" | "unbuffer" => (&["-u"], false, 0),
        "nice" => (&["-n", "--adjustment"], false, 0),
        "ionice" => (&["-c", "-n", "-p", "--class", "--classdata"], false, 0),
        "stdbuf" => (&["-i", "-o", "-e"], false, 0),
        "timeout" => (&["-s", "--signal", "-k", "--kill-after"], false, 1),
        "chroot" => (&["--userspec", "--groups"], false, 1),
        "watch" => (&["-n", "--interval", "-d"], false, 0),
        "xargs" => (
            &[
                "-n",
                "-I",
                "-L",
                "-P",
                "-d",
                "-E",
                "-s",
                "-a",
                "--max-args",
                "--replace",
                "--max-procs",
                "--delimiter",
                "--arg-file",
            ],
            false,
            0,
        ),
        "sudo" => {
            if args.iter().any(|w| matches!(w.text.as_str(), "-i" | "-s" | "--login" | "--shell"))
                && !args.iter().any(|w| !w.text.starts_with('-'))
            {
                return Unwrapped::StdinShell;
            }
            (
                &["-u", "-g", "-h", "-p", "-C", "-U", "-r", "-t", "-D", "--user", "--group", "--host", "--prompt"],
                false,
                0,
            )
        }
        "eval" => {
            let script = Word {
                text: args.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "),
                dynamic: args.iter().any(|w| w.dynamic),
            };
            return Unwrapped::Script(script);
        }
        p if is_shell(p) => {
            let mut i = 0;
            while i < args.len() {
                let t = args[i].text.as_str();
                if t == "-c" || (t.starts_with('-') && !t.starts_with("--") && t.contains('c')) {
                    return match args.get(i + 1) {
                        Some(script) => Unwrapped::Script(script.clone()),
                        None => Unwrapped::StdinShell,
                    };
                }
                if t == "-o" || t == "+o" {
                    i += 1;
                } else if t == "-s" || !t.starts_with(['-', '+']) {
                    return if t == "-s" { Unwrapped::StdinShell } else { Unwrapped::Done };
                }
                i += 1;
            }
            return Unwrapped::StdinShell;
        }
        _ => return Unwrapped::Done,
    };
    let mut i = 0;
    let mut skipped_positional = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if with_value.contains(&t) {
            if program == "env" && (t == "-S" || t == "--split-string") {
                return match args.get(i + 1) {
                    Some(script) => Unwrapped::Script(script.clone()),
                    None => Unwrapped::Done,
                };
            }
            i += 2;
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            i += 1;
            continue;
        }
        if assignments && t.contains('=') && !t.starts_with('=') {
            i += 1;
            continue;
        }
        if skipped_positional < positional {
            skipped_positional += 1;
            i += 1;
            continue;
        }
        break;
    }
    let rest = args.get(i..).unwrap_or_default();
    if rest.is_empty() { Unwrapped::Done } else { Unwrapped::Command(rest.to_vec()) }
}

/// The arguments of a file command that are paths.
fn path_args(program: &str, args: &[Word]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut options_done = false;
    let mut skip_first = matches!(program, "chmod" | "chown" | "chgrp" | "grep" | "rg");
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
            if matches!((program, t), ("grep" | "rg", "-e" | "-f" | "--regexp" | "--file")) {
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
                out.push(Word { text: p.to_string(), dynamic: w.dynamic });
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

fn has_stdin_script(node: Node<'_>, src: &str) -> bool {
    let parent_is_redirected = node.parent().is_some_and(|p| {
        let mut c = p.walk();
        p.kind() == "redirected_statement"
            && p.children(&mut c).any(|r| {
                matches!(r.kind(), "heredoc_redirect" | "herestring_redirect")
                    || (r.kind() == "file_redirect" && text(r, src).trim_start().starts_with('<'))
            })
    });
    let piped_into = node
        .parent()
        .is_some_and(|p| p.kind() == "pipeline" && p.child(0).is_some_and(|first| first.id() != node.id()));
    parent_is_redirected || piped_into
}

fn text<'s>(node: Node<'_>, src: &'s str) -> &'s str {
    src.get(node.byte_range()).unwrap_or_default()
}

/// The value of a word node as the shell would see it, where that is known before running.
fn word(node: Node<'_>, src: &str) -> Word {
    match node.kind() {
        "command_name" => node.child(0).map_or(Word { text: String::new(), dynamic: true }, |c| word(c, src)),
        "word" | "number" => Word { text: unescape(text(node, src)), dynamic: false },
        "raw_string" => Word { text: text(node, src).trim_matches('\'').to_string(), dynamic: false },
        "string" => {
            let mut dynamic = false;
            let mut out = String::new();
            let mut c = node.walk();
            for child in node.children(&mut c) {
                match child.kind() {
                    "\"" => {}
                    "string_content" => out.push_str(&unescape_in_quotes(text(child, src))),
                    _ => {
                        dynamic = true;
                        out.push_str(text(child, src));
                    }
                }
            }
            Word { text: out, dynamic }
        }
        "concatenation" => {
            let mut out = Word { text: String::new(), dynamic: false };
            let mut c = node.walk();
            for child in node.children(&mut c) {
                let part = word(child, src);
                out.text.push_str(&part.text);
                out.dynamic |= part.dynamic;
            }
            out
        }
        _ => Word { text: text(node, src).to_string(), dynamic: true },
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn unescape_in_quotes(s: &str) -> String {
    s.replace("\\\"", "\"").replace("\\\\", "\\").replace("\\$", "$").replace("\\`", "`")
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
        Case { _tmp: tmp, root }
    }

    fn requests(c: &Case, cmd: &str) -> Vec<PermissionRequest> {
        permission_requests(cmd, &c.root, &c.root, Some(Path::new("/home/u")))
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
        for cmd in [r#"bash -c "git status && rm x""#, "sh -c 'rm x'", "eval 'rm x'", r#"sudo bash -lc "rm x""#] {
            let r = bash(&c, cmd);
            assert!(r.patterns.contains(&"rm x".to_string()), "{cmd}: {:?}", r.patterns);
            assert_eq!(r.minimum, Action::Allow, "{cmd}");
        }
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
        assert!(of(&reqs, "read").is_none(), "~/.ssh is outside; cp and rm are not readers");
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
        assert_eq!(bash(&c, "git -C x status").always, ["git *"]);
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
    fn a_workdir_outside_the_worktree_is_external() {
        let c = case();
        let reqs = permission_requests("ls", Path::new("/tmp"), &c.root, None);
        assert_eq!(of(&reqs, "external_directory").unwrap().patterns, ["/tmp/*"]);
    }
}
