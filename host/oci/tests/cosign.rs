//! Compatibility with cosign, against artifacts the cosign tool made (not computeguard's
//! own output): encrypted private keys `cosign generate-key-pair` wrote, with the
//! passwords their repositories' tests state, and signatures `cosign sign --key` made,
//! with their public keys. The bytes and where each comes from are in
//! `tests/fixtures/cosign/SOURCES.tsv`; the cosign binary itself is not packaged for
//! Debian, so these recorded artifacts are the evidence.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use base64::Engine as _;
use computeguard_oci::Digest;
use computeguard_oci::artifact::{Descriptor, media};
use computeguard_oci::sign::{self, PublicKey, SIGNATURE_ANNOTATION, SigningKey};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cosign")
        .join(name)
}

fn text(name: &str) -> String {
    std::fs::read_to_string(fixture(name)).unwrap()
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

fn public(name: &str) -> PublicKey {
    PublicKey::read(&fixture(name)).unwrap()
}

/// `payload` as the one layer of a cosign signature manifest, signed `signature_b64`.
fn layer(payload: &[u8], signature_b64: &str) -> (Descriptor, Vec<u8>) {
    let mut d = Descriptor::of(media::SIMPLE_SIGNING, payload);
    d.annotations
        .insert(SIGNATURE_ANNOTATION.into(), signature_b64.to_string());
    (d, payload.to_vec())
}

/// `b64` with the byte at `at` of its decoded form flipped, encoded again.
fn flip_signature_byte(b64: &str, at: usize) -> String {
    let std = base64::engine::general_purpose::STANDARD;
    let mut der = std.decode(b64.trim()).unwrap();
    der[at] ^= 0x01;
    std.encode(der)
}

// ---- encrypted private keys cosign generated ----

/// cosign's own test key (pkg/cosign/keys_test.go `pemsigstorekey`, password "hello",
/// which cosign's LoadPrivateKey accepts): the current `ENCRYPTED SIGSTORE PRIVATE KEY`
/// label, scrypt N = 32768.
#[test]
fn cosign_sigstore_labelled_key_decrypts_with_its_password_only() {
    let pem = text("cosign-keys_test-pemsigstorekey.key");
    let key = SigningKey::parse(&pem, Some(b"hello")).expect("the password cosign's test uses");
    let err = SigningKey::parse(&pem, Some(b"wrong")).unwrap_err();
    assert!(err.contains("wrong password"), "{err}");
    let err = SigningKey::parse(&pem, None).unwrap_err();
    assert!(err.contains("COSIGN_PASSWORD"), "{err}");
    // The key signs what its own public half verifies, through the file reader too.
    let p = b"payload";
    assert!(key.public("derived").verifies(p, &key.sign(p)));
    let read = SigningKey::read(
        &fixture("cosign-keys_test-pemsigstorekey.key"),
        Some(b"hello"),
    )
    .unwrap();
    assert!(key.public("derived").verifies(p, &read.sign(p)));
}

/// A key `cosign generate-key-pair` wrote with an empty password (sigstore-rs's
/// fixture `cosign_generated_encrypted_empty_private.key`, scrypt N = 65536): the empty
/// password is a password (COSIGN_PASSWORD set to ""), not a missing one.
#[test]
fn a_cosign_key_with_an_empty_password_decrypts_with_the_empty_password() {
    let pem = text("sigstore-rs-cosign_generated_encrypted_empty_private.key");
    let key = SigningKey::parse(&pem, Some(b"")).expect("the empty password");
    let err = SigningKey::parse(&pem, Some(b"x")).unwrap_err();
    assert!(err.contains("wrong password"), "{err}");
    let p = b"payload";
    assert!(key.public("derived").verifies(p, &key.sign(p)));
}

/// cosign's own test key labelled `ENCRYPTED COSIGN PRIVATE KEY` whose plaintext is a
/// SEC1 EC key, not PKCS#8 (keys_test.go `pemcosigneckey`): cosign's LoadPrivateKey
/// refuses it ("use ParseECPrivateKey instead"), and computeguard refuses it too, saying
/// that the password was right and what the key holds instead.
#[test]
fn a_cosign_key_holding_a_sec1_key_is_refused_as_cosign_refuses_it() {
    let pem = text("cosign-keys_test-pemcosigneckey.key");
    let err = SigningKey::parse(&pem, Some(b"hello")).unwrap_err();
    assert!(!err.contains("wrong password"), "{err}");
    assert!(
        err.contains("the password is right")
            && err.contains("SEC1")
            && err.contains("not PKCS#8")
            && !err.contains("not an EC P-256 key"),
        "{err}"
    );
    let err = SigningKey::parse(&pem, Some(b"wrong")).unwrap_err();
    assert!(err.contains("wrong password"), "{err}");
}

/// cosign's own test key with the older `ENCRYPTED COSIGN PRIVATE KEY` label
/// (keys_test.go `pemcosignkey`, commented "COSIGN labeled RSA key" there, but its
/// plaintext is a PKCS#8 EC P-256 key; cosign's LoadPrivateKey accepts it with "hello").
#[test]
fn cosign_cosign_labelled_key_decrypts_with_its_password_only() {
    let pem = text("cosign-keys_test-pemcosignkey.key");
    let key = SigningKey::parse(&pem, Some(b"hello")).expect("the password cosign's test uses");
    let err = SigningKey::parse(&pem, Some(b"hell")).unwrap_err();
    assert!(err.contains("wrong password"), "{err}");
    let p = b"payload";
    assert!(key.public("derived").verifies(p, &key.sign(p)));
}

// ---- signatures `cosign sign --key` made ----

/// The payload `cosign sign --key cosign.key registry-testing.svc.lan/busybox` signed,
/// read back from the registry (`crane blob`), and the signature annotation of its layer,
/// as kubewarden/policy-fetcher records them; sigstore-rs records a second signature of
/// the same payload by another cosign key.
#[test]
fn real_cosign_signatures_verify_over_the_real_payload() {
    let payload = bytes("busybox-payload.json");
    let digest =
        Digest::parse("sha256:f3cfc9d0dbf931d3db4685ec659b7ac68e2a578219da4aae65427886e649b06b")
            .unwrap();
    for (key, sig) in [
        ("busybox-kubewarden.pub", "busybox-kubewarden.sig"),
        ("busybox-sigstore-rs.pub", "busybox-sigstore-rs.sig"),
    ] {
        let k = public(key);
        let s = text(sig);
        assert!(k.verifies(&payload, &s), "{key}");
        // What `verify` does with a signature manifest holding this layer.
        assert_eq!(
            sign::verify(std::slice::from_ref(&k), &digest, &[layer(&payload, &s)]),
            Ok(k.name.clone()),
            "{key}"
        );
        // One byte of the payload changed (a digit of the digest), or of the signature.
        let mut changed = payload.clone();
        let at = changed.len() - 40;
        changed[at] = if changed[at] == b'0' { b'1' } else { b'0' };
        assert!(!k.verifies(&changed, &s), "{key}");
        assert!(!k.verifies(&payload, &flip_signature_byte(&s, 30)), "{key}");
        // A signature of another digest is not one of this digest.
        let other = Digest::of(b"another manifest");
        let err =
            sign::verify(std::slice::from_ref(&k), &other, &[layer(&payload, &s)]).unwrap_err();
        assert!(err.contains("another digest"), "{err}");
    }
    // Each signature is its own key's: the other key refuses it.
    let err = sign::verify(
        &[public("busybox-sigstore-rs.pub")],
        &digest,
        &[layer(&payload, &text("busybox-kubewarden.sig"))],
    )
    .unwrap_err();
    assert!(err.contains("signed, but by no trusted key"), "{err}");
}

/// A payload /usr/bin/cosign generated (containers/image records it as such), with a
/// registry port in its reference: `verify` reads the digest out of it. No signature of it
/// is recorded in text, so only the reading is shown: with no trusted key it is
/// "signed, but by no trusted key", which `verify` says only once it has read the digest.
#[test]
fn a_cosign_generated_payload_is_read_for_its_digest() {
    let payload = bytes("containers-image-cosign-payload.json");
    let digest =
        Digest::parse("sha256:43955d6857268cc948ae9b370b221091057de83c4962da0826f9a2bdc9bd6b44")
            .unwrap();
    let any_key = public("busybox-kubewarden.pub");
    let err = sign::verify(
        std::slice::from_ref(&any_key),
        &digest,
        &[layer(&payload, "MEUCIQ==")],
    )
    .unwrap_err();
    assert!(err.contains("signed, but by no trusted key"), "{err}");
    let err = sign::verify(
        &[any_key],
        &Digest::of(b"other"),
        &[layer(&payload, "MEUCIQ==")],
    )
    .unwrap_err();
    assert!(err.contains("another digest"), "{err}");
}

/// Every fixture is listed in SOURCES.tsv with its repository, path and licence.
#[test]
fn every_fixture_has_its_source() {
    let sources = text("SOURCES.tsv");
    let listed: Vec<&str> = sources
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    for row in sources.lines() {
        assert_eq!(row.split('\t').count(), 6, "{row}");
    }
    for entry in std::fs::read_dir(fixture("")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name != "SOURCES.tsv" {
            assert!(
                listed.contains(&name.as_str()),
                "{name} is not in SOURCES.tsv"
            );
        }
    }
}
