//! The cost model: what one compute-model resource costs per month idle (its floor) and at
//! full scale (its ceiling), from a [`PriceSheet`], and the sums over a change.
//!
//! A resource is priced when it is compute that Azure bills by the node: an AKS node pool,
//! an Azure ML compute cluster or compute instance, an Azure ML online deployment (managed
//! instances), a KAITO workspace (the nodes it provisions), a VM or a VM scale set. Pods,
//! jobs and batch deployments run on those and are not priced again. What is not known (a
//! size or region left to deploy time, a meter the pages do not hold, a count the file
//! does not state) is named in [`Unknown`], and the sums leave it out: it is never 0.

use crate::prices::{Os, PriceSheet, Priority};
use computeguard_policy_core::compute::Resource;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Hours in a month, as Azure's pricing calculator counts them (8,760 / 12).
pub const HOURS_PER_MONTH: f64 = 730.0;

/// The kinds the cost model prices (see the module documentation).
pub const PRICED_KINDS: &[&str] = &[
    "aks-node-pool",
    "aml-compute-cluster",
    "aml-compute-instance",
    "aml-online-deployment",
    "kaito-workspace",
    "vm",
    "vm-scale-set",
];

/// A resource to price, with where it is declared.
#[derive(Clone, Copy, Debug)]
pub struct Subject<'a> {
    /// The file, as reports name it.
    pub file: &'a str,
    /// The line of the resource.
    pub line: u32,
    /// The compute model of the resource.
    pub resource: &'a Resource,
    /// The Azure ML workspace's region, for Azure ML resources whose file names none.
    pub workspace_region: Option<&'a str>,
    /// The region of the AKS cluster a KAITO workspace runs in, when the caller knows it
    /// (the one region of the change's AKS clusters): a Workspace names none.
    pub cluster_region: Option<&'a str>,
}

/// A node count and why it is that count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Count {
    /// Nodes (instances); `None` when the file does not say.
    pub nodes: Option<i64>,
    /// Where the count comes from (`min_count 2`, `Azure ML's default min_instances 0`).
    pub basis: String,
}

/// What one resource costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceCost {
    /// The file.
    pub file: String,
    /// The line of the resource.
    pub line: u32,
    /// The resource as messages name it.
    pub resource: String,
    /// The compute-model kind.
    pub kind: String,
    /// The VM size, when known.
    pub sku: Option<String>,
    /// The region it is priced in, when known.
    pub region: Option<String>,
    /// The operating system it is priced for.
    pub os: Os,
    /// The meter it is priced on.
    pub priority: Priority,
    /// Price per node-hour, when the pages hold it.
    pub hourly: Option<f64>,
    /// The meter and product of that price, and the file and line it was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meter: Option<Meter>,
    /// Nodes when idle.
    pub floor: Count,
    /// Nodes at full scale.
    pub ceiling: Count,
    /// Monthly cost idle (`hourly x floor x 730`), when both are known.
    pub floor_monthly: Option<f64>,
    /// Monthly cost at full scale (`hourly x ceiling x 730`), when both are known.
    pub ceiling_monthly: Option<f64>,
    /// What could not be priced, one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
    /// Assumptions the price rests on (`no OS stated: priced as Linux`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl ResourceCost {
    /// What the floor would cost on `nodes` nodes instead (the saving of a fix).
    pub fn monthly_at(&self, nodes: i64) -> Option<f64> {
        self.hourly.map(|h| monthly(h, nodes))
    }
}

/// Where a price comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meter {
    /// `meterName` (`D2s v3 Spot`).
    pub meter: String,
    /// `productName`.
    pub product: String,
    /// `effectiveStartDate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effective: Option<String>,
    /// `file:line` of the price item.
    pub source: String,
}

/// Sums of known amounts, and how many resources left something out.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Sum of the known floors.
    pub floor_monthly: f64,
    /// Sum of the known ceilings.
    pub ceiling_monthly: f64,
    /// Resources estimated (priced or not).
    pub resources: usize,
    /// Resources whose floor or ceiling is unknown (left out of the sums).
    pub unknown: usize,
}

impl Totals {
    /// Resources whose floor and ceiling are both known: what the sums are made of.
    pub fn priced(&self) -> usize {
        self.resources - self.unknown
    }

    /// The sum of the known floors, or `None` when no resource has a known price: a
    /// change whose every price is unknown costs "unknown", never $0.
    pub fn known_floor(&self) -> Option<f64> {
        (self.priced() > 0).then_some(self.floor_monthly)
    }

    /// [`Totals::known_floor`] for the ceilings.
    pub fn known_ceiling(&self) -> Option<f64> {
        (self.priced() > 0).then_some(self.ceiling_monthly)
    }

    fn add(&mut self, c: &ResourceCost) {
        self.resources += 1;
        if let Some(f) = c.floor_monthly {
            self.floor_monthly += f;
        }
        if let Some(x) = c.ceiling_monthly {
            self.ceiling_monthly += x;
        }
        if c.floor_monthly.is_none() || c.ceiling_monthly.is_none() {
            self.unknown += 1;
        }
    }

    fn round(&mut self) {
        self.floor_monthly = cents(self.floor_monthly);
        self.ceiling_monthly = cents(self.ceiling_monthly);
    }
}

/// Something the estimate could not price, named.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Unknown {
    /// The file.
    pub file: String,
    /// The line of the resource.
    pub line: u32,
    /// The resource as messages name it.
    pub resource: String,
    /// Why, one sentence.
    pub reason: String,
}

/// What a change costs: every priced resource, the sums per change, region and file,
/// and what could not be priced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    /// The currency of every amount (`USD`).
    pub currency: String,
    /// Hours in a month ([`HOURS_PER_MONTH`]).
    pub hours_per_month: f64,
    /// The price files read.
    pub sources: Vec<String>,
    /// Each priced resource.
    pub resources: Vec<ResourceCost>,
    /// The whole change.
    pub total: Totals,
    /// Per region (resources without a known region under `unknown`).
    pub by_region: BTreeMap<String, Totals>,
    /// Per file.
    pub by_file: BTreeMap<String, Totals>,
    /// What could not be priced.
    pub unknown: Vec<Unknown>,
}

impl Estimate {
    /// Prices every subject of a priced kind (others are skipped).
    ///
    /// # Example
    ///
    /// ```
    /// use computeguard_cost::{Estimate, PriceSheet, Subject};
    /// use computeguard_policy_core::compute::Resource;
    ///
    /// let mut sheet = PriceSheet::default();
    /// sheet.add_page("p.json", r#"{"Items": [{"retailPrice": 0.096, "armRegionName": "eastus",
    ///   "armSkuName": "Standard_D2s_v3", "meterName": "D2s v3", "productName": "Virtual Machines DSv3 Series",
    ///   "serviceName": "Virtual Machines", "unitOfMeasure": "1 Hour", "type": "Consumption"}]}"#)?;
    /// let pool = Resource {
    ///     kind: "aks-node-pool".into(), display: "AKS node pool gpu".into(),
    ///     sku: Some("Standard_D2s_v3".into()), region: Some("eastus".into()),
    ///     autoscale: Some(true), min_nodes: Some(1), max_nodes: Some(3), ..Resource::default()
    /// };
    /// let e = Estimate::of(&[Subject { file: "aks.tf", line: 1, resource: &pool, workspace_region: None, cluster_region: None }], &sheet);
    /// assert_eq!(e.total.floor_monthly, 70.08);     // 0.096 x 1 x 730
    /// assert_eq!(e.total.ceiling_monthly, 210.24);  // 0.096 x 3 x 730
    /// # Ok::<(), computeguard_cost::PriceError>(())
    /// ```
    pub fn of(subjects: &[Subject<'_>], sheet: &PriceSheet) -> Estimate {
        let mut e = Estimate {
            currency: sheet.currency().to_string(),
            hours_per_month: HOURS_PER_MONTH,
            sources: sheet.files().to_vec(),
            ..Estimate::default()
        };
        for s in subjects {
            let Some(c) = price(s, sheet) else {
                continue;
            };
            for reason in &c.unknown {
                e.unknown.push(Unknown {
                    file: c.file.clone(),
                    line: c.line,
                    resource: c.resource.clone(),
                    reason: reason.clone(),
                });
            }
            e.total.add(&c);
            e.by_region
                .entry(c.region.clone().unwrap_or_else(|| "unknown".into()))
                .or_default()
                .add(&c);
            e.by_file.entry(c.file.clone()).or_default().add(&c);
            e.resources.push(c);
        }
        e.total.round();
        e.by_region.values_mut().for_each(Totals::round);
        e.by_file.values_mut().for_each(Totals::round);
        e
    }

    /// The same estimate of only the resources whose file `keep` accepts, its sums
    /// recomputed (what a baseline recorded for the paths a run checks).
    ///
    /// # Example
    ///
    /// ```
    /// use computeguard_cost::{Estimate, PriceSheet, Subject};
    /// use computeguard_policy_core::compute::Resource;
    ///
    /// let mut sheet = PriceSheet::default();
    /// sheet.add_page("p.json", r#"{"Items": [{"retailPrice": 0.096, "armRegionName": "eastus",
    ///   "armSkuName": "Standard_D2s_v3", "meterName": "D2s v3", "productName": "Virtual Machines DSv3 Series",
    ///   "serviceName": "Virtual Machines", "unitOfMeasure": "1 Hour", "type": "Consumption"}]}"#)?;
    /// let vm = Resource {
    ///     kind: "vm".into(), display: "VM a".into(), sku: Some("Standard_D2s_v3".into()),
    ///     region: Some("eastus".into()), ..Resource::default()
    /// };
    /// let at = |file| Subject { file, line: 1, resource: &vm, workspace_region: None, cluster_region: None };
    /// let e = Estimate::of(&[at("a/vm.json"), at("b/vm.json")], &sheet);
    /// assert_eq!(e.total.floor_monthly, 140.16);          // 2 x 0.096 x 730
    /// let a = e.only(|file| file.starts_with("a/"));
    /// assert_eq!(a.total.floor_monthly, 70.08);
    /// assert_eq!((a.resources.len(), a.by_file.len()), (1, 1));
    /// # Ok::<(), computeguard_cost::PriceError>(())
    /// ```
    #[must_use]
    pub fn only(&self, keep: impl Fn(&str) -> bool) -> Estimate {
        let mut e = Estimate {
            currency: self.currency.clone(),
            hours_per_month: self.hours_per_month,
            sources: self.sources.clone(),
            unknown: self
                .unknown
                .iter()
                .filter(|u| keep(&u.file))
                .cloned()
                .collect(),
            ..Estimate::default()
        };
        for c in self.resources.iter().filter(|c| keep(&c.file)) {
            e.total.add(c);
            e.by_region
                .entry(c.region.clone().unwrap_or_else(|| "unknown".into()))
                .or_default()
                .add(c);
            e.by_file.entry(c.file.clone()).or_default().add(c);
            e.resources.push(c.clone());
        }
        e.total.round();
        e.by_region.values_mut().for_each(Totals::round);
        e.by_file.values_mut().for_each(Totals::round);
        e
    }

    /// The cost of the resource declared at `file:line` named `resource`.
    pub fn find(&self, file: &str, resource: &str) -> Option<&ResourceCost> {
        self.resources
            .iter()
            .find(|c| c.file == file && c.resource == resource)
    }
}

/// `hourly x nodes x 730`, to the cent.
pub fn monthly(hourly: f64, nodes: i64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "node counts are small")]
    let n = nodes as f64;
    cents(hourly * n * HOURS_PER_MONTH)
}

fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The floor and ceiling node counts of `r`, by kind.
fn counts(r: &Resource) -> (Count, Count) {
    let c = |nodes: Option<i64>, basis: String| Count { nodes, basis };
    let given = |what: &str, n: Option<i64>| match n {
        Some(n) => format!("{what} {n}"),
        None => format!("{what} not stated"),
    };
    match r.kind.as_str() {
        "aml-compute-instance" | "vm" => (
            c(Some(1), "one instance".into()),
            c(Some(1), "one instance".into()),
        ),
        "aml-compute-cluster" => {
            let floor = match r.min_nodes {
                Some(n) => c(Some(n), format!("min nodes {n}")),
                None => c(Some(0), "min nodes not stated: Azure ML's default 0".into()),
            };
            let max = r.max_nodes.or(r.instance_count);
            let ceiling = c(
                max,
                match (r.max_nodes, max) {
                    (Some(n), _) => format!("max nodes {n}"),
                    (None, Some(n)) => format!("max nodes not stated: Azure ML's default {n}"),
                    (None, None) => "max nodes not stated".into(),
                },
            );
            (floor, ceiling)
        }
        "aml-online-deployment" if r.autoscale == Some(true) => (
            c(
                r.min_nodes.or(r.instance_count),
                match r.min_nodes {
                    Some(n) => format!("autoscale min instances {n}"),
                    None => given("instance_count", r.instance_count),
                },
            ),
            c(r.max_nodes, given("autoscale max instances", r.max_nodes)),
        ),
        "aml-online-deployment" => (
            c(r.instance_count, given("instance_count", r.instance_count)),
            c(r.instance_count, given("instance_count", r.instance_count)),
        ),
        "kaito-workspace" => {
            let n = r.instance_count.unwrap_or(1);
            let basis = match r.instance_count {
                Some(n) => format!("resource.count {n}"),
                None => "resource.count not stated: KAITO's default 1".into(),
            };
            (c(Some(n), basis.clone()), c(Some(n), basis))
        }
        "aks-node-pool"
            if r.autoscale == Some(true)
                || (r.autoscale.is_none() && (r.min_nodes.is_some() || r.max_nodes.is_some())) =>
        {
            (
                c(r.min_nodes, given("autoscale min count", r.min_nodes)),
                c(r.max_nodes, given("autoscale max count", r.max_nodes)),
            )
        }
        "aks-node-pool" => (
            c(
                r.instance_count,
                given("fixed node count", r.instance_count),
            ),
            c(
                r.instance_count,
                given("fixed node count", r.instance_count),
            ),
        ),
        _ => (
            c(r.instance_count, given("capacity", r.instance_count)),
            c(r.instance_count, given("capacity", r.instance_count)),
        ),
    }
}

/// The cost of one subject; `None` for kinds that are not priced.
pub fn price(s: &Subject<'_>, sheet: &PriceSheet) -> Option<ResourceCost> {
    let r = s.resource;
    if !PRICED_KINDS.contains(&r.kind.as_str()) {
        return None;
    }
    let mut unknown = Vec::new();
    let mut notes = Vec::new();
    let region = r.region.clone().or_else(|| r.parent_region.clone());
    let region = match region {
        Some(region) => Some(region),
        None if computeguard_policy_core::context::takes_workspace_region(r) => {
            s.workspace_region.map(|w| {
                notes.push(format!("region {w}: its Azure ML workspace's"));
                w.to_string()
            })
        }
        None if r.kind == "kaito-workspace" && !r.unresolved.iter().any(|u| u == "region") => {
            s.cluster_region.map(|c| {
                notes.push(format!(
                    "region {c}: the region of the AKS clusters this change declares"
                ));
                c.to_string()
            })
        }
        None => None,
    };
    let os = match r.os_type.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("windows") => Os::Windows,
        Some(_) => Os::Linux,
        None => {
            if matches!(r.kind.as_str(), "vm" | "vm-scale-set") {
                notes.push("no OS stated: priced as Linux".into());
            }
            Os::Linux
        }
    };
    let priority = Priority::of_model(r.priority.as_deref());
    let deploy_time = |field: &str| r.unresolved.iter().any(|u| u == field);
    let (floor, ceiling) = counts(r);
    let mut hourly = None;
    let mut meter = None;
    match (&r.sku, &region) {
        (None, _) => unknown.push(if deploy_time("sku") {
            "no price: its VM size is known only at deploy time".into()
        } else {
            "no price: no VM size stated".into()
        }),
        (Some(_), None) => unknown.push(if deploy_time("region") {
            "no price: its region is known only at deploy time".into()
        } else if r.kind == "kaito-workspace" {
            "no price: a KAITO workspace runs in its AKS cluster's region, and this change declares no AKS cluster in one region".into()
        } else if computeguard_policy_core::context::takes_workspace_region(r) {
            "no price: its region is its Azure ML workspace's, which no workspace file of this change nor `azure.workspaceRegion` states".into()
        } else {
            "no price: no region stated".into()
        }),
        (Some(sku), Some(reg)) => match sheet.lookup(sku, reg, os, priority) {
            Some(p) => {
                hourly = Some(p.hourly);
                meter = Some(Meter {
                    meter: p.meter.clone(),
                    product: p.product.clone(),
                    effective: p.effective.clone(),
                    source: p.source.clone(),
                });
            }
            None => unknown.push(missing_price(sheet, sku, reg, os, priority)),
        },
    }
    let floor_monthly = match (hourly, floor.nodes) {
        (Some(h), Some(n)) => Some(monthly(h, n)),
        _ => None,
    };
    let ceiling_monthly = match (hourly, ceiling.nodes) {
        (Some(h), Some(n)) => Some(monthly(h, n)),
        _ => None,
    };
    if floor.nodes.is_none() {
        unknown.push(format!("no idle floor: {}", floor.basis));
    }
    if ceiling.nodes.is_none() {
        unknown.push(format!("no full-scale ceiling: {}", ceiling.basis));
    }
    Some(ResourceCost {
        file: s.file.to_string(),
        line: s.line,
        resource: r.display.clone(),
        kind: r.kind.clone(),
        sku: r.sku.clone(),
        region,
        os,
        priority,
        hourly,
        meter,
        floor,
        ceiling,
        floor_monthly,
        ceiling_monthly,
        unknown,
        notes,
    })
}

/// Why the pages hold no price for a size, region, OS and meter.
fn missing_price(
    sheet: &PriceSheet,
    sku: &str,
    region: &str,
    os: Os,
    priority: Priority,
) -> String {
    let what = format!("{sku} in {region} ({} {})", os.as_str(), priority.as_str());
    let why = if !sheet.knows_sku(sku) {
        format!("the price files list no {sku} in any region")
    } else if !sheet.knows_region(region) {
        format!("the price files list no prices in {region}")
    } else {
        let have = sheet.meters_of(sku, region);
        if have.is_empty() {
            format!("the price files list {sku}, but not in {region}")
        } else {
            format!(
                "the price files list only {} for it",
                have.iter()
                    .map(|(o, p)| format!("{} {}", o.as_str(), p.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    format!("no price for {what}: {why}")
}

/// An amount as reports print it: `$12,410.00` (USD), `EUR 1,020.50` otherwise.
pub fn money(amount: f64, currency: &str) -> String {
    let sign = if amount < 0.0 { "-" } else { "" };
    let total_cents = (amount.abs() * 100.0).round();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a rounded, non-negative amount of cents well within u64"
    )]
    let total_cents = total_cents as u64;
    let (whole, part) = (total_cents / 100, total_cents % 100);
    let digits = whole.to_string();
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    if currency.eq_ignore_ascii_case("USD") {
        format!("{sign}${grouped}.{part:02}")
    } else {
        format!("{sign}{currency} {grouped}.{part:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_groups_thousands() {
        assert_eq!(money(12410.0, "USD"), "$12,410.00");
        assert_eq!(money(70.08, "USD"), "$70.08");
        assert_eq!(money(-1234567.891, "EUR"), "-EUR 1,234,567.89");
        assert_eq!(money(0.0, "USD"), "$0.00");
    }
}
