//! `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`.

use crate::{Digest, Error};

/// A parsed OCI reference. At least a tag or a digest is present; with both, the
/// digest wins and the tag is checked against it (a pin).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reference {
    /// `host[:port]`, lower-cased.
    pub registry: String,
    /// `path/to/repo`, lower-case as the distribution spec requires.
    pub repository: String,
    /// The tag, when given.
    pub tag: Option<String>,
    /// The manifest digest, when given (a pin).
    pub digest: Option<Digest>,
}

impl Reference {
    /// The scheme every reference starts with.
    pub const SCHEME: &'static str = "oci://";

    /// Whether `s` is meant as an OCI reference (starts with `oci://`).
    pub fn is_oci(s: &str) -> bool {
        s.starts_with(Self::SCHEME)
    }

    /// Parses `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`.
    pub fn parse(s: &str) -> Result<Reference, Error> {
        let bad = |reason: &str| Error::InvalidReference {
            reference: s.to_string(),
            reason: reason.to_string(),
        };
        let rest = s
            .strip_prefix(Self::SCHEME)
            .ok_or_else(|| bad("it must start with oci://"))?;
        let (rest, digest) = match rest.split_once('@') {
            Some((r, d)) => (r, Some(Digest::parse(d)?)),
            None => (rest, None),
        };
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("expected REGISTRY/REPOSITORY after oci://"))?;
        if registry.is_empty()
            || !registry
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
        {
            return Err(bad(
                "the registry must be a host name with an optional :port",
            ));
        }
        // The tag follows the last ':' after the last '/'.
        let last = path.rsplit('/').next().unwrap_or(path);
        let (repository, tag) = match last.rsplit_once(':') {
            Some((_, tag)) => (&path[..path.len() - tag.len() - 1], Some(tag.to_string())),
            None => (path, None),
        };
        if repository.is_empty()
            || repository.split('/').any(|c| {
                c.is_empty()
                    || !c.chars().all(|ch| {
                        ch.is_ascii_lowercase() || ch.is_ascii_digit() || "._-".contains(ch)
                    })
            })
        {
            return Err(bad(
                "the repository must be lower-case path components of letters, digits, '.', '_' and '-'",
            ));
        }
        if let Some(t) = &tag
            && (t.is_empty()
                || t.len() > 128
                || !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
                || t.starts_with(['.', '-']))
        {
            return Err(bad(
                "a tag is 1-128 letters, digits, '.', '_' or '-', not starting with '.' or '-'",
            ));
        }
        if tag.is_none() && digest.is_none() {
            return Err(bad("name a tag (:TAG) or a digest (@sha256:HEX)"));
        }
        Ok(Reference {
            registry: registry.to_ascii_lowercase(),
            repository: repository.to_string(),
            tag,
            digest,
        })
    }

    /// The same repository at `digest` (no tag).
    pub fn with_digest(&self, digest: &Digest) -> Reference {
        Reference {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: None,
            digest: Some(digest.clone()),
        }
    }

    /// The same repository at `tag`.
    pub fn with_tag(&self, tag: &str) -> Reference {
        Reference {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: Some(tag.to_string()),
            digest: None,
        }
    }

    /// What the manifest is fetched by: the digest when there is one, else the tag.
    pub fn manifest_ref(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d.to_string(),
            (None, Some(t)) => t.clone(),
            (None, None) => "latest".to_string(),
        }
    }

    /// `REGISTRY/REPOSITORY` (what cosign writes as the docker-reference).
    pub fn repository_name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// Whether the registry is on the loopback interface (`localhost`, `127.x.x.x`, `[::1]`).
    pub fn is_loopback(&self) -> bool {
        let host = match self.registry.rsplit_once(':') {
            Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
            _ => &self.registry,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_and_print() {
        let hex = "a".repeat(64);
        let r = Reference::parse("oci://MyAcr.azurecr.io/policies/gpu-extra:1.2").unwrap();
        assert_eq!(r.registry, "myacr.azurecr.io");
        assert_eq!(r.repository, "policies/gpu-extra");
        assert_eq!(r.tag.as_deref(), Some("1.2"));
        assert_eq!(
            r.to_string(),
            "oci://myacr.azurecr.io/policies/gpu-extra:1.2"
        );
        let r = Reference::parse(&format!("oci://127.0.0.1:5000/p/x@sha256:{hex}")).unwrap();
        assert_eq!(
            (r.registry.as_str(), r.tag.as_ref()),
            ("127.0.0.1:5000", None)
        );
        assert!(r.is_loopback());
        assert_eq!(r.manifest_ref(), format!("sha256:{hex}"));
        let r = Reference::parse(&format!("oci://localhost:5000/x:1@sha256:{hex}")).unwrap();
        assert_eq!(r.tag.as_deref(), Some("1"));
        assert!(r.digest.is_some() && r.is_loopback());
        assert!(
            !Reference::parse("oci://myacr.azurecr.io/x:1")
                .unwrap()
                .is_loopback()
        );
        for bad in [
            "myacr.azurecr.io/x:1",
            "oci://myacr.azurecr.io/x",
            "oci://myacr.azurecr.io/X:1",
            "oci://myacr.azurecr.io:1",
            "oci://r/x@sha256:abc",
            "oci://r/x:-bad",
            "oci:///x:1",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad}");
        }
    }
}
