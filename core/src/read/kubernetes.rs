//! Kubernetes workloads: every object that runs pods.
//!
//! Two mechanisms, so that adding a workload kind is one entry in [`KINDS`] plus a fixture:
//! - the **kind table** says, for each known kind, where its pod specs sit (a pointer pattern
//!   with `*` for every key of a map and `#` for every item of a list), how each is named (its
//!   role: `Worker`, a Ray group name, `predictor`), which pointers multiply into its replica
//!   count, which container-like objects it holds besides `containers[]` (KServe framework
//!   keys, Argo `container` / `script`) and the intent the kind implies;
//! - the **generic walk** finds, in any object with `apiVersion` and `kind`, every object that
//!   holds a pod spec (a `containers` list whose items have an `image` or `resources`),
//!   wherever it sits. A pod spec the table does not name is still a `k8s-workload`, named by
//!   its pointer, with intent `unknown`.
//!
//! Each pod spec (each replica type of a training job, each Ray group, ...) is one resource,
//! displayed `Kind namespace/name (role)`.

use super::common::{
    At, device_requests, escape, escaped, int_of, item_ptr, join, merge_labels, push_index,
    resolve_cuda, resolve_intent, scalar_text, set_region, set_sku, str_at,
};
use crate::compute::Resource;
use serde_json::Value;

/// Node labels whose value is the VM size.
pub(super) const INSTANCE_TYPE_LABELS: [&str; 3] = [
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "kubernetes.azure.com/vm-size",
];

/// How the resource of a pod spec is named after the object.
#[derive(Clone, Copy)]
enum Role {
    /// The object's one pod spec: no role.
    Whole,
    /// A fixed role (`head`, `predictor`).
    Fixed(&'static str),
    /// The last wildcard: the map key (`Worker`), or the list item's `name` / `groupName`
    /// (else its index).
    Bound,
}

/// One place in a kind where a pod spec sits.
#[derive(Clone, Copy)]
struct Site {
    /// Pointer pattern from the object to the pod spec (or pod-spec-like object: one with
    /// `nodeSelector`, `affinity`, `tolerations`, `containers`). `*`: every key; `#`: every item.
    spec: &'static str,
    role: Role,
    /// Keys of container-like objects inside the spec, read as containers besides `containers[]`.
    containers: &'static [&'static str],
    /// Pointer patterns (same wildcards as `spec`) whose values multiply into the replica count;
    /// a missing one counts 1.
    count: &'static [&'static str],
    /// Subtract one from the last count factor (LeaderWorkerSet `size` counts the leader).
    less_one: bool,
    /// Pointer of object-wide scheduling defaults (`nodeSelector`, `affinity`, `tolerations`)
    /// that apply to every pod spec (Argo `spec`), or "".
    inherit: &'static str,
}

const fn site(spec: &'static str, role: Role) -> Site {
    Site {
        spec,
        role,
        containers: &[],
        count: &[],
        less_one: false,
        inherit: "",
    }
}

impl Site {
    const fn count(mut self, count: &'static [&'static str]) -> Self {
        self.count = count;
        self
    }
    const fn containers(mut self, keys: &'static [&'static str]) -> Self {
        self.containers = keys;
        self
    }
    const fn less_one(mut self) -> Self {
        self.less_one = true;
        self
    }
    const fn inherit(mut self, ptr: &'static str) -> Self {
        self.inherit = ptr;
        self
    }
}

/// A known workload kind.
struct Kind {
    /// `apiVersion` prefix (`ray.io/`); "" matches any group.
    group: &'static str,
    kind: &'static str,
    /// Workload intent the kind implies (a `computeguard.io/workload` label overrides it).
    intent: &'static str,
    /// Its pod specs together form one multi-node workload (`distributed` when more than one
    /// replica in all).
    multi_node: bool,
    sites: &'static [Site],
}

/// KServe predictor framework keys: each a container-like object (`image`, `resources`,
/// `storageUri`, `runtimeVersion`).
const KSERVE_FRAMEWORKS: &[&str] = &[
    "model",
    "sklearn",
    "xgboost",
    "tensorflow",
    "pytorch",
    "triton",
    "onnx",
    "pmml",
    "lightgbm",
    "paddle",
    "huggingface",
];

const TEMPLATE: &[Site] = &[site("/spec/template/spec", Role::Whole).count(&["/spec/replicas"])];

const RAY_HEAD_WORKERS: &[Site] = &[
    site("/spec/headGroupSpec/template/spec", Role::Fixed("head")),
    site("/spec/workerGroupSpecs/#/template/spec", Role::Bound)
        .count(&["/spec/workerGroupSpecs/#/replicas"]),
];

const ARGO_TEMPLATES: &[Site] = &[site("/spec/templates/#", Role::Bound)
    .containers(&["container", "script"])
    .inherit("/spec")];

/// Known kinds, first match wins (so group-specific entries come before "any group" ones).
static KINDS: &[Kind] = &[
    Kind {
        group: "",
        kind: "Pod",
        intent: "unknown",
        multi_node: false,
        sites: &[site("/spec", Role::Whole)],
    },
    Kind {
        group: "",
        kind: "Deployment",
        intent: "unknown",
        multi_node: false,
        sites: TEMPLATE,
    },
    Kind {
        group: "",
        kind: "StatefulSet",
        intent: "unknown",
        multi_node: false,
        sites: TEMPLATE,
    },
    Kind {
        group: "",
        kind: "ReplicaSet",
        intent: "unknown",
        multi_node: false,
        sites: TEMPLATE,
    },
    Kind {
        group: "",
        kind: "DaemonSet",
        intent: "unknown",
        multi_node: false,
        sites: &[site("/spec/template/spec", Role::Whole)],
    },
    Kind {
        group: "batch.volcano.sh/",
        kind: "Job",
        intent: "unknown",
        multi_node: true,
        sites: &[
            site("/spec/tasks/#/template/spec", Role::Bound).count(&["/spec/tasks/#/replicas"])
        ],
    },
    Kind {
        group: "",
        kind: "Job",
        intent: "unknown",
        multi_node: false,
        sites: &[site("/spec/template/spec", Role::Whole).count(&["/spec/parallelism"])],
    },
    Kind {
        group: "",
        kind: "CronJob",
        intent: "unknown",
        multi_node: false,
        sites: &[site("/spec/jobTemplate/spec/template/spec", Role::Whole)],
    },
    Kind {
        group: "",
        kind: "PyTorchJob",
        intent: "training",
        multi_node: true,
        sites: &[
            site("/spec/pytorchReplicaSpecs/*/template/spec", Role::Bound)
                .count(&["/spec/pytorchReplicaSpecs/*/replicas"]),
        ],
    },
    Kind {
        group: "",
        kind: "TFJob",
        intent: "training",
        multi_node: true,
        sites: &[site("/spec/tfReplicaSpecs/*/template/spec", Role::Bound)
            .count(&["/spec/tfReplicaSpecs/*/replicas"])],
    },
    Kind {
        group: "",
        kind: "MPIJob",
        intent: "training",
        multi_node: true,
        sites: &[site("/spec/mpiReplicaSpecs/*/template/spec", Role::Bound)
            .count(&["/spec/mpiReplicaSpecs/*/replicas"])],
    },
    Kind {
        group: "",
        kind: "XGBoostJob",
        intent: "training",
        multi_node: true,
        sites: &[site("/spec/xgbReplicaSpecs/*/template/spec", Role::Bound)
            .count(&["/spec/xgbReplicaSpecs/*/replicas"])],
    },
    Kind {
        group: "",
        kind: "JAXJob",
        intent: "training",
        multi_node: true,
        sites: &[site("/spec/jaxReplicaSpecs/*/template/spec", Role::Bound)
            .count(&["/spec/jaxReplicaSpecs/*/replicas"])],
    },
    Kind {
        group: "",
        kind: "PaddleJob",
        intent: "training",
        multi_node: true,
        sites: &[
            site("/spec/paddleReplicaSpecs/*/template/spec", Role::Bound)
                .count(&["/spec/paddleReplicaSpecs/*/replicas"]),
        ],
    },
    Kind {
        group: "",
        kind: "MXJob",
        intent: "training",
        multi_node: true,
        sites: &[site("/spec/mxReplicaSpecs/*/template/spec", Role::Bound)
            .count(&["/spec/mxReplicaSpecs/*/replicas"])],
    },
    Kind {
        group: "",
        kind: "InferenceService",
        intent: "inference",
        multi_node: false,
        sites: &[
            site("/spec/predictor", Role::Fixed("predictor"))
                .containers(KSERVE_FRAMEWORKS)
                .count(&["/spec/predictor/minReplicas"]),
            site(
                "/spec/predictor/workerSpec",
                Role::Fixed("predictor worker"),
            )
            .count(&["/spec/predictor/minReplicas"]),
            site("/spec/transformer", Role::Fixed("transformer"))
                .count(&["/spec/transformer/minReplicas"]),
            site("/spec/explainer", Role::Fixed("explainer"))
                .containers(&["art", "alibi"])
                .count(&["/spec/explainer/minReplicas"]),
        ],
    },
    Kind {
        group: "serving.kserve.io/",
        kind: "ServingRuntime",
        intent: "inference",
        multi_node: false,
        sites: &[site("/spec", Role::Whole)],
    },
    Kind {
        group: "serving.kserve.io/",
        kind: "ClusterServingRuntime",
        intent: "inference",
        multi_node: false,
        sites: &[site("/spec", Role::Whole)],
    },
    Kind {
        group: "leaderworkerset.x-k8s.io/",
        kind: "LeaderWorkerSet",
        intent: "inference",
        multi_node: true,
        sites: &[
            site(
                "/spec/leaderWorkerTemplate/leaderTemplate/spec",
                Role::Fixed("leader"),
            )
            .count(&["/spec/replicas"]),
            site(
                "/spec/leaderWorkerTemplate/workerTemplate/spec",
                Role::Fixed("worker"),
            )
            .count(&["/spec/replicas", "/spec/leaderWorkerTemplate/size"])
            .less_one(),
        ],
    },
    Kind {
        group: "ray.io/",
        kind: "RayCluster",
        intent: "unknown",
        multi_node: true,
        sites: RAY_HEAD_WORKERS,
    },
    Kind {
        group: "ray.io/",
        kind: "RayJob",
        intent: "unknown",
        multi_node: true,
        sites: &[
            site(
                "/spec/rayClusterSpec/headGroupSpec/template/spec",
                Role::Fixed("head"),
            ),
            site(
                "/spec/rayClusterSpec/workerGroupSpecs/#/template/spec",
                Role::Bound,
            )
            .count(&["/spec/rayClusterSpec/workerGroupSpecs/#/replicas"]),
            site("/spec/submitterPodTemplate/spec", Role::Fixed("submitter")),
        ],
    },
    Kind {
        group: "ray.io/",
        kind: "RayService",
        intent: "inference",
        multi_node: true,
        sites: &[
            site(
                "/spec/rayClusterConfig/headGroupSpec/template/spec",
                Role::Fixed("head"),
            ),
            site(
                "/spec/rayClusterConfig/workerGroupSpecs/#/template/spec",
                Role::Bound,
            )
            .count(&["/spec/rayClusterConfig/workerGroupSpecs/#/replicas"]),
        ],
    },
    Kind {
        group: "jobset.x-k8s.io/",
        kind: "JobSet",
        intent: "unknown",
        multi_node: true,
        sites: &[site(
            "/spec/replicatedJobs/#/template/spec/template/spec",
            Role::Bound,
        )
        .count(&[
            "/spec/replicatedJobs/#/replicas",
            "/spec/replicatedJobs/#/template/spec/parallelism",
        ])],
    },
    Kind {
        group: "argoproj.io/",
        kind: "Workflow",
        intent: "unknown",
        multi_node: false,
        sites: ARGO_TEMPLATES,
    },
    Kind {
        group: "argoproj.io/",
        kind: "WorkflowTemplate",
        intent: "unknown",
        multi_node: false,
        sites: ARGO_TEMPLATES,
    },
    Kind {
        group: "argoproj.io/",
        kind: "ClusterWorkflowTemplate",
        intent: "unknown",
        multi_node: false,
        sites: ARGO_TEMPLATES,
    },
    Kind {
        group: "argoproj.io/",
        kind: "CronWorkflow",
        intent: "unknown",
        multi_node: false,
        sites: &[site("/spec/workflowSpec/templates/#", Role::Bound)
            .containers(&["container", "script"])
            .inherit("/spec/workflowSpec")],
    },
    Kind {
        group: "serving.knative.dev/",
        kind: "Service",
        intent: "inference",
        multi_node: false,
        sites: &[site("/spec/template/spec", Role::Whole)],
    },
    Kind {
        group: "serving.knative.dev/",
        kind: "Configuration",
        intent: "inference",
        multi_node: false,
        sites: &[site("/spec/template/spec", Role::Whole)],
    },
    Kind {
        group: "serving.knative.dev/",
        kind: "Revision",
        intent: "inference",
        multi_node: false,
        sites: &[site("/spec", Role::Whole)],
    },
];

/// API groups whose objects hold `containers` lists that are patterns or schemas, not pods
/// (admission policies, CRDs): the generic walk skips them.
const NOT_WORKLOADS: [&str; 5] = [
    "kyverno.io/",
    "templates.gatekeeper.sh/",
    "constraints.gatekeeper.sh/",
    "mutations.gatekeeper.sh/",
    "apiextensions.k8s.io/",
];

/// Deepest nesting the generic walk follows.
const MAX_WALK_DEPTH: usize = 48;

fn known(api: &str, kind: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.kind == kind && api.starts_with(k.group))
}

/// One pod spec found in an object (pointers relative to the object).
struct Found {
    spec: String,
    role: Option<String>,
    containers: &'static [&'static str],
    count: Vec<String>,
    less_one: bool,
    inherit: Option<String>,
}

/// Expands a pattern into concrete pointers with the wildcard tokens bound on the way and
/// the role of the last wildcard.
fn expand(doc: &Value, pattern: &str) -> Vec<(String, Vec<String>, Option<String>)> {
    let mut states: Vec<(&Value, String, Vec<String>, Option<String>)> =
        vec![(doc, String::new(), Vec::new(), None)];
    for seg in pattern.split('/').skip(1) {
        let mut next = Vec::new();
        for (v, ptr, binds, role) in states {
            match (seg, v) {
                ("*", Value::Object(m)) => {
                    for (k, item) in m {
                        let token = escape(k);
                        let mut b = binds.clone();
                        b.push(token.clone());
                        next.push((item, [&ptr, "/", &token].concat(), b, Some(k.clone())));
                    }
                }
                ("#", Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        let mut b = binds.clone();
                        b.push(i.to_string());
                        let name = ["name", "groupName"]
                            .iter()
                            .find_map(|k| item.get(*k).and_then(Value::as_str))
                            .map_or_else(|| i.to_string(), str::to_string);
                        next.push((item, item_ptr(&ptr, i), b, Some(name)));
                    }
                }
                ("*" | "#", _) => {}
                (lit, Value::Object(m)) => {
                    if let Some(item) = m.get(lit) {
                        next.push((item, [&ptr, "/", lit].concat(), binds, role));
                    }
                }
                _ => {}
            }
        }
        states = next;
    }
    states
        .into_iter()
        .map(|(_, ptr, binds, role)| (ptr, binds, role))
        .collect()
}

/// Puts the bound wildcard tokens into a pattern, in order.
fn bind(pattern: &str, binds: &[String]) -> String {
    let mut it = binds.iter();
    pattern
        .split('/')
        .map(|seg| match seg {
            "*" | "#" => it.next().cloned().unwrap_or_default(),
            s => s.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether `v` holds a pod's containers: a `containers` list with an item that has an
/// `image` or `resources`.
fn holds_containers(v: &Value) -> bool {
    matches!(v.get("containers"), Some(Value::Array(items))
        if items.iter().any(|c| c.get("image").is_some() || c.get("resources").is_some()))
}

/// The generic walk: pointers (relative to `v`) of every object holding containers.
/// `ptr` is the pointer of `v`, extended and cut back in place as the walk descends:
/// it visits every node of the object, and a new string per node was most of a Pod's
/// reading time.
fn walk(v: &Value, ptr: &mut String, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    // Scalars hold nothing to find; `token` writes the item's pointer token.
    let descend =
        |item: &Value, token: &dyn Fn(&mut String), ptr: &mut String, out: &mut Vec<String>| {
            if matches!(item, Value::Object(_) | Value::Array(_)) {
                let len = ptr.len();
                token(ptr);
                walk(item, ptr, depth + 1, out);
                ptr.truncate(len);
            }
        };
    match v {
        Value::Object(m) => {
            let holds = holds_containers(v);
            if holds {
                out.push(ptr.clone());
            }
            for (k, item) in m {
                if (holds && (k == "containers" || k == "initContainers"))
                    || (depth == 0 && (k == "status" || k == "metadata"))
                {
                    continue;
                }
                let push = |p: &mut String| {
                    p.push('/');
                    p.push_str(&escaped(k));
                };
                descend(item, &push, ptr, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                descend(item, &|p: &mut String| push_index(p, i), ptr, out);
            }
        }
        _ => {}
    }
}

/// Every pod spec of an object: the table's sites of its kind, then what the generic walk finds
/// elsewhere.
fn find(doc: &Value, api: &str, kind: Option<&Kind>) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    for s in kind.map_or(&[][..], |k| k.sites) {
        let wild = s.spec.contains("/*") || s.spec.contains("/#");
        for (ptr, binds, bound) in expand(doc, s.spec) {
            let Some(spec) = doc.at(&ptr) else {
                continue;
            };
            let has_extra = s.containers.iter().any(|k| spec.get(*k).is_some());
            if !spec.is_object()
                || (wild && !s.containers.is_empty() && !holds_containers(spec) && !has_extra)
            {
                continue;
            }
            out.push(Found {
                spec: ptr,
                role: match s.role {
                    Role::Whole => None,
                    Role::Fixed(r) => Some(r.to_string()),
                    Role::Bound => bound,
                },
                containers: s.containers,
                count: s.count.iter().map(|c| bind(c, &binds)).collect(),
                less_one: s.less_one,
                inherit: (!s.inherit.is_empty()).then(|| s.inherit.to_string()),
            });
        }
    }
    if NOT_WORKLOADS.iter().any(|g| api.starts_with(g)) {
        return out;
    }
    let mut walked = Vec::new();
    walk(doc, &mut String::new(), 0, &mut walked);
    let known_sites = out.len();
    let extra: Vec<String> = walked
        .into_iter()
        .filter(|p| !out.iter().any(|f| &f.spec == p))
        .collect();
    let lone = known_sites == 0 && extra.len() == 1;
    for p in extra {
        out.push(Found {
            role: (!lone).then(|| {
                p.strip_suffix("/template/spec")
                    .or_else(|| p.strip_suffix("/spec"))
                    .filter(|s| !s.is_empty())
                    .unwrap_or(&p)
                    .trim_start_matches('/')
                    .to_string()
            }),
            spec: p,
            containers: &[],
            count: Vec::new(),
            less_one: false,
            inherit: None,
        });
    }
    out
}

/// Where the pod specs of a Kubernetes object live, with the pointer of its (first) replica
/// count. Public for hosts that patch pod specs (the webhook's opt-in mutations).
pub fn pod_specs(doc: &Value, kind: &str, base: &str) -> Vec<(String, Option<String>)> {
    let api = str_at(doc, "/apiVersion").unwrap_or_default();
    find(doc, api, known(api, kind))
        .into_iter()
        .map(|f| {
            (
                format!("{base}{}", f.spec),
                f.count.first().map(|c| format!("{base}{c}")),
            )
        })
        .collect()
}

/// The resource every reader of a Kubernetes object starts from: name, namespace, labels and
/// annotations.
pub(super) fn object_template(doc: &Value, base: &str) -> Resource {
    let mut r = Resource {
        source_kind: str_at(doc, "/kind").unwrap_or_default().to_string(),
        name: str_at(doc, "/metadata/name")
            .or_else(|| str_at(doc, "/metadata/generateName"))
            .unwrap_or("<unnamed>")
            .to_string(),
        namespace: str_at(doc, "/metadata/namespace").map(str::to_string),
        pointer: base.to_string(),
        ..Resource::default()
    };
    merge_labels(
        &mut r,
        doc.at("/metadata/labels"),
        &[base, "/metadata/labels"].concat(),
    );
    merge_labels(
        &mut r,
        doc.at("/metadata/annotations"),
        &[base, "/metadata/annotations"].concat(),
    );
    r
}

/// A workload object: one `k8s-workload` per pod spec.
pub(super) fn workloads(doc: &Value, base: &str, template: Resource) -> Vec<Resource> {
    let kind = str_at(doc, "/kind").unwrap_or_default();
    let api = str_at(doc, "/apiVersion").unwrap_or_default();
    let known = known(api, kind);
    let found = find(doc, api, known);
    let mut out = Vec::new();
    let mut total: i64 = 0;
    for f in &found {
        let Some(spec) = doc.at(&f.spec) else {
            continue;
        };
        let mut r = template.clone();
        r.kind = "k8s-workload".into();
        r.role = f.role.clone();
        // Template labels count as the workload's labels too.
        if let Some(tpl) = f.spec.strip_suffix("/spec") {
            merge_labels(
                &mut r,
                doc.at(&[tpl, "/metadata/labels"].concat()),
                &[base, tpl, "/metadata/labels"].concat(),
            );
            merge_labels(
                &mut r,
                doc.at(&[tpl, "/metadata/annotations"].concat()),
                &[base, tpl, "/metadata/annotations"].concat(),
            );
        }
        let mut env = Vec::new();
        let mut images = Vec::new();
        if let Some(inherit) = &f.inherit
            && let Some(defaults) = doc.at(inherit)
        {
            read_scheduling(&mut r, defaults, &format!("{base}{inherit}"));
        }
        read_pod_spec(
            &mut r,
            spec,
            &[base, &f.spec].concat(),
            f.containers,
            &mut env,
            &mut images,
        );
        let mut count: i64 = 1;
        let last = f.count.len().saturating_sub(1);
        for (i, c) in f.count.iter().enumerate() {
            let Some(n) = doc.at(c).and_then(int_of) else {
                continue;
            };
            let n = if f.less_one && i == last {
                n.saturating_sub(1).max(0)
            } else {
                n
            };
            count = count.saturating_mul(n);
            r.fields
                .entry("instanceCount".into())
                .or_insert_with(|| format!("{base}{c}"));
        }
        total = total.saturating_add(count);
        r.instance_count = Some(count);
        resolve_intent(&mut r, known.map_or("unknown", |k| k.intent));
        resolve_cuda(&mut r, &env, &images);
        out.push(r);
    }
    let distributed = known.is_some_and(|k| k.multi_node) && total > 1;
    for r in &mut out {
        r.distributed = distributed;
    }
    out
}

/// A node request (gpu-provisioner / Karpenter `NodeClaim`): its instance type requirement.
pub(super) fn node_claim(doc: &Value, base: &str, template: Resource) -> Vec<Resource> {
    let mut r = template;
    let reqs = "/spec/requirements";
    if let Some(Value::Array(list)) = doc.at(reqs) {
        for (i, q) in list.iter().enumerate() {
            let key = q.get("key").and_then(Value::as_str).unwrap_or_default();
            if (INSTANCE_TYPE_LABELS.contains(&key) || key == "karpenter.azure.com/sku-name")
                && let Some(v) = q.at("/values/0").and_then(Value::as_str)
            {
                set_sku(&mut r, v, format!("{base}{reqs}/{i}/values/0"));
                break;
            }
        }
    }
    r.kind = "aks-node-pool".into();
    if let Some(Value::Array(t)) = doc.at("/spec/taints") {
        r.taints = t
            .iter()
            .map(|t| {
                let f = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
                format!("{}={}:{}", f("key"), f("value"), f("effect"))
            })
            .collect();
    }
    resolve_intent(&mut r, "unknown");
    vec![r]
}

/// Node selection and tolerations of a pod spec (or of object-wide defaults).
///
/// Every required node selection counts: `nodeSelector` entries, and each expression of a
/// required node-affinity term that selects (`In`: its first value; `Exists`: an empty value;
/// `Gt` / `Lt`: the bound), on any label. `NotIn` and `DoesNotExist` only exclude nodes.
fn read_scheduling(r: &mut Resource, spec: &Value, ptr: &str) {
    if let Some(Value::Object(sel)) = spec.get("nodeSelector") {
        let sel_ptr = [ptr, "/nodeSelector"].concat();
        for (k, v) in sel {
            if let Some(t) = scalar_text(v) {
                r.node_selection.insert(k.clone(), t);
                r.fields
                    .entry(["nodeSelection.", k].concat())
                    .or_insert_with(|| join(&sel_ptr, k));
            }
        }
    }
    let terms_ptr =
        "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
    if let Some(Value::Array(terms)) = spec.at(terms_ptr) {
        for (ti, term) in terms.iter().enumerate() {
            for list in ["matchExpressions", "matchFields"] {
                let Some(Value::Array(exprs)) = term.get(list) else {
                    continue;
                };
                for (ei, e) in exprs.iter().enumerate() {
                    let Some(key) = e.get("key").and_then(Value::as_str) else {
                        continue;
                    };
                    let at = format!("{ptr}{terms_ptr}/{ti}/{list}/{ei}");
                    let (value, vptr) = match e.get("operator").and_then(Value::as_str) {
                        Some("In" | "Gt" | "Lt") => match e.at("/values/0").and_then(scalar_text) {
                            Some(v) => (v, format!("{at}/values/0")),
                            None => continue,
                        },
                        Some("Exists") => (String::new(), format!("{at}/key")),
                        _ => continue,
                    };
                    r.node_selection.entry(key.to_string()).or_insert(value);
                    r.fields
                        .entry(format!("nodeSelection.{key}"))
                        .or_insert(vptr);
                }
            }
        }
    }
    if let Some(Value::Array(tols)) = spec.get("tolerations") {
        if r.tolerations.is_empty() {
            r.fields
                .insert("tolerations".into(), [ptr, "/tolerations"].concat());
        }
        r.tolerations.extend(tols.iter().cloned());
    }
}

fn read_pod_spec(
    r: &mut Resource,
    spec: &Value,
    ptr: &str,
    extra: &[&str],
    env: &mut Vec<(String, String, String)>,
    images: &mut Vec<(String, String)>,
) {
    read_scheduling(r, spec, ptr);
    if r.sku.is_none() {
        for label in INSTANCE_TYPE_LABELS {
            if let Some(v) = r.node_selection.get(label).cloned() {
                let p = r
                    .fields
                    .get(&format!("nodeSelection.{label}"))
                    .cloned()
                    .unwrap_or_default();
                set_sku(r, &v, p);
                break;
            }
        }
    }
    if r.region.is_none()
        && let Some(v) = r
            .node_selection
            .get("topology.kubernetes.io/region")
            .cloned()
    {
        let p = r
            .fields
            .get("nodeSelection.topology.kubernetes.io/region")
            .cloned()
            .unwrap_or_default();
        set_region(r, &v, p);
    }
    if r.os_type.is_none() {
        r.os_type = r
            .node_selection
            .get("kubernetes.io/os")
            .filter(|v| !v.is_empty())
            .cloned();
    }
    if r.priority.is_none()
        && r.node_selection
            .get("karpenter.sh/capacity-type")
            .is_some_and(|v| v == "spot")
    {
        r.priority = Some("spot".into());
        if let Some(ptr) = r
            .fields
            .get("nodeSelection.karpenter.sh/capacity-type")
            .cloned()
        {
            r.fields.insert("priority".into(), ptr);
        }
    }
    if r.priority.is_none()
        && let Some(p) = r
            .node_selection
            .get("kubernetes.azure.com/scalesetpriority")
            .filter(|v| !v.is_empty())
            .cloned()
    {
        let ptr = r
            .fields
            .get("nodeSelection.kubernetes.azure.com/scalesetpriority")
            .cloned()
            .unwrap_or_default();
        r.priority = Some(p.to_ascii_lowercase());
        r.fields.insert("priority".into(), ptr);
    }
    // Init containers run one at a time before the others: a pod needs the larger of
    // the biggest init container and the sum of the regular containers.
    let (mut init_gpus, mut init_rdma, mut pod_gpus, mut pod_rdma) = (0.0, 0.0, 0.0, 0.0);
    let mut containers: Vec<(&Value, String, bool)> = Vec::new();
    for list in ["initContainers", "containers"] {
        if let Some(Value::Array(items)) = spec.get(list) {
            for (ci, c) in items.iter().enumerate() {
                let at = item_ptr(&[ptr, "/", list].concat(), ci);
                containers.push((c, at, list == "initContainers"));
            }
        }
    }
    for key in extra {
        if let Some(c) = spec.get(*key).filter(|c| c.is_object()) {
            containers.push((c, join(ptr, key), false));
        }
    }
    // A spec without containers whose own `resources` say what each pod gets (a KServe
    // `workerSpec` written with `resources`, `tensorParallelSize` and no `containers`).
    if containers.is_empty() && spec.get("resources").is_some_and(Value::is_object) {
        containers.push((spec, ptr.to_string(), false));
    }
    for (c, cptr, init) in containers {
        if let Some(image) = c.get("image").and_then(Value::as_str) {
            let at = [&cptr, "/image"].concat();
            r.images.push(image.to_string());
            if !r.fields.contains_key("images") {
                r.fields.insert("images".into(), at.clone());
            }
            images.push((image.to_string(), at));
        }
        if let Some(Value::Array(vars)) = c.get("env") {
            for (vi, var) in vars.iter().enumerate() {
                if let (Some(n), Some(v)) = (
                    var.get("name").and_then(Value::as_str),
                    var.get("value").and_then(Value::as_str),
                ) {
                    env.push((
                        n.to_string(),
                        v.to_string(),
                        [&item_ptr(&[&cptr, "/env"].concat(), vi), "/value"].concat(),
                    ));
                }
            }
        }
        let (g, d) = device_requests(r, c.get("resources"), &[&cptr, "/resources"].concat());
        if init {
            init_gpus = f64::max(init_gpus, g);
            init_rdma = f64::max(init_rdma, d);
        } else {
            pod_gpus += g;
            pod_rdma += d;
        }
    }
    r.gpu_requests = r.gpu_requests.max(pod_gpus.max(init_gpus));
    r.rdma_requests = r.rdma_requests.max(pod_rdma.max(init_rdma));
}

#[cfg(test)]
mod tests {
    use crate::compute::{Resource, Source};
    use crate::read::normalize;
    use serde_json::{Value, json};

    fn displays(out: &[Resource]) -> Vec<&str> {
        out.iter().map(|r| r.display.as_str()).collect()
    }

    fn gpu_pod(image: &str) -> Value {
        json!({"containers": [{"name": "c", "image": image,
            "resources": {"limits": {"nvidia.com/gpu": 2}}}]})
    }

    #[test]
    fn list_items_are_read_with_pointers_inside_the_list() {
        let doc = json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {}},
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
             "spec": gpu_pod("nvidia/cuda:12.2.0-base")}]});
        let out = normalize(&doc, Source::Kubernetes);
        assert_eq!(displays(&out), ["Pod ml/p"]);
        assert_eq!(out[0].pointer, "/items/1");
        assert_eq!(
            out[0].fields["gpuRequests"],
            "/items/1/spec/containers/0/resources/limits/nvidia.com~1gpu"
        );
        assert_eq!(out[0].fields["cuda"], "/items/1/spec/containers/0/image");
        // A typed list whose items leave their kind off, and a list nested in a list.
        let typed = json!({"apiVersion": "v1", "kind": "PodList", "items": [
            {"metadata": {"name": "a"}, "spec": gpu_pod("busybox")}]});
        let nested = json!({"apiVersion": "v1", "kind": "List", "items": [typed]});
        let out = normalize(&nested, Source::Unknown);
        assert_eq!(displays(&out), ["Pod a"]);
        assert_eq!(out[0].pointer, "/items/0/items/0");
        assert_eq!(out[0].gpu_requests, 2.0);
    }

    #[test]
    fn every_replica_type_of_a_training_job_is_a_resource() {
        let doc = json!({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
            "metadata": {"name": "bert", "namespace": "t"},
            "spec": {"mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {"containers": [{"image": "mpi"}]}}},
                "Worker": {"replicas": 4, "template": {"spec": gpu_pod("mpi")}}}}});
        let out = normalize(&doc, Source::Unknown);
        assert_eq!(
            displays(&out),
            ["MPIJob t/bert (Launcher)", "MPIJob t/bert (Worker)"]
        );
        assert_eq!(out[1].instance_count, Some(4));
        assert_eq!(
            out[1].fields["instanceCount"],
            "/spec/mpiReplicaSpecs/Worker/replicas"
        );
        assert_eq!(
            out[1].fields["gpuRequests"],
            "/spec/mpiReplicaSpecs/Worker/template/spec/containers/0/resources/limits/nvidia.com~1gpu"
        );
        assert_eq!(out[0].gpu_requests, 0.0);
        assert!(
            out.iter()
                .all(|r| r.workload == "training" && r.distributed)
        );
        for (kind, field) in [
            ("TFJob", "tfReplicaSpecs"),
            ("XGBoostJob", "xgbReplicaSpecs"),
            ("JAXJob", "jaxReplicaSpecs"),
            ("PaddleJob", "paddleReplicaSpecs"),
        ] {
            let doc = json!({"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": "j"},
                "spec": {field: {"Chief": {"template": {"spec": gpu_pod("x")}},
                                 "Worker": {"replicas": 2, "template": {"spec": gpu_pod("x")}}}}});
            let out = normalize(&doc, Source::Unknown);
            assert_eq!(
                displays(&out),
                [format!("{kind} j (Chief)"), format!("{kind} j (Worker)")],
                "{kind}"
            );
        }
    }

    #[test]
    fn kserve_framework_predictors_transformer_explainer_and_workers() {
        let doc = json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "llm"},
            "spec": {
                "predictor": {"minReplicas": 2,
                    "tolerations": [{"key": "sku", "value": "gpu", "effect": "NoSchedule"}],
                    "huggingface": {"storageUri": "hf://x", "image": "kserve/huggingfaceserver:v0.14.0-gpu",
                        "resources": {"limits": {"nvidia.com/gpu": "4"}}},
                    "workerSpec": {"containers": [{"name": "w", "image": "vllm",
                        "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}},
                "transformer": {"containers": [{"image": "t"}]},
                "explainer": {"art": {"image": "art", "resources": {"limits": {"nvidia.com/gpu": 1}}}}}});
        let out = normalize(&doc, Source::Unknown);
        assert_eq!(
            displays(&out),
            [
                "InferenceService llm (predictor)",
                "InferenceService llm (predictor worker)",
                "InferenceService llm (transformer)",
                "InferenceService llm (explainer)"
            ]
        );
        assert_eq!(out[0].gpu_requests, 4.0);
        assert_eq!(out[0].instance_count, Some(2));
        assert_eq!(out[0].tolerations.len(), 1);
        assert_eq!(
            out[0].fields["gpuRequests"],
            "/spec/predictor/huggingface/resources/limits/nvidia.com~1gpu"
        );
        assert_eq!(out[1].gpu_requests, 4.0);
        assert_eq!(out[2].gpu_requests, 0.0);
        // A workerSpec may carry its resources itself, without containers.
        let worker = json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "falcon"}, "spec": {"predictor": {
                "model": {"storageUri": "pvc://m", "resources": {"limits": {"nvidia.com/gpu": 1}}},
                "workerSpec": {"pipelineParallelSize": 2, "tensorParallelSize": 1,
                    "resources": {"limits": {"nvidia.com/gpu": 1}}}}}});
        let w = normalize(&worker, Source::Unknown);
        assert_eq!(
            displays(&w),
            [
                "InferenceService falcon (predictor)",
                "InferenceService falcon (predictor worker)"
            ]
        );
        assert_eq!(
            w[1].fields["gpuRequests"],
            "/spec/predictor/workerSpec/resources/limits/nvidia.com~1gpu"
        );
        assert_eq!(
            out[3].fields["gpuRequests"],
            "/spec/explainer/art/resources/limits/nvidia.com~1gpu"
        );
        assert!(out.iter().all(|r| r.workload == "inference"));
        // Every framework key is read as a container.
        for &fw in super::KSERVE_FRAMEWORKS {
            let doc = json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
                "metadata": {"name": "m"}, "spec": {"predictor": {fw: {"storageUri": "s3://m",
                    "resources": {"requests": {"nvidia.com/gpu": 1}}}}}});
            assert_eq!(
                normalize(&doc, Source::Unknown)[0].gpu_requests,
                1.0,
                "{fw}"
            );
        }
    }

    #[test]
    fn ray_lws_jobset_volcano_argo_knative() {
        let ray = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"image": "rayproject/ray:2.9.0"}]}}},
                     "workerGroupSpecs": [{"groupName": "gpu-group", "replicas": 3, "template": {"spec": gpu_pod("rayproject/ray-ml:2.9.0-gpu")}}]}});
        let out = normalize(&ray, Source::Unknown);
        assert_eq!(
            displays(&out),
            ["RayCluster rc (head)", "RayCluster rc (gpu-group)"]
        );
        assert_eq!((out[1].instance_count, out[1].distributed), (Some(3), true));

        let lws = json!({"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": "vllm"}, "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4,
                "leaderTemplate": {"spec": gpu_pod("vllm")}, "workerTemplate": {"spec": gpu_pod("vllm")}}}});
        let out = normalize(&lws, Source::Unknown);
        assert_eq!(
            displays(&out),
            [
                "LeaderWorkerSet vllm (leader)",
                "LeaderWorkerSet vllm (worker)"
            ]
        );
        // Two groups of one leader and three workers.
        assert_eq!(
            (out[0].instance_count, out[1].instance_count),
            (Some(2), Some(6))
        );
        assert!(out.iter().all(|r| r.workload == "inference"));

        let jobset = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "js"},
            "spec": {"replicatedJobs": [{"name": "workers", "replicas": 2,
                "template": {"spec": {"parallelism": 4, "template": {"spec": gpu_pod("x")}}}}]}});
        let out = normalize(&jobset, Source::Unknown);
        assert_eq!(displays(&out), ["JobSet js (workers)"]);
        assert_eq!(out[0].instance_count, Some(8));

        let volcano = json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v"},
            "spec": {"tasks": [{"name": "ps", "replicas": 1, "template": {"spec": {"containers": [{"image": "tf"}]}}},
                               {"name": "worker", "replicas": 2, "template": {"spec": gpu_pod("tf")}}]}});
        let out = normalize(&volcano, Source::Unknown);
        assert_eq!(displays(&out), ["Job v (ps)", "Job v (worker)"]);
        assert_eq!(out[1].fields["instanceCount"], "/spec/tasks/1/replicas");

        let argo = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "metadata": {"generateName": "wf-"},
            "spec": {"entrypoint": "main",
                "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
                "templates": [{"name": "main", "steps": [[{"name": "t", "template": "train"}]]},
                              {"name": "train", "nodeSelector": {"agentpool": "gpu"},
                               "container": {"image": "pytorch/pytorch", "resources": {"limits": {"nvidia.com/gpu": 1}}}}]}});
        let out = normalize(&argo, Source::Unknown);
        assert_eq!(displays(&out), ["Workflow wf- (train)"]);
        assert_eq!(out[0].tolerations.len(), 1);
        assert_eq!(out[0].fields["tolerations"], "/spec/tolerations");
        assert_eq!(
            out[0].fields["gpuRequests"],
            "/spec/templates/1/container/resources/limits/nvidia.com~1gpu"
        );
        assert_eq!(
            out[0].node_selection.get("agentpool").map(String::as_str),
            Some("gpu")
        );

        let knative = json!({"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": {"name": "k"},
            "spec": {"template": {"spec": gpu_pod("x")}}});
        let out = normalize(&knative, Source::Unknown);
        assert_eq!((out.len(), out[0].workload.as_str()), (1, "inference"));
        // A core Service has no pods.
        assert!(
            normalize(
                &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80}]}}),
                Source::Unknown
            )
            .is_empty()
        );
    }

    #[test]
    fn unknown_kinds_holding_pod_specs_are_workloads_wherever_they_sit() {
        let doc = json!({"apiVersion": "kubeflow.org/v1", "kind": "Notebook",
            "metadata": {"name": "nb", "namespace": "kf"},
            "spec": {"template": {"spec": gpu_pod("kubeflownotebookswg/jupyter-pytorch-cuda:v1.8.0")}}});
        let out = normalize(&doc, Source::Unknown);
        assert_eq!(displays(&out), ["Notebook kf/nb"]);
        assert_eq!(
            (
                out[0].kind.as_str(),
                out[0].workload.as_str(),
                out[0].gpu_requests
            ),
            ("k8s-workload", "unknown", 2.0)
        );
        assert_eq!(
            out[0].fields["gpuRequests"],
            "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu"
        );
        // Two pod specs deep in an unknown kind: each is a resource named by where it sits.
        let deep = json!({"apiVersion": "example.com/v1", "kind": "Trainer", "metadata": {"name": "t"},
            "spec": {"stages": [{"runner": {"template": {"spec": gpu_pod("a")}}},
                                {"runner": {"template": {"spec": {"containers": [{"image": "b"}]}}}}]}});
        let out = normalize(&deep, Source::Unknown);
        assert_eq!(
            displays(&out),
            [
                "Trainer t (spec/stages/0/runner)",
                "Trainer t (spec/stages/1/runner)"
            ]
        );
        assert_eq!(out[0].pointer, "");
        // A known kind whose pod spec sits somewhere the table does not name still counts.
        let extra = json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"},
            "spec": {"rayClusterSpec": {"headGroupSpec": {"template": {"spec": {"containers": [{"image": "ray"}]}}}},
                     "futureField": {"template": {"spec": gpu_pod("ray")}}}});
        let out = normalize(&extra, Source::Unknown);
        assert_eq!(
            displays(&out),
            ["RayJob r (head)", "RayJob r (spec/futureField)"]
        );
        // Admission policies and schemas that mention containers are not workloads.
        let kyverno = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "k"},
            "spec": {"rules": [{"validate": {"pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}}}]}});
        assert!(normalize(&kyverno, Source::Unknown).is_empty());
        // Objects without containers give nothing.
        assert!(
            normalize(
                &json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"containers": "x"}}),
                Source::Unknown
            )
            .is_empty()
        );
    }

    #[test]
    fn required_node_affinity_on_any_label_is_node_selection() {
        let doc = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "nodepool", "operator": "In", "values": ["azure-gpu-nodepool", "other"]},
                    {"key": "nvidia.com/gpu.present", "operator": "Exists"},
                    {"key": "spot", "operator": "DoesNotExist"},
                    {"key": "zone", "operator": "NotIn", "values": ["1"]}]}]}}},
                "containers": [{"image": "x"}]}});
        let r = normalize(&doc, Source::Unknown).remove(0);
        let keys: Vec<&str> = r.node_selection.keys().map(String::as_str).collect();
        assert_eq!(keys, ["nodepool", "nvidia.com/gpu.present"]);
        assert_eq!(r.node_selection["nodepool"], "azure-gpu-nodepool");
        assert_eq!(
            r.fields["nodeSelection.nvidia.com/gpu.present"],
            "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/1/key"
        );
    }

    #[test]
    fn pod_specs_lists_every_site_for_the_webhook() {
        let doc = json!({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "x"},
            "spec": {"pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": gpu_pod("a")}},
                "Worker": {"replicas": 3, "template": {"spec": gpu_pod("a")}}}}});
        assert_eq!(
            super::pod_specs(&doc, "PyTorchJob", "/request/object"),
            [
                (
                    "/request/object/spec/pytorchReplicaSpecs/Master/template/spec".to_string(),
                    Some("/request/object/spec/pytorchReplicaSpecs/Master/replicas".to_string())
                ),
                (
                    "/request/object/spec/pytorchReplicaSpecs/Worker/template/spec".to_string(),
                    Some("/request/object/spec/pytorchReplicaSpecs/Worker/replicas".to_string())
                )
            ]
        );
    }
}
