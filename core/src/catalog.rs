//! Facts about Azure VM sizes, GPU architectures and regions, compiled in from
//! `policies/catalog/` (see `build.rs`). Every row lists the ids of its sources;
//! [`source`] resolves an id to the document it names.

use crate::version::Version;

/// Facts about one VM size. Field meanings follow `policies/catalog/skus.yaml`.
#[derive(Debug)]
pub struct SkuFacts {
    /// Canonical spelling, e.g. `Standard_NC24ads_A100_v4`.
    pub name: &'static str,
    /// The spelling this row was found under (the canonical name or an alias).
    pub alias: &'static str,
    pub series: &'static str,
    /// `gpu` or `cpu`.
    pub category: &'static str,
    /// `NVIDIA`, `AMD` or none for CPU sizes.
    pub vendor: Option<&'static str>,
    pub gpu_model: &'static str,
    pub architecture: Option<&'static str>,
    /// NVIDIA compute capability, e.g. `8.0`; none for AMD and CPU sizes.
    pub compute_capability: Option<&'static str>,
    /// GPUs per VM (fractions for partial GPUs).
    pub gpu_count: f64,
    /// vCPUs (0 when the catalog does not give them).
    pub vcpus: u64,
    pub infiniband: bool,
    pub rdma: bool,
    pub isolated: bool,
    /// `GA`, `retirement_announced`, `retired`, ...
    pub status: &'static str,
    /// `YYYY-MM-DD` after which the size is retired, if announced.
    pub retirement_date: Option<&'static str>,
    pub mig_capable: bool,
    pub aks_supported: Option<bool>,
    pub kaito_supported: Option<bool>,
    pub requires_approval: Option<bool>,
    pub online_endpoint: Option<bool>,
    pub sources: &'static [&'static str],
}

/// CUDA support of one compute capability.
#[derive(Debug)]
pub struct ArchFacts {
    pub compute_capability: &'static str,
    pub architecture: &'static str,
    pub first_cuda: Option<&'static str>,
    /// Last CUDA release that supports the architecture; none while it is supported.
    pub last_cuda: Option<&'static str>,
    /// First CUDA release that dropped it.
    pub removed_in_cuda: Option<&'static str>,
    pub sources: &'static [&'static str],
}

/// Facts about one Azure region.
#[derive(Debug)]
pub struct RegionFacts {
    /// Programmatic name, e.g. `eastus2`.
    pub name: &'static str,
    pub display_name: &'static str,
    /// Geography as in the Azure regions list, e.g. `United States`, `Europe`.
    pub geography: &'static str,
    /// Area tab of the regions list: `Americas`, `Europe`, `Asia Pacific`, `Middle East`, `Africa`.
    pub area: &'static str,
    pub country: &'static str,
    /// In an EU member state.
    pub eu: bool,
    pub eea: bool,
    pub restricted: bool,
    /// In the public regions list (false for names known only from other docs).
    pub listed: bool,
    pub sources: &'static [&'static str],
}

include!(concat!(env!("OUT_DIR"), "/catalog_data.rs"));

/// Canonical key of a VM size name: lower case, with the `standard_` prefix added
/// when missing and surrounding whitespace removed.
pub fn sku_key(name: &str) -> String {
    let lower = name.trim().to_ascii_lowercase();
    if lower.starts_with("standard_") || lower.starts_with("basic_") {
        lower
    } else {
        format!("standard_{lower}")
    }
}

/// Looks a VM size up, case-insensitively, with or without the `Standard_` prefix.
pub fn sku(name: &str) -> Option<&'static SkuFacts> {
    sku_index(name).and_then(|i| SKUS.get(i)).map(|(_, f)| f)
}

/// The index in [`SKUS`] of the entry (size or alias) that `name` looks up.
pub fn sku_index(name: &str) -> Option<usize> {
    let key = sku_key(name);
    SKUS.binary_search_by(|(k, _)| (*k).cmp(key.as_str())).ok()
}

/// True when `name` has the shape of an Azure VM size (`Standard_<family><vcpus>...`),
/// whether or not the catalog knows it. Placeholders like `<your-vm-sku>` and other
/// clouds' names (`g5.xlarge`) are not.
pub fn sku_well_formed(name: &str) -> bool {
    let key = sku_key(name);
    let Some(rest) = key.strip_prefix("standard_") else {
        return false;
    };
    let mut chars = rest.chars().peekable();
    let mut letters = 0;
    while chars.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
        chars.next();
        letters += 1;
    }
    let mut digits = 0;
    while chars.peek().is_some_and(|c| c.is_ascii_digit()) {
        chars.next();
        digits += 1;
    }
    letters > 0 && digits > 0 && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// True for the GPU families (N-series: NC, ND, NV, NG, NCC); the catalog lists every
/// size of these, so an unknown one is worth reporting.
pub fn sku_gpu_family(name: &str) -> bool {
    let key = sku_key(name);
    key.strip_prefix("standard_")
        .is_some_and(|r| r.starts_with('n') && r.chars().nth(1).is_some_and(|c| "cdvg".contains(c)))
}

/// CUDA support of a compute capability such as `8.0`.
pub fn architecture(compute_capability: &str) -> Option<&'static ArchFacts> {
    ARCHITECTURES
        .iter()
        .find(|a| a.compute_capability == compute_capability)
}

/// The document a source id names (URL, or `repo/path@commit`).
pub fn source(id: &str) -> Option<&'static str> {
    SOURCES
        .binary_search_by(|(k, _)| (*k).cmp(id))
        .ok()
        .and_then(|i| SOURCES.get(i))
        .map(|(_, v)| *v)
}

/// Whether a size is retired at `as_of` (`YYYY-MM-DD`): its retirement date has passed,
/// or the catalog marks it retired without a date.
pub fn retired_at(facts: &SkuFacts, as_of: &str) -> bool {
    match facts.retirement_date {
        Some(date) => date < as_of,
        None => facts.status == "retired",
    }
}

/// Whether CUDA `cuda` can run on compute capability `cc`: at least the first CUDA
/// release for it and, if the architecture was dropped, below the release that dropped it.
/// None when the architecture or a version is unknown.
pub fn cuda_supported(cc: &str, cuda: &str) -> Option<bool> {
    let arch = architecture(cc)?;
    let want = Version::parse(cuda)?;
    if let Some(first) = arch.first_cuda.and_then(Version::parse) {
        // A major-only requirement ("12") is compared on its major version.
        if want.parts().len() == 1 {
            if want.major() < first.major() {
                return Some(false);
            }
        } else if want < first {
            return Some(false);
        }
    }
    if let Some(last) = arch.last_cuda.and_then(Version::parse) {
        if want.parts().len() == 1 {
            return Some(want.major() <= last.major());
        }
        // `last` is the newest release line that works: 11.8 allows 11.8.x.
        let cut: Vec<u64> = want
            .parts()
            .iter()
            .take(last.parts().len())
            .copied()
            .collect();
        let cut = Version::parse(&cut.iter().map(u64::to_string).collect::<Vec<_>>().join("."))?;
        return Some(cut <= last);
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sku_lookup_is_case_insensitive_and_prefix_tolerant() {
        let f = sku("STANDARD_nc24ADS_a100_V4").expect("known");
        assert_eq!(f.name, "Standard_NC24ads_A100_v4");
        assert_eq!(sku("NC6s_v3").map(|f| f.name), Some("Standard_NC6s_v3"));
        assert!(sku("Standard_NC6s_v9").is_none());
    }

    #[test]
    fn aliases_resolve_to_canonical_names() {
        let f = sku("Standard_ND96asr_A100_v4").expect("alias");
        assert_eq!(f.name, "Standard_ND96asr_v4");
        assert_eq!(f.alias, "Standard_ND96asr_A100_v4");
    }

    #[test]
    fn well_formed_rejects_placeholders_and_other_clouds() {
        assert!(sku_well_formed("Standard_D4s_v5"));
        assert!(!sku_well_formed("<your-vm-sku>"));
        assert!(!sku_well_formed("g5.xlarge"));
        assert!(!sku_well_formed("Standard_"));
        assert!(sku_gpu_family("Standard_NC4as_T4_v3"));
        assert!(!sku_gpu_family("Standard_D4s_v5"));
    }

    #[test]
    fn facts_match_the_catalog() {
        let h100 = sku("Standard_ND96isr_H100_v5").expect("known");
        assert!(h100.infiniband && h100.isolated && h100.mig_capable);
        assert_eq!(h100.compute_capability, Some("9.0"));
        let t4 = sku("Standard_NC4as_T4_v3").expect("known");
        assert!(!t4.infiniband && !t4.mig_capable);
        let ncv3 = sku("Standard_NC6s_v3").expect("known");
        assert!(retired_at(ncv3, "2025-10-01"));
        assert!(!retired_at(ncv3, "2025-09-30"));
        assert!(source("vm-nc-legacy").is_some());
        for (_, f) in SKUS {
            for id in f.sources {
                assert!(source(id).is_some(), "{} cites unknown source {id}", f.name);
            }
        }
    }

    #[test]
    fn cuda_windows_follow_the_architecture_table() {
        // Kepler (K80): CUDA up to 11.8, not 12.
        assert_eq!(cuda_supported("3.7", "11.8.0"), Some(true));
        assert_eq!(cuda_supported("3.7", "12.1"), Some(false));
        assert_eq!(cuda_supported("3.7", "12"), Some(false));
        // Volta: 12.9 yes, 13.0 no.
        assert_eq!(cuda_supported("7.0", "12.9.1"), Some(true));
        assert_eq!(cuda_supported("7.0", "13.0"), Some(false));
        // Hopper needs at least 11.8.
        assert_eq!(cuda_supported("9.0", "11.7"), Some(false));
        assert_eq!(cuda_supported("9.0", "12.4.1"), Some(true));
        assert_eq!(cuda_supported("4.2", "12.4"), None);
    }
}
