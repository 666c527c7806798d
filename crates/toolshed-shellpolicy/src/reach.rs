//! Programs whose options make them run other programs, load code or read commands from
//! somewhere the command line does not show (review 26): compilers and linkers (`gcc -wrapper`,
//! `-B`, `-fplugin`, `-specs`, `ld -plugin`, `opt -load`), roff's unsafe mode (`groff -U`), `man`
//! (`-C`, `-H`, `-P`, `-p`, a page file), `lldb`, apt's `-o`/`-c`, and the names Debian's
//! alternatives give an editor, a pager or a browser (`editor`, `sensible-editor`, `pager`,
//! `x-www-browser`, ...). Anything these programs are given that is not understood asks.

use super::Word;
use super::programs::Effect;

/// What `program` with `args` does that [`super::programs::effects`] does not cover.
pub(super) fn effects(program: &str, args: &[Word]) -> Vec<Effect> {
    let ask = |why: String| vec![Effect::Unclassified(why)];
    if ALTERNATIVES.contains(&program) {
        return ask(format!(
            "`{program}` runs whichever editor, pager or browser the system or the environment chooses, which may run commands"
        ));
    }
    if is_compiler(program) {
        return compiler(program, args);
    }
    let family = family(program);
    match family {
        "opt" | "llc"
            if args.iter().any(|w| {
                (w.text.starts_with('-') && (w.text.contains("load") || w.text.contains("plugin"))) || w.dynamic
            }) =>
        {
            ask(format!("`{program} -load`/`-load-pass-plugin` loads code from a file"))
        }
        "ld" | "ld.bfd" | "ld.gold" | "ld.lld" | "lld" | "gold" | "mold" | "ld64.lld" | "wasm-ld"
            if args.iter().any(|w| {
                (w.text.starts_with('-') && w.text.contains("plugin")) || w.text.starts_with('@') || w.dynamic
            }) =>
        {
            ask(format!("`{program} -plugin` loads code from a file"))
        }
        "groff" | "nroff" | "troff" | "gtroff" | "gnroff" | "pic" | "gpic" => roff(program, args),
        "man" => man(args),
        "lldb" => {
            if matches!(args, [w] if matches!(w.text.as_str(), "--version" | "-v" | "--help" | "-h")) {
                return Vec::new();
            }
            ask("`lldb` runs debugger commands from its options, files and its input, which may run programs".into())
        }
        "apt" | "apt-get" | "apt-cache" | "apt-mark" | "aptitude" | "apt-config" => apt(program, args),
        // `dotnet script FILE`, `dotnet fsi FILE`: run a script file, or code from the input.
        "dotnet" if args.first().is_some_and(|w| matches!(w.text.as_str(), "script" | "fsi")) => {
            match args[1..].iter().find(|w| !w.text.starts_with('-')) {
                Some(file) => vec![Effect::Executes(file.clone())],
                None => vec![Effect::RunsCode(format!("`{program} {}` runs code from its input", args[0].text))],
            }
        }
        // A link to a path known only at run time may be to a protected file, which a later
        // write through the link changes (review 26 M4).
        "ln" | "link" | "symlink" if args.iter().any(|w| w.dynamic) => {
            ask(format!("`{program}` makes a link to a path known only at run time"))
        }
        _ => Vec::new(),
    }
}

/// Debian's alternatives and helpers that run an editor, pager or browser of someone else's
/// choosing (`/usr/bin/editor` → vim runs `-es` scripts from its input).
const ALTERNATIVES: &[&str] = &[
    "editor",
    "sensible-editor",
    "select-editor",
    "pager",
    "sensible-pager",
    "x-www-browser",
    "www-browser",
    "gnome-www-browser",
    "sensible-browser",
    "x-terminal-emulator",
    "sensible-terminal",
    "run-mailcap",
    "see",
    "edit",
    "compose",
];

/// `program` without a version suffix (`opt-17` → `opt`, `ld.lld-18` → `ld.lld`).
fn family(program: &str) -> &str {
    let trimmed = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-' || c == '.');
    if trimmed.is_empty() { program } else { trimmed }
}

/// A C-family compiler driver, any target prefix or version (`x86_64-linux-gnu-gcc-12`,
/// `clang++-17`, `cc`, `c99`).
pub(super) fn is_compiler(program: &str) -> bool {
    if matches!(program, "c89" | "c99" | "c11" | "c17") {
        return true;
    }
    let last = family(program).rsplit('-').next().unwrap_or_default();
    matches!(
        last,
        "gcc" | "cc" | "g++" | "c++" | "cpp" | "clang" | "clang++" | "gfortran" | "gccgo" | "tcc" | "icx" | "icc"
    )
}

/// A compiler driver's options that run programs or load plugins, and the files it writes.
fn compiler(program: &str, args: &[Word]) -> Vec<Effect> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        i += 1;
        let runs = w.dynamic
            || t == "-wrapper"
            || t.starts_with("-B")
            || t.starts_with("--prefix")
            || t.starts_with("-fplugin")
            || t.starts_with("-fpass-plugin")
            || t.starts_with("-specs")
            || t.starts_with("--specs")
            || t.starts_with("--ld-path")
            || t.starts_with("-no-canonical-prefixes")
            || (t.starts_with("-fuse-ld=") && t.contains('/'))
            || t.starts_with('@')
            || (t.starts_with('-') && t.contains("plugin"))
            || t == "-load"
            || t == "-Xclang" && args.get(i).is_some_and(|n| n.text.contains("load") || n.text.contains("plugin"));
        if runs {
            out.push(Effect::Unclassified(format!(
                "`{program} {t}` makes the compiler run other programs or load code"
            )));
            return out;
        }
        match t {
            "-o" | "-MF" => {
                out.extend(args.get(i).cloned().map(Effect::Writes));
                i += 1;
            }
            _ if t.len() > 2 && t.starts_with("-o") => out.push(Effect::Writes(Word::like(w, &t[2..]))),
            _ if t.len() > 3 && t.starts_with("-MF") => out.push(Effect::Writes(Word::like(w, &t[3..]))),
            _ => {}
        }
    }
    out
}

/// roff's unsafe mode (`-U`: `.sy`, `.pi`, `.open` run programs and write files), and groff's
/// spooler (`-l`, `-L`).
fn roff(program: &str, args: &[Word]) -> Vec<Effect> {
    // Short options that take a value (the rest of the word, or the next word).
    const VALUES: &str = "dDfFIKLmMnoPrTwW";
    for w in args {
        let t = w.text.as_str();
        if w.dynamic {
            return vec![Effect::Unclassified(format!("a word of `{program}` is known only at run time"))];
        }
        if t == "--" {
            break;
        }
        if !t.starts_with('-') || t.starts_with("--") || t.len() < 2 {
            continue;
        }
        for c in t[1..].chars() {
            if c == 'U' || (program.contains("groff") && matches!(c, 'l' | 'L')) {
                return vec![Effect::Unclassified(format!(
                    "`{program} -{c}` runs programs (unsafe mode or the print spooler)"
                ))];
            }
            if VALUES.contains(c) {
                break;
            }
        }
    }
    Vec::new()
}

/// `man`: options that choose a configuration, a pager, a browser or preprocessors run those
/// programs; a page given as a file (`-l FILE`, `./x.1`) is code the formatter runs.
fn man(args: &[Word]) -> Vec<Effect> {
    // Long options that run programs or read configuration that names them.
    const RUNS: &[&str] = &["config-file", "html", "pager", "preprocessor", "browser"];
    // Short options that take a value (attached or the next word); `H` and `X` and `T` take
    // one attached only.
    const VALUES: &str = "CeELmMPprRsS";
    let ask = |why: String| vec![Effect::Unclassified(why)];
    let mut local = false;
    let mut operands = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        i += 1;
        if w.dynamic && t.starts_with('-') {
            return ask("a word of `man` is known only at run time".into());
        }
        if t == "--" {
            operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or_default();
            if name.is_empty() || RUNS.iter().any(|r| r.starts_with(name)) {
                return ask(format!("`man {t}` runs programs a configuration or an option chooses"));
            }
            if "local-file".starts_with(name) && name.len() >= 2 {
                local = true;
            }
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            for (at, c) in t[1..].char_indices() {
                match c {
                    'C' | 'H' | 'P' | 'p' => {
                        return ask(format!("`man -{c}` runs programs a configuration or an option chooses"));
                    }
                    'l' => local = true,
                    c if VALUES.contains(c) => {
                        if at + 2 == t.len() {
                            i += 1;
                        }
                        break;
                    }
                    'T' | 'X' => break,
                    _ => {}
                }
            }
            continue;
        }
        operands.push(w.clone());
    }
    let mut out = Vec::new();
    for page in operands {
        if page.text == "-" {
            return ask("`man -l -` formats a page read from its input".into());
        }
        if local || page.text.contains('/') || !page.is_plain() {
            out.push(Effect::Executes(page));
        }
    }
    out
}

/// apt's `-o KEY=VALUE` can set hooks that run commands (`APT::Update::Pre-Invoke`,
/// `DPkg::Pre-Invoke`, `Dpkg::Options`, `Dir::Bin::*`), and `-c FILE` reads a configuration
/// that can: both ask.
fn apt(program: &str, args: &[Word]) -> Vec<Effect> {
    for w in args {
        let t = w.text.as_str();
        let short = t.starts_with('-') && !t.starts_with("--") && t[1..].contains(['o', 'c']);
        let long = ["--option", "--config-file"].iter().any(|o| t == *o || t.starts_with(&format!("{o}=")));
        if short || long || w.dynamic {
            return vec![Effect::Unclassified(format!(
                "`{program} {t}` sets configuration that can make apt run commands"
            ))];
        }
    }
    Vec::new()
}
