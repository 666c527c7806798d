//! What every command needs: the worktree root, the merged config, the agent's permission
//! rules and the registry of tools.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolshed_core::config::Config;
use toolshed_core::permission::{Permission, Ruleset};
use toolshed_core::registry::{ModelFamilyHook, PermissionHook, Registry};

use crate::CliError;

/// Agents every installation has.
const BUILTIN_AGENTS: &[&str] = &["build"];

/// The worktree and its configuration.
pub struct Workspace {
    /// The worktree root (canonical).
    pub root: PathBuf,
    /// The directory relative paths start from (the current directory when it lies inside the
    /// root, else the root).
    pub cwd: PathBuf,
    /// The merged config.
    pub config: Config,
}

impl Workspace {
    /// Finds the root and loads the config.
    pub fn open(root: Option<&Path>, config_file: Option<&Path>) -> Result<Workspace, CliError> {
        let current = std::env::current_dir()
            .and_then(|d| d.canonicalize())
            .map_err(|e| CliError::usage(format!("cannot read the current directory: {e}")))?;
        let root = match root {
            Some(dir) => {
                let dir = dir.canonicalize().map_err(|e| CliError::usage(format!("--root {}: {e}", dir.display())))?;
                if !dir.is_dir() {
                    return Err(CliError::usage(format!("--root {}: not a directory", dir.display())));
                }
                dir
            }
            None => toolshed_core::paths::find_worktree(&current),
        };
        let cwd = if current.starts_with(&root) { current } else { root.clone() };
        let config = Config::load(config_file, &root).map_err(|e| CliError::usage(format!("config error: {e}")))?;
        Ok(Workspace { root, cwd, config })
    }

    /// The agent to run as: the flag, else the config's default, else `build`.
    pub fn agent(&self, flag: Option<&str>) -> Result<String, CliError> {
        let name = flag.or(self.config.default_agent.as_deref()).unwrap_or("build");
        if BUILTIN_AGENTS.contains(&name) || self.config.agents.contains_key(name) {
            return Ok(name.to_string());
        }
        let mut known: Vec<&str> = BUILTIN_AGENTS.to_vec();
        known.extend(self.config.agents.keys().map(String::as_str));
        Err(CliError::usage(format!("unknown agent `{name}`; known agents: {}", known.join(", "))))
    }

    /// The rules that apply to `agent`: OpenCode's defaults, then `[permission]`, then the
    /// agent's own `permission` table.
    pub fn permission(&self, agent: &str) -> Arc<dyn Permission> {
        let mut rules = Ruleset::defaults();
        for rule in &self.config.permission {
            rules.push(rule.clone());
        }
        if let Some(own) = self.config.agents.get(agent).and_then(|a| a.permission.as_ref()) {
            for rule in &own.0 {
                rules.push(rule.clone());
            }
        }
        Arc::new(rules)
    }

    /// Every tool, with the exposure hooks for permissions and model family.
    pub fn registry(&self, permission: Arc<dyn Permission>) -> Registry {
        let mut registry = Registry::new();
        toolshed_tools::register_builtins(&mut registry);
        let edit_tools: HashMap<String, _> =
            self.config.agents.iter().filter_map(|(name, a)| a.edit_tool.map(|t| (name.clone(), t))).collect();
        registry.add_hook(Arc::new(PermissionHook(permission)));
        registry.add_hook(Arc::new(ModelFamilyHook::new(edit_tools)));
        registry
    }

    /// The model to show tools for: the flag, else the config's default.
    pub fn model<'a>(&'a self, flag: Option<&'a str>) -> Option<&'a str> {
        flag.or(self.config.model.as_deref())
    }
}
