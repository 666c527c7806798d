//! Bounds of the analysis: a command line is checked cheaply (one linear pass) before the parser
//! sees it, and the walk counts its work, so no input makes the analysis overflow the stack, use
//! unbounded memory or take long. Past a bound the command is "too complex to analyse" (ask).

use std::time::{Duration, Instant};

/// How deeply parentheses, braces, quotes and substitutions may nest in one line.
pub(super) const MAX_DEPTH: usize = 64;
/// Tokens (words, operators, expansions) of one line handed to the parser.
pub(super) const MAX_TOKENS: usize = 50_000;
/// Tokens of all lines parsed for one command (the command and the strings of `bash -c`,
/// `eval`, `trap`, ...).
pub(super) const MAX_TOTAL_TOKENS: usize = 100_000;
/// Here-documents of one line.
pub(super) const MAX_HEREDOCS: usize = 64;
/// Syntax nodes of one parsed line (a check after parsing, behind the token estimate).
pub(super) const MAX_NODES: usize = 200_000;
/// Bytes of a string split into words by a wrapper (`env -S`).
pub(super) const MAX_SPLIT_STRING: usize = 4096;
/// Simple commands (and views of them) analysed for one command.
pub(super) const MAX_COMMANDS: usize = 10_000;
/// Bytes of all patterns (`bash` requests, primary and secondary) of one command.
pub(super) const MAX_PATTERN_BYTES: usize = 4 << 20;
/// Bytes of nested command lines (`bash -c`, `eval`, `trap`, ...) parsed for one command.
pub(super) const MAX_NESTED_BYTES: usize = 1 << 20;
/// Words looked up on `PATH` (or as files) for one command.
pub(super) const MAX_LOOKUPS: usize = 512;
/// Parts of arguments checked as files the command may show (see `Analyzer::named_files`).
pub(super) const MAX_FILE_CHECKS: usize = 4096;
/// How long the whole analysis may take; a backstop behind the counts above.
pub(super) const TIME_LIMIT: Duration = Duration::from_secs(2);

/// The work an analysis has left.
pub(super) struct Budget {
    pub commands: usize,
    pub pattern_bytes: usize,
    pub nested_bytes: usize,
    pub tokens: usize,
    pub lookups: usize,
    pub file_checks: usize,
    pub deadline: Instant,
}

impl Budget {
    pub fn new() -> Self {
        Budget {
            commands: MAX_COMMANDS,
            pattern_bytes: MAX_PATTERN_BYTES,
            nested_bytes: MAX_NESTED_BYTES,
            tokens: MAX_TOTAL_TOKENS,
            lookups: MAX_LOOKUPS,
            file_checks: MAX_FILE_CHECKS,
            deadline: Instant::now() + TIME_LIMIT,
        }
    }

    /// Takes `n` from `counter`; false (and nothing taken) when there is not that much left.
    pub fn take(counter: &mut usize, n: usize) -> bool {
        match counter.checked_sub(n) {
            Some(left) => {
                *counter = left;
                true
            }
            None => false,
        }
    }

    pub fn out_of_time(&self) -> bool {
        Instant::now() >= self.deadline
    }
}

/// What one pass over a line found.
#[derive(Debug, PartialEq)]
pub(super) struct Scan {
    /// The deepest nesting of parentheses, braces, quotes and substitutions.
    pub depth: usize,
    /// An estimate of the tokens the parser will see (quoted here-documents are one token).
    pub tokens: usize,
    /// Here-documents.
    pub heredocs: usize,
}

/// Why a line that scanned as `scan` is too complex to hand to the parser, if it is.
pub(super) fn too_complex(scan: &Scan, tokens_left: usize) -> Option<String> {
    if scan.depth > MAX_DEPTH {
        return Some(format!("it nests more than {MAX_DEPTH} levels deep"));
    }
    if scan.heredocs > MAX_HEREDOCS {
        return Some(format!("it has more than {MAX_HEREDOCS} here-documents"));
    }
    if scan.tokens > MAX_TOKENS.min(tokens_left) {
        return Some(format!("it has more than {} words and operators", MAX_TOKENS.min(tokens_left)));
    }
    None
}

/// Whether `line` would make tree-sitter-bash's scanner read out of bounds: after `{` (and after
/// `{1..`) it passes the next character to C's `isdigit`, which is undefined for values past 255
/// and crashes the process for large code points (`x{\u{F9265}`). Such a line is not parsed.
pub(super) fn unsafe_for_parser(line: &str) -> bool {
    let b = line.as_bytes();
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'{', &b[at..]) {
        let mut i = at + found + 1;
        at = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if b.get(i..i + 2) == Some(b"..") {
            i += 2;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        // A character past U+00FF starts with a byte of 0xC4 or more.
        if b.get(i).is_some_and(|&c| c >= 0xC4) {
            return true;
        }
    }
    false
}

#[derive(Clone, Copy, PartialEq)]
enum Open {
    Paren,
    Brace,
    Double,
    Backtick,
}

/// One linear pass over `line`: nesting, tokens and here-documents, roughly as bash reads them
/// (single quotes and comments skipped, here-document bodies read after their line).
pub(super) fn scan(line: &str) -> Scan {
    let b = line.as_bytes();
    let mut stack: Vec<Open> = Vec::new();
    let mut out = Scan { depth: 0, tokens: 0, heredocs: 0 };
    // Here-documents whose bodies start after the current line: (delimiter, quoted, strip tabs).
    let mut pending: Vec<(Vec<u8>, bool, bool)> = Vec::new();
    let mut in_word = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let top = stack.last().copied();
        if top == Some(Open::Double) {
            match c {
                b'\\' => i += 1,
                b'"' => {
                    stack.pop();
                }
                b'`' => stack.push(Open::Backtick),
                b'$' => {
                    out.tokens += 1;
                    match b.get(i + 1) {
                        Some(b'(') => {
                            stack.push(Open::Paren);
                            i += 1;
                        }
                        Some(b'{') => {
                            stack.push(Open::Brace);
                            i += 1;
                        }
                        _ => {}
                    }
                }
                _ => {}
            }
        } else {
            match c {
                b'\\' => {
                    i += 1;
                    // A line continuation separates tokens for the parser.
                    if b.get(i) == Some(&b'\n') {
                        in_word = false;
                    } else if !in_word {
                        out.tokens += 1;
                        in_word = true;
                    }
                }
                b'\'' => {
                    // `$'...'` has backslash escapes; '...' has none.
                    let ansi = i > 0 && b[i - 1] == b'$';
                    i += 1;
                    while i < b.len() && b[i] != b'\'' {
                        if ansi && b[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    out.tokens += 1;
                    in_word = true;
                }
                b'"' => {
                    stack.push(Open::Double);
                    out.tokens += 1;
                    in_word = true;
                }
                b'`' => {
                    if top == Some(Open::Backtick) {
                        stack.pop();
                    } else {
                        stack.push(Open::Backtick);
                    }
                    out.tokens += 1;
                }
                b'(' => {
                    stack.push(Open::Paren);
                    out.tokens += 1;
                    in_word = false;
                }
                b')' => {
                    if top == Some(Open::Paren) {
                        stack.pop();
                    }
                    out.tokens += 1;
                    in_word = false;
                }
                b'{' => {
                    stack.push(Open::Brace);
                    out.tokens += 1;
                }
                b'}' => {
                    if top == Some(Open::Brace) {
                        stack.pop();
                    }
                    out.tokens += 1;
                }
                b'#' if !in_word => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'\n' => {
                    in_word = false;
                    out.tokens += 1;
                    if !pending.is_empty() {
                        i = heredoc_bodies(b, i + 1, &mut pending, &mut out.tokens);
                        continue;
                    }
                }
                b' ' | b'\t' | b'\r' => in_word = false,
                b'<' if b.get(i + 1) == Some(&b'<') && b.get(i + 2) != Some(&b'<') => {
                    out.heredocs += 1;
                    out.tokens += 2;
                    let (next, delimiter) = heredoc_start(b, i + 2);
                    pending.push(delimiter);
                    in_word = false;
                    i = next;
                    continue;
                }
                b';' | b'|' | b'&' | b'<' | b'>' => {
                    out.tokens += 1;
                    in_word = false;
                }
                // Operators of arithmetic and tests are tokens of their own there.
                b'+' | b'-' | b'*' | b'/' | b'%' | b'=' | b',' | b':' | b'!' | b'^' | b'?' => {
                    out.tokens += 1;
                    in_word = true;
                }
                b'$' => {
                    out.tokens += 1;
                    in_word = true;
                }
                _ => {
                    if !in_word {
                        out.tokens += 1;
                        in_word = true;
                    }
                }
            }
        }
        out.depth = out.depth.max(stack.len());
        if out.depth > MAX_DEPTH {
            return out;
        }
        i += 1;
    }
    out
}

/// Reads the delimiter after `<<` at `at`: returns where the line continues and the pending
/// here-document (delimiter without quotes, whether it was quoted, whether tabs are stripped).
pub(super) fn heredoc_start(b: &[u8], mut at: usize) -> (usize, (Vec<u8>, bool, bool)) {
    let strip = b.get(at) == Some(&b'-');
    if strip {
        at += 1;
    }
    while matches!(b.get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    let mut delimiter = Vec::new();
    let mut quoted = false;
    while let Some(&c) = b.get(at) {
        match c {
            b' ' | b'\t' | b'\n' | b';' | b'|' | b'&' | b'<' | b'>' | b'(' | b')' => break,
            b'\'' | b'"' => {
                quoted = true;
                at += 1;
                while let Some(&q) = b.get(at) {
                    at += 1;
                    if q == c {
                        break;
                    }
                    delimiter.push(q);
                }
                continue;
            }
            b'\\' => {
                quoted = true;
                if let Some(&next) = b.get(at + 1) {
                    delimiter.push(next);
                }
                at += 2;
                continue;
            }
            // `$'EOF'` and `$"EOF"` are quoted words.
            b'$' if matches!(b.get(at + 1), Some(b'\'' | b'"')) => {}
            _ => delimiter.push(c),
        }
        at += 1;
    }
    (at, (delimiter, quoted, strip))
}

/// Skips the bodies of the pending here-documents starting at `at`; returns where the next
/// line starts. Unquoted bodies count their expansions as tokens.
fn heredoc_bodies(b: &[u8], mut at: usize, pending: &mut Vec<(Vec<u8>, bool, bool)>, tokens: &mut usize) -> usize {
    for (delimiter, quoted, strip) in pending.drain(..) {
        while at < b.len() {
            let end = b[at..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| at + n);
            let mut line = &b[at..end];
            if strip {
                while let [b'\t', rest @ ..] = line {
                    line = rest;
                }
            }
            at = end + 1;
            if line == delimiter.as_slice() {
                break;
            }
            if !quoted {
                *tokens += line.iter().filter(|&&c| c == b'$' || c == b'`').count();
            }
        }
    }
    at.min(b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_measured_across_quotes_and_substitutions() {
        assert_eq!(scan("echo $(echo \"$(id)\")").depth, 3);
        assert_eq!(scan("echo '((((((' \"))\"").depth, 1);
        assert_eq!(scan(&format!("{}true{}", "(".repeat(100), ")".repeat(100))).depth, MAX_DEPTH + 1);
        assert!(too_complex(&scan(&"\"$(echo ".repeat(50_000)), MAX_TOTAL_TOKENS).is_some());
        assert!(too_complex(&scan("echo ok"), MAX_TOTAL_TOKENS).is_none());
        assert!(too_complex(&scan("echo ok"), 1).is_some(), "the budget left counts");
    }

    #[test]
    fn quoted_here_documents_are_one_token() {
        let body = "it's $(not) `run` here\n".repeat(10_000);
        let quoted = scan(&format!("cat > f <<'EOF'\n{body}EOF\necho done"));
        assert!(quoted.tokens < 20, "{quoted:?}");
        assert_eq!(quoted.depth, 0, "the apostrophe in the body opens no quote");
        let unquoted = scan(&format!("cat > f <<EOF\n{body}EOF\n"));
        assert!(unquoted.tokens > 20_000, "{unquoted:?}");
        assert_eq!(scan("cat <<-\tX\n\tbody\n\tX\n").heredocs, 1);
    }

    #[test]
    fn characters_the_parser_cannot_read_safely_are_found() {
        assert!(unsafe_for_parser("x{\u{F9265}"));
        assert!(unsafe_for_parser("echo {12..\u{10000}"));
        assert!(unsafe_for_parser("{\u{100}"));
        assert!(!unsafe_for_parser("echo {é,\u{F9265}}"), "U+00E9 is within C's tables");
        assert!(!unsafe_for_parser("echo \u{F9265} {a,b} 😀"));
    }

    #[test]
    fn tokens_are_counted() {
        assert_eq!(scan("a b c").tokens, 3);
        assert_eq!(scan("a && b").tokens, 4);
        assert!(scan(&"true && ".repeat(10_000)).tokens > 20_000);
        assert!(scan(&format!("echo $(({}1))", "1+".repeat(100_000))).tokens > MAX_TOKENS);
        assert!(scan(&"a\\\n".repeat(100_000)).tokens > MAX_TOKENS);
    }
}
