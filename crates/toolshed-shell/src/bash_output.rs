//! `bash_output`: read new output of a background session, optionally after writing to its
//! standard input (or terminal), or stop it and everything it started.

use std::sync::atomic::Ordering;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use toolshed_core::permission::PermissionRequest;
use toolshed_core::tool::{Alias, ToolFlags, ToolSpec, TypedTool};
use toolshed_core::{ToolContext, ToolError, ToolOutput};

use super::bash::{MAX_TIMEOUT_MS, permission_patterns};
use super::process::KILL_GRACE;
use super::session::ProcessSession;
use super::{MEMORY_BUDGET, Shell, compose, exit_line, exit_metadata};

/// Default `wait_ms`.
pub const DEFAULT_WAIT_MS: u64 = 1_000;
/// How long a write may wait for the command to read its input.
const WRITE_LIMIT: Duration = Duration::from_secs(5);
/// Headroom above `wait_ms` before the chain's time limit stops the call.
const CHAIN_HEADROOM: Duration = Duration::from_secs(10);

/// Arguments of `bash_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashOutputArgs {
    /// As bash returned it.
    #[schemars(description = "")]
    pub session_id: u32,
    /// Written to its stdin or terminal first. End a line with "\n"; "\u0003" is Ctrl-C.
    pub input: Option<String>,
    /// Then close stdin (end of file).
    #[serde(default)]
    #[schemars(description = "")]
    pub close_stdin: bool,
    /// Wait this long for it to exit (default 1000).
    #[schemars(range(min = 0, max = 600000))]
    pub wait_ms: Option<u64>,
    /// Stop it and all it started.
    #[serde(default)]
    pub stop: bool,
}

/// The `bash_output` tool.
pub struct BashOutput {
    shell: Shell,
}

impl BashOutput {
    /// `bash_output` over `shell`'s sessions.
    pub fn new(shell: Shell) -> Self {
        BashOutput { shell }
    }
}

impl TypedTool for BashOutput {
    type Args = BashOutputArgs;

    fn name(&self) -> &str {
        "bash_output"
    }

    // Codex's write_stdin.
    fn aliases(&self) -> &'static [(&'static str, Alias)] {
        &[("chars", Alias::Param("input")), ("yield_time_ms", Alias::Param("wait_ms"))]
    }

    fn description(&self) -> String {
        "Reads a bash session's new output (a command that outlived yield_ms) and whether it still runs, after writing `input` if given; `stop` ends it. A session is closed once its end is reported.".to_string()
    }

    fn flags(&self) -> ToolFlags {
        ToolFlags::MUTATING
    }

    fn customize(&self, spec: ToolSpec) -> ToolSpec {
        spec.with_permission("bash")
    }

    fn permissions(
        &self,
        spec: &ToolSpec,
        args: &BashOutputArgs,
        _ctx: &ToolContext,
    ) -> Result<Vec<PermissionRequest>, ToolError> {
        Ok(match &args.input {
            Some(input) if !input.trim().is_empty() => vec![
                PermissionRequest::new(&spec.permission, permission_patterns(input))
                    .with_metadata("input", input.clone()),
            ],
            _ => Vec::new(),
        })
    }

    fn time_limit(&self, args: &BashOutputArgs) -> Option<Duration> {
        let settle = if args.stop { KILL_GRACE } else { wait(args) };
        Some(settle + WRITE_LIMIT + CHAIN_HEADROOM)
    }

    async fn run(&self, args: BashOutputArgs, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let session = self.shell.state.sessions.get(args.session_id)?;
        let mut notes = Vec::new();
        if let Some(input) = args.input.as_deref().filter(|i| !i.is_empty())
            && let Some(note) = send_input(&session, input).await
        {
            notes.push(note);
        }
        if args.close_stdin
            && let Err(e) = session.run.close_input().await
        {
            notes.push(format!("(Closing standard input failed: {e}.)"));
        }
        if args.stop {
            let was_running = !session.run.is_done();
            session.run.terminate().await;
            notes.push(if was_running {
                format!("(Session {} was stopped.)", session.id)
            } else {
                format!("(Session {} had already exited.)", session.id)
            });
        } else {
            tokio::select! {
                () = session.run.wait_done() => {},
                () = tokio::time::sleep(wait(&args)) => {},
                () = ctx.cancellation().cancelled() => {},
            }
        }
        notes.extend(session.settle_protected(ctx.root()));
        Ok(report(&self.shell, &session, &ctx, &notes, args.stop))
    }
}

fn wait(args: &BashOutputArgs) -> Duration {
    Duration::from_millis(args.wait_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_TIMEOUT_MS))
}

async fn send_input(session: &ProcessSession, input: &str) -> Option<String> {
    let run = &session.run;
    if run.is_done() {
        return Some("(The input was not sent: the command had already exited.)".to_string());
    }
    if input == "\u{3}" && !run.is_tty() {
        run.signal(libc::SIGINT);
        return None;
    }
    match run.write_input(input.as_bytes(), WRITE_LIMIT).await {
        Ok(()) => None,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Some(
            "(The input was not sent: the command's standard input is closed. Start the command again if it needs input.)"
                .to_string(),
        ),
        Err(e) => Some(format!("(Sending the input failed: {e}.)")),
    }
}

/// New output of `session` and its state; closes the session once its exit is reported.
/// `stop`: the model asked to stop it.
pub(super) fn report(
    shell: &Shell,
    session: &ProcessSession,
    ctx: &ToolContext,
    notes: &[String],
    stop: bool,
) -> ToolOutput {
    let run = &session.run;
    let done = run.is_done();
    let output = run.take_output(ctx.output_sink(MEMORY_BUDGET));
    let id = session.id;
    let secs = run.elapsed().as_secs();
    let exit = run.exit().filter(|_| done);
    let status = if !done {
        format!(
            "Session {id} is still running ({secs} s since it started). Call bash_output again to read more, or with stop: true to stop it."
        )
    } else {
        let how = match exit {
            Some(exit) => exit_line(exit),
            None => "Exit status unknown.".to_string(),
        };
        let timed_out =
            if session.timed_out.load(Ordering::Relaxed) { " It was stopped by its timeout_ms." } else { "" };
        format!("{how}\nSession {id} has ended ({secs} s after it started) and is now closed.{timed_out}")
    };
    if done {
        shell.state.sessions.remove(id);
    }
    let mut notes = notes.to_vec();
    // Stopped by the model, everything it started goes with it, as asked; ended by itself, what
    // its shell left running was stopped (the model already runs it as a session).
    if done && run.stopped_leftovers() > 0 && !stop {
        let count = run.stopped_leftovers();
        notes.push(format!(
            "(Its shell ended leaving {count} process{} running; {} stopped with it.)",
            if count == 1 { "" } else { "es" },
            if count == 1 { "it was" } else { "they were" }
        ));
    }
    exit_metadata(compose(output, &status, &notes), exit)
        .with_metadata("session_id", id)
        .with_metadata("running", !done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bash, BashArgs, SandboxMode, SandboxPolicy};

    #[tokio::test]
    async fn input_to_a_command_that_exited_is_not_sent_and_the_session_closes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ctx = ToolContext::standalone(&root, root.join(".data"));
        let shell = Shell::new(SandboxPolicy { mode: SandboxMode::FullAccess, ..SandboxPolicy::default() });
        let args: BashArgs =
            serde_json::from_value(serde_json::json!({"command": "sleep 0.3; echo bye", "yield_ms": 0})).unwrap();
        let started = Bash::new(shell.clone()).run(args, ctx.clone()).await.unwrap();
        let id = started.metadata["session_id"].as_u64().unwrap() as u32;
        tokio::time::sleep(Duration::from_millis(800)).await;
        let poll = BashOutput::new(shell.clone());
        let args = BashOutputArgs {
            session_id: id,
            input: Some("hello\n".into()),
            close_stdin: false,
            wait_ms: Some(0),
            stop: false,
        };
        let out = poll.run(args, ctx.clone()).await.unwrap();
        assert!(out.text.contains("The input was not sent: the command had already exited."), "{}", out.text);
        assert!(out.text.contains(&format!("Session {id} has ended")), "{}", out.text);
        assert_eq!(out.metadata["running"], false);
        assert!(
            poll.run(
                BashOutputArgs { session_id: id, input: None, close_stdin: false, wait_ms: None, stop: false },
                ctx
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn unknown_session_lists_what_exists() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = ToolContext::standalone(tmp.path(), tmp.path());
        let poll = BashOutput::new(Shell::new(SandboxPolicy::default()));
        let args = BashOutputArgs { session_id: 7, input: None, close_stdin: false, wait_ms: None, stop: true };
        let err = poll.run(args, ctx).await.unwrap_err();
        insta::assert_snapshot!(err.to_string(), @"No shell session 7: it never existed, or it ended and its final output was already returned. There are no sessions.");
    }
}
