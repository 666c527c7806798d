//! Bypasses review 23 found (and spellings of the same classes it did not list), decided by the
//! real rule engine under `bash = { "*" = "allow", "rm *" = "deny" }`, `read = { "secrets/*" =
//! "deny" }`, `edit = { "src/keep.txt" = "deny" }` — or with no configuration at all (`"*"`
//! allows, so only what the analysis cannot follow asks). Each must ask or be denied.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "review_support/mod.rs"]
mod review_support;

use review_support::*;
use toolshed_core::permission::Action;

const RULES: &str = "[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\" }\n\
read = { \"*\" = \"allow\", \"secrets/*\" = \"deny\" }\n\
edit = { \"*\" = \"allow\", \"src/keep.txt\" = \"deny\" }\n";

const FILES: &[(&str, &str)] =
    &[("canary", "alive\n"), ("a.txt", "a\n"), ("src/keep.txt", "keep\n"), ("secrets/key", "key\n")];

fn case() -> Case {
    case_with(RULES, FILES)
}

/// No configuration: every command is allowed unless the analysis cannot follow it.
fn bare() -> Case {
    case_with("", FILES)
}

/// The `edit` patterns of a command.
fn edits(c: &Case, command: &str) -> Vec<String> {
    requests(c, command).into_iter().filter(|r| r.permission == "edit").flat_map(|r| r.patterns).collect()
}

/// Whether a command writes a protected path (the tool then asks `protected`).
fn protected(c: &Case, command: &str) -> bool {
    requests(c, command).iter().any(|r| toolshed_core::protected::implied_request(r, None).is_some())
}

/// H1: `git config set`/`unset` options that take a value: the value is not the key.
#[test]
fn git_config_subcommand_options_with_values_are_not_keys() {
    let c = bare();
    assert_not_allowed(
        &c,
        &[
            "git config set --global --comment user.name core.fsmonitor 'x=r; ${x}m victim; false'",
            "git config set --comment user.name core.fsmonitor x",
            "git config set --value user.name core.pager x",
            "git config set --type bool core.pager x",
            "git config unset --value user.name core.fsmonitor",
            "git config set --file user.name core.fsmonitor x",
            "git config set -f user.name core.fsmonitor x",
            "git config set --comm user.name core.fsmonitor x",
            "git config set --frobnicate user.name core.fsmonitor x",
            "git config --comm user.name core.fsmonitor x",
            "git config --fil user.name core.fsmonitor x",
            "git config get --frobnicate user.name",
        ],
    );
    assert_allowed(
        &c,
        &["git config get user.name", "git config --get user.name", "git config get --all user.name", "git config -l"],
    );
}

/// H2, M1, M2: git plumbing and options that run programs, spelt as git's option parsers take
/// them (unique prefixes of long options), and remote URLs that run commands.
#[test]
fn git_options_and_urls_that_run_programs_ask() {
    let c = bare();
    let attacks = [
        "git fetch-pack --upload-pack='touch marker;' . HEAD",
        "git send-pack --receive-pack='touch marker;' . HEAD",
        "git fetch-pack --exec='touch marker;' . HEAD",
        "git fetch-pack --upload-pa='touch marker;' . HEAD",
        "git send-pack --rec='touch marker;' . HEAD",
        "git ls-remote --upload-pa='touch marker;' .",
        "git archive --remote=. --exec='touch marker;' HEAD",
        "git upload-pack .",
        "git receive-pack .",
        "git upload-archive .",
        "git ls-remote 'ext::sh -c touch% marker'",
        "git clone 'ext::sh -c touch% marker' d",
        "git fetch 'ext::sh -c touch% marker'",
        "git pull ext::sh",
        "git push 'fd::3' HEAD",
        "git remote add x 'ext::sh -c touch% marker'",
        "git submodule add 'ext::sh -c x' d",
        "git archive --remote='ext::sh -c x' HEAD",
        "git -c protocol.ext.allow=always ls-remote .",
        "GIT_ALLOW_PROTOCOL=ext git ls-remote .",
        "git help --we log",
        "git help --w log",
        "git send-email --sendmail-cm='touch marker' x.patch",
        "git send-email --smtp-serv=./x x.patch",
        "git send-email --smtp-server-o=x x.patch",
        "git daemon --access-hook=./x",
        "git daemon --acc=./x",
    ];
    assert_not_allowed(&c, &attacks);
    assert_allowed(&c, &["git fetch origin", "git ls-remote origin", "git push origin HEAD", "git help log"]);
}

/// H3: short options clustered with one that takes a command (`-yx CMD`), and abbreviations of
/// `--extcmd`.
#[test]
fn git_clustered_short_options_that_take_commands_are_commands() {
    let c = case();
    for command in [
        "git difftool -yx 'rm canary' HEAD~1",
        "git difftool -yx'rm canary' HEAD~1",
        "git difftool --extc='rm canary' HEAD~1",
        "git difftool --ext 'rm canary' HEAD~1",
        "git mergetool -yx 'rm canary'",
        "git rebase -ix 'rm canary' HEAD~1",
        "git rebase -ixrm\\ canary HEAD~1",
    ] {
        assert_eq!(decide(&c, command), Action::Deny, "{command}: {:?}", requests(&c, command));
    }
    // A tool's name is not a command (`-t NAME` picks a configured tool).
    assert_allowed(&bare(), &["git difftool -yt meld HEAD", "git rebase -i -s ort HEAD~1"]);
}

/// H4: gdb takes options with one dash or two and any unique prefix (`getopt_long_only`): only
/// options known not to run commands are allowed; the commands of `-ex` are checked.
#[test]
fn gdb_options_that_run_commands_ask() {
    let c = bare();
    let attacks = [
        "gdb -batch -eval 'shell rm victim'",
        "gdb -batch -eval='shell rm victim'",
        "gdb -batch --eval-comm='shell rm victim'",
        "gdb -batch -eval-c 'shell rm victim'",
        "gdb -batch -comm=x.gdb",
        "gdb -batch -init-c=x.gdb",
        "gdb -batch --ex='shell rm victim'",
        "gdb -batch -data-directory=d",
        "gdb -batch -frobnicate",
        "gdb -q ./a.out",
        "echo 'shell rm victim' | gdb -q",
    ];
    assert_not_allowed(&c, &attacks);
    assert_eq!(decide(&case(), "gdb -batch -ex 'shell rm canary'"), Action::Deny);
    assert_eq!(decide(&case(), "gdb -batch -eval '!rm canary'"), Action::Deny);
    assert_allowed(&c, &["gdb --version", "gdb -batch -nx ./a.out", "gdb -batch --args ./a.out -x"]);
}

/// H5: every vim, in every spelling of its name, with clustered flags.
#[test]
fn vim_in_any_spelling_asks() {
    let c = bare();
    assert_not_allowed(
        &c,
        &[
            "vim -Es <<< '!rm victim'",
            "vim -nEs < script.vim",
            "vim -esn a.txt",
            "vim.basic -c '!rm victim' -c q a.txt",
            "vim.tiny -es a.txt",
            "rvim -es a.txt",
            "rview a.txt",
            "vimdiff a.txt b.txt",
            "gvim -f a.txt",
            "nvim --headless -c 'lua os.remove(\"x\")'",
            "ex a.txt",
            "view a.txt",
            "vi a.txt",
            "vim a.txt",
            "echo ':!rm victim' | vim a.txt",
        ],
    );
    let c = case();
    assert_eq!(decide(&c, "vim.basic -c '!rm canary' -c q a.txt"), Action::Deny);
    assert_eq!(decide(&c, "some-runner --hook='!rm canary'"), Action::Ask);
    assert_allowed(&bare(), &["vim --version"]);
}

/// H6: a redirection of the last command of a `&&`/`||` list or a pipeline (which tree-sitter
/// attaches to the whole list) is opened in the directory that command runs in.
#[test]
fn redirections_after_cd_in_a_list_resolve_where_the_command_runs() {
    let c = case();
    for command in [
        "cd src && echo pwned > keep.txt",
        "cd src && echo pwned >> keep.txt",
        "cd src && exec > keep.txt",
        "cd src && { echo pwned; } > keep.txt",
        "cd src || echo pwned > keep.txt",
        "true && cd src && echo pwned > keep.txt",
        "cd src && echo a | cat > keep.txt",
        "cd src && cat a 1<> keep.txt",
        "(cd src && echo pwned > keep.txt)",
    ] {
        assert_eq!(decide(&c, command), Action::Deny, "{command}: {:?}", requests(&c, command));
    }
    for command in ["cd secrets && cat < key", "cd secrets && wc -l < key | cat"] {
        assert_eq!(decide(&c, command), Action::Deny, "{command}: {:?}", requests(&c, command));
    }
    assert_not_allowed(&c, &["cd \"$D\" && echo pwned > keep.txt"]);
    let b = bare();
    std::fs::create_dir_all(b.root.join(".git")).unwrap();
    assert!(protected(&b, "cd .git && echo x >> config"), "{:?}", requests(&b, "cd .git && echo x >> config"));
    assert_eq!(edits(&c, "cd src && echo x > new.txt"), ["src/new.txt", "new.txt"]);
    assert_allowed(&c, &["cd src && echo x > other.txt", "echo x > keep.txt"]);
}

/// L1: `doas -s` without a command reads standard input; `bash -i`/`-l` run startup files.
#[test]
fn shells_that_read_startup_files_or_input_ask() {
    let c = bare();
    assert_not_allowed(
        &c,
        &["doas -s", "doas -u root -s", "bash -i -c 'echo'", "bash -l -c 'echo'", "bash -lc 'echo'", "bash -ic 'echo'"],
    );
    assert_allowed(&c, &["bash -c 'echo hi'", "bash --norc --noprofile -c 'echo hi'"]);
}

/// L2: `git config` writing a key writes `.git/config` (a protected path); reading does not.
#[test]
fn git_config_writes_are_protected_writes() {
    let c = bare();
    std::fs::create_dir_all(c.root.join(".git")).unwrap();
    for command in [
        "git config user.name x",
        "git config set user.email a@b",
        "git config --unset user.name",
        "git -C src config user.name x",
    ] {
        assert!(protected(&c, command), "{command}: {:?}", requests(&c, command));
    }
    for command in ["git config user.name", "git config --get user.name", "git config get user.name", "git config -l"] {
        assert!(!protected(&c, command), "{command}: {:?}", requests(&c, command));
    }
}
