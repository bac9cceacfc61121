//! Accepting connections: the webhook port (TLS, HTTP/1.1 and HTTP/2) and the plain-HTTP
//! probe port, each through its connection table (`connections`), each connection closed
//! when idle or to make room.

use crate::routes::{handle, probe, problem};
use crate::{State, connections, idle, metrics};
use hyper::StatusCode;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;
use tokio::net::TcpListener;
use tracing::{debug, warn};

/// The `port` label of the webhook port's connection metrics.
pub(crate) const WEBHOOK_PORT: &str = "webhook";
/// The `port` label of the probe port's connection metrics.
const PROBE_PORT: &str = "probes";

/// Registers an accepted connection in `table`, making room if it is full; counts
/// evictions and refusals and logs (rate-limited) that the port is evicting. `None`:
/// refused, close it.
pub(crate) fn register(
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
pub(crate) fn closed(state: &State, table: &connections::Table, port: &'static str) {
    state
        .metrics
        .connections_open
        .get_or_create(&metrics::PortLabels { port })
        .set(table.open() as i64);
}

/// The plain-HTTP probe port: `/healthz`, `/readyz` and `/metrics`, nothing else.
pub(crate) async fn serve_probes(state: Arc<State>, listener: TcpListener) {
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
pub(crate) async fn serve_connection(
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
