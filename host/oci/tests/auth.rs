//! Registry authentication against the real CNCF distribution registry (Debian's
//! `docker-registry`) configured to require it:
//!
//! - `auth: htpasswd` (a bcrypt htpasswd file; the registry answers `401` with a `Basic`
//!   challenge);
//! - `auth: token` (the Docker / Azure Container Registry Bearer flow: a `401` with
//!   `WWW-Authenticate: Bearer realm=...,service=...,scope=...`, a token service that
//!   checks the credentials and issues an ES256 JWT, which the registry verifies against
//!   its `rootcertbundle` and whose `access` claim it enforces).
//!
//! Where the credentials come from (the environment, a docker `config.json`, nothing) is
//! read from the process environment, so those cases run in a child process of this test
//! binary with the environment set (see [`child`]).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[path = "support/auth.rs"]
mod auth;
#[path = "support/registry.rs"]
mod support;

use computeguard_oci::artifact::{Artifact, Kind};
use computeguard_oci::{
    Client, ClientOptions, Credentials, Digest, ENV_PASSWORD, ENV_TOKEN, ENV_USERNAME, Error,
    Reference,
};
use std::path::Path;
use std::process::Command;
use support::Registry;

const PACK: &[u8] = b"name: authenticated\n";

fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn client(credentials: Credentials) -> Client {
    Client::new(ClientOptions {
        credentials: Some(credentials),
        ..ClientOptions::default()
    })
    .unwrap()
}

fn basic(user: &str, password: &str) -> Credentials {
    Credentials::Basic {
        username: user.into(),
        password: password.into(),
    }
}

fn artifact(bytes: &[u8]) -> Artifact {
    Artifact::new(Kind::Pack, bytes.to_vec(), "pack.yaml").unwrap()
}

/// Pushes `PACK` to `r`, then pulls it by tag and by digest with a new client (tokens
/// are cached per client: the pulls ask for their own).
fn push_and_pull(credentials: &Credentials, r: &Reference) -> Result<Digest, Error> {
    let d = block(client(credentials.clone()).push_artifact(r, &artifact(PACK)))?;
    let by_tag = block(client(credentials.clone()).pull_artifact(r))?;
    assert_eq!((&by_tag.digest, by_tag.bytes.as_slice()), (&d, PACK));
    let by_digest = block(client(credentials.clone()).pull_artifact(&r.with_digest(&d)))?;
    assert_eq!(by_digest.bytes, PACK);
    Ok(d)
}

// ---- the child process: credentials from the environment and config.json ----

const CHILD_OP: &str = "COMPUTEGUARD_TEST_AUTH_CHILD";
const CHILD_REF: &str = "COMPUTEGUARD_TEST_AUTH_REF";

/// Not a test of its own: the entry point of the child process [`child`] starts. It
/// builds a client with no credentials given, so they come from
/// [`Credentials::for_registry`] (the environment, then `$DOCKER_CONFIG/config.json`),
/// and prints the outcome for the parent. Without the variable it does nothing.
#[test]
fn child_process_entry() {
    let Ok(op) = std::env::var(CHILD_OP) else {
        return;
    };
    let r = Reference::parse(&std::env::var(CHILD_REF).unwrap()).unwrap();
    let c = Client::new(ClientOptions::default()).unwrap();
    let result = match op.as_str() {
        "push-pull" => (|| {
            let d = block(c.push_artifact(&r, &artifact(PACK)))?;
            let by_tag = block(c.pull_artifact(&r))?;
            assert_eq!((&by_tag.digest, by_tag.bytes.as_slice()), (&d, PACK));
            let by_digest = block(c.pull_artifact(&r.with_digest(&d)))?;
            assert_eq!(by_digest.bytes, PACK);
            Ok::<_, Error>(d.to_string())
        })(),
        "pull" => block(c.pull_artifact(&r)).map(|p| p.digest.to_string()),
        other => panic!("unknown child operation {other}"),
    };
    match result {
        Ok(d) => println!("CHILD-OK {d}"),
        Err(e) => println!("CHILD-ERR {e}"),
    }
}

/// Runs `op` (`push-pull` or `pull`) on `reference` in a child process whose credential
/// variables are only `env` and whose `DOCKER_CONFIG` is `docker_config` (so the
/// developer's `~/.docker` is never read). `Ok(digest)` or `Err(the error's message)`.
fn child(
    op: &str,
    reference: &str,
    env: &[(&str, &str)],
    docker_config: &Path,
) -> Result<String, String> {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env_remove(ENV_USERNAME)
        .env_remove(ENV_PASSWORD)
        .env_remove(ENV_TOKEN)
        .env("DOCKER_CONFIG", docker_config)
        .env(CHILD_OP, op)
        .env(CHILD_REF, reference)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // libtest may print `test child_process_entry ... ` before the line.
    for line in stdout.lines() {
        if let Some((_, d)) = line.split_once("CHILD-OK ") {
            return Ok(d.to_string());
        }
        if let Some((_, e)) = line.split_once("CHILD-ERR ") {
            return Err(e.to_string());
        }
    }
    panic!(
        "the child process printed no outcome ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---- auth: htpasswd ----

fn htpasswd_registry(dir: &Path) -> Registry {
    Registry::start_with_auth(&auth::htpasswd_auth(dir, &[("alice", "s3cret")]))
}

#[test]
fn htpasswd_anonymous_push_and_pull_are_refused_naming_the_registry() {
    let dir = tempfile::tempdir().unwrap();
    let reg = htpasswd_registry(dir.path());
    let r = Reference::parse(&reg.oci("policies/private:1")).unwrap();

    let err = block(client(Credentials::Anonymous).push_artifact(&r, &artifact(PACK))).unwrap_err();
    assert!(matches!(err, Error::CredentialsNeeded { .. }), "{err}");
    let msg = err.to_string();
    for needed in [
        reg.addr.as_str(),
        "needs credentials",
        "COMPUTEGUARD_REGISTRY_USERNAME",
        "config.json",
    ] {
        assert!(msg.contains(needed), "`{needed}` missing from: {msg}");
    }

    // Pushed with credentials, the artifact is still not pulled anonymously; through the
    // environment-less child too (nothing in the environment, an empty config folder).
    push_and_pull(&basic("alice", "s3cret"), &r).unwrap();
    let err = block(client(Credentials::Anonymous).pull_artifact(&r)).unwrap_err();
    assert!(matches!(err, Error::CredentialsNeeded { .. }), "{err}");
    let empty = dir.path().join("no-docker-config");
    std::fs::create_dir_all(&empty).unwrap();
    let err = child("pull", &r.to_string(), &[], &empty).unwrap_err();
    assert!(
        err.contains(&reg.addr) && err.contains("needs credentials"),
        "{err}"
    );
}

#[test]
fn htpasswd_credentials_from_a_docker_config_json() {
    let dir = tempfile::tempdir().unwrap();
    let reg = htpasswd_registry(dir.path());
    let r = reg.oci("policies/from-config:1");
    // What `docker login 127.0.0.1:PORT` writes: `auth`, base64 of user:password.
    let config = auth::docker_config(
        &dir.path().join("docker"),
        &reg.addr,
        serde_json::json!({ "auth": auth::basic_auth_field("alice", "s3cret") }),
    );
    let d = child("push-pull", &r, &[], &config).unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));
    assert!(Digest::parse(&d).is_ok(), "{d}");

    // A wrong password in config.json: refused, saying where the credentials came from.
    let wrong = auth::docker_config(
        &dir.path().join("docker-wrong"),
        &reg.addr,
        serde_json::json!({ "auth": auth::basic_auth_field("alice", "wrong") }),
    );
    let err = child("pull", &r, &[], &wrong).unwrap_err();
    for needed in [
        reg.addr.as_str(),
        "refused the credentials (401",
        "alice",
        "config.json",
    ] {
        assert!(err.contains(needed), "`{needed}` missing from: {err}");
    }
}

#[test]
fn htpasswd_credentials_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let reg = htpasswd_registry(dir.path());
    let r = reg.oci("policies/from-env:1");
    let empty = dir.path().join("no-docker-config");
    std::fs::create_dir_all(&empty).unwrap();
    let env = [(ENV_USERNAME, "alice"), (ENV_PASSWORD, "s3cret")];
    let d = child("push-pull", &r, &env, &empty).unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));
    assert!(Digest::parse(&d).is_ok(), "{d}");

    // The environment comes before config.json: a wrong password there is used (and
    // refused) even when config.json holds the right one.
    let config = auth::docker_config(
        &dir.path().join("docker"),
        &reg.addr,
        serde_json::json!({ "auth": auth::basic_auth_field("alice", "s3cret") }),
    );
    let env = [(ENV_USERNAME, "alice"), (ENV_PASSWORD, "wrong")];
    let err = child("pull", &r, &env, &config).unwrap_err();
    for needed in [
        reg.addr.as_str(),
        "refused the credentials (401",
        "COMPUTEGUARD_REGISTRY_USERNAME",
    ] {
        assert!(err.contains(needed), "`{needed}` missing from: {err}");
    }
}

#[test]
fn htpasswd_a_wrong_password_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let reg = htpasswd_registry(dir.path());
    let r = Reference::parse(&reg.oci("policies/wrong:1")).unwrap();
    let err =
        block(client(basic("alice", "not-it")).push_artifact(&r, &artifact(PACK))).unwrap_err();
    assert!(
        matches!(err, Error::Unauthorized { status: 401, .. }),
        "{err}"
    );
    assert!(err.to_string().contains(&reg.addr), "{err}");
    let err = block(client(basic("mallory", "s3cret")).pull_artifact(&r)).unwrap_err();
    assert!(
        matches!(err, Error::Unauthorized { status: 401, .. }),
        "{err}"
    );
}

// ---- auth: token (the Docker / ACR Bearer flow) ----

fn token_registry(dir: &Path) -> (Registry, auth::TokenService) {
    let service = auth::TokenService::start(&[("alice", "s3cret")], &["refresh-me"]);
    let reg = Registry::start_with_auth(&service.registry_auth(dir));
    (reg, service)
}

#[test]
fn token_push_and_pull_by_tag_and_digest_with_a_username_and_password() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, service) = token_registry(dir.path());
    let r = Reference::parse(&reg.oci("policies/gpu-extra:1.2")).unwrap();
    push_and_pull(&basic("alice", "s3cret"), &r).unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));
    let requests = service.requests();
    assert!(!requests.is_empty());
    assert!(
        requests
            .iter()
            .all(|q| q.method == "GET" && q.credential == "basic:alice" && q.status == 200),
        "{requests:?}"
    );
    // The scopes asked for are the challenges' (the registry lists the actions in no
    // fixed order): push and pull for the push, pull for the pulls.
    let scopes: Vec<Vec<&str>> = requests
        .iter()
        .flat_map(|q| q.scopes.iter())
        .map(|s| {
            let actions = s
                .strip_prefix("repository:policies/gpu-extra:")
                .unwrap_or_else(|| panic!("a scope of another repository: {s}"));
            let mut a: Vec<&str> = actions.split(',').collect();
            a.sort();
            a
        })
        .collect();
    assert!(scopes.contains(&vec!["pull", "push"]), "{scopes:?}");
    assert!(scopes.contains(&vec!["pull"]), "{scopes:?}");
}

#[test]
fn token_credentials_from_the_environment_and_a_docker_config_json() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, service) = token_registry(dir.path());
    let empty = dir.path().join("no-docker-config");
    std::fs::create_dir_all(&empty).unwrap();

    // Username and password in the environment, sent to the token service.
    let env = [(ENV_USERNAME, "alice"), (ENV_PASSWORD, "s3cret")];
    child("push-pull", &reg.oci("env/basic:1"), &env, &empty)
        .unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));

    // `auth` in config.json (docker login), sent to the token service as Basic.
    let config = auth::docker_config(
        &dir.path().join("docker-login"),
        &reg.addr,
        serde_json::json!({ "auth": auth::basic_auth_field("alice", "s3cret") }),
    );
    child("push-pull", &reg.oci("config/auth:1"), &[], &config)
        .unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));

    // What `az acr login` writes: `identitytoken` (an ACR refresh token) beside an `auth`
    // of the all-zero user with no password; exchanged with the refresh-token grant.
    let before = service.requests().len();
    let config = auth::docker_config(
        &dir.path().join("az-acr-login"),
        &reg.addr,
        serde_json::json!({
            "auth": auth::basic_auth_field("00000000-0000-0000-0000-000000000000", ""),
            "identitytoken": "refresh-me",
        }),
    );
    child(
        "push-pull",
        &reg.oci("config/identitytoken:1"),
        &[],
        &config,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));
    let grants = service.requests()[before..].to_vec();
    assert!(
        !grants.is_empty()
            && grants
                .iter()
                .all(|q| q.method == "POST" && q.credential == "refresh_token" && q.status == 200),
        "{grants:?}"
    );

    // A registry token in the environment, sent as it is: no request to the token service.
    let before = service.requests().len();
    let token = service.token_for(&["repository:env/token:pull,push"]);
    child(
        "push-pull",
        &reg.oci("env/token:1"),
        &[(ENV_TOKEN, token.as_str())],
        &empty,
    )
    .unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));
    assert_eq!(service.requests().len(), before);

    // The registry enforces the token's `access`: the same token for another repository
    // is refused.
    let err = child(
        "push-pull",
        &reg.oci("env/elsewhere:1"),
        &[(ENV_TOKEN, token.as_str())],
        &empty,
    )
    .unwrap_err();
    for needed in [
        reg.addr.as_str(),
        "refused the credentials (401",
        "COMPUTEGUARD_REGISTRY_TOKEN",
    ] {
        assert!(err.contains(needed), "`{needed}` missing from: {err}");
    }
    // And its signature: a token from a service the registry does not trust is refused.
    let stranger = auth::TokenService::start(&[], &[]);
    let forged = stranger.token_for(&["repository:env/token:pull,push"]);
    let err = child(
        "pull",
        &reg.oci("env/token:1"),
        &[(ENV_TOKEN, forged.as_str())],
        &empty,
    )
    .unwrap_err();
    assert!(err.contains("refused the credentials (401"), "{err}");
}

#[test]
fn token_a_wrong_password_a_wrong_refresh_token_and_no_credentials_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, service) = token_registry(dir.path());
    let r = Reference::parse(&reg.oci("policies/locked:1")).unwrap();
    push_and_pull(&basic("alice", "s3cret"), &r).unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));

    let err = block(client(basic("alice", "wrong")).pull_artifact(&r)).unwrap_err();
    assert!(
        matches!(err, Error::Unauthorized { status: 401, .. }),
        "{err}"
    );
    let msg = err.to_string();
    for needed in [
        reg.addr.as_str(),
        "token service",
        "refused the credentials (401",
        "incorrect username or password",
    ] {
        assert!(msg.contains(needed), "`{needed}` missing from: {msg}");
    }
    assert_eq!(
        service
            .requests()
            .last()
            .map(|q| (q.credential.clone(), q.status)),
        Some(("basic:alice".into(), 401))
    );

    let err =
        block(client(Credentials::IdentityToken("stale".into())).pull_artifact(&r)).unwrap_err();
    assert!(
        matches!(err, Error::Unauthorized { status: 401, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("invalid refresh token"), "{err}");

    let err = block(client(Credentials::Anonymous).pull_artifact(&r)).unwrap_err();
    assert!(matches!(err, Error::CredentialsNeeded { .. }), "{err}");
    assert!(err.to_string().contains(&reg.addr), "{err}");
    let err = block(client(Credentials::Anonymous).push_artifact(&r, &artifact(b"name: other\n")))
        .unwrap_err();
    assert!(matches!(err, Error::CredentialsNeeded { .. }), "{err}");
}

/// A token service answering 5xx is the registry being down (the cached verified copy
/// may be used), not credentials refused.
#[test]
fn token_a_token_service_that_is_down_is_the_registry_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let (reg, service) = token_registry(dir.path());
    let r = Reference::parse(&reg.oci("policies/down:1")).unwrap();
    push_and_pull(&basic("alice", "s3cret"), &r).unwrap_or_else(|e| panic!("{e}\n{}", reg.log()));
    service
        .fail_with
        .store(503, std::sync::atomic::Ordering::SeqCst);
    let err = block(client(basic("alice", "s3cret")).pull_artifact(&r)).unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    assert!(err.to_string().contains("503"), "{err}");
}

/// A stub HTTP server on loopback answering every request with `answer` (a status line and
/// headers), recording each request's head.
fn stub(answer: String) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            log.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).into_owned());
            let _ = conn.write_all(
                format!("{answer}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes(),
            );
        }
    });
    (port, seen)
}

/// A registry that redirects to another host never gets that host its credentials, even
/// when the other host asks for them with a challenge of its own.
#[test]
fn credentials_never_follow_a_redirect_to_another_host() {
    let (other, seen_by_other) =
        stub("HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"elsewhere\"".into());
    let (registry, _) = stub(format!(
        "HTTP/1.1 307 Temporary Redirect\r\nLocation: http://localhost:{other}/v2/p/x/manifests/1"
    ));
    let r = Reference::parse(&format!("oci://127.0.0.1:{registry}/p/x:1")).unwrap();
    let err = block(client(basic("alice", "secret")).pull_artifact(&r)).unwrap_err();
    let seen = seen_by_other.lock().unwrap();
    assert!(!seen.is_empty(), "the redirect was followed: {err}");
    assert!(
        seen.iter()
            .all(|h| !h.to_ascii_lowercase().contains("authorization")),
        "credentials sent to the other host: {seen:?}"
    );
}
