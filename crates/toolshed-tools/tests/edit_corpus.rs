//! The edit corpus: every case in `edit_corpus.toml` is a file before, one `edit` call, and
//! either the exact file after or the refusal the model must get (with the file untouched).
//! Zero wrong edits is the bar: an edit that should refuse but applies, or applies differently
//! from `after`, fails the run.
//!
//! `CORPUS_SHOW=1 cargo test -p toolshed-tools --test edit_corpus -- --nocapture` prints every
//! outcome.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde::Deserialize;
use toolshed_core::ToolContext;
use toolshed_core::tool::TypedTool;
use toolshed_tools::fs::EditTool;

#[derive(Deserialize)]
struct Corpus {
    case: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default = "default_file")]
    file: String,
    /// The file does not exist before the call.
    #[serde(default)]
    missing: bool,
    #[serde(default)]
    before: String,
    /// Raw bytes of the file before, in hex, for non-UTF-8 cases.
    before_hex: Option<String>,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
    after: Option<String>,
    /// Substrings the refusal must contain.
    refusal: Option<Vec<String>>,
    /// The matcher expected to apply the edit.
    strategy: Option<String>,
}

fn default_file() -> String {
    "file.txt".to_string()
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

enum Outcome {
    Applied,
    Refused,
    Wrong(String),
}

async fn run_case(case: &Case) -> Outcome {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let path = root.join(&case.file);
    let before: Vec<u8> = match &case.before_hex {
        Some(h) => hex(h),
        None => case.before.as_bytes().to_vec(),
    };
    if !case.missing {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &before).unwrap();
    }
    let ctx = ToolContext::standalone(&root, tmp.path().join("data"));
    let args = serde_json::from_value(serde_json::json!({
        "file_path": case.file,
        "old_string": case.old_string,
        "new_string": case.new_string,
        "replace_all": case.replace_all,
    }))
    .unwrap();
    let result = EditTool.run(args, ctx).await;
    let now = std::fs::read(&path).ok();
    if std::env::var_os("CORPUS_SHOW").is_some() {
        match &result {
            Ok(out) => println!("== {} (applied)\n{}\n", case.name, out.text),
            Err(e) => println!("== {} (refused)\n{e}\n", case.name),
        }
    }
    match (&case.after, &case.refusal, result) {
        (Some(after), None, Ok(out)) => {
            let now = String::from_utf8_lossy(now.as_deref().unwrap_or_default()).into_owned();
            if now != *after {
                return Outcome::Wrong(format!("wrong result:\n--- expected\n{after:?}\n--- got\n{now:?}"));
            }
            if let Some(strategy) = &case.strategy {
                let got = out.metadata.get("strategy").and_then(|v| v.as_str()).unwrap_or("none");
                if got != strategy {
                    return Outcome::Wrong(format!("applied by `{got}`, expected `{strategy}`"));
                }
            }
            Outcome::Applied
        }
        (Some(_), None, Err(e)) => Outcome::Wrong(format!("refused but should apply: {e}")),
        (None, Some(needles), Err(e)) => {
            let expected_now = (!case.missing).then_some(before);
            if now != expected_now {
                return Outcome::Wrong(format!("refused but the file changed: {e}"));
            }
            let message = e.to_string();
            if let Some(missing) = needles.iter().find(|n| !message.contains(n.as_str())) {
                return Outcome::Wrong(format!("refusal lacks {missing:?}: {message}"));
            }
            Outcome::Refused
        }
        (None, Some(_), Ok(out)) => Outcome::Wrong(format!("applied but should refuse: {}", out.text)),
        _ => Outcome::Wrong("the case must have exactly one of `after` and `refusal`".into()),
    }
}

#[tokio::test]
async fn edit_corpus_has_no_wrong_edits() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/edit_corpus.toml")).unwrap();
    let corpus: Corpus = toml::from_str(&text).unwrap();
    let (mut applied, mut refused) = (0, 0);
    let mut wrong = Vec::new();
    let mut names = std::collections::HashSet::new();
    for case in &corpus.case {
        assert!(names.insert(case.name.as_str()), "duplicate case name {}", case.name);
        match run_case(case).await {
            Outcome::Applied => applied += 1,
            Outcome::Refused => refused += 1,
            Outcome::Wrong(why) => wrong.push(format!("{}: {why}", case.name)),
        }
    }
    println!("edit corpus: {} cases, {applied} applied, {refused} refused, {} wrong", corpus.case.len(), wrong.len());
    assert!(wrong.is_empty(), "{} wrong:\n\n{}", wrong.len(), wrong.join("\n\n"));
    assert!(corpus.case.len() >= 60, "the corpus needs at least 60 cases, has {}", corpus.case.len());
}
