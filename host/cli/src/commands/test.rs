//! `computeguard test [PACK.yaml|DIR]`: runs each pack's `tests:` through the
//! compiled component (the same path `check` uses), like a test runner.

use crate::{Outcome, policies};
use anyhow::{Context as _, anyhow};
use computeguard_compiler::TestDocument;
use computeguard_engine::Request;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Output format of `test`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TestFormat {
    Text,
    Junit,
}

#[derive(clap::Args, Debug)]
pub struct TestArgs {
    /// Pack files or directories of packs (default: policies/).
    pub paths: Vec<PathBuf>,
    /// Output format: text (like cargo test) or junit (XML for CI test reports).
    #[arg(long, value_enum, default_value = "text")]
    pub format: TestFormat,
}

struct CaseResult {
    name: String,
    line: u32,
    failure: Option<String>,
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
    let text = args.format == TestFormat::Text;
    let mut suites = Vec::new();
    for pack in &packs {
        let compiled = policies::compile_pack(pack)?;
        let component =
            computeguard_compiler::compose(computeguard_builtins::RUNTIME, &compiled.pack)?;
        let policy = engine.load(&component, &pack.display().to_string())?;
        if text {
            println!(
                "running {} test{} from {}",
                compiled.tests.len(),
                if compiled.tests.len() == 1 { "" } else { "s" },
                pack.display()
            );
        }
        let mut cases = Vec::new();
        for t in &compiled.tests {
            let failure = run_case(&policy, pack, t).err().map(|e| format!("{e:#}"));
            if text {
                match &failure {
                    None => println!("test {} ... ok", crate::report::clean(&t.name)),
                    Some(e) => println!(
                        "test {} ... FAILED\n  --> {}:{}\n  {}",
                        crate::report::clean(&t.name),
                        pack.display(),
                        t.line,
                        crate::report::clean_lines(e)
                    ),
                }
            }
            cases.push(CaseResult {
                name: t.name.clone(),
                line: t.line,
                failure,
            });
        }
        suites.push((pack.display().to_string(), cases));
    }
    let failed: usize = suites
        .iter()
        .flat_map(|(_, c)| c)
        .filter(|c| c.failure.is_some())
        .count();
    let total: usize = suites.iter().map(|(_, c)| c.len()).sum();
    if text {
        println!(
            "\ntest result: {}. {} passed; {failed} failed",
            if failed == 0 { "ok" } else { "FAILED" },
            total - failed
        );
    } else {
        print!("{}", junit(&suites));
    }
    Ok(if failed == 0 {
        Outcome::Clean
    } else {
        Outcome::Findings
    })
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn junit(suites: &[(String, Vec<CaseResult>)]) -> String {
    let total: usize = suites.iter().map(|(_, c)| c.len()).sum();
    let failed: usize = suites
        .iter()
        .flat_map(|(_, c)| c)
        .filter(|c| c.failure.is_some())
        .count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"computeguard\" tests=\"{total}\" failures=\"{failed}\">\n"
    );
    for (pack, cases) in suites {
        let f = cases.iter().filter(|c| c.failure.is_some()).count();
        out.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{f}\">\n",
            xml(pack),
            cases.len()
        ));
        for c in cases {
            let attrs = format!(
                "name=\"{}\" classname=\"{}\" file=\"{}\" line=\"{}\"",
                xml(&c.name),
                xml(pack),
                xml(pack),
                c.line
            );
            match &c.failure {
                None => out.push_str(&format!("    <testcase {attrs}/>\n")),
                Some(e) => out.push_str(&format!(
                    "    <testcase {attrs}>\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml(e.lines().next().unwrap_or_default()),
                    xml(e)
                )),
            }
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

fn run_case(
    policy: &computeguard_engine::Policy,
    pack: &Path,
    t: &computeguard_compiler::PackTest,
) -> anyhow::Result<()> {
    // A fixture file is read as `check` reads it: YAML, JSON, Bicep or Terraform by its
    // name, with the source kind its format implies.
    let (document, source_kind) = match &t.document {
        TestDocument::Inline(v) => (v.clone(), None),
        TestDocument::File(f) => {
            let path = pack.parent().unwrap_or(Path::new(".")).join(f);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            let (docs, kind) = crate::scan::decode_like_check(&path, &text, &[])
                .map_err(|e| anyhow!("{}: {e}", path.display()))?;
            let doc = docs
                .into_iter()
                .next()
                .map(|d| d.value)
                .ok_or_else(|| anyhow!("`{}` has no document", path.display()))?;
            (doc, kind)
        }
    };
    let settings = t.settings.clone().unwrap_or_else(|| serde_json::json!({}));
    policy.validate_settings(&settings)?;
    let mut request = Request::new(
        document.to_string(),
        t.as_of.clone().unwrap_or_else(crate::today),
    );
    request.settings = settings.to_string();
    if let Some(kind) = source_kind {
        request.source_kind = kind;
    }
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
