//! Words as the shell sees them: quotes removed, escapes decoded (`\x`, `"..."`, `$'...'`),
//! brace expansion (`r{m,} x` runs `rm r x`), and whether a word's value is only known at run
//! time (an expansion, a substitution, file-name matching, `~user`).

/// One word of a command, unquoted.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Word {
    /// The text (for a dynamic word: the text as written where its value is unknown).
    pub text: String,
    /// Contains an expansion or substitution: its value is not known before running.
    pub dynamic: bool,
    /// Has unquoted file-name matching characters (`*`, `?`, `[`): the shell may replace it with
    /// the names of files.
    pub glob: bool,
    /// Its value may begin with any character (it starts with an expansion, a substitution or a
    /// file-name pattern) or split into several words (an unquoted expansion): it may be an
    /// option, or several, of the program it is given to.
    pub open: bool,
}

impl Word {
    /// A word of known or unknown (`dynamic`) value.
    pub fn new(text: impl Into<String>, dynamic: bool) -> Self {
        Word { text: text.into(), dynamic, glob: false, open: dynamic }
    }

    /// A word with the text `text` and the kind of value `like` has.
    pub fn like(like: &Word, text: impl Into<String>) -> Self {
        Word { text: text.into(), ..like.clone() }
    }

    /// A word whose value is exactly `text`.
    pub fn literal(text: impl Into<String>) -> Self {
        Word::new(text, false)
    }

    /// Whether the shell uses exactly this text: no expansion, no file-name matching.
    pub fn is_plain(&self) -> bool {
        !self.dynamic && !self.glob
    }
}

/// How many words one brace expansion may produce before the word counts as unknown.
const MAX_BRACE_WORDS: usize = 256;
/// Words longer than this are not brace-expanded: they count as unknown.
const MAX_BRACE_INPUT: usize = 4096;

/// A piece of a word as written.
#[derive(Clone, Debug, Default)]
pub(super) struct Piece {
    /// Its value (for a dynamic piece, its source text).
    pub text: String,
    /// For an unquoted literal piece, the source text with its backslashes (brace expansion
    /// needs to know which characters were escaped).
    pub raw: String,
    /// Inside quotes: no brace expansion, no file-name matching.
    pub quoted: bool,
    /// An expansion or substitution.
    pub dynamic: bool,
}

impl Piece {
    /// An unquoted literal as written (backslashes still in `raw`).
    pub fn unquoted(raw: &str) -> Self {
        Piece { text: unescape_unquoted(raw), raw: raw.to_string(), quoted: false, dynamic: false }
    }

    /// A quoted literal value.
    pub fn quoted(text: String) -> Self {
        Piece { text, quoted: true, ..Piece::default() }
    }

    /// An expansion or substitution written as `source`.
    pub fn dynamic(source: &str, quoted: bool) -> Self {
        Piece { text: source.to_string(), quoted, dynamic: true, ..Piece::default() }
    }
}

/// The words a sequence of pieces makes (more than one after brace expansion).
pub(super) fn assemble(pieces: &[Piece]) -> Vec<Word> {
    let text: String = pieces.iter().map(|p| p.text.as_str()).collect();
    let mut dynamic = pieces.iter().any(|p| p.dynamic);
    let glob = pieces.iter().any(|p| !p.quoted && !p.dynamic && p.text.contains(['*', '?', '[']));
    if let Some(first) = pieces.first()
        && !first.quoted
        && !first.dynamic
        && first.text.starts_with('~')
        && !(text == "~" || text.starts_with("~/"))
    {
        // `~user`, `~+`, `~-`: a directory known only at run time.
        dynamic = true;
    }
    let open = pieces.first().is_some_and(|p| p.dynamic || (!p.quoted && p.text.starts_with(['*', '?', '['])))
        || pieces.iter().any(|p| p.dynamic && !p.quoted);
    let braces = pieces.iter().any(|p| !p.quoted && !p.dynamic && p.raw.contains('{'));
    if !braces {
        return vec![Word { text, dynamic, glob, open }];
    }
    let mut escaped = String::new();
    for p in pieces {
        if !p.quoted && !p.dynamic {
            escaped.push_str(&p.raw);
        } else {
            // Quoted text is literal: every character escaped, except a newline, which
            // `unescape_unquoted` would take for a line continuation and drop (bash keeps a
            // quoted newline; braces and commas do not care about it).
            for c in p.text.chars() {
                if c != '\n' {
                    escaped.push('\\');
                }
                escaped.push(c);
            }
        }
    }
    match brace_expand(&escaped) {
        Some(expanded) => {
            expanded.into_iter().map(|e| Word { text: unescape_unquoted(&e), dynamic, glob, open }).collect()
        }
        None => vec![Word { text, dynamic: true, glob, open: true }],
    }
}

/// Removes the backslashes of unquoted text: `\x` is `x`, a backslash-newline disappears.
pub(super) fn unescape_unquoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The value of the literal text inside double quotes: a backslash escapes only `$`, `` ` ``,
/// `"`, `\` and newline (which disappears with it).
pub(super) fn unescape_double(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    out.push(next);
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The value of an ANSI-C quoted string (`$'...'`, given without `$'` and `'`) as bash decodes
/// it; `None` when it cannot be decoded (an invalid Unicode escape).
pub(super) fn ansi_c(body: &str) -> Option<String> {
    let chars: Vec<char> = body.chars().collect();
    let mut out = String::with_capacity(body.len());
    let mut i = 0;
    let digits = |from: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut value = 0u32;
        let mut n = 0;
        while n < max
            && let Some(d) = chars.get(from + n).and_then(|c| c.to_digit(radix))
        {
            value = value.saturating_mul(radix).saturating_add(d);
            n += 1;
        }
        (value, n)
    };
    while let Some(&c) = chars.get(i) {
        i += 1;
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = chars.get(i) else {
            out.push('\\');
            break;
        };
        i += 1;
        let decoded = match e {
            'a' => '\x07',
            'b' => '\x08',
            'e' | 'E' => '\x1b',
            'f' => '\x0c',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\x0b',
            '\\' | '\'' | '"' | '?' => e,
            '0'..='7' => {
                let (value, n) = digits(i - 1, 3, 8);
                i += n - 1;
                char::from_u32(value & 0xff)?
            }
            'x' => {
                let (value, n) = digits(i, 2, 16);
                if n == 0 {
                    out.push_str("\\x");
                    continue;
                }
                i += n;
                char::from_u32(value)?
            }
            'u' | 'U' => {
                let (value, n) = digits(i, if e == 'u' { 4 } else { 8 }, 16);
                if n == 0 {
                    out.push('\\');
                    out.push(e);
                    continue;
                }
                i += n;
                char::from_u32(value)?
            }
            'c' => {
                let target = chars.get(i).copied()?;
                i += 1;
                if target == '?' {
                    '\x7f'
                } else if target.is_ascii() {
                    char::from_u32(target.to_ascii_uppercase() as u32 & 0x1f)?
                } else {
                    return None;
                }
            }
            other => {
                out.push('\\');
                out.push(other);
                continue;
            }
        };
        if decoded == '\0' {
            // Bash's strings end at a NUL.
            break;
        }
        out.push(decoded);
    }
    Some(out)
}

/// Bash's brace expansion of `s` (backslash escapes kept, so escaped braces and commas do not
/// count); `None` when it would make too many words.
pub(super) fn brace_expand(s: &str) -> Option<Vec<String>> {
    if s.len() > MAX_BRACE_INPUT {
        return None;
    }
    let mut done = Vec::new();
    // A stack of words still to expand, the next to take last, so results keep bash's order.
    let mut pending: Vec<Vec<char>> = vec![s.chars().collect()];
    let mut steps = 0;
    while let Some(word) = pending.pop() {
        steps += 1;
        if steps > MAX_BRACE_WORDS * 4 {
            return None;
        }
        match first_brace(&word)? {
            None => {
                done.push(word.into_iter().collect::<String>());
                if done.len() > MAX_BRACE_WORDS {
                    return None;
                }
            }
            Some((open, close, alternatives)) => {
                if alternatives.len() + pending.len() + done.len() > MAX_BRACE_WORDS * 2 {
                    return None;
                }
                for alt in alternatives.into_iter().rev() {
                    let mut next = word[..open].to_vec();
                    next.extend(alt);
                    next.extend_from_slice(&word[close + 1..]);
                    pending.push(next);
                }
            }
        }
    }
    Some(done)
}

/// A brace expression: where it opens and closes, and its alternatives.
type Brace = (usize, usize, Vec<Vec<char>>);

/// The first brace expression of `word`; `None` (outside) when one would make too many words.
fn first_brace(word: &[char]) -> Option<Option<Brace>> {
    let mut i = 0;
    while i < word.len() {
        match word[i] {
            '\\' => i += 2,
            '$' if word.get(i + 1) == Some(&'{') => i = matching(word, i + 1).map_or(word.len(), |c| c + 1),
            '{' => {
                if let Some(found) = brace_at(word, i)? {
                    return Some(Some(found));
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    Some(None)
}

/// The index of the `}` closing the `{` at `open`, nested braces and escapes considered.
fn matching(word: &[char], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < word.len() {
        match word[i] {
            '\\' => i += 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The brace expression opening at `open`, if it is one; `None` (outside) when it would make too
/// many words.
fn brace_at(word: &[char], open: usize) -> Option<Option<Brace>> {
    let Some(close) = matching(word, open) else { return Some(None) };
    let inner = &word[open + 1..close];
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            '\\' => i += 1,
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(inner[start..i].to_vec());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if !parts.is_empty() {
        parts.push(inner[start..].to_vec());
        return Some(Some((open, close, parts)));
    }
    let text: String = inner.iter().collect();
    let items = sequence(&text)?;
    Some(items.map(|items| (open, close, items.into_iter().map(|s| s.chars().collect()).collect())))
}

/// The items of a sequence expression (`1..5`, `a..e`, `01..10..3`), if `text` is one; `None`
/// (outside) when it has too many.
fn sequence(text: &str) -> Option<Option<Vec<String>>> {
    let parts: Vec<&str> = text.split("..").collect();
    if !(2..=3).contains(&parts.len()) {
        return Some(None);
    }
    let step: i64 = match parts.get(2).map(|s| s.parse::<i64>()) {
        Some(Ok(s)) => s.checked_abs().unwrap_or(1).max(1),
        Some(Err(_)) => return Some(None),
        None => 1,
    };
    let (a, b) = (parts[0], parts[1]);
    if let (Ok(x), Ok(y)) = (a.parse::<i64>(), b.parse::<i64>()) {
        let count = (x.abs_diff(y) / step.unsigned_abs()) + 1;
        if count > MAX_BRACE_WORDS as u64 {
            return None;
        }
        let width = if [a, b].iter().any(|s| s.trim_start_matches('-').starts_with('0') && s.len() > 1) {
            a.len().max(b.len())
        } else {
            0
        };
        let mut out = Vec::new();
        let mut v = x;
        for _ in 0..count {
            out.push(format!("{v:0width$}"));
            v = if x <= y { v + step } else { v - step };
        }
        return Some(Some(out));
    }
    let (mut ca, mut cb) = (a.chars(), b.chars());
    let (Some(x), None, Some(y), None) = (ca.next(), ca.next(), cb.next(), cb.next()) else { return Some(None) };
    if !x.is_ascii_alphabetic() || !y.is_ascii_alphabetic() {
        return Some(None);
    }
    let (x, y) = (x as i64, y as i64);
    let mut out = Vec::new();
    let mut v = x;
    while (x <= y && v <= y) || (x > y && v >= y) {
        if let Some(c) = u32::try_from(v).ok().and_then(char::from_u32) {
            out.push(c.to_string());
        }
        if out.len() > MAX_BRACE_WORDS {
            return None;
        }
        v = if x <= y { v + step } else { v - step };
    }
    Some(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand(s: &str) -> Vec<String> {
        brace_expand(s).unwrap()
    }

    #[test]
    fn brace_expansion_follows_bash() {
        assert_eq!(expand("{rm,x}"), ["rm", "x"]);
        assert_eq!(expand("r{m,}"), ["rm", "r"]);
        assert_eq!(expand("a{b,c{d,e}}f"), ["abf", "acdf", "acef"]);
        assert_eq!(expand("{a}"), ["{a}"]);
        assert_eq!(expand("\\{a,b}"), ["\\{a,b}"]);
        assert_eq!(expand("{a\\,b}"), ["{a\\,b}"]);
        assert_eq!(expand("${x,y}"), ["${x,y}"]);
        assert_eq!(expand("{1..3}"), ["1", "2", "3"]);
        assert_eq!(expand("{3..1}"), ["3", "2", "1"]);
        assert_eq!(expand("{01..03}"), ["01", "02", "03"]);
        assert_eq!(expand("{1..7..3}"), ["1", "4", "7"]);
        assert_eq!(expand("{a..c}"), ["a", "b", "c"]);
        assert_eq!(expand("{a{b,c}}"), ["{ab}", "{ac}"]);
        assert_eq!(expand("x{,}"), ["x", "x"]);
        assert!(brace_expand("{1..100000}").is_none());
        assert!(brace_expand(&"{a,b}".repeat(20)).is_none());
        assert!(brace_expand(&"{".repeat(3000)).is_some(), "unbalanced braces are literal");
    }

    #[test]
    fn ansi_c_strings_decode_like_bash() {
        assert_eq!(ansi_c("r\\x6d").unwrap(), "rm");
        assert_eq!(ansi_c("\\162\\155").unwrap(), "rm");
        assert_eq!(ansi_c("\\u0072m").unwrap(), "rm");
        assert_eq!(ansi_c("\\U0000006d").unwrap(), "m");
        assert_eq!(ansi_c("a\\'b\\\\").unwrap(), "a'b\\");
        assert_eq!(ansi_c("\\n\\t\\e\\q").unwrap(), "\n\t\x1b\\q");
        assert_eq!(ansi_c("a\\0b").unwrap(), "a", "a NUL ends the string");
        assert_eq!(ansi_c("\\cA\\c?").unwrap(), "\x01\x7f");
        assert_eq!(ansi_c("\\x").unwrap(), "\\x");
        assert!(ansi_c("\\uD800").is_none());
    }

    #[test]
    fn escapes_outside_and_inside_double_quotes() {
        assert_eq!(unescape_unquoted("\\r\\m a\\\nb"), "rm ab");
        assert_eq!(unescape_double("a\\$b\\\"c\\x\\\nd"), "a$b\"c\\xd");
    }

    #[test]
    fn pieces_make_words() {
        let w = assemble(&[Piece::unquoted("r"), Piece::quoted(String::new()), Piece::unquoted("m")]);
        assert_eq!(w, [Word::literal("rm")]);
        let w = assemble(&[Piece::unquoted("r{m,}")]);
        assert_eq!(w, [Word::literal("rm"), Word::literal("r")]);
        let w = assemble(&[Piece::quoted("{rm,x}".into())]);
        assert_eq!(w, [Word::literal("{rm,x}")]);
        let w = assemble(&[Piece::unquoted("/bin/r?")]);
        assert!(w[0].glob && !w[0].is_plain());
        let w = assemble(&[Piece::quoted("/bin/r?".into())]);
        assert!(w[0].is_plain());
        assert!(assemble(&[Piece::unquoted("~root/x")])[0].dynamic);
        assert!(!assemble(&[Piece::unquoted("~/x")])[0].dynamic);
        let w = assemble(&[Piece::unquoted("{a,"), Piece::dynamic("$x", false), Piece::unquoted("}")]);
        assert_eq!(w.len(), 2);
        assert!(w.iter().all(|w| w.dynamic));
    }
}
