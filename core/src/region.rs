//! Region names: programmatic (`eastus2`) or display (`East US 2`), compared
//! case-insensitively, normalised to the programmatic name.

use crate::catalog::{REGIONS, RegionFacts};

/// Normalises a region as users write it: `East US 2`, `eastus2`, `EASTUS2`,
/// `east-us-2` all become `eastus2`. The result is not necessarily a known region.
pub fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_whitespace() && *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Looks a region up by programmatic or display name.
pub fn region(name: &str) -> Option<&'static RegionFacts> {
    let key = normalize(name);
    REGIONS
        .binary_search_by(|r| r.name.cmp(key.as_str()))
        .ok()
        .and_then(|i| REGIONS.get(i))
}

/// Whether a region belongs to `group`, compared case-insensitively: a geography
/// (`Germany`, `United States`), a country, an area of the regions list (`Europe`,
/// `Americas`, `Asia Pacific`, `Middle East`, `Africa`), or `EU` / `EEA` membership.
pub fn in_group(region_name: &str, group: &str) -> Option<bool> {
    let r = region(region_name)?;
    let g = group.trim();
    Some(
        g.eq_ignore_ascii_case(r.geography)
            || g.eq_ignore_ascii_case(r.country)
            || g.eq_ignore_ascii_case(r.area)
            || (g.eq_ignore_ascii_case("EU") && r.eu)
            || (g.eq_ignore_ascii_case("EEA") && r.eea),
    )
}

/// Whether `group` names at least one region's geography, country or area, or is
/// `EU` / `EEA` (case-insensitive).
pub fn is_group(group: &str) -> bool {
    let g = group.trim();
    g.eq_ignore_ascii_case("EU")
        || g.eq_ignore_ascii_case("EEA")
        || REGIONS.iter().any(|r| {
            g.eq_ignore_ascii_case(r.geography)
                || g.eq_ignore_ascii_case(r.country)
                || g.eq_ignore_ascii_case(r.area)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_and_programmatic_names_meet() {
        assert_eq!(normalize("East US 2"), "eastus2");
        assert_eq!(region("West Europe").map(|r| r.name), Some("westeurope"));
        assert_eq!(region("WESTEUROPE").map(|r| r.geography), Some("Europe"));
        assert!(region("germanywestcentral").is_some_and(|r| r.eu));
        assert!(region("eastus").is_some_and(|r| !r.eu));
        assert!(region("mars-north").is_none());
        assert_eq!(in_group("germanywestcentral", "europe"), Some(true));
        assert_eq!(in_group("germanywestcentral", "EU"), Some(true));
        assert_eq!(in_group("switzerlandnorth", "EU"), Some(false));
        assert_eq!(in_group("eastus", "United States"), Some(true));
        assert_eq!(in_group("eastus", "Europe"), Some(false));
        assert_eq!(in_group("nowhere", "Europe"), None);
    }
}
