//! The execution chain end to end, with test-only tools: admission, panics, bounding, schema
//! errors, time limits, cancellation, permissions, doom loops and recording.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolshed_core::exec::record::MemoryRecorder;
use toolshed_core::exec::{Executor, Session, ToolCall};
use toolshed_core::permission::{Action, ApproveAll, Rule, Ruleset};
use toolshed_core::registry::Registry;
use toolshed_core::tool::{ToolError, ToolOutput, tool_fn};

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// Milliseconds to sleep.
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct SizeArgs {
    /// Bytes of output.
    bytes: usize,
}

/// Start and end of every call, by tool name, plus the highest number of calls seen running.
#[derive(Default)]
struct Timeline {
    spans: Mutex<Vec<(String, Instant, Instant)>>,
    running: AtomicUsize,
}

impl Timeline {
    async fn span(&self, name: &str, ms: u64) -> usize {
        let now_running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        let start = Instant::now();
        tokio::time::sleep(Duration::from_millis(ms)).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.spans.lock().unwrap().push((name.to_string(), start, Instant::now()));
        now_running
    }
}

fn registry(timeline: Arc<Timeline>) -> Registry {
    let mut r = Registry::new();
    let t = timeline.clone();
    r.register_builtin(
        tool_fn("slow_read", "Reads slowly.", move |a: SleepArgs, _| {
            let t = t.clone();
            async move {
                t.span("read", a.ms).await;
                Ok(ToolOutput::text("read"))
            }
        })
        .read_only(),
    );
    let t = timeline;
    r.register_builtin(
        tool_fn("slow_write", "Writes slowly.", move |a: SleepArgs, _| {
            let t = t.clone();
            async move {
                let running = t.span("write", a.ms).await;
                Ok(ToolOutput::text(format!("running={running}")))
            }
        })
        .mutating(),
    );
    r.register_builtin(tool_fn("boom", "Panics.", |_: NoArgs, _| async move {
        if std::hint::black_box(true) {
            panic!("index out of bounds: the len is 0 but the index is 3");
        }
        Ok(ToolOutput::text("unreachable"))
    }));
    r.register_builtin(
        tool_fn("flood", "Prints a lot.", |a: SizeArgs, _| async move {
            let line = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n";
            let text: String = line.repeat(a.bytes / line.len() + 1);
            Ok(ToolOutput::text(&text[..a.bytes]))
        })
        .read_only(),
    );
    r.register_builtin(
        tool_fn("noop", "Does nothing.", |_: NoArgs, _| async { Ok(ToolOutput::text("ok")) }).read_only(),
    );
    r.register_builtin(tool_fn("forever", "Never returns unless told to stop.", |_: NoArgs, ctx| async move {
        ctx.cancellation().cancelled().await;
        Err(ToolError::model("partial output before stopping"))
    }));
    r
}

fn executor(timeline: Arc<Timeline>, data: &std::path::Path) -> Executor {
    Executor::builder(registry(timeline), data).data_dir(data).build()
}

fn overlaps(a: &(String, Instant, Instant), b: &(String, Instant, Instant)) -> bool {
    a.1 < b.2 && b.1 < a.2
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_safe_calls_overlap_and_exclusive_calls_run_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let exec = Arc::new(executor(timeline.clone(), tmp.path()));
    let session = Session::new("s", "build");
    let calls = [
        ("slow_read", 300),
        ("slow_read", 300),
        ("slow_write", 100),
        ("slow_read", 100),
        ("slow_write", 100),
        ("slow_read", 100),
    ];
    let mut handles = Vec::new();
    for (i, (tool, ms)) in calls.into_iter().enumerate() {
        let (exec, session) = (exec.clone(), session.clone());
        handles.push(tokio::spawn(async move {
            exec.call(&session, ToolCall::json(format!("c{i}"), tool, json!({"ms": ms}))).await
        }));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for h in handles {
        let r = h.await.unwrap();
        assert!(!r.is_error, "{}", r.output);
        if r.tool == "slow_write" {
            assert_eq!(r.output, "running=1");
        }
    }
    let spans = timeline.spans.lock().unwrap().clone();
    let reads: Vec<_> = spans.iter().filter(|s| s.0 == "read").collect();
    let writes: Vec<_> = spans.iter().filter(|s| s.0 == "write").collect();
    assert_eq!((reads.len(), writes.len()), (4, 2));
    assert!(overlaps(reads[0], reads[1]), "the first two reads must run at the same time: {spans:?}");
    for w in &writes {
        for other in spans.iter().filter(|s| !std::ptr::eq(*s, *w)) {
            assert!(!overlaps(w, other), "a write overlapped another call: {w:?} vs {other:?}");
        }
    }
}

#[tokio::test]
async fn a_panicking_tool_yields_an_error_result() {
    let tmp = tempfile::tempdir().unwrap();
    let exec = executor(Arc::default(), tmp.path());
    let r = exec.call(&Session::new("s", "build"), ToolCall::json("c", "boom", json!({}))).await;
    assert!(r.is_error && !r.fatal);
    assert!(r.output.starts_with("The boom tool crashed: index out of bounds"), "{}", r.output);
    assert_eq!(r.metadata["panic"], true);
    let after = exec.call(&Session::new("s", "build"), ToolCall::json("c", "noop", json!({}))).await;
    assert_eq!(after.output, "ok", "the executor keeps working after a panic");
}

#[tokio::test]
async fn ten_megabytes_of_output_are_bounded_and_spilled_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let exec = executor(Arc::default(), tmp.path());
    let size = 10 * 1024 * 1024;
    let r = exec.call(&Session::new("s", "build"), ToolCall::json("c", "flood", json!({"bytes": size}))).await;
    assert!(!r.is_error);
    assert!(r.output.len() <= 50 * 1024 + 1024, "bounded output is {} bytes", r.output.len());
    assert!(r.output.lines().count() <= 2000 + 10);
    let spill = r.spill_path().expect("a spill file");
    assert!(spill.starts_with(tmp.path().join("tool-output")));
    let full = std::fs::read(&spill).unwrap();
    assert_eq!(full.len(), size);
    assert!(full.starts_with(b"0123456789abcdef"));
    assert!(r.output.contains(&spill.display().to_string()));
    assert!(r.output.contains("lines omitted"), "{}", &r.output[..200]);
    assert_eq!(r.metadata["truncated"], true);
}

#[tokio::test]
async fn schema_errors_name_the_field_and_nothing_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let exec = executor(timeline.clone(), tmp.path());
    let session = Session::new("s", "build");
    let r = exec.call(&session, ToolCall::json("c", "slow_write", json!({"ms": "soon"}))).await;
    assert!(r.is_error);
    assert!(r.output.contains("`ms` must be an integer, but got a string \"soon\""), "{}", r.output);
    let r = exec.call(&session, ToolCall::json("c", "slow_write", json!({}))).await;
    assert!(r.output.contains("missing required parameter `ms` (integer: Milliseconds to sleep.)"), "{}", r.output);
    let r = exec.call(&session, ToolCall::raw("c", "slow_write", "{\"ms\": 5")).await;
    assert!(r.output.starts_with("The arguments for slow_write are not valid JSON"), "{}", r.output);
    assert!(timeline.spans.lock().unwrap().is_empty(), "no invalid call may run");
}

#[tokio::test]
async fn time_limit_stops_the_tool_and_keeps_its_partial_output() {
    let tmp = tempfile::tempdir().unwrap();
    let exec = Executor::builder(registry(Arc::default()), tmp.path())
        .data_dir(tmp.path())
        .default_time_limit(Duration::from_millis(100))
        .build();
    let started = Instant::now();
    let r = exec.call(&Session::new("s", "build"), ToolCall::json("c", "forever", json!({}))).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(r.is_error);
    assert_eq!(r.output, "partial output before stopping\n\nforever timed out after 100 ms and was stopped.");
}

#[tokio::test]
async fn cancelling_the_turn_interrupts_the_call() {
    let tmp = tempfile::tempdir().unwrap();
    let exec = executor(Arc::default(), tmp.path());
    let call = ToolCall::json("c", "forever", json!({}));
    let cancel = call.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let r = exec.call(&Session::new("s", "build"), call).await;
    assert!(r.is_error);
    assert_eq!(r.metadata["interrupted"], true);
    assert!(r.output.ends_with("The forever call was interrupted by the user."), "{}", r.output);
}

#[tokio::test]
async fn deny_rules_stop_the_call_before_it_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let mut rules = Ruleset::defaults();
    rules.push(Rule::new("slow_write", "*", Action::Deny));
    let exec = Executor::builder(registry(timeline.clone()), tmp.path())
        .data_dir(tmp.path())
        .permission(Arc::new(rules))
        .approver(Arc::new(ApproveAll))
        .build();
    let r = exec.call(&Session::new("s", "build"), ToolCall::json("c", "slow_write", json!({"ms": 1}))).await;
    assert!(r.is_error);
    assert!(r.output.starts_with("Permission denied: the rules of agent `build` forbid `slow_write`"), "{}", r.output);
    assert!(timeline.spans.lock().unwrap().is_empty());
}

#[tokio::test]
async fn third_identical_call_in_a_row_asks_about_a_doom_loop() {
    let tmp = tempfile::tempdir().unwrap();
    let exec = executor(Arc::default(), tmp.path());
    let session = Session::new("s", "build");
    for _ in 0..2 {
        let r = exec.call(&session, ToolCall::json("c", "noop", json!({}))).await;
        assert!(!r.is_error);
    }
    let r = exec.call(&session, ToolCall::json("c", "noop", json!({}))).await;
    assert!(r.is_error);
    assert!(
        r.output.starts_with("You have called noop three times in a row with identical arguments."),
        "{}",
        r.output
    );
}

#[tokio::test]
async fn every_call_is_recorded_with_its_result() {
    let tmp = tempfile::tempdir().unwrap();
    let recorder = Arc::new(MemoryRecorder::default());
    let exec =
        Executor::builder(registry(Arc::default()), tmp.path()).data_dir(tmp.path()).recorder(recorder.clone()).build();
    let session = Session::new("s9", "build");
    exec.call(&session, ToolCall::json("c1", "noop", json!({})).with_message("m1")).await;
    exec.call(&session, ToolCall::json("c2", "nosuch", json!({})).with_message("m1")).await;
    let records = recorder.records();
    assert_eq!(records.len(), 2);
    assert_eq!((records[0].session_id.as_str(), records[0].message_id.as_str()), ("s9", "m1"));
    assert_eq!(records[0].result.output, "ok");
    assert!(records[1].result.is_error);
}

/// Answers every question after a pause, as a person does.
struct SlowPerson(Duration);

impl toolshed_core::permission::Approver for SlowPerson {
    fn approve<'a>(
        &'a self,
        _request: &'a toolshed_core::permission::ApprovalRequest,
    ) -> toolshed_core::tool::BoxFuture<'a, toolshed_core::permission::Reply> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            toolshed_core::permission::Reply::Once
        })
    }
}

#[tokio::test]
async fn the_time_a_question_waits_is_not_the_tools() {
    let tmp = tempfile::tempdir().unwrap();
    let ask = Ruleset::new(vec![Rule::new("*", "*", Action::Ask)]);
    let exec = Executor::builder(registry(Arc::default()), tmp.path())
        .data_dir(tmp.path())
        .permission(Arc::new(ask))
        .approver(Arc::new(SlowPerson(Duration::from_millis(400))))
        .build();
    let session = Session::new("s", "build");
    let started = Instant::now();
    let r = exec.call(&session, ToolCall::json("c", "slow_read", json!({"ms": 50}))).await;
    assert!(!r.is_error, "{}", r.output);
    assert!(started.elapsed() >= Duration::from_millis(450), "the question was asked");
    assert!(r.duration >= Duration::from_millis(50), "{:?}", r.duration);
    assert!(r.duration < Duration::from_millis(300), "the 400 ms of the question are not counted: {:?}", r.duration);
}

/// Someone who never answers.
struct NoAnswer;

impl toolshed_core::permission::Approver for NoAnswer {
    fn approve<'a>(
        &'a self,
        _: &'a toolshed_core::permission::ApprovalRequest,
    ) -> toolshed_core::tool::BoxFuture<'a, toolshed_core::permission::Reply> {
        Box::pin(std::future::pending())
    }
}

/// An interrupt while a question waits for its answer ends the call at once, interrupted: the
/// turn does not wait for the answer, and an answer that comes later runs nothing.
#[tokio::test]
async fn cancelling_the_turn_while_a_question_waits_interrupts_the_call_without_running_it() {
    let tmp = tempfile::tempdir().unwrap();
    let timeline = Arc::new(Timeline::default());
    let ask = Ruleset::new(vec![Rule::new("*", "*", Action::Ask)]);
    let exec = Executor::builder(registry(timeline.clone()), tmp.path())
        .data_dir(tmp.path())
        .permission(Arc::new(ask))
        .approver(Arc::new(NoAnswer))
        .build();
    let call = ToolCall::json("c", "slow_write", json!({"ms": 1}));
    let cancel = call.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let r = tokio::time::timeout(Duration::from_secs(10), exec.call(&Session::new("s", "build"), call)).await;
    let r = r.expect("the call waited for an answer after the interrupt");
    assert!(r.is_error);
    assert_eq!(r.metadata["interrupted"], true, "{}", r.output);
    assert!(timeline.spans.lock().unwrap().is_empty(), "the tool ran");
}
