//! `computeguard catalog show SIZE` (every fact of one size with where it comes from) and
//! `computeguard catalog list` (one line per size, with filters).

use super::facts::{self, Origin};
use super::input::{self, Limit, Loaded};
use crate::Outcome;
use crate::commands::ListFormat;
use computeguard_policy_core::catalog::{self, SkuFacts, kaito};
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::PathBuf;

/// Which overlays `show` and `list` apply: those `check` would (the configuration's
/// `catalog:`), then `--catalog`.
#[derive(clap::Args, Debug)]
pub struct OverlayArgs {
    /// Catalog overlay to apply over the built-in catalog first (YAML or JSON), after the
    /// ones `computeguard.yaml` names in `catalog:`. Repeatable; a later one wins.
    #[arg(long = "catalog", value_name = "OVERLAY")]
    pub catalog: Vec<PathBuf>,
    /// Configuration file whose `catalog:` overlays apply (default: `computeguard.yaml` in
    /// this directory or a parent, as `check` finds it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub limit: Limit,
    /// Date the statuses are given for, YYYY-MM-DD: a size whose retirement date has passed
    /// is `retired` (default: the configuration's `asOf`, else today in UTC, as `check`).
    #[arg(long, value_parser = crate::config::parse_date)]
    pub as_of: Option<String>,
}

impl OverlayArgs {
    /// Reads, checks and installs the overlays (once, before any lookup); returns them
    /// with the date statuses are given for.
    fn install(&self) -> anyhow::Result<(Vec<Loaded>, String)> {
        let config = crate::load_config(self.config.as_ref())?;
        let as_of = self
            .as_of
            .clone()
            .or_else(|| config.as_of.clone())
            .unwrap_or_else(crate::today);
        let mut paths = config.context.catalog;
        paths.extend(self.catalog.iter().cloned());
        Ok((input::install(&paths, self.limit)?, as_of))
    }
}

/// The value of `fact` for `f` at `as_of`: the status follows the retirement date.
fn dated_value(f: &SkuFacts, fact: &str, as_of: &str) -> Option<Value> {
    if fact == "status" && !f.status.is_empty() {
        return Some(Value::from(catalog::status_at(f, as_of)));
    }
    facts::value(f, fact)
}

#[derive(clap::Args, Debug)]
pub struct ShowArgs {
    /// VM size name, any case, with or without `Standard_` (an alias shows its size).
    #[arg(value_name = "SIZE")]
    pub size: String,
    #[command(flatten)]
    pub overlays: OverlayArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ListFormat,
}

#[derive(clap::Args, Debug)]
pub struct ListArgs {
    /// Only sizes with GPUs (a GPU count above 0, or an N-series size whose count is unknown).
    #[arg(long)]
    pub gpu: bool,
    /// Only sizes of this family: the quota family (`standardNCADSA100v4Family`, any case),
    /// the series (`NC_A100_v4`) or the letters of the name (`NC` for `Standard_NC24ads_A100_v4`).
    #[arg(long, value_name = "F")]
    pub family: Option<String>,
    /// Only sizes with this status (`GA`, `retirement_announced`, `retired`; any case).
    #[arg(long, value_name = "S")]
    pub status: Option<String>,
    #[command(flatten)]
    pub overlays: OverlayArgs,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: ListFormat,
}

/// The rows of each size under its canonical name (not its aliases).
fn sizes() -> impl Iterator<Item = &'static SkuFacts> {
    catalog::skus()
        .iter()
        .map(|(_, f)| f)
        .filter(|f| f.alias == f.name)
}

/// The aliases of a size.
fn aliases(f: &SkuFacts) -> Vec<&'static str> {
    catalog::skus()
        .iter()
        .map(|(_, r)| r)
        .filter(|r| r.name == f.name && r.alias != r.name)
        .map(|r| r.alias)
        .collect()
}

/// The file of the overlay entry for `f` whose source is `source` (the last such file:
/// a later overlay wins).
fn file_of<'l>(loaded: &'l [Loaded], f: &SkuFacts, source: &str) -> Option<&'l str> {
    loaded.iter().rev().find_map(|l| {
        l.overlay
            .skus
            .iter()
            .any(|e| e.source == source && catalog::sku(&e.name).is_some_and(|s| s.name == f.name))
            .then_some(l.name.as_str())
    })
}

/// Whether the built-in catalog has the same value for a fact an overlay set.
fn agrees(f: &SkuFacts, fact: &str, v: Option<&Value>) -> bool {
    facts::builtin(f.name).is_some_and(|b| facts::value(b, fact).as_ref() == v)
}

/// `unknown VM size `X`; closest known sizes: ...`.
fn unknown(name: &str, overlays: bool) -> anyhow::Error {
    let names: Vec<&'static str> = catalog::skus().iter().map(|(_, f)| f.alias).collect();
    let keys: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let closest: Vec<String> =
        computeguard_policyset::suggest::by_closeness(&catalog::sku_key(name), &keys)
            .into_iter()
            .take(3)
            .filter_map(|k| names.iter().find(|n| n.eq_ignore_ascii_case(k)))
            .map(|n| format!("`{n}`"))
            .collect();
    anyhow::anyhow!(
        "unknown VM size `{name}`: not in the built-in catalog (data as of {}){}; closest known sizes: {}",
        catalog::DATA_DATE,
        if overlays {
            " or the overlays given"
        } else {
            ""
        },
        closest.join(", ")
    )
}

pub fn run_show(args: ShowArgs) -> anyhow::Result<Outcome> {
    let (loaded, as_of) = args.overlays.install()?;
    let mut out = std::io::stdout().lock();
    if catalog::sku(&args.size).is_none()
        && let Some(p) = kaito::preset(&args.size)
    {
        return show_preset(&mut out, &p, args.format);
    }
    if catalog::sku(&args.size).is_none() && !catalog::sku_well_formed(&args.size) {
        anyhow::bail!(
            "`{}` is neither a VM size nor a KAITO preset of {}{}",
            args.size,
            kaito::version(),
            if loaded.is_empty() {
                ""
            } else {
                " (with the overlays given)"
            }
        );
    }
    let f = catalog::sku(&args.size).ok_or_else(|| unknown(&args.size, !loaded.is_empty()))?;
    let kaito_row = kaito::instance_type(f.name);
    let builtin = !facts::added(f);
    let rows: Vec<(&str, Option<Value>, Origin)> = facts::all()
        .map(|fact| (fact, dated_value(f, fact, &as_of), facts::origin(f, fact)))
        .collect();
    let sources: Vec<(&str, &str)> = f
        .sources
        .iter()
        .map(|id| (*id, catalog::source(id).unwrap_or("(no such source id)")))
        .collect();
    match args.format {
        ListFormat::Json => {
            let list: Vec<Value> = rows
                .iter()
                .map(|(fact, v, origin)| {
                    let mut o = json!({"fact": fact, "value": v});
                    let (from, extra) = match origin {
                        Origin::BuiltIn => ("built-in", json!({})),
                        Origin::Overlay(source) => (
                            "overlay",
                            json!({
                                "file": file_of(&loaded, f, source),
                                "source": source,
                                "builtInAgrees": agrees(f, fact, v.as_ref()),
                            }),
                        ),
                        Origin::Derived(why) => ("derived", json!({"note": why})),
                        Origin::Unknown => ("unknown", json!({})),
                    };
                    o["from"] = json!(from);
                    if let (Value::Object(o), Value::Object(extra)) = (&mut o, extra) {
                        o.extend(extra);
                    }
                    o
                })
                .collect();
            let shown = json!({
                "name": f.name,
                "aliases": aliases(f),
                "builtIn": builtin,
                "dataDate": catalog::DATA_DATE,
                "asOf": as_of,
                "facts": list,
                "sources": sources.iter().map(|(id, doc)| json!({"id": id, "document": doc})).collect::<Vec<_>>(),
                "overlays": loaded.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
                "kaito": {
                    "version": kaito::version(),
                    "instanceType": kaito_row,
                },
            });
            writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
        }
        ListFormat::Text => {
            let c = crate::report::clean;
            let aka = aliases(f);
            writeln!(
                out,
                "{}{}",
                c(f.name),
                if aka.is_empty() {
                    String::new()
                } else {
                    format!(" (also written {})", c(&aka.join(", ")))
                }
            )?;
            let shown: Vec<(&str, String, String)> = rows
                .iter()
                .map(|(fact, v, origin)| {
                    let from = match origin {
                        Origin::BuiltIn => "built-in".to_string(),
                        Origin::Overlay(source) => {
                            let mut from = match file_of(&loaded, f, source) {
                                Some(file) => format!("overlay {file}: {source}"),
                                None => format!("overlay: {source}"),
                            };
                            if agrees(f, fact, v.as_ref()) {
                                from.push_str(" (built-in agrees)");
                            }
                            from
                        }
                        Origin::Derived(why) => why.to_string(),
                        Origin::Unknown => "-".to_string(),
                    };
                    let from = if *fact == "status"
                        && v.as_ref().and_then(Value::as_str) != Some(f.status)
                    {
                        format!(
                            "{from}, catalogued as {}; its retirement date {} on {as_of}",
                            f.status,
                            if catalog::retired_at(f, &as_of) {
                                "has passed"
                            } else {
                                "is still ahead"
                            }
                        )
                    } else {
                        from
                    };
                    (*fact, facts::show(v.as_ref()), from)
                })
                .collect();
            let w1 = shown.iter().map(|r| r.0.len()).max().unwrap_or(0);
            let w2 = shown.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
            for (fact, v, from) in &shown {
                let line = format!("  {fact:w1$}  {v:w2$}  {from}", v = c(v), from = c(from));
                writeln!(out, "{}", line.trim_end())?;
            }
            if builtin {
                writeln!(
                    out,
                    "built-in sources (catalog data as of {}):",
                    catalog::DATA_DATE
                )?;
                let w = sources.iter().map(|s| s.0.len()).max().unwrap_or(0);
                for (id, doc) in &sources {
                    writeln!(out, "  {id:w$}  {}", c(doc))?;
                }
            } else {
                writeln!(
                    out,
                    "not in the built-in catalog (data as of {}): only the overlays know this size",
                    catalog::DATA_DATE
                )?;
            }
            let version = c(&kaito::version());
            match kaito_row {
                Some(t) => {
                    writeln!(
                        out,
                        "KAITO instance type ({version}): {} GPU(s), {} of GPU memory  {}",
                        t.gpus,
                        c(&t.gpu_memory),
                        c(&kaito_origin(&t.sources, t.source.as_deref()))
                    )?;
                    // Two figures for one VM: say which rule reads which.
                    let kaito_gib = kaito::gib(&t.gpu_memory);
                    if kaito_gib
                        .is_some_and(|k| f.gpu_memory_gib.is_none_or(|m| (k - m).abs() > 0.005))
                    {
                        writeln!(
                            out,
                            "  KAITO's figure is not gpu.memoryGiB ({}): kaito-preset-fits judges by KAITO's, as KAITO does; plan's \"enough GPU memory\" by gpu.memoryGiB",
                            facts::show(facts::value(f, "gpu.memoryGiB").as_ref())
                        )?;
                    }
                }
                None => writeln!(
                    out,
                    "KAITO instance type ({version}): not in KAITO's SKU table, so kaito-preset-fits cannot judge a Workspace on it"
                )?,
            }
        }
    }
    Ok(Outcome::Clean)
}

/// Where a KAITO figure comes from: the built-in data (its file and line) or an overlay.
fn kaito_origin(sources: &[String], source: Option<&str>) -> String {
    match (sources.is_empty(), source) {
        (false, Some(s)) => format!("built-in: {s}"),
        (false, None) => "built-in".to_string(),
        (true, Some(s)) => format!("overlay: {s}"),
        (true, None) => "overlay".to_string(),
    }
}

/// `catalog show PRESET`: what a KAITO preset needs, by the installed KAITO data.
fn show_preset(
    out: &mut impl std::io::Write,
    p: &kaito::KaitoPreset,
    format: ListFormat,
) -> anyhow::Result<Outcome> {
    let version = &kaito::version();
    match format {
        ListFormat::Json => {
            let shown = json!({"kaitoVersion": version, "preset": p});
            writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
        }
        ListFormat::Text => {
            let c = crate::report::clean;
            writeln!(out, "KAITO preset {} ({})", c(&p.name), c(version))?;
            if let Some(m) = &p.model {
                writeln!(out, "  model      {}", c(m))?;
            }
            if p.deprecated {
                writeln!(out, "  deprecated (KAITO refuses it)")?;
            }
            for (mode, need) in [("inference", &p.inference), ("tuning", &p.tuning)] {
                let Some(n) = need else { continue };
                let mut parts = Vec::new();
                if let Some(g) = n.gpus {
                    parts.push(format!("{g} GPU(s)"));
                }
                if let Some(m) = &n.total_gpu_memory {
                    parts.push(format!("{m} of GPU memory in all"));
                }
                if let Some(m) = &n.per_gpu_memory {
                    parts.push(format!("{m} per GPU"));
                }
                writeln!(out, "  {mode:10} {}", c(&parts.join(", ")))?;
            }
            writeln!(
                out,
                "  from       {}",
                c(&kaito_origin(&p.sources, p.source.as_deref()))
            )?;
            for id in &p.sources {
                writeln!(
                    out,
                    "  {id}  {}",
                    c(catalog::source(id).unwrap_or("(no such source id)"))
                )?;
            }
        }
    }
    Ok(Outcome::Clean)
}

/// The leading letters of a size name: `NC` for `Standard_NC24ads_A100_v4`.
fn letters(name: &str) -> String {
    let key = catalog::sku_key(name);
    let rest = key
        .strip_prefix("standard_")
        .or_else(|| key.strip_prefix("basic_"))
        .unwrap_or(&key);
    rest.chars().take_while(char::is_ascii_alphabetic).collect()
}

fn keep(f: &SkuFacts, args: &ListArgs, as_of: &str) -> bool {
    if args.gpu
        && !(f.gpu_count.is_some_and(|c| c > 0.0)
            || (f.gpu_count.is_none() && catalog::sku_gpu_family(f.name)))
    {
        return false;
    }
    if let Some(family) = &args.family {
        let key = computeguard_policy_core::azure::family_key(family);
        let quota = f
            .family
            .is_some_and(|q| computeguard_policy_core::azure::family_key(q) == key);
        let series = f.series.eq_ignore_ascii_case(family.trim());
        let named = letters(f.name).eq_ignore_ascii_case(family.trim());
        if !(quota || series || named) {
            return false;
        }
    }
    if let Some(status) = &args.status
        && !catalog::status_at(f, as_of).eq_ignore_ascii_case(status.trim())
    {
        return false;
    }
    true
}

pub fn run_list(args: ListArgs) -> anyhow::Result<Outcome> {
    let (loaded, as_of) = args.overlays.install()?;
    let mut out = std::io::stdout().lock();
    let rows: Vec<&SkuFacts> = sizes().filter(|f| keep(f, &args, &as_of)).collect();
    match args.format {
        ListFormat::Json => {
            let list: Vec<Value> = rows
                .iter()
                .map(|f| {
                    let mut o = serde_json::Map::new();
                    o.insert("name".into(), json!(f.name));
                    o.insert("aliases".into(), json!(aliases(f)));
                    o.extend(facts::object(f));
                    if let Some(status) = dated_value(f, "status", &as_of) {
                        o.insert("status".into(), status);
                    }
                    o.insert("sources".into(), json!(f.sources));
                    let overridden: serde_json::Map<String, Value> = f
                        .overridden
                        .iter()
                        .map(|(k, v)| (k.to_string(), json!(v)))
                        .collect();
                    o.insert("overridden".into(), Value::Object(overridden));
                    Value::Object(o)
                })
                .collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        }
        ListFormat::Text => {
            let c = crate::report::clean;
            let header = [
                "NAME",
                "VCPUS",
                "MEMORY GIB",
                "GPUS",
                "GPU",
                "STATUS",
                "RETIREMENT",
            ]
            .map(String::from);
            let mut table = vec![header.to_vec()];
            for f in &rows {
                let v = |fact: &str| facts::show(dated_value(f, fact, &as_of).as_ref());
                let gpu = match (facts::value(f, "gpu.model"), f.gpu_count) {
                    (Some(Value::String(m)), _) => m,
                    (_, Some(0.0)) => "-".to_string(),
                    _ => "unknown".to_string(),
                };
                let retirement = match f.retirement_date {
                    Some(d) => d.to_string(),
                    None => "-".to_string(),
                };
                table.push(vec![
                    c(f.name),
                    v("vcpus"),
                    v("memoryGiB"),
                    v("gpu.count"),
                    c(&gpu),
                    c(&v("status")),
                    c(&retirement),
                ]);
            }
            let widths: Vec<usize> = (0..header.len())
                .map(|i| {
                    table
                        .iter()
                        .map(|r| r.get(i).map_or(0, |s| s.chars().count()))
                        .max()
                        .unwrap_or(0)
                })
                .collect();
            for row in &table {
                let line: Vec<String> = row
                    .iter()
                    .zip(&widths)
                    .map(|(cell, w)| format!("{cell:w$}"))
                    .collect();
                writeln!(out, "{}", line.join("  ").trim_end())?;
            }
            eprintln!(
                "{} sizes (catalog data as of {}{}); statuses as of {as_of}",
                rows.len(),
                catalog::DATA_DATE,
                if loaded.is_empty() {
                    String::new()
                } else {
                    format!(", with {} overlay(s)", loaded.len())
                }
            );
        }
    }
    Ok(Outcome::Clean)
}
