//! GNU sed: which files a `sed` command writes, reads and which commands it runs.
//!
//! The script (`-e SCRIPT`, `--expression=SCRIPT`, or the first operand) is parsed command by
//! command. `w FILE`, `W FILE` and the `s///w FILE` flag write (sed creates the file when it
//! reads the script, whether or not the command is reached); `r FILE` and `R FILE` read;
//! `e COMMAND` runs a shell command; `e` alone and the `s///e` flag run the pattern space, which
//! cannot be known. With `-i`/`--in-place` every file operand is written. A script that does
//! not parse as one of the commands known here, a script read from a file (`-f`), or a script
//! computed at run time cannot be classified.

use super::Word;
use super::programs::{Arg, Effect, Syntax};

/// Long options of sed that take no value.
const FLAGS: &[&str] = &[
    "quiet",
    "silent",
    "debug",
    "follow-symlinks",
    "posix",
    "regexp-extended",
    "separate",
    "sandbox",
    "unbuffered",
    "null-data",
    "zero-terminated",
    "binary",
    "help",
    "version",
];

/// What a sed command line does.
pub(super) fn effects(args: &[Word]) -> Vec<Effect> {
    let syntax = Syntax {
        short_values: "efl",
        short_optional: "i",
        long_values: &["expression", "file", "line-length"],
        abbreviations: true,
    };
    let mut out = Vec::new();
    let mut scripts = Vec::new();
    let mut script_file = false;
    let mut in_place = false;
    let mut operands = Vec::new();
    for arg in syntax.parse(args) {
        match arg {
            Arg::Short('e', Some(script)) => scripts.push(script),
            Arg::Short('f', _) => script_file = true,
            Arg::Short('i', _) => in_place = true,
            Arg::Short('n' | 'r' | 'E' | 's' | 'u' | 'z' | 'b' | 'l', _) => {}
            Arg::Short(c, _) => out.push(Effect::Unclassified(format!("`sed -{c}` is not an option known here"))),
            Arg::Long(name, value) => {
                if syntax.is(&name, "expression") {
                    scripts.extend(value);
                } else if syntax.is(&name, "file") {
                    script_file = true;
                } else if syntax.is(&name, "in-place") {
                    in_place = true;
                } else if !syntax.is(&name, "line-length") && !FLAGS.iter().any(|f| syntax.is(&name, f)) {
                    out.push(Effect::Unclassified(format!("`sed --{name}` is not an option known here")));
                }
            }
            Arg::Operand(w) => operands.push(w),
        }
    }
    if script_file {
        out.push(Effect::Unclassified("sed reads its script from a file (`-f`)".into()));
    } else if scripts.is_empty() {
        if operands.is_empty() {
            return out;
        }
        scripts.push(operands.remove(0));
    }
    if scripts.iter().any(|s| s.dynamic) {
        out.push(Effect::Unclassified("the sed script is computed at run time".into()));
    } else {
        let text = scripts.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n");
        match script_effects(&text) {
            Ok(effects) => out.extend(effects),
            Err(why) => out.push(Effect::Unclassified(format!("the sed script cannot be checked: {why}"))),
        }
    }
    for file in operands.into_iter().filter(|w| w.text != "-") {
        out.push(if in_place { Effect::Writes(file) } else { Effect::Reads(file) });
    }
    out
}

/// The effects of one sed script, or why it cannot be classified.
pub(super) fn script_effects(script: &str) -> Result<Vec<Effect>, String> {
    let mut p = Script { chars: script.chars().collect(), at: 0, out: Vec::new() };
    p.commands()?;
    Ok(p.out)
}

struct Script {
    chars: Vec<char>,
    at: usize,
    out: Vec<Effect>,
}

fn literal(text: String) -> Word {
    Word::literal(text)
}

impl Script {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    /// The rest of the line, without the newline.
    fn rest_of_line(&mut self) -> String {
        let mut text = String::new();
        while let Some(c) = self.next() {
            if c == '\n' {
                break;
            }
            text.push(c);
        }
        text
    }

    /// A label or version argument: up to `;` or the end of the line.
    fn label(&mut self) {
        while let Some(c) = self.peek() {
            if c == ';' || c == '\n' {
                break;
            }
            self.at += 1;
        }
    }

    fn commands(&mut self) -> Result<(), String> {
        let mut depth = 0usize;
        'commands: loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
                self.at += 1;
            }
            let Some(c) = self.peek() else { break };
            if c == '#' {
                self.rest_of_line();
                continue;
            }
            if c == '}' {
                self.at += 1;
                depth = depth.checked_sub(1).ok_or("a `}` closes no block")?;
                self.end_of_command()?;
                continue;
            }
            if self.address()? {
                self.skip_blanks();
                if self.peek() == Some(',') {
                    self.at += 1;
                    self.skip_blanks();
                    if !self.address()? {
                        return Err("an address range has no end".into());
                    }
                }
            }
            self.skip_blanks();
            while self.peek() == Some('!') {
                self.at += 1;
                self.skip_blanks();
            }
            let command = self.next().ok_or("the script ends after an address")?;
            match command {
                '{' => {
                    depth += 1;
                    continue;
                }
                '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
                'l' | 'L' | 'q' | 'Q' => {
                    self.skip_blanks();
                    while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                        self.at += 1;
                    }
                }
                ':' | 'b' | 't' | 'T' | 'v' => self.label(),
                'a' | 'i' | 'c' => {
                    self.text();
                    continue;
                }
                'r' | 'R' => {
                    let file = self.rest_of_line().trim_start().to_string();
                    if file != "/dev/stdin" && !file.is_empty() {
                        self.out.push(Effect::Reads(literal(file)));
                    }
                    continue;
                }
                'w' | 'W' => {
                    self.write_file()?;
                    continue;
                }
                'e' => {
                    let line = self.rest_of_line().trim().to_string();
                    if line.is_empty() {
                        return Err("`e` runs the pattern space as a command".into());
                    }
                    self.out.push(Effect::RunsLine(line));
                    continue;
                }
                's' => {
                    let delimiter = self.delimiter()?;
                    self.regex(delimiter)?;
                    self.replacement(delimiter)?;
                    loop {
                        match self.peek() {
                            Some('g' | 'p' | 'i' | 'I' | 'm' | 'M') => self.at += 1,
                            Some(c) if c.is_ascii_digit() => self.at += 1,
                            Some('e') => return Err("the `e` flag of `s` runs the pattern space as a command".into()),
                            Some('w') => {
                                self.at += 1;
                                self.write_file()?;
                                continue 'commands;
                            }
                            _ => break,
                        }
                    }
                }
                'y' => {
                    let delimiter = self.delimiter()?;
                    self.replacement(delimiter)?;
                    self.replacement(delimiter)?;
                }
                other => return Err(format!("`{other}` is not a command known here")),
            }
            self.end_of_command()?;
        }
        if depth > 0 {
            return Err("a `{` is not closed".into());
        }
        Ok(())
    }

    /// After a command: blanks, then `;`, a newline, `}`, `#` or the end.
    fn end_of_command(&mut self) -> Result<(), String> {
        self.skip_blanks();
        match self.peek() {
            None | Some(';' | '\n' | '}' | '#') => Ok(()),
            Some(c) => Err(format!("unexpected `{c}` after a command")),
        }
    }

    fn write_file(&mut self) -> Result<(), String> {
        let file = self.rest_of_line().trim_start().to_string();
        if file.is_empty() {
            return Err("`w` names no file".into());
        }
        if !matches!(file.as_str(), "/dev/stdout" | "/dev/stderr") {
            self.out.push(Effect::Writes(literal(file)));
        }
        Ok(())
    }

    /// One address, if there is one: a line number (`N`, `first~step`, `+N`, `~N`), `$`, or a
    /// regular expression (`/re/`, `\cREc`) with its `I`/`M` flags.
    fn address(&mut self) -> Result<bool, String> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() || c == '+' || c == '~' => {
                self.at += 1;
                while self.peek().is_some_and(|c| c.is_ascii_digit() || c == '~') {
                    self.at += 1;
                }
                Ok(true)
            }
            Some('$') => {
                self.at += 1;
                Ok(true)
            }
            Some('/') => {
                self.at += 1;
                self.regex('/')?;
                self.regex_flags();
                Ok(true)
            }
            Some('\\') => {
                self.at += 1;
                let delimiter = self.delimiter()?;
                self.regex(delimiter)?;
                self.regex_flags();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.at += 1;
        }
    }

    fn delimiter(&mut self) -> Result<char, String> {
        match self.next() {
            Some('\n' | '\\') | None => Err("a delimiter is missing".into()),
            Some(c) => Ok(c),
        }
    }

    /// A regular expression up to `delimiter`; a delimiter inside a bracket expression
    /// (`[/]`) is literal, as GNU sed reads it.
    fn regex(&mut self, delimiter: char) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("a regular expression is not terminated".into()),
                Some('\\') => {
                    self.next().ok_or("a regular expression is not terminated")?;
                }
                Some(c) if c == delimiter => return Ok(()),
                Some('[') => self.bracket()?,
                Some(_) => {}
            }
        }
    }

    /// The rest of a bracket expression after its `[`.
    fn bracket(&mut self) -> Result<(), String> {
        if self.peek() == Some('^') {
            self.at += 1;
        }
        if self.peek() == Some(']') {
            self.at += 1;
        }
        loop {
            match self.next() {
                None => return Err("a bracket expression is not closed".into()),
                Some(']') => return Ok(()),
                Some('[') if matches!(self.peek(), Some(':' | '.' | '=')) => {
                    let kind = self.next().unwrap_or(':');
                    loop {
                        match self.next() {
                            None => return Err("a character class is not closed".into()),
                            Some(c) if c == kind && self.peek() == Some(']') => {
                                self.at += 1;
                                break;
                            }
                            Some(_) => {}
                        }
                    }
                }
                Some(_) => {}
            }
        }
    }

    /// A replacement (or `y` part) up to `delimiter`, backslash escapes included; a newline
    /// must be escaped.
    fn replacement(&mut self, delimiter: char) -> Result<(), String> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("a replacement is not terminated".into()),
                Some('\\') => {
                    self.next().ok_or("a replacement is not terminated")?;
                }
                Some(c) if c == delimiter => return Ok(()),
                Some(_) => {}
            }
        }
    }

    /// The text of `a`, `i` or `c`: one line (GNU's `a text`) or, after `a\`, the lines up to
    /// one that does not end in a backslash.
    fn text(&mut self) {
        self.skip_blanks();
        if self.peek() == Some('\\') {
            self.at += 1;
            if self.peek() == Some('\n') {
                self.at += 1;
            }
        }
        loop {
            let mut backslashes = 0;
            loop {
                match self.next() {
                    None => return,
                    Some('\n') => break,
                    Some('\\') => backslashes += 1,
                    Some(_) => backslashes = 0,
                }
            }
            if backslashes % 2 == 0 {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(parts: &[&str]) -> Vec<Word> {
        parts.iter().map(|t| Word::literal(*t)).collect()
    }

    fn check(parts: &[&str]) -> Vec<Effect> {
        effects(&words(parts))
    }

    fn w(t: &str) -> Word {
        literal(t.to_string())
    }

    fn unclassified(effects: &[Effect]) -> bool {
        effects.iter().any(|e| matches!(e, Effect::Unclassified(_)))
    }

    #[test]
    fn read_only_scripts_only_read_their_files() {
        for script in [
            "1,5p",
            "s/a/b/g",
            "s/a/b/2p",
            "s|/usr|/opt|gI",
            "s/[/]/x/",
            "s/[]/]/x/;s/[[:alpha:]/]/y/",
            "/start/,/end/{s/x/y/;p}",
            "1!G;h;$!d",
            ":a;N;$!ba;s/\\n/ /g",
            "$a\\\nlast line",
            "1i hello; w not-a-file",
            "y/abc/xyz/",
            "0~2d",
            "/x/I,+3 p",
            "\\%a%p",
            "# comment\n=",
            "l 40;q 3",
        ] {
            let effects = check(&["-n", script, "a.txt"]);
            assert_eq!(effects, vec![Effect::Reads(w("a.txt"))], "{script}");
        }
    }

    #[test]
    fn writes_and_commands_are_found() {
        assert_eq!(check(&["-n", "w pwn2.txt", "a.txt"])[0], Effect::Writes(w("pwn2.txt")));
        assert_eq!(check(&["1W out;p", "a.txt"])[0], Effect::Writes(w("out;p")));
        assert_eq!(check(&["s/a/b/w out", "a.txt"])[0], Effect::Writes(w("out")));
        assert_eq!(check(&["-e", "s/a/b/gw out", "a.txt"])[0], Effect::Writes(w("out")));
        assert_eq!(check(&["--expression=p;w x", "a.txt"])[0], Effect::Writes(w("x")));
        assert_eq!(check(&["1e rm -rf src", "a.txt"])[0], Effect::RunsLine("rm -rf src".into()));
        assert_eq!(check(&["r /etc/passwd", "a.txt"])[0], Effect::Reads(w("/etc/passwd")));
        assert!(check(&["s/a/b/w /dev/stdout", "a.txt"]).iter().all(|e| !matches!(e, Effect::Writes(_))));
        assert_eq!(
            check(&["-i", "s/a/b/", "a.txt", "b.txt"]),
            [Effect::Writes(w("a.txt")), Effect::Writes(w("b.txt"))]
        );
        assert_eq!(check(&["-ni.bak", "p", "a.txt"])[0], Effect::Writes(w("a.txt")));
        assert_eq!(check(&["--in-pl", "p", "a.txt"])[0], Effect::Writes(w("a.txt")));
    }

    #[test]
    fn what_cannot_be_read_is_unclassified() {
        for parts in [
            &["s/a/b/e", "a.txt"][..],
            &["1e", "a.txt"],
            &["-f", "script.sed", "a.txt"],
            &["--file=script.sed", "a.txt"],
            &["k", "a.txt"],
            &["s/a/b", "a.txt"],
            &["{p", "a.txt"],
            &["s/x/a\nw pwn/", "a.txt"],
            &["p x", "a.txt"],
            &["-Z", "p", "a.txt"],
            &["--frobnicate", "p", "a.txt"],
        ] {
            assert!(unclassified(&check(parts)), "{parts:?}");
        }
        let dynamic = vec![Word::new("$S", true), w("a.txt")];
        assert!(unclassified(&effects(&dynamic)));
    }
}
