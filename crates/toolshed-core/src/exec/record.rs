//! Stage 8, record: the call and its result are written to the session's history through a
//! [`Recorder`] (in memory here; SQLite arrives with the agent).

use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::Value;

use super::{CallInput, Session, ToolCall, ToolResult};

/// One finished call, as handed to a recorder.
#[derive(Clone, Copy, Debug)]
pub struct CallRecord<'a> {
    /// The session.
    pub session_id: &'a str,
    /// The agent.
    pub agent: &'a str,
    /// The call as the model made it.
    pub call: &'a ToolCall,
    /// The result as the model sees it.
    pub result: &'a ToolResult,
    /// When the call finished.
    pub finished_at: SystemTime,
}

/// Persists calls as parts of a session.
pub trait Recorder: Send + Sync {
    /// Stores one finished call.
    fn record(&self, record: CallRecord<'_>) -> Result<(), String>;
}

/// Records nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRecorder;

impl Recorder for NoRecorder {
    fn record(&self, _record: CallRecord<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// A call kept by [`MemoryRecorder`].
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedCall {
    /// The session.
    pub session_id: String,
    /// The message that made the call.
    pub message_id: String,
    /// The tool name.
    pub tool: String,
    /// The input as sent.
    pub input: CallInput,
    /// The result.
    pub result: ToolResult,
}

/// Keeps every call in memory.
#[derive(Debug, Default)]
pub struct MemoryRecorder {
    records: Mutex<Vec<RecordedCall>>,
}

impl MemoryRecorder {
    /// Everything recorded so far, in order.
    pub fn records(&self) -> Vec<RecordedCall> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Recorder for MemoryRecorder {
    fn record(&self, r: CallRecord<'_>) -> Result<(), String> {
        let kept = RecordedCall {
            session_id: r.session_id.to_string(),
            message_id: r.call.message_id.clone(),
            tool: r.call.name.clone(),
            input: r.call.input.clone(),
            result: r.result.clone(),
        };
        self.records.lock().unwrap_or_else(PoisonError::into_inner).push(kept);
        Ok(())
    }
}

/// Records `result`; a failure to record is noted in the result's metadata, never lost silently.
pub fn record(recorder: &dyn Recorder, session: &Session, call: &ToolCall, result: &mut ToolResult) {
    let record =
        CallRecord { session_id: session.id(), agent: session.agent(), call, result, finished_at: SystemTime::now() };
    if let Err(e) = recorder.record(record) {
        result.metadata.insert("record_error".into(), Value::String(e));
    }
}
