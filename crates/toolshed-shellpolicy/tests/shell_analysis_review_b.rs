//! Bypasses a later adversarial review found (and spellings of them it did not list), decided by
//! the real rule engine under `bash = { "*" = "allow", "rm *" = "deny", "curl *" = "deny" }`,
//! `read = { "*.env" = "deny", "secrets/*" = "deny" }`, `edit = { "protected.txt" = "deny" }`:
//! each must ask or be denied, never be allowed. Where a spelling needs a shell to show it is a
//! real attack, the execution oracle runs it (`/bin/bash -c` in a fresh directory with a file
//! `canary`).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "review_support/mod.rs"]
mod review_support;

use review_support::*;
use toolshed_core::agents::Agents;
use toolshed_core::config::Config;
use toolshed_core::permission::Action;

const RULES: &str = "[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\", \"curl *\" = \"deny\" }\n\
read = { \"*\" = \"allow\", \"*.env\" = \"deny\", \"secrets/*\" = \"deny\" }\n\
edit = { \"*\" = \"allow\", \"protected.txt\" = \"deny\" }\n";

fn case() -> Case {
    case_with(
        RULES,
        &[
            ("canary", "alive\n"),
            ("a.txt", "a\n"),
            ("protected.txt", "keep\n"),
            (".env", "API=hunter2\n"),
            ("secrets/k", "key\n"),
        ],
    )
}

/// Finding 1: bash evaluates every value assigned to `RANDOM`, `OPTIND`, `SRANDOM`, `HISTCMD`
/// (and the other integer shell variables) as arithmetic, so `a[$(cmd)]` in it runs `cmd`.
#[test]
fn assigning_integer_shell_variables_is_arithmetic() {
    let c = case();
    let reported = [
        "x='a[$(rm canary)]'; RANDOM=$x",
        "x='a[$(rm canary)]'; OPTIND=$x",
        "x='a[$(rm canary)]'; SRANDOM=$x",
        "x='a[$(rm canary)]'; HISTCMD=$x",
        "x='a[$(rm canary)]'; export RANDOM=$x",
        "x='a[$(rm canary)]'; declare OPTIND=$x",
        "RANDOM=$(cat f)",
        // (bash 5.2.15 does not evaluate a prefix assignment's value, other versions may.)
        "x='a[$(rm canary)]'; RANDOM=$x true",
    ];
    let more = [
        "x='a[$(rm canary)]'; RANDOM=${x}",
        "x='a[$(rm canary)]'; RANDOM=\"$x\"",
        "RANDOM='a[$(rm canary)]'",
        "x='a[$(rm canary)]'; RANDOM=1; RANDOM+=$x",
        "x='a[$(rm canary)]'; local OPTIND=$x 2>/dev/null || OPTIND=$x",
        "x='a[$(rm canary)]'; typeset RANDOM=$x",
        "x='a[$(rm canary)]'; BASH_XTRACEFD=$x",
        "x='a[$(rm canary)]'; BASH_COMPAT=$x",
        "echo 'a[$(rm canary)]' > f; read RANDOM < f",
        "echo 'a[$(rm canary)]' > f; printf -v OPTIND %s \"$(cat f)\"",
        "for OPTIND in 'a[$(rm canary)]'; do :; done",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_attacks(&reported[..6]);
    assert_attacks(&more[..6]);
    assert_attacks(&more[8..]);
    assert_not_allowed(&c, &["RANDOM=$y", "SECONDS=$y", "LINENO=$y", "OPTIND=$OPTARG"]);
    // Integers, and variables the line set to one, are understood.
    assert_allowed(
        &c,
        &["RANDOM=42", "OPTIND=1", "n=5; RANDOM=$n", "SECONDS=0; sleep 0; echo $SECONDS", "OPTIND=$RANDOM"],
    );
}

/// Finding 2: the subscript of `-v NAME[SUBSCRIPT]` (and `-R`) in `[[ ]]`, `test` and `[` is
/// arithmetic; anything but an integer literal asks.
#[test]
fn test_v_subscripts_must_be_integer_literals() {
    let c = case();
    let reported = [
        "x='a[$(rm canary)]'; [[ -v a[x] ]]",
        "x='a[$(rm canary)]'; test -v a[x]",
        "x='a[$(rm canary)]'; [[ -v a\\[x\\] ]]",
        "x='a[$(rm canary)]'; [[ -v a[1+x] ]]",
        "x='a[$(rm canary)]'; [[ -v PIPESTATUS[x] ]]",
        "x='a[$(rm canary)]'; [ -v a[x] ]",
    ];
    let more = [
        "x='a[$(rm canary)]'; test -v 'a[x]'",
        "x='a[$(rm canary)]'; [[ ! -v a[x] ]]",
        "x='a[$(rm canary)]'; [[ -n 1 && -v a[x] ]]",
        "x='a[$(rm canary)]'; if test -v \"a[x]\"; then :; fi",
        "x='a[$(rm canary)]'; [ -v a[x+0] ]",
        "x='a[$(rm canary)]'; builtin test -v a[x]",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_not_allowed(&c, &["x='a[$(rm canary)]'; [[ -v a[(x)] ]]"]);
    assert_attacks(&reported);
    assert_attacks(&more);
    assert_not_allowed(&c, &["[[ -R a[x] ]]", "test -R a[x]", "[[ -v $name ]]", "y=x; test -v $y"]);
    assert_allowed(&c, &["[[ -v HOME ]]", "[[ -v a[1] ]]", "test -v PATH", "test -v a[0]"]);
}

/// Finding 3: `$((...))` and `$[...]` are arithmetic wherever they sit: in a `${...}` operand,
/// in `[ ]` and `[[ ]]`.
#[test]
fn arithmetic_nested_in_expansions_and_tests_is_checked() {
    let c = case();
    let p = "x='a[$(rm canary)]'; ";
    let reported = [
        "echo ${y:-$((x))}",
        "echo \"${y:-$[x]}\"",
        "echo ${x/$((x))/}",
        "[ $((x)) ]",
        "[[ a == $((x)) ]]",
        "[[ $((x)) ]]",
        ": ${y:=$((x))}",
        "echo ${y-$((x))}",
        "echo ${y:?$((x))}",
        "echo ${x:+$((x))}",
        "echo ${x//$((x))/}",
        "echo ${x/#$((x))/}",
        "echo ${y:-${y:-$((x))}}",
        "echo ${y:-\"$((x))\"}",
        "[[ -n $((x)) ]]",
        "while [ $((x)) ]; do break; done",
        "if [[ $((x)) ]]; then :; fi",
    ];
    let more = [
        "echo ${y:-$[x]}",
        "echo ${y:-$(( x + 1 ))}",
        "echo \"${y:-$((x))}\"",
        "[ \"$((x))\" = 1 ]",
        "test $[x]",
        "[[ $[x] == 1 ]]",
        "echo ${y:-${z:-$[x]}}",
        "case $((x)) in *) ;; esac",
        "cat <<EOF\n${y:-$[x]}\nEOF",
        "cat <<EOF\n${y:-$((x))}\nEOF",
        "cat <<EOF\n$[x]\nEOF",
        "a=(1); echo ${a[$[x]]}",
    ];
    let reported: Vec<String> = reported.iter().map(|l| format!("{p}{l}")).collect();
    let more: Vec<String> = more.iter().map(|l| format!("{p}{l}")).collect();
    let reported: Vec<&str> = reported.iter().map(String::as_str).collect();
    let more: Vec<&str> = more.iter().map(String::as_str).collect();
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_attacks(&reported);
    assert_attacks(&more);
    // (With `x` set, `:-` does not expand its word; still not allowed.)
    assert_not_allowed(&c, &["x='a[$(rm canary)]'; echo ${x:-\"$((x))\"}"]);
    // And a `$(` tree-sitter leaves as text in an unquoted here-document's `${...}` (bash 5.2.15
    // fails to parse this one, others may run it).
    assert_not_allowed(&c, &["x=a; cat <<EOF\n${x#$(rm canary)}\nEOF"]);
    assert_allowed(&c, &["cat <<EOF\n$(date) $HOME ${HOME} $((1+2))\nEOF", "cat <<'EOF'\n$[x] $(rm canary)\nEOF"]);
    assert_allowed(
        &c,
        &["echo ${y:-$((1+2))}", "n=3; echo ${y:-$((n))}", "[ $((1+1)) -eq 2 ]", "echo $[1+2]", "echo ${HOME:-/tmp}"],
    );
}

/// Finding 4: a variable whose setting asks (`PATH`, `GIT_DIR`, `CDPATH`, ...) set through
/// arithmetic or a `{NAME}>` redirection, or exported with the value it has.
#[test]
fn variables_set_by_arithmetic_or_named_descriptors_ask() {
    let c = case();
    let reported = [
        "(( PATH = 7 )); ls canary",
        "for ((PATH=12;0;)); do :; done",
        "echo $[PATH=10]",
        "exec {PATH}>/dev/null; ls canary",
        "exec {GIT_DIR}>/dev/null; export GIT_DIR; git status",
        "exec {CDPATH}>/dev/null",
        "export GIT_DIR",
    ];
    let more = [
        "(( PATH += 1 ))",
        "(( PATH -= 1 ))",
        "(( PATH *= 2 ))",
        "(( PATH <<= 1 ))",
        "(( PATH++ ))",
        "(( --PATH ))",
        "echo $(( PATH = 7 ))",
        "let PATH=7",
        ": $(( BASH_ENV = 1 ))",
        "exec {PATH}<a.txt",
        "exec {PATH}<>a.txt",
        "exec {GIT_DIR}>&-",
        "cat a.txt {LD_PRELOAD}>/dev/null",
        "declare -x GIT_DIR",
        "readonly PATH",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_allowed(&c, &["exec {fd}>/dev/null", "(( n = 7 ))", "unset CDPATH", "export FOO", "declare -p PATH"]);
}

/// Findings 5 and 6: bash removes backslash-newlines from an unquoted here-document's body
/// before it looks for the delimiter and expansions, so `EO\⏎F` ends it and `$\⏎(cmd)` runs.
#[test]
fn here_documents_joined_by_backslash_newlines_ask() {
    let c = case();
    let reported = [
        "cat <<EOF\nhello\nEO\\\nF\nrm canary\nEOF",
        "cat <<-EOF\nhello\n\tEO\\\nF\nrm canary\nEOF",
        "cat <<EOF\n$\\\n(rm canary)\nEOF",
        "x='a[$(rm canary)]'; cat <<EOF\n$\\\n((x))\nEOF",
    ];
    let more = [
        "cat <<EOF\nE\\\nO\\\nF\nrm canary\nEOF",
        "cat <<EOF >/dev/null\nhello\nEOF\\\n\nrm canary\nEOF",
        "cat <<EOF\n\\\nEOF\nrm canary\nEOF",
        "cat <<EOF\n$\\\n{x:-$(rm canary)}\nEOF",
        "x=1; cat <<EOF\n$\\\n[x]$\\\n(rm canary)\nEOF",
        "cat <<E\nx\nE\\\n\nrm canary\nE",
        "cat <<EOF\n`\\\n`rm canary`\nEOF",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_attacks(&reported);
    assert_attacks(&more[..6]);
    // A continuation in the text, or in a quoted here-document, changes nothing.
    assert_allowed(&c, &["cat <<EOF\na \\\nb\nEOF", "cat <<'EOF'\nEO\\\nF\nEOF", "cat <<EOF\na \\\\\nb\nEOF"]);
}

/// Finding 8: `N<>file` opens the file for writing too, whatever the descriptor.
#[test]
fn read_write_redirections_are_writes() {
    let c = case();
    let reported = ["cat a.txt 1<>protected.txt", "exec 3<>protected.txt"];
    let more = [
        "exec 0<>protected.txt",
        "echo x 2<>protected.txt",
        "exec {fd}<>protected.txt",
        "cat 5<> protected.txt",
        "exec 10<>protected.txt",
        "echo x <>protected.txt",
    ];
    for command in reported.iter().chain(&more) {
        assert_eq!(decide(&c, command), Action::Deny, "{command}: {:?}", requests(&c, command));
    }
    // And a read: `<>` of a file the read rules deny is denied.
    assert_eq!(decide(&c, "exec 3<>.env"), Action::Deny);
}

/// Finding 7: `history -w/-a FILE` writes FILE, `-r/-n FILE` reads it; without a file they use
/// `$HISTFILE`, which may name any file.
#[test]
fn history_files_are_writes_and_reads() {
    let c = case();
    for command in [
        "history -w protected.txt",
        "history -a protected.txt",
        "history -aw protected.txt",
        "history -w -- protected.txt",
        "builtin history -w protected.txt",
        "history -c; history -w protected.txt",
        "history -r .env",
        "history -n .env",
        "history -r secrets/k",
    ] {
        assert_eq!(decide(&c, command), Action::Deny, "{command}: {:?}", requests(&c, command));
    }
    assert_not_allowed(
        &c,
        &[
            "HISTFILE=protected.txt; set -o history; history -s x; history -w",
            "history -a",
            "history -r",
            "history -n",
            "history -w $f",
            "history -w /tmp/h",
        ],
    );
    assert_allowed(
        &c,
        &["history", "history 10", "history -c", "history -d 3", "history -w h.txt", "history -r a.txt"],
    );
}

/// The directories whose files the analysis hands to the tool to check (`TreeRead`).
fn shown(c: &Case, command: &str) -> Vec<std::path::PathBuf> {
    toolshed_shellpolicy::analyse(command, &c.root, &c.root, Some(&c.root))
        .tree_reads
        .into_iter()
        .map(|t| t.path)
        .collect()
}

/// Finding 9: a link (or copy) makes what it names readable under another name, so its source
/// and everything under it are read; a `cd` to a pattern moves to what the pattern matches, or
/// to a directory not known (relative paths then ask); trees are handed on with symbolic links
/// resolved.
#[test]
fn links_copies_and_cd_patterns_read_what_they_name() {
    let c = case();
    let secrets = c.root.join("secrets");
    let env = c.root.join(".env");
    for (command, path) in [
        ("ln -s secrets s && cat s/k", &secrets),
        ("ln -s ./secrets s", &secrets),
        ("ln -s secret? s; cat s/k", &secrets),
        ("ln -s .e?v q; cat q", &env),
        ("ln -sf secrets/ s", &secrets),
        ("ln -s -- secrets s", &secrets),
        ("ln -s secrets", &secrets),
        ("ln -s ../secrets sub/s", &secrets),
        ("ln .env q", &env),
        ("cp -s secrets/k q", &secrets.join("k")),
        ("cp -r secrets x", &secrets),
        ("cp -al secrets x", &secrets),
        ("ln -t d -s \"$f\"", &c.root),
        ("cp $f x", &c.root),
    ] {
        let trees = shown(&c, command);
        assert!(trees.iter().any(|t| t == path), "{command}: {trees:?} {:?}", requests(&c, command));
    }
    // A symbolic link that already exists is resolved: `cat s/*` shows `secrets/*`.
    std::os::unix::fs::symlink("secrets", c.root.join("s")).unwrap();
    for command in ["cat s/*", "grep -r . s", "head s/*", "rg x s"] {
        let trees = shown(&c, command);
        assert!(trees.iter().any(|t| t == &secrets), "{command}: {trees:?}");
    }
    // Under the worktree's own spelling when it is reached through a link itself.
    let alias = c.root.parent().unwrap().join(format!("{}-alias", c.root.file_name().unwrap().to_str().unwrap()));
    std::os::unix::fs::symlink(&c.root, &alias).unwrap();
    let trees = toolshed_shellpolicy::analyse("cat s/*", &alias, &alias, Some(&alias)).tree_reads;
    assert!(trees.iter().any(|t| t.path == alias.join("secrets")), "{trees:?}");
    std::fs::remove_file(&alias).unwrap();
    std::fs::create_dir(c.root.join("sec2")).unwrap();
    for command in ["cd sec* && cat k", "cd secr?ts && cat k", "cd [s]ecrets; cat k", "cd ./secre*; head -1 k"] {
        assert_ne!(decide(&c, command), Action::Allow, "{command}: {:?}", requests(&c, command));
    }
    // Two matches (or none): the directory is unknown, relative paths ask.
    assert_not_allowed(&c, &["cd se* && cat k", "cd nomatch* && cat k", "cd s*/ && cat k"]);
    assert_allowed(&c, &["ln -s a.txt b.txt", "cp a.txt b.txt", "cd secr*", "mv a.txt b.txt"]);
}

/// Found while fixing findings 1 and 4: a name reference to an integer shell variable or to a
/// variable whose setting asks sets it through another name, and `${NAME:=value}` sets NAME.
#[test]
fn name_references_and_default_assignments_set_what_they_name() {
    let c = case();
    let attacks = [
        "x='a[$(rm canary)]'; declare -n r=RANDOM; r=$x",
        "x='a[$(rm canary)]'; declare -n r; r=OPTIND; r=$x",
        "x='a[$(rm canary)]'; typeset -n r=OPTIND; r=$x",
    ];
    assert_not_allowed(&c, &attacks);
    assert_attacks(&attacks[..1]);
    assert_not_allowed(
        &c,
        &[
            "declare -n r=PATH; r=/tmp/evil; ls",
            "local -n r=GIT_DIR 2>/dev/null; r=/tmp/x",
            "declare -n r; r=PATH",
            "unset PATH; : ${PATH:=/tmp/evil}; ls",
            "echo ${GIT_DIR:=/tmp/x}",
            ": ${BASH_ENV=/tmp/x}",
        ],
    );
    // (Cost: any name reference with a value that is not an integer asks.)
    assert_allowed(&c, &["echo ${x:=1}", "echo ${PATH:-/bin}"]);
}

/// Found while fixing finding 2: the builtins that set or unset a name (`read`, `printf -v`,
/// `unset`, `getopts`, `mapfile`) evaluate its subscript as arithmetic too.
#[test]
fn subscripts_of_names_builtins_set_must_be_integer_literals() {
    let c = case();
    let attacks = [
        "x='a[$(rm canary)]'; printf -v a[x] 1",
        "x='a[$(rm canary)]'; read a[x] <<< 1",
        "x='a[$(rm canary)]'; a=(1); unset a[x]",
        "x='a[$(rm canary)]'; a=(1); unset 'a[x]'",
        "x='a[$(rm canary)]'; printf -va[x] 1",
        "x='a[$(rm canary)]'; read -r a[x+1] <<< 1",
    ];
    assert_not_allowed(&c, &attacks);
    assert_attacks(&attacks);
    assert_not_allowed(
        &c,
        &["x='a[$(rm canary)]'; getopts o a[x] -o", "x='a[$(rm canary)]'; mapfile a[x] < /dev/null"],
    );
    assert_allowed(&c, &["read a[0] <<< 1", "printf -v a[1] %s x", "unset a[2]", "read -r line <<< x", "unset x"]);
}

/// Programs that change a file in place, or files the line does not name, under an edit deny
/// (review 14's medium finding: `gzip protected.txt`, `fallocate -p … protected.txt` and
/// `git checkout -- protected.txt` changed the denied file): the file they name is an edit, and
/// writes whose files no pattern names ask where some edit rule denies something.
#[test]
fn writers_in_place_and_writes_to_unnamed_files_meet_the_edit_rules() {
    let c = case();
    assert_not_allowed(
        &c,
        &[
            "gzip protected.txt",
            "bzip2 -k protected.txt",
            "xz protected.txt",
            "zstd --rm protected.txt",
            "dos2unix protected.txt",
            "fallocate -p -o 0 -l 2 protected.txt",
            "git checkout -- protected.txt",
            "git restore protected.txt",
            "git stash",
            "git reset --hard",
            "git clean -fdx",
            "git mv a.txt b.txt",
            "git -C . checkout HEAD -- .",
            "f=protected.txt; echo x > \"$f\"",
            "tar xf a.tar",
            "unzip a.zip",
        ],
    );
    assert_allowed(
        &c,
        &["gzip -c a.txt", "gzip -t a.gz", "git status", "git log --oneline", "git diff", "echo x > a.txt"],
    );
}

/// Without an edit rule that denies something, the same writes need no question.
#[test]
fn writes_to_unnamed_files_ask_nothing_without_an_edit_deny() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let mut cfg = Config::default();
    cfg.merge_str(&root.join("toolshed.toml"), "[permission]\nbash = \"allow\"\nedit = \"allow\"\n").unwrap();
    let c = Case { agents: Agents::from_config(&cfg, &root, Some(&root)), root, _tmp: tmp };
    assert_allowed(&c, &["git checkout -- a.txt", "git stash", "tar xf a.tar", "gzip a.txt", "f=x; echo y > \"$f\""]);
}

/// A redirection to or from a file named at run time: any file of the worktree. A write asks
/// where an edit rule denies something; a read hands the whole worktree to the tool's file by
/// file check of the read rules.
#[test]
fn redirections_to_files_named_at_run_time_meet_the_rules() {
    let c = case();
    assert_not_allowed(&c, &["f=protected.txt; echo x >> $f", "exec 3> \"$f\"", "f=a; cat a.txt 1<> $f"]);
    for command in ["f=.env; cat < \"$f\"", "f=secrets/k; wc -l < $f", "exec 3< \"$f\""] {
        let analysis = toolshed_shellpolicy::analyse(command, &c.root, &c.root, Some(&c.root));
        assert!(
            analysis.tree_reads.iter().any(|t| t.path == c.root && t.hidden),
            "{command}: {:?}",
            analysis.tree_reads
        );
    }
}
