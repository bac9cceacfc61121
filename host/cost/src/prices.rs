//! Azure Retail Prices API pages, read as `curl` or `az rest` saves them, and the hourly
//! prices of virtual machine sizes they hold.
//!
//! A page is `{"Items": [...], "NextPageLink": ..., "Count": ...}` plus whatever else the
//! API or the tool that saved it adds (`BillingCurrency`, an estimator's `Url`): only
//! `Items` is read. Every item must have `armSkuName`, `armRegionName` (strings) and
//! `retailPrice` (a number); anything else is refused, naming the file, the line and what
//! was expected. Of the items, only hourly pay-as-you-go virtual machine meters are
//! prices of a size ([`PriceSheet::lookup`]); the rest (reservations, Dev/Test rows,
//! disks, savings plans) are read and set aside.

use computeguard_decode::decode_json;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Largest price file read: a whole region's virtual machine pages are a few MiB.
pub const MAX_PRICE_FILE_BYTES: u64 = 256 << 20;

/// What a price file must be, for error messages.
const PAGE: &str = "an Azure Retail Prices API page (the body of GET https://prices.azure.com/api/retail/prices, as curl or az rest saves it)";

/// The operating system a meter prices: Windows meters are the products whose name ends
/// in `Windows` (`Virtual Machines DSv3 Series Windows`); the size and meter names are the
/// same for both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Os {
    /// Linux (every product without `Windows`).
    Linux,
    /// Windows (the licence is in the price).
    Windows,
}

impl Os {
    /// `linux` or `windows`.
    pub fn as_str(self) -> &'static str {
        match self {
            Os::Linux => "linux",
            Os::Windows => "windows",
        }
    }
}

/// Which meter of a size: Spot and Low Priority rows are ordinary `Consumption` rows
/// whose meter (and SKU) name ends in ` Spot` or ` Low Priority`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Priority {
    /// Pay-as-you-go (the meter without a suffix).
    Regular,
    /// The `… Spot` meter (AKS Spot pools, Spot VMs and scale sets, Azure ML `spot`).
    Spot,
    /// The `… Low Priority` meter (Azure ML `low_priority` compute, Batch).
    LowPriority,
}

impl Priority {
    /// How messages name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Regular => "regular",
            Priority::Spot => "spot",
            Priority::LowPriority => "low-priority",
        }
    }

    /// The compute model's priority (`dedicated`, `spot`, `low-priority`; none is
    /// dedicated).
    pub fn of_model(priority: Option<&str>) -> Priority {
        match priority.map(str::to_ascii_lowercase).as_deref() {
            Some("spot") => Priority::Spot,
            Some("low-priority" | "lowpriority" | "low_priority") => Priority::LowPriority,
            _ => Priority::Regular,
        }
    }
}

/// One hourly price of a virtual machine size, and where it comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Price {
    /// `armSkuName` as the page writes it (`Standard_D2s_v3`).
    pub sku: String,
    /// `armRegionName` (`eastus`).
    pub region: String,
    /// Linux or Windows, from `productName`.
    pub os: Os,
    /// Regular, Spot or Low Priority, from `meterName`.
    pub priority: Priority,
    /// `retailPrice` per hour.
    pub hourly: f64,
    /// `currencyCode` (else the page's `BillingCurrency`, else `USD`, the API's default).
    pub currency: String,
    /// `meterName` (`D2s v3 Spot`).
    pub meter: String,
    /// `productName` (`Virtual Machines DSv3 Series Windows`).
    pub product: String,
    /// `effectiveStartDate`, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective: Option<String>,
    /// The file the row was read from, and its line.
    pub source: String,
}

/// A price file that is not an Azure Retail Prices API page, or that cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PriceError {
    /// The file could not be read.
    #[error("cannot read price file `{}`: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The file is larger than [`MAX_PRICE_FILE_BYTES`].
    #[error("price file `{}` is {size} bytes, over the {MAX_PRICE_FILE_BYTES}-byte limit; refusing to read it", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// The text is not JSON.
    #[error("{file}:{line}:{column}: not JSON ({message}); expected {PAGE}")]
    NotJson {
        /// The file, as given.
        file: String,
        /// 1-based line of the syntax error.
        line: u32,
        /// 1-based column.
        column: u32,
        /// What the JSON decoder says.
        message: String,
    },
    /// JSON of another shape: the place, what was expected there and what was found.
    #[error("{file}{}: not {PAGE}: at {} expected {expected}, found {found}", line.map_or(String::new(), |l| format!(":{l}")), if pointer.is_empty() { "the top level" } else { pointer.as_str() })]
    Shape {
        /// The file, as given.
        file: String,
        /// The line of the value (or of its nearest enclosing value), when known.
        line: Option<u32>,
        /// JSON pointer of the value.
        pointer: String,
        /// What was expected there.
        expected: String,
        /// What the file holds instead.
        found: String,
    },
    /// Two files price in different currencies: sums would mix them.
    #[error(
        "{file}: prices in {found}, but {first} prices in {expected}; fetch every page with the same `currencyCode`"
    )]
    Currency {
        /// The file with the second currency.
        file: String,
        /// Its currency.
        found: String,
        /// The file read first.
        first: String,
        /// The first file's currency.
        expected: String,
    },
}

/// What one page added to a [`PriceSheet`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageSummary {
    /// Items on the page.
    pub items: usize,
    /// Hourly pay-as-you-go virtual machine prices among them.
    pub hourly_vm_prices: usize,
    /// The page's `NextPageLink`, when it names a next page (which must be saved and
    /// listed too for the sheet to be whole).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page: Option<String>,
}

/// Every hourly virtual machine price of the pages read, looked up by size, region,
/// operating system and meter.
///
/// # Example
///
/// ```
/// use computeguard_cost::{Os, PriceSheet, Priority};
///
/// let page = r#"{"Items": [{"currencyCode": "USD", "retailPrice": 0.096,
///   "armRegionName": "eastus", "armSkuName": "Standard_D2s_v3", "meterName": "D2s v3",
///   "skuName": "D2s v3", "productName": "Virtual Machines DSv3 Series",
///   "serviceName": "Virtual Machines", "unitOfMeasure": "1 Hour", "type": "Consumption"}],
///   "NextPageLink": null, "Count": 1}"#;
/// let mut sheet = PriceSheet::default();
/// sheet.add_page("eastus.json", page)?;
/// let price = sheet.lookup("standard_d2s_v3", "East US", Os::Linux, Priority::Regular);
/// assert_eq!(price.map(|p| p.hourly), Some(0.096));
/// assert!(sheet.lookup("Standard_D2s_v3", "eastus", Os::Windows, Priority::Regular).is_none());
/// # Ok::<(), computeguard_cost::PriceError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct PriceSheet {
    prices: Vec<Price>,
    files: Vec<String>,
    currency: Option<(String, String)>,
    pages: Vec<(String, PageSummary)>,
    /// Size key -> region key -> the indexes into `prices` of its meters: a region's pages
    /// hold thousands of prices, and `plan` looks one up in every comparison of its ranking.
    index: HashMap<String, HashMap<String, Vec<usize>>>,
    /// Region keys with any price.
    regions: HashSet<String>,
}

impl PriceSheet {
    /// Reads every file in order. The first problem stops the reading.
    ///
    /// # Errors
    ///
    /// [`PriceError`] naming the file: unreadable, too large, not JSON, not a page, or in
    /// another currency than the files before it.
    pub fn load(paths: &[PathBuf]) -> Result<PriceSheet, PriceError> {
        let mut sheet = PriceSheet::default();
        for path in paths {
            let text = read(path)?;
            sheet.add_page(&path.display().to_string(), &text)?;
        }
        Ok(sheet)
    }

    /// Adds one page, `file` naming it in errors and sources.
    ///
    /// # Errors
    ///
    /// [`PriceError::NotJson`], [`PriceError::Shape`] or [`PriceError::Currency`].
    pub fn add_page(&mut self, file: &str, text: &str) -> Result<PageSummary, PriceError> {
        let value: Value = match serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(text))
        {
            Ok(v) => v,
            Err(e) => {
                let (line, column, message) = match decode_json(text) {
                    Err(d) => (d.line, d.column, d.message.to_string()),
                    Ok(_) => (
                        u32::try_from(e.line()).unwrap_or(0),
                        u32::try_from(e.column()).unwrap_or(0),
                        e.to_string(),
                    ),
                };
                return Err(PriceError::NotJson {
                    file: file.to_string(),
                    line,
                    column,
                    message,
                });
            }
        };
        let shape = |pointer: String, expected: &str, found: String| {
            let line = decode_json(text).ok().and_then(|doc| {
                let mut p = pointer.as_str();
                loop {
                    if let Some(span) = doc.positions.locate(p) {
                        return Some(span.line);
                    }
                    p = &p[..p.rfind('/')?];
                }
            });
            PriceError::Shape {
                file: file.to_string(),
                line,
                pointer,
                expected: expected.to_string(),
                found,
            }
        };
        let Some(top) = value.as_object() else {
            return Err(shape(
                String::new(),
                "an object with an \"Items\" array",
                describe(&value),
            ));
        };
        let items = match top.get("Items") {
            Some(Value::Array(items)) => items,
            Some(other) => {
                return Err(shape(
                    "/Items".into(),
                    "an array of price items",
                    describe(other),
                ));
            }
            None => {
                return Err(shape(
                    "/Items".into(),
                    "an array of price items",
                    format!("no \"Items\" key (the object has keys {})", keys(top)),
                ));
            }
        };
        let next_page = match top.get("NextPageLink") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(shape(
                    "/NextPageLink".into(),
                    "a string or null",
                    describe(other),
                ));
            }
        };
        let page_currency = top
            .get("BillingCurrency")
            .and_then(Value::as_str)
            .unwrap_or("USD");
        let positions = std::cell::OnceCell::new();
        let line_of = |pointer: &str| {
            positions
                .get_or_init(|| decode_json(text).ok().map(|d| d.positions))
                .as_ref()
                .and_then(|p| p.locate(pointer))
                .map(|s| s.line)
        };
        let mut added = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let ptr = format!("/Items/{i}");
            let Some(obj) = item.as_object() else {
                return Err(shape(ptr, "a price item (an object)", describe(item)));
            };
            let required_str = |key: &str| -> Result<&str, PriceError> {
                match obj.get(key) {
                    Some(Value::String(s)) => Ok(s.as_str()),
                    Some(other) => Err(shape(format!("{ptr}/{key}"), "a string", describe(other))),
                    None => Err(shape(
                        format!("{ptr}/{key}"),
                        "a string",
                        format!("no {key:?} key (the item has keys {})", keys(obj)),
                    )),
                }
            };
            let optional_str = |key: &str| -> Result<Option<&str>, PriceError> {
                match obj.get(key) {
                    Some(Value::String(s)) => Ok(Some(s.as_str())),
                    None | Some(Value::Null) => Ok(None),
                    Some(other) => Err(shape(
                        format!("{ptr}/{key}"),
                        "a string or null",
                        describe(other),
                    )),
                }
            };
            let sku = required_str("armSkuName")?;
            let region = required_str("armRegionName")?;
            let hourly = match obj.get("retailPrice") {
                Some(Value::Number(n)) => n.as_f64().filter(|p| p.is_finite() && *p >= 0.0),
                Some(other) => {
                    return Err(shape(
                        format!("{ptr}/retailPrice"),
                        "a number",
                        describe(other),
                    ));
                }
                None => {
                    return Err(shape(
                        format!("{ptr}/retailPrice"),
                        "a number",
                        format!("no \"retailPrice\" key (the item has keys {})", keys(obj)),
                    ));
                }
            };
            let Some(hourly) = hourly else {
                return Err(shape(
                    format!("{ptr}/retailPrice"),
                    "a price of 0 or more",
                    describe(&obj["retailPrice"]),
                ));
            };
            let service = optional_str("serviceName")?;
            let price_type = optional_str("type")?;
            let unit = optional_str("unitOfMeasure")?;
            let product = optional_str("productName")?.unwrap_or_default();
            let meter = optional_str("meterName")?;
            let sku_name = optional_str("skuName")?;
            let currency = optional_str("currencyCode")?.unwrap_or(page_currency);
            let effective = optional_str("effectiveStartDate")?;
            // Hourly pay-as-you-go VM meters only: not reservations (a whole term's price
            // with the unit "1 Hour"), not Dev/Test rows, not disks or other services.
            let hourly_vm = service == Some("Virtual Machines")
                && price_type == Some("Consumption")
                && unit.is_some_and(|u| {
                    let u = u.trim().to_ascii_lowercase();
                    u == "1 hour" || u == "1/hour"
                })
                && !sku.is_empty()
                && !region.is_empty();
            if !hourly_vm {
                continue;
            }
            let os = if product.trim_end().to_ascii_lowercase().ends_with("windows") {
                Os::Windows
            } else {
                Os::Linux
            };
            let name = meter.or(sku_name).unwrap_or_default().trim_end();
            let lower = name.to_ascii_lowercase();
            let priority = if lower.ends_with(" spot") {
                Priority::Spot
            } else if lower.ends_with(" low priority") {
                Priority::LowPriority
            } else {
                Priority::Regular
            };
            let line = line_of(&ptr);
            added.push(Price {
                sku: sku.to_string(),
                region: region.to_string(),
                os,
                priority,
                hourly,
                currency: currency.to_string(),
                meter: name.to_string(),
                product: product.to_string(),
                effective: effective.map(str::to_string),
                source: match line {
                    Some(l) => format!("{file}:{l}"),
                    None => file.to_string(),
                },
            });
        }
        for p in &added {
            match &self.currency {
                None => self.currency = Some((p.currency.clone(), file.to_string())),
                Some((c, first)) if !c.eq_ignore_ascii_case(&p.currency) => {
                    return Err(PriceError::Currency {
                        file: file.to_string(),
                        found: p.currency.clone(),
                        first: first.clone(),
                        expected: c.clone(),
                    });
                }
                Some(_) => {}
            }
        }
        let summary = PageSummary {
            items: items.len(),
            hourly_vm_prices: added.len(),
            next_page,
        };
        for p in added {
            let (sku, region) = (sku_key(&p.sku), region_key(&p.region));
            self.regions.insert(region.clone());
            self.index
                .entry(sku)
                .or_default()
                .entry(region)
                .or_default()
                .push(self.prices.len());
            self.prices.push(p);
        }
        self.files.push(file.to_string());
        self.pages.push((file.to_string(), summary.clone()));
        Ok(summary)
    }

    /// The hourly price of `sku` (any case, with or without `Standard_`) in `region` (a
    /// programmatic or display name) for `os` and `priority`: the row with the latest
    /// `effectiveStartDate` when several match. `None` when the pages hold no such meter:
    /// the price is unknown (never 0).
    pub fn lookup(&self, sku: &str, region: &str, os: Os, priority: Priority) -> Option<&Price> {
        self.meters(sku, region)
            .filter(|p| p.os == os && p.priority == priority)
            .fold(None, |best: Option<&Price>, p| match best {
                Some(b) if b.effective >= p.effective => Some(b),
                _ => Some(p),
            })
    }

    /// Every price of `sku` in `region`.
    fn meters(&self, sku: &str, region: &str) -> impl Iterator<Item = &Price> {
        self.index
            .get(&sku_key(sku))
            .and_then(|by_region| by_region.get(&region_key(region)))
            .into_iter()
            .flatten()
            .filter_map(|&i| self.prices.get(i))
    }

    /// Whether the pages price `sku` in any region (to say why a price is missing).
    pub fn knows_sku(&self, sku: &str) -> bool {
        self.index.contains_key(&sku_key(sku))
    }

    /// Whether the pages price any size in `region`.
    pub fn knows_region(&self, region: &str) -> bool {
        self.regions.contains(&region_key(region))
    }

    /// The meters of `sku` in `region` the pages do have, as `linux regular`, `windows spot`.
    pub fn meters_of(&self, sku: &str, region: &str) -> Vec<(Os, Priority)> {
        let mut v: Vec<(Os, Priority)> = self
            .meters(sku, region)
            .map(|p| (p.os, p.priority))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Every hourly virtual machine price read, in file order.
    pub fn prices(&self) -> &[Price] {
        &self.prices
    }

    /// The files read, in order.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// What each file held.
    pub fn pages(&self) -> &[(String, PageSummary)] {
        &self.pages
    }

    /// The currency of every price (`USD` when no price was read).
    pub fn currency(&self) -> &str {
        self.currency.as_ref().map_or("USD", |(c, _)| c.as_str())
    }

    /// True when no hourly virtual machine price was read.
    pub fn is_empty(&self) -> bool {
        self.prices.is_empty()
    }
}

fn read(path: &Path) -> Result<String, PriceError> {
    let err = |e: std::io::Error| PriceError::Read {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let size = std::fs::metadata(path).map_err(err)?.len();
    if size > MAX_PRICE_FILE_BYTES {
        return Err(PriceError::TooLarge {
            path: path.to_path_buf(),
            size,
        });
    }
    std::fs::read_to_string(path).map_err(err)
}

/// A size name compared without case and without the `Standard_` prefix.
pub(crate) fn sku_key(sku: &str) -> String {
    let lower = sku.trim().to_ascii_lowercase();
    lower
        .strip_prefix("standard_")
        .map_or(lower.clone(), str::to_string)
}

/// A region compared as a programmatic name (`East US` and `eastus` are one).
pub(crate) fn region_key(region: &str) -> String {
    computeguard_policy_core::region::normalize(region)
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                format!("the string {short:?}...")
            } else {
                format!("the string {short:?}")
            }
        }
        Value::Array(a) if a.is_empty() => "an empty array".to_string(),
        Value::Array(a) => format!("an array of {} item(s)", a.len()),
        Value::Object(o) if o.is_empty() => "an empty object".to_string(),
        Value::Object(o) => format!("an object with keys {}", keys(o)),
    }
}

fn keys(o: &Map<String, Value>) -> String {
    let mut names: Vec<&str> = o.keys().map(String::as_str).collect();
    names.sort_unstable();
    let more = names.len().saturating_sub(8);
    let mut text = names
        .iter()
        .take(8)
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text
}
