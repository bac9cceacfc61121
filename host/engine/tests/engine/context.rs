//! Context (catalog overlays, Azure facts) given to a policy through
//! `computeguard:policy/context`: the snapshot and the component as built answer the
//! same, a context the policy refuses or cannot hold is a load error (never a policy
//! that silently runs without it), and a snapshot is cached per context.

// Test code: a helper that cannot do its job fails the test with the reason.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use computeguard_engine::{Engine, EngineConfig, LoadError, Policy, PolicyContext, Request};
use std::path::{Path, PathBuf};

fn builtin() -> &'static [u8] {
    computeguard_builtins::BUILTINS[0].component
}

fn engine(cache: &Path, preinitialise: bool, memory_mib: usize) -> anyhow::Result<Engine> {
    Ok(Engine::new(EngineConfig {
        cache_dir: Some(cache.to_path_buf()),
        preinitialise,
        memory_limit: memory_mib << 20,
        ..EngineConfig::default()
    })?)
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// An AKS pool of `size` (ARM), evaluated at 2026-11-22.
fn pool(size: &str) -> Request {
    let doc = serde_json::json!({"type": "Microsoft.ContainerService/managedClusters/agentPools",
        "apiVersion": "2024-05-01", "name": "aks/gpu",
        "properties": {"vmSize": size, "count": 1, "enableAutoScaling": true, "minCount": 0, "maxCount": 2,
                        "nodeTaints": ["sku=gpu:NoSchedule"]}});
    Request {
        document: doc.to_string(),
        source_kind: computeguard_engine::SourceKind::Arm,
        operation: computeguard_engine::Operation::None,
        settings: "{}".into(),
        as_of: "2026-11-22".into(),
    }
}

fn rules(policy: &Policy, size: &str) -> Vec<String> {
    let mut r: Vec<String> = policy
        .evaluate(&pool(size))
        .expect("evaluates")
        .violations
        .into_iter()
        .map(|v| format!("{}: {}", v.rule, v.message))
        .collect();
    r.sort();
    r
}

const OVERLAY: &str = r#"{"catalog": [{"kind": "CatalogOverlay", "skus": [
    {"name": "Standard_NC48ads_H200_v6", "source": "test", "vcpus": 48,
     "gpu": {"vendor": "NVIDIA", "count": 2, "computeCapability": "9.0", "architecture": "Hopper"}},
    {"name": "Standard_NC24ads_A100_v4", "source": "test", "retirementDate": "2026-01-31"}]}]}"#;

#[test]
fn the_snapshot_and_the_built_component_answer_the_same_with_a_context() -> anyhow::Result<()> {
    let context = PolicyContext::new(OVERLAY.to_string());
    let mut answers = Vec::new();
    for preinitialise in [true, false] {
        let dir = fresh_dir(&format!("context-same-{preinitialise}"));
        let e = engine(&dir, preinitialise, 64)?;
        let with = e.load_with_context(builtin(), "builtin", Some(&context))?;
        assert!(with.takes_context());
        let without = e.load(builtin(), "builtin")?;
        let unknown = rules(&without, "Standard_NC48ads_H200_v6");
        assert!(
            unknown.iter().any(|r| r.starts_with("sku-unknown")),
            "{unknown:?}"
        );
        let known = rules(&with, "Standard_NC48ads_H200_v6");
        assert!(
            !known.iter().any(|r| r.starts_with("sku-unknown")),
            "{known:?}"
        );
        let retired = rules(&with, "Standard_NC24ads_A100_v4");
        assert!(
            retired
                .iter()
                .any(|r| r.starts_with("sku-retired") && r.contains("retired on 2026-01-31")),
            "{retired:?}"
        );
        answers.push((known, retired));
    }
    assert_eq!(answers[0], answers[1], "snapshot and built component agree");
    Ok(())
}

#[test]
fn a_refused_context_is_a_load_error_with_every_problem() -> anyhow::Result<()> {
    for preinitialise in [true, false] {
        let dir = fresh_dir(&format!("context-refused-{preinitialise}"));
        let e = engine(&dir, preinitialise, 64)?;
        let bad = PolicyContext::new(
            r#"{"catalog": [{"kind": "CatalogOverlay", "skus": [{"name": "Standard_NC6"}]}], "extra": 1}"#.into(),
        );
        let err = e
            .load_with_context(builtin(), "builtin", Some(&bad))
            .expect_err("refused");
        let text = err.to_string();
        assert!(matches!(err, LoadError::Context { .. }), "{text}");
        assert!(text.contains("`extra`: unknown key"), "{text}");
        assert!(
            text.contains("catalog[0]: at `/skus/0/source`: required field is missing"),
            "{text}"
        );
    }
    Ok(())
}

#[test]
fn a_context_too_large_for_the_memory_cap_is_a_load_error_not_a_silent_drop() -> anyhow::Result<()>
{
    // 40,000 sizes is far more than 4 MiB of policy memory can hold.
    let skus: Vec<String> = (0..40_000)
        .map(|i| format!(r#"{{"name": "Standard_D{i}s_v9", "source": "a long enough source text {i}", "vcpus": 4}}"#))
        .collect();
    let big = PolicyContext::new(format!(
        r#"{{"catalog": [{{"kind": "CatalogOverlay", "skus": [{}]}}]}}"#,
        skus.join(",")
    ));
    for preinitialise in [true, false] {
        let dir = fresh_dir(&format!("context-large-{preinitialise}"));
        let e = engine(&dir, preinitialise, 24)?;
        let err = e
            .load_with_context(builtin(), "builtin", Some(&big))
            .expect_err("cannot hold it");
        assert!(matches!(err, LoadError::Context { .. }), "{err}");
        assert!(err.to_string().contains("memory"), "{err}");
    }
    Ok(())
}

#[test]
fn each_context_gets_its_own_cached_snapshot() -> anyhow::Result<()> {
    let dir = fresh_dir("context-cache");
    let e = engine(&dir, true, 64)?;
    e.load(builtin(), "builtin")?;
    let compiled = e.compiled();
    let context = PolicyContext::new(OVERLAY.to_string());
    e.load_with_context(builtin(), "builtin", Some(&context))?;
    assert_eq!(
        e.compiled(),
        compiled + 1,
        "a new context is a new snapshot"
    );
    e.load_with_context(builtin(), "builtin", Some(&context))?;
    assert_eq!(e.compiled(), compiled + 1, "the same context reuses it");
    Ok(())
}
