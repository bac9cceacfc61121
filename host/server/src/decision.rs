//! What a review decided: the verdict, the findings after the configuration, the
//! policies that failed, and the admission answer. `review` builds it, `mutate` reads its
//! findings, the server logs and counts it.

use crate::admission::Answer;
use crate::config::{Enforcement, FailureMode};
use computeguard_policyset::Severity;

/// How a request was decided, for logs and metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Admitted with no finding above audit.
    Allowed,
    /// Admitted with warnings.
    Warned,
    /// Rejected.
    Denied,
    /// Not evaluated: DELETE/CONNECT, excluded namespace or label, or no compute declared.
    Skipped,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allowed => "allowed",
            Verdict::Warned => "warned",
            Verdict::Denied => "denied",
            Verdict::Skipped => "skipped",
        }
    }
}

/// A finding after the config has been applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub rule: String,
    pub severity: Severity,
    pub enforcement: Enforcement,
    pub message: String,
    pub path: String,
    /// The resource's compute-model kind and name (`namespace/name`).
    pub kind: String,
    pub resource: String,
}

/// A policy that gave no verdict, or an object the host could not read.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The policy's name, or `computeguard` when the host itself could not decode the
    /// object.
    pub policy: String,
    /// `timeout`, `trap`, `memory`, `output`, `policy`, `host` or `input`, for the
    /// metric label.
    pub kind: &'static str,
    pub message: String,
    pub mode: FailureMode,
}

/// The decision and what led to it.
#[derive(Debug)]
pub struct Decision {
    pub answer: Answer,
    pub verdict: Verdict,
    /// Why the request was skipped, when it was.
    pub skipped: Option<&'static str>,
    pub findings: Vec<Finding>,
    pub failures: Vec<Failure>,
    /// Policies whose answer carried a JSON Patch: never sent (only computeguard's own,
    /// switched-on mutations are), logged.
    pub refused_patches: Vec<String>,
}

/// Which endpoint asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `/validate`: findings deny or warn per enforcement.
    Validate,
    /// `/mutate`: always admits; returns the opt-in mutations as a JSON Patch.
    Mutate,
}
