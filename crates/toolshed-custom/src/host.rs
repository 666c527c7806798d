//! The JS host: one long-lived Bun (or Node) process per toolshed process that imports
//! OpenCode tool files and runs them, spoken to in JSON lines over its standard input and
//! output. Started on first need and restarted if it dies.
//!
//! Its files live in `<data dir>/custom-tools/`: `host.mjs` (embedded in toolshed and written on
//! first use), and `node_modules/` with zod 4 (installed from the npm registry on first use
//! when a tool file's project lacks it) and toolshed's stand-in for `@opencode-ai/plugin`.
//!
//! The host is driven from plain threads (a reader for its output, one for its standard error),
//! not from an async runtime, so it can serve synchronous discovery and calls on any runtime.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};
use toolshed_core::env::ChildEnv;
use toolshed_core::paths::FileLock;

use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The host program, written to the data directory on first use.
pub(crate) const HOST_SOURCE: &str = include_str!("host.mjs");
/// toolshed's `@opencode-ai/plugin` stand-in (`tool()` and `tool.schema`).
pub(crate) const PLUGIN_SHIM: &str = include_str!("plugin_shim.mjs");
const PLUGIN_SHIM_PACKAGE: &str = r#"{"name":"@opencode-ai/plugin","version":"0.0.0-toolshed","type":"module","exports":{".":"./index.js","./tool":"./index.js"}}
"#;
/// The zod the host installs when a project has none.
const ZOD_SPEC: &str = "zod@^4";
/// How much of the host's standard error is kept for error messages.
const STDERR_KEPT: usize = 8 * 1024;
/// How long an install by another toolshed process is waited for.
const INSTALL_WAIT: Duration = Duration::from_secs(180);
/// How long one install may run before it is stopped.
const INSTALL_LIMIT: Duration = Duration::from_secs(120);
/// How long a failed install is remembered (across processes) before it is tried again.
const INSTALL_FAILURE_KEPT: Duration = Duration::from_secs(600);

/// Which program runs the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RuntimeKind {
    /// Bun: runs `.ts` and `.js`.
    Bun,
    /// Node: runs `.js`, and `.ts` when it can strip types (22.6 and later).
    Node {
        /// Whether it can strip TypeScript types (`--experimental-strip-types`).
        strips_types: bool,
        /// `node --version`.
        version: String,
    },
}

/// The JS runtime found for this process.
#[derive(Clone, Debug)]
pub(crate) struct Runtime {
    pub program: PathBuf,
    pub kind: RuntimeKind,
    /// What every process it runs (and the installer) inherits of toolshed's environment.
    pub env: ChildEnv,
    /// How the host (which runs the tool files' code) is confined.
    pub confine: Option<crate::Confine>,
    /// Where programs toolshed runs itself are never taken from (see [`on_path`]).
    pub untrusted: Vec<PathBuf>,
}

impl Runtime {
    /// Finds the runtime: `program` when given (a name starting with `bun` is Bun, anything else
    /// Node), else `bun` then `node` on `PATH`. Node's version is asked only when `ts` files need it.
    pub(crate) fn find(program: Option<&Path>, need_ts: bool, env: &ChildEnv, root: &Path) -> Result<Runtime, String> {
        let untrusted = toolshed_process::untrusted_dirs(root);
        let (program, is_bun) = match program {
            Some(p) => {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                (p.to_path_buf(), name.starts_with("bun"))
            }
            None => {
                match on_path("bun", &untrusted) {
                    Some(bun) => (bun, true),
                    None => match on_path("node", &untrusted) {
                        Some(node) => (node, false),
                        None => {
                            return Err("needs Bun (or Node for .js files) on PATH to run OpenCode tool files; neither was found"
                            .to_string());
                        }
                    },
                }
            }
        };
        if is_bun {
            return Ok(Runtime { program, kind: RuntimeKind::Bun, env: env.clone(), confine: None, untrusted });
        }
        let (version, strips_types) = if need_ts {
            let mut cmd = std::process::Command::new(&program);
            env.apply(&mut cmd);
            let version = cmd
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
                .unwrap_or_default();
            let strips = node_strips_types(&version);
            (version, strips)
        } else {
            (String::new(), false)
        };
        Ok(Runtime {
            program,
            kind: RuntimeKind::Node { strips_types, version },
            env: env.clone(),
            confine: None,
            untrusted,
        })
    }

    /// Why this runtime cannot run `file`, if it cannot.
    pub(crate) fn cannot_run(&self, file: &Path) -> Option<String> {
        let ts = file.extension().is_some_and(|e| e == "ts");
        match &self.kind {
            RuntimeKind::Node { strips_types: false, version } if ts => Some(format!(
                "needs Bun on PATH to run TypeScript (Node {} cannot strip types; Node 22.6 or later can)",
                if version.is_empty() { "here" } else { version }
            )),
            _ => None,
        }
    }
}

/// Whether `node --version` output names a Node that strips TypeScript types (22.6+).
fn node_strips_types(version: &str) -> bool {
    let mut parts = version.trim().trim_start_matches('v').split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major > 22 || (major == 22 && minor >= 6)
}

/// `name` on `PATH`.
pub(crate) fn on_path(name: &str, untrusted: &[PathBuf]) -> Option<PathBuf> {
    // toolshed runs these itself, unsandboxed: never one a sandboxed command could have put
    // on `PATH` (the worktree's `node_modules/.bin`, a temp dir).
    toolshed_process::find_trusted_program(name, untrusted).ok()
}

/// The host of one toolshed process; cheap to share, started on first use.
pub(crate) struct JsHost {
    runtime: Runtime,
    root: PathBuf,
    dir: PathBuf,
    needs_zod: bool,
    /// One process per agent that called (the sandbox is the calling agent's; `""`: reading
    /// the tools' specs, confined as strictly as any agent).
    processes: Mutex<HashMap<String, Arc<Process>>>,
}

impl JsHost {
    /// A host (not started) running in `root`, keeping its files in `dir`. `needs_zod`: some
    /// tool file's project lacks `@opencode-ai/plugin`, so zod must be installed in `dir`.
    pub(crate) fn new(runtime: Runtime, root: PathBuf, dir: PathBuf, needs_zod: bool) -> Self {
        JsHost { runtime, root, dir, needs_zod, processes: Mutex::new(HashMap::new()) }
    }

    /// Sends a request to `agent`'s host process and returns the channel its replies arrive on
    /// (closed if the host dies). `files`: the tool directory the request reads and its
    /// [`crate::dir_stamp`]; a process that imported that directory as it was before is
    /// replaced by a new one (a runtime keeps every module it imported, helpers included, and
    /// Bun ignores the query that asks it to import a file again), and lives on only until its
    /// requests in flight end.
    pub(crate) fn request(
        &self,
        mut message: Value,
        agent: &str,
        files: Option<(&Path, u64)>,
    ) -> Result<Request, String> {
        let process = self.running(agent, files)?;
        let id = process.next_id.fetch_add(1, Ordering::Relaxed);
        message["id"] = json!(id);
        let (tx, rx) = mpsc::unbounded_channel();
        process.pending().insert(id, tx);
        let request = Request { id, process: process.clone(), replies: rx };
        process.send(&message)?;
        Ok(request)
    }

    /// Stops every host process (a later request starts a new one).
    pub(crate) fn stop(&self) {
        for (_, process) in self.slots().drain() {
            process.kill();
        }
    }

    /// Stops `process` if it is still a running host.
    fn stop_if(&self, process: &Arc<Process>) {
        let mut slots = self.slots();
        slots.retain(|_, p| !Arc::ptr_eq(p, process));
        process.kill();
    }

    fn slots(&self) -> MutexGuard<'_, HashMap<String, Arc<Process>>> {
        self.processes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `agent`'s host process, started if needed, or again if it imported `files` as they were.
    fn running(&self, agent: &str, files: Option<(&Path, u64)>) -> Result<Arc<Process>, String> {
        let mut slots = self.slots();
        if let Some(p) = slots.get(agent)
            && p.exit_reason().is_none()
            && files.is_none_or(|(dir, stamp)| p.imports(dir, stamp))
        {
            return Ok(p.clone());
        }
        let process = Arc::new(self.start(agent)?);
        if let Some((dir, stamp)) = files {
            process.imports(dir, stamp);
        }
        slots.insert(agent.to_string(), process.clone());
        Ok(process)
    }

    fn start(&self, agent: &str) -> Result<Process, String> {
        let host = prepare(&self.dir, self.needs_zod, &self.runtime)?;
        let mut cmd = std::process::Command::new(&self.runtime.program);
        self.runtime.env.apply(&mut cmd);
        match &self.runtime.kind {
            RuntimeKind::Bun => {
                // Never fetch missing packages at run time.
                cmd.arg("--no-install");
            }
            RuntimeKind::Node { strips_types: true, .. } => {
                cmd.arg("--experimental-strip-types");
            }
            RuntimeKind::Node { .. } => {}
        }
        cmd.arg(&host)
            .arg(&self.dir)
            .current_dir(&self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(confine) = &self.runtime.confine {
            // The host lives on: nothing of it is a leftover to stop after a call.
            drop(
                (confine.0)(&mut cmd, agent)
                    .map_err(|why| format!("the JS tool host cannot start sandboxed: {why}"))?,
            );
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start the JS tool host `{}`: {e}", self.runtime.program.display()))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err("the JS tool host started without its pipes".to_string());
        };
        let shared = Arc::new(Shared::default());
        let process = Process {
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            next_id: AtomicU64::new(1),
            shared,
            stamps: Mutex::new(HashMap::new()),
        };
        let err_shared = process.shared.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                err_shared.keep_stderr(&line);
                line.clear();
            }
        });
        let out_shared = process.shared.clone();
        std::thread::spawn(move || {
            let reader = BufReader::new(stdout);
            for line in reader.split(b'\n') {
                let Ok(line) = line else { break };
                // The host's messages start with a record separator; anything before it, or a
                // line without one, is what a process the tool started wrote to the same stream.
                let Some(start) = line.iter().rposition(|b| *b == 0x1e) else {
                    out_shared.keep_stderr(&line);
                    continue;
                };
                if start > 0 {
                    out_shared.keep_stderr(&line[..start]);
                }
                let Ok(message) = serde_json::from_slice::<Value>(&line[start + 1..]) else {
                    out_shared.keep_stderr(&line);
                    continue;
                };
                let Some(id) = message.get("id").and_then(Value::as_u64) else { continue };
                let sender = out_shared.pending.lock().unwrap_or_else(PoisonError::into_inner).get(&id).cloned();
                if let Some(sender) = sender {
                    let _ = sender.send(message);
                }
            }
            out_shared.ended();
        });
        Ok(process)
    }
}

impl Drop for JsHost {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One request in flight: its replies, and its entry in the host's table (removed on drop).
pub(crate) struct Request {
    id: u64,
    process: Arc<Process>,
    replies: mpsc::UnboundedReceiver<Value>,
}

impl Request {
    /// The next reply; `Err` with the reason when the host is gone.
    pub(crate) async fn next(&mut self) -> Result<Value, String> {
        match self.replies.recv().await {
            Some(reply) => Ok(reply),
            None => Err(self.process.exit_reason().unwrap_or_else(|| "the JS tool host stopped".to_string())),
        }
    }

    /// Sends a follow-up message about this request (an answer, a cancel).
    pub(crate) fn send(&self, mut message: Value) -> Result<(), String> {
        message["id"] = json!(self.id);
        self.process.send(&message)
    }

    /// Stops the host this request runs in, if it is still the current one (for a call that
    /// will not stop when cancelled).
    pub(crate) fn stop_host(&self, host: &JsHost) {
        host.stop_if(&self.process);
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        self.process.pending().remove(&self.id);
    }
}

/// A running host process.
struct Process {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    next_id: AtomicU64,
    shared: Arc<Shared>,
    /// Each tool directory this process was asked to read, as it was then ([`crate::dir_stamp`]).
    stamps: Mutex<HashMap<PathBuf, u64>>,
}

/// What the reader threads share with the process handle.
#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<u64, mpsc::UnboundedSender<Value>>>,
    stderr: Mutex<Vec<u8>>,
    exited: Mutex<Option<String>>,
}

impl Shared {
    fn keep_stderr(&self, data: &[u8]) {
        let mut tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        tail.extend_from_slice(data);
        if !data.ends_with(b"\n") {
            tail.push(b'\n');
        }
        if tail.len() > STDERR_KEPT {
            let cut = tail.len() - STDERR_KEPT;
            tail.drain(..cut);
        }
    }

    /// The host's output ended: it is gone; every request in flight learns why.
    fn ended(&self) {
        let stderr = String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(PoisonError::into_inner)).into_owned();
        let reason = if stderr.trim().is_empty() {
            "the JS tool host exited".to_string()
        } else {
            format!("the JS tool host exited: {}", stderr.trim())
        };
        *self.exited.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

impl Process {
    fn pending(&self) -> MutexGuard<'_, HashMap<u64, mpsc::UnboundedSender<Value>>> {
        self.shared.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether this process may serve a request reading `dir` as `stamp` says it is: the first
    /// request to read it, or one that finds it as the first did.
    fn imports(&self, dir: &Path, stamp: u64) -> bool {
        *self.stamps.lock().unwrap_or_else(PoisonError::into_inner).entry(dir.to_path_buf()).or_insert(stamp) == stamp
    }

    fn exit_reason(&self) -> Option<String> {
        self.shared.exited.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn send(&self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = self.stdin.lock().unwrap_or_else(PoisonError::into_inner);
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| self.exit_reason().unwrap_or_else(|| format!("cannot write to the JS tool host: {e}")))
    }

    fn kill(&self) {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Writes the host program and the plugin stand-in into `dir`, installing zod first when it is
/// needed and missing. Returns the host program's path.
fn prepare(dir: &Path, needs_zod: bool, runtime: &Runtime) -> Result<PathBuf, String> {
    let io = |what: &str, e: std::io::Error| format!("cannot write {what} in {}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(|e| io("the JS host's directory", e))?;
    let host = dir.join("host.mjs");
    write_if_changed(&host, HOST_SOURCE).map_err(|e| io("host.mjs", e))?;
    if needs_zod && !zod_installed(dir) {
        install_zod(dir, runtime)?;
    }
    let shim = dir.join("node_modules/@opencode-ai/plugin");
    std::fs::create_dir_all(&shim).map_err(|e| io("the @opencode-ai/plugin stand-in", e))?;
    write_if_changed(&shim.join("package.json"), PLUGIN_SHIM_PACKAGE).map_err(|e| io("the plugin stand-in", e))?;
    write_if_changed(&shim.join("index.js"), PLUGIN_SHIM).map_err(|e| io("the plugin stand-in", e))?;
    Ok(host)
}

/// Whether `dir/node_modules/zod` holds zod 4 or later.
pub(crate) fn zod_installed(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("node_modules/zod/package.json")) else { return false };
    let version = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v.get("version").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_default();
    version.split('.').next().and_then(|m| m.parse::<u32>().ok()).is_some_and(|major| major >= 4)
}

/// Installs zod 4 into `dir` with npm (or Bun when npm is missing), one toolshed process at a
/// time, at most once per process and not again for 10 minutes after a failure (offline, no
/// registry), so listing tools never waits on the network twice.
fn install_zod(dir: &Path, runtime: &Runtime) -> Result<(), String> {
    static TRIED: Mutex<Option<HashMap<PathBuf, Result<(), String>>>> = Mutex::new(None);
    if let Some(done) = TRIED.lock().unwrap_or_else(PoisonError::into_inner).as_ref().and_then(|t| t.get(dir)) {
        return done.clone();
    }
    let failed = dir.join("install.failed");
    let recent = std::fs::metadata(&failed)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < INSTALL_FAILURE_KEPT));
    let result = if recent {
        let why = std::fs::read_to_string(&failed).unwrap_or_default();
        Err(format!(
            "{} (an install failed less than 10 minutes ago and is not retried until then; delete {} to retry now)",
            why.trim(),
            failed.display()
        ))
    } else {
        let result = install_zod_locked(dir, runtime);
        match &result {
            Ok(()) => drop(std::fs::remove_file(&failed)),
            Err(why) => drop(std::fs::write(&failed, why)),
        }
        result
    };
    TRIED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_default()
        .insert(dir.to_path_buf(), result.clone());
    result
}

/// Installs zod while holding `dir/install.lock`, an advisory file lock: another toolshed
/// process installing there is waited for (up to [`INSTALL_WAIT`]), and a lock left by one that
/// died is free, since the kernel released it.
fn install_zod_locked(dir: &Path, runtime: &Runtime) -> Result<(), String> {
    let lock = dir.join("install.lock");
    let started = SystemTime::now();
    let _held = loop {
        match FileLock::try_acquire(&lock) {
            Ok(Some(held)) => break held,
            Ok(None) => {
                if zod_installed(dir) {
                    return Ok(());
                }
                if started.elapsed().is_ok_and(|e| e > INSTALL_WAIT) {
                    return Err(format!("waited too long for another toolshed to install zod in {}", dir.display()));
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(format!("cannot lock {} to install zod: {e}", lock.display())),
        }
    };
    run_install(dir, runtime)
}

fn run_install(dir: &Path, runtime: &Runtime) -> Result<(), String> {
    // Only what toolshed wrote steers the installer: no project config of npm's or Bun's here.
    for name in [".npmrc", "bunfig.toml", ".yarnrc", ".yarnrc.yml", "package-lock.json", "bun.lock", "bun.lockb"] {
        drop(std::fs::remove_file(dir.join(name)));
    }
    std::fs::write(dir.join("package.json"), "{\"private\": true}\n")
        .map_err(|e| format!("cannot write package.json in {}: {e}", dir.display()))?;
    let mut cmd = match (on_path("npm", &runtime.untrusted), &runtime.kind) {
        (Some(npm), _) => {
            let mut cmd = std::process::Command::new(npm);
            // Few, short network retries: offline, this fails in seconds rather than minutes. No
            // install scripts, and a cache of its own: the user's npm cache is writable to
            // sandboxed commands, so a package planted there must not be what runs here.
            cmd.args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--fetch-retries=1",
                "--fetch-timeout=20000",
                "--ignore-scripts",
                ZOD_SPEC,
            ]);
            cmd.arg(format!("--cache={}", dir.join("npm-cache").display()));
            cmd
        }
        (None, RuntimeKind::Bun) => {
            let mut cmd = std::process::Command::new(&runtime.program);
            cmd.args(["add", "--ignore-scripts", ZOD_SPEC]);
            cmd.env("BUN_INSTALL_CACHE_DIR", dir.join("bun-cache"));
            cmd
        }
        (None, RuntimeKind::Node { .. }) => {
            return Err(format!(
                "zod 4 is needed and not installed in {dir}, and npm is not on PATH to install it; run `npm install {ZOD_SPEC}` in {dir}",
                dir = dir.display()
            ));
        }
    };
    runtime.env.apply(&mut cmd);
    let out = output_within(cmd.current_dir(dir).stdin(Stdio::null()), INSTALL_LIMIT)
        .map_err(|e| format!("cannot run the installer for zod: {e}"))?;
    let Some(out) = out else {
        return Err(format!(
            "installing zod 4 into {dir} did not finish within {} s (is the npm registry reachable?); install it there by hand with `npm install {ZOD_SPEC}`",
            INSTALL_LIMIT.as_secs(),
            dir = dir.display()
        ));
    };
    if out.status.success() && zod_installed(dir) {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: String =
        stderr.trim().lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
    Err(format!(
        "zod 4 is needed and could not be installed into {dir} ({tail}); install it there by hand with `npm install {ZOD_SPEC}`",
        dir = dir.display()
    ))
}

/// Runs `cmd` to completion, collecting its output, or kills it after `limit` (`None`).
fn output_within(cmd: &mut std::process::Command, limit: Duration) -> std::io::Result<Option<std::process::Output>> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    // Drain both pipes on threads so a chatty installer cannot block on a full pipe.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Ok(Some(std::process::Output { status, stdout, stderr }))
}

/// Writes `text` to `path` unless it already holds it (atomically, so concurrent processes
/// never see half a file).
fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runtime whose program does not exist: what is tested must not start it.
    fn missing_bun() -> Runtime {
        Runtime {
            program: PathBuf::from("/nonexistent/bun"),
            kind: RuntimeKind::Bun,
            env: ChildEnv::default(),
            confine: None,
            untrusted: Vec::new(),
        }
    }

    #[test]
    fn a_recent_install_failure_is_reported_at_once_and_remembered() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("install.failed"), "zod 4 could not be installed (offline)").unwrap();
        let runtime = missing_bun();
        let started = std::time::Instant::now();
        let err = install_zod(tmp.path(), &runtime).unwrap_err();
        assert!(
            err.starts_with("zod 4 could not be installed (offline) (an install failed less than 10 minutes ago"),
            "{err}"
        );
        // The same answer for the rest of the process, even once the file is gone.
        std::fs::remove_file(tmp.path().join("install.failed")).unwrap();
        assert_eq!(install_zod(tmp.path(), &runtime).unwrap_err(), err);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_command_over_its_limit_is_stopped() {
        let mut sleep = std::process::Command::new("sleep");
        sleep.arg("30");
        let started = std::time::Instant::now();
        assert!(output_within(&mut sleep, Duration::from_millis(300)).unwrap().is_none());
        assert!(started.elapsed() < Duration::from_secs(5));
        let mut echo = std::process::Command::new("echo");
        echo.arg("hi");
        assert_eq!(output_within(&mut echo, Duration::from_secs(5)).unwrap().unwrap().stdout, b"hi\n");
    }

    #[test]
    fn an_install_lock_held_elsewhere_is_waited_for_until_zod_appears() {
        let tmp = tempfile::tempdir().unwrap();
        let runtime = missing_bun();
        // Held by another open file (as by another process): zod appearing ends the wait, and
        // nothing is installed. (A lock left by a dead process is free: `FileLock`'s tests.)
        let held = FileLock::try_acquire(&tmp.path().join("install.lock")).unwrap().unwrap();
        let pkg = tmp.path().join("node_modules/zod");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("package.json"), r#"{"version": "4.1.8"}"#).unwrap();
        assert_eq!(install_zod_locked(tmp.path(), &runtime), Ok(()));
        drop(held);
        assert!(!tmp.path().join("install.lock").exists());
    }

    #[test]
    fn node_strips_types_from_22_6() {
        assert!(!node_strips_types("v20.20.2"));
        assert!(!node_strips_types("v22.5.1"));
        assert!(node_strips_types("v22.6.0"));
        assert!(node_strips_types("v24.1.0"));
        assert!(!node_strips_types(""));
    }

    #[test]
    fn zod_installed_needs_major_4() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(!zod_installed(tmp.path()));
        let pkg = tmp.path().join("node_modules/zod");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("package.json"), r#"{"version": "3.25.0"}"#).unwrap();
        assert!(!zod_installed(tmp.path()));
        std::fs::write(pkg.join("package.json"), r#"{"version": "4.1.8"}"#).unwrap();
        assert!(zod_installed(tmp.path()));
    }
}
