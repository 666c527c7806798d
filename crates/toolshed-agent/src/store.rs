//! Sessions in SQLite (WAL): sessions, their messages, and the messages' parts — text,
//! providers' reasoning items, and tool calls whose state moves pending → running → completed /
//! error as they happen, so a `kill -9` loses at most the call in flight. The store is also the execution chain's
//! [`Recorder`] and the todo tools' [`TodoStore`].

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde_json::{Value, json};
use toolshed_core::exec::CallInput;
use toolshed_core::exec::record::{CallRecord, Recorder};
use toolshed_core::todo::{Todo, TodoStore};
use toolshed_core::tool::Attachment;
use toolshed_llm::types::{IMAGE_MEDIA_TYPES, MAX_IMAGE_BASE64_BYTES};
use toolshed_llm::{CallKind, Image, Message, Part, Reasoning, Role, ToolCall, ToolResult, Usage};

/// What a model is told about a call that never finished (interrupted or lost in a crash).
pub const INTERRUPTED: &str = "[Tool execution was interrupted before it finished; it may or may not have taken effect. Check before repeating it.]";

/// A failure of the session database.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("session database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The error.
        source: rusqlite::Error,
    },
    /// The database directory could not be created.
    #[error("cannot create {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// No session has this id.
    #[error("no session `{0}`; `toolshed session list` shows the stored sessions")]
    NoSession(String),
    /// Several sessions' ids start with what was given.
    #[error("`{given}` starts the ids of several sessions ({}): give more of the id", .ids.join(", "))]
    Ambiguous {
        /// What was given.
        given: String,
        /// The ids it starts (a few).
        ids: Vec<String>,
    },
    /// The database was written by a newer toolshed, whose schema this one does not know.
    #[error(
        "session database {path} has schema version {found}, newer than the {known} this toolshed knows; it was left unchanged. Upgrade toolshed, or set TOOLSHED_DATA_DIR to use another data directory"
    )]
    NewerSchema {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The newest version this build knows.
        known: i64,
    },
}

/// One stored session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionInfo {
    /// Its id.
    pub id: String,
    /// The session that started it as a sub-agent task.
    pub parent_id: Option<String>,
    /// A title (the first prompt, cut).
    pub title: String,
    /// The agent it runs as now.
    pub agent: String,
    /// The model id (`provider/model`).
    pub model: Option<String>,
    /// The worktree it worked in.
    pub root: String,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    /// Milliseconds since the epoch.
    pub updated_at: i64,
    /// Number of messages.
    pub messages: i64,
}

/// Where a stored session may go on, seen from the worktree `here`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionPlace {
    /// It worked here.
    Here,
    /// It worked in another worktree that still exists: its conversation is about those
    /// files, and its snapshots are that worktree's, so it goes on only there.
    Elsewhere(String),
    /// It worked in a worktree that is gone (moved, renamed): it may go on here.
    Gone(String),
}

impl SessionInfo {
    /// Whether this session may go on in the worktree `here` (one rule for every entry point).
    pub fn place(&self, here: &std::path::Path) -> SessionPlace {
        if std::path::Path::new(&self.root) == here {
            SessionPlace::Here
        } else if std::path::Path::new(&self.root).is_dir() {
            SessionPlace::Elsewhere(self.root.clone())
        } else {
            SessionPlace::Gone(self.root.clone())
        }
    }
}

/// A tool call's progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CallState {
    /// The model asked for it; it has not started.
    Pending,
    /// It is running.
    Running,
    /// It finished and succeeded.
    Completed,
    /// It failed, was rejected, or was interrupted.
    Error,
}

impl CallState {
    fn as_str(self) -> &'static str {
        match self {
            CallState::Pending => "pending",
            CallState::Running => "running",
            CallState::Completed => "completed",
            CallState::Error => "error",
        }
    }

    fn parse(s: &str) -> CallState {
        match s {
            "pending" => CallState::Pending,
            "running" => CallState::Running,
            "completed" => CallState::Completed,
            _ => CallState::Error,
        }
    }
}

/// An image a tool returned, as stored with its call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredImage {
    /// e.g. `image/png`.
    pub mime_type: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The image, base64; `None` when it was not kept because no model would be sent it (over
    /// [`MAX_IMAGE_BASE64_BYTES`] as base64, or not one of [`IMAGE_MEDIA_TYPES`]).
    pub data_base64: Option<String>,
}

impl StoredImage {
    /// What the model is told instead of an image that is not sent.
    fn omitted_note(&self) -> String {
        let mib = self.bytes as f64 / (1024.0 * 1024.0);
        if IMAGE_MEDIA_TYPES.contains(&self.mime_type.as_str()) {
            format!(
                "[An {} image of {mib:.1} MiB was returned but not shown to you: images over {} MiB (as base64) are left out.]",
                self.mime_type,
                MAX_IMAGE_BASE64_BYTES / (1024 * 1024)
            )
        } else {
            format!(
                "[An {} image was returned but not shown to you: only PNG, JPEG, GIF and WebP images can be.]",
                self.mime_type
            )
        }
    }
}

/// An image the person attached to a prompt, checked as a model would take it: one of
/// [`IMAGE_MEDIA_TYPES`], valid base64, at most [`MAX_IMAGE_BASE64_BYTES`] of it, and bytes that
/// are an image of one of those types. The type sent is the one the bytes say (an editor that
/// calls a GIF `image/png` would otherwise get the request refused on every later step, as the
/// image is sent again with each). The error is for the person, saying what to do instead.
pub fn prompt_image(media_type: &str, data_base64: &str) -> Result<Image, String> {
    if !IMAGE_MEDIA_TYPES.contains(&media_type) {
        return Err(format!(
            "the attached image is {media_type}; only PNG, JPEG, GIF and WebP images can be sent to the model: convert it to one of those and attach it again"
        ));
    }
    if data_base64.len() > MAX_IMAGE_BASE64_BYTES {
        let mib = |n: usize| n as f64 * 3.0 / 4.0 / (1024.0 * 1024.0);
        return Err(format!(
            "the attached image is {:.1} MiB; the model takes images up to {:.2} MiB: attach a smaller or more compressed one",
            mib(data_base64.len()),
            mib(MAX_IMAGE_BASE64_BYTES)
        ));
    }
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(data_base64) else {
        return Err("the attached image's data is not valid base64, so it cannot be sent to the model".to_string());
    };
    let Some(actual) = toolshed_core::tool::image_mime(&bytes) else {
        return Err(format!(
            "the attached {media_type} is not a PNG, JPEG, GIF or WebP image (its data is empty or something else), so it cannot be sent to the model: attach the image file itself"
        ));
    };
    Ok(Image { media_type: actual.to_string(), data_base64: data_base64.to_string() })
}

/// Whether an image of this type and size is kept to be sent to models.
fn sendable(mime_type: &str, bytes: usize) -> bool {
    let base64_len = bytes.div_ceil(3).saturating_mul(4);
    IMAGE_MEDIA_TYPES.contains(&mime_type) && base64_len <= MAX_IMAGE_BASE64_BYTES
}

/// One stored part of a message.
#[allow(clippy::large_enum_variant)] // parts are few and short-lived; boxing would only add noise
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StoredPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A provider's reasoning item, replayed to the wire format that produced it.
    Reasoning {
        /// The wire format that produced it (`openai-responses`).
        format: String,
        /// The model that produced it (`provider/model`); empty if not recorded.
        model: String,
        /// Its readable summary (may be empty: the reasoning itself is encrypted).
        summary: String,
        /// The item as the provider sent it.
        item: Value,
    },
    /// An image the person attached to a prompt (checked by [`prompt_image`]).
    Image {
        /// One of [`IMAGE_MEDIA_TYPES`].
        mime_type: String,
        /// The image, base64.
        data_base64: String,
    },
    /// A tool call and, once it finished, its result.
    Tool {
        /// The provider's call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// JSON arguments or freeform input.
        kind: CallKind,
        /// The input as sent.
        input: String,
        /// Where it stands.
        state: CallState,
        /// The result text.
        output: Option<String>,
        /// Whether the result is an error.
        is_error: bool,
        /// The tool's title.
        title: Option<String>,
        /// The result's metadata.
        metadata: Value,
        /// Images the tool returned.
        images: Vec<StoredImage>,
        /// Milliseconds since the epoch.
        started_at: Option<i64>,
        /// Milliseconds since the epoch.
        finished_at: Option<i64>,
    },
}

/// One stored message with its parts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredMessage {
    /// Its id.
    pub id: String,
    /// Its position in the session (1, 2, ...; gaps are possible).
    pub seq: i64,
    /// Who said it.
    pub role: Role,
    /// The agent that answered (assistant messages).
    pub agent: Option<String>,
    /// The model that answered (assistant messages).
    pub model: Option<String>,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    /// When the response finished.
    pub finished_at: Option<i64>,
    /// Token counts.
    pub usage: Option<Usage>,
    /// What toolshed estimated the request that got this response to be, in tokens (4 bytes
    /// a token); with `usage` it calibrates the estimate of the next request.
    pub request_tokens: Option<u64>,
    /// Why the model stopped.
    pub stop_reason: Option<String>,
    /// Why the response failed, if it did.
    pub error: Option<String>,
    /// Its parts, in order.
    pub parts: Vec<StoredPart>,
}

/// What a compaction is labelled as in `session show` and `session export`.
pub const COMPACTION: &str = "compaction";

/// A compaction: a summary that stands, in what is sent to the model, for the messages before
/// `kept_from`. The messages themselves stay stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Compaction {
    /// Always [`COMPACTION`] (the label exports carry).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Its id.
    pub id: String,
    /// The session.
    pub session_id: String,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    /// What started it: `auto` (the context passed `[session] compact_at`), `overflow` (the
    /// provider refused the request as too long) or `manual` (`/compact`, `session compact`).
    pub trigger: String,
    /// Messages from this `seq` on are sent verbatim after the summary.
    pub kept_from: i64,
    /// How many stored messages the summary stands for (all before `kept_from`).
    pub summarised: i64,
    /// The summary the model wrote.
    pub summary: String,
    /// The files the session had changed when it was made, one per line with their diff stat.
    pub files: String,
    /// The model that wrote it.
    pub model: Option<String>,
    /// The estimated size of the next request before, in tokens.
    pub tokens_before: u64,
    /// ... and after.
    pub tokens_after: u64,
    /// What the summary request cost.
    pub usage: Option<Usage>,
}

/// A background task as stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredTask {
    /// The task id.
    pub id: String,
    /// The session that started it.
    pub session_id: String,
    /// The child session it runs in.
    pub child_session_id: String,
    /// The sub-agent.
    pub agent: String,
    /// What it is for.
    pub description: String,
    /// running, completed, failed, cancelled or lost.
    pub status: String,
    /// The final answer.
    pub result: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
}

/// What a step was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// A model response (and the tool calls it made).
    Model,
    /// A revert (`session revert`, `/undo`).
    Revert,
    /// A background sub-agent task that finished, with what it changed.
    Task,
}

impl StepKind {
    fn as_str(self) -> &'static str {
        match self {
            StepKind::Model => "model",
            StepKind::Revert => "revert",
            StepKind::Task => "task",
        }
    }

    fn parse(s: &str) -> StepKind {
        match s {
            "revert" => StepKind::Revert,
            "task" => StepKind::Task,
            _ => StepKind::Model,
        }
    }
}

/// One step of a session, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StoredStep {
    /// Its number, from 1 across the session.
    pub step: u32,
    /// What it was.
    pub kind: StepKind,
    /// The assistant message of a model step.
    pub message_id: Option<String>,
    /// The snapshot before its tool calls ran (steps without calls have none).
    pub before: Option<String>,
    /// The snapshot after they finished.
    pub after: Option<String>,
    /// The paths that differ between the two.
    pub changed: Vec<PathBuf>,
    /// Milliseconds since the epoch.
    pub created_at: i64,
    /// When its snapshots were recorded.
    pub finished_at: Option<i64>,
}

/// The session database.
pub struct Store {
    path: PathBuf,
    conn: Mutex<Connection>,
}

/// The schema's migrations, in order: migration `i` takes a database from `PRAGMA user_version`
/// `i` to `i + 1`, in one transaction. Append new ones; never edit one that has shipped.
/// (`rusqlite_migration` does the same, but its releases pin an older rusqlite than ours.)
const MIGRATIONS: &[&str] = &[SCHEMA_V1, SCHEMA_V2_CONTEXT, SCHEMA_V3_STEPS, SCHEMA_V4_FOUND];

/// Version 1: the schema as it was before it had a version. Every statement is `IF NOT
/// EXISTS`, so databases written before versioning (some without the `attachments` table) are
/// brought to it as they are.
const SCHEMA_V1: &str = "
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  parent_id TEXT,
  title TEXT NOT NULL DEFAULT '',
  agent TEXT NOT NULL,
  model TEXT,
  root TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  todos TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS messages (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL,
  agent TEXT,
  model TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  input_tokens INTEGER,
  output_tokens INTEGER,
  stop_reason TEXT,
  error TEXT
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, seq);
CREATE TABLE IF NOT EXISTS parts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  message_id TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  text TEXT,
  call_id TEXT,
  tool TEXT,
  call_kind TEXT,
  input TEXT,
  state TEXT,
  output TEXT,
  is_error INTEGER NOT NULL DEFAULT 0,
  title TEXT,
  metadata TEXT,
  started_at INTEGER,
  finished_at INTEGER,
  UNIQUE(session_id, call_id)
);
CREATE INDEX IF NOT EXISTS parts_by_message ON parts(message_id, id);
CREATE TABLE IF NOT EXISTS attachments (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  call_id TEXT NOT NULL,
  mime_type TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  data BLOB
);
CREATE INDEX IF NOT EXISTS attachments_by_call ON attachments(session_id, call_id, id);
CREATE TABLE IF NOT EXISTS tasks (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  child_session_id TEXT NOT NULL,
  agent TEXT NOT NULL,
  description TEXT NOT NULL,
  status TEXT NOT NULL,
  result TEXT,
  error TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER
);
";

/// Version 2: what keeps a session inside its context window. Each response's full usage and
/// the estimate of the request that got it (their ratio calibrates the next estimate); how far
/// tool outputs are pruned from what is sent; the compactions (summaries that replace older
/// history in what is sent; the messages themselves stay).
const SCHEMA_V2_CONTEXT: &str = "
ALTER TABLE messages ADD COLUMN cached_input_tokens INTEGER;
ALTER TABLE messages ADD COLUMN cache_write_tokens INTEGER;
ALTER TABLE messages ADD COLUMN reasoning_tokens INTEGER;
ALTER TABLE messages ADD COLUMN request_tokens INTEGER;
ALTER TABLE sessions ADD COLUMN pruned_through INTEGER;
CREATE TABLE compactions (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  trigger TEXT NOT NULL,
  kept_from INTEGER NOT NULL,
  summarised INTEGER NOT NULL,
  summary TEXT NOT NULL,
  files TEXT NOT NULL DEFAULT '',
  model TEXT,
  tokens_before INTEGER NOT NULL,
  tokens_after INTEGER NOT NULL,
  input_tokens INTEGER,
  output_tokens INTEGER
);
CREATE INDEX compactions_by_session ON compactions(session_id, created_at);
";

/// Version 3: steps, numbered from 1 across a session (every model step, and every revert), with
/// the snapshots taken around their tool calls (ids in the worktree's shadow repository, see
/// [`crate::snapshot`]) and the paths they changed (NUL-separated).
const SCHEMA_V3_STEPS: &str = "
CREATE TABLE IF NOT EXISTS steps (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  kind TEXT NOT NULL,
  message_id TEXT,
  before_snapshot TEXT,
  after_snapshot TEXT,
  changed BLOB,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  PRIMARY KEY (session_id, step)
);
";

/// Version 4: the deferred tools a session's `tool_search` calls found (a JSON array of names),
/// which stay in its tool list when it is resumed and which `toolshed tools --session` shows.
const SCHEMA_V4_FOUND: &str = "ALTER TABLE sessions ADD COLUMN found_tools TEXT NOT NULL DEFAULT '[]';";

/// Brings the database at `path` to the newest schema version, one migration (and one
/// transaction) at a time; refuses, changing nothing, a database newer than this build.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let sql = |source| StoreError::Sqlite { path: path.to_path_buf(), source };
    let found = schema_version(conn, path)?;
    for (version, migration) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        let tx = conn.transaction().map_err(sql)?;
        tx.execute_batch(migration).map_err(sql)?;
        tx.pragma_update(None, "user_version", version as i64 + 1).map_err(sql)?;
        tx.commit().map_err(sql)?;
    }
    Ok(())
}

/// The database's schema version (`PRAGMA user_version`); an error for one newer than this
/// build knows.
fn schema_version(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    let known = MIGRATIONS.len() as i64;
    let found: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(|source| StoreError::Sqlite { path: path.to_path_buf(), source })?;
    if found > known {
        return Err(StoreError::NewerSchema { path: path.to_path_buf(), found, known });
    }
    Ok(found)
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// A new id: the prefix, the time in milliseconds (so ids sort by creation) and 32 random bits.
pub fn new_id(prefix: &str) -> String {
    let random = RandomState::new().build_hasher().finish() as u32;
    format!("{prefix}_{:011x}{random:08x}", now_ms())
}

impl Store {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: impl Into<PathBuf>) -> Result<Store, StoreError> {
        let path = path.into();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        }
        let sql = |source| StoreError::Sqlite { path: path.clone(), source };
        let mut conn = Connection::open(&path).map_err(sql)?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(sql)?;
        // Before anything writes (WAL mode changes the file's header): a newer schema is refused.
        schema_version(&conn, &path)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(sql)?;
        migrate(&mut conn, &path)?;
        Ok(Store { path, conn: Mutex::new(conn) })
    }

    /// The database under the data directory: `DATA_DIR/sessions.db`.
    pub fn default_path(data_dir: &Path) -> PathBuf {
        data_dir.join("sessions.db")
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite { path: self.path.clone(), source }
    }

    /// Creates a session.
    pub fn create_session(
        &self,
        parent_id: Option<&str>,
        agent: &str,
        model: Option<&str>,
        root: &Path,
    ) -> Result<SessionInfo, StoreError> {
        let id = new_id("ses");
        let now = now_ms();
        self.conn()
            .execute(
                "INSERT INTO sessions (id, parent_id, agent, model, root, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                params![id, parent_id, agent, model, root.display().to_string(), now],
            )
            .map_err(|e| self.err(e))?;
        self.session(&id)
    }

    /// The id of the session `given` names: its whole id, or the start of one session's id
    /// only (with or without `ses_`), as a person copies it from `session list`.
    pub fn resolve_id(&self, given: &str) -> Result<String, StoreError> {
        if self.session(given).is_ok() {
            return Ok(given.to_string());
        }
        let start = if given.starts_with("ses_") { given.to_string() } else { format!("ses_{given}") };
        // At least a few characters past `ses_`: `s` alone names nothing.
        if given.is_empty() || start.len() < "ses_".len() + 4 {
            return Err(StoreError::NoSession(given.to_string()));
        }
        let escaped: String =
            start.chars().flat_map(|c| if matches!(c, '%' | '_' | '\\') { vec!['\\', c] } else { vec![c] }).collect();
        let conn = self.conn();
        let mut query = conn
            .prepare("SELECT id FROM sessions WHERE id LIKE ?1 ESCAPE '\\' ORDER BY id LIMIT 6")
            .map_err(|e| self.err(e))?;
        let ids: Vec<String> = query
            .query_map([format!("{escaped}%")], |row| row.get(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))?;
        match ids.len() {
            0 => Err(StoreError::NoSession(given.to_string())),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            _ => Err(StoreError::Ambiguous { given: given.to_string(), ids }),
        }
    }

    /// The session `id`.
    pub fn session(&self, id: &str) -> Result<SessionInfo, StoreError> {
        let found = self
            .conn()
            .query_row(
                "SELECT s.id, s.parent_id, s.title, s.agent, s.model, s.root, s.created_at, s.updated_at,
                        (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
                 FROM sessions s WHERE s.id = ?1",
                [id],
                session_row,
            )
            .optional()
            .map_err(|e| self.err(e))?;
        found.ok_or_else(|| StoreError::NoSession(id.to_string()))
    }

    /// Every session, most recently updated first.
    pub fn list_sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT s.id, s.parent_id, s.title, s.agent, s.model, s.root, s.created_at, s.updated_at,
                        (SELECT COUNT(*) FROM messages m WHERE m.session_id = s.id)
                 FROM sessions s ORDER BY s.updated_at DESC, s.id DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], session_row).map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Session `id` and every sub-agent session under it (their sub-agents too), `id` first.
    pub fn session_tree(&self, id: &str) -> Result<Vec<String>, StoreError> {
        self.session(id)?;
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "WITH RECURSIVE tree(id, depth) AS (
                   SELECT id, 0 FROM sessions WHERE id = ?1
                   UNION SELECT s.id, t.depth + 1 FROM sessions s JOIN tree t ON s.parent_id = t.id
                 ) SELECT id FROM tree ORDER BY depth, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([id], |row| row.get(0)).map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<String>, _>>().map_err(|e| self.err(e))
    }

    /// Deletes session `id` and its sub-agent sessions ([`Store::session_tree`]) with everything
    /// stored of them (messages, parts, attachments, compactions, steps, tasks), in one
    /// transaction. Returns the ids deleted.
    pub fn delete_session(&self, id: &str) -> Result<Vec<String>, StoreError> {
        let ids = self.session_tree(id)?;
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        for id in &ids {
            tx.execute("DELETE FROM tasks WHERE session_id = ?1 OR child_session_id = ?1", [id])
                .map_err(|e| self.err(e))?;
            // Messages, parts, attachments, compactions and steps go with it (ON DELETE CASCADE).
            tx.execute("DELETE FROM sessions WHERE id = ?1", [id]).map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(ids)
    }

    /// Changes the agent the session runs as (plan / build switching).
    pub fn set_agent(&self, id: &str, agent: &str) -> Result<(), StoreError> {
        self.conn()
            .execute("UPDATE sessions SET agent = ?2, updated_at = ?3 WHERE id = ?1", params![id, agent, now_ms()])
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Takes the lock of session `id` for this process: while it is held, another toolshed
    /// process cannot run the session, so two never interleave their messages in it. It is an
    /// advisory file lock under the store's directory, which the kernel releases when its
    /// process ends (a killed process's lock is free to take). The error is for people: wait,
    /// then do `next` ("continue the session").
    pub fn lock_session(&self, id: &str, next: &str) -> Result<toolshed_core::paths::FileLock, String> {
        use toolshed_core::paths::FileLock;
        // The id names a file: only what toolshed's own ids are made of.
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            return Err(format!("`{id}` is not a session id (they look like ses_1a2b3c...)"));
        }
        let dir = self.path().parent().unwrap_or(Path::new(".")).join("locks");
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let path = dir.join(format!("{id}.lock"));
        match FileLock::try_acquire(&path) {
            Ok(Some(lock)) => Ok(lock),
            Ok(None) => {
                // No pid yet: another process has just taken the lock.
                let pid = FileLock::holder(&path).map_or("starting".to_string(), |pid| format!("pid {pid}"));
                Err(format!(
                    "session {id} is in use by another toolshed process ({pid}); wait for it to finish or stop it, then {next}"
                ))
            }
            Err(e) => Err(format!("cannot lock session {id} ({}): {e}", path.display())),
        }
    }

    /// Changes the model the session talks to.
    pub fn set_model(&self, id: &str, model: &str) -> Result<(), StoreError> {
        self.conn()
            .execute("UPDATE sessions SET model = ?2, updated_at = ?3 WHERE id = ?1", params![id, model, now_ms()])
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Sets the title if the session has none yet: the prompt's first 80 characters, without
    /// the piped input `run` appends to it (`<stdin>…</stdin>`), unless that is all there is.
    pub fn set_title_once(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let asked = title.split("\n\n<stdin>\n").next().filter(|t| !t.trim().is_empty()).unwrap_or(title);
        let title: String = asked.split_whitespace().collect::<Vec<_>>().join(" ").chars().take(80).collect();
        self.conn()
            .execute("UPDATE sessions SET title = ?2 WHERE id = ?1 AND title = ''", params![id, title])
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Adds a message and returns its id.
    pub fn add_message(
        &self,
        session_id: &str,
        role: Role,
        agent: Option<&str>,
        model: Option<&str>,
    ) -> Result<String, StoreError> {
        let id = new_id("msg");
        self.insert_message(session_id, &id, role, agent, model)?;
        Ok(id)
    }

    fn insert_message(
        &self,
        session_id: &str,
        id: &str,
        role: Role,
        agent: Option<&str>,
        model: Option<&str>,
    ) -> Result<(), StoreError> {
        let role = if role == Role::User { "user" } else { "assistant" };
        let now = now_ms();
        let conn = self.conn();
        conn.execute(
            "INSERT OR IGNORE INTO messages (id, session_id, seq, role, agent, model, created_at)
             VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?2), ?3, ?4, ?5, ?6)",
            params![id, session_id, role, agent, model, now],
        )
        .map_err(|e| self.err(e))?;
        conn.execute("UPDATE sessions SET updated_at = ?2 WHERE id = ?1", params![session_id, now])
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Adds a text part.
    pub fn add_text(&self, session_id: &str, message_id: &str, text: &str) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO parts (session_id, message_id, kind, text) VALUES (?1, ?2, 'text', ?3)",
                params![session_id, message_id, text],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Adds an image the person attached: its data as the part's text, its type as metadata.
    pub fn add_image(&self, session_id: &str, message_id: &str, image: &Image) -> Result<(), StoreError> {
        let kept = json!({"media_type": image.media_type}).to_string();
        self.conn()
            .execute(
                "INSERT INTO parts (session_id, message_id, kind, text, metadata) VALUES (?1, ?2, 'image', ?3, ?4)",
                params![session_id, message_id, image.data_base64, kept],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Adds a provider's reasoning item: its summary as text, the item itself as metadata.
    pub fn add_reasoning(&self, session_id: &str, message_id: &str, reasoning: &Reasoning) -> Result<(), StoreError> {
        let kept = json!({"format": reasoning.format, "model": reasoning.model, "item": reasoning.item}).to_string();
        self.conn()
            .execute(
                "INSERT INTO parts (session_id, message_id, kind, text, metadata) VALUES (?1, ?2, 'reasoning', ?3, ?4)",
                params![session_id, message_id, reasoning.summary(), kept],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Adds a tool call the model made, in state pending. `false` when the session already
    /// has a call with that id (nothing is written then).
    pub fn add_tool_call(&self, session_id: &str, message_id: &str, call: &ToolCall) -> Result<bool, StoreError> {
        let kind = if call.kind == CallKind::Custom { "custom" } else { "function" };
        self.conn()
            .execute(
                "INSERT INTO parts (session_id, message_id, kind, call_id, tool, call_kind, input, state)
                 VALUES (?1, ?2, 'tool', ?3, ?4, ?5, ?6, 'pending')
                 ON CONFLICT(session_id, call_id) DO NOTHING",
                params![session_id, message_id, call.id, call.name, kind, call.arguments],
            )
            .map(|inserted| inserted > 0)
            .map_err(|e| self.err(e))
    }

    /// Marks a call running.
    pub fn set_running(&self, session_id: &str, call_id: &str) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE parts SET state = 'running', started_at = ?3 WHERE session_id = ?1 AND call_id = ?2 AND state = 'pending'",
                params![session_id, call_id, now_ms()],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Records the estimated size, in tokens, of the request message `message_id` answers.
    pub fn set_request_tokens(&self, message_id: &str, tokens: u64) -> Result<(), StoreError> {
        self.conn()
            .execute("UPDATE messages SET request_tokens = ?2 WHERE id = ?1", params![message_id, tokens as i64])
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// The `seq` of the newest message whose tool outputs are sent pruned (0: none).
    pub fn pruned_through(&self, session_id: &str) -> Result<i64, StoreError> {
        let seq: Option<Option<i64>> = self
            .conn()
            .query_row("SELECT pruned_through FROM sessions WHERE id = ?1", [session_id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        seq.map(Option::unwrap_or_default).ok_or_else(|| StoreError::NoSession(session_id.to_string()))
    }

    /// Prunes tool outputs through message `seq` from what is sent (never backwards).
    pub fn set_pruned_through(&self, session_id: &str, seq: i64) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE sessions SET pruned_through = MAX(COALESCE(pruned_through, 0), ?2) WHERE id = ?1",
                params![session_id, seq],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Stores a compaction; from now on what is sent starts with it.
    pub fn add_compaction(&self, c: &Compaction) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO compactions (id, session_id, created_at, trigger, kept_from, summarised, summary, model,
                                          tokens_before, tokens_after, input_tokens, output_tokens, files)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    c.id,
                    c.session_id,
                    c.created_at,
                    c.trigger,
                    c.kept_from,
                    c.summarised,
                    c.summary,
                    c.model,
                    c.tokens_before as i64,
                    c.tokens_after as i64,
                    c.usage.map(|u| u.input_tokens as i64),
                    c.usage.map(|u| u.output_tokens as i64),
                    c.files,
                ],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// The session's compactions, oldest first.
    pub fn compactions(&self, session_id: &str) -> Result<Vec<Compaction>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT id, session_id, created_at, trigger, kept_from, summarised, summary, model, tokens_before,
                        tokens_after, input_tokens, output_tokens, files
                 FROM compactions WHERE session_id = ?1 ORDER BY created_at, rowid",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([session_id], |r| {
                let input: Option<i64> = r.get(10)?;
                let output: Option<i64> = r.get(11)?;
                Ok(Compaction {
                    kind: COMPACTION,
                    id: r.get(0)?,
                    session_id: r.get(1)?,
                    created_at: r.get(2)?,
                    trigger: r.get(3)?,
                    kept_from: r.get(4)?,
                    summarised: r.get(5)?,
                    summary: r.get(6)?,
                    model: r.get(7)?,
                    tokens_before: r.get::<_, i64>(8)?.max(0) as u64,
                    tokens_after: r.get::<_, i64>(9)?.max(0) as u64,
                    usage: input.zip(output).map(|(i, o)| Usage::new(i.max(0) as u64, o.max(0) as u64)),
                    files: r.get(12)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Records how a model response ended.
    pub fn finish_message(
        &self,
        message_id: &str,
        usage: Option<Usage>,
        stop_reason: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE messages SET finished_at = ?2, input_tokens = ?3, output_tokens = ?4, stop_reason = ?5, error = ?6,
                        cached_input_tokens = ?7, cache_write_tokens = ?8, reasoning_tokens = ?9 WHERE id = ?1",
                params![
                    message_id,
                    now_ms(),
                    usage.map(|u| u.input_tokens as i64),
                    usage.map(|u| u.output_tokens as i64),
                    stop_reason,
                    error,
                    usage.map(|u| u.cached_input_tokens as i64),
                    usage.map(|u| u.cache_write_tokens as i64),
                    usage.map(|u| u.reasoning_tokens as i64),
                ],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Starts the session's next step; returns its number (1 for the first).
    pub fn begin_step(&self, session_id: &str, kind: StepKind) -> Result<u32, StoreError> {
        self.conn()
            .query_row(
                "INSERT INTO steps (session_id, step, kind, created_at)
                 VALUES (?1, (SELECT COALESCE(MAX(step), 0) + 1 FROM steps WHERE session_id = ?1), ?2, ?3)
                 RETURNING step",
                params![session_id, kind.as_str(), now_ms()],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u32)
            .map_err(|e| self.err(e))
    }

    /// Links step `step` to its assistant message.
    pub fn link_step(&self, session_id: &str, step: u32, message_id: &str) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE steps SET message_id = ?3 WHERE session_id = ?1 AND step = ?2",
                params![session_id, step, message_id],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Records the snapshot taken before step `step`'s tool calls run, before they do: a
    /// process killed while they run leaves it, and undo completes the step later
    /// ([`crate::undo::complete_cut_steps`]).
    pub fn set_step_before(&self, session_id: &str, step: u32, before: &str) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE steps SET before_snapshot = ?3 WHERE session_id = ?1 AND step = ?2",
                params![session_id, step, before],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Records the snapshots around step `step`'s tool calls and the paths they changed.
    pub fn set_step_snapshots(
        &self,
        session_id: &str,
        step: u32,
        before: &str,
        after: &str,
        changed: &[PathBuf],
    ) -> Result<(), StoreError> {
        self.set_step_snapshots_at(session_id, step, before, after, changed, now_ms())
    }

    /// [`Store::set_step_snapshots`] for a step that finished at `finished_at` (ms), not now: a
    /// step cut short, completed later, keeps its place among the session's steps.
    pub fn set_step_snapshots_at(
        &self,
        session_id: &str,
        step: u32,
        before: &str,
        after: &str,
        changed: &[PathBuf],
        finished_at: i64,
    ) -> Result<(), StoreError> {
        use std::os::unix::ffi::OsStrExt;
        let mut joined = Vec::new();
        for path in changed {
            joined.extend_from_slice(path.as_os_str().as_bytes());
            joined.push(0);
        }
        self.conn()
            .execute(
                "UPDATE steps SET before_snapshot = ?3, after_snapshot = ?4, changed = ?5, finished_at = ?6
                 WHERE session_id = ?1 AND step = ?2",
                params![session_id, step, before, after, joined, finished_at],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// The session's steps, in order.
    pub fn steps(&self, session_id: &str) -> Result<Vec<StoredStep>, StoreError> {
        use std::os::unix::ffi::OsStrExt;
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT step, kind, message_id, before_snapshot, after_snapshot, changed, created_at, finished_at
                 FROM steps WHERE session_id = ?1 ORDER BY step",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([session_id], |r| {
                let changed: Option<Vec<u8>> = r.get(5)?;
                Ok(StoredStep {
                    step: r.get::<_, i64>(0)? as u32,
                    kind: StepKind::parse(&r.get::<_, String>(1)?),
                    message_id: r.get(2)?,
                    before: r.get(3)?,
                    after: r.get(4)?,
                    changed: changed
                        .unwrap_or_default()
                        .split(|b| *b == 0)
                        .filter(|p| !p.is_empty())
                        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
                        .collect(),
                    created_at: r.get(6)?,
                    finished_at: r.get(7)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Marks every call of the session that never finished as interrupted; returns how many.
    pub fn mark_interrupted(&self, session_id: &str) -> Result<usize, StoreError> {
        self.conn()
            .execute(
                "UPDATE parts SET state = 'error', is_error = 1, output = ?2, finished_at = ?3,
                        metadata = json_object('interrupted', json('true'))
                 WHERE session_id = ?1 AND kind = 'tool' AND state IN ('pending', 'running')",
                params![session_id, INTERRUPTED, now_ms()],
            )
            .map_err(|e| self.err(e))
    }

    /// The session's messages with their parts, in order.
    pub fn messages(&self, session_id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT id, role, agent, model, created_at, finished_at, input_tokens, output_tokens, stop_reason, error,
                        seq, cached_input_tokens, cache_write_tokens, reasoning_tokens, request_tokens
                 FROM messages WHERE session_id = ?1 ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        let mut messages: Vec<StoredMessage> = stmt
            .query_map([session_id], |r| {
                let input: Option<i64> = r.get(6)?;
                let output: Option<i64> = r.get(7)?;
                let count = |i| r.get::<_, Option<i64>>(i).map(|n| n.unwrap_or(0).max(0) as u64);
                let (cached, written, reasoning) = (count(11)?, count(12)?, count(13)?);
                Ok(StoredMessage {
                    id: r.get(0)?,
                    seq: r.get(10)?,
                    request_tokens: r.get::<_, Option<i64>>(14)?.map(|n| n.max(0) as u64),
                    role: if r.get::<_, String>(1)? == "user" { Role::User } else { Role::Assistant },
                    agent: r.get(2)?,
                    model: r.get(3)?,
                    created_at: r.get(4)?,
                    finished_at: r.get(5)?,
                    usage: input.zip(output).map(|(i, o)| Usage {
                        input_tokens: i.max(0) as u64,
                        output_tokens: o.max(0) as u64,
                        cached_input_tokens: cached,
                        cache_write_tokens: written,
                        reasoning_tokens: reasoning,
                    }),
                    stop_reason: r.get(8)?,
                    error: r.get(9)?,
                    parts: Vec::new(),
                })
            })
            .map_err(|e| self.err(e))?
            .collect::<Result<_, _>>()
            .map_err(|e| self.err(e))?;
        let mut stmt = conn
            .prepare(
                "SELECT message_id, kind, text, call_id, tool, call_kind, input, state, output, is_error, title, metadata, started_at, finished_at
                 FROM parts WHERE session_id = ?1 ORDER BY id",
            )
            .map_err(|e| self.err(e))?;
        let parts = stmt
            .query_map([session_id], |r| {
                let message_id: String = r.get(0)?;
                let kind: String = r.get(1)?;
                let part = if kind == "text" {
                    StoredPart::Text { text: r.get::<_, Option<String>>(2)?.unwrap_or_default() }
                } else if kind == "image" {
                    let kept: Value =
                        r.get::<_, Option<String>>(11)?.and_then(|m| serde_json::from_str(&m).ok()).unwrap_or_default();
                    StoredPart::Image {
                        mime_type: kept.get("media_type").and_then(Value::as_str).unwrap_or_default().to_string(),
                        data_base64: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                    }
                } else if kind == "reasoning" {
                    let kept: Value =
                        r.get::<_, Option<String>>(11)?.and_then(|m| serde_json::from_str(&m).ok()).unwrap_or_default();
                    StoredPart::Reasoning {
                        format: kept.get("format").and_then(Value::as_str).unwrap_or_default().to_string(),
                        model: kept.get("model").and_then(Value::as_str).unwrap_or_default().to_string(),
                        summary: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                        item: kept.get("item").cloned().unwrap_or_default(),
                    }
                } else {
                    let metadata: Option<String> = r.get(11)?;
                    StoredPart::Tool {
                        call_id: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                        tool: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                        kind: if r.get::<_, Option<String>>(5)?.as_deref() == Some("custom") {
                            CallKind::Custom
                        } else {
                            CallKind::Function
                        },
                        input: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                        state: CallState::parse(&r.get::<_, Option<String>>(7)?.unwrap_or_default()),
                        output: r.get(8)?,
                        is_error: r.get::<_, i64>(9)? != 0,
                        title: r.get(10)?,
                        metadata: metadata.and_then(|m| serde_json::from_str(&m).ok()).unwrap_or(json!({})),
                        images: Vec::new(),
                        started_at: r.get(12)?,
                        finished_at: r.get(13)?,
                    }
                };
                Ok((message_id, part))
            })
            .map_err(|e| self.err(e))?;
        for row in parts {
            let (message_id, part) = row.map_err(|e| self.err(e))?;
            if let Some(m) = messages.iter_mut().find(|m| m.id == message_id) {
                m.parts.push(part);
            }
        }
        let mut stmt = conn
            .prepare("SELECT call_id, mime_type, bytes, data FROM attachments WHERE session_id = ?1 ORDER BY id")
            .map_err(|e| self.err(e))?;
        let images = stmt
            .query_map([session_id], |r| {
                let data: Option<Vec<u8>> = r.get(3)?;
                let image = StoredImage {
                    mime_type: r.get(1)?,
                    bytes: r.get::<_, i64>(2)?.max(0) as u64,
                    data_base64: data.map(|d| base64::engine::general_purpose::STANDARD.encode(d)),
                };
                Ok((r.get::<_, String>(0)?, image))
            })
            .map_err(|e| self.err(e))?;
        for row in images {
            let (call, image) = row.map_err(|e| self.err(e))?;
            let part = messages
                .iter_mut()
                .flat_map(|m| m.parts.iter_mut())
                .find(|p| matches!(p, StoredPart::Tool { call_id, .. } if *call_id == call));
            if let Some(StoredPart::Tool { images, .. }) = part {
                images.push(image);
            }
        }
        Ok(messages)
    }

    /// The conversation as the model gets it: each assistant message with tool calls is
    /// followed by a user message holding their results in call order; calls that never
    /// finished get [`INTERRUPTED`].
    pub fn history(&self, session_id: &str) -> Result<Vec<Message>, StoreError> {
        Ok(history_of(&self.messages(session_id)?))
    }

    /// Replaces the session's todo list.
    pub fn set_todos(&self, session_id: &str, todos: &[Todo]) -> Result<(), StoreError> {
        self.set_list(session_id, "todos", serde_json::to_string(todos))
    }

    /// Keeps the deferred tools the session's searches found (names, in any order).
    pub fn set_found_tools(&self, session_id: &str, tools: &[String]) -> Result<(), StoreError> {
        let mut tools = tools.to_vec();
        tools.sort();
        tools.dedup();
        self.set_list(session_id, "found_tools", serde_json::to_string(&tools))
    }

    /// Writes a session's list `column` (JSON text; an empty list if it could not be written).
    fn set_list(
        &self,
        session_id: &str,
        column: &'static str,
        json: serde_json::Result<String>,
    ) -> Result<(), StoreError> {
        let text = json.unwrap_or_else(|_| "[]".to_string());
        let changed = self
            .conn()
            .execute(&format!("UPDATE sessions SET {column} = ?2 WHERE id = ?1"), params![session_id, text])
            .map_err(|e| self.err(e))?;
        if changed == 0 {
            return Err(StoreError::NoSession(session_id.to_string()));
        }
        Ok(())
    }

    /// The deferred tools the session's searches found, sorted.
    pub fn found_tools(&self, session_id: &str) -> Result<Vec<String>, StoreError> {
        let text: Option<String> = self
            .conn()
            .query_row("SELECT found_tools FROM sessions WHERE id = ?1", [session_id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        match text {
            None => Err(StoreError::NoSession(session_id.to_string())),
            Some(t) => Ok(serde_json::from_str(&t).unwrap_or_default()),
        }
    }

    /// The session's todo list.
    pub fn todos(&self, session_id: &str) -> Result<Vec<Todo>, StoreError> {
        let text: Option<String> = self
            .conn()
            .query_row("SELECT todos FROM sessions WHERE id = ?1", [session_id], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default())
    }

    /// Stores a new background task (status running).
    pub fn add_task(&self, task: &StoredTask) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT OR REPLACE INTO tasks (id, session_id, child_session_id, agent, description, status, result, error, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    task.id,
                    task.session_id,
                    task.child_session_id,
                    task.agent,
                    task.description,
                    task.status,
                    task.result,
                    task.error,
                    now_ms()
                ],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// Updates a task's status and outcome.
    pub fn update_task(
        &self,
        id: &str,
        status: &str,
        result: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "UPDATE tasks SET status = ?2, result = ?3, error = ?4, finished_at = ?5 WHERE id = ?1",
                params![id, status, result, error, now_ms()],
            )
            .map(drop)
            .map_err(|e| self.err(e))
    }

    /// The session's background tasks, oldest first.
    pub fn tasks(&self, session_id: &str) -> Result<Vec<StoredTask>, StoreError> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare(
                "SELECT id, session_id, child_session_id, agent, description, status, result, error
                 FROM tasks WHERE session_id = ?1 ORDER BY created_at, id",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([session_id], |r| {
                Ok(StoredTask {
                    id: r.get(0)?,
                    session_id: r.get(1)?,
                    child_session_id: r.get(2)?,
                    agent: r.get(3)?,
                    description: r.get(4)?,
                    status: r.get(5)?,
                    result: r.get(6)?,
                    error: r.get(7)?,
                })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Marks the session's tasks that were still running as lost (their process is gone);
    /// returns how many.
    pub fn mark_tasks_lost(&self, session_id: &str) -> Result<usize, StoreError> {
        self.conn()
            .execute(
                "UPDATE tasks SET status = 'lost', error = 'the process running it ended before it finished', finished_at = ?2
                 WHERE session_id = ?1 AND status = 'running'",
                params![session_id, now_ms()],
            )
            .map_err(|e| self.err(e))
    }

    /// The whole session as JSON: the session, its messages and parts, and its tasks.
    pub fn export(&self, session_id: &str) -> Result<Value, StoreError> {
        let info = self.session(session_id)?;
        let messages = self.messages(session_id)?;
        let tasks = self.tasks(session_id)?;
        let todos = self.todos(session_id)?;
        let compactions = self.compactions(session_id)?;
        Ok(json!({"session": info, "todos": todos, "messages": messages, "compactions": compactions, "tasks": tasks}))
    }
}

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionInfo> {
    Ok(SessionInfo {
        id: r.get(0)?,
        parent_id: r.get(1)?,
        title: r.get(2)?,
        agent: r.get(3)?,
        model: r.get(4)?,
        root: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
        messages: r.get(8)?,
    })
}

/// Added to an invalid-arguments error of a call whose response hit the output-token limit.
const CUT_OFF_ARGUMENTS: &str = "\n\n(Your response hit the output-token limit, so these arguments were cut off. Send a smaller call: split a long file or patch into several calls.)";

/// The model's view of stored messages (see [`Store::history`]).
pub fn history_of(messages: &[StoredMessage]) -> Vec<Message> {
    let mut out = Vec::new();
    for m in messages {
        let mut parts = Vec::new();
        let mut results = Vec::new();
        for p in &m.parts {
            match p {
                StoredPart::Text { text } => parts.push(Part::Text { text: text.clone() }),
                StoredPart::Image { mime_type, data_base64 } => {
                    if m.role == Role::User {
                        parts.push(Part::Image(Image {
                            media_type: mime_type.clone(),
                            data_base64: data_base64.clone(),
                        }));
                    }
                }
                StoredPart::Reasoning { format, model, item, .. } => {
                    if m.role == Role::Assistant {
                        parts.push(Part::Reasoning(Reasoning {
                            format: format.clone(),
                            item: item.clone(),
                            model: model.clone(),
                        }));
                    }
                }
                StoredPart::Tool { call_id, tool, kind, input, state, output, is_error, images, .. } => {
                    if m.role == Role::User {
                        continue;
                    }
                    parts.push(Part::ToolCall(ToolCall {
                        id: call_id.clone(),
                        name: tool.clone(),
                        arguments: input.clone(),
                        kind: *kind,
                    }));
                    let finished = matches!(state, CallState::Completed | CallState::Error);
                    let mut output =
                        if finished { output.clone().unwrap_or_default() } else { INTERRUPTED.to_string() };
                    // Arguments that stopped at the output-token limit are not the model's typo.
                    if *is_error && m.stop_reason.as_deref() == Some("maxtokens") && output.contains("not valid JSON") {
                        output.push_str(CUT_OFF_ARGUMENTS);
                    }
                    let mut sent = Vec::new();
                    for image in images.iter().filter(|_| finished) {
                        match &image.data_base64 {
                            Some(data) => {
                                sent.push(Image { media_type: image.mime_type.clone(), data_base64: data.clone() });
                            }
                            None => {
                                if !output.is_empty() {
                                    output.push_str("\n\n");
                                }
                                output.push_str(&image.omitted_note());
                            }
                        }
                    }
                    results.push(Part::ToolResult(ToolResult {
                        call_id: call_id.clone(),
                        name: tool.clone(),
                        output,
                        is_error: *is_error || !finished,
                        kind: *kind,
                        images: sent,
                    }));
                }
            }
        }
        if parts.is_empty() {
            continue;
        }
        // A response that failed or was interrupted mid-way keeps what arrived, marked as such,
        // so the model does not take half an answer for a finished one.
        if m.role == Role::Assistant
            && parts.iter().any(|p| matches!(p, Part::Text { text } if !text.trim().is_empty()))
        {
            if m.error.is_some() {
                parts.push(Part::Text { text: "\n\n[This response was cut off before it finished.]".to_string() });
            } else if m.stop_reason.as_deref() == Some("maxtokens") {
                parts.push(Part::Text {
                    text: "\n\n[This response was cut off at the output-token limit.]".to_string(),
                });
            }
        }
        out.push(Message { role: m.role, parts });
        if !results.is_empty() {
            out.push(Message { role: Role::User, parts: results });
        }
    }
    out
}

impl Recorder for Store {
    fn record(&self, r: CallRecord<'_>) -> Result<(), String> {
        let result = r.result;
        let state = if result.is_error { CallState::Error } else { CallState::Completed };
        let mut metadata = result.metadata.clone();
        // The tool's own time (started_at..finished_at also holds the wait for a question's
        // answer), for a resumed session to show as the live one did.
        metadata.entry("duration_ms").or_insert_with(|| Value::from(result.duration.as_millis() as u64));
        let metadata = Value::Object(metadata).to_string();
        let input = match &r.call.input {
            CallInput::Json(v) => v.to_string(),
            CallInput::Raw(text) => text.clone(),
        };
        let finished = r.finished_at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        let started = finished - result.duration.as_millis() as i64;
        // A call the loop did not announce (e.g. `toolshed call --session`) gets a message of its own.
        self.insert_message(r.session_id, &r.call.message_id, Role::Assistant, Some(r.agent), None)
            .map_err(|e| e.to_string())?;
        self.conn()
            .execute(
                "INSERT INTO parts (session_id, message_id, kind, call_id, tool, call_kind, input, state, output, is_error, title, metadata, started_at, finished_at)
                 VALUES (?1, ?2, 'tool', ?3, ?4, 'function', ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
                 ON CONFLICT(session_id, call_id) DO UPDATE SET
                   state = excluded.state, output = excluded.output, is_error = excluded.is_error,
                   title = excluded.title, metadata = excluded.metadata,
                   started_at = COALESCE(parts.started_at, excluded.started_at), finished_at = excluded.finished_at",
                params![
                    r.session_id,
                    r.call.message_id,
                    r.call.id,
                    r.call.name,
                    input,
                    state.as_str(),
                    result.output,
                    result.is_error,
                    result.title,
                    metadata,
                    started,
                    finished
                ],
            )
            .map_err(|e| format!("cannot record the call in {}: {e}", self.path.display()))?;
        self.record_images(r.session_id, &r.call.id, &result.attachments)
            .map_err(|e| format!("cannot record the call's images in {}: {e}", self.path.display()))
    }
}

impl Store {
    /// Stores a call's images (replacing any stored before); an image no model would be sent
    /// is kept as its type and size only.
    fn record_images(&self, session_id: &str, call_id: &str, attachments: &[Attachment]) -> rusqlite::Result<()> {
        let conn = self.conn();
        conn.execute("DELETE FROM attachments WHERE session_id = ?1 AND call_id = ?2", params![session_id, call_id])?;
        for attachment in attachments {
            let Attachment::Image { mime_type, data } = attachment;
            let kept = sendable(mime_type, data.len()).then_some(data.as_slice());
            conn.execute(
                "INSERT INTO attachments (session_id, call_id, mime_type, bytes, data) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![session_id, call_id, mime_type, data.len() as i64, kept],
            )?;
        }
        Ok(())
    }
}

impl TodoStore for Store {
    fn get(&self, session_id: &str) -> Result<Vec<Todo>, String> {
        self.todos(session_id).map_err(|e| e.to_string())
    }

    fn set(&self, session_id: &str, todos: &[Todo]) -> Result<(), String> {
        self.set_todos(session_id, todos).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("db/sessions.db")).unwrap();
        (dir, store)
    }

    fn call(id: &str) -> ToolCall {
        ToolCall { id: id.into(), name: "read".into(), arguments: r#"{"path":"a"}"#.into(), kind: CallKind::Function }
    }

    #[test]
    fn deleting_a_session_deletes_its_sub_agents_and_everything_stored_of_them() {
        let (_d, s) = store();
        let ses = s.create_session(None, "build", Some("p/m"), Path::new("/w")).unwrap();
        let other = s.create_session(None, "build", Some("p/m"), Path::new("/w")).unwrap();
        let child = s.create_session(Some(&ses.id), "explore", Some("p/m"), Path::new("/w")).unwrap();
        for id in [&ses.id, &child.id, &other.id] {
            let m = s.add_message(id, Role::Assistant, Some("build"), Some("p/m")).unwrap();
            s.add_tool_call(id, &m, &call("c1")).unwrap();
            s.begin_step(id, StepKind::Model).unwrap();
        }
        assert_eq!(s.session_tree(&ses.id).unwrap(), [ses.id.clone(), child.id.clone()]);
        assert_eq!(s.delete_session(&ses.id).unwrap(), [ses.id.clone(), child.id.clone()]);
        for id in [&ses.id, &child.id] {
            assert!(matches!(s.session(id), Err(StoreError::NoSession(_))));
        }
        let conn = s.conn();
        for table in ["messages", "parts", "steps"] {
            let left: i64 = conn
                .query_row(&format!("SELECT COUNT(*) FROM {table} WHERE session_id != ?1"), [&other.id], |r| r.get(0))
                .unwrap();
            assert_eq!(left, 0, "{table} of the deleted sessions remain");
        }
        drop(conn);
        assert_eq!(s.messages(&other.id).unwrap().len(), 1, "another session is untouched");
        assert!(matches!(s.delete_session("ses_nope"), Err(StoreError::NoSession(_))));
    }

    #[test]
    fn history_pairs_results_with_calls_and_marks_unfinished_ones_interrupted() {
        let (_d, s) = store();
        let ses = s.create_session(None, "build", Some("p/m"), Path::new("/w")).unwrap();
        let u = s.add_message(&ses.id, Role::User, None, None).unwrap();
        s.add_text(&ses.id, &u, "go").unwrap();
        let a = s.add_message(&ses.id, Role::Assistant, Some("build"), Some("p/m")).unwrap();
        s.add_text(&ses.id, &a, "reading").unwrap();
        s.add_tool_call(&ses.id, &a, &call("c1")).unwrap();
        s.add_tool_call(&ses.id, &a, &call("c2")).unwrap();
        s.set_running(&ses.id, "c1").unwrap();
        let history = s.history(&ses.id).unwrap();
        assert_eq!(history.len(), 3);
        assert_eq!(history[1].tool_calls().count(), 2);
        let results: Vec<_> = history[2]
            .parts
            .iter()
            .map(|p| match p {
                Part::ToolResult(r) => (r.call_id.as_str(), r.is_error, r.output.as_str()),
                _ => panic!(),
            })
            .collect();
        assert_eq!(results, [("c1", true, INTERRUPTED), ("c2", true, INTERRUPTED)]);
        assert_eq!(s.mark_interrupted(&ses.id).unwrap(), 2);
        let msgs = s.messages(&ses.id).unwrap();
        assert!(
            matches!(&msgs[1].parts[1], StoredPart::Tool { state: CallState::Error, metadata, .. } if metadata["interrupted"] == true)
        );
        assert_eq!(s.session(&ses.id).unwrap().messages, 2);
    }

    #[test]
    fn text_of_a_response_that_failed_mid_way_is_replayed_marked_as_cut_off() {
        let (_d, s) = store();
        let ses = s.create_session(None, "build", Some("p/m"), Path::new("/w")).unwrap();
        let u = s.add_message(&ses.id, Role::User, None, None).unwrap();
        s.add_text(&ses.id, &u, "explain").unwrap();
        let a = s.add_message(&ses.id, Role::Assistant, Some("build"), Some("p/m")).unwrap();
        s.add_text(&ses.id, &a, "This is a partial answer").unwrap();
        s.finish_message(&a, None, None, Some("the response stream failed")).unwrap();
        let history = s.history(&ses.id).unwrap();
        assert_eq!(history[1].text(), "This is a partial answer\n\n[This response was cut off before it finished.]");
        // A finished answer is replayed as it is.
        let b = s.add_message(&ses.id, Role::Assistant, Some("build"), Some("p/m")).unwrap();
        s.add_text(&ses.id, &b, "Complete.").unwrap();
        s.finish_message(&b, None, Some("end_turn"), None).unwrap();
        assert_eq!(s.history(&ses.id).unwrap()[2].text(), "Complete.");
        let c = s.add_message(&ses.id, Role::Assistant, Some("build"), Some("p/m")).unwrap();
        s.add_text(&ses.id, &c, "Long").unwrap();
        s.finish_message(&c, None, Some("maxtokens"), None).unwrap();
        assert_eq!(
            s.history(&ses.id).unwrap()[3].text(),
            "Long\n\n[This response was cut off at the output-token limit.]"
        );
    }

    #[test]
    fn a_database_from_before_images_opens_and_replays_its_calls() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let ses;
        {
            let s = Store::open(&path).unwrap();
            ses = s.create_session(None, "build", Some("p/m"), Path::new("/w")).unwrap().id;
            let a = s.add_message(&ses, Role::Assistant, Some("build"), Some("p/m")).unwrap();
            s.add_tool_call(&ses, &a, &call("c1")).unwrap();
            // As databases were before the schema had a version.
            s.conn()
                .execute_batch(
                    "DROP TABLE attachments; DROP TABLE compactions;
                     ALTER TABLE messages DROP COLUMN cached_input_tokens;
                     ALTER TABLE messages DROP COLUMN cache_write_tokens;
                     ALTER TABLE messages DROP COLUMN reasoning_tokens;
                     ALTER TABLE messages DROP COLUMN request_tokens;
                     ALTER TABLE sessions DROP COLUMN pruned_through;
                     ALTER TABLE sessions DROP COLUMN found_tools;
                     PRAGMA user_version = 0;",
                )
                .unwrap();
        }
        let s = Store::open(&path).unwrap();
        let history = s.history(&ses).unwrap();
        assert!(matches!(&history[1].parts[0], Part::ToolResult(r) if r.images.is_empty()));
    }

    #[test]
    fn a_database_of_the_unversioned_schema_is_migrated_and_a_newer_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        // Written by the schema as it was before versioning (user_version 0), without the
        // attachments table that came later.
        let path = dir.path().join("v0.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(SCHEMA_V1).unwrap();
            conn.execute_batch("DROP TABLE attachments; DROP INDEX IF EXISTS attachments_by_call;").unwrap();
            conn.execute(
                "INSERT INTO sessions (id, agent, created_at, updated_at) VALUES ('ses_old', 'build', 1, 1)",
                [],
            )
            .unwrap();
            assert_eq!(conn.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(), 0);
        }
        let s = Store::open(&path).unwrap();
        assert_eq!(s.session("ses_old").unwrap().agent, "build");
        let version: i64 = s.conn().pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, MIGRATIONS.len() as i64);
        let tables: i64 = s
            .conn()
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'attachments'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(tables, 1);
        drop(s);
        // Opened again: nothing to do.
        Store::open(&path).unwrap();

        // From a newer toolshed: refused, and left as it was.
        let newer = dir.path().join("newer.db");
        {
            let conn = Connection::open(&newer).unwrap();
            conn.execute_batch("CREATE TABLE future (x); PRAGMA user_version = 99;").unwrap();
        }
        let before = std::fs::read(&newer).unwrap();
        let err = Store::open(&newer).err().unwrap();
        assert!(matches!(err, StoreError::NewerSchema { found: 99, .. }), "{err}");
        let known = format!("newer than the {} this toolshed knows", MIGRATIONS.len());
        assert!(err.to_string().contains(&known), "{err}");
        assert!(std::fs::read(&newer).unwrap() == before, "the newer database was changed");
    }

    #[test]
    fn images_no_model_would_be_sent_are_kept_as_type_and_size_only() {
        assert!(sendable("image/png", 3 * 1024 * 1024));
        assert!(!sendable("image/png", 4 * 1024 * 1024));
        assert!(!sendable("image/svg+xml", 10));
        let svg = StoredImage { mime_type: "image/svg+xml".into(), bytes: 10, data_base64: None };
        assert_eq!(
            svg.omitted_note(),
            "[An image/svg+xml image was returned but not shown to you: only PNG, JPEG, GIF and WebP images can be.]"
        );
    }

    #[test]
    fn a_prompts_image_is_stored_in_place_and_sent_again_and_a_bad_one_is_refused() {
        let (_dir, s) = store();
        let ses = s.create_session(None, "build", Some("p/m"), Path::new("/w")).unwrap();
        let png = prompt_image("image/png", "iVBORw0KGgo=").unwrap();
        let u = s.add_message(&ses.id, Role::User, None, None).unwrap();
        s.add_text(&ses.id, &u, "what is in").unwrap();
        s.add_image(&ses.id, &u, &png).unwrap();
        s.add_text(&ses.id, &u, "this?").unwrap();
        let stored = s.messages(&ses.id).unwrap();
        assert_eq!(
            stored[0].parts[1],
            StoredPart::Image { mime_type: "image/png".into(), data_base64: "iVBORw0KGgo=".into() }
        );
        let history = s.history(&ses.id).unwrap();
        assert_eq!(
            history[0].parts,
            vec![
                Part::Text { text: "what is in".into() },
                Part::Image(png.clone()),
                Part::Text { text: "this?".into() }
            ]
        );
        // An image counts as a fixed number of tokens, not as its base64.
        let with = crate::context::estimate("", &history, &[]);
        let without = crate::context::estimate("", &[Message::user("what is inthis?")], &[]);
        assert!(with >= without + crate::context::IMAGE_TOKENS && with < without + crate::context::IMAGE_TOKENS + 64);
        let svg = prompt_image("image/svg+xml", "PHN2Zy8+").unwrap_err();
        assert!(svg.contains("only PNG, JPEG, GIF and WebP"), "{svg}");
        let big = "A".repeat(MAX_IMAGE_BASE64_BYTES + 4);
        assert!(prompt_image("image/png", &big).unwrap_err().contains("up to 3.75 MiB"));
        assert!(prompt_image("image/png", "not base64!").unwrap_err().contains("not valid base64"));
        // What the data is decides, not what it is called.
        for (name, data) in [("empty", ""), ("text", "aGVsbG8gd29ybGQ="), ("a truncated PNG", "iVBORw==")] {
            let err = prompt_image("image/png", data).unwrap_err();
            assert!(err.contains("is not a PNG, JPEG, GIF or WebP image"), "{name}: {err}");
        }
        let gif = base64::engine::general_purpose::STANDARD.encode(b"GIF89a\x01\x00\x01\x00");
        assert_eq!(prompt_image("image/png", &gif).unwrap().media_type, "image/gif");
    }

    #[test]
    fn sessions_survive_reopening_and_list_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let first;
        {
            let s = Store::open(&path).unwrap();
            first = s.create_session(None, "build", None, Path::new("/w")).unwrap().id;
            s.set_title_once(&first, "fix   the\nbug").unwrap();
            s.set_title_once(&first, "ignored").unwrap();
            std::thread::sleep(std::time::Duration::from_millis(2));
            s.create_session(Some(&first), "explore", None, Path::new("/w")).unwrap();
        }
        let s = Store::open(&path).unwrap();
        let list = s.list_sessions().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1].id, first);
        assert_eq!(list[1].title, "fix the bug");
        assert_eq!(list[0].parent_id.as_deref(), Some(first.as_str()));
        // The piped input `run` appends is no part of the title, unless it is the whole prompt.
        let piped = s.create_session(None, "build", None, Path::new("/w")).unwrap().id;
        s.set_title_once(&piped, "with ctx\n\n<stdin>\nctx\n</stdin>").unwrap();
        assert_eq!(s.session(&piped).unwrap().title, "with ctx");
        assert!(matches!(s.session("nope"), Err(StoreError::NoSession(_))));
    }

    #[test]
    fn todos_and_tasks_round_trip_and_running_tasks_become_lost() {
        let (_d, s) = store();
        let ses = s.create_session(None, "build", None, Path::new("/w")).unwrap().id;
        let todos = vec![Todo { content: "a".into(), status: toolshed_core::todo::TodoStatus::Pending }];
        TodoStore::set(&s, &ses, &todos).unwrap();
        assert_eq!(TodoStore::get(&s, &ses).unwrap(), todos);
        assert!(TodoStore::set(&s, "nope", &todos).is_err());
        let task = StoredTask {
            id: "task_1".into(),
            session_id: ses.clone(),
            child_session_id: "ses_c".into(),
            agent: "explore".into(),
            description: "look".into(),
            status: "running".into(),
            result: None,
            error: None,
        };
        s.add_task(&task).unwrap();
        assert_eq!(s.mark_tasks_lost(&ses).unwrap(), 1);
        assert_eq!(s.tasks(&ses).unwrap()[0].status, "lost");
    }
}
