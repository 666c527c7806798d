//! Provider wire formats and thin streaming clients: OpenAI Chat Completions (and every
//! OpenAI-compatible server), OpenAI Responses and Anthropic Messages, over `reqwest` with
//! rustls and server-sent events. No SDK: each format is a request body builder and an event
//! decoder.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolshed_llm::LlmError> {
//! use toolshed_llm::{Client, Message, Request, provider};
//! let config = toolshed_core::config::Config::default();
//! let model = provider::ModelRef::parse("openai/gpt-5.1")?;
//! let client = Client::new(provider::resolve(&config, &model, &provider::process_env)?)?;
//! let request = Request { model: model.model, messages: vec![Message::user("hi")], ..Default::default() };
//! let response = toolshed_llm::collect(client.stream(&request).await?, |_| {}).await?;
//! println!("{}", response.message.text());
//! # Ok(()) }
//! ```

pub mod anthropic;
pub mod client;
pub mod error;
pub mod openai_chat;
pub mod openai_responses;
pub mod provider;
#[cfg(feature = "testing")]
pub mod testing;
pub mod types;

use futures_util::StreamExt;

pub use client::{Client, EventStream, RetryPolicy, Retrying};
pub use error::LlmError;
pub use types::{
    CallKind, Image, Message, Part, Reasoning, Request, Response, Role, StopReason, StreamEvent, ToolCall, ToolResult,
    Usage,
};

/// Drains a stream into one [`Response`], handing every event to `on_event` as it arrives
/// (to print text while it streams).
pub async fn collect(mut stream: EventStream, mut on_event: impl FnMut(&StreamEvent)) -> Result<Response, LlmError> {
    let mut parts: Vec<Part> = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event?;
        on_event(&event);
        match event {
            StreamEvent::TextDelta(text) => match parts.last_mut() {
                Some(Part::Text { text: last }) => last.push_str(&text),
                _ => parts.push(Part::Text { text }),
            },
            StreamEvent::ToolCall(call) => parts.push(Part::ToolCall(call)),
            StreamEvent::Reasoning(reasoning) => parts.push(Part::Reasoning(reasoning)),
            StreamEvent::Finished { stop, usage } => {
                return Ok(Response { message: Message { role: Role::Assistant, parts }, stop, usage });
            }
            StreamEvent::ReasoningDelta(_) | StreamEvent::ToolCallStarted { .. } => {}
        }
    }
    Err(LlmError::Stream { provider: String::new(), message: "the stream ended without a finish event".into() })
}
