//! The error returned when a file cannot be decoded.

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
    /// What was wrong or expected.
    pub message: String,
}

impl DecodeError {
    pub(crate) fn new(line: u32, column: u32, message: impl Into<String>) -> Self {
        Self {
            line,
            column,
            message: message.into(),
        }
    }

    /// An error located at `span`.
    pub(crate) fn at(span: crate::Span, message: impl Into<String>) -> Self {
        Self::new(span.line, span.column, message)
    }
}
