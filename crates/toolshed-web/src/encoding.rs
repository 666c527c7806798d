//! `Content-Encoding` of response bodies: gzip and deflate are decoded as the body streams in,
//! with the size cap applied to the decoded bytes, so a small compressed body that inflates to
//! gigabytes (a "gzip bomb") costs at most the cap in memory. Other codings (br, zstd, ...)
//! are not asked for and are refused.

use std::io::{self, Write};

use flate2::write::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};

/// The `Accept-Encoding` webfetch sends: what [`Decoder`] can decode.
pub const ACCEPT_ENCODING: &str = "gzip, deflate";

/// How a body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    /// Not encoded.
    Identity,
    /// gzip (RFC 1952), possibly several members one after another.
    Gzip,
    /// deflate: zlib-wrapped (RFC 1950) as the standard says, or raw (RFC 1951) as some
    /// servers send it; told apart by the first two bytes.
    Deflate,
}

impl Coding {
    /// The coding named by a `Content-Encoding` header value; `Err` holds a value webfetch cannot
    /// decode (one other coding, or several stacked).
    pub fn parse(header: Option<&str>) -> Result<Coding, String> {
        let Some(header) = header else { return Ok(Coding::Identity) };
        let codings: Vec<String> = header
            .split(',')
            .map(|c| c.trim().to_ascii_lowercase())
            .filter(|c| !c.is_empty() && c != "identity")
            .collect();
        match codings.as_slice() {
            [] => Ok(Coding::Identity),
            [one] if one == "gzip" || one == "x-gzip" => Ok(Coding::Gzip),
            [one] if one == "deflate" => Ok(Coding::Deflate),
            _ => Err(header.trim().to_string()),
        }
    }

    /// The coding's name, for people and models.
    pub fn name(self) -> &'static str {
        match self {
            Coding::Identity => "identity",
            Coding::Gzip => "gzip",
            Coding::Deflate => "deflate",
        }
    }
}

/// A `Vec` that keeps the first `cap` bytes written to it and notes that more came.
struct Capped {
    bytes: Vec<u8>,
    cap: usize,
    overflowed: bool,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = self.cap.saturating_sub(self.bytes.len());
        let take = room.min(data.len());
        self.bytes.extend_from_slice(&data[..take]);
        if take < data.len() {
            self.overflowed = true;
        }
        // The rest is accepted and dropped, so the decoder does not fail on a full buffer.
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Inner {
    Identity(Capped),
    Gzip(Box<MultiGzDecoder<Capped>>),
    /// deflate before its first two bytes arrived.
    DeflateStart(Vec<u8>, Capped),
    Zlib(Box<ZlibDecoder<Capped>>),
    RawDeflate(Box<DeflateDecoder<Capped>>),
    /// Only while switching from one state to another.
    Empty,
}

/// Decodes a body as its pieces arrive, keeping at most `cap` decoded bytes.
pub struct Decoder {
    inner: Inner,
    /// Compressed bytes received.
    received: u64,
}

/// How much compressed input is decoded at once, so a bomb is noticed after at most about a
/// thousand times this much output.
const STEP: usize = 4096;

impl Decoder {
    /// A decoder for `coding` keeping the first `cap` decoded bytes.
    pub fn new(coding: Coding, cap: usize) -> Self {
        let out = Capped { bytes: Vec::new(), cap, overflowed: false };
        let inner = match coding {
            Coding::Identity => Inner::Identity(out),
            Coding::Gzip => Inner::Gzip(Box::new(MultiGzDecoder::new(out))),
            Coding::Deflate => Inner::DeflateStart(Vec::new(), out),
        };
        Decoder { inner, received: 0 }
    }

    /// Decodes the next piece of the body. An error says why the body is not valid in its coding.
    pub fn write(&mut self, data: &[u8]) -> Result<(), String> {
        self.received += data.len() as u64;
        for piece in data.chunks(STEP) {
            if self.full() {
                break;
            }
            self.write_piece(piece).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn write_piece(&mut self, piece: &[u8]) -> io::Result<()> {
        if let Inner::DeflateStart(head, _) = &mut self.inner {
            head.extend_from_slice(piece);
            if head.len() < 2 {
                return Ok(());
            }
            let Inner::DeflateStart(head, out) = std::mem::replace(&mut self.inner, Inner::Empty) else {
                return Ok(());
            };
            let zlib = (head[0] & 0x0f) == 8 && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0;
            self.inner = if zlib {
                Inner::Zlib(Box::new(ZlibDecoder::new(out)))
            } else {
                Inner::RawDeflate(Box::new(DeflateDecoder::new(out)))
            };
            return self.write_piece(&head);
        }
        match &mut self.inner {
            Inner::Identity(out) => out.write_all(piece),
            Inner::Gzip(d) => d.write_all(piece),
            Inner::Zlib(d) => d.write_all(piece),
            Inner::RawDeflate(d) => d.write_all(piece),
            Inner::DeflateStart(..) | Inner::Empty => Ok(()),
        }
    }

    /// Whether more than the cap was decoded: reading can stop, the body is cut.
    pub fn full(&self) -> bool {
        self.output().is_some_and(|o| o.overflowed)
    }

    /// Decoded bytes so far.
    pub fn len(&self) -> usize {
        self.output().map_or(0, |o| o.bytes.len())
    }

    /// Whether nothing was decoded yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Compressed (as received) bytes so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    fn output(&self) -> Option<&Capped> {
        match &self.inner {
            Inner::Identity(out) | Inner::DeflateStart(_, out) => Some(out),
            Inner::Gzip(d) => Some(d.get_ref()),
            Inner::Zlib(d) => Some(d.get_ref()),
            Inner::RawDeflate(d) => Some(d.get_ref()),
            Inner::Empty => None,
        }
    }

    /// The decoded body and whether it was cut at the cap. `complete` says the whole body was
    /// received, so an unfinished compressed stream is an error rather than a cut.
    pub fn finish(mut self, complete: bool) -> Result<(Vec<u8>, bool), String> {
        if complete && !self.full() {
            let finished = match &mut self.inner {
                Inner::Gzip(d) => d.try_finish(),
                Inner::Zlib(d) => d.try_finish(),
                Inner::RawDeflate(d) => d.try_finish(),
                Inner::DeflateStart(head, _) if !head.is_empty() => {
                    Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the deflate stream ends after one byte"))
                }
                _ => Ok(()),
            };
            finished.map_err(|e| e.to_string())?;
        }
        let out = match &mut self.inner {
            Inner::Identity(out) | Inner::DeflateStart(_, out) => out,
            Inner::Gzip(d) => d.get_mut(),
            Inner::Zlib(d) => d.get_mut(),
            Inner::RawDeflate(d) => d.get_mut(),
            Inner::Empty => return Ok((Vec::new(), false)),
        };
        Ok((std::mem::take(&mut out.bytes), out.overflowed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::Compression;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn decode(coding: Coding, body: &[u8], cap: usize, piece: usize) -> Result<(Vec<u8>, bool), String> {
        let mut d = Decoder::new(coding, cap);
        for p in body.chunks(piece) {
            d.write(p)?;
            if d.full() {
                return d.finish(false);
            }
        }
        d.finish(true)
    }

    #[test]
    fn content_encoding_headers_are_parsed() {
        assert_eq!(Coding::parse(None), Ok(Coding::Identity));
        assert_eq!(Coding::parse(Some("identity")), Ok(Coding::Identity));
        assert_eq!(Coding::parse(Some(" GZIP ")), Ok(Coding::Gzip));
        assert_eq!(Coding::parse(Some("x-gzip")), Ok(Coding::Gzip));
        assert_eq!(Coding::parse(Some("deflate")), Ok(Coding::Deflate));
        assert_eq!(Coding::parse(Some("br")), Err("br".into()));
        assert_eq!(Coding::parse(Some("gzip, br")), Err("gzip, br".into()));
    }

    #[test]
    fn gzip_deflate_and_zlib_decode_in_any_pieces() {
        let text = "hello, webfetch! ".repeat(1000);
        let mut zlib = ZlibEncoder::new(Vec::new(), Compression::default());
        zlib.write_all(text.as_bytes()).unwrap();
        let mut raw = DeflateEncoder::new(Vec::new(), Compression::default());
        raw.write_all(text.as_bytes()).unwrap();
        for (coding, body) in [
            (Coding::Gzip, gzip(text.as_bytes())),
            (Coding::Deflate, zlib.finish().unwrap()),
            (Coding::Deflate, raw.finish().unwrap()),
            (Coding::Identity, text.as_bytes().to_vec()),
        ] {
            for piece in [1, 7, 4096, 1 << 20] {
                assert_eq!(decode(coding, &body, 1 << 20, piece), Ok((text.as_bytes().to_vec(), false)));
            }
        }
    }

    #[test]
    fn several_gzip_members_are_one_body() {
        let body = [gzip(b"first "), gzip(b"second")].concat();
        assert_eq!(decode(Coding::Gzip, &body, 100, 3), Ok((b"first second".to_vec(), false)));
    }

    #[test]
    fn the_cap_applies_to_decoded_bytes() {
        let zeros = vec![0u8; 4 << 20];
        let body = gzip(&zeros);
        assert!(body.len() < 10_000);
        let (bytes, cut) = decode(Coding::Gzip, &body, 1 << 20, 1024).unwrap();
        assert_eq!(bytes.len(), 1 << 20);
        assert!(cut);
    }

    #[test]
    fn corrupt_or_unfinished_bodies_are_errors() {
        assert!(decode(Coding::Gzip, b"not gzip at all", 100, 4).is_err());
        let body = gzip(&[b'x'; 1000]);
        assert!(decode(Coding::Gzip, &body[..body.len() / 2], 10_000, 4).is_err());
    }
}
