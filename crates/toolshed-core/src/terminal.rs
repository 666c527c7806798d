//! Text from a model, a tool or a server shown on a terminal: control sequences made visible.
//!
//! A terminal acts on escape sequences in what it prints: OSC 52 writes the clipboard, OSC 8
//! hides a link's target, CSI sequences move the cursor to overwrite what was printed (a prompt
//! that asks about one command while showing another), and bidirectional overrides reorder text
//! (Trojan Source). Whatever toolshed prints to a terminal that it did not write itself goes
//! through [`visible`]; JSON output stays exact (JSON escapes C0 controls itself).

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character except newline and tab written as a visible escape:
/// `\e` for ESC, `\r`, `\a`, `\b`, `\x7f`, `\x01`, ...; C1 controls (U+0080–U+009F, which some
/// terminals read as 8-bit CSI/OSC) and bidirectional formatting characters as `\u{…}`.
/// Borrowed when nothing needed escaping.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
            continue;
        }
        match c {
            '\x1b' => out.push_str("\\e"),
            '\r' => out.push_str("\\r"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0b' => out.push_str("\\v"),
            '\x0c' => out.push_str("\\f"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// A file name as one line of a listing: [`visible`], and newlines and tabs written as `\n`
/// and `\t` too, so that a name cannot fake lines of its own (`deleted a\ndeleted b`).
pub fn visible_name(name: &str) -> Cow<'_, str> {
    if !name.contains(['\n', '\t']) {
        return visible(name);
    }
    Cow::Owned(visible(name).replace('\n', "\\n").replace('\t', "\\t"))
}

/// [`visible_name`] of a path (bytes that are not UTF-8 as `U+FFFD`).
pub fn visible_path(path: &std::path::Path) -> String {
    visible_name(&path.to_string_lossy()).into_owned()
}

fn needs_escape(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        c if c.is_control() => true,
        // Bidirectional embeddings, overrides and isolates; the invisible separators around them.
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}' => true,
        // Characters that show as nothing or as a blank yet are text (a name, an identifier in
        // code, hidden instructions in tag characters): zero-width space, word joiner and the
        // invisible operators, the byte-order mark, soft hyphen, Hangul fillers, tags. Joiners
        // inside words and emoji (U+200C, U+200D) stay.
        '\u{200b}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{00ad}' | '\u{180e}' | '\u{034f}' => true,
        '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}' | '\u{17b4}' | '\u{17b5}' => true,
        '\u{e0000}'..='\u{e007f}' => true,
        _ => false,
    }
}

/// `text` as one word of a POSIX shell, for a command line a person copies: as it is when it
/// holds nothing a shell would read, else in single quotes.
pub fn shell_word(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_name_stays_on_its_line() {
        assert!(matches!(visible_name("plain name.txt"), Cow::Borrowed(_)));
        assert_eq!(visible_name("new\nline\tand\x1b[2J"), "new\\nline\\tand\\e[2J");
    }

    #[test]
    fn control_sequences_become_visible_and_text_stays() {
        assert!(matches!(visible("plain ✓ text\n\twith tabs"), Cow::Borrowed(_)));
        assert_eq!(visible("A\x1b]52;c;cHduZWQ=\x07B"), "A\\e]52;c;cHduZWQ=\\aB");
        assert_eq!(visible("ok\rrm -rf /"), "ok\\rrm -rf /");
        assert_eq!(visible("\x1b[2K\x1b[1A"), "\\e[2K\\e[1A");
        assert_eq!(visible("a\u{9b}31mb"), "a\\u{9b}31mb");
        assert_eq!(visible("x\u{202e}gnp.exe"), "x\\u{202e}gnp.exe");
        assert_eq!(visible("\x00\x7f"), "\\x00\\x7f");
        assert_eq!(visible("a\u{3164}b\u{200b}c\u{e0041}"), "a\\u{3164}b\\u{200b}c\\u{e0041}");
        assert!(matches!(visible("family 👨\u{200d}👩"), Cow::Borrowed(_)));
    }

    #[test]
    fn shell_words_are_quoted_only_where_a_shell_would_read_them() {
        assert_eq!(shell_word("/home/u/proj-1"), "/home/u/proj-1");
        assert_eq!(shell_word("/home/u/my proj"), "'/home/u/my proj'");
        assert_eq!(shell_word("/a/it's"), "'/a/it'\\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }
}
