//! `computeguard inspect FILE...`: the compute model of every resource the files declare,
//! as the rules see it (`resource.*` in a rule pack), with where each field was read and
//! what stayed unresolved (`conftest parse` for computeguard).

use crate::{Outcome, scan};
use computeguard_policy_core::compute::Resource;
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// Files to read (any format `check` reads; Terraform with its folder's variables, Bicep
    /// with its parameter files and local modules).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: crate::commands::ListFormat,
    /// Configuration whose `azure.prices` (and `azure.workspaceRegion`) price each
    /// resource (docs/cost.md); without it nothing is priced.
    #[arg(long)]
    pub config: Option<PathBuf>,
}

/// One resource as shown: the model fields, the line of the resource and of each field,
/// and every unresolved field with the expression written in its place.
fn view(file: &str, doc: &computeguard_decode::Document, prefix: &str, r: &Resource) -> Value {
    let line = |pointer: &str| {
        doc.positions
            .locate(&format!("{prefix}{pointer}"))
            .map(|s| s.line)
    };
    let mut model = serde_json::to_value(r).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut model {
        // Empty and unknown fields say nothing here: `null` in CEL either way.
        m.retain(|_, v| match v {
            Value::Null => false,
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::String(s) => !s.is_empty(),
            _ => true,
        });
        m.remove("display");
        m.remove("unresolved");
    }
    let fields: serde_json::Map<String, Value> = r
        .fields
        .iter()
        .filter_map(|(f, p)| line(p).map(|l| (f.clone(), json!(l))))
        .collect();
    let unresolved: Vec<Value> = scan::open_facts(&doc.value, prefix, r)
        .into_iter()
        .map(|f| {
            let line = doc.positions.locate(&f.pointer).map(|s| s.line);
            json!({"field": f.field, "expression": f.expression, "line": line})
        })
        .collect();
    json!({
        "file": file,
        "line": line(&r.pointer),
        "resource": r.display,
        "model": model,
        "lines": fields,
        "unresolved": unresolved,
    })
}

pub fn run(args: InspectArgs) -> anyhow::Result<Outcome> {
    let mut out = Vec::new();
    // Bicep and ARM files as check reads them: parameter files named among the files and
    // paired by name applied, local modules followed (each module instance shown in its
    // own file).
    let (param_files, _) = scan::named_param_files(&args.files)?;
    let config = match &args.config {
        Some(path) => crate::config::Config::load(path)?,
        None => crate::config::Config::default(),
    };
    let prices = crate::cost::load_prices(&config)?;
    let mut declared = Vec::new();
    let reader = scan::Scan {
        policies: &[],
        config: &config,
        as_of: String::new(),
        max_file_bytes: u64::from(scan::DEFAULT_MAX_FILE_MIB) << 20,
        var_files: Vec::new(),
        param_files,
    };
    let inputs: Vec<scan::Input> = args
        .files
        .iter()
        .map(|p| scan::Input {
            name: p.display().to_string(),
            path: p.clone(),
            text: None,
        })
        .collect();
    let expander = reader.expander(&inputs);
    for input in &inputs {
        let path = &input.path;
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("`{}`: cannot read: {e}", path.display()))?;
        let (docs, source) = expander
            .decode_named(input, &text)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        for (name, doc) in &docs {
            let parts = computeguard_policy_core::read::parts(&doc.value)
                .unwrap_or_else(|| vec![(String::new(), std::borrow::Cow::Borrowed(&doc.value))]);
            for (prefix, value) in &parts {
                for r in computeguard_policy_core::read::normalize(value, source) {
                    let shown = view(name, doc, prefix, &r);
                    declared.push(scan::cost::Declared {
                        file: name.clone(),
                        line: shown["line"]
                            .as_u64()
                            .and_then(|l| u32::try_from(l).ok())
                            .unwrap_or(1),
                        resource: r,
                    });
                    out.push(shown);
                }
            }
        }
    }
    if let Some(sheet) = &prices {
        let estimate =
            scan::cost::estimate_of(&declared, sheet, config.context.workspace_region.as_deref());
        for (shown, d) in out.iter_mut().zip(&declared) {
            if let Some(c) = estimate
                .resources
                .iter()
                .find(|c| c.file == d.file && c.line == d.line && c.resource == d.resource.display)
            {
                shown["cost"] = serde_json::to_value(c)?;
                shown["currency"] = json!(estimate.currency);
            }
        }
    }
    match args.format {
        crate::commands::ListFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&out)?);
        }
        crate::commands::ListFormat::Text => print_text(&out),
    }
    Ok(Outcome::Clean)
}

fn print_text(resources: &[Value]) {
    let c = crate::report::clean;
    if resources.is_empty() {
        println!("no compute resources recognised");
    }
    for r in resources {
        println!(
            "{}:{}: {}",
            c(r["file"].as_str().unwrap_or_default()),
            r["line"].as_u64().unwrap_or(0),
            c(r["resource"].as_str().unwrap_or_default())
        );
        if let Some(model) = r["model"].as_object() {
            let width = model.keys().map(String::len).max().unwrap_or(0);
            for (k, v) in model {
                let shown = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let at = r["lines"][k]
                    .as_u64()
                    .map_or_else(String::new, |l| format!("  (line {l})"));
                println!("  {k:width$}  {}{at}", c(&shown));
            }
        }
        if let Some(cost) = r.get("cost") {
            println!(
                "  {}",
                c(&cost_line(cost, r["currency"].as_str().unwrap_or("USD")))
            );
        }
        for u in r["unresolved"].as_array().into_iter().flatten() {
            println!(
                "  unresolved {}: {}{}",
                c(u["field"].as_str().unwrap_or_default()),
                c(u["expression"]
                    .as_str()
                    .unwrap_or("(known only at deploy time)")),
                u["line"]
                    .as_u64()
                    .map_or_else(String::new, |l| format!("  (line {l})"))
            );
        }
        println!();
    }
}

/// `cost  $3.673/h (meter NC24ads A100 v4, FILE:LINE) x 1-4 nodes: $2,681.29/month idle, ...`
fn cost_line(cost: &Value, currency: &str) -> String {
    let money = |v: &Value| {
        v.as_f64().map_or_else(
            || "unknown".to_string(),
            |x| computeguard_cost::money(x, currency),
        )
    };
    let nodes = |v: &Value| {
        v.as_i64()
            .map_or_else(|| "?".to_string(), |n| n.to_string())
    };
    let (floor, ceiling) = (
        nodes(&cost["floor"]["nodes"]),
        nodes(&cost["ceiling"]["nodes"]),
    );
    let count = if floor == ceiling {
        format!("{floor} node(s)")
    } else {
        format!("{floor}-{ceiling} nodes")
    };
    let mut line = match cost["hourly"].as_f64() {
        Some(h) => format!(
            "cost  {}/h ({} {}, meter {}, {}) x {count}: {}/month idle, {}/month at full scale",
            format_hourly(h, currency),
            cost["os"].as_str().unwrap_or_default(),
            cost["priority"].as_str().unwrap_or_default(),
            cost["meter"]["meter"].as_str().unwrap_or_default(),
            cost["meter"]["source"].as_str().unwrap_or_default(),
            money(&cost["floorMonthly"]),
            money(&cost["ceilingMonthly"]),
        ),
        None => format!("cost  unknown x {count}"),
    };
    for u in cost["unknown"].as_array().into_iter().flatten() {
        line.push_str(&format!("; {}", u.as_str().unwrap_or_default()));
    }
    for n in cost["notes"].as_array().into_iter().flatten() {
        line.push_str(&format!("; {}", n.as_str().unwrap_or_default()));
    }
    line
}

/// An hourly price with every digit the page gives (`$0.018816`).
fn format_hourly(h: f64, currency: &str) -> String {
    if currency.eq_ignore_ascii_case("USD") {
        format!("${h}")
    } else {
        format!("{currency} {h}")
    }
}
