//! `computeguard serve` as a process for the registry tests: a TLS certificate, the
//! server started from a `computeguard.yaml`, AdmissionReviews posted, `/metrics` read,
//! signals sent, and the JSON log lines followed. The certificate and the AdmissionReview are tests/cli/serve.rs's.

use crate::computeguard;
use crate::serve::{certs, review};
use computeguard_server::client::{CertificateDer, Connection, tls_config};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running `computeguard serve --log-format json`, killed when dropped.
pub struct Webhook {
    child: Child,
    addr: SocketAddr,
    /// The CA the server's certificate is signed by.
    ca: CertificateDer<'static>,
    rt: tokio::runtime::Runtime,
    logs: mpsc::Receiver<String>,
    /// Every log line received so far, and how many of them a wait has passed.
    lines: Vec<String>,
    cursor: usize,
}

impl Webhook {
    /// Starts `serve` with the `computeguard.yaml` of `dir` (a certificate is written
    /// there), the OCI cache `cache` and `args`; returns once it serves.
    pub fn start(dir: &Path, cache: &Path, args: &[&str]) -> Webhook {
        let ca = certs(dir);
        let addr: SocketAddr = format!("127.0.0.1:{}", super::support::free_port())
            .parse()
            .expect("addr");
        let mut child = computeguard()
            .env("COMPUTEGUARD_OCI_CACHE", cache)
            .env_remove("COMPUTEGUARD_REGISTRY_TOKEN")
            .env_remove("COMPUTEGUARD_REGISTRY_USERNAME")
            .args(["serve", "--addr", &addr.to_string()])
            .arg("--tls-cert")
            .arg(dir.join("tls.crt"))
            .arg("--tls-key")
            .arg(dir.join("tls.key"))
            .arg("--config")
            .arg(dir.join("computeguard.yaml"))
            .args(["--log-format", "json", "--watch-interval", "3600"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let (tx, logs) = mpsc::channel::<String>();
        let stderr = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut w = Webhook {
            child,
            addr,
            ca,
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            logs,
            lines: Vec::new(),
            cursor: 0,
        };
        w.wait_log(&["webhook serving"], Duration::from_secs(180));
        w
    }

    /// The first log line after the last one a wait returned that contains one of
    /// `needles`; fails the test, showing those lines, when none comes within `within`.
    pub fn wait_log(&mut self, needles: &[&str], within: Duration) -> String {
        self.wait_line(|l| needles.iter().any(|n| l.contains(n)), within, needles)
    }

    /// The first log line after the last one a wait returned that contains all of
    /// `needles`.
    pub fn wait_log_all(&mut self, needles: &[&str], within: Duration) -> String {
        self.wait_line(|l| needles.iter().all(|n| l.contains(n)), within, needles)
    }

    fn wait_line(
        &mut self,
        matches: impl Fn(&str) -> bool,
        within: Duration,
        needles: &[&str],
    ) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(i) = (self.cursor..self.lines.len()).find(|&i| matches(&self.lines[i])) {
                self.cursor = i + 1;
                return self.lines[i].clone();
            }
            if Instant::now() > deadline {
                panic!(
                    "no log line with {needles:?} within {within:?}; since the last one:\n{}",
                    self.lines[self.cursor..].join("\n")
                );
            }
            if let Ok(l) = self.logs.recv_timeout(Duration::from_millis(100)) {
                self.lines.push(l);
            }
        }
    }

    /// The lines received since the previous wait (up to the one it just returned
    /// included when called right after it): `from` is a cursor saved before.
    pub fn lines_since(&self, from: usize) -> &[String] {
        &self.lines[from.min(self.lines.len())..self.cursor]
    }

    /// Where the next wait starts, after reading what has arrived so far (lines logged
    /// before an action are then never taken for its effect).
    pub fn mark(&mut self) -> usize {
        while let Ok(l) = self.logs.try_recv() {
            self.lines.push(l);
        }
        self.cursor = self.lines.len();
        self.cursor
    }

    /// Sends `sig` (`HUP`, `TERM`) to the server.
    pub fn signal(&self, sig: &str) {
        let status = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    fn request(&self, post: Option<Vec<u8>>, path: &str) -> (u16, Vec<u8>) {
        self.rt.block_on(async {
            let mut c = Connection::open(
                self.addr,
                "localhost",
                tls_config(self.ca.clone()).expect("tls"),
            )
            .await
            .expect("connect");
            let (status, body) = match post {
                Some(body) => c.post(path, body).await,
                None => c.get(path).await,
            }
            .expect("request");
            (status.as_u16(), body.to_vec())
        })
    }

    /// The `[sku-retired]` warning the webhook gives the pod of [`review`] (empty when
    /// none), posted as `uid`.
    pub fn sku_retired(&self, uid: &str) -> String {
        let (status, body) = self.request(Some(review(uid)), "/validate");
        assert_eq!(status, 200);
        let r = serde_json::from_slice::<Value>(&body).expect("json")["response"].clone();
        r["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .find(|w| w.starts_with("[sku-retired]"))
            .unwrap_or("")
            .to_string()
    }

    /// The value of the `/metrics` sample `series` (`name{labels}`), 0 when absent.
    pub fn metric(&self, series: &str) -> u64 {
        let (status, body) = self.request(None, "/metrics");
        assert_eq!(status, 200);
        let text = String::from_utf8(body).expect("utf-8");
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .map(|v| v.trim().parse::<f64>().expect("a number") as u64)
            .unwrap_or(0)
    }

    /// `computeguard_artifact_resolutions_total{result="RESULT"}`.
    pub fn resolutions(&self, result: &str) -> u64 {
        self.metric(&format!(
            "computeguard_artifact_resolutions_total{{result=\"{result}\"}}"
        ))
    }
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
