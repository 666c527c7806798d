//! Each cell drawn as lines at a width. A tool cell is a header — state (spinner while it runs,
//! then ✓ or ✗ and the tool's own duration), the tool, what it works on — and a body that
//! depends on the tool: the command and the tail of its output for bash, a coloured diff for
//! edits, the first line of a search, the address and size of a fetch. Collapsed bodies are cut
//! to a few lines ("… +N lines"); an expanded cell shows all.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::cell::{Cell, ToolCell, ToolState};
use crate::markdown::{self, DIM};
use crate::wrap::wrap;

/// Spinner frames, one per tick.
pub const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];

/// Lines of a collapsed body.
const COLLAPSED_LINES: usize = 5;
/// Lines of a collapsed diff.
const COLLAPSED_DIFF_LINES: usize = 16;

/// Whether a blank row separates `cell` from the cell before it: between cells of different
/// kinds (a prompt and its answer, an answer and the tool calls after it), not inside a run of
/// tool calls or notices.
pub fn gap(previous: Option<&Cell>, cell: &Cell) -> bool {
    let kind = |c: &Cell| std::mem::discriminant(c);
    previous.is_some_and(|p| kind(p) != kind(cell) || matches!(cell, Cell::User(_) | Cell::Answer { .. }))
}

/// `cell` at `width` columns after `previous` (a blank row between them when [`gap`] says
/// so); `frame` picks the spinner frame of running calls.
pub fn spaced(previous: Option<&Cell>, cell: &Cell, width: usize, frame: usize) -> Vec<Line<'static>> {
    let mut out = if gap(previous, cell) { vec![Line::default()] } else { Vec::new() };
    out.extend(lines(cell, width, frame));
    out
}

/// How many of [`spaced`]'s rows for a text still streaming are settled: more text will not
/// change them. For an answer, the rows its Markdown gives up to the last blank line that a
/// paragraph, heading or fence follows, as far as the whole text gives the same: a table or
/// list still growing may change how its earlier rows look (wider columns, a list turned
/// loose), so it is held back until something else follows it. For reasoning, all rows but the
/// last. Nothing of any other cell.
pub fn settled(previous: Option<&Cell>, cell: &Cell, width: usize) -> usize {
    let gap = usize::from(gap(previous, cell));
    let rows = match cell {
        Cell::Answer { text, .. } => {
            // Blocks before a blank line and a line that starts a paragraph, heading or fence
            // are closed: no later text turns them into a loose list or a longer table.
            let starts_block = |at: usize| {
                text[at..]
                    .trim_start_matches('\n')
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '#' || c == '`')
            };
            let Some((cut, _)) = text.rmatch_indices("\n\n").find(|(i, _)| starts_block(i + 2)) else { return 0 };
            let before = markdown::render(&text[..cut], width);
            let all = markdown::render(text, width);
            // The last row of the part before the blank line may still join what follows.
            before.iter().zip(&all).take_while(|(a, b)| a == b).count().min(before.len().saturating_sub(1))
        }
        Cell::Reasoning(_) => lines(cell, width, 0).len().saturating_sub(1),
        _ => return 0,
    };
    gap + rows
}

/// `cell` at `width` columns; `frame` picks the spinner frame of running calls.
pub fn lines(cell: &Cell, width: usize, frame: usize) -> Vec<Line<'static>> {
    match cell {
        Cell::User(text) => {
            let style = Style::new().add_modifier(Modifier::BOLD);
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let first = [Span::styled(if i == 0 { "› " } else { "  " }, Style::new().fg(Color::Magenta))];
                out.extend(wrap(&[Span::styled(line.to_string(), style)], width, &first, &[Span::raw("  ")]));
            }
            out
        }
        Cell::Answer { text, .. } => markdown::render(text, width),
        Cell::Reasoning(text) => {
            let style = DIM.add_modifier(Modifier::ITALIC);
            text.lines().flat_map(|l| wrap(&[Span::styled(l.to_string(), style)], width, &[], &[])).collect()
        }
        Cell::Notice { text, error } => {
            let style = if *error { Style::new().fg(Color::Red) } else { DIM };
            // A line each, the first marked; a line's own indent is kept when it wraps.
            let mut out = Vec::new();
            for (i, line) in text.lines().enumerate() {
                let body = line.trim_start();
                let indent = "  ".to_string() + &line[..line.len() - body.len()];
                let first = if i == 0 { Span::styled("· ", style) } else { Span::raw(indent.clone()) };
                out.extend(wrap(&[Span::styled(body.to_string(), style)], width, &[first], &[Span::raw(indent)]));
            }
            out
        }
        Cell::Tool(tool) => tool_lines(tool, width, frame),
        Cell::Diff(diff) => patch_lines(diff)
            .into_iter()
            .flat_map(|(text, style)| wrap(&[Span::styled(text, style)], width, &[], &[]))
            .collect(),
    }
}

/// A sub-agent's calls shown in a collapsed `task` cell (the latest).
const COLLAPSED_CHILDREN: usize = 3;

/// A call's header: state, tool, what it works on, duration.
fn header(cell: &ToolCell, args: &Value, frame: usize) -> Vec<Span<'static>> {
    let (glyph, glyph_style) = match cell.state {
        ToolState::Running => (SPINNER[frame % SPINNER.len()], Style::new().fg(Color::Yellow)),
        _ if failed(cell) => ("✗", Style::new().fg(Color::Red)),
        _ => ("✓", Style::new().fg(Color::Green)),
    };
    let subject = subject(&cell.tool, args, &cell.input);
    let mut header = vec![
        Span::raw("  ".repeat(usize::from(cell.depth))),
        Span::styled(format!("{glyph} "), glyph_style),
        Span::styled(cell.tool.clone(), Style::new().add_modifier(Modifier::BOLD)),
    ];
    if !subject.is_empty() {
        header.push(Span::raw(format!(" {subject}")));
    }
    let exit = cell.metadata.get("exit_code").and_then(Value::as_i64).filter(|c| *c != 0);
    match (exit, cell.duration_ms) {
        (Some(code), Some(ms)) => {
            header.push(Span::styled(format!(" (exit {code}, {})", duration(ms)), Style::new().fg(Color::Red)));
        }
        (Some(code), None) => header.push(Span::styled(format!(" (exit {code})"), Style::new().fg(Color::Red))),
        (None, Some(ms)) => header.push(Span::styled(format!(" ({})", duration(ms)), DIM)),
        (None, None) => {}
    }
    header
}

fn tool_lines(cell: &ToolCell, width: usize, frame: usize) -> Vec<Line<'static>> {
    let indent = "  ".repeat(usize::from(cell.depth));
    let args: Value = serde_json::from_str(&cell.input).unwrap_or(Value::Null);
    let body_prefix = [Span::raw(format!("{indent}  "))];
    let mut out = wrap(&header(cell, &args, frame), width, &[], &body_prefix);
    // A task's sub-agent: its calls (the latest few unless expanded), then its answer.
    let shown = if cell.expanded { cell.children.len() } else { COLLAPSED_CHILDREN };
    let earlier = cell.children.len().saturating_sub(shown);
    if earlier > 0 {
        let text = format!("… {earlier} earlier call{}", if earlier == 1 { "" } else { "s" });
        out.push(Line::from(vec![body_prefix[0].clone(), Span::styled(text, DIM)]));
    }
    for child in &cell.children[earlier..] {
        let args: Value = serde_json::from_str(&child.input).unwrap_or(Value::Null);
        let child_prefix = [Span::raw(format!("{indent}    "))];
        out.extend(wrap(&header(child, &args, frame), width, &[], &child_prefix));
    }
    let body = body(cell, &args);
    // Lines of a long command output the result did not keep.
    let dropped =
        if cell.tool == "bash" && cell.state != ToolState::Running { bash_body(cell, &args).dropped } else { 0 };
    let limit = if cell.expanded {
        usize::MAX
    } else if is_diff(&body) {
        COLLAPSED_DIFF_LINES
    } else {
        COLLAPSED_LINES
    };
    let tail = cell.tool == "bash";
    let (shown, hidden) = cut(&body, limit, tail);
    // A collapsed output's count is of the lines the command printed, the ones not kept too
    // (less the line that says they are not shown).
    let marker_shown = shown.iter().any(|(l, _)| l.starts_with("… ") && l.contains(" not shown"));
    let hidden = if hidden > 0 && dropped > 0 && !marker_shown { hidden + dropped - 1 } else { hidden };
    let more = Line::from(vec![body_prefix[0].clone(), Span::styled(format!("… +{hidden} lines"), DIM)]);
    // Command output shows its tail: the cut is between the command and the last lines.
    let commands = if tail { shown.iter().take_while(|(l, _)| l.starts_with("$ ")).count() } else { shown.len() };
    for (i, (text, style)) in shown.into_iter().enumerate() {
        if i == commands && hidden > 0 {
            out.push(more.clone());
        }
        out.extend(wrap(&[Span::styled(text, style)], width, &body_prefix, &body_prefix));
    }
    if hidden > 0 && !tail {
        out.push(more);
    }
    out
}

/// What the call works on, for its header.
fn subject(tool: &str, args: &Value, raw: &str) -> String {
    let found = toolshed_agent::calls::subject(tool, args, raw, true).or_else(|| arguments(tool, args, raw));
    let text = found.unwrap_or_else(|| if args.is_null() { raw.to_string() } else { String::new() });
    one_line(&text, 100)
}

/// The arguments of a call whose tool has no one thing it works on that [`subject`] knows (an
/// MCP or custom tool): its JSON input, compact, so that what it will do is shown (in its cell
/// and in the question asked about it). `None` for the tools [`subject`] knows, and when there
/// are no arguments.
pub fn arguments(tool: &str, args: &Value, raw: &str) -> Option<String> {
    if toolshed_agent::calls::subject(tool, args, raw, false).is_some() {
        return None;
    }
    args.as_object().filter(|a| !a.is_empty()).map(|a| Value::Object(a.clone()).to_string())
}

/// `text` on one line, at most `max` characters (then `…`).
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max { format!("{}…", flat.chars().take(max).collect::<String>()) } else { flat }
}

/// The body's lines with their styles.
fn body(cell: &ToolCell, args: &Value) -> Vec<(String, Style)> {
    if cell.state == ToolState::Running {
        if cell.tool == "bash"
            && let Some(command) = args.get("command").and_then(Value::as_str)
        {
            return command.lines().map(|l| (format!("$ {l}"), DIM)).collect();
        }
        return Vec::new();
    }
    if cell.tool == "bash" {
        return bash_body(cell, args).lines;
    }
    if cell.state == ToolState::Failed {
        let red = Style::new().fg(Color::Red);
        return crate::people::failure(&cell.tool, &cell.output).lines().map(|l| (l.to_string(), red)).collect();
    }
    match cell.tool.as_str() {
        "edit" | "apply_patch" | "write" => {
            let diff = cell.metadata.get("diff").and_then(Value::as_str).map(str::to_string);
            let mut out: Vec<(String, Style)> = match diff {
                Some(diff) => diff_lines(&diff),
                None => cell
                    .title
                    .iter()
                    .chain(cell.output.lines().next().map(str::to_string).as_ref())
                    .take(1)
                    .map(|t| (t.clone(), DIM))
                    .collect(),
            };
            out.extend(diagnostics(cell));
            out
        }
        "grep" | "glob" | "read" | "list" | "webfetch" | "websearch" => {
            let first =
                cell.title.clone().or_else(|| cell.output.lines().next().map(str::to_string)).unwrap_or_default();
            let size = if cell.tool == "webfetch" { format!(" ({} bytes)", cell.output.len()) } else { String::new() };
            vec![(format!("{first}{size}"), DIM)]
        }
        // The sub-agent's answer, without the wrapper that tells the model the task's id.
        "task" => {
            let answer = cell
                .output
                .split_once("<task_result>")
                .map_or(cell.output.as_str(), |(_, rest)| rest.split("</task_result>").next().unwrap_or(rest));
            answer.trim().lines().map(|l| (l.to_string(), DIM)).collect()
        }
        _ => cell.output.lines().take(3).map(|l| (l.to_string(), DIM)).collect(),
    }
}

/// A bash call's body as a person reads it.
struct BashBody {
    /// The command (`$ …`), then what it printed, then notes.
    lines: Vec<(String, Style)>,
    /// Lines of its output not kept in the result (a long output's middle), counted among the
    /// hidden ones of a collapsed cell.
    dropped: usize,
}

/// The command, what it printed (the result's text without what is there for the model: the
/// exit status, which the header shows, the note on a truncated output and where to read the
/// rest), and what a failed call says to a person.
fn bash_body(cell: &ToolCell, args: &Value) -> BashBody {
    let mut lines: Vec<(String, Style)> = args
        .get("command")
        .and_then(Value::as_str)
        .map(|c| c.lines().map(|l| (format!("$ {l}"), DIM)).collect())
        .unwrap_or_default();
    let text = if cell.state == ToolState::Failed {
        crate::people::failure(&cell.tool, &cell.output)
    } else {
        cell.output.clone()
    };
    let mut text = text.as_str();
    // The note on a truncated output ends the text.
    if cell.metadata.get("truncated").and_then(Value::as_bool) == Some(true)
        && let Some((before, _)) = text.rsplit_once("\n\n[Output truncated: ")
    {
        text = before;
    }
    let mut printed: Vec<&str> = text.lines().collect();
    // The exit status: in the header. What follows it is notes.
    let mut notes = Vec::new();
    if let Some(code) = cell.metadata.get("exit_code").and_then(Value::as_i64)
        && let Some(at) = printed.iter().rposition(|l| *l == format!("Exit code: {code}"))
    {
        notes = printed.split_off(at);
        notes.remove(0);
    }
    while printed.last().is_some_and(|l| l.trim().is_empty()) {
        printed.pop();
    }
    if printed == ["(no output)"] {
        printed.clear();
    }
    let red = Style::new().fg(Color::Red);
    let mut dropped = 0;
    let saved = cell.metadata.get("output_path").and_then(Value::as_str);
    for line in printed {
        // The middle of a long output, not kept: said in words for people.
        if let Some(what) = line.strip_prefix("[... ").and_then(|l| l.strip_suffix(" ...]")) {
            let lines_omitted = what.split_once(" lines omitted").and_then(|(n, _)| n.parse::<usize>().ok());
            dropped += lines_omitted.unwrap_or(0);
            let amount = match lines_omitted {
                Some(n) => format!("{n} lines"),
                None => what.split(" omitted").next().unwrap_or(what).to_string(),
            };
            let place = saved.map(|p| format!(" (the whole output is saved in {p})")).unwrap_or_default();
            lines.push((format!("… {amount} not shown{place}"), DIM));
            continue;
        }
        // What a failed call says of itself (not what its command printed) is red.
        let said = ["(interrupted)", "(timed out", "not run: ", "stopped: "];
        let style = if cell.state == ToolState::Failed && said.iter().any(|s| line.starts_with(s)) {
            red
        } else {
            Style::new()
        };
        lines.push((line.to_string(), style));
    }
    lines.extend(notes.into_iter().filter(|l| !l.trim().is_empty()).map(|l| (l.to_string(), DIM)));
    BashBody { lines, dropped }
}

/// Whether a call that ran shows as failed: the tool failed, or its command did (a non-zero
/// exit, a signal, a time limit).
pub fn failed(cell: &ToolCell) -> bool {
    cell.state == ToolState::Failed
        || cell.metadata.get("exit_code").and_then(Value::as_i64).is_some_and(|c| c != 0)
        || cell.metadata.get("signal").is_some_and(|s| !s.is_null())
}

/// The errors a language server reported after a change (listed in the result after the note
/// that introduces them), and the files whose diagnostics were unavailable.
fn diagnostics(cell: &ToolCell) -> Vec<(String, Style)> {
    let Some(Value::Object(files)) = cell.metadata.get("diagnostics") else { return Vec::new() };
    let error = Style::new().fg(Color::Red);
    let mut out = Vec::new();
    let mut listing = false;
    for line in cell.output.lines() {
        if line.contains(" after this change; fix ") {
            listing = true;
        } else if line.trim().is_empty() {
            listing = false;
        }
        if listing {
            out.push((line.to_string(), error));
        }
    }
    for (file, report) in files {
        if let Some(why) = report.get("unavailable").and_then(Value::as_str) {
            out.push((format!("no diagnostics for {file}: {why}"), DIM));
        }
    }
    out
}

/// A unified diff, coloured: additions green, removals red, hunk headers cyan.
pub fn diff_lines(diff: &str) -> Vec<(String, Style)> {
    diff.lines()
        .filter(|l| {
            !l.starts_with("+++") && !l.starts_with("---") && !l.starts_with("Index:") && !l.starts_with("====")
        })
        .map(|l| (l.to_string(), diff_style(l)))
        .collect()
}

/// A diff line's colour: additions green, removals red, hunk headers cyan.
fn diff_style(line: &str) -> Style {
    match line.chars().next() {
        Some('+') => Style::new().fg(Color::Green),
        Some('-') => Style::new().fg(Color::Red),
        Some('@') => Style::new().fg(Color::Cyan),
        _ => Style::new(),
    }
}

/// A whole patch (`/diff`), every line kept as `git diff` prints it, so it names its files and
/// copies out as a patch that applies; each file's header is bold.
fn patch_lines(diff: &str) -> Vec<(String, Style)> {
    let mut in_header = false;
    diff.lines()
        .map(|l| {
            if l.starts_with("diff --git ") {
                in_header = true;
            } else if l.starts_with("@@") {
                in_header = false;
            }
            let style = if in_header { Style::new().add_modifier(Modifier::BOLD) } else { diff_style(l) };
            (l.to_string(), style)
        })
        .collect()
}

fn is_diff(body: &[(String, Style)]) -> bool {
    body.iter().any(|(l, _)| l.starts_with("@@"))
}

/// At most `limit` lines: the last ones (`tail`, for command output) or the first ones.
fn cut(body: &[(String, Style)], limit: usize, tail: bool) -> (Vec<(String, Style)>, usize) {
    if body.len() <= limit {
        return (body.to_vec(), 0);
    }
    let hidden = body.len() - limit;
    if tail {
        // The command itself stays; the output's tail follows.
        let commands = body.iter().take_while(|(l, _)| l.starts_with("$ ")).count().min(limit);
        let mut shown: Vec<(String, Style)> = body[..commands].to_vec();
        shown.extend(body[body.len() - (limit - commands)..].iter().cloned());
        (shown, hidden)
    } else {
        (body[..limit].to_vec(), hidden)
    }
}

/// `12 ms`, `3.4 s`, `2 m 5 s`.
pub fn duration(ms: u64) -> String {
    match ms {
        ms if ms < 1_000 => format!("{ms} ms"),
        ms if ms < 60_000 => format!("{:.1} s", ms as f64 / 1000.0),
        ms => format!("{} m {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::widgets::Paragraph;
    use serde_json::json;

    use super::*;
    use crate::cell::Transcript;

    #[test]
    fn a_streamed_text_settles_up_to_its_last_blank_line_and_not_inside_a_growing_table() {
        let answer = |text: &str| Cell::Answer { text: text.to_string(), done: false };
        let user = Cell::User("q".into());
        // No blank line yet: nothing is settled.
        assert_eq!(settled(None, &answer("one line still"), 80), 0);
        // Two paragraphs and the start of a third: the first paragraph and its blank row (the
        // gap row after a prompt counts too).
        let text = "First paragraph.\n\nSecond paragraph.\n\nThird, still";
        assert_eq!(settled(None, &answer(text), 80), 2);
        assert_eq!(settled(Some(&user), &answer(text), 80), 3);
        // A list may still turn loose (rows between its items): it is held back until a
        // paragraph follows it.
        assert_eq!(settled(None, &answer("Intro.\n\n- a\n- b\n- c\n\n"), 80), 0);
        assert_eq!(settled(None, &answer("Intro.\n\n- a\n- b\n- c\n\nAfter"), 80), 4);
        // A table still growing changes its column widths: none of it is settled.
        let table = "Intro.\n\n| a | b |\n|---|---|\n| 1 | x |\n\nAfter the table";
        let growing = "Intro.\n\n| a | b |\n|---|---|\n| 1 | x |\n| 22 | a much longer cell |";
        assert_eq!(settled(None, &answer(growing), 80), 0);
        assert_eq!(settled(None, &answer(table), 80), 4);
        // Reasoning: all rows but the last.
        assert_eq!(settled(None, &Cell::Reasoning("a\nb\nc".into()), 80), 2);
        assert_eq!(settled(None, &Cell::Notice { text: "n".into(), error: false }, 80), 0);
    }

    /// The cells drawn on a test terminal of `width` columns, as text.
    fn screen(cells: &[Cell], width: u16) -> String {
        let lines: Vec<Line<'static>> = cells
            .iter()
            .enumerate()
            .flat_map(|(i, c)| spaced(i.checked_sub(1).map(|p| &cells[p]), c, usize::from(width), 0))
            .collect();
        let height = u16::try_from(lines.len()).unwrap_or(u16::MAX).max(1);
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|f| f.render_widget(Paragraph::new(lines), f.area())).unwrap();
        terminal.backend().to_string()
    }

    fn tool(tool: &str, input: Value, output: &str, metadata: Value) -> Cell {
        Cell::Tool(ToolCell {
            state: ToolState::Done,
            output: output.into(),
            metadata: metadata.as_object().cloned().unwrap_or_default(),
            duration_ms: Some(1234),
            ..ToolCell::new("c", tool, &input.to_string())
        })
    }

    #[test]
    fn a_transcript_with_markdown() {
        let mut t = Transcript::default();
        t.push_user("why does the build fail?");
        t.apply(&toolshed_agent::Event::Text {
            session_id: "s".into(),
            text: "## The cause\n\nThe **linker** cannot find `libfoo`:\n\n1. install it\n2. rerun `cargo build`\n\n```sh\napt install libfoo-dev\n```\n".into(),
        });
        insta::assert_snapshot!(screen(t.cells(), 48));
    }

    #[test]
    fn an_edit_cell_shows_the_errors_its_change_caused() {
        let output = "Edited src/lib.rs\n\nrust-analyzer reports 1 error in `src/lib.rs` after this change; fix it:\nsrc/lib.rs:3:5: error: expected `;`\n\ntypescript-language-server did not report within 5 s: no diagnostics for web/app.ts";
        let cell = tool(
            "edit",
            json!({"file_path": "src/lib.rs", "old_string": "a", "new_string": "b"}),
            output,
            json!({
                "diff": "@@ -3 +3 @@\n-    a\n+    b\n",
                "diagnostics": {
                    "src/lib.rs": {"server": "rust-analyzer", "errors": 1},
                    "web/app.ts": {"server": "typescript-language-server", "unavailable": "did not report within 5 s"}
                }
            }),
        );
        let screen = screen(&[cell], 100);
        assert!(screen.contains("+    b"), "{screen}");
        assert!(
            screen.contains("rust-analyzer reports 1 error") && screen.contains("src/lib.rs:3:5: error: expected `;`"),
            "{screen}"
        );
        assert!(screen.contains("no diagnostics for web/app.ts: did not report within 5 s"), "{screen}");
    }

    #[test]
    fn a_bash_cell_shows_the_command_and_the_tail_of_its_output() {
        let output: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let cell = tool("bash", json!({"command": "cargo test", "description": "run the tests"}), &output, json!({}));
        insta::assert_snapshot!(screen(&[cell], 48));
    }

    #[test]
    fn an_edit_cell_shows_its_diff_in_colour() {
        let diff = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n fn main() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n }\n";
        let cell = tool("edit", json!({"file_path": "src/lib.rs"}), "Edited src/lib.rs", json!({"diff": diff}));
        let drawn = screen(std::slice::from_ref(&cell), 48);
        insta::assert_snapshot!(drawn);
        let lines = lines(&cell, 48, 0);
        let colour_of = |start: &str| {
            let line = lines
                .iter()
                .find(|l| {
                    l.spans.iter().map(|s| s.content.as_ref()).collect::<String>().trim_start().starts_with(start)
                })
                .unwrap();
            line.spans.iter().rev().find(|s| !s.content.trim().is_empty()).and_then(|s| s.style.fg)
        };
        assert_eq!(colour_of("+    println"), Some(Color::Green));
        assert_eq!(colour_of("-    println"), Some(Color::Red));
        assert_eq!(colour_of("@@"), Some(Color::Cyan));
    }

    #[test]
    fn a_session_diff_keeps_every_line_and_names_its_files() {
        let diff = "diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+z\n";
        let lines = lines(&Cell::Diff(diff.into()), 80, 0);
        let text: Vec<String> =
            lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>()).collect();
        assert_eq!(text, diff.lines().collect::<Vec<_>>());
        let bold = |i: usize| lines[i].spans.iter().all(|s| s.style.add_modifier.contains(Modifier::BOLD));
        let fg = |i: usize| lines[i].spans.iter().find_map(|s| s.style.fg);
        assert!(bold(0) && bold(2) && bold(3) && bold(9) && bold(10), "{text:?}");
        assert_eq!((fg(5), fg(6), fg(4)), (Some(Color::Red), Some(Color::Green), Some(Color::Cyan)));
        assert!(!bold(6));
    }

    fn rows(cell: &Cell) -> Vec<String> {
        lines(cell, 80, 0).iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>()).collect()
    }

    #[test]
    fn a_failed_bash_call_shows_its_command_its_tail_and_all_when_expanded() {
        let printed: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        let mut bash = ToolCell {
            state: ToolState::Failed,
            output: format!("{printed}\nThe bash call was interrupted by the user."),
            duration_ms: Some(900),
            metadata: json!({"interrupted": true}).as_object().cloned().unwrap(),
            ..ToolCell::new("c", "bash", &json!({"command": "make all", "description": "build"}).to_string())
        };
        let collapsed = rows(&Cell::Tool(bash.clone()));
        assert!(collapsed[0].starts_with("✗ bash"), "{collapsed:?}");
        assert_eq!(collapsed[1].trim(), "$ make all", "{collapsed:?}");
        assert_eq!(collapsed[2].trim(), "… +9 lines", "{collapsed:?}");
        assert_eq!(collapsed.last().map(|l| l.trim()), Some("(interrupted)"), "{collapsed:?}");
        assert!(collapsed.iter().any(|l| l.trim() == "line 12"), "{collapsed:?}");
        bash.expanded = true;
        let expanded = rows(&Cell::Tool(bash));
        assert_eq!(expanded.len(), 1 + 1 + 12 + 1, "{expanded:?}");
        assert!(!expanded.iter().any(|l| l.contains("interrupted by the user")), "{expanded:?}");
    }

    #[test]
    fn a_truncated_output_shows_its_real_tail_and_how_many_lines_the_command_printed() {
        // As the chain's bound stage leaves 3,000 lines of `seq`.
        let head: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let tail: String = (2003..=3000).map(|i| format!("{i}\n")).collect();
        let output = format!(
            "{head}[... 1002 lines omitted (lines 1001-2002 of 3002) ...]\n{tail}\nExit code: 0\n\n[Output truncated: 3002 lines, 14000 bytes in all. The full output is saved in /tmp/spill/bash-1.txt; read it with offset=1001 to see the omitted lines, or grep it.]"
        );
        let metadata = json!({"exit_code": 0, "truncated": true, "output_path": "/tmp/spill/bash-1.txt"});
        let mut cell = ToolCell {
            output,
            metadata: metadata.as_object().cloned().unwrap(),
            duration_ms: Some(20),
            state: ToolState::Done,
            ..ToolCell::new("c", "bash", &json!({"command": "seq 3000"}).to_string())
        };
        let collapsed = rows(&Cell::Tool(cell.clone()));
        let trimmed: Vec<&str> = collapsed.iter().map(|l| l.trim()).collect();
        assert_eq!(trimmed[1..], ["$ seq 3000", "… +2996 lines", "2997", "2998", "2999", "3000"], "{collapsed:?}");
        assert!(collapsed[0].starts_with("✓ bash"), "{collapsed:?}");
        cell.expanded = true;
        let expanded = rows(&Cell::Tool(cell));
        assert!(
            expanded
                .iter()
                .any(|l| l.trim() == "… 1002 lines not shown (the whole output is saved in /tmp/spill/bash-1.txt)"),
            "{expanded:?}"
        );
        assert!(!expanded.iter().any(|l| l.contains("offset=") || l.contains("Exit code")), "{expanded:?}");
        assert_eq!(expanded.last().map(|l| l.trim()), Some("3000"));
    }

    #[test]
    fn a_command_that_exits_non_zero_is_marked_failed() {
        let cell = tool(
            "bash",
            json!({"command": "cargo test", "description": "run the tests"}),
            "test result: FAILED\n\nExit code: 101",
            json!({"exit_code": 101}),
        );
        let drawn = rows(&cell);
        assert!(drawn[0].starts_with("✗ bash run the tests (exit 101, 1.2 s)"), "{drawn:?}");
        assert_eq!(drawn.last().map(|l| l.trim()), Some("test result: FAILED"), "{drawn:?}");
        let Cell::Tool(t) = &cell else { panic!() };
        let glyph = lines(&cell, 80, 0)[0].spans.iter().find(|s| s.content.contains('✗')).and_then(|s| s.style.fg);
        assert_eq!(glyph, Some(Color::Red));
        assert!(failed(t));
    }

    #[test]
    fn a_refused_call_says_what_happened_in_words_for_people() {
        let cell = Cell::Tool(ToolCell {
            state: ToolState::Failed,
            output: "Invalid arguments for edit:\n- `old_string` is required\nFix the arguments and call edit again."
                .into(),
            ..ToolCell::new("c", "edit", r#"{"file_path":"a.rs"}"#)
        });
        let drawn = rows(&cell).join("\n");
        assert!(drawn.contains("not run: the model's arguments do not fit the tool"), "{drawn}");
        assert!(!drawn.contains("call edit again"), "{drawn}");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration(12), "12 ms");
        assert_eq!(duration(3_456), "3.5 s");
        assert_eq!(duration(125_000), "2 m 5 s");
    }
}
