//! The MCP server: serves an agent's visible tools to any MCP client, over stdio or streamable
//! HTTP. Every call runs through the execution chain (validation, permissions, limits), so an
//! MCP client gets exactly the rules a toolshed agent gets. An `ask` becomes an elicitation when
//! the client supports it; otherwise `[mcp_server] ask` decides. Failed calls set `isError`.
//!
//! It speaks MCP up to 2025-11-25, the stateful revision: HTTP clients get a session, which
//! keeps "always" approvals and tools found through `tool_search` between calls, and lets the
//! server ask the client questions (elicitation) mid-call.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{ElicitationError, RequestContext};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio_util::sync::CancellationToken;
use toolshed_core::config::McpAsk;
use toolshed_core::exec::{Executor, Session, ToolCall};
use toolshed_core::permission::{ApprovalRequest, Approver, Reply};
use toolshed_core::registry::{Registry, View};
use toolshed_core::render::{WireFormat, render_one};
use toolshed_core::tool::{BoxFuture, Exposure, ToolSpec};

use crate::convert;

/// The newest MCP revision served (the last one with sessions and server-to-client requests).
pub const PROTOCOL: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// Connected clients by toolshed session id, for elicitation and list-changed notices.
#[derive(Clone, Default)]
pub struct Peers(Arc<Mutex<HashMap<String, Peer<RoleServer>>>>);

impl Peers {
    fn insert(&self, session: &str, peer: Peer<RoleServer>) {
        let mut peers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Those whose session ended (closed, or timed out) go.
        peers.retain(|_, p| !p.is_transport_closed());
        peers.insert(session.to_string(), peer);
    }

    fn get(&self, session: &str) -> Option<Peer<RoleServer>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get(session).cloned()
    }

    fn all(&self) -> Vec<Peer<RoleServer>> {
        let mut peers = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        peers.retain(|_, p| !p.is_transport_closed());
        peers.values().cloned().collect()
    }
}

/// Answers `ask` by asking the MCP client's user (elicitation), or by `[mcp_server] ask` when the
/// client cannot ask.
pub struct ElicitingApprover {
    peers: Peers,
    fallback: McpAsk,
}

/// Why an `ask` is rejected when the client cannot be asked; the model reads this.
pub const CANNOT_ASK: &str = "The MCP client cannot ask its user (it does not support elicitation), and toolshed's [mcp_server] ask setting is \"reject\". Ask the user to allow this in the [permission] rules of toolshed.toml, or to set [mcp_server] ask = \"allow\"";

/// The answer a user gives in the approval form (only flat string fields: what elicitation
/// forms allow).
#[derive(Deserialize, JsonSchema)]
pub struct ApprovalAnswer {
    /// `once` runs this call, `always` also allows the same for the rest of the session, `reject` refuses.
    #[schemars(extend("enum" = ["once", "always", "reject"]))]
    pub decision: String,
    /// Optional: what the agent should do instead, when rejecting.
    #[serde(default)]
    pub feedback: String,
}

rmcp::elicit_safe!(ApprovalAnswer);

impl ElicitingApprover {
    /// An approver for the clients in `peers`.
    pub fn new(peers: Peers, fallback: McpAsk) -> Self {
        ElicitingApprover { peers, fallback }
    }

    fn fallback(&self, request: &ApprovalRequest) -> Reply {
        match self.fallback {
            McpAsk::Allow => toolshed_core::permission::blanket_reply(request),
            McpAsk::Reject => Reply::Reject(Some(CANNOT_ASK.to_string())),
        }
    }
}

impl Approver for ElicitingApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let Some(peer) = self.peers.get(&request.session_id) else { return self.fallback(request) };
            if peer.supported_elicitation_modes().is_empty() {
                return self.fallback(request);
            }
            let message = format!(
                "The agent wants to call `{}`, which needs permission `{}` for: {}. Allow it?",
                request.tool,
                request.request.permission,
                request.request.patterns.join(", ")
            );
            match peer.elicit::<ApprovalAnswer>(message).await {
                Ok(Some(answer)) => match answer.decision.as_str() {
                    "once" => Reply::Once,
                    "always" => Reply::Always,
                    _ => Reply::Reject(Some(answer.feedback).filter(|f| !f.trim().is_empty())),
                },
                Ok(None) | Err(ElicitationError::UserDeclined | ElicitationError::UserCancelled) => {
                    Reply::Reject(Some("the user declined".to_string()))
                }
                Err(e) => Reply::Reject(Some(format!("asking the MCP client's user failed ({e})"))),
            }
        })
    }
}

/// What every session of one `mcp serve` shares: the executor (replaced when the tool set
/// changes), the agent whose tools are served, and the connected clients.
pub struct Exported {
    executor: RwLock<Arc<Executor>>,
    agent: String,
    peers: Peers,
    next_session: AtomicU64,
}

impl Exported {
    /// Serves `executor`'s registry as `agent`; `peers` must be the set the executor's
    /// [`ElicitingApprover`] asks through.
    pub fn new(executor: Executor, agent: impl Into<String>, peers: Peers) -> Arc<Exported> {
        Arc::new(Exported {
            executor: RwLock::new(Arc::new(executor)),
            agent: agent.into(),
            peers,
            next_session: AtomicU64::new(1),
        })
    }

    fn executor(&self) -> Arc<Executor> {
        self.executor.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Serves `registry` from now on (calls already running finish on the old one) and tells
    /// every client that the tool list changed.
    pub async fn replace_registry(&self, registry: Registry) {
        let next = Arc::new(self.executor().with_registry(registry));
        *self.executor.write().unwrap_or_else(PoisonError::into_inner) = next;
        for peer in self.peers.all() {
            let _ = peer.notify_tool_list_changed().await;
        }
    }

    /// A handler for one client connection, with its own toolshed session.
    pub fn session(self: &Arc<Self>) -> McpSession {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed);
        let id = format!("mcp-{}-{n}", std::process::id());
        McpSession { shared: self.clone(), session: Session::new(id, self.agent.clone()) }
    }

    /// Serves one client over standard input and output until it disconnects. A line that is
    /// not JSON is answered with JSON-RPC's parse error (rmcp would drop it, and a client
    /// whose request was cut short would wait for its answer forever).
    pub async fn serve_stdio(self: &Arc<Self>) -> Result<(), String> {
        let (input, output, written) = checked_lines(tokio::io::stdin(), tokio::io::stdout());
        let running = self.session().serve((input, output)).await.map_err(|e| e.to_string())?;
        running.waiting().await.map_err(|e| e.to_string())?;
        let _ = written.await;
        Ok(())
    }

    /// Serves streamable HTTP on `listener` (path-independent) until `cancel` fires.
    ///
    /// Against DNS rebinding (the spec's "servers MUST validate the Origin header"), only
    /// requests addressed to a loopback host are answered, and a request that carries an
    /// `Origin` must come from a loopback origin ([`LOCAL_ORIGINS`]); anything else gets 403.
    /// Clients that are not browsers send no `Origin` and are not affected. A `DELETE` that
    /// ends a session is answered 204 No Content.
    ///
    /// With a `token` ([`token_digest`] of it), every request must carry `Authorization: Bearer
    /// TOKEN` (else 401): any user of the machine can reach a loopback port.
    pub async fn serve_http(
        self: &Arc<Self>,
        listener: tokio::net::TcpListener,
        cancel: CancellationToken,
        token: Option<[u8; 32]>,
    ) {
        let shared = self.clone();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_allowed_origins(LOCAL_ORIGINS)
            .enforce_origin_validation()
            .with_cancellation_token(cancel.child_token());
        let sessions = Arc::new(LocalSessionManager::default());
        let service = StreamableHttpService::new(move || Ok(shared.session()), sessions.clone(), config);
        // rmcp answers a session-ending `DELETE` with 202 Accepted; the session is closed by
        // then, not queued, so the answer is 204 No Content; and 404 for a session that is
        // not there (never was, or already ended), as for any other request naming it.
        let service = hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let (service, sessions) = (service.clone(), sessions.clone());
            async move {
                if let Some(digest) = &token
                    && !authorized(request.headers(), digest)
                {
                    return Ok::<_, std::convert::Infallible>(unauthorized());
                }
                let delete = request.method() == http::Method::DELETE;
                let named = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
                if delete
                    && let Some(id) = named
                    && !rmcp::transport::streamable_http_server::session::SessionManager::has_session(
                        sessions.as_ref(),
                        &id.into(),
                    )
                    .await
                    .unwrap_or(true)
                {
                    return Ok::<_, std::convert::Infallible>(plain(
                        http::StatusCode::NOT_FOUND,
                        "Not Found: no such session",
                    ));
                }
                // A body is read whole within BODY_TIMEOUT: one that trickles, or stops after
                // its head, cannot hold a connection's slot.
                let mut response = if request.method() == http::Method::POST {
                    let (parts, body) = request.into_parts();
                    let limited = http_body_util::Limited::new(body, MAX_BODY);
                    match tokio::time::timeout(BODY_TIMEOUT, http_body_util::BodyExt::collect(limited)).await {
                        Err(_) => {
                            return Ok(plain(
                                http::StatusCode::REQUEST_TIMEOUT,
                                "Request Timeout: the body did not arrive within 30 s",
                            ));
                        }
                        Ok(Err(_)) => {
                            return Ok(plain(
                                http::StatusCode::PAYLOAD_TOO_LARGE,
                                "Payload Too Large: a request body is at most 4 MiB",
                            ));
                        }
                        Ok(Ok(body)) => {
                            let body = body.to_bytes();
                            // What rmcp would answer 415 (not JSON) or without an id: the
                            // JSON-RPC error, with 400, as over stdio.
                            if let Err(refused) = check_message(&body) {
                                return Ok(refused.as_http(&body));
                            }
                            service.handle(http::Request::from_parts(parts, http_body_util::Full::new(body))).await
                        }
                    }
                } else {
                    service.handle(request).await
                };
                if delete && response.status() == http::StatusCode::ACCEPTED {
                    *response.status_mut() = http::StatusCode::NO_CONTENT;
                }
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        // At most this many connections at once; one more is told so (503) and closed.
        let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = cancel.cancelled() => return,
            };
            let Ok((mut stream, _)) = accepted else {
                // Out of descriptors (or another failure that would fail again at once): a
                // pause, not a loop that spins a core.
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            };
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                tokio::spawn(async move {
                    let busy = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 65\r\n\r\nService Unavailable: toolshed serves 512 connections at most now\n";
                    let _ = tokio::time::timeout(HEADER_TIMEOUT, stream.write_all(busy.as_bytes())).await;
                });
                continue;
            };
            let service = service.clone();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                // A connection that sends no whole request head in time is closed: idle or slow
                // ones cannot hold the slots.
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .serve_connection(io, service)
                    .await;
                drop(slot);
            });
        }
    }
}

/// The most connections `mcp serve --http` serves at once (an event stream a client keeps open
/// holds one).
const MAX_CONNECTIONS: usize = 512;

/// How long a request's body may take to arrive, whole.
const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// The largest request body taken (rmcp's own limit).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// The SHA-256 of a bearer token: what `mcp serve --http` keeps and compares, so that the file
/// it keeps holds nothing a reader could send.
pub fn token_digest(token: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(ring::digest::digest(&ring::digest::SHA256, token).as_ref());
    out
}

/// Whether `headers` carry `Authorization: Bearer TOKEN` (the scheme in any case) for the token
/// whose digest is `digest`, compared in a time that does not depend on how much matches.
fn authorized(headers: &http::HeaderMap, digest: &[u8; 32]) -> bool {
    let Some(value) = headers.get(http::header::AUTHORIZATION).map(http::HeaderValue::as_bytes) else { return false };
    let Some((scheme, given)) = value.split_at_checked(7) else { return false };
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return false;
    }
    token_digest(given).iter().zip(digest).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
}

/// The answer to a request without the token.
fn unauthorized() -> HttpAnswer {
    let mut refused = plain(
        http::StatusCode::UNAUTHORIZED,
        "Unauthorized: send the header `Authorization: Bearer TOKEN`, with the token that `toolshed mcp serve --http` named when it started\n",
    );
    refused
        .headers_mut()
        .insert(http::header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer realm=\"toolshed\""));
    refused
}

/// A plain-text answer.
fn plain(status: http::StatusCode, text: &'static str) -> HttpAnswer {
    answer(status, "text/plain", text.into())
}

/// An answer toolshed writes itself, rmcp's body type.
type HttpAnswer = http::Response<http_body_util::combinators::BoxBody<hyper::body::Bytes, std::convert::Infallible>>;

/// An answer of `status` with a body of `kind`.
fn answer(status: http::StatusCode, kind: &'static str, body: String) -> HttpAnswer {
    http::Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, kind)
        .body(http_body_util::BodyExt::boxed(http_body_util::Full::new(hyper::body::Bytes::from(body))))
        .unwrap_or_default()
}

/// How long a connection may take to send a request's head (also: to start the next one).
const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The pause after a failed accept.
const ACCEPT_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// The origins a browser page may call `mcp serve --http` from: loopback ones, any port.
pub const LOCAL_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// Binds `addr` for [`Exported::serve_http`].
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

/// One client's connection: its session keeps approvals and found tools.
#[derive(Clone)]
pub struct McpSession {
    shared: Arc<Exported>,
    session: Session,
}

impl McpSession {
    /// The tools this session's client is shown: the agent's direct tools (plus `tool_search`
    /// when something is deferred), in MCP's `tools/list` format.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.listed(|spec| serde_json::from_value(render_one(WireFormat::Mcp, spec)).ok())
    }

    /// The names of the tools [`McpSession::tools`] shows: the only ones the client may call,
    /// as a model may call only the tools it was sent.
    pub fn offered(&self) -> Arc<[String]> {
        self.listed(|spec| Some(spec.name.clone())).into()
    }

    /// `make` of each tool this session's client is shown.
    fn listed<T>(&self, make: impl Fn(&ToolSpec) -> Option<T>) -> Vec<T> {
        let executor = self.shared.executor();
        let found = self.session.found();
        let view = View { agent: &self.shared.agent, model: None, found: Some(&found) };
        executor
            .registry()
            .exposed(&view)
            .into_iter()
            .filter(|v| v.exposure == Exposure::Direct)
            .filter_map(|v| make(v.spec()))
            .collect()
    }
}

impl ServerHandler for McpSession {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().enable_tool_list_changed().build())
            .with_protocol_version(PROTOCOL)
            .with_server_info(Implementation::new("toolshed", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "toolshed's coding tools (files, search, patches, shell), confined to one worktree and governed by its permission rules. Paths may be relative to toolshed's working directory, or absolute. Independent calls can run in parallel. If a tool you need is missing and tool_search is among the tools, call it.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&PROTOCOL))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        self.shared.peers.insert(self.session.id(), context.peer.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or_else(|| Value::Object(Default::default()));
        let id = serde_json::to_string(&context.id).unwrap_or_default();
        // The client may call only what it was shown (a hidden tool, the other model family's
        // edit tool, or a deferred tool not yet found are refused, with what to call instead).
        let call = ToolCall::json(id.trim_matches('"'), request.name.as_ref(), args)
            .with_cancel(context.ct.clone())
            .with_offered(self.offered());
        let found_before = self.session.found().len();
        let result = self.shared.executor().call(&self.session, call).await;
        if self.session.found().len() != found_before {
            let _ = context.peer.notify_tool_list_changed().await;
        }
        Ok(CallToolResponse::Complete(convert::to_mcp(&result)))
    }

    /// A standard method whose params did not parse lands here: answer "invalid params" with
    /// the reason rather than "method not found".
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = request.method.as_str();
        let problem = match method {
            "tools/call" => match request.params_as::<CallToolRequestParams>() {
                Ok(None) => Some("params are missing: send {\"name\": TOOL, \"arguments\": {...}}".to_string()),
                Ok(Some(_)) => None,
                Err(e) => Some(format!("{e}; send {{\"name\": TOOL, \"arguments\": {{...}}}}")),
            },
            "tools/list" => match request.params_as::<PaginatedRequestParams>() {
                Err(e) => Some(e.to_string()),
                Ok(_) => None,
            },
            "initialize" => match request.params_as::<InitializeRequestParams>() {
                Ok(None) => Some("params are missing".to_string()),
                Ok(Some(_)) => None,
                Err(e) => Some(e.to_string()),
            },
            _ => None,
        };
        Err(match problem {
            Some(problem) => ErrorData::invalid_params(format!("invalid params for {method}: {problem}"), None),
            None => ErrorData::new(ErrorCode::METHOD_NOT_FOUND, format!("unknown method `{method}`"), None),
        })
    }
}

/// Puts a line filter between a client's byte streams and rmcp: lines that are JSON go on to
/// rmcp (the returned reader); any other line is answered with a parse error, written
/// between rmcp's messages (the returned writer goes to `client_out` a whole line at a time).
/// The handle ends once everything rmcp wrote has reached `client_out`.
/// Why a line is no message rmcp can take: the JSON-RPC error to answer it with, and the id
/// to answer (the request's when it has a valid one, else null).
#[derive(Debug, PartialEq)]
struct Refused {
    code: i64,
    message: &'static str,
    reason: String,
    id: Value,
}

impl Refused {
    /// The JSON-RPC error answering it.
    fn answer(&self, shown: &[u8]) -> Value {
        let text = String::from_utf8_lossy(shown);
        let shown: String = text.trim_end().chars().take(200).collect();
        serde_json::json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": self.message, "data": {"line": shown, "reason": self.reason}},
        })
    }

    /// The same as an HTTP answer: 400 with the JSON-RPC error.
    fn as_http(&self, shown: &[u8]) -> HttpAnswer {
        answer(http::StatusCode::BAD_REQUEST, "application/json", self.answer(shown).to_string())
    }
}

/// Checks one line the client sent before rmcp sees it. rmcp drops a line it cannot read (bytes
/// that are not UTF-8, a lone surrogate escape, nesting past its limit), and answers a message
/// of the wrong shape without an `id`: either way the client waits forever. So the line must be
/// one JSON object, fully parsed, with `"jsonrpc": "2.0"`, and a request (a string `method`, an
/// id that is a string or an integer, if any, and params that are an object, if any) or an
/// answer to one of the server's requests (an id and a `result` or `error`).
fn check_message(line: &[u8]) -> Result<(), Refused> {
    let refused = |code, message, reason: String, id: Value| Refused { code, message, reason, id };
    let text = std::str::from_utf8(line)
        .map_err(|e| refused(-32700, "Parse error", format!("bytes that are not UTF-8: {e}"), Value::Null))?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| refused(-32700, "Parse error", e.to_string(), Value::Null))?;
    let Value::Object(message) = value else {
        return Err(refused(-32600, "Invalid Request", "a JSON-RPC message is one JSON object".into(), Value::Null));
    };
    let id = message.get("id").cloned();
    let valid_id = match &id {
        None => true,
        Some(Value::String(_)) => true,
        Some(Value::Number(n)) => n.is_i64() || n.is_u64(),
        Some(_) => false,
    };
    let answer_id = if valid_id { id.clone().unwrap_or(Value::Null) } else { Value::Null };
    if !valid_id {
        return Err(refused(-32600, "Invalid Request", "`id` must be a string or an integer".into(), Value::Null));
    }
    if message.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err(refused(-32600, "Invalid Request", "`jsonrpc` must be \"2.0\"".into(), answer_id));
    }
    match message.get("method") {
        Some(Value::String(_)) => match message.get("params") {
            None | Some(Value::Object(_)) => Ok(()),
            Some(_) => Err(refused(-32602, "Invalid params", "MCP's `params` are an object".into(), answer_id)),
        },
        Some(_) => Err(refused(-32600, "Invalid Request", "`method` must be a string".into(), answer_id)),
        None if id.is_some() && (message.contains_key("result") || message.contains_key("error")) => Ok(()),
        None => Err(refused(
            -32600,
            "Invalid Request",
            "a message has a `method` (a request or notification), or an `id` with a `result` or `error` (an answer)"
                .into(),
            answer_id,
        )),
    }
}

fn checked_lines<R, W>(client_in: R, mut client_out: W) -> (DuplexStream, DuplexStream, tokio::task::JoinHandle<()>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    const BUFFER: usize = 64 * 1024;
    let (rmcp_in, mut to_rmcp) = tokio::io::duplex(BUFFER);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(BUFFER);
    let (errors, mut parse_errors) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        let mut lines = BufReader::new(client_in);
        let mut line = Vec::new();
        loop {
            match toolshed_core::lines::read_line(&mut lines, &mut line, toolshed_core::lines::MAX_LINE).await {
                Ok(toolshed_core::lines::Line::End) | Err(_) => break,
                Ok(toolshed_core::lines::Line::Whole) => {}
                // Not held whole: a line that never ends would take the memory.
                Ok(toolshed_core::lines::Line::TooLong) => {
                    let refused = Refused {
                        code: -32600,
                        message: "Invalid Request",
                        reason: format!("a message is at most {} MiB", toolshed_core::lines::MAX_LINE >> 20),
                        id: Value::Null,
                    };
                    let _ = errors.send(format!("{}\n", refused.answer(&line[..200.min(line.len())])).into_bytes());
                    continue;
                }
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // Bytes that are not UTF-8 inside a string pass a parse that skips strings; a JSON
            // value that is no object (`null`, `5`, a batch, which MCP no longer has) is no
            // message, and rmcp's answer to one lacks the `id` JSON-RPC requires.
            match check_message(&line) {
                Ok(()) => {
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    if to_rmcp.write_all(&line).await.is_err() {
                        break;
                    }
                }
                Err(refused) => {
                    let answer = refused.answer(&line);
                    let _ = errors.send(format!("{answer}\n").into_bytes());
                }
            }
        }
        // Dropping the stream is rmcp's end of input.
    });
    let written = tokio::spawn(async move {
        let mut from_rmcp = BufReader::new(from_rmcp);
        let mut message = Vec::new();
        loop {
            tokio::select! {
                // read_until keeps what it read in `message` when the other branch wins.
                read = from_rmcp.read_until(b'\n', &mut message) => {
                    if !matches!(read, Ok(n) if n > 0) || !message.ends_with(b"\n") {
                        let _ = client_out.write_all(&message).await;
                        break;
                    }
                    if client_out.write_all(&message).await.is_err() || client_out.flush().await.is_err() {
                        return;
                    }
                    message.clear();
                }
                Some(answer) = parse_errors.recv() => {
                    if client_out.write_all(&answer).await.is_err() || client_out.flush().await.is_err() {
                        return;
                    }
                }
            }
        }
        while let Ok(answer) = parse_errors.try_recv() {
            let _ = client_out.write_all(&answer).await;
        }
        let _ = client_out.flush().await;
    });
    (rmcp_in, rmcp_out, written)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::check_message;

    #[test]
    fn lines_rmcp_would_drop_or_answer_without_an_id_are_refused_with_the_id_they_have() {
        let code = |line: &str| check_message(line.as_bytes()).err().map(|r| (r.code, r.id));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#), None);
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"sur\ud800","method":"x"}"#), Some((-32700, Value::Null)));
        assert_eq!(code(&format!("{}1{}", "[".repeat(200), "]".repeat(200))), Some((-32700, Value::Null)));
        assert_eq!(code(r#"{"foo":1}"#), Some((-32600, Value::Null)));
        assert_eq!(code(r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#), Some((-32600, json!(7))));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#), Some((-32600, Value::Null)));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#), Some((-32600, Value::Null)));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"pa","method":"tools/list","params":[1]}"#),
            Some((-32602, json!("pa")))
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":"m","method":5}"#), Some((-32600, json!("m"))));
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":3}"#), Some((-32600, json!(3))));
        assert_eq!(code("null"), Some((-32600, Value::Null)));
    }
}
