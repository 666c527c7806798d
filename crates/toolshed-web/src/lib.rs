//! # toolshed-web
//!
//! Owns: `webfetch`, `websearch` and the HTML-to-Markdown conversion (with bounded nesting, size
//! and time). Must never touch the network before a call needs it. Public face:
//! [`fetch::WebFetch`], [`search::WebSearch`], [`search::backend`], [`html`].
//!
//! Tools that reach the web: `webfetch` (one URL, converted for a model to read) and
//! `websearch` (a configured search backend). Both share one HTTP client, built on first use
//! so registering the tools costs nothing.

pub mod dom;
pub mod encoding;
pub mod fetch;
pub mod html;
pub mod search;

use std::sync::OnceLock;
use std::time::Duration;

/// The User-Agent of every request.
pub const USER_AGENT: &str = concat!(
    "Mozilla/5.0 (compatible; toolshed/",
    env!("CARGO_PKG_VERSION"),
    "; +https://github.com/toolshed-dev/toolshed)"
);

/// How long establishing a connection may take before the request fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The process-wide HTTP client: rustls with the ring provider, redirects never followed (the
/// caller decides, so a redirect to another host can be reported instead), environment proxies
/// honoured. Built on first use; an error says why it could not be built.
pub fn client() -> Result<&'static reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // Fails only when a provider is already installed, which is just as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .user_agent(USER_AGENT)
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(CONNECT_TIMEOUT)
                .build()
                .map_err(|e| format!("cannot set up the HTTP client: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The message of a request error and its causes (reqwest's own display hides the cause, which
/// is usually the useful part: "connection refused", "dns error", a TLS failure).
pub fn describe_error(error: &reqwest::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

/// Formats a byte count for people and models: `812 bytes`, `4.2 KiB`, `5.0 MiB`.
pub fn human_bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f < KIB {
        format!("{n} bytes")
    } else if f < KIB * KIB {
        format!("{:.1} KiB", f / KIB)
    } else {
        format!("{:.1} MiB", f / (KIB * KIB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_bytes_picks_a_readable_unit() {
        assert_eq!(human_bytes(812), "812 bytes");
        assert_eq!(human_bytes(4300), "4.2 KiB");
        assert_eq!(human_bytes(5 * 1024 * 1024), "5.0 MiB");
    }

    #[test]
    fn client_builds_with_the_ring_provider() {
        assert!(client().is_ok());
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }
}
