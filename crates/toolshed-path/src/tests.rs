use super::*;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use toolshed_core::wildcard;

/// A worktree `root` inside a scratch directory that also holds things outside it.
struct Fixture {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    fs::create_dir_all(root.join("folder")).unwrap();
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::write(root.join("file.md"), "x").unwrap();
    fs::write(root.join("folder/file.md"), "x").unwrap();
    fs::create_dir_all(base.join("outside/dir")).unwrap();
    fs::write(base.join("outside/secret.txt"), "secret").unwrap();
    fs::write(base.join("escape.txt"), "outside").unwrap();
    Fixture { _tmp: tmp, base, root }
}

impl Fixture {
    fn paths(&self) -> Confinement {
        Confinement::new(&self.root, &self.root)
    }
}

/// The confinement property: refused, or inside the root, or outside with an
/// `external_directory` request whose pattern covers the resolved path.
fn assert_confined(paths: &Confinement, input: &str, access: Access) {
    match paths.resolve_as(input, access) {
        Err(_) => {}
        Ok(p) if p.is_inside() => assert!(p.path().starts_with(paths.root()), "{input:?} -> {}", p.path().display()),
        Ok(p) => {
            let req = p.external_request().unwrap_or_else(|| panic!("{input:?} escaped without a request"));
            assert_eq!(req.permission, "external_directory");
            let pattern = &req.patterns[0];
            // A directory's approval covers what is in it.
            let probe = if p.is_dir() { format!("{}/x", slashed(p.path())) } else { slashed(p.path()) };
            assert!(wildcard::matches(&probe, pattern), "{input:?}: {pattern} does not cover {probe}");
        }
    }
}

fn inside(paths: &Confinement, input: &str) -> String {
    let p = paths.resolve(input).unwrap_or_else(|e| panic!("{input:?} refused: {e}"));
    assert!(p.is_inside(), "{input:?} resolved outside: {}", p.path().display());
    p.pattern()
}

#[test]
fn maf_accepted_paths_resolve_inside_the_root() {
    let f = fixture();
    let paths = f.paths();
    let cases = [
        ("file.md", "file.md"),
        ("folder/file.md", "folder/file.md"),
        ("a/b/c.txt", "a/b/c.txt"),
        ("folder\\file.md", "folder/file.md"),
        ("a\\b\\c.txt", "a/b/c.txt"),
        ("folder//file.md", "folder/file.md"),
        ("a///b////c.txt", "a/b/c.txt"),
        ("file.md/", "file.md"),
        ("folder", "folder"),
        ("a/b", "a/b"),
        ("a\\b/", "a/b"),
        ("notes..md", "notes..md"),
        ("subdir/", "subdir"),
        ("  foo/bar.txt  ", "foo/bar.txt"),
        ("...", "..."),
    ];
    for (input, pattern) in cases {
        assert_eq!(inside(&paths, input), pattern, "{input:?}");
        assert_confined(&paths, input, Access::Read);
        assert_confined(&paths, input, Access::Write);
    }
}

#[test]
fn maf_rejected_paths_are_refused_or_stay_inside_or_need_external_directory() {
    let f = fixture();
    let paths = f.paths();
    let cases = [
        "/file.md",
        "/folder/file.md/",
        "../file.md",
        "folder/../file.md",
        "./file.md",
        "folder/./file.md",
        "C:\\file.md",
        "C:/file.md",
        "D:file.md",
        "",
        "   ",
        "../folder",
        "../escape.txt",
        "/etc/passwd",
        "C:\\temp\\file.txt",
        "./file.txt",
        "../other",
        "folder/../../escape.md",
        "/etc/passwd",
        "C:\\temp\\file.md",
        "../../etc/passwd",
        "foo/",
        "foo\\",
        "foo/../bar.txt",
        "./bar.txt",
        "C:/abs/path",
        "\\rooted",
        "\\\\server\\share\\x",
        "/foo/bar.txt",
        "C:/Windows/System32/notepad.exe",
        ".",
        "..",
        "../escape",
        "/etc",
        "C:/Windows",
        "/abs/path.txt",
        "../../escape",
        "user/../../escape",
        "a/b",
        "a\\b",
        "a\0b",
        "~",
        "~/x",
        "file:///etc/passwd",
    ];
    for input in cases {
        assert_confined(&paths, input, Access::Read);
        assert_confined(&paths, input, Access::Write);
    }
}

#[test]
fn each_refusal_says_what_to_send_instead() {
    let f = fixture();
    let paths = f.paths();
    for input in ["", "   "] {
        assert!(matches!(paths.resolve(input), Err(PathError::Empty { .. })), "{input:?}");
    }
    for input in ["C:\\file.md", "C:/file.md", "D:file.md", "\\\\server\\share"] {
        assert!(matches!(paths.resolve(input), Err(PathError::Windows { .. })), "{input:?}");
    }
    assert!(matches!(paths.resolve("a\0b"), Err(PathError::Nul { .. })));
    assert!(matches!(paths.resolve("a\nb"), Err(PathError::Control { code: 0x0a, .. })));
    assert!(matches!(paths.resolve("a\u{1b}[0mb"), Err(PathError::Control { code: 0x1b, .. })));
    assert!(matches!(paths.resolve_for_write("file.md/"), Err(PathError::TrailingSlash { .. })));
    assert!(matches!(paths.resolve(&"a/".repeat(2100)), Err(PathError::TooLong { .. })));
    assert!(matches!(paths.resolve(&"n".repeat(256)), Err(PathError::TooLong { .. })));
    assert!(matches!(paths.resolve("file.md/inner.txt"), Err(PathError::NotADirectory { .. })));
    insta::assert_snapshot!(paths.resolve("").unwrap_err().to_string().replace(&f.root.display().to_string(), "ROOT"), @"The path is empty. Send a path relative to the working directory `ROOT` (for example `src/main.rs`) or an absolute path.");
    insta::assert_snapshot!(paths.resolve("C:\\x").unwrap_err().to_string().replace(&f.root.display().to_string(), "ROOT"), @r"`C:\x` is a Windows path, but the worktree is at `ROOT` on a POSIX file system. Send a path relative to the working directory, or an absolute path starting with `/`.");
    insta::assert_snapshot!(paths.resolve("a\0b").unwrap_err().to_string(), @r#"The path "a\0b" contains a NUL byte, which no file name can hold. Send the path without it."#);
    insta::assert_snapshot!(paths.resolve_for_write("out/").unwrap_err().to_string(), @"`out/` ends with `/`, which names a directory, but this call writes a file. Send the file path without the trailing slash.");
}

#[test]
fn surrounding_whitespace_and_file_urls_are_forgiven() {
    let f = fixture();
    let paths = f.paths();
    assert_eq!(inside(&paths, "file.md\n"), "file.md");
    assert_eq!(inside(&paths, "\tfolder/file.md "), "folder/file.md");
    let url = format!("file://{}/file.md", f.root.display());
    assert_eq!(inside(&paths, &url), "file.md");
}

#[test]
fn absolute_paths_inside_the_worktree_are_accepted() {
    let f = fixture();
    let paths = f.paths();
    let abs = f.root.join("folder/file.md");
    assert_eq!(inside(&paths, abs.to_str().unwrap()), "folder/file.md");
    assert_eq!(inside(&paths, f.root.to_str().unwrap()), ".");
    let p = paths.resolve(f.root.to_str().unwrap()).unwrap();
    assert!(p.is_dir() && p.exists());
    assert_eq!(p.relative(), Some(Path::new("")));
}

#[test]
fn a_sibling_sharing_the_root_prefix_is_outside() {
    let f = fixture();
    fs::create_dir_all(f.base.join("root-evil")).unwrap();
    let paths = f.paths();
    let p = paths.resolve(f.base.join("root-evil/x").to_str().unwrap()).unwrap();
    assert!(!p.is_inside());
    let p = paths.resolve("../root-evil/x").unwrap();
    assert!(!p.is_inside());
    assert_eq!(p.external_request().unwrap().patterns, [format!("{}/root-evil/*", f.base.display())]);
}

#[test]
fn outside_paths_ask_for_their_directory_like_opencode() {
    let f = fixture();
    let paths = f.paths();
    let file = paths.resolve("../outside/secret.txt").unwrap();
    let req = file.external_request().unwrap();
    let dir = format!("{}/outside", f.base.display());
    assert_eq!(req.patterns, [format!("{dir}/*")]);
    assert_eq!(req.always, req.patterns);
    assert_eq!(req.metadata["parentDir"], json!(dir));
    assert_eq!(req.metadata["filepath"], json!(format!("{dir}/secret.txt")));
    assert_eq!(file.pattern(), format!("{dir}/secret.txt"));
    let directory = paths.resolve("../outside/dir").unwrap();
    assert_eq!(directory.external_request().unwrap().patterns, [format!("{dir}/dir/*")]);
    let fs_root = paths.resolve("/").unwrap();
    assert_eq!(fs_root.external_request().unwrap().patterns, ["/*"]);
    let requests = file.requests("read");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].permission, "read");
    assert_eq!(paths.resolve("folder/file.md").unwrap().requests("edit")[0].patterns, ["folder/file.md"]);
}

#[test]
fn reads_under_an_allowed_directory_skip_external_directory_but_writes_do_not() {
    let f = fixture();
    let paths = f.paths().with_read_allowed(&f.base.join("outside"));
    assert!(paths.resolve("../outside/secret.txt").unwrap().external_request().is_none());
    assert!(paths.resolve_for_write("../outside/secret.txt").unwrap().external_request().is_some());
    assert!(paths.resolve("../escape.txt").unwrap().external_request().is_some());
}

#[test]
fn relative_paths_start_at_the_working_directory() {
    let f = fixture();
    let paths = Confinement::new(&f.root, &f.root.join("folder"));
    let p = paths.resolve("file.md").unwrap();
    assert_eq!(p.pattern(), "folder/file.md");
    assert_eq!(p.display(), "file.md");
    let up = paths.resolve("../file.md").unwrap();
    assert!(up.is_inside());
    assert_eq!(up.display(), f.root.join("file.md").display().to_string());
}

#[test]
fn file_symlink_out_of_the_root_is_outside_for_reads_and_refused_for_writes() {
    let f = fixture();
    symlink(f.base.join("outside/secret.txt"), f.root.join("leak.txt")).unwrap();
    let paths = f.paths();
    let read = paths.resolve("leak.txt").unwrap();
    assert!(!read.is_inside() && read.via_symlink() && read.exists());
    assert_eq!(read.path(), f.base.join("outside/secret.txt"));
    assert_eq!(read.external_request().unwrap().patterns, [format!("{}/outside/*", f.base.display())]);
    let err = paths.resolve_for_write("leak.txt").unwrap_err();
    assert!(matches!(err, PathError::SymlinkEscape { .. }), "{err}");
    let msg = err.to_string().replace(&f.base.display().to_string(), "BASE");
    insta::assert_snapshot!(msg, @"`leak.txt` goes through a symbolic link to `BASE/outside/secret.txt`, outside the worktree `BASE/root`. File tools never write through a link that leaves the worktree. To change that file on purpose, send its real path `BASE/outside/secret.txt` (that asks for the external_directory permission).");
    // Named by its real path, the same file is an ordinary outside write.
    let real = paths.resolve_for_write(f.base.join("outside/secret.txt").to_str().unwrap()).unwrap();
    assert!(!real.is_inside() && real.external_request().is_some());
}

#[test]
fn directory_symlink_out_of_the_root_is_refused_for_writes_even_for_new_files() {
    let f = fixture();
    symlink(f.base.join("outside"), f.root.join("linked")).unwrap();
    let paths = f.paths();
    let read = paths.resolve("linked/secret.txt").unwrap();
    assert!(!read.is_inside());
    assert!(paths.resolve("linked").unwrap().is_dir());
    for input in ["linked/secret.txt", "linked/new.txt", "linked/deep/er/new.txt", "folder/../linked/x"] {
        let err = paths.resolve_for_write(input).unwrap_err();
        assert!(matches!(err, PathError::SymlinkEscape { .. }), "{input}: {err}");
    }
    assert!(!f.base.join("outside/deep").exists());
}

#[test]
fn dangling_symlinks_resolve_to_their_target() {
    let f = fixture();
    symlink(f.base.join("outside/not-yet.txt"), f.root.join("dangling-out")).unwrap();
    symlink("folder/created.txt", f.root.join("dangling-in")).unwrap();
    let paths = f.paths();
    let out = paths.resolve("dangling-out").unwrap();
    assert!(!out.exists() && !out.is_inside());
    assert!(matches!(paths.resolve_for_write("dangling-out"), Err(PathError::SymlinkEscape { .. })));
    let inner = paths.resolve_for_write("dangling-in").unwrap();
    assert!(inner.is_inside() && !inner.exists());
    assert_eq!(inner.pattern(), "folder/created.txt");
}

#[test]
fn links_that_stay_inside_are_followed() {
    let f = fixture();
    symlink("folder", f.root.join("alias")).unwrap();
    symlink("../file.md", f.root.join("folder/up.md")).unwrap();
    let paths = f.paths();
    assert_eq!(paths.resolve_for_write("alias/file.md").unwrap().pattern(), "folder/file.md");
    assert_eq!(paths.resolve_for_write("alias/up.md").unwrap().pattern(), "file.md");
}

#[test]
fn dot_dot_after_a_link_follows_the_link_like_the_kernel() {
    let f = fixture();
    symlink(f.base.join("outside/dir"), f.root.join("jump")).unwrap();
    let paths = f.paths();
    // Lexically `jump/../escape.txt` is `escape.txt` inside the root; really it is outside/escape.txt.
    let p = paths.resolve("jump/../secret.txt").unwrap();
    assert_eq!(p.path(), f.base.join("outside/secret.txt"));
    assert!(!p.is_inside());
    assert!(matches!(paths.resolve_for_write("jump/../secret.txt"), Err(PathError::SymlinkEscape { .. })));
}

#[test]
fn symlink_loops_are_reported() {
    let f = fixture();
    symlink("b", f.root.join("a-link")).unwrap();
    symlink("a-link", f.root.join("b")).unwrap();
    symlink("self", f.root.join("self")).unwrap();
    let paths = f.paths();
    for input in ["a-link", "self/x"] {
        assert!(matches!(paths.resolve(input), Err(PathError::SymlinkLoop { .. })), "{input}");
    }
}

#[test]
fn a_root_given_through_a_link_is_canonicalised() {
    let f = fixture();
    symlink(&f.root, f.base.join("root-alias")).unwrap();
    let paths = Confinement::new(&f.base.join("root-alias"), &f.base.join("root-alias"));
    assert_eq!(paths.root(), f.root);
    let via_alias = f.base.join("root-alias/folder/file.md");
    assert_eq!(inside(&paths, via_alias.to_str().unwrap()), "folder/file.md");
}

#[test]
fn write_atomic_creates_parents_and_keeps_the_mode() {
    let f = fixture();
    let paths = f.paths();
    let target = paths.resolve_for_write("new/dir/file.txt").unwrap();
    target.write_atomic(b"hello").unwrap();
    assert_eq!(fs::read_to_string(f.root.join("new/dir/file.txt")).unwrap(), "hello");
    let script = f.root.join("run.sh");
    fs::write(&script, "old").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o751)).unwrap();
    paths.resolve_for_write("run.sh").unwrap().write_atomic(b"new").unwrap();
    assert_eq!(fs::read_to_string(&script).unwrap(), "new");
    assert_eq!(fs::metadata(&script).unwrap().permissions().mode() & 0o7777, 0o751);
    let leftovers: Vec<_> = fs::read_dir(&f.root)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn write_atomic_writes_through_an_inside_link_to_its_target() {
    let f = fixture();
    symlink("folder/file.md", f.root.join("short.md")).unwrap();
    let target = f.paths().resolve_for_write("short.md").unwrap();
    target.write_atomic(b"through").unwrap();
    assert_eq!(fs::read_to_string(f.root.join("folder/file.md")).unwrap(), "through");
    assert!(fs::symlink_metadata(f.root.join("short.md")).unwrap().file_type().is_symlink());
}

#[test]
fn a_directory_swapped_for_a_link_after_the_check_stops_the_write() {
    let f = fixture();
    fs::create_dir(f.root.join("sub")).unwrap();
    let target = f.paths().resolve_for_write("sub/planted.txt").unwrap();
    assert!(target.is_inside());
    fs::remove_dir(f.root.join("sub")).unwrap();
    symlink(f.base.join("outside"), f.root.join("sub")).unwrap();
    let err = target.write_atomic(b"pwned").unwrap_err();
    assert!(matches!(err, PathError::Changed { .. }), "{err}");
    assert!(!f.base.join("outside/planted.txt").exists());
}

#[test]
fn a_missing_parent_replaced_by_a_link_after_the_check_stops_the_write() {
    let f = fixture();
    let target = f.paths().resolve_for_write("later/deeper/x.txt").unwrap();
    symlink(f.base.join("outside"), f.root.join("later")).unwrap();
    assert!(matches!(target.write_atomic(b"x"), Err(PathError::Changed { .. })));
    assert!(!f.base.join("outside/deeper").exists());
}

#[test]
fn a_target_swapped_for_a_link_after_the_check_is_replaced_not_followed() {
    let f = fixture();
    let target = f.paths().resolve_for_write("victim.txt").unwrap();
    symlink(f.base.join("escape.txt"), f.root.join("victim.txt")).unwrap();
    target.write_atomic(b"inside").unwrap();
    assert_eq!(fs::read_to_string(f.base.join("escape.txt")).unwrap(), "outside");
    let meta = fs::symlink_metadata(f.root.join("victim.txt")).unwrap();
    assert!(meta.file_type().is_file());
}

#[test]
fn remove_file_removes_a_link_not_its_target() {
    let f = fixture();
    let target = f.paths().resolve_for_write("gone.txt").unwrap();
    symlink(f.base.join("escape.txt"), f.root.join("gone.txt")).unwrap();
    target.remove_file().unwrap();
    assert!(f.base.join("escape.txt").exists());
    assert!(fs::symlink_metadata(f.root.join("gone.txt")).is_err());
}

#[test]
fn write_atomic_refuses_a_directory() {
    let f = fixture();
    let target = f.paths().resolve_for_write("folder").unwrap();
    assert!(target.write_atomic(b"x").is_err());
    assert!(f.root.join("folder/file.md").exists());
}

#[test]
fn outside_writes_walk_from_the_file_system_root() {
    let f = fixture();
    let target = f.paths().resolve_for_write("../outside/made/by-tool.txt").unwrap();
    assert!(!target.is_inside());
    target.write_atomic(b"ok").unwrap();
    assert_eq!(fs::read_to_string(f.base.join("outside/made/by-tool.txt")).unwrap(), "ok");
}

#[tokio::test]
async fn confirm_refuses_a_path_whose_link_changed_since_the_permission_check() {
    let f = fixture();
    symlink("folder", f.root.join("moving")).unwrap();
    let paths = f.paths();
    let permitted = Permitted::default();
    permitted.remember(&paths.resolve("moving/file.md").unwrap());
    fs::remove_file(f.root.join("moving")).unwrap();
    symlink(f.base.join("outside"), f.root.join("moving")).unwrap();
    let ctx = ToolContext::standalone(&f.root, f.base.join("data"));
    let now = paths.resolve("moving/file.md").unwrap();
    let err = confirm(&ctx, &permitted, now, "read").await.unwrap_err();
    assert!(err.to_string().contains("a symbolic link changed"), "{err}");
    let same = paths.resolve("folder/file.md").unwrap();
    let permitted = Permitted::default();
    permitted.remember(&same);
    assert!(confirm(&ctx, &permitted, same.clone(), "read").await.is_ok());
}

#[tokio::test]
async fn confirm_without_a_permission_check_asks_through_the_context() {
    use std::sync::{Arc, Mutex};
    use toolshed_core::context::CallInfo;
    use toolshed_core::permission::Asker;
    use toolshed_core::tool::BoxFuture;

    #[derive(Default)]
    struct Record(Mutex<Vec<String>>);
    impl Asker for Record {
        fn ask<'a>(&'a self, _c: &'a CallInfo, r: PermissionRequest) -> BoxFuture<'a, Result<(), ToolError>> {
            self.0.lock().unwrap().push(format!("{} {}", r.permission, r.patterns.join(",")));
            Box::pin(async { Ok(()) })
        }
    }
    let f = fixture();
    let record = Arc::new(Record::default());
    let ctx = ToolContext::standalone(&f.root, f.base.join("data")).with_asker(record.clone());
    let now = Confinement::from_context(&ctx).resolve("../escape.txt").unwrap();
    confirm(&ctx, &Permitted::default(), now, "read").await.unwrap();
    let base = f.base.display();
    assert_eq!(*record.0.lock().unwrap(), [format!("external_directory {base}/*"), format!("read {base}/escape.txt")]);
}

#[test]
fn spill_directory_of_the_context_is_readable_without_asking() {
    let f = fixture();
    let ctx = ToolContext::standalone(&f.root, f.base.join("data"));
    fs::create_dir_all(ctx.environment().spill_dir()).unwrap();
    let spill = ctx.environment().spill_dir().join("read-123.txt");
    let p = resolve(&ctx, spill.to_str().unwrap()).unwrap();
    assert!(!p.is_inside() && p.external_request().is_none());
    assert!(resolve_for_write(&ctx, spill.to_str().unwrap()).unwrap().external_request().is_some());
}

#[test]
fn pattern_for_matches_resolved_patterns() {
    let f = fixture();
    assert_eq!(pattern_for(&f.root, &f.root), ".");
    assert_eq!(pattern_for(&f.root, &f.root.join("a/b.rs")), "a/b.rs");
    assert_eq!(pattern_for(&f.root, Path::new("/etc/passwd")), "/etc/passwd");
}

/// A resolved path is read without following links: a directory swapped for a link after the
/// check (to a file outside the worktree) makes the read fail; the file itself reads as ever.
#[cfg(unix)]
#[test]
fn a_read_never_goes_through_a_directory_swapped_for_a_link() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(base.join("w/dir")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(base.join("w/dir/v.txt"), "inside\n").unwrap();
    std::fs::write(base.join("outside/v.txt"), "SECRET\n").unwrap();
    let path = base.join("w/dir/v.txt");
    assert_eq!(crate::read_regular(&path).unwrap().unwrap(), b"inside\n");
    std::fs::rename(base.join("w/dir"), base.join("w/was")).unwrap();
    std::os::unix::fs::symlink(base.join("outside"), base.join("w/dir")).unwrap();
    assert!(crate::read_regular(&path).is_err(), "read through the swapped link");
    assert!(crate::open_regular(&path).is_err());
    // A link as the last name is not followed either.
    std::os::unix::fs::symlink(base.join("outside/v.txt"), base.join("w/was/link.txt")).unwrap();
    assert!(crate::read_regular(&base.join("w/was/link.txt")).is_err());
}
