//! Frame figures with a 5,000-cell transcript (prompts, Markdown answers with code, bash
//! output, edit diffs, notices) at 120 × 40: the pager opening, going Home (every cell
//! wrapped once), a pager frame while scrolling (p50/p99), a viewport frame while an answer streams (the
//! live cell, composer and status line), and the memory the transcript and the pager's kept
//! lines take. Run: `cargo bench -p toolshed-tui --bench frames`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use serde_json::json;
use toolshed_tui::cell::{Cell, ToolCell, ToolState};
use toolshed_tui::composer::Composer;
use toolshed_tui::pager::Pager;
use toolshed_tui::render;
use toolshed_tui::views::{self, Status};

const CELLS: usize = 5_000;
const ANSWER: &str = "## What changed\n\nThe **parser** now keeps `spans` for every token:\n\n1. the lexer records offsets\n2. the parser threads them through\n\n```rust\nfn span(&self) -> Range<usize> {\n    self.start..self.end\n}\n```\n\n| file | lines |\n|------|-------|\n| lexer.rs | +42 |\n| parser.rs | +17 |\n";

fn transcript() -> Vec<Cell> {
    let output: String = (0..20).map(|i| format!("test parser::case_{i} ... ok\n")).collect();
    let diff = "--- a/src/parser.rs\n+++ b/src/parser.rs\n@@ -10,4 +10,5 @@\n fn parse() {\n-    let t = next();\n+    let t = next();\n+    let span = t.span();\n     expr(t)\n }\n";
    (0..CELLS)
        .map(|i| match i % 5 {
            0 => Cell::User(format!("prompt {i}: make the parser keep spans and run the tests")),
            1 => Cell::Answer { text: ANSWER.to_string(), done: true },
            2 => Cell::Tool(ToolCell {
                state: ToolState::Done,
                output: output.clone(),
                duration_ms: Some(1234),
                ..ToolCell::new(
                    &format!("c{i}"),
                    "bash",
                    r#"{"command":"cargo test -p parser","description":"run the parser tests"}"#,
                )
            }),
            3 => Cell::Tool(ToolCell {
                state: ToolState::Done,
                output: "Edited src/parser.rs".into(),
                metadata: json!({"diff": diff}).as_object().cloned().unwrap_or_default(),
                duration_ms: Some(12),
                ..ToolCell::new(
                    &format!("c{i}"),
                    "edit",
                    r#"{"file_path":"src/parser.rs","old_string":"a","new_string":"b"}"#,
                )
            }),
            _ => Cell::Notice { text: format!("compacted: {i} messages summarised"), error: false },
        })
        .collect()
}

fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    pages * 4
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let before = rss_kib();
    let cells = transcript();
    let after_cells = rss_kib();
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|e| panic!("{e}"));

    // Opening the pager: a page up from the end (what the screen reaches is wrapped).
    let mut pager = Pager::new(39);
    let start = Instant::now();
    term.draw(|f| pager.draw(f, &cells, cells.len(), 0)).unwrap_or_else(|e| panic!("{e}"));
    let open = start.elapsed();
    // Home: every cell wrapped once.
    pager.key(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE));
    let start = Instant::now();
    term.draw(|f| pager.draw(f, &cells, cells.len(), 0)).unwrap_or_else(|e| panic!("{e}"));
    let home = start.elapsed();
    let after_pager = rss_kib();
    pager.key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));

    // Pager frames while scrolling up a page at a time and back.
    let mut frames = Vec::new();
    for i in 0..400 {
        let code = if i < 200 { KeyCode::PageUp } else { KeyCode::PageDown };
        pager.key(KeyEvent::new(code, KeyModifiers::NONE));
        let start = Instant::now();
        term.draw(|f| pager.draw(f, &cells, cells.len(), i)).unwrap_or_else(|e| panic!("{e}"));
        frames.push(start.elapsed());
    }
    frames.sort();

    // Viewport frames while an answer streams: the live answer re-rendered as it grows, the
    // composer and the status line (the committed 5,000 cells are the terminal's scrollback).
    let status = Status {
        agent: "build".into(),
        model: "openai/gpt-5.1".into(),
        context: Some((48_213, 400_000)),
        session: "ses_1a2b3c".into(),
        worktree: "~/src/app".into(),
        sandbox: "workspace-write".into(),
        busy: Some(("working".into(), 3)),
        hint: None,
    };
    let composer = Composer::default();
    let mut streaming = String::new();
    let mut viewport = Vec::new();
    for (i, chunk) in ANSWER.repeat(4).as_bytes().chunks(16).enumerate() {
        streaming.push_str(std::str::from_utf8(chunk).unwrap_or(""));
        let cell = Cell::Answer { text: streaming.clone(), done: false };
        let start = Instant::now();
        term.draw(|f| {
            let area = f.area();
            let (rows, _) = composer.render(usize::from(area.width));
            let live = render::lines(&cell, usize::from(area.width), i);
            let room = usize::from(area.height).saturating_sub(rows.len() + 1);
            let tail: Vec<Line<'static>> = live.iter().skip(live.len().saturating_sub(room)).cloned().collect();
            f.render_widget(Paragraph::new(tail), Rect { height: area.height.saturating_sub(2), ..area });
            f.render_widget(Paragraph::new(rows), Rect { y: area.height - 2, height: 1, ..area });
            f.render_widget(
                Paragraph::new(views::status_line(&status, i, usize::from(area.width))),
                Rect { y: area.height - 1, height: 1, ..area },
            );
        })
        .unwrap_or_else(|e| panic!("{e}"));
        viewport.push(start.elapsed());
    }
    viewport.sort();
    black_box(&cells);

    println!("transcript: {CELLS} cells at 120 x 40");
    println!("  pager open (a page up from the end): {:.1} ms", open.as_secs_f64() * 1000.0);
    println!("  pager Home (every cell wrapped once): {:.1} ms", home.as_secs_f64() * 1000.0);
    println!(
        "  pager frame while scrolling: p50 {}, p99 {} ({} frames)",
        micros(percentile(&frames, 0.5)),
        micros(percentile(&frames, 0.99)),
        frames.len()
    );
    println!(
        "  viewport frame while an answer streams: p50 {}, p99 {} ({} frames, answer up to {} bytes)",
        micros(percentile(&viewport, 0.5)),
        micros(percentile(&viewport, 0.99)),
        viewport.len(),
        streaming.len()
    );
    println!(
        "  memory: transcript {:.1} MiB, pager's kept lines after Home {:.1} MiB",
        after_cells.saturating_sub(before) as f64 / 1024.0,
        after_pager.saturating_sub(after_cells) as f64 / 1024.0
    );
}
