//! The environment toolshed's child processes get: one policy for shell commands, custom tools,
//! the OpenCode JS host, language servers and MCP servers.
//!
//! - Shell commands, custom tools, the JS host and language servers inherit toolshed's
//!   environment **minus every variable whose name looks secret** ([`looks_secret`]: the name
//!   contains `KEY`, `SECRET`, `TOKEN`, `PASSWORD`, `PASSWD`, `PASSPHRASE` or `CREDENTIAL`, or
//!   ends in `_PAT`, `_AUTH`, `_PASS`, `_PWD`, `_JWT`, `_COOKIE`, `_CRED`, `_CREDS` or `_DSN`,
//!   case-insensitively) **and every variable whose value holds a URL with a password**
//!   (`DATABASE_URL=postgres://user:pw@host/db`, [`holds_credentials`]). toolshed itself still
//!   reads its provider keys (`OPENAI_API_KEY`, ...); only its children lose them.
//! - MCP servers started over stdio get only [`MCP_BASE`] (`HOME`, `LOGNAME`, `PATH`, `SHELL`,
//!   `TERM`, `USER`, what the official MCP SDKs pass), plus their own `[mcp.NAME] env`.
//! - `[env] pass = ["GITHUB_TOKEN", ...]` names variables every child gets anyway (MCP servers
//!   included), secret-looking or not.
//! - [`hide_own_environment`] keeps those children from reading toolshed's own environment
//!   through `/proc/<pid>/environ` instead.
//!
//! ```
//! use toolshed_core::env::{ChildEnv, looks_secret};
//!
//! assert!(looks_secret("OPENAI_API_KEY") && looks_secret("github_token") && looks_secret("AZURE_PAT"));
//! assert!(!looks_secret("PATH") && !looks_secret("SSH_AUTH_SOCK") && !looks_secret("GIT_AUTHOR_NAME"));
//! let env = ChildEnv::new(["GITHUB_TOKEN"]);
//! assert!(env.withholds("OPENAI_API_KEY") && !env.withholds("GITHUB_TOKEN"));
//! ```

use std::ffi::{OsStr, OsString};

/// Parts of a variable name (compared case-insensitively) that make it look secret.
pub const SECRET_PARTS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL"];

/// Endings of a variable name (compared case-insensitively) that make it look secret: personal
/// access tokens (`GH_PAT`), auth settings (`NPM_CONFIG__AUTH`), passwords (`DB_PASS`,
/// `MYSQL_PWD`), tokens and cookies (`CI_JOB_JWT`, `SESSION_COOKIE`), credentials (`API_CREDS`)
/// and DSNs with keys in them (`SENTRY_DSN`). `AUTH` anywhere would also take `GIT_AUTHOR_NAME`
/// and `SSH_AUTH_SOCK`, and `PWD` anywhere `OLDPWD`, which commands need and which hold no secret.
pub const SECRET_SUFFIXES: &[&str] = &["_PAT", "_AUTH", "_PASS", "_PWD", "_JWT", "_COOKIE", "_CRED", "_CREDS", "_DSN"];

/// What stdio MCP servers inherit (besides `[env] pass` and their own `env`): the variables the
/// official MCP SDKs (Python, TypeScript) pass on POSIX.
pub const MCP_BASE: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Marks this process non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`, as ssh-agent does), so other
/// processes of the same user — toolshed's own unsandboxed children: MCP servers, custom tools,
/// language servers, `full-access` commands — cannot read its environment (its API keys) through
/// `/proc/<pid>/environ`, nor its memory. It also means no core dumps and no debugger attaching
/// without root. A child gets back to dumpable when it `exec`s. Root's processes can still read
/// it. Returns whether it worked (always `false` off Linux).
pub fn hide_own_environment() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: a plain prctl on the calling process.
        unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Whether a variable's name looks like it holds a secret (see the module docs).
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_PARTS.iter().any(|part| upper.contains(part)) || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
}

/// Whether a variable's value holds a URL with a password in it (`scheme://user:password@host`),
/// as `DATABASE_URL` or `REDIS_URL` often do.
pub fn holds_credentials(value: &OsStr) -> bool {
    let value = value.to_string_lossy();
    value.match_indices("://").any(|(at, _)| {
        let rest = &value[at + 3..];
        let authority = &rest[..rest.find(['/', '?', '#', ' ', '\'', '"']).unwrap_or(rest.len())];
        authority
            .rsplit_once('@')
            .is_some_and(|(user_info, _)| user_info.split_once(':').is_some_and(|(_, password)| !password.is_empty()))
    })
}

/// Whether `name` is a valid variable name for `[env] pass`: letters, digits and `_`, not
/// starting with a digit.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The environment policy for child processes: which variables they lose and which they keep
/// anyway. The default withholds every secret-looking variable and passes none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ChildEnv {
    pass: Vec<String>,
}

impl ChildEnv {
    /// A policy that passes the variables named in `pass` whatever their names look like.
    pub fn new<I, S>(pass: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ChildEnv { pass: pass.into_iter().map(Into::into).collect() }
    }

    /// The policy of `[env]` in `config`.
    pub fn from_config(config: &crate::config::Config) -> Self {
        ChildEnv::new(config.env.pass.iter().cloned())
    }

    /// The variables passed anyway (`[env] pass`).
    pub fn passed(&self) -> &[String] {
        &self.pass
    }

    /// Whether a child does not get the variable `name` (it looks secret and is not passed).
    pub fn withholds(&self, name: &str) -> bool {
        looks_secret(name) && !self.pass.iter().any(|p| p == name)
    }

    fn withholds_os(&self, name: &OsStr) -> bool {
        // A name that is not UTF-8 is judged by its readable part: fail closed.
        self.withholds(&name.to_string_lossy())
    }

    /// The names of the variables of this process that children do not get, sorted: those
    /// [`ChildEnv::withholds`] by name, and those whose value [`holds_credentials`] (unless passed).
    pub fn withheld(&self) -> Vec<OsString> {
        let passed = |name: &OsStr| self.pass.iter().any(|p| OsStr::new(p) == name);
        let mut names: Vec<OsString> = std::env::vars_os()
            .filter(|(name, value)| self.withholds_os(name) || (!passed(name) && holds_credentials(value)))
            .map(|(name, _)| name)
            .collect();
        names.sort();
        names
    }

    /// What a stdio MCP server inherits from this process: [`MCP_BASE`] and the passed
    /// variables that are set.
    pub fn minimal(&self) -> Vec<(OsString, OsString)> {
        let names = MCP_BASE.iter().copied().chain(self.pass.iter().map(String::as_str));
        let mut out: Vec<(OsString, OsString)> = Vec::new();
        for name in names {
            if out.iter().any(|(n, _)| n == name) {
                continue;
            }
            if let Some(value) = std::env::var_os(name) {
                out.push((name.into(), value));
            }
        }
        out
    }

    /// Removes the withheld variables from what `cmd` inherits. Call it before setting the
    /// command's own variables (those are kept, whatever their names).
    pub fn apply(&self, cmd: &mut std::process::Command) {
        for name in self.withheld() {
            cmd.env_remove(name);
        }
    }

    /// Makes `cmd` inherit only [`ChildEnv::minimal`] (for stdio MCP servers); set the server's
    /// own variables afterwards.
    pub fn apply_minimal(&self, cmd: &mut std::process::Command) {
        cmd.env_clear();
        cmd.envs(self.minimal());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_looking_names_are_recognised_case_insensitively() {
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN",
            "GITHUB_TOKEN",
            "gh_token",
            "DB_PASSWORD",
            "MYSQL_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AZURE_DEVOPS_PAT",
            "NPM_CONFIG__AUTH",
            "apikey",
            "Stripe_Secret",
            "DB_PASS",
            "smtp_pass",
            "MYSQL_PWD",
            "GPG_PASSPHRASE",
            "CI_JOB_JWT",
            "SESSION_COOKIE",
            "API_CREDS",
            "SENTRY_DSN",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in [
            "PATH",
            "HOME",
            "PWD",
            "OLDPWD",
            "SSH_AUTH_SOCK",
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "XAUTHORITY",
            "LANG",
            "CARGO_HOME",
            "PATHEXT",
            "COMPAT",
            "PASSES",
            "BYPASS",
            "DATABASE_URL",
        ] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn urls_with_passwords_are_credentials() {
        for value in [
            "postgres://app:s3cret@db:5432/app",
            "redis://:pw@localhost:6379",
            "https://user:tok@example.com/x",
            "mysql://u:p@h",
            "a;amqp://guest:guest@rabbit//",
        ] {
            assert!(holds_credentials(OsStr::new(value)), "{value}");
        }
        for value in [
            "postgres://localhost/app",
            "https://user@example.com",
            "https://example.com/a:b@c",
            "http://[::1]:8080/",
            "plain",
            "/usr/bin:/bin",
        ] {
            assert!(!holds_credentials(OsStr::new(value)), "{value}");
        }
    }

    #[test]
    fn passed_names_are_kept_exactly() {
        let env = ChildEnv::new(["GITHUB_TOKEN"]);
        assert!(!env.withholds("GITHUB_TOKEN"));
        assert!(env.withholds("github_token"), "pass names are exact");
        assert!(env.withholds("GITLAB_TOKEN"));
        assert!(!env.withholds("PATH"));
    }

    #[test]
    fn valid_names_are_shell_identifiers() {
        assert!(valid_name("GITHUB_TOKEN") && valid_name("_X") && valid_name("a1"));
        assert!(!valid_name("") && !valid_name("1A") && !valid_name("A-B") && !valid_name("A B") && !valid_name("A*"));
    }

    #[test]
    fn apply_removes_exactly_the_withheld_variables() {
        let env = ChildEnv::default();
        let mut cmd = std::process::Command::new("env");
        env.apply(&mut cmd);
        let removed: Vec<OsString> =
            cmd.get_envs().filter(|(_, value)| value.is_none()).map(|(name, _)| name.to_os_string()).collect();
        assert_eq!(removed, env.withheld());
        assert!(removed.iter().all(|name| {
            looks_secret(&name.to_string_lossy()) || std::env::var_os(name).is_some_and(|v| holds_credentials(&v))
        }));
    }

    #[test]
    fn minimal_holds_only_the_base_and_passed_variables() {
        let env = ChildEnv::new(["PATH", "TOOLSHED_SURELY_UNSET_VARIABLE"]);
        let names: Vec<String> = env.minimal().into_iter().map(|(n, _)| n.to_string_lossy().into_owned()).collect();
        assert!(names.iter().all(|n| MCP_BASE.contains(&n.as_str())), "{names:?}");
        assert_eq!(names.iter().filter(|n| *n == "PATH").count(), 1, "no duplicates");
    }
}
