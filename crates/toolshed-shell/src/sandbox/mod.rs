//! The Linux sandbox for shell commands: Landlock filesystem rules (and, optionally, a seccomp
//! filter that takes the network away), built in the parent and applied in the child between
//! `fork` and `exec` with raw system calls only.
//!
//! Modes (`[sandbox] mode`): `read-only` reads and executes anywhere, writes nowhere but a few
//! device files, and changes no file's metadata (seccomp); `workspace-write` (the default) may
//! also write under the worktree, the validated git dirs of a linked worktree ([`pin_git_dirs`]),
//! the temp dirs, the tool caches and any directory approved through `external_directory` —
//! except the protected paths (`.git`, `toolshed.toml`, ...), which are bound read-only in a
//! private mount namespace where the kernel allows it; `full-access` runs without a sandbox.
//! Where the kernel has no Landlock, a command is refused unless
//! `[sandbox] allow_unsandboxed = true`.

mod git_dirs;
#[cfg(target_os = "linux")]
mod init;
#[cfg(target_os = "linux")]
mod namespace;
#[cfg(target_os = "linux")]
mod seccomp;
pub mod sockets;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use git_dirs::pin as pin_git_dirs;

use toolshed_core::ToolError;
use toolshed_core::config::SandboxConfig;
pub use toolshed_core::config::SandboxMode;

/// What the shell's sandbox enforces: the mode, whether running unsandboxed is allowed where
/// the kernel cannot sandbox, and whether sandboxed commands lose the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SandboxPolicy {
    /// What a sandboxed command may touch.
    pub mode: SandboxMode,
    /// Run commands without a sandbox where the kernel has no Landlock (otherwise refuse them).
    pub allow_unsandboxed: bool,
    /// Take network access (every socket but Unix sockets) away from sandboxed commands.
    pub block_network: bool,
    /// The Unix sockets of servers outside that sandboxed processes may still reach
    /// (`[sandbox] allow_sockets`; see [`sockets`]).
    pub allow_sockets: &'static [PathBuf],
}

impl Default for SandboxPolicy {
    fn default() -> Self {
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            allow_unsandboxed: false,
            block_network: false,
            allow_sockets: &[],
        }
    }
}

impl From<&SandboxConfig> for SandboxPolicy {
    fn from(config: &SandboxConfig) -> Self {
        SandboxPolicy {
            mode: config.mode.unwrap_or(SandboxMode::WorkspaceWrite),
            allow_unsandboxed: config.allow_unsandboxed,
            block_network: config.block_network,
            allow_sockets: sockets::intern(&config.allow_sockets),
        }
    }
}

/// The name of a mode as written in the config file.
pub fn mode_name(mode: SandboxMode) -> &'static str {
    match mode {
        SandboxMode::ReadOnly => "read-only",
        SandboxMode::WorkspaceWrite => "workspace-write",
        SandboxMode::FullAccess => "full-access",
    }
}

/// Whether this machine can sandbox commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Landlock works; `abi` is the kernel's Landlock ABI version.
    Landlock {
        /// The kernel's Landlock ABI version (1 = Linux 5.13, ...).
        abi: i32,
    },
    /// No Landlock: why not.
    Missing {
        /// A plain explanation (kernel built without it, disabled at boot, not Linux).
        reason: String,
    },
}

impl SandboxSupport {
    /// Whether commands can be sandboxed.
    pub fn available(&self) -> bool {
        matches!(self, SandboxSupport::Landlock { .. })
    }
}

impl fmt::Display for SandboxSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SandboxSupport::Landlock { abi } => write!(f, "Landlock ABI {abi} available"),
            SandboxSupport::Missing { reason } => write!(f, "Landlock unavailable: {reason}"),
        }
    }
}

/// Probes the kernel once per process: can Landlock rulesets be created here?
pub fn support() -> &'static SandboxSupport {
    static SUPPORT: OnceLock<SandboxSupport> = OnceLock::new();
    SUPPORT.get_or_init(imp::probe)
}

/// How this process can give a command a private mount namespace, which the read-only binds of
/// protected paths need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceSupport {
    /// `unshare(CLONE_NEWNS)` works (toolshed has `CAP_SYS_ADMIN`, e.g. runs as root).
    Mount,
    /// A user namespace is needed first (an unprivileged user).
    UserAndMount,
    /// Neither works: why.
    Missing {
        /// What failed, in plain words.
        reason: String,
    },
}

impl NamespaceSupport {
    /// Whether protected paths can be made read-only.
    pub fn available(&self) -> bool {
        !matches!(self, NamespaceSupport::Missing { .. })
    }
}

/// Probes once per process whether commands can get a private mount namespace (a forked child
/// tries the whole sequence on a scratch bind). Only the first `workspace-write` command with
/// protected paths to bind, and `toolshed doctor`, pay for it.
pub fn namespaces() -> &'static NamespaceSupport {
    #[cfg(target_os = "linux")]
    {
        namespace::support()
    }
    #[cfg(not(target_os = "linux"))]
    {
        static MISSING: OnceLock<NamespaceSupport> = OnceLock::new();
        MISSING.get_or_init(|| NamespaceSupport::Missing { reason: "mount namespaces exist only on Linux".into() })
    }
}

/// One line for `toolshed doctor` about protected paths (`.git`, `toolshed.toml`, ...) under
/// `policy`, and whether the second line of it is a warning (`true`: they stay writable).
pub fn protection_report(policy: &SandboxPolicy) -> (String, bool) {
    let names = toolshed_core::protected::LOCATIONS.join(", ");
    if policy.mode != SandboxMode::WorkspaceWrite || !support().available() {
        let why = match policy.mode {
            SandboxMode::ReadOnly => "the read-only sandbox writes nothing",
            _ => "commands run unsandboxed",
        };
        return (format!("protected paths ({names}): no read-only binds ({why})"), false);
    }
    match namespaces() {
        NamespaceSupport::Missing { reason } => (
            format!(
                "protected paths ({names}) stay WRITABLE for sandboxed commands: {reason}; the permission analysis still asks `protected` for writes it can see"
            ),
            true,
        ),
        ns => {
            let how =
                if *ns == NamespaceSupport::Mount { "a private mount namespace" } else { "a user and mount namespace" };
            #[cfg(target_os = "linux")]
            let pids = namespace::pid_namespaces();
            #[cfg(not(target_os = "linux"))]
            let pids = false;
            let ends = if pids {
                "; each command has a PID namespace of its own: every process it starts ends with it (not what a server outside it, such as tmux or docker, starts for it)"
            } else {
                "; no PID namespaces here: what a command leaves running is searched for and stopped when it ends"
            };
            (
                format!(
                    "protected paths ({names}) are bound read-only for sandboxed commands ({how}); unless the agent's rules allow `protected`; a command that fails on them asks `protected` and, if allowed, reruns sandboxed without the binds{ends}"
                ),
                false,
            )
        }
    }
}

/// One line for `toolshed doctor` about toolshed's data directory as sandboxed processes see
/// it under `policy` (`None` when they run unsandboxed), and whether it is a warning (`true`:
/// they can read it).
pub fn data_dir_report(policy: &SandboxPolicy, root: &Path) -> Option<(String, bool)> {
    if policy.mode == SandboxMode::FullAccess || !support().available() {
        return None;
    }
    let dir = toolshed_core::paths::data_dir();
    let real = dir.canonicalize().unwrap_or_else(|_| dir.clone());
    // Where a command may move it away and make another in its place, toolshed would use the
    // one the command made (review 17): a link to it in a place commands write (the link is
    // not pinned, only where it leads), or a worktree inside it (an odd layout, warned of even
    // though `worktree_pins` holds it now).
    let writable = writable_roots(root, &[]);
    let replaceable = root.starts_with(&real)
        || (real != dir && dir.ancestors().any(|a| writable.iter().any(|w| a.starts_with(w) && a != w)));
    if replaceable {
        return Some((
            format!(
                "toolshed's data directory ({}) can be REPLACED by sandboxed commands (it holds the worktree, or is reached through a link where they write): set TOOLSHED_DATA_DIR to a directory outside the worktree, the temp dirs and tool caches",
                dir.display()
            ),
            true,
        ));
    }
    Some(match namespaces() {
        NamespaceSupport::Missing { reason } => (
            format!(
                "toolshed's data directory ({}: every session's transcript) stays READABLE to sandboxed commands: {reason}",
                dir.display()
            ),
            true,
        ),
        _ => (
            format!(
                "toolshed's data directory ({}) is hidden from sandboxed commands, custom tools and servers, but for this worktree's saved outputs",
                dir.display()
            ),
            false,
        ),
    })
}

/// One line for `toolshed doctor` about the home directory, when it lies where sandboxed
/// commands in the worktree `root` may write (a temp dir: CI, containers; the worktree), and
/// whether it is a warning (`true`: its start-up files and configuration, which the person's
/// own shell and git run, are writable to commands).
pub fn home_report(policy: &SandboxPolicy, root: &Path) -> Option<(String, bool)> {
    if policy.mode != SandboxMode::WorkspaceWrite || !support().available() {
        return None;
    }
    let home = toolshed_core::paths::home_dir()?;
    let home = home.canonicalize().unwrap_or(home);
    let writable = writable_roots(root, &[]);
    let holder = writable.iter().find(|w| home.starts_with(w))?;
    let shielded = !matches!(namespaces(), NamespaceSupport::Missing { .. });
    Some(match read_only_home(&home, &writable, root) {
        Some(_) if shielded => (
            format!(
                "your home directory ({}) lies in {}, where sandboxed commands may write: they see it read-only, but for the tool caches in it that exist and the worktree (a missing cache, such as ~/.npm, cannot be made by a command: run the tool once outside toolshed, or mkdir it)",
                home.display(),
                holder.display()
            ),
            false,
        ),
        _ => (
            format!(
                "your home directory ({}) lies where sandboxed commands may write ({}): they can change ~/.gitconfig, ~/.bashrc and the like, which your own git and shell then run; keep the worktree and HOME out of each other and out of the temp dirs",
                home.display(),
                holder.display()
            ),
            true,
        ),
    })
}

/// Where the home directory `home` (canonical) lies strictly inside a directory a command may
/// write (`writable`: a temp dir, `HOME=/var/tmp/...` as in CI and containers) and outside the
/// worktree `root`, the writable directories inside it (its tool caches, the worktree, approved
/// directories): the rest of it is bound read-only, as it is to Landlock where the home lies
/// elsewhere. Its start-up files and configuration (`~/.bashrc`, `~/.gitconfig`,
/// `~/.config/git`, `~/.local/bin`, ...) run outside the sandbox later, in the person's own
/// shell and git (review 19), and no list of them would be complete. `None` where the home is
/// not in a writable directory, is one, or lies in the worktree (the model's to write).
pub(crate) fn read_only_home(home: &Path, writable: &[PathBuf], root: &Path) -> Option<Vec<PathBuf>> {
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let root = canonical(root);
    if home.parent().is_none() || home.starts_with(&root) {
        return None;
    }
    let writable: Vec<PathBuf> = writable.iter().map(|w| canonical(w)).collect();
    if writable.iter().any(|w| w == home) || !writable.iter().any(|w| home.starts_with(w)) {
        return None;
    }
    let mut inside: Vec<PathBuf> = Vec::new();
    for dir in writable.into_iter().filter(|w| w.starts_with(home)) {
        if !inside.contains(&dir) {
            inside.push(dir);
        }
    }
    Some(inside)
}

/// One line for `toolshed doctor` about the Unix sockets of servers outside the sandbox as
/// sandboxed processes in the worktree `root` see them under `policy` (`None` when they run
/// unsandboxed), and whether it is a warning (`true`: they can reach them).
pub fn sockets_report(policy: &SandboxPolicy, root: &Path) -> Option<(String, bool)> {
    if policy.mode == SandboxMode::FullAccess || !support().available() {
        return None;
    }
    if let NamespaceSupport::Missing { reason } = namespaces() {
        return Some((
            format!(
                "the Unix sockets of servers outside (tmux, docker, the session bus, ...) stay REACHABLE from sandboxed commands: {reason}"
            ),
            true,
        ));
    }
    let allowed = if policy.allow_sockets.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = policy.allow_sockets.iter().map(|p| p.display().to_string()).collect();
        format!("; allowed by allow_sockets: {}", list.join(", "))
    };
    Some(match sockets::to_cover(root, policy.allow_sockets) {
        Ok(covered) => (
            format!(
                "{} Unix socket(s) of servers outside the sandbox are hidden from sandboxed commands now (those in the worktree and of logging and name lookups stay){allowed}",
                covered.len()
            ),
            false,
        ),
        Err(e) => (format!("sandboxed commands are refused: {e}"), true),
    })
}

/// One line for `toolshed doctor`: the policy, and whether this kernel can enforce it.
pub fn report(policy: &SandboxPolicy) -> String {
    let support = support();
    let network = if policy.block_network { "; network blocked (seccomp)" } else { "" };
    match (policy.mode, support.available()) {
        (SandboxMode::FullAccess, _) => format!("sandbox: full-access (commands run unsandboxed); {support}"),
        (SandboxMode::ReadOnly, true) => {
            format!("sandbox: read-only enforced with {support}; metadata changes blocked (seccomp){network}")
        }
        (mode, true) => format!("sandbox: {} enforced with {support}{network}", mode_name(mode)),
        (mode, false) if policy.allow_unsandboxed => format!(
            "sandbox: {} requested but {support}; commands run UNSANDBOXED because allow_unsandboxed = true",
            mode_name(mode)
        ),
        (mode, false) => format!(
            "sandbox: {} requested but {support}; shell commands are refused (set [sandbox] allow_unsandboxed = true to run them unsandboxed)",
            mode_name(mode)
        ),
    }
}

/// Whether a `workspace-write` command runs in a process space (PID namespace) of its own, so
/// that other commands neither see nor signal its processes.
pub(crate) fn own_process_spaces() -> bool {
    #[cfg(target_os = "linux")]
    {
        namespace::pid_namespaces()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// A PID namespace of its own for a child that gets a mount namespace (see `init.rs`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct OwnPids {
    /// The socket the init reports the number of processes it stopped on (-1: none).
    pub report: std::os::fd::RawFd,
    /// The command leads a process group of its own inside (a shell command: `kill -- -$$`
    /// and `ps -o pgid` work as they would outside), the terminal's foreground one with a
    /// terminal; otherwise it stays in the group of toolshed's child (whose signals it gets).
    pub own_group: bool,
}

/// How one command will run.
pub(crate) enum Plan {
    /// Without a sandbox; `note` says why when the policy wanted one.
    Unsandboxed {
        /// Shown to the model when the command ran unsandboxed against the configured mode.
        note: Option<String>,
    },
    /// Confined by a prebuilt ruleset (and maybe a seccomp filter).
    Sandboxed(Confinement),
}

impl Plan {
    /// The mode's name, or `none` when the command runs unsandboxed.
    pub(crate) fn label(&self, policy: &SandboxPolicy) -> &'static str {
        match self {
            Plan::Unsandboxed { .. } => "none",
            Plan::Sandboxed(_) => mode_name(policy.mode),
        }
    }
}

/// Decides how a command runs under `policy`: `root` is the worktree, `extra_writable` the
/// directories approved through `external_directory`, `protect` the protected paths to bind
/// read-only in `workspace-write` (where the kernel allows it). Builds the Landlock ruleset,
/// the binds and the seccomp programs now, before any fork.
pub(crate) fn plan(
    policy: &SandboxPolicy,
    root: &Path,
    extra_writable: &[PathBuf],
    protect: &[PathBuf],
) -> Result<Plan, ToolError> {
    plan_with(support(), policy, || writable_roots(root, extra_writable), protect, root, true)
}

/// [`plan`] for a helper that reads the worktree but has no business writing it (a language
/// server): the worktree and its git dirs are left out of what it may write (it keeps the
/// temp dirs and tool caches, and where the worktree lies under one of those the protected
/// paths are still bound read-only).
pub(crate) fn plan_reader(policy: &SandboxPolicy, root: &Path, protect: &[PathBuf]) -> Result<Plan, ToolError> {
    let outside = || {
        let git_dirs = git_dirs::pin(root);
        writable_roots(root, &[]).into_iter().filter(|d| *d != root && !git_dirs.contains(d)).collect()
    };
    plan_with(support(), policy, outside, protect, root, false)
}

/// How a command runs under `policy` with `support`: `writable` gives what a `workspace-write`
/// one may write; `writes_root` says whether that includes the worktree `root` (not for a
/// language server).
fn plan_with(
    support: &SandboxSupport,
    policy: &SandboxPolicy,
    writable: impl FnOnce() -> Vec<PathBuf>,
    protect: &[PathBuf],
    root: &Path,
    writes_root: bool,
) -> Result<Plan, ToolError> {
    let worktree = writes_root.then_some(root);
    if policy.mode == SandboxMode::FullAccess {
        return Ok(Plan::Unsandboxed { note: None });
    }
    match support {
        SandboxSupport::Landlock { .. } => {
            let read_only = policy.mode == SandboxMode::ReadOnly;
            let writable = if read_only { Vec::new() } else { writable() };
            let protect = if read_only { &[][..] } else { protect };
            let options = imp::Options {
                block_network: policy.block_network,
                read_only,
                protect,
                worktree,
                root,
                allow_sockets: policy.allow_sockets,
            };
            imp::confinement(&writable, &options)
                .map(Plan::Sandboxed)
                .map_err(|e| ToolError::fatal(format!("could not build the {} sandbox: {e}", mode_name(policy.mode))))
        }
        SandboxSupport::Missing { reason } if policy.allow_unsandboxed => Ok(Plan::Unsandboxed {
            note: Some(format!(
                "This command ran WITHOUT a sandbox: the configured mode is {}, but Landlock is unavailable ({reason}) and allow_unsandboxed = true.",
                mode_name(policy.mode)
            )),
        }),
        SandboxSupport::Missing { reason } => Err(ToolError::model(format!(
            "Shell commands cannot run here: the sandbox mode is {}, but this kernel cannot sandbox commands (Landlock unavailable: {reason}), and running unsandboxed is not allowed. Do not retry; tell the user. They can set `[sandbox] allow_unsandboxed = true` or `mode = \"full-access\"` in toolshed.toml to run commands without a sandbox.",
            mode_name(policy.mode)
        ))),
    }
}

/// The directories a `workspace-write` command may write under: the worktree (and the git
/// directories of a linked worktree or submodule, validated once per process: see
/// [`pin_git_dirs`]), the temp dirs, tool caches, and approved directories. Only existing
/// directories are returned.
pub fn writable_roots(root: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_path_buf()];
    dirs.extend(git_dirs::pin(root));
    dirs.extend(toolshed_core::paths::command_writable_dirs());
    // An `external_directory` approval (which `--yes` gives) never makes devices or the
    // kernel's files writable: `/dev` approved let a command write a disk (review 20).
    let kernel = |d: &PathBuf| {
        d.starts_with("/proc") || d.starts_with("/sys") || (d.starts_with("/dev") && !d.starts_with("/dev/shm"))
    };
    dirs.extend(extra.iter().filter(|d| !kernel(d)).cloned());
    let mut seen = Vec::new();
    for dir in dirs {
        if dir.is_dir() && !seen.contains(&dir) {
            seen.push(dir);
        }
    }
    seen
}

/// What in the writable tool directories makes later programs run other code, found in the
/// home directory of toolshed's environment: directories on `PATH` inside them (`~/.cargo/bin`,
/// `~/go/bin`, `~/.bun/bin`: a command could plant a `git` there), files login shells source
/// (`~/.cargo/env`), and tool configuration that names programs (`~/.cargo/config.toml`
/// `build.rustc-wrapper`, gradle init scripts, ...). Only existing paths are returned; a
/// `workspace-write` command gets them read-only, like protected paths.
pub fn tool_dir_entries() -> Vec<PathBuf> {
    tool_dir_candidates().into_iter().filter(|p| std::fs::symlink_metadata(p).is_ok()).collect()
}

/// [`tool_dir_entries`], those that do not exist yet included (`~/.cargo/config.toml` is
/// usually missing): a command that makes one is asked `protected`, and without it the file
/// goes (`created.rs`; review 20).
pub(crate) fn tool_dir_candidates() -> Vec<PathBuf> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = env("HOME");
    let roots: Vec<PathBuf> = toolshed_core::paths::tool_cache_dirs();
    let mut out: Vec<PathBuf> = Vec::new();
    let mut cargo_homes: Vec<PathBuf> = home.iter().map(|h| h.join(".cargo")).collect();
    cargo_homes.extend(env("CARGO_HOME"));
    for cargo in cargo_homes {
        for entry in ["bin", "env", "env.fish", "env.nu", "config", "config.toml", "credentials", "credentials.toml"] {
            out.push(cargo.join(entry));
        }
    }
    let mut go_paths: Vec<PathBuf> = home.iter().map(|h| h.join("go")).collect();
    go_paths.extend(env("GOPATH").iter().flat_map(std::env::split_paths));
    out.extend(go_paths.into_iter().map(|g| g.join("bin")));
    if let Some(home) = &home {
        for entry in [".bun/bin", ".yarn/bin", ".gradle/init.d", ".gradle/init.gradle", ".gradle/init.gradle.kts"] {
            out.push(home.join(entry));
        }
        out.push(home.join(".gradle/gradle.properties"));
        out.push(home.join(".m2/settings.xml"));
    }
    if let Some(path) = env("PATH") {
        for dir in std::env::split_paths(&path) {
            let Some(root) = roots.iter().find(|r| dir.is_absolute() && dir.starts_with(r) && dir != **r) else {
                continue;
            };
            // One missing in a tool cache that exists (`~/.cargo/bin` on `PATH`, `~/.cargo`
            // holding only the registry) is made now, empty, to be bound read-only like the
            // rest: a command could otherwise make it and put a `git` there that the person's
            // shell, and toolshed's own snapshots, would run (review 19).
            if root.is_dir() && std::fs::symlink_metadata(&dir).is_err() {
                let _ = std::fs::create_dir_all(&dir);
            }
            out.push(dir);
        }
    }
    let mut seen = Vec::new();
    for path in out {
        if !seen.contains(&path) {
            seen.push(path);
        }
    }
    seen
}

/// Whether a failed sandboxed command looks like the sandbox refused it. The heuristic (after
/// Codex's): a non-zero exit that is not 2 (usage), 126 or 127 (not executable / not found),
/// with output mentioning `Permission denied`, `Operation not permitted` or `Read-only file
/// system` (what Landlock's `EACCES`, seccomp's `EPERM` and read-only mounts print), or a
/// death by `SIGSYS`.
pub(crate) fn looks_like_denial(exit_code: Option<i32>, signal: Option<i32>, output: &str) -> bool {
    if signal == Some(libc::SIGSYS) {
        return true;
    }
    match exit_code {
        None | Some(0 | 2 | 126 | 127) => return false,
        Some(_) => {}
    }
    let lower = output.to_ascii_lowercase();
    ["permission denied", "operation not permitted", "read-only file system"].iter().any(|p| lower.contains(p))
}

/// Whether a failed sandboxed command looks like it hit the read-only binds of protected paths:
/// the same exit codes as [`looks_like_denial`], with `Read-only file system` (a write) or
/// `Device or resource busy` (renaming or removing a bound path) in the output.
pub(crate) fn looks_like_bind_refusal(exit_code: Option<i32>, output: &str) -> bool {
    if matches!(exit_code, None | Some(0 | 2 | 126 | 127)) {
        return false;
    }
    let lower = output.to_ascii_lowercase();
    ["read-only file system", "device or resource busy"].iter().any(|p| lower.contains(p))
}

#[cfg(target_os = "linux")]
pub(crate) use imp::Confinement;

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::PathBuf;

    use landlock::{
        ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope,
    };
    use seccompiler::BpfProgram;

    use super::SandboxSupport;
    use super::namespace::{Binds, Hidden};
    use super::seccomp::{self, Filters};

    /// The Landlock ABI whose access rights we handle. Newer kernels keep enforcing these;
    /// older ones get the subset they know (best effort).
    const TARGET_ABI: ABI = ABI::V5;

    /// Device files every command may use read-write (and `ioctl` on, for terminals).
    const DEVICE_FILES: [&str; 8] =
        ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"];

    pub(super) fn probe() -> SandboxSupport {
        let created = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(ABI::V1))
            .and_then(landlock::Ruleset::create);
        match created {
            Ok(_) => {
                // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION
                // flag only returns the ABI version.
                let abi =
                    unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
                SandboxSupport::Landlock { abi: abi as i32 }
            }
            Err(_) => {
                // SAFETY: as above.
                let rc =
                    unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<u8>(), 0usize, 1u32) };
                let errno = io::Error::last_os_error().raw_os_error();
                let reason = match (rc, errno) {
                    (r, Some(libc::EOPNOTSUPP)) if r < 0 => {
                        "the kernel has Landlock but it is disabled at boot (add `landlock` to the `lsm=` kernel parameter)"
                            .to_string()
                    }
                    (r, Some(libc::ENOSYS)) if r < 0 => "the kernel is built without Landlock (Linux 5.13+ with CONFIG_SECURITY_LANDLOCK is needed)".to_string(),
                    _ => "creating a Landlock ruleset failed".to_string(),
                };
                SandboxSupport::Missing { reason }
            }
        }
    }

    /// A sandbox ready to apply in a child process: the read-only binds (if any), the Landlock
    /// ruleset's file descriptor and the compiled seccomp programs.
    pub(crate) struct Confinement {
        binds: Option<Box<Binds>>,
        ruleset: OwnedFd,
        seccomp: Vec<BpfProgram>,
    }

    /// What besides the writable directories shapes a confinement.
    pub(super) struct Options<'a> {
        /// Take the network away.
        pub block_network: bool,
        /// The read-only mode: no metadata changes either.
        pub read_only: bool,
        /// Protected paths to bind read-only (where namespaces work).
        pub protect: &'a [PathBuf],
        /// The worktree, when the command may write it (signals are scoped then; see
        /// [`pins`] and [`worktree_pins`] for how it is pinned).
        pub worktree: Option<&'a std::path::Path>,
        /// The worktree the process works in (shown even where it lies in the data directory).
        pub root: &'a std::path::Path,
        /// The sockets of servers outside it may still reach.
        pub allow_sockets: &'a [PathBuf],
    }

    /// The capabilities a root command keeps (bits by number): CHOWN, DAC_OVERRIDE, FOWNER,
    /// KILL, SETGID, SETUID, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, AUDIT_WRITE: a container
    /// runtime's default set without MKNOD, and without what reaches past a sandbox that shares
    /// the host's network and files (review 15): NET_RAW (it read loopback traffic, another
    /// server's bearer token included), SETFCAP (a file given CAP_SYS_ADMIN ran with it outside),
    /// FSETID.
    pub(crate) const KEPT_CAPABILITIES: u64 = {
        let caps = [0u32, 1, 3, 5, 6, 7, 8, 10, 18, 29];
        let (mut bits, mut i) = (0u64, 0);
        while i < caps.len() {
            bits |= 1 << caps[i];
            i += 1;
        }
        bits
    };

    /// Builds the ruleset (read and execute everywhere, everything under `writable` but device
    /// nodes, and the usual device files), the binds and the seccomp programs.
    pub(super) fn confinement(writable: &[PathBuf], options: &Options<'_>) -> Result<Confinement, String> {
        let all = AccessFs::from_all(TARGET_ABI);
        let read = AccessFs::from_read(TARGET_ABI);
        // No device node is made anywhere: one of a disk reaches every file on it.
        let writes = all & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        // Signals only within the command (Landlock 6, where the kernel has it): a command may
        // not kill toolshed (`kill -9 $PPID`) to keep what it left running from being stopped.
        // Signals not for a helper that reads the worktree (a language server): it watches that
        // its client lives (`kill(pid, 0)`, the LSP `processId`) and would take a refusal for
        // death. Nor may any confined process connect to an abstract Unix socket of a process
        // outside it (review 6: a server listening there could run what the command asks,
        // outside the sandbox and after it; review 17: a language server runs the worktree's
        // code too).
        let scopes = if options.worktree.is_some() {
            Scope::Signal | Scope::AbstractUnixSocket
        } else {
            Scope::AbstractUnixSocket.into()
        };
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(all)
            .and_then(|r| r.scope(scopes))
            .and_then(landlock::Ruleset::create)
            .map_err(|e| e.to_string())?;
        ruleset = ruleset.add_rule(rule("/", read)?).map_err(|e| e.to_string())?;
        let devices = DEVICE_FILES.iter().map(PathBuf::from);
        for path in writable.iter().cloned().chain(devices) {
            if !path.exists() {
                continue;
            }
            ruleset = ruleset.add_rule(rule(&path, writes)?).map_err(|e| e.to_string())?;
        }
        let fd: Option<OwnedFd> = ruleset.into();
        let ruleset = fd.ok_or("the kernel refused to create a Landlock ruleset")?;
        // A command that may write gets a mount namespace of its own even with nothing to bind:
        // every process it starts stays in it, which is how what it leaves running is found and
        // stopped when it ends (`process.rs`).
        // The data directory is hidden in both modes: a read-only command gets a mount
        // namespace for that alone.
        // So are the sockets of servers outside.
        let hidden = hidden_data_dir(options.root)?;
        let sockets = super::sockets::to_cover(options.root, options.allow_sockets)?;
        // And the block devices, in both modes.
        let devices = super::sockets::block_devices();
        let binds = if options.read_only {
            Binds::new(&[], &[], super::namespaces(), hidden, &sockets, &devices)?
        } else {
            // The directories that lead from a writable root to a covered socket are pinned too:
            // renamed (`mv /tmp/tmux-0 /tmp/t`), the socket would be under a name the next
            // command does not cover (review 17).
            let mut pinned = pins(writable, options.protect, options.worktree);
            // A home directory in a temp dir is read-only but for the writable directories in
            // it, which are bound as they are first so that they stay writable under it.
            let home = toolshed_core::paths::home_dir()
                .and_then(|h| h.canonicalize().ok())
                .and_then(|h| super::read_only_home(&h, writable, options.root).map(|inside| (h, inside)));
            let inside = home.as_ref().map(|(_, inside)| inside.clone()).unwrap_or_default();
            for pin in pins(writable, &sockets, options.worktree)
                .into_iter()
                .chain(worktree_pins(writable, options.root))
                .chain(inside)
            {
                if !pinned.contains(&pin) {
                    pinned.push(pin);
                }
            }
            Binds::new(options.protect, &pinned, super::namespaces(), hidden, &sockets, &devices)?
                .map(|binds| binds.with_read_only_home(home.as_ref().map(|(h, _)| h.as_path())))
                .transpose()?
        }
        .map(Box::new);
        // SAFETY: geteuid cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        // A command that keeps CAP_SYS_ADMIN could otherwise undo the binds (`mount_setattr`)
        // or reach a bound file through another mount (`open_by_handle_at`).
        let mounts = binds.as_ref().is_some_and(|_| root);
        let filters = Filters { metadata: options.read_only, mounts, network: options.block_network, set_id: true };
        let seccomp = seccomp::compile(filters)?;
        Ok(Confinement { binds, ruleset, seccomp })
    }

    /// toolshed's data directory as a confined process sees it: hidden (its `sessions.db` holds
    /// every session's transcript, `snapshots/` every worktree's files as they were), but for
    /// the files of cut output that the model is told to read (this worktree's: made now, so
    /// that what is saved while the process runs shows too) and the JS host's own files
    /// (`custom-tools/`), both read-only, and the worktree `root` and its git
    /// directories where they lie inside it, as they are. A directory approved through
    /// `external_directory` does not show any of it: no one approves reading the transcripts
    /// by approving a command (`--yes` approves every such question).
    fn hidden_data_dir(root: &std::path::Path) -> Result<Option<Hidden>, String> {
        let data = toolshed_core::paths::data_dir();
        let spills = toolshed_core::paths::spill_dir(&data, root);
        let _ = std::fs::create_dir_all(&spills);
        let mut show = vec![(spills, true), (data.join("custom-tools"), true)];
        show.extend(std::iter::once(root.to_path_buf()).chain(super::git_dirs::pin(root)).map(|p| (p, false)));
        Hidden::new(&data, &show, toolshed_core::paths::home_dir().as_deref())
    }

    /// The worktree `root` and the directories between it and a writable root that holds it (a
    /// temp dir, a tool cache): moved away, with another repository made at its path, the next
    /// command and the person's own `git` there would take what the command wrote for the
    /// project (review 19: a `.git/config` with `core.fsmonitor`, run by the person's `git
    /// status`). Pinned, a rename into the worktree from the rest of that root crosses mounts
    /// (`EXDEV`; most programs copy then, as they do from a `/tmp` of its own).
    pub(super) fn worktree_pins(writable: &[PathBuf], root: &std::path::Path) -> Vec<PathBuf> {
        let mut pins: Vec<PathBuf> = Vec::new();
        for holder in writable.iter().filter(|w| root.starts_with(w) && root != w.as_path()) {
            for dir in root.ancestors().take_while(|d| *d != holder.as_path()) {
                if !pins.iter().any(|p| p == dir) {
                    pins.push(dir.to_path_buf());
                }
            }
        }
        pins
    }

    /// The directories strictly between a writable root and a protected path under it: each
    /// is pinned (bound onto itself), so that a command cannot rename it and put an unprotected
    /// copy where the protected path was.
    pub(super) fn pins(writable: &[PathBuf], protect: &[PathBuf], worktree: Option<&std::path::Path>) -> Vec<PathBuf> {
        let mut pins: Vec<PathBuf> = Vec::new();
        for path in protect {
            for root in writable.iter().filter(|w| path.starts_with(w) && path != *w) {
                for dir in path.ancestors().skip(1).take_while(|d| d != root && d.starts_with(root)) {
                    // The worktree and what holds it, for a path inside the worktree, are left
                    // to [`worktree_pins`] (a command that writes the worktree pins them all). A
                    // directory that holds the worktree *and* a path outside it (a home under
                    // `/var/tmp` with the project in it, the data directory beside the worktree)
                    // is pinned here whatever the caller: moved away, with the worktree moved
                    // back into a new one, toolshed would next take the command's data
                    // directory, trust records and config for its own (review 18 turned the
                    // sandbox off that way).
                    if worktree.is_some_and(|w| w.starts_with(dir) && path.starts_with(w)) {
                        continue;
                    }
                    if !pins.iter().any(|p| p == dir) {
                        pins.push(dir.to_path_buf());
                    }
                }
            }
        }
        pins
    }

    fn rule(path: impl AsRef<std::path::Path>, access: BitFlags<AccessFs>) -> Result<PathBeneath<PathFd>, String> {
        let path = path.as_ref();
        let access = if path.is_dir() { access } else { access & AccessFs::from_file(TARGET_ABI) };
        let fd = PathFd::new(path).map_err(|e| e.to_string())?;
        Ok(PathBeneath::new(fd, access))
    }

    impl Confinement {
        /// The protected paths this confinement binds read-only.
        pub(crate) fn read_only_paths(&self) -> &[PathBuf] {
            self.binds.as_ref().map_or(&[], |b| &b.shown)
        }

        /// The sockets of servers outside that this confinement hides.
        pub(crate) fn covered_sockets(&self) -> &[PathBuf] {
            self.binds.as_ref().map_or(&[], |b| &b.covered)
        }

        /// The home directory, where this confinement binds it read-only ([`super::read_only_home`]).
        pub(crate) fn read_only_home(&self) -> Option<&std::path::Path> {
            self.binds.as_ref().and_then(|b| b.home_path.as_deref())
        }

        /// Confines the calling process. Runs in the child between `fork` and `exec`: raw
        /// system calls only, no allocation, no locks. The binds come first: Landlock forbids
        /// mount changes once applied. With `pids`, a command that gets
        /// a mount namespace gets a PID namespace too, which ends everything it left running
        /// when it ends (see `init.rs`); not for a long-lived helper.
        pub(crate) fn apply_in_child(&self, pids: Option<super::OwnPids>) -> io::Result<()> {
            if let Some(binds) = &self.binds {
                binds.apply_in_child(pids)?;
            }
            // SAFETY: plain system calls on a valid fd and programs that outlive the call; the
            // kernel copies each program.
            unsafe {
                // Root keeps its capabilities through `exec`, and many reach past the sandbox:
                // CAP_SYS_PTRACE, CAP_SYS_ADMIN and CAP_PERFMON read toolshed's own
                // `/proc/<pid>/environ` (its API keys) past the non-dumpable flag;
                // CAP_LINUX_IMMUTABLE marks a file toolshed must remove immutable; CAP_MKNOD
                // makes a node of the disk's block device in the worktree and writes any file
                // through it (review 14); CAP_NET_ADMIN changes the host's network. So only
                // the capabilities a container runtime leaves a root process by default are
                // kept ([`KEPT_CAPABILITIES`], less CAP_MKNOD) and every other one is dropped
                // from the bounding set, the ones this kernel does not know yet included (a
                // process without CAP_SETPCAP fails here and has none of them anyway).
                for cap in 0..64u64 {
                    if KEPT_CAPABILITIES & (1 << cap) == 0 {
                        let _ = libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0);
                    }
                }
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                if libc::syscall(libc::SYS_landlock_restrict_self, self.ruleset.as_raw_fd(), 0u32) != 0 {
                    return Err(io::Error::last_os_error());
                }
                for program in &self.seccomp {
                    let prog = libc::sock_fprog {
                        len: program.len() as u16,
                        filter: program.as_ptr() as *mut libc::sock_filter,
                    };
                    let rc = libc::syscall(
                        libc::SYS_seccomp,
                        libc::SECCOMP_SET_MODE_FILTER,
                        0u32,
                        &prog as *const libc::sock_fprog,
                    );
                    if rc != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::path::PathBuf;

    use super::SandboxSupport;

    pub(super) fn probe() -> SandboxSupport {
        SandboxSupport::Missing { reason: "Landlock exists only on Linux".to_string() }
    }

    /// Never built off Linux: `probe` reports no support.
    pub(crate) struct Confinement;

    /// See the Linux version.
    pub(super) struct Options<'a> {
        pub block_network: bool,
        pub read_only: bool,
        pub protect: &'a [PathBuf],
        pub worktree: Option<&'a std::path::Path>,
        pub root: &'a std::path::Path,
        pub allow_sockets: &'a [PathBuf],
    }

    pub(super) fn confinement(_writable: &[PathBuf], _options: &Options<'_>) -> Result<Confinement, String> {
        Err("no sandbox on this platform".to_string())
    }

    impl Confinement {
        pub(crate) fn read_only_paths(&self) -> &[PathBuf] {
            &[]
        }

        pub(crate) fn covered_sockets(&self) -> &[PathBuf] {
            &[]
        }

        pub(crate) fn read_only_home(&self) -> Option<&std::path::Path> {
            None
        }

        pub(crate) fn apply_in_child(&self, _pids: Option<super::OwnPids>) -> io::Result<()> {
            Err(io::Error::from(io::ErrorKind::Unsupported))
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) use imp::Confinement;

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn pins_hold_what_lies_between_a_writable_root_and_a_bound_path_but_never_the_worktree() {
        let p = |s: &str| PathBuf::from(s);
        let writable = [p("/tmp"), p("/tmp/w"), p("/x/ext"), p("/x/ext/R")];
        let protect = [p("/tmp/w/.git"), p("/x/ext/R/.git"), p("/tmp/w/dots/toolshed")];
        let mut pins = imp::pins(&writable, &protect, Some(Path::new("/tmp/w")));
        pins.sort();
        assert_eq!(pins, [p("/tmp/w/dots"), p("/x/ext/R")]);
        // A language server, which may not write the worktree: the worktree is pinned too.
        let mut pins = imp::pins(&[p("/tmp")], &[p("/tmp/w/.git")], None);
        pins.sort();
        assert_eq!(pins, [p("/tmp/w")]);
        // Review 18: what holds the worktree and a protected path outside it (a home under a
        // temp dir with the project in it) is pinned, but not the worktree itself.
        let writable = [p("/var/tmp"), p("/var/tmp/x/u/proj")];
        let protect = [p("/var/tmp/x/u/.local/share/toolshed/trust"), p("/var/tmp/x/u/proj/.git")];
        let mut pins = imp::pins(&writable, &protect, Some(Path::new("/var/tmp/x/u/proj")));
        pins.sort();
        assert_eq!(
            pins,
            [
                p("/var/tmp/x"),
                p("/var/tmp/x/u"),
                p("/var/tmp/x/u/.local"),
                p("/var/tmp/x/u/.local/share"),
                p("/var/tmp/x/u/.local/share/toolshed")
            ]
        );
    }

    #[test]
    fn denial_heuristic_needs_a_failure_and_a_permission_message() {
        assert!(looks_like_denial(Some(1), None, "touch: cannot touch '/etc/x': Permission denied\n"));
        assert!(looks_like_denial(Some(1), None, "cp: cannot create regular file: Read-only file system"));
        assert!(!looks_like_denial(Some(0), None, "Permission denied"));
        assert!(!looks_like_denial(Some(127), None, "bash: x: Permission denied"));
        assert!(!looks_like_denial(Some(1), None, "error: file not found"));
        assert!(looks_like_denial(None, Some(libc::SIGSYS), ""));
        assert!(!looks_like_denial(None, Some(libc::SIGKILL), "Permission denied"));
    }

    #[test]
    fn bind_refusal_needs_a_failure_and_erofs_or_ebusy() {
        assert!(looks_like_bind_refusal(Some(1), "bash: toolshed.toml: Read-only file system\n"));
        assert!(looks_like_bind_refusal(Some(1), "mv: cannot move '.git' to 'x': Device or resource busy"));
        assert!(looks_like_bind_refusal(
            Some(128),
            "fatal: Unable to create '/w/.git/index.lock': Read-only file system"
        ));
        assert!(!looks_like_bind_refusal(Some(0), "Read-only file system"));
        assert!(!looks_like_bind_refusal(Some(1), "touch: cannot touch '/etc/x': Permission denied"));
        assert!(!looks_like_bind_refusal(None, "Read-only file system"));
    }

    #[test]
    fn workspace_write_roots_include_worktree_and_temp_but_only_existing_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("missing");
        let roots = writable_roots(tmp.path(), std::slice::from_ref(&missing));
        assert_eq!(roots[0], tmp.path());
        assert!(roots.contains(&std::env::temp_dir()));
        assert!(!roots.contains(&missing));
    }

    #[test]
    fn without_landlock_commands_are_refused_unless_unsandboxed_is_allowed() {
        let missing = SandboxSupport::Missing { reason: "the kernel is built without Landlock".into() };
        let root = Path::new("/");
        let Err(refusal) =
            plan_with(&missing, &SandboxPolicy::default(), || writable_roots(root, &[]), &[], root, true)
        else {
            panic!("not refused")
        };
        insta::assert_snapshot!(refusal.to_string(), @r#"Shell commands cannot run here: the sandbox mode is workspace-write, but this kernel cannot sandbox commands (Landlock unavailable: the kernel is built without Landlock), and running unsandboxed is not allowed. Do not retry; tell the user. They can set `[sandbox] allow_unsandboxed = true` or `mode = "full-access"` in toolshed.toml to run commands without a sandbox."#);
        let allowed = SandboxPolicy { allow_unsandboxed: true, ..SandboxPolicy::default() };
        let Ok(Plan::Unsandboxed { note: Some(note) }) =
            plan_with(&missing, &allowed, || writable_roots(root, &[]), &[], root, true)
        else {
            panic!()
        };
        assert!(note.starts_with("This command ran WITHOUT a sandbox"), "{note}");
        let full = SandboxPolicy { mode: SandboxMode::FullAccess, ..SandboxPolicy::default() };
        assert!(matches!(
            plan_with(&missing, &full, || writable_roots(root, &[]), &[], root, true),
            Ok(Plan::Unsandboxed { note: None })
        ));
    }

    #[test]
    fn report_says_plainly_what_happens() {
        let policy = SandboxPolicy::default();
        let line = report(&policy);
        if support().available() {
            assert!(line.starts_with("sandbox: workspace-write enforced with Landlock ABI"), "{line}");
        } else {
            assert!(line.contains("shell commands are refused"), "{line}");
        }
        let full = SandboxPolicy { mode: SandboxMode::FullAccess, ..policy };
        assert!(report(&full).starts_with("sandbox: full-access"));
    }
}
