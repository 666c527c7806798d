//! Test support: a small HTTP/1.1 server on 127.0.0.1 whose replies a test scripts per
//! request, and an executor running the built-in tools through the full chain.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolshed_core::exec::{Executor, Session, ToolCall, ToolResult};
use toolshed_core::registry::Registry;

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// The path with its query string.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The path without the query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// A query parameter, percent-decoded.
    pub fn query(&self, key: &str) -> Option<String> {
        let url = reqwest::Url::parse(&format!("http://x{}", self.target)).ok()?;
        url.query_pairs().find(|(k, _)| k == key).map(|(_, v)| v.into_owned())
    }
}

/// How the body is sent.
pub enum Body {
    /// All at once, with a Content-Length.
    Full(Vec<u8>),
    /// Nothing at all for this long (not even the status line), then the bytes.
    AfterDelay(Duration, Vec<u8>),
    /// Headers and the first chunk at once, then one chunk per interval.
    Trickle { chunks: Vec<Vec<u8>>, interval: Duration },
    /// `total` bytes of `fill`, announced in Content-Length, written in 64 KiB pieces.
    Large { total: usize, fill: u8 },
}

/// A scripted reply.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Reply {
    pub fn new(status: u16) -> Self {
        Reply { status, headers: Vec::new(), body: Body::Full(Vec::new()) }
    }

    pub fn ok(content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Reply::new(200).header("Content-Type", content_type).body(body)
    }

    pub fn redirect(status: u16, location: &str) -> Self {
        Reply::new(status).header("Location", location)
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Body::Full(body.into());
        self
    }

    pub fn with(mut self, body: Body) -> Self {
        self.body = body;
        self
    }
}

type Handler = dyn Fn(&Request) -> Reply + Send + Sync;

/// A server on an ephemeral loopback port; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    pub async fn start(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let handler = handler.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, handler, seen).await;
                });
            }
        });
        Server { addr, requests, task }
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The same server reached as `localhost` (another host name for redirect tests).
    pub fn localhost_url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.addr.port())
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, handler: Arc<Handler>, seen: Arc<Mutex<Vec<Request>>>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let target = first.next().unwrap_or("").to_string();
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))).collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let request = Request { method, target, headers, body };
    let reply = handler(&request);
    seen.lock().unwrap().push(request);

    let reason = match reply.status {
        200 => "OK",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        404 => "Not Found",
        _ => "Status",
    };
    let head = |length: Option<usize>| {
        let mut head = format!("HTTP/1.1 {} {reason}\r\nConnection: close\r\n", reply.status);
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(length) = length {
            head.push_str(&format!("Content-Length: {length}\r\n"));
        }
        head.push_str("\r\n");
        head
    };
    match reply.body {
        Body::Full(bytes) => {
            stream.write_all(head(Some(bytes.len())).as_bytes()).await?;
            stream.write_all(&bytes).await?;
        }
        Body::AfterDelay(delay, bytes) => {
            tokio::time::sleep(delay).await;
            stream.write_all(head(Some(bytes.len())).as_bytes()).await?;
            stream.write_all(&bytes).await?;
        }
        Body::Trickle { chunks, interval } => {
            let total = chunks.iter().map(Vec::len).sum();
            stream.write_all(head(Some(total)).as_bytes()).await?;
            for (i, c) in chunks.iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(interval).await;
                }
                stream.write_all(c).await?;
                stream.flush().await?;
            }
        }
        Body::Large { total, fill } => {
            stream.write_all(head(Some(total)).as_bytes()).await?;
            let piece = vec![fill; 64 * 1024];
            let mut sent = 0;
            while sent < total {
                let n = piece.len().min(total - sent);
                stream.write_all(&piece[..n]).await?;
                sent += n;
            }
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}

/// An executor over `registry` rooted at `root`, with OpenCode's default rules (allow).
pub fn executor(registry: Registry, root: &Path) -> Executor {
    Executor::builder(registry, root.to_path_buf()).data_dir(root.join(".data")).build()
}

/// Runs one JSON call through the chain.
pub async fn call(executor: &Executor, tool: &str, args: serde_json::Value) -> ToolResult {
    let session = Session::new("test", "build");
    executor.call(&session, ToolCall::json("c1", tool, args)).await
}

/// Replaces the server's port in `text` with `PORT`, for stable snapshots.
pub fn redact_port(text: &str, addr: SocketAddr) -> String {
    text.replace(&addr.port().to_string(), "PORT")
}
