//! Which provider a model id names, and how to reach it: `provider/model` ids, the built-in
//! `openai` and `anthropic` providers, `[provider.NAME]` tables, API keys from the
//! environment, and context windows per model.

use toolshed_core::config::{Config, ProviderConfig, ProviderKind};

use crate::error::LlmError;

/// The default OpenAI endpoint.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// The default Anthropic endpoint.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The context window assumed for a model nobody described.
pub const DEFAULT_CONTEXT: u64 = 128_000;

/// A model id split into provider and model: `openai/gpt-5.1`, `local/qwen3:8b`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRef {
    /// The provider's name (`openai`, `anthropic`, or a `[provider.NAME]`).
    pub provider: String,
    /// The model id as the provider knows it (may itself contain `/`).
    pub model: String,
}

impl ModelRef {
    /// Splits `provider/model` at the first `/`.
    pub fn parse(id: &str) -> Result<ModelRef, LlmError> {
        match id.split_once('/') {
            Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
                Ok(ModelRef { provider: provider.to_string(), model: model.to_string() })
            }
            _ => Err(LlmError::Config(format!(
                "model `{id}` is not of the form PROVIDER/MODEL (e.g. openai/gpt-5.1, anthropic/claude-sonnet-4-5, or NAME/MODEL for a [provider.NAME] in toolshed.toml)"
            ))),
        }
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// Everything needed to send requests to one provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderSettings {
    /// The provider's name.
    pub name: String,
    /// Its wire format.
    pub kind: ProviderKind,
    /// Its base URL, without a trailing slash (`.../v1`).
    pub base_url: String,
    /// The API key, if one is needed and set.
    pub api_key: Option<String>,
    /// The environment variable the key comes from, for error messages.
    pub api_key_env: Option<String>,
}

impl ProviderSettings {
    /// What to tell a user whose key was rejected.
    pub fn key_hint(&self) -> String {
        match &self.api_key_env {
            Some(var) => format!("Check the key in ${var}."),
            None => format!("Set `api_key_env` in [provider.{}] to the variable holding a valid key.", self.name),
        }
    }
}

/// Reads an environment variable; unset and empty are the same.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment as an [`EnvLookup`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Resolves the provider of `model` from the config and the environment. Errors say exactly
/// what to set.
pub fn resolve(config: &Config, model: &ModelRef, env: EnvLookup<'_>) -> Result<ProviderSettings, LlmError> {
    let name = model.provider.as_str();
    let configured = config.providers.get(name);
    let builtin = builtin(name, env);
    let (kind, base_url, key_env) = match (configured, &builtin) {
        (Some(p), _) => {
            let default_url = builtin.as_ref().map(|b| b.1.clone());
            let base = p.base_url.clone().or(default_url).ok_or_else(|| {
                LlmError::Config(format!(
                    "[provider.{name}] has no `base_url`; set it to the server's API root (e.g. base_url = \"http://127.0.0.1:8080/v1\")"
                ))
            })?;
            let key_env = p.api_key_env.clone().or_else(|| builtin.as_ref().and_then(|b| b.2.clone()));
            (p.kind, base, key_env)
        }
        (None, Some((kind, base, key_env))) => (*kind, base.clone(), key_env.clone()),
        (None, None) => {
            let mut known: Vec<&str> = vec!["openai", "anthropic"];
            known.extend(config.providers.keys().map(String::as_str));
            return Err(LlmError::Config(format!(
                "unknown provider `{name}` in model `{model}`; known providers: {}. Add a [provider.{name}] table with `kind` and `base_url` to toolshed.toml to define it",
                known.join(", ")
            )));
        }
    };
    let api_key = match &key_env {
        Some(var) => match env(var) {
            Some(key) => Some(key),
            None => return Err(missing_key(name, var, configured)),
        },
        None => None,
    };
    let base_url = base_url.trim_end_matches('/');
    let base_url = match kind {
        ProviderKind::Anthropic => anthropic_api_root(base_url),
        _ => base_url.to_string(),
    };
    Ok(ProviderSettings { name: name.to_string(), kind, base_url, api_key, api_key_env: key_env })
}

/// Checks that `model`'s provider is one toolshed can reach (built in, or a `[provider.NAME]`
/// with a base URL) without needing its API key: for commands that only list what the model
/// would get.
pub fn check(config: &Config, model: &ModelRef) -> Result<(), LlmError> {
    // Every key counts as set: only the provider's name and address are checked.
    let any_key = |var: &str| process_env(var).or_else(|| Some(String::new()));
    resolve(config, model, &any_key).map(|_| ())
}

/// An Anthropic base URL as the Anthropic SDKs and Claude Code take it: the server's root,
/// under which the API is `/v1/messages` (`ANTHROPIC_BASE_URL=http://127.0.0.1:4000`). A URL
/// that already ends in `/v1` (toolshed's own convention, and the default) is kept.
fn anthropic_api_root(base_url: &str) -> String {
    if base_url.ends_with("/v1") { base_url.to_string() } else { format!("{base_url}/v1") }
}

fn missing_key(name: &str, var: &str, configured: Option<&ProviderConfig>) -> LlmError {
    let local = if configured.is_none() {
        "; or, for a local OpenAI-compatible server, add [provider.NAME] with kind = \"openai-chat\" and base_url = \"http://127.0.0.1:PORT/v1\" to toolshed.toml and use --model NAME/MODEL"
    } else {
        ""
    };
    LlmError::Config(format!("the provider `{name}` needs an API key: set the environment variable {var}{local}"))
}

/// The built-in providers: kind, base URL and key variable.
fn builtin(name: &str, env: EnvLookup<'_>) -> Option<(ProviderKind, String, Option<String>)> {
    match name {
        "openai" => Some((
            ProviderKind::OpenaiResponses,
            env("OPENAI_BASE_URL").unwrap_or_else(|| OPENAI_BASE_URL.to_string()),
            Some("OPENAI_API_KEY".to_string()),
        )),
        "anthropic" => Some((
            ProviderKind::Anthropic,
            env("ANTHROPIC_BASE_URL").unwrap_or_else(|| ANTHROPIC_BASE_URL.to_string()),
            Some("ANTHROPIC_API_KEY".to_string()),
        )),
        _ => None,
    }
}

/// The context window of `model` in tokens: `[provider.NAME.models.ID] context`, else a small
/// built-in table of well-known models, else [`DEFAULT_CONTEXT`].
pub fn context_window(config: &Config, model: &ModelRef) -> u64 {
    if let Some(n) =
        config.providers.get(&model.provider).and_then(|p| p.models.get(&model.model)).and_then(|m| m.context)
    {
        return n;
    }
    let id = model.model.to_ascii_lowercase();
    const TABLE: &[(&str, u64)] = &[
        ("gpt-5", 400_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("claude-", 200_000),
        ("gemini-", 1_048_576),
    ];
    TABLE.iter().find(|(prefix, _)| id.starts_with(prefix)).map_or(DEFAULT_CONTEXT, |(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    fn config(text: &str) -> Config {
        let mut c = Config::default();
        c.merge_str(std::path::Path::new("toolshed.toml"), text).unwrap();
        c
    }

    #[test]
    fn model_ids_split_at_the_first_slash() {
        let m = ModelRef::parse("openrouter/meta-llama/llama-4").unwrap();
        assert_eq!((m.provider.as_str(), m.model.as_str()), ("openrouter", "meta-llama/llama-4"));
        assert!(ModelRef::parse("gpt-5").unwrap_err().to_string().contains("PROVIDER/MODEL"));
    }

    #[test]
    fn builtin_openai_reads_key_and_base_url_from_env() {
        let env = env_of(&[("OPENAI_API_KEY", "sk-1"), ("OPENAI_BASE_URL", "http://proxy/v1/")]);
        let s = resolve(&Config::default(), &ModelRef::parse("openai/gpt-5.1").unwrap(), &env).unwrap();
        assert_eq!(s.kind, ProviderKind::OpenaiResponses);
        assert_eq!(s.base_url, "http://proxy/v1");
        assert_eq!(s.api_key.as_deref(), Some("sk-1"));
    }

    #[test]
    fn missing_key_says_which_variable_to_set_and_how_to_go_local() {
        let err = resolve(&Config::default(), &ModelRef::parse("anthropic/claude-sonnet-4-5").unwrap(), &env_of(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("set the environment variable ANTHROPIC_API_KEY"), "{err}");
        assert!(err.contains("base_url"), "{err}");
    }

    #[test]
    fn check_needs_a_known_provider_with_an_address_but_no_key() {
        let c = config("[provider.local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n");
        for ok in ["anthropic/claude-sonnet-4-5", "openai/gpt-5.1", "local/qwen3"] {
            assert!(check(&c, &ModelRef::parse(ok).unwrap()).is_ok(), "{ok}");
        }
        let err = check(&c, &ModelRef::parse("foo/x").unwrap()).unwrap_err().to_string();
        assert!(err.contains("unknown provider `foo`") && err.contains("local"), "{err}");
        let c = config("[provider.bare]\nkind = \"openai-chat\"\n");
        let err = check(&c, &ModelRef::parse("bare/x").unwrap()).unwrap_err().to_string();
        assert!(err.contains("no `base_url`"), "{err}");
    }

    #[test]
    fn a_local_provider_needs_no_key() {
        let c = config("[provider.local]\nkind = \"openai-chat\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n");
        let s = resolve(&c, &ModelRef::parse("local/qwen3").unwrap(), &env_of(&[])).unwrap();
        assert_eq!(s.kind, ProviderKind::OpenaiChat);
        assert_eq!(s.api_key, None);
        let err = resolve(&c, &ModelRef::parse("nope/x").unwrap(), &env_of(&[])).unwrap_err().to_string();
        assert!(err.contains("known providers: openai, anthropic, local"), "{err}");
    }

    #[test]
    fn context_windows_come_from_config_then_the_table() {
        let c = config(
            "[provider.local]\nkind = \"openai-chat\"\nbase_url = \"http://x/v1\"\n[provider.local.models.small]\ncontext = 8192\n",
        );
        assert_eq!(context_window(&c, &ModelRef::parse("local/small").unwrap()), 8192);
        assert_eq!(context_window(&c, &ModelRef::parse("anthropic/claude-opus-4-1").unwrap()), 200_000);
        assert_eq!(context_window(&c, &ModelRef::parse("local/unknown").unwrap()), DEFAULT_CONTEXT);
    }
}
