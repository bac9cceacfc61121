//! A Rust policy written with `computeguard-sdk` (`guest/examples/gpu-owner`), built
//! for wasm32-wasip2 and loaded with `check --policy`.

use crate::*;
use std::sync::OnceLock;

const TARGET: &str = "wasm32-wasip2";

/// Builds the example policy once (nested cargo into `target/guest`, as
/// `host/builtins/build.rs` builds the runtime) and returns the component path.
fn gpu_owner_wasm() -> &'static Path {
    static WASM: OnceLock<PathBuf> = OnceLock::new();
    WASM.get_or_init(|| {
        let cargo = std::env::var("CARGO")
            .ok()
            .or_else(|| option_env!("CARGO").map(str::to_string))
            .unwrap_or_else(|| "cargo".into());
        let target_dir = root().join("target/guest");
        let mut cmd = Command::new(cargo);
        cmd.current_dir(root())
            .args([
                "build",
                "-p",
                "gpu-owner-policy",
                "--target",
                TARGET,
                "--profile",
                "guest",
            ])
            .arg("--target-dir")
            .arg(&target_dir);
        // Flags meant for the host build must not leak into the wasm build.
        for var in [
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_TARGET_DIR",
            "RUSTC_WORKSPACE_WRAPPER",
        ] {
            cmd.env_remove(var);
        }
        let out = cmd.output().expect("run cargo for the example policy");
        assert!(
            out.status.success(),
            "building gpu-owner-policy for {TARGET} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let wasm = target_dir.join(TARGET).join("guest/gpu_owner_policy.wasm");
        assert!(wasm.is_file(), "{} missing", wasm.display());
        wasm
    })
}

fn wasm_arg() -> &'static str {
    gpu_owner_wasm().to_str().expect("utf-8 path")
}

#[test]
fn rust_policy_reports_gpu_sizes_without_an_owner_tag() {
    let (code, report) = check_json(&["--policy", wasm_arg(), "tests/fixtures/azureml"]);
    assert_eq!(code, 1, "{report:#}");
    let owner: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "gpu-owner-tag")
        .collect();
    let got: Vec<(String, String, u64)> = findings(&serde_json::json!({ "findings": owner }));
    assert_eq!(
        got,
        triples(&[
            ("gpu-owner-tag", "azureml/gpu-cluster-idle-nc6.yml", 6),
            ("gpu-owner-tag", "azureml/job-cuda12-on-k80.yml", 8),
            (
                "gpu-owner-tag",
                "azureml/online-deployment-llama3-70b-nc48ads-a100.yml",
                3
            ),
            (
                "gpu-owner-tag",
                "azureml/online-deployment-triton-nc4as-t4-v3.yaml",
                10
            ),
        ])
    );
    let messages: Vec<&str> = owner
        .iter()
        .map(|f| f["message"].as_str().expect("message"))
        .collect();
    assert_eq!(
        messages,
        [
            "Azure ML compute cluster gpu-cluster runs on GPU size Standard_NC6 without an `owner` tag",
            "Azure ML command job train-llm runs on GPU size Standard_NC6 without an `owner` tag",
            "Azure ML online deployment demo runs on GPU size Standard_NC48ads_A100_v4 without an `owner` tag",
            "Azure ML online deployment blue runs on GPU size Standard_NC4as_T4_v3 without an `owner` tag",
        ]
    );
    for f in &owner {
        assert_eq!(f["policy"], "gpu-owner", "{f:#}");
        assert_eq!(f["severity"], "error", "{f:#}");
    }
    assert_eq!(owner[0]["path"], "/size", "no tags: points at the size");
    assert_eq!(owner[0]["resource"]["kind"], "aml-compute-cluster");
    assert_eq!(owner[0]["resource"]["name"], "gpu-cluster");
    assert_eq!(owner[1]["path"], "/resources/instance_type");
    assert_eq!(owner[1]["resource"]["kind"], "aml-job");
    // The built-in policy still runs alongside.
    assert!(
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["rule"] == "sku-retired" && f["policy"] == "computeguard-builtin"),
        "{report:#}"
    );
}

#[test]
fn rust_policy_settings_are_validated_against_its_schema() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(&config, "settings:\n  gpu-owner:\n    ownerKey: 42\n")?;
    let config_arg = config.to_str().expect("utf-8 path");
    let out = run(&[
        "check",
        "--config",
        config_arg,
        "--policy",
        wasm_arg(),
        "tests/fixtures/azureml",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "invalid settings for policy `gpu-owner`: at `/ownerKey`: 42 is not of type \"string\""
        ),
        "{err}"
    );

    // A valid key changes what the policy looks for.
    std::fs::write(&config, "settings:\n  gpu-owner:\n    ownerKey: team\n")?;
    let (code, report) = check_json(&[
        "--config",
        config_arg,
        "--policy",
        wasm_arg(),
        "tests/fixtures/azureml/gpu-cluster-idle-nc6.yml",
    ]);
    assert_eq!(code, 1, "{report:#}");
    let owner: Vec<&serde_json::Value> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "gpu-owner-tag")
        .collect();
    assert_eq!(owner.len(), 1, "{report:#}");
    assert_eq!(
        owner[0]["message"],
        "Azure ML compute cluster gpu-cluster runs on GPU size Standard_NC6 without an `team` tag"
    );
    Ok(())
}

#[test]
fn rust_policy_passes_a_tagged_gpu_cluster() -> std::io::Result<()> {
    let dir = tempfile::tempdir()?;
    let text = std::fs::read_to_string(fixtures().join("azureml/gpu-cluster-idle-nc6.yml"))?;
    let file = dir.path().join("cluster.yml");
    std::fs::write(&file, format!("{text}tags:\n  owner: ml-platform\n"))?;
    let (_, report) = check_json(&["--policy", wasm_arg(), file.to_str().expect("utf-8 path")]);
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(!rules.contains(&"gpu-owner-tag"), "{report:#}");
    assert!(rules.contains(&"sku-retired"), "{report:#}");
    Ok(())
}
