//! The OCI distribution API over HTTP/1.1 (hyper), HTTPS with rustls.

use crate::artifact::{Artifact, Descriptor, Kind, Manifest, artifact_layer, media};
use crate::limits::{MAX_MANIFEST_BYTES, MAX_SMALL_ANSWER_BYTES, blob_limit};
use crate::{Credentials, Digest, Error, Reference, Result};
use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Client settings.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Registries (`host[:port]` or `host`) reached over plain HTTP; loopback registries
    /// always are.
    pub insecure: Vec<String>,
    /// The time one request (connect, answer and body) may take. Default 60 s.
    pub timeout: Duration,
    /// Credentials for every registry instead of [`Credentials::for_registry`].
    pub credentials: Option<Credentials>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            insecure: Vec::new(),
            timeout: Duration::from_secs(60),
            credentials: None,
        }
    }
}

/// An artifact pulled and verified: the manifest's digest, the manifest, what its layer
/// holds and the layer's bytes.
#[derive(Clone, Debug)]
pub struct Pulled {
    /// The manifest's digest.
    pub digest: Digest,
    /// The manifest's bytes (as the registry served them; they hash to `digest`).
    pub manifest_bytes: Vec<u8>,
    /// The manifest.
    pub manifest: Manifest,
    /// What the layer holds.
    pub kind: Kind,
    /// The layer's descriptor.
    pub layer: Descriptor,
    /// The layer's bytes (they hash to the layer's digest).
    pub bytes: Vec<u8>,
    /// The config blob's bytes.
    pub config: Vec<u8>,
}

/// A registry answer read whole (within its limit).
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// A client for OCI registries. Tokens are kept per registry and scope for the client's
/// life.
pub struct Client {
    options: ClientOptions,
    tls: Arc<rustls::ClientConfig>,
    tokens: Mutex<HashMap<(String, String), String>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// Percent-encodes a query value (RFC 3986 unreserved characters pass).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The parameters of a `WWW-Authenticate` challenge: the scheme and its `key="value"` pairs.
fn parse_challenge(h: &str) -> (String, HashMap<String, String>) {
    let h = h.trim();
    let (scheme, rest) = h.split_once(' ').unwrap_or((h, ""));
    let mut params = HashMap::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        if key.is_empty() {
            break;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            value.push(n);
                        }
                    }
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek() {
                if *c == ',' {
                    break;
                }
                value.push(*c);
                chars.next();
            }
        }
        params.insert(key.trim().to_ascii_lowercase(), value.trim().to_string());
    }
    (scheme.to_ascii_lowercase(), params)
}

fn text_of(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    s.chars().take(300).collect()
}

fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority
            .split_once(']')
            .map_or(authority, |(h, _)| &h[1..]);
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

impl Client {
    /// A client with `options`.
    pub fn new(options: ClientOptions) -> Result<Client> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Unreachable {
            registry: String::new(),
            reason: format!("TLS configuration: {e}"),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Client {
            options,
            tls: Arc::new(tls),
            tokens: Mutex::new(HashMap::new()),
        })
    }

    /// Whether `authority` may be spoken to over plain HTTP.
    fn plain_http_allowed(&self, authority: &str) -> bool {
        let host = host_of(authority);
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
            || self
                .options
                .insecure
                .iter()
                .any(|i| i.eq_ignore_ascii_case(authority) || i.eq_ignore_ascii_case(host))
    }

    fn base(&self, registry: &str) -> String {
        let scheme = if self.plain_http_allowed(registry) {
            "http"
        } else {
            "https"
        };
        format!("{scheme}://{registry}")
    }

    /// The credentials for `registry`, and where they come from (for messages).
    fn credentials(&self, registry: &str) -> (Credentials, String) {
        match &self.options.credentials {
            Some(Credentials::Anonymous) => (
                Credentials::Anonymous,
                "none were given to the client".into(),
            ),
            Some(c) => (c.clone(), format!("{} given to the client", c.kind())),
            None => crate::auth::lookup(registry),
        }
    }

    /// The error for credentials refused (a 401 or 403 from the registry or its token
    /// service): [`Error::CredentialsNeeded`] when there were none to send.
    fn refused(
        registry: &str,
        creds: &Credentials,
        source: &str,
        what: &str,
        status: u16,
        body: String,
    ) -> Error {
        if matches!(creds, Credentials::Anonymous) {
            return Error::CredentialsNeeded {
                what: what.to_string(),
                registry: registry.to_string(),
                searched: source.to_string(),
                body,
            };
        }
        Error::Unauthorized {
            what: what.to_string(),
            status,
            credentials: source.to_string(),
            body,
        }
    }

    /// One request on a new connection, its body read within `limit`.
    async fn once(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: &Bytes,
        limit: u64,
        what: &str,
    ) -> Result<Answer> {
        let authority = uri
            .authority()
            .map(|a| a.as_str())
            .unwrap_or("")
            .to_string();
        let unreachable = |reason: String| Error::Unreachable {
            registry: authority.clone(),
            reason,
        };
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") if self.plain_http_allowed(&authority) => false,
            _ => return Err(Error::InsecureRefused(authority.clone())),
        };
        let host = host_of(&authority).to_string();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let fut = async {
            let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
                .await
                .map_err(|e| unreachable(format!("cannot connect to {host}:{port}: {e}")))?;
            let mut req = http::Request::builder().method(method.clone()).uri(
                uri.path_and_query()
                    .map(|p| p.as_str())
                    .unwrap_or("/")
                    .to_string(),
            );
            for (k, v) in headers {
                req = req.header(k, v);
            }
            let req = req
                .header(header::HOST, authority.as_str())
                .header(header::USER_AGENT, "computeguard")
                .body(Full::new(body.clone()))
                .map_err(|e| unreachable(e.to_string()))?;
            let response = if https {
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| unreachable(format!("bad server name {host}: {e}")))?;
                let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| unreachable(format!("TLS: {e}")))?;
                send(TokioIo::new(tls), req).await
            } else {
                send(TokioIo::new(tcp), req).await
            }
            .map_err(|e| unreachable(e.to_string()))?;
            let status = response.status();
            let headers = response.headers().clone();
            if let Some(len) = headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                && len > limit
                && status.is_success()
                && method != Method::HEAD
            {
                return Err(Error::TooLarge {
                    what: what.to_string(),
                    limit,
                });
            }
            // Only a success's body matters beyond a message; an error's is cut short.
            let keep = if status.is_success() {
                limit
            } else {
                MAX_SMALL_ANSWER_BYTES
            };
            let mut body = response.into_body();
            let mut out = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| unreachable(format!("reading the answer: {e}")))?;
                if let Ok(data) = frame.into_data() {
                    if (out.len() + data.len()) as u64 > keep {
                        if status.is_success() {
                            return Err(Error::TooLarge {
                                what: what.to_string(),
                                limit,
                            });
                        }
                        break;
                    }
                    out.extend_from_slice(&data);
                }
            }
            Ok(Answer {
                status,
                headers,
                body: out,
            })
        };
        tokio::time::timeout(self.options.timeout, fut)
            .await
            .map_err(|_| {
                unreachable(format!(
                    "no answer within {} s",
                    self.options.timeout.as_secs()
                ))
            })?
    }

    /// PUTs `bytes` of `content_type` to `url` with push rights; the registry's answer.
    async fn put(
        &self,
        r: &Reference,
        url: String,
        content_type: &'static str,
        bytes: &[u8],
        what: &str,
    ) -> Result<Answer> {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        self.request(
            r,
            Method::PUT,
            url,
            headers,
            Bytes::copy_from_slice(bytes),
            true,
            MAX_SMALL_ANSWER_BYTES,
            what,
        )
        .await
    }

    /// A request to `registry` for `repository` with auth (a token or Basic, fetched on
    /// a challenge) and redirects followed (without the registry's credentials on
    /// another host).
    #[allow(clippy::too_many_arguments)]
    async fn request(
        &self,
        r: &Reference,
        method: Method,
        url: String,
        mut headers: HeaderMap,
        body: Bytes,
        push: bool,
        limit: u64,
        what: &str,
    ) -> Result<Answer> {
        let scope = format!(
            "repository:{}:{}",
            r.repository,
            if push { "pull,push" } else { "pull" }
        );
        let key = (r.registry.clone(), scope.clone());
        let (creds, source) = self.credentials(&r.registry);
        let auth = |headers: &mut HeaderMap, value: String| {
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.insert(header::AUTHORIZATION, v);
            }
        };
        if let Credentials::Bearer(t) = &creds {
            auth(&mut headers, format!("Bearer {t}"));
        } else if let Some(t) = self.tokens.lock().ok().and_then(|m| m.get(&key).cloned()) {
            auth(&mut headers, t);
        }
        let mut uri: Uri = url.parse().map_err(|e| Error::InvalidReference {
            reference: url.clone(),
            reason: format!("{e}"),
        })?;
        let mut challenged = false;
        let mut redirects = 0;
        // Credentials are for the registry only: a challenge from a host it redirected to
        // is a refusal, never answered with them.
        let registry = uri.authority().cloned();
        loop {
            let answer = self
                .once(&method, &uri, &headers, &body, limit, what)
                .await?;
            match answer.status.as_u16() {
                401 if !challenged
                    && !matches!(creds, Credentials::Bearer(_))
                    && uri.authority() == registry.as_ref() =>
                {
                    challenged = true;
                    let challenge = answer
                        .headers
                        .get(header::WWW_AUTHENTICATE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    let value = self
                        .answer_challenge(r, challenge, &scope, &creds, &source, what)
                        .await?;
                    if let Ok(mut m) = self.tokens.lock() {
                        m.insert(key.clone(), value.clone());
                    }
                    auth(&mut headers, value);
                }
                301 | 302 | 303 | 307 | 308 if redirects < 5 => {
                    redirects += 1;
                    let loc = answer
                        .headers
                        .get(header::LOCATION)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    let next = if loc.starts_with('/') {
                        format!(
                            "{}://{}{loc}",
                            uri.scheme_str().unwrap_or("https"),
                            uri.authority().map(|a| a.as_str()).unwrap_or("")
                        )
                    } else {
                        loc.to_string()
                    };
                    let next: Uri = next.parse().map_err(|_| Error::Registry {
                        what: what.to_string(),
                        status: answer.status.as_u16(),
                        body: format!("a redirect to `{loc}`"),
                    })?;
                    if uri.scheme_str() == Some("https") && next.scheme_str() != Some("https") {
                        return Err(Error::Registry {
                            what: what.to_string(),
                            status: answer.status.as_u16(),
                            body: "a redirect from HTTPS to plain HTTP".into(),
                        });
                    }
                    if next.authority() != uri.authority() {
                        // Blob storage (ACR redirects to Azure Storage with a SAS URL)
                        // never gets the registry's credentials.
                        headers.remove(header::AUTHORIZATION);
                    }
                    uri = next;
                }
                401 | 403 => {
                    return Err(Self::refused(
                        &r.registry,
                        &creds,
                        &source,
                        what,
                        answer.status.as_u16(),
                        text_of(&answer.body),
                    ));
                }
                _ => return Ok(answer),
            }
        }
    }

    /// The `Authorization` value for a 401's challenge.
    async fn answer_challenge(
        &self,
        r: &Reference,
        challenge: &str,
        default_scope: &str,
        creds: &Credentials,
        source: &str,
        what: &str,
    ) -> Result<String> {
        let (scheme, params) = parse_challenge(challenge);
        let unauthorized =
            |body: String| Self::refused(&r.registry, creds, source, what, 401, body);
        match scheme.as_str() {
            "basic" => match creds {
                Credentials::Basic { username, password } => Ok(format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD
                        .encode(format!("{username}:{password}"))
                )),
                _ => Err(unauthorized(
                    "the registry asks for a username and password (a Basic challenge)".into(),
                )),
            },
            "bearer" => {
                let realm = params.get("realm").ok_or_else(|| {
                    unauthorized(format!("a Bearer challenge without a realm: {challenge}"))
                })?;
                let scope = params
                    .get("scope")
                    .cloned()
                    .unwrap_or_else(|| default_scope.to_string());
                let service = params.get("service").cloned().unwrap_or_default();
                let token = self
                    .fetch_token(r, realm, &service, &scope, creds, source, what)
                    .await?;
                Ok(format!("Bearer {token}"))
            }
            _ => Err(unauthorized(format!(
                "the registry asks for authentication computeguard does not speak: `{challenge}`"
            ))),
        }
    }

    /// The Docker token flow: a GET (anonymous or Basic) or, with a refresh token, an
    /// OAuth2 POST to the realm.
    #[allow(clippy::too_many_arguments)]
    async fn fetch_token(
        &self,
        r: &Reference,
        realm: &str,
        service: &str,
        scope: &str,
        creds: &Credentials,
        source: &str,
        what: &str,
    ) -> Result<String> {
        let mut headers = HeaderMap::new();
        let (method, uri, body) = match creds {
            Credentials::IdentityToken(t) => {
                headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/x-www-form-urlencoded"),
                );
                let form = format!(
                    "grant_type=refresh_token&service={}&scope={}&client_id=computeguard&refresh_token={}",
                    encode(service),
                    encode(scope),
                    encode(t)
                );
                (Method::POST, realm.to_string(), Bytes::from(form))
            }
            _ => {
                if let Credentials::Basic { username, password } = creds {
                    let v = format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD
                            .encode(format!("{username}:{password}"))
                    );
                    if let Ok(v) = HeaderValue::from_str(&v) {
                        headers.insert(header::AUTHORIZATION, v);
                    }
                }
                let sep = if realm.contains('?') { '&' } else { '?' };
                (
                    Method::GET,
                    format!(
                        "{realm}{sep}service={}&scope={}",
                        encode(service),
                        encode(scope)
                    ),
                    Bytes::new(),
                )
            }
        };
        let uri: Uri = uri.parse().map_err(|_| Error::Format {
            what: format!("{what}: the Bearer challenge of {}", r.registry),
            reason: format!("the token realm `{realm}` is not a URL"),
        })?;
        let answer = self
            .once(
                &method,
                &uri,
                &headers,
                &body,
                MAX_SMALL_ANSWER_BYTES,
                "token",
            )
            .await?;
        if !answer.status.is_success() {
            let what = format!("{what} (token service {realm} of {})", r.registry);
            return Err(match answer.status.as_u16() {
                status @ (401 | 403) => Self::refused(
                    &r.registry,
                    creds,
                    source,
                    &what,
                    status,
                    text_of(&answer.body),
                ),
                500..=599 => Error::Unreachable {
                    registry: r.registry.clone(),
                    reason: format!(
                        "token service {realm}: server error {}: {}",
                        answer.status,
                        text_of(&answer.body)
                    ),
                },
                status => Error::Registry {
                    what,
                    status,
                    body: text_of(&answer.body),
                },
            });
        }
        let v: serde_json::Value =
            serde_json::from_slice(&answer.body).map_err(|e| Error::Format {
                what: "token answer".into(),
                reason: e.to_string(),
            })?;
        v.get("token")
            .or_else(|| v.get("access_token"))
            .and_then(|t| t.as_str())
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .ok_or_else(|| Error::Format {
                what: "token answer".into(),
                reason: "no token in it".into(),
            })
    }

    fn fail(what: &str, a: &Answer) -> Error {
        let status = a.status.as_u16();
        match status {
            404 => Error::NotFound {
                what: what.to_string(),
            },
            401 | 403 => Error::Unauthorized {
                what: what.to_string(),
                status,
                credentials: "the credentials sent".into(),
                body: text_of(&a.body),
            },
            500..=599 => Error::Unreachable {
                registry: what.to_string(),
                reason: format!("server error {status}: {}", text_of(&a.body)),
            },
            _ => Error::Registry {
                what: what.to_string(),
                status,
                body: text_of(&a.body),
            },
        }
    }

    /// `HEAD` of a manifest: its digest and size, or `None` when there is none.
    pub async fn head_manifest(&self, r: &Reference) -> Result<Option<(Digest, u64)>> {
        let what = format!("HEAD manifest {r}");
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(MANIFEST_ACCEPT));
        let url = format!(
            "{}/v2/{}/manifests/{}",
            self.base(&r.registry),
            r.repository,
            r.manifest_ref()
        );
        let a = self
            .request(r, Method::HEAD, url, headers, Bytes::new(), false, 0, &what)
            .await?;
        if a.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !a.status.is_success() {
            return Err(Self::fail(&what, &a));
        }
        let digest = a
            .headers
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Error::Format {
                what: what.clone(),
                reason: "no Docker-Content-Digest in the answer".into(),
            })
            .and_then(Digest::parse)?;
        let size = a
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(Some((digest, size)))
    }

    /// The manifest `r` names, within [`MAX_MANIFEST_BYTES`], its digest verified: against
    /// `r`'s digest when it has one (a pin), else against the registry's
    /// `Docker-Content-Digest`. A reference by digest alone that the repository does not
    /// hold is [`Error::DigestNotFound`].
    pub async fn pull_manifest(&self, r: &Reference) -> Result<(Digest, Vec<u8>)> {
        let what = format!("manifest {r}");
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static(MANIFEST_ACCEPT));
        let url = format!(
            "{}/v2/{}/manifests/{}",
            self.base(&r.registry),
            r.repository,
            r.manifest_ref()
        );
        let a = self
            .request(
                r,
                Method::GET,
                url,
                headers,
                Bytes::new(),
                false,
                MAX_MANIFEST_BYTES,
                &what,
            )
            .await?;
        if !a.status.is_success() {
            // By digest alone, a 404 says the pin names nothing in this repository.
            if a.status.as_u16() == 404
                && r.tag.is_none()
                && let Some(digest) = &r.digest
            {
                return Err(Error::DigestNotFound {
                    digest: digest.to_string(),
                    repository: r.repository_name(),
                });
            }
            return Err(Self::fail(&what, &a));
        }
        let actual = Digest::of(&a.body);
        let expected = match &r.digest {
            Some(d) => Some(d.clone()),
            None => a
                .headers
                .get("docker-content-digest")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| Digest::parse(v).ok()),
        };
        if let Some(expected) = expected
            && expected != actual
        {
            return Err(Error::DigestMismatch {
                what,
                expected: expected.to_string(),
                actual: actual.to_string(),
            });
        }
        Ok((actual, a.body))
    }

    /// A blob of `r`'s repository, within `limit`, its size and digest verified.
    pub async fn pull_blob(&self, r: &Reference, desc: &Descriptor, limit: u64) -> Result<Vec<u8>> {
        let digest = desc.digest()?;
        let what = format!("blob {digest} of {}", r.repository_name());
        if desc.size > limit {
            return Err(Error::TooLarge { what, limit });
        }
        let url = format!(
            "{}/v2/{}/blobs/{digest}",
            self.base(&r.registry),
            r.repository
        );
        let a = self
            .request(
                r,
                Method::GET,
                url,
                HeaderMap::new(),
                Bytes::new(),
                false,
                limit,
                &what,
            )
            .await?;
        if !a.status.is_success() {
            return Err(Self::fail(&what, &a));
        }
        if a.body.len() as u64 != desc.size {
            return Err(Error::DigestMismatch {
                what: format!(
                    "{what} ({} bytes, the manifest says {})",
                    a.body.len(),
                    desc.size
                ),
                expected: digest.to_string(),
                actual: Digest::of(&a.body).to_string(),
            });
        }
        digest.verify(&a.body, &what)?;
        Ok(a.body)
    }

    /// Whether `r`'s repository holds the blob `digest`.
    pub async fn blob_exists(&self, r: &Reference, digest: &Digest) -> Result<bool> {
        let what = format!("HEAD blob {digest} of {}", r.repository_name());
        let url = format!(
            "{}/v2/{}/blobs/{digest}",
            self.base(&r.registry),
            r.repository
        );
        let a = self
            .request(
                r,
                Method::HEAD,
                url,
                HeaderMap::new(),
                Bytes::new(),
                true,
                0,
                &what,
            )
            .await?;
        match a.status.as_u16() {
            200..=299 => Ok(true),
            404 => Ok(false),
            _ => Err(Self::fail(&what, &a)),
        }
    }

    /// Uploads `bytes` as a blob of `r`'s repository (one monolithic upload; skipped when
    /// the blob is there already). Returns its digest.
    pub async fn push_blob(&self, r: &Reference, bytes: &[u8]) -> Result<Digest> {
        let digest = Digest::of(bytes);
        if self.blob_exists(r, &digest).await? {
            return Ok(digest);
        }
        let what = format!("upload blob {digest} to {}", r.repository_name());
        let url = format!(
            "{}/v2/{}/blobs/uploads/",
            self.base(&r.registry),
            r.repository
        );
        let a = self
            .request(
                r,
                Method::POST,
                url,
                HeaderMap::new(),
                Bytes::new(),
                true,
                MAX_SMALL_ANSWER_BYTES,
                &what,
            )
            .await?;
        if a.status != StatusCode::ACCEPTED {
            return Err(Self::fail(&what, &a));
        }
        let loc = a
            .headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Error::Format {
                what: what.clone(),
                reason: "no Location for the upload".into(),
            })?;
        let loc = if loc.starts_with('/') {
            format!("{}{loc}", self.base(&r.registry))
        } else {
            loc.to_string()
        };
        let sep = if loc.contains('?') { '&' } else { '?' };
        let url = format!("{loc}{sep}digest={}", encode(digest.as_str()));
        let a = self
            .put(r, url, "application/octet-stream", bytes, &what)
            .await?;
        if a.status != StatusCode::CREATED {
            return Err(Self::fail(&what, &a));
        }
        Ok(digest)
    }

    /// Puts a manifest under `reference` (a tag, or its digest). Returns its digest,
    /// checked against the registry's `Docker-Content-Digest`.
    pub async fn push_manifest(
        &self,
        r: &Reference,
        reference: &str,
        bytes: &[u8],
    ) -> Result<Digest> {
        let digest = Digest::of(bytes);
        let what = format!("put manifest {}:{reference}", r.repository_name());
        let url = format!(
            "{}/v2/{}/manifests/{reference}",
            self.base(&r.registry),
            r.repository
        );
        let a = self.put(r, url, media::OCI_MANIFEST, bytes, &what).await?;
        if !a.status.is_success() {
            return Err(Self::fail(&what, &a));
        }
        if let Some(d) = a
            .headers
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| Digest::parse(v).ok())
            && d != digest
        {
            return Err(Error::DigestMismatch {
                what: format!("{what}: the registry stored"),
                expected: digest.to_string(),
                actual: d.to_string(),
            });
        }
        Ok(digest)
    }

    /// Pushes an artifact: its blobs, then its manifest under `r`'s tag (or its digest
    /// when `r` has no tag). Returns the manifest digest.
    pub async fn push_artifact(&self, r: &Reference, artifact: &Artifact) -> Result<Digest> {
        self.push_blob(r, &artifact.config).await?;
        self.push_blob(r, &artifact.layer).await?;
        let bytes = artifact.manifest.to_bytes()?;
        let digest = Digest::of(&bytes);
        let at = r.tag.clone().unwrap_or_else(|| digest.to_string());
        if let Some(pin) = &r.digest
            && pin != &digest
        {
            return Err(Error::DigestMismatch {
                what: format!("the artifact pushed to {r}"),
                expected: pin.to_string(),
                actual: digest.to_string(),
            });
        }
        self.push_manifest(r, &at, &bytes).await
    }

    /// Pulls the artifact `r` names: the manifest (its digest verified), then its config
    /// and its one layer, each within its media type's limit and its digest verified.
    pub async fn pull_artifact(&self, r: &Reference) -> Result<Pulled> {
        let (digest, manifest_bytes) = self.pull_manifest(r).await?;
        self.pull_contents(r, digest, manifest_bytes).await
    }

    /// The config and the one layer of the artifact whose manifest (already verified to
    /// be `digest`) is `manifest_bytes`, each within its limit and its digest verified.
    pub async fn pull_contents(
        &self,
        r: &Reference,
        digest: Digest,
        manifest_bytes: Vec<u8>,
    ) -> Result<Pulled> {
        let what = format!("{}@{digest}", r.repository_name());
        let manifest = Manifest::parse(&manifest_bytes, &what)?;
        let (kind, layer) = artifact_layer(&manifest, &what)?;
        let config = self
            .pull_blob(
                r,
                &manifest.config,
                blob_limit(&manifest.config.media_type).unwrap_or(0),
            )
            .await?;
        let bytes = self
            .pull_blob(r, &layer, blob_limit(&layer.media_type).unwrap_or(0))
            .await?;
        Ok(Pulled {
            digest,
            manifest_bytes,
            manifest,
            kind,
            layer,
            bytes,
            config,
        })
    }
}

async fn send<T>(
    io: TokioIo<T>,
    req: http::Request<Full<Bytes>>,
) -> Result<http::Response<hyper::body::Incoming>, hyper::Error>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender.send_request(req).await
}

/// Runs `f` to completion on a runtime of its own: on this thread when it is not inside
/// a tokio runtime, else on a scoped thread (a runtime cannot block inside another).
pub fn block_on<F>(f: F) -> Result<F::Output>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    let run = move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map(|rt| rt.block_on(f))
            .map_err(|e| Error::Io {
                what: "start the registry client's runtime",
                path: String::new(),
                error: e,
            })
    };
    if tokio::runtime::Handle::try_current().is_err() {
        return run();
    }
    std::thread::scope(|s| {
        s.spawn(run).join().unwrap_or_else(|_| {
            Err(Error::Io {
                what: "the registry client's thread",
                path: String::new(),
                error: std::io::Error::other("panicked"),
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_with_commas_inside_quotes() {
        let (s, p) = parse_challenge(
            r#"Bearer realm="https://myacr.azurecr.io/oauth2/token",service="myacr.azurecr.io",scope="repository:policies/x:pull,push""#,
        );
        assert_eq!(s, "bearer");
        assert_eq!(p["realm"], "https://myacr.azurecr.io/oauth2/token");
        assert_eq!(p["service"], "myacr.azurecr.io");
        assert_eq!(p["scope"], "repository:policies/x:pull,push");
        let (s, p) = parse_challenge(r#"Basic realm="Registry Realm""#);
        assert_eq!(
            (s.as_str(), p["realm"].as_str()),
            ("basic", "Registry Realm")
        );
        assert_eq!(
            encode("repository:a/b:pull,push"),
            "repository%3Aa%2Fb%3Apull%2Cpush"
        );
    }

    #[test]
    fn plain_http_only_for_loopback_and_insecure_registries() {
        let c = Client::new(ClientOptions {
            insecure: vec!["registry.internal:5000".into()],
            ..ClientOptions::default()
        })
        .unwrap();
        assert_eq!(c.base("127.0.0.1:5000"), "http://127.0.0.1:5000");
        assert_eq!(c.base("localhost:5000"), "http://localhost:5000");
        assert_eq!(c.base("[::1]:5000"), "http://[::1]:5000");
        assert_eq!(
            c.base("registry.internal:5000"),
            "http://registry.internal:5000"
        );
        assert_eq!(c.base("myacr.azurecr.io"), "https://myacr.azurecr.io");
        assert!(!c.plain_http_allowed("10.0.0.1:5000"));
    }
}
