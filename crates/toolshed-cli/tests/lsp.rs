//! Language servers from the command line: nothing starts for reads or listings, a write starts
//! the file's server (found on PATH or configured) and reports its errors within the bound,
//! and nothing is left running when `toolshed call` returns.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../toolshed-tools/tests/servers/mod.rs"]
mod servers;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

fn toolshed(root: &Path, path_dirs: &[&Path], args: &[&str]) -> Output {
    let mut path: Vec<PathBuf> = path_dirs.iter().map(|d| d.to_path_buf()).collect();
    path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
    Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(args)
        .current_dir(root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .env("PATH", std::env::join_paths(path).unwrap())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    })
}

fn worktree() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    (tmp, root.canonicalize().unwrap())
}

/// Processes whose working directory is `dir` (a language server started for it).
fn processes_in(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cwd = entry.path().join("cwd");
        if std::fs::read_link(&cwd).is_ok_and(|c| c == dir) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(String::from_utf8_lossy(&cmdline).replace('\0', " "));
        }
    }
    found
}

#[test]
fn reads_and_listings_start_no_server_and_a_write_starts_the_one_found_on_path() {
    let (tmp, root) = worktree();
    std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
    // A stand-in pyright-langserver on PATH that leaves a mark when started, then fails.
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let marker = tmp.path().join("started");
    let script = bin.join("pyright-langserver");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" > '{}'\necho 'fake server gives up' >&2\nexit 4\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    for args in [
        &["call", "read", r#"{"file_path": "a.py"}"#][..],
        &["call", "grep", r#"{"pattern": "x"}"#],
        &["tools", "--format", "json"],
        &["call", "write", r#"{"file_path": "notes.txt", "content": "hi\n"}"#],
    ] {
        let out = toolshed(&root, &[&bin], args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(!marker.exists(), "{args:?} started a language server");
    }

    let out = toolshed(&root, &[&bin], &["call", "write", r#"{"file_path": "a.py", "content": "x = 2\n"}"#, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&marker).unwrap().trim(), "--stdio");
    let result = json(&out);
    assert_eq!(result["is_error"], false);
    let output = result["output"].as_str().unwrap();
    assert!(output.starts_with("Replaced `a.py`"), "{output}");
    assert!(
        output.ends_with(&format!(
            "Diagnostics unavailable for `a.py`: pyright (`{}`) exited with status 4 before answering `initialize`: fake server gives up.",
            script.display()
        )),
        "{output}"
    );
}

#[test]
fn a_one_shot_write_reports_pyrights_errors_and_leaves_no_server_running() {
    let Some(program) = servers::pyright() else { return };
    let (_tmp, root) = worktree();
    std::fs::write(
        root.join("toolshed.toml"),
        format!("[lsp.pyright]\ncommand = {}\n", Value::String(program.to_str().unwrap().into())),
    )
    .unwrap();
    std::fs::write(root.join("lib.py"), "def twice(n: int) -> int:\n    return 2 * n\n").unwrap();

    let started = Instant::now();
    let args = r#"{"file_path": "main.py", "content": "from lib import twice\n\nlabel: str = twice(3)\n"}"#;
    let out = toolshed(&root, &[], &["call", "write", args, "--json"]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let result = json(&out);
    let output = result["output"].as_str().unwrap();
    assert!(
        output.contains("pyright reports 1 error in `main.py` after this change; fix it:\nmain.py:3:14: error: Type \"int\" is not assignable to declared type \"str\""),
        "{output}"
    );
    assert_eq!(result["metadata"]["diagnostics"]["main.py"]["errors"], 1);
    assert!(took < Duration::from_secs(20), "a one-shot write took {took:?}");
    eprintln!("one-shot `toolshed call write` with pyright diagnostics: {took:?}");

    // The lsp tool in a one-shot call, then nothing of the servers is left.
    let out = toolshed(
        &root,
        &[],
        &["call", "lsp", r#"{"operation": "hover", "file_path": "main.py", "line": 1, "character": 18}"#],
    );
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("def twice(n: int) -> int"));
    let gone_by = Instant::now() + Duration::from_secs(5);
    while !processes_in(&root).is_empty() {
        assert!(Instant::now() < gone_by, "still running: {:?}", processes_in(&root));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn doctor_lists_the_servers_that_start_and_the_ones_found_that_do_not() {
    let Some(program) = servers::pyright() else { return };
    let (tmp, root) = worktree();
    std::fs::write(
        root.join("toolshed.toml"),
        format!("[lsp.pyright]\ncommand = {}\n", Value::String(program.to_str().unwrap().into())),
    )
    .unwrap();
    // PATH holds only node (pyright runs on it) and a rust-analyzer that fails like a rustup
    // proxy without the component.
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let node = String::from_utf8(Command::new("sh").args(["-c", "command -v node"]).output().unwrap().stdout).unwrap();
    std::os::unix::fs::symlink(node.trim(), bin.join("node")).unwrap();
    let proxy = bin.join("rust-analyzer");
    std::fs::write(
        &proxy,
        "#!/bin/sh\necho \"error: Unknown binary 'rust-analyzer' in official toolchain 'stable'.\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&proxy, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap(), "doctor"])
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .env("PATH", &bin)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Exit 0: a broken built-in is a warning, not a problem (only a kernel without Landlock makes
    // the default sandbox one).
    let expected = if text.starts_with("sandbox: problem") { 1 } else { 0 };
    assert_eq!(out.status.code(), Some(expected), "{text}");
    let section = &text[text.find("lsp: ").expect(&text)..];
    let lines: Vec<&str> = section.lines().collect();
    assert_eq!(lines[0], "lsp: warning", "{section}");
    assert!(
        lines[1].starts_with(&format!(
            "  pyright (configured; .py .pyi): {} starts (initialize answered in ",
            program.display()
        )),
        "{section}"
    );
    assert_eq!(
        lines[2],
        format!(
            "  rust-analyzer (built-in; .rs): {} was found but does not start: exited with status 1 before answering `initialize`: error: Unknown binary 'rust-analyzer' in official toolchain 'stable'.",
            proxy.display()
        )
    );
    assert_eq!(lines[3], "  not found on PATH: typescript-language-server, gopls, clangd");
    assert_eq!(lines.len(), 4, "{section}");
}

#[cfg(unix)]
#[test]
fn a_fifo_is_refused_at_once_with_a_server_configured() {
    let (_tmp, root) = worktree();
    if let Some(program) = servers::pyright() {
        std::fs::write(
            root.join("toolshed.toml"),
            format!("[lsp.pyright]\ncommand = {}\n", Value::String(program.to_str().unwrap().into())),
        )
        .unwrap();
    }
    let fifo = root.join("p.py");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolshed"))
        .env("TOOLSHED_TRUST_PROJECT", "1")
        .args(["--root", root.to_str().unwrap()])
        .args(["call", "lsp", r#"{"operation":"diagnostics","file_path":"p.py"}"#])
        .current_dir(&root)
        .env("XDG_CONFIG_HOME", root.join(".xdg-config"))
        .env("TOOLSHED_DATA_DIR", root.join(".data"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("`call lsp` on a FIFO still runs after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("named pipe (FIFO)") && said.contains("not a regular file"), "{said}");
}
