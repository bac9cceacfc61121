//! `build`, `test`, `explain`, `policies`, and extra policies on `check`.

use crate::*;

#[test]
fn build_then_check_with_a_custom_pack() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let wasm = dir.path().join("org.wasm");
    let out = run(&[
        "build",
        "tests/fixtures/packs/gpu-owner.yaml",
        "-o",
        wasm.to_str().unwrap_or_default(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("built org-rules 1.2.0 (1 rule,"),
        "{}",
        stderr(&out)
    );
    assert_eq!(&std::fs::read(&wasm)?[..4], b"\0asm");
    for policy in [
        wasm.to_str().unwrap_or_default(),
        "tests/fixtures/packs/gpu-owner.yaml",
    ] {
        let (_, report) = check_json(&[
            "--policy",
            policy,
            "tests/fixtures/azureml/gpu-cluster-idle-nc6.yml",
        ]);
        let owner: Vec<&serde_json::Value> = report["findings"]
            .as_array()
            .expect("f")
            .iter()
            .filter(|f| f["rule"] == "gpu-owner-tag")
            .collect();
        assert_eq!(owner.len(), 1, "{report:#}");
        assert_eq!(owner[0]["policy"], "org-rules");
        assert_eq!(
            owner[0]["message"],
            "GPU cluster gpu-cluster has no owner tag"
        );
    }
    Ok(())
}

#[test]
fn cel_syntax_error_fails_the_build_with_file_line_and_caret() {
    let out = run(&[
        "build",
        "tests/fixtures/packs/syntax-error.yaml",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(err.contains("invalid CEL: incomplete expression"), "{err}");
    assert!(
        err.contains("--> tests/fixtures/packs/syntax-error.yaml:9:"),
        "{err}"
    );
    assert!(err.contains("9 |     assert: resource.minNodes >"), "{err}");
}

/// Issue 28: `assert: 'team' in resource.labels` is a YAML error after the quoted part;
/// the error says to quote the whole expression.
#[test]
fn an_expression_quoted_only_in_part_gets_a_hint_to_quote_it_whole() {
    let out = run(&[
        "build",
        "tests/fixtures/packs/unquoted-expression.yaml",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("--> tests/fixtures/packs/unquoted-expression.yaml:10:"),
        "{err}"
    );
    assert!(
        err.contains(
            "= help: quote the whole CEL expression, not just its first string: `assert: \"'team' in resource.labels\"`"
        ),
        "{err}"
    );
}

#[test]
fn unknown_compute_model_field_fails_with_a_suggestion() {
    let out = run(&[
        "build",
        "tests/fixtures/packs/unknown-field.yaml",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("unknown compute-model field `resource.minNode`"),
        "{err}"
    );
    assert!(err.contains("did you mean `resource.minNodes`?"), "{err}");
    assert!(
        err.contains("--> tests/fixtures/packs/unknown-field.yaml:9:"),
        "{err}"
    );
}

#[test]
fn pack_tests_run_through_the_component() {
    let out = run(&["test", "policies/builtin.yaml"]);
    let text = stdout(&out);
    assert_eq!(code(&out), 0, "{text}");
    assert!(
        text.contains("test inference on an InfiniBand size ... ok"),
        "{text}"
    );
    assert!(text.contains("test result: ok."), "{text}");
    let out = run(&["test", "tests/fixtures/packs/failing-test.yaml"]);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    assert!(
        text.contains("test expects nothing but the rule fires ... FAILED"),
        "{text}"
    );
    assert!(
        text.contains("test result: FAILED. 0 passed; 1 failed"),
        "{text}"
    );
}

#[test]
fn explain_prints_rationale_and_fix() {
    let out = run(&["explain", "min-nodes-zero"]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(
        text.starts_with("min-nodes-zero (warning, policy computeguard-builtin"),
        "{text}"
    );
    assert!(text.contains("NVIDIA GPU Operator"), "{text}");
    assert!(
        text.contains("Fix: Set the minimum node count to 0"),
        "{text}"
    );
    let out = run(&["explain", "no-such-rule"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown rule `no-such-rule`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn policies_lists_and_exports_builtins() -> std::io::Result<()> {
    let out = run(&["policies"]);
    assert!(
        stdout(&out).starts_with("computeguard-builtin 0.1.0  "),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("sha256:"), "{}", stdout(&out));
    let dir = tempfile::tempdir()?;
    let out = run(&[
        "policies",
        "--export",
        dir.path().to_str().unwrap_or_default(),
    ]);
    assert_eq!(code(&out), 0);
    assert_eq!(
        &std::fs::read(dir.path().join("computeguard-builtin.wasm"))?[..4],
        b"\0asm"
    );
    assert!(
        std::fs::read_to_string(dir.path().join("wit/policy.wit"))?
            .contains("package computeguard:policy@0.2.0;")
    );
    Ok(())
}

#[test]
fn new_pack_scaffold_tests_green_and_builds() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let d = dir.path().to_str().unwrap_or_default();
    let out = run(&["new", "pack", "org-rules", "--dir", d]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let pack = dir.path().join("org-rules.yaml");
    let p = pack.to_str().unwrap_or_default();
    let out = run(&["test", p]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("test result: ok. 2 passed; 0 failed"),
        "{}",
        stdout(&out)
    );
    let out = run(&[
        "build",
        p,
        "-o",
        dir.path().join("o.wasm").to_str().unwrap_or_default(),
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // A second scaffold does not overwrite, and names must be kebab-case.
    assert_eq!(code(&run(&["new", "pack", "org-rules", "--dir", d])), 2);
    let out = run(&["new", "pack", "Org_Rules", "--dir", d]);
    assert!(
        stderr(&out).contains("must be kebab-case"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn junit_report_parses_and_counts_failures() {
    let out = run(&[
        "test",
        "--format",
        "junit",
        "tests/fixtures/packs/failing-test.yaml",
        "tests/fixtures/packs/gpu-owner.yaml",
    ]);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        (root.attribute("tests"), root.attribute("failures")),
        (Some("3"), Some("1"))
    );
    let failures: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase") && n.children().any(|c| c.has_tag_name("failure")))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert_eq!(failures, ["expects nothing but the rule fires"]);
}

#[test]
fn a_digest_pin_is_checked_before_the_component_is_compiled_or_run() -> std::io::Result<()> {
    // Bytes that are no component at all: had they been compiled (or their metadata
    // run) first, the error would name that instead of the pin.
    let dir = tempfile::tempdir()?;
    let wasm = dir.path().join("tampered.wasm");
    std::fs::write(&wasm, b"\0asm not really a component")?;
    let pinned = format!("{}@sha256:{}", wasm.display(), "0".repeat(64));
    let out = run(&["check", "--policy", &pinned, "tests/fixtures/azureml"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("but it is pinned to sha256:000"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stderr(&out).contains("not a valid policy component"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn policies_can_be_pinned_to_a_digest() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let wasm = dir.path().join("org.wasm");
    let w = wasm.to_str().unwrap_or_default().to_string();
    assert_eq!(
        code(&run(&[
            "build",
            "tests/fixtures/packs/gpu-owner.yaml",
            "-o",
            &w
        ])),
        0
    );
    let listed = stdout(&run(&["policies", "--policy", &w]));
    let digest = listed
        .lines()
        .find(|l| l.starts_with("org-rules"))
        .and_then(|l| l.split_whitespace().find(|t| t.starts_with("sha256:")))
        .expect("digest listed")
        .to_string();
    let target = "tests/fixtures/azureml/gpu-cluster-idle-nc6.yml";
    let ok = run(&["check", "--policy", &format!("{w}@{digest}"), target]);
    assert_eq!(code(&ok), 1, "pinned digest matches: {}", stderr(&ok));
    let wrong = format!("{w}@sha256:{}", "0".repeat(64));
    let out = run(&["check", "--policy", &wrong, target]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(&format!(
            "has digest {digest}, but it is pinned to sha256:000"
        )),
        "{}",
        stderr(&out)
    );
    // The same through the config file.
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        format!(
            "policies:\n  - path: org.wasm\n    digest: sha256:{}\n",
            "f".repeat(64)
        ),
    )?;
    let out = run_in(dir.path(), &["check", "."])?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("refusing to run it"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn unknown_function_and_bad_settings_are_refused() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let pack = dir.path().join("p.yaml");
    std::fs::write(
        &pack,
        "apiVersion: computeguard.io/v1\nkind: RulePack\nmetadata: {name: p, version: 0.1.0}\nrules:\n  - id: r\n    severity: info\n    description: d\n    remediation: r\n    assert: skew(resource.sku).known\n",
    )?;
    let out = run(&[
        "build",
        pack.to_str().unwrap_or_default(),
        "-o",
        "/dev/null",
    ]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("unknown function `skew`"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("did you mean `sku`?"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("p.yaml:9:13"), "{}", stderr(&out));

    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "regions:\n  allowed: [eastus]\nsettings:\n  computeguard-builtin:\n    regions: {allowed: 3}\n",
    )?;
    let out = run_in(dir.path(), &["check", "."])?;
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out)
            .contains("invalid settings for policy `computeguard-builtin`: at `/regions/allowed`"),
        "{}",
        stderr(&out)
    );
    Ok(())
}

/// `computeguard test` reads a fixture file in every format `check` reads: a `.tf` file
/// (with its folder's variables) and a `.bicep` file gave "expected a JSON object ... got
/// a string" and a YAML parse before (issue 28).
#[test]
fn pack_test_fixtures_are_read_in_every_format_check_reads() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let root = crate::root();
    let copy = |from: &str, to: &str| -> std::io::Result<()> {
        let target = dir.path().join(to);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(root.join(from), target).map(|_| ())
    };
    copy("tests/fixtures/terraform/aks-gpu/main.tf", "tf/main.tf")?;
    copy(
        "tests/fixtures/terraform/aks-gpu/variables.tf",
        "tf/variables.tf",
    )?;
    copy(
        "tests/fixtures/bicep/stableazure-aks-gpupool-nc6s-v3-eastus2.bicep",
        "pool.bicep",
    )?;
    std::fs::write(
        dir.path().join("pack.yaml"),
        r#"apiVersion: computeguard.io/v1
kind: RulePack
metadata: {name: formats, version: 0.1.0}
rules:
  - id: no-nc6s-v3
    severity: error
    description: No NC6s_v3.
    rationale: Test.
    remediation: Another size.
    assert: "resource.sku != 'Standard_NC6s_v3'"
    messageExpression: "resource.name + ' uses NC6s_v3'"
tests:
  - name: Terraform, the size from variables.tf
    file: tf/main.tf
    expect: [no-nc6s-v3]
  - name: Bicep
    file: pool.bicep
    expect: [no-nc6s-v3]
"#,
    )?;
    let pack = dir.path().join("pack.yaml");
    let out = run(&["test", &pack.display().to_string()]);
    let text = stdout(&out);
    assert_eq!(code(&out), 0, "{text}{}", stderr(&out));
    assert!(
        text.contains("test Terraform, the size from variables.tf ... ok"),
        "{text}"
    );
    assert!(text.contains("test Bicep ... ok"), "{text}");
    Ok(())
}

/// `computeguard rules` lists every rule id of the loaded policies, sorted, with the
/// severity the configuration gives it and a summary (issue 28: the ids appeared only
/// inside errors).
#[test]
fn rules_lists_every_loaded_rule_with_its_configured_severity() {
    let out = run(&["rules", "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    let ids: Vec<&str> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["id"].as_str())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(ids, sorted);
    for id in [
        "region-colocated",
        "sku-retired",
        "suppression-missing-reason",
    ] {
        assert!(ids.contains(&id), "{ids:?}");
    }
    assert!(list.as_array().is_some_and(|a| {
        a.iter()
            .all(|r| r["description"].as_str().is_some_and(|d| !d.is_empty()))
    }));
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "rules:\n  min-nodes-zero: error\n  sku-unknown: off\n",
    )
    .expect("write");
    let out = run_in(dir.path(), &["rules"]).expect("run");
    let text = stdout(&out);
    let line = |id: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("min-nodes-zero").contains(" error "), "{text}");
    assert!(line("sku-unknown").contains(" off "), "{text}");
}

/// `computeguard inspect` prints the compute model of each resource with the line of each
/// field and what stayed unresolved, in text and JSON.
#[test]
fn inspect_shows_the_model_the_rules_see_and_what_stayed_unresolved() {
    let file = "tests/fixtures/terraform/modules/modules/node_pool/main.tf";
    let out = run(&["inspect", "--format", "json", file]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let list: Value = serde_json::from_slice(&out.stdout).expect("json");
    let pool = &list[0];
    assert_eq!(
        pool["resource"],
        "azurerm_kubernetes_cluster_node_pool node_pool"
    );
    assert_eq!(pool["model"]["kind"], "aks-node-pool");
    assert_eq!(pool["model"]["minNodes"], 0, "the module's default");
    assert_eq!(pool["lines"]["minNodes"], 6);
    assert!(pool["model"].get("sku").is_none(), "{pool:#}");
    assert_eq!(
        pool["unresolved"],
        serde_json::json!([{"field": "sku", "expression": "${var.vm_size}", "line": 4}])
    );
    let out = run(&["inspect", "examples/azureml/cuda12-on-k80-job.yml"]);
    let text = stdout(&out);
    assert!(
        text.starts_with("examples/azureml/cuda12-on-k80-job.yml:"),
        "{text}"
    );
    assert!(
        text.contains("  sku ") && text.contains("Standard_NC6  (line 24)"),
        "{text}"
    );
    assert!(
        text.contains("  cuda ") && text.contains("12.4.1"),
        "{text}"
    );
    let out = run(&["inspect", "tests/fixtures/invalid/does-not-exist.yaml"]);
    assert_eq!(code(&out), 2);
}

/// Reports which of three Perl-class patterns matched (`\d` on ARABIC-INDIC DIGIT THREE,
/// `\w` on `é`, `\w+` on `gpu_7`): with Unicode classes it would say all three.
const PERL_CLASSES_RULE: &str = r#"  - id: perl-classes
    severity: warning
    targets: [aml-compute-cluster]
    description: Reports what the Perl classes match.
    rationale: Pins their ASCII meaning.
    remediation: None.
    assert: "false"
    messageExpression: "'matched:' + ('\u0663'.matches('^\\\\d$') ? ' digit' : '') + ('\u00e9'.matches('^\\\\w$') ? ' word' : '') + ('gpu_7'.matches('^\\\\w+$') ? ' ascii' : '')"
"#;

/// The policy component's regex is regex-lite (vendor/README.md): a rule whose pattern
/// uses `\p{L}` reports an evaluation error naming the pattern, never a silent pass or a
/// silent false; `\d` and `\w` are ASCII, as in RE2 (Kubernetes' CEL) and JSON Schema.
#[test]
fn a_unicode_property_class_in_a_pattern_is_an_error_not_a_silent_answer() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let pack = dir.path().join("pack.yaml");
    std::fs::write(
        &pack,
        r#"apiVersion: computeguard.io/v1
kind: RulePack
metadata: {name: unicode-classes, version: 0.1.0}
rules:
  - id: letters-only-name
    severity: error
    targets: [aml-compute-cluster]
    description: Cluster names are letters only.
    rationale: A pattern with a Unicode property class.
    remediation: Rename the cluster.
    assert: "resource.name.matches('^\\\\p{L}+$')"
    messageExpression: "'name ' + resource.name"
"#,
    )?;
    let (code, report) = check_json(&[
        "--policy",
        pack.to_str().unwrap_or_default(),
        "tests/fixtures/azureml/gpu-cluster-idle-nc6.yml",
    ]);
    assert_eq!(code, 2, "{report:#}");
    let errors = report["errors"].as_array().expect("errors");
    assert!(
        errors.iter().any(|e| e["message"]
            .as_str()
            .is_some_and(|m| m.contains("letters-only-name")
                && m.contains("Unicode character classes are not supported"))),
        "{report:#}"
    );
    // A rule that fails fails its policy's evaluation of the document, so the classes'
    // meaning is pinned by a pack of its own.
    std::fs::write(
        &pack,
        format!(
            r#"apiVersion: computeguard.io/v1
kind: RulePack
metadata: {{name: perl-classes, version: 0.1.0}}
rules:
{}"#,
            PERL_CLASSES_RULE
        ),
    )?;
    let (_, report) = check_json(&[
        "--policy",
        pack.to_str().unwrap_or_default(),
        "tests/fixtures/azureml/gpu-cluster-idle-nc6.yml",
    ]);
    let findings = report["findings"].as_array().expect("findings");
    assert!(
        findings
            .iter()
            .any(|f| f["rule"] == "perl-classes" && f["message"] == "matched: ascii"),
        "{report:#}"
    );
    Ok(())
}
