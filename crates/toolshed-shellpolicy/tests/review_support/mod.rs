//! The harness of the review tests: a worktree with the rules given, the decision of the real
//! rule engine for a command line, and the execution oracle (`/bin/bash -c` in a fresh
//! directory with a file `canary`) that proves a spelling is a real attack.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Stdio};

use toolshed_core::agents::Agents;
use toolshed_core::config::Config;
use toolshed_core::permission::{Action, Permission, PermissionRequest};
use toolshed_shellpolicy::permission_requests;

pub struct Case {
    pub _tmp: tempfile::TempDir,
    pub root: std::path::PathBuf,
    pub agents: Agents,
}

/// A worktree holding `files` (relative path, text), under `rules` (a `toolshed.toml`).
pub fn case_with(rules: &str, files: &[(&str, &str)]) -> Case {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut cfg = Config::default();
    cfg.merge_str(&root.join("toolshed.toml"), rules).unwrap();
    let agents = Agents::from_config(&cfg, &root, Some(&root));
    Case { _tmp: tmp, root, agents }
}

pub fn requests(c: &Case, command: &str) -> Vec<PermissionRequest> {
    permission_requests(command, &c.root, &c.root, Some(&c.root))
}

/// The decision of the real rule engine: the strictest over every pattern of every request.
pub fn decide(c: &Case, command: &str) -> Action {
    let mut decision = Action::Allow;
    for request in requests(c, command) {
        for pattern in &request.patterns {
            let action = request.action(&c.agents.evaluate("build", &request.permission, pattern), &c.agents, "build");
            decision = match (decision, action) {
                (Action::Deny, _) | (_, Action::Deny) => Action::Deny,
                (Action::Ask, _) | (_, Action::Ask) => Action::Ask,
                _ => Action::Allow,
            };
        }
    }
    decision
}

pub fn assert_not_allowed(c: &Case, commands: &[&str]) {
    for command in commands {
        let decision = decide(c, command);
        assert_ne!(decision, Action::Allow, "{command}: {:?}", requests(c, command));
    }
}

pub fn assert_allowed(c: &Case, commands: &[&str]) {
    for command in commands {
        assert_eq!(decide(c, command), Action::Allow, "{command}: {:?}", requests(c, command));
    }
}

/// Whether `/bin/bash -c command` deletes a file `canary` in a fresh directory (no input).
pub fn deletes(command: &str) -> bool {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("canary"), "alive\n").unwrap();
    let _ = Command::new("/bin/bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    !dir.join("canary").exists()
}

/// The attacks are real: bash deletes the canary with each.
pub fn assert_attacks(commands: &[&str]) {
    if !Path::new("/bin/bash").exists() {
        return;
    }
    for command in commands {
        assert!(deletes(command), "{command} should delete the canary under bash");
    }
}
