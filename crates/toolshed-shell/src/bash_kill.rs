//! `bash_kill`: stop a background session and everything it started.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{ToolFlags, ToolSpec, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};

use super::Shell;
use super::bash_output::report;
use super::process::KILL_GRACE;

/// Arguments of `bash_kill`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashKillArgs {
    /// The session id that bash returned.
    pub session_id: u32,
}

/// The `bash_kill` tool.
pub struct BashKill {
    shell: Shell,
}

impl BashKill {
    /// `bash_kill` over `shell`'s sessions.
    pub fn new(shell: Shell) -> Self {
        BashKill { shell }
    }
}

impl TypedTool for BashKill {
    type Args = BashKillArgs;

    fn name(&self) -> &str {
        "bash_kill"
    }

    fn description(&self) -> String {
        "Stops a background shell session (started by bash with yield_ms) and every process it started: SIGTERM, then SIGKILL after a second. Returns the output printed since the last read and how it ended, and closes the session.".to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::MUTATING
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec.with_permission("bash")
    }

    fn permissions(
        &self,
        _spec: &ToolSpec,
        _args: &BashKillArgs,
        _ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(Vec::new())
    }

    fn time_limit(&self, _args: &BashKillArgs) -> Option<Duration> {
        Some(KILL_GRACE + Duration::from_secs(10))
    }

    async fn run(&self, args: BashKillArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let session = self.shell.state.sessions.get(args.session_id)?;
        let was_running = !session.run.is_done();
        session.run.terminate().await;
        let note = if was_running {
            format!("(Session {} was stopped by bash_kill.)", session.id)
        } else {
            format!("(Session {} had already exited.)", session.id)
        };
        let mut notes = vec![note];
        notes.extend(session.settle_protected(&ctx).await);
        Ok(report(&self.shell, &session, &ctx, &notes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SandboxPolicy;

    #[tokio::test]
    async fn unknown_session_lists_what_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ToolContext::standalone(tmp.path(), tmp.path());
        let kill = BashKill::new(Shell::new(SandboxPolicy::default()));
        let err = kill.run(BashKillArgs { session_id: 7 }, ctx).await.unwrap_err();
        insta::assert_snapshot!(err.to_string(), @"No shell session 7: it never existed, or it ended and its final output was already returned. There are no sessions.");
    }
}
