//! Permission rules per agent, so plan mode and sub-agents really are restricted: OpenCode's
//! defaults, then the built-in agent's own rules, then `[permission]`, then the agent's
//! `permission` table (the last matching rule wins). An interim engine until the permission
//! engine with agent profiles lands in core; it implements the same [`Permission`] trait.

use std::collections::HashMap;

use toolshed_core::config::Config;
use toolshed_core::permission::{Action, Decision, Permission, Rule, Ruleset};

/// Rules by agent name; an agent without its own entry gets the base rules.
#[derive(Clone, Debug, Default)]
pub struct AgentRules {
    base: Ruleset,
    agents: HashMap<String, Ruleset>,
}

/// The rules a built-in agent adds to the defaults.
pub fn builtin_rules(agent: &str) -> Vec<Rule> {
    use Action::*;
    match agent {
        "plan" => vec![
            Rule::new("edit", "*", Deny),
            Rule::new("bash", "*", Ask),
            Rule::new("plan_exit", "*", Ask),
            Rule::new("task", "*", Deny),
            Rule::new("task", "explore", Allow),
        ],
        "explore" => vec![
            Rule::new("*", "*", Deny),
            Rule::new("read", "*", Allow),
            Rule::new("list", "*", Allow),
            Rule::new("glob", "*", Allow),
            Rule::new("grep", "*", Allow),
            Rule::new("webfetch", "*", Allow),
            Rule::new("read", "*.env", Ask),
            Rule::new("read", "*.env.*", Ask),
            Rule::new("read", "*.env.example", Allow),
        ],
        "general" => vec![Rule::new("task", "*", Deny), Rule::new("todo_write", "*", Deny)],
        _ => Vec::new(),
    }
}

impl AgentRules {
    /// The rules of every built-in and configured agent.
    pub fn from_config(config: &Config) -> Self {
        let mut base = Ruleset::defaults();
        // Only the plan agent may ask to leave plan mode.
        base.push(Rule::new("plan_exit", "*", Action::Deny));
        let mut names: Vec<&str> = vec!["build", "plan", "explore", "general"];
        names.extend(config.agents.keys().map(String::as_str));
        let mut agents = HashMap::new();
        for name in names {
            let mut rules = base.clone();
            for rule in builtin_rules(name) {
                rules.push(rule);
            }
            for rule in &config.permission {
                rules.push(rule.clone());
            }
            if let Some(own) = config.agents.get(name).and_then(|a| a.permission.as_ref()) {
                for rule in &own.0 {
                    rules.push(rule.clone());
                }
            }
            agents.insert(name.to_string(), rules);
        }
        for rule in &config.permission {
            base.push(rule.clone());
        }
        AgentRules { base, agents }
    }

    /// The rules `agent` runs under.
    pub fn ruleset(&self, agent: &str) -> &Ruleset {
        self.agents.get(agent).unwrap_or(&self.base)
    }
}

impl Permission for AgentRules {
    fn evaluate(&self, agent: &str, permission: &str, pattern: &str) -> Decision {
        self.ruleset(agent).evaluate(permission, pattern)
    }

    fn disabled(&self, agent: &str, permission: &str) -> bool {
        self.ruleset(agent).disabled(permission)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_cannot_edit_explore_only_reads_and_only_plan_may_exit_plan_mode() {
        let mut config = Config::default();
        config
            .merge_str(
                std::path::Path::new("toolshed.toml"),
                "[permission]\nbash = \"ask\"\n[agent.plan]\npermission = { bash = \"deny\" }\n",
            )
            .unwrap();
        let rules = AgentRules::from_config(&config);
        assert!(rules.disabled("plan", "edit"));
        assert!(!rules.disabled("build", "edit"));
        assert!(rules.disabled("plan", "bash"), "the agent's own table comes last");
        assert_eq!(rules.evaluate("build", "bash", "ls").action, Action::Ask);
        assert!(rules.disabled("build", "plan_exit"));
        assert_eq!(rules.evaluate("plan", "plan_exit", "*").action, Action::Ask);
        assert!(rules.disabled("explore", "edit"));
        assert!(!rules.disabled("explore", "bash"), "a global [permission] rule comes after the built-in ones");
        assert!(AgentRules::from_config(&Config::default()).disabled("explore", "bash"));
        assert!(!rules.disabled("explore", "grep"));
        assert_eq!(rules.evaluate("plan", "task", "explore").action, Action::Allow);
        assert_eq!(rules.evaluate("plan", "task", "general").action, Action::Deny);
        assert!(rules.disabled("general", "task"));
        assert_eq!(rules.evaluate("unknown", "bash", "ls").action, Action::Ask);
    }
}
