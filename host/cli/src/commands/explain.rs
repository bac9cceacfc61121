//! `computeguard explain <rule-id>`

use crate::{Outcome, load_config, policies};
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
    for l in &loaded {
        let info = l.policy.info();
        if let Some(r) = info.rules.iter().find(|r| r.id == args.rule) {
            // Policy text, escaped: a policy is untrusted and a terminal obeys escapes.
            let c = crate::report::clean;
            println!(
                "{} ({}, policy {} {})",
                c(&r.id),
                r.severity.as_str(),
                c(&info.name),
                c(&info.version)
            );
            println!();
            println!("{}", c(&r.description));
            if !r.targets.is_empty() {
                println!("\nApplies to: {}", c(&r.targets.join(", ")));
            }
            println!("\nWhy: {}", c(&r.rationale));
            println!("\nFix: {}", c(&r.remediation));
            println!("\nMore: docs/rules/{}.md", c(&r.id));
            return Ok(Outcome::Clean);
        }
    }
    let known: Vec<String> = loaded
        .iter()
        .flat_map(|l| l.policy.info().rules.iter().map(|r| r.id.clone()))
        .collect();
    anyhow::bail!("{}", crate::suggest::unknown_rule(&args.rule, &known))
}
