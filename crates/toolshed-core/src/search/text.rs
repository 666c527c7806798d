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
    "there", "here", "get", "one", "via", "using", "use", "like",
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

/// Query words and what they also mean in tool names and descriptions. Expansions count for
/// less than the words themselves (see [`EXPANSION_WEIGHT`]).
const SYNONYMS: &[(&str, &str)] = &[
    ("pr", "pull request"),
    ("prs", "pull request"),
    ("mr", "merge request"),
    ("ci", "workflow run job action pipeline build"),
    ("pipeline", "workflow run"),
    ("build", "workflow run"),
    ("ticket", "issue"),
    ("tickets", "issue"),
    ("bug", "issue"),
    ("repo", "repository"),
    ("repos", "repository"),
    ("k8s", "kubernetes kubectl"),
    ("kube", "kubernetes kubectl"),
    ("db", "database"),
    ("sql", "query database"),
    ("dir", "directory"),
    ("folder", "directory"),
    ("folders", "directory"),
    ("docs", "documentation"),
    ("doc", "documentation"),
    ("delete", "remove"),
    ("remove", "delete"),
    ("rm", "remove delete"),
    ("erase", "delete remove"),
    ("new", "create"),
    ("make", "create"),
    ("open", "create"),
    ("add", "create append"),
    ("append", "add"),
    ("paragraph", "block content text"),
    ("logged", "authenticated account"),
    ("whoami", "authenticated account profile"),
    ("send", "post message"),
    ("msg", "message"),
    ("dm", "message"),
    ("reply", "thread"),
    ("error", "issue"),
    ("errors", "issue"),
    ("exception", "error issue"),
    ("crash", "error issue"),
    ("sprint", "cycle"),
    ("sprints", "cycle"),
    ("env", "environment"),
    ("config", "configuration setting"),
    ("login", "auth"),
    ("auth", "authentication"),
    ("diff", "change compare"),
    ("uncommitted", "unstaged status"),
    ("money", "balance fund"),
    ("funds", "balance"),
    ("chargeback", "dispute"),
    ("chargebacks", "dispute"),
    ("outage", "incident"),
    ("metrics", "prometheus"),
    ("metric", "prometheus"),
    ("url", "page web link"),
    ("website", "web site page"),
    ("site", "web website"),
    ("webpage", "web page"),
    ("people", "user"),
    ("person", "user people entity"),
    ("mail", "email"),
    ("picture", "screenshot image"),
    ("screenshot", "image picture capture"),
    ("image", "picture"),
    ("type", "fill input"),
    ("enter", "type fill input"),
    ("vulnerability", "security alert dependabot"),
    ("vulnerabilities", "security alert dependabot"),
    ("cve", "vulnerability security alert"),
    ("secret", "credential token"),
    ("leaked", "secret"),
    ("leak", "secret"),
    ("password", "secret credential"),
    ("latest", "recent last"),
    ("recent", "latest"),
    ("newest", "latest recent"),
    ("rename", "move"),
    ("recursively", "tree"),
    ("recursive", "tree"),
    ("remember", "memory observation entity"),
    ("memorize", "memory observation entity"),
    ("knowledge", "graph"),
    ("think", "thought thinking"),
    ("reason", "thought thinking"),
    ("step", "thought"),
    ("kill", "stop terminate"),
    ("stop", "cancel"),
    ("abort", "cancel stop"),
    ("restart", "rerun"),
    ("retry", "rerun"),
    ("rollback", "rollout undo"),
    ("frequent", "count"),
    ("revert", "undo rollout"),
    ("status", "state"),
    ("done", "transition status"),
    ("close", "state"),
    ("assign", "assignee"),
    ("label", "tag"),
    ("tags", "label"),
    ("scrape", "extract content"),
    ("crawl", "crawler"),
    ("download", "fetch"),
    ("fetch", "download"),
    ("read", "show view"),
    ("show", "view read"),
    ("view", "show read"),
    ("list", "show"),
    ("look", "search find"),
    ("find", "search"),
    ("search", "find query"),
    ("lookup", "search find"),
    ("run", "execute"),
    ("execute", "run"),
    ("trigger", "run dispatch"),
    ("deploy", "deployment release"),
    ("container", "docker"),
    ("logs", "log"),
    ("alarm", "alert"),
    ("invoice", "bill"),
    ("bill", "invoice"),
    ("payment", "pay"),
    ("subscription", "plan recurring"),
    ("schema", "column type"),
    ("columns", "describe schema"),
    ("column", "describe schema"),
    ("sheet", "table"),
    ("notify", "notification"),
    ("directions", "route"),
    ("route", "directions"),
    ("address", "geocode location"),
    ("nearby", "near local places"),
    ("restaurants", "places local"),
    ("restaurant", "places local"),
    ("weather", "forecast"),
];

/// How much a synonym counts compared with a word the user typed.
pub const EXPANSION_WEIGHT: f32 = 0.4;

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

/// How much the English for a word typed in another language counts.
pub const TRANSLATION_WEIGHT: f32 = 0.9;

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

fn synonyms() -> &'static HashMap<&'static str, Vec<&'static str>> {
    static TABLE: OnceLock<HashMap<&'static str, Vec<&'static str>>> = OnceLock::new();
    TABLE.get_or_init(|| SYNONYMS.iter().map(|(word, also)| (*word, also.split(' ').collect())).collect())
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
    let all = words(query);
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
        let also = synonyms().get(word.as_str());
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
        if let Some(also) = synonyms().get(word.as_str()) {
            for extra in also {
                push(stem(extra), EXPANSION_WEIGHT, false, group);
            }
        }
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
}
