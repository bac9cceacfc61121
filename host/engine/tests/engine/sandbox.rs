//! The sandbox contract: deadlines, memory caps and import checks, exercised with
//! small components written in WAT, next to the real built-in policy.

use computeguard_engine::{Engine, EngineConfig, EvalError, LoadError, Request, Severity};
use std::time::Duration;

/// Builds a policy component whose `evaluate` runs `body` (WAT instructions, after
/// which the function traps). `metadata` and `validate-settings` behave.
fn wat_policy(body: &str) -> anyhow::Result<Vec<u8>> {
    let core = format!(
        r#"(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))
  ;; policy-info at 1024: name, version, digest, rules, settings-schema (none)
  (data (i32.const 1024) "\00\08\00\00\07\00\00\00\10\08\00\00\05\00\00\00")
  (data (i32.const 2048) "runaway")
  (data (i32.const 2064) "0.0.1")
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get 3)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.const 1)))))
    (local.get $p))
  (func (export "computeguard:policy/evaluator@0.2.0#metadata") (result i32) i32.const 1024)
  (func (export "computeguard:policy/evaluator@0.2.0#validate-settings") (param i32 i32) (result i32)
    i32.const 0)
  (func (export "computeguard:policy/evaluator@0.2.0#evaluate")
    (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
    {body}
    unreachable))"#
    );
    let mut module = wat::parse_str(&core)?;
    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve.push_path(concat!(env!("CARGO_MANIFEST_DIR"), "/../../wit"))?;
    let world = resolve.select_world(&[pkg], Some("policy"))?;
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
        false,
    )?;
    wit_component::ComponentEncoder::default()
        .module(&module)?
        .validate(true)
        .encode()
}

fn engine() -> anyhow::Result<Engine> {
    Ok(Engine::new(EngineConfig {
        deadline: Duration::from_millis(200),
        memory_limit: 8 << 20,
        cache_dir: Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache")),
        ..EngineConfig::default()
    })?)
}

fn builtin() -> &'static [u8] {
    computeguard_builtins::BUILTINS[0].component
}

const RETIRED_CLUSTER: &str =
    r#"{"type":"amlcompute","name":"old","size":"Standard_NC6","min_instances":2}"#;

#[test]
fn runaway_policy_is_stopped_and_others_still_report() -> anyhow::Result<()> {
    let engine = engine()?;
    let runaway = engine.load(&wat_policy("(loop $spin (br $spin))")?, "runaway.wasm")?;
    let good = engine.load(builtin(), "builtin")?;
    let request = Request::new(RETIRED_CLUSTER, "2026-11-22");

    let started = std::time::Instant::now();
    let err = runaway.evaluate(&request).expect_err("must not finish");
    assert!(matches!(err, EvalError::Timeout { .. }), "{err}");
    assert!(
        err.to_string().contains("exceeded its 200ms deadline"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the deadline stops the loop"
    );

    let response = good.evaluate(&request)?;
    let rules: Vec<&str> = response
        .violations
        .iter()
        .map(|v| v.rule.as_str())
        .collect();
    assert_eq!(rules, ["min-nodes-zero", "sku-retired"]);
    // The runaway policy is still usable for the next request (fresh store each time).
    assert!(matches!(
        runaway.evaluate(&request),
        Err(EvalError::Timeout { .. })
    ));
    Ok(())
}

#[test]
fn memory_hog_hits_the_cap_and_traps() -> anyhow::Result<()> {
    let engine = engine()?;
    let hog = engine.load(
        &wat_policy(
            "(loop $grow (br_if $grow (i32.ne (memory.grow (i32.const 16)) (i32.const -1))))",
        )?,
        "hog.wasm",
    )?;
    let err = hog
        .evaluate(&Request::new("{}", "2026-11-22"))
        .expect_err("capped");
    // Named for what it is: the sandbox's memory cap, with the way to raise it.
    assert!(
        matches!(err, EvalError::MemoryLimit { limit, .. } if limit == 8 << 20),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("ran out of its 8 MiB sandbox memory"),
        "{err}"
    );
    Ok(())
}

#[test]
fn component_with_unknown_import_is_refused_by_name() -> anyhow::Result<()> {
    let engine = engine()?;
    let wat = r#"(component
        (import "evil:net/socket" (instance (export "connect" (func)))))"#;
    let err = engine
        .load(&wat::parse_str(wat)?, "evil.wasm")
        .expect_err("refused");
    assert!(matches!(err, LoadError::ForbiddenImport { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "`evil.wasm` imports `evil:net/socket`, which computeguard does not provide to policies"
    );
    Ok(())
}

#[test]
fn builtin_policy_reports_metadata_and_findings() -> anyhow::Result<()> {
    let engine = engine()?;
    let policy = engine.load(builtin(), "builtin")?;
    let info = policy.info();
    assert_eq!(info.name, "computeguard-builtin");
    assert!(info.source_digest.starts_with("sha256:"));
    for id in [
        "min-nodes-zero",
        "no-infiniband-for-inference",
        "region-allowed",
        "sku-retired",
        "cuda-arch-compat",
    ] {
        assert!(info.rules.iter().any(|r| r.id == id), "missing {id}");
    }
    let response = policy.evaluate(&Request::new(RETIRED_CLUSTER, "2026-11-22"))?;
    let retired = response
        .violations
        .iter()
        .find(|v| v.rule == "sku-retired")
        .expect("retired");
    assert_eq!(retired.severity, Severity::Error);
    assert_eq!(retired.path, "/size");
    assert!(
        retired
            .message
            .contains("Standard_NC6, retired on 2023-09-06"),
        "{}",
        retired.message
    );
    assert_eq!(response.resources.len(), 1);
    Ok(())
}

#[test]
fn settings_are_checked_against_the_schema() -> anyhow::Result<()> {
    let engine = engine()?;
    let policy = engine.load(builtin(), "builtin")?;
    policy.validate_settings(&serde_json::json!({"regions": {"allowed": ["eastus"]}}))?;
    let err = policy
        .validate_settings(&serde_json::json!({"regions": {"allowed": "eastus"}}))
        .expect_err("a string is not a list");
    assert!(err.to_string().contains("/regions/allowed"), "{err}");
    Ok(())
}

/// Settings the built-in policy must refuse by itself, with the exact text its
/// `validate-settings` and `invalid-settings` give.
const BAD_SETTINGS: &[(&str, &str)] = &[
    (
        r#"{"regions": "eastus"}"#,
        "at `/regions`: expected an object, got a string",
    ),
    (
        r#"{"regions": {"alowed": ["eastus"]}}"#,
        "at `/regions/alowed`: unknown field; expected one of allowed, allowedGeographies",
    ),
    (
        r#"{"regions": {"allowed": "eastus"}}"#,
        "at `/regions/allowed`: expected an array, got a string",
    ),
    (
        r#"{"regions": {"allowed": [""]}}"#,
        "at `/regions/allowed/0`: expected at least 1 character, got 0",
    ),
    (
        r#"["eastus"]"#,
        "at the top level: expected an object, got an array",
    ),
    (
        "{nope",
        "settings are not valid JSON: key must be a string at line 1 column 2",
    ),
];

const BRAZIL_CLUSTER: &str = r#"{"type":"amlcompute","name":"c","size":"Standard_NC24ads_A100_v4","location":"brazilsouth","min_instances":0}"#;

#[test]
fn the_policy_itself_refuses_bad_settings_naming_the_field() -> anyhow::Result<()> {
    let engine = engine()?;
    let policy = engine.load(builtin(), "builtin")?;
    policy.validate_settings_in_policy(r#"{"regions": {"allowed": ["eastus"]}}"#)?;
    policy.validate_settings_in_policy("{}")?;
    for (settings, expected) in BAD_SETTINGS {
        let err = policy
            .validate_settings_in_policy(settings)
            .expect_err(settings);
        assert_eq!(err.problems, [expected.to_string()], "{settings}");
    }
    Ok(())
}

#[test]
fn evaluate_with_bad_settings_is_invalid_settings_not_a_trap_or_a_pass() -> anyhow::Result<()> {
    let engine = engine()?;
    let policy = engine.load(builtin(), "builtin")?;
    let mut request = Request::new(BRAZIL_CLUSTER, "2026-11-22");
    // Valid settings: the cluster is outside the allowed regions.
    request.settings = r#"{"regions": {"allowed": ["eastus"]}}"#.into();
    let rules: Vec<String> = policy
        .evaluate(&request)?
        .violations
        .into_iter()
        .map(|v| v.rule)
        .collect();
    assert_eq!(rules, ["region-allowed"]);
    for (settings, expected) in BAD_SETTINGS {
        request.settings = settings.to_string();
        let err = policy.evaluate(&request).expect_err(settings);
        let want = format!("invalid settings: {expected}");
        assert!(
            matches!(&err, EvalError::Policy { reason, .. } if *reason == want),
            "{settings}: expected `{want}`, got {err}"
        );
    }
    Ok(())
}

#[test]
fn a_document_that_is_not_an_object_is_invalid_document() -> anyhow::Result<()> {
    let engine = engine()?;
    let policy = engine.load(builtin(), "builtin")?;
    for (document, got) in [
        (format!("[{RETIRED_CLUSTER}]"), "an array"),
        ("\"amlcompute\"".to_string(), "a string"),
        ("3".to_string(), "an integer"),
        ("null".to_string(), "null"),
    ] {
        let err = policy
            .evaluate(&Request::new(document.as_str(), "2026-11-22"))
            .expect_err(&document);
        let want = format!(
            "invalid document: expected a JSON object (or an array of Azure resources with `id`), got {got}"
        );
        assert!(
            matches!(&err, EvalError::Policy { reason, .. } if *reason == want),
            "{document}: expected `{want}`, got {err}"
        );
    }
    Ok(())
}

#[test]
fn compiled_artifacts_are_cached_by_digest() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("cg-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let engine = Engine::new(EngineConfig {
        cache_dir: Some(dir.clone()),
        ..EngineConfig::default()
    })?;
    let first = engine.load(builtin(), "builtin")?;
    let files: Vec<_> = std::fs::read_dir(&dir)?.filter_map(Result::ok).collect();
    assert_eq!(files.len(), 1, "one artifact written");
    let name = files[0].file_name().to_string_lossy().to_string();
    assert!(
        name.starts_with(first.digest().trim_start_matches("sha256:")),
        "{name}"
    );
    // A second load comes from the cache and behaves the same.
    let second = engine.load(builtin(), "builtin")?;
    assert_eq!(second.info().rules.len(), first.info().rules.len());
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
