//! Retrieval quality of `tool_search` on 393 tool specs of real, public MCP servers and 88
//! labelled queries (tests/data/tool_search; the queries were written before any tuning).
//!
//! Recall@5 per query is |relevant ∩ top 5| / min(|relevant|, 5); the figure is the mean over
//! queries. The baseline is plain BM25 as Codex runs it: the `bm25` crate's default English
//! tokenizer over the name, the name with `_` replaced by spaces, the description and the
//! parameter names. Run with `--nocapture` to see both figures and the misses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod baseline;

use baseline::plain_bm25;
use toolshed_core::registry::qualified_name;
use toolshed_core::search::{SearchDoc, SearchIndex};

struct Case {
    query: String,
    relevant: Vec<String>,
}

fn load() -> (Vec<SearchDoc>, Vec<Case>) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tool_search");
    let tools = std::fs::read_to_string(format!("{dir}/tools.tsv")).unwrap();
    let docs = tools
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 4, "{line}");
            SearchDoc {
                name: qualified_name(cols[0], cols[1]),
                original_name: Some(cols[1].to_string()),
                server: Some(cols[0].to_string()),
                description: cols[3].to_string(),
                params: cols[2].split(',').map(str::trim).filter(|p| !p.is_empty()).map(String::from).collect(),
                param_descriptions: Vec::new(),
            }
        })
        .collect();
    let queries = std::fs::read_to_string(format!("{dir}/queries.tsv")).unwrap();
    let cases = queries
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let (query, relevant) = line.split_once('\t').unwrap();
            Case { query: query.to_string(), relevant: relevant.split(',').map(String::from).collect() }
        })
        .collect();
    (docs, cases)
}

fn recall_at_5(cases: &[Case], rank: impl Fn(&str) -> Vec<String>) -> (f64, Vec<String>) {
    let mut total = 0.0;
    let mut misses = Vec::new();
    for case in cases {
        let top = rank(&case.query);
        let top5 = &top[..top.len().min(5)];
        let hit = case.relevant.iter().filter(|r| top5.contains(r)).count();
        let recall = hit as f64 / case.relevant.len().min(5) as f64;
        if recall < 1.0 {
            misses.push(format!("{:.2} {:?} → {:?}", recall, case.query, top5));
        }
        total += recall;
    }
    (total / cases.len() as f64, misses)
}

#[test]
fn dataset_has_300_tools_and_50_queries_with_known_labels() {
    let (docs, cases) = load();
    assert!(docs.len() >= 300, "{}", docs.len());
    assert!(cases.len() >= 50, "{}", cases.len());
    for case in &cases {
        for r in &case.relevant {
            assert!(docs.iter().any(|d| &d.name == r), "unknown label {r}");
        }
    }
}

#[test]
fn toolshed_search_reaches_recall_at_5_of_0_9_and_beats_plain_bm25() {
    let (docs, cases) = load();
    let index = SearchIndex::build(&docs);
    let ours = |q: &str| index.search(q, 5).into_iter().map(|h| docs[h.doc].name.clone()).collect::<Vec<_>>();
    let (ours_recall, ours_misses) = recall_at_5(&cases, ours);
    let (plain_recall, _) = recall_at_5(&cases, plain_bm25(&docs));
    println!("tools: {}, queries: {}", docs.len(), cases.len());
    println!("recall@5 plain BM25 (bm25 crate, Codex-style text): {plain_recall:.3}");
    println!("recall@5 toolshed: {ours_recall:.3}");
    for miss in &ours_misses {
        println!("  miss {miss}");
    }
    assert!(ours_recall >= 0.9, "recall@5 {ours_recall:.3}");
    assert!(ours_recall > plain_recall);
}
