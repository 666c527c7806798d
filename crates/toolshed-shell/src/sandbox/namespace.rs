//! Read-only binds of the protected paths in a private mount namespace (Linux).
//!
//! Landlock cannot take a subtree back out of a writable tree, so in `workspace-write` the child
//! enters a mount namespace of its own before Landlock is applied — `unshare(CLONE_NEWNS)` where
//! toolshed may (root), else a user namespace too (`CLONE_NEWUSER`, mapping the caller's uid and
//! gid to themselves) — makes every mount private (`MS_REC | MS_PRIVATE`, first, so nothing can
//! propagate back to the host), then bind-mounts each protected path onto itself and remounts
//! the bind read-only, keeping the flags a user namespace may not change (`nosuid`, `nodev`,
//! `noexec`, the atime mode). Writes there fail with `EROFS`; renaming or removing a mount point
//! fails with `EBUSY`; Landlock keeps the command from changing mounts itself.
//!
//! Everything the child does is a raw system call on data prepared in the parent.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::NamespaceSupport;

/// See [`super::namespaces`].
pub(super) fn support() -> &'static NamespaceSupport {
    static SUPPORT: OnceLock<NamespaceSupport> = OnceLock::new();
    SUPPORT.get_or_init(probe)
}

/// Whether a command that gets a mount namespace can have a PID namespace of its own too, with
/// a `/proc` of its own mounted in it (found by the same probe). Without that `/proc`, a
/// command's processes would read another process's files by their own numbers
/// (`/proc/$$/status`), so no PID namespace is made.
pub(super) fn pid_namespaces() -> bool {
    support();
    PIDS.get().copied().unwrap_or(false)
}

static PIDS: OnceLock<bool> = OnceLock::new();

/// The uid and gid maps a child writes after `unshare(CLONE_NEWUSER)`, prebuilt.
struct UserMaps {
    setgroups: CString,
    uid_map: CString,
    gid_map: CString,
    uid_line: Vec<u8>,
    gid_line: Vec<u8>,
}

impl UserMaps {
    fn for_caller() -> Result<UserMaps, String> {
        let c = |s: &str| CString::new(s).map_err(|e| e.to_string());
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Ok(UserMaps {
            setgroups: c("/proc/self/setgroups")?,
            uid_map: c("/proc/self/uid_map")?,
            gid_map: c("/proc/self/gid_map")?,
            uid_line: format!("{uid} {uid} 1\n").into_bytes(),
            gid_line: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }
}

/// Read-only binds ready to apply in a child.
pub(crate) struct Binds {
    paths: Vec<CString>,
    /// Directories bound onto themselves first, as they are: a mount point cannot be renamed or
    /// removed (`EBUSY`), so a directory between a writable root and a protected path cannot be
    /// moved away and replaced by one without the protection (`mv dotfiles old; mkdir dotfiles`).
    pins: Vec<CString>,
    user: Option<UserMaps>,
    root: CString,
    /// A PID namespace may come with the mount namespace ([`pid_namespaces`]).
    pids: bool,
    /// toolshed's data directory, hidden but for what the process needs of it.
    hidden: Option<Hidden>,
    /// The sockets of servers outside and the block devices, each covered by `/dev/null`
    /// ([`super::sockets`]).
    sockets: Vec<CString>,
    /// Those sockets, for the model.
    pub(crate) covered: Vec<PathBuf>,
    /// The paths, for the model and the permission request.
    pub(crate) shown: Vec<PathBuf>,
    /// The home directory, bound read-only after everything else with what is mounted in it
    /// (the writable directories in it among the pins): see [`super::read_only_home`].
    home: Option<CString>,
    /// The same, for the model.
    pub(crate) home_path: Option<PathBuf>,
}

/// At most this many directories show through a hidden directory ([`Hidden`]): the child keeps
/// their file descriptors in a fixed array.
const MAX_SHOWN: usize = 32;

/// A directory (toolshed's data directory: the transcripts in `sessions.db`, the worktrees'
/// snapshots, the trust records) hidden from a confined process behind an empty read-only
/// `tmpfs`, with a few directories under it shown through: each is opened before the `tmpfs`
/// covers it and bound, by its descriptor (`/proc/self/fd/N`), onto a directory made for it in
/// the `tmpfs`. A directory that does not exist yet is hidden all the same (it is made first).
pub(crate) struct Hidden {
    dir: CString,
    /// The directories to make in the `tmpfs`, shallowest first.
    made: Vec<CString>,
    /// The directories shown through, and whether read-only (otherwise as they are).
    shown: Vec<(CString, bool)>,
}

impl Hidden {
    /// `dir` hidden, with `show` (each a directory and whether it is shown read-only) shown
    /// through where they lie under it and exist. `None` when there is nothing sensible to
    /// hide: `dir` is `/`, holds the home directory, or is itself one of `show`.
    pub(crate) fn new(dir: &Path, show: &[(PathBuf, bool)], home: Option<&Path>) -> Result<Option<Hidden>, String> {
        if dir.parent().is_none() || !dir.is_absolute() || home.is_some_and(|h| h.starts_with(dir)) {
            return Ok(None);
        }
        if show.iter().any(|(p, _)| p == dir) {
            return Ok(None);
        }
        if !dir.is_dir() {
            use std::os::unix::fs::DirBuilderExt as _;
            // Where it does not exist, a command that may write where it would be could make it
            // (and records in it); toolshed makes it first, as its own.
            let _ = std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir);
            if !dir.is_dir() {
                return Ok(None);
            }
        }
        let mut under: Vec<(PathBuf, bool)> = Vec::new();
        for (path, read_only) in show {
            if path.starts_with(dir) && path.is_dir() && !under.iter().any(|(p, _)| p == path) {
                under.push((path.clone(), *read_only));
            }
        }
        // What lies inside another shown directory comes with it.
        let all = under.clone();
        under.retain(|(p, _)| !all.iter().any(|(q, _)| p != q && p.starts_with(q)));
        if under.len() > MAX_SHOWN {
            return Err(format!("more than {MAX_SHOWN} directories to show under {}", dir.display()));
        }
        under.sort_by_key(|(p, _)| p.components().count());
        let mut made: Vec<PathBuf> = Vec::new();
        for (path, _) in &under {
            let mut ancestors: Vec<&Path> = path.ancestors().take_while(|a| *a != dir).collect();
            ancestors.reverse();
            for a in ancestors {
                if !made.iter().any(|m| m == a) {
                    made.push(a.to_path_buf());
                }
            }
        }
        made.sort_by_key(|p| p.components().count());
        Ok(Some(Hidden {
            dir: cstring(dir)?,
            made: made.iter().map(|p| cstring(p)).collect::<Result<_, _>>()?,
            shown: under.iter().map(|(p, ro)| Ok((cstring(p)?, *ro))).collect::<Result<_, String>>()?,
        }))
    }

    /// Covers the directory and shows the chosen ones through. Runs in the child, in its own
    /// mount namespace, between `fork` and `exec`: raw system calls on prepared data and stack
    /// buffers only.
    fn apply_in_child(&self) -> io::Result<()> {
        let mut fds = [-1 as libc::c_int; MAX_SHOWN];
        let result = self.cover(&mut fds);
        for fd in fds.into_iter().filter(|fd| *fd >= 0) {
            // SAFETY: a descriptor this function opened.
            unsafe { libc::close(fd) };
        }
        result
    }

    fn cover(&self, fds: &mut [libc::c_int; MAX_SHOWN]) -> io::Result<()> {
        // SAFETY: raw system calls on NUL-terminated strings prepared before the fork and on
        // stack buffers.
        unsafe {
            for (i, (path, _)) in self.shown.iter().enumerate() {
                // Opened before the `tmpfs` covers it; one that vanished since is not shown.
                fds[i] = libc::open(path.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC);
            }
            let hidden_flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
            check(libc::mount(
                c"tmpfs".as_ptr(),
                self.dir.as_ptr(),
                c"tmpfs".as_ptr(),
                hidden_flags,
                c"mode=0755,size=16k,nr_inodes=256".as_ptr().cast(),
            ))?;
            for dir in &self.made {
                if libc::mkdir(dir.as_ptr(), 0o755) != 0
                    && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
                {
                    return Err(io::Error::last_os_error());
                }
            }
            for (i, (path, read_only)) in self.shown.iter().enumerate() {
                if fds[i] < 0 {
                    continue;
                }
                let mut source = [0u8; 32];
                fd_path(fds[i], &mut source);
                check(libc::mount(
                    source.as_ptr().cast(),
                    path.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                ))?;
                if *read_only {
                    remount_read_only(path)?;
                }
            }
            check(libc::mount(
                std::ptr::null(),
                self.dir.as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | hidden_flags,
                std::ptr::null(),
            ))
        }
    }
}

/// Binds `/dev/null` onto the socket or device at `path`: `connect` is refused there, and a
/// read gives nothing. One gone since the list was read, or one this process cannot reach
/// anyway, needs nothing.
fn cover_with_null(path: &CString) -> io::Result<()> {
    // SAFETY: a raw system call on NUL-terminated strings.
    let rc =
        unsafe { libc::mount(c"/dev/null".as_ptr(), path.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()) };
    match check(rc) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR | libc::EACCES | libc::ELOOP)) => Ok(()),
        other => other,
    }
}

/// Writes `/proc/self/fd/<fd>` and a NUL into `buf` (no allocation).
fn fd_path(fd: libc::c_int, buf: &mut [u8; 32]) {
    const PREFIX: &[u8] = b"/proc/self/fd/";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let len = super::init::decimal(fd, &mut buf[PREFIX.len()..]);
    buf[PREFIX.len() + len] = 0;
}

impl Binds {
    /// Binds of `paths` for a child, by the means `support` found, after `pins`
    /// ([`Binds::pins`], shallowest first); with no paths, the namespace alone. `None` when
    /// namespaces are unavailable.
    pub(crate) fn new(
        paths: &[PathBuf],
        pins: &[PathBuf],
        support: &NamespaceSupport,
        hidden: Option<Hidden>,
        sockets: &[PathBuf],
        devices: &[PathBuf],
    ) -> Result<Option<Binds>, String> {
        let user = match support {
            NamespaceSupport::Mount => None,
            NamespaceSupport::UserAndMount => Some(UserMaps::for_caller()?),
            NamespaceSupport::Missing { .. } => return Ok(None),
        };
        let paths_c = paths.iter().map(|p| cstring(p)).collect::<Result<Vec<_>, _>>()?;
        let mut pins = pins.to_vec();
        pins.sort_by_key(|p| p.components().count());
        let pins = pins.iter().map(|p| cstring(p)).collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Binds {
            paths: paths_c,
            pins,
            user,
            root: cstring(Path::new("/"))?,
            pids: pid_namespaces(),
            hidden,
            sockets: sockets.iter().chain(devices).map(|p| cstring(p)).collect::<Result<_, _>>()?,
            covered: sockets.to_vec(),
            shown: paths.to_vec(),
            home: None,
            home_path: None,
        }))
    }

    /// These binds with the home directory `home` bound read-only last, if given: bound with
    /// what is mounted in it (`MS_REC`), its writable directories, pinned before, stay writable.
    pub(crate) fn with_read_only_home(mut self, home: Option<&Path>) -> Result<Binds, String> {
        self.home = home.map(cstring).transpose()?;
        self.home_path = home.map(Path::to_path_buf);
        Ok(self)
    }

    /// Enters the namespace and makes the binds. With `pids`, the
    /// command gets a PID namespace of its own too, with an init that ends everything in it
    /// when the command ends ([`super::init`]) where the kernel allows it. Runs between `fork`
    /// and `exec`: raw system calls only.
    pub(crate) fn apply_in_child(&self, pids: Option<super::OwnPids>) -> io::Result<()> {
        let own_pids = enter(self.user.as_ref(), &self.root, self.pids && pids.is_some())?;
        for path in &self.pins {
            bind(path)?;
        }
        for path in &self.paths {
            bind_read_only(path)?;
        }
        for socket in &self.sockets {
            cover_with_null(socket)?;
        }
        if let Some(hidden) = &self.hidden {
            hidden.apply_in_child()?;
        }
        if let Some(home) = &self.home {
            bind_read_only(home)?;
        }
        {
            // The working directory was entered before the binds (`Command::current_dir` runs
            // before this hook): it still names the directory as it was, under a pin's mount or
            // inside a bound directory itself (`workdir` = `.git/hooks`), from where what is
            // bound read-only would stay writable. Entering it again by its path walks through
            // the new mounts.
            let mut buf = [0u8; 4096];
            // SAFETY: getcwd writes at most `buf.len()` bytes, NUL-terminated, into the buffer;
            // chdir reads that NUL-terminated path.
            unsafe {
                if libc::getcwd(buf.as_mut_ptr().cast(), buf.len()).is_null() {
                    return Err(io::Error::last_os_error());
                }
                check(libc::chdir(buf.as_ptr().cast()))?;
            }
        }
        if let (true, Some(pids)) = (own_pids, pids) {
            // SAFETY: between fork and exec, right after an unshare with CLONE_NEWPID.
            unsafe { super::init::split(pids)? };
        }
        Ok(())
    }
}

fn cstring(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| format!("{} contains a NUL byte", path.display()))
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// A new mount namespace (and user namespace when `user` is given), every mount private; with
/// `pids`, a PID namespace for the children too where the kernel allows it (whether it did).
fn enter(user: Option<&UserMaps>, root: &CString, pids: bool) -> io::Result<bool> {
    let base = if user.is_some() { libc::CLONE_NEWUSER | libc::CLONE_NEWNS } else { libc::CLONE_NEWNS };
    // SAFETY: raw system calls on NUL-terminated strings and buffers that outlive them.
    unsafe {
        // A kernel without PID namespaces, or out of them (user.max_pid_namespaces), still
        // gives the mount namespace: what the command leaves running is then found by it.
        let own_pids = pids && libc::unshare(base | libc::CLONE_NEWPID) == 0;
        if !own_pids {
            check(libc::unshare(base))?;
        }
        if let Some(maps) = user {
            // A non-dumpable process (toolshed hides its environment that way) may not
            // write its own maps: /proc/self belongs to root then. Dumpable just for these
            // writes; `exec` makes the command dumpable anyway.
            let dumpable = libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0);
            if dumpable == 0 {
                check(libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0))?;
            }
            let written = write_file(&maps.setgroups, b"deny")
                .and_then(|()| write_file(&maps.uid_map, &maps.uid_line))
                .and_then(|()| write_file(&maps.gid_map, &maps.gid_line));
            if dumpable == 0 {
                check(libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0))?;
            }
            written?;
        }
        check(libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        Ok(own_pids)
    }
}

/// Writes `data` to a `/proc` file in one `write`.
unsafe fn write_file(path: &CString, data: &[u8]) -> io::Result<()> {
    // SAFETY: (the caller's) a valid path; the fd is ours until closed.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let error = io::Error::last_os_error();
        libc::close(fd);
        if n != data.len() as isize {
            return Err(error);
        }
    }
    Ok(())
}

// The statvfs flags (include/linux/statfs.h); libc names them on glibc only.
const ST_NOSUID: u64 = 0x0002;
const ST_NODEV: u64 = 0x0004;
const ST_NOEXEC: u64 = 0x0008;
const ST_NOATIME: u64 = 0x0400;
const ST_NODIRATIME: u64 = 0x0800;
const ST_RELATIME: u64 = 0x1000;
const ST_NOSYMFOLLOW: u64 = 0x2000;

/// Binds `path` onto itself, as it is (what is mounted below it too).
fn bind(path: &CString) -> io::Result<()> {
    // SAFETY: a raw system call on a NUL-terminated path.
    unsafe {
        check(libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        ))
    }
}

/// Binds `path` onto itself and remounts the bind read-only with the flags of the mount it
/// came from (a user namespace may not drop `nosuid`, `nodev`, `noexec` or change the atime mode).
fn bind_read_only(path: &CString) -> io::Result<()> {
    bind(path)?;
    remount_read_only(path)
}

/// Remounts the bind at `path` read-only with the flags of the mount it came from.
fn remount_read_only(path: &CString) -> io::Result<()> {
    // SAFETY: raw system calls on a NUL-terminated path and a stack buffer.
    unsafe {
        // glibc's and musl's statvfs are one statfs system call on kernels that report mount
        // flags (2.6.36 on).
        let mut stat: libc::statvfs = std::mem::zeroed();
        check(libc::statvfs(path.as_ptr(), &mut stat))?;
        let have = stat.f_flag as u64;
        let mut flags = libc::MS_BIND | libc::MS_REMOUNT | libc::MS_RDONLY;
        for (st, ms) in [
            (ST_NOSUID, libc::MS_NOSUID),
            (ST_NODEV, libc::MS_NODEV),
            (ST_NOEXEC, libc::MS_NOEXEC),
            (ST_NOATIME, libc::MS_NOATIME),
            (ST_NODIRATIME, libc::MS_NODIRATIME),
            (ST_RELATIME, libc::MS_RELATIME),
            (ST_NOSYMFOLLOW, libc::MS_NOSYMFOLLOW),
        ] {
            if have & st != 0 {
                flags |= ms;
            }
        }
        if have & (ST_NOATIME | ST_RELATIME) == 0 {
            flags |= libc::MS_STRICTATIME;
        }
        check(libc::mount(std::ptr::null(), path.as_ptr(), std::ptr::null(), flags, std::ptr::null()))
    }
}

fn probe() -> NamespaceSupport {
    // Any directory that surely exists will do: the bind lives and dies in the probe's namespace.
    let dir = std::env::temp_dir();
    let dir = if dir.is_dir() { dir } else { PathBuf::from("/") };
    let scratch = match cstring(&dir).and_then(|dir| Ok((dir, cstring(Path::new("/"))?))) {
        Ok(s) => s,
        Err(e) => return NamespaceSupport::Missing { reason: e },
    };
    let privileged = try_in_child(None, &scratch);
    if let Ok(pids) = privileged {
        let _ = PIDS.set(pids);
        return NamespaceSupport::Mount;
    }
    let user = match UserMaps::for_caller() {
        Ok(maps) => try_in_child(Some(&maps), &scratch),
        Err(e) => return NamespaceSupport::Missing { reason: e },
    };
    match (privileged, user) {
        (_, Ok(pids)) => {
            let _ = PIDS.set(pids);
            NamespaceSupport::UserAndMount
        }
        (Err(mount), Err(user)) => NamespaceSupport::Missing {
            reason: format!(
                "a private mount namespace failed ({mount}) and so did a user namespace ({user}); unprivileged user namespaces may be disabled (sysctl user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns)"
            ),
        },
        (Ok(_), _) => NamespaceSupport::Mount,
    }
}

/// The probe's exit code when the mount namespace works but a PID namespace with its own
/// `/proc` does not (no errno is this large).
const NO_PIDS: i32 = 255;

/// Forks a child that enters the namespaces (a PID namespace too, where it can) and binds
/// `scratch.0` read-only, and a grandchild that mounts a `/proc` in that PID namespace; the
/// child exits with 0, [`NO_PIDS`], or the errno of the step that failed. Whether the PID
/// namespace worked.
fn try_in_child(user: Option<&UserMaps>, scratch: &(CString, CString)) -> Result<bool, io::Error> {
    // SAFETY: the child makes raw system calls only and leaves with `_exit`; the parent waits
    // for it.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            let code = match enter(user, &scratch.1, true).and_then(|pids| bind_read_only(&scratch.0).map(|()| pids)) {
                Ok(true) if proc_mounts_in_child() => 0,
                Ok(_) => NO_PIDS,
                Err(e) => e.raw_os_error().unwrap_or(libc::EINVAL).clamp(1, NO_PIDS - 1),
            };
            libc::_exit(code);
        }
        match wait_for(pid) {
            Some(0) => Ok(true),
            Some(NO_PIDS) => Ok(false),
            Some(errno) => Err(io::Error::from_raw_os_error(errno)),
            None => Err(io::Error::other("the probe died")),
        }
    }
}

/// In a child that just entered a PID namespace: whether its first process (a grandchild) can
/// mount a `/proc` of that namespace.
unsafe fn proc_mounts_in_child() -> bool {
    // SAFETY: raw system calls; the grandchild leaves with `_exit`.
    unsafe {
        let pid = libc::fork();
        if pid < 0 {
            return false;
        }
        if pid == 0 {
            let mounted = libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) == 0;
            libc::_exit(if mounted && libc::getpid() == 1 { 0 } else { 1 });
        }
        wait_for(pid) == Some(0)
    }
}

/// Waits for the child `pid`; its exit code, `None` if it did not exit (killed).
fn wait_for(pid: libc::pid_t) -> Option<i32> {
    let mut status = 0;
    // SAFETY: waitpid on a stack integer.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return None;
        }
    }
    libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_is_probed_once_and_says_how() {
        let first = support();
        assert!(std::ptr::eq(first, support()));
        if let NamespaceSupport::Missing { reason } = first {
            assert!(!reason.is_empty());
        }
    }

    #[test]
    fn a_hidden_directory_shows_only_what_lies_under_it_and_never_hides_home_or_the_worktree() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let (out, wt) = (data.join("tool-output"), data.join("projects/wt"));
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(wt.join("src")).unwrap();
        let show = [(out.clone(), true), (wt.clone(), false), (wt.join("src"), true), (tmp.path().join("w"), false)];
        let hidden = Hidden::new(&data, &show, Some(Path::new("/home/u"))).unwrap().unwrap();
        let c = |p: &Path| cstring(p).unwrap();
        assert_eq!(hidden.shown, vec![(c(&out), true), (c(&wt), false)], "nested and outside ones dropped");
        assert_eq!(hidden.made, vec![c(&out), c(&data.join("projects")), c(&wt)]);
        // What to hide is made first where it is missing.
        let later = tmp.path().join("later/data");
        assert!(Hidden::new(&later, &[], None).unwrap().is_some() && later.is_dir());
        assert!(Hidden::new(Path::new("/"), &[], None).unwrap().is_none());
        assert!(Hidden::new(&data, &[], Some(&data.join("home"))).unwrap().is_none(), "it holds the home directory");
        assert!(Hidden::new(&data, &[(data.clone(), false)], None).unwrap().is_none(), "it is the worktree");
        let mut buf = [0u8; 32];
        fd_path(1234, &mut buf);
        assert_eq!(std::ffi::CStr::from_bytes_until_nul(&buf).unwrap(), c"/proc/self/fd/1234");
        fd_path(0, &mut buf);
        assert_eq!(std::ffi::CStr::from_bytes_until_nul(&buf).unwrap(), c"/proc/self/fd/0");
    }

    #[test]
    fn nothing_to_bind_is_a_namespace_alone_and_no_namespaces_means_no_binds() {
        let alone = Binds::new(&[], &[], &NamespaceSupport::Mount, None, &[], &[]).unwrap().unwrap();
        assert!(alone.paths.is_empty() && alone.shown.is_empty() && alone.user.is_none());
        let missing = NamespaceSupport::Missing { reason: "x".into() };
        assert!(Binds::new(&[PathBuf::from("/tmp")], &[], &missing, None, &[], &[]).unwrap().is_none());
        let binds = Binds::new(&[PathBuf::from("/tmp")], &[], &NamespaceSupport::UserAndMount, None, &[], &[])
            .unwrap()
            .unwrap();
        assert!(binds.user.is_some());
    }
}
