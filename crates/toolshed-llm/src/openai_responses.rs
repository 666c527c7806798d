//! OpenAI Responses (`POST /responses`), stateless (`store: false`): the whole conversation is
//! replayed as input items, every `function_call` / `custom_tool_call` followed by its
//! `*_output` with the same `call_id`. Freeform tools (apply_patch) are `custom` tools.
//! Reasoning items are asked for with their `encrypted_content` and replayed (without their
//! `id`, which a stateless request cannot resolve) before the items they led to.

use std::collections::HashMap;

use serde_json::{Value, json};
use toolshed_core::render::{WireFormat, render};

use crate::client::{DecodeError, Decoder, parse};
use crate::types::{
    CallKind, Message, Part, Reasoning, Request, Role, StopReason, StreamEvent, ToolCall, ToolResult, Usage,
};

/// The format tag of the reasoning items this format produces and replays.
pub const FORMAT: &str = "openai-responses";

/// What the body asks to be included in the output: reasoning items' encrypted content.
pub const INCLUDE_REASONING: &str = "reasoning.encrypted_content";

/// The request body for `request`.
pub fn body(request: &Request) -> Value {
    let mut input = Vec::new();
    for message in &request.messages {
        push_items(&mut input, message);
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "store": false,
        "stream": true,
        "include": [INCLUDE_REASONING],
    });
    if !request.system.is_empty() {
        body["instructions"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        let specs: Vec<_> = request.tools.iter().collect();
        body["tools"] = render(WireFormat::OpenAiResponses, &specs);
    }
    if let Some(max) = request.max_tokens {
        body["max_output_tokens"] = json!(max);
    }
    body
}

fn push_items(out: &mut Vec<Value>, message: &Message) {
    match message.role {
        Role::User => {
            for part in &message.parts {
                if let Part::ToolResult(r) = part {
                    let kind = match r.kind {
                        CallKind::Function => "function_call_output",
                        CallKind::Custom => "custom_tool_call_output",
                    };
                    out.push(json!({"type": kind, "call_id": r.call_id, "output": output(r)}));
                }
            }
            if message.has_images() {
                // Text and attached images in order, images as data URLs.
                let content = message.parts.iter().filter_map(|part| match part {
                    Part::Text { text } if !text.is_empty() => Some(json!({"type": "input_text", "text": text})),
                    Part::Image(image) => Some(json!({"type": "input_image", "image_url": image.data_url()})),
                    _ => None,
                });
                out.push(json!({"role": "user", "content": content.collect::<Vec<_>>()}));
            } else {
                let text = message.text();
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": [{"type": "input_text", "text": text}]}));
                }
            }
        }
        Role::Assistant => {
            for (i, part) in message.parts.iter().enumerate() {
                match part {
                    Part::Reasoning(r) if r.format == FORMAT && leads_somewhere(&message.parts[i + 1..]) => {
                        out.extend(replayable(r));
                    }
                    Part::Text { text } if !text.is_empty() => out.push(json!({
                        "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]
                    })),
                    Part::ToolCall(c) => out.push(match c.kind {
                        CallKind::Function => json!({
                            "type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments
                        }),
                        CallKind::Custom => json!({
                            "type": "custom_tool_call", "call_id": c.id, "name": c.name, "input": c.arguments
                        }),
                    }),
                    _ => {}
                }
            }
        }
    }
}

/// A tool result's `output`: its text, or with images a list of `input_text` and `input_image`
/// items (data URLs); `custom_tool_call_output` takes the same list.
fn output(result: &ToolResult) -> Value {
    if result.images.is_empty() {
        return json!(result.output);
    }
    let text = (!result.output.is_empty()).then(|| json!({"type": "input_text", "text": result.output}));
    let images = result.images.iter().map(|i| json!({"type": "input_image", "image_url": i.data_url()}));
    Value::Array(text.into_iter().chain(images).collect())
}

/// Whether a reasoning item is followed by an item it led to (the API refuses a reasoning item
/// without one, as when a response broke off right after it).
fn leads_somewhere(rest: &[Part]) -> bool {
    rest.iter().any(|p| matches!(p, Part::ToolCall(_)) || matches!(p, Part::Text { text } if !text.is_empty()))
}

/// A stored reasoning item as input: without `id` and `status` (a stateless request cannot
/// resolve ids), with its summary, and only when it carries encrypted content to replay.
fn replayable(reasoning: &Reasoning) -> Option<Value> {
    let Value::Object(mut item) = reasoning.item.clone() else { return None };
    let encrypted = item.get("encrypted_content").and_then(Value::as_str).is_some_and(|c| !c.is_empty());
    if !encrypted {
        return None;
    }
    item.remove("id");
    item.remove("status");
    item.insert("type".into(), json!("reasoning"));
    item.entry("summary").or_insert_with(|| json!([]));
    Some(Value::Object(item))
}

struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Decodes Responses streaming events.
#[derive(Default)]
pub(crate) struct ResponsesDecoder {
    partial: HashMap<u64, PartialCall>,
    calls: usize,
    finished: bool,
}

fn call_of(item: &Value) -> Option<(CallKind, String, String)> {
    let kind = match item.get("type").and_then(Value::as_str)? {
        "function_call" => CallKind::Function,
        "custom_tool_call" => CallKind::Custom,
        _ => return None,
    };
    let id = item.get("call_id").or_else(|| item.get("id")).and_then(Value::as_str).unwrap_or_default();
    let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
    Some((kind, id.to_string(), name.to_string()))
}

impl ResponsesDecoder {
    fn finished(&mut self, stop: StopReason, response: &Value) -> Vec<StreamEvent> {
        self.finished = true;
        let u = response.get("usage");
        let get = |k: &str| u.and_then(|u| u.get(k)).and_then(Value::as_u64).unwrap_or(0);
        let detail = |k: &str, d: &str| u.and_then(|u| u.get(k)).and_then(|u| u.get(d)).and_then(Value::as_u64);
        let usage = Usage {
            input_tokens: get("input_tokens"),
            output_tokens: get("output_tokens"),
            cached_input_tokens: detail("input_tokens_details", "cached_tokens").unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: detail("output_tokens_details", "reasoning_tokens").unwrap_or(0),
        };
        let stop = if stop == StopReason::EndTurn && self.calls > 0 { StopReason::ToolUse } else { stop };
        vec![StreamEvent::Finished { stop, usage }]
    }
}

impl Decoder for ResponsesDecoder {
    fn event(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        if data.trim().is_empty() || data.trim() == "[DONE]" {
            return Ok(Vec::new());
        }
        let v = parse(data)?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(name);
        let index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        let delta = || v.get("delta").and_then(Value::as_str).unwrap_or_default().to_string();
        let mut out = Vec::new();
        match kind {
            "response.output_text.delta" => out.push(StreamEvent::TextDelta(delta())),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.push(StreamEvent::ReasoningDelta(delta()));
            }
            "response.output_item.added" => {
                if let Some((_, id, name)) = v.get("item").and_then(call_of) {
                    out.push(StreamEvent::ToolCallStarted { id: id.clone(), name: name.clone() });
                    self.partial.insert(index, PartialCall { id, name, arguments: String::new() });
                }
            }
            "response.function_call_arguments.delta" | "response.custom_tool_call_input.delta" => {
                if let Some(p) = self.partial.get_mut(&index) {
                    p.arguments.push_str(&delta());
                }
            }
            "response.output_item.done" => {
                let item = v.get("item").cloned().unwrap_or(Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("reasoning") {
                    out.push(StreamEvent::Reasoning(Reasoning {
                        format: FORMAT.to_string(),
                        item,
                        model: String::new(),
                    }));
                } else if let Some((kind, id, name)) = call_of(&item) {
                    let streamed = self.partial.remove(&index);
                    let field = if kind == CallKind::Custom { "input" } else { "arguments" };
                    let arguments = match item.get(field).and_then(Value::as_str) {
                        Some(a) => a.to_string(),
                        None => streamed.as_ref().map(|p| p.arguments.clone()).unwrap_or_default(),
                    };
                    let id =
                        if id.is_empty() { streamed.as_ref().map(|p| p.id.clone()).unwrap_or_default() } else { id };
                    let name = if name.is_empty() { streamed.map(|p| p.name).unwrap_or_default() } else { name };
                    self.calls += 1;
                    out.push(StreamEvent::ToolCall(ToolCall { id, name, arguments, kind }));
                }
            }
            "response.completed" => {
                out.extend(self.finished(StopReason::EndTurn, v.get("response").unwrap_or(&Value::Null)));
            }
            "response.incomplete" => {
                let response = v.get("response").unwrap_or(&Value::Null);
                let stop = match response.pointer("/incomplete_details/reason").and_then(Value::as_str) {
                    Some("content_filter") => StopReason::Refusal,
                    _ => StopReason::MaxTokens,
                };
                out.extend(self.finished(stop, response));
            }
            "response.failed" => {
                let message = v
                    .pointer("/response/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("the response failed without a message");
                let code = v.pointer("/response/error/code").and_then(Value::as_str).unwrap_or_default();
                return Err(DecodeError::provider(message, code));
            }
            "error" => {
                let message = v
                    .get("message")
                    .or_else(|| v.pointer("/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                let code = ["/code", "/error/code", "/error/type"]
                    .iter()
                    .find_map(|p| v.pointer(p).and_then(Value::as_str))
                    .unwrap_or_default();
                return Err(DecodeError::provider(message, code));
            }
            _ => {}
        }
        Ok(out)
    }

    fn end(&mut self) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.finished {
            return Ok(Vec::new());
        }
        Err(DecodeError::Stream("the stream ended before response.completed".to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_and_function_calls_decode_and_pair_by_call_id() {
        let mut d = ResponsesDecoder::default();
        let mut events = Vec::new();
        for (name, data) in [
            (
                "response.output_item.added",
                r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":""}}"#,
            ),
            (
                "response.custom_tool_call_input.delta",
                r#"{"type":"response.custom_tool_call_input.delta","output_index":0,"delta":"*** Begin Patch\n"}"#,
            ),
            (
                "response.custom_tool_call_input.delta",
                r#"{"type":"response.custom_tool_call_input.delta","output_index":0,"delta":"*** End Patch"}"#,
            ),
            (
                "response.output_item.done",
                r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"custom_tool_call","call_id":"c1","name":"apply_patch"}}"#,
            ),
            (
                "response.output_item.done",
                r#"{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","call_id":"c2","name":"read","arguments":"{\"path\":\"a\"}"}}"#,
            ),
            (
                "response.completed",
                r#"{"type":"response.completed","response":{"id":"r","usage":{"input_tokens":7,"output_tokens":3,"input_tokens_details":{"cached_tokens":4},"output_tokens_details":{"reasoning_tokens":1}}}}"#,
            ),
        ] {
            events.extend(d.event(name, data).unwrap());
        }
        assert_eq!(events[0], StreamEvent::ToolCallStarted { id: "c1".into(), name: "apply_patch".into() });
        assert_eq!(
            events[1],
            StreamEvent::ToolCall(ToolCall {
                id: "c1".into(),
                name: "apply_patch".into(),
                arguments: "*** Begin Patch\n*** End Patch".into(),
                kind: CallKind::Custom
            })
        );
        assert_eq!(
            events[3],
            StreamEvent::Finished {
                stop: StopReason::ToolUse,
                usage: Usage { cached_input_tokens: 4, reasoning_tokens: 1, ..Usage::new(7, 3) }
            }
        );

        let replay = Request {
            model: "gpt-5".into(),
            system: "sys".into(),
            messages: vec![
                Message {
                    role: Role::Assistant,
                    parts: events
                        .iter()
                        .filter_map(|e| match e {
                            StreamEvent::ToolCall(c) => Some(Part::ToolCall(c.clone())),
                            _ => None,
                        })
                        .collect(),
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::ToolResult(ToolResult {
                            call_id: "c1".into(),
                            name: "apply_patch".into(),
                            output: "Done".into(),
                            is_error: false,
                            kind: CallKind::Custom,
                            images: Vec::new(),
                        }),
                        Part::ToolResult(ToolResult {
                            call_id: "c2".into(),
                            name: "read".into(),
                            output: "x".into(),
                            is_error: false,
                            kind: CallKind::Function,
                            images: Vec::new(),
                        }),
                    ],
                },
            ],
            ..Default::default()
        };
        let body = body(&replay);
        assert_eq!(body["instructions"], "sys");
        assert_eq!(body["store"], false);
        let kinds: Vec<(&str, &str)> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| (i["type"].as_str().unwrap(), i["call_id"].as_str().unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("custom_tool_call", "c1"),
                ("function_call", "c2"),
                ("custom_tool_call_output", "c1"),
                ("function_call_output", "c2")
            ]
        );
    }

    #[test]
    fn reasoning_items_are_captured_whole_and_replayed_before_the_calls_they_led_to() {
        let mut d = ResponsesDecoder::default();
        let item = json!({"type": "reasoning", "id": "rs_1", "status": "completed",
            "summary": [{"type": "summary_text", "text": "Look at the file first."}],
            "encrypted_content": "gAAAA-opaque"});
        let mut events = Vec::new();
        for (name, data) in [
            (
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            ),
            (
                "response.reasoning_summary_text.delta",
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Look"}),
            ),
            (
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
            ),
            (
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"}}),
            ),
            ("response.completed", json!({"type": "response.completed", "response": {"id": "r"}})),
        ] {
            events.extend(d.event(name, &data.to_string()).unwrap());
        }
        let reasoning = Reasoning { format: FORMAT.into(), item: item.clone(), model: String::new() };
        assert_eq!(events[0], StreamEvent::ReasoningDelta("Look".into()));
        assert_eq!(events[1], StreamEvent::Reasoning(reasoning.clone()));
        assert_eq!(reasoning.summary(), "Look at the file first.");
        assert!(matches!(&events[2], StreamEvent::ToolCall(c) if c.id == "c1"));

        let call = ToolCall { id: "c1".into(), name: "read".into(), arguments: "{}".into(), kind: CallKind::Function };
        let foreign = Reasoning { format: "elsewhere".into(), item: item.clone(), model: String::new() };
        let request = Request {
            model: "gpt-5".into(),
            messages: vec![
                Message::user("go"),
                Message {
                    role: Role::Assistant,
                    parts: vec![
                        Part::Reasoning(foreign),
                        Part::Reasoning(reasoning.clone()),
                        Part::ToolCall(call.clone()),
                        // A reasoning item nothing followed (the response broke off) is not sent.
                        Part::Reasoning(reasoning.clone()),
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
            ..Default::default()
        };
        let body = body(&request);
        assert_eq!(body["include"], json!([INCLUDE_REASONING]));
        assert_eq!(
            body["input"],
            json!([
                {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look at the file first."}], "encrypted_content": "gAAAA-opaque"},
                {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "x"}
            ])
        );
        // The other formats never send reasoning items.
        let chat = crate::openai_chat::body(&request).to_string();
        let anthropic = crate::anthropic::body(&request).to_string();
        assert!(!chat.contains("opaque") && !anthropic.contains("opaque"), "{chat}\n{anthropic}");
    }

    #[test]
    fn images_go_in_the_call_output_as_input_image_items_after_the_text() {
        let request = crate::types::image_test_request();
        let body = body(&request);
        let input = body["input"].as_array().unwrap();
        assert_eq!(
            input[2],
            json!({"type": "function_call_output", "call_id": "c1", "output": [
                {"type": "input_text", "text": "read c1"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
            ]})
        );
        assert_eq!(input[3], json!({"type": "function_call_output", "call_id": "c2", "output": "read c2"}));
    }

    #[test]
    fn failed_responses_carry_the_providers_message() {
        let mut d = ResponsesDecoder::default();
        let err = d
            .event(
                "response.failed",
                r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}"#,
            )
            .unwrap_err();
        assert_eq!(err, DecodeError::Provider { message: "boom".into(), transient: true, quota: false });
        assert!(ResponsesDecoder::default().end().is_err());
    }

    #[test]
    fn a_prompts_image_is_an_input_image_between_its_texts() {
        let body = body(&crate::types::prompt_image_test_request());
        assert_eq!(
            body["input"][0],
            json!({"role": "user", "content": [
                {"type": "input_text", "text": "what is in"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
                {"type": "input_text", "text": "this screenshot?"}
            ]})
        );
    }
}
