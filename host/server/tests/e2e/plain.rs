//! A workload that states no compute fact is admitted without a sandbox when every loaded
//! policy judges only compute facts (the built-in ones), and the answer is the one the
//! policies would have given: checked on every Kubernetes object of the repository's real
//! fixtures and the shared corpus, decided once with the skip and once without.

use computeguard_engine::{Engine, EngineConfig};
use computeguard_server::admission;
use computeguard_server::review::decide;
use computeguard_server::{LoadedPolicy, Mode, PolicySet, Verdict, WebhookConfig};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub(crate) fn engine() -> Result<Engine, Box<dyn std::error::Error>> {
    Ok(Engine::new(EngineConfig {
        cache_dir: Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache")),
        ..EngineConfig::default()
    })?)
}

fn set(engine: &Engine, only_compute_facts: bool) -> Result<PolicySet, Box<dyn std::error::Error>> {
    Ok(PolicySet::new(
        vec![LoadedPolicy::new(
            engine.load(computeguard_builtins::BUILTINS[0].component, "builtin")?,
            serde_json::json!({}),
            only_compute_facts,
        )],
        BTreeMap::new(),
        WebhookConfig::from_json(&json!({}))?,
        Some("2026-11-22".into()),
    ))
}

/// Every Kubernetes object (with `apiVersion`, `kind`, `metadata.name`) in the files:
/// documents, `List` items and the `request.object` of AdmissionReviews.
pub(crate) fn objects(
    dirs: &[PathBuf],
) -> Result<Vec<(String, Value)>, Box<dyn std::error::Error>> {
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue; // ../shared may be absent outside CI
        };
        let mut files: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort();
        for file in files {
            let name = file.display().to_string();
            let Ok(text) = std::fs::read_to_string(&file) else {
                continue;
            };
            let docs = match file.extension().and_then(|e| e.to_str()) {
                Some("json") => vec![serde_json::from_str::<Value>(&text)?],
                Some("yaml" | "yml") => computeguard_decode::decode_yaml(&text)?
                    .into_iter()
                    .map(|d| d.value)
                    .collect(),
                _ => continue,
            };
            for doc in docs {
                let doc = doc.pointer("/request/object").cloned().unwrap_or(doc);
                let items = match doc.get("items") {
                    Some(Value::Array(items)) => items.clone(),
                    _ => vec![doc],
                };
                for o in items {
                    if o.get("apiVersion").is_some() && o.pointer("/metadata/name").is_some() {
                        out.push((name.clone(), o));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Every Kubernetes object of the repository's fixtures and the shared corpus.
pub(crate) fn every_object() -> Result<Vec<(String, Value)>, Box<dyn std::error::Error>> {
    let fixtures = root().join("tests/fixtures");
    objects(&[
        fixtures.join("admission-review"),
        fixtures.join("kubernetes"),
        fixtures.join("workloads"),
        fixtures.join("audit"),
        root().join("../shared/corpus/k8s-pods"),
        root().join("../shared/corpus/admission-review"),
    ])
}

#[test]
fn plain_workloads_get_the_same_answer_without_a_sandbox() -> TestResult {
    let engine = engine()?;
    let (skipping, evaluating) = (set(&engine, true)?, set(&engine, false)?);
    let objects = every_object()?;
    assert!(objects.len() >= 50, "only {} objects", objects.len());
    let mut skipped = Vec::new();
    for (i, (file, object)) in objects.iter().enumerate() {
        let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": format!("u{i}"), "kind": {"group": "", "version": "v1", "kind": object["kind"]},
                "namespace": object.pointer("/metadata/namespace").cloned().unwrap_or(json!("default")),
                "name": object["metadata"]["name"], "operation": "CREATE",
                "userInfo": {"username": "test"}, "object": object}})
        .to_string();
        let review = admission::parse(body.as_bytes()).map_err(|e| format!("{e:?}"))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        let fast = decide(&skipping, &review, Mode::Validate, deadline);
        let full = decide(&evaluating, &review, Mode::Validate, deadline);
        let what = format!("{file}: {} {}", object["kind"], object["metadata"]["name"]);
        assert_eq!(fast.answer, full.answer, "{what}");
        if fast.skipped == Some("no compute fact declared") {
            // What the policies found on it when they ran: nothing.
            assert!(full.findings.is_empty(), "{what}: {:?}", full.findings);
            assert_eq!(full.verdict, Verdict::Allowed, "{what}");
            skipped.push(what);
        }
    }
    eprintln!(
        "{} objects, {} admitted without a sandbox",
        objects.len(),
        skipped.len()
    );
    // The skip is real: CPU-only workloads of the fixtures (Kubewarden's pods, nginx) skip.
    assert!(skipped.len() >= 10, "{skipped:#?}");
    assert!(
        skipped
            .iter()
            .any(|s| s.contains("kubewarden-kwctl-unprivileged-pod")),
        "{skipped:#?}"
    );
    Ok(())
}

#[test]
fn a_policy_that_sees_every_workload_is_run_on_a_plain_one() -> TestResult {
    let engine = engine()?;
    let mut mixed = set(&engine, true)?;
    mixed.policies.push(LoadedPolicy::new(
        engine.load(
            computeguard_builtins::test_policies::HOSTILE,
            "hostile.wasm",
        )?,
        serde_json::json!({}),
        false,
    ));
    let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": "web", "name": "web", "operation": "CREATE", "userInfo": {"username": "t"},
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "web"},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}})
    .to_string();
    let review = admission::parse(body.as_bytes()).map_err(|e| format!("{e:?}"))?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let only_builtin = decide(&set(&engine, true)?, &review, Mode::Validate, deadline);
    assert_eq!(only_builtin.skipped, Some("no compute fact declared"));
    let decision = decide(&mixed, &review, Mode::Validate, deadline);
    assert_eq!(
        decision.skipped, None,
        "the hostile policy must see the plain Pod"
    );
    Ok(())
}
