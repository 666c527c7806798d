//! Hooks later capabilities fill without the core reaching upward: after a tool writes
//! files (LSP diagnostics listen here).

use std::path::PathBuf;
use std::sync::Arc;

use crate::context::ToolContext;
use crate::tool::BoxFuture;

/// Hears about files a tool changed, and may add a note to the tool's result.
pub trait PostWriteHook: Send + Sync {
    /// Called after a tool wrote `files` (absolute paths). A returned text is appended to the
    /// tool's result, e.g. the errors a language server now reports for those files.
    fn after_write<'a>(&'a self, ctx: &'a ToolContext, files: &'a [PathBuf]) -> BoxFuture<'a, Option<String>>;
}

/// The hooks of one executor.
#[derive(Clone, Default)]
pub struct Hooks {
    post_write: Vec<Arc<dyn PostWriteHook>>,
}

impl Hooks {
    /// Adds a post-write hook.
    pub fn add_post_write(&mut self, hook: Arc<dyn PostWriteHook>) {
        self.post_write.push(hook);
    }

    /// Runs every post-write hook in order and joins their notes with blank lines.
    pub async fn run_post_write(&self, ctx: &ToolContext, files: &[PathBuf]) -> Option<String> {
        if files.is_empty() {
            return None;
        }
        let mut notes = Vec::new();
        for hook in &self.post_write {
            if let Some(note) = hook.after_write(ctx, files).await {
                notes.push(note);
            }
        }
        (!notes.is_empty()).then(|| notes.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count;
    impl PostWriteHook for Count {
        fn after_write<'a>(&'a self, _ctx: &'a ToolContext, files: &'a [PathBuf]) -> BoxFuture<'a, Option<String>> {
            Box::pin(async move { Some(format!("{} file(s) changed", files.len())) })
        }
    }

    #[tokio::test]
    async fn post_write_hooks_add_notes_only_for_real_changes() {
        let mut hooks = Hooks::default();
        hooks.add_post_write(Arc::new(Count));
        hooks.add_post_write(Arc::new(Count));
        let ctx = ToolContext::standalone("/tmp", "/tmp");
        assert_eq!(hooks.run_post_write(&ctx, &[]).await, None);
        let note = hooks.run_post_write(&ctx, &[PathBuf::from("/tmp/a")]).await;
        assert_eq!(note.as_deref(), Some("1 file(s) changed\n\n1 file(s) changed"));
    }
}
