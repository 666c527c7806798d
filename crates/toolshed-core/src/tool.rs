//! The tool model: what a tool is ([`ToolSpec`], [`Tool`]), what it returns
//! ([`ToolOutput`], [`ToolError`]), and two ways to write one from typed arguments
//! ([`TypedTool`] for a struct, [`tool_fn`] for an async closure).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::context::ToolContext;
use crate::output::SpillInfo;
use crate::permission::{Permission, PermissionRequest};

/// A boxed, sendable future; the return type of object-safe async tool methods.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Whether the model is shown a tool up front, can find it with `tool_search`, or never sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Exposure {
    /// In the initial tool list.
    #[default]
    Direct,
    /// Not sent; discoverable through `tool_search`.
    Deferred,
    /// Callable by the runtime (and `toolshed call`) only.
    Hidden,
}

impl Exposure {
    /// The lowercase name used in config files and `toolshed tools`.
    pub fn as_str(self) -> &'static str {
        match self {
            Exposure::Direct => "direct",
            Exposure::Deferred => "deferred",
            Exposure::Hidden => "hidden",
        }
    }
}

/// How a tool may be scheduled and what it may touch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ToolFlags {
    /// May run concurrently with other parallel-safe calls (takes the shared admission lock).
    pub parallel_safe: bool,
    /// Changes files or other state outside the session.
    pub mutating: bool,
    /// Only observes; never changes anything (safe in plan mode).
    pub read_only: bool,
}

impl ToolFlags {
    /// Flags of a tool that only reads: parallel-safe and read-only.
    pub const READ_ONLY: ToolFlags = ToolFlags { parallel_safe: true, mutating: false, read_only: true };
    /// Flags of a tool that changes files: exclusive and mutating.
    pub const MUTATING: ToolFlags = ToolFlags { parallel_safe: false, mutating: true, read_only: false };
}

/// What another agent's name for a built-in tool's parameter stands for (see
/// [`ToolSpec::aliases`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alias {
    /// This parameter: the same thing under another agent's name.
    Param(&'static str),
    /// A flag that changes nothing here (grep's `-n`: lines are always numbered). A boolean
    /// (or `null`) sent under it is dropped; any other value is refused.
    NoEffect,
}

/// The grammar language of a freeform tool's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GrammarSyntax {
    /// A Lark grammar (what OpenAI's custom tools and Codex's apply_patch use).
    Lark,
    /// A regular expression.
    Regex,
}

/// The grammar a freeform tool's raw-text input follows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Grammar {
    /// The grammar language.
    pub syntax: GrammarSyntax,
    /// The grammar text.
    pub definition: String,
}

/// Everything a provider needs to show a tool to a model, plus how the runtime treats it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls (`[A-Za-z0-9_-]`, at most 64 characters).
    pub name: String,
    /// The description the model reads.
    pub description: String,
    /// JSON Schema (2020-12, `$defs` inlined) of the JSON arguments; for a freeform tool,
    /// an object with one string field `input` (the fallback for providers without freeform tools).
    pub parameters: Value,
    /// Set for freeform tools: the model sends raw text following this grammar.
    pub freeform: Option<Grammar>,
    /// Scheduling and side-effect flags.
    pub flags: ToolFlags,
    /// Default exposure; the registry and exposure hooks may change it per view.
    pub exposure: Exposure,
    /// The permission key that guards the tool (`edit` for write and apply_patch); the tool's
    /// name unless set otherwise.
    pub permission: String,
    /// MCP fields of the tool that no other wire format carries (an upstream MCP tool's
    /// `title`, `outputSchema`, `annotations`, `icons`, `_meta`), passed through as they are
    /// when the tool is served over MCP.
    pub mcp: Map<String, Value>,
    /// Other agents' names for this tool's parameters (Claude Code's `-i` for grep's
    /// `case_insensitive`, Codex's `cmd` for bash's `command`), taken as what they stand for
    /// when a built-in tool is called; never shown to the model. Only names whose meaning here
    /// is the same are listed: anything else is refused.
    pub aliases: &'static [(&'static str, Alias)],
}

impl ToolSpec {
    /// A JSON-argument tool with the given schema; read-write, exclusive and direct by default.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        let name = name.into();
        ToolSpec {
            permission: name.clone(),
            name,
            description: description.into(),
            parameters,
            freeform: None,
            flags: ToolFlags::default(),
            exposure: Exposure::Direct,
            mcp: Map::new(),
            aliases: &[],
        }
    }

    /// Sets the flags.
    pub fn with_flags(mut self, flags: ToolFlags) -> Self {
        self.flags = flags;
        self
    }

    /// Sets the default exposure.
    pub fn with_exposure(mut self, exposure: Exposure) -> Self {
        self.exposure = exposure;
        self
    }

    /// Sets the permission key.
    pub fn with_permission(mut self, permission: impl Into<String>) -> Self {
        self.permission = permission.into();
        self
    }

    /// Sets other agents' names for the parameters. Each must name a parameter the schema lists
    /// and be none itself (checked in debug builds, so every test that builds the tool checks).
    pub fn with_aliases(mut self, aliases: &'static [(&'static str, Alias)]) -> Self {
        let listed = |name: &str| self.parameters.get("properties").and_then(|p| p.get(name)).is_some();
        debug_assert!(
            aliases.iter().all(|(alias, to)| !listed(alias)
                && match to {
                    Alias::NoEffect => true,
                    Alias::Param(p) => listed(p),
                }),
            "{}: an alias is a parameter, or names none: {aliases:?}",
            self.name
        );
        self.aliases = aliases;
        self
    }

    /// Makes this a freeform tool whose raw-text input follows `grammar`.
    pub fn with_freeform(mut self, grammar: Grammar) -> Self {
        self.freeform = Some(grammar);
        self
    }
}

/// A non-text part of a tool result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attachment {
    /// An image the model can look at.
    Image {
        /// e.g. `image/png`.
        mime_type: String,
        /// The raw image bytes.
        data: Vec<u8>,
    },
}

/// The media type of an image in a format models accept (PNG, JPEG, GIF, WebP), told from its
/// first bytes (its magic number), whatever its file name or label says; `None` for anything
/// else. The one sniffer for images read from files and fetched from the web.
pub fn image_mime(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// A successful tool result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOutput {
    /// The text the model reads.
    pub text: String,
    /// A short human-readable title (shown in UIs and session listings).
    pub title: Option<String>,
    /// Structured data for programs (not sent to the model).
    pub metadata: Map<String, Value>,
    /// Images and other non-text parts.
    pub attachments: Vec<Attachment>,
    /// Set when the tool already spilled its complete output to a file.
    pub spill: Option<SpillInfo>,
    /// The result as its source sent it (an upstream MCP server's `content` and
    /// `structuredContent`), for a client that speaks that form (`mcp serve`). The text and
    /// attachments above already say what it holds, so it is never recorded nor shown to a model.
    pub passthrough: Option<Value>,
}

impl ToolOutput {
    /// A result that is just text.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput { text: text.into(), ..Default::default() }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Adds one metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Adds an attachment.
    pub fn with_attachment(mut self, attachment: Attachment) -> Self {
        self.attachments.push(attachment);
        self
    }
}

/// A failed tool call, split by what should happen next.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The model sees the message and can correct itself; the turn goes on.
    #[error("{0}")]
    RespondToModel(String),
    /// Something is broken beyond what the model can fix; the turn ends.
    #[error("fatal error: {0}")]
    Fatal(String),
}

impl ToolError {
    /// An error the model should read and act on.
    pub fn model(message: impl fmt::Display) -> Self {
        ToolError::RespondToModel(message.to_string())
    }

    /// An error that ends the turn.
    pub fn fatal(message: impl fmt::Display) -> Self {
        ToolError::Fatal(message.to_string())
    }
}

/// A tool: a spec, and a way to turn validated JSON arguments into a runnable invocation.
///
/// Most tools implement [`TypedTool`] or use [`tool_fn`] instead of this trait directly.
pub trait Tool: Send + Sync + 'static {
    /// The tool's definition.
    fn spec(&self) -> &ToolSpec;

    /// Decodes arguments that already passed schema validation into an invocation.
    fn prepare(&self, args: Value) -> Result<Box<dyn Invocation + '_>, ToolError>;

    /// The spec `agent` is shown when it differs from [`Tool::spec`] because the agent's rules
    /// deny part of what the tool offers (`skill` leaves out the skills the agent may not
    /// load). `None` keeps the spec.
    fn spec_for(&self, _agent: &str, _permission: &dyn Permission) -> Option<ToolSpec> {
        None
    }
}

/// One decoded call of a tool, ready to be permitted and run.
pub trait Invocation: Send {
    /// What this call needs permission for. The default asks for the tool's permission key
    /// with the pattern `*`.
    fn permissions(&self, ctx: &ToolContext) -> Result<Vec<PermissionRequest>, ToolError>;

    /// An upper bound on the run time for this call, if the tool knows one; the chain's
    /// default applies otherwise.
    fn time_limit(&self) -> Option<Duration> {
        None
    }

    /// Runs the call.
    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}

/// A tool whose arguments are a typed struct: the schema is derived from the struct, so the
/// decoder and the schema the model sees cannot drift apart.
pub trait TypedTool: Send + Sync + 'static {
    /// The arguments; doc comments on its fields become the parameter descriptions.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

    /// The tool name.
    fn name(&self) -> &str;

    /// The description the model reads.
    fn description(&self) -> String;

    /// The description `agent` reads when it differs from [`TypedTool::description`] because
    /// the agent's rules deny part of what the tool offers. `None` keeps the description.
    fn description_for(&self, _agent: &str, _permission: &dyn Permission) -> Option<String> {
        None
    }

    /// Scheduling and side-effect flags.
    fn flags(&self) -> ToolFlags {
        ToolFlags::default()
    }

    /// Other agents' names for the parameters (see [`ToolSpec::aliases`]).
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[]
    }

    /// Adjusts the spec built from the name, description, schema and flags (e.g. to set a
    /// permission key, a grammar or an exposure).
    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec
    }

    /// What a call with these arguments needs permission for.
    fn permissions(
        &self,
        spec: &ToolSpec,
        _args: &Self::Args,
        _ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(vec![PermissionRequest::new(&spec.permission, ["*"])])
    }

    /// An upper bound on the run time of a call with these arguments.
    fn time_limit(&self, _args: &Self::Args) -> Option<Duration> {
        None
    }

    /// Runs the tool.
    fn run(&self, args: Self::Args, ctx: ToolContext) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// Adapts a [`TypedTool`] to [`Tool`].
pub struct Typed<T: TypedTool> {
    inner: Arc<T>,
    spec: ToolSpec,
}

impl<T: TypedTool> Typed<T> {
    /// Builds the spec of `tool` from its argument type.
    pub fn new(tool: T) -> Self {
        let spec = ToolSpec::new(tool.name(), tool.description(), crate::schema::schema_for::<T::Args>())
            .with_flags(tool.flags())
            .with_aliases(tool.aliases());
        let spec = tool.customize(spec);
        Typed { inner: Arc::new(tool), spec }
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.inner
    }
}

struct TypedInvocation<'a, T: TypedTool> {
    tool: Arc<T>,
    spec: &'a ToolSpec,
    args: T::Args,
}

impl<T: TypedTool> Invocation for TypedInvocation<'_, T> {
    fn permissions(&self, ctx: &ToolContext) -> Result<Vec<PermissionRequest>, ToolError> {
        self.tool.permissions(self.spec, &self.args, ctx)
    }

    fn time_limit(&self) -> Option<Duration> {
        self.tool.time_limit(&self.args)
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        let TypedInvocation { tool, args, .. } = *self;
        Box::pin(async move { tool.run(args, ctx).await })
    }
}

impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, args: Value) -> Result<Box<dyn Invocation + '_>, ToolError> {
        let args = decode_args::<T::Args>(&self.spec.name, args)?;
        Ok(Box::new(TypedInvocation { tool: self.inner.clone(), spec: &self.spec, args }))
    }

    fn spec_for(&self, agent: &str, permission: &dyn Permission) -> Option<ToolSpec> {
        let description = self.inner.description_for(agent, permission)?;
        Some(ToolSpec { description, ..self.spec.clone() })
    }
}

/// Deserializes validated arguments, reporting the path of a field serde rejects.
pub fn decode_args<A: DeserializeOwned>(tool: &str, args: Value) -> Result<A, ToolError> {
    serde_json::from_value(args).map_err(|e| {
        let e = readable_serde_error(&e.to_string());
        ToolError::model(format!("Invalid arguments for {tool}: {e}. Fix the arguments and call {tool} again."))
    })
}

/// A serde message with Rust's integer type names replaced by the ranges they stand for.
fn readable_serde_error(message: &str) -> String {
    const RANGES: &[(&str, &str)] = &[
        ("expected u8", "expected a whole number from 0 to 255"),
        ("expected u16", "expected a whole number from 0 to 65535"),
        ("expected u32", "expected a whole number from 0 to 4294967295"),
        ("expected u64", "expected a whole number from 0 to 18446744073709551615"),
        ("expected usize", "expected a whole number from 0 to 18446744073709551615"),
        ("expected i32", "expected a whole number from -2147483648 to 2147483647"),
        ("expected i64", "expected a whole number from -9223372036854775808 to 9223372036854775807"),
    ];
    let mut out = message.to_string();
    for (rust, words) in RANGES {
        if let Some(at) = out.find(rust)
            && !out[at + rust.len()..].starts_with(|c: char| c.is_ascii_alphanumeric())
        {
            out.replace_range(at..at + rust.len(), words);
        }
    }
    out
}

/// A tool built from an async function or closure by [`tool_fn`].
pub struct FnTool<A, F> {
    spec: ToolSpec,
    func: Arc<F>,
    _args: PhantomData<fn() -> A>,
}

/// Defines a tool from a name, a description and an async function of typed arguments.
///
/// The tool is exclusive (not parallel-safe) unless [`FnTool::parallel_safe`] or
/// [`FnTool::read_only`] says otherwise.
pub fn tool_fn<A, F, Fut>(name: impl Into<String>, description: impl Into<String>, func: F) -> FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    FnTool {
        spec: ToolSpec::new(name, description, crate::schema::schema_for::<A>()),
        func: Arc::new(func),
        _args: PhantomData,
    }
}

impl<A, F> FnTool<A, F> {
    /// Lets calls of this tool run concurrently with other parallel-safe calls.
    pub fn parallel_safe(mut self) -> Self {
        self.spec.flags.parallel_safe = true;
        self
    }

    /// Marks the tool read-only (and therefore parallel-safe).
    pub fn read_only(mut self) -> Self {
        self.spec.flags = ToolFlags::READ_ONLY;
        self
    }

    /// Marks the tool as changing files or other outside state.
    pub fn mutating(mut self) -> Self {
        self.spec.flags.mutating = true;
        self.spec.flags.read_only = false;
        self
    }

    /// Sets the default exposure.
    pub fn exposure(mut self, exposure: Exposure) -> Self {
        self.spec.exposure = exposure;
        self
    }

    /// Sets the permission key.
    pub fn permission(mut self, key: impl Into<String>) -> Self {
        self.spec.permission = key.into();
        self
    }
}

struct FnInvocation<A, F> {
    func: Arc<F>,
    permission: String,
    args: A,
}

impl<A, F, Fut> Invocation for FnInvocation<A, F>
where
    A: Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn permissions(&self, _ctx: &ToolContext) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(vec![PermissionRequest::new(&self.permission, ["*"])])
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
        Box::pin((self.func)(self.args, ctx))
    }
}

impl<A, F, Fut> Tool for FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
{
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, args: Value) -> Result<Box<dyn Invocation + '_>, ToolError> {
        let args = decode_args::<A>(&self.spec.name, args)?;
        Ok(Box::new(FnInvocation { func: self.func.clone(), permission: self.spec.permission.clone(), args }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_told_by_their_first_bytes() {
        assert_eq!(image_mime(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(image_mime(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(image_mime(b"GIF87a.."), Some("image/gif"));
        assert_eq!(image_mime(b"GIF89a.."), Some("image/gif"));
        assert_eq!(image_mime(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_mime(b"RIFF\0\0\0\0WAVEfmt "), None);
        assert_eq!(image_mime(b"RIFF"), None);
        assert_eq!(image_mime(b"\x89PNG"), None);
        assert_eq!(image_mime(b"<svg xmlns"), None);
        assert_eq!(image_mime(b""), None);
    }

    #[derive(Deserialize, JsonSchema)]
    struct Args {
        /// A number.
        n: u32,
    }

    #[test]
    fn fn_tool_builds_spec_from_args_type() {
        let tool =
            tool_fn("double", "Doubles n.", |a: Args, _| async move { Ok(ToolOutput::text((a.n * 2).to_string())) })
                .read_only();
        let spec = tool.spec();
        assert_eq!(spec.name, "double");
        assert_eq!(spec.permission, "double");
        assert!(spec.flags.parallel_safe && spec.flags.read_only);
        assert_eq!(spec.parameters["properties"]["n"]["description"], "A number.");
        assert_eq!(spec.parameters["required"], serde_json::json!(["n"]));
    }

    #[test]
    fn tool_error_display_marks_fatal() {
        assert_eq!(ToolError::model("bad").to_string(), "bad");
        assert_eq!(ToolError::fatal("disk gone").to_string(), "fatal error: disk gone");
    }
}
