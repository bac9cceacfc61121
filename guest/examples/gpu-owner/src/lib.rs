//! `gpu-owner`: an example policy written in Rust with `computeguard-sdk`.
//!
//! Rule `gpu-owner-tag` (error): every resource that runs on a GPU VM size must carry
//! an owner label/tag, so that someone answers for the most expensive capacity in
//! the subscription. The key is `owner` unless the `ownerKey` setting says otherwise:
//!
//! ```yaml
//! # computeguard.yaml
//! settings:
//!   gpu-owner:
//!     ownerKey: team
//! ```
//!
//! Build: `cargo build -p gpu-owner-policy --target wasm32-wasip2 --profile guest
//! --target-dir target/guest`, then `computeguard check --policy
//! target/guest/wasm32-wasip2/guest/gpu_owner_policy.wasm .`.

use computeguard_policy_core::catalog;
use computeguard_sdk::serde_json::Value;
use computeguard_sdk::{
    Error, Policy, PolicyInfo, Request, Resource, Response, RuleInfo, Severity, export_policy,
    parse_settings, resource_ref, resources, violation,
};

/// The rule this policy reports.
pub const RULE: &str = "gpu-owner-tag";
/// The label/tag key used when the `ownerKey` setting is absent.
pub const DEFAULT_OWNER_KEY: &str = "owner";

const SETTINGS_SCHEMA: &str = r#"{"type":"object","properties":{"ownerKey":{"type":"string"}}}"#;
const REMEDIATION: &str = "Add an owner tag (Azure ML `tags:`, Kubernetes `metadata.labels`) naming the team or person responsible for the GPU spend.";

/// The policy. `export_policy!` below makes it the component's evaluator.
pub struct GpuOwner;

/// The owner key from parsed settings: `ownerKey`, else `owner`.
fn owner_key(settings: &str) -> Result<String, String> {
    let map = parse_settings(settings)?;
    match map.get("ownerKey") {
        None | Some(Value::Null) => Ok(DEFAULT_OWNER_KEY.into()),
        Some(Value::String(k)) if !k.trim().is_empty() => Ok(k.trim().to_string()),
        Some(Value::String(_)) => Err("`ownerKey` must not be empty".into()),
        Some(other) => Err(format!("`ownerKey` must be a string, not `{other}`")),
    }
}

/// A resource runs on GPUs when its size is a catalog size with at least one GPU.
fn gpu_sku(r: &Resource) -> Option<&str> {
    r.sku
        .as_deref()
        .filter(|name| catalog::sku(name).is_some_and(|f| f.gpu_count.is_some_and(|c| c > 0.0)))
}

/// The resource carries a non-blank `key` label/tag (keys compare case-insensitively,
/// as Azure tag names do).
fn has_owner(r: &Resource, key: &str) -> bool {
    r.labels
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case(key) && !v.trim().is_empty())
}

impl Policy for GpuOwner {
    fn metadata() -> PolicyInfo {
        PolicyInfo {
            name: "gpu-owner".into(),
            version: "0.1.0".into(),
            source_digest: String::new(),
            rules: vec![RuleInfo {
                id: RULE.into(),
                severity: Severity::Error,
                description: "Every resource on a GPU VM size carries an owner label or tag."
                    .into(),
                rationale: "GPU sizes are the most expensive capacity in a subscription; an \
                            owner tag tells cost reviews and incident responders whom to ask \
                            (Azure Cloud Adoption Framework, resource tagging strategy)."
                    .into(),
                remediation: REMEDIATION.into(),
                targets: Vec::new(),
            }],
            settings_schema: Some(SETTINGS_SCHEMA.into()),
        }
    }

    fn validate_settings(settings: String) -> Result<(), String> {
        owner_key(&settings).map(|_| ())
    }

    fn evaluate(request: Request) -> Result<Response, Error> {
        let key = owner_key(&request.settings).map_err(Error::InvalidSettings)?;
        let found = resources(&request)?;
        let violations = found
            .iter()
            .filter_map(|(r, _object)| {
                let sku = gpu_sku(r)?;
                if has_owner(r, &key) {
                    return None;
                }
                let message = format!(
                    "{} runs on GPU size {sku} without an `{key}` tag",
                    r.display
                );
                Some(
                    violation(RULE, Severity::Error, message, r, "labels")
                        .with_remediation(REMEDIATION),
                )
            })
            .collect();
        Ok(Response {
            violations,
            resources: found.iter().map(|(r, _)| resource_ref(r)).collect(),
            patch: None,
        })
    }
}

export_policy!(GpuOwner);

#[cfg(test)]
mod tests {
    use super::*;
    use computeguard_sdk::{Operation, SourceKind};

    fn request(document: &str, settings: &str) -> Request {
        Request {
            document: document.into(),
            source_kind: SourceKind::AzureMl,
            operation: Operation::None,
            settings: settings.into(),
            as_of: "2026-11-22".into(),
        }
    }

    const CLUSTER: &str =
        r#"{"type": "amlcompute", "name": "gpu", "size": "standard_nc6", "max_instances": 2}"#;

    #[test]
    fn untagged_gpu_cluster_is_reported_at_its_size() -> Result<(), Error> {
        let out = GpuOwner::evaluate(request(CLUSTER, "{}"))?;
        assert_eq!(out.resources.len(), 1);
        assert_eq!(out.violations.len(), 1);
        let v = &out.violations[0];
        assert_eq!(v.rule, RULE);
        assert_eq!(v.path, "/size");
        assert_eq!(
            v.message,
            "Azure ML compute cluster gpu runs on GPU size Standard_NC6 without an `owner` tag"
        );
        assert_eq!(v.resource.name, "gpu");
        Ok(())
    }

    #[test]
    fn owner_tag_and_cpu_sizes_pass() -> Result<(), Error> {
        let tagged = CLUSTER.replace("\"max", "\"tags\": {\"Owner\": \"ml-platform\"}, \"max");
        assert!(
            GpuOwner::evaluate(request(&tagged, ""))?
                .violations
                .is_empty()
        );
        let cpu = CLUSTER.replace("standard_nc6", "Standard_DS3_v2");
        assert!(GpuOwner::evaluate(request(&cpu, ""))?.violations.is_empty());
        Ok(())
    }

    #[test]
    fn owner_key_setting_changes_the_key() -> Result<(), Error> {
        let tagged = CLUSTER.replace("\"max", "\"tags\": {\"owner\": \"x\"}, \"max");
        let out = GpuOwner::evaluate(request(&tagged, r#"{"ownerKey": "team"}"#))?;
        assert_eq!(out.violations.len(), 1);
        assert!(out.violations[0].message.ends_with("without an `team` tag"));
        Ok(())
    }

    #[test]
    fn settings_are_checked() {
        assert_eq!(GpuOwner::validate_settings("{}".into()), Ok(()));
        assert_eq!(
            GpuOwner::validate_settings(r#"{"ownerKey": 42}"#.into()),
            Err("`ownerKey` must be a string, not `42`".into())
        );
        assert!(matches!(
            GpuOwner::evaluate(request(CLUSTER, r#"{"ownerKey": ""}"#)),
            Err(Error::InvalidSettings(_))
        ));
    }
}
