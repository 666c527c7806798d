//! # toolshed-custom
//!
//! Owns: custom tools as a tool source: manifest tools in any language and OpenCode tool files
//! through a JS host, their discovery, problems and default `ask` rules. Must never run a tool
//! file to list it when its cached spec is current, and never let a broken file break a
//! listing. Public face: [`Discover`], [`CustomTools`], [`Problem`].
//!
//! Custom tools: manifest tools in any language (`.toolshed/tools/*.toml`) and OpenCode's tool
//! files (`.opencode/tools/*.{ts,js}`), found per worktree and registered like built-ins.
//!
//! Discovery looks in the user's directories first (`~/.config/opencode/{tool,tools}`,
//! `~/.config/toolshed/tools`), then in every directory from the worktree root down to the
//! working directory (`.opencode/{tool,tools}`, then `.toolshed/tools`); a later tool of the same
//! name replaces an earlier one, and any custom tool replaces a built-in of its name. The file
//! name is the tool name; a file declaring several tools yields `<file>_<name>`.
//!
//! A file that cannot be used never fails discovery: it becomes a [`Problem`] (file, line, what
//! is wrong) and, where its tool name is known, an unavailable tool that says why when called.
//!
//! OpenCode files run in one long-lived JS host process (Bun, or Node for `.js`), started the
//! first time it is needed. Their schemas need the host too (it converts zod to JSON Schema), so
//! the specs are cached in the data directory, keyed by file path, size and modification time;
//! `toolshed tools` starts the host only for files that changed, and calling a manifest or
//! built-in tool never starts it.

mod cache;
mod host;
mod manifest;
mod opencode;
mod process;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use toolshed_core::env::ChildEnv;
use toolshed_core::permission::{Action, PermissionRequest, Rule};
use toolshed_core::registry::{Registry, Source};
use toolshed_core::tool::{BoxFuture, Exposure, Invocation, Tool, ToolError, ToolOutput, ToolSpec};
use toolshed_core::trust::{Acceptance, State};
use toolshed_process::ProgramError;

/// Which custom tools a discovery loads, and whether it trusts the spec cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every tool; OpenCode tool specs come from the cache when their file is unchanged.
    All,
    /// Every tool, every OpenCode file imported afresh (`toolshed tools --check`).
    Fresh,
    /// What one call of the tool `name` needs: every tool whose spec is at hand, but an
    /// OpenCode file missing from the cache is imported only if it may define `name`, so
    /// calling a manifest or built-in tool never starts the JS host.
    Tool(String),
}

/// A custom tool file that cannot be used as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file.
    pub file: PathBuf,
    /// The 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong, and what to do about it.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// A custom tool that cannot be used, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable {
    /// The name it would have.
    pub name: String,
    /// The file that defines it.
    pub file: PathBuf,
    /// Why it cannot be used.
    pub reason: String,
}

/// What a discovery found: the tools, the problems, and the tools that are unavailable.
pub struct CustomTools {
    tools: Vec<(Arc<dyn Tool>, PathBuf)>,
    unavailable: Vec<Unavailable>,
    problems: Vec<Problem>,
    not_accepted: Vec<(PathBuf, State)>,
}

impl CustomTools {
    /// The worktree's tool directories left out because no one accepted them as they are now
    /// (see [`toolshed_core::trust`]).
    pub fn not_accepted(&self) -> &[(PathBuf, State)] {
        &self.not_accepted
    }

    /// The working tools, each with the file that defines it, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = (&ToolSpec, &Path)> {
        self.tools.iter().map(|(t, f)| (t.spec(), f.as_path()))
    }

    /// The tools that cannot be used.
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// Every problem found, in discovery order.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The default permission of each custom tool: `ask` for its name, any pattern. Pass them to
    /// [`toolshed_core::agents::Agents::with_defaults`]; `[permission]` rules still override them.
    pub fn default_rules(&self) -> Vec<Rule> {
        self.tools.iter().map(|(t, _)| Rule::new(t.spec().permission.clone(), "*", Action::Ask)).collect()
    }

    /// Registers the working tools (replacing built-ins of the same name) and, under names still
    /// free, a hidden stand-in for each unavailable tool that explains why when called (a broken
    /// file never replaces a tool that works).
    pub fn register(&self, registry: &mut Registry) {
        for (tool, file) in &self.tools {
            registry.register_arc(tool.clone(), Source::Custom(file.clone()));
        }
        for u in &self.unavailable {
            if registry.get(&u.name).is_none() {
                registry.register(StandIn::new(u), Source::Custom(u.file.clone()));
            }
        }
    }
}

/// Where custom tools are looked for, and what loading them needs.
#[derive(Clone, Debug)]
pub struct Discover {
    /// The worktree root (tools run there).
    pub root: PathBuf,
    /// The working directory; `.toolshed` and `.opencode` directories from here up to `root`
    /// are searched.
    pub cwd: PathBuf,
    /// The user's manifest directories (default `~/.config/toolshed/tools`).
    pub user_manifest_dirs: Vec<PathBuf>,
    /// The user's OpenCode tool directories (default `~/.config/opencode/{tool,tools}`,
    /// `~/.opencode/{tool,tools}`, `$OPENCODE_CONFIG_DIR/{tool,tools}`).
    pub user_opencode_dirs: Vec<PathBuf>,
    /// toolshed's data directory (the JS host, its npm packages and the spec cache go under
    /// `custom-tools/`).
    pub data_dir: PathBuf,
    /// The JS runtime to use; `None` looks for `bun`, then `node`, on `PATH`.
    pub js_runtime: Option<PathBuf>,
    /// What the tools' processes (and the JS host) inherit of toolshed's environment; the
    /// default withholds secret-looking variables (see [`toolshed_core::env`]).
    pub env: ChildEnv,
    /// Which of the worktree's tool directories a person accepted as they are (the record under
    /// `data_dir`); the others are left out.
    pub acceptance: Acceptance,
    /// How the tools' processes (and the JS host) are confined before they start; `None` runs
    /// them as toolshed runs (embedding; toolshed's runtime always sets the shell's sandbox).
    pub confine: Option<Confine>,
}

/// Confines a custom tool's process before it starts (toolshed's runtime uses the sandbox of a
/// shell command, `toolshed_shell::confine_tool`), for the agent whose call starts it (empty for
/// the JS host, which serves every agent). An error (no sandbox where one is required) refuses
/// the call, with the reason for people and the model.
#[derive(Clone)]
pub struct Confine(pub Arc<ConfineFn>);

/// What [`Confine`] calls: the command about to start, and the calling agent. Returns what stops
/// the processes the command leaves running, to call once it has ended (a tool's process; the
/// JS host, which lives on, drops it).
pub type ConfineFn =
    dyn Fn(&mut std::process::Command, &str) -> Result<Option<toolshed_process::Leftovers>, String> + Send + Sync;

impl fmt::Debug for Confine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Confine")
    }
}

impl Discover {
    /// Discovery for the worktree `root` from `cwd`, with the user directories of this
    /// environment (`XDG_CONFIG_HOME`, `HOME`, `OPENCODE_CONFIG_DIR`).
    pub fn new(root: impl Into<PathBuf>, cwd: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> Self {
        let (root, data_dir): (PathBuf, PathBuf) = (root.into(), data_dir.into());
        let acceptance = Acceptance::load(&data_dir, &root);
        Discover::accepted(root, cwd, data_dir, acceptance)
    }

    /// [`Discover::new`], with the record already loaded (the config loader read it too).
    pub fn accepted(
        root: impl Into<PathBuf>,
        cwd: impl Into<PathBuf>,
        data_dir: impl Into<PathBuf>,
        acceptance: Acceptance,
    ) -> Self {
        let (root, data_dir): (PathBuf, PathBuf) = (root.into(), data_dir.into());
        let user_manifest_dirs = toolshed_core::paths::config_dir().map(|d| d.join("tools")).into_iter().collect();
        let bases = toolshed_core::paths::opencode_config_dirs();
        let mut user_opencode_dirs: Vec<PathBuf> = Vec::new();
        for base in bases {
            for sub in ["tool", "tools"] {
                let dir = base.join(sub);
                if !user_opencode_dirs.contains(&dir) {
                    user_opencode_dirs.push(dir);
                }
            }
        }
        Discover {
            root,
            cwd: cwd.into(),
            user_manifest_dirs,
            user_opencode_dirs,
            data_dir,
            js_runtime: None,
            env: ChildEnv::default(),
            acceptance,
            confine: None,
        }
    }

    /// The directories searched, in order: a later tool of the same name replaces an earlier one.
    pub fn directories(&self) -> Vec<(PathBuf, Kind)> {
        let mut dirs: Vec<(PathBuf, Kind)> = Vec::new();
        dirs.extend(self.user_opencode_dirs.iter().map(|d| (d.clone(), Kind::OpenCode)));
        dirs.extend(self.user_manifest_dirs.iter().map(|d| (d.clone(), Kind::Manifest)));
        let mut levels: Vec<&Path> = self.cwd.ancestors().take_while(|d| d.starts_with(&self.root)).collect();
        if levels.is_empty() {
            levels.push(&self.root);
        }
        for level in levels.into_iter().rev() {
            dirs.push((level.join(".opencode/tool"), Kind::OpenCode));
            dirs.push((level.join(".opencode/tools"), Kind::OpenCode));
            dirs.push((level.join(".toolshed/tools"), Kind::Manifest));
        }
        let mut seen = Vec::new();
        dirs.retain(|(d, _)| {
            let key = d.canonicalize().unwrap_or_else(|_| d.clone());
            let fresh = !seen.contains(&key);
            seen.push(key);
            fresh
        });
        dirs
    }

    /// Finds and loads every custom tool. Never fails: unusable files become problems.
    pub fn run(&self, scope: &Scope) -> CustomTools {
        let mut found =
            CustomTools { tools: Vec::new(), unavailable: Vec::new(), problems: Vec::new(), not_accepted: Vec::new() };
        let record = Arc::new((self.acceptance.clone(), self.data_dir.clone()));
        let mut js_files = Vec::new();
        let mut order: Vec<Slot> = Vec::new();
        for (dir, kind) in self.directories() {
            match self.acceptance.dir_state(&dir) {
                State::Accepted => {}
                // Accepted once and gone: nothing to load, nothing to say.
                State::Removed => continue,
                state => {
                    found.not_accepted.push((dir, state));
                    continue;
                }
            }
            for file in tool_files(&dir, kind) {
                match kind {
                    Kind::Manifest => {
                        let mut loaded = manifest::load(&file, &self.root);
                        for tool in &mut loaded.tools {
                            tool.env = self.env.clone();
                            tool.confine.clone_from(&self.confine);
                            tool.gate = Some(Gate::new(&record, &dir));
                        }
                        found.problems.extend(loaded.problems);
                        found.unavailable.extend(loaded.unavailable);
                        order.extend(
                            loaded.tools.into_iter().map(|t| Slot::Ready(Arc::new(t) as Arc<dyn Tool>, file.clone())),
                        );
                    }
                    Kind::OpenCode => {
                        order.push(Slot::Js(js_files.len()));
                        js_files.push(file);
                    }
                }
            }
        }
        let mut js = if js_files.is_empty() {
            Vec::new()
        } else {
            let loaded = opencode::load(self, &js_files, scope, &record);
            found.problems.extend(loaded.problems);
            found.unavailable.extend(loaded.unavailable);
            loaded.tools
        };
        for slot in order {
            match slot {
                Slot::Ready(tool, file) => found.tools.push((tool, file)),
                Slot::Js(i) => {
                    for tool in std::mem::take(&mut js[i]) {
                        found.tools.push((tool, js_files[i].clone()));
                    }
                }
            }
        }
        found
    }
}

/// Checked when a custom tool is called: its directory is still as a person accepted it (the
/// record read again, since a person may accept a new version while a session runs). Discovery
/// checked it once; a long-lived process (`chat`, `mcp serve`) would otherwise go on running a
/// file changed after that.
#[derive(Clone)]
pub(crate) struct Gate {
    /// The record discovery used, and the data directory to read it again from.
    record: Arc<(Acceptance, PathBuf)>,
    /// The tool directory the tool was found in.
    dir: PathBuf,
}

impl Gate {
    /// The gate of a tool found in `dir`.
    pub(crate) fn new(record: &Arc<(Acceptance, PathBuf)>, dir: &Path) -> Gate {
        Gate { record: record.clone(), dir: dir.to_path_buf() }
    }

    /// `Ok` when the tool `name` may run: its directory is as accepted. The record is read
    /// again only when the directory differs from the one discovery used (a person may have
    /// accepted it since).
    pub(crate) fn check(&self, name: &str) -> Result<(), ToolError> {
        let (acceptance, data_dir) = &*self.record;
        let state = match acceptance.dir_state(&self.dir) {
            State::Accepted => State::Accepted,
            _ => acceptance.reload(data_dir).dir_state(&self.dir),
        };
        let why = match state {
            State::Accepted => return Ok(()),
            State::Removed => "its directory is gone".to_string(),
            State::New | State::Changed => {
                "its files changed after a person accepted them, and changed tool files run only once a person accepts them again (`toolshed trust`)".to_string()
            }
            State::Unreadable(why) => format!("its directory cannot be compared with what a person accepted: {why}"),
        };
        Err(ToolError::model(format!(
            "The custom tool {name} was not run: {why} ({}). Do not call it again in this session; tell the user.",
            self.dir.display()
        )))
    }
}

/// A stamp of what a tool directory holds: every file's path, size and modification time, as
/// deep as acceptance reads (a tool file's helper modules are beside it or below). Equal stamps:
/// the files a JS runtime imported from there are still the files on disk.
pub(crate) fn dir_stamp(dir: &Path) -> u64 {
    use std::hash::{Hash, Hasher};
    fn walk(dir: &Path, depth: usize, count: &mut usize, hasher: &mut std::collections::hash_map::DefaultHasher) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            *count += 1;
            if *count > 4096 {
                return;
            }
            let Ok(meta) = std::fs::metadata(&path) else { continue };
            path.hash(hasher);
            meta.len().hash(hasher);
            meta.modified().ok().hash(hasher);
            if meta.is_dir() && depth < 8 && path.file_name().is_none_or(|n| n != "node_modules") {
                walk(&path, depth + 1, count, hasher);
            }
        }
    }
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    walk(dir, 0, &mut 0, &mut hasher);
    hasher.finish()
}

enum Slot {
    Ready(Arc<dyn Tool>, PathBuf),
    Js(usize),
}

/// The two kinds of custom tool directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `*.toml` manifests.
    Manifest,
    /// OpenCode's `*.ts` / `*.js` tool files.
    OpenCode,
}

/// The tool files of one directory, sorted by name (not recursive; symlinks followed).
fn tool_files(dir: &Path, kind: Kind) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or_default();
            let wanted = match kind {
                Kind::Manifest => ext == "toml",
                Kind::OpenCode => ext == "ts" || ext == "js",
            };
            wanted && p.is_file()
        })
        .collect();
    files.sort();
    files
}

/// The tool name a file gives its main tool: its name without the extension.
fn stem(file: &Path) -> String {
    file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Why `name` cannot be a tool name, if it cannot.
fn invalid_name(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > 64 || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Some(format!(
            "`{name}` is not a valid tool name: use 1 to 64 letters, digits, `_` or `-` (the file name is the tool name)"
        ));
    }
    None
}

/// Where `program` is: a path with a `/` is taken relative to `root`; a bare name is looked up
/// on `PATH`, executable. A relative path needs only to be a file: whether it may be executed
/// is found out when the tool runs (its error then says so).
fn find_program(program: &str, root: &Path) -> Option<PathBuf> {
    match toolshed_process::find_program(program, root) {
        Ok(path) => Some(path),
        Err(ProgramError::NotExecutable(path)) if path.is_file() => Some(path),
        Err(_) => None,
    }
}

/// The hidden tool registered in place of an unavailable one: calling it says why.
struct StandIn {
    spec: ToolSpec,
    message: String,
}

impl StandIn {
    fn new(u: &Unavailable) -> Self {
        let spec = ToolSpec::new(
            u.name.clone(),
            format!("Unavailable custom tool ({}): {}", u.file.display(), u.reason),
            json!({"type": "object", "properties": {}}),
        )
        .with_exposure(Exposure::Hidden);
        let message = format!(
            "The custom tool {} cannot be used: {} ({}). Run `toolshed tools --check` for details; do not call it again until it is fixed.",
            u.name,
            u.reason,
            u.file.display()
        );
        StandIn { spec, message }
    }
}

impl Tool for StandIn {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, _args: serde_json::Value) -> Result<Box<dyn Invocation + '_>, ToolError> {
        Err(ToolError::model(&self.message))
    }
}

/// The invocation of a custom tool: the permission key is the tool's name, the pattern `*`.
fn custom_permission(spec: &ToolSpec) -> Vec<PermissionRequest> {
    vec![PermissionRequest::new(&spec.permission, ["*"])]
}

/// A boxed run of a custom tool.
type Run = BoxFuture<'static, Result<ToolOutput, ToolError>>;

/// Runs `f` on a new thread with its own single-threaded runtime, so synchronous discovery can
/// wait on the JS host whether or not the caller is inside a runtime.
fn block_on_fresh<T: Send>(f: impl std::future::Future<Output = T> + Send) -> Option<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().ok()?;
            Some(rt.block_on(f))
        })
        .join()
        .ok()
        .flatten()
    })
}

/// The most bytes a custom tool's description and parameters may take: every request that
/// offers the tool carries them (the built-in tools take 12 KB together).
pub const MAX_SPEC_BYTES: usize = 32 * 1024;

/// Why the tool `name` is not offered when its definition is over [`MAX_SPEC_BYTES`].
fn too_large(name: &str, description: &str, parameters: &serde_json::Value) -> Option<String> {
    let size = description.len() + parameters.to_string().len();
    (size > MAX_SPEC_BYTES).then(|| {
        format!(
            "{name}: its description and arguments take {size} bytes, and every request would carry them; a tool's may take at most {} KiB: shorten them (a long list of values belongs in the description's words, or in a lookup the tool does)",
            MAX_SPEC_BYTES / 1024
        )
    })
}
