//! The inline viewport, kept exactly as tall as what it shows: the composer sits right below
//! the last line written, never under a band of empty rows. ratatui's inline viewport has a
//! height fixed when it is made, so a new height is a new viewport made at the old one's top.
//! toolshed knows that row, so making it asks the terminal nothing: a cursor-position query is
//! a round trip, slow over SSH, and a viewport that grows with a streamed answer is made again
//! for each new line.

use std::io::{self, Stdout};

use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::{Terminal, TerminalOptions, Viewport};

/// The terminal the application draws on.
pub type Term = Terminal<Placed>;

/// crossterm's backend, told once where the cursor is when toolshed itself has just put it
/// there; any other time the terminal is asked.
pub struct Placed {
    inner: CrosstermBackend<Stdout>,
    at: Option<Position>,
    /// Where the cursor was last put, until something else moves it.
    put: Option<Position>,
}

impl Placed {
    fn new(at: Option<Position>) -> Placed {
        Placed { inner: CrosstermBackend::new(io::stdout()), at, put: None }
    }

    fn moved(&mut self) {
        self.at = None;
        self.put = None;
    }
}

/// Erases the screen from row `top` down, a line at a time. Some terminals (tmux; VTE for a
/// whole-screen erase) keep what an erase from the top-left corner removes by scrolling it into
/// the scrollback, which would fill it with old frames of the viewport; erasing lines never
/// does.
fn erase_from(out: &mut impl io::Write, top: u16, rows: u16) -> io::Result<()> {
    use ratatui::crossterm::{cursor::MoveTo, queue, terminal::Clear, terminal::ClearType as Erase};
    for row in top..rows.max(top + 1) {
        queue!(out, MoveTo(0, row), Clear(Erase::CurrentLine))?;
    }
    queue!(out, MoveTo(0, top))?;
    out.flush()
}

/// Erases the screen from row `top` down (see [`erase_from`]), the cursor left at its start.
pub fn erase_below(top: u16) -> io::Result<()> {
    let rows = ratatui::crossterm::terminal::size()?.1;
    erase_from(&mut io::stdout(), top, rows)
}

impl Backend for Placed {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        self.moved();
        self.inner.draw(content)
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.moved();
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        match self.at.take() {
            Some(at) => Ok(at),
            None => self.inner.get_cursor_position(),
        }
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let position = position.into();
        self.at = None;
        self.put = Some(position);
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.moved();
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        // ratatui clears a viewport from its top-left corner down; at the screen's top row
        // that would push the old frame into the scrollback (see `erase_from`).
        let from = match (clear_type, self.put) {
            (ClearType::All, _) => Some(0),
            (ClearType::AfterCursor, Some(Position { x: 0, y })) => Some(y),
            _ => None,
        };
        if let Some(from) = from {
            let rows = self.inner.size()?.height;
            self.moved();
            erase_from(&mut self.inner, from, rows)?;
            self.put = Some(Position::new(0, from));
            return Ok(());
        }
        self.moved();
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }

    fn scroll_region_up(&mut self, region: std::ops::Range<u16>, line_count: u16) -> io::Result<()> {
        self.moved();
        self.inner.scroll_region_up(region, line_count)
    }

    fn scroll_region_down(&mut self, region: std::ops::Range<u16>, line_count: u16) -> io::Result<()> {
        self.moved();
        self.inner.scroll_region_down(region, line_count)
    }
}

/// A viewport of `height` rows at the cursor, wherever the terminal has it.
pub fn at_cursor(height: u16) -> io::Result<Term> {
    Terminal::with_options(Placed::new(None), TerminalOptions { viewport: Viewport::Inline(height.max(1)) })
}

/// A viewport of `height` rows whose top is row `top`, with everything from that row down
/// cleared first. Where the screen has no room below `top`, what is above scrolls up into the
/// scrollback, as a shell's output does.
pub fn at_row(top: u16, height: u16) -> io::Result<Term> {
    let mut backend = Placed::new(None);
    let rows = backend.size()?.height;
    erase_from(&mut backend.inner, top, rows)?;
    backend.at = Some(Position::new(0, top));
    Terminal::with_options(backend, TerminalOptions { viewport: Viewport::Inline(height.max(1)) })
}

/// Makes `term`'s viewport `height` rows tall, keeping its top.
pub fn fit(term: &mut Term, height: u16) -> io::Result<()> {
    let area = term.get_frame().area();
    let rows = term.size()?.height;
    let height = height.clamp(1, rows.max(1));
    if area.height != height {
        *term = at_row(area.y, height)?;
    }
    Ok(())
}

/// The most rows the viewport takes: two thirds of the screen, room for a question with its
/// diff above the composer, and the rest for what was written above.
pub fn max_height(rows: u16) -> u16 {
    (rows * 2 / 3).clamp(rows.min(12), 30).min(rows)
}
