//! cosign-compatible key-pair signatures.
//!
//! A signature is stored as cosign stores it: in the artifact's repository, under the tag
//! `sha256-<hex of the manifest digest>.sig`, an OCI image manifest whose layers are
//! simple-signing payloads (`application/vnd.dev.cosign.simplesigning.v1+json`), each with
//! its ECDSA P-256 / SHA-256 signature (ASN.1 DER, base64) in the annotation
//! `dev.cosignproject.cosign/signature`. The payload names the manifest digest
//! (`critical.image.docker-manifest-digest`), which is what a verification checks: a
//! signature of another artifact, or by a key not trusted, is no signature.
//!
//! Keys: an unencrypted PKCS#8 EC P-256 private key in PEM (`openssl genpkey -algorithm
//! EC -pkeyopt ec_paramgen_curve:P-256`), or cosign's own encrypted format
//! (`ENCRYPTED SIGSTORE PRIVATE KEY` or the older `ENCRYPTED COSIGN PRIVATE KEY`: scrypt
//! and NaCl secretbox around a PKCS#8 key); public keys in PEM (SubjectPublicKeyInfo, as
//! `cosign.pub` and `openssl pkey -pubout` write them). Keyless signatures (Fulcio
//! certificates, Rekor entries) are not verified.

use crate::artifact::{Descriptor, Manifest, media};
use crate::{Digest, Error, Reference, Result};
use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The annotation holding a layer's signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The simple-signing payload's `critical.type`.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The environment variable holding an encrypted key's password (as cosign reads it).
pub const ENV_PASSWORD: &str = "COSIGN_PASSWORD";

/// The tag of the signatures of the manifest `digest`: `sha256-<hex>.sig`.
pub fn signature_tag(digest: &Digest) -> String {
    format!("sha256-{}.sig", digest.hex())
}

/// A private key that signs.
pub struct SigningKey(p256::ecdsa::SigningKey);

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SigningKey(..)")
    }
}

/// A trusted public key, with the file it was read from (named in messages).
#[derive(Clone, Debug)]
pub struct PublicKey {
    key: p256::ecdsa::VerifyingKey,
    /// The file the key was read from.
    pub name: String,
}

/// The blocks of a PEM text: (label, DER bytes).
fn pem_blocks(text: &str) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(label) = line
            .trim()
            .strip_prefix("-----BEGIN ")
            .and_then(|l| l.strip_suffix("-----"))
        else {
            continue;
        };
        let mut b64 = String::new();
        for l in lines.by_ref() {
            let l = l.trim();
            if l.starts_with("-----END ") {
                break;
            }
            if !l.contains(':') {
                b64.push_str(l);
            }
        }
        if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b64) {
            out.push((label.to_string(), der));
        }
    }
    out
}

#[derive(Serialize, Deserialize)]
struct Encrypted {
    kdf: Kdf,
    cipher: Cipher,
    #[serde(with = "b64")]
    ciphertext: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Kdf {
    name: String,
    params: ScryptParams,
    #[serde(with = "b64")]
    salt: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
#[allow(non_snake_case)]
struct ScryptParams {
    N: u64,
    r: u32,
    p: u32,
}

#[derive(Serialize, Deserialize)]
struct Cipher {
    name: String,
    #[serde(with = "b64")]
    nonce: Vec<u8>,
}

mod b64 {
    use base64::Engine as _;
    pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s: String = serde::Deserialize::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(serde::de::Error::custom)
    }
}

/// The largest scrypt cost accepted from a key file (cosign writes 2^15 or 2^16).
const MAX_SCRYPT_LOG_N: u8 = 20;

fn scrypt_key(password: &[u8], kdf: &Kdf) -> std::result::Result<[u8; 32], String> {
    if kdf.name != "scrypt" {
        return Err(format!("key derivation `{}`, expected scrypt", kdf.name));
    }
    let n = kdf.params.N;
    if !n.is_power_of_two() || n < 2 {
        return Err(format!("scrypt N = {n} is not a power of two"));
    }
    let log_n = n.trailing_zeros() as u8;
    if log_n > MAX_SCRYPT_LOG_N || kdf.params.r > 32 || kdf.params.p > 16 {
        return Err("scrypt parameters above the accepted cost (N 2^20, r 32, p 16)".into());
    }
    let params = scrypt::Params::new(log_n, kdf.params.r, kdf.params.p, 32)
        .map_err(|e| format!("scrypt parameters: {e}"))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password, &kdf.salt, &params, &mut key).map_err(|e| e.to_string())?;
    Ok(key)
}

/// Encrypts a PKCS#8 DER private key in cosign's format (the body of an `ENCRYPTED
/// SIGSTORE PRIVATE KEY` PEM block) with the given salt (32 bytes), nonce (24 bytes) and
/// scrypt cost `log_n`. Returns the PEM text.
pub fn encrypt_cosign_key(
    pkcs8_der: &[u8],
    password: &[u8],
    salt: [u8; 32],
    nonce: [u8; 24],
    log_n: u8,
) -> Result<String> {
    use crypto_secretbox::aead::{Aead as _, KeyInit as _};
    let kdf = Kdf {
        name: "scrypt".into(),
        params: ScryptParams {
            N: 1u64 << log_n,
            r: 8,
            p: 1,
        },
        salt: salt.to_vec(),
    };
    let bad = |reason: String| Error::Key {
        path: "(new key)".into(),
        reason,
    };
    let key = scrypt_key(password, &kdf).map_err(bad)?;
    let ciphertext = crypto_secretbox::XSalsa20Poly1305::new(&key.into())
        .encrypt(&nonce.into(), pkcs8_der)
        .map_err(|_| bad("encryption failed".into()))?;
    let json = serde_json::to_vec(&Encrypted {
        kdf,
        cipher: Cipher {
            name: "nacl/secretbox".into(),
            nonce: nonce.to_vec(),
        },
        ciphertext,
    })
    .map_err(|e| bad(e.to_string()))?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(json);
    let mut pem = String::from("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(chunk));
        pem.push('\n');
    }
    pem.push_str("-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n");
    Ok(pem)
}

/// Why a decrypted cosign key is refused. cosign encrypts a PKCS#8 key; one holding a
/// SEC1 EC key (`openssl ecparam -genkey` output encrypted by hand, or an old import)
/// is refused by cosign's own loader as well, so it is named as such rather than as a
/// wrong curve.
fn decrypted_not_pkcs8(plain: &[u8], e: p256::pkcs8::Error) -> String {
    if p256::SecretKey::from_sec1_der(plain).is_ok() {
        return "the password is right, but the decrypted key is a SEC1 EC P-256 key, not PKCS#8 \
                as cosign writes it (cosign refuses it too); import it again with `cosign \
                import-key-pair`, or convert it with `openssl pkcs8 -topk8 -nocrypt`"
            .into();
    }
    format!(
        "the password is right, but the decrypted key is not a PKCS#8 EC P-256 key: {e} (only ECDSA P-256 keys are supported)"
    )
}

impl SigningKey {
    /// Reads a private key: unencrypted PKCS#8 (`PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`),
    /// or cosign's encrypted format, decrypted with `password` (from [`ENV_PASSWORD`]).
    pub fn read(path: &Path, password: Option<&[u8]>) -> Result<SigningKey> {
        let bad = |reason: String| Error::Key {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        Self::parse(&text, password).map_err(bad)
    }

    /// Parses a private key's PEM text (see [`SigningKey::read`]).
    pub fn parse(text: &str, password: Option<&[u8]>) -> std::result::Result<SigningKey, String> {
        use crypto_secretbox::aead::{Aead as _, KeyInit as _};
        let blocks = pem_blocks(text);
        let Some((label, der)) = blocks.first() else {
            return Err("no PEM block; expected an EC P-256 private key (PKCS#8 PEM or cosign's encrypted key)".into());
        };
        let secret = match label.as_str() {
            "PRIVATE KEY" => p256::SecretKey::from_pkcs8_der(der)
                .map_err(|e| format!("not a PKCS#8 EC P-256 private key: {e}"))?,
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(der)
                .map_err(|e| format!("not an EC P-256 private key: {e}"))?,
            "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
                let password = password.ok_or(
                    "an encrypted cosign key needs its password in COSIGN_PASSWORD".to_string(),
                )?;
                let enc: Encrypted = serde_json::from_slice(der)
                    .map_err(|e| format!("not cosign's encrypted key format: {e}"))?;
                if enc.cipher.name != "nacl/secretbox" || enc.cipher.nonce.len() != 24 {
                    return Err(format!(
                        "cipher `{}`, expected nacl/secretbox",
                        enc.cipher.name
                    ));
                }
                let key = scrypt_key(password, &enc.kdf)?;
                let nonce = crypto_secretbox::Nonce::from_slice(&enc.cipher.nonce);
                let plain = crypto_secretbox::XSalsa20Poly1305::new(&key.into())
                    .decrypt(nonce, enc.ciphertext.as_slice())
                    .map_err(|_| {
                        "cannot decrypt the key: wrong password (COSIGN_PASSWORD)?".to_string()
                    })?;
                p256::SecretKey::from_pkcs8_der(&plain)
                    .map_err(|e| decrypted_not_pkcs8(&plain, e))?
            }
            other => {
                return Err(format!(
                    "a `{other}` PEM block; expected PRIVATE KEY (PKCS#8 EC P-256) or ENCRYPTED SIGSTORE PRIVATE KEY"
                ));
            }
        };
        Ok(SigningKey(p256::ecdsa::SigningKey::from(&secret)))
    }

    /// The base64 ASN.1 DER ECDSA signature of `payload` (SHA-256), as cosign writes it.
    pub fn sign(&self, payload: &[u8]) -> String {
        let sig: p256::ecdsa::Signature = self.0.sign(payload);
        base64::engine::general_purpose::STANDARD.encode(sig.to_der().as_bytes())
    }

    /// The public key, as a [`PublicKey`] named `name`.
    pub fn public(&self, name: &str) -> PublicKey {
        PublicKey {
            key: *self.0.verifying_key(),
            name: name.to_string(),
        }
    }
}

impl PublicKey {
    /// Reads a PEM public key (SubjectPublicKeyInfo, EC P-256).
    pub fn read(path: &Path) -> Result<PublicKey> {
        let bad = |reason: String| Error::Key {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        let blocks = pem_blocks(&text);
        let der = blocks
            .iter()
            .find(|(l, _)| l == "PUBLIC KEY")
            .map(|(_, d)| d)
            .ok_or_else(|| bad("no PUBLIC KEY PEM block".into()))?;
        let key = p256::ecdsa::VerifyingKey::from_public_key_der(der)
            .map_err(|e| bad(format!("not an EC P-256 public key: {e}")))?;
        Ok(PublicKey {
            key,
            name: path.display().to_string(),
        })
    }

    /// Whether `signature_b64` (base64 ASN.1 DER) is this key's signature of `payload`.
    pub fn verifies(&self, payload: &[u8], signature_b64: &str) -> bool {
        let Ok(der) = base64::engine::general_purpose::STANDARD.decode(signature_b64.trim()) else {
            return false;
        };
        let Ok(sig) = p256::ecdsa::Signature::from_der(&der) else {
            return false;
        };
        self.key.verify(payload, &sig).is_ok()
    }
}

#[derive(Serialize, Deserialize)]
struct SimpleSigning {
    critical: Critical,
    optional: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize)]
struct Critical {
    identity: Identity,
    image: Image,
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize, Deserialize)]
struct Identity {
    #[serde(rename = "docker-reference")]
    docker_reference: String,
}

#[derive(Serialize, Deserialize)]
struct Image {
    #[serde(rename = "docker-manifest-digest")]
    docker_manifest_digest: String,
}

/// The simple-signing payload cosign signs for the manifest `digest` of `r`'s repository.
pub fn payload(r: &Reference, digest: &Digest) -> Vec<u8> {
    serde_json::to_vec(&SimpleSigning {
        critical: Critical {
            identity: Identity {
                docker_reference: r.repository_name(),
            },
            image: Image {
                docker_manifest_digest: digest.to_string(),
            },
            kind: PAYLOAD_TYPE.into(),
        },
        optional: None,
    })
    .unwrap_or_default()
}

/// The signature manifest with one more layer (`payload` and its signature), and the
/// config blob it names: cosign's layout, keeping the layers already there.
pub fn add_signature(
    existing: Option<Manifest>,
    payload: &[u8],
    signature_b64: &str,
) -> Result<(Manifest, Vec<u8>)> {
    let mut layer = Descriptor::of(media::SIMPLE_SIGNING, payload);
    layer
        .annotations
        .insert(SIGNATURE_ANNOTATION.into(), signature_b64.to_string());
    let mut layers = existing.map(|m| m.layers).unwrap_or_default();
    if !layers.contains(&layer) {
        layers.push(layer);
    }
    let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "config": {}
    }))
    .map_err(|e| Error::Format {
        what: "signature config".into(),
        reason: e.to_string(),
    })?;
    let manifest = Manifest::new(Descriptor::of(media::OCI_IMAGE_CONFIG, &config), layers);
    Ok((manifest, config))
}

/// Which trusted key signed the manifest `digest`, given the signature manifest's
/// layers and their payloads: the first layer whose payload names `digest` and whose
/// signature one of `keys` verifies. The error says why none did.
pub fn verify(
    keys: &[PublicKey],
    digest: &Digest,
    layers: &[(Descriptor, Vec<u8>)],
) -> std::result::Result<String, String> {
    let mut other_digest = 0;
    let mut untrusted = 0;
    for (layer, payload) in layers {
        if layer.media_type != media::SIMPLE_SIGNING {
            continue;
        }
        let Some(sig) = layer.annotations.get(SIGNATURE_ANNOTATION) else {
            continue;
        };
        let Ok(p) = serde_json::from_slice::<SimpleSigning>(payload) else {
            continue;
        };
        if p.critical.kind != PAYLOAD_TYPE
            || Digest::parse(&p.critical.image.docker_manifest_digest)
                .ok()
                .as_ref()
                != Some(digest)
        {
            other_digest += 1;
            continue;
        }
        match keys.iter().find(|k| k.verifies(payload, sig)) {
            Some(k) => return Ok(k.name.clone()),
            None => untrusted += 1,
        }
    }
    Err(if untrusted > 0 {
        format!(
            "signed, but by no trusted key ({untrusted} signature{} checked against {})",
            if untrusted == 1 { "" } else { "s" },
            keys.iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else if other_digest > 0 {
        format!("the signatures found sign another digest, not {digest}")
    } else {
        "no signature".into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKCS8: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOo1xfKYq3TGXJhO5
9FgFfgQpPDFI3OQ8yLn/vyeM56OhRANCAARWcYOckO8WcfRV3E/8JZzPW+g4nOZ+
OPbRQKt2YVVKNMBEZHWx1XSsWQ4QYdWe1fby7SZ7oYVppW4HnU3w5dPI
-----END PRIVATE KEY-----
";

    #[test]
    fn a_signature_verifies_for_its_digest_and_key_only() {
        let key = SigningKey::parse(PKCS8, None).unwrap();
        let r = Reference::parse("oci://localhost:5000/p/x:1").unwrap();
        let d = Digest::of(b"manifest");
        let p = payload(&r, &d);
        assert_eq!(
            String::from_utf8(p.clone()).unwrap(),
            format!(
                r#"{{"critical":{{"identity":{{"docker-reference":"localhost:5000/p/x"}},"image":{{"docker-manifest-digest":"{d}"}},"type":"cosign container image signature"}},"optional":null}}"#
            )
        );
        let (m, _) = add_signature(None, &p, &key.sign(&p)).unwrap();
        let layers: Vec<_> = m.layers.iter().map(|l| (l.clone(), p.clone())).collect();
        let public = key.public("k.pub");
        assert_eq!(
            verify(std::slice::from_ref(&public), &d, &layers),
            Ok("k.pub".into())
        );
        let other = Digest::of(b"other");
        assert!(
            verify(&[public], &other, &layers)
                .unwrap_err()
                .contains("another digest")
        );
    }

    #[test]
    fn cosign_encrypted_keys_decrypt_with_their_password_only() {
        let der = pem_blocks(PKCS8).remove(0).1;
        let pem = encrypt_cosign_key(&der, b"hunter2", [7; 32], [9; 24], 10).unwrap();
        assert!(pem.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"));
        let key = SigningKey::parse(&pem, Some(b"hunter2")).unwrap();
        let plain = SigningKey::parse(PKCS8, None).unwrap();
        assert_eq!(key.public("a").key, plain.public("b").key);
        assert!(
            SigningKey::parse(&pem, Some(b"wrong"))
                .unwrap_err()
                .contains("wrong password")
        );
        assert!(
            SigningKey::parse(&pem, None)
                .unwrap_err()
                .contains("COSIGN_PASSWORD")
        );
    }
}
