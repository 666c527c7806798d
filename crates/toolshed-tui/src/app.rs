//! The terminal application: an inline viewport at the bottom of the terminal (the live cells,
//! an approval dialog, the composer and the status line); finished cells are written above it
//! into the terminal's own scrollback, so the transcript scrolls, copies and survives the way
//! the rest of the terminal does. The agent runs in tasks of its own; its events and questions
//! reach the loop through a channel ([`channel`]).

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event as Input, KeyCode, KeyEvent, KeyEventKind, KeyModifiers,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use ratatui::crossterm::{execute, terminal};
use ratatui::layout::Rect;
use ratatui::style::Color;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Widget};
use ratatui::{Frame, Terminal};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use toolshed_agent::{AgentError, Event, EventSink, LiveSession, Runtime, Trigger};
use toolshed_core::permission::{ApprovalRequest, Approver, Reply};
use toolshed_core::tool::BoxFuture;

use crate::cell::{Cell, ToolState, Transcript};
use crate::composer::Composer;
use crate::pager::Pager;
use crate::render;
use crate::screen::{self, Term};
use crate::views::{self, Status};

/// What reaches the loop from the agent.
pub enum Message {
    /// An event of the loop.
    Agent(Event),
    /// A permission question and where its answer goes.
    Ask(ApprovalRequest, oneshot::Sender<Reply>),
}

/// The event sink and the approver to build the runtime with, and the receiving end for
/// [`run`].
pub fn channel() -> (EventSink, Arc<dyn Approver>, mpsc::UnboundedReceiver<Message>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let events = tx.clone();
    let sink: EventSink = Arc::new(move |e: &Event| {
        let _ = events.send(Message::Agent(e.clone()));
    });
    (sink, Arc::new(TuiApprover(tx)), rx)
}

/// Puts each question to the application and waits for the answer (no answer: rejected).
struct TuiApprover(mpsc::UnboundedSender<Message>);

impl Approver for TuiApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, Reply> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            if self.0.send(Message::Ask(request.clone(), tx)).is_err() {
                return Reply::Reject(None);
            }
            rx.await.unwrap_or(Reply::Reject(None))
        })
    }
}

/// Opens a session for the application, locked for this process: stored session `id`, or a new
/// one (`None`), with agent and model; the previous session's lock is released once the next
/// is held. The error is for people.
pub type OpenSession = Box<dyn FnMut(Option<&str>, &str, &str) -> Result<Arc<LiveSession>, String> + Send>;

/// Checks that a model (`provider/model`) can be reached as configured; the error is for
/// people.
pub type CheckModel = Box<dyn Fn(&str) -> Result<(), String> + Send>;

/// What the application runs.
pub struct Setup {
    /// The agent runtime (built with [`channel`]'s sink and approver).
    pub runtime: Arc<Runtime>,
    /// The session.
    pub session: Arc<LiveSession>,
    /// [`channel`]'s receiver.
    pub messages: mpsc::UnboundedReceiver<Message>,
    /// What the status line starts with (worktree, sandbox...).
    pub status: Status,
    /// Prompts sent before, oldest first (Up recalls them).
    pub history: Vec<String>,
    /// What the session showed so far (a resumed session's transcript).
    pub transcript: Transcript,
    /// Opens the sessions `/new` and `/sessions` go on in.
    pub open: OpenSession,
    /// Checks the model `/model` switches to.
    pub check_model: CheckModel,
}

/// Raw mode, bracketed paste and disambiguated keys (Shift-Enter) while the application runs;
/// restored when dropped, even by a panic.
struct TerminalMode;

impl TerminalMode {
    fn enter() -> io::Result<TerminalMode> {
        modes_on()?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        Ok(TerminalMode)
    }
}

fn modes_on() -> io::Result<()> {
    terminal::enable_raw_mode()?;
    // Terminals without the keyboard protocol ignore the request; those with it report
    // Shift-Enter apart from Enter.
    execute!(
        io::stdout(),
        EnableBracketedPaste,
        PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
    )
}

fn restore() {
    let _ =
        execute!(io::stdout(), PopKeyboardEnhancementFlags, DisableBracketedPaste, ratatui::crossterm::cursor::Show);
    // Only from the pager's screen: leaving an alternate screen that was not entered still
    // restores the cursor saved last (tmux, xterm), which would put the shell's prompt there.
    if ALTERNATE_SCREEN.swap(false, std::sync::atomic::Ordering::SeqCst) {
        let _ = execute!(io::stdout(), event::DisableMouseCapture, terminal::LeaveAlternateScreen);
    }
    let _ = terminal::disable_raw_mode();
}

/// Whether the pager's alternate screen is open (for [`restore`], a panic's included).
static ALTERNATE_SCREEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether colours are off (`NO_COLOR` set and not empty, as no-color.org says).
fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Drops the colours of what was drawn, keeping bold, dim, italic and reverse.
fn strip_colors(buf: &mut Buffer) {
    for cell in &mut buf.content {
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}

/// Stops the process as Ctrl-Z does in a shell, with the terminal as it was before the
/// application; when the shell continues it (`fg`), the viewport is drawn again below what the
/// shell printed meanwhile.
fn suspend(term: &mut Term) -> io::Result<()> {
    term.clear()?;
    let top = term.get_frame().area().y;
    term.set_cursor_position((0, top))?;
    restore();
    // SAFETY: raise only sends a signal to this process; SIGTSTP's default action stops it until
    // SIGCONT, and the call returns after that.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    modes_on()?;
    let size = term.size()?;
    term.resize(Rect::new(0, 0, size.width, size.height))
}

impl Drop for TerminalMode {
    fn drop(&mut self) {
        restore();
    }
}

/// How the application ended.
pub struct Ended {
    /// The prompts of the composer's history, to keep.
    pub history: Vec<String>,
    /// The signal that ended it from outside (SIGTERM, SIGHUP), if one did: the process then
    /// exits with 128 and its number, as a shell reports a command a signal ended.
    pub signal: Option<i32>,
}

/// Runs the application until the user quits, or a signal ends it.
pub async fn run(setup: Setup) -> io::Result<Ended> {
    let Setup { runtime, session, mut messages, status, history, transcript, open, check_model } = setup;
    // Signals that end a session from outside (kill, a closed SSH connection) end it as /exit
    // does, with the terminal restored.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let _mode = TerminalMode::enter()?;
    // Two rows, the composer and the status line, below whatever the shell showed; it grows
    // with what it shows.
    let mut term = screen::at_cursor(2)?;
    let (input_tx, mut inputs) = mpsc::unbounded_channel::<Vec<Input>>();
    // Polled, not blocked on: a blocked read would hold crossterm's input lock, and ratatui's
    // cursor-position queries (a resize of the inline viewport) need it. What arrived together
    // is sent together: a burst of keys is a paste on a terminal without bracketed paste.
    std::thread::spawn(move || {
        loop {
            match event::poll(Duration::from_millis(50)) {
                Ok(true) => {
                    let mut batch = Vec::new();
                    while batch.len() < 4096 && event::poll(Duration::ZERO).unwrap_or(false) {
                        match event::read() {
                            Ok(input) => batch.push(input),
                            Err(_) => break,
                        }
                    }
                    if input_tx.send(batch).is_err() {
                        break;
                    }
                }
                Ok(false) => {
                    if input_tx.is_closed() {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
    });
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let (cells_tx, mut cells) = mpsc::unbounded_channel();
    let mut app = App::new(runtime, session, status, history, done_tx, cells_tx, open, check_model);
    app.transcript = transcript;
    app.transcript.set_main(&app.session.id);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut signal = None;
    loop {
        app.show(&mut term)?;
        tokio::select! {
            Some(batch) = inputs.recv() => {
                if app.inputs(batch, &mut term)? == Flow::Quit {
                    break;
                }
            }
            Some(message) = messages.recv() => app.message(message),
            Some(outcome) = done.recv() => app.finished(outcome),
            Some(cell) = cells.recv() => app.transcript.push(cell),
            _ = tick.tick(), if app.busy.is_some() || app.guard.pending.is_some() => {
                if app.busy.is_some() {
                    app.frame = app.frame.wrapping_add(1);
                }
                app.settle_answer(Instant::now());
            }
            () = sleep_until(app.reflow_at), if app.reflow_at.is_some() => {
                if app.pager.is_some() {
                    app.reflow_at = None;
                    app.resized = true;
                } else {
                    app.reflow(&mut term)?;
                }
            }
            _ = terminate.recv() => {
                signal = Some(libc::SIGTERM);
                break;
            }
            _ = hangup.recv() => {
                signal = Some(libc::SIGHUP);
                break;
            }
        }
    }
    app.close_pager(&mut term)?;
    app.quit();
    // Everything into the scrollback, unfinished cells as they stand; the composer and the
    // status line go, and the shell's prompt comes where they were.
    app.commit(&mut term, true)?;
    screen::erase_below(term.get_frame().area().y)?;
    Ok(Ended { history: app.composer.history().to_vec(), signal })
}

#[derive(PartialEq, Eq)]
enum Flow {
    Go,
    Quit,
}

type Outcome = Result<String, AgentError>;

struct App {
    runtime: Arc<Runtime>,
    session: Arc<LiveSession>,
    transcript: Transcript,
    /// Cells already written to the scrollback.
    committed: usize,
    /// Rows of the first cell not yet committed that are in the scrollback already: a streamed
    /// answer taller than the viewport goes up row by row as a shell's output does, so its
    /// start can be read while the rest arrives.
    streamed: usize,
    composer: Composer,
    asks: VecDeque<(ApprovalRequest, oneshot::Sender<Reply>)>,
    /// The message being typed to reject the first question with.
    rejecting: Option<String>,
    /// Keeps keys typed for the composer from answering a question (see [`App::question_key`]).
    guard: QuestionGuard,
    status: Status,
    busy: Option<Instant>,
    turn: Option<CancellationToken>,
    done: mpsc::UnboundedSender<Outcome>,
    /// Cells that commands working in the background add (`/diff`, `/undo`).
    cells: mpsc::UnboundedSender<Cell>,
    popup: usize,
    /// Ctrl-R: the text searched for in the history.
    searching: Option<String>,
    /// The worktree's files, listed at the first `@`.
    files: Option<Vec<String>>,
    /// `/sessions`: the worktree's sessions to pick from, and the one selected.
    picker: Option<(Vec<toolshed_agent::store::SessionInfo>, usize)>,
    quit_armed: bool,
    /// Something was typed or sent: the first screen's hint is gone.
    started: bool,
    /// The composer's text when Esc closed its popup: the popup stays closed until the text
    /// changes.
    dismissed: Option<String>,
    frame: usize,
    open: OpenSession,
    check_model: CheckModel,
    /// The transcript on the alternate screen (PageUp), while open.
    pager: Option<(Pager, Terminal<CrosstermBackend<io::Stdout>>)>,
    /// The terminal was resized while the pager was open.
    resized: bool,
    /// When the transcript is written again after a resize.
    reflow_at: Option<Instant>,
    /// The width the scrollback's transcript was written at.
    written_width: u16,
    /// The screen's height at the last resize.
    screen_rows: u16,
    /// A request failed and is retried: why, and when.
    retry: Option<(String, Instant)>,
    no_color: bool,
}

impl App {
    #[allow(clippy::too_many_arguments)]
    fn new(
        runtime: Arc<Runtime>,
        session: Arc<LiveSession>,
        mut status: Status,
        history: Vec<String>,
        done: mpsc::UnboundedSender<Outcome>,
        cells: mpsc::UnboundedSender<Cell>,
        open: OpenSession,
        check_model: CheckModel,
    ) -> App {
        status.agent = session.agent();
        status.model = session.model();
        status.session.clone_from(&session.id);
        App {
            runtime,
            session,
            transcript: Transcript::default(),
            committed: 0,
            streamed: 0,
            composer: Composer::new(history),
            asks: VecDeque::new(),
            rejecting: None,
            guard: QuestionGuard::default(),
            status,
            busy: None,
            turn: None,
            done,
            cells,
            popup: 0,
            searching: None,
            files: None,
            picker: None,
            quit_armed: false,
            started: false,
            dismissed: None,
            frame: 0,
            open,
            check_model,
            pager: None,
            resized: false,
            reflow_at: None,
            written_width: terminal::size().map_or(0, |(w, _)| w),
            screen_rows: terminal::size().map_or(0, |(_, h)| h),
            retry: None,
            no_color: no_color(),
        }
    }

    /// Brings the screen up to date: the pager while it is open, else finished cells into the
    /// scrollback and the viewport.
    fn show(&mut self, term: &mut Term) -> io::Result<()> {
        let no_color = self.no_color;
        // A question is not left waiting behind the pager.
        if !self.asks.is_empty() {
            self.close_pager(term)?;
        }
        if let Some((pager, screen)) = &mut self.pager {
            let (cells, stable, frame) = (self.transcript.cells(), self.committed, self.frame);
            screen.draw(|f| {
                pager.draw(f, cells, stable, frame);
                if no_color {
                    strip_colors(f.buffer_mut());
                }
            })?;
            return Ok(());
        }
        // One update for the terminal: a viewport made again at a new height is cleared and
        // drawn whole, which must not show half done.
        execute!(io::stdout(), terminal::BeginSynchronizedUpdate)?;
        self.commit(term, false)?;
        let size = term.size()?;
        // A question may take the whole screen: what it asks and its diff come first.
        let max = if self.asks.is_empty() { screen::max_height(size.height) } else { size.height };
        let mut layout = self.layout(usize::from(size.width), max);
        let scrolled = std::mem::take(&mut layout.scrolled);
        if !scrolled.is_empty() {
            // Where the finished cells go, the way they go (see `commit`).
            screen::fit(term, 1)?;
            write_above(term, scrolled, self.no_color)?;
        }
        screen::fit(term, layout.height())?;
        term.draw(|f| {
            App::paint(f, layout);
            if no_color {
                strip_colors(f.buffer_mut());
            }
        })?;
        execute!(io::stdout(), terminal::EndSynchronizedUpdate)
    }

    /// Opens the transcript on the alternate screen, scrolled up a page.
    fn open_pager(&mut self) -> io::Result<()> {
        if self.pager.is_some() {
            return Ok(());
        }
        ALTERNATE_SCREEN.store(true, std::sync::atomic::Ordering::SeqCst);
        execute!(io::stdout(), terminal::EnterAlternateScreen, event::EnableMouseCapture)?;
        let screen = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        let page = usize::from(screen.size()?.height.saturating_sub(2));
        self.pager = Some((Pager::new(page), screen));
        Ok(())
    }

    /// Back from the pager to the viewport, drawn again (re-wrapped if the terminal was
    /// resized meanwhile).
    fn close_pager(&mut self, term: &mut Term) -> io::Result<()> {
        if self.pager.take().is_none() {
            return Ok(());
        }
        ALTERNATE_SCREEN.store(false, std::sync::atomic::Ordering::SeqCst);
        execute!(io::stdout(), event::DisableMouseCapture, terminal::LeaveAlternateScreen)?;
        if std::mem::take(&mut self.resized) {
            return self.reflow(term);
        }
        term.clear()
    }

    /// Writes the transcript again at the terminal's size, in place of what the terminal kept:
    /// rows wrapped at the old width, and rows of the viewport a shrinking screen pushed into
    /// the scrollback. The terminal's scrollback is cleared for it, so what was there before
    /// the application started goes too; at most [`REFLOW_ROWS`] rows are written, the pager
    /// (PageUp) has the rest.
    fn reflow(&mut self, term: &mut Term) -> io::Result<()> {
        self.reflow_at = None;
        execute!(
            io::stdout(),
            terminal::BeginSynchronizedUpdate,
            ratatui::crossterm::cursor::MoveTo(0, 0),
            terminal::Clear(terminal::ClearType::All),
            terminal::Clear(terminal::ClearType::Purge)
        )?;
        *term = screen::at_row(0, 1)?;
        // The streamed rows of a live cell are gone with the scrollback: they are shown again.
        self.streamed = 0;
        self.written_width = term.size()?.width;
        let width = usize::from(self.written_width);
        let cells = self.transcript.cells();
        let mut blocks = Vec::new();
        let mut rows = 0;
        let mut from = self.committed;
        while from > 0 && rows < REFLOW_ROWS {
            from -= 1;
            let lines = render::spaced(from.checked_sub(1).map(|p| &cells[p]), &cells[from], width, 0);
            rows += lines.len();
            blocks.push(lines);
        }
        let mut lines: Vec<Line<'static>> = blocks.into_iter().rev().flatten().collect();
        let cut = lines.len().saturating_sub(REFLOW_ROWS);
        if from > 0 || cut > 0 {
            lines.drain(..cut);
            let dim = ratatui::style::Style::new().add_modifier(ratatui::style::Modifier::DIM);
            lines.insert(0, Line::styled("… earlier output: PageUp shows the whole transcript", dim));
        }
        write_above(term, lines, self.no_color)?;
        self.show(term)
    }

    /// Takes in what arrived together. Several keys at once are typed by a paste, not a person
    /// (terminals without bracketed paste send a paste as keys): an Enter among them is a new
    /// line, not a send.
    fn inputs(&mut self, batch: Vec<Input>, term: &mut Term) -> io::Result<Flow> {
        let typed = batch
            .iter()
            .filter(
                |i| matches!(i, Input::Key(k) if k.kind != KeyEventKind::Release && matches!(k.code, KeyCode::Char(_))),
            )
            .count();
        let burst = typed >= 2 && self.asks.is_empty() && self.pager.is_none();
        // Several keys at once are typing (or a paste), never an answer to a question.
        self.guard.burst = typed >= 2;
        // An Enter that ends the burst, with nothing typed after it, is a person's send: keys
        // typed before it and read together when toolshed was slow to read (a busy machine)
        // must not turn it into a new line.
        let last_typed = batch.iter().rposition(|i| {
            matches!(i, Input::Key(k) if k.kind != KeyEventKind::Release && matches!(k.code, KeyCode::Char(_) | KeyCode::Enter))
        });
        for (at, input) in batch.into_iter().enumerate() {
            match input {
                Input::Key(key)
                    if burst
                        && Some(at) != last_typed
                        && key.code == KeyCode::Enter
                        && key.kind != KeyEventKind::Release
                        && self.searching.is_none() =>
                {
                    self.composer.newline();
                }
                input => {
                    if self.input(input, term)? == Flow::Quit {
                        return Ok(Flow::Quit);
                    }
                }
            }
        }
        Ok(Flow::Go)
    }

    /// Writes the finished cells at the front of the transcript into the scrollback.
    fn commit(&mut self, term: &mut Term, all: bool) -> io::Result<()> {
        let width = usize::from(term.get_frame().area().width);
        let mut lines = Vec::new();
        while let Some(cell) = self.transcript.cells().get(self.committed) {
            let last = self.committed + 1 == self.transcript.cells().len();
            let finished = match cell {
                Cell::Answer { done, .. } => *done,
                Cell::Tool(t) => t.state != ToolState::Running,
                // Reasoning streams until something follows it or the turn ends.
                Cell::Reasoning(_) => !last || self.busy.is_none(),
                _ => true,
            };
            if !finished && !all {
                break;
            }
            let previous = self.committed.checked_sub(1).and_then(|p| self.transcript.cells().get(p));
            lines.extend(render::spaced(previous, cell, width, 0).into_iter().skip(std::mem::take(&mut self.streamed)));
            self.committed += 1;
        }
        if lines.is_empty() {
            return Ok(());
        }
        // The cells were shown at the viewport's top: shrunk first, the viewport moves down
        // under them as they are written, so they stay where they were (a viewport that kept
        // its height would push them up, and leave empty rows once it shrinks).
        screen::fit(term, 1)?;
        write_above(term, lines, self.no_color)
    }

    /// What the viewport shows at `width`, at most `max` rows, bottom first: the status line,
    /// the composer, the picker, popups and the first question, and the tail of the live cells
    /// that fits above them.
    fn layout(&mut self, width: usize, max: u16) -> Layout {
        let mut room = max;
        let mut pieces = Vec::new();
        // The status line.
        self.status.busy = self.busy.map(|since| {
            let what = match &self.retry {
                _ if !self.asks.is_empty() => "waiting for your answer".to_string(),
                Some((why, when)) => {
                    let left = when.saturating_duration_since(Instant::now()).as_secs_f64().ceil();
                    format!("{why}, retrying in {left} s")
                }
                None => "working".to_string(),
            };
            (what, since.elapsed().as_secs())
        });
        room = room.saturating_sub(1);
        pieces.push(Piece::Rows(vec![views::status_line(&self.status, self.frame, width)]));
        // The composer, or the message a rejection is sent with.
        let (rows, cursor) = match (&self.rejecting, &self.searching) {
            (Some(text), _) => {
                let mut c = Composer::default();
                c.insert_str(text);
                c.render(width)
            }
            (None, Some(query)) => {
                let found = self.history_match().unwrap_or_default();
                let mut c = Composer::default();
                c.insert_str(&format!("(history search) {query}: {}", found.replace('\n', " ⏎ ")));
                c.render(width)
            }
            (None, None) => {
                let (mut rows, cursor) = self.composer.render(width);
                // The first screen says what to do, until something is typed or sent.
                self.started |= !self.composer.is_empty();
                if !self.started
                    && let Some(first) = rows.first_mut()
                    && width > 24
                {
                    let room = width.saturating_sub(3);
                    first.spans.push(ratatui::text::Span::styled(
                        FIRST_HINT.chars().take(room).collect::<String>(),
                        crate::markdown::DIM,
                    ));
                }
                (rows, cursor)
            }
        };
        let shown = rows.len().min(6).min(usize::from(room.max(1)));
        let first = (usize::from(cursor.1) + 1).saturating_sub(shown);
        let composer_rows: Vec<Line<'static>> = rows.into_iter().skip(first).take(shown).collect();
        room = room.saturating_sub(u16::try_from(composer_rows.len()).unwrap_or(u16::MAX));
        let cursor = (cursor.0, cursor.1.saturating_sub(u16::try_from(first).unwrap_or(0)));
        pieces.push(Piece::Rows(composer_rows));
        let fitted = |lines: Vec<Line<'static>>, room: &mut u16| {
            let h = u16::try_from(lines.len()).unwrap_or(u16::MAX).min(*room);
            *room -= h;
            lines.into_iter().take(usize::from(h)).collect::<Vec<_>>()
        };
        // The session picker.
        if let Some((sessions, selected)) = &self.picker {
            let mut lines = vec![Line::from("  pick a session (Enter resumes it, Esc closes):")];
            // The rows that fit, scrolled to keep the selected one in view.
            let fits = usize::from(room).saturating_sub(1).max(1);
            let first = (selected + 1).saturating_sub(fits);
            for (i, info) in sessions.iter().enumerate().skip(first).take(fits) {
                let style = if i == *selected {
                    ratatui::style::Style::new().add_modifier(ratatui::style::Modifier::REVERSED)
                } else {
                    ratatui::style::Style::new()
                };
                let text = format!("{}  {:>4} msgs  {}", info.id, info.messages, info.title);
                lines.push(Line::from(ratatui::text::Span::styled(text, style)));
            }
            pieces.push(Piece::Rows(fitted(lines, &mut room)));
        }
        // The @ popup.
        if self.asks.is_empty()
            && self.searching.is_none()
            && let Some(found) = self.mention_matches()
        {
            let refs: Vec<&str> = found.iter().map(String::as_str).collect();
            let selected = self.popup.min(refs.len() - 1);
            let lines = views::file_popup(&refs, selected, width);
            pieces.push(Piece::Rows(fitted(in_view(lines, selected, room), &mut room)));
        }
        // The slash popup.
        if self.asks.is_empty() && self.popup_open() {
            let lines = views::slash_popup(&self.composer.text(), self.popup, width);
            let selected = self.popup.min(lines.len().saturating_sub(1));
            pieces.push(Piece::Rows(fitted(in_view(lines, selected, room), &mut room)));
        }
        // The first pending question.
        if let Some((request, _)) = self.asks.front() {
            let more = self.asks.len() - 1;
            let title =
                if more > 0 { format!(" permission ({more} more waiting) ") } else { " permission ".to_string() };
            let rule = rule_that_asked(&self.runtime, request);
            // All the rows above the composer, less the border's two.
            let fit = usize::from(room).saturating_sub(2);
            // What an MCP or custom tool will do is in its arguments, not its patterns.
            let call = self.transcript.call(&request.call_id).and_then(|c| {
                let args = serde_json::from_str(&c.input).unwrap_or(serde_json::Value::Null);
                render::arguments(&c.tool, &args, &c.input).map(|a| render::one_line(&a, 400))
            });
            let mut lines =
                views::approval_within(request, rule.as_deref(), call.as_deref(), width.saturating_sub(2), fit);
            if self.rejecting.is_some() {
                lines.push(Line::from("  type the message for the model, Enter sends it, Esc goes back"));
            } else if self.guard.always {
                lines.push(Line::from("  press a again to allow this for the rest of the session, o for once only"));
            }
            let h = (u16::try_from(lines.len()).unwrap_or(u16::MAX).saturating_add(2)).min(room);
            // What does not fit is the dialog's top; the answers stay visible.
            let skip = (lines.len() + 2).saturating_sub(usize::from(h));
            room -= h;
            pieces.push(Piece::Boxed(title, lines.into_iter().skip(skip).collect()));
        }
        // A blank row between what is above and the rows below it.
        let cells = self.transcript.cells();
        if !cells.is_empty() && room > 0 {
            room -= 1;
            pieces.push(Piece::Rows(vec![Line::default()]));
        }
        // The live cells: the tail that fits.
        let mut live: Vec<Line<'static>> = Vec::new();
        for i in self.committed..cells.len() {
            let rows = render::spaced(i.checked_sub(1).map(|p| &cells[p]), &cells[i], width, self.frame);
            live.extend(rows.into_iter().skip(if i == self.committed { self.streamed } else { 0 }));
        }
        // The settled rows of a streamed text that do not fit go up into the scrollback.
        let mut over = live.len().saturating_sub(usize::from(room));
        if over > 0 {
            let first = self.committed.checked_sub(1).map(|p| &cells[p]);
            let settled = cells.get(self.committed).map_or(0, |c| render::settled(first, c, width));
            over = over.min(settled.saturating_sub(self.streamed));
        }
        let scrolled: Vec<Line<'static>> = live.drain(..over).collect();
        self.streamed += over;
        let tail: Vec<Line<'static>> = live.split_off(live.len().saturating_sub(usize::from(room)));
        pieces.push(Piece::Rows(tail));
        Layout { pieces, cursor, scrolled }
    }

    /// Draws `layout` from the viewport's bottom up.
    fn paint(f: &mut Frame<'_>, layout: Layout) {
        let area = f.area();
        let mut bottom = area.bottom();
        for (i, piece) in layout.pieces.into_iter().enumerate() {
            let h = piece.height().min(bottom.saturating_sub(area.y));
            bottom -= h;
            let at = row(area, bottom, h);
            match piece {
                Piece::Rows(lines) => f.render_widget(Paragraph::new(lines), at),
                Piece::Boxed(title, lines) => {
                    f.render_widget(
                        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(title)),
                        at,
                    );
                }
            }
            // The second piece is the composer.
            if i == 1 {
                let (x, y) = layout.cursor;
                f.set_cursor_position((
                    area.x + x.min(area.width.saturating_sub(1)),
                    bottom + y.min(h.saturating_sub(1)),
                ));
            }
        }
    }

    fn message(&mut self, message: Message) {
        match message {
            Message::Agent(event) => {
                if let Event::StepFinish { input_tokens, context_window, .. } = &event {
                    self.status.context = Some((*input_tokens, *context_window));
                }
                self.retry = match &event {
                    Event::Retry { reason, wait_ms, .. } => {
                        Some((reason.clone(), Instant::now() + Duration::from_millis(*wait_ms)))
                    }
                    _ => None,
                };
                if let Event::AgentSwitch { to, .. } = &event {
                    self.status.agent.clone_from(to);
                }
                self.transcript.apply(&event);
            }
            Message::Ask(request, answer) => {
                if self.asks.is_empty() {
                    self.guard.shown(Instant::now());
                }
                self.asks.push_back((request, answer));
            }
        }
    }

    fn finished(&mut self, outcome: Outcome) {
        if self.status.hint.as_deref() == Some(WAIT_HINT) {
            self.status.hint = None;
        }
        self.busy = None;
        self.turn = None;
        self.retry = None;
        // Questions of a turn that ended (interrupted) are answered no.
        for (_, answer) in self.asks.drain(..) {
            let _ = answer.send(Reply::Reject(None));
        }
        self.rejecting = None;
        match outcome {
            Ok(_) => {}
            Err(e) => self.transcript.push_error(&e.to_string()),
        }
    }

    fn answer(&mut self, reply: Reply) {
        if let Some((_, answer)) = self.asks.pop_front() {
            let _ = answer.send(reply);
        }
        self.rejecting = None;
        if !self.asks.is_empty() {
            self.guard.shown(Instant::now());
        }
    }

    fn input(&mut self, input: Input, term: &mut Term) -> io::Result<Flow> {
        match input {
            Input::Paste(text) => match &mut self.rejecting {
                Some(message) => message.push_str(&text),
                None => self.composer.insert_str(&text),
            },
            Input::Resize(width, height) if self.pager.is_some() => {
                self.resized |= width != self.written_width || height < self.screen_rows;
                self.screen_rows = height;
            }
            Input::Resize(width, height) => {
                // Drawn at the new size at once. A new width wraps the transcript differently:
                // it is written again once the size has held for a moment (a drag sends many
                // sizes). A shorter screen pushes its top rows into the scrollback: the
                // transcript's, which is right, or the viewport's, which is written again too.
                let before = term.get_frame().area();
                let shorter_by = self.screen_rows.saturating_sub(height);
                self.screen_rows = height;
                term.autoresize()?;
                if width != self.written_width || before.y < shorter_by {
                    self.reflow_at = Some(Instant::now() + REFLOW_AFTER);
                }
            }
            Input::Mouse(mouse) => {
                if let Some((pager, _)) = &mut self.pager {
                    pager.mouse(mouse);
                }
            }
            Input::Key(key) if key.kind != KeyEventKind::Release && self.pager.is_some() => {
                let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
                let close = match &mut self.pager {
                    Some((pager, _)) => !pager.key(key),
                    None => false,
                };
                if close || (ctrl && matches!(key.code, KeyCode::Char('c' | 't'))) {
                    self.close_pager(term)?;
                }
            }
            Input::Key(key) if key.kind != KeyEventKind::Release => {
                let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
                if ctrl && key.code == KeyCode::Char('z') {
                    suspend(term)?;
                    return Ok(Flow::Go);
                }
                if self.asks.is_empty() && (key.code == KeyCode::PageUp || (ctrl && key.code == KeyCode::Char('t'))) {
                    self.open_pager()?;
                    return Ok(Flow::Go);
                }
                return Ok(self.key(key, term));
            }
            _ => {}
        }
        Ok(Flow::Go)
    }

    fn key(&mut self, key: KeyEvent, term: &mut Term) -> Flow {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // A popup Esc closed opens again for the next text that wants one.
        if !self.popup_dismissed() {
            self.dismissed = None;
        }
        if ctrl && key.code == KeyCode::Char('c') {
            return self.interrupt_or_quit();
        }
        if self.quit_armed {
            self.quit_armed = false;
            self.status.hint = None;
            self.status.busy = None;
        }
        if ctrl && key.code == KeyCode::Char('l') {
            let _ = term.clear();
            return Flow::Go;
        }
        // Quitting works whatever is open or running (the turn is stopped, questions answered no).
        if ctrl && key.code == KeyCode::Char('d') && self.composer.is_empty() {
            return Flow::Quit;
        }
        if !self.asks.is_empty() {
            self.question_key(key);
            return Flow::Go;
        }
        if let Some((sessions, selected)) = &mut self.picker {
            match key.code {
                KeyCode::Up => *selected = selected.saturating_sub(1),
                KeyCode::Down => *selected = (*selected + 1).min(sessions.len().saturating_sub(1)),
                KeyCode::Enter => {
                    let picked = sessions.get(*selected).cloned();
                    self.picker = None;
                    if let Some(info) = picked {
                        let model = info.model.clone().unwrap_or_else(|| self.session.model());
                        self.open_session(Some(&info.id), &info.agent, &model);
                    }
                }
                _ => self.picker = None,
            }
            return Flow::Go;
        }
        if ctrl && key.code == KeyCode::Char('r') {
            self.searching = Some(self.searching.take().unwrap_or_default());
            return Flow::Go;
        }
        if let Some(query) = &mut self.searching {
            match key.code {
                KeyCode::Char(c) if !ctrl => query.push(c),
                KeyCode::Backspace => {
                    query.pop();
                }
                KeyCode::Enter | KeyCode::Tab | KeyCode::Right => {
                    if let Some(found) = self.history_match() {
                        self.composer.set_text(&found);
                    }
                    self.searching = None;
                }
                _ => self.searching = None,
            }
            return Flow::Go;
        }
        match key.code {
            // Esc closes a popup first, and only then stops the turn.
            KeyCode::Esc => {
                if self.popup_open() || self.mention_matches().is_some() {
                    self.dismissed = Some(self.composer.text());
                } else if let Some(turn) = &self.turn {
                    turn.cancel();
                }
            }
            KeyCode::Char('d') if ctrl && self.composer.is_empty() => return Flow::Quit,
            KeyCode::Char('j') if ctrl => self.composer.newline(),
            KeyCode::Enter if key.modifiers.intersects(KeyModifiers::SHIFT | KeyModifiers::ALT) => {
                self.composer.newline();
            }
            KeyCode::Enter | KeyCode::Tab if self.composer.word_before_cursor().starts_with('@') => {
                if let Some(found) = self.mention_matches()
                    && let Some(path) = found.get(self.popup.min(found.len() - 1))
                {
                    self.composer.replace_word_before_cursor(&format!("@{path} "));
                    self.popup = 0;
                } else if key.code == KeyCode::Enter {
                    return self.submit();
                }
            }
            KeyCode::Up | KeyCode::Down if self.composer.word_before_cursor().starts_with('@') => {
                let n = self.mention_matches().map_or(0, |f| f.len());
                self.popup = if key.code == KeyCode::Up {
                    self.popup.saturating_sub(1)
                } else {
                    (self.popup + 1).min(n.saturating_sub(1))
                };
            }
            KeyCode::Enter => return self.submit(),
            KeyCode::Tab => {
                if let Some(c) = views::slash_matches(&self.composer.text()).get(self.popup) {
                    self.composer.set_text(&format!("{} ", c.name));
                    self.popup = 0;
                }
            }
            KeyCode::Up if self.popup_open() => self.popup = self.popup.saturating_sub(1),
            KeyCode::Down if self.popup_open() => {
                let n = views::slash_matches(&self.composer.text()).len();
                self.popup = (self.popup + 1).min(n.saturating_sub(1));
            }
            KeyCode::Up => self.composer.up(),
            KeyCode::Down => self.composer.down(),
            KeyCode::Left => self.composer.left(),
            KeyCode::Right => self.composer.right(),
            KeyCode::Home => self.composer.home(),
            KeyCode::End => self.composer.end(),
            KeyCode::Backspace => {
                self.composer.backspace();
                self.popup = 0;
            }
            KeyCode::Delete => self.composer.delete(),
            KeyCode::Char(c) if !ctrl => {
                self.composer.insert_char(c);
                self.popup = 0;
            }
            _ => {}
        }
        Flow::Go
    }

    /// Goes on in another session: a new one (`None`), or stored session `id` (its transcript
    /// is shown). The session left stays stored.
    fn open_session(&mut self, id: Option<&str>, agent: &str, model: &str) {
        match (self.open)(id, agent, model) {
            Ok(session) => {
                if let Some(id) = id {
                    match self.runtime.store().messages(id) {
                        Ok(messages) => {
                            self.transcript.push_notice(&format!("resumed session {id}"), false);
                            for cell in Transcript::from_stored(&messages).cells() {
                                self.transcript.push(cell.clone());
                            }
                        }
                        Err(e) => self.transcript.push_notice(&e.to_string(), true),
                    }
                } else {
                    self.transcript.push_notice(&format!("new session {}", session.id), false);
                }
                self.status.session.clone_from(&session.id);
                self.status.agent = session.agent();
                self.status.model = session.model();
                self.status.context = None;
                self.transcript.set_main(&session.id);
                self.session = session;
            }
            Err(e) => self.transcript.push_notice(&e, true),
        }
    }

    /// `/model ID`: the session talks to `model` from its next request on.
    fn switch_model(&mut self, model: &str) {
        if model.is_empty() {
            let text = format!(
                "model: {}; `/model PROVIDER/MODEL` switches (e.g. /model openai/gpt-5.1)",
                self.session.model()
            );
            self.transcript.push_notice(&text, false);
            return;
        }
        let switched = (self.check_model)(model)
            .and_then(|()| self.runtime.switch_model(&self.session, model).map_err(|e| e.to_string()));
        match switched {
            Ok(()) => {
                self.status.model = self.session.model();
                self.status.context = None;
                self.transcript.push_notice(&format!("model: {model}"), false);
            }
            Err(e) => self.transcript.push_notice(&format!("model not switched: {e}"), true),
        }
    }

    /// The newest prompt of the history that contains what Ctrl-R searches for.
    fn history_match(&self) -> Option<String> {
        let query = self.searching.as_deref()?;
        self.composer.history().iter().rev().find(|h| h.contains(query)).cloned()
    }

    /// `!cmd`: the command runs through the bash tool (its rules and questions apply) and is
    /// recorded in the session, so the model sees it on its next turn.
    fn shell(&mut self, command: &str) {
        let (runtime, session, cells, done) =
            (self.runtime.clone(), self.session.clone(), self.cells.clone(), self.done.clone());
        let cancel = CancellationToken::new();
        self.turn = Some(cancel.clone());
        self.busy = Some(Instant::now());
        let id = toolshed_agent::store::new_id("call");
        let message = toolshed_agent::store::new_id("msg");
        let input = serde_json::json!({"command": command, "description": "run by the user"});
        tokio::spawn(async move {
            let call = toolshed_core::exec::ToolCall::json(&id, "bash", input.clone())
                .with_message(message)
                .with_cancel(cancel);
            let result = runtime.executor().call(&session.core(), call).await;
            let _ = cells.send(Cell::Tool(crate::cell::ToolCell {
                state: if result.is_error { ToolState::Failed } else { ToolState::Done },
                title: result.title.clone(),
                output: result.output.clone(),
                metadata: result.metadata.clone(),
                duration_ms: Some(result.duration.as_millis() as u64),
                expanded: true,
                ..crate::cell::ToolCell::new(&id, "bash", &input.to_string())
            }));
            let _ = done.send(Ok(String::new()));
        });
    }

    /// The files matching the `@` word at the cursor, if the cursor is on one.
    fn mention_matches(&mut self) -> Option<Vec<String>> {
        if self.popup_dismissed() {
            return None;
        }
        let word = self.composer.word_before_cursor();
        let query = word.strip_prefix('@')?;
        let root = self.runtime.settings().root.clone();
        let files = self.files.get_or_insert_with(|| crate::mentions::files(&root));
        let found: Vec<String> = crate::mentions::best(query, files, 8).into_iter().map(str::to_string).collect();
        (!found.is_empty()).then_some(found)
    }

    /// Whether the slash popup is open.
    fn popup_open(&self) -> bool {
        let typed = self.composer.text();
        typed.starts_with('/') && !typed.contains(char::is_whitespace) && !self.popup_dismissed()
    }

    /// Whether Esc closed the popups over the composer's text as it stands.
    fn popup_dismissed(&self) -> bool {
        self.dismissed.as_ref().is_some_and(|text| *text == self.composer.text())
    }

    fn question_key(&mut self, key: KeyEvent) {
        if let Some(message) = &mut self.rejecting {
            match key.code {
                KeyCode::Enter => {
                    let text = message.trim().to_string();
                    self.answer(Reply::Reject((!text.is_empty()).then_some(text)));
                }
                KeyCode::Esc => self.rejecting = None,
                KeyCode::Backspace => {
                    message.pop();
                }
                KeyCode::Char(c) => message.push(c),
                _ => {}
            }
            return;
        }
        let now = Instant::now();
        if key.code == KeyCode::Esc {
            self.guard.pending = None;
            self.answer(Reply::Reject(None));
            return;
        }
        let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let answer = matches!(key.code, KeyCode::Char('o' | 'y' | 'a' | 'r' | 'n' | 'm'))
            // Enter sends what was typed; it answers only over an empty composer.
            || key.code == KeyCode::Enter && self.composer.is_empty();
        if answer && plain && self.guard.pending.is_none() && self.guard.settled(now) {
            // An answer counts once no other key follows it at once ([`App::settle_answer`]).
            self.guard.pending = Some((key, now));
            return;
        }
        // Typing meant for the composer (the question opened under it, the person has not
        // stopped typing, or a key followed an answer's): it goes there, the held key first, and
        // answers wait until the typing stops.
        if let Some((held, _)) = self.guard.pending.take()
            && let KeyCode::Char(c) = held.code
        {
            self.composer.insert_char(c);
        }
        match key.code {
            KeyCode::Char(c) if plain => self.composer.insert_char(c),
            KeyCode::Backspace => self.composer.backspace(),
            _ => {}
        }
        self.guard.typed(now);
    }

    /// Applies the answer key held by [`App::question_key`] once it has stood alone for
    /// [`ALONE`]: the next letter of a word being typed would have come sooner.
    fn settle_answer(&mut self, now: Instant) {
        let Some((key, at)) = self.guard.pending else { return };
        if now < at + ALONE {
            return;
        }
        self.guard.pending = None;
        if self.asks.is_empty() {
            return;
        }
        match key.code {
            KeyCode::Char('o' | 'y') | KeyCode::Enter => self.answer(Reply::Once),
            // "Always" holds for the rest of the session: it takes a second `a`.
            KeyCode::Char('a') if self.guard.always => self.answer(Reply::Always),
            KeyCode::Char('a') => self.guard.always = true,
            KeyCode::Char('r' | 'n') | KeyCode::Esc => self.answer(Reply::Reject(None)),
            KeyCode::Char('m') => self.rejecting = Some(String::new()),
            _ => {}
        }
    }

    /// Ctrl-C: interrupts a running turn, else clears the composer, else (pressed twice) quits.
    fn interrupt_or_quit(&mut self) -> Flow {
        if let Some(turn) = &self.turn {
            turn.cancel();
            // A turn waiting for an answer ends only once it has one.
            for (_, answer) in self.asks.drain(..) {
                let _ = answer.send(Reply::Reject(None));
            }
            self.rejecting = None;
            return Flow::Go;
        }
        if !self.composer.is_empty() {
            self.composer.set_text("");
            return Flow::Go;
        }
        if self.quit_armed {
            return Flow::Quit;
        }
        self.quit_armed = true;
        self.status.hint = Some("Ctrl-C again quits".to_string());
        Flow::Go
    }

    fn submit(&mut self) -> Flow {
        if matches!(self.composer.text().trim(), "/exit" | "/quit") {
            return Flow::Quit;
        }
        if self.turn.is_some() {
            // One turn at a time: the text waits in the composer, as the status line says
            // (not the transcript: a notice there would cut the answer streaming in two).
            if !self.composer.is_empty() {
                self.status.hint = Some(WAIT_HINT.to_string());
            }
            return Flow::Go;
        }
        let text = self.composer.take();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Flow::Go;
        }
        if trimmed.starts_with('/') {
            return self.slash(trimmed);
        }
        if let Some(command) = trimmed.strip_prefix('!').map(str::trim).filter(|c| !c.is_empty()) {
            self.transcript.push_user(&text);
            self.shell(command);
            return Flow::Go;
        }
        self.transcript.push_user(&text);
        // Files mentioned with @ go to the model with the prompt.
        let sent = crate::mentions::attach(&text, &self.runtime.settings().root);
        let (runtime, session, done) = (self.runtime.clone(), self.session.clone(), self.done.clone());
        let cancel = CancellationToken::new();
        self.turn = Some(cancel.clone());
        self.busy = Some(Instant::now());
        tokio::spawn(async move {
            let outcome = runtime.prompt(&session, &sent, &cancel).await;
            let _ = done.send(outcome);
        });
        Flow::Go
    }

    fn slash(&mut self, line: &str) -> Flow {
        let (command, arg) = line.split_once(char::is_whitespace).map_or((line, ""), |(c, a)| (c, a.trim()));
        // A switch shows as the loop's event says it ("agent: build → plan"); no event comes
        // when nothing changes.
        let switch = |app: &mut App, to: &str| {
            let was = app.session.agent();
            match app.runtime.switch_agent(&app.session, to) {
                Ok(()) if was == to => app.transcript.push_notice(&format!("already {to}"), false),
                Ok(()) => app.status.agent = app.session.agent(),
                Err(e) => app.transcript.push_notice(&e.to_string(), true),
            }
        };
        match command {
            "/exit" | "/quit" => return Flow::Quit,
            "/plan" => switch(self, "plan"),
            "/build" => switch(self, "build"),
            "/agent" if !arg.is_empty() => switch(self, arg),
            "/compact" => {
                let (runtime, session, done) = (self.runtime.clone(), self.session.clone(), self.done.clone());
                let cancel = CancellationToken::new();
                self.turn = Some(cancel.clone());
                self.busy = Some(Instant::now());
                tokio::spawn(async move {
                    let outcome = runtime.compact(&session, Trigger::Manual, &cancel).await.map(|_| String::new());
                    let _ = done.send(outcome);
                });
            }
            "/diff" | "/undo" => {
                let (runtime, id, cells, undo) =
                    (self.runtime.clone(), self.session.id.clone(), self.cells.clone(), command == "/undo");
                tokio::spawn(async move {
                    let _ = cells.send(undo_cell(&runtime, &id, undo).await);
                });
            }
            "/new" => {
                let (agent, model) = (self.session.agent(), self.session.model());
                self.open_session(None, &agent, &model);
            }
            "/model" => self.switch_model(arg),
            "/sessions" => {
                let root = self.runtime.settings().root.display().to_string();
                match self.runtime.store().list_sessions() {
                    Ok(all) => {
                        let mine: Vec<_> = all
                            .into_iter()
                            .filter(|s| s.root == root && s.parent_id.is_none() && s.id != self.session.id)
                            .take(20)
                            .collect();
                        if mine.is_empty() {
                            self.transcript.push_notice("no other session in this worktree", false);
                        } else {
                            self.picker = Some((mine, 0));
                        }
                    }
                    Err(e) => self.transcript.push_notice(&e.to_string(), true),
                }
            }
            "/help" => self.transcript.push_notice(&help(), false),
            _ => self.transcript.push_notice(&format!("unknown command {command}; /help lists them"), true),
        }
        Flow::Go
    }

    fn quit(&mut self) {
        if let Some(turn) = self.turn.take() {
            turn.cancel();
        }
        for (_, answer) in self.asks.drain(..) {
            let _ = answer.send(Reply::Reject(None));
        }
        self.transcript.end_running("(not finished: the chat ended first)");
        let id = &self.session.id;
        self.transcript.push_notice(&format!("session {id}; `toolshed chat -s {id}` goes on with it"), false);
    }
}

/// The rule that made `request` ask, as `permission explain` finds it: `edit * ask (from
/// toolshed.toml)`, or that no rule matched (asking is the default).
fn rule_that_asked(runtime: &Runtime, request: &ApprovalRequest) -> Option<String> {
    use toolshed_core::agents::Layer;
    let r = &request.request;
    let pattern = r.patterns.first()?;
    let explained = runtime.agents().explain(&request.agent, &r.permission, pattern);
    let Some(rule) = explained.decided_by else {
        return Some("no rule matches: asking is the default".to_string());
    };
    let source =
        explained.considered.iter().rev().find(|(s, matched)| *matched && s.rule == rule).map(|(s, _)| {
            match (&s.file, s.layer) {
                (Some(file), _) => format!("from {}", file.display()),
                (None, Layer::Default) => "toolshed's default".to_string(),
                (None, Layer::Config) => "from the config".to_string(),
                (None, Layer::Agent) => format!("agent {}'s built-in rule", request.agent),
                (None, Layer::AgentConfig) => format!("[agent.{}] permission", request.agent),
            }
        });
    Some(match source {
        Some(source) => format!("{rule} ({source})"),
        None => rule.to_string(),
    })
}

/// What `/diff` (or `/undo`) shows: the session's diff, or what the revert restored; files
/// changed by hand since are not overwritten here (`toolshed session revert ID --force` does).
async fn undo_cell(runtime: &Runtime, id: &str, revert: bool) -> Cell {
    use toolshed_agent::undo;
    let notice = |text: String, error: bool| Cell::Notice { text, error };
    let Some(u) = runtime.undo() else { return notice("undo is off in this process".into(), true) };
    if let Err(why) = u.shadow() {
        return notice(why, true);
    }
    let store = runtime.store();
    if !revert {
        return match undo::session_diff(store, u, id, None, false) {
            Ok(undo::SessionDiff::Changed(diff)) => Cell::Diff(diff),
            Ok(undo::SessionDiff::Unchanged) => notice("this session changed no files".into(), false),
            Err(e) => notice(e.to_string(), true),
        };
    }
    let plan = match undo::plan_revert(store, u, id, None).await {
        Ok(undo::Planned::Revert(plan)) => plan,
        Ok(undo::Planned::Nothing { kept }) => return notice(undo::nothing_to_revert(&kept), false),
        Err(e) => return notice(e.to_string(), true),
    };
    if !plan.hand_edited.is_empty() {
        let names: Vec<String> = plan.hand_edited.iter().map(|p| p.display().to_string()).collect();
        return notice(
            format!(
                "not undone: {} changed or added since the session last touched them; to overwrite or remove them, run `toolshed session revert {id} --force`",
                names.join(", ")
            ),
            true,
        );
    }
    match undo::apply_revert(store, u, plan, false).await {
        Ok(outcome) => {
            let list = undo::list_some;
            let mut text =
                format!("undone (step {}): files as before step {}", outcome.step, outcome.reverted_to_before_step);
            if !outcome.restored.is_empty() {
                text.push_str(&format!("; restored {}", list(&outcome.restored)));
            }
            if !outcome.deleted.is_empty() {
                text.push_str(&format!("; deleted {}", list(&outcome.deleted)));
            }
            if !outcome.not_restored.is_empty() {
                text.push_str(&format!("; not restored (never kept) {}", list(&outcome.not_restored)));
            }
            if !outcome.kept.is_empty() {
                text.push_str(&format!("; kept {} (undo cannot tell the session made them)", list(&outcome.kept)));
            }
            notice(text + ". /undo again redoes it.", false)
        }
        Err(e) => notice(e.to_string(), true),
    }
}

/// What the first screen's composer says while it is empty.
const FIRST_HINT: &str = "type a message · /help lists what you can do";

/// What Enter during a turn does, in the status line.
const WAIT_HINT: &str = "still working: Enter sends your message once the turn ends (Esc interrupts)";

/// The keys, as `/help` lists them: what to press, what it does.
const KEYS: &[(&str, &str)] = &[
    ("Enter", "send · Shift-Enter, Alt-Enter or Ctrl-J: new line"),
    ("Esc, Ctrl-C", "interrupt the turn · Ctrl-C twice on an empty line, or Ctrl-D: quit"),
    ("Up, Down", "history · Ctrl-R searches it"),
    ("PageUp, Ctrl-T", "the whole transcript (e expands tool output; q or Esc returns)"),
    ("@path", "attach a file to the message (Tab completes)"),
    ("!cmd", "run a shell command"),
    ("Ctrl-L, Ctrl-Z", "redraw · suspend"),
    ("questions", "o once · a twice: always · r or Esc: reject · m: reject with a message"),
];

/// `/help`: the keys, then the commands, a line each.
fn help() -> String {
    let mut text = String::from("keys");
    for (key, what) in KEYS {
        text.push_str(&format!("\n  {key:<15} {what}"));
    }
    text.push_str("\ncommands");
    for c in views::SLASH_COMMANDS {
        text.push_str(&format!("\n  {:<15} {}", c.name, c.help));
    }
    text
}

/// The rows of a popup (one per item) that fit in `room`, scrolled to keep row `selected` in view.
fn in_view(lines: Vec<Line<'static>>, selected: usize, room: u16) -> Vec<Line<'static>> {
    let fits = usize::from(room).max(1);
    let first = (selected + 1).saturating_sub(fits);
    lines.into_iter().skip(first).take(fits).collect()
}

/// Writes `lines` into the scrollback, above the viewport.
fn write_above(term: &mut Term, lines: Vec<Line<'static>>, no_color: bool) -> io::Result<()> {
    for chunk in lines.chunks(200) {
        let chunk = chunk.to_vec();
        let height = u16::try_from(chunk.len()).unwrap_or(u16::MAX);
        term.insert_before(height, |buf| {
            Paragraph::new(chunk).render(buf.area, buf);
            if no_color {
                strip_colors(buf);
            }
        })?;
    }
    Ok(())
}

/// How long the terminal's size holds before the transcript is written again.
const REFLOW_AFTER: Duration = Duration::from_millis(150);

/// The most rows written again after a resize.
const REFLOW_ROWS: usize = 5000;

/// What the viewport shows, bottom first (see [`App::layout`]).
struct Layout {
    pieces: Vec<Piece>,
    /// The cursor in the composer (the second piece): column, and row from its top.
    cursor: (u16, u16),
    /// Rows of a live cell to write into the scrollback before the viewport is drawn.
    scrolled: Vec<Line<'static>>,
}

impl Layout {
    /// The rows it takes.
    fn height(&self) -> u16 {
        self.pieces.iter().map(Piece::height).fold(0, u16::saturating_add)
    }
}

enum Piece {
    Rows(Vec<Line<'static>>),
    /// Rows in a box with a title.
    Boxed(String, Vec<Line<'static>>),
}

impl Piece {
    fn height(&self) -> u16 {
        match self {
            Piece::Rows(lines) => u16::try_from(lines.len()).unwrap_or(u16::MAX),
            Piece::Boxed(_, lines) => u16::try_from(lines.len()).unwrap_or(u16::MAX).saturating_add(2),
        }
    }
}

/// Sleeps until `at` (a `None` never comes).
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

fn row(area: Rect, y: u16, height: u16) -> Rect {
    Rect { x: area.x, y, width: area.width, height: height.min(area.bottom().saturating_sub(y)) }
}

/// How long a question shows before a key answers it, and how long after the last key typed
/// for the composer: a question opens wherever the person is typing, and the next letters they
/// type (the `a` of "also", the `o` of "hello") must not answer it.
const ANSWER_DELAY: Duration = Duration::from_millis(700);

/// What keeps keys typed for the composer from answering a question.
#[derive(Debug, Default)]
struct QuestionGuard {
    /// When the first question appeared.
    shown_at: Option<Instant>,
    /// Until when keys are taken as typing.
    typing_until: Option<Instant>,
    /// The keys being handled arrived together (typing or a paste).
    burst: bool,
    /// `a` was pressed once: the next `a` answers "always".
    always: bool,
    /// An answer key, held until it has stood alone for [`ALONE`].
    pending: Option<(KeyEvent, Instant)>,
}

/// How long an answer key must stand alone: a person typing a word types its next letter sooner.
const ALONE: Duration = Duration::from_millis(300);

impl QuestionGuard {
    fn shown(&mut self, now: Instant) {
        self.shown_at = Some(now);
        self.always = false;
        self.pending = None;
    }

    fn typed(&mut self, now: Instant) {
        self.typing_until = Some(now + ANSWER_DELAY);
        self.always = false;
    }

    /// Whether a key now may answer: the question has shown for a while, no typing is going
    /// on, and the key came alone.
    fn settled(&self, now: Instant) -> bool {
        !self.burst
            && self.shown_at.is_some_and(|at| now >= at + ANSWER_DELAY)
            && self.typing_until.is_none_or(|until| now >= until)
    }
}
