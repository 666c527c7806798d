//! `toolshed config schema | show` and `toolshed init`, through the binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn toolshed(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn schema(root: &Path) -> jsonschema::Validator {
    let out = toolshed(root, &["config", "schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let schema: Value = serde_json::from_slice(&out.stdout).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

/// The schema's complaints about a TOML text (after TOML → JSON).
fn errors(validator: &jsonschema::Validator, toml_text: &str) -> Vec<String> {
    let doc = serde_json::to_value(toml::from_str::<toml::Table>(toml_text).unwrap()).unwrap();
    validator.iter_errors(&doc).map(|e| format!("{}: {e}", e.instance_path())).collect()
}

/// Every ```toml block of a Markdown file that is a config example: the info string is `toml`
/// alone or names `toolshed.toml` / `config.toml` (a block naming another file, such as a custom
/// tool's manifest, is not one). Each with the line it starts on.
fn config_examples(file: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut examples = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match &mut current {
            Some(_) if line.trim_start().starts_with("```") => examples.extend(current.take()),
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {
                let Some(info) = line.trim_start().strip_prefix("```toml") else { continue };
                let named = info.trim();
                if named.is_empty() || named.ends_with("toolshed.toml") || named.ends_with("config.toml") {
                    current = Some((n + 1, String::new()));
                }
            }
        }
    }
    examples
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn config_schema_validates_every_example_config_in_the_readme_and_docs_and_rejects_a_misspelled_key() {
    let tmp = tempfile::tempdir().unwrap();
    let validator = schema(tmp.path());
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut checked = 0;
    for file in &files {
        for (line, example) in config_examples(file) {
            let found = errors(&validator, &example);
            assert!(found.is_empty(), "{}:{line}: {found:?}\n{example}", file.display());
            // What the schema accepts, the loader accepts too.
            std::fs::write(tmp.path().join("toolshed.toml"), &example).unwrap();
            let out = toolshed(tmp.path(), &["config", "show"]);
            assert_eq!(out.status.code(), Some(0), "{}:{line}: {}", file.display(), stderr(&out));
            checked += 1;
        }
    }
    assert!(checked >= 8, "only {checked} config examples found in {files:?}");

    let readme = config_examples(&repo().join("README.md"));
    let (_, full) = readme.iter().find(|(_, e)| e.contains("[output]")).unwrap();
    for (right, wrong, at) in [
        ("max_lines", "max_line", "/output"),
        ("model =", "modle =", ""),
        ("edit_tool", "edit_tools", "/agent/review"),
        ("exposure", "exposures", "/mcp/github"),
    ] {
        let misspelled = full.replacen(right, wrong, 1);
        let found = errors(&validator, &misspelled);
        let expected = format!("{at}: Additional properties are not allowed ('{}'", wrong.trim_end_matches(" ="));
        assert!(found.iter().any(|e| e.starts_with(&expected)), "{wrong}: {found:?}");
        // The loader rejects it too, with the file and line.
        std::fs::write(tmp.path().join("toolshed.toml"), &misspelled).unwrap();
        let out = toolshed(tmp.path(), &["config", "show"]);
        assert_eq!(out.status.code(), Some(2), "{wrong}");
        assert!(
            stderr(&out).contains(&format!("unknown field `{}`", wrong.trim_end_matches(" ="))),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn config_show_names_the_file_or_override_each_value_came_from() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let user = root.join(".xdg-config/toolshed/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "model = \"openai/gpt-5.1\"\n[permission]\nbash = \"ask\"\n[env]\npass = [\"A\"]\n").unwrap();
    std::fs::write(
        root.join("toolshed.toml"),
        "[session]\nmax_steps = 7\n[permission]\nbash = { \"git *\" = \"allow\" }\n[env]\npass = [\"B\"]\n[mcp.docs]\nurl = \"http://127.0.0.1:9/mcp\"\nheaders = { Authorization = \"Bearer secret\" }\n",
    )
    .unwrap();
    let out = toolshed(&root, &["config", "show", "-c", "model=local/qwen", "-c", "output.max_lines=10"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out).replace(&root.display().to_string(), "$ROOT");
    insta::assert_snapshot!(text, @r#"
    # Read in this order (later ones win):
    #   user config    $ROOT/.xdg-config/toolshed/config.toml
    #   project        $ROOT/toolshed.toml
    #   override       --config model=local/qwen
    #   override       --config output.max_lines=10

    model = "local/qwen"  # from --config model=local/qwen

    [output]
    max_lines = 10  # from --config output.max_lines=10
    max_bytes = 51200  # default
    spill_max_bytes = 67108864  # default
    spill_dir_max_bytes = 1073741824  # default
    max_blob_bytes = 5242880  # default

    [permission]
    bash."*" = "ask"  # from $ROOT/.xdg-config/toolshed/config.toml
    bash."git *" = "allow"  # from $ROOT/toolshed.toml

    [sandbox]
    allow_unsandboxed = false  # default
    block_network = false  # default

    [mcp.docs]
    url = "http://127.0.0.1:9/mcp"  # from $ROOT/toolshed.toml

    [mcp.docs.headers]
    Authorization = "…"  # from $ROOT/toolshed.toml, hidden; --json shows it

    [tool_search]
    defer_when_share_exceeds = 0.1  # default

    [session]
    max_steps = 7  # from $ROOT/toolshed.toml
    compact_at = 0.85  # default
    snapshot_retention_days = 7  # default

    [env]
    pass = ["A", "B"]  # "A" from $ROOT/.xdg-config/toolshed/config.toml; "B" from $ROOT/toolshed.toml
    "#);

    let out = toolshed(&root, &["config", "show", "--json", "-c", "model=local/qwen"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["config"]["model"], "local/qwen");
    assert_eq!(shown["config"]["mcp"]["docs"]["headers"]["Authorization"], "Bearer secret");
    let kinds: Vec<&str> = shown["layers"].as_array().unwrap().iter().map(|l| l["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user", "project", "override"]);
    let setting = |key: &str| {
        shown["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == serde_json::json!(key.split('.').collect::<Vec<_>>()))
            .cloned()
            .unwrap()
    };
    assert_eq!(setting("session.max_steps")["from"], root.join("toolshed.toml").display().to_string());
    assert_eq!(setting("session.compact_at")["from"], Value::Null);
    assert_eq!(
        setting("permission.1")["value"],
        serde_json::json!({"permission": "bash", "pattern": "git *", "action": "allow"})
    );

    // --config FILE takes the user file's place.
    let other = root.join("other.toml");
    std::fs::write(&other, "model = \"anthropic/claude-sonnet-4-5\"\n").unwrap();
    let out = toolshed(&root, &["config", "show", "-c", other.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(text.contains(&format!("#   --config file  {}\n", other.display())), "{text}");
    assert!(!text.contains(".xdg-config"), "{text}");
}

#[test]
fn config_show_reports_a_broken_file_with_its_line_and_schema_still_works() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("toolshed.toml"), "model = \"a/b\"\n[sesion]\nmax_steps = 3\n").unwrap();
    let out = toolshed(tmp.path(), &["config", "show"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("toolshed.toml:2:"), "{}", stderr(&out));
    assert!(stderr(&out).contains("unknown field `sesion`"), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    // The schema needs no config: it is what helps fix this one.
    let out = toolshed(tmp.path(), &["config", "schema"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn init_writes_a_commented_config_that_loads_and_validates_and_never_overwrites_unasked() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let out = toolshed(root, &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("toolshed config show"), "{}", stdout(&out));
    let written = std::fs::read_to_string(root.join("toolshed.toml")).unwrap();
    assert!(written.starts_with("#:schema ./.toolshed/config.schema.json\n"), "{written}");
    assert!(written.contains("\n# [provider.local]\n"), "{written}");
    // The schema the first line names works offline, and the file validates against it.
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".toolshed/config.schema.json")).unwrap()).unwrap();
    let from_command: Value = serde_json::from_slice(&toolshed(root, &["config", "schema"]).stdout).unwrap();
    assert_eq!(schema, from_command);
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert_eq!(errors(&validator, &written), Vec::<String>::new());
    // (Every example, uncommented, loads and validates: the unit test in src/init.rs.)
    let out = toolshed(root, &["config", "show"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    // A second init changes nothing and says how to go on.
    std::fs::write(root.join("toolshed.toml"), "model = \"mine/x\"\n").unwrap();
    std::fs::write(root.join(".toolshed/config.schema.json"), "{}").unwrap();
    let out = toolshed(root, &["init"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("already exists; nothing was written"), "{}", stderr(&out));
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(root.join("toolshed.toml")).unwrap(), "model = \"mine/x\"\n");
    assert_eq!(std::fs::read_to_string(root.join(".toolshed/config.schema.json")).unwrap(), "{}");
    // --force replaces both; no temporary file is left behind.
    let out = toolshed(root, &["init", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(root.join("toolshed.toml")).unwrap(), written);
    let names: Vec<String> = std::fs::read_dir(root.join(".toolshed"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["config.schema.json"]);
    // A broken config elsewhere does not stop init (it is how one starts over).
    let other = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(other.path().join(".xdg-config/toolshed")).unwrap();
    std::fs::write(other.path().join(".xdg-config/toolshed/config.toml"), "nonsense = 1\n").unwrap();
    let out = toolshed(other.path(), &["init"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}
