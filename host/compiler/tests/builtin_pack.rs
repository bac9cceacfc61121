//! The built-in pack compiles and its own test cases pass when evaluated natively
//! (the CLI's `computeguard test` runs the same cases through the component).

use computeguard_compiler::{TestDocument, compile};
use computeguard_policy_core::eval::{Evaluator, Input};
use computeguard_policy_core::model::Source;
use std::collections::BTreeSet;

#[test]
fn builtin_pack_cases_pass_natively() -> Result<(), String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies/builtin.yaml");
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let compiled = compile("policies/builtin.yaml", &text).map_err(|d| {
        d.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    assert!(compiled.tests.len() >= 10);
    let evaluator = Evaluator::new(compiled.pack.clone());
    let mut failures = Vec::new();
    for t in &compiled.tests {
        let TestDocument::Inline(doc) = &t.document else {
            continue;
        };
        let settings = t.settings.clone().unwrap_or_else(|| serde_json::json!({}));
        let out = evaluator
            .evaluate(&Input {
                document: doc,
                source: Source::Unknown,
                settings: &settings,
                as_of: t.as_of.as_deref().unwrap_or("2026-11-22"),
            })
            .map_err(|e| format!("{}: {e}", t.name))?;
        let got: BTreeSet<&str> = out.violations.iter().map(|v| v.rule.as_str()).collect();
        let want: BTreeSet<&str> = t.expect.iter().map(String::as_str).collect();
        if got != want {
            failures.push(format!(
                "{}: expected {want:?}, got {got:?}\n{:#?}",
                t.name, out.violations
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}
