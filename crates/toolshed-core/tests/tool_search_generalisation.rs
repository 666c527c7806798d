//! Whether `tool_search` generalises: 2,058 real tool definitions of 90 public MCP servers (their
//! own names, descriptions and input schemas, as each server lists them; sources in
//! tests/data/tool_search_eval/SOURCES.md) and 620 queries written from a user's need — paraphrases,
//! synonyms, other languages, misspellings, identifiers — 208 of them hard (several plausible
//! tools, often of different servers). Each tool is indexed exactly as an attached MCP server's
//! tool is ([`search_doc`]).
//!
//! `queries_fresh.tsv` holds 150 more, written later by someone who had seen neither the index
//! nor these queries; nothing is tuned on them. They are also asked among 33 servers each, the
//! size of the held-out set the goal is measured on (about 500 tools), where fewer look-alike
//! tools compete.
//!
//! Recall@k per query is |relevant ∩ top k| / min(|relevant|, k); a figure is the mean over
//! queries. Run with `--nocapture` for the figures per kind, per half and the misses.
//!
//! The halves keep tuning honest: a query belongs to the half of the servers (by sorted name)
//! that its first relevant tool's server is in. Weights were chosen on the first half's figures;
//! the second half's are the ones that say how the index does on queries it was not tuned on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod baseline;

use std::collections::BTreeMap;

use serde_json::Value;
use toolshed_core::registry::{Source, qualified_name};
use toolshed_core::search::{SearchDoc, SearchIndex, search_doc};
use toolshed_core::tool::ToolSpec;

/// What recall@5 may not fall under (measured: 0.788; the goal is 0.92).
const RECALL_AT_5_FLOOR: f64 = 0.78;
/// ... on the hard queries (measured: 0.636; the goal is 0.85).
const HARD_RECALL_AT_5_FLOOR: f64 = 0.62;
/// What recall@5 over the fresh queries may not fall under (measured: 0.686, and 0.635 before
/// the synonyms table grew).
const FRESH_RECALL_AT_5_FLOOR: f64 = 0.65;
/// ... on their hard queries (measured: 0.537).
const FRESH_HARD_RECALL_AT_5_FLOOR: f64 = 0.48;
/// ... when each is asked among as many servers as the held-out set has (measured: 0.725).
const FRESH_SMALL_RECALL_AT_5_FLOOR: f64 = 0.70;

struct Case {
    query: String,
    relevant: Vec<String>,
    hard: bool,
    kind: String,
}

fn dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tool_search_eval")
}

fn load(queries: &str) -> (Vec<SearchDoc>, Vec<Case>, usize) {
    let mut files: Vec<_> = std::fs::read_dir(dir().join("servers")).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let mut docs = Vec::new();
    for file in &files {
        let server: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let name = server["server"].as_str().unwrap();
        assert!(server["source"].as_str().is_some_and(|s| !s.is_empty()), "{} names no source", file.display());
        for tool in server["tools"].as_array().unwrap() {
            let spec = ToolSpec::new(
                qualified_name(name, tool["name"].as_str().unwrap()),
                tool["description"].as_str().unwrap_or_default(),
                tool["inputSchema"].clone(),
            );
            docs.push(search_doc(&spec, &Source::Mcp(name.to_string())));
        }
    }
    let queries = std::fs::read_to_string(dir().join(queries)).unwrap();
    let cases = queries
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 4, "{line}");
            Case {
                query: cols[0].to_string(),
                relevant: cols[1].split(',').map(str::trim).map(String::from).collect(),
                hard: cols[2] == "1",
                kind: cols[3].to_string(),
            }
        })
        .collect();
    (docs, cases, files.len())
}

fn recall(case: &Case, top: &[String], k: usize) -> f64 {
    let top = &top[..top.len().min(k)];
    let hit = case.relevant.iter().filter(|r| top.contains(r)).count();
    hit as f64 / case.relevant.len().min(k) as f64
}

/// How many servers the held-out set's tools come from.
const HELD_OUT_SERVERS: usize = 33;

/// Recall@1, recall@5 and hard recall@5 when each query is asked of an index of
/// [`HELD_OUT_SERVERS`] servers only, as in the held-out set (about 500 tools): its relevant
/// tools' servers, then others in one fixed pseudo-random order. Fewer servers mean fewer
/// look-alike tools, so these figures say what to expect at that size, not at 2,058 tools.
fn at_held_out_size(docs: &[SearchDoc], cases: &[Case]) -> [f64; 3] {
    let mut servers: Vec<&str> = docs.iter().filter_map(|d| d.server.as_deref()).collect();
    servers.sort_unstable();
    servers.dedup();
    // A fixed shuffle (xorshift64), the same on every run.
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for i in (1..servers.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        servers.swap(i, (state % (i as u64 + 1)) as usize);
    }
    let mut indexes: BTreeMap<Vec<&str>, (Vec<SearchDoc>, SearchIndex)> = BTreeMap::new();
    let (mut r1, mut r5, mut hard5) = (Vec::new(), Vec::new(), Vec::new());
    for case in cases {
        let mut chosen: Vec<&str> = case
            .relevant
            .iter()
            .filter_map(|r| docs.iter().find(|d| &d.name == r).and_then(|d| d.server.as_deref()))
            .collect();
        for server in &servers {
            if chosen.len() >= HELD_OUT_SERVERS {
                break;
            }
            if !chosen.contains(server) {
                chosen.push(server);
            }
        }
        chosen.sort_unstable();
        let (subset, index) = indexes.entry(chosen).or_insert_with_key(|chosen| {
            let subset: Vec<SearchDoc> =
                docs.iter().filter(|d| d.server.as_deref().is_some_and(|s| chosen.contains(&s))).cloned().collect();
            let index = SearchIndex::build(&subset);
            (subset, index)
        });
        let top: Vec<String> = index.search(&case.query, 5).into_iter().map(|h| subset[h.doc].name.clone()).collect();
        r1.push(recall(case, &top, 1));
        r5.push(recall(case, &top, 5));
        if case.hard {
            hard5.push(recall(case, &top, 5));
        }
    }
    [mean(&r1), mean(&r5), mean(&hard5)]
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

#[test]
fn the_evaluation_has_1500_tools_of_60_servers_and_400_queries_with_known_labels() {
    let (docs, mut cases, servers) = load("queries.tsv");
    let fresh = load("queries_fresh.tsv").1;
    assert!(fresh.len() >= 150, "{} fresh queries", fresh.len());
    cases.extend(fresh);
    assert!(servers >= 60, "{servers} servers");
    assert!(docs.len() >= 1500, "{} tools", docs.len());
    assert!(cases.len() >= 400, "{} queries", cases.len());
    assert!(cases.iter().filter(|c| c.hard).count() >= 100);
    let mut names: Vec<&str> = docs.iter().map(|d| d.name.as_str()).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len(), "tool names are unique");
    for case in &cases {
        for r in &case.relevant {
            assert!(names.binary_search(&r.as_str()).is_ok(), "unknown label {r} in {:?}", case.query);
        }
    }
}

#[test]
fn tool_search_recall_over_real_servers_and_queries_written_by_others() {
    let (docs, cases, servers) = load("queries.tsv");
    let (r5, hard5) = report("queries.tsv", &docs, &cases, servers, Misses::Print);
    // Floors under what the index reaches today, so a change that loses recall fails here. The
    // goal is 0.92 overall and 0.85 on the hard queries; the index is not there yet.
    assert!(r5 >= RECALL_AT_5_FLOOR, "recall@5 {r5:.3} fell under {RECALL_AT_5_FLOOR}");
    assert!(hard5 >= HARD_RECALL_AT_5_FLOOR, "hard recall@5 {hard5:.3} fell under {HARD_RECALL_AT_5_FLOOR}");
}

/// The 150 queries of `queries_fresh.tsv`, written by someone who had seen neither the index's
/// code and tables nor the other queries: what recall to expect on queries nobody tuned for.
/// Nothing may be tuned on them; they were measured once before the change that came with them
/// and once after.
#[test]
fn tool_search_recall_over_fresh_queries_nobody_tuned_for() {
    let (docs, cases, servers) = load("queries_fresh.tsv");
    let (r5, hard5) = report("queries_fresh.tsv (nobody tuned for these)", &docs, &cases, servers, Misses::Count);
    let [small1, small5, small_hard5] = at_held_out_size(&docs, &cases);
    println!(
        "queries_fresh.tsv among {HELD_OUT_SERVERS} servers each (the held-out set's size: the relevant tools' servers and others in a fixed random order): recall@1 {small1:.3}  recall@5 {small5:.3}  hard recall@5 {small_hard5:.3}"
    );
    assert!(
        small5 >= FRESH_SMALL_RECALL_AT_5_FLOOR,
        "recall@5 among {HELD_OUT_SERVERS} servers {small5:.3} fell under {FRESH_SMALL_RECALL_AT_5_FLOOR}"
    );
    assert!(r5 >= FRESH_RECALL_AT_5_FLOOR, "recall@5 {r5:.3} fell under {FRESH_RECALL_AT_5_FLOOR}");
    assert!(
        hard5 >= FRESH_HARD_RECALL_AT_5_FLOOR,
        "hard recall@5 {hard5:.3} fell under {FRESH_HARD_RECALL_AT_5_FLOOR}"
    );
}

/// Whether [`report`] lists the queries missed.
#[derive(Clone, Copy)]
enum Misses {
    Print,
    Count,
}

/// Prints recall over `cases` (overall, hard, per kind, per half of the servers, the misses) and
/// returns recall@5 overall and on the hard queries.
fn report(title: &str, docs: &[SearchDoc], cases: &[Case], servers: usize, show: Misses) -> (f64, f64) {
    use std::fmt::Write as _;
    // One print, so that the two tests' reports do not interleave.
    let mut out = format!("== {title}\n");
    let index = SearchIndex::build(docs);
    let mut r1 = Vec::new();
    let mut r5 = Vec::new();
    let mut hard5 = Vec::new();
    let mut hard1 = Vec::new();
    let mut by_kind: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut misses = Vec::new();
    // The split that keeps tuning honest: queries whose first relevant tool's server sorts in
    // the first half of the server names, and the others.
    let mut server_names: Vec<&str> = docs.iter().filter_map(|d| d.server.as_deref()).collect();
    server_names.sort_unstable();
    server_names.dedup();
    let first_half = |case: &Case| {
        let server = docs.iter().find(|d| d.name == case.relevant[0]).and_then(|d| d.server.as_deref()).unwrap();
        server_names.iter().position(|s| *s == server).unwrap() < server_names.len() / 2
    };
    let mut halves: [[Vec<f64>; 3]; 2] = Default::default();
    for case in cases {
        let top: Vec<String> = index.search(&case.query, 5).into_iter().map(|h| docs[h.doc].name.clone()).collect();
        let (at1, at5) = (recall(case, &top, 1), recall(case, &top, 5));
        r1.push(at1);
        r5.push(at5);
        if case.hard {
            hard1.push(at1);
            hard5.push(at5);
        }
        by_kind.entry(case.kind.as_str()).or_default().push(at5);
        let half = &mut halves[usize::from(!first_half(case))];
        half[0].push(at1);
        half[1].push(at5);
        if case.hard {
            half[2].push(at5);
        }
        if at5 < 1.0 {
            misses.push(format!("{at5:.2} [{}] {:?} want {:?} → {:?}", case.kind, case.query, case.relevant, top));
        }
    }
    let plain = baseline::plain_bm25(docs);
    let plain5: Vec<f64> = cases.iter().map(|c| recall(c, &plain(&c.query), 5)).collect();
    writeln!(out, "tools: {} of {servers} servers, queries: {} ({} hard)", docs.len(), cases.len(), hard5.len())
        .unwrap();
    writeln!(out, "plain BM25 (bm25 crate, Codex-style text): recall@5 {:.3}", mean(&plain5)).unwrap();
    writeln!(out, "recall@1 {:.3}  recall@5 {:.3}", mean(&r1), mean(&r5)).unwrap();
    writeln!(out, "hard: recall@1 {:.3}  recall@5 {:.3}", mean(&hard1), mean(&hard5)).unwrap();
    for (kind, values) in &by_kind {
        writeln!(out, "  {kind:<12} recall@5 {:.3} ({} queries)", mean(values), values.len()).unwrap();
    }
    for (name, [at1, at5, hard]) in ["first", "second"].iter().zip(&halves) {
        writeln!(
            out,
            "{name} half of the servers: recall@1 {:.3}  recall@5 {:.3}  hard recall@5 {:.3} ({} queries)",
            mean(at1),
            mean(at5),
            mean(hard),
            at5.len()
        )
        .unwrap();
    }
    match show {
        Misses::Print => {
            for miss in &misses {
                writeln!(out, "  miss {miss}").unwrap();
            }
        }
        Misses::Count => writeln!(
            out,
            "({} queries missed in part or whole; not listed, so that nobody tunes on them)",
            misses.len()
        )
        .unwrap(),
    }
    print!("{out}");
    (mean(&r5), mean(&hard5))
}
