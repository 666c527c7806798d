//! Reading JSON lines from a peer that toolshed serves over stdio (an MCP or ACP client): a line
//! is read up to [`MAX_LINE`] bytes, and the rest of a longer one is skipped rather than held, so
//! a line that never ends cannot take the machine's memory.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest message a client may send over stdio (a prompt with files in it, a `write` of a
/// big file): 64 MiB.
pub const MAX_LINE: usize = 64 << 20;

/// What [`read_line`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// The input ended before any byte of a line.
    End,
    /// A whole line (its `\n` kept, when the input did not end first) is in the buffer.
    Whole,
    /// A line longer than the limit: the buffer holds its first bytes, the rest was skipped.
    TooLong,
}

/// Reads one line into `line` (cleared first), keeping at most `max` bytes of it.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    line.clear();
    let mut too_long = false;
    let mut read_any = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (read_any, too_long) {
                (false, _) => Line::End,
                (true, true) => Line::TooLong,
                (true, false) => Line::Whole,
            });
        }
        read_any = true;
        let (taken, ended) = match available.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if !too_long {
            if line.len() + taken > max {
                too_long = true;
                let room = max.saturating_sub(line.len());
                line.extend_from_slice(&available[..room.min(taken)]);
            } else {
                line.extend_from_slice(&available[..taken]);
            }
        }
        input.consume(taken);
        if ended {
            return Ok(if too_long { Line::TooLong } else { Line::Whole });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = tokio::io::BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut line = Vec::new();
        loop {
            let got = read_line(&mut reader, &mut line, max).await.unwrap();
            if got == Line::End {
                return out;
            }
            out.push((got, line.clone()));
        }
    }

    #[tokio::test]
    async fn a_long_line_is_cut_and_skipped_and_the_next_one_read_whole() {
        let got = lines(b"short\nmuch too long a line\nok\nlast", 8).await;
        assert_eq!(
            got,
            vec![
                (Line::Whole, b"short\n".to_vec()),
                (Line::TooLong, b"much too".to_vec()),
                (Line::Whole, b"ok\n".to_vec()),
                (Line::Whole, b"last".to_vec()),
            ]
        );
        assert_eq!(lines(b"", 8).await, vec![]);
        assert_eq!(lines(b"12345678\n", 8).await, vec![(Line::TooLong, b"12345678".to_vec())]);
        assert_eq!(lines(b"1234567\n", 8).await, vec![(Line::Whole, b"1234567\n".to_vec())]);
        assert_eq!(lines(b"no end at all, ever", 8).await, vec![(Line::TooLong, b"no end a".to_vec())]);
    }
}
