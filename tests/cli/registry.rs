//! `push`, `pull`, `sign` and `oci://` references in `check`, against a real registry
//! (Debian's `docker-registry` on loopback; scripts/test.sh installs it).

#[path = "../../host/oci/tests/support/registry.rs"]
mod support;
mod webhook;

use crate::{code, computeguard, stderr, stdout};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use support::Registry;
use webhook::Webhook;

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
    let mut reg = Registry::start();
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
    let reg = Registry::start();
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

/// A wrong pin by digest alone (no tag to compare with): the registry answers 404, and
/// the message says that no artifact with that digest exists in the repository.
#[test]
fn a_digest_pin_naming_nothing_in_the_repository_says_so() {
    let reg = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cache = d.join("cache");
    let overlay = crate::fixtures().join("catalog/overlay.yaml");
    let overlay_ref = reg.oci("catalog/azure:2026-11");
    let out = cg(&cache, &["push", &overlay_ref, overlay.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let zero = format!("sha256:{}", "0".repeat(64));
    // A repository that holds other artifacts, and one that does not exist at all.
    for repo in ["catalog/azure", "catalog/nothing"] {
        let pinned = format!("{}@{zero}", reg.oci(repo));
        let expected = format!(
            "no artifact with digest {zero} exists in repository {}/{repo}",
            reg.addr
        );
        std::fs::write(
            d.join("computeguard.yaml"),
            format!("catalog: [\"{pinned}\"]\n"),
        )
        .unwrap();
        let out = check(d, &cache);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("error: {pinned}: {expected}"))
                && !stderr(&out).contains("not found in the registry"),
            "{}",
            stderr(&out)
        );
        let out = cg(&cache, &["pull", &pinned]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    }
}

/// A catalog overlay that dates the size of the webhook tests' pod.
fn write_overlay(path: &Path, date: &str) {
    std::fs::write(
        path,
        format!(
            "kind: CatalogOverlay\nskus:\n  - name: Standard_ND96isr_H100_v5\n    source: test\n    retirementDate: \"{date}\"\n"
        ),
    )
    .unwrap();
}

/// `push` (and `sign` with `key`, when given) `file` to `reference`: the digest.
fn publish(cache: &Path, reference: &str, file: &Path, key: Option<&str>) -> String {
    let out = cg(cache, &["push", reference, file.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let digest = stdout(&out).trim().to_string();
    if let Some(key) = key {
        let out = cg(cache, &["sign", "--key", key, reference]);
        assert_eq!(
            (code(&out), stdout(&out).trim()),
            (0, digest.as_str()),
            "{}",
            stderr(&out)
        );
    }
    digest
}

/// A `computeguard.yaml` for `serve` in `dir`: the overlay `overlay_ref`, which must be
/// signed by `public`, and `sku-retired` as a warning.
fn webhook_config(dir: &Path, reg: &Registry, overlay_ref: &str, public: &str) {
    std::fs::write(
        dir.join("computeguard.yaml"),
        format!(
            "asOf: 2026-11-22\ncatalog: [{overlay_ref}]\nverify:\n  keys: [{public}]\n  require: [\"oci://{}/*\"]\nwebhook:\n  enforcement:\n    no-infiniband-for-inference: warn\n    sku-retired: warn\n",
            reg.addr
        ),
    )
    .unwrap();
}

const RELOADED: &str = "policies and configuration reloaded";
const RELOAD_FAILED: &str = "RELOAD FAILED";

/// The webhook on a signed overlay from the registry: a new signed version under the
/// same tag is swapped in on SIGHUP; an unsigned one is refused and the previous set
/// keeps serving; with the registry down, the cached verified copy serves. Each step is
/// seen in the verdict, the log and `computeguard_artifact_resolutions_total`.
#[test]
fn serve_reloads_a_moved_signed_tag_refuses_an_unsigned_one_and_serves_the_cache_when_the_registry_is_down()
 {
    let mut reg = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cache = d.join("cache");
    let (key, public) = keypair(d, "team");
    let overlay = d.join("azure.yaml");
    let overlay_ref = reg.oci("catalog/azure:current");
    write_overlay(&overlay, "2026-01-31");
    let first = publish(&cache, &overlay_ref, &overlay, Some(&key));
    webhook_config(d, &reg, &overlay_ref, &public);
    // Only SIGHUP pulls again in this test.
    let mut hook = Webhook::start(d, &cache, &["--registry-refresh", "0"]);
    let w = hook.sku_retired("v1");
    assert!(
        w.contains("retired on 2026-01-31"),
        "the signed overlay: {w}"
    );
    let pulled = hook.resolutions("pulled");
    assert!(pulled >= 1, "the overlay was pulled at start");

    // A new version under the same tag, signed: picked up on SIGHUP.
    write_overlay(&overlay, "2027-06-30");
    let second = publish(&cache, &overlay_ref, &overlay, Some(&key));
    assert_ne!(first, second);
    let from = hook.mark();
    hook.signal("HUP");
    let line = hook.wait_log(&[RELOADED, RELOAD_FAILED], Duration::from_secs(120));
    assert!(line.contains(RELOADED), "{line}");
    assert!(
        hook.lines_since(from)
            .iter()
            .any(|l| l.contains("artifact pulled and verified") && l.contains(&second)),
        "the new digest is logged: {:?}",
        hook.lines_since(from)
    );
    let w = hook.sku_retired("v2");
    assert!(
        w.contains("announced for 2027-06-30"),
        "the new overlay: {w}"
    );
    let pulled_after = hook.resolutions("pulled");
    assert!(pulled_after > pulled, "{pulled} -> {pulled_after}");
    let (pulled, refused) = (pulled_after, hook.resolutions("refused"));
    let failures = hook.metric("computeguard_reloads_total{result=\"failure\"}");

    // An unsigned version under the tag: refused, the previous set keeps serving.
    write_overlay(&overlay, "2028-03-31");
    let unsigned = publish(&cache, &overlay_ref, &overlay, None);
    hook.mark();
    hook.signal("HUP");
    let line = hook.wait_log(&[RELOADED, RELOAD_FAILED], Duration::from_secs(120));
    assert!(
        line.contains(RELOAD_FAILED)
            && line.contains(&format!("{overlay_ref}@{unsigned}: no signature")),
        "{line}"
    );
    let w = hook.sku_retired("v3");
    assert!(
        w.contains("announced for 2027-06-30"),
        "the previous overlay keeps serving: {w}"
    );
    assert_eq!(hook.resolutions("pulled"), pulled);
    assert!(hook.resolutions("refused") > refused);
    assert!(hook.metric("computeguard_reloads_total{result=\"failure\"}") > failures);
    let refused = hook.resolutions("refused");
    let cached = hook.resolutions("cached");

    // The registry unreachable: the cached verified copy (the signed second version, not
    // the refused unsigned one the tag names now) is loaded again, and the log says so.
    reg.stop();
    let from = hook.mark();
    hook.signal("HUP");
    let line = hook.wait_log(&[RELOADED, RELOAD_FAILED], Duration::from_secs(120));
    assert!(line.contains(RELOADED), "{line}");
    assert!(
        hook.lines_since(from).iter().any(|l| l
            .contains("REGISTRY UNREACHABLE: using the cached verified copy")
            && l.contains(&second)),
        "{:?}",
        hook.lines_since(from)
    );
    let w = hook.sku_retired("v2-cached");
    assert!(
        w.contains("announced for 2027-06-30"),
        "the cached copy: {w}"
    );
    assert!(hook.resolutions("cached") > cached);
    assert_eq!(
        (hook.resolutions("pulled"), hook.resolutions("refused")),
        (pulled, refused)
    );
}

/// Without any signal, `serve` pulls its `oci://` references again every
/// `--registry-refresh` seconds and swaps in a tag moved to a new signed version.
#[test]
fn serve_pulls_a_moved_tag_again_every_registry_refresh() {
    let reg = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cache = d.join("cache");
    let (key, public) = keypair(d, "team");
    let overlay = d.join("azure.yaml");
    let overlay_ref = reg.oci("catalog/azure:current");
    write_overlay(&overlay, "2026-01-31");
    publish(&cache, &overlay_ref, &overlay, Some(&key));
    webhook_config(d, &reg, &overlay_ref, &public);
    let mut hook = Webhook::start(d, &cache, &["--registry-refresh", "1"]);
    let w = hook.sku_retired("before");
    assert!(w.contains("retired on 2026-01-31"), "{w}");

    write_overlay(&overlay, "2027-06-30");
    let second = publish(&cache, &overlay_ref, &overlay, Some(&key));
    // Between the push and the signature a refresh may find the new version unsigned and
    // refuse it; the one after the signature swaps it in.
    hook.mark();
    hook.wait_log_all(
        &["artifact pulled and verified", &overlay_ref, &second],
        Duration::from_secs(60),
    );
    hook.wait_log(&[RELOADED], Duration::from_secs(60));
    let w = hook.sku_retired("after");
    assert!(
        w.contains("announced for 2027-06-30"),
        "the new overlay: {w}"
    );
}
