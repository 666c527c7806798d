//! `webfetch`: read one URL. HTML becomes Markdown (or plain text), text and JSON pass
//! through, images come back as attachments, other binary types are refused with a reason.
//!
//! The body is streamed and cut at [`MAX_BODY`]; redirects are followed by hand (at most
//! [`MAX_REDIRECTS`]) and only on the same host, so a redirect elsewhere is shown to the model
//! (and to the permission rules, through a new call) instead of followed silently. Loopback and
//! private addresses are allowed: the permission rules on URLs (the pattern is the URL) are the
//! control.
//!
//! gzip and deflate bodies are decoded as they arrive, the cap counting decoded bytes. HTML is
//! converted on a thread of its own with a large stack, under a budget (the call's deadline plus
//! [`CONVERT_GRACE`], and its cancellation), so a hostile page can neither overflow a stack nor
//! keep a core busy after the call is over.

use std::time::Duration;

use reqwest::header::{ACCEPT, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use reqwest::{StatusCode, Url};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::time::{Instant, timeout_at};
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Attachment, ToolFlags, ToolSpec, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};

use super::dom::{Budget, Stop, TAG_DEPTH};
use super::encoding::{self, Coding, Decoder};
use super::html;
use super::{describe_error, human_bytes};

/// The permission key (the pattern is the URL).
const PERMISSION: &str = "webfetch";
/// How much of a body is read: 5 MiB.
pub const MAX_BODY: usize = 5 * 1024 * 1024;
/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 10;
/// The timeout when the call does not set one.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// The largest timeout a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 120_000;
/// How much of an error response is shown to the model.
const ERROR_EXCERPT_CHARS: usize = 600;
/// How much of an error response is converted to find those characters.
const ERROR_EXCERPT_BYTES: usize = 64 * 1024;
/// How long converting HTML may go on past the call's own deadline (the execution chain's
/// backstop is 5 s past it).
pub const CONVERT_GRACE: Duration = Duration::from_secs(3);
/// The stack of the converting thread. The DOM is at most [`MAX_DEPTH`](super::dom::MAX_DEPTH) deep, which needs about
/// 1 MiB of stack in a debug build; this leaves a wide margin and is only reserved, not used.
const CONVERT_STACK: usize = 16 * 1024 * 1024;

const DESCRIPTION: &str = "Fetches an http(s) URL: HTML as Markdown (or as `format` says), other text as is, images as images; other binary is refused. Reads at most 5 MiB. Redirects are followed on the same host only; one to another host is reported for you to fetch. Cannot log in or run JavaScript.";

/// How an HTML page is returned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "")]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)] // variant docs would turn the schema's plain `enum` into a `oneOf`
pub enum Format {
    // Variants without doc comments so the schema is a plain `enum` of the three names.
    #[default]
    Markdown,
    Text,
    Html,
}

impl Format {
    fn accept(self) -> &'static str {
        match self {
            Format::Markdown => "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.5",
            Format::Text => "text/plain, text/html;q=0.9, application/json;q=0.8, */*;q=0.5",
            Format::Html => "text/html, application/xhtml+xml;q=0.9, */*;q=0.5",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Format::Markdown => "Markdown",
            Format::Text => "plain text",
            Format::Html => "HTML source",
        }
    }
}

/// Arguments of `webfetch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchArgs {
    /// Absolute, http:// or https://.
    #[schemars(description = "")]
    pub url: String,
    /// How to return an HTML page.
    #[schemars(description = "")]
    #[serde(default)]
    pub format: Format,
    /// Give up after this long.
    #[schemars(description = "")]
    #[schemars(range(min = 1, max = 120000))]
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    DEFAULT_TIMEOUT_MS
}

/// The `webfetch` tool.
#[derive(Clone, Copy, Debug, Default)]
pub struct WebFetch;

impl TypedTool for WebFetch {
    type Args = WebFetchArgs;

    fn name(&self) -> &str {
        "webfetch"
    }

    fn description(&self) -> String {
        DESCRIPTION.to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::READ_ONLY
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &WebFetchArgs,
        _ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let url = parse_url(&args.url)?;
        Ok(vec![request(&spec.permission, &url)])
    }

    fn time_limit(&self, args: &WebFetchArgs) -> Option<Duration> {
        // The tool's own timeout fires first and says what was slow; this is the backstop.
        Some(timeout(args) + Duration::from_secs(5))
    }

    async fn run(&self, args: WebFetchArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let url = parse_url(&args.url)?;
        let format = args.format;
        let limit = timeout(&args);
        let fetched = fetch(&ctx, url, format, Instant::now() + limit, limit).await?;
        match fetched {
            Fetched::Response(response) => render(response, format, &ctx).await,
            Fetched::OtherHost { from, to, status, hops } => Ok(other_host(&from, &to, status, &hops)),
        }
    }
}

fn timeout(args: &WebFetchArgs) -> Duration {
    Duration::from_millis(args.timeout_ms.clamp(1, MAX_TIMEOUT_MS))
}

/// The permission request for fetching `url`: the pattern is the URL; "always" approves its
/// whole origin (`https://host/*`), not every URL.
fn request(permission: &str, url: &Url) -> PermissionRequest {
    PermissionRequest::new(permission, [url.as_str()])
        .with_always([format!("{}/*", url.origin().ascii_serialization())])
}

/// Parses and checks the URL a model sent.
pub fn parse_url(text: &str) -> Result<Url, ToolError> {
    let text = text.trim();
    let url = Url::parse(text).map_err(|e| {
        // Only what would be a URL with a scheme before it (`example.com/page`), not any text.
        let hint = match Url::parse(&format!("https://{text}")) {
            Ok(guess)
                if !text.contains("://")
                    && !text.contains(char::is_whitespace)
                    && guess.host_str().is_some_and(|h| h.contains('.') || h == "localhost") =>
            {
                format!(" Did you mean \"https://{text}\"?")
            }
            _ => String::new(),
        };
        ToolError::model(format!(
            "\"{text}\" is not a valid URL ({e}). Send an absolute URL starting with http:// or https://.{hint}"
        ))
    })?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(url),
        "http" | "https" => {
            Err(ToolError::model(format!("\"{text}\" has no host. Send a URL like https://example.com/page.")))
        }
        other => Err(ToolError::model(format!(
            "webfetch fetches http:// and https:// URLs only; \"{text}\" uses {other}:. To read a local file, use the read tool."
        ))),
    }
}

/// Whether a redirect from `from` to `to` stays on the same host: same host and port, or the
/// same host moving from http to https on the default ports.
fn same_host(from: &Url, to: &Url) -> bool {
    if from.host_str() != to.host_str() {
        return false;
    }
    if from.scheme() == to.scheme() {
        return from.port_or_known_default() == to.port_or_known_default();
    }
    from.scheme() == "http" && to.scheme() == "https" && from.port().is_none() && to.port().is_none()
}

enum Fetched {
    Response(Response),
    OtherHost { from: Url, to: Url, status: StatusCode, hops: Vec<Url> },
}

/// A final (non-redirect) response and how it was reached.
struct Response {
    inner: reqwest::Response,
    requested: Url,
    hops: Vec<Url>,
    deadline: Instant,
    limit: Duration,
}

fn timed_out(limit: Duration, url: &Url, during: &str) -> ToolError {
    ToolError::model(format!(
        "Fetching {url} timed out after {} ms {during}. The server is slow or not answering; retry with a larger timeout_ms (at most {MAX_TIMEOUT_MS}) or try another URL.",
        limit.as_millis()
    ))
}

/// Sends the request, following same-host redirects (each one checked against the permission
/// rules like the first URL).
async fn fetch(
    ctx: &ToolContext,
    url: Url,
    format: Format,
    deadline: Instant,
    limit: Duration,
) -> Result<Fetched, ToolError> {
    let client = super::client().map_err(ToolError::fatal)?;
    let mut current = url.clone();
    let mut hops: Vec<Url> = Vec::new();
    loop {
        let sent = client
            .get(current.clone())
            .header(ACCEPT, format.accept())
            .header(ACCEPT_ENCODING, encoding::ACCEPT_ENCODING)
            .send();
        let response = timeout_at(deadline, sent)
            .await
            .map_err(|_| timed_out(limit, &current, "waiting for the response"))?
            .map_err(|e| {
                let described = describe_error(&e);
                let advice = if described.contains("certificate") {
                    "The server's TLS certificate is not trusted here. Do not retry; if the user runs this server with a certificate from their own CA, they can point SSL_CERT_FILE (or SSL_CERT_DIR) at that CA for toolshed"
                } else {
                    "Check the URL, or whether the server is up"
                };
                ToolError::model(format!("Could not fetch {current}: {described}. {advice}."))
            })?;
        let status = response.status();
        if !matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308) {
            return Ok(Fetched::Response(Response { inner: response, requested: url, hops, deadline, limit }));
        }
        let Some(location) = response.headers().get(LOCATION).and_then(|v| v.to_str().ok()) else {
            return Err(ToolError::model(format!(
                "{current} answered HTTP {} without a usable Location header, so there is nothing to follow.",
                status_text(status)
            )));
        };
        let next = current.join(location.trim()).map_err(|e| {
            ToolError::model(format!(
                "{current} redirected to \"{location}\", which is not a valid URL ({e}); the server's redirect is broken."
            ))
        })?;
        if !matches!(next.scheme(), "http" | "https") || !same_host(&current, &next) {
            return Ok(Fetched::OtherHost { from: current, to: next, status, hops });
        }
        if hops.len() == MAX_REDIRECTS {
            return Err(ToolError::model(format!(
                "{url} redirected more than {MAX_REDIRECTS} times (last to {next}); giving up. The server may be in a redirect loop."
            )));
        }
        ctx.ask(request(PERMISSION, &next)).await?;
        hops.push(next.clone());
        current = next;
    }
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// The result for a redirect to another host: where it points and how to follow it.
fn other_host(from: &Url, to: &Url, status: StatusCode, hops: &[Url]) -> ToolOutput {
    let followed = if hops.is_empty() {
        String::new()
    } else {
        format!(" (after {} redirect{} on the same host)", hops.len(), if hops.len() == 1 { "" } else { "s" })
    };
    let text = format!(
        "{from} redirects (HTTP {}) to another host{followed}:\n{to}\n\nwebfetch does not follow a redirect to another host by itself. To read that page, call webfetch again with url \"{to}\".",
        status_text(status)
    );
    ToolOutput::text(text)
        .with_title(format!("{from} → {to}"))
        .with_metadata("status", status.as_u16())
        .with_metadata("redirect", to.as_str())
}

/// What the body holds, from the Content-Type header or, without a useful one, from the bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Image(String),
    /// An image type models cannot look at (e.g. TIFF, icons).
    OtherImage,
    Binary,
    /// No Content-Type, or `application/octet-stream`: decided by sniffing the body.
    Unknown,
}

fn classify(mime: &str) -> Kind {
    match mime {
        "" | "application/octet-stream" | "binary/octet-stream" => Kind::Unknown,
        "text/html" | "application/xhtml+xml" => Kind::Html,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp" => Kind::Image(mime.to_string()),
        "image/jpg" => Kind::Image("image/jpeg".to_string()),
        "image/svg+xml" => Kind::Text,
        m if m.starts_with("image/") => Kind::OtherImage,
        m if m.starts_with("text/") => Kind::Text,
        m if m.ends_with("+json") || m.ends_with("+xml") || m.ends_with("+yaml") => Kind::Text,
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/x-javascript"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/x-sh"
        | "application/sql"
        | "application/graphql"
        | "application/x-ndjson"
        | "application/jsonl"
        | "application/x-www-form-urlencoded" => Kind::Text,
        _ => Kind::Binary,
    }
}

/// Decides the kind of an unlabelled body from its first bytes.
fn sniff(body: &[u8]) -> Kind {
    if let Some(mime) = toolshed_core::tool::image_mime(body) {
        return Kind::Image(mime.to_string());
    }
    let head = &body[..body.len().min(8192)];
    if head.contains(&0) {
        return Kind::Binary;
    }
    let text = String::from_utf8_lossy(head);
    if text.chars().filter(|&c| c == char::REPLACEMENT_CHARACTER).count() * 20 > text.chars().count().max(1) {
        return Kind::Binary;
    }
    let start = text.trim_start().get(..15).unwrap_or("").to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") { Kind::Html } else { Kind::Text }
}

/// The media type (lowercased, without parameters) and the charset parameter of a Content-Type.
fn parse_content_type(value: &str) -> (String, Option<String>) {
    let mut parts = value.split(';');
    let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (key, val) = p.split_once('=')?;
        key.trim().eq_ignore_ascii_case("charset").then(|| val.trim().trim_matches('"').to_string())
    });
    (mime, charset)
}

/// The charset an HTML document declares in its first kilobyte (`<meta charset=...>` or
/// `<meta http-equiv=... content="...; charset=...">`).
fn meta_charset(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let label: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
        .collect();
    (!label.is_empty()).then_some(label)
}

/// Decodes a body to text: the declared charset, else the document's own declaration (HTML),
/// else UTF-8; a byte-order mark wins over both.
fn decode(body: &[u8], charset: Option<&str>, html: bool) -> String {
    let declared = charset.map(str::to_string).or_else(|| if html { meta_charset(body) } else { None });
    let encoding =
        declared.and_then(|label| encoding_rs::Encoding::for_label(label.as_bytes())).unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

/// A body as read: decoded, at most [`MAX_BODY`] bytes.
#[derive(Default)]
struct Body {
    bytes: Vec<u8>,
    /// Whether it was cut at [`MAX_BODY`].
    truncated: bool,
    /// The `Content-Encoding` it was decoded from.
    coding: Option<Coding>,
}

/// Reads the body, decoding gzip / deflate, up to [`MAX_BODY`] decoded bytes.
async fn read_body(response: &mut Response) -> Result<Body, ToolError> {
    let url = response.inner.url().clone();
    let header =
        response.inner.headers().get(CONTENT_ENCODING).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let coding = Coding::parse(header.as_deref()).map_err(|name| {
        ToolError::model(format!(
            "{url} sent its body compressed as \"{name}\", which webfetch cannot decode (it asked for gzip or deflate, and the server ignored that). Try another URL for this content."
        ))
    })?;
    let mut decoder = Decoder::new(coding, MAX_BODY);
    let received = |decoder: &Decoder| match coding {
        Coding::Identity => human_bytes(decoder.received()),
        _ => format!("{} of {}", human_bytes(decoder.received()), coding.name()),
    };
    let complete = loop {
        let chunk = timeout_at(response.deadline, response.inner.chunk()).await.map_err(|_| {
            timed_out(response.limit, &url, &format!("while reading the body ({} received)", received(&decoder)))
        })?;
        let chunk = chunk.map_err(|e| {
            ToolError::model(format!(
                "The connection to {url} failed while reading the body after {}: {}. Retry, or try another URL.",
                received(&decoder),
                describe_error(&e)
            ))
        })?;
        let Some(chunk) = chunk else { break true };
        decoder.write(&chunk).map_err(|e| corrupt(&url, coding, &e))?;
        if decoder.full() {
            break false;
        }
    };
    let (bytes, truncated) = decoder.finish(complete).map_err(|e| corrupt(&url, coding, &e))?;
    Ok(Body { bytes, truncated, coding: (coding != Coding::Identity).then_some(coding) })
}

fn corrupt(url: &Url, coding: Coding, error: &str) -> ToolError {
    ToolError::model(format!(
        "{url} sent a {} body that cannot be decoded ({error}). The server's response is broken; retry, or try another URL.",
        coding.name()
    ))
}

/// Drops an incomplete UTF-8 sequence left at the end of a cut body.
fn trim_partial_utf8(body: &mut Vec<u8>) {
    if let Err(e) = std::str::from_utf8(body)
        && e.error_len().is_none()
    {
        body.truncate(e.valid_up_to());
    }
}

/// Turns a final response into the model's result.
async fn render(mut response: Response, format: Format, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let status = response.inner.status();
    let url = response.inner.url().clone();
    let content_type =
        response.inner.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let (mime, charset) = parse_content_type(&content_type);
    let announced =
        response.inner.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());

    if !status.is_success() {
        let body = read_body(&mut response).await.unwrap_or_default();
        return Err(http_error(status, &url, &mime, charset.as_deref(), &body.bytes));
    }

    let mut kind = classify(&mime);
    let size = announced.map(|n| format!(", {}", human_bytes(n))).unwrap_or_default();
    match &kind {
        Kind::Binary => {
            return Err(ToolError::model(format!(
                "{url} is {mime}{size}, a binary format webfetch cannot show as text. webfetch returns HTML pages, text, JSON and images (PNG, JPEG, GIF, WebP). Look for an HTML or text version of this content instead."
            )));
        }
        Kind::OtherImage => {
            return Err(ToolError::model(format!(
                "{url} is an image of type {mime}{size}, which cannot be attached; only PNG, JPEG, GIF and WebP images can. Look for the image in one of those formats."
            )));
        }
        Kind::Image(_) if announced.is_some_and(|n| n > MAX_BODY as u64) => {
            return Err(image_too_large(&url, announced));
        }
        _ => {}
    }

    let Body { bytes: mut body, truncated, coding } = read_body(&mut response).await?;
    if kind == Kind::Unknown {
        kind = sniff(&body);
        if kind == Kind::Binary {
            let label = if mime.is_empty() { "binary data without a Content-Type".to_string() } else { mime.clone() };
            return Err(ToolError::model(format!(
                "{url} is {label} ({} read), not text or a supported image, so webfetch cannot show it. webfetch returns HTML pages, text, JSON and images (PNG, JPEG, GIF, WebP).",
                human_bytes(body.len() as u64)
            )));
        }
    }
    let mut shown_type = if mime.is_empty() { "no Content-Type".to_string() } else { mime.clone() };
    if let Some(coding) = coding {
        shown_type = format!("{shown_type}, {}", coding.name());
    }
    let mut output = ToolOutput::default()
        .with_title(format!("{url} ({shown_type})"))
        .with_metadata("status", status.as_u16())
        .with_metadata("url", url.as_str())
        .with_metadata("content_type", content_type.as_str())
        .with_metadata("bytes", body.len() as u64)
        .with_metadata("truncated", truncated);
    if let Some(coding) = coding {
        output = output.with_metadata("content_encoding", coding.name());
    }
    if !response.hops.is_empty() {
        output = output
            .with_metadata("redirects", response.hops.iter().map(std::string::ToString::to_string).collect::<Vec<_>>());
    }

    let mut header = vec![];
    let converted = kind == Kind::Html && format != Format::Html;
    let mut notes = vec![];
    let (content, title) = match kind {
        Kind::Image(image_mime) => {
            if truncated {
                return Err(image_too_large(&url, announced));
            }
            header.push(format!(
                "Fetched {url} ({image_mime}, {}); the image is attached.",
                human_bytes(body.len() as u64)
            ));
            output.attachments.push(Attachment::Image { mime_type: image_mime, data: body });
            (None, None)
        }
        Kind::Html => {
            if truncated {
                trim_partial_utf8(&mut body);
            }
            let text = decode(&body, charset.as_deref(), true);
            let text_len = text.len();
            let page = match format {
                Format::Html => html::Page::plain(text),
                Format::Markdown | Format::Text => {
                    let token = ctx.cancellation().clone();
                    let budget = Budget::until((response.deadline + CONVERT_GRACE).into_std())
                        .with_cancellation(move || token.is_cancelled());
                    convert(text, format, url.clone(), budget).await?
                }
            };
            if page.flattened > 0 {
                notes.push(format!(
                    "Note: the page nests elements too deep (over {TAG_DEPTH} levels); {} below that {} unwrapped, so their text is kept but not their structure.",
                    if page.flattened == 1 { "1 element".to_string() } else { format!("{} elements", page.flattened) },
                    if page.flattened == 1 { "was" } else { "were" }
                ));
            }
            if let Some(stopped) = page.stopped {
                let how_far = if stopped.parsed < text_len {
                    format!(" after {} of {}", human_bytes(stopped.parsed as u64), human_bytes(text_len as u64))
                } else {
                    String::new()
                };
                notes.push(match stopped.reason {
                    Stop::OutOfTime => format!(
                        "Note: converting the page took too long and was stopped{how_far}, so the rest is missing. format \"html\" returns the source."
                    ),
                    Stop::Cancelled => format!("Note: the conversion was interrupted{how_far}, so the rest is missing."),
                });
            }
            header.push(format!(
                "Fetched {url} ({shown_type}, {}) as {}.",
                human_bytes(body.len() as u64),
                format.label()
            ));
            (Some(page.content), page.title)
        }
        _ => {
            if truncated {
                trim_partial_utf8(&mut body);
            }
            let text = decode(&body, charset.as_deref(), false);
            header.push(format!("Fetched {url} ({shown_type}, {}).", human_bytes(body.len() as u64)));
            (Some(text), None)
        }
    };
    if let Some(title) = title {
        header.push(format!("Title: {title}"));
    }
    if !response.hops.is_empty() {
        header.push(format!("Redirected from {}.", response.requested));
    }
    if truncated && let Some(coding) = coding {
        header.push(format!(
            "Note: the response decompresses ({}) to more than {}; only its first {} was read, so the end is missing.",
            coding.name(),
            human_bytes(MAX_BODY as u64),
            human_bytes(MAX_BODY as u64)
        ));
    } else if truncated {
        let total = announced.map(|n| format!(" of {}", human_bytes(n))).unwrap_or_default();
        header.push(format!(
            "Note: the response is larger than {}; only its first {}{total} was read, so the end is missing.",
            human_bytes(MAX_BODY as u64),
            human_bytes(MAX_BODY as u64)
        ));
    }
    header.extend(notes);
    let mut text = header.join("\n");
    match content {
        Some(content) if content.trim().is_empty() => {
            text.push_str("\n\nThe response has no readable text");
            if converted {
                text.push_str(
                    " after conversion (the page may be built by JavaScript, which webfetch does not run). format \"html\" shows the source.",
                );
            } else {
                text.push('.');
            }
        }
        Some(content) => {
            text.push_str("\n\n");
            text.push_str(&content);
        }
        None => {}
    }
    output.text = text;
    Ok(output)
}

/// Converts an HTML page on a thread of its own, with a stack large enough for the DOM depth the
/// parser allows, within `budget`. The thread ends soon after the budget runs out, whether or not
/// this future is still awaited.
async fn convert(text: String, format: Format, base: Url, budget: Budget) -> Result<html::Page, ToolError> {
    let (send, receive) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("webfetch-convert".to_string())
        .stack_size(CONVERT_STACK)
        .spawn(move || {
            let page = match format {
                Format::Text => html::to_text_within(&text, &budget),
                _ => html::to_markdown_within(&text, Some(&base), &budget),
            };
            // The receiver is gone when the call was dropped; the page is not wanted then.
            let _ = send.send(page);
        })
        .map_err(|e| ToolError::fatal(format!("cannot start a thread to convert the page: {e}")))?;
    receive.await.map_err(|_| ToolError::fatal("converting the page failed (the converting thread stopped)"))
}

fn image_too_large(url: &Url, announced: Option<u64>) -> ToolError {
    let size = announced.map(|n| format!(" ({})", human_bytes(n))).unwrap_or_default();
    ToolError::model(format!(
        "The image at {url} is larger than {}{size}; webfetch attaches images up to that size only.",
        human_bytes(MAX_BODY as u64)
    ))
}

/// The error for a non-success status, with what the server said when it is text.
fn http_error(status: StatusCode, url: &Url, mime: &str, charset: Option<&str>, body: &[u8]) -> ToolError {
    let hint = match status.as_u16() {
        404 | 410 => "The page does not exist (any more); check the URL, or search for where it moved.",
        401 | 403 => "The server refused access; the page may need a login, which webfetch cannot provide.",
        429 => "The server is rate-limiting requests; wait before trying again.",
        s if s >= 500 => "The server failed; retrying later may work.",
        _ => "The server rejected the request.",
    };
    let mut message = format!("HTTP {} from {url}. {hint}", status_text(status));
    let kind = if mime.is_empty() { sniff(body) } else { classify(mime) };
    // Only the start is shown, so only the start is converted (on this thread: the DOM's depth
    // is bounded, and 64 KiB converts in milliseconds).
    let mut body = body[..body.len().min(ERROR_EXCERPT_BYTES)].to_vec();
    trim_partial_utf8(&mut body);
    let body = body.as_slice();
    let excerpt = match kind {
        Kind::Html => html::to_text(&decode(body, charset, true)).content,
        Kind::Text => decode(body, charset, false),
        _ => String::new(),
    };
    let excerpt = html::collapse_whitespace(&excerpt);
    if !excerpt.is_empty() {
        let cut: String = excerpt.chars().take(ERROR_EXCERPT_CHARS).collect();
        let more = if cut.len() < excerpt.len() { " …" } else { "" };
        message.push_str(&format!("\n\nThe server said: {cut}{more}"));
    }
    ToolError::model(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_other_than_http_and_https_are_refused_with_a_hint() {
        let file = parse_url("file:///etc/passwd").unwrap_err().to_string();
        assert!(file.contains("uses file:") && file.contains("read tool"), "{file}");
        let bare = parse_url("example.com/docs").unwrap_err().to_string();
        assert!(bare.contains("Did you mean \"https://example.com/docs\"?"), "{bare}");
        // Text that would be no URL with a scheme before it gets no such guess.
        let words = parse_url("not a url").unwrap_err().to_string();
        assert!(!words.contains("Did you mean"), "{words}");
        assert!(parse_url(" https://example.com/a b ").is_ok());
        assert!(parse_url("http://127.0.0.1:8080/").is_ok());
    }

    #[test]
    fn same_host_allows_https_upgrade_but_not_other_hosts_or_ports() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_host(&u("http://a.com/x"), &u("https://a.com/y")));
        assert!(same_host(&u("https://a.com/x"), &u("https://a.com:443/y")));
        assert!(!same_host(&u("https://a.com/x"), &u("http://a.com/y")));
        assert!(!same_host(&u("https://a.com/x"), &u("https://b.com/y")));
        assert!(!same_host(&u("http://127.0.0.1:1/"), &u("http://127.0.0.1:2/")));
        assert!(!same_host(&u("http://127.0.0.1:1/"), &u("http://localhost:1/")));
    }

    #[test]
    fn always_approves_the_origin_not_everything() {
        let url = Url::parse("https://Docs.Example.com:8443/a/b?q=1").unwrap();
        let req = request("webfetch", &url);
        assert_eq!(req.patterns, vec!["https://docs.example.com:8443/a/b?q=1"]);
        assert_eq!(req.always, vec!["https://docs.example.com:8443/*"]);
    }

    #[test]
    fn content_types_are_classified() {
        assert_eq!(classify("text/html"), Kind::Html);
        assert_eq!(classify("application/problem+json"), Kind::Text);
        assert_eq!(classify("image/jpg"), Kind::Image("image/jpeg".into()));
        assert_eq!(classify("image/tiff"), Kind::OtherImage);
        assert_eq!(classify("application/pdf"), Kind::Binary);
        assert_eq!(classify("application/octet-stream"), Kind::Unknown);
        assert_eq!(
            parse_content_type("Text/HTML; Charset=\"ISO-8859-1\""),
            ("text/html".into(), Some("ISO-8859-1".into()))
        );
    }

    #[test]
    fn sniffing_finds_images_html_text_and_binary() {
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), Kind::Image("image/png".into()));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Kind::Image("image/webp".into()));
        assert_eq!(sniff(b"  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(sniff(b"plain words"), Kind::Text);
        assert_eq!(sniff(b"PK\x03\x04\0\0binary"), Kind::Binary);
    }

    #[test]
    fn decoding_honours_header_then_meta_charset() {
        let latin1 = b"<meta charset=\"iso-8859-1\"><p>caf\xe9</p>";
        assert!(decode(latin1, None, true).contains("café"));
        assert!(decode(b"caf\xe9", Some("windows-1252"), false).contains("café"));
        assert!(decode("café".as_bytes(), None, false).contains("café"));
    }

    #[test]
    fn partial_utf8_at_the_cut_is_dropped() {
        let mut body = "aé".as_bytes().to_vec();
        body.pop();
        trim_partial_utf8(&mut body);
        assert_eq!(body, b"a");
    }
}
