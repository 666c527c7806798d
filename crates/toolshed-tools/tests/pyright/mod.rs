//! The real pyright language server for tests, installed from the npm registry the way
//! `.ci/run` installs it: `npm install --prefix <dir> pyright@<PYRIGHT_VERSION>`, where `<dir>`
//! is `$TOOLSHED_LSP_SERVERS`, else `$XDG_CACHE_HOME/toolshed/lsp`, else
//! `~/.cache/toolshed/lsp`. A test that needs it installs it on first use; only when that is
//! impossible (no npm, no registry) does it print a visible SKIP line and return `None`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The pinned pyright release (its messages are in snapshots).
pub const PYRIGHT_VERSION: &str = "1.1.414";

/// Where the language servers for tests are installed.
pub fn servers_dir() -> PathBuf {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = env("TOOLSHED_LSP_SERVERS") {
        return dir;
    }
    let cache = env("XDG_CACHE_HOME")
        .or_else(|| env("HOME").map(|h| h.join(".cache")))
        .unwrap_or_else(|| std::env::temp_dir().join("toolshed-cache"));
    cache.join("toolshed/lsp")
}

/// The `pyright-langserver` program, installing it first if needed; `None` (after a SKIP line
/// on the terminal) when it cannot be installed.
pub fn langserver() -> Option<PathBuf> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match FOUND.get_or_init(find_or_install) {
        Ok(path) => Some(path.clone()),
        Err(why) => {
            // Straight to the terminal: the test harness captures `eprintln!` of passing tests.
            let _ = writeln!(std::io::stderr(), "SKIP: pyright-langserver is not available: {why}");
            None
        }
    }
}

fn find_or_install() -> Result<PathBuf, String> {
    let dir = servers_dir();
    let bin = dir.join("node_modules/.bin/pyright-langserver");
    let manifest = dir.join("node_modules/pyright/package.json");
    let installed = std::fs::read_to_string(&manifest)
        .ok()
        .and_then(|m| serde_json::from_str::<serde_json::Value>(&m).ok())
        .and_then(|m| m["version"].as_str().map(str::to_string));
    if bin.exists() && installed.as_deref() == Some(PYRIGHT_VERSION) {
        return Ok(bin);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let output = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(&dir)
        .arg(format!("pyright@{PYRIGHT_VERSION}"))
        .output()
        .map_err(|e| format!("npm cannot be run ({e}); install Node.js and npm"))?;
    if !output.status.success() {
        return Err(format!(
            "`npm install pyright@{PYRIGHT_VERSION}` failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    if bin.exists() { Ok(bin) } else { Err(format!("npm installed pyright but {} is missing", bin.display())) }
}
