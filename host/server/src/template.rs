//! The template cache: one evaluation for every object made from one template.
//!
//! The Pods of one ReplicaSet or Job, the same object applied again, a dry run and the
//! real create: these differ only in their name and in fields the API server fills in
//! (`uid`, `creationTimestamp`, `resourceVersion`, `generation`, `managedFields`,
//! `selfLink`). For a policy that decides without the object's name and never reads the
//! raw document ([`crate::LoadedPolicy::name_blind_for`], computeguard's runtime with a pack whose
//! expressions the compiler has checked), the webhook evaluates the object's
//! *template* instead of the object: the object without those fields and with its name
//! replaced by a placeholder of the same length. Its answer is kept, by the template's
//! text, the operation and the evaluation date, and every object with that template gets
//! it with its own name put back where the messages show it.
//!
//! What keeps the answers identical to evaluating each object (the e2e test
//! `templates_answer_as_each_object_would` holds them equal on every real object of the
//! repository and the corpus): the policy sees a document that differs from the object
//! only where its rules cannot look; the placeholder has the name's length, so no
//! limit on a message's size judges the two differently; a template whose evaluation
//! fails is not kept, and the object is then evaluated as it is; the placeholder is used
//! only when the object's text does not already contain it. The cache is bounded in
//! entries and bytes (`webhook.limits.templateCacheEntries`, `templateCacheMiB`), dropped
//! with its policy set on every reload, and evicts the oldest entry first.

use computeguard_engine::Response;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Fields of `metadata` that the API server fills in per object and no rule reads.
const PER_OBJECT: [&str; 6] = [
    "uid",
    "creationTimestamp",
    "resourceVersion",
    "generation",
    "managedFields",
    "selfLink",
];

/// Names shorter than this keep their own name in the template: a short placeholder
/// could also be a word of some message.
const MIN_PLACEHOLDER: usize = 8;

/// An object's template: the document the name-blind policies evaluate, and the key its
/// answer is kept by.
#[derive(Debug)]
pub(crate) struct Template {
    /// The object without its per-object fields, its name replaced (JSON text), followed
    /// by the rest of the key.
    key: String,
    /// Where the document ends in `key`.
    document_len: usize,
    /// The placeholder and the name it stands for, when the name was replaced.
    name: Option<(String, String)>,
}

/// The object with `metadata` in place of its own, written without copying the rest.
struct WithMetadata<'a> {
    fields: &'a serde_json::Map<String, Value>,
    metadata: &'a serde_json::Map<String, Value>,
}

impl serde::Serialize for WithMetadata<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.fields.len()))?;
        for (k, v) in self.fields {
            if k == "metadata" {
                map.serialize_entry(k, self.metadata)?;
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

impl Template {
    /// The template of the Kubernetes object `object` (`raw`: its text as sent), kept
    /// under its text followed by `rest` (what else the answer depends on: operation and
    /// date); `None` when it has no `metadata` mapping.
    pub fn of(object: &Value, raw: &str, rest: &str) -> Option<Template> {
        let Value::Object(fields) = object else {
            return None;
        };
        let Some(Value::Object(metadata)) = fields.get("metadata") else {
            return None;
        };
        let mut metadata = metadata.clone();
        for f in PER_OBJECT {
            metadata.remove(f);
        }
        let mut name = None;
        if let Some(Value::String(real)) = metadata.get("name")
            && real.len() >= MIN_PLACEHOLDER
            && real.is_ascii()
        {
            let placeholder = placeholder(real.len());
            if !raw.contains(&placeholder) {
                name = Some((placeholder, real.clone()));
            }
        }
        if let Some((placeholder, _)) = &name {
            metadata.insert("name".into(), Value::String(placeholder.clone()));
        }
        let mut key = serde_json::to_string(&WithMetadata {
            fields,
            metadata: &metadata,
        })
        .ok()?;
        let document_len = key.len();
        key.push('\n');
        key.push_str(rest);
        Some(Template {
            key,
            document_len,
            name,
        })
    }

    /// The template as JSON text: what the name-blind policies evaluate.
    pub fn document(&self) -> &str {
        &self.key[..self.document_len]
    }

    /// What its answer is kept by: the document and what else the answer depends on.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// `response` (the template's answer) as the object's: its name where the
    /// placeholder is.
    pub fn answer(&self, response: &Response) -> Response {
        let mut response = response.clone();
        let Some((placeholder, real)) = &self.name else {
            return response;
        };
        let put_back = |s: &mut String| {
            if s.contains(placeholder.as_str()) {
                *s = s.replace(placeholder.as_str(), real);
            }
        };
        for v in &mut response.violations {
            put_back(&mut v.message);
            put_back(&mut v.path);
            put_back(&mut v.resource.name);
            put_back(&mut v.remediation);
        }
        for r in &mut response.resources {
            put_back(&mut r.name);
        }
        response
    }
}

/// A placeholder of `len` ASCII bytes (at least [`MIN_PLACEHOLDER`]) that no catalog fact
/// or message wording contains: `cgtmplqqqq...`.
fn placeholder(len: usize) -> String {
    let mut p = String::with_capacity(len);
    p.push_str("cgtmpl");
    while p.len() < len {
        p.push('q');
    }
    p.truncate(len);
    p
}

/// The answers of the name-blind policies for one template, by policy index.
pub(crate) type Answers = Arc<Vec<(usize, Response)>>;

/// Templates already evaluated, bounded in entries and bytes, oldest evicted first.
pub struct TemplateCache {
    max_entries: usize,
    max_bytes: usize,
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<Arc<str>, (Answers, usize)>,
    order: VecDeque<Arc<str>>,
    bytes: usize,
}

impl TemplateCache {
    /// A cache of at most `max_entries` templates and `max_bytes` of keys and answers;
    /// 0 entries turns it off.
    pub fn new(max_entries: usize, max_bytes: usize) -> TemplateCache {
        TemplateCache {
            max_entries,
            max_bytes,
            inner: Mutex::default(),
        }
    }

    /// Whether it keeps anything.
    pub fn enabled(&self) -> bool {
        self.max_entries > 0 && self.max_bytes > 0
    }

    /// Templates kept now.
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |e| e.map.len())
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn get(&self, key: &str) -> Option<Answers> {
        let entries = self.inner.lock().ok()?;
        entries.map.get(key).map(|(a, _)| a.clone())
    }

    pub(crate) fn insert(&self, key: String, answers: Vec<(usize, Response)>) {
        let size = key.len()
            + answers
                .iter()
                .map(|(_, r)| response_bytes(r))
                .sum::<usize>();
        if !self.enabled() || size > self.max_bytes {
            return;
        }
        let Ok(mut entries) = self.inner.lock() else {
            return;
        };
        let key: Arc<str> = key.into();
        if entries.map.contains_key(&key) {
            return;
        }
        while entries.map.len() >= self.max_entries || entries.bytes + size > self.max_bytes {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some((_, freed)) = entries.map.remove(&oldest) {
                entries.bytes -= freed;
            }
        }
        entries.bytes += size;
        entries.order.push_back(key.clone());
        entries.map.insert(key, (Arc::new(answers), size));
    }
}

/// What a response holds in memory, roughly: its strings and a fixed cost per item.
fn response_bytes(r: &Response) -> usize {
    let v: usize = r
        .violations
        .iter()
        .map(|v| {
            64 + v.rule.len()
                + v.message.len()
                + v.path.len()
                + v.resource.kind.len()
                + v.resource.name.len()
                + v.remediation.len()
        })
        .sum();
    let r2: usize = r
        .resources
        .iter()
        .map(|x| 32 + x.kind.len() + x.name.len())
        .sum();
    64 + v + r2 + r.patch.as_ref().map_or(0, String::len)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn per_object_fields_go_and_the_name_becomes_a_placeholder_of_its_length() {
        let pod = |name: &str, uid: &str| {
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "ml", "uid": uid,
                    "creationTimestamp": "2026-11-26T00:00:00Z", "generateName": "train-7d9f8-"},
                "spec": {"containers": [{"name": "main", "image": "pytorch"}]}})
        };
        let a = pod("train-7d9f8-x2x7q", "1");
        let b = pod("train-7d9f8-k9zzt", "2");
        let (ta, tb) = (
            Template::of(&a, &a.to_string(), "").unwrap(),
            Template::of(&b, &b.to_string(), "").unwrap(),
        );
        assert_eq!(ta.document(), tb.document());
        assert_eq!(ta.key(), format!("{}\n", ta.document()));
        assert!(!ta.document().contains("\"uid\""));
        assert!(!ta.document().contains("creationTimestamp"));
        let t: Value = serde_json::from_str(ta.document()).unwrap();
        let placeholder = t["metadata"]["name"].as_str().unwrap();
        assert_eq!(placeholder.len(), "train-7d9f8-x2x7q".len());
        assert_eq!(t["metadata"]["generateName"], "train-7d9f8-");
        // A different template: another image.
        let mut c = pod("train-7d9f8-x2x7q", "3");
        c["spec"]["containers"][0]["image"] = json!("tensorflow");
        assert_ne!(
            Template::of(&c, &c.to_string(), "").unwrap().document(),
            ta.document()
        );
    }

    #[test]
    fn short_names_and_objects_that_contain_the_placeholder_keep_their_name() {
        let short = json!({"kind": "Pod", "metadata": {"name": "web"}});
        let t = Template::of(&short, &short.to_string(), "").unwrap();
        assert!(t.document().contains("\"web\""));
        let name = "abcdefghijkl";
        let sneaky = json!({"kind": "Pod", "metadata": {"name": name,
            "labels": {"x": placeholder(name.len())}}});
        let t = Template::of(&sneaky, &sneaky.to_string(), "").unwrap();
        assert!(t.document().contains(name));
        assert!(t.name.is_none());
    }

    #[test]
    fn answers_get_the_name_back_everywhere_it_shows() {
        let object = json!({"kind": "Pod", "metadata": {"name": "trainer-0001"}});
        let t = Template::of(&object, &object.to_string(), "").unwrap();
        let p = placeholder("trainer-0001".len());
        let response = Response {
            violations: vec![computeguard_engine::Violation {
                rule: "r".into(),
                severity: computeguard_engine::Severity::Error,
                message: format!("Pod ml/{p} uses Standard_NC6; Pod ml/{p} again"),
                path: "/spec".into(),
                remediation: format!("rename {p}"),
                resource: computeguard_engine::ResourceRef {
                    kind: "k8s-workload".into(),
                    name: p.clone(),
                },
            }],
            resources: vec![computeguard_engine::ResourceRef {
                kind: "k8s-workload".into(),
                name: p.clone(),
            }],
            patch: None,
        };
        let answer = t.answer(&response);
        let v = &answer.violations[0];
        assert_eq!(
            v.message,
            "Pod ml/trainer-0001 uses Standard_NC6; Pod ml/trainer-0001 again"
        );
        assert_eq!(v.remediation, "rename trainer-0001");
        assert_eq!(v.resource.name, "trainer-0001");
        assert_eq!(answer.resources[0].name, "trainer-0001");
    }

    #[test]
    fn the_cache_is_bounded_in_entries_and_bytes_and_evicts_the_oldest() {
        let cache = TemplateCache::new(2, 1 << 20);
        for k in ["a", "b", "c"] {
            cache.insert(k.to_string(), Vec::new());
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.get("a").is_none());
        assert!(cache.get("b").is_some() && cache.get("c").is_some());
        let small = TemplateCache::new(100, 200);
        small.insert("x".repeat(250), Vec::new());
        assert_eq!(small.len(), 0, "an entry over the byte bound is not kept");
        small.insert("y".repeat(120), Vec::new());
        small.insert("z".repeat(120), Vec::new());
        assert_eq!(small.len(), 1, "the older entry made room");
        assert!(small.get(&"z".repeat(120)).is_some());
        let off = TemplateCache::new(0, 1 << 20);
        off.insert("a".into(), Vec::new());
        assert!(!off.enabled() && off.is_empty());
    }
}
