//! `computeguard test [PACK.yaml|DIR]`: runs each pack's `tests:` through the
//! compiled component (the same path `check` uses), like a test runner.

use crate::{Outcome, policies};
use anyhow::{Context as _, anyhow};
use computeguard_compiler::TestDocument;
use computeguard_engine::Request;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct TestArgs {
    /// Pack files or directories of packs (default: policies/).
    pub paths: Vec<PathBuf>,
}

pub fn run(args: TestArgs) -> anyhow::Result<Outcome> {
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from("policies")]
    } else {
        args.paths
    };
    let mut packs = Vec::new();
    for p in &paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect();
            found.sort();
            packs.extend(found);
        } else if p.exists() {
            packs.push(p.clone());
        } else {
            anyhow::bail!("path `{}` does not exist", p.display());
        }
    }
    let engine = crate::engine()?;
    let (mut passed, mut failed) = (0, 0);
    for pack in &packs {
        let compiled = policies::compile_pack(pack)?;
        let component =
            computeguard_compiler::compose(computeguard_builtins::RUNTIME, &compiled.pack)?;
        let policy = engine.load(&component, &pack.display().to_string())?;
        println!(
            "running {} tests from {}",
            compiled.tests.len(),
            pack.display()
        );
        for t in &compiled.tests {
            match run_case(&policy, pack, t) {
                Ok(()) => {
                    passed += 1;
                    println!("test {} ... ok", t.name);
                }
                Err(e) => {
                    failed += 1;
                    println!(
                        "test {} ... FAILED\n  --> {}:{}\n  {e}",
                        t.name,
                        pack.display(),
                        t.line
                    );
                }
            }
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {failed} failed",
        if failed == 0 { "ok" } else { "FAILED" }
    );
    Ok(if failed == 0 {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

fn run_case(
    policy: &computeguard_engine::Policy,
    pack: &Path,
    t: &computeguard_compiler::PackTest,
) -> anyhow::Result<()> {
    let document = match &t.document {
        TestDocument::Inline(v) => v.clone(),
        TestDocument::File(f) => {
            let path = pack.parent().unwrap_or(Path::new(".")).join(f);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            let docs = computeguard_decode::decode_yaml(&text)
                .map_err(|e| anyhow!("{}:{}: {}", path.display(), e.line, e.message))?;
            docs.into_iter()
                .next()
                .map(|d| d.value)
                .ok_or_else(|| anyhow!("`{}` has no document", path.display()))?
        }
    };
    let settings = t.settings.clone().unwrap_or_else(|| serde_json::json!({}));
    policy.validate_settings(&settings)?;
    let mut request = Request::new(
        document.to_string(),
        t.as_of.clone().unwrap_or_else(|| "2026-11-22".into()),
    );
    request.settings = settings.to_string();
    let response = policy.evaluate(&request)?;
    let got: BTreeSet<&str> = response
        .violations
        .iter()
        .map(|v| v.rule.as_str())
        .collect();
    let want: BTreeSet<&str> = t.expect.iter().map(String::as_str).collect();
    if got == want {
        Ok(())
    } else {
        let messages: Vec<String> = response
            .violations
            .iter()
            .map(|v| format!("    {}: {}", v.rule, v.message))
            .collect();
        Err(anyhow!(
            "expected {want:?}, got {got:?}\n{}",
            messages.join("\n")
        ))
    }
}
