//! TLS: the serving certificate is read from files and re-read when they change, so
//! a cert-manager renewal needs no restart. A broken new pair keeps the old one.

use arc_swap::ArcSwap;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// Why a certificate/key pair could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file cannot be read or holds a malformed PEM block.
    #[error("cannot read the TLS certificate `{path}`: {reason}")]
    Cert {
        /// The certificate file.
        path: String,
        /// The I/O or PEM error.
        reason: String,
    },
    /// The key file cannot be read or holds no usable PEM private key.
    #[error("cannot read the TLS key `{path}`: {reason}")]
    Key {
        /// The key file.
        path: String,
        /// The I/O or PEM error.
        reason: String,
    },
    /// The certificate file reads but contains no certificate.
    #[error("`{cert}` holds no PEM certificate")]
    NoCert {
        /// The certificate file.
        cert: String,
    },
    /// The key is not the certificate's, or rustls cannot sign with it.
    #[error("the TLS key `{key}` does not fit the certificate `{cert}`: {reason}")]
    Mismatch {
        /// The certificate file.
        cert: String,
        /// The key file.
        key: String,
        /// rustls's error.
        reason: String,
    },
    /// The client CA file (`webhook.clientCA`) cannot be read or holds no usable CA.
    #[error("cannot use the client CA `{path}` (webhook.clientCA): {reason}")]
    ClientCa {
        /// The CA file.
        path: String,
        /// What was wrong.
        reason: String,
    },
    /// rustls refused the server configuration, or the certificate lock was poisoned.
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// The crypto provider: `ring` only (one backend in the build).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

type Stamp = Option<(SystemTime, u64)>;

fn stamp(p: &Path) -> Stamp {
    std::fs::metadata(p)
        .ok()
        .and_then(|m| Some((m.modified().ok()?, m.len())))
}

/// The current certificate, swapped atomically on reload.
#[derive(Debug)]
pub struct CertStore {
    cert_path: PathBuf,
    key_path: PathBuf,
    current: ArcSwap<CertifiedKey>,
    stamps: Mutex<(Stamp, Stamp)>,
}

impl CertStore {
    /// Reads the PEM certificate chain and private key and checks that they fit; the
    /// files' modification times and sizes are remembered for [`Self::reload_if_changed`].
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<CertStore, TlsError> {
        let stamps = (stamp(cert_path), stamp(key_path));
        let key = read_pair(cert_path, key_path)?;
        Ok(CertStore {
            cert_path: cert_path.to_path_buf(),
            key_path: key_path.to_path_buf(),
            current: ArcSwap::from_pointee(key),
            stamps: Mutex::new(stamps),
        })
    }

    /// Re-reads the pair if either file changed. `Ok(true)`: a new pair is serving.
    /// On error the old pair keeps serving.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let now = (stamp(&self.cert_path), stamp(&self.key_path));
        let mut last = self
            .stamps
            .lock()
            .map_err(|_| TlsError::Config("certificate lock poisoned".into()))?;
        if *last == now {
            return Ok(false);
        }
        // Remember the attempt so a broken pair is reported once, not every tick.
        *last = now;
        drop(last);
        let key = read_pair(&self.cert_path, &self.key_path)?;
        self.current.store(Arc::new(key));
        Ok(true)
    }

    /// The rustls server configuration (TLS 1.2 and 1.3, HTTP/2 and HTTP/1.1 by ALPN).
    /// With `client_ca`, a client certificate it signed is verified and marks the
    /// connection authenticated; `required` refuses a handshake without one.
    pub fn server_config(
        self: &Arc<Self>,
        client_ca: Option<&Path>,
        required: bool,
    ) -> Result<rustls::ServerConfig, TlsError> {
        let builder = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Config(e.to_string()))?;
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => builder.with_client_cert_verifier(client_verifier(path, required)?),
        };
        let mut cfg = builder.with_cert_resolver(self.clone());
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(cfg)
    }
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

/// The verifier of API server client certificates signed by the CA in `path`.
fn client_verifier(
    path: &Path,
    required: bool,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, TlsError> {
    let shown = path.display().to_string();
    let bad = |reason: String| TlsError::ClientCa {
        path: shown.clone(),
        reason,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("it holds no PEM certificate".into()));
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        roots
            .add(cert)
            .map_err(|e| bad(format!("not a usable CA certificate: {e}")))?;
    }
    let builder =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider());
    let builder = if required {
        builder
    } else {
        builder.allow_unauthenticated()
    };
    builder.build().map_err(|e| bad(e.to_string()))
}

fn read_pair(cert_path: &Path, key_path: &Path) -> Result<CertifiedKey, TlsError> {
    let cert_name = cert_path.display().to_string();
    let key_name = key_path.display().to_string();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .map_err(|e| TlsError::Cert {
            path: cert_name.clone(),
            reason: e.to_string(),
        })?
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Cert {
            path: cert_name.clone(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCert { cert: cert_name });
    }
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| TlsError::Key {
        path: key_name.clone(),
        reason: e.to_string(),
    })?;
    CertifiedKey::from_der(certs, key, &provider()).map_err(|e| TlsError::Mismatch {
        cert: cert_name,
        key: key_name,
        reason: e.to_string(),
    })
}
