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
pub const EXPANSION_WEIGHT: f32 = 0.8;

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

/// Words after which the rest of the clause is a name or a text: "a branch named hotfix", "a
/// message saying hi".
const NAME_MARKERS: &[&str] = &["named", "called", "titled", "saying", "says"];

/// Words after which the rest of the clause is a topic, when the clause searches or writes
/// ([`SEARCH_OR_WRITE`]): "find pages about on-call", "post a note about the outage".
const TOPIC_MARKERS: &[&str] =
    &["about", "mentioning", "mention", "mentions", "containing", "contains", "regarding", "concerning"];

/// Verbs (as stems) whose object's topic is a value. Elsewhere "about" may introduce the object
/// itself ("check the status about the deployment"), so its words count in full.
const SEARCH_OR_WRITE: &[&str] = &[
    "search", "find", "look", "lookup", "locat", "queri", "grep", "filter", "post", "send", "write", "draft", "compos",
    "email", "repli", "comment", "tweet", "publish", "announc", "notifi", "tell", "remind", "ask",
];

/// Words after which "about" and the like introduce what to act on, not a value.
const OBJECT_AFTER: &[&str] = &["info", "information", "details", "detail", "more", "everything", "anything", "know"];

/// Words that end a value begun by a marker: a place the tool acts in, or the next request.
const VALUE_ENDS: &[&str] =
    &["in", "from", "into", "at", "within", "inside", "via", "using", "on", "and", "then", "but", "also"];

/// Quotation marks: an opening one and the marks that close it. A mark opens a quote only where a
/// word may start and closes it only where one may end (see [`opens`] and [`closes`]), so that
/// inch marks (`5" x 7"`) and apostrophes (`don't`, `users' files`, `'80s`) quote nothing.
const QUOTES: &[(char, &[char])] = &[
    ('"', &['"']),
    ('\'', &['\'']),
    ('\u{201c}', &['\u{201d}', '\u{201c}']),
    ('\u{201d}', &['\u{201d}']),
    ('\u{201e}', &['\u{201c}', '\u{201d}']),
    ('\u{2018}', &['\u{2019}']),
    ('\u{201a}', &['\u{2018}', '\u{2019}']),
    ('\u{ab}', &['\u{bb}']),
    ('\u{bb}', &['\u{ab}', '\u{bb}']),
    ('\u{300c}', &['\u{300d}']),
    ('\u{300e}', &['\u{300f}']),
];

/// Words written with a leading apostrophe ('em, rock 'n' roll, 'til): not quotes.
const ELISIONS: &[&str] = &["em", "n", "til", "cause", "bout", "tis", "twas", "round", "ere"];

/// Whether `c` belongs to a script written without spaces between words (Chinese, Japanese,
/// Korean), where a quotation mark touches the words around it.
fn unspaced(c: char) -> bool {
    super::lexicon::is_cjk(c) || matches!(c, '\u{ac00}'..='\u{d7af}')
}

/// Whether `c` continues a word: a mark next to one is an apostrophe or an inch mark.
fn in_word(c: char) -> bool {
    c.is_alphanumeric() && !unspaced(c)
}

/// Whether a quotation mark after `before` (None: the query's start) and before `after` can open a
/// quote: not inside a word or after a number (`don't`, `5"`); for a single quote, not an
/// elision (`'80s`, `'em`, rock `'n'` roll); for `»` (German »Zitat«), followed by the quoted text
/// rather than a space (`Settings » Account`).
fn opens(mark: char, before: Option<char>, after: &str) -> bool {
    if matches!(mark, '\u{300c}'..='\u{300f}') {
        return true;
    }
    if before.is_some_and(in_word) {
        return false;
    }
    match mark {
        '\'' | '\u{2018}' => {
            let word: String =
                after.chars().take(6).take_while(|c| c.is_alphanumeric()).collect::<String>().to_lowercase();
            !after.starts_with(|c: char| c.is_ascii_digit()) && !ELISIONS.contains(&word.as_str())
        }
        '\u{bb}' => after.starts_with(|c: char| !c.is_whitespace()),
        _ => true,
    }
}

/// Whether a quotation mark before `after` (None: the query's end) can close a quote: not inside
/// a word (`don't` has no closing mark).
fn closes(after: Option<char>) -> bool {
    !after.is_some_and(in_word)
}

/// A query split in two: the words that say which tool, and those of values (quoted text, and
/// the rest of a clause after a word such as "named", or "about" in a search), with the query's
/// text outside quotes.
#[derive(Debug, Default, PartialEq)]
pub struct QueryParts {
    /// Words that say which tool.
    pub said: Vec<String>,
    /// Words of values: what to look for, or to name or write something with.
    pub values: Vec<String>,
    /// The query without its quoted text.
    pub unquoted: String,
}

/// Splits `query` into [`QueryParts`]. A quotation mark left open quotes nothing (`5" wide`).
pub fn said_and_values(query: &str) -> QueryParts {
    let mut parts = QueryParts::default();
    let mut rest = query;
    // Marks found with no closing mark after them: none will be found later either, so each
    // kind of mark is looked past once and the split stays linear in the query's length.
    let mut unclosed: Vec<char> = Vec::new();
    while !rest.is_empty() {
        let open = rest.char_indices().find_map(|(i, c)| {
            let (_, closers) = QUOTES.iter().find(|(o, _)| *o == c)?;
            let inner = i + c.len_utf8();
            let before = query[..query.len() - rest.len() + i].chars().next_back();
            if unclosed.contains(&c) || !opens(c, before, &rest[inner..]) {
                return None;
            }
            let close = rest[inner..].char_indices().find_map(|(j, m)| {
                let at = inner + j;
                (closers.contains(&m) && closes(rest[at + m.len_utf8()..].chars().next())).then_some(at)
            });
            if close.is_none() {
                unclosed.push(c);
            }
            Some((i, inner, close?))
        });
        let Some((at, inner, close)) = open else {
            clauses(rest, &mut parts);
            parts.unquoted.push_str(rest);
            break;
        };
        clauses(&rest[..at], &mut parts);
        parts.unquoted.push_str(&rest[..at]);
        parts.unquoted.push(' ');
        parts.values.extend(words(&rest[inner..close]));
        let closer = rest[close..].chars().next().map_or(0, char::len_utf8);
        rest = &rest[close + closer..];
    }
    parts
}

/// Adds the words of unquoted `text` to `parts`, clause by clause.
fn clauses(text: &str, parts: &mut QueryParts) {
    for clause in text.split([',', ';', '(', ')', '!', '?', ':']) {
        // Words of the value so far, once a marker has begun one.
        let mut value: Option<usize> = None;
        let (mut content, mut searches) = (0, false);
        let mut last: Option<String> = None;
        for word in words(clause) {
            // A value ends where the request goes on. It does not begin there either ("what the
            // log says in the pipeline"), except with "on" ("about on-call rotation").
            if value.is_some_and(|n| n > 0 || word != "on") && VALUE_ENDS.contains(&word.as_str()) {
                value = None;
            }
            if let Some(n) = &mut value {
                *n += 1;
                parts.values.push(word);
                continue;
            }
            let names = NAME_MARKERS.contains(&word.as_str()) && content >= 1;
            // "about" begins a topic only in a search or a text to write, once the clause has
            // said what to act on: in "details about issue 12" the rest is the object.
            let topic = TOPIC_MARKERS.contains(&word.as_str())
                && searches
                && content >= 2
                && !last.as_deref().is_some_and(|w| OBJECT_AFTER.contains(&w));
            if names || topic {
                value = Some(0);
            }
            if !is_stop_word(&word) {
                content += 1;
                searches |= SEARCH_OR_WRITE.contains(&stem(&word).as_str());
            }
            last = Some(word.clone());
            parts.said.push(word);
        }
    }
}

/// How much the English for a word typed in another language counts.
pub const TRANSLATION_WEIGHT: f32 = 0.9;

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// The synonyms table by key, and its keys by stem (to find a key from another form of it).
struct Synonyms {
    exact: HashMap<&'static str, Vec<&'static str>>,
    keys_by_stem: HashMap<String, Vec<&'static str>>,
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
        let mut keys_by_stem: HashMap<String, Vec<&'static str>> = HashMap::new();
        for (word, also) in synonym_entries() {
            keys_by_stem.entry(stem(word)).or_default().push(word);
            exact.insert(word, also);
        }
        Synonyms { exact, keys_by_stem }
    })
}

/// Whether `word` is `key` with an English inflection: `deletes`, `deleted`, `deleting`,
/// `meetings`, `replies`, `dropped`. Words that merely share a stem (`production` and
/// `product`, `organization` and `organize`) are not.
fn inflects(word: &str, key: &str) -> bool {
    const ENDINGS: &[&str] = &["s", "es", "ed", "d", "ing", "er", "ers"];
    if let Some(rest) = word.strip_prefix(key) {
        if ENDINGS.contains(&rest) {
            return true;
        }
        // A doubled last consonant: `drop` → `dropped`, `dropping`.
        let mut rest = rest.chars();
        if rest.next().is_some_and(|c| key.ends_with(c) && !"aeiou".contains(c)) {
            return ["ed", "ing"].contains(&rest.as_str());
        }
        return false;
    }
    let swap = |from: char, to: &[&str]| {
        key.strip_suffix(from).and_then(|base| word.strip_prefix(base)).is_some_and(|rest| to.contains(&rest))
    };
    swap('e', &["ing", "ed", "er", "ers"]) || swap('y', &["ies", "ied"])
}

/// What `word` (lowercase) also means in tools' words, if the table has it or, inflected, one
/// of its keys.
pub(crate) fn synonyms_of(word: &str) -> Option<&'static [&'static str]> {
    let table = synonyms_table();
    if let Some(also) = table.exact.get(word) {
        return Some(also);
    }
    let inflected = table.keys_by_stem.get(&stem(word)).and_then(|keys| keys.iter().find(|key| inflects(word, key)));
    // An acronym's plural, which stemming leaves alone: `mrs`, `vms`.
    let key = inflected.copied().or_else(|| word.strip_suffix('s').filter(|k| table.exact.contains_key(k)))?;
    table.exact.get(key).map(Vec::as_slice)
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
            // An acronym's plural stays one word: `PRs`, `URLs`, `getMRs`.
            let plural = chars.get(i + 1) == Some(&'s') && i + 2 == chars.len();
            let boundary = (prev.is_lowercase() || prev.is_ascii_digit()) && cur.is_uppercase()
                || prev.is_uppercase() && cur.is_uppercase() && next_lower && !plural;
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
    static ALL: OnceLock<std::collections::HashSet<&'static str>> = OnceLock::new();
    ALL.get_or_init(|| STOP_WORDS.iter().chain(SNOWBALL_STOP_WORDS).copied().collect()).contains(word)
}

/// The search term for one lowercase word.
pub fn stem(word: &str) -> String {
    stemmer().stem(word).into_owned()
}

/// Stems remembered by word: indexing stems the same few thousand words over and over.
#[derive(Default)]
pub struct Stems(HashMap<String, String>);

impl Stems {
    /// [`stem`], remembered.
    pub fn stem(&mut self, word: &str) -> String {
        if let Some(stem) = self.0.get(word) {
            return stem.clone();
        }
        let stemmed = stem(word);
        self.0.insert(word.to_string(), stemmed.clone());
        stemmed
    }

    /// The terms of a document field: words, minus stop words, stemmed.
    pub fn terms(&mut self, text: &str) -> Vec<String> {
        words(text).into_iter().filter(|w| !is_stop_word(w)).map(|w| self.stem(&w)).collect()
    }
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
    terms_of(query, &said_and_values(query), known)
}

/// [`query_terms`] of `query` split by [`said_and_values`] already.
pub fn terms_of(query: &str, parts: &QueryParts, known: impl Fn(&str) -> bool) -> Vec<QueryTerm> {
    let QueryParts { said: all, values, unquoted } = parts;
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
        // A contraction's letter never makes a word with the next ("don't ask" is not `task`),
        // and two stop words make one only through the synonyms table ("is down" → `isdown`,
        // "to do" → `todo`), never as a word tools happen to contain.
        if pair.iter().any(|w| w.chars().count() == 1) {
            continue;
        }
        let word = format!("{}{}", pair[0], pair[1]);
        let joined = stem(&word);
        // A phrasal verb inflected: "rolled out" is `rollout`, "putting off" `putoff`.
        let also = synonyms_of(&word).or_else(|| synonyms_of(&format!("{}{}", stem(&pair[0]), pair[1])));
        let known = |t: &str| !pair.iter().all(|w| is_stop_word(w)) && known(t);
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
    for word in all {
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
    for word in values {
        if is_stop_word(word) {
            continue;
        }
        let group = new_group();
        push(stem(word), VALUE_WEIGHT, false, group);
    }
    // Words of other languages: their English, as if typed.
    for english in super::lexicon::translate(unquoted) {
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
        assert_eq!(
            words("my PRs and URLs, getMRs, HTTPServers"),
            ["my", "prs", "and", "urls", "get", "mrs", "http", "servers"]
        );
    }

    #[test]
    fn terms_are_stemmed_without_stop_words() {
        assert_eq!(Stems::default().terms("Lists the running workflows"), ["list", "run", "workflow"]);
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
    fn inflections_are_told_from_words_that_only_share_a_stem() {
        for (word, key) in [
            ("deletes", "delete"),
            ("deleted", "delete"),
            ("deleting", "delete"),
            ("meetings", "meeting"),
            ("replies", "reply"),
            ("dropped", "drop"),
            ("pushes", "push"),
            ("containers", "container"),
        ] {
            assert!(inflects(word, key), "{word} {key}");
        }
        for (word, key) in
            [("production", "product"), ("organization", "organize"), ("settings", "set"), ("important", "import")]
        {
            assert!(!inflects(word, key), "{word} {key}");
        }
        assert_eq!(synonyms_of("products"), synonyms_of("product"));
        assert_ne!(synonyms_of("products"), synonyms_of("production"));
    }

    #[test]
    fn any_form_of_a_word_finds_its_synonyms() {
        let q = query_terms("deleting the meetings", |_| false);
        let find = |t: &str| q.iter().find(|x| x.term == t).map(|x| x.weight);
        assert_eq!(find("remov"), Some(EXPANSION_WEIGHT));
        assert_eq!(find("event"), Some(EXPANSION_WEIGHT));
        // An acronym's plural.
        assert!(query_terms("open MRs", |_| false).iter().any(|x| x.term == "merg"));
        // Two stop words join only through the table; a contraction's letter never joins.
        assert!(query_terms("slack is down", |_| false).iter().any(|x| x.term == "outag"));
        assert!(query_terms("my to do list", |_| false).iter().any(|x| x.term == "task"));
        assert!(!query_terms("how to", |t| t == "howto").iter().any(|x| x.term == "howto"));
        assert!(!query_terms("don't ask", |t| t == "task").iter().any(|x| x.term == "task"));
        // A phrasal verb, inflected.
        for q in ["we rolled out the fix", "putting off the review", "called off the meeting"] {
            let terms = query_terms(q, |_| false);
            assert!(
                terms.iter().any(|x| !x.typed && ["deploy", "reschedul", "cancel"].contains(&x.term.as_str())),
                "{q}: {terms:?}"
            );
        }
        // Two typed words that a synonym names together ("get rid").
        let q = query_terms("get rid of the branch", |_| false);
        assert!(q.iter().any(|x| x.term == "delet" && !x.typed), "{q:?}");
    }

    #[test]
    fn quoted_text_and_what_follows_about_or_named_are_values() {
        let split = |q: &str| {
            let parts = said_and_values(q);
            (parts.said, parts.values)
        };
        let (said, values) =
            split("post \"deploy done\" in #ops, then find pages about on-call rotation in the ENG space");
        assert_eq!(said, ["post", "in", "ops", "then", "find", "pages", "about", "in", "the", "eng", "space"]);
        assert_eq!(values, ["deploy", "done", "on", "call", "rotation"]);
        let (said, values) = split("make a folder called build/out; list it");
        assert_eq!(said, ["make", "a", "folder", "called", "list", "it"]);
        assert_eq!(values, ["build", "out"]);
        // A value ends where the next request begins.
        let (said, values) = split("create a github repo called my-app and push the code");
        assert_eq!(values, ["my", "app"]);
        assert!(said.contains(&"push".to_string()), "{said:?}");
        // Typographic, German, French and Japanese quotes; a quote left open quotes nothing.
        assert_eq!(split("search for \u{201c}Q3 plan\u{201d} and \"open").1, ["q3", "plan"]);
        assert_eq!(split("suche \u{201e}Rechnung\u{201c} in Gmail und sende sie").1, ["rechnung"]);
        assert_eq!(split("cherche \u{ab} facture \u{bb} dans Gmail").1, ["facture"]);
        assert_eq!(split("\u{300c}請求書\u{300d}を検索").1, ["請求書"]);
        assert!(split("resize the image to 5\" wide and upload it to s3").1.is_empty());
        // Single quotes quote, apostrophes and inch marks do not.
        assert_eq!(split("commit with message 'don't panic' then push").1, ["don", "t", "panic"]);
        assert_eq!(split("rename the sheet \u{2018}Q3\u{2019} and the users' files").1, ["q3"]);
        assert_eq!(split("suche \u{201a}Rechnung\u{2018} in Gmail").1, ["rechnung"]);
        assert!(split("print a 5\" x 7\" photo of the team's board").1.is_empty());
        assert!(split("don't touch the users' files, it's Bob's").1.is_empty());
        assert!(split("open Settings \u{bb} Account \u{bb} Security \u{ab} back").1.is_empty());
        assert_eq!(split("suche \u{bb}Rechnung\u{ab} in Gmail").1, ["rechnung"]);
        assert_eq!(split("s\u{f6}k \u{201d}faktura\u{201d} i Gmail").1, ["faktura"]);
        // Where words are not spaced, quotes touch them.
        assert_eq!(split("搜索\u{201c}发票\u{201d}的邮件").1, ["发票"]);
        assert_eq!(split("Gmailで\"請求書\"を検索").1, ["請求書"]);
        assert_eq!(split("\"청구서\"를 검색해 줘").1, ["청구서"]);
        // After punctuation or a dash a quote opens; spaces inside it are allowed.
        assert_eq!(split("search for \"invoice\",\"receipt\" in gmail").1, ["invoice", "receipt"]);
        assert_eq!(split("send a message\u{2014}\"deploy done\"\u{2014}to #ops").1, ["deploy", "done"]);
        assert_eq!(split("search \" invoice \" in gmail").1, ["invoice"]);
        // Elisions are not quotes.
        for elision in [
            "find songs from the '80s in the users' playlist",
            "get 'em from the users' folder",
            "play rock 'n' roll",
            "search \u{2018}80s hits and the users\u{2019} files",
        ] {
            assert!(split(elision).1.is_empty(), "{elision}");
        }
        // A value does not begin where one ends.
        assert!(split("check what the build log says in the ci pipeline").1.is_empty());
        // Until the clause has said what to act on, or when it neither searches nor writes,
        // "about" introduces the object.
        for object in [
            "tell me about the acme/api repo",
            "show me details about issue 12",
            "info about PR 5",
            "check the status about the kubernetes deployment",
            "list recent updates about the open pull requests",
        ] {
            assert!(split(object).1.is_empty(), "{object}");
        }
        // A value counts for less than the words that say which tool, and never as typed; the
        // words of other languages inside quotes are values too.
        let q = query_terms("send \"hello\" to the team", |_| false);
        let hello = q.iter().find(|x| x.term == "hello").unwrap();
        assert_eq!((hello.weight, hello.typed), (VALUE_WEIGHT, false));
        assert_eq!(said_and_values("find \"supprimer\" in the docs").unquoted, "find   in the docs");
    }
}
