//! `oci://` references in `computeguard.yaml` and on the command line: policies and
//! catalog overlays published to an OCI registry, pulled on every load (start and
//! reload), pinned, signature-checked and replaced by their verified cached files before
//! anything is compiled or run. When the registry cannot be reached, the cached verified
//! copy is used (logged, and counted in [`metrics_text`]); with none, the load fails
//! naming the reference. See `docs/distribution.md`.
//!
//! Configuration:
//!
//! ```yaml
//! policies: [oci://myacr.azurecr.io/policies/gpu-extra:1.2]
//! catalog: [oci://myacr.azurecr.io/catalog/azure:2026-11]
//! verify:
//!   keys: [keys/cosign.pub]                # an artifact must be signed by one of these
//!   require: ["oci://myacr.azurecr.io/*"]  # references that must be signed
//! registries:
//!   insecure: [registry.internal:5000]     # plain HTTP (loopback registries always are)
//! ```

use crate::config::{Config, PolicyRef};
pub use crate::verify::OciConfig;
use computeguard_oci::artifact::Kind;
use computeguard_oci::resolve::{Resolved, Resolver, Source, Trust};
use computeguard_oci::sign::PublicKey;
use computeguard_oci::{Cache, Client, ClientOptions, Reference};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// An `oci://` reference that could not be used: the reference and the reason.
#[derive(Debug, thiserror::Error)]
#[error("{reference}: {error}")]
pub struct OciError {
    /// The reference as configured (or `verify.keys`).
    pub reference: String,
    /// Why it was refused.
    pub error: computeguard_oci::Error,
}

static FROM_CACHE: AtomicU64 = AtomicU64::new(0);
static REFUSED: AtomicU64 = AtomicU64::new(0);
static PULLED: AtomicU64 = AtomicU64::new(0);

/// Prometheus text (no `# EOF`) of this process's artifact resolutions:
/// `computeguard_artifact_resolutions_total{result="pulled"|"cached"|"refused"}`
/// (`cached`: the registry was unreachable and the verified cached copy was used).
pub fn metrics_text() -> String {
    let mut s = String::from(
        "# HELP computeguard_artifact_resolutions Resolutions of oci:// policies and overlays, by result (pulled, cached: the registry was unreachable and the verified cached copy was used, refused)\n# TYPE computeguard_artifact_resolutions counter\n",
    );
    for (result, n) in [
        ("pulled", &PULLED),
        ("cached", &FROM_CACHE),
        ("refused", &REFUSED),
    ] {
        s.push_str(&format!(
            "computeguard_artifact_resolutions_total{{result=\"{result}\"}} {}\n",
            n.load(Ordering::Relaxed)
        ));
    }
    s
}

/// Whether a configured path is an OCI reference.
pub fn is_oci(path: &Path) -> bool {
    path.to_str().is_some_and(Reference::is_oci)
}

/// The reference a policy entry names (its `digest`, if any, is the manifest pin).
fn reference_text(p: &PolicyRef) -> String {
    let path = p.path.to_string_lossy().to_string();
    match &p.digest {
        Some(d) if !path.contains('@') => format!("{path}@{d}"),
        _ => path,
    }
}

/// Whether the configuration or `extra` name any `oci://` reference.
pub fn has_references(config: &Config, extra: &[PolicyRef]) -> bool {
    config.policies.iter().chain(extra).any(|p| is_oci(&p.path))
        || config.context.catalog.iter().any(|p| is_oci(p))
}

/// The configuration and extra policies with every `oci://` reference replaced by its
/// verified cached file (a policy pinned to its layer digest, which the loader checks
/// again before compiling), or `None` when there is none.
pub fn resolve(
    config: &Config,
    extra: &[PolicyRef],
) -> Result<Option<(Config, Vec<PolicyRef>)>, OciError> {
    if !has_references(config, extra) {
        return Ok(None);
    }
    let keys = config
        .oci
        .keys
        .iter()
        .map(|k| PublicKey::read(k))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| OciError {
            reference: "verify.keys".into(),
            error,
        })?;
    let trust = Trust::new(keys, &config.oci.require).map_err(|error| OciError {
        reference: "verify.require".into(),
        error,
    })?;
    let client = Client::new(ClientOptions {
        insecure: config.oci.insecure.clone(),
        ..ClientOptions::default()
    })
    .map_err(|error| OciError {
        reference: "registry client".into(),
        error,
    })?;
    let resolver = Resolver {
        client,
        cache: Cache::open_default(),
        trust,
    };
    let one = |text: &str, policy: bool| -> Result<Resolved, OciError> {
        let wrap = |error| {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(reference = text, error = %error, "artifact refused");
            OciError {
                reference: text.to_string(),
                error,
            }
        };
        let r = Reference::parse(text).map_err(wrap)?;
        let resolved = resolver.resolve(&r).map_err(wrap)?;
        let fits = match resolved.kind {
            Kind::Component | Kind::Pack => policy,
            Kind::Overlay { .. } => !policy,
        };
        if !fits {
            return Err(wrap(computeguard_oci::Error::Format {
                what: format!("{r}@{}", resolved.digest),
                reason: format!(
                    "is a {}, named where a {} is expected",
                    resolved.kind.describe(),
                    if policy { "policy" } else { "catalog overlay" }
                ),
            }));
        }
        match &resolved.source {
            Source::Registry => {
                PULLED.fetch_add(1, Ordering::Relaxed);
                tracing::info!(reference = text, digest = %resolved.digest, "artifact pulled and verified");
            }
            Source::Cache { reason } => {
                FROM_CACHE.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    reference = text,
                    digest = %resolved.digest,
                    reason = reason.as_str(),
                    "REGISTRY UNREACHABLE: using the cached verified copy"
                );
            }
        }
        Ok(resolved)
    };
    let policy = |p: &PolicyRef| -> Result<PolicyRef, OciError> {
        if !is_oci(&p.path) {
            return Ok(p.clone());
        }
        let resolved = one(&reference_text(p), true)?;
        Ok(PolicyRef {
            path: resolved.path,
            digest: Some(resolved.layer.to_string()),
        })
    };
    let mut out = config.clone();
    out.policies = config
        .policies
        .iter()
        .map(policy)
        .collect::<Result<_, _>>()?;
    let extra = extra.iter().map(policy).collect::<Result<_, _>>()?;
    out.context.catalog = Vec::new();
    for p in &config.context.catalog {
        match p.to_str() {
            Some(t) if Reference::is_oci(t) => {
                let r = one(t, false)?;
                // The loader checks the file against the verified layer digest when it
                // reads it, so a cached copy changed after verification is refused.
                out.context.pins.push((r.path.clone(), r.layer.to_string()));
                out.context.catalog.push(r.path);
            }
            _ => out.context.catalog.push(p.clone()),
        }
    }
    Ok(Some((out, extra)))
}
