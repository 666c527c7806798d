//! Per-file locks shared by every session of a process: edits of one file are serialised
//! whichever session, tool or sub-agent makes them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::OwnedMutexGuard;

/// One async mutex per file path, created on demand and dropped when nobody holds it.
#[derive(Default)]
pub struct PathLocks {
    map: Mutex<HashMap<PathBuf, Weak<tokio::sync::Mutex<()>>>>,
}

/// Holds one or more file locks until dropped.
pub struct PathGuard {
    _guards: Vec<OwnedMutexGuard<()>>,
}

impl PathLocks {
    fn mutex_for(&self, path: &Path) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = map.get(path).and_then(Weak::upgrade) {
            return existing;
        }
        if map.len() >= 64 {
            map.retain(|_, weak| weak.strong_count() > 0);
        }
        let fresh = Arc::new(tokio::sync::Mutex::new(()));
        map.insert(path.to_path_buf(), Arc::downgrade(&fresh));
        fresh
    }

    /// Locks one path.
    pub async fn lock(&self, path: &Path) -> PathGuard {
        let guard = self.mutex_for(path).lock_owned().await;
        PathGuard { _guards: vec![guard] }
    }

    /// Locks several paths, in sorted order so two calls can never deadlock on each other.
    pub async fn lock_many(&self, paths: &[PathBuf]) -> PathGuard {
        let mut sorted: Vec<&PathBuf> = paths.iter().collect();
        sorted.sort();
        sorted.dedup();
        let mut guards = Vec::with_capacity(sorted.len());
        for p in sorted {
            guards.push(self.mutex_for(p).lock_owned().await);
        }
        PathGuard { _guards: guards }
    }

    /// Number of paths currently tracked (locked, or not yet pruned).
    pub fn tracked(&self) -> usize {
        self.map.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn same_path_is_serialised_and_other_paths_are_not() {
        let locks = Arc::new(PathLocks::default());
        let a = locks.lock(Path::new("/w/a")).await;
        let other = tokio::time::timeout(Duration::from_millis(50), locks.lock(Path::new("/w/b"))).await;
        assert!(other.is_ok(), "a different path must not wait");
        let same = tokio::time::timeout(Duration::from_millis(50), locks.lock(Path::new("/w/a"))).await;
        assert!(same.is_err(), "the same path must wait");
        drop(a);
        let many =
            tokio::time::timeout(Duration::from_millis(50), locks.lock_many(&["/w/b".into(), "/w/a".into()])).await;
        assert!(many.is_err(), "/w/b is still held by `other`");
    }

    #[tokio::test]
    async fn unused_locks_are_pruned() {
        let locks = PathLocks::default();
        for i in 0..200 {
            drop(locks.lock(Path::new(&format!("/w/{i}"))).await);
        }
        assert!(locks.tracked() <= 64, "{}", locks.tracked());
    }
}
