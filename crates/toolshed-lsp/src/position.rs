//! Positions and addresses as LSP wants them: 0-based lines with UTF-16 columns, and
//! `file://` URIs. The tool's own positions are 1-based lines and 1-based columns counted in
//! characters (what a model sees in `read`'s output), so every conversion goes through the
//! line's text.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::Uri;

/// The UTF-16 offset of the character at `char_index` (0-based) of `line`; an index past the
/// end gives the end of the line.
pub fn utf16_offset(line: &str, char_index: usize) -> u32 {
    let units: usize = line.chars().take(char_index).map(char::len_utf16).sum();
    u32::try_from(units).unwrap_or(u32::MAX)
}

/// The 0-based character index a UTF-16 offset of `line` falls on (an offset inside a surrogate
/// pair gives that character; one past the end gives the end of the line).
pub fn char_index(line: &str, utf16: u32) -> usize {
    let target = utf16 as usize;
    let mut units = 0;
    for (index, ch) in line.chars().enumerate() {
        if units + ch.len_utf16() > target {
            return index;
        }
        units += ch.len_utf16();
    }
    line.chars().count()
}

/// Line `index` (0-based) of `text`, without its line ending.
pub fn line_at(text: &str, index: u32) -> Option<&str> {
    text.split('\n').nth(index as usize).map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// Characters that stay as they are in a file URI's path; everything else is percent-encoded.
fn keep(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'/')
}

/// The `file://` URI of an absolute path.
pub fn file_uri(path: &Path) -> Option<Uri> {
    use std::fmt::Write as _;
    let mut text = String::from("file://");
    for &byte in path_bytes(path).as_ref() {
        if keep(byte) {
            text.push(char::from(byte));
        } else {
            let _ = write!(text, "%{byte:02X}");
        }
    }
    Uri::from_str(&text).ok()
}

/// The path a `file://` URI names, if it is one.
pub fn uri_path(uri: &Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = rest.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(path_from_bytes(out))
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    use std::os::unix::ffi::OsStrExt;
    std::borrow::Cow::Borrowed(path.as_os_str().as_bytes())
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> std::borrow::Cow<'_, [u8]> {
    std::borrow::Cow::Owned(path.to_string_lossy().replace('\\', "/").into_bytes())
}

#[cfg(unix)]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(bytes))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_utf16_units_for_lsp_and_characters_for_the_model() {
        let line = "s = \"héllo 🎉\"; y = 1";
        // 'y' is character 15; the emoji before it takes two UTF-16 units.
        assert_eq!(line.chars().nth(15), Some('y'));
        assert_eq!(utf16_offset(line, 15), 16);
        assert_eq!(char_index(line, 16), 15);
        // An offset inside the surrogate pair lands on the emoji itself.
        assert_eq!(char_index(line, 12), 11);
        assert_eq!(utf16_offset(line, 1000), 21);
        assert_eq!(char_index(line, 1000), line.chars().count());
        assert_eq!(utf16_offset("", 3), 0);
    }

    #[test]
    fn lines_lose_their_endings() {
        let text = "a\r\nb\nc";
        assert_eq!(line_at(text, 0), Some("a"));
        assert_eq!(line_at(text, 1), Some("b"));
        assert_eq!(line_at(text, 2), Some("c"));
        assert_eq!(line_at(text, 3), None);
    }

    #[test]
    fn file_uris_round_trip_spaces_and_non_ascii_names() {
        let path = Path::new("/tmp/a dir/naïve #1.py");
        let uri = file_uri(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20dir/na%C3%AFve%20%231.py");
        assert_eq!(uri_path(&uri).unwrap(), path);
        let other = Uri::from_str("file:///tmp/x%3Ay.py").unwrap();
        assert_eq!(uri_path(&other).unwrap(), Path::new("/tmp/x:y.py"));
        assert_eq!(uri_path(&Uri::from_str("untitled:1").unwrap()), None);
    }
}
