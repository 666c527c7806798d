//! Agent profiles: the prompt, model and role of each agent. Built in: `build` (the default,
//! may do anything its permissions allow), `plan` (reads and plans; its permissions forbid
//! edits), and the sub-agents `explore` (read-only search) and `general`. `[agent.NAME]`
//! tables add agents or override fields. What an agent may *do* is its permission rules, which
//! live with the permission engine, not here.

use std::collections::BTreeMap;

use toolshed_core::config::{AgentMode, Config};

/// One agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentProfile {
    /// Its name.
    pub name: String,
    /// What it is for (shown to a model that can delegate to it).
    pub description: String,
    /// Instructions added to the system prompt.
    pub prompt: String,
    /// Its own model, if it has one.
    pub model: Option<String>,
    /// Whether it talks to the user, runs tasks, or both.
    pub mode: AgentMode,
}

impl AgentProfile {
    /// Whether `task` may start it.
    pub fn is_subagent(&self) -> bool {
        matches!(self.mode, AgentMode::Subagent | AgentMode::All)
    }

    /// Whether a user may run it directly.
    pub fn is_primary(&self) -> bool {
        matches!(self.mode, AgentMode::Primary | AgentMode::All)
    }
}

/// The prompt of the `explore` sub-agent.
pub const EXPLORE_PROMPT: &str = "You are a file search specialist running as a sub-agent. Find what the task asks for with the read and search tools, quickly; you cannot change anything. Finish with a concise answer that names the files and line numbers that matter: it is all the calling agent will see.";

/// The prompt of the `general` sub-agent.
pub const GENERAL_PROMPT: &str = "You are a sub-agent doing one task for another agent. Do the task, then finish with a concise report of what you found or changed: it is all the calling agent will see.";

/// Every agent, by name.
#[derive(Clone, Debug, Default)]
pub struct AgentCatalog {
    agents: BTreeMap<String, AgentProfile>,
}

impl AgentCatalog {
    /// The built-in agents, then `[agent.NAME]` from the config over them.
    pub fn from_config(config: &Config) -> Self {
        let mut agents = BTreeMap::new();
        let builtin = [
            (
                "build",
                "The default agent: reads, edits and runs commands as its permissions allow.",
                "",
                AgentMode::Primary,
            ),
            ("plan", "Plan mode: reads and plans, but may not edit files.", "", AgentMode::Primary),
            (
                "explore",
                "Fast read-only search of the codebase: finds files, definitions and usages and reports where they are.",
                EXPLORE_PROMPT,
                AgentMode::Subagent,
            ),
            (
                "general",
                "A general-purpose sub-agent for a self-contained multi-step task.",
                GENERAL_PROMPT,
                AgentMode::Subagent,
            ),
        ];
        for (name, description, prompt, mode) in builtin {
            agents.insert(
                name.to_string(),
                AgentProfile {
                    name: name.to_string(),
                    description: description.to_string(),
                    prompt: prompt.to_string(),
                    model: None,
                    mode,
                },
            );
        }
        for (name, cfg) in &config.agents {
            let entry = agents.entry(name.clone()).or_insert_with(|| AgentProfile {
                name: name.clone(),
                description: String::new(),
                prompt: String::new(),
                model: None,
                mode: AgentMode::All,
            });
            if let Some(d) = &cfg.description {
                entry.description = d.clone();
            }
            if let Some(p) = &cfg.prompt {
                entry.prompt = p.clone();
            }
            if let Some(m) = &cfg.model {
                entry.model = Some(m.clone());
            }
            if let Some(mode) = cfg.mode {
                entry.mode = mode;
            }
        }
        AgentCatalog { agents }
    }

    /// The agent `name`.
    pub fn get(&self, name: &str) -> Option<&AgentProfile> {
        self.agents.get(name)
    }

    /// Every agent, by name.
    pub fn all(&self) -> impl Iterator<Item = &AgentProfile> {
        self.agents.values()
    }

    /// The names of every agent, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.agents.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_adds_agents_and_overrides_builtin_fields() {
        let mut config = Config::default();
        config
            .merge_str(
                std::path::Path::new("toolshed.toml"),
                "[agent.review]\ndescription = \"Reviews\"\nmode = \"subagent\"\n[agent.build]\nmodel = \"local/qwen\"\n",
            )
            .unwrap();
        let c = AgentCatalog::from_config(&config);
        assert_eq!(c.names(), ["build", "explore", "general", "plan", "review"]);
        assert_eq!(c.get("build").unwrap().model.as_deref(), Some("local/qwen"));
        assert!(c.get("review").unwrap().is_subagent() && !c.get("review").unwrap().is_primary());
        assert!(c.get("plan").unwrap().is_primary() && !c.get("plan").unwrap().is_subagent());
    }
}
