//! Compiled-artifact cache: `<dir>/<sha256 of component[-variant]>-<engine settings>.cwasm`.
//! The variant `-prepared` holds the pre-initialised form of a CEL policy.
//!
//! A `.cwasm` only loads into an engine with identical settings, so the key mixes
//! in wasmtime's `precompile_compatibility_hash`. Loading a `.cwasm` executes its
//! machine code: the directory must be writable only by the user (it is created
//! with mode 0700), and a file that fails to load is recompiled and replaced.

use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::component::Component;

/// Hex SHA-256 of the component bytes.
pub fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn key(engine: &wasmtime::Engine, digest: &str) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("{digest}-{:016x}", h.finish())
}

/// The cached artifact stored under `key_digest`, if there is a usable one.
pub fn cached(
    engine: &wasmtime::Engine,
    dir: Option<&Path>,
    key_digest: &str,
) -> Option<Component> {
    let path = dir?.join(format!("{}.cwasm", key(engine, key_digest)));
    if !path.exists() {
        return None;
    }
    // SAFETY: the file was written by `store` below from `Component::serialize` of
    // the same engine configuration (the key includes the compatibility hash), in a
    // directory created private to the user. Wasmtime additionally checks the
    // header and version before using the code.
    #[allow(unsafe_code)]
    match unsafe { Component::deserialize_file(engine, &path) } {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "discarding unusable cached artifact");
            None
        }
    }
}

/// Loads the cached artifact stored under `key` (a content digest, possibly with a
/// suffix naming a variant), or runs `compile` and caches what it returns.
pub fn load_or_compile(
    engine: &wasmtime::Engine,
    dir: Option<&Path>,
    key_digest: &str,
    compile: impl FnOnce() -> wasmtime::Result<Component>,
) -> wasmtime::Result<Component> {
    let Some(dir) = dir else {
        return compile();
    };
    if let Some(component) = cached(engine, Some(dir), key_digest) {
        return Ok(component);
    }
    let path = dir.join(format!("{}.cwasm", key(engine, key_digest)));
    let component = compile()?;
    if let Err(e) = store(dir, &path, &component) {
        tracing::debug!(dir = %dir.display(), error = %e, "artifact cache not written");
        return Ok(component);
    }
    // Serve from the file just written, as a warm start does: its code is mapped from
    // the file (page cache, shared, reclaimable) rather than held in anonymous memory
    // the compiler allocated, and the compiler's heap is freed with `component`. A
    // server that compiled at start then stays near a warm start's RSS
    // (docs/benchmarks.md, section 10). A file that does not read back (`cached` logs
    // why) leaves the compiled artifact serving: the compile itself succeeded.
    Ok(cached(engine, Some(dir), key_digest).unwrap_or(component))
}

fn store(dir: &Path, path: &PathBuf, component: &Component) -> std::io::Result<()> {
    create_private_dir(dir)?;
    let bytes = component.serialize().map_err(std::io::Error::other)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}
