//! Automatic deferral: when the direct tools' definitions would take more than a configured
//! share of the model's context, the tools of MCP servers that did not choose an exposure are
//! deferred (found through `tool_search` instead), largest server first, until the rest fits.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use crate::registry::{Registry, Source, View, VisibilityHook};
use crate::tool::{Exposure, ToolSpec};

/// The context assumed for a model whose size is not configured, in tokens.
pub const DEFAULT_CONTEXT_TOKENS: u64 = 128_000;

/// Bytes per token when estimating what definitions cost (the estimate Codex uses).
pub const BYTES_PER_TOKEN: u64 = 4;

/// Defers the tools of MCP servers without an explicit exposure when the direct tool list
/// would be too large for the model's context. Decisions are cached per model.
pub struct AutoDefer {
    share: f64,
    contexts: HashMap<String, u64>,
    auto_servers: HashSet<String>,
    decisions: Mutex<HashMap<Option<String>, Arc<HashSet<String>>>>,
}

impl AutoDefer {
    /// A policy deferring when direct definitions exceed `share` (0..=1) of the context.
    /// `auto_servers` are the MCP servers whose exposure is left to this policy; `contexts`
    /// maps model ids (`provider/model`) to their context in tokens.
    pub fn new(share: f64, auto_servers: impl IntoIterator<Item = String>, contexts: HashMap<String, u64>) -> Self {
        AutoDefer { share, contexts, auto_servers: auto_servers.into_iter().collect(), decisions: Mutex::default() }
    }

    /// The byte budget of the direct tool list for `model`.
    pub fn budget(&self, model: Option<&str>) -> u64 {
        let tokens = model.and_then(|m| self.contexts.get(m)).copied().unwrap_or(DEFAULT_CONTEXT_TOKENS);
        (self.share * (tokens * BYTES_PER_TOKEN) as f64) as u64
    }

    /// The servers whose tools are deferred for `model`.
    pub fn deferred_servers(&self, registry: &Registry, model: Option<&str>) -> Arc<HashSet<String>> {
        let key = model.map(str::to_string);
        if let Some(found) = self.decisions.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            return found.clone();
        }
        let mut fixed = 0u64;
        let mut per_server: BTreeMap<&str, u64> = BTreeMap::new();
        for entry in registry.entries() {
            let spec = entry.spec();
            if spec.exposure != Exposure::Direct {
                continue;
            }
            let bytes = crate::render::definition_bytes(spec) as u64;
            match &entry.source {
                Source::Mcp(server) if self.auto_servers.contains(server) => {
                    *per_server.entry(server.as_str()).or_default() += bytes;
                }
                _ => fixed += bytes,
            }
        }
        let budget = self.budget(model);
        let mut total = fixed + per_server.values().sum::<u64>();
        let mut largest: Vec<(&str, u64)> = per_server.into_iter().collect();
        largest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let mut deferred = HashSet::new();
        for (server, bytes) in largest {
            if total <= budget {
                break;
            }
            deferred.insert(server.to_string());
            total -= bytes;
        }
        let deferred = Arc::new(deferred);
        self.decisions.lock().unwrap_or_else(PoisonError::into_inner).insert(key, deferred.clone());
        deferred
    }
}

impl VisibilityHook for AutoDefer {
    fn apply(&self, registry: &Registry, view: &View<'_>, spec: &ToolSpec, exposure: Exposure) -> Option<Exposure> {
        if exposure != Exposure::Direct || self.auto_servers.is_empty() {
            return Some(exposure);
        }
        let Some(Source::Mcp(server)) = registry.get(&spec.name).map(|e| &e.source) else {
            return Some(exposure);
        };
        if !self.auto_servers.contains(server) || view.found.is_some_and(|f| f.contains(&spec.name)) {
            return Some(exposure);
        }
        if self.deferred_servers(registry, view.model).contains(server) {
            Some(Exposure::Deferred)
        } else {
            Some(exposure)
        }
    }
}
