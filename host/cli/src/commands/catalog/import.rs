//! `computeguard catalog import FILE...`: an overlay from what Azure prints about VM sizes.
//!
//! Reads, as they are:
//! - `az vm list-skus [--all] -o json` (a bare array of SKUs) and REST Resource Skus - List
//!   bodies (`{"value": [...]}`): family, vCPUs, memory, the GPU count when the `GPUs`
//!   capability is there (absent means unknown, never 0) and RDMA when `RdmaEnabled` is;
//! - Azure ML Virtual Machine Sizes - List bodies (`az ml compute list-sizes`): family,
//!   vCPUs, memory, GPUs;
//! - either body inside an azure-rest-api-specs example (`responses."200".body`).
//!
//! Anything else (a usage list, a recording, a manifest) is refused naming the file and
//! what was expected. One entry per size: a size listed in several regions or files is
//! merged; when two disagree on a fact the first is kept and a warning names both.

use super::facts;
use super::input::{self, Limit};
use crate::Outcome;
use computeguard_policy_core::azure::{self, MlVmSize, SkuOffer};
use computeguard_policy_core::catalog::{self, overlay};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// `az vm list-skus [--all] -o json` output, REST Resource Skus - List bodies, or Azure
    /// ML Virtual Machine Sizes - List bodies (`az ml compute list-sizes -o json`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write the overlay (YAML) to this file instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OVERLAY")]
    pub output: Option<PathBuf>,
    /// Date of the data (when the `az` command ran), in each entry's source and the
    /// overlay's `date`. Default: today (UTC).
    #[arg(long, value_name = "YYYY-MM-DD", value_parser = parse_date)]
    pub date: Option<String>,
    #[command(flatten)]
    pub limit: Limit,
}

fn parse_date(s: &str) -> Result<String, String> {
    let parts: Vec<&str> = s.split('-').collect();
    let ok = match parts[..] {
        [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2 => {
            match (y.parse::<u32>(), m.parse::<u32>(), d.parse::<u32>()) {
                (Ok(y), Ok(m), Ok(d)) => {
                    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
                    let days = match m {
                        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
                        4 | 6 | 9 | 11 => 30,
                        2 if leap => 29,
                        2 => 28,
                        _ => 0,
                    };
                    (1..=days).contains(&d)
                }
                _ => false,
            }
        }
        _ => false,
    };
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!("`{s}` is not a calendar date; expected YYYY-MM-DD"))
    }
}

/// What a file is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `az vm list-skus -o json`: a bare array.
    AzSkus,
    /// REST Resource Skus - List: `{"value": [...]}`.
    RestSkus,
    /// `az ml compute list-sizes -o json`: a bare array.
    AzMlSizes,
    /// REST Azure ML Virtual Machine Sizes - List: `{"value": [...]}`.
    RestMlSizes,
}

impl Shape {
    fn label(self) -> &'static str {
        match self {
            Shape::AzSkus => "az vm list-skus",
            Shape::RestSkus => "REST Resource Skus - List",
            Shape::AzMlSizes => "az ml compute list-sizes",
            Shape::RestMlSizes => "REST Azure ML Virtual Machine Sizes - List",
        }
    }
}

const EXPECTED: &str = "expected `az vm list-skus [--all] -o json` output (a JSON array of SKUs), \
     a REST Resource Skus - List body ({\"value\": [...]}) or an Azure ML Virtual Machine Sizes - \
     List body (`az ml compute list-sizes`)";

/// The body of an azure-rest-api-specs example (`responses."200".body`), if `v` is one.
fn example_body(v: &Value) -> Option<&Value> {
    v.get("parameters")?;
    v.get("responses")?.get("200")?.get("body")
}

/// A short name for a JSON value in messages.
fn kind(v: &Value) -> String {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&str> = o.keys().map(String::as_str).take(6).collect();
            keys.sort_unstable();
            format!("an object with keys {}", keys.join(", "))
        }
        Value::Array(_) => "an array".into(),
        Value::String(_) => "a string".into(),
        Value::Number(_) => "a number".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Null => "null".into(),
    }
}

/// Which shape `v` is, by its list and first item; why not, otherwise.
fn classify(v: &Value) -> Result<Shape, String> {
    let (items, rest) = match v {
        Value::Array(items) => (items, false),
        Value::Object(o) => match o.get("value") {
            Some(Value::Array(items)) => (items, true),
            _ if o.contains_key("networkCallRecords") || o.contains_key("interactions") => {
                return Err("this is an SDK or CLI test recording, not what `az` or the REST API prints; extract the response body first".into());
            }
            _ => return Err(format!("found {} (no \"value\" array)", kind(v))),
        },
        other => return Err(format!("found {}", kind(other))),
    };
    let (skus, ml) = if rest {
        (Shape::RestSkus, Shape::RestMlSizes)
    } else {
        (Shape::AzSkus, Shape::AzMlSizes)
    };
    let Some(first) = items.iter().find_map(Value::as_object) else {
        // An empty list (or one of non-objects, which the parser then refuses).
        return Ok(skus);
    };
    if first.contains_key("resourceType") {
        Ok(skus)
    } else if first.contains_key("currentValue") || first.contains_key("limit") {
        Err("this is a usage (quota) list (`az vm list-usage`, REST Usage - List or Azure ML Usages - List), not VM sizes".into())
    } else if first.contains_key("name")
        && ["vCPUs", "gpus", "memoryGB", "supportedComputeTypes"]
            .iter()
            .any(|k| first.contains_key(*k))
    {
        Ok(ml)
    } else {
        Err(format!(
            "its entries are objects with keys {} (neither SKUs with \"resourceType\" nor Azure ML sizes with \"vCPUs\")",
            {
                let mut keys: Vec<&str> = first.keys().map(String::as_str).take(6).collect();
                keys.sort_unstable();
                keys.join(", ")
            }
        ))
    }
}

/// The facts one listing gives about one size.
struct Listed {
    name: String,
    /// Where, for warnings: the file and the region.
    at: String,
    facts: Vec<(&'static str, Value)>,
}

fn from_offer(file: &str, o: &SkuOffer) -> Listed {
    let mut facts = Vec::new();
    if let Some(f) = &o.family {
        facts.push(("family", Value::from(f.as_str())));
    }
    if let Some(n) = o.vcpus().filter(|n| *n >= 1) {
        facts.push(("vcpus", Value::from(n)));
    }
    if let Some(m) = o.memory_gib().filter(|m| *m >= 0.0) {
        facts.push(("memoryGiB", facts::number(m)));
    }
    if let Some(g) = o.gpus().filter(|g| (0.0..=1024.0).contains(g)) {
        facts.push(("gpu.count", facts::number(g)));
    }
    if let Some(r) = o.rdma() {
        facts.push(("rdma", Value::from(r)));
    }
    let at = match o.locations.first() {
        Some(region) => format!("{file} ({region})"),
        None => file.to_string(),
    };
    Listed {
        name: o.name.clone(),
        at,
        facts,
    }
}

fn from_ml(file: &str, s: &MlVmSize) -> Listed {
    let mut facts = Vec::new();
    if let Some(f) = &s.family {
        facts.push(("family", Value::from(f.as_str())));
    }
    if let Some(n) = s.vcpus.filter(|n| *n >= 1) {
        facts.push(("vcpus", Value::from(n)));
    }
    if let Some(m) = s.memory_gib.filter(|m| *m >= 0.0) {
        facts.push(("memoryGiB", facts::number(m)));
    }
    if let Some(g) = s.gpus.filter(|g| *g <= 1024) {
        facts.push(("gpu.count", Value::from(g)));
    }
    Listed {
        name: s.name.clone(),
        at: file.to_string(),
        facts,
    }
}

/// The overlay format's name pattern: `((standard|basic)_)?[a-z]+[0-9]+[a-z0-9_-]*`, any
/// case, at most 100 characters.
fn valid_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("standard_")
        .or_else(|| lower.strip_prefix("basic_"))
        .unwrap_or(&lower);
    let letters = rest.chars().take_while(char::is_ascii_lowercase).count();
    let digits = rest
        .chars()
        .skip(letters)
        .take_while(char::is_ascii_digit)
        .count();
    name.len() <= 100
        && letters > 0
        && digits > 0
        && rest
            .chars()
            .skip(letters + digits)
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// One size being imported.
struct Draft {
    name: String,
    /// The sources it was read from, in order (`az vm list-skus (f.json, 2026-11-25)`).
    sources: Vec<String>,
    /// fact -> (value, where it was read).
    facts: BTreeMap<&'static str, (Value, String)>,
}

/// The overlay text: YAML, one entry per size.
fn write_yaml(drafts: &[Draft], date: &str, files: &[(String, Shape, usize)]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Written by `computeguard catalog import` from:");
    for (file, shape, n) in files {
        let _ = writeln!(
            out,
            "#   {} ({}, {n} entries)",
            comment(file),
            shape.label()
        );
    }
    let _ = writeln!(out, "kind: CatalogOverlay");
    let _ = writeln!(out, "date: {}", quoted(date));
    let _ = writeln!(
        out,
        "description: {}",
        quoted(&format!(
            "VM sizes as Azure listed them on {date}, imported by computeguard catalog import"
        ))
    );
    if drafts.is_empty() {
        let _ = writeln!(out, "skus: []");
        return out;
    }
    let _ = writeln!(out, "skus:");
    for d in drafts {
        let _ = writeln!(out, "  - name: {}", scalar(&d.name));
        let _ = writeln!(out, "    source: {}", quoted(&d.sources.join("; ")));
        let mut gpu = false;
        for fact in facts::OVERLAY_FACTS {
            let Some((v, _)) = d.facts.get(fact) else {
                continue;
            };
            let v = match v {
                Value::String(s) => scalar(s),
                other => other.to_string(),
            };
            match fact.strip_prefix("gpu.") {
                Some(g) => {
                    if !gpu {
                        gpu = true;
                        let _ = writeln!(out, "    gpu:");
                    }
                    let _ = writeln!(out, "      {g}: {v}");
                }
                None => {
                    let _ = writeln!(out, "    {fact}: {v}");
                }
            }
        }
    }
    out
}

/// A string as a YAML double-quoted scalar (JSON string syntax is valid YAML).
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// A string plain when YAML reads it back as the same string, quoted otherwise.
fn scalar(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
        && !["true", "false", "yes", "no", "on", "off", "null", "y", "n"]
            .contains(&s.to_ascii_lowercase().as_str());
    if plain { s.to_string() } else { quoted(s) }
}

/// A file name on one comment line.
fn comment(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().to_string(),
    )
}

pub fn run(args: ImportArgs) -> anyhow::Result<Outcome> {
    let date = args.date.clone().unwrap_or_else(crate::today);
    let c = crate::report::clean;
    let mut drafts: BTreeMap<String, Draft> = BTreeMap::new();
    let mut files = Vec::new();
    let mut entries = 0;
    for path in &args.files {
        let shown = path.display().to_string();
        let text = input::read(path, args.limit).map_err(|e| anyhow::anyhow!("{shown}: {e}"))?;
        let docs =
            input::decode(&shown, path, &text).map_err(|e| anyhow::anyhow!("{e}; {EXPECTED}"))?;
        let doc = input::single(&shown, docs)
            .map_err(|e| anyhow::anyhow!("{e}; catalog import reads one JSON document per file"))?;
        let (body, example) = match example_body(&doc.value) {
            Some(body) => (body, true),
            None => (&doc.value, false),
        };
        let shape = classify(body)
            .map_err(|why| anyhow::anyhow!("{shown}: not a VM size list: {why}; {EXPECTED}"))?;
        let name = file_name(path);
        let mut label = shape.label().to_string();
        if example {
            label.push_str(" example");
        }
        let source = format!("{label} ({name}, {date})");
        let listed: Vec<Listed> = match shape {
            Shape::AzSkus | Shape::RestSkus => azure::parse_skus(body)
                .map_err(|e| anyhow::anyhow!("{shown}: {e}"))?
                .iter()
                .map(|o| from_offer(&name, o))
                .collect(),
            Shape::AzMlSizes | Shape::RestMlSizes => azure::parse_ml_sizes(body)
                .map_err(|e| anyhow::anyhow!("{shown}: {e}"))?
                .iter()
                .map(|s| from_ml(&name, s))
                .collect(),
        };
        let others = match body {
            Value::Array(items) => items,
            _ => body
                .get("value")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice),
        }
        .iter()
        .filter(|i| {
            i.get("resourceType")
                .and_then(Value::as_str)
                .is_some_and(|t| !t.eq_ignore_ascii_case("virtualMachines"))
        })
        .count();
        let mut line = format!(
            "{shown}: {}, {} VM size entries",
            shape.label(),
            listed.len()
        );
        if others > 0 {
            let _ = write!(line, " ({others} entries of other resource types skipped)");
        }
        eprintln!("{}", c(&line));
        if azure::next_link(body).is_some() {
            eprintln!(
                "warning: {}: this is one page of a longer list (`nextLink` is set); import the other pages too (`az vm list-skus` fetches them all)",
                c(&shown)
            );
        }
        entries += listed.len();
        files.push((name.clone(), shape, listed.len()));
        for l in listed {
            if !valid_name(&l.name) {
                eprintln!(
                    "warning: {}: `{}` is not a VM size name the overlay format accepts; skipped",
                    c(&l.at),
                    c(&l.name)
                );
                continue;
            }
            let draft = drafts
                .entry(catalog::sku_key(&l.name))
                .or_insert_with(|| Draft {
                    name: l.name.clone(),
                    sources: vec![source.clone()],
                    facts: BTreeMap::new(),
                });
            for (fact, v) in l.facts {
                match draft.facts.get(fact) {
                    Some((kept, from)) if *kept != v => eprintln!(
                        "warning: {}: {fact} is {} in {} but {} in {}; keeping {}",
                        c(&draft.name),
                        c(&facts::show(Some(kept))),
                        c(from),
                        c(&facts::show(Some(&v))),
                        c(&l.at),
                        c(&facts::show(Some(kept)))
                    ),
                    Some(_) => {}
                    None => {
                        if !draft.sources.contains(&source) {
                            draft.sources.push(source.clone());
                        }
                        draft.facts.insert(fact, (v, l.at.clone()));
                    }
                }
            }
        }
    }
    let drafts: Vec<Draft> = drafts.into_values().collect();
    let text = write_yaml(&drafts, &date, &files);
    // What is written must read back as a valid overlay.
    let check = computeguard_decode::decode_yaml(&text)
        .map_err(|e| anyhow::anyhow!("{e}"))
        .and_then(|docs| {
            let doc = docs.into_iter().next().map(|d| d.value).unwrap_or_default();
            overlay::parse(&doc).map_err(|e| anyhow::anyhow!("{e}"))
        });
    if let Err(e) = check {
        anyhow::bail!("the imported overlay is not valid (a bug in catalog import): {e}");
    }
    let known = drafts
        .iter()
        .filter(|d| facts::builtin(&d.name).is_some())
        .count();
    let mut summary = format!(
        "catalog import: {} sizes from {entries} entries in {} file{}: {} new, {known} known to the built-in catalog (data as of {})",
        drafts.len(),
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        drafts.len() - known,
        catalog::DATA_DATE
    );
    match &args.output {
        Some(out) => {
            std::fs::write(out, &text)
                .map_err(|e| anyhow::anyhow!("cannot write `{}`: {e}", out.display()))?;
            let _ = write!(summary, "; wrote {}", out.display());
        }
        None => {
            use std::io::Write as _;
            std::io::stdout().lock().write_all(text.as_bytes())?;
        }
    }
    eprintln!("{}", c(&summary));
    Ok(Outcome::Clean)
}
