//! Shared set-up for the custom tool tests: a worktree, a data directory, discovery without the
//! user's own directories, and an executor running as `build` with the custom tools' defaults.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolshed_core::agents::Agents;
use toolshed_core::config::Config;
use toolshed_core::exec::{Executor, Session, ToolCall, ToolResult};
use toolshed_core::permission::{ApproveAll, Approver};
use toolshed_core::registry::Registry;
use toolshed_tools::custom::{CustomTools, Discover, Scope};

pub struct Project {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
    pub runtime: Option<PathBuf>,
}

impl Project {
    pub fn new() -> Project {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("work")).unwrap();
        let root = tmp.path().join("work").canonicalize().unwrap();
        let data = tmp.path().join("data");
        Project { tmp, root, data, runtime: None }
    }

    /// Writes `text` to `rel` under the worktree (creating directories), executable when it
    /// starts with `#!`.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        if text.starts_with("#!") {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        path
    }

    pub fn discover(&self) -> Discover {
        let mut d = Discover::new(&self.root, &self.root, &self.data);
        d.user_manifest_dirs.clear();
        d.user_opencode_dirs.clear();
        d.js_runtime.clone_from(&self.runtime);
        // These tests write their tool files themselves; acceptance has its own tests.
        d.acceptance = toolshed_core::trust::Acceptance::everything(&self.root);
        d
    }

    pub fn custom(&self, scope: &Scope) -> CustomTools {
        self.discover().run(scope)
    }

    /// An executor over the custom tools (after `builtins`), with `config`'s permissions on top
    /// of the custom tools' `ask` defaults.
    pub fn executor_with(
        &self,
        custom: &CustomTools,
        builtins: impl FnOnce(&mut Registry),
        config: &Config,
        approver: Arc<dyn Approver>,
        time_limit: Option<Duration>,
    ) -> Executor {
        let mut registry = Registry::new();
        builtins(&mut registry);
        custom.register(&mut registry);
        let agents = Agents::with_defaults(config, &self.root, None, &custom.default_rules());
        let mut builder = Executor::builder(registry, self.root.clone())
            .data_dir(self.data.clone())
            .permission(Arc::new(agents))
            .approver(approver);
        if let Some(limit) = time_limit {
            builder = builder.default_time_limit(limit);
        }
        builder.build()
    }

    pub fn executor(&self, custom: &CustomTools) -> Executor {
        self.executor_with(custom, |_| {}, &Config::default(), Arc::new(ApproveAll), None)
    }
}

pub fn call(executor: &Executor, tool: &str, args: serde_json::Value) -> ToolResult {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let session = Session::new("sess-1", "build");
    rt.block_on(executor.call(&session, ToolCall::json("call-1", tool, args).with_message("msg-1")))
}

/// The node_modules holding Bun and zod 4 that `.ci/run` prepares
/// (`$TOOLSHED_TEST_JS_MODULES`, else `~/.cache/toolshed-ci/node_modules`).
pub fn js_modules() -> PathBuf {
    let dir = std::env::var_os("TOOLSHED_TEST_JS_MODULES")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/toolshed-ci/node_modules")))
        .expect("HOME or TOOLSHED_TEST_JS_MODULES");
    assert!(
        dir.join(".bin/bun").exists() && dir.join("zod/package.json").exists(),
        "the JS tool tests need Bun and zod 4 in {}: run .ci/run, or `npm install --prefix {} bun zod@4`",
        dir.display(),
        dir.parent().unwrap().display()
    );
    dir
}

impl Project {
    /// Uses the prepared Bun, and links the prepared zod into the data directory (as if toolshed
    /// had installed it there on first use), so nothing is fetched.
    pub fn with_bun(mut self) -> Project {
        let modules = js_modules();
        let target = self.data.join("custom-tools/node_modules");
        std::fs::create_dir_all(&target).unwrap();
        std::os::unix::fs::symlink(modules.join("zod"), target.join("zod")).unwrap();
        self.runtime = Some(modules.join(".bin/bun"));
        self
    }
}

pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

pub fn wait_until(mut cond: impl FnMut() -> bool) -> bool {
    for _ in 0..50 {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    cond()
}

pub fn rel(path: &Path, root: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).display().to_string()
}
