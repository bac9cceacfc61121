//! `computeguard explain <rule-id>`

use crate::report::RuleDoc;
use crate::{Outcome, load_config, policies};
use std::io::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct ExplainArgs {
    /// The rule id, e.g. `min-nodes-zero`.
    pub rule: String,
    /// Configuration file (default: computeguard.yaml found upward from the working directory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Extra policy: a rule pack (.yaml) or a component (.wasm), optionally pinned to a digest. Repeatable.
    #[arg(long = "policy", value_parser = crate::config::PolicyRef::parse, value_name = "FILE[@sha256:HEX]")]
    pub policies: Vec<crate::config::PolicyRef>,
}

pub fn run(args: ExplainArgs) -> anyhow::Result<Outcome> {
    let config = load_config(args.config.as_ref())?;
    let engine = crate::engine()?;
    let loaded = policies::load_all(&engine, &config, &args.policies)?;
    let mut out = std::io::stdout().lock();
    for l in &loaded {
        let info = l.policy.info();
        if let Some(r) = info.rules.iter().find(|r| r.id == args.rule) {
            // Policy text, escaped: a policy is untrusted and a terminal obeys escapes.
            let c = crate::report::clean;
            writeln!(
                out,
                "{} ({}, policy {} {})",
                c(&r.id),
                r.severity.as_str(),
                c(&info.name),
                c(&info.version)
            )?;
            writeln!(out)?;
            writeln!(out, "{}", c(&r.description))?;
            if !r.targets.is_empty() {
                writeln!(out, "\nApplies to: {}", c(&r.targets.join(", ")))?;
            }
            writeln!(out, "\nWhy: {}", c(&r.rationale))?;
            writeln!(out, "\nFix: {}", c(&r.remediation))?;
            writeln!(out, "\nMore: docs/rules/{}.md", c(&r.id))?;
            return Ok(Outcome::Clean);
        }
    }
    // What computeguard reports itself, with no policy: a blind spot and a finding on
    // comments. Both have a page under docs/rules/.
    let own = [
        RuleDoc::unresolved(),
        RuleDoc::missing_reason(),
        crate::cost::idle_cost_doc(),
    ];
    if let Some(r) = own.iter().find(|r| r.id == args.rule) {
        let what = if r.id == RuleDoc::UNRESOLVED {
            "not a finding: a blind spot, listed in every format; `--fail-on-unresolved` fails on it".to_string()
        } else {
            // gpu-idle-cost is off without a budget.
            let budget = r.id != crate::cost::IDLE_COST_RULE
                || crate::cost::idle_budget(&config).ok().flatten().is_some();
            let level = computeguard_policyset::severity_of(&config.rules, &r.id, r.severity)
                .filter(|_| budget)
                .map_or("off", |s| s.as_str());
            format!("{level}, reported by computeguard itself")
        };
        writeln!(out, "{} ({what})", r.id)?;
        writeln!(out)?;
        writeln!(out, "{}", r.description)?;
        writeln!(out, "\nWhy: {}", r.rationale)?;
        writeln!(out, "\nFix: {}", r.remediation)?;
        writeln!(out, "\nMore: docs/rules/{}.md", r.id)?;
        return Ok(Outcome::Clean);
    }
    let known: Vec<String> = loaded
        .iter()
        .flat_map(|l| l.policy.info().rules.iter().map(|r| r.id.clone()))
        .chain(own.iter().map(|r| r.id.clone()))
        .collect();
    anyhow::bail!("{}", crate::suggest::unknown_rule(&args.rule, &known))
}
