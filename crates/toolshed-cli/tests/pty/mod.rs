//! A program in a real pseudo-terminal (portable-pty) and the screen it draws, read by a
//! terminal emulator (vt100): what a person sees.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};

/// A program running in a pseudo-terminal and the screen it draws.
pub struct Terminal {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    /// Kept for resizing; it must outlive the child's use of the terminal.
    master: Box<dyn MasterPty + Send>,
    /// Every byte the program wrote.
    raw: Arc<Mutex<Vec<u8>>>,
}

/// Feeds output to the emulator. vt100 ignores "erase the scrollback" (`ESC [ 3 J`); a
/// terminal does it, so here the emulator is made again with the screen and modes it had.
fn process(parser: &mut vt100::Parser, bytes: &[u8]) {
    const PURGE: &[u8] = b"\x1b[3J";
    let mut rest = bytes;
    while let Some(at) = rest.windows(PURGE.len()).position(|w| w == PURGE) {
        parser.process(&rest[..at]);
        let (rows, cols) = parser.screen().size();
        let state = parser.screen().state_formatted();
        *parser = vt100::Parser::new(rows, cols, 1000);
        parser.process(&state);
        rest = &rest[at + PURGE.len()..];
    }
    parser.process(rest);
}

impl Terminal {
    pub fn start(dir: &Path, args: &[&str]) -> Terminal {
        Terminal::start_with(dir, args, &[])
    }

    /// [`Terminal::start`] with more environment variables.
    pub fn start_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        Terminal::spawn(dir, args, env, false, (30, 120))
    }

    /// [`Terminal::start`] on a screen of `rows` × `cols`.
    pub fn start_sized(dir: &Path, args: &[&str], rows: u16, cols: u16) -> Terminal {
        Terminal::spawn(dir, args, &[], false, (rows, cols))
    }

    /// toolshed run by a shell with job control, as a person's shell runs it: when toolshed
    /// stops (Ctrl-Z), the shell waits for a line and then continues it (`fg`).
    pub fn start_in_shell(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        Terminal::spawn(dir, args, env, true, (30, 120))
    }

    fn spawn(dir: &Path, args: &[&str], env: &[(&str, &str)], shell: bool, (rows, cols): (u16, u16)) -> Terminal {
        let pty = native_pty_system().openpty(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).unwrap();
        let mut cmd = if shell {
            let mut cmd = CommandBuilder::new("bash");
            cmd.args([
                "--norc",
                "--noprofile",
                "-c",
                "set -m; \"$0\" \"$@\"; read -r _; fg",
                env!("CARGO_BIN_EXE_toolshed"),
            ]);
            cmd
        } else {
            CommandBuilder::new(env!("CARGO_BIN_EXE_toolshed"))
        };
        cmd.args(["--root", dir.to_str().unwrap()]);
        cmd.args(args);
        cmd.cwd(dir);
        cmd.env("HOME", dir.join(".home"));
        cmd.env("XDG_CONFIG_HOME", dir.join(".xdg"));
        cmd.env("TOOLSHED_DATA_DIR", dir.join(".data"));
        cmd.env("TOOLSHED_TRUST_PROJECT", "1");
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("OPENAI_API_KEY");
        cmd.env_remove("NO_COLOR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(rows, cols, 1000)));
        let writer: Arc<Mutex<Box<dyn Write + Send>>> = Arc::new(Mutex::new(pty.master.take_writer().unwrap()));
        let mut reader = pty.master.try_clone_reader().unwrap();
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (feed, answer, record) = (screen.clone(), writer.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            let mut tail: Vec<u8> = Vec::new();
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                record.lock().unwrap().extend_from_slice(&buf[..n]);
                let mut parser = feed.lock().unwrap();
                process(&mut parser, &buf[..n]);
                // A terminal answers "where is the cursor?" (DSR 6); the emulator does not, so
                // the harness does, as a terminal would.
                tail.extend_from_slice(&buf[..n]);
                let asked = tail.windows(4).filter(|w| w == b"\x1b[6n").count();
                tail = tail[tail.len().saturating_sub(3)..].to_vec();
                for _ in 0..asked {
                    let (row, col) = parser.screen().cursor_position();
                    let reply = format!("\x1b[{};{}R", row + 1, col + 1);
                    let _ = answer.lock().unwrap().write_all(reply.as_bytes());
                }
            }
        });
        Terminal { screen, writer, child, master: pty.master, raw }
    }

    /// Resizes the terminal as a person dragging its window does: the program gets SIGWINCH.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        self.screen.lock().unwrap().screen_mut().set_size(rows, cols);
        self.master.resize(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).unwrap();
    }

    /// Every byte the program wrote so far.
    pub fn raw(&self) -> Vec<u8> {
        self.raw.lock().unwrap().clone()
    }

    /// Every row the terminal holds, its scrollback first, then the screen.
    pub fn history(&self) -> Vec<String> {
        let mut parser = self.screen.lock().unwrap();
        let (rows, cols) = parser.screen().size();
        parser.screen_mut().set_scrollback(usize::MAX);
        let kept = parser.screen().scrollback();
        let mut all = Vec::new();
        // The view at offset `off` shows history rows `kept - off` onwards.
        let mut next = 0;
        while next < kept + usize::from(rows) {
            let off = kept.saturating_sub(next);
            parser.screen_mut().set_scrollback(off);
            let first = kept - off;
            for (i, row) in parser.screen().rows(0, cols).enumerate() {
                if first + i >= next {
                    all.push(row);
                }
            }
            next = first + usize::from(rows);
        }
        parser.screen_mut().set_scrollback(0);
        all
    }

    /// Looks at the emulator's screen (colours, modes).
    pub fn with_screen<T>(&self, f: impl FnOnce(&vt100::Screen) -> T) -> T {
        f(self.screen.lock().unwrap().screen())
    }

    /// The program's process id.
    pub fn pid(&self) -> u32 {
        self.child.process_id().unwrap()
    }

    /// The process id of toolshed under the shell of [`Terminal::start_in_shell`].
    pub fn shell_child(&self) -> u32 {
        let pid = self.pid();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
            if let Some(child) = children.split_whitespace().next() {
                return child.parse().unwrap();
            }
            assert!(Instant::now() < deadline, "the shell started nothing");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    pub fn wait_for(&mut self, what: &str, timeout: Duration) -> String {
        self.wait_until(&format!("{what:?}"), |screen| screen.contains(what), timeout)
    }

    /// The screen once `holds` is true of it: a frame can be read half written (a finished
    /// cell printed above the viewport before the viewport is redrawn), so a test of the
    /// settled screen waits for it rather than reading the first frame that shows some text.
    pub fn wait_until(&mut self, what: &str, holds: impl Fn(&str) -> bool, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let now = self.contents();
            if holds(&now) {
                return now;
            }
            assert!(Instant::now() < deadline, "no {what} on screen within {timeout:?}:\n{now}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    pub fn type_text(&mut self, text: &str) {
        let mut writer = self.writer.lock().unwrap();
        writer.write_all(text.as_bytes()).unwrap();
        writer.flush().unwrap();
    }

    /// Types `text`, then Enter on its own, as a person does (keys that arrive in one burst
    /// are taken for a paste, whose Enters are new lines).
    pub fn send_line(&mut self, text: &str) {
        self.type_text(text);
        std::thread::sleep(Duration::from_millis(150));
        self.type_text("\r");
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> u32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader take in the last output.
                std::thread::sleep(Duration::from_millis(200));
                return status.exit_code();
            }
            assert!(Instant::now() < deadline, "still running:\n{}", self.contents());
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}
