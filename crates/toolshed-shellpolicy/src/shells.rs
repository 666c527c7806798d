//! How a shell started as a command reads its options and finds what to run, the way the shell
//! itself does: bash (`parse_long_options` then `parse_shell_options` in bash's `shell.c`:
//! clustered single-letter flags, `-c` a flag whose command string is the first argument left
//! after the options, `-o`/`+o`/`-O`/`+O` taking the next argument, `-` or `--` ending the
//! options, long options only before the short ones), dash / ash / sh (`options()` in dash),
//! ksh and zsh (their common subset). An option not known here is never guessed at: the command
//! cannot be analysed.

use super::Word;

/// What a shell started with some arguments runs.
#[derive(Debug, PartialEq)]
pub(super) enum Invocation {
    /// The command string of `-c`.
    Line(Word),
    /// The script in this file (the first operand).
    File(Word),
    /// A script read from standard input (no operand, or `-s`).
    Stdin,
    /// Nothing (a missing `-c` argument or `-o` with no name only print).
    Nothing,
    /// Something that cannot be analysed; the reason.
    Unclassified(String),
}

#[derive(Clone, Copy, PartialEq)]
enum Dialect {
    Bash,
    Posix,
    Ksh,
    Zsh,
}

/// Programs that are shells (`busybox` is a wrapper whose first argument may be one).
pub(super) fn is_shell(program: &str) -> bool {
    dialect(program).is_some() || FOREIGN.contains(&program)
}

/// Shells whose language is not the POSIX shell's: their scripts cannot be analysed here.
const FOREIGN: &[&str] = &["fish", "csh", "tcsh", "nu", "xonsh", "elvish", "pwsh", "rc", "es"];

fn dialect(program: &str) -> Option<Dialect> {
    Some(match program {
        "bash" | "rbash" => Dialect::Bash,
        "sh" | "dash" | "ash" | "posh" | "yash" => Dialect::Posix,
        "ksh" | "ksh93" | "mksh" | "lksh" | "pdksh" | "oksh" => Dialect::Ksh,
        "zsh" => Dialect::Zsh,
        _ => return None,
    })
}

const BASH_LONG_FLAGS: &[&str] = &[
    "debugger",
    "dump-po-strings",
    "dump-strings",
    "help",
    "login",
    "noediting",
    "noprofile",
    "norc",
    "posix",
    "pretty-print",
    "protected",
    "restricted",
    "verbose",
    "version",
    "wordexp",
];
const BASH_LONG_VALUES: &[&str] = &["init-file", "rcfile"];

const BASH_SET_O: &[&str] = &[
    "allexport",
    "braceexpand",
    "emacs",
    "errexit",
    "errtrace",
    "functrace",
    "hashall",
    "histexpand",
    "history",
    "ignoreeof",
    "interactive-comments",
    "monitor",
    "noclobber",
    "noexec",
    "noglob",
    "nolog",
    "notify",
    "nounset",
    "onecmd",
    "physical",
    "pipefail",
    "posix",
    "privileged",
    "verbose",
    "vi",
    "xtrace",
];

/// `shopt` options a command may set: not those that change what `cd` and command names mean
/// (`cdable_vars`, `autocd`, `cdspell`, `dirspell`), expand aliases or run traps in more places
/// (`expand_aliases`, `extdebug`) — review 26.
pub(super) const BASH_SHOPT: &[&str] = &[
    "assoc_expand_once",
    "checkhash",
    "checkjobs",
    "checkwinsize",
    "cmdhist",
    "compat31",
    "compat32",
    "compat40",
    "compat41",
    "compat42",
    "compat43",
    "compat44",
    "complete_fullquote",
    "direxpand",
    "dotglob",
    "execfail",
    "extglob",
    "extquote",
    "failglob",
    "force_fignore",
    "globasciiranges",
    "globskipdots",
    "globstar",
    "gnu_errfmt",
    "histappend",
    "histreedit",
    "histverify",
    "hostcomplete",
    "huponexit",
    "inherit_errexit",
    "interactive_comments",
    "lastpipe",
    "lithist",
    "localvar_inherit",
    "localvar_unset",
    "login_shell",
    "mailwarn",
    "no_empty_cmd_completion",
    "nocaseglob",
    "nocasematch",
    "noexpand_translation",
    "nullglob",
    "patsub_replacement",
    "progcomp",
    "progcomp_alias",
    "promptvars",
    "restricted_shell",
    "shift_verbose",
    "sourcepath",
    "varredir_close",
    "xpg_echo",
];

const POSIX_SET_O: &[&str] = &[
    "allexport",
    "debug",
    "emacs",
    "errexit",
    "ignoreeof",
    "interactive",
    "monitor",
    "noclobber",
    "noexec",
    "noglob",
    "nolog",
    "notify",
    "nounset",
    "pipefail",
    "privileged",
    "stdin",
    "verbose",
    "vi",
    "xtrace",
];

const ZSH_SET_O: &[&str] = &[
    "errexit",
    "err_exit",
    "xtrace",
    "verbose",
    "noglob",
    "no_glob",
    "nounset",
    "no_unset",
    "pipefail",
    "pipe_fail",
    "noclobber",
    "no_clobber",
    "extendedglob",
    "extended_glob",
    "nullglob",
    "null_glob",
    "shwordsplit",
    "sh_word_split",
    "ksharrays",
    "ksh_arrays",
    "norcs",
    "no_rcs",
    "noexec",
    "no_exec",
];

/// What `shell` run with `args` runs.
#[cfg(test)]
pub(super) fn invocation(shell: &str, args: &[Word]) -> Invocation {
    let (invocation, startup) = invocation_and_startup(shell, args);
    match startup {
        Some(why) => Invocation::Unclassified(why),
        None => invocation,
    }
}

/// What `shell` run with `args` runs, and the reason to ask when it first runs startup files.
pub(super) fn invocation_and_startup(shell: &str, args: &[Word]) -> (Invocation, Option<String>) {
    let mut startup = None;
    let invocation = invocation_inner(shell, args, &mut startup);
    (invocation, startup)
}

fn invocation_inner(shell: &str, args: &[Word], startup: &mut Option<String>) -> Invocation {
    let Some(dialect) = dialect(shell) else {
        return Invocation::Unclassified(format!("`{shell}` scripts are not in a language analysed here"));
    };
    let mut i = 0;
    // Startup files a login (`-l`, `--login`) or interactive (`-i`) shell runs before the command:
    // `~/.bash_profile`, `~/.bashrc`, `$ENV`, `--rcfile F`. What they hold is not on the line.
    let (mut login, mut interactive, mut norc, mut noprofile, mut rcfile) = (false, false, false, false, false);
    if dialect == Dialect::Bash {
        // Long options come first; bash also accepts them with one dash (`-login`).
        while let Some(w) = args.get(i) {
            let t = w.text.as_str();
            if !t.starts_with('-') || t == "-" || t == "--" {
                break;
            }
            if w.dynamic {
                return Invocation::Unclassified(format!("the options of `{shell}` are computed at run time"));
            }
            let long = t.starts_with("--");
            let name = if long { &t[2..] } else { &t[1..] };
            if BASH_LONG_FLAGS.contains(&name) {
                login |= name == "login";
                norc |= name == "norc";
                noprofile |= name == "noprofile";
                i += 1;
            } else if BASH_LONG_VALUES.contains(&name) {
                rcfile = true;
                i += 2;
            } else if long {
                return Invocation::Unclassified(format!("`{shell} {t}` is not an option known here"));
            } else {
                break;
            }
        }
    }
    let mut command = false;
    let mut stdin = false;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        // A word computed at run time may turn out to be options (`-c ...`).
        if !w.is_plain() {
            return Invocation::Unclassified(format!("the options of `{shell}` are computed at run time"));
        }
        if !(t.starts_with('-') || t.starts_with('+')) {
            break;
        }
        if w.dynamic || w.glob {
            return Invocation::Unclassified(format!("the options of `{shell}` are computed at run time"));
        }
        i += 1;
        if t == "-" || t == "--" {
            break;
        }
        if t == "+" {
            continue;
        }
        for c in t[1..].chars() {
            match c {
                'c' => command = true,
                's' => stdin = true,
                'o' | 'O' => {
                    if c == 'O' && dialect != Dialect::Bash {
                        return Invocation::Unclassified(format!("`{shell} -O` is not an option known here"));
                    }
                    let Some(name) = args.get(i) else { return Invocation::Nothing };
                    i += 1;
                    let known: &[&str] = match (dialect, c) {
                        (Dialect::Bash, 'o') => BASH_SET_O,
                        (Dialect::Bash, _) => BASH_SHOPT,
                        (Dialect::Zsh, _) => ZSH_SET_O,
                        _ => POSIX_SET_O,
                    };
                    if !name.is_plain() || !known.contains(&name.text.as_str()) {
                        return Invocation::Unclassified(format!(
                            "`{shell} -{c} {}` is not an option known here",
                            name.text
                        ));
                    }
                }
                'l' if t.starts_with('-') => login = true,
                'i' if t.starts_with('-') => interactive = true,
                c if flag(dialect, c) => {}
                c => return Invocation::Unclassified(format!("`{shell} -{c}` is not an option known here")),
            }
        }
    }
    let posix = dialect != Dialect::Bash;
    if (login && (posix || !noprofile)) || (interactive && (posix || !norc || rcfile)) {
        *startup = Some(format!(
            "`{shell}` as a login or interactive shell first runs its startup files, which the command does not show"
        ));
    }
    let operand = args.get(i);
    if command {
        return operand.map_or(Invocation::Nothing, |w| Invocation::Line(w.clone()));
    }
    match operand {
        Some(file) if !stdin => Invocation::File(file.clone()),
        _ => Invocation::Stdin,
    }
}

/// Single-letter options that only set a flag (`-k`, which makes every `NAME=value` word an
/// assignment, is left out on purpose: the words would no longer mean what they say).
fn flag(dialect: Dialect, c: char) -> bool {
    match dialect {
        Dialect::Bash => "abefhimnptuvxBCEHPTlirD".contains(c),
        Dialect::Posix => "abCeEfhiImnpquvVxl".contains(c),
        Dialect::Ksh => "abCefhimnpruvxXl".contains(c),
        Dialect::Zsh => "efilnvxb".contains(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str) -> Invocation {
        let words: Vec<Word> = line.split_whitespace().map(Word::literal).collect();
        invocation(&words[0].text, &words[1..])
    }

    fn line(text: &str) -> Invocation {
        Invocation::Line(Word::literal(text))
    }

    #[test]
    fn bash_finds_the_command_string_after_its_options() {
        assert_eq!(run("bash -c X"), line("X"));
        assert_eq!(run("bash -c -- X"), line("X"));
        assert_eq!(run("bash -xc X"), line("X"));
        assert_eq!(run("bash -cx X"), line("X"));
        assert_eq!(run("bash -c -e X"), line("X"));
        assert_eq!(run("bash -O extglob -c X"), line("X"));
        assert_eq!(run("bash +O extglob -c X"), line("X"));
        assert_eq!(run("bash -eo pipefail -c X Y"), line("X"));
        assert_eq!(run("bash +c X"), line("X"), "bash takes +c as -c");
        assert_eq!(run("bash --norc --noprofile -c X"), line("X"));
        assert_eq!(run("bash -norc -c X"), line("X"), "a long option with one dash");
        assert_eq!(run("bash --noprofile -lc X"), line("X"));
        assert_eq!(run("bash --norc -ic X"), line("X"));
        for startup in ["bash -lc X", "bash -ic X", "bash --login -c X", "bash --rcfile f --norc -ic X", "sh -lc X"] {
            assert!(matches!(run(startup), Invocation::Unclassified(_)), "{startup}");
        }
        assert_eq!(run("bash -c"), Invocation::Nothing);
        assert_eq!(run("bash -e script.sh X"), Invocation::File(Word::literal("script.sh")));
        assert_eq!(run("bash -- -c"), Invocation::File(Word::literal("-c")));
        assert_eq!(run("bash"), Invocation::Stdin);
        assert_eq!(run("bash -s a b"), Invocation::Stdin);
        assert_eq!(run("bash -"), Invocation::Stdin);
        for odd in ["bash --frobnicate -c X", "bash -k -c X", "bash -o keyword -c X", "bash -O nosuch -c X", "bash -Z"]
        {
            assert!(matches!(run(odd), Invocation::Unclassified(_)), "{odd}");
        }
        let dynamic = [Word::new("$OPT", true), Word::literal("X")];
        assert!(matches!(invocation("bash", &dynamic), Invocation::Unclassified(_)));
    }

    #[test]
    fn other_shells_follow_their_own_options() {
        assert_eq!(run("sh -c -- X"), line("X"));
        assert_eq!(run("dash -ec X"), line("X"));
        assert_eq!(run("sh -o errexit -c X"), line("X"));
        assert_eq!(run("zsh -fc X"), line("X"));
        assert_eq!(run("ksh -c X"), line("X"));
        assert!(matches!(run("sh --norc -c X"), Invocation::Unclassified(_)));
        assert!(matches!(run("sh -O extglob -c X"), Invocation::Unclassified(_)));
        assert!(matches!(run("zsh -o promptsubst -c X"), Invocation::Unclassified(_)));
        assert!(matches!(run("fish -c X"), Invocation::Unclassified(_)));
        assert!(matches!(run("tcsh -c X"), Invocation::Unclassified(_)));
    }
}
