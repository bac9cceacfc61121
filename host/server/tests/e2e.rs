//! End-to-end: the real server with a self-signed certificate, real AdmissionReview
//! payloads over HTTPS, the built-in policy component, and the full response checked.

// Test code: a helper that cannot do its job fails the test with the reason.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use bytes::Bytes;
use computeguard_engine::{Engine, EngineConfig};
use computeguard_server::client::{Connection, tls_config};
use computeguard_server::{
    BoxError, Level, LoadedPolicy, Loader, PolicySet, ReloadHandle, ServeOptions, Server,
    WebhookConfig,
};
use hyper::StatusCode;
use rustls::pki_types::CertificateDer;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const AS_OF: &str = "2026-11-22";

fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache")
}

#[path = "e2e/hostile.rs"]
mod hostile;

#[path = "e2e/held.rs"]
mod held;

#[path = "e2e/burst.rs"]
mod burst;

// The plain-Pod fast path, in this binary rather than its own (each links wasmtime).
#[path = "e2e/plain.rs"]
mod plain;

#[path = "e2e/templates.rs"]
mod templates;

#[path = "e2e/aks_pools.rs"]
mod aks_pools;

/// A loader driven by a JSON file `{"levels": {...}, "webhook": {...}, "runaway": bool,
/// "hostile": bool}`,
/// re-read on every load, so tests can change it and trigger reloads.
struct FileLoader {
    file: PathBuf,
}

impl Loader for FileLoader {
    fn load(&self) -> Result<PolicySet, BoxError> {
        let text = std::fs::read_to_string(&self.file)?;
        let v: Value = serde_json::from_str(&text)?;
        let webhook = WebhookConfig::from_json(v.get("webhook").unwrap_or(&json!({})))?;
        let engine = Engine::new(EngineConfig {
            deadline: webhook.limits.evaluation_timeout,
            cache_dir: Some(cache_dir()),
            ..EngineConfig::default()
        })?;
        let mut policies = vec![LoadedPolicy::new(
            engine.load(computeguard_builtins::BUILTINS[0].component, "builtin")?,
            serde_json::json!({}),
            true,
        )];
        if v["hostile"] == json!(true) {
            policies.push(LoadedPolicy::new(
                engine.load(
                    computeguard_builtins::test_policies::HOSTILE,
                    "hostile.wasm",
                )?,
                serde_json::json!({}),
                false,
            ));
        }
        if v["runaway"] == json!(true) {
            policies.push(LoadedPolicy::new(
                engine.load(&runaway_component()?, "runaway.wasm")?,
                serde_json::json!({}),
                false,
            ));
        }
        let mut levels = BTreeMap::new();
        if let Some(Value::Object(m)) = v.get("levels") {
            for (k, l) in m {
                let level = match l.as_str() {
                    Some("off") => Level::Off,
                    Some("error") => Level::Error,
                    Some("info") => Level::Info,
                    _ => Level::Warning,
                };
                levels.insert(k.clone(), level);
            }
        }
        Ok(PolicySet::new(
            policies,
            levels,
            webhook,
            Some(AS_OF.into()),
        ))
    }

    fn watched(&self) -> Vec<PathBuf> {
        vec![self.file.clone()]
    }
}

/// A policy component whose `evaluate` never returns (stopped by the deadline).
fn runaway_component() -> Result<Vec<u8>, BoxError> {
    let core = r#"(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))
  (data (i32.const 1024) "\00\08\00\00\07\00\00\00\10\08\00\00\05\00\00\00")
  (data (i32.const 2048) "runaway")
  (data (i32.const 2064) "0.0.1")
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.add (global.get $heap) (local.get 3)))
    (local.get $p))
  (func (export "computeguard:policy/evaluator@0.2.0#metadata") (result i32) i32.const 1024)
  (func (export "computeguard:policy/evaluator@0.2.0#validate-settings") (param i32 i32) (result i32)
    i32.const 0)
  (func (export "computeguard:policy/evaluator@0.2.0#evaluate")
    (param i32 i32 i32 i32 i32 i32 i32 i32) (result i32)
    (loop $spin (br $spin))
    unreachable))"#;
    let mut module = wat::parse_str(core)?;
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
    Ok(wit_component::ComponentEncoder::default()
        .module(&module)?
        .validate(true)
        .encode()?)
}

struct Pki {
    ca: CertificateDer<'static>,
    cert_pem: String,
    key_pem: String,
}

/// A fresh CA and a `localhost` certificate signed by it.
fn pki(ca_name: &str) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, ca_name);
    let ca_cert = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().expect("key");
    let leaf = CertificateParams::new(vec!["localhost".to_string()])
        .expect("params")
        .signed_by(&leaf_key, &issuer)
        .expect("leaf");
    Pki {
        ca: ca_cert.der().clone(),
        cert_pem: leaf.pem(),
        key_pem: leaf_key.serialize_pem(),
    }
}

struct Running {
    addr: SocketAddr,
    /// The plain-HTTP probe port.
    probe: SocketAddr,
    ca: CertificateDer<'static>,
    dir: tempfile::TempDir,
    reload: ReloadHandle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl Running {
    async fn conn(&self) -> Connection {
        Connection::open(
            self.addr,
            "localhost",
            tls_config(self.ca.clone()).expect("tls"),
        )
        .await
        .expect("connect")
    }

    fn config_file(&self) -> PathBuf {
        self.dir.path().join("config.json")
    }

    async fn shutdown(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        tokio::time::timeout(Duration::from_secs(30), self.done)
            .await
            .expect("server stops")
            .expect("server task");
    }
}

async fn start(config: Value) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = pki("computeguard test CA");
    std::fs::write(dir.path().join("tls.crt"), &p.cert_pem).expect("write");
    std::fs::write(dir.path().join("tls.key"), &p.key_pem).expect("write");
    let file = dir.path().join("config.json");
    std::fs::write(&file, config.to_string()).expect("write");
    let mut options = ServeOptions::new(
        "127.0.0.1:0".parse().expect("addr"),
        dir.path().join("tls.crt"),
        dir.path().join("tls.key"),
    );
    options.watch_interval = Duration::from_millis(100);
    options.shutdown_timeout = Duration::from_secs(10);
    options.probe_addr = Some("127.0.0.1:0".parse().expect("addr"));
    let server = Server::bind(options, Arc::new(FileLoader { file }))
        .await
        .expect("server starts");
    let addr = server.local_addr().expect("addr");
    let probe = server
        .probe_local_addr()
        .expect("a probe port")
        .expect("probe addr");
    let reload = server.reload_handle();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(async move {
        server
            .run(async {
                let _ = rx.await;
            })
            .await
            .expect("serves");
    });
    Running {
        addr,
        probe,
        ca: p.ca,
        dir,
        reload,
        stop: Some(tx),
        done,
    }
}

fn review(uid: &str, namespace: &str, object: Value) -> Vec<u8> {
    let kind = object["kind"].as_str().unwrap_or("").to_string();
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": kind},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": namespace,
            "name": name,
            "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": object,
            "dryRun": false
        }
    }))
    .expect("json")
}

fn pod(name: &str, size: Option<&str>, gpus: u32, labels: Value, tolerations: Value) -> Value {
    let mut spec = json!({
        "containers": [{
            "name": "main",
            "image": "nvcr.io/nvidia/pytorch:24.05-py3",
            "resources": {"limits": {"nvidia.com/gpu": gpus}}
        }],
        "tolerations": tolerations
    });
    if gpus == 0 {
        spec["containers"][0]["resources"] = json!({});
        spec["containers"][0]["image"] = json!("nginx:1.27");
    }
    if let Some(size) = size {
        spec["nodeSelector"] = json!({"node.kubernetes.io/instance-type": size});
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "labels": labels},
        "spec": spec
    })
}

/// A GPU pod on a retired size whose image declares no CUDA version: `sku-retired` is
/// its only error.
fn retired_pod() -> Value {
    let mut p = pod(
        "old",
        Some("Standard_NC6"),
        1,
        json!({}),
        json!([{"key": "sku", "operator": "Exists"}]),
    );
    p["spec"]["containers"][0]["image"] = json!("busybox:1.36");
    p
}

/// A GPU pod on a current size that tolerates the GPU taint: no built-in finding.
fn a100_pod() -> Value {
    pod(
        "p",
        Some("Standard_NC24ads_A100_v4"),
        1,
        json!({}),
        json!([{"key": "sku", "operator": "Exists"}]),
    )
}

fn gpu_pool(min: i64) -> Value {
    json!({
        "apiVersion": "containerservice.azure.com/v1api20231001",
        "kind": "ManagedClustersAgentPool",
        "metadata": {"name": "gpu", "namespace": "infra"},
        "spec": {
            "owner": {"name": "aks-ml"},
            "vmSize": "Standard_NC24ads_A100_v4",
            "enableAutoScaling": true,
            "minCount": min,
            "maxCount": 4,
            "nodeTaints": ["sku=gpu:NoSchedule"]
        }
    })
}

async fn answer(c: &mut Connection, path: &str, body: Vec<u8>) -> Value {
    let (status, bytes) = c.post(path, body).await.expect("request");
    assert_eq!(
        status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    let v: Value = serde_json::from_slice(&bytes).expect("json answer");
    assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(v["kind"], "AdmissionReview");
    v["response"].clone()
}

fn apply(object: &Value, response: &Value) -> Value {
    use base64::Engine as _;
    assert_eq!(response["patchType"], "JSONPatch");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().expect("patch"))
        .expect("base64");
    let patch: json_patch::Patch = serde_json::from_slice(&raw).expect("a JSON Patch");
    let mut doc = object.clone();
    json_patch::patch(&mut doc, &patch).expect("the patch applies cleanly");
    doc
}

/// Whether the answer warns about `rule`.
fn warned(r: &Value, rule: &str) -> bool {
    let tag = format!("[{rule}]");
    warnings(r).iter().any(|w| w.contains(&tag))
}

fn warnings(r: &Value) -> Vec<String> {
    r["warnings"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_denies_warns_and_allows() {
    let s = start(json!({})).await;
    let mut c = s.conn().await;

    // A retired size: sku-retired is an error, so the request is denied.
    let r = answer(&mut c, "/validate", review("uid-retired", "ml", pod("old", Some("Standard_NC6"), 1, json!({}), json!([{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])))).await;
    assert_eq!(r["uid"], "uid-retired");
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 403);
    let msg = r["status"]["message"].as_str().expect("message");
    assert!(msg.starts_with("computeguard denied Pod ml/old: "), "{msg}");
    assert!(
        msg.contains("[sku-retired]") && msg.contains("Standard_NC6"),
        "{msg}"
    );

    // Inference on an InfiniBand size: a warning-level finding, admitted with a warning.
    let r = answer(
        &mut c,
        "/validate",
        review(
            "uid-ib",
            "ml",
            pod(
                "serve",
                Some("Standard_ND96isr_H100_v5"),
                8,
                json!({"computeguard.io/workload": "inference"}),
                json!([]),
            ),
        ),
    )
    .await;
    assert_eq!(r["uid"], "uid-ib");
    assert_eq!(r["allowed"], true);
    let w = warnings(&r);
    assert!(
        w.iter()
            .any(|w| w.starts_with("[no-infiniband-for-inference] ")),
        "{w:?}"
    );
    assert!(r.get("status").is_none());

    // A current GPU size, tolerated and selected: evaluated, nothing to say.
    let r = answer(&mut c, "/validate", review("uid-a100", "ml", a100_pod())).await;
    assert_eq!(r["allowed"], true);
    assert!(r.get("warnings").is_none(), "{r}");

    // No GPU, no size, no compute fact: admitted without a sandbox (counted as skipped).
    let r = answer(
        &mut c,
        "/validate",
        review(
            "uid-nginx",
            "web",
            pod("web", None, 0, json!({}), json!([])),
        ),
    )
    .await;
    assert_eq!(r["allowed"], true);
    assert!(r.get("warnings").is_none(), "{r}");

    // A kind the decoders do not know is admitted without evaluation.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"sku": "Standard_NC6"}});
    let r = answer(&mut c, "/validate", review("uid-cm", "web", cm)).await;
    assert_eq!(r["allowed"], true);

    // The metrics count each verdict and the findings by rule.
    let (status, body) = c.get("/metrics").await.expect("metrics");
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8_lossy(&body);
    for (verdict, n) in [("denied", 1), ("warned", 1), ("allowed", 1), ("skipped", 2)] {
        let line = format!(
            r#"computeguard_admission_requests_total{{endpoint="validate",verdict="{verdict}"}} {n}"#
        );
        assert!(text.contains(&line), "{line} in {text}");
    }
    for line in [
        r#"computeguard_violations_total{rule="sku-retired",enforcement="deny"} 1"#,
        "computeguard_admission_duration_seconds_bucket",
        "computeguard_policies_loaded 1",
    ] {
        assert!(text.contains(line), "{line} in {text}");
    }
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_admission_reviews_get_answers_with_their_uid() {
    let s = start(json!({})).await;
    let mut c = s.conn().await;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/admission-review");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        let v: Value = serde_json::from_str(&text).expect("json");
        // Some files hold a bare request: wrap it as the API server would.
        let (body, uid) = if v["kind"] == "AdmissionReview" {
            let uid = v["request"]["uid"].as_str().expect("uid").to_string();
            (text.into_bytes(), uid)
        } else {
            let uid = v["uid"].as_str().expect("uid").to_string();
            let body = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": v});
            (serde_json::to_vec(&body).expect("json"), uid)
        };
        let r = answer(&mut c, "/validate", body).await;
        assert_eq!(r["uid"], uid.as_str(), "{}", path.display());
        // None of these public examples asks for a GPU or a size: all are admitted.
        assert_eq!(r["allowed"], true, "{}: {r}", path.display());
        seen += 1;
    }
    assert!(seen >= 3, "fixtures present");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_apply_cleanly_and_the_result_passes_validation() {
    let s = start(json!({"webhook": {"mutations": {"gpuToleration": true, "minNodesZero": true}}}))
        .await;
    let mut c = s.conn().await;

    // A GPU pod that neither selects GPU nodes nor tolerates the GPU taint.
    let p = pod("train", None, 2, json!({}), json!(null));
    let before = answer(&mut c, "/validate", review("v1", "ml", p.clone())).await;
    assert!(warned(&before, "gpu-workload-scheduling"), "{before}");
    let m = answer(&mut c, "/mutate", review("m1", "ml", p.clone())).await;
    assert_eq!(m["uid"], "m1");
    assert_eq!(m["allowed"], true);
    let mutated = apply(&p, &m);
    assert_eq!(
        mutated["spec"]["tolerations"][0],
        json!({"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"})
    );
    let after = answer(&mut c, "/validate", review("v2", "ml", mutated)).await;
    assert!(!warned(&after, "gpu-workload-scheduling"), "{after}");

    // An ASO GPU node pool that keeps two idle nodes.
    let pool = gpu_pool(2);
    let before = answer(&mut c, "/validate", review("v3", "infra", pool.clone())).await;
    assert!(warned(&before, "min-nodes-zero"), "{before}");
    let m = answer(&mut c, "/mutate", review("m2", "infra", pool.clone())).await;
    let mutated = apply(&pool, &m);
    assert_eq!(mutated["spec"]["minCount"], 0);
    let after = answer(&mut c, "/validate", review("v4", "infra", mutated)).await;
    assert!(!warned(&after, "min-nodes-zero"), "{after}");

    // Nothing to fix: no patch at all.
    let m = answer(&mut c, "/mutate", review("m3", "infra", gpu_pool(0))).await;
    assert!(m.get("patch").is_none(), "{m}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutations_are_off_by_default() {
    let s = start(json!({})).await;
    let mut c = s.conn().await;
    let m = answer(&mut c, "/mutate", review("m", "infra", gpu_pool(2))).await;
    assert_eq!(m["allowed"], true);
    assert!(m.get("patch").is_none(), "{m}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcement_exclusions_and_dry_run() {
    let s = start(json!({"webhook": {
        "enforcement": {"no-infiniband-for-inference": "deny", "sku-retired": "audit"},
        "exclude": {"namespaces": ["kube-system"], "labels": {"computeguard.io/exclude": "true"}}
    }}))
    .await;
    let mut c = s.conn().await;
    let ib = pod(
        "serve",
        Some("Standard_ND96isr_H100_v5"),
        8,
        json!({"computeguard.io/workload": "inference"}),
        json!([]),
    );
    let r = answer(&mut c, "/validate", review("a", "ml", ib.clone())).await;
    assert_eq!(r["allowed"], false, "deny by enforcement: {r}");
    let r = answer(&mut c, "/validate", review("b", "kube-system", ib.clone())).await;
    assert_eq!(r["allowed"], true, "excluded namespace");
    let mut labelled = ib.clone();
    labelled["metadata"]["labels"]["computeguard.io/exclude"] = json!("true");
    let r = answer(&mut c, "/validate", review("c", "ml", labelled)).await;
    assert_eq!(r["allowed"], true, "excluded label");
    // audit: admitted, no warning, but counted.
    let old = retired_pod();
    let r = answer(&mut c, "/validate", review("d", "ml", old.clone())).await;
    assert_eq!(r["allowed"], true, "{r}");
    assert!(!warned(&r, "sku-retired"), "{r}");
    let (_, body) = c.get("/metrics").await.expect("metrics");
    assert!(
        String::from_utf8_lossy(&body)
            .contains(r#"computeguard_violations_total{rule="sku-retired",enforcement="audit"} 1"#)
    );

    // Dry-run: what would be denied is admitted with a warning saying so.
    std::fs::write(
        s.config_file(),
        json!({"webhook": {"dryRun": true}}).to_string(),
    )
    .expect("write");
    s.reload.reload();
    wait_for(&mut c, "reloads_total{result=\"success\"} 1").await;
    let r = answer(&mut c, "/validate", review("e", "ml", old)).await;
    assert_eq!(r["allowed"], true);
    assert!(
        warnings(&r)
            .iter()
            .any(|w| w.starts_with("dry-run, would deny: [sku-retired]")),
        "{r}"
    );
    s.shutdown().await;
}

async fn wait_for(c: &mut Connection, metric: &str) {
    let mut seen = false;
    for _ in 0..200 {
        let (_, body) = c.get("/metrics").await.expect("metrics");
        if String::from_utf8_lossy(&body).contains(metric) {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen, "metric `{metric}` never appeared");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_swaps_atomically_and_a_broken_config_keeps_the_old_set() {
    let s = start(json!({})).await;
    let mut c = s.conn().await;
    let old = || review("r", "ml", retired_pod());
    assert_eq!(answer(&mut c, "/validate", old()).await["allowed"], false);

    // A change of the watched file is picked up without a signal.
    std::fs::write(
        s.config_file(),
        json!({"levels": {"sku-retired": "off"}}).to_string(),
    )
    .expect("write");
    wait_for(&mut c, "reloads_total{result=\"success\"} 1").await;
    assert_eq!(answer(&mut c, "/validate", old()).await["allowed"], true);

    // A broken config: logged, counted, and the previous set keeps serving.
    std::fs::write(s.config_file(), "{ not json").expect("write");
    wait_for(&mut c, "reloads_total{result=\"failure\"} 1").await;
    assert_eq!(answer(&mut c, "/validate", old()).await["allowed"], true);
    let (status, _) = c.get("/readyz").await.expect("readyz");
    assert_eq!(status, StatusCode::OK);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_policy_costs_one_verdict_per_its_failure_policy() {
    let s =
        start(json!({"runaway": true, "webhook": {"limits": {"evaluationTimeoutMs": 200}}})).await;
    let mut c = s.conn().await;
    let gpu = || review("x", "ml", a100_pod());
    let r = answer(&mut c, "/validate", gpu()).await;
    assert_eq!(r["allowed"], false, "failurePolicy Fail denies: {r}");
    assert_eq!(r["status"]["code"], 500);
    let msg = r["status"]["message"].as_str().expect("message");
    assert!(
        msg.contains("policy `runaway` could not be evaluated") && msg.contains("deadline"),
        "{msg}"
    );

    std::fs::write(s.config_file(), json!({"runaway": true, "webhook": {"limits": {"evaluationTimeoutMs": 200}, "policyFailure": {"runaway": "Ignore"}}}).to_string()).expect("write");
    wait_for(&mut c, "reloads_total{result=\"success\"} 1").await;
    let r = answer(&mut c, "/validate", gpu()).await;
    assert_eq!(r["allowed"], true, "failurePolicy Ignore admits: {r}");
    assert!(
        warnings(&r)
            .iter()
            .any(|w| w.contains("policy `runaway` could not be evaluated (failurePolicy Ignore)")),
        "{r}"
    );
    let (_, body) = c.get("/metrics").await.expect("metrics");
    assert!(
        String::from_utf8_lossy(&body)
            .contains(r#"computeguard_evaluation_errors_total{policy="runaway",kind="timeout"} 2"#)
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_a_clear_4xx_and_the_server_keeps_serving() {
    let s = start(json!({"webhook": {"limits": {"maxRequestBytes": 65536}}})).await;
    let mut c = s.conn().await;
    let cases: Vec<(&str, Vec<u8>, StatusCode, &str)> = vec![
        ("not json", b"hello".to_vec(), StatusCode::BAD_REQUEST, "not JSON"),
        ("wrong apiVersion", br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"a","operation":"CREATE"}}"#.to_vec(), StatusCode::BAD_REQUEST, "admission.k8s.io/v1"),
        ("missing uid", br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}"#.to_vec(), StatusCode::BAD_REQUEST, "uid"),
        ("oversize", vec![b' '; 70_000], StatusCode::PAYLOAD_TOO_LARGE, "65536-byte limit"),
    ];
    for (what, body, status, needle) in cases {
        let (got, bytes) = c.post("/validate", body).await.expect(what);
        assert_eq!(got, status, "{what}");
        let v: Value = serde_json::from_slice(&bytes).expect("json error body");
        assert!(
            v["error"].as_str().expect("error").contains(needle),
            "{what}: {v}"
        );
        // A fresh connection each time: an oversize body may close the old one.
        c = s.conn().await;
    }
    let (got, _) = c.get("/validate").await.expect("get");
    assert_eq!(got, StatusCode::METHOD_NOT_ALLOWED);
    let (got, _) = c.get("/nope").await.expect("get");
    assert_eq!(got, StatusCode::NOT_FOUND);
    let r = answer(&mut c, "/validate", review("after", "ml", gpu_pool(0))).await;
    assert_eq!(r["uid"], "after");
    let (_, body) = c.get("/metrics").await.expect("metrics");
    let text = String::from_utf8_lossy(&body);
    assert!(text.contains(r#"verdict="bad_request"} 3"#), "{text}");
    assert!(text.contains(r#"verdict="too_large"} 1"#), "{text}");
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_is_reloaded_without_restart() {
    let s = start(json!({})).await;
    let new = pki("a second CA");
    std::fs::write(s.dir.path().join("tls.crt"), &new.cert_pem).expect("write");
    std::fs::write(s.dir.path().join("tls.key"), &new.key_pem).expect("write");
    let tls = tls_config(new.ca.clone()).expect("tls");
    let mut ok = false;
    for _ in 0..100 {
        if let Ok(mut c) = Connection::open(s.addr, "localhost", tls.clone()).await
            && c.get("/healthz").await.is_ok()
        {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "a client trusting only the new CA connects");
    // The old CA no longer verifies the served certificate.
    assert!(
        Connection::open(s.addr, "localhost", tls_config(s.ca.clone()).expect("tls"))
            .await
            .is_err()
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_in_flight_requests_then_stops_listening() {
    let s =
        start(json!({"runaway": true, "webhook": {"limits": {"evaluationTimeoutMs": 500}}})).await;
    let addr = s.addr;
    let ca = s.ca.clone();
    let mut c = s.conn().await;
    let (status, _) = c.get("/readyz").await.expect("readyz");
    assert_eq!(status, StatusCode::OK);
    // A request that takes ~0.5 s (the runaway policy runs to its deadline).
    let body = review("slow", "ml", a100_pod());
    let slow = tokio::spawn(async move { c.post("/validate", Bytes::from(body)).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.shutdown().await;
    let (status, bytes) = slow
        .await
        .expect("task")
        .expect("the in-flight request is answered");
    assert_eq!(status, StatusCode::OK);
    let v: Value = serde_json::from_slice(&bytes).expect("json");
    assert_eq!(v["response"]["uid"], "slow");
    assert!(
        Connection::open(addr, "localhost", tls_config(ca).expect("tls"))
            .await
            .is_err(),
        "no longer listening"
    );
}
