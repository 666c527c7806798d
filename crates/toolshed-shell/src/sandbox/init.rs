//! A command's own PID namespace, and the small init that ends everything in it (Linux).
//!
//! A process a command leaves running can hide from every search by what it carries: it can
//! clear its environment, start a session of its own, and enter user and mount namespaces of its
//! own (`unshare -Urm`). It cannot leave a PID namespace. So a `workspace-write` command (and a
//! custom tool's process) enters a new one together with its mount namespace, and the child
//! toolshed spawned splits in three between `fork` and `exec`:
//!
//! - the **waiter**, toolshed's own child, stays outside the namespace: it waits for the init
//!   and leaves with the command's exit status (its code, or the signal that killed it), so that
//!   toolshed sees the command end as before. It blocks every signal it can: toolshed's signals
//!   reach the command through its process group, which the command shares.
//! - the **init** (PID 1 of the namespace) mounts a `/proc` of the namespace (so `ps` and `kill`
//!   inside the command see its own processes), starts the command, and reaps what is
//!   reparented to it. When the command's process ends, the init stops (SIGSTOP) everything
//!   left in the namespace at once (`kill(-1)`, which a fork in progress cannot outrun), tells
//!   toolshed how many over the report socket, hands the status to the waiter, and exits: the
//!   kernel then kills whatever is left in the namespace, nested namespaces included, and the
//!   init's exit completes only once they are gone. The init dies with the waiter
//!   (`PR_SET_PDEATHSIG`), and toolshed's SIGKILL to the group reaches it too.
//! - the **command** goes on to its confinement and `exec`.
//!
//! The waiter and the init never `exec`: they are copies of toolshed that run only the code
//! below, raw system calls on the stack. They close every descriptor they do not need, so
//! that the command's pipes (and the one by which the standard library learns that `exec`
//! worked) end when the command's side ends, and reset every signal handler toolshed installed.
//! Inside the namespace the command's parent is PID 1, which ignores every signal sent from
//! inside (`kill -9 $PPID` does nothing).

use std::io;
use std::os::fd::RawFd;

/// The most processes and threads one command may have at once (see [`split`]).
const MAX_PROCESSES: libc::pid_t = 16_384;

/// Status the init hands over when it could not start the command (`fork` failed).
const COULD_NOT_START: libc::c_int = 126 << 8;

/// Splits the calling child (just entered into a new PID namespace) in three, as the module
/// docs say; returns only in the command's process. `pids.report` (or -1) is the socket
/// toolshed reads the count of stopped processes from.
///
/// # Safety
/// Only between `fork` and `exec` of a child whose last `unshare` included `CLONE_NEWPID`.
pub(crate) unsafe fn split(pids: super::OwnPids) -> io::Result<()> {
    let report = pids.report;
    // SAFETY: raw system calls on stack data; the waiter and the init leave with `_exit`.
    unsafe {
        let mut handover = [0 as libc::c_int; 2];
        if libc::pipe2(handover.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        // Blocked before the fork, so that the waiter cannot be stopped by anything but SIGKILL
        // between the fork and the init's PR_SET_PDEATHSIG; the command unblocks them.
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_SETMASK, &all, &mut before);
        let init = libc::fork();
        if init < 0 {
            let error = io::Error::last_os_error();
            libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            libc::close(handover[0]);
            libc::close(handover[1]);
            return Err(error);
        }
        if init > 0 {
            reset_handlers();
            close_all_except(&mut [handover[0]]);
            wait_and_leave(init, handover[0]);
        }
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        reset_handlers();
        // A /proc of this namespace where the kernel allows it (it may not, under a /proc with
        // parts masked, as in some containers): `ps` and `pkill` then see the command's own
        // processes, by the numbers `kill` takes here.
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        );
        // At most MAX_PROCESSES processes and threads at once (a fork bomb took three quarters
        // of the machine's numbers in review 6): the namespace's own `pid_max`, where the kernel
        // has one per namespace (6.14 on), never above the machine's.
        if let Some(max) = read_number(c"/proc/sys/kernel/pid_max")
            && max > MAX_PROCESSES
        {
            write_number(c"/proc/sys/kernel/pid_max", MAX_PROCESSES);
        }
        // Numbers from a random start, not 2, 3, ...: the same numbers in every command would
        // make a pid file left by one (`server.pid`) name a live process of the next.
        let start = random_start();
        if let Some(start) = start {
            write_number(c"/proc/sys/kernel/ns_last_pid", start);
        }
        let command = libc::fork();
        if command == 0 {
            libc::close(handover[0]);
            libc::close(handover[1]);
            if pids.own_group {
                // A group of its own, visible inside (the waiter's is not), and the terminal's
                // foreground one if it has a terminal (signals are still blocked: no SIGTTOU).
                libc::setpgid(0, 0);
                if libc::isatty(0) == 1 {
                    libc::tcsetpgrp(0, libc::getpgrp());
                }
            }
            libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            return Ok(());
        }
        close_all_except(&mut [handover[1], report]);
        let status = if command < 0 { COULD_NOT_START } else { reap_until(command) };
        let stopped = stop_the_rest(start.unwrap_or(1));
        if report >= 0 && stopped > 0 {
            let mut message = [0u8; 8];
            message[..4].copy_from_slice(crate::process::LEFT_TAG);
            message[4..].copy_from_slice(&(stopped as u32).to_le_bytes());
            libc::send(report, message.as_ptr().cast(), message.len(), libc::MSG_DONTWAIT);
        }
        let bytes = status.to_ne_bytes();
        libc::write(handover[1], bytes.as_ptr().cast(), bytes.len());
        libc::_exit(0);
    }
}

/// Every signal handler back to the default (toolshed's would otherwise run in the copy, and
/// write to descriptors it no longer has).
unsafe fn reset_handlers() {
    // SAFETY: sigaction with a zeroed (SIG_DFL) action; invalid numbers fail harmlessly.
    unsafe {
        let default: libc::sigaction = std::mem::zeroed();
        for signal in 1..65 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }
}

/// Closes every descriptor but `keep` (negative entries are ignored).
unsafe fn close_all_except(keep: &mut [RawFd]) {
    keep.sort_unstable();
    let mut from: u32 = 0;
    for &fd in keep.iter().filter(|&&fd| fd >= 0) {
        let fd = fd as u32;
        if fd > from {
            // SAFETY: closing descriptors of this process only.
            unsafe { close_range(from, fd - 1) };
        }
        from = fd + 1;
    }
    // SAFETY: as above.
    unsafe { close_range(from, u32::MAX) };
}

/// close_range(2), or a loop of close(2) on kernels before 5.9.
unsafe fn close_range(first: u32, last: u32) {
    if first > last {
        return;
    }
    // SAFETY: plain system calls on integers.
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, last, 0u32) == 0 {
            return;
        }
        let mut limit: libc::rlimit = std::mem::zeroed();
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur.min(1 << 20) as u32
        } else {
            1024
        };
        for fd in first..=last.min(top) {
            libc::close(fd as RawFd);
        }
    }
}

/// Whether the last system call failed with EINTR (reads errno; allocates nothing).
fn interrupted() -> bool {
    io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

/// The waiter: waits for the init and leaves as the command did.
unsafe fn wait_and_leave(init: libc::pid_t, handover: RawFd) -> ! {
    // SAFETY: raw system calls on stack data.
    unsafe {
        let mut bytes = [0u8; 4];
        let mut got = 0;
        while got < bytes.len() {
            let n = libc::read(handover, bytes[got..].as_mut_ptr().cast(), bytes.len() - got);
            if n > 0 {
                got += n as usize;
            } else if n == 0 || !interrupted() {
                break;
            }
        }
        let mut init_status = 0;
        while libc::waitpid(init, &mut init_status, 0) < 0 && interrupted() {}
        // The init handed over the command's status; if it did not, it was killed (a timeout's
        // SIGKILL to the group), and that is what happened to the command.
        let status = if got == bytes.len() { libc::c_int::from_ne_bytes(bytes) } else { init_status };
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            // No core file of toolshed's memory.
            let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, signal);
            libc::kill(libc::getpid(), signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            libc::_exit(128 + signal);
        }
        libc::_exit(if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 1 });
    }
}

/// Reaps children (the command and whatever was reparented here) until `command` has ended;
/// its wait status.
unsafe fn reap_until(command: libc::pid_t) -> libc::c_int {
    // SAFETY: waitpid on a stack integer.
    unsafe {
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid == command {
                return status;
            }
            if pid < 0 && !interrupted() {
                return COULD_NOT_START;
            }
        }
    }
}

/// Stops every other process of the namespace at once and counts them (processes, not threads
/// or zombies), looking at the numbers handed out after `start`.
unsafe fn stop_the_rest(start: libc::pid_t) -> usize {
    // SAFETY: raw system calls on stack buffers.
    unsafe {
        // kill(-1) from a namespace's init reaches every process of the namespace but itself;
        // the kernel makes a fork under way start over rather than leave a child unsignalled.
        if libc::kill(-1, libc::SIGSTOP) != 0 {
            return 0;
        }
        // Each number handed out since the start is looked at (a command that started thousands
        // of processes costs a few milliseconds); after a wrap, the low ones.
        let max = read_number(c"/proc/sys/kernel/pid_max").unwrap_or(1 << 22).min(1 << 22);
        let last = read_number(c"/proc/sys/kernel/ns_last_pid").unwrap_or(max);
        // Numbers handed out wrap past `pid_max` to the low ones; where `pid_max` is the
        // namespace's own (small), every number is looked at.
        let ranges = if max <= MAX_PROCESSES {
            [(2, max - 1), (1, 0)]
        } else if last > start {
            [(start + 1, last), (1, 0)]
        } else {
            [(start + 1, max - 1), (2, last)]
        };
        let mut count = 0;
        for (from, to) in ranges {
            for pid in from.max(2)..=to {
                if is_live_process(pid) {
                    count += 1;
                }
            }
        }
        count
    }
}

/// Whether `pid` is a process (a thread group's leader, not another of its threads) that has
/// not exited.
unsafe fn is_live_process(pid: libc::pid_t) -> bool {
    // SAFETY: raw system calls on stack buffers.
    unsafe {
        if libc::syscall(libc::SYS_tgkill, pid, pid, 0) != 0 {
            return false;
        }
        // `/proc/PID/stat`: `pid (comm) S ...`, the state after the last `)`.
        let mut path = [0u8; 32];
        let prefix = b"/proc/";
        path[..prefix.len()].copy_from_slice(prefix);
        let mut at = prefix.len() + decimal(pid, &mut path[prefix.len()..]);
        path[at..at + 5].copy_from_slice(b"/stat");
        at += 5;
        path[at] = 0;
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            // Gone meanwhile.
            return false;
        }
        let mut buf = [0u8; 512];
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        let text = &buf[..n.max(0) as usize];
        let Some(close) = text.iter().rposition(|&b| b == b')') else { return true };
        // After the name: the state, then 16 fields on, the number of threads (a leader that
        // called pthread_exit shows `Z` while its other threads run on).
        let mut fields = text[close + 1..].split(u8::is_ascii_whitespace).filter(|f| !f.is_empty());
        let state = fields.next().and_then(|f| f.first().copied());
        let threads = fields.nth(16).map_or(0, |f| {
            f.iter()
                .take_while(|b| b.is_ascii_digit())
                .fold(0u32, |n, b| n.saturating_mul(10).saturating_add(u32::from(b - b'0')))
        });
        !matches!(state, Some(b'Z' | b'X')) || threads > 1
    }
}

/// Writes `value` in decimal at the start of `out`; how many bytes.
pub(super) fn decimal(value: libc::pid_t, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 12];
    let mut n = 0;
    let mut v = value.max(0) as u32;
    loop {
        digits[n] = b'0' + (v % 10) as u8;
        n += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for i in 0..n {
        out[i] = digits[n - 1 - i];
    }
    n
}

/// A random number to hand out process numbers after, within `pid_max`: `None` if there is no
/// randomness or no room.
unsafe fn random_start() -> Option<libc::pid_t> {
    // SAFETY: getrandom into a stack buffer; reads of /proc files.
    unsafe {
        let max = read_number(c"/proc/sys/kernel/pid_max")?.min(1 << 22);
        let mut bytes = [0u8; 4];
        if libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), libc::GRND_NONBLOCK) != 4 {
            return None;
        }
        // Room above for what the command starts before the numbers wrap.
        let room = max - 1000 - max / 4;
        (room > 0).then(|| 1000 + (u32::from_ne_bytes(bytes) % room as u32) as libc::pid_t)
    }
}

/// Writes `value` in decimal to a `/proc` file.
unsafe fn write_number(path: &std::ffi::CStr, value: libc::pid_t) {
    let mut text = [0u8; 12];
    let n = decimal(value, &mut text);
    // SAFETY: open, write and close on a stack buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, text.as_ptr().cast(), n);
            libc::close(fd);
        }
    }
}

/// A number read from a `/proc` file (`ns_last_pid` answers for the reader's namespace).
unsafe fn read_number(path: &std::ffi::CStr) -> Option<libc::pid_t> {
    // SAFETY: open, read and close on a stack buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mut buf = [0u8; 24];
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        if n <= 0 {
            return None;
        }
        let mut value: libc::pid_t = 0;
        for &b in buf.iter().take(n as usize).take_while(|b| b.is_ascii_digit()) {
            value = value.saturating_mul(10).saturating_add(libc::pid_t::from(b - b'0'));
        }
        (value > 0).then_some(value)
    }
}
