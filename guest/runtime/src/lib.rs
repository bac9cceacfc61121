//! The CEL policy runtime component.
//!
//! Built for `wasm32-wasip2`, it exports `computeguard:policy/evaluator` and imports
//! `computeguard:policy/pack`, which `computeguard build` satisfies by composing it
//! with a generated component holding the pre-parsed rule pack. The result is one
//! self-contained policy component that imports nothing of computeguard.
//!
//! Each instance decodes its pack once, on first use; hosts that instantiate per
//! evaluation pay the decode (microseconds), never the CEL parser. The `prepare`
//! export does all of that decoding at once, so a host can snapshot an instance
//! after it (computeguard's engine does, with wasmtime-wizer) and start every
//! fresh instance from the snapshot.

// wit-bindgen's generated export glue needs `unsafe`.
#![allow(unsafe_code)]

use computeguard_policy_core::eval::{Evaluator, Input};
use computeguard_policy_core::model::Source;
use computeguard_policy_core::pack::Severity as PackSeverity;
use computeguard_policy_core::settings;
use std::sync::OnceLock;

wit_bindgen::generate!({
    world: "cel-runtime",
    path: "../../wit",
});

use computeguard::policy::pack;
use computeguard::policy::types::{
    Error, PolicyInfo, Request, ResourceRef, Response, RuleInfo, Severity, SourceKind, Violation,
};
use exports::computeguard::policy::context::Guest as ContextGuest;
use exports::computeguard::policy::evaluator::Guest as EvaluatorGuest;
use exports::computeguard::policy::read_model::Guest as ReadModelGuest;

struct Runtime;

/// `memcmp`, eight bytes at a time, linked instead of wasi-libc's byte loop: every string
/// comparison of the readers and of CEL ends here (see `computeguard_policy_core::bytes`).
///
/// # Safety
///
/// C's contract: `a` and `b` are each valid for reads of `n` bytes.
#[cfg(target_family = "wasm")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller's contract is `compare`'s.
    unsafe { computeguard_policy_core::bytes::compare(a, b, n) }
}

/// Size classes over wasi-libc's `malloc`: a sixth of an evaluation was spent in
/// dlmalloc (see `computeguard_policy_core::heap`).
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
// SAFETY: the component is single-threaded (wasm32-wasip2 has no threads).
static HEAP: computeguard_policy_core::heap::Heap =
    unsafe { computeguard_policy_core::heap::Heap::new() };

/// The instance's pack, decoded on first use. A pack that does not decode is
/// reported by every call rather than trapping.
fn evaluator() -> Result<&'static Evaluator, String> {
    static EVALUATOR: OnceLock<Result<Evaluator, String>> = OnceLock::new();
    EVALUATOR
        .get_or_init(|| Evaluator::from_bytes(&pack::bytes()).map_err(|e| e.to_string()))
        .as_ref()
        .map_err(Clone::clone)
}

fn severity(s: PackSeverity) -> Severity {
    match s {
        PackSeverity::Error => Severity::Error,
        PackSeverity::Warning => Severity::Warning,
        PackSeverity::Info => Severity::Info,
    }
}

/// The pack's settings schema, parsed and checked once per instance (and so held by a
/// pre-initialised snapshot, which `prepare` warms); `{"type": "object"}` when the pack
/// has none.
fn settings_schema(e: &Evaluator) -> Result<&'static settings::Schema, String> {
    static SCHEMA: OnceLock<Result<settings::Schema, String>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| match &e.pack().settings_schema {
            Some(text) => serde_json::from_str(text)
                .map(settings::Schema::new)
                .map_err(|err| {
                    format!(
                        "the policy's settings schema is not valid JSON ({err}); no settings are accepted"
                    )
                }),
            None => Ok(settings::Schema::new(serde_json::json!({"type": "object"}))),
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Parses settings and checks them against the pack's settings schema (see
/// `computeguard_policy_core::settings`); without a schema they must be an object.
/// The error names every field at fault, each with what was expected.
fn settings_value(e: &Evaluator, settings: &str) -> Result<serde_json::Value, String> {
    let text = if settings.trim().is_empty() {
        "{}"
    } else {
        settings
    };
    let value = serde_json::from_str::<serde_json::Value>(text)
        .map_err(|e| format!("settings are not valid JSON: {e}"))?;
    let problems = settings_schema(e)?.validate(&value);
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(settings::render(&problems))
    }
}

/// Free heap the pre-initialised snapshot starts with.
///
/// The snapshot's linear memory is as large as the heap was when `prepare` returned. An
/// evaluation that then needs more memory grows it, and growing, and shrinking it back for
/// the next instance, changes page protections in the host (`mprotect`): on a webhook
/// running evaluations on several threads, every shrink interrupts the other CPUs to flush
/// their TLBs. With this much already allocated and freed (the allocator keeps it: a
/// WASI heap never shrinks), an evaluation of a typical document never grows memory.
/// The pages are zero and never touched unless used, so an instance costs no more.
/// Measurements: docs/benchmarks.md, section 10.
const HEAP_RESERVE: usize = 1 << 20;

fn reserve_heap() {
    // black_box: an allocation freed unused could otherwise be optimised away.
    drop(std::hint::black_box(Vec::<u8>::with_capacity(HEAP_RESERVE)));
}

impl Guest for Runtime {
    fn prepare() {
        // A pack that does not decode is reported by the next call, as without `prepare`.
        if let Ok(e) = evaluator() {
            e.prepare();
            let _ = settings_schema(e);
        }
        reserve_heap();
        #[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
        // SAFETY: the component is single-threaded, and nothing else is allocating.
        unsafe {
            HEAP.start_fresh();
        }
    }
}

impl ContextGuest for Runtime {
    /// Checks the whole context, then installs it: catalog overlays over the built-in
    /// sizes, and the subscription's SKU and usage lists for the rules that read them.
    /// A refused context changes nothing. The engine calls it before `prepare`, so a
    /// pre-initialised snapshot starts with the context already in memory.
    fn configure(context: String) -> Result<(), String> {
        let parsed =
            computeguard_policy_core::context::parse(&context).map_err(|e| e.to_string())?;
        computeguard_policy_core::context::install(parsed).map_err(|e| e.to_string())
    }
}

impl EvaluatorGuest for Runtime {
    fn metadata() -> PolicyInfo {
        match evaluator() {
            Ok(e) => {
                let p = e.pack();
                PolicyInfo {
                    name: p.name.clone(),
                    version: p.version.clone(),
                    source_digest: p.source_digest.clone(),
                    rules: p
                        .rules
                        .iter()
                        .map(|w| &w.meta)
                        .map(|r| RuleInfo {
                            id: r.id.clone(),
                            severity: severity(r.severity),
                            description: r.description.clone(),
                            rationale: r.rationale.clone(),
                            remediation: r.remediation.clone(),
                            targets: r.targets.clone(),
                        })
                        .collect(),
                    settings_schema: p.settings_schema.clone(),
                }
            }
            Err(e) => PolicyInfo {
                name: "<broken pack>".into(),
                version: "0.0.0".into(),
                source_digest: String::new(),
                rules: Vec::new(),
                settings_schema: Some(format!("{{\"x-error\": {}}}", serde_json::Value::String(e))),
            },
        }
    }

    fn validate_settings(settings: String) -> Result<(), String> {
        settings_value(evaluator()?, &settings).map(|_| ())
    }

    fn evaluate(request: Request) -> Result<Response, Error> {
        let e = evaluator().map_err(Error::RuleFailed)?;
        let document: serde_json::Value = serde_json::from_str(&request.document)
            .map_err(|err| Error::InvalidDocument(format!("document is not valid JSON: {err}")))?;
        if !computeguard_policy_core::read::readable(&document) {
            return Err(Error::InvalidDocument(format!(
                "expected a JSON object (or an array of Azure resources with `id`), got {}",
                settings::describe(&document)
            )));
        }
        let settings = settings_value(e, &request.settings).map_err(Error::InvalidSettings)?;
        let source = match request.source_kind {
            SourceKind::Kubernetes => Source::Kubernetes,
            SourceKind::AdmissionReview => Source::AdmissionReview,
            SourceKind::AzureMl => Source::AzureMl,
            SourceKind::Arm => Source::Arm,
            SourceKind::Bicep => Source::Bicep,
            SourceKind::Terraform => Source::Terraform,
            _ => Source::Unknown,
        };
        if let Some(mismatch) = computeguard_policy_core::read::source_mismatch(&document, source) {
            return Err(Error::InvalidDocument(mismatch));
        }
        let outcome = e
            .evaluate(&Input {
                document: &document,
                source,
                settings: &settings,
                as_of: &request.as_of,
            })
            .map_err(|err| Error::RuleFailed(err.to_string()))?;
        Ok(response(outcome))
    }
}

impl ReadModelGuest for Runtime {
    /// `evaluate` from the model the host read: the settings are checked as there, the
    /// document is not read again (the host vouches for it, see `read-model` in the WIT).
    fn evaluate_read(request: Request, model: Vec<u8>) -> Result<Response, Error> {
        let e = evaluator().map_err(Error::RuleFailed)?;
        let resources = computeguard_policy_core::handoff::decode(&model)
            .map_err(|err| Error::InvalidDocument(err.to_string()))?;
        let settings = settings_value(e, &request.settings).map_err(Error::InvalidSettings)?;
        let outcome = e
            .evaluate_read(resources, &request.document, &settings, &request.as_of)
            .map_err(|err| Error::RuleFailed(err.to_string()))?;
        Ok(response(outcome))
    }
}

/// The WIT response of an evaluation's outcome.
fn response(outcome: computeguard_policy_core::eval::Outcome) -> Response {
    Response {
        violations: outcome
            .violations
            .into_iter()
            .map(|v| Violation {
                rule: v.rule,
                severity: severity(v.severity),
                message: v.message,
                path: v.path,
                remediation: v.remediation,
                resource: ResourceRef {
                    kind: v.resource_kind,
                    name: v.resource_name,
                },
            })
            .collect(),
        resources: outcome
            .resources
            .into_iter()
            .map(|(kind, name)| ResourceRef { kind, name })
            .collect(),
        patch: None,
    }
}

export!(Runtime);
