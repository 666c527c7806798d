//! The worktree, its merged configuration, its custom tools and the agents' rules; and from
//! them the registry, the executor and the agent runtime.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolshed_agent::{ConfiguredModels, EventSink, Runtime, Settings, Store};
use toolshed_core::agents::Agents;
use toolshed_core::config::{Config, Override};
use toolshed_core::env::ChildEnv;
use toolshed_core::exec::{Executor, ExecutorBuilder};
use toolshed_core::file_access::FileAccess;
use toolshed_core::permission::{Approver, Rule};
use toolshed_core::registry::{ModelFamilyHook, PermissionHook, Registry, Source};
use toolshed_core::search::{AutoDefer, ToolSearch};
use toolshed_core::tool::Typed;
use toolshed_tools::custom::{CustomTools, Discover, Scope};

use crate::Error;

/// The worktree and its configuration.
pub struct Workspace {
    /// The worktree root (canonical).
    pub root: PathBuf,
    /// The directory relative paths start from (the current directory when it lies inside the
    /// root, else the root).
    pub cwd: PathBuf,
    /// The merged config.
    pub config: Config,
    /// The agents and their rules (the permission engine), with every tool source's defaults.
    pub agents: Arc<Agents>,
    /// The custom tools found for this command.
    pub custom: CustomTools,
    /// Where the file tools read and write text instead of the disk: the editor's buffers a
    /// front-end hosted by an editor offers (`toolshed acp`); `None`, the disk.
    pub file_access: Option<Arc<dyn FileAccess>>,
}

impl Workspace {
    /// Finds the root (`root`, else the git worktree of the current directory, else the current
    /// directory), loads the config (`config_file` instead of the user's, then the project's)
    /// and discovers the custom tools `scope` asks for.
    pub fn open(root: Option<&Path>, config_file: Option<&Path>, scope: &Scope) -> Result<Workspace, Error> {
        Workspace::open_with(root, config_file, &[], scope)
    }

    /// [`Workspace::open`], with `--config KEY=VALUE` overrides applied after the config files.
    pub fn open_with(
        root: Option<&Path>,
        config_file: Option<&Path>,
        overrides: &[Override],
        scope: &Scope,
    ) -> Result<Workspace, Error> {
        let (root, cwd) = locate(root)?;
        Workspace::open_located(root, cwd, config_file, overrides, scope)
    }

    /// [`Workspace::open_with`] for a session whose working directory is `dir` (the folder an
    /// editor opened): the worktree is found from `dir` as `toolshed` finds it from the current
    /// directory (the git worktree containing it, or a project accepted above it), and relative
    /// paths start at `dir`.
    pub fn open_in(
        dir: &Path,
        config_file: Option<&Path>,
        overrides: &[Override],
        scope: &Scope,
    ) -> Result<Workspace, Error> {
        let dir = dir.canonicalize().map_err(|e| Error::Usage(format!("{}: {e}", dir.display())))?;
        let root = toolshed_core::trust::find_worktree(&toolshed_core::paths::data_dir(), &dir);
        Workspace::open_located(root, dir, config_file, overrides, scope)
    }

    fn open_located(
        root: PathBuf,
        cwd: PathBuf,
        config_file: Option<&Path>,
        overrides: &[Override],
        scope: &Scope,
    ) -> Result<Workspace, Error> {
        let data_dir = toolshed_core::paths::data_dir();
        // Read once: the config takes the project's toolshed.toml as accepted, discovery its tools.
        let acceptance = toolshed_core::trust::Acceptance::load(&data_dir, &root);
        let config = Config::load_accepted(config_file, &root, overrides, &acceptance)
            .map_err(|e| Error::Usage(format!("config error: {e}")))?;
        if let Some(file) = config_file {
            // The file that replaces the user's config is theirs as much as `~/.config/toolshed`:
            // a model that could write it could lift its own limits.
            toolshed_core::protected::protect_config_file(&root, file);
        }
        let mut discover = Discover::accepted(&root, &cwd, data_dir, acceptance);
        discover.env = ChildEnv::from_config(&config);
        // A custom tool runs code the model can change (a script it calls, a module it imports,
        // a package in node_modules): it runs in the sandbox of a shell command, no looser.
        let shell = toolshed_tools::shell::Shell::from_config(&config);
        let (sandbox_root, sandbox_cwd) = (root.clone(), cwd.clone());
        discover.confine = Some(toolshed_tools::custom::Confine(Arc::new(move |command, agent| {
            // No agent yet (reading the tools' specs): as strictly as any agent that may write.
            let policy = if agent.is_empty() { shell.strictest_writing_policy() } else { shell.policy_for(agent) };
            toolshed_tools::shell::confine_tool_tracked(command, &policy, &sandbox_root, &sandbox_cwd)
                .map(|(_, leftovers)| Some(leftovers))
                .map_err(|e| e.to_string())
        })));
        let custom = discover.run(scope);
        Ok(Workspace::from_parts(root, cwd, config, custom))
    }

    /// A workspace from what the caller resolved itself (embedding, tests): the rules are built
    /// here, from the same defaults as [`Workspace::open`].
    pub fn from_parts(root: PathBuf, cwd: PathBuf, config: Config, custom: CustomTools) -> Workspace {
        let home = toolshed_core::paths::home_dir();
        let agents = Arc::new(Agents::with_defaults(&config, &root, home.as_deref(), &default_rules(&custom)));
        Workspace { root, cwd, config, agents, custom, file_access: None }
    }

    /// Why a model (or another setting) the person wrote into the worktree's toolshed.toml may
    /// not apply: the file is not applied as it is on disk. Front-ends add it to "no model".
    pub fn unapplied_project_hint(&self) -> Option<&'static str> {
        self.config.project_note.as_ref().map(|_| {
            "this worktree's toolshed.toml is not applied as it is on disk (it was never accepted, or changed since): if it sets the model, run `toolshed trust` to accept it"
        })
    }

    /// What a person should know about the project's own files that are not applied as they
    /// are on disk (not accepted yet, or changed since: see [`toolshed_core::trust`]), one
    /// sentence each, for standard error or a front-end's notice line.
    pub fn trust_notices(&self) -> Vec<String> {
        let mut notes: Vec<String> = self.config.user_note.iter().chain(&self.config.project_note).cloned().collect();
        // A repository inside an accepted project, and not accepted on its own, is part of it
        // (`trust::find_worktree`): say so, since the sandbox then reaches past the repository.
        let nearest = toolshed_core::paths::find_worktree(&self.cwd);
        if nearest != self.root
            && nearest.starts_with(&self.root)
            && nearest.join(".git").exists()
            && !toolshed_core::trust::record_file(&toolshed_core::paths::data_dir(), &nearest).is_file()
        {
            notes.push(format!(
                "{} is a git repository inside {}, and no one accepted it as a project of its own: toolshed works in {} (its settings, its sandbox). If you made or cloned that repository yourself and want to work in it alone, without the project's settings and protected paths, run `toolshed --root {} trust` once.",
                nearest.display(),
                self.root.display(),
                self.root.display(),
                toolshed_core::terminal::shell_word(&nearest.to_string_lossy())
            ));
        }
        for (dir, state) in self.custom.not_accepted() {
            let why = match state {
                toolshed_core::trust::State::Changed => "they changed since they were accepted; `toolshed trust` shows the difference and asks".to_string(),
                toolshed_core::trust::State::Unreadable(why) => format!("they cannot be accepted: {why}"),
                _ if !dir.starts_with(&self.root) => format!(
                    "they are your own but lie where a command may write ({}), and you have not accepted them as they are; read them, then run `toolshed trust` to use them",
                    toolshed_core::trust::user_exposure(dir).unwrap_or_else(|| dir.clone()).display()
                ),
                _ => "no one has accepted them yet (a file in the worktree can come from anyone, the model included); read them, then run `toolshed trust` to use them".to_string(),
            };
            notes.push(format!("the tools in {} are not loaded: {why}.", dir.display()));
        }
        notes
    }

    /// The agent to run as: the flag, else the config's default, else `build`.
    pub fn agent(&self, flag: Option<&str>) -> Result<String, Error> {
        let name = flag.or(self.config.default_agent.as_deref()).unwrap_or("build");
        if self.agents.get(name).is_some() {
            return Ok(name.to_string());
        }
        let known: Vec<&str> = self.agents.all().map(|a| a.name.as_str()).collect();
        Err(Error::Usage(format!("unknown agent `{name}`; known agents: {}", known.join(", "))))
    }

    /// The agent a session a person drives runs as (`run`, `chat`, `acp`): as
    /// [`Workspace::agent`], but only a primary one; a sub-agent (`mode = "subagent"`, such as
    /// `explore`) runs only inside `task`, as chat's `/agent` also says.
    pub fn primary_agent(&self, flag: Option<&str>) -> Result<String, Error> {
        let name = self.agent(flag)?;
        if self.agents.get(&name).is_some_and(toolshed_agent::runtime::is_primary) {
            return Ok(name);
        }
        let primary: Vec<&str> =
            self.agents.all().filter(|a| toolshed_agent::runtime::is_primary(a)).map(|a| a.name.as_str()).collect();
        Err(Error::Usage(format!(
            "`{name}` is a sub-agent: it runs only when the model starts it with the task tool; agents to run: {}",
            primary.join(", ")
        )))
    }

    /// Every tool (custom tools replacing built-ins of their name) with the exposure hooks for
    /// this workspace's rules and the model family, and `tool_search`. MCP servers' tools are
    /// added by [`crate::mcp::attach`].
    pub fn registry(&self) -> Registry {
        // The git directories a sandboxed command may write are fixed now, before any command
        // (or the model) had a chance to rewrite `.git`.
        toolshed_tools::shell::sandbox::pin_git_dirs(&self.root);
        let mut registry = Registry::new();
        toolshed_tools::register_builtins(&mut registry, &self.config);
        // Broken skills are left out here; `toolshed doctor` reports them.
        toolshed_tools::register_worktree_tools(&mut registry, &self.root, &self.cwd);
        self.custom.register(&mut registry);
        let edit_tools: HashMap<String, _> =
            self.agents.all().filter_map(|a| a.edit_tool.map(|t| (a.name.clone(), t))).collect();
        registry.add_hook(Arc::new(PermissionHook(self.agents.clone())));
        registry.add_hook(Arc::new(ModelFamilyHook::new(edit_tools)));
        // `lsp` only where a language server can serve the worktree's files.
        let servers = toolshed_tools::lsp::ServerTable::for_config(&self.config);
        registry.add_hook(Arc::new(toolshed_tools::lsp::Availability::new(servers, &self.root)));
        registry.register(Typed::new(ToolSearch::new()), Source::Runtime);
        registry.add_hook(Arc::new(self.auto_defer()));
        registry
    }

    /// An executor builder over `registry` with this workspace's rules, hooks, limits and
    /// directories, and `approver` answering what asks. Add a recorder for stored sessions.
    pub fn executor(&self, registry: Registry, approver: Arc<dyn Approver>) -> ExecutorBuilder {
        self.configure(Executor::builder(registry, self.root.clone()), approver)
    }

    /// Applies this workspace's rules, hooks, limits and directories to an executor builder.
    fn configure(&self, builder: ExecutorBuilder, approver: Arc<dyn Approver>) -> ExecutorBuilder {
        let builder = match &self.file_access {
            Some(files) => builder.file_access(files.clone()),
            None => builder,
        };
        builder
            .cwd(self.cwd.clone())
            .data_dir(toolshed_core::paths::data_dir())
            .limits(self.config.output)
            .permission(self.agents.clone())
            .approver(approver)
            .hooks(toolshed_tools::lsp::hooks(&self.config))
    }

    /// The agent runtime over `registry` (from [`Workspace::registry`], with MCP tools attached
    /// if wanted) and the session `store`, asking `approver` and reporting to `events`.
    pub fn agent_runtime(
        &self,
        registry: Registry,
        store: Arc<Store>,
        approver: Arc<dyn Approver>,
        events: EventSink,
    ) -> Arc<Runtime> {
        let settings = Settings {
            max_steps: self.config.session.max_steps,
            max_depth: 1,
            root: self.root.clone(),
            cwd: self.cwd.clone(),
            compact_at: self.config.session.compact_at,
        };
        let models = Arc::new(ConfiguredModels::new(self.config.clone()));
        // The todo list lives in the session database.
        let mut registry = registry;
        toolshed_tools::register_todo(&mut registry, store.clone());
        // Undo's shadow repository lives beside the session database.
        let data_dir = store.path().parent().map_or_else(toolshed_core::paths::data_dir, std::path::Path::to_path_buf);
        let undo = toolshed_agent::undo::Undo::new(&data_dir, &self.root, self.config.session.snapshot_retention_days);
        Runtime::builder(registry, store, models, self.agents.clone(), settings)
            .undo(undo)
            .events(events)
            .build(|b| self.configure(b, approver))
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

/// The worktree root (`root`, else the git worktree of the current directory — or a project a
/// person accepted below it, see [`toolshed_core::trust::find_worktree`] —, else the current
/// directory; canonical) and the directory relative paths start from (the current directory
/// when it lies inside the root, else the root). Commands that need no config use it alone.
pub fn locate(root: Option<&Path>) -> Result<(PathBuf, PathBuf), Error> {
    let current = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .map_err(|e| Error::Usage(format!("cannot read the current directory: {e}")))?;
    let root = match root {
        Some(dir) => {
            let dir = dir.canonicalize().map_err(|e| Error::Usage(format!("--root {}: {e}", dir.display())))?;
            if !dir.is_dir() {
                return Err(Error::Usage(format!("--root {}: not a directory", dir.display())));
            }
            dir
        }
        None => {
            let data_dir = toolshed_core::paths::data_dir();
            check_logical_directory(&data_dir, &current)?;
            let root = toolshed_core::trust::find_worktree(&data_dir, &current);
            if root.parent().is_none() {
                return Err(Error::Usage(
                    "toolshed will not take / as the worktree on its own (the tools could then reach every file): start it in a project directory, or say `--root /` if you mean it".into(),
                ));
            }
            root
        }
    };
    let cwd = if current.starts_with(&root) { current } else { root.clone() };
    Ok((root, cwd))
}

/// Refuses to start when the shell says it is in a project a person accepted (`$PWD`) but the
/// directory really is elsewhere: a symbolic link made in the project (`docs -> /`) or a
/// directory moved away under the shell would otherwise take toolshed out of the project's
/// settings and sandbox without anyone seeing it.
fn check_logical_directory(data_dir: &Path, current: &Path) -> Result<(), Error> {
    let Some(pwd) = std::env::var_os("PWD").map(PathBuf::from).filter(|p| p.is_absolute()) else { return Ok(()) };
    let logical = toolshed_core::paths::lexical_normalise(&pwd);
    if logical == current {
        return Ok(());
    }
    // `$PWD` names this directory through a link, or a directory that moved away. (A `$PWD`
    // that names another existing directory was only inherited from a parent that changed
    // directory without updating it.)
    match logical.canonicalize() {
        Ok(real) if real != current => return Ok(()),
        _ => {}
    }
    // Not the home directory as that project (a dotfiles repository): links from it to
    // elsewhere (`~/code -> /data/code`) are everyday things, and it is never the worktree of
    // a repository inside it anyway (`trust::enclosing_project`).
    let home = toolshed_core::paths::home_dir();
    let not_home = |d: &&Path| home.as_deref() != Some(*d) && !toolshed_core::paths::is_temp_dir(d);
    let accepted =
        logical.ancestors().filter(not_home).find(|d| toolshed_core::trust::record_file(data_dir, d).is_file());
    // Or the git worktree the shell's path lies in, accepted or not: a link the model made in
    // it (`docs -> ~`) must not take the person's next session to where it points. Seen through
    // the same links (`~/code -> /data/code`, `~/code/proj/.git`): only a directory that really
    // lies outside the repository the path names is refused.
    let project = accepted.map(|p| (p, "a project you accepted")).or_else(|| {
        logical.ancestors().filter(not_home).find(|d| d.join(".git").exists()).map(|p| (p, "a git worktree"))
    });
    match project {
        Some((project, what))
            if !current.starts_with(project.canonicalize().unwrap_or_else(|_| project.to_path_buf())) =>
        {
            Err(Error::Usage(format!(
                "your shell says it is in {} (in {}, {what}), but toolshed is running in {}, outside it (through a symbolic link, a directory moved away, or a stale $PWD). Change to the directory you mean, or name the worktree with --root.",
                logical.display(),
                project.display(),
                current.display()
            )))
        }
        _ => Ok(()),
    }
}

/// The defaults every tool source declares, in the rules' first layer: custom tools ask before
/// they run; the agent runtime's own tools (`plan_exit` outside plan mode) are denied unless an
/// agent's rules open them.
pub fn default_rules(custom: &CustomTools) -> Vec<Rule> {
    let mut rules = custom.default_rules();
    rules.extend(toolshed_agent::default_rules());
    rules
}
