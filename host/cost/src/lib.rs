//! What GPU compute costs, from Azure's own prices.
//!
//! For the computeguard CLI (and a future language server): it reads the pages of the
//! [Azure Retail Prices API](https://learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices)
//! that `azure.prices` in `computeguard.yaml` names, exactly as `curl` or `az rest` saved
//! them, and prices the compute-model resources the CLI already reads. It is never linked
//! into a policy component: prices add nothing to an admission review.
//!
//! ```
//! use computeguard_cost::{Estimate, PriceSheet, Subject, money};
//! use computeguard_policy_core::compute::Resource;
//!
//! // One item of a page, as the API returns it (fields the cost model does not read left out).
//! let page = r#"{"Items": [{"currencyCode": "USD", "retailPrice": 0.018816,
//!     "armRegionName": "eastus", "armSkuName": "Standard_D2s_v3", "meterName": "D2s v3 Spot",
//!     "productName": "Virtual Machines DSv3 Series", "serviceName": "Virtual Machines",
//!     "unitOfMeasure": "1 Hour", "type": "Consumption"}], "NextPageLink": null, "Count": 1}"#;
//! let mut sheet = PriceSheet::default();
//! sheet.add_page("eastus-vm-prices.json", page)?;
//!
//! let pool = Resource {
//!     kind: "aks-node-pool".into(),
//!     display: "AKS node pool spot".into(),
//!     sku: Some("Standard_D2s_v3".into()),
//!     region: Some("eastus".into()),
//!     priority: Some("spot".into()),
//!     instance_count: Some(2),
//!     ..Resource::default()
//! };
//! let subject = Subject {
//!     file: "aks.bicep", line: 12, resource: &pool, workspace_region: None, cluster_region: None,
//! };
//! let estimate = Estimate::of(&[subject], &sheet);
//! // 0.018816 $/h x 2 nodes x 730 h = 27.47136
//! assert_eq!(money(estimate.total.floor_monthly, &estimate.currency), "$27.47");
//! assert!(estimate.unknown.is_empty());
//! # Ok::<(), computeguard_cost::PriceError>(())
//! ```
//!
//! # Core concepts
//!
//! - [`PriceSheet`]: the hourly virtual machine prices of every page read (built once per
//!   run; a region's pages are a few MiB). It keeps only `Consumption` rows of the
//!   `Virtual Machines` service priced per hour, each with its file and line; Windows
//!   rows are told by their product name, Spot and Low Priority by their meter name.
//!   Reservation rows (a whole term's price, though their unit says `1 Hour`), Dev/Test
//!   rows, savings plans and other services are read and set aside.
//! - [`Estimate`]: a change's cost, per resource, per region, per file and in total,
//!   monthly at [`HOURS_PER_MONTH`], idle (the floor: min nodes, a fixed count, one
//!   compute instance, an online deployment's instances, a KAITO workspace's count) and
//!   at full scale (the ceiling: max nodes).
//! - [`Unknown`]: what could not be priced, one sentence each. A missing price is never
//!   0: it is named and left out of the sums.
//! - [`PriceError`]: a file that is not a Retail Prices page, naming the file, the line
//!   and what was expected.

mod compare;
mod estimate;
mod prices;

pub use compare::{BaseKind, Change, Comparison, signed};

pub use estimate::{
    Count, Estimate, HOURS_PER_MONTH, Meter, PRICED_KINDS, ResourceCost, Subject, Totals, Unknown,
    money, monthly, price,
};
pub use prices::{MAX_PRICE_FILE_BYTES, Os, PageSummary, Price, PriceError, PriceSheet, Priority};
