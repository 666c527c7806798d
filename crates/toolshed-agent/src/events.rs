//! What the loop reports while it runs: text as it streams, each tool call and result, step
//! boundaries, agent switches. The CLI prints them (or emits them as JSON Lines).

use std::sync::Arc;

use serde::Serialize;

/// One thing that happened in a session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A session started or resumed.
    SessionStart {
        /// The session.
        session_id: String,
        /// The session that started it as a task.
        parent_id: Option<String>,
        /// The agent.
        agent: String,
        /// The model.
        model: String,
    },
    /// A model step began.
    StepStart {
        /// The session.
        session_id: String,
        /// 1-based step number, counted across the session (all its prompts).
        step: u32,
    },
    /// Answer text streamed.
    Text {
        /// The session.
        session_id: String,
        /// The new text.
        text: String,
    },
    /// Reasoning text (summaries) streamed: shown dimmed, never sent back as text.
    Reasoning {
        /// The session.
        session_id: String,
        /// The new text.
        text: String,
    },
    /// A tool call started running.
    ToolCall {
        /// The session.
        session_id: String,
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The input as the model sent it.
        input: String,
    },
    /// A tool call finished.
    ToolResult {
        /// The session.
        session_id: String,
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// Whether it failed.
        is_error: bool,
        /// The text the model reads.
        output: String,
        /// The tool's title.
        title: Option<String>,
        /// How long it took.
        duration_ms: u64,
        /// What the tool reported besides its text (an edit's `diff`, a write's `created`...).
        #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
        metadata: serde_json::Map<String, serde_json::Value>,
    },
    /// A model step ended.
    StepFinish {
        /// The session.
        session_id: String,
        /// The step number.
        step: u32,
        /// Why the model stopped.
        stop: String,
        /// Prompt tokens, as the provider counted them (cached ones included).
        input_tokens: u64,
        /// Generated tokens (reasoning included).
        output_tokens: u64,
        /// Of the prompt, tokens read from the provider's cache.
        cached_input_tokens: u64,
        /// Of the prompt, tokens written to the provider's cache.
        cache_write_tokens: u64,
        /// Of the output, reasoning tokens.
        reasoning_tokens: u64,
        /// The model's context window.
        context_window: u64,
    },
    /// Old tool outputs were dropped from what is sent (the session keeps them).
    Pruned {
        /// The session.
        session_id: String,
        /// Estimated tokens dropped.
        tokens_dropped: u64,
        /// The estimated size of the next request before.
        tokens_before: u64,
    },
    /// The older history was summarised; what is sent now starts with the summary.
    Compaction {
        /// The session.
        session_id: String,
        /// `auto`, `overflow` or `manual`.
        trigger: String,
        /// Stored messages the summary stands for.
        summarised: i64,
        /// The estimated size of the next request before.
        tokens_before: u64,
        /// ... and after.
        tokens_after: u64,
        /// Prompt tokens of the summary request.
        input_tokens: u64,
        /// Tokens of the summary.
        output_tokens: u64,
    },
    /// A model request failed and is sent again after a wait.
    Retry {
        /// The session.
        session_id: String,
        /// The attempt that comes next (2 for the first retry).
        attempt: u32,
        /// Milliseconds until it is sent.
        wait_ms: u64,
        /// Why, for people: "rate limited", "the server answered 503".
        reason: String,
    },
    /// The session switched agents (plan ↔ build).
    AgentSwitch {
        /// The session.
        session_id: String,
        /// The previous agent.
        from: String,
        /// The new agent.
        to: String,
    },
    /// Something the user should know that is not an error of the prompt (e.g. undo is off).
    Notice {
        /// The session.
        session_id: String,
        /// What to tell.
        message: String,
    },
    /// The prompt is answered.
    Finish {
        /// The session.
        session_id: String,
        /// The final answer.
        text: String,
    },
    /// The prompt failed.
    Error {
        /// The session.
        session_id: String,
        /// What went wrong.
        message: String,
    },
}

impl Event {
    /// The session the event belongs to.
    pub fn session_id(&self) -> &str {
        match self {
            Event::SessionStart { session_id, .. }
            | Event::StepStart { session_id, .. }
            | Event::Text { session_id, .. }
            | Event::Reasoning { session_id, .. }
            | Event::ToolCall { session_id, .. }
            | Event::ToolResult { session_id, .. }
            | Event::StepFinish { session_id, .. }
            | Event::Pruned { session_id, .. }
            | Event::Compaction { session_id, .. }
            | Event::AgentSwitch { session_id, .. }
            | Event::Retry { session_id, .. }
            | Event::Notice { session_id, .. }
            | Event::Finish { session_id, .. }
            | Event::Error { session_id, .. } => session_id,
        }
    }
}

/// Receives events; called from the loop's tasks, so it must be quick.
pub type EventSink = Arc<dyn Fn(&Event) + Send + Sync>;

/// A sink that drops everything.
pub fn no_events() -> EventSink {
    Arc::new(|_| {})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One event of each kind. A new kind fails to compile here until it is added, and then
    /// the test below until docs/agent.md lists it.
    fn one_of_each() -> Vec<Event> {
        let s = || "s".to_string();
        let all = vec![
            Event::SessionStart { session_id: s(), parent_id: None, agent: s(), model: s() },
            Event::StepStart { session_id: s(), step: 1 },
            Event::Text { session_id: s(), text: s() },
            Event::Reasoning { session_id: s(), text: s() },
            Event::ToolCall { session_id: s(), call_id: s(), tool: s(), input: s() },
            Event::ToolResult {
                session_id: s(),
                call_id: s(),
                tool: s(),
                is_error: false,
                output: s(),
                title: None,
                duration_ms: 1,
                metadata: serde_json::Map::from_iter([("exit_code".to_string(), 0.into())]),
            },
            Event::StepFinish {
                session_id: s(),
                step: 1,
                stop: s(),
                input_tokens: 1,
                output_tokens: 1,
                cached_input_tokens: 1,
                cache_write_tokens: 1,
                reasoning_tokens: 1,
                context_window: 1,
            },
            Event::Pruned { session_id: s(), tokens_dropped: 1, tokens_before: 1 },
            Event::Compaction {
                session_id: s(),
                trigger: s(),
                summarised: 1,
                tokens_before: 1,
                tokens_after: 1,
                input_tokens: 1,
                output_tokens: 1,
            },
            Event::Retry { session_id: s(), attempt: 1, wait_ms: 1, reason: s() },
            Event::AgentSwitch { session_id: s(), from: s(), to: s() },
            Event::Notice { session_id: s(), message: s() },
            Event::Finish { session_id: s(), text: s() },
            Event::Error { session_id: s(), message: s() },
        ];
        for event in &all {
            match event {
                Event::SessionStart { .. }
                | Event::StepStart { .. }
                | Event::Text { .. }
                | Event::Reasoning { .. }
                | Event::ToolCall { .. }
                | Event::ToolResult { .. }
                | Event::StepFinish { .. }
                | Event::Pruned { .. }
                | Event::Compaction { .. }
                | Event::Retry { .. }
                | Event::AgentSwitch { .. }
                | Event::Notice { .. }
                | Event::Finish { .. }
                | Event::Error { .. } => {}
            }
        }
        all
    }

    #[test]
    fn every_json_event_and_field_is_in_the_documentation() {
        let docs = include_str!("../../../docs/agent.md");
        for event in one_of_each() {
            let json = serde_json::to_value(&event).unwrap();
            let kind = json["type"].as_str().unwrap();
            let row = docs
                .lines()
                .find(|l| l.starts_with(&format!("| `{kind}` |")))
                .unwrap_or_else(|| panic!("docs/agent.md has no row for `{kind}` events"));
            for field in json.as_object().unwrap().keys().filter(|k| !matches!(k.as_str(), "type" | "session_id")) {
                assert!(row.contains(&format!("`{field}`")), "the `{kind}` row does not name `{field}`: {row}");
            }
        }
    }
}
