//! The `skill` tool through the chain: its description lists the skills, loading one returns
//! its instructions and the files beside it, permissions use the skill name as pattern.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use support::{call, executor};
use toolshed_core::permission::{Action, Rule, Ruleset};
use toolshed_core::registry::{PermissionHook, Registry, View};
use toolshed_tools::skill;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A worktree with two good skills (one with files beside it) and one broken skill.
fn worktree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(
        &root.join(".claude/skills/pdf-forms/SKILL.md"),
        "---\nname: pdf-forms\ndescription: >-\n  Fill in PDF forms from JSON data. Use when the user\n  asks to fill, complete or check a PDF form.\nlicense: MIT\n---\n\n# Filling PDF forms\n\n1. Run `scripts/fields.py FORM.pdf` to list the fields.\n2. Write the values as JSON, following `reference/format.md`.\n3. Run `scripts/fill.py FORM.pdf values.json out.pdf`.\n",
    );
    write(&root.join(".claude/skills/pdf-forms/scripts/fields.py"), "print('fields')\n");
    write(&root.join(".claude/skills/pdf-forms/scripts/fill.py"), "print('fill')\n");
    write(&root.join(".claude/skills/pdf-forms/reference/format.md"), "# Format\n");
    write(&root.join(".claude/skills/pdf-forms/.hidden"), "not listed\n");
    write(&root.join(".claude/skills/pdf-forms/scripts/__pycache__/fill.pyc"), "not listed\n");
    write(
        &root.join(".toolshed/skills/release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes from the git log since the last tag.\n---\nCollect `git log $(git describe --tags --abbrev=0)..HEAD` and group by type.\n",
    );
    write(&root.join(".opencode/skills/Broken_Skill/SKILL.md"), "---\nname: Broken_Skill\ndescription: x\n---\n");
    tmp
}

fn registry_for(root: &Path) -> (Registry, skill::Skills) {
    let found = skill::discover_in(&skill::search_dirs(root, root, &[]));
    let mut registry = Registry::new();
    skill::register(&mut registry, &found);
    (registry, found)
}

fn redact(text: &str, root: &Path) -> String {
    text.replace(&root.display().to_string(), "$ROOT")
}

#[test]
fn the_description_lists_the_valid_skills_and_broken_ones_are_reported_elsewhere() {
    let tmp = worktree();
    let (registry, found) = registry_for(tmp.path());
    let spec = registry.get("skill").unwrap().spec();
    assert_eq!(spec.permission, "skill");
    insta::assert_snapshot!("description", spec.description);
    insta::assert_json_snapshot!("parameters", spec.parameters);
    assert_eq!(found.problems.len(), 1);
    insta::assert_snapshot!(redact(&found.problems[0].to_string(), tmp.path()), @r#"$ROOT/.opencode/skills/Broken_Skill/SKILL.md:2: `name` "Broken_Skill" is not allowed: use lowercase letters a-z and digits, with single hyphens only between them (e.g. "broken-skill")"#);
}

#[tokio::test]
async fn loading_a_skill_returns_its_instructions_and_the_files_beside_it() {
    let tmp = worktree();
    let (registry, _) = registry_for(tmp.path());
    let result = call(&executor(registry, tmp.path()), "skill", json!({"name": "pdf-forms"})).await;
    assert!(!result.is_error, "{}", result.output);
    assert_eq!(result.metadata["files"], 3);
    insta::assert_snapshot!(redact(&result.output, tmp.path()), @r#"
    <skill name="pdf-forms" directory="$ROOT/.claude/skills/pdf-forms">
    # Filling PDF forms

    1. Run `scripts/fields.py FORM.pdf` to list the fields.
    2. Write the values as JSON, following `reference/format.md`.
    3. Run `scripts/fill.py FORM.pdf values.json out.pdf`.
    </skill>

    Files in the skill's directory (3; paths relative to $ROOT/.claude/skills/pdf-forms), to read or run when the instructions call for them:
    - reference/format.md
    - scripts/fields.py
    - scripts/fill.py
    "#);
}

#[tokio::test]
async fn a_skill_without_other_files_says_so() {
    let tmp = worktree();
    let (registry, _) = registry_for(tmp.path());
    let result = call(&executor(registry, tmp.path()), "skill", json!({"name": "release-notes"})).await;
    assert!(!result.is_error, "{}", result.output);
    assert!(result.output.ends_with("</skill>\n\nThe skill's directory holds no other files."), "{}", result.output);
}

#[tokio::test]
async fn an_unknown_name_lists_the_skills_and_suggests_the_close_one() {
    let tmp = worktree();
    let (registry, _) = registry_for(tmp.path());
    let exec = executor(registry, tmp.path());
    let result = call(&exec, "skill", json!({"name": "PDF_Forms"})).await;
    assert!(result.is_error);
    insta::assert_snapshot!(result.output, @r#"There is no skill named "PDF_Forms". Did you mean "pdf-forms"? Available skills: pdf-forms, release-notes. Call skill again with one of these names."#);
    let broken = call(&exec, "skill", json!({"name": "Broken_Skill"})).await;
    assert!(broken.is_error);
    assert!(broken.output.starts_with("There is no skill named \"Broken_Skill\"."), "{}", broken.output);
}

#[tokio::test]
async fn permission_rules_match_the_skill_name() {
    let tmp = worktree();
    let (registry, _) = registry_for(tmp.path());
    let rules = Ruleset::new(vec![Rule::new("*", "*", Action::Allow), Rule::new("skill", "pdf-*", Action::Deny)]);
    let exec = toolshed_core::exec::Executor::builder(registry, tmp.path().to_path_buf())
        .data_dir(tmp.path().join(".data"))
        .permission(Arc::new(rules))
        .build();
    let denied = call(&exec, "skill", json!({"name": "pdf-forms"})).await;
    assert!(denied.is_error);
    assert!(denied.output.contains("pdf-forms"), "{}", denied.output);
    let allowed = call(&exec, "skill", json!({"name": "release-notes"})).await;
    assert!(!allowed.is_error, "{}", allowed.output);
}

#[test]
fn skills_an_agent_may_not_load_are_left_out_of_its_description() {
    let tmp = worktree();
    let (mut registry, _) = registry_for(tmp.path());
    let rules = Ruleset::new(vec![Rule::new("*", "*", Action::Allow), Rule::new("skill", "pdf-*", Action::Deny)]);
    registry.add_hook(Arc::new(PermissionHook(Arc::new(rules))));
    let view = View { agent: "build", ..View::default() };
    let shown = registry.direct(&view);
    let description = &shown.iter().find(|v| v.entry.spec().name == "skill").unwrap().spec().description;
    assert!(description.contains("- release-notes: "), "{description}");
    assert!(!description.contains("pdf-forms"), "{description}");
    // The tool's own spec still lists every skill.
    assert!(registry.get("skill").unwrap().spec().description.contains("pdf-forms"));

    let (mut registry, _) = registry_for(tmp.path());
    let rules = Ruleset::new(vec![Rule::new("*", "*", Action::Allow), Rule::new("skill", "*-*", Action::Deny)]);
    registry.add_hook(Arc::new(PermissionHook(Arc::new(rules))));
    let shown = registry.direct(&view);
    let description = &shown.iter().find(|v| v.entry.spec().name == "skill").unwrap().spec().description;
    assert!(description.ends_with("Available skills: none that you may load."), "{description}");
}

#[tokio::test]
async fn a_skill_broken_after_listing_is_reported_when_loaded() {
    let tmp = worktree();
    let (registry, _) = registry_for(tmp.path());
    write(&tmp.path().join(".toolshed/skills/release-notes/SKILL.md"), "no front matter any more\n");
    let result = call(&executor(registry, tmp.path()), "skill", json!({"name": "release-notes"})).await;
    assert!(result.is_error);
    assert!(result.output.contains("SKILL.md:1: SKILL.md must begin with YAML front matter"), "{}", result.output);
}

/// Every start reads each `SKILL.md`, and a loaded skill goes to the model whole: one over 1 MiB
/// is a problem at discovery, and one that grew past it after listing is refused when loaded.
#[tokio::test]
async fn a_skill_file_over_one_mib_is_not_read_whole() {
    let tmp = worktree();
    let huge = tmp.path().join(".claude/skills/huge/SKILL.md");
    write(&huge, &format!("---\nname: huge\ndescription: Too big.\n---\n{}", "x".repeat(2 << 20)));
    let (registry, found) = registry_for(tmp.path());
    assert!(found.get("huge").is_none());
    let problem = found.problems.iter().map(ToString::to_string).find(|p| p.contains("huge")).unwrap();
    assert!(problem.contains("over 1024 KiB"), "{problem}");
    write(
        &tmp.path().join(".toolshed/skills/release-notes/SKILL.md"),
        &format!("---\nname: release-notes\ndescription: Notes.\n---\n{}", "y".repeat(2 << 20)),
    );
    let result = call(&executor(registry, tmp.path()), "skill", json!({"name": "release-notes"})).await;
    assert!(result.is_error);
    assert!(result.output.contains("over 1024 KiB"), "{}", &result.output[..300.min(result.output.len())]);
}

#[test]
fn no_skills_means_no_skill_tool() {
    let tmp = tempfile::tempdir().unwrap();
    let (registry, found) = registry_for(tmp.path());
    assert!(registry.get("skill").is_none());
    assert!(found.skills.is_empty() && found.problems.is_empty());
}

/// Anthropic's `claude-api` skill as published (front matter unchanged; its description is
/// 1,068 characters).
const CLAUDE_API_SKILL: &str = include_str!("fixtures/skills/claude-api/SKILL.md");

#[tokio::test]
async fn skills_in_every_directory_opencode_reads_are_found_and_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let skill_md = |name: &str| format!("---\nname: {name}\ndescription: The {name} skill.\n---\nDo {name}.\n");
    write(&root.join(".opencode/skill/singular/SKILL.md"), &skill_md("singular"));
    write(&root.join(".agents/skills/shared/SKILL.md"), &skill_md("shared"));
    write(&root.join(".agents/skills/group/grouped/SKILL.md"), &skill_md("grouped"));
    let (registry, found) = registry_for(root);
    assert!(found.problems.is_empty() && found.warnings.is_empty(), "{found:?}");
    let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["grouped", "shared", "singular"]);
    let exec = executor(registry, root);
    for name in names {
        let result = call(&exec, "skill", json!({"name": name})).await;
        assert!(!result.is_error, "{name}: {}", result.output);
        assert!(result.output.contains(&format!("Do {name}.")), "{}", result.output);
    }
}

#[tokio::test]
async fn a_description_over_the_limit_loads_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    write(&root.join(".claude/skills/claude-api/SKILL.md"), CLAUDE_API_SKILL);
    let (registry, found) = registry_for(root);
    assert!(found.problems.is_empty(), "{:?}", found.problems);
    let skill = found.get("claude-api").expect("the claude-api skill is loaded");
    assert_eq!(skill.description.chars().count(), 1068, "the whole description");
    assert_eq!(found.warnings.len(), 1, "{:?}", found.warnings);
    let warning = found.warnings[0].to_string();
    assert!(
        warning.ends_with(
            "SKILL.md:3: `description` is 1068 characters long, over the 1024 the Agent Skills rules allow; the skill is loaded with all of it, but agents that keep to the rules leave it out, so shorten it if you can"
        ),
        "{warning}"
    );
    let spec = registry.get("skill").unwrap().spec();
    assert!(spec.description.contains("- claude-api: Reference for the Claude API"), "{}", spec.description);
    let result = call(&executor(registry, root), "skill", json!({"name": "claude-api"})).await;
    assert!(!result.is_error, "{}", result.output);
    assert!(result.output.contains("# Building LLM-Powered Applications with Claude"), "{}", result.output);
}
