//! Options of common programs that write files or run other programs: `git diff --output=F`,
//! `sort -o F`, `uniq IN OUT`, `tree -o F`, `rg --pre CMD`, `find -exec CMD ;`, sed's `w` and
//! `e` commands (see [`super::sed`]), ... A rule that allows the program (`git diff *`, the
//! `plan` agent's read-only commands) then still cannot write a file or run a program its text
//! does not show: writes become `edit` requests on their target, like a redirection, and the
//! programs run become simple commands checked like any other.
//!
//! Option syntax follows GNU `getopt_long` (clustered short options, `-oFILE`, `--opt=VALUE`,
//! `--opt VALUE`, unambiguous abbreviations of long options) where the program does. Where an
//! option could be read two ways, the reading with more effects is taken.

use super::Word;
use super::sed;

/// Something a command does beyond what its program name says.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Effect {
    /// Writes this file (relative to the command's directory unless absolute).
    Writes(Word),
    /// Writes files under this directory, names not known in advance.
    WritesUnder(Word),
    /// Deletes this file (and, when recursive, everything under it): an edit that creates
    /// nothing.
    Deletes(Word, bool),
    /// Reads this file.
    Reads(Word),
    /// Shows the contents of the files under this directory (`grep -r`, `rg`): the `read` rules
    /// of each file apply, which only the tool can check (see [`super::TreeRead`]).
    ReadsTree(Word, TreeFilter),
    /// Runs this simple command (program and arguments).
    Runs(Vec<Word>),
    /// Reads this file as code it runs (`make -f FILE`, a `Makefile`).
    Executes(Word),
    /// Runs git in this directory: git reads the configuration of the repository there, which
    /// may name programs to run (a repository nested in the worktree is the model's to write).
    RunsGitIn(Word),
    /// Runs this text as a shell command line, and that cannot be checked (sed's `e`): the line
    /// is analysed, and the command asks whatever it says.
    RunsLine(String),
    /// Runs this text as a shell command line (`git rebase -x`, `strace -o '|cmd'`).
    Line(Word),
    /// Runs the command in this directory (`env -C DIR`, `sudo -D DIR`).
    Chdir(Word),
    /// Sets this shell variable to a value known only at run time (`read x`).
    SetsAtRunTime(String),
    /// Runs code that no rule can read (`python3 -c CODE`, a script on standard input): it may
    /// run any command, so it asks where the rules deny some command (an opaque request). The
    /// reason.
    RunsCode(String),
    /// Does something that cannot be checked; the reason.
    Unclassified(String),
}

/// Which files under a directory a recursive reader looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeFilter {
    /// Hidden files and directories too (`grep -r`, `rg --hidden`).
    pub hidden: bool,
    /// Files that `.gitignore` and `.ignore` exclude too (`grep -r`, `rg --no-ignore`).
    pub ignored: bool,
}

/// Programs that an option (for `find`, an expression) can make run another program or a
/// script: a word of theirs whose value is known only at run time may be such an option.
pub(super) const RUN_BY_OPTIONS: &[&str] = &[
    "find", "git", "tar", "sort", "rg", "sed", "awk", "gawk", "mawk", "nawk", "install", "zip", "make", "gmake", "man",
    "ssh", "scp", "sftp", "rsync", "wget", "nc", "ncat", "netcat", "socat", "less", "vi", "vim", "nvim", "view",
    "gvim", "vimdiff", "ed", "ex", "gdb", "file",
];

/// Whether `program` is a vi (`vim`, `vim.basic`, `rvim`, `nvim`, `gview`, ...): all of them
/// run editor commands given by options or on their input.
pub(super) fn is_vi(program: &str) -> bool {
    let base = program.split('.').next().unwrap_or_default();
    let known = |b: &str| {
        matches!(b, "vi" | "vim" | "nvim" | "view" | "vimdiff" | "vimx" | "nvi" | "elvis" | "vile" | "mvim" | "ex")
    };
    known(base)
        || base.strip_prefix(['r', 'g', 'e']).is_some_and(known)
        || base.strip_prefix("rg").is_some_and(known)
        || program.starts_with("vim")
        || program.starts_with("nvim")
}

/// The porcelain command a git plumbing command does the work of, if any: a rule about the
/// porcelain one holds for it too.
pub(super) fn git_porcelain(subcommand: &str) -> Option<&'static str> {
    match subcommand {
        "send-pack" | "http-push" => Some("push"),
        "fetch-pack" => Some("fetch"),
        _ => None,
    }
}

/// The values of the long option `--NAME` wherever it is given, spelt as `getopt_long` accepts
/// it (any abbreviation of at least `min` letters; the value attached with `=` or the next
/// word); `None` for one given last with no value.
fn long_values(args: &[Word], name: &str, min: usize) -> Vec<Option<Word>> {
    let mut out = Vec::new();
    for (i, w) in args.iter().enumerate() {
        let Some(long) = w.text.strip_prefix("--") else { continue };
        let (given, attached) = match long.split_once('=') {
            Some((given, value)) => (given, Some(value)),
            None => (long, None),
        };
        if given.len() < min.max(1) || !name.starts_with(given) {
            continue;
        }
        out.push(match attached {
            Some(value) => Some(part(w, value)),
            None => args.get(i + 1).cloned(),
        });
    }
    out
}

/// `text` with `%XX` escapes decoded (as bytes; what is not UTF-8 is replaced).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
        if bytes[i] == b'%'
            && let (Some(&h), Some(&l)) = (bytes.get(i + 1), bytes.get(i + 2))
            && let (Some(h), Some(l)) = (hex(h), hex(l))
        {
            out.push(h * 16 + l);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `find` primaries that take a value (the value may be computed at run time).
const FIND_VALUES: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-type",
    "-xtype",
    "-newer",
    "-anewer",
    "-cnewer",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-size",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-perm",
    "-links",
    "-inum",
    "-samefile",
    "-maxdepth",
    "-mindepth",
    "-printf",
    "-fstype",
    "-used",
    "-regextype",
    "-context",
];

/// git subcommands that an option can make run a program (`rebase --exec`, `fetch
/// --upload-pack`, `grep -O`, ...).
const GIT_RUNNING_SUBCOMMANDS: &[&str] = &[
    "rebase",
    "bisect",
    "submodule",
    "filter-branch",
    "difftool",
    "mergetool",
    "send-email",
    "clone",
    "fetch",
    "pull",
    "ls-remote",
    "push",
    "archive",
    "remote",
    "submodule--helper",
    "fetch-pack",
    "send-pack",
    "init",
    "grep",
    "help",
    "instaweb",
    "config",
    "web--browse",
];

/// A word of `program` whose value is known only at run time and may be an option that runs a
/// program (`a=-exec; find . $a ...`, `git $OPT`): the command cannot be checked.
pub(super) fn run_time_option(program: &str, args: &[Word]) -> Option<Effect> {
    if !RUN_BY_OPTIONS.contains(&program) {
        return None;
    }
    let open_at = |i: usize| args.get(i).is_some_and(|w| w.open);
    let found = match program {
        "find" => (0..args.len()).any(|i| {
            open_at(i)
                && !(i > 0
                    && (FIND_VALUES.contains(&args[i - 1].text.as_str()) || args[i - 1].text.starts_with("-newer")))
        }),
        "git" => {
            // Global options and the subcommand must be known; after a subcommand that an option
            // can make run a program, every word must be.
            let mut i = 0;
            while i < args.len() && (args[i].text.starts_with('-') || args[i].open) {
                if args[i].open {
                    break;
                }
                i += if GIT_GLOBAL_VALUES.contains(&args[i].text.as_str()) { 2 } else { 1 };
            }
            match args.get(i) {
                None => false,
                Some(sub) if sub.open => true,
                Some(sub) => {
                    GIT_RUNNING_SUBCOMMANDS.contains(&sub.text.as_str()) && args[i + 1..].iter().any(|w| w.open)
                }
            }
        }
        _ => args.iter().any(|w| w.open),
    };
    found.then(|| {
        Effect::Unclassified(format!(
            "a word of `{program}` is known only at run time and may be an option that runs a program"
        ))
    })
}

/// What `program` with `args` does beyond what its name says.
pub(super) fn effects(program: &str, args: &[Word]) -> Vec<Effect> {
    match program {
        "git" => git(args),
        "grep" | "egrep" | "fgrep" | "zgrep" => grep(args),
        "ag" | "ack" | "ack-grep" | "ugrep" | "pt" | "sift" => searcher(args),
        "sed" => sed::effects(args),
        "sort" => sort(args),
        "uniq" => uniq(args),
        "tree" => tree(args),
        "rg" => rg(args),
        "find" => find(args),
        "file" => file(args),
        "curl" => curl(args),
        "wget" => wget(args),
        "dd" => dd(args),
        "awk" | "gawk" | "mawk" | "nawk" => awk(args),
        "ed" | "red" | "ex" => {
            vec![Effect::Unclassified(format!("`{program}` runs editor commands, which may run programs"))]
        }
        // Every vi: its options run editor commands (`-c`, `+CMD`, `--cmd`, `-S`, `-u`, clustered
        // `-nEs`), and it reads editor commands from its input when that is not a terminal
        // (`vim -Es <<< '!CMD'`, `echo ':!CMD' | vim`): it asks, but for `--version` and `--help`.
        // A command that runs a shell command (`-c '!CMD'`) is analysed too, so a deny holds.
        _ if is_vi(program) => {
            if matches!(args, [w] if matches!(w.text.as_str(), "--version" | "--help" | "-h")) {
                return Vec::new();
            }
            let mut out = Vec::new();
            for (i, w) in args.iter().enumerate() {
                let command = match w.text.as_str() {
                    "-c" | "--cmd" => args.get(i + 1),
                    t if t.starts_with('+') => Some(w),
                    _ => None,
                };
                if let Some(line) = command.and_then(|c| {
                    super::wrappers::shell_escape(c.text.trim_start_matches('+')).map(|l| Word::like(c, l))
                }) {
                    out.push(Effect::Line(line));
                }
            }
            out.push(Effect::Unclassified(format!(
                "`{program}` runs the editor commands its options and its input give it, which may run programs"
            )));
            out
        }
        "socat"
            if args.iter().any(|w| {
                let t = w.text.to_ascii_uppercase();
                t.contains("EXEC:") || t.contains("SYSTEM:") || w.dynamic
            }) =>
        {
            vec![Effect::Unclassified("`socat EXEC:`/`SYSTEM:` runs a command".into())]
        }
        "nc" | "ncat" | "netcat"
            if args.iter().any(|w| {
                w.text.starts_with("-e")
                    || w.text.starts_with("-c")
                    || w.text.starts_with("--exec")
                    || w.text.starts_with("--sh-exec")
                    || w.text.starts_with("--lua-exec")
            }) =>
        {
            vec![Effect::Unclassified(format!("`{program} -e`/`-c` runs a command"))]
        }
        // `--files0-from=F` (any abbreviation): the names of the files to read are in F.
        "wc" | "du" => long_values(args, "files0-from", if program == "du" { 2 } else { 1 })
            .into_iter()
            .map(|file| match file {
                Some(file) if file.text != "-" => Effect::Reads(file),
                _ => Effect::Unclassified(format!("`{program} --files0-from` reads file names from its input")),
            })
            .collect(),
        "run-parts" => {
            vec![Effect::Unclassified("`run-parts` runs the programs of a directory that its options choose".into())]
        }
        "at" | "batch" | "crontab" => {
            vec![Effect::Unclassified(format!("`{program}` schedules commands to run later"))]
        }
        "tmux" | "screen" => vec![Effect::Unclassified(format!("`{program}` may run commands in another session"))],
        "zip" if args.iter().any(|w| w.text.starts_with("-TT") || w.text.starts_with("--unzip-command")) => {
            vec![Effect::Unclassified("`zip -TT` runs the given command".into())]
        }
        // `zip [options] ARCHIVE FILE...`: what goes in is read (a directory with everything
        // under it with `-r`/`-R`), and `-@` takes the names from standard input.
        "zip" => {
            let short = |c: char| {
                args.iter().any(|w| w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains(c))
            };
            let recursive = short('r')
                || short('R')
                || args.iter().any(|w| w.text == "--recurse-paths" || w.text == "--recurse-patterns");
            let mut out = Vec::new();
            if short('@') || args.iter().any(|w| w.text == "--names-stdin") {
                out.push(Effect::Reads(Word::new("the files `zip -@` is given", true)));
            }
            let operands: Vec<&Word> = args.iter().filter(|w| !w.text.starts_with('-') || w.text == "-").collect();
            for input in operands.into_iter().skip(1) {
                out.push(if recursive {
                    Effect::ReadsTree(input.clone(), TreeFilter { hidden: true, ignored: true })
                } else {
                    Effect::Reads(input.clone())
                });
            }
            out
        }
        "make" | "gmake" => make(args),
        _ if interpreter_family(program).is_some() => interpreter(program, args),
        "cargo" => ["Cargo.toml", "build.rs", ".cargo/config.toml", ".cargo/config"]
            .into_iter()
            .map(|f| Effect::Executes(Word::literal(f)))
            .collect(),
        "npm" | "pnpm" | "yarn" | "npx" => {
            [".npmrc", "package.json"].into_iter().map(|f| Effect::Executes(Word::literal(f))).collect()
        }
        "just" => {
            ["justfile", "Justfile", ".justfile"].into_iter().map(|f| Effect::Executes(Word::literal(f))).collect()
        }
        "rake" => vec![Effect::Executes(Word::literal("Rakefile"))],
        "gradle" | "gradlew" => ["build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"]
            .into_iter()
            .map(|f| Effect::Executes(Word::literal(f)))
            .collect(),
        "mvn" => vec![Effect::Executes(Word::literal("pom.xml"))],
        "cmake" => vec![Effect::Executes(Word::literal("CMakeLists.txt"))],
        "split" | "csplit" => {
            let mut out = vec![Effect::Writes(Word::new(format!("the files `{program}` makes"), true))];
            // `split --filter=COMMAND` (any abbreviation) runs COMMAND through the shell.
            if program == "split" {
                out.extend(long_values(args, "filter", 1).into_iter().map(|line| {
                    line.map_or_else(|| Effect::Unclassified("`split --filter` runs a command".into()), Effect::Line)
                }));
            }
            out
        }
        "shuf" | "iconv" => {
            let syntax =
                Syntax { short_values: "oinf t", short_optional: "", long_values: &["output"], abbreviations: true };
            syntax
                .parse(args)
                .into_iter()
                .filter_map(|a| match a {
                    Arg::Short('o', Some(file)) => Some(Effect::Writes(file)),
                    Arg::Long(name, Some(file)) if syntax.is(&name, "output") => Some(Effect::Writes(file)),
                    _ => None,
                })
                .collect()
        }
        "xxd" => {
            let operands: Vec<&Word> = args.iter().filter(|w| !w.text.starts_with('-') || w.text == "-").collect();
            operands.get(1).map(|out| vec![Effect::Writes((*out).clone())]).unwrap_or_default()
        }
        // They replace each file they are given (`gzip protected.txt` leaves `protected.txt.gz`,
        // review 14), and make one named at run time.
        "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "unzstd" | "lz4" | "lzma" | "unlzma"
        | "compress" | "uncompress" | "lzip" | "brotli" | "pigz" | "unpigz" | "pbzip2" | "pixz"
            if !args.iter().any(|w| {
                matches!(w.text.as_str(), "--stdout" | "--to-stdout" | "--test" | "--list")
                    || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains(['c', 't', 'l']))
            }) =>
        {
            let mut out = vec![Effect::Writes(Word::new(format!("the files `{program}` makes"), true))];
            out.extend(args.iter().filter(|w| !w.text.starts_with('-')).map(|w| Effect::Writes(w.clone())));
            out
        }
        // In place: every operand is rewritten.
        "dos2unix" | "unix2dos" | "mac2unix" | "unix2mac" | "fallocate" | "sponge" | "chattr" | "setfattr"
        | "setfacl" => args.iter().filter(|w| !w.text.starts_with('-')).map(|w| Effect::Writes(w.clone())).collect(),
        "cp" | "mv" | "install" | "ln" => copy(program, args),
        "touch" | "truncate" | "rm" | "rmdir" | "shred" | "unlink" | "mkdir" | "tee" => writes_operands(program, args),
        "chmod" | "chown" | "chgrp" => chmod(program, args),
        "rsync" | "scp" => remote_copy(program, args),
        "patch" => patch(args),
        "tar" => tar(args),
        "unzip" => unzip(args),
        _ => super::builtins::effects(program, args),
    }
}

/// One element of a command line, options parsed.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Arg {
    /// A short option and its value, if it takes one.
    Short(char, Option<Word>),
    /// A long option as written (without `--` and `=VALUE`) and its value, if it has one.
    Long(String, Option<Word>),
    /// An operand.
    Operand(Word),
}

/// How a program's options are written.
pub(super) struct Syntax {
    /// Short options that take a value (`-o FILE`, `-oFILE`).
    pub short_values: &'static str,
    /// Short options whose value is optional and only attached (`-i.bak`).
    pub short_optional: &'static str,
    /// Long options that take a value (`--output FILE`, `--output=FILE`); other long options
    /// have a value only after `=`.
    pub long_values: &'static [&'static str],
    /// Whether long options may be abbreviated (`--outp` for `--output`).
    pub abbreviations: bool,
}

impl Syntax {
    /// Whether `given` (a long option as written) names `full`.
    pub fn is(&self, given: &str, full: &str) -> bool {
        given == full || (self.abbreviations && !given.is_empty() && full.starts_with(given))
    }

    /// Splits `args` into options and operands.
    pub fn parse(&self, args: &[Word]) -> Vec<Arg> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let w = &args[i];
            let t = w.text.as_str();
            i += 1;
            if t == "--" {
                out.extend(args[i..].iter().cloned().map(Arg::Operand));
                break;
            }
            if let Some(long) = t.strip_prefix("--") {
                match long.split_once('=') {
                    Some((name, value)) => out.push(Arg::Long(name.to_string(), Some(part(w, value)))),
                    None if self.long_values.iter().any(|full| self.is(long, full)) => {
                        out.push(Arg::Long(long.to_string(), args.get(i).cloned()));
                        i += 1;
                    }
                    None => out.push(Arg::Long(long.to_string(), None)),
                }
                continue;
            }
            let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) else {
                out.push(Arg::Operand(w.clone()));
                continue;
            };
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                if self.short_values.contains(c) {
                    if rest.is_empty() {
                        out.push(Arg::Short(c, args.get(i).cloned()));
                        i += 1;
                    } else {
                        out.push(Arg::Short(c, Some(part(w, rest))));
                    }
                    break;
                }
                if self.short_optional.contains(c) {
                    out.push(Arg::Short(c, (!rest.is_empty()).then(|| part(w, rest))));
                    break;
                }
                out.push(Arg::Short(c, None));
            }
        }
        out
    }
}

/// A piece of word `w`'s text, as dynamic as `w`.
fn part(w: &Word, text: &str) -> Word {
    Word::like(w, text)
}

fn here() -> Word {
    Word::literal(".")
}

/// `dir/path` (or `path` when it is absolute or `dir` is `None`).
fn under(dir: Option<&Word>, path: &Word) -> Word {
    match dir {
        Some(d) if !path.text.starts_with('/') => Word {
            text: format!("{}/{}", d.text.trim_end_matches('/'), path.text),
            dynamic: d.dynamic || path.dynamic,
            glob: d.glob || path.glob,
            open: d.open || path.open,
        },
        _ => path.clone(),
    }
}

/// Global options of git that take a separate value.
const GIT_GLOBAL_VALUES: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--super-prefix",
    "--shallow-file",
    "--attr-source",
];

/// Global options of git that take no value (git 2.47's `handle_options`; no abbreviations).
const GIT_GLOBAL_FLAGS: &[&str] = &[
    "-p",
    "--paginate",
    "-P",
    "--no-pager",
    "--no-replace-objects",
    "--no-lazy-fetch",
    "--no-optional-locks",
    "--no-advice",
    "--bare",
    "--literal-pathspecs",
    "--no-literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--exec-path",
    "--html-path",
    "--man-path",
    "--info-path",
];

/// Global options of git written `--NAME=VALUE`.
const GIT_GLOBAL_ATTACHED: &[&str] = &[
    "--exec-path=",
    "--git-dir=",
    "--work-tree=",
    "--namespace=",
    "--config-env=",
    "--super-prefix=",
    "--list-cmds=",
    "--attr-source=",
];

/// The git command line with its global options removed: the subcommand and its arguments
/// (`git -C . --no-pager push origin` → `push origin`; `git --help x` → `help x`). A rule
/// written for `git push *` must see every push. An option not known here, or one computed at
/// run time, cannot be removed: an error (fail closed).
pub(super) fn git_subcommand(args: &[Word]) -> Result<Vec<Word>, String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if !w.is_plain() {
            return Err("a global option or the subcommand of `git` is computed at run time".into());
        }
        let renamed = |name: &str| {
            let mut out = vec![Word::literal(name)];
            out.extend_from_slice(&args[i + 1..]);
            out
        };
        match t {
            "-h" | "--help" => return Ok(renamed("help")),
            "-v" | "--version" => return Ok(renamed("version")),
            _ if GIT_GLOBAL_FLAGS.contains(&t) => i += 1,
            _ if GIT_GLOBAL_VALUES.contains(&t) => i += 2,
            _ if GIT_GLOBAL_ATTACHED.iter().any(|p| t.starts_with(p)) => i += 1,
            _ if t.starts_with('-') => return Err(format!("`git {t}` is not a global option of git known here")),
            _ => return Ok(args[i..].to_vec()),
        }
    }
    Ok(Vec::new())
}

/// Configuration keys known not to make git run a program or read more configuration (compared
/// lowercased). Setting any other key asks: hooks paths, aliases, pagers, editors, filters,
/// `core.fsmonitor`, `core.sshCommand`, credential helpers, `include.path`, ... run programs.
const GIT_SAFE_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "core.autocrlf",
    "core.eol",
    "core.filemode",
    "core.ignorecase",
    "core.quotepath",
    "core.safecrlf",
    "core.precomposeunicode",
    "core.abbrev",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "push.followtags",
    "fetch.prune",
    "fetch.prunetags",
    "merge.ff",
    "merge.conflictstyle",
    "rebase.autostash",
    "rebase.autosquash",
    "rebase.updaterefs",
    "diff.renames",
    "diff.algorithm",
    "diff.colormoved",
    "diff.mnemonicprefix",
    "status.short",
    "status.branch",
    "status.showuntrackedfiles",
    "log.date",
    "log.decorate",
    "log.abbrevcommit",
    "branch.sort",
    "tag.sort",
    "column.ui",
    "commit.verbose",
    "rerere.enabled",
    "gc.auto",
];

/// Sections every key of which is harmless.
const GIT_SAFE_SECTIONS: &[&str] = &["color", "advice"];

/// Whether setting the configuration `key` cannot make git run a program.
fn git_key_is_safe(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    let (Some(section), Some(name)) = (parts.first(), parts.last()) else { return false };
    if parts.len() < 2 {
        return false;
    }
    let section = section.to_ascii_lowercase();
    let short = format!("{section}.{}", name.to_ascii_lowercase());
    GIT_SAFE_SECTIONS.contains(&section.as_str()) || (parts.len() == 2 && GIT_SAFE_KEYS.contains(&short.as_str()))
}

fn git(args: &[Word]) -> Vec<Effect> {
    let mut out = Vec::new();
    let mut chdir: Option<Word> = None;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if let Some(setting) = t.strip_prefix("--config-env=") {
            git_setting(&part(w, setting), &mut out);
            i += 1;
            continue;
        }
        if GIT_GLOBAL_VALUES.contains(&t) {
            match (t, args.get(i + 1)) {
                ("-C", Some(dir)) => chdir = Some(under(chdir.as_ref(), dir)),
                ("-c" | "--config-env", Some(setting)) => git_setting(setting, &mut out),
                _ => {}
            }
            i += 2;
            continue;
        }
        if t.starts_with("--exec-path=") {
            out.push(Effect::Unclassified("`git --exec-path` runs git commands from another directory".into()));
        }
        if ["--git-dir", "--work-tree"].iter().any(|o| t == *o || t.starts_with(&format!("{o}="))) {
            out.push(Effect::Unclassified(
                "`git --git-dir`/`--work-tree` use another repository's configuration, which may run programs".into(),
            ));
        }
        if !t.starts_with('-') {
            break;
        }
        i += 1;
    }
    out.push(Effect::RunsGitIn(chdir.clone().unwrap_or_else(here)));
    let Some(sub) = args.get(i) else { return out };
    let rest = &args[i + 1..];
    if !sub.dynamic && !GIT_COMMANDS.contains(&sub.text.as_str()) {
        out.push(Effect::Unclassified(format!(
            "`git {}` is not one of git's own commands: it may be an alias or a `git-{}` program, which may run anything",
            sub.text, sub.text
        )));
    }
    git_runs(&sub.text, rest, chdir.as_ref(), &mut out);
    let syntax = Syntax {
        short_values: match sub.text.as_str() {
            "grep" => "efABCm",
            "format-patch" | "archive" => "o",
            _ => "",
        },
        short_optional: if sub.text == "grep" { "O" } else { "" },
        long_values: &["output", "output-directory"],
        abbreviations: true,
    };
    let mut stdout = false;
    let mut directory = None;
    for arg in syntax.parse(rest) {
        match (&arg, sub.text.as_str()) {
            (Arg::Long(name, Some(value)), "format-patch") if syntax.is(name, "output-directory") && name.len() > 6 => {
                directory = Some(under(chdir.as_ref(), value));
            }
            (Arg::Long(name, Some(value)), _) if syntax.is(name, "output") => {
                out.push(Effect::Writes(under(chdir.as_ref(), value)));
            }
            (Arg::Short('o', Some(value)), "format-patch") => directory = Some(under(chdir.as_ref(), value)),
            (Arg::Short('o', Some(value)), "archive") => out.push(Effect::Writes(under(chdir.as_ref(), value))),
            (Arg::Short('O', _), "grep") => {
                out.push(Effect::Unclassified("`git grep -O` runs a pager program on the files found".into()));
            }
            (Arg::Long(name, _), "grep") if syntax.is(name, "open-files-in-pager") && name.len() >= 2 => {
                out.push(Effect::Unclassified(
                    "`git grep --open-files-in-pager` runs a pager program on the files found".into(),
                ));
            }
            (Arg::Long(name, None), "format-patch") if syntax.is(name, "stdout") => stdout = true,
            _ => {}
        }
    }
    match sub.text.as_str() {
        "format-patch" if !stdout => {
            out.push(Effect::WritesUnder(directory.unwrap_or_else(|| chdir.clone().unwrap_or_else(here))));
        }
        // What writes the worktree's files (review 14: `git checkout -- protected.txt` under an
        // edit deny). Which files, the repository decides: anywhere under where it runs.
        sub if GIT_WORKTREE_WRITERS.contains(&sub) || sub_writes_worktree(sub, rest) => {
            out.push(Effect::WritesUnder(chdir.clone().unwrap_or_else(here)));
        }
        "bundle" => {
            let operands: Vec<&Word> = rest.iter().filter(|w| !w.text.starts_with('-')).collect();
            if operands.first().is_some_and(|w| w.text == "create")
                && let Some(file) = operands.get(1)
            {
                out.push(Effect::Writes(under(chdir.as_ref(), file)));
            }
        }
        _ => {}
    }
    out
}

/// git's commands that write files of the worktree.
const GIT_WORKTREE_WRITERS: &[&str] = &[
    "am",
    "apply",
    "checkout",
    "checkout-index",
    "cherry-pick",
    "clean",
    "merge",
    "mv",
    "pull",
    "read-tree",
    "rebase",
    "reset",
    "restore",
    "revert",
    "rm",
    "stash",
    "switch",
    "worktree",
    "clone",
    "init",
    "submodule",
    "sparse-checkout",
];

/// Whether `git SUB REST` writes the worktree where the subcommand alone does not say so.
fn sub_writes_worktree(sub: &str, rest: &[Word]) -> bool {
    // `git branch -f` and `git update-ref` move refs only; `git lfs pull/checkout` write files.
    sub == "lfs" && rest.first().is_some_and(|w| matches!(w.text.as_str(), "pull" | "checkout" | "fetch" | "smudge"))
}

/// git's own commands (`git help -a`, git 2.47, and `lfs`): any other name is an alias or a `git-NAME`
/// program on `PATH`, either of which may run anything.
const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "archive",
    "bisect",
    "branch",
    "bundle",
    "checkout",
    "cherry-pick",
    "citool",
    "clean",
    "clone",
    "commit",
    "describe",
    "diff",
    "fetch",
    "format-patch",
    "gc",
    "gitk",
    "grep",
    "gui",
    "init",
    "log",
    "maintenance",
    "merge",
    "mv",
    "notes",
    "pull",
    "push",
    "range-diff",
    "rebase",
    "reset",
    "restore",
    "revert",
    "rm",
    "scalar",
    "shortlog",
    "show",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "tag",
    "worktree",
    "config",
    "fast-export",
    "fast-import",
    "filter-branch",
    "mergetool",
    "pack-refs",
    "prune",
    "reflog",
    "refs",
    "remote",
    "repack",
    "replace",
    "annotate",
    "blame",
    "bugreport",
    "count-objects",
    "diagnose",
    "difftool",
    "fsck",
    "gitweb",
    "help",
    "instaweb",
    "merge-tree",
    "rerere",
    "show-branch",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
    "archimport",
    "cvsexportcommit",
    "cvsimport",
    "cvsserver",
    "imap-send",
    "p4",
    "quiltimport",
    "request-pull",
    "send-email",
    "svn",
    "apply",
    "checkout-index",
    "commit-graph",
    "commit-tree",
    "hash-object",
    "index-pack",
    "merge-file",
    "merge-index",
    "mktag",
    "mktree",
    "multi-pack-index",
    "pack-objects",
    "prune-packed",
    "read-tree",
    "replay",
    "symbolic-ref",
    "unpack-objects",
    "update-index",
    "update-ref",
    "write-tree",
    "cat-file",
    "cherry",
    "diff-files",
    "diff-index",
    "diff-tree",
    "for-each-ref",
    "for-each-repo",
    "get-tar-commit-id",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge-base",
    "name-rev",
    "pack-redundant",
    "rev-list",
    "rev-parse",
    "show-index",
    "show-ref",
    "unpack-file",
    "var",
    "verify-pack",
    "daemon",
    "fetch-pack",
    "http-backend",
    "send-pack",
    "update-server-info",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "column",
    "credential",
    "credential-cache",
    "credential-store",
    "fmt-merge-msg",
    "hook",
    "interpret-trailers",
    "mailinfo",
    "mailsplit",
    "merge-one-file",
    "patch-id",
    "stripspace",
    "submodule--helper",
    "web--browse",
];

/// `git -c KEY=VALUE`: a setting not known to be harmless cannot be checked.
fn git_setting(setting: &Word, out: &mut Vec<Effect>) {
    let key = setting.text.split('=').next().unwrap_or_default();
    if setting.dynamic || !git_key_is_safe(key) {
        out.push(Effect::Unclassified(format!("the git setting `{key}` may make git run a program")));
    }
}

/// Subcommands of git that run programs or commands given to them, or write files.
fn git_runs(sub: &str, rest: &[Word], chdir: Option<&Word>, out: &mut Vec<Effect>) {
    // `--name VALUE` or `--name=VALUE`, with any abbreviation of `--name` (git's parse-options
    // takes unambiguous prefixes; an ambiguous one fails, so treating it as `name` is safe).
    let value_of = |i: usize, w: &Word, name: &str| -> Option<Word> {
        let long = w.text.strip_prefix("--")?;
        let (given, attached) = match long.split_once('=') {
            Some((g, v)) => (g, Some(v)),
            None => (long, None),
        };
        if given.is_empty() || !name.trim_start_matches('-').starts_with(given) {
            return None;
        }
        match attached {
            None => rest.get(i + 1).cloned(),
            Some(v) => Some(part(w, v)),
        }
    };
    let abbreviates = |t: &str, name: &str| {
        t.strip_prefix("--")
            .map(|l| l.split('=').next().unwrap_or_default())
            .is_some_and(|g| !g.is_empty() && name.trim_start_matches('-').starts_with(g))
    };
    // `ext::CMD` runs CMD, `fd::` talks to a descriptor, and any `NAME::ADDRESS` runs the program
    // `git-remote-NAME`: a remote named so asks wherever one is given.
    if matches!(
        sub,
        "clone"
            | "fetch"
            | "pull"
            | "ls-remote"
            | "push"
            | "archive"
            | "remote"
            | "submodule"
            | "submodule--helper"
            | "fetch-pack"
            | "send-pack"
    ) && let Some(w) = rest.iter().find(|w| runs_transport(&w.text))
    {
        out.push(Effect::Unclassified(format!(
            "`{}` is a remote whose transport runs a program (`ext::`, `fd::`, `NAME::` run helpers)",
            w.text
        )));
    }
    match sub {
        "config" => git_config(rest, chdir, out),
        "rebase" => {
            out.extend(short_option_values(rest, 'x', "xsXC", "S").into_iter().map(Effect::Line));
            for (i, w) in rest.iter().enumerate() {
                out.extend(value_of(i, w, "--exec").map(Effect::Line));
            }
        }
        "bisect" => {
            if let Some(run) = rest.iter().position(|w| w.text == "run")
                && run + 1 < rest.len()
            {
                out.push(Effect::Runs(rest[run + 1..].to_vec()));
            }
        }
        "submodule" => {
            if let Some(at) = rest.iter().position(|w| w.text == "foreach") {
                let words: Vec<&Word> = rest[at + 1..].iter().filter(|w| !w.text.starts_with("--")).collect();
                let text = words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
                out.push(Effect::Line(Word::new(text, words.iter().any(|w| !w.is_plain()))));
            }
        }
        "filter-branch" => {
            for (i, w) in rest.iter().enumerate() {
                for option in [
                    "--env-filter",
                    "--tree-filter",
                    "--index-filter",
                    "--parent-filter",
                    "--msg-filter",
                    "--commit-filter",
                    "--tag-name-filter",
                    "--setup",
                ] {
                    out.extend(value_of(i, w, option).map(Effect::Line));
                }
            }
        }
        "difftool" | "mergetool" => {
            out.extend(short_option_values(rest, 'x', "tx", "O").into_iter().map(Effect::Line));
            for (i, w) in rest.iter().enumerate() {
                out.extend(value_of(i, w, "--extcmd").map(Effect::Line));
            }
        }
        // Perl's Getopt::Long takes any unique prefix, with one dash or two (`--sendmail-cm=`,
        // `-smtp-serv`), and its configuration names programs too (`sendemail.smtpServer`,
        // `--compose` opens an editor): it asks whatever its options.
        "send-email" => {
            out.push(Effect::Unclassified(
                "`git send-email` runs the programs its options and configuration name (`--sendmail-cmd`, `--smtp-server`, `--to-cmd`, an editor) and sends mail".into(),
            ));
        }
        "daemon" | "http-backend" | "upload-pack" | "receive-pack" | "upload-archive" | "shell" => {
            out.push(Effect::Unclassified(format!(
                "`git {sub}` serves a repository to another git, running hooks and the programs its options name (`--access-hook`)"
            )));
        }
        "help" => {
            const QUIET: &[&str] = &[
                "-a",
                "--all",
                "-g",
                "--guides",
                "-c",
                "--config",
                "--user-interfaces",
                "--developer-interfaces",
                "--verbose",
                "--no-verbose",
                "--external-commands",
                "--no-external-commands",
                "--aliases",
                "--no-aliases",
            ];
            if let Some(w) = rest.iter().find(|w| w.text.starts_with('-') && !QUIET.contains(&w.text.as_str())) {
                out.push(Effect::Unclassified(format!(
                    "`git help {}` may run a viewer program (`--web`, `--info`, `--man`, or an abbreviation)",
                    w.text
                )));
            }
        }
        "clone" | "fetch" | "pull" | "ls-remote" | "push" | "archive" | "remote" | "submodule--helper"
        | "fetch-pack" | "send-pack" => {
            for (i, w) in rest.iter().enumerate() {
                let t = w.text.as_str();
                if ["--upload-pack", "--receive-pack", "--exec", "--template"].iter().any(|o| abbreviates(t, o))
                    || (matches!(sub, "clone" | "ls-remote") && t.starts_with("-u"))
                {
                    out.push(Effect::Unclassified(format!(
                        "`git {sub} {t}` runs or installs the programs it is given"
                    )));
                }
                if sub == "clone" && (t == "-c" || t == "--config") {
                    if let Some(setting) = rest.get(i + 1) {
                        git_setting(setting, out);
                    }
                } else if let Some(setting) = t.strip_prefix("--config=") {
                    git_setting(&part(w, setting), out);
                }
            }
        }
        "init" if rest.iter().any(|w| abbreviates(&w.text, "--template")) => {
            out.push(Effect::Unclassified("`git init --template` installs hooks from the given directory".into()));
        }
        "instaweb" | "web--browse" => {
            out.push(Effect::Unclassified(format!("`git {sub}` runs a browser or web server")));
        }
        "apply" => {
            if rest.iter().any(|w| w.text == "--unsafe-paths") {
                out.push(Effect::Unclassified("`git apply --unsafe-paths` writes outside the worktree".into()));
            }
            let only_reports =
                rest.iter().any(|w| matches!(w.text.as_str(), "--check" | "--stat" | "--numstat" | "--summary"))
                    && !rest.iter().any(|w| w.text == "--apply");
            let index_only = rest.iter().any(|w| w.text == "--cached") && !rest.iter().any(|w| w.text == "--index");
            if !only_reports && !index_only {
                out.push(Effect::WritesUnder(chdir.cloned().unwrap_or_else(here)));
            }
        }
        _ => {}
    }
}

/// The long options of `git config` (git 2.47, the old form and the subcommands' together):
/// the name, whether it takes a value, and what it does.
const GIT_CONFIG_LONG: &[(&str, bool, GitConfigOption)] = {
    use GitConfigOption::{Edit, File, Flag, Global, Read, Sections, System, Worktree, Write};
    &[
        ("global", false, Global),
        ("system", false, System),
        ("local", false, Flag),
        ("worktree", false, Worktree),
        ("file", true, File),
        ("blob", true, Flag),
        ("get", false, Read),
        ("get-all", false, Read),
        ("get-regexp", false, Read),
        ("get-urlmatch", false, Read),
        ("get-color", false, Read),
        ("get-colorbool", false, Read),
        ("list", false, Read),
        ("replace-all", false, Write),
        ("add", false, Write),
        ("unset", false, Write),
        ("unset-all", false, Write),
        ("rename-section", false, Sections),
        ("remove-section", false, Sections),
        ("edit", false, Edit),
        ("type", true, Flag),
        ("no-type", false, Flag),
        ("bool", false, Flag),
        ("int", false, Flag),
        ("bool-or-int", false, Flag),
        ("path", false, Flag),
        ("expiry-date", false, Flag),
        ("null", false, Flag),
        ("name-only", false, Flag),
        ("includes", false, Flag),
        ("no-includes", false, Flag),
        ("show-origin", false, Flag),
        ("show-scope", false, Flag),
        ("show-names", false, Flag),
        ("no-show-names", false, Flag),
        ("default", true, Flag),
        ("comment", true, Flag),
        ("fixed-value", false, Flag),
        ("value", true, Flag),
        ("no-value", false, Flag),
        ("url", true, Flag),
        ("all", false, Flag),
        ("regexp", false, Flag),
        ("append", false, Flag),
    ]
};

/// What an option of `git config` does.
#[derive(Clone, Copy, PartialEq)]
enum GitConfigOption {
    Flag,
    Global,
    System,
    Worktree,
    File,
    Read,
    Write,
    Sections,
    Edit,
}

/// The values of the short option `-LETTER` in `args`, clustered or not (`-yx CMD`, `-ixCMD`),
/// as git's parse-options reads clusters: `with_values` are the short options that take a value
/// (attached, or the next word), `optional` those whose value is attached only.
fn short_option_values(args: &[Word], letter: char, with_values: &str, optional: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty() && !c.starts_with('-')) else { continue };
        for (at, c) in cluster.char_indices() {
            let rest = &cluster[at + c.len_utf8()..];
            if with_values.contains(c) {
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(part(w, rest))
                };
                if c == letter {
                    out.push(value.unwrap_or_else(|| Word::new(format!("the value of `{t}`"), true)));
                }
                break;
            }
            if optional.contains(c) {
                break;
            }
        }
    }
    out
}

/// Whether a git remote named `text` goes through a transport that runs a program: `ext::CMD`,
/// `fd::N`, or any `NAME::ADDRESS` (git runs `git-remote-NAME`), also as an option's value.
fn runs_transport(text: &str) -> bool {
    let value = if text.starts_with('-') { text.split_once('=').map_or("", |(_, v)| v) } else { text };
    value.split_once("::").is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.' | '_'))
    })
}

/// `git config`: reading is harmless; setting, adding, renaming or removing a key asks unless the
/// key is known not to make git run a program, and writes the configuration file (`.git/config`,
/// a protected path); `--edit` opens an editor. Options are read as git's parse-options reads
/// them — unique prefixes of long options, clustered short ones, values attached or in the next
/// word — and one not known here asks (its value could be read as the key).
fn git_config(args: &[Word], chdir: Option<&Word>, out: &mut Vec<Effect>) {
    use GitConfigOption as O;
    #[derive(PartialEq)]
    enum Mode {
        Read,
        Write,
        Sections,
        Edit,
    }
    let mut mode = None;
    let mut file: Option<Word> = None;
    let mut operands: Vec<Word> = Vec::new();
    let mut subcommand = false;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        // The old form stops at the first operand; a subcommand's options may come anywhere.
        if (!operands.is_empty() && !subcommand) || !t.starts_with('-') || t == "-" {
            if !subcommand && operands.is_empty() && mode.is_none() {
                let sub = match t {
                    "list" | "get" => Some(Mode::Read),
                    "set" | "unset" => Some(Mode::Write),
                    "rename-section" | "remove-section" => Some(Mode::Sections),
                    "edit" => Some(Mode::Edit),
                    _ => None,
                };
                if sub.is_some() {
                    subcommand = true;
                    mode = sub;
                    continue;
                }
            }
            operands.push(w.clone());
            continue;
        }
        if !w.is_plain() {
            out.push(Effect::Unclassified("the options of `git config` are computed at run time".into()));
            return;
        }
        if t == "--" {
            operands.extend(args[i..].iter().cloned());
            break;
        }
        let mut found: Vec<(O, Option<Word>)> = Vec::new();
        if let Some(long) = t.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((g, v)) => (g, Some(part(w, v))),
                None => (long, None),
            };
            let exact = GIT_CONFIG_LONG.iter().find(|(name, ..)| *name == given);
            let candidates: Vec<&(&str, bool, O)> = match exact {
                Some(one) => vec![one],
                None => {
                    GIT_CONFIG_LONG.iter().filter(|(name, ..)| !given.is_empty() && name.starts_with(given)).collect()
                }
            };
            let Some(&&(_, takes, what)) = candidates.first() else {
                out.push(Effect::Unclassified(format!("`git config {t}` is not an option known here")));
                return;
            };
            if candidates.iter().any(|(_, t2, w2)| *t2 != takes || *w2 != what) {
                out.push(Effect::Unclassified(format!("`git config {t}` is an ambiguous option")));
                return;
            }
            let value = if takes && attached.is_none() {
                i += 1;
                args.get(i - 1).cloned()
            } else {
                attached
            };
            found.push((what, value));
        } else {
            let cluster = &t[1..];
            for (at, c) in cluster.char_indices() {
                let rest = &cluster[at + c.len_utf8()..];
                let value = || {
                    if rest.is_empty() { (args.get(i).cloned(), 1) } else { (Some(part(w, rest)), 0) }
                };
                match c {
                    'f' | 't' => {
                        let (v, used) = value();
                        i += used;
                        found.push((if c == 'f' { O::File } else { O::Flag }, v));
                        break;
                    }
                    'l' => found.push((O::Read, None)),
                    'e' => found.push((O::Edit, None)),
                    'z' => found.push((O::Flag, None)),
                    _ => {
                        out.push(Effect::Unclassified(format!("`git config {t}` is not an option known here")));
                        return;
                    }
                }
            }
        }
        for (what, value) in found {
            match what {
                O::Flag => {}
                O::Global => file = Some(Word::literal("~/.gitconfig")),
                O::System => file = Some(Word::literal("/etc/gitconfig")),
                O::Worktree => file = Some(under(chdir, &Word::literal(".git/config.worktree"))),
                O::File => {
                    file = Some(match value {
                        Some(v) => under(chdir, &v),
                        None => Word::new("the file of `git config --file`", true),
                    });
                }
                O::Read if mode.is_none() => mode = Some(Mode::Read),
                O::Write => mode = Some(Mode::Write),
                O::Sections => mode = Some(Mode::Sections),
                O::Edit => mode = Some(Mode::Edit),
                O::Read => {}
            }
        }
    }
    let mode = mode.unwrap_or(if operands.len() >= 2 { Mode::Write } else { Mode::Read });
    let keys: Vec<&Word> = match mode {
        Mode::Read => return,
        Mode::Edit => {
            out.push(Effect::Unclassified("`git config --edit` opens an editor on git's configuration".into()));
            return;
        }
        Mode::Write => operands.iter().take(1).collect(),
        Mode::Sections => operands.iter().take(2).collect(),
    };
    for key in keys {
        let safe = if mode == Mode::Sections {
            GIT_SAFE_SECTIONS.contains(&key.text.to_ascii_lowercase().as_str())
        } else {
            git_key_is_safe(&key.text)
        };
        if !key.is_plain() || !safe {
            out.push(Effect::Unclassified(format!(
                "`git config` changes `{}`, which may make git run a program",
                key.text
            )));
        }
    }
    // The file written: the repository's own configuration unless an option says otherwise
    // (`.git/config` where git runs; a repository found further up is protected all the same).
    out.push(Effect::Writes(file.unwrap_or_else(|| under(chdir, &Word::literal(".git/config")))));
}

fn sort(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "kotST",
        short_optional: "",
        long_values: &[
            "key",
            "output",
            "field-separator",
            "buffer-size",
            "temporary-directory",
            "batch-size",
            "compress-program",
            "files0-from",
            "parallel",
            "random-source",
            "sort",
        ],
        abbreviations: true,
    };
    let mut out = Vec::new();
    for arg in syntax.parse(args) {
        match arg {
            Arg::Short('o', Some(file)) => out.push(Effect::Writes(file)),
            Arg::Long(name, Some(value)) if syntax.is(&name, "output") => {
                out.push(Effect::Writes(value));
            }
            Arg::Long(name, Some(program)) if syntax.is(&name, "compress-program") => {
                out.push(Effect::Runs(vec![program]));
            }
            _ => {}
        }
    }
    out
}

fn uniq(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "fsw",
        short_optional: "",
        long_values: &["skip-fields", "skip-chars", "check-chars"],
        abbreviations: true,
    };
    let operands: Vec<Word> = syntax
        .parse(args)
        .into_iter()
        .filter_map(|a| match a {
            Arg::Operand(w) => Some(w),
            _ => None,
        })
        .collect();
    operands.get(1).filter(|w| w.text != "-").map(|w| Effect::Writes(w.clone())).into_iter().collect()
}

/// `tree`: every short option that takes a value takes the next word, even inside a cluster.
fn tree(args: &[Word]) -> Vec<Effect> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        if t.starts_with("--") {
            if matches!(
                t,
                "--charset" | "--filelimit" | "--timefmt" | "--sort" | "--hintro" | "--houtro" | "--infofile"
            ) {
                i += 1;
            }
            continue;
        }
        let Some(cluster) = t.strip_prefix('-') else { continue };
        for c in cluster.chars() {
            match c {
                'o' => {
                    if let Some(file) = args.get(i) {
                        out.push(Effect::Writes(file.clone()));
                    }
                    i += 1;
                }
                'L' | 'P' | 'I' | 'H' | 'T' => i += 1,
                'R' => out.push(Effect::Unclassified("`tree -R` writes an output file in every directory".into())),
                _ => {}
            }
        }
    }
    out
}

/// `grep -r`/`-R` (or `-d recurse`): every file under each operand after the pattern (the
/// working directory when there is none) is shown.
fn grep(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "efABCmdDX",
        short_optional: "",
        long_values: &[
            "regexp",
            "file",
            "after-context",
            "before-context",
            "context",
            "max-count",
            "directories",
            "devices",
            "label",
            "include",
            "exclude",
            "exclude-from",
            "exclude-dir",
            "binary-files",
            "color",
            "colour",
            "group-separator",
        ],
        abbreviations: true,
    };
    let parsed = syntax.parse(args);
    let recursive = parsed.iter().any(|a| match a {
        Arg::Short('r' | 'R', _) => true,
        Arg::Short('d', Some(v)) => v.text == "recurse" || v.dynamic,
        Arg::Long(name, value) => {
            syntax.is(name, "recursive")
                || syntax.is(name, "dereference-recursive")
                || (syntax.is(name, "directories") && value.as_ref().is_none_or(|v| v.text == "recurse" || v.dynamic))
        }
        _ => false,
    });
    if !recursive {
        return Vec::new();
    }
    let pattern_given = parsed.iter().any(|a| {
        matches!(a, Arg::Short('e' | 'f', _))
            || matches!(a, Arg::Long(n, _) if syntax.is(n, "regexp") || syntax.is(n, "file"))
    });
    let operands: Vec<Word> = parsed
        .into_iter()
        .filter_map(|a| if let Arg::Operand(w) = a { Some(w) } else { None })
        .skip(usize::from(!pattern_given))
        .collect();
    trees(operands, TreeFilter { hidden: true, ignored: true })
}

/// Recursive searchers that skip hidden and ignored files by default, as ripgrep does (`ag`,
/// `ugrep`, ...; `ack` too, conservatively): every operand is searched, the first included (it
/// may be a directory when the pattern came from an option or a file).
fn searcher(args: &[Word]) -> Vec<Effect> {
    let operands: Vec<Word> = args.iter().filter(|w| !w.text.starts_with('-')).cloned().collect();
    let all = args.iter().any(|w| {
        let t = w.text.as_str();
        t.starts_with("--hidden")
            || t.starts_with("--unrestricted")
            || t == "-u"
            || t == "-uu"
            || t == "-a"
            || t.starts_with("--all")
            || t == "-U"
            || t == "--skip-vcs-ignores"
            || t.starts_with("--no-ignore")
    });
    trees(operands, TreeFilter { hidden: all, ignored: all })
}

/// The trees read under `operands` (the working directory when there are none).
fn trees(operands: Vec<Word>, filter: TreeFilter) -> Vec<Effect> {
    if operands.is_empty() {
        return vec![Effect::ReadsTree(Word::new(".", false), filter)];
    }
    operands.into_iter().map(|w| Effect::ReadsTree(w, filter)).collect()
}

fn rg(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "ABCEefgjMmrTtd",
        short_optional: "",
        long_values: &[
            "pre",
            "hostname-bin",
            "regexp",
            "file",
            "glob",
            "iglob",
            "type",
            "type-not",
            "type-add",
            "type-clear",
            "after-context",
            "before-context",
            "context",
            "encoding",
            "max-count",
            "max-depth",
            "max-filesize",
            "max-columns",
            "replace",
            "threads",
            "pre-glob",
            "path-separator",
            "sort",
            "sortr",
            "colors",
            "color",
            "context-separator",
            "field-context-separator",
            "field-match-separator",
            "hyperlink-format",
            "ignore-file",
            "dfa-size-limit",
            "regex-size-limit",
            "engine",
            "generate",
        ],
        abbreviations: false,
    };
    let mut out = Vec::new();
    let parsed = syntax.parse(args);
    // What ripgrep searches: not hidden or ignored files unless told (`-u` lifts ignore files,
    // `-uu` hidden files too, `-uuu` binary files as well).
    let mut filter = TreeFilter { hidden: false, ignored: false };
    let mut pattern_given = false;
    let mut lists_files = false;
    for arg in &parsed {
        match arg {
            Arg::Short('u', _) => {
                if filter.ignored {
                    filter.hidden = true;
                }
                filter.ignored = true;
            }
            Arg::Short('.', _) => filter.hidden = true,
            Arg::Short('e' | 'f', _) => pattern_given = true,
            Arg::Long(name, _) if name == "regexp" || name == "file" => pattern_given = true,
            Arg::Long(name, _) if name == "hidden" => filter.hidden = true,
            Arg::Long(name, _) if name.starts_with("no-ignore") => filter.ignored = true,
            Arg::Long(name, _) if name == "unrestricted" => {
                if filter.ignored {
                    filter.hidden = true;
                }
                filter.ignored = true;
            }
            Arg::Long(name, _) if matches!(name.as_str(), "files" | "type-list" | "help" | "version" | "generate") => {
                lists_files = true;
            }
            _ => {}
        }
    }
    for arg in parsed.iter().cloned() {
        if let Arg::Long(name, Some(program)) = arg
            && (name == "pre" || name == "hostname-bin")
            && !program.text.is_empty()
        {
            out.push(Effect::Runs(vec![program]));
        }
    }
    if !lists_files {
        let operands: Vec<Word> = parsed
            .into_iter()
            .filter_map(|a| if let Arg::Operand(w) = a { Some(w) } else { None })
            .skip(usize::from(!pattern_given))
            .collect();
        out.extend(trees(operands, filter));
    }
    out
}

/// `find`: `-exec`/`-execdir`/`-ok`/`-okdir` run a command; `-fprint*`/`-fls` write a file;
/// `-delete` deletes under the starting points.
fn find(args: &[Word]) -> Vec<Effect> {
    let mut out = Vec::new();
    let mut starts = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t.starts_with('-') || t == "(" || t == "!" {
            break;
        }
        starts.push(w.clone());
        i += 1;
    }
    if starts.is_empty() {
        starts.push(here());
    }
    while let Some(w) = args.get(i) {
        i += 1;
        match w.text.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let mut command = Vec::new();
                while let Some(word) = args.get(i) {
                    i += 1;
                    if word.text == ";" || (word.text == "+" && command.last().is_some_and(|l: &Word| l.text == "{}")) {
                        break;
                    }
                    // `{}` is replaced by the name of a file found.
                    let mut word = word.clone();
                    word.dynamic |= word.text.contains("{}");
                    command.push(word);
                }
                if !command.is_empty() {
                    out.push(Effect::Runs(command));
                }
            }
            "-fprint" | "-fprint0" | "-fls" => {
                if let Some(file) = args.get(i) {
                    out.push(Effect::Writes(file.clone()));
                }
                i += 1;
            }
            "-fprintf" => {
                if let Some(file) = args.get(i) {
                    out.push(Effect::Writes(file.clone()));
                }
                i += 2;
            }
            "-delete" => out.extend(starts.iter().cloned().map(Effect::WritesUnder)),
            _ => {}
        }
    }
    out
}

fn file(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "efFmP",
        short_optional: "",
        long_values: &["exclude", "exclude-quiet", "files-from", "separator", "magic-file", "parameter"],
        abbreviations: true,
    };
    let compiles = syntax.parse(args).iter().any(|a| match a {
        Arg::Short('C', _) => true,
        Arg::Long(name, _) => syntax.is(name, "compile") && name.len() >= 2,
        _ => false,
    });
    if compiles { vec![Effect::Unclassified("`file -C` writes compiled magic files".into())] } else { Vec::new() }
}

fn curl(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "AbcCdDeEFHKmoPQrtTuUwxXyYz",
        short_optional: "",
        long_values: &[
            "output",
            "dump-header",
            "cookie-jar",
            "trace",
            "trace-ascii",
            "stderr",
            "libcurl",
            "etag-save",
            "output-dir",
            "config",
            "user-agent",
            "cookie",
            "data",
            "data-binary",
            "data-raw",
            "data-urlencode",
            "header",
            "form",
            "request",
            "user",
            "url",
            "referer",
            "proxy",
            "max-time",
            "connect-timeout",
            "write-out",
            "upload-file",
            "range",
            "retry",
            "json",
            "url-query",
            "variable",
            "data-ascii",
            "cert",
            "key",
            "cacert",
            "upload-file",
        ],
        abbreviations: false,
    };
    let mut out = Vec::new();
    let mut dir = None;
    let mut remote_name = false;
    // What curl reads and sends: `@FILE` data and headers, `name=@FILE` / `name=<FILE` form
    // parts, `[name]@FILE` url-encoded data, a cookie file, an upload, certificates, `file://`.
    let read_after = |w: &Word, at: usize| {
        let file = &w.text[at..];
        let file = file.split(';').next().unwrap_or(file);
        (!file.is_empty() && file != "-").then(|| Effect::Reads(part(w, file)))
    };
    // curl expands `{a,b}` and `[1-9]` in URLs itself (unless `-g`): such a path is known
    // only at run time, like one with an expansion (`file://$PWD/.env`).
    let globbing = !args.iter().any(|w| w.text == "-g" || w.text == "--globoff");
    let file_url = |w: &Word| {
        // `file:///p`, `file://localhost/p`, `file:/p` (any case), the path percent-decoded as
        // curl does (`%2Eenv` is `.env`).
        let lower = w.text.get(..5).map(str::to_ascii_lowercase);
        if lower.as_deref() != Some("file:") {
            return None;
        }
        let rest = &w.text[5..];
        let rest = match rest.strip_prefix("//") {
            Some(after) => {
                let host_end = after.find('/').unwrap_or(after.len());
                &after[host_end..]
            }
            None => rest,
        };
        let path = rest.split(['?', '#']).next().unwrap_or(rest);
        let decoded = percent_decode(path);
        let mut file = part(w, &decoded);
        if (globbing && decoded.contains(['{', '['])) || decoded.contains('\0') {
            file.dynamic = true;
        }
        Some(Effect::Reads(file))
    };
    for arg in syntax.parse(args) {
        let (name, value) = match &arg {
            Arg::Short(c, Some(v)) => {
                let long = match c {
                    'd' => "data",
                    'H' => "header",
                    'F' => "form",
                    'b' => "cookie",
                    'T' => "upload-file",
                    'E' => "cert",
                    _ => "",
                };
                (long, Some(v))
            }
            Arg::Long(name, v) => (name.as_str(), v.as_ref()),
            Arg::Operand(v) => ("url", Some(v)),
            Arg::Short(_, None) => ("", None),
        };
        if let Some(v) = value {
            match name {
                "data" | "data-binary" | "data-ascii" | "json" | "header" | "url-query" if v.text.starts_with('@') => {
                    out.extend(read_after(v, 1));
                }
                "data-urlencode" | "url-query" | "variable" => {
                    if let Some(at) = v.text.find('@').filter(|&at| !v.text[..at].contains('=')) {
                        out.extend(read_after(v, at + 1));
                    }
                }
                "form" => {
                    if let Some(eq) = v.text.find('=')
                        && v.text[eq + 1..].starts_with(['@', '<'])
                    {
                        out.extend(read_after(v, eq + 2));
                    }
                }
                "cookie" if !v.text.contains('=') => out.extend(read_after(v, 0)),
                "upload-file" | "cert" | "key" | "cacert" => out.extend(read_after(v, 0)),
                "url" => out.extend(file_url(v)),
                _ => {}
            }
        }
        match arg {
            Arg::Short('o' | 'D' | 'c', Some(file)) => out.push(Effect::Writes(file)),
            Arg::Short('O' | 'J', _) => remote_name = true,
            Arg::Short('K', _) => out.push(Effect::Unclassified("`curl -K` reads options from a file".into())),
            Arg::Long(name, Some(value)) => match name.as_str() {
                "output" | "dump-header" | "cookie-jar" | "trace" | "trace-ascii" | "stderr" | "libcurl"
                | "etag-save" => out.push(Effect::Writes(value)),
                "output-dir" => dir = Some(value),
                "config" => out.push(Effect::Unclassified("`curl --config` reads options from a file".into())),
                _ => {}
            },
            Arg::Long(name, None)
                if matches!(name.as_str(), "remote-name" | "remote-name-all" | "remote-header-name") =>
            {
                remote_name = true;
            }
            _ => {}
        }
    }
    if remote_name {
        out.push(Effect::WritesUnder(dir.unwrap_or_else(here)));
    }
    out
}

fn wget(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "OoaPeiUtTwQlABDIXR",
        short_optional: "",
        long_values: &[
            "output-document",
            "output-file",
            "append-output",
            "directory-prefix",
            "execute",
            "input-file",
            "user-agent",
            "tries",
            "timeout",
            "wait",
            "quota",
            "level",
            "accept",
            "reject",
            "domains",
            "include-directories",
            "exclude-directories",
            "header",
            "user",
            "password",
        ],
        abbreviations: true,
    };
    let mut out = Vec::new();
    let mut document = false;
    let mut dir = None;
    // Whether anything is fetched at all: a URL, or a file of them (`wget --version` fetches
    // nothing, and writes nothing).
    let mut fetches = false;
    for arg in syntax.parse(args) {
        match arg {
            Arg::Operand(_) | Arg::Short('i', _) => fetches = true,
            Arg::Short('O', Some(file)) => {
                document = true;
                if file.text != "-" {
                    out.push(Effect::Writes(file));
                }
            }
            Arg::Short('o' | 'a', Some(file)) => out.push(Effect::Writes(file)),
            Arg::Short('P', Some(d)) => dir = Some(d),
            Arg::Short('e', _) => out.push(Effect::Unclassified("`wget -e` runs wgetrc commands".into())),
            Arg::Long(name, value) => {
                let is = |full: &str| syntax.is(&name, full) && name.len() >= 3;
                match value {
                    Some(file) if is("output-document") => {
                        document = true;
                        if file.text != "-" {
                            out.push(Effect::Writes(file));
                        }
                    }
                    Some(file) if is("output-file") || is("append-output") => out.push(Effect::Writes(file)),
                    Some(d) if is("directory-prefix") => dir = Some(d),
                    _ if is("execute") => {
                        out.push(Effect::Unclassified("`wget --execute` runs wgetrc commands".into()));
                    }
                    None if is("spider") => document = true,
                    Some(_) if is("input-file") => fetches = true,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if !document && fetches {
        out.push(Effect::WritesUnder(dir.unwrap_or_else(here)));
    }
    out
}

fn dd(args: &[Word]) -> Vec<Effect> {
    args.iter().filter_map(|w| w.text.strip_prefix("of=").map(|file| Effect::Writes(part(w, file)))).collect()
}

/// `awk PROGRAM [FILE...]`: `system()`, pipes to and from commands (`print | "cmd"`, `"cmd" |
/// getline`), `@load`/`@include` and program files (`-f`, `-i`, `-l`) run code the line does not
/// show; such a program asks.
fn awk(args: &[Word]) -> Vec<Effect> {
    let mut i = 0;
    let mut program = None;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        i += 1;
        match t {
            "--" => {
                program = args.get(i);
                break;
            }
            "-F" | "-v" => i += 1,
            "-f" | "-E" | "-i" | "-l" | "--file" | "--exec" | "--include" | "--load" => {
                return vec![Effect::Unclassified("`awk` runs a program file or extension".into())];
            }
            "-e" | "--source" => {
                program = args.get(i);
                break;
            }
            _ if t.starts_with("--")
                && ["source", "file", "exec", "include", "load"]
                    .iter()
                    .any(|o| o.starts_with(t[2..].split('=').next().unwrap_or_default())) =>
            {
                return vec![Effect::Unclassified(format!("`awk {t}` runs a program or a program file"))];
            }
            _ if t.starts_with("-W") => {
                return vec![Effect::Unclassified(format!("`awk {t}` is not an option known here"))];
            }
            _ if t.starts_with("-F") || t.starts_with("-v") => {}
            _ if t.starts_with('-') && t.len() > 1 => {
                if t.contains(['f', 'E', 'i', 'l']) && !t.starts_with("--") {
                    return vec![Effect::Unclassified(format!("`awk {t}` is not an option known here"))];
                }
            }
            _ => {
                program = Some(w);
                break;
            }
        }
    }
    match program {
        Some(p) if p.dynamic || ["system", "|", "@load", "@include", "ENVIRON"].iter().any(|k| p.text.contains(k)) => {
            vec![Effect::Unclassified("the `awk` program runs commands or reads the environment".into())]
        }
        // `print > "file"`: the file is written; `print > FILENAME`, `print > f`: a file named
        // at run time, which may be any (a protected one: review 26), asks.
        Some(p) if p.text.contains('>') => awk_outputs(&p.text).unwrap_or_else(|| {
            vec![Effect::Unclassified("the `awk` program writes to a file named at run time".into())]
        }),
        _ => Vec::new(),
    }
}

/// The files an awk program's `print > "F"`/`printf ... >> "F"` write; `None` when a
/// statement with `print` writes to a name that is not a string literal. A `>` in a statement
/// without `print` is a comparison.
fn awk_outputs(program: &str) -> Option<Vec<Effect>> {
    let mut out = Vec::new();
    let bytes = program.as_bytes();
    for (at, _) in program.match_indices('>') {
        if bytes.get(at + 1) == Some(&b'=') || (at > 0 && bytes[at - 1] == b'>') {
            continue;
        }
        let start = program[..at].rfind([';', '{', '}', '\n']).map_or(0, |i| i + 1);
        if !program[start..at].contains("print") {
            continue;
        }
        let rest = program[at + 1..].trim_start_matches('>').trim_start();
        let file = rest.strip_prefix('"').and_then(|r| r.split_once('"')).map(|(f, _)| f)?;
        if file.contains('\\') || file.is_empty() {
            return None;
        }
        out.push(Effect::Writes(Word::literal(file)));
    }
    Some(out)
}

/// The interpreter `program` is (versions aside: `python3.12`, `perl5.36`, `node20`), if it is
/// one whose code [`interpreter`] follows.
pub(super) fn interpreter_family(program: &str) -> Option<&'static str> {
    const FAMILIES: &[&str] = &[
        "python",
        "pypy",
        "perl",
        "ruby",
        "node",
        "nodejs",
        "php",
        "lua",
        "luajit",
        "tclsh",
        "wish",
        "expect",
        "Rscript",
        "R",
        "julia",
        "deno",
        "bun",
        "tsx",
        "ts-node",
        "osascript",
        "pwsh",
        "powershell",
        "guile",
        "racket",
        "sbcl",
        "clisp",
        "elixir",
        "erl",
        "escript",
        "ghci",
        "runghc",
        "groovy",
        "scala",
        "jshell",
        "irb",
        "sqlite3",
        "psql",
        "mysql",
        "mariadb",
        "jrunscript",
        "qjs",
        "gjs",
        "lli",
        "java",
        "jdb",
        "pdb",
        "kotlin",
        "kotlinc",
        "jbang",
        "dotnet-script",
        "raku",
        "rakudo",
        "ocaml",
        "crystal",
        "bb",
    ];
    let trimmed = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    FAMILIES.iter().copied().find(|f| *f == program || (*f == trimmed && !matches!(*f, "R" | "erl")))
}

/// An interpreter runs its script operand (`python3 a.py`, `node -r ./hook.js x.js`: checked as
/// files it runs), a module (`python3 -m a` runs `a.py`), or code no rule can read: given in an
/// option (`-c`, `-e`) or read from standard input (no script operand, or `-`). That code may run
/// any command, so it is [`Effect::RunsCode`].
fn interpreter(program: &str, args: &[Word]) -> Vec<Effect> {
    let family = interpreter_family(program).unwrap_or(program);
    let inline = |option: &str| {
        Effect::RunsCode(format!("`{program} {option}` runs code given on the command line, which no rule can read"))
    };
    let stdin = || Effect::RunsCode(format!("`{program}` runs code read from its input, which no rule can read"));
    // Only as the sole argument: `python3 -c CODE --help` runs CODE.
    if let [only] = args
        && matches!(only.text.as_str(), "--version" | "-V" | "--help" | "-h" | "-version" | "-v")
    {
        return Vec::new();
    }
    // Options with a value, and the options whose value (or the rest) is code.
    let (values, code): (&[&str], &[&str]) = match family {
        "python" | "pypy" => (&["-W", "-X", "-Q"], &["-c"]),
        "perl" => (&["-I", "-M", "-m", "-x"], &["-e", "-E"]),
        "ruby" | "irb" => (&["-I", "-C", "-E", "-F", "-r"], &["-e"]),
        "node" | "nodejs" | "tsx" | "ts-node" | "bun" => (
            &["--title", "--input-type", "--conditions", "-C", "--cwd", "--env-file"],
            &["-e", "--eval", "-p", "--print", "eval"],
        ),
        "deno" => (&["--config", "-c", "--import-map", "--env-file"], &["eval"]),
        "php" => (&["-d", "-c", "-z"], &["-r", "-B", "-R", "-F", "-E", "-a"]),
        "lua" | "luajit" => (&["-l"], &["-e"]),
        "Rscript" | "R" => (&[], &["-e", "--expr"]),
        "julia" => (&["-L", "--project", "-J", "-t", "-p"], &["-e", "-E", "--eval", "--print"]),
        "osascript" => (&["-l"], &["-e"]),
        "pwsh" | "powershell" => (&[], &["-c", "-command", "-Command", "-e", "-EncodedCommand", "-ec"]),
        "expect" | "tclsh" | "wish" => (&[], &["-c"]),
        "guile" => (&["-L", "-l"], &["-c", "-e"]),
        "racket" => (&["-l", "-t", "-r"], &["-e", "--eval"]),
        "sbcl" | "clisp" => (&["--load", "-i"], &["--eval", "-x"]),
        "elixir" => (&["-r", "--erl"], &["-e", "--eval"]),
        "erl" => (&[], &["-eval", "-s", "-run"]),
        "ghci" | "runghc" => (&[], &["-e"]),
        "groovy" | "scala" | "jrunscript" | "qjs" | "gjs" => (&[], &["-e", "-c"]),
        // Database shells: their own commands run programs (`.shell`, `\!`, `system`).
        "sqlite3" | "psql" | "mysql" | "mariadb" => return database_shell(program, args),
        // `java X.java` runs a source file, `java -jar x.jar` a jar, `java X` a class.
        "java" => (&["-cp", "-classpath", "--class-path", "-p", "--module-path", "--add-modules", "-splash"], &[]),
        // Debuggers run the commands of their input (`!import os`, `run`).
        "jdb" | "pdb" => {
            return vec![Effect::RunsCode(format!(
                "`{program}` runs debugger commands read from its input, which no rule can read"
            ))];
        }
        _ => (&[], &["-e", "-c", "eval"]),
    };
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        i += 1;
        // `-c CODE`, and glued forms (`-cCODE`, `-pe CODE`, `--eval=CODE`).
        let short_code = t.len() > 2
            && t.starts_with('-')
            && !t.starts_with("--")
            && code.iter().any(|c| c.len() == 2 && t[1..].contains(&c[1..]));
        let long_code = t.split_once('=').is_some_and(|(name, _)| code.contains(&name));
        if code.contains(&t) || short_code || long_code {
            out.push(inline(t));
            return out;
        }
        // Options that run code of their own or read it from the input: perl's `-M`/`-m` (pasted
        // in as `use ...;`) and `-d`, python's and node's `-i` (the input after the script).
        let runs_code = match family {
            // `-x` (any cluster: `-wxDIR`) runs code found inside a file that is not a script.
            "perl" => {
                t.starts_with("-M")
                    || t.starts_with("-m")
                    || t.starts_with("-d")
                    || (t.starts_with('-')
                        && !t.starts_with("--")
                        && t[1..].chars().take_while(|c| !"IMmlC0DdFi".contains(*c)).any(|c| c == 'x'))
            }
            "python" | "pypy" => {
                t.len() > 1
                    && t.starts_with('-')
                    && t[1..].bytes().all(|b| b"bBdEhiIOPqsSuvVx".contains(&b))
                    && t[1..].contains('i')
            }
            "node" | "nodejs" | "bun" | "deno" => matches!(t, "-i" | "--interactive"),
            _ => false,
        };
        if runs_code {
            out.push(Effect::RunsCode(format!("`{program} {t}` runs code no rule can read")));
            return out;
        }
        match (family, t) {
            ("python" | "pypy", "-m") => {
                if let Some(module) = args.get(i) {
                    // The module's file, when it is one of the worktree's (written by this line?).
                    out.push(Effect::Executes(Word::like(module, format!("{}.py", module.text.replace('.', "/")))));
                    if !SCRIPT_MODULES.contains(&module.text.as_str()) {
                        // `timeit`, `cProfile`, `code`, `pdb`, ... run code given as arguments or
                        // on the input; a module not known to run only files is taken as one.
                        out.push(Effect::RunsCode(format!(
                            "`{program} -m {}` runs a module that may run code no rule can read",
                            module.text
                        )));
                    }
                }
                return out;
            }
            ("node" | "nodejs" | "tsx" | "ts-node" | "bun" | "deno", "-r" | "--require" | "--import" | "--loader") => {
                out.extend(args.get(i).cloned().map(|w| loaded(program, w)));
                i += 1;
                continue;
            }
            ("node" | "nodejs" | "tsx" | "ts-node" | "bun" | "deno", _)
                if ["--require=", "--import=", "--loader=", "--experimental-loader="]
                    .iter()
                    .any(|p| t.starts_with(p)) =>
            {
                let value = t.split_once('=').map_or("", |(_, v)| v);
                out.push(loaded(program, Word::like(w, value.to_string())));
                continue;
            }
            ("deno" | "bun", "run" | "test" | "x") => continue,
            ("erl", _) => continue,
            _ => {}
        }
        if values.contains(&t) {
            i += 1;
            continue;
        }
        if t == "--" {
            match args.get(i) {
                Some(file) if file.text != "-" => out.push(Effect::Executes(file.clone())),
                _ => out.push(stdin()),
            }
            return out;
        }
        if t == "-" || STDIN_FILES.contains(&t) {
            out.push(stdin());
            return out;
        }
        if t.starts_with('-') {
            continue;
        }
        out.push(Effect::Executes(w.clone()));
        return out;
    }
    if family != "erl" {
        out.push(stdin());
    }
    out
}

/// Python modules that run the files they are given (tests, builds, linters), not code in
/// their arguments or input: `python3 -m NAME` of one of these is a script-file run; any other
/// module may run code no rule can read (`timeit`, `cProfile`, `code`, `pdb`, `runpy`, ...).
const SCRIPT_MODULES: &[&str] = &[
    "pytest",
    "unittest",
    "venv",
    "pip",
    "build",
    "twine",
    "mypy",
    "black",
    "ruff",
    "flake8",
    "pylint",
    "isort",
    "coverage",
    "json.tool",
    "http.server",
    "compileall",
    "py_compile",
    "tox",
    "nox",
    "hatch",
    "poetry",
    "uv",
    "pyright",
    "bandit",
    "pydoc",
    "zipfile",
    "tarfile",
    "ensurepip",
    "pip._internal",
    "maturin",
    "sphinx",
];

/// Names of the standard input as a file: a "script" there is code on the input.
const STDIN_FILES: &[&str] = &["/dev/stdin", "/proc/self/fd/0", "/dev/fd/0"];

/// A module an interpreter loads before the script (`node --import X`): a `data:` URL is code in
/// the argument itself.
fn loaded(program: &str, module: Word) -> Effect {
    if module.dynamic || module.text.starts_with("data:") {
        Effect::RunsCode(format!("`{program}` loads code given on the command line, which no rule can read"))
    } else {
        Effect::Executes(module)
    }
}

/// `sqlite3`, `psql`, `mysql`: their own commands run programs (`.shell`, `.system`, `\!`,
/// `system`), in arguments or in what they read from their input.
fn database_shell(program: &str, args: &[Word]) -> Vec<Effect> {
    // Any dot-command (sqlite3 abbreviates them: `.sh`, and `.output`/`.once`/`.read`/`.import`
    // take `|CMD`), a pipe, psql's `\!` and mysql's `system`.
    let runs = |t: &str| {
        t.lines().any(|l| l.trim_start().starts_with('.'))
            || t.contains('|')
            || t.contains("\\!")
            || t.to_ascii_lowercase().contains("system")
    };
    let mut out = Vec::new();
    // sqlite3's first operand is the database file (`./app.db` is no dot-command).
    // (Past the values of its options: `-cmd SQL` is no database.)
    let database = if program == "sqlite3" {
        let mut i = 0;
        loop {
            match args.get(i) {
                None => break None,
                Some(w) if SQLITE_VALUES.contains(&w.text.trim_start_matches('-')) && w.text.starts_with('-') => i += 2,
                Some(w) if w.text.starts_with('-') => i += 1,
                Some(_) => break Some(i),
            }
        }
    } else {
        None
    };
    let commands = args.iter().enumerate().filter(|(i, _)| Some(*i) != database).map(|(_, w)| w);
    if commands.clone().any(|w| w.dynamic || runs(&w.text)) {
        out.push(Effect::RunsCode(format!("`{program}` runs commands of its own, which may run programs")));
        return out;
    }
    // What else the text given to it may do: sqlite3's SQL functions and statements that run an
    // editor, load extensions, read or write files; psql's and mysql's meta-commands (`\copy ...
    // to program`, `\e`, `\w`, `\setenv`, `pager`, `tee`, `source`) and `COPY ... PROGRAM`.
    if program == "sqlite3"
        && args.iter().any(|w| w.text.starts_with("-A") || w.text.trim_start_matches('-') == "archive")
    {
        out.push(Effect::Unclassified("`sqlite3 -A` reads and writes files of an archive".into()));
        return out;
    }
    let reaches = |t: &str| match program {
        "sqlite3" => sqlite_reaches_outside(t),
        "psql" => meta_command(t, &["program", "copy"]),
        _ => meta_command(t, &["pager", "tee", "system", "source", "edit", "outfile", "dumpfile", "load", "load_file"]),
    };
    if let Some(why) = commands.clone().find_map(|w| reaches(&w.text)) {
        out.push(Effect::Unclassified(format!("`{program}`: {why}")));
        return out;
    }
    let sql_argument = match program {
        "sqlite3" => args.iter().filter(|w| !w.text.starts_with('-')).count() >= 2,
        _ => args.iter().any(|w| {
            matches!(w.text.as_str(), "-c" | "--command" | "-e" | "--execute")
                || w.text.starts_with("--command=")
                || w.text.starts_with("--execute=")
        }),
    };
    let script_file = args.iter().any(|w| matches!(w.text.as_str(), "-f" | "--file" | "-init"));
    if !sql_argument || script_file {
        out.push(Effect::RunsCode(format!(
            "`{program}` runs commands read from its input or a file, which may run programs"
        )));
    }
    out
}

/// sqlite3's options that take a value.
const SQLITE_VALUES: &[&str] = &[
    "cmd",
    "init",
    "separator",
    "newline",
    "nullvalue",
    "vfs",
    "mmap",
    "lookaside",
    "pagecache",
    "heap",
    "maxsize",
    "escape",
];

/// A meta-command (`\X`) or one of `words` (as a word, any case) in text given to a database
/// client.
fn meta_command(text: &str, words: &[&str]) -> Option<String> {
    if text.contains('\\') {
        return Some("its meta-commands can run programs, editors or write files".into());
    }
    let lower = text.to_ascii_lowercase();
    let found = lower.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).find(|t| words.contains(t))?;
    Some(format!("`{found}` can run programs, read or write files"))
}

/// SQL functions sqlite3 runs that only compute values (no files, no editor, no extensions).
const SQLITE_FUNCTIONS: &[&str] = &[
    "abs",
    "avg",
    "changes",
    "char",
    "coalesce",
    "count",
    "date",
    "datetime",
    "glob",
    "group_concat",
    "hex",
    "ifnull",
    "iif",
    "instr",
    "julianday",
    "last_insert_rowid",
    "length",
    "like",
    "likelihood",
    "likely",
    "unlikely",
    "lower",
    "ltrim",
    "max",
    "min",
    "nullif",
    "printf",
    "format",
    "quote",
    "random",
    "randomblob",
    "replace",
    "round",
    "rtrim",
    "sign",
    "soundex",
    "sqlite_version",
    "strftime",
    "substr",
    "substring",
    "sum",
    "time",
    "timediff",
    "total",
    "total_changes",
    "trim",
    "typeof",
    "unicode",
    "unixepoch",
    "upper",
    "zeroblob",
    "concat",
    "concat_ws",
    "octet_length",
    "string_agg",
    "json",
    "json_array",
    "json_array_length",
    "json_extract",
    "json_object",
    "json_group_array",
    "json_group_object",
    "json_each",
    "json_tree",
    "json_type",
    "json_valid",
    "json_quote",
    "row_number",
    "rank",
    "dense_rank",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
    "ntile",
    "cume_dist",
    "percent_rank",
    "ceil",
    "ceiling",
    "floor",
    "ln",
    "log",
    "log10",
    "log2",
    "exp",
    "pow",
    "power",
    "sqrt",
    "mod",
    "pi",
    "cast",
    "pragma_table_info",
    "pragma_table_list",
    "pragma_index_list",
    "pragma_foreign_key_list",
    "varchar",
    "nvarchar",
    "decimal",
    "numeric",
    "character",
    "int",
    "integer",
    "float",
    "real",
    "double",
    "text",
    "blob",
    "bigint",
    "boolean",
];

/// SQL keywords a `(` may follow.
const SQL_KEYWORDS: &[&str] = &[
    "in",
    "values",
    "exists",
    "as",
    "over",
    "using",
    "on",
    "not",
    "and",
    "or",
    "where",
    "from",
    "select",
    "filter",
    "when",
    "then",
    "else",
    "key",
    "check",
    "unique",
    "window",
    "partition",
    "join",
    "like",
    "between",
    "is",
    "set",
    "returning",
    "do",
    "recursive",
    "case",
    "default",
    "primary",
    "foreign",
    "constraint",
    "generated",
    "always",
    "by",
    "all",
    "distinct",
    "union",
    "except",
    "intersect",
    "having",
    "limit",
    "offset",
    "return",
    "end",
];

/// Keywords after which a name followed by `(` is a table's, not a function's (`insert into
/// t(a)`, `create table t(a)`).
const SQL_TABLE_INTROS: &[&str] = &["table", "into", "on", "references", "view", "exists", "index", "with", "update"];

/// Why SQL given to sqlite3 may reach outside the database: a function not known to only
/// compute values (`edit`, `writefile`, `readfile`, `load_extension`, `fts3_tokenizer`, any
/// other), or a statement that opens or writes another file (`ATTACH`, `VACUUM INTO`).
fn sqlite_reaches_outside(sql: &str) -> Option<String> {
    // Tokens, lower-cased; string literals dropped, comments as blanks, quoted names as names.
    let mut tokens: Vec<String> = Vec::new();
    let chars: Vec<char> = sql.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            tokens.push("'".into());
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if matches!(c, '"' | '`' | '[') {
            let close = if c == '[' { ']' } else { c };
            let start = i + 1;
            i += 1;
            while i < chars.len() && chars[i] != close {
                i += 1;
            }
            tokens.push(chars[start..i.min(chars.len())].iter().collect::<String>().to_ascii_lowercase());
            i += 1;
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                i += 1;
            }
            tokens.push(chars[start..i].iter().collect::<String>().to_ascii_lowercase());
        } else {
            if !c.is_whitespace() {
                tokens.push(c.to_string());
            }
            i += 1;
        }
    }
    for (at, token) in tokens.iter().enumerate() {
        if matches!(token.as_str(), "attach" | "vacuum" | "load_extension") {
            return Some(format!("`{token}` opens or writes another file"));
        }
        // Punctuation and string literals are one-character tokens of no name.
        let punctuation = token.chars().count() == 1 && !token.chars().all(|c| c.is_alphanumeric() || c == '_');
        let known = SQLITE_FUNCTIONS.contains(&token.as_str()) || SQL_KEYWORDS.contains(&token.as_str());
        let table = at > 0 && SQL_TABLE_INTROS.contains(&tokens[at - 1].as_str());
        if tokens.get(at + 1).is_some_and(|n| n == "(") && !punctuation && !known && !table {
            return Some(format!("the SQL function `{token}` may run an editor, load code or read or write files"));
        }
    }
    None
}

/// `make`: `--eval` text and `VAR=value` words with `$` are makefile code, which may run
/// commands (`$(shell ...)`); the makefile it reads is run like a script.
fn make(args: &[Word]) -> Vec<Effect> {
    let mut out = Vec::new();
    let mut dir: Option<Word> = None;
    let mut files = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        i += 1;
        let long = t.strip_prefix("--").map(|l| l.split_once('=').map_or((l, None), |(n, v)| (n, Some(v))));
        match long {
            Some((name, value)) if !name.is_empty() && "eval".starts_with(name) => {
                let _ = value;
                out.push(Effect::Unclassified("`make --eval` runs makefile code, which may run commands".into()));
            }
            Some((name, value)) if !name.is_empty() && (["file", "makefile"].iter().any(|o| o.starts_with(name))) => {
                let file = match value {
                    Some(v) => Some(part(w, v)),
                    None => {
                        i += 1;
                        args.get(i - 1).cloned()
                    }
                };
                files.extend(file);
            }
            Some((name, value)) if !name.is_empty() && "directory".starts_with(name) => {
                dir = match value {
                    Some(v) => Some(part(w, v)),
                    None => {
                        i += 1;
                        args.get(i - 1).cloned()
                    }
                };
            }
            Some(_) => {}
            None if t.starts_with('-') && t.len() > 1 => {
                // Short options; `E`, `f`, `C`, `I`, `j`, `l`, `o`, `W` take values.
                for (at, c) in t[1..].char_indices() {
                    let rest = &t[1 + at + c.len_utf8()..];
                    if "EfCIjloWO".contains(c) {
                        let value = if rest.is_empty() && !"jlO".contains(c) {
                            i += 1;
                            args.get(i - 1).cloned()
                        } else {
                            Some(part(w, rest))
                        };
                        match c {
                            'E' => out.push(Effect::Unclassified(
                                "`make --eval` runs makefile code, which may run commands".into(),
                            )),
                            'f' => files.extend(value),
                            'C' => dir = value,
                            _ => {}
                        }
                        break;
                    }
                }
            }
            None if t.contains('=') && (w.dynamic || t.contains(['$', '`'])) => {
                out.push(Effect::Unclassified(format!(
                    "`make {t}` sets a variable to makefile code, which may run commands"
                )));
            }
            None => {}
        }
    }
    if files.is_empty() {
        files = ["GNUmakefile", "makefile", "Makefile"].map(Word::literal).to_vec();
    }
    for file in files {
        let file = under(dir.as_ref(), &file);
        // `-f -` and files under /dev or /proc (`/dev/stdin`, `/proc/self/fd/0`) are code the
        // command line does not show.
        if file.text == "-" || ["/dev/", "/proc/"].iter().any(|p| file.text.starts_with(p)) || file.text == "/dev" {
            out.push(Effect::Unclassified(format!(
                "`make` reads its makefile from `{}`, which the command does not show",
                file.text
            )));
            continue;
        }
        out.push(Effect::Executes(file));
    }
    out
}

/// The operands of `args` under `syntax`, and its options.
fn split(syntax: &Syntax, args: &[Word]) -> (Vec<Arg>, Vec<Word>) {
    let mut options = Vec::new();
    let mut operands = Vec::new();
    for arg in syntax.parse(args) {
        match arg {
            Arg::Operand(w) => operands.push(w),
            other => options.push(other),
        }
    }
    (options, operands)
}

fn has(options: &[Arg], short: char, long: &[&str]) -> bool {
    options.iter().any(|a| match a {
        Arg::Short(c, _) => *c == short,
        Arg::Long(name, _) => long.iter().any(|l| name == l || (name.len() >= 3 && l.starts_with(name.as_str()))),
        Arg::Operand(_) => false,
    })
}

fn value_of(options: &[Arg], short: char, long: &str) -> Option<Word> {
    options.iter().rev().find_map(|a| match a {
        Arg::Short(c, Some(v)) if *c == short => Some(v.clone()),
        Arg::Long(name, Some(v)) if name == long || (name.len() >= 3 && long.starts_with(name.as_str())) => {
            Some(v.clone())
        }
        _ => None,
    })
}

/// `cp`, `mv`, `install`, `ln`: the destination is written (and everything under it when it may
/// be a directory); `mv` also removes its sources.
fn copy(program: &str, args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: match program {
            "install" => "gmoSt",
            _ => "St",
        },
        short_optional: "",
        long_values: &["suffix", "target-directory", "group", "mode", "owner", "strip-program"],
        abbreviations: true,
    };
    let (options, mut operands) = split(&syntax, args);
    let mut out = Vec::new();
    if let Some(program) = value_of(&options, '\0', "strip-program") {
        out.push(Effect::Runs(vec![program]));
    }
    if program == "install" && has(&options, 'd', &["directory"]) {
        return operands.into_iter().map(Effect::Writes).chain(out).collect();
    }
    let recursive = has(&options, 'r', &["recursive"]) || has(&options, 'R', &[]) || has(&options, 'a', &["archive"]);
    let (dest, sources): (Option<Word>, Vec<Word>) = match value_of(&options, 't', "target-directory") {
        Some(dir) => (Some(dir), operands),
        None if program == "ln" && operands.len() == 1 => {
            let name = operands[0].text.trim_end_matches('/').rsplit('/').next().unwrap_or_default().to_string();
            (Some(part(&operands[0], &name)), vec![operands[0].clone()])
        }
        None => {
            let dest = if operands.len() >= 2 { operands.pop() } else { None };
            (dest, operands)
        }
    };
    if let Some(dest) = dest.clone() {
        let into_dir =
            sources.len() > 1 || recursive || dest.text.ends_with('/') || has(&options, 't', &["target-directory"]);
        if into_dir {
            out.push(Effect::WritesUnder(dest.clone()));
        }
        out.push(Effect::Writes(dest));
    }
    // A link (`ln -s secrets s`, `ln .env x`, `cp -s`/`-l`) or a copy makes what it names
    // readable under another name: each source, and everything under it, is read. A symbolic
    // link's relative target is relative to the link's directory.
    let all = TreeFilter { hidden: true, ignored: true };
    let symbolic = has(&options, 's', &["symbolic", "symbolic-link"]);
    for source in &sources {
        // (A source named at run time may be any file: `Reads` makes that the worktree.)
        out.push(if source.dynamic { Effect::Reads(source.clone()) } else { Effect::ReadsTree(source.clone(), all) });
        if symbolic
            && !source.text.starts_with('/')
            && let Some((dir, _)) = dest.as_ref().and_then(|d| d.text.trim_end_matches('/').rsplit_once('/'))
        {
            out.push(Effect::ReadsTree(part(source, &format!("{dir}/{}", source.text)), all));
        }
    }
    if program == "mv" {
        out.extend(sources.into_iter().map(Effect::Writes));
    }
    out
}

/// `touch`, `truncate`, `rm`, `rmdir`, `shred`, `unlink`, `mkdir`, `tee`: every operand is
/// written (deleting is writing); `rm -r` writes everything under its operands.
fn writes_operands(program: &str, args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: match program {
            "touch" => "dtr",
            "truncate" => "rs",
            "shred" => "ns",
            "mkdir" => "m",
            _ => "",
        },
        short_optional: "",
        long_values: match program {
            "touch" => &["date", "reference", "time"],
            "truncate" => &["reference", "size"],
            "shred" => &["iterations", "size", "random-source"],
            "mkdir" => &["mode"],
            _ => &[],
        },
        abbreviations: true,
    };
    let (options, operands) = split(&syntax, args);
    let recursive = program == "rm" && (has(&options, 'r', &["recursive"]) || has(&options, 'R', &[]));
    let deletes =
        matches!(program, "rm" | "rmdir" | "unlink") || (program == "shred" && has(&options, 'u', &["remove"]));
    let mut out = Vec::new();
    for file in operands {
        if program == "tee" && file.text == "-" {
            continue;
        }
        out.push(if deletes { Effect::Deletes(file, recursive) } else { Effect::Writes(file) });
    }
    out
}

/// `chmod MODE FILE...`, `chown OWNER FILE...`, `chgrp GROUP FILE...` (no MODE with
/// `--reference`); a mode may look like an option (`chmod -x f`).
fn chmod(program: &str, args: &[Word]) -> Vec<Effect> {
    let mut operands = Vec::new();
    let mut reference = false;
    let mut recursive = false;
    let mut options_done = false;
    for w in args {
        let t = w.text.as_str();
        if options_done || !t.starts_with('-') || t == "-" {
            operands.push(w.clone());
            continue;
        }
        match t {
            "--" => options_done = true,
            "-R" | "--recursive" => recursive = true,
            _ if t.starts_with("--reference") => reference = true,
            _ if t.starts_with("--") => {}
            _ if program == "chmod" && t[1..].chars().all(|c| "rwxXstugoa".contains(c)) => operands.push(w.clone()),
            _ => recursive |= t.contains('R'),
        }
    }
    let files = if reference { &operands[..] } else { operands.get(1..).unwrap_or_default() };
    let mut out = Vec::new();
    for file in files {
        if recursive {
            out.push(Effect::WritesUnder(file.clone()));
        }
        out.push(Effect::Writes(file.clone()));
    }
    out
}

/// `rsync` and `scp`: the last operand is written when it is local; `rsync -e` / `scp -S` run
/// the given program.
fn remote_copy(program: &str, args: &[Word]) -> Vec<Effect> {
    let syntax = if program == "scp" {
        Syntax { short_values: "cFiJlPoSDX", short_optional: "", long_values: &[], abbreviations: false }
    } else {
        Syntax {
            short_values: "eBfMT",
            short_optional: "",
            long_values: &[
                "rsh",
                "rsync-path",
                "backup-dir",
                "suffix",
                "chmod",
                "block-size",
                "max-delete",
                "max-size",
                "min-size",
                "partial-dir",
                "usermap",
                "groupmap",
                "chown",
                "timeout",
                "contimeout",
                "temp-dir",
                "compare-dest",
                "copy-dest",
                "link-dest",
                "compress-choice",
                "compress-level",
                "skip-compress",
                "filter",
                "exclude",
                "exclude-from",
                "include",
                "include-from",
                "files-from",
                "address",
                "port",
                "sockopts",
                "out-format",
                "log-file",
                "log-file-format",
                "password-file",
                "bwlimit",
                "write-batch",
                "only-write-batch",
                "read-batch",
                "protocol",
                "iconv",
                "checksum-choice",
                "remote-option",
                "info",
                "debug",
            ],
            abbreviations: false,
        }
    };
    let (options, mut operands) = split(&syntax, args);
    let mut out = Vec::new();
    for option in &options {
        let runs = match (program, option) {
            ("rsync", Arg::Short('e', _)) | ("scp", Arg::Short('S', _)) => true,
            ("rsync", Arg::Long(name, _)) => name == "rsh" || name == "rsync-path",
            ("scp", Arg::Short('o', Some(v))) => v.text.to_ascii_lowercase().starts_with("proxycommand"),
            ("scp", Arg::Short('F', _)) => true,
            _ => false,
        };
        if runs {
            out.push(Effect::Unclassified(format!("an option of `{program}` runs a program")));
        }
        if let Arg::Long(name, Some(file)) = option
            && matches!(name.as_str(), "log-file" | "write-batch" | "only-write-batch")
        {
            out.push(Effect::Writes(file.clone()));
        }
    }
    let local =
        |w: &Word| !w.text.starts_with("rsync://") && w.text.find(':').is_none_or(|c| w.text[..c].contains('/'));
    if operands.len() >= 2
        && let Some(dest) = operands.pop()
        && local(&dest)
    {
        out.push(Effect::WritesUnder(dest.clone()));
        out.push(Effect::Writes(dest));
    }
    if program == "rsync" && has(&options, '\0', &["remove-source-files"]) {
        out.extend(operands.into_iter().filter(|w| local(w)).map(Effect::Writes));
    }
    out
}

/// `patch [OPTIONS] [ORIGFILE [PATCHFILE]]`: writes ORIGFILE, `-o OUTFILE`, or the files the
/// patch names (under `-d DIR`).
fn patch(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "BDdFgiopryVzYM",
        short_optional: "",
        long_values: &[
            "prefix",
            "ifdef",
            "directory",
            "fuzz",
            "get",
            "input",
            "output",
            "strip",
            "reject-file",
            "version-control",
            "suffix",
            "basename-prefix",
            "quoting-style",
            "merge",
        ],
        abbreviations: true,
    };
    let (options, operands) = split(&syntax, args);
    if has(&options, '\0', &["dry-run"]) {
        return Vec::new();
    }
    let dir = value_of(&options, 'd', "directory");
    let mut out = Vec::new();
    if let Some(file) = value_of(&options, 'r', "reject-file") {
        out.push(Effect::Writes(under(dir.as_ref(), &file)));
    }
    match (value_of(&options, 'o', "output"), operands.first()) {
        (Some(output), _) if output.text != "-" => out.push(Effect::Writes(under(dir.as_ref(), &output))),
        (Some(_), _) => {}
        (None, Some(original)) => out.push(Effect::Writes(under(dir.as_ref(), original))),
        (None, None) => out.push(Effect::WritesUnder(dir.unwrap_or_else(here))),
    }
    out
}

/// `tar`: extracting writes under `-C DIR` (or here); creating writes the archive; options that
/// run programs (`--to-command`, `-I`, `--use-compress-program`, `--checkpoint-action=exec`,
/// `--info-script`, `--rsh-command`) and `-P` (absolute names) cannot be checked.
fn tar(args: &[Word]) -> Vec<Effect> {
    const VALUE_LETTERS: &str = "bCfFgHIKLNTVX";
    let mut out = Vec::new();
    let mut words: Vec<Word> = args.to_vec();
    // Old style: the first word is a cluster of letters whose values follow in order.
    if let Some(first) = words.first()
        && !first.text.starts_with('-')
        && !first.text.is_empty()
        && first.text.chars().all(|c| c.is_ascii_alphabetic())
    {
        let letters = first.text.clone();
        let mut expanded = Vec::new();
        let mut values = words[1..].iter().cloned();
        for c in letters.chars() {
            expanded.push(Word::literal(format!("-{c}")));
            if VALUE_LETTERS.contains(c) {
                expanded.extend(values.next());
            }
        }
        expanded.extend(values);
        words = expanded;
    }
    let syntax = Syntax {
        short_values: VALUE_LETTERS,
        short_optional: "",
        long_values: &[
            "directory",
            "file",
            "files-from",
            "exclude-from",
            "use-compress-program",
            "to-command",
            "info-script",
            "new-volume-script",
            "rsh-command",
            "checkpoint-action",
            "format",
            "label",
            "newer",
            "after-date",
            "owner",
            "group",
            "mode",
            "mtime",
            "transform",
            "xform",
            "exclude",
            "strip-components",
            "blocking-factor",
            "record-size",
            "tape-length",
            "volno-file",
            "index-file",
        ],
        abbreviations: true,
    };
    let (options, operands) = split(&syntax, &words);
    let runs = options.iter().any(|a| match a {
        Arg::Short('I' | 'F' | 'P', _) => true,
        Arg::Long(name, value) => {
            // Any abbreviation getopt_long could take for one of these (an ambiguous one fails).
            let name = name.as_str();
            !name.is_empty()
                && name != "checkpoint"
                && ([
                    "use-compress-program",
                    "to-command",
                    "info-script",
                    "new-volume-script",
                    "rsh-command",
                    "absolute-names",
                ]
                .iter()
                .any(|l| l.starts_with(name))
                    || ("checkpoint-action".starts_with(name)
                        && value.as_ref().is_none_or(|v| v.dynamic || v.text.contains("exec"))))
        }
        _ => false,
    });
    if runs {
        out.push(Effect::Unclassified("an option of `tar` runs a program or writes outside its directory".into()));
    }
    let extract = has(&options, 'x', &["extract", "get"]);
    let create = has(&options, 'c', &["create"])
        || has(&options, 'r', &["append"])
        || has(&options, 'u', &["update"])
        || has(&options, 'A', &["catenate", "concatenate"])
        || has(&options, '\0', &["delete"]);
    let file = value_of(&options, 'f', "file");
    if extract && !has(&options, 'O', &["to-stdout"]) {
        out.push(Effect::WritesUnder(value_of(&options, 'C', "directory").unwrap_or_else(here)));
    }
    if create
        && let Some(file) = &file
        && file.text != "-"
    {
        out.push(Effect::Writes(under(value_of(&options, 'C', "directory").as_ref(), file)));
    }
    // What goes into the archive is shown to whoever reads it (`tar cf - . | tar xOf -`): each
    // operand is read, a directory with everything under it; names listed in a file
    // (`-T`/`--files-from`) may be any file.
    if create && (value_of(&options, 'T', "files-from").is_some() || has(&options, 'T', &["files-from"])) {
        out.push(Effect::Reads(Word::new("the files `tar -T` lists", true)));
    }
    if create {
        let dir = value_of(&options, 'C', "directory");
        let all = TreeFilter { hidden: true, ignored: true };
        let operands = if file.is_none() && !words.iter().any(|w| w.text.starts_with('-')) {
            // Old-style `tar cf x.tar dir`: the first operand after the letters is the archive.
            operands.into_iter().skip(1).collect()
        } else {
            operands
        };
        out.extend(operands.into_iter().map(|w| Effect::ReadsTree(under(dir.as_ref(), &w), all)));
    }
    out
}

/// `unzip ARCHIVE [FILES] [-x FILES] [-d DIR]`: writes under DIR (or here) unless it only lists,
/// tests or prints.
fn unzip(args: &[Word]) -> Vec<Effect> {
    let mut dir = None;
    let mut writes = true;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        if t.starts_with('-') && t.len() > 1 && !t.starts_with("--") {
            if t.contains(':') {
                return vec![Effect::Unclassified("`unzip -:` writes outside its directory".into())];
            }
            if t[1..].chars().any(|c| "lptvzZc".contains(c)) {
                writes = false;
            }
            if t[1..].contains('d') {
                dir = args.get(i).cloned();
                i += 1;
            }
        }
    }
    if writes { vec![Effect::WritesUnder(dir.unwrap_or_else(here))] } else { Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(Word::literal).collect()
    }

    fn run(line: &str) -> Vec<Effect> {
        let w = words(line);
        effects(&w[0].text, &w[1..])
    }

    fn writes(line: &str) -> Vec<String> {
        run(line)
            .into_iter()
            .filter_map(|e| match e {
                Effect::Writes(w) => Some(w.text),
                Effect::WritesUnder(w) => Some(format!("{}/*", w.text)),
                Effect::Deletes(w, _) => Some(w.text),
                _ => None,
            })
            .collect()
    }

    fn runs(line: &str) -> Vec<String> {
        run(line)
            .into_iter()
            .filter_map(|e| match e {
                Effect::Runs(ws) => Some(ws.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ")),
                Effect::RunsLine(l) => Some(l),
                _ => None,
            })
            .collect()
    }

    fn unclassified(line: &str) -> bool {
        run(line).iter().any(|e| matches!(e, Effect::Unclassified(_)))
    }

    #[test]
    fn getopt_clusters_attached_values_and_abbreviations() {
        let s = Syntax { short_values: "o", short_optional: "i", long_values: &["output"], abbreviations: true };
        let parsed = s.parse(&words("-nrofile -i.bak --outp x -- -o"));
        let w = |t: &str| Word::literal(t);
        assert_eq!(
            parsed,
            vec![
                Arg::Short('n', None),
                Arg::Short('r', None),
                Arg::Short('o', Some(w("file"))),
                Arg::Short('i', Some(w(".bak"))),
                Arg::Long("outp".into(), Some(w("x"))),
                Arg::Operand(w("-o")),
            ]
        );
    }

    #[test]
    fn git_output_options_are_writes() {
        assert_eq!(writes("git diff --output=a.txt HEAD~0"), ["a.txt"]);
        assert_eq!(writes("git log --output F -1"), ["F"]);
        assert_eq!(writes("git show --output F"), ["F"]);
        assert_eq!(writes("git -C sub diff --output=x"), ["sub/x"]);
        assert_eq!(writes("git format-patch -o out HEAD~1"), ["out/*"]);
        assert_eq!(writes("git format-patch HEAD~1"), ["./*"]);
        assert!(writes("git format-patch --stdout HEAD~1").is_empty());
        assert_eq!(writes("git archive -o x.tar HEAD"), ["x.tar"]);
        assert_eq!(writes("git bundle create b.bundle HEAD"), ["b.bundle"]);
        for harmless in [
            "git diff HEAD~1",
            "git log --oneline -5",
            "git grep -o foo",
            "git ls-files -o",
            "git diff --output-indicator-new=+",
        ] {
            let effects: Vec<Effect> =
                run(harmless).into_iter().filter(|e| !matches!(e, Effect::RunsGitIn(_))).collect();
            assert!(effects.is_empty(), "{harmless}: {effects:?}");
        }
    }

    #[test]
    fn git_pagers_and_program_settings_cannot_be_checked() {
        for cmd in [
            "git grep -Otouch x",
            "git grep -O x",
            "git grep -iO x",
            "git grep --open-files-in-pager=touch x",
            "git grep --open=true x",
            "git -c core.pager=sh log",
            "git -c alias.x=!sh x",
            "git --exec-path=/tmp status",
        ] {
            assert!(unclassified(cmd), "{cmd}");
        }
        assert!(!unclassified("git grep -e -O x"));
        assert!(!unclassified("git -c color.ui=always log"));
    }

    #[test]
    fn sort_uniq_tree_outputs_are_writes() {
        assert_eq!(writes("sort -o out a.txt"), ["out"]);
        assert_eq!(writes("sort -rnoout a.txt"), ["out"]);
        assert_eq!(writes("sort --output=out a.txt"), ["out"]);
        assert_eq!(writes("sort --out out a.txt"), ["out"]);
        assert!(writes("sort -t o a.txt").is_empty());
        assert!(writes("sort -k 2 a.txt").is_empty());
        assert_eq!(runs("sort --compress-program=gzip a.txt"), ["gzip"]);
        assert_eq!(writes("uniq a.txt out"), ["out"]);
        assert_eq!(writes("uniq -f 1 a.txt out"), ["out"]);
        assert!(writes("uniq -c a.txt").is_empty());
        assert!(writes("uniq -f 1 a.txt").is_empty());
        assert_eq!(writes("tree -o out"), ["out"]);
        assert_eq!(writes("tree -ao out src"), ["out"]);
        assert_eq!(writes("tree -L 2 -o out"), ["out"]);
        assert!(writes("tree -L 2 src").is_empty());
        assert!(unclassified("tree -R -H . -L 1"));
    }

    #[test]
    fn programs_run_by_options_are_commands() {
        assert_eq!(runs("rg --pre sh -e x a.txt"), ["sh"]);
        assert_eq!(runs("rg --pre=sh x a.txt"), ["sh"]);
        assert_eq!(runs("rg --hostname-bin=./h x"), ["./h"]);
        assert!(runs("rg -e --pre x").is_empty());
        assert!(runs("rg -n foo src").is_empty());
        assert_eq!(runs("find . -name x -exec rm {} ;"), ["rm {}"]);
        assert_eq!(runs("find . -execdir sh -c x {} + -ok cat {} ;"), ["sh -c x {}", "cat {}"]);
        assert_eq!(runs("find . -exec grep -l x {} +"), ["grep -l x {}"]);
    }

    #[test]
    fn find_file_curl_wget_dd() {
        assert_eq!(writes("find src -fprint out -name x"), ["out"]);
        assert_eq!(writes("find src -fprintf out %p"), ["out"]);
        assert_eq!(writes("find src docs -name x -delete"), ["src/*", "docs/*"]);
        assert_eq!(writes("find -delete"), ["./*"]);
        assert!(run("find . -name '*.rs' -print").is_empty());
        assert!(unclassified("file -C -m magic"));
        assert!(run("file a.txt").is_empty());
        assert_eq!(writes("curl -sSLo out https://x"), ["out"]);
        assert_eq!(writes("curl --output out https://x"), ["out"]);
        assert_eq!(writes("curl -O https://x/a"), ["./*"]);
        assert!(writes("curl -s https://x").is_empty());
        assert_eq!(writes("wget -O out https://x"), ["out"]);
        assert_eq!(writes("wget https://x"), ["./*"]);
        assert!(writes("wget -qO- https://x").is_empty());
        assert!(writes("wget --version").is_empty() && writes("wget -h").is_empty());
        assert_eq!(writes("wget -i urls.txt"), ["./*"]);
        assert_eq!(writes("wget --input-file=urls.txt -P d"), ["d/*"]);
        assert_eq!(writes("wget \"$U\""), ["./*"]);
        assert_eq!(writes("dd if=a of=b"), ["b"]);
    }
}
