//! `websearch`: a query sent to the backend configured in `[websearch]`, answered with a
//! compact list of title, URL and snippet.
//!
//! Backends: a self-hosted SearXNG instance through its JSON API (`backend = "searxng"`,
//! `url` required, no key), Brave Search (`brave`, key in `BRAVE_API_KEY` unless
//! `api_key_env` names another variable) and Exa (`exa`, `EXA_API_KEY`). `url` overrides the
//! API endpoint of the key-based backends too. Without a usable backend the tool is not
//! registered; [`backend`] says why, and `toolshed doctor` prints it.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use reqwest::{RequestBuilder, StatusCode, Url};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolshed_core::config::WebsearchConfig;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{ToolFlags, ToolSpec, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};

use super::describe_error;
use super::html::collapse_whitespace;

/// Results returned when the call does not ask for a number.
pub const DEFAULT_LIMIT: u32 = 8;
/// The most results a call may ask for.
pub const MAX_LIMIT: u32 = 20;
/// How long a backend may take to answer.
pub const TIMEOUT: Duration = Duration::from_secs(25);
/// Snippets longer than this many characters are cut.
const SNIPPET_CHARS: usize = 300;

/// The backends `[websearch] backend` can name.
pub const BACKENDS: &[&str] = &["searxng", "brave", "exa"];

/// A configured, usable search backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A SearXNG instance at `url` (its JSON API must be enabled).
    Searxng {
        /// The `/search` endpoint.
        url: Url,
    },
    /// Brave Search's web search API.
    Brave {
        /// The endpoint.
        url: Url,
        /// The environment variable holding the subscription token.
        key_env: String,
    },
    /// Exa's search API.
    Exa {
        /// The endpoint.
        url: Url,
        /// The environment variable holding the API key.
        key_env: String,
    },
}

impl Backend {
    /// The backend's config name.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Searxng { .. } => "searxng",
            Backend::Brave { .. } => "brave",
            Backend::Exa { .. } => "exa",
        }
    }

    /// The endpoint queries go to.
    pub fn url(&self) -> &Url {
        match self {
            Backend::Searxng { url } | Backend::Brave { url, .. } | Backend::Exa { url, .. } => url,
        }
    }
}

/// The backend `config` describes, or why there is none (for `toolshed doctor`). Checks that
/// an API key variable is set, but never prints its value.
pub fn backend(config: Option<&WebsearchConfig>) -> Result<Backend, String> {
    backend_with_env(config, |name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
}

fn backend_with_env(config: Option<&WebsearchConfig>, key_set: impl Fn(&str) -> bool) -> Result<Backend, String> {
    let Some(config) = config else {
        return Err("no [websearch] section in the config, so the websearch tool is not offered. To enable it, add e.g.\n  [websearch]\n  backend = \"searxng\"\n  url = \"http://localhost:8080\"\nor backend = \"brave\" / \"exa\" with the API key in BRAVE_API_KEY / EXA_API_KEY.".to_string());
    };
    let parse = |text: &str| {
        let url = Url::parse(text).map_err(|e| format!("[websearch] url \"{text}\" is not a valid URL: {e}"))?;
        if matches!(url.scheme(), "http" | "https") {
            Ok(url)
        } else {
            Err(format!("[websearch] url \"{text}\" must start with http:// or https://"))
        }
    };
    let key_env = |default: &str| -> Result<String, String> {
        let name = config.api_key_env.clone().unwrap_or_else(|| default.to_string());
        if key_set(&name) {
            Ok(name)
        } else {
            Err(format!(
                "the {} backend needs an API key, but the environment variable {name} is not set",
                config.backend
            ))
        }
    };
    match config.backend.as_str() {
        "searxng" => {
            let Some(url) = config.url.as_deref() else {
                return Err("[websearch] backend = \"searxng\" needs `url`, the address of your SearXNG instance (e.g. \"http://localhost:8080\")".to_string());
            };
            Ok(Backend::Searxng { url: searxng_endpoint(parse(url)?) })
        }
        "brave" => {
            let url = parse(config.url.as_deref().unwrap_or("https://api.search.brave.com/res/v1/web/search"))?;
            Ok(Backend::Brave { url, key_env: key_env("BRAVE_API_KEY")? })
        }
        "exa" => {
            let url = parse(config.url.as_deref().unwrap_or("https://api.exa.ai/search"))?;
            Ok(Backend::Exa { url, key_env: key_env("EXA_API_KEY")? })
        }
        other => Err(format!("[websearch] backend \"{other}\" is unknown; use one of: {}", BACKENDS.join(", "))),
    }
}

/// The `/search` endpoint of a SearXNG instance given by its base URL (or the endpoint itself).
fn searxng_endpoint(mut url: Url) -> Url {
    if !url.path().trim_end_matches('/').ends_with("/search") {
        let path = format!("{}/search", url.path().trim_end_matches('/'));
        url.set_path(&path);
    }
    url
}

/// Arguments of `websearch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchArgs {
    /// What to search for, as you would type it into a search engine.
    pub query: String,
    /// How many results (default 8).
    #[schemars(range(min = 1, max = 20))]
    #[serde(default = "default_limit")]
    pub limit: u32,
}

fn default_limit() -> u32 {
    DEFAULT_LIMIT
}

/// The `websearch` tool, bound to one backend.
#[derive(Clone, Debug)]
pub struct WebSearch {
    backend: Backend,
}

impl WebSearch {
    /// The tool searching with `backend`.
    pub fn new(backend: Backend) -> Self {
        WebSearch { backend }
    }
}

const DESCRIPTION: &str = "Search the web and get a list of results: title, URL and a short snippet each.

- Use it to find current information, documentation or pages you do not know the URL of; then read the promising ones with webfetch.
- Write the query as you would in a search engine: a few specific words, names, versions or error messages; not a question in full sentences.
- Returns 8 results unless you set `limit` (at most 20). Snippets are short and may be out of date: read the page before relying on it.";

impl TypedTool for WebSearch {
    type Args = WebSearchArgs;

    fn name(&self) -> &str {
        "websearch"
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &WebSearchArgs,
        _ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let query = check_query(&args.query)?;
        // A query is rarely repeated word for word, so "always" approves searching at all.
        Ok(vec![PermissionRequest::new(&spec.permission, [query]).with_always(["*"])])
    }

    fn time_limit(&self, _args: &WebSearchArgs) -> Option<Duration> {
        Some(TIMEOUT + Duration::from_secs(5))
    }

    async fn run(&self, args: WebSearchArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let query = check_query(&args.query)?;
        let limit = args.limit.clamp(1, MAX_LIMIT);
        let results = self.search(query, limit).await?;
        Ok(ToolOutput::text(format_results(query, &results))
            .with_title(format!("websearch: {query}"))
            .with_metadata("backend", self.backend.name())
            .with_metadata("results", results.len() as u64))
    }
}

/// Sends one real query to `backend` (what `toolshed doctor` does to see that search works):
/// the number of results, or the error the model would be told.
pub async fn probe(backend: &Backend, query: &str) -> Result<usize, String> {
    let tool = WebSearch::new(backend.clone());
    match tool.search(query, 3).await {
        Ok(results) => Ok(results.len()),
        Err(ToolError::RespondToModel(message) | ToolError::Fatal(message)) => Err(message),
    }
}

impl WebSearch {
    /// Up to `limit` results for `query` from the backend.
    async fn search(&self, query: &str, limit: u32) -> Result<Vec<SearchResult>, ToolError> {
        let client = super::client().map_err(ToolError::fatal)?;
        let request = build_request(client, &self.backend, query, limit)?;
        let response = tokio::time::timeout(TIMEOUT, request.send())
            .await
            .map_err(|_| self.failed(&format!("it did not answer within {} s", TIMEOUT.as_secs())))?
            .map_err(|e| self.failed(&describe_error(&e)))?;
        let status = response.status();
        let body = tokio::time::timeout(TIMEOUT, response.bytes())
            .await
            .map_err(|_| self.failed(&format!("its answer did not arrive within {} s", TIMEOUT.as_secs())))?
            .map_err(|e| self.failed(&describe_error(&e)))?;
        if !status.is_success() {
            return Err(self.status_error(status, &body));
        }
        let value: Value = serde_json::from_slice(&body).map_err(|e| {
            self.failed(&format!(
                "its answer is not JSON ({e}); check that [websearch] url points at the backend's API"
            ))
        })?;
        let mut results = parse_results(&self.backend, &value);
        results.truncate(limit as usize);
        Ok(results)
    }
}

fn check_query(query: &str) -> Result<&str, ToolError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(ToolError::model("The query is empty. Send the words to search for in `query`."));
    }
    Ok(query)
}

impl WebSearch {
    fn failed(&self, why: &str) -> ToolError {
        ToolError::model(format!(
            "The web search failed: the {} backend at {} could not be reached or answered badly: {why}. Retry later; this is not a problem with your query.",
            self.backend.name(),
            self.backend.url()
        ))
    }

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ToolError {
        let name = self.backend.name();
        let reason = match (&self.backend, status.as_u16()) {
            (Backend::Searxng { .. }, 403) => {
                "SearXNG refused the JSON format; `json` must be listed under search.formats in its settings.yml"
                    .to_string()
            }
            (Backend::Brave { key_env, .. } | Backend::Exa { key_env, .. }, 401 | 403) => {
                format!("the API key in {key_env} was rejected")
            }
            (_, 429) => "the backend is rate-limiting requests; wait before searching again".to_string(),
            _ => {
                let text = collapse_whitespace(&String::from_utf8_lossy(&body[..body.len().min(2000)]));
                let excerpt: String = text.chars().take(300).collect();
                if excerpt.is_empty() { "no details given".to_string() } else { excerpt }
            }
        };
        ToolError::model(format!(
            "The web search failed: the {name} backend answered HTTP {}: {reason}. This is not a problem with your query.",
            status.as_u16()
        ))
    }
}

fn build_request(
    client: &reqwest::Client,
    backend: &Backend,
    query: &str,
    limit: u32,
) -> Result<RequestBuilder, ToolError> {
    let key = |env: &str| {
        std::env::var(env).map_err(|_| {
            ToolError::model(format!(
                "The web search is not available: the environment variable {env} with the {} API key is not set. Do not retry; tell the user.",
                backend.name()
            ))
        })
    };
    Ok(match backend {
        Backend::Searxng { url } => {
            let mut url = url.clone();
            url.query_pairs_mut().append_pair("q", query).append_pair("format", "json");
            client.get(url).header(ACCEPT, "application/json")
        }
        Backend::Brave { url, key_env } => {
            let mut url = url.clone();
            url.query_pairs_mut().append_pair("q", query).append_pair("count", &limit.to_string());
            client.get(url).header(ACCEPT, "application/json").header("X-Subscription-Token", key(key_env)?)
        }
        Backend::Exa { url, key_env } => {
            let body = json!({
                "query": query,
                "numResults": limit,
                "type": "auto",
                "contents": { "highlights": { "maxCharacters": SNIPPET_CHARS } },
            });
            client
                .post(url.clone())
                .header(ACCEPT, "application/json")
                .header(CONTENT_TYPE, "application/json")
                .header("x-api-key", key(key_env)?)
                .body(body.to_string())
        }
    })
}

/// One search result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchResult {
    /// The page title.
    pub title: String,
    /// The page URL.
    pub url: String,
    /// A short excerpt (tags stripped, whitespace collapsed).
    pub snippet: String,
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The results in a backend's answer; entries without a URL (or repeating one) are skipped.
fn parse_results(backend: &Backend, value: &Value) -> Vec<SearchResult> {
    let list = match backend {
        Backend::Searxng { .. } | Backend::Exa { .. } => value.get("results"),
        Backend::Brave { .. } => value.pointer("/web/results"),
    };
    let mut seen = std::collections::HashSet::new();
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let url = str_field(r, "url").trim().to_string();
            if url.is_empty() || !seen.insert(url.clone()) {
                return None;
            }
            let title = clean(str_field(r, "title"));
            Some(SearchResult { title, url, snippet: cut(&clean(&snippet(backend, r)), SNIPPET_CHARS) })
        })
        .collect()
}

/// The excerpt of one result: SearXNG's `content`, Brave's `description`, Exa's highlights
/// (else its summary or text).
fn snippet(backend: &Backend, result: &Value) -> String {
    match backend {
        Backend::Searxng { .. } => str_field(result, "content").to_string(),
        Backend::Brave { .. } => str_field(result, "description").to_string(),
        Backend::Exa { .. } => {
            let highlights: Vec<&str> = result
                .get("highlights")
                .and_then(Value::as_array)
                .map(|h| h.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if highlights.is_empty() {
                [str_field(result, "summary"), str_field(result, "text")]
                    .into_iter()
                    .find(|s| !s.is_empty())
                    .unwrap_or("")
                    .to_string()
            } else {
                highlights.join(" … ")
            }
        }
    }
}

/// Strips HTML tags (backends mark matches with `<strong>`), decodes common entities and
/// collapses whitespace.
fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    collapse_whitespace(&decode_entities(&out))
}

fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest[..rest.len().min(10)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" | "#39" => Some('\''),
            "nbsp" => Some(' '),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn cut(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let cut: String = text.chars().take(max_chars).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space > max_chars / 2 => &cut[..space],
        _ => &cut,
    };
    format!("{}…", cut.trim_end())
}

/// The model-visible list of results.
fn format_results(query: &str, results: &[SearchResult]) -> String {
    if results.is_empty() {
        return format!("No results for \"{query}\". Try fewer or different words, or a broader query.");
    }
    let mut out = format!("{} result{} for \"{query}\":\n", results.len(), if results.len() == 1 { "" } else { "s" });
    for (i, r) in results.iter().enumerate() {
        let title = if r.title.is_empty() { "(no title)" } else { &r.title };
        out.push_str(&format!("\n{}. {title}\n   {}\n", i + 1, r.url));
        if !r.snippet.is_empty() {
            out.push_str(&format!("   {}\n", r.snippet));
        }
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(backend: &str, url: Option<&str>) -> WebsearchConfig {
        WebsearchConfig { backend: backend.into(), url: url.map(Into::into), api_key_env: None }
    }

    #[test]
    fn missing_section_unknown_backend_and_missing_key_say_why() {
        insta::assert_snapshot!(backend_with_env(None, |_| true).unwrap_err(), @r#"
        no [websearch] section in the config, so the websearch tool is not offered. To enable it, add e.g.
          [websearch]
          backend = "searxng"
          url = "http://localhost:8080"
        or backend = "brave" / "exa" with the API key in BRAVE_API_KEY / EXA_API_KEY.
        "#);
        insta::assert_snapshot!(backend_with_env(Some(&config("bing", None)), |_| true).unwrap_err(), @r#"[websearch] backend "bing" is unknown; use one of: searxng, brave, exa"#);
        insta::assert_snapshot!(backend_with_env(Some(&config("brave", None)), |_| false).unwrap_err(), @"the brave backend needs an API key, but the environment variable BRAVE_API_KEY is not set");
        insta::assert_snapshot!(backend_with_env(Some(&config("searxng", None)), |_| true).unwrap_err(), @r#"[websearch] backend = "searxng" needs `url`, the address of your SearXNG instance (e.g. "http://localhost:8080")"#);
        let bad = backend_with_env(Some(&config("searxng", Some("localhost:8080"))), |_| true).unwrap_err();
        assert!(bad.contains("must start with http:// or https://"), "{bad}");
    }

    #[test]
    fn searxng_url_gets_the_search_path_once() {
        let b = backend_with_env(Some(&config("searxng", Some("http://127.0.0.1:8888/"))), |_| false).unwrap();
        assert_eq!(b.url().as_str(), "http://127.0.0.1:8888/search");
        let b = backend_with_env(Some(&config("searxng", Some("http://h/searx/search"))), |_| false).unwrap();
        assert_eq!(b.url().as_str(), "http://h/searx/search");
    }

    #[test]
    fn api_key_env_can_be_renamed() {
        let mut c = config("exa", None);
        c.api_key_env = Some("MY_EXA".into());
        let b = backend_with_env(Some(&c), |name| name == "MY_EXA").unwrap();
        assert_eq!(b, Backend::Exa { url: Url::parse("https://api.exa.ai/search").unwrap(), key_env: "MY_EXA".into() });
    }

    #[test]
    fn snippets_lose_tags_and_entities_and_are_cut_at_a_word() {
        assert_eq!(clean("<strong>Rust</strong> &amp; async &#x27;traits&#39; &lt;T&gt;"), "Rust & async 'traits' <T>");
        assert_eq!(clean("a & b &unknown; c"), "a & b &unknown; c");
        let long = "word ".repeat(100);
        let short = cut(long.trim(), 30);
        assert_eq!(short, "word word word word word word…");
    }
}
