//! Whether a VM size is offered in a region and zones, from SKU lists.
//!
//! `az vm list-skus` without `--all` leaves out sizes the subscription cannot use, so a size
//! missing from the data is [`OfferAnswer::Unknown`], not "not offered".

use super::skus::{Restriction, SkuOffer};
use std::collections::BTreeMap;

/// What the SKU data says about one size in one region (and zones).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OfferAnswer {
    /// Listed in the region, not restricted there, and every zone asked for is offered.
    Offered,
    /// The size is in the data but not listed in the region.
    NotOffered {
        /// Regions (lower-cased, sorted) where the size is listed without a `Location`
        /// restriction.
        offered_in: Vec<String>,
    },
    /// A `Location` restriction covers the region for this subscription.
    Restricted {
        /// The restriction's `reasonCode` (`NotAvailableForSubscription`), when printed.
        reason_code: Option<String>,
        /// Regions (lower-cased, sorted) where the size is listed without a `Location`
        /// restriction.
        offered_in: Vec<String>,
    },
    /// Some zones asked for are not in the region's `locationInfo` zones or are covered by
    /// a `Zone` restriction.
    ZonesNotOffered {
        /// Those zones, in the order asked.
        zones: Vec<String>,
        /// The `reasonCode` of the first `Zone` restriction covering one of them; `None`
        /// when they are simply not listed.
        reason_code: Option<String>,
    },
    /// The size does not appear in the data at all.
    Unknown,
}

/// SKU lists indexed by size name (case-insensitive).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Availability {
    /// lower-cased size name -> entries (one per region in REST lists).
    by_name: BTreeMap<String, Vec<SkuOffer>>,
}

impl Availability {
    /// Indexes the sizes of one or more SKU lists (e.g. one per region).
    pub fn new(offers: Vec<SkuOffer>) -> Self {
        let mut by_name: BTreeMap<String, Vec<SkuOffer>> = BTreeMap::new();
        for o in offers {
            by_name.entry(o.name.to_lowercase()).or_default().push(o);
        }
        Availability { by_name }
    }

    /// The entries of size `sku_name` (case-insensitive); empty if not in the data.
    pub fn sku(&self, sku_name: &str) -> &[SkuOffer] {
        self.by_name
            .get(&sku_name.trim().to_lowercase())
            .map_or(&[], Vec::as_slice)
    }

    /// Whether size `sku_name` is offered in `region` (case- and space-insensitive) and, if
    /// `zones` is not empty, in each of those zones.
    pub fn offer(&self, sku_name: &str, region: &str, zones: &[String]) -> OfferAnswer {
        let entries = self.sku(sku_name);
        if entries.is_empty() {
            return OfferAnswer::Unknown;
        }
        // Sorted and without duplicates. Vectors rather than sets: the policy component
        // pays for every collection type and sort it instantiates, and the lists are short.
        let mut offered_in: Vec<String> = Vec::new();
        for o in entries {
            for l in o
                .locations
                .iter()
                .filter(|l| o.location_restriction(l).is_none())
            {
                if let Err(i) = offered_in.binary_search(l) {
                    offered_in.insert(i, l.clone());
                }
            }
        }
        let here: Vec<&SkuOffer> = entries.iter().filter(|o| o.lists_region(region)).collect();
        if here.is_empty() {
            return OfferAnswer::NotOffered { offered_in };
        }
        if let Some(r) = here.iter().find_map(|o| o.location_restriction(region)) {
            return OfferAnswer::Restricted {
                reason_code: r.reason_code.clone(),
                offered_in,
            };
        }
        let listed: Vec<&str> = here
            .iter()
            .flat_map(|o| o.zones_in(region))
            .map(String::as_str)
            .collect();
        let zone_restrictions: Vec<&Restriction> = here
            .iter()
            .flat_map(|o| o.zone_restrictions(region))
            .collect();
        let mut missing: Vec<String> = Vec::new();
        let mut reason_code = None;
        for z in zones {
            let z = z.trim();
            if missing.iter().any(|m| m == z) {
                continue;
            }
            let restricted = zone_restrictions
                .iter()
                .find(|r| r.zones.iter().any(|rz| rz == z));
            if let Some(r) = restricted
                && reason_code.is_none()
            {
                reason_code.clone_from(&r.reason_code);
            }
            if restricted.is_some() || !listed.contains(&z) {
                missing.push(z.to_string());
            }
        }
        if missing.is_empty() {
            OfferAnswer::Offered
        } else {
            OfferAnswer::ZonesNotOffered {
                zones: missing,
                reason_code,
            }
        }
    }
}
