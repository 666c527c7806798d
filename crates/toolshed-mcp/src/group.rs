//! The process groups of the stdio servers this process started. Each server is started as the
//! leader of a group of its own, so stopping it also stops what it started (a wrapper's `sleep`,
//! `npx`'s node, ...), and every group still listed is killed when `mcp serve` stops, whatever
//! the server's start-up was doing: spawned, in the handshake, listing its tools, or given up on.
//! Whatever is still listed when the process exits (any command, by any path that runs `atexit`
//! handlers) is killed then.

use std::collections::BTreeSet;
use std::sync::{Mutex, Once, PoisonError};

/// Every group started and not yet killed.
static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// A started server's process group (its id is the server's pid): killed with everything in it
/// when dropped.
#[derive(Debug)]
pub(crate) struct Group(i32);

impl Group {
    /// The group led by the just-spawned child `pid`.
    pub(crate) fn new(pid: u32) -> Option<Group> {
        let pgid = i32::try_from(pid).ok().filter(|&p| p > 0)?;
        static AT_EXIT: Once = Once::new();
        // SAFETY: atexit(3) with a function that takes no arguments and never unwinds.
        #[cfg(unix)]
        AT_EXIT.call_once(|| unsafe {
            libc::atexit(kill_all_at_exit);
        });
        GROUPS.lock().unwrap_or_else(PoisonError::into_inner).insert(pgid);
        Some(Group(pgid))
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        kill(self.0);
        GROUPS.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.0);
    }
}

/// Kills every stdio server's process group still listed, with everything in it. Safe to call
/// more than once; what `mcp serve` does when it stops.
pub fn kill_all() {
    let groups = std::mem::take(&mut *GROUPS.lock().unwrap_or_else(PoisonError::into_inner));
    for pgid in groups {
        kill(pgid);
    }
}

#[cfg(unix)]
extern "C" fn kill_all_at_exit() {
    // Another thread may hold the list as the process exits: then leave it rather than block.
    let groups = match GROUPS.try_lock() {
        Ok(mut groups) => std::mem::take(&mut *groups),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    for pgid in groups {
        kill(pgid);
    }
}

/// SIGKILL to group `pgid`, unless that id now belongs to a process that is not our child (the
/// leader was reaped and its pid handed out again): the leader is still ours (alive, or a
/// zombie not yet reaped), or no process has its id and the group holds only what it left.
fn kill(pgid: i32) {
    #[cfg(unix)]
    {
        if let Some(parent) = parent_of(pgid)
            && parent != std::process::id()
        {
            return;
        }
        // SAFETY: killpg(2) takes plain integers and touches no memory of ours.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// The parent pid of process `pid`, from `/proc/PID/stat` (`pid (comm) state ppid ...`; the
/// command name may hold spaces and parentheses, so fields are counted after the last `)`).
/// `None` when there is no such process, or no /proc to ask (then the group is signalled).
#[cfg(unix)]
fn parent_of(pid: i32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}
