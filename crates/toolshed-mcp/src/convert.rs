//! Tool results across the MCP boundary: an MCP `CallToolResult` as toolshed output (client
//! side), and a toolshed result as a `CallToolResult` (server side).

use base64::Engine;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use toolshed_core::exec::ToolResult;
use toolshed_core::tool::Attachment;
use toolshed_core::{ToolError, ToolOutput};

/// The size of base64 `data` once decoded.
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end_matches('=');
    data.len() / 4 * 3 + (data.len() % 4 * 3 / 4)
}

/// `block`, or a note in its place when its binary data (an image's, audio's or an embedded
/// resource's blob) decodes to more than `max_blob_bytes`: what was left out, its type and size,
/// and what to do instead.
fn bounded(block: ContentBlock, max_blob_bytes: usize) -> ContentBlock {
    let (what, mime_type, size) = match &block {
        ContentBlock::Image(image) => {
            ("An image".to_string(), Some(image.mime_type.as_str()), decoded_len(&image.data))
        }
        ContentBlock::Audio(audio) => ("Audio".to_string(), Some(audio.mime_type.as_str()), decoded_len(&audio.data)),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => {
                (format!("The embedded resource {uri}"), mime_type.as_deref(), decoded_len(blob))
            }
            _ => return block,
        },
        _ => return block,
    };
    if size <= max_blob_bytes {
        return block;
    }
    ContentBlock::text(format!(
        "[{what} ({}, {size} bytes) was left out: it is over toolshed's limit of {max_blob_bytes} bytes for one binary part of a tool result ([output] max_blob_bytes). Call the tool again asking for less (a smaller image or region, a lower resolution, a shorter clip, a part of the resource) if it has such an option.]",
        mime_type.unwrap_or("unknown type")
    ))
}

/// What the model sees of an MCP tool's result. Binary parts over `max_blob_bytes` are first
/// replaced by a note ([`bounded`]), for the model and for a client of `mcp serve` alike. Text
/// parts are joined with blank lines; images become attachments; an embedded text resource is
/// appended, a binary one described; with no content, the structured content is shown as JSON.
/// `isError` makes it an error.
pub fn from_mcp(mut result: CallToolResult, max_blob_bytes: usize) -> Result<ToolOutput, ToolError> {
    result.content = std::mem::take(&mut result.content).into_iter().map(|b| bounded(b, max_blob_bytes)).collect();
    let mut texts = Vec::new();
    let mut output = ToolOutput::default();
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => texts.push(t.text.clone()),
            ContentBlock::Image(image) => match base64::engine::general_purpose::STANDARD.decode(&image.data) {
                Ok(data) => output.attachments.push(Attachment::Image { mime_type: image.mime_type.clone(), data }),
                Err(_) => {
                    texts.push(format!("[The server sent an image ({}) that is not valid base64]", image.mime_type));
                }
            },
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { text, .. } => texts.push(text.clone()),
                ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => texts.push(format!(
                    "[Binary resource omitted: {uri} ({}, {} bytes base64)]",
                    mime_type.as_deref().unwrap_or("unknown type"),
                    blob.len()
                )),
                _ => texts.push("[A resource of a kind toolshed does not know was omitted]".to_string()),
            },
            ContentBlock::ResourceLink(link) => texts.push(format!("[Resource: {}]", link.uri)),
            ContentBlock::Audio(audio) => texts.push(format!("[Audio omitted ({})]", audio.mime_type)),
            _ => texts.push("[A content block of a kind toolshed does not know was omitted]".to_string()),
        }
    }
    if texts.is_empty()
        && output.attachments.is_empty()
        && let Some(structured) = &result.structured_content
    {
        texts.push(structured.to_string());
    }
    let text = texts.join("\n\n");
    // What the text cannot say (embedded resources as resources, links, audio, structured
    // content) is kept for an MCP client of `mcp serve`, which gets it as the server sent it.
    // It is not metadata: the text and attachments already hold what it says, so it is kept
    // out of the session record (which would otherwise store every resource twice).
    let plain = result.content.iter().all(|b| matches!(b, ContentBlock::Text(_) | ContentBlock::Image(_)));
    if (!plain || result.structured_content.is_some())
        && let Ok(serde_json::Value::Object(mut original)) = serde_json::to_value(&result)
    {
        original.retain(|k, _| matches!(k.as_str(), "content" | "structuredContent"));
        output.passthrough = Some(serde_json::Value::Object(original));
    }
    if result.is_error == Some(true) {
        let message =
            if text.trim().is_empty() { "The MCP tool returned an error without a message.".to_string() } else { text };
        return Err(ToolError::model(message));
    }
    output.text = text;
    Ok(output)
}

/// A toolshed result as an MCP result: the text, then images; `isError` when the call failed.
/// The result of an upstream MCP tool goes out as that server sent it (resources, links,
/// structured content), unless the output had to be cut: then the cut text, with the
/// structured content still attached (a client checks it against the tool's `outputSchema`).
pub fn to_mcp(result: &ToolResult) -> CallToolResult {
    if let Some(serde_json::Value::Object(original)) = &result.passthrough
        && !result.is_error
    {
        let structured = original.get("structuredContent").cloned();
        let content: Option<Vec<ContentBlock>> =
            original.get("content").and_then(|c| serde_json::from_value(c.clone()).ok());
        if let Some(content) = content.filter(|_| result.spill_path().is_none()) {
            let mut out = CallToolResult::success(content);
            out.structured_content = structured;
            return out;
        }
        let mut out = text_result(result);
        out.structured_content = structured;
        return out;
    }
    text_result(result)
}

fn text_result(result: &ToolResult) -> CallToolResult {
    let mut content = vec![ContentBlock::text(result.output.clone())];
    for attachment in &result.attachments {
        match attachment {
            Attachment::Image { mime_type, data } => content
                .push(ContentBlock::image(base64::engine::general_purpose::STANDARD.encode(data), mime_type.clone())),
        }
    }
    if result.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_mcp_default(result: CallToolResult) -> Result<ToolOutput, ToolError> {
        from_mcp(result, toolshed_core::output::OutputLimits::default().max_blob_bytes)
    }

    #[test]
    fn decoded_sizes_count_padding() {
        let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]);
        for n in [0, 1, 2, 3, 4, 5, 1000, 1001, 1002] {
            assert_eq!(decoded_len(&b64(n)), n);
            assert_eq!(decoded_len(b64(n).trim_end_matches('=')), n);
        }
    }

    #[test]
    fn text_parts_join_and_errors_carry_their_text() {
        let ok =
            from_mcp_default(CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")])).unwrap();
        assert_eq!(ok.text, "a\n\nb");
        let err = from_mcp_default(CallToolResult::error(vec![ContentBlock::text("no such repo")])).unwrap_err();
        assert_eq!(err, ToolError::model("no such repo"));
        let err = from_mcp_default(CallToolResult::error(vec![])).unwrap_err();
        assert_eq!(err.to_string(), "The MCP tool returned an error without a message.");
    }

    #[test]
    fn images_become_attachments_and_structured_content_fills_empty_results() {
        let png = base64::engine::general_purpose::STANDARD.encode([1u8, 2, 3]);
        let out = from_mcp_default(CallToolResult::success(vec![ContentBlock::image(png, "image/png")])).unwrap();
        assert_eq!(out.attachments, [Attachment::Image { mime_type: "image/png".into(), data: vec![1, 2, 3] }]);
        let mut structured = CallToolResult::success(vec![]);
        structured.structured_content = Some(serde_json::json!({"ok": true}));
        assert_eq!(from_mcp_default(structured).unwrap().text, r#"{"ok":true}"#);
    }
}
