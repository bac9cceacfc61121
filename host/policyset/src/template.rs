//! An object's template: one evaluation for every object made from one template.
//!
//! The Pods of one ReplicaSet or Job, the same object applied again, a dry run and the
//! real create, the items of a `kubectl get -o yaml` dump: these differ only in their
//! name and in fields the API server fills in (`uid`, `creationTimestamp`,
//! `resourceVersion`, `generation`, `managedFields`, `selfLink`). For a policy that
//! decides without the object's name and never reads the raw document
//! ([`crate::LoadedPolicy::name_blind_for`], computeguard's runtime with a pack whose
//! expressions the compiler has checked), both front ends evaluate the object's
//! *template* instead of the object: the object without those fields and with its name
//! replaced by a placeholder of the same length. Every object with that template gets
//! the template's answer with its own name put back where the messages show it
//! ([`Template::answer`]). The webhook keeps answers across requests
//! (`computeguard_server::TemplateCache`); `check` evaluates each template of a dump once.
//!
//! What keeps the answers identical to evaluating each object (the webhook's e2e test
//! `templates_answer_as_each_object_would` holds them equal on every real object of the
//! repository and the corpus, and `check`'s `a_dump_is_evaluated_once_per_template_with_the_same_answers`
//! on a dump): the policy sees a document that differs from the object only where its
//! rules cannot look; the placeholder has the name's length, so no limit on a message's
//! size judges the two differently; a template whose evaluation fails is not used, and
//! the object is then evaluated as it is; the placeholder is used only when the object's
//! text does not already contain it.

use computeguard_engine::Response;
use computeguard_policy_core::model::Resource;
use serde_json::Value;
use std::borrow::Cow;

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
pub struct Template {
    /// The object without its per-object fields, its name replaced (JSON text), followed
    /// by the rest of the key.
    key: String,
    /// Where the document ends in `key`.
    document_len: usize,
    /// The placeholder and the name it stands for, when the name was replaced.
    name: Option<(String, String)>,
}

/// The object with `metadata` in place of its own and without its `status`, written
/// without copying the rest. What the cluster reports of an object (`status`: its Pod IP,
/// its containers' ids and start times) differs from Pod to Pod of one ReplicaSet, and
/// no reader of the compute model looks at it (the generic walk skips it, and the
/// object-level readers never name it; `a_status_is_read_by_no_reader` holds that on
/// every Kubernetes fixture).
struct WithMetadata<'a> {
    fields: &'a serde_json::Map<String, Value>,
    metadata: TemplateMetadata<'a>,
}

/// The object's `metadata` without the fields the API server fills in, its name written
/// as the placeholder when there is one: written in place, without copying the mapping
/// (which may hold `managedFields`, often most of a Pod's text).
struct TemplateMetadata<'a> {
    metadata: &'a serde_json::Map<String, Value>,
    placeholder: Option<&'a str>,
}

impl serde::Serialize for TemplateMetadata<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.metadata {
            if PER_OBJECT.contains(&k.as_str()) {
                continue;
            }
            match self.placeholder {
                Some(p) if k == "name" => map.serialize_entry(k, p)?,
                _ => map.serialize_entry(k, v)?,
            }
        }
        map.end()
    }
}

impl serde::Serialize for WithMetadata<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (k, v) in self.fields {
            if k == "status" {
                continue;
            }
            if k == "metadata" {
                map.serialize_entry(k, &self.metadata)?;
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
        let mut key = serde_json::to_string(&WithMetadata {
            fields,
            metadata: TemplateMetadata {
                metadata,
                placeholder: name.as_ref().map(|(p, _)| p.as_str()),
            },
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

    /// The key, given up: what a cache keeps the template's answer by, without a copy.
    pub fn into_key(self) -> String {
        self.key
    }

    /// The template's compute model, from the object's (`object`: what
    /// `read::normalize` gives for the object): the resources named with the
    /// placeholder where the object's name was replaced. The same model as reading
    /// [`Template::document`], without reading it; `None` where a resource's name is
    /// made from the object's name (a KAITO `MultiRoleInference`'s `name/role`), which
    /// only reading the template gives exactly. `template_model_is_the_objects_renamed`
    /// holds the model equal to the template's on every Kubernetes object of the
    /// fixtures and the corpus.
    pub fn resources<'a>(&self, object: &'a [Resource]) -> Option<Cow<'a, [Resource]>> {
        let Some((placeholder, real)) = &self.name else {
            // The name was kept: the object's model is the template's.
            return Some(Cow::Borrowed(object));
        };
        let mut out = object.to_vec();
        for r in &mut out {
            if r.name == *real {
                computeguard_policy_core::model::rename(r, placeholder);
            } else if r.name.contains(real.as_str()) {
                return None;
            }
        }
        Some(Cow::Owned(out))
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
        // What the cluster reports of the object is not part of its template.
        let mut d = pod("train-7d9f8-x2x7q", "4");
        d["status"] = json!({"phase": "Running", "podIP": "10.244.1.17"});
        assert_eq!(
            Template::of(&d, &d.to_string(), "").unwrap().document(),
            ta.document()
        );
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
    fn a_status_is_read_by_no_reader() {
        // The template drops `status`: that is right only while no reader of the compute
        // model looks at it. A status holding what readers look for (containers with a
        // GPU image and limits, a node selector, a size) changes nothing they read, on
        // every Kubernetes object of the fixtures and the shared corpus.
        let status = json!({
            "phase": "Running", "podIP": "10.244.1.17",
            "containers": [{"name": "x", "image": "nvcr.io/nvidia/pytorch:24.01-py3",
                "resources": {"limits": {"nvidia.com/gpu": 8}}}],
            "containerStatuses": [{"name": "x", "image": "nvidia/cuda:12.4.0-base-ubuntu22.04",
                "containerID": "containerd://1"}],
            "nodeSelector": {"node.kubernetes.io/instance-type": "Standard_ND96asr_v4"},
            "instanceType": "Standard_NC6", "vmSize": "Standard_NC6",
            "template": {"spec": {"containers": [{"name": "y", "image": "nvidia/cuda:11.0-base"}]}}
        });
        let mut objects = 0;
        for (path, item) in kubernetes_objects() {
            let Value::Object(mut fields) = item else {
                continue;
            };
            fields.remove("status");
            let without = Value::Object(fields.clone());
            fields.insert("status".into(), status.clone());
            let with = Value::Object(fields);
            assert_eq!(read(&with), read(&without), "{}", path.display());
            objects += 1;
        }
        assert!(objects > 50, "only {objects} objects read");
    }

    #[test]
    fn template_model_is_the_objects_renamed() {
        // The webhook hands the sandbox the template's model derived from the object's
        // (`Template::resources`) instead of reading the template's text again. On every
        // Kubernetes object of the fixtures and the corpus, given a long name and the
        // fields the API server fills in, the derived model is the one read from the
        // template's text.
        let (mut renamed, mut derived_names) = (0, 0);
        for (path, item) in kubernetes_objects() {
            let own = item.clone();
            let mut object = item;
            if let Some(Value::Object(m)) = object.get_mut("metadata") {
                m.insert("name".into(), json!("trainer-7d9f8b6c5d-x2x4q"));
                m.insert("uid".into(), json!("0b5c1d4e-8a39-4b2e-9f6a-2c7e1b3a4d5f"));
                m.insert("managedFields".into(), json!([{"manager": "kubectl"}]));
            }
            for object in [own, object] {
                let raw = object.to_string();
                let Some(t) = Template::of(&object, &raw, "") else {
                    continue;
                };
                let template: Value = serde_json::from_str(t.document()).unwrap();
                match t.resources(&read(&object)) {
                    Some(derived) => {
                        assert_eq!(*derived, read(&template), "{}", path.display());
                        renamed += usize::from(t.name.is_some());
                    }
                    // Only where a name is made from the object's.
                    None => {
                        assert!(
                            read(&object).iter().any(|r| r.name.contains('/')),
                            "{}",
                            path.display()
                        );
                        derived_names += 1;
                    }
                }
            }
        }
        assert!(renamed > 50, "only {renamed} objects renamed");
        assert!(
            derived_names > 0,
            "no object whose resources' names are made from its own"
        );
    }

    fn read(v: &Value) -> Vec<Resource> {
        computeguard_policy_core::read::normalize(
            v,
            computeguard_policy_core::compute::Source::Kubernetes,
        )
    }

    /// Every Kubernetes object (with `metadata`) of the fixtures and the shared corpus,
    /// the items of lists each on its own, with its file.
    fn kubernetes_objects() -> Vec<(std::path::PathBuf, Value)> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let folders = [
            "tests/fixtures/kubernetes",
            "tests/fixtures/kaito",
            "tests/fixtures/workloads",
            "tests/fixtures/gpu-stack",
            "tests/fixtures/audit",
            "../shared/corpus/k8s-pods",
            "../shared/corpus/kaito",
            "../shared/corpus/kaito-presets",
        ];
        let mut out = Vec::new();
        for folder in folders {
            let Ok(entries) = std::fs::read_dir(root.join(folder)) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let docs = match path.extension().and_then(|e| e.to_str()) {
                    Some("yaml" | "yml") => computeguard_decode::decode_yaml(&text),
                    Some("json") => computeguard_decode::decode_json(&text).map(|d| vec![d]),
                    _ => continue,
                };
                let Ok(docs) = docs else { continue };
                for doc in docs {
                    let items = match doc.value.get("items") {
                        Some(Value::Array(items)) => items.clone(),
                        _ => vec![doc.value.clone()],
                    };
                    for item in items {
                        if item.get("metadata").is_some_and(Value::is_object) {
                            out.push((path.clone(), item));
                        }
                    }
                }
            }
        }
        out
    }
}
