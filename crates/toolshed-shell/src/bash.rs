//! `bash`: run a command; see the description below for what the model is told.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::{Permission, PermissionRequest};
use toolshed_core::protected;
use toolshed_core::tool::{Alias, ToolFlags, ToolSpec, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};

use toolshed_path::{Confinement, Permitted, ResolvedPath};

use crate::session::ProcessSession;
use toolshed_shellpolicy as bash_permission;

use super::process::{self, Exit, KILL_GRACE, SpawnRequest, StdinMode};
use super::sandbox::{self, Plan, SandboxMode, SandboxPolicy};
use super::{MEMORY_BUDGET, Shell, exit_line, exit_metadata};

/// Default `timeout_ms`.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest `timeout_ms` (and `yield_ms`).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// `yield_ms` of a `tty: true` command that did not set one.
pub const DEFAULT_TTY_YIELD_MS: u64 = 10_000;
/// The permission key asked when a sandboxed command failed and should rerun unsandboxed.
pub const ESCALATION_PERMISSION: &str = "sandbox_escalation";
/// Runs of one call at most: sandboxed with protected paths read-only, sandboxed without the
/// binds (`protected` granted), unsandboxed (`sandbox_escalation` granted).
const MAX_RUNS: u32 = 3;
/// Headroom above the shell's own deadline before the chain's time limit stops the call; an
/// approval wait for escalation gets more.
const CHAIN_HEADROOM: Duration = Duration::from_secs(5);
const APPROVAL_HEADROOM: Duration = Duration::from_secs(300);

/// Arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// Chain steps with `&&`.
    #[schemars(description = "")]
    pub command: String,
    /// Relative to the working directory.
    pub workdir: Option<String>,
    /// Stop everything it started after this long.
    #[schemars(description = "")]
    #[schemars(range(min = 1, max = 600000))]
    pub timeout_ms: Option<u64>,
    /// Return if still running after this long; it runs on as a session.
    #[schemars(range(min = 0, max = 600000))]
    pub yield_ms: Option<u64>,
    /// Run on a pseudo-terminal (REPLs, prompts). Implies yield_ms 10000.
    #[serde(default)]
    pub tty: bool,
    /// 5-10 words, for the user.
    pub description: Option<String>,
    /// Where `workdir` led when permission was checked.
    #[serde(skip)]
    #[schemars(skip)]
    pub permitted_workdir: Permitted,
    /// Directories outside the worktree the permitted requests covered (`external_directory`):
    /// the sandbox lets the command write there too.
    #[serde(skip)]
    #[schemars(skip)]
    pub approved_dirs: OnceLock<Vec<PathBuf>>,
}

impl BashArgs {
    fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).clamp(1, MAX_TIMEOUT_MS))
    }

    fn yield_after(&self) -> Option<Duration> {
        let ms = match (self.yield_ms, self.tty) {
            (Some(ms), _) => ms,
            (None, true) => DEFAULT_TTY_YIELD_MS,
            (None, false) => return None,
        };
        Some(Duration::from_millis(ms.min(MAX_TIMEOUT_MS)))
    }
}

/// The pattern of text the shell runs that is not analysed as a command line: the input sent to
/// a session, and a command asked to rerun without the sandbox (the user approves the whole text).
pub fn permission_patterns(command: &str) -> Vec<String> {
    vec![command.trim().to_string()]
}

/// The `bash` tool.
pub struct Bash {
    shell: Shell,
}

impl Bash {
    /// `bash` sharing `shell`'s policy and sessions.
    pub fn new(shell: Shell) -> Self {
        Bash { shell }
    }
}

fn sandbox_sentence(policy: &SandboxPolicy) -> String {
    let support = sandbox::support();
    match policy.mode {
        SandboxMode::FullAccess => String::new(),
        _ if !support.available() && policy.allow_unsandboxed => " There is no sandbox on this machine.".to_string(),
        _ if !support.available() => {
            " This machine cannot sandbox commands and may not run them unsandboxed: every command is refused.".to_string()
        }
        SandboxMode::ReadOnly => " Every write fails (read-only sandbox: \"Permission denied\").".to_string(),
        SandboxMode::WorkspaceWrite => " Writes outside the worktree, the temp directory and tool caches fail (sandbox: \"Permission denied\"); `.git` and toolshed's files may be read-only.".to_string(),
    }
}

/// The description a model reads when its commands run under `policy`.
fn describe(policy: &SandboxPolicy) -> String {
    format!(
        "Runs `bash -c command`. Each call is a fresh non-interactive shell: stdin is closed (with `yield_ms`, open for bash_output's input), `cd` and exports do not persist (use `workdir`), secret-looking variables are unset. `timeout_ms` (default {DEFAULT_TIMEOUT_MS}) stops the command and all it started; once `yield_ms` has passed, only a `timeout_ms` you gave does. A `cmd &` is stopped when the command ends: for servers and watchers set `yield_ms`, then use bash_output.{} Prefer the file tools to cat, grep, sed or echo >.",
        sandbox_sentence(policy)
    )
}

impl TypedTool for Bash {
    type Args = BashArgs;

    fn name(&self) -> &str {
        "bash"
    }

    // Codex's exec_command (`cmd`, `yield_time_ms`) and others' working directory. Not
    // `timeout`: milliseconds for some agents, seconds for others.
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[
            ("cmd", Alias::Param("command")),
            ("yield_time_ms", Alias::Param("yield_ms")),
            ("cwd", Alias::Param("workdir")),
            ("directory", Alias::Param("workdir")),
        ]
    }

    fn description(&self) -> String {
        describe(self.shell.policy())
    }

    fn description_for(&self, agent: &str, _permission: &dyn Permission) -> Option<String> {
        let policy = self.shell.policy_for(agent);
        (policy != *self.shell.policy()).then(|| describe(&policy))
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::MUTATING
    }

    fn permissions(
        &self,
        _spec: &ToolSpec,
        args: &BashArgs,
        ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        let dir = resolve_workdir(ctx, args.workdir.as_deref())?;
        args.permitted_workdir.remember(&dir);
        let requests = command_requests(ctx, &args.command, &dir);
        let _ = args.approved_dirs.set(external_dirs(&requests));
        Ok(requests)
    }

    fn time_limit(&self, args: &BashArgs) -> Option<Duration> {
        let own = args.yield_after().map_or(args.timeout(), |y| y.min(args.timeout()));
        let once = own + KILL_GRACE + CHAIN_HEADROOM;
        if self.shell.never_sandboxed() {
            Some(once)
        } else {
            Some(once * MAX_RUNS + APPROVAL_HEADROOM * (MAX_RUNS - 1))
        }
    }

    async fn run(&self, args: BashArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let dir = self.confirm_workdir(&args, &ctx).await?;
        let extra = args.approved_dirs.get().cloned().unwrap_or_default();
        let cwd = dir.path().to_path_buf();
        let policy = &self.shell.policy_for(ctx.agent());
        let protect = protected_paths(policy, &ctx, &cwd, &extra);
        // Read-only commands create nothing; any other run is looked at for protected paths it
        // created where the analysis could not see it.
        let absent = if policy.mode == SandboxMode::ReadOnly { Vec::new() } else { super::created::absent(&ctx, &cwd) };
        let plan = sandbox::plan(policy, ctx.root(), &extra, &protect)?;
        let label = plan.label(policy);
        if args.yield_after().is_some() {
            self.shell.state.sessions.check_capacity()?;
        }
        let (confinement, mut notes) = match plan {
            Plan::Unsandboxed { note } => (None, note.into_iter().collect::<Vec<_>>()),
            Plan::Sandboxed(confinement) => (Some(confinement), Vec::new()),
        };
        let sandboxed = confinement.is_some();
        let bound: Vec<PathBuf> = confinement.as_ref().map(|c| c.read_only_paths().to_vec()).unwrap_or_default();
        let covered: Vec<PathBuf> = confinement.as_ref().map(|c| c.covered_sockets().to_vec()).unwrap_or_default();
        let home: Option<PathBuf> = confinement.as_ref().and_then(|c| c.read_only_home().map(Path::to_path_buf));
        let mut result = self.attempt(&args, &cwd, confinement, &ctx).await?;
        let mut escalated = false;
        let mut read_only = bound.clone();
        // toolshed's data directory (the records of what a person accepted) stays read-only
        // whatever is approved: `protected` is about the worktree's and the user's files.
        let data_dir = toolshed_core::paths::data_dir();
        let (kept, liftable): (Vec<PathBuf>, Vec<PathBuf>) =
            bound.iter().cloned().partition(|p| p.starts_with(&data_dir));
        // A directory that holds the socket of a server outside is pinned too (`sockets.rs`);
        // moving it is no reason to ask about protected paths the output does not name.
        let socket_dirs: Vec<&Path> = covered.iter().filter_map(|p| p.parent()).collect();
        let names_liftable =
            liftable.iter().any(|p| p.file_name().is_some_and(|n| result.output.text.contains(&*n.to_string_lossy())));
        let about_sockets = result.bind_refused()
            && socket_dirs.iter().any(|d| result.output.text.contains(&*d.to_string_lossy()))
            && !names_liftable;
        // Nor is a home directory bound read-only (`sandbox::read_only_home`): like any directory
        // outside the sandbox's writable ones, it takes running without the sandbox.
        let about_home = home
            .filter(|h| result.bind_refused() && !names_liftable && result.output.text.contains(&*h.to_string_lossy()));
        if let Some(home) = about_home {
            notes.push(format!(
                "(The home directory {} is read-only to sandboxed commands, but for the tool caches that exist in it and the worktree: what lies there (shell start-up files, git's configuration, ~/.local/bin) runs outside the sandbox later. A missing cache directory such as ~/.npm cannot be made here; the user can make it.)",
                home.display()
            ));
        } else if about_sockets {
            notes.push("(The directories that hold the sockets of servers outside the sandbox cannot be moved or removed in it (\"Device or resource busy\"). Do not work around this; tell the user what you wanted to change.)".to_string());
        } else if !liftable.is_empty() && result.bind_refused() {
            let patterns: Vec<String> = liftable.iter().map(|p| protected_pattern(p, ctx.root())).collect();
            let request = PermissionRequest::new(protected::PERMISSION, patterns)
                .with_metadata("command", args.command.clone())
                .with_metadata(
                    "reason",
                    "the command failed writing a protected path (.git, toolshed.toml, custom tools, skills, your toolshed config), or moving a directory that holds one, which the sandbox keeps read-only; rerun it, still sandboxed, with them writable?",
                );
            match ctx.ask(request).await {
                Ok(()) => {
                    notes.push("(The command failed on protected paths that the sandbox keeps read-only; with permission `protected` it was run again, still sandboxed, with them writable. This is that second run's output.)".to_string());
                    let plan = sandbox::plan(policy, ctx.root(), &extra, &kept)?;
                    let Plan::Sandboxed(confinement) = plan else {
                        return Err(ToolError::fatal("the sandbox changed between two runs of one command"));
                    };
                    read_only = kept.clone();
                    result = self.attempt(&args, &cwd, Some(confinement), &ctx).await?;
                }
                Err(refusal) => {
                    notes.push(format!(
                        "(The command failed on protected paths that the sandbox keeps read-only ({}); the directories that hold them cannot be moved or removed either (\"Device or resource busy\"); writing them was not allowed: {}. The output above is from that run. Do not work around this; tell the user what you wanted to change.)",
                        liftable.iter().map(|p| protected_pattern(p, ctx.root())).collect::<Vec<_>>().join(", "),
                        refusal_reason(&refusal)
                    ));
                    notes.extend(self.settle_created(&ctx, &absent, &args, &result).await);
                    return Ok(self.finish(result, &args, &notes, label, false, &read_only));
                }
            }
        }
        if sandboxed && result.sandbox_refused() {
            let request = PermissionRequest::new(ESCALATION_PERMISSION, permission_patterns(&args.command))
                .with_metadata("command", args.command.clone())
                .with_metadata(
                    "reason",
                    "the command failed in the sandbox with a permission error; rerun it without the sandbox?",
                );
            match ctx.ask(request).await {
                Ok(()) => {
                    escalated = true;
                    read_only.clear();
                    notes.push("(The sandboxed run failed with a permission error; with the user's approval the command was run again WITHOUT the sandbox. This is that second run's output.)".to_string());
                    result = self.attempt(&args, &cwd, None, &ctx).await?;
                }
                Err(refusal) => {
                    notes.push(format!(
                        "(The {} sandbox appears to have refused this command. Rerunning it without the sandbox was not approved: {}. The output below is from the sandboxed run.)",
                        sandbox::mode_name(policy.mode),
                        refusal_reason(&refusal)
                    ));
                }
            }
        }
        notes.extend(self.settle_created(&ctx, &absent, &args, &result).await);
        if sandboxed && !escalated {
            notes.extend(self.unseen_sessions_note(&args, &result));
            notes.extend(sandbox::sockets::note(&format!("{}\n{}", args.command, result.output.text), &covered));
        }
        Ok(self.finish(result, &args, &notes, label, escalated, &read_only))
    }
}

/// The refusal of an `ask` made while running: it speaks of a call that was not run, but this
/// one was, sandboxed; keep only the reason.
fn refusal_reason(refusal: &ToolError) -> String {
    let refusal = refusal.to_string();
    toolshed_core::exec::permit::refusal_facts(&refusal).trim_end_matches('.').to_string()
}

/// The protected paths `policy` binds read-only for a command run in `cwd`: those that exist
/// from the root down to the working directory and to `cwd` ([`protected::existing`]), and the
/// git directories of a linked worktree (its hooks and config live there, not in its `.git`
/// file), except those the agent's rules (or an "always" answer) already let it write. Only
/// `workspace-write` binds: `read-only` writes nothing anyway.
fn protected_paths(policy: &SandboxPolicy, ctx: &ToolContext, cwd: &Path, extra: &[PathBuf]) -> Vec<PathBuf> {
    if policy.mode != SandboxMode::WorkspaceWrite {
        return Vec::new();
    }
    let mut paths = protected_candidates(ctx.root(), &[ctx.cwd(), cwd], extra);
    for path in external_protected(extra) {
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    // The data directory (the records of what a person accepted) whatever the rules say.
    let data_dir = toolshed_core::paths::data_dir();
    paths.retain(|path| {
        let request = PermissionRequest::new(protected::PERMISSION, [protected_pattern(path, ctx.root())]);
        path.starts_with(&data_dir) || !ctx.allows(&request)
    });
    paths
}

/// The protected paths in the directories outside the worktree a command was allowed to write
/// (`external_directory`): those of each directory itself and of the directories right under
/// it (the repositories beside the worktree, whose `.git/config` and hooks the person's git
/// would run). Deeper repositories are the nested-repository gap of the worktree itself.
fn external_protected(extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in extra {
        out.extend(protected::existing(dir, dir));
        let children = std::fs::read_dir(dir).into_iter().flatten().flatten().take(4096);
        for child in children.filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            let child = child.path();
            out.extend(
                protected::locations(&child, &child).into_iter().filter(|p| std::fs::symlink_metadata(p).is_ok()),
            );
        }
    }
    out
}

/// The protected paths to bind read-only for a process in the worktree `root` that works in
/// the directories `cwds` (and may write `extra` outside it): those that exist from the root down
/// to each ([`protected::existing`]), the user's own directories where it may write, the git
/// directories of a linked worktree, and what in the tool directories makes later programs run
/// other code ([`sandbox::tool_dir_entries`]).
fn protected_candidates(root: &Path, cwds: &[&Path], extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    // The user's directories (and where their links lead) that lie where a command may write:
    // a worktree holding `~/.config`, a dotfiles checkout, a directory approved outside. Those
    // that do not exist yet are made or recorded first, so that a process the command leaves
    // running cannot make them unseen.
    let writable = sandbox::writable_roots(root, extra);
    protected::prepare_user_dirs(&writable);
    let user = protected::user_places(toolshed_core::paths::config_dir().as_deref())
        .into_iter()
        .filter(|place| writable.iter().any(|w| place.starts_with(w)) && std::fs::symlink_metadata(place).is_ok());
    let all = cwds
        .iter()
        .flat_map(|cwd| protected::existing(root, cwd))
        .chain(user)
        .chain(git_dir_binds(root))
        .chain(sandbox::tool_dir_entries().into_iter().filter(|p| !p.starts_with(root)));
    for path in all {
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

/// Confines `command`, a long-lived helper that reads the worktree `root` and may run code
/// from it (a language server runs build scripts and proc macros, or a TypeScript found in
/// `node_modules`), in the sandbox of a shell command in `root` under `policy`, less the
/// worktree itself: it writes only the temp dirs and tool caches (where the worktree lies under
/// one of those, the protected paths stay read-only), and has the network only if commands have
/// it. Returns the mode it will run in (`none` when the policy runs commands unsandboxed).
/// Where the kernel cannot sandbox and running unsandboxed is not allowed, it is refused, as a
/// command would be.
pub fn confine_helper(
    command: &mut std::process::Command,
    policy: &SandboxPolicy,
    root: &Path,
) -> Result<&'static str, ToolError> {
    let protect =
        if policy.mode == SandboxMode::WorkspaceWrite { protected_candidates(root, &[root], &[]) } else { Vec::new() };
    let plan = sandbox::plan_reader(policy, root, &protect)?;
    Ok(confine_by(command, policy, plan, None))
}

/// Confines `command`, a custom tool's process (or the JS host that runs OpenCode tool files),
/// in the sandbox of a shell command in the worktree `root`, started from `cwd`, under `policy`
/// (the protected paths from the root down to `cwd` bound read-only): it may write the
/// worktree, the temp dirs and tool caches, the protected paths stay read-only, and it has the
/// network only if commands have it. A custom tool runs code the model can change without
/// asking anyone (a script it calls, a package in `node_modules`, a module it imports), so it
/// gets no more than a command the model writes. Returns the mode it will run in; where the
/// kernel cannot sandbox and running unsandboxed is not allowed, it is refused, as a command
/// would be.
pub fn confine_tool(
    command: &mut std::process::Command,
    policy: &SandboxPolicy,
    root: &Path,
    cwd: &Path,
) -> Result<&'static str, ToolError> {
    confine_tool_with(command, policy, root, cwd, None)
}

/// [`confine_tool`], with `pids` as [`sandbox::Confinement::apply_in_child`] takes it.
fn confine_tool_with(
    command: &mut std::process::Command,
    policy: &SandboxPolicy,
    root: &Path,
    cwd: &Path,
    pids: Option<sandbox::OwnPids>,
) -> Result<&'static str, ToolError> {
    let protect = if policy.mode == SandboxMode::WorkspaceWrite {
        protected_candidates(root, &[root, cwd], &[])
    } else {
        Vec::new()
    };
    let plan = sandbox::plan(policy, root, &[], &protect)?;
    Ok(confine_by(command, policy, plan, pids))
}

/// [`confine_tool`] for a process that should leave nothing running once it ends (a custom
/// tool's): it gets a PID namespace of its own where it gets a mount namespace, whose init
/// ends what it left running when it ends (`sandbox/init.rs`). Also returns what stops its
/// leftovers otherwise — found by its mount namespace (which the child sends once it is in it)
/// or its process group — and counts them, to call when it has ended.
pub fn confine_tool_tracked(
    command: &mut std::process::Command,
    policy: &SandboxPolicy,
    root: &Path,
    cwd: &Path,
) -> Result<(&'static str, toolshed_process::Leftovers), ToolError> {
    let (receiver, sender) = super::process::namespace_channel()
        .map_err(|e| ToolError::fatal(format!("could not prepare the command's sandbox: {e}")))?;
    let sender_fd = std::os::fd::AsRawFd::as_raw_fd(&sender);
    let pids = sandbox::OwnPids { report: sender_fd, own_group: false };
    let label = confine_tool_with(command, policy, root, cwd, Some(pids))?;
    {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: runs between fork and exec, after the confinement's own hook: raw system calls
        // on stack buffers only (`send_namespace`).
        unsafe {
            command.pre_exec(move || {
                super::process::send_namespace(sender_fd, c"/proc/self/ns/mnt");
                Ok(())
            });
        }
    }
    // The child's end stays open in this process until the command is spawned: it is dropped
    // with the closure that stops the leftovers, which runs after the child has ended.
    let stop = move |pid: u32| {
        drop(sender);
        let namespace = super::process::receive_namespace(&receiver);
        super::process::stop_leftovers("", namespace.as_ref(), i32::try_from(pid).unwrap_or(-1))
            + super::process::receive_left(&receiver)
    };
    Ok((label, toolshed_process::Leftovers(Box::new(stop))))
}

/// Applies `plan` to `command` (between fork and exec), with `pids` as
/// [`sandbox::Confinement::apply_in_child`] takes it; the mode's label.
fn confine_by(
    command: &mut std::process::Command,
    policy: &SandboxPolicy,
    plan: Plan,
    pids: Option<sandbox::OwnPids>,
) -> &'static str {
    let label = plan.label(policy);
    if let sandbox::Plan::Sandboxed(confinement) = plan {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: the closure runs in the child between fork and exec and only makes raw system
        // calls on data prepared before the fork (see `Confinement::apply_in_child`).
        unsafe {
            command.pre_exec(move || confinement.apply_in_child(pids));
        }
    }
    label
}

/// What to bind of the validated git dirs of the worktree `root`: each dir, or, for a common
/// dir that holds the worktree itself (a bare repository with its worktrees inside), each of
/// its entries but the one leading to the worktree (binding the dir would make the worktree
/// read-only too).
fn git_dir_binds(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in sandbox::pin_git_dirs(root) {
        if !root.starts_with(&dir) {
            out.push(dir);
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        out.extend(entries.flatten().map(|e| e.path()).filter(|p| !root.starts_with(p)));
    }
    out
}

/// The `protected` pattern of a bound path: relative to the worktree, `<dir>/*` for a directory
/// (everything under it), the path itself for a file.
fn protected_pattern(path: &Path, root: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path).display().to_string();
    let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if is_dir { format!("{rel}/*") } else { rel }
}

impl Bash {
    /// Protected paths the command created unseen (see [`super::created`]); for a command still
    /// running as a session, its session checks them when it ends.
    async fn settle_created(
        &self,
        ctx: &ToolContext,
        absent: &[PathBuf],
        args: &BashArgs,
        result: &Attempt,
    ) -> Option<String> {
        if let Ending::Session(id) = result.ending
            && let Ok(session) = self.shell.state.sessions.get(id)
        {
            // Still running: removed as they appear, with nobody to ask (see `session.rs`).
            ProcessSession::watch_protected(&session, absent.to_vec());
            return session.settle_protected(ctx.root());
        }
        super::created::settle(ctx, absent, &args.command).await
    }

    /// A command that looked for processes or signalled one while shell sessions run is told
    /// that it cannot reach theirs (each command has a process space of its own), and how to
    /// stop one: otherwise "No such process" reads as if the server had already gone.
    fn unseen_sessions_note(&self, args: &BashArgs, result: &Attempt) -> Option<String> {
        const LOOKS_FOR_PROCESSES: &[&str] = &["kill", "pkill", "killall", "pgrep", "pidof", "fuser", "ps"];
        if !matches!(result.ending, Ending::Exited(_)) || !sandbox::own_process_spaces() {
            return None;
        }
        let words = args.command.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'));
        let looked = words.into_iter().any(|w| LOOKS_FOR_PROCESSES.contains(&w))
            || result.output.text.contains("No such process");
        if !looked {
            return None;
        }
        let running = self.shell.state.sessions.list_running();
        if running.is_empty() {
            return None;
        }
        let listed: Vec<String> = running.iter().map(|(id, command)| format!("{id} (`{command}`)")).collect();
        let (one, first) = (running.len() == 1, running[0].0);
        Some(format!(
            "(Shell session{} {} run{} in a process space of {} own: other commands can neither see nor signal {} processes. To stop one, call bash_output with its session_id and stop: true (e.g. session_id {first}).)",
            if one { "" } else { "s" },
            listed.join(", "),
            if one { "s" } else { "" },
            if one { "its" } else { "their" },
            if one { "its" } else { "their" },
        ))
    }

    /// The model's text and metadata of the run that counts.
    fn finish(
        &self,
        result: Attempt,
        args: &BashArgs,
        notes: &[String],
        label: &str,
        escalated: bool,
        read_only: &[PathBuf],
    ) -> ToolOutput {
        let title = args.description.clone().unwrap_or_else(|| super::session::short(&args.command));
        let read_only: Vec<String> = read_only.iter().map(|p| p.display().to_string()).collect();
        result
            .render(args, notes)
            .with_title(title)
            .with_metadata("sandbox", if escalated { "none" } else { label })
            .with_metadata("escalated", escalated)
            .with_metadata("read_only_paths", read_only)
    }

    /// Resolves `workdir` again just before running: it must lead where it led when permission
    /// was checked. Outside the chain (no permission check happened) the requests are asked here.
    async fn confirm_workdir(&self, args: &BashArgs, ctx: &ToolContext) -> Result<ResolvedPath, ToolError> {
        let now = resolve_workdir(ctx, args.workdir.as_deref())?;
        match args.permitted_workdir.get() {
            Some(before) if before.same_target(&now) => Ok(now),
            Some(before) => Err(ToolError::model(format!(
                "workdir `{}` resolved to `{}` when permission was checked but to `{}` now (a symbolic link changed). Nothing was run. Check the directory and call again.",
                now.input(),
                before.path().display(),
                now.path().display()
            ))),
            None => {
                let requests = command_requests(ctx, &args.command, &now);
                let _ = args.approved_dirs.set(external_dirs(&requests));
                for request in requests {
                    ctx.ask(request).await?;
                }
                Ok(now)
            }
        }
    }

    async fn attempt(
        &self,
        args: &BashArgs,
        cwd: &Path,
        confinement: Option<sandbox::Confinement>,
        ctx: &ToolContext,
    ) -> Result<Attempt, ToolError> {
        let yield_after = args.yield_after();
        let stdin = match (args.tty, yield_after) {
            (true, _) => StdinMode::Tty,
            (false, Some(_)) => StdinMode::Pipe,
            (false, None) => StdinMode::Closed,
        };
        let request = SpawnRequest {
            command: &args.command,
            cwd,
            stdin,
            confinement,
            sink: ctx.output_sink(MEMORY_BUDGET),
            env: &self.shell.state.env,
        };
        let run = process::spawn(request).map_err(|e| {
            ToolError::model(format!("Could not start the command: {e}. Check `workdir` and try again."))
        })?;
        let timeout = args.timeout();
        // `None`: the command is still running when `yield_ms` passed.
        let ending = tokio::select! {
            () = run.wait_done() => Some(match run.exit() {
                Some(exit) => Ending::Exited(exit),
                None => Ending::WaitFailed(run.wait_error().unwrap_or_default()),
            }),
            () = tokio::time::sleep(timeout) => {
                run.terminate().await;
                Some(Ending::TimedOut(timeout))
            },
            () = ctx.cancellation().cancelled() => {
                run.terminate().await;
                Some(Ending::Interrupted)
            },
            () = tokio::time::sleep(yield_after.unwrap_or(Duration::MAX)), if yield_after.is_some() => None,
        };
        let elapsed = run.elapsed();
        let leftovers = run.stopped_leftovers();
        let output = run.take_output(ctx.output_sink(MEMORY_BUDGET));
        let ending = match ending {
            Some(ending) => ending,
            None => {
                let remaining = args.timeout_ms.map(|_| timeout.saturating_sub(elapsed));
                Ending::Session(self.shell.state.sessions.insert(&args.command, run, remaining).id)
            }
        };
        Ok(Attempt { output, ending, elapsed, leftovers })
    }
}

/// How one run ended.
enum Ending {
    Exited(Exit),
    TimedOut(Duration),
    Interrupted,
    Session(u32),
    WaitFailed(String),
}

struct Attempt {
    output: toolshed_core::output::SinkOutput,
    ending: Ending,
    elapsed: Duration,
    /// Processes the command left running, stopped when its shell ended.
    leftovers: usize,
}

impl Attempt {
    fn sandbox_refused(&self) -> bool {
        match self.ending {
            Ending::Exited(exit) => sandbox::looks_like_denial(exit.code, exit.signal, &self.output.text),
            _ => false,
        }
    }

    fn bind_refused(&self) -> bool {
        match self.ending {
            Ending::Exited(exit) => sandbox::looks_like_bind_refusal(exit.code, &self.output.text),
            _ => false,
        }
    }

    fn render(self, args: &BashArgs, notes: &[String]) -> ToolOutput {
        let grace = KILL_GRACE.as_millis();
        let (status, exit) = match &self.ending {
            Ending::Exited(exit) => (exit_line(*exit), Some(*exit)),
            Ending::TimedOut(limit) => (
                format!(
                    "Timed out after {} ms: the command and every process it started were stopped (SIGTERM, then SIGKILL after {grace} ms). The output above is what it printed until then. If it needs longer and is not waiting for input, rerun it with a larger timeout_ms (at most {MAX_TIMEOUT_MS}), or with yield_ms to keep it running in the background.",
                    limit.as_millis()
                ),
                None,
            ),
            Ending::Interrupted => (
                format!(
                    "Interrupted by the user: the command and every process it started were stopped (SIGTERM, then SIGKILL after {grace} ms). The output above is partial."
                ),
                None,
            ),
            Ending::Session(id) => (
                format!(
                    "Still running after {} ms, as session {id}. Call bash_output with session_id {id} to read new output{}, or with stop: true to stop it.",
                    self.elapsed.as_millis(),
                    if args.tty { " or type into its terminal" } else { " or send input" }
                ),
                None,
            ),
            Ending::WaitFailed(error) => (format!("The command's exit status could not be read: {error}."), None),
        };
        let mut notes = notes.to_vec();
        // (A timeout or an interruption says already that everything was stopped.)
        if self.leftovers > 0 && matches!(self.ending, Ending::Exited(_)) {
            notes.push(leftovers_note(self.leftovers));
        }
        let mut out = exit_metadata(super::compose(self.output, &status, &notes), exit)
            .with_metadata("duration_ms", self.elapsed.as_millis() as u64);
        match self.ending {
            Ending::TimedOut(_) => out = out.with_metadata("timed_out", true),
            Ending::Interrupted => out = out.with_metadata("interrupted", true),
            Ending::Session(id) => out = out.with_metadata("session_id", id),
            _ => {}
        }
        out
    }
}

/// What the model is told when a command left processes running: they were stopped, and how to
/// keep one running instead.
pub(crate) fn leftovers_note(count: usize) -> String {
    format!(
        "(The command left {count} process{} running in the background; {} stopped when it ended: nothing a command starts outlives it. To keep a server or watcher running, start it with yield_ms and read or stop it with bash_output.)",
        if count == 1 { "" } else { "es" },
        if count == 1 { "it was" } else { "they were" }
    )
}

/// The directory a command runs in: `workdir` resolved against the context's working
/// directory (default: the working directory itself) by the shared path rules. It must be an
/// existing directory; outside the worktree it needs `external_directory`.
fn resolve_workdir(ctx: &ToolContext, workdir: Option<&str>) -> Result<ResolvedPath, ToolError> {
    let input = workdir.filter(|w| !w.trim().is_empty()).unwrap_or(".");
    let dir = Confinement::from_context(ctx).resolve(input)?;
    if !dir.is_dir() {
        let what = if dir.exists() { "is not a directory" } else { "does not exist" };
        let shown = dir.display();
        let resolved = if shown == input { String::new() } else { format!(" ({shown})") };
        return Err(ToolError::model(format!(
            "workdir `{input}`{resolved} {what}. Send an existing directory, relative to the working directory, or leave workdir out."
        )));
    }
    Ok(dir)
}

/// What running `command` in `dir` needs permission for: the shell analysis splits compound
/// commands and checks each part in several views, redirect targets, and paths outside the
/// worktree (the workdir included).
/// Also the `read` rules of the files the command shows without naming them (`grep -r KEY .`).
fn command_requests(ctx: &ToolContext, command: &str, dir: &ResolvedPath) -> Vec<PermissionRequest> {
    let home = toolshed_core::paths::home_dir();
    let analysis = bash_permission::analyse(command, dir.path(), ctx.root(), home.as_deref());
    let mut requests = analysis.requests;
    requests.extend(super::tree_reads::requests(ctx, &analysis.tree_reads));
    requests
}

/// The directories `external_directory` requests name (`<dir>/*` patterns).
fn external_dirs(requests: &[PermissionRequest]) -> Vec<PathBuf> {
    requests
        .iter()
        .filter(|r| r.permission == "external_directory")
        .flat_map(|r| r.patterns.iter())
        .map(|p| PathBuf::from(p.strip_suffix("/*").unwrap_or(p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SandboxPolicy;

    fn args(json: serde_json::Value) -> BashArgs {
        serde_json::from_value(json).unwrap()
    }

    fn full_access() -> Bash {
        Bash::new(Shell::new(SandboxPolicy { mode: SandboxMode::FullAccess, ..SandboxPolicy::default() }))
    }

    #[test]
    fn chain_time_limit_stays_above_the_shells_own_timeout() {
        let bash = full_access();
        let limit = bash.time_limit(&args(serde_json::json!({"command": "x"}))).unwrap();
        assert!(limit > Duration::from_millis(DEFAULT_TIMEOUT_MS) + KILL_GRACE);
        let limit =
            bash.time_limit(&args(serde_json::json!({"command": "x", "timeout_ms": 5000, "yield_ms": 100}))).unwrap();
        assert!(limit < Duration::from_secs(30), "a session's call ends at yield_ms: {limit:?}");
        let sandboxed = Bash::new(Shell::new(SandboxPolicy::default()));
        let limit = sandboxed.time_limit(&args(serde_json::json!({"command": "x", "timeout_ms": 1000}))).unwrap();
        assert!(limit > Duration::from_secs(2) + APPROVAL_HEADROOM, "room for an escalation's approval and rerun");
    }

    #[test]
    fn tty_implies_a_yield() {
        assert_eq!(args(serde_json::json!({"command": "x", "tty": true})).yield_after(), Some(Duration::from_secs(10)));
        assert_eq!(args(serde_json::json!({"command": "x"})).yield_after(), None);
    }

    #[test]
    fn permission_pattern_is_the_trimmed_command() {
        assert_eq!(permission_patterns("  git status --short \n"), vec!["git status --short".to_string()]);
    }

    #[tokio::test]
    async fn runs_outside_the_chain_with_a_standalone_context() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let ctx = ToolContext::standalone(&root, root.join(".data"));
        let out = full_access().run(args(serde_json::json!({"command": "pwd", "workdir": "sub"})), ctx).await.unwrap();
        assert_eq!(out.text, format!("{}\n\nExit code: 0", root.join("sub").display()));
        assert_eq!(out.metadata["exit_code"], 0);
        assert!(!out.metadata.contains_key("signal"));
    }

    #[tokio::test]
    async fn workdir_that_is_a_file_is_refused_with_an_instruction() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::write(root.join("file.txt"), "x").unwrap();
        let ctx = ToolContext::standalone(&root, root.join(".data"));
        let err = full_access()
            .run(args(serde_json::json!({"command": "pwd", "workdir": "file.txt"})), ctx)
            .await
            .unwrap_err();
        insta::assert_snapshot!(err.to_string(), @"workdir `file.txt` is not a directory. Send an existing directory, relative to the working directory, or leave workdir out.");
    }
}
