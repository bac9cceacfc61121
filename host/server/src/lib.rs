//! computeguard's Kubernetes admission webhook.
//!
//! `/validate` and `/mutate` answer AdmissionReview `admission.k8s.io/v1` over HTTPS
//! (rustls, HTTP/1.1 and HTTP/2); `/healthz` (liveness), `/readyz` (every policy
//! compiled and its settings validated; not ready while draining) and `/metrics`
//! (Prometheus text) answer there and, with [`ServeOptions::probe_addr`], on a
//! plain-HTTP port of their own that connections held on the webhook port cannot
//! block. A full port makes room by closing its quietest connection (see
//! [`connections`]).
//!
//! Every request that declares compute is evaluated by every policy in a fresh
//! sandbox (see `computeguard-engine`): a policy that traps or runs past its deadline
//! costs that request its verdict — answered per the configured failure mode — and
//! nothing else. Policies and configuration come from a [`Loader`]; a reload builds a
//! complete new [`PolicySet`] and swaps it in atomically, or keeps the old one serving
//! when the new one is broken.
//!
//! ```no_run
//! # use computeguard_server::*;
//! # fn loader() -> std::sync::Arc<dyn Loader> { unimplemented!() }
//! # async fn run() -> Result<(), ServeError> {
//! let options = ServeOptions::new("0.0.0.0:8443".parse().unwrap(), "tls.crt".into(), "tls.key".into());
//! let server = Server::bind(options, loader()).await?;
//! server.run(shutdown_signal()).await
//! # }
//! ```

pub mod admission;
pub mod client;
/// The `webhook:` section, from the policy-set layer (`computeguard_policyset::webhook`).
pub use computeguard_policyset::webhook as config;
pub mod connections;
pub mod decision;
pub mod lanes;
pub mod metrics;
pub mod mutate;
pub mod review;
pub mod tls;

pub use computeguard_policyset::Level;
pub use config::{Enforcement, FailureMode, WebhookConfig};
pub use decision::{Decision, Mode, Verdict};
pub use review::{LoadedPolicy, PolicySet};

mod idle;

use arc_swap::ArcSwap;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tracing::{debug, error, info, warn};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Builds the policy set the server evaluates with. Called at start and on every
/// reload, off the request path.
pub trait Loader: Send + Sync + 'static {
    /// Loads the configuration and every policy and validates every policy's settings.
    fn load(&self) -> Result<PolicySet, BoxError>;
    /// Files whose change triggers a reload (the config and policy files).
    fn watched(&self) -> Vec<PathBuf>;
}

/// Server settings (the rest comes from the `webhook:` section of the config).
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub addr: SocketAddr,
    pub tls_cert: PathBuf,
    pub tls_key: PathBuf,
    /// How often the certificate, config and policy files are checked for changes.
    /// Default 2 s.
    pub watch_interval: Duration,
    /// How long in-flight requests may take to finish after SIGTERM. Default 20 s.
    pub shutdown_timeout: Duration,
    /// Where to serve `/healthz`, `/readyz` and `/metrics` over plain HTTP as well
    /// (none by default; the shipped manifests use `0.0.0.0:8081` and point the
    /// kubelet's probes there). The port has its own connection table
    /// ([`PROBE_MAX_CONNECTIONS`], [`PROBE_MAX_CONNECTIONS_PER_PEER`],
    /// [`PROBE_CONNECTION_RATE_PER_PEER`]) and answers
    /// nothing else.
    pub probe_addr: Option<SocketAddr>,
}

/// Open connections at once on the probe port.
pub const PROBE_MAX_CONNECTIONS: usize = 64;
/// Open connections at once on the probe port from one client address.
pub const PROBE_MAX_CONNECTIONS_PER_PEER: usize = 16;
/// New connections a second on the probe port from one client address (a kubelet opens
/// one per probe).
pub const PROBE_CONNECTION_RATE_PER_PEER: usize = 20;

impl ServeOptions {
    pub fn new(addr: SocketAddr, tls_cert: PathBuf, tls_key: PathBuf) -> Self {
        ServeOptions {
            addr,
            tls_cert,
            tls_key,
            watch_interval: Duration::from_secs(2),
            shutdown_timeout: Duration::from_secs(20),
            probe_addr: None,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    #[error("cannot load the policies: {0}")]
    Load(BoxError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

struct State {
    set: ArcSwap<PolicySet>,
    ready: AtomicBool,
    metrics: metrics::Metrics,
    loader: Arc<dyn Loader>,
    certs: Arc<tls::CertStore>,
    lanes: lanes::Lanes,
    /// Open connections on the webhook port and on the probe port.
    connections: Arc<connections::Table>,
    probe_connections: Arc<connections::Table>,
    reload_now: Notify,
}

/// A bound, loaded server. [`Server::run`] serves until the shutdown future resolves.
pub struct Server {
    state: Arc<State>,
    listener: TcpListener,
    probe_listener: Option<TcpListener>,
    options: ServeOptions,
    tls: Arc<rustls::ServerConfig>,
}

impl Server {
    /// Reads the certificate, loads every policy (so the server is ready the moment it
    /// listens) and binds the address.
    pub async fn bind(
        options: ServeOptions,
        loader: Arc<dyn Loader>,
    ) -> Result<Server, ServeError> {
        let certs = Arc::new(tls::CertStore::load(&options.tls_cert, &options.tls_key)?);
        let tls = Arc::new(certs.server_config()?);
        let l = loader.clone();
        let set = tokio::task::spawn_blocking(move || load_set(l.as_ref()))
            .await
            .map_err(|e| ServeError::Load(e.to_string().into()))?
            .map_err(ServeError::Load)?;
        let listener =
            TcpListener::bind(options.addr)
                .await
                .map_err(|source| ServeError::Bind {
                    addr: options.addr,
                    source,
                })?;
        let probe_listener = match options.probe_addr {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .map_err(|source| ServeError::Bind { addr, source })?,
            ),
            None => None,
        };
        let metrics = metrics::Metrics::default();
        metrics.policies.set(set.policies.len() as i64);
        let limits = &set.webhook.limits;
        let lanes = lanes::Lanes::new(limits.workers, limits.max_in_flight).map_err(|e| {
            ServeError::Load(format!("cannot start the slow lane's threads: {e}").into())
        })?;
        let connections = connections::Table::new(
            limits.max_connections,
            limits.max_connections_per_peer,
            limits.connection_rate_per_peer,
        );
        let probe_connections = connections::Table::new(
            PROBE_MAX_CONNECTIONS,
            PROBE_MAX_CONNECTIONS_PER_PEER,
            PROBE_CONNECTION_RATE_PER_PEER,
        );
        Ok(Server {
            state: Arc::new(State {
                set: ArcSwap::from_pointee(set),
                ready: AtomicBool::new(true),
                metrics,
                loader,
                certs,
                lanes,
                connections,
                probe_connections,
                reload_now: Notify::new(),
            }),
            listener,
            probe_listener,
            options,
            tls,
        })
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The bound probe address, when [`ServeOptions::probe_addr`] is set.
    pub fn probe_local_addr(&self) -> Option<std::io::Result<SocketAddr>> {
        self.probe_listener.as_ref().map(TcpListener::local_addr)
    }

    /// A handle that asks for a reload (what SIGHUP does).
    pub fn reload_handle(&self) -> ReloadHandle {
        ReloadHandle(self.state.clone())
    }

    /// Serves until `shutdown` resolves, then stops accepting, reports not-ready and
    /// drains in-flight requests for up to [`ServeOptions::shutdown_timeout`].
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), ServeError> {
        let Server {
            state,
            listener,
            probe_listener,
            options,
            tls,
        } = self;
        let probes = probe_listener.map(|l| {
            info!(addr = ?l.local_addr().ok(), "probes and metrics serving over plain HTTP");
            tokio::spawn(serve_probes(state.clone(), l))
        });
        info!(addr = %options.addr, policies = state.set.load().policies.len(), "computeguard webhook serving");
        let watcher = tokio::spawn(watch(state.clone(), options.watch_interval));
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (tcp, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            // Out of file descriptors and the like: back off, keep serving.
                            warn!(error = %e, "accept failed");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    };
                    let table = &state.connections;
                    let Some(slot) = register(&state, table, WEBHOOK_PORT, peer) else {
                        drop(tcp);
                        continue;
                    };
                    let _ = tcp.set_nodelay(true);
                    let acceptor = acceptor.clone();
                    let state = state.clone();
                    let watcher = graceful.watcher();
                    tokio::spawn(async move {
                        serve_connection(&state, tcp, peer, acceptor, watcher, &slot).await;
                        drop(slot);
                        closed(&state, &state.connections, WEBHOOK_PORT);
                    });
                }
                () = &mut shutdown => break,
            }
        }
        state.ready.store(false, Ordering::SeqCst);
        drop(listener);
        watcher.abort();
        info!("shutting down: draining in-flight requests");
        tokio::select! {
            () = graceful.shutdown() => info!("drained"),
            () = tokio::time::sleep(options.shutdown_timeout) => {
                warn!(timeout = ?options.shutdown_timeout, "drain timed out; closing the remaining connections");
            }
        }
        // The probe port answered `/readyz` 503 through the drain; now it goes too.
        if let Some(probes) = probes {
            probes.abort();
        }
        Ok(())
    }
}

/// The `port` label of the webhook port's connection metrics.
const WEBHOOK_PORT: &str = "webhook";
/// The `port` label of the probe port's connection metrics.
const PROBE_PORT: &str = "probes";

/// Registers an accepted connection in `table`, making room if it is full; counts
/// evictions and refusals and logs (rate-limited) that the port is evicting. `None`:
/// refused, close it.
fn register(
    state: &State,
    table: &Arc<connections::Table>,
    port: &'static str,
    peer: SocketAddr,
) -> Option<connections::Slot> {
    let metrics = &state.metrics;
    match table.admit(peer.ip()) {
        Ok(admitted) => {
            if let Some(why) = admitted.evicted {
                let reason = why.as_str();
                metrics
                    .connections_evicted
                    .get_or_create(&metrics::ConnectionLabels { port, reason })
                    .inc();
                if let Some(evicted) = admitted.warn {
                    warn!(
                        port,
                        %peer,
                        reason,
                        evicted,
                        "connection limit reached: closing the connections quiet longest to make room (webhook.limits.maxConnections, maxConnectionsPerPeer); logged at most every 10 s"
                    );
                }
            }
            metrics
                .connections_open
                .get_or_create(&metrics::PortLabels { port })
                .set(table.open() as i64);
            Some(admitted.slot)
        }
        Err(why) => {
            let reason = why.as_str();
            metrics
                .connections_refused
                .get_or_create(&metrics::ConnectionLabels { port, reason })
                .inc();
            debug!(port, %peer, reason, "connection refused (all_busy, peer_all_busy: every connection that could make room is answering; peer_rate: the address opens connections faster than connectionRatePerPeer)");
            None
        }
    }
}

/// Updates the open-connections gauge after a connection closed.
fn closed(state: &State, table: &connections::Table, port: &'static str) {
    state
        .metrics
        .connections_open
        .get_or_create(&metrics::PortLabels { port })
        .set(table.open() as i64);
}

/// The plain-HTTP probe port: `/healthz`, `/readyz` and `/metrics`, nothing else.
async fn serve_probes(state: Arc<State>, listener: TcpListener) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(a) => a,
            Err(e) => {
                warn!(error = %e, "accept failed on the probe port");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Some(slot) = register(&state, &state.probe_connections, PROBE_PORT, peer) else {
            continue;
        };
        let state = state.clone();
        tokio::spawn(async move {
            serve_probe_connection(&state, tcp, peer, &slot).await;
            drop(slot);
            closed(&state, &state.probe_connections, PROBE_PORT);
        });
    }
}

async fn serve_probe_connection(
    state: &Arc<State>,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    slot: &connections::Slot,
) {
    let limits = state.set.load().webhook.limits.clone();
    let shared = slot.shared();
    let tcp = idle::Tracked::new(tcp, shared.activity.clone());
    let requests = Arc::new(AtomicUsize::new(0));
    let service = {
        let state = state.clone();
        let requests = requests.clone();
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let guard = idle::InFlight::new(requests.clone());
            let response = probe(&state, req.uri().path()).unwrap_or_else(|| {
                problem(
                    StatusCode::NOT_FOUND,
                    "the probe port serves /healthz, /readyz and /metrics; admission is on the HTTPS port",
                )
            });
            drop(guard);
            std::future::ready(Ok::<_, std::convert::Infallible>(response))
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .serve_connection(TokioIo::new(tcp), service);
    tokio::select! {
        result = conn => {
            if let Err(e) = result {
                debug!(%peer, error = %e, "probe connection ended with an error");
            }
        }
        () = idle::until_idle(&shared.activity, &requests, limits.idle_timeout) => {}
        () = shared.evicted.notified() => {
            debug!(%peer, "probe connection closed to make room");
        }
    }
}

/// One connection: TLS handshake (10 s), then HTTP/1.1 or HTTP/2 with the header-read
/// timeout, closed when idle for `limits.idleTimeoutMs` with no request in flight.
async fn serve_connection(
    state: &Arc<State>,
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    watcher: hyper_util::server::graceful::Watcher,
    slot: &connections::Slot,
) {
    let limits = state.set.load().webhook.limits.clone();
    let shared = slot.shared();
    let tcp = idle::Tracked::new(tcp, shared.activity.clone());
    let handshake = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp));
    let tls = tokio::select! {
        done = handshake => match done {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                debug!(%peer, error = %e, "TLS handshake failed");
                return;
            }
            Err(_) => {
                debug!(%peer, "TLS handshake timed out");
                return;
            }
        },
        () = shared.evicted.notified() => {
            debug!(%peer, "connection closed during its TLS handshake to make room");
            return;
        }
    };
    let requests = Arc::new(AtomicUsize::new(0));
    let service = {
        let requests = requests.clone();
        let answering = shared.answering.clone();
        let state = state.clone();
        hyper::service::service_fn(move |req| {
            let state = state.clone();
            let answering = answering.clone();
            let guard = idle::InFlight::new(requests.clone());
            async move {
                let response = handle(&state, req, &answering).await;
                drop(guard);
                Ok::<_, std::convert::Infallible>(response)
            }
        })
    };
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .keep_alive_interval(None);
    let conn = watcher.watch(
        builder
            .serve_connection(TokioIo::new(tls), service)
            .into_owned(),
    );
    tokio::select! {
        result = conn => {
            if let Err(e) = result {
                debug!(%peer, error = %e, "connection ended with an error");
            }
        }
        () = idle::until_idle(&shared.activity, &requests, limits.idle_timeout) => {
            debug!(%peer, idle = ?limits.idle_timeout, "idle connection closed");
        }
        () = shared.evicted.notified() => {
            debug!(%peer, "connection closed to make room");
        }
    }
}

/// Asks a running server to reload its policies and configuration.
#[derive(Clone)]
pub struct ReloadHandle(Arc<State>);

impl ReloadHandle {
    pub fn reload(&self) {
        self.0.reload_now.notify_one();
    }
}

/// Resolves on SIGTERM or Ctrl-C (SIGINT).
pub async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

type FileStamps = Vec<(PathBuf, Option<SystemTime>, Option<u64>)>;

fn stamps(files: &[PathBuf]) -> FileStamps {
    files
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).ok();
            (
                p.clone(),
                m.as_ref().and_then(|m| m.modified().ok()),
                m.map(|m| m.len()),
            )
        })
        .collect()
}

fn count_reload(state: &State, result: &'static str) {
    state
        .metrics
        .reloads
        .get_or_create(&metrics::ReloadLabels { result })
        .inc();
}

/// Re-reads the certificate and reloads the policy set when their files change or a
/// reload is requested.
async fn watch(state: Arc<State>, interval: Duration) {
    let mut last = stamps(&state.loader.watched());
    loop {
        let forced = tokio::select! {
            () = tokio::time::sleep(interval) => false,
            () = state.reload_now.notified() => true,
        };
        match state.certs.reload_if_changed() {
            Ok(true) => info!("TLS certificate reloaded"),
            Ok(false) => {}
            Err(e) => {
                error!(error = %e, "TLS certificate change NOT applied; the previous certificate keeps serving")
            }
        }
        let now = stamps(&state.loader.watched());
        if !forced && now == last {
            continue;
        }
        last = now;
        let loader = state.loader.clone();
        let started = Instant::now();
        match tokio::task::spawn_blocking(move || load_set(loader.as_ref())).await {
            Ok(Ok(set)) => {
                let n = set.policies.len();
                state.set.store(Arc::new(set));
                state.metrics.policies.set(n as i64);
                count_reload(&state, "success");
                info!(
                    policies = n,
                    took_ms = started.elapsed().as_millis() as u64,
                    "policies and configuration reloaded"
                );
            }
            Ok(Err(e)) => {
                count_reload(&state, "failure");
                error!(error = %e, "RELOAD FAILED: the new policies or configuration are broken; the previous set keeps serving");
            }
            Err(e) => {
                count_reload(&state, "failure");
                error!(error = %e, "RELOAD FAILED: the loader panicked; the previous set keeps serving");
            }
        }
    }
}

/// Loads a policy set, then gives the memory the load freed back to the kernel.
fn load_set(loader: &dyn Loader) -> Result<PolicySet, BoxError> {
    let set = loader.load();
    release_freed_memory();
    set
}

/// Compiling policies (a cold artifact cache, or a reload with a new policy) takes
/// tens of MiB that glibc keeps in its per-thread arenas once freed; without this a
/// replica that compiled at start stays at ~85 MiB resident instead of ~26 MiB
/// (docs/benchmarks.md, section 5).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_freed_memory() {
    // SAFETY: `malloc_trim` only returns free heap pages to the kernel; it has no
    // preconditions and touches no memory that is in use.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_freed_memory() {}

type Response = hyper::Response<Full<Bytes>>;

fn respond(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response {
    let mut r = hyper::Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(content_type) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

fn problem(status: StatusCode, message: &str) -> Response {
    let body = serde_json::json!({"error": message}).to_string();
    respond(status, "application/json", body)
}

/// The answer of `/healthz`, `/readyz` and `/metrics` (on either port).
fn probe(state: &State, path: &str) -> Option<Response> {
    Some(match path {
        "/healthz" => respond(StatusCode::OK, "text/plain", "ok\n"),
        "/readyz" => {
            if state.ready.load(Ordering::SeqCst) {
                respond(StatusCode::OK, "text/plain", "ready\n")
            } else {
                respond(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "not ready\n")
            }
        }
        "/metrics" => respond(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            state.metrics.encode(),
        ),
        _ => return None,
    })
}

/// `answering` counts this connection's requests that arrived in full and are being
/// answered: while it is not 0 the connection is not closed to make room.
async fn handle(
    state: &State,
    req: hyper::Request<Incoming>,
    answering: &Arc<AtomicUsize>,
) -> Response {
    if let Some(response) = probe(state, req.uri().path()) {
        return response;
    }
    let endpoint = match req.uri().path() {
        "/validate" => "validate",
        "/mutate" => "mutate",
        _ => {
            return problem(
                StatusCode::NOT_FOUND,
                "no such endpoint; use /validate or /mutate",
            );
        }
    };
    if req.method() != Method::POST {
        return problem(
            StatusCode::METHOD_NOT_ALLOWED,
            "admission endpoints accept POST with an AdmissionReview",
        );
    }
    let started = Instant::now();
    let response = admit(state, req, endpoint, answering).await;
    state
        .metrics
        .duration
        .get_or_create(&metrics::EndpointLabels { endpoint })
        .observe(started.elapsed().as_secs_f64());
    response
}

fn count(state: &State, endpoint: &'static str, verdict: &'static str) {
    state
        .metrics
        .requests
        .get_or_create(&metrics::RequestLabels { endpoint, verdict })
        .inc();
}

async fn admit(
    state: &State,
    req: hyper::Request<Incoming>,
    endpoint: &'static str,
    answering: &Arc<AtomicUsize>,
) -> Response {
    let started = Instant::now();
    let set = state.set.load_full();
    let limit = set.webhook.limits.max_request_bytes;
    let body_timeout = set.webhook.limits.body_read_timeout;
    let read = tokio::time::timeout(body_timeout, read_body(req.into_body(), limit)).await;
    // From here on the request has arrived: its connection is not closed to make room.
    let _answering = idle::InFlight::new(answering.clone());
    let body = match read {
        Err(_) => {
            count(state, endpoint, "slow_body");
            let mut r = problem(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the request body did not arrive within {} ms (webhook.limits.bodyReadTimeoutMs)",
                    body_timeout.as_millis()
                ),
            );
            r.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            return r;
        }
        Ok(Ok(Some(b))) => b,
        Ok(Ok(None)) => {
            count(state, endpoint, "too_large");
            return problem(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "the request body is larger than the {limit}-byte limit (webhook.limits.maxRequestBytes)"
                ),
            );
        }
        Ok(Err(e)) => {
            count(state, endpoint, "bad_request");
            return problem(
                StatusCode::BAD_REQUEST,
                &format!("cannot read the request body: {e}"),
            );
        }
    };
    let mode = if endpoint == "mutate" {
        Mode::Mutate
    } else {
        Mode::Validate
    };
    let review = match admission::parse(&body) {
        Ok(r) => r,
        Err(e) => {
            count(state, endpoint, "bad_request");
            warn!(endpoint, error = %e, "malformed admission request");
            return problem(StatusCode::BAD_REQUEST, &e.to_string());
        }
    };
    // The native pre-check (exclusions, decoding, "does it declare compute?") runs
    // here; only requests that need the policies are evaluated (see `lanes`).
    let decision = match review::prepare(&set, &review, mode) {
        review::Precheck::Decided(decision) => decision,
        review::Precheck::Evaluate(prepared) => {
            // The whole request must be answered within the evaluation timeout from its
            // arrival: every policy is stopped at this instant, and a request with no
            // answer then is answered per the failure mode.
            let deadline = started + set.webhook.limits.evaluation_timeout;
            let unanswered = |why| unevaluated(state, &set, &review.uid, endpoint, mode, why);
            let Ok(slot) = state.lanes.try_admit() else {
                return unanswered(Unevaluated::Overloaded);
            };
            let evaluation = {
                let set = set.clone();
                async move {
                    let _slot = slot;
                    review::evaluate(&set, prepared, mode, deadline).await
                }
            };
            // A little grace past the deadline for a slow-lane evaluation to hand its
            // answer over.
            let grace = Duration::from_millis(100);
            match state.lanes.run(evaluation, deadline + grace).await {
                Ok(decision) => decision,
                Err(_) => return unanswered(Unevaluated::TimedOut),
            }
        }
    };
    let uid = &review.uid;
    let verdict = decision.verdict.as_str();
    count(state, endpoint, verdict);
    for f in &decision.findings {
        state
            .metrics
            .violations
            .get_or_create(&metrics::ViolationLabels {
                rule: f.rule.clone(),
                enforcement: f.enforcement.as_str(),
            })
            .inc();
        if f.enforcement == Enforcement::Audit || set.webhook.dry_run {
            info!(%uid, rule = %f.rule, enforcement = f.enforcement.as_str(), message = %f.message, "finding");
        }
    }
    for f in &decision.failures {
        state
            .metrics
            .errors
            .get_or_create(&metrics::ErrorLabels {
                policy: f.policy.clone(),
                kind: f.kind,
            })
            .inc();
        error!(%uid, policy = %f.policy, kind = f.kind, error = %f.message, "policy evaluation failed");
    }
    for policy in &decision.refused_patches {
        warn!(%uid, %policy, "the policy returned a JSON Patch; refused (only computeguard's own mutations are sent)");
    }
    info!(
        %uid,
        endpoint,
        kind = %review.kind.kind,
        namespace = review.namespace.as_deref().unwrap_or(""),
        name = review.name.as_deref().unwrap_or(""),
        operation = ?review.operation,
        verdict,
        skipped = decision.skipped.unwrap_or(""),
        findings = decision.findings.len(),
        duration_us = started.elapsed().as_micros() as u64,
        "admission"
    );
    json_ok(&decision.answer.to_review(uid))
}

/// Why a request got no evaluation.
#[derive(Clone, Copy)]
enum Unevaluated {
    /// `maxInFlight` evaluations were already running.
    Overloaded,
    /// The evaluation did not finish within `evaluationTimeoutMs` (or panicked: the
    /// answer is the same, per the failure mode).
    TimedOut,
}

/// Answers a request that was not evaluated, per the failure mode.
fn unevaluated(
    state: &State,
    set: &PolicySet,
    uid: &str,
    endpoint: &'static str,
    mode: Mode,
    why: Unevaluated,
) -> Response {
    let (label, answer) = match why {
        Unevaluated::Overloaded => ("overloaded", overloaded(set, mode)),
        Unevaluated::TimedOut => ("timeout", timed_out(set, mode)),
    };
    count(state, endpoint, label);
    warn!(%uid, endpoint, allowed = answer.allowed, "{label}: answered per failurePolicy");
    json_ok(&answer.to_review(uid))
}

/// Reads a body of at most `limit` bytes; `Ok(None)` when it is larger. An oversize
/// body is still read (and discarded) up to 4 x `limit`, so the client gets the 413
/// on a connection it has finished writing to, instead of a reset mid-write.
async fn read_body(mut body: Incoming, limit: usize) -> Result<Option<Bytes>, hyper::Error> {
    let mut buf = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            total += data.len();
            if total <= limit {
                buf.extend_from_slice(&data);
            } else if total > limit.saturating_mul(4) {
                break;
            }
        }
    }
    Ok((total <= limit).then(|| Bytes::from(buf)))
}

fn overloaded(set: &PolicySet, mode: Mode) -> admission::Answer {
    unjudged(
        set,
        mode,
        503,
        "computeguard is overloaded: webhook.limits.maxInFlight requests are already being evaluated",
    )
}

fn timed_out(set: &PolicySet, mode: Mode) -> admission::Answer {
    unjudged(
        set,
        mode,
        504,
        "computeguard could not finish the evaluation within webhook.limits.evaluationTimeoutMs",
    )
}

/// The failure mode's answer for a request nothing could judge.
fn unjudged(set: &PolicySet, mode: Mode, code: u16, message: &str) -> admission::Answer {
    match (mode, set.webhook.failure_policy.0) {
        (Mode::Validate, FailureMode::Fail) if !set.webhook.dry_run => admission::Answer {
            allowed: false,
            status: Some((code, format!("{message} (failurePolicy Fail)"))),
            ..admission::Answer::default()
        },
        _ => admission::Answer {
            allowed: true,
            warnings: vec![format!(
                "{message}; admitted unchecked (failurePolicy Ignore)"
            )],
            ..admission::Answer::default()
        },
    }
}

fn json_ok(v: &serde_json::Value) -> Response {
    respond(StatusCode::OK, "application/json", v.to_string())
}
