//! Azure Machine Learning's own quota and size lists: the REST "Usages - List" body
//! (`GET .../providers/Microsoft.MachineLearningServices/locations/{R}/usages`) and the
//! "Virtual Machine Sizes - List" body (`.../locations/{R}/vmSizes`).
//!
//! Azure ML usage differs from compute usage: `name.value` is display text ("Standard NC
//! Family Cluster Dedicated vCPUs"), not a family id; entries come at several scopes
//! (subscription, workspace, compute) told apart by `id` and `type`; and a `limit` of -1
//! means unlimited.

use super::quota::family_key;
use super::shape::{Doc, ShapeError, idx_ptr, key_ptr};
use serde_json::Value;

const USAGE_DOC: Doc = Doc("an Azure ML usage list (REST Usages - List body)");
const SIZES_DOC: Doc = Doc("an Azure ML VM size list (REST Virtual Machine Sizes - List body)");

/// Where an Azure ML usage entry counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MlScope {
    /// The subscription in the region (the quota itself).
    Subscription,
    /// One workspace (`.../workspaces/{workspace}/usages/...`).
    Workspace {
        /// The workspace name, when the `id` names it.
        workspace: Option<String>,
    },
    /// One compute of a workspace (`.../workspaces/{w}/computes/{compute}/usages/...`).
    Compute {
        /// The workspace name, when the `id` names it.
        workspace: Option<String>,
        /// The compute name, when the `id` names it.
        compute: Option<String>,
    },
}

/// Dedicated or low-priority vCPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlPriority {
    /// "Dedicated" in the name.
    Dedicated,
    /// "LowPriority" in the name.
    LowPriority,
}

/// An Azure ML quota limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MlLimit {
    /// `-1`: no limit.
    Unlimited,
    /// At most this many.
    Max(u64),
}

/// One entry of an Azure ML usage list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MlUsageEntry {
    /// `id`: the resource id of the counter, when printed.
    pub id: Option<String>,
    /// `type`, as printed (`Microsoft.MachineLearningServices/vmFamily/usages`; the samples
    /// spell workspace types both `workspaces/...` and `workspace/...`).
    pub usage_type: String,
    /// The scope, from the `id` path (or from `type` when there is no `id`).
    pub scope: MlScope,
    /// `name.value`: display text ("Standard NC Family Cluster Dedicated vCPUs", "Clusters").
    pub name: String,
    /// The VM family the name counts ("Standard NC Family"), if it names one.
    pub family: Option<String>,
    /// Dedicated or low priority, if the name says.
    pub priority: Option<MlPriority>,
    /// `currentValue`.
    pub current: i64,
    /// `limit` (-1 is [`MlLimit::Unlimited`]).
    pub limit: MlLimit,
}

impl MlUsageEntry {
    /// [`family_key`] of [`MlUsageEntry::family`]: equal to the key of the compute SKU
    /// family (`standardNCFamily`) it counts.
    pub fn family_key(&self) -> Option<String> {
        self.family.as_deref().map(family_key)
    }
}

/// One size of an Azure ML VM size list.
#[derive(Clone, Debug, PartialEq)]
pub struct MlVmSize {
    /// `name` (`Standard_DS1_v2`).
    pub name: String,
    /// `family` (`standardDSv2Family`).
    pub family: Option<String>,
    /// `vCPUs`.
    pub vcpus: Option<u64>,
    /// `gpus` (printed as an integer, 0 for CPU sizes).
    pub gpus: Option<u64>,
    /// `memoryGB` (GiB).
    pub memory_gib: Option<f64>,
    /// `maxResourceVolumeMB` (temporary disk).
    pub max_resource_volume_mb: Option<u64>,
    /// `osVhdSizeMB`.
    pub os_vhd_size_mb: Option<u64>,
    /// `lowPriorityCapable`.
    pub low_priority_capable: Option<bool>,
    /// `premiumIO`.
    pub premium_io: Option<bool>,
    /// `supportedComputeTypes` (`AmlCompute`, `ComputeInstance`, `MIR`).
    pub supported_compute_types: Vec<String>,
}

const ML_USAGE_OBJECT: &str = "an Azure ML usage object (with \"type\", \"name\": {\"value\": \
                               ...}, \"currentValue\" and \"limit\")";

/// Reads an Azure ML "Usages - List" body (`{"value": [...]}`; a bare array of the same
/// entries is read too), or what `az ml compute list-usage -o json` prints: a bare array of
/// the same entries as the `azure-ai-ml` SDK dumps them, with `current_value` (and
/// `name.localized_value`, `aml_workspace_location`) in snake case.
///
/// # Errors
/// [`ShapeError`] when `v` is neither shape, or an entry lacks `type`, `name.value`,
/// `currentValue` or `limit`, or has a limit below -1 (e.g. a compute usage list, whose
/// entries have no `type`).
pub fn parse_ml_usage(v: &Value) -> Result<Vec<MlUsageEntry>, ShapeError> {
    let doc = USAGE_DOC;
    let (items, base) = doc.list(v, "a bare array of usage objects", "REST Usages - List")?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ptr = idx_ptr(&base, i);
        let obj = doc.object(item, &ptr, ML_USAGE_OBJECT)?;
        let current_key = if obj.contains_key("currentValue") || !obj.contains_key("current_value")
        {
            "currentValue"
        } else {
            "current_value"
        };
        if !obj.contains_key("type") && obj.contains_key(current_key) {
            return Err(doc.err(
                &ptr,
                ML_USAGE_OBJECT,
                "a usage entry without \"type\": compute usage (`az vm list-usage`, REST \
                 Usage - List) is read by parse_usage",
            ));
        }
        let usage_type = doc.req_str(obj, &ptr, "type")?;
        let id = doc.opt_str(obj, &ptr, "id")?;
        let name = doc.req_object(obj, &ptr, "name", "an object with a \"value\" string")?;
        let name = doc.req_str(name, &key_ptr(&ptr, "name"), "value")?;
        let raw_limit = doc.req_int(obj, &ptr, "limit")?;
        let limit = match raw_limit {
            -1 => MlLimit::Unlimited,
            n => MlLimit::Max(u64::try_from(n).map_err(|_| {
                doc.err(
                    &key_ptr(&ptr, "limit"),
                    "a limit of at least 0, or -1 for unlimited",
                    format!("the number {n}"),
                )
            })?),
        };
        out.push(MlUsageEntry {
            id: id.map(str::to_string),
            usage_type: usage_type.to_string(),
            scope: scope(id, usage_type),
            name: name.to_string(),
            family: family_of(name),
            priority: priority_of(name),
            current: doc.req_int(obj, &ptr, current_key)?,
            limit,
        });
    }
    Ok(out)
}

/// The segment after `/{key}/` in a resource id (case-insensitive key).
fn segment_after<'a>(id: &'a str, key: &str) -> Option<&'a str> {
    let mut parts = id.split('/');
    while let Some(p) = parts.next() {
        if p.eq_ignore_ascii_case(key) {
            return parts.next().filter(|s| !s.is_empty());
        }
    }
    None
}

fn scope(id: Option<&str>, usage_type: &str) -> MlScope {
    if let Some(id) = id {
        let workspace = segment_after(id, "workspaces").map(str::to_string);
        let compute = segment_after(id, "computes").map(str::to_string);
        if compute.is_some() {
            return MlScope::Compute { workspace, compute };
        }
        if workspace.is_some() {
            return MlScope::Workspace { workspace };
        }
        return MlScope::Subscription;
    }
    let parts: Vec<&str> = usage_type.split('/').collect();
    if parts.iter().any(|p| p.eq_ignore_ascii_case("computes")) {
        MlScope::Compute {
            workspace: None,
            compute: None,
        }
    } else if parts
        .iter()
        .any(|p| p.eq_ignore_ascii_case("workspaces") || p.eq_ignore_ascii_case("workspace"))
    {
        MlScope::Workspace { workspace: None }
    } else {
        MlScope::Subscription
    }
}

/// "Standard NC Family Cluster Dedicated vCPUs" -> "Standard NC Family".
fn family_of(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let end = lower.find(" family")? + " family".len();
    let family = name.get(..end)?.trim();
    // "Family" must end a word: "Standard NC Family Cluster ..." but not "... Familyx".
    let next = lower.get(end..)?.chars().next();
    if family.len() > "family".len() && next.is_none_or(|c| c == ' ') {
        Some(family.to_string())
    } else {
        None
    }
}

fn priority_of(name: &str) -> Option<MlPriority> {
    let words = || name.split_whitespace();
    if words().any(|w| w.eq_ignore_ascii_case("LowPriority")) {
        Some(MlPriority::LowPriority)
    } else if words().any(|w| w.eq_ignore_ascii_case("Dedicated")) {
        Some(MlPriority::Dedicated)
    } else {
        None
    }
}

const ML_SIZE_OBJECT: &str = "an Azure ML VM size object (with \"name\")";

/// Reads an Azure ML "Virtual Machine Sizes - List" body (`{"value": [...]}`; a bare array
/// of the same entries is read too).
///
/// # Errors
/// [`ShapeError`] when `v` is neither shape, an entry has no `name`, or a field has the
/// wrong type (e.g. a compute SKU list, whose numbers are strings inside `capabilities`).
pub fn parse_ml_sizes(v: &Value) -> Result<Vec<MlVmSize>, ShapeError> {
    let doc = SIZES_DOC;
    let (items, base) = doc.list(
        v,
        "a bare array of VM size objects",
        "REST Virtual Machine Sizes - List",
    )?;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ptr = idx_ptr(&base, i);
        let obj = doc.object(item, &ptr, ML_SIZE_OBJECT)?;
        if let Some(rt) = obj.get("resourceType").and_then(Value::as_str) {
            return Err(doc.err(
                &ptr,
                ML_SIZE_OBJECT,
                format!(
                    "a resource SKU (resourceType {rt:?}): compute SKU lists are read by \
                     parse_skus"
                ),
            ));
        }
        out.push(MlVmSize {
            name: doc.req_str(obj, &ptr, "name")?.to_string(),
            family: doc.opt_str(obj, &ptr, "family")?.map(str::to_string),
            vcpus: doc.opt_u64(obj, &ptr, "vCPUs")?,
            gpus: doc.opt_u64(obj, &ptr, "gpus")?,
            memory_gib: doc.opt_f64(obj, &ptr, "memoryGB")?,
            max_resource_volume_mb: doc.opt_u64(obj, &ptr, "maxResourceVolumeMB")?,
            os_vhd_size_mb: doc.opt_u64(obj, &ptr, "osVhdSizeMB")?,
            low_priority_capable: doc.opt_bool(obj, &ptr, "lowPriorityCapable")?,
            premium_io: doc.opt_bool(obj, &ptr, "premiumIO")?,
            supported_compute_types: doc.opt_str_list(obj, &ptr, "supportedComputeTypes")?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `az ml compute list-usage -o json` prints each entry as the `azure-ai-ml` SDK dumps
    /// it (`UsageSchema`): snake case, in a bare array.
    #[test]
    fn the_cli_output_in_snake_case_is_read() {
        let cli = json!([{
            "id": "/subscriptions/00000000-0000-0000-0000-000000000000/usages/Standard_NC_Family_Cluster_Dedicated_vCPUs",
            "aml_workspace_location": "eastus",
            "type": "Microsoft.MachineLearningServices/vmFamily/usages",
            "unit": "count",
            "current_value": 12,
            "limit": 24,
            "name": {"value": "Standard NC Family Cluster Dedicated vCPUs",
                     "localized_value": "Standard NC Family Cluster Dedicated vCPUs"}
        }]);
        let entries = parse_ml_usage(&cli).expect("CLI shape");
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].current, 12);
        assert_eq!(entries[0].limit, MlLimit::Max(24));
        assert_eq!(entries[0].scope, MlScope::Subscription);
        assert_eq!(entries[0].family_key().as_deref(), Some("standardnc"));
        let missing = json!([{"type": "Microsoft.MachineLearningServices/vmFamily/usages",
            "limit": 24, "name": {"value": "Standard NC Family Cluster Dedicated vCPUs"}}]);
        let e = parse_ml_usage(&missing).expect_err("no current value");
        assert!(e.to_string().contains("currentValue"), "{e}");
    }
}
