//! `push`, `pull`, `sign` and `oci://` references in `check`, against a real registry
//! (Debian's `docker-registry` on loopback; scripts/test.sh installs it).

#[path = "../../host/oci/tests/support/registry.rs"]
mod support;

use crate::{code, computeguard, stderr, stdout};
use std::path::Path;
use std::process::{Command, Output};
use support::Registry;

fn cg(cache: &Path, args: &[&str]) -> Output {
    computeguard()
        .env("COMPUTEGUARD_OCI_CACHE", cache)
        .env_remove("COMPUTEGUARD_REGISTRY_TOKEN")
        .env_remove("COMPUTEGUARD_REGISTRY_USERNAME")
        .args(args)
        .output()
        .expect("run computeguard")
}

fn keypair(dir: &Path, name: &str) -> (String, String) {
    let key = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    assert!(
        Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "EC",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-out"
            ])
            .arg(&key)
            .status()
            .unwrap()
            .success()
    );
    assert!(
        Command::new("openssl")
            .args(["pkey", "-pubout", "-in"])
            .arg(&key)
            .arg("-out")
            .arg(&public)
            .status()
            .unwrap()
            .success()
    );
    (key.display().to_string(), public.display().to_string())
}

fn check(dir: &Path, cache: &Path) -> Output {
    let config = dir.join("computeguard.yaml");
    let target = crate::root().join("examples/azureml");
    cg(
        cache,
        &[
            "check",
            "--as-of",
            "2026-11-22",
            "--config",
            config.to_str().unwrap(),
            target.to_str().unwrap(),
        ],
    )
}

#[test]
fn signed_packs_and_overlays_from_a_registry_and_every_refusal() {
    let Some(mut reg) = Registry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cache = d.join("cache");
    let out = cg(
        &cache,
        &["new", "pack", "org-rules", "--dir", d.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let pack = d.join("org-rules.yaml");
    let pack_ref = reg.oci("policies/org-rules:1.0");
    let out = cg(&cache, &["push", &pack_ref, pack.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let digest = stdout(&out).trim().to_string();
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    let overlay = crate::fixtures().join("catalog/overlay.yaml");
    let overlay_ref = reg.oci("catalog/azure:2026-11");
    let out = cg(&cache, &["push", &overlay_ref, overlay.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // A broken pack is never published.
    std::fs::write(d.join("broken.yaml"), "name: broken\nrules: [\n").unwrap();
    let out = cg(
        &cache,
        &[
            "push",
            &reg.oci("policies/broken:1"),
            d.join("broken.yaml").to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 2);

    // pull by tag and by digest: the digest and the cached file, holding the source.
    let out = cg(&cache, &["pull", &pack_ref]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = stdout(&out);
    let (pulled, path) = line.trim().split_once(' ').unwrap();
    assert_eq!(pulled, digest);
    assert_eq!(std::fs::read(path).unwrap(), std::fs::read(&pack).unwrap());
    let by_digest = format!("{}@{digest}", reg.oci("policies/org-rules"));
    let out = cg(&cache, &["pull", &by_digest]);
    assert_eq!(stdout(&out), line);

    let (team_key, team_pub) = keypair(d, "team");
    let (other_key, _) = keypair(d, "other");
    std::fs::write(
        d.join("computeguard.yaml"),
        format!(
            "policies: [{pack_ref}]\ncatalog: [{overlay_ref}]\nverify:\n  keys: [{team_pub}]\n  require: [\"oci://{}/*\"]\n",
            reg.addr
        ),
    )
    .unwrap();
    // Unsigned: exit 2 naming the reference and the reason.
    let out = check(d, &cache);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("error: {pack_ref}: ")),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("no signature (no tag sha256-"),
        "{}",
        stderr(&out)
    );
    // Signed by another key.
    let out = cg(&cache, &["sign", "--key", &other_key, &pack_ref]);
    assert_eq!(
        (code(&out), stdout(&out).trim()),
        (0, digest.as_str()),
        "{}",
        stderr(&out)
    );
    let out = check(d, &cache);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("signed, but by no trusted key"),
        "{}",
        stderr(&out)
    );
    // Signed by the team's key (the overlay with cosign's encrypted key format).
    assert_eq!(
        code(&cg(&cache, &["sign", "--key", &team_key, &pack_ref])),
        0
    );
    let der = std::process::Command::new("openssl")
        .args([
            "pkcs8", "-topk8", "-nocrypt", "-outform", "DER", "-in", &team_key,
        ])
        .output()
        .unwrap()
        .stdout;
    let encrypted = d.join("cosign.key");
    std::fs::write(
        &encrypted,
        computeguard_oci::sign::encrypt_cosign_key(&der, b"pw", [1; 32], [2; 24], 12).unwrap(),
    )
    .unwrap();
    let out = computeguard()
        .env("COMPUTEGUARD_OCI_CACHE", &cache)
        .env("COSIGN_PASSWORD", "pw")
        .args(["sign", "--key", encrypted.to_str().unwrap(), &overlay_ref])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = check(d, &cache);
    assert!(matches!(code(&out), 0 | 1), "{}", stderr(&out));
    let out = cg(&cache, &["pull", "--key", &team_pub, &pack_ref]);
    assert!(
        stderr(&out).contains("signature verified with"),
        "{}",
        stderr(&out)
    );

    // A wrong pin.
    let zero = format!("sha256:{}", "0".repeat(64));
    std::fs::write(
        d.join("computeguard.yaml"),
        format!("policies: [\"{pack_ref}@{zero}\"]\n"),
    )
    .unwrap();
    let out = check(d, &cache);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(&format!("but {zero} was expected")),
        "{}",
        stderr(&out)
    );

    // The registry unreachable: the cached verified copy serves, and says so; with an
    // empty cache, check refuses naming the reference.
    std::fs::write(
        d.join("computeguard.yaml"),
        format!("policies: [{pack_ref}]\nverify:\n  keys: [{team_pub}]\n"),
    )
    .unwrap();
    reg.stop();
    let out = check(d, &cache);
    assert!(matches!(code(&out), 0 | 1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("REGISTRY UNREACHABLE: using the cached verified copy"),
        "{}",
        stderr(&out)
    );
    let empty = d.join("empty-cache");
    let out = check(d, &empty);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(&format!("{pack_ref}: the registry is unreachable"))
            && stderr(&out).contains("the cache holds no verified copy"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_tampered_blob_in_the_registry_is_refused() {
    let Some(reg) = Registry::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cache = d.join("cache");
    assert_eq!(
        code(&cg(
            &cache,
            &["new", "pack", "org-rules", "--dir", d.to_str().unwrap()]
        )),
        0
    );
    let pack = d.join("org-rules.yaml");
    let pack_ref = reg.oci("policies/org-rules:1.0");
    assert_eq!(
        code(&cg(&cache, &["push", &pack_ref, pack.to_str().unwrap()])),
        0
    );
    let bytes = std::fs::read(&pack).unwrap();
    let layer = computeguard_oci::Digest::of(&bytes);
    let mut evil = bytes.clone();
    evil[0] ^= 0x20;
    std::fs::write(reg.blob_file(layer.as_str()), evil).unwrap();
    std::fs::write(
        d.join("computeguard.yaml"),
        format!("policies: [{pack_ref}]\n"),
    )
    .unwrap();
    let out = check(d, &cache);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(&format!("error: {pack_ref}: blob {layer}"))
            && stderr(&out).contains("refusing to use it"),
        "{}",
        stderr(&out)
    );
}
