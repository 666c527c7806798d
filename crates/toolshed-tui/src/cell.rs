//! The transcript: what a session shows, cell by cell, built from the agent's events. A cell is
//! a user prompt, an answer (Markdown, growing while it streams), a reasoning summary, one tool
//! call (its state moving running → done / failed), or a notice (a compaction, an error).

use std::collections::HashMap;

use serde_json::{Map, Value};
use toolshed_agent::Event;
use toolshed_agent::store::{CallState, StoredMessage, StoredPart};

/// One tool call as the transcript shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCell {
    /// The call id.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The input as the model sent it.
    pub input: String,
    /// Where it stands.
    pub state: ToolState,
    /// The tool's title for the result.
    pub title: Option<String>,
    /// The result text.
    pub output: String,
    /// What the tool reported besides its text (an edit's `diff`...).
    pub metadata: Map<String, Value>,
    /// How long the tool ran (not counting a question's wait).
    pub duration_ms: Option<u64>,
    /// 0 for the session's own calls, 1 for a sub-agent's.
    pub depth: u8,
    /// Whether the whole body is shown.
    pub expanded: bool,
    /// A `task`'s sub-agent calls, in order.
    pub children: Vec<ToolCell>,
}

impl ToolCell {
    /// A call of `tool` with `input` that has just started.
    pub fn new(call_id: &str, tool: &str, input: &str) -> ToolCell {
        ToolCell {
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            input: input.to_string(),
            state: ToolState::Running,
            title: None,
            output: String::new(),
            metadata: Map::new(),
            duration_ms: None,
            depth: 0,
            expanded: false,
            children: Vec::new(),
        }
    }

    fn finish(
        &mut self,
        is_error: bool,
        output: &str,
        title: Option<&String>,
        duration_ms: u64,
        metadata: &Map<String, Value>,
    ) {
        self.state = if is_error { ToolState::Failed } else { ToolState::Done };
        output.clone_into(&mut self.output);
        self.title = title.cloned();
        self.duration_ms = Some(duration_ms);
        self.metadata.clone_from(metadata);
    }
}

/// A tool call's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolState {
    /// It runs.
    Running,
    /// It finished.
    Done,
    /// It failed (or was rejected).
    Failed,
}

/// One cell of the transcript.
// Most cells are tool calls; boxing them would cost an allocation each for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// What the user sent.
    User(String),
    /// The model's answer, Markdown; `done` once it stopped streaming.
    Answer {
        /// The text so far.
        text: String,
        /// Whether it is complete.
        done: bool,
    },
    /// A reasoning summary (shown dimmed).
    Reasoning(String),
    /// A tool call.
    Tool(ToolCell),
    /// A diff to show whole (`/diff`).
    Diff(String),
    /// Something toolshed says (a compaction, a notice, an error).
    Notice {
        /// The text.
        text: String,
        /// Whether it is an error.
        error: bool,
    },
}

/// The cells of a session, in order.
#[derive(Debug, Default)]
pub struct Transcript {
    cells: Vec<Cell>,
    /// The session whose text is the answer (the first to start).
    main: Option<String>,
    calls: HashMap<String, usize>,
    /// Sub-agent sessions and the `task` cell that started each.
    tasks: HashMap<String, usize>,
    /// Sub-agent calls: the `task` cell and the place among its children.
    child_calls: HashMap<String, (usize, usize)>,
    /// Notices that came while an answer streamed: they follow it once it ends, so it stays
    /// one text (a list it holds is not cut in two).
    held: Vec<Cell>,
}

impl Transcript {
    /// From now on `session`'s events are the answer (a session opened with `/new` or
    /// `/sessions`); any other session's are a sub-agent's.
    pub fn set_main(&mut self, session: &str) {
        self.main = Some(session.to_string());
    }

    /// The cells.
    pub fn cells(&self) -> &[Cell] {
        &self.cells
    }

    /// The call `call_id`, the session's own or a sub-agent's.
    pub fn call(&self, call_id: &str) -> Option<&ToolCell> {
        if let Some(&(task, child)) = self.child_calls.get(call_id) {
            return match self.cells.get(task) {
                Some(Cell::Tool(parent)) => parent.children.get(child),
                _ => None,
            };
        }
        match self.calls.get(call_id).and_then(|&i| self.cells.get(i)) {
            Some(Cell::Tool(cell)) => Some(cell),
            _ => None,
        }
    }

    /// The transcript of a stored session (when one is resumed): its prompts, answers and
    /// tool calls as they ended.
    pub fn from_stored(messages: &[StoredMessage]) -> Transcript {
        let mut t = Transcript::default();
        for m in messages {
            for part in &m.parts {
                match part {
                    StoredPart::Text { text } if m.role == toolshed_llm::Role::User => {
                        match crate::mentions::typed_part(text) {
                            (typed, 0) => t.push_user(typed),
                            (typed, 1) => t.push_user(&format!("{typed}\n(1 file attached)")),
                            (typed, n) => t.push_user(&format!("{typed}\n({n} files attached)")),
                        }
                    }
                    StoredPart::Text { text } if !text.trim().is_empty() => {
                        t.cells.push(Cell::Answer { text: text.clone(), done: true });
                    }
                    StoredPart::Tool {
                        call_id,
                        tool,
                        input,
                        state,
                        output,
                        is_error,
                        title,
                        metadata,
                        started_at,
                        finished_at,
                        ..
                    } => {
                        let state = match state {
                            CallState::Completed if !is_error => ToolState::Done,
                            _ => ToolState::Failed,
                        };
                        t.cells.push(Cell::Tool(ToolCell {
                            state,
                            title: title.clone(),
                            output: output.clone().unwrap_or_default(),
                            metadata: metadata.as_object().cloned().unwrap_or_default(),
                            // The tool's own time, as shown live: the stored start and end
                            // include the wait for a question's answer.
                            duration_ms: metadata
                                .get("duration_ms")
                                .and_then(Value::as_u64)
                                .or_else(|| started_at.zip(*finished_at).map(|(s, f)| (f - s).max(0) as u64)),
                            ..ToolCell::new(call_id, tool, input)
                        }));
                    }
                    _ => {}
                }
            }
            // An answer that ended early says so, as it did live.
            if m.role == toolshed_llm::Role::Assistant {
                let answered =
                    m.parts.iter().any(|p| matches!(p, StoredPart::Text { text } if !text.trim().is_empty()));
                if let Some(error) = &m.error {
                    t.push_error(error);
                } else if answered && m.finished_at.is_none() {
                    t.push_notice("cut off: toolshed stopped before this answer was finished", false);
                } else if m.stop_reason.as_deref() == Some("maxtokens") {
                    t.push_notice("cut off: the model hit its output-token limit", false);
                }
            }
        }
        t.close_answer();
        t
    }

    /// Adds a cell.
    pub fn push(&mut self, cell: Cell) {
        self.close_answer();
        self.cells.push(cell);
    }

    /// Adds the user's prompt.
    pub fn push_user(&mut self, text: &str) {
        self.close_answer();
        self.cells.push(Cell::User(text.to_string()));
    }

    /// Adds a notice; one that comes while an answer streams follows that answer.
    pub fn push_notice(&mut self, text: &str, error: bool) {
        let notice = Cell::Notice { text: text.to_string(), error };
        if matches!(self.cells.last(), Some(Cell::Answer { done: false, .. })) {
            self.held.push(notice);
            return;
        }
        self.close_answer();
        self.cells.push(notice);
    }

    /// Marks every call still running as ended without a result (`why`), and the answer as
    /// finished: the application is closing, and a spinner left in the scrollback would
    /// claim it still runs.
    pub fn end_running(&mut self, why: &str) {
        fn end(cell: &mut ToolCell, why: &str) {
            if cell.state == ToolState::Running {
                cell.state = ToolState::Failed;
                why.clone_into(&mut cell.output);
            }
            for child in &mut cell.children {
                end(child, why);
            }
        }
        for cell in &mut self.cells {
            if let Cell::Tool(tool) = cell {
                end(tool, why);
            }
        }
        self.close_answer();
    }

    /// Shows why a turn ended early, once: the loop sends it as an event and returns it as
    /// well, in either order.
    pub fn push_error(&mut self, message: &str) {
        let (text, error) = if message == toolshed_agent::AgentError::Interrupted.to_string() {
            ("interrupted; the session is intact", false)
        } else {
            (message, true)
        };
        // The turn ended: an answer it cut off is over.
        self.close_answer();
        let last = self.cells.last();
        if !matches!(last, Some(Cell::Notice { text: last, .. }) if last == text) {
            self.push_notice(text, error);
        }
    }

    fn close_answer(&mut self) {
        if let Some(Cell::Answer { done, .. }) = self.cells.last_mut() {
            *done = true;
        }
        self.cells.append(&mut self.held);
    }

    fn is_main(&mut self, session: &str) -> bool {
        self.main.get_or_insert_with(|| session.to_string()) == session
    }

    /// Takes in one event of the loop.
    pub fn apply(&mut self, event: &Event) {
        let main = self.is_main(event.session_id());
        match event {
            Event::Text { text, .. } if main => match self.cells.last_mut() {
                Some(Cell::Answer { text: so_far, done: false }) => so_far.push_str(text),
                _ => self.cells.push(Cell::Answer { text: text.clone(), done: false }),
            },
            Event::Reasoning { text, .. } if main => match self.cells.last_mut() {
                Some(Cell::Reasoning(so_far)) => so_far.push_str(text),
                _ => {
                    self.close_answer();
                    self.cells.push(Cell::Reasoning(text.clone()));
                }
            },
            Event::SessionStart { session_id, parent_id: Some(_), .. } if !main => {
                // A sub-agent: its calls go in the body of the running `task` that has none yet.
                let taken: Vec<usize> = self.tasks.values().copied().collect();
                let task = self
                    .cells
                    .iter()
                    .rposition(|c| matches!(c, Cell::Tool(t) if t.tool == "task" && t.state == ToolState::Running));
                if let Some(i) = task.filter(|i| !taken.contains(i)) {
                    self.tasks.insert(session_id.clone(), i);
                }
            }
            Event::ToolCall { session_id, call_id, tool, input } => {
                if let Some(&task) = self.tasks.get(session_id)
                    && let Some(Cell::Tool(parent)) = self.cells.get_mut(task)
                {
                    self.child_calls.insert(call_id.clone(), (task, parent.children.len()));
                    parent.children.push(ToolCell { depth: parent.depth + 1, ..ToolCell::new(call_id, tool, input) });
                    return;
                }
                self.close_answer();
                self.calls.insert(call_id.clone(), self.cells.len());
                self.cells.push(Cell::Tool(ToolCell { depth: u8::from(!main), ..ToolCell::new(call_id, tool, input) }));
            }
            Event::ToolResult { call_id, is_error, output, title, duration_ms, metadata, .. } => {
                if let Some(&(task, child)) = self.child_calls.get(call_id) {
                    if let Some(Cell::Tool(parent)) = self.cells.get_mut(task)
                        && let Some(cell) = parent.children.get_mut(child)
                    {
                        cell.finish(*is_error, output, title.as_ref(), *duration_ms, metadata);
                    }
                } else if let Some(Cell::Tool(cell)) = self.calls.get(call_id).and_then(|&i| self.cells.get_mut(i)) {
                    cell.finish(*is_error, output, title.as_ref(), *duration_ms, metadata);
                }
            }
            Event::Compaction { summarised, tokens_before, tokens_after, .. } => self.push_notice(
                &format!("compacted: {summarised} messages summarised (~{tokens_before} → ~{tokens_after} tokens)"),
                false,
            ),
            Event::Notice { message, .. } => self.push_notice(message, false),
            Event::Error { message, .. } if main => self.push_error(message),
            Event::Finish { .. } if main => self.close_answer(),
            Event::AgentSwitch { from, to, .. } => self.push_notice(&format!("agent: {from} → {to}"), false),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str, session: &str) -> Event {
        Event::Text { session_id: session.into(), text: s.into() }
    }

    #[test]
    fn after_another_session_is_opened_its_answers_are_the_answer() {
        let mut t = Transcript::default();
        t.apply(&text("first", "s1"));
        t.apply(&Event::Finish { session_id: "s1".into(), text: "first".into() });
        t.set_main("s2");
        t.push_user("again");
        t.apply(&text("second", "s2"));
        t.apply(&Event::Error { session_id: "s2".into(), message: "it broke".into() });
        let answers: Vec<&str> = t
            .cells()
            .iter()
            .filter_map(|c| match c {
                Cell::Answer { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(answers, ["first", "second"]);
        assert!(matches!(t.cells().last(), Some(Cell::Notice { text, error: true }) if text == "it broke"));
    }

    #[test]
    fn a_notice_that_comes_while_an_answer_streams_follows_it_whole() {
        let mut t = Transcript::default();
        t.push_user("list them");
        t.apply(&text("1. one\n2. tw", "s"));
        t.apply(&Event::Notice { session_id: "s".into(), message: "a notice".into() });
        t.apply(&text("o\n3. three\n", "s"));
        assert_eq!(t.cells().len(), 2, "{:?}", t.cells());
        t.apply(&Event::Finish { session_id: "s".into(), text: String::new() });
        assert_eq!(t.cells()[1], Cell::Answer { text: "1. one\n2. two\n3. three\n".into(), done: true });
        assert_eq!(t.cells()[2], Cell::Notice { text: "a notice".into(), error: false });
        // A turn cut short: the answer ends, the notice follows.
        t.push_user("again");
        t.apply(&text("half an ans", "s"));
        t.push_error(&toolshed_agent::AgentError::Interrupted.to_string());
        assert!(matches!(&t.cells()[4], Cell::Answer { done: true, .. }), "{:?}", t.cells());
        assert!(matches!(&t.cells()[5], Cell::Notice { text, .. } if text.starts_with("interrupted")));
    }

    #[test]
    fn a_turn_that_ends_early_says_why_once_whichever_comes_first() {
        let notices = |t: &Transcript| -> Vec<(String, bool)> {
            t.cells()
                .iter()
                .filter_map(|c| match c {
                    Cell::Notice { text, error } => Some((text.clone(), *error)),
                    _ => None,
                })
                .collect()
        };
        let interrupted = toolshed_agent::AgentError::Interrupted.to_string();
        let event = |m: &str| Event::Error { session_id: "s".into(), message: m.into() };
        // The loop's event first, then what the turn returned.
        let mut t = Transcript::default();
        t.push_user("go");
        t.apply(&event(&interrupted));
        t.push_error(&interrupted);
        assert_eq!(notices(&t), [("interrupted; the session is intact".to_string(), false)]);
        // The other order, with an error.
        let mut t = Transcript::default();
        t.push_user("go");
        t.push_error("the model answered 500");
        t.apply(&event("the model answered 500"));
        assert_eq!(notices(&t), [("the model answered 500".to_string(), true)]);
        // The next turn's same error shows again.
        t.push_user("again");
        t.push_error("the model answered 500");
        assert_eq!(notices(&t).len(), 2);
    }

    #[test]
    fn events_build_cells_in_order_and_results_land_on_their_call() {
        let mut t = Transcript::default();
        t.push_user("fix it");
        t.apply(&text("Look", "s"));
        t.apply(&text("ing.", "s"));
        t.apply(&Event::ToolCall {
            session_id: "s".into(),
            call_id: "c1".into(),
            tool: "bash".into(),
            input: "{}".into(),
        });
        t.apply(&Event::ToolCall {
            session_id: "sub".into(),
            call_id: "c2".into(),
            tool: "read".into(),
            input: "{}".into(),
        });
        t.apply(&text("sub-agent text is not the answer", "sub"));
        t.apply(&Event::ToolResult {
            session_id: "s".into(),
            call_id: "c1".into(),
            tool: "bash".into(),
            is_error: true,
            output: "exit 1".into(),
            title: None,
            duration_ms: 12,
            metadata: Map::new(),
        });
        t.apply(&text("Done.", "s"));
        t.apply(&Event::Reasoning { session_id: "s".into(), text: "thinking ".into() });
        t.apply(&Event::Reasoning { session_id: "s".into(), text: "more".into() });
        let cells = t.cells();
        assert_eq!(cells.len(), 6);
        assert_eq!(cells[5], Cell::Reasoning("thinking more".into()));
        assert_eq!(cells[1], Cell::Answer { text: "Looking.".into(), done: true });
        let Cell::Tool(bash) = &cells[2] else { panic!() };
        assert_eq!((bash.state, bash.duration_ms, bash.depth), (ToolState::Failed, Some(12), 0));
        let Cell::Tool(read) = &cells[3] else { panic!() };
        assert_eq!((read.state, read.depth), (ToolState::Running, 1));
        assert_eq!(cells[4], Cell::Answer { text: "Done.".into(), done: true });
    }

    #[test]
    fn a_sub_agents_calls_go_in_the_body_of_the_task_that_started_it() {
        let mut t = Transcript::default();
        t.push_user("look around");
        let call = |session: &str, id: &str, tool: &str| Event::ToolCall {
            session_id: session.into(),
            call_id: id.into(),
            tool: tool.into(),
            input: "{}".into(),
        };
        let result = |session: &str, id: &str, tool: &str| Event::ToolResult {
            session_id: session.into(),
            call_id: id.into(),
            tool: tool.into(),
            is_error: false,
            output: "ok".into(),
            title: None,
            duration_ms: 5,
            metadata: Map::new(),
        };
        t.apply(&text("On it.", "s"));
        t.apply(&call("s", "t1", "task"));
        t.apply(&Event::SessionStart {
            session_id: "sub".into(),
            parent_id: Some("s".into()),
            agent: "explore".into(),
            model: "m".into(),
        });
        t.apply(&call("sub", "c1", "read"));
        t.apply(&call("sub", "c2", "grep"));
        t.apply(&result("sub", "c1", "read"));
        t.apply(&result("s", "t1", "task"));
        let cells = t.cells();
        assert_eq!(cells.len(), 3, "{cells:?}");
        let Cell::Tool(task) = &cells[2] else { panic!() };
        assert_eq!(task.state, ToolState::Done);
        let children: Vec<(&str, ToolState, u8)> =
            task.children.iter().map(|c| (c.tool.as_str(), c.state, c.depth)).collect();
        assert_eq!(children, [("read", ToolState::Done, 1), ("grep", ToolState::Running, 1)]);
        let lines: Vec<String> = crate::render::lines(&cells[2], 60, 0)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        assert!(lines[1].contains("✓ read") && lines[2].contains("grep"), "{lines:?}");
    }
}
