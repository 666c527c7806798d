//! The `tool_search` tool.

use std::sync::{Arc, Mutex, PoisonError};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::index::{SearchDoc, SearchIndex};
use crate::context::ToolDiscovery;
use crate::registry::Source;
use crate::tool::{ToolContext, ToolError, ToolFlags, ToolOutput, ToolSpec, TypedTool};

/// The tool's name (the registry hides it when no tool is deferred).
pub use crate::registry::TOOL_SEARCH;

/// How many tools a search returns when the model does not say.
pub const DEFAULT_LIMIT: usize = 8;

/// The most tools one search returns, whatever the model asks for.
const MAX_LIMIT: usize = 50;

const DESCRIPTION: &str = "Finds and loads tools that are available but not in your list yet (such as MCP servers' tools). Say the capability you need in a few words (\"create a pull request\", \"query prometheus metrics\"); the matches' names, descriptions and parameters come back, and you can call them directly from then on. Search again with other words if nothing fits.";

/// Arguments of `tool_search`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSearchArgs {
    /// What the tool should do.
    #[schemars(description = "")]
    query: String,
    /// How many tools to return at most (default 8).
    #[schemars(description = "Default 8.")]
    #[schemars(range(min = 1, max = 50))]
    limit: Option<u32>,
}

/// The `tool_search` tool. Register one per registry, with [`Source::Runtime`].
#[derive(Default)]
pub struct ToolSearch {
    cache: Mutex<Option<(u64, Arc<Catalog>)>>,
}

/// The deferred tools of one view, indexed.
struct Catalog {
    specs: Vec<ToolSpec>,
    index: SearchIndex,
}

impl ToolSearch {
    /// A `tool_search` tool with an empty cache.
    pub fn new() -> Self {
        ToolSearch::default()
    }

    /// The index over the deferred tools, reused while that set does not change.
    fn catalog(&self, discovery: &dyn ToolDiscovery) -> Arc<Catalog> {
        let key = discovery.deferred_key();
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((cached_key, catalog)) = cache.as_ref()
            && *cached_key == key
        {
            return catalog.clone();
        }
        let deferred = discovery.deferred();
        let docs: Vec<SearchDoc> = deferred.iter().map(|(spec, server)| doc_for(spec, server.as_deref())).collect();
        let catalog = Arc::new(Catalog {
            specs: deferred.into_iter().map(|(spec, _)| spec).collect(),
            index: SearchIndex::build(&docs),
        });
        *cache = Some((key, catalog.clone()));
        catalog
    }
}

/// What the index knows of a tool: its name, its MCP server (whose name prefixes the tool's),
/// description, and parameter names and descriptions.
pub fn search_doc(spec: &ToolSpec, source: &Source) -> SearchDoc {
    let server = match source {
        Source::Mcp(server) => Some(server.as_str()),
        _ => None,
    };
    doc_for(spec, server)
}

/// What the index knows of a tool from `server` (an MCP server's name), if any.
fn doc_for(spec: &ToolSpec, server: Option<&str>) -> SearchDoc {
    let server = server.map(str::to_string);
    let original_name = server.as_ref().and_then(|s| {
        let prefix = format!("{}_", crate::registry::sanitize_name(s));
        spec.name.strip_prefix(&prefix).map(str::to_string)
    });
    let mut params = Vec::new();
    let mut param_descriptions = Vec::new();
    if let Some(props) = spec.parameters.get("properties").and_then(Value::as_object) {
        for (name, schema) in props {
            params.push(name.clone());
            if let Some(d) = schema.get("description").and_then(Value::as_str) {
                param_descriptions.push(d.to_string());
            }
        }
    }
    SearchDoc {
        name: spec.name.clone(),
        original_name,
        server,
        description: spec.description.clone(),
        params,
        param_descriptions,
    }
}

impl TypedTool for ToolSearch {
    type Args = ToolSearchArgs;

    fn name(&self) -> &str {
        TOOL_SEARCH
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    async fn run(&self, args: ToolSearchArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let query = args.query.trim();
        if query.is_empty() {
            return Err(ToolError::model(
                "The query is empty. Send a few words describing the tool you need, e.g. {\"query\": \"list pull requests\"}.",
            ));
        }
        let limit = args.limit.map_or(DEFAULT_LIMIT, |l| l as usize).clamp(1, MAX_LIMIT);
        let discovery = ctx
            .discovery()
            .ok_or_else(|| ToolError::fatal("tool_search runs only inside an executor (it needs the tool list)"))?;
        let catalog = self.catalog(discovery.as_ref());
        if catalog.specs.is_empty() {
            return Ok(ToolOutput::text(
                "No tools are waiting to be loaded: every available tool is already in your tool list.",
            )
            .with_metadata("tools", json!([])));
        }
        let hits = catalog.index.search(query, limit);
        let cut = if query.chars().count() > super::MAX_QUERY_CHARS {
            format!(
                "\n(Only the query's first {} characters were read: a few words find tools best.)",
                super::MAX_QUERY_CHARS
            )
        } else {
            String::new()
        };
        if hits.is_empty() {
            let shown: String = query.chars().take(200).collect();
            let more = if shown.len() < query.len() { "…" } else { "" };
            return Ok(ToolOutput::text(format!(
                "No tool matches \"{shown}{more}\" among the {} tools not loaded yet. Try other words for the capability you need (what it acts on, what it does).{cut}",
                catalog.specs.len()
            ))
            .with_metadata("tools", json!([])));
        }
        let mut found = Vec::new();
        let mut specs = Vec::new();
        for hit in &hits {
            let Some(spec) = catalog.specs.get(hit.doc) else { continue };
            discovery.load(&spec.name);
            specs.push(json!({"name": spec.name, "description": spec.description, "parameters": spec.parameters}));
            found.push(spec.name.clone());
        }
        let listing = serde_json::to_string_pretty(&specs).map_err(ToolError::fatal)?;
        let text = format!(
            "Found {} tool(s); they are loaded and can be called directly from now on:\n{listing}{cut}",
            found.len()
        );
        let title: String = query.chars().take(80).collect();
        Ok(ToolOutput::text(text).with_title(format!("tool_search: {title}")).with_metadata("tools", json!(found)))
    }
}
