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
use crate::model::{self, Resource, Source};
use crate::pack::{self, Pack, PackError, Severity, WirePack};
use crate::{cuda, region, version};
use cel_interpreter::{Context, IdedExpr, Value as Cel};
use serde::Serialize;
use serde_json::Value;
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

/// An expression decoded and rebuilt for the interpreter on first use.
struct Lazy {
    blob: Vec<u8>,
    cell: OnceLock<Result<IdedExpr, String>>,
}

impl Lazy {
    fn new(blob: Vec<u8>) -> Self {
        Lazy {
            blob,
            cell: OnceLock::new(),
        }
    }

    fn get(&self) -> Result<&IdedExpr, String> {
        self.cell
            .get_or_init(|| {
                pack::expr_from_blob(&self.blob)
                    .map(|e| ast::to_cel(&e))
                    .map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}

struct CompiledRule {
    when: Option<Lazy>,
    assert: Lazy,
    message: Option<Lazy>,
    severity: Option<Lazy>,
}

/// A pack ready to evaluate. Construction only decodes the pack's outline; each
/// expression is decoded the first time a document needs it, so a fresh policy
/// instance pays for the rules it runs, not for the whole pack.
pub struct Evaluator {
    wire: WirePack,
    rules: Vec<CompiledRule>,
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
        })
    }

    /// Decodes an encoded pack's outline; expressions are decoded on first use.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, PackError> {
        let wire = WirePack::decode(bytes)?;
        let rules = wire
            .rules
            .iter()
            .map(|r| CompiledRule {
                when: r.when.clone().map(Lazy::new),
                assert: Lazy::new(r.assert.clone()),
                message: r.message_expression.clone().map(Lazy::new),
                severity: r.severity_expression.clone().map(Lazy::new),
            })
            .collect();
        Ok(Evaluator { wire, rules })
    }

    /// Name, version, digest, schema and rule metadata of the pack.
    pub fn pack(&self) -> &WirePack {
        &self.wire
    }

    /// Evaluates every rule against every resource the document declares.
    pub fn evaluate(&self, input: &Input<'_>) -> Result<Outcome, RuleError> {
        let resources = model::normalize(input.document, input.source);
        let mut out = Outcome::default();
        if resources.is_empty() {
            return Ok(out);
        }
        let mut root = Context::default();
        register_functions(&mut root, input.as_of);
        root.add_variable_from_value("asOf", input.as_of.to_string());
        root.add_variable_from_value("settings", json_to_cel(input.settings));
        for res in &resources {
            let display = display_name(res);
            out.resources.push((res.kind.clone(), display.clone()));
            let object = if res.pointer.is_empty() {
                input.document
            } else {
                input
                    .document
                    .pointer(&res.pointer)
                    .unwrap_or(input.document)
            };
            let mut scope = root.new_inner_scope();
            scope.add_variable_from_value("resource", to_cel(res));
            scope.add_variable_from_value("object", json_to_cel(object));
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
                fn expr<'l>(
                    l: &'l Lazy,
                    fail: &dyn Fn(String) -> RuleError,
                ) -> Result<&'l IdedExpr, RuleError> {
                    l.get()
                        .map_err(|e| fail(format!("corrupt expression: {e}")))
                }
                if let Some(when) = &compiled.when {
                    match Cel::resolve(expr(when, &fail)?, &scope) {
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
                match Cel::resolve(expr(&compiled.assert, &fail)?, &scope) {
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
                let message = match &compiled.message {
                    Some(m) => match Cel::resolve(expr(m, &fail)?, &scope) {
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
                let severity = match &compiled.severity {
                    Some(s) => match Cel::resolve(expr(s, &fail)?, &scope) {
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
    match &r.namespace {
        Some(ns) => format!("{ns}/{}", r.name),
        None => r.name.clone(),
    }
}

fn type_name(v: &Cel) -> String {
    format!("{}", v.type_of())
}

fn to_cel<T: Serialize>(v: &T) -> Cel {
    cel_interpreter::to_value(v).unwrap_or(Cel::Null)
}

/// JSON to CEL. Whole numbers become `int` (CEL's default integer type, so
/// `settings.n * 2` works) unless they only fit in a `uint`.
fn json_to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(json_to_cel).collect())),
        Value::Object(m) => {
            let map: std::collections::HashMap<cel_interpreter::objects::Key, Cel> = m
                .iter()
                .map(|(k, v)| {
                    (
                        cel_interpreter::objects::Key::String(Arc::new(k.clone())),
                        json_to_cel(v),
                    )
                })
                .collect();
            Cel::Map(cel_interpreter::objects::Map { map: Arc::new(map) })
        }
    }
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
        retired: facts.is_some_and(|f| catalog::retired_at(f, as_of)),
        retirement_date: facts.and_then(|f| f.retirement_date),
        retirement_announced: facts.is_some_and(|f| f.retirement_date.is_some_and(|d| d >= as_of)),
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

fn register_functions(ctx: &mut Context<'_>, as_of: &str) {
    type R = Result<Cel, cel_interpreter::ExecutionError>;
    let as_of = as_of.to_string();
    ctx.add_function("sku", move |v: Cel| -> R {
        Ok(to_cel(&sku_view(text_arg(&v).unwrap_or(""), &as_of)))
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
/// Fields of `resource` (camelCase as CEL sees them).
pub const RESOURCE_FIELDS: &[&str] = &[
    "kind",
    "sourceKind",
    "name",
    "namespace",
    "display",
    "sku",
    "region",
    "minNodes",
    "maxNodes",
    "autoscale",
    "priority",
    "workload",
    "instanceCount",
    "distributed",
    "images",
    "gpuRequests",
    "rdmaRequests",
    "labels",
    "osType",
    "kubernetesVersion",
    "gpuInstanceProfile",
    "tolerations",
    "taints",
    "nodeSelection",
    "cuda",
    "cudaSource",
    "isolationRequired",
    "gpuOperator",
    "parentRegion",
    "parent",
    "unresolved",
];
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
        wire.rules[0].assert = vec![0xff, 0xff, 0xff];
        let broken = Evaluator {
            rules: vec![CompiledRule {
                when: None,
                assert: Lazy::new(vec![0xff; 3]),
                message: None,
                severity: None,
            }],
            wire,
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
