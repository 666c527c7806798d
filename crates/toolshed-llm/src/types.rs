//! The conversation as the agent keeps it, independent of any wire format: messages made of
//! parts, the request sent each step, and the events a streamed response yields.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolshed_core::ToolSpec;

/// Who said a message. The system prompt is not a message; it travels in [`Request::system`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, and tool results sent back to the model.
    User,
    /// The model.
    Assistant,
}

/// How a tool call's input travels: JSON arguments, or a freeform tool's raw text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallKind {
    /// `arguments` is a JSON object as text.
    #[default]
    Function,
    /// `arguments` is the raw input of a freeform (custom) tool.
    Custom,
}

/// A tool call the model made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id (`call_id`, `tool_use.id`).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments exactly as sent: JSON text (possibly invalid) or a freeform tool's input.
    pub arguments: String,
    /// Whether `arguments` is JSON or freeform text.
    #[serde(default)]
    pub kind: CallKind,
}

/// The image types every supported format accepts (PNG, JPEG, GIF, WebP).
pub const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The largest image sent to a model, measured as base64 (Anthropic refuses an image over
/// 5 MB; the others accept more). About 3.75 MiB of image file.
pub const MAX_IMAGE_BASE64_BYTES: usize = 5 * 1024 * 1024;

/// An image going to the model: one a tool returned, with its result, or one the person
/// attached to a prompt ([`Part::Image`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The media type, one of [`IMAGE_MEDIA_TYPES`].
    pub media_type: String,
    /// The image file, base64 (standard alphabet, padded).
    pub data_base64: String,
}

impl Image {
    /// The image as a `data:` URL (how the OpenAI formats take inline images).
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data_base64)
    }
}

/// A tool result going back to the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub call_id: String,
    /// The tool name (some formats want it).
    pub name: String,
    /// The text the model reads.
    pub output: String,
    /// Whether the call failed (only Anthropic has a flag for it; the text says so everywhere).
    pub is_error: bool,
    /// The kind of the call it answers (Responses pairs `custom_tool_call_output` with custom calls).
    #[serde(default)]
    pub kind: CallKind,
    /// Images the tool returned (a `read` of a PNG, a `webfetch` of an image), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// A reasoning item a provider returned, kept as sent and replayed only to the wire format that
/// produced it (OpenAI Responses, whose `encrypted_content` carries a reasoning model's
/// thinking from one stateless request to the next).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The wire format that produced it, e.g. [`crate::openai_responses::FORMAT`].
    pub format: String,
    /// The item exactly as the provider sent it (for Responses: `id`, `summary`,
    /// `encrypted_content`).
    pub item: Value,
    /// The model (`provider/model`) that produced it. It is replayed only to that model: another
    /// model, or the same one on another account, cannot read its encrypted content. Empty
    /// until the agent loop stamps it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
}

impl Reasoning {
    /// The readable summary the provider gave, if any (the `summary[].text` of a Responses item).
    pub fn summary(&self) -> String {
        let parts = self.item.get("summary").and_then(Value::as_array);
        let texts = parts.into_iter().flatten().filter_map(|p| p.get("text").and_then(Value::as_str));
        texts.collect::<Vec<_>>().join("\n\n")
    }
}

/// One part of a message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call (assistant messages only).
    ToolCall(ToolCall),
    /// A tool result (user messages only).
    ToolResult(ToolResult),
    /// A provider's reasoning item (assistant messages only), sent back only to its own format.
    Reasoning(Reasoning),
    /// An image the person attached (user messages only), where it stands among the text.
    Image(Image),
}

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What it holds, in order.
    pub parts: Vec<Part>,
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Message { role: Role::User, parts: vec![Part::Text { text: text.into() }] }
    }

    /// An assistant message of plain text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message { role: Role::Assistant, parts: vec![Part::Text { text: text.into() }] }
    }

    /// The tool calls in this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall(c) => Some(c),
            _ => None,
        })
    }

    /// Whether the message holds an image the person attached ([`Part::Image`]).
    pub fn has_images(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Image(_)))
    }

    /// The message's text parts joined together.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// What one model step is asked.
#[derive(Clone, Debug, Default)]
pub struct Request {
    /// The model id as the provider knows it (without the `provider/` prefix).
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// The tools the model may call this step.
    pub tools: Vec<ToolSpec>,
    /// Most tokens to generate (Anthropic requires a value; others send it when set).
    pub max_tokens: Option<u32>,
}

/// Token counts of one response, normalised across providers: `input_tokens` is the whole
/// prompt (Anthropic reports cache reads and writes apart; they are added in), so it is the
/// size of the request as the model saw it, and the cache counts say how much of it was read
/// from or written to the provider's prompt cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read: the whole prompt, cached or not.
    pub input_tokens: u64,
    /// Tokens written (reasoning included).
    pub output_tokens: u64,
    /// Of `input_tokens`, those read from the prompt cache.
    #[serde(default)]
    pub cached_input_tokens: u64,
    /// Of `input_tokens`, those written to the prompt cache (Anthropic).
    #[serde(default)]
    pub cache_write_tokens: u64,
    /// Of `output_tokens`, those spent reasoning (where the provider says).
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Counts of a response that reports only the prompt and the answer.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage { input_tokens, output_tokens, ..Usage::default() }
    }
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It ran out of output tokens.
    MaxTokens,
    /// It refused, or a content filter stopped it.
    Refusal,
    /// Anything else the provider reported.
    Other,
}

/// One event of a streamed response, already decoded from the wire format.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEvent {
    /// More answer text.
    TextDelta(String),
    /// More reasoning text (shown, never sent back).
    ReasoningDelta(String),
    /// A tool call began (its arguments are still streaming).
    ToolCallStarted {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
    /// A tool call is complete.
    ToolCall(ToolCall),
    /// A reasoning item is complete (to keep and replay, not to show).
    Reasoning(Reasoning),
    /// The response is complete.
    Finished {
        /// Why the model stopped.
        stop: StopReason,
        /// Token counts.
        usage: Usage,
    },
}

/// A whole response, as [`crate::collect`] assembles it from the stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    /// The assistant message (text first, then tool calls, in the order they arrived).
    pub message: Message,
    /// Why the model stopped.
    pub stop: StopReason,
    /// Token counts.
    pub usage: Usage,
}

/// Two `read` calls and their results, the first with a PNG: the request the format tests of
/// image rendering share.
#[cfg(test)]
pub(crate) fn image_test_request() -> Request {
    let png = Image { media_type: "image/png".into(), data_base64: "iVBORw0KGgo=".into() };
    let result = |id: &str, images: Vec<Image>| {
        Part::ToolResult(ToolResult {
            call_id: id.into(),
            name: "read".into(),
            output: format!("read {id}"),
            is_error: false,
            kind: CallKind::Function,
            images,
        })
    };
    let call = |id: &str| {
        Part::ToolCall(ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: "{}".into(),
            kind: CallKind::Function,
        })
    };
    Request {
        model: "m".into(),
        messages: vec![
            Message { role: Role::Assistant, parts: vec![call("c1"), call("c2")] },
            Message { role: Role::User, parts: vec![result("c1", vec![png]), result("c2", Vec::new())] },
        ],
        ..Default::default()
    }
}

/// A prompt with an image between two texts: the request the format tests of prompt images
/// share.
#[cfg(test)]
pub(crate) fn prompt_image_test_request() -> Request {
    let png = Image { media_type: "image/png".into(), data_base64: "iVBORw0KGgo=".into() };
    Request {
        model: "m".into(),
        messages: vec![Message {
            role: Role::User,
            parts: vec![
                Part::Text { text: "what is in".into() },
                Part::Image(png),
                Part::Text { text: "this screenshot?".into() },
            ],
        }],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_stored_before_images_existed_still_decode() {
        let old = r#"{"type":"tool_result","call_id":"c1","name":"read","output":"x","is_error":false}"#;
        let part: Part = serde_json::from_str(old).unwrap();
        let Part::ToolResult(result) = part else { panic!("{part:?}") };
        assert!(result.images.is_empty());
        assert_eq!(result.kind, CallKind::Function);
        // No images: the stored form stays as it was.
        let again = serde_json::to_value(Part::ToolResult(result)).unwrap();
        assert!(again.get("images").is_none(), "{again}");
    }
}
