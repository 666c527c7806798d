//! The config file: `~/.config/toolshed/config.toml` (XDG) first, then `toolshed.toml` in the
//! worktree, so project settings come later and win. Every section is typed; an unknown key
//! or a wrong value is an error naming the file, line and column.
//!
//! Merging: a scalar set in a later file replaces the earlier value; `[permission]` rules are
//! concatenated in file order (the last matching rule wins, so project rules outrank user
//! rules); `[agent.NAME]` tables merge field by field (their permission rules concatenate);
//! other named tables (`[provider.NAME]`, `[mcp.NAME]`, `[lsp.NAME]`) are replaced whole.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::output::OutputLimits;
use crate::permission::{Action, Rule};
use crate::registry::EditTool;
use crate::tool::Exposure;

mod explain;

pub use explain::{Explained, Layer, LayerKind, Setting};

/// The name of the project config file in the worktree.
pub const PROJECT_FILE: &str = "toolshed.toml";

/// A config file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", path.display(), location.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default())]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line and column, when known.
    pub location: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

/// The merged configuration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// Default model for run / chat (`provider/model`).
    pub model: Option<String>,
    /// Default agent.
    pub default_agent: Option<String>,
    /// The bound stage's budget.
    pub output: OutputLimits,
    /// `[permission]` rules of every file, in order.
    pub permission: Vec<Rule>,
    /// The file each `[permission]` rule was written in (same order as `permission`).
    pub permission_files: Vec<PathBuf>,
    /// `[agent.NAME]` definitions and overrides.
    pub agents: BTreeMap<String, AgentConfig>,
    /// `[sandbox]`.
    pub sandbox: SandboxConfig,
    /// `[provider.NAME]`.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// `[mcp.NAME]`: MCP servers whose tools are imported.
    pub mcp: BTreeMap<String, McpConfig>,
    /// `[mcp_server]`: how `toolshed mcp serve` behaves.
    pub mcp_server: McpServerConfig,
    /// `[tool_search]`.
    pub tool_search: ToolSearchConfig,
    /// `[session]`.
    pub session: SessionConfig,
    /// `[websearch]`, if a backend is configured.
    pub websearch: Option<WebsearchConfig>,
    /// `[lsp.NAME]`.
    pub lsp: BTreeMap<String, LspConfig>,
    /// `[env]`: what child processes inherit (see [`crate::env`]).
    pub env: EnvConfig,
    /// The files that were read, in order.
    pub sources: Vec<PathBuf>,
    /// What to tell a person when the project's layer is not `toolshed.toml` as it is on disk
    /// (not yet accepted, or changed since: see [`crate::trust`]).
    pub project_note: Option<String>,
    /// The same for the user's config file, when it lies where a command may write (see
    /// [`crate::trust::user_exposure`]).
    pub user_note: Option<String>,
}

/// `[agent.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// What the agent is for (shown to the model when it can delegate to it).
    pub description: Option<String>,
    /// Its system prompt.
    pub prompt: Option<String>,
    /// Its model (`provider/model`).
    pub model: Option<String>,
    /// Whether it runs as a primary agent, a sub-agent, or both.
    pub mode: Option<AgentMode>,
    /// Its permission rules, applied after the global ones.
    #[serde(default)]
    pub permission: Option<PermissionRules>,
    /// Which editing tools it gets, whatever its model.
    pub edit_tool: Option<EditTool>,
    /// The sandbox its shell commands run in, instead of `[sandbox] mode` (`plan` and
    /// `explore` default to read-only).
    pub sandbox: Option<SandboxMode>,
}

/// How an agent may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    /// Talks to the user.
    Primary,
    /// Runs tasks for another agent.
    Subagent,
    /// Either.
    All,
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxConfig {
    /// The sandbox mode; `None` means the default (workspace-write where supported).
    pub mode: Option<SandboxMode>,
    /// Whether commands may run without a sandbox where the kernel cannot provide one.
    pub allow_unsandboxed: bool,
    /// Whether sandboxed commands lose network access.
    pub block_network: bool,
    /// Unix sockets of servers outside the sandbox that sandboxed processes may still reach
    /// (absolute paths; one ending in `/` is every socket under that directory). Every other
    /// one is hidden from them.
    pub allow_sockets: Vec<PathBuf>,
}

/// What a sandboxed command may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Reads anywhere, writes nowhere.
    ReadOnly,
    /// Writes only under the worktree, the temp dir and tool caches.
    WorkspaceWrite,
    /// No sandbox.
    FullAccess,
}

/// `[env]`: the environment of child processes (see [`crate::env`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvConfig {
    /// Variables every child process gets even though their names look secret (and MCP servers
    /// get besides their minimal set), e.g. `["GITHUB_TOKEN"]`. Lists of several files add up.
    #[serde(default)]
    #[schemars(inner(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$")))]
    pub pass: Vec<String>,
}

/// `[provider.NAME]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The wire format it speaks.
    pub kind: ProviderKind,
    /// Its base URL (e.g. a local OpenAI-compatible server).
    #[schemars(regex(pattern = r"^https?://[^/]"))]
    pub base_url: Option<String>,
    /// The environment variable holding its API key.
    pub api_key_env: Option<String>,
    /// Per-model settings.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
}

/// A provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions (and compatible servers).
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
}

/// `[provider.NAME.models.ID]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The context window in tokens.
    pub context: Option<u64>,
}

/// `[mcp.NAME]`: an MCP server, started as a child process (`command`) or reached over HTTP (`url`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [{"required": ["command"]}, {"required": ["url"]}]))]
pub struct McpConfig {
    /// The program to start (stdio transport).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Extra environment variables for it.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The directory it starts in, relative to the worktree root (default: the root).
    pub cwd: Option<String>,
    /// A file of `KEY=VALUE` lines (dotenv) whose variables it also gets, relative to the
    /// worktree root; `env` wins over it.
    pub env_file: Option<String>,
    /// The server's URL (streamable HTTP transport).
    pub url: Option<String>,
    /// Extra HTTP headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Whether the server is used (default true).
    pub enabled: Option<bool>,
    /// Timeout of one call, in milliseconds.
    pub timeout_ms: Option<u64>,
    /// How long the server may take to start and list its tools, in milliseconds (separate from
    /// the call timeout: `npx -y` with a cold npm cache takes far longer than a call).
    pub startup_timeout_ms: Option<u64>,
    /// Only these tools (wildcards).
    #[serde(default)]
    pub include: Vec<String>,
    /// Not these tools (wildcards).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Whether its tools are sent up front or found through tool_search.
    pub exposure: Option<Exposure>,
    /// A local server runs in the sandbox of a shell command (it writes the worktree, temp dirs
    /// and caches; network allowed), since what it starts may depend on files the model can
    /// write (`node_modules` that `npx` prefers, an `env_file`, a script in the worktree).
    /// `false` runs it with your full rights (a server that must write elsewhere).
    pub sandbox: Option<bool>,
}

/// `[mcp_server]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// What to answer when the MCP client cannot answer an approval request.
    pub ask: Option<McpAsk>,
    /// Whether the third identical call in a row asks (`doom_loop`); off unless set, since the
    /// MCP client runs the loop and toolshed does not know its order.
    pub doom_loop: Option<bool>,
}

/// The answer `toolshed mcp serve` gives an `ask` when the client cannot be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpAsk {
    /// Reject the call.
    Reject,
    /// Allow the call.
    Allow,
}

/// `[tool_search]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchConfig {
    /// Defer tools automatically when the direct tools' definitions would take more than this
    /// share of the model's context.
    #[serde(default = "default_defer_share")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub defer_when_share_exceeds: f64,
}

fn default_defer_share() -> f64 {
    0.1
}

impl Default for ToolSearchConfig {
    fn default() -> Self {
        ToolSearchConfig { defer_when_share_exceeds: default_defer_share() }
    }
}

/// `[session]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionConfig {
    /// Most model steps in one run.
    #[serde(default = "default_max_steps")]
    #[schemars(range(min = 1))]
    pub max_steps: u32,
    /// The share of the model's context window a request may reach before old tool outputs
    /// are pruned from what is sent and, if that is not enough, the history is summarised.
    #[serde(default = "default_compact_at")]
    #[schemars(range(min = 0.3, max = 0.98))]
    pub compact_at: f64,
    /// Days undo's snapshots are kept (then pruned from the shadow repository).
    #[serde(default = "default_snapshot_retention_days")]
    #[schemars(range(min = 1, max = 3650))]
    pub snapshot_retention_days: u32,
}

fn default_max_steps() -> u32 {
    100
}

fn default_compact_at() -> f64 {
    0.85
}

fn default_snapshot_retention_days() -> u32 {
    7
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            max_steps: default_max_steps(),
            compact_at: default_compact_at(),
            snapshot_retention_days: default_snapshot_retention_days(),
        }
    }
}

/// `[websearch]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebsearchConfig {
    /// The backend (`searxng`, `brave`, `exa`, ...).
    pub backend: String,
    /// Its URL.
    pub url: Option<String>,
    /// The environment variable holding its API key.
    pub api_key_env: Option<String>,
}

/// `[lsp.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LspConfig {
    /// The server program. May be left out to adjust a built-in server of the same name
    /// (`[lsp.pyright] timeout_ms = 60000`).
    #[serde(default)]
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// File extensions it handles (without the dot).
    #[serde(default)]
    pub extensions: Vec<String>,
    /// Files that mark a project root for it.
    #[serde(default)]
    pub root_markers: Vec<String>,
    /// `false` turns the server (or the built-in one of this name) off.
    pub enabled: Option<bool>,
    /// How long to wait for the server's first diagnostics after a file changes, in
    /// milliseconds (starting it included).
    pub timeout_ms: Option<u64>,
}

/// Permission rules as written: a bare action (`permission = "ask"`) or a table whose keys
/// are permission names and whose values are an action or a table of pattern → action. The
/// written order is kept, since the last matching rule wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionRules(pub Vec<Rule>);

impl<'de> Deserialize<'de> for PermissionRules {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Rules;
        impl<'de> Visitor<'de> for Rules {
            type Value = PermissionRules;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"allow\", \"ask\", \"deny\", or a table of permission names")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(PermissionRules(vec![Rule::new("*", "*", parse_action(v)?)]))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut rules = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    for (pattern, action) in map.next_value::<PatternActions>()?.0 {
                        rules.push(Rule::new(key.clone(), pattern, action));
                    }
                }
                Ok(PermissionRules(rules))
            }
        }
        d.deserialize_any(Rules)
    }
}

/// The value of one permission key: an action for every pattern, or pattern → action in order.
struct PatternActions(Vec<(String, Action)>);

impl<'de> Deserialize<'de> for PatternActions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Patterns;
        impl<'de> Visitor<'de> for Patterns {
            type Value = PatternActions;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("\"allow\", \"ask\", \"deny\", or a table of pattern = action")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(PatternActions(vec![("*".to_string(), parse_action(v)?)]))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(pattern) = map.next_key::<String>()? {
                    let action: String = map.next_value()?;
                    out.push((pattern, parse_action(&action)?));
                }
                Ok(PatternActions(out))
            }
        }
        d.deserialize_any(Patterns)
    }
}

/// The schema of an action: `"allow"`, `"ask"` or `"deny"`.
fn action_schema() -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": ["allow", "ask", "deny"] })
}

impl JsonSchema for PermissionRules {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "PermissionRules".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // "A string that is an action, or a table": `if`/`then` rather than `oneOf`, so a
        // mistake is reported where it is, not as "matches none of the alternatives".
        let action = action_schema().to_value();
        let per_key = serde_json::json!({
            "type": ["string", "object"],
            "if": { "type": "string" },
            "then": action,
            "additionalProperties": action
        });
        schemars::json_schema!({
            "description": "An action for every request (\"allow\", \"ask\", \"deny\"), or a table whose keys are permission names (`edit`, `bash`, `read`, a tool's name; wildcards allowed) and whose values are an action or a table of pattern = action. The last matching rule wins.",
            "type": ["string", "object"],
            "if": { "type": "string" },
            "then": action,
            "additionalProperties": per_key
        })
    }
}

/// Rules are shown as a list: one permission name may come back after others, and the order
/// matters.
impl Serialize for PermissionRules {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for rule in &self.0 {
            seq.serialize_element(&rule_value(rule))?;
        }
        seq.end()
    }
}

/// One rule as `{"permission", "pattern", "action"}`.
fn rule_value(rule: &Rule) -> serde_json::Value {
    serde_json::json!({ "permission": rule.permission, "pattern": rule.pattern, "action": rule.action })
}

fn parse_action<E: de::Error>(v: &str) -> Result<Action, E> {
    match v {
        "allow" => Ok(Action::Allow),
        "ask" => Ok(Action::Ask),
        "deny" => Ok(Action::Deny),
        other => {
            Err(E::custom(format!("unknown permission action `{other}`, expected \"allow\", \"ask\" or \"deny\"")))
        }
    }
}

/// `agent = "NAME"` (the default agent) or `[agent.NAME]` tables.
#[derive(Debug, Default)]
struct AgentSection {
    default: Option<String>,
    agents: Vec<(String, AgentConfig)>,
}

impl<'de> Deserialize<'de> for AgentSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Agents;
        impl<'de> Visitor<'de> for Agents {
            type Value = AgentSection;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the default agent's name, or [agent.NAME] tables")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(AgentSection { default: Some(v.to_string()), agents: Vec::new() })
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut agents = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    agents.push((name, map.next_value::<AgentConfig>()?));
                }
                Ok(AgentSection { default: None, agents })
            }
        }
        d.deserialize_any(Agents)
    }
}

impl JsonSchema for AgentSection {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AgentSection".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let agent = generator.subschema_for::<AgentConfig>().to_value();
        schemars::json_schema!({
            "description": "`[agent.NAME]` tables: new agents, or changes to the built-in `build`, `plan` and `explore`. A string instead names the default agent, like `default_agent`.",
            "type": ["string", "object"],
            "additionalProperties": agent
        })
    }
}

/// toolshed's configuration: `~/.config/toolshed/config.toml`, then the worktree's
/// `toolshed.toml`; later files win. Every key is optional.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    /// The default model of `run` and `chat`, as `PROVIDER/MODEL` (`openai/gpt-5.1`,
    /// `anthropic/claude-sonnet-4-5`, `NAME/MODEL` for a `[provider.NAME]`).
    model: Option<String>,
    /// The default agent (`build` unless set).
    default_agent: Option<String>,
    agent: Option<AgentSection>,
    /// `[output]`: how much of a tool's output the model gets (the rest is saved to a file).
    output: Option<OutputSection>,
    /// `[permission]`: rules for every agent, OpenCode's semantics (the last matching rule wins).
    permission: Option<PermissionRules>,
    /// `[sandbox]`: what shell commands may touch.
    sandbox: Option<SandboxSection>,
    /// `[provider.NAME]`: model providers besides the built-in `openai` and `anthropic`.
    provider: Option<BTreeMap<String, ProviderConfig>>,
    /// `[mcp.NAME]`: MCP servers whose tools are imported.
    mcp: Option<BTreeMap<String, McpConfig>>,
    /// `[mcp_server]`: how `toolshed mcp serve` behaves.
    mcp_server: Option<McpServerConfig>,
    /// `[tool_search]`: when tools are deferred to `tool_search`. A file's table replaces an
    /// earlier file's whole.
    tool_search: Option<ToolSearchConfig>,
    /// `[session]`: limits of a run. A file's table replaces an earlier file's whole.
    session: Option<SessionConfig>,
    /// `[websearch]`: the search backend (`searxng`, `brave` or `exa`); without it the
    /// `websearch` tool is not offered.
    websearch: Option<WebsearchConfig>,
    /// `[lsp.NAME]`: language servers, new ones or changes to a built-in one.
    lsp: Option<BTreeMap<String, LspConfig>>,
    /// `[env]`: what child processes inherit.
    env: Option<EnvConfig>,
}

/// `[output]`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct OutputSection {
    /// Most lines of one result the model gets (default 2000).
    #[schemars(range(min = 1))]
    max_lines: Option<usize>,
    /// Most bytes of one result the model gets (default 51200).
    #[schemars(range(min = 256))]
    max_bytes: Option<usize>,
    /// Most bytes of one call's output saved to a file, first and last halves kept (default 64 MiB).
    #[schemars(range(min = crate::output::MIN_SPILL_BYTES))]
    spill_max_bytes: Option<u64>,
    /// Most bytes of all saved outputs together, oldest deleted first (default 1 GiB).
    #[schemars(range(min = crate::output::MIN_SPILL_BYTES))]
    spill_dir_max_bytes: Option<u64>,
    /// Largest image, audio or blob of an MCP result passed on; a larger one becomes a note
    /// (default 5 MiB).
    #[schemars(range(min = crate::output::MIN_BLOB_BYTES))]
    max_blob_bytes: Option<usize>,
}

/// `[sandbox]`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SandboxSection {
    /// What sandboxed commands may touch (default `workspace-write`; `plan` and `explore` run
    /// `read-only`).
    mode: Option<SandboxMode>,
    /// Whether commands may run without a sandbox where the kernel cannot provide one.
    allow_unsandboxed: Option<bool>,
    /// Whether sandboxed commands lose network access.
    block_network: Option<bool>,
    /// Unix sockets of servers outside the sandbox that sandboxed commands may still reach
    /// (`/run/docker.sock`; a path ending in `/` allows every socket under it). Every other
    /// socket outside the worktree is hidden from them: a server outside runs what it is asked
    /// outside the sandbox.
    allow_sockets: Option<Vec<String>>,
}

/// The JSON Schema (draft 7) of a config file, derived from the types the loader reads, so the
/// two cannot drift: every table rejects keys the loader rejects (`additionalProperties: false`),
/// and the ranges the loader checks are `minimum` / `maximum`. Editors (Taplo, Even Better TOML)
/// read it through a `#:schema` line.
pub fn schema() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with_transform(schemars::transform::RestrictFormats::default())
        .into_generator();
    let mut schema = generator.into_root_schema_for::<FileConfig>().to_value();
    without_null(&mut schema);
    if let Some(root) = schema.as_object_mut() {
        root.insert("title".into(), "toolshed config (toolshed.toml, ~/.config/toolshed/config.toml)".into());
    }
    schema
}

/// Takes `null` out of a schema: TOML has none (an unset key is left out), so an optional key
/// is "T", not "T or null", and an editor offers no `null` and reports no `anyOf` for a mistake.
fn without_null(schema: &mut serde_json::Value) {
    use serde_json::Value;
    match schema {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if let [only] = types.as_slice() {
                    let only = only.clone();
                    map.insert("type".into(), only);
                }
            }
            if let Some(Value::Array(values)) = map.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            if let Some(Value::Array(options)) = map.get_mut("anyOf") {
                options.retain(|o| o.get("type").is_none_or(|t| t != "null"));
                if options.len() == 1 {
                    // `allOf` of one keeps the description beside the reference (draft 7 ignores
                    // a `$ref`'s siblings).
                    if let Some(options) = map.remove("anyOf") {
                        map.insert("allOf".into(), options);
                    }
                }
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

/// One `--config KEY=VALUE` override: a value set at a dotted TOML key path
/// (`session.max_steps=5`, `permission.bash."git *"=allow`), applied after every file.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The key path, e.g. `["session", "max_steps"]`.
    pub key: Vec<String>,
    /// VALUE parsed as TOML, or VALUE as a string when it is not TOML (`model=openai/gpt-5.1`).
    pub value: toml::Value,
    /// The override as written (what errors name).
    pub written: String,
}

impl Override {
    /// Parses `KEY=VALUE`; the error says what is wrong with it, for a person.
    pub fn parse(text: &str) -> Result<Override, String> {
        let Some(at) = first_unquoted_eq(text) else {
            return Err(format!("`{text}` is not KEY=VALUE"));
        };
        let (key, value) = (text[..at].trim(), text[at + 1..].trim());
        let bad_key = || {
            format!(
                "`{key}` in `{text}` is not a TOML key path; write it like session.max_steps=5 or permission.bash.\"git *\"=allow"
            )
        };
        if key.is_empty() || key.contains(['\n', '\r']) {
            return Err(bad_key());
        }
        let mut node = toml::from_str::<toml::Table>(&format!("{key} = 0")).map_err(|_| bad_key())?;
        let mut path = Vec::new();
        loop {
            let mut entries = std::mem::take(&mut node).into_iter();
            match (entries.next(), entries.next()) {
                (Some((name, toml::Value::Table(inner))), None) => {
                    path.push(name);
                    node = inner;
                }
                (Some((name, toml::Value::Integer(0))), None) => {
                    path.push(name);
                    break;
                }
                _ => return Err(bad_key()),
            }
        }
        let parsed = toml::from_str::<toml::Table>(&format!("v = {value}")).ok().filter(|doc| doc.len() == 1);
        let value =
            parsed.and_then(|mut doc| doc.remove("v")).unwrap_or_else(|| toml::Value::String(value.to_string()));
        Ok(Override { key: path, value, written: text.to_string() })
    }
}

/// The byte offset of the first `=` outside a quoted key.
fn first_unquoted_eq(text: &str) -> Option<usize> {
    let mut quote = None;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some('"'), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), c) if c == q && !escaped => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '=') => return Some(i),
            _ => {}
        }
        escaped = false;
    }
    None
}

/// Sets `value` at `path` under `table`, making (or replacing with) tables on the way.
fn set_path(table: &mut toml::Table, path: &[String], value: toml::Value) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut node = table;
    for name in parents {
        let slot = node.entry(name.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !slot.is_table() {
            *slot = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(inner) = slot else { return };
        node = inner;
    }
    node.insert(last.clone(), value);
}

/// The table at `path` in the last of `written` that has one.
fn last_table_at(written: &[toml::Table], path: &[String]) -> Option<toml::Table> {
    written.iter().rev().find_map(|doc| {
        let mut node = doc;
        for name in path {
            node = node.get(name)?.as_table()?;
        }
        Some(node.clone())
    })
}

impl Config {
    /// Loads the user file (`user_file`, or the XDG default when `None`) and then the worktree's
    /// `toolshed.toml`. A missing default file is fine; a missing explicit file is an error.
    pub fn load(user_file: Option<&Path>, root: &Path) -> Result<Config, ConfigError> {
        Config::load_with(user_file, root, &[])
    }

    /// [`Config::load`], then `overrides` in order, each as if one more file set that one key.
    /// A section a file replaces whole (`[session]`, `[provider.NAME]`, ...) keeps what the
    /// files (and earlier overrides) wrote in it: an override changes one value.
    pub fn load_with(user_file: Option<&Path>, root: &Path, overrides: &[Override]) -> Result<Config, ConfigError> {
        let acceptance = crate::trust::Acceptance::load(&crate::paths::data_dir(), root);
        Config::load_accepted(user_file, root, overrides, &acceptance)
    }

    /// [`Config::load_with`], with the project's `toolshed.toml` taken as `acceptance` says
    /// (the file, the copy a person last accepted, or none; see [`crate::trust`]).
    pub fn load_accepted(
        user_file: Option<&Path>,
        root: &Path,
        overrides: &[Override],
        acceptance: &crate::trust::Acceptance,
    ) -> Result<Config, ConfigError> {
        Config::load_layers(user_file, root, overrides, acceptance, &mut |_, _, _| {})
    }

    /// [`Config::load_with`], telling `observe` after each layer (a file that exists, or an
    /// override) is merged: the config so far, the layer, and what it wrote as TOML text (an
    /// override: just its key).
    fn load_layers(
        user_file: Option<&Path>,
        root: &Path,
        overrides: &[Override],
        acceptance: &crate::trust::Acceptance,
        observe: &mut dyn FnMut(&Config, &Layer, &str),
    ) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut written = Vec::new();
        let user = match user_file {
            Some(path) => Some((path.to_path_buf(), LayerKind::ConfigFile, true)),
            None => crate::paths::config_dir().map(|dir| (dir.join("config.toml"), LayerKind::User, false)),
        };
        if let Some((path, kind, required)) = user {
            // The user's own file, unless it lies where a command may write (a dotfiles
            // checkout a model works in): then only as they accepted it.
            // (`--config FILE` too: the person names it, but a command may have written it.)
            let path = if kind == LayerKind::ConfigFile {
                std::path::absolute(&path).map(|p| crate::paths::lexical_normalise(&p)).unwrap_or(path)
            } else {
                path
            };
            let how = format!("`toolshed --config {} trust`", crate::terminal::shell_word(&path.to_string_lossy()));
            let said = |text: String| {
                if kind == LayerKind::ConfigFile { text.replace("`toolshed trust`", &how) } else { text }
            };
            let text = match acceptance.user_file_text(&path) {
                Ok((None, Some(why))) => {
                    return Err(ConfigError { path, location: None, message: said(why) });
                }
                // Absent: as any absent file (an error when named with `--config`).
                Ok((None, None)) => config.merge_file(&path, required)?,
                Ok((text, note)) => {
                    config.user_note = note.map(said);
                    match text {
                        Some(text) => {
                            config.merge_str(&path, &text)?;
                            Some(text)
                        }
                        None => None,
                    }
                }
                _ => config.merge_file(&path, required)?,
            };
            if let Some(text) = text {
                observe(&config, &Layer { path, kind }, &text);
                written.push(text);
            }
        }
        // The project's file only as a person accepted it: a model may have left it behind.
        let (project, note) = acceptance.project_text();
        if let crate::trust::ProjectText::Text(text) = project {
            let path = root.join(PROJECT_FILE);
            config.merge_str(&path, &text)?;
            observe(&config, &Layer { path, kind: LayerKind::Project }, &text);
            written.push(text);
        }
        config.project_note = note;
        // What is on disk but not applied: its errors are said now, not only at `toolshed trust`.
        if let Some(note) = &mut config.project_note
            && let Ok(disk) = std::fs::read_to_string(root.join(PROJECT_FILE))
            && let Err(e) = Config::default().merge_str(&root.join(PROJECT_FILE), &disk)
        {
            note.push_str(&format!(
                " The file as it is on disk has an error, which `toolshed trust` will refuse until it is fixed: {e}"
            ));
        }
        if overrides.is_empty() {
            return Ok(config);
        }
        // Only overrides need the files as tables; they parsed above, so these parse too.
        let mut written: Vec<toml::Table> = written.iter().filter_map(|text| toml::from_str(text).ok()).collect();
        for o in overrides {
            let path = PathBuf::from(format!("--config {}", o.written));
            let whole = match o.key.first().map(String::as_str) {
                Some("session" | "tool_search" | "websearch") => 1,
                Some("provider" | "mcp" | "lsp") => 2,
                _ => 0,
            };
            let mut doc = toml::Table::new();
            if whole > 0
                && o.key.len() > whole
                && let Some(section) = last_table_at(&written, &o.key[..whole])
            {
                set_path(&mut doc, &o.key[..whole], toml::Value::Table(section));
            }
            set_path(&mut doc, &o.key, o.value.clone());
            let file: FileConfig = doc.clone().try_into().map_err(|e: toml::de::Error| ConfigError {
                path: path.clone(),
                location: None,
                message: e.message().trim().to_string(),
            })?;
            config.merge(&path, file)?;
            written.push(doc);
            let mut own = toml::Table::new();
            set_path(&mut own, &o.key, o.value.clone());
            observe(&config, &Layer { path, kind: LayerKind::Override }, &toml::to_string(&own).unwrap_or_default());
        }
        Ok(config)
    }

    /// Parses one file's text and merges it over this config.
    pub fn merge_str(&mut self, path: &Path, text: &str) -> Result<(), ConfigError> {
        let file: FileConfig = toml::from_str(text).map_err(|e| {
            let location = e.span().map(|span| line_col(text, span.start));
            let mut message = e.message().trim().to_string();
            // The parser does not say which key; the span does.
            if message == "duplicate key"
                && let Some(key) = e.span().and_then(|span| text.get(span)).map(str::trim).filter(|k| !k.is_empty())
            {
                message = format!("duplicate key `{key}`: it is already set above; keep one");
            }
            ConfigError { path: path.to_path_buf(), location, message }
        })?;
        self.merge(path, file)?;
        self.sources.push(path.to_path_buf());
        Ok(())
    }

    /// Merges the file at `path`; returns its text (`None`: absent, and not `required`).
    fn merge_file(&mut self, path: &Path, required: bool) -> Result<Option<String>, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => self.merge_str(path, &text).map(|()| Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => Ok(None),
            Err(e) => {
                Err(ConfigError { path: path.to_path_buf(), location: None, message: format!("cannot read: {e}") })
            }
        }
    }

    fn merge(&mut self, path: &Path, file: FileConfig) -> Result<(), ConfigError> {
        let invalid = |message: String| ConfigError { path: path.to_path_buf(), location: None, message };
        set(&mut self.model, file.model);
        set(&mut self.default_agent, file.default_agent);
        if let Some(section) = file.agent {
            set(&mut self.default_agent, section.default);
            for (name, agent) in section.agents {
                let merged = self.agents.entry(name).or_default();
                set(&mut merged.description, agent.description);
                set(&mut merged.prompt, agent.prompt);
                set(&mut merged.model, agent.model);
                set(&mut merged.mode, agent.mode);
                set(&mut merged.edit_tool, agent.edit_tool);
                set(&mut merged.sandbox, agent.sandbox);
                if let Some(rules) = agent.permission {
                    merged.permission.get_or_insert_with(PermissionRules::default).0.extend(rules.0);
                }
            }
        }
        if let Some(output) = file.output {
            if output.max_lines == Some(0) || output.max_bytes.is_some_and(|b| b < 256) {
                return Err(invalid("[output] max_lines must be at least 1 and max_bytes at least 256".into()));
            }
            let min = crate::output::MIN_SPILL_BYTES;
            if output.spill_max_bytes.is_some_and(|b| b < min) || output.spill_dir_max_bytes.is_some_and(|b| b < min) {
                return Err(invalid(format!(
                    "[output] spill_max_bytes and spill_dir_max_bytes must be at least {min} bytes"
                )));
            }
            let min_blob = crate::output::MIN_BLOB_BYTES;
            if output.max_blob_bytes.is_some_and(|b| b < min_blob) {
                return Err(invalid(format!("[output] max_blob_bytes must be at least {min_blob} bytes")));
            }
            self.output.max_blob_bytes = output.max_blob_bytes.unwrap_or(self.output.max_blob_bytes);
            self.output.max_lines = output.max_lines.unwrap_or(self.output.max_lines);
            self.output.max_bytes = output.max_bytes.unwrap_or(self.output.max_bytes);
            self.output.spill_max_bytes = output.spill_max_bytes.unwrap_or(self.output.spill_max_bytes);
            self.output.spill_dir_max_bytes = output.spill_dir_max_bytes.unwrap_or(self.output.spill_dir_max_bytes);
        }
        if let Some(rules) = file.permission {
            self.permission_files.extend(std::iter::repeat_n(path.to_path_buf(), rules.0.len()));
            self.permission.extend(rules.0);
        }
        if let Some(sandbox) = file.sandbox {
            set(&mut self.sandbox.mode, sandbox.mode);
            self.sandbox.allow_unsandboxed = sandbox.allow_unsandboxed.unwrap_or(self.sandbox.allow_unsandboxed);
            self.sandbox.block_network = sandbox.block_network.unwrap_or(self.sandbox.block_network);
            for socket in sandbox.allow_sockets.unwrap_or_default() {
                if !socket.starts_with('/') {
                    return Err(invalid(format!(
                        "[sandbox] allow_sockets: `{socket}` is not an absolute path; write the socket's full path, such as /run/docker.sock"
                    )));
                }
                let path = PathBuf::from(&socket);
                if !self.sandbox.allow_sockets.contains(&path) {
                    self.sandbox.allow_sockets.push(path);
                }
            }
        }
        let providers = file.provider.unwrap_or_default();
        for (name, provider) in &providers {
            if let Some(url) = &provider.base_url {
                let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
                let host = url.split("://").nth(1).unwrap_or_default();
                if !scheme_ok || host.is_empty() || host.starts_with('/') {
                    return Err(invalid(format!(
                        "[provider.{name}] base_url `{url}` is not an http(s) URL; write it like \"http://127.0.0.1:8080/v1\""
                    )));
                }
            }
        }
        self.providers.extend(providers);
        for (name, server) in file.mcp.unwrap_or_default() {
            if server.command.is_some() == server.url.is_some() {
                return Err(invalid(format!(
                    "[mcp.{name}] needs exactly one of `command` (a local server) or `url` (a remote one)"
                )));
            }
            self.mcp.insert(name, server);
        }
        if let Some(server) = file.mcp_server {
            set(&mut self.mcp_server.ask, server.ask);
            set(&mut self.mcp_server.doom_loop, server.doom_loop);
        }
        if let Some(search) = file.tool_search {
            if !(0.0..=1.0).contains(&search.defer_when_share_exceeds) {
                return Err(invalid("[tool_search] defer_when_share_exceeds must be between 0 and 1".into()));
            }
            self.tool_search = search;
        }
        if let Some(session) = file.session {
            if session.max_steps == 0 {
                return Err(invalid("[session] max_steps must be at least 1 (the default is 100)".into()));
            }
            if !(0.3..=0.98).contains(&session.compact_at) {
                return Err(invalid(format!(
                    "[session] compact_at must be between 0.3 and 0.98 (a share of the context window; the default is 0.85), not {}",
                    session.compact_at
                )));
            }
            if session.snapshot_retention_days == 0 || session.snapshot_retention_days > 3650 {
                return Err(invalid(
                    "[session] snapshot_retention_days must be between 1 and 3650 (the default is 7)".into(),
                ));
            }
            self.session = session;
        }
        set(&mut self.websearch, file.websearch);
        self.lsp.extend(file.lsp.unwrap_or_default());
        for name in file.env.map(|e| e.pass).unwrap_or_default() {
            if !crate::env::valid_name(&name) {
                return Err(invalid(format!(
                    "[env] pass: `{name}` is not a variable name; write names like \"GITHUB_TOKEN\" (letters, digits and `_`, no wildcards)"
                )));
            }
            if !self.env.pass.contains(&name) {
                self.env.pass.push(name);
            }
        }
        Ok(())
    }
}

fn set<T>(slot: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *slot = value;
    }
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        c.merge_str(Path::new("/w/toolshed.toml"), text)?;
        Ok(c)
    }

    const EVERY_SECTION: &str = r#"
model = "openai/gpt-5.1"
default_agent = "build"

[output]
max_lines = 500

[permission]
edit = "ask"
bash = { "*" = "ask", "git status *" = "allow", "rm *" = "deny" }

[agent.review]
description = "Reviews code"
mode = "subagent"
edit_tool = "apply_patch"
permission = { edit = "deny" }

[sandbox]
mode = "read-only"
allow_unsandboxed = true

[provider.local]
kind = "openai-chat"
base_url = "http://127.0.0.1:8080/v1"
[provider.local.models.qwen]
context = 32768

[mcp.github]
command = "gh-mcp"
args = ["--stdio"]
exposure = "deferred"

[mcp_server]
ask = "reject"

[tool_search]
defer_when_share_exceeds = 0.2

[session]
max_steps = 20
compact_at = 0.7

[websearch]
backend = "searxng"
url = "http://127.0.0.1:8888"

[lsp.rust]
command = "rust-analyzer"
extensions = ["rs"]

[env]
pass = ["GITHUB_TOKEN"]
"#;

    #[test]
    fn every_section_parses() {
        let c = parse(EVERY_SECTION).unwrap();
        assert_eq!(c.model.as_deref(), Some("openai/gpt-5.1"));
        assert_eq!(c.output, OutputLimits { max_lines: 500, max_bytes: 50 * 1024, ..OutputLimits::default() });
        let rules: Vec<String> = c.permission.iter().map(std::string::ToString::to_string).collect();
        assert_eq!(
            rules,
            [r#"edit "*" = ask"#, r#"bash "*" = ask"#, r#"bash "git status *" = allow"#, r#"bash "rm *" = deny"#]
        );
        let review = &c.agents["review"];
        assert_eq!(review.edit_tool, Some(EditTool::ApplyPatch));
        assert_eq!(review.permission.as_ref().unwrap().0, [Rule::new("edit", "*", Action::Deny)]);
        assert_eq!(c.sandbox.mode, Some(SandboxMode::ReadOnly));
        assert_eq!(c.providers["local"].models["qwen"].context, Some(32768));
        assert_eq!(c.mcp["github"].exposure, Some(Exposure::Deferred));
        assert_eq!(c.tool_search.defer_when_share_exceeds, 0.2);
        assert_eq!(c.session.max_steps, 20);
        assert_eq!(c.lsp["rust"].extensions, ["rs"]);
        assert_eq!(c.env.pass, ["GITHUB_TOKEN"]);
    }

    /// Whether `text` validates against [`schema`]; the errors otherwise.
    fn schema_errors(text: &str) -> Vec<String> {
        let validator = jsonschema::validator_for(&schema()).unwrap();
        let doc = serde_json::to_value(toml::from_str::<toml::Table>(text).unwrap()).unwrap();
        validator.iter_errors(&doc).map(|e| format!("{}: {e}", e.instance_path())).collect()
    }

    #[test]
    fn the_schema_accepts_what_the_loader_accepts_and_rejects_what_it_rejects() {
        let every_section = EVERY_SECTION;
        parse(every_section).unwrap();
        assert_eq!(schema_errors(every_section), Vec::<String>::new());
        for (bad, expected) in [
            ("[output]\nmax_line = 5\n", "/output: Additional properties are not allowed ('max_line'"),
            ("modle = \"a/b\"\n", ": Additional properties are not allowed ('modle'"),
            ("[agent.x]\ncolour = \"red\"\n", "/agent"),
            ("[provider.p]\nkind = \"openai-chat\"\nbase_urll = \"http://x\"\n", "/provider/p"),
            ("[provider.p]\nkind = \"openai\"\n", "/provider/p/kind"),
            ("[provider.p]\nkind = \"openai-chat\"\nbase_url = \"localhost:8080\"\n", "/provider/p/base_url"),
            ("[session]\nmax_steps = 0\n", "/session/max_steps"),
            ("[session]\ncompact_at = 0.99\n", "/session/compact_at"),
            ("[output]\nmax_blob_bytes = 10\n", "/output/max_blob_bytes"),
            ("[mcp.a]\nargs = []\n", "/mcp/a"),
            ("[mcp.a]\ncommand = \"x\"\nurl = \"http://x\"\n", "/mcp/a"),
            ("[permission]\nread = { \"*.env\" = \"alow\" }\n", "/permission"),
            ("[env]\npass = [\"GH_*\"]\n", "/env/pass/0"),
        ] {
            assert!(parse(bad).is_err(), "the loader accepts {bad}");
            let errors = schema_errors(bad);
            assert!(errors.iter().any(|e| e.starts_with(expected)), "{bad}: {errors:?}");
        }
        for good in ["agent = \"plan\"\n", "permission = \"allow\"\n", "[lsp.pyright]\ntimeout_ms = 60000\n"] {
            parse(good).unwrap();
            assert_eq!(schema_errors(good), Vec::<String>::new(), "{good}");
        }
    }

    #[test]
    fn the_schema_describes_keys_for_editors() {
        let schema = schema();
        assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
        assert_eq!(schema["additionalProperties"], false);
        let model = schema["properties"]["model"]["description"].as_str().unwrap();
        assert!(model.starts_with("The default model of `run` and `chat`"), "{model}");
        assert_eq!(schema["definitions"]["SessionConfig"]["properties"]["max_steps"]["default"], 100);
        assert!(!schema.to_string().contains("uint"), "non-standard formats are left out");
    }

    #[test]
    fn env_pass_names_are_validated_and_add_up() {
        let err = parse("[env]\npass = [\"GH_*\"]\n").unwrap_err();
        insta::assert_snapshot!(err.to_string(), @r#"/w/toolshed.toml: [env] pass: `GH_*` is not a variable name; write names like "GITHUB_TOKEN" (letters, digits and `_`, no wildcards)"#);
        let err = parse("[env]\npas = []\n").unwrap_err();
        assert!(err.message.contains("unknown field `pas`"), "{err}");
        let mut c = Config::default();
        c.merge_str(Path::new("user.toml"), "[env]\npass = [\"A\", \"B\"]\n").unwrap();
        c.merge_str(Path::new("toolshed.toml"), "[env]\npass = [\"B\", \"C\"]\n").unwrap();
        assert_eq!(c.env.pass, ["A", "B", "C"]);
    }

    #[test]
    fn unknown_keys_are_reported_with_file_and_line() {
        let err = parse("model = \"x\"\n\n[output]\nmax_line = 5\n").unwrap_err();
        assert_eq!(err.location, Some((4, 1)));
        insta::assert_snapshot!(err.to_string(), @"/w/toolshed.toml:4:1: unknown field `max_line`, expected one of `max_lines`, `max_bytes`, `spill_max_bytes`, `spill_dir_max_bytes`, `max_blob_bytes`");
        let err = parse("[agent.x]\ncolour = \"red\"\n").unwrap_err();
        assert_eq!(err.location.map(|l| l.0), Some(2), "{err}");
    }

    #[test]
    fn allowed_sockets_are_absolute_paths_kept_once() {
        let c = parse(
            "[sandbox]\nallow_sockets = [\"/run/docker.sock\", \"/run/user/1000/podman/\", \"/run/docker.sock\"]\n",
        )
        .unwrap();
        assert_eq!(
            c.sandbox.allow_sockets,
            [PathBuf::from("/run/docker.sock"), PathBuf::from("/run/user/1000/podman/")]
        );
        let err = parse("[sandbox]\nallow_sockets = [\"docker.sock\"]\n").unwrap_err();
        assert!(err.message.contains("`docker.sock` is not an absolute path"), "{err}");
    }

    #[test]
    fn bad_actions_and_values_are_reported_where_they_are() {
        let err = parse("[permission]\nread = { \"*.env\" = \"alow\" }\n").unwrap_err();
        assert_eq!(err.location.map(|l| l.0), Some(2), "{err}");
        assert!(err.message.contains("unknown permission action `alow`"), "{err}");
        let err = parse("[sandbox]\nmode = \"yolo\"\n").unwrap_err();
        assert!(err.to_string().starts_with("/w/toolshed.toml:2:"), "{err}");
        let err = parse("[mcp.a]\nargs = []\n").unwrap_err();
        assert!(err.message.contains("exactly one of `command`"), "{err}");
    }

    #[test]
    fn agent_may_be_the_default_agent_name() {
        let c = parse("agent = \"plan\"\n").unwrap();
        assert_eq!(c.default_agent.as_deref(), Some("plan"));
    }

    #[test]
    fn permission_order_is_kept_and_project_rules_come_last() {
        let mut c = Config::default();
        c.merge_str(Path::new("user.toml"), "[permission]\nbash = \"deny\"\nread = \"allow\"\nedit = \"ask\"\n")
            .unwrap();
        c.merge_str(Path::new("toolshed.toml"), "permission = \"allow\"\n").unwrap();
        let keys: Vec<&str> = c.permission.iter().map(|r| r.permission.as_str()).collect();
        assert_eq!(keys, ["bash", "read", "edit", "*"]);
        let mut c = Config::default();
        c.merge_str(
            Path::new("a.toml"),
            "[permission.bash]\n\"z*\" = \"deny\"\n\"a*\" = \"allow\"\n\"m*\" = \"ask\"\n",
        )
        .unwrap();
        let patterns: Vec<&str> = c.permission.iter().map(|r| r.pattern.as_str()).collect();
        assert_eq!(patterns, ["z*", "a*", "m*"]);
    }

    #[test]
    fn later_files_override_scalars_and_merge_agents() {
        let mut c = Config::default();
        c.merge_str(
            Path::new("user.toml"),
            "model = \"a/b\"\n[agent.x]\nprompt = \"p\"\npermission = { edit = \"deny\" }\n",
        )
        .unwrap();
        c.merge_str(
            Path::new("toolshed.toml"),
            "model = \"c/d\"\n[agent.x]\nmodel = \"e/f\"\npermission = { edit = \"allow\" }\n",
        )
        .unwrap();
        assert_eq!(c.model.as_deref(), Some("c/d"));
        let x = &c.agents["x"];
        assert_eq!((x.prompt.as_deref(), x.model.as_deref()), (Some("p"), Some("e/f")));
        assert_eq!(x.permission.as_ref().unwrap().0.len(), 2);
        assert_eq!(c.sources.len(), 2);
    }

    #[test]
    fn load_reads_the_project_file_and_requires_an_explicit_one() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(PROJECT_FILE), "[session]\nmax_steps = 7\n").unwrap();
        let user = tmp.path().join("user.toml");
        std::fs::write(&user, "model = \"openai/gpt-5\"\n").unwrap();
        let everything = crate::trust::Acceptance::everything(tmp.path());
        let c = Config::load_accepted(Some(&user), tmp.path(), &[], &everything).unwrap();
        assert_eq!((c.model.as_deref(), c.session.max_steps), (Some("openai/gpt-5"), 7));
        let err = Config::load(Some(&tmp.path().join("missing.toml")), tmp.path()).unwrap_err();
        assert!(err.message.starts_with("cannot read:"), "{err}");
    }

    #[test]
    fn max_blob_bytes_is_read_and_has_a_floor() {
        let mut c = Config::default();
        assert_eq!(c.output.max_blob_bytes, 5 << 20);
        c.merge_str(Path::new("/w/toolshed.toml"), "[output]\nmax_blob_bytes = 65536\n").unwrap();
        assert_eq!(c.output.max_blob_bytes, 65536);
        let err =
            Config::default().merge_str(Path::new("/w/toolshed.toml"), "[output]\nmax_blob_bytes = 10\n").unwrap_err();
        assert!(err.to_string().contains("[output] max_blob_bytes must be at least 1024 bytes"), "{err}");
    }

    fn overridden(files: &[(&str, &str)], overrides: &[&str]) -> Result<Config, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.toml");
        std::fs::write(&user, "").unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let overrides: Vec<Override> = overrides.iter().map(|o| Override::parse(o).unwrap()).collect();
        let everything = crate::trust::Acceptance::everything(dir.path());
        Config::load_accepted(Some(&user), dir.path(), &overrides, &everything)
    }

    #[test]
    fn an_override_is_toml_when_it_parses_and_a_string_otherwise() {
        let o = Override::parse("session.max_steps=5").unwrap();
        assert_eq!(o.key, ["session", "max_steps"]);
        assert_eq!(o.value, toml::Value::Integer(5));
        assert_eq!(
            Override::parse("model=openai/gpt-5.1").unwrap().value,
            toml::Value::String("openai/gpt-5.1".into())
        );
        assert_eq!(Override::parse("model=\"a=b\"").unwrap().value, toml::Value::String("a=b".into()));
        let quoted = Override::parse("permission.bash.\"git s=x *\"=allow").unwrap();
        assert_eq!(quoted.key, ["permission", "bash", "git s=x *"]);
        // A value that would smuggle in a second key is a string.
        assert_eq!(
            Override::parse("model=1\nsandbox = 2").unwrap().value,
            toml::Value::String("1\nsandbox = 2".into())
        );
        for bad in ["no-equals", "=5", "a..b=1", "a b=1", "[x]=1"] {
            assert!(Override::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn overrides_apply_after_every_file_in_order() {
        let c = overridden(
            &[(
                "toolshed.toml",
                "model = \"a/b\"\n[session]\nmax_steps = 7\ncompact_at = 0.5\n[permission]\nedit = \"deny\"\n",
            )],
            &["model=c/d", "session.max_steps=3", "permission.edit=allow", "model=e/f"],
        )
        .unwrap();
        assert_eq!(c.model.as_deref(), Some("e/f"));
        assert_eq!(c.session.max_steps, 3);
        // The rest of the section the project file wrote is kept.
        assert_eq!(c.session.compact_at, 0.5);
        assert_eq!(c.permission.last().map(|r| r.action), Some(Action::Allow));
        assert_eq!(c.permission_files.last().unwrap(), Path::new("--config permission.edit=allow"));
        assert_eq!(c.sources.len(), 2, "overrides are not files: {:?}", c.sources);
    }

    #[test]
    fn an_override_of_one_provider_field_keeps_the_others() {
        let c = overridden(
            &[("toolshed.toml", "[provider.local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\n")],
            &["provider.local.base_url=http://127.0.0.1:2/v1"],
        )
        .unwrap();
        let local = &c.providers["local"];
        assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:2/v1"));
        assert_eq!(local.kind, ProviderKind::OpenaiChat);
    }

    #[test]
    fn a_bad_override_names_itself_and_what_is_wrong() {
        let err = overridden(&[], &["session.max_step=3"]).unwrap_err();
        assert_eq!(err.path, Path::new("--config session.max_step=3"));
        assert!(err.message.contains("unknown field `max_step`"), "{err}");
        let err = overridden(&[], &["session.max_steps=0"]).unwrap_err();
        assert!(err.to_string().contains("max_steps must be at least 1"), "{err}");
        let err = overridden(&[], &["session.max_steps=many"]).unwrap_err();
        assert!(err.to_string().contains("--config session.max_steps=many"), "{err}");
    }
}
