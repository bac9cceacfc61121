//! Compute quota usage as Azure prints it: `az vm list-usage --location R -o json` and the
//! REST "Usage - List" body (`GET .../providers/Microsoft.Compute/locations/{R}/usages`).
//!
//! The REST body is `{"value": [{"limit": 48, "unit": "Count", "currentValue": 0, "name":
//! {"value": "standardNCFamily", "localizedValue": "Standard NC Family vCPUs"}}], "nextLink"?}`;
//! the CLI prints the entries as a bare array, with `currentValue` and `limit` as strings and
//! `localName` (a copy of `name.localizedValue`) added. Neither names its region: the caller
//! knows which region it asked for and gives it to [`super::Quota::new`].

use super::shape::{Doc, ShapeError, idx_ptr, key_ptr};
use serde_json::Value;

const DOC: Doc =
    Doc("a compute usage list (`az vm list-usage -o json` or a REST Usage - List body)");

/// One quota counter of one region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageEntry {
    /// `name.value`: the counter id. A VM family (`standardNCFamily`,
    /// `StandardNCADSA100v4Family`, `Standard NCASv3_T4 Family`; compare with
    /// [`super::family_key`]), `cores` (all regional vCPUs), `lowPriorityCores`, or another
    /// counter (`virtualMachines`, `PremiumDiskCount`, ...).
    pub id: String,
    /// `name.localizedValue` (or the CLI's `localName`): display text such as
    /// "Standard NC Family vCPUs".
    pub display: Option<String>,
    /// `currentValue`: what is in use.
    pub current: i64,
    /// `limit`: the quota.
    pub limit: i64,
    /// `unit` (`Count`), when printed.
    pub unit: Option<String>,
}

const USAGE_OBJECT: &str =
    "a usage object (with \"name\": {\"value\": ...}, \"currentValue\" and \"limit\")";

/// Reads `az vm list-usage -o json` (a bare array, counts as strings) or a REST "Usage -
/// List" body (`{"value": [...]}`, counts as numbers).
///
/// # Errors
/// [`ShapeError`] when `v` is neither shape or an entry lacks `name.value`, `currentValue` or
/// `limit` (e.g. a SKU list or an Azure ML usage list given instead).
pub fn parse_usage(v: &Value) -> Result<Vec<UsageEntry>, ShapeError> {
    let (items, base) = DOC.list(v, "`az vm list-usage -o json`", "REST Usage - List")?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ptr = idx_ptr(&base, i);
        let obj = DOC.object(item, &ptr, USAGE_OBJECT)?;
        if let Some(rt) = obj.get("resourceType").and_then(Value::as_str) {
            return Err(DOC.err(
                &ptr,
                USAGE_OBJECT,
                format!(
                    "a resource SKU (resourceType {rt:?}): that is `az vm list-skus` or REST \
                     Resource Skus - List output, read by parse_skus"
                ),
            ));
        }
        if let Some(t) = obj.get("type").and_then(Value::as_str)
            && t.starts_with("Microsoft.MachineLearningServices/")
        {
            return Err(DOC.err(
                &ptr,
                USAGE_OBJECT,
                format!("an Azure ML usage entry (type {t:?}), read by parse_ml_usage"),
            ));
        }
        let name = DOC.req_object(obj, &ptr, "name", "an object with a \"value\" string")?;
        let nptr = key_ptr(&ptr, "name");
        let id = DOC.req_str(name, &nptr, "value")?;
        let display = match DOC.opt_str(name, &nptr, "localizedValue")? {
            Some(d) => Some(d),
            None => DOC.opt_str(obj, &ptr, "localName")?,
        };
        out.push(UsageEntry {
            id: id.to_string(),
            display: display.map(str::to_string),
            current: DOC.req_int(obj, &ptr, "currentValue")?,
            limit: DOC.req_int(obj, &ptr, "limit")?,
            unit: DOC.opt_str(obj, &ptr, "unit")?.map(str::to_string),
        });
    }
    Ok(out)
}
