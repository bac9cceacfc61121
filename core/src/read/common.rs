//! Helpers every reader shares: JSON pointers, scalars, and the setters that fill a
//! [`Resource`] field together with its provenance.

use crate::compute::{CUDA_LABEL, GPU_OPERATOR_LABEL, ISOLATION_LABEL, Resource, WORKLOAD_LABEL};
use crate::{catalog, cuda, region};
use serde_json::Value;
use std::borrow::Cow;

/// JSON pointer escaping (RFC 6901).
pub fn escape(token: &str) -> String {
    escaped(token).into_owned()
}

/// `token` escaped for a JSON pointer, borrowed when it needs no escaping (nearly
/// every key: the readers build a pointer for every node they visit).
pub(crate) fn escaped(token: &str) -> Cow<'_, str> {
    // A byte scan: `contains(['~', '/'])` goes through the general char-set searcher,
    // which cost more than the rest of this function on a Pod's short keys.
    if token.bytes().any(|b| b == b'~' || b == b'/') {
        // One pass (`nvidia.com/gpu` and every `node.kubernetes.io/...` label need it).
        let mut out = String::with_capacity(token.len() + 4);
        for c in token.chars() {
            match c {
                '~' => out.push_str("~0"),
                '/' => out.push_str("~1"),
                c => out.push(c),
            }
        }
        Cow::Owned(out)
    } else {
        Cow::Borrowed(token)
    }
}

pub(crate) fn join(base: &str, token: &str) -> String {
    [base, "/", &escaped(token)].concat()
}

/// `base` + `/` + the decimal `index`: a pointer to a list item, without `format!`'s
/// machinery (the readers build one per container, variable and request).
pub(crate) fn item_ptr(base: &str, index: usize) -> String {
    let mut out = String::with_capacity(base.len() + 4);
    out.push_str(base);
    push_index(&mut out, index);
    out
}

/// Appends `/` and the decimal `index` to `ptr`.
pub(crate) fn push_index(ptr: &mut String, index: usize) {
    ptr.push('/');
    ptr.push_str(itoa::Buffer::new().format(index));
}

/// [`Value::pointer`] without its allocations: serde_json unescapes every token of
/// the pointer into a new `String` with two `replace`s, and the readers and the
/// evaluator look pointers up by the dozen per document (a tenth of a fresh
/// evaluation of a Pod). Same answers: `""` is the whole value, a pointer that does
/// not start with `/` finds nothing, and an array index is decimal with no sign and
/// no leading zero.
pub trait At {
    fn at(&self, pointer: &str) -> Option<&Value>;
}

impl At for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut target = self;
        for raw in pointer.strip_prefix('/')?.split('/') {
            let token = if raw.contains('~') {
                Cow::Owned(raw.replace("~1", "/").replace("~0", "~"))
            } else {
                Cow::Borrowed(raw)
            };
            target = match target {
                Value::Object(map) => map.get(token.as_ref())?,
                Value::Array(list) => list.get(array_index(&token)?)?,
                _ => return None,
            };
        }
        Some(target)
    }
}

fn array_index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
        return None;
    }
    token.parse().ok()
}

pub(crate) fn str_at<'a>(v: &'a Value, ptr: &str) -> Option<&'a str> {
    v.at(ptr).and_then(Value::as_str)
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

/// Sets `zones` from a `zones` / `availabilityZones` value: a list of zones as strings or
/// numbers (`["1", 2]`), or one zone (`"1"`, Terraform's `zone`). `literal` says whether a
/// string is a value rather than an expression the host could not resolve. An element
/// that is no literal zone (a deploy-time value: `null` once ARM expressions are
/// resolved, `${...}` in Terraform) leaves `zones` unresolved rather than half read.
/// Nothing is recorded for `null`, an empty list, or another shape.
pub(crate) fn set_zones(
    r: &mut Resource,
    v: Option<&Value>,
    ptr: String,
    literal: impl Fn(&str) -> bool,
) {
    let zone = |v: &Value| match v {
        Value::String(s) if literal(s) && !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let zones: Option<Vec<String>> = match v {
        Some(Value::Array(items)) if !items.is_empty() => items.iter().map(zone).collect(),
        Some(Value::String(s)) if s.trim().is_empty() => return,
        Some(one @ (Value::String(_) | Value::Number(_))) => zone(one).map(|z| vec![z]),
        _ => return,
    };
    match zones {
        Some(z) => r.zones = z,
        None => {
            if !r.unresolved.iter().any(|f| f == "zones") {
                r.unresolved.push("zones".into());
            }
        }
    }
    r.fields.insert("zones".into(), ptr);
}

pub(crate) fn merge_labels(r: &mut Resource, map: Option<&Value>, ptr: &str) {
    if let Some(Value::Object(m)) = map {
        for (k, v) in m {
            if let Some(t) = scalar_text(v) {
                r.fields
                    .entry(["labels.", k].concat())
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
            // The pointer is written only for the requests that are read (most are CPU
            // and memory).
            let p = || join(&[ptr, "/", section].concat(), k);
            if k == "nvidia.com/gpu" || k == "amd.com/gpu" || k.starts_with("nvidia.com/mig-") {
                let p = p();
                g += n;
                if let Some(profile) = k.strip_prefix("nvidia.com/mig-")
                    && r.gpu_instance_profile.is_none()
                {
                    r.gpu_instance_profile = Some(profile.to_string());
                    r.fields.insert("gpuInstanceProfile".into(), p.clone());
                }
                r.fields.entry("gpuRequests".into()).or_insert(p);
            } else if k.starts_with("rdma/") || k.starts_with("mellanox.com/") {
                d += n;
                r.fields.entry("rdmaRequests".into()).or_insert_with(p);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointer_helpers_write_what_format_writes() {
        for token in ["", "a", "a/b", "~", "~1", "a~b/c", "nvidia.com/gpu", "é/ü~"] {
            assert_eq!(escape(token), token.replace('~', "~0").replace('/', "~1"));
            assert_eq!(join("/x", token), format!("/x/{}", escape(token)));
        }
        for index in [0, 1, 9, 10, 99, 100, 4096, 1_000_007, usize::MAX] {
            assert_eq!(
                item_ptr("/spec/containers", index),
                format!("/spec/containers/{index}")
            );
            let mut ptr = String::from("/a");
            push_index(&mut ptr, index);
            assert_eq!(ptr, format!("/a/{index}"));
        }
    }

    #[test]
    fn at_finds_what_serde_json_pointer_finds() {
        let doc = json!({
            "a": {"b/c": [10, {"d~e": true}], "": {"x": 1}, "01": "key"},
            "list": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
            "s": "text"
        });
        for pointer in [
            "",
            "/",
            "/a",
            "/a/b~1c",
            "/a/b~1c/0",
            "/a/b~1c/1/d~0e",
            "/a/b~1c/01",
            "/a/b~1c/+1",
            "/a/b~1c/-1",
            "/a/b~1c/2",
            "/a/b/c",
            "/a//x",
            "/a/01",
            "/list/11",
            "/list/011",
            "/list/12",
            "/list/ 1",
            "/s/0",
            "a",
            "/missing",
            "/a/b~1c/1/d~0e/deeper",
            "/a/~2",
            "/a/b~01c",
        ] {
            assert_eq!(doc.at(pointer), doc.pointer(pointer), "`{pointer}`");
        }
    }

    #[test]
    fn join_escapes_only_what_needs_it() {
        assert_eq!(join("/spec", "containers"), "/spec/containers");
        assert_eq!(join("", "a/b~c"), "/a~1b~0c");
        assert_eq!(escape("plain"), "plain");
    }
}
