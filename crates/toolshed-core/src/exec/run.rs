//! Stage 5, run: execute the invocation under its time limit and the turn's cancellation,
//! with panics caught. On timeout or interruption the tool is told to stop (its cancellation
//! token fires) and given a short grace period to return what it has.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::convert::Failure;
use crate::context::ToolContext;
use crate::tool::{Invocation, ToolError, ToolOutput, ToolSpec};

/// How long a stopped tool may take to hand back partial output.
pub const STOP_GRACE: Duration = Duration::from_secs(2);

/// Runs `invocation` to completion, timeout or cancellation.
pub async fn run(
    invocation: Box<dyn Invocation + '_>,
    ctx: ToolContext,
    limit: Duration,
) -> Result<ToolOutput, Failure> {
    let token = ctx.cancellation().clone();
    let mut fut = CatchUnwind(invocation.run(ctx));
    let stop = tokio::select! {
        biased;
        result = &mut fut => {
            // A tool that returns because it heard the cancellation was interrupted, whatever it says.
            if !token.is_cancelled() {
                return finished(result);
            }
            return Err(Failure::Cancelled { partial: partial(result) });
        }
        () = token.cancelled() => Stop::Cancelled,
        () = tokio::time::sleep(limit) => Stop::TimedOut(limit),
    };
    token.cancel();
    let partial = tokio::time::timeout(STOP_GRACE, fut).await.ok().and_then(partial);
    Err(match stop {
        Stop::Cancelled => Failure::Cancelled { partial },
        Stop::TimedOut(limit) => Failure::TimedOut { limit, partial },
    })
}

/// What a stopped tool handed back, as output.
fn partial(result: Result<Result<ToolOutput, ToolError>, String>) -> Option<Box<ToolOutput>> {
    match result {
        Ok(Ok(output)) => Some(Box::new(output)),
        Ok(Err(ToolError::RespondToModel(text) | ToolError::Fatal(text))) => Some(Box::new(ToolOutput::text(text))),
        Err(_) => None,
    }
}

enum Stop {
    Cancelled,
    TimedOut(Duration),
}

fn finished(result: Result<Result<ToolOutput, ToolError>, String>) -> Result<ToolOutput, Failure> {
    match result {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(e)) => Err(Failure::Tool(e)),
        Err(panic) => Err(Failure::Panic(panic)),
    }
}

/// Runs synchronous tool code (decoding, permission patterns) with panics turned into errors.
pub fn guard<T>(spec: &ToolSpec, f: impl FnOnce() -> Result<T, ToolError>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(Failure::Tool(e)),
        Err(payload) => {
            Err(Failure::Panic(format!("{} (while preparing {})", panic_message(payload.as_ref()), spec.name)))
        }
    }
}

/// A future whose panics become `Err(message)`; it is not polled again after one.
struct CatchUnwind<F>(F);

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(panic_message(payload.as_ref()))),
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}
