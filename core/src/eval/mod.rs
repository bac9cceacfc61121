//! Runs a pack's rules over one document.
//!
//! CEL sees these variables:
//! - `resource`: the normalised [`crate::model::Resource`] (camelCase fields, `null` when unknown);
//! - `object`: the raw Kubernetes/Azure object the resource was read from;
//! - `settings`: the pack settings (JSON object);
//! - `asOf`: the evaluation date, `YYYY-MM-DD`.
//!
//! and these functions (documented for users in `docs/compute-model.md`):
//! `sku(name)`, `region(name)`, `inGeography(region, group)`, `cudaOf(image)`,
//! `cudaSupported(sku, cuda)`, `versionAtLeast(a, b)`, and, from the subscription's
//! context, `skuOffer(sku, region, zones)` and `quota(sku, region)`.
//!
//! The module is split by job:
//! - `eval` itself: the [`Evaluator`] and its inputs and results, decoding a pack's
//!   expressions on first use and running each rule over each resource;
//! - `views`: the catalog data `sku()` and `region()` hand to CEL, and the
//!   per-evaluation memo of `sku()` answers;
//! - `functions`: the table of CEL functions registered for rules, and the one
//!   implementation of each that both the table and the typed programs call;
//! - `typed`: typed programs, each expression compiled when it is decoded and run before
//!   the interpreter, which answers wherever a program cannot be certain;
//! - `azure`: what `skuOffer()` and `quota()` answer from the installed context, and the
//!   per-evaluation sum of what the document declares of each quota.

mod aks;
mod azure;
pub mod change;
pub use aks::{AKS_POOL_SIZE_FIELDS, MIG_OS_FIELDS};
pub use azure::declared;
mod functions;
mod typed;
mod views;

pub use azure::{QUOTA_FIELDS, SKU_OFFER_FIELDS, SPOT_TOTAL_ID};
pub use functions::{FUNCTIONS, KAITO_FIT_FIELDS};
pub use views::{REGION_FIELDS, SKU_FIELDS};

use crate::ast;
use crate::cel_value::{self, json_to_cel};
use crate::model::{self, Resource, Source};
use crate::pack::{self, Pack, PackError, Severity, WirePack};
use crate::read::common::At;
use azure::{AzureScope, CurrentAzure};
use cel_interpreter::{Context, IdedExpr, ResolveResult, Value as Cel};
use functions::{ITERABLE, UNSUPPORTED, functions};
use serde::Serialize;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::OnceLock;
use views::{CurrentMemo, SkuMemo, prepare_sku_answers};

/// The document an evaluation's resources were read from: parsed, or its text, parsed
/// on first use ([`Evaluator::evaluate_read`]).
enum Document<'a> {
    Parsed(&'a Value),
    Text(&'a str, std::cell::OnceCell<Result<Value, String>>),
}

impl<'a> Document<'a> {
    fn text(text: &'a str) -> Self {
        Document::Text(text, std::cell::OnceCell::new())
    }

    /// The parsed document; for text that does not parse (a host broke
    /// [`Evaluator::evaluate_read`]'s promise), the evaluation fails naming the request's
    /// document.
    fn get(&self) -> Result<&Value, RuleError> {
        match self {
            Document::Parsed(v) => Ok(v),
            Document::Text(text, parsed) => parsed
                .get_or_init(|| serde_json::from_str(text).map_err(|e| e.to_string()))
                .as_ref()
                .map_err(|e| RuleError {
                    rule: "read-model".into(),
                    kind: "document".into(),
                    name: "request.document".into(),
                    message: format!("the document is not valid JSON: {e}"),
                }),
        }
    }
}

/// One evaluation's inputs.
pub struct Input<'a> {
    /// The raw document as JSON; `object` in CEL is the part each resource was read from.
    pub document: &'a Value,
    /// The document's format as far as the caller knows ([`Source::Unknown`] to recognise it).
    pub source: Source,
    /// The pack settings, bound as `settings` as given: checking them against the pack's
    /// settings schema ([`crate::settings`]) is the caller's job.
    pub settings: &'a Value,
    /// The evaluation date, `YYYY-MM-DD`: `asOf` in CEL, and the date `sku()` judges
    /// retirement at.
    pub as_of: &'a str,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// Id of the rule whose `assert` was false.
    pub rule: String,
    /// The rule's severity, or what its `severityExpression` yielded.
    pub severity: Severity,
    /// The rule's `messageExpression` result, else its fixed `message`, else
    /// `<kind> <name>: <description>`.
    pub message: String,
    /// JSON pointer into the document: the field the rule names, else the rule's `path`
    /// under the resource, else where the resource's VM size is written, else the resource.
    pub path: String,
    /// The rule's `remediation` text.
    pub remediation: String,
    /// Compute-model kind of the resource ([`Resource::kind`]).
    pub resource_kind: String,
    /// The resource as [`display_name`] names it.
    pub resource_name: String,
}

/// The result of evaluating one document.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Outcome {
    /// Every finding, resource by resource (in the order of `resources`), then in the
    /// pack's rule order.
    pub violations: Vec<Violation>,
    /// (kind, name) of every resource recognised in the document.
    pub resources: Vec<(String, String)>,
}

/// A rule could not be evaluated.
#[derive(Debug, thiserror::Error)]
#[error("rule `{rule}` failed on {kind} `{name}`: {message}")]
pub struct RuleError {
    /// Id of the rule that failed.
    pub rule: String,
    /// Compute-model kind of the resource it was evaluated on.
    pub kind: String,
    /// That resource, as [`display_name`] names it.
    pub name: String,
    /// What went wrong: a CEL error, a `when` or `assert` that is not a bool, a message or
    /// severity expression of the wrong type, or a corrupt expression.
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
    /// The expression as a typed program, tried before the interpreter (`typed.rs`);
    /// None when its root is nothing a program evaluates.
    typed: Option<typed::Program>,
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
                            typed: typed::compile(&e),
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

/// The decoded expressions of one rule (blobs in the matching [`WireRule`](pack::WireRule)).
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
    /// Whether expressions' typed programs are tried before the interpreter (always,
    /// except to compare the two: [`Evaluator::interpreted_only`]).
    typed: bool,
}

impl Evaluator {
    /// An evaluator for a pack built in memory. The pack goes through its binary
    /// encoding, so it runs as a component carrying it would run it.
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
            typed: true,
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
            typed: true,
        })
    }

    /// The same evaluator with every expression left to the interpreter, the reference
    /// the typed programs are tested against; the answers are the same, only slower.
    pub fn interpreted_only(mut self) -> Self {
        self.typed = false;
        self
    }

    /// How many of the pack's expressions have a typed program (decoding them first).
    pub fn typed_programs(&self) -> usize {
        self.prepare();
        self.rules
            .iter()
            .flat_map(|r| [&r.when, &r.assert, &r.message, &r.severity])
            .filter(|l| matches!(l.cell.get(), Some(Ok(d)) if d.typed.is_some()))
            .count()
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
    pub fn evaluate(&self, input: &Input<'_>) -> Result<Outcome, RuleError> {
        let resources = model::normalize(input.document, input.source);
        self.evaluate_resources(
            resources,
            &Document::Parsed(input.document),
            input.settings,
            input.as_of,
        )
    }

    /// [`Evaluator::evaluate`] of a document whose compute model the caller has already
    /// read: `resources` must be what [`crate::read::normalize`] gives for `document` (a
    /// JSON object or export that `read::readable` accepts, of the declared source). The
    /// same answer, without reading the document again: it is parsed only if a rule
    /// reads `object` or a resource is an AKS node pool (whose change facts are read
    /// from the document). A document that does not parse then fails the evaluation.
    pub fn evaluate_read(
        &self,
        resources: Vec<Resource>,
        document: &str,
        settings: &Value,
        as_of: &str,
    ) -> Result<Outcome, RuleError> {
        self.evaluate_resources(resources, &Document::text(document), settings, as_of)
    }

    fn evaluate_resources<'e>(
        &'e self,
        mut resources: Vec<Resource>,
        document: &Document<'_>,
        settings: &Value,
        as_of: &str,
    ) -> Result<Outcome, RuleError> {
        crate::context::fill_workspace_region(&mut resources);
        let mut out = Outcome::default();
        if resources.is_empty() {
            return Ok(out);
        }
        let memo = Rc::new(SkuMemo {
            as_of: as_of.to_string(),
            entries: RefCell::default(),
        });
        let _current = CurrentMemo::set(Rc::clone(&memo));
        // The subscription's facts and what this document declares of each quota, once
        // (none without a context).
        let azure = AzureScope::new(&resources, settings).map(Rc::new);
        let _azure = CurrentAzure::set(azure.clone());
        let mut root = self.functions.new_inner_scope();
        root.add_variable_from_value("asOf", as_of.to_string());
        // A document with an AKS node pool: what it holds of the change (a GPU Operator,
        // MIG workloads) joins what the host says of the whole change (`settings.change`).
        let merged = if resources.iter().any(|r| r.kind == "aks-node-pool") {
            change::with_document(settings, document.get()?, &resources)
        } else {
            None
        };
        let settings = json_to_cel(merged.as_ref().unwrap_or(settings));
        root.add_variable_from_value("settings", settings.clone());
        for (index, res) in resources.iter().enumerate() {
            if let Some(a) = &azure {
                a.set_current(index);
            }
            let display = display_name(res);
            out.resources.push((res.kind.clone(), display.clone()));
            // The interpreter's scope, with `resource` converted, is built when the first
            // expression of this resource needs the interpreter; `object` and the SKU
            // answer are bound in it on first use.
            let mut scope: Option<Context<'_>> = None;
            let mut object_bound = false;
            let mut sku_bound = false;
            let mut sku: Option<Cel> = None;
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
                // Decodes an expression and evaluates it: its typed program if it has one
                // that answers, else the interpreter, binding what it needs first.
                let mut eval = |l: &'e Lazy, blob: &[u8]| {
                    let d = l
                        .get(blob)
                        .map_err(|e| fail(format!("corrupt expression: {e}")))?;
                    if d.uses_resource_sku && sku.is_none() {
                        sku = Some(memo.get(res.sku.as_deref().unwrap_or("")));
                    }
                    let env = typed::Env {
                        resource: res,
                        settings: &settings,
                        sku: sku.as_ref(),
                    };
                    if let Some(v) = d
                        .typed
                        .as_ref()
                        .filter(|_| self.typed)
                        .and_then(|p| p.run(&env))
                    {
                        return Ok(Ok(v));
                    }
                    let scope = scope.get_or_insert_with(|| {
                        let mut s = root.new_inner_scope();
                        s.add_variable_from_value("resource", cel_value::resource(res));
                        s
                    });
                    if d.uses_object && !object_bound {
                        let document = document.get()?;
                        let object = if res.pointer.is_empty() {
                            document
                        } else {
                            document.at(&res.pointer).unwrap_or(document)
                        };
                        scope.add_variable_from_value("object", json_to_cel(object));
                        object_bound = true;
                    }
                    if let Some(sku) = sku.as_ref().filter(|_| !sku_bound) {
                        scope.add_variable_from_value(SKU_OF_RESOURCE, sku.clone());
                        sku_bound = true;
                    }
                    Ok::<ResolveResult, RuleError>(Cel::resolve(&d.expr, scope))
                };
                if let Some(blob) = &wire.when {
                    match eval(&compiled.when, blob)? {
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
                match eval(&compiled.assert, &wire.assert)? {
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
                    Some(blob) => match eval(&compiled.message, blob)? {
                        Ok(Cel::String(s)) => s.to_string(),
                        Ok(other) => {
                            return Err(fail(format!(
                                "`messageExpression` yielded {} instead of a string",
                                type_name(&other)
                            )));
                        }
                        Err(e) => return Err(fail(format!("`messageExpression`: {e}"))),
                    },
                    None => rule
                        .message
                        .clone()
                        .unwrap_or_else(|| format!("{} {display}: {}", res.kind, rule.description)),
                };
                let severity = match &wire.severity_expression {
                    Some(blob) => match eval(&compiled.severity, blob)? {
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
                    },
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

/// Top-level variables.
pub const VARIABLES: &[&str] = &["resource", "object", "settings", "asOf"];
/// Fields of `resource` (camelCase as CEL sees them): exactly what the runtime binds
/// (a test holds them to the serialised [`Resource`]).
pub const RESOURCE_FIELDS: &[&str] = &cel_value::FIELDS;

#[cfg(test)]
mod tests {
    //! The evaluator's tests, and the pack-building helpers the other files' tests share.

    use super::*;
    use crate::pack::Rule;
    use serde_json::json;

    pub(super) fn rule(id: &str, when: Option<&str>, assert: &str, msg: Option<&str>) -> Rule {
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

    pub(super) fn pack(rules: Vec<Rule>) -> Evaluator {
        Evaluator::new(Pack {
            name: "t".into(),
            version: "0.1.0".into(),
            source_digest: String::new(),
            settings_schema: None,
            rules,
        })
    }

    pub(super) fn cluster(min: i64) -> Value {
        json!({"type": "amlcompute", "name": "gpu", "size": "Standard_NC24ads_A100_v4", "min_instances": min, "max_instances": 4})
    }

    /// The vendored interpreter looks a field up by a borrowed key (vendor/README.md): a
    /// field, an index and `in` find the same entries, of every key type, as before; a
    /// missing field is still an error, never a false.
    #[test]
    fn map_entries_are_found_by_field_index_and_in_for_every_key_type() {
        let ctx = Context::default();
        let eval = |src: &str| Cel::resolve(&ast::to_cel(&ast::parse(src).expect("parses")), &ctx);
        for src in [
            "{'gpu': 2}.gpu == 2",
            "{'gpu': 2}['gpu'] == 2",
            "'gpu' in {'gpu': 2}",
            "{'nvidia.com/gpu': 8}['nvidia.com/gpu'] == 8",
            "{1: 'a'}[1] == 'a'",
            "{1: 'a'}[1u] == 'a'",
            "{true: 'y'}[true] == 'y'",
            "1 in {1: 'a'} && !(2 in {1: 'a'})",
            "{'a': {'b': 'c'}}.a.b == 'c'",
            "has({'gpu': 2}.gpu) && !has({'gpu': 2}.cpu)",
        ] {
            assert_eq!(
                eval(src).map_err(|e| e.to_string()),
                Ok(Cel::Bool(true)),
                "{src}"
            );
        }
        assert!(
            eval("{'gpu': 2}.cpu == 2").is_err(),
            "a missing field is an error"
        );
    }

    /// The vendored interpreter resolves a function's arguments once (issue 36): it used to
    /// resolve the first argument of every one- and two-argument call before it knew
    /// whether the name was an operator, and then the function resolved it again, so
    /// `versionAtLeast(sku(resource.sku).computeCapability, '8.0')` looked `sku` up twice.
    /// Operators still get their operands, and errors are still errors.
    #[test]
    fn a_function_argument_is_resolved_once_and_operators_still_work() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static TICKS: AtomicUsize = AtomicUsize::new(0);
        type R = Result<Cel, cel_interpreter::ExecutionError>;
        let mut ctx = Context::default();
        ctx.add_function("tick", || -> R {
            TICKS.fetch_add(1, Ordering::SeqCst);
            Ok(Cel::Int(1))
        });
        ctx.add_function("same", |v: Cel| -> R { Ok(v) });
        ctx.add_function("first", |a: Cel, _b: Cel| -> R { Ok(a) });
        let eval = |src: &str| Cel::resolve(&ast::to_cel(&ast::parse(src).expect("parses")), &ctx);
        for (src, ticks) in [
            ("same(tick()) == 1", 1),
            ("first(tick(), 2) == 1", 1),
            ("first(same(tick()), 2) == 1", 1),
            ("size(string(tick())) == 1", 1),
            ("tick() + 1 == 2", 1),
            ("!(tick() == 0)", 1),
            ("-tick() == -1", 1),
            ("tick() in [1, 2]", 1),
            ("[tick()][0] == 1", 1),
            ("tick() == 1 ? true : false", 1),
            ("tick() == 0 && tick() == 1 ? false : true", 1),
            ("[1, 2].exists(x, x == tick() + 1)", 2),
        ] {
            TICKS.store(0, Ordering::SeqCst);
            assert_eq!(
                eval(src).map_err(|e| e.to_string()),
                Ok(Cel::Bool(true)),
                "{src}"
            );
            assert_eq!(TICKS.load(Ordering::SeqCst), ticks, "{src}");
        }
        assert!(eval("same(missing)").is_err(), "an undeclared argument");
        assert!(
            eval("first(missing, 1)").is_err(),
            "an undeclared first argument"
        );
        assert!(eval("nothing(1)").is_err(), "an undeclared function");
    }

    pub(super) fn run(e: &Evaluator, doc: &Value) -> Result<Outcome, RuleError> {
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
    fn a_handed_over_model_is_evaluated_without_the_document_unless_a_rule_reads_it() {
        let doc = cluster(0);
        let resources = model::normalize(&doc, Source::Unknown);
        let settings = json!({});
        let e = pack(vec![rule("a", None, "resource.minNodes != 0", None)]);
        // Text that is not JSON is never parsed: no rule reads `object`.
        let out = e
            .evaluate_read(resources.clone(), "not JSON", &settings, "2026-11-22")
            .expect("evaluates");
        assert_eq!(out.violations.len(), 1);
        let reads = pack(vec![rule("b", None, "object.min_instances != 0", None)]);
        let err = reads
            .evaluate_read(resources.clone(), "not JSON", &settings, "2026-11-22")
            .expect_err("the document is needed");
        assert!(err.to_string().contains("not valid JSON"), "{err}");
        // With its document, the answer `evaluate` gives.
        let read = reads.evaluate_read(resources, &doc.to_string(), &settings, "2026-11-22");
        assert_eq!(format!("{read:?}"), format!("{:?}", run(&reads, &doc)));
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
            typed: true,
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
