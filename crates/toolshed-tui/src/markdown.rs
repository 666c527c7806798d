//! Markdown (CommonMark with tables, strikethrough and task lists) turned into styled lines at
//! a width: headings, emphasis, inline code, links (their address shown after the text), lists
//! with hanging indents, block quotes, rules, fenced code and tables. No marker characters
//! (`**`, `#`, fences) reach the screen. Incomplete Markdown (a stream cut mid-way) renders as
//! far as it goes.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::wrap::{self, wrap};

/// The style of inline code and code blocks.
pub const CODE: Style = Style::new().fg(Color::Cyan);
/// The style of a link's text.
const LINK: Style = Style::new().fg(Color::Blue).add_modifier(Modifier::UNDERLINED);
/// The style of what is shown dimmed (link addresses, code block languages, table rules).
pub const DIM: Style = Style::new().add_modifier(Modifier::DIM);

/// `markdown` as lines at most `width` columns wide.
pub fn render(markdown: &str, width: usize) -> Vec<Line<'static>> {
    let mut r = Renderer { width: width.max(8), ..Renderer::default() };
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(markdown, options) {
        r.event(event);
    }
    r.flush();
    while r.out.last().is_some_and(|l| l.spans.iter().all(|s| s.content.trim().is_empty())) {
        r.out.pop();
    }
    r.out
}

/// A container the current text is inside: a block quote or a list item.
struct Container {
    /// The prefix of the container's first row (a bullet, a number).
    first: String,
    /// The prefix of its other rows (the hanging indent).
    rest: String,
    /// Whether the first row has been written.
    used: bool,
    style: Style,
}

#[derive(Default)]
struct Renderer {
    width: usize,
    out: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    containers: Vec<Container>,
    /// Numbers of the open lists: `Some(next)` for ordered ones.
    lists: Vec<Option<u64>>,
    code: Option<(String, String)>,
    link: Option<String>,
    link_text: String,
    table: Option<Table>,
    /// Whether the last thing written was a blank line (or nothing).
    blank: bool,
}

#[derive(Default)]
struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    header_rows: usize,
    cell: Vec<Span<'static>>,
    row: Vec<Vec<Span<'static>>>,
}

impl Renderer {
    fn style(&self) -> Style {
        self.styles.iter().fold(Style::new(), |acc, s| acc.patch(*s))
    }

    fn push_text(&mut self, text: &str, style: Style) {
        if let Some(table) = &mut self.table {
            table.cell.push(Span::styled(text.to_string(), style));
        } else {
            self.spans.push(Span::styled(text.to_string(), style));
        }
    }

    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let (mut first, mut rest) = (Vec::new(), Vec::new());
        for c in &mut self.containers {
            first.push(Span::styled(if c.used { c.rest.clone() } else { c.first.clone() }, c.style));
            rest.push(Span::styled(c.rest.clone(), c.style));
            c.used = true;
        }
        (first, rest)
    }

    /// Writes the pending text as a wrapped paragraph row group.
    fn flush(&mut self) {
        if self.spans.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let (first, rest) = self.prefixes();
        self.out.extend(wrap(&spans, self.width, &first, &rest));
        self.blank = false;
    }

    fn blank_line(&mut self) {
        if !self.blank && !self.out.is_empty() {
            let (_, rest) = self.prefixes();
            let bars: Vec<Span<'static>> =
                rest.into_iter().map(|s| Span::styled(s.content.trim_end().to_string(), s.style)).collect();
            self.out.push(Line::from(bars));
            self.blank = true;
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(&text);
                } else {
                    if self.link.is_some() {
                        self.link_text.push_str(&text);
                    }
                    let style = self.style();
                    self.push_text(&text, style);
                }
            }
            Event::Code(code) => {
                let style = self.style().patch(CODE);
                self.push_text(&code, style);
            }
            Event::SoftBreak => {
                let style = self.style();
                self.push_text(" ", style);
            }
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.blank_line();
                self.out.push(Line::from(Span::styled("─".repeat(self.width.min(40)), DIM)));
                self.blank = false;
                self.blank_line();
            }
            Event::TaskListMarker(done) => self.push_text(if done { "[x] " } else { "[ ] " }, Style::new()),
            Event::Html(html) | Event::InlineHtml(html) => self.push_text(&html, DIM),
            Event::InlineMath(text) | Event::DisplayMath(text) => self.push_text(&text, CODE),
            Event::FootnoteReference(label) => self.push_text(&format!("[{label}]"), DIM),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.flush();
                self.blank_line();
                let style = match level {
                    HeadingLevel::H1 => Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
                    HeadingLevel::H2 => Style::new().add_modifier(Modifier::BOLD),
                    _ => Style::new().add_modifier(Modifier::BOLD | Modifier::ITALIC),
                };
                self.styles.push(style);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.containers.push(Container { first: "│ ".into(), rest: "│ ".into(), used: false, style: DIM });
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.blank_line();
                let lang = match kind {
                    CodeBlockKind::Fenced(lang) => lang.split_whitespace().next().unwrap_or_default().to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank_line();
                }
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                let rest = " ".repeat(wrap::width(&marker));
                self.containers.push(Container { first: marker, rest, used: false, style: Style::new() });
            }
            Tag::Emphasis => self.styles.push(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.styles.push(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.styles.push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.styles.push(LINK);
                self.link = Some(dest_url.to_string());
                self.link_text.clear();
            }
            Tag::Table(_) => {
                self.flush();
                self.blank_line();
                self.table = Some(Table::default());
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => {}
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush();
                // Tight list items have no paragraphs; a loose one's paragraphs are apart.
                self.blank_line();
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
                self.blank_line();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                // The quote's last paragraph left a barred blank row: the quote ends before it.
                if self.blank {
                    self.out.pop();
                    self.blank = false;
                }
                self.containers.pop();
                self.blank = false;
                self.blank_line();
            }
            TagEnd::CodeBlock => {
                let (lang, code) = self.code.take().unwrap_or_default();
                let lang_for_highlight = lang.clone();
                let (first, rest) = self.prefixes();
                let mut prefix = first;
                if !lang.is_empty() {
                    let mut label = prefix.clone();
                    label.push(Span::styled(lang, DIM));
                    self.out.push(Line::from(label));
                    prefix = rest.clone();
                }
                let gutter = Span::styled("  ", Style::new());
                let mut highlighter = crate::highlight::Highlighter::for_language(&lang_for_highlight);
                for line in code.trim_end_matches('\n').split('\n') {
                    let mut p = prefix.clone();
                    p.push(gutter.clone());
                    let mut r = rest.clone();
                    r.push(gutter.clone());
                    let line = line.replace('\t', "    ");
                    let spans = match &mut highlighter {
                        Some(h) => h.line(&line),
                        None => vec![Span::styled(line, CODE)],
                    };
                    self.out.extend(wrap(&spans, self.width, &p, &r));
                    prefix = rest.clone();
                }
                self.blank = false;
                self.blank_line();
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank_line();
                }
            }
            TagEnd::Item => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some(url) = self.link.take()
                    && !url.is_empty()
                    && url != self.link_text
                    && !url.starts_with('#')
                {
                    self.push_text(&format!(" ({url})"), DIM);
                }
            }
            TagEnd::TableCell => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    t.row.push(cell);
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                    if tag == TagEnd::TableHead {
                        t.header_rows = t.rows.len();
                    }
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table(t);
                }
                self.blank = false;
                self.blank_line();
            }
            _ => {}
        }
    }

    /// A table: columns as wide as their widest cell, shrunk to fit, cells cut with `…`.
    fn table(&mut self, t: Table) {
        let columns = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let text = |cell: &[Span<'static>]| cell.iter().map(|s| s.content.as_ref()).collect::<String>();
        let mut widths: Vec<usize> = (0..columns)
            .map(|c| {
                t.rows.iter().filter_map(|r| r.get(c)).map(|cell| wrap::width(&text(cell))).max().unwrap_or(0).max(1)
            })
            .collect();
        let room = self.width.saturating_sub(3 * (columns - 1));
        while widths.iter().sum::<usize>() > room && widths.iter().any(|w| *w > 3) {
            let widest = (0..columns).max_by_key(|&c| widths[c]).unwrap_or(0);
            widths[widest] -= 1;
        }
        let (first, _) = self.prefixes();
        for (i, row) in t.rows.iter().enumerate() {
            let mut line = first.clone();
            for (c, width) in widths.iter().enumerate() {
                if c > 0 {
                    line.push(Span::styled(" │ ", DIM));
                }
                let cell = row.get(c).map(Vec::as_slice).unwrap_or_default();
                let mut used = 0;
                for span in cell {
                    let mut content = String::new();
                    for ch in span.content.chars() {
                        let w = wrap::width(ch.encode_utf8(&mut [0; 4]));
                        if used + w > *width {
                            break;
                        }
                        content.push(ch);
                        used += w;
                    }
                    let cut = content.len() < span.content.len();
                    let style = if i < t.header_rows { span.style.add_modifier(Modifier::BOLD) } else { span.style };
                    line.push(Span::styled(content, style));
                    if cut {
                        if let Some(last) = line.last_mut() {
                            let mut s = last.content.to_string();
                            s.pop();
                            s.push('…');
                            last.content = s.into();
                        }
                        used = *width;
                        break;
                    }
                }
                if c + 1 < columns {
                    line.push(Span::raw(" ".repeat(width - used)));
                }
            }
            self.out.push(Line::from(line));
            if i + 1 == t.header_rows {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                let mut line = first.clone();
                line.push(Span::styled(rule.join("─┼─"), DIM));
                self.out.push(Line::from(line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn plain(lines: &[Line<'static>]) -> String {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn markers_never_reach_the_screen() {
        let md = "# Title\n\nSome **bold**, *italic*, `code` and ~~gone~~ text with a [link](https://example.com).\n\n- one\n- two\n  - nested item that is long enough to wrap around\n\n1. first\n2. second\n\n> quoted\n> text\n\n```rust\nfn main() {}\n```\n\n---\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
        let text = plain(&render(md, 30));
        for marker in ["**", "# ", "`", "~~", "```", "[link]", "|---"] {
            assert!(!text.contains(marker), "{marker:?} shown:\n{text}");
        }
        insta::assert_snapshot!(text);
    }

    #[test]
    fn styles_are_kept_on_their_words() {
        let lines = render("plain **bold** `code`", 40);
        let spans = &lines[0].spans;
        let bold = spans.iter().find(|s| s.content == "bold").unwrap();
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
        let code = spans.iter().find(|s| s.content == "code").unwrap();
        assert_eq!(code.style.fg, Some(Color::Cyan));
    }

    #[test]
    fn an_unfinished_stream_renders_as_far_as_it_goes() {
        let text = plain(&render("Here is code:\n\n```py\nprint(1)\nprin", 40));
        assert!(text.contains("print(1)") && text.contains("prin"), "{text}");
        assert!(!text.contains("```"));
    }
}
