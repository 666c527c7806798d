//! The composer: a multi-line text editor with a cursor and a history of sent prompts. Keys are
//! the application's business; this is the text, its editing operations and its drawing (rows
//! wrapped by width, and where the cursor is on them).

use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthChar;

/// The prompt before the first row.
const PROMPT: &str = "› ";

/// The text being written.
#[derive(Clone, Debug)]
pub struct Composer {
    lines: Vec<Vec<char>>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// Where in the history Up/Down is, and the draft it left.
    browsing: Option<(usize, String)>,
}

impl Default for Composer {
    fn default() -> Self {
        Composer::new(Vec::new())
    }
}

impl Composer {
    /// An empty composer with `history` (oldest first) for Up/Down.
    pub fn new(history: Vec<String>) -> Self {
        Composer { lines: vec![Vec::new()], row: 0, col: 0, history, browsing: None }
    }

    /// The text.
    pub fn text(&self) -> String {
        self.lines.iter().map(|l| l.iter().collect::<String>()).collect::<Vec<_>>().join("\n")
    }

    /// Whether nothing is written.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// The cursor: row and column (in characters).
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Replaces the text; the cursor goes to its end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(|l| l.chars().collect()).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].len();
    }

    /// Inserts text at the cursor (a paste: newlines stay newlines, nothing is sent).
    pub fn insert_str(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for c in text.chars() {
            if c == '\n' {
                self.newline();
            } else if c == '\t' {
                self.insert_str("    ");
            } else if !c.is_control() {
                self.lines[self.row].insert(self.col, c);
                self.col += 1;
            }
        }
    }

    /// Inserts one character.
    pub fn insert_char(&mut self, c: char) {
        self.insert_str(c.encode_utf8(&mut [0; 4]));
    }

    /// Breaks the line at the cursor.
    pub fn newline(&mut self) {
        let rest = self.lines[self.row].split_off(self.col);
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    /// Deletes the character before the cursor (joining lines at a line start).
    pub fn backspace(&mut self) {
        if self.col > 0 {
            self.col -= 1;
            self.lines[self.row].remove(self.col);
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].len();
            self.lines[self.row].extend(line);
        }
    }

    /// Deletes the character under the cursor (joining lines at a line end).
    pub fn delete(&mut self) {
        if self.col < self.lines[self.row].len() {
            self.lines[self.row].remove(self.col);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].extend(next);
        }
    }

    /// Moves left, to the previous line's end at a line start.
    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].len();
        }
    }

    /// Moves right, to the next line's start at a line end.
    pub fn right(&mut self) {
        if self.col < self.lines[self.row].len() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// To the line's start.
    pub fn home(&mut self) {
        self.col = 0;
    }

    /// To the line's end.
    pub fn end(&mut self) {
        self.col = self.lines[self.row].len();
    }

    /// Up a line; on the first line, the previous prompt of the history.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.lines[self.row].len());
            return;
        }
        let at = match &self.browsing {
            Some((i, _)) => *i,
            None => self.history.len(),
        };
        if at == 0 {
            return;
        }
        if self.browsing.is_none() {
            self.browsing = Some((at, self.text()));
        }
        let previous = self.history[at - 1].clone();
        self.browsing = self.browsing.take().map(|(_, draft)| (at - 1, draft));
        self.set_text(&previous);
        self.row = 0;
        self.col = self.col.min(self.lines[0].len());
    }

    /// Down a line; on the last line, the next prompt of the history (then the draft).
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.lines[self.row].len());
            return;
        }
        let Some((at, draft)) = self.browsing.take() else { return };
        if at + 1 < self.history.len() {
            let next = self.history[at + 1].clone();
            self.browsing = Some((at + 1, draft));
            self.set_text(&next);
        } else {
            self.set_text(&draft);
        }
    }

    /// Takes the text to send: the composer empties and the text joins the history (unless it
    /// repeats the last entry).
    pub fn take(&mut self) -> String {
        // An Enter typed with the text (taken for a paste's new line) or trailing spaces are
        // no part of the message.
        let text = self.text().trim_end().to_string();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        *self = Composer { history: std::mem::take(&mut self.history), ..Composer::default() };
        text
    }

    /// The word that ends at the cursor (after the last space before it).
    pub fn word_before_cursor(&self) -> String {
        let line = &self.lines[self.row][..self.col];
        let start = line.iter().rposition(|c| c.is_whitespace()).map_or(0, |i| i + 1);
        line[start..].iter().collect()
    }

    /// Replaces the word that ends at the cursor with `with`.
    pub fn replace_word_before_cursor(&mut self, with: &str) {
        let n = self.word_before_cursor().chars().count();
        for _ in 0..n {
            self.backspace();
        }
        self.insert_str(with);
    }

    /// The history, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// The rows at `width` columns (wrapped by character, after a `› ` prompt) and the cursor's
    /// position on them (column, row).
    pub fn render(&self, width: usize) -> (Vec<Line<'static>>, (u16, u16)) {
        let width = width.max(4);
        let indent = PROMPT.chars().count();
        let mut rows: Vec<Line<'static>> = Vec::new();
        let mut cursor = (indent as u16, 0u16);
        for (r, line) in self.lines.iter().enumerate() {
            let mut row = String::new();
            let mut used = indent;
            let mut lead = if r == 0 { PROMPT.to_string() } else { " ".repeat(indent) };
            for (c, ch) in line.iter().enumerate() {
                if r == self.row && c == self.col {
                    cursor = (used as u16, rows.len() as u16);
                }
                let w = ch.width().unwrap_or(0);
                if used + w > width {
                    rows.push(row_line(&lead, &row));
                    lead = " ".repeat(indent);
                    row.clear();
                    used = indent;
                    if r == self.row && c == self.col {
                        cursor = (used as u16, rows.len() as u16);
                    }
                }
                row.push(*ch);
                used += w;
            }
            if r == self.row && self.col >= line.len() {
                if used >= width {
                    rows.push(row_line(&lead, &row));
                    lead = " ".repeat(indent);
                    row.clear();
                    used = indent;
                }
                cursor = (used as u16, rows.len() as u16);
            }
            rows.push(row_line(&lead, &row));
        }
        (rows, cursor)
    }
}

fn row_line(lead: &str, text: &str) -> Line<'static> {
    Line::from(vec![Span::styled(lead.to_string(), Style::new().fg(Color::Magenta)), Span::raw(text.to_string())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_moves_across_lines() {
        let mut c = Composer::default();
        c.insert_str("first\nsecond");
        assert_eq!(c.text(), "first\nsecond");
        assert_eq!(c.cursor(), (1, 6));
        c.home();
        c.backspace();
        assert_eq!(c.text(), "firstsecond");
        assert_eq!(c.cursor(), (0, 5));
        c.newline();
        c.left();
        c.delete();
        assert_eq!(c.text(), "firstsecond");
        c.insert_str("a\r\nb\tc\u{7}");
        assert_eq!(c.text(), "firsta\nb    csecond", "CRLF is a newline, tabs are spaces, controls are dropped");
    }

    #[test]
    fn up_and_down_walk_the_history_and_keep_the_draft() {
        let mut c = Composer::new(vec!["one".into(), "two\nlines".into()]);
        c.insert_str("draft");
        c.up();
        assert_eq!(c.text(), "two\nlines");
        c.down();
        c.down();
        assert_eq!(c.text(), "draft", "past the newest entry the draft comes back");
        c.up();
        c.up();
        c.up();
        assert_eq!(c.text(), "one");
        c.up();
        assert_eq!(c.text(), "one", "the oldest stays");
        assert_eq!(c.take(), "one");
        assert!(c.is_empty());
        assert_eq!(c.history(), ["one", "two\nlines", "one"], "sent again, it is the newest");
        c.insert_str("one");
        c.take();
        assert_eq!(c.history(), ["one", "two\nlines", "one"], "a repeat of the newest entry is kept once");
    }

    #[test]
    fn the_word_at_the_cursor_can_be_completed() {
        let mut c = Composer::default();
        c.insert_str("look at @src/ma");
        assert_eq!(c.word_before_cursor(), "@src/ma");
        c.replace_word_before_cursor("@src/main.rs ");
        assert_eq!(c.text(), "look at @src/main.rs ");
        assert_eq!(c.word_before_cursor(), "");
    }

    #[test]
    fn rows_wrap_and_the_cursor_follows() {
        let mut c = Composer::default();
        c.insert_str("abcdefgh\nxy");
        let (rows, cursor) = c.render(8);
        let text: Vec<String> = rows.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect();
        assert_eq!(text, ["› abcdef", "  gh", "  xy"]);
        assert_eq!(cursor, (4, 2));
        c.up();
        c.home();
        assert_eq!(c.render(8).1, (2, 0));
        for _ in 0..7 {
            c.right();
        }
        assert_eq!(c.render(8).1, (3, 1), "after g, on the wrapped row");
    }
}
