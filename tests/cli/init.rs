//! `computeguard init`: the starter configuration loads, and its documented
//! defaults are the ones `docs/configuration.md` states; and the first steps on a fresh
//! folder (`init`, `check`, `explain`, `rules`, a rule pack of one's own) work.

use crate::*;
use std::collections::BTreeMap;

/// `key -> default` from the "Keys" table of docs/configuration.md, backticks removed.
fn documented_defaults() -> Result<BTreeMap<String, String>, Box<dyn std::error::Error>> {
    let doc = std::fs::read_to_string(root().join("docs/configuration.md"))?;
    let table = doc
        .split("| Key | Type | Default |")
        .nth(1)
        .ok_or("no Keys table in docs/configuration.md")?;
    let mut out = BTreeMap::new();
    for line in table.lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let key = cells
            .get(1)
            .and_then(|c| c.split('`').nth(1))
            .ok_or(format!("no key in {line}"))?;
        let default = cells.get(3).ok_or(format!("no default in {line}"))?;
        out.insert(key.to_string(), default.replace('`', ""));
    }
    Ok(out)
}

#[test]
fn init_writes_a_config_that_loads_with_the_documented_defaults()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let out = run_in(dir.path(), &["init"])?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = dir.path().join("computeguard.yaml");
    let text = std::fs::read_to_string(&path)?;

    let config = computeguard::config::Config::load(&path)?;
    assert_eq!(config.as_of, None);
    assert!(config.rules.is_empty() && config.ignore.is_empty() && config.policies.is_empty());
    assert!(config.regions_allowed.is_empty() && config.allowed_geographies.is_empty());

    let docs = documented_defaults()?;
    let mut seen = 0;
    for line in text.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("# default for ") {
            let (key, default) = rest.split_once(": ").ok_or(format!("bad line {line}"))?;
            assert_eq!(
                docs.get(key).map(String::as_str),
                Some(default),
                "`{key}` in the starter file vs docs/configuration.md"
            );
            seen += 1;
        }
    }
    assert_eq!(
        seen,
        docs.len(),
        "every key of the table: asOf, regions (2), rules, policies, settings, ignore, webhook, catalog, azure, verify, registries"
    );

    // The binary reads it: a check in that directory runs with it.
    std::fs::write(
        dir.path().join("c.yml"),
        "$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: c\ntype: amlcompute\nsize: Standard_NC4as_T4_v3\nmin_instances: 0\n",
    )?;
    let out = run_in(dir.path(), &["check", "c.yml"])?;
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    Ok(())
}

#[test]
fn init_refuses_to_overwrite_without_force() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("computeguard.yaml");
    std::fs::write(&path, "rules: {}\n")?;
    let out = run_in(dir.path(), &["init"])?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("already exists; pass --force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&path)?, "rules: {}\n");
    let out = run_in(dir.path(), &["init", "--force"])?;
    assert_eq!(code(&out), 0);
    assert!(std::fs::read_to_string(&path)?.contains("# default for asOf: today (UTC)"));
    Ok(())
}

/// Issue 37: `computeguard init && computeguard check` failed, because the example
/// comment of the starter file (`# computeguard:ignore RULE REASON`) was read as a
/// suppression of an unknown rule `RULE`; `explain` did not know the two ids that
/// computeguard reports itself.
#[test]
fn init_then_check_explain_and_rules_work_on_a_fresh_folder()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let out = run_in(dir.path(), &["init"])?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(dir.path().join("computeguard.yaml"))?;
    assert!(
        text.contains("computeguard:ignore"),
        "the example is still there"
    );
    let out = run_in(dir.path(), &["check"])?;
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(!stdout(&out).contains("unknown rule"), "{}", stdout(&out));
    for id in ["unresolved", "suppression-missing-reason", "sku-retired"] {
        let out = run_in(dir.path(), &["explain", id])?;
        assert_eq!(code(&out), 0, "{id}: {}", stderr(&out));
        let page = format!("docs/rules/{id}.md");
        assert!(
            stdout(&out).starts_with(&format!("{id} (")),
            "{}",
            stdout(&out)
        );
        assert!(
            stdout(&out).contains(&format!("More: {page}")),
            "{}",
            stdout(&out)
        );
        assert!(root().join(&page).is_file(), "{page}");
    }
    let out = run_in(dir.path(), &["explain", "unresolve"])?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("`unresolved`"),
        "did you mean: {}",
        stderr(&out)
    );
    let out = run_in(dir.path(), &["rules"])?;
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("suppression-missing-reason"),
        "{}",
        stdout(&out)
    );
    Ok(())
}

/// Issue 37: a rule pack with `targets: [vm]` was refused, though docs/compute-model.md
/// lists `vm`, `vm-scale-set`, `aml-kubernetes-compute` and `aml-workspace` as kinds.
#[test]
fn a_pack_may_target_every_documented_kind() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("vm-rules.yaml"),
        "apiVersion: computeguard.io/v1\nkind: RulePack\nmetadata: {name: vm-rules, version: 0.1.0}\nrules:\n  - id: vm-needs-zones\n    severity: error\n    targets: [vm, vm-scale-set, aml-kubernetes-compute, aml-workspace]\n    description: A GPU VM or scale set is placed in zones.\n    remediation: Set zones.\n    assert: size(resource.zones) > 0\n",
    )?;
    std::fs::write(
        dir.path().join("main.tf"),
        "resource \"azurerm_linux_virtual_machine\" \"gpu\" {\n  name     = \"gpu\"\n  location = \"eastus\"\n  size     = \"Standard_NC24ads_A100_v4\"\n}\n",
    )?;
    std::fs::write(
        dir.path().join("cluster.yml"),
        "$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: c\ntype: amlcompute\nsize: Standard_NC24ads_A100_v4\nmin_instances: 0\n",
    )?;
    let out = run_in(
        dir.path(),
        &[
            "check",
            "--format",
            "json",
            "--policy",
            "vm-rules.yaml",
            "main.tf",
            "cluster.yml",
        ],
    )?;
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let fired: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["rule"] == "vm-needs-zones")
        .filter_map(|f| Some((f["file"].as_str()?, f["resource"]["kind"].as_str()?)))
        .collect();
    // The VM only: the Azure ML cluster is not a targeted kind.
    assert_eq!(fired, vec![("main.tf", "vm")], "{report:#}");
    // An unknown kind is still refused, with the documented list.
    std::fs::write(
        dir.path().join("bad.yaml"),
        std::fs::read_to_string(dir.path().join("vm-rules.yaml"))?
            .replace("targets: [vm,", "targets: [virtual-machine,"),
    )?;
    let out = run_in(dir.path(), &["check", "--policy", "bad.yaml", "main.tf"])?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown compute-model kind `virtual-machine`")
            && stderr(&out).contains("vm-scale-set"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

/// Runs `args` with standard output a pipe whose reader is gone before anything is
/// written (`| head` that has stopped reading): (exit code, stderr).
fn run_into_closed_pipe(args: &[&str]) -> Result<(i32, String), Box<dyn std::error::Error>> {
    use std::io::Read as _;
    use std::process::Stdio;
    let mut child = computeguard()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    drop(child.stdout.take());
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err)?;
    }
    let status = child.wait()?;
    Ok((status.code().ok_or("killed by a signal")?, err))
}

/// Issue 37: `rules --format json | head -1` panicked (exit 101), and
/// `check --format sarif examples/ | head -c 10` exited 0 although there are findings: a
/// closed pipe must never turn a failing check into a pass.
#[test]
fn a_closed_pipe_ends_the_output_not_the_verdict() -> Result<(), Box<dyn std::error::Error>> {
    for args in [
        &["rules", "--format", "json"][..],
        &["rules"],
        &["explain", "sku-retired"],
        &["policies"],
    ] {
        let (status, err) = run_into_closed_pipe(args)?;
        assert_eq!(status, 0, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    for format in ["sarif", "text", "json", "junit"] {
        let (status, err) = run_into_closed_pipe(&[
            "check",
            "--format",
            format,
            "--as-of",
            "2026-11-22",
            "examples/",
        ])?;
        assert_eq!(status, 1, "{format}: findings exit 1 whoever reads: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let (status, _) = run_into_closed_pipe(&[
        "check",
        "--format",
        "sarif",
        "--fail-on-unresolved",
        "tests/fixtures/terraform/modules",
    ])?;
    assert_eq!(status, 2);
    Ok(())
}
