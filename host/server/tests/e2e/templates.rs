//! The template cache (`computeguard_server::template`): an object answered from the
//! template another object evaluated gets the answer it would have got on its own, with
//! its own name in the messages; a policy that is not name-blind still runs on every
//! object.

use super::plain::{engine, every_object};
use computeguard_engine::Engine;
use computeguard_server::admission;
use computeguard_server::review::decide;
use computeguard_server::{Decision, LoadedPolicy, Mode, PolicySet, WebhookConfig};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The built-in policy, name-blind (as the loader marks it) or not.
fn builtin(engine: &Engine, name_blind: bool) -> Result<LoadedPolicy, Box<dyn std::error::Error>> {
    Ok(LoadedPolicy::new(
        engine.load(computeguard_builtins::BUILTINS[0].component, "builtin")?,
        json!({}),
        true,
    )
    .with_name_blind(name_blind))
}

fn set(policies: Vec<LoadedPolicy>) -> Result<PolicySet, Box<dyn std::error::Error>> {
    Ok(PolicySet::new(
        policies,
        BTreeMap::new(),
        WebhookConfig::from_json(
            &json!({"mutations": {"gpuToleration": true, "minNodesZero": true}}),
        )?,
        Some("2026-11-22".into()),
    ))
}

fn review_of(uid: &str, object: &Value) -> String {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": object["kind"]},
            "namespace": object.pointer("/metadata/namespace").cloned().unwrap_or(json!("default")),
            "name": object["metadata"]["name"], "operation": "CREATE",
            "userInfo": {"username": "test"}, "object": object}})
    .to_string()
}

fn decide_on(set: &PolicySet, uid: &str, object: &Value, mode: Mode) -> Decision {
    let body = review_of(uid, object);
    let review = admission::parse(body.as_bytes()).expect("a valid AdmissionReview");
    decide(set, &review, mode, Instant::now() + Duration::from_secs(10))
}

/// The same object under another name of the same length, with its own uid and
/// creation time: a sibling Pod of one ReplicaSet.
fn sibling(object: &Value) -> Value {
    let mut s = object.clone();
    if let Some(name) = object.pointer("/metadata/name").and_then(Value::as_str) {
        let other: String = name
            .chars()
            .map(|c| match c {
                'a'..='y' => ((c as u8) + 1) as char,
                'z' => 'a',
                '0'..='8' => ((c as u8) + 1) as char,
                '9' => '0',
                c => c,
            })
            .collect();
        s["metadata"]["name"] = json!(other);
    }
    s["metadata"]["uid"] = json!("0b6f3c0e-sibling");
    s["metadata"]["creationTimestamp"] = json!("2026-11-26T01:02:03Z");
    s
}

/// Everything an answer says, findings included.
fn said(d: &Decision) -> String {
    format!("{:?} {:?} {:?}", d.answer, d.verdict, d.findings)
}

#[test]
fn templates_answer_as_each_object_would() -> TestResult {
    let engine = engine()?;
    let direct = set(vec![builtin(&engine, false)?])?;
    let templated = set(vec![builtin(&engine, true)?])?;
    let objects = every_object()?;
    assert!(objects.len() >= 50, "only {} objects", objects.len());
    let (mut hits, mut with_findings) = (0, 0);
    for (i, (file, object)) in objects.iter().enumerate() {
        let what = format!("{file}: {} {}", object["kind"], object["metadata"]["name"]);
        for mode in [Mode::Validate, Mode::Mutate] {
            // The sibling evaluates the template; the object is then answered from it.
            let first = decide_on(&templated, &format!("s{i}"), &sibling(object), mode);
            let expected_sibling = decide_on(&direct, &format!("s{i}"), &sibling(object), mode);
            assert_eq!(
                said(&first),
                said(&expected_sibling),
                "{what} (sibling, {mode:?})"
            );
            let answered = decide_on(&templated, &format!("u{i}"), object, mode);
            let expected = decide_on(&direct, &format!("u{i}"), object, mode);
            assert_eq!(said(&answered), said(&expected), "{what} ({mode:?})");
            if answered.template == Some("hit") {
                hits += 1;
                with_findings += usize::from(!answered.findings.is_empty());
            }
            // Without name-blind policies no policy's answer comes from a template; only
            // "nothing here is compute" may (it holds whatever the policies read).
            assert!(
                expected.template.is_none() || expected.skipped.is_some(),
                "{what}: no template answer without name-blind policies"
            );
        }
    }
    eprintln!(
        "{} objects: {hits} answers from a sibling's template ({with_findings} with findings)",
        objects.len()
    );
    // The hit path is exercised, on objects with findings that name them.
    assert!(hits >= 40, "{hits} hits");
    assert!(with_findings >= 20, "{with_findings} hits with findings");
    Ok(())
}

fn replica(name: &str, uid: &str, image: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "generateName": "trainer-6d8f7c9b5d-", "namespace": "ml", "uid": uid,
            "creationTimestamp": "2026-11-26T00:00:00Z",
            "labels": {"pod-template-hash": "6d8f7c9b5d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "trainer-6d8f7c9b5d", "uid": "rs-1"}]},
        "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "Standard_NC6"},
            "containers": [{"name": "main", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})
}

#[test]
fn the_pods_of_one_replicaset_share_one_evaluation_and_keep_their_names() -> TestResult {
    let engine = engine()?;
    let templated = set(vec![builtin(&engine, true)?])?;
    let cuda12 = "nvidia/cuda:12.4.1-runtime-ubuntu22.04";
    let a = decide_on(
        &templated,
        "a",
        &replica("trainer-6d8f7c9b5d-x2x7q", "1", cuda12),
        Mode::Validate,
    );
    let b = decide_on(
        &templated,
        "b",
        &replica("trainer-6d8f7c9b5d-k9zzt", "2", cuda12),
        Mode::Validate,
    );
    assert_eq!((a.template, b.template), (Some("miss"), Some("hit")));
    assert_eq!(templated.templates.len(), 1);
    assert!(!a.findings.is_empty());
    for (d, own, other) in [(&a, "x2x7q", "k9zzt"), (&b, "k9zzt", "x2x7q")] {
        let text = said(d);
        assert!(
            text.contains(&format!("trainer-6d8f7c9b5d-{own}")),
            "{text}"
        );
        assert!(!text.contains(other) && !text.contains("cgtmpl"), "{text}");
    }
    // Another image is another template.
    let c = decide_on(
        &templated,
        "c",
        &replica(
            "trainer-6d8f7c9b5d-p4p4p",
            "3",
            "pytorch/pytorch:2.3.0-cuda11.8-cudnn8-runtime",
        ),
        Mode::Validate,
    );
    assert_eq!(c.template, Some("miss"));
    assert_eq!(templated.templates.len(), 2);
    // Turned off, nothing is kept.
    let mut off = set(vec![builtin(&engine, true)?])?;
    off = PolicySet::new(
        std::mem::take(&mut off.policies),
        BTreeMap::new(),
        WebhookConfig::from_json(&json!({"limits": {"templateCacheEntries": 0}}))?,
        Some("2026-11-22".into()),
    );
    let d = decide_on(
        &off,
        "d",
        &replica("trainer-6d8f7c9b5d-x2x7q", "1", cuda12),
        Mode::Validate,
    );
    let e = decide_on(
        &off,
        "e",
        &replica("trainer-6d8f7c9b5d-k9zzt", "2", cuda12),
        Mode::Validate,
    );
    assert_eq!((d.template, e.template), (None, None));
    assert_eq!(said(&e), said(&b));
    Ok(())
}

#[test]
fn a_plain_pod_seen_before_is_admitted_from_its_template_without_reading_it_again() -> TestResult {
    // Issue 36: a template seen before decides in the pre-check, before the object's
    // compute model is read: the Pods of a ReplicaSet without compute too.
    let engine = engine()?;
    let templated = set(vec![builtin(&engine, true)?])?;
    let plain = |name: &str, uid: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "web", "uid": uid,
                "labels": {"pod-template-hash": "7c9b5d6d8f"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}})
    };
    for mode in [Mode::Validate, Mode::Mutate] {
        let a = decide_on(&templated, "a", &plain("web-7c9b5d6d8f-x2x7q", "1"), mode);
        let b = decide_on(&templated, "b", &plain("web-7c9b5d6d8f-k9zzt", "2"), mode);
        assert_eq!(a.skipped, Some("no compute fact declared"), "{mode:?}");
        assert_eq!(said(&a), said(&b), "{mode:?}");
        assert_eq!(
            (a.skipped, b.template),
            (b.skipped, Some("hit")),
            "{mode:?}"
        );
    }
    assert_eq!(templated.templates.len(), 1);
    // A GPU Pod seen before is decided there too, in both modes, as on its own.
    let direct = set(vec![builtin(&engine, false)?])?;
    let cuda12 = "nvidia/cuda:12.4.1-runtime-ubuntu22.04";
    for mode in [Mode::Validate, Mode::Mutate] {
        let _ = decide_on(
            &templated,
            "c",
            &replica("trainer-6d8f7c9b5d-x2x7q", "1", cuda12),
            mode,
        );
        let object = replica("trainer-6d8f7c9b5d-k9zzt", "2", cuda12);
        let hit = decide_on(&templated, "d", &object, mode);
        assert_eq!(hit.template, Some("hit"), "{mode:?}");
        let own = decide_on(&direct, "d", &object, mode);
        assert_eq!(said(&hit), said(&own), "{mode:?}");
    }
    Ok(())
}

#[test]
fn a_policy_that_is_not_name_blind_runs_on_every_object() -> TestResult {
    let engine = engine()?;
    let hostile = LoadedPolicy::new(
        engine.load(
            computeguard_builtins::test_policies::HOSTILE,
            "hostile.wasm",
        )?,
        json!({}),
        false,
    );
    let mixed = set(vec![builtin(&engine, true)?, hostile])?;
    let pod = |name: &str| {
        let mut p = replica(name, name, "nvidia/cuda:12.4.1-runtime-ubuntu22.04");
        p["metadata"]["annotations"] = json!({"hostile.computeguard.io/act": "panic"});
        p
    };
    for (i, name) in ["trainer-6d8f7c9b5d-x2x7q", "trainer-6d8f7c9b5d-k9zzt"]
        .iter()
        .enumerate()
    {
        let d = decide_on(&mixed, name, &pod(name), Mode::Validate);
        // The built-in answers from the template the second time; the hostile policy
        // ran (and failed) both times.
        assert_eq!(d.template, Some(if i == 0 { "miss" } else { "hit" }));
        assert_eq!(d.failures.len(), 1, "{:?}", d.failures);
        assert!(
            d.findings.iter().any(|f| f.message.contains(name)),
            "{:?}",
            d.findings
        );
    }
    Ok(())
}
