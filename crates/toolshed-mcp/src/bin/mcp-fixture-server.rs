//! A small MCP server over stdio for toolshed's tests and benchmarks (not installed for users).
//!
//! `mcp-fixture-server [--mode MODE] [--tools N]`, where MODE is
//! - `ok` (default): tools `echo`, `add`, `fail` (an `isError` result), `slow` (sleeps),
//!   `crash` (exits mid-call), `quit` (answers, then exits 100 ms later), `image`, and `grow`
//!   (adds a tool and announces the change);
//! - `crash`: exits at once with a message on standard error;
//! - `hang`: reads its input and never answers;
//! - `broken-schema`: `echo`, plus `bad` whose input schema is not valid JSON Schema;
//! - `all-broken`: only tools whose input schemas are not valid JSON Schema;
//! - `rich`: `echo`, plus `rich`, which has a title, an output schema and every annotation, and
//!   answers with text, an embedded resource and structured content;
//! - `big`: `echo`, plus `image_of` and `blob_of`, which answer with an image, or an embedded
//!   binary resource, of `bytes` bytes (next to a line of text);
//! - `env`: `echo`, plus `env`, which returns the names of the server's environment variables,
//!   one a line, sorted.
//!
//! `--tools N` adds N synthetic tools with realistic schemas (`tool_0000`, ...);
//! `--start-delay-ms N` waits N ms before it reads anything (a slow start, as `npx -y` with a
//! cold cache).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, InitializeResult,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone)]
struct Fixture {
    tools: Arc<Mutex<Vec<Tool>>>,
}

fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn tool(name: &str, description: &str, schema: Value) -> Tool {
    Tool::new(name.to_string(), description.to_string(), Arc::new(object(schema)))
}

fn text_schema(field: &str, description: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "string", "description": description}}, "required": [field]})
}

fn synthetic(i: usize) -> Tool {
    let nouns = ["issue", "invoice", "dashboard", "container", "page", "record", "message", "branch", "alert", "user"];
    let verbs = ["list", "get", "create", "update", "delete", "search", "archive", "export"];
    let (noun, verb) = (nouns[i % nouns.len()], verbs[(i / nouns.len()) % verbs.len()]);
    tool(
        &format!("tool_{i:04}_{verb}_{noun}"),
        &format!(
            "{verb} a {noun} in the synthetic service number {i}; returns the {noun} as JSON with its id, owner, timestamps and current state."
        ),
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "description": format!("The {noun} id.")},
                "owner": {"type": "string", "description": "The account that owns it."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "At most this many results."},
                "state": {"type": "string", "enum": ["open", "closed", "all"], "description": "Filter by state."}
            },
            "required": ["id"]
        }),
    )
}

fn base_tools(mode: &str) -> Vec<Tool> {
    if mode == "all-broken" {
        return ["bad", "worse"]
            .map(|name| tool(name, "Has an invalid input schema.", json!({"type": "object", "required": "x"})))
            .into();
    }
    let mut tools = vec![tool("echo", "Returns the text it is given.", text_schema("text", "What to send back."))];
    if mode == "env" {
        tools.push(tool("env", "Returns the names of the server's environment variables.", json!({"type": "object"})));
        return tools;
    }
    if mode == "big" {
        let sized = |what: &str| json!({"type": "object", "properties": {"bytes": {"type": "integer", "description": format!("Size of the {what} in bytes.")}}, "required": ["bytes"]});
        tools.push(tool("image_of", "Returns a PNG image of the given size.", sized("image")));
        tools.push(tool("blob_of", "Returns an embedded binary resource of the given size.", sized("resource")));
        return tools;
    }
    if mode == "rich" {
        let rich = json!({
            "name": "rich",
            "title": "Rich Report",
            "description": "Returns a report as text, an embedded resource and structured content.",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]},
            "annotations": {"title": "Rich Report", "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false}
        });
        if let Ok(rich) = serde_json::from_value(rich) {
            tools.push(rich);
        }
        return tools;
    }
    if mode == "broken-schema" {
        tools.push(tool(
            "bad",
            "Has an input schema that is not valid JSON Schema.",
            json!({"type": "object", "properties": {"x": {"type": "strng"}}}),
        ));
        return tools;
    }
    tools.extend([
        tool(
            "add",
            "Adds two integers.",
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
        ),
        tool("fail", "Always fails with the given message.", text_schema("message", "The error message.")),
        tool(
            "slow",
            "Sleeps for ms milliseconds, then answers.",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        ),
        tool("crash", "Exits the server process in the middle of the call.", json!({"type": "object"})),
        tool("quit", "Answers, then exits the server process 100 ms later.", json!({"type": "object"})),
        tool("image", "Returns a tiny PNG image.", json!({"type": "object"})),
        tool("grow", "Adds a tool named `extra` and tells the client its tool list changed.", json!({"type": "object"})),
    ]);
    tools
}

fn arg<'a>(request: &'a CallToolRequestParams, key: &str) -> Option<&'a Value> {
    request.arguments.as_ref().and_then(|a| a.get(key))
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_server_info(Implementation::new("mcp-fixture-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools.lock().map(|t| t.clone()).unwrap_or_default();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = |key: &str| arg(&request, key).and_then(Value::as_str).unwrap_or_default().to_string();
        let result = match request.name.as_ref() {
            "echo" => CallToolResult::success(vec![ContentBlock::text(text("text"))]),
            "add" => {
                let n = |k: &str| arg(&request, k).and_then(Value::as_i64).unwrap_or(0);
                CallToolResult::success(vec![ContentBlock::text((n("a") + n("b")).to_string())])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text(text("message"))]),
            "slow" => {
                let ms = arg(&request, "ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                CallToolResult::success(vec![ContentBlock::text(format!("slept {ms} ms"))])
            }
            "crash" => {
                eprintln!("fixture: crashing in the middle of a call");
                std::process::exit(3);
            }
            "quit" => {
                tokio::spawn(async {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    eprintln!("fixture: quitting between calls");
                    std::process::exit(0);
                });
                CallToolResult::success(vec![ContentBlock::text("bye")])
            }
            "image" => {
                // The 8-byte PNG signature is enough for a client to pass through.
                CallToolResult::success(vec![ContentBlock::image("iVBORw0KGgo=", "image/png")])
            }
            "grow" => {
                if let Ok(mut tools) = self.tools.lock() {
                    tools.push(tool("extra", "A tool added at run time.", text_schema("text", "Anything.")));
                }
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("added extra")])
            }
            "env" => {
                let mut names: Vec<String> =
                    std::env::vars_os().map(|(name, _)| name.to_string_lossy().into_owned()).collect();
                names.sort();
                CallToolResult::success(vec![ContentBlock::text(names.join("\n"))])
            }
            "rich" => serde_json::from_value(json!({
                "content": [
                    {"type": "text", "text": "3 findings"},
                    {"type": "resource", "resource": {"uri": "file:///report.txt", "mimeType": "text/plain", "text": "the report"}}
                ],
                "structuredContent": {"count": 3}
            }))
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?,
            "image_of" | "blob_of" => {
                use base64::Engine;
                let bytes = arg(&request, "bytes").and_then(Value::as_u64).unwrap_or(0) as usize;
                let mut data = b"\x89PNG\r\n\x1a\n".to_vec();
                data.resize(bytes.max(data.len()), 0);
                data.truncate(bytes);
                let data = base64::engine::general_purpose::STANDARD.encode(data);
                let part = if request.name == "image_of" {
                    json!({"type": "image", "data": data, "mimeType": "image/png"})
                } else {
                    json!({"type": "resource", "resource": {"uri": "file:///big.bin", "mimeType": "application/octet-stream", "blob": data}})
                };
                serde_json::from_value(json!({"content": [{"type": "text", "text": format!("{bytes} bytes")}, part]}))
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            }
            "extra" => CallToolResult::success(vec![ContentBlock::text(format!("extra: {}", text("text")))]),
            name if name.starts_with("tool_") => {
                CallToolResult::success(vec![ContentBlock::text(format!("{name} called with {:?}", request.arguments))])
            }
            other => return Err(ErrorData::invalid_params(format!("no tool named {other}"), None)),
        };
        Ok(CallToolResponse::Complete(result))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let mode = value("--mode").unwrap_or_else(|| "ok".to_string());
    let extra: usize = value("--tools").and_then(|n| n.parse().ok()).unwrap_or(0);
    if let Some(ms) = value("--start-delay-ms").and_then(|n| n.parse().ok()) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    match mode.as_str() {
        "crash" => {
            eprintln!("fixture: crashing on purpose before the handshake");
            std::process::exit(2);
        }
        "hang" => {
            let mut sink = tokio::io::sink();
            let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut sink).await;
            std::future::pending::<()>().await;
        }
        _ => {}
    }
    let mut tools = base_tools(&mode);
    tools.extend((0..extra).map(synthetic));
    let server = Fixture { tools: Arc::new(Mutex::new(tools)) };
    match server.serve(rmcp::transport::stdio()).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => eprintln!("fixture: {e}"),
    }
}
