//! `computeguard plan [PATH...]`: for each GPU resource, the sizes and regions it could move
//! to that pass every rule (the mechanism is in `crate::plan`).

use super::ListFormat;
use crate::plan::{Entry, Plan};
use crate::prepare::{PrepareArgs, prepare};
use crate::{Outcome, scan};
use std::io::Write;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// Files or directories (default: the current directory); `-` reads standard input.
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ListFormat,
    /// Configuration file (default: computeguard.yaml found upward from the working directory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Extra policy: a rule pack (.yaml) or a component (.wasm), optionally pinned. Repeatable.
    #[arg(long = "policy", value_parser = crate::config::PolicyRef::parse, value_name = "FILE[@sha256:HEX]")]
    pub policies: Vec<crate::config::PolicyRef>,
    /// Evaluation date, YYYY-MM-DD (default: config `asOf`, else today in UTC).
    #[arg(long, value_parser = crate::config::parse_date)]
    pub as_of: Option<String>,
    /// Only the resources with an error or warning finding.
    #[arg(long)]
    pub only_findings: bool,
    /// The name of standard input (`-`), as for `check`.
    #[arg(long, value_name = "NAME")]
    pub stdin_filename: Option<String>,
    /// Terraform variable definitions file, as for `check`. Repeatable.
    #[arg(long = "var-file", value_name = "FILE")]
    pub var_files: Vec<PathBuf>,
    /// ARM/Bicep parameters file, as for `check`. Repeatable.
    #[arg(long = "param-file", value_name = "FILE")]
    pub param_files: Vec<PathBuf>,
}

pub fn run(args: PlanArgs) -> anyhow::Result<Outcome> {
    let mut prepared = prepare(&PrepareArgs {
        paths: &args.paths,
        stdin_filename: args.stdin_filename.as_deref(),
        config: args.config.as_ref(),
        policies: &args.policies,
        as_of: args.as_of.as_deref(),
        var_files: &args.var_files,
        param_files: &args.param_files,
        memory_limit_mib: crate::DEFAULT_MEMORY_LIMIT_MIB,
        max_file_mib: scan::DEFAULT_MAX_FILE_MIB,
    })?;
    // Alternatives that make the same kind of change are ranked by price (docs/cost.md).
    if let Some(sheet) = crate::cost::load_prices(&prepared.config)? {
        crate::cost::install_prices(sheet);
    }
    let plan = crate::plan::plan(&mut prepared, args.only_findings);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = match args.format {
        ListFormat::Json => serde_json::to_writer_pretty(&mut out, &plan)
            .map_err(std::io::Error::other)
            .and_then(|()| writeln!(out)),
        ListFormat::Text => render_text(&plan, &mut out),
    };
    if let Err(e) = written
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        return Err(e.into());
    }
    Ok(if plan.summary.without_alternative > 0 {
        Outcome::Findings
    } else {
        Outcome::Clean
    })
}

fn render_text(plan: &Plan, out: &mut impl Write) -> std::io::Result<()> {
    for e in &plan.resources {
        entry(e, out)?;
    }
    let s = &plan.summary;
    writeln!(
        out,
        "computeguard plan: {} GPU resource{}, {} with findings, {} of them without a passing alternative; at most {} candidates evaluated per resource; as of {}",
        s.resources,
        if s.resources == 1 { "" } else { "s" },
        s.with_findings,
        s.without_alternative,
        s.max_evaluated,
        s.as_of
    )
}

fn entry(e: &Entry, out: &mut impl Write) -> std::io::Result<()> {
    let clean = crate::report::clean;
    let current = format!(
        "{} in {}{}",
        e.current.size.as_deref().unwrap_or("(size unresolved)"),
        e.current.region.as_deref().unwrap_or("(region not stated)"),
        if e.current.zones.is_empty() {
            String::new()
        } else {
            format!(", zones {}", e.current.zones.join(", "))
        }
    );
    writeln!(
        out,
        "{}:{}  {}  {}",
        clean(&e.file),
        e.line,
        clean(&e.display),
        clean(&current)
    )?;
    if let Some(m) = &e.module {
        writeln!(
            out,
            "  deployed by {}; the size is used at {}:{}",
            clean(&m.via),
            clean(&m.file),
            m.line
        )?;
    }
    if e.findings.is_empty() {
        writeln!(out, "  findings: none")?;
    } else {
        let list: Vec<String> = e
            .findings
            .iter()
            .map(|f| format!("{}[{}]", f.severity.as_str(), f.rule))
            .collect();
        writeln!(out, "  findings: {}", list.join(", "))?;
    }
    if let Some(note) = &e.note {
        writeln!(out, "  {}", clean(note))?;
    } else if e.alternatives.is_empty() {
        writeln!(
            out,
            "  no alternative passes ({} candidate{} from the catalog, {} evaluated)",
            e.candidates,
            if e.candidates == 1 { "" } else { "s" },
            e.evaluated
        )?;
    }
    for r in &e.rejected {
        writeln!(
            out,
            "     tried {}{}: still {}",
            r.size,
            r.region
                .as_deref()
                .map_or_else(String::new, |g| format!(" in {g}")),
            r.rules.join(", ")
        )?;
    }
    for (i, a) in e.alternatives.iter().enumerate() {
        writeln!(
            out,
            "  {}. {}{}: {}",
            i + 1,
            a.size,
            a.region
                .as_deref()
                .map_or_else(String::new, |r| format!(" in {r}")),
            a.changes.join("; ")
        )?;
        writeln!(out, "     {}", a.gpu)?;
        writeln!(out, "     {}; {}", a.offer, a.quota)?;
        if let Some(price) = &a.price {
            writeln!(out, "     {}", clean(price))?;
        }
        if !a.clears.is_empty() {
            writeln!(out, "     clears {}", a.clears.join(", "))?;
        }
    }
    if !e.remaining.is_empty() && !e.alternatives.is_empty() {
        writeln!(
            out,
            "  still reported whatever the size or region: {}",
            e.remaining.join(", ")
        )?;
    }
    writeln!(out)
}
