//! JSON-RPC 2.0 over a byte stream with LSP's `Content-Length` framing: requests with
//! deadlines, notifications, and the server's own requests and notifications handed to a
//! [`Handler`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio::time::Instant;
use toolshed_core::context::CancellationToken;

/// Largest message accepted from a server.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Longest header line accepted.
const MAX_HEADER_BYTES: usize = 8 * 1024;

/// JSON-RPC's "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;

/// Why a request got no result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// The connection is gone (the server exited or closed its output).
    #[error("the connection closed: {0}")]
    Closed(String),
    /// The deadline passed before the answer came.
    #[error("no answer in time")]
    Timeout,
    /// The server answered with an error.
    #[error("the server answered with error {code}: {message}")]
    Server {
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
    },
    /// The answer did not have the expected shape.
    #[error("the answer could not be read: {0}")]
    Decode(String),
}

/// What the server sends on its own initiative.
pub trait Handler: Send + Sync + 'static {
    /// A notification (`textDocument/publishDiagnostics`, `window/logMessage`, ...).
    fn notification(&self, method: &str, params: Value);
    /// A request; the answer is a result or an error code and message.
    fn request(&self, method: &str, params: Value) -> Result<Value, (i64, String)>;
}

type Pending = Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>;
type Writer = tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>;

/// One JSON-RPC connection. Cheap to clone; a background task reads the incoming messages.
#[derive(Clone)]
pub struct Connection {
    writer: Arc<Writer>,
    pending: Arc<Pending>,
    next_id: Arc<AtomicI64>,
    closed: CancellationToken,
    close_reason: Arc<Mutex<Option<String>>>,
}

impl Connection {
    /// Starts reading `input` in a background task; messages are written to `output`. Must be
    /// called inside a tokio runtime.
    pub fn start(
        input: impl AsyncRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
        handler: Arc<dyn Handler>,
    ) -> Connection {
        let conn = Connection {
            writer: Arc::new(tokio::sync::Mutex::new(Box::new(output))),
            pending: Arc::default(),
            next_id: Arc::new(AtomicI64::new(1)),
            closed: CancellationToken::new(),
            close_reason: Arc::default(),
        };
        let reader = conn.clone();
        tokio::spawn(async move {
            let reason = reader.read_loop(BufReader::new(input), handler).await;
            reader.close(reason);
        });
        conn
    }

    /// Cancelled once the connection is gone.
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<String> {
        self.close_reason.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Marks the connection closed and fails every request still waiting.
    pub fn close(&self, reason: String) {
        {
            let mut slot = self.close_reason.lock().unwrap_or_else(PoisonError::into_inner);
            if slot.is_none() {
                *slot = Some(reason.clone());
            }
        }
        self.closed.cancel();
        let waiting: Vec<_> = self.pending.lock().unwrap_or_else(PoisonError::into_inner).drain().collect();
        for (_, tx) in waiting {
            let _ = tx.send(Err(RpcError::Closed(reason.clone())));
        }
    }

    /// Sends a request and waits for its answer until `deadline`; a request that times out is
    /// cancelled with `$/cancelRequest`.
    pub async fn request(&self, method: &str, params: Value, deadline: Instant) -> Result<Value, RpcError> {
        if self.closed.is_cancelled() {
            return Err(self.closed_error());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id, tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(self.closed_error()),
            Err(_) => {
                self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
                let _ = self.notify("$/cancelRequest", json!({"id": id})).await;
                Err(RpcError::Timeout)
            }
        }
    }

    /// Sends a typed LSP request and decodes its result.
    pub async fn call<R: lsp_types::request::Request>(
        &self,
        params: R::Params,
        deadline: Instant,
    ) -> Result<R::Result, RpcError> {
        let params = serde_json::to_value(params).map_err(|e| RpcError::Decode(e.to_string()))?;
        let value = self.request(R::METHOD, params, deadline).await?;
        serde_json::from_value(value).map_err(|e| RpcError::Decode(format!("{}: {e}", R::METHOD)))
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), RpcError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Sends a typed LSP notification.
    pub async fn notify_typed<N: lsp_types::notification::Notification>(
        &self,
        params: N::Params,
    ) -> Result<(), RpcError> {
        let params = serde_json::to_value(params).map_err(|e| RpcError::Decode(e.to_string()))?;
        self.notify(N::METHOD, params).await
    }

    fn closed_error(&self) -> RpcError {
        RpcError::Closed(self.close_reason().unwrap_or_else(|| "closed".into()))
    }

    async fn send(&self, message: &Value) -> Result<(), RpcError> {
        if self.closed.is_cancelled() {
            return Err(self.closed_error());
        }
        let body = message.to_string();
        let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        framed.extend_from_slice(body.as_bytes());
        let mut writer = self.writer.lock().await;
        let written = async {
            writer.write_all(&framed).await?;
            writer.flush().await
        }
        .await;
        written.map_err(|e| {
            let reason = format!("writing to the server failed: {e}");
            self.close(reason.clone());
            RpcError::Closed(reason)
        })
    }

    async fn read_loop<R: AsyncRead + Unpin>(&self, mut input: BufReader<R>, handler: Arc<dyn Handler>) -> String {
        loop {
            let message = match read_message(&mut input).await {
                Ok(Some(message)) => message,
                Ok(None) => return "the server closed its output".into(),
                Err(e) => return e,
            };
            let method = message.get("method").and_then(Value::as_str).map(str::to_string);
            let id = message.get("id").cloned().filter(|id| !id.is_null());
            match (method, id) {
                (Some(method), Some(id)) => {
                    let params = message.get("params").cloned().unwrap_or(Value::Null);
                    let reply = match handler.request(&method, params) {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err((code, text)) => {
                            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}})
                        }
                    };
                    if let Err(e) = self.send(&reply).await {
                        return e.to_string();
                    }
                }
                (Some(method), None) => {
                    handler.notification(&method, message.get("params").cloned().unwrap_or(Value::Null));
                }
                (None, Some(id)) => self.answer(&id, &message),
                (None, None) => {}
            }
        }
    }

    fn answer(&self, id: &Value, message: &Value) {
        let Some(id) = id.as_i64() else { return };
        let Some(tx) = self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id) else { return };
        let answer = match message.get("error") {
            Some(error) => Err(RpcError::Server {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
            }),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = tx.send(answer);
    }
}

/// Reads one framed message; `None` at a clean end of the stream.
async fn read_message<R: AsyncRead + Unpin>(input: &mut BufReader<R>) -> Result<Option<Value>, String> {
    let mut length: Option<usize> = None;
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        let n = (&mut *input)
            .take(MAX_HEADER_BYTES as u64)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| format!("reading from the server failed: {e}"))?;
        if n == 0 {
            return if first { Ok(None) } else { Err("the server's output ended inside a message header".into()) };
        }
        first = false;
        if !line.ends_with(b"\n") {
            return Err("the server sent a header line that is too long".into());
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            break;
        }
        if let Some((name, value)) = text.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse().map_err(|_| format!("the server sent a bad header: {text}"))?);
        }
    }
    let length = length.ok_or("the server sent a message without Content-Length")?;
    if length > MAX_MESSAGE_BYTES {
        return Err(format!("the server sent a message of {length} bytes, more than the {MAX_MESSAGE_BYTES} allowed"));
    }
    let mut body = vec![0; length];
    input.read_exact(&mut body).await.map_err(|e| format!("the server's output ended inside a message: {e}"))?;
    serde_json::from_slice(&body).map(Some).map_err(|e| format!("the server sent a message that is not JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{DuplexStream, duplex};

    struct Recorder(Mutex<Vec<String>>);
    impl Handler for Recorder {
        fn notification(&self, method: &str, _params: Value) {
            self.0.lock().unwrap().push(method.to_string());
        }
        fn request(&self, method: &str, _params: Value) -> Result<Value, (i64, String)> {
            if method == "workspace/configuration" { Ok(json!([null])) } else { Err((METHOD_NOT_FOUND, "no".into())) }
        }
    }

    async fn write_framed(stream: &mut DuplexStream, value: Value) {
        let body = value.to_string();
        stream.write_all(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).await.unwrap();
    }

    async fn read_framed(stream: &mut BufReader<DuplexStream>) -> Value {
        read_message(stream).await.unwrap().unwrap()
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[tokio::test]
    async fn requests_get_their_answers_and_server_requests_are_answered() {
        let (client_out, server_in) = duplex(1 << 16);
        let (mut server_out, client_in) = duplex(1 << 16);
        let recorder = Arc::new(Recorder(Mutex::default()));
        let conn = Connection::start(client_in, client_out, recorder.clone());
        let mut server_in = BufReader::new(server_in);
        let asking = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request("hover", json!({}), soon()).await }
        });
        let request = read_framed(&mut server_in).await;
        assert_eq!(request["method"], "hover");
        // The server asks something of its own and notifies before answering.
        write_framed(&mut server_out, json!({"jsonrpc":"2.0","id":0,"method":"workspace/configuration","params":{}}))
            .await;
        write_framed(&mut server_out, json!({"jsonrpc":"2.0","id":7,"method":"unknown/thing"})).await;
        write_framed(&mut server_out, json!({"jsonrpc":"2.0","method":"window/logMessage","params":{}})).await;
        write_framed(&mut server_out, json!({"jsonrpc":"2.0","id":request["id"],"result":{"ok":true}})).await;
        assert_eq!(asking.await.unwrap().unwrap(), json!({"ok": true}));
        let reply = read_framed(&mut server_in).await;
        assert_eq!((reply["id"].clone(), reply["result"].clone()), (json!(0), json!([null])));
        let reply = read_framed(&mut server_in).await;
        assert_eq!(reply["error"]["code"], METHOD_NOT_FOUND);
        assert_eq!(*recorder.0.lock().unwrap(), ["window/logMessage"]);
    }

    #[tokio::test]
    async fn errors_timeouts_and_a_closed_stream_fail_requests_without_hanging() {
        let (client_out, server_in) = duplex(1 << 16);
        let (mut server_out, client_in) = duplex(1 << 16);
        let conn = Connection::start(client_in, client_out, Arc::new(Recorder(Mutex::default())));
        let mut server_in = BufReader::new(server_in);

        let asking = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request("x", json!(null), soon()).await }
        });
        let request = read_framed(&mut server_in).await;
        write_framed(
            &mut server_out,
            json!({"jsonrpc":"2.0","id":request["id"],"error":{"code":-32800,"message":"busy"}}),
        )
        .await;
        assert_eq!(asking.await.unwrap(), Err(RpcError::Server { code: -32800, message: "busy".into() }));

        let late = conn.request("slow", json!(null), Instant::now() + Duration::from_millis(50)).await;
        assert_eq!(late, Err(RpcError::Timeout));
        let _slow = read_framed(&mut server_in).await;
        let cancel = read_framed(&mut server_in).await;
        assert_eq!(cancel["method"], "$/cancelRequest");

        let waiting = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request("never", json!(null), soon()).await }
        });
        let _never = read_framed(&mut server_in).await;
        drop(server_out);
        let err = waiting.await.unwrap().unwrap_err();
        assert_eq!(err, RpcError::Closed("the server closed its output".into()));
        assert!(conn.closed().is_cancelled());
        assert!(matches!(conn.request("after", json!(null), soon()).await, Err(RpcError::Closed(_))));
    }

    #[tokio::test]
    async fn a_message_without_length_or_with_bad_json_closes_the_connection() {
        for bad in ["Content-Type: x\r\n\r\n{}", "Content-Length: 3\r\n\r\n{{{", "Content-Length: 999999999999\r\n\r\n"]
        {
            let (client_out, _server_in) = duplex(1 << 16);
            let (mut server_out, client_in) = duplex(1 << 16);
            let conn = Connection::start(client_in, client_out, Arc::new(Recorder(Mutex::default())));
            server_out.write_all(bad.as_bytes()).await.unwrap();
            tokio::time::timeout(Duration::from_secs(5), conn.closed().cancelled()).await.unwrap();
            assert!(conn.close_reason().unwrap().contains("server"), "{:?}", conn.close_reason());
        }
    }
}
