//! Running a manifest tool's process: arguments as JSON on standard input, the call's context in
//! `TOOLSHED_*` variables, standard output as the result, in its own process group so a timeout
//! or an interruption stops everything it started.

use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use toolshed_core::context::ToolContext;
use toolshed_core::env::ChildEnv;
use toolshed_core::tool::{ToolError, ToolOutput};
use toolshed_process::{ProcessGroup, SIGKILL};

/// How much standard output is kept in memory before it spills to a file.
const MEMORY_BUDGET: usize = 1024 * 1024;
/// How much of standard error is kept (the end of it) for error messages.
const STDERR_KEPT: usize = 16 * 1024;
/// How long output may keep arriving after the process exited (from children it left behind)
/// or after it was killed.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// What to run.
pub(crate) struct Command {
    /// The tool's name (for messages and `TOOLSHED_TOOL`).
    pub tool: String,
    /// The program, resolved.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// The manifest's directory (`TOOLSHED_TOOL_DIR`).
    pub tool_dir: PathBuf,
    /// What it inherits of toolshed's environment.
    pub env: ChildEnv,
    /// How it is confined before it starts.
    pub confine: Option<crate::Confine>,
}

/// The environment variables that tell a custom tool who calls it and where.
pub(crate) fn context_env(ctx: &ToolContext) -> [(&'static str, String); 6] {
    [
        ("TOOLSHED_SESSION_ID", ctx.session_id().to_string()),
        ("TOOLSHED_MESSAGE_ID", ctx.message_id().to_string()),
        ("TOOLSHED_CALL_ID", ctx.call_id().to_string()),
        ("TOOLSHED_AGENT", ctx.agent().to_string()),
        ("TOOLSHED_DIRECTORY", ctx.cwd().display().to_string()),
        ("TOOLSHED_WORKTREE", ctx.root().display().to_string()),
    ]
}

/// Runs `command` with `args` on standard input; stops it (the whole process group) when the
/// call is cancelled or times out, returning what it printed so far.
pub(crate) async fn run_command(command: Command, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    // Protected paths it creates are removed after it (the sandbox keeps only existing ones).
    let absent = toolshed_core::protected::absent(ctx.root(), ctx.cwd());
    let root = ctx.root().to_path_buf();
    let result = run_process(command, args, ctx).await;
    toolshed_core::protected::settle(&root, &absent, result)
}

async fn run_process(command: Command, args: Value, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
    let name = &command.tool;
    let mut cmd = tokio::process::Command::new(&command.program);
    command.env.apply(cmd.as_std_mut());
    cmd.args(&command.args)
        .current_dir(ctx.root())
        .envs(context_env(&ctx))
        .env("TOOLSHED_TOOL", name)
        .env("TOOLSHED_TOOL_DIR", &command.tool_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut leftovers = None;
    if let Some(confine) = &command.confine {
        leftovers = (confine.0)(cmd.as_std_mut(), ctx.agent()).map_err(|why| {
            ToolError::model(format!(
                "The custom tool {name} was not run: {why}. Tell the user; do not try another way."
            ))
        })?;
    }
    let mut child = cmd.spawn().map_err(|e| {
        ToolError::model(format!(
            "The custom tool {name} could not start `{}`: {e}. This is a problem with the tool's setup, not with your arguments.",
            command.program.display()
        ))
    })?;
    // Killed on request and when dropped (an abandoned call leaves nothing behind).
    let pid = child.id();
    let group = pid.and_then(|pid| ProcessGroup::new(pid, SIGKILL));
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (exited_tx, exited_rx) = watch::channel(false);
    let input = format!("{args}\n").into_bytes();
    let mut sink = ctx.output_sink(MEMORY_BUDGET);
    let mut err_tail: Vec<u8> = Vec::new();
    let mut err_total = 0usize;

    let cancel = ctx.cancellation().clone();
    // How many processes the tool left running (stopped when it ended).
    let mut left = 0usize;
    // The block ends the borrows of the sink and the child before the output is collected.
    let status = {
        let io = async {
            let write = async {
                if let Some(mut stdin) = stdin {
                    // A tool that does not read its arguments closes the pipe early; that is fine.
                    let _ = stdin.write_all(&input).await;
                    let _ = stdin.shutdown().await;
                }
            };
            let wait = async {
                let status = child.wait().await;
                // Whatever the tool left running ends with it: its group, and what left the
                // group but not its sandbox's namespace (`setsid ... &` in a script it runs).
                if let Some(group) = &group {
                    group.stop();
                }
                if let (Some(stop), Some(pid)) = (leftovers.take(), pid) {
                    left = stop.stop(pid);
                }
                let _ = exited_tx.send(true);
                status
            };
            let read_out = drain(stdout, exited_rx.clone(), |b| sink.push(b));
            let read_err = drain(stderr, exited_rx.clone(), |b| {
                err_total += b.len();
                keep_tail(&mut err_tail, b);
            });
            let ((), status, (), ()) = tokio::join!(write, wait, read_out, read_err);
            status
        };
        tokio::pin!(io);
        tokio::select! {
            status = &mut io => Some(status),
            () = cancel.cancelled() => {
                if let Some(group) = &group {
                    group.stop();
                }
                let _ = tokio::time::timeout(DRAIN_GRACE * 2, &mut io).await;
                None
            }
        }
    };
    let mut stdout = sink.finish();
    stdout.text.truncate(stdout.text.trim_end_matches(['\n', '\r']).len());
    let Some(status) = status else {
        // Stopped: hand back what it printed; the chain says why it stopped.
        return Ok(ToolOutput { text: stdout.text, spill: stdout.spill, ..ToolOutput::default() });
    };
    let status =
        status.map_err(|e| ToolError::model(format!("The custom tool {name} could not be waited for: {e}")))?;
    if status.success() {
        let mut output = match structured(&stdout.text) {
            Some(output) if stdout.spill.is_none() => output,
            _ => ToolOutput { text: stdout.text, spill: stdout.spill, ..ToolOutput::default() },
        };
        if left > 0 {
            output.text.push_str(&format!(
                "\n\n(The tool left {left} process{} running in the background; {} stopped when it ended.)",
                if left == 1 { "" } else { "es" },
                if left == 1 { "it was" } else { "they were" }
            ));
        }
        return Ok(output);
    }
    let dropped = err_total.saturating_sub(err_tail.len());
    Err(failure(name, status, &err_tail, dropped, &stdout.text, &ctx))
}

/// Reads `pipe` to its end, or until a short grace after the process exited (children that
/// escaped the process group may hold it open).
async fn drain<R: AsyncRead + Unpin>(pipe: Option<R>, exited: watch::Receiver<bool>, mut push: impl FnMut(&[u8])) {
    let Some(mut pipe) = pipe else { return };
    let grace = async move {
        let mut exited = exited;
        let _ = exited.wait_for(|&e| e).await;
        tokio::time::sleep(DRAIN_GRACE).await;
    };
    tokio::pin!(grace);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            read = pipe.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => push(&buf[..n]),
            },
            () = &mut grace => break,
        }
    }
}

fn keep_tail(tail: &mut Vec<u8>, data: &[u8]) {
    tail.extend_from_slice(data);
    if tail.len() > STDERR_KEPT {
        tail.drain(..tail.len() - STDERR_KEPT);
    }
}

/// Standard output that is a JSON object with a string `output` (and optionally `title` and
/// `metadata`) is a structured result.
fn structured(text: &str) -> Option<ToolOutput> {
    let trimmed = text.trim();
    if !trimmed.starts_with('{') {
        return None;
    }
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(trimmed) else { return None };
    let Some(Value::String(output)) = obj.remove("output") else { return None };
    let mut result = ToolOutput::text(output);
    if let Some(Value::String(title)) = obj.remove("title") {
        result.title = Some(title);
    }
    if let Some(Value::Object(metadata)) = obj.remove("metadata") {
        result.metadata = metadata;
    }
    Some(result)
}

/// The error for a non-zero exit: standard error (or, when it is empty, standard output) and
/// the exit code.
fn failure(
    name: &str,
    status: ExitStatus,
    stderr: &[u8],
    dropped: usize,
    stdout: &str,
    ctx: &ToolContext,
) -> ToolError {
    use std::os::unix::process::ExitStatusExt;
    let how = match (status.code(), status.signal()) {
        (Some(code), _) => {
            ctx.set_metadata("exit_code", code);
            format!("exited with code {code}")
        }
        (None, Some(signal)) => {
            ctx.set_metadata("signal", signal);
            format!("was killed by signal {signal}")
        }
        (None, None) => "failed".to_string(),
    };
    let stderr = String::from_utf8_lossy(stderr);
    // Only the end of a long standard error is kept: say how much came before it.
    let stderr = if dropped > 0 {
        format!(
            "[... the first {dropped} bytes of standard error were dropped; its last {} follow ...]\n{stderr}",
            stderr.len()
        )
    } else {
        stderr.into_owned()
    };
    let detail = if stderr.trim().is_empty() { stdout.trim() } else { stderr.trim() };
    if detail.is_empty() {
        ToolError::model(format!("{name} {how} without printing an error."))
    } else {
        ToolError::model(format!("{detail}\n\n[{name} {how}]"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_output_needs_a_string_output_field() {
        let out = structured("{\"output\": \"hi\", \"title\": \"T\", \"metadata\": {\"n\": 1}}\n").unwrap();
        assert_eq!(out.text, "hi");
        assert_eq!(out.title.as_deref(), Some("T"));
        assert_eq!(out.metadata["n"], 1);
        assert!(structured("{\"result\": 1}").is_none());
        assert!(structured("plain text").is_none());
    }

    #[test]
    fn stderr_keeps_its_end() {
        let mut tail = Vec::new();
        keep_tail(&mut tail, &vec![b'a'; STDERR_KEPT]);
        keep_tail(&mut tail, b"END");
        assert_eq!(tail.len(), STDERR_KEPT);
        assert!(tail.ends_with(b"END"));
    }
}
