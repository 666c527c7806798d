//! A standalone `apply_patch` like Codex's: the patch as the only argument or on standard
//! input, paths relative to the current directory. Prints the summary on success (exit 0) and
//! the error on standard error (exit 1).
//!
//! `cargo run --release -p toolshed-patch --example apply_patch < patch.txt`
//!
//! `TOOLSHED_PATCH_SYNC` picks how writes are made durable: `fsync` (parallel `fdatasync`, the
//! default), `syncfs` (one `syncfs` per file system) or `none` (no sync; for measuring).

use std::io::Read;
use std::process::ExitCode;

use toolshed_patch::{ApplyError, CommitOptions, Durability, OsFs, SyncStrategy, apply};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let text = match (args.next(), args.next()) {
        (Some(text), None) => text,
        (None, None) => {
            let mut text = String::new();
            if let Err(e) = std::io::stdin().read_to_string(&mut text) {
                eprintln!("Error: failed to read the patch from standard input: {e}");
                return ExitCode::from(2);
            }
            text
        }
        _ => {
            eprintln!("Usage: apply_patch 'PATCH'\n       echo 'PATCH' | apply_patch");
            return ExitCode::from(2);
        }
    };
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("Error: no current directory: {e}");
            return ExitCode::from(2);
        }
    };
    let mut options = CommitOptions::default();
    let fs = match std::env::var("TOOLSHED_PATCH_SYNC").as_deref() {
        Ok("syncfs") => OsFs::with_sync(SyncStrategy::Syncfs),
        Ok("none") => {
            options.durability = Durability::Relaxed;
            OsFs::new()
        }
        Ok("fsync") | Err(_) => OsFs::new(),
        Ok(other) => {
            eprintln!("Error: TOOLSHED_PATCH_SYNC must be fsync, syncfs or none, not {other:?}");
            return ExitCode::from(2);
        }
    };
    match apply(&text, &fs, |p| Ok(cwd.join(p)), &options) {
        Ok(summary) => {
            println!("{summary}");
            ExitCode::SUCCESS
        }
        Err(ApplyError::Parse(e)) => {
            eprintln!("{}", e.cli_display());
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
