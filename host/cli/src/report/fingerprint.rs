//! The fingerprint of a finding, shared by baselines and SARIF's `partialFingerprints`:
//! stable across runs and line moves, different for different findings.

use super::Finding;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The fingerprint of a finding (64 hex digits).
pub fn fingerprint(f: &Finding) -> String {
    let mut h = Sha256::new();
    for part in [
        "computeguard/v1",
        f.rule.as_str(),
        normalize_path(&f.file).as_str(),
        f.resource.kind.as_str(),
        f.resource.name.as_str(),
        f.source_line.as_deref().unwrap_or("").trim(),
    ] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A file path as baselines and SARIF store it: forward slashes, no leading `./`,
/// relative to the working directory when it is under it.
pub fn normalize_path(file: &str) -> String {
    let path = Path::new(file);
    let rel = if path.is_absolute() {
        std::env::current_dir()
            .ok()
            .and_then(|cwd| path.strip_prefix(&cwd).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| path.to_path_buf())
    } else {
        path.to_path_buf()
    };
    let mut s = rel.to_string_lossy().replace('\\', "/");
    while let Some(rest) = s.strip_prefix("./") {
        s = rest.to_string();
    }
    s
}
