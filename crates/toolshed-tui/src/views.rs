//! The parts of the screen around the transcript: the approval dialog, the status line and the
//! slash-command popup. Each is lines at a width, so it can be drawn and snapshot-tested
//! without a terminal.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use toolshed_core::permission::ApprovalRequest;

use crate::markdown::DIM;
use crate::render::{SPINNER, diff_lines};
use crate::wrap::wrap;

const KEY: Style = Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD);

/// The approval dialog: what is asked, of which tool, why, the rule that decided it, the diff
/// of an edit when the tool gave one, and the answers with their keys. `rule` is the rule that
/// asked, as `permission explain` names it.
pub fn approval(request: &ApprovalRequest, rule: Option<&str>, width: usize) -> Vec<Line<'static>> {
    approval_within(request, rule, None, width, usize::MAX)
}

/// [`approval`] in at most `rows` rows: what is asked and the answers always show; an edit's
/// diff gets the rows left, cut with `… +N lines`. `call` is the call's arguments when its
/// patterns do not say what it will do (an MCP or custom tool: [`crate::render::arguments`]).
pub fn approval_within(
    request: &ApprovalRequest,
    rule: Option<&str>,
    call: Option<&str>,
    width: usize,
    rows: usize,
) -> Vec<Line<'static>> {
    let r = &request.request;
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let headline = if r.permission == toolshed_core::exec::permit::DOOM_LOOP {
        vec![
            Span::styled(request.tool.clone(), bold),
            Span::raw(format!(" {}:", toolshed_core::exec::permit::DOOM_LOOP_HEADLINE)),
        ]
    } else {
        vec![
            Span::styled(request.tool.clone(), bold),
            Span::raw(" asks for "),
            Span::styled(format!("`{}`", r.permission), Style::new().fg(Color::Cyan)),
            Span::raw(":"),
        ]
    };
    let mut out = wrap(&headline, width, &[], &[]);
    let indent = [Span::raw("  ")];
    for pattern in &r.patterns {
        out.extend(wrap(&[Span::styled(pattern.clone(), bold)], width, &indent, &indent));
    }
    if let Some(call) = call {
        out.extend(wrap(&[Span::raw("with "), Span::styled(call.to_string(), bold)], width, &indent, &indent));
    }
    for key in ["unclassified", "reason"] {
        if let Some(why) = r.metadata.get(key).and_then(Value::as_str) {
            out.extend(wrap(&[Span::styled(format!("asked because {why}"), DIM)], width, &indent, &indent));
        }
    }
    if let Some(rule) = rule {
        out.extend(wrap(&[Span::styled(format!("rule: {rule}"), DIM)], width, &indent, &indent));
    }
    let mut answers = vec![Line::default()];
    let always = if r.always.is_empty() { String::new() } else { format!(" ({})", r.always.join(", ")) };
    let choices = [
        ("o", "once".to_string()),
        ("a", format!("always this session{always}")),
        ("r", "reject".to_string()),
        ("m", "reject with a message for the model".to_string()),
    ];
    for (key, what) in choices {
        answers.extend(wrap(
            &[Span::styled(format!("[{key}]"), KEY), Span::raw(format!(" {what}"))],
            width,
            &indent,
            &indent,
        ));
    }
    if let Some(diff) = r.metadata.get("diff").and_then(Value::as_str) {
        // Each row with the diff line it belongs to (a long line wraps).
        let diff: Vec<(usize, Line<'static>)> = diff_lines(diff)
            .into_iter()
            .enumerate()
            .flat_map(|(i, (text, style))| {
                wrap(&[Span::styled(text, style)], width, &indent, &indent).into_iter().map(move |l| (i, l))
            })
            .collect();
        let source_lines = diff.last().map_or(0, |(i, _)| i + 1);
        // The diff before the answers' long forms (what the call would do is the question),
        // when the short form leaves room for some of it.
        if out.len() + answers.len() + 1 + diff.len() > rows {
            let compact = compact_answers(width);
            if rows.saturating_sub(out.len() + compact.len() + 1) >= 3 {
                answers = compact;
            }
        }
        let room = rows.saturating_sub(out.len() + answers.len() + 1);
        // Some of it, with the count of the rest, or nothing.
        if diff.len() <= room || room >= 2 {
            out.push(Line::default());
            if diff.len() <= room {
                out.extend(diff.into_iter().map(|(_, l)| l));
            } else {
                // Cut between lines, never inside a wrapped one.
                let mut shown = room.saturating_sub(1);
                while shown > 1 && diff[shown].0 == diff[shown - 1].0 {
                    shown -= 1;
                }
                let hidden = source_lines - diff[shown].0;
                out.extend(diff.into_iter().take(shown).map(|(_, l)| l));
                out.push(Line::from(vec![Span::raw("  "), Span::styled(format!("… +{hidden} lines"), DIM)]));
            }
        }
    }
    // Too tall: what is asked and the answers stay; the blank line, then the rule, reasons
    // and further patterns, then the answers' long forms go.
    if out.len() + answers.len() > rows {
        answers.remove(0);
    }
    while out.len() + answers.len() > rows && out.len() > 2 {
        out.pop();
    }
    if out.len() + answers.len() > rows {
        answers = compact_answers(width);
    }
    while out.len() + answers.len() > rows && out.len() > 1 {
        out.pop();
    }
    out.extend(answers);
    out
}

/// The answer keys in one line, for a dialog short of room.
fn compact_answers(width: usize) -> Vec<Line<'static>> {
    wrap(
        &[
            Span::styled("[o]", KEY),
            Span::raw("nce "),
            Span::styled("[a]", KEY),
            Span::raw("lways "),
            Span::styled("[r]", KEY),
            Span::raw("eject "),
            Span::styled("[m]", KEY),
            Span::raw("essage"),
        ],
        width,
        &[],
        &[],
    )
}

/// What the status line shows.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// The agent (build, plan...).
    pub agent: String,
    /// The model (`provider/model`).
    pub model: String,
    /// Tokens of the last request, and the context window.
    pub context: Option<(u64, u64)>,
    /// The session id.
    pub session: String,
    /// The worktree, as shown (`~/src/app`).
    pub worktree: String,
    /// The sandbox mode.
    pub sandbox: String,
    /// What is being waited for (`thinking`, `rate limited, retrying in 5 s`) and for how
    /// many seconds.
    pub busy: Option<(String, u64)>,
    /// A hint for the next key (`press Ctrl-C again to quit`), shown first until a key.
    pub hint: Option<String>,
}

/// The status line: the spinner and what is waited for first (while busy), then agent, model,
/// context used, session, worktree and sandbox. What does not fit `width` is left out from the
/// least needed end (sandbox, then worktree, session...), never cut mid-way.
pub fn status_line(status: &Status, frame: usize, width: usize) -> Line<'static> {
    let mut parts: Vec<(String, Style)> = Vec::new();
    if let Some(hint) = &status.hint {
        parts.push((hint.clone(), KEY));
    }
    if let Some((what, secs)) = &status.busy {
        parts.push((format!("{} {what} ({secs}s)", SPINNER[frame % SPINNER.len()]), KEY));
    }
    parts.push((status.agent.clone(), Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD)));
    parts.push((status.model.clone(), DIM));
    if let Some((used, window)) = status.context {
        let percent = (used * 100).checked_div(window).unwrap_or(0);
        parts.push((format!("{} / {} tokens ({percent}%)", short(used), short(window)), DIM));
    }
    for part in [&status.session, &status.worktree, &status.sandbox] {
        parts.push((part.clone(), DIM));
    }
    parts.retain(|(p, _)| !p.is_empty());
    let separator = " · ";
    let mut used = 0;
    let mut spans = Vec::new();
    for (i, (text, style)) in parts.into_iter().enumerate() {
        let cost = crate::wrap::width(&text) + if i > 0 { separator.len() - 1 } else { 0 };
        if used + cost > width {
            break;
        }
        if i > 0 {
            spans.push(Span::styled(separator, DIM));
        }
        spans.push(Span::styled(text, style));
        used += cost;
    }
    Line::from(spans)
}

/// `950`, `12.3k`, `1.2M`.
fn short(n: u64) -> String {
    match n {
        n if n < 1_000 => n.to_string(),
        n if n < 1_000_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n if n < 1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        n => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

/// A slash command of the composer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlashCommand {
    /// The name, with its slash.
    pub name: &'static str,
    /// What it does.
    pub help: &'static str,
}

/// The composer's slash commands, in popup order.
pub const SLASH_COMMANDS: &[SlashCommand] = &[
    SlashCommand { name: "/plan", help: "plan mode: read and plan, change nothing" },
    SlashCommand { name: "/build", help: "build mode" },
    SlashCommand { name: "/agent", help: "switch to another agent: /agent NAME" },
    SlashCommand { name: "/model", help: "talk to another model: /model PROVIDER/MODEL" },
    SlashCommand { name: "/new", help: "start a new session" },
    SlashCommand { name: "/sessions", help: "pick a session of this worktree to resume" },
    SlashCommand { name: "/compact", help: "summarise the older history now to free context" },
    SlashCommand { name: "/diff", help: "what this session changed" },
    SlashCommand { name: "/undo", help: "put back the files of the last step that changed files" },
    SlashCommand { name: "/help", help: "keys and commands" },
    SlashCommand { name: "/exit", help: "quit" },
];

/// The commands matching what is typed (`/co` → `/compact`), in popup order.
pub fn slash_matches(typed: &str) -> Vec<SlashCommand> {
    let word = typed.split_whitespace().next().unwrap_or(typed);
    SLASH_COMMANDS.iter().filter(|c| c.name.starts_with(word)).copied().collect()
}

/// The popup above the composer: the matching commands, the selected one highlighted.
pub fn slash_popup(typed: &str, selected: usize, width: usize) -> Vec<Line<'static>> {
    let matches = slash_matches(typed);
    let name_width = matches.iter().map(|c| c.name.len()).max().unwrap_or(0);
    matches
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let style = if i == selected { Style::new().add_modifier(Modifier::REVERSED) } else { Style::new() };
            let mut line = wrap(
                &[
                    Span::styled(format!("{:<name_width$}", c.name), style.add_modifier(Modifier::BOLD)),
                    Span::styled(format!("  {}", c.help), style),
                ],
                width,
                &[],
                &[],
            );
            line.truncate(1);
            line.pop().unwrap_or_default()
        })
        .collect()
}

/// The `@` popup: the best matching files, the selected one highlighted.
pub fn file_popup(matches: &[&str], selected: usize, width: usize) -> Vec<Line<'static>> {
    matches
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let style = if i == selected { Style::new().add_modifier(Modifier::REVERSED) } else { Style::new() };
            let mut line = wrap(&[Span::styled(format!("@{path}"), style)], width, &[], &[]);
            line.truncate(1);
            line.pop().unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::widgets::{Block, Borders, Paragraph};
    use serde_json::json;
    use toolshed_core::permission::PermissionRequest;

    use super::*;

    fn draw(lines: Vec<Line<'static>>, width: u16, boxed: bool) -> String {
        let height = u16::try_from(lines.len()).unwrap_or(u16::MAX) + if boxed { 2 } else { 0 };
        let mut terminal = Terminal::new(TestBackend::new(width, height.max(1))).unwrap();
        terminal
            .draw(|f| {
                let mut p = Paragraph::new(lines);
                if boxed {
                    p = p.block(Block::default().borders(Borders::ALL).title(" permission "));
                }
                f.render_widget(p, f.area());
            })
            .unwrap();
        terminal.backend().to_string()
    }

    fn request(permission: &str, patterns: &[&str], metadata: serde_json::Value) -> ApprovalRequest {
        let mut r = PermissionRequest::new(permission, patterns.iter().copied());
        r.always = patterns.iter().map(|p| format!("{p}*")).collect();
        r.metadata = metadata.as_object().cloned().unwrap_or_default();
        ApprovalRequest {
            session_id: "s".into(),
            agent: "build".into(),
            tool: "edit".into(),
            call_id: "c".into(),
            request: r,
        }
    }

    #[test]
    fn the_approval_dialog_shows_what_is_asked_the_rule_the_diff_and_the_answers() {
        let diff = "@@ -1,2 +1,2 @@\n fn main() {\n-    old();\n+    new();\n";
        let req = request("edit", &["src/main.rs"], json!({"diff": diff}));
        let lines = approval(&req, Some("edit = \"ask\" (toolshed.toml)"), 56);
        insta::assert_snapshot!(draw(lines, 60, true));
    }

    /// Review 24: the third identical call asked for "`doom_loop`", a word for the code.
    #[test]
    fn a_repeated_call_is_asked_about_in_words_for_people() {
        let req = request("doom_loop", &["edit"], json!({"reason": "third identical edit call in a row"}));
        let text: Vec<String> =
            approval(&req, None, 100).iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(text[0], "edit is being called the same way a third time in a row (the model may be stuck):");
        assert!(!text.iter().any(|l| l.contains("doom_loop")), "{text:#?}");
    }

    #[test]
    fn a_long_diff_is_cut_so_the_question_and_answers_always_show() {
        let diff: String = (0..40).map(|i| format!("+line {i}\n")).collect();
        let req = request("edit", &["big.rs"], json!({"diff": format!("@@ -0,0 +1,40 @@\n{diff}")}));
        let lines = approval_within(&req, None, None, 60, 14);
        let text: Vec<String> = lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(lines.len(), 14, "{text:#?}");
        assert!(text[0].contains("asks for `edit`"));
        assert!(text.iter().any(|l| l.contains("… +")), "{text:#?}");
        // The answers make room for the diff in their short form.
        assert_eq!(text.last().unwrap(), "[o]nce [a]lways [r]eject [m]essage", "{text:#?}");
        // What is left out is counted in the diff's lines, not in the rows they wrap to.
        let long: String = (0..40).map(|i| format!("+{}{i}\n", "x".repeat(100))).collect();
        let req = request("write", &["big.rs"], json!({"diff": format!("@@ -0,0 +1,40 @@\n{long}")}));
        let text: Vec<String> = approval_within(&req, None, None, 60, 14)
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect();
        let shown = text.iter().filter(|l| l.trim_start().starts_with("+x")).count();
        let hidden = text.iter().find_map(|l| l.trim().strip_prefix("… +")).expect("a count");
        assert_eq!(hidden, format!("{} lines", 41 - 1 - shown), "{text:#?}");
    }

    #[test]
    fn in_a_small_terminal_the_dialog_keeps_what_is_asked_and_the_answer_keys() {
        let req = request("edit", &["big.rs"], json!({"diff": "@@ -1 +1 @@\n-a\n+b\n", "reason": "it edits"}));
        let text = |rows: usize, width: usize| -> Vec<String> {
            approval_within(&req, Some("edit = \"ask\" (toolshed.toml)"), None, width, rows)
                .iter()
                .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
                .collect()
        };
        // Room for the long answers: the rule and the reason go first.
        let lines = text(7, 38);
        assert!(lines.len() <= 7, "{lines:#?}");
        assert!(lines[0].contains("asks for `edit`") && lines[1].contains("big.rs"), "{lines:#?}");
        assert!(lines.iter().any(|l| l.contains("[m] reject with a message")), "{lines:#?}");
        assert!(!lines.iter().any(|l| l.contains("rule:")), "{lines:#?}");
        // Less: the answers in one line, what is asked still there.
        let lines = text(3, 38);
        assert!(lines.len() <= 3, "{lines:#?}");
        assert!(lines[0].contains("asks for `edit`") && lines[1].contains("big.rs"), "{lines:#?}");
        assert_eq!(lines[2], "[o]nce [a]lways [r]eject [m]essage", "{lines:#?}");
    }

    #[test]
    fn a_tool_whose_patterns_do_not_say_what_it_does_shows_its_arguments() {
        let req = request("up_bash", &["up_bash"], json!({}));
        let args = serde_json::json!({"command": "rm -rf build"});
        let call = crate::render::arguments("up_bash", &args, &args.to_string());
        assert_eq!(call.as_deref(), Some(r#"{"command":"rm -rf build"}"#));
        let lines = approval_within(&req, None, call.as_deref(), 60, 20);
        let text: Vec<String> = lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert!(text.iter().any(|l| l.contains(r#"with {"command":"rm -rf build"}"#)), "{text:#?}");
        // A built-in tool's patterns say it already.
        assert_eq!(crate::render::arguments("bash", &args, &args.to_string()), None);
    }

    #[test]
    fn the_status_line_names_agent_model_context_session_and_what_is_waited_for() {
        let status = Status {
            agent: "build".into(),
            model: "openai/gpt-5".into(),
            context: Some((48_200, 400_000)),
            session: "ses_1a2b".into(),
            worktree: "~/src/app".into(),
            sandbox: "workspace-write".into(),
            busy: Some(("rate limited, retrying in 5 s".into(), 3)),
            hint: None,
        };
        insta::assert_snapshot!(draw(vec![status_line(&status, 0, 120)], 120, false));
        let narrow = status_line(&status, 0, 30);
        assert!(narrow.width() <= 30, "{narrow:?}");
    }

    #[test]
    fn the_slash_popup_lists_what_matches_with_the_selection() {
        insta::assert_snapshot!(draw(slash_popup("/", 3, 64), 64, false));
        let compact: Vec<&str> = slash_matches("/co").iter().map(|c| c.name).collect();
        assert_eq!(compact, ["/compact"]);
        assert!(slash_matches("/zz").is_empty());
    }
}
