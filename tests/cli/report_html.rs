//! `check --format html` (issue 27): one self-contained page holding every finding of the
//! JSON report, with the charts an estate or a cluster needs, and nothing from a file able
//! to become markup. tests/playground/ opens these pages in a real browser and uses their
//! filters; here the page is read as text.

use crate::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;

const AS_OF: &str = "2026-11-22";

/// (exit code, page, JSON report) of `check ARGS` in both formats.
fn html_and_json(args: &[&str]) -> (i32, String, Value) {
    let mut all = vec!["check", "--format", "html", "--as-of", AS_OF];
    all.extend_from_slice(args);
    let out = run(&all);
    let (code_json, report) = check_json(args);
    assert_eq!(code(&out), code_json, "{}", stderr(&out));
    (code(&out), stdout(&out), report)
}

/// The value of `data-NAME="..."` on each finding row, in page order.
fn row_attr(page: &str, name: &str) -> Vec<String> {
    let needle = format!(" data-{name}=\"");
    page.split("<tr class=\"f ")
        .skip(1)
        .map(|row| {
            let row = &row[..row.find('>').expect("row tag ends")];
            row.split_once(&needle)
                .map(|(_, rest)| rest[..rest.find('"').expect("attribute ends")].to_string())
                .unwrap_or_default()
        })
        .collect()
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// (rule, file, line) of every finding, sorted.
fn rows_of_page(page: &str) -> Vec<(String, String, u64)> {
    let rules = row_attr(page, "rule");
    let files = row_attr(page, "file");
    let lines = row_attr(page, "line");
    let mut v: Vec<_> = rules
        .iter()
        .zip(&files)
        .zip(&lines)
        .map(|((r, f), l)| (unescape(r), unescape(f), l.parse().expect("line")))
        .collect();
    v.sort();
    v
}

fn rows_of_json(report: &Value) -> Vec<(String, String, u64)> {
    let mut v: Vec<_> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().expect("rule").to_string(),
                f["file"].as_str().expect("file").to_string(),
                f["line"].as_u64().expect("line"),
            )
        })
        .collect();
    v.sort();
    v
}

/// Nothing the page loads from elsewhere: no external reference, and a policy that forbids
/// any.
fn assert_self_contained(page: &str) {
    assert!(page.starts_with("<!doctype html>"), "{}", &page[..80]);
    assert!(
        page.contains(
            "content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-"
        ),
        "no Content-Security-Policy"
    );
    // Attribute quotes and `<` from files are escaped, so these can only be the page's own.
    for external in [
        "<link", "src=\"", "href=\"", "@import", "url(", "<iframe", "<img",
    ] {
        assert!(!page.contains(external), "the page references `{external}`");
    }
    assert_eq!(page.matches("<script>").count(), 1, "one inline script");
}

#[test]
fn the_html_report_holds_every_finding_of_the_examples_and_loads_nothing() {
    let (code, page, report) =
        html_and_json(&["--config", "examples/computeguard.yaml", "examples/"]);
    assert_eq!(code, 1);
    assert_self_contained(&page);
    assert_eq!(rows_of_page(&page), rows_of_json(&report));
    let s = &report["summary"];
    for (label, key) in [
        ("errors", "errors"),
        ("warnings", "warnings"),
        ("infos", "infos"),
    ] {
        assert!(
            page.contains(&format!("<dt>{label}</dt><dd>{}</dd>", s[key])),
            "summary card {label}"
        );
    }
    assert!(page.contains(&format!(
        "As of <b>{}</b>",
        s["asOf"].as_str().expect("asOf")
    )));
    // The source excerpt with the finding's column marked, as the text format shows it.
    assert!(
        page.contains(
            "<pre class=\"src\"><span class=\"ln\">22</span>  <mark>image: nvidia/cuda:12.4.1-runtime-ubuntu22.04</mark></pre>"
        ),
        "no excerpt of examples/azureml/cuda12-on-k80-job.yml:22"
    );
    // The chart by rule and severity, and the table's sort and filter controls.
    assert!(page.contains("<figure class=\"chart\" data-chart=\"f-rule\"><figcaption>By rule and severity</figcaption>"));
    for control in [
        "id=\"f-q\"",
        "id=\"f-sev\"",
        "id=\"f-rule\"",
        "data-sort=\"loc\"",
    ] {
        assert!(page.contains(control), "no {control}");
    }
    // Kubernetes objects with a namespace, but no Azure export: no chart by subscription.
    assert!(page.contains("data-chart=\"f-ns\"") && !page.contains("data-chart=\"f-sub\""));
    // The skipped files are listed with their reason.
    let skipped = s["skippedFiles"].as_u64().expect("skippedFiles");
    assert!(skipped > 0);
    assert!(
        page.contains("<section id=\"skipped\"><h2>Skipped ("),
        "no skipped section"
    );
    assert!(page.contains("<td><code>examples/azure/SOURCES.md</code></td><td>not an input</td>"));
}

#[test]
fn an_azure_export_is_charted_by_subscription_and_resource_group() {
    let (_, page, report) = html_and_json(&["tests/fixtures/audit"]);
    assert_self_contained(&page);
    assert_eq!(rows_of_page(&page), rows_of_json(&report));
    let estate = &report["summary"]["estate"];
    for (chart, key) in [
        ("f-sub", "bySubscription"),
        ("f-rg", "byResourceGroup"),
        ("f-rule", "byRule"),
    ] {
        assert!(
            page.contains(&format!("data-chart=\"{chart}\"")),
            "no chart {chart}"
        );
        // Each bar counts what the estate summary counts.
        for (name, n) in estate[key].as_object().expect("estate counts") {
            let bar = format!("data-filter=\"{chart}\" data-value=\"{name}\"");
            let at = page.find(&bar).unwrap_or_else(|| panic!("no bar {bar}"));
            let rest = &page[at..];
            let total = &rest[rest.find("<span class=\"n\">").expect("count") + 16..];
            assert_eq!(
                total[..total.find('<').expect("end")],
                n.to_string(),
                "{bar}"
            );
        }
    }
    // The cluster dump in the same folder gives namespaces too.
    assert!(page.contains("data-chart=\"f-ns\""));
    assert!(page.contains("<option value=\"serving\">serving ("));
}

#[test]
fn text_from_files_and_names_never_becomes_markup() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let name = "x</script><script>alert(1)</script>";
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns-<img src=x onerror=alert(2)>"},
        "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "Standard_NC6"},
            "containers": [{"name": "c", "image": "nvidia/cuda:12.4.1-runtime-ubuntu22.04\"><b>",
                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}});
    let file = dir.path().join("a<b>&'\".json");
    std::fs::write(&file, serde_json::to_string_pretty(&pod)?)?;
    let path = file.to_str().ok_or("path")?;
    let (code, page, report) = html_and_json(&[path]);
    assert_eq!(code, 1, "{report:#}");
    assert!(!report["findings"].as_array().ok_or("findings")?.is_empty());
    assert_self_contained(&page);
    for raw in ["<script>alert", "<img src=x", "<b>&", "a<b>", "\"><b>"] {
        assert!(!page.contains(raw), "unescaped `{raw}` in the page");
    }
    assert!(page.contains("x&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("data-ns=\"ns-&lt;img src=x onerror=alert(2)&gt;\""));
    assert_eq!(rows_of_page(&page), rows_of_json(&report));
    Ok(())
}

#[test]
fn the_html_report_of_5000_findings_stays_small_and_pages_its_rows()
-> Result<(), Box<dyn std::error::Error>> {
    // 2,500 GPU Pods on a retired K80 size with a CUDA 12 image, in 20 namespaces: two errors
    // each (sku-retired, cuda-arch-compat).
    let items: Vec<Value> = (0..2500)
        .map(|i| {
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("trainer-{i}"), "namespace": format!("team-{}", i % 20)},
                "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "Standard_NC6"},
                    "containers": [{"name": "c", "image": "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})
        })
        .collect();
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("dump.json");
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&json!({"apiVersion": "v1", "kind": "List", "items": items}))?,
    )?;
    let (_, page, report) = html_and_json(&[file.to_str().ok_or("path")?]);
    let findings = report["findings"].as_array().ok_or("findings")?.len();
    assert_eq!(findings, 5000);
    assert_eq!(rows_of_page(&page), rows_of_json(&report));
    // About 1.5 KB a finding, message, fix and excerpt included.
    assert!(page.len() < 5000 * 1600, "{} bytes", page.len());
    let mut per_ns: BTreeMap<String, usize> = BTreeMap::new();
    for ns in row_attr(&page, "ns") {
        *per_ns.entry(ns).or_default() += 1;
    }
    assert_eq!(per_ns.len(), 20);
    assert!(per_ns.values().all(|n| *n == 250), "{per_ns:?}");
    // The table shows a page of rows at a time; the rest are a click away.
    assert!(page.contains("var PAGE = 250;"));
    Ok(())
}
