//! The HTTP side shared by every wire format: one POST with the provider's headers, retries
//! with backoff on 429 and 5xx (honouring `Retry-After`) and on streams that fail before their
//! first event, and the SSE stream turned into [`StreamEvent`]s by the format's decoder.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use serde_json::Value;
use toolshed_core::config::ProviderKind;

use crate::error::{LlmError, classify_http, is_context_overflow, is_out_of_quota, is_transient, parse_retry_after};
use crate::provider::ProviderSettings;
use crate::types::{Request, StreamEvent};
use crate::{anthropic, openai_chat, openai_responses};

/// A stream of decoded events; ends after [`StreamEvent::Finished`] or the first error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, LlmError>> + Send>>;

/// When and how often to send a request again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// The first backoff; it doubles on each retry.
    pub base_delay: Duration,
    /// The longest backoff between attempts.
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured; a longer one fails at once.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based), unless the server said otherwise.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }
}

/// Turns one SSE event of a wire format into zero or more [`StreamEvent`]s.
pub(crate) trait Decoder: Send {
    /// One event: its `event:` name (empty when absent) and `data:`.
    fn event(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError>;
    /// The byte stream ended; the remaining events, or why the response is incomplete.
    fn end(&mut self) -> Result<Vec<StreamEvent>, DecodeError>;
}

/// Why a decoder cannot go on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// The stream itself is wrong: it ended early, or sent something that does not parse.
    Stream(String),
    /// The provider reported an error inside the stream.
    Provider {
        /// The provider's message.
        message: String,
        /// Whether the same request may succeed if sent again (overloaded, server error).
        transient: bool,
        /// Whether its type, code or message says the account is out of quota or credit.
        quota: bool,
    },
}

impl DecodeError {
    /// A provider's error, transient when its type or code says so.
    pub(crate) fn provider(message: impl Into<String>, kind: &str) -> DecodeError {
        let message = message.into();
        let transient = is_transient(kind, &message);
        let quota = is_out_of_quota(&kind.to_ascii_lowercase()) || is_out_of_quota(&message.to_ascii_lowercase());
        DecodeError::Provider { message, transient: transient && !quota, quota }
    }
}

/// A streaming client for one provider.
pub struct Client {
    settings: ProviderSettings,
    http: reqwest::Client,
    retry: RetryPolicy,
    idle_timeout: Duration,
    /// Cleared once the provider refused `include: ["reasoning.encrypted_content"]` (models
    /// without reasoning do), so later requests leave it out.
    encrypted_reasoning: AtomicBool,
}

fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Another part of the process may have installed one already; either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl Client {
    /// A client for `settings` with default retries and a 5-minute idle timeout on streams.
    pub fn new(settings: ProviderSettings) -> Result<Client, LlmError> {
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot set up the HTTP client: {e}")))?;
        Ok(Client {
            settings,
            http,
            retry: RetryPolicy::default(),
            idle_timeout: Duration::from_secs(300),
            encrypted_reasoning: AtomicBool::new(true),
        })
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets how long a stream may stay silent before it counts as broken.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// The provider this client talks to.
    pub fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    /// The request body this client would send for `request`.
    pub fn body(&self, request: &Request) -> Value {
        match self.settings.kind {
            ProviderKind::OpenaiChat => openai_chat::body(request),
            ProviderKind::OpenaiResponses => {
                let mut body = openai_responses::body(request);
                if !self.encrypted_reasoning.load(Ordering::Relaxed)
                    && let Some(o) = body.as_object_mut()
                {
                    o.remove("include");
                }
                body
            }
            ProviderKind::Anthropic => anthropic::body(request),
        }
    }

    /// Whether `error` is the provider refusing encrypted reasoning for a model without
    /// reasoning ("Encrypted content is not supported with this model"); if so, stops asking.
    fn refuses_encrypted_reasoning(&self, error: &LlmError, body: &Value) -> bool {
        let refused = matches!(error, LlmError::Http { status: 400, message, .. }
            if message.to_ascii_lowercase().contains("encrypted content"));
        if refused && body.get("include").is_some() {
            self.encrypted_reasoning.store(false, Ordering::Relaxed);
            return true;
        }
        false
    }

    fn url(&self) -> String {
        let path = match self.settings.kind {
            ProviderKind::OpenaiChat => "chat/completions",
            ProviderKind::OpenaiResponses => "responses",
            ProviderKind::Anthropic => "messages",
        };
        format!("{}/{path}", self.settings.base_url)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        match self.settings.kind {
            ProviderKind::OpenaiChat => Box::new(openai_chat::ChatDecoder::default()),
            ProviderKind::OpenaiResponses => Box::new(openai_responses::ResponsesDecoder::default()),
            ProviderKind::Anthropic => Box::new(anthropic::AnthropicDecoder::default()),
        }
    }

    fn post(&self, url: &str, body: &Value) -> reqwest::RequestBuilder {
        let builder =
            self.http.post(url).header("content-type", "application/json").header("accept", "text/event-stream");
        let builder = match (self.settings.kind, &self.settings.api_key) {
            (ProviderKind::Anthropic, key) => {
                let b = builder.header("anthropic-version", "2023-06-01");
                match key {
                    Some(k) => b.header("x-api-key", k),
                    None => b,
                }
            }
            (_, Some(k)) => builder.bearer_auth(k),
            (_, None) => builder,
        };
        builder.body(body.to_string())
    }

    /// Sends `request` and streams the response. Rate limits, server errors, failed
    /// connections, and streams that fail before their first event (broken off, or a transient
    /// provider error such as `overloaded_error`) are retried with backoff; once an event has
    /// been yielded, an error ends the stream.
    pub async fn stream(&self, request: &Request) -> Result<EventStream, LlmError> {
        self.stream_observed(request, &|_| {}).await
    }

    /// [`Client::stream`], telling `on_retry` before each wait between attempts (a status line
    /// can say "rate limited, retrying in 5 s" instead of looking stuck).
    pub async fn stream_observed(
        &self,
        request: &Request,
        on_retry: &(dyn Fn(&Retrying) + Send + Sync),
    ) -> Result<EventStream, LlmError> {
        let mut body = self.body(request);
        let url = self.url();
        let name = self.settings.name.clone();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            // A server that accepts the connection but never answers gets the same bound as a
            // stream that falls silent, then an error (not a retry: it would wait as long again).
            let Ok(sent) = tokio::time::timeout(self.idle_timeout, self.post(&url, &body).send()).await else {
                return Err(LlmError::Transport {
                    provider: name.clone(),
                    url: url.clone(),
                    message: format!("no response within {} s of sending the request", self.idle_timeout.as_secs()),
                });
            };
            let (error, retry_after, retryable) = match sent {
                Ok(resp) if resp.status().is_success() && answered_without_stream(&resp).is_some() => {
                    let kind = answered_without_stream(&resp).unwrap_or_default();
                    let text = tokio::time::timeout(self.idle_timeout, resp.text())
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .unwrap_or_default();
                    let start: String =
                        text.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(160).collect();
                    let message = format!(
                        "the server at {url} answered with {kind}, not an event stream (it begins: {start:?}): check that base_url is the API's (for OpenAI-compatible servers it usually ends in /v1) and that the server streams responses"
                    );
                    (LlmError::Stream { provider: name.clone(), message }, None, false)
                }
                Ok(resp) if resp.status().is_success() => {
                    let mut events = decode_stream(name.clone(), resp, self.decoder(), self.idle_timeout);
                    match events.next().await {
                        Some(Ok(first)) => return Ok(resume(first, events)),
                        Some(Err(failure)) => (failure.error, None, failure.retryable),
                        None => {
                            let message = "the stream ended without any event".to_string();
                            (LlmError::Stream { provider: name.clone(), message }, None, true)
                        }
                    }
                }
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let retry_after =
                        resp.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(parse_retry_after);
                    let text = tokio::time::timeout(self.idle_timeout, resp.text())
                        .await
                        .ok()
                        .and_then(Result::ok)
                        .unwrap_or_default();
                    let error = classify_http(&name, &request.model, &url, status, &text, &self.settings.key_hint());
                    if self.refuses_encrypted_reasoning(&error, &body) {
                        // The same request without the option, not counted as a retry.
                        body = self.body(request);
                        attempt -= 1;
                        continue;
                    }
                    let retryable = error.is_retryable();
                    (error, retry_after, retryable)
                }
                Err(e) => {
                    let mut message = error_chain(&e);
                    // Nothing listens there: say what to check, not only the error chain.
                    if e.is_connect() && message.contains("Connection refused") {
                        message = format!(
                            "nothing accepts connections there ({message}); is the server running, and is the port in base_url right?"
                        );
                    }
                    let error = LlmError::Transport { provider: name.clone(), url: url.clone(), message };
                    (error, None, true)
                }
            };
            if !retryable || attempt > self.retry.max_retries {
                return Err(match error {
                    LlmError::RateLimited { provider, message, .. } => {
                        LlmError::RateLimited { provider, attempts: attempt, message }
                    }
                    other => other,
                });
            }
            let wait = match retry_after {
                Some(d) if d > self.retry.max_retry_after => {
                    let asked = format!(
                        "the server asked to wait {} s before retrying, longer than the {} s toolshed waits; try again later",
                        d.as_secs(),
                        self.retry.max_retry_after.as_secs()
                    );
                    return Err(match error {
                        LlmError::RateLimited { provider, message, .. } => LlmError::RateLimited {
                            provider,
                            attempts: attempt,
                            message: format!("{message} ({asked})"),
                        },
                        LlmError::Http { provider, status, message } => {
                            LlmError::Http { provider, status, message: format!("{message} ({asked})") }
                        }
                        other => other,
                    });
                }
                Some(d) => d,
                None => self.retry.backoff(attempt),
            };
            on_retry(&Retrying { attempt: attempt + 1, wait, reason: retry_reason(&error) });
            tokio::time::sleep(wait).await;
        }
    }
}

/// A failed attempt that is about to be retried.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retrying {
    /// The attempt that comes next (2 for the first retry).
    pub attempt: u32,
    /// How long until it is sent.
    pub wait: Duration,
    /// Why, in a few words for people: "rate limited", "the server answered 503".
    pub reason: String,
}

fn retry_reason(error: &LlmError) -> String {
    match error {
        LlmError::RateLimited { .. } => "rate limited".to_string(),
        LlmError::Http { status, .. } => format!("the server answered {status}"),
        LlmError::Transport { .. } => "the connection failed".to_string(),
        LlmError::Stream { .. } => "the response broke off".to_string(),
        LlmError::Provider { .. } => "the provider reported an error".to_string(),
        _ => "the request failed".to_string(),
    }
}

/// An error with its sources, e.g. "error sending request: connection refused".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

/// A stream that failed, and whether sending the request again may succeed (only asked
/// before anything was yielded).
struct Failure {
    error: LlmError,
    retryable: bool,
}

type Decoded = Pin<Box<dyn Stream<Item = Result<StreamEvent, Failure>> + Send>>;

/// The stream after its first event, which the caller gets first.
fn resume(first: StreamEvent, rest: Decoded) -> EventStream {
    let rest = rest.map(|r| r.map_err(|f| f.error));
    Box::pin(futures_util::stream::once(async move { Ok(first) }).chain(rest))
}

struct State {
    events: Pin<Box<dyn Stream<Item = Result<eventsource_stream::Event, String>> + Send>>,
    decoder: Box<dyn Decoder>,
    pending: VecDeque<StreamEvent>,
    provider: String,
    idle: Duration,
    done: bool,
}

fn decode_stream(provider: String, response: reqwest::Response, decoder: Box<dyn Decoder>, idle: Duration) -> Decoded {
    let events = response.bytes_stream().eventsource().map(|r| r.map_err(|e| e.to_string())).boxed();
    let state = State { events, decoder, pending: VecDeque::new(), provider, idle, done: false };
    Box::pin(futures_util::stream::unfold(state, |mut s| async move {
        loop {
            if let Some(ev) = s.pending.pop_front() {
                if matches!(ev, StreamEvent::Finished { .. }) {
                    s.done = true;
                    s.pending.clear();
                }
                return Some((Ok(ev), s));
            }
            if s.done {
                return None;
            }
            let Ok(next) = tokio::time::timeout(s.idle, s.events.next()).await else {
                // Not retried: a model that stays silent this long would likely do it again,
                // and each attempt would cost the whole timeout.
                s.done = true;
                let message = format!("no data for {} s", s.idle.as_secs());
                let error = LlmError::Stream { provider: s.provider.clone(), message };
                return Some((Err(Failure { error, retryable: false }), s));
            };
            let decoded = match next {
                Some(Ok(event)) => s.decoder.event(&event.event, &event.data).map_err(|e| (e, false)),
                // A connection that breaks after the response was complete (after a chat
                // `finish_reason`, before `[DONE]`) lost nothing: the decoder finishes it.
                Some(Err(e)) => match s.decoder.end() {
                    Ok(evs) if evs.iter().any(|e| matches!(e, StreamEvent::Finished { .. })) => Ok(evs),
                    _ => Err((DecodeError::Stream(format!("the connection broke: {e}")), true)),
                },
                None => match s.decoder.end() {
                    Ok(evs) if evs.iter().any(|e| matches!(e, StreamEvent::Finished { .. })) => Ok(evs),
                    Ok(_) => Err((
                        DecodeError::Stream("the stream ended before the response was complete".to_string()),
                        true,
                    )),
                    Err(e) => Err((e, true)),
                },
            };
            match decoded {
                Ok(evs) => s.pending.extend(evs),
                Err((error, cut_short)) => {
                    s.done = true;
                    let provider = s.provider.clone();
                    let (error, retryable) = match error {
                        DecodeError::Provider { message, .. } if is_context_overflow(&message) => {
                            (LlmError::ContextOverflow { message }, false)
                        }
                        DecodeError::Provider { message, quota: true, .. } => {
                            (LlmError::Quota { provider, status: None, message }, false)
                        }
                        DecodeError::Provider { message, transient, .. } => {
                            (LlmError::Provider { provider, message }, transient)
                        }
                        DecodeError::Stream(message) => (LlmError::Stream { provider, message }, cut_short),
                    };
                    return Some((Err(Failure { error, retryable }), s));
                }
            }
        }
    }))
}

/// Parses one event's JSON data.
pub(crate) fn parse(data: &str) -> Result<Value, DecodeError> {
    serde_json::from_str(data)
        .map_err(|e| DecodeError::Stream(format!("an event is not valid JSON ({e}): {}", preview(data))))
}

fn preview(data: &str) -> String {
    let cut: String = data.chars().take(200).collect();
    if cut.len() < data.len() { format!("{cut}…") } else { cut }
}

/// The content type of a successful answer that is certainly no event stream (a JSON body, a
/// web page): a wrong `base_url`, or a server that does not stream. Retrying it would get the
/// same. Other types (none, `text/plain` as some servers send a stream with) are read as a
/// stream.
fn answered_without_stream(resp: &reqwest::Response) -> Option<String> {
    let kind = resp.headers().get(reqwest::header::CONTENT_TYPE)?.to_str().ok()?.to_ascii_lowercase();
    let essence = kind.split(';').next().unwrap_or_default().trim().to_string();
    matches!(essence.as_str(), "application/json" | "text/html").then_some(essence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(350),
            ..Default::default()
        };
        assert_eq!(p.backoff(1), Duration::from_millis(100));
        assert_eq!(p.backoff(2), Duration::from_millis(200));
        assert_eq!(p.backoff(3), Duration::from_millis(350));
        assert_eq!(p.backoff(40), Duration::from_millis(350));
    }
}
