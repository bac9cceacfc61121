//! A burst from the API server is not a flood (issue 34): N clients from one address
//! each open a new connection at the same moment and send one valid AdmissionReview,
//! as the API server does when a Deployment scales from 0 to N replicas over HTTP/1.1
//! (or past its HTTP/2 connection's stream limit). None may be refused; every answer
//! must be the right one. Connections that send nothing or garbage still spend their
//! address's budget, and a client certificate signed by `webhook.clientCA` exempts the
//! API server from the per-address limits.

use super::*;
use crate::held::{HOLDER, SECOND};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{PrivateKeyDer, ServerName};
use std::time::Instant;
use tokio::io::AsyncWriteExt;

/// How a burst client speaks.
#[derive(Clone, Copy, Debug)]
enum Proto {
    Http1,
    Http2,
}

/// A client TLS configuration offering `proto` by ALPN, with a client certificate when
/// given.
fn client_tls(
    ca: CertificateDer<'static>,
    proto: Proto,
    identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).expect("ca");
    let builder = rustls::ClientConfig::builder_with_provider(computeguard_server::tls::provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots);
    let mut cfg = match identity {
        None => builder.with_no_client_auth(),
        Some((chain, key)) => builder.with_client_auth_cert(chain, key).expect("identity"),
    };
    cfg.alpn_protocols = vec![match proto {
        Proto::Http1 => b"http/1.1".to_vec(),
        Proto::Http2 => b"h2".to_vec(),
    }];
    Arc::new(cfg)
}

/// Opens a new connection from `ip`, sends `body` to `/validate` once and returns the
/// status and body, or what went wrong.
async fn one_review(
    addr: SocketAddr,
    ip: [u8; 4],
    tls: Arc<rustls::ClientConfig>,
    proto: Proto,
    body: Vec<u8>,
) -> Result<(StatusCode, Bytes), String> {
    let socket = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
    socket
        .bind(SocketAddr::from((ip, 0)))
        .map_err(|e| e.to_string())?;
    let tcp = socket.connect(addr).await.map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    let req = hyper::Request::builder()
        .method(hyper::Method::POST)
        .uri("https://localhost/validate")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let resp = match proto {
        Proto::Http1 => {
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(req).await
        }
        Proto::Http2 => {
            let (mut sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                    .await
                    .map_err(|e| e.to_string())?;
            tokio::spawn(conn);
            sender.send_request(req).await
        }
    }
    .map_err(|e| format!("request: {e}"))?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok((status, body))
}

/// `n` clients on 127.0.0.1 each open a new connection at the same moment and send one
/// review (every other one a Pod on a retired size); every answer is checked, and the
/// probes are asked while the burst runs.
async fn burst(n: usize, proto: Proto) {
    // One burst at a time: four bursts of 1,000 on two cores at once would be a
    // different (and unstated) experiment.
    static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    let _one = ONE_AT_A_TIME.lock().await;
    let s = start(json!({})).await;
    let tls = client_tls(s.ca.clone(), proto, None);
    let go = Arc::new(tokio::sync::Barrier::new(n + 1));
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let (tls, go, addr) = (tls.clone(), go.clone(), s.addr);
        let retired = i % 2 == 0;
        let mut object = if retired { retired_pod() } else { a100_pod() };
        object["metadata"]["name"] = json!(format!("burst-{i}"));
        let body = review(&format!("u{i}"), "ml", object);
        clients.push(tokio::spawn(async move {
            go.wait().await;
            (
                i,
                retired,
                one_review(addr, [127, 0, 0, 1], tls, proto, body).await,
            )
        }));
    }
    let began = Instant::now();
    go.wait().await;
    // The kubelet's probes, on their own port, while the burst is served.
    let mut slowest_probe = Duration::ZERO;
    for _ in 0..3 {
        let (code, took) = s.probe("/healthz").await;
        assert_eq!(code, 200);
        slowest_probe = slowest_probe.max(took);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut failed = Vec::new();
    for c in clients {
        let (i, retired, result) = c.await.expect("client task");
        match result {
            Ok((status, bytes)) if status == StatusCode::OK => {
                let v: Value = serde_json::from_slice(&bytes).expect("json answer");
                let r = &v["response"];
                assert_eq!(r["uid"], format!("u{i}"), "{r}");
                assert_eq!(r["allowed"], !retired, "client {i}: {r}");
                if retired {
                    assert!(
                        r["status"]["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("[sku-retired]")),
                        "{r}"
                    );
                }
            }
            Ok((status, bytes)) => failed.push(format!(
                "client {i}: {status} {}",
                String::from_utf8_lossy(&bytes)
            )),
            Err(e) => failed.push(format!("client {i}: {e}")),
        }
    }
    let took = began.elapsed();
    assert!(
        failed.is_empty(),
        "{} of {n} refused or failed ({proto:?}, {took:?}): {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    assert!(
        slowest_probe < Duration::from_secs(2),
        "a probe took {slowest_probe:?} during the burst"
    );
    let metrics = s.metrics().await;
    assert!(
        !metrics.contains("computeguard_connections_refused_total{"),
        "nobody was refused: {metrics}"
    );
    eprintln!(
        "burst of {n} over {proto:?}: all answered in {took:?}; slowest probe {slowest_probe:?}"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_300_new_http1_connections_from_one_address_is_answered_in_full() {
    burst(300, Proto::Http1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_1000_new_http1_connections_from_one_address_is_answered_in_full() {
    burst(1000, Proto::Http1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_300_new_http2_connections_from_one_address_is_answered_in_full() {
    burst(300, Proto::Http2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_1000_new_http2_connections_from_one_address_is_answered_in_full() {
    burst(1000, Proto::Http2).await;
}

/// Opens a connection from `ip`, completes the TLS handshake and closes it without a
/// request (or, with `garbage`, after sending bytes that are not HTTP).
async fn handshake_and_close(s: &Running, ip: [u8; 4], garbage: bool) -> bool {
    let Ok(socket) = tokio::net::TcpSocket::new_v4() else {
        return false;
    };
    if socket.bind(SocketAddr::from((ip, 0))).is_err() {
        return false;
    }
    let Ok(tcp) = socket.connect(s.addr).await else {
        return false;
    };
    let connector = tokio_rustls::TlsConnector::from(tls_config(s.ca.clone()).expect("tls"));
    let name = ServerName::try_from("localhost").expect("name");
    let Ok(mut tls) = connector.connect(name, tcp).await else {
        return false;
    };
    if garbage {
        let _ = tls.write_all(b"\x00\x01 not http at all\r\n\r\n").await;
    }
    let _ = tls.shutdown().await;
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_close_unserved_spend_the_budget_and_served_ones_do_not() {
    // 2 a second, a budget of 4.
    let s = start(json!({"webhook": {"limits": {"connectionRatePerPeer": 2}}})).await;
    // 20 connections in a row, each with a valid review: none refused.
    for i in 0..20 {
        let mut c = s.conn_from(HOLDER).await.expect("never refused");
        let r = answer(
            &mut c,
            "/validate",
            review(&format!("r{i}"), "ml", a100_pod()),
        )
        .await;
        assert_eq!(r["allowed"], true, "{r}");
    }
    // Handshakes closed without a request, and garbage, spend it: after the budget and
    // what refilled meanwhile, the address is refused on accept.
    let began = Instant::now();
    let mut refused = 0;
    for i in 0..16 {
        // Give the server a moment to see the previous close.
        tokio::time::sleep(Duration::from_millis(10)).await;
        if !handshake_and_close(&s, HOLDER, i % 2 == 1).await {
            refused += 1;
        }
    }
    let allowed = 4 + (began.elapsed().as_secs_f64() * 2.0).ceil() as usize;
    assert!(
        16 - refused <= allowed + 1,
        "{} of 16 got in within {:?}",
        16 - refused,
        began.elapsed()
    );
    assert!(refused > 0);
    let mut refused_now = match s.conn_from(HOLDER).await {
        Err(_) => true,
        Ok(mut c) => c.get("/healthz").await.is_err(),
    };
    // A refusal is a closed socket; it may only show on the first request.
    if !refused_now {
        refused_now = handshake_and_close(&s, HOLDER, false).await;
    }
    assert!(refused_now, "the spent address is refused on accept");
    // Another address is not affected, and the probes answer.
    let mut second = s.conn_from(SECOND).await.expect("never refused");
    assert!(second.get("/healthz").await.is_ok());
    assert_eq!(s.probe("/readyz").await.0, 200);
    let metrics = s.metrics().await;
    assert!(
        metrics.contains(
            r#"computeguard_connections_refused_total{port="webhook",reason="peer_rate"}"#
        ),
        "{metrics}"
    );
    s.shutdown().await;
}

/// A CA and a client certificate it signed, as a kubeconfig for the API server holds.
fn client_identity() -> (String, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "apiserver client CA");
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver-webhook-client");
    let cert = params.signed_by(&key, &issuer).expect("client cert");
    let der = PrivateKeyDer::try_from(key.serialize_der()).expect("key der");
    (ca.pem(), vec![cert.der().clone()], der)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_authenticated_api_server_is_not_held_to_its_address_limits() {
    let (ca_pem, chain, key) = client_identity();
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, ca_pem).expect("write");
    let s = start(json!({"webhook": {
        "clientCA": ca_file,
        "limits": {"maxConnectionsPerPeer": 2, "connectionRatePerPeer": 1}}}))
    .await;
    let authenticated = client_tls(s.ca.clone(), Proto::Http1, Some((chain, key)));
    // Six authenticated connections from one address at a limit of 2: all kept.
    let mut kept = Vec::new();
    for i in 0..6 {
        let tcp = tokio::net::TcpStream::connect(s.addr).await.expect("tcp");
        let mut c = Connection::over(tcp, "localhost", authenticated.clone())
            .await
            .expect("authenticated");
        let r = answer(
            &mut c,
            "/validate",
            review(&format!("a{i}"), "ml", a100_pod()),
        )
        .await;
        assert_eq!(r["allowed"], true, "{r}");
        kept.push(c);
    }
    // Authenticated handshakes closed without a request spend nothing (a budget of 2).
    for _ in 0..6 {
        let tcp = tokio::net::TcpStream::connect(s.addr).await.expect("tcp");
        let c = Connection::over(tcp, "localhost", authenticated.clone()).await;
        drop(c.expect("never refused"));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // An unauthenticated client from the same address still gets its own 2 places.
    let mut plain = Vec::new();
    for _ in 0..2 {
        let mut c = s.conn_from(HOLDER).await.expect("connects");
        assert!(c.get("/healthz").await.is_ok());
        plain.push(c);
    }
    for (i, c) in kept.iter_mut().enumerate() {
        assert!(
            c.get("/healthz").await.is_ok(),
            "authenticated connection {i} was closed"
        );
    }
    let metrics = s.metrics().await;
    assert!(
        !metrics.contains("computeguard_connections_evicted_total{")
            && !metrics.contains("computeguard_connections_refused_total{"),
        "{metrics}"
    );
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_require_client_cert_an_unauthenticated_client_is_refused_at_the_handshake() {
    let (ca_pem, chain, key) = client_identity();
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("client-ca.crt");
    std::fs::write(&ca_file, ca_pem).expect("write");
    let s = start(json!({"webhook": {"clientCA": ca_file, "requireClientCert": true}})).await;
    // No certificate: TLS 1.3 reports the refusal on the first read, so ask something.
    let refused = match s.conn_from(HOLDER).await {
        Err(_) => true,
        Ok(mut c) => c.get("/healthz").await.is_err(),
    };
    assert!(refused, "a client without a certificate is refused");
    let (_, other_chain, other_key) = client_identity();
    let stranger = client_tls(s.ca.clone(), Proto::Http1, Some((other_chain, other_key)));
    let tcp = tokio::net::TcpStream::connect(s.addr).await.expect("tcp");
    let refused = match Connection::over(tcp, "localhost", stranger).await {
        Err(_) => true,
        Ok(mut c) => c.get("/healthz").await.is_err(),
    };
    assert!(refused, "a certificate of another CA is refused");
    let tls = client_tls(s.ca.clone(), Proto::Http1, Some((chain, key)));
    let tcp = tokio::net::TcpStream::connect(s.addr).await.expect("tcp");
    let mut c = Connection::over(tcp, "localhost", tls)
        .await
        .expect("authenticated");
    let r = answer(&mut c, "/validate", review("ok", "ml", retired_pod())).await;
    assert_eq!(r["allowed"], false, "{r}");
    s.shutdown().await;
}
