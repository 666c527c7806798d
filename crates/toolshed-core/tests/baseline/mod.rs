//! The plain-BM25 baseline both tool_search evaluations compare against: the `bm25` crate's
//! default English tokenizer over the name, the name with `_` replaced by spaces, the
//! description and the parameter names, as Codex runs it.

use bm25::{Document, Language, SearchEngineBuilder};
use toolshed_core::search::SearchDoc;

/// The top 5 names for a query, by plain BM25 over `docs`.
pub fn plain_bm25(docs: &[SearchDoc]) -> impl Fn(&str) -> Vec<String> {
    let documents: Vec<Document<usize>> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let text = format!("{} {} {} {}", d.name, d.name.replace('_', " "), d.description, d.params.join(" "));
            Document::new(i, text)
        })
        .collect();
    let engine = SearchEngineBuilder::<usize>::with_documents(Language::English, documents).build();
    let names: Vec<String> = docs.iter().map(|d| d.name.clone()).collect();
    move |q: &str| engine.search(q, 5).into_iter().map(|r| names[r.document.id].clone()).collect()
}
