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
    ContentBlock, ContentChunk, Diff, ImageContent, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate,
    TextContent, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind,
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
        "bash" | "bash_output" => ToolKind::Execute,
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
    cap(output, OUTPUT_SHOWN)
}

/// `text` cut to at most `max` bytes (at a character boundary), saying how much was left out.
fn cap(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n… ({} more bytes)", &text[..end], text.len() - end)
}

/// A call's `rawOutput`: its output up to the bytes a model is shown of one output by default
/// (whatever `[output] max_bytes` allows the model, the editor is not flooded).
fn raw_output(output: &str) -> Value {
    serde_json::json!({ "output": cap(output, toolshed_core::output::OutputLimits::default().max_bytes) })
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

/// The `toolCallId`s of one ACP session. A provider's call id is unique only within the agent
/// session that made it (a sub-agent's model may reuse the ids its parent's used), so each
/// call shown gets an id of its own: a number counted across the ACP session (replayed calls
/// included), then the provider's id. A call keeps its id from the moment it is shown to its
/// result, so its permission request and updates name the same call.
#[derive(Debug, Default)]
pub struct CallIds {
    next: u64,
    /// (agent session, provider call id) → the id shown, for the calls not yet finished.
    open: HashMap<(String, String), String>,
    /// The id shown → the title the call was shown with, for the calls not yet finished (a
    /// permission question shows its own, and the call's comes back after the answer).
    titles: HashMap<String, String>,
}

impl CallIds {
    fn fresh(&mut self, call_id: &str) -> String {
        self.next += 1;
        format!("{}-{call_id}", self.next)
    }

    /// The id of the call `call_id` of the agent session `session`: the one it was shown with,
    /// else a new one, kept until [`CallIds::finish`].
    pub fn of(&mut self, session: &str, call_id: &str) -> String {
        let key = (session.to_string(), call_id.to_string());
        if let Some(id) = self.open.get(&key) {
            return id.clone();
        }
        let id = self.fresh(call_id);
        self.open.insert(key, id.clone());
        id
    }

    /// A call started: a new id (a provider id seen before names another call now).
    pub fn start(&mut self, session: &str, call_id: &str) -> String {
        let id = self.fresh(call_id);
        self.open.insert((session.to_string(), call_id.to_string()), id.clone());
        id
    }

    /// A call finished: its id, which it no longer holds.
    pub fn finish(&mut self, session: &str, call_id: &str) -> String {
        match self.open.remove(&(session.to_string(), call_id.to_string())) {
            Some(id) => {
                self.titles.remove(&id);
                id
            }
            None => self.fresh(call_id),
        }
    }

    /// The call shown as `id` was shown with `title`.
    pub fn titled(&mut self, id: &str, title: &str) {
        self.titles.insert(id.to_string(), title.to_string());
    }

    /// The title the unfinished call `id` was shown with.
    pub fn title(&self, id: &str) -> Option<String> {
        self.titles.get(id).cloned()
    }
}

/// The largest file whose whole text goes into a diff.
const DIFF_MAX_BYTES: u64 = 1024 * 1024;

/// The files an edit works on and their text before it ran (`None`: the file did not exist).
pub type Before = Vec<(PathBuf, Option<String>)>;

/// The text of `path` for a diff: only a regular file inside the worktree `root`, at most
/// [`DIFF_MAX_BYTES`]. `Err` when it must not be read (outside, not a file, too big);
/// `Ok(None)` when there is no file there.
fn diff_text(root: &Path, path: &Path) -> Result<Option<String>, ()> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A new file: only if where it would go is inside the worktree.
            let inside = path.parent().and_then(|p| p.canonicalize().ok()).is_some_and(|p| p.starts_with(root));
            return if inside { Ok(None) } else { Err(()) };
        }
        Err(_) => return Err(()),
    };
    if !meta.is_file() || meta.len() > DIFF_MAX_BYTES {
        return Err(());
    }
    let real = path.canonicalize().map_err(|_| ())?;
    if !real.starts_with(root) {
        return Err(());
    }
    std::fs::read_to_string(&real).map(Some).map_err(|_| ())
}

/// The files an edit call works on and their text now, read before the tool runs; `None` for a
/// call that edits nothing. Relative paths start at `cwd`; only files inside `root` are read.
pub fn before(root: &Path, cwd: &Path, tool: &str, input: &str) -> Option<Before> {
    if kind(tool) != ToolKind::Edit {
        return None;
    }
    let args: Value = serde_json::from_str(input).unwrap_or(Value::Null);
    let files = toolshed_agent::calls::files(tool, &args, input)
        .iter()
        .filter_map(|p| {
            let path = absolute(cwd, p);
            diff_text(root, &path).ok().map(|text| (path, text))
        })
        .collect();
    Some(files)
}

/// Turns one session's events into updates, remembering what a call's diff needs: the text of
/// each file an edit works on, read when the call arrives.
#[derive(Default)]
pub struct Tracker {
    root: PathBuf,
    cwd: PathBuf,
    before: HashMap<String, Vec<(PathBuf, Option<String>)>>,
    inputs: HashMap<String, Value>,
    journal: Option<Arc<Journal>>,
}

impl Tracker {
    /// A tracker for the worktree `root`, whose relative paths start at `cwd`.
    pub fn new(root: &Path, cwd: &Path) -> Tracker {
        Tracker { root: root.to_path_buf(), cwd: cwd.to_path_buf(), ..Tracker::default() }
    }

    /// The same tracker, showing the texts in `journal` for files written through the editor.
    pub fn with_journal(mut self, journal: Arc<Journal>) -> Tracker {
        self.journal = Some(journal);
        self
    }

    /// A call started; `before` is what [`before`] read for it when it arrived.
    pub fn call(&mut self, call_id: &str, tool: &str, input: &str, before: Option<Before>) -> SessionUpdate {
        let args: Value = serde_json::from_str(input).unwrap_or(Value::Null);
        if let Some(files) = before {
            self.before.insert(call_id.to_string(), files);
        }
        let update = SessionUpdate::ToolCall(
            ToolCall::new(call_id.to_string(), title(tool, &args, input))
                .kind(kind(tool))
                .status(ToolCallStatus::InProgress)
                .locations(locations(&self.cwd, tool, &args, input))
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
                    // Texts too big for a diff are not shown, as on disk.
                    Some((old, new))
                        if new.len() as u64 > DIFF_MAX_BYTES
                            || old.as_ref().is_some_and(|o| o.len() as u64 > DIFF_MAX_BYTES) =>
                    {
                        continue;
                    }
                    Some((old, new)) => (old, new),
                    None => match diff_text(&self.root, &path) {
                        Ok(new) => (old, new.unwrap_or_default()),
                        Err(()) => continue,
                    },
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
            ToolCallUpdateFields::new().status(status).content(content).raw_output(raw_output(output)),
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
pub fn replay(root: &Path, messages: &[StoredMessage], ids: &mut CallIds) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    let mut last_plan = None;
    for m in messages {
        for part in &m.parts {
            match part {
                StoredPart::Text { text: t } if m.role == toolshed_llm::Role::User => {
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(text(t))));
                }
                StoredPart::Image { mime_type, data_base64 } if m.role == toolshed_llm::Role::User => {
                    let image = ImageContent::new(data_base64.clone(), mime_type.clone());
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::Image(image))));
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
                        Some(diff) if !failed => cap(diff, DIFF_MAX_BYTES as usize),
                        _ => cut(&output),
                    };
                    updates.push(SessionUpdate::ToolCall(
                        ToolCall::new(ids.fresh(call_id), title(tool, &args, input))
                            .kind(kind(tool))
                            .status(if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed })
                            .locations(locations(root, tool, &args, input))
                            .content(vec![ToolCallContent::from(text(&shown))])
                            .raw_input(args.clone())
                            .raw_output(raw_output(&output)),
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
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let file = root.join("a.txt");
        std::fs::write(&file, "old\n").unwrap_or_else(|e| panic!("{e}"));
        let mut t = Tracker::new(&root, &root);
        let input = r#"{"file_path":"a.txt","old_string":"old","new_string":"new"}"#;
        let start = t.call("c1", "edit", input, before(&root, &root, "edit", input));
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
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let file = root.join("a.txt");
        std::fs::write(&file, "on disk\n").unwrap_or_else(|e| panic!("{e}"));
        let journal = Arc::new(Journal::default());
        let mut t = Tracker::new(&root, &root).with_journal(journal.clone());
        let edit =
            |old: &str, new: &str| format!(r#"{{"file_path":"a.txt","old_string":"{old}","new_string":"{new}"}}"#);
        t.call("c1", "edit", &edit("buffer", "edited"), before(&root, &root, "edit", &edit("buffer", "edited")));
        journal.read(&file, "buffer\n");
        journal.wrote(&file, "edited\n");
        let done = t.result("c1", "edit", false, "Edited a.txt");
        let SessionUpdate::ToolCallUpdate(update) = &done[0] else { panic!("{done:?}") };
        let Some(ToolCallContent::Diff(diff)) = update.fields.content.as_ref().and_then(|c| c.first()) else {
            panic!("{update:?}")
        };
        assert_eq!((diff.old_text.as_deref(), diff.new_text.as_str()), (Some("buffer\n"), "edited\n"));
        // A failed call's writes are not shown, then or with a later call.
        t.call("c2", "edit", &edit("x", "y"), before(&root, &root, "edit", &edit("x", "y")));
        journal.wrote(&file, "half\n");
        t.result("c2", "edit", true, "failed");
        t.call("c3", "edit", &edit("x", "y"), before(&root, &root, "edit", &edit("x", "y")));
        let done = t.result("c3", "edit", false, "no change");
        let SessionUpdate::ToolCallUpdate(update) = &done[0] else { panic!("{done:?}") };
        assert!(!update.fields.content.iter().flatten().any(|c| matches!(c, ToolCallContent::Diff(_))), "{update:?}");
    }

    #[test]
    fn a_call_id_reused_by_a_sub_agent_or_a_later_call_names_another_call() {
        let mut ids = CallIds::default();
        let parent = ids.start("main", "c1");
        let child = ids.start("child", "c1");
        assert_ne!(parent, child);
        // The permission request and the result name the call as it was shown.
        assert_eq!(ids.of("child", "c1"), child);
        assert_eq!(ids.finish("child", "c1"), child);
        assert_eq!(ids.finish("main", "c1"), parent);
        // The same provider id later is another call.
        let again = ids.start("main", "c1");
        assert!(again != parent && again != child, "{again}");
    }

    #[test]
    fn raw_output_diffs_and_replayed_diffs_are_capped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let huge = "x".repeat(3 * 1024 * 1024);
        // A command's huge output.
        let mut t = Tracker::new(&root, &root);
        t.call("c1", "bash", r#"{"command":"cat big"}"#, None);
        let done = t.result("c1", "bash", false, &huge);
        let SessionUpdate::ToolCallUpdate(update) = &done[0] else { panic!("{done:?}") };
        let raw = update.fields.raw_output.as_ref().and_then(|r| r["output"].as_str()).unwrap_or_default();
        assert!(raw.len() < 60 * 1024 && raw.ends_with("more bytes)"), "{}", raw.len());
        // A huge file written through the editor is not shown as a diff.
        let journal = Arc::new(Journal::default());
        let mut t = Tracker::new(&root, &root).with_journal(journal.clone());
        let file = root.join("big.txt");
        let input = r#"{"file_path":"big.txt","content":"x"}"#;
        t.call("c2", "write", input, before(&root, &root, "write", input));
        journal.wrote(&file, &huge);
        let done = t.result("c2", "write", false, "Wrote big.txt");
        let SessionUpdate::ToolCallUpdate(update) = &done[0] else { panic!("{done:?}") };
        assert!(!update.fields.content.iter().flatten().any(|c| matches!(c, ToolCallContent::Diff(_))));
        // A stored call's huge diff and output, replayed.
        let message = StoredMessage {
            id: "m".into(),
            seq: 1,
            role: toolshed_llm::Role::Assistant,
            agent: None,
            model: None,
            created_at: 0,
            finished_at: None,
            usage: None,
            request_tokens: None,
            stop_reason: None,
            error: None,
            parts: vec![StoredPart::Tool {
                call_id: "c".into(),
                tool: "edit".into(),
                kind: toolshed_llm::CallKind::Function,
                input: r#"{"file_path":"big.txt"}"#.into(),
                state: CallState::Completed,
                output: Some(huge.clone()),
                is_error: false,
                title: None,
                metadata: serde_json::json!({ "diff": huge }),
                images: Vec::new(),
                started_at: None,
                finished_at: None,
            }],
        };
        let replayed = replay(&root, &[message], &mut CallIds::default());
        let SessionUpdate::ToolCall(call) = &replayed[0] else { panic!("{replayed:?}") };
        let shown = serde_json::to_string(&call.content).unwrap_or_default();
        assert!(shown.len() < 1024 * 1024 + 1024, "{}", shown.len());
        let raw = call.raw_output.as_ref().and_then(|r| r["output"].as_str()).unwrap_or_default();
        assert!(raw.len() < 60 * 1024, "{}", raw.len());
    }

    #[test]
    fn todo_write_becomes_the_plan() {
        let mut t = Tracker::new(Path::new("/"), Path::new("/"));
        let input = r#"{"todos":[{"content":"read","status":"completed"},{"content":"fix","status":"in_progress","priority":"high"}]}"#;
        t.call("c", "todo_write", input, None);
        let updates = t.result("c", "todo_write", false, "2 todos");
        let Some(SessionUpdate::Plan(plan)) = updates.get(1) else { panic!("{updates:?}") };
        assert_eq!(plan.entries.len(), 2);
        assert_eq!(plan.entries[1].status, PlanEntryStatus::InProgress);
        assert_eq!(plan.entries[1].priority, PlanEntryPriority::High);
    }

    #[test]
    fn no_diff_reads_a_file_outside_the_worktree_a_special_file_or_a_huge_one() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}")).join("work");
        std::fs::create_dir_all(&root).unwrap_or_else(|e| panic!("{e}"));
        let outside = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}")).join("secret.txt");
        std::fs::write(&outside, "secret\n").unwrap_or_else(|e| panic!("{e}"));
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, root.join("link.txt")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(root.join("big.txt"), vec![b'x'; 2 * 1024 * 1024]).unwrap_or_else(|e| panic!("{e}"));
        for path in ["../secret.txt", "link.txt", "/dev/zero", "/dev/stdin", "big.txt", "/etc/passwd"] {
            let input = serde_json::json!({"file_path": path, "content": "x"}).to_string();
            let read = before(&root, &root, "write", &input).unwrap_or_default();
            assert!(read.is_empty(), "{path} was read: {read:?}");
        }
        // A new file inside the worktree has no text before.
        let input = serde_json::json!({"file_path": "new.txt", "content": "x"}).to_string();
        assert_eq!(before(&root, &root, "write", &input), Some(vec![(root.join("new.txt"), None)]));
    }
}
