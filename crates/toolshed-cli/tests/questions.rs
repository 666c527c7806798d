//! A question on a real terminal: `toolshed run` in a pseudo-terminal (portable-pty), its screen
//! read by a terminal emulator (vt100), against the loopback model server. While a slow call
//! runs (the spinner's case), a write asks; the question stays on screen until it is answered,
//! the answer typed is read whole, and the write's time does not include the wait.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use toolshed_llm::testing::{FakeServer, Reply, chat};

/// A program running in a pseudo-terminal and the screen it draws.
struct Terminal {
    screen: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn portable_pty::Child + Send + Sync>,
}

impl Terminal {
    fn start(dir: &Path, args: &[&str]) -> Terminal {
        let pty =
            native_pty_system().openpty(PtySize { rows: 30, cols: 120, pixel_width: 0, pixel_height: 0 }).unwrap();
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_toolshed"));
        cmd.args(["--root", dir.to_str().unwrap()]);
        cmd.args(args);
        cmd.cwd(dir);
        cmd.env("HOME", dir.join(".home"));
        cmd.env("XDG_CONFIG_HOME", dir.join(".xdg"));
        cmd.env("TOOLSHED_DATA_DIR", dir.join(".data"));
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("OPENAI_API_KEY");
        let child = pty.slave.spawn_command(cmd).unwrap();
        drop(pty.slave);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(30, 120, 1000)));
        let mut reader = pty.master.try_clone_reader().unwrap();
        let feed = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                feed.lock().unwrap().process(&buf[..n]);
            }
        });
        let writer = pty.master.take_writer().unwrap();
        // The master must outlive the child's use of the terminal.
        std::mem::forget(pty.master);
        Terminal { screen, writer, child }
    }

    fn contents(&self) -> String {
        self.screen.lock().unwrap().screen().contents()
    }

    fn wait_for(&mut self, what: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let now = self.contents();
            if now.contains(what) {
                return now;
            }
            assert!(Instant::now() < deadline, "no {what:?} on screen within {timeout:?}:\n{now}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn type_text(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    fn wait_exit(&mut self, timeout: Duration) -> u32 {
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

#[test]
fn run_keeps_its_question_on_screen_and_does_not_count_the_wait_as_tool_time() {
    let server = FakeServer::start(vec![
        Reply::sse(chat::tool_calls(&[
            ("slow", "bash", r#"{"command":"sleep 2; echo slept","description":"wait two seconds"}"#),
            ("w", "write", r#"{"file_path":"answer.txt","content":"written after the question\n"}"#),
        ])),
        Reply::sse(chat::text("Both done.")),
    ])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("toolshed.toml"),
        format!(
            "model = \"fake/test-model\"\n[provider.fake]\nkind = \"openai-chat\"\nbase_url = \"{}\"\n[permission]\nbash = \"allow\"\nedit = \"ask\"\n",
            server.base_url()
        ),
    )
    .unwrap();
    let mut term = Terminal::start(dir.path(), &["run", "wait, then write the answer"]);
    term.wait_for("Allow? [o]nce", Duration::from_secs(30));
    // The bash call keeps running past a second (the spinner's threshold) and ends meanwhile.
    std::thread::sleep(Duration::from_secs(3));
    let screen = term.contents();
    assert!(screen.contains("write needs permission `edit` for:"), "{screen}");
    assert!(screen.contains("answer.txt"), "{screen}");
    assert!(screen.contains("Allow? [o]nce"), "the question is gone after 3 s:\n{screen}");
    assert!(!screen.contains("⠋ bash") && !screen.contains("⠙ bash"), "a spinner over the question:\n{screen}");
    term.type_text("o\r");
    assert_eq!(term.wait_exit(Duration::from_secs(30)), 0, "{}", term.contents());
    let screen = term.contents();
    assert_eq!(std::fs::read_to_string(dir.path().join("answer.txt")).unwrap(), "written after the question\n");
    assert!(screen.contains("Both done."), "{screen}");
    // What came while the question was up is shown after it, in order.
    let asked = screen.find("Allow? [o]nce").unwrap();
    let slept = screen.find("✓ bash").expect("the bash result is shown");
    assert!(slept > asked, "held back until answered:\n{screen}");
    let write_line = screen.lines().find(|l| l.contains("✓ write")).expect("the write result is shown");
    let ms: u64 = write_line
        .rsplit_once('(')
        .and_then(|(_, r)| r.strip_suffix(" ms)"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no duration in {write_line:?}"));
    assert!(ms < 1_000, "the 3 s the question waited are not the write's: {write_line}");
}
