//! Variables whose value makes programs run other programs or load code (`GIT_EDITOR`,
//! `LD_PRELOAD`, `PATH`, `BASH_ENV`, `PYTHONPATH`, ...), and names the shell evaluates as
//! arithmetic. Setting such a variable (`VAR=v cmd`, `VAR=v`, `export VAR=v`, `declare -x`,
//! `env VAR=v`, `read VAR`, ...) runs code the command line does not show, so it asks.

/// Variables that name programs, files of code or configuration that does.
const NAMES: &[&str] = &[
    // Shells.
    "BASH_ENV",
    "ENV",
    "SHELL",
    "SHELLOPTS",
    "BASHOPTS",
    "BASH_CMDS",
    "BASH_ALIASES",
    "BASH_LOADABLES_PATH",
    "BASH_XTRACEFD",
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "PS3",
    "PS4",
    "PATH",
    "CDPATH",
    "FPATH",
    "HOME",
    "ZDOTDIR",
    "INPUTRC",
    "TEXTDOMAIN",
    "TEXTDOMAINDIR",
    "XDG_CONFIG_HOME",
    "XDG_CONFIG_DIRS",
    // Programs other programs run.
    "EDITOR",
    "VISUAL",
    "FCEDIT",
    "PAGER",
    "MANPAGER",
    "MANOPT",
    "LESS",
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "LESSKEYIN",
    "BROWSER",
    "TERMINAL",
    "SUDO_EDITOR",
    "SUDO_ASKPASS",
    "SSH_ASKPASS",
    "GH_EDITOR",
    "GH_PAGER",
    "GH_BROWSER",
    "KUBE_EDITOR",
    "SYSTEMD_EDITOR",
    "SYSTEMD_PAGER",
    "RSYNC_RSH",
    "RSYNC_CONNECT_PROG",
    "CVS_RSH",
    "TAR_OPTIONS",
    "GZIP",
    "XZ_OPT",
    "ZSTD_CLEVEL",
    "PARALLEL",
    // Loaders and language runtimes.
    "GCONV_PATH",
    "LOCPATH",
    "NLSPATH",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_GEMFILE",
    "LUA_INIT",
    "LUA_PATH",
    "LUA_CPATH",
    "PHPRC",
    "PHP_INI_SCAN_DIR",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "MAVEN_OPTS",
    "GRADLE_OPTS",
    "DOTNET_STARTUP_HOOKS",
    "TCLLIBPATH",
    "R_PROFILE",
    "R_PROFILE_USER",
    // Build tools.
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "AS",
    "NM",
    "RANLIB",
    "STRIP",
    "OBJCOPY",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "MAKE",
    "MAKEFLAGS",
    "GNUMAKEFLAGS",
    "MAKEFILES",
    "GOFLAGS",
    "GOENV",
    "GOTOOLCHAIN",
    "PKG_CONFIG",
    "PKG_CONFIG_PATH",
    "CMAKE_C_COMPILER_LAUNCHER",
    "CMAKE_CXX_COMPILER_LAUNCHER",
    "COMPILER_PATH",
    "GCC_EXEC_PREFIX",
    "DEPENDENCIES_OUTPUT",
    "SUNPRO_DEPENDENCIES",
    // Options and commands read from the environment (review 26).
    "ZIP",
    "UNZIP",
    "ZIPOPT",
    "UNZIPOPT",
    "ZIPINFO",
    "MANPATH",
    "MANROFFOPT",
    "MANROFFSEQ",
    "MANSECT",
    "MANWIDTH",
    "MAN_KEEP_FORMATTING",
    "VALGRIND_OPTS",
    "SSH_ASKPASS_REQUIRE",
    "LESSHISTFILE",
    "HISTFILE",
    "PERLDOC",
    "PERLDOC_PAGER",
    "SENSIBLE_EDITOR",
    "SELECTED_EDITOR",
    "PSQL_HISTORY",
    "MYSQL_PS1",
    "VIMINIT",
    "EXINIT",
    "GVIMINIT",
    "MYVIMRC",
    "WGETRC",
    "CURL_HOME",
    "GNUPGHOME",
    "TERMINFO",
    "TERMCAP",
];

/// Endings of names that programs read as options, commands, programs or configuration
/// (`ZIPOPT`, `VALGRIND_OPTS`, `FOO_OPTIONS`, `PSQL_PAGER`, `PSQLRC`, `JAVA_HOME`, `MANPATH`):
/// setting any variable named so asks, known or not (fail closed).
const SUFFIXES: &[&str] = &[
    "OPT",
    "OPTS",
    "OPTIONS",
    "FLAGS",
    "ARGS",
    "CMD",
    "COMMAND",
    "COMMANDS",
    "PAGER",
    "EDITOR",
    "BROWSER",
    "VISUAL",
    "PROG",
    "PROGRAM",
    "SHELL",
    "HOOK",
    "HOOKS",
    "ASKPASS",
    "PATH",
    "RC",
    "INIT",
    "CONF",
    "CONFIG",
    "HISTFILE",
    "HOME",
    "PREFIX",
    "PRELOAD",
    "LAUNCHER",
    "WRAPPER",
    "INTERPRETER",
    "DEPENDENCIES",
];

/// Prefixes of such variables (`LD_PRELOAD`, `GIT_SSH_COMMAND`, `CARGO_TARGET_X_RUNNER`, ...).
const PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_",
    "CARGO_",
    "RUSTC",
    "RUSTDOC",
    "RUSTFLAGS",
    "RUSTUP_",
    "PYTHON",
    "NPM_CONFIG_",
    "npm_config_",
    "YARN_",
    "PIP_",
    "CGO_",
    "BASH_FUNC_",
    "GROFF_",
    "MAN_",
    "LESS",
];

/// Variables under those prefixes known not to run anything.
const HARMLESS: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
    "GIT_OPTIONAL_LOCKS",
    "GIT_MERGE_VERBOSITY",
    "GIT_FLUSH",
    "GIT_PAGER_IN_USE",
    "CARGO_TARGET_DIR",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_TERM_PROGRESS_WHEN",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "CARGO_NET_OFFLINE",
    "CARGO_LOG",
    "RUSTC_BOOTSTRAP",
    "RUSTUP_TOOLCHAIN",
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONFAULTHANDLER",
    "PYTHONDEVMODE",
    "PIP_NO_INPUT",
    "PIP_DISABLE_PIP_VERSION_CHECK",
    "PIP_QUIET",
];

/// Whether setting `name` may make a program run another program or load code.
pub(super) fn is_dangerous(name: &str) -> bool {
    if HARMLESS.contains(&name) {
        return false;
    }
    // Programs read upper-case names (a script's own `cmd`, `opts` are its business).
    let upper = !name.bytes().any(|b| b.is_ascii_lowercase());
    NAMES.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        || (upper && SUFFIXES.iter().any(|s| name.ends_with(s) && name.len() > s.len()))
}

/// Why assigning `assignment` (`NAME=value`, `NAME+=value`, `NAME[i]=value`) needs asking.
pub(super) fn check_assignment(assignment: &str) -> Option<String> {
    let target = assignment.split_once('=').map_or(assignment, |(t, _)| t).trim_end_matches('+');
    if target.contains(['$', '`']) && !target.contains('[') {
        return Some(format!("the variable set by `{assignment}` is named at run time"));
    }
    check_name(target)
}

/// Why setting the variable `name` needs asking, if it does.
pub(super) fn check_name(name: &str) -> Option<String> {
    if is_dangerous(name.split('[').next().unwrap_or_default()) {
        return Some(format!("setting `{name}` can make programs run other programs or load code"));
    }
    if subscript_runs(name) {
        return Some(format!("the subscript of `{name}` is arithmetic that can run commands"));
    }
    None
}

/// Whether `text`, read by the shell as a variable name or arithmetic (`unset`, `printf -v`,
/// `read`, `test -v`, `let`, a subscript), could run a command: bash expands `$(...)` and
/// `` `...` `` inside array subscripts when it evaluates them (`unset 'a[$(rm x)]'`).
pub(super) fn subscript_runs(text: &str) -> bool {
    text.contains('[') && text.contains(['$', '`'])
}

/// Whether the name `text` that `test -v`/`-R` or `[[ -v ]]` looks up could run a command: a
/// subscript there is evaluated as arithmetic (`[[ -v a[x] ]]` with `x='a[$(cmd)]'` runs
/// `cmd`), so anything but a plain integer literal between the brackets, or a name computed at
/// run time, counts (fail closed).
pub(super) fn lookup_runs(text: &str) -> bool {
    let Some(open) = text.find('[') else { return text.contains(['$', '`', '\\']) };
    let inner = text[open + 1..].strip_suffix(']');
    !inner.is_some_and(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a value assigned to a variable would run a command if the variable were later read
/// as arithmetic or as a name (`x='a[$(rm y)]'; echo $((x))`).
pub(super) fn arithmetic_payload(value: &str) -> bool {
    value.find('[').is_some_and(|open| value[open..].contains("$(") || value[open..].contains('`'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_variables_are_dangerous_and_ordinary_ones_are_not() {
        for name in [
            "GIT_EDITOR",
            "GIT_SSH_COMMAND",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_KEY_0",
            "GIT_DIR",
            "LD_PRELOAD",
            "PATH",
            "BASH_ENV",
            "PAGER",
            "PYTHONPATH",
            "NODE_OPTIONS",
            "RUSTC_WRAPPER",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
            "PS4",
            "BASH_CMDS",
            "HOME",
            "ZIPOPT",
            "FROB_OPTIONS",
            "PSQLRC",
            "JAVA_HOME",
            "GROFF_BIN_PATH",
            "MANROFFOPT",
        ] {
            assert!(is_dangerous(name), "{name}");
        }
        for name in ["FOO", "RUST_LOG", "RUST_BACKTRACE", "LANG", "CI", "CARGO_TARGET_DIR", "GIT_AUTHOR_NAME", "TZ"] {
            assert!(!is_dangerous(name), "{name}");
        }
    }

    #[test]
    fn assignments_are_checked_by_name_and_subscript() {
        assert!(check_assignment("GIT_EDITOR=rm x").is_some());
        assert!(check_assignment("PATH+=:.").is_some());
        assert!(check_assignment("a[$(rm x)]=1").is_some());
        assert!(check_assignment("BASH_CMDS[ls]=/bin/rm").is_some());
        assert!(check_assignment("FOO=$(date)").is_none());
        assert!(check_assignment("$name=1").is_some());
        assert!(check_assignment("RUST_LOG=debug").is_none());
        assert!(arithmetic_payload("a[$(rm x)]"));
        assert!(!arithmetic_payload("^[0-9]+$"));
    }
}
