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
            .contains("package computeguard:policy@0.1.0;")
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
