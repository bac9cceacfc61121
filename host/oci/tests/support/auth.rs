//! What the registry-auth tests need around the real registry: a bcrypt htpasswd file,
//! a token service (the Docker/ACR Bearer flow) whose JWTs the registry verifies against
//! its `rootcertbundle`, a docker `config.json`, and a child process of this test binary
//! that runs with a given environment (credentials are read from the process
//! environment, which a test cannot change safely while other tests run).

#![allow(dead_code)]

use base64::Engine as _;
use p256::ecdsa::signature::Signer as _;
use p256::pkcs8::DecodePrivateKey as _;
use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The `service` of the token-auth registry (the JWT's `aud`).
pub const SERVICE: &str = "computeguard-test-registry";
/// The token service's name (the JWT's `iss`).
pub const ISSUER: &str = "computeguard-test-token-issuer";

/// The `auth:` section of a registry that checks `htpasswd` (bcrypt) for Basic auth.
pub fn htpasswd_auth(dir: &Path, users: &[(&str, &str)]) -> String {
    let mut file = String::new();
    for (user, password) in users {
        let hash = bcrypt::hash_with_result(password, 5)
            .expect("bcrypt")
            .format_for_version(bcrypt::Version::TwoY);
        file.push_str(&format!("{user}:{hash}\n"));
    }
    let path = dir.join("htpasswd");
    std::fs::write(&path, file).expect("write htpasswd");
    format!(
        "  htpasswd:\n    realm: computeguard-test-realm\n    path: {}\n",
        path.display()
    )
}

/// One request the token service answered, as the tests inspect it.
#[derive(Clone, Debug)]
pub struct TokenRequest {
    /// `GET` or `POST`.
    pub method: String,
    /// `basic:<user>`, `refresh_token`, or `anonymous`.
    pub credential: String,
    /// The `scope` parameters asked for.
    pub scopes: Vec<String>,
    /// The status answered.
    pub status: u16,
}

/// A token service on loopback: `GET /token?service=..&scope=..` with Basic credentials
/// (what `docker login` does) and `POST /token` with `grant_type=refresh_token` (what
/// Docker and ACR do with an identity token). It answers `{"token", "access_token"}` with
/// an ES256 JWT whose `x5c` is its signing certificate, issued by the CA the registry
/// trusts (`rootcertbundle`).
pub struct TokenService {
    /// `http://127.0.0.1:PORT/token`.
    pub realm: String,
    /// The CA certificate (PEM) to give the registry as its `rootcertbundle`.
    pub root_pem: String,
    /// Every request answered, in order.
    pub requests: Arc<Mutex<Vec<TokenRequest>>>,
    /// When not 0, every request is answered with this status (a token service that is
    /// down: 503).
    pub fail_with: Arc<std::sync::atomic::AtomicU16>,
    signer: Arc<Signer>,
}

struct Signer {
    key: p256::ecdsa::SigningKey,
    leaf_der: Vec<u8>,
    users: Vec<(String, String)>,
    refresh_tokens: Vec<String>,
    next_id: AtomicUsize,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => out.push(b),
                    Err(_) => out.extend_from_slice(&bytes[i..i + 3]),
                }
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `a=b&c=d` as pairs (a key may repeat: `scope`).
fn form(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

impl Signer {
    /// A JWT granting every action asked for in `scopes` (`repository:NAME:ACTIONS`).
    fn token(&self, subject: &str, service: &str, scopes: &[String]) -> String {
        let access: Vec<serde_json::Value> = scopes
            .iter()
            .filter_map(|s| {
                let (kind, rest) = s.split_once(':')?;
                let (name, actions) = rest.rsplit_once(':')?;
                Some(serde_json::json!({
                    "type": kind,
                    "name": name,
                    "actions": actions.split(',').collect::<Vec<_>>(),
                }))
            })
            .collect();
        let header = serde_json::json!({
            "typ": "JWT",
            "alg": "ES256",
            "x5c": [base64::engine::general_purpose::STANDARD.encode(&self.leaf_der)],
        });
        let t = now();
        let claims = serde_json::json!({
            "iss": ISSUER,
            "sub": subject,
            "aud": service,
            "exp": t + 300,
            "nbf": t - 10,
            "iat": t,
            "jti": format!("jti-{}", self.next_id.fetch_add(1, Ordering::SeqCst)),
            "access": access,
        });
        let signing_input = format!(
            "{}.{}",
            b64url(header.to_string().as_bytes()),
            b64url(claims.to_string().as_bytes())
        );
        // JWS ES256: the raw r || s, not DER.
        let sig: p256::ecdsa::Signature = self.key.sign(signing_input.as_bytes());
        format!("{signing_input}.{}", b64url(&sig.to_bytes()))
    }

    /// The answer to one request: (status, JSON body, the request as recorded).
    fn answer(
        &self,
        method: &str,
        target: &str,
        headers: &HashMap<String, String>,
        body: &str,
    ) -> (u16, String, TokenRequest) {
        let query = target.split_once('?').map(|(_, q)| q).unwrap_or("");
        let mut params = form(query);
        if method == "POST" {
            params.extend(form(body));
        }
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let scopes: Vec<String> = params
            .iter()
            .filter(|(n, _)| n == "scope")
            .flat_map(|(_, v)| v.split(' ').map(str::to_string).collect::<Vec<_>>())
            .collect();
        let service = get("service").unwrap_or_default();
        let refused = |credential: String, why: &str| {
            (
                401,
                serde_json::json!({ "details": why }).to_string(),
                TokenRequest {
                    method: method.to_string(),
                    credential,
                    scopes: scopes.clone(),
                    status: 401,
                },
            )
        };
        let (credential, subject) = if method == "POST" {
            if get("grant_type").as_deref() != Some("refresh_token") {
                return refused("none".into(), "unsupported grant_type");
            }
            let token = get("refresh_token").unwrap_or_default();
            if !self.refresh_tokens.contains(&token) {
                return refused("refresh_token".into(), "invalid refresh token");
            }
            (
                "refresh_token".to_string(),
                "identity-token-user".to_string(),
            )
        } else {
            let Some(basic) = headers
                .get("authorization")
                .and_then(|v| v.strip_prefix("Basic "))
            else {
                return refused("anonymous".into(), "authentication required");
            };
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(basic.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .unwrap_or_default();
            let (user, password) = decoded.split_once(':').unwrap_or((&decoded, ""));
            if !self.users.iter().any(|(u, p)| u == user && p == password) {
                return refused(format!("basic:{user}"), "incorrect username or password");
            }
            (format!("basic:{user}"), user.to_string())
        };
        if service != SERVICE {
            return refused(credential, "unknown service");
        }
        let jwt = self.token(&subject, &service, &scopes);
        let body = if method == "POST" {
            // An OAuth2 answer (what ACR's /oauth2/token gives): access_token only.
            serde_json::json!({ "access_token": jwt, "expires_in": 300 })
        } else {
            serde_json::json!({ "token": jwt, "access_token": jwt, "expires_in": 300 })
        };
        (
            200,
            body.to_string(),
            TokenRequest {
                method: method.to_string(),
                credential,
                scopes,
                status: 200,
            },
        )
    }
}

fn serve_one(
    stream: TcpStream,
    signer: &Signer,
    requests: &Mutex<Vec<TokenRequest>>,
    fail_with: u16,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut headers = HashMap::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (status, json, record) = if fail_with != 0 {
        (
            fail_with,
            r#"{"details":"the token service is down"}"#.to_string(),
            TokenRequest {
                method: method.clone(),
                credential: "none".into(),
                scopes: vec![],
                status: fail_with,
            },
        )
    } else if target.starts_with("/token") {
        signer.answer(&method, &target, &headers, &String::from_utf8_lossy(&body))
    } else {
        (
            404,
            "{}".to_string(),
            TokenRequest {
                method: method.clone(),
                credential: "none".into(),
                scopes: vec![],
                status: 404,
            },
        )
    };
    if let Ok(mut r) = requests.lock() {
        r.push(record);
    }
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Service Unavailable",
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}",
        json.len()
    );
    let _ = stream.flush();
}

impl TokenService {
    /// Starts the service: `users` may ask with Basic credentials, `refresh_tokens` with
    /// the OAuth2 refresh-token grant.
    pub fn start(users: &[(&str, &str)], refresh_tokens: &[&str]) -> TokenService {
        let ca_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "computeguard test token CA");
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = rcgen::Issuer::new(ca, ca_key);

        let leaf_key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("key");
        let mut leaf = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        leaf.distinguished_name
            .push(rcgen::DnType::CommonName, "computeguard test token signer");
        leaf.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        let leaf_cert = leaf
            .signed_by(&leaf_key, &issuer)
            .expect("leaf certificate");
        let key = p256::ecdsa::SigningKey::from_pkcs8_der(&leaf_key.serialize_der())
            .expect("the leaf key as a p256 key");

        let signer = Arc::new(Signer {
            key,
            leaf_der: leaf_cert.der().to_vec(),
            users: users
                .iter()
                .map(|(u, p)| (u.to_string(), p.to_string()))
                .collect(),
            refresh_tokens: refresh_tokens.iter().map(|t| t.to_string()).collect(),
            next_id: AtomicUsize::new(1),
        });
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the token service");
        let realm = format!(
            "http://{}/token",
            listener.local_addr().expect("local address")
        );
        let requests = Arc::new(Mutex::new(Vec::new()));
        let fail_with = Arc::new(std::sync::atomic::AtomicU16::new(0));
        let (s, r, f) = (signer.clone(), requests.clone(), fail_with.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, r) = (s.clone(), r.clone());
                let fail = f.load(Ordering::SeqCst);
                std::thread::spawn(move || serve_one(stream, &s, &r, fail));
            }
        });
        TokenService {
            realm,
            root_pem: ca_cert.pem(),
            requests,
            fail_with,
            signer,
        }
    }

    /// The `auth:` section of a registry that trusts this service's tokens.
    pub fn registry_auth(&self, dir: &Path) -> String {
        let bundle = dir.join("token-root.pem");
        std::fs::write(&bundle, &self.root_pem).expect("write the root bundle");
        format!(
            "  token:\n    realm: {}\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
            self.realm,
            bundle.display()
        )
    }

    /// A registry token for `scopes`, as the service would issue it (what
    /// `COMPUTEGUARD_REGISTRY_TOKEN` holds: `az acr login --expose-token` gives one).
    pub fn token_for(&self, scopes: &[&str]) -> String {
        let scopes: Vec<String> = scopes.iter().map(|s| s.to_string()).collect();
        self.signer.token("env-token-user", SERVICE, &scopes)
    }

    /// The requests answered so far.
    pub fn requests(&self) -> Vec<TokenRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// Writes `$dir/config.json` with `auths.<registry>` set to `entry`; returns `dir` (the
/// value for `DOCKER_CONFIG`).
pub fn docker_config(dir: &Path, registry: &str, entry: serde_json::Value) -> PathBuf {
    std::fs::create_dir_all(dir).expect("create the docker config folder");
    let config = serde_json::json!({ "auths": { registry: entry } });
    std::fs::write(dir.join("config.json"), config.to_string()).expect("write config.json");
    dir.to_path_buf()
}

/// `auth` as `docker login` writes it: base64 of `user:password`.
pub fn basic_auth_field(user: &str, password: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
}
