//! The `verify:` and `registries:` sections of `computeguard.yaml`: which keys artifacts
//! from registries must be signed with, which references must be signed, and which
//! registries may be reached over plain HTTP. Read here, used by `oci.rs`.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// The `verify:` and `registries:` sections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OciConfig {
    /// Trusted public keys (PEM), resolved against the configuration's directory.
    pub keys: Vec<PathBuf>,
    /// Glob patterns of the references that must be signed (all of them when empty and
    /// keys are given).
    pub require: Vec<String>,
    /// Registries reached over plain HTTP besides loopback ones.
    pub insecure: Vec<String>,
}

/// Reads `verify:` and `registries:` (called by `Config::parse`, which gives `fail` to
/// turn a problem at a JSON pointer into its error).
pub(crate) fn parse<E>(
    root: &Map<String, Value>,
    base: &Path,
    fail: &dyn Fn(&str, String) -> E,
) -> Result<OciConfig, E> {
    let mut out = OciConfig::default();
    let list = |v: &Value, ptr: &str, what: &str| -> Result<Vec<String>, E> {
        v.as_array()
            .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect())
            .ok_or_else(|| fail(ptr, format!("`{what}` must be a list of strings")))
    };
    if let Some(v) = root.get("verify") {
        let m = v.as_object().ok_or_else(|| {
            fail(
                "/verify",
                "`verify` must be a mapping with `keys` and `require`".into(),
            )
        })?;
        for (k, v) in m {
            match k.as_str() {
                "keys" => {
                    out.keys = list(v, "/verify/keys", "verify.keys")?
                        .iter()
                        .map(|k| base.join(k))
                        .collect()
                }
                "require" => {
                    out.require = list(v, "/verify/require", "verify.require")?;
                    for (i, p) in out.require.iter().enumerate() {
                        globset::Glob::new(p).map_err(|e| {
                            fail(&format!("/verify/require/{i}"), format!("`{p}`: {e}"))
                        })?;
                    }
                }
                _ => {
                    return Err(fail(
                        &format!("/verify/{k}"),
                        format!("unknown key `verify.{k}`; expected keys or require"),
                    ));
                }
            }
        }
        if !out.require.is_empty() && out.keys.is_empty() {
            return Err(fail(
                "/verify",
                "`verify.require` names references that must be signed, but `verify.keys` names no key to check them with".into(),
            ));
        }
    }
    if let Some(v) = root.get("registries") {
        let m = v.as_object().ok_or_else(|| {
            fail(
                "/registries",
                "`registries` must be a mapping with `insecure`".into(),
            )
        })?;
        for (k, v) in m {
            match k.as_str() {
                "insecure" => {
                    out.insecure = list(v, "/registries/insecure", "registries.insecure")?
                }
                _ => {
                    return Err(fail(
                        &format!("/registries/{k}"),
                        format!("unknown key `registries.{k}`; expected insecure"),
                    ));
                }
            }
        }
    }
    Ok(out)
}
