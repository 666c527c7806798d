//! The cache of OpenCode tool specs (`<data dir>/custom-tools/specs.json`), so listing tools does
//! not start the JS host when no tool file changed.
//!
//! An entry is used only while its file has the same size and modification time and the host
//! program is the same. Only clean loads are stored: a file with a problem is imported again
//! next time. A tool file's own imports are not tracked; `toolshed tools --check` always
//! imports afresh and refreshes the cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool as the host described it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct JsSpec {
    /// The tool name (`<file>` or `<file>_<export>`).
    pub name: String,
    /// The export that defines it (`default` or a named export).
    pub export: String,
    /// Its description.
    pub description: String,
    /// Its parameters as JSON Schema.
    pub parameters: Value,
}

/// What identifies a file's content cheaply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    size: u64,
    mtime_ns: u64,
}

impl Stamp {
    /// The stamp of `file`, if it can be read.
    pub(crate) fn of(file: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(file).ok()?;
        let mtime = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?;
        Some(Stamp { size: meta.len(), mtime_ns: u64::try_from(mtime.as_nanos()).unwrap_or(u64::MAX) })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entry {
    stamp: Stamp,
    host: String,
    tools: Vec<JsSpec>,
}

/// The spec cache of one data directory.
pub(crate) struct SpecCache {
    path: PathBuf,
    host: String,
    entries: BTreeMap<PathBuf, Entry>,
    dirty: bool,
}

impl SpecCache {
    /// Opens the cache in `dir` for the host program whose fingerprint is `host` (a missing or
    /// unreadable cache is empty).
    pub(crate) fn open(dir: &Path, host: String) -> SpecCache {
        let path = dir.join("specs.json");
        let entries = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        SpecCache { path, host, entries, dirty: false }
    }

    /// The cached specs of `file`, if it has not changed since they were stored.
    pub(crate) fn get(&self, file: &Path, stamp: Stamp) -> Option<&[JsSpec]> {
        self.entries.get(file).filter(|e| e.stamp == stamp && e.host == self.host).map(|e| e.tools.as_slice())
    }

    /// Stores the specs of `file`.
    pub(crate) fn put(&mut self, file: &Path, stamp: Stamp, tools: Vec<JsSpec>) {
        self.entries.insert(file.to_path_buf(), Entry { stamp, host: self.host.clone(), tools });
        self.dirty = true;
    }

    /// Forgets `file` (it failed to load).
    pub(crate) fn remove(&mut self, file: &Path) {
        self.dirty |= self.entries.remove(file).is_some();
    }

    /// Writes the cache if it changed, dropping entries of files that no longer exist. Failing
    /// to write only costs a slower listing next time, so errors are ignored.
    pub(crate) fn save(&mut self) {
        if !self.dirty {
            return;
        }
        self.entries.retain(|file, _| file.exists());
        let Ok(text) = serde_json::to_vec(&self.entries) else { return };
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = self.path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, &self.path).is_ok() {
            self.dirty = false;
        }
    }
}

/// A stable 64-bit FNV-1a fingerprint, as hex.
pub(crate) fn fingerprint(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> JsSpec {
        JsSpec { name: name.into(), export: "default".into(), description: "d".into(), parameters: Value::Null }
    }

    #[test]
    fn entries_survive_a_reopen_until_the_file_or_host_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("t.ts");
        std::fs::write(&file, "export default 1").unwrap();
        let stamp = Stamp::of(&file).unwrap();
        let mut cache = SpecCache::open(tmp.path(), "h1".into());
        cache.put(&file, stamp, vec![spec("t")]);
        cache.save();
        let cache = SpecCache::open(tmp.path(), "h1".into());
        assert_eq!(cache.get(&file, stamp).unwrap(), [spec("t")]);
        assert!(SpecCache::open(tmp.path(), "h2".into()).get(&file, stamp).is_none());
        std::fs::write(&file, "export default 22").unwrap();
        assert!(cache.get(&file, Stamp::of(&file).unwrap()).is_none());
    }

    #[test]
    fn saving_drops_entries_of_deleted_files() {
        let tmp = tempfile::tempdir().unwrap();
        let gone = tmp.path().join("gone.ts");
        std::fs::write(&gone, "x").unwrap();
        let stamp = Stamp::of(&gone).unwrap();
        let mut cache = SpecCache::open(tmp.path(), "h".into());
        cache.put(&gone, stamp, vec![spec("gone")]);
        std::fs::remove_file(&gone).unwrap();
        cache.save();
        let text = std::fs::read_to_string(tmp.path().join("specs.json")).unwrap();
        assert_eq!(text, "{}");
    }

    #[test]
    fn fingerprint_is_stable_and_separates_parts() {
        assert_eq!(fingerprint(&["a", "b"]), fingerprint(&["a", "b"]));
        assert_ne!(fingerprint(&["ab", ""]), fingerprint(&["a", "b"]));
    }
}
