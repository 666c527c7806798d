//! The `lsp` tool and post-edit diagnostics through the full chain, against the real pyright
//! language server (installed from npm, see `pyright/mod.rs`) and against programs that are
//! missing, crash at start or never answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod servers;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolshed_core::Registry;
use toolshed_core::config::LspConfig;
use toolshed_core::exec::{Executor, Session, ToolCall, ToolResult};
use toolshed_core::hooks::Hooks;
use toolshed_core::tool::Typed;
use toolshed_tools::fs::{EditTool, ReadTool, WriteTool};
use toolshed_tools::lsp::{Diagnostics, LspService, LspTool, ServerTable};

const A_PY: &str = r#"def greet(name: str) -> str:
    return "hi " + name


class Greeter:
    """Says hello."""

    def hello(self, who: str) -> str:
        return greet(who)
"#;

/// Line 3 has a type error after a non-ASCII string: `greet` starts at character 25 (1-based),
/// which is UTF-16 column 25 (0-based) because the emoji takes two UTF-16 units.
const B_PY: &str = r#"from a import Greeter, greet

s = "héllo 🎉"; y: int = greet(s)
print(Greeter().hello(s))
"#;

struct Project {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    service: Arc<LspService>,
    executor: Executor,
    session: Session,
    calls: std::sync::atomic::AtomicUsize,
}

impl Project {
    fn new(files: &[(&str, &str)], lsp_toml: &str) -> Project {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for (name, text) in files {
            std::fs::write(root.join(name), text).unwrap();
        }
        let sections: BTreeMap<String, LspConfig> = toml::from_str(lsp_toml).unwrap();
        let service = Arc::new(LspService::from_table(ServerTable::from_config(&sections)));
        let mut registry = Registry::new();
        registry.register_builtin(Typed::new(ReadTool));
        registry.register_builtin(Typed::new(WriteTool));
        registry.register_builtin(Typed::new(EditTool));
        registry.register_builtin(Typed::new(toolshed_tools::patch::ApplyPatch));
        registry.register_builtin(Typed::new(LspTool::new(service.clone())));
        let mut hooks = Hooks::default();
        hooks.add_post_write(Arc::new(Diagnostics::new(service.clone())));
        let executor = Executor::builder(registry, &root).data_dir(root.join(".data")).hooks(hooks).build();
        Project { _tmp: tmp, root, service, executor, session: Session::new("s", "build"), calls: Default::default() }
    }

    /// A project served by the real pyright, or `None` (after a SKIP line) without it.
    fn with_pyright(files: &[(&str, &str)]) -> Option<Project> {
        let program = servers::pyright()?;
        let toml = format!("[pyright]\ncommand = {}\ntimeout_ms = 60000\n", json!(program.to_str().unwrap()));
        Some(Project::new(files, &toml))
    }

    /// A project served by the real typescript-language-server, or `None` (after a SKIP line)
    /// without it.
    fn with_typescript(files: &[(&str, &str)]) -> Option<Project> {
        let program = servers::typescript()?;
        let toml = format!("[typescript]\ncommand = {}\ntimeout_ms = 60000\n", json!(program.to_str().unwrap()));
        Some(Project::new(files, &toml))
    }

    async fn call(&self, tool: &str, args: Value) -> ToolResult {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.executor.call(&self.session, ToolCall::json(format!("call_{n}"), tool, args)).await
    }

    async fn lsp(&self, args: Value) -> ToolResult {
        self.call("lsp", args).await
    }

    async fn pid(&self) -> u32 {
        let running = self.service.running().await;
        assert_eq!(running.len(), 1, "one server should run");
        running[0].pid().unwrap()
    }
}

fn ok(result: &ToolResult) -> &str {
    assert!(!result.is_error, "{}", result.output);
    &result.output
}

fn err(result: &ToolResult) -> &str {
    assert!(result.is_error, "expected an error, got: {}", result.output);
    &result.output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lsp_answers_diagnostics_definition_references_hover_and_symbols_from_pyright() {
    let Some(p) = Project::with_pyright(&[("a.py", A_PY), ("b.py", B_PY)]) else { return };

    // Diagnostics: the error after the emoji is at character 25 (UTF-16 would say 26).
    let out = p.lsp(json!({"operation": "diagnostics", "file_path": "b.py"})).await;
    insta::assert_snapshot!("diagnostics", ok(&out));
    assert_eq!(out.metadata["server"], "pyright");

    // Definition across files, asked at a position after the emoji.
    let out = p.lsp(json!({"operation": "definition", "file_path": "b.py", "line": 3, "character": 27})).await;
    insta::assert_snapshot!("definition", ok(&out));

    // References from the definition: both files.
    let out = p.lsp(json!({"operation": "references", "file_path": "a.py", "line": 1, "character": 5})).await;
    insta::assert_snapshot!("references", ok(&out));

    let out = p.lsp(json!({"operation": "hover", "file_path": "b.py", "line": 4, "character": 17})).await;
    let hover = ok(&out);
    assert!(hover.contains("(method) def hello(who: str) -> str"), "{hover}");

    let out = p.lsp(json!({"operation": "document_symbols", "file_path": "a.py"})).await;
    insta::assert_snapshot!("document_symbols", ok(&out));

    let out = p.lsp(json!({"operation": "workspace_symbols", "file_path": "a.py", "query": "Greet"})).await;
    let found = ok(&out);
    assert!(found.contains("a.py:5:7: class Greeter"), "{found}");
    assert!(found.contains("a.py:1:5: function greet"), "{found}");

    // Nothing at a blank spot; positions past the line or the file are refused with the limits.
    let out = p.lsp(json!({"operation": "definition", "file_path": "b.py", "line": 2, "character": 1})).await;
    assert_eq!(ok(&out), "No definition found for b.py:2:1.");
    let out = p.lsp(json!({"operation": "hover", "file_path": "b.py", "line": 3, "character": 40})).await;
    insta::assert_snapshot!(err(&out), @"Character 40 is past the end of line 3 of `b.py`, which has 32 characters. Send a column from 1 to 32.");
    let out = p.lsp(json!({"operation": "hover", "file_path": "b.py", "line": 9, "character": 1})).await;
    insta::assert_snapshot!(err(&out), @"Line 9 is past the end of `b.py`, which has 4 lines. Send a line from 1 to 4.");
    let out = p.lsp(json!({"operation": "references", "file_path": "b.py"})).await;
    insta::assert_snapshot!(err(&out), @"The references operation needs `line` and `character`: the 1-based line and column of the symbol, as read shows them.");

    // One warm server answered everything.
    assert_eq!(p.service.running().await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_introduces_a_type_error_reports_it_and_the_fix_reports_none() {
    let Some(p) = Project::with_pyright(&[("a.py", A_PY)]) else { return };

    let out = p
        .call("write", json!({"file_path": "calc.py", "content": "def double(n: int) -> int:\n    return n * 2\n"}))
        .await;
    assert_eq!(ok(&out), "Created `calc.py` (2 lines, 44 bytes).");
    assert_eq!(out.metadata["diagnostics"], json!({"calc.py": {"server": "pyright", "errors": 0}}));

    let out = p
        .call("edit", json!({"file_path": "calc.py", "old_string": "return n * 2", "new_string": "return str(n)"}))
        .await;
    let text = ok(&out);
    let note = &text[text.find("pyright reports").expect(text)..];
    insta::assert_snapshot!("edit_introduces_error", note);
    assert_eq!(out.metadata["diagnostics"], json!({"calc.py": {"server": "pyright", "errors": 1}}));

    let out = p
        .call("edit", json!({"file_path": "calc.py", "old_string": "return str(n)", "new_string": "return n + n"}))
        .await;
    let text = ok(&out);
    assert!(!text.contains("pyright") && !text.contains("error"), "{text}");
    assert_eq!(out.metadata["diagnostics"], json!({"calc.py": {"server": "pyright", "errors": 0}}));

    // A write that breaks a caller in another way shows only errors, not warnings.
    let out = p
        .call("write", json!({"file_path": "use.py", "content": "import os\nfrom a import greet\n\ngreet(1)\n"}))
        .await;
    let text = ok(&out);
    assert!(text.contains("use.py:4:7: error: Argument of type \"Literal[1]\""), "{text}");
    assert!(!text.contains("warning"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_patch_reports_errors_per_changed_file_and_nothing_for_deleted_ones() {
    let Some(p) = Project::with_pyright(&[("a.py", A_PY), ("b.py", B_PY)]) else { return };
    // b.py is open on the server (and has an error) before the patch deletes it.
    let out = p.lsp(json!({"operation": "diagnostics", "file_path": "b.py"})).await;
    assert!(ok(&out).starts_with("pyright reports 1 error in `b.py`"), "{}", out.output);

    let patch = "*** Begin Patch
*** Add File: good.py
+from a import greet
+
+print(greet(\"x\"))
*** Add File: bad.py
+from a import greet
+
+count: int = greet(\"x\")
*** Delete File: b.py
*** End Patch";
    let n = p.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = p.executor.call(&p.session, ToolCall::raw(format!("patch_{n}"), "apply_patch", patch)).await;
    let text = ok(&out);
    let notes = &text[text.find("\n\n").expect(text) + 2..];
    insta::assert_snapshot!(notes, @r#"
    pyright reports 1 error in `bad.py` after this change; fix it:
    bad.py:3:14: error: Type "str" is not assignable to declared type "int" [reportAssignmentType]
      "str" is not assignable to "int"
      | count: int = greet("x")
    "#);
    assert_eq!(
        out.metadata["diagnostics"],
        json!({"good.py": {"server": "pyright", "errors": 0}, "bad.py": {"server": "pyright", "errors": 1}})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_restarted_on_the_next_call() {
    let Some(p) = Project::with_pyright(&[("a.py", A_PY), ("b.py", B_PY)]) else { return };
    let out = p.lsp(json!({"operation": "document_symbols", "file_path": "a.py"})).await;
    ok(&out);
    let first = p.pid().await;

    let killed = std::process::Command::new("kill").args(["-KILL", &first.to_string()]).status().unwrap();
    assert!(killed.success());
    let dead_by = Instant::now() + Duration::from_secs(10);
    while p.service.running().await.iter().any(|s| s.is_alive()) {
        assert!(Instant::now() < dead_by, "the killed server still looks alive");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let out = p.lsp(json!({"operation": "definition", "file_path": "b.py", "line": 3, "character": 25})).await;
    let text = ok(&out);
    assert!(text.starts_with("(pyright had stopped (was killed by signal 9) and was restarted.)\n"), "{text}");
    assert!(text.contains("a.py:1:5: def greet(name: str) -> str:"), "{text}");
    assert_eq!(out.metadata["restarted"], true);
    assert_ne!(p.pid().await, first);

    // The restarted server also serves edits.
    let out = p.call("edit", json!({"file_path": "b.py", "old_string": "y: int", "new_string": "y: str"})).await;
    let text = ok(&out);
    assert!(!text.contains("pyright reports"), "{text}");
    assert_eq!(out.metadata["diagnostics"]["b.py"]["errors"], 0);
}

#[tokio::test]
async fn a_missing_server_is_reported_clearly_and_never_fails_the_edit() {
    let p = Project::new(
        &[("b.py", B_PY), ("notes.txt", "hi\n")],
        "[pyright]\ncommand = \"/nonexistent/pyright-langserver\"\n",
    );
    let out = p.lsp(json!({"operation": "diagnostics", "file_path": "b.py"})).await;
    insta::assert_snapshot!(err(&out), @"The language server for `b.py` is unavailable: pyright cannot be started: `/nonexistent/pyright-langserver` is not an executable file. Install it or set `command` in [lsp.pyright].");

    let out = p.call("write", json!({"file_path": "c.py", "content": "x: int = 'no'\n"})).await;
    insta::assert_snapshot!(ok(&out), @r"
    Created `c.py` (1 line, 14 bytes).

    Diagnostics unavailable for `c.py`: pyright cannot be started: `/nonexistent/pyright-langserver` is not an executable file. Install it or set `command` in [lsp.pyright].
    ");
    assert!(p.root.join("c.py").exists());

    // A file no server handles: the tool says how to add one; a write adds nothing.
    let out = p.lsp(json!({"operation": "diagnostics", "file_path": "notes.txt"})).await;
    insta::assert_snapshot!(err(&out), @"No language server for `notes.txt`: no language server is configured for `.txt` files. Add an [lsp.NAME] section with `command` and `extensions` to toolshed.toml to use one.");
    let out = p.call("write", json!({"file_path": "notes.txt", "content": "bye\n"})).await;
    assert!(!ok(&out).contains("Diagnostics"), "{}", out.output);
    assert!(!out.metadata.contains_key("diagnostics"));

    let out = p.lsp(json!({"operation": "diagnostics", "file_path": "nothere.py"})).await;
    insta::assert_snapshot!(err(&out), @"File `nothere.py` not found. Check the path (glob can find files by name).");
}

#[tokio::test]
async fn a_server_that_dies_at_start_is_reported_with_its_last_words_and_not_started_again_at_once() {
    let toml = r#"[bad]
command = "sh"
args = ["-c", "echo started >> starts.log; echo 'error: no such toolchain component' >&2; exit 3"]
extensions = ["bad"]
"#;
    let p = Project::new(&[], toml);
    let mut notes = Vec::new();
    for n in 0..4 {
        let out = p.call("write", json!({"file_path": "x.bad", "content": format!("v{n}\n")})).await;
        let text = ok(&out).to_string();
        notes.push(text[text.find("Diagnostics").expect(&text)..].to_string());
    }
    let sh = toolshed_tools::lsp::servers::find_program("sh", Path::new("/")).unwrap();
    assert_eq!(
        notes[0],
        format!(
            "Diagnostics unavailable for `x.bad`: bad (`{}`) exited with status 3 before answering `initialize`: error: no such toolchain component.",
            sh.display()
        )
    );
    // Tried once: the next writes within the retry delay get the same answer without a new start.
    for note in &notes[1..] {
        assert_eq!(note, &notes[0]);
    }
    let starts = std::fs::read_to_string(p.root.join("starts.log")).unwrap();
    assert_eq!(starts.lines().count(), 1, "the broken server was started again");
}

#[tokio::test]
async fn a_server_that_never_answers_costs_the_edit_only_its_timeout() {
    let p =
        Project::new(&[], "[slow]\ncommand = \"sleep\"\nargs = [\"30\"]\nextensions = [\"slow\"]\ntimeout_ms = 300\n");
    let started = Instant::now();
    let out = p.call("write", json!({"file_path": "x.slow", "content": "x\n"})).await;
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    insta::assert_snapshot!(ok(&out), @r"
    Created `x.slow` (1 line, 2 bytes).

    Diagnostics unavailable for `x.slow`: slow is still starting after 0.3 s.
    ");
    assert_eq!(out.metadata["diagnostics"]["x.slow"]["unavailable"], "is still starting after 0.3 s");
}

#[test]
fn doctor_tells_servers_that_start_from_missing_broken_and_incomplete_ones() {
    let Some(program) = servers::pyright() else { return };
    let toml = format!(
        r#"[pyright]
command = {}
[ghost]
command = "/nonexistent/ghost-ls"
extensions = ["gh"]
[bad]
command = "sh"
args = ["-c", "echo 'bad: cannot run' >&2; exit 3"]
extensions = ["bad"]
[half]
extensions = ["h1"]
[mute]
command = "sleep"
args = ["60"]
extensions = ["mu"]
timeout_ms = 500
"#,
        json!(program.to_str().unwrap())
    );
    let config = toolshed_core::config::Config { lsp: toml::from_str(&toml).unwrap(), ..Default::default() };
    let tmp = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let report = toolshed_tools::lsp::lsp_report(&config, tmp.path());
    // The server that never answers is given its own 500 ms, not doctor's 15 s.
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{:?}", started.elapsed());
    let lines = report.lines();
    let line = |name: &str| lines.iter().find(|l| l.starts_with(&format!("{name} "))).cloned().unwrap();
    assert!(
        line("pyright").starts_with(&format!(
            "pyright (configured; .py .pyi): {} starts (initialize answered in ",
            program.display()
        )),
        "{lines:#?}"
    );
    assert_eq!(line("ghost"), "ghost (configured; .gh): not found: `/nonexistent/ghost-ls` is not an executable file");
    assert!(
        line("bad").ends_with(
            "was found but does not start: exited with status 3 before answering `initialize`: bad: cannot run"
        ),
        "{lines:#?}"
    );
    assert_eq!(
        line("half"),
        "half (configured; .h1): cannot be used: it has no `command` (only built-in servers may leave it out)"
    );
    assert!(line("mute").starts_with("mute (configured; .mu): "), "{lines:#?}");
    assert!(line("mute").contains("does not start"), "{lines:#?}");
    let gopls_mentioned = lines.iter().any(|l| {
        l.starts_with("gopls (built-in; .go): ") || (l.starts_with("not found on PATH: ") && l.contains("gopls"))
    });
    assert!(gopls_mentioned, "{lines:#?}");
    assert!(report.has_problem());
    assert_eq!(report.status(), "problem");
    assert!(report.to_string().starts_with("lsp: problem\n  half (configured; .h1)"), "{report}");
}

/// A minimal language server in Python: publishes diagnostics without a version, first none and
/// then, 50 ms later, a revision with one error; asks the client for its configuration first.
const FAKE_SERVER: &str = r#"
import json, sys, threading, time
out = sys.stdout.buffer
lock = threading.Lock()
def send(msg):
    body = json.dumps(msg).encode()
    with lock:
        out.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        out.flush()
def publish(uri, text):
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": []}})
    time.sleep(0.05)
    line = text.split("\n").index("boom") if "boom" in text.split("\n") else None
    diags = [] if line is None else [{"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 4}},
                                       "severity": 1, "message": "boom is not allowed", "code": 7}]
    send({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": diags}})
inp = sys.stdin.buffer
while True:
    headers = {}
    while True:
        line = inp.readline()
        if not line:
            sys.exit(0)
        line = line.strip()
        if not line:
            break
        k, v = line.split(b":", 1)
        headers[k.strip().lower()] = v.strip()
    msg = json.loads(inp.read(int(headers[b"content-length"])))
    method = msg.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": 900, "method": "workspace/configuration", "params": {"items": [{"section": "fake"}]}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    elif method == "exit":
        sys.exit(0)
    elif method == "textDocument/didOpen":
        doc = msg["params"]["textDocument"]
        threading.Thread(target=publish, args=(doc["uri"], doc["text"])).start()
    elif method == "textDocument/didChange":
        threading.Thread(target=publish, args=(msg["params"]["textDocument"]["uri"], msg["params"]["contentChanges"][0]["text"])).start()
"#;

#[tokio::test]
async fn diagnostics_without_versions_wait_for_the_servers_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("fake_server.py");
    std::fs::write(&script, FAKE_SERVER).unwrap();
    let toml = format!(
        "[fake]\ncommand = \"python3\"\nargs = [{}]\nextensions = [\"fake\"]\ntimeout_ms = 10000\n",
        json!(script.to_str().unwrap())
    );
    let p = Project::new(&[], &toml);
    let out = p.call("write", json!({"file_path": "x.fake", "content": "ok\nboom\n"})).await;
    insta::assert_snapshot!(ok(&out), @r"
    Created `x.fake` (2 lines, 8 bytes).

    fake reports 1 error in `x.fake` after this change; fix it:
    x.fake:2:1: error: boom is not allowed [7]
      | boom
    ");
    let out = p.call("write", json!({"file_path": "x.fake", "content": "ok\nfine\n"})).await;
    assert_eq!(out.metadata["diagnostics"]["x.fake"], json!({"server": "fake", "errors": 0}));
    let out = p.lsp(json!({"operation": "hover", "file_path": "x.fake", "line": 1, "character": 1})).await;
    insta::assert_snapshot!(err(&out), @"fake does not support hover; try another operation.");
    let out = p.lsp(json!({"operation": "diagnostics", "file_path": "x.fake"})).await;
    insta::assert_snapshot!(ok(&out), @"fake reports no errors or warnings in `x.fake`.");
}

/// The number of errors `lsp diagnostics` reports for `file`.
async fn errors_in(p: &Project, file: &str) -> (u64, String) {
    let out = p.lsp(json!({"operation": "diagnostics", "file_path": file})).await;
    let text = ok(&out).to_string();
    let errors = text.matches(": error:").count() as u64;
    (errors, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diagnostics_of_a_file_follow_a_change_in_another_one_in_a_warm_session() {
    let lib = "class Foo:\n    pass\n";
    let user = "from lib import Foo\n\nx = Foo()\n";
    let Some(p) = Project::with_pyright(&[("lib.py", lib), ("use.py", user)]) else { return };
    let (errors, text) = errors_in(&p, "use.py").await;
    assert_eq!(errors, 0, "{text}");
    for round in 0..2 {
        // Renamed through the edit tool: `use.py` now imports a name that does not exist.
        let out =
            p.call("edit", json!({"file_path": "lib.py", "old_string": "class Foo", "new_string": "class Bar"})).await;
        ok(&out);
        let (errors, text) = errors_in(&p, "use.py").await;
        assert_eq!(errors, 1, "round {round}, after the rename: {text}");
        assert!(text.contains("Foo"), "{text}");
        // Renamed back: no error is left.
        let out =
            p.call("edit", json!({"file_path": "lib.py", "old_string": "class Bar", "new_string": "class Foo"})).await;
        ok(&out);
        let (errors, text) = errors_in(&p, "use.py").await;
        assert_eq!(errors, 0, "round {round}, after renaming back: {text}");
    }
    // Changed behind toolshed's back (a shell command, another editor): the next question sees it.
    std::fs::write(p.root.join("lib.py"), "class Baz:\n    pass\n").unwrap();
    let (errors, text) = errors_in(&p, "use.py").await;
    assert_eq!(errors, 1, "after a change on disk: {text}");
}

const TSCONFIG: &str =
    r#"{ "compilerOptions": { "strict": true, "target": "es2022", "module": "nodenext", "noEmit": true } }"#;

const SHAPES_TS: &str = r#"export interface Shape {
  name: string;
  area(): number;
}

export const MARGIN = 2;

export function makeSquare(side: number): Shape {
  return { name: "square", area: () => side * side };
}
"#;

const MAIN_TS: &str = r#"import { makeSquare, MARGIN } from "./shapes.js";

const s = makeSquare(3);
const total: number = s.area() + MARGIN;
console.log(total);
"#;

fn typescript_project() -> Option<Project> {
    Project::with_typescript(&[("tsconfig.json", TSCONFIG), ("shapes.ts", SHAPES_TS), ("main.ts", MAIN_TS)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_answers_across_files_on_the_first_call_after_start() {
    // A cold server each time: the first question is asked while it is still loading the project.
    for round in 0..2 {
        let Some(p) = typescript_project() else { return };
        let out = p.lsp(json!({"operation": "definition", "file_path": "main.ts", "line": 3, "character": 12})).await;
        let text = ok(&out);
        assert!(text.contains("shapes.ts:8:17: export function makeSquare"), "round {round}: {text}");
        let out = p.lsp(json!({"operation": "hover", "file_path": "main.ts", "line": 4, "character": 25})).await;
        let text = ok(&out);
        assert!(text.contains("(method) Shape.area(): number"), "round {round}: {text}");
        drop(p);
        // Hover first on a cold server, then references from the other file.
        let Some(p) = typescript_project() else { return };
        let out = p.lsp(json!({"operation": "hover", "file_path": "main.ts", "line": 3, "character": 11})).await;
        let text = ok(&out);
        assert!(text.contains("makeSquare(side: number): Shape"), "round {round}: {text}");
        let out = p.lsp(json!({"operation": "references", "file_path": "shapes.ts", "line": 8, "character": 17})).await;
        let text = ok(&out);
        assert!(text.contains("main.ts:3:11"), "round {round}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_reports_a_type_error_after_every_edit_that_makes_one() {
    let Some(p) = typescript_project() else { return };
    let (errors, text) = errors_in(&p, "main.ts").await;
    assert_eq!(errors, 0, "{text}");
    let edit = |file: &str, old: &str, new: &str| {
        p.call("edit", json!({"file_path": file, "old_string": old, "new_string": new}))
    };
    for round in 0..4 {
        // In the edited file: the edit's own report names TS2322.
        let out = edit("main.ts", "total: number", "total: string").await;
        let text = ok(&out);
        assert_eq!(out.metadata["diagnostics"]["main.ts"]["errors"], 1, "round {round}: {text}");
        assert!(
            text.contains("main.ts:4:7: error: Type 'number' is not assignable to type 'string'. [2322]"),
            "{text}"
        );
        let out = edit("main.ts", "total: string", "total: number").await;
        assert_eq!(out.metadata["diagnostics"]["main.ts"]["errors"], 0, "round {round}: {}", ok(&out));

        // In another file: the margin becomes a string, so the sum does too, and `total: number`
        // cannot hold it. The edited file itself stays clean (its server has nothing new to say).
        let started = Instant::now();
        let out = edit("shapes.ts", "MARGIN = 2", "MARGIN = \"2\"").await;
        assert_eq!(out.metadata["diagnostics"]["shapes.ts"]["errors"], 0, "round {round}: {}", ok(&out));
        assert!(started.elapsed() < Duration::from_secs(10), "the edit took {:?}", started.elapsed());
        let (errors, text) = errors_in(&p, "main.ts").await;
        assert_eq!(errors, 1, "round {round}, after the change in shapes.ts: {text}");
        assert!(text.contains("[2322]"), "{text}");
        let out = edit("shapes.ts", "MARGIN = \"2\"", "MARGIN = 2").await;
        assert_eq!(out.metadata["diagnostics"]["shapes.ts"]["errors"], 0, "round {round}: {}", ok(&out));
        let (errors, text) = errors_in(&p, "main.ts").await;
        assert_eq!(errors, 0, "round {round}, after changing it back: {text}");
    }
    // Changed behind toolshed's back: the next question sees it.
    std::fs::write(p.root.join("shapes.ts"), SHAPES_TS.replace("MARGIN = 2", "MARGIN = \"2\"")).unwrap();
    let (errors, text) = errors_in(&p, "main.ts").await;
    assert_eq!(errors, 1, "after a change on disk: {text}");
}
