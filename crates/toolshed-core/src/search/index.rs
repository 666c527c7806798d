//! A BM25F index over tool documents: each tool is six fields (name, server, parameter names,
//! description, its first sentence, parameter descriptions) with their own weights and length
//! normalisation, so a query word in a tool's name counts for more than the same word deep in a
//! long description. On top of the lexical score: how much of the query and of the tool's own
//! name match, whether the query names the tool's server, and how close the two are in meaning
//! by word vectors ([`embed`]).

use std::collections::HashMap;

use super::embed;
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
    Summary,
}

const FIELDS: [Field; 6] =
    [Field::Name, Field::Server, Field::Params, Field::Description, Field::ParamDescriptions, Field::Summary];

impl Field {
    /// How much one occurrence in this field counts.
    fn weight(self) -> f32 {
        match self {
            Field::Name => 3.0,
            Field::Server => 1.0,
            Field::Params => 0.8,
            Field::Description => 1.0,
            Field::ParamDescriptions => 0.3,
            // The first sentence counts once more: it says what the tool does.
            Field::Summary => 1.0,
        }
    }

    /// How much this field's words count in a tool's meaning vector.
    fn meaning_weight(self) -> f32 {
        match self {
            Field::Name => 1.5,
            Field::Params => 0.5,
            Field::Description => 1.0,
            Field::Server | Field::ParamDescriptions | Field::Summary => 0.0,
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
            Field::Summary => 0.5,
        }
    }

    fn text(self, doc: &SearchDoc, stems: &mut text::Stems) -> Vec<String> {
        match self {
            // An imported tool's own name; its server prefix belongs to the server field.
            Field::Name => stems.terms(doc.original_name.as_deref().unwrap_or(&doc.name)),
            Field::Server => doc.server.as_deref().map(|s| stems.terms(s)).unwrap_or_default(),
            Field::Params => doc.params.iter().flat_map(|p| stems.terms(p)).collect(),
            Field::Description => stems.terms(&doc.description),
            Field::ParamDescriptions => doc.param_descriptions.iter().flat_map(|p| stems.terms(p)).collect(),
            Field::Summary => stems.terms(summary(&doc.description)),
        }
    }
}

/// A description's first sentence: what the tool does, before how and when.
fn summary(description: &str) -> &str {
    let end = description
        .char_indices()
        .find(|&(i, c)| c == '\n' || c == '.' && description[i + 1..].starts_with(char::is_whitespace))
        .map_or(description.len(), |(i, _)| i);
    &description[..end]
}

/// How much of a query is read, in characters: a query is a few words, and the rest of a longer
/// one would only cost time (each word's synonyms, pairs and corrections).
pub const MAX_QUERY_CHARS: usize = 2_000;

/// How many different misspelt-looking words of one query are corrected, at most.
const MAX_CORRECTIONS: usize = 16;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;

/// How much a document's score grows with the share of typed query words it contains.
const COVERAGE_BOOST: f32 = 1.0;

/// How much a document's score grows with the share of its own name's words the query says:
/// "star a repository" is `star_repository` more than `list_starred_repositories`.
const NAME_COVERAGE_BOOST: f32 = 0.4;

/// How much a document's score grows when the query names its server ("on github", "in
/// linear"): the user has said where the tool should come from.
const SERVER_BOOST: f32 = 0.5;

/// How much closeness in meaning (a cosine, up to 1) adds to the lexical score (scaled so that
/// the query's best lexical match scores 1).
const MEANING_WEIGHT: f32 = 0.3;

/// How many of the best lexical matches past those asked for get their closeness in meaning
/// added (the rest are out of the running).
const RERANK_MARGIN: usize = 100;

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
    /// Per term: the documents whose server's name has it.
    server_postings: Vec<Vec<u32>>,
    /// Per term: the documents whose own name (without its server's) has it.
    name_postings: Vec<Vec<u32>>,
    /// Per document: how many distinct terms its own name has.
    name_lengths: Vec<u16>,
    /// Per document, `dims` components: its meaning as word vectors (see [`embed`]).
    meanings: Vec<f32>,
    dims: usize,
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
        let mut stems = text::Stems::default();
        let fielded: Vec<[Vec<String>; 6]> = docs.iter().map(|d| FIELDS.map(|f| f.text(d, &mut stems))).collect();
        let mut average = [0f32; 6];
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
            let server = &fields[Field::Server as usize];
            let mut name: Vec<u32> = fields[Field::Name as usize]
                .iter()
                .filter(|t| !server.contains(t))
                .filter_map(|t| index.terms.get(t).copied())
                .collect();
            name.sort_unstable();
            name.dedup();
            index.name_lengths.push(name.len() as u16);
            let mut server: Vec<u32> = server.iter().filter_map(|t| index.terms.get(t).copied()).collect();
            server.sort_unstable();
            server.dedup();
            index.name_postings.resize(index.terms.len(), Vec::new());
            index.server_postings.resize(index.terms.len(), Vec::new());
            for id in name {
                index.name_postings[id as usize].push(doc as u32);
            }
            for id in server {
                index.server_postings[id as usize].push(doc as u32);
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
                // Numbers are never what a misspelt word meant.
                if word.chars().count() < CORRECTION_MIN_CHARS
                    || word.chars().all(|c| c.is_ascii_digit())
                    || text::is_stop_word(&word)
                    || seen.contains(&word)
                {
                    continue;
                }
                let term = stems.stem(&word);
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
        let vectors = embed::vectors();
        index.dims = vectors.dims();
        index.meanings = vec![0.0; docs.len() * index.dims];
        for (doc, fields) in fielded.iter().enumerate() {
            let meaning = &mut index.meanings[doc * index.dims..(doc + 1) * index.dims];
            for (field, terms) in FIELDS.iter().zip(fields) {
                let weight = field.meaning_weight();
                if weight == 0.0 {
                    continue;
                }
                for term in terms {
                    let idf = index.terms.get(term).map_or(0.0, |&id| index.idf[id as usize]);
                    vectors.add(term, weight * idf, meaning);
                }
            }
            embed::normalise(meaning);
        }
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
    /// word no tool contains corrected to the closest words that tools do contain); past
    /// [`MAX_QUERY_CHARS`] characters a query is not read.
    pub fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        let query = query.char_indices().nth(MAX_QUERY_CHARS).map_or(query, |(end, _)| &query[..end]);
        let parts = text::said_and_values(query);
        let mut terms = text::terms_of(query, &parts, |t| self.terms.contains_key(t));
        // Only words that say which tool: a misspelt-looking value ("a branch named deleet") is
        // what the user wants written, not a word to correct. Each word once, and only the
        // first few: a query is a few words, and each correction is a scan of the vocabulary.
        let mut corrected: Vec<String> = Vec::new();
        for word in parts.said {
            let chars: Vec<char> = word.chars().collect();
            if chars.len() < CORRECTION_MIN_CHARS
                || corrected.contains(&word)
                || text::is_stop_word(&word)
                || chars.iter().any(char::is_ascii_digit)
                || self.terms.contains_key(&text::stem(&word))
            {
                continue;
            }
            if corrected.len() == MAX_CORRECTIONS {
                break;
            }
            corrected.push(word);
            let group = terms.iter().map(|t| t.group + 1).max().unwrap_or(0);
            for term in self.corrections(&chars) {
                if !terms.iter().any(|t| t.term == term) {
                    terms.push(QueryTerm { term, weight: CORRECTION_WEIGHT, typed: true, group });
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

    /// The query's meaning vector, if any of its words has one.
    fn meaning(&self, terms: &[QueryTerm]) -> Option<Vec<f32>> {
        let vectors = embed::vectors();
        let n = self.docs as f32;
        let unseen = (1.0 + (n + 0.5) / 0.5).ln();
        let mut q = vec![0f32; self.dims];
        let mut any = false;
        for t in terms.iter().filter(|t| t.typed) {
            let idf = self.terms.get(&t.term).map_or(unseen, |&id| self.idf[id as usize]);
            any |= vectors.add(&t.term, t.weight * idf, &mut q);
        }
        any.then(|| {
            embed::normalise(&mut q);
            q
        })
    }

    /// Up to `limit` documents matching `query`, best first; documents sharing no term with the
    /// query are never returned.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let terms = self.query_terms(query);
        let groups = terms.iter().map(|t| t.group + 1).max().unwrap_or(0);
        let typed = (0..groups).filter(|g| terms.iter().any(|t| t.group == *g && t.typed)).count().max(1) as f32;
        let mut scores = vec![0f32; self.docs];
        let mut covered = vec![0f32; self.docs];
        // Per group, each document's best match (score, weight of the term that gave it).
        let mut best: Vec<(f32, f32)> = vec![(0.0, 0.0); self.docs];
        let mut touched: Vec<u32> = Vec::new();
        for group in 0..groups {
            let members: Vec<(&QueryTerm, u32)> = terms
                .iter()
                .filter(|t| t.group == group)
                .filter_map(|t| self.terms.get(&t.term).map(|&id| (t, id)))
                .collect();
            let head = terms.iter().filter(|t| t.group == group).map(|t| t.weight).fold(0f32, f32::max);
            let typed_group = terms.iter().any(|t| t.group == group && t.typed);
            let coverage = |weight: f32| if typed_group && head > 0.0 { weight / head } else { 0.0 };
            if let [(qt, id)] = members[..] {
                // One term: no best match to pick.
                let (idf, cover) = (self.idf[id as usize], coverage(qt.weight));
                for &(doc, tf) in &self.postings[id as usize] {
                    scores[doc as usize] += qt.weight * idf * tf;
                    covered[doc as usize] += cover;
                }
                continue;
            }
            for (qt, id) in members {
                let idf = self.idf[id as usize];
                for &(doc, tf) in &self.postings[id as usize] {
                    let b = &mut best[doc as usize];
                    if b.0 == 0.0 {
                        touched.push(doc);
                    }
                    let contribution = qt.weight * idf * tf;
                    if contribution > b.0 {
                        *b = (contribution, qt.weight);
                    }
                }
            }
            for doc in touched.drain(..) {
                let (score, weight) = std::mem::take(&mut best[doc as usize]);
                scores[doc as usize] += score;
                covered[doc as usize] += coverage(weight);
            }
        }
        // How much of each tool's own name the query says, and whether it names the tool's
        // server (its product: "on github", "in linear"), where the user wants the tool from.
        let mut said = vec![0f32; self.docs];
        let mut named = vec![false; self.docs];
        for qt in &terms {
            let Some(&id) = self.terms.get(&qt.term) else { continue };
            for &doc in &self.name_postings[id as usize] {
                said[doc as usize] += qt.weight.min(1.0);
            }
            if qt.typed {
                for &doc in &self.server_postings[id as usize] {
                    named[doc as usize] = true;
                }
            }
        }
        for (doc, score) in scores.iter_mut().enumerate() {
            if *score > 0.0 {
                *score *= 1.0 + COVERAGE_BOOST * covered[doc] / typed;
                if self.name_lengths[doc] > 0 {
                    *score *= 1.0 + NAME_COVERAGE_BOOST * said[doc] / f32::from(self.name_lengths[doc]);
                }
                if named[doc] {
                    *score *= 1.0 + SERVER_BOOST;
                }
            }
        }
        let max = scores.iter().copied().fold(0f32, f32::max);
        let mut hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .filter(|(_, score)| **score > 0.0)
            .map(|(doc, score)| Hit { doc, score: score / max })
            .collect();
        let limit = limit.min(hits.len());
        if limit == 0 {
            return Vec::new();
        }
        let by_score = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc));
        // Meaning: the query's vector against each tool's, for the best lexical matches (a
        // tool's closeness adds at most MEANING_WEIGHT; further down it rarely matters, and the
        // work stays bounded however many tools match).
        if let Some(q) = self.meaning(&terms) {
            let head = (limit + RERANK_MARGIN).min(hits.len());
            if head < hits.len() {
                hits.select_nth_unstable_by(head - 1, by_score);
                hits.truncate(head);
            }
            for hit in &mut hits {
                let v = &self.meanings[hit.doc * self.dims..(hit.doc + 1) * self.dims];
                hit.score += MEANING_WEIGHT * q.iter().zip(v).map(|(a, b)| a * b).sum::<f32>().max(0.0);
            }
        }
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
    fn the_tool_whose_name_the_query_says_and_the_server_it_names_come_first() {
        let docs = vec![
            doc("github", "list_starred_repositories", &["owner"], "List the repositories a user has starred."),
            doc("github", "unstar_repository", &["owner", "repo"], "Unstar a repository."),
            doc("github", "star_repository", &["owner", "repo"], "Star a repository."),
            doc("github", "create_issue", &["title"], "Create an issue in a repository."),
            doc("linear", "createIssue", &["title", "teamId"], "Create an issue."),
        ];
        let index = SearchIndex::build(&docs);
        assert_eq!(names(&index, &docs, "star a repository")[0], "github_star_repository");
        assert_eq!(names(&index, &docs, "create an issue in linear")[0], "linear_createIssue");
        assert_eq!(names(&index, &docs, "create an issue on github")[0], "github_create_issue");
    }

    #[test]
    fn closeness_in_meaning_orders_tools_that_match_alike() {
        let docs = vec![
            doc("a", "query", &[], "Run a query against the weather service."),
            doc("b", "query", &[], "Run a query against the billing service."),
        ];
        let index = SearchIndex::build(&docs);
        assert_eq!(names(&index, &docs, "query for rain and snow")[0], "a_query");
        assert_eq!(names(&index, &docs, "query for money owed and payments")[0], "b_query");
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
        assert!(terms.iter().all(|t| !(t.typed && t.weight == CORRECTION_WEIGHT)), "{terms:?}");
        // A value is not corrected: it is what the user wants written.
        assert!(index.query_terms("a calendar named \"evnts\"").iter().all(|t| t.term != "event"));
        // Nothing close: nothing added.
        assert!(index.search("zzzzqqq", 5).is_empty());
    }
}
