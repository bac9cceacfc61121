//! Fuzz target body for the normaliser, as a plain function so that both `cargo fuzz`
//! (nightly, `fuzz/`) and a stable `cargo test` run it. Not part of the stable API.

use crate::model::{Resource, Source, normalize};
use serde_json::Value;

/// Every source kind a host may pass.
const SOURCES: [Source; 7] = [
    Source::Kubernetes,
    Source::AdmissionReview,
    Source::AzureMl,
    Source::Arm,
    Source::Bicep,
    Source::Terraform,
    Source::Unknown,
];

/// Fuzz body: normalises `data` (when it is JSON) as every source kind and checks the model's
/// promises: provenance is a JSON pointer, and a field listed as unresolved has no value.
pub fn normalize_json(data: &[u8]) {
    if let Ok(doc) = serde_json::from_slice::<Value>(data) {
        normalize_value(&doc);
    }
}

/// [`normalize_json`] for a value already parsed.
pub fn normalize_value(doc: &Value) {
    for source in SOURCES {
        for resource in normalize(doc, source) {
            check(&resource);
        }
    }
}

fn check(r: &Resource) {
    for pointer in r.fields.values().chain(std::iter::once(&r.pointer)) {
        assert!(
            pointer.is_empty() || pointer.starts_with('/'),
            "`{pointer}` is not a JSON pointer in {r:?}"
        );
    }
    for field in &r.unresolved {
        let has_value = match field.as_str() {
            "sku" => r.sku.is_some(),
            "region" => r.region.is_some(),
            "minNodes" => r.min_nodes.is_some(),
            "maxNodes" => r.max_nodes.is_some(),
            "parentRegion" => r.parent_region.is_some(),
            _ => false,
        };
        assert!(!has_value, "`{field}` is both unresolved and set in {r:?}");
    }
    assert!(!r.display.is_empty(), "no display name: {r:?}");
}
