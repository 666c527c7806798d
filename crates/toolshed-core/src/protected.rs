//! Protected paths: the files that configure toolshed itself or make it (or git) run programs.
//!
//! A model that could write these could lift its own limits: `toolshed.toml` sets the rules and
//! the sandbox, `.toolshed/` and `.opencode/tool(s)` hold tools that run on the next call, skill
//! directories feed the system prompt, and `.git/` holds hooks and config that git runs. A write
//! to any of them (through any tool: `write`, `edit`, `apply_patch`, a shell redirection, a known
//! writer such as `cp` or `sed -i`) is a `protected` request besides its `edit` request, and
//! `protected` asks by default (users may allow it). The shell's sandbox keeps the ones that
//! exist read-only where the kernel allows it.
//!
//! This module is the one list; the permission chain, the shell analysis and the sandbox all use
//! it. `AGENTS.md` is deliberately not here: it is the project's own text, edited routinely.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The permission key of a write to a protected path.
pub const PERMISSION: &str = "protected";

/// Directory names protected wherever they appear: everything beneath them is protected.
const DIRS: &[&str] = &[".git", ".toolshed"];

/// Two-component directories protected wherever they appear (parent, child).
const NESTED_DIRS: &[(&str, &str)] = &[
    (".opencode", "tool"),
    (".opencode", "tools"),
    (".opencode", "skills"),
    (".opencode", "skill"),
    (".claude", "skills"),
    (".agents", "skills"),
];

/// File names protected wherever they appear: toolshed's project file, and `.gitmodules`,
/// which says which directories are submodules whose `.git` git goes into (review 6: a command
/// removed a submodule from it, and the `.git` it then left unprotected ran a program at the
/// next `git status`).
pub const FILES: &[&str] = &[crate::config::PROJECT_FILE, GITMODULES];

/// The file that lists a repository's submodules.
const GITMODULES: &str = ".gitmodules";

/// The protected locations as written relative to a directory, for listing and for the
/// sandbox's read-only binds (see [`existing`]).
pub const LOCATIONS: &[&str] = &[
    ".git",
    ".toolshed",
    ".opencode/tool",
    ".opencode/tools",
    ".opencode/skills",
    ".opencode/skill",
    ".claude/skills",
    ".agents/skills",
    crate::config::PROJECT_FILE,
    GITMODULES,
];

/// Config files named on the command line (`toolshed --config FILE`), protected like the user's
/// config directory: (the permission pattern tools send for it, its absolute path).
static CONFIG_FILES: std::sync::RwLock<Vec<(String, PathBuf)>> = std::sync::RwLock::new(Vec::new());

/// Protects `file`, a config file this process was told to read instead of the user's
/// (`--config FILE`), for the rest of the process: writes to it ask `protected` like writes to
/// `toolshed.toml`, and [`existing`] lists it for the sandbox's read-only binds. `root` is the
/// worktree, for the pattern tools send (relative inside it, absolute outside).
pub fn protect_config_file(root: &Path, file: &Path) {
    let absolute = std::fs::canonicalize(file).unwrap_or_else(|_| crate::paths::lexical_normalise(file));
    let pattern = match absolute.strip_prefix(root) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => absolute.to_string_lossy().into_owned(),
    };
    let mut files = CONFIG_FILES.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !files.iter().any(|(p, _)| *p == pattern) {
        files.push((pattern, absolute));
    }
}

/// Whether `pattern` names, or may write, a config file given with `--config`.
fn names_config_file(pattern: &str) -> bool {
    let pattern = pattern.trim_start_matches("./");
    let files = CONFIG_FILES.read().unwrap_or_else(std::sync::PoisonError::into_inner);
    files.iter().any(|(file, _)| {
        file == pattern
            || (pattern.contains(['*', '?']) && crate::wildcard::matches(file, pattern))
            // A directory above it (a copy's destination, `rm -r dir`).
            || file.starts_with(&format!("{}/", pattern.trim_end_matches('/')))
    })
}

/// Whether a file-permission pattern (a path relative to the worktree, or an absolute path
/// outside it, as tools send them) names a protected path or may write under one.
///
/// A pattern that ends in a wildcard (`dir/*`, `*`) covers everything under its directory, so it
/// is protected when it may write a protected location: under the worktree's top directory
/// (`./*`), inside a protected directory (`.git/*`), or through a wildcard that may match a
/// protected name (`src/.git*`). The bare pattern `*` is what tools send when they name no
/// path (the whole permission key), not a path, so it is not protected. `user_config` is the
/// user's toolshed config directory (`~/.config/toolshed`), protected as a whole.
pub fn is_protected(pattern: &str, user_config: Option<&Path>) -> bool {
    // `*` alone is what a tool sends when it names no path at all (the whole permission key);
    // a write under the worktree's top directory is `./*`.
    if pattern == "*" {
        return false;
    }
    // The worktree's top directory itself (a copy's destination, `cp -r src/. .`): anything may
    // land there.
    if matches!(pattern, "." | "./") {
        return true;
    }
    let pattern = pattern.replace('\\', "/");
    if names_config_file(&pattern) {
        return true;
    }
    if pattern.starts_with('/')
        && user_dirs(user_config)
            .into_iter()
            .chain(user_places(user_config))
            .any(|d| d.to_str().is_some_and(|d| reaches(&pattern, d)))
    {
        return true;
    }
    let mut components: Vec<&str> = pattern.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    // A wildcard component covers what it may match: at the top of the worktree (`*`, `.gi*/x`)
    // that includes `.git` and `toolshed.toml`; deeper, a component other than a bare `*` that
    // may match a protected name (`src/.git*`). The components after it are unknown.
    if let Some(i) = components.iter().position(|c| c.contains(['*', '?', '['])) {
        let wild = components[i];
        if i == 0 && !pattern.starts_with('/') {
            return true;
        }
        let names = DIRS.iter().chain(FILES).chain(NESTED_DIRS.iter().map(|(parent, _)| parent));
        if wild != "*" && names.into_iter().any(|name| crate::wildcard::matches(name, wild)) {
            return true;
        }
        components.truncate(i);
        return components.iter().any(|c| DIRS.contains(c))
            || components.windows(2).any(|w| NESTED_DIRS.contains(&(w[0], w[1])))
            || components.last().is_some_and(|last| is_nested_parent(last));
    }
    if components.iter().any(|c| DIRS.contains(c)) {
        return true;
    }
    if components.windows(2).any(|w| NESTED_DIRS.contains(&(w[0], w[1]))) {
        return true;
    }
    // A directory that holds protected ones (`.opencode`, `.claude`): moving or copying a
    // directory there (`mv payload .opencode`) creates its `tools/` or `skills/`.
    components.last().is_some_and(|last| FILES.contains(last) || is_nested_parent(last))
}

/// Whether `name` is the parent of protected directories (`.opencode`, `.claude`).
fn is_nested_parent(name: &str) -> bool {
    NESTED_DIRS.iter().any(|(parent, _)| *parent == name)
}

/// The skill directories in the home directory (Claude Code's and the shared `.agents` one), read
/// by the skill tool in every session.
pub const HOME_SKILL_DIRS: &[&str] = &[".claude/skills", ".agents/skills"];

/// The directories outside the worktree whose contents configure toolshed: the user's config
/// directory (`user_config`, `~/.config/toolshed`) and the user's OpenCode tool directories that
/// custom tools and skills are loaded from (`$XDG_CONFIG_HOME/opencode/tool(s)` and
/// `skill(s)`, `~/.opencode/...`, `$OPENCODE_CONFIG_DIR/...`).
pub fn user_dirs(user_config: Option<&Path>) -> Vec<PathBuf> {
    let bases = crate::paths::opencode_config_dirs();
    let mut dirs: Vec<PathBuf> = user_config.map(Path::to_path_buf).into_iter().collect();
    // The skills every session loads from the home directory.
    if let Some(home) = crate::paths::home_dir() {
        dirs.extend(HOME_SKILL_DIRS.iter().map(|d| home.join(d)));
    }
    // What a person accepted of each project (`crate::trust`).
    dirs.push(crate::trust::records_dir(&crate::paths::data_dir()));
    for base in bases {
        // Custom tools, and skills (the skill tool loads them from the same directories).
        dirs.extend(["tool", "tools", "skill", "skills"].map(|sub| base.join(sub)));
    }
    dirs
}

/// Before a process that may write the directories `writable` starts: the user's own
/// directories ([`user_dirs`]) that lie there and do not exist yet. The sandbox keeps only
/// existing paths read-only, and a process left running (`setsid`, a server) could make one
/// after every check (`created.rs`) and so configure every later session. toolshed's own
/// (its config directory, the records of what a person accepted) are made now, empty, so that
/// they are kept read-only; the others (OpenCode's tool and skill directories, which toolshed
/// does not make in a person's home) are recorded, and apply from then on only as a person
/// accepts them (`trust::user_exposure`).
pub fn prepare_user_dirs(writable: &[PathBuf]) {
    let config = crate::paths::config_dir();
    let data_dir = crate::paths::data_dir();
    let own: Vec<PathBuf> = config.iter().cloned().chain([crate::trust::records_dir(&data_dir)]).collect();
    let mut creatable: Vec<(PathBuf, PathBuf)> = Vec::new();
    for dir in user_dirs(config.as_deref()) {
        if std::fs::symlink_metadata(&dir).is_ok() {
            continue;
        }
        let real = crate::paths::real_location(&dir);
        let Some(root) = writable.iter().find(|w| dir.starts_with(w) || real.starts_with(w)) else { continue };
        if own.contains(&dir) && std::fs::create_dir_all(&dir).is_ok() {
            continue;
        }
        creatable.push((dir.clone(), root.clone()));
        if real != dir {
            creatable.push((real, root.clone()));
        }
    }
    if !creatable.is_empty() {
        // Best effort: a data directory that cannot be written holds no records to forge either.
        drop(crate::trust::note_creatable_user_dirs(&data_dir, &creatable));
    }
}

/// Where the user's directories ([`user_dirs`]) and what is in them really are: each directory
/// as spelled and, when a link leads elsewhere (a dotfiles checkout, perhaps in a worktree the
/// model writes), where it leads; and where the links among its entries lead (`config.toml`
/// linked file by file, as GNU Stow or home-manager make it). Only places that exist. All are
/// protected under every name.
pub fn user_places(user_config: Option<&Path>) -> Vec<PathBuf> {
    // Asked for every path a file tool writes: each directory is looked at once per process (a
    // person does not move their config directory during a session).
    static SEEN: std::sync::Mutex<BTreeMap<PathBuf, Vec<PathBuf>>> = std::sync::Mutex::new(BTreeMap::new());
    let mut seen = SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in user_dirs(user_config) {
        // A directory that does not exist yet is looked at again next time: toolshed may make
        // it ([`prepare_user_dirs`]).
        if seen.get(&dir).is_none_or(Vec::is_empty) {
            seen.insert(dir.clone(), places_of(&dir));
        }
        for place in &seen[&dir] {
            if !out.contains(place) {
                out.push(place.clone());
            }
        }
    }
    out
}

fn places_of(dir: &Path) -> Vec<PathBuf> {
    let Ok(real) = dir.canonicalize() else {
        // A link that leads nowhere yet: where it would lead, should a command make it.
        return match std::fs::read_link(dir) {
            Ok(target) => {
                let base = dir.parent().unwrap_or(Path::new("/"));
                vec![dir.to_path_buf(), crate::paths::lexical_normalise(&base.join(target))]
            }
            Err(_) => Vec::new(),
        };
    };
    let mut places = vec![dir.to_path_buf()];
    if real != dir {
        places.push(real);
    }
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten().take(1024) {
        if entry.file_type().is_ok_and(|t| t.is_symlink())
            && let Ok(target) = entry.path().canonicalize()
            && !places.contains(&target)
        {
            places.push(target);
        }
    }
    places
}

/// Whether the absolute pattern `pattern` may write in the directory `dir`: it names `dir`,
/// something inside it, or a directory above it (a copy's or a move's destination), or a wildcard
/// in it may reach into `dir`.
fn reaches(pattern: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    if dir.is_empty() {
        return false;
    }
    let inside = format!("{dir}/");
    match pattern.find(['*', '?', '[']) {
        Some(wild) => {
            let literal = &pattern[..wild];
            inside.starts_with(literal) || literal.starts_with(&inside)
        }
        None => {
            let pattern = pattern.trim_end_matches('/');
            pattern == dir || pattern.starts_with(&inside) || inside.starts_with(&format!("{pattern}/"))
        }
    }
}

/// The `protected` request an `edit` request implies: its patterns that are protected (with
/// `user_config` as in [`is_protected`]), asked about with themselves as the "always" patterns.
/// `None` for other requests, or when nothing it writes is protected. The permit stage and
/// `permission explain` both use this.
pub fn implied_request(
    edit: &crate::permission::PermissionRequest,
    user_config: Option<&Path>,
) -> Option<crate::permission::PermissionRequest> {
    if edit.permission != "edit" {
        return None;
    }
    let paths: Vec<String> = edit.patterns.iter().filter(|p| is_protected(p, user_config)).cloned().collect();
    if paths.is_empty() {
        return None;
    }
    Some(
        crate::permission::PermissionRequest::new(PERMISSION, paths.clone())
            .with_always(paths)
            .with_metadata("reason", "writes to toolshed's configuration, its tools or skills, or git's directory"),
    )
}

/// Every protected location, existing or not, in `root` and in each directory from `root` down
/// to `cwd` (custom tools and skills are discovered at each of those levels).
pub fn locations(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    locations_from(root, cwd)
}

/// The protected locations from `root` down to `cwd` that do not exist now: what a process that
/// is not a shell command (a custom tool, an MCP server's call) must not leave behind. The
/// sandbox keeps existing ones read-only; one that appears was created by the call.
pub fn absent(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut writable = crate::paths::command_writable_dirs();
    writable.push(root.to_path_buf());
    // toolshed's own made first (they are not the process's to make).
    prepare_user_dirs(&writable);
    let mut out: Vec<PathBuf> =
        locations_from(root, cwd).into_iter().filter(|p| std::fs::symlink_metadata(p).is_err()).collect();
    out.extend(repository_heads_absent(root, cwd));
    // The user's own directories that do not exist yet where the process may write (a session
    // started in `~`): one made would be the user's configuration in every later session.
    for path in user_dirs(crate::paths::config_dir().as_deref()) {
        if !out.contains(&path)
            && std::fs::symlink_metadata(&path).is_err()
            && writable.iter().any(|w| path.starts_with(w))
        {
            out.push(path);
        }
    }
    where_they_are(out)
}

/// `paths` where each really is now ([`crate::paths::real_location`]), once each: what to look
/// at after a process ran, and remove without following a link it made
/// ([`crate::paths::remove_made`]).
pub fn where_they_are(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        let real = crate::paths::real_location(&path);
        if !out.contains(&real) {
            out.push(real);
        }
    }
    out
}

/// Removes whichever of `absent` exist now (they did not before, so nothing of the user's is
/// lost), and returns the note for the model when something was: a tool may not create
/// toolshed's configuration, custom tools, skills or a `.git` (a person grants that, through
/// `protected`, to the file tools and `bash` only).
pub fn remove_created(root: &Path, absent: &[PathBuf]) -> Option<String> {
    let created: Vec<&PathBuf> = absent.iter().filter(|p| appeared(p)).collect();
    if created.is_empty() {
        return None;
    }
    for path in &created {
        // Never through a link the process made on the way: that link goes instead.
        drop(crate::paths::remove_made(path));
    }
    let names: Vec<String> = created.iter().map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string()).collect();
    Some(format!(
        "(This tool created protected paths ({}); they were removed: only the file tools and bash may create toolshed's configuration, custom tools, skills or .git, and only with the user's permission. Tell the user what you wanted to change.)",
        names.join(", ")
    ))
}

/// [`remove_created`] after a call: its note joins the call's output (an error stays as it is;
/// what the call created is removed all the same).
pub fn settle(
    root: &Path,
    absent: &[PathBuf],
    result: Result<crate::tool::ToolOutput, crate::tool::ToolError>,
) -> Result<crate::tool::ToolOutput, crate::tool::ToolError> {
    let note = remove_created(root, absent);
    result.map(|mut output| {
        if let Some(note) = note {
            if !output.text.is_empty() {
                output.text.push_str("\n\n");
            }
            output.text.push_str(&note);
        }
        output
    })
}

/// `root` and each directory from it down to `cwd`.
fn levels(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut levels = vec![root.to_path_buf()];
    if let Ok(rel) = cwd.strip_prefix(root) {
        let mut dir = root.to_path_buf();
        for part in rel.components() {
            dir.push(part);
            levels.push(dir.clone());
        }
    }
    levels
}

/// What git reads or runs in a directory that is a repository itself (a bare layout, or one
/// whose `commondir` names where its objects are): protected there like a `.git`.
const REPOSITORY_PARTS: &[&str] = &["HEAD", "config", "config.worktree", "commondir", "hooks", "info"];

/// Whether `path` is a `HEAD` git would take as one (a symbolic link, `ref: ...`, or an object
/// name): with it, a directory is a repository git finds by itself, whatever else it holds
/// (`objects/` and `refs/`, or a `commondir` naming where they are).
pub fn is_git_head(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return false };
    if meta.file_type().is_symlink() {
        return true;
    }
    if !meta.is_file() {
        return false;
    }
    let mut head = [0u8; 80];
    let n = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    let text = &head[..n];
    let hex = text.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    text.starts_with(b"ref:") || hex >= 40
}

/// The `HEAD` of `root` and of each directory down to `cwd` that is not one git would take now:
/// a process that makes one there makes that directory a repository that `git status` there
/// uses, running what its `config` says (review 6: `HEAD`, `objects/`, `refs/` and a `config`
/// with `core.fsmonitor` at the top of a worktree without `.git`; review 7: with a `commondir`
/// naming objects elsewhere, or a `HEAD` that was a directory turned into a file). Watched like
/// the protected locations that are missing; it counts as made once git would take it
/// ([`appeared`]), so a project's own `refs/`, `config` or even `HEAD` directory stays.
pub fn repository_heads_absent(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    levels(root, cwd).into_iter().map(|level| level.join("HEAD")).filter(|head| !is_git_head(head)).collect()
}

/// Whether a watched location ([`absent`], [`repository_heads_absent`]) was made: it exists,
/// and a `HEAD` only once git would take it as one.
pub fn appeared(path: &Path) -> bool {
    if path.file_name().is_some_and(|n| n == "HEAD") {
        return is_git_head(path);
    }
    std::fs::symlink_metadata(path).is_ok()
}

/// The directories above `root` that a sandboxed process may write (under a temp dir or tool
/// cache), when `root` is not a repository itself: git run in the worktree looks for a `.git`
/// in each of them (review 7: a `.git` file planted in the parent of a worktree in `/tmp`).
fn writable_ancestors(root: &Path) -> Vec<PathBuf> {
    if std::fs::symlink_metadata(root.join(".git")).is_ok() || is_git_head(&root.join("HEAD")) {
        return Vec::new();
    }
    let writable = crate::paths::command_writable_dirs();
    root.ancestors().skip(1).filter(|a| writable.iter().any(|w| a.starts_with(w))).map(Path::to_path_buf).collect()
}

fn locations_from(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for level in levels(root, cwd) {
        for location in LOCATIONS {
            let path = level.join(location);
            if !out.contains(&path) {
                out.push(path);
            }
        }
        // A directory that is a repository itself: what git reads and runs there.
        if is_git_head(&level.join("HEAD")) {
            for path in REPOSITORY_PARTS.iter().map(|part| level.join(part)) {
                if !out.contains(&path) {
                    out.push(path);
                }
            }
        }
    }
    for dir in writable_ancestors(root) {
        let path = dir.join(".git");
        if !out.contains(&path) {
            out.push(path);
        }
    }
    // The git dirs (or gitfiles) of the submodules `.gitmodules` lists, and theirs in turn: the
    // person's `git status` at the top goes into each, and runs what its config says
    // (`core.fsmonitor`) as it would the top's.
    for path in submodule_git_dirs(root) {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// How deep submodules of submodules are followed.
const SUBMODULE_DEPTH: usize = 3;
/// The most submodules looked at.
const MAX_SUBMODULES: usize = 256;

/// `<submodule>/.git` of each submodule listed in `root`'s `.gitmodules` (a `path = ...` line, a
/// relative path that stays inside), and of theirs, [`SUBMODULE_DEPTH`] levels down. A
/// `.gitmodules` that is a link is not read.
fn submodule_git_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![(root.to_path_buf(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let file = dir.join(".gitmodules");
        if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        for line in text.lines() {
            let Some((key, value)) = line.split_once('=') else { continue };
            if key.trim() != "path" {
                continue;
            }
            let rel = Path::new(value.trim().trim_matches('"'));
            if rel.as_os_str().is_empty()
                || rel.is_absolute()
                || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                continue;
            }
            let sub = dir.join(rel);
            out.push(sub.join(".git"));
            // Its own list of submodules, whose `.git` it protects in turn (review 7).
            out.push(sub.join(GITMODULES));
            if out.len() >= MAX_SUBMODULES {
                return out;
            }
            if depth + 1 < SUBMODULE_DEPTH {
                dirs.push((sub, depth + 1));
            }
        }
    }
    out
}

/// The protected locations that exist in `root` and in each directory from `root` down to `cwd`
/// (see [`locations`]), symlinks not followed, and the config files given with `--config`
/// ([`protect_config_file`]).
pub fn existing(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> =
        locations(root, cwd).into_iter().filter(|path| std::fs::symlink_metadata(path).is_ok()).collect();
    // toolshed's data directory, where it lies in a writable one (`TOOLSHED_DATA_DIR=/tmp/...`):
    // the record of what a person accepted, the JS host and its packages, the sessions. Made
    // first, so a command cannot make it (and plant what toolshed reads there) before toolshed.
    let data = crate::paths::data_dir();
    if std::fs::create_dir_all(&data).is_ok() && !out.contains(&data) {
        out.push(data);
    }
    // Config files given with `--config` (wherever they are: a temp dir is writable too).
    for (_, path) in CONFIG_FILES.read().unwrap_or_else(std::sync::PoisonError::into_inner).iter() {
        if std::fs::symlink_metadata(path).is_ok() && !out.contains(path) {
            out.push(path.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_and_git_paths_are_protected_at_any_depth() {
        for p in [
            "toolshed.toml",
            "./toolshed.toml",
            "sub/toolshed.toml",
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            "vendor/lib/.git/config",
            ".toolshed/tools/x.toml",
            ".toolshed",
            ".opencode/tools/t.ts",
            ".opencode/tool/t.ts",
            "pkg/.opencode/tools/t.ts",
            ".opencode/skills/s/SKILL.md",
            ".claude/skills/s/SKILL.md",
            ".opencode/skill/s/SKILL.md",
            ".agents/skills/s/SKILL.md",
            "pkg/.agents/skills/group/s/SKILL.md",
            ".agents",
            ".agents/sk*",
            "./*",
            ".",
            ".gi*/config",
            "src/.git*",
            ".git/*",
            ".opencode/tools/*",
            "/home/u/.config/toolshed/config.toml",
            "/home/u/.config/toolshed",
            // Directories a copy or a move may create protected ones in.
            ".opencode",
            ".claude",
            "pkg/.opencode",
            ".opencode/*",
            ".claude/sk*",
            "/home/u/.config",
            "/home/u/.config/",
            "/home/u/.config/*",
            "/home/u/.conf*",
            "/home/*",
            "/home/u/.opencode",
        ] {
            assert!(is_protected(p, Some(Path::new("/home/u/.config/toolshed"))), "{p}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_user_config_directory_reached_through_a_link_is_protected_where_it_really_is() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let real = base.join("checkout/dotfiles/toolshed");
        std::fs::create_dir_all(&real).unwrap();
        let link = base.join("home/.config/toolshed");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(user_places(Some(&link)).contains(&real));
        for p in [real.join("config.toml"), real.clone(), base.join("checkout/dotfiles")] {
            assert!(is_protected(p.to_str().unwrap(), Some(&link)), "{}", p.display());
        }
        let beside = base.join("checkout/dotfiles/vimrc");
        assert!(!is_protected(beside.to_str().unwrap(), Some(&link)));
    }

    #[test]
    fn the_users_opencode_skill_and_tool_directories_are_protected() {
        for base in crate::paths::opencode_config_dirs() {
            for sub in ["skills/s/SKILL.md", "skill/s/SKILL.md", "tools/t.ts", "tool/t.ts"] {
                let path = base.join(sub);
                assert!(is_protected(path.to_str().unwrap(), None), "{}", path.display());
            }
            let other = base.join("opencode.json");
            assert!(!is_protected(other.to_str().unwrap(), None), "{}", other.display());
        }
    }

    #[test]
    fn ordinary_paths_are_not() {
        for p in [
            "src/main.rs",
            "AGENTS.md",
            ".gitignore",
            ".github/workflows/ci.yml",
            ".opencode/opencode.json",
            ".opencode/toolsmith.md",
            "toolshed.toml.bak",
            "docs/toolshed.md",
            ".claude/settings.json",
            "/tmp/out.txt",
            "*",
            "src/*",
            "/tmp/*",
            "/home/u/.config/toolshedx/a",
            "/home/u/.config/other/*",
            ".claude/settings.json",
            ".opencode/package.json",
            "src/opencode",
            ".agents/README.md",
            "agents/skills/s/SKILL.md",
        ] {
            assert!(!is_protected(p, Some(Path::new("/home/u/.config/toolshed"))), "{p}");
        }
    }

    #[test]
    fn existing_lists_what_is_there_from_root_down_to_cwd() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join("pkg/.opencode/tools")).unwrap();
        std::fs::create_dir_all(root.join("other/.toolshed")).unwrap();
        std::fs::write(root.join("toolshed.toml"), "").unwrap();
        let mut found = existing(root, &root.join("pkg/sub"));
        // The record of accepted projects is listed too where it exists (this machine's).
        found.retain(|p| p.starts_with(root));
        assert_eq!(
            found,
            vec![root.join(".git"), root.join("toolshed.toml"), root.join("pkg/.opencode/tools")],
            "only levels between root and cwd"
        );
    }
}
