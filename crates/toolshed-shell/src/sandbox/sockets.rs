//! The Unix sockets of servers outside the sandbox, hidden from sandboxed processes.
//!
//! Landlock does not guard `connect()` on a socket file, so a sandboxed command could ask a
//! server outside to run anything for it, outside the sandbox: `tmux -S /tmp/tmux-1000/default
//! new-window CMD`, `systemd-run --user` over the session bus, `docker run -v /:/host`, a key
//! typed into the person's terminal through the X server. The servers are not recognised by name:
//! the kernel's own list of bound Unix sockets (`/proc/net/unix`, of the network namespace
//! commands share) gives every socket there is, and each one outside the worktree is covered in
//! the command's mount namespace (`/dev/null` bound onto it: `connect` is refused), but for
//! services that run nothing for anyone ([`KEPT`]: logging, name lookups) and what
//! `[sandbox] allow_sockets` names. What a server outside binds after the command started is not
//! covered, nor a socket in the worktree (the project's own servers).

use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Sockets of services that take no orders, left reachable: the journal and syslog, the name
/// service cache, systemd's resolver and user database. An entry ending in `/` is a directory.
pub const KEPT: &[&str] = &[
    "/dev/log",
    "/run/systemd/journal/",
    "/run/nscd/socket",
    "/var/run/nscd/socket",
    "/run/systemd/resolve/io.systemd.Resolve",
    "/run/systemd/userdb/",
];

/// Most sockets covered for one process: past that, the command is refused.
pub const MAX: usize = 4096;

/// `paths` for a [`super::SandboxPolicy`], which is `Copy`: each distinct list is kept once for
/// the life of the process.
pub(crate) fn intern(paths: &[PathBuf]) -> &'static [PathBuf] {
    static SEEN: Mutex<Vec<&'static [PathBuf]>> = Mutex::new(Vec::new());
    if paths.is_empty() {
        return &[];
    }
    let mut seen = SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = seen.iter().find(|known| **known == paths) {
        return known;
    }
    let kept: &'static [PathBuf] = Box::leak(paths.to_vec().into_boxed_slice());
    seen.push(kept);
    kept
}

/// Whether `path` is one of `entries`, or lies under one that ends in `/`.
fn listed<'a>(path: &Path, entries: impl IntoIterator<Item = &'a Path>) -> bool {
    entries.into_iter().any(|entry| {
        let directory = entry.as_os_str().as_encoded_bytes().ends_with(b"/");
        path == entry || (directory && path.starts_with(entry))
    })
}

/// The pathname sockets in `table`, the text of `/proc/net/unix`, each once with its inode
/// (abstract ones, `@name`, are Landlock's to scope). A name may be relative: the one the
/// server bound in its working directory.
pub fn bound(table: &str) -> Vec<(PathBuf, u64)> {
    let mut out: Vec<(PathBuf, u64)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for line in table.lines().skip(1) {
        // `Num: RefCount Protocol Flags Type St Inode Path`: seven fields, one space, the name.
        let mut rest = line;
        let mut inode = 0;
        for field in 0..7 {
            rest = rest.trim_start_matches(' ');
            let end = rest.find(' ').unwrap_or(rest.len());
            if field == 6 {
                inode = rest[..end].parse().unwrap_or(0);
            }
            rest = &rest[end..];
        }
        let Some(name) = rest.strip_prefix(' ').filter(|n| !n.is_empty() && !n.starts_with('@')) else { continue };
        if seen.insert(name) {
            out.push((PathBuf::from(name), inode));
        }
    }
    out
}

/// A socket bound by a relative name (the name and its inode) and where it was found.
type Located = ((PathBuf, u64), Vec<PathBuf>);

/// Where the sockets bound by relative names (`inodes`) are: each in the working directory of
/// a process holding it (found by its `socket:[INODE]` descriptor; a process this one may not
/// look into is not found).
fn relative_names(names: &[(PathBuf, u64)]) -> Vec<PathBuf> {
    // Each socket is looked for once per process (review 18: with one such socket bound, every
    // command read every descriptor of every process, some 150 ms on a busy machine).
    static FOUND: Mutex<Vec<Located>> = Mutex::new(Vec::new());
    let mut found = FOUND.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    found.retain(|(key, _)| names.contains(key));
    let new: Vec<(PathBuf, u64)> = names.iter().filter(|n| !found.iter().any(|(key, _)| key == *n)).cloned().collect();
    let located = scan_for(&new);
    for name in new {
        let paths = located.iter().filter(|(key, _)| *key == name).map(|(_, p)| p.clone()).collect();
        found.push((name, paths));
    }
    found.iter().flat_map(|(_, paths)| paths.iter().cloned()).collect()
}

/// Where the sockets bound by the relative names `names` are, by a look at every process's
/// descriptors: each name with a path it may be at.
fn scan_for(names: &[(PathBuf, u64)]) -> Vec<((PathBuf, u64), PathBuf)> {
    let mut out = Vec::new();
    if names.is_empty() {
        return out;
    }
    let processes = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    for process in processes.filter(|e| e.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit())) {
        let Ok(fds) = std::fs::read_dir(process.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else { continue };
            let link = link.to_string_lossy();
            let Some(inode) = link.strip_prefix("socket:[").and_then(|l| l.strip_suffix(']')) else { continue };
            let Ok(inode) = inode.parse::<u64>() else { continue };
            for key in names.iter().filter(|(_, i)| *i == inode) {
                if let Ok(cwd) = std::fs::read_link(process.path().join("cwd")) {
                    let path = toolshed_core::paths::lexical_normalise(&cwd.join(&key.0));
                    if !out.iter().any(|(k, p)| k == key && *p == path) {
                        out.push((key.clone(), path));
                    }
                }
            }
        }
    }
    out
}

/// The sockets to cover for a process whose worktree is `root`: every bound socket that is
/// there now and is a socket, outside `root`, neither [`KEPT`] nor in `allow`.
pub(crate) fn to_cover(root: &Path, allow: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let table = std::fs::read_to_string("/proc/net/unix")
        .map_err(|e| format!("could not read the list of Unix sockets (/proc/net/unix): {e}"))?;
    let allowed =
        |path: &Path| listed(path, KEPT.iter().map(Path::new)) || listed(path, allow.iter().map(PathBuf::as_path));
    let (absolute, relative): (Vec<_>, Vec<_>) = bound(&table).into_iter().partition(|(p, _)| p.is_absolute());
    // Where each name led when this process last looked: a link on the way re-pointed since
    // (review 18) leaves the name leading elsewhere, but the socket where it was.
    static SEEN: Mutex<Vec<(PathBuf, PathBuf)>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let names: Vec<PathBuf> = absolute.into_iter().map(|(p, _)| p).chain(relative_names(&relative)).collect();
    seen.retain(|(n, _)| names.contains(n));
    let mut out: Vec<PathBuf> = Vec::new();
    for name in names {
        // The kernel's list holds the name each socket was bound with; covered is where it
        // really is (the mount would follow a link on the way anyway; `/var/run` is `/run`).
        let real = match name.canonicalize() {
            Ok(real) => {
                if let Some(known) = seen.iter_mut().find(|(n, _)| *n == name) {
                    known.1.clone_from(&real);
                } else {
                    seen.push((name.clone(), real.clone()));
                }
                real
            }
            Err(_) => match seen.iter().find(|(n, _)| *n == name) {
                Some((_, known)) => known.clone(),
                None => continue,
            },
        };
        let inside = |p: &Path| p.starts_with(root) || allowed(p);
        if inside(&name) || inside(&real) || out.contains(&real) {
            continue;
        }
        // A name that no longer leads to a socket (removed, or a file a command put in its
        // place) is not covered.
        if !std::fs::metadata(&real).is_ok_and(|m| m.file_type().is_socket()) {
            continue;
        }
        out.push(real);
    }
    if out.len() > MAX {
        return Err(format!("more than {MAX} Unix sockets of servers outside the sandbox to hide"));
    }
    Ok(out)
}

/// The block devices under `/dev` (a disk, a partition, a loop device, `zram` swap): read
/// whole, each gives every file on it, toolshed's hidden data directory included, to a root
/// command, which Landlock lets read anywhere and file permissions do not stop (review 20). Each
/// is covered like a socket. Links (`/dev/disk/by-uuid/...`) lead to these.
pub(crate) fn block_devices() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![(PathBuf::from("/dev"), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_block_device() {
                out.push(entry.path());
            } else if kind.is_dir() && depth < 4 && entry.file_name() != "shm" && entry.file_name() != "pts" {
                dirs.push((entry.path(), depth + 1));
            }
        }
    }
    out.truncate(MAX);
    out
}

/// The note for the model when a command or its output (`text`) names a socket the sandbox hid
/// from it: what happened and what the person can do.
pub(crate) fn note(text: &str, covered: &[PathBuf]) -> Option<String> {
    let named: Vec<String> = covered
        .iter()
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            text.contains(&*p.to_string_lossy()) || (name.len() >= 4 && text.contains(&format!("/{name}")))
        })
        .map(|p| p.display().to_string())
        .take(5)
        .collect();
    if named.is_empty() {
        return None;
    }
    Some(format!(
        "(The sandbox hides the sockets of servers outside it ({}): such a server would run what it is asked outside the sandbox. Do not work around this. If the command needs that server, tell the user: they can let sandboxed commands reach it with `[sandbox] allow_sockets = [\"{}\"]` in toolshed.toml.)",
        named.join(", "),
        named[0]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_gives_pathname_sockets_once_and_skips_abstract_ones() {
        let table = "Num       RefCount Protocol Flags    Type St Inode Path\n\
                     0000000000000000: 00000002 00000000 00010000 0001 01 21337 /tmp/tmux-1000/default\n\
                     0000000000000000: 00000002 00000000 00010000 0001 01  2133 @/tmp/.X11-unix/X0\n\
                     0000000000000000: 00000003 00000000 00000000 0001 03 21339 /tmp/tmux-1000/default\n\
                     0000000000000000: 00000002 00000000 00000000 0002 01 21340 /run/a socket with spaces\n\
                     0000000000000000: 00000002 00000000 00000000 0001 03 21341\n";
        let table = format!("{table}0000000000000000: 00000002 00000000 00010000 0001 01 21342 run/rel.sock\n");
        assert_eq!(
            bound(&table),
            vec![
                (PathBuf::from("/tmp/tmux-1000/default"), 21337),
                (PathBuf::from("/run/a socket with spaces"), 21340),
                (PathBuf::from("run/rel.sock"), 21342)
            ]
        );
    }

    #[test]
    fn allowed_entries_are_exact_paths_or_directories_ending_in_a_slash() {
        let allow = [PathBuf::from("/run/docker.sock"), PathBuf::from("/run/user/1000/podman/")];
        let entries = || allow.iter().map(PathBuf::as_path);
        assert!(listed(Path::new("/run/docker.sock"), entries()));
        assert!(listed(Path::new("/run/user/1000/podman/podman.sock"), entries()));
        assert!(!listed(Path::new("/run/docker.sock.evil"), entries()));
        assert!(!listed(Path::new("/run/user/1000/bus"), entries()));
        assert!(listed(Path::new("/run/systemd/journal/stdout"), KEPT.iter().map(Path::new)));
        assert!(!listed(Path::new("/run/systemd/private"), KEPT.iter().map(Path::new)));
        assert!(std::ptr::eq(intern(&allow), intern(&allow.clone())));
    }

    #[test]
    fn a_listening_socket_outside_the_worktree_is_covered_and_one_inside_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, outside) = (tmp.path().join("w"), tmp.path().join("srv"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let _a = std::os::unix::net::UnixListener::bind(outside.join("s.sock")).unwrap();
        let _b = std::os::unix::net::UnixListener::bind(root.join("own.sock")).unwrap();
        // One bound by a relative name, in a server's working directory (a child's, here).
        let server = std::process::Command::new("python3")
            .args(["-c", "import socket,time; s=socket.socket(socket.AF_UNIX); s.bind('rel.sock'); s.listen(); print('up', flush=True); time.sleep(30)"])
            .current_dir(&outside)
            .stdout(std::process::Stdio::piped())
            .spawn();
        let mut server = server.ok();
        if let Some(child) = &mut server {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        }
        let covered = to_cover(&root, &[]).unwrap();
        assert!(covered.contains(&outside.join("s.sock")), "{covered:?}");
        if let Some(mut child) = server {
            assert!(covered.contains(&outside.join("rel.sock")), "{covered:?}");
            let _ = child.kill();
            let _ = child.wait();
        }
        assert!(!covered.contains(&root.join("own.sock")), "{covered:?}");
        assert!(!to_cover(&root, &[outside.join("s.sock")]).unwrap().contains(&outside.join("s.sock")));
        let note = note("error connecting to /x/s.sock (Connection refused)", &covered).unwrap();
        assert!(note.contains("allow_sockets") && note.contains("s.sock"), "{note}");
        assert!(super::note("all fine", &covered).is_none());
    }
}
