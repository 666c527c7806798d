//! Anthropic Messages (`POST /messages`): `tool_use` blocks whose `input_json_delta` pieces are
//! joined and parsed at `content_block_stop`, and `tool_result` blocks with `is_error`, all
//! results of one turn in the next user message. Consecutive messages of one role are merged,
//! since the API wants them to alternate.

use std::collections::HashMap;

use serde_json::{Map, Value, json};
use toolshed_core::render::{WireFormat, render};

use crate::client::{DecodeError, Decoder, parse};
use crate::types::{
    CallKind, Image, Message, Part, Request, Role, StopReason, StreamEvent, ToolCall, ToolResult, Usage,
};

/// Output tokens asked for when the request sets no limit (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 16_384;

/// The request body for `request`.
pub fn body(request: &Request) -> Value {
    let mut messages: Vec<(Role, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        let blocks = blocks(message);
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((role, existing)) if *role == message.role => existing.extend(blocks),
            _ => messages.push((message.role, blocks)),
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| {
            let role = if role == Role::User { "user" } else { "assistant" };
            json!({"role": role, "content": content})
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "messages": messages,
        "stream": true,
    });
    if !request.system.is_empty() {
        body["system"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        let specs: Vec<_> = request.tools.iter().collect();
        body["tools"] = render(WireFormat::Anthropic, &specs);
    }
    body
}

/// The tool input as the object Anthropic wants: freeform text goes in the fallback field
/// `input`; JSON that is not an object is kept as text under `arguments`.
fn input_object(call: &ToolCall) -> Value {
    if call.kind == CallKind::Custom {
        return json!({"input": call.arguments});
    }
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(Value::Object(o)) => Value::Object(o),
        _ if call.arguments.trim().is_empty() => Value::Object(Map::new()),
        _ => json!({"arguments": call.arguments}),
    }
}

/// A tool result's `content`: its text, or with images a text block (the API refuses an empty
/// one) followed by base64 `image` blocks.
fn result_content(result: &ToolResult) -> Value {
    if result.images.is_empty() {
        return json!(result.output);
    }
    let text = (!result.output.is_empty()).then(|| json!({"type": "text", "text": result.output}));
    let images = result.images.iter().map(image_block);
    Value::Array(text.into_iter().chain(images).collect())
}

/// An `image` block with a base64 source.
fn image_block(image: &Image) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data_base64}})
}

fn blocks(message: &Message) -> Vec<Value> {
    let mut out = Vec::new();
    // In a user message, tool results come first: they answer the assistant turn before it.
    for part in &message.parts {
        if let Part::ToolResult(r) = part {
            let mut block = json!({"type": "tool_result", "tool_use_id": r.call_id, "content": result_content(r)});
            if r.is_error {
                block["is_error"] = json!(true);
            }
            out.push(block);
        }
    }
    for part in &message.parts {
        match part {
            Part::Text { text } if !text.is_empty() => out.push(json!({"type": "text", "text": text})),
            Part::Image(image) => out.push(image_block(image)),
            Part::ToolCall(c) => {
                out.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input_object(c)}));
            }
            _ => {}
        }
    }
    out
}

struct Block {
    id: String,
    name: String,
    json: String,
    initial: Option<Value>,
}

/// Decodes Anthropic streaming events.
#[derive(Default)]
pub(crate) struct AnthropicDecoder {
    blocks: HashMap<u64, Block>,
    usage: Usage,
    stop: Option<String>,
    calls: usize,
    finished: bool,
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        if data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let v = parse(data)?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(name);
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0);
        let mut out = Vec::new();
        match kind {
            "message_start" => {
                let u = v.pointer("/message/usage");
                let get = |k: &str| u.and_then(|u| u.get(k)).and_then(Value::as_u64).unwrap_or(0);
                self.usage.input_tokens =
                    get("input_tokens") + get("cache_read_input_tokens") + get("cache_creation_input_tokens");
                self.usage.cached_input_tokens = get("cache_read_input_tokens");
                self.usage.cache_write_tokens = get("cache_creation_input_tokens");
                self.usage.output_tokens = get("output_tokens");
            }
            "content_block_start" => {
                let block = v.get("content_block").cloned().unwrap_or(Value::Null);
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let id = block.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
                        let name = block.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
                        out.push(StreamEvent::ToolCallStarted { id: id.clone(), name: name.clone() });
                        let initial =
                            block.get("input").filter(|i| i.as_object().is_some_and(|o| !o.is_empty())).cloned();
                        self.blocks.insert(index, Block { id, name, json: String::new(), initial });
                    }
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str).filter(|t| !t.is_empty()) {
                            out.push(StreamEvent::TextDelta(text.to_string()));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = v.get("delta").cloned().unwrap_or(Value::Null);
                let text = |k: &str| delta.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => out.push(StreamEvent::TextDelta(text("text"))),
                    Some("thinking_delta") => out.push(StreamEvent::ReasoningDelta(text("thinking"))),
                    Some("input_json_delta") => {
                        if let Some(b) = self.blocks.get_mut(&index) {
                            b.json.push_str(&text("partial_json"));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some(b) = self.blocks.remove(&index) {
                    let arguments = if !b.json.trim().is_empty() {
                        b.json
                    } else {
                        b.initial.map(|i| i.to_string()).unwrap_or_else(|| "{}".to_string())
                    };
                    self.calls += 1;
                    out.push(StreamEvent::ToolCall(ToolCall {
                        id: b.id,
                        name: b.name,
                        arguments,
                        kind: CallKind::Function,
                    }));
                }
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop = Some(reason.to_string());
                }
                if let Some(n) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = n;
                }
            }
            "message_stop" => out.extend(self.finish()?),
            "error" => {
                let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("unknown error");
                let kind = v.pointer("/error/type").and_then(Value::as_str).unwrap_or("error");
                return Err(DecodeError::provider(format!("{kind}: {message}"), kind));
            }
            _ => {}
        }
        Ok(out)
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.finished {
            return Ok(Vec::new());
        }
        // `message_delta` carries the stop reason after the last content block closed: the
        // answer is complete even if `message_stop` never came.
        if self.stop.is_some() && self.blocks.is_empty() {
            return self.finish();
        }
        Err(DecodeError::Stream("the stream ended before message_stop".to_string()))
    }
}

impl AnthropicDecoder {
    /// The `Finished` event, once.
    fn finish(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.finished {
            return Ok(Vec::new());
        }
        self.finished = true;
        let stop = match self.stop.as_deref() {
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") => StopReason::MaxTokens,
            Some("refusal") => StopReason::Refusal,
            Some("model_context_window_exceeded") => {
                return Err(DecodeError::provider("the model's context window is exceeded", "stop_reason"));
            }
            _ if self.calls > 0 => StopReason::ToolUse,
            Some("end_turn" | "stop_sequence") | None => StopReason::EndTurn,
            Some(_) => StopReason::Other,
        };
        Ok(vec![StreamEvent::Finished { stop, usage: self.usage }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_json_pieces_join_into_one_call() {
        let mut d = AnthropicDecoder::default();
        let mut events = Vec::new();
        for data in [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":2,"cache_read_input_tokens":7,"cache_creation_input_tokens":3,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":".txt\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            events.extend(d.event("", data).unwrap());
        }
        assert_eq!(
            events,
            [
                StreamEvent::TextDelta("Reading.".into()),
                StreamEvent::ToolCallStarted { id: "toolu_1".into(), name: "read".into() },
                StreamEvent::ToolCall(ToolCall {
                    id: "toolu_1".into(),
                    name: "read".into(),
                    arguments: r#"{"path": "a.txt"}"#.into(),
                    kind: CallKind::Function
                }),
                StreamEvent::Finished {
                    stop: StopReason::ToolUse,
                    usage: Usage { cached_input_tokens: 7, cache_write_tokens: 3, ..Usage::new(12, 20) }
                },
            ]
        );
    }

    #[test]
    fn results_carry_is_error_and_roles_alternate() {
        let request = Request {
            model: "claude".into(),
            messages: vec![
                Message::user("go"),
                Message {
                    role: Role::Assistant,
                    parts: vec![Part::ToolCall(ToolCall {
                        id: "t1".into(),
                        name: "read".into(),
                        arguments: r#"{"path":"b"}"#.into(),
                        kind: CallKind::Function,
                    })],
                },
                Message {
                    role: Role::User,
                    parts: vec![Part::ToolResult(ToolResult {
                        call_id: "t1".into(),
                        name: "read".into(),
                        output: "File not found: b".into(),
                        is_error: true,
                        kind: CallKind::Function,
                        images: Vec::new(),
                    })],
                },
                Message::user("try c"),
            ],
            ..Default::default()
        };
        let body = body(&request);
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "b"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "File not found: b", "is_error": true},
                    {"type": "text", "text": "try c"}
                ]}
            ])
        );
    }

    #[test]
    fn images_go_in_the_tool_result_as_base64_image_blocks_after_the_text() {
        let request = crate::types::image_test_request();
        let body = body(&request);
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "tool_result", "tool_use_id": "c1", "content": [
                    {"type": "text", "text": "read c1"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
                ]},
                {"type": "tool_result", "tool_use_id": "c2", "content": "read c2"}
            ])
        );
    }

    #[test]
    fn an_error_event_mid_stream_is_the_providers() {
        let mut d = AnthropicDecoder::default();
        let err = d
            .event("error", r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
            .unwrap_err();
        assert_eq!(
            err,
            DecodeError::Provider { message: "overloaded_error: Overloaded".into(), transient: true, quota: false }
        );
    }

    #[test]
    fn a_prompts_image_is_an_image_block_between_its_texts() {
        let body = body(&crate::types::prompt_image_test_request());
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "what is in"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "text", "text": "this screenshot?"}
            ]})
        );
    }
}
