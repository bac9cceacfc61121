//! Behaviour of `computeguard-decode`, in one test binary.

mod fuzz;
mod json;
mod props;
mod yaml;

use computeguard_decode::{DecodeError, Span};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// `(line, column)` of a span, for compact assertions.
fn at(span: Option<Span>) -> Option<(u32, u32)> {
    span.map(|span| (span.line, span.column))
}

/// The error of a result that should have failed.
fn error<T: std::fmt::Debug>(result: Result<T, DecodeError>) -> Result<DecodeError, String> {
    match result {
        Ok(value) => Err(format!("expected an error, decoded {value:?}")),
        Err(error) => Ok(error),
    }
}
