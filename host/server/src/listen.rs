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
/// Concurrent HTTP/2 streams (requests) on one connection. hyper's default is 200; Go's
/// HTTP/2 client (the API server's) opens another connection when a connection's
/// streams are all in use, so a higher limit keeps a burst on the connections it has.
/// Evaluations are bounded separately (`maxInFlight`).
pub(crate) const H2_MAX_CONCURRENT_STREAMS: u32 = 1000;

/// The `port` label of the probe port's connection metrics.
const PROBE_PORT: &str = "probes";

/// Registers an accepted connection in `table`, making room if it is full; when no
/// connection may be closed yet (all new or answering), waits for one at most the
/// table's grace. Counts evictions and refusals and logs (rate-limited) that the port
/// is evicting. `None`: refused, close it.
pub(crate) async fn register(
    state: &State,
    table: &Arc<connections::Table>,
    port: &'static str,
    peer: SocketAddr,
) -> Option<connections::Slot> {
    let metrics = &state.metrics;
    let deadline = tokio::time::Instant::now() + table.grace();
    let mut waited = false;
    let refusal = loop {
        // Registered before asking, so a notification between the answer and the wait
        // is not lost.
        let room = table.room().notified();
        match table.admit(peer.ip()) {
            connections::Admission::Admitted(admitted) => {
                if waited {
                    metrics
                        .connections_waited
                        .get_or_create(&metrics::PortLabels { port })
                        .inc();
                }
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
                return Some(admitted.slot);
            }
            connections::Admission::Refused(why) => break why,
            connections::Admission::Wait { retry, refusal } => {
                if tokio::time::Instant::now() >= deadline {
                    break refusal;
                }
                waited = true;
                let until = deadline.min(tokio::time::Instant::from_std(retry));
                tokio::select! {
                    () = room => {}
                    () = tokio::time::sleep_until(until) => {}
                }
            }
        }
    };
    let reason = refusal.as_str();
    metrics
        .connections_refused
        .get_or_create(&metrics::ConnectionLabels { port, reason })
        .inc();
    debug!(port, %peer, reason, "connection refused (all_busy, peer_all_busy: every connection that could make room stayed new or answering for newConnectionGraceMs; peer_rate: the address's connections closed unserved faster than connectionRatePerPeer)");
    None
}

/// Updates the open-connections gauge after a connection closed.
pub(crate) fn closed(state: &State, table: &connections::Table, port: &'static str) {
    state
        .metrics
        .connections_open
        .get_or_create(&metrics::PortLabels { port })
        .set(table.open() as i64);
}

/// How long a connection asked to close (to make room, or at shutdown) may take to
/// finish the request it is reading or answering before it is closed abruptly.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

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
        let Some(slot) = register(&state, &state.probe_connections, PROBE_PORT, peer).await else {
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
        let report = slot.handle();
        hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let guard = idle::InFlight::new(requests.clone());
            let response = probe(&state, req.uri().path()).unwrap_or_else(|| {
                problem(
                    StatusCode::NOT_FOUND,
                    "the probe port serves /healthz, /readyz and /metrics; admission is on the HTTPS port",
                )
            });
            drop(guard);
            // A 503 from /readyz is a probe answered too.
            report.answered(response.status() != StatusCode::NOT_FOUND);
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
    mut stopping: tokio::sync::watch::Receiver<bool>,
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
    // A client certificate the client CA signed (the handshake verified it).
    if tls.get_ref().1.peer_certificates().is_some() {
        slot.authenticate();
        debug!(%peer, "client authenticated by webhook.clientCA");
    }
    let requests = Arc::new(AtomicUsize::new(0));
    let service = {
        let requests = requests.clone();
        let answering = shared.answering.clone();
        let state = state.clone();
        let report = slot.handle();
        hyper::service::service_fn(move |req| {
            let state = state.clone();
            let answering = answering.clone();
            let report = report.clone();
            let guard = idle::InFlight::new(requests.clone());
            async move {
                let response = handle(&state, req, &answering).await;
                drop(guard);
                // A 2xx (an AdmissionReview answered, a probe) serves the connection: it
                // spends no budget, and may make room once it is not answering.
                report.answered(response.status().is_success());
                Ok::<_, std::convert::Infallible>(response)
            }
        })
    };
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    // HTTP/2: one connection carries up to `H2_MAX_CONCURRENT_STREAMS` admissions at
    // once, so an API server's burst opens few new connections (docs/deploy.md, "Bursts").
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_concurrent_streams(H2_MAX_CONCURRENT_STREAMS)
        .keep_alive_interval(None);
    let conn = builder
        .serve_connection(TokioIo::new(tls), service)
        .into_owned();
    let mut conn = std::pin::pin!(conn);
    // Closing to make room, or for the server's shutdown, is graceful: a request being
    // read or answered is finished and its answer written (HTTP/1.1 closes after it,
    // HTTP/2 sends GOAWAY), bounded by `CLOSE_WAIT`. Closing abruptly lost the answer of
    // a connection whose handler had returned but whose response was not yet written.
    let mut closing: Option<tokio::time::Instant> = None;
    loop {
        let deadline = closing.unwrap_or_else(|| tokio::time::Instant::now() + CLOSE_WAIT);
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    debug!(%peer, error = %e, "connection ended with an error");
                }
                return;
            }
            () = idle::until_idle(&shared.activity, &requests, limits.idle_timeout), if closing.is_none() => {
                debug!(%peer, idle = ?limits.idle_timeout, "idle connection closed");
                return;
            }
            () = shared.evicted.notified(), if closing.is_none() => {
                debug!(%peer, "closing the connection to make room");
                conn.as_mut().graceful_shutdown();
                closing = Some(tokio::time::Instant::now() + CLOSE_WAIT);
            }
            changed = stopping.changed(), if closing.is_none() => {
                // The sender is dropped or says stop: either way the server is going.
                let _ = changed;
                conn.as_mut().graceful_shutdown();
                closing = Some(tokio::time::Instant::now() + CLOSE_WAIT);
            }
            () = tokio::time::sleep_until(deadline), if closing.is_some() => {
                debug!(%peer, "connection still busy after it was asked to close; closed");
                return;
            }
        }
    }
}
