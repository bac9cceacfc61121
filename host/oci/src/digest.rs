//! `sha256:<hex>` content digests.

use crate::Error;
use sha2::Digest as _;

/// A `sha256:<64 lower-case hex>` digest (the only algorithm computeguard accepts).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// Parses `sha256:<64 hex>` (upper-case hex is lower-cased).
    pub fn parse(s: &str) -> Result<Digest, Error> {
        let hex = s.strip_prefix("sha256:").unwrap_or("");
        if hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()) {
            Ok(Digest(format!("sha256:{}", hex.to_ascii_lowercase())))
        } else {
            Err(Error::InvalidDigest(s.to_string()))
        }
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(format!("sha256:{}", sha256(bytes)))
    }

    /// The 64 hex digits.
    pub fn hex(&self) -> &str {
        self.0.strip_prefix("sha256:").unwrap_or(&self.0)
    }

    /// `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Checks that `bytes` have this digest; `what` names them in the error.
    pub fn verify(&self, bytes: &[u8], what: &str) -> Result<(), Error> {
        let actual = Digest::of(bytes);
        if &actual == self {
            Ok(())
        } else {
            Err(Error::DigestMismatch {
                what: what.to_string(),
                expected: self.0.clone(),
                actual: actual.0,
            })
        }
    }
}

impl std::fmt::Display for Digest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    let d = sha2::Sha256::digest(bytes);
    let mut s = String::with_capacity(64);
    for b in d {
        s.push_str(&format!("{b:02x}"));
    }
    s
}
