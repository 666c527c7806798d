//! The terminal approver: asks the person at the keyboard about each `ask` decision.

use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::sync::Arc;

use toolshed_core::permission::{ApprovalRequest, ApproveAll, Approver, RejectAll, Reply};
use toolshed_core::tool::BoxFuture;

use crate::agent::Printer;

/// Who answers `ask` for a command: everyone approved with `--yes`, the person at the terminal
/// when there is one, else nobody (rejected, and the model is told why).
pub fn for_command(yes: bool) -> Arc<dyn Approver> {
    for_command_printing(yes, None)
}

/// [`for_command`] for a command whose events `printer` writes: while a question is on
/// screen, the printer holds everything else back (no spinner over the question).
pub fn for_command_printing(yes: bool, printer: Option<Arc<Printer>>) -> Arc<dyn Approver> {
    if yes {
        Arc::new(ApproveAll)
    } else if std::io::stderr().is_terminal() && File::open("/dev/tty").is_ok() {
        Arc::new(TerminalApprover { one_at_a_time: tokio::sync::Mutex::default(), printer })
    } else {
        Arc::new(RejectAll)
    }
}

/// Prompts on standard error and reads the answer from `/dev/tty` (standard input may carry
/// the tool's arguments). One prompt at a time.
pub struct TerminalApprover {
    one_at_a_time: tokio::sync::Mutex<()>,
    printer: Option<Arc<Printer>>,
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let _turn = self.one_at_a_time.lock().await;
            let prompt = prompt_text(request);
            let _question = self.printer.as_deref().map(Question::open);
            // Read on a thread of its own, not the runtime's blocking pool: a question cut
            // short (Ctrl-C) leaves that thread waiting for a line, and the runtime would wait
            // for it before the command can exit. Its end is the process's.
            let (answer, answered) = tokio::sync::oneshot::channel();
            let spawned = std::thread::Builder::new().name("question".into()).spawn(move || {
                let _ = answer.send(ask(&prompt));
            });
            if spawned.is_err() {
                return Reply::Reject(None);
            }
            let mut unanswered = Unanswered(true);
            let reply = answered.await.unwrap_or(Reply::Reject(None));
            unanswered.0 = false;
            reply
        })
    }
}

/// Dropped while still set, the question was cut short (Ctrl-C) with the cursor after it (and
/// the `^C` the terminal echoed): what is written next starts on a line of its own.
struct Unanswered(bool);

impl Drop for Unanswered {
    fn drop(&mut self) {
        if self.0 {
            let mut err = std::io::stderr();
            let _ = writeln!(err);
            let _ = err.flush();
        }
    }
}

/// A question on screen: the printer holds its output until this drops (the answer came, or
/// the turn was interrupted).
pub struct Question<'a>(&'a Printer);

impl<'a> Question<'a> {
    /// Stops the printer writing over the question that follows.
    pub fn open(printer: &'a Printer) -> Self {
        printer.begin_question();
        Question(printer)
    }
}

impl Drop for Question<'_> {
    fn drop(&mut self) {
        self.0.end_question();
    }
}

/// Lines of an edit's diff a line-mode question shows.
const DIFF_LINES_ASKED: usize = 30;

pub(crate) fn prompt_text(request: &ApprovalRequest) -> String {
    let r = &request.request;
    let mut text = if r.permission == toolshed_core::exec::permit::DOOM_LOOP {
        format!("\n{} {}:\n", request.tool, toolshed_core::exec::permit::DOOM_LOOP_HEADLINE)
    } else {
        format!("\n{} needs permission `{}` for:\n", request.tool, r.permission)
    };
    for p in &r.patterns {
        text.push_str(&format!("  {p}\n"));
    }
    for key in ["unclassified", "reason"] {
        if let Some(why) = r.metadata.get(key).and_then(|v| v.as_str()) {
            text.push_str(&format!("  (asked because {why})\n"));
        }
    }
    // An edit's diff, as the edit would make it.
    if let Some(diff) = r.metadata.get("diff").and_then(|v| v.as_str()) {
        let lines: Vec<&str> = diff.lines().filter(|l| !l.starts_with("---") && !l.starts_with("+++")).collect();
        for line in lines.iter().take(DIFF_LINES_ASKED) {
            text.push_str(&format!("  {line}\n"));
        }
        if lines.len() > DIFF_LINES_ASKED {
            text.push_str(&format!("  … {} more lines\n", lines.len() - DIFF_LINES_ASKED));
        }
    }
    text.push_str(&format!(
        "Allow? [o]nce, [a]lways this session ({}), [r]eject (or type a message for the model to reject with): ",
        r.always.join(", ")
    ));
    text
}

fn ask(prompt: &str) -> Reply {
    let mut err = std::io::stderr();
    // The commands and paths asked about come from the model: an escape sequence in them must
    // not redraw the question.
    let _ = write!(err, "{}", toolshed_core::terminal::visible(prompt));
    let _ = err.flush();
    let Ok(tty) = File::open("/dev/tty") else { return Reply::Reject(None) };
    let mut line = String::new();
    if BufReader::new(tty).read_line(&mut line).is_err() {
        return Reply::Reject(None);
    }
    parse_answer(&line)
}

/// `o`/`once`/`y`/`yes` → once, `a`/`always` → always, `r`/`reject`/`n`/`no`/nothing → reject,
/// anything else → reject with that text as the message for the model.
pub fn parse_answer(line: &str) -> Reply {
    let answer = line.trim();
    match answer.to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => Reply::Once,
        "a" | "always" => Reply::Always,
        "" | "r" | "reject" | "n" | "no" => Reply::Reject(None),
        _ => Reply::Reject(Some(answer.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_parse() {
        assert_eq!(parse_answer("o\n"), Reply::Once);
        assert_eq!(parse_answer("Always"), Reply::Always);
        assert_eq!(parse_answer(""), Reply::Reject(None));
        assert_eq!(parse_answer("use the test database\n"), Reply::Reject(Some("use the test database".into())));
    }
}
