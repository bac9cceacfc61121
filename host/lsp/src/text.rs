//! Positions and names: `file://` URIs to paths and back, 1-based character columns to the
//! protocol's UTF-16 offsets, and the word under the cursor.

use lsp_types::{Position, Range, Uri};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The path of a `file://` URI (percent-decoded); `None` for another scheme.
pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes.get(i).copied().unwrap_or_default();
        if b == b'%'
            && let Some(h) = rest.get(i + 1..i + 3)
            && let Ok(v) = u8::from_str_radix(h, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b);
        i += 1;
    }
    Some(PathBuf::from(String::from_utf8(out).ok()?))
}

/// The `file://` URI of an absolute path.
pub fn uri_of(path: &Path) -> Option<Uri> {
    let mut s = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            s.push(char::from(b));
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    Uri::from_str(&s).ok()
}

/// The 0-based line `line` (1-based) of `text`, or "".
pub fn line_text(text: &str, line: u32) -> &str {
    text.lines()
        .nth(line.saturating_sub(1) as usize)
        .unwrap_or_default()
}

/// UTF-16 offset of the 1-based character column `column` of `line`.
fn utf16(line: &str, column: u32) -> u32 {
    line.chars()
        .take(column.saturating_sub(1) as usize)
        .map(|c| c.len_utf16() as u32)
        .sum()
}

/// The range a finding at `line:column` underlines: from the column to the end of the
/// line's content, as the text report's caret does.
pub fn range_at(text: &str, line: u32, column: u32) -> Range {
    let l = line_text(text, line);
    let start = utf16(l, column.max(1));
    let end = utf16(l, l.trim_end().chars().count() as u32 + 1).max(start);
    let line0 = line.saturating_sub(1);
    Range::new(Position::new(line0, start), Position::new(line0, end))
}

/// The range of the 1-based columns `start..end` of `line`.
pub fn columns(text: &str, line: u32, start: u32, end: u32) -> Range {
    let l = line_text(text, line);
    let line0 = line.saturating_sub(1);
    Range::new(
        Position::new(line0, utf16(l, start)),
        Position::new(line0, utf16(l, end)),
    )
}

/// The word (letters, digits, `_`, `-`, `.`, `:`, `/`) under `pos`.
pub fn word_at(text: &str, pos: Position) -> Option<String> {
    let l = line_text(text, pos.line + 1);
    let word = |c: char| c.is_alphanumeric() || "_-.:/".contains(c);
    let mut units = 0u32;
    let mut at = None;
    for (i, c) in l.char_indices() {
        if units >= pos.character {
            at = Some(i);
            break;
        }
        units += c.len_utf16() as u32;
    }
    let at = at.unwrap_or(l.len());
    let start = l.get(..at)?.rfind(|c: char| !word(c)).map_or(0, |i| i + 1);
    let end = l
        .get(at..)?
        .find(|c: char| !word(c))
        .map_or(l.len(), |i| at + i);
    let w = l.get(start..end)?.trim_matches(|c| c == '.' || c == ':');
    (!w.is_empty()).then(|| w.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn uri_round_trip_with_spaces() {
        let p = Path::new("/tmp/a b/gpu pool.yaml");
        let u = uri_of(p).unwrap();
        assert_eq!(u.as_str(), "file:///tmp/a%20b/gpu%20pool.yaml");
        assert_eq!(path_of(&u).unwrap(), p);
    }

    #[test]
    fn range_from_column_to_end_of_content() {
        let r = range_at("a: 1\n  vmSize: Standard_NC6   \n", 2, 3);
        assert_eq!(
            (r.start.line, r.start.character, r.end.character),
            (1, 2, 22)
        );
    }

    #[test]
    fn word_under_cursor() {
        let t = "  vm_size: \"Standard_NC24ads_A100_v4\"\n";
        assert_eq!(
            word_at(t, Position::new(0, 16)).as_deref(),
            Some("Standard_NC24ads_A100_v4")
        );
    }
}
