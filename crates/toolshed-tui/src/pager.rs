//! The whole transcript on the alternate screen (PageUp or Ctrl-T): every cell wrapped at the
//! terminal's current width, scrolled with PageUp/PageDown, the arrows, Home/End and the mouse
//! wheel; `e` expands every tool call's output. Finished cells are drawn once per width and
//! kept, so a frame costs what the screen shows, not the length of the transcript.

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::cell::Cell;
use crate::render;

/// Lines a turn of the mouse wheel scrolls.
const WHEEL_LINES: usize = 3;

/// Where the pager stands.
#[derive(Debug)]
pub struct Pager {
    /// Lines the view is scrolled up from the bottom of the transcript.
    up: usize,
    /// Lines a page scrolls (the screen's height less the status row).
    page: usize,
    /// Whether tool calls show their whole output.
    expand: bool,
    /// The lines of finished cells at `width`, wrapped as the view reached them.
    cache: Vec<Option<Vec<Line<'static>>>>,
    width: usize,
}

impl Pager {
    /// A pager scrolled `page` lines up from the bottom (the rows above the viewport the
    /// person just left).
    pub fn new(page: usize) -> Pager {
        Pager { up: page, page: page.max(1), expand: false, cache: Vec::new(), width: 0 }
    }

    /// Takes in a key; false when the pager is to close.
    pub fn key(&mut self, key: KeyEvent) -> bool {
        let page = self.page;
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return false,
            KeyCode::PageUp | KeyCode::Char('b') => self.scroll_up(page),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll_down(page),
            KeyCode::Up | KeyCode::Char('k') => self.scroll_up(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll_down(1),
            KeyCode::Home | KeyCode::Char('g') => self.up = usize::MAX,
            KeyCode::End | KeyCode::Char('G') => self.up = 0,
            KeyCode::Char('e') => {
                self.expand = !self.expand;
                self.cache.clear();
            }
            _ => {}
        }
        true
    }

    /// Takes in a mouse event: the wheel scrolls.
    pub fn mouse(&mut self, mouse: MouseEvent) {
        match mouse.kind {
            MouseEventKind::ScrollUp => self.scroll_up(WHEEL_LINES),
            MouseEventKind::ScrollDown => self.scroll_down(WHEEL_LINES),
            _ => {}
        }
    }

    fn scroll_up(&mut self, lines: usize) {
        self.up = self.up.saturating_add(lines);
    }

    fn scroll_down(&mut self, lines: usize) {
        self.up = self.up.saturating_sub(lines);
    }

    /// Draws the part of `cells` scrolled to, and a status row. The first `stable` cells are
    /// finished (their lines are kept); `frame` picks the spinner frame of running calls.
    pub fn draw(&mut self, f: &mut Frame<'_>, cells: &[Cell], stable: usize, frame: usize) {
        let area = f.area();
        let (lines, status) = self.view(cells, stable, frame, area.width, area.height);
        let height = area.height.saturating_sub(1);
        f.render_widget(Paragraph::new(lines), Rect { height, ..area });
        f.render_widget(Paragraph::new(status), Rect { y: area.y + height, height: area.height.min(1), ..area });
    }

    /// The lines shown on a `width` × `height` screen, and the status row under them. Cells
    /// are wrapped from the bottom up as far as the view reaches, so opening the pager on a
    /// long transcript costs a screenful, and the lines of finished cells are kept.
    pub fn view(
        &mut self,
        cells: &[Cell],
        stable: usize,
        frame: usize,
        width: u16,
        height: u16,
    ) -> (Vec<Line<'static>>, Line<'static>) {
        let width = usize::from(width);
        let rows = usize::from(height.saturating_sub(1));
        self.page = rows.max(1);
        if width != self.width {
            self.cache.clear();
            self.width = width;
        }
        let stable = stable.min(cells.len());
        self.cache.resize(stable, None);
        // Walk up from the last cell until the lines cover the scroll position and a screen.
        let need = self.up.saturating_add(rows);
        let mut fresh: Vec<(usize, Vec<Line<'static>>)> = Vec::new();
        let mut walked = 0usize;
        let mut first = cells.len();
        while first > 0 && walked < need {
            first -= 1;
            walked += if first < stable {
                if self.cache[first].is_none() {
                    self.cache[first] = Some(self.lines(cells, first, frame));
                }
                self.cache[first].as_ref().map_or(0, Vec::len)
            } else {
                let lines = self.lines(cells, first, frame);
                let n = lines.len();
                fresh.push((first, lines));
                n
            };
        }
        self.up = self.up.min(walked.saturating_sub(rows));
        let end = walked - self.up;
        let start = end.saturating_sub(rows);
        let mut shown = Vec::with_capacity(rows);
        let mut at = 0;
        let mut top_cell = first;
        for i in first..cells.len() {
            let lines: &[Line<'static>] = if i < stable {
                self.cache[i].as_deref().unwrap_or_default()
            } else {
                fresh.iter().find(|(j, _)| *j == i).map_or(&[], |(_, l)| l.as_slice())
            };
            let next = at + lines.len();
            if next > start && at < end {
                if shown.is_empty() {
                    top_cell = i;
                }
                shown.extend(lines[start.saturating_sub(at)..lines.len().min(end - at)].iter().cloned());
            }
            if next >= end {
                break;
            }
            at = next;
        }
        let expand = if self.expand { "collapse" } else { "expand" };
        let place = if self.up == 0 { " (the end)" } else { "" };
        let cell = format!("cell {} of {}{place}", (top_cell + 1).min(cells.len()), cells.len());
        let position = format!("transcript · {cell}");
        let (scroll, expand) = ("PgUp PgDn ↑↓ wheel: scroll", format!("e: {expand} output"));
        // What does not fit goes, the way back last.
        let text = [
            vec![position.as_str(), scroll, &expand, "q: back"],
            vec![&position, &expand, "q: back"],
            vec![&position, "q: back"],
            vec![&cell, "q: back"],
            vec!["q: back"],
        ]
        .into_iter()
        .map(|parts| format!(" {} ", parts.join(" · ")))
        .find(|text| text.chars().count() <= width)
        .unwrap_or_default();
        let status = Line::from(Span::styled(text, Style::new().add_modifier(Modifier::REVERSED)));
        (shown, status)
    }

    fn lines(&self, cells: &[Cell], i: usize, frame: usize) -> Vec<Line<'static>> {
        let previous = i.checked_sub(1).and_then(|p| cells.get(p));
        match &cells[i] {
            Cell::Tool(tool) if self.expand && !tool.expanded => {
                let mut open = tool.clone();
                open.expanded = true;
                render::spaced(previous, &Cell::Tool(open), self.width, frame)
            }
            cell => render::spaced(previous, cell, self.width, frame),
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::KeyModifiers;

    use super::*;

    fn notices(n: usize) -> Vec<Cell> {
        (0..n).map(|i| Cell::Notice { text: format!("note {i}"), error: false }).collect()
    }

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn opens_a_page_up_and_scrolls_within_the_transcript() {
        let cells = notices(100);
        let mut pager = Pager::new(9);
        // 10 rows: 9 of transcript and the status row.
        let (shown, status) = pager.view(&cells, 100, 0, 40, 10);
        assert_eq!(text(&shown).first().map(String::as_str), Some("· note 82"));
        assert_eq!(text(&shown).last().map(String::as_str), Some("· note 90"));
        let status = text(&[status]);
        assert!(status[0].contains("cell 83 of 100"), "{status:?}");
        pager.key(key(KeyCode::End));
        let (shown, status) = pager.view(&cells, 100, 0, 40, 10);
        assert_eq!(text(&shown).last().map(String::as_str), Some("· note 99"));
        assert!(text(&[status])[0].contains("(the end)"));
        pager.key(key(KeyCode::Home));
        let (shown, _) = pager.view(&cells, 100, 0, 40, 10);
        assert_eq!(text(&shown).first().map(String::as_str), Some("· note 0"));
        assert_eq!(shown.len(), 9);
        pager.mouse(MouseEvent { kind: MouseEventKind::ScrollDown, column: 0, row: 0, modifiers: KeyModifiers::NONE });
        let (shown, _) = pager.view(&cells, 100, 0, 40, 10);
        assert_eq!(text(&shown).first().map(String::as_str), Some("· note 3"));
        assert!(!pager.key(key(KeyCode::Char('q'))));
    }

    #[test]
    fn opening_wraps_only_the_cells_the_screen_reaches() {
        let cells = notices(5_000);
        let mut pager = Pager::new(9);
        pager.view(&cells, 5_000, 0, 40, 10);
        let kept = pager.cache.iter().filter(|c| c.is_some()).count();
        assert_eq!(kept, 18, "a page up and a screen");
        // Unfinished cells (past `stable`) are drawn fresh, never kept.
        let (shown, _) = pager.view(&cells, 4_990, 0, 40, 10);
        assert_eq!(text(&shown).last().map(String::as_str), Some("· note 4990"));
        assert_eq!(pager.cache.len(), 4_990);
    }

    #[test]
    fn a_narrower_screen_wraps_the_kept_cells_again() {
        let cells = vec![Cell::Notice { text: "one two three four five six".into(), error: false }];
        let mut pager = Pager::new(5);
        let (wide, _) = pager.view(&cells, 1, 0, 80, 10);
        let (narrow, _) = pager.view(&cells, 1, 0, 12, 10);
        assert_eq!((wide.len(), narrow.len()), (1, 3), "{:?}", text(&narrow));
    }

    #[test]
    fn e_expands_tool_output_the_viewport_cuts() {
        let output: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let cell = Cell::Tool(crate::cell::ToolCell {
            state: crate::cell::ToolState::Done,
            output,
            duration_ms: Some(3),
            ..crate::cell::ToolCell::new("c", "bash", r#"{"command":"seq 40"}"#)
        });
        let cells = vec![cell];
        let mut pager = Pager::new(0);
        let (collapsed, _) = pager.view(&cells, 1, 0, 100, 100);
        pager.key(key(KeyCode::Char('e')));
        let (expanded, status) = pager.view(&cells, 1, 0, 100, 100);
        assert!(collapsed.len() < 10 && expanded.len() >= 42, "{} {}", collapsed.len(), expanded.len());
        assert!(text(&expanded).iter().any(|l| l.contains("line 0")));
        assert!(text(&[status])[0].contains("collapse"));
        // The way back is said at any width.
        for width in [30, 60, 80, 120] {
            let (_, status) = Pager::new(10).view(&cells, 1, 0, width, 20);
            let status = text(&[status]).remove(0);
            assert!(
                status.ends_with(" q: back ") && status.chars().count() <= usize::from(width),
                "{width}: {status:?}"
            );
        }
    }
}
