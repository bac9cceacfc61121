//! JSON text to a document: the value from `serde_json`, the positions from a linear scan.

use std::collections::HashSet;

use serde_json::Value;

use crate::positions::Positions;
use crate::text::to_u32;
use crate::{DecodeError, Document, Span, Syntax};

/// Decodes a JSON text (an ARM template, a Kubernetes manifest in JSON, ...).
///
/// The value is exactly what `serde_json` parses; a leading byte order mark is allowed. The
/// positions come from a separate scan that is linear in the text, so large templates stay
/// cheap. The returned document's index is 0.
///
/// # Errors
///
/// Invalid JSON (`invalid json: ...` with `serde_json`'s line and the column in characters),
/// including nesting deeper than 128 levels, and duplicate keys in an object: JSON leaves
/// their meaning open and two tools could keep different copies.
pub fn decode_json(text: &str) -> Result<Document, DecodeError> {
    let (body, base) = match text.strip_prefix('\u{feff}') {
        Some(rest) => (rest, text.len() - rest.len()),
        None => (text, 0),
    };
    let value: Value = serde_json::from_str(body).map_err(|error| json_error(&error, body))?;
    let positions = scan(body, base)?;
    Ok(Document {
        index: 0,
        value,
        positions,
    })
}

/// Rewords a `serde_json` error in the crate's style.
fn json_error(error: &serde_json::Error, text: &str) -> DecodeError {
    let full = error.to_string();
    let message = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(message, _)| message);
    let message = match message {
        "EOF while parsing a list" => "unexpected end of input, expected `]`",
        "EOF while parsing an object" => "unexpected end of input, expected `}`",
        "EOF while parsing a string" => "unexpected end of input, expected `\"`",
        "EOF while parsing a value" => "unexpected end of input, expected a value",
        "expected ident" => "expected `true`, `false` or `null`",
        "expected value" => "expected a value",
        "key must be a string" => "expected a string as object key",
        "trailing comma" => "expected another element after `,`",
        "trailing characters" => "expected the end of input after the value",
        "recursion limit exceeded" => {
            "nesting too deep: expected at most 128 levels of arrays and objects"
        }
        "control character (\\u0000-\\u001F) found while parsing a string" => {
            "expected control characters in a string to be escaped"
        }
        "number out of range" => "number out of range: expected a finite number",
        other => other,
    };
    let line = error.line().max(1);
    DecodeError::invalid(
        Syntax::Json,
        to_u32(line),
        char_column(text, line, error.column()),
        message,
    )
}

/// `serde_json` counts columns in bytes; convert to characters like the positions.
fn char_column(text: &str, line: usize, byte_column: usize) -> u32 {
    let chars = text
        .split('\n')
        .nth(line.saturating_sub(1))
        .and_then(|line_text| line_text.as_bytes().get(..byte_column.min(line_text.len())))
        .map_or(byte_column, |prefix| {
            prefix.iter().filter(|&&b| !is_continuation(b)).count()
        });
    to_u32(chars.max(1))
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// Walks JSON text that `serde_json` accepted and records where every node starts.
struct Scanner<'a> {
    text: &'a str,
    pos: usize,
    line: u32,
    column: u32,
    /// Bytes before `text` in the file (a byte order mark).
    base: usize,
}

enum Open {
    Object { node: usize, keys: HashSet<String> },
    Array { node: usize },
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn bump(&mut self) {
        if let Some(byte) = self.peek() {
            self.pos += 1;
            if byte == b'\n' {
                self.line = self.line.saturating_add(1);
                self.column = 1;
            } else if !is_continuation(byte) {
                self.column = self.column.saturating_add(1);
            }
        }
    }

    fn span(&self) -> Span {
        Span {
            line: self.line,
            column: self.column,
            offset: self.base + self.pos,
        }
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.bump();
        }
    }

    fn unexpected(&self) -> DecodeError {
        // Unreachable for text that `serde_json` accepted; reported rather than panicking.
        DecodeError::invalid_at(Syntax::Json, self.span(), "unexpected character")
    }

    fn expect(&mut self, byte: u8) -> Result<(), DecodeError> {
        if self.peek() == Some(byte) {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected())
        }
    }

    /// Skips a string and returns it with its quotes, escapes untouched.
    fn string(&mut self) -> Result<&'a str, DecodeError> {
        let start = self.pos;
        self.expect(b'"')?;
        loop {
            match self.peek() {
                None => return Err(self.unexpected()),
                Some(b'"') => break,
                Some(b'\\') => {
                    self.bump();
                    self.bump();
                }
                Some(_) => self.bump(),
            }
        }
        self.bump();
        self.text
            .get(start..self.pos)
            .ok_or_else(|| self.unexpected())
    }

    /// Skips a number, `true`, `false` or `null`.
    fn literal(&mut self) {
        while let Some(byte) = self.peek() {
            if matches!(byte, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.bump();
        }
    }

    /// Reads `"key":` and records the entry, located at the key.
    fn key(
        &mut self,
        positions: &mut Positions,
        parent: usize,
        keys: &mut HashSet<String>,
    ) -> Result<usize, DecodeError> {
        self.skip_whitespace();
        let at = self.span();
        let raw = self.string()?;
        let key = if raw.contains('\\') {
            serde_json::from_str::<String>(raw).map_err(|_| self.unexpected())?
        } else {
            raw.get(1..raw.len().saturating_sub(1))
                .unwrap_or_default()
                .to_owned()
        };
        if keys.contains(&key) {
            return Err(DecodeError::at(at, format!("duplicate key `{key}`")));
        }
        keys.insert(key.clone());
        self.skip_whitespace();
        self.expect(b':')?;
        Ok(positions.key(parent, key, at))
    }
}

/// Positions of every node of `text`, which must be valid JSON.
fn scan(text: &str, base: usize) -> Result<Positions, DecodeError> {
    let mut s = Scanner {
        text,
        pos: 0,
        line: 1,
        column: 1,
        base,
    };
    let mut positions = Positions::default();
    let mut stack: Vec<Open> = Vec::new();
    s.skip_whitespace();
    // The node of the value about to be read.
    let mut node = positions.root(s.span());
    loop {
        s.skip_whitespace();
        match s.peek() {
            Some(b'{') => {
                s.bump();
                s.skip_whitespace();
                if s.peek() == Some(b'}') {
                    s.bump();
                } else {
                    let mut keys = HashSet::new();
                    let parent = node;
                    node = s.key(&mut positions, parent, &mut keys)?;
                    stack.push(Open::Object { node: parent, keys });
                    continue;
                }
            }
            Some(b'[') => {
                s.bump();
                s.skip_whitespace();
                if s.peek() == Some(b']') {
                    s.bump();
                } else {
                    stack.push(Open::Array { node });
                    node = positions.item(node, s.span());
                    continue;
                }
            }
            Some(b'"') => {
                s.string()?;
            }
            Some(_) => s.literal(),
            None => return Err(s.unexpected()),
        }
        // A value is complete: close the containers it ends, then move to the next sibling.
        loop {
            s.skip_whitespace();
            let Some(open) = stack.last_mut() else {
                positions.finish();
                return Ok(positions);
            };
            match (s.peek(), open) {
                (Some(b','), Open::Array { node: parent }) => {
                    let parent = *parent;
                    s.bump();
                    s.skip_whitespace();
                    node = positions.item(parent, s.span());
                    break;
                }
                (Some(b','), Open::Object { node: parent, keys }) => {
                    let parent = *parent;
                    s.bump();
                    node = s.key(&mut positions, parent, keys)?;
                    break;
                }
                (Some(b']'), Open::Array { .. }) | (Some(b'}'), Open::Object { .. }) => {
                    s.bump();
                    stack.pop();
                }
                _ => return Err(s.unexpected()),
            }
        }
    }
}
