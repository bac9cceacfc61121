//! The alternatives of `computeguard plan`: for each GPU resource of a change, the VM
//! sizes (and regions) it could move to that pass every rule, each one verified by the
//! same evaluation `check` runs.
//!
//! The pipeline, per resource:
//!
//! 1. **Candidates** come from the catalog: GPU sizes of the same vendor that are not
//!    retired or retirement-announced at the evaluation date, of the same or a newer GPU
//!    generation (compute capability), with at least the GPU memory of the current size
//!    (or, for a KAITO workspace, what its preset needs), that run the CUDA version the
//!    workload needs, keep InfiniBand for a distributed training workload and avoid it for
//!    inference, and are isolated where isolation is required. Regions: the resource's own,
//!    then `regions.allowed` (only when the file writes the region), kept where
//!    `azure.skus` says the size is offered in the zones asked for. Ranked: fewest changes
//!    (size only, then region only, then both), then closest in GPU count, GPU memory and
//!    vCPUs, then name; at most [`MAX_EVALUATED`] are evaluated.
//! 2. **Verification**: the size (and region) is written into the file's text at the
//!    place the reader recorded, the edited text is read back (the resource must now have
//!    the new size and region), and the file is evaluated again by [`Scan::run`] with the
//!    change-wide settings recomputed for the edit (quota sums over every file). The engine
//!    is the oracle: an alternative passes when it leaves no error or warning on the
//!    resource besides the ones that stay whatever the choice: no evaluated size or region
//!    clears them and all get them in the same words, sizes and regions aside (an idle
//!    minimum node count, a missing taint: listed as `remaining`).
//! 3. **Why it passes**, from the installed context: the zones `azure.skus` offers, the
//!    free vCPUs `azure.usage` reports; "not known" where the configuration gives neither.
//!
//! With `azure.prices` (docs/cost.md), `rank_key` orders the alternatives that make the
//! same kind of change by their hourly price (an unknown price last), and each alternative
//! names its price.
//!
//! A resource a local Bicep or Terraform module deploys is a target too, read through the
//! call as `check` reads it (`Expander::module_documents`); its size is edited where it is
//! set (the module, the call's argument, a caller's default: `edit_module`), in a scratch
//! copy of the module tree when that is not the input's own file. Size changes only.

use crate::prepare::Prepared;
use crate::report::{Finding, Report, ResourceRef, Severity};
use crate::scan::{Input, Scan};
use computeguard_policy_core::catalog::{self, SkuFacts};
use computeguard_policy_core::compute::Resource;
use computeguard_policy_core::read;
use serde::Serialize;

/// Most candidates evaluated per resource (each is one evaluation of its file, plus the
/// change-wide quota sums when `azure.usage` is configured).
pub const MAX_EVALUATED: usize = 12;

/// Most alternatives shown per resource.
pub const MAX_SHOWN: usize = 3;

/// One resource and what it could move to.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The file as findings name it; for a resource a module deploys, the file where its
    /// size is set (the one plan edits), the module's own file being in `module`.
    pub file: String,
    /// Line of the size (else of the resource); for a module's resource, where it is set.
    pub line: u32,
    /// Index of the document within the file.
    pub document: usize,
    pub resource: ResourceRef,
    /// How messages name it (`Azure ML compute cluster gpu-cluster`).
    pub display: String,
    pub current: Placement,
    /// `planned`, `size-unresolved`, `size-unknown` (not in the catalog) or `not-editable`
    /// (the size is not written in this file, or not so that an edit reads back).
    pub status: String,
    /// Why there are no alternatives, for the statuses other than `planned`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The error and warning findings `check` reports on the resource now.
    pub findings: Vec<FindingRef>,
    /// Rules of those findings that stay whatever the size or region (no evaluated one
    /// clears them, all get them in the same words): still reported after any alternative.
    pub remaining: Vec<String>,
    /// The passing alternatives, best first (at most [`MAX_SHOWN`]).
    pub alternatives: Vec<Alternative>,
    /// When no alternative passes: the best candidates evaluated and the rules they still
    /// break (at most [`MAX_SHOWN`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
    /// Candidates the catalog gave, and how many of them were evaluated.
    pub candidates: usize,
    pub evaluated: usize,
    /// For a resource a Bicep or Terraform module deploys: the module's file and the line
    /// where the resource uses its size (where `check`'s findings are), and the call that
    /// deploys it. `file` and `line` above are then where the size is set (the module's
    /// file, or the argument of the call that passes it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module: Option<ModuleRef>,
}

/// Where a module's resource is, and what deploys it.
#[derive(Clone, Debug, Serialize)]
pub struct ModuleRef {
    /// The module's file, as findings name it.
    pub file: String,
    /// Line of the size in it.
    pub line: u32,
    /// The call: `module `gpu` at main.bicep:4`, `module.gpu at main.tf:12`.
    pub via: String,
}

/// A candidate that was evaluated and does not pass.
#[derive(Clone, Debug, Serialize)]
pub struct Rejected {
    pub size: String,
    pub region: Option<String>,
    /// The rules it breaks on the resource.
    pub rules: Vec<String>,
}

/// A size and region.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// VM size as the file writes it (`null` when unresolved).
    pub size: Option<String>,
    /// Region (programmatic name), `null` when the file states none.
    pub region: Option<String>,
    /// Availability zones asked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
}

/// A finding, as plan lists it.
#[derive(Clone, Debug, Serialize)]
pub struct FindingRef {
    pub rule: String,
    pub severity: Severity,
    pub line: u32,
    pub message: String,
}

/// One alternative that passes.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Alternative {
    pub size: String,
    pub region: Option<String>,
    /// What changes: `size Standard_NC6s_v3 -> Standard_NC4as_T4_v3`, `region ...`.
    pub changes: Vec<String>,
    /// The GPU: `Turing (compute capability 7.5), 1 GPU, 16 GiB GPU memory, 4 vCPUs`.
    pub gpu: String,
    /// Where the subscription offers it, from `azure.skus` (`offered in eastus2, zones
    /// 1-3`); `not known` without it.
    pub offer: String,
    /// Free quota of its family, from `azure.usage` (`96 vCPUs free of family ...`); `not
    /// known` without it.
    pub quota: String,
    /// Rules the alternative clears.
    pub clears: Vec<String>,
    /// Its price per node from `azure.prices` (`$3.673/h, $2,681.29/month per node (linux
    /// regular)`, or why it is not known); absent without prices.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price: Option<String>,
    /// The edits that make it, in the file's text: on line `line`, `from` becomes `to`.
    pub edits: Vec<TextEdit>,
}

/// One replacement in a file's text.
#[derive(Clone, Debug, Serialize)]
pub struct TextEdit {
    /// The file, when it is not the resource's own (a Terraform variable's default in
    /// `variables.tf` beside it); always for a resource a module deploys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line of the replaced text.
    pub line: u32,
    pub from: String,
    pub to: String,
}

/// What plan found over a change.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub resources: Vec<Entry>,
    pub summary: PlanSummary,
}

#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanSummary {
    /// Resources listed.
    pub resources: usize,
    /// Of them, with an error or warning finding.
    pub with_findings: usize,
    /// Of those, without a passing alternative.
    pub without_alternative: usize,
    pub as_of: String,
    pub max_evaluated: usize,
}

/// A resource of the change that plan considers, where it is written.
struct Target {
    input: usize,
    document: usize,
    /// Pointer of the unit (a `List` item) within the document.
    prefix: String,
    resource: Resource,
    line: u32,
    /// For a resource of a module the input calls: where it is and how findings name it.
    module: Option<ModuleTarget>,
}

/// A resource of a module, as `check` reaches it through the calls.
struct ModuleTarget {
    /// The module's file as findings name it.
    name: String,
    /// How findings name the resource (`gpu-cluster (module gpu)`, `module.gpu.TYPE.NAME`).
    resource_name: String,
    /// The call that deploys it.
    via: String,
    /// The files the size may be set in, searched in this order: the module's own, then its
    /// callers from the nearest out, then the other files of their folders (a Terraform
    /// variable's default, a Bicep parameters file): (path, name as findings show it).
    search: Vec<(std::path::PathBuf, String)>,
    /// Every file of the input's module calls (and their folders), copied with an edit
    /// made outside the input.
    tree: Vec<(std::path::PathBuf, String)>,
}

/// A size and region to try.
#[derive(Clone, Debug)]
struct Candidate {
    sku: &'static SkuFacts,
    /// A new region, or `None` to keep the resource's.
    region: Option<String>,
}

/// Plans every GPU resource of `prepared`'s inputs; with `only_findings`, only those with
/// an error or warning finding.
pub(crate) fn plan(prepared: &mut Prepared, only_findings: bool) -> Plan {
    install_context(prepared);
    let files = prepared.files.clone();
    let before = prepared.scan().run(&files, Report::default());
    let targets = targets(&prepared.reader(), &files, &before);
    let mut entries = Vec::new();
    for t in targets {
        let entry = plan_one(prepared, &files, &before, &t);
        if only_findings && entry.findings.is_empty() {
            continue;
        }
        entries.push(entry);
    }
    let with_findings = entries.iter().filter(|e| !e.findings.is_empty()).count();
    let without_alternative = entries
        .iter()
        .filter(|e| !e.findings.is_empty() && e.alternatives.is_empty())
        .count();
    Plan {
        summary: PlanSummary {
            resources: entries.len(),
            with_findings,
            without_alternative,
            as_of: prepared.as_of.clone(),
            max_evaluated: MAX_EVALUATED,
        },
        resources: entries,
    }
}

/// `check --suggest`: the fix of each finding the best alternative of its resource clears
/// names that alternative, with the zones and free quota that make it pass where the
/// context gives them. Only resources with an error or warning finding are planned, from
/// the findings `report` already holds (no second pass over the change).
pub(crate) fn suggest(prepared: &mut Prepared, report: &mut Report) {
    install_context(prepared);
    let files = prepared.files.clone();
    for t in targets(&prepared.reader(), &files, report) {
        let input = &files[t.input];
        if !report
            .findings
            .iter()
            .any(|f| blocking(f) && is_of(f, &input.name, t.document, &t))
        {
            continue;
        }
        let entry = plan_one(prepared, &files, report, &t);
        let Some(best) = entry.alternatives.first() else {
            continue;
        };
        let mut known: Vec<&str> = Vec::new();
        if !best.offer.contains("not known") {
            known.push(&best.offer);
        }
        if !best.quota.contains("not known") {
            known.push(&best.quota);
        }
        let target = match &best.region {
            Some(region) => format!("{} in {region}", best.size),
            None => best.size.clone(),
        };
        let named = if known.is_empty() {
            format!("move to {target} (computeguard plan)")
        } else {
            format!("move to {target}: {} (computeguard plan)", known.join("; "))
        };
        for f in report
            .findings
            .iter_mut()
            .filter(|f| is_of(f, &input.name, t.document, &t) && best.clears.contains(&f.rule))
        {
            f.remediation = format!("{} Best alternative: {named}.", f.remediation);
        }
    }
}

/// For the language server's code actions (`lsp.rs`): the index in `report.findings` of each
/// finding that `suggest` would name a best alternative for, with that alternative (its
/// edits in the file's text).
pub(crate) fn best_alternatives(
    prepared: &mut Prepared,
    report: &Report,
) -> Vec<(usize, Alternative)> {
    install_context(prepared);
    let files = prepared.files.clone();
    let mut out = Vec::new();
    for t in targets(&prepared.reader(), &files, report) {
        let input = &files[t.input];
        let mine = |f: &Finding| is_of(f, &input.name, t.document, &t);
        if !report.findings.iter().any(|f| blocking(f) && mine(f)) {
            continue;
        }
        let entry = plan_one(prepared, &files, report, &t);
        let Some(best) = entry.alternatives.first() else {
            continue;
        };
        for (i, f) in report.findings.iter().enumerate() {
            if mine(f) && best.clears.contains(&f.rule) {
                out.push((i, best.clone()));
            }
        }
    }
    out
}

/// Installs the context in this process (the catalog overlays, the subscription's facts)
/// so that candidates and explanations read what the policies read. `check` may have done
/// so already (for the quota sums).
fn install_context(prepared: &Prepared) {
    let Some(context) = &prepared.context else {
        return;
    };
    if computeguard_policy_core::context::azure().is_some() {
        return;
    }
    if let Ok(parsed) = computeguard_policy_core::context::parse(context.context.json()) {
        let _ = computeguard_policy_core::context::install(parsed);
    }
}

/// The resources plan considers: those with a GPU size, a size unknown to the catalog in a
/// GPU family, or a size left to deploy time; read as check reads them, those of the local
/// Bicep and Terraform modules a file calls with them (through the call, as check reads
/// them; a module's file alone is not planned).
fn targets(reader: &Scan<'_>, files: &[Input], report: &Report) -> Vec<Target> {
    let expander = reader.expander(files);
    let mut out = Vec::new();
    // A module's file that check read through its call is planned through nothing here.
    let modules: Vec<&str> = report
        .skipped
        .iter()
        .filter(|s| s.kind == crate::report::SkipKind::Module)
        .map(|s| s.file.as_str())
        .collect();
    for (i, input) in files.iter().enumerate() {
        if modules.contains(&input.name.as_str()) {
            continue;
        }
        let Ok(text) = reader.read(input) else {
            continue;
        };
        let Ok((docs, source)) = expander.decode_named(input, &text) else {
            continue;
        };
        for (name, doc) in docs {
            if name != input.name {
                continue;
            }
            for (prefix, resource, line) in considered_resources(&doc, source) {
                out.push(Target {
                    input: i,
                    document: doc.index,
                    prefix,
                    resource,
                    line,
                    module: None,
                });
            }
        }
        let modules = expander.module_documents(input, &text);
        let tree = module_tree(modules.iter().map(|m| m.chain.as_slice()));
        for m in &modules {
            let Some((file, _)) = m.chain.last() else {
                continue;
            };
            let source = source_of(file);
            // Where a size may be set: the files on the way, innermost first, then their
            // folders' variables and parameters files (the same for each resource).
            let mut search: Vec<(std::path::PathBuf, String)> =
                m.chain.iter().rev().cloned().collect();
            for (path, shown) in siblings(&m.chain) {
                if !search.iter().any(|(p, _)| same_path(p, &path)) {
                    search.push((path, shown));
                }
            }
            for (prefix, r, line) in considered_resources(&m.doc, source) {
                out.push(Target {
                    input: i,
                    document: m.doc.index,
                    prefix,
                    module: Some(ModuleTarget {
                        name: m.name.clone(),
                        resource_name: m.resource_name(&r),
                        via: m.via.clone(),
                        search: search.clone(),
                        tree: tree.clone(),
                    }),
                    resource: r,
                    line,
                });
            }
        }
    }
    out
}

/// The resources of `doc` that plan considers, each with the JSON-pointer prefix of its
/// part (a Terraform plan's or an export's items) and the line where its size is set
/// (else the resource's own line): the same for an input's documents and a module's.
fn considered_resources(
    doc: &computeguard_decode::Document,
    source: computeguard_policy_core::compute::Source,
) -> Vec<(String, Resource, u32)> {
    let units = read::parts(&doc.value)
        .unwrap_or_else(|| vec![(String::new(), std::borrow::Cow::Borrowed(&doc.value))]);
    let mut out = Vec::new();
    for (prefix, value) in units {
        for r in read::normalize(&value, source) {
            if !considered(&r) {
                continue;
            }
            let at = r
                .fields
                .get("sku")
                .map_or_else(|| r.pointer.clone(), Clone::clone);
            let line = doc
                .positions
                .locate(&format!("{prefix}{at}"))
                .map_or(0, |s| s.line);
            out.push((prefix.clone(), r, line));
        }
    }
    out
}

/// How a module's file is read: by its extension, as check reads it.
fn source_of(file: &std::path::Path) -> computeguard_policy_core::compute::Source {
    use computeguard_policy_core::compute::Source;
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if name.ends_with(".bicep") {
        Source::Bicep
    } else if name.ends_with(".tf") || name.ends_with(".tf.json") {
        Source::Terraform
    } else {
        Source::Unknown
    }
}

fn same_path(a: &std::path::Path, b: &std::path::Path) -> bool {
    a == b
        || matches!(
            (std::fs::canonicalize(a), std::fs::canonicalize(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// The other files of the folders of `chain` that give a module's values: a Terraform
/// folder's configuration and variable files, the parameters files paired with a Bicep or
/// ARM file (`X.parameters.json`, `X.bicepparam`).
fn siblings(chain: &[(std::path::PathBuf, String)]) -> Vec<(std::path::PathBuf, String)> {
    let mut out: Vec<(std::path::PathBuf, String)> = Vec::new();
    for (path, shown) in chain {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let files: Vec<std::path::PathBuf> = if name.ends_with(".tf") || name.ends_with(".tf.json")
        {
            terraform_files(&dir)
        } else {
            let stem = name
                .strip_suffix(".bicep")
                .or_else(|| name.strip_suffix(".json"))
                .unwrap_or(&name)
                .to_string();
            [
                format!("{stem}.parameters.json"),
                format!("{stem}.bicepparam"),
            ]
            .iter()
            .filter_map(|n| {
                std::fs::read_dir(&dir)
                    .ok()?
                    .flatten()
                    .map(|e| e.path())
                    .find(|p| {
                        p.file_name()
                            .and_then(|f| f.to_str())
                            .is_some_and(|f| f.eq_ignore_ascii_case(n))
                    })
            })
            .collect()
        };
        for file in files {
            if same_path(&file, path) || out.iter().any(|(p, _)| same_path(p, &file)) {
                continue;
            }
            let Some(file_name) = file.file_name() else {
                continue;
            };
            let shown = std::path::Path::new(shown)
                .with_file_name(file_name)
                .display()
                .to_string();
            out.push((file, shown));
        }
    }
    out
}

/// Every file of the chains (and their folders' files that give values), once.
fn module_tree<'c>(
    chains: impl Iterator<Item = &'c [(std::path::PathBuf, String)]>,
) -> Vec<(std::path::PathBuf, String)> {
    let mut out: Vec<(std::path::PathBuf, String)> = Vec::new();
    for chain in chains {
        for (path, shown) in chain.iter().cloned().chain(siblings(chain)) {
            if !out.iter().any(|(p, _)| same_path(p, &path)) {
                out.push((path, shown));
            }
        }
    }
    out
}

/// A GPU resource: a GPU size, a size in a GPU family the catalog lacks, or a size left to
/// deploy time on something that runs GPU work or is a pool, cluster or VM.
fn considered(r: &Resource) -> bool {
    match &r.sku {
        Some(s) => match catalog::sku(s) {
            Some(f) => f.category == "gpu",
            None => catalog::sku_gpu_family(s),
        },
        None => {
            r.unresolved.iter().any(|f| f == "sku")
                && (r.kind != "k8s-workload" || r.gpu_requests > 0.0)
        }
    }
}

fn same_resource(f: &Finding, file: &str, document: usize, r: &Resource) -> bool {
    f.file == file
        && f.document == document
        && f.resource.kind == r.kind
        && f.resource.name == computeguard_policy_core::eval::display_name(r)
}

/// Whether `f` is a finding on the resource of `t` (in the input named `name`, document
/// `document`): for a module's resource, as check names it through the call.
fn is_of(f: &Finding, name: &str, document: usize, t: &Target) -> bool {
    match &t.module {
        Some(m) => {
            f.file == m.name
                && f.document == document
                && f.resource.kind == t.resource.kind
                && f.resource.name == m.resource_name
        }
        None => same_resource(f, name, document, &t.resource),
    }
}

fn blocking(f: &Finding) -> bool {
    matches!(f.severity, Severity::Error | Severity::Warning)
}

fn plan_one(prepared: &mut Prepared, files: &[Input], before: &Report, t: &Target) -> Entry {
    let input = &files[t.input];
    let r = &t.resource;
    let findings: Vec<&Finding> = before
        .findings
        .iter()
        .filter(|f| blocking(f) && is_of(f, &input.name, t.document, t))
        .collect();
    let mut entry = Entry {
        file: t
            .module
            .as_ref()
            .map_or_else(|| input.name.clone(), |m| m.name.clone()),
        line: t.line,
        document: t.document,
        resource: ResourceRef {
            kind: r.kind.clone(),
            name: t.module.as_ref().map_or_else(
                || computeguard_policy_core::eval::display_name(r),
                |m| m.resource_name.clone(),
            ),
        },
        display: r.display.clone(),
        current: Placement {
            size: r.sku.clone(),
            region: r.region.clone(),
            zones: r.zones.clone(),
        },
        status: "planned".into(),
        note: None,
        findings: findings
            .iter()
            .map(|f| FindingRef {
                rule: f.rule.clone(),
                severity: f.severity,
                line: f.line,
                message: f.message.clone(),
            })
            .collect(),
        remaining: Vec::new(),
        alternatives: Vec::new(),
        rejected: Vec::new(),
        candidates: 0,
        evaluated: 0,
        module: t.module.as_ref().map(|m| ModuleRef {
            file: m.name.clone(),
            line: t.line,
            via: m.via.clone(),
        }),
    };
    let Some(sku) = r.sku.as_deref() else {
        entry.status = "size-unresolved".into();
        entry.note = Some(
            "size unresolved: it is known only at deploy time (a variable or parameter without a value); no alternatives"
                .into(),
        );
        return entry;
    };
    let Some(current) = catalog::sku(sku) else {
        entry.status = "size-unknown".into();
        entry.note = Some(format!(
            "size `{sku}` is not in the catalog: its GPU, memory and generation are unknown, so no alternative can be shown to be at least as capable; add it with a catalog overlay"
        ));
        return entry;
    };
    let Ok(text) = prepared.reader().read(input) else {
        return entry;
    };
    let sku_at = r.fields.get("sku").map(|p| format!("{}{p}", t.prefix));
    // A module's resource changes size only (its region comes through the call).
    let region_at = r
        .fields
        .get("region")
        .filter(|_| r.region.is_some() && t.module.is_none())
        .map(|p| format!("{}{p}", t.prefix));
    let Some(sku_at) = sku_at else {
        entry.status = "not-editable".into();
        entry.note = Some("the reader recorded no place for the size in this file".into());
        return entry;
    };
    let regions = if region_at.is_some() {
        other_regions(prepared, r)
    } else {
        Vec::new()
    };
    let candidates = candidates(r, current, &prepared.as_of, &regions);
    entry.candidates = candidates.len();
    // Each candidate evaluated: its findings on the resource, or why it could not be tried.
    let mut attempts: Vec<(Candidate, Edited)> = Vec::new();
    let mut not_editable = 0;
    for c in budget(r, current, candidates) {
        let attempt = if t.module.is_some() {
            edit_module(prepared, input, &text, t, &c)
        } else {
            edit(prepared, input, &text, t, &sku_at, region_at.as_deref(), &c)
                .map(|(text, edits)| Edited {
                    text,
                    path: None,
                    folder: None,
                    moved: Vec::new(),
                    edits,
                })
                .or_else(|| edit_in_folder(prepared, input, &text, t, &c))
        };
        match attempt {
            Some(edited) => attempts.push((c, edited)),
            None => not_editable += 1,
        }
    }
    // Each candidate evaluated: its findings on the resource. Without change-wide quota
    // sums to recompute (settings of the loaded policies change per candidate), the
    // candidates are evaluated in parallel.
    let tried: Vec<(Candidate, Vec<TextEdit>, Vec<Finding>)> = if quota_per_candidate(prepared) {
        attempts
            .into_iter()
            .map(|(c, edited)| {
                let edits = edited.edits.clone();
                (c, edits, evaluate(prepared, files, t, edited))
            })
            .collect()
    } else {
        use rayon::prelude::*;
        let shared: &Prepared = prepared;
        attempts
            .into_par_iter()
            .map(|(c, edited)| {
                let edits = edited.edits.clone();
                (c, edits, run_edited(shared, files, t, edited))
            })
            .collect()
    };
    entry.evaluated = tried.len() + not_editable;
    if tried.is_empty() && not_editable > 0 && t.module.is_some() {
        entry.status = "not-editable".into();
        entry.note = Some(format!(
            "the size is not written where plan can edit it: in {} or the arguments of the calls that deploy it, or their folders' files (a value in a var file or given with --param-file, a deploy-time expression)",
            entry.file
        ));
        return entry;
    }
    // A module's resource: its place is where the size is set (the edit of the best
    // candidate that could be made), the module's own line is in `module`.
    if t.module.is_some()
        && let Some(e) = tried.iter().find_map(|(_, edits, _)| edits.first())
    {
        if let Some(file) = &e.file {
            entry.file.clone_from(file);
        }
        entry.line = e.line;
    }
    if tried.is_empty() && not_editable > 0 {
        entry.status = "not-editable".into();
        entry.note = Some(format!(
            "the size is not written in {} (a variable whose value is in another file or a var file, a deploy-time expression): plan edits the file that holds the resource",
            input.name
        ));
        return entry;
    }
    // A rule stays whatever the choice when no evaluated size or region clears it and every
    // one of them gets the same message, the size and region names aside (an idle minimum
    // node count, a missing taint). One whose message changes with the choice (the vCPUs a
    // quota needs, where a size is offered) is about the choice, even when none clears it.
    let own_region = r.region.clone();
    let same_words = |f: &Finding, size: &str, region: Option<&str>| -> String {
        let mut m = f.message.replace(size, "{size}");
        if let Some(region) = region {
            m = m.replace(region, "{region}");
        }
        m
    };
    let unchanged = |f: &Finding| {
        let now = same_words(f, current.name, own_region.as_deref());
        tried.iter().all(|(c, _, found)| {
            let region = c.region.as_deref().or(own_region.as_deref());
            found
                .iter()
                .any(|g| g.rule == f.rule && same_words(g, c.sku.name, region) == now)
        })
    };
    let mut remaining: Vec<String> = findings
        .iter()
        .filter(|f| !tried.is_empty() && unchanged(f))
        .map(|f| f.rule.clone())
        .collect();
    remaining.sort();
    remaining.dedup();
    let now: Vec<String> = findings.iter().map(|f| f.rule.clone()).collect();
    for (c, edits, found) in &tried {
        if entry.alternatives.len() >= MAX_SHOWN {
            break;
        }
        if found.iter().all(|f| remaining.contains(&f.rule)) {
            let mut clears: Vec<String> = now
                .iter()
                .filter(|rule| !found.iter().any(|f| &f.rule == *rule))
                .cloned()
                .collect();
            clears.sort();
            clears.dedup();
            let mut alternative = describe(r, current, c, clears);
            alternative.edits.clone_from(edits);
            entry.alternatives.push(alternative);
        }
    }
    if entry.alternatives.is_empty() {
        // What the best candidates tried still get, so that the reader sees why none passes.
        entry.rejected = tried
            .iter()
            .take(MAX_SHOWN)
            .map(|(c, _, found)| Rejected {
                size: c.sku.name.to_string(),
                region: c.region.clone(),
                rules: {
                    let mut rules: Vec<String> = found
                        .iter()
                        .filter(|f| !remaining.contains(&f.rule))
                        .map(|f| f.rule.clone())
                        .collect();
                    rules.dedup();
                    rules
                },
            })
            .collect();
    }
    entry.remaining = remaining;
    entry
}

/// The regions a resource could move to besides its own, as programmatic names:
/// `regions.allowed`; without it, the public regions of `regions.allowedGeographies`
/// (those of the resource's own country first); without either, none (plan does not
/// choose a region the configuration does not allow).
fn other_regions(prepared: &Prepared, r: &Resource) -> Vec<String> {
    use computeguard_policy_core::region;
    let own = r.region.as_deref().map(region::normalize);
    let mut out: Vec<String> = Vec::new();
    for written in &prepared.config.regions_allowed {
        let name = region::region(written)
            .map_or_else(|| region::normalize(written), |f| f.name.to_string());
        if Some(&name) != own.as_ref() && !out.contains(&name) {
            out.push(name);
        }
    }
    let geographies = &prepared.config.allowed_geographies;
    if out.is_empty() && !geographies.is_empty() {
        let country = own.as_deref().and_then(region::region).map(|f| f.country);
        let mut found: Vec<&catalog::RegionFacts> = catalog::REGIONS
            .iter()
            .filter(|f| f.listed && !f.restricted && Some(f.name) != own.as_deref())
            .filter(|f| {
                geographies
                    .iter()
                    .any(|g| region::in_group(f.name, g) == Some(true))
            })
            .collect();
        found.sort_by_key(|f| (Some(f.country) != country, f.name));
        out.extend(found.into_iter().map(|f| f.name.to_string()));
    }
    out
}

/// The compute capability as a number (`8.6` -> 8.6).
fn capability(f: &SkuFacts) -> Option<f64> {
    f.compute_capability.and_then(|c| c.parse().ok())
}

/// The candidates for `r` on `current`, ranked, before any evaluation.
fn candidates(
    r: &Resource,
    current: &'static SkuFacts,
    as_of: &str,
    regions: &[String],
) -> Vec<Candidate> {
    let sizes: Vec<&'static SkuFacts> = catalog::skus()
        .iter()
        .map(|(_, f)| f)
        .filter(|f| f.name == f.alias && f.category == "gpu")
        .filter(|f| size_fits(r, current, f, as_of))
        .collect();
    let keep_current = size_fits(r, current, current, as_of) || !regions.is_empty();
    let mut out: Vec<Candidate> = Vec::new();
    for f in &sizes {
        if f.name != current.name {
            out.push(Candidate {
                sku: f,
                region: None,
            });
        }
    }
    for region in regions {
        if keep_current {
            out.push(Candidate {
                sku: current,
                region: Some(region.clone()),
            });
        }
        for f in &sizes {
            if f.name != current.name {
                out.push(Candidate {
                    sku: f,
                    region: Some(region.clone()),
                });
            }
        }
    }
    // Where the subscription's SKU list says a size is not offered (or not in the zones
    // asked for), it is not tried there; a size the list does not name is (the rules say
    // what is unknown).
    if let Some(availability) =
        computeguard_policy_core::context::azure().and_then(|a| a.availability.as_ref())
    {
        out.retain(|c| {
            let Some(region) = c.region.as_deref().or(r.region.as_deref()) else {
                return true;
            };
            matches!(
                availability.offer(c.sku.name, region, &r.zones),
                computeguard_policy_core::azure::OfferAnswer::Offered
                    | computeguard_policy_core::azure::OfferAnswer::Unknown
            )
        });
    }
    out.sort_by(|a, b| {
        rank_key(r, current, a)
            .partial_cmp(&rank_key(r, current, b))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.sku.name.cmp(b.sku.name))
            .then_with(|| a.region.cmp(&b.region))
    });
    out
}

/// The candidates evaluated, at most [`MAX_EVALUATED`]: taken in turn from each kind of
/// change (size only, region only, both), best first within each, so that a resource whose
/// region is at fault gets its region-only candidates tried even when many sizes come first.
fn budget(r: &Resource, current: &SkuFacts, ranked: Vec<Candidate>) -> Vec<Candidate> {
    let mut tiers: [std::collections::VecDeque<Candidate>; 3] = Default::default();
    for c in ranked {
        let tier = usize::from(rank_key(r, current, &c).0).min(2);
        tiers[tier].push_back(c);
    }
    let mut out = Vec::new();
    while out.len() < MAX_EVALUATED && tiers.iter().any(|t| !t.is_empty()) {
        for tier in &mut tiers {
            if out.len() < MAX_EVALUATED
                && let Some(c) = tier.pop_front()
            {
                out.push(c);
            }
        }
    }
    out.sort_by(|a, b| {
        rank_key(r, current, a)
            .partial_cmp(&rank_key(r, current, b))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.sku.name.cmp(b.sku.name))
            .then_with(|| a.region.cmp(&b.region))
    });
    out
}

/// How a candidate ranks, lowest first: the changes it makes (size only before region
/// only before both), then its hourly price for `r` when `azure.prices` gives one (unknown
/// last; without prices all tie), then how far it is from the current size in GPU count,
/// GPU memory and vCPUs.
fn rank_key(r: &Resource, current: &SkuFacts, c: &Candidate) -> (u8, f64, f64, f64, f64) {
    let size_changed = c.sku.name != current.name;
    let changes = match (size_changed, c.region.is_some()) {
        (true, false) => 0,
        (false, true) => 1,
        _ => 2,
    };
    let gpus = (c.sku.gpu_count.unwrap_or(0.0) - current.gpu_count.unwrap_or(0.0)).abs();
    let memory = (c.sku.gpu_memory_gib.unwrap_or(f64::MAX / 4.0)
        - current.gpu_memory_gib.unwrap_or(0.0))
    .abs();
    let vcpus = (c.sku.vcpus.unwrap_or(0) as f64 - current.vcpus.unwrap_or(0) as f64).abs();
    let price = crate::cost::hourly_of(r, c.sku.name, c.region.as_deref()).unwrap_or(f64::MAX);
    (changes, price, gpus, memory, vcpus)
}

/// Whether size `f` may replace `current` for `r`, by the catalog's facts alone.
fn size_fits(r: &Resource, current: &SkuFacts, f: &SkuFacts, as_of: &str) -> bool {
    let status = catalog::status_at(f, as_of);
    if status == "retired" || status == "retirement_announced" || catalog::retired_at(f, as_of) {
        return false;
    }
    if f.vendor != current.vendor || f.gpu_count.is_none_or(|n| n <= 0.0) {
        return false;
    }
    // Same or newer generation: NVIDIA by compute capability, others by architecture.
    match (capability(current), capability(f)) {
        (Some(now), Some(then)) => {
            if then < now {
                return false;
            }
        }
        _ => {
            if f.architecture != current.architecture {
                return false;
            }
        }
    }
    // The CUDA version the workload needs.
    if let (Some(cuda), Some(cc)) = (r.cuda.as_deref(), f.compute_capability)
        && catalog::cuda_supported(cc, cuda) == Some(false)
    {
        return false;
    }
    if r.isolation_required && !f.isolated {
        return false;
    }
    // InfiniBand: kept for distributed training, never added for inference.
    let training = r.workload == "training" || r.distributed;
    if r.workload == "inference" && f.infiniband {
        return false;
    }
    if training && current.infiniband && !f.infiniband {
        return false;
    }
    // GPU memory: what the KAITO preset needs when there is one, else at least the
    // current size's. A size whose GPU memory is unknown cannot be shown to be enough.
    if r.kind == "kaito-workspace"
        && let Some(preset) = r.preset.as_deref()
    {
        let fit = catalog::kaito::fit(preset, f.name, r.instance_count.unwrap_or(1), &r.workload);
        return fit.answer != "insufficient";
    }
    match (current.gpu_memory_gib, f.gpu_memory_gib) {
        (Some(now), Some(then)) => then >= now,
        (Some(_), None) => false,
        // The current size's GPU memory is unknown: at least as many GPUs.
        (None, _) => f.gpu_count >= current.gpu_count,
    }
}

/// The file's text with the candidate written in, and read back: `None` when no place the
/// size (or region) is written in the file gives the resource the candidate's size and
/// region once edited.
fn edit(
    prepared: &Prepared,
    input: &Input,
    text: &str,
    t: &Target,
    sku_at: &str,
    region_at: Option<&str>,
    c: &Candidate,
) -> Option<(String, Vec<TextEdit>)> {
    let reader = prepared.reader();
    let expander = reader.expander(std::slice::from_ref(input));
    let (docs, _) = expander.decode_named(input, text).ok()?;
    let doc = docs
        .iter()
        .find(|(n, d)| *n == input.name && d.index == t.document)
        .map(|(_, d)| d)?;
    let current = t.resource.sku.as_deref().and_then(catalog::sku)?;
    // Where the size (and region) may be written: at the place the reader recorded when the
    // value is literal there, else wherever the value is written in the file (an ARM or
    // Bicep parameter's default, a Terraform variable's): each is tried until the edit
    // reads back as the candidate.
    let size_places: Vec<Option<(usize, usize)>> = if c.sku.name == current.name {
        vec![None]
    } else {
        places(text, doc, sku_at, current.name)
            .into_iter()
            .map(Some)
            .collect()
    };
    let region_places: Vec<Option<(usize, usize)>> = match (&c.region, &t.resource.region) {
        (None, _) => vec![None],
        (Some(_), Some(own)) => places(text, doc, region_at?, own)
            .into_iter()
            .map(Some)
            .collect(),
        (Some(_), None) => Vec::new(),
    };
    for size_at in &size_places {
        for region_at in &region_places {
            let mut edits: Vec<(usize, usize, String)> = Vec::new();
            if let Some((start, end)) = size_at {
                edits.push((*start, *end, c.sku.name.to_string()));
            }
            if let (Some((start, end)), Some(region)) = (region_at, &c.region) {
                edits.push((*start, *end, region.clone()));
            }
            if edits.windows(2).any(|w| w[0].0 < w[1].1 && w[1].0 < w[0].1) {
                continue;
            }
            if let Some(done) = apply_and_read_back(prepared, input, text, t, c, edits) {
                return Some(done);
            }
        }
    }
    None
}

/// An edit of a candidate: the resource's file's text, and the scratch copy of its folder
/// when the edit is in another file of it.
struct Edited {
    text: String,
    /// The resource's input's path in the scratch copy, when it is not the folder's name
    /// joined with the file's (a copy of a module tree keeps its layout).
    path: Option<std::path::PathBuf>,
    folder: Option<ScratchFolder>,
    /// The files (canonical) the scratch copy stands for: not read from their place.
    moved: Vec<std::path::PathBuf>,
    edits: Vec<TextEdit>,
}

/// A scratch copy of a Terraform folder, removed when dropped.
struct ScratchFolder(std::path::PathBuf);

impl Drop for ScratchFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The configuration and variable files of a Terraform folder (`.tf`, `.tf.json`,
/// `.tfvars`, `.tfvars.json`), sorted.
fn terraform_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<std::path::PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                let n = n.to_ascii_lowercase();
                [".tf", ".tf.json", ".tfvars", ".tfvars.json"]
                    .iter()
                    .any(|e| n.ends_with(e))
            })
        })
        .collect();
    out.sort();
    out
}

/// For a Terraform file whose size comes from a variable declared in another file of its
/// folder (`default` in `variables.tf`, a value in `terraform.tfvars`): the size edited
/// there, in a scratch copy of the folder, accepted when the resource's file reads back
/// with the candidate. Size changes only.
fn edit_in_folder(
    prepared: &Prepared,
    input: &Input,
    text: &str,
    t: &Target,
    c: &Candidate,
) -> Option<Edited> {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    if input.text.is_some() || c.region.is_some() {
        return None;
    }
    let own = input.path.file_name()?.to_str()?.to_ascii_lowercase();
    if !(own.ends_with(".tf") || own.ends_with(".tf.json")) {
        return None;
    }
    let dir = match input.path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let current = t.resource.sku.as_deref().and_then(catalog::sku)?;
    let files = terraform_files(&dir);
    let mut tries = 0;
    for file in &files {
        if file.file_name() == input.path.file_name() {
            continue;
        }
        let Ok(sibling) = std::fs::read_to_string(file) else {
            continue;
        };
        for (start, end) in occurrences(&sibling, current.name) {
            tries += 1;
            if tries > 8 {
                return None;
            }
            let scratch = ScratchFolder(std::env::temp_dir().join(format!(
                "computeguard-plan-{}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )));
            std::fs::create_dir_all(&scratch.0).ok()?;
            for f in &files {
                std::fs::copy(f, scratch.0.join(f.file_name()?)).ok()?;
            }
            let mut edited = sibling.clone();
            edited.replace_range(start..end, c.sku.name);
            std::fs::write(scratch.0.join(file.file_name()?), &edited).ok()?;
            let moved = Input {
                path: scratch.0.join(input.path.file_name()?),
                text: Some(text.to_string()),
                ..input.clone()
            };
            if reads_back(prepared, &moved, text, t, c) {
                let shown = std::path::Path::new(&input.name)
                    .with_file_name(file.file_name()?)
                    .display()
                    .to_string();
                return Some(Edited {
                    text: text.to_string(),
                    path: None,
                    folder: Some(scratch),
                    moved: Vec::new(),
                    edits: vec![TextEdit {
                        file: Some(shown),
                        line: u32::try_from(sibling[..start].matches('\n').count() + 1)
                            .unwrap_or(u32::MAX),
                        from: sibling[start..end].to_string(),
                        to: c.sku.name.to_string(),
                    }],
                });
            }
        }
    }
    None
}

/// A fresh scratch folder's path (not created).
fn scratch_path() -> std::path::PathBuf {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "computeguard-plan-{}-m{}",
        std::process::id(),
        COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ))
}

/// For a resource a module deploys: the size edited where it is set, which may be the
/// module's file, an argument of a call on the way to it (the one that passes the size, or a
/// default of the caller's parameter or variable it passes), or a file of their folders
/// (`variables.tf`, `terraform.tfvars`, a paired parameters file). Each whole-word
/// occurrence of the size in those files is tried in turn, module first, and accepted when
/// the module's resource, read through the calls as `check` reads it, then has the
/// candidate's size. An edit outside the input is made in a scratch copy of the module tree.
/// Size changes only.
fn edit_module(
    prepared: &Prepared,
    input: &Input,
    text: &str,
    t: &Target,
    c: &Candidate,
) -> Option<Edited> {
    let m = t.module.as_ref()?;
    if c.region.is_some() || (input.text.is_some() && !input.path.is_file()) {
        return None;
    }
    let current = t.resource.sku.as_deref().and_then(catalog::sku)?;
    if c.sku.name == current.name {
        return None;
    }
    let mut tries = 0;
    for (path, shown) in &m.search {
        let own = same_path(path, &input.path);
        let file_text = if own {
            text.to_string()
        } else {
            let Ok(t) = std::fs::read_to_string(path) else {
                continue;
            };
            t
        };
        for (start, end) in occurrences(&file_text, current.name) {
            tries += 1;
            if tries > 8 {
                return None;
            }
            let mut edited = file_text.clone();
            edited.replace_range(start..end, c.sku.name);
            let edits = vec![TextEdit {
                file: Some(shown.clone()),
                line: u32::try_from(file_text[..start].matches('\n').count() + 1)
                    .unwrap_or(u32::MAX),
                from: file_text[start..end].to_string(),
                to: c.sku.name.to_string(),
            }];
            let attempt = if own {
                Edited {
                    text: edited,
                    path: None,
                    folder: None,
                    moved: Vec::new(),
                    edits,
                }
            } else {
                let Some((folder, root, moved)) = scratch_tree(m, input, text, path, &edited)
                else {
                    continue;
                };
                Edited {
                    text: text.to_string(),
                    path: Some(root),
                    folder: Some(folder),
                    moved,
                    edits,
                }
            };
            if module_reads_back(prepared, input, t, c, &attempt) {
                return Some(attempt);
            }
        }
    }
    None
}

/// A scratch copy of the module tree of `m` with the file `edited_path` holding
/// `edited_text` and the input holding `text`, laid out as the originals are below their
/// common folder (the calls' relative paths hold there): the folder, the input's path in it
/// and the (canonical) files it stands for.
fn scratch_tree(
    m: &ModuleTarget,
    input: &Input,
    text: &str,
    edited_path: &std::path::Path,
    edited_text: &str,
) -> Option<(ScratchFolder, std::path::PathBuf, Vec<std::path::PathBuf>)> {
    let root = std::fs::canonicalize(&input.path).ok()?;
    let edited = std::fs::canonicalize(edited_path).ok()?;
    let mut files: Vec<std::path::PathBuf> = vec![root.clone()];
    for (path, _) in &m.tree {
        let p = std::fs::canonicalize(path).ok()?;
        if !files.contains(&p) {
            files.push(p);
        }
    }
    if !files.contains(&edited) {
        return None;
    }
    // The deepest folder that holds them all.
    let mut base = root.parent()?.to_path_buf();
    while !files.iter().all(|f| f.starts_with(&base)) {
        base = base.parent()?.to_path_buf();
    }
    let scratch = ScratchFolder(scratch_path());
    for f in &files {
        let to = scratch.0.join(f.strip_prefix(&base).ok()?);
        std::fs::create_dir_all(to.parent()?).ok()?;
        if *f == edited {
            std::fs::write(&to, edited_text).ok()?;
        } else if *f == root {
            std::fs::write(&to, text).ok()?;
        } else {
            std::fs::copy(f, &to).ok()?;
        }
    }
    let at = scratch.0.join(root.strip_prefix(&base).ok()?);
    Some((scratch, at, files))
}

/// Whether, with `edit` made, the module resource of `t` reads back with the candidate's
/// size, read through the calls as `check` reads it.
fn module_reads_back(
    prepared: &Prepared,
    input: &Input,
    t: &Target,
    c: &Candidate,
    edit: &Edited,
) -> bool {
    let Some(m) = &t.module else {
        return false;
    };
    let moved = Input {
        name: input.name.clone(),
        path: edit.path.clone().unwrap_or_else(|| input.path.clone()),
        text: Some(edit.text.clone()),
    };
    let reader = prepared.reader();
    let expander = reader.expander(std::slice::from_ref(&moved));
    for doc in expander.module_documents(&moved, &edit.text) {
        if doc.name != m.name || doc.doc.index != t.document {
            continue;
        }
        let unit = if t.prefix.is_empty() {
            Some(doc.doc.value.clone())
        } else {
            doc.doc.value.pointer(&t.prefix).cloned()
        };
        let Some(unit) = unit else {
            continue;
        };
        let source = doc.chain.last().map_or(
            computeguard_policy_core::compute::Source::Unknown,
            |(p, _)| source_of(p),
        );
        for r in read::normalize(&unit, source) {
            if r.kind == t.resource.kind
                && doc.resource_name(&r) == m.resource_name
                && r.pointer == t.resource.pointer
                && r.role == t.resource.role
                && r.fields.get("sku") == t.resource.fields.get("sku")
            {
                return r.sku.as_deref().and_then(catalog::sku).map(|f| f.name) == Some(c.sku.name);
            }
        }
    }
    false
}

/// Every whole-word occurrence of `value` in `text`, compared without case.
fn occurrences(text: &str, value: &str) -> Vec<(usize, usize)> {
    let lower = text.to_ascii_lowercase();
    let needle = value.to_ascii_lowercase();
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    lower
        .match_indices(&needle)
        .map(|(i, _)| (i, i + needle.len()))
        .filter(|(i, end)| {
            let before = text.get(..*i).and_then(|t| t.chars().next_back());
            let after = text.get(*end..).and_then(|t| t.chars().next());
            !before.is_some_and(word) && !after.is_some_and(word)
        })
        .collect()
}

/// Where `value` may be written for the node at `pointer`: first the literal at that node's
/// place (within a few lines of it), then every other whole-word occurrence in the text,
/// compared without case; at most 8.
fn places(
    text: &str,
    doc: &computeguard_decode::Document,
    pointer: &str,
    value: &str,
) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let literal = doc
        .value
        .pointer(pointer)
        .and_then(serde_json::Value::as_str)
        .filter(|w| {
            w.eq_ignore_ascii_case(value)
                || catalog::sku(w).is_some_and(|f| f.name.eq_ignore_ascii_case(value))
                || computeguard_policy_core::region::normalize(w) == value
        });
    if let Some(written) = literal
        && let Some((start, end, _)) = place(text, doc, pointer, written, "")
    {
        out.push((start, end));
    }
    for (i, end) in occurrences(text, value) {
        if out.contains(&(i, end)) {
            continue;
        }
        out.push((i, end));
        if out.len() >= 8 {
            break;
        }
    }
    out
}

/// `text` with `edits` made, if the resource then reads back with the candidate's size and
/// region; the edited text and the edits as shown.
fn apply_and_read_back(
    prepared: &Prepared,
    input: &Input,
    text: &str,
    t: &Target,
    c: &Candidate,
    mut edits: Vec<(usize, usize, String)>,
) -> Option<(String, Vec<TextEdit>)> {
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    let mut shown = Vec::new();
    for (start, end, new) in edits {
        shown.push(TextEdit {
            file: None,
            line: u32::try_from(text[..start].matches('\n').count() + 1).unwrap_or(u32::MAX),
            from: text[start..end].to_string(),
            to: new.clone(),
        });
        out.replace_range(start..end, &new);
    }
    shown.reverse();
    let edited = Input {
        text: Some(out.clone()),
        ..input.clone()
    };
    reads_back(prepared, &edited, &out, t, c).then_some((out, shown))
}

/// Whether `input` (whose text is `text`) has the resource of `t` with the candidate's size
/// and region, read as `check` reads it.
fn reads_back(prepared: &Prepared, input: &Input, text: &str, t: &Target, c: &Candidate) -> bool {
    let reader = prepared.reader();
    let expander = reader.expander(std::slice::from_ref(input));
    let Ok((docs, source)) = expander.decode_named(input, text) else {
        return false;
    };
    let Some(doc) = docs
        .iter()
        .find(|(n, d)| *n == input.name && d.index == t.document)
        .map(|(_, d)| d)
    else {
        return false;
    };
    let unit = if t.prefix.is_empty() {
        Some(doc.value.clone())
    } else {
        doc.value.pointer(&t.prefix).cloned()
    };
    let Some(unit) = unit else {
        return false;
    };
    let back = read::normalize(&unit, source);
    // The same resource: an object with several roles (a training job's `Master` and
    // `Worker`) has one resource per role, told apart by where their size is written.
    let Some(r) = back.iter().find(|b| {
        b.kind == t.resource.kind
            && b.name == t.resource.name
            && b.pointer == t.resource.pointer
            && b.role == t.resource.role
            && b.fields.get("sku") == t.resource.fields.get("sku")
    }) else {
        return false;
    };
    let size_ok = r.sku.as_deref().and_then(catalog::sku).map(|f| f.name) == Some(c.sku.name);
    let region_ok = match &c.region {
        Some(want) => r.region.as_deref() == Some(want.as_str()),
        None => r.region == t.resource.region,
    };
    size_ok && region_ok
}

/// The byte range of `written` at the node `pointer` locates (its key or itself), and the
/// text to put there: the first whole-word occurrence within the next few lines.
fn place(
    text: &str,
    doc: &computeguard_decode::Document,
    pointer: &str,
    written: &str,
    new: &str,
) -> Option<(usize, usize, String)> {
    let span = doc.positions.locate(pointer)?;
    let from = span.offset.min(text.len());
    let window_end = text[from..]
        .match_indices('\n')
        .nth(3)
        .map_or(text.len(), |(i, _)| from + i);
    let window = text.get(from..window_end)?;
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    for (i, _) in window.match_indices(written) {
        let start = from + i;
        let end = start + written.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        if !before.is_some_and(word) && !after.is_some_and(word) {
            return Some((start, end, new.to_string()));
        }
    }
    None
}

/// Whether each candidate needs the change-wide quota sums recomputed (usage lists in the
/// context and `quota-sufficient` on): then the loaded policies' settings change per
/// candidate.
fn quota_per_candidate(prepared: &Prepared) -> bool {
    prepared
        .context
        .as_ref()
        .is_some_and(|c| !c.usage_regions.is_empty())
        && prepared.config.rules.get("quota-sufficient")
            != Some(&computeguard_policyset::Level::Off)
}

/// The input `check` would read for the edited file: its text, in the scratch copy of its
/// folder when the edit is in another file of it.
fn edited_input(files: &[Input], t: &Target, edit: &Edited) -> Input {
    let input = &files[t.input];
    Input {
        text: Some(edit.text.clone()),
        path: match (&edit.path, &edit.folder, input.path.file_name()) {
            (Some(path), _, _) => path.clone(),
            (None, Some(folder), Some(name)) => folder.0.join(name),
            _ => input.path.clone(),
        },
        ..input.clone()
    }
}

/// Evaluates the edited file as `check` would within the whole change: the quota sums
/// over every file (with the edit) when `azure.usage` is configured, then the file.
/// Returns the error and warning findings on the resource.
fn evaluate(prepared: &mut Prepared, files: &[Input], t: &Target, edit: Edited) -> Vec<Finding> {
    let quota = quota_per_candidate(prepared);
    let original = quota.then(|| settings_of(prepared));
    if quota {
        let edited = edited_input(files, t, &edit);
        // The files a scratch copy stands for are read there, through the edited input.
        let change: Vec<Input> = files
            .iter()
            .enumerate()
            .filter(|(i, f)| {
                *i == t.input
                    || edit.moved.is_empty()
                    || !std::fs::canonicalize(&f.path).is_ok_and(|p| edit.moved.contains(&p))
            })
            .map(|(i, f)| {
                if i == t.input {
                    edited.clone()
                } else {
                    f.clone()
                }
            })
            .collect();
        let totals = prepared.reader().declared_quota(&change);
        let _ = crate::prepare::give_quota_totals(&mut prepared.loaded, &totals);
    }
    let found = run_edited(prepared, files, t, edit);
    if let Some(original) = original {
        for (l, (settings, text)) in prepared.loaded.iter_mut().zip(original) {
            l.settings = settings;
            l.settings_text = text;
        }
    }
    found
}

/// Evaluates the edited file with the policies as they are loaded; the error and warning
/// findings on the resource. The scratch folder of the edit, if any, is removed after.
fn run_edited(prepared: &Prepared, files: &[Input], t: &Target, edit: Edited) -> Vec<Finding> {
    let input = &files[t.input];
    let edited = edited_input(files, t, &edit);
    // An item of a `List` or a row of an Azure export is evaluated alone (as `check`
    // evaluates it: item by item), so that a dump of a thousand objects costs one item per
    // candidate, not the whole dump.
    let alone = if t.module.is_none() {
        unit_alone(prepared, &edited, t)
    } else {
        None
    };
    let (alone, document) = match alone {
        Some(unit) => (unit, 0),
        None => (edited, t.document),
    };
    let report = prepared
        .scan()
        .run(std::slice::from_ref(&alone), Report::default());
    drop(edit);
    report
        .findings
        .into_iter()
        .filter(|f| blocking(f) && is_of(f, &input.name, document, t))
        .collect()
}

/// The unit of `t` (a `List` item, an export row) of the edited input as an input of its
/// own; `None` for a resource that is its whole document.
fn unit_alone(prepared: &Prepared, edited: &Input, t: &Target) -> Option<Input> {
    if t.prefix.is_empty() {
        return None;
    }
    let text = edited.text.as_deref()?;
    let (docs, _) = crate::scan::decode_like_check(&edited.path, text, &prepared.var_files).ok()?;
    let doc = docs.iter().find(|d| d.index == t.document)?;
    let unit = doc.value.pointer(&t.prefix)?;
    Some(Input {
        text: Some(serde_json::to_string_pretty(unit).ok()?),
        ..edited.clone()
    })
}

fn settings_of(prepared: &Prepared) -> Vec<(serde_json::Value, String)> {
    prepared
        .loaded
        .iter()
        .map(|l| (l.settings.clone(), l.settings_text.clone()))
        .collect()
}

/// An alternative with what it changes and why it passes.
fn describe(r: &Resource, current: &SkuFacts, c: &Candidate, clears: Vec<String>) -> Alternative {
    let mut changes = Vec::new();
    if c.sku.name != current.name {
        changes.push(format!("size {} -> {}", current.name, c.sku.name));
    }
    if let Some(region) = &c.region {
        changes.push(format!(
            "region {} -> {region}",
            r.region.as_deref().unwrap_or("(none)")
        ));
    }
    let f = c.sku;
    let mut gpu = Vec::new();
    match (f.architecture, f.compute_capability) {
        (Some(a), Some(cc)) => gpu.push(format!("{a} (compute capability {cc})")),
        (Some(a), None) => gpu.push(a.to_string()),
        _ => gpu.push("architecture not known".into()),
    }
    if let Some(n) = f.gpu_count {
        gpu.push(format!(
            "{n} GPU{}",
            if (n - 1.0).abs() < f64::EPSILON {
                ""
            } else {
                "s"
            }
        ));
    }
    match f.gpu_memory_gib {
        Some(m) => gpu.push(format!("{m} GiB GPU memory")),
        None => gpu.push("GPU memory not known".into()),
    }
    if let Some(v) = f.vcpus {
        gpu.push(format!("{v} vCPUs"));
    }
    let region = c
        .region
        .clone()
        .or_else(|| r.region.clone())
        .or_else(|| r.parent_region.clone())
        .or_else(|| {
            computeguard_policy_core::context::azure()
                .and_then(|a| a.workspace_region.clone())
                .filter(|_| computeguard_policy_core::context::takes_workspace_region(r))
        });
    let azure = computeguard_policy_core::context::azure();
    let offer = match (azure.and_then(|a| a.availability.as_ref()), &region) {
        (None, _) => "offer not known (no `azure.skus`)".to_string(),
        (Some(_), None) => "offer not known (the region is not stated)".to_string(),
        (Some(av), Some(region)) => match av.offer(f.name, region, &r.zones) {
            computeguard_policy_core::azure::OfferAnswer::Offered => {
                let mut zones: Vec<String> = av
                    .sku(f.name)
                    .iter()
                    .flat_map(|o| o.zones_in(region).iter().cloned())
                    .collect();
                zones.sort();
                zones.dedup();
                if zones.is_empty() {
                    format!("offered in {region} (no zones listed)")
                } else {
                    format!("offered in {region}, zones {}", zones.join(", "))
                }
            }
            computeguard_policy_core::azure::OfferAnswer::Unknown => {
                format!(
                    "offer in {region} not known (`azure.skus` does not list {})",
                    f.name
                )
            }
            other => format!("not offered in {region} as asked ({other:?})"),
        },
    };
    let quota = match (azure.and_then(|a| a.quota.as_ref()), &region) {
        (None, _) => "quota not known (no `azure.usage`)".to_string(),
        (Some(_), None) => "quota not known (the region is not stated)".to_string(),
        (Some(q), Some(region)) => {
            let family = azure
                .and_then(|a| a.availability.as_ref())
                .and_then(|av| av.sku(f.name).iter().find_map(|o| o.family.clone()))
                .or_else(|| f.family.map(str::to_string));
            match family {
                None => format!("quota not known (the family of {} is not known)", f.name),
                Some(family) => match q.free(region, &family) {
                    computeguard_policy_core::azure::QuotaAnswer::Free { free, .. } => {
                        format!("{free} vCPUs free of family {family} in {region}")
                    }
                    computeguard_policy_core::azure::QuotaAnswer::Unknown { reason } => {
                        format!("quota not known ({reason})")
                    }
                },
            }
        }
    };
    Alternative {
        size: f.name.to_string(),
        region: c.region.clone(),
        changes,
        gpu: gpu.join(", "),
        offer,
        quota,
        clears,
        price: crate::cost::plan_price(r, f.name, c.region.as_deref()),
        edits: Vec::new(),
    }
}
