//! Agent Skills and the `skill` tool that loads them.
//!
//! A skill is a directory holding a `SKILL.md`: YAML front matter with `name` and
//! `description`, then Markdown instructions; scripts, templates and references may sit beside
//! it. Skills are found in `.toolshed/skills/`, `.opencode/skills/`, `.opencode/skill/`,
//! `.claude/skills/` and `.agents/skills/` of the working directory and each parent up to the
//! worktree root (nearest first; OpenCode reads the first four, Codex and OpenCode the last), then in
//! the user's `~/.config/toolshed/skills/`, `~/.claude/skills/`, `~/.agents/skills/` and
//! `{skills,skill}/` of each OpenCode configuration directory (as OpenCode reads them). A skill directory may sit at any
//! depth below one of these (groups of groups), down to [`MAX_SKILL_DEPTH`] levels; hidden
//! directories and dependency trees (`node_modules`, …) are not searched. When two skills share a
//! name the first found wins.
//!
//! The naming rules are the Agent Skills ones: `name` is 1–64 characters of lowercase ASCII
//! letters and digits with single hyphens between them, and equals its directory's name;
//! `description` is 1–1024 characters; `compatibility`, if given, at most 500. A description
//! over 1024 characters is the one rule a skill may break and still load (Anthropic's own
//! `claude-api` skill does, and Claude Code and OpenCode load it): [`Skills::warnings`] says so.
//!
//! A broken skill never breaks the tool list: it is left out, and [`Skills::problems`] says
//! what is wrong, with the file and line (`toolshed doctor` prints them).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_norway::Value;
use toolshed_core::permission::{Action, Permission, PermissionRequest};
use toolshed_core::tool::{ToolFlags, ToolSpec, Typed, TypedTool};
use toolshed_core::{Registry, ToolContext, ToolError, ToolOutput};

/// The file that makes a directory a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// The skill directories looked for in the working directory and each parent up to the root.
pub const PROJECT_DIRS: &[&str] =
    &[".toolshed/skills", ".opencode/skills", ".opencode/skill", ".claude/skills", ".agents/skills"];
/// The user-level skill directories below the home directory, after toolshed's own.
pub const HOME_DIRS: &[&str] = toolshed_core::protected::HOME_SKILL_DIRS;
/// How many directory levels below a skills directory a `SKILL.md` is looked for.
pub const MAX_SKILL_DEPTH: usize = 8;
/// The longest allowed `name`.
pub const MAX_NAME: usize = 64;
/// The longest allowed `description`.
pub const MAX_DESCRIPTION: usize = 1024;
/// The longest allowed `compatibility`.
pub const MAX_COMPATIBILITY: usize = 500;
/// Files listed when a skill is loaded; more are counted, not named.
const MAX_LISTED_FILES: usize = 100;
/// How deep the file listing of a skill goes.
const MAX_LIST_DEPTH: usize = 4;
/// Directories never listed.
const UNLISTED_DIRS: &[&str] = &["node_modules", "__pycache__", "target", "venv"];

/// A skill that passed validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// Its name (equal to its directory's name).
    pub name: String,
    /// What it is for and when to use it.
    pub description: String,
    /// Its directory.
    pub dir: PathBuf,
    /// Its `SKILL.md`.
    pub file: PathBuf,
}

/// A skill that was left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillProblem {
    /// The `SKILL.md` (or directory) concerned.
    pub path: PathBuf,
    /// The 1-based line the problem is on, when there is one.
    pub line: Option<usize>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.path.display(), self.message),
            None => write!(f, "{}: {}", self.path.display(), self.message),
        }
    }
}

/// The outcome of discovery.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Skills {
    /// Usable skills, sorted by name.
    pub skills: Vec<Skill>,
    /// Skills left out because they are broken.
    pub problems: Vec<SkillProblem>,
    /// Skills loaded although something in them is off (a description over the limit).
    pub warnings: Vec<SkillProblem>,
    /// Valid skills hidden by an earlier skill of the same name: (hidden, the one that wins).
    pub shadowed: Vec<(Skill, PathBuf)>,
    /// The directories searched, in order.
    pub searched: Vec<PathBuf>,
}

impl Skills {
    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }
}

/// The user's skill directories, in precedence order: toolshed's (`~/.config/toolshed/skills`),
/// then Claude Code's and the shared `~/.agents/skills`, then OpenCode's
/// ([`toolshed_core::paths::opencode_config_dirs`]).
pub fn user_dirs() -> Vec<PathBuf> {
    use toolshed_core::paths;
    let mut dirs: Vec<PathBuf> = paths::config_dir().map(|d| d.join("skills")).into_iter().collect();
    if let Some(home) = paths::home_dir() {
        dirs.extend(HOME_DIRS.iter().map(|d| home.join(d)));
    }
    for opencode in paths::opencode_config_dirs() {
        dirs.extend(["skills", "skill"].iter().map(|d| opencode.join(d)));
    }
    dirs
}

/// The skill directories for a worktree, in precedence order: the project directories of `cwd`
/// and each parent up to `root`, then the user's `user_dirs`.
pub fn search_dirs(root: &Path, cwd: &Path, user_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let start = if cwd.starts_with(root) { cwd } else { root };
    for dir in start.ancestors() {
        dirs.extend(PROJECT_DIRS.iter().map(|d| dir.join(d)));
        if dir == root {
            break;
        }
    }
    for user in user_dirs {
        if !dirs.contains(user) {
            dirs.push(user.clone());
        }
    }
    dirs
}

/// Finds the skills of a worktree, with the user's ([`user_dirs`]).
pub fn discover(root: &Path, cwd: &Path) -> Skills {
    discover_in(&search_dirs(root, cwd, &user_dirs()))
}

/// Finds the skills in `dirs`, earlier directories winning on a name clash.
pub fn discover_in(dirs: &[PathBuf]) -> Skills {
    let mut out = Skills { searched: dirs.to_vec(), ..Skills::default() };
    // The user's own directories may link skills from anywhere (a repository of them); a
    // project's may not (below).
    let users = user_dirs();
    for dir in dirs {
        let base = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        for skill_dir in skill_dirs(dir) {
            let file = skill_dir.join(SKILL_FILE);
            // A project's skill is what lies in its skills directory: one that a symbolic link
            // takes elsewhere (out of the worktree, to a `.env` that looks like a skill) would
            // show that file without the `read` rules that guard it.
            if !users.contains(dir) && !file.canonicalize().is_ok_and(|real| real.starts_with(&base)) {
                out.problems.push(SkillProblem {
                    path: file,
                    line: None,
                    message: format!(
                        "a symbolic link takes it out of {}: not loaded (copy the skill there instead)",
                        dir.display()
                    ),
                });
                continue;
            }
            match load(&skill_dir, &file) {
                Ok((skill, warnings)) => match out.skills.iter().find(|s| s.name == skill.name) {
                    Some(winner) => {
                        let by = winner.file.clone();
                        out.shadowed.push((skill, by));
                    }
                    None => {
                        out.warnings.extend(warnings);
                        out.skills.push(skill);
                    }
                },
                Err(problem) => out.problems.push(problem),
            }
        }
    }
    out.skills.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The skill directories at any depth below `dir` (down to [`MAX_SKILL_DEPTH`] levels),
/// shallower first, sorted within a level. A directory reached again through a symbolic link is
/// searched once, where it is nearest.
fn skill_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut seen: std::collections::HashSet<PathBuf> = dir.canonicalize().into_iter().collect();
    let mut level = vec![dir.to_path_buf()];
    for _ in 0..MAX_SKILL_DEPTH {
        let mut next = Vec::new();
        for parent in &level {
            for child in sorted_subdirs(parent) {
                let unlisted = child.file_name().is_some_and(|n| UNLISTED_DIRS.iter().any(|u| n == *u));
                let Ok(real) = child.canonicalize() else { continue };
                if unlisted || !seen.insert(real) {
                    continue;
                }
                if child.join(SKILL_FILE).is_file() {
                    found.push(child.clone());
                }
                next.push(child);
            }
        }
        level = next;
    }
    found
}

fn sorted_subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
        .collect();
    dirs.sort();
    dirs
}

/// The most a `SKILL.md` may hold. Every start reads each one, and a skill's instructions go to
/// the model whole: a larger file is a problem, not a skill.
const MAX_SKILL_BYTES: u64 = 1 << 20;

/// A `SKILL.md`, read only when it is at most [`MAX_SKILL_BYTES`].
fn read_skill_file(file: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let mut text = String::new();
    std::fs::File::open(file)?.take(MAX_SKILL_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_SKILL_BYTES {
        return Err(std::io::Error::other(format!(
            "it is over {} KiB, the most a skill's instructions may take; move the rest into files beside it that the instructions name",
            MAX_SKILL_BYTES >> 10
        )));
    }
    Ok(text)
}

fn load(dir: &Path, file: &Path) -> Result<(Skill, Vec<SkillProblem>), SkillProblem> {
    let text = read_skill_file(file).map_err(|e| SkillProblem {
        path: file.to_path_buf(),
        line: None,
        message: format!("cannot read it: {e}"),
    })?;
    let dir_name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let parsed = parse(&text, &dir_name).map_err(|(line, message)| SkillProblem {
        path: file.to_path_buf(),
        line: Some(line),
        message,
    })?;
    let warnings = parsed
        .warnings
        .into_iter()
        .map(|(line, message)| SkillProblem { path: file.to_path_buf(), line: Some(line), message })
        .collect();
    let skill =
        Skill { name: parsed.name, description: parsed.description, dir: dir.to_path_buf(), file: file.to_path_buf() };
    Ok((skill, warnings))
}

/// A parsed `SKILL.md`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillDocument {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// The Markdown after the front matter, trimmed.
    pub body: String,
    /// What is off but does not stop the skill loading: (1-based line, message).
    pub warnings: Vec<(usize, String)>,
}

/// Parses and validates a `SKILL.md` of a skill whose directory is called `dir_name`; an error
/// is the 1-based line and the message.
pub fn parse(text: &str, dir_name: &str) -> Result<SkillDocument, (usize, String)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let is_fence = |line: &str| line.trim_end() == "---";
    if !lines.first().is_some_and(|l| is_fence(l)) {
        return Err((
            1,
            "SKILL.md must begin with YAML front matter: a `---` line, then `name:` and `description:`, then another `---` line".to_string(),
        ));
    }
    let Some(close) = lines.iter().skip(1).position(|l| is_fence(l) || l.trim_end() == "...").map(|i| i + 1) else {
        return Err((1, "the front matter opened on line 1 is never closed: add a `---` line after it".to_string()));
    };
    let yaml: String = lines[1..close].concat();
    let body = lines[close + 1..].concat().trim().to_string();
    // Line `n` of the YAML is line `n + 1` of the file.
    let value: Value = serde_norway::from_str(&yaml).map_err(|e| {
        let line = e.location().map(|l| l.line() + 1).unwrap_or(2);
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message).to_string();
        (line, format!("the front matter is not valid YAML: {message}"))
    })?;
    let Value::Mapping(map) = value else {
        return Err((2, "the front matter must be a YAML mapping with `name` and `description` keys".to_string()));
    };
    let key_line = |key: &str| {
        lines[1..close]
            .iter()
            .position(|l| l.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with(':')))
            .map_or(1, |i| i + 2)
    };
    let string = |key: &str| -> Result<Option<String>, (usize, String)> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err((key_line(key), format!("`{key}` must be a string"))),
        }
    };
    let name = string("name")?
        .ok_or_else(|| (close + 1, format!("`name` is missing: add `name: {}`", suggest_name(dir_name))))?;
    let name_line = key_line("name");
    check_name(&name, dir_name).map_err(|m| (name_line, m))?;
    let description = string("description")?.ok_or_else(|| {
        (close + 1, "`description` is missing: say what the skill does and when to use it".to_string())
    })?;
    let description = description.trim().to_string();
    let count = description.chars().count();
    if count == 0 {
        return Err((
            key_line("description"),
            "`description` is empty: say what the skill does and when to use it".to_string(),
        ));
    }
    let mut warnings = Vec::new();
    if count > MAX_DESCRIPTION {
        warnings.push((
            key_line("description"),
            format!(
                "`description` is {count} characters long, over the {MAX_DESCRIPTION} the Agent Skills rules allow; the skill is loaded with all of it, but agents that keep to the rules leave it out, so shorten it if you can"
            ),
        ));
    }
    if let Some(compat) = string("compatibility")? {
        let count = compat.chars().count();
        if count > MAX_COMPATIBILITY {
            return Err((
                key_line("compatibility"),
                format!("`compatibility` is {count} characters long; the limit is {MAX_COMPATIBILITY}"),
            ));
        }
    }
    Ok(SkillDocument { name, description, body, warnings })
}

/// Checks a skill name against the naming rules and its directory's name.
pub fn check_name(name: &str, dir_name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err(format!("`name` is empty: use the directory's name, e.g. `name: {}`", suggest_name(dir_name)));
    }
    let count = name.chars().count();
    if count > MAX_NAME {
        return Err(format!("`name` is {count} characters long; the limit is {MAX_NAME}"));
    }
    let valid_chars = name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid_chars || name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "`name` \"{name}\" is not allowed: use lowercase letters a-z and digits, with single hyphens only between them (e.g. \"{}\")",
            suggest_name(name)
        ));
    }
    if name != dir_name {
        return Err(format!(
            "`name` \"{name}\" must equal the name of the skill's directory, \"{dir_name}\": rename one of them"
        ));
    }
    Ok(())
}

/// A valid name close to `text` (for error messages).
fn suggest_name(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let out: String = out.trim_end_matches('-').chars().take(MAX_NAME).collect();
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "my-skill".to_string() } else { out }
}

/// Registers the `skill` tool for `skills`, if there are any (with none it would only cost
/// context).
pub fn register(registry: &mut Registry, skills: &Skills) {
    if !skills.skills.is_empty() {
        registry.register_builtin(Typed::new(SkillTool::new(skills.skills.clone())));
    }
}

/// Arguments of `skill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArgs {
    /// The name of the skill to load, exactly as listed.
    pub name: String,
}

/// The `skill` tool: loads one of the skills it was built with.
#[derive(Clone, Debug)]
pub struct SkillTool {
    skills: Arc<Vec<Skill>>,
}

impl SkillTool {
    /// A tool offering `skills`.
    pub fn new(mut skills: Vec<Skill>) -> Self {
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        SkillTool { skills: Arc::new(skills) }
    }

    fn find(&self, name: &str) -> Result<&Skill, ToolError> {
        let name = name.trim();
        if let Some(skill) = self.skills.iter().find(|s| s.name == name) {
            return Ok(skill);
        }
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        let close = self.skills.iter().find(|s| s.name.eq_ignore_ascii_case(name) || s.name == suggest_name(name));
        let hint = match close {
            Some(s) => format!(" Did you mean \"{}\"?", s.name),
            None => String::new(),
        };
        Err(ToolError::model(format!(
            "There is no skill named \"{name}\".{hint} Available skills: {}. Call skill again with one of these names.",
            names.join(", ")
        )))
    }
}

impl TypedTool for SkillTool {
    type Args = SkillArgs;

    fn name(&self) -> &str {
        "skill"
    }

    fn description(&self) -> String {
        describe(self.skills.iter())
    }

    /// Skills the agent's rules deny are left out of the list (OpenCode hides them too).
    fn description_for(&self, agent: &str, permission: &dyn Permission) -> Option<String> {
        let denied = |s: &&Skill| permission.evaluate(agent, "skill", &s.name).action == Action::Deny;
        if !self.skills.iter().any(|s| denied(&s)) {
            return None;
        }
        Some(describe(self.skills.iter().filter(|s| !denied(s))))
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &SkillArgs,
        _ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let skill = self.find(&args.name)?;
        Ok(vec![PermissionRequest::new(&spec.permission, [skill.name.as_str()])])
    }

    async fn run(&self, args: SkillArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let skill = self.find(&args.name)?.clone();
        let loaded = tokio::task::spawn_blocking(move || read_skill(&skill))
            .await
            .map_err(|e| ToolError::fatal(format!("loading the skill failed: {e}")))??;
        Ok(loaded)
    }
}

/// The `skill` tool's description, listing `skills`.
fn describe<'a>(skills: impl Iterator<Item = &'a Skill>) -> String {
    let mut text = String::from(
        "Load a skill: instructions for a kind of task, written by the user or for this project, sometimes with scripts, templates or reference files beside them.\n\nWhen a task matches one of the skills below, load it before you start and follow its instructions. The result gives the skill's directory and the files in it; paths in the instructions are relative to that directory.\n\nAvailable skills:",
    );
    let mut any = false;
    for skill in skills {
        any = true;
        text.push_str(&format!("\n- {}: {}", skill.name, super::web::html::collapse_whitespace(&skill.description)));
    }
    if !any {
        text.push_str(" none that you may load.");
    }
    text
}

/// Reads a skill's current instructions and lists its files.
fn read_skill(skill: &Skill) -> Result<ToolOutput, ToolError> {
    let text = read_skill_file(&skill.file).map_err(|e| {
        ToolError::model(format!(
            "The skill \"{}\" cannot be read any more ({}: {e}). Tell the user; do not retry.",
            skill.name,
            skill.file.display()
        ))
    })?;
    let doc = parse(&text, &skill.name).map_err(|(line, message)| {
        ToolError::model(format!(
            "The skill \"{}\" is broken since it was listed ({}:{line}: {message}). Tell the user; do not retry.",
            skill.name,
            skill.file.display()
        ))
    })?;
    let mut files = Vec::new();
    let mut total = 0;
    list_files(&skill.dir, Path::new(""), 0, &mut files, &mut total);
    let mut out = format!("<skill name=\"{}\" directory=\"{}\">\n", skill.name, skill.dir.display());
    out.push_str(if doc.body.is_empty() {
        "(The skill has no instructions beyond its description.)"
    } else {
        &doc.body
    });
    out.push_str("\n</skill>\n\n");
    if files.is_empty() {
        out.push_str("The skill's directory holds no other files.");
    } else {
        out.push_str(&format!(
            "Files in the skill's directory ({}; paths relative to {}), to read or run when the instructions call for them:\n",
            if total > files.len() { format!("{} of {total} shown", files.len()) } else { total.to_string() },
            skill.dir.display()
        ));
        for file in &files {
            out.push_str(&format!("- {file}\n"));
        }
    }
    Ok(ToolOutput::text(out.trim_end())
        .with_title(format!("skill: {}", skill.name))
        .with_metadata("skill", skill.name.as_str())
        .with_metadata("directory", skill.dir.to_string_lossy().into_owned())
        .with_metadata("files", total as u64))
}

/// Collects the files under `dir` (relative, `/`-separated, sorted), skipping the top-level
/// `SKILL.md`, hidden entries and dependency folders; symlinked directories are not entered.
fn list_files(dir: &Path, rel: &Path, depth: usize, out: &mut Vec<String>, total: &mut usize) {
    let Ok(entries) = std::fs::read_dir(dir.join(rel)) else { return };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || (depth == 0 && name == SKILL_FILE) {
            continue;
        }
        let Ok(kind) = entry.file_type() else { continue };
        let path = rel.join(&name);
        if kind.is_dir() {
            if depth + 1 < MAX_LIST_DEPTH && !UNLISTED_DIRS.contains(&name.as_str()) {
                list_files(dir, &path, depth + 1, out, total);
            }
        } else {
            *total += 1;
            if out.len() < MAX_LISTED_FILES {
                out.push(path.to_string_lossy().replace('\\', "/"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn skill_md(name: &str, description: &str) -> String {
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nDo the thing.\n")
    }

    fn problem(text: &str, dir: &str) -> String {
        let (line, message) = parse(text, dir).unwrap_err();
        format!("{line}: {message}")
    }

    #[test]
    fn parses_front_matter_and_body() {
        let text = "\u{feff}---\nname: pdf-forms\ndescription: >\n  Fill in PDF\n  forms.\nlicense: MIT\nmetadata:\n  author: ada\n---\n\n# Filling forms\nRun scripts/fill.py.\n";
        let doc = parse(text, "pdf-forms").unwrap();
        assert_eq!(doc.name, "pdf-forms");
        assert_eq!(doc.description, "Fill in PDF forms.");
        assert_eq!(doc.body, "# Filling forms\nRun scripts/fill.py.");
    }

    #[test]
    fn bad_front_matter_is_reported_with_its_line() {
        insta::assert_snapshot!(problem("# no front matter\n", "x"), @"1: SKILL.md must begin with YAML front matter: a `---` line, then `name:` and `description:`, then another `---` line");
        insta::assert_snapshot!(problem("---\nname: x\ndescription: y\n", "x"), @"1: the front matter opened on line 1 is never closed: add a `---` line after it");
        insta::assert_snapshot!(problem("---\nname: x\ndescription: [unclosed\nlicense: MIT\n---\n", "x"), @"4: the front matter is not valid YAML: did not find expected ',' or ']'");
        insta::assert_snapshot!(problem("---\nname: x\ndescription: a: b: c\n---\n", "x"), @"3: the front matter is not valid YAML: mapping values are not allowed in this context");
        insta::assert_snapshot!(problem("---\n- a\n- b\n---\n", "x"), @"2: the front matter must be a YAML mapping with `name` and `description` keys");
        insta::assert_snapshot!(problem("---\nlicense: MIT\nname: 12\ndescription: d\n---\n", "x"), @"3: `name` must be a string");
        insta::assert_snapshot!(problem("---\ndescription: d\n---\n", "My Skill"), @"3: `name` is missing: add `name: my-skill`");
        insta::assert_snapshot!(problem("---\nname: x\n---\n", "x"), @"3: `description` is missing: say what the skill does and when to use it");
        insta::assert_snapshot!(problem("---\nname: x\ndescription: \"  \"\n---\n", "x"), @"3: `description` is empty: say what the skill does and when to use it");
    }

    #[test]
    fn name_rules_are_enforced() {
        let long = "a".repeat(65);
        insta::assert_snapshot!(check_name(&long, &long).unwrap_err(), @"`name` is 65 characters long; the limit is 64");
        assert!(check_name(&"a".repeat(64), &"a".repeat(64)).is_ok());
        insta::assert_snapshot!(check_name("PDF_Forms", "PDF_Forms").unwrap_err(), @r#"`name` "PDF_Forms" is not allowed: use lowercase letters a-z and digits, with single hyphens only between them (e.g. "pdf-forms")"#);
        for bad in ["-lead", "trail-", "dou--ble", "sp ace", "ünï"] {
            assert!(check_name(bad, bad).is_err(), "{bad}");
        }
        for good in ["a", "pdf-forms", "v2-api-3"] {
            assert!(check_name(good, good).is_ok(), "{good}");
        }
        insta::assert_snapshot!(check_name("forms", "pdf-forms").unwrap_err(), @r#"`name` "forms" must equal the name of the skill's directory, "pdf-forms": rename one of them"#);
        let long_description = format!("---\nname: x\ndescription: {}\n---\n", "d".repeat(1025));
        let doc = parse(&long_description, "x").unwrap();
        assert_eq!(doc.description.len(), 1025, "loaded whole");
        insta::assert_snapshot!(format!("{}: {}", doc.warnings[0].0, doc.warnings[0].1), @"3: `description` is 1025 characters long, over the 1024 the Agent Skills rules allow; the skill is loaded with all of it, but agents that keep to the rules leave it out, so shorten it if you can");
        let compat = format!("---\nname: x\ndescription: d\ncompatibility: {}\n---\n", "c".repeat(501));
        insta::assert_snapshot!(problem(&compat, "x"), @"4: `compatibility` is 501 characters long; the limit is 500");
    }

    #[test]
    fn discovers_skills_in_every_location() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let user = tmp.path().join("config");
        write(&root.join(".toolshed/skills/alpha/SKILL.md"), &skill_md("alpha", "From .toolshed."));
        write(&root.join(".opencode/skills/beta/SKILL.md"), &skill_md("beta", "From .opencode."));
        write(&root.join(".claude/skills/group/gamma/SKILL.md"), &skill_md("gamma", "From a group in .claude."));
        write(&user.join("skills/delta/SKILL.md"), &skill_md("delta", "From the user."));
        write(&root.join("sub/.claude/skills/epsilon/SKILL.md"), &skill_md("epsilon", "Nested project."));
        write(&root.join(".claude/skills/a/b/c/SKILL.md"), &skill_md("c", "In a group of groups."));
        let deep = root.join(".claude/skills/l1/l2/l3/l4/l5/l6/l7");
        write(&deep.join("level-8/SKILL.md"), &skill_md("level-8", "Eight levels down."));
        write(&deep.join("level-8/level-9/SKILL.md"), &skill_md("level-9", "Too deep."));
        write(&root.join(".claude/skills/tool/node_modules/dep/SKILL.md"), &skill_md("dep", "A dependency's."));
        write(&root.join(".claude/skills/.cache/hidden/SKILL.md"), &skill_md("hidden", "Hidden."));
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join(".claude/skills"), root.join(".claude/skills/a/loop")).unwrap();
        let home = tmp.path().join("home");
        write(&home.join(".agents/skills/zeta/SKILL.md"), &skill_md("zeta", "From ~/.agents."));

        let users = [user.join("skills"), home.join(".agents/skills")];
        let at_root = discover_in(&search_dirs(&root, &root, &users));
        let names: Vec<&str> = at_root.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["alpha", "beta", "c", "delta", "gamma", "level-8", "zeta"]);
        assert!(at_root.problems.is_empty(), "{:?}", at_root.problems);
        assert_eq!(at_root.get("gamma").unwrap().dir, root.join(".claude/skills/group/gamma"));

        let in_sub = discover_in(&search_dirs(&root, &root.join("sub"), &users));
        assert!(in_sub.get("epsilon").is_some());
        assert_eq!(in_sub.skills.len(), 8);
    }

    #[test]
    fn a_skill_a_link_takes_out_of_its_skills_directory_is_not_loaded() {
        let tmp = tempfile::tempdir().unwrap();
        let (skills, outside) = (tmp.path().join("skills"), tmp.path().join("outside"));
        write(&outside.join("secret.env"), &skill_md("linked", "Looks like a skill."));
        write(&outside.join("dir/SKILL.md"), &skill_md("dir", "A whole directory elsewhere."));
        std::fs::create_dir_all(skills.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.env"), skills.join("linked/SKILL.md")).unwrap();
        std::os::unix::fs::symlink(outside.join("dir"), skills.join("dir")).unwrap();
        write(&skills.join("good/SKILL.md"), &skill_md("good", "Lies where it is found."));
        let found = discover_in(std::slice::from_ref(&skills));
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["good"]);
        assert_eq!(found.problems.len(), 2, "{:?}", found.problems);
        assert!(found.problems.iter().all(|p| p.message.contains("symbolic link")), "{:?}", found.problems);
    }

    #[test]
    fn the_nearest_skill_of_a_name_wins_and_the_other_is_reported_shadowed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let user = tmp.path().join("config");
        write(&root.join(".claude/skills/deploy/SKILL.md"), &skill_md("deploy", "Project deploy."));
        write(&user.join("skills/deploy/SKILL.md"), &skill_md("deploy", "User deploy."));
        let found = discover_in(&search_dirs(&root, &root, &[user.join("skills")]));
        assert_eq!(found.skills.len(), 1);
        assert_eq!(found.skills[0].description, "Project deploy.");
        assert_eq!(found.shadowed.len(), 1);
        assert_eq!(found.shadowed[0].0.description, "User deploy.");
        assert_eq!(found.shadowed[0].1, root.join(".claude/skills/deploy/SKILL.md"));
    }

    #[test]
    fn a_broken_skill_is_left_out_and_reported_with_file_and_line() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("skills");
        write(&dir.join("good/SKILL.md"), &skill_md("good", "Works."));
        write(&dir.join("bad/SKILL.md"), "---\nname: Bad\ndescription: x\n---\n");
        let found = discover_in(std::slice::from_ref(&dir));
        assert_eq!(found.skills.len(), 1);
        assert_eq!(found.problems.len(), 1);
        let shown = found.problems[0].to_string().replace(&tmp.path().display().to_string(), "$TMP");
        insta::assert_snapshot!(shown, @r#"$TMP/skills/bad/SKILL.md:2: `name` "Bad" is not allowed: use lowercase letters a-z and digits, with single hyphens only between them (e.g. "bad")"#);
    }
}
