//! The client against a real registry: the CNCF distribution registry (Debian's
//! `docker-registry`) on loopback, and `skopeo` for interoperability.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

#[path = "support/registry.rs"]
mod support;

use computeguard_oci::artifact::{Artifact, Kind, media};
use computeguard_oci::resolve::{Resolver, Source, Trust};
use computeguard_oci::sign::{PublicKey, SigningKey};
use computeguard_oci::{Cache, Client, ClientOptions, Digest, Error, Reference};
use std::process::Command;
use support::Registry;

fn client() -> Client {
    Client::new(ClientOptions {
        credentials: Some(computeguard_oci::Credentials::Anonymous),
        ..ClientOptions::default()
    })
    .unwrap()
}

fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

fn component() -> Vec<u8> {
    wat::parse_str("(component (core module))").unwrap()
}

fn push(reg: &Registry, path: &str, kind: Kind, bytes: Vec<u8>) -> (Reference, Digest) {
    let r = Reference::parse(&reg.oci(path)).unwrap();
    let a = Artifact::new(kind, bytes, "file").unwrap();
    let d = block(client().push_artifact(&r, &a)).unwrap();
    (r, d)
}

fn keypair(dir: &std::path::Path, name: &str) -> (SigningKey, PublicKey) {
    let key = dir.join(format!("{name}.key"));
    let out = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
        ])
        .arg(&key)
        .output()
        .unwrap();
    assert!(out.status.success());
    let public = dir.join(format!("{name}.pub"));
    let out = Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public)
        .output()
        .unwrap();
    assert!(out.status.success());
    (
        SigningKey::read(&key, None).unwrap(),
        PublicKey::read(&public).unwrap(),
    )
}

fn resolver(cache: &std::path::Path, keys: Vec<PublicKey>, require: &[&str]) -> Resolver {
    Resolver {
        client: client(),
        cache: Cache::new(cache),
        trust: Trust::new(
            keys,
            &require.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap(),
    }
}

#[test]
fn push_then_pull_by_tag_and_by_digest() {
    let reg = Registry::start();
    let wasm = component();
    let (r, d) = push(&reg, "policies/gpu:1.0", Kind::Component, wasm.clone());
    let pulled = block(client().pull_artifact(&r)).unwrap();
    assert_eq!(
        (pulled.digest.clone(), pulled.kind),
        (d.clone(), Kind::Component)
    );
    assert_eq!(pulled.bytes, wasm);
    assert_eq!(pulled.manifest.config.media_type, media::WASM_CONFIG);
    let config: serde_json::Value = serde_json::from_slice(&pulled.config).unwrap();
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip2");
    assert_eq!(config["layerDigests"][0], Digest::of(&wasm).to_string());
    let by_digest = block(client().pull_artifact(&r.with_digest(&d))).unwrap();
    assert_eq!(by_digest.bytes, wasm);
    let head = block(client().head_manifest(&r)).unwrap();
    assert_eq!(head.map(|h| h.0), Some(d));

    // A pack, stored as its source.
    let (r, _) = push(&reg, "packs/extra:2", Kind::Pack, b"name: extra\n".to_vec());
    let pulled = block(client().pull_artifact(&r)).unwrap();
    assert_eq!(
        (pulled.kind, pulled.bytes.as_slice()),
        (Kind::Pack, &b"name: extra\n"[..])
    );
    let missing = block(client().pull_artifact(&r.with_tag("nope"))).unwrap_err();
    assert!(matches!(missing, Error::NotFound { .. }), "{missing}");
}

#[test]
fn a_tampered_blob_and_a_wrong_pin_are_refused() {
    let reg = Registry::start();
    let (r, d) = push(&reg, "packs/t:1", Kind::Pack, b"name: tampered\n".to_vec());
    let cache = tempfile::tempdir().unwrap();
    let res = resolver(cache.path(), vec![], &[]);
    let wrong = Digest::of(b"something else");
    let err = res
        .resolve(&Reference::parse(&format!("{r}@{wrong}")).unwrap())
        .unwrap_err();
    assert!(
        matches!(&err, Error::DigestMismatch { expected, actual, .. } if expected == wrong.as_str() && actual == d.as_str()),
        "{err}"
    );

    let layer = Digest::of(b"name: tampered\n");
    std::fs::write(reg.blob_file(layer.as_str()), b"name: evil!!!!\n").unwrap();
    let err = res.resolve(&r).unwrap_err();
    assert!(
        matches!(&err, Error::DigestMismatch { expected, .. } if expected == layer.as_str()),
        "{err}"
    );
    assert!(err.to_string().contains("refusing to use it"), "{err}");
}

#[test]
fn signatures_missing_by_another_key_and_good_and_the_cache_when_unreachable() {
    let mut reg = Registry::start();
    let keys = tempfile::tempdir().unwrap();
    let (signer, public) = keypair(keys.path(), "team");
    let (other, _) = keypair(keys.path(), "other");
    let (r, d) = push(
        &reg,
        "catalog/azure:2026-11",
        Kind::Overlay { json: false },
        b"skus: []\n".to_vec(),
    );
    let cache = tempfile::tempdir().unwrap();
    let require = [&*format!("oci://{}/*", reg.addr)];
    let res = resolver(cache.path(), vec![public.clone()], &require);

    let err = res.resolve(&r).unwrap_err();
    assert!(
        err.to_string().contains("no signature (no tag sha256-"),
        "{err}"
    );
    assert!(err.to_string().contains(&format!("{r}@{d}")), "{err}");

    block(computeguard_oci::resolve::sign(&client(), &r, &other)).unwrap();
    let err = res.resolve(&r).unwrap_err();
    assert!(
        err.to_string().contains("signed, but by no trusted key"),
        "{err}"
    );

    let (signed, tag) = block(computeguard_oci::resolve::sign(&client(), &r, &signer)).unwrap();
    assert_eq!(
        (signed, tag.clone()),
        (d.clone(), format!("sha256-{}.sig", d.hex()))
    );
    let ok = res.resolve(&r).unwrap();
    assert_eq!(ok.signed_by.as_deref(), Some(public.name.as_str()));
    assert_eq!(
        (ok.digest.clone(), ok.source.clone()),
        (d.clone(), Source::Registry)
    );
    assert_eq!(std::fs::read(&ok.path).unwrap(), b"skus: []\n");
    assert!(ok.path.extension().is_some_and(|e| e == "yaml"));
    // Both signatures are kept, as cosign keeps them.
    let sig = block(client().pull_artifact(&r.with_tag(&tag)));
    assert!(sig.is_err(), "a signature manifest is not an artifact");
    let (_, bytes) = block(client().pull_manifest(&r.with_tag(&tag))).unwrap();
    let m: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(m["layers"].as_array().unwrap().len(), 2);

    // Unsigned references need no signature when `require` does not match them.
    let (plain, _) = push(&reg, "other/thing:1", Kind::Pack, b"name: x\n".to_vec());
    let res_plain = resolver(cache.path(), vec![public.clone()], &["oci://nowhere/*"]);
    assert!(res_plain.resolve(&plain).unwrap().signed_by.is_none());

    // The registry goes away: the cached copy, verified again, for the tag and the digest.
    reg.stop();
    let cached = res.resolve(&r).unwrap();
    assert!(
        matches!(cached.source, Source::Cache { .. }),
        "{:?}",
        cached.source
    );
    assert_eq!(
        (cached.digest.clone(), cached.path.clone()),
        (d.clone(), ok.path.clone())
    );
    assert!(res.resolve(&r.with_digest(&d)).is_ok());
    // Nothing cached: refused, naming the reference.
    let empty = tempfile::tempdir().unwrap();
    let err = resolver(empty.path(), vec![public], &require)
        .resolve(&r)
        .unwrap_err();
    assert!(matches!(err, Error::NothingCached { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("{r}: the registry is unreachable")),
        "{err}"
    );
}

fn skopeo(args: &[&str]) -> std::process::Output {
    let out = Command::new(support::skopeo().unwrap())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "skopeo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn skopeo_reads_what_computeguard_pushed_and_computeguard_pulls_what_skopeo_pushed() {
    let reg = Registry::start();
    support::skopeo()
        .expect("skopeo is not installed; scripts/test.sh installs it (apt-get install -y skopeo)");
    let wasm = component();
    let (r, d) = push(&reg, "policies/interop:1", Kind::Component, wasm.clone());
    let src = format!("docker://{}/policies/interop:1", reg.addr);
    let raw = skopeo(&["inspect", "--raw", "--tls-verify=false", &src]);
    assert_eq!(Digest::of(&raw.stdout), d, "skopeo reads the same manifest");
    let m: serde_json::Value = serde_json::from_slice(&raw.stdout).unwrap();
    assert_eq!(m["config"]["mediaType"], media::WASM_CONFIG);
    assert_eq!(m["layers"][0]["mediaType"], media::WASM_LAYER);
    let config = skopeo(&["inspect", "--config", "--raw", "--tls-verify=false", &src]);
    let config: serde_json::Value = serde_json::from_slice(&config.stdout).unwrap();
    assert_eq!(config["os"], "wasip2");
    // skopeo copies it to another repository, digest preserved; computeguard pulls the copy.
    let dst = format!("docker://{}/copies/interop:1", reg.addr);
    skopeo(&[
        "copy",
        "--preserve-digests",
        "--src-tls-verify=false",
        "--dest-tls-verify=false",
        &src,
        &dst,
    ]);
    let copy = Reference::parse(&reg.oci("copies/interop:1")).unwrap();
    let pulled = block(client().pull_artifact(&copy)).unwrap();
    assert_eq!((pulled.digest, pulled.bytes), (d, wasm.clone()));

    // An OCI layout written by hand in the CNCF Wasm layout, pushed by skopeo.
    let dir = tempfile::tempdir().unwrap();
    let layout = dir.path().join("layout");
    let blobs = layout.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    let blob = |bytes: &[u8]| {
        let d = Digest::of(bytes);
        std::fs::write(blobs.join(d.hex()), bytes).unwrap();
        d
    };
    let layer = blob(&wasm);
    let config = format!(
        r#"{{"created":"2026-01-01T00:00:00Z","author":null,"architecture":"wasm","os":"wasip2","layerDigests":["{layer}"],"component":{{"exports":[],"imports":[],"target":null}}}}"#
    );
    let config_digest = blob(config.as_bytes());
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{{"mediaType":"application/vnd.wasm.config.v0+json","digest":"{config_digest}","size":{}}},"layers":[{{"mediaType":"application/wasm","digest":"{layer}","size":{}}}]}}"#,
        config.len(),
        wasm.len()
    );
    let manifest_digest = blob(manifest.as_bytes());
    std::fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    std::fs::write(
        layout.join("index.json"),
        format!(
            r#"{{"schemaVersion":2,"manifests":[{{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"{manifest_digest}","size":{},"annotations":{{"org.opencontainers.image.ref.name":"1"}}}}]}}"#,
            manifest.len()
        ),
    )
    .unwrap();
    let dst = format!("docker://{}/from-skopeo/policy:1", reg.addr);
    skopeo(&[
        "copy",
        "--preserve-digests",
        "--dest-tls-verify=false",
        &format!("oci:{}:1", layout.display()),
        &dst,
    ]);
    let theirs = Reference::parse(&reg.oci("from-skopeo/policy:1")).unwrap();
    let pulled = block(client().pull_artifact(&theirs)).unwrap();
    assert_eq!(pulled.digest, manifest_digest);
    assert_eq!((pulled.kind, pulled.bytes), (Kind::Component, wasm));
    let _ = r;
}
