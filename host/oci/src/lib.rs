//! computeguard's OCI distribution client: policies (Wasm components and rule packs) and
//! catalog overlays published to an OCI registry (Azure Container Registry, the CNCF
//! distribution registry, ...), pulled into a verified content-addressed cache, and
//! signed and verified the way cosign's key-pair signatures are.
//!
//! - [`Reference`], `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`.
//! - [`Client`], the distribution API (blobs and manifests, push and pull, `HEAD`),
//!   anonymous, Basic or Bearer-token auth ([`Credentials`]), HTTPS with rustls and the
//!   Mozilla roots, plain HTTP only for loopback registries and the ones marked insecure.
//!   Every size is bounded ([`limits`]) and every blob's digest is verified before it is
//!   used.
//! - [`artifact`], the layouts: a component in the CNCF Wasm OCI artifact layout, a rule
//!   pack and a catalog overlay as OCI artifacts of computeguard's own media types.
//! - [`Cache`], content-addressed files, hashed again on every read.
//! - [`sign`], cosign-compatible signatures (`sha256-<hex>.sig`, simple-signing payload,
//!   `dev.cosignproject.cosign/signature`) with EC P-256 keys.
//! - [`resolve`], what `check` and `serve` do with a reference: pull, verify the pin and
//!   the signatures, fall back on the cached verified copy when the registry is
//!   unreachable.

#![deny(missing_docs)]

pub mod artifact;
mod auth;
mod cache;
mod client;
mod digest;
pub mod limits;
mod reference;
pub mod resolve;
pub mod sign;

pub use auth::{Credentials, ENV_PASSWORD, ENV_TOKEN, ENV_USERNAME};
pub use cache::{Cache, ENV_CACHE_DIR};
pub use client::{Client, ClientOptions, Pulled, block_on};
pub use digest::{Digest, sha256};
pub use reference::Reference;

/// Everything that can go wrong talking to a registry, reading the cache or checking a
/// signature. Each message names what was being done and, where there is one, the
/// reference.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A reference that is not `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`.
    #[error("`{reference}` is not an OCI reference: {reason}")]
    InvalidReference {
        /// The text as given.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A digest that is not `sha256:` and 64 hex digits.
    #[error("`{0}` is not a digest; expected sha256: followed by 64 hex digits")]
    InvalidDigest(String),
    /// The registry could not be reached (connection refused, DNS, TLS, timeout) or
    /// answered with a server error: the cached verified copy may be used instead.
    #[error("registry {registry} is unreachable: {reason}")]
    Unreachable {
        /// `host[:port]`.
        registry: String,
        /// What the connection said.
        reason: String,
    },
    /// Plain HTTP was needed for a registry that is neither loopback nor marked insecure.
    #[error(
        "registry {0} would be reached over plain HTTP; only loopback registries and the ones `registries.insecure` lists may be"
    )]
    InsecureRefused(String),
    /// The registry answered, but not with what was asked for.
    #[error("{what}: the registry answered {status}{}", body_hint(.body))]
    Registry {
        /// What was being done (`GET manifest oci://...`).
        what: String,
        /// The HTTP status.
        status: u16,
        /// The start of the answer's body (the registry's error code and message).
        body: String,
    },
    /// The manifest or blob asked for does not exist.
    #[error("{what}: not found in the registry")]
    NotFound {
        /// What was asked for.
        what: String,
    },
    /// A reference by digest alone (`oci://REGISTRY/REPOSITORY@sha256:HEX`, no tag) whose
    /// manifest the repository does not hold: a wrong pin, or a manifest deleted since.
    #[error(
        "no artifact with digest {digest} exists in repository {repository}; check the pin (a wrong digest, or a manifest deleted from the registry)"
    )]
    DigestNotFound {
        /// The digest asked for.
        digest: String,
        /// `REGISTRY/REPOSITORY`.
        repository: String,
    },
    /// The registry asks for credentials and there are none (nothing in the environment,
    /// no `auths` entry for it in the docker `config.json`).
    #[error(
        "{what}: registry {registry} needs credentials and there are none ({searched}); set {} and {} (or {}), or log in to it (`docker login {registry}`, `az acr login --name NAME`) to write them to the docker config.json{}",
        auth::ENV_USERNAME, auth::ENV_PASSWORD, auth::ENV_TOKEN, body_hint(.body)
    )]
    CredentialsNeeded {
        /// What was being done.
        what: String,
        /// `host[:port]`.
        registry: String,
        /// Where credentials were looked for.
        searched: String,
        /// The registry's or the token service's answer.
        body: String,
    },
    /// Credentials were refused.
    #[error("{what}: the registry refused the credentials ({status}), {credentials}{}", body_hint(.body))]
    Unauthorized {
        /// What was being done.
        what: String,
        /// 401 or 403.
        status: u16,
        /// Which credentials were sent and where they came from (never the secret).
        credentials: String,
        /// The start of the answer's body.
        body: String,
    },
    /// An answer larger than its limit.
    #[error("{what} is larger than its {limit}-byte limit; refusing to read it")]
    TooLarge {
        /// What was being read.
        what: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// Content whose digest is not the one it was asked for by (a tampered blob, a
    /// manifest that is not the pinned one).
    #[error("{what} has digest {actual}, but {expected} was expected; refusing to use it")]
    DigestMismatch {
        /// What was read.
        what: String,
        /// The digest it was asked for, or pinned to.
        expected: String,
        /// The digest of what arrived.
        actual: String,
    },
    /// A manifest or config that is not what computeguard reads.
    #[error("{what}: {reason}")]
    Format {
        /// What was read.
        what: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A signing or verification key that cannot be read.
    #[error("key `{path}`: {reason}")]
    Key {
        /// The key file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The artifact must be signed and no signature by a trusted key was found.
    #[error("{reference}: {reason}")]
    Signature {
        /// The reference, with its digest.
        reference: String,
        /// Missing, or signed by no trusted key, or the signature does not cover this digest.
        reason: String,
    },
    /// The registry is unreachable and the cache holds no verified copy.
    #[error(
        "{reference}: the registry is unreachable ({reason}) and the cache holds no verified copy; refusing to go on without it"
    )]
    NothingCached {
        /// The reference.
        reference: String,
        /// Why the registry could not be reached.
        reason: String,
    },
    /// A file of the cache or a local file could not be read or written.
    #[error("{what} `{path}`: {error}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
}

fn body_hint(body: &str) -> String {
    if body.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", body.trim())
    }
}

impl Error {
    /// True when the registry could not be reached at all (the only case in which a
    /// cached verified copy is used instead).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Error::Unreachable { .. })
    }
}

/// The result of this crate's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
