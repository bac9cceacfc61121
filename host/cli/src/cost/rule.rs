//! The names and words of the CLI's own rule on idle GPU spend, apart from the cost
//! module that computes it, so that the scan and the policy loader can name the rule
//! without importing what imports them.

/// The CLI's own rule on idle GPU spend (docs/rules/gpu-idle-cost.md).
pub const IDLE_COST_RULE: &str = "gpu-idle-cost";

/// What `rules` lists for [`IDLE_COST_RULE`].
pub const IDLE_COST_DESCRIPTION: &str = "The idle floor of a GPU resource, or of the whole change, costs more per month than the budget `settings.computeguard.cost.maxIdleMonthly` (off without it).";

/// The fix of an idle-cost finding.
pub const IDLE_COST_REMEDIATION: &str = "Scale GPU compute to zero when idle (min nodes 0, an idle shutdown for a compute instance), run interruptible training on Spot or low-priority nodes, or raise `settings.computeguard.cost.maxIdleMonthly` if the warm capacity is intended.";

/// What [`IDLE_COST_RULE`] is, for `explain` and SARIF.
pub fn idle_cost_doc() -> crate::report::RuleDoc {
    crate::report::RuleDoc {
        id: IDLE_COST_RULE.into(),
        severity: crate::report::Severity::Warning,
        description: IDLE_COST_DESCRIPTION.into(),
        rationale: "Idle GPU nodes are billed by the hour at the size's list price (Azure Retail Prices, `azure.prices`); a floor above the budget is money spent while no work runs.".into(),
        remediation: IDLE_COST_REMEDIATION.into(),
        policy: "computeguard".into(),
        documented: true,
    }
}
