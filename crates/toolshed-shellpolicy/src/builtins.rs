//! Shell builtins that change what later words mean or run code the line does not show:
//! `alias`, `enable -f`, `hash -p`, `set -k`, `fc`, `bind -x`, `complete -C`, `mapfile -C`, and
//! the builtins that set variables (`declare`/`export`/`local`/`readonly`/`typeset`, `read`,
//! `printf -v`, `getopts`, `mapfile`) or read names as arithmetic (`unset`, `let`, `test -v`),
//! checked like assignments (see [`super::environment`]).

use super::Word;
use super::environment;
use super::programs::Effect;

/// What the builtin `program` run with `args` does that needs checking.
pub(super) fn effects(program: &str, args: &[Word]) -> Vec<Effect> {
    let mut out = Vec::new();
    let unclassified = |why: &str| vec![Effect::Unclassified(why.to_string())];
    let flags = |letters: &str| {
        args.iter().take_while(|w| w.text != "--").any(|w| {
            w.text.starts_with('-') && !w.text.starts_with("--") && w.text[1..].chars().any(|c| letters.contains(c))
        })
    };
    match program {
        "alias" if args.iter().any(|w| w.text.contains('=') || w.dynamic) => {
            return unclassified("`alias` makes a name run another command");
        }
        "enable" if flags("fd") || args.iter().any(|w| w.dynamic) => {
            return unclassified("`enable -f` loads a builtin from a shared library");
        }
        "hash" if flags("p") => return unclassified("`hash -p` makes a name run another program"),
        "set" => {
            let keyword = args.windows(2).any(|p| matches!(p[0].text.as_str(), "-o" | "+o") && p[1].text == "keyword");
            if keyword
                || args.iter().take_while(|w| w.text != "--").any(|w| w.text.starts_with('-') && w.text.contains('k'))
            {
                return unclassified("`set -k` makes every `NAME=value` word an assignment");
            }
        }
        // `shopt -s NAME...`: only options known not to change what later words mean.
        "shopt" if flags("s") => {
            let names = args.iter().filter(|w| !w.text.starts_with('-'));
            if flags("o") || args.iter().any(|w| w.dynamic) {
                return unclassified("`shopt -s -o` sets shell options that change what the line does");
            }
            if let Some(name) = names.clone().find(|w| !super::shells::BASH_SHOPT.contains(&w.text.as_str())) {
                return vec![Effect::Unclassified(format!(
                    "`shopt -s {}` changes what later words mean (or is not an option known here)",
                    name.text
                ))];
            }
        }
        "fc" if !flags("l") => return unclassified("`fc` runs commands from the history"),
        "bind" if flags("x") => return unclassified("`bind -x` binds a key to a command"),
        "complete" | "compgen" if flags("CF") => return unclassified("`complete -C`/`-F` runs a command or function"),
        "mapfile" | "readarray" => {
            if flags("C") {
                return unclassified("`mapfile -C` runs a callback");
            }
            let names = operands(args, "dnOsuCc");
            names_set(names.last().copied().or(Some(&Word::literal("MAPFILE"))), true, &mut out);
        }
        "read" => {
            let array = args.iter().position(|w| w.text == "-a").and_then(|at| args.get(at + 1));
            names_set(array, true, &mut out);
            let names = operands(args, "adinNptu");
            if names.is_empty() {
                out.push(Effect::SetsAtRunTime("REPLY".into()));
            }
            for name in names {
                names_set(Some(name), true, &mut out);
            }
        }
        "printf" => {
            let mut i = 0;
            while let Some(w) = args.get(i) {
                if w.text == "-v" {
                    names_set(args.get(i + 1), true, &mut out);
                    i += 2;
                } else if let Some(name) = w.text.strip_prefix("-v").filter(|n| !n.is_empty()) {
                    names_set(Some(&Word::new(name, w.dynamic)), true, &mut out);
                    i += 1;
                } else {
                    break;
                }
            }
        }
        "getopts" => {
            names_set(args.get(1), true, &mut out);
            out.push(Effect::SetsAtRunTime("OPTARG".into()));
        }
        "wait" => {
            let at = args.iter().position(|w| w.text == "-p");
            names_set(at.and_then(|at| args.get(at + 1)), true, &mut out);
        }
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            let nameref = flags("n");
            for w in args.iter().filter(|w| !(w.text.starts_with('-') || w.text.starts_with('+'))) {
                if let Some(why) = environment::check_assignment(&w.text) {
                    out.push(Effect::Unclassified(why));
                }
                let value = w.text.split_once('=').map(|(_, v)| v);
                if nameref && (w.dynamic || value.is_some_and(|v| v.contains(['$', '`', '[']))) {
                    out.push(Effect::Unclassified(format!("the name reference `{}` is resolved at run time", w.text)));
                }
                // `declare -n r=PATH; r=...` sets PATH; `declare -n r` takes its target from the
                // first value assigned to it.
                if nameref && !w.text.is_empty() {
                    match value {
                        None => out.push(Effect::Unclassified(format!(
                            "the name reference `{}` gets its target later on the line",
                            w.text
                        ))),
                        Some(target) if environment::check_name(target).is_some() => {
                            out.push(Effect::Unclassified(format!(
                                "the name reference `{}` sets a variable whose setting asks",
                                w.text
                            )));
                        }
                        Some(_) => {}
                    }
                }
                if let Some(name) = w.text.split_once('=').map(|(n, _)| n.trim_end_matches('+'))
                    && (w.dynamic || value.is_some_and(environment::arithmetic_payload))
                {
                    out.push(Effect::SetsAtRunTime(name.split('[').next().unwrap_or_default().to_string()));
                }
            }
        }
        "let" => {
            for w in args {
                if w.dynamic || environment::subscript_runs(&w.text) || w.text.contains(['$', '`']) {
                    return unclassified("`let` evaluates arithmetic that can run commands");
                }
                if let Some((name, _)) = w.text.split_once('=')
                    && let Some(why) = environment::check_name(
                        name.trim_end_matches(['+', '-', '*', '/', '%', '<', '>', '&', '^', '|']),
                    )
                {
                    out.push(Effect::Unclassified(why));
                }
            }
        }
        "test" | "["
            if args.windows(2).any(|p| {
                matches!(p[0].text.as_str(), "-v" | "-R") && (p[1].dynamic || environment::lookup_runs(&p[1].text))
            }) =>
        {
            return unclassified("`test -v` evaluates a subscript that can run commands");
        }
        // `history -w/-a [FILE]` writes FILE (or `$HISTFILE`), `-r/-n [FILE]` reads it.
        "history" => {
            let mut letters = String::new();
            let mut file = None;
            let mut i = 0;
            while let Some(w) = args.get(i) {
                if w.text == "--" {
                    file = args.get(i + 1);
                    break;
                }
                match w.text.strip_prefix('-').filter(|l| !l.is_empty()) {
                    Some(l) if !w.dynamic => {
                        letters.push_str(l);
                        // `-d OFFSET` takes a value; `-p`/`-s` take the rest as text.
                        if l.contains('d') {
                            i += 1;
                        }
                        if l.contains(['p', 's']) {
                            break;
                        }
                    }
                    _ => {
                        file = Some(w);
                        break;
                    }
                }
                i += 1;
            }
            let (writes, reads) = (letters.contains(['w', 'a']), letters.contains(['r', 'n']));
            if letters.contains(['p', 's']) || !(writes || reads) {
                return out;
            }
            match file {
                Some(file) if writes => out.push(Effect::Writes(file.clone())),
                Some(file) => out.push(Effect::Reads(file.clone())),
                None => {
                    return unclassified(
                        "`history -w`/`-a`/`-r`/`-n` uses the file `$HISTFILE` names, which may be any",
                    );
                }
            }
            if writes
                && reads
                && let Some(file) = file
            {
                out.push(Effect::Reads(file.clone()));
            }
        }
        "unset"
            if args.iter().any(|w| {
                w.dynamic
                    || environment::subscript_runs(&w.text)
                    || (w.text.contains('[') && environment::lookup_runs(&w.text))
            }) =>
        {
            return unclassified("`unset` evaluates a subscript that can run commands");
        }
        _ => {}
    }
    out
}

/// The operands of a builtin whose single-letter options in `with_value` take a value.
fn operands<'a>(args: &'a [Word], with_value: &str) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        let t = w.text.as_str();
        if t == "--" {
            out.extend(args[i..].iter());
            break;
        }
        if t.starts_with('-') && t.len() > 1 && out.is_empty() {
            if let Some(last) = t.chars().last()
                && with_value.contains(last)
                && t.len() == 2
            {
                i += 1;
            }
            continue;
        }
        out.push(w);
    }
    out
}

/// A builtin sets the variable `name` (to a value known at run time when `dynamic`).
fn names_set(name: Option<&Word>, dynamic: bool, out: &mut Vec<Effect>) {
    let Some(name) = name else { return };
    if name.dynamic {
        out.push(Effect::Unclassified(format!("the variable `{}` is named at run time", name.text)));
        return;
    }
    if let Some(why) = environment::check_name(&name.text) {
        out.push(Effect::Unclassified(why));
    }
    // `read a[x]`, `printf -v a[x]`: the subscript of an indexed array is arithmetic.
    if name.text.contains('[') && environment::lookup_runs(&name.text) {
        out.push(Effect::Unclassified(format!(
            "the subscript of `{}` is evaluated as arithmetic, which can run commands",
            name.text
        )));
    }
    if dynamic {
        out.push(Effect::SetsAtRunTime(name.text.split('[').next().unwrap_or_default().to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(line: &str) -> Vec<Effect> {
        let words: Vec<Word> = line.split_whitespace().map(Word::literal).collect();
        effects(&words[0].text, &words[1..])
    }

    fn asks(line: &str) -> bool {
        run(line).iter().any(|e| matches!(e, Effect::Unclassified(_)))
    }

    #[test]
    fn builtins_that_change_meanings_or_run_code_ask() {
        for line in [
            "alias ls=rm",
            "enable -f ./x.so x",
            "hash -p /bin/rm ls",
            "set -k",
            "set -o keyword",
            "fc -s",
            "bind -x '\"a\":rm'",
            "compgen -C rm x",
            "mapfile -C rm -c 1 a",
            "read PATH",
            "read -r -a a[$(id)]",
            "printf -v PATH %s x",
            "printf -va[$(id)] %s x",
            "getopts ab LD_PRELOAD",
            "export GIT_EDITOR=x",
            "declare -x LD_PRELOAD=x",
            "local -n r=a[$(id)]",
            "let a[$(id)]=1",
            "unset a[$(id)]",
            "test -v a[$(id)]",
            "[ -v a[`id`] ]",
        ] {
            assert!(asks(line), "{line}");
        }
        for line in [
            "alias",
            "alias ll",
            "set -euo pipefail",
            "read -r line",
            "printf %s x",
            "export FOO=1",
            "unset x",
            "fc -l",
            "let i=1+2",
        ] {
            assert!(!asks(line), "{line}: {:?}", run(line));
        }
        assert_eq!(run("read -r -p prompt x"), [Effect::SetsAtRunTime("x".into())]);
    }
}
