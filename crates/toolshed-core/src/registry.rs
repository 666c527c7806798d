//! The registry of tools, and what a model sees of it for an (agent, model) view.
//!
//! A later registration under the same name replaces the earlier one in place and remembers
//! what it replaced, so `toolshed tools` can show the override. Exposure hooks (permissions,
//! model family, tool search) adjust or hide each tool per view.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use crate::permission::Permission;
use crate::tool::{Exposure, Tool, ToolSpec};

/// The name of `tool_search` (in `crate::search`), which the registry leaves out of a view
/// with no deferred tool.
pub const TOOL_SEARCH: &str = "tool_search";

/// Where a tool came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Shipped with toolshed.
    Builtin,
    /// Part of the runtime itself (e.g. `tool_search`).
    Runtime,
    /// A custom tool file.
    Custom(PathBuf),
    /// An MCP server, by its config name.
    Mcp(String),
    /// Registered by an embedding program.
    Library,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Builtin => f.write_str("builtin"),
            Source::Runtime => f.write_str("runtime"),
            Source::Custom(path) => write!(f, "custom:{}", path.display()),
            Source::Mcp(server) => write!(f, "mcp:{server}"),
            Source::Library => f.write_str("library"),
        }
    }
}

/// A registered tool.
pub struct Entry {
    /// The tool.
    pub tool: Arc<dyn Tool>,
    /// Where it came from.
    pub source: Source,
    /// The source of the tool this one replaced, if it replaced one.
    pub overrides: Option<Source>,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

impl Entry {
    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    /// The compiled validator of the tool's parameters schema, built on first use. toolshed's
    /// own tools take only the parameters they list: their schemas leave
    /// `"additionalProperties": false` out of what models are sent (it is the same for all of
    /// them), and it is added back here, so a misspelt parameter is refused, never ignored.
    pub fn validator(&self) -> Result<&jsonschema::Validator, &str> {
        self.validator
            .get_or_init(|| {
                let parameters = &self.tool.spec().parameters;
                let strict = match self.source {
                    Source::Builtin | Source::Runtime => crate::schema::closed(parameters),
                    _ => None,
                };
                jsonschema::validator_for(strict.as_ref().unwrap_or(parameters))
                    .map_err(|e| format!("the tool's parameters schema is invalid: {e}"))
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

/// Whom a tool list is for.
#[derive(Clone, Copy, Debug, Default)]
pub struct View<'a> {
    /// The agent (its permissions apply).
    pub agent: &'a str,
    /// The model id (`provider/model`), if known.
    pub model: Option<&'a str>,
    /// Deferred tools this session found through `tool_search`; they count as direct.
    pub found: Option<&'a HashSet<String>>,
}

/// A tool as one view sees it.
#[derive(Clone)]
pub struct Visible<'a> {
    /// The registered tool.
    pub entry: &'a Entry,
    /// Its exposure in this view.
    pub exposure: Exposure,
    /// The spec this view is shown instead of the tool's own, when a hook adapted it.
    pub adapted: Option<Box<ToolSpec>>,
}

impl Visible<'_> {
    /// The spec this view is shown: the adapted one, else the tool's.
    pub fn spec(&self) -> &ToolSpec {
        self.adapted.as_deref().unwrap_or_else(|| self.entry.spec())
    }
}

/// Adjusts what a view sees of one tool: keep its exposure, change it, or hide it (`None`).
pub trait VisibilityHook: Send + Sync {
    /// The tool's exposure for `view`, given the exposure so far.
    fn apply(&self, registry: &Registry, view: &View<'_>, spec: &ToolSpec, exposure: Exposure) -> Option<Exposure>;

    /// A spec to show `view` instead of the tool's own (e.g. without what the agent may not
    /// use). Runs for tools the hooks kept; `None` leaves the spec as it is.
    fn adapt(&self, _view: &View<'_>, _tool: &dyn Tool) -> Option<ToolSpec> {
        None
    }
}

/// Tools by name, in registration order, plus the visibility hooks.
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    hooks: Vec<Arc<dyn VisibilityHook>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Registers `tool` from `source`. A tool of the same name is replaced in place; its source
    /// is returned and remembered as overridden.
    pub fn register(&mut self, tool: impl Tool, source: Source) -> Option<Source> {
        self.register_arc(Arc::new(tool), source)
    }

    /// Registers an already shared tool.
    pub fn register_arc(&mut self, tool: Arc<dyn Tool>, source: Source) -> Option<Source> {
        let name = tool.spec().name.clone();
        let entry = Entry { tool, source, overrides: None, validator: OnceLock::new() };
        match self.index.get(&name) {
            Some(&i) => {
                let old = std::mem::replace(&mut self.entries[i], entry);
                self.entries[i].overrides = Some(old.source.clone());
                Some(old.source)
            }
            None => {
                self.index.insert(name, self.entries.len());
                self.entries.push(entry);
                None
            }
        }
    }

    /// Registers a tool shipped with toolshed.
    pub fn register_builtin(&mut self, tool: impl Tool) -> Option<Source> {
        self.register(tool, Source::Builtin)
    }

    /// Adds a visibility hook; hooks run in the order added.
    pub fn add_hook(&mut self, hook: Arc<dyn VisibilityHook>) {
        self.hooks.push(hook);
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|&i| &self.entries[i])
    }

    /// Every registered tool, in registration order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Number of registered tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Up to `limit` registered names closest to `name` (for "did you mean" messages).
    pub fn closest(&self, name: &str, limit: usize) -> Vec<&str> {
        closest_names(self.entries.iter().map(|e| e.spec().name.as_str()), name, limit)
    }

    /// Every tool with its exposure for `view`, hidden ones included, minus those a hook
    /// removed (e.g. denied outright for the agent), and minus `tool_search` when nothing is
    /// deferred. Registration order.
    pub fn exposed(&self, view: &View<'_>) -> Vec<Visible<'_>> {
        let mut visible: Vec<Visible<'_>> = self
            .entries
            .iter()
            .filter_map(|entry| {
                let spec = entry.spec();
                let mut exposure = spec.exposure;
                if exposure == Exposure::Deferred && view.found.is_some_and(|f| f.contains(&spec.name)) {
                    exposure = Exposure::Direct;
                }
                for hook in &self.hooks {
                    exposure = hook.apply(self, view, spec, exposure)?;
                }
                let adapted = self.hooks.iter().find_map(|hook| hook.adapt(view, entry.tool.as_ref())).map(Box::new);
                Some(Visible { entry, exposure, adapted })
            })
            .collect();
        // `tool_search` is offered only while it has something to find.
        if !visible.iter().any(|v| v.exposure == Exposure::Deferred) {
            visible.retain(|v| !(v.entry.source == Source::Runtime && v.entry.spec().name == TOOL_SEARCH));
        }
        visible
    }

    /// The tools a model is sent for `view`: the direct ones.
    pub fn direct(&self, view: &View<'_>) -> Vec<Visible<'_>> {
        self.exposed(view).into_iter().filter(|v| v.exposure == Exposure::Direct).collect()
    }
}

/// Up to `limit` of `candidates` closest to `name` (for "did you mean" messages).
pub fn closest_names<'a>(candidates: impl Iterator<Item = &'a str>, name: &str, limit: usize) -> Vec<&'a str> {
    let lower = name.to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> = candidates
        .map(|cand| {
            let c = cand.to_ascii_lowercase();
            let mut score = strsim::jaro_winkler(&lower, &c);
            if !lower.is_empty() && (c.contains(&lower) || lower.contains(&c)) {
                score += 0.2;
            }
            (score, cand)
        })
        // Below this, names share only letters any two names share (`frobnicate`, `todo_write`).
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored.into_iter().take(limit).map(|(_, n)| n).collect()
}

/// The longest tool name providers accept.
pub const MAX_TOOL_NAME: usize = 64;

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The name of a tool imported from `namespace` (an MCP server): `NAMESPACE_TOOL`, sanitised,
/// and when longer than [`MAX_TOOL_NAME`], cut and ended with `_` and 12 hex digits of a hash
/// of the full name, so distinct long names stay distinct and stable across runs.
pub fn qualified_name(namespace: &str, tool: &str) -> String {
    let full = format!("{}_{}", sanitize_name(namespace), sanitize_name(tool));
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    let suffix = format!("_{:012x}", fnv1a(format!("{namespace}\0{tool}").as_bytes()) & 0xffff_ffff_ffff);
    format!("{}{suffix}", &full[..MAX_TOOL_NAME - suffix.len()])
}

/// FNV-1a, 64 bits: a hash whose value never changes between builds or platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Which editing tools a model family gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EditTool {
    /// `edit` and `write`.
    Edit,
    /// `apply_patch`.
    ApplyPatch,
}

impl EditTool {
    /// The editing tool a model is trained on: GPT-5-class models (ids containing `gpt-`, but
    /// not `gpt-4` or `oss`) get `apply_patch`, all others `edit` and `write`.
    pub fn for_model(model: &str) -> EditTool {
        let id = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
        if id.contains("gpt-") && !id.contains("gpt-4") && !id.contains("oss") {
            EditTool::ApplyPatch
        } else {
            EditTool::Edit
        }
    }
}

/// Shows a model either `apply_patch` or `edit` + `write`, by model family or by the agent's
/// `edit_tool` setting. Without a model, both are shown. Only applies when the other choice
/// exists in the registry, so a model is never left without an editing tool.
#[derive(Clone, Debug, Default)]
pub struct ModelFamilyHook {
    per_agent: HashMap<String, EditTool>,
}

impl ModelFamilyHook {
    /// A hook where `per_agent` fixes the choice for some agents.
    pub fn new(per_agent: HashMap<String, EditTool>) -> Self {
        ModelFamilyHook { per_agent }
    }
}

impl VisibilityHook for ModelFamilyHook {
    fn apply(&self, registry: &Registry, view: &View<'_>, spec: &ToolSpec, exposure: Exposure) -> Option<Exposure> {
        let is_patch = spec.name == "apply_patch";
        let is_edit = spec.name == "edit" || spec.name == "write";
        if !is_patch && !is_edit {
            return Some(exposure);
        }
        let choice = match (self.per_agent.get(view.agent), view.model) {
            (Some(&choice), _) => choice,
            (None, Some(model)) => EditTool::for_model(model),
            (None, None) => return Some(exposure),
        };
        let keep = match choice {
            EditTool::ApplyPatch => is_patch || registry.get("apply_patch").is_none(),
            EditTool::Edit => is_edit || (registry.get("edit").is_none() && registry.get("write").is_none()),
        };
        keep.then_some(exposure)
    }
}

/// Hides tools whose permission key the agent's rules deny outright (`"*" = deny`).
pub struct PermissionHook(pub Arc<dyn Permission>);

impl VisibilityHook for PermissionHook {
    fn apply(&self, _registry: &Registry, view: &View<'_>, spec: &ToolSpec, exposure: Exposure) -> Option<Exposure> {
        (!self.0.disabled(view.agent, &spec.permission)).then_some(exposure)
    }

    fn adapt(&self, view: &View<'_>, tool: &dyn Tool) -> Option<ToolSpec> {
        tool.spec_for(view.agent, self.0.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::permission::{Action, Rule, Ruleset};
    use crate::tool::{FnTool, ToolOutput, tool_fn};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}

    fn named(
        name: &str,
    ) -> FnTool<
        NoArgs,
        impl Fn(NoArgs, crate::tool::ToolContext) -> std::future::Ready<Result<ToolOutput, crate::tool::ToolError>> + use<>,
    > {
        tool_fn(name.to_string(), format!("The {name} tool."), |_: NoArgs, _| {
            std::future::ready(Ok(ToolOutput::text("ok")))
        })
    }

    fn names(v: &[Visible<'_>]) -> Vec<String> {
        v.iter().map(|v| v.entry.spec().name.clone()).collect()
    }

    #[test]
    fn qualified_names_are_sanitised_and_long_ones_hashed() {
        assert_eq!(qualified_name("git hub", "create.issue"), "git_hub_create_issue");
        let long = qualified_name("server", &"x".repeat(80));
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert!(long.starts_with("server_xxx"), "{long}");
        assert_ne!(long, qualified_name("server", &"x".repeat(81)));
        assert_eq!(long, qualified_name("server", &"x".repeat(80)));
    }

    #[test]
    fn tool_search_is_listed_only_while_something_is_deferred() {
        let mut r = Registry::new();
        r.register_builtin(named("read"));
        r.register(crate::tool::Typed::new(crate::search::ToolSearch::new()), Source::Runtime);
        let view = View { agent: "build", model: None, found: None };
        assert_eq!(names(&r.direct(&view)), ["read"]);
        r.register(named("gh_pr").exposure(Exposure::Deferred), Source::Mcp("gh".into()));
        assert_eq!(names(&r.direct(&view)), ["read", "tool_search"]);
    }

    #[test]
    fn later_registration_overrides_in_place_and_remembers() {
        let mut r = Registry::new();
        r.register_builtin(named("read"));
        r.register_builtin(named("grep"));
        let replaced = r.register(named("read"), Source::Custom("/w/.toolshed/tools/read.toml".into()));
        assert_eq!(replaced, Some(Source::Builtin));
        assert_eq!(r.len(), 2);
        let read = r.get("read").unwrap();
        assert_eq!(read.overrides, Some(Source::Builtin));
        assert_eq!(read.source.to_string(), "custom:/w/.toolshed/tools/read.toml");
        assert_eq!(r.entries()[0].spec().name, "read");
    }

    #[test]
    fn closest_names_rank_similar_tools_first() {
        let mut r = Registry::new();
        for n in ["read", "write", "grep", "glob", "list", "bash"] {
            r.register_builtin(named(n));
        }
        assert_eq!(r.closest("raed", 3)[0], "read");
        assert_eq!(r.closest("read_file", 3)[0], "read");
        assert!(r.closest("zzzzzz", 3).is_empty());
    }

    #[test]
    fn model_family_picks_apply_patch_for_gpt5_and_edit_otherwise() {
        let mut r = Registry::new();
        for n in ["read", "edit", "write", "apply_patch"] {
            r.register_builtin(named(n));
        }
        r.add_hook(Arc::new(ModelFamilyHook::default()));
        let gpt5 = View { agent: "build", model: Some("openai/gpt-5.1"), found: None };
        assert_eq!(names(&r.direct(&gpt5)), ["read", "apply_patch"]);
        let claude = View { agent: "build", model: Some("anthropic/claude-sonnet-4-5"), found: None };
        assert_eq!(names(&r.direct(&claude)), ["read", "edit", "write"]);
        for m in ["openai/gpt-4.1", "openrouter/gpt-oss-120b"] {
            assert_eq!(EditTool::for_model(m), EditTool::Edit, "{m}");
        }
        let none = View { agent: "build", model: None, found: None };
        assert_eq!(r.direct(&none).len(), 4);
    }

    #[test]
    fn model_family_never_leaves_a_model_without_an_editing_tool() {
        let mut r = Registry::new();
        r.register_builtin(named("edit"));
        r.register_builtin(named("write"));
        r.add_hook(Arc::new(ModelFamilyHook::default()));
        let gpt5 = View { agent: "build", model: Some("gpt-5"), found: None };
        assert_eq!(names(&r.direct(&gpt5)), ["edit", "write"]);
    }

    #[test]
    fn permission_hook_hides_denied_tools_and_found_tools_become_direct() {
        let mut r = Registry::new();
        r.register_builtin(named("read"));
        r.register_builtin(named("webfetch"));
        r.register_builtin(named("gh_pr").exposure(Exposure::Deferred));
        let mut rules = Ruleset::defaults();
        rules.push(Rule::new("webfetch", "*", Action::Deny));
        r.add_hook(Arc::new(PermissionHook(Arc::new(rules))));
        let view = View { agent: "build", model: None, found: None };
        assert_eq!(names(&r.direct(&view)), ["read"]);
        assert_eq!(names(&r.exposed(&view)), ["read", "gh_pr"]);
        let found: HashSet<String> = ["gh_pr".to_string()].into();
        let view = View { found: Some(&found), ..view };
        assert_eq!(names(&r.direct(&view)), ["read", "gh_pr"]);
    }
}
