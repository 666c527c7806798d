//! One running command: spawned as the leader of a new session (so of a new process group,
//! with no controlling terminal unless it gets a PTY), with a non-interactive environment, its
//! stdout and stderr on one pipe (arrival order kept), and a pump task that streams the output
//! into a bounded [`OutputSink`] and notices when the shell exits.
//!
//! The pump does not wait for the pipe to close: a background grandchild may hold it open
//! forever. Once the shell exits it drains what is already there for at most
//! [`DRAIN_AFTER_EXIT`] and finishes.
//!
//! Every process a command starts carries a unique marker variable in its environment
//! (`TOOLSHED_RUN_<id>=1`), so stopping a command also finds the processes that left its process
//! group (`setsid`, `disown` into a new session) by scanning `/proc/*/environ`. The shell is a
//! child subreaper (`PR_SET_CHILD_SUBREAPER`): a process that double-forks, calls `setsid()` and
//! clears its environment is still reparented to the shell, and stopping a command kills every
//! descendant of the shell too.
//!
//! Commands die with toolshed however it dies: at exit (`atexit`), and when it is killed
//! (`SIGKILL`, or a signal it does not handle) through a watchdog — a small `sh` in a session of
//! its own, ignoring signals, that toolshed tells about each command over a pipe; when the pipe
//! closes (toolshed is gone) it stops, then kills, every command still listed, its descendants
//! and its marked processes.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::sync::watch;
use toolshed_core::env::ChildEnv;
use toolshed_core::output::{OutputSink, SinkOutput};

use super::sandbox::Confinement;

/// How long the pump keeps reading after the shell exited, for output still in the pipe.
pub(crate) const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);
/// How long a stopped command gets between SIGTERM and SIGKILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_millis(1000);
/// How long after the shell was reaped its process group id is still signalled.
const PGID_REUSE_GUARD: Duration = Duration::from_secs(5);
/// Size of one read from the output pipe.
const CHUNK: usize = 64 * 1024;
/// The terminal size a `tty: true` command sees.
const TTY_ROWS: u16 = 30;
const TTY_COLS: u16 = 120;

/// Variables that keep commands from waiting for a person: no pagers, no editors, no prompts,
/// no colour codes in the output.
pub(crate) const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("NO_COLOR", "1"),
    ("CLICOLOR", "0"),
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GH_PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GCM_INTERACTIVE", "never"),
    ("GIT_EDITOR", "true"),
    ("GIT_SEQUENCE_EDITOR", "true"),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("PIP_NO_INPUT", "1"),
    ("PYTHONUNBUFFERED", "1"),
    ("npm_config_yes", "true"),
    ("HOMEBREW_NO_AUTO_UPDATE", "1"),
    ("TOOLSHED", "1"),
];

/// What the command's standard input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StdinMode {
    /// `/dev/null`: reads see end of file at once.
    Closed,
    /// A pipe the caller can write to.
    Pipe,
    /// A pseudo-terminal (stdin, stdout and stderr), the command's controlling terminal.
    Tty,
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exit {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
}

impl Exit {
    fn from_status(status: std::process::ExitStatus) -> Self {
        Exit { code: status.code(), signal: status.signal() }
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Progress {
    bytes: u64,
    done: bool,
}

struct State {
    sink: OutputSink,
    exit: Option<Exit>,
    wait_error: Option<String>,
    reaped_at: Option<Instant>,
    /// How many processes the command left running were stopped when its shell ended.
    leftovers: usize,
}

/// The shell to run commands with: bash where it exists, else `sh`.
pub(crate) fn shell_path() -> &'static str {
    ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("/bin/sh")
}

/// A command that was started; see the module docs.
pub(crate) struct Run {
    pgid: i32,
    marker: String,
    tty: bool,
    started: Instant,
    state: Arc<Mutex<State>>,
    progress: watch::Receiver<Progress>,
    input: tokio::sync::Mutex<Option<AsyncFd<OwnedFd>>>,
}

/// What [`spawn`] needs.
pub(crate) struct SpawnRequest<'a> {
    /// The command text, run with `<shell> -c`.
    pub command: &'a str,
    /// The working directory.
    pub cwd: &'a Path,
    /// Standard input.
    pub stdin: StdinMode,
    /// The sandbox, if any.
    pub confinement: Option<Confinement>,
    /// Where output goes.
    pub sink: OutputSink,
    /// Which of toolshed's variables the command does not inherit.
    pub env: &'a ChildEnv,
}

/// Starts a command. Must be called inside a tokio runtime.
pub(crate) fn spawn(req: SpawnRequest<'_>) -> io::Result<Run> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = format!("{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
    let marker = format!("TOOLSHED_RUN_{id}");
    let tty = req.stdin == StdinMode::Tty;

    let mut cmd = std::process::Command::new(shell_path());
    cmd.arg("-c").arg(req.command).current_dir(req.cwd);
    req.env.apply(&mut cmd);
    cmd.env_remove("COLORTERM");
    for (key, value) in NON_INTERACTIVE_ENV {
        cmd.env(key, value);
    }
    cmd.env(OsStr::new(&marker), "1");

    let output;
    let mut input = None;
    let mut _pty_keepalive = None;
    if tty {
        let (master, slave) = open_pty()?;
        output = nonblocking_dup(master.as_raw_fd())?;
        input = Some(nonblocking_dup(master.as_raw_fd())?);
        cmd.stdin(Stdio::from(slave.try_clone()?)).stdout(Stdio::from(slave.try_clone()?)).stderr(Stdio::from(slave));
        _pty_keepalive = Some(master);
    } else {
        let (reader, writer) = std::io::pipe()?;
        cmd.stdout(Stdio::from(writer.try_clone()?)).stderr(Stdio::from(writer));
        output = nonblocking(OwnedFd::from(reader))?;
        match req.stdin {
            StdinMode::Pipe => {
                let (reader, writer) = std::io::pipe()?;
                cmd.stdin(Stdio::from(reader));
                input = Some(nonblocking(OwnedFd::from(writer))?);
            }
            _ => {
                cmd.stdin(Stdio::null());
            }
        }
    }

    // Before the command exists: a toolshed killed right after spawning it still takes it along.
    live::watchdog();
    let confinement = req.confinement;
    // The child sends its mount namespace over this socket once it is in it, so that toolshed
    // holds it even if the command is over before toolshed looks (a number freed is handed to
    // the next namespace made).
    let (ns_receiver, ns_sender) = namespace_channel()?;
    let ns_sender_fd = ns_sender.as_raw_fd();
    let ns_path = c"/proc/self/ns/mnt";
    // SAFETY: the closure runs in the child between fork and exec and only makes raw system
    // calls (setsid, ioctl, unshare, open/write/close on /proc/self, mount, statvfs, prctl,
    // landlock_restrict_self, seccomp) on data prepared before the fork: no allocation, no locks.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            // Orphaned descendants (a double fork) are reparented to the shell, so they stay in
            // its tree. Kept across exec.
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if tty && libc::ioctl(0, libc::TIOCSCTTY as _, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            if let Some(confinement) = &confinement {
                confinement.apply_in_child(Some(crate::sandbox::OwnPids { report: ns_sender_fd, own_group: true }))?;
            }
            send_namespace(ns_sender_fd, ns_path);
            Ok(())
        });
    }
    let mut child = tokio::process::Command::from(cmd).spawn()?;
    // `cmd` (moved into the tokio command, now dropped) held our copies of the child's ends of
    // the pipes; only the child has them now, so end of file means the child side closed.
    let pgid =
        child.id().map(|pid| pid as i32).ok_or_else(|| io::Error::other("the child exited before it had an id"))?;
    drop(_pty_keepalive);
    let output = register(output)?;
    let input = input.map(register).transpose()?;

    // The command's own mount namespace (entered between fork and exec, so there by now), where
    // it has one: every process it starts stays in it, whatever it does to its environment, its
    // session or its parent.
    drop(ns_sender);
    let namespace = receive_namespace(&ns_receiver);
    let state =
        Arc::new(Mutex::new(State { sink: req.sink, exit: None, wait_error: None, reaped_at: None, leftovers: 0 }));
    let (tx, progress) = watch::channel(Progress::default());
    live::add(pgid, &marker);
    let pump_state = state.clone();
    let pump_marker = marker.clone();
    tokio::spawn(async move {
        pump(&mut child, output, &pump_state, &tx).await;
        // What the command left running (`server &`, `setsid nohup ... &`) is stopped now: it
        // would act after every check made when the command ended (a `.git` with hooks made a
        // second later), and outlive toolshed too.
        // Where the command had a PID namespace of its own, its init stopped them and the
        // kernel killed them before the shell's parent ended; the init says how many.
        let stopped = stop_leftovers(&pump_marker, namespace.as_ref(), pgid) + receive_left(&ns_receiver);
        // Only now may the namespace go (and its number be handed to another command's).
        drop(namespace);
        lock(&pump_state).leftovers = stopped;
        live::remove(pgid, &pump_marker);
        tx.send_modify(|p| p.done = true);
    });
    Ok(Run { pgid, marker, tty, started: Instant::now(), state, progress, input: tokio::sync::Mutex::new(input) })
}

/// Opens a PTY pair with portable-pty; returns the master and a fresh slave fd opened by name
/// (so the child can be spawned with our own `pre_exec`: portable-pty's own spawn allocates
/// between fork and exec).
fn open_pty() -> io::Result<(Box<dyn portable_pty::MasterPty + Send>, OwnedFd)> {
    let size = portable_pty::PtySize { rows: TTY_ROWS, cols: TTY_COLS, pixel_width: 0, pixel_height: 0 };
    let pair = portable_pty::native_pty_system().openpty(size).map_err(|e| io::Error::other(e.to_string()))?;
    let name = pair.master.tty_name().ok_or_else(|| io::Error::other("the PTY has no device name"))?;
    let slave =
        std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC).open(name)?;
    drop(pair.slave);
    Ok((pair.master, OwnedFd::from(slave)))
}

fn register(fd: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: the AsyncFd owns `fd`, so it stays open and the same for the AsyncFd's lifetime.
    Ok(unsafe { AsyncFd::register(fd) }?)
}

fn nonblocking_dup(fd: Option<RawFd>) -> io::Result<OwnedFd> {
    let fd = fd.ok_or_else(|| io::Error::other("the PTY master has no file descriptor"))?;
    // SAFETY: duplicating a valid descriptor into a new, owned, close-on-exec one.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if dup < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `dup` is a fresh descriptor we own.
    nonblocking(unsafe { OwnedFd::from_raw_fd(dup) })
}

fn nonblocking(fd: OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(fd)
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn pump(
    child: &mut tokio::process::Child,
    output: AsyncFd<OwnedFd>,
    state: &Mutex<State>,
    tx: &watch::Sender<Progress>,
) {
    let mut buf = vec![0u8; CHUNK];
    let mut eof = false;
    let mut exited = false;
    let mut drain_deadline = tokio::time::Instant::now();
    while !(eof && exited) {
        tokio::select! {
            read = read_chunk(&output, &mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    lock(state).sink.push(&buf[..n]);
                    tx.send_modify(|p| p.bytes += n as u64);
                }
            },
            status = child.wait(), if !exited => {
                exited = true;
                drain_deadline = tokio::time::Instant::now() + DRAIN_AFTER_EXIT;
                let mut s = lock(state);
                s.reaped_at = Some(Instant::now());
                match status {
                    Ok(status) => s.exit = Some(Exit::from_status(status)),
                    Err(e) => s.wait_error = Some(e.to_string()),
                }
            },
            () = tokio::time::sleep_until(drain_deadline), if exited && !eof => break,
        }
    }
}

async fn read_chunk(fd: &AsyncFd<OwnedFd>, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        let mut guard = fd.readable().await?;
        let result = guard.try_io(|inner| {
            // SAFETY: reading into a buffer we own, of the length we pass.
            let n = unsafe { libc::read(inner.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
        });
        match result {
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Ok(result) => return result,
            Err(_would_block) => continue,
        }
    }
}

async fn write_all(fd: &AsyncFd<OwnedFd>, mut data: &[u8]) -> io::Result<()> {
    while !data.is_empty() {
        let mut guard = fd.writable().await?;
        let result = guard.try_io(|inner| {
            // SAFETY: writing from a buffer we own, of the length we pass.
            let n = unsafe { libc::write(inner.as_raw_fd(), data.as_ptr().cast(), data.len()) };
            if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
        });
        match result {
            Ok(Ok(n)) => data = &data[n..],
            Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Ok(Err(e)) => return Err(e),
            Err(_would_block) => {}
        }
    }
    Ok(())
}

impl Run {
    /// Whether the command runs on a PTY.
    pub(crate) fn is_tty(&self) -> bool {
        self.tty
    }

    /// Time since the command started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Whether the shell exited and its output was collected.
    pub(crate) fn is_done(&self) -> bool {
        self.progress.borrow().done
    }

    /// How the shell ended, once it did.
    pub(crate) fn exit(&self) -> Option<Exit> {
        lock(&self.state).exit
    }

    /// How many processes the command left running were stopped when its shell ended.
    pub(crate) fn stopped_leftovers(&self) -> usize {
        lock(&self.state).leftovers
    }

    /// Why waiting for the shell failed, if it did.
    pub(crate) fn wait_error(&self) -> Option<String> {
        lock(&self.state).wait_error.clone()
    }

    /// Waits until the shell exited and its output was collected.
    pub(crate) async fn wait_done(&self) {
        let mut rx = self.progress.clone();
        let _ = rx.wait_for(|p| p.done).await;
    }

    /// Hands over the output collected so far and starts collecting into `fresh`.
    pub(crate) fn take_output(&self, fresh: OutputSink) -> SinkOutput {
        let old = std::mem::replace(&mut lock(&self.state).sink, fresh);
        let mut out = old.finish();
        if self.tty {
            out.text = out.text.replace("\r\n", "\n");
        }
        out
    }

    /// Sends `signal` to every process carrying the marker, and to the process group unless the
    /// shell was reaped more than [`PGID_REUSE_GUARD`] ago (by then the id could belong to an
    /// unrelated group; pids are handed out sequentially, so not within seconds).
    pub(crate) fn signal(&self, signal: i32) {
        let reaped_at = lock(&self.state).reaped_at;
        if reaped_at.is_some_and(|t| t.elapsed() > PGID_REUSE_GUARD) {
            signal_marked(&self.marker, signal);
        } else {
            signal_all(self.pgid, &self.marker, signal);
        }
    }

    /// Stops the command and everything it started: SIGTERM, then SIGKILL after
    /// [`KILL_GRACE`] to whatever is left, then waits (briefly) for the output to be collected.
    pub(crate) async fn terminate(&self) {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            if self.is_done() && marked_pids(&self.marker).is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.signal(libc::SIGKILL);
        let _ = tokio::time::timeout(Duration::from_millis(500), self.wait_done()).await;
    }

    /// Writes `data` to the command's standard input; fails when it has none (closed) or the
    /// command does not read it within `limit`.
    pub(crate) async fn write_input(&self, data: &[u8], limit: Duration) -> io::Result<()> {
        let input = self.input.lock().await;
        let Some(fd) = input.as_ref() else {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "standard input is closed"));
        };
        match tokio::time::timeout(limit, write_all(fd, data)).await {
            Ok(result) => result,
            Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "the command did not read its input")),
        }
    }

    /// Closes standard input (end of file for a pipe; Ctrl-D for a terminal).
    pub(crate) async fn close_input(&self) -> io::Result<()> {
        if self.tty {
            return self.write_input(b"\x04", Duration::from_secs(1)).await;
        }
        self.input.lock().await.take();
        Ok(())
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !self.is_done() {
            self.signal(libc::SIGKILL);
        }
    }
}

fn signal_all(pgid: i32, marker: &str, signal: i32) {
    if signal != libc::SIGKILL {
        // Each process once (the shell's descendants, its group, the marked), so that a handler
        // (`trap ... TERM`) runs once, as it would for one `kill`.
        let (mut targets, group) = descendants_and_group(pgid);
        targets.extend(group);
        targets.extend(marked_pids(marker));
        targets.sort_unstable();
        targets.dedup();
        for pid in targets {
            // SAFETY: kill(2) of one process; errors (ESRCH) are fine.
            unsafe {
                libc::kill(pid, signal);
            }
        }
        return;
    }
    // The shell's descendants first, while the tree still leads to them (the shell is the
    // group leader: its pid is the group's id).
    for pid in descendants(pgid) {
        // SAFETY: kill(2) of one process; errors (ESRCH) are fine.
        unsafe {
            libc::kill(pid, signal);
        }
    }
    // The group (errors, an empty group, are fine); never one whose id the kernel has handed to
    // a process that is not ours since the shell was reaped.
    if let Ok(pgid) = u32::try_from(pgid) {
        toolshed_process::signal_group(pgid, signal);
    }
    signal_marked(marker, signal);
}

/// The processes descended from `root` (not `root` itself), and those in the process group
/// `root` (the group leader included), from `/proc/*/stat`.
fn descendants_and_group(root: i32) -> (Vec<i32>, Vec<i32>) {
    let Ok(entries) = std::fs::read_dir("/proc") else { return (Vec::new(), Vec::new()) };
    let mut parent_of: Vec<(i32, i32)> = Vec::new();
    let mut group = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // `pid (comm) state ppid pgrp ...`: the name may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let mut fields = after.split_whitespace().skip(1);
        if let Some(ppid) = fields.next().and_then(|p| p.parse::<i32>().ok()) {
            parent_of.push((pid, ppid));
        }
        if fields.next().and_then(|g| g.parse::<i32>().ok()) == Some(root) {
            group.push(pid);
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == parent).map(|(pid, _)| *pid));
        i += 1;
    }
    found.remove(0);
    (found, group)
}

/// The processes descended from `root` (not `root` itself), from `/proc/*/stat`.
pub(crate) fn descendants(root: i32) -> Vec<i32> {
    descendants_and_group(root).0
}

/// A command's own mount namespace, held open: a namespace's number is handed to a new one once
/// it is gone, so it must not go while processes are looked for by it.
pub(crate) struct Namespace {
    _held: std::fs::File,
    id: (u64, u64),
}

/// The identity (device, inode) of a namespace file.
fn namespace_id(path: &str) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// A datagram socket pair (both ends close on exec): toolshed's end, the child's end.
pub(crate) fn namespace_channel() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: socketpair writes two descriptors into `fds`, which we then own.
    unsafe {
        if libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// Room for one descriptor's control message.
#[repr(C, align(8))]
struct ControlBuffer([u8; 64]);

/// Sends an open descriptor of `path` (the child's mount namespace) over `socket`. Runs between
/// fork and exec: raw system calls on the stack only; a failure is left unreported (toolshed
/// then finds what the command leaves running by its marker).
///
/// # Safety
/// `path` must be NUL-terminated; `socket` a datagram socket.
pub(crate) unsafe fn send_namespace(socket: RawFd, path: &std::ffi::CStr) {
    // SAFETY: plain system calls on stack buffers that outlive them.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let mut byte = [0u8; 1];
        let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
        let mut buffer = ControlBuffer([0; 64]);
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = buffer.0.as_mut_ptr().cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if !cmsg.is_null() {
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd);
            libc::sendmsg(socket, &msg, 0);
        }
        libc::close(fd);
    }
}

/// The mount namespace the child sent ([`send_namespace`]), held, when it is not toolshed's own.
pub(crate) fn receive_namespace(socket: &OwnedFd) -> Option<Namespace> {
    use std::os::unix::fs::MetadataExt;
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    let mut buffer = ControlBuffer([0; 64]);
    // SAFETY: recvmsg fills the stack buffers described by `msg`; a descriptor it passes is
    // owned from here on.
    let held = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = buffer.0.as_mut_ptr().cast();
        msg.msg_controllen = buffer.0.len() as _;
        if libc::recvmsg(socket.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) < 1 {
            return None;
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null() || (*cmsg).cmsg_level != libc::SOL_SOCKET || (*cmsg).cmsg_type != libc::SCM_RIGHTS {
            return None;
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
        std::fs::File::from(OwnedFd::from_raw_fd(fd))
    };
    let meta = held.metadata().ok()?;
    let id = (meta.dev(), meta.ino());
    (Some(id) != namespace_id("/proc/self/ns/mnt")).then_some(Namespace { _held: held, id })
}

/// The datagram a command's init sends on the namespace socket when the command ended with
/// processes left in its PID namespace (`sandbox/init.rs`): this tag, then how many it stopped
/// (u32, little-endian) before the kernel killed them.
pub(crate) const LEFT_TAG: &[u8; 4] = b"LEFT";

/// How many processes the command's init reported stopped ([`LEFT_TAG`]), from what is queued
/// on the namespace socket (other messages are dropped).
pub(crate) fn receive_left(socket: &OwnedFd) -> usize {
    let mut total = 0usize;
    loop {
        let mut message = [0u8; 8];
        // SAFETY: recv into a stack buffer of its length.
        let n =
            unsafe { libc::recv(socket.as_raw_fd(), message.as_mut_ptr().cast(), message.len(), libc::MSG_DONTWAIT) };
        if n < 0 {
            return total;
        }
        if n == 8 && &message[..4] == LEFT_TAG {
            let count = u32::from_le_bytes([message[4], message[5], message[6], message[7]]);
            total = total.saturating_add(count as usize);
        }
    }
}

/// Kills (SIGKILL) every process left of a command whose shell ended: those in its mount
/// `namespace`, those still in its process group `pgid` (a group's id is not handed out again
/// while a process is in it), and those carrying its `marker`. A process that cleared its
/// environment, left the group and entered namespaces of its own escapes. They are stopped
/// (SIGSTOP) as they are found, round after round until no new one appears, so that one forking
/// as fast as it can cannot outrun the search; then killed. Returns how many.
pub(crate) fn stop_leftovers(marker: &str, namespace: Option<&Namespace>, pgid: i32) -> usize {
    let mut stopped: Vec<i32> = Vec::new();
    for round in 0..200 {
        let found: Vec<i32> =
            leftovers(marker, namespace, pgid).into_iter().filter(|pid| !stopped.contains(pid)).collect();
        for &pid in &found {
            // SAFETY: kill(2) of one process; errors (ESRCH: gone already) are fine.
            unsafe {
                libc::kill(pid, libc::SIGSTOP);
            }
        }
        let none = found.is_empty();
        stopped.extend(found);
        // After the first look, the group all at once: a chain of processes each forking and
        // exiting faster than /proc can be read stays in it (unless it starts a session of its
        // own). Never a group whose id now belongs to a process that is not ours.
        if round == 0 {
            if let Ok(group) = u32::try_from(pgid) {
                toolshed_process::signal_group(group, libc::SIGKILL);
            }
            continue;
        }
        if none {
            break;
        }
    }
    for &pid in &stopped {
        // SAFETY: as above.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    // A killed process dies when the kernel next runs it: wait (a little) until they are
    // gone, so that nothing of the command is left when its result is returned.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
    while stopped.iter().any(|&pid| alive(pid)) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    stopped.len()
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let state = stat.rfind(')').and_then(|i| stat[i + 1..].split_whitespace().next()).unwrap_or("Z");
    !(state.starts_with('Z') || state.starts_with('X'))
}

/// The live processes (other than toolshed) in `namespace`, in the group `pgid`, or carrying
/// `marker` in their environment.
fn leftovers(marker: &str, namespace: Option<&Namespace>, pgid: i32) -> Vec<i32> {
    let me = std::process::id() as i32;
    let needle = format!("{marker}=");
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            // `pid (comm) state ppid pgrp ...`: the name may hold spaces and parentheses.
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else { return false };
            let mut fields = after.split_whitespace();
            let state = fields.next().unwrap_or("Z");
            let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
            if state.starts_with('Z') || state.starts_with('X') {
                return false;
            }
            group == Some(pgid)
                || namespace.is_some_and(|ns| namespace_id(&format!("/proc/{pid}/ns/mnt")) == Some(ns.id))
                || (!marker.is_empty()
                    && std::fs::read(format!("/proc/{pid}/environ"))
                        .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var.starts_with(needle.as_bytes()))))
        })
        .collect()
}

fn signal_marked(marker: &str, signal: i32) {
    for pid in marked_pids(marker) {
        // SAFETY: as above, for one process.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// Processes (other than this one) whose environment holds `marker=`.
pub(crate) fn marked_pids(marker: &str) -> Vec<i32> {
    let needle = format!("{marker}=");
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()))
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|var| var.starts_with(needle.as_bytes())))
        })
        .collect()
}

/// Commands still running, so they can be killed when toolshed exits (`atexit`, which also
/// runs on `std::process::exit`).
mod live {
    use super::*;

    static LIVE: Mutex<Vec<(i32, String)>> = Mutex::new(Vec::new());
    static HOOK: Once = Once::new();

    pub(super) fn add(pgid: i32, marker: &str) {
        HOOK.call_once(|| {
            // SAFETY: registering a plain `extern "C"` function.
            unsafe {
                libc::atexit(kill_all_at_exit);
            }
        });
        LIVE.lock().unwrap_or_else(PoisonError::into_inner).push((pgid, marker.to_string()));
        tell_watchdog(&format!("+ {pgid} {marker}\n"));
    }

    pub(super) fn remove(pgid: i32, marker: &str) {
        LIVE.lock().unwrap_or_else(PoisonError::into_inner).retain(|(p, m)| !(*p == pgid && m == marker));
        tell_watchdog(&format!("- {pgid} {marker}\n"));
    }

    /// The watchdog's script: reads `+ PGID MARKER` / `- PGID MARKER` lines; at end of file
    /// (toolshed is gone) stops every listed group, then kills the groups, every descendant of
    /// their leaders, and every process whose environment holds a listed marker.
    const WATCHDOG: &str = r#"trap '' HUP INT TERM QUIT PIPE USR1 USR2 ALRM
groups=' '
markers=' '
while read -r op g m; do
  case $op in
    +) case $groups in *" $g "*) ;; *) groups="$groups$g "; markers="$markers$m " ;; esac ;;
    -) case $groups in *" $g "*) groups="${groups%% $g *} ${groups#* $g }" ;; esac
       case $markers in *" $m "*) markers="${markers%% $m *} ${markers#* $m }" ;; esac ;;
  esac
done
[ -z "${groups# }" ] && exit 0
for g in $groups; do kill -STOP -- "-$g" 2>/dev/null; done
# Freeze first, kill last: a process found is stopped before it can fork again, and a round
# repeats the scan from everything found so far (a child forked during the scan, an orphan
# reparented to a stopped shell).
found=' '
round=0
while [ $round -lt 6 ]; do
  round=$((round + 1))
  new=$(awk -v roots="$groups $found" -v me="$$" '
    FNR == 1 {
      line = $0; off = 0; s = line
      while ((j = index(s, ")")) > 0) { off += j; s = substr(s, j + 1) }
      n = split(substr(line, off + 2), a, " ")
      if (n >= 3) { pp[$1] = a[2]; pg[$1] = a[3] }
    }
    END {
      split(roots, r, " "); for (i in r) if (r[i] != "") want[r[i]] = 1
      for (p in pg) if (pg[p] in want) take[p] = 1
      changed = 1
      while (changed) { changed = 0; for (p in pp) if (!(p in take) && ((pp[p] in want) || (pp[p] in take))) { take[p] = 1; changed = 1 } }
      for (p in take) if (p != me && !(p in want)) print p
    }' /proc/[0-9]*/stat 2>/dev/null)
  for m in $markers; do
    new="$new $(grep -las -- "$m=" /proc/[0-9]*/environ 2>/dev/null | sed 's#^/proc/\([0-9]*\)/environ$#\1#')"
  done
  added=0
  for p in $new; do
    case $found in *" $p "*) ;; *) [ "$p" != "$$" ] && { found="$found$p "; kill -STOP "$p" 2>/dev/null; added=1; } ;; esac
  done
  [ $added = 0 ] && break
done
for p in $found; do kill -KILL "$p" 2>/dev/null; done
for g in $groups; do kill -KILL -- "-$g" 2>/dev/null; kill -CONT -- "-$g" 2>/dev/null; done
exit 0
"#;

    /// The pipe to the watchdog, once started (`None` if it could not be).
    static WATCHDOG_PIPE: Mutex<Option<Option<std::fs::File>>> = Mutex::new(None);

    /// Starts the watchdog if it is not running yet.
    pub(super) fn watchdog() {
        let mut pipe = WATCHDOG_PIPE.lock().unwrap_or_else(PoisonError::into_inner);
        if pipe.is_some() {
            return;
        }
        *pipe = Some(start_watchdog(0).ok());
    }

    /// A watchdog killed by a signal (a command may try) is started again at once and told of
    /// every command still running; one that keeps dying within a second of its start is given up.
    fn respawn_when_killed(mut child: std::process::Child, started: Instant, quick_deaths: u32) {
        std::thread::spawn(move || {
            let Ok(status) = child.wait() else { return };
            if status.signal().is_none() {
                return; // End of its input: toolshed is exiting.
            }
            let quick = if started.elapsed() < Duration::from_secs(1) { quick_deaths + 1 } else { 0 };
            let mut pipe = WATCHDOG_PIPE.lock().unwrap_or_else(PoisonError::into_inner);
            let fresh = if quick > 5 { None } else { start_watchdog(quick).ok() };
            *pipe = Some(fresh);
            if let Some(Some(file)) = pipe.as_mut() {
                use std::io::Write;
                let live = LIVE.lock().unwrap_or_else(PoisonError::into_inner).clone();
                for (pgid, marker) in live {
                    let _ = file.write_all(format!("+ {pgid} {marker}\n").as_bytes());
                }
            }
        });
    }

    fn start_watchdog(quick_deaths: u32) -> io::Result<std::fs::File> {
        let (reader, writer) = std::io::pipe()?;
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c").arg(WATCHDOG).arg("toolshed-watchdog");
        cmd.stdin(Stdio::from(reader)).stdout(Stdio::null()).stderr(Stdio::null());
        cmd.env_clear().env("PATH", "/usr/bin:/bin:/usr/sbin:/sbin").env("LC_ALL", "C");
        // SAFETY: only setsid(2) between fork and exec: out of toolshed's process group, so a
        // signal to the group (Ctrl-C, `kill -- -PGID`) does not take the watchdog first.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        // Waited for by a thread of its own, which starts it again if a signal killed it; it
        // outlives toolshed by design (then init reaps it).
        respawn_when_killed(child, Instant::now(), quick_deaths);
        let file = std::fs::File::from(OwnedFd::from(writer));
        // A stuck watchdog must never block a command: writes that would block are dropped.
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let fd = file.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        Ok(file)
    }

    fn tell_watchdog(line: &str) {
        use std::io::Write;
        if let Some(Some(pipe)) = WATCHDOG_PIPE.lock().unwrap_or_else(PoisonError::into_inner).as_mut() {
            let _ = pipe.write_all(line.as_bytes());
        }
    }

    /// Kills every command still running. Also what happens at exit.
    pub(crate) fn kill_all() {
        let live = match LIVE.try_lock() {
            Ok(live) => live,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        for (pgid, marker) in live.iter() {
            signal_all(*pgid, marker, libc::SIGKILL);
        }
    }

    extern "C" fn kill_all_at_exit() {
        kill_all();
        // What a session made of the protected paths it may not create goes too (see
        // `session.rs`): nobody polls it any more.
        crate::session::sweep_all_watched();
    }
}

pub(crate) use live::kill_all;
