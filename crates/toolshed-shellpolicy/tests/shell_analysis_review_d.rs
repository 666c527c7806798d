//! Bypasses review 26 found (and spellings of the same classes it did not list), decided by the
//! real rule engine under `bash = { "*" = "allow", "rm *" = "deny" }` — or with no
//! configuration at all (`"*"` allows, so only what the analysis cannot follow asks). Each must
//! ask or be denied; writes to protected paths must be `protected` requests.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "review_support/mod.rs"]
mod review_support;

use review_support::*;

const RULES: &str = "[permission]\nbash = { \"*\" = \"allow\", \"rm *\" = \"deny\" }\n";

const FILES: &[(&str, &str)] = &[("canary", "alive\n"), ("a.txt", "a\n"), ("src/keep.txt", "keep\n")];

fn case() -> Case {
    case_with(RULES, FILES)
}

/// No configuration: every command is allowed unless the analysis cannot follow it.
fn bare() -> Case {
    case_with("", FILES)
}

/// A worktree with a `.git` directory (hooks included).
fn with_git(c: Case) -> Case {
    std::fs::create_dir_all(c.root.join(".git/hooks")).unwrap();
    std::fs::write(c.root.join(".git/config"), "[core]\n").unwrap();
    std::fs::write(c.root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    c
}

/// Whether a command writes a protected path (the tool then asks `protected`).
fn protected(c: &Case, command: &str) -> bool {
    requests(c, command).iter().any(|r| toolshed_core::protected::implied_request(r, None).is_some())
}

fn assert_protected(c: &Case, commands: &[&str]) {
    for command in commands {
        assert!(protected(c, command), "{command}: {:?}", requests(c, command));
    }
}

/// H1, M1: SQL given to sqlite3 is code: functions that run programs, write or read files, load
/// extensions, and statements that write other files ask; a plain query does not.
#[test]
fn sqlite_functions_and_statements_that_reach_outside_ask() {
    let c = case();
    assert_not_allowed(&c, &["sqlite3 a.db \"select edit('x','rm a.txt')\"", "sqlite3 a.db 'SELECT EDIT ( 1, 2 )'"]);
    let b = bare();
    assert_not_allowed(
        &b,
        &[
            "sqlite3 a.db \"select writefile('.git/config','x')\"",
            "sqlite3 a.db \"select load_extension('./x.so')\"",
            "sqlite3 a.db \"select readfile('secret')\"",
            "sqlite3 a.db \"attach 'x.db' as y\"",
            "sqlite3 a.db \"vacuum into 'x.db'\"",
            "sqlite3 a.db \"select fts3_tokenizer('x', 1)\"",
            "sqlite3 -cmd \"select edit(1,'x')\" a.db 'select 1'",
        ],
    );
    assert_allowed(
        &b,
        &[
            "sqlite3 a.db 'select count(*) from t'",
            "sqlite3 a.db \"select name from sqlite_master where type in ('table', 'view')\"",
            "sqlite3 a.db 'select max(id), lower(name) from t group by name'",
        ],
    );
}

/// H2: git run in a directory that is not the worktree's own repository — a bare-looking one,
/// one the line creates, one that does not exist yet — asks.
#[test]
fn git_in_a_repository_that_is_not_the_worktrees_own_asks() {
    let c = with_git(case());
    let attack = "mkdir -p r/refs r/objects && echo \"ref: refs/heads/main\" > r/HEAD && printf \
                  \"[core]\\n\\tbare = true\\n\\tsshCommand = rm -f ../a.txt\\n[remote \\\"o\\\"]\\n\\turl = \
                  ssh://x/y\\n\" > r/config && git -C r fetch o";
    assert_not_allowed(&c, &[attack, "git -C r fetch o", "cd r && git fetch o"]);
    // A bare-looking directory already on disk.
    std::fs::create_dir_all(c.root.join("b/refs")).unwrap();
    std::fs::create_dir_all(c.root.join("b/objects")).unwrap();
    std::fs::write(c.root.join("b/HEAD"), "ref: refs/heads/main\n").unwrap();
    assert_not_allowed(&c, &["git -C b fetch o", "cd b && git fetch o", "git -C b/refs log"]);
    // An existing plain directory whose git files the line writes.
    assert_not_allowed(
        &c,
        &[
            "echo 'ref: refs/heads/main' > src/HEAD; mkdir src/refs src/objects; printf x > src/config; git -C src fetch o",
        ],
    );
    assert_allowed(&bare(), &["git status", "git -C src log", "git -C . status", "cd src && git status"]);
}

/// H3: roff's unsafe mode runs programs (`.sy`, `.pi`).
#[test]
fn roff_unsafe_mode_asks() {
    let c = bare();
    assert_not_allowed(
        &c,
        &[
            "groff -U -Tascii <<< '.sy rm a.txt'",
            "groff -UTascii x.1",
            "groff -Tascii -U x.1",
            "nroff -U x.1",
            "troff -U x.1",
            "pic -U x.pic",
            "groff -l x.1",
            "GROFF_BIN_PATH=. groff x.1",
        ],
    );
    assert_allowed(&c, &["groff -Tascii -man x.1", "nroff -man x.1"]);
}

/// H4, H5: man's options and variables that choose programs or configuration, and a page file
/// the line writes itself.
#[test]
fn man_options_that_run_programs_ask() {
    let c = bare();
    assert_not_allowed(
        &c,
        &[
            "printf '.sy rm a.txt\\n' > x.1; MANROFFOPT=-U man -l x.1",
            "printf '.sy rm a.txt\\n' > x.1; man -l x.1",
            "printf '.sy rm a.txt\\n' > x.1; man ./x.1",
            "man -l \"$f\"",
            "man -C m.conf ls",
            "man --config-file=m.conf ls",
            "man --conf m.conf ls",
            "man -Hfirefox ls",
            "man --html=firefox ls",
            "man -P 'rm a.txt' ls",
            "man --pager=less ls",
            "man -p x ls",
            "man --preprocessor=x ls",
            "MANPATH=./m man ls",
            "MANROFFSEQ=x man ls",
        ],
    );
    assert_allowed(&c, &["man ls", "man 5 crontab", "man -k printf", "man -f ls"]);
}

/// H6: compiler and linker options that run programs or load plugins.
#[test]
fn compiler_options_that_run_programs_ask() {
    let c = bare();
    assert_not_allowed(
        &c,
        &[
            "gcc -wrapper 'sh,-c,rm a.txt' -E -x c /dev/null",
            "cc -wrapper sh,-c,x a.c",
            "g++ -B./bin a.cc",
            "gcc -B ./bin a.c",
            "gcc -fplugin=./p.so a.c",
            "gcc -fplugin-arg-p-x=y a.c",
            "gcc -specs=x.specs a.c",
            "gcc --specs=x.specs a.c",
            "x86_64-linux-gnu-gcc-12 -wrapper sh,-c,x a.c",
            "clang -Xclang -load -Xclang ./p.so a.c",
            "clang -fpass-plugin=./p.so a.c",
            "clang-17 -fplugin=./p.so a.c",
            "gcc -fuse-ld=./myld a.c",
            "gcc -Wl,-plugin,./p.so a.c",
            "gcc @args a.c",
            "COMPILER_PATH=. gcc a.c",
            "GCC_EXEC_PREFIX=./x gcc a.c",
            "opt -load ./p.so x.ll",
            "opt -load-pass-plugin=./p.so x.ll",
            "ld -plugin ./p.so a.o",
            "ld --plugin=./p.so a.o",
            "ld.gold -plugin ./p.so a.o",
        ],
    );
    assert_allowed(
        &c,
        &[
            "gcc -O2 -Wall -o a a.c",
            "cc -c a.c",
            "clang -E -x c /dev/null",
            "g++ -std=c++17 a.cc",
            "gcc -c plugin.c",
            "ld -o x plugin.o",
            "opt -S download.ll",
        ],
    );
}

/// H7, M6: variables programs read as options or commands.
#[test]
fn variables_programs_read_as_options_or_commands_ask() {
    let c = bare();
    assert_not_allowed(
        &c,
        &[
            "ZIPOPT='-T -TT \"rm a.txt\"' zip -q x.zip a.txt",
            "ZIP='-TT x' zip x.zip a.txt",
            "UNZIP=-o unzip x.zip",
            "UNZIPOPT=-o unzip x.zip",
            "DEPENDENCIES_OUTPUT=.git/hooks/x gcc -c a.c",
            "SUNPRO_DEPENDENCIES=x gcc -c a.c",
            "VALGRIND_OPTS=--x valgrind ls",
            "SSH_ASKPASS_REQUIRE=force ssh x",
            "GROFF_COMMAND_PREFIX=x groff a",
            "LESSHISTFILE=.git/config less a.txt",
            "PERLDOC_PAGER=x perldoc a",
            "SENSIBLE_EDITOR=x sensible-editor a.txt",
            "FROBNICATE_OPTS=x frob",
            "FROB_OPTIONS=x frob",
            "FROBOPT=x frob",
            "export FROB_COMMAND=x",
        ],
    );
    assert_allowed(&c, &["RUST_LOG=debug ls", "LANG=C ls", "TZ=UTC date", "NO_COLOR=1 ls", "CI=1 ls"]);
}

/// H8: interpreters that run a file or their input.
#[test]
fn more_interpreters_run_files_they_write_and_their_input() {
    let c = case();
    assert_not_allowed(
        &c,
        &[
            "lli <<< 'x'",
            "printf x > a.ll; lli a.ll",
            "printf x > X.java; java X.java",
            "pdb3 a.py <<< '!import os'",
            "jdb X",
            "printf x > a.kts; kotlin a.kts",
            "printf x > a.groovy; groovy a.groovy",
            "printf x > a.ts; deno run a.ts",
            "printf x > a.ts; bun run a.ts",
            "printf x > a.ts; tsx a.ts",
        ],
    );
    assert_not_allowed(&c, &["printf x > a.csx; dotnet script a.csx", "dotnet script"]);
    assert_allowed(&bare(), &["java -version", "java --version"]);
}

/// H9: editors and pagers reached through another name: Debian's alternatives, a link.
#[test]
fn editors_under_other_names_ask() {
    let c = bare();
    assert_not_allowed(
        &c,
        &[
            "editor -es <<< 'call system(\"rm a.txt\")'",
            "/usr/bin/editor -es <<< 'x'",
            "sensible-editor a.txt",
            "select-editor",
            "pager a.txt",
            "sensible-pager a.txt",
            "x-www-browser x",
            "www-browser x",
            "sensible-browser x",
        ],
    );
    if let Some(vim) = ["/usr/bin/vim", "/usr/bin/vi", "/usr/bin/vim.basic", "/usr/bin/vim.tiny"]
        .iter()
        .find(|p| std::path::Path::new(p).exists())
    {
        std::os::unix::fs::symlink(vim, c.root.join("v")).unwrap();
        assert_not_allowed(&c, &["./v -es <<< 'call system(\"rm a.txt\")'"]);
    }
    // Any path-named link whose target asks (here a link to `nc` with `-e`).
    std::os::unix::fs::symlink("/usr/bin/sensible-editor", c.root.join("se")).unwrap();
    assert_not_allowed(&c, &["./se a.txt"]);
}

/// H10: `pushd +N`/`-N`, `popd`: the directory stack's entry is not known here.
#[test]
fn directory_stack_rotations_make_the_directory_unknown() {
    let c = with_git(bare());
    assert_protected(&c, &["pushd .git; echo x >> config"]);
    for command in [
        "pushd .git; pushd ..; pushd +1; echo x >> config",
        "pushd .git; pushd ..; pushd -1; echo x >> config",
        "pushd .git; pushd ..; popd +0; echo x >> config",
        "pushd -n .git; pushd; echo x >> config",
    ] {
        assert!(decide(&c, command) != toolshed_core::permission::Action::Allow || protected(&c, command), "{command}");
        assert_not_allowed(&c, &[command]);
    }
}

/// H11: `shopt` options that change what `cd` and names mean.
#[test]
fn shopt_options_that_change_cd_ask() {
    let c = with_git(bare());
    assert_not_allowed(
        &c,
        &[
            "shopt -s cdable_vars; v=.git; cd v; echo x >> config",
            "bash -O cdable_vars -c 'v=.git; cd v; echo x >> config'",
            "shopt -s autocd; .git; echo x >> config",
            "shopt -s expand_aliases",
            "shopt -s extdebug",
            "shopt -s cdspell",
            "shopt -s frobnicate",
            "shopt -s -o physical",
        ],
    );
    assert_allowed(&c, &["shopt -s globstar nullglob; ls", "shopt -s extglob", "shopt -p", "shopt -u dotglob"]);
}

/// H12: functions, traps and physical `..` resolution.
#[test]
fn functions_traps_and_symlinked_parents_are_followed() {
    let c = with_git(bare());
    std::os::unix::fs::symlink(c.root.join(".git/hooks"), c.root.join("h")).unwrap();
    let root = c.root.display().to_string();
    for command in [
        format!("f(){{ cd .git; }}; cd {root}; f; echo x >> config"),
        "f(){ cd .git; }; f; echo x >> config".to_string(),
        "cd .git; f(){ cd ..; }; echo x >> config".to_string(),
        "cd .git; (cd ..); echo x >> config".to_string(),
        "trap 'cd .git' DEBUG; echo x >> config".to_string(),
        "cd -P h/..; echo x >> config".to_string(),
        "set -P; cd h/..; echo x >> config".to_string(),
        "cd h; cd -P ..; echo x >> config".to_string(),
        "cd h; echo x >> ../config".to_string(),
        "echo x >> h/../config".to_string(),
        "ln -s .git/hooks g; cd -P g/..; echo x >> config".to_string(),
        "ln -s .git/hooks g; echo x >> g/../config".to_string(),
        "cd .git; if false; then cd ..; fi; echo x >> config".to_string(),
        "cd .git; false && cd ..; echo x >> config".to_string(),
        "cd .git; for d in; do cd ..; done; echo x >> config".to_string(),
        "cd .git; cd .. & echo x >> config".to_string(),
    ] {
        let allowed = decide(&c, &command) == toolshed_core::permission::Action::Allow && !protected(&c, &command);
        assert!(!allowed, "{command}: {:?}", requests(&c, &command));
    }
    assert_allowed(&c, &["f(){ echo hi; }; f", "cd src; echo x > new.txt", "cd src/..; echo x > new.txt"]);
}

/// L3: `source`/`.` may change the directory.
#[test]
fn source_makes_the_directory_unknown() {
    let c = with_git(bare());
    std::fs::write(c.root.join("s"), "cd .git\n").unwrap();
    std::fs::write(c.root.join("t"), "x=1 # cd somewhere\nexport A=1\n").unwrap();
    std::fs::write(c.root.join("u"), "x=1\n  . ./s\n").unwrap();
    assert_allowed(&c, &["source t; echo x > out.txt"]);
    for command in ["source s; echo x >> config", ". ./s; echo x >> config", ". ./u; echo x >> config"] {
        let allowed = decide(&c, command) == toolshed_core::permission::Action::Allow && !protected(&c, command);
        assert!(!allowed, "{command}: {:?}", requests(&c, command));
    }
}

/// M4: a link made to a protected path is a protected write.
#[test]
fn links_to_protected_paths_are_protected_writes() {
    let c = with_git(bare());
    assert_protected(
        &c,
        &[
            "ln -s .git/config c; echo x >> c",
            "ln .git/config c",
            "cp -s .git/config c",
            "cp -l .git/config c",
            "link .git/config c",
            "ln -s toolshed.toml t",
            "ln -sf ../.git/config src/c",
        ],
    );
}

/// M5: any program naming a protected path, unless it is known only to read it.
#[test]
fn protected_paths_named_by_any_writer_are_protected() {
    let c = with_git(bare());
    assert_protected(
        &c,
        &[
            "split -b 1 a.txt .git/hooks/pre-commit",
            "csplit a.txt 1 -f .git/hooks/x",
            "zip .git/x.zip a.txt",
            "gcc -o .git/hooks/pre-commit a.c",
            "gcc -MF .git/x -c a.c",
            "gcc -MF.git/x -c a.c",
            "ssh-keygen -f .git/x",
            "ssh -E .git/x host",
            "sdiff -o .git/config a b",
            "openssl enc -out .git/config",
            "gpg -o .git/config x",
            "gpgtar -C .git -d x",
            "msgfmt -o .git/config x.po",
            "qemu-img create .git/x 1M",
            "mkfifo .git/x",
            "mknod .git/x p",
            "cpio -i -D .git < x",
            "dpkg-deb -x x.deb .git",
            "frobnicate --out=.git/config",
            "frobnicate toolshed.toml",
            "gunzip .git/config.gz",
            "xz -d .git/config.xz",
            "zstd -d .git/config.zst",
            "awk '{ print > \".git/config\" }' a.txt",
            "cd .git/hooks && ar x a.a",
            "cd .git && frobnicate",
            "if true; then cd .git; fi; frobnicate",
        ],
    );
    for command in ["cd .git && cat config", "cd .git && ls", "cd .git && git log"] {
        assert!(!protected(&c, command), "{command}: {:?}", requests(&c, command));
    }
    // awk writing to a file named at run time (`FILENAME`, a variable) may write any file.
    assert_not_allowed(
        &bare(),
        &["awk '{ print > FILENAME }' .git/config", "awk -v f=.git/config '{ print >> f }' a.txt"],
    );
    assert_allowed(&bare(), &["awk '$1 > 5' a.txt", "awk '{ if ($2 >= 3) print $1 }' a.txt"]);
    for command in ["cat .git/config", "ls .git", "grep -r x --exclude-dir=.git .", "git status", "head .git/HEAD"] {
        assert!(!protected(&c, command), "{command}: {:?}", requests(&c, command));
    }
}

/// M2, M3, L1, L2: psql and mysql meta-commands, apt's hooks, lldb's commands, perl's `-x`.
#[test]
fn client_meta_commands_and_hooks_ask() {
    let c = bare();
    assert_not_allowed(
        &c,
        &[
            "psql -c \"\\copy t to program 'rm a.txt'\"",
            "psql -c 'copy t to program $$rm a.txt$$'",
            "psql -c '\\e'",
            "psql -c '\\w x'",
            "psql -c '\\setenv PAGER x'",
            "PSQLRC=x psql -c 'select 1'",
            "mysql -e 'pager rm a.txt'",
            "mysql -e '\\P rm'",
            "apt-get -o 'APT::Update::Pre-Invoke::=rm a.txt' update",
            "apt-get -o DPkg::Pre-Invoke::=x install y",
            "apt -o Dpkg::Options::=--x install y",
            "apt-get -oAPT::Update::Post-Invoke-Success::=x update",
            "apt-get -c x.conf update",
            "lldb -o 'platform shell rm a.txt'",
            "lldb -s x.lldb",
            "lldb -O 'x'",
            "lldb -S x",
            "lldb --source-before-file x",
            "lldb --one-line='x'",
        ],
    );
    assert_not_allowed(
        &case(),
        &["mysql -e 'system rm a.txt'", "perl -x a.txt", "perl -xsub a.txt", "perl -wxsub a.txt"],
    );
}
