//! VM sizes as Azure lists them: `az vm list-skus -o json` and the REST "Resource Skus -
//! List" body (`GET /subscriptions/{id}/providers/Microsoft.Compute/skus`).
//!
//! Both print the same SKU objects; the CLI prints them as a bare array (with `null` for
//! unset fields), the REST API wraps them in `{"value": [...], "nextLink": ...}`. Only
//! `resourceType == "virtualMachines"` entries are kept. Capability values are strings
//! (`"24"`, `"True"`, `"0.75"`); the typed accessors of [`SkuOffer`] convert them and
//! answer `None` when a capability is absent or unreadable, never a default.
//!
//! The REST API lists a size once per region: a list over several regions has one
//! [`SkuOffer`] per (size, region), which [`super::Availability`] merges.

use super::shape::{Doc, ShapeError, describe, idx_ptr, key_ptr};
use crate::region::normalize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

const DOC: Doc =
    Doc("a VM size list (`az vm list-skus -o json` or a REST Resource Skus - List body)");

/// One VM size in the regions one SKU entry lists.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SkuOffer {
    /// The size name, as printed (`Standard_NC24ads_A100_v4`).
    pub name: String,
    /// The quota family (`standardNCADSA100v4Family`); match it against usage ids with
    /// [`super::family_key`]. `None` when the entry has none.
    pub family: Option<String>,
    /// `tier` (`Standard`, `Basic`), when printed.
    pub tier: Option<String>,
    /// `size` (the name without the tier prefix, `NC24ads_A100_v4`), when printed.
    pub size: Option<String>,
    /// Capabilities by name, values as printed (`"vCPUs" -> "24"`, `"RdmaEnabled" -> "True"`).
    pub capabilities: BTreeMap<String, String>,
    /// The regions the entry lists, lower-cased, in the order printed: `locations` plus any
    /// region only `locationInfo` names.
    pub locations: Vec<String>,
    /// Availability zones per region (lower-cased region -> zones, sorted), from
    /// `locationInfo[].zones`. A region without zones has an empty list or no key.
    pub zones: BTreeMap<String, Vec<String>>,
    /// The subscription's restrictions on this size.
    pub restrictions: Vec<Restriction>,
}

/// What a restriction covers: a whole region or some of its zones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestrictionKind {
    /// `"Location"`: the size cannot be deployed in the listed regions.
    Location,
    /// `"Zone"`: the size cannot be deployed in the listed zones of the listed regions
    /// (other zones, and the region without a zone, are not covered).
    Zone,
    /// Another `type`, as printed.
    Other(String),
}

/// One entry of a SKU's `restrictions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restriction {
    /// `type`.
    pub kind: RestrictionKind,
    /// `reasonCode` (`NotAvailableForSubscription`, `QuotaId`), when printed.
    pub reason_code: Option<String>,
    /// Regions covered, lower-cased: `restrictionInfo.locations`, or `values` when the
    /// entry has no `restrictionInfo.locations`. Empty means every region of the entry.
    pub locations: Vec<String>,
    /// Zones covered (`restrictionInfo.zones`); only meaningful for [`RestrictionKind::Zone`].
    pub zones: Vec<String>,
}

impl Restriction {
    /// Whether the restriction covers `region` (compared as [`normalize`] does).
    pub fn covers_region(&self, region: &str) -> bool {
        let r = normalize(region);
        self.locations.is_empty() || self.locations.iter().any(|l| normalize(l) == r)
    }
}

impl SkuOffer {
    /// A capability's value: exact name first, then case-insensitively.
    pub fn capability(&self, name: &str) -> Option<&str> {
        self.capabilities
            .get(name)
            .or_else(|| {
                self.capabilities
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v)
            })
            .map(String::as_str)
    }

    /// A capability as a non-negative integer; `None` if absent or not an integer.
    pub fn capability_u64(&self, name: &str) -> Option<u64> {
        self.capability(name)?.trim().parse().ok()
    }

    /// A capability as a finite number; `None` if absent or not a number.
    pub fn capability_f64(&self, name: &str) -> Option<f64> {
        self.capability(name)?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
    }

    /// A capability as a boolean (`"True"` / `"False"`, any case); `None` otherwise.
    pub fn capability_bool(&self, name: &str) -> Option<bool> {
        let v = self.capability(name)?.trim();
        if v.eq_ignore_ascii_case("true") {
            Some(true)
        } else if v.eq_ignore_ascii_case("false") {
            Some(false)
        } else {
            None
        }
    }

    /// `vCPUs`.
    pub fn vcpus(&self) -> Option<u64> {
        self.capability_u64("vCPUs")
    }

    /// `vCPUsAvailable` (constrained-core sizes expose fewer vCPUs than they bill).
    pub fn vcpus_available(&self) -> Option<u64> {
        self.capability_u64("vCPUsAvailable")
    }

    /// `vCPUsPerCore` (2 with hyper-threading).
    pub fn vcpus_per_core(&self) -> Option<u64> {
        self.capability_u64("vCPUsPerCore")
    }

    /// `GPUs`. Absent means unknown (older responses and non-GPU sizes alike omit it), so
    /// this is `None`, never `Some(0.0)`.
    pub fn gpus(&self) -> Option<f64> {
        self.capability_f64("GPUs")
    }

    /// `MemoryGB` (Azure's "GB" here are GiB).
    pub fn memory_gib(&self) -> Option<f64> {
        self.capability_f64("MemoryGB")
    }

    /// `RdmaEnabled` (InfiniBand).
    pub fn rdma(&self) -> Option<bool> {
        self.capability_bool("RdmaEnabled")
    }

    /// `AcceleratedNetworkingEnabled`.
    pub fn accelerated_networking(&self) -> Option<bool> {
        self.capability_bool("AcceleratedNetworkingEnabled")
    }

    /// `LowPriorityCapable` (Spot / low priority).
    pub fn low_priority_capable(&self) -> Option<bool> {
        self.capability_bool("LowPriorityCapable")
    }

    /// `PremiumIO` (premium SSD support).
    pub fn premium_io(&self) -> Option<bool> {
        self.capability_bool("PremiumIO")
    }

    /// `CpuArchitectureType` (`x64`, `Arm64`).
    pub fn cpu_architecture(&self) -> Option<&str> {
        self.capability("CpuArchitectureType")
    }

    /// `HyperVGenerations` split at commas (`["V1", "V2"]`); empty if absent.
    pub fn hyperv_generations(&self) -> Vec<&str> {
        self.capability("HyperVGenerations")
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the entry lists `region` (case- and space-insensitive).
    pub fn lists_region(&self, region: &str) -> bool {
        let r = normalize(region);
        self.locations.iter().any(|l| normalize(l) == r)
    }

    /// The zones `locationInfo` gives for `region`; empty if none.
    pub fn zones_in(&self, region: &str) -> &[String] {
        let r = normalize(region);
        self.zones
            .iter()
            .find(|(l, _)| normalize(l) == r)
            .map_or(&[], |(_, z)| z.as_slice())
    }

    /// The first `Location` restriction covering `region`.
    pub fn location_restriction(&self, region: &str) -> Option<&Restriction> {
        self.restrictions
            .iter()
            .find(|x| x.kind == RestrictionKind::Location && x.covers_region(region))
    }

    /// The `Zone` restrictions covering `region`.
    pub fn zone_restrictions<'a>(
        &'a self,
        region: &'a str,
    ) -> impl Iterator<Item = &'a Restriction> {
        self.restrictions
            .iter()
            .filter(move |x| x.kind == RestrictionKind::Zone && x.covers_region(region))
    }
}

/// Reads the VM sizes of `az vm list-skus -o json` (a bare array) or of a REST "Resource
/// Skus - List" body (`{"value": [...]}`), keeping `resourceType == "virtualMachines"`.
///
/// A body with a `nextLink` (see [`super::next_link`]) is one page of the list.
///
/// # Errors
/// [`ShapeError`] when `v` is neither shape, or an entry lacks `name` / `resourceType` or
/// holds a field of the wrong type (e.g. a usage list given instead).
pub fn parse_skus(v: &Value) -> Result<Vec<SkuOffer>, ShapeError> {
    let (items, base) = DOC.list(v, "`az vm list-skus -o json`", "REST Resource Skus - List")?;
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ptr = idx_ptr(&base, i);
        if let Some(sku) = parse_one(item, &ptr)? {
            out.push(sku);
        }
    }
    Ok(out)
}

const SKU_OBJECT: &str = "a resource SKU object (with \"name\" and \"resourceType\")";

fn parse_one(item: &Value, ptr: &str) -> Result<Option<SkuOffer>, ShapeError> {
    let obj = DOC.object(item, ptr, SKU_OBJECT)?;
    if !obj.contains_key("resourceType")
        && (obj.contains_key("currentValue") || obj.contains_key("limit"))
    {
        return Err(DOC.err(
            ptr,
            SKU_OBJECT,
            "a usage entry (with \"currentValue\" and \"limit\"): that is `az vm list-usage` \
             or REST Usage - List output, read by parse_usage",
        ));
    }
    let name = DOC.req_str(obj, ptr, "name")?;
    let resource_type = DOC.req_str(obj, ptr, "resourceType")?;
    if !resource_type.eq_ignore_ascii_case("virtualMachines") {
        return Ok(None);
    }
    let mut sku = SkuOffer {
        name: name.to_string(),
        family: DOC.opt_str(obj, ptr, "family")?.map(str::to_string),
        tier: DOC.opt_str(obj, ptr, "tier")?.map(str::to_string),
        size: DOC.opt_str(obj, ptr, "size")?.map(str::to_string),
        ..SkuOffer::default()
    };
    for l in DOC.opt_str_list(obj, ptr, "locations")? {
        push_location(&mut sku.locations, &l);
    }
    read_location_info(obj, ptr, &mut sku)?;
    read_capabilities(obj, ptr, &mut sku.capabilities)?;
    let rptr = key_ptr(ptr, "restrictions");
    for (i, r) in DOC.opt_array(obj, ptr, "restrictions")?.iter().enumerate() {
        sku.restrictions
            .push(read_restriction(r, &idx_ptr(&rptr, i))?);
    }
    Ok(Some(sku))
}

fn push_location(list: &mut Vec<String>, l: &str) {
    let l = l.trim().to_lowercase();
    if !list.contains(&l) {
        list.push(l);
    }
}

fn read_location_info(
    obj: &Map<String, Value>,
    ptr: &str,
    sku: &mut SkuOffer,
) -> Result<(), ShapeError> {
    let lptr = key_ptr(ptr, "locationInfo");
    let mut zones: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (i, info) in DOC.opt_array(obj, ptr, "locationInfo")?.iter().enumerate() {
        let iptr = idx_ptr(&lptr, i);
        let info = DOC.object(info, &iptr, "a locationInfo object (with \"location\")")?;
        let location = DOC.req_str(info, &iptr, "location")?;
        push_location(&mut sku.locations, location);
        let set = zones.entry(location.trim().to_lowercase()).or_default();
        for z in DOC.opt_str_list(info, &iptr, "zones")? {
            set.insert(z.trim().to_string());
        }
    }
    sku.zones = zones
        .into_iter()
        .map(|(l, z)| (l, z.into_iter().collect()))
        .collect();
    Ok(())
}

fn read_capabilities(
    obj: &Map<String, Value>,
    ptr: &str,
    out: &mut BTreeMap<String, String>,
) -> Result<(), ShapeError> {
    let cptr = key_ptr(ptr, "capabilities");
    for (i, c) in DOC.opt_array(obj, ptr, "capabilities")?.iter().enumerate() {
        let iptr = idx_ptr(&cptr, i);
        let c = DOC.object(
            c,
            &iptr,
            "a capability object (with \"name\" and \"value\")",
        )?;
        let name = DOC.req_str(c, &iptr, "name")?;
        let value = match c.get("value") {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => s.clone(),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
            Some(other) => {
                return Err(DOC.err(
                    &key_ptr(&iptr, "value"),
                    "a string (capability values are printed as strings)",
                    describe(other),
                ));
            }
        };
        out.insert(name.to_string(), value);
    }
    Ok(())
}

fn read_restriction(r: &Value, ptr: &str) -> Result<Restriction, ShapeError> {
    let obj = DOC.object(r, ptr, "a restriction object (with \"type\")")?;
    let kind = match DOC.req_str(obj, ptr, "type")? {
        t if t.eq_ignore_ascii_case("Location") => RestrictionKind::Location,
        t if t.eq_ignore_ascii_case("Zone") => RestrictionKind::Zone,
        t => RestrictionKind::Other(t.to_string()),
    };
    let reason_code = DOC.opt_str(obj, ptr, "reasonCode")?.map(str::to_string);
    let values = DOC.opt_str_list(obj, ptr, "values")?;
    let (mut locations, zones) = match DOC.opt_object(obj, ptr, "restrictionInfo")? {
        Some(info) => {
            let iptr = key_ptr(ptr, "restrictionInfo");
            (
                DOC.opt_str_list(info, &iptr, "locations")?,
                DOC.opt_str_list(info, &iptr, "zones")?,
            )
        }
        None => (Vec::new(), Vec::new()),
    };
    if locations.is_empty() {
        locations = values;
    }
    Ok(Restriction {
        kind,
        reason_code,
        locations: locations.iter().map(|l| l.trim().to_lowercase()).collect(),
        zones: zones.iter().map(|z| z.trim().to_string()).collect(),
    })
}
