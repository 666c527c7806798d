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

    /// The terms of `query`, as this index sees them (with synonyms and joined pairs).
    pub fn query_terms(&self, query: &str) -> Vec<QueryTerm> {
        text::query_terms(query, |t| self.terms.contains_key(t))
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
}
