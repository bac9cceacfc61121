//! computeguard's language server: the findings of `computeguard check` in the editor,
//! while the file is written (issue 35).
//!
//! Who should use this crate: the `computeguard lsp` subcommand (host/cli), and tests that
//! drive the server over an in-memory transport. It owns the protocol (documents, debounce,
//! diagnostics, code actions, hover, watched files) and nothing of the evaluation: that is
//! a [`Checker`], which the CLI implements with the same scan `check` runs (host/cli's
//! `lsp.rs`), so a diagnostic is a finding of `check`, never a copy of its logic.
//!
//! Why rust-analyzer's `lsp-server` (+ `lsp-types`) and not `tower-lsp-server`: the
//! evaluation is synchronous and CPU-bound (wasmtime instances, the scan), the server
//! handles one document at a time, and `lsp-server` is a small crossbeam loop with an
//! in-memory transport ([`lsp_server::Connection::memory`]) for tests; an async runtime
//! would add tokio tasks around blocking calls and nothing else.
//!
//! # Example
//!
//! ```no_run
//! use computeguard_lsp::{Checked, Checker};
//! use std::path::Path;
//!
//! struct Nothing;
//! impl Checker for Nothing {
//!     fn check(&mut self, _path: &Path, _text: &str) -> Checked {
//!         Checked::default()
//!     }
//! }
//! # fn main() -> anyhow::Result<()> {
//! let (connection, io) = lsp_server::Connection::stdio();
//! computeguard_lsp::run(connection, Nothing)?;
//! io.join()?;
//! # Ok(()) }
//! ```
//!
//! # Core concepts
//!
//! - [`Checker`]: one file's text in, its findings ([`Checked`]) out; called on open, after
//!   the debounce on change, and again for every open file after a watched file changed
//!   ([`Checker::reload`] first), and for the other open files after one is saved or after
//!   a change to one they may read (a `.tf`, `.tfvars`, `.bicep`, `.bicepparam` or `.json`
//!   file: variables, parameters, modules). Before each check the checker is given every
//!   open document ([`Checker::open_documents`]), so it reads those files as the editor
//!   holds them.
//! - [`run`]: the server loop over a [`lsp_server::Connection`], until `shutdown`/`exit`.
//!   Full-text sync; a change is checked [`DEFAULT_DEBOUNCE`] after the last keystroke
//!   (`initializationOptions.debounceMs` sets it).

pub use lsp_server;
pub use lsp_types;

mod server;
mod text;

pub use server::{DEFAULT_DEBOUNCE, run};

use std::path::{Path, PathBuf};

/// What the server asks of the evaluation. The CLI implements it with `check`'s scan.
pub trait Checker {
    /// The findings of `text`, the editor's buffer of the file at `path` (it may differ
    /// from the file on disk).
    fn check(&mut self, path: &Path, text: &str) -> Checked;

    /// Markdown about `word` (a VM size), for a hover; `None` when nothing is known.
    fn hover(&mut self, _path: &Path, _word: &str) -> Option<String> {
        None
    }

    /// The fixes that are text edits, for the findings of `text` (asked on a code action,
    /// not on every change: finding one may evaluate candidate sizes, as `plan` does).
    fn fixes(&mut self, _path: &Path, _text: &str) -> Vec<Fix> {
        Vec::new()
    }

    /// Every open document's path and text, given before each [`Checker::check`]: a
    /// check that reads another file (a `.tfvars`, a parameters file, a module) reads the
    /// editor's text of it when it is open, saved or not.
    fn open_documents(&mut self, _documents: &[(&Path, &str)]) {}

    /// A configuration or context file changed: forget what was loaded from it.
    fn reload(&mut self) {}
}

/// How serious a finding is, as `check` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

/// One finding of `check`, at a 1-based line and column of the checked file.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub rule: String,
    pub severity: Severity,
    pub message: String,
    pub line: u32,
    pub column: u32,
    /// How to fix it, in words (`= fix:` of the text report).
    pub remediation: String,
    /// The page of the rule (`docs/rules/<id>.md`, as SARIF's `helpUri`).
    pub help_uri: Option<String>,
    /// The fix as a replacement of the file's text, when it is one known at once.
    pub fix: Option<Fix>,
}

/// A fix that is a text edit, for the finding of `rule` at `line`.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    pub rule: String,
    pub line: u32,
    pub title: String,
    pub edits: Vec<Edit>,
}

/// Replace the 1-based columns `start..end` of `line` with `new_text`.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    pub line: u32,
    pub start: u32,
    pub end: u32,
    pub new_text: String,
}

/// A fact a rule reads that is known only at deploy time (check's "unresolved").
#[derive(Clone, Debug, PartialEq)]
pub struct Note {
    pub line: u32,
    pub message: String,
}

/// What stopped the file from being checked (a broken `computeguard.yaml`, a context file
/// that does not parse): one diagnostic on `file`.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub file: PathBuf,
    /// 1-based; 0 when the message names no line.
    pub line: u32,
    pub message: String,
}

/// The answer for one file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Checked {
    pub findings: Vec<Finding>,
    pub unresolved: Vec<Note>,
    /// The file could not be checked: no findings, this one diagnostic instead.
    pub problem: Option<Problem>,
    /// The comment markers of the file's format (`#`, `//`); empty when it has none
    /// (JSON), so no inline suppression is offered.
    pub comment: Option<String>,
}
