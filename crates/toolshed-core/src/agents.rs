//! Agents and their permission rules: the built-in `build`, `plan` and `explore` agents, the
//! ones defined in `[agent.NAME]`, and the rule engine that decides per agent.
//!
//! An agent's effective rules are, in order (the last match wins): OpenCode's defaults, the
//! agent's built-in rules, the config's `[permission]`, the agent's own `permission` table.
//! File-permission patterns in rules (`read`, `edit`, `glob`, `grep`, `list`, `lsp`,
//! `external_directory`) may be written relative, `./`-prefixed, absolute or with `~`; they are
//! normalised to what tools send: paths relative to the worktree, absolute paths outside it.

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
    /// Its effective rules.
    #[serde(skip)]
    pub rules: Ruleset,
    /// Whether it is built in.
    pub builtin: bool,
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
    /// Rules whose permission key matches, in evaluation order, each with whether its pattern
    /// matched.
    pub considered: Vec<(Rule, bool)>,
    /// The action, and the rule that decided it (none: no rule matched, so `ask`).
    pub action: Action,
    /// The deciding rule.
    pub decided_by: Option<Rule>,
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
        let global = norm(&config.permission);
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
                    rules: Ruleset::new(own),
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
                rules: Ruleset::default(),
                builtin: false,
            });
            if let Some(d) = &cfg.description {
                agent.description = d.clone();
            }
            agent.mode = cfg.mode.unwrap_or(agent.mode);
            agent.prompt = cfg.prompt.clone().or(agent.prompt.take());
            agent.model = cfg.model.clone().or(agent.model.take());
            agent.edit_tool = cfg.edit_tool.or(agent.edit_tool);
        }
        for agent in agents.values_mut() {
            let mut rules = Ruleset::defaults();
            for r in extra_defaults {
                rules.push(r.clone());
            }
            rules.extend(&agent.rules);
            for r in &global {
                rules.push(r.clone());
            }
            if let Some(own) = config.agents.get(&agent.name).and_then(|a| a.permission.as_ref()) {
                for r in norm(&own.0) {
                    rules.push(r);
                }
            }
            agent.rules = rules;
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
        let empty = Ruleset::default();
        let rules = self.agents.get(agent).map_or(&empty, |a| &a.rules);
        let considered: Vec<(Rule, bool)> = rules
            .rules()
            .iter()
            .filter(|r| crate::wildcard::matches(permission, &r.permission))
            .map(|r| (r.clone(), r.matches(permission, pattern)))
            .collect();
        let Decision { action, rule } = rules.evaluate(permission, pattern);
        Explanation {
            permission: permission.to_string(),
            pattern: pattern.to_string(),
            considered,
            action,
            decided_by: rule,
        }
    }
}

impl Permission for Agents {
    fn evaluate(&self, agent: &str, permission: &str, pattern: &str) -> Decision {
        match self.agents.get(agent) {
            Some(a) => a.rules.evaluate(permission, pattern),
            None => Decision { action: Action::Deny, rule: None },
        }
    }

    fn disabled(&self, agent: &str, permission: &str) -> bool {
        self.agents.get(agent).is_none_or(|a| a.rules.disabled(permission))
    }
}

type BuiltinAgent = (&'static str, &'static str, AgentMode, Vec<Rule>);

fn builtin_agents() -> Vec<BuiltinAgent> {
    use Action::*;
    let mut plan = vec![Rule::new("edit", "*", Deny), Rule::new("bash", "*", Ask)];
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
    fn config_rules_come_after_builtin_ones_and_agent_rules_last() {
        let a = agents(
            "[permission]\nedit = \"allow\"\n[agent.plan]\npermission = { bash = \"deny\" }\n[agent.mine]\ndescription = \"Mine\"\n",
        );
        assert_eq!(
            a.evaluate("plan", "edit", "x").action,
            Action::Allow,
            "global config outranks built-in agent rules"
        );
        assert_eq!(a.evaluate("plan", "bash", "ls").action, Action::Deny);
        assert_eq!(a.get("mine").unwrap().description, "Mine");
        assert_eq!(a.evaluate("mine", "bash", "ls").action, Action::Allow);
        assert_eq!(a.evaluate("nobody", "read", "x").action, Action::Deny);
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
        assert!(e.considered.iter().any(|(r, matched)| r.pattern == "*" && r.permission == "*" && *matched));
    }
}
