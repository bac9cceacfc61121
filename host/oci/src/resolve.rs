//! What `check` and `serve` do with an `oci://` reference: pull the artifact, check the
//! pin and the signatures, and hand back a verified local file; when the registry cannot
//! be reached, the cached copy, verified again (digests and signatures) as if it had just
//! been pulled.

use crate::artifact::{Descriptor, Kind, Manifest, artifact_layer, media};
use crate::client::block_on;
use crate::limits::{MAX_MANIFEST_BYTES, MAX_SIGNATURE_PAYLOAD_BYTES, blob_limit};
use crate::sign::{PublicKey, SigningKey, add_signature, signature_tag};
use crate::{Cache, Client, Digest, Error, Reference, Result};
use std::path::PathBuf;

/// At most this many signatures are read for one artifact.
pub const MAX_SIGNATURES: usize = 64;

/// Which references must be signed, and by which keys.
#[derive(Clone, Debug, Default)]
pub struct Trust {
    /// The trusted public keys: a required signature must be by one of them.
    pub keys: Vec<PublicKey>,
    require: Option<globset::GlobSet>,
}

impl Trust {
    /// `keys`, and the references that must be signed: `require` glob patterns matched
    /// against `oci://REGISTRY/REPOSITORY` and against the reference as written (`*`
    /// crosses `/`). With no patterns, every reference must be signed when keys are given,
    /// and none when not.
    pub fn new(keys: Vec<PublicKey>, require: &[String]) -> Result<Trust> {
        if require.is_empty() {
            return Ok(Trust {
                keys,
                require: None,
            });
        }
        let mut b = globset::GlobSetBuilder::new();
        for p in require {
            // Registry names are case-insensitive (the reference is read lowercased) and
            // repositories lowercase: `oci://MyACR.azurecr.io/*` must not match nothing.
            let glob = globset::GlobBuilder::new(p).case_insensitive(true).build();
            b.add(glob.map_err(|e| Error::Format {
                what: format!("verify.require pattern `{p}`"),
                reason: e.to_string(),
            })?);
        }
        let set = b.build().map_err(|e| Error::Format {
            what: "verify.require".into(),
            reason: e.to_string(),
        })?;
        Ok(Trust {
            keys,
            require: Some(set),
        })
    }

    /// Whether `r` must be signed.
    pub fn requires(&self, r: &Reference) -> bool {
        match &self.require {
            None => !self.keys.is_empty(),
            Some(set) => {
                set.is_match(format!("oci://{}", r.repository_name()))
                    || set.is_match(r.to_string())
            }
        }
    }
}

/// Where a resolved artifact came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// Pulled from the registry now.
    Registry,
    /// The registry could not be reached: the cached copy, verified again.
    Cache {
        /// Why the registry could not be reached.
        reason: String,
    },
}

/// A reference resolved to a verified local file.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The reference as given.
    pub reference: Reference,
    /// The manifest's digest.
    pub digest: Digest,
    /// What the artifact holds.
    pub kind: Kind,
    /// The layer's digest (a component's digest, a pack's source digest).
    pub layer: Digest,
    /// The verified file (in the cache, with the extension the loaders read).
    pub path: PathBuf,
    /// The key file whose signature was verified, when the reference must be signed.
    pub signed_by: Option<String>,
    /// Pulled now, or the cached copy.
    pub source: Source,
}

/// Resolves references with a client, a cache and a trust policy.
#[derive(Debug)]
pub struct Resolver {
    /// The registry client.
    pub client: Client,
    /// The artifact cache.
    pub cache: Cache,
    /// Which references must be signed, by which keys.
    pub trust: Trust,
}

impl Resolver {
    /// Pulls `r` (blocking), or takes the cached verified copy when the registry cannot
    /// be reached. Refuses a manifest that is not the pinned digest, a blob that is not
    /// its digest, an artifact of another kind, and, when `r` must be signed, one without
    /// a signature by a trusted key.
    pub fn resolve(&self, r: &Reference) -> Result<Resolved> {
        block_on(self.resolve_async(r))?
    }

    /// [`Resolver::resolve`], async.
    pub async fn resolve_async(&self, r: &Reference) -> Result<Resolved> {
        match self.online(r).await {
            Err(e) if e.is_unreachable() => self.offline(r, e.to_string()),
            other => other,
        }
    }

    async fn online(&self, r: &Reference) -> Result<Resolved> {
        // A tag and a pin: the tag is fetched and must name the pinned digest.
        let fetch = match &r.tag {
            Some(t) => r.with_tag(t),
            None => r.clone(),
        };
        let (digest, manifest_bytes) = self.client.pull_manifest(&fetch).await?;
        if let Some(pin) = &r.digest
            && pin != &digest
        {
            return Err(Error::DigestMismatch {
                what: format!("{fetch} (pinned)"),
                expected: pin.to_string(),
                actual: digest.to_string(),
            });
        }
        let pulled = self
            .client
            .pull_contents(r, digest.clone(), manifest_bytes)
            .await?;
        let signed_by = if self.trust.requires(r) {
            Some(self.verify_online(r, &digest).await?)
        } else {
            None
        };
        self.cache.put(&pulled.manifest_bytes)?;
        self.cache.put(&pulled.config)?;
        self.cache.put(&pulled.bytes)?;
        if let Some(t) = &r.tag {
            self.cache.set_tag(r, t, &digest)?;
        }
        let layer = pulled.layer.digest()?;
        let path = self.cache.materialize(&layer, pulled.kind, &pulled.bytes)?;
        Ok(Resolved {
            reference: r.clone(),
            digest,
            kind: pulled.kind,
            layer,
            path,
            signed_by,
            source: Source::Registry,
        })
    }

    fn signature_error(r: &Reference, digest: &Digest, reason: String) -> Error {
        Error::Signature {
            reference: match &r.digest {
                Some(_) => r.to_string(),
                None => format!("{r}@{digest}"),
            },
            reason,
        }
    }

    async fn verify_online(&self, r: &Reference, digest: &Digest) -> Result<String> {
        if self.trust.keys.is_empty() {
            return Err(Self::signature_error(
                r,
                digest,
                "must be signed (verify.require) but verify.keys names no key".into(),
            ));
        }
        let tag = signature_tag(digest);
        let sig_ref = r.with_tag(&tag);
        let (sig_digest, bytes) = match self.client.pull_manifest(&sig_ref).await {
            Ok(m) => m,
            Err(Error::NotFound { .. }) => {
                return Err(Self::signature_error(
                    r,
                    digest,
                    format!("no signature (no tag {tag} in {})", r.repository_name()),
                ));
            }
            Err(e) => return Err(e),
        };
        let manifest = Manifest::parse(&bytes, &format!("signature {sig_ref}"))?;
        let mut layers = Vec::new();
        for layer in manifest.layers.iter().take(MAX_SIGNATURES) {
            if layer.media_type != media::SIMPLE_SIGNING {
                continue;
            }
            let payload = self
                .client
                .pull_blob(r, layer, MAX_SIGNATURE_PAYLOAD_BYTES)
                .await?;
            self.cache.put(&payload)?;
            layers.push((layer.clone(), payload));
        }
        self.cache.put(&bytes)?;
        self.cache.set_tag(r, &tag, &sig_digest)?;
        crate::sign::verify(&self.trust.keys, digest, &layers)
            .map_err(|reason| Self::signature_error(r, digest, reason))
    }

    fn offline(&self, r: &Reference, reason: String) -> Result<Resolved> {
        let nothing = |why: &str| Error::NothingCached {
            reference: r.to_string(),
            reason: if why.is_empty() {
                reason.clone()
            } else {
                format!("{reason}; {why}")
            },
        };
        let digest = match (&r.digest, &r.tag) {
            (Some(d), _) => d.clone(),
            (None, Some(t)) => self.cache.tag(r, t).ok_or_else(|| nothing(""))?,
            (None, None) => return Err(nothing("")),
        };
        let manifest_bytes = self
            .cache
            .get(&digest, MAX_MANIFEST_BYTES)?
            .ok_or_else(|| nothing(""))?;
        let what = format!("cached {}@{digest}", r.repository_name());
        let manifest = Manifest::parse(&manifest_bytes, &what)?;
        let (kind, layer) = artifact_layer(&manifest, &what)?;
        let layer_digest = layer.digest()?;
        let bytes = self
            .cache
            .get(&layer_digest, blob_limit(&layer.media_type).unwrap_or(0))?
            .ok_or_else(|| nothing("the cache holds the manifest but not its layer"))?;
        let signed_by = if self.trust.requires(r) {
            Some(self.verify_offline(r, &digest)?)
        } else {
            None
        };
        let path = self.cache.materialize(&layer_digest, kind, &bytes)?;
        Ok(Resolved {
            reference: r.clone(),
            digest,
            kind,
            layer: layer_digest,
            path,
            signed_by,
            source: Source::Cache { reason },
        })
    }

    fn verify_offline(&self, r: &Reference, digest: &Digest) -> Result<String> {
        let none = |why: &str| Self::signature_error(r, digest, why.to_string());
        let tag = signature_tag(digest);
        let sig_digest = self
            .cache
            .tag(r, &tag)
            .ok_or_else(|| none("no signature in the cache, and the registry is unreachable"))?;
        let bytes = self
            .cache
            .get(&sig_digest, MAX_MANIFEST_BYTES)?
            .ok_or_else(|| none("no signature in the cache, and the registry is unreachable"))?;
        let manifest = Manifest::parse(&bytes, "cached signature")?;
        let mut layers: Vec<(Descriptor, Vec<u8>)> = Vec::new();
        for layer in manifest.layers.iter().take(MAX_SIGNATURES) {
            if layer.media_type != media::SIMPLE_SIGNING {
                continue;
            }
            if let Some(p) = self
                .cache
                .get(&layer.digest()?, MAX_SIGNATURE_PAYLOAD_BYTES)?
            {
                layers.push((layer.clone(), p));
            }
        }
        crate::sign::verify(&self.trust.keys, digest, &layers)
            .map_err(|reason| Self::signature_error(r, digest, reason))
    }
}

/// Signs the manifest `r` names with `key` and stores the signature as cosign does
/// (`sha256-<hex>.sig` in the same repository, added to the signatures already there).
/// Returns the signed manifest digest and the signature tag.
pub async fn sign(client: &Client, r: &Reference, key: &SigningKey) -> Result<(Digest, String)> {
    let (digest, _) = client.pull_manifest(r).await?;
    let payload = crate::sign::payload(r, &digest);
    let signature = key.sign(&payload);
    let tag = signature_tag(&digest);
    let sig_ref = r.with_tag(&tag);
    let existing = match client.pull_manifest(&sig_ref).await {
        Ok((_, bytes)) => Some(Manifest::parse(&bytes, &format!("signature {sig_ref}"))?),
        Err(Error::NotFound { .. }) => None,
        Err(e) => return Err(e),
    };
    let (manifest, config) = add_signature(existing, &payload, &signature)?;
    client.push_blob(r, &payload).await?;
    client.push_blob(r, &config).await?;
    client.push_manifest(r, &tag, &manifest.to_bytes()?).await?;
    Ok((digest, tag))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_require_pattern_matches_the_registry_whatever_its_case() {
        let trust = Trust::new(Vec::new(), &["oci://MyACR.azurecr.io/*".into()]).unwrap();
        let r = Reference::parse("oci://myacr.azurecr.io/policies/gpu-extra:1.2").unwrap();
        assert!(trust.requires(&r));
        let r = Reference::parse("oci://MYACR.AZURECR.IO/policies/gpu-extra:1.2").unwrap();
        assert!(trust.requires(&r));
        let other = Reference::parse("oci://other.azurecr.io/policies/gpu-extra:1.2").unwrap();
        assert!(!trust.requires(&other));
    }
}
