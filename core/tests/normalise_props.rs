//! Property tests: VM size and region names compare case-insensitively and
//! display names normalise, for every entry of the catalog.

use computeguard_policy_core::catalog::{self, REGIONS, SKUS};
use computeguard_policy_core::region;
use proptest::prelude::*;

/// Re-cases `s` following `mask` (true = upper).
fn recase(s: &str, mask: &[bool]) -> String {
    s.chars()
        .enumerate()
        .map(|(i, c)| {
            if mask.get(i % mask.len().max(1)).copied().unwrap_or(false) {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            }
        })
        .collect()
}

proptest! {
    #[test]
    fn every_catalog_size_is_found_in_any_case_with_or_without_prefix(
        idx in 0..SKUS.len(),
        mask in prop::collection::vec(any::<bool>(), 1..16),
        drop_prefix in any::<bool>(),
        pad in "[ \t]{0,2}",
    ) {
        let (_, facts) = &SKUS[idx];
        let mut name = recase(facts.alias, &mask);
        if drop_prefix {
            name = name[name.find('_').map_or(0, |i| i + 1)..].to_string();
        }
        let found = catalog::sku(&format!("{pad}{name}{pad}"));
        prop_assert_eq!(found.map(|f| f.name), Some(facts.name));
        prop_assert!(catalog::sku_well_formed(&name));
    }

    #[test]
    fn every_region_is_found_by_display_or_programmatic_name(
        idx in 0..REGIONS.len(),
        mask in prop::collection::vec(any::<bool>(), 1..16),
        sep in prop::sample::select(vec![" ", "", "-", "_"]),
    ) {
        let r = &REGIONS[idx];
        let display = recase(&r.display_name.replace(' ', sep), &mask);
        prop_assert_eq!(region::region(&display).map(|f| f.name), Some(r.name));
        prop_assert_eq!(region::region(&recase(r.name, &mask)).map(|f| f.name), Some(r.name));
        prop_assert_eq!(region::normalize(&display), r.name);
    }

    #[test]
    fn normalising_is_idempotent_and_never_panics(s in "\\PC{0,40}") {
        let once = region::normalize(&s);
        prop_assert_eq!(region::normalize(&once), once.clone());
        let _ = catalog::sku(&s);
        let _ = catalog::sku_well_formed(&s);
        let _ = region::in_group(&s, "Europe");
    }

    #[test]
    fn other_clouds_and_placeholders_are_not_well_formed(
        family in "[a-z]{1,3}", size in "[0-9]{1,2}", tail in "[a-z]{2,8}",
        placeholder in "[a-z-]{1,12}",
    ) {
        // AWS/GCP style names (`g5.xlarge`) and template placeholders (`<your-vm-sku>`).
        let other_cloud = format!("{family}{size}.{tail}");
        prop_assert!(!catalog::sku_well_formed(&other_cloud), "{}", other_cloud);
        prop_assert!(catalog::sku(&other_cloud).is_none());
        let hole = format!("<{placeholder}>");
        prop_assert!(!catalog::sku_well_formed(&hole), "{}", hole);
    }
}
