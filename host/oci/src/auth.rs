//! Registry credentials: from the environment, else from a docker `config.json` (what
//! `docker login` and `az acr login` write), else anonymous.

use base64::Engine as _;
use std::path::PathBuf;

/// Username for every registry (with [`ENV_PASSWORD`]). For Azure Container Registry
/// with a token from `az acr login --expose-token`, the username is
/// `00000000-0000-0000-0000-000000000000` and the password is the token.
pub const ENV_USERNAME: &str = "COMPUTEGUARD_REGISTRY_USERNAME";
/// Password for [`ENV_USERNAME`].
pub const ENV_PASSWORD: &str = "COMPUTEGUARD_REGISTRY_PASSWORD";
/// A registry access token, sent as `Authorization: Bearer` as it is (no exchange).
pub const ENV_TOKEN: &str = "COMPUTEGUARD_REGISTRY_TOKEN";

/// How to authenticate to a registry. Secrets are never printed (`Debug` hides them).
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credentials {
    /// No credentials: anonymous pulls (and anonymous tokens where the registry gives them).
    #[default]
    Anonymous,
    /// Username and password: sent to a `Basic` challenge, or to the token service of a
    /// `Bearer` challenge.
    Basic {
        /// The username.
        username: String,
        /// The password or token.
        password: String,
    },
    /// An OAuth2 refresh token (docker `config.json`'s `identitytoken`, which
    /// `az acr login` writes): exchanged at the token service with
    /// `grant_type=refresh_token`.
    IdentityToken(String),
    /// A registry access token, sent as it is.
    Bearer(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credentials::Anonymous => "Anonymous",
            Credentials::Basic { .. } => "Basic(..)",
            Credentials::IdentityToken(_) => "IdentityToken(..)",
            Credentials::Bearer(_) => "Bearer(..)",
        })
    }
}

impl Credentials {
    /// The credentials for `registry` (`host[:port]`): [`ENV_TOKEN`], else
    /// [`ENV_USERNAME`] and [`ENV_PASSWORD`], else the docker `config.json` in
    /// `$DOCKER_CONFIG` or `~/.docker` (its `auths` entry for the registry: `auth`
    /// (base64 `user:pass`), `identitytoken`, or `username`/`password`), else anonymous.
    /// Credential helpers (`credsStore`, `credHelpers`) are not run.
    pub fn for_registry(registry: &str) -> Credentials {
        lookup(registry).0
    }

    /// Says which credentials these are, for a message (never the secret): `user `alice``,
    /// `a registry token`, `an identity token`, `no credentials`.
    pub(crate) fn kind(&self) -> String {
        match self {
            Credentials::Anonymous => "no credentials".into(),
            Credentials::Basic { username, .. } => format!("user `{username}`"),
            Credentials::IdentityToken(_) => "an identity token (OAuth2 refresh token)".into(),
            Credentials::Bearer(_) => "a registry token".into(),
        }
    }
}

/// [`Credentials::for_registry`], with where they were found (for messages): the
/// variables, or the `config.json` and its `auths` entry, or where nothing was found.
pub(crate) fn lookup(registry: &str) -> (Credentials, String) {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    if let Some(t) = env(ENV_TOKEN) {
        return (
            Credentials::Bearer(t),
            format!("a registry token from {ENV_TOKEN}"),
        );
    }
    if let (Some(username), Some(password)) = (env(ENV_USERNAME), env(ENV_PASSWORD)) {
        let from = format!("user `{username}` from {ENV_USERNAME} and {ENV_PASSWORD}");
        return (Credentials::Basic { username, password }, from);
    }
    let Some(path) = docker_config_path() else {
        return (
            Credentials::Anonymous,
            "none in the environment, and neither DOCKER_CONFIG nor HOME is set".into(),
        );
    };
    match std::fs::read(&path)
        .ok()
        .and_then(|b| from_docker_config(&b, registry))
    {
        Some(c) => {
            let from = format!("{} from `auths.{registry}` in {}", c.kind(), path.display());
            (c, from)
        }
        None => (
            Credentials::Anonymous,
            format!(
                "none in the environment, no `auths` entry for {registry} in {}",
                path.display()
            ),
        ),
    }
}

fn docker_config_path() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("DOCKER_CONFIG") {
        return Some(PathBuf::from(d).join("config.json"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker/config.json"))
}

/// The credentials a docker `config.json` holds for `registry`.
pub(crate) fn from_docker_config(bytes: &[u8], registry: &str) -> Option<Credentials> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let auths = v.get("auths")?.as_object()?;
    let entry = auths.iter().find_map(|(k, e)| {
        let host = k
            .trim_start_matches("https://")
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or("");
        host.eq_ignore_ascii_case(registry).then_some(e)
    })?;
    let s = |k: &str| {
        entry
            .get(k)
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    if let Some(t) = s("identitytoken") {
        return Some(Credentials::IdentityToken(t));
    }
    if let Some(a) = s("auth") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(a.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (username, password) = text.split_once(':')?;
        return Some(Credentials::Basic {
            username: username.to_string(),
            password: password.to_string(),
        });
    }
    match (s("username"), s("password")) {
        (Some(username), Some(password)) => Some(Credentials::Basic { username, password }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_config_auths_as_docker_login_and_az_acr_login_write_them() {
        // `docker login` (auth = base64 user:pass), `az acr login` (identitytoken, with an
        // auth of the all-zero user and no password).
        let cfg = br#"{"auths": {
            "https://myacr.azurecr.io": {"auth": "MDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAwOg==", "identitytoken": "refresh-me"},
            "localhost:5000": {"auth": "YWxpY2U6czNjcmV0"}
        }}"#;
        assert_eq!(
            from_docker_config(cfg, "myacr.azurecr.io"),
            Some(Credentials::IdentityToken("refresh-me".into()))
        );
        assert_eq!(
            from_docker_config(cfg, "localhost:5000"),
            Some(Credentials::Basic {
                username: "alice".into(),
                password: "s3cret".into()
            })
        );
        assert_eq!(from_docker_config(cfg, "other.io"), None);
        assert_eq!(
            format!("{:?}", Credentials::Bearer("x".into())),
            "Bearer(..)"
        );
    }
}
