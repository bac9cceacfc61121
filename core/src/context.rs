//! What a policy instance knows beyond its built-in facts: catalog overlays and the
//! subscription's own Azure facts, given once through the WIT `context` interface
//! (`configure`).
//!
//! The context is one JSON object (see `wit/policy.wit`):
//!
//! ```json
//! {"catalog": [OVERLAY, ...],
//!  "azure": {"skus": [SKUS, ...], "usage": {"eastus": USAGE, ...},
//!            "mlUsage": {"eastus": ML_USAGE, ...}}}
//! ```
//!
//! [`parse`] reads and checks all of it and reports every problem, each prefixed
//! with where it is (``catalog[1]: at `/skus/0/vcpus`: ...``, `azure.usage.eastus: ...`,
//! `azure.mlUsage.eastus: ...`);
//! [`install`] makes it what every lookup sees for the rest of the instance. Without
//! a context, [`azure`] is `None` and the rules that need it stay silent (the host
//! says they were not evaluated).

use crate::azure::{
    Availability, MlUsageEntry, Quota, ShapeError, parse_ml_usage, parse_skus, parse_usage,
};
use crate::catalog::{self, overlay};
use serde_json::Value;
use std::sync::OnceLock;

/// The subscription's facts, indexed for the rules.
#[derive(Debug, Default)]
pub struct AzureFacts {
    /// Which sizes are offered where (from `azure.skus`); none when not given.
    pub availability: Option<Availability>,
    /// Free vCPUs per region and family (from `azure.usage`); none when not given.
    pub quota: Option<Quota>,
    /// Azure ML's own quota, per region as given (from `azure.mlUsage`: `az ml compute
    /// list-usage` or REST Usages - List of Microsoft.MachineLearningServices, neither of
    /// which names its region); none when not given.
    pub ml_usage: Option<Vec<(String, Vec<MlUsageEntry>)>>,
    /// The region of the Azure ML workspace the change deploys into (`azure.workspaceRegion`
    /// in computeguard.yaml, or the workspace file `check` was given with it), as a
    /// programmatic name: the region of Azure ML resources that do not name one.
    pub workspace_region: Option<String>,
}

/// A checked context, ready to install.
#[derive(Debug, Default)]
pub struct Context {
    /// Catalog overlays, in order.
    pub overlays: Vec<overlay::Overlay>,
    /// The subscription's facts; none when the context has no `azure` key.
    pub azure: Option<AzureFacts>,
}

/// Why a context was refused: every problem found, each naming where it is.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .problems.join("; "))]
pub struct ContextError {
    /// The problems, in document order.
    pub problems: Vec<String>,
}

impl ContextError {
    fn one(message: impl Into<String>) -> Self {
        Self {
            problems: vec![message.into()],
        }
    }
}

fn shape(at: &str, e: &ShapeError) -> String {
    format!("{at}: {e}")
}

/// Reads a context document (JSON text).
pub fn parse(json: &str) -> Result<Context, ContextError> {
    let text = if json.trim().is_empty() { "{}" } else { json };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| ContextError::one(format!("the context is not valid JSON: {e}")))?;
    let Value::Object(top) = &value else {
        return Err(ContextError::one(format!(
            "the context must be a JSON object, got {}",
            crate::settings::describe(&value)
        )));
    };
    let mut problems = Vec::new();
    let mut context = Context::default();
    for key in top.keys() {
        if key != "catalog" && key != "azure" {
            problems.push(format!(
                "`{key}`: unknown key; expected one of catalog, azure"
            ));
        }
    }
    match top.get("catalog") {
        None => {}
        Some(Value::Array(overlays)) => {
            for (i, doc) in overlays.iter().enumerate() {
                match overlay::parse(doc) {
                    Ok(o) => context.overlays.push(o),
                    Err(e) => {
                        problems.extend(e.problems.iter().map(|p| format!("catalog[{i}]: {p}")))
                    }
                }
            }
        }
        Some(other) => problems.push(format!(
            "`catalog`: expected a list of catalog overlays, got {}",
            crate::settings::describe(other)
        )),
    }
    match top.get("azure") {
        None => {}
        Some(Value::Object(azure)) => {
            let mut facts = AzureFacts::default();
            for key in azure.keys() {
                if !["skus", "usage", "mlUsage", "workspaceRegion"].contains(&key.as_str()) {
                    problems.push(format!(
                        "`azure.{key}`: unknown key; expected one of skus, usage, mlUsage, workspaceRegion"
                    ));
                }
            }
            match azure.get("skus") {
                None => {}
                Some(Value::Array(bodies)) => {
                    let mut offers = Vec::new();
                    for (i, body) in bodies.iter().enumerate() {
                        match parse_skus(body) {
                            Ok(o) => offers.extend(o),
                            Err(e) => problems.push(shape(&format!("azure.skus[{i}]"), &e)),
                        }
                    }
                    facts.availability = Some(Availability::new(offers));
                }
                Some(other) => problems.push(format!(
                    "`azure.skus`: expected a list of `az vm list-skus` outputs or Resource Skus - List bodies, got {}",
                    crate::settings::describe(other)
                )),
            }
            match azure.get("usage") {
                None => {}
                Some(Value::Object(regions)) => {
                    let mut entries = Vec::new();
                    for (region, body) in regions {
                        match parse_usage(body) {
                            Ok(u) => entries.push((region.clone(), u)),
                            Err(e) => problems.push(shape(&format!("azure.usage.{region}"), &e)),
                        }
                    }
                    facts.quota = Some(Quota::new(entries));
                }
                Some(other) => problems.push(format!(
                    "`azure.usage`: expected an object from region to `az vm list-usage` output or Usage - List body, got {}",
                    crate::settings::describe(other)
                )),
            }
            match azure.get("mlUsage") {
                None => {}
                Some(Value::Object(regions)) => {
                    let mut entries = Vec::new();
                    for (region, body) in regions {
                        match parse_ml_usage(body) {
                            Ok(u) => entries.push((region.clone(), u)),
                            Err(e) => problems.push(shape(&format!("azure.mlUsage.{region}"), &e)),
                        }
                    }
                    facts.ml_usage = Some(entries);
                }
                Some(other) => problems.push(format!(
                    "`azure.mlUsage`: expected an object from region to `az ml compute list-usage` output or Azure ML Usages - List body, got {}",
                    crate::settings::describe(other)
                )),
            }
            match azure.get("workspaceRegion") {
                None => {}
                Some(Value::String(r)) => match crate::region::region(r) {
                    Some(known) => facts.workspace_region = Some(known.name.to_string()),
                    None => problems.push(format!(
                        "`azure.workspaceRegion`: `{r}` is not a known Azure region"
                    )),
                },
                Some(other) => problems.push(format!(
                    "`azure.workspaceRegion`: expected a region name, got {}",
                    crate::settings::describe(other)
                )),
            }
            context.azure = Some(facts);
        }
        Some(other) => problems.push(format!(
            "`azure`: expected an object with skus, usage and mlUsage, got {}",
            crate::settings::describe(other)
        )),
    }
    if problems.is_empty() {
        Ok(context)
    } else {
        Err(ContextError { problems })
    }
}

static AZURE: OnceLock<AzureFacts> = OnceLock::new();

/// Makes `context` what this instance knows: the overlays go into the catalog
/// ([`catalog::install`]) and the Azure facts into [`azure`]. Once, before the
/// first lookup.
pub fn install(context: Context) -> Result<(), ContextError> {
    if AZURE.get().is_some() {
        return Err(ContextError::one(
            "the context is already configured: configure once per instance",
        ));
    }
    if !context.overlays.is_empty() {
        catalog::install(&context.overlays).map_err(|e| ContextError::one(e.to_string()))?;
    }
    AZURE.set(context.azure.unwrap_or_default()).map_err(|_| {
        ContextError::one("the context is already configured: configure once per instance")
    })
}

/// Azure ML resources that take their workspace's region (an online or batch deployment, a
/// job, a compute cluster or instance whose file names no workspace region) get the
/// installed `azure.workspaceRegion` as their parent's region, so the rules that judge a
/// region (`sku-available-in-region`, `quota-sufficient`, `region-colocated`) see it.
/// Nothing changes without one, or for a resource whose region is a deploy-time value.
pub fn fill_workspace_region(resources: &mut [crate::compute::Resource]) {
    let Some(region) = azure().and_then(|a| a.workspace_region.as_deref()) else {
        return;
    };
    for r in resources.iter_mut().filter(|r| takes_workspace_region(r)) {
        r.parent_region = Some(region.to_string());
        r.parent = Some(format!(
            "Azure ML workspace in {region} (azure.workspaceRegion)"
        ));
    }
}

/// An Azure ML resource whose region is its workspace's and that no file states: no parent
/// region, and a region that is not a deploy-time value.
pub fn takes_workspace_region(r: &crate::compute::Resource) -> bool {
    matches!(
        r.kind.as_str(),
        "aml-online-deployment"
            | "aml-batch-deployment"
            | "aml-job"
            | "aml-compute-cluster"
            | "aml-compute-instance"
    ) && r.parent_region.is_none()
        && r.region.is_none()
        && !r.unresolved.iter().any(|f| f == "region")
}

/// The subscription's facts installed with the context; none without one.
pub fn azure() -> Option<&'static AzureFacts> {
    AZURE.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_named_with_its_place() {
        let err = parse(
            r#"{"catalog": [{"kind": "CatalogOverlay", "skus": [{"name": "Standard_NC6"}]}],
                "azure": {"skus": [{"value": [{"limit": 1}]}], "usage": {"eastus": [1]}, "quota": 1,
                          "mlUsage": {"eastus": [{"currentValue": 1, "limit": 2, "name": {"value": "cores"}}]}},
                "extra": true}"#,
        )
        .expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("`extra`: unknown key"), "{text}");
        assert!(
            text.contains("catalog[0]: at `/skus/0/source`: required field is missing"),
            "{text}"
        );
        assert!(text.contains("azure.skus[0]: "), "{text}");
        assert!(text.contains("azure.usage.eastus: "), "{text}");
        assert!(text.contains("azure.mlUsage.eastus: "), "{text}");
        assert!(text.contains("`azure.quota`: unknown key"), "{text}");
        assert_eq!(
            parse("[]").expect_err("array").to_string(),
            "the context must be a JSON object, got an array"
        );
    }

    #[test]
    fn an_empty_context_changes_nothing() {
        let c = parse("").expect("empty is {}");
        assert!(c.overlays.is_empty() && c.azure.is_none());
    }
}
