//! The policy-set layer: what `computeguard check` and `computeguard serve` share above
//! the engine.
//!
//! - [`Severity`]: how serious a finding is, the one type both front ends report in;
//! - [`Level`]: what `rules:` in `computeguard.yaml` sets for a rule, and
//!   [`severity_of`], the one place a configured level changes a policy's severity;
//! - [`config`]: `computeguard.yaml` (`asOf`, regions, rule levels, extra policies,
//!   settings, `ignore:`, and the [`webhook`] section: enforcement, failure mode,
//!   exclusions, mutations, limits), read the same way by `check` and `serve`;
//! - [`load`]: the policy set itself, the built-in policies plus the configured and
//!   front-end ones as [`LoadedPolicy`], with a typed [`LoadError`] naming the policy at
//!   fault ([`suggest`] words an unknown rule id).
//!
//! The CLI adds file:line, suppressions, baselines and renderers on top; the server adds
//! enforcement and the admission answer.

#![deny(missing_docs)]

pub mod config;
pub mod context;
pub mod load;
pub mod oci;
pub mod suggest;
pub mod template;
pub mod verify;
pub mod webhook;

pub use load::{LoadError, load_policies, load_policies_with_context};
pub use webhook::{Enforcement, FailureMode, WebhookConfig};

/// A loaded policy and the settings it runs with, as both front ends hold it.
pub struct LoadedPolicy {
    /// The compiled, pre-instantiated component.
    pub policy: computeguard_engine::Policy,
    /// Its settings, validated by the policy when it was loaded.
    pub settings: serde_json::Value,
    /// The same settings as the JSON text every request carries.
    pub settings_text: String,
    /// One of computeguard's built-in policies (documented under `docs/rules/`).
    pub builtin: bool,
    /// For a rule pack run by computeguard's own runtime, the kinds of resource for which
    /// some rule may decide by the object's name or raw document
    /// (`computeguard_compiler::name_reading_targets`); for an object with none of them its
    /// answer is its answer for the object's template, with the name shown where its
    /// messages show it ([`LoadedPolicy::name_blind_for`]). `None` for a component, whose
    /// reads nobody can see.
    pub name_reads: Option<Vec<String>>,
}

impl LoadedPolicy {
    /// A policy with `settings` (already validated).
    pub fn new(
        policy: computeguard_engine::Policy,
        settings: serde_json::Value,
        builtin: bool,
    ) -> Self {
        LoadedPolicy {
            settings_text: settings.to_string(),
            policy,
            settings,
            builtin,
            name_reads: None,
        }
    }

    /// The same policy, marked as deciding without the object's name when `name_blind`
    /// (for every kind of resource), or as a component whose reads are unknown.
    pub fn with_name_blind(mut self, name_blind: bool) -> Self {
        self.name_reads = name_blind.then(Vec::new);
        self
    }

    /// The same policy, known to read the object's name only for resources of `kinds`
    /// (see [`LoadedPolicy::name_reads`]).
    pub fn with_name_reads(mut self, kinds: Vec<String>) -> Self {
        self.name_reads = Some(kinds);
        self
    }

    /// Whether the policy decides an object whose resources are `resources` without the
    /// object's name: its reads are known, and no resource is of a kind some rule decides
    /// by name (`*`: every kind).
    pub fn name_blind_for(
        &self,
        resources: &[computeguard_policy_core::compute::Resource],
    ) -> bool {
        self.name_reads.as_ref().is_some_and(|kinds| {
            !kinds.iter().any(|k| k == "*") && resources.iter().all(|r| !kinds.contains(&r.kind))
        })
    }

    /// The policy judges only resources that state a compute fact
    /// (`Resource::declares_compute` in the core), so a request whose resources state
    /// none may be answered without running it. True for the built-in policies, whose
    /// every rule needs such a fact (the webhook's e2e test
    /// `plain_workloads_get_the_same_answer_without_a_sandbox` holds the answers equal);
    /// false for any other policy, which then sees every workload.
    pub fn only_compute_facts(&self) -> bool {
        self.builtin
    }
}

/// How serious a finding is, after the configuration's overrides: the core's severity,
/// the one rules declare (a policy's WIT severity converts into it with `.into()`). With
/// this crate's feature `clap`, a `clap::ValueEnum`.
pub use computeguard_policy_core::pack::Severity;

/// A rule's configured level (`rules:` in `computeguard.yaml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Report the rule's findings as errors.
    Error,
    /// Report them as warnings.
    Warning,
    /// Report them as infos.
    Info,
    /// Do not report them.
    Off,
}

impl Level {
    /// Parses `error`, `warning`, `info` or `off`.
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "error" => Some(Level::Error),
            "warning" => Some(Level::Warning),
            "info" => Some(Level::Info),
            "off" => Some(Level::Off),
            _ => None,
        }
    }

    /// The severity this level reports a finding at; `None` when the rule is off.
    pub fn severity(self) -> Option<Severity> {
        match self {
            Level::Off => None,
            Level::Error => Some(Severity::Error),
            Level::Warning => Some(Severity::Warning),
            Level::Info => Some(Severity::Info),
        }
    }
}

/// The severity of a finding of `rule` reported at `reported`, given the configured
/// levels: the configured level when there is one, else what the policy said; `None`
/// when the rule is off.
pub fn severity_of(
    levels: &std::collections::BTreeMap<String, Level>,
    rule: &str,
    reported: Severity,
) -> Option<Severity> {
    match levels.get(rule) {
        Some(level) => level.severity(),
        None => Some(reported),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_configured_level_replaces_the_reported_severity_and_off_drops_it() {
        let mut levels = BTreeMap::new();
        levels.insert("a".to_string(), Level::Error);
        levels.insert("b".to_string(), Level::Off);
        assert_eq!(
            severity_of(&levels, "a", Severity::Info),
            Some(Severity::Error)
        );
        assert_eq!(severity_of(&levels, "b", Severity::Error), None);
        assert_eq!(
            severity_of(&levels, "c", Severity::Warning),
            Some(Severity::Warning)
        );
        assert!(Severity::Error.at_least(Severity::Warning));
        assert!(!Severity::Info.at_least(Severity::Warning));
        assert_eq!(Level::parse("off"), Some(Level::Off));
        assert_eq!(Level::parse("fatal"), None);
    }
}
