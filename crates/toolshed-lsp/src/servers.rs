//! Which language server handles which file: the built-in table of common servers, the
//! `[lsp.NAME]` sections that add to or adjust it, project roots, and finding the program.
//!
//! Building the table looks at nothing on disk; the program is looked up on `PATH` only when a
//! file of its language is first used.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolshed_core::config::Config;
use toolshed_core::env::ChildEnv;
use toolshed_shell::SandboxPolicy;

use toolshed_core::config::LspConfig;

/// How long to wait for a server's first diagnostics after a change, starting it included,
/// unless `[lsp.NAME] timeout_ms` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(20);

/// One language server and the files it handles.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServerSpec {
    /// Its name (`pyright`, or the `NAME` of `[lsp.NAME]`).
    pub name: String,
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// File extensions it handles, without the dot, lowercase.
    pub extensions: Vec<String>,
    /// Files whose presence marks a project root.
    pub root_markers: Vec<String>,
    /// The bound on the first diagnostics after a change.
    pub timeout: Duration,
    /// Set in the config: a missing program is then reported, not passed over in silence.
    pub configured: bool,
    /// What the server inherits of toolshed's environment (`[env]`).
    pub env: ChildEnv,
    /// The sandbox it runs in: the shell's (`[sandbox]`), since a server may run the project's
    /// code (build scripts, a TypeScript in `node_modules`), which a model can write.
    pub sandbox: SandboxPolicy,
}

struct Builtin {
    name: &'static str,
    command: &'static str,
    args: &'static [&'static str],
    extensions: &'static [&'static str],
    root_markers: &'static [&'static str],
}

/// Servers used when found on `PATH`, unless the config turns them off.
const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "rust-analyzer",
        command: "rust-analyzer",
        args: &[],
        extensions: &["rs"],
        root_markers: &["Cargo.toml"],
    },
    Builtin {
        name: "pyright",
        command: "pyright-langserver",
        args: &["--stdio"],
        extensions: &["py", "pyi"],
        root_markers: &["pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg", "requirements.txt"],
    },
    Builtin {
        name: "typescript",
        command: "typescript-language-server",
        args: &["--stdio"],
        extensions: &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
        root_markers: &["tsconfig.json", "jsconfig.json", "package.json"],
    },
    Builtin { name: "gopls", command: "gopls", args: &[], extensions: &["go"], root_markers: &["go.work", "go.mod"] },
    Builtin {
        name: "clangd",
        command: "clangd",
        args: &[],
        extensions: &["c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"],
        root_markers: &["compile_commands.json", "compile_flags.txt", ".clangd"],
    },
];

/// The servers of one configuration, configured ones first, plus `[lsp.NAME]` sections that
/// cannot be used (with the reason).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServerTable {
    servers: Vec<ServerSpec>,
    invalid: Vec<InvalidServer>,
}

/// A `[lsp.NAME]` section that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InvalidServer {
    /// The section's name.
    pub name: String,
    /// The extensions it lists (lowercase, no dot).
    pub extensions: Vec<String>,
    /// What is wrong with it.
    pub reason: String,
}

impl ServerTable {
    /// The built-in servers adjusted by `[lsp.NAME]` sections: a section named like a built-in
    /// server changes only the fields it sets, keeping the built-in's for the others (so
    /// `command = "/opt/bin/pyright-langserver"` keeps `--stdio`), and `enabled = false` turns
    /// it off; any other section adds a server, and needs a `command` and `extensions`.
    pub fn from_config(sections: &BTreeMap<String, LspConfig>) -> Self {
        let mut table = ServerTable::default();
        for (name, section) in sections {
            if section.enabled == Some(false) {
                continue;
            }
            let builtin = BUILTINS.iter().find(|b| b.name == name);
            let base = builtin.map(Builtin::spec);
            match merge(name, section, base) {
                Ok(spec) => table.servers.push(spec),
                Err(reason) => table.invalid.push(InvalidServer {
                    name: name.clone(),
                    extensions: section.extensions.iter().map(|e| normal_extension(e)).collect(),
                    reason,
                }),
            }
        }
        for builtin in BUILTINS {
            if !sections.contains_key(builtin.name) {
                table.servers.push(builtin.spec());
            }
        }
        table
    }

    /// The servers of `config`'s `[lsp.NAME]` sections, started with its `[env]` policy.
    pub fn for_config(config: &Config) -> Self {
        let mut table = ServerTable::from_config(&config.lsp);
        let env = ChildEnv::from_config(config);
        let sandbox = SandboxPolicy::from(&config.sandbox);
        for spec in &mut table.servers {
            spec.env = env.clone();
            spec.sandbox = sandbox;
        }
        table
    }

    /// Every usable server, configured ones first.
    pub fn servers(&self) -> &[ServerSpec] {
        &self.servers
    }

    /// `[lsp.NAME]` sections that cannot be used, with the reason.
    pub fn invalid(&self) -> &[InvalidServer] {
        &self.invalid
    }

    /// Every server that handles `path`'s extension, in order of preference.
    pub fn candidates(&self, path: &Path) -> Vec<&ServerSpec> {
        let Some(ext) = extension(path) else { return Vec::new() };
        self.servers.iter().filter(|s| s.extensions.contains(&ext)).collect()
    }

    /// The unusable `[lsp.NAME]` section meant for `path`'s extension, if any.
    pub fn invalid_for(&self, path: &Path) -> Option<&InvalidServer> {
        let ext = extension(path)?;
        self.invalid.iter().find(|s| s.extensions.contains(&ext))
    }
}

impl Builtin {
    fn spec(&self) -> ServerSpec {
        ServerSpec {
            name: self.name.to_string(),
            command: self.command.to_string(),
            args: self.args.iter().map(std::string::ToString::to_string).collect(),
            extensions: self.extensions.iter().map(std::string::ToString::to_string).collect(),
            root_markers: self.root_markers.iter().map(std::string::ToString::to_string).collect(),
            timeout: DEFAULT_TIMEOUT,
            configured: false,
            env: ChildEnv::default(),
            sandbox: SandboxPolicy::default(),
        }
    }
}

fn merge(name: &str, section: &LspConfig, base: Option<ServerSpec>) -> Result<ServerSpec, String> {
    let mut spec = match base {
        Some(base) => base,
        None => {
            if section.command.trim().is_empty() {
                return Err("it has no `command` (only built-in servers may leave it out)".into());
            }
            if section.extensions.is_empty() {
                return Err("it lists no `extensions`, so no file would use it".into());
            }
            ServerSpec {
                name: name.to_string(),
                command: String::new(),
                args: Vec::new(),
                extensions: Vec::new(),
                root_markers: Vec::new(),
                timeout: DEFAULT_TIMEOUT,
                configured: true,
                env: ChildEnv::default(),
                sandbox: SandboxPolicy::default(),
            }
        }
    };
    spec.configured = true;
    if !section.command.trim().is_empty() {
        spec.command.clone_from(&section.command);
    }
    if !section.args.is_empty() {
        spec.args.clone_from(&section.args);
    }
    if !section.extensions.is_empty() {
        spec.extensions = section.extensions.iter().map(|e| normal_extension(e)).collect();
    }
    if !section.root_markers.is_empty() {
        spec.root_markers.clone_from(&section.root_markers);
    }
    if let Some(ms) = section.timeout_ms {
        spec.timeout = Duration::from_millis(ms.max(1));
    }
    Ok(spec)
}

fn normal_extension(ext: &str) -> String {
    ext.trim().trim_start_matches('.').to_ascii_lowercase()
}

/// The lowercase extension of `path`, without the dot.
pub fn extension(path: &Path) -> Option<String> {
    path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase)
}

/// The LSP language id of a file, from its extension.
pub fn language_id(path: &Path) -> String {
    let ext = extension(path).unwrap_or_default();
    match ext.as_str() {
        "py" | "pyi" => "python",
        "rs" => "rust",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => "cpp",
        other => other,
    }
    .to_string()
}

/// The project root a server should open for `file`: the nearest directory, from the file's
/// own up to `worktree`, that holds one of `markers`; else `worktree` (or, for a file outside
/// it, the file's directory).
pub fn project_root(markers: &[String], file: &Path, worktree: &Path) -> PathBuf {
    let dir = file.parent().unwrap_or(file);
    let inside = dir.starts_with(worktree);
    for ancestor in dir.ancestors() {
        if markers.iter().any(|m| ancestor.join(m).exists()) {
            return ancestor.to_path_buf();
        }
        if inside && ancestor == worktree {
            break;
        }
    }
    if inside { worktree.to_path_buf() } else { dir.to_path_buf() }
}

/// Finds `command`: a path with a `/` is taken relative to `base`; a bare name is looked up in
/// `PATH`; either must be executable. The error says where it looked.
pub fn find_program(command: &str, base: &Path) -> Result<PathBuf, String> {
    let program = toolshed_process::find_program(command, base).map_err(|e| e.to_string())?;
    if let Some(rustup) = rustup_home().filter(|home| stands_in(&program, home)) {
        let name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        return Err(format!(
            "`{}` is rustup's stand-in, and no toolchain in {} has the `{name}` component (add it with `rustup component add {name}`)",
            program.display(),
            rustup.join("toolchains").display()
        ));
    }
    Ok(program)
}

/// Where rustup keeps its toolchains (`RUSTUP_HOME`, else `~/.rustup`).
fn rustup_home() -> Option<PathBuf> {
    std::env::var_os("RUSTUP_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".rustup")))
}

/// Whether `program` is rustup's proxy (rustup installs every tool's name as a link to itself)
/// for a tool no toolchain under `rustup_home` has: running it only says the component is
/// missing.
fn stands_in(program: &Path, rustup_home: &Path) -> bool {
    let Some(name) = program.file_name() else { return false };
    let Ok(target) = std::fs::canonicalize(program) else { return false };
    let proxy = target.file_name().is_some_and(|n| n == "rustup" || n == "rustup-init");
    if !proxy || name == "rustup" {
        return false;
    }
    let Ok(toolchains) = std::fs::read_dir(rustup_home.join("toolchains")) else { return true };
    !toolchains.flatten().any(|toolchain| toolchain.path().join("bin").join(name).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(toml: &str) -> BTreeMap<String, LspConfig> {
        toml::from_str(toml).unwrap()
    }

    #[test]
    fn builtins_are_used_unless_the_config_turns_them_off_or_adjusts_them() {
        let table = ServerTable::from_config(&BTreeMap::new());
        assert_eq!(table.candidates(Path::new("/w/a.py"))[0].command, "pyright-langserver");
        assert_eq!(table.candidates(Path::new("/w/A.RS"))[0].name, "rust-analyzer");
        assert!(table.candidates(Path::new("/w/notes.txt")).is_empty());
        assert!(table.candidates(Path::new("/w/Makefile")).is_empty());

        let table = ServerTable::from_config(&section("[pyright]\nenabled = false\n[gopls]\ntimeout_ms = 500\n"));
        assert!(table.candidates(Path::new("/w/a.py")).is_empty());
        let gopls = table.candidates(Path::new("/w/main.go"))[0];
        assert_eq!(
            (gopls.command.as_str(), gopls.timeout, gopls.configured),
            ("gopls", Duration::from_millis(500), true)
        );
    }

    #[test]
    fn configured_servers_come_before_builtins_and_need_command_and_extensions() {
        let table = ServerTable::from_config(&section(
            "[ty]\ncommand = \"ty\"\nargs = [\"server\"]\nextensions = [\".PY\"]\n[broken]\nextensions = [\"zz\"]\n[nothing]\ncommand = \"x\"\n",
        ));
        let names: Vec<&str> = table.candidates(Path::new("/w/a.py")).iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["ty", "pyright"]);
        assert_eq!(table.invalid().len(), 2);
        let broken = table.invalid_for(Path::new("/w/a.zz")).unwrap();
        assert_eq!(broken.name, "broken");
        assert!(broken.reason.contains("no `command`"), "{}", broken.reason);
    }

    #[test]
    fn project_roots_are_the_nearest_marker_inside_the_worktree() {
        let tmp = tempfile::tempdir().unwrap();
        let w = tmp.path();
        std::fs::create_dir_all(w.join("svc/src")).unwrap();
        std::fs::write(w.join("svc/pyproject.toml"), "").unwrap();
        let markers = vec!["pyproject.toml".to_string()];
        assert_eq!(project_root(&markers, &w.join("svc/src/a.py"), w), w.join("svc"));
        assert_eq!(project_root(&markers, &w.join("top.py"), w), w);
        assert_eq!(project_root(&[], &w.join("svc/src/a.py"), w), w);
    }

    #[test]
    fn programs_are_found_on_path_or_reported_with_where_we_looked() {
        let found = find_program("sh", Path::new("/")).unwrap();
        // rustup's stand-in for a component no toolchain has, and for one a toolchain has.
        let dir = tempfile::tempdir().unwrap();
        let (bin, home) = (dir.path().join("bin"), dir.path().join("rustup"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(home.join("toolchains/stable/bin")).unwrap();
        std::fs::write(bin.join("rustup"), "#!/bin/sh\n").unwrap();
        std::os::unix::fs::symlink("rustup", bin.join("rust-analyzer")).unwrap();
        std::os::unix::fs::symlink("rustup", bin.join("rustfmt")).unwrap();
        std::fs::write(home.join("toolchains/stable/bin/rustfmt"), "").unwrap();
        assert!(stands_in(&bin.join("rust-analyzer"), &home));
        assert!(!stands_in(&bin.join("rustfmt"), &home));
        assert!(!stands_in(&bin.join("rustup"), &home));
        assert!(!stands_in(&found, &home));
        assert!(found.ends_with("sh"));
        let err = find_program("no-such-language-server-xyz", Path::new("/")).unwrap_err();
        assert_eq!(err, "`no-such-language-server-xyz` was not found on PATH");
        let err = find_program("./bin/missing", Path::new("/tmp")).unwrap_err();
        assert!(err.contains("/tmp/./bin/missing"), "{err}");
    }

    #[test]
    fn language_ids_follow_the_extension() {
        assert_eq!(language_id(Path::new("a.py")), "python");
        assert_eq!(language_id(Path::new("a.tsx")), "typescriptreact");
        assert_eq!(language_id(Path::new("a.hpp")), "cpp");
        assert_eq!(language_id(Path::new("a.zig")), "zig");
    }
}
