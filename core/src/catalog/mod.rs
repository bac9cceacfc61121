//! Facts about Azure VM sizes, GPU architectures and regions, compiled in from
//! `policies/catalog/` (see `build.rs`). Every row lists the ids of its sources;
//! [`source`] resolves an id to the document it names.
//!
//! The VM sizes can be extended and corrected at run time by catalog overlays
//! ([`overlay`]): [`install`] merges them over the built-in rows once, before the
//! first lookup, and every lookup after that ([`sku`], [`skus`]) reads the merged
//! table. Without overlays the built-in table is used as it is, at no cost.

pub mod aks;
pub mod kaito;
pub mod overlay;

use crate::version::Version;
use std::sync::OnceLock;

/// Facts about one VM size. Field meanings follow `policies/catalog/skus.yaml`.
#[derive(Clone, Debug)]
pub struct SkuFacts {
    /// Canonical spelling, e.g. `Standard_NC24ads_A100_v4`.
    pub name: &'static str,
    /// The spelling this row was found under (the canonical name or an alias).
    pub alias: &'static str,
    /// Size series, e.g. `NCads_A100_v4`.
    pub series: &'static str,
    /// `gpu` or `cpu`.
    pub category: &'static str,
    /// `NVIDIA`, `AMD` or none for CPU sizes.
    pub vendor: Option<&'static str>,
    /// GPU model as published, e.g. `A100 PCIe 80GB`; empty when not known.
    pub gpu_model: &'static str,
    /// GPU architecture, e.g. `Ampere`.
    pub architecture: Option<&'static str>,
    /// NVIDIA compute capability, e.g. `8.0`; none for AMD and CPU sizes.
    pub compute_capability: Option<&'static str>,
    /// GPUs per VM (fractions for partial GPUs, 0 for sizes without GPUs); none when
    /// not known (a size an overlay adds without GPU facts). Never guessed.
    pub gpu_count: Option<f64>,
    /// Accelerator memory per VM in GiB, all its GPUs together, as published (the size
    /// tables' "Accelerator-Memory" column); none when not known. Never guessed.
    pub gpu_memory_gib: Option<f64>,
    /// vCPUs per VM; none when not known.
    pub vcpus: Option<u64>,
    /// Memory per VM in GiB; none when not known.
    pub memory_gib: Option<f64>,
    /// Quota family as Resource SKUs and Usage report it (`standardNCADSA100v4Family`);
    /// none when not known (the built-in catalog does not carry it: import it).
    pub family: Option<&'static str>,
    /// Has an InfiniBand interconnect.
    pub infiniband: bool,
    /// RDMA capable.
    pub rdma: bool,
    /// Isolated size: dedicated hardware for one customer.
    pub isolated: bool,
    /// `GA`, `retirement_announced`, `retired`, ...
    pub status: &'static str,
    /// `YYYY-MM-DD` after which the size is retired, if announced.
    pub retirement_date: Option<&'static str>,
    /// Supports NVIDIA Multi-Instance GPU on AKS.
    pub mig_capable: bool,
    /// In AKS's list of supported GPU sizes; none when the docs do not say.
    pub aks_supported: Option<bool>,
    /// Usable by the KAITO operator; none when not known.
    pub kaito_supported: Option<bool>,
    /// Azure ML listed the size as needing approval (2020 docs).
    pub requires_approval: Option<bool>,
    /// Supported by Azure ML managed online endpoints; none when not known.
    pub online_endpoint: Option<bool>,
    /// Exempt from the 20% extra quota Azure ML reserves for upgrades of a managed online
    /// deployment (the "Skip 20% Reservation" column of its SKU list, which names every
    /// exempt size; false for every other size).
    pub ml_skip_reservation: bool,
    /// Ids of the built-in sources of this row ([`source`] resolves them).
    pub sources: &'static [&'static str],
    /// Facts an overlay set or changed: (fact, where it came from), in the overlay
    /// format's field names. Empty for a built-in row as compiled in.
    pub overridden: &'static [(&'static str, &'static str)],
}

/// CUDA support of one compute capability.
#[derive(Debug)]
pub struct ArchFacts {
    /// NVIDIA compute capability `X.Y`, e.g. `8.0`.
    pub compute_capability: &'static str,
    /// Architecture name, e.g. `Ampere`.
    pub architecture: &'static str,
    /// First CUDA release that supports it; none when the sources do not say.
    pub first_cuda: Option<&'static str>,
    /// Last CUDA release that supports the architecture; none while it is supported.
    pub last_cuda: Option<&'static str>,
    /// First CUDA release that dropped it.
    pub removed_in_cuda: Option<&'static str>,
    /// Ids of the sources of this row ([`source`] resolves them).
    pub sources: &'static [&'static str],
}

/// Facts about one Azure region.
#[derive(Debug)]
pub struct RegionFacts {
    /// Programmatic name, e.g. `eastus2`.
    pub name: &'static str,
    /// Display name, e.g. `East US 2`.
    pub display_name: &'static str,
    /// Geography as in the Azure regions list, e.g. `United States`, `Europe`.
    pub geography: &'static str,
    /// Area tab of the regions list: `Americas`, `Europe`, `Asia Pacific`, `Middle East`, `Africa`.
    pub area: &'static str,
    /// Country the region is in (derived from its geography and location).
    pub country: &'static str,
    /// In an EU member state.
    pub eu: bool,
    /// In the European Economic Area (the EU plus Iceland, Liechtenstein, Norway).
    pub eea: bool,
    /// Access is restricted to specific scenarios and needs a request.
    pub restricted: bool,
    /// In the public regions list (false for names known only from other docs).
    pub listed: bool,
    /// Ids of the sources of this row ([`source`] resolves them).
    pub sources: &'static [&'static str],
}

include!(concat!(env!("OUT_DIR"), "/catalog_data.rs"));

/// The table lookups read: the built-in [`SKUS`], or the merged table [`install`] set.
static ACTIVE: OnceLock<&'static [(&'static str, SkuFacts)]> = OnceLock::new();

/// Every VM size (and alias) lookups see, sorted by lower-case name: the built-in
/// rows, with the installed overlays merged in once [`install`] ran. A lookup does not
/// fix the table: a host may read files natively (the workspace regions and change-wide
/// sums `check` collects) before it installs the overlays. What keeps answers by position
/// in this table calls [`freeze`] first.
pub fn skus() -> &'static [(&'static str, SkuFacts)] {
    ACTIVE.get().copied().unwrap_or(SKUS)
}

/// Fixes the table [`skus`] returns (the built-in rows unless [`install`] ran): after
/// this, [`install`] refuses. For caches indexed by position in the table (the
/// evaluator's `sku()` answers), whose positions would otherwise change under them.
pub fn freeze() -> &'static [(&'static str, SkuFacts)] {
    ACTIVE.get_or_init(|| SKUS)
}

/// Why overlays could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Overlays were installed before, or the table was fixed ([`freeze`]: the evaluator
    /// ran): overlays apply once, before the first evaluation (a policy instance: before
    /// `evaluate`).
    #[error(
        "the catalog is already in use: overlays must be installed once, before the first lookup"
    )]
    AlreadyInUse,
}

/// Merges `overlays` (in order: a later one wins) over the built-in sizes and makes
/// the result the table every lookup reads, for the rest of the process (a policy
/// instance). Allowed once, before any lookup. The merged rows are leaked: they live
/// as long as the process, like the built-in ones.
pub fn install(overlays: &[overlay::Overlay]) -> Result<(), InstallError> {
    if ACTIVE.get().is_some() {
        return Err(InstallError::AlreadyInUse);
    }
    let merged: &'static [(&'static str, SkuFacts)] = overlay::merge(SKUS, overlays).leak();
    ACTIVE.set(merged).map_err(|_| InstallError::AlreadyInUse)?;
    // After the sizes: KAITO's instance types are matched by the merged table's spellings.
    kaito::install(overlays.iter().filter_map(|o| o.kaito.as_ref()));
    Ok(())
}

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
    sku_index(name).and_then(|i| skus().get(i)).map(|(_, f)| f)
}

/// The index in [`skus`] of the entry (size or alias) that `name` looks up.
pub fn sku_index(name: &str) -> Option<usize> {
    let key = sku_key(name);
    skus()
        .binary_search_by(|(k, _)| (*k).cmp(key.as_str()))
        .ok()
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

/// The status a size has at `as_of` (`YYYY-MM-DD`): `retired` once its retirement date
/// has passed, `retirement_announced` before that date (even where the catalog already says
/// `retired`), else the status the catalog records. The date decides, not the day the
/// catalog was written.
pub fn status_at(facts: &SkuFacts, as_of: &str) -> &'static str {
    match facts.retirement_date {
        Some(date) if date < as_of => "retired",
        Some(_) if facts.status == "retired" => "retirement_announced",
        _ => facts.status,
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
        for (_, f) in skus() {
            for id in f.sources {
                assert!(source(id).is_some(), "{} cites unknown source {id}", f.name);
            }
        }
    }

    #[test]
    fn statuses_follow_the_date() {
        // NVv3 and NVv4: retirement announced for 2026-09-30.
        for name in ["Standard_NV12s_v3", "Standard_NV32as_v4"] {
            let f = sku(name).expect("known");
            assert_eq!(status_at(f, "2026-09-30"), "retirement_announced", "{name}");
            assert_eq!(status_at(f, "2026-10-01"), "retired", "{name}");
        }
        // NCv3 is catalogued as retired (2025-09-30): announced before that date.
        let ncv3 = sku("Standard_NC6s_v3").expect("known");
        assert_eq!(status_at(ncv3, "2025-09-01"), "retirement_announced");
        assert_eq!(status_at(ncv3, "2026-11-28"), "retired");
        let a100 = sku("Standard_NC24ads_A100_v4").expect("known");
        assert_eq!(status_at(a100, "2030-01-01"), "GA");
    }

    #[test]
    fn current_n_series_sizes_are_known() {
        for (name, gpus, cc) in [
            ("Standard_NC8ads_A10_v4", 1.0, "8.6"),
            ("Standard_NC16ads_A10_v4", 1.0, "8.6"),
            ("Standard_NC32ads_A10_v4", 2.0, "8.6"),
            ("Standard_NC128ds_xl_RTXPRO6000BSE_v6", 1.0, "12.0"),
            ("Standard_NC320lds_xl_RTXPRO6000BSE_v6", 2.0, "12.0"),
        ] {
            let f = sku(name).unwrap_or_else(|| panic!("{name} not in the catalog"));
            assert_eq!(f.gpu_count, Some(gpus), "{name}");
            assert_eq!(f.compute_capability, Some(cc), "{name}");
            assert!(!f.sources.is_empty(), "{name} has no source");
        }
        // The current ND GB300 v6 page's names are spellings of the isolation page's size.
        for name in ["Standard_ND128isr_GB300_v6", "Standard_ND128isrG5_GB300_v6"] {
            let f = sku(name).unwrap_or_else(|| panic!("{name} not in the catalog"));
            assert_eq!(f.name, "Standard_ND128isr_NDR_GB300_v6");
            assert_eq!(f.gpu_count, Some(4.0));
        }
        let mi300x = sku("Standard_ND96is_MI300X_v5").expect("known");
        assert_eq!((mi300x.vendor, mi300x.gpu_count), (Some("AMD"), Some(8.0)));
        assert!(!mi300x.infiniband);
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
