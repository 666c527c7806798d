//! What every command needs: the worktree root, the merged config, the custom tools, the
//! agents' permission rules and the registry of tools.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolshed_core::agents::Agents;
use toolshed_core::config::Config;
use toolshed_core::env::ChildEnv;
use toolshed_core::permission::Permission;
use toolshed_core::registry::{ModelFamilyHook, PermissionHook, Registry, Source};
use toolshed_core::search::{AutoDefer, ToolSearch};
use toolshed_core::tool::Typed;
use toolshed_mcp::ConnectOptions;
use toolshed_tools::custom::{CustomTools, Discover, Scope};

use crate::CliError;

/// The worktree and its configuration.
pub struct Workspace {
    /// The worktree root (canonical).
    pub root: PathBuf,
    /// The directory relative paths start from (the current directory when it lies inside the
    /// root, else the root).
    pub cwd: PathBuf,
    /// The merged config.
    pub config: Config,
    /// The agents and their rules (the permission engine); custom tools ask by default.
    pub agents: Arc<Agents>,
    /// The custom tools found for this command.
    pub custom: CustomTools,
}

impl Workspace {
    /// Finds the root, loads the config and discovers the custom tools `scope` asks for.
    pub fn open(root: Option<&Path>, config_file: Option<&Path>, scope: &Scope) -> Result<Workspace, CliError> {
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
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut discover = Discover::new(&root, &cwd, toolshed_core::paths::data_dir());
        discover.env = ChildEnv::from_config(&config);
        let custom = discover.run(scope);
        let agents = Arc::new(Agents::with_defaults(&config, &root, home.as_deref(), &custom.default_rules()));
        Ok(Workspace { root, cwd, config, agents, custom })
    }

    /// The agent to run as: the flag, else the config's default, else `build`.
    pub fn agent(&self, flag: Option<&str>) -> Result<String, CliError> {
        let name = flag.or(self.config.default_agent.as_deref()).unwrap_or("build");
        if self.agents.get(name).is_some() {
            return Ok(name.to_string());
        }
        let known: Vec<&str> = self.agents.all().map(|a| a.name.as_str()).collect();
        Err(CliError::usage(format!("unknown agent `{name}`; known agents: {}", known.join(", "))))
    }

    /// The permission engine (every agent's rules).
    pub fn permission(&self) -> Arc<dyn Permission> {
        self.agents.clone()
    }

    /// Every tool (custom tools replacing built-ins of their name), with the exposure hooks for
    /// permissions and model family.
    pub fn registry(&self, permission: Arc<dyn Permission>) -> Registry {
        // What the sandbox lets commands write beside the worktree is fixed now, before any
        // command could rewrite `.git` (one `lstat` unless `.git` is a file).
        toolshed_tools::shell::sandbox::pin_git_dirs(&self.root);
        let mut registry = Registry::new();
        toolshed_tools::register_builtins(&mut registry, &self.config);
        // Broken skills are left out here; `toolshed doctor` reports them.
        toolshed_tools::register_worktree_tools(&mut registry, &self.root, &self.cwd);
        self.custom.register(&mut registry);
        let edit_tools: HashMap<String, _> =
            self.agents.all().filter_map(|a| a.edit_tool.map(|t| (a.name.clone(), t))).collect();
        registry.add_hook(Arc::new(PermissionHook(permission)));
        registry.add_hook(Arc::new(ModelFamilyHook::new(edit_tools)));
        registry.register(Typed::new(ToolSearch::new()), Source::Runtime);
        registry.add_hook(Arc::new(self.auto_defer()));
        registry
    }

    /// How MCP servers are started: in the worktree, with the `[env]` policy.
    pub fn mcp_options(&self) -> ConnectOptions {
        ConnectOptions { cwd: Some(self.root.clone()), env: ChildEnv::from_config(&self.config) }
    }

    /// Defers MCP servers without an explicit `exposure` when the direct tools would take more
    /// than `[tool_search] defer_when_share_exceeds` of the model's context.
    fn auto_defer(&self) -> AutoDefer {
        let auto = self.config.mcp.iter().filter(|(_, c)| c.exposure.is_none()).map(|(name, _)| name.clone());
        let contexts = self
            .config
            .providers
            .iter()
            .flat_map(|(p, c)| c.models.iter().filter_map(move |(id, m)| m.context.map(|n| (format!("{p}/{id}"), n))))
            .collect();
        AutoDefer::new(self.config.tool_search.defer_when_share_exceeds, auto, contexts)
    }

    /// The model to show tools for: the flag, else the config's default.
    pub fn model<'a>(&'a self, flag: Option<&'a str>) -> Option<&'a str> {
        flag.or(self.config.model.as_deref())
    }
}
