//! Text to search terms: identifiers split the way programmers write them (`snake_case`,
//! `kebab-case`, `dotted.names`, `camelCase`, `HTTPServer`), lowercased, English stop words
//! dropped, Snowball-stemmed; and, for queries, the developer-tool synonyms that bridge how
//! people ask (`PR`, `CI`, `ticket`) and how tools are named (`pull_request`, `workflow_run`,
//! `issue`).

use std::collections::HashMap;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// Words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "the", "of", "to", "in", "on", "for", "with", "and", "or", "is", "are", "be", "it", "its", "this",
    "that", "these", "those", "my", "me", "i", "we", "our", "you", "your", "as", "at", "by", "from", "into", "can",
    "do", "does", "how", "what", "which", "who", "whom", "please", "some", "any", "all", "so", "if", "then", "than",
    "there", "here", "one", "via", "using", "use", "like",
];

/// The rest of the Snowball project's English stop word list (snowballstem.org, `english/stop.txt`),
/// contractions as [`words`] splits them.
#[rustfmt::skip]
const SNOWBALL_STOP_WORDS: &[&str] = &[
    "myself", "ours", "ourselves", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she",
    "her", "hers", "herself", "itself", "they", "them", "their", "theirs", "themselves", "am", "was", "were",
    "been", "being", "have", "has", "had", "having", "did", "doing", "would", "should", "could", "ought",
    "cannot", "but", "because", "until", "while", "about", "against", "between", "through", "during", "before",
    "after", "above", "below", "up", "down", "out", "off", "over", "under", "again", "further", "once", "when",
    "where", "why", "both", "each", "few", "more", "most", "other", "such", "no", "nor", "not", "only", "own",
    "same", "too", "very", "s", "t", "d", "ll", "re", "ve", "m",
];

/// Query words and what they also mean in tool names and descriptions, one `word: also also`
/// per line (`#` comments). Expansions count for less than the words themselves (see
/// [`EXPANSION_WEIGHT`]).
const SYNONYMS: &str = include_str!("data/synonyms.txt");

/// How much a synonym counts compared with a word the user typed.
pub const EXPANSION_WEIGHT: f32 = 0.6;

/// How much what a query's URLs, file names and addresses say counts (see [`hints`]).
pub const HINT_WEIGHT: f32 = 0.5;

/// Common file extensions and what a file of the kind is called.
const EXTENSIONS: &[(&str, &str)] = &[
    ("docx", "word document"),
    ("doc", "word document"),
    ("odt", "document"),
    ("xlsx", "excel spreadsheet workbook sheet"),
    ("xls", "excel spreadsheet workbook sheet"),
    ("ods", "spreadsheet sheet"),
    ("csv", "csv table"),
    ("tsv", "table"),
    ("pptx", "powerpoint presentation slide"),
    ("ppt", "powerpoint presentation slide"),
    ("pdf", "pdf document"),
    ("md", "markdown"),
    ("txt", "text"),
    ("html", "html page"),
    ("png", "image picture"),
    ("jpg", "image picture photo"),
    ("jpeg", "image picture photo"),
    ("gif", "image animation"),
    ("svg", "image vector"),
    ("webp", "image"),
    ("mp4", "video"),
    ("mov", "video"),
    ("mp3", "audio"),
    ("wav", "audio"),
    ("json", "json"),
    ("yaml", "yaml configuration"),
    ("yml", "yaml configuration"),
    ("toml", "configuration"),
    ("xml", "xml"),
    ("sql", "sql query"),
    ("zip", "archive"),
    ("py", "python code"),
    ("js", "javascript code"),
    ("ts", "typescript code"),
    ("rs", "rust code"),
    ("go", "go code"),
    ("java", "java code"),
    ("ipynb", "notebook"),
];

/// Common top-level domains: `word.TLD` is a web address.
const DOMAINS: &[&str] = &["com", "org", "net", "io", "dev", "app", "ai", "co", "edu", "gov", "de", "fr", "uk"];

/// What a query's tokens say without their words: a URL or domain is a web page, a file name
/// says its kind by its extension, a path names files and directories, an address is email.
pub fn hints(query: &str) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    let mut add = |words: &'static str| {
        for w in words.split(' ') {
            if !out.contains(&w) {
                out.push(w);
            }
        }
    };
    for token in query.split_whitespace() {
        let token = token.trim_matches(|c: char| "\"'()[]{},;:!?".contains(c));
        let lower = token.to_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("www.") {
            add("url web page");
            continue;
        }
        if lower.contains('@') && lower.contains('.') && !lower.starts_with('@') {
            add("email address");
            continue;
        }
        let Some((stem_part, ext)) = lower.rsplit_once('.') else {
            if lower.contains('/') && !lower.starts_with('/')
                || lower.starts_with('/') && lower.len() > 1
                || lower.starts_with("~/")
            {
                add("file directory path");
            }
            continue;
        };
        if stem_part.is_empty() || !stem_part.chars().last().is_some_and(char::is_alphanumeric) {
            continue;
        }
        if DOMAINS.contains(&ext) && !stem_part.contains('/') {
            add("url web page site");
        } else if let Some((_, kind)) = EXTENSIONS.iter().find(|(e, _)| *e == ext) {
            add("file");
            add(kind);
        }
    }
    out
}

/// How much a word of a value (quoted text, what comes after "about", "named", ...) counts.
pub const VALUE_WEIGHT: f32 = 0.3;

/// Words after which the rest of the clause is a value: what to look for or name things with.
const VALUE_MARKERS: &[&str] = &[
    "about",
    "mentioning",
    "mention",
    "mentions",
    "containing",
    "contains",
    "saying",
    "says",
    "named",
    "called",
    "titled",
    "regarding",
];

/// Words after which "about" and the like introduce what to act on, not a value.
const OBJECT_AFTER: &[&str] = &["info", "information", "details", "detail", "more", "everything", "anything", "know"];

/// Words that end a value begun by a marker.
const VALUE_ENDS: &[&str] = &["in", "from", "into", "at", "within", "inside", "via", "using", "on"];

/// A query's words split in two: those that say which tool, and those of values (quoted text,
/// and the rest of a clause after a word such as "about" or "named").
pub fn said_and_values(query: &str) -> (Vec<String>, Vec<String>) {
    let (mut said, mut values) = (Vec::new(), Vec::new());
    for (i, part) in query.split(['"', '\u{201c}', '\u{201d}']).enumerate() {
        if i % 2 == 1 {
            values.extend(words(part));
            continue;
        }
        for clause in part.split([',', ';', '(', ')', '!', '?', ':']) {
            // Words of the value so far, once a marker has begun one.
            let mut value: Option<usize> = None;
            let mut content = 0;
            for word in words(clause) {
                // A value has at least one word ("about on-call rotation").
                if value.is_some_and(|n| n > 0) && VALUE_ENDS.contains(&word.as_str()) {
                    value = None;
                }
                if let Some(n) = &mut value {
                    *n += 1;
                    values.push(word);
                } else {
                    // Only after the clause has said what to act on, in two words at least: in
                    // "tell me about the repo" or "details about issue 12", the rest is the object.
                    if VALUE_MARKERS.contains(&word.as_str())
                        && content >= 2
                        && !said.last().is_some_and(|w: &String| OBJECT_AFTER.contains(&w.as_str()))
                    {
                        value = Some(0);
                    }
                    content += usize::from(!is_stop_word(&word));
                    said.push(word);
                }
            }
        }
    }
    (said, values)
}

/// How much the English for a word typed in another language counts.
pub const TRANSLATION_WEIGHT: f32 = 0.9;

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// The synonyms table by key and by the key's stem, so that any form of a word finds them
/// ("deleting", "meetings").
struct Synonyms {
    exact: HashMap<&'static str, Vec<&'static str>>,
    stemmed: HashMap<String, Vec<&'static str>>,
}

/// The entries of [`SYNONYMS`]: (word, what it also means).
fn synonym_entries() -> impl Iterator<Item = (&'static str, Vec<&'static str>)> {
    SYNONYMS.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).filter_map(|line| {
        let (word, also) = line.split_once(':')?;
        Some((word.trim(), also.split_whitespace().collect()))
    })
}

fn synonyms_table() -> &'static Synonyms {
    static TABLE: OnceLock<Synonyms> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut exact = HashMap::new();
        let mut stemmed: HashMap<String, Vec<&'static str>> = HashMap::new();
        for (word, also) in synonym_entries() {
            let by_stem = stemmed.entry(stem(word)).or_default();
            for a in &also {
                if !by_stem.contains(a) {
                    by_stem.push(a);
                }
            }
            exact.insert(word, also);
        }
        Synonyms { exact, stemmed }
    })
}

/// What `word` (lowercase) also means in tools' words, if the table knows it or its stem.
fn synonyms_of(word: &str) -> Option<&'static [&'static str]> {
    let table = synonyms_table();
    table.exact.get(word).or_else(|| table.stemmed.get(&stem(word))).map(Vec::as_slice)
}

/// Splits text into lowercase words at every non-alphanumeric character and inside
/// identifiers: `getJiraIssue` → get, jira, issue; `HTTPServer` → http, server. Digits stay
/// with their letters (`k8s`, `oauth2`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        if run.is_empty() {
            continue;
        }
        let chars: Vec<char> = run.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            // camelCase (aB) or the last capital of an acronym before a word (HTTPServer).
            let boundary = (prev.is_lowercase() || prev.is_ascii_digit()) && cur.is_uppercase()
                || prev.is_uppercase() && cur.is_uppercase() && next_lower;
            if boundary {
                out.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        out.push(chars[start..].iter().collect::<String>().to_lowercase());
    }
    out
}

/// Whether `word` (lowercase) carries no meaning for search.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word) || SNOWBALL_STOP_WORDS.contains(&word)
}

/// The search term for one lowercase word.
pub fn stem(word: &str) -> String {
    stemmer().stem(word).into_owned()
}

/// The terms of a document field: words, minus stop words, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    words(text).into_iter().filter(|w| !is_stop_word(w)).map(|w| stem(&w)).collect()
}

/// A query term with the weight it counts with.
#[derive(Clone, Debug, PartialEq)]
pub struct QueryTerm {
    /// The stemmed term.
    pub term: String,
    /// 1 for a word the user typed (or two typed words written together), less for a synonym.
    pub weight: f32,
    /// Whether the user typed it (counts towards coverage).
    pub typed: bool,
    /// Which query word it stands for: a typed word and its expansions share a group, and a
    /// tool scores only its best match in each group, so many weak expansions never outweigh
    /// one word.
    pub group: u16,
}

/// The terms of a query: its words (stemmed, minus stop words), adjacent pairs written as one
/// word (`on call` → `oncall`, `re run` → `rerun`) when `known` says an index has them,
/// synonyms at reduced weight, the English of other languages' words, and what its URLs and
/// file names say ([`hints`]) when an index has those words. Each term appears once, with its
/// highest weight; a word and its synonyms share a group.
pub fn query_terms(query: &str, known: impl Fn(&str) -> bool) -> Vec<QueryTerm> {
    let (all, values) = said_and_values(query);
    let mut out: Vec<QueryTerm> = Vec::new();
    let mut groups = 0u16;
    let mut push = |term: String, weight: f32, typed: bool, group: u16| match out.iter_mut().find(|t| t.term == term) {
        Some(existing) => {
            if weight > existing.weight {
                existing.weight = weight;
                existing.group = group;
            }
            existing.typed |= typed;
        }
        None => out.push(QueryTerm { term, weight, typed, group }),
    };
    let mut new_group = || {
        groups += 1;
        groups - 1
    };
    for pair in all.windows(2) {
        let word = format!("{}{}", pair[0], pair[1]);
        let joined = stem(&word);
        let also = synonyms_of(&word);
        if !known(&joined) && also.is_none() {
            continue;
        }
        let group = new_group();
        if known(&joined) {
            push(joined, 1.0, true, group);
        }
        for extra in also.into_iter().flatten() {
            push(stem(extra), EXPANSION_WEIGHT, false, group);
        }
    }
    for word in &all {
        if is_stop_word(word) {
            continue;
        }
        let group = new_group();
        push(stem(word), 1.0, true, group);
        if let Some(also) = synonyms_of(word) {
            for extra in also {
                push(stem(extra), EXPANSION_WEIGHT, false, group);
            }
        }
    }
    // Values: words that say what to look for or what to write, not which tool.
    for word in &values {
        if is_stop_word(word) {
            continue;
        }
        let group = new_group();
        push(stem(word), VALUE_WEIGHT, false, group);
    }
    // Words of other languages: their English, as if typed.
    for english in super::lexicon::translate(query) {
        for word in english.split(' ') {
            let group = new_group();
            push(stem(word), TRANSLATION_WEIGHT, true, group);
        }
    }
    // What its URLs, file names and addresses say.
    for hint in hints(query) {
        let term = stem(hint);
        if known(&term) {
            let group = new_group();
            push(term, HINT_WEIGHT, false, group);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_on_case_separators_and_acronyms() {
        assert_eq!(words("create_pull_request"), ["create", "pull", "request"]);
        assert_eq!(words("getJiraIssue"), ["get", "jira", "issue"]);
        assert_eq!(words("API-post-search"), ["api", "post", "search"]);
        assert_eq!(words("HTTPServer.listen"), ["http", "server", "listen"]);
        assert_eq!(words("k8s oauth2Token"), ["k8s", "oauth2", "token"]);
        assert_eq!(words("  --  "), Vec::<String>::new());
    }

    #[test]
    fn terms_are_stemmed_without_stop_words() {
        assert_eq!(terms("Lists the running workflows"), ["list", "run", "workflow"]);
    }

    #[test]
    fn urls_file_names_paths_and_addresses_say_what_they_are() {
        assert_eq!(hints("open https://example.com/a in the browser"), ["url", "web", "page"]);
        assert_eq!(hints("summarise example.org"), ["url", "web", "page", "site"]);
        assert_eq!(hints("read budget.xlsx"), ["file", "excel", "spreadsheet", "workbook", "sheet"]);
        assert_eq!(hints("list ~/projects"), ["file", "directory", "path"]);
        assert_eq!(hints("mail bob@example.com"), ["email", "address"]);
        assert!(hints("list open issues, e.g. bugs.").is_empty());
    }

    #[test]
    fn query_terms_expand_synonyms_at_lower_weight_and_join_known_pairs() {
        let q = query_terms("open a PR on call", |t| t == "oncal");
        let find = |t: &str| q.iter().find(|x| x.term == t).cloned();
        assert_eq!(find("pr").map(|t| t.weight), Some(1.0));
        assert_eq!(find("pull").map(|t| (t.weight, t.typed)), Some((EXPANSION_WEIGHT, false)));
        assert_eq!(find("oncal").map(|t| t.typed), Some(true));
        assert!(find("a").is_none());
    }

    #[test]
    fn the_synonyms_table_is_well_formed() {
        let lines = SYNONYMS.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
        assert_eq!(lines.clone().count(), synonym_entries().count(), "every entry is `word: also ...`");
        let mut seen = std::collections::HashSet::new();
        let mut problems = Vec::new();
        for (word, also) in synonym_entries() {
            if !seen.insert(word) {
                problems.push(format!("`{word}` is listed twice"));
            }
            if words(word) != [word] || is_stop_word(word) {
                problems.push(format!("`{word}` is not one lowercase word that is looked up"));
            }
            if also.is_empty() {
                problems.push(format!("`{word}` says nothing"));
            }
            for a in also {
                if words(a) != [a] || is_stop_word(a) {
                    problems.push(format!("`{word}`: `{a}` is not one lowercase word that tools are indexed by"));
                }
                if stem(a) == stem(word) {
                    problems.push(format!("`{word}`: `{a}` is the same word"));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn any_form_of_a_word_finds_its_synonyms() {
        let q = query_terms("deleting the meetings", |_| false);
        let find = |t: &str| q.iter().find(|x| x.term == t).map(|x| x.weight);
        assert_eq!(find("remov"), Some(EXPANSION_WEIGHT));
        assert_eq!(find("event"), Some(EXPANSION_WEIGHT));
        // Two typed words that a synonym names together ("get rid").
        let q = query_terms("get rid of the branch", |_| false);
        assert!(q.iter().any(|x| x.term == "delet" && !x.typed), "{q:?}");
    }

    #[test]
    fn quoted_text_and_what_follows_about_or_named_are_values() {
        let (said, values) =
            said_and_values("post \"deploy done\" in #ops, then find pages about on-call rotation in the ENG space");
        assert_eq!(said, ["post", "in", "ops", "then", "find", "pages", "about", "in", "the", "eng", "space"]);
        assert_eq!(values, ["deploy", "done", "on", "call", "rotation"]);
        // Until the clause has said what to act on, "about" introduces it.
        for object in ["tell me about the acme/api repo", "show me details about issue 12", "info about PR 5"] {
            assert!(said_and_values(object).1.is_empty(), "{object}");
        }
        let (said, values) = said_and_values("make a folder called build/out; list it");
        assert_eq!(said, ["make", "a", "folder", "called", "list", "it"]);
        assert_eq!(values, ["build", "out"]);
        // Typographic quotes too, and a quote left open runs to the end.
        let (_, values) = said_and_values("search for \u{201c}Q3 plan\u{201d} and \"open");
        assert_eq!(values, ["q3", "plan", "open"]);
        // A value counts for less than the words that say which tool, and never as typed.
        let q = query_terms("send \"hello\" to the team", |_| false);
        let hello = q.iter().find(|x| x.term == "hello").unwrap();
        assert_eq!((hello.weight, hello.typed), (VALUE_WEIGHT, false));
    }
}
