//! A BM25F index over tool documents: each tool is four fields (name, server, parameter
//! names, description) with their own weights and length normalisation, so a query word in a
//! tool's name counts for more than the same word deep in a long description.

use std::collections::HashMap;

use super::text::{self, QueryTerm};

/// One searchable tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchDoc {
    /// The tool's name as the model calls it.
    pub name: String,
    /// The tool's name at its source (an MCP server's own name for it), if different.
    pub original_name: Option<String>,
    /// Where it comes from (an MCP server's name), if anywhere in particular.
    pub server: Option<String>,
    /// What it does.
    pub description: String,
    /// Its parameters' names.
    pub params: Vec<String>,
    /// Its parameters' descriptions.
    pub param_descriptions: Vec<String>,
}

#[derive(Clone, Copy)]
enum Field {
    Name,
    Server,
    Params,
    Description,
    ParamDescriptions,
}

const FIELDS: [Field; 5] = [Field::Name, Field::Server, Field::Params, Field::Description, Field::ParamDescriptions];

impl Field {
    /// How much one occurrence in this field counts.
    fn weight(self) -> f32 {
        match self {
            Field::Name => 3.0,
            Field::Server => 1.0,
            Field::Params => 0.8,
            Field::Description => 1.0,
            Field::ParamDescriptions => 0.3,
        }
    }

    /// How strongly a longer-than-average field is discounted (BM25's b).
    fn length_discount(self) -> f32 {
        match self {
            Field::Name => 0.3,
            Field::Server => 0.0,
            Field::Params => 0.5,
            Field::Description => 0.75,
            Field::ParamDescriptions => 0.75,
        }
    }

    fn text(self, doc: &SearchDoc) -> Vec<String> {
        match self {
            // An imported tool's own name; its server prefix belongs to the server field.
            Field::Name => text::terms(doc.original_name.as_deref().unwrap_or(&doc.name)),
            Field::Server => doc.server.as_deref().map(text::terms).unwrap_or_default(),
            Field::Params => doc.params.iter().flat_map(|p| text::terms(p)).collect(),
            Field::Description => text::terms(&doc.description),
            Field::ParamDescriptions => doc.param_descriptions.iter().flat_map(|p| text::terms(p)).collect(),
        }
    }
}

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;

/// How much a document's score grows with the share of typed query words it contains.
const COVERAGE_BOOST: f32 = 0.5;

/// One match: the document's position in the indexed list, and its score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// Index into the documents the index was built from.
    pub doc: usize,
    /// Relevance; higher is better.
    pub score: f32,
}

/// A searchable set of tool documents.
#[derive(Clone, Debug, Default)]
pub struct SearchIndex {
    terms: HashMap<String, u32>,
    /// Per term: (document, saturated weighted term frequency).
    postings: Vec<Vec<(u32, f32)>>,
    idf: Vec<f32>,
    docs: usize,
    /// The documents' words as written (lowercase), by length in characters: what a misspelt
    /// query word is corrected to.
    spellings: HashMap<usize, Vec<(Vec<char>, String)>>,
}

/// How much a corrected spelling counts compared with a word found as typed.
const CORRECTION_WEIGHT: f32 = 0.8;

/// Query words shorter than this are never corrected (too many neighbours).
const CORRECTION_MIN_CHARS: usize = 4;

/// The edit distance allowed for a word of `chars` characters: one edit, two from 8.
fn allowed_edits(chars: usize) -> usize {
    if chars >= 8 { 2 } else { 1 }
}

/// The optimal-string-alignment distance of `a` and `b` (insertions, deletions,
/// substitutions and swaps of neighbours), or `None` once it exceeds `limit`.
fn edit_distance(a: &[char], b: &[char], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let width = b.len() + 1;
    let mut rows = vec![0usize; 3 * width];
    for (j, cell) in rows[..width].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        let (cur, prev, prev2) = ((i % 3) * width, ((i - 1) % 3) * width, ((i + 1) % 3) * width);
        rows[cur] = i;
        let mut best = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (rows[prev + j] + 1).min(rows[cur + j - 1] + 1).min(rows[prev + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(rows[prev2 + j - 2] + 1);
            }
            rows[cur + j] = d;
            best = best.min(d);
        }
        if best > limit {
            return None;
        }
    }
    let d = rows[(a.len() % 3) * width + b.len()];
    (d <= limit).then_some(d)
}

impl SearchIndex {
    /// Indexes `docs`; hits refer to them by position.
    pub fn build(docs: &[SearchDoc]) -> SearchIndex {
        let fielded: Vec<[Vec<String>; 5]> = docs.iter().map(|d| FIELDS.map(|f| f.text(d))).collect();
        let mut average = [0f32; 5];
        for fields in &fielded {
            for (i, terms) in fields.iter().enumerate() {
                average[i] += terms.len() as f32;
            }
        }
        for a in &mut average {
            *a = (*a / docs.len().max(1) as f32).max(1.0);
        }
        let mut index = SearchIndex { docs: docs.len(), ..SearchIndex::default() };
        let mut seen = std::collections::HashSet::new();
        let mut weighted: HashMap<u32, f32> = HashMap::new();
        for (doc, fields) in fielded.iter().enumerate() {
            weighted.clear();
            for (field, terms) in FIELDS.iter().zip(fields) {
                let b = field.length_discount();
                let norm = 1.0 - b + b * terms.len() as f32 / average[*field as usize];
                for term in terms {
                    let next = index.terms.len() as u32;
                    let id = *index.terms.entry(term.clone()).or_insert(next);
                    if id as usize == index.postings.len() {
                        index.postings.push(Vec::new());
                    }
                    *weighted.entry(id).or_default() += field.weight() / norm;
                }
            }
            for (&id, &tf) in &weighted {
                index.postings[id as usize].push((doc as u32, tf * (K1 + 1.0) / (K1 + tf)));
            }
        }
        for doc in docs {
            let written = [doc.original_name.as_deref().unwrap_or(&doc.name), doc.description.as_str()];
            for word in
                written.iter().flat_map(|t| text::words(t)).chain(doc.params.iter().flat_map(|p| text::words(p)))
            {
                if word.chars().count() < CORRECTION_MIN_CHARS || text::is_stop_word(&word) || seen.contains(&word) {
                    continue;
                }
                let term = text::stem(&word);
                if index.terms.contains_key(&term) {
                    seen.insert(word.clone());
                    let chars: Vec<char> = word.chars().collect();
                    index.spellings.entry(chars.len()).or_default().push((chars, term));
                }
            }
        }
        let n = docs.len() as f32;
        index.idf = index
            .postings
            .iter()
            .map(|p| {
                let df = p.len() as f32;
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        index
    }

    /// Number of indexed documents.
    pub fn len(&self) -> usize {
        self.docs
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs == 0
    }

    /// The terms of `query`, as this index sees them (with synonyms and joined pairs, and a
    /// word no tool contains corrected to the closest words that tools do contain).
    pub fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        let mut terms = text::query_terms(query, |t| self.terms.contains_key(t));
        for word in text::words(query) {
            let chars: Vec<char> = word.chars().collect();
            if chars.len() < CORRECTION_MIN_CHARS
                || text::is_stop_word(&word)
                || chars.iter().any(char::is_ascii_digit)
                || self.terms.contains_key(&text::stem(&word))
            {
                continue;
            }
            for term in self.corrections(&chars) {
                if !terms.iter().any(|t| t.term == term) {
                    terms.push(QueryTerm { term, weight: CORRECTION_WEIGHT, typed: true });
                }
            }
        }
        terms
    }

    /// The terms of the indexed words closest to the misspelt `word`: those at the smallest
    /// edit distance allowed, the two most common at most.
    fn corrections(&self, word: &[char]) -> Vec<String> {
        let limit = allowed_edits(word.len());
        let mut best: Vec<(usize, &String)> = Vec::new();
        let mut best_distance = limit + 1;
        for len in word.len().saturating_sub(limit)..=word.len() + limit {
            for (candidate, term) in self.spellings.get(&len).into_iter().flatten() {
                let Some(d) = edit_distance(word, candidate, limit.min(best_distance)) else { continue };
                if d < best_distance {
                    best_distance = d;
                    best.clear();
                }
                if d == best_distance && !best.iter().any(|(_, b)| *b == term) {
                    let df = self.terms.get(term).map_or(0, |&id| self.postings[id as usize].len());
                    best.push((df, term));
                }
            }
        }
        best.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
        best.into_iter().take(2).map(|(_, term)| term.clone()).collect()
    }

    /// Up to `limit` documents matching `query`, best first; documents sharing no term with the
    /// query are never returned.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let terms = self.query_terms(query);
        let typed = terms.iter().filter(|t| t.typed).count().max(1) as f32;
        let mut scores = vec![0f32; self.docs];
        let mut covered = vec![0u16; self.docs];
        for qt in &terms {
            let Some(&id) = self.terms.get(&qt.term) else { continue };
            let idf = self.idf[id as usize];
            for &(doc, tf) in &self.postings[id as usize] {
                scores[doc as usize] += qt.weight * idf * tf;
                if qt.typed {
                    covered[doc as usize] += 1;
                }
            }
        }
        let mut hits: Vec<Hit> = scores
            .iter()
            .zip(&covered)
            .enumerate()
            .filter(|(_, (score, _))| **score > 0.0)
            .map(|(doc, (score, covered))| Hit {
                doc,
                score: score * (1.0 + COVERAGE_BOOST * f32::from(*covered) / typed),
            })
            .collect();
        let limit = limit.min(hits.len());
        if limit == 0 {
            return Vec::new();
        }
        let by_score = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
        hits.select_nth_unstable_by(limit - 1, by_score);
        hits.truncate(limit);
        hits.sort_by(by_score);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(server: &str, tool: &str, params: &[&str], description: &str) -> SearchDoc {
        SearchDoc {
            name: format!("{server}_{tool}"),
            original_name: Some(tool.to_string()),
            server: Some(server.to_string()),
            description: description.to_string(),
            params: params.iter().map(std::string::ToString::to_string).collect(),
            param_descriptions: Vec::new(),
        }
    }

    fn names(index: &SearchIndex, docs: &[SearchDoc], query: &str) -> Vec<String> {
        index.search(query, 3).iter().map(|h| docs[h.doc].name.clone()).collect()
    }

    #[test]
    fn identifier_words_and_synonyms_find_tools() {
        let docs = vec![
            doc("github", "create_pull_request", &["base", "head", "title"], "Open a new pull request."),
            doc("github", "list_workflow_runs", &["owner", "repo"], "List the runs of an Actions workflow."),
            doc("jira", "createJiraIssue", &["projectKey", "summary"], "File a new Jira issue."),
            doc("slack", "slack_post_message", &["channel_id", "text"], "Send a message to a channel."),
        ];
        let index = SearchIndex::build(&docs);
        assert_eq!(names(&index, &docs, "open a PR")[0], "github_create_pull_request");
        assert_eq!(names(&index, &docs, "CI runs")[0], "github_list_workflow_runs");
        assert_eq!(names(&index, &docs, "new ticket")[0], "jira_createJiraIssue");
        assert_eq!(names(&index, &docs, "jira")[0], "jira_createJiraIssue");
    }

    #[test]
    fn no_shared_term_means_no_hit_and_limits_hold() {
        let docs = vec![doc("s", "alpha", &[], "First."), doc("s", "beta", &[], "Second.")];
        let index = SearchIndex::build(&docs);
        assert!(index.search("zebra", 5).is_empty());
        assert_eq!(index.search("alpha beta", 1).len(), 1);
        assert!(index.search("alpha", 0).is_empty());
        assert!(SearchIndex::build(&[]).search("alpha", 3).is_empty());
    }

    #[test]
    fn edit_distance_counts_swaps_as_one_edit_and_stops_at_the_limit() {
        let d = |a: &str, b: &str, limit| {
            edit_distance(&a.chars().collect::<Vec<_>>(), &b.chars().collect::<Vec<_>>(), limit)
        };
        assert_eq!(d("emial", "email", 1), Some(1));
        assert_eq!(d("calender", "calendar", 2), Some(1));
        assert_eq!(d("serch", "search", 1), Some(1));
        assert_eq!(d("naviagte", "navigate", 2), Some(1));
        assert_eq!(d("kitten", "sitting", 1), None);
        assert_eq!(d("kitten", "sitting", 3), Some(3));
        assert_eq!(d("same", "same", 0), Some(0));
    }

    #[test]
    fn a_misspelt_word_finds_what_its_spelling_would() {
        let docs = vec![
            doc("mail", "send_email", &["to", "body"], "Send an email to someone."),
            doc("cal", "list_events", &["calendar"], "List the events of a calendar."),
            doc("web", "navigate", &["url"], "Navigate the browser to a page."),
        ];
        let index = SearchIndex::build(&docs);
        let top = |q: &str| index.search(q, 1).first().map(|h| docs[h.doc].name.clone());
        assert_eq!(top("snd an emial"), Some("mail_send_email".into()));
        assert_eq!(top("calender evnts"), Some("cal_list_events".into()));
        assert_eq!(top("naviagte to localhost"), Some("web_navigate".into()));
        // A word spelt right is never "corrected" into another.
        let terms = index.query_terms("send email");
        assert!(terms.iter().all(|t| t.weight != CORRECTION_WEIGHT), "{terms:?}");
        // Nothing close: nothing added.
        assert!(index.search("zzzzqqq", 5).is_empty());
    }
}
