//! The error returned when a file cannot be decoded.

use std::fmt;

/// Why a file could not be decoded, and where.
///
/// The message follows the project's style (lowercase, no final period, user input in
/// backticks) and says what was expected; it does not name the file, which the caller adds,
/// e.g. as `path:line:column: message`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line} column {column}")]
pub struct DecodeError {
    /// 1-based line of the problem.
    pub line: u32,
    /// 1-based column of the problem, counted in characters.
    pub column: u32,
    /// What was wrong or expected, and for a syntax error the syntax the text breaks.
    pub message: Message,
}

/// What was wrong or expected. Displayed as ``invalid yaml: `text` `` for a syntax
/// error and as the text alone otherwise, and turned into that string by `.into()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The syntax the text breaks, for a syntax error; `None` for a problem in text that
    /// is well-formed (a duplicate key, a key that is a mapping, a limit).
    pub syntax: Option<Syntax>,
    /// What was wrong or expected, without the ``invalid <syntax>: `` prefix.
    pub text: String,
}

/// A syntax the decoders read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Syntax {
    /// YAML ([`crate::decode_yaml`]).
    Yaml,
    /// JSON ([`crate::decode_json`]).
    Json,
    /// HCL, Terraform's native syntax ([`crate::decode_hcl`]).
    Hcl,
    /// Bicep ([`crate::decode_bicep`]).
    Bicep,
}

impl Syntax {
    /// `yaml`, `json`, `hcl` or `bicep`, as in ``invalid yaml: ``.
    pub fn as_str(self) -> &'static str {
        match self {
            Syntax::Yaml => "yaml",
            Syntax::Json => "json",
            Syntax::Hcl => "hcl",
            Syntax::Bicep => "bicep",
        }
    }
}

impl fmt::Display for Syntax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.syntax {
            Some(syntax) => write!(f, "invalid {syntax}: {}", self.text),
            None => f.write_str(&self.text),
        }
    }
}

impl From<Message> for String {
    fn from(message: Message) -> String {
        message.to_string()
    }
}

impl DecodeError {
    /// A problem in well-formed text at `line` and `column`.
    pub(crate) fn new(line: u32, column: u32, text: impl Into<String>) -> Self {
        Self {
            line,
            column,
            message: Message {
                syntax: None,
                text: text.into(),
            },
        }
    }

    /// A problem in well-formed text at `span`.
    pub(crate) fn at(span: crate::Span, text: impl Into<String>) -> Self {
        Self::new(span.line, span.column, text)
    }

    /// Text that is not valid `syntax`, at `line` and `column`.
    pub(crate) fn invalid(syntax: Syntax, line: u32, column: u32, text: impl Into<String>) -> Self {
        let mut error = Self::new(line, column, text);
        error.message.syntax = Some(syntax);
        error
    }

    /// Text that is not valid `syntax`, at `span`.
    pub(crate) fn invalid_at(syntax: Syntax, span: crate::Span, text: impl Into<String>) -> Self {
        Self::invalid(syntax, span.line, span.column, text)
    }
}
