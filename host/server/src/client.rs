//! A minimal HTTPS client that speaks to the webhook the way the API server does
//! (HTTP/1.1 over rustls, keep-alive). Used by the end-to-end tests and the load
//! generator in `benches/`; handy for smoke tests of a deployment.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;

pub use rustls::pki_types::CertificateDer;
use std::net::SocketAddr;
use std::sync::Arc;

/// Any error of the client: the TLS configuration, connecting, the handshake, or an
/// HTTP exchange.
pub type ClientError = Box<dyn std::error::Error + Send + Sync>;

/// One kept-alive HTTPS connection.
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

/// A TLS client configuration trusting exactly `ca` (DER).
pub fn tls_config(ca: CertificateDer<'static>) -> Result<Arc<rustls::ClientConfig>, ClientError> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca)?;
    let cfg = rustls::ClientConfig::builder_with_provider(crate::tls::provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}

impl Connection {
    /// Connects to `addr`, verifying the certificate for `server_name`.
    pub async fn open(
        addr: SocketAddr,
        server_name: &str,
        tls: Arc<rustls::ClientConfig>,
    ) -> Result<Connection, ClientError> {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        Connection::over(tcp, server_name, tls).await
    }

    /// Speaks HTTPS over a connected socket (for example one bound to a chosen local
    /// address, as the end-to-end tests do to play a second client).
    pub async fn over(
        tcp: tokio::net::TcpStream,
        server_name: &str,
        tls: Arc<rustls::ClientConfig>,
    ) -> Result<Connection, ClientError> {
        tcp.set_nodelay(true)?;
        let name = ServerName::try_from(server_name.to_string())?;
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Connection {
            sender,
            host: server_name.to_string(),
        })
    }

    /// Sends a request and returns the status and body.
    pub async fn send(
        &mut self,
        method: hyper::Method,
        path: &str,
        body: Bytes,
    ) -> Result<(hyper::StatusCode, Bytes), ClientError> {
        self.sender.ready().await?;
        let req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, &self.host)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(body))?;
        let resp = self.sender.send_request(req).await?;
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    /// POSTs an AdmissionReview body to `path` (`/validate` or `/mutate`).
    pub async fn post(
        &mut self,
        path: &str,
        body: impl Into<Bytes>,
    ) -> Result<(hyper::StatusCode, Bytes), ClientError> {
        self.send(hyper::Method::POST, path, body.into()).await
    }

    /// Whether the server has closed the connection.
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed()
    }

    /// GETs `path`.
    pub async fn get(&mut self, path: &str) -> Result<(hyper::StatusCode, Bytes), ClientError> {
        self.send(hyper::Method::GET, path, Bytes::new()).await
    }
}
