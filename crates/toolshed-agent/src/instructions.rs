//! Project instructions for the agent's system prompt: the user's
//! `~/.config/toolshed/AGENTS.md`, then `AGENTS.md` (or `CLAUDE.md` where a directory has no
//! `AGENTS.md`) in the worktree root and each directory down to the working directory.
//!
//! Files come in that order, most general first, so the one nearest the working directory is
//! read last; [`Instructions::render`] tells the model that the nearer file wins a conflict.
//!
//! ```
//! let tmp = tempfile::tempdir().unwrap();
//! std::fs::write(tmp.path().join("AGENTS.md"), "Run `cargo test` before committing.").unwrap();
//! let found = toolshed_agent::instructions::load_from(tmp.path(), tmp.path(), None);
//! assert_eq!(found.files.len(), 1);
//! assert!(found.render().contains("Run `cargo test` before committing."));
//! ```

use std::path::{Path, PathBuf};

/// The file names looked for in each directory, in order of preference.
pub const FILE_NAMES: &[&str] = &["AGENTS.md", "CLAUDE.md"];
/// The most of one file that is included; a longer file is cut with a note.
pub const MAX_FILE_BYTES: usize = 64 * 1024;

/// Where an instructions file comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The user's own file, for every project.
    User,
    /// A file in the worktree.
    Project,
}

impl Scope {
    /// `user` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// One instructions file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstructionFile {
    /// The file.
    pub path: PathBuf,
    /// Whose it is.
    pub scope: Scope,
    /// Its text (at most [`MAX_FILE_BYTES`], trimmed).
    pub text: String,
    /// Whether the text was cut.
    pub truncated: bool,
}

/// The instructions that apply to a working directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instructions {
    /// The files, most general first.
    pub files: Vec<InstructionFile>,
    /// Files that exist but could not be read, with the reason.
    pub problems: Vec<(PathBuf, String)>,
}

/// The instructions for `cwd` in the worktree `root`, with the user's file from
/// `~/.config/toolshed/AGENTS.md`.
pub fn load(root: &Path, cwd: &Path) -> Instructions {
    load_from(root, cwd, toolshed_core::paths::config_dir().as_deref())
}

/// The instructions for `cwd` in the worktree `root`, with the user's file from
/// `user_config_dir/AGENTS.md` (or `CLAUDE.md`). A `cwd` outside `root` counts as `root`.
pub fn load_from(root: &Path, cwd: &Path, user_config_dir: Option<&Path>) -> Instructions {
    let mut out = Instructions::default();
    if let Some(dir) = user_config_dir {
        read_dir_file(dir, Scope::User, &mut out);
    }
    let cwd = if cwd.starts_with(root) { cwd } else { root };
    let mut chain: Vec<&Path> = cwd.ancestors().take_while(|d| d.starts_with(root)).collect();
    chain.reverse();
    for dir in chain {
        read_dir_file(dir, Scope::Project, &mut out);
    }
    out
}

fn read_dir_file(dir: &Path, scope: Scope, out: &mut Instructions) {
    let Some(path) = FILE_NAMES.iter().map(|name| dir.join(name)).find(|p| p.exists()) else { return };
    match std::fs::read(&path) {
        Ok(bytes) => {
            let truncated = bytes.len() > MAX_FILE_BYTES;
            let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_FILE_BYTES)]).into_owned();
            if truncated {
                // A multi-byte character cut in half decodes to a replacement character.
                text = text.trim_end_matches(char::REPLACEMENT_CHARACTER).to_string();
            }
            let text = text.trim().to_string();
            if !text.is_empty() {
                out.files.push(InstructionFile { path, scope, text, truncated });
            }
        }
        Err(e) => out.problems.push((path, e.to_string())),
    }
}

impl Instructions {
    /// Whether there is nothing to add to the prompt.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The instructions as a section of a system prompt (empty when there are none): each file
    /// in a tag naming its path, after one line saying how they combine.
    pub fn render(&self) -> String {
        if self.files.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "Instructions from the user and the project follow, most general first. Follow them; where two conflict, the later (nearer to the working directory) wins, and the user's explicit requests in the conversation win over all of them.\n",
        );
        for file in &self.files {
            out.push_str(&format!(
                "\n<instructions scope=\"{}\" path=\"{}\">\n{}\n",
                file.scope.as_str(),
                file.path.display(),
                file.text
            ));
            if file.truncated {
                out.push_str(&format!(
                    "[This file is longer than {} KiB; the rest is left out. Read {} for all of it.]\n",
                    MAX_FILE_BYTES / 1024,
                    file.path.display()
                ));
            }
            out.push_str("</instructions>\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn collects_user_then_root_down_to_cwd_preferring_agents_md() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let user = tmp.path().join("config");
        write(&user.join("AGENTS.md"), "User rule.");
        write(&root.join("AGENTS.md"), "Root rule.");
        write(&root.join("CLAUDE.md"), "Ignored: AGENTS.md wins.");
        write(&root.join("crates/CLAUDE.md"), "Crates rule.");
        write(&root.join("crates/web/AGENTS.md"), "\n  Web rule.  \n");
        write(&root.join("other/AGENTS.md"), "Not on the path.");
        let found = load_from(&root, &root.join("crates/web/src"), Some(&user));
        let got: Vec<(&str, PathBuf)> = found
            .files
            .iter()
            .map(|f| (f.text.as_str(), f.path.strip_prefix(tmp.path()).unwrap().to_path_buf()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("User rule.", PathBuf::from("config/AGENTS.md")),
                ("Root rule.", PathBuf::from("repo/AGENTS.md")),
                ("Crates rule.", PathBuf::from("repo/crates/CLAUDE.md")),
                ("Web rule.", PathBuf::from("repo/crates/web/AGENTS.md")),
            ]
        );
        assert_eq!(found.files[0].scope, Scope::User);
        assert_eq!(found.files[1].scope, Scope::Project);
    }

    #[test]
    fn render_tags_each_file_with_scope_and_path() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let user = tmp.path().join("config");
        write(&user.join("AGENTS.md"), "Answer briefly.");
        write(&root.join("AGENTS.md"), "Use rustfmt.");
        let rendered = load_from(&root, &root, Some(&user)).render().replace(&tmp.path().display().to_string(), "$TMP");
        insta::assert_snapshot!(rendered, @r#"
        Instructions from the user and the project follow, most general first. Follow them; where two conflict, the later (nearer to the working directory) wins, and the user's explicit requests in the conversation win over all of them.

        <instructions scope="user" path="$TMP/config/AGENTS.md">
        Answer briefly.
        </instructions>

        <instructions scope="project" path="$TMP/repo/AGENTS.md">
        Use rustfmt.
        </instructions>
        "#);
    }

    #[test]
    fn empty_files_are_skipped_and_long_ones_cut_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        write(&tmp.path().join("AGENTS.md"), &"é".repeat(MAX_FILE_BYTES));
        write(&tmp.path().join("sub/AGENTS.md"), "  \n");
        let found = load_from(tmp.path(), &tmp.path().join("sub"), None);
        assert_eq!(found.files.len(), 1);
        assert!(found.files[0].truncated);
        assert_eq!(found.files[0].text.chars().count(), MAX_FILE_BYTES / 2);
        assert!(found.render().contains("longer than 64 KiB"));
        assert!(load_from(tmp.path(), Path::new("/elsewhere"), None).files.len() == 1);
    }

    #[test]
    fn unreadable_file_is_a_problem_not_a_failure() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("AGENTS.md")).unwrap();
        let found = load_from(tmp.path(), tmp.path(), None);
        assert!(found.files.is_empty());
        assert_eq!(found.problems.len(), 1);
    }
}
