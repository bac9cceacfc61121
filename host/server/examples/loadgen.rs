//! Load generator for the webhook: an open-loop HTTPS client that POSTs real
//! AdmissionReviews at a fixed rate and reports throughput, failures and latency
//! percentiles (client-side, measured from each request's SCHEDULED send time, so a
//! stalled server cannot hide its queueing), plus the server-side latency histogram
//! read from `/metrics`.
//!
//! ```sh
//! cargo run --release -p computeguard-server --example loadgen -- certs /tmp/cg-load
//! computeguard serve --addr 127.0.0.1:8443 --tls-cert /tmp/cg-load/tls.crt --tls-key /tmp/cg-load/tls.key &
//! cargo run --release -p computeguard-server --example loadgen -- run \
//!     --addr 127.0.0.1:8443 --ca /tmp/cg-load/ca.pem --rate 2000 --seconds 20 --connections 8
//! ```
//! `scripts/loadtest.sh` does all three. See docs/benchmarks.md.
//!
//! `loadgen hold` plays the holder of issue 23: it keeps N TLS connections open from one
//! address (each sends one request when it opens, then nothing, or one request every
//! `--every` seconds) and, with `--reopen`, reopens any the server closes;
//! `scripts/held-load.sh` runs it beside a load test.
//!
//! `loadgen burst` plays the API server of issue 34 when a Deployment scales from 0 to N
//! replicas: N clients on one address each open a NEW TLS connection at the same moment
//! (HTTP/1.1 or HTTP/2 by ALPN), send one AdmissionReview and check the answer;
//! `scripts/burst.sh` runs it at 300 and 1,000 over both protocols.

use computeguard_server::client::{Connection, tls_config};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn usage() -> ! {
    eprintln!(
        "usage: loadgen certs DIR\n       loadgen run --addr HOST:PORT --ca FILE [--rate N] [--seconds N] [--connections N] [--path /validate] [--check] [--malformed-permille N] [--body FILE] [--vary name|label]\n       loadgen hold --addr HOST:PORT --ca FILE --connections N [--from IP] [--every SECONDS] [--seconds N] [--reopen]\n       loadgen burst --addr HOST:PORT --ca FILE [--n N] [--proto http1|h2] [--from IP] [--path /validate] [--body FILE]"
    );
    std::process::exit(2)
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("certs") => certs(&PathBuf::from(args.get(1).unwrap_or_else(|| usage()))),
        Some("hold") => {
            let mut hold = Hold {
                addr: "127.0.0.1:8443".parse()?,
                ca: PathBuf::new(),
                connections: 1000,
                from: "127.0.0.2".parse()?,
                every: 0,
                seconds: 30,
                reopen: false,
            };
            let mut it = args[1..].iter();
            while let Some(flag) = it.next() {
                if flag == "--reopen" {
                    hold.reopen = true;
                    continue;
                }
                let value = it.next().unwrap_or_else(|| usage());
                match flag.as_str() {
                    "--addr" => hold.addr = value.parse()?,
                    "--ca" => hold.ca = PathBuf::from(value),
                    "--connections" => hold.connections = value.parse()?,
                    "--from" => hold.from = value.parse()?,
                    "--every" => hold.every = value.parse()?,
                    "--seconds" => hold.seconds = value.parse()?,
                    _ => usage(),
                }
            }
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?
                .block_on(hold.run())
        }
        Some("burst") => {
            let mut burst = Burst {
                addr: "127.0.0.1:8443".parse()?,
                ca: PathBuf::new(),
                n: 1000,
                proto: Proto::Http1,
                from: "127.0.0.1".parse()?,
                path: "/validate".into(),
                body: None,
            };
            let mut it = args[1..].iter();
            while let Some(flag) = it.next() {
                let value = it.next().unwrap_or_else(|| usage());
                match flag.as_str() {
                    "--addr" => burst.addr = value.parse()?,
                    "--ca" => burst.ca = PathBuf::from(value),
                    "--n" => burst.n = value.parse()?,
                    "--proto" => {
                        burst.proto = match value.as_str() {
                            "http1" => Proto::Http1,
                            "h2" => Proto::Http2,
                            _ => usage(),
                        }
                    }
                    "--from" => burst.from = value.parse()?,
                    "--path" => burst.path = value.clone(),
                    "--body" => burst.body = Some(PathBuf::from(value)),
                    _ => usage(),
                }
            }
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?
                .block_on(burst.run())
        }
        Some("run") => {
            let mut opts = Opts {
                addr: "127.0.0.1:8443".parse()?,
                ca: PathBuf::new(),
                rate: 2000,
                seconds: 20,
                connections: 8,
                path: "/validate".into(),
                check: false,
                malformed_permille: 0,
                body: None,
                vary: Vary::None,
            };
            let mut it = args[1..].iter();
            while let Some(flag) = it.next() {
                if flag == "--check" {
                    opts.check = true;
                    continue;
                }
                let value = it.next().unwrap_or_else(|| usage());
                match flag.as_str() {
                    "--addr" => opts.addr = value.parse()?,
                    "--ca" => opts.ca = PathBuf::from(value),
                    "--rate" => opts.rate = value.parse()?,
                    "--seconds" => opts.seconds = value.parse()?,
                    "--connections" => opts.connections = value.parse()?,
                    "--body" => opts.body = Some(PathBuf::from(value)),
                    "--path" => opts.path = value.clone(),
                    "--malformed-permille" => opts.malformed_permille = value.parse()?,
                    "--vary" => {
                        opts.vary = match value.as_str() {
                            "name" => Vary::Name,
                            "label" => Vary::Label,
                            _ => usage(),
                        }
                    }
                    _ => usage(),
                }
            }
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?
                .block_on(run(opts))
        }
        _ => usage(),
    }
}

/// Writes `ca.pem`, `tls.crt` and `tls.key` (a CA and a `localhost` certificate).
fn certs(dir: &std::path::Path) -> Result<(), Error> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    std::fs::create_dir_all(dir)?;
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "computeguard loadgen CA");
    let ca = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate()?;
    let leaf = CertificateParams::new(vec!["localhost".to_string()])?.signed_by(&key, &issuer)?;
    std::fs::write(dir.join("ca.pem"), ca.pem())?;
    std::fs::write(dir.join("tls.crt"), leaf.pem())?;
    std::fs::write(dir.join("tls.key"), key.serialize_pem())?;
    println!("{}", dir.display());
    Ok(())
}

/// `loadgen hold`: connections held from one address.
struct Hold {
    addr: SocketAddr,
    ca: PathBuf,
    connections: usize,
    from: std::net::IpAddr,
    /// Seconds between requests on each connection; 0: one request, then idle.
    every: u64,
    seconds: u64,
    /// Reopen a connection the server closed (as fast as the server lets it).
    reopen: bool,
}

impl Hold {
    async fn open(&self, tls: Arc<rustls::ClientConfig>) -> Result<Connection, Error> {
        let socket = match self.from {
            std::net::IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            std::net::IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        socket.bind(SocketAddr::new(self.from, 0))?;
        let tcp = socket.connect(self.addr).await?;
        let mut c = Connection::over(tcp, "localhost", tls).await?;
        c.get("/healthz").await?;
        Ok(c)
    }

    async fn run(self) -> Result<(), Error> {
        use std::sync::atomic::{AtomicU64, Ordering};
        let ca = CertificateDer::from_pem_file(&self.ca)?;
        let tls = tls_config(ca)?;
        let this = Arc::new(self);
        let opened = Arc::new(AtomicU64::new(0));
        let lost = Arc::new(AtomicU64::new(0));
        let end = Instant::now() + Duration::from_secs(this.seconds);
        let mut tasks = Vec::new();
        for _ in 0..this.connections {
            let (this, tls, opened, lost) =
                (this.clone(), tls.clone(), opened.clone(), lost.clone());
            tasks.push(tokio::spawn(async move {
                while Instant::now() < end {
                    let Ok(mut c) = this.open(tls.clone()).await else {
                        lost.fetch_add(1, Ordering::Relaxed);
                        if !this.reopen {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    };
                    opened.fetch_add(1, Ordering::Relaxed);
                    // Held until the server closes it or the end; with `every`, a request
                    // that often keeps it past the idle timeout.
                    let mut next = Instant::now() + Duration::from_secs(this.every);
                    loop {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        if Instant::now() >= end {
                            return;
                        }
                        let mut closed = c.is_closed();
                        if !closed && this.every > 0 && Instant::now() >= next {
                            closed = c.get("/healthz").await.is_err();
                            next = Instant::now() + Duration::from_secs(this.every);
                        }
                        if closed {
                            lost.fetch_add(1, Ordering::Relaxed);
                            if !this.reopen {
                                return;
                            }
                            break;
                        }
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        println!(
            "held {} connections from {} for {} s: {} opened, {} closed by the server or refused",
            this.connections,
            this.from,
            this.seconds,
            opened.load(Ordering::Relaxed),
            lost.load(Ordering::Relaxed)
        );
        Ok(())
    }
}

/// How a burst client speaks, chosen by ALPN.
#[derive(Clone, Copy, PartialEq)]
enum Proto {
    Http1,
    Http2,
}

impl Proto {
    fn alpn(self) -> &'static [u8] {
        match self {
            Proto::Http1 => b"http/1.1",
            Proto::Http2 => b"h2",
        }
    }
}

/// `loadgen burst`: N new connections from one address at the same moment, one review
/// each (issue 34).
struct Burst {
    addr: SocketAddr,
    ca: PathBuf,
    /// Clients, each with a connection of its own.
    n: usize,
    proto: Proto,
    /// The address every client binds (the API server's one address).
    from: std::net::IpAddr,
    path: String,
    /// Send this AdmissionReview (each client with its own uid and name) instead of the
    /// two GPU Pods of the mix (one allowed, one on a retired size, alternately).
    body: Option<PathBuf>,
}

/// What became of one burst client.
enum Outcome {
    /// HTTP 200, its own uid echoed, `allowed` as the baseline said.
    Correct,
    /// No answer: refused on accept, closed, or a failed handshake or request.
    NoAnswer(String),
    /// An answer other than HTTP 200.
    HttpError(String),
    /// HTTP 200 with another uid or another verdict than the baseline's.
    Wrong(String),
}

impl Burst {
    /// The review client `i` sends: `body` with the uid `burst-i` and a name of its own
    /// (`NAME-burst-i`), as the Pods of one ReplicaSet differ.
    fn review(body: &serde_json::Value, i: usize) -> bytes::Bytes {
        let mut b = body.clone();
        b["request"]["uid"] = json!(format!("burst-{i}"));
        let name = format!(
            "{}-burst-{i}",
            b["request"]["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("pod")
        );
        b["request"]["object"]["metadata"]["name"] = json!(name);
        b["request"]["name"] = json!(name);
        bytes::Bytes::from(b.to_string())
    }

    /// Opens a new connection from `socket`'s address, speaks `proto` over it and POSTs
    /// `body` once: the status and body of the answer.
    async fn one(
        &self,
        socket: tokio::net::TcpSocket,
        tls: Arc<rustls::ClientConfig>,
        body: bytes::Bytes,
    ) -> Result<(hyper::StatusCode, bytes::Bytes), String> {
        use http_body_util::{BodyExt, Full};
        use hyper_util::rt::{TokioExecutor, TokioIo};
        let tcp = socket
            .connect(self.addr)
            .await
            .map_err(|e| format!("connect: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let name =
            rustls::pki_types::ServerName::try_from("localhost").map_err(|e| e.to_string())?;
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        let chosen = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        if chosen.as_deref() != Some(self.proto.alpn()) {
            return Err(format!(
                "the server chose ALPN {:?}",
                chosen.map(|p| String::from_utf8_lossy(&p).into_owned())
            ));
        }
        let request = hyper::Request::builder()
            .method(hyper::Method::POST)
            .header(hyper::header::CONTENT_TYPE, "application/json");
        // HTTP/1.1 names the host in a header; HTTP/2 in the URI (`:authority`).
        let request = match self.proto {
            Proto::Http1 => request
                .uri(&self.path)
                .header(hyper::header::HOST, "localhost"),
            Proto::Http2 => request.uri(format!("https://localhost{}", self.path)),
        }
        .body(Full::new(body))
        .map_err(|e| e.to_string())?;
        let io = TokioIo::new(stream);
        let response = match self.proto {
            Proto::Http1 => {
                let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
                    .await
                    .map_err(|e| format!("http/1.1: {e}"))?;
                tokio::spawn(conn);
                sender.send_request(request).await
            }
            Proto::Http2 => {
                let (mut sender, conn) =
                    hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                        .await
                        .map_err(|e| format!("h2: {e}"))?;
                tokio::spawn(conn);
                sender.send_request(request).await
            }
        }
        .map_err(|e| format!("request: {e}"))?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("body: {e}"))?
            .to_bytes();
        Ok((status, body))
    }

    /// Runs the burst and prints what became of it; exits 1 when any client went without
    /// its correct answer.
    async fn run(self) -> Result<(), Error> {
        let ca = CertificateDer::from_pem_file(&self.ca)?;
        let mut tls = (*tls_config(ca.clone())?).clone();
        tls.alpn_protocols = vec![self.proto.alpn().to_vec()];
        let tls = Arc::new(tls);
        let bodies: Vec<serde_json::Value> = match &self.body {
            Some(path) => vec![serde_json::from_slice(&std::fs::read(path)?)?],
            None => {
                let mix = mix();
                vec![
                    serde_json::from_slice(&mix[0])?,
                    serde_json::from_slice(&mix[2])?,
                ]
            }
        };
        // The verdict each body gets, asked once over a connection of its own that is
        // closed before the burst (served, so it spends none of the address's budget).
        let mut expected = Vec::new();
        {
            let mut conn = Connection::open(self.addr, "localhost", tls_config(ca)?).await?;
            for b in &bodies {
                let (status, answer) = conn.post(&self.path, Self::review(b, 0)).await?;
                let (_, allowed, _) = verdict(&answer)
                    .filter(|_| status.is_success())
                    .ok_or_else(|| {
                        format!(
                            "baseline answer HTTP {status}: {}",
                            String::from_utf8_lossy(&answer)
                        )
                    })?;
                expected.push(allowed);
            }
        }
        let this = Arc::new(self);
        let go = Arc::new(tokio::sync::Barrier::new(this.n + 1));
        let mut clients = Vec::with_capacity(this.n);
        for i in 0..this.n {
            let which = i % bodies.len();
            let (body, allowed) = (Self::review(&bodies[which], i), expected[which]);
            // Bound before the barrier, so that the burst is connects, not binds.
            let socket = match this.from {
                std::net::IpAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
                std::net::IpAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
            };
            socket.bind(SocketAddr::new(this.from, 0))?;
            let (this, tls, go) = (this.clone(), tls.clone(), go.clone());
            clients.push(tokio::spawn(async move {
                go.wait().await;
                let began = Instant::now();
                let outcome = match this.one(socket, tls, body).await {
                    Err(e) => Outcome::NoAnswer(e),
                    Ok((status, b)) if status != hyper::StatusCode::OK => Outcome::HttpError(
                        format!("HTTP {status}: {}", String::from_utf8_lossy(&b)),
                    ),
                    Ok((_, b)) => match verdict(&b) {
                        Some((uid, a, _)) if uid == format!("burst-{i}") && a == allowed => {
                            Outcome::Correct
                        }
                        _ => Outcome::Wrong(String::from_utf8_lossy(&b).into_owned()),
                    },
                };
                (i, outcome, began.elapsed())
            }));
        }
        let began = Instant::now();
        go.wait().await;
        let (mut correct, mut no_answer, mut http_error, mut wrong) = (0, 0, 0, 0);
        let mut errors = Vec::new();
        let mut took_us = Vec::with_capacity(this.n);
        for c in clients {
            let (i, outcome, took) = c.await?;
            took_us.push(took.as_micros() as u64);
            let error = match outcome {
                Outcome::Correct => {
                    correct += 1;
                    continue;
                }
                Outcome::NoAnswer(e) => {
                    no_answer += 1;
                    e
                }
                Outcome::HttpError(e) => {
                    http_error += 1;
                    e
                }
                Outcome::Wrong(e) => {
                    wrong += 1;
                    format!("wrong answer: {e}")
                }
            };
            if errors.len() < 5 {
                errors.push(format!("client {i}: {error}"));
            }
        }
        let wall = began.elapsed();
        took_us.sort_unstable();
        let pct = |p: f64| -> f64 {
            let i = ((p / 100.0) * (took_us.len().max(1) - 1) as f64).round() as usize;
            took_us.get(i).map_or(0.0, |us| *us as f64 / 1000.0)
        };
        let failed = no_answer + http_error + wrong;
        println!(
            "burst of {} new {} connections from {} to {}",
            this.n,
            match this.proto {
                Proto::Http1 => "HTTP/1.1",
                Proto::Http2 => "HTTP/2",
            },
            this.from,
            this.path
        );
        println!(
            "sent {}  answered correctly {correct}  failed {failed} (no answer {no_answer}, HTTP error {http_error}, wrong answer {wrong})",
            this.n
        );
        println!(
            "wall time {:.1} ms (the barrier to the last answer)",
            wall.as_secs_f64() * 1000.0
        );
        println!(
            "per client ms (connect to answer): p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
            pct(50.0),
            pct(90.0),
            pct(99.0),
            pct(100.0)
        );
        for e in &errors {
            println!("error: {e}");
        }
        if failed > 0 {
            std::process::exit(1);
        }
        Ok(())
    }
}

struct Opts {
    addr: SocketAddr,
    ca: PathBuf,
    rate: u64,
    seconds: u64,
    connections: u64,
    path: String,
    /// Check every answer against the verdict the same body got before the run
    /// (uid and `allowed`); a mismatch is a wrong verdict.
    check: bool,
    /// Per mille of requests sent malformed (no uid): each must get HTTP 400.
    malformed_permille: u64,
    /// Send this AdmissionReview for every request instead of the mix.
    body: Option<PathBuf>,
    /// Make every request's object differ from the others (see [`Vary`]).
    vary: Vary,
}

/// How each request's object differs from the body it is made from.
#[derive(Clone, Copy, PartialEq)]
enum Vary {
    /// Every request sends the body as it is.
    None,
    /// Its own name, of one length (`NAME-CCCIIIIIIIII`), as the Pods of one ReplicaSet
    /// have: one template for all (the webhook's template cache answers them).
    Name,
    /// Its own label value: every request is a template of its own (the cache never
    /// answers; every object is evaluated).
    Label,
}

/// `body` with its object varied as `vary` says for request `i` of connection `c`.
fn varied(body: &serde_json::Value, vary: Vary, c: u64, i: u64) -> bytes::Bytes {
    let mut b = body.clone();
    let object = &mut b["request"]["object"];
    match vary {
        Vary::None => {}
        Vary::Name => {
            let name = format!(
                "{}-{c:03}{i:09}",
                object["metadata"]["name"].as_str().unwrap_or("pod")
            );
            object["metadata"]["name"] = json!(name);
            b["request"]["name"] = json!(name);
        }
        Vary::Label => {
            object["metadata"]["labels"]["loadgen.computeguard.io/n"] = json!(format!("{c}-{i}"));
        }
    }
    bytes::Bytes::from(b.to_string())
}

/// A request the API server could never send: no `request.uid`.
const MALFORMED: &[u8] =
    br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}"#;

/// `(uid, allowed, status code)` of an answer body: a denial for a violation (403) and
/// an "overloaded" denial (503) are different verdicts.
fn verdict(body: &[u8]) -> Option<(String, bool, u64)> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some((
        v["response"]["uid"].as_str()?.to_string(),
        v["response"]["allowed"].as_bool()?,
        v["response"]["status"]["code"].as_u64().unwrap_or(200),
    ))
}

/// The request mix: GPU and non-GPU pods, a GPU Deployment, a KAITO workspace, an ASO
/// node pool, and a ConfigMap (not compute). Every built-in rule runs on the compute ones.
fn mix() -> Vec<bytes::Bytes> {
    let gpu_pod = |name: &str, size: &str, image: &str, workload: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "labels": {"computeguard.io/workload": workload}},
            "spec": {"nodeSelector": {"node.kubernetes.io/instance-type": size},
                "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
                "containers": [{"name": "main", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})
    };
    let nginx = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "web"},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}}]}});
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "triton", "namespace": "serving", "labels": {"computeguard.io/workload": "inference"}},
        "spec": {"replicas": 2, "template": {"spec": {
            "nodeSelector": {"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"},
            "containers": [{"name": "triton", "image": "nvcr.io/nvidia/tritonserver:24.05-py3",
                "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}});
    let kaito = json!({"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
        "metadata": {"name": "phi-3", "namespace": "kaito"},
        "resource": {"instanceType": "Standard_NC24ads_A100_v4", "labelSelector": {"matchLabels": {"apps": "phi-3"}}},
        "inference": {"preset": {"name": "phi-3-mini-4k-instruct"}}});
    let pool = json!({"apiVersion": "containerservice.azure.com/v1api20231001", "kind": "ManagedClustersAgentPool",
        "metadata": {"name": "gpu", "namespace": "infra"},
        "spec": {"owner": {"name": "aks"}, "vmSize": "Standard_NC24ads_A100_v4", "enableAutoScaling": true,
            "minCount": 1, "maxCount": 4, "nodeTaints": ["sku=gpu:NoSchedule"]}});
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "web"}, "data": {"a": "b"}});
    let objects = vec![
        gpu_pod(
            "train",
            "Standard_NC24ads_A100_v4",
            "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
            "training",
        ),
        nginx.clone(),
        gpu_pod(
            "old",
            "Standard_NC6",
            "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
            "training",
        ),
        deployment,
        nginx,
        kaito,
        pool,
        cm,
    ];
    objects
        .into_iter()
        .enumerate()
        .map(|(i, object)| {
            let kind = object["kind"].clone();
            let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": format!("load-{i}"), "kind": {"group": "", "version": "v1", "kind": kind},
                    "namespace": object["metadata"]["namespace"], "name": object["metadata"]["name"],
                    "operation": "CREATE", "userInfo": {"username": "loadgen"}, "object": object, "dryRun": false}});
            bytes::Bytes::from(review.to_string())
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    ok: u64,
    failed: u64,
    /// Answers that differ from the baseline verdict (with `--check`).
    wrong: u64,
    /// Malformed requests answered with HTTP 400, as they must be.
    rejected: u64,
    sent: u64,
    first_error: Option<String>,
}

async fn run(o: Opts) -> Result<(), Error> {
    let ca = CertificateDer::from_pem_file(&o.ca)?;
    let tls = tls_config(ca)?;
    let bodies = Arc::new(match &o.body {
        Some(path) => vec![bytes::Bytes::from(std::fs::read(path)?)],
        None => mix(),
    });
    // The verdict each body gets on its own, before the load: what every later
    // answer for it must repeat.
    let mut expected = Vec::new();
    if o.check {
        let mut conn = Connection::open(o.addr, "localhost", tls.clone()).await?;
        for b in bodies.iter() {
            let (status, body) = conn.post(&o.path, b.clone()).await?;
            if !status.is_success() {
                return Err(format!("baseline answer HTTP {status}").into());
            }
            expected.push(verdict(&body).ok_or("baseline answer is not an AdmissionReview")?);
        }
    }
    let expected = Arc::new(expected);
    let vary = o.vary;
    let parsed: Arc<Vec<serde_json::Value>> = Arc::new(if vary == Vary::None {
        Vec::new()
    } else {
        bodies
            .iter()
            .map(|b| serde_json::from_slice(b))
            .collect::<Result<_, _>>()?
    });
    let check = o.check;
    let malformed_permille = o.malformed_permille;
    let before = histogram(o.addr, tls.clone()).await?;
    // `--rate 0` is closed loop: each connection sends its next request as soon as the
    // answer to the last one arrives, for `--seconds` (the server's throughput at that
    // concurrency); latency is then measured from each send.
    let closed = o.rate == 0;
    let per_conn_rate = o.rate.max(1) as f64 / o.connections as f64;
    let interval = Duration::from_secs_f64(1.0 / per_conn_rate);
    let total_per_conn = if closed {
        u64::MAX
    } else {
        (per_conn_rate * o.seconds as f64) as u64
    };
    let start = Instant::now() + Duration::from_millis(200);
    let end = start + Duration::from_secs(o.seconds);
    let mut tasks = Vec::new();
    for c in 0..o.connections {
        let tls = tls.clone();
        let bodies = bodies.clone();
        let parsed = parsed.clone();
        let expected = expected.clone();
        let path = o.path.clone();
        let addr = o.addr;
        // Stagger the connections across one interval.
        let offset = interval.mul_f64(c as f64 / o.connections as f64);
        tasks.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let mut conn = match Connection::open(addr, "localhost", tls.clone()).await {
                Ok(c) => c,
                Err(e) => {
                    tally.failed = if closed { 1 } else { total_per_conn };
                    tally.first_error = Some(format!("connect: {e}"));
                    return tally;
                }
            };
            for i in 0..total_per_conn {
                let scheduled = if closed {
                    let now = Instant::now();
                    if now >= end {
                        break;
                    }
                    now.max(start)
                } else {
                    start + offset + interval.mul_f64(i as f64)
                };
                if !closed {
                    tokio::time::sleep_until(scheduled.into()).await;
                }
                let which = ((c + i) as usize) % bodies.len();
                let malformed = (c * 7919 + i * 104_729) % 1000 < malformed_permille;
                let body = if malformed {
                    bytes::Bytes::from_static(MALFORMED)
                } else if vary == Vary::None {
                    bodies[which].clone()
                } else {
                    varied(&parsed[which], vary, c, i)
                };
                tally.sent += 1;
                match conn.post(&path, body).await {
                    Ok((status, _)) if malformed && status == hyper::StatusCode::BAD_REQUEST => {
                        tally.rejected += 1
                    }
                    Ok((status, b)) if malformed => {
                        tally.wrong += 1;
                        tally.first_error.get_or_insert_with(|| {
                            format!(
                                "malformed request got HTTP {status}: {}",
                                String::from_utf8_lossy(&b)
                            )
                        });
                    }
                    Ok((status, b)) if status.is_success() => {
                        tally.ok += 1;
                        if check && verdict(&b).as_ref() != expected.get(which) {
                            tally.wrong += 1;
                            tally.first_error.get_or_insert_with(|| {
                                format!(
                                    "wrong verdict for body {which}: {}",
                                    String::from_utf8_lossy(&b)
                                )
                            });
                        }
                    }
                    Ok((status, b)) => {
                        tally.failed += 1;
                        tally.first_error.get_or_insert_with(|| {
                            format!("HTTP {status}: {}", String::from_utf8_lossy(&b))
                        });
                    }
                    Err(e) => {
                        tally.failed += 1;
                        tally.first_error.get_or_insert_with(|| e.to_string());
                        if let Ok(c) = Connection::open(addr, "localhost", tls.clone()).await {
                            conn = c;
                        }
                    }
                }
                tally
                    .latencies_us
                    .push(scheduled.elapsed().as_micros() as u64);
            }
            tally
        }));
    }
    let mut all = Tally::default();
    for t in tasks {
        let t = t.await?;
        all.latencies_us.extend(t.latencies_us);
        all.ok += t.ok;
        all.failed += t.failed;
        all.wrong += t.wrong;
        all.rejected += t.rejected;
        all.sent += t.sent;
        if all.first_error.is_none() {
            all.first_error = t.first_error;
        }
    }
    let elapsed = if closed {
        o.seconds as f64
    } else {
        start.elapsed().as_secs_f64()
    };
    let after = histogram(o.addr, tls).await?;
    all.latencies_us.sort_unstable();
    let pct = |p: f64| -> f64 {
        if all.latencies_us.is_empty() {
            return 0.0;
        }
        let i = ((p / 100.0) * (all.latencies_us.len() - 1) as f64).round() as usize;
        all.latencies_us[i] as f64 / 1000.0
    };
    println!(
        "target {} req/s for {} s over {} connections to {}",
        o.rate, o.seconds, o.connections, o.path
    );
    let sent = all.sent;
    println!(
        "sent {sent}  ok {}  failed (lost) {}  malformed rejected {}  wrong verdicts {}  achieved {:.0} req/s",
        all.ok,
        all.failed,
        all.rejected,
        all.wrong,
        sent as f64 / elapsed
    );
    println!(
        "client latency ms: p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}",
        pct(50.0),
        pct(90.0),
        pct(99.0),
        pct(99.9),
        pct(100.0)
    );
    if let Some(e) = &all.first_error {
        println!("first error: {e}");
    }
    // Server-side: the share of this run's requests answered within each bucket.
    let delta: Vec<(f64, f64)> = after
        .iter()
        .map(|(le, n)| {
            let b = before
                .iter()
                .find(|(l, _)| l == le)
                .map_or(0.0, |(_, n)| *n);
            (*le, n - b)
        })
        .collect();
    if let Some(&(_, total)) = delta.last()
        && total > 0.0
    {
        let share: Vec<String> = delta
            .iter()
            .filter(|(le, _)| {
                [
                    0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.0025, 0.005,
                ]
                .contains(le)
            })
            .map(|(le, n)| format!("<= {} ms: {:.2}%", le * 1000.0, 100.0 * n / total))
            .collect();
        println!("server-side ({} requests): {}", total, share.join("  "));
        let p99_bucket = delta
            .iter()
            .find(|(_, n)| *n >= 0.99 * total)
            .map_or(f64::INFINITY, |(le, _)| *le);
        println!(
            "server-side p99 <= {} ms (bucket bound)",
            p99_bucket * 1000.0
        );
    }
    if all.failed > 0 || all.wrong > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// Cumulative `computeguard_admission_duration_seconds_bucket` counts for /validate
/// and /mutate together, by upper bound (`+Inf` last).
async fn histogram(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
) -> Result<Vec<(f64, f64)>, Error> {
    let mut conn = Connection::open(addr, "localhost", tls).await?;
    let (_, body) = conn.get("/metrics").await?;
    let text = String::from_utf8_lossy(&body);
    let mut out: Vec<(f64, f64)> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("computeguard_admission_duration_seconds_bucket{")
        else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let Some(le) = labels
            .split("le=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
        else {
            continue;
        };
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse()?
        };
        let n: f64 = value.trim().parse()?;
        match out.iter_mut().find(|(l, _)| *l == le) {
            Some(e) => e.1 += n,
            None => out.push((le, n)),
        }
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(out)
}
