//! Agents and their permission rules: the built-in `build`, `plan` and `explore` agents, the
//! ones defined in `[agent.NAME]`, and the rule engine that decides per agent.
//!
//! An agent's rules come in layers, in this order (the last match wins):
//! 1. the defaults: OpenCode's, then those each tool source declares (custom tools ask, ...);
//! 2. the user's config `[permission]`, then the project's (`toolshed.toml`);
//! 3. the agent's built-in rules (`plan`, `explore`): they come after your config and win, but
//!    they only ever tighten it: where your config has a rule for the request, the stricter of
//!    its decision and the agent's applies (plan mode denies edits even with `edit = "allow"`,
//!    and a `rm *` deny of yours still denies in plan mode, whose own `bash` rule only asks);
//! 4. the agent's own `[agent.NAME] permission` table, which decides outright where it matches.
//!
//! File-permission patterns in rules (`read`, `edit`, `glob`, `grep`, `list`, `lsp`,
//! `external_directory`) may be written relative, `./`-prefixed, absolute or with `~`; they are
//! normalised to what tools send: paths relative to the worktree, absolute paths outside it
//! (a relative pattern that climbs out with `..` names the absolute paths it reaches).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::config::{AgentMode, Config, SandboxMode};
use crate::permission::{Action, Decision, Permission, Rule, Ruleset};
use crate::registry::EditTool;

/// Permission keys whose patterns are paths.
pub const PATH_KEYS: &[&str] = &["read", "edit", "glob", "grep", "list", "lsp", "external_directory"];

/// Commands the `plan` agent may run without asking: they only read. Anything else asks, and
/// file changes are denied: redirections, and the options of these commands that write files
/// (`git diff --output=F`, `sort -o F`, `sed -n 'w F'`, ...), are `edit` requests, and options
/// that run programs (`rg --pre CMD`, sed's `e`) are commands of their own (see the bash tool's
/// permission analysis). `cargo tree` and `cargo metadata` may rewrite `Cargo.lock`, so only
/// their `--locked` / `--frozen` forms are listed.
pub const PLAN_READ_ONLY_COMMANDS: &[&str] = &[
    "ls *",
    "cat *",
    "head *",
    "tail *",
    "wc *",
    "grep *",
    "rg *",
    "find *",
    "tree *",
    "pwd",
    "stat *",
    "file *",
    "du *",
    "df *",
    "which *",
    "type *",
    "echo *",
    "printf *",
    "date",
    "uname *",
    "whoami",
    "basename *",
    "dirname *",
    "realpath *",
    "readlink *",
    "sort *",
    "uniq *",
    "cut *",
    "diff *",
    "cmp *",
    "sed *",
    "jq *",
    "git status *",
    "git log *",
    "git diff *",
    "git show *",
    "git blame *",
    "git rev-parse *",
    "git ls-files *",
    "git branch",
    "git branch --list *",
    "git remote -v",
    "git grep *",
    "cargo tree *--locked*",
    "cargo tree *--frozen*",
    "cargo metadata *--locked*",
    "cargo metadata *--frozen*",
];

/// Tools the `plan` agent may use without asking (as far as the config allows them): they read,
/// search, or keep the agent's own notes. Every other tool asks in plan mode.
pub const PLAN_READ_ONLY_TOOLS: &[&str] =
    &["list", "glob", "grep", "lsp", "webfetch", "websearch", "skill", "todo_write", "todo_read", "tool_search"];

/// Forms of the read-only commands that do change things; they ask even in plan mode (listed
/// after [`PLAN_READ_ONLY_COMMANDS`], so they win).
pub const PLAN_ASK_FORMS: &[&str] = &[
    "find *-delete*",
    "find *-exec*",
    "find *-ok*",
    "find *-fprint*",
    "find *-fls*",
    "sed *-i*",
    "sed *--in-place*",
    "sort *-o*",
    "sort *--output*",
    "cargo *--config*",
];

/// Built-in agents whose shell commands run in the `read-only` sandbox unless their
/// `[agent.NAME] sandbox` says otherwise or `[sandbox] mode` is `full-access`: they change
/// nothing, so even a command the permission analysis misjudges cannot write.
pub const READ_ONLY_SANDBOX_AGENTS: &[&str] = &["plan", "explore"];

/// The sandbox mode `agent`'s shell commands run in: its `[agent.NAME] sandbox` when set; else
/// `read-only` for [`READ_ONLY_SANDBOX_AGENTS`] unless `[sandbox] mode` is `full-access` (the
/// user opted out of sandboxing); else `[sandbox] mode` (default `workspace-write`).
pub fn sandbox_mode(config: &Config, agent: &str) -> SandboxMode {
    let global = config.sandbox.mode.unwrap_or(SandboxMode::WorkspaceWrite);
    match config.agents.get(agent).and_then(|a| a.sandbox) {
        Some(mode) => mode,
        None if global != SandboxMode::FullAccess && READ_ONLY_SANDBOX_AGENTS.contains(&agent) => SandboxMode::ReadOnly,
        None => global,
    }
}

/// One agent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Agent {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Primary, sub-agent, or both.
    #[serde(skip)]
    pub mode: AgentMode,
    /// Its system prompt, if it has its own.
    pub prompt: Option<String>,
    /// Its model, if it has its own.
    pub model: Option<String>,
    /// Which editing tools it gets, if fixed.
    #[serde(skip)]
    pub edit_tool: Option<EditTool>,
    /// Its rules, by layer.
    #[serde(skip)]
    layers: Layers,
    /// Whether it is built in.
    pub builtin: bool,
}

/// Where a rule comes from: the layers of an agent's rules, in evaluation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// toolshed's defaults and those of tool sources (custom tools ask before they run).
    Default,
    /// `[permission]` of the user's or the project's config.
    Config,
    /// The agent's built-in rules (`plan`, `explore`): they can only tighten the config's.
    Agent,
    /// The agent's `[agent.NAME] permission` table: decides outright where it matches.
    AgentConfig,
}

/// One rule of an agent, with where it comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sourced {
    /// The rule.
    #[serde(flatten)]
    pub rule: Rule,
    /// Its layer.
    pub layer: Layer,
    /// The file it was written in, for config rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<std::path::PathBuf>,
}

impl Sourced {
    /// Where the rule comes from, for people.
    pub fn origin(&self, agent: &str) -> String {
        match (self.layer, &self.file) {
            (Layer::Default, _) => "default".to_string(),
            (Layer::Config, Some(file)) => format!("config {}", file.display()),
            (Layer::Config, None) => "config".to_string(),
            (Layer::Agent, _) => format!("agent {agent}, built in"),
            (Layer::AgentConfig, _) => format!("[agent.{agent}] permission"),
        }
    }
}

/// An agent's rules by layer.
#[derive(Clone, Debug, Default, PartialEq)]
struct Layers {
    defaults: Ruleset,
    config: Ruleset,
    /// The file of each config rule (same order as `config`).
    config_files: Vec<Option<std::path::PathBuf>>,
    builtin: Ruleset,
    own: Ruleset,
}

impl Layers {
    fn evaluate(&self, permission: &str, pattern: &str) -> Decision {
        if let Some(own) = last_match(&self.own, permission, pattern) {
            return own;
        }
        let config = last_match(&self.config, permission, pattern);
        match (config, last_match(&self.builtin, permission, pattern)) {
            (Some(config), Some(builtin)) => stricter(config, builtin),
            (Some(decision), None) | (None, Some(decision)) => decision,
            (None, None) => self.defaults.evaluate(permission, pattern),
        }
    }

    fn disabled(&self, permission: &str) -> bool {
        if let Some(own) = key_disabled(&self.own, permission) {
            return own;
        }
        let config = key_disabled(&self.config, permission);
        match (config, key_disabled(&self.builtin, permission)) {
            (Some(config), Some(builtin)) => config || builtin,
            (Some(disabled), None) | (None, Some(disabled)) => disabled,
            (None, None) => self.defaults.disabled(permission),
        }
    }

    /// Every rule, in evaluation order, with its source.
    fn sourced(&self) -> Vec<Sourced> {
        let plain = |rules: &Ruleset, layer| {
            rules.rules().iter().map(move |r| Sourced { rule: r.clone(), layer, file: None }).collect::<Vec<_>>()
        };
        let mut out = plain(&self.defaults, Layer::Default);
        out.extend(self.config.rules().iter().zip(&self.config_files).map(|(r, f)| Sourced {
            rule: r.clone(),
            layer: Layer::Config,
            file: f.clone(),
        }));
        out.extend(plain(&self.builtin, Layer::Agent));
        out.extend(plain(&self.own, Layer::AgentConfig));
        out
    }
}

fn last_match(rules: &Ruleset, permission: &str, pattern: &str) -> Option<Decision> {
    let d = rules.evaluate(permission, pattern);
    d.rule.is_some().then_some(d)
}

/// Whether the last rule of `rules` for the key `permission` denies every pattern; `None` when
/// no rule is about that key.
fn key_disabled(rules: &Ruleset, permission: &str) -> Option<bool> {
    rules.rules().iter().rev().find(|r| r.covers(permission)).map(|r| r.pattern == "*" && r.action == Action::Deny)
}

/// The stricter of two decisions (deny over ask over allow); the first on a tie.
fn stricter(a: Decision, b: Decision) -> Decision {
    let rank = |d: &Decision| match d.action {
        Action::Allow => 0,
        Action::Ask => 1,
        Action::Deny => 2,
    };
    if rank(&b) > rank(&a) { b } else { a }
}

/// Every agent and its rules; the permission engine of the execution chain.
#[derive(Clone, Debug, Default)]
pub struct Agents {
    agents: BTreeMap<String, Agent>,
}

/// Why a pattern got its decision: the rules whose permission key matched (in order, with
/// whether their pattern matched too) and the decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explanation {
    /// The permission key.
    pub permission: String,
    /// The pattern evaluated.
    pub pattern: String,
    /// Rules whose permission key matches, in evaluation order (with their source), each with
    /// whether its pattern matched.
    pub considered: Vec<(Sourced, bool)>,
    /// The action, and the rule that decided it (none: no rule matched, so `ask`).
    pub action: Action,
    /// The deciding rule.
    pub decided_by: Option<Rule>,
    /// Why the decider won when it is not simply the last match: a built-in agent rule that
    /// tightened the config's decision, or a config rule stricter than the agent's.
    pub note: Option<String>,
}

impl Agents {
    /// The built-in agents and those of `config`, with rules normalised against `root` and the
    /// home directory `home`.
    pub fn from_config(config: &Config, root: &Path, home: Option<&Path>) -> Agents {
        Agents::with_defaults(config, root, home, &[])
    }

    /// Like [`Agents::from_config`], with `extra_defaults` appended to the default rules (before
    /// any agent or config rule): tool sources use this for their own defaults, e.g. custom
    /// tools ask before they run unless the config says otherwise.
    pub fn with_defaults(config: &Config, root: &Path, home: Option<&Path>, extra_defaults: &[Rule]) -> Agents {
        let norm = |rules: &[Rule]| -> Vec<Rule> { rules.iter().map(|r| normalise_rule(r, root, home)).collect() };
        let mut defaults = Ruleset::defaults();
        for r in extra_defaults {
            defaults.push(r.clone());
        }
        let global = Ruleset::new(norm(&config.permission));
        let global_files: Vec<Option<std::path::PathBuf>> =
            (0..config.permission.len()).map(|i| config.permission_files.get(i).cloned()).collect();
        let base = Layers { defaults, config: global, config_files: global_files, ..Layers::default() };
        let mut agents = BTreeMap::new();
        for (name, description, mode, own) in builtin_agents() {
            agents.insert(
                name.to_string(),
                Agent {
                    name: name.to_string(),
                    description: description.to_string(),
                    mode,
                    prompt: None,
                    model: None,
                    edit_tool: None,
                    layers: Layers { builtin: Ruleset::new(own), ..base.clone() },
                    builtin: true,
                },
            );
        }
        for (name, cfg) in &config.agents {
            let agent = agents.entry(name.clone()).or_insert_with(|| Agent {
                name: name.clone(),
                description: String::new(),
                mode: AgentMode::All,
                prompt: None,
                model: None,
                edit_tool: None,
                layers: base.clone(),
                builtin: false,
            });
            if let Some(d) = &cfg.description {
                agent.description.clone_from(d);
            }
            agent.mode = cfg.mode.unwrap_or(agent.mode);
            agent.prompt = cfg.prompt.clone().or(agent.prompt.take());
            agent.model = cfg.model.clone().or(agent.model.take());
            agent.edit_tool = cfg.edit_tool.or(agent.edit_tool);
            if let Some(own) = &cfg.permission {
                agent.layers.own = Ruleset::new(norm(&own.0));
            }
        }
        Agents { agents }
    }

    /// The agent called `name`.
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.agents.get(name)
    }

    /// Every agent, by name.
    pub fn all(&self) -> impl Iterator<Item = &Agent> {
        self.agents.values()
    }

    /// Explains the decision for one pattern.
    pub fn explain(&self, agent: &str, permission: &str, pattern: &str) -> Explanation {
        let Some(a) = self.agents.get(agent) else {
            return Explanation {
                permission: permission.to_string(),
                pattern: pattern.to_string(),
                considered: Vec::new(),
                action: Action::Deny,
                decided_by: None,
                note: Some(format!("there is no agent `{agent}`")),
            };
        };
        let considered: Vec<(Sourced, bool)> = a
            .layers
            .sourced()
            .into_iter()
            .filter(|s| s.rule.covers(permission))
            .map(|s| {
                let matched = s.rule.matches(permission, pattern);
                (s, matched)
            })
            .collect();
        let Decision { action, rule } = a.layers.evaluate(permission, pattern);
        let matched = |layer| considered.iter().any(|(s, m)| *m && s.layer == layer);
        let note = (!matched(Layer::AgentConfig) && matched(Layer::Config) && matched(Layer::Agent)).then(|| {
            format!("both the config and agent {agent}'s built-in rules match: the built-in rules only tighten the config, so the stricter decision applies")
        });
        Explanation {
            permission: permission.to_string(),
            pattern: pattern.to_string(),
            considered,
            action,
            decided_by: rule,
            note,
        }
    }
}

impl Permission for Agents {
    fn evaluate(&self, agent: &str, permission: &str, pattern: &str) -> Decision {
        match self.agents.get(agent) {
            Some(a) => a.layers.evaluate(permission, pattern),
            None => Decision { action: Action::Deny, rule: None },
        }
    }

    fn disabled(&self, agent: &str, permission: &str) -> bool {
        self.agents.get(agent).is_none_or(|a| a.layers.disabled(permission))
    }

    fn deny_rules(&self, agent: &str, permission: &str) -> Vec<Rule> {
        match self.agents.get(agent) {
            Some(a) => [&a.layers.defaults, &a.layers.config, &a.layers.builtin, &a.layers.own]
                .into_iter()
                .flat_map(|rules| rules.deny_rules(permission))
                .collect(),
            None => vec![Rule::new(permission, "*", Action::Deny)],
        }
    }
}

type BuiltinAgent = (&'static str, &'static str, AgentMode, Vec<Rule>);

fn builtin_agents() -> Vec<BuiltinAgent> {
    use Action::*;
    // Plan mode changes nothing, so it accepts only what it knows to be read-only: every other
    // tool (a custom tool, an MCP server's tool) asks, even where the config allows it.
    let mut plan = vec![Rule::new("*", "*", Ask)];
    plan.extend(PLAN_READ_ONLY_TOOLS.iter().map(|k| Rule::new(*k, "*", Allow)));
    plan.extend(Ruleset::defaults().rules().iter().filter(|r| r.permission == "read").cloned());
    plan.extend([Rule::new("edit", "*", Deny), Rule::new("bash", "*", Ask)]);
    plan.extend(PLAN_READ_ONLY_COMMANDS.iter().map(|c| Rule::new("bash", *c, Allow)));
    plan.extend(PLAN_ASK_FORMS.iter().map(|c| Rule::new("bash", *c, Ask)));
    plan.push(Rule::new("task", "*", Deny));
    plan.push(Rule::new("task", "explore", Allow));
    // Leaving plan mode asks the user (the agent runtime's `plan_exit` tool).
    plan.push(Rule::new("plan_exit", "*", Ask));
    // Its read-only sandbox is the point: a refused command is never rerun without it, not even
    // under `--yes`.
    plan.push(Rule::new("sandbox_escalation", "*", Deny));
    let mut explore = vec![Rule::new("*", "*", Deny)];
    explore.extend(["read", "list", "glob", "grep", "webfetch"].map(|k| Rule::new(k, "*", Allow)));
    explore.push(Rule::new("external_directory", "*", Ask));
    explore.push(Rule::new("doom_loop", "*", Ask));
    explore.extend(Ruleset::defaults().rules().iter().filter(|r| r.permission == "read" && r.pattern != "*").cloned());
    vec![
        ("build", "The default agent: reads, edits and runs commands.", AgentMode::Primary, vec![]),
        (
            "plan",
            "Plan mode: explores and plans without changing anything (edits are denied; only read-only commands run without asking).",
            AgentMode::Primary,
            plan,
        ),
        (
            "explore",
            "Searches and reads the codebase to answer a question; changes nothing.",
            AgentMode::Subagent,
            explore,
        ),
    ]
}

/// Normalises a file-permission rule's pattern: `./a` → `a`, `~/a` → `$HOME/a`, an absolute
/// path inside `root` → relative to it. Other rules are kept as written.
pub fn normalise_rule(rule: &Rule, root: &Path, home: Option<&Path>) -> Rule {
    if !PATH_KEYS.contains(&rule.permission.as_str()) {
        return rule.clone();
    }
    Rule { pattern: normalise_path_pattern(&rule.pattern, root, home), ..rule.clone() }
}

/// See [`normalise_rule`].
pub fn normalise_path_pattern(pattern: &str, root: &Path, home: Option<&Path>) -> String {
    if pattern == "*" {
        return pattern.to_string();
    }
    let mut p = pattern.to_string();
    if let Some(home) = home.and_then(Path::to_str) {
        for prefix in ["~/", "$HOME/"] {
            if let Some(rest) = p.strip_prefix(prefix) {
                p = format!("{}/{rest}", home.trim_end_matches('/'));
            }
        }
        if p == "~" || p == "$HOME" {
            p = home.to_string();
        }
    }
    while let Some(rest) = p.strip_prefix("./") {
        p = rest.to_string();
    }
    // A relative pattern that climbs out (`../*`, `src/../../out/*`) names paths outside the
    // worktree, which tools send as absolute paths: resolve it against the root. (Not when a
    // wildcard comes before the `..`: `*/..` has no one meaning.)
    let climbs = p.split('/').take_while(|c| !c.contains(['*', '?', '['])).any(|c| c == "..");
    if climbs && !p.starts_with('/') {
        p = root.join(&p).to_string_lossy().into_owned();
    }
    // Tools send paths with every symbolic link resolved, so a pattern naming a place through a
    // link (`~/.ssh/*` with a symlinked home, `/link/to/worktree/secrets/*`, `docs/*` where
    // `docs` links elsewhere) is rewritten to the place itself; otherwise it would never match.
    if let Some(resolved) = resolve_links(&p, root) {
        p = resolved;
    }
    if p.starts_with('/') {
        let lexical = crate::paths::lexical_normalise(Path::new(&p));
        if let Ok(rel) = lexical.strip_prefix(root) {
            let rel = rel.to_string_lossy().into_owned();
            return if rel.is_empty() { "*".to_string() } else { rel };
        }
        return lexical.to_string_lossy().into_owned();
    }
    p
}

/// `pattern` (absolute, or relative to `root`) with its literal leading part — the components
/// before the first wildcard — replaced by that part's real path, symbolic links resolved, when
/// it exists and resolving changes it (the longest existing part is resolved; the rest is kept).
/// The result is absolute. `None` when there is nothing to resolve or it would change nothing.
fn resolve_links(pattern: &str, root: &Path) -> Option<String> {
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts.iter().take_while(|c| !c.contains(['*', '?', '['])).count();
    // What comes after the literal part: the first wildcard component on (kept as written).
    let rest = &parts[literal..];
    let prefix = parts[..literal].join("/");
    let names_something = parts[..literal].iter().any(|c| !c.is_empty() && *c != "." && *c != "..");
    if !names_something {
        return None;
    }
    let absolute = if pattern.starts_with('/') { std::path::PathBuf::from(&prefix) } else { root.join(&prefix) };
    let lexical = crate::paths::lexical_normalise(&absolute);
    // The longest existing ancestor of the literal part, resolved, with the missing tail after it.
    let mut existing = lexical.as_path();
    let mut missing = Vec::new();
    let real = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break real;
        }
        missing.push(existing.file_name()?.to_owned());
        existing = existing.parent()?;
    };
    let mut resolved = real;
    for name in missing.iter().rev() {
        resolved.push(name);
    }
    if resolved == lexical {
        return None;
    }
    let mut out = resolved.to_string_lossy().into_owned();
    if !rest.is_empty() {
        out.push('/');
        out.push_str(&rest.join("/"));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agents(toml: &str) -> Agents {
        let mut c = Config::default();
        c.merge_str(Path::new("/w/toolshed.toml"), toml).unwrap();
        Agents::from_config(&c, Path::new("/w"), Some(Path::new("/home/u")))
    }

    #[test]
    fn path_patterns_are_normalised() {
        let root = Path::new("/w");
        let home = Some(Path::new("/home/u"));
        assert_eq!(normalise_path_pattern("./src/*", root, home), "src/*");
        assert_eq!(normalise_path_pattern("/w/src/*.rs", root, home), "src/*.rs");
        assert_eq!(normalise_path_pattern("/w/a/../b/*", root, home), "b/*");
        assert_eq!(normalise_path_pattern("~/notes/*", root, home), "/home/u/notes/*");
        assert_eq!(normalise_path_pattern("$HOME/x", root, home), "/home/u/x");
        assert_eq!(normalise_path_pattern("/etc/*", root, home), "/etc/*");
        assert_eq!(normalise_path_pattern("*.env", root, home), "*.env");
        assert_eq!(normalise_path_pattern("../*", root, home), "/*");
        assert_eq!(normalise_path_pattern("../out/*", Path::new("/base/w"), home), "/base/out/*");
        assert_eq!(normalise_path_pattern("./../out/o.txt", Path::new("/base/w"), home), "/base/out/o.txt");
        assert_eq!(normalise_path_pattern("src/../../out/*", Path::new("/base/w"), home), "/base/out/*");
        assert_eq!(normalise_path_pattern("src/../lib/*", root, home), "lib/*");
    }

    #[test]
    fn path_patterns_through_symbolic_links_name_the_real_place() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("w");
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::create_dir_all(base.join("real-home/.ssh")).unwrap();
        std::os::unix::fs::symlink("real-home", base.join("home")).unwrap();
        std::os::unix::fs::symlink("w", base.join("w-link")).unwrap();
        std::os::unix::fs::symlink("secrets", root.join("pub")).unwrap();
        let home = base.join("home");
        let norm = |p: &str| normalise_path_pattern(p, &root, Some(&home));
        let real_home = base.join("real-home");
        assert_eq!(norm("~/.ssh/*"), format!("{}/.ssh/*", real_home.display()));
        assert_eq!(norm("~/.ssh/id_*"), format!("{}/.ssh/id_*", real_home.display()));
        assert_eq!(norm("~/missing/dir/*"), format!("{}/missing/dir/*", real_home.display()));
        assert_eq!(norm(&format!("{}/secrets/*", base.join("w-link").display())), "secrets/*");
        assert_eq!(norm("pub/*"), "secrets/*");
        assert_eq!(norm("./pub/key"), "secrets/key");
        // Nothing to resolve: kept as written.
        for same in ["src/*", "secrets/*", "*.env", "*", ".", "*/pub/*", "/etc/*"] {
            assert_eq!(norm(same), same, "{same}");
        }
    }

    #[test]
    fn plan_denies_edits_and_hides_edit_tools() {
        let a = agents("");
        assert_eq!(a.evaluate("plan", "edit", "src/main.rs").action, Action::Deny);
        assert!(a.disabled("plan", "edit"));
        assert!(!a.disabled("plan", "bash"));
        assert!(!a.disabled("build", "edit"));
        assert_eq!(a.evaluate("plan", "bash", "git status").action, Action::Allow);
        assert_eq!(a.evaluate("plan", "bash", "find . -name x -delete").action, Action::Ask);
        assert_eq!(a.evaluate("plan", "bash", "cargo build").action, Action::Ask);
        assert_eq!(a.evaluate("plan", "sandbox_escalation", "touch x").action, Action::Deny);
    }

    #[test]
    fn explore_sees_only_reading_tools_and_still_asks_for_env_files() {
        let a = agents("");
        for key in ["read", "list", "glob", "grep", "webfetch"] {
            assert!(!a.disabled("explore", key), "{key}");
        }
        for key in ["edit", "bash", "task", "websearch"] {
            assert!(a.disabled("explore", key), "{key}");
        }
        assert_eq!(a.evaluate("explore", "read", "config/.env").action, Action::Ask);
        assert_eq!(a.evaluate("explore", "external_directory", "/etc/*").action, Action::Ask);
    }

    #[test]
    fn builtin_agent_rules_come_after_the_config_and_only_tighten_it() {
        for edit in ["allow", "ask"] {
            let a = agents(&format!("[permission]\nedit = \"{edit}\"\n"));
            assert_eq!(a.evaluate("plan", "edit", "x").action, Action::Deny, "edit = {edit}");
            assert!(a.disabled("plan", "edit"), "edit = {edit}: plan never sees the editing tools");
            assert_eq!(
                a.evaluate("build", "edit", "x").action,
                if edit == "allow" { Action::Allow } else { Action::Ask }
            );
        }
        // A deny of the config still denies in plan mode, whose own bash rule only asks.
        let a = agents("[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\" }\n");
        assert_eq!(a.evaluate("plan", "bash", "rm x").action, Action::Deny);
        assert_eq!(a.evaluate("plan", "bash", "git status").action, Action::Allow);
        assert_eq!(a.evaluate("plan", "bash", "cargo build").action, Action::Ask);
        // An ask of the config is not loosened by plan's read-only allow list.
        let a = agents("[permission]\nbash = { \"cat *\" = \"ask\" }\nread = { \"secrets/*\" = \"ask\" }\n");
        assert_eq!(a.evaluate("plan", "bash", "cat a").action, Action::Ask);
        assert_eq!(a.evaluate("explore", "read", "secrets/k").action, Action::Ask);
        // Explore denies what it does not list, whatever the config allows.
        let a = agents("[permission]\nbash = \"allow\"\nmytool = \"allow\"\n");
        assert_eq!(a.evaluate("explore", "bash", "ls").action, Action::Deny);
        assert_eq!(a.evaluate("explore", "mytool", "*").action, Action::Deny);
        assert!(a.disabled("explore", "bash"));
    }

    #[test]
    fn plan_asks_for_tools_it_does_not_know_to_be_read_only() {
        let a = agents("[permission]\nmark = \"allow\"\n\"mcp_*\" = \"allow\"\n");
        assert_eq!(a.evaluate("build", "mark", "*").action, Action::Allow);
        assert_eq!(a.evaluate("plan", "mark", "*").action, Action::Ask);
        assert_eq!(a.evaluate("plan", "mcp_docs_search", "*").action, Action::Ask);
        for key in PLAN_READ_ONLY_TOOLS {
            assert_eq!(a.evaluate("plan", key, "*").action, Action::Allow, "{key}");
        }
        assert_eq!(a.evaluate("plan", "read", "src/a.rs").action, Action::Allow);
        assert_eq!(a.evaluate("plan", "read", ".env").action, Action::Ask);
        assert_eq!(a.evaluate("plan", "external_directory", "/etc/*").action, Action::Ask);
        let a = agents("[agent.plan]\npermission = { mark = \"allow\" }\n");
        assert_eq!(a.evaluate("plan", "mark", "*").action, Action::Allow, "the user said so for plan");
    }

    #[test]
    fn allowing_everything_does_not_lift_the_sandbox_or_open_protected_paths() {
        for config in [
            "permission = \"allow\"\n",
            "[permission]\n\"*\" = \"allow\"\n",
            "[permission]\n\"*\" = { \"*\" = \"allow\" }\n",
        ] {
            let a = agents(config);
            assert_eq!(a.evaluate("build", "bash", "rm x").action, Action::Allow, "{config}");
            assert_eq!(a.evaluate("build", "sandbox_escalation", "make").action, Action::Ask, "{config}");
            assert_eq!(a.evaluate("build", "protected", "toolshed.toml").action, Action::Ask, "{config}");
        }
        let a = agents("[permission]\nsandbox_escalation = \"allow\"\nprotected = { \".git/*\" = \"allow\" }\n");
        assert_eq!(a.evaluate("build", "sandbox_escalation", "make").action, Action::Allow);
        assert_eq!(a.evaluate("build", "protected", ".git/*").action, Action::Allow);
        assert_eq!(a.evaluate("build", "protected", "toolshed.toml").action, Action::Ask);
    }

    #[test]
    fn an_agents_own_config_rules_decide_last() {
        let a = agents(
            "[permission]\nedit = \"allow\"\n[agent.plan]\npermission = { bash = \"deny\", edit = { \"notes/*\" = \"allow\" } }\n[agent.mine]\ndescription = \"Mine\"\n",
        );
        assert_eq!(a.evaluate("plan", "bash", "ls").action, Action::Deny);
        assert_eq!(a.evaluate("plan", "edit", "notes/a.md").action, Action::Allow, "the user said so for plan");
        assert_eq!(a.evaluate("plan", "edit", "src/a.rs").action, Action::Deny);
        assert_eq!(a.get("mine").unwrap().description, "Mine");
        assert_eq!(a.evaluate("mine", "bash", "ls").action, Action::Allow);
        assert_eq!(a.evaluate("nobody", "read", "x").action, Action::Deny);
    }

    #[test]
    fn a_tool_sources_default_can_be_lifted_by_a_builtin_agent() {
        // The agent runtime denies plan_exit by default; plan's own rule turns it into an ask.
        let extra = [Rule::new("plan_exit", "*", Action::Deny)];
        let a = Agents::with_defaults(&Config::default(), Path::new("/w"), None, &extra);
        assert_eq!(a.evaluate("build", "plan_exit", "*").action, Action::Deny);
        assert_eq!(a.evaluate("plan", "plan_exit", "*").action, Action::Ask);
        assert!(!a.disabled("plan", "plan_exit"));
    }

    #[test]
    fn absolute_and_dotted_rules_match_relative_requests() {
        let a = agents("[permission]\nread = { \"/w/secrets/*\" = \"deny\", \"./private/*\" = \"deny\" }\n");
        assert_eq!(a.evaluate("build", "read", "secrets/key").action, Action::Deny);
        assert_eq!(a.evaluate("build", "read", "private/x").action, Action::Deny);
        assert_eq!(a.evaluate("build", "read", "public/x").action, Action::Allow);
    }

    #[test]
    fn extra_defaults_sit_between_the_defaults_and_the_config() {
        let mut c = Config::default();
        c.merge_str(Path::new("/w/toolshed.toml"), "[permission]\nlint = \"allow\"\n").unwrap();
        let extra = [Rule::new("lint", "*", Action::Ask), Rule::new("fmt", "*", Action::Ask)];
        let a = Agents::with_defaults(&c, Path::new("/w"), None, &extra);
        assert_eq!(a.evaluate("build", "lint", "*").action, Action::Allow);
        assert_eq!(a.evaluate("build", "fmt", "*").action, Action::Ask);
        assert_eq!(a.evaluate("explore", "fmt", "*").action, Action::Deny, "explore denies everything not listed");
    }

    #[test]
    fn plan_and_explore_run_read_only_unless_configured_otherwise() {
        let parse = |toml: &str| {
            let mut c = Config::default();
            c.merge_str(Path::new("/w/toolshed.toml"), toml).unwrap();
            c
        };
        let c = parse("");
        assert_eq!(sandbox_mode(&c, "plan"), SandboxMode::ReadOnly);
        assert_eq!(sandbox_mode(&c, "explore"), SandboxMode::ReadOnly);
        assert_eq!(sandbox_mode(&c, "build"), SandboxMode::WorkspaceWrite);
        assert_eq!(sandbox_mode(&c, "someone"), SandboxMode::WorkspaceWrite);
        let c = parse("[sandbox]\nmode = \"full-access\"\n");
        assert_eq!(sandbox_mode(&c, "plan"), SandboxMode::FullAccess, "the user opted out of sandboxing");
        let c = parse(
            "[sandbox]\nmode = \"full-access\"\n[agent.plan]\nsandbox = \"read-only\"\n[agent.build]\nsandbox = \"workspace-write\"\n",
        );
        assert_eq!(sandbox_mode(&c, "plan"), SandboxMode::ReadOnly);
        assert_eq!(sandbox_mode(&c, "build"), SandboxMode::WorkspaceWrite);
        let c = parse("[agent.plan]\nsandbox = \"workspace-write\"\n");
        assert_eq!(sandbox_mode(&c, "plan"), SandboxMode::WorkspaceWrite);
    }

    #[test]
    fn explain_lists_considered_rules_and_the_decider() {
        let a = agents("[permission]\nbash = { \"*\" = \"ask\", \"git *\" = \"allow\" }\n");
        let e = a.explain("build", "bash", "git status");
        assert_eq!(e.action, Action::Allow);
        assert_eq!(e.decided_by, Some(Rule::new("bash", "git *", Action::Allow)));
        assert!(e.considered.iter().any(|(s, matched)| s.rule.pattern == "*" && s.rule.permission == "*" && *matched));
        assert_eq!(e.considered.last().unwrap().0.layer, Layer::Config);
        assert_eq!(e.considered.last().unwrap().0.file.as_deref(), Some(Path::new("/w/toolshed.toml")));
        let e = a.explain("plan", "bash", "git status");
        assert_eq!(e.action, Action::Allow);
        assert!(e.note.is_some(), "both the config and plan's rules match");
        let e = a.explain("plan", "bash", "cargo build");
        assert_eq!(e.action, Action::Ask);
        let layers: Vec<Layer> = e.considered.iter().map(|(s, _)| s.layer).collect();
        let mut sorted = layers.clone();
        sorted.sort_by_key(|l| *l as u8);
        assert_eq!(layers, sorted, "rules are listed in evaluation order");
    }
}
