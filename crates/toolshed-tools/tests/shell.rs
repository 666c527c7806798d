//! The shell tools against real processes, run through the execution chain.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scratch;

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolshed_core::agents::Agents;
use toolshed_core::config::Config;
use toolshed_core::exec::{Executor, Session, ToolCall, ToolResult};
use toolshed_core::permission::{Action, ApprovalRequest, Approver, RejectAll, Reply, Rule, Ruleset};
use toolshed_core::registry::Registry;
use toolshed_core::tool::BoxFuture;
use toolshed_tools::shell::sandbox::{self, SandboxMode};
use toolshed_tools::shell::{MAX_SESSIONS, SandboxPolicy, Shell};

const FULL: SandboxPolicy =
    SandboxPolicy { mode: SandboxMode::FullAccess, allow_unsandboxed: false, block_network: false, allow_sockets: &[] };

struct Harness {
    executor: Executor,
    session: Session,
    shell: Shell,
    root: tempfile::TempDir,
    _data: tempfile::TempDir,
}

impl Harness {
    fn new(policy: SandboxPolicy) -> Self {
        Harness::with(policy, Arc::new(Ruleset::defaults()), Arc::new(Answer(Reply::Once, Mutex::default(), None)))
    }

    fn with(policy: SandboxPolicy, rules: Arc<Ruleset>, approver: Arc<dyn Approver>) -> Self {
        let root = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let shell = Shell::new(policy);
        let mut registry = Registry::new();
        shell.register(&mut registry);
        let executor = Executor::builder(registry, root.path().canonicalize().unwrap())
            .data_dir(data.path())
            .permission(rules)
            .approver(approver)
            .build();
        Harness { executor, session: Session::new("s", "build"), shell, root, _data: data }
    }

    async fn call(&self, tool: &str, args: Value) -> ToolResult {
        self.executor.call(&self.session, ToolCall::json("c", tool, args)).await
    }

    async fn bash(&self, command: &str) -> ToolResult {
        self.call("bash", json!({ "command": command })).await
    }
}

/// An approver that gives one answer (or `escalation` for `sandbox_escalation`) and remembers
/// what it was asked.
struct Answer(Reply, Mutex<Vec<String>>, Option<Reply>);

impl Answer {
    /// Approves everything once except running without the sandbox.
    fn all_but_escalation() -> Arc<Self> {
        Arc::new(Answer(Reply::Once, Mutex::default(), Some(Reply::Reject(None))))
    }
}

impl Approver for Answer {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        let permission = request.request.permission.clone();
        let reply = match (&self.2, permission.as_str()) {
            (Some(reply), "sandbox_escalation") => reply.clone(),
            _ => self.0.clone(),
        };
        self.1.lock().unwrap().push(permission);
        Box::pin(async move { reply })
    }
}

/// Pids of processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(marker)
        {
            found.push(name);
        }
    }
    found
}

fn unique(tag: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("{tag}-{}-{nanos}", std::process::id())
}

/// Whether Landlock is here; prints a SKIP line that the test log shows even when output is
/// captured (it writes to the real stderr, not through the test harness).
fn landlock_or_skip(test: &str) -> bool {
    let support = sandbox::support();
    if support.available() {
        return true;
    }
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {support}");
    false
}

#[tokio::test]
async fn echo_prints_output_and_exit_code() {
    let h = Harness::new(FULL);
    let r = h.bash("echo hi").await;
    assert!(!r.is_error);
    insta::assert_snapshot!(r.output, @r"
    hi

    Exit code: 0
    ");
    assert_eq!(r.metadata["exit_code"], 0);
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_arrival_order() {
    let h = Harness::new(FULL);
    let r = h.bash("echo one; echo two >&2; echo three; echo four >&2").await;
    assert!(r.output.starts_with("one\ntwo\nthree\nfour\n"), "{}", r.output);
}

#[tokio::test]
async fn exit_codes_and_signals_are_reported() {
    let h = Harness::new(FULL);
    let r = h.bash("echo partial; exit 3").await;
    insta::assert_snapshot!(r.output, @r"
    partial

    Exit code: 3
    ");
    assert!(!r.is_error, "a failing command is a result, not a tool error");
    let r = h.bash("kill -KILL $$").await;
    insta::assert_snapshot!(r.output, @r"
    (no output)

    Killed by signal 9 (SIGKILL).
    ");
    assert_eq!(r.metadata["signal"], 9);
}

#[tokio::test]
async fn cat_with_no_input_returns_at_once() {
    let h = Harness::new(FULL);
    let started = Instant::now();
    let r = h.bash("cat; echo after-cat").await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(r.output.starts_with("after-cat\n"), "{}", r.output);
}

#[tokio::test]
async fn background_grandchild_holding_stdout_does_not_block_the_call_and_is_stopped() {
    let h = Harness::new(FULL);
    let marker = unique("bg-holder");
    let started = Instant::now();
    let r = h.bash(&format!("(sh -c 'sleep 1000; : {marker}' &); echo started")).await;
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    assert!(r.output.starts_with("started\n\nExit code: 0"), "{}", r.output);
    assert!(r.output.contains("stopped when it ended"), "{}", r.output);
    assert_eq!(processes_with(&marker), Vec::<String>::new(), "the background process was left running");
}

#[tokio::test]
async fn timeout_kills_the_group_and_grandchildren_leaving_no_process() {
    let h = Harness::new(FULL);
    let marker = unique("timeout-victim");
    let command = format!(
        "echo before; (sh -c 'sleep 1000; : {marker}-a' &); setsid sh -c 'sleep 1000; : {marker}-b' & sh -c 'trap \"\" TERM; sleep 1000; : {marker}-c' & sleep 1000"
    );
    let started = Instant::now();
    let r = h.call("bash", json!({ "command": command, "timeout_ms": 1500 })).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert_eq!(r.metadata["timed_out"], true);
    // bash may report a job the signal ended ("Terminated") before it ends itself, or not:
    // that race is the kernel's, not the tool's.
    let output: String = r.output.lines().filter(|l| *l != "Terminated").map(|l| format!("{l}\n")).collect();
    insta::assert_snapshot!(output.trim_end(), @r"
    before

    Timed out after 1500 ms: the command and every process it started were stopped (SIGTERM, then SIGKILL after 1000 ms). The output above is what it printed until then. If it needs longer and is not waiting for input, rerun it with a larger timeout_ms (at most 600000), or with yield_ms to keep it running in the background.
    ");
    let deadline = Instant::now() + Duration::from_secs(2);
    while !processes_with(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_with(&marker), Vec::<String>::new(), "processes survived the timeout");
}

#[tokio::test]
async fn cancellation_stops_the_command_and_returns_partial_output() {
    let h = Harness::new(FULL);
    let marker = unique("cancel-victim");
    let cancel = tokio_util_token();
    let call =
        ToolCall::json("c", "bash", json!({ "command": format!("echo started; sh -c 'sleep 1000; : {marker}'") }))
            .with_cancel(cancel.clone());
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let r = h.executor.call(&h.session, call).await;
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    assert!(r.output.contains("started"), "{}", r.output);
    assert!(r.output.contains("Interrupted by the user"), "{}", r.output);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

fn tokio_util_token() -> toolshed_core::context::CancellationToken {
    toolshed_core::context::CancellationToken::new()
}

#[tokio::test]
async fn huge_output_keeps_head_and_tail_and_spills_everything() {
    let h = Harness::new(FULL);
    let r = h.bash("seq 1 400000").await;
    assert!(r.output.len() < 60 * 1024, "{}", r.output.len());
    assert!(r.output.starts_with("1\n2\n3\n"));
    assert!(r.output.contains("Exit code: 0"), "the exit code survives the cut");
    let spill = r.spill_path().expect("spill path in metadata");
    let full = std::fs::read_to_string(&spill).unwrap();
    assert_eq!(full.lines().count(), 400_000);
    assert!(full.ends_with("399999\n400000\n"));
    assert!(r.output.contains(&spill.display().to_string()));
}

#[tokio::test]
async fn non_interactive_environment_is_set() {
    let h = Harness::new(FULL);
    let r = h.bash("echo $NO_COLOR $TERM $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $GIT_EDITOR $DEBIAN_FRONTEND $PIP_NO_INPUT; [ -t 0 ] || echo no-tty; tty || true").await;
    assert!(r.output.starts_with("1 dumb cat cat 0 true noninteractive 1\nno-tty\nnot a tty\n"), "{}", r.output);
}

#[tokio::test]
async fn workdir_is_resolved_in_the_worktree_and_must_exist() {
    let h = Harness::new(FULL);
    std::fs::create_dir(h.root.path().join("sub")).unwrap();
    let r = h.call("bash", json!({ "command": "pwd", "workdir": "sub" })).await;
    assert!(
        r.output.starts_with(&format!("{}\n", h.root.path().canonicalize().unwrap().join("sub").display())),
        "{}",
        r.output
    );
    let r = h.call("bash", json!({ "command": "pwd", "workdir": "missing" })).await;
    assert!(r.is_error);
    assert!(r.output.contains("workdir `"), "{}", r.output);
}

#[tokio::test]
async fn session_is_polled_fed_input_and_killed() {
    let h = Harness::new(FULL);
    let r = h
        .call("bash", json!({ "command": "echo ready; while read line; do echo got:$line; done", "yield_ms": 300 }))
        .await;
    assert!(r.output.starts_with("ready\n"), "{}", r.output);
    let id = r.metadata["session_id"].as_u64().expect("a session id");
    assert!(r.output.contains(&format!("as session {id}")), "{}", r.output);

    let r = h.call("bash_output", json!({ "session_id": id, "input": "hello\n", "wait_ms": 300 })).await;
    assert!(r.output.starts_with("got:hello\n"), "{}", r.output);
    assert_eq!(r.metadata["running"], true);

    let r = h.call("bash_output", json!({ "session_id": id, "wait_ms": 100 })).await;
    assert!(r.output.starts_with("(no output)\n"), "{}", r.output);

    let r = h.call("bash_output", json!({ "session_id": id, "stop": true })).await;
    assert!(r.output.contains(&format!("Session {id} was stopped.")), "{}", r.output);
    assert!(r.output.contains("is now closed"), "{}", r.output);
    let r = h.call("bash_output", json!({ "session_id": id })).await;
    assert!(r.is_error);
    insta::assert_snapshot!(r.output, @"No shell session 1: it never existed, or it ended and its final output was already returned. There are no sessions.");
}

#[tokio::test]
async fn session_reports_exit_after_stdin_closes() {
    let h = Harness::new(FULL);
    let r = h.call("bash", json!({ "command": "sort", "yield_ms": 200 })).await;
    let id = r.metadata["session_id"].as_u64().unwrap();
    let r = h
        .call("bash_output", json!({ "session_id": id, "input": "b\na\n", "close_stdin": true, "wait_ms": 3000 }))
        .await;
    assert!(r.output.starts_with("a\nb\n\nExit code: 0\nSession 1 has ended"), "{}", r.output);
    assert_eq!(r.metadata["running"], false);
}

#[tokio::test]
async fn tty_session_gets_a_terminal_and_typed_input() {
    let h = Harness::new(FULL);
    let r = h
        .call("bash", json!({ "command": "[ -t 0 ] && echo is-a-tty; read -p 'name? ' n; echo hello-$n", "tty": true, "yield_ms": 500 }))
        .await;
    assert!(r.output.contains("is-a-tty"), "{}", r.output);
    assert!(r.output.contains("name? "), "{}", r.output);
    let id = r.metadata["session_id"].as_u64().expect("still waiting for input");
    let r = h.call("bash_output", json!({ "session_id": id, "input": "bob\n", "wait_ms": 3000 })).await;
    assert!(r.output.contains("hello-bob\n"), "{}", r.output);
    assert!(r.output.contains("Exit code: 0"), "{}", r.output);
}

#[tokio::test]
async fn sessions_are_capped_and_shutdown_ends_them() {
    let h = Harness::new(FULL);
    let marker = unique("capped");
    for _ in 0..MAX_SESSIONS {
        let r = h.call("bash", json!({ "command": format!("sleep 1000; : {marker}"), "yield_ms": 0 })).await;
        assert!(r.metadata.contains_key("session_id"), "{}", r.output);
    }
    assert_eq!(h.shell.running_sessions(), MAX_SESSIONS);
    let r = h.call("bash", json!({ "command": "echo one too many", "yield_ms": 0 })).await;
    assert!(r.is_error);
    assert!(r.output.starts_with("Cannot start another background session: 16 are already running"), "{}", r.output);
    h.shell.shutdown().await;
    assert_eq!(h.shell.running_sessions(), 0);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

#[tokio::test]
async fn dropping_the_tools_kills_running_sessions() {
    let marker = unique("dropped");
    {
        let h = Harness::new(FULL);
        let r = h.call("bash", json!({ "command": format!("sleep 1000; : {marker}"), "yield_ms": 0 })).await;
        assert!(r.metadata.contains_key("session_id"));
        assert!(!processes_with(&marker).is_empty());
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

#[tokio::test]
async fn session_timeout_stops_it() {
    let h = Harness::new(FULL);
    let r = h.call("bash", json!({ "command": "echo up; sleep 1000", "yield_ms": 100, "timeout_ms": 600 })).await;
    let id = r.metadata["session_id"].as_u64().unwrap();
    let r = h.call("bash_output", json!({ "session_id": id, "wait_ms": 5000 })).await;
    assert!(r.output.contains("It was stopped by its timeout_ms."), "{}", r.output);
}

#[tokio::test]
async fn permission_request_uses_bash_key_and_command_pattern() {
    let rules = Ruleset::new(vec![Rule::new("*", "*", Action::Allow), Rule::new("bash", "rm *", Action::Deny)]);
    let h = Harness::with(FULL, Arc::new(rules), Arc::new(Answer(Reply::Once, Mutex::default(), None)));
    let r = h.bash("rm -rf nothing-here").await;
    assert!(r.is_error);
    assert!(r.output.contains("forbid `bash` on `rm -rf nothing-here`"), "{}", r.output);
    assert!(!h.bash("echo fine").await.is_error);
}

#[tokio::test]
async fn workdir_outside_the_worktree_asks_external_directory() {
    let outside = tempfile::tempdir().unwrap();
    let answer = Arc::new(Answer(Reply::Reject(None), Mutex::default(), None));
    let h = Harness::with(FULL, Arc::new(Ruleset::defaults()), answer.clone());
    let r = h.call("bash", json!({ "command": "pwd", "workdir": outside.path() })).await;
    assert!(r.is_error);
    assert!(r.output.contains("Permission for `external_directory`"), "{}", r.output);
    assert_eq!(*answer.1.lock().unwrap(), vec!["external_directory".to_string()]);
}

#[tokio::test]
async fn workspace_write_writes_inside_the_worktree_and_is_refused_outside() {
    if !landlock_or_skip("workspace_write_writes_inside_the_worktree_and_is_refused_outside") {
        return;
    }
    let answer = Answer::all_but_escalation();
    let policy = SandboxPolicy { mode: SandboxMode::WorkspaceWrite, ..FULL };
    let h = Harness::with(policy, Arc::new(Ruleset::defaults()), answer.clone());
    let r =
        h.bash("echo inside > inside.txt && cat inside.txt && f=$(mktemp) && echo ok > $f && rm $f; echo tmp=$?").await;
    assert!(r.output.starts_with("inside\ntmp=0\n"), "{}", r.output);
    assert_eq!(r.metadata["sandbox"], "workspace-write");

    // The path is hidden from the permission analysis in a variable, so no
    // `external_directory` approval widens the sandbox: the sandbox alone must stop the write.
    let Some(outside) = scratch::outside_sandbox(
        "workspace_write_writes_inside_the_worktree_and_is_refused_outside",
        Some(h.root.path()),
    ) else {
        return;
    };
    let outside = outside.path();
    let target = outside.join("refused.txt");
    answer.1.lock().unwrap().clear();
    let r = h.bash(&format!("d={}; echo nope > $d/refused.txt", outside.display())).await;
    assert!(!target.exists(), "the sandbox let a write outside the worktree through");
    assert!(r.output.contains("Permission denied"), "{}", r.output);
    assert!(r.output.contains("Rerunning it without the sandbox was not approved"), "{}", r.output);
    assert_eq!(*answer.1.lock().unwrap(), vec!["sandbox_escalation".to_string()]);
    assert!(std::fs::read_to_string("/etc/hostname").is_ok() || Path::new("/etc/passwd").exists());
    let r = h.bash("head -c 3 /etc/passwd").await;
    assert!(r.output.contains("Exit code: 0"), "reads stay allowed: {}", r.output);
}

#[tokio::test]
async fn approved_escalation_reruns_the_command_unsandboxed() {
    if !landlock_or_skip("approved_escalation_reruns_the_command_unsandboxed") {
        return;
    }
    let policy = SandboxPolicy { mode: SandboxMode::WorkspaceWrite, ..FULL };
    let h = Harness::new(policy);
    let Some(outside) =
        scratch::outside_sandbox("approved_escalation_reruns_the_command_unsandboxed", Some(h.root.path()))
    else {
        return;
    };
    let outside = outside.path();
    let target = outside.join("escalated.txt");
    let r = h.bash(&format!("d={}; echo yes > $d/escalated.txt", outside.display())).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "yes\n");
    assert!(r.output.contains("WITHOUT the sandbox"), "{}", r.output);
    assert_eq!(r.metadata["escalated"], true);
}

#[tokio::test]
async fn read_only_mode_refuses_writes_in_the_worktree_too() {
    if !landlock_or_skip("read_only_mode_refuses_writes_in_the_worktree_too") {
        return;
    }
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("sandbox_escalation", "*", Action::Deny));
    let policy = SandboxPolicy { mode: SandboxMode::ReadOnly, ..FULL };
    let h = Harness::with(policy, Arc::new(rules), Arc::new(Answer(Reply::Once, Mutex::default(), None)));
    let r = h.bash("ls >/dev/null && echo listed; echo x > file.txt").await;
    assert!(r.output.starts_with("listed\n"), "{}", r.output);
    assert!(r.output.contains("Permission denied"), "{}", r.output);
    assert!(!h.root.path().join("file.txt").exists());
}

#[tokio::test]
async fn sandboxed_tty_session_works() {
    if !landlock_or_skip("sandboxed_tty_session_works") {
        return;
    }
    let policy = SandboxPolicy { mode: SandboxMode::WorkspaceWrite, ..FULL };
    let h = Harness::new(policy);
    let r = h
        .call(
            "bash",
            json!({ "command": "tty >/dev/null && echo tty-ok > t.txt && cat t.txt", "tty": true, "yield_ms": 3000 }),
        )
        .await;
    assert!(r.output.contains("tty-ok"), "{}", r.output);
}

#[tokio::test]
async fn block_network_denies_internet_sockets_but_not_unix_sockets() {
    if !landlock_or_skip("block_network_denies_internet_sockets_but_not_unix_sockets") {
        return;
    }
    let policy = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        allow_unsandboxed: false,
        block_network: true,
        allow_sockets: &[],
    };
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("sandbox_escalation", "*", Action::Deny));
    let h = Harness::with(policy, Arc::new(rules), Arc::new(Answer(Reply::Once, Mutex::default(), None)));
    let r = h.bash("exec 3<>/dev/tcp/127.0.0.1/9 && echo opened").await;
    assert!(r.output.contains("Permission denied"), "{}", r.output);
    assert!(!r.output.lines().any(|l| l == "opened"), "{}", r.output);
    let r = h
        .bash("command -v python3 >/dev/null || { echo unix-ok; exit; }; python3 -c 'import socket; socket.socket(socket.AF_UNIX); print(\"unix-ok\")'")
        .await;
    assert!(r.output.starts_with("unix-ok\n"), "{}", r.output);
    let open = Harness::new(SandboxPolicy { block_network: false, ..policy });
    let r = open.bash("exec 3<>/dev/tcp/127.0.0.1/9 && echo opened").await;
    assert!(r.output.contains("Connection refused"), "{}", r.output);
}

#[tokio::test]
async fn missing_landlock_refuses_unless_unsandboxed_is_allowed() {
    if sandbox::support().available() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIP missing_landlock_refuses_unless_unsandboxed_is_allowed: Landlock is available here, so the refusal path cannot be exercised"
        );
        return;
    }
    let h = Harness::new(SandboxPolicy::default());
    let r = h.bash("echo hi").await;
    assert!(r.is_error);
    assert!(r.output.contains("allow_unsandboxed = true"), "{}", r.output);
    let h = Harness::new(SandboxPolicy { allow_unsandboxed: true, ..SandboxPolicy::default() });
    let r = h.bash("echo hi").await;
    assert!(r.output.contains("WITHOUT a sandbox"), "{}", r.output);
}

#[test]
fn tool_descriptions_are_what_the_model_reads() {
    let mut registry = Registry::new();
    Shell::new(FULL).register(&mut registry);
    let specs: Vec<Value> = registry
        .entries()
        .iter()
        .map(|e| json!({ "name": e.spec().name, "description": e.spec().description, "parameters": e.spec().parameters }))
        .collect();
    insta::assert_json_snapshot!(specs);
}

#[tokio::test]
async fn approved_external_directory_widens_the_sandbox() {
    if !landlock_or_skip("approved_external_directory_widens_the_sandbox") {
        return;
    }
    let answer = Arc::new(Answer(Reply::Once, Mutex::default(), None));
    let policy = SandboxPolicy { mode: SandboxMode::WorkspaceWrite, ..FULL };
    let h = Harness::with(policy, Arc::new(Ruleset::defaults()), answer.clone());
    let Some(outside) = scratch::outside_sandbox("approved_external_directory_widens_the_sandbox", Some(h.root.path()))
    else {
        return;
    };
    let target = outside.path().join("approved.txt");
    let r = h.bash(&format!("touch {}", target.display())).await;
    assert!(target.exists(), "{}", r.output);
    assert_eq!(r.metadata["escalated"], false, "{}", r.output);
    assert_eq!(*answer.1.lock().unwrap(), vec!["external_directory".to_string()]);
}

/// An executor whose bash tool and rules come from `config` (agents included), over a worktree
/// holding `a.txt`.
fn agent_harness(config: &str, approver: Arc<dyn Approver>) -> (Executor, tempfile::TempDir, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let canonical = root.path().canonicalize().unwrap();
    std::fs::write(canonical.join("a.txt"), "a\n").unwrap();
    let mut cfg = Config::default();
    cfg.merge_str(&canonical.join("toolshed.toml"), config).unwrap();
    let agents = Arc::new(Agents::from_config(&cfg, &canonical, None));
    let mut registry = Registry::new();
    Shell::from_config(&cfg).register(&mut registry);
    let executor =
        Executor::builder(registry, &canonical).data_dir(data.path()).permission(agents).approver(approver).build();
    (executor, root, data)
}

async fn bash_as(executor: &Executor, agent: &str, command: &str) -> ToolResult {
    executor.call(&Session::new("s", agent), ToolCall::json("c", "bash", json!({ "command": command }))).await
}

#[tokio::test]
async fn plan_cannot_make_sed_run_a_command_without_approval() {
    let (executor, root, _data) = agent_harness("[sandbox]\nallow_unsandboxed = true\n", Arc::new(RejectAll));
    let r = bash_as(&executor, "plan", r#"sed "1e touch pwned" a.txt"#).await;
    assert!(r.is_error, "{}", r.output);
    assert!(!root.path().join("pwned").exists(), "{}", r.output);
    let r = bash_as(&executor, "plan", "sed -n 'w pwned' a.txt").await;
    assert!(r.output.contains("Permission denied"), "{}", r.output);
    assert!(!root.path().join("pwned").exists(), "{}", r.output);
    let r = bash_as(&executor, "plan", "sed -n 1p a.txt").await;
    assert!(r.output.starts_with("a\n"), "a read-only sed still runs: {}", r.output);
}

#[tokio::test]
async fn plan_runs_commands_in_the_read_only_sandbox() {
    if !landlock_or_skip("plan_runs_commands_in_the_read_only_sandbox") {
        return;
    }
    let answer = Answer::all_but_escalation();
    let (executor, root, _data) = agent_harness("", answer.clone());
    // A write the analysis cannot see (the file's name is known only at run time; `touch
    // inside.txt` is an edit, which plan's rules deny before anything runs): the sandbox stops it.
    const WRITE: &str = "f=inside.txt; : > \"$f\"";
    let r = bash_as(&executor, "plan", WRITE).await;
    assert_eq!(r.metadata["sandbox"], "read-only", "{}", r.output);
    assert!(r.output.contains("Permission denied") || r.output.contains("Read-only"), "{}", r.output);
    assert!(!root.path().join("inside.txt").exists(), "{}", r.output);
    // Plan's rules deny escalation outright, so no one is even asked (not even under --yes).
    // (The write to a file named at run time is asked about as an edit: plan's rules deny
    // edits, and which file it is no rule can tell.)
    assert_eq!(*answer.1.lock().unwrap(), ["bash", "edit"]);
    assert!(r.output.contains("forbid `sandbox_escalation`"), "{}", r.output);
    let r = bash_as(&executor, "build", WRITE).await;
    assert_eq!(r.metadata["sandbox"], "workspace-write", "{}", r.output);
    assert!(root.path().join("inside.txt").exists(), "{}", r.output);
    let (executor, root, _data) = agent_harness("[agent.plan]\nsandbox = \"workspace-write\"\n", answer);
    let r = bash_as(&executor, "plan", WRITE).await;
    assert_eq!(r.metadata["sandbox"], "workspace-write", "{}", r.output);
    assert!(root.path().join("inside.txt").exists(), "{}", r.output);
}

#[test]
fn the_plan_agent_is_told_its_commands_are_read_only() {
    let shell = Shell::new(SandboxPolicy { mode: SandboxMode::WorkspaceWrite, allow_unsandboxed: true, ..FULL });
    assert_eq!(shell.policy_for("plan").mode, SandboxMode::ReadOnly);
    assert_eq!(shell.policy_for("explore").mode, SandboxMode::ReadOnly);
    assert_eq!(shell.policy_for("build").mode, SandboxMode::WorkspaceWrite);
    assert_eq!(Shell::new(FULL).policy_for("plan").mode, SandboxMode::FullAccess, "full-access stays");
    if !landlock_or_skip("the_plan_agent_is_told_its_commands_are_read_only") {
        return;
    }
    let mut registry = Registry::new();
    shell.register(&mut registry);
    let agents = Agents::from_config(&Config::default(), Path::new("/w"), None);
    let entry = registry.get("bash").unwrap();
    let plan = entry.tool.spec_for("plan", &agents).unwrap();
    assert!(plan.description.contains("read-only sandbox"), "{}", plan.description);
    assert!(entry.tool.spec_for("build", &agents).is_none());
}

/// The trust issue's examples end to end: under `rm *` denied (everything else allowed), with no
/// one to approve an ask and no sandbox to catch a mistake, none of them deletes the canary, and
/// the model is told the call was not run.
#[tokio::test]
async fn spellings_of_a_denied_command_are_not_run() {
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("bash", "rm *", Action::Deny));
    let h = Harness::with(FULL, Arc::new(rules), Arc::new(RejectAll));
    let canary = h.root.path().join("canary");
    for command in [
        "bash -c -- 'rm canary'",
        "bash -xc 'rm canary'",
        "bash -c -e 'rm canary'",
        "bash -O extglob -c 'rm canary'",
        "sh -c -- 'rm canary'",
        "coproc rm canary",
        "trap 'rm canary' EXIT",
        "bash <(echo rm canary)",
        "script -qc 'rm canary' /dev/null",
        "env -S'rm canary'",
        "env --split-string='rm canary'",
        "taskset 1 rm canary",
        "taskset -c 0 rm canary",
        "echo rm canary | xargs env",
        "flock lock -c 'rm canary'",
        "r\\\nm canary",
        "r{m,} canary",
        "$'\\x72m' canary",
        "nohup <<EOF rm canary\nbody\nEOF",
        "x='a[$(rm canary)]'; echo $((x))",
        "unknown-wrapper rm canary",
    ] {
        std::fs::write(&canary, "alive\n").unwrap();
        let r = h.bash(command).await;
        assert!(canary.exists(), "{command:?} deleted the canary: {}", r.output);
        assert!(r.is_error, "{command:?}: {}", r.output);
        assert!(
            r.output.starts_with("Permission denied") || r.output.contains("was not granted"),
            "{command:?}: {}",
            r.output
        );
    }
    let r = h.bash("ls canary && echo rm-free").await;
    assert!(!r.is_error && r.output.contains("rm-free"), "allowed commands still run: {}", r.output);
}

/// git running programs, end to end: `git *` allowed, `rm *` denied, the rest asks (rejected).
#[tokio::test]
async fn git_cannot_be_made_to_run_a_denied_command() {
    if !Path::new("/usr/bin/git").exists() {
        return;
    }
    let mut rules = Ruleset::new(vec![Rule::new("*", "*", Action::Allow), Rule::new("bash", "*", Action::Ask)]);
    rules.push(Rule::new("bash", "git *", Action::Allow));
    rules.push(Rule::new("bash", "rm *", Action::Deny));
    let h = Harness::with(FULL, Arc::new(rules), Arc::new(RejectAll));
    let root = h.root.path();
    let init = std::process::Command::new("git").args(["init", "-q"]).current_dir(root).status().unwrap();
    assert!(init.success());
    let canary = root.join("canary");
    for command in [
        "git config core.fsmonitor 'rm -f canary; echo'",
        "git config alias.st '!rm canary'",
        "GIT_EDITOR='rm canary' git commit --allow-empty",
        "git -c core.pager='rm canary' -p log",
        "git rebase -x 'rm canary' HEAD",
    ] {
        std::fs::write(&canary, "alive\n").unwrap();
        let r = h.bash(command).await;
        assert!(r.is_error, "{command:?}: {}", r.output);
        let r = h.bash("git status && git st").await;
        assert!(canary.exists(), "{command:?} then `git status` deleted the canary: {}", r.output);
    }
}

/// A command that signals a session's server by its pid file gets "No such process" (each
/// command has a process space of its own); it is told so and how to stop the session, not
/// left to think the server is gone. A command that looks for no process is told nothing.
#[tokio::test]
async fn a_command_that_cannot_reach_a_sessions_processes_is_told_how_to_stop_it() {
    if !landlock_or_skip("a_command_that_cannot_reach_a_sessions_processes_is_told_how_to_stop_it") {
        return;
    }
    let policy = SandboxPolicy { mode: SandboxMode::WorkspaceWrite, ..FULL };
    let h = Harness::new(policy);
    let r = h.call("bash", json!({ "command": "sleep 300 & echo $! > srv.pid; wait", "yield_ms": 300 })).await;
    assert!(r.output.contains("session"), "{}", r.output);
    let r = h.bash("kill $(cat srv.pid)").await;
    let own_space = r.output.contains("No such process");
    let note = "other commands can neither see nor signal its processes. To stop one, call bash_output with its session_id and stop: true";
    // Where the kernel gives no process space of its own, the kill reaches it and nothing is said.
    assert_eq!(r.output.contains(note), own_space, "{}", r.output);
    if own_space {
        assert!(r.output.contains("Shell session 1 (`sleep 300 & echo $! > srv.pid; wait`)"), "{}", r.output);
    }
    let r = h.bash("echo unrelated").await;
    assert!(!r.output.contains("process space"), "{}", r.output);
    let r = h.call("bash_output", json!({ "session_id": 1, "stop": true })).await;
    assert!(!r.is_error, "{}", r.output);
    let r = h.bash("pgrep -x sleep; true").await;
    assert!(!r.output.contains("process space"), "no session runs any more: {}", r.output);
}
