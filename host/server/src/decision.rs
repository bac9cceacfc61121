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
    /// `allowed`, `warned`, `denied` or `skipped`: the metric label and log field.
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
    /// The id of the rule that fired.
    pub rule: String,
    /// The policy's severity after the configured `rules:` level.
    pub severity: Severity,
    /// Deny, warn or audit: `webhook.enforcement` for the rule, else from the severity
    /// (error denies, warning warns, info audits).
    pub enforcement: Enforcement,
    /// The policy's message, control characters escaped.
    pub message: String,
    /// RFC 6901 JSON pointer to the field at fault in the object (`""`: the whole object).
    pub path: String,
    /// The resource's compute-model kind (`k8s-workload`).
    pub kind: String,
    /// The resource's name: `namespace/name` for namespaced objects, else the name.
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
    /// What went wrong, for the log and the answer's message.
    pub message: String,
    /// The policy's failure mode (its override, else `failurePolicy`): whether the
    /// failure denies (`Fail`) or warns (`Ignore`).
    pub mode: FailureMode,
}

/// The decision and what led to it.
#[derive(Debug)]
pub struct Decision {
    /// What is sent back to the API server.
    pub answer: Answer,
    /// Allowed, warned, denied or skipped, for the log and the `verdict` metric label.
    pub verdict: Verdict,
    /// Why the request was skipped, when it was.
    pub skipped: Option<&'static str>,
    /// Every finding not switched `off` (audited ones included), policy by policy.
    pub findings: Vec<Finding>,
    /// The policies that gave no verdict, or the host's failure to decode the object.
    pub failures: Vec<Failure>,
    /// Policies whose answer carried a JSON Patch: never sent (only computeguard's own,
    /// switched-on mutations are), logged.
    pub refused_patches: Vec<String>,
    /// `hit` when the name-blind policies' answers came from the template cache, `miss`
    /// when the object's template was evaluated (see `crate::template`); `None` otherwise.
    pub template: Option<&'static str>,
}

/// Which endpoint asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `/validate`: findings deny or warn per enforcement.
    Validate,
    /// `/mutate`: always admits; returns the opt-in mutations as a JSON Patch.
    Mutate,
}
