//! What can go wrong talking to a provider, classified so the user is told what to fix.

use std::time::Duration;

/// A provider request that failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// The provider or model is not configured well enough to send anything.
    #[error("{0}")]
    Config(String),
    /// The API key was refused (HTTP 401/403).
    #[error("{provider} rejected the API key (HTTP {status}): {}. {hint}", sentence(.message))]
    Auth {
        /// The provider name.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// What to change.
        hint: String,
    },
    /// The provider does not know the model.
    #[error("{provider} does not know the model `{model}`: {message}")]
    UnknownModel {
        /// The provider name.
        provider: String,
        /// The model id sent.
        model: String,
        /// The provider's message.
        message: String,
    },
    /// The conversation no longer fits the model's context window.
    #[error("the conversation is longer than the model's context window: {message}")]
    ContextOverflow {
        /// The provider's message.
        message: String,
    },
    /// The account is out of quota or credit (OpenAI's 429 `insufficient_quota`, Anthropic's
    /// "credit balance is too low"), said by the HTTP status or inside the response stream:
    /// permanent until someone pays, so never retried.
    #[error(
        "{provider} refused the request because the account has no quota or credit left ({}): {}. This is a billing problem, not rate limiting, and retrying does not help: check the plan and billing details of the account the API key belongs to",
        .status.map_or_else(|| "said in the response stream".to_string(), |s| format!("HTTP {s}")),
        sentence(.message)
    )]
    Quota {
        /// The provider name.
        provider: String,
        /// The HTTP status, or `None` when the stream said so after an HTTP 200.
        status: Option<u16>,
        /// The provider's message.
        message: String,
    },
    /// Nothing at the address the request went to (HTTP 404 that does not name the model):
    /// the base URL is likely wrong.
    #[error(
        "{provider} answered HTTP 404 (not found) for {url}: {}. Nothing answers at that address: check the provider's base URL (`base_url` in [provider.NAME], OPENAI_BASE_URL or ANTHROPIC_BASE_URL)",
        sentence(.message)
    )]
    NotFound {
        /// The provider name.
        provider: String,
        /// The URL requested.
        url: String,
        /// The provider's message.
        message: String,
    },
    /// Still rate-limited after every retry.
    #[error("{provider} is rate-limiting requests (HTTP 429) and still was after {attempts} {}: {message}", if *attempts == 1 { "attempt" } else { "attempts" })]
    RateLimited {
        /// The provider name.
        provider: String,
        /// How many requests were sent.
        attempts: u32,
        /// The provider's message.
        message: String,
    },
    /// Any other HTTP error status (after retries, for 5xx).
    #[error("{provider} answered HTTP {status}: {message}")]
    Http {
        /// The provider name.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The request could not be sent or the connection broke.
    #[error("cannot reach {provider} at {url}: {message}")]
    Transport {
        /// The provider name.
        provider: String,
        /// The URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The stream broke off, timed out, or sent something that does not parse.
    #[error("the response stream from {provider} failed: {message}")]
    Stream {
        /// The provider name.
        provider: String,
        /// What failed.
        message: String,
    },
    /// The provider reported an error inside the stream.
    #[error("{provider} reported an error mid-response: {message}")]
    Provider {
        /// The provider name.
        provider: String,
        /// The provider's message.
        message: String,
    },
}

/// A provider's message to be followed by `. `: without its own final full stop.
fn sentence(message: &str) -> &str {
    message.strip_suffix('.').unwrap_or(message)
}

impl LlmError {
    /// Whether sending the same request again may succeed (rate limits, server errors, broken
    /// connections before any output).
    pub fn is_retryable(&self) -> bool {
        matches!(self, LlmError::RateLimited { .. } | LlmError::Transport { .. })
            || matches!(self, LlmError::Http { status, .. } if *status >= 500)
    }
}

/// How a provider answered an HTTP error, split into the cases the user must act on.
/// `url` is the address the request went to.
pub(crate) fn classify_http(
    provider: &str,
    model: &str,
    url: &str,
    status: u16,
    body: &str,
    key_hint: &str,
) -> LlmError {
    let message = error_message(body);
    let lower = body.to_ascii_lowercase();
    let provider = provider.to_string();
    if is_context_overflow(body) {
        return LlmError::ContextOverflow { message };
    }
    if is_out_of_quota(&lower) {
        return LlmError::Quota { provider, status: Some(status), message };
    }
    match status {
        401 | 403 => LlmError::Auth { provider, status, message, hint: key_hint.to_string() },
        // Providers name the model when they do not know it (OpenAI `model_not_found`, Anthropic
        // `not_found_error` "model: ..."); any other 404 is an address with nothing behind it.
        404 if lower.contains("model") => LlmError::UnknownModel { provider, model: model.to_string(), message },
        404 => LlmError::NotFound { provider, url: url.to_string(), message },
        400 if lower.contains("model_not_found")
            || (lower.contains("model") && (lower.contains("not found") || lower.contains("does not exist"))) =>
        {
            LlmError::UnknownModel { provider, model: model.to_string(), message }
        }
        429 => LlmError::RateLimited { provider, attempts: 1, message },
        _ => LlmError::Http { provider, status, message },
    }
}

/// Whether a provider's error body (lowercased) says the account is out of quota or credit:
/// OpenAI's `insufficient_quota` type and code (sent with HTTP 429), Anthropic's "Your credit
/// balance is too low" (HTTP 400) and `billing_error` type, and the `billing` codes of
/// compatible servers.
pub(crate) fn is_out_of_quota(lower: &str) -> bool {
    [
        "insufficient_quota",
        "credit balance is too low",
        "billing_hard_limit_reached",
        "billing_not_active",
        "billing_error",
    ]
    .iter()
    .any(|m| lower.contains(m))
}

/// Whether a provider's error text says the conversation outgrew the context window.
pub(crate) fn is_context_overflow(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ["context_length_exceeded", "maximum context length", "prompt is too long", "context window", "too many tokens"]
        .iter()
        .any(|m| lower.contains(m))
}

/// Whether an error the provider reported inside a stream may clear if the request is sent
/// again: overloaded, internal server errors and rate limits, judged by the error's type or
/// code (Anthropic `overloaded_error` / `api_error`, OpenAI `server_error`), else its message.
pub(crate) fn is_transient(kind: &str, message: &str) -> bool {
    let kind = kind.to_ascii_lowercase();
    let message = message.to_ascii_lowercase();
    ["overloaded", "server_error", "api_error", "internal", "rate_limit", "unavailable", "timeout"]
        .iter()
        .any(|k| kind.contains(k))
        || ["overloaded", "internal server error", "server error", "temporarily unavailable", "try again"]
            .iter()
            .any(|m| message.contains(m))
}

/// The human part of an error body: `error.message` (OpenAI, Anthropic) or `message`, else the
/// body itself, cut to a readable length.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        return "(no error message)".to_string();
    }
    let mut cut: String = text.chars().take(500).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// A `Retry-After` header value: seconds, or an HTTP date.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(std::time::SystemTime::now()).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_the_errors_a_user_must_fix() {
        let auth = classify_http("openai", "gpt-x", "u", 401, r#"{"error":{"message":"Incorrect API key"}}"#, "Set X.");
        assert_eq!(auth.to_string(), "openai rejected the API key (HTTP 401): Incorrect API key. Set X.");
        let model = classify_http("openai", "gpt-x", "u", 404, r#"{"error":{"message":"no such model"}}"#, "");
        assert!(matches!(model, LlmError::UnknownModel { .. }), "{model:?}");
        let anthropic_model = classify_http(
            "anthropic",
            "claude-x",
            "u",
            404,
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}"#,
            "",
        );
        assert_eq!(anthropic_model.to_string(), "anthropic does not know the model `claude-x`: model: claude-x");
        let overflow = classify_http(
            "openai",
            "m",
            "u",
            400,
            r#"{"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}"#,
            "",
        );
        assert!(matches!(overflow, LlmError::ContextOverflow { .. }), "{overflow:?}");
        let anthropic_overflow = classify_http(
            "anthropic",
            "m",
            "u",
            400,
            r#"{"error":{"message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            "",
        );
        assert!(matches!(anthropic_overflow, LlmError::ContextOverflow { .. }));
        assert!(classify_http("p", "m", "u", 503, "busy", "").is_retryable());
        assert!(!classify_http("p", "m", "u", 400, "bad", "").is_retryable());
        let credit = classify_http(
            "anthropic",
            "m",
            "u",
            400,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}"#,
            "",
        );
        assert!(matches!(credit, LlmError::Quota { status: Some(400), .. }), "{credit:?}");
        assert!(!credit.is_retryable());
    }

    #[test]
    fn transient_provider_errors_are_told_from_the_rest() {
        assert!(is_transient("overloaded_error", "Overloaded"));
        assert!(is_transient("api_error", "Internal server error"));
        assert!(is_transient("server_error", "boom"));
        assert!(is_transient("", "The server had an error. Please try again"));
        assert!(!is_transient("invalid_request_error", "messages: text content blocks must be non-empty"));
        assert!(!is_transient("authentication_error", "invalid x-api-key"));
        assert!(!is_transient("insufficient_quota", "You exceeded your current quota"));
    }

    #[test]
    fn retry_after_accepts_seconds_and_dates() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon"), None);
    }
}
