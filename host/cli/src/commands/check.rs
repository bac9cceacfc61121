//! `computeguard check [PATH...]`

use crate::baseline::Baseline;
use crate::config::parse_date;
use crate::prepare::{PrepareArgs, Prepared, prepare};
use crate::report::{Format, NotEvaluated, RenderOptions, Report, RuleDoc, Severity};
use crate::{Outcome, scan};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Files or directories to check (default: the current directory); `-` reads standard input.
    pub paths: Vec<PathBuf>,
    /// The name of standard input (`-`) in findings, and for its format by extension
    /// (default `<stdin>`, format from the content: JSON if it starts with `{` or `[`, else YAML).
    #[arg(long, value_name = "NAME")]
    pub stdin_filename: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Configuration file (default: computeguard.yaml found upward from the working directory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Extra policy: a rule pack (.yaml) or a component (.wasm), optionally pinned to a digest. Repeatable.
    #[arg(long = "policy", value_parser = crate::config::PolicyRef::parse, value_name = "FILE[@sha256:HEX]")]
    pub policies: Vec<crate::config::PolicyRef>,
    /// Lowest severity that makes the exit code 1.
    #[arg(long, value_enum, default_value = "error")]
    pub fail_on: Severity,
    /// Evaluation date, YYYY-MM-DD (default: config `asOf`, else today in UTC).
    #[arg(long, value_parser = parse_date)]
    pub as_of: Option<String>,
    /// List every skipped file (what could not be checked is always listed).
    #[arg(long, short)]
    pub verbose: bool,
    /// Also list suppressed findings (inline comments, `ignore:`, baseline), marked as such.
    #[arg(long)]
    pub show_suppressed: bool,
    /// Report only findings that are not in this baseline file; with `azure.prices`, also
    /// what the change adds to the cost it recorded (docs/cost.md).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write the current findings to this baseline file (and exit 0 unless a file could not be
    /// checked); with `azure.prices`, what the files cost too.
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Exit 2 when something could not be checked and was skipped (an unrendered template,
    /// a document that is not a mapping, a link loop, ...): CI with no blind spots.
    #[arg(long)]
    pub fail_on_skipped: bool,
    /// Exit 2 when a fact a rule reads stayed unresolved (a Terraform variable or an
    /// ARM/Bicep parameter without a value, a deploy-time expression, a module that is
    /// not followed): CI where every size and region is pinned in the files.
    #[arg(long)]
    pub fail_on_unresolved: bool,
    /// Terraform variable definitions file, applied after `terraform.tfvars` and
    /// `*.auto.tfvars` to every folder checked (for the variables it declares), as
    /// `terraform plan -var-file` does. Repeatable; later files win. A `.tfvars` named
    /// among the paths is one too, applied after these.
    #[arg(long = "var-file", value_name = "FILE")]
    pub var_files: Vec<PathBuf>,
    /// ARM/Bicep parameters file (`.bicepparam`, or JSON with the deploymentParameters
    /// schema), applied after the template's defaults and the files paired with it by name
    /// (`X.parameters.json`, `X.bicepparam` beside `X.bicep`): a JSON file to every template
    /// checked, a `.bicepparam` to the template its `using` names. Repeatable; later files win.
    #[arg(long = "param-file", value_name = "FILE")]
    pub param_files: Vec<PathBuf>,
    /// Name the best alternative `computeguard plan` finds in the fix of each finding it
    /// clears (each resource with findings is evaluated again with up to 12 candidate
    /// sizes and regions; docs/plan.md).
    #[arg(long)]
    pub suggest: bool,
    /// Also price the same paths in DIR, a checkout of the base branch (`git worktree add
    /// ../base origin/main`), and report what the change adds to their cost ("+$12,410.00/month
    /// idle"); needs `azure.prices` (docs/cost.md).
    #[arg(long, value_name = "DIR")]
    pub compare_to: Option<PathBuf>,
    /// Memory of each policy's sandbox, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = crate::DEFAULT_MEMORY_LIMIT_MIB, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub memory_limit_mib: u32,
    /// Largest file (or standard input) read, in MiB; larger ones are errors, not read.
    #[arg(long, value_name = "MIB", default_value_t = scan::DEFAULT_MAX_FILE_MIB, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_file_mib: u32,
}

pub fn run(args: CheckArgs) -> anyhow::Result<Outcome> {
    let baseline = args.baseline.as_deref().map(Baseline::load).transpose()?;
    let mut prepared = prepare(&PrepareArgs {
        paths: &args.paths,
        stdin_filename: args.stdin_filename.as_deref(),
        config: args.config.as_ref(),
        policies: &args.policies,
        as_of: args.as_of.as_deref(),
        var_files: &args.var_files,
        param_files: &args.param_files,
        memory_limit_mib: args.memory_limit_mib,
        max_file_mib: args.max_file_mib,
    })?;
    let prices = crate::cost::load_prices(&prepared.config)?;
    let budget = crate::cost::idle_budget(&prepared.config)?;
    if args.compare_to.is_some() && prices.is_none() {
        anyhow::bail!(
            "`--compare-to` compares what the change costs, but the configuration names no `azure.prices` (Azure Retail Prices API pages; docs/cost.md)"
        );
    }
    let mut report = first_report(&prepared);
    if let Some(sheet) = &prices {
        let estimate = prepared.scan().estimate(&prepared.files, sheet);
        if let Some(dir) = &args.compare_to {
            let base = crate::cost::base_estimate(&prepared, dir, sheet)?;
            report.cost_diff = Some(computeguard_cost::Comparison::of(
                &dir.display().to_string(),
                &base,
                &estimate,
            ));
        }
        crate::cost::apply(&mut report, estimate, sheet, budget, &prepared.config);
    }
    if args.suggest {
        if let Some(sheet) = prices {
            crate::cost::install_prices(sheet);
        }
        crate::plan::suggest(&mut prepared, &mut report);
    }
    let Prepared { config, paths, .. } = &prepared;
    report.summary.config_file = config.path.as_ref().map(|p| p.display().to_string());
    if let Some(path) = &args.write_baseline {
        // Everything found now is adopted (a `--baseline` given too is superseded), and
        // what the files cost is recorded with it.
        let all = Baseline::of(&report.findings).with_cost(report.cost.as_ref());
        all.write(path)?;
        all.apply(&mut report, &path.display().to_string());
    } else if let (Some(b), Some(path)) = (&baseline, &args.baseline) {
        let file = path.display().to_string();
        b.apply(&mut report, &file);
        // `--compare-to` names the base explicitly: it wins over the baseline's record.
        if report.cost_diff.is_none() {
            // Standard input is compared under the name `--stdin-filename` gives it.
            let scope: Vec<PathBuf> = paths
                .iter()
                .filter_map(|p| match (p.as_os_str() == "-", &args.stdin_filename) {
                    (false, _) => Some(p.clone()),
                    (true, name) => name.as_ref().map(PathBuf::from),
                })
                .collect();
            baseline_cost_diff(&mut report, b, &file, &scope);
        }
    }
    if report.summary.resources > 0 {
        report.not_evaluated = not_evaluated(config, &report);
        report
            .not_evaluated
            .extend(crate::cost::not_evaluated(config, budget));
    }
    let stdout = std::io::stdout();
    let opts = RenderOptions {
        color: args.format == Format::Text
            && stdout.is_terminal()
            && std::env::var_os("NO_COLOR").is_none(),
        verbose: args.verbose,
        show_suppressed: args.show_suppressed,
        fail_on: args.fail_on,
        fail_on_unresolved: args.fail_on_unresolved,
        fail_on_skipped: args.fail_on_skipped,
    };
    // A reader that closes the pipe early (`| head`) stops the report, not the verdict:
    // the exit code below still says what was found.
    let written = report.render(args.format, &opts, &mut stdout.lock());
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    let (prices_needed, azure_needed): (Vec<NotEvaluated>, Vec<NotEvaluated>) = report
        .not_evaluated
        .iter()
        .cloned()
        .partition(|n| n.needs == "azure.prices");
    if let Some(note) = not_evaluated_line(&azure_needed) {
        eprintln!("computeguard: {note}");
    }
    for n in &prices_needed {
        eprintln!("computeguard: {}", n.message);
    }
    if let Some(path) = &args.write_baseline {
        eprintln!(
            "computeguard: wrote {} finding(s) to the baseline {}",
            report.summary.baselined,
            path.display()
        );
        if let Some(cost) = &report.cost {
            eprintln!(
                "computeguard: and what the files cost: {}",
                crate::cost::totals_line(cost).replace(" (listed above)", "")
            );
        }
    }
    if !report.errors.is_empty() {
        // Invalid input or a failing policy: exit 2 after reporting everything else.
        anyhow::bail!(
            "{} file(s) could not be checked (see above)",
            report.summary.failed_files
        );
    }
    if args.fail_on_skipped && report.summary.unchecked > 0 {
        // A blind spot is input that was not checked, like an invalid file: exit 2.
        anyhow::bail!(
            "{} skipped file(s) or document(s) were not checked, and `--fail-on-skipped` is set",
            report.summary.unchecked
        );
    }
    if args.fail_on_skipped && report.summary.files == 0 {
        anyhow::bail!(
            "nothing was checked (no file computeguard reads under {}), and `--fail-on-skipped` is set",
            paths
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if args.fail_on_unresolved && report.summary.unresolved > 0 {
        // The text report lists them above; in the other formats they are in the report,
        // which CI may keep in a file: listed here too, so the log says which ones.
        let listed = if args.format == Format::Text {
            "listed above".to_string()
        } else {
            for u in &report.unresolved {
                eprintln!(
                    "computeguard: unresolved: {} ({}:{})",
                    crate::report::clean(&u.message()),
                    crate::report::clean(&u.file),
                    u.line
                );
            }
            "listed above and in the report".to_string()
        };
        anyhow::bail!(
            "{} fact(s) that rules read are known only at deploy time ({listed}), and `--fail-on-unresolved` is set",
            report.summary.unresolved
        );
    }
    Ok(
        if report
            .findings
            .iter()
            .any(|f| f.severity.at_least(args.fail_on))
        {
            Outcome::Findings
        } else {
            Outcome::Clean
        },
    )
}

/// What the change adds to the cost `baseline` (read from `file`) recorded for `paths`,
/// into the report; why it cannot be said on standard error (the findings baseline still applies).
fn baseline_cost_diff(report: &mut Report, baseline: &Baseline, file: &str, paths: &[PathBuf]) {
    match (&report.cost, &baseline.cost) {
        (Some(now), _) => match baseline.cost_diff(now, file, paths) {
            Ok(diff) => {
                if let Some(then) = baseline.other_sources(now) {
                    eprintln!(
                        "warning: the baseline {file} was priced from other price files ({}): the cost diff counts their differences too",
                        then.join(", ")
                    );
                }
                report.cost_diff = Some(diff);
            }
            Err(why) => eprintln!("warning: {why}"),
        },
        (None, Some(_)) => eprintln!(
            "warning: the baseline {file} records what the files cost, but the configuration names no `azure.prices`: no cost diff"
        ),
        (None, None) => {}
    }
}

/// The scan's warnings on standard error, then the report of the prepared inputs.
pub(crate) fn first_report(prepared: &Prepared) -> Report {
    let Prepared {
        files,
        skipped,
        loaded,
        ..
    } = prepared;
    let scan = prepared.scan();
    for warning in scan.var_file_warnings(files) {
        eprintln!("warning: {warning}");
    }
    for warning in scan.param_file_warnings(files) {
        eprintln!("warning: {warning}");
    }
    let rules = loaded
        .iter()
        .flat_map(|l| {
            let info = l.policy.info();
            info.rules.iter().map(move |r| RuleDoc {
                id: r.id.clone(),
                severity: r.severity.into(),
                description: r.description.clone(),
                rationale: r.rationale.clone(),
                remediation: r.remediation.clone(),
                policy: info.name.clone(),
                documented: l.builtin,
            })
        })
        .collect();
    scan.run(
        files,
        Report {
            skipped: skipped.clone(),
            rules,
            ..Report::default()
        },
    )
}

/// The rules that judge against the subscription's own facts and had none to judge
/// with: every format says so, so that silence is never read as a pass.
fn not_evaluated(config: &crate::config::Config, report: &Report) -> Vec<NotEvaluated> {
    let context = &config.context;
    let wanted = [
        (
            "sku-available-in-region",
            context.skus.is_empty(),
            "azure.skus",
            "az vm list-skus output",
        ),
        (
            "quota-sufficient",
            context.usage.is_empty() && context.ml_usage.is_empty(),
            "azure.usage",
            "az vm list-usage output",
        ),
    ];
    wanted
        .iter()
        .filter(|(rule, missing, _, _)| {
            *missing
                && report.rules.iter().any(|r| r.id == *rule)
                && config.rules.get(*rule) != Some(&computeguard_policyset::Level::Off)
        })
        .map(|(rule, _, key, what)| NotEvaluated {
            rule: (*rule).to_string(),
            needs: (*key).to_string(),
            message: format!(
                "{rule} was not evaluated: the configuration names no `{key}` ({what}; docs/catalog.md)"
            ),
        })
        .collect()
}

/// The rules of [`not_evaluated`] in one line, for standard error.
fn not_evaluated_line(list: &[NotEvaluated]) -> Option<String> {
    if list.is_empty() {
        return None;
    }
    let rules: Vec<&str> = list.iter().map(|n| n.rule.as_str()).collect();
    let keys: Vec<String> = list.iter().map(|n| format!("`{}`", n.needs)).collect();
    Some(format!(
        "{} not evaluated: the configuration names no {} (az vm list-skus / list-usage output; docs/catalog.md)",
        match rules.as_slice() {
            [one] => format!("{one} was"),
            _ => format!("{} were", rules.join(" and ")),
        },
        keys.join(" or ")
    ))
}
