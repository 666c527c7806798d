//! What an editor is shown: the agent's events and stored sessions as ACP `session/update`s.
//! A tool call carries what a person needs to follow it — the exact command or path as its
//! title, its kind, the file (and line) it works on, and when it is done a `diff` with the
//! file's whole text before and after (read from disk around the call, or, for a file written
//! through the editor's buffers, the texts the call read from and wrote to them: [`Journal`]),
//! the command's output, or the plan from `todo_write`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, TextContent,
    ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;
use toolshed_agent::store::{CallState, StoredMessage, StoredPart};

/// Output shown in a tool call's content, at most (the model's copy is not cut).
const OUTPUT_SHOWN: usize = 16 * 1024;

/// A text content block.
pub fn text(text: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(text))
}

/// The kind an editor files a tool under.
pub fn kind(tool: &str) -> ToolKind {
    match tool {
        "read" | "list" | "lsp" => ToolKind::Read,
        "edit" | "write" | "apply_patch" => ToolKind::Edit,
        "grep" | "glob" | "tool_search" | "websearch" => ToolKind::Search,
        "bash" | "bash_output" | "bash_kill" => ToolKind::Execute,
        "webfetch" => ToolKind::Fetch,
        "todo_write" | "todo_read" | "task" => ToolKind::Think,
        "plan_exit" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// What the call works on, as its title: the command, the path, the pattern, the URL.
pub fn title(tool: &str, args: &Value, raw: &str) -> String {
    match toolshed_agent::calls::subject(tool, args, raw, false) {
        Some(s) => format!("{tool}: {s}"),
        None => tool.to_string(),
    }
}

fn absolute(root: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() { p.to_path_buf() } else { root.join(p) }
}

/// The file (and line) the call works on, so the editor can follow along.
fn locations(root: &Path, tool: &str, args: &Value, raw: &str) -> Vec<ToolCallLocation> {
    let line = args.get("offset").and_then(Value::as_u64).and_then(|l| u32::try_from(l).ok());
    toolshed_agent::calls::files(tool, args, raw)
        .iter()
        .map(|p| {
            let location = ToolCallLocation::new(absolute(root, p));
            if tool == "read" { location.line(line) } else { location }
        })
        .collect()
}

/// The plan `todo_write` sets, as ACP's plan (always the whole list).
pub fn plan(args: &Value) -> Option<Plan> {
    let todos = args.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .filter_map(|t| {
            let content = t.get("content").and_then(Value::as_str)?;
            let status = match t.get("status").and_then(Value::as_str) {
                Some("in_progress") => PlanEntryStatus::InProgress,
                Some("completed" | "cancelled") => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            let priority = match t.get("priority").and_then(Value::as_str) {
                Some("high") => PlanEntryPriority::High,
                Some("low") => PlanEntryPriority::Low,
                _ => PlanEntryPriority::Medium,
            };
            Some(PlanEntry::new(content, priority, status))
        })
        .collect();
    Some(Plan::new(entries))
}

fn cut(output: &str) -> String {
    if output.len() <= OUTPUT_SHOWN {
        return output.to_string();
    }
    let mut end = OUTPUT_SHOWN;
    while !output.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} more bytes)", &output[..end], output.len() - end)
}

/// The texts a session's tools read from and wrote to the editor's buffers, per file: what an
/// edit's diff shows when the file went through the editor (its unsaved text is not on disk).
#[derive(Default)]
pub struct Journal {
    state: Mutex<JournalState>,
}

#[derive(Default)]
struct JournalState {
    /// The text last read of each file.
    read: HashMap<PathBuf, String>,
    /// Files written and not yet shown: the text before the first write, the text now.
    written: HashMap<PathBuf, (Option<String>, String)>,
}

impl Journal {
    fn state(&self) -> std::sync::MutexGuard<'_, JournalState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The editor gave `text` as the file's text.
    pub fn read(&self, path: &Path, text: &str) {
        self.state().read.insert(path.to_path_buf(), text.to_string());
    }

    /// The file's text in the editor became `text`.
    pub fn wrote(&self, path: &Path, text: &str) {
        let mut state = self.state();
        let before = match state.written.remove(path) {
            Some((before, _)) => before,
            None => state.read.get(path).cloned(),
        };
        state.read.insert(path.to_path_buf(), text.to_string());
        state.written.insert(path.to_path_buf(), (before, text.to_string()));
    }

    /// The file's text before and after the writes since the last call, if it was written.
    fn take(&self, path: &Path) -> Option<(Option<String>, String)> {
        self.state().written.remove(path)
    }
}

/// Turns one session's events into updates, remembering what a call's diff needs: the text of
/// each file an edit works on, read when the call arrives.
#[derive(Default)]
pub struct Tracker {
    root: PathBuf,
    before: HashMap<String, Vec<(PathBuf, Option<String>)>>,
    inputs: HashMap<String, Value>,
    journal: Option<Arc<Journal>>,
}

impl Tracker {
    /// A tracker for the worktree `root`.
    pub fn new(root: &Path) -> Tracker {
        Tracker { root: root.to_path_buf(), ..Tracker::default() }
    }

    /// The same tracker, showing the texts in `journal` for files written through the editor.
    pub fn with_journal(mut self, journal: Arc<Journal>) -> Tracker {
        self.journal = Some(journal);
        self
    }

    /// A call started.
    pub fn call(&mut self, call_id: &str, tool: &str, input: &str) -> SessionUpdate {
        let args: Value = serde_json::from_str(input).unwrap_or(Value::Null);
        if kind(tool) == ToolKind::Edit {
            let files = toolshed_agent::calls::files(tool, &args, input)
                .iter()
                .map(|p| {
                    let path = absolute(&self.root, p);
                    let text = std::fs::read_to_string(&path).ok();
                    (path, text)
                })
                .collect();
            self.before.insert(call_id.to_string(), files);
        }
        let update = SessionUpdate::ToolCall(
            ToolCall::new(call_id.to_string(), title(tool, &args, input))
                .kind(kind(tool))
                .status(ToolCallStatus::InProgress)
                .locations(locations(&self.root, tool, &args, input))
                .raw_input(args.clone()),
        );
        self.inputs.insert(call_id.to_string(), args);
        update
    }

    /// A call finished; also the plan, when it was `todo_write`.
    pub fn result(&mut self, call_id: &str, tool: &str, is_error: bool, output: &str) -> Vec<SessionUpdate> {
        let args = self.inputs.remove(call_id).unwrap_or(Value::Null);
        let mut content = Vec::new();
        if let Some(files) = self.before.remove(call_id) {
            for (path, old) in files {
                // What went through the editor is taken even for a failed call, so that it is
                // not shown as a later call's change.
                let through_editor = self.journal.as_ref().and_then(|j| j.take(&path));
                if is_error {
                    continue;
                }
                let (old, new) = match through_editor {
                    Some((old, new)) => (old, new),
                    None => (old, std::fs::read_to_string(&path).unwrap_or_default()),
                };
                if old.as_deref() != Some(new.as_str()) {
                    content.push(ToolCallContent::Diff(Diff::new(path, new).old_text(old)));
                }
            }
        }
        let shown = match (tool, args.get("command").and_then(Value::as_str)) {
            ("bash", Some(command)) => format!("$ {command}\n{}", cut(output)),
            _ => cut(output),
        };
        if content.is_empty() || is_error {
            content.push(ToolCallContent::from(text(&shown)));
        }
        let status = if is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
        let mut updates = vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_string(),
            ToolCallUpdateFields::new()
                .status(status)
                .content(content)
                .raw_output(serde_json::json!({ "output": output })),
        ))];
        if tool == "todo_write"
            && !is_error
            && let Some(plan) = plan(&args)
        {
            updates.push(SessionUpdate::Plan(plan));
        }
        updates
    }
}

/// A stored session as the updates that show it again (`session/load`): the user's prompts,
/// the answers, every tool call as it ended (with its output or diff), and the last plan.
pub fn replay(root: &Path, messages: &[StoredMessage]) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    let mut last_plan = None;
    for m in messages {
        for part in &m.parts {
            match part {
                StoredPart::Text { text: t } if m.role == toolshed_llm::Role::User => {
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(text(t))));
                }
                StoredPart::Text { text: t } if !t.trim().is_empty() => {
                    updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(t))));
                }
                StoredPart::Reasoning { summary, .. } if !summary.trim().is_empty() => {
                    updates.push(SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(summary))));
                }
                StoredPart::Tool { call_id, tool, input, state, output, is_error, metadata, .. } => {
                    let args: Value = serde_json::from_str(input).unwrap_or(Value::Null);
                    let failed = *is_error || *state != CallState::Completed;
                    let output = output.clone().unwrap_or_default();
                    let shown = match metadata.get("diff").and_then(Value::as_str) {
                        Some(diff) if !failed => diff.to_string(),
                        _ => cut(&output),
                    };
                    updates.push(SessionUpdate::ToolCall(
                        ToolCall::new(call_id.clone(), title(tool, &args, input))
                            .kind(kind(tool))
                            .status(if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed })
                            .locations(locations(root, tool, &args, input))
                            .content(vec![ToolCallContent::from(text(&shown))])
                            .raw_input(args.clone())
                            .raw_output(serde_json::json!({ "output": output })),
                    ));
                    if tool == "todo_write" && !failed {
                        last_plan = plan(&args);
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(plan) = last_plan {
        updates.push(SessionUpdate::Plan(plan));
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_name_the_command_or_path_and_kinds_follow_the_tool() {
        let bash = serde_json::json!({"command": "cargo test -p app", "description": "run tests"});
        assert_eq!(title("bash", &bash, ""), "bash: cargo test -p app");
        assert_eq!(title("read", &serde_json::json!({"file_path": "src/a.rs"}), ""), "read: src/a.rs");
        assert_eq!(title("todo_write", &serde_json::json!({}), ""), "todo_write");
        assert_eq!(kind("apply_patch"), ToolKind::Edit);
        assert_eq!(kind("grep"), ToolKind::Search);
        assert_eq!(kind("my_custom_tool"), ToolKind::Other);
    }

    #[test]
    fn an_edit_call_ends_with_the_files_text_before_and_after() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "old\n").unwrap_or_else(|e| panic!("{e}"));
        let mut t = Tracker::new(dir.path());
        let start = t.call("c1", "edit", r#"{"file_path":"a.txt","old_string":"old","new_string":"new"}"#);
        let SessionUpdate::ToolCall(call) = start else { panic!("{start:?}") };
        assert_eq!(call.kind, ToolKind::Edit);
        assert_eq!(call.locations[0].path, file);
        std::fs::write(&file, "new\n").unwrap_or_else(|e| panic!("{e}"));
        let done = t.result("c1", "edit", false, "Edited a.txt");
        let SessionUpdate::ToolCallUpdate(update) = &done[0] else { panic!("{done:?}") };
        let Some(ToolCallContent::Diff(diff)) = update.fields.content.as_ref().and_then(|c| c.first()) else {
            panic!("{update:?}")
        };
        assert_eq!((diff.old_text.as_deref(), diff.new_text.as_str()), (Some("old\n"), "new\n"));
    }

    #[test]
    fn a_file_written_through_the_editor_shows_the_editors_text_not_the_disks() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "on disk\n").unwrap_or_else(|e| panic!("{e}"));
        let journal = Arc::new(Journal::default());
        let mut t = Tracker::new(dir.path()).with_journal(journal.clone());
        t.call("c1", "edit", r#"{"file_path":"a.txt","old_string":"buffer","new_string":"edited"}"#);
        journal.read(&file, "buffer\n");
        journal.wrote(&file, "edited\n");
        let done = t.result("c1", "edit", false, "Edited a.txt");
        let SessionUpdate::ToolCallUpdate(update) = &done[0] else { panic!("{done:?}") };
        let Some(ToolCallContent::Diff(diff)) = update.fields.content.as_ref().and_then(|c| c.first()) else {
            panic!("{update:?}")
        };
        assert_eq!((diff.old_text.as_deref(), diff.new_text.as_str()), (Some("buffer\n"), "edited\n"));
        // A failed call's writes are not shown, then or with a later call.
        t.call("c2", "edit", r#"{"file_path":"a.txt","old_string":"x","new_string":"y"}"#);
        journal.wrote(&file, "half\n");
        t.result("c2", "edit", true, "failed");
        t.call("c3", "edit", r#"{"file_path":"a.txt","old_string":"x","new_string":"y"}"#);
        let done = t.result("c3", "edit", false, "no change");
        let SessionUpdate::ToolCallUpdate(update) = &done[0] else { panic!("{done:?}") };
        assert!(!update.fields.content.iter().flatten().any(|c| matches!(c, ToolCallContent::Diff(_))), "{update:?}");
    }

    #[test]
    fn todo_write_becomes_the_plan() {
        let mut t = Tracker::new(Path::new("/"));
        let input = r#"{"todos":[{"content":"read","status":"completed"},{"content":"fix","status":"in_progress","priority":"high"}]}"#;
        t.call("c", "todo_write", input);
        let updates = t.result("c", "todo_write", false, "2 todos");
        let Some(SessionUpdate::Plan(plan)) = updates.get(1) else { panic!("{updates:?}") };
        assert_eq!(plan.entries.len(), 2);
        assert_eq!(plan.entries[1].status, PlanEntryStatus::InProgress);
        assert_eq!(plan.entries[1].priority, PlanEntryPriority::High);
    }
}
