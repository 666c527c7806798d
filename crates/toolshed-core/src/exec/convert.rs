//! Stage 6, convert: every outcome becomes a [`ToolResult`]. Failures are results with
//! `is_error: true` and a message the model can act on; only a Fatal error ends the turn.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::{ToolCall, ToolResult};
use crate::context::ToolContext;
use crate::tool::{ToolError, ToolOutput};

/// Why a call did not produce an output.
#[derive(Debug)]
pub enum Failure {
    /// The tool (or an earlier stage) returned an error.
    Tool(ToolError),
    /// The tool panicked; the message is the panic's.
    Panic(String),
    /// The time limit passed; `partial` is what the tool returned when told to stop.
    TimedOut {
        /// The limit that passed.
        limit: Duration,
        /// Output the tool handed back within the grace period.
        partial: Option<Box<ToolOutput>>,
    },
    /// The user interrupted the turn.
    Cancelled {
        /// Output the tool handed back within the grace period.
        partial: Option<Box<ToolOutput>>,
    },
}

impl From<ToolError> for Failure {
    fn from(e: ToolError) -> Self {
        Failure::Tool(e)
    }
}

/// The result for `call` given its outcome.
pub fn convert(
    call: &ToolCall,
    outcome: Result<ToolOutput, Failure>,
    ctx: &ToolContext,
    started: Instant,
) -> ToolResult {
    let tool = &call.name;
    let mut result = ToolResult {
        call_id: call.id.clone(),
        tool: tool.clone(),
        is_error: true,
        fatal: false,
        output: String::new(),
        title: None,
        metadata: ctx.take_metadata(),
        attachments: Vec::new(),
        duration: started.elapsed(),
        spill: None,
        passthrough: None,
        refused_at: None,
    };
    match outcome {
        Ok(output) => {
            result.is_error = false;
            absorb(&mut result, output);
        }
        Err(Failure::Tool(ToolError::RespondToModel(message))) => result.output = message,
        Err(Failure::Tool(e @ ToolError::Fatal(_))) => {
            result.fatal = true;
            result.output = e.to_string();
        }
        Err(Failure::Panic(message)) => {
            result.output = format!(
                "The {tool} tool crashed: {message}. This is a bug in the tool, not a problem with your arguments; do not repeat the same call, try another way."
            );
            result.metadata.insert("panic".into(), Value::Bool(true));
        }
        Err(Failure::TimedOut { limit, partial }) => {
            stopped(&mut result, partial, format!("{tool} timed out after {} ms and was stopped.", limit.as_millis()));
            result.metadata.insert("timed_out".into(), Value::Bool(true));
        }
        Err(Failure::Cancelled { partial }) => {
            stopped(&mut result, partial, format!("The {tool} call was interrupted by the user."));
            result.metadata.insert("interrupted".into(), Value::Bool(true));
        }
    }
    result
}

fn absorb(result: &mut ToolResult, output: ToolOutput) {
    result.output = output.text;
    result.title = output.title;
    result.metadata.extend(output.metadata);
    result.attachments = output.attachments;
    result.spill = output.spill;
    result.passthrough = output.passthrough;
}

fn stopped(result: &mut ToolResult, partial: Option<Box<ToolOutput>>, note: String) {
    if let Some(partial) = partial {
        absorb(result, *partial);
    }
    if result.output.trim().is_empty() {
        result.output = note;
    } else {
        result.output = format!("{}\n\n{note}", result.output.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ToolContext {
        ToolContext::standalone("/tmp", "/tmp")
    }

    fn call() -> ToolCall {
        ToolCall::json("c1", "slow", serde_json::json!({}))
    }

    #[test]
    fn timeout_keeps_partial_output_and_says_so() {
        let partial = Some(Box::new(ToolOutput::text("line 1\nline 2\n")));
        let outcome = Err(Failure::TimedOut { limit: Duration::from_millis(1500), partial });
        let r = convert(&call(), outcome, &ctx(), Instant::now());
        assert!(r.is_error && !r.fatal);
        assert_eq!(r.output, "line 1\nline 2\n\nslow timed out after 1500 ms and was stopped.");
        assert_eq!(r.metadata["timed_out"], true);
    }

    #[test]
    fn fatal_errors_are_marked_fatal() {
        let r = convert(&call(), Err(Failure::Tool(ToolError::fatal("disk full"))), &ctx(), Instant::now());
        assert!(r.is_error && r.fatal);
        assert_eq!(r.output, "fatal error: disk full");
    }

    #[test]
    fn context_metadata_survives_failures() {
        let c = ctx();
        c.set_metadata("exit_code", 3);
        let r = convert(&call(), Err(Failure::Cancelled { partial: None }), &c, Instant::now());
        assert_eq!(r.metadata["exit_code"], 3);
        assert_eq!(r.metadata["interrupted"], true);
        assert_eq!(r.output, "The slow call was interrupted by the user.");
    }
}
