//! `computeguard rules`: every rule id of the loaded policies (the built-in ones, the
//! configuration's `policies:` and `--policy`), with the severity it is reported at and a
//! one-line summary.

use crate::commands::ListFormat;
use crate::{Outcome, load_config, policies};
use std::io::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct RulesArgs {
    /// Configuration file (default: computeguard.yaml found upward from the working directory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Extra policy: a rule pack (.yaml) or a component (.wasm), optionally pinned to a digest. Repeatable.
    #[arg(long = "policy", value_parser = crate::config::PolicyRef::parse, value_name = "FILE[@sha256:HEX]")]
    pub policies: Vec<crate::config::PolicyRef>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ListFormat,
}

pub fn run(args: RulesArgs) -> anyhow::Result<Outcome> {
    let config = load_config(args.config.as_ref())?;
    let engine = crate::engine()?;
    let loaded = policies::load_all(&engine, &config, &args.policies)?;
    let mut rows = Vec::new();
    for l in &loaded {
        let info = l.policy.info();
        for r in &info.rules {
            // The level `rules:` in the configuration sets, else the rule's own severity.
            let severity =
                computeguard_policyset::severity_of(&config.rules, &r.id, r.severity.into())
                    .map_or("off", |s| s.as_str());
            rows.push((
                r.id.clone(),
                severity,
                info.name.clone(),
                r.description.clone(),
            ));
        }
    }
    rows.push((
        crate::suppress::MISSING_REASON_RULE.to_string(),
        computeguard_policyset::severity_of(
            &config.rules,
            crate::suppress::MISSING_REASON_RULE,
            crate::report::Severity::Warning,
        )
        .map_or("off", |s| s.as_str()),
        "computeguard".to_string(),
        crate::suppress::MISSING_REASON_DESCRIPTION.to_string(),
    ));
    // Off without a budget (`settings.computeguard.cost.maxIdleMonthly`).
    let budget = crate::cost::idle_budget(&config).ok().flatten();
    rows.push((
        crate::cost::IDLE_COST_RULE.to_string(),
        computeguard_policyset::severity_of(
            &config.rules,
            crate::cost::IDLE_COST_RULE,
            crate::report::Severity::Warning,
        )
        .filter(|_| budget.is_some())
        .map_or("off", |s| s.as_str()),
        "computeguard".to_string(),
        crate::cost::IDLE_COST_DESCRIPTION.to_string(),
    ));
    rows.sort();
    let c = crate::report::clean;
    // Written, not printed: a reader that stops early (`| head`) closes the pipe, and
    // that is the end of the list, not a crash (exit 0, as ripgrep does).
    let mut out = std::io::stdout().lock();
    match args.format {
        ListFormat::Json => {
            let list: Vec<serde_json::Value> = rows
                .iter()
                .map(|(id, severity, policy, description)| {
                    serde_json::json!({
                        "id": id, "severity": severity, "policy": policy,
                        "description": description,
                    })
                })
                .collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        }
        ListFormat::Text => {
            let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
            for (id, severity, policy, description) in &rows {
                // Policy text is untrusted: escaped for the terminal.
                writeln!(
                    out,
                    "{:width$}  {severity:7}  {}  {}",
                    c(id),
                    c(policy),
                    c(description)
                )?;
            }
        }
    }
    Ok(Outcome::Clean)
}
