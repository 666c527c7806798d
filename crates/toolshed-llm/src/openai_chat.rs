//! OpenAI Chat Completions (`POST /chat/completions`), and every server that speaks it (vLLM,
//! llama.cpp, Ollama, LM Studio, OpenRouter). Tool-call fragments are joined by `index`; a
//! server that omits `index` is followed by call id, else the fragment extends the last call.

use std::collections::HashMap;

use serde_json::{Value, json};
use toolshed_core::render::{WireFormat, render};

use crate::client::{DecodeError, Decoder, parse};
use crate::error::error_message;
use crate::types::{CallKind, Message, Part, Request, Role, StopReason, StreamEvent, ToolCall, Usage};

/// The request body for `request`.
pub fn body(request: &Request) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        push_message(&mut messages, message);
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let specs: Vec<_> = request.tools.iter().collect();
        body["tools"] = render(WireFormat::OpenAiChat, &specs);
    }
    if let Some(max) = request.max_tokens {
        body["max_tokens"] = json!(max);
    }
    body
}

fn push_message(out: &mut Vec<Value>, message: &Message) {
    match message.role {
        Role::User => {
            // Tool results first: they must directly follow the assistant message that called.
            for part in &message.parts {
                if let Part::ToolResult(r) = part {
                    out.push(json!({"role": "tool", "tool_call_id": r.call_id, "content": r.output}));
                }
            }
            if let Some(images) = result_images(message) {
                out.push(images);
            }
            if message.has_images() {
                out.push(json!({"role": "user", "content": user_content(message)}));
            } else {
                let text = message.text();
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": text}));
                }
            }
        }
        Role::Assistant => {
            let text = message.text();
            let calls: Vec<Value> = message
                .tool_calls()
                .map(|c| match c.kind {
                    CallKind::Function => json!({
                        "id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments}
                    }),
                    CallKind::Custom => json!({
                        "id": c.id, "type": "custom",
                        "custom": {"name": c.name, "input": c.arguments}
                    }),
                })
                .collect();
            let mut m =
                json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !calls.is_empty() {
                m["tool_calls"] = Value::Array(calls);
            }
            out.push(m);
        }
    }
}

/// A user message with attached images as a content array: its text and images in order,
/// images as data URLs.
fn user_content(message: &Message) -> Value {
    let parts = message.parts.iter().filter_map(|part| match part {
        Part::Text { text } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
        Part::Image(image) => Some(json!({"type": "image_url", "image_url": {"url": image.data_url()}})),
        _ => None,
    });
    Value::Array(parts.collect())
}

/// Tool messages hold only text, so the images of a turn's results follow them in one user
/// message: for each call with images, a line naming the call, then its images as data URLs.
fn result_images(message: &Message) -> Option<Value> {
    let mut content = Vec::new();
    for part in &message.parts {
        let Part::ToolResult(r) = part else { continue };
        if r.images.is_empty() {
            continue;
        }
        let what = if r.images.len() == 1 { "The image" } else { "The images" };
        content.push(json!({"type": "text", "text": format!("{what} returned by the {} call {}:", r.name, r.call_id)}));
        for image in &r.images {
            content.push(json!({"type": "image_url", "image_url": {"url": image.data_url()}}));
        }
    }
    (!content.is_empty()).then(|| json!({"role": "user", "content": content}))
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    kind: CallKind,
    announced: bool,
}

/// Decodes `chat.completion.chunk` events.
#[derive(Default)]
pub(crate) struct ChatDecoder {
    calls: Vec<PartialCall>,
    by_index: HashMap<u64, usize>,
    finish_reason: Option<String>,
    usage: Usage,
    finished: bool,
}

impl ChatDecoder {
    fn slot(&mut self, fragment: &Value) -> usize {
        if let Some(index) = fragment.get("index").and_then(Value::as_u64) {
            if let Some(&i) = self.by_index.get(&index) {
                return i;
            }
            self.calls.push(PartialCall::default());
            self.by_index.insert(index, self.calls.len() - 1);
            return self.calls.len() - 1;
        }
        let id = fragment.get("id").and_then(Value::as_str).filter(|s| !s.is_empty());
        match (id, self.calls.last()) {
            (Some(id), Some(last)) if last.id == id => self.calls.len() - 1,
            (None, Some(_)) => self.calls.len() - 1,
            _ => {
                self.calls.push(PartialCall::default());
                self.calls.len() - 1
            }
        }
    }

    fn fragment(&mut self, fragment: &Value, out: &mut Vec<StreamEvent>) {
        let i = self.slot(fragment);
        let call = &mut self.calls[i];
        if let Some(id) = fragment.get("id").and_then(Value::as_str).filter(|s| !s.is_empty()) {
            call.id = id.to_string();
        }
        if fragment.get("type").and_then(Value::as_str) == Some("custom") {
            call.kind = CallKind::Custom;
        }
        if let Some(f) = fragment.get("function") {
            if let Some(name) = f.get("name").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                call.name = name.to_string();
            }
            if let Some(args) = f.get("arguments") {
                match args {
                    Value::String(s) => call.arguments.push_str(s),
                    Value::Null => {}
                    // Some servers send the arguments as an object rather than a string.
                    other => call.arguments.push_str(&other.to_string()),
                }
            }
        }
        if let Some(c) = fragment.get("custom") {
            call.kind = CallKind::Custom;
            if let Some(name) = c.get("name").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                call.name = name.to_string();
            }
            if let Some(input) = c.get("input").and_then(Value::as_str) {
                call.arguments.push_str(input);
            }
        }
        if !call.announced && !call.name.is_empty() {
            call.announced = true;
            out.push(StreamEvent::ToolCallStarted { id: call.id.clone(), name: call.name.clone() });
        }
    }

    fn finish(&mut self) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        let mut out = Vec::new();
        for (n, call) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            let id = if call.id.is_empty() { format!("call_{n}") } else { call.id };
            out.push(StreamEvent::ToolCall(ToolCall {
                id,
                name: call.name,
                arguments: call.arguments,
                kind: call.kind,
            }));
        }
        let has_calls = !out.is_empty();
        let stop = match self.finish_reason.as_deref() {
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            _ if has_calls => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some(_) => StopReason::Other,
        };
        out.push(StreamEvent::Finished { stop, usage: self.usage });
        out
    }
}

impl Decoder for ChatDecoder {
    fn event(&mut self, _name: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(self.finish());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let v = parse(data)?;
        if let Some(error) = v.get("error") {
            let kind =
                ["type", "code"].iter().filter_map(|k| error.get(*k).and_then(Value::as_str)).collect::<Vec<_>>();
            let message = error_message(&json!({"error": error}).to_string());
            return Err(DecodeError::provider(message, &kind.join(" ")));
        }
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.usage.input_tokens = u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(self.usage.input_tokens);
            self.usage.output_tokens =
                u.get("completion_tokens").and_then(Value::as_u64).unwrap_or(self.usage.output_tokens);
            let detail = |k: &str, d: &str| u.get(k).and_then(|u| u.get(d)).and_then(Value::as_u64);
            if let Some(n) = detail("prompt_tokens_details", "cached_tokens") {
                self.usage.cached_input_tokens = n;
            }
            if let Some(n) = detail("completion_tokens_details", "reasoning_tokens") {
                self.usage.reasoning_tokens = n;
            }
        }
        let mut out = Vec::new();
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(out);
        };
        if let Some(delta) = choice.get("delta") {
            for key in ["reasoning_content", "reasoning"] {
                if let Some(text) = delta.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    out.push(StreamEvent::ReasoningDelta(text.to_string()));
                }
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str).filter(|s| !s.is_empty()) {
                out.push(StreamEvent::TextDelta(text.to_string()));
            }
            if let Some(fragments) = delta.get("tool_calls").and_then(Value::as_array) {
                for fragment in fragments {
                    self.fragment(fragment, &mut out);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        Ok(out)
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.finished || self.finish_reason.is_some() {
            return Ok(self.finish());
        }
        Err(DecodeError::Stream(
            "the stream ended before the response was complete (no finish_reason and no [DONE])".to_string(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolResult;

    fn feed(d: &mut ChatDecoder, chunks: &[&str]) -> Vec<StreamEvent> {
        chunks.iter().flat_map(|c| d.event("", c).unwrap()).collect()
    }

    #[test]
    fn tool_call_fragments_join_by_index_even_when_interleaved() {
        let mut d = ChatDecoder::default();
        let events = feed(
            &mut d,
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"grep","arguments":"{\"pat"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"x\"}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}}]},"finish_reason":"tool_calls"}]}"#,
                r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":8},"completion_tokens_details":{"reasoning_tokens":2}}}"#,
                "[DONE]",
            ],
        );
        let calls: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCall(c) => Some((c.id.as_str(), c.name.as_str(), c.arguments.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(calls, [("a", "read", r#"{"path":"a.txt"}"#), ("b", "grep", r#"{"pattern":"x"}"#)]);
        assert_eq!(
            events.last(),
            Some(&StreamEvent::Finished {
                stop: StopReason::ToolUse,
                usage: Usage { cached_input_tokens: 8, reasoning_tokens: 2, ..Usage::new(10, 5) }
            })
        );
    }

    #[test]
    fn fragments_without_index_follow_the_call_id() {
        let mut d = ChatDecoder::default();
        let events = feed(
            &mut d,
            &[
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"read","arguments":"{}"}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"list","arguments":"{\"path\""}}]}}]}"#,
                r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":\".\"}"}}]},"finish_reason":"tool_calls"}]}"#,
            ],
        );
        let mut events = events;
        events.extend(d.end().unwrap());
        let args: Vec<_> = events
            .iter()
            .filter_map(|e| if let StreamEvent::ToolCall(c) = e { Some(c.arguments.clone()) } else { None })
            .collect();
        assert_eq!(args, ["{}", r#"{"path":"."}"#]);
    }

    #[test]
    fn a_stream_cut_before_the_finish_is_an_error() {
        let mut d = ChatDecoder::default();
        feed(&mut d, &[r#"{"choices":[{"delta":{"content":"Hel"}}]}"#]);
        assert!(
            matches!(d.end().unwrap_err(), DecodeError::Stream(m) if m.contains("ended before the response was complete"))
        );
    }

    #[test]
    fn an_error_chunk_is_reported_as_the_providers() {
        let mut d = ChatDecoder::default();
        let err = d.event("", r#"{"error":{"message":"model overloaded"}}"#).unwrap_err();
        assert_eq!(err, DecodeError::Provider { message: "model overloaded".into(), transient: true, quota: false });
        let err = d.event("", r#"{"error":{"message":"bad tools","type":"invalid_request_error"}}"#).unwrap_err();
        assert_eq!(err, DecodeError::Provider { message: "bad tools".into(), transient: false, quota: false });
    }

    #[test]
    fn images_follow_the_tool_messages_in_one_user_message_naming_their_call() {
        let request = crate::types::image_test_request();
        let body = body(&request);
        assert_eq!(
            body["messages"].as_array().unwrap()[1..],
            [
                json!({"role": "tool", "tool_call_id": "c1", "content": "read c1"}),
                json!({"role": "tool", "tool_call_id": "c2", "content": "read c2"}),
                json!({"role": "user", "content": [
                    {"type": "text", "text": "The image returned by the read call c1:"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
                ]})
            ]
        );
    }

    #[test]
    fn body_pairs_tool_results_with_their_calls() {
        let request = Request {
            model: "m".into(),
            system: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Text { text: "reading".into() },
                        Part::ToolCall(ToolCall {
                            id: "c1".into(),
                            name: "read".into(),
                            arguments: "{}".into(),
                            kind: CallKind::Function,
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    parts: vec![Part::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        name: "read".into(),
                        output: "x".into(),
                        is_error: false,
                        kind: CallKind::Function,
                        images: Vec::new(),
                    })],
                },
            ],
            tools: Vec::new(),
            max_tokens: None,
        };
        let body = body(&request);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "reading", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"}
            ])
        );
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn a_prompts_image_is_an_image_url_part_between_its_texts() {
        let body = body(&crate::types::prompt_image_test_request());
        assert_eq!(
            body["messages"][0],
            json!({"role": "user", "content": [
                {"type": "text", "text": "what is in"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "text", "text": "this screenshot?"}
            ]})
        );
    }
}
