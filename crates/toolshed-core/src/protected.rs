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
];

/// File names protected wherever they appear.
const FILES: &[&str] = &[crate::config::PROJECT_FILE];

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
    crate::config::PROJECT_FILE,
];

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
    if let Some(config) = user_config.and_then(Path::to_str) {
        let config = config.trim_end_matches('/');
        if !config.is_empty() && (pattern == config || pattern.starts_with(&format!("{config}/"))) {
            return true;
        }
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
            || components.windows(2).any(|w| NESTED_DIRS.contains(&(w[0], w[1])));
    }
    if components.iter().any(|c| DIRS.contains(c)) {
        return true;
    }
    if components.windows(2).any(|w| NESTED_DIRS.contains(&(w[0], w[1]))) {
        return true;
    }
    components.last().is_some_and(|last| FILES.contains(last))
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

/// The protected locations that exist in `root` and in each directory from `root` down to `cwd`
/// (custom tools and skills are discovered at each of those levels), symlinks not followed.
pub fn existing(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let mut levels = vec![root.to_path_buf()];
    if let Ok(rel) = cwd.strip_prefix(root) {
        let mut dir = root.to_path_buf();
        for part in rel.components() {
            dir.push(part);
            levels.push(dir.clone());
        }
    }
    let mut out = Vec::new();
    for level in levels {
        for location in LOCATIONS {
            let path = level.join(location);
            if std::fs::symlink_metadata(&path).is_ok() && !out.contains(&path) {
                out.push(path);
            }
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
            "./*",
            ".",
            ".gi*/config",
            "src/.git*",
            ".git/*",
            ".opencode/tools/*",
            "/home/u/.config/toolshed/config.toml",
            "/home/u/.config/toolshed",
        ] {
            assert!(is_protected(p, Some(Path::new("/home/u/.config/toolshed"))), "{p}");
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
        let found = existing(root, &root.join("pkg/sub"));
        assert_eq!(
            found,
            vec![root.join(".git"), root.join("toolshed.toml"), root.join("pkg/.opencode/tools")],
            "only levels between root and cwd"
        );
    }
}
