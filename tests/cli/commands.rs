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
