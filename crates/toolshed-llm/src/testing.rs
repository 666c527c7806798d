//! A fake model for tests: a real HTTP/1.1 server on loopback that answers each request with
//! the next scripted reply, written chunk by chunk (so a test can split events anywhere, even
//! inside a UTF-8 sequence, or break the stream off), and SSE builders for each wire format.
//! Enabled by the `testing` feature.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body, written one chunk at a time.
    pub chunks: Vec<Vec<u8>>,
    /// Pause before each chunk.
    pub delay: Duration,
    /// Close the connection after this many chunks, without finishing the body.
    pub break_after: Option<usize>,
    /// With `break_after`: reset the connection (TCP RST) instead of closing it.
    pub reset: bool,
}

impl Reply {
    /// A 200 SSE response of these events (each already framed, one chunk each).
    pub fn sse(events: Vec<String>) -> Reply {
        Reply {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks: events.into_iter().map(String::into_bytes).collect(),
            delay: Duration::ZERO,
            break_after: None,
            reset: false,
        }
    }

    /// An error status with a JSON body.
    pub fn error(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            chunks: vec![body.to_string().into_bytes()],
            delay: Duration::ZERO,
            break_after: None,
            reset: false,
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Re-cuts the body into chunks of `size` bytes (splitting events, lines and characters).
    pub fn split(mut self, size: usize) -> Reply {
        let body: Vec<u8> = self.chunks.concat();
        self.chunks = body.chunks(size.max(1)).map(<[u8]>::to_vec).collect();
        self
    }

    /// Waits this long before each chunk.
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// Breaks the connection after `chunks` chunks.
    pub fn break_after(mut self, chunks: usize) -> Reply {
        self.break_after = Some(chunks);
        self
    }

    /// Resets the connection (TCP RST, as a proxy or load balancer dropping it does) after
    /// `chunks` chunks.
    pub fn reset_after(mut self, chunks: usize) -> Reply {
        self.break_after = Some(chunks);
        self.reset = true;
        self
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct Received {
    /// The request line's path.
    pub path: String,
    /// Header names (lowercase) and values.
    pub headers: Vec<(String, String)>,
    /// The JSON body (Null if it was not JSON).
    pub body: Value,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }
}

/// Computes a reply from the request (a model that reacts to what it is sent).
pub type Handler = Arc<dyn Fn(&Received) -> Reply + Send + Sync>;

struct Shared {
    replies: VecDeque<Reply>,
    handler: Option<Handler>,
    received: Vec<Received>,
}

/// The fake model server; it stops when dropped.
pub struct FakeServer {
    addr: std::net::SocketAddr,
    shared: Arc<Mutex<Shared>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeServer {
    /// Starts a server on 127.0.0.1 that answers with `replies` in order (then HTTP 500).
    /// It runs on a thread of its own, so blocking tests and spawned processes can use it.
    pub fn start(replies: Vec<Reply>) -> std::io::Result<FakeServer> {
        FakeServer::launch(Shared { replies: replies.into(), handler: None, received: Vec::new() })
    }

    /// Starts a server that answers every request with what `handler` makes of it (called on
    /// the server's thread, one request at a time).
    pub fn with_handler(handler: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> std::io::Result<FakeServer> {
        FakeServer::launch(Shared { replies: VecDeque::new(), handler: Some(Arc::new(handler)), received: Vec::new() })
    }

    fn launch(shared: Shared) -> std::io::Result<FakeServer> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(shared));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let state = shared.clone();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let thread = std::thread::spawn(move || {
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                let accept = async {
                    while let Ok((socket, _)) = listener.accept().await {
                        tokio::spawn(serve(socket, state.clone()));
                    }
                };
                tokio::select! {
                    () = accept => {}
                    _ = stopped => {}
                }
            });
        });
        Ok(FakeServer { addr, shared, stop: Some(stop), thread: Some(thread) })
    }

    /// The API root to configure as `base_url` (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner).received.clone()
    }

    /// Scripted replies not yet used.
    pub fn remaining(&self) -> usize {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner).replies.len()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(mut socket: tokio::net::TcpStream, shared: Arc<Mutex<Shared>>) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let header_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
        match socket.read(&mut tmp).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.split("\r\n");
    let path = lines.next().and_then(|l| l.split(' ').nth(1)).unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize =
        headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    while buf.len() < header_end + length {
        match socket.read(&mut tmp).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    let body = serde_json::from_slice(&buf[header_end..header_end + length]).unwrap_or(Value::Null);
    let reply = {
        let mut s = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let received = Received { path, headers, body };
        let reply = match &s.handler {
            Some(handler) => Some(handler(&received)),
            None => s.replies.pop_front(),
        };
        s.received.push(received);
        reply
    };
    let reply = reply.unwrap_or_else(|| Reply::error(500, json!({"error": {"message": "no more scripted replies"}})));
    let mut head = format!("HTTP/1.1 {} X\r\nconnection: close\r\ntransfer-encoding: chunked\r\n", reply.status);
    for (n, v) in &reply.headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for (i, chunk) in reply.chunks.iter().enumerate() {
        if reply.break_after == Some(i) {
            if reply.reset {
                // An RST makes the peer's kernel throw away what it holds but the client has
                // not read yet (the head and chunks just written), so the client is given time
                // to read them first: a reset that lands earlier looks like a connection refused
                // before any answer, and the request is sent again.
                tokio::time::sleep(Duration::from_millis(500)).await;
                // Closing with a zero linger time sends RST instead of FIN.
                let _ = socket.set_zero_linger();
                drop(socket);
            } else {
                let _ = socket.shutdown().await;
            }
            return;
        }
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
        framed.extend_from_slice(chunk);
        framed.extend_from_slice(b"\r\n");
        if socket.write_all(&framed).await.is_err() || socket.flush().await.is_err() {
            return;
        }
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let _ = socket.shutdown().await;
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn named(event: &str, v: Value) -> String {
    format!("event: {event}\ndata: {v}\n\n")
}

/// Cuts `s` into three pieces at character boundaries (to stream arguments in fragments).
fn thirds(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    let (a, b) = (n / 3, 2 * n / 3);
    [&chars[..a], &chars[a..b], &chars[b..]].iter().map(|c| c.iter().collect()).collect()
}

/// SSE bodies in OpenAI Chat Completions format.
pub mod chat {
    use super::*;

    /// An answer of plain text, streamed in words.
    pub fn text(text: &str) -> Vec<String> {
        let mut events: Vec<String> = text
            .split_inclusive(' ')
            .map(|w| data(json!({"choices": [{"index": 0, "delta": {"content": w}}]})))
            .collect();
        events.push(data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})));
        events.push(data(json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10}})));
        events.push("data: [DONE]\n\n".into());
        events
    }

    /// `events` (from [`text`] or [`tool_calls`]) reporting these token counts instead.
    pub fn with_usage(events: Vec<String>, prompt_tokens: u64, completion_tokens: u64) -> Vec<String> {
        let usage = data(
            json!({"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}),
        );
        events.into_iter().map(|e| if e.contains("\"usage\"") { usage.clone() } else { e }).collect()
    }

    /// Tool calls `(id, name, arguments)`, each one's arguments split across three chunks.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Vec<String> {
        let mut events = Vec::new();
        for (i, (id, name, args)) in calls.iter().enumerate() {
            events.push(data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}
            ]}}]})));
            for piece in thirds(args) {
                events.push(data(json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": i, "function": {"arguments": piece}}
                ]}}]})));
            }
        }
        events.push(data(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})));
        events.push(data(json!({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 10}})));
        events.push("data: [DONE]\n\n".into());
        events
    }
}

/// SSE bodies in OpenAI Responses format.
pub mod responses {
    use super::*;

    fn completed() -> String {
        named(
            "response.completed",
            json!({"type": "response.completed", "response": {"id": "resp_1", "usage": {"input_tokens": 100, "output_tokens": 10}}}),
        )
    }

    /// An answer of plain text.
    pub fn text(text: &str) -> Vec<String> {
        let mut events =
            vec![named("response.created", json!({"type": "response.created", "response": {"id": "resp_1"}}))];
        for w in text.split_inclusive(' ') {
            events.push(named(
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "output_index": 0, "delta": w}),
            ));
        }
        events.push(completed());
        events
    }

    /// Calls `(call_id, name, input, custom?)`; inputs stream in three deltas.
    pub fn tool_calls(calls: &[(&str, &str, &str, bool)]) -> Vec<String> {
        let mut events = calls_from(0, calls);
        events.push(completed());
        events
    }

    /// The item a reasoning model sends: `id`, a summary and the encrypted content.
    pub fn reasoning_item(id: &str, summary: &str, encrypted: &str) -> Value {
        json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": summary}], "encrypted_content": encrypted})
    }

    /// A reasoning item (as [`reasoning_item`] builds it, its summary streamed first) followed
    /// by the calls, as a reasoning model answers.
    pub fn reasoning_then_tool_calls(reasoning: Value, calls: &[(&str, &str, &str, bool)]) -> Vec<String> {
        let added = json!({"type": "reasoning", "id": reasoning["id"], "summary": []});
        let mut events = vec![named(
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
        )];
        if let Some(text) = reasoning.pointer("/summary/0/text").and_then(Value::as_str) {
            events.push(named(
                "response.reasoning_summary_text.delta",
                json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": text}),
            ));
        }
        events.push(named(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
        ));
        events.extend(calls_from(1, calls));
        events.push(completed());
        events
    }

    fn calls_from(first_index: usize, calls: &[(&str, &str, &str, bool)]) -> Vec<String> {
        let mut events = Vec::new();
        for (n, (id, name, input, custom)) in calls.iter().enumerate() {
            let i = first_index + n;
            let (kind, field, delta) = if *custom {
                ("custom_tool_call", "input", "response.custom_tool_call_input.delta")
            } else {
                ("function_call", "arguments", "response.function_call_arguments.delta")
            };
            events.push(named(
                "response.output_item.added",
                json!({"type": "response.output_item.added", "output_index": i, "item": {"type": kind, "call_id": id, "name": name, field: ""}}),
            ));
            for piece in thirds(input) {
                events.push(named(delta, json!({"type": delta, "output_index": i, "delta": piece})));
            }
            events.push(named(
                "response.output_item.done",
                json!({"type": "response.output_item.done", "output_index": i, "item": {"type": kind, "call_id": id, "name": name, field: input}}),
            ));
        }
        events
    }
}

/// SSE bodies in Anthropic Messages format.
pub mod anthropic {
    use super::*;

    fn start() -> String {
        named(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 100, "output_tokens": 1}}}),
        )
    }

    fn stop(reason: &str) -> Vec<String> {
        vec![
            named(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 10}}),
            ),
            named("message_stop", json!({"type": "message_stop"})),
        ]
    }

    /// An answer of plain text.
    pub fn text(text: &str) -> Vec<String> {
        let mut events = vec![
            start(),
            named(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
        ];
        for w in text.split_inclusive(' ') {
            events.push(named(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": w}}),
            ));
        }
        events.push(named("content_block_stop", json!({"type": "content_block_stop", "index": 0})));
        events.extend(stop("end_turn"));
        events
    }

    /// Tool uses `(id, name, input JSON)`; inputs stream as three `input_json_delta`s.
    pub fn tool_calls(calls: &[(&str, &str, &str)]) -> Vec<String> {
        let mut events = vec![start(), named("ping", json!({"type": "ping"}))];
        for (i, (id, name, input)) in calls.iter().enumerate() {
            events.push(named(
                "content_block_start",
                json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ));
            for piece in thirds(input) {
                events.push(named(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": piece}}),
                ));
            }
            events.push(named("content_block_stop", json!({"type": "content_block_stop", "index": i})));
        }
        events.extend(stop("tool_use"));
        events
    }
}
