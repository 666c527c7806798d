//! Word wrapping of styled text to a width in terminal columns, so a cell knows how many rows
//! it takes before it is drawn (inline output must know its height).

use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// The columns `text` takes.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// One logical line of `spans` wrapped to `width` columns: breaks at spaces, and inside a word
/// only when the word alone is wider than the line. The first row starts with `first`, the
/// others with `rest` (list bullets and their hanging indent, quote bars). Trailing spaces at a
/// break are dropped. Always at least one row.
pub fn wrap(
    spans: &[Span<'static>],
    width: usize,
    first: &[Span<'static>],
    rest: &[Span<'static>],
) -> Vec<Line<'static>> {
    let width = width.max(1);
    let prefix_width = |p: &[Span<'static>]| p.iter().map(|s| self::width(&s.content)).sum::<usize>();
    let mut rows: Vec<Line<'static>> = Vec::new();
    let mut row: Vec<Span<'static>> = first.to_vec();
    let mut used = prefix_width(first);
    let mut row_has_text = false;
    let new_row = |rows: &mut Vec<Line<'static>>, row: &mut Vec<Span<'static>>, used: &mut usize| {
        trim_end(row);
        rows.push(Line::from(std::mem::take(row)));
        *row = rest.to_vec();
        *used = prefix_width(rest);
    };
    for span in spans {
        for piece in split_keeping_spaces(&span.content) {
            let piece_width = self::width(piece);
            let is_space = piece.chars().all(char::is_whitespace);
            if is_space {
                // Spaces at the start of a wrapped row are dropped; elsewhere kept if they fit.
                if !row_has_text && !rows.is_empty() {
                    continue;
                }
                if used + piece_width <= width {
                    row.push(Span::styled(piece.to_string(), span.style));
                    used += piece_width;
                }
                continue;
            }
            if used + piece_width > width && row_has_text {
                new_row(&mut rows, &mut row, &mut used);
                row_has_text = false;
            }
            if used + piece_width <= width {
                row.push(Span::styled(piece.to_string(), span.style));
                used += piece_width;
                row_has_text = true;
                continue;
            }
            // A word wider than a whole row: cut it by characters.
            let mut chunk = String::new();
            for c in piece.chars() {
                let w = self::width(c.encode_utf8(&mut [0; 4]));
                if used + self::width(&chunk) + w > width && (!chunk.is_empty() || row_has_text) {
                    if !chunk.is_empty() {
                        row.push(Span::styled(std::mem::take(&mut chunk), span.style));
                    }
                    new_row(&mut rows, &mut row, &mut used);
                    row_has_text = false;
                }
                chunk.push(c);
            }
            if !chunk.is_empty() {
                used += self::width(&chunk);
                row.push(Span::styled(chunk, span.style));
                row_has_text = true;
            }
        }
    }
    trim_end(&mut row);
    rows.push(Line::from(row));
    rows
}

/// Splits into runs of spaces and runs of anything else.
fn split_keeping_spaces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if in_space.is_some_and(|s| s != space) {
            out.push(&text[start..i]);
            start = i;
        }
        in_space = Some(space);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

fn trim_end(row: &mut Vec<Span<'static>>) {
    loop {
        let len = row.len();
        let Some(last) = row.last_mut() else { return };
        let trimmed = last.content.trim_end().to_string();
        if trimmed.is_empty() && len > 1 {
            row.pop();
        } else {
            last.content = trimmed.into();
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn words_wrap_at_spaces_with_a_hanging_indent() {
        let spans = [Span::raw("the quick brown fox jumps over the lazy dog")];
        let rows = wrap(&spans, 16, &[Span::raw("• ")], &[Span::raw("  ")]);
        assert_eq!(texts(&rows), ["• the quick", "  brown fox", "  jumps over the", "  lazy dog"]);
    }

    #[test]
    fn a_word_wider_than_the_row_is_cut_and_wide_characters_count_double() {
        let rows = wrap(&[Span::raw("abcdefghij")], 4, &[], &[]);
        assert_eq!(texts(&rows), ["abcd", "efgh", "ij"]);
        let rows = wrap(&[Span::raw("日本語のテキスト")], 6, &[], &[]);
        assert_eq!(texts(&rows), ["日本語", "のテキ", "スト"]);
        assert!(rows.iter().all(|r| width(&r.spans.iter().map(|s| s.content.as_ref()).collect::<String>()) <= 6));
    }

    #[test]
    fn styles_survive_a_break_and_empty_text_is_one_row() {
        use ratatui::style::{Modifier, Style};
        let bold = Style::new().add_modifier(Modifier::BOLD);
        let rows = wrap(&[Span::raw("plain "), Span::styled("bold words here", bold)], 10, &[], &[]);
        assert_eq!(texts(&rows), ["plain bold", "words here"]);
        assert_eq!(rows[1].spans[0].style, bold);
        assert_eq!(wrap(&[], 10, &[], &[]).len(), 1);
    }
}
