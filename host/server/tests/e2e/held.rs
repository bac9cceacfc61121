//! Connections held on the webhook port (issue 23): a client that fills the connection
//! budget, idle or with a request now and then, must not lock out the API server, the
//! kubelet's probes or anyone else.

use super::*;
use computeguard_server::client::ClientError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The holder's address and a well-behaved second client's (all of 127.0.0.0/8 is
/// loopback on Linux).
pub(crate) const HOLDER: [u8; 4] = [127, 0, 0, 1];
pub(crate) const SECOND: [u8; 4] = [127, 0, 0, 2];

impl Running {
    /// An HTTPS connection from `ip`.
    pub(crate) async fn conn_from(&self, ip: [u8; 4]) -> Result<Connection, ClientError> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::from((ip, 0)))?;
        let tcp = socket.connect(self.addr).await?;
        Connection::over(tcp, "localhost", tls_config(self.ca.clone())?).await
    }

    /// A plain-HTTP GET on the probe port, on a new connection, as the kubelet does:
    /// the status line's code and the time to the answer.
    pub(crate) async fn probe(&self, path: &str) -> (u16, Duration) {
        let asked = Instant::now();
        let mut tcp = tokio::net::TcpStream::connect(self.probe)
            .await
            .expect("probe port");
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        tcp.write_all(request.as_bytes()).await.expect("write");
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).await.expect("read");
        let code = answer
            .strip_prefix("HTTP/1.1 ")
            .and_then(|r| r.get(..3))
            .and_then(|c| c.parse().ok());
        assert!(code.is_some(), "not an HTTP answer: {answer}");
        let code = code.unwrap_or_default();
        (code, asked.elapsed())
    }

    pub(crate) async fn metrics(&self) -> String {
        let mut tcp = tokio::net::TcpStream::connect(self.probe)
            .await
            .expect("probe port");
        tcp.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).await.expect("read");
        answer
    }
}

/// A client that keeps its connection past any idle timeout by sending a request
/// every `every` (one a minute in the attack; faster here so the test is short):
/// resolves to the number of requests that failed once `stop` is set.
fn keep_busy(
    mut c: Connection,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<usize> {
    tokio::spawn(async move {
        let mut failed = 0;
        while !stop.load(Ordering::Relaxed) {
            if c.get("/healthz").await.is_err() {
                failed += 1;
            }
            tokio::time::sleep(every).await;
        }
        failed
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_held_past_the_cap_leave_probes_reviews_and_a_second_client_answered() {
    // The default idle timeout (60 s): nothing here is closed for idleness.
    let s =
        start(json!({"webhook": {"limits": {"maxConnections": 8, "maxConnectionsPerPeer": 8}}}))
            .await;
    let stop = Arc::new(AtomicBool::new(false));
    // The holder: 4 connections that send a request every 20 ms, then 8 idle ones
    // opened 50 ms apart (each sends one request when it opens): 12 > the cap of 8.
    let mut active = Vec::new();
    for _ in 0..4 {
        let c = s.conn_from(HOLDER).await.expect("the holder connects");
        active.push(keep_busy(c, Duration::from_millis(20), stop.clone()));
    }
    let mut idle = Vec::new();
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut c = s.conn_from(HOLDER).await.expect("the holder connects");
        c.get("/healthz")
            .await
            .expect("each new connection is served");
        idle.push(c);
    }
    // Health and readiness answer on the probe port at once, held webhook port or not.
    for path in ["/healthz", "/readyz"] {
        let (code, took) = s.probe(path).await;
        assert_eq!(code, 200, "{path}");
        assert!(took < Duration::from_millis(500), "{path} took {took:?}");
    }
    // A second, well-behaved client: a GPU Pod review is answered in milliseconds,
    // and so is every other connection it opens.
    let asked = Instant::now();
    let mut second = s.conn_from(SECOND).await.expect("never refused");
    let r = answer(&mut second, "/validate", review("gpu", "ml", retired_pod())).await;
    let took = asked.elapsed();
    assert_eq!(r["uid"], "gpu");
    assert_eq!(
        r["allowed"], false,
        "a real verdict, not a failure answer: {r}"
    );
    assert!(
        r["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("[sku-retired]")),
        "{r}"
    );
    assert!(took < Duration::from_secs(1), "the review took {took:?}");
    let mut more = Vec::new();
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut c = s.conn_from(SECOND).await.expect("never refused");
        let (status, _) = c.get("/readyz").await.expect("served");
        assert_eq!(status, StatusCode::OK);
        more.push(c);
    }
    // The holder's 4 + 3 newcomers + the second client's 3 evictions = its 7 quietest
    // (oldest idle) connections are closed, in order; the newest idle one and every
    // connection that kept sending are still open.
    for (i, c) in idle.iter_mut().enumerate() {
        let open = c.get("/healthz").await.is_ok();
        assert_eq!(open, i == 7, "idle connection {i} open: {open}");
    }
    // The holder at 8 made room from its own connections (it is at the per-address
    // limit, 8 here); the second client's 3 took the quietest of anyone's.
    let metrics = s.metrics().await;
    assert!(
        metrics.contains(
            r#"computeguard_connections_evicted_total{port="webhook",reason="max_connections_per_peer"} 4"#
        ) && metrics.contains(
            r#"computeguard_connections_evicted_total{port="webhook",reason="max_connections"} 3"#
        ),
        "{metrics}"
    );
    assert!(
        !metrics.contains("computeguard_connections_refused_total{"),
        "nobody was refused: {metrics}"
    );
    assert!(
        metrics.contains(r#"computeguard_connections_open{port="webhook"} 8"#),
        "{metrics}"
    );
    stop.store(true, Ordering::Relaxed);
    for a in active {
        assert_eq!(
            a.await.expect("task"),
            0,
            "a connection that kept sending was closed"
        );
    }
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_the_whole_budget() {
    let s =
        start(json!({"webhook": {"limits": {"maxConnections": 16, "maxConnectionsPerPeer": 4}}}))
            .await;
    let mut held = Vec::new();
    for _ in 0..10 {
        let mut c = s.conn_from(HOLDER).await.expect("the holder connects");
        c.get("/healthz").await.expect("served");
        held.push(c);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Only the holder's 4 newest stay: it made room from its own connections.
    for (i, c) in held.iter_mut().enumerate() {
        let open = c.get("/healthz").await.is_ok();
        assert_eq!(open, i >= 6, "holder connection {i} open: {open}");
    }
    // Everyone else still has 12 places (three more addresses, 4 each), and none of
    // the holder's 4 are taken for them.
    let mut others = Vec::new();
    for ip in [SECOND, [127, 0, 0, 3], [127, 0, 0, 4]] {
        for _ in 0..4 {
            let mut c = s.conn_from(ip).await.expect("never refused");
            c.get("/healthz").await.expect("served");
            others.push(c);
        }
    }
    for c in &mut others {
        assert!(
            c.get("/healthz").await.is_ok(),
            "no other client lost a connection"
        );
    }
    for c in &mut held[6..] {
        assert!(c.get("/healthz").await.is_ok());
    }
    let metrics = s.metrics().await;
    assert!(
        metrics.contains(
            r#"computeguard_connections_evicted_total{port="webhook",reason="max_connections_per_peer"} 6"#
        ),
        "{metrics}"
    );
    assert!(
        !metrics.contains(r#"reason="max_connections"}"#),
        "{metrics}"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_is_refused_only_when_every_connection_it_could_replace_is_answering() {
    // Two requests from the holder are being evaluated (the runaway policy spins until
    // the 1.5 s deadline): the holder's third connection has nothing to replace, and
    // waits for room at most its grace (300 ms here), then is refused.
    let s = start(json!({"runaway": true, "webhook": {"limits": {
        "maxConnectionsPerPeer": 2, "evaluationTimeoutMs": 1500, "newConnectionGraceMs": 300}}}))
    .await;
    let mut busy = Vec::new();
    for i in 0..2 {
        let mut c = s.conn_from(HOLDER).await.expect("the holder connects");
        busy.push(tokio::spawn(async move {
            answer(
                &mut c,
                "/validate",
                review(&format!("b{i}"), "ml", a100_pod()),
            )
            .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = match s.conn_from(HOLDER).await {
        Err(_) => true,
        Ok(mut c) => c.get("/healthz").await.is_err(),
    };
    assert!(refused, "the holder's third connection is refused");
    // Another address is not affected.
    let mut second = s.conn_from(SECOND).await.expect("never refused");
    assert!(second.get("/healthz").await.is_ok());
    for b in busy {
        let r = b.await.expect("answered");
        assert_eq!(r["allowed"], false, "the runaway's failure answer: {r}");
    }
    let metrics = s.metrics().await;
    assert!(
        metrics.contains(
            r#"computeguard_connections_refused_total{port="webhook",reason="peer_all_busy"} 1"#
        ),
        "{metrics}"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_body_that_never_arrives_is_answered_408_and_its_connection_closed() {
    let s = start(json!({"webhook": {"limits": {"bodyReadTimeoutMs": 300}}})).await;
    let tcp = tokio::net::TcpStream::connect(s.addr).await.expect("tcp");
    let connector = tokio_rustls::TlsConnector::from(tls_config(s.ca.clone()).expect("tls"));
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let mut tls = connector.connect(name, tcp).await.expect("handshake");
    tls.write_all(
        b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1000\r\n\r\n{\"apiVersion\"",
    )
    .await
    .expect("headers and the start of a body");
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut buf)).await;
    assert!(
        read.is_ok(),
        "the server answers and closes instead of waiting"
    );
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("bodyReadTimeoutMs"), "{text}");
    s.shutdown().await;
}
