//! Pre-initialisation (`EngineConfig::preinitialise`) must change only the speed of a
//! policy: the snapshot and the component as built give the same answer to every
//! request, each evaluation still starts from a clean instance, and a policy that
//! is not a `computeguard build` composition is loaded as it is.

use computeguard_engine::{Engine, EngineConfig, Policy, Request};
use std::path::{Path, PathBuf};

fn builtin() -> &'static [u8] {
    computeguard_builtins::BUILTINS[0].component
}

fn engine(cache: &Path, preinitialise: bool) -> anyhow::Result<Engine> {
    Ok(Engine::new(EngineConfig {
        cache_dir: Some(cache.to_path_buf()),
        preinitialise,
        ..EngineConfig::default()
    })?)
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn artifacts(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every JSON document the repository keeps as a test input: corpus copies
/// (AdmissionReviews, ARM), the embedding cases, plus edge cases.
fn documents() -> anyhow::Result<Vec<(String, String)>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs = Vec::new();
    for dir in [
        "tests/fixtures/admission-review",
        "tests/fixtures/arm",
        "tests/fixtures/kaito",
        "examples/embed-cases/cases",
    ] {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "json") {
                docs.push((path.display().to_string(), std::fs::read_to_string(&path)?));
            }
        }
    }
    for (name, text) in [
        ("empty object", "{}"),
        ("not an object", "[1, 2]"),
        ("not JSON", "{\"type\": "),
        (
            "retired cluster",
            r#"{"type":"amlcompute","name":"old","size":"Standard_NC6","min_instances":2,"location":"westus"}"#,
        ),
    ] {
        docs.push((name.to_string(), text.to_string()));
    }
    docs.sort();
    assert!(docs.len() > 10, "found only {} documents", docs.len());
    Ok(docs)
}

/// The full answer, errors included, as comparable text.
fn answer(policy: &Policy, document: &str, settings: &str) -> String {
    let mut request = Request::new(document, "2026-11-22");
    request.settings = settings.to_string();
    format!("{:?}", policy.evaluate(&request))
}

#[test]
fn snapshot_and_component_as_built_give_the_same_answers() -> anyhow::Result<()> {
    let prepared_dir = fresh_dir("preinit-prepared");
    let plain_dir = fresh_dir("preinit-plain");
    let prepared = engine(&prepared_dir, true)?.load(builtin(), "builtin")?;
    let plain = engine(&plain_dir, false)?.load(builtin(), "builtin")?;

    // The pre-initialised path was really taken (and the other one was not).
    let names = artifacts(&prepared_dir);
    assert!(
        names.len() == 1 && names[0].contains("-prepared-"),
        "{names:?}"
    );
    let names = artifacts(&plain_dir);
    assert!(
        names.len() == 1 && !names[0].contains("-prepared-"),
        "{names:?}"
    );

    assert_eq!(
        format!("{:?}", prepared.info()),
        format!("{:?}", plain.info())
    );
    let settings = [
        "{}",
        r#"{"regions": {"allowed": ["eastus"]}}"#,
        r#"{"regions": 7}"#,
    ];
    let mut findings = 0;
    for (name, doc) in documents()? {
        for s in settings {
            let a = answer(&prepared, &doc, s);
            assert_eq!(a, answer(&plain, &doc, s), "{name} with settings {s}");
            findings += a.matches("Violation {").count();
        }
    }
    assert!(
        findings > 10,
        "the documents should trigger rules: {findings}"
    );
    Ok(())
}

#[test]
fn each_evaluation_starts_from_the_snapshot() -> anyhow::Result<()> {
    let dir = fresh_dir("preinit-isolation");
    let policy = engine(&dir, true)?.load(builtin(), "builtin")?;
    let docs = documents()?;
    let first: Vec<String> = docs.iter().map(|(_, d)| answer(&policy, d, "{}")).collect();
    // The same documents in reverse order: an answer that depended on what an
    // earlier evaluation left behind (a memo, a heap) would differ.
    for ((name, doc), expected) in docs.iter().zip(&first).rev() {
        assert_eq!(&answer(&policy, doc, "{}"), expected, "{name}");
    }
    Ok(())
}

#[test]
fn prepared_artifact_is_reused_from_the_cache() -> anyhow::Result<()> {
    let dir = fresh_dir("preinit-cache");
    let first = engine(&dir, true)?.load(builtin(), "builtin")?;
    let before = artifacts(&dir);
    // A new engine finds the snapshot; it neither compiles nor snapshots again.
    let second = engine(&dir, true)?.load(builtin(), "builtin")?;
    assert_eq!(artifacts(&dir), before);
    let doc = r#"{"type":"amlcompute","name":"old","size":"Standard_NC6","min_instances":2}"#;
    assert_eq!(answer(&first, doc, "{}"), answer(&second, doc, "{}"));
    assert!(answer(&second, doc, "{}").contains("sku-retired"));
    Ok(())
}

/// The webhook hands the pre-initialised runtime the compute model it has already read
/// (`Policy::evaluate_read_async`, the WIT's `read-model`): the answer must be the one
/// the document gets, for every document the runtime would read, under every settings
/// (refused ones included). The component as built does not export `read-model` (a
/// finished policy's contract is `evaluator` and `context`), so it is evaluated as
/// usual and answers the same.
#[tokio::test(flavor = "current_thread")]
async fn a_handed_over_model_gets_the_answer_of_its_document() -> anyhow::Result<()> {
    use computeguard_policy_core::model::{Source, normalize};
    use computeguard_policy_core::read::{readable, source_mismatch};
    let prepared = engine(&fresh_dir("read-model-prepared"), true)?.load(builtin(), "builtin")?;
    let plain = engine(&fresh_dir("read-model-plain"), false)?.load(builtin(), "builtin")?;
    assert!(prepared.reads_models());
    assert!(!plain.reads_models());
    let deadline = || std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (mut read, mut findings) = (0, 0);
    for (name, doc) in documents()? {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&doc) else {
            continue;
        };
        if !readable(&value) || source_mismatch(&value, Source::Unknown).is_some() {
            continue;
        }
        let resources = normalize(&value, Source::Unknown);
        for settings in [
            "{}",
            r#"{"regions": {"allowed": ["eastus"]}}"#,
            r#"{"regions": 7}"#,
        ] {
            let mut request = Request::new(doc.as_str(), "2026-11-22");
            request.settings = settings.to_string();
            let expected = format!("{:?}", prepared.evaluate(&request));
            for policy in [&prepared, &plain] {
                let got = policy
                    .evaluate_read_async(&request, &resources, deadline())
                    .await;
                assert_eq!(
                    format!("{got:?}"),
                    expected,
                    "{name} with settings {settings}"
                );
            }
            findings += expected.matches("Violation {").count();
            read += 1;
        }
    }
    assert!(
        read > 30 && findings > 10,
        "{read} evaluations, {findings} findings"
    );
    Ok(())
}
