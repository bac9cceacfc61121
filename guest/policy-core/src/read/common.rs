//! Helpers every reader shares: JSON pointers, scalars, and the setters that fill a
//! [`Resource`] field together with its provenance.

use crate::compute::{CUDA_LABEL, GPU_OPERATOR_LABEL, ISOLATION_LABEL, Resource, WORKLOAD_LABEL};
use crate::{catalog, cuda, region};
use serde_json::Value;

/// JSON pointer escaping (RFC 6901).
pub fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

pub(crate) fn join(base: &str, token: &str) -> String {
    format!("{base}/{}", escape(token))
}

pub(crate) fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.pointer(ptr).and_then(Value::as_str)
}

pub(crate) fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(crate) fn num_of(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub(crate) fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Sets `sku` (canonical spelling when the catalog knows it) and remembers where it came from.
pub(crate) fn set_sku(r: &mut Resource, raw: &str, ptr: String) {
    let raw = raw.trim();
    if raw.is_empty() {
        return;
    }
    r.sku = Some(catalog::sku(raw).map_or_else(|| raw.to_string(), |f| f.name.to_string()));
    r.fields.insert("sku".into(), ptr);
}

pub(crate) fn set_region(r: &mut Resource, raw: &str, ptr: String) {
    if raw.trim().is_empty() {
        return;
    }
    r.region = Some(region::normalize(raw));
    r.fields.insert("region".into(), ptr);
}

pub(crate) fn merge_labels(r: &mut Resource, map: Option<&Value>, ptr: &str) {
    if let Some(Value::Object(m)) = map {
        for (k, v) in m {
            if let Some(t) = scalar_text(v) {
                r.fields
                    .entry(format!("labels.{k}"))
                    .or_insert_with(|| join(ptr, k));
                r.labels.insert(k.clone(), t);
            }
        }
    }
}

/// Workload intent: explicit label first, else what the kind implies.
pub(crate) fn resolve_intent(r: &mut Resource, implied: &str) {
    let explicit = r
        .labels
        .get(WORKLOAD_LABEL)
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| ["training", "inference", "batch", "interactive"].contains(&s.as_str()));
    r.workload = explicit.unwrap_or_else(|| implied.to_string());
    if let Some(iso) = r.labels.get(ISOLATION_LABEL) {
        r.isolation_required = iso.trim().eq_ignore_ascii_case("required");
    }
    if let Some(op) = r.labels.get(GPU_OPERATOR_LABEL) {
        r.gpu_operator = op.trim().eq_ignore_ascii_case("true");
    }
}

/// CUDA: a declared label wins; then environment variables; then the newest version
/// inferred from an image.
pub(crate) fn resolve_cuda(
    r: &mut Resource,
    env: &[(String, String, String)],
    images: &[(String, String)],
) {
    if let Some(declared) = r.labels.get(CUDA_LABEL).cloned() {
        if let Some(ptr) = r.fields.get(&format!("labels.{CUDA_LABEL}")).cloned() {
            r.fields.insert("cuda".into(), ptr);
        }
        r.cuda = Some(declared.trim().to_string());
        r.cuda_source = Some(format!("label {CUDA_LABEL}"));
        return;
    }
    for (name, value, ptr) in env {
        if let Some(v) = cuda::cuda_of_env(name, value) {
            r.cuda = Some(v);
            r.cuda_source = Some(format!("environment variable {name}"));
            r.fields.insert("cuda".into(), ptr.clone());
            return;
        }
    }
    let mut best: Option<(crate::version::Version, String, &str, &str)> = None;
    for (image, ptr) in images {
        if let Some(v) = cuda::cuda_of_image(image)
            && let Some(parsed) = crate::version::Version::parse(&v)
            && best.as_ref().is_none_or(|(b, ..)| parsed > *b)
        {
            best = Some((parsed, v, image, ptr));
        }
    }
    if let Some((_, v, image, ptr)) = best {
        r.cuda = Some(v);
        r.cuda_source = Some(format!("image {image}"));
        r.fields.insert("cuda".into(), ptr.to_string());
    }
}

/// GPU and RDMA device counts of one container's `resources` (limits win over requests).
pub(crate) fn device_requests(r: &mut Resource, res: Option<&Value>, ptr: &str) -> (f64, f64) {
    let mut gpus = 0.0;
    let mut rdma = 0.0;
    for section in ["limits", "requests"] {
        let Some(Value::Object(m)) = res.and_then(|v| v.get(section)) else {
            continue;
        };
        let (mut g, mut d) = (0.0, 0.0);
        for (k, v) in m {
            let n = num_of(v).unwrap_or(0.0);
            let p = join(&format!("{ptr}/{section}"), k);
            if k == "nvidia.com/gpu" || k == "amd.com/gpu" || k.starts_with("nvidia.com/mig-") {
                g += n;
                r.fields.entry("gpuRequests".into()).or_insert(p.clone());
                if let Some(profile) = k.strip_prefix("nvidia.com/mig-")
                    && r.gpu_instance_profile.is_none()
                {
                    r.gpu_instance_profile = Some(profile.to_string());
                    r.fields.insert("gpuInstanceProfile".into(), p.clone());
                }
            } else if k.starts_with("rdma/") || k.starts_with("mellanox.com/") {
                d += n;
                r.fields.entry("rdmaRequests".into()).or_insert(p);
            }
        }
        if g > 0.0 || d > 0.0 {
            gpus = g;
            rdma = d;
            break;
        }
    }
    (gpus, rdma)
}
