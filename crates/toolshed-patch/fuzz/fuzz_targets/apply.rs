//! Parsing and applying any text to a small in-memory tree must never panic, and a patch that
//! fails must leave the tree as it was.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use toolshed_patch::{CommitOptions, Durability, MemFs, apply};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let fs = MemFs::new();
    fs.insert_file("/w/a.txt", "alpha\nbeta\n  gamma\n\ndelta\n");
    fs.insert_file("/w/b/c.txt", "one\r\ntwo\r\n");
    fs.insert_dir("/w/d");
    let before = (fs.files(), fs.dirs());
    let resolve = |p: &str| -> Result<PathBuf, String> {
        if p.is_empty() || p.contains('\0') || p.split('/').any(|c| c == "..") {
            return Err("refused".into());
        }
        Ok(Path::new("/w").join(p.trim_start_matches('/')))
    };
    let options = CommitOptions { durability: Durability::Relaxed, ..Default::default() };
    if apply(&text, &fs, resolve, &options).is_err() {
        assert_eq!((fs.files(), fs.dirs()), before);
    }
});
