//! The artifact cache: content-addressed files (`blobs/sha256/<hex>`), hashed again on
//! every read; the last digest seen for each tag (`refs/`), so a tag resolves when the
//! registry cannot be reached; and each layer materialised under its digest with the
//! extension the loaders read (`files/<hex>.wasm`, `.yaml`, `.json`).

use crate::artifact::Kind;
use crate::{Digest, Error, Reference, Result};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The cache directory, when set; else `$COMPUTEGUARD_CACHE_DIR/oci`, else
/// `$XDG_CACHE_HOME/computeguard/oci`, else `~/.cache/computeguard/oci`.
pub const ENV_CACHE_DIR: &str = "COMPUTEGUARD_OCI_CACHE";

/// A content-addressed artifact cache in one directory (created with mode 0700).
#[derive(Clone, Debug)]
pub struct Cache {
    root: PathBuf,
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |error| Error::Io {
        what,
        path: path.display().to_string(),
        error,
    }
}

impl Cache {
    /// A cache in `root`.
    pub fn new(root: impl Into<PathBuf>) -> Cache {
        Cache { root: root.into() }
    }

    /// The default directory (see [`ENV_CACHE_DIR`]).
    pub fn default_dir() -> Option<PathBuf> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        var(ENV_CACHE_DIR)
            .or_else(|| var("COMPUTEGUARD_CACHE_DIR").map(|d| d.join("oci")))
            .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("computeguard/oci")))
            .or_else(|| var("HOME").map(|d| d.join(".cache/computeguard/oci")))
    }

    /// The cache in [`Cache::default_dir`] (`./.computeguard-oci` when no variable is set).
    pub fn open_default() -> Cache {
        Cache::new(Self::default_dir().unwrap_or_else(|| PathBuf::from(".computeguard-oci")))
    }

    /// The cache's directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn ensure_dir(&self, dir: &Path) -> Result<()> {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        b.create(dir).map_err(io("create cache directory", dir))
    }

    /// Writes `bytes` to `path` atomically (a temporary file renamed over it).
    fn write(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        let dir = path.parent().unwrap_or(&self.root);
        self.ensure_dir(dir)?;
        let tmp = dir.join(format!(
            ".tmp-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::write(&tmp, bytes).map_err(io("write cache file", &tmp))?;
        std::fs::rename(&tmp, path).map_err(io("write cache file", path))
    }

    fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs/sha256").join(digest.hex())
    }

    /// Stores `bytes` under their digest.
    pub fn put(&self, bytes: &[u8]) -> Result<Digest> {
        let digest = Digest::of(bytes);
        let path = self.blob_path(&digest);
        if !path.is_file() {
            self.write(&path, bytes)?;
        }
        Ok(digest)
    }

    /// The bytes stored under `digest`, read within `limit` and hashed again: `None`
    /// when absent; an error when they do not hash to `digest` (the cache was tampered
    /// with; the file is removed so the next pull replaces it).
    pub fn get(&self, digest: &Digest, limit: u64) -> Result<Option<Vec<u8>>> {
        let path = self.blob_path(digest);
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io("read cache file", &path)(e)),
        };
        let mut bytes = Vec::new();
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(io("read cache file", &path))?;
        if bytes.len() as u64 > limit {
            return Err(Error::TooLarge {
                what: format!("cached blob {digest}"),
                limit,
            });
        }
        if let Err(e) = digest.verify(&bytes, &format!("cached blob `{}`", path.display())) {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(Some(bytes))
    }

    fn tag_path(&self, r: &Reference, tag: &str) -> PathBuf {
        self.root
            .join("refs")
            .join(r.registry.replace(':', "_"))
            .join(&r.repository)
            .join("_tags")
            .join(tag)
    }

    /// Records that `tag` of `r`'s repository named `digest` when last pulled.
    pub fn set_tag(&self, r: &Reference, tag: &str, digest: &Digest) -> Result<()> {
        self.write(&self.tag_path(r, tag), digest.as_str().as_bytes())
    }

    /// The digest `tag` of `r`'s repository named when last pulled.
    pub fn tag(&self, r: &Reference, tag: &str) -> Option<Digest> {
        std::fs::read_to_string(self.tag_path(r, tag))
            .ok()
            .and_then(|s| Digest::parse(s.trim()).ok())
    }

    /// A file holding the layer `digest` (already verified by the caller) with the
    /// extension `kind` is read by: `files/<hex>.<ext>`, written when missing or when it
    /// no longer holds those bytes.
    pub fn materialize(&self, digest: &Digest, kind: Kind, bytes: &[u8]) -> Result<PathBuf> {
        digest.verify(bytes, "layer")?;
        let path = self
            .root
            .join("files")
            .join(format!("{}.{}", digest.hex(), kind.extension()));
        let current = std::fs::read(&path).ok();
        if current.as_deref() != Some(bytes) {
            self.write(&path, bytes)?;
        }
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tampered_cache_file_is_refused_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let d = cache.put(b"hello").unwrap();
        assert_eq!(cache.get(&d, 100).unwrap().as_deref(), Some(&b"hello"[..]));
        assert!(matches!(cache.get(&d, 2), Err(Error::TooLarge { .. })));
        std::fs::write(dir.path().join("blobs/sha256").join(d.hex()), b"hellO").unwrap();
        let err = cache.get(&d, 100).unwrap_err();
        assert!(matches!(err, Error::DigestMismatch { .. }), "{err}");
        assert_eq!(cache.get(&d, 100).unwrap(), None, "removed");
        let r = Reference::parse("oci://localhost:5000/a/b:1").unwrap();
        cache.set_tag(&r, "1", &d).unwrap();
        assert_eq!(cache.tag(&r, "1"), Some(d));
    }
}
