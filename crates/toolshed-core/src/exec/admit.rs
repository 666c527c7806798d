//! Stage 4, admit: parallel-safe calls share the session's lock, every other call takes it
//! alone, so independent reads run together and side effects run by themselves. Edits of one
//! file, from any session of the process, are serialised by [`crate::locks::PathLocks`].

use tokio::sync::{RwLockReadGuard, RwLockWriteGuard};

use super::Session;
use crate::tool::ToolSpec;

/// Held while a call runs.
pub enum Admission<'a> {
    /// Shared with other parallel-safe calls.
    Shared(RwLockReadGuard<'a, ()>),
    /// Alone.
    Exclusive(RwLockWriteGuard<'a, ()>),
}

/// Waits until the call may run.
pub async fn admit<'a>(session: &'a Session, spec: &ToolSpec) -> Admission<'a> {
    if spec.flags.parallel_safe {
        Admission::Shared(session.admission().read().await)
    } else {
        Admission::Exclusive(session.admission().write().await)
    }
}
