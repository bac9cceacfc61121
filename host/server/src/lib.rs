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
//! One job per module: this file is the public API (`Server`, `ServeOptions`, `Loader`);
//! `listen` accepts connections on both ports, `routes` answers the endpoints, `review`
//! decides a request (with the failure mode's answers), `decision` holds what it decided,
//! `reload` watches files and swaps the set, `connections` and `idle` bound connections,
//! `lanes` places long evaluations.
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

#![deny(missing_docs)]

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
pub mod template;
pub mod tls;

pub use computeguard_policyset::Level;
pub use config::{Enforcement, FailureMode, WebhookConfig};
pub use decision::{Decision, Mode, Verdict};
pub use review::{LoadedPolicy, PolicySet};
pub use template::TemplateCache;

mod idle;
mod listen;
mod reload;
mod routes;

use arc_swap::ArcSwap;
use listen::{WEBHOOK_PORT, closed, register, serve_connection, serve_probes};
use reload::{load_set, watch};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tracing::{info, warn};

/// The error a [`Loader`] returns: any error that may cross threads; its message is
/// logged (on reload) or returned as [`ServeError::Load`] (at start).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Builds the policy set the server evaluates with. Called at start and on every
/// reload, off the request path.
pub trait Loader: Send + Sync + 'static {
    /// Loads the configuration and every policy and validates every policy's settings.
    fn load(&self) -> Result<PolicySet, BoxError>;
    /// Files whose change triggers a reload (the config and policy files).
    fn watched(&self) -> Vec<PathBuf>;
    /// Metric families of the loader's own (Prometheus text, without `# EOF`), served
    /// by `/metrics` after the server's. None by default.
    fn metrics_text(&self) -> String {
        String::new()
    }
}

/// Server settings (the rest comes from the `webhook:` section of the config).
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address the HTTPS webhook port listens on (port 0 picks a free one; see
    /// [`Server::local_addr`]).
    pub addr: SocketAddr,
    /// PEM certificate chain served on the webhook port; re-read when the file changes.
    pub tls_cert: PathBuf,
    /// PEM private key of `tls_cert`; re-read when the file changes.
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
    /// Options for a webhook on `addr` with the given certificate and key files, and
    /// the defaults for the rest: watch every 2 s, drain for 20 s, no probe port.
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
    /// The certificate or key cannot be read, or they do not fit together.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
    /// The first policy set could not be built ([`Loader::load`] failed or panicked), or
    /// the slow lane's threads could not start.
    #[error("cannot load the policies: {0}")]
    Load(BoxError),
    /// The webhook address or the probe address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address that could not be bound.
        addr: SocketAddr,
        /// The operating system's error (address in use, permission denied, ...).
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
        let l = loader.clone();
        let set = tokio::task::spawn_blocking(move || load_set(l.as_ref()))
            .await
            .map_err(|e| ServeError::Load(e.to_string().into()))?
            .map_err(ServeError::Load)?;
        let tls = Arc::new(certs.server_config(
            set.webhook.client_ca.as_deref(),
            set.webhook.require_client_cert,
        )?);
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
        let connections = connections::Table::new(connections::TableLimits {
            max: limits.max_connections,
            max_per_peer: limits.max_connections_per_peer,
            rate_per_peer: limits.connection_rate_per_peer,
            grace: limits.new_connection_grace,
        });
        let probe_connections = connections::Table::new(connections::TableLimits {
            max: PROBE_MAX_CONNECTIONS,
            max_per_peer: PROBE_MAX_CONNECTIONS_PER_PEER,
            rate_per_peer: PROBE_CONNECTION_RATE_PER_PEER,
            grace: limits.new_connection_grace,
        });
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
        // Each connection holds a receiver: `true` asks it to close gracefully, and the
        // drain ends when every receiver is gone.
        let (stop, stopping) = tokio::sync::watch::channel(false);
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
                    // A newcomer that finds no room waits here (at most the grace),
                    // holding later ones in the kernel's accept queue: the burst waits
                    // instead of being refused (connections.rs).
                    let Some(slot) = register(&state, table, WEBHOOK_PORT, peer).await else {
                        drop(tcp);
                        continue;
                    };
                    let _ = tcp.set_nodelay(true);
                    let acceptor = acceptor.clone();
                    let state = state.clone();
                    let stopping = stopping.clone();
                    tokio::spawn(async move {
                        serve_connection(&state, tcp, peer, acceptor, stopping, &slot).await;
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
        drop(stopping);
        let _ = stop.send(true);
        tokio::select! {
            () = stop.closed() => info!("drained"),
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

/// Asks a running server to reload its policies and configuration.
#[derive(Clone)]
pub struct ReloadHandle(Arc<State>);

impl ReloadHandle {
    /// Wakes the file watcher, which re-checks the certificate and rebuilds the policy
    /// set even if no watched file changed. Returns at once; the reload runs off the
    /// request path, and requests made before it starts count as one.
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
