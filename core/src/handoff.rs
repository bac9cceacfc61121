//! The compute model as bytes: what a host that has already read a document hands to the
//! runtime, so that the sandbox does not parse and read the same document again.
//!
//! computeguard's webhook reads every object natively before it starts a sandbox (to
//! skip objects that declare no compute and to find its template); the runtime then
//! read the same object again, which was a third of its work for a GPU Pod
//! (docs/benchmarks.md, section 26). With the model handed over, the runtime evaluates
//! the resources it is given ([`crate::eval::Evaluator::evaluate_read`]).
//!
//! The encoding is private to one build of computeguard (host and runtime are built from
//! the same core): the first byte names its version and a decoder refuses any other.
//! Every field of [`Resource`] is written, in declaration order:
//!
//! | type | bytes |
//! |---|---|
//! | string | length (u32, little-endian), then UTF-8 |
//! | `bool` | 0 or 1 |
//! | `Option<T>` | 0, or 1 then `T` |
//! | `i64`, `f64` | 8 bytes, little-endian (`f64` as its bits) |
//! | list, map | count (u32), then the items (a map's as key, value) |
//! | JSON item (`tolerations`) | its JSON text, as a string |
//!
//! A decoder refuses truncated input, trailing bytes, text that is not UTF-8 and counts
//! larger than the input could hold, so a damaged model is an error, never a different
//! model.
//!
//! Not postcard, which the pack uses ([`crate::pack`]): `Resource`'s serde form is the
//! one reports print, without the pointers findings need (`pointer`, `role`, `fields`),
//! and postcard cannot read a JSON value (`tolerations`) back.

use crate::compute::Resource;
use serde_json::Value;
use std::collections::BTreeMap;

/// The encoding's version: the first byte of every encoded model.
pub const VERSION: u8 = 1;

/// Why bytes are not an encoded model. `at` is the offset of the byte at fault.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are named by the variants' messages
pub enum HandoffError {
    /// Encoded by another version of computeguard.
    #[error("the model is encoded with version {found}; this runtime reads version {VERSION}")]
    Version { found: u8 },
    /// Shorter than what it declares.
    #[error("the model ends early, at byte {at}")]
    Truncated { at: usize },
    /// Longer than what it declares.
    #[error("the model has {extra} bytes after its last resource")]
    Trailing { extra: usize },
    /// A string that is not UTF-8.
    #[error("the model holds text that is not UTF-8, at byte {at}")]
    Utf8 { at: usize },
    /// A JSON item that does not parse.
    #[error("the model holds a JSON item that does not parse, at byte {at}: {reason}")]
    Json { at: usize, reason: String },
    /// A tag byte outside its values.
    #[error("the model holds an invalid tag {tag} at byte {at}")]
    Tag { at: usize, tag: u8 },
}

/// `resources` as bytes ([`decode`] reads them back).
pub fn encode(resources: &[Resource]) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(256 * resources.len().max(1)));
    w.0.push(VERSION);
    w.len(resources.len());
    for r in resources {
        // Every field by name: a field added to `Resource` does not compile here until
        // it is written (and `decode` does not compile until it is read).
        let Resource {
            kind,
            source_kind,
            name,
            namespace,
            display,
            sku,
            region,
            zones,
            min_nodes,
            max_nodes,
            autoscale,
            priority,
            workload,
            instance_count,
            distributed,
            images,
            gpu_requests,
            rdma_requests,
            labels,
            os_type,
            kubernetes_version,
            gpu_instance_profile,
            pool_mode,
            os_sku,
            gpu_driver,
            preset,
            tolerations,
            taints,
            node_selection,
            cuda,
            cuda_source,
            isolation_required,
            gpu_operator,
            parent_region,
            parent,
            unresolved,
            azure_id,
            pointer,
            role,
            fields,
        } = r;
        w.str(kind);
        w.str(source_kind);
        w.str(name);
        w.opt_str(namespace);
        w.str(display);
        w.opt_str(sku);
        w.opt_str(region);
        w.strs(zones);
        w.opt_i64(*min_nodes);
        w.opt_i64(*max_nodes);
        w.opt_bool(*autoscale);
        w.opt_str(priority);
        w.str(workload);
        w.opt_i64(*instance_count);
        w.bool(*distributed);
        w.strs(images);
        w.f64(*gpu_requests);
        w.f64(*rdma_requests);
        w.map(labels);
        w.opt_str(os_type);
        w.opt_str(kubernetes_version);
        w.opt_str(gpu_instance_profile);
        w.opt_str(pool_mode);
        w.opt_str(os_sku);
        w.opt_str(gpu_driver);
        w.opt_str(preset);
        w.len(tolerations.len());
        for t in tolerations {
            w.str(&t.to_string());
        }
        w.strs(taints);
        w.map(node_selection);
        w.opt_str(cuda);
        w.opt_str(cuda_source);
        w.bool(*isolation_required);
        w.bool(*gpu_operator);
        w.opt_str(parent_region);
        w.opt_str(parent);
        w.strs(unresolved);
        w.opt_str(azure_id);
        w.str(pointer);
        w.opt_str(role);
        w.map(fields);
    }
    w.0
}

/// The resources [`encode`] wrote.
pub fn decode(bytes: &[u8]) -> Result<Vec<Resource>, HandoffError> {
    let mut r = Reader { bytes, at: 0 };
    let version = r.byte()?;
    if version != VERSION {
        return Err(HandoffError::Version { found: version });
    }
    let count = r.count()?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(Resource {
            kind: r.string()?,
            source_kind: r.string()?,
            name: r.string()?,
            namespace: r.opt_string()?,
            display: r.string()?,
            sku: r.opt_string()?,
            region: r.opt_string()?,
            zones: r.strings()?,
            min_nodes: r.opt_i64()?,
            max_nodes: r.opt_i64()?,
            autoscale: r.opt_bool()?,
            priority: r.opt_string()?,
            workload: r.string()?,
            instance_count: r.opt_i64()?,
            distributed: r.bool()?,
            images: r.strings()?,
            gpu_requests: r.f64()?,
            rdma_requests: r.f64()?,
            labels: r.map()?,
            os_type: r.opt_string()?,
            kubernetes_version: r.opt_string()?,
            gpu_instance_profile: r.opt_string()?,
            pool_mode: r.opt_string()?,
            os_sku: r.opt_string()?,
            gpu_driver: r.opt_string()?,
            preset: r.opt_string()?,
            tolerations: r.json_items()?,
            taints: r.strings()?,
            node_selection: r.map()?,
            cuda: r.opt_string()?,
            cuda_source: r.opt_string()?,
            isolation_required: r.bool()?,
            gpu_operator: r.bool()?,
            parent_region: r.opt_string()?,
            parent: r.opt_string()?,
            unresolved: r.strings()?,
            azure_id: r.opt_string()?,
            pointer: r.string()?,
            role: r.opt_string()?,
            fields: r.map()?,
        });
    }
    if r.at != bytes.len() {
        return Err(HandoffError::Trailing {
            extra: bytes.len() - r.at,
        });
    }
    Ok(out)
}

struct Writer(Vec<u8>);

impl Writer {
    fn len(&mut self, n: usize) {
        // A model is read from documents far below 4 GiB; saturating keeps the
        // function total (a decoder then finds the input too short).
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        self.0.extend_from_slice(&n.to_le_bytes());
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn opt_str(&mut self, s: &Option<String>) {
        match s {
            Some(s) => {
                self.0.push(1);
                self.str(s);
            }
            None => self.0.push(0),
        }
    }
    fn strs(&mut self, list: &[String]) {
        self.len(list.len());
        for s in list {
            self.str(s);
        }
    }
    fn map(&mut self, map: &BTreeMap<String, String>) {
        self.len(map.len());
        for (k, v) in map {
            self.str(k);
            self.str(v);
        }
    }
    fn bool(&mut self, b: bool) {
        self.0.push(u8::from(b));
    }
    fn opt_bool(&mut self, b: Option<bool>) {
        self.0.push(match b {
            None => 0,
            Some(false) => 1,
            Some(true) => 2,
        });
    }
    fn opt_i64(&mut self, n: Option<i64>) {
        match n {
            Some(n) => {
                self.0.push(1);
                self.0.extend_from_slice(&n.to_le_bytes());
            }
            None => self.0.push(0),
        }
    }
    fn f64(&mut self, f: f64) {
        self.0.extend_from_slice(&f.to_bits().to_le_bytes());
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], HandoffError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|end| *end <= self.bytes.len())
            .ok_or(HandoffError::Truncated { at: self.at })?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn byte(&mut self) -> Result<u8, HandoffError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<usize, HandoffError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    /// A count of items, each at least one byte: more than the rest of the input could
    /// hold is refused before anything is allocated for it.
    fn count(&mut self) -> Result<usize, HandoffError> {
        let at = self.at;
        let n = self.u32()?;
        if n > self.bytes.len() - self.at {
            return Err(HandoffError::Truncated { at });
        }
        Ok(n)
    }
    fn string(&mut self) -> Result<String, HandoffError> {
        let n = self.u32()?;
        let at = self.at;
        let b = self.take(n)?;
        std::str::from_utf8(b)
            .map(str::to_string)
            .map_err(|_| HandoffError::Utf8 { at })
    }
    fn tag(&mut self, max: u8) -> Result<u8, HandoffError> {
        let at = self.at;
        match self.byte()? {
            tag if tag <= max => Ok(tag),
            tag => Err(HandoffError::Tag { at, tag }),
        }
    }
    fn opt_string(&mut self) -> Result<Option<String>, HandoffError> {
        Ok(match self.tag(1)? {
            0 => None,
            _ => Some(self.string()?),
        })
    }
    fn strings(&mut self) -> Result<Vec<String>, HandoffError> {
        let n = self.count()?;
        (0..n).map(|_| self.string()).collect()
    }
    fn map(&mut self) -> Result<BTreeMap<String, String>, HandoffError> {
        let n = self.count()?;
        let mut out = BTreeMap::new();
        for _ in 0..n {
            let k = self.string()?;
            out.insert(k, self.string()?);
        }
        Ok(out)
    }
    fn json_items(&mut self) -> Result<Vec<Value>, HandoffError> {
        let n = self.count()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let at = self.at;
            let text = self.string()?;
            out.push(serde_json::from_str(&text).map_err(|e| HandoffError::Json {
                at,
                reason: e.to_string(),
            })?);
        }
        Ok(out)
    }
    fn bool(&mut self) -> Result<bool, HandoffError> {
        Ok(self.tag(1)? == 1)
    }
    fn opt_bool(&mut self) -> Result<Option<bool>, HandoffError> {
        Ok(match self.tag(2)? {
            0 => None,
            1 => Some(false),
            _ => Some(true),
        })
    }
    fn opt_i64(&mut self) -> Result<Option<i64>, HandoffError> {
        Ok(match self.tag(1)? {
            0 => None,
            _ => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Some(i64::from_le_bytes(a))
            }
        })
    }
    fn f64(&mut self) -> Result<f64, HandoffError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_bits(u64::from_le_bytes(a)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::Source;
    use serde_json::json;

    fn sample() -> Vec<Resource> {
        let doc = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "trainer", "namespace": "ml", "labels": {"computeguard.io/cuda": "12.4"}},
            "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "Standard_NC6"},
                "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
                "containers": [{"name": "train", "image": "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
                    "resources": {"limits": {"nvidia.com/gpu": 1}}}]}});
        let mut out = crate::read::normalize(&doc, Source::Kubernetes);
        // Every kind of value, set or not, in one resource.
        let mut full = out[0].clone();
        full.min_nodes = Some(-3);
        full.max_nodes = Some(i64::MAX);
        full.autoscale = Some(false);
        full.zones = vec!["1".into(), "é".into()];
        full.gpu_requests = 0.5;
        full.rdma_requests = f64::MAX;
        full.unresolved = vec!["sku".into()];
        full.role = None;
        out.push(full);
        out.push(Resource::default());
        out
    }

    #[test]
    fn what_is_encoded_decodes_to_the_same_resources() {
        let resources = sample();
        assert_eq!(decode(&encode(&resources)), Ok(resources));
        assert_eq!(decode(&encode(&[])), Ok(Vec::new()));
    }

    #[test]
    fn damaged_bytes_are_refused_never_read_as_another_model() {
        let bytes = encode(&sample());
        // Every prefix is an error (the empty one too), never a shorter model.
        for end in 0..bytes.len() {
            assert!(
                decode(&bytes[..end]).is_err(),
                "a prefix of {end} bytes decoded"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode(&longer), Err(HandoffError::Trailing { extra: 1 }));
        let mut other = bytes.clone();
        other[0] = VERSION + 1;
        assert_eq!(
            decode(&other),
            Err(HandoffError::Version { found: VERSION + 1 })
        );
        // A count larger than the input is refused before anything is allocated.
        let huge = [VERSION, 0xff, 0xff, 0xff, 0xff];
        assert_eq!(decode(&huge), Err(HandoffError::Truncated { at: 1 }));
    }
}
