//! Wildcard patterns of permission rules, with OpenCode's semantics so rules migrate one to one:
//! `*` matches any run of characters (crossing `/`), `?` one character, everything else itself,
//! case-sensitively, anchored at both ends; backslashes count as `/`; and a pattern ending in
//! `" *"` also matches the text without that tail (`git *` matches `git`).

/// Whether `text` matches the wildcard `pattern`.
pub fn matches(text: &str, pattern: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    // Fast paths without allocation: rules are mostly plain names or `*`-only globs. On valid
    // UTF-8, `*` and literal characters match the same byte runs as character runs; `?` (one
    // character) and backslashes (read as `/`) take the general path below.
    if !pattern.contains(['?', '\\']) && !text.contains('\\') {
        if !pattern.contains('*') {
            return text == pattern || pattern.strip_suffix(" *").is_some_and(|bare| text == bare);
        }
        let (t, p) = (text.as_bytes(), pattern.as_bytes());
        if let Some(bare) = p.strip_suffix(b" *")
            && glob(t, bare)
        {
            return true;
        }
        return glob(t, p);
    }
    let text: Vec<char> = text.chars().map(slash).collect();
    let pat: Vec<char> = pattern.chars().map(slash).collect();
    if let Some(bare) = pat.strip_suffix(&[' ', '*'])
        && glob(&text, bare)
    {
        return true;
    }
    glob(&text, &pat)
}

fn slash(c: char) -> char {
    if c == '\\' { '/' } else { c }
}

/// Iterative glob matching with single-star backtracking: linear in practice, no recursion.
fn glob<T: Copy + PartialEq + Wild>(text: &[T], pat: &[T]) -> bool {
    let (mut t, mut p) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pat.get(p) {
            Some(&c) if c.is_star() => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c.is_any_one() || c == text[t] => {
                t += 1;
                p += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pat[p..].iter().all(Wild::is_star)
}

/// The wildcard roles of a pattern element: characters in the general path, bytes in the fast
/// one (where `?` never occurs).
trait Wild {
    fn is_star(&self) -> bool;
    fn is_any_one(&self) -> bool;
}

impl Wild for char {
    fn is_star(&self) -> bool {
        *self == '*'
    }
    fn is_any_one(&self) -> bool {
        *self == '?'
    }
}

impl Wild for u8 {
    fn is_star(&self) -> bool {
        *self == b'*'
    }
    fn is_any_one(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn star_crosses_slashes_and_anchors_both_ends() {
        assert!(matches("sub/dir/.env", "*.env"));
        assert!(matches(".env", "*.env"));
        assert!(!matches(".env.example", "*.env"));
        assert!(matches(".env.local", "*.env.*"));
        assert!(matches("src/main.rs", "src/*"));
        assert!(!matches("xsrc/main.rs", "src/*"));
    }

    #[test]
    fn trailing_space_star_matches_the_bare_command() {
        assert!(matches("git", "git *"));
        assert!(matches("git status", "git *"));
        assert!(!matches("gitk", "git *"));
    }

    #[test]
    fn question_mark_and_case_and_backslashes() {
        assert!(matches("a1", "a?"));
        assert!(!matches("a", "a?"));
        assert!(!matches("README", "readme"));
        assert!(matches("dir\\file.txt", "dir/*.txt"));
    }

    #[test]
    fn many_stars_do_not_blow_up() {
        let text = "a".repeat(2000);
        assert!(!matches(&text, &format!("{}b", "*a".repeat(50))));
        assert!(matches(&text, "*a*a*a*"));
    }
}
