//! Loop overhead per tool call, without the tool and without the model: an in-process fake
//! model answers instantly (no HTTP), the tool does nothing, and what is measured is the rest —
//! building each request (system prompt, context providers, history from SQLite, tool list),
//! decoding the stream, storing messages and parts (SQLite, WAL), the execution chain, and
//! events. Each session runs `STEPS` steps of `width` calls, then a final answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use toolshed_agent::{ModelClient, ModelSource, Runtime, Settings, Store, default_rules};
use toolshed_core::agents::Agents;
use toolshed_core::config::Config;
use toolshed_core::registry::Registry;
use toolshed_core::tool::{BoxFuture, ToolOutput, tool_fn};
use toolshed_llm::{EventStream, LlmError, Request, Role, StopReason, StreamEvent, ToolCall, Usage};

/// Steps per session: the history grows over them, as in a real session.
const STEPS: usize = 10;

#[allow(dead_code)]
#[derive(Deserialize, JsonSchema)]
struct ReadLike {
    /// The file to read.
    file_path: String,
    /// 1-based first line.
    offset: Option<u64>,
}

struct InstantModel {
    width: usize,
}

impl ModelClient for InstantModel {
    fn stream<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<EventStream, LlmError>> {
        let step = request.messages.iter().filter(|m| m.role == Role::Assistant).count();
        let finished = |stop| StreamEvent::Finished { stop, usage: Usage::new(1000, 10) };
        let events: Vec<StreamEvent> = if step < STEPS {
            let mut events: Vec<StreamEvent> = (0..self.width)
                .map(|i| {
                    StreamEvent::ToolCall(ToolCall {
                        id: format!("call_{step}_{i}"),
                        name: "noop".into(),
                        arguments: format!(r#"{{"file_path":"src/f{i}.rs","offset":{step}}}"#),
                        kind: Default::default(),
                    })
                })
                .collect();
            events.push(finished(StopReason::ToolUse));
            events
        } else {
            vec![StreamEvent::TextDelta("done".into()), finished(StopReason::EndTurn)]
        };
        Box::pin(async move { Ok(futures_util::stream::iter(events.into_iter().map(Ok)).boxed()) })
    }
}

struct Models(Arc<InstantModel>);

impl ModelSource for Models {
    fn client(&self, _model: &str) -> Result<Arc<dyn ModelClient>, LlmError> {
        Ok(self.0.clone())
    }
    fn context_window(&self, _model: &str) -> u64 {
        200_000
    }
}

fn runtime(dir: &std::path::Path, width: usize) -> Arc<Runtime> {
    let mut registry = Registry::new();
    registry.register_builtin(
        tool_fn("noop", "Does nothing.", |_: ReadLike, _| async { Ok(ToolOutput::text("ok")) }).read_only(),
    );
    let config = Config::default();
    let agents = Arc::new(Agents::with_defaults(&config, dir, None, &default_rules()));
    let store = Arc::new(Store::open(dir.join("sessions.db")).unwrap());
    let settings =
        Settings { max_steps: 100, max_depth: 1, root: dir.to_path_buf(), cwd: dir.to_path_buf(), compact_at: 0.85 };
    let permission = agents.clone();
    let data = dir.join("data");
    Runtime::builder(registry, store, Arc::new(Models(Arc::new(InstantModel { width }))), agents, settings)
        .build(move |b| b.permission(permission).data_dir(data))
}

fn bench_loop(c: &mut Criterion) {
    let tokio_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for width in [1usize, 8] {
        let rt = runtime(dir.path(), width);
        c.bench_function(&format!("loop/per_call/{width}_per_step"), |b| {
            b.iter_custom(|iters| {
                // One unit = one tool call; whole sessions of STEPS * width calls are run.
                let calls_per_session = (STEPS * width) as u64;
                let sessions = iters.div_ceil(calls_per_session);
                let mut total = Duration::ZERO;
                for _ in 0..sessions {
                    let session = rt.create_session("build", "bench/instant", None).unwrap();
                    let started = Instant::now();
                    let answer = tokio_rt.block_on(rt.prompt(&session, "go", &CancellationToken::new())).unwrap();
                    total += started.elapsed();
                    assert_eq!(answer, "done");
                }
                total.mul_f64(iters as f64 / (sessions * calls_per_session) as f64)
            });
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(8));
    targets = bench_loop
}
criterion_main!(benches);
