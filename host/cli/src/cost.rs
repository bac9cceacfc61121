//! The cost of a change (issue 33, docs/cost.md): the price pages `azure.prices` names,
//! read by `computeguard-cost` and refused when they are not Retail Prices API pages, and
//! the lines the reports print. Prices never reach a policy.

use computeguard_cost::{Estimate, PriceSheet, Priority, money};

pub mod rule;

pub use rule::{IDLE_COST_DESCRIPTION, IDLE_COST_REMEDIATION, IDLE_COST_RULE, idle_cost_doc};

/// The pages the configuration names, read; `None` when it names none. A page with a
/// `NextPageLink` is reported on standard error: the next page must be saved and listed too.
///
/// # Errors
///
/// A file that cannot be read or is not a Retail Prices page, named with what was expected.
pub fn load_prices(config: &crate::config::Config) -> anyhow::Result<Option<PriceSheet>> {
    let files = &config.context.prices;
    if files.is_empty() {
        return Ok(None);
    }
    let sheet = PriceSheet::load(files)?;
    for (file, page) in sheet.pages() {
        if let Some(next) = &page.next_page {
            eprintln!(
                "warning: {file}: its NextPageLink names a next page ({next}); save it too and list it in `azure.prices`, or sizes on it have no price"
            );
        }
    }
    Ok(Some(sheet))
}

/// `$2,681.29/month idle, $10,725.16/month at full scale`, with what is left out.
pub fn totals_line(e: &Estimate) -> String {
    let t = &e.total;
    if t.priced() == 0 {
        return format!(
            "unknown: none of the {} resource{} has a known price and count (listed above; {} retail prices)",
            t.resources,
            if t.resources == 1 { "" } else { "s" },
            e.currency
        );
    }
    let mut line = format!(
        "{}/month idle, {}/month at full scale ({} priced resource{}, {} retail prices, {} h/month)",
        money(t.floor_monthly, &e.currency),
        money(t.ceiling_monthly, &e.currency),
        t.priced(),
        if t.priced() == 1 { "" } else { "s" },
        e.currency,
        e.hours_per_month
    );
    if t.unknown > 0 {
        line.push_str(&format!(
            "; not in the sums: {} resource{} with an unknown price or count (listed above)",
            t.unknown,
            if t.unknown == 1 { "" } else { "s" }
        ));
    }
    line
}

/// Where the budget is written, for messages.
const BUDGET_KEY: &str = "settings.computeguard.cost.maxIdleMonthly";

/// The idle budget per month: `settings.computeguard.cost.maxIdleMonthly` (the CLI's own
/// rules are the policy `computeguard`, and settings are per policy). `None` when not set.
///
/// # Errors
///
/// The `computeguard` settings are not `{cost: {maxIdleMonthly: NUMBER}}`.
pub fn idle_budget(config: &crate::config::Config) -> anyhow::Result<Option<f64>> {
    let file = config.path.as_ref().map_or_else(
        || "computeguard.yaml".to_string(),
        |p| p.display().to_string(),
    );
    let Some(own) = config.settings.get("computeguard") else {
        return Ok(None);
    };
    let bad = |what: &str| anyhow::anyhow!("{file}: `settings.computeguard`{what}");
    let Some(own) = own.as_object() else {
        return Err(bad(" must be a mapping with `cost`"));
    };
    if let Some(k) = own.keys().find(|k| *k != "cost") {
        return Err(bad(&format!(": unknown key `{k}`; expected cost")));
    }
    let Some(cost) = own.get("cost") else {
        return Ok(None);
    };
    let Some(cost) = cost.as_object() else {
        return Err(bad(".cost must be a mapping with `maxIdleMonthly`"));
    };
    if let Some(k) = cost.keys().find(|k| *k != "maxIdleMonthly") {
        return Err(bad(&format!(
            ".cost: unknown key `{k}`; expected maxIdleMonthly"
        )));
    }
    match cost.get("maxIdleMonthly") {
        None => Ok(None),
        Some(v) => match v.as_f64().filter(|x| x.is_finite() && *x >= 0.0) {
            Some(x) => Ok(Some(x)),
            None => Err(bad(&format!(
                ".cost.maxIdleMonthly must be an amount per month in the price pages' currency (a number, 0 or more), found `{v}`"
            ))),
        },
    }
}

/// Whether `sku` is a GPU size (the catalog's GPU count, else an N-series name).
fn is_gpu(sku: Option<&str>) -> bool {
    sku.is_some_and(|s| {
        computeguard_policy_core::catalog::sku(s)
            .and_then(|f| f.gpu_count)
            .map_or_else(
                || computeguard_policy_core::catalog::sku_gpu_family(s),
                |g| g > 0.0,
            )
    })
}

/// The line `line` (1-based) of `file`, for the snippet under a finding.
fn source_line(file: &str, line: u32) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)
        .map(str::to_string)
}

/// The `gpu-idle-cost` findings of an estimate: each GPU resource whose idle floor is over
/// `budget`, with the saving of the fix, and the change when its GPU resources together
/// are (and no one of them alone is).
pub fn idle_cost_findings(
    estimate: &Estimate,
    sheet: &PriceSheet,
    budget: f64,
    severity: crate::report::Severity,
) -> Vec<crate::report::Finding> {
    use crate::report::{Finding, ResourceRef};
    let cur = estimate.currency.as_str();
    let m = |x: f64| money(x, cur);
    let gpu: Vec<&computeguard_cost::ResourceCost> = estimate
        .resources
        .iter()
        .filter(|c| is_gpu(c.sku.as_deref()))
        .collect();
    let finding = |c: &computeguard_cost::ResourceCost, message: String| Finding {
        rule: IDLE_COST_RULE.into(),
        severity,
        message,
        file: c.file.clone(),
        line: c.line,
        column: 1,
        path: String::new(),
        resource: ResourceRef {
            kind: c.kind.clone(),
            name: c.resource.clone(),
        },
        policy: "computeguard".into(),
        remediation: IDLE_COST_REMEDIATION.into(),
        document: 0,
        object: None,
        source_line: source_line(&c.file, c.line),
        suppressed: false,
        suppression: None,
    };
    let mut out = Vec::new();
    for c in &gpu {
        let (Some(floor), Some(hourly), Some(nodes)) = (c.floor_monthly, c.hourly, c.floor.nodes)
        else {
            continue;
        };
        if floor <= budget {
            continue;
        }
        let sku = c.sku.as_deref().unwrap_or_default();
        let mut message = format!(
            "{} costs {}/month idle ({nodes} node(s) of {sku} at {}/h, {} {}), over the idle budget of {}/month ({BUDGET_KEY})",
            c.resource,
            m(floor),
            format_rate(hourly, cur),
            c.os.as_str(),
            c.priority.as_str(),
            m(budget),
        );
        match c.kind.as_str() {
            "aks-node-pool" if c.floor.basis.starts_with("fixed") => {
                message.push_str(&format!(
                    "; with the cluster autoscaler from 0 nodes it would scale to zero when idle, saving {}/month",
                    m(floor)
                ));
            }
            "aks-node-pool" | "aml-compute-cluster" => message.push_str(&format!(
                "; scaling it to zero when idle saves {}/month",
                m(floor)
            )),
            "aml-compute-instance" => message.push_str(&format!(
                "; stopping it when idle (an idle shutdown or a schedule) saves up to {}/month",
                m(floor)
            )),
            _ => message.push_str(&format!(
                "; it does not scale to zero: each node fewer saves {}/month",
                m(c.monthly_at(1).unwrap_or_default())
            )),
        }
        let interruptible = matches!(
            c.kind.as_str(),
            "aks-node-pool" | "aml-compute-cluster" | "vm-scale-set"
        );
        if c.priority == Priority::Regular
            && interruptible
            && let Some(region) = c.region.as_deref()
            && let Some(p) = sheet.lookup(sku, region, c.os, Priority::Spot)
        {
            let on_spot = computeguard_cost::monthly(p.hourly, nodes);
            message.push_str(&format!(
                "; for interruptible training, Spot nodes ({}/h) would cost {}/month idle, {} less",
                format_rate(p.hourly, cur),
                m(on_spot),
                m(floor - on_spot)
            ));
        }
        out.push(finding(c, message));
    }
    let total: f64 = gpu.iter().filter_map(|c| c.floor_monthly).sum();
    let counted = gpu
        .iter()
        .filter(|c| c.floor_monthly.is_some_and(|f| f > 0.0))
        .count();
    if out.is_empty() && counted > 1 && total > budget {
        let largest = gpu
            .iter()
            .filter(|c| c.floor_monthly.is_some())
            .max_by(|a, b| {
                a.floor_monthly
                    .partial_cmp(&b.floor_monthly)
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
        if let Some(c) = largest {
            out.push(finding(
                c,
                format!(
                    "this change's GPU compute costs {}/month idle over {counted} resources, over the idle budget of {}/month ({BUDGET_KEY}); the largest is {} at {}/month, and scaling the pools and clusters to zero when idle saves up to {}/month",
                    m(cents(total)),
                    m(budget),
                    c.resource,
                    m(c.floor_monthly.unwrap_or_default()),
                    m(cents(gpu
                        .iter()
                        .filter(|c| matches!(c.kind.as_str(), "aks-node-pool" | "aml-compute-cluster"))
                        .filter_map(|c| c.floor_monthly)
                        .sum::<f64>())),
                ),
            ));
        }
    }
    out
}

fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// An hourly rate with every digit the page gives (`$0.018816`).
pub fn format_rate(h: f64, currency: &str) -> String {
    if currency.eq_ignore_ascii_case("USD") {
        format!("${h}")
    } else {
        format!("{currency} {h}")
    }
}

/// Adds what the idle nodes cost to each `min-nodes-zero` finding whose resource is priced.
pub fn annotate_min_nodes(findings: &mut [crate::report::Finding], estimate: &Estimate) {
    for f in findings.iter_mut().filter(|f| f.rule == "min-nodes-zero") {
        let Some(c) = estimate
            .resources
            .iter()
            .filter(|c| c.file == f.file && f.message.starts_with(&c.resource))
            .max_by_key(|c| c.resource.len())
        else {
            continue;
        };
        if let (Some(floor), Some(hourly)) = (c.floor_monthly, c.hourly) {
            f.message.push_str(&format!(
                " (the idle node(s) cost {}/month at {}/h)",
                money(floor, &estimate.currency),
                format_rate(hourly, &estimate.currency)
            ));
        }
    }
}

/// Puts the estimate into the report: what the idle nodes of `min-nodes-zero` findings
/// cost, the `gpu-idle-cost` findings when a budget is set and the rule is not off
/// (suppressed by an inline `computeguard:ignore gpu-idle-cost REASON` on the resource's
/// line or the one above, or by `ignore:`), then the counts again.
pub fn apply(
    report: &mut crate::report::Report,
    estimate: Estimate,
    sheet: &PriceSheet,
    budget: Option<f64>,
    config: &crate::config::Config,
) {
    use crate::report::{Severity, SuppressionKind};
    annotate_min_nodes(&mut report.findings, &estimate);
    annotate_min_nodes(&mut report.suppressed, &estimate);
    let severity =
        computeguard_policyset::severity_of(&config.rules, IDLE_COST_RULE, Severity::Warning);
    if let (Some(budget), Some(severity)) = (budget, severity) {
        report.rules.push(idle_cost_doc());
        for f in idle_cost_findings(&estimate, sheet, budget, severity) {
            let path = std::path::Path::new(&f.file);
            let inline = std::fs::read_to_string(path).ok().and_then(|text| {
                crate::suppress::Directives::parse(path, &text)
                    .find(f.line, IDLE_COST_RULE)
                    .map(|d| d.reason.clone().unwrap_or_default())
            });
            match inline {
                Some(reason) => report
                    .suppressed
                    .push(f.suppress(SuppressionKind::Inline, reason)),
                None => match config.ignored(IDLE_COST_RULE, path, "") {
                    Some(i) => {
                        let reason = i.reason.clone();
                        report
                            .suppressed
                            .push(f.suppress(SuppressionKind::Config, reason));
                    }
                    None => report.findings.push(f),
                },
            }
        }
    }
    report.cost = Some(estimate);
    report.finish();
}

/// `gpu-idle-cost` was asked for (a budget and the rule on) but the configuration names no
/// prices: said in every format, never a silent pass.
pub fn not_evaluated(
    config: &crate::config::Config,
    budget: Option<f64>,
) -> Option<crate::report::NotEvaluated> {
    let on = computeguard_policyset::severity_of(
        &config.rules,
        IDLE_COST_RULE,
        crate::report::Severity::Warning,
    )
    .is_some();
    (budget.is_some() && on && config.context.prices.is_empty()).then(|| {
        crate::report::NotEvaluated {
            rule: IDLE_COST_RULE.into(),
            needs: "azure.prices".into(),
            message: format!(
                "{IDLE_COST_RULE} was not evaluated: `{BUDGET_KEY}` is set, but the configuration names no `azure.prices` (Azure Retail Prices API pages; docs/cost.md)"
            ),
        }
    })
}

/// The cost of the base of a change (`--compare-to DIR`): the same paths, read in `dir` (a
/// checkout of the base branch) with the same configuration and prices, each file named as
/// the change names it. A path the base does not have costs nothing there (it is new).
///
/// # Errors
///
/// `dir` is not a folder, a path is absolute (it cannot be found in the base), or a file of
/// the base cannot be read.
pub(crate) fn base_estimate(
    prepared: &crate::prepare::Prepared,
    dir: &std::path::Path,
    sheet: &PriceSheet,
) -> anyhow::Result<Estimate> {
    if !dir.is_dir() {
        anyhow::bail!(
            "`--compare-to {}`: not a folder; expected a checkout of the base branch (git worktree add ../base origin/main)",
            dir.display()
        );
    }
    let mut paths = Vec::new();
    for p in &prepared.paths {
        if p.as_os_str() == "-" {
            continue;
        }
        if p.is_absolute() {
            anyhow::bail!(
                "`--compare-to`: `{}` is an absolute path, which cannot be found in the base; name the paths relative to the repository",
                p.display()
            );
        }
        let in_base = dir.join(p);
        if in_base.exists() {
            paths.push(in_base);
        }
    }
    let (files, _) = if paths.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        crate::scan::collect(&paths, None, prepared.max_file_bytes)?
    };
    let reader = crate::scan::Scan {
        policies: &[],
        ..prepared.scan()
    };
    let mut base = reader.estimate(&files, sheet);
    let prefix = format!("{}/", dir.display().to_string().trim_end_matches('/'));
    let rename = |f: &mut String| {
        if let Some(rest) = f.strip_prefix(&prefix) {
            *f = rest.to_string();
        }
    };
    for r in &mut base.resources {
        rename(&mut r.file);
    }
    for u in &mut base.unknown {
        rename(&mut u.file);
    }
    Ok(base)
}

/// The prices `plan` ranks alternatives by, installed once per process by the command that
/// read them (`check --suggest`, `plan`).
static INSTALLED: std::sync::OnceLock<PriceSheet> = std::sync::OnceLock::new();

/// Makes `sheet` the prices [`hourly_of`] and [`plan_price`] read (the first one installed
/// stays).
pub fn install_prices(sheet: PriceSheet) {
    let _ = INSTALLED.set(sheet);
}

/// Where `r` would run with size `sku` in `region` (none: its own), and its OS and meter.
fn plan_meter(
    r: &computeguard_policy_core::compute::Resource,
    region: Option<&str>,
) -> (Option<String>, computeguard_cost::Os, Priority) {
    let region = region
        .map(str::to_string)
        .or_else(|| r.region.clone())
        .or_else(|| r.parent_region.clone())
        .or_else(|| {
            computeguard_policy_core::context::azure()
                .and_then(|a| a.workspace_region.clone())
                .filter(|_| computeguard_policy_core::context::takes_workspace_region(r))
        });
    let os = if r
        .os_type
        .as_deref()
        .is_some_and(|o| o.eq_ignore_ascii_case("windows"))
    {
        computeguard_cost::Os::Windows
    } else {
        computeguard_cost::Os::Linux
    };
    (region, os, Priority::of_model(r.priority.as_deref()))
}

/// The hourly price of size `sku` for `r` in `region` (none: its own region), with its OS
/// and priority, from the installed prices; `None` without prices or when they have none.
pub fn hourly_of(
    r: &computeguard_policy_core::compute::Resource,
    sku: &str,
    region: Option<&str>,
) -> Option<f64> {
    let sheet = INSTALLED.get()?;
    let (region, os, priority) = plan_meter(r, region);
    sheet
        .lookup(sku, region.as_deref()?, os, priority)
        .map(|p| p.hourly)
}

/// What `plan` says of an alternative's price: `$3.673/h, $2,681.29/month per node (linux
/// regular)`, or why it is not known; `None` without prices.
pub fn plan_price(
    r: &computeguard_policy_core::compute::Resource,
    sku: &str,
    region: Option<&str>,
) -> Option<String> {
    let sheet = INSTALLED.get()?;
    let (region, os, priority) = plan_meter(r, region);
    let meter = format!("{} {}", os.as_str(), priority.as_str());
    let Some(region) = region else {
        return Some(format!("price not known: no region stated ({meter})"));
    };
    let cur = sheet.currency();
    Some(match sheet.lookup(sku, &region, os, priority) {
        Some(p) => format!(
            "{}/h, {}/month per node ({meter})",
            format_rate(p.hourly, cur),
            money(computeguard_cost::monthly(p.hourly, 1), cur)
        ),
        None => format!("price not known: the price files list no {sku} in {region} ({meter})"),
    })
}
