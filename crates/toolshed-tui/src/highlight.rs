//! Syntax highlighting of code blocks (syntect's default syntaxes and a dark theme), loaded on
//! the first code block that names a language it knows: a session without code pays nothing.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> &'static Theme {
    static THEME: OnceLock<Theme> = OnceLock::new();
    THEME.get_or_init(|| {
        let mut themes = ThemeSet::load_defaults().themes;
        themes.remove("base16-eighties.dark").or_else(|| themes.into_values().next()).unwrap_or_default()
    })
}

/// Highlights the lines of one code block, keeping state from line to line.
pub struct Highlighter {
    lines: HighlightLines<'static>,
}

impl Highlighter {
    /// A highlighter for `language` (a fence's info word: `rust`, `py`, `sh`...), or `None`
    /// when no syntax knows it.
    pub fn for_language(language: &str) -> Option<Highlighter> {
        if language.is_empty() {
            return None;
        }
        let set = syntaxes();
        let syntax = set.find_syntax_by_token(language).or_else(|| set.find_syntax_by_extension(language))?;
        Some(Highlighter { lines: HighlightLines::new(syntax, theme()) })
    }

    /// One line of code as coloured spans (the plain line if highlighting fails).
    pub fn line(&mut self, line: &str) -> Vec<Span<'static>> {
        let with_newline = format!("{line}\n");
        match self.lines.highlight_line(&with_newline, syntaxes()) {
            Ok(ranges) => ranges
                .into_iter()
                .map(|(style, text)| {
                    let mut s = Style::new().fg(Color::Rgb(style.foreground.r, style.foreground.g, style.foreground.b));
                    if style.font_style.contains(FontStyle::BOLD) {
                        s = s.add_modifier(Modifier::BOLD);
                    }
                    if style.font_style.contains(FontStyle::ITALIC) {
                        s = s.add_modifier(Modifier::ITALIC);
                    }
                    Span::styled(text.trim_end_matches('\n').to_string(), s)
                })
                .filter(|s| !s.content.is_empty())
                .collect(),
            Err(_) => vec![Span::styled(line.to_string(), crate::markdown::CODE)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_get_colours_and_unknown_ones_none() {
        let mut h = Highlighter::for_language("rust").unwrap();
        let spans = h.line("fn main() { let x = 1; }");
        let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "fn main() { let x = 1; }");
        let colours: std::collections::HashSet<_> = spans.iter().map(|s| s.style.fg).collect();
        assert!(colours.len() > 1, "keywords and names differ: {spans:?}");
        assert!(Highlighter::for_language("py").is_some());
        assert!(Highlighter::for_language("no-such-language").is_none());
        assert!(Highlighter::for_language("").is_none());
    }
}
