//! `computeguard serve` as a process: the CLI wiring of the webhook (config file,
//! `webhook:` section, SIGHUP reload, JSON logs, SIGTERM drain). The server's own
//! behaviour is tested in `host/server/tests/e2e.rs`.

use crate::computeguard;
use computeguard_server::client::{CertificateDer, Connection, tls_config};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Writes `tls.crt` and `tls.key` (for `localhost`) into `dir`; returns the CA.
pub(crate) fn certs(dir: &Path) -> CertificateDer<'static> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let leaf = CertificateParams::new(vec!["localhost".to_string()])
        .expect("params")
        .signed_by(&key, &issuer)
        .expect("leaf");
    std::fs::write(dir.join("tls.crt"), leaf.pem()).expect("write");
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).expect("write");
    ca.der().clone()
}

/// `computeguard serve` on `addr` with the certificate and `computeguard.yaml` in `dir`.
fn serve(dir: &Path, addr: &str) -> std::process::Command {
    let mut cmd = computeguard();
    cmd.args(["serve", "--addr", addr])
        .arg("--tls-cert")
        .arg(dir.join("tls.crt"))
        .arg("--tls-key")
        .arg(dir.join("tls.key"))
        .arg("--config")
        .arg(dir.join("computeguard.yaml"));
    cmd
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// An AdmissionReview of an inference pod on `Standard_ND96isr_H100_v5`, posted as `uid`.
pub(crate) fn review(uid: &str) -> Vec<u8> {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "serve", "namespace": "ml", "labels": {"computeguard.io/workload": "inference"}},
        "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"},
            "tolerations": [{"key": "sku", "operator": "Exists"}],
            "containers": [{"name": "m", "image": "busybox:1.36", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}});
    serde_json::to_vec(
        &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": uid, "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": "ml", "name": "serve", "operation": "CREATE", "object": pod}}),
    )
    .expect("json")
}

/// The lines the child writes to its standard error, as they come.
fn follow(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, logs) = mpsc::channel::<String>();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    logs
}

fn signal(child: &Child, sig: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

#[test]
fn serve_runs_from_the_config_reloads_on_sighup_and_drains_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = certs(dir.path());
    let config = dir.path().join("computeguard.yaml");
    let write_config = |enforcement: &str| {
        std::fs::write(
            &config,
            format!(
                "asOf: 2026-11-22\nwebhook:\n  enforcement:\n    no-infiniband-for-inference: {enforcement}\n"
            ),
        )
        .expect("write config");
    };
    write_config("deny");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    let mut child = serve(dir.path(), &addr.to_string())
        .args(["--log-format", "json"])
        .args(["--watch-interval", "3600"]) // only SIGHUP reloads in this test
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    // Collect the JSON log lines as they come.
    let logs = follow(&mut child);
    let mut seen: Vec<String> = Vec::new();
    let wait_log = |seen: &mut Vec<String>, needle: &str| -> bool {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if seen.iter().any(|l| l.contains(needle)) {
                return true;
            }
            if let Ok(l) = logs.recv_timeout(Duration::from_millis(200)) {
                seen.push(l);
            }
        }
        false
    };
    assert!(wait_log(&mut seen, "webhook serving"), "the server starts");

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tls = tls_config(ca).expect("tls");
    let post = |uid: &'static str| -> Value {
        rt.block_on(async {
            let mut c = Connection::open(addr, "localhost", tls.clone())
                .await
                .expect("connect");
            let (status, body) = c.post("/validate", review(uid)).await.expect("post");
            assert_eq!(status.as_u16(), 200);
            serde_json::from_slice::<Value>(&body).expect("json")["response"].clone()
        })
    };
    let r = post("first");
    assert_eq!(r["allowed"], false, "enforcement from the config: {r}");
    assert!(
        r["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("[no-infiniband-for-inference]")),
        "{r}"
    );
    // One JSON object per request, with the uid and the verdict.
    let mut logged = |uid: &str| -> Value {
        let needle = format!(r#""uid":"{uid}""#);
        assert!(wait_log(&mut seen, &needle), "request logged: {seen:?}");
        let line = seen.iter().find(|l| l.contains(&needle)).expect("log line");
        serde_json::from_str(line).expect("a JSON log line")
    };
    let v = logged("first");
    assert_eq!(v["fields"]["verdict"], "denied", "{v}");
    assert_eq!(v["fields"]["template"], "miss", "{v}");
    // The same object again is answered from its template, with the same answer.
    let again = post("again");
    assert_eq!(again["uid"], "again");
    assert_eq!(
        (&again["allowed"], &again["status"], &again["warnings"]),
        (&r["allowed"], &r["status"], &r["warnings"])
    );
    assert_eq!(logged("again")["fields"]["template"], "hit");
    let metrics = rt.block_on(async {
        let mut c = Connection::open(addr, "localhost", tls.clone())
            .await
            .expect("connect");
        let (_, body) = c.get("/metrics").await.expect("metrics");
        String::from_utf8_lossy(&body).into_owned()
    });
    for result in ["hit", "miss"] {
        assert!(
            metrics.contains(&format!(
                "computeguard_template_cache_total{{result=\"{result}\"}} 1"
            )),
            "{metrics}"
        );
    }

    write_config("warn");
    signal(&child, "HUP");
    assert!(
        wait_log(&mut seen, "policies and configuration reloaded"),
        "{seen:?}"
    );
    let r = post("second");
    assert_eq!(r["allowed"], true, "reloaded config: {r}");
    assert!(
        r["warnings"][0]
            .as_str()
            .is_some_and(|w| w.starts_with("[no-infiniband-for-inference]"))
    );

    signal(&child, "TERM");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        status.is_some_and(|s| s.success()),
        "SIGTERM stops the server cleanly: {status:?}"
    );
}

#[test]
fn serve_refuses_a_bad_webhook_section_with_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    certs(dir.path());
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(
        &config,
        "webhook:\n  enforcement:\n    sku-retired: block\n",
    )
    .expect("write");
    let out = serve(dir.path(), "127.0.0.1:1").output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("computeguard.yaml:3:") && err.contains("expected deny, warn or audit"),
        "{err}"
    );
}

#[test]
fn a_server_that_compiled_at_start_restarts_itself_from_the_warm_cache() {
    // The compiler's memory stays in the process that compiled; after filling the
    // artifact cache, `serve` replaces itself (same PID) with a run that finds it warm,
    // once, before it binds anything. docs/benchmarks.md, section 10.
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = tempfile::tempdir().expect("cache");
    let ca = certs(dir.path());
    std::fs::write(dir.path().join("computeguard.yaml"), "asOf: 2026-11-22\n").expect("config");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    let mut child = serve(dir.path(), &addr.to_string())
        .env("COMPUTEGUARD_CACHE_DIR", cache.path())
        .env_remove("COMPUTEGUARD_RESTARTED_WARM")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let stderr = child.stderr.take().expect("stderr");
    let child = KillOnDrop(child);
    let (tx, logs) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline && !seen.iter().any(|l: &String| l.contains("webhook serving"))
    {
        if let Ok(l) = logs.recv_timeout(Duration::from_millis(200)) {
            seen.push(l);
        }
    }
    let restarts = seen
        .iter()
        .filter(|l| l.contains("restarting from the warm cache"))
        .count();
    assert_eq!(restarts, 1, "{seen:?}");
    assert!(
        std::fs::read_dir(cache.path()).expect("cache").count() > 0,
        "the artifact was cached"
    );
    #[cfg(target_os = "linux")]
    {
        let environ = std::fs::read(format!("/proc/{}/environ", child.0.id())).expect("environ");
        assert!(
            environ
                .split(|b| *b == 0)
                .any(|kv| kv == b"COMPUTEGUARD_RESTARTED_WARM=1"),
            "the same PID runs the restarted server"
        );
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tls = tls_config(ca).expect("tls");
    let answer = rt.block_on(async {
        let mut c = Connection::open(addr, "localhost", tls)
            .await
            .expect("connect");
        let (status, body) = c.post("/validate", review("warm")).await.expect("post");
        assert_eq!(status.as_u16(), 200);
        serde_json::from_slice::<Value>(&body).expect("json")["response"].clone()
    });
    assert!(
        answer["warnings"][0]
            .as_str()
            .is_some_and(|w| w.starts_with("[no-infiniband-for-inference]")),
        "evaluated by the restarted server: {answer}"
    );
}

/// Kills the server when the test ends, passed or not.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A catalog overlay reloads with the rest of the configuration; a broken one is refused
/// and the previous set, with the previous overlay, keeps serving (issue 25).
#[test]
fn serve_reloads_the_catalog_overlay_and_keeps_the_previous_one_when_it_breaks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = certs(dir.path());
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "asOf: 2026-11-22\ncatalog: [overlay.yaml]\nwebhook:\n  enforcement:\n    no-infiniband-for-inference: warn\n    sku-retired: warn\n",
    )
    .expect("write config");
    let overlay = dir.path().join("overlay.yaml");
    let write_overlay = |date: &str| {
        std::fs::write(
            &overlay,
            format!(
                "kind: CatalogOverlay\nskus:\n  - name: Standard_ND96isr_H100_v5\n    source: test\n    retirementDate: \"{date}\"\n"
            ),
        )
        .expect("write overlay");
    };
    write_overlay("2026-01-31");
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
    let mut child = serve(dir.path(), &addr.to_string())
        .args(["--log-format", "json", "--watch-interval", "3600"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn serve");
    let logs = follow(&mut child);
    let mut seen: Vec<String> = Vec::new();
    let mut wait_log = |needle: &str| -> bool {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            if seen.iter().any(|l| l.contains(needle)) {
                seen.clear();
                return true;
            }
            if let Ok(l) = logs.recv_timeout(Duration::from_millis(200)) {
                seen.push(l);
            }
        }
        false
    };
    assert!(wait_log("webhook serving"), "the server starts");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tls = tls_config(ca).expect("tls");
    let retired = |uid: &'static str| -> String {
        let r = rt.block_on(async {
            let mut c = Connection::open(addr, "localhost", tls.clone())
                .await
                .expect("connect");
            let (status, body) = c.post("/validate", review(uid)).await.expect("post");
            assert_eq!(status.as_u16(), 200);
            serde_json::from_slice::<Value>(&body).expect("json")["response"].clone()
        });
        r["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|w| w.starts_with("[sku-retired]"))
            .unwrap_or("")
            .to_string()
    };
    let w = retired("overlay-1");
    assert!(
        w.contains("retired on 2026-01-31"),
        "the overlay's date: {w}"
    );

    std::fs::write(
        &overlay,
        "kind: CatalogOverlay\nskus:\n  - name: Standard_ND96isr_H100_v5\n",
    )
    .expect("break");
    signal(&child, "HUP");
    assert!(wait_log("RELOAD FAILED"), "a broken overlay is refused");
    let w = retired("overlay-2");
    assert!(
        w.contains("retired on 2026-01-31"),
        "the previous overlay keeps serving: {w}"
    );

    write_overlay("2027-06-30");
    signal(&child, "HUP");
    assert!(
        wait_log("policies and configuration reloaded"),
        "a fixed overlay loads"
    );
    let w = retired("overlay-3");
    assert!(
        w.contains("announced for 2027-06-30"),
        "the new overlay: {w}"
    );
    signal(&child, "TERM");
    let _ = child.wait();
}
