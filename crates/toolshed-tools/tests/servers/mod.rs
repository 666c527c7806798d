//! Real language servers for tests, installed from the npm registry the way `.ci/test` installs
//! them: `npm install --prefix <dir> <package>@<version>...`, where `<dir>` is
//! `$TOOLSHED_LSP_SERVERS`, else `$XDG_CACHE_HOME/toolshed/lsp`, else `~/.cache/toolshed/lsp`.
//! A test that needs one installs it on first use; only when that is impossible (no npm, no
//! registry) does it print a visible SKIP line and return `None`.
#![allow(dead_code)] // each test crate uses some of the servers

use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The pinned pyright release (its messages are in snapshots).
pub const PYRIGHT_VERSION: &str = "1.1.414";
/// The pinned typescript-language-server release (the last one that runs on Node.js 20).
pub const TYPESCRIPT_LANGUAGE_SERVER_VERSION: &str = "5.3.0";
/// The TypeScript it runs: 5.x ships the `tsserver` the language server drives (TypeScript 7,
/// npm's `latest`, is a native compiler without it).
pub const TYPESCRIPT_VERSION: &str = "5.9.3";

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
pub fn pyright() -> Option<PathBuf> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    available(
        "pyright-langserver",
        FOUND.get_or_init(|| install("pyright-langserver", &[("pyright", PYRIGHT_VERSION)])),
    )
}

/// The `typescript-language-server` program with the TypeScript it uses installed beside it,
/// installing them first if needed; `None` (after a SKIP line) when they cannot be installed.
pub fn typescript() -> Option<PathBuf> {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let packages =
        [("typescript-language-server", TYPESCRIPT_LANGUAGE_SERVER_VERSION), ("typescript", TYPESCRIPT_VERSION)];
    available("typescript-language-server", FOUND.get_or_init(|| install("typescript-language-server", &packages)))
}

fn available(program: &str, found: &Result<PathBuf, String>) -> Option<PathBuf> {
    match found {
        Ok(path) => Some(path.clone()),
        Err(why) => {
            // Straight to the terminal: the test harness captures `eprintln!` of passing tests.
            let _ = writeln!(std::io::stderr(), "SKIP: {program} is not available: {why}");
            None
        }
    }
}

/// The installed version of the npm package `name`, if any.
fn installed(name: &str) -> Option<String> {
    let manifest = servers_dir().join("node_modules").join(name).join("package.json");
    let text = std::fs::read_to_string(manifest).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value["version"].as_str().map(str::to_string)
}

/// Installs `packages` (name, version) unless they are installed already; the path of `program`.
fn install(program: &str, packages: &[(&str, &str)]) -> Result<PathBuf, String> {
    // One npm at a time in the shared directory (tests run in parallel threads).
    static NPM: Mutex<()> = Mutex::new(());
    let _one = NPM.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = servers_dir();
    let bin = dir.join("node_modules/.bin").join(program);
    let missing: Vec<String> = packages
        .iter()
        .filter(|(name, version)| installed(name).as_deref() != Some(*version))
        .map(|(name, version)| format!("{name}@{version}"))
        .collect();
    if bin.exists() && missing.is_empty() {
        return Ok(bin);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let output = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
        .arg(&dir)
        .args(&missing)
        .output()
        .map_err(|e| format!("npm cannot be run ({e}); install Node.js and npm"))?;
    if !output.status.success() {
        return Err(format!(
            "`npm install {}` failed: {}",
            missing.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!("npm installed {} but {} is missing", missing.join(" "), bin.display()))
    }
}
