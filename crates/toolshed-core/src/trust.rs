//! Project acceptance: the worktree's files that loosen toolshed's limits or make it run programs
//! (`toolshed.toml`, and the custom tool directories `.toolshed/tools`, `.opencode/tool(s)`) are
//! applied only as a person last accepted them.
//!
//! The model can write into the worktree (and into `/tmp`, where a project may live), and a
//! process it started can outlive every check toolshed makes after a command: the protected-path
//! rules keep it from writing these files while toolshed watches, not from leaving one behind for
//! the next toolshed process. So what the next process obeys is decided here, from a record the
//! model cannot write: a copy of each accepted file under the data directory
//! (`~/.local/share/toolshed/trust/`, outside the sandbox's writable directories and itself a
//! protected path). A person accepts with `toolshed trust`, which shows every
//! difference in full and records exactly what it showed (`toolshed init` accepts the file it
//! writes); `TOOLSHED_TRUST_PROJECT=1` applies the files as they are (CI, and
//! scripts over repositories one controls).
//!
//! When the files differ from the record:
//! - `toolshed.toml` that was accepted before: the accepted copy applies (its denials too), not
//!   the file on disk, and not nothing;
//! - `toolshed.toml` never accepted: no project layer;
//! - a tool directory: none of its tools are loaded until it is accepted as a whole (a script
//!   beside a manifest is as much the tool as the manifest).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Set to `1` to apply the project's files as they are, without the record.
pub const ENV: &str = "TOOLSHED_TRUST_PROJECT";

/// The worktree-relative names of the custom tool directories, at each level from the worktree
/// root down to the working directory (as custom tool discovery searches them).
pub const TOOL_DIRS: &[&str] = &[".opencode/tool", ".opencode/tools", ".toolshed/tools"];

/// At most this many files under one tool directory are read, and at most [`MAX_BYTES`] in
/// all; a bigger directory is never accepted (its tools are not loaded, and `toolshed trust`
/// says why).
const MAX_FILES: usize = 512;
const MAX_BYTES: u64 = 16 << 20;
const MAX_DEPTH: usize = 8;

/// One thing the project can set: its config file or one tool directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Relative to the worktree root, `/`-separated (`toolshed.toml`, `sub/.toolshed/tools`).
    pub path: String,
    /// Whether it is the config file (else a tool directory).
    pub is_config: bool,
}

/// How an item on disk compares with what was accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// As accepted (or absent and never accepted).
    Accepted,
    /// Present and never accepted.
    New,
    /// Present and different from what was accepted.
    Changed,
    /// Accepted once and gone now.
    Removed,
    /// Too big, too deep or unreadable to compare: never applied.
    Unreadable(String),
}

/// What the config loader is to merge as the project's layer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProjectText {
    /// Nothing: no file, or one that was never accepted.
    None,
    /// This text: the file as it is (accepted), or the copy a person last accepted.
    Text(String),
}

/// One file that differs from what was accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Relative to the worktree root.
    pub path: String,
    /// As accepted; `None`: it was not there.
    pub before: Option<Vec<u8>>,
    /// As it is now; `None`: it is gone.
    pub after: Option<Vec<u8>>,
}

/// The record of what a person accepted for one worktree.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Record {
    root: PathBuf,
    /// Every accepted file, by its path relative to the root.
    files: BTreeMap<String, Stored>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Stored {
    Text(String),
    Base64(String),
}

impl Stored {
    fn new(bytes: &[u8]) -> Stored {
        use base64::Engine as _;
        match std::str::from_utf8(bytes) {
            Ok(text) => Stored::Text(text.to_string()),
            Err(_) => Stored::Base64(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        use base64::Engine as _;
        match self {
            Stored::Text(t) => t.clone().into_bytes(),
            Stored::Base64(b) => base64::engine::general_purpose::STANDARD.decode(b).unwrap_or_default(),
        }
    }
}

/// What a person accepted for one worktree, and whether to consult it at all.
#[derive(Clone, Debug)]
pub struct Acceptance {
    root: PathBuf,
    record: Record,
    /// `TOOLSHED_TRUST_PROJECT=1` (or [`Acceptance::everything`]): the files apply as they are.
    everything: bool,
    /// What a person accepted of their own files that lie where a command may write
    /// ([`user_exposure`]), by absolute path (without the leading `/`).
    user: Record,
}

impl Acceptance {
    /// The record for the worktree `root` under `data_dir` (none yet: nothing accepted), unless
    /// `TOOLSHED_TRUST_PROJECT=1`.
    pub fn load(data_dir: &Path, root: &Path) -> Acceptance {
        let everything = std::env::var_os(ENV).is_some_and(|v| v == "1");
        let record = read_record(&record_file(data_dir, root), root);
        let user = read_record(&user_record_file(data_dir), Path::new("/"));
        Acceptance { root: root.to_path_buf(), record, everything, user }
    }

    /// The record as it is now under `data_dir` (a person may have accepted since this one was
    /// read); under `TOOLSHED_TRUST_PROJECT=1` or [`Acceptance::everything`], a copy of this one.
    pub fn reload(&self, data_dir: &Path) -> Acceptance {
        if self.everything { self.clone() } else { Acceptance::load(data_dir, &self.root) }
    }

    /// Everything applies as it is on disk (embedding and tests that build their own worktree).
    pub fn everything(root: &Path) -> Acceptance {
        Acceptance { root: root.to_path_buf(), record: Record::default(), everything: true, user: Record::default() }
    }

    /// The text of the user's config file `path` to merge, when it lies where a command may
    /// write ([`user_exposure`]): as a person accepted it (`None`: never accepted), and what to
    /// tell them when that is not the file on disk. `Err(())`: not exposed, read it as it is.
    #[allow(clippy::result_unit_err)]
    pub fn user_file_text(&self, path: &Path) -> Result<(Option<String>, Option<String>), ()> {
        if self.everything {
            return Err(());
        }
        let Some(place) = user_exposure(path) else { return Err(()) };
        let key = absolute_key(path);
        let current = std::fs::read(path).ok();
        let accepted = self.user.files.get(&key).map(Stored::bytes);
        let made_in = creatable_user_dirs(&crate::paths::data_dir()).into_iter().find(|(dir, _)| *dir == place);
        let what = if let Some((_, writable)) = made_in {
            format!("which did not exist while toolshed ran commands that could make it (in {})", writable.display())
        } else if place.join(".git").exists() {
            "a git worktree (it holds a .git)".to_string()
        } else if std::fs::symlink_metadata(&place).is_ok_and(|m| m.file_type().is_symlink()) {
            "a symbolic link".to_string()
        } else {
            "a directory every command may write".to_string()
        };
        let why = format!(
            "it depends on {}, {what}, which a command may change, so it applies only as you accepted it",
            place.display()
        );
        Ok(match (current, accepted) {
            (None, None) => (None, None),
            (Some(now), Some(then)) if now == then => (Some(lossy(now)), None),
            // Not applied, and not dropped either: the person's own limits may be in it.
            // `Config::load` refuses to go on without it.
            (Some(_), None) => (
                None,
                Some(format!(
                    "{why}, and you have not accepted it yet; read it, then run `toolshed trust` (toolshed does not start without your own settings)"
                )),
            ),
            (Some(_), Some(then)) => (
                Some(lossy(then)),
                Some(format!(
                    "your config {} changed since you accepted it: {why}; the accepted version applies until `toolshed trust`.",
                    path.display()
                )),
            ),
            (None, Some(then)) => (
                Some(lossy(then)),
                Some(format!(
                    "your config {} was removed since you accepted it ({why}); the accepted version still applies until `toolshed trust`.",
                    path.display()
                )),
            ),
        })
    }

    /// Whether the files apply as they are, without the record.
    pub fn is_everything(&self) -> bool {
        self.everything
    }

    /// The project layer to merge, and what to tell a person when it is not the file on disk.
    pub fn project_text(&self) -> (ProjectText, Option<String>) {
        let current = std::fs::read(self.root.join(crate::config::PROJECT_FILE)).ok();
        if self.everything {
            return (current.map_or(ProjectText::None, |b| ProjectText::Text(lossy(b))), None);
        }
        let accepted = self.record.files.get(crate::config::PROJECT_FILE).map(Stored::bytes);
        let file = self.root.join(crate::config::PROJECT_FILE);
        match (current, accepted) {
            (None, None) => (ProjectText::None, None),
            (Some(now), Some(then)) if now == then => (ProjectText::Text(lossy(now)), None),
            (Some(_), None) => (
                ProjectText::None,
                Some(format!(
                    "{} is not applied: no one has accepted it yet (a file in the worktree can come from anyone, the model included). Read it, then run `toolshed trust` to use it.",
                    file.display()
                )),
            ),
            (Some(_), Some(then)) => (
                ProjectText::Text(lossy(then)),
                Some(format!(
                    "{} changed since it was accepted: the accepted version applies until you accept the change with `toolshed trust` (it shows the difference).",
                    file.display()
                )),
            ),
            (None, Some(then)) => (
                ProjectText::Text(lossy(then)),
                Some(format!(
                    "{} was removed since it was accepted: the accepted version still applies until you run `toolshed trust`.",
                    file.display()
                )),
            ),
        }
    }

    /// Whether the tool directory `dir` may be loaded: outside the worktree (the user's own
    /// directories, beyond the sandbox's reach), or as accepted.
    pub fn allows_dir(&self, dir: &Path) -> bool {
        self.dir_state(dir) == State::Accepted
    }

    /// How the tool directory `dir` compares with the record (`Accepted` for the user's own
    /// directories, and for everything under `TOOLSHED_TRUST_PROJECT=1`).
    pub fn dir_state(&self, dir: &Path) -> State {
        if self.everything {
            return State::Accepted;
        }
        match relative(&self.root, dir) {
            // The user's own directory: as it is, unless it lies where a command may write.
            Relative::Outside => match user_item(dir) {
                Some(item) => match snapshot(Path::new("/"), &item) {
                    Ok(now) => compare(&self.user, &now),
                    Err(why) => State::Unreadable(why),
                },
                None => State::Accepted,
            },
            // A name that cannot be recorded cannot be accepted.
            Relative::Unnamed => {
                State::Unreadable("its path is not UTF-8, which the record cannot hold; rename the directory".into())
            }
            Relative::Inside(rel) => self.state(&Item { path: rel, is_config: false }),
        }
    }

    /// How `item` compares with the record.
    pub fn state(&self, item: &Item) -> State {
        match snapshot(&self.root, item) {
            Ok(now) => self.compare(&now),
            Err(why) => State::Unreadable(why),
        }
    }

    /// How `now` compares with the record.
    pub fn compare(&self, now: &Snapshot) -> State {
        compare(&self.record, now)
    }

    /// How `now`, one of the user's own items ([`user_items`]), compares with what was accepted.
    pub fn compare_user(&self, now: &Snapshot) -> State {
        compare(&self.user, now)
    }

    /// The files of `now`, one of the user's own items, that differ from what was accepted.
    pub fn changes_user(&self, now: &Snapshot) -> Vec<Change> {
        changes(&self.user, now)
    }

    /// The files of `now` that differ from what was accepted (path relative to the root, the
    /// accepted bytes, the bytes now; `None`: absent), in path order.
    pub fn changes(&self, now: &Snapshot) -> Vec<Change> {
        changes(&self.record, now)
    }

    /// The accepted text of a file (for showing a difference).
    pub fn accepted_text(&self, path: &str) -> Option<String> {
        self.record.files.get(path).map(|s| lossy(s.bytes()))
    }
}

fn compare(record: &Record, now: &Snapshot) -> State {
    let then: BTreeMap<&String, Vec<u8>> =
        record.files.iter().filter(|(path, _)| under(path, &now.item)).map(|(p, s)| (p, s.bytes())).collect();
    let current: BTreeMap<&String, Vec<u8>> = now.files.iter().map(|(p, b)| (p, b.clone())).collect();
    match (current.is_empty(), then.is_empty()) {
        (true, true) => State::Accepted,
        (false, true) => State::New,
        (true, false) => State::Removed,
        (false, false) if current == then => State::Accepted,
        (false, false) => State::Changed,
    }
}

fn changes(record: &Record, now: &Snapshot) -> Vec<Change> {
    let mut changes = Vec::new();
    for (path, stored) in record.files.iter().filter(|(path, _)| under(path, &now.item)) {
        let before = stored.bytes();
        match now.files.get(path) {
            Some(after) if *after == before => {}
            after => changes.push(Change { path: path.clone(), before: Some(before), after: after.cloned() }),
        }
    }
    for (path, after) in &now.files {
        if !record.files.contains_key(path) {
            changes.push(Change { path: path.clone(), before: None, after: Some(after.clone()) });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

fn read_record(file: &Path, root: &Path) -> Record {
    std::fs::read(file)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
        .filter(|r| r.root == root)
        .unwrap_or_else(|| Record { root: root.to_path_buf(), files: BTreeMap::new() })
}

/// The record of the user's own files that lie where a command may write.
fn user_record_file(data_dir: &Path) -> PathBuf {
    records_dir(data_dir).join("user.json")
}

/// The record of the user's own directories that did not exist while a command could make them
/// (a session started in `~`): each directory (its key) and the writable directory it lay in.
fn creatable_record_file(data_dir: &Path) -> PathBuf {
    records_dir(data_dir).join("user-creatable.json")
}

/// Notes that each of `dirs`, a directory of the user's own (OpenCode's tool and skill
/// directories) that does not exist, lies in a directory (its second) a process about to start
/// may write: a process it leaves running (`setsid`, a server) could make it after every check,
/// so from now on it applies only as a person accepts it ([`user_exposure`]). Written once per
/// directory.
pub fn note_creatable_user_dirs(data_dir: &Path, dirs: &[(PathBuf, PathBuf)]) -> Result<(), String> {
    static NOTED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut noted = NOTED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // Once per directory and process: the record is read only for one not noted yet (this runs
    // before every command in a session started in `~`).
    let unnoted: Vec<&(PathBuf, PathBuf)> = dirs.iter().filter(|(dir, _)| !noted.contains(dir)).collect();
    if unnoted.is_empty() {
        return Ok(());
    }
    noted.extend(unnoted.iter().map(|(dir, _)| dir.clone()));
    let file = creatable_record_file(data_dir);
    let known = read_record(&file, Path::new("/"));
    let new: Vec<&(PathBuf, PathBuf)> =
        unnoted.into_iter().filter(|(dir, _)| !known.files.contains_key(&absolute_key(dir))).collect();
    if new.is_empty() {
        return Ok(());
    }
    update_file(&file, Path::new("/"), |record| {
        for (dir, writable) in new {
            record.files.insert(absolute_key(dir), Stored::Text(writable.to_string_lossy().into_owned()));
        }
    })
}

/// The directories [`note_creatable_user_dirs`] recorded, with the writable directory each lay in.
fn creatable_user_dirs(data_dir: &Path) -> Vec<(PathBuf, PathBuf)> {
    read_record(&creatable_record_file(data_dir), Path::new("/"))
        .files
        .into_iter()
        .map(|(key, writable)| (Path::new("/").join(key), PathBuf::from(lossy(writable.bytes()))))
        .collect()
}

/// `path` as a key of the user record: absolute, `/`-separated, without the leading `/`.
fn absolute_key(path: &Path) -> String {
    path.to_string_lossy().trim_start_matches('/').to_string()
}

/// Where the user's own file or directory `path` (the config file, a tool directory) depends
/// on a place a sandboxed command may write, if anywhere: the first directory on its way — the
/// path as written, each symbolic link met resolving it (a link can be replaced where its
/// directory is writable) and where it leads — that lies in a git worktree (a model works
/// there), a temp dir or a tool cache every command may write. A dotfiles checkout holding `~/.config`, or linked into it, is such a
/// place: what a model left there must not become the user's own configuration or tools.
///
/// A link on the way that lies in the home directory counts wherever it is: toolshed may work
/// in any directory a person starts it in (the home directory itself, one without a `.git`),
/// where a command could replace the link, and a link is the one thing the sandbox cannot keep
/// read-only (a bind follows it). A person who keeps their configuration behind links (GNU
/// Stow, home-manager) accepts it once per change they make.
pub fn user_exposure(path: &Path) -> Option<PathBuf> {
    // Each directory as written and where it really is, resolved once for every place asked about.
    let with_real = |dirs: Vec<PathBuf>| -> Vec<PathBuf> {
        dirs.into_iter().flat_map(|d| [d.canonicalize().unwrap_or_else(|_| d.clone()), d]).collect()
    };
    let everyones = with_real(crate::paths::command_writable_dirs());
    let homes = with_real(crate::paths::home_dir().into_iter().collect());
    let creatable: Vec<PathBuf> =
        creatable_user_dirs(&crate::paths::data_dir()).into_iter().map(|(dir, _)| dir).collect();
    // The reason a place is writable: the temp dir or cache, the git worktree it lies in, or a
    // directory of the user's that a command could have made (a session started in `~`).
    let writable = |place: &Path| {
        everyones.iter().chain(&creatable).find(|d| place.starts_with(d)).cloned().or_else(|| {
            place.ancestors().find(|a| a.parent().is_some() && a.join(".git").exists()).map(Path::to_path_buf)
        })
    };
    let link_dir = |dir: &Path| homes.iter().any(|h| dir.starts_with(h)) || writable(dir).is_some();
    exposure(path, &writable, &link_dir)
}

/// [`user_exposure`], with `writable` saying why a place is one a command may write (`None`:
/// it is not), and `link_dir` in which directories a link could be replaced. Says the place
/// that makes `path` exposed: a cache, temp dir or worktree, or a link.
fn exposure(
    path: &Path,
    writable: &dyn Fn(&Path) -> Option<PathBuf>,
    link_dir: &dyn Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let mut places = vec![path.to_path_buf()];
    let mut pending = vec![path.to_path_buf()];
    let mut budget = 40;
    while let Some(next) = pending.pop() {
        let mut prefix = PathBuf::new();
        for part in next.components() {
            prefix.push(part);
            let Ok(target) = std::fs::read_link(&prefix) else { continue };
            budget -= 1;
            if budget == 0 {
                // A loop or a maze of links: not something to trust.
                return Some(prefix);
            }
            let dir = prefix.parent().unwrap_or(Path::new("/")).to_path_buf();
            if link_dir(&dir) {
                return Some(prefix);
            }
            let rest = next.strip_prefix(&prefix).unwrap_or(Path::new(""));
            let target = crate::paths::lexical_normalise(&dir.join(target));
            let resolved = if rest.as_os_str().is_empty() { target } else { target.join(rest) };
            places.push(dir);
            places.push(resolved.clone());
            pending.push(resolved);
            break;
        }
    }
    places.iter().find_map(|p| writable(p))
}

/// The user's own item for the directory `dir` when it lies where a command may write: the
/// directory where it really is (a link on its way re-pointed is another directory, never
/// accepted), relative to `/`. `None`: not exposed, or absent.
fn user_item(dir: &Path) -> Option<Item> {
    user_exposure(dir)?;
    let real = dir.canonicalize().ok()?;
    Some(Item { path: absolute_key(&real), is_config: false })
}

/// The user's own files toolshed reads that lie where a command may write, each with what to
/// call it for people: the config file `user_config` (as written; read through its links) and
/// the user's tool directories (where they really are). Their paths are relative to `/`.
pub fn user_items(user_config: Option<&Path>) -> Vec<(Item, PathBuf)> {
    let mut items = Vec::new();
    if let Some(file) = user_config
        && user_exposure(file).is_some()
    {
        items.push((Item { path: absolute_key(file), is_config: true }, file.to_path_buf()));
    }
    let mut dirs: Vec<PathBuf> = crate::paths::config_dir().map(|d| d.join("tools")).into_iter().collect();
    for base in crate::paths::opencode_config_dirs() {
        dirs.extend(["tool", "tools"].map(|sub| base.join(sub)));
    }
    for dir in dirs {
        if let Some(item) = user_item(&dir)
            && !items.iter().any(|(i, _)| *i == item)
        {
            items.push((item, dir));
        }
    }
    items
}

/// Records `snapshots` of the user's own items ([`user_items`]) as accepted.
pub fn accept_user_snapshots(data_dir: &Path, snapshots: &[Snapshot]) -> Result<(), String> {
    update_file(&user_record_file(data_dir), Path::new("/"), |record| {
        for now in snapshots {
            record.files.retain(|path, _| !under(path, &now.item));
            record.files.extend(now.files.iter().map(|(p, b)| (p.clone(), Stored::new(b))));
        }
    })
}

/// The worktree for a toolshed started in `dir`, from what toolshed resolved itself (the
/// nearest `.git`, [`crate::paths::find_worktree`]) and the projects a person accepted (those
/// with a record: `toolshed trust`, `toolshed init`), never from a file alone, since a command may
/// plant a `.git` anywhere it writes:
/// - an accepted project between `dir` and the nearest `.git` is the worktree (a `.git` planted
///   above a project that has none, in a temp dir, does not take its settings away);
/// - else the nearest `.git` (or `dir` itself), if it was accepted;
/// - else the nearest accepted project around it (but never the home directory, `/` or a temp
///   dir itself), of which a repository no one accepted on its own is a part: a `.git` planted
///   in a subdirectory leaves the project's settings, its rules' paths and its protected paths
///   as they were. `toolshed --root DIR trust` makes a nested repository a project of its own;
/// - else the nearest `.git` (or `dir`).
pub fn find_worktree(data_dir: &Path, dir: &Path) -> PathBuf {
    let accepted = |d: &Path| record_file(data_dir, d).is_file();
    let git = crate::paths::find_worktree(dir);
    if let Some(project) = dir.ancestors().take_while(|d| *d != git && d.starts_with(&git)).find(|d| accepted(d)) {
        return project.to_path_buf();
    }
    if accepted(&git) {
        return git;
    }
    enclosing_project(data_dir, &git).unwrap_or(git)
}

/// The nearest accepted project strictly above `dir` that makes a repository no one accepted
/// inside it a part of it ([`find_worktree`]): never the home directory, `/` or a temp dir
/// itself.
pub fn enclosing_project(data_dir: &Path, dir: &Path) -> Option<PathBuf> {
    let home = crate::paths::home_dir().map(|h| h.canonicalize().unwrap_or(h));
    dir.ancestors()
        .skip(1)
        .find(|d| {
            // The record first: one `stat`, and false almost everywhere.
            record_file(data_dir, d).is_file()
                && d.parent().is_some()
                && home.as_deref() != Some(*d)
                && !crate::paths::is_temp_dir(d)
        })
        .map(Path::to_path_buf)
}

/// What a person can accept for `root` seen from `cwd`: the config file and the tool
/// directories from the root down to `cwd`.
pub fn items(root: &Path, cwd: &Path) -> Vec<Item> {
    let mut items = vec![Item { path: crate::config::PROJECT_FILE.to_string(), is_config: true }];
    let mut levels: Vec<&Path> = cwd.ancestors().take_while(|d| d.starts_with(root)).collect();
    if levels.is_empty() {
        levels.push(root);
    }
    for level in levels.into_iter().rev() {
        for dir in TOOL_DIRS {
            if let Relative::Inside(rel) = relative(root, &level.join(dir)) {
                items.push(Item { path: rel, is_config: false });
            }
        }
    }
    items
}

/// Records `items` as they are now on disk as accepted for `root` (what is recorded for other
/// items stays). Fails when an item cannot be read whole, or the record cannot be written.
pub fn accept(data_dir: &Path, root: &Path, items: &[Item]) -> Result<(), String> {
    let snapshots = items
        .iter()
        .map(|item| snapshot(root, item).map_err(|why| format!("{}: {why}", item.path)))
        .collect::<Result<Vec<_>, _>>()?;
    accept_snapshots(data_dir, root, &snapshots)
}

/// Records `snapshots` — the files exactly as a person was shown them, whatever the disk holds
/// by now — as accepted for `root`.
pub fn accept_snapshots(data_dir: &Path, root: &Path, snapshots: &[Snapshot]) -> Result<(), String> {
    update(data_dir, root, |record| {
        for now in snapshots {
            record.files.retain(|path, _| !under(path, &now.item));
            record.files.extend(now.files.iter().map(|(p, b)| (p.clone(), Stored::new(b))));
        }
    })
}

/// Records `text` as the accepted text of the config file (a person's command wrote all of it).
pub fn accept_config(data_dir: &Path, root: &Path, text: &[u8]) -> Result<(), String> {
    update(data_dir, root, |record| {
        record.files.insert(crate::config::PROJECT_FILE.to_string(), Stored::new(text));
    })
}

/// Reads, changes and writes the record of `root` under a lock (two `toolshed trust` at once
/// keep both changes).
fn update(data_dir: &Path, root: &Path, change: impl FnOnce(&mut Record)) -> Result<(), String> {
    update_file(&record_file(data_dir, root), root, change)
}

/// [`update`] of the record in `file`, for `root`.
fn update_file(file: &Path, root: &Path, change: impl FnOnce(&mut Record)) -> Result<(), String> {
    let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let lock_path = dir.join(".lock");
    let _lock = loop {
        match crate::paths::FileLock::try_acquire(&lock_path) {
            Ok(Some(lock)) => break lock,
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot lock {}: {e}", lock_path.display())),
        }
    };
    let mut record = read_record(file, root);
    change(&mut record);
    write_record(file, &record)
}

/// Forgets everything accepted for `root`; whether there was a record.
pub fn forget(data_dir: &Path, root: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(record_file(data_dir, root)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The directory of the records (a protected path).
pub fn records_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("trust")
}

/// The record of `root`: named by a hash of its path (the record says its root too).
pub fn record_file(data_dir: &Path, root: &Path) -> PathBuf {
    // FNV-1a: stable across Rust releases, unlike `DefaultHasher`.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in root.as_os_str().as_encoded_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    records_dir(data_dir).join(format!("{hash:016x}.json"))
}

fn write_record(file: &Path, record: &Record) -> Result<(), String> {
    use std::io::Write as _;
    let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
    let fail = |e: std::io::Error| format!("cannot write the record in {}: {e}", dir.display());
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let text = serde_json::to_vec_pretty(record).map_err(|e| e.to_string())?;
    let mut tmp = tempfile_in(&dir).map_err(fail)?;
    tmp.1.write_all(&text).map_err(fail)?;
    tmp.1.sync_all().map_err(fail)?;
    std::fs::rename(&tmp.0, file).map_err(|e| {
        let _ = std::fs::remove_file(&tmp.0);
        fail(e)
    })
}

/// A new file only this user can read, in `dir`.
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    for n in 0..100u32 {
        let path = dir.join(format!(".record-{}-{n}.tmp", std::process::id()));
        match options.open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary name"))
}

fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

enum Relative {
    /// Not under the root.
    Outside,
    /// Under the root, `/`-separated.
    Inside(String),
    /// Under the root, through a name that is not UTF-8 (which the record cannot hold).
    Unnamed,
}

fn relative(root: &Path, path: &Path) -> Relative {
    let Ok(rel) = path.strip_prefix(root) else { return Relative::Outside };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c.as_os_str().to_str() {
            Some(part) => parts.push(part),
            None => return Relative::Unnamed,
        }
    }
    Relative::Inside(parts.join("/"))
}

/// Whether the recorded file `path` belongs to `item`.
fn under(path: &str, item: &Item) -> bool {
    if item.is_config { path == item.path } else { path.strip_prefix(&item.path).is_some_and(|r| r.starts_with('/')) }
}

/// The files of one item as they are at one moment: what a person is shown, and then what is
/// recorded if they accept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The item.
    pub item: Item,
    /// Path relative to the root → contents. Empty when the item is absent.
    pub files: BTreeMap<String, Vec<u8>>,
}

/// Reads `item` under `root`. The config file is read through a link (its contents are what
/// is recorded and applied); a tool directory must be plain: a symbolic link in or to it (whose
/// target the model may be able to rewrite later), a special file or a name that is not UTF-8
/// makes it unreadable, and so never accepted.
pub fn snapshot(root: &Path, item: &Item) -> Result<Snapshot, String> {
    let mut files = BTreeMap::new();
    let path = root.join(&item.path);
    if item.is_config {
        match std::fs::read(&path) {
            Ok(bytes) => {
                files.insert(item.path.clone(), bytes);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot read it: {e}")),
        }
        return Ok(Snapshot { item: item.clone(), files });
    }
    // Nothing there at all (through links too): nothing to accept or refuse.
    if std::fs::metadata(&path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(Snapshot { item: item.clone(), files });
    }
    // Each component of the directory's own name (`.opencode`, then `.opencode/tools`).
    let mut at = root.to_path_buf();
    for part in Path::new(&item.path).components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a symbolic link; put the directory itself there to accept it",
                    at.display()
                ));
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Ok(Snapshot { item: item.clone(), files }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Snapshot { item: item.clone(), files }),
            Err(e) => return Err(format!("cannot read {}: {e}", at.display())),
        }
    }
    let mut total = 0u64;
    walk(&path, &item.path, 0, &mut files, &mut total)?;
    Ok(Snapshot { item: item.clone(), files })
}

fn walk(
    dir: &Path,
    rel: &str,
    depth: usize,
    files: &mut BTreeMap<String, Vec<u8>>,
    total: &mut u64,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("more than {MAX_DEPTH} directories deep"));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            return Err(format!("{} has a name that is not UTF-8; rename it", path.display()));
        };
        let rel = format!("{rel}/{name}");
        let meta = std::fs::symlink_metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if meta.file_type().is_symlink() {
            return Err(format!(
                "{} is a symbolic link (what it points to could change after you accept it); put the file itself there",
                path.display()
            ));
        } else if meta.is_dir() {
            walk(&path, &rel, depth + 1, files, total)?;
        } else if meta.is_file() {
            *total += meta.len();
            if files.len() >= MAX_FILES || *total > MAX_BYTES {
                return Err(format!("more than {MAX_FILES} files or {} MiB", MAX_BYTES >> 20));
            }
            let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            files.insert(rel, bytes);
        } else {
            return Err(format!("{} is not a regular file or directory", path.display()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        let data = tmp.path().join("data");
        std::fs::create_dir_all(&root).unwrap();
        (tmp, root, data)
    }

    #[test]
    fn a_config_file_applies_only_as_accepted() {
        let (_tmp, root, data) = setup();
        std::fs::write(root.join("toolshed.toml"), "[sandbox]\nmode = \"read-only\"\n").unwrap();
        let (text, note) = Acceptance::load(&data, &root).project_text();
        assert_eq!(text, ProjectText::None);
        assert!(note.unwrap().contains("toolshed trust"));

        accept(&data, &root, &items(&root, &root)).unwrap();
        let (text, note) = Acceptance::load(&data, &root).project_text();
        assert_eq!(text, ProjectText::Text("[sandbox]\nmode = \"read-only\"\n".into()));
        assert!(note.is_none());

        // Changed or removed: the accepted copy still applies.
        std::fs::write(root.join("toolshed.toml"), "[sandbox]\nmode = \"full-access\"\n").unwrap();
        let (text, note) = Acceptance::load(&data, &root).project_text();
        assert_eq!(text, ProjectText::Text("[sandbox]\nmode = \"read-only\"\n".into()));
        assert!(note.unwrap().contains("changed"));
        std::fs::remove_file(root.join("toolshed.toml")).unwrap();
        let (text, _) = Acceptance::load(&data, &root).project_text();
        assert_eq!(text, ProjectText::Text("[sandbox]\nmode = \"read-only\"\n".into()));

        // Another worktree's record is not this one's.
        let other = root.parent().unwrap().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("toolshed.toml"), "[sandbox]\nmode = \"read-only\"\n").unwrap();
        assert_eq!(Acceptance::load(&data, &other).project_text().0, ProjectText::None);
        assert!(forget(&data, &root).unwrap());
        assert_eq!(Acceptance::load(&data, &root).project_text().0, ProjectText::None);
    }

    #[test]
    fn the_worktree_is_what_toolshed_resolved_and_what_a_person_accepted() {
        let (_tmp, root, data) = setup();
        let inner = root.join("mid/inner");
        let deep = inner.join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir_all(inner.join(".git")).unwrap();
        // Nothing accepted: the nearest `.git`.
        assert_eq!(find_worktree(&data, &deep), inner);
        // A repository inside an accepted project (with or without a `.git` of its own) is part
        // of it, until it is accepted on its own.
        accept(&data, &root, &[]).unwrap();
        assert_eq!(find_worktree(&data, &deep), root);
        assert_eq!(find_worktree(&data, &root.join("mid")), root);
        accept(&data, &inner, &[]).unwrap();
        assert_eq!(find_worktree(&data, &deep), inner);
        // An accepted project below the nearest `.git` (planted above it) stays the worktree.
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let mid = root.join("mid");
        accept(&data, &mid, &[]).unwrap();
        assert_eq!(find_worktree(&data, &mid.join("x")), mid);
        assert_eq!(find_worktree(&data, &root.join("y")), root);
    }

    #[cfg(unix)]
    #[test]
    fn the_users_own_files_are_exposed_where_any_link_on_their_way_lies_in_a_worktree() {
        let tmp = tempfile::tempdir().unwrap();
        // Not under a temp dir's own rules: the test speaks of git worktrees.
        let base = tmp.path().canonicalize().unwrap();
        let worktree = base.join("w");
        std::fs::create_dir_all(worktree.join(".git")).unwrap();
        std::fs::create_dir_all(worktree.join("real/toolshed")).unwrap();
        std::fs::write(worktree.join("real/toolshed/config.toml"), "").unwrap();
        std::os::unix::fs::symlink("real", worktree.join("dots")).unwrap();
        let config = base.join("home/.config");
        std::fs::create_dir_all(&config).unwrap();
        std::os::unix::fs::symlink(worktree.join("dots/toolshed"), config.join("toolshed")).unwrap();
        let file = config.join("toolshed/config.toml");
        // The test's own directory is a temp dir, where commands write: as the code sees it.
        assert!(user_exposure(&file).is_some());
        // Where only the worktree is writable: exposed where the chain first meets it, the
        // directory of the link `~/.config/toolshed` points through.
        let in_worktree = |p: &Path| p.starts_with(&worktree);
        let why = |p: &Path| in_worktree(p).then(|| worktree.clone());
        let place = exposure(&file, &why, &in_worktree).unwrap();
        assert!(place.starts_with(&worktree), "{}", place.display());
        // A link in the worktree on the way, even to a place outside it.
        let outside = base.join("safe/toolshed");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::remove_file(worktree.join("dots")).unwrap();
        std::os::unix::fs::symlink(base.join("safe"), worktree.join("dots")).unwrap();
        assert!(exposure(&file, &why, &in_worktree).is_some_and(|p| p.starts_with(&worktree)));
        // Nothing on the way in it.
        let plain = base.join("home/plain.toml");
        assert_eq!(exposure(&plain, &why, &in_worktree), None);
        let direct = base.join("home/.config/direct");
        std::os::unix::fs::symlink(&outside, &direct).unwrap();
        assert_eq!(exposure(&direct.join("config.toml"), &why, &in_worktree), None);
        // A link in a directory where links could be replaced (the home directory) is exposed
        // itself, wherever it leads.
        let in_home = |p: &Path| p.starts_with(base.join("home"));
        assert_eq!(exposure(&direct.join("config.toml"), &why, &in_home), Some(direct.clone()));
    }

    #[test]
    fn a_tool_directory_is_accepted_as_a_whole() {
        let (_tmp, root, data) = setup();
        let dir = root.join(".toolshed/tools");
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("t.toml"), "description = \"x\"\ncommand = [\"{dir}/run.sh\"]\n").unwrap();
        std::fs::write(dir.join("run.sh"), "echo hi\n").unwrap();
        assert!(!Acceptance::load(&data, &root).allows_dir(&dir));
        accept(&data, &root, &items(&root, &root)).unwrap();
        assert!(Acceptance::load(&data, &root).allows_dir(&dir));
        // A script beside the manifest, a file in a subdirectory, a new file: all count.
        std::fs::write(dir.join("run.sh"), "rm -rf ~\n").unwrap();
        assert_eq!(
            Acceptance::load(&data, &root).state(&Item { path: ".toolshed/tools".into(), is_config: false }),
            State::Changed
        );
        accept(&data, &root, &items(&root, &root)).unwrap();
        std::fs::write(dir.join("lib/helper.js"), "x").unwrap();
        assert!(!Acceptance::load(&data, &root).allows_dir(&dir));
        // Directories outside the worktree (the user's) are not the project's to accept.
        assert!(Acceptance::load(&data, &root).allows_dir(Path::new("/nonexistent/tools")));
        // A person's own command's file is recorded as it wrote it.
        accept_config(&data, &root, b"model = \"a/b\"\n").unwrap();
        std::fs::write(root.join("toolshed.toml"), "model = \"a/b\"\n").unwrap();
        assert_eq!(Acceptance::load(&data, &root).project_text().0, ProjectText::Text("model = \"a/b\"\n".into()));
    }

    #[test]
    fn links_special_files_and_names_that_are_not_utf8_are_never_accepted() {
        let (_tmp, root, data) = setup();
        let dir = root.join(".toolshed/tools");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(root.join("outside.sh"), "echo\n").unwrap();
        std::os::unix::fs::symlink(root.join("outside.sh"), dir.join("run.sh")).unwrap();
        let item = Item { path: ".toolshed/tools".into(), is_config: false };
        assert!(matches!(Acceptance::load(&data, &root).state(&item), State::Unreadable(_)));
        assert!(accept(&data, &root, std::slice::from_ref(&item)).is_err());
        std::fs::remove_file(dir.join("run.sh")).unwrap();
        use std::os::unix::ffi::OsStrExt as _;
        let odd = dir.join(std::ffi::OsStr::from_bytes(b"check\xff.sh"));
        std::fs::write(&odd, "x").unwrap();
        assert!(matches!(Acceptance::load(&data, &root).state(&item), State::Unreadable(_)));
        std::fs::remove_file(&odd).unwrap();
        // The directory itself a link.
        std::fs::remove_dir(&dir).unwrap();
        std::fs::create_dir_all(root.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), &dir).unwrap();
        assert!(matches!(Acceptance::load(&data, &root).state(&item), State::Unreadable(_)));
        // A tool directory under a level whose name is not UTF-8 is never allowed.
        let level = root.join(std::ffi::OsStr::from_bytes(b"pkg\xff"));
        assert!(!Acceptance::load(&data, &root).allows_dir(&level.join(".toolshed/tools")));
    }

    #[test]
    fn the_environment_switch_applies_files_as_they_are() {
        let (_tmp, root, _data) = setup();
        std::fs::write(root.join("toolshed.toml"), "model = \"x/y\"\n").unwrap();
        let all = Acceptance::everything(&root);
        assert_eq!(all.project_text(), (ProjectText::Text("model = \"x/y\"\n".into()), None));
        assert!(all.allows_dir(&root.join(".toolshed/tools")));
    }
}
