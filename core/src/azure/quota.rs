//! Free vCPU quota per region and VM family, from compute usage lists.
//!
//! Usage ids and SKU families spell the same family differently (`StandardNCADSA100v4Family`
//! in usage, `standardNCADSA100v4Family` in SKUs; `Standard NCASv3_T4 Family` and
//! `standard NDAMSv4_A100Family` with spaces): [`family_key`] brings them together. What the
//! data does not say is [`QuotaAnswer::Unknown`], never "enough" and never 0.

use super::skus::SkuOffer;
use super::usage::UsageEntry;
use crate::region::normalize;
use std::collections::BTreeMap;

/// The comparison key of a VM family name: lower-cased, whitespace removed, and one
/// trailing `family` removed (`StandardNCADSA100v4Family`, `standardNCADSA100v4Family` and
/// `Standard NCADSA100v4 Family` all give `standardncadsa100v4`). Underscores are kept.
pub fn family_key(s: &str) -> String {
    let mut key: String = s
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    if key.len() > "family".len() && key.ends_with("family") {
        key.truncate(key.len() - "family".len());
    }
    key
}

/// The usage id of the all-families regional vCPU counter ("Total Regional vCPUs").
pub const REGIONAL_TOTAL_ID: &str = "cores";

/// What the usage data says about one counter in one region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuotaAnswer {
    /// The counter is in the data.
    Free {
        /// The usage id as printed (`StandardNCADSA100v4Family`, `cores`).
        family_id: String,
        /// The quota.
        limit: i64,
        /// In use.
        current: i64,
        /// `limit - current`; negative when usage exceeds the limit.
        free: i64,
    },
    /// The data cannot say: no usage for the region, no entry for the family, or entries
    /// that disagree. Not "enough" and not 0.
    Unknown {
        /// Why, for messages.
        reason: String,
    },
}

impl QuotaAnswer {
    /// Whether `vcpus` more fit: `None` when [`QuotaAnswer::Unknown`].
    pub fn fits(&self, vcpus: u64) -> Option<bool> {
        match self {
            QuotaAnswer::Free { free, .. } => Some(i64::try_from(vcpus).is_ok_and(|n| n <= *free)),
            QuotaAnswer::Unknown { .. } => None,
        }
    }
}

/// Usage lists of several regions, indexed by region and [`family_key`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Quota {
    /// normalised region -> (region as given, family key -> entries).
    regions: BTreeMap<String, (String, BTreeMap<String, Vec<UsageEntry>>)>,
}

impl Quota {
    /// Indexes usage lists, each with the region it was asked for (`az vm list-usage
    /// --location R` and the REST URL name the region; the body does not). Regions compare
    /// case- and space-insensitively (`East US` is `eastus`); lists given twice for one
    /// region are merged.
    pub fn new(region_entries: Vec<(String, Vec<UsageEntry>)>) -> Self {
        let mut regions: BTreeMap<String, (String, BTreeMap<String, Vec<UsageEntry>>)> =
            BTreeMap::new();
        for (region, entries) in region_entries {
            let slot = regions
                .entry(normalize(&region))
                .or_insert_with(|| (region.clone(), BTreeMap::new()));
            for e in entries {
                slot.1.entry(family_key(&e.id)).or_default().push(e);
            }
        }
        Quota { regions }
    }

    /// The regions indexed, as first given.
    pub fn regions(&self) -> impl Iterator<Item = &str> {
        self.regions.values().map(|(r, _)| r.as_str())
    }

    /// The usage entries of `region` whose id has the [`family_key`] of `family`.
    pub fn entries(&self, region: &str, family: &str) -> &[UsageEntry] {
        self.regions
            .get(&normalize(region))
            .and_then(|(_, m)| m.get(&family_key(family)))
            .map_or(&[], Vec::as_slice)
    }

    /// Free quota of VM family `family` (a SKU family or a usage id, any spelling) in
    /// `region`.
    pub fn free(&self, region: &str, family: &str) -> QuotaAnswer {
        let Some((given, families)) = self.regions.get(&normalize(region)) else {
            return QuotaAnswer::Unknown {
                reason: format!("no usage data for region {region:?}"),
            };
        };
        let entries = families
            .get(&family_key(family))
            .map_or(&[][..], Vec::as_slice);
        let Some(first) = entries.first() else {
            return QuotaAnswer::Unknown {
                reason: format!("the usage of region {given:?} has no entry for {family:?}"),
            };
        };
        if entries
            .iter()
            .any(|e| e.limit != first.limit || e.current != first.current)
        {
            let ids: Vec<String> = entries
                .iter()
                .map(|e| format!("{:?} ({}/{})", e.id, e.current, e.limit))
                .collect();
            return QuotaAnswer::Unknown {
                reason: format!(
                    "the usage of region {given:?} has disagreeing entries for {family:?}: {}",
                    ids.join(", ")
                ),
            };
        }
        QuotaAnswer::Free {
            family_id: first.id.clone(),
            limit: first.limit,
            current: first.current,
            free: first.limit.saturating_sub(first.current),
        }
    }

    /// Free quota of the family of `sku` in `region`; unknown when the SKU names no family.
    pub fn free_for(&self, region: &str, sku: &SkuOffer) -> QuotaAnswer {
        match &sku.family {
            Some(f) => self.free(region, f),
            None => QuotaAnswer::Unknown {
                reason: format!("size {:?} names no family", sku.name),
            },
        }
    }

    /// The regional vCPU total (usage id `cores`, "Total Regional vCPUs") of `region`, which
    /// caps all families together.
    pub fn regional_total(&self, region: &str) -> QuotaAnswer {
        self.free(region, REGIONAL_TOTAL_ID)
    }
}
