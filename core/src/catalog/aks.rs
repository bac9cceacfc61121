//! What AKS refuses for a node pool's VM size and where it supports MIG, built in from
//! `policies/catalog/aks.yaml` (every fact with its sources).
//!
//! [`pool_size`] judges a size for a pool of a mode: a Promo size; for a system pool, a
//! B-series size (refused) or an Av1 size (discouraged); and the documented vCPU and
//! memory floors (2 vCPUs and 2 GiB for a user pool, 2 vCPUs and 4 GiB for a system pool).
//! [`mig_os`] judges the OS SKU of a MIG pool. What the data cannot say (a floor whose
//! vCPUs or memory nobody knows, a mode that decides but is not stated, an OS SKU the
//! data does not list) is [`Verdict::Unknown`] with the reason: never a pass.

use serde_json::Value;
use std::sync::OnceLock;

// The data is read from its JSON by hand (no serde derive): a deserializer per type would
// cost the policy component more than these few lookups.

struct Floor {
    min_vcpus: u64,
    min_memory_gib: f64,
    refused_series: Vec<Series>,
    discouraged_series: Vec<Series>,
    sources: Vec<String>,
}

struct Series {
    /// The family letters of the size name (`B`, `A`).
    series: String,
    /// `any` version suffix, or `none` (no `_vN`).
    versions: String,
    /// As messages name it.
    name: String,
}

struct AksData {
    user: Floor,
    system: Floor,
    promo_suffix: String,
    promo_sources: Vec<String>,
    mig_supported: Vec<String>,
    /// (OS SKU, why not).
    mig_unsupported: Vec<(String, String)>,
    mig_windows: String,
    mig_sources: Vec<String>,
}

fn text(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn texts(v: &Value, k: &str) -> Vec<String> {
    v.get(k)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn series(v: &Value, k: &str) -> Vec<Series> {
    v.get(k)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| Series {
            series: text(s, "series"),
            versions: text(s, "versions"),
            name: text(s, "name"),
        })
        .collect()
}

fn floor(v: &Value) -> Floor {
    Floor {
        // INVARIANT: aks.yaml states both floors; a missing one reads as 0 (no floor), which
        // the catalog tests below would catch.
        min_vcpus: v.get("min_vcpus").and_then(Value::as_u64).unwrap_or(0),
        min_memory_gib: v
            .get("min_memory_gib")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        refused_series: series(v, "refused_series"),
        discouraged_series: series(v, "discouraged_series"),
        sources: texts(v, "sources"),
    }
}

fn data() -> &'static AksData {
    static DATA: OnceLock<AksData> = OnceLock::new();
    DATA.get_or_init(|| {
        let v: Value = serde_json::from_str(include_str!(concat!(env!("OUT_DIR"), "/aks.json")))
            .unwrap_or(Value::Null);
        let sizes = &v["nodePoolSizes"];
        let mig = &v["mig"];
        AksData {
            user: floor(&sizes["user"]),
            system: floor(&sizes["system"]),
            promo_suffix: text(&sizes["promo"], "suffix"),
            promo_sources: texts(&sizes["promo"], "sources"),
            mig_supported: texts(mig, "os_sku_supported"),
            mig_unsupported: mig
                .get("os_sku_unsupported")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|u| (text(u, "os_sku"), text(u, "why")))
                .collect(),
            mig_windows: text(mig, "windows"),
            mig_sources: texts(mig, "sources"),
        }
    })
}

/// An answer about a pool.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Nothing in the data refuses it.
    Allowed,
    /// AKS refuses it: why, and the source ids.
    Refused(String, Vec<String>),
    /// AKS does not recommend it: why, and the source ids.
    Discouraged(String, Vec<String>),
    /// The data cannot say: why.
    Unknown(String),
}

/// The family letters and whether the name has a version suffix (`_v2`): `("b", true)` for
/// `Standard_B2s_v2`, `("a", false)` for `Standard_A2` and `Basic_A1`.
fn family(key: &str) -> Option<(String, bool)> {
    let rest = key
        .strip_prefix("standard_")
        .or_else(|| key.strip_prefix("basic_"))?;
    let letters: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
    let versioned = rest.split('_').skip(1).any(|p| {
        p.strip_prefix('v')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
    });
    (!letters.is_empty()).then_some((letters, versioned))
}

fn in_series(key: &str, s: &Series) -> bool {
    family(key).is_some_and(|(letters, versioned)| {
        letters.eq_ignore_ascii_case(&s.series)
            && match s.versions.as_str() {
                "none" => !versioned,
                _ => true,
            }
    })
}

/// Whether AKS takes `sku` for a pool of `mode` (`system`, `user`, or none when not
/// stated), given its vCPUs and memory in GiB when known.
pub fn pool_size(
    sku: &str,
    mode: Option<&str>,
    vcpus: Option<u64>,
    memory_gib: Option<f64>,
) -> Verdict {
    let d = data();
    let key = super::sku_key(sku);
    if !d.promo_suffix.is_empty() && key.ends_with(&d.promo_suffix.to_ascii_lowercase()) {
        return Verdict::Refused(
            "a Promo size, which AKS does not offer for node pools".into(),
            d.promo_sources.clone(),
        );
    }
    let system = mode.map(|m| m.eq_ignore_ascii_case("system"));
    for s in &d.system.refused_series {
        if in_series(&key, s) {
            match system {
                Some(true) => {
                    return Verdict::Refused(
                        format!(
                            "a {} size, which AKS does not support for system node pools",
                            s.name
                        ),
                        d.system.sources.clone(),
                    );
                }
                None => {
                    return Verdict::Unknown(format!(
                        "a {} size, which AKS does not support for system node pools, and the \
                         pool does not state its mode (`mode`)",
                        s.name
                    ));
                }
                Some(false) => {}
            }
        }
    }
    let floor = |f: &Floor, what: &str| -> Option<Verdict> {
        let (Some(v), Some(m)) = (vcpus, memory_gib) else {
            return Some(Verdict::Unknown(format!(
                "the {} of {sku} are not known, so AKS's floor for {what} pools ({} vCPUs, {} GiB) \
                 cannot be judged: give the SKU list (az vm list-skus --all) or a catalog overlay",
                match (vcpus, memory_gib) {
                    (None, None) => "vCPUs and memory",
                    (None, _) => "vCPUs",
                    _ => "memory",
                },
                f.min_vcpus,
                f.min_memory_gib
            )));
        };
        (v < f.min_vcpus || m < f.min_memory_gib).then(|| {
            Verdict::Refused(
                format!(
                    "{v} vCPUs and {m} GiB, below AKS's floor for {what} node pools ({} vCPUs, {} GiB)",
                    f.min_vcpus, f.min_memory_gib
                ),
                f.sources.clone(),
            )
        })
    };
    if let Some(v) = floor(&d.user, "user") {
        return v;
    }
    match system {
        Some(true) => {
            if let Some(v) = floor(&d.system, "system") {
                return v;
            }
        }
        None => {
            if let Some(Verdict::Refused(why, _)) = floor(&d.system, "system") {
                return Verdict::Unknown(format!(
                    "{why} if it is a system pool, and the pool does not state its mode (`mode`)"
                ));
            }
        }
        Some(false) => {}
    }
    if system == Some(true) {
        for s in &d.system.discouraged_series {
            if in_series(&key, s) {
                return Verdict::Discouraged(
                    format!(
                        "an {} size, which AKS does not recommend for system node pools",
                        s.name
                    ),
                    d.system.sources.clone(),
                );
            }
        }
    }
    Verdict::Allowed
}

/// Whether AKS supports MIG on a pool of `os_sku` (`osSKU` as written) and `os_type`
/// (`linux`, `windows`); none of them stated is AKS's default, Ubuntu.
pub fn mig_os(os_sku: Option<&str>, os_type: Option<&str>) -> Verdict {
    let m = data();
    if let Some(sku) = os_sku {
        if let Some((_, why)) = m
            .mig_unsupported
            .iter()
            .find(|(os, _)| os.eq_ignore_ascii_case(sku))
        {
            return Verdict::Refused(why.clone(), m.mig_sources.clone());
        }
        if m.mig_supported.iter().any(|s| s.eq_ignore_ascii_case(sku)) {
            return Verdict::Allowed;
        }
        return Verdict::Unknown(format!(
            "OS SKU `{sku}` is not one the catalog knows MIG support for (supported: {})",
            m.mig_supported.join(", ")
        ));
    }
    if os_type.is_some_and(|t| t.eq_ignore_ascii_case("windows")) {
        return Verdict::Refused(m.mig_windows.clone(), m.mig_sources.clone());
    }
    Verdict::Allowed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_sizes_follow_the_aks_docs() {
        let refused = |v: Verdict| matches!(v, Verdict::Refused(..));
        assert!(refused(pool_size(
            "Standard_D13_v2_Promo",
            Some("user"),
            Some(8),
            Some(56.0)
        )));
        assert!(refused(pool_size(
            "Standard_B2s",
            Some("system"),
            Some(2),
            Some(4.0)
        )));
        assert_eq!(
            pool_size("Standard_B2s", Some("user"), Some(2), Some(4.0)),
            Verdict::Allowed
        );
        assert!(refused(pool_size(
            "Standard_B2s_v2",
            Some("System"),
            Some(2),
            Some(8.0)
        )));
        assert!(matches!(
            pool_size("Standard_B2s", None, Some(2), Some(4.0)),
            Verdict::Unknown(_)
        ));
        assert!(matches!(
            pool_size("Standard_A2", Some("system"), Some(2), Some(3.5)),
            Verdict::Refused(..)
        ));
        assert!(matches!(
            pool_size("Standard_A4", Some("system"), Some(8), Some(14.0)),
            Verdict::Discouraged(..)
        ));
        assert_eq!(
            pool_size("Standard_A2_v2", Some("system"), Some(2), Some(4.0)),
            Verdict::Allowed,
            "Av2 is not Av1"
        );
        // Floors: user 2 vCPUs / 2 GiB, system 2 / 4.
        assert!(refused(pool_size(
            "Standard_A1_v2",
            Some("user"),
            Some(1),
            Some(2.0)
        )));
        assert!(refused(pool_size(
            "Standard_F2s_v2",
            Some("system"),
            Some(2),
            Some(3.9)
        )));
        assert_eq!(
            pool_size("Standard_F2s_v2", Some("user"), Some(2), Some(3.9)),
            Verdict::Allowed
        );
        assert!(matches!(
            pool_size("Standard_F2s_v2", None, Some(2), Some(3.9)),
            Verdict::Unknown(_)
        ));
        assert!(matches!(
            pool_size("Standard_E4s_v3", Some("user"), None, None),
            Verdict::Unknown(m) if m.contains("vCPUs and memory of Standard_E4s_v3 are not known")
        ));
    }

    #[test]
    fn mig_follows_the_2026_text() {
        assert_eq!(mig_os(Some("AzureLinux"), Some("linux")), Verdict::Allowed);
        assert_eq!(mig_os(None, None), Verdict::Allowed);
        assert!(matches!(
            mig_os(Some("Windows2022"), Some("windows")),
            Verdict::Refused(..)
        ));
        assert!(matches!(
            mig_os(None, Some("windows")),
            Verdict::Refused(..)
        ));
        assert!(matches!(
            mig_os(Some("Flatcar"), None),
            Verdict::Refused(..)
        ));
        assert!(matches!(
            mig_os(Some("SomethingNew"), None),
            Verdict::Unknown(_)
        ));
    }
}
