//! Property tests for the permission wildcard matcher against a regular-expression oracle
//! built the way OpenCode builds its matcher.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use toolshed_core::wildcard::matches;

/// OpenCode's construction: backslashes become `/`, regex metacharacters are escaped, `*` is
/// `.*`, `?` is `.`, a trailing `" *"` is optional, anchored, `.` matches newlines.
fn oracle(text: &str, pattern: &str) -> bool {
    let text = text.replace('\\', "/");
    let pattern = pattern.replace('\\', "/");
    let (body, optional_tail) = match pattern.strip_suffix(" *") {
        Some(body) => (body.to_string(), true),
        None => (pattern.clone(), false),
    };
    let mut re = String::from("(?s)^");
    for c in body.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    if optional_tail {
        re.push_str("( .*)?");
    }
    re.push('$');
    regex::Regex::new(&re).unwrap().is_match(&text)
}

fn alphabet() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![Just('a'), Just('b'), Just('/'), Just(' '), Just('.'), Just('\\'), Just('\n'), Just('é')],
        0..12,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn pattern() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![Just('a'), Just('b'), Just('/'), Just(' '), Just('.'), Just('*'), Just('?'), Just('\\'), Just('é')],
        0..10,
    )
    .prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn agrees_with_the_regex_oracle(text in alphabet(), pat in pattern()) {
        prop_assert_eq!(matches(&text, &pat), oracle(&text, &pat), "text {:?} pattern {:?}", text, pat);
    }

    #[test]
    fn a_literal_matches_exactly_itself(text in alphabet(), other in alphabet()) {
        let literal: String = text.chars().filter(|c| *c != '*' && *c != '?').collect();
        prop_assert!(matches(&literal, &literal));
        if other.replace('\\', "/") != literal.replace('\\', "/") && !literal.ends_with(" *") {
            prop_assert!(!matches(&other, &literal));
        }
    }

    #[test]
    fn star_matches_everything_and_inserted_stars_keep_matches(text in alphabet(), at in 0usize..12) {
        prop_assert!(matches(&text, "*"));
        let chars: Vec<char> = text.chars().filter(|c| *c != '*' && *c != '?').collect();
        let cut = at.min(chars.len());
        let with_star: String = chars[..cut].iter().chain(['*'].iter()).chain(chars[cut..].iter()).collect();
        let plain: String = chars.iter().collect();
        prop_assert!(matches(&plain, &with_star));
    }

    #[test]
    fn a_trailing_space_star_also_matches_the_bare_text(head in "[a-z]{1,6}", tail in "[a-z ]{0,8}") {
        let pat = format!("{head} *");
        prop_assert!(matches(&head, &pat));
        let full = format!("{head} {tail}");
        prop_assert!(matches(&full, &pat));
    }
}
