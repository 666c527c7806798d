//! A file's bytes as lines: each keeps its own line ending; new lines get the file's preferred
//! ending (the first one in the file); a UTF-8 byte-order mark is kept. Bytes that are not
//! UTF-8 are matched lossily but written back untouched.

use std::borrow::Cow;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A line ending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eol {
    /// `\n`
    Lf,
    /// `\r\n`
    CrLf,
    /// The last line has none.
    None,
}

impl Eol {
    fn bytes(self) -> &'static [u8] {
        match self {
            Eol::Lf => b"\n",
            Eol::CrLf => b"\r\n",
            Eol::None => b"",
        }
    }
}

/// One line of a file: its bytes without the ending, and the ending.
#[derive(Clone, Debug)]
pub struct Line<'a> {
    raw: &'a [u8],
    eol: Eol,
}

/// A file split into lines for matching and rewriting.
#[derive(Debug)]
pub struct TextFile<'a> {
    bom: bool,
    lines: Vec<Line<'a>>,
    /// The lines as text for matching (borrowed unless the bytes are not UTF-8).
    text: Vec<Cow<'a, str>>,
    preferred: Eol,
}

fn split_lines(body: &[u8]) -> Vec<Line<'_>> {
    let mut lines = Vec::with_capacity(memchr::memchr_iter(b'\n', body).count() + 1);
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', body) {
        let (raw, eol) = match body[start..end].strip_suffix(b"\r") {
            Some(raw) => (raw, Eol::CrLf),
            None => (&body[start..end], Eol::Lf),
        };
        lines.push(Line { raw, eol });
        start = end + 1;
    }
    if start < body.len() {
        lines.push(Line { raw: &body[start..], eol: Eol::None });
    }
    lines
}

/// What goes into the rewritten file, in order.
pub enum Piece<'p> {
    /// Original lines `start..end`, unchanged.
    Keep(usize, usize),
    /// A new line from the patch.
    New(&'p str),
}

impl<'a> TextFile<'a> {
    /// Splits `bytes` into lines.
    pub fn parse(bytes: &'a [u8]) -> TextFile<'a> {
        let (bom, body) = match bytes.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, bytes),
        };
        let lines = split_lines(body);
        let preferred = lines.iter().map(|l| l.eol).find(|e| *e != Eol::None).unwrap_or(Eol::Lf);
        let text = match std::str::from_utf8(body) {
            // One check for the whole file; each line is then a slice of it ('\r' and '\n' are
            // ASCII, so every line boundary is a character boundary).
            Ok(all) => lines
                .iter()
                .map(|l| {
                    let start = l.raw.as_ptr() as usize - body.as_ptr() as usize;
                    Cow::Borrowed(all.get(start..start + l.raw.len()).unwrap_or_default())
                })
                .collect(),
            Err(_) => lines.iter().map(|l| String::from_utf8_lossy(l.raw)).collect(),
        };
        TextFile { bom, lines, text, preferred }
    }

    /// The lines as text, for matching.
    pub fn lines(&self) -> &[Cow<'a, str>] {
        &self.text
    }

    /// Writes the file made of `pieces`: kept lines keep their endings, new lines get the
    /// preferred one, and the last line always ends with one (Codex's rule).
    pub fn render(&self, pieces: &[Piece<'_>], size_hint: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(size_hint + 3);
        if self.bom {
            out.extend_from_slice(BOM);
        }
        let preferred = self.preferred.bytes();
        for piece in pieces {
            match *piece {
                Piece::Keep(start, end) => {
                    for line in &self.lines[start..end] {
                        out.extend_from_slice(line.raw);
                        out.extend_from_slice(if line.eol == Eol::None { preferred } else { line.eol.bytes() });
                    }
                }
                Piece::New(text) => {
                    out.extend_from_slice(text.as_bytes());
                    out.extend_from_slice(preferred);
                }
            }
        }
        if self.bom && out.len() == BOM.len() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_each_lines_ending_and_terminates_the_last() {
        let f = TextFile::parse(b"a\r\nb\nc");
        assert_eq!(f.lines(), ["a", "b", "c"]);
        let out = f.render(&[Piece::Keep(0, 2), Piece::New("x"), Piece::Keep(2, 3)], 0);
        assert_eq!(out, b"a\r\nb\nx\r\nc\r\n");
    }

    #[test]
    fn bom_is_kept_out_of_the_text_and_written_back() {
        let f = TextFile::parse(b"\xEF\xBB\xBFhello\n");
        assert_eq!(f.lines(), ["hello"]);
        assert_eq!(f.render(&[Piece::New("bye")], 0), b"\xEF\xBB\xBFbye\n");
        assert_eq!(f.render(&[], 0), b"");
    }

    #[test]
    fn non_utf8_bytes_survive_untouched() {
        let f = TextFile::parse(b"caf\xE9\nx\n");
        assert_eq!(f.lines()[0], "caf\u{fffd}");
        assert_eq!(f.render(&[Piece::Keep(0, 1), Piece::New("y")], 0), b"caf\xE9\ny\n");
    }

    #[test]
    fn trailing_blank_lines_are_kept() {
        let f = TextFile::parse(b"a\n\n");
        assert_eq!(f.lines(), ["a", ""]);
        assert_eq!(f.render(&[Piece::Keep(0, 2)], 0), b"a\n\n");
    }
}
