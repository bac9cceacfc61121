//! `computeguard catalog diff OVERLAY...`: what the overlays would add to or change in the
//! built-in catalog, fact by fact; facts equal to the built-in ones are not listed.

use super::facts::{self, OVERLAY_FACTS};
use super::input::{self, Limit};
use crate::Outcome;
use computeguard_policy_core::catalog::{self, overlay};
use serde_json::Value;
use std::io::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// Catalog overlays (YAML or JSON), applied in order: a later one wins.
    #[arg(required = true, value_name = "OVERLAY")]
    pub overlays: Vec<PathBuf>,
    #[command(flatten)]
    pub limit: Limit,
}

/// What overlays do to one size.
pub struct Change {
    /// Canonical name.
    pub name: &'static str,
    /// The built-in catalog does not know the size.
    pub new: bool,
    /// (fact, built-in value, value with the overlays, where the new value comes from)
    /// of every fact that differs; for a new size, every fact known.
    pub facts: Vec<(&'static str, Option<Value>, Option<Value>, facts::Origin)>,
}

/// Every size the overlays name, sorted by name; sizes they name without changing
/// anything have no facts.
pub fn changes(overlays: &[overlay::Overlay]) -> Vec<Change> {
    let merged = overlay::merge(catalog::SKUS, overlays);
    let mut out = Vec::new();
    for (_, f) in &merged {
        if f.alias != f.name || f.overridden.is_empty() {
            continue;
        }
        let before = facts::builtin(f.name);
        let list = OVERLAY_FACTS
            .iter()
            .filter_map(|fact| {
                let old = before.and_then(|b| facts::value(b, fact));
                let new = facts::value(f, fact);
                (old != new).then(|| (*fact, old, new, facts::origin(f, fact)))
            })
            .collect();
        out.push(Change {
            name: f.name,
            new: before.is_none(),
            facts: list,
        });
    }
    out.sort_by(|a, b| a.name.cmp(b.name));
    out
}

/// `vcpus 40` or `retirementDate 2025-09-30 -> 2026-01-01`.
fn describe(change: &Change) -> String {
    change
        .facts
        .iter()
        .map(|(fact, old, new, origin)| {
            let derived = match origin {
                facts::Origin::Derived(_) => " (derived)",
                _ => "",
            };
            let new = facts::show(new.as_ref());
            if change.new {
                format!("{fact} {new}{derived}")
            } else {
                format!("{fact} {} -> {new}{derived}", facts::show(old.as_ref()))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn run(args: DiffArgs) -> anyhow::Result<Outcome> {
    let loaded = input::load_all(&args.overlays, args.limit)?;
    let overlays: Vec<overlay::Overlay> = loaded.into_iter().map(|l| l.overlay).collect();
    let all = changes(&overlays);
    let c = crate::report::clean;
    let mut out = std::io::stdout().lock();
    let (mut new, mut changed, mut same) = (0, 0, 0);
    for change in &all {
        if change.new {
            new += 1;
            writeln!(out, "+ {} (new): {}", c(change.name), c(&describe(change)))?;
        } else if change.facts.is_empty() {
            same += 1;
        } else {
            changed += 1;
            writeln!(out, "~ {}: {}", c(change.name), c(&describe(change)))?;
        }
    }
    writeln!(
        out,
        "{new} new, {changed} changed, {same} unchanged against the built-in catalog (data as of {})",
        catalog::DATA_DATE
    )?;
    Ok(Outcome::Clean)
}
