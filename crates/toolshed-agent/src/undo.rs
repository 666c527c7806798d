//! Undo for sessions: the snapshots taken around steps ([`Undo`]), what a session changed
//! ([`session_diff`]) and putting files back ([`plan_revert`], [`apply_revert`]). Front-ends
//! only print: every decision (which step, which files, which were edited by hand since) is
//! made here.
//!
//! A revert restores the files the session's steps from the target on changed (never a file
//! only the user touched) to how they were before the target step. It first snapshots the
//! worktree: a file whose bytes or mode differ from how the session's last step that changed
//! it left it was changed by someone else since, and is not overwritten unless forced. The
//! revert is recorded as a step of its own (before: that fresh snapshot; after: the restored
//! worktree), so reverting again restores what the revert replaced.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;
use toolshed_llm::Role;

use crate::snapshot::{Entries, Entry, Restored, Shadow, SnapshotError};
use crate::store::{StepKind, Store, StoreError, StoredStep};

/// Snapshots for one worktree, opened on first use.
pub struct Undo {
    data_dir: PathBuf,
    root: PathBuf,
    retention: Duration,
    shadow: OnceLock<Result<Arc<Shadow>, String>>,
    warned: AtomicBool,
    pruned: AtomicBool,
    /// Set when the worktree turned out too large to snapshot: undo is off for this process.
    off: OnceLock<String>,
}

impl Undo {
    /// Snapshots of `root` kept under `data_dir`, pruned after `retention_days`.
    pub fn new(data_dir: &Path, root: &Path, retention_days: u32) -> Undo {
        Undo {
            data_dir: data_dir.to_path_buf(),
            root: root.to_path_buf(),
            retention: Duration::from_secs(u64::from(retention_days) * 86_400),
            shadow: OnceLock::new(),
            warned: AtomicBool::new(false),
            pruned: AtomicBool::new(false),
            off: OnceLock::new(),
        }
    }

    /// The shadow repository, or why undo is off.
    pub fn shadow(&self) -> Result<Arc<Shadow>, String> {
        if let Some(why) = self.off.get() {
            return Err(why.clone());
        }
        self.shadow
            .get_or_init(|| Shadow::open(&self.data_dir, &self.root).map(Arc::new).map_err(|e| e.to_string()))
            .clone()
    }

    /// Why undo is off, the first time it is asked (later: `None`, so it is said once).
    pub fn warn_once(&self) -> Option<String> {
        match self.shadow() {
            Err(why) if !self.warned.swap(true, Ordering::Relaxed) => Some(why),
            _ => None,
        }
    }

    /// Takes a snapshot off the async threads. Once a process, old snapshots are pruned in the
    /// background when due.
    pub async fn snapshot(&self) -> Result<String, String> {
        let shadow = self.shadow()?;
        let taken = {
            let shadow = shadow.clone();
            match tokio::task::spawn_blocking(move || shadow.snapshot()).await.map_err(|e| e.to_string())? {
                Ok(id) => Ok(id),
                Err(e @ crate::snapshot::SnapshotError::TooBig { .. }) => {
                    let why = e.to_string();
                    let _ = self.off.set(why.clone());
                    Err(why)
                }
                Err(e) => Err(e.to_string()),
            }
        };
        if !self.pruned.swap(true, Ordering::Relaxed) {
            let retention = self.retention;
            std::thread::spawn(move || {
                let _ = shadow.prune_if_due(retention);
            });
        }
        taken
    }

    /// Records `before` as the snapshot step `step` of `session_id` starts from, before its
    /// tool calls run (kept from pruning): if the process dies while they run, the step is
    /// completed later ([`complete_cut_steps`]) rather than lost (review 22: a `kill -9` during a
    /// command left a step that could not be reverted, and revert said nothing had changed).
    pub fn begin(&self, store: &Store, session_id: &str, step: u32, before: &str) -> Result<(), String> {
        let shadow = self.shadow()?;
        shadow.keep(&[(format!("{session_id}/{step}-before"), before.to_string())]).map_err(|e| e.to_string())?;
        store.set_step_before(session_id, step, before).map_err(|e| e.to_string())
    }

    /// Records step `step` of `session_id` as the change from `before` to a snapshot taken now.
    pub async fn record(&self, store: &Store, session_id: &str, step: u32, before: &str) -> Result<(), String> {
        let after = self.snapshot().await?;
        let shadow = self.shadow()?;
        let (from, to) = (before.to_string(), after.clone());
        let changed = {
            let shadow = shadow.clone();
            tokio::task::spawn_blocking(move || shadow.changed(&from, &to))
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?
        };
        let kept = [
            (format!("{session_id}/{step}-before"), before.to_string()),
            (format!("{session_id}/{step}-after"), after.clone()),
        ];
        shadow.keep(&kept).map_err(|e| e.to_string())?;
        store.set_step_snapshots(session_id, step, before, &after, &changed).map_err(|e| e.to_string())
    }
}

/// Why a diff or a revert could not be done.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    /// Snapshots are off (no git, worktree not writable).
    #[error("{0}")]
    Unavailable(String),
    /// No such step in the session.
    #[error("session {session} has no step {step} (its steps: {known})")]
    BadStep {
        /// The session.
        session: String,
        /// The step asked for.
        step: u32,
        /// The steps it has.
        known: String,
    },
    /// Files changed since the session's last snapshot, by hand or by something else, or added
    /// since in a directory the revert would remove.
    #[error("these files were changed or added since the session last touched them, and a revert would overwrite or remove them: {}. Use --force to overwrite them", list(.0))]
    HandEdited(Vec<PathBuf>),
    /// Files in a directory the revert would remove that undo never kept (the ignore rules
    /// leave them out): removed, nothing could bring them back, so not even `--force` does.
    #[error("a revert would overwrite or remove these files, whose bytes undo never kept (ignored, too large, or added while the revert waited), so nothing could bring them back: {}. Nothing was changed; move them elsewhere, then revert again", list_some(.0))]
    WouldLose(Vec<PathBuf>),
    /// Files the revert would write or remove changed after it was worked out (while a person
    /// was being asked): nothing was changed.
    #[error("these files changed after the revert was worked out, so nothing was changed: {}. Run the revert again to see what it would do now", list_some(.0))]
    ChangedMeanwhile(Vec<PathBuf>),
    /// The revert failed after it had changed files.
    #[error(
        "the revert stopped part-way: {source}. {done} files had been put back already{}",
        match .step {
            Some(step) => format!("; that is recorded as step {step}, so reverting again puts them back as they were"),
            None => String::new(),
        }
    )]
    Partial {
        /// How many files it had written or removed.
        done: usize,
        /// The step the part done was recorded as.
        step: Option<u32>,
        /// What stopped it.
        source: SnapshotError,
    },
    /// The snapshot repository failed.
    #[error("{0}")]
    Snapshot(#[from] SnapshotError),
    /// The session database failed.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// At most [`LISTED`] of `paths`, and how many more there are.
pub fn list_some(paths: &[PathBuf]) -> String {
    let shown = list(&paths[..paths.len().min(LISTED)]);
    match paths.len().saturating_sub(LISTED) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// How many paths a message names before it counts the rest.
pub const LISTED: usize = 40;

fn list(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| toolshed_core::terminal::visible_path(p)).collect::<Vec<_>>().join(", ")
}

/// Completes the steps of `session_id` that took a snapshot before their tool calls but none
/// after (the process was killed while they ran): each is taken to have changed what differs
/// between its snapshot and the next step's, or, for the last, the worktree as it is now.
/// Returns the steps completed. Run with the session locked (or not running), as a revert is.
pub fn complete_cut_steps(store: &Store, undo: &Undo, session_id: &str) -> Result<Vec<u32>, UndoError> {
    let steps = store.steps(session_id)?;
    let mut completed = Vec::new();
    let mut shadow = None;
    for (i, step) in steps.iter().enumerate() {
        let (Some(before), None) = (step.before.as_deref(), step.after.as_deref()) else { continue };
        if shadow.is_none() {
            shadow = Some(undo.shadow().map_err(UndoError::Unavailable)?);
        }
        let Some(shadow) = &shadow else { continue };
        let next = steps[i + 1..].iter().find(|s| s.before.is_some());
        let (after, finished_at) = match next {
            Some(next) => (next.before.clone().unwrap_or_default(), next.created_at),
            None => (shadow.snapshot()?, crate::store::now_ms()),
        };
        let changed = shadow.changed(before, &after)?;
        shadow.keep(&[
            (format!("{session_id}/{}-before", step.step), before.to_string()),
            (format!("{session_id}/{}-after", step.step), after.clone()),
        ])?;
        // It ended before the next step began: ordered by when steps finished, it keeps its place.
        store.set_step_snapshots_at(session_id, step.step, before, &after, &changed, finished_at)?;
        completed.push(step.step);
    }
    Ok(completed)
}

/// Steps that took snapshots, in order.
fn snapshotted(steps: &[StoredStep]) -> impl Iterator<Item = (&StoredStep, &str, &str)> {
    steps.iter().filter_map(|s| Some((s, s.before.as_deref()?, s.after.as_deref()?)))
}

/// The session's latest snapshot: the after-snapshot recorded last.
fn latest(steps: &[StoredStep]) -> Option<&str> {
    snapshotted(steps).max_by_key(|(s, _, _)| (s.finished_at, s.step)).map(|(_, _, after)| after)
}

fn check_step(session: &str, steps: &[StoredStep], step: u32) -> Result<(), UndoError> {
    if steps.iter().any(|s| s.step == step) {
        return Ok(());
    }
    let known = match (steps.first(), steps.last()) {
        (Some(first), Some(last)) => format!("{}–{}", first.step, last.step),
        _ => "none".to_string(),
    };
    Err(UndoError::BadStep { session: session.to_string(), step, known })
}

/// What [`session_diff`] shows.
#[derive(Debug, PartialEq, Eq)]
pub enum SessionDiff {
    /// The diff (or stat) text.
    Changed(String),
    /// Nothing changed (in the step asked for, or in the whole session).
    Unchanged,
}

/// What the session changed: without `step`, from before its first step that changed files to
/// its latest snapshot, limited to the files its steps changed; with `step`, that step's change.
pub fn session_diff(
    store: &Store,
    undo: &Undo,
    session_id: &str,
    step: Option<u32>,
    stat: bool,
) -> Result<SessionDiff, UndoError> {
    store.session(session_id)?;
    if undo.shadow().is_ok() {
        complete_cut_steps(store, undo, session_id)?;
    }
    let steps = store.steps(session_id)?;
    let (from, to, paths) = match step {
        Some(n) => {
            check_step(session_id, &steps, n)?;
            match snapshotted(&steps).find(|(s, _, _)| s.step == n) {
                Some((s, before, after)) if !s.changed.is_empty() => (before, after, s.changed.clone()),
                _ => return Ok(SessionDiff::Unchanged),
            }
        }
        None => {
            let Some((_, first, _)) = snapshotted(&steps).find(|(s, _, _)| !s.changed.is_empty()) else {
                return Ok(SessionDiff::Unchanged);
            };
            let paths: BTreeSet<PathBuf> = steps.iter().flat_map(|s| s.changed.iter().cloned()).collect();
            (first, latest(&steps).unwrap_or(first), paths.into_iter().collect())
        }
    };
    let shadow = undo.shadow().map_err(UndoError::Unavailable)?;
    let text = shadow.diff(from, to, Some(&paths), stat)?;
    Ok(if text.trim().is_empty() { SessionDiff::Unchanged } else { SessionDiff::Changed(text) })
}

/// A revert worked out, not yet done.
#[derive(Debug)]
pub struct RevertPlan {
    /// The session.
    pub session_id: String,
    /// Files go back to how they were before this step.
    pub target_step: u32,
    /// The files that would be written or removed.
    pub files: Vec<PathBuf>,
    /// Of those, the ones changed since the session's last snapshot (by hand, or by something
    /// else), and files added since in a directory it would remove: overwritten only when
    /// forced.
    pub hand_edited: Vec<PathBuf>,
    /// Files it would delete but keeps: the snapshot before the target step left them out
    /// because the ignore rules then left them out, or they lay in a nested repository, so
    /// whether they existed is not known (a `.gitignore` the model changed must not make a
    /// user's ignored `.env` look new); and nested repositories, which undo never removes.
    pub kept: Vec<PathBuf>,
    target: String,
    current: String,
    /// When the target step began: a directory the revert leaves empty is removed only if it
    /// was made since.
    began_at: i64,
}

/// What a revert did. Paths serialise as text, bytes that are not UTF-8 replaced (`U+FFFD`).
#[derive(Debug, Serialize)]
pub struct RevertOutcome {
    /// The session.
    pub session_id: String,
    /// The step the revert was recorded as.
    pub step: u32,
    /// Files are as they were before this step.
    pub reverted_to_before_step: u32,
    /// Files written back (including re-created ones).
    #[serde(serialize_with = "lossy_paths")]
    pub restored: Vec<PathBuf>,
    /// Of those, the ones that did not exist.
    #[serde(serialize_with = "lossy_paths")]
    pub created: Vec<PathBuf>,
    /// Files removed (they did not exist before the step, or were under a directory that
    /// stood where a file goes back).
    #[serde(serialize_with = "lossy_paths")]
    pub deleted: Vec<PathBuf>,
    /// Files that could not be restored: their bytes were never kept (too large, or a nested
    /// repository).
    #[serde(serialize_with = "lossy_paths")]
    pub not_restored: Vec<PathBuf>,
    /// Files kept because undo cannot tell the session made them (see [`RevertPlan::kept`]).
    #[serde(serialize_with = "lossy_paths")]
    pub kept: Vec<PathBuf>,
}

/// Paths as text (JSON strings cannot hold bytes that are not UTF-8).
pub fn lossy_paths<S: serde::Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(paths.iter().map(|p| p.to_string_lossy()))
}

/// What [`plan_revert`] found.
#[derive(Debug)]
pub enum Planned {
    /// No file the revert would change differs.
    Nothing {
        /// Files it would have deleted but keeps (see [`RevertPlan::kept`]).
        kept: Vec<PathBuf>,
    },
    /// A revert to do.
    Revert(RevertPlan),
}

/// What to tell a person when there is nothing to revert: that, and the files kept, if any,
/// so that "nothing" does not hide a file the session may have made.
pub fn nothing_to_revert(kept: &[PathBuf]) -> String {
    let mut text = "nothing to revert: no file the session changed differs".to_string();
    if !kept.is_empty() {
        text.push_str(&format!(
            "; kept, since undo cannot tell the session made them (the ignore rules left them out of its snapshots, or they are in a nested repository): {}; delete them yourself if they are the session's",
            list_some(kept)
        ));
    }
    text
}

/// Works out a revert of `session_id` to before `step` (default: its last step that changed
/// files). Takes a snapshot of the worktree as it is now.
pub async fn plan_revert(
    store: &Store,
    undo: &Undo,
    session_id: &str,
    step: Option<u32>,
) -> Result<Planned, UndoError> {
    let nothing = || Ok(Planned::Nothing { kept: Vec::new() });
    store.session(session_id)?;
    if undo.shadow().is_ok() {
        complete_cut_steps(store, undo, session_id)?;
    }
    let steps = store.steps(session_id)?;
    let target_step = match step {
        Some(n) => {
            check_step(session_id, &steps, n)?;
            n
        }
        None => match snapshotted(&steps).filter(|(s, _, _)| !s.changed.is_empty()).last() {
            Some((s, _, _)) => s.step,
            None => return nothing(),
        },
    };
    // Before step N = before the first step from N on that took a snapshot.
    let Some((target_record, target, _)) = snapshotted(&steps).find(|(s, _, _)| s.step >= target_step) else {
        return nothing();
    };
    let began_at = target_record.created_at;
    if latest(&steps).is_none() {
        return nothing();
    }
    let touched: BTreeSet<PathBuf> = snapshotted(&steps)
        .filter(|(s, _, _)| s.step >= target_step)
        .flat_map(|(s, _, _)| s.changed.iter().cloned())
        .collect();
    let shadow = undo.shadow().map_err(UndoError::Unavailable)?;
    let current = undo.snapshot().await.map_err(UndoError::Unavailable)?;
    let (target_entries, current_entries) = (shadow.entries(target)?, shadow.entries(&current)?);
    let mut files: Vec<PathBuf> =
        touched.into_iter().filter(|p| target_entries.get(p) != current_entries.get(p)).collect();
    // What the target lacks is deleted, unless its absence says nothing (the rules left it
    // out then, or it lay in a nested repository) or it is a nested repository now: undo
    // keeps only a repository's commit, so it never removes one.
    let absent: Vec<PathBuf> = files
        .iter()
        .filter(|p| !target_entries.contains_key(*p) && current_entries.contains_key(*p))
        .cloned()
        .collect();
    let mut unknown = shadow.unknown_before(target, &target_entries, &absent)?;
    unknown.extend(absent.iter().filter(|p| matches!(current_entries.get(*p), Some(Entry::Gitlink { .. }))).cloned());
    // A nested repository the session moved or took apart cannot come back (only its commit
    // was kept): what looks new may be its files, now the only copy, so nothing is deleted.
    let lost_repository = files.iter().any(|p| {
        matches!(target_entries.get(p), Some(Entry::Gitlink { .. })) && current_entries.get(p) != target_entries.get(p)
    });
    if lost_repository {
        unknown.extend(absent.iter().cloned());
    }
    files.retain(|p| !unknown.contains(p));
    let kept: Vec<PathBuf> = unknown.into_iter().collect();
    // The session's last step that changed each file.
    let mut last_step: std::collections::HashMap<&Path, (&StoredStep, &str)> = std::collections::HashMap::new();
    for (s, _, after) in snapshotted(&steps) {
        for p in &s.changed {
            let later =
                last_step.get(p.as_path()).is_none_or(|(l, _)| (s.finished_at, s.step) >= (l.finished_at, l.step));
            if later {
                last_step.insert(p, (s, after));
            }
        }
    }
    // A file was changed by someone else when it differs from how the session's last step
    // that changed it left it (not merely from the session's last snapshot: a hand edit made
    // between two prompts, to a file the later prompt did not touch, is in that snapshot).
    let mut after_entries: std::collections::HashMap<&str, crate::snapshot::Entries> = std::collections::HashMap::new();
    // What each step changed, as sets: looked up for every file of the revert.
    let changed_sets: Vec<std::collections::HashSet<&Path>> =
        snapshotted(&steps).map(|(s, _, _)| s.changed.iter().map(PathBuf::as_path).collect()).collect();
    let Foreign { kept: mut hand_edited, mut unkept } =
        foreign(shadow.worktree(), &files, &target_entries, &current_entries);
    for p in &files {
        let Some(&(_, after)) = last_step.get(p.as_path()) else {
            continue;
        };
        if !after_entries.contains_key(after) {
            after_entries.insert(after, shadow.entries(after)?);
        }
        let left = after_entries[after].get(p);
        if left != current_entries.get(p) && !too_large_same(left, current_entries.get(p)) {
            // A file grown past the size kept since: its bytes are nowhere else.
            if matches!(current_entries.get(p), Some(Entry::TooLarge { .. })) {
                unkept.push(p.clone());
            } else {
                hand_edited.push(p.clone());
            }
            continue;
        }
        // Nor may it have changed between two of the steps that changed it: each must have
        // found it as the one before left it (the first, as the target has it). A hand edit
        // made between two prompts to a file the later prompt changed too would otherwise go
        // with the revert (review 22), and so would another session's change.
        let mut was = target_entries.get(p).cloned();
        for ((s, before, after), changed) in snapshotted(&steps).zip(&changed_sets) {
            if s.step < target_step || !changed.contains(p.as_path()) {
                continue;
            }
            for id in [before, after] {
                if !after_entries.contains_key(id) {
                    after_entries.insert(id, shadow.entries(id)?);
                }
            }
            let found = after_entries[before].get(p);
            if found != was.as_ref() && !too_large_same(found, was.as_ref()) {
                hand_edited.push(p.clone());
                break;
            }
            was = after_entries[after].get(p).cloned();
        }
    }
    if files.is_empty() {
        return Ok(Planned::Nothing { kept });
    }
    if !unkept.is_empty() {
        return Err(UndoError::WouldLose(unkept));
    }
    Ok(Planned::Revert(RevertPlan {
        session_id: session_id.to_string(),
        target_step,
        files,
        hand_edited,
        kept,
        target: target.to_string(),
        current,
        began_at,
    }))
}

/// What a revert would write over or remove that the session did not make ([`foreign`]).
struct Foreign {
    /// Kept in the snapshot just taken: reverting again brings them back, so `--force` may.
    kept: Vec<PathBuf>,
    /// Never kept (on disk, but not in that snapshot: the ignore rules leave them out, they lie
    /// in a repository with no commit, or are too large), so that reverting again could not
    /// bring them back: not even `--force` writes over these (review 27).
    unkept: Vec<PathBuf>,
}

/// What a revert of `files` to `target` would write over or remove that the session did not
/// make, split by whether `current`, the snapshot just taken, keeps it: a file in a directory
/// the revert removes (where a file goes back, or where none was), a file standing where a
/// directory comes back, and a file on disk where one goes back that the snapshot lacks.
fn foreign(worktree: &Path, files: &[PathBuf], target: &Entries, current: &Entries) -> Foreign {
    let reverted: BTreeSet<&Path> = files.iter().map(PathBuf::as_path).collect();
    // Kept: its bytes are in the snapshot (a file too large to keep is not).
    let kept = |p: &Path| current.get(p).is_some_and(|e| !matches!(e, Entry::TooLarge { .. }));
    let gitlink = |e: Option<&Entry>| matches!(e, Some(Entry::Gitlink { .. }));
    let (mut edited, mut unkept): (BTreeSet<PathBuf>, BTreeSet<PathBuf>) = Default::default();
    for p in files {
        // A nested repository is never touched by a restore; a path through a link out of
        // place is restored as a real directory, never through the link.
        if gitlink(target.get(p)) || gitlink(current.get(p)) {
            continue;
        }
        let abs = worktree.join(p);
        let way = crate::snapshot::in_the_way(worktree, p);
        match std::fs::symlink_metadata(&abs) {
            Ok(m) if m.is_dir() && way.is_none() && std::fs::symlink_metadata(abs.join(".git")).is_err() => {
                for f in crate::snapshot::directory_files(&abs).into_iter().map(|f| p.join(f)) {
                    if reverted.contains(f.as_path()) {
                        continue;
                    }
                    // An empty directory holds nothing to lose.
                    if kept(&f) {
                        edited.insert(f);
                    } else if !std::fs::symlink_metadata(worktree.join(&f)).is_ok_and(|m| m.is_dir()) {
                        unkept.insert(f);
                    }
                }
            }
            Ok(m) if !m.is_dir() && way.is_none() && !current.contains_key(p) => {
                unkept.insert(p.clone());
            }
            _ => {}
        }
        if target.contains_key(p)
            && let Some(way) = way
            && !reverted.contains(way.as_path())
        {
            if kept(&way) {
                edited.insert(way);
            } else if std::fs::symlink_metadata(worktree.join(&way)).is_ok_and(|m| !m.is_symlink()) {
                unkept.insert(way);
            }
        }
    }
    Foreign { kept: edited.into_iter().collect(), unkept: unkept.into_iter().collect() }
}

/// Two records of one too-large file with the same size and time are the same file.
fn too_large_same(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    matches!((a, b), (Some(Entry::TooLarge { size: s1, mtime: m1 }), Some(Entry::TooLarge { size: s2, mtime: m2 })) if s1 == s2 && m1 == m2)
}

/// Carries out `plan`. Files edited by hand since are overwritten only with `force`; otherwise
/// nothing is changed or recorded. The revert is recorded as a step, and the session gets a
/// user message naming the files, so the model knows on its next turn.
pub async fn apply_revert(
    store: &Store,
    undo: &Undo,
    mut plan: RevertPlan,
    force: bool,
) -> Result<RevertOutcome, UndoError> {
    if !plan.hand_edited.is_empty() && !force {
        return Err(UndoError::HandEdited(plan.hand_edited));
    }
    let shadow = undo.shadow().map_err(UndoError::Unavailable)?;
    // The plan was shown, and a question asked, before this: what changed meanwhile among the
    // files it would write or remove was never shown, so nothing is done (review 22: an edit
    // made while the question waited was lost, and so was its record).
    let now = undo.snapshot().await.map_err(UndoError::Unavailable)?;
    if now != plan.current {
        let (was, is) = (shadow.entries(&plan.current)?, shadow.entries(&now)?);
        // Under a file of the revert (a directory it removes), or on its way (where a directory
        // comes back).
        let files: BTreeSet<&Path> = plan.files.iter().map(PathBuf::as_path).collect();
        let covered = |p: &Path| {
            p.ancestors().any(|a| files.contains(a)) || files.range(p..).next().is_some_and(|f| f.starts_with(p))
        };
        let meanwhile: BTreeSet<PathBuf> =
            was.keys().chain(is.keys()).filter(|p| covered(p) && was.get(*p) != is.get(*p)).cloned().collect();
        if !meanwhile.is_empty() {
            return Err(UndoError::ChangedMeanwhile(meanwhile.into_iter().collect()));
        }
        plan.current = now;
    }
    // Nor what snapshots never hold and so cannot show as changed: an ignored file put in a
    // directory the revert removes while the person was asked (review 27).
    let unkept =
        foreign(shadow.worktree(), &plan.files, &shadow.entries(&plan.target)?, &shadow.entries(&plan.current)?).unkept;
    if !unkept.is_empty() {
        return Err(UndoError::WouldLose(unkept));
    }
    // The revert's step begins before a file is written: a directory the restore makes is then
    // newer than the step, and reverting the revert removes it again (review 27).
    let step = store.begin_step(&plan.session_id, StepKind::Revert)?;
    // And the snapshot it starts from is recorded: a revert killed part-way (`kill -9`) is
    // completed by the next diff or revert like a cut step ([`complete_cut_steps`]), so what
    // it did is not lost from the record (review 29).
    undo.begin(store, &plan.session_id, step, &plan.current).map_err(UndoError::Unavailable)?;
    let (restored, failed): (Restored, Option<SnapshotError>) = {
        let (shadow, target, files) = (shadow.clone(), plan.target.clone(), plan.files.clone());
        let since = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(plan.began_at).unwrap_or(0));
        tokio::task::spawn_blocking(move || {
            let mut restored = Restored::default();
            let failed = shadow.restore_made_since(&target, &files, &mut restored, Some(since)).err();
            (restored, failed)
        })
        .await
        .map_err(|e| UndoError::Unavailable(e.to_string()))?
    };
    if let Some(source) = failed {
        let done = restored.written.len() + restored.removed.len();
        if done == 0 {
            return Err(source.into());
        }
        // What was done is recorded like a whole revert, so reverting again undoes it.
        let step = undo.record(store, &plan.session_id, step, &plan.current).await.ok().map(|()| step);
        let note = format!(
            "[The user's revert to before step {} stopped part-way; some files are as they were before it, some not. Read files again before relying on them.]",
            plan.target_step
        );
        if let Ok(message) = store.add_message(&plan.session_id, Role::User, None, None) {
            let _ = store.add_text(&plan.session_id, &message, &note);
        }
        return Err(UndoError::Partial { done, step, source });
    }
    undo.record(store, &plan.session_id, step, &plan.current).await.map_err(UndoError::Unavailable)?;
    let outcome = RevertOutcome {
        session_id: plan.session_id.clone(),
        step,
        reverted_to_before_step: plan.target_step,
        restored: restored.written,
        created: restored.recreated,
        deleted: restored.removed,
        not_restored: restored.not_kept,
        kept: plan.kept,
    };
    let mut note = format!(
        "[The user reverted files to how they were before step {} (recorded as step {step}); earlier edits to them are gone, so read them again before relying on them. Restored: {}",
        plan.target_step,
        if outcome.restored.is_empty() { "none".to_string() } else { list_some(&outcome.restored) }
    );
    if !outcome.deleted.is_empty() {
        note.push_str(&format!("; deleted: {}", list_some(&outcome.deleted)));
    }
    if !outcome.not_restored.is_empty() {
        note.push_str(&format!("; not restored (never kept): {}", list_some(&outcome.not_restored)));
    }
    if !outcome.kept.is_empty() {
        note.push_str(&format!("; kept (not known to be the session's): {}", list_some(&outcome.kept)));
    }
    note.push_str(".]");
    let message = store.add_message(&plan.session_id, Role::User, None, None)?;
    store.add_text(&plan.session_id, &message, &note)?;
    Ok(outcome)
}
