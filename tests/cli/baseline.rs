//! Baselines: adopt on a folder, then only new findings fail.

use crate::*;
use serde_json::Value;

fn rules(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    (
                        f["rule"].as_str().unwrap_or_default().to_string(),
                        f["file"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn adopt_then_only_new_findings_fail() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let infra = dir.path().join("infra");
    std::fs::create_dir(&infra)?;
    std::fs::write(infra.join("legacy.yml"), RETIRED_CLUSTER)?;

    // Adopt: every current finding goes into the baseline, and the run passes.
    let (code, report) =
        check_json_in(dir.path(), &["infra", "--write-baseline", "baseline.json"])?;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["summary"]["baselined"], 2);
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("baseline.json"))?)?;
    assert_eq!(written["version"], 1);
    let entries = written["findings"].as_array().ok_or("entries")?;
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["file"], "infra/legacy.yml");
    assert_eq!(entries[0]["fingerprint"].as_str().map(str::len), Some(64));

    let (code, report) = check_json_in(dir.path(), &["infra", "--baseline", "baseline.json"])?;
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(rules(&report), Vec::<(String, String)>::new());

    // Unrelated edits above the findings move their lines: still in the baseline.
    std::fs::write(
        infra.join("legacy.yml"),
        format!("# owned by the platform team\n# see the runbook\n{RETIRED_CLUSTER}"),
    )?;
    // A new violation in a new file, and one in the legacy file (a new line content).
    std::fs::write(
        infra.join("new.yml"),
        RETIRED_CLUSTER.replace("gpu-cluster", "new-cluster"),
    )?;
    let (code, report) = check_json_in(dir.path(), &["infra", "--baseline", "baseline.json"])?;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        rules(&report),
        vec![
            ("sku-retired".to_string(), "infra/new.yml".to_string()),
            ("min-nodes-zero".to_string(), "infra/new.yml".to_string()),
        ]
    );
    assert_eq!(report["summary"]["baselined"], 2);

    // Changing the offending line itself is a new finding.
    std::fs::remove_file(infra.join("new.yml"))?;
    std::fs::write(
        infra.join("legacy.yml"),
        RETIRED_CLUSTER.replace("min_instances: 2", "min_instances: 3"),
    )?;
    let (_, report) = check_json_in(
        dir.path(),
        &["infra", "--baseline", "baseline.json", "--show-suppressed"],
    )?;
    let list = report["findings"].as_array().ok_or("findings")?;
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["rule"], "sku-retired");
    assert_eq!(list[0]["suppression"]["kind"], "baseline");
    assert_eq!(list[1]["rule"], "min-nodes-zero");
    assert!(
        list[1].get("suppressed").is_none(),
        "changed line: new again"
    );
    Ok(())
}

#[test]
fn a_broken_baseline_is_exit_2_naming_file_and_line() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("b.json"),
        "{\n  \"version\": 1,\n  \"findings\": [\n}\n",
    )?;
    std::fs::write(dir.path().join("a.yml"), RETIRED_CLUSTER)?;
    let out = run_in(dir.path(), &["check", "--baseline", "b.json", "a.yml"])?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("b.json:4:1: invalid baseline"),
        "{}",
        stderr(&out)
    );
    let out = run_in(
        dir.path(),
        &["check", "--baseline", "missing.json", "a.yml"],
    )?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("cannot read baseline `missing.json`"),
        "{}",
        stderr(&out)
    );
    Ok(())
}
