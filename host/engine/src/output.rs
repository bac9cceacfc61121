//! What crosses back from a policy, bounded and checked before the host copies it.
//!
//! A policy is untrusted code: its answer could hold millions of violations, huge
//! messages, rule ids it never declared or pointers that are not pointers. The
//! `evaluate` result is lifted through [`BoundedList`] and [`BoundedString`], which
//! read each list's and string's length from the guest's memory and check it against
//! [`OutputLimits`] before anything is copied to the host; then every field is
//! validated before use.

mod lift;

use crate::bindings::{GuestError, ResourceRef, Response, Severity, Violation};
pub(crate) use lift::{BoundedList, BoundedString};
use std::cell::Cell;
use std::collections::HashSet;
use wasmtime::component::{ComponentType, Lift};

/// A policy's severity as the core's, the one severity the policy set and the front ends
/// report in. Here because only the engine knows both: the core cannot depend on the
/// engine, and the policy set owns neither type.
impl From<Severity> for computeguard_policy_core::pack::Severity {
    fn from(s: Severity) -> Self {
        match s {
            Severity::Error => Self::Error,
            Severity::Warning => Self::Warning,
            Severity::Info => Self::Info,
        }
    }
}

/// Bounds on one policy answer. Defaults are documented on each field and in
/// `docs/security.md`.
#[derive(Clone, Debug)]
pub struct OutputLimits {
    /// Violations in one response. Default 10,000.
    pub max_violations: usize,
    /// Resources in one response. Default 10,000.
    pub max_resources: usize,
    /// Bytes of one string (message, remediation, path, resource name, error text).
    /// Default 16 KiB.
    pub max_string_bytes: usize,
    /// Bytes of all strings of one response together. Default 8 MiB.
    pub max_total_bytes: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        OutputLimits {
            max_violations: 10_000,
            max_resources: 10_000,
            max_string_bytes: 16 << 10,
            max_total_bytes: 8 << 20,
        }
    }
}

/// The longest rule id a policy may declare.
pub const MAX_RULE_ID: usize = 64;
/// The most rules one policy may declare.
pub const MAX_RULES: usize = 1_000;
/// The longest policy name.
pub const MAX_POLICY_NAME: usize = 128;

#[derive(ComponentType, Lift)]
#[component(record)]
pub(crate) struct RawResourceRef {
    kind: BoundedString,
    name: BoundedString,
}

#[derive(ComponentType, Lift)]
#[component(record)]
pub(crate) struct RawViolation {
    rule: BoundedString,
    severity: Severity,
    message: BoundedString,
    path: BoundedString,
    remediation: BoundedString,
    resource: RawResourceRef,
}

#[derive(ComponentType, Lift)]
#[component(record)]
pub(crate) struct RawResponse {
    violations: BoundedList<RawViolation>,
    resources: BoundedList<RawResourceRef>,
    patch: Option<BoundedString>,
}

#[derive(ComponentType, Lift)]
#[component(variant)]
pub(crate) enum RawError {
    #[component(name = "invalid-document")]
    InvalidDocument(BoundedString),
    #[component(name = "invalid-settings")]
    InvalidSettings(BoundedString),
    #[component(name = "rule-failed")]
    RuleFailed(BoundedString),
}

/// An answer refused while it was being lifted (becomes [`crate::EvalError::Output`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub(crate) String);

/// What is left of the [`OutputLimits`] while one answer is lifted. Lifting happens
/// inside wasmtime (before the guest's post-return frees the answer), so the bound
/// travels in a thread-local set around the call.
#[derive(Clone, Copy)]
struct Budget {
    max_items: usize,
    max_violations: usize,
    max_resources: usize,
    max_total: usize,
    total: usize,
}

impl Budget {
    fn new(limits: &OutputLimits) -> Self {
        Budget {
            max_items: limits.max_violations.max(limits.max_resources),
            max_violations: limits.max_violations,
            max_resources: limits.max_resources,
            max_total: limits.max_total_bytes,
            total: 0,
        }
    }
}

thread_local! {
    static BUDGET: Cell<Option<Budget>> = const { Cell::new(None) };
}

/// Runs `f` (a call whose result is lifted through [`BoundedString`] and
/// [`BoundedList`]) with `limits` in force.
pub(crate) fn bounded<R>(limits: &OutputLimits, f: impl FnOnce() -> R) -> R {
    let previous = BUDGET.with(|b| b.replace(Some(Budget::new(limits))));
    let out = f();
    BUDGET.with(|b| b.set(previous));
    out
}

/// [`bounded`] for an async call: `limits` are in force during every poll of the
/// call, on whichever thread polls it (the lift runs inside a poll).
pub(crate) struct Bounded<F> {
    budget: Option<Budget>,
    inner: std::pin::Pin<Box<F>>,
}

impl<F: std::future::Future> Bounded<F> {
    pub(crate) fn new(limits: &OutputLimits, inner: F) -> Self {
        Bounded {
            budget: Some(Budget::new(limits)),
            inner: Box::pin(inner),
        }
    }
}

impl<F: std::future::Future> std::future::Future for Bounded<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = &mut *self;
        let previous = BUDGET.with(|b| b.replace(this.budget));
        let out = this.inner.as_mut().poll(cx);
        this.budget = BUDGET.with(|b| b.replace(previous));
        out
    }
}

fn charge_string(len: usize) -> wasmtime::Result<()> {
    BUDGET.with(|cell| {
        let Some(mut b) = cell.get() else {
            return Ok(());
        };
        // Each string is also held to `max_string_bytes` once lifted (the patch, to
        // the total alone); the total bounds what lifting copies.
        if len > b.max_total || b.total.saturating_add(len) > b.max_total {
            return Err(Refused(format!(
                "more than {} bytes of text in one answer",
                b.max_total
            ))
            .into());
        }
        b.total += len;
        cell.set(Some(b));
        Ok(())
    })
}

fn charge_list(len: usize) -> wasmtime::Result<()> {
    BUDGET.with(|cell| match cell.get() {
        Some(b) if len > b.max_items => Err(Refused(format!(
            "a list of {len} items in one answer (limits: {} violations, {} resources)",
            b.max_violations, b.max_resources
        ))
        .into()),
        _ => Ok(()),
    })
}

/// Checks a lifted response: counts, string sizes, declared rule ids, JSON-pointer
/// paths.
pub(crate) fn check_response(
    raw: RawResponse,
    limits: &OutputLimits,
    declared: &HashSet<String>,
) -> Result<Response, Refused> {
    let n = raw.violations.0.len();
    if n > limits.max_violations {
        return Err(Refused(format!(
            "{n} violations in one answer (limit {})",
            limits.max_violations
        )));
    }
    let r = raw.resources.0.len();
    if r > limits.max_resources {
        return Err(Refused(format!(
            "{r} resources in one answer (limit {})",
            limits.max_resources
        )));
    }
    let max = limits.max_string_bytes;
    let short = |s: BoundedString, what: &str| -> Result<String, Refused> {
        if s.0.len() > max {
            return Err(Refused(format!(
                "a {what} of {} bytes (limit {max})",
                s.0.len()
            )));
        }
        Ok(s.0)
    };
    let take_ref = |r: RawResourceRef| -> Result<ResourceRef, Refused> {
        Ok(ResourceRef {
            kind: short(r.kind, "resource kind")?,
            name: short(r.name, "resource name")?,
        })
    };
    let mut violations = Vec::with_capacity(n);
    for (i, v) in raw.violations.0.into_iter().enumerate() {
        let rule = short(v.rule, "rule id")?;
        if !declared.contains(&rule) {
            return Err(Refused(format!(
                "violation {i} names rule `{}`, which the policy does not declare in its metadata",
                truncate(&rule, MAX_RULE_ID)
            )));
        }
        let path = short(v.path, "path")?;
        if !(path.is_empty() || path.starts_with('/')) || path.chars().any(char::is_control) {
            return Err(Refused(format!(
                "violation {i} (rule `{rule}`) has path `{}`, which is not a JSON pointer",
                truncate(&path, 256)
            )));
        }
        violations.push(Violation {
            message: short(v.message, "message")?,
            remediation: short(v.remediation, "remediation")?,
            resource: take_ref(v.resource)?,
            severity: v.severity,
            path,
            rule,
        });
    }
    let resources = raw
        .resources
        .0
        .into_iter()
        .map(take_ref)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Response {
        violations,
        resources,
        patch: raw.patch.map(|p| p.0),
    })
}

/// An error's text, cut to `max_string_bytes` and escaped.
pub(crate) fn error_text(raw: RawError, limits: &OutputLimits) -> GuestError {
    let text = |s: BoundedString| truncate(&s.0, limits.max_string_bytes);
    match raw {
        RawError::InvalidDocument(s) => GuestError::InvalidDocument(text(s)),
        RawError::InvalidSettings(s) => GuestError::InvalidSettings(text(s)),
        RawError::RuleFailed(s) => GuestError::RuleFailed(text(s)),
    }
}

/// `text` cut to at most `max` bytes on a character boundary, control characters
/// escaped.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = crate::text::escape_control(&text[..end]);
    if end < text.len() {
        out.push_str(" [truncated]");
    }
    out
}

/// What a policy declares about itself that the host refuses: names and rule ids become
/// metric labels, SARIF rule ids and parts of messages.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// The policy's name is empty, too long, or holds a character other than a letter, a
    /// digit, `-`, `_` and `.`.
    #[error(
        "policy name `{name}` must be 1 to {MAX_POLICY_NAME} characters of letters, digits, `-`, `_` and `.`"
    )]
    Name {
        /// The name, cut to [`MAX_POLICY_NAME`] bytes, control characters escaped.
        name: String,
    },
    /// More than [`MAX_RULES`] rules.
    #[error("{count} rules declared (limit {MAX_RULES})")]
    TooManyRules {
        /// How many rules the policy declares.
        count: usize,
    },
    /// A rule id that is not kebab-case or longer than [`MAX_RULE_ID`].
    #[error(
        "rule id `{id}` must be kebab-case (lower-case letters and digits joined by single `-`), 1 to {MAX_RULE_ID} characters"
    )]
    RuleId {
        /// The id, cut to [`MAX_RULE_ID`] bytes, control characters escaped.
        id: String,
    },
    /// Two rules with the same id.
    #[error("rule id `{id}` is declared twice")]
    DuplicateRule {
        /// The id (a valid one).
        id: String,
    },
}

/// Checks what a policy declares about itself: a usable `name` and well-formed, unique
/// `rule_ids` (they become metric labels and SARIF rule ids).
pub(crate) fn check_declared<'a>(
    name: &str,
    rule_ids: impl ExactSizeIterator<Item = &'a str>,
) -> Result<(), MetadataError> {
    if name.is_empty()
        || name.len() > MAX_POLICY_NAME
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(MetadataError::Name {
            name: crate::text::escape_control(&truncate(name, MAX_POLICY_NAME)),
        });
    }
    if rule_ids.len() > MAX_RULES {
        return Err(MetadataError::TooManyRules {
            count: rule_ids.len(),
        });
    }
    let mut seen = HashSet::new();
    for id in rule_ids {
        if !valid_rule_id(id) {
            return Err(MetadataError::RuleId {
                id: truncate(id, MAX_RULE_ID),
            });
        }
        if !seen.insert(id) {
            return Err(MetadataError::DuplicateRule { id: id.to_string() });
        }
    }
    Ok(())
}

/// [`check_declared`] for `info`.
pub(crate) fn check_metadata(info: &crate::PolicyInfo) -> Result<(), MetadataError> {
    check_declared(&info.name, info.rules.iter().map(|r| r.id.as_str()))
}

/// `lower-case-kebab-123`, 1 to [`MAX_RULE_ID`] bytes.
pub fn valid_rule_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_RULE_ID
        && id.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_kebab_case_and_bounded() {
        assert!(valid_rule_id("cuda-arch-compat"));
        assert!(valid_rule_id("a1"));
        for bad in ["", "-a", "a-", "a--b", "A", "a b", "a\nb", "ü"] {
            assert!(!valid_rule_id(bad), "{bad:?}");
        }
        assert!(!valid_rule_id(&"a".repeat(MAX_RULE_ID + 1)));
    }

    #[test]
    fn declared_metadata_is_checked_with_a_typed_error() {
        let check = |name: &str, ids: &[&str]| check_declared(name, ids.iter().copied());
        assert_eq!(check("org.rules_1", &["a", "b-2"]), Ok(()));
        assert_eq!(
            check("bad\u{1b}name", &[]),
            Err(MetadataError::Name {
                name: "bad\\u{1b}name".into()
            })
        );
        let err = check("ok", &["Upper"]);
        assert_eq!(err, Err(MetadataError::RuleId { id: "Upper".into() }));
        assert!(err.is_err_and(|e| {
            e.to_string()
                .starts_with("rule id `Upper` must be kebab-case (lower-case letters")
        }));
        let err = check("ok", &["a", "a"]);
        assert_eq!(err, Err(MetadataError::DuplicateRule { id: "a".into() }));
        assert_eq!(
            err.map_err(|e| e.to_string()),
            Err("rule id `a` is declared twice".into())
        );
        let many: Vec<String> = (0..=MAX_RULES).map(|i| format!("r{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            check("ok", &many),
            Err(MetadataError::TooManyRules {
                count: MAX_RULES + 1
            })
        );
    }

    #[test]
    fn a_policys_severity_is_the_cores() {
        use computeguard_policy_core::pack::Severity as Core;
        let pairs = [
            (Severity::Error, Core::Error),
            (Severity::Warning, Core::Warning),
            (Severity::Info, Core::Info),
        ];
        for (wit, core) in pairs {
            assert_eq!(Core::from(wit), core);
            assert_eq!(wit.as_str(), core.as_str());
        }
    }

    #[test]
    fn truncation_keeps_characters_whole_and_says_so() {
        assert_eq!(truncate("héllo", 2), "h [truncated]");
        assert_eq!(truncate("ok", 10), "ok");
        assert_eq!(truncate("a\u{1b}b", 10), "a\\u{1b}b");
    }
}
