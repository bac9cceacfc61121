//! Write computeguard policies in Rust.
//!
//! Most rules fit in a CEL rule pack (`computeguard build pack.yaml`). This crate is
//! for the checks that do not: logic that needs loops, lookups, state across
//! resources or code you already have in Rust. A Rust policy is a `cdylib` crate
//! built for `wasm32-wasip2`; the result is a policy component like any other, loaded
//! with `computeguard check --policy my_policy.wasm` or listed under `policies:` in
//! `computeguard.yaml`, and usable by any Component Model host.
//!
//! The crate gives you:
//! - the types of the `computeguard:policy` WIT contract ([`Request`], [`Response`],
//!   [`Violation`], [`PolicyInfo`], ...) and the trait a policy implements
//!   ([`Guest`], also named [`Policy`]);
//! - [`export_policy!`], which exports your implementation as the component's
//!   `computeguard:policy/evaluator`;
//! - [`resources`], which turns a request's document into the same compute model
//!   ([`Resource`]) CEL rules see as `resource`, with the raw object next to it;
//! - [`violation`], which builds a finding whose path and resource reference match
//!   what the CEL runtime reports, so hosts point at the right file and line;
//! - [`parse_settings`] and [`resource_ref`], small helpers every policy needs;
//! - the catalog of VM sizes, regions and CUDA facts ([`catalog`], [`policy_core`]).
//!
//! # Example
//!
//! `Cargo.toml`:
//!
//! ```toml
//! [package]
//! name = "my-policy"
//! version = "0.1.0"
//! edition = "2024"
//!
//! [lib]
//! crate-type = ["cdylib"]
//!
//! [dependencies]
//! computeguard-sdk = { path = "../computeguard/guest/sdk" }
//! serde_json = "1"
//! ```
//!
//! `src/lib.rs`:
//!
//! ```ignore
//! use computeguard_sdk::{
//!     Error, Policy, PolicyInfo, Request, Response, RuleInfo, Severity, export_policy,
//!     parse_settings, resource_ref, resources, violation,
//! };
//!
//! const RULE: &str = "spot-only";
//!
//! struct SpotOnly;
//!
//! impl Policy for SpotOnly {
//!     fn metadata() -> PolicyInfo {
//!         PolicyInfo {
//!             name: "spot-only".into(),
//!             version: "0.1.0".into(),
//!             source_digest: String::new(),
//!             rules: vec![RuleInfo {
//!                 id: RULE.into(),
//!                 severity: Severity::Warning,
//!                 description: "Compute clusters use spot or low-priority nodes.".into(),
//!                 rationale: "Our sandbox subscription pays for interruptible capacity only.".into(),
//!                 remediation: "Set `tier: low_priority` on the cluster.".into(),
//!                 targets: vec!["aml-compute-cluster".into()],
//!             }],
//!             settings_schema: None,
//!         }
//!     }
//!
//!     fn validate_settings(settings: String) -> Result<(), String> {
//!         parse_settings(&settings).map(|_| ())
//!     }
//!
//!     fn evaluate(request: Request) -> Result<Response, Error> {
//!         let found = resources(&request)?;
//!         let mut violations = Vec::new();
//!         for (r, _object) in &found {
//!             if r.kind == "aml-compute-cluster" && r.priority.as_deref().unwrap_or("dedicated") == "dedicated" {
//!                 let message = format!("{} uses dedicated nodes; use low-priority nodes", r.display);
//!                 violations.push(
//!                     violation(RULE, Severity::Warning, message, r, "priority")
//!                         .with_remediation("Set `tier: low_priority` on the cluster."),
//!                 );
//!             }
//!         }
//!         Ok(Response {
//!             violations,
//!             resources: found.iter().map(|(r, _)| resource_ref(r)).collect(),
//!             patch: None,
//!         })
//!     }
//! }
//!
//! export_policy!(SpotOnly);
//! ```
//!
//! Build it with `cargo build --target wasm32-wasip2 --release` and check files with
//! `computeguard check --policy target/wasm32-wasip2/release/my_policy.wasm .`.
//! `guest/examples/gpu-owner` in the computeguard repository is a complete policy
//! with tests; `guest/sdk/README.md` walks through writing, building and testing one.
//!
//! # What a policy may use
//!
//! Hosts give policies no network, no files, no environment and a clock stuck at the
//! Unix epoch (judge time with `request.as_of`). `computeguard` refuses components
//! that import anything beyond `wasi:cli`, `wasi:io`, `wasi:clocks`, `wasi:random`,
//! `wasi:filesystem` and `computeguard:policy/types`; plain Rust with `std` on
//! `wasm32-wasip2` stays within that.

// wit-bindgen's generated bindings and export glue need `unsafe` (raw canonical-ABI
// pointers and `#[unsafe(export_name)]` functions).
#![allow(unsafe_code)]

use computeguard_policy_core::eval;
use computeguard_policy_core::model::{self, Source};
use serde_json::{Map, Value};

/// The bindings wit-bindgen generates for the `policy` world of `wit/policy.wit`.
///
/// Use the re-exports at the crate root instead; this module is public because the
/// [`export_policy!`] macro expands to paths inside it.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "policy",
        path: "../../wit",
        // The export macro is used from policy crates, not from this one.
        pub_export_macro: true,
        export_macro_name: "export",
        default_bindings_module: "computeguard_sdk::bindings",
    });
}

pub use bindings::computeguard::policy::types::{
    Error, Operation, PolicyInfo, Request, ResourceRef, Response, RuleInfo, Severity, SourceKind,
    Violation,
};
/// The trait a policy implements: `metadata`, `validate-settings` and `evaluate` of
/// the WIT `evaluator` interface.
pub use bindings::exports::computeguard::policy::evaluator::Guest;
/// Another name for [`Guest`]: `impl computeguard_sdk::Policy for MyPolicy`.
pub use bindings::exports::computeguard::policy::evaluator::Guest as Policy;

/// The compute model, catalog and domain functions shared with the CEL runtime.
pub use computeguard_policy_core as policy_core;
/// VM size, GPU architecture / CUDA and region facts: `catalog::sku("Standard_NC6")`.
pub use computeguard_policy_core::catalog;
/// One compute-model resource: what CEL rules see as `resource`.
pub use computeguard_policy_core::model::Resource;
/// JSON values, as [`resources`] returns the raw objects.
pub use serde_json;

/// Exports a type implementing [`Guest`] (alias [`Policy`]) as the component's
/// `computeguard:policy/evaluator`. Use it once per policy crate, at the crate root:
///
/// ```ignore
/// struct MyPolicy;
/// impl computeguard_sdk::Guest for MyPolicy { /* ... */ }
/// computeguard_sdk::export_policy!(MyPolicy);
/// ```
///
/// The exports are only emitted when compiling for `wasm32`. A native build of the
/// policy crate (`cargo test`, `cargo clippy`) gets no export symbols, so it links,
/// and its tests can call the `Guest` functions directly.
#[macro_export]
macro_rules! export_policy {
    ($ty:ident) => {
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::export!($ty with_types_in $crate::bindings);
    };
}

impl Violation {
    /// Sets what to change to fix the finding (the rule's remediation, usually).
    #[must_use]
    pub fn with_remediation(mut self, remediation: impl Into<String>) -> Self {
        self.remediation = remediation.into();
        self
    }
}

impl Severity {
    /// `error`, `warning` or `info`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// The compute-model source for a request's [`SourceKind`], as the CEL runtime maps it.
pub fn source(kind: SourceKind) -> Source {
    match kind {
        SourceKind::Kubernetes => Source::Kubernetes,
        SourceKind::AdmissionReview => Source::AdmissionReview,
        SourceKind::AzureMl => Source::AzureMl,
        _ => Source::Unknown,
    }
}

/// Parses the request's document and normalises it into compute-model resources,
/// exactly as the CEL runtime does. Each resource comes with the raw object it was
/// read from (the Kubernetes object inside an AdmissionReview, else the document):
/// what CEL rules see as `object`.
///
/// An empty list means the document declares no compute the model understands;
/// return a [`Response`] with no resources and the host skips the document.
///
/// # Errors
/// [`Error::InvalidDocument`] when the document is not valid JSON.
pub fn resources(request: &Request) -> Result<Vec<(Resource, Value)>, Error> {
    let document: Value = serde_json::from_str(&request.document)
        .map_err(|e| Error::InvalidDocument(format!("document is not valid JSON: {e}")))?;
    let found = model::normalize(&document, source(request.source_kind));
    Ok(found
        .into_iter()
        .map(|r| {
            let object = if r.pointer.is_empty() {
                document.clone()
            } else {
                document
                    .pointer(&r.pointer)
                    .cloned()
                    .unwrap_or_else(|| document.clone())
            };
            (r, object)
        })
        .collect())
}

/// How findings name a resource: its kind and `namespace/name` (or `name`), as the
/// CEL runtime reports it.
pub fn resource_ref(resource: &Resource) -> ResourceRef {
    ResourceRef {
        kind: resource.kind.clone(),
        name: eval::display_name(resource),
    }
}

/// A finding about `resource`. `field` is a compute-model field name (`sku`,
/// `minNodes`, `labels`, `labels.owner`, `region`, ...); the finding's path is where
/// the document wrote that field, else where it wrote the size (`sku`), else the
/// resource itself: the same fallback the CEL runtime uses for a rule's `field`.
/// The remediation is empty; add it with [`Violation::with_remediation`].
pub fn violation(
    rule: impl Into<String>,
    severity: Severity,
    message: impl Into<String>,
    resource: &Resource,
    field: &str,
) -> Violation {
    let path = resource
        .fields
        .get(field)
        .or_else(|| resource.fields.get("sku"))
        .cloned()
        .unwrap_or_else(|| resource.pointer.clone());
    Violation {
        rule: rule.into(),
        severity,
        message: message.into(),
        path,
        remediation: String::new(),
        resource: resource_ref(resource),
    }
}

/// Parses settings text (`request.settings` or the argument of `validate_settings`)
/// into a JSON object. Empty text means no settings (`{}`).
///
/// # Errors
/// A message for `validate_settings` (or [`Error::InvalidSettings`]) when the text
/// is not JSON or not an object.
pub fn parse_settings(settings: &str) -> Result<Map<String, Value>, String> {
    if settings.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(settings) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err("settings must be a JSON object".into()),
        Err(e) => Err(format!("settings are not valid JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(document: &str) -> Request {
        Request {
            document: document.into(),
            source_kind: SourceKind::Unknown,
            operation: Operation::None,
            settings: "{}".into(),
            as_of: "2026-11-22".into(),
        }
    }

    #[test]
    fn resources_normalise_like_the_cel_runtime() -> Result<(), String> {
        let doc = r#"{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"object": {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ml"},
                "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "standard_nc6"},
                         "containers": []}}}}"#;
        let found = resources(&request(doc)).map_err(|e| format!("{e:?}"))?;
        assert_eq!(found.len(), 1);
        let (r, object) = &found[0];
        assert_eq!(r.sku.as_deref(), Some("Standard_NC6"));
        assert_eq!(object["kind"], "Pod", "the object inside the review");
        let v = violation("r", Severity::Error, "m", r, "labels").with_remediation("fix");
        assert_eq!(
            v.path,
            "/request/object/spec/nodeSelector/node.kubernetes.io~1instance-type"
        );
        assert_eq!(
            (v.resource.kind.as_str(), v.resource.name.as_str()),
            ("k8s-workload", "ml/p")
        );
        assert_eq!(v.remediation, "fix");
        Ok(())
    }

    #[test]
    fn violation_path_prefers_the_field_then_sku_then_the_resource() {
        let mut r = Resource {
            kind: "aml-compute-cluster".into(),
            name: "c".into(),
            pointer: String::new(),
            ..Resource::default()
        };
        assert_eq!(violation("r", Severity::Info, "m", &r, "sku").path, "");
        r.fields.insert("sku".into(), "/size".into());
        r.fields.insert("minNodes".into(), "/min_instances".into());
        assert_eq!(
            violation("r", Severity::Info, "m", &r, "minNodes").path,
            "/min_instances"
        );
        assert_eq!(
            violation("r", Severity::Info, "m", &r, "region").path,
            "/size"
        );
    }

    #[test]
    fn invalid_json_is_an_invalid_document() {
        assert!(matches!(
            resources(&request("{")),
            Err(Error::InvalidDocument(m)) if m.starts_with("document is not valid JSON")
        ));
        assert!(matches!(resources(&request("[1]")), Ok(v) if v.is_empty()));
    }

    #[test]
    fn settings_are_an_object_or_empty() {
        assert_eq!(parse_settings("  ").map(|m| m.len()), Ok(0));
        assert_eq!(parse_settings(r#"{"a": 1}"#).map(|m| m.len()), Ok(1));
        assert_eq!(
            parse_settings("[]"),
            Err("settings must be a JSON object".into())
        );
        assert!(parse_settings("{").is_err());
    }
}
