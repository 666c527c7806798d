//! Process groups this process started, signalled with everything in them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, PoisonError, TryLockError};

/// A signal number (`libc`'s).
pub type Signal = libc::c_int;
/// Asks the processes to stop (they may clean up first).
pub const SIGTERM: Signal = libc::SIGTERM;
/// Stops the processes at once.
pub const SIGKILL: Signal = libc::SIGKILL;

/// Sends `signal` to process group `pgid` (the pid of the child that leads it), unless that id
/// now belongs to a process that is not our child: the leader was reaped and its pid handed out
/// again, so the group is not ours any more. While the leader is ours (alive, or a zombie not
/// yet reaped) or no process has its id (then the group holds only what the leader left, and
/// the kernel hands out no id still naming a group), the group is signalled. Whether the signal
/// was delivered to at least one process.
pub fn signal_group(pgid: u32, signal: Signal) -> bool {
    let Some(id) = i32::try_from(pgid).ok().filter(|&p| p > 1) else { return false };
    if parent_of(pgid).is_some_and(|parent| parent != std::process::id()) {
        return false;
    }
    // SAFETY: killpg(2) takes plain integers and touches no memory of ours; errors (ESRCH: the
    // group is empty) are reported as "not delivered".
    unsafe { libc::killpg(id, signal) == 0 }
}

/// The parent pid of process `pid`, from `/proc/PID/stat` (`pid (comm) state ppid ...`; the
/// command name may hold spaces and parentheses, so fields are counted after the last `)`).
/// `None` when there is no such process, or no `/proc` to ask.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// A list of process groups signalled together: by [`GroupList::stop_all`], and when this
/// process exits. Each owner keeps its own (a `static`), so stopping one owner's groups leaves
/// the others' alone.
#[derive(Debug)]
pub struct GroupList {
    groups: Mutex<Vec<(u32, Signal)>>,
    hooked: AtomicBool,
}

impl GroupList {
    /// An empty list, for a `static`.
    pub const fn new() -> GroupList {
        GroupList { groups: Mutex::new(Vec::new()), hooked: AtomicBool::new(false) }
    }

    /// Signals every group still listed with its guard's stop signal and empties the list.
    /// Safe to call more than once; a guard dropped later signals its group again (harmless:
    /// it is empty, or not ours and left alone).
    pub fn stop_all(&self) {
        let groups = std::mem::take(&mut *self.groups.lock().unwrap_or_else(PoisonError::into_inner));
        for (pgid, signal) in groups {
            signal_group(pgid, signal);
        }
    }

    fn add(&'static self, pgid: u32, signal: Signal) {
        if !self.hooked.swap(true, Ordering::SeqCst) {
            at_exit(self);
        }
        self.groups.lock().unwrap_or_else(PoisonError::into_inner).push((pgid, signal));
    }

    fn remove(&self, pgid: u32) {
        self.groups.lock().unwrap_or_else(PoisonError::into_inner).retain(|(p, _)| *p != pgid);
    }

    /// What runs at exit: another thread may hold the list as the process exits, and then it is
    /// left rather than waited for (exit must not block).
    fn stop_all_at_exit(&self) {
        let groups = match self.groups.try_lock() {
            Ok(mut groups) => std::mem::take(&mut *groups),
            Err(TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
            Err(TryLockError::WouldBlock) => return,
        };
        for (pgid, signal) in groups {
            signal_group(pgid, signal);
        }
    }
}

impl Default for GroupList {
    fn default() -> Self {
        GroupList::new()
    }
}

/// Every list that has held a group, for the `atexit` hook.
static LISTS: Mutex<Vec<&'static GroupList>> = Mutex::new(Vec::new());

fn at_exit(list: &'static GroupList) {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // SAFETY: atexit(3) with a function that takes no arguments and never unwinds.
        unsafe {
            libc::atexit(stop_every_list_at_exit);
        }
    });
    LISTS.lock().unwrap_or_else(PoisonError::into_inner).push(list);
}

extern "C" fn stop_every_list_at_exit() {
    let lists = match LISTS.try_lock() {
        Ok(lists) => lists.clone(),
        Err(TryLockError::Poisoned(p)) => p.into_inner().clone(),
        Err(TryLockError::WouldBlock) => return,
    };
    for list in lists {
        list.stop_all_at_exit();
    }
}

/// The process group of a child started as its leader: signalled with everything in it (the
/// child and whatever it started that stayed in the group) when dropped, or on demand.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: u32,
    stop: Signal,
    list: Option<&'static GroupList>,
}

impl ProcessGroup {
    /// The group led by the just-spawned child `leader` (its pid), stopped with `stop` when the
    /// guard is dropped. `None` when `leader` cannot name a group (0, 1, or out of range).
    pub fn new(leader: u32, stop: Signal) -> Option<ProcessGroup> {
        i32::try_from(leader).ok().filter(|&p| p > 1)?;
        Some(ProcessGroup { pgid: leader, stop, list: None })
    }

    /// As [`ProcessGroup::new`], and listed in `list` until dropped, so the group is also
    /// stopped by [`GroupList::stop_all`] and when this process exits (by any path that runs
    /// `atexit` handlers), where no destructor runs.
    pub fn listed(leader: u32, stop: Signal, list: &'static GroupList) -> Option<ProcessGroup> {
        let mut group = ProcessGroup::new(leader, stop)?;
        list.add(leader, stop);
        group.list = Some(list);
        Some(group)
    }

    /// The group's id (its leader's pid).
    pub fn id(&self) -> u32 {
        self.pgid
    }

    /// Sends `signal` to the group (see [`signal_group`]); whether it was delivered.
    pub fn signal(&self, signal: Signal) -> bool {
        signal_group(self.pgid, signal)
    }

    /// Sends the group its stop signal, what dropping the guard does; whether it was delivered.
    pub fn stop(&self) -> bool {
        self.signal(self.stop)
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.stop();
        if let Some(list) = self.list {
            list.remove(self.pgid);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use super::*;

    /// The processes of group `pgid` that are not zombies (a zombie is dead; the orphans among
    /// them wait for init to reap them), from `/proc/*/stat`.
    fn live_members(pgid: u32) -> Vec<u32> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
            let Some(close) = stat.rfind(')') else { continue };
            let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
            // state ppid pgrp ...
            if fields.len() > 2 && fields[2].parse() == Ok(pgid) && fields[0] != "Z" {
                found.push(pid);
            }
        }
        found
    }

    fn wait_until(mut done: impl FnMut() -> bool) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        done()
    }

    /// `sh -c 'sleep 30 & sleep 30'` leading a group of its own, once both sleeps run.
    fn group_of_three() -> Child {
        let child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30"])
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        assert!(wait_until(|| live_members(pgid).len() == 3), "the group never had 3 processes");
        child
    }

    #[test]
    fn a_dropped_guard_kills_its_group_and_leaves_nothing() {
        let mut child = group_of_three();
        let pgid = child.id();
        let group = ProcessGroup::new(pgid, SIGKILL).unwrap();
        assert_eq!(group.id(), pgid);
        drop(group);
        child.wait().unwrap();
        assert!(wait_until(|| live_members(pgid).is_empty()), "left running: {:?}", live_members(pgid));
    }

    #[test]
    fn a_group_is_stopped_on_demand_with_its_signal_and_then_found_empty() {
        let mut child = group_of_three();
        let pgid = child.id();
        let group = ProcessGroup::new(pgid, SIGTERM).unwrap();
        assert!(group.stop());
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(child.wait().unwrap().signal(), Some(SIGTERM));
        assert!(wait_until(|| live_members(pgid).is_empty()), "left running: {:?}", live_members(pgid));
        // The leader is reaped: the drop that follows signals what is left of the group, nothing.
        drop(group);
    }

    #[test]
    fn a_group_whose_leader_is_not_our_child_is_left_alone() {
        // `setsid` (not a group leader as a background job of a non-interactive shell) makes
        // `sleep` the leader of a new group, a child of the shell, not of this process.
        let mut shell = Command::new("sh")
            .args(["-c", "setsid sleep 30 & echo $!"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(shell.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let sleep: u32 = line.trim().parse().unwrap();
        shell.wait().unwrap();
        assert!(wait_until(|| live_members(sleep) == [sleep]), "setsid did not make a group");
        assert!(!signal_group(sleep, SIGKILL));
        drop(ProcessGroup::new(sleep, SIGKILL).unwrap());
        assert_eq!(live_members(sleep), [sleep], "a group that is not ours was signalled");
        // SAFETY (test clean-up): kill(2) of the one process this test started through the shell.
        unsafe { libc::kill(sleep as i32, libc::SIGKILL) };
    }

    #[test]
    fn ids_that_name_no_group_of_ours_are_refused() {
        assert!(ProcessGroup::new(0, SIGKILL).is_none());
        assert!(ProcessGroup::new(1, SIGKILL).is_none());
        assert!(ProcessGroup::new(u32::MAX, SIGKILL).is_none());
        assert!(!signal_group(0, 0));
    }

    #[test]
    fn a_list_stops_its_groups_and_leaves_other_lists_alone() {
        static ONE: GroupList = GroupList::new();
        static OTHER: GroupList = GroupList::new();
        let (mut a, mut b) = (group_of_three(), group_of_three());
        let (ga, gb) = (
            ProcessGroup::listed(a.id(), SIGKILL, &ONE).unwrap(),
            ProcessGroup::listed(b.id(), SIGKILL, &OTHER).unwrap(),
        );
        ONE.stop_all();
        a.wait().unwrap();
        assert!(wait_until(|| live_members(ga.id()).is_empty()), "left running: {:?}", live_members(ga.id()));
        assert_eq!(live_members(gb.id()).len(), 3, "another list's group was stopped");
        drop(gb);
        b.wait().unwrap();
        assert!(wait_until(|| live_members(b.id()).is_empty()));
        drop(ga);
        assert!(OTHER.groups.lock().unwrap().is_empty(), "a dropped guard stays listed");
    }

    /// Run by `listed_groups_are_stopped_at_exit` in a child process: lists a group, prints its
    /// id and exits without running the guard's destructor.
    #[test]
    #[ignore = "a helper: run in a child process by listed_groups_are_stopped_at_exit"]
    fn exit_with_a_listed_group() {
        static LIST: GroupList = GroupList::new();
        let child = group_of_three();
        let group = ProcessGroup::listed(child.id(), SIGKILL, &LIST).unwrap();
        println!("pgid={}", group.id());
        std::mem::forget(group);
        std::process::exit(0);
    }

    #[test]
    fn listed_groups_are_stopped_at_exit() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "group::tests::exit_with_a_listed_group", "--ignored", "--nocapture", "--test-threads=1"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // The test harness prints the test's name on the same line.
        let pgid: u32 = stdout
            .split("pgid=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("the helper printed no group: {stdout}"))
            .parse()
            .unwrap();
        assert!(wait_until(|| live_members(pgid).is_empty()), "left running: {:?}", live_members(pgid));
    }
}
