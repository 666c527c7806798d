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
    /// Reads this file.
    Reads(Word),
    /// Runs this simple command (program and arguments).
    Runs(Vec<Word>),
    /// Runs this text as a shell command line.
    RunsLine(String),
    /// Does something that cannot be checked; the reason.
    Unclassified(String),
}

/// What `program` with `args` does beyond what its name says.
pub(super) fn effects(program: &str, args: &[Word]) -> Vec<Effect> {
    match program {
        "git" => git(args),
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
        _ => Vec::new(),
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
    Word { text: text.to_string(), dynamic: w.dynamic }
}

fn here() -> Word {
    Word { text: ".".to_string(), dynamic: false }
}

/// `dir/path` (or `path` when it is absolute or `dir` is `None`).
fn under(dir: Option<&Word>, path: &Word) -> Word {
    match dir {
        Some(d) if !path.text.starts_with('/') => {
            Word { text: format!("{}/{}", d.text.trim_end_matches('/'), path.text), dynamic: d.dynamic || path.dynamic }
        }
        _ => path.clone(),
    }
}

/// Global options of git that take a separate value.
const GIT_GLOBAL_VALUES: &[&str] =
    &["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"];

/// Parts of configuration keys whose values git runs as programs (or that pull in more
/// configuration).
const GIT_PROGRAM_KEYS: &[&str] = &[
    "alias.",
    "pager",
    "editor",
    "sshcommand",
    "external",
    "textconv",
    "fsmonitor",
    "hookspath",
    "askpass",
    "command",
    "cmd",
    "credential",
    "proxy",
    "filter.",
    "include",
    "exec",
    "program",
    "tool",
    "uploadpack",
    "receivepack",
];

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
        if !t.starts_with('-') {
            break;
        }
        i += 1;
    }
    let Some(sub) = args.get(i) else { return out };
    let rest = &args[i + 1..];
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

/// `git -c KEY=VALUE`: settings that make git run a program cannot be checked.
fn git_setting(setting: &Word, out: &mut Vec<Effect>) {
    let key = setting.text.split('=').next().unwrap_or_default().to_ascii_lowercase();
    if setting.dynamic || GIT_PROGRAM_KEYS.iter().any(|k| key.contains(k)) {
        out.push(Effect::Unclassified(format!(
            "the git setting `{}` may run a program",
            setting.text.split('=').next().unwrap_or_default()
        )));
    }
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
    for arg in syntax.parse(args) {
        if let Arg::Long(name, Some(program)) = arg
            && (name == "pre" || name == "hostname-bin")
            && !program.text.is_empty()
        {
            out.push(Effect::Runs(vec![program]));
        }
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
                    command.push(word.clone());
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
        ],
        abbreviations: false,
    };
    let mut out = Vec::new();
    let mut dir = None;
    let mut remote_name = false;
    for arg in syntax.parse(args) {
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
    for arg in syntax.parse(args) {
        match arg {
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
                        out.push(Effect::Unclassified("`wget --execute` runs wgetrc commands".into()))
                    }
                    None if is("spider") => document = true,
                    _ => {}
                }
            }
            _ => {}
        }
    }
    if !document {
        out.push(Effect::WritesUnder(dir.unwrap_or_else(here)));
    }
    out
}

fn dd(args: &[Word]) -> Vec<Effect> {
    args.iter().filter_map(|w| w.text.strip_prefix("of=").map(|file| Effect::Writes(part(w, file)))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Word> {
        line.split_whitespace().map(|t| Word { text: t.to_string(), dynamic: false }).collect()
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
        let w = |t: &str| Word { text: t.into(), dynamic: false };
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
            assert!(run(harmless).is_empty(), "{harmless}: {:?}", run(harmless));
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
        assert!(run("rg -n foo src").is_empty());
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
        assert_eq!(writes("dd if=a of=b"), ["b"]);
    }
}
