//! The built-in pack's typed programs answer as the interpreter does (issue 36).
//!
//! The evaluator tries an expression's typed program before cel-interpreter and falls
//! back to the interpreter whenever the program cannot answer by itself
//! (`core/src/eval/typed.rs`). Here every fixture, example and corpus file is evaluated
//! by the built-in pack twice, with the programs and with the interpreter alone, under
//! several settings and dates, and the outcomes (violations, messages, severities,
//! paths, errors) must be equal: first with no Azure context, then with one (the SKU
//! list and usage of `tests/fixtures/context/quota`, and a workspace region), so that
//! `skuOffer` and `quota` answer from facts.
//!
//! Each evaluation is also made a third way, the webhook's: from the compute model read
//! natively and handed over as bytes (`handoff::encode`, then `decode` and
//! `Evaluator::evaluate_read` with the document's text), which must answer the same.

use computeguard_compiler::compile;
use computeguard_decode::{decode_bicep, decode_hcl, decode_json, decode_yaml};
use computeguard_policy_core::eval::{Evaluator, Input};
use computeguard_policy_core::model::{Source, normalize};
use computeguard_policy_core::{context, handoff};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Every document of `path` the decoders read, as JSON; none for other files.
fn documents(path: &Path) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let decoded = match ext {
        "json" => decode_json(&text).map(|d| vec![d]),
        "yaml" | "yml" => decode_yaml(&text),
        "bicep" => decode_bicep(&text).map(|d| vec![d]),
        "tf" => decode_hcl(&text).map(|d| vec![d]),
        _ => return Vec::new(),
    };
    decoded
        .map(|docs| docs.into_iter().map(|d| d.value).collect())
        .unwrap_or_default()
}

#[test]
fn builtin_pack_answers_the_same_with_and_without_typed_programs() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text =
        std::fs::read_to_string(root.join("policies/builtin.yaml")).map_err(|e| e.to_string())?;
    let compiled = compile("policies/builtin.yaml", &text).map_err(|d| format!("{d:?}"))?;
    let typed = Evaluator::new(compiled.pack.clone());
    let interpreted = Evaluator::new(compiled.pack).interpreted_only();
    // Most conditions of the built-in pack have a program.
    let programs = typed.typed_programs();
    assert!(programs >= 30, "only {programs} typed programs");
    assert_eq!(interpreted.typed_programs(), programs);

    let (evaluations, rules) = compare(&root, &typed, &interpreted);
    assert!(
        evaluations > 5_000 && rules.len() >= 15,
        "{evaluations} evaluations finding {rules:?}"
    );

    // The same with an Azure context installed (once per process: this is the only test
    // of this file).
    let fixture = |name: &str| -> Result<Value, String> {
        let path = root.join("tests/fixtures/context/quota").join(name);
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    };
    let ctx = json!({"azure": {
        "skus": [fixture("eastus-skus.json")?],
        "usage": {"eastus": fixture("eastus-usage.json")?},
        "workspaceRegion": "eastus",
    }});
    let parsed = context::parse(&ctx.to_string()).map_err(|e| e.to_string())?;
    context::install(parsed).map_err(|e| e.to_string())?;
    let (evaluations, rules) = compare(&root, &typed, &interpreted);
    // The facts are used: both rules that need them find something.
    assert!(
        rules.contains("sku-available-in-region") && rules.contains("quota-sufficient"),
        "{evaluations} evaluations finding {rules:?} with a context"
    );
    Ok(())
}

/// Evaluates every file both ways and requires equal outcomes; the number of
/// evaluations and the rules the interpreter found violated.
fn compare(root: &Path, typed: &Evaluator, interpreted: &Evaluator) -> (usize, BTreeSet<String>) {
    let mut paths = Vec::new();
    for dir in ["tests/fixtures", "examples", "../shared/corpus"] {
        files(&root.join(dir), &mut paths);
    }
    paths.sort();
    let settings = [
        json!({}),
        json!({"regions": {"allowed": ["eastus", "westeurope"]}}),
        json!({"regions": {"allowedGeographies": ["Europe"]}}),
        json!({"change": {"complete": true, "gpuDrivers": [{"operator": true, "driverEnabled": true}],
                          "migWorkloads": [{"pool": null, "sku": null}]}}),
    ];
    let sources = [
        Source::Unknown,
        Source::Kubernetes,
        Source::AzureMl,
        Source::Arm,
        Source::Terraform,
    ];
    let (mut evaluations, mut rules) = (0, BTreeSet::new());
    for path in &paths {
        for doc in documents(path) {
            let text = doc.to_string();
            for source in sources {
                let model = handoff::encode(&normalize(&doc, source));
                for settings in &settings {
                    for as_of in ["2023-01-01", "2026-11-22"] {
                        let input = Input {
                            document: &doc,
                            source,
                            settings,
                            as_of,
                        };
                        let (a, b) = (typed.evaluate(&input), interpreted.evaluate(&input));
                        let resources = handoff::decode(&model);
                        assert!(resources.is_ok(), "{}: {resources:?}", path.display());
                        let resources = resources.unwrap_or_default();
                        let read = typed.evaluate_read(resources, &text, settings, as_of);
                        assert_eq!(
                            format!("{read:?}"),
                            format!("{a:?}"),
                            "{} as {source:?} with {settings} at {as_of}, from its model",
                            path.display()
                        );
                        if let Ok(out) = &b {
                            rules.extend(out.violations.iter().map(|v| v.rule.clone()));
                        }
                        assert_eq!(
                            format!("{a:?}"),
                            format!("{b:?}"),
                            "{} as {source:?} with {settings} at {as_of}",
                            path.display()
                        );
                        evaluations += 1;
                    }
                }
            }
        }
    }
    (evaluations, rules)
}
