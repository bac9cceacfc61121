//! Runs a pack's rules over one document.
//!
//! CEL sees these variables:
//! - `resource`: the normalised [`crate::model::Resource`] (camelCase fields, `null` when unknown);
//! - `object`: the raw Kubernetes/Azure object the resource was read from;
//! - `settings`: the pack settings (JSON object);
//! - `asOf`: the evaluation date, `YYYY-MM-DD`.
//!
//! and these functions (documented for users in `docs/rules/README.md`):
//! `sku(name)`, `region(name)`, `cudaOf(image)`, `cudaSupported(sku, cuda)`,
//! `versionAtLeast(a, b)`.

use crate::ast;
use crate::catalog::{self, SkuFacts};
use crate::cel_value::{self, json_to_cel, to_cel};
use crate::model::{self, Resource, Source};
use crate::pack::{self, Pack, PackError, Severity, WirePack};
use crate::read::common::At;
use crate::{cuda, region, version};
use cel_interpreter::{Context, IdedExpr, Value as Cel};
use serde::Serialize;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

/// One evaluation's inputs.
pub struct Input<'a> {
    pub document: &'a Value,
    pub source: Source,
    pub settings: &'a Value,
    /// `YYYY-MM-DD`.
    pub as_of: &'a str,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    pub rule: String,
    pub severity: Severity,
    pub message: String,
    /// JSON pointer into the document.
    pub path: String,
    pub remediation: String,
    pub resource_kind: String,
    pub resource_name: String,
}

/// The result of evaluating one document.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Outcome {
    pub violations: Vec<Violation>,
    /// (kind, name) of every resource recognised in the document.
    pub resources: Vec<(String, String)>,
}

/// A rule could not be evaluated.
#[derive(Debug, thiserror::Error)]
#[error("rule `{rule}` failed on {kind} `{name}`: {message}")]
pub struct RuleError {
    pub rule: String,
    pub kind: String,
    pub name: String,
    pub message: String,
}

/// An expression decoded and rebuilt for the interpreter on first use. The blob
/// stays in the evaluator's [`WirePack`]: copying every blob again at start-up was
/// measurable in a fresh wasm instance.
#[derive(Default)]
struct Lazy {
    cell: OnceLock<Result<Decoded, String>>,
}

/// A decoded expression and what it needs from the evaluation scope.
struct Decoded {
    expr: IdedExpr,
    /// Names the `object` variable, so the raw document must be converted to CEL
    /// before it runs. The built-in rules read only `resource`, and converting the
    /// whole document per resource was a large share of a native evaluation.
    uses_object: bool,
    /// Reads [`SKU_OF_RESOURCE`], bound once per resource.
    uses_resource_sku: bool,
}

/// The variable that stands for `sku(resource.sku)` in decoded expressions. The
/// built-in pack calls `sku(resource.sku)` 70 times; each call cloned its argument
/// tree, resolved `resource.sku` and looked the answer up. The name cannot be
/// written in CEL, so it never clashes with a pack's own identifiers.
const SKU_OF_RESOURCE: &str = "@sku(resource.sku)";

impl Lazy {
    /// Decodes `blob` on the first call; later calls return the same expression.
    fn get(&self, blob: &[u8]) -> Result<&Decoded, String> {
        self.cell
            .get_or_init(|| {
                pack::expr_from_blob(blob)
                    .map(|e| {
                        let e = bind_sku_of_resource(e);
                        Decoded {
                            uses_object: names_ident(&e, "object"),
                            uses_resource_sku: names_ident(&e, SKU_OF_RESOURCE),
                            expr: ast::to_cel(&guard_panics(e)),
                        }
                    })
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// Whether `e` mentions the identifier `name` anywhere (a comprehension variable of
/// the same name counts too: a false positive only costs a conversion).
fn names_ident(e: &ast::Expr, name: &str) -> bool {
    use ast::Expr as E;
    match e {
        E::Ident(n) => n == name,
        E::Unspecified | E::Literal(_) => false,
        E::Call { target, args, .. } => {
            target.as_deref().is_some_and(|t| names_ident(t, name))
                || args.iter().any(|a| names_ident(a, name))
        }
        E::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .any(|x| names_ident(x, name)),
        E::List(l) => l.iter().any(|x| names_ident(x, name)),
        E::Map(m) => m
            .iter()
            .any(|(k, v, _)| names_ident(k, name) || names_ident(v, name)),
        E::Select { operand, .. } => names_ident(operand, name),
        E::Struct(_, fields) => fields.iter().any(|(_, v, _)| names_ident(v, name)),
    }
}

/// Replaces every `sku(resource.sku)` in `e` by [`SKU_OF_RESOURCE`], except under a
/// comprehension that binds its own `resource`, where the call means something else.
fn bind_sku_of_resource(e: ast::Expr) -> ast::Expr {
    use ast::Expr as E;
    let is_resource_sku = |args: &[E]| {
        matches!(args, [E::Select { operand, field, test: false }]
            if field == "sku" && matches!(operand.as_ref(), E::Ident(n) if n == "resource"))
    };
    match e {
        E::Call {
            func,
            target: None,
            args,
        } if func == "sku" && is_resource_sku(&args) => E::Ident(SKU_OF_RESOURCE.to_string()),
        E::Call { func, target, args } => E::Call {
            func,
            target: target.map(|t| Box::new(bind_sku_of_resource(*t))),
            args: args.into_iter().map(bind_sku_of_resource).collect(),
        },
        E::Comprehension(c)
            if [Some(&c.iter_var), c.iter_var2.as_ref(), Some(&c.accu_var)]
                .into_iter()
                .flatten()
                .any(|v| v == "resource") =>
        {
            E::Comprehension(c)
        }
        other => map_children(other, bind_sku_of_resource),
    }
}

/// `e` with `f` applied to each of its direct children (call target and arguments,
/// comprehension parts, list items, map keys and values, select operand, struct
/// field values); leaves are returned as they are. The rewrites below recurse
/// through it for every node they do not handle themselves.
fn map_children(e: ast::Expr, f: impl Fn(ast::Expr) -> ast::Expr + Copy) -> ast::Expr {
    use ast::Expr as E;
    match e {
        E::Call { func, target, args } => E::Call {
            func,
            target: target.map(|t| Box::new(f(*t))),
            args: args.into_iter().map(f).collect(),
        },
        E::Comprehension(c) => {
            let c = *c;
            E::Comprehension(Box::new(ast::Comprehension {
                iter_range: f(c.iter_range),
                accu_init: f(c.accu_init),
                loop_cond: f(c.loop_cond),
                loop_step: f(c.loop_step),
                result: f(c.result),
                ..c
            }))
        }
        E::List(l) => E::List(l.into_iter().map(f).collect()),
        E::Map(m) => E::Map(m.into_iter().map(|(k, v, o)| (f(k), f(v), o)).collect()),
        E::Select {
            operand,
            field,
            test,
        } => E::Select {
            operand: Box::new(f(*operand)),
            field,
            test,
        },
        E::Struct(name, fields) => E::Struct(
            name,
            fields.into_iter().map(|(n, v, o)| (n, f(v), o)).collect(),
        ),
        other @ (E::Unspecified | E::Ident(_) | E::Literal(_)) => other,
    }
}

/// Guards the interpreter's three panics (cel-interpreter 0.10 `Value::resolve`): a
/// macro (`all`, `exists`, `map`, `filter`, ...) over a value that is neither a list
/// nor a map hits `todo!()`, and so do a message literal (`Struct`) and an
/// unspecified node. Settings and documents decide what a macro iterates
/// (`settings.regions.allowed.exists(...)` with a string), so every macro's range
/// goes through [`ITERABLE`], which passes a list or a map and turns anything else
/// into a CEL error naming the rule. The other two never come out of the
/// compiler; a hand-made pack gets an error instead of a trap.
fn guard_panics(e: ast::Expr) -> ast::Expr {
    use ast::Expr as E;
    let call = |func: &str, args: Vec<E>| E::Call {
        func: func.to_string(),
        target: None,
        args,
    };
    let unsupported = |what: &str| {
        call(
            UNSUPPORTED,
            vec![E::Literal(ast::Literal::String(what.into()))],
        )
    };
    match e {
        E::Comprehension(c) => {
            let c = *c;
            E::Comprehension(Box::new(ast::Comprehension {
                iter_range: call(ITERABLE, vec![guard_panics(c.iter_range)]),
                accu_init: guard_panics(c.accu_init),
                loop_cond: guard_panics(c.loop_cond),
                loop_step: guard_panics(c.loop_step),
                result: guard_panics(c.result),
                ..c
            }))
        }
        E::Unspecified => unsupported("an unspecified expression"),
        E::Struct(name, _) => unsupported(&format!("message literal `{name}`")),
        other => map_children(other, guard_panics),
    }
}

/// Internal function wrapped around every macro's range (see [`guard_panics`]); the
/// `@` keeps it out of reach of CEL source.
const ITERABLE: &str = "@iterable";
/// Internal function standing for an expression the interpreter cannot evaluate.
const UNSUPPORTED: &str = "@unsupported";

/// The decoded expressions of one rule (blobs in the matching [`WireRule`]).
#[derive(Default)]
struct CompiledRule {
    when: Lazy,
    assert: Lazy,
    message: Lazy,
    severity: Lazy,
}

/// A pack ready to evaluate. Construction only decodes the pack's outline; each
/// expression is decoded the first time a document needs it, so a fresh policy
/// instance pays for the rules it runs, not for the whole pack.
pub struct Evaluator {
    wire: WirePack,
    rules: Vec<CompiledRule>,
    /// CEL's standard functions and ours, registered once: building the table was a
    /// tenth of a native evaluation. Per-evaluation scopes are children of it.
    functions: Context<'static>,
}

impl Evaluator {
    pub fn new(pack: Pack) -> Self {
        // Infallible: `encode` writes what `WirePack::decode` reads.
        Self::from_bytes(&pack.encode()).unwrap_or_else(|_| Evaluator {
            wire: WirePack {
                name: pack.name,
                version: pack.version,
                source_digest: pack.source_digest,
                settings_schema: pack.settings_schema,
                rules: Vec::new(),
            },
            rules: Vec::new(),
            functions: functions(),
        })
    }

    /// Decodes an encoded pack's outline; expressions are decoded on first use.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PackError> {
        let wire = WirePack::decode(bytes)?;
        let rules = wire.rules.iter().map(|_| CompiledRule::default()).collect();
        Ok(Evaluator {
            wire,
            rules,
            functions: functions(),
        })
    }

    /// Decodes every expression, and builds every catalog answer of `sku()`, now
    /// rather than on first use. Corrupt expressions are left to report themselves
    /// when a document needs them.
    pub fn prepare(&self) {
        prepare_sku_answers();
        for (wire, compiled) in self.wire.rules.iter().zip(&self.rules) {
            let blobs = [
                (&compiled.when, wire.when.as_deref()),
                (&compiled.assert, Some(wire.assert.as_slice())),
                (&compiled.message, wire.message_expression.as_deref()),
                (&compiled.severity, wire.severity_expression.as_deref()),
            ];
            for (lazy, blob) in blobs.into_iter().filter_map(|(l, b)| Some((l, b?))) {
                // An error is kept in the cell and reported by the rule that needs it.
                let _ = lazy.get(blob);
            }
        }
    }

    /// Name, version, digest, schema and rule metadata of the pack.
    pub fn pack(&self) -> &WirePack {
        &self.wire
    }

    /// Evaluates every rule against every resource the document declares.
    pub fn evaluate<'e>(&'e self, input: &Input<'_>) -> Result<Outcome, RuleError> {
        let resources = model::normalize(input.document, input.source);
        let mut out = Outcome::default();
        if resources.is_empty() {
            return Ok(out);
        }
        let memo = Rc::new(SkuMemo {
            as_of: input.as_of.to_string(),
            entries: RefCell::default(),
        });
        let _current = CurrentMemo::set(Rc::clone(&memo));
        let mut root = self.functions.new_inner_scope();
        root.add_variable_from_value("asOf", input.as_of.to_string());
        root.add_variable_from_value("settings", json_to_cel(input.settings));
        for res in &resources {
            let display = display_name(res);
            out.resources.push((res.kind.clone(), display.clone()));
            let object = if res.pointer.is_empty() {
                input.document
            } else {
                input.document.at(&res.pointer).unwrap_or(input.document)
            };
            let mut scope = root.new_inner_scope();
            scope.add_variable_from_value("resource", cel_value::resource(res));
            // `object` is converted on first use by an expression of this resource.
            let mut object_bound = false;
            let mut sku_bound = false;
            for (wire, compiled) in self.wire.rules.iter().zip(&self.rules) {
                let rule = &wire.meta;
                if !rule.targets.is_empty() && !rule.targets.contains(&res.kind) {
                    continue;
                }
                let fail = |message: String| RuleError {
                    rule: rule.id.clone(),
                    kind: res.kind.clone(),
                    name: display.clone(),
                    message,
                };
                // Decodes an expression and binds `object` first if it needs it.
                let mut expr = |l: &'e Lazy, blob: &[u8], scope: &mut Context<'_>| {
                    let d = l
                        .get(blob)
                        .map_err(|e| fail(format!("corrupt expression: {e}")))?;
                    if d.uses_object && !object_bound {
                        scope.add_variable_from_value("object", json_to_cel(object));
                        object_bound = true;
                    }
                    if d.uses_resource_sku && !sku_bound {
                        let name = res.sku.as_deref().unwrap_or("");
                        scope.add_variable_from_value(SKU_OF_RESOURCE, memo.get(name));
                        sku_bound = true;
                    }
                    Ok::<&'e IdedExpr, RuleError>(&d.expr)
                };
                if let Some(blob) = &wire.when {
                    match Cel::resolve(expr(&compiled.when, blob, &mut scope)?, &scope) {
                        Ok(Cel::Bool(true)) => {}
                        Ok(Cel::Bool(false)) => continue,
                        Ok(other) => {
                            return Err(fail(format!(
                                "`when` yielded {} instead of a bool",
                                type_name(&other)
                            )));
                        }
                        Err(e) => return Err(fail(format!("`when`: {e}"))),
                    }
                }
                match Cel::resolve(expr(&compiled.assert, &wire.assert, &mut scope)?, &scope) {
                    Ok(Cel::Bool(true)) => continue,
                    Ok(Cel::Bool(false)) => {}
                    Ok(other) => {
                        return Err(fail(format!(
                            "`assert` yielded {} instead of a bool",
                            type_name(&other)
                        )));
                    }
                    Err(e) => return Err(fail(format!("`assert`: {e}"))),
                }
                let message = match &wire.message_expression {
                    Some(blob) => {
                        match Cel::resolve(expr(&compiled.message, blob, &mut scope)?, &scope) {
                            Ok(Cel::String(s)) => s.to_string(),
                            Ok(other) => {
                                return Err(fail(format!(
                                    "`messageExpression` yielded {} instead of a string",
                                    type_name(&other)
                                )));
                            }
                            Err(e) => return Err(fail(format!("`messageExpression`: {e}"))),
                        }
                    }
                    None => rule
                        .message
                        .clone()
                        .unwrap_or_else(|| format!("{} {display}: {}", res.kind, rule.description)),
                };
                let severity = match &wire.severity_expression {
                    Some(blob) => {
                        match Cel::resolve(expr(&compiled.severity, blob, &mut scope)?, &scope) {
                            Ok(Cel::String(s)) => match s.as_str() {
                                "error" => Severity::Error,
                                "warning" => Severity::Warning,
                                "info" => Severity::Info,
                                other => {
                                    return Err(fail(format!(
                                        "`severityExpression` yielded `{other}`; expected error, warning or info"
                                    )));
                                }
                            },
                            Ok(other) => {
                                return Err(fail(format!(
                                    "`severityExpression` yielded {}",
                                    type_name(&other)
                                )));
                            }
                            Err(e) => return Err(fail(format!("`severityExpression`: {e}"))),
                        }
                    }
                    None => rule.severity,
                };
                let path = rule
                    .field
                    .as_ref()
                    .and_then(|f| res.fields.get(f).cloned())
                    .or_else(|| rule.path.as_ref().map(|p| format!("{}{p}", res.pointer)))
                    // The field this rule names is not written in this resource (a
                    // default applies): point at the size, the heart of the resource.
                    .or_else(|| res.fields.get("sku").cloned())
                    .unwrap_or_else(|| res.pointer.clone());
                out.violations.push(Violation {
                    rule: rule.id.clone(),
                    severity,
                    message,
                    path,
                    remediation: rule.remediation.clone(),
                    resource_kind: res.kind.clone(),
                    resource_name: display.clone(),
                });
            }
        }
        Ok(out)
    }
}

/// `namespace/name` for namespaced objects, else the name.
pub fn display_name(r: &Resource) -> String {
    if let Some(id) = &r.azure_id {
        return id.clone();
    }
    match &r.namespace {
        Some(ns) => format!("{ns}/{}", r.name),
        None => r.name.clone(),
    }
}

fn type_name(v: &Cel) -> String {
    format!("{}", v.type_of())
}

fn text_arg(v: &Cel) -> Option<&str> {
    match v {
        Cel::String(s) => Some(s.as_str()),
        _ => None,
    }
}

fn opt(v: Option<String>) -> Cel {
    v.map_or(Cel::Null, |s| Cel::String(Arc::new(s)))
}

/// What `sku(name)` returns to CEL.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SkuView {
    known: bool,
    /// Canonical spelling when known, else the name as given.
    name: String,
    well_formed: bool,
    gpu_family: bool,
    series: Option<&'static str>,
    vendor: Option<&'static str>,
    gpu_model: Option<&'static str>,
    architecture: Option<&'static str>,
    compute_capability: Option<&'static str>,
    gpu_count: f64,
    infiniband: bool,
    rdma: bool,
    isolated: bool,
    status: Option<&'static str>,
    retired: bool,
    retirement_date: Option<&'static str>,
    retirement_announced: bool,
    mig_capable: bool,
    requires_approval: bool,
    aks_supported: Option<bool>,
    kaito_supported: Option<bool>,
    online_endpoint: Option<bool>,
    first_cuda: Option<&'static str>,
    last_cuda: Option<&'static str>,
    sources: Vec<&'static str>,
    /// A current size with the same GPU generation or newer and no InfiniBand.
    non_infiniband_alternative: Option<&'static str>,
    /// A current size to move to from a retired or retiring one.
    replacement: Option<&'static str>,
}

/// The answer of `sku(name)` for each catalog entry, without its date: built on first
/// use, and all at once by [`Evaluator::prepare`] so that a pre-initialised instance
/// starts with them. Building one took two scans of the catalog and a 27-entry map.
static SKU_ANSWERS: OnceLock<Box<[OnceLock<Cel>]>> = OnceLock::new();

/// The fields of a `sku()` answer that depend on the evaluation date.
struct Dated {
    retired: bool,
    retirement_announced: bool,
}

fn dated(f: &SkuFacts, as_of: &str) -> Dated {
    Dated {
        retired: catalog::retired_at(f, as_of),
        retirement_announced: f.retirement_date.is_some_and(|d| d >= as_of),
    }
}

fn sku_answer_cells() -> &'static [OnceLock<Cel>] {
    SKU_ANSWERS.get_or_init(|| catalog::SKUS.iter().map(|_| OnceLock::new()).collect())
}

/// Builds every catalog entry's undated answer now.
fn prepare_sku_answers() {
    for ((key, _), cell) in catalog::SKUS.iter().zip(sku_answer_cells()) {
        cell.get_or_init(|| to_cel(&sku_view(key, "")));
    }
}

/// `sku(name)` at `as_of`: the same value as `to_cel(&sku_view(name, as_of))`.
fn sku_answer(name: &str, as_of: &str) -> Cel {
    let entry = catalog::sku_index(name)
        .and_then(|i| Some((catalog::SKUS.get(i)?, sku_answer_cells().get(i)?)));
    let Some(((key, facts), cell)) = entry else {
        return to_cel(&sku_view(name, as_of));
    };
    // The entry's key answers exactly as `name` does: every name-derived field goes
    // through the same normalised key.
    let Cel::Map(undated) = cell.get_or_init(|| to_cel(&sku_view(key, ""))) else {
        return to_cel(&sku_view(name, as_of));
    };
    let mut map = (*undated.map).clone();
    let d = dated(facts, as_of);
    for (field, value) in [
        ("retired", d.retired),
        ("retirementAnnounced", d.retirement_announced),
    ] {
        map.insert(
            cel_interpreter::objects::Key::String(Arc::new(field.to_string())),
            Cel::Bool(value),
        );
    }
    Cel::Map(cel_interpreter::objects::Map { map: Arc::new(map) })
}

fn sku_view(name: &str, as_of: &str) -> SkuView {
    let facts = catalog::sku(name);
    let arch = facts
        .and_then(|f| f.compute_capability)
        .and_then(catalog::architecture);
    SkuView {
        known: facts.is_some(),
        name: facts.map_or_else(|| name.to_string(), |f| f.name.to_string()),
        well_formed: catalog::sku_well_formed(name),
        gpu_family: catalog::sku_gpu_family(name),
        series: facts.map(|f| f.series),
        vendor: facts.and_then(|f| f.vendor),
        gpu_model: facts.map(|f| f.gpu_model).filter(|m| !m.is_empty()),
        architecture: facts.and_then(|f| f.architecture),
        compute_capability: facts.and_then(|f| f.compute_capability),
        gpu_count: facts.map_or(0.0, |f| f.gpu_count),
        infiniband: facts.is_some_and(|f| f.infiniband),
        rdma: facts.is_some_and(|f| f.rdma || f.infiniband),
        isolated: facts.is_some_and(|f| f.isolated),
        status: facts.map(|f| f.status),
        retired: facts.is_some_and(|f| dated(f, as_of).retired),
        retirement_date: facts.and_then(|f| f.retirement_date),
        retirement_announced: facts.is_some_and(|f| dated(f, as_of).retirement_announced),
        mig_capable: facts.is_some_and(|f| f.mig_capable),
        requires_approval: facts.is_some_and(|f| f.requires_approval == Some(true)),
        aks_supported: facts.and_then(|f| f.aks_supported),
        kaito_supported: facts.and_then(|f| f.kaito_supported),
        online_endpoint: facts.and_then(|f| f.online_endpoint),
        first_cuda: arch.and_then(|a| a.first_cuda),
        last_cuda: arch.and_then(|a| a.last_cuda),
        sources: facts.map(|f| f.sources.to_vec()).unwrap_or_default(),
        non_infiniband_alternative: facts.filter(|f| f.infiniband).and_then(|f| {
            alternative(f, as_of, |c| {
                !c.infiniband && !c.rdma && c.gpu_model == f.gpu_model
            })
            .or_else(|| {
                alternative(f, as_of, |c| {
                    !c.infiniband && !c.rdma && c.architecture == f.architecture
                })
            })
        }),
        replacement: facts.filter(|f| f.retirement_date.is_some()).and_then(|f| {
            alternative(f, as_of, |c| {
                c.infiniband == f.infiniband && c.gpu_count >= f.gpu_count
            })
        }),
    }
}

/// The smallest current (no retirement date), non-isolated GPU size of the same
/// vendor, with at least the same compute capability, that satisfies `pred`
/// (smallest by GPU count, then vCPUs).
fn alternative(
    f: &SkuFacts,
    _as_of: &str,
    pred: impl Fn(&SkuFacts) -> bool,
) -> Option<&'static str> {
    catalog::SKUS
        .iter()
        .map(|(_, c)| c)
        .filter(|c| c.name == c.alias && c.category == "gpu" && c.vendor == f.vendor)
        .filter(|c| c.retirement_date.is_none() && c.status == "GA" && !c.isolated)
        .filter(|c| c.name != f.name && pred(c))
        .filter(|c| match (c.compute_capability, f.compute_capability) {
            (Some(a), Some(b)) => version::compare(a, b).is_some_and(|o| o.is_ge()),
            _ => true,
        })
        .min_by(|a, b| {
            a.gpu_count
                .total_cmp(&b.gpu_count)
                .then(a.vcpus.cmp(&b.vcpus))
                .then(a.name.cmp(b.name))
        })
        .map(|c| c.name)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RegionView {
    known: bool,
    name: String,
    display_name: Option<&'static str>,
    geography: Option<&'static str>,
    area: Option<&'static str>,
    country: Option<&'static str>,
    eu: bool,
    eea: bool,
}

fn region_view(name: &str) -> RegionView {
    let facts = region::region(name);
    RegionView {
        known: facts.is_some(),
        name: facts.map_or_else(|| region::normalize(name), |f| f.name.to_string()),
        display_name: facts.map(|f| f.display_name),
        geography: facts.map(|f| f.geography),
        area: facts.map(|f| f.area),
        country: facts.map(|f| f.country),
        eu: facts.is_some_and(|f| f.eu),
        eea: facts.is_some_and(|f| f.eea),
    }
}

/// `sku(name)` answers of one evaluation, at its date. `sku(resource.sku)` is called
/// by nearly every rule, and each answer takes two scans of the catalog plus a
/// 27-entry map: answer each name once per evaluation.
struct SkuMemo {
    as_of: String,
    entries: RefCell<Vec<(String, Cel)>>,
}

impl SkuMemo {
    fn get(&self, name: &str) -> Cel {
        if let Some((_, value)) = self.entries.borrow().iter().find(|(n, _)| n == name) {
            return value.clone();
        }
        let value = sku_answer(name, &self.as_of);
        self.entries
            .borrow_mut()
            .push((name.to_string(), value.clone()));
        value
    }
}

thread_local! {
    /// The `sku()` memo (and date) of the evaluation running on this thread. The
    /// function table is built once per evaluator, so `sku()` finds its evaluation
    /// here; evaluation is synchronous, so the thread identifies it.
    static CURRENT_MEMO: RefCell<Option<Rc<SkuMemo>>> = const { RefCell::new(None) };
}

/// Installs an evaluation's memo for its duration and restores the previous one.
struct CurrentMemo(Option<Rc<SkuMemo>>);

impl CurrentMemo {
    fn set(memo: Rc<SkuMemo>) -> Self {
        CurrentMemo(CURRENT_MEMO.with(|c| c.replace(Some(memo))))
    }
}

impl Drop for CurrentMemo {
    fn drop(&mut self) {
        CURRENT_MEMO.with(|c| *c.borrow_mut() = self.0.take());
    }
}

/// CEL's standard functions plus computeguard's.
fn functions() -> Context<'static> {
    type R = Result<Cel, cel_interpreter::ExecutionError>;
    let mut ctx = Context::default();
    ctx.add_function("sku", |v: Cel| -> R {
        let name = text_arg(&v).unwrap_or("");
        match CURRENT_MEMO.with(|c| c.borrow().clone()) {
            Some(memo) => Ok(memo.get(name)),
            None => Err(cel_interpreter::ExecutionError::function_error(
                "sku",
                "called outside an evaluation",
            )),
        }
    });
    ctx.add_function(ITERABLE, |v: Cel| -> R {
        match v {
            Cel::List(_) | Cel::Map(_) => Ok(v),
            other => Err(cel_interpreter::ExecutionError::function_error(
                "macro",
                format!(
                    "`all`, `exists`, `exists_one`, `map` and `filter` need a list or a map, got {}",
                    type_name(&other)
                ),
            )),
        }
    });
    ctx.add_function(UNSUPPORTED, |v: Cel| -> R {
        Err(cel_interpreter::ExecutionError::function_error(
            "unsupported",
            format!("{} cannot be evaluated", text_arg(&v).unwrap_or("this")),
        ))
    });
    ctx.add_function("region", |v: Cel| -> R {
        Ok(to_cel(&region_view(text_arg(&v).unwrap_or(""))))
    });
    ctx.add_function("inGeography", |r: Cel, g: Cel| -> R {
        Ok(match (text_arg(&r), text_arg(&g)) {
            (Some(r), Some(g)) => region::in_group(r, g).map_or(Cel::Null, Cel::Bool),
            _ => Cel::Null,
        })
    });
    ctx.add_function("cudaOf", |v: Cel| -> R {
        Ok(opt(text_arg(&v).and_then(cuda::cuda_of_image)))
    });
    ctx.add_function("versionAtLeast", |a: Cel, b: Cel| -> R {
        Ok(match (text_arg(&a), text_arg(&b)) {
            (Some(a), Some(b)) => version::at_least(a, b).map_or(Cel::Null, Cel::Bool),
            _ => Cel::Null,
        })
    });
    ctx.add_function("cudaSupported", |s: Cel, c: Cel| -> R {
        let cc = text_arg(&s)
            .and_then(catalog::sku)
            .and_then(|f| f.compute_capability);
        Ok(match (cc, text_arg(&c)) {
            (Some(cc), Some(cuda)) => {
                catalog::cuda_supported(cc, cuda).map_or(Cel::Null, Cel::Bool)
            }
            _ => Cel::Null,
        })
    });
    ctx
}

/// Names of the functions and variables CEL rules can use (for build-time checks).
pub const FUNCTIONS: &[&str] = &[
    "sku",
    "region",
    "inGeography",
    "cudaOf",
    "cudaSupported",
    "versionAtLeast",
];
/// Top-level variables.
pub const VARIABLES: &[&str] = &["resource", "object", "settings", "asOf"];
/// Fields of `resource` (camelCase as CEL sees them): exactly what the runtime binds
/// (a test holds them to the serialised [`Resource`]).
pub const RESOURCE_FIELDS: &[&str] = &cel_value::FIELDS;
/// Fields of the map `sku(name)` returns.
pub const SKU_FIELDS: &[&str] = &[
    "known",
    "name",
    "wellFormed",
    "gpuFamily",
    "series",
    "vendor",
    "gpuModel",
    "architecture",
    "computeCapability",
    "gpuCount",
    "infiniband",
    "rdma",
    "isolated",
    "status",
    "retired",
    "retirementDate",
    "retirementAnnounced",
    "migCapable",
    "requiresApproval",
    "aksSupported",
    "kaitoSupported",
    "onlineEndpoint",
    "firstCuda",
    "lastCuda",
    "sources",
    "nonInfinibandAlternative",
    "replacement",
];
/// Fields of the map `region(name)` returns.
pub const REGION_FIELDS: &[&str] = &[
    "known",
    "name",
    "displayName",
    "geography",
    "area",
    "country",
    "eu",
    "eea",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pack::Rule;
    use serde_json::json;

    fn rule(id: &str, when: Option<&str>, assert: &str, msg: Option<&str>) -> Rule {
        Rule {
            meta: crate::pack::RuleMeta {
                id: id.into(),
                severity: Severity::Warning,
                targets: vec![],
                description: "d".into(),
                rationale: "r".into(),
                remediation: "fix".into(),
                message: None,
                path: None,
                field: Some("minNodes".into()),
            },
            when: when.map(|w| ast::parse(w).expect("when parses")),
            assert: ast::parse(assert).expect("assert parses"),
            message_expression: msg.map(|m| ast::parse(m).expect("msg parses")),
            severity_expression: None,
        }
    }

    fn pack(rules: Vec<Rule>) -> Evaluator {
        Evaluator::new(Pack {
            name: "t".into(),
            version: "0.1.0".into(),
            source_digest: String::new(),
            settings_schema: None,
            rules,
        })
    }

    fn cluster(min: i64) -> Value {
        json!({"type": "amlcompute", "name": "gpu", "size": "Standard_NC24ads_A100_v4", "min_instances": min, "max_instances": 4})
    }

    fn run(e: &Evaluator, doc: &Value) -> Result<Outcome, RuleError> {
        e.evaluate(&Input {
            document: doc,
            source: Source::Unknown,
            settings: &json!({}),
            as_of: "2026-11-22",
        })
    }

    #[test]
    fn a_false_assert_is_a_violation_at_the_field() {
        let e = pack(vec![rule(
            "min0",
            None,
            "resource.minNodes == 0",
            Some(
                "'cluster ' + resource.name + ' keeps ' + string(resource.minNodes) + ' nodes on ' + sku(resource.sku).gpuModel",
            ),
        )]);
        let out = run(&e, &cluster(2)).expect("evaluates");
        assert_eq!(out.violations.len(), 1);
        let v = &out.violations[0];
        assert_eq!(v.path, "/min_instances");
        assert_eq!(v.message, "cluster gpu keeps 2 nodes on A100 PCIe 80GB");
        assert!(
            run(&e, &cluster(0))
                .expect("evaluates")
                .violations
                .is_empty()
        );
    }

    #[test]
    fn when_false_skips_the_rule() {
        let e = pack(vec![rule(
            "r",
            Some("sku(resource.sku).infiniband"),
            "false",
            None,
        )]);
        assert!(run(&e, &cluster(2)).expect("ok").violations.is_empty());
    }

    #[test]
    fn runtime_errors_name_the_rule() {
        let e = pack(vec![rule(
            "broken",
            None,
            "resource.noSuchField == 1",
            None,
        )]);
        let err = run(&e, &cluster(2)).expect_err("fails");
        assert_eq!(err.rule, "broken");
        assert!(
            err.to_string().contains("aml-compute-cluster `gpu`"),
            "{err}"
        );
    }

    #[test]
    fn domain_functions_answer_from_the_catalog() {
        let e = pack(vec![rule(
            "f",
            None,
            "!(sku('standard_nd96isr_h100_v5').infiniband && region('East US 2').name == 'eastus2' \
              && cudaOf('nvidia/cuda:12.4.1-runtime-ubuntu22.04') == '12.4.1' \
              && versionAtLeast('12.4', '12.1') && cudaSupported('Standard_NC6', '12.1') == false \
              && sku('Standard_NC6s_v3').retired && sku('Standard_ND96isr_H100_v5').nonInfinibandAlternative == 'Standard_NC40ads_H100_v5')",
            None,
        )]);
        assert_eq!(run(&e, &cluster(2)).expect("ok").violations.len(), 1);
    }

    #[test]
    fn cached_sku_answers_equal_the_view_at_every_date() {
        let names = catalog::SKUS.iter().map(|(k, _)| k.to_string()).chain([
            "Standard_NC6".into(),
            "nc6".into(),
            "Standard_Nope9".into(),
            String::new(),
        ]);
        for name in names {
            for as_of in ["2020-01-01", "2023-09-06", "2026-11-22", "2031-01-01"] {
                // Twice: the first call may build the cached answer, the second reads it.
                for _ in 0..2 {
                    assert_eq!(
                        sku_answer(&name, as_of),
                        to_cel(&sku_view(&name, as_of)),
                        "{name} at {as_of}"
                    );
                }
            }
        }
    }

    #[test]
    fn sku_answers_at_each_evaluations_own_date_across_threads() {
        // One evaluator (one function table) shared by threads evaluating at different
        // dates: `sku()` must answer at the date of the evaluation that calls it.
        let e = pack(vec![rule(
            "retired",
            None,
            "!sku('Standard_NC6').retired && !sku(resource.sku).retired",
            None,
        )]);
        let doc = json!({"type": "amlcompute", "name": "old", "size": "Standard_NC6", "min_instances": 0});
        let at = |as_of: &str| {
            e.evaluate(&Input {
                document: &doc,
                source: Source::Unknown,
                settings: &json!({}),
                as_of,
            })
            .expect("evaluates")
            .violations
            .len()
        };
        std::thread::scope(|s| {
            let threads: Vec<_> = (0..4)
                .map(|i| {
                    let at = &at;
                    s.spawn(move || {
                        // NC6 retired on 2023-09-06.
                        let (date, expected) = if i % 2 == 0 {
                            ("2023-01-01", 0)
                        } else {
                            ("2026-11-22", 1)
                        };
                        (0..50).all(|_| at(date) == expected)
                    })
                })
                .collect();
            for t in threads {
                assert!(t.join().expect("no panic"));
            }
        });
    }

    #[test]
    fn sku_of_the_resource_is_bound_once_and_matches_the_function() {
        // The bound value and a call with another spelling of the same name agree,
        // and a comprehension that binds its own `resource` keeps the real call.
        let e = pack(vec![rule(
            "s",
            None,
            "sku(resource.sku).gpuModel == sku('nc24ads_a100_v4').gpuModel \
              && sku(resource.sku).known \
              && [{'sku': 'Standard_Nope9'}].all(resource, !sku(resource.sku).known)",
            Some("'on ' + sku(resource.sku).name"),
        )]);
        assert!(run(&e, &cluster(2)).expect("ok").violations.is_empty());
        let failing = pack(vec![rule(
            "s",
            None,
            "[{'sku': 'Standard_NC24ads_A100_v4'}].all(resource, !sku(resource.sku).known)",
            Some("'on ' + sku(resource.sku).name"),
        )]);
        let out = run(&failing, &cluster(2)).expect("ok");
        assert_eq!(out.violations.len(), 1);
        assert_eq!(out.violations[0].message, "on Standard_NC24ads_A100_v4");
    }

    #[test]
    fn rewriting_leaves_other_sku_calls_alone() {
        let parse = |src: &str| ast::parse(src).expect("parses");
        assert_eq!(
            bind_sku_of_resource(parse("sku(resource.sku).known")),
            ast::Expr::Select {
                operand: Box::new(ast::Expr::Ident(SKU_OF_RESOURCE.into())),
                field: "known".into(),
                test: false,
            }
        );
        for src in [
            "sku(resource.region).known",
            "sku(object.sku).known",
            "resource.all(resource, sku(resource.sku).known)",
        ] {
            assert_eq!(bind_sku_of_resource(parse(src)), parse(src), "{src}");
        }
        assert!(names_ident(&parse("object.a + 1 == 2"), "object"));
        assert!(!names_ident(&parse("resource.object == 2"), "object"));
    }

    #[test]
    fn object_is_only_converted_for_rules_that_read_it() {
        // A rule reading `object` after one that does not still sees it.
        let e = pack(vec![
            rule("a", None, "resource.minNodes == 2", None),
            rule("b", None, "object.min_instances == 0", None),
        ]);
        let out = run(&e, &cluster(2)).expect("evaluates");
        let ids: Vec<&str> = out.violations.iter().map(|v| v.rule.as_str()).collect();
        assert_eq!(ids, ["b"]);
    }

    #[test]
    fn json_numbers_are_cel_ints() {
        let e = pack(vec![rule(
            "n",
            None,
            "settings.n * 2 == 4 && object.min_instances + 1 == 3",
            None,
        )]);
        let out = e
            .evaluate(&Input {
                document: &cluster(2),
                source: Source::Unknown,
                settings: &json!({"n": 2}),
                as_of: "2026-11-22",
            })
            .expect("evaluates");
        assert!(out.violations.is_empty(), "{:?}", out.violations);
    }

    #[test]
    fn macros_over_a_scalar_are_rule_errors_not_panics() {
        // `settings.xs` as a string reached cel-interpreter's `todo!()` (a trap in a
        // component); a document field works the same way through `object`.
        for (assert, settings) in [
            ("settings.xs.exists(x, x == 'a')", json!({"xs": "a"})),
            ("settings.xs.all(x, x == 'a')", json!({"xs": 1})),
            ("object.name.map(x, x).size() == 0", json!({})),
            (
                "settings.xs.filter(x, true).size() == 0",
                json!({"xs": null}),
            ),
        ] {
            let e = pack(vec![rule("m", None, assert, None)]);
            let err = e
                .evaluate(&Input {
                    document: &cluster(2),
                    source: Source::Unknown,
                    settings: &settings,
                    as_of: "2026-11-22",
                })
                .expect_err("refused");
            assert_eq!(err.rule, "m");
            assert!(err.message.contains("need a list or a map, got"), "{err}");
        }
        // Lists and maps still iterate.
        let e = pack(vec![rule(
            "ok",
            None,
            "settings.xs.exists(x, x == 'a') && settings.m.all(k, k == 'k')",
            None,
        )]);
        let out = e
            .evaluate(&Input {
                document: &cluster(2),
                source: Source::Unknown,
                settings: &json!({"xs": ["a"], "m": {"k": 1}}),
                as_of: "2026-11-22",
            })
            .expect("evaluates");
        assert!(out.violations.is_empty(), "{:?}", out.violations);
    }

    #[test]
    fn nodes_the_interpreter_cannot_evaluate_are_rule_errors() {
        for assert in [
            ast::Expr::Unspecified,
            ast::Expr::Struct("google.protobuf.Value".into(), vec![]),
        ] {
            let mut r = rule("u", None, "true", None);
            r.assert = assert;
            let err = pack(vec![r]).evaluate(&Input {
                document: &cluster(2),
                source: Source::Unknown,
                settings: &json!({}),
                as_of: "2026-11-22",
            });
            let err = err.expect_err("refused");
            assert!(err.message.contains("cannot be evaluated"), "{err}");
        }
    }

    #[test]
    fn pack_bytes_round_trip() {
        let e = pack(vec![rule(
            "r",
            Some("true"),
            "resource.minNodes == 0",
            None,
        )]);
        let original = Pack {
            name: "t".into(),
            version: "0.1.0".into(),
            source_digest: String::new(),
            settings_schema: None,
            rules: vec![rule(
                "r",
                Some("true"),
                "resource.minNodes == 0",
                Some("'x'"),
            )],
        };
        let bytes = original.encode();
        assert_eq!(Pack::decode(&bytes).expect("decodes"), original);
        let back = Evaluator::from_bytes(&bytes).expect("decodes");
        assert_eq!(back.pack().rules[0].meta, original.rules[0].meta);
        assert_eq!(e.pack().rules[0].meta.id, "r");
        assert!(Pack::decode(b"nope").is_err());
        // A corrupt expression blob is a rule error, not a panic.
        let mut wire = WirePack::decode(&bytes).expect("outline");
        wire.rules[0].when = None;
        wire.rules[0].assert = vec![0xff, 0xff, 0xff];
        let broken = Evaluator {
            rules: vec![CompiledRule::default()],
            wire,
            functions: functions(),
        };
        let err = broken
            .evaluate(&Input {
                document: &cluster(1),
                source: Source::Unknown,
                settings: &json!({}),
                as_of: "2026-11-22",
            })
            .expect_err("corrupt");
        assert!(err.message.starts_with("corrupt expression"), "{err}");
    }
}
