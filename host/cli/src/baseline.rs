//! Baselines: `check --write-baseline FILE` records the current findings, and
//! `check --baseline FILE` reports only findings that are not in it.
//!
//! A finding is identified by a fingerprint that survives unrelated edits: the
//! SHA-256 of the rule id, the file, the resource (kind and name) and the content
//! of the offending line with surrounding whitespace removed. The line *number*
//! is not part of it, so inserting lines above a finding does not resurrect it;
//! changing the offending line itself (or renaming the resource or the file) does.
//! Identical fingerprints are counted: two identical findings in the baseline
//! absorb at most two findings. The file format is documented in `docs/ci.md`.
//!
//! With `azure.prices`, the baseline also records what the checked files cost (the `cost` of
//! `check --format json`, file paths normalised as for findings), and `check --baseline
//! FILE` reports what the change adds to it (docs/cost.md).

use crate::report::fingerprint::{fingerprint, normalize_path};
use crate::report::{Finding, Report, ResourceRef, SuppressionKind};
use anyhow::{Context as _, Result};
use computeguard_cost::{Comparison, Estimate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Version of the baseline file format.
pub const VERSION: u32 = 1;

/// One recorded finding. Only `fingerprint` is used for matching; the rest lets a
/// reviewer read the file.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    pub fingerprint: String,
    pub rule: String,
    pub file: String,
    pub resource: ResourceRef,
    pub line: u32,
    pub message: String,
}

/// The baseline file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Baseline {
    pub version: u32,
    pub generated_by: String,
    pub findings: Vec<Entry>,
    /// What the checked files cost when the baseline was written (`azure.prices` named);
    /// absent otherwise, and in baselines written before costs were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Estimate>,
}

impl Baseline {
    /// Moves the findings of `report` that are in this baseline (read from `file`) to its
    /// suppressed ones.
    pub fn apply(&self, report: &mut Report, file: &str) {
        let mut matcher = self.matcher();
        let (old, new): (Vec<Finding>, Vec<Finding>) = std::mem::take(&mut report.findings)
            .into_iter()
            .partition(|f| matcher.take(f));
        report.findings = new;
        report.suppressed.extend(
            old.into_iter()
                .map(|f| f.suppress(SuppressionKind::Baseline, format!("in baseline {file}"))),
        );
        report.finish();
    }

    /// A baseline holding `findings`, sorted so that the file diffs well.
    pub fn of<'a>(findings: impl IntoIterator<Item = &'a Finding>) -> Baseline {
        let mut entries: Vec<Entry> = findings
            .into_iter()
            .map(|f| Entry {
                fingerprint: fingerprint(f),
                rule: f.rule.clone(),
                file: normalize_path(&f.file),
                resource: f.resource.clone(),
                line: f.line,
                message: f.message.clone(),
            })
            .collect();
        entries.sort_by(|a, b| {
            (&a.file, a.line, &a.rule, &a.fingerprint).cmp(&(
                &b.file,
                b.line,
                &b.rule,
                &b.fingerprint,
            ))
        });
        Baseline {
            version: VERSION,
            generated_by: format!("computeguard {}", env!("CARGO_PKG_VERSION")),
            findings: entries,
            cost: None,
        }
    }

    /// The same baseline, recording `cost` too (its file paths normalised as findings').
    #[must_use]
    pub fn with_cost(mut self, cost: Option<&Estimate>) -> Baseline {
        self.cost = cost.map(normalized);
        self
    }

    /// What `change` adds to the cost this baseline (read from `file`) recorded for the
    /// files under `paths` (the paths the run checks: a pre-commit hook names only the
    /// files it changes, and the others are not gone), or why it cannot be said (a
    /// sentence for standard error).
    ///
    /// # Errors
    ///
    /// The baseline records no cost, or one in another currency.
    pub fn cost_diff(
        &self,
        change: &Estimate,
        file: &str,
        paths: &[std::path::PathBuf],
    ) -> Result<Comparison, String> {
        let Some(base) = &self.cost else {
            return Err(format!(
                "the baseline {file} records no cost (it was written without `azure.prices`): no cost diff; write it again with `--write-baseline` to record what the files cost"
            ));
        };
        if !base.currency.eq_ignore_ascii_case(&change.currency) {
            return Err(format!(
                "the baseline {file} records its cost in {}, the price files now read are in {}: no cost diff; write the baseline again with `--write-baseline`",
                base.currency, change.currency
            ));
        }
        let scope: Vec<String> = paths
            .iter()
            .filter(|p| p.as_os_str() != "-")
            .map(|p| {
                normalize_path(&p.display().to_string())
                    .trim_end_matches('/')
                    .to_string()
            })
            .collect();
        let checked = |f: &str| {
            scope.iter().any(|p| {
                p.is_empty()
                    || p == "."
                    || f == p
                    || f.strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
        };
        Ok(Comparison::of(file, &base.only(checked), &normalized(change)).from_baseline())
    }

    /// The price files the recorded cost was read from, when they are not `now` (`None`
    /// when they are the same, or nothing is recorded).
    pub fn other_sources(&self, now: &Estimate) -> Option<&[String]> {
        let base = self.cost.as_ref()?;
        let norm = |v: &[String]| {
            let mut v: Vec<String> = v.iter().map(|s| normalize_path(s)).collect();
            v.sort();
            v
        };
        (norm(&base.sources) != norm(&now.sources)).then_some(base.sources.as_slice())
    }

    /// Reads a baseline; errors name the file and line.
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read baseline `{}`", path.display()))?;
        let b: Baseline = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}:{}: invalid baseline: {e}; expected the JSON that `check --write-baseline` writes",
                path.display(),
                e.line(),
                e.column()
            )
        })?;
        if b.version != VERSION {
            anyhow::bail!(
                "{}: baseline version {} is not supported; expected {VERSION} (rewrite it with `check --write-baseline`)",
                path.display(),
                b.version
            );
        }
        Ok(b)
    }

    /// Writes the baseline as pretty JSON.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        std::fs::write(path, text)
            .with_context(|| format!("cannot write baseline `{}`", path.display()))
    }

    /// A matcher that consumes one baseline entry per matched finding.
    pub fn matcher(&self) -> Matcher {
        let mut left = BTreeMap::new();
        for e in &self.findings {
            *left.entry(e.fingerprint.clone()).or_insert(0usize) += 1;
        }
        Matcher { left }
    }
}

/// `e` with every file named as baselines name them (no leading `./`, forward slashes,
/// relative to the working directory), so that a change checked as `./infra` matches a
/// baseline written for `infra`.
fn normalized(e: &Estimate) -> Estimate {
    let mut e = e.clone();
    for r in &mut e.resources {
        r.file = normalize_path(&r.file);
    }
    for u in &mut e.unknown {
        u.file = normalize_path(&u.file);
    }
    e.by_file = std::mem::take(&mut e.by_file)
        .into_iter()
        .map(|(f, t)| (normalize_path(&f), t))
        .collect();
    e
}

/// Counts of fingerprints not yet matched.
pub struct Matcher {
    left: BTreeMap<String, usize>,
}

impl Matcher {
    /// Whether `f` is in the baseline (consuming one occurrence).
    pub fn take(&mut self, f: &Finding) -> bool {
        match self.left.get_mut(&fingerprint(f)) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// Baseline entries that matched no finding (fixed since the baseline was written).
    pub fn unmatched(&self) -> usize {
        self.left.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Severity;

    fn finding(line: u32, src: &str) -> Finding {
        Finding {
            rule: "min-nodes-zero".into(),
            severity: Severity::Warning,
            message: "m".into(),
            file: "./infra/a.yml".into(),
            line,
            column: 1,
            path: "/min_instances".into(),
            resource: ResourceRef {
                kind: "aml-compute-cluster".into(),
                name: "gpu".into(),
            },
            policy: "p".into(),
            remediation: "r".into(),
            document: 0,
            object: None,
            source_line: Some(src.into()),
            suppressed: false,
            suppression: None,
        }
    }

    #[test]
    fn fingerprint_ignores_line_numbers_and_indentation_but_not_content() {
        let a = finding(7, "min_instances: 1");
        assert_eq!(
            fingerprint(&a),
            fingerprint(&finding(12, "  min_instances: 1 "))
        );
        assert_ne!(
            fingerprint(&a),
            fingerprint(&finding(7, "min_instances: 2"))
        );
        let mut other = finding(7, "min_instances: 1");
        other.resource.name = "cpu".into();
        assert_ne!(fingerprint(&a), fingerprint(&other));
        assert_eq!(normalize_path("./infra/a.yml"), "infra/a.yml");
    }

    #[test]
    fn identical_findings_are_counted() {
        let a = finding(7, "min_instances: 1");
        let base = Baseline::of([&a]);
        let mut m = base.matcher();
        assert!(m.take(&finding(9, "min_instances: 1")));
        assert!(
            !m.take(&a),
            "one baseline entry absorbs one finding, not every copy"
        );
        assert_eq!(m.unmatched(), 0);
    }
}
