//! [`Diagnostics`]: the post-write hook that hands each changed file to its language server and
//! appends the file's errors (not warnings) to the writing tool's result.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolshed_core::ToolContext;
use toolshed_core::hooks::PostWriteHook;
use toolshed_core::tool::BoxFuture;

use super::client::{Server, Synced, WaitError, seconds};
use super::format::{Files, is_error};
use super::{Lookup, LspService};

/// Errors listed per file; the rest are counted.
pub const MAX_ERRORS_PER_FILE: usize = 20;

/// Appends the errors a language server reports for each written file to the tool's result,
/// and records per file `{server, errors}` (or `{unavailable}`) under the `diagnostics`
/// metadata key. A file of a language with no server adds nothing; a missing, slow or crashed
/// server adds a line saying diagnostics were unavailable, and never fails the write.
pub struct Diagnostics {
    service: Arc<LspService>,
}

impl Diagnostics {
    /// A hook over `service`'s servers.
    pub fn new(service: Arc<LspService>) -> Self {
        Diagnostics { service }
    }
}

impl PostWriteHook for Diagnostics {
    fn after_write<'a>(&'a self, ctx: &'a ToolContext, files: &'a [PathBuf]) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            tokio::select! {
                note = self.report(ctx, files) => note,
                () = ctx.cancellation().cancelled() => None,
            }
        })
    }
}

/// A file handed to its server, waiting for its diagnostics.
struct Pending {
    path: PathBuf,
    server: Arc<Server>,
    synced: Synced,
    deadline: tokio::time::Instant,
}

impl Diagnostics {
    async fn report(&self, ctx: &ToolContext, files: &[PathBuf]) -> Option<String> {
        let mut notes = Vec::new();
        let mut unavailable = Unavailable::default();
        let mut metadata = Map::new();
        let shown = Files::new(ctx.root());
        let mut pending = Vec::new();
        let mut seen = std::collections::HashSet::new();
        // First hand every file over, so a server checks them all while we wait for the first.
        for path in files.iter().filter(|p| seen.insert((*p).clone())) {
            let display = shown.display(path);
            if !path.is_file() {
                self.service.forget(path).await;
                continue;
            }
            match self.service.server_for(path, ctx.root()).await {
                Lookup::NoServer(_) => {}
                Lookup::Unavailable { server, reason } => {
                    unavailable.add(format!("{server} {reason}"), &display);
                    metadata.insert(display, json!({"server": server, "unavailable": reason}));
                }
                Lookup::Ready { server, deadline, restarted } => {
                    if let Some(restarted) = restarted {
                        notes.push(format!("({restarted}.)"));
                    }
                    match server.sync(path).await {
                        Ok(synced) => pending.push(Pending { path: path.clone(), server, synced, deadline }),
                        Err(why) => {
                            unavailable.add(why.clone(), &display);
                            metadata.insert(display, json!({"server": server.name(), "unavailable": why}));
                        }
                    }
                }
            }
        }
        for item in pending {
            let mut files = Files::new(ctx.root()).with_text(&item.path, &item.synced.text).reading_as(ctx);
            let display = files.display(&item.path);
            let name = item.server.name().to_string();
            match item.server.diagnostics(&item.synced, item.deadline).await {
                Ok(all) => {
                    let errors: Vec<_> = all.iter().filter(|d| is_error(d)).collect();
                    metadata.insert(display.clone(), json!({"server": name, "errors": errors.len()}));
                    if errors.is_empty() {
                        continue;
                    }
                    let mut note = format!(
                        "{name} reports {} in `{display}` after this change; fix {}:",
                        super::tool::count(errors.len(), "error"),
                        if errors.len() == 1 { "it" } else { "them" }
                    );
                    for d in errors.iter().take(MAX_ERRORS_PER_FILE) {
                        note.push('\n');
                        note.push_str(&files.diagnostic(&item.path, d));
                    }
                    if errors.len() > MAX_ERRORS_PER_FILE {
                        note.push_str(&format!(
                            "\n… and {} more (the lsp tool's diagnostics operation lists them all).",
                            errors.len() - MAX_ERRORS_PER_FILE
                        ));
                    }
                    notes.push(note);
                }
                Err(WaitError::Timeout) => {
                    let why = format!("{name} did not report within {}", seconds(item.server.spec().timeout));
                    unavailable.add(why.clone(), &display);
                    metadata.insert(display, json!({"server": name, "unavailable": why}));
                }
                Err(WaitError::Exited(death)) => {
                    let why = format!("{name} {death}");
                    unavailable.add(why.clone(), &display);
                    metadata.insert(display, json!({"server": name, "unavailable": why}));
                }
            }
        }
        notes.extend(unavailable.notes());
        if !metadata.is_empty() {
            ctx.set_metadata("diagnostics", Value::Object(metadata));
        }
        (!notes.is_empty()).then(|| notes.join("\n\n"))
    }
}

/// Files whose diagnostics were unavailable, grouped by the reason, so a patch of 200 files
/// whose server cannot start gets one line, not 200.
#[derive(Default)]
struct Unavailable {
    groups: Vec<(String, Vec<String>)>,
}

impl Unavailable {
    /// How many files a note names before it counts the rest.
    const NAMED: usize = 3;

    fn add(&mut self, why: String, file: &str) {
        match self.groups.iter_mut().find(|(w, _)| *w == why) {
            Some((_, files)) => files.push(file.to_string()),
            None => self.groups.push((why, vec![file.to_string()])),
        }
    }

    fn notes(self) -> impl Iterator<Item = String> {
        self.groups.into_iter().map(|(why, files)| {
            let named: Vec<String> = files.iter().take(Self::NAMED).map(|f| format!("`{f}`")).collect();
            let list = match (files.len(), named.split_last()) {
                (1, _) | (_, None) => named.join(""),
                (n, Some((last, rest))) if n <= Self::NAMED => format!("{} and {last}", rest.join(", ")),
                (n, _) => format!("{} and {} more files", named.join(", "), n - Self::NAMED),
            };
            format!("Diagnostics unavailable for {list}: {why}.")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Unavailable;

    #[test]
    fn unavailable_files_are_grouped_by_reason() {
        let mut u = Unavailable::default();
        for i in 0..200 {
            u.add("rust-analyzer cannot start".into(), &format!("src/m{i}.rs"));
        }
        u.add("pyright did not report within 20 s".into(), "a.py");
        u.add("pyright did not report within 20 s".into(), "b.py");
        let notes: Vec<String> = u.notes().collect();
        assert_eq!(
            notes,
            [
                "Diagnostics unavailable for `src/m0.rs`, `src/m1.rs`, `src/m2.rs` and 197 more files: rust-analyzer cannot start.",
                "Diagnostics unavailable for `a.py` and `b.py`: pyright did not report within 20 s.",
            ]
        );
    }
}
