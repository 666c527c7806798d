//! The seccomp filters of sandboxed commands, compiled in the parent (seccompiler).
//!
//! - `read-only`: changing file metadata — modes (`chmod` family), owners (`chown` family),
//!   times (`utime` family), extended attributes (`setxattr` / `removexattr` family, `*at`
//!   forms included), inode flags (`ioctl` `FS_IOC_SETFLAGS` / `FS_IOC_FSSETXATTR`, as `chattr`
//!   does) — fails with `EPERM`, and so does `io_uring_setup` (io_uring could do the same
//!   behind the filter's back). Landlock handles writes, not metadata.
//! - Whenever a command could hold `CAP_SYS_ADMIN` (toolshed runs as root) while protected paths
//!   are bound read-only, or in `read-only`: the mount system calls (`mount`, `umount2`,
//!   `pivot_root`, `mount_setattr`, `move_mount`, `open_tree`, `fsopen` ...) and
//!   `open_by_handle_at` (opens a file through another mount) fail with `EPERM`.
//! - `block_network`: `socket()` for every family but `AF_UNIX`, and `io_uring_setup`, fail
//!   with `EACCES`.
//! - Always: giving a file the set-user-ID or set-group-ID bit (`chmod` family, or `open` /
//!   `creat` / `mknod` with such a mode) fails with `EPERM`, and so does `io_uring_setup` (its
//!   `openat` takes a mode too); `openat2`, whose mode no filter can read, fails with `ENOSYS`. A file made so would run as its owner for anyone, outside the sandbox
//!   and after it (review 15: a root command left a set-user-ID copy of python in `/tmp`).
//!
//! A system call of another architecture (i386 on x86_64) kills the process (seccompiler's
//! architecture check); on x86_64 an extra filter fails every x32 system call with `ENOSYS`,
//! since x32 numbers would slip past the others.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    TargetArch, sock_filter,
};

/// What the filters of one command take away.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Filters {
    /// Metadata changes (`read-only`).
    pub metadata: bool,
    /// Mount system calls and `open_by_handle_at`.
    pub mounts: bool,
    /// Sockets other than Unix sockets.
    pub network: bool,
    /// Set-user-ID and set-group-ID bits.
    pub set_id: bool,
}

// Numbers the same on every architecture (the unified table from Linux 5.1 on) that libc does
// not name everywhere.
const SYS_FCHMODAT2: i64 = 452;
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
const SYS_OPEN_TREE_ATTR: i64 = 467;

// ioctl requests that change inode flags (linux/fs.h): _IOW('f', 2, long), _IOW('f', 2, int),
// _IOW('X', 32, struct fsxattr).
const FS_IOC_SETFLAGS: u64 = 0x4008_6602;
const FS_IOC32_SETFLAGS: u64 = 0x4004_6602;
const FS_IOC_FSSETXATTR: u64 = 0x401c_5820;

/// System calls that change a file's mode, owner, times or extended attributes.
fn metadata_calls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_fchmod,
        libc::SYS_fchmodat,
        SYS_FCHMODAT2,
        libc::SYS_fchown,
        libc::SYS_fchownat,
        libc::SYS_utimensat,
        libc::SYS_setxattr,
        libc::SYS_lsetxattr,
        libc::SYS_fsetxattr,
        SYS_SETXATTRAT,
        libc::SYS_removexattr,
        libc::SYS_lremovexattr,
        libc::SYS_fremovexattr,
        SYS_REMOVEXATTRAT,
        libc::SYS_io_uring_setup,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_chmod,
        libc::SYS_chown,
        libc::SYS_lchown,
        libc::SYS_utime,
        libc::SYS_utimes,
        libc::SYS_futimesat,
    ]);
    calls
}

/// System calls that change the mount table, or open files by handle through any mount.
fn mount_calls() -> Vec<i64> {
    vec![
        libc::SYS_mount,
        libc::SYS_umount2,
        libc::SYS_pivot_root,
        libc::SYS_mount_setattr,
        libc::SYS_move_mount,
        libc::SYS_open_tree,
        SYS_OPEN_TREE_ATTR,
        libc::SYS_fsopen,
        libc::SYS_fsconfig,
        libc::SYS_fsmount,
        libc::SYS_fspick,
        libc::SYS_open_by_handle_at,
    ]
}

fn arg_equals(index: u8, value: u64) -> Result<SeccompRule, String> {
    SeccompCondition::new(index, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)
        .and_then(|c| SeccompRule::new(vec![c]))
        .map_err(|e| e.to_string())
}

/// The compiled programs for `filters` (empty when nothing is taken away), in install order.
pub(super) fn compile(filters: Filters) -> Result<Vec<BpfProgram>, String> {
    let mut programs = Vec::new();
    if !(filters.metadata || filters.mounts || filters.network || filters.set_id) {
        return Ok(programs);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    if filters.metadata {
        for call in metadata_calls() {
            eperm.insert(call, Vec::new());
        }
        let flags = [FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR];
        eperm.insert(libc::SYS_ioctl, flags.into_iter().map(|r| arg_equals(1, r)).collect::<Result<_, _>>()?);
    }
    if filters.mounts || filters.metadata {
        for call in mount_calls() {
            eperm.insert(call, Vec::new());
        }
    }
    if !eperm.is_empty() {
        let filter = SeccompFilter::new(eperm, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
            .map_err(|e| e.to_string())?;
        programs.push(BpfProgram::try_from(filter).map_err(|e| e.to_string())?);
    }
    if filters.network {
        programs.push(network()?);
    }
    if filters.set_id {
        programs.push(set_id()?);
        programs.push(no_openat2()?);
    }
    if cfg!(target_arch = "x86_64") {
        programs.insert(0, x32_guard());
    }
    Ok(programs)
}

/// Denies `socket()` for every address family but `AF_UNIX`, and `io_uring_setup` (which
/// could open sockets behind the filter's back), with `EACCES`.
fn network() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let not_unix = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, libc::AF_UNIX as u64)
        .and_then(|c| SeccompRule::new(vec![c]))
        .map_err(|e| e.to_string())?;
    let rules = [(libc::SYS_socket, vec![not_unix]), (libc::SYS_io_uring_setup, vec![])].into_iter().collect();
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EACCES as u32), arch)
        .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// Fails with `EPERM` every system call that would give a file the set-user-ID or set-group-ID
/// bit, and `io_uring_setup`.
fn set_id() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    // The system calls, which argument is the mode, and which the flags that say a file is made
    // (`open` reads its mode only then: otherwise the argument may hold anything).
    // `mknodat` makes regular files too, with no capability (review 16).
    let mut calls: Vec<(i64, u8, Option<u8>)> = vec![
        (libc::SYS_fchmod, 1, None),
        (libc::SYS_fchmodat, 2, None),
        (SYS_FCHMODAT2, 2, None),
        (libc::SYS_openat, 3, Some(2)),
        (libc::SYS_mknodat, 2, None),
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        (libc::SYS_chmod, 1, None),
        (libc::SYS_open, 2, Some(1)),
        (libc::SYS_creat, 1, None),
        (libc::SYS_mknod, 1, None),
    ]);
    let has =
        |arg: u8, bits: u64| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(bits), bits);
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (call, mode, flags) in calls {
        let mut either = Vec::new();
        for bit in [libc::S_ISUID as u64, libc::S_ISGID as u64] {
            let makes: &[Option<u64>] = match flags {
                None => &[None],
                Some(_) => &[Some(libc::O_CREAT as u64), Some(libc::O_TMPFILE as u64)],
            };
            for make in makes {
                let mut conditions = vec![has(mode, bit).map_err(|e| e.to_string())?];
                if let (Some(flags), Some(make)) = (flags, make) {
                    conditions.push(has(flags, *make).map_err(|e| e.to_string())?);
                }
                either.push(SeccompRule::new(conditions).map_err(|e| e.to_string())?);
            }
        }
        rules.insert(call, either);
    }
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// `openat2` fails with `ENOSYS`, as on a kernel before 5.6: its mode lies in a structure no
/// filter can read (review 16 made a set-group-ID file with it), and programs that use it fall
/// back to `openat` on `ENOSYS`.
fn no_openat2() -> Result<BpfProgram, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
    let rules = [(libc::SYS_openat2, Vec::new())].into_iter().collect();
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::ENOSYS as u32), arch)
        .map_err(|e| e.to_string())?;
    BpfProgram::try_from(filter).map_err(|e| e.to_string())
}

/// On x86_64: every system call with the x32 bit (`0x4000_0000`) fails with `ENOSYS`; x32 calls
/// share the x86_64 architecture value, so the other filters' number checks would miss them.
fn x32_guard() -> BpfProgram {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JSET_K: u16 = 0x45;
    const RET_K: u16 = 0x06;
    const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
    const X32_BIT: u32 = 0x4000_0000;
    let op = |code, k, jt, jf| sock_filter { code, jt, jf, k };
    vec![
        op(LD_W_ABS, 4, 0, 0), // seccomp_data.arch
        op(JEQ_K, AUDIT_ARCH_X86_64, 0, 3),
        op(LD_W_ABS, 0, 0, 0), // seccomp_data.nr
        op(JSET_K, X32_BIT, 0, 1),
        op(RET_K, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32, 0, 0),
        op(RET_K, libc::SECCOMP_RET_ALLOW, 0, 0),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_taken_away_compiles_to_no_program() {
        assert!(compile(Filters::default()).unwrap().is_empty());
    }

    #[test]
    fn each_kind_compiles() {
        for filters in [
            Filters { metadata: true, ..Filters::default() },
            Filters { mounts: true, ..Filters::default() },
            Filters { network: true, ..Filters::default() },
            Filters { set_id: true, ..Filters::default() },
            Filters { metadata: true, mounts: true, network: true, set_id: true },
        ] {
            let programs = compile(filters).unwrap();
            let expected = usize::from(filters.metadata || filters.mounts)
                + usize::from(filters.network)
                + 2 * usize::from(filters.set_id);
            assert_eq!(programs.len(), expected + usize::from(cfg!(target_arch = "x86_64")), "{filters:?}");
        }
    }
}
