//! Servers that failed to start, remembered across processes for a while, so one-shot
//! `toolshed call`s do not each pay for starting a server that cannot start (rustup's
//! `rust-analyzer` proxy without the component takes 0.2 s to say so). `toolshed doctor`
//! checks every server afresh and updates the record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How long a failed start is remembered.
pub const REMEMBER: Duration = Duration::from_secs(600);

#[derive(Default, Serialize, Deserialize)]
struct Record {
    reason: String,
    at: u64,
}

fn file() -> PathBuf {
    toolshed_core::paths::data_dir().join("lsp").join("failed-starts.json")
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn load(path: &Path) -> BTreeMap<String, Record> {
    std::fs::read(path).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).unwrap_or_default()
}

fn save(path: &Path, records: &BTreeMap<String, Record>) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(bytes) = serde_json::to_vec_pretty(records) {
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        if std::fs::write(&tmp, bytes).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

/// Why the server `key` names failed to start and how long ago, if that was within
/// [`REMEMBER`]. The key is the server's name, program, arguments and project root.
pub fn recent(key: &str) -> Option<(String, Duration)> {
    recent_in(&file(), key)
}

/// Remembers that the server `key` names failed to start, and why.
pub fn record(key: &str, reason: &str) {
    record_in(&file(), key, reason);
}

/// Forgets a failure of the server `key` names (it started).
pub fn clear(key: &str) {
    clear_in(&file(), key);
}

/// The key of a server: its name, program and arguments, and the project root it serves.
pub fn key(name: &str, program: &Path, args: &[String], root: &Path) -> String {
    format!("{name} {} {} @ {}", program.display(), args.join(" "), root.display())
}

fn recent_in(file: &Path, key: &str) -> Option<(String, Duration)> {
    let records = load(file);
    let record = records.get(key)?;
    let age = Duration::from_secs(now().saturating_sub(record.at));
    (age < REMEMBER).then(|| (record.reason.clone(), age))
}

fn record_in(file: &Path, key: &str, reason: &str) {
    let mut records = load(file);
    records.retain(|_, r| now().saturating_sub(r.at) < REMEMBER.as_secs());
    records.insert(key.to_string(), Record { reason: reason.to_string(), at: now() });
    save(file, &records);
}

fn clear_in(file: &Path, key: &str) {
    let mut records = load(file);
    if records.remove(key).is_some() {
        save(file, &records);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_remembered_until_cleared() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("lsp/failed-starts.json");
        let key = key("ra", Path::new("/bin/ra"), &["--stdio".into()], Path::new("/w"));
        assert!(recent_in(&file, &key).is_none());
        record_in(&file, &key, "exited with status 1");
        let (why, age) = recent_in(&file, &key).unwrap();
        assert_eq!(why, "exited with status 1");
        assert!(age < Duration::from_secs(5));
        assert!(recent_in(&file, "other").is_none());
        clear_in(&file, &key);
        assert!(recent_in(&file, &key).is_none());
    }
}
