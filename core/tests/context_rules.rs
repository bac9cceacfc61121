//! The built-in rules that judge against the subscription's own facts,
//! `sku-available-in-region` and `quota-sufficient` (issue 25 item 4), evaluated on
//! real-shaped ARM and Terraform documents with the real samples of
//! `shared/corpus/azure-context/` (see its SOURCES.tsv) installed as the context, and the
//! CEL functions behind them, `skuOffer()` and `quota()`.
//!
//! A context is installed once per process (a policy instance), so every test of this
//! binary shares one, installed by [`setup`] before anything else looks at the catalog:
//!
//! - SKU lists: Azure/skewer's eastus REST body (`Standard_D2_v2`, `Standard_D13_v2_Promo`
//!   with a Location restriction, `Standard_D4s_v3`, `Standard_NV6` with every zone
//!   restricted) and the Java SDK's recorded eastus2 REST body (243 sizes, NC-series with
//!   family `standardNCFamily`);
//! - usage: the Java SDK's recorded eastus Usage - List body (`cores` 0 of 100,
//!   `lowPriorityCores` 0 of 100, `standardNCFamily` 0 of 48, no A100 v4 family), and the
//!   azure-cli's recorded westus one (`cores` 9 of 100, `standardNCFamily` 0 of 48);
//! - Azure ML usage (`mlUsage`): the REST API specs' eastus Usages - List example
//!   ("Standard NC Family Cluster Dedicated vCPUs" 12 of 24, "Total Cluster Dedicated
//!   Regional vCPUs" 14 of 24, "Total Cluster LowPriority Regional vCPUs" 18 of 50, family
//!   LowPriority limits -1; it spells the NCv3 family "Standard NCv3 Family", which does not
//!   match the SKU lists' `standardNCSv3Family`), none for westus;
//! - a catalog overlay giving `Standard_NC24ads_A100_v4` its real quota family
//!   (`standardNCADSA100v4Family`), which that 2020 usage list does not have.
//!
//! Without a context both rules are silent: `core/src/eval/azure.rs` tests that (nothing
//! is installed in the unit tests), and so does the pack's own test case.

// Helpers outside #[test] functions read fixtures: a missing or malformed fixture is a
// failed test, so they unwrap.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use computeguard_policy_core::ast;
use computeguard_policy_core::context;
use computeguard_policy_core::eval::{Evaluator, Input, Outcome, Violation};
use computeguard_policy_core::model::Source;
use computeguard_policy_core::pack::{Pack, Rule, RuleMeta, Severity};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;

const SKEWER_EASTUS: &str = "skus-rest-skewer-eastus-4skus-nv6-restricted.json";
const JAVA_SKUS_EASTUS2: &str = "skus-recording-java-eastus2-2020-canListSkusByRegion.json";
const JAVA_USAGE_EASTUS: &str = "usage-recording-java-eastus-2021-canListComputeUsages.json";
const CLI_USAGE_WESTUS: &str = "usage-recording-azurecli-westus-2023-test_vm_usage.yaml";
const ML_USAGE_EASTUS: &str = "ml-usage-rest-example-Usage_list-2024-04-01.json";

const ML_LINK: &str = "https://learn.microsoft.com/azure/machine-learning/how-to-manage-quotas";

const NC_LINK: &str = "https://learn.microsoft.com/azure/quotas/per-vm-quota-requests";

fn corpus_text(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/corpus/azure-context")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn corpus(name: &str) -> Value {
    serde_json::from_str(&corpus_text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `interactions[0].response.body.string` of an azure-cli vcrpy recording: a JSON string.
fn cli_body(name: &str) -> Value {
    let record: Value = serde_yaml_ng::from_str(&corpus_text(name)).unwrap();
    let body = record["interactions"][0]["response"]["body"]["string"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: the body is no string"));
    serde_json::from_str(body).unwrap()
}

/// `networkCallRecords[0].Response.Body` of a Java SDK session record: a JSON string.
fn java_body(name: &str) -> Value {
    let record = corpus(name);
    let body = record["networkCallRecords"][0]["Response"]["Body"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: the body is no string"));
    serde_json::from_str(body).unwrap()
}

/// Installs the context of this test binary, once.
fn setup() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let ctx = json!({
            "catalog": [{
                "kind": "CatalogOverlay",
                "date": "2026-11-20",
                "skus": [{
                    "name": "Standard_NC24ads_A100_v4",
                    "source": "az vm list-skus: family of the NCads_A100_v4 sizes",
                    "family": "standardNCADSA100v4Family"
                }]
            }],
            "azure": {
                "skus": [corpus(SKEWER_EASTUS), java_body(JAVA_SKUS_EASTUS2)],
                "usage": {"eastus": java_body(JAVA_USAGE_EASTUS), "westus": cli_body(CLI_USAGE_WESTUS)},
                "mlUsage": {"eastus": corpus(ML_USAGE_EASTUS)["responses"]["200"]["body"]}
            }
        });
        let parsed = context::parse(&ctx.to_string()).expect("the samples make a valid context");
        context::install(parsed).expect("installed once");
    });
}

/// The built-in pack, read from `policies/builtin.yaml` as the compiler reads it (each
/// expression parsed on the host), without its settings schema.
fn builtin() -> &'static Evaluator {
    static EVALUATOR: OnceLock<Evaluator> = OnceLock::new();
    EVALUATOR.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../policies/builtin.yaml");
        let text = std::fs::read_to_string(path).unwrap();
        let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
        let rules = doc["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
                let expr = |k: &str| {
                    text(k).map(|src| {
                        ast::parse(&src).unwrap_or_else(|e| panic!("{k} of {}: {e:?}", r["id"]))
                    })
                };
                Rule {
                    meta: RuleMeta {
                        id: text("id").unwrap(),
                        severity: serde_json::from_value(r["severity"].clone()).unwrap(),
                        targets: r
                            .get("targets")
                            .and_then(Value::as_array)
                            .map(|t| {
                                t.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_string)
                                    .collect()
                            })
                            .unwrap_or_default(),
                        description: text("description").unwrap(),
                        rationale: text("rationale").unwrap(),
                        remediation: text("remediation").unwrap(),
                        message: text("message"),
                        path: text("path"),
                        field: text("field"),
                    },
                    when: expr("when"),
                    assert: expr("assert").unwrap(),
                    message_expression: expr("messageExpression"),
                    severity_expression: expr("severityExpression"),
                }
            })
            .collect();
        Evaluator::new(Pack {
            name: "computeguard-builtin".into(),
            version: "0.1.0".into(),
            source_digest: String::new(),
            settings_schema: None,
            rules,
        })
    })
}

fn evaluate(doc: &Value, source: Source) -> Outcome {
    evaluate_with(doc, source, &json!({}))
}

fn evaluate_with(doc: &Value, source: Source, settings: &Value) -> Outcome {
    setup();
    builtin()
        .evaluate(&Input {
            document: doc,
            source,
            settings,
            as_of: "2026-11-22",
        })
        .expect("evaluates")
}

/// The findings of `rule`, as (resource, severity, message, path).
fn findings(out: &Outcome, rule: &str) -> Vec<Violation> {
    out.violations
        .iter()
        .filter(|v| v.rule == rule)
        .cloned()
        .collect()
}

/// An ARM template declaring `resources`.
fn template(resources: Value) -> Value {
    json!({
        "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
        "contentVersion": "1.0.0.0",
        "resources": resources
    })
}

/// An AKS cluster in `location` with `pools` (agentPoolProfiles).
fn aks(location: &str, pools: Value) -> Value {
    template(json!([{
        "type": "Microsoft.ContainerService/managedClusters",
        "apiVersion": "2024-09-01",
        "name": "aks-gpu",
        "location": location,
        "properties": {"kubernetesVersion": "1.30.3", "agentPoolProfiles": pools}
    }]))
}

fn gpu_pool(name: &str, size: &str, max: i64) -> Value {
    json!({"name": name, "mode": "User", "vmSize": size, "osType": "Linux",
           "enableAutoScaling": true, "count": 1, "minCount": 0, "maxCount": max,
           "nodeTaints": ["sku=gpu:NoSchedule"]})
}

fn vm(name: &str, size: &str, location: &str) -> Value {
    json!({"type": "Microsoft.Compute/virtualMachines", "apiVersion": "2024-07-01",
           "name": name, "location": location,
           "properties": {"hardwareProfile": {"vmSize": size}}})
}

/// Evaluates `expr` (CEL) on the only resource of `doc` through a one-rule pack, and
/// returns what it yields as the violation's message (the rule always fires).
fn cel(doc: &Value, expr: &str) -> String {
    setup();
    let pack = Evaluator::new(Pack {
        name: "probe".into(),
        version: "0.1.0".into(),
        source_digest: String::new(),
        settings_schema: None,
        rules: vec![Rule {
            meta: RuleMeta {
                id: "probe".into(),
                severity: Severity::Info,
                targets: vec![],
                description: "d".into(),
                rationale: "r".into(),
                remediation: "f".into(),
                message: None,
                path: None,
                field: None,
            },
            when: Some(ast::parse("resource.kind != 'aks-cluster'").unwrap()),
            assert: ast::parse("false").unwrap(),
            message_expression: Some(ast::parse(expr).unwrap()),
            severity_expression: None,
        }],
    });
    let out = pack
        .evaluate(&Input {
            document: doc,
            source: Source::Unknown,
            settings: &json!({}),
            as_of: "2026-11-22",
        })
        .expect("evaluates");
    out.violations
        .iter()
        .map(|v| v.message.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

// ---------------------------------------------------------------------------------------
// sku-available-in-region
// ---------------------------------------------------------------------------------------

/// NV6 in eastus: the skewer list restricts every zone (NotAvailableForSubscription), so a
/// pool asking for zone 1 cannot deploy; the same pool without zones can.
#[test]
fn aks_pool_in_a_restricted_zone_is_zones_not_offered() {
    let mut pool = gpu_pool("nv6", "Standard_NV6", 2);
    pool["availabilityZones"] = json!(["1"]);
    let out = evaluate(&aks("eastus", json!([pool])), Source::Arm);
    let f = findings(&out, "sku-available-in-region");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(
        f[0].message,
        "AKS node pool aks-gpu/nv6 uses Standard_NV6, which is not offered in zone(s) 1 of eastus \
         (NotAvailableForSubscription); use zones the size is offered in, or none"
    );
    assert_eq!(
        f[0].path,
        "/resources/0/properties/agentPoolProfiles/0/vmSize"
    );

    let no_zones = aks("eastus", json!([gpu_pool("nv6", "Standard_NV6", 2)]));
    assert!(findings(&evaluate(&no_zones, Source::Arm), "sku-available-in-region").is_empty());
}

/// A child `agentPools` resource with `availabilityZones`, its region from its cluster.
#[test]
fn agent_pool_resource_gets_its_clusters_region_and_zones() {
    let doc = template(json!([
        {"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
         "name": "aks-gpu", "location": "East US", "properties": {"agentPoolProfiles": []}},
        {"type": "Microsoft.ContainerService/managedClusters/agentPools", "apiVersion": "2024-09-01",
         "name": "aks-gpu/nv6", "properties": {"vmSize": "Standard_NV6", "count": 1,
         "availabilityZones": ["2", "3"]}}
    ]));
    let out = evaluate(&doc, Source::Arm);
    let f = findings(&out, "sku-available-in-region");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert!(
        f[0].message
            .contains("not offered in zone(s) 2, 3 of eastus (NotAvailableForSubscription)"),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].path, "/resources/1/properties/vmSize");
}

/// D13_v2_Promo in eastus: a Location restriction; the eastus2 list offers it.
#[test]
fn vm_of_a_location_restricted_size_is_restricted() {
    let out = evaluate(
        &template(json!([vm(
            "build-agent",
            "Standard_D13_v2_Promo",
            "eastus"
        )])),
        Source::Arm,
    );
    let f = findings(&out, "sku-available-in-region");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(
        f[0].message,
        "virtual machine build-agent uses Standard_D13_v2_Promo, which is restricted in eastus for \
         this subscription (NotAvailableForSubscription); the SKU lists offer it in eastus2"
    );
}

/// A pool in a region the lists do not offer the size in names where they do.
#[test]
fn pool_in_another_region_is_not_offered_with_the_regions_that_offer_it() {
    let out = evaluate(
        &aks("westeurope", json!([gpu_pool("nv6", "Standard_NV6", 1)])),
        Source::Arm,
    );
    let f = findings(&out, "sku-available-in-region");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(
        f[0].message,
        "AKS node pool aks-gpu/nv6 uses Standard_NV6, which is not offered in westeurope; the SKU \
         lists offer it in eastus, eastus2"
    );
    let shape = cel(
        &aks("westeurope", json!([gpu_pool("nv6", "Standard_NV6", 1)])),
        "[skuOffer(resource.sku, resource.parentRegion, resource.zones)].map(o, o.answer + '|' \
         + o.offeredIn[0] + ',' + o.offeredIn[1] + '|' + (o.reasonCode == null ? 'null' : o.reasonCode) \
         + '|' + string(size(o.zones)) + '|' + (o.evaluated ? 'evaluated' : 'not'))[0]",
    );
    assert_eq!(shape, "not-offered|eastus,eastus2|null|0|evaluated");
}

/// A size missing from the lists is unknown: info, with the `--all` advice.
#[test]
fn size_missing_from_the_lists_is_info() {
    let out = evaluate(
        &aks(
            "eastus",
            json!([gpu_pool("a100", "Standard_NC24ads_A100_v4", 1)]),
        ),
        Source::Arm,
    );
    let f = findings(&out, "sku-available-in-region");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(f[0].severity, Severity::Info);
    assert!(
        f[0].message.contains("is not in the SKU list given")
            && f[0]
                .message
                .contains("az vm list-skus --all --location eastus -o json"),
        "{}",
        f[0].message
    );
}

/// Offered sizes are silent, and a size name that is not one (a placeholder) is left to
/// `sku-unknown`.
#[test]
fn offered_sizes_and_placeholders_are_silent() {
    let doc = template(json!([
        vm("d4", "Standard_D4s_v3", "eastus"),
        {"type": "Microsoft.Compute/virtualMachines", "apiVersion": "2024-07-01", "name": "z",
         "location": "eastus", "zones": ["1", "2", "3"],
         "properties": {"hardwareProfile": {"vmSize": "Standard_D4s_v3"}}},
        vm("placeholder", "<your-vm-size>", "eastus"),
    ]));
    let out = evaluate(&doc, Source::Arm);
    assert!(
        findings(&out, "sku-available-in-region").is_empty(),
        "{:#?}",
        out.violations
    );
}

/// Terraform: a node pool's `zones` and its cluster's location.
#[test]
fn terraform_node_pool_zones_and_cluster_region() {
    let doc = json!({"resource": {
        "azurerm_kubernetes_cluster": {"main": {
            "location": "eastus", "kubernetes_version": "1.30.3",
            "default_node_pool": {"name": "system", "vm_size": "Standard_D4s_v3", "node_count": 2, "zones": ["1", "2"]}
        }},
        "azurerm_kubernetes_cluster_node_pool": {"gpu": {
            "kubernetes_cluster_id": "${azurerm_kubernetes_cluster.main.id}",
            "vm_size": "Standard_NV6", "node_count": 1, "zones": ["3"]
        }},
        "azurerm_linux_virtual_machine": {"jump": {
            "location": "eastus", "size": "Standard_D13_v2_Promo", "zone": "1"
        }}
    }});
    let out = evaluate(&doc, Source::Terraform);
    let f = findings(&out, "sku-available-in-region");
    let got: Vec<(&str, &str)> = f
        .iter()
        .map(|v| (v.resource_name.as_str(), v.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            (
                "gpu",
                "/resource/azurerm_kubernetes_cluster_node_pool/gpu/vm_size"
            ),
            ("jump", "/resource/azurerm_linux_virtual_machine/jump/size"),
        ],
        "{:#?}",
        out.violations
    );
    assert!(
        f[0].message.contains("zone(s) 3 of eastus"),
        "{}",
        f[0].message
    );
    assert!(
        f[1].message.contains("restricted in eastus"),
        "{}",
        f[1].message
    );
}

// ---------------------------------------------------------------------------------------
// quota-sufficient
// ---------------------------------------------------------------------------------------

/// Two NC24 pools (24 vCPUs each, family standardNCFamily from the eastus2 SKU list) at
/// most one node each need 48 of the 48 free: they fit.
#[test]
fn two_pools_that_fit_the_family_quota_together() {
    let doc = aks(
        "eastus",
        json!([
            gpu_pool("nc1", "Standard_NC24", 1),
            gpu_pool("nc2", "Standard_NC24", 1)
        ]),
    );
    let out = evaluate(&doc, Source::Arm);
    assert!(
        findings(&out, "quota-sufficient").is_empty(),
        "{:#?}",
        out.violations
    );
    assert_eq!(
        cel(
            &doc,
            "[quota(resource.sku, resource.parentRegion)].map(q, (q.known ? 'known' : 'unknown') + ' ' + q.family \
             + ' ' + string(q.needed) + '/' + string(q.free) + '/' + string(q.limit) + '/' \
             + string(q.current) + ' cores ' + string(q.regionalNeeded) + '/' \
             + string(q.regionalFree) + '/' + string(q.regionalLimit))[0]"
        ),
        "known standardNCFamily 48/48/48/0 cores 48/100/100\nknown standardNCFamily 48/48/48/0 cores 48/100/100"
    );
}

/// At most two nodes each: 96 vCPUs of standardNCFamily against 48 free, on both pools.
#[test]
fn two_pools_that_exceed_the_family_quota_together() {
    let doc = aks(
        "eastus",
        json!([
            gpu_pool("nc1", "Standard_NC24", 2),
            gpu_pool("nc2", "Standard_NC24", 2)
        ]),
    );
    let out = evaluate(&doc, Source::Arm);
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 2, "{:#?}", out.violations);
    assert!(f.iter().all(|v| v.severity == Severity::Warning));
    assert_eq!(
        f[0].message,
        format!(
            "AKS node pool aks-gpu/nc1 uses Standard_NC24: this document needs 96 vCPUs of family \
             standardNCFamily in eastus, and 48 are free (limit 48, 0 in use); request more quota \
             on the Quotas page of the Azure portal or with `az quota update` ({NC_LINK})"
        )
    );
    assert_eq!(f[1].resource_name, "aks-gpu/nc2");
    assert_eq!(
        f[1].path,
        "/resources/0/properties/agentPoolProfiles/1/vmSize"
    );
}

/// A pool that does not autoscale counts its `count`; a scale set its capacity; a VM one.
/// 2 x 24 (NC) + 14 x 4 (D4s_v3 scale set, vCPUs from the SKU list) + 1 x 8 (VM) = 112
/// vCPUs in eastus against 100 free of the regional total, while each family fits.
#[test]
fn the_regional_total_is_judged_over_every_family() {
    let doc = template(json!([
        {"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
         "name": "aks-gpu", "location": "eastus",
         "properties": {"agentPoolProfiles": [
            {"name": "nc", "vmSize": "Standard_NC24", "count": 2, "enableAutoScaling": false}
         ]}},
        {"type": "Microsoft.Compute/virtualMachineScaleSets", "apiVersion": "2024-07-01",
         "name": "web", "location": "eastus", "sku": {"name": "Standard_D4s_v3", "capacity": 14},
         "properties": {}},
        vm("d13", "Standard_D13_v2", "eastus"),
    ]));
    let out = evaluate(&doc, Source::Arm);
    let f = findings(&out, "quota-sufficient");
    let names: Vec<&str> = f.iter().map(|v| v.resource_name.as_str()).collect();
    assert_eq!(names, ["aks-gpu/nc", "web", "d13"], "{:#?}", out.violations);
    assert!(
        f[1].message.starts_with(
            "VM scale set web uses Standard_D4s_v3: this document needs 112 vCPUs in eastus in \
             all, and 100 of the regional vCPU total are free (limit 100)"
        ),
        "{}",
        f[1].message
    );
}

/// A family the 2020 usage list does not have (the overlay gives the A100 v4 family): the
/// quota is unknown, reported as info with the reason, never as enough. The regional
/// total is still judged: 8 x 24 vCPUs exceed its 100.
#[test]
fn family_without_a_usage_entry_is_info_unknown() {
    let big = evaluate(
        &aks(
            "eastus",
            json!([gpu_pool("a100", "Standard_NC24ads_A100_v4", 8)]),
        ),
        Source::Arm,
    );
    let f = findings(&big, "quota-sufficient");
    assert_eq!(f.len(), 1, "{:#?}", big.violations);
    assert_eq!(f[0].severity, Severity::Warning);
    assert!(
        f[0].message.contains(
            "this document needs at least 192 vCPUs in eastus in all, and 100 of the regional \
             vCPU total are free (limit 100)"
        ),
        "{}",
        f[0].message
    );
    let out = evaluate(
        &aks(
            "eastus",
            json!([gpu_pool("a100", "Standard_NC24ads_A100_v4", 2)]),
        ),
        Source::Arm,
    );
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(f[0].severity, Severity::Info);
    assert_eq!(
        f[0].message,
        "AKS node pool aks-gpu/a100 uses Standard_NC24ads_A100_v4: the quota of its family in \
         eastus is unknown: the usage of region \"eastus\" has no entry for \
         \"standardNCADSA100v4Family\""
    );
}

/// No family anywhere (not in the lists, the built-in catalog carries none), and a pool
/// without any node count: unknown, with the reason.
#[test]
fn unknown_family_and_missing_node_count_are_info() {
    let doc = aks(
        "eastus",
        json!([
            gpu_pool("h100", "Standard_NC40ads_H100_v5", 1),
            {"name": "nc", "vmSize": "Standard_NC24", "enableAutoScaling": false}
        ]),
    );
    let out = evaluate(&doc, Source::Arm);
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 2, "{:#?}", out.violations);
    assert!(f.iter().all(|v| v.severity == Severity::Info));
    assert!(
        f[0].message.ends_with(
            "the quota family of Standard_NC40ads_H100_v5 is not known: give a SKU list that has \
             the size (az vm list-skus --all) or its family in a catalog overlay"
        ),
        "{}",
        f[0].message
    );
    assert!(
        f[1].message
            .ends_with("AKS node pool aks-gpu/nc declares no node count (count / node_count)"),
        "{}",
        f[1].message
    );
}

/// The regional total counts every pool of the region: one whose node count is unknown
/// leaves it unknown for the others too, never smaller. Two NC24 nodes (48 vCPUs) fit
/// the family and the 100 free of the total, but the D4s pool beside them has no count.
#[test]
fn a_pool_of_unknown_size_leaves_the_regional_total_unknown() {
    let doc = aks(
        "eastus",
        json!([
            {"name": "nc", "vmSize": "Standard_NC24", "count": 2, "enableAutoScaling": false},
            {"name": "cpu", "vmSize": "Standard_D4s_v3", "enableAutoScaling": false}
        ]),
    );
    let out = evaluate(&doc, Source::Arm);
    let f = findings(&out, "quota-sufficient");
    let nc: Vec<&Violation> = f
        .iter()
        .filter(|v| v.resource_name == "aks-gpu/nc")
        .collect();
    assert_eq!(nc.len(), 1, "{:#?}", out.violations);
    assert_eq!(nc[0].severity, Severity::Info);
    assert!(
        nc[0]
            .message
            .contains("AKS node pool aks-gpu/cpu declares no node count"),
        "{}",
        nc[0].message
    );
}

/// A Spot pool draws on the regional Spot total (lowPriorityCores, 100 free), not on its
/// family's quota or the regional total; a region without usage is silent.
#[test]
fn spot_pools_count_against_the_spot_total_and_unlisted_regions_are_silent() {
    let spot = |max: i64| {
        let mut p = gpu_pool("spot", "Standard_NC24", max);
        p["scaleSetPriority"] = json!("Spot");
        aks("eastus", json!([p]))
    };
    // 4 x 24 = 96 of 100: fits, though the NC family has 48.
    let out = evaluate(&spot(4), Source::Arm);
    assert!(
        findings(&out, "quota-sufficient").is_empty(),
        "{:#?}",
        out.violations
    );
    assert_eq!(
        cel(
            &spot(4),
            "[quota(resource.sku, resource.parentRegion)].map(q, q.family + ' ' + string(q.needed) \
             + '/' + string(q.free) + ' ' + (q.regionalNeeded == null ? 'no-regional' : 'regional'))[0]"
        ),
        "lowPriorityCores 96/100 no-regional"
    );
    // 5 x 24 = 120 of 100.
    let f = findings(&evaluate(&spot(5), Source::Arm), "quota-sufficient");
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message
            .contains("needs 120 vCPUs of family lowPriorityCores in eastus, and 100 are free"),
        "{}",
        f[0].message
    );

    let north = evaluate(
        &aks("northeurope", json!([gpu_pool("nc", "Standard_NC24", 9)])),
        Source::Arm,
    );
    assert!(
        findings(&north, "quota-sufficient").is_empty(),
        "{:#?}",
        north.violations
    );
}

// ---------------------------------------------------------------------------------------
// quota-sufficient: Azure ML's own quota (azure.mlUsage)
// ---------------------------------------------------------------------------------------

/// An Azure ML compute cluster (CLI v2 YAML, as `examples/azureml/gpu-cluster.yml`).
fn aml_cluster(size: &str, location: &str, max: i64, tier: &str) -> Value {
    json!({"$schema": "https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json",
        "type": "amlcompute", "name": "gpu", "size": size, "location": location,
        "min_instances": 0, "max_instances": max, "idle_time_before_scale_down": 1800,
        "tier": tier})
}

/// What `quota()` answers for the only resource of `doc`, in one line.
const QUOTA_LINE: &str = "[quota(resource.sku, resource.region)].map(q, (q.known ? 'known' : 'unknown') \
    + ' ' + (q.family == null ? 'null' : q.family) + ' ' + string(q.needed) + '/' \
    + (q.free == null ? 'null' : string(q.free)) + '/' + (q.limit == null ? 'null' : string(q.limit)) \
    + '/' + (q.current == null ? 'null' : string(q.current)) + ' regional ' + string(q.regionalNeeded) + '/' \
    + string(q.regionalFree) + '/' + string(q.regionalLimit))[0]";

/// Four Standard_NC6 (6 vCPUs, family standardNCFamily from the eastus2 SKU list) need 24
/// vCPUs: Azure ML's "Standard NC Family Cluster Dedicated vCPUs" has 12 free of 24, and
/// its regional dedicated total 10 free of 24. Both are named, with Azure ML's quota page.
#[test]
fn aml_cluster_over_the_free_nc_quota_is_a_warning() {
    let out = evaluate(
        &aml_cluster("Standard_NC6", "eastus", 4, "dedicated"),
        Source::AzureMl,
    );
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(
        f[0].message,
        format!(
            "Azure ML compute cluster gpu uses Standard_NC6: this document needs 24 vCPUs of \
             Azure ML quota \"Standard NC Family Cluster Dedicated vCPUs\" in eastus, and 12 are \
             free (limit 24, 12 in use); 24 vCPUs in all, and 10 of Azure ML's regional total \
             are free (limit 24); request more Azure ML quota on the Quotas page of Azure \
             Machine Learning studio ({ML_LINK})"
        )
    );
    assert_eq!(f[0].path, "/size");
}

/// One node (6 vCPUs) fits both the family's 12 and the regional 10; two (12) fit the
/// family but not the regional total, which is named alone.
#[test]
fn aml_cluster_within_the_family_quota_and_the_regional_total() {
    let one = aml_cluster("Standard_NC6", "eastus", 1, "dedicated");
    let out = evaluate(&one, Source::AzureMl);
    assert!(
        findings(&out, "quota-sufficient").is_empty(),
        "{:#?}",
        out.violations
    );
    assert_eq!(
        cel(&one, QUOTA_LINE),
        "known Standard NC Family Cluster Dedicated vCPUs 6/12/24/12 regional 6/10/24"
    );
    let out = evaluate(
        &aml_cluster("Standard_NC6", "eastus", 2, "dedicated"),
        Source::AzureMl,
    );
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(
        f[0].message,
        format!(
            "Azure ML compute cluster gpu uses Standard_NC6: this document needs 12 vCPUs in \
             eastus in all, and 10 of Azure ML's regional vCPU total are free (limit 24); request \
             more Azure ML quota on the Quotas page of Azure Machine Learning studio ({ML_LINK})"
        )
    );
}

/// A low-priority cluster draws on the family's LowPriority entry (limit -1: unlimited) and
/// the regional LowPriority total (18 of 50 in use): 5 x 6 = 30 fit, 6 x 6 = 36 do not.
#[test]
fn low_priority_aml_cluster_counts_against_the_low_priority_totals() {
    let five = aml_cluster("Standard_NC6", "eastus", 5, "low_priority");
    assert!(findings(&evaluate(&five, Source::AzureMl), "quota-sufficient").is_empty());
    assert_eq!(
        cel(&five, QUOTA_LINE),
        "known Standard NC Family Cluster LowPriority vCPUs 30/null/null/18 regional 30/32/50"
    );
    let f = findings(
        &evaluate(
            &aml_cluster("Standard_NC6", "eastus", 6, "low_priority"),
            Source::AzureMl,
        ),
        "quota-sufficient",
    );
    assert_eq!(f.len(), 1);
    assert!(
        f[0].message.contains(
            "this document needs 36 vCPUs in eastus in all, and 32 of Azure ML's regional vCPU \
             total are free (limit 50)"
        ),
        "{}",
        f[0].message
    );
}

/// Standard_NC6s_v3's family is `standardNCSv3Family` in the SKU lists; the Azure ML usage
/// lists "Standard NCv3 Family", which is not matched by guessing: unknown, info.
#[test]
fn aml_family_the_ml_usage_does_not_list_is_info_unknown() {
    let doc = aml_cluster("Standard_NC6s_v3", "eastus", 1, "dedicated");
    let out = evaluate(&doc, Source::AzureMl);
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(f[0].severity, Severity::Info);
    assert_eq!(
        f[0].message,
        "Azure ML compute cluster gpu uses Standard_NC6s_v3: the quota of its family in eastus \
         is unknown: the Azure ML usage of region \"eastus\" has no subscription entry for \
         \"standardNCSv3Family\" (Dedicated vCPUs)"
    );
    assert_eq!(
        cel(&doc, QUOTA_LINE),
        "unknown standardNCSv3Family 6/null/null/null regional 6/10/24"
    );
}

/// What one document declares is summed: two clusters of one workspace (ARM) at one node
/// each need 12 of the family (12 free: fits) and 12 of the regional total (10 free), on
/// both. A compute instance counts one node.
#[test]
fn aml_computes_of_one_document_are_summed() {
    let compute = |name: &str, ty: &str, props: Value| {
        json!({"type": "Microsoft.MachineLearningServices/workspaces/computes",
               "apiVersion": "2024-04-01", "name": format!("ws/{name}"), "location": "eastus",
               "properties": {"computeType": ty, "properties": props}})
    };
    let doc = template(json!([
        compute(
            "c1",
            "AmlCompute",
            json!({"vmSize": "Standard_NC6",
            "scaleSettings": {"minNodeCount": 0, "maxNodeCount": 1}})
        ),
        compute("dev", "ComputeInstance", json!({"vmSize": "Standard_NC6"})),
    ]));
    let out = evaluate(&doc, Source::Arm);
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 2, "{:#?}", out.violations);
    for v in &f {
        assert!(
            v.message.contains(
                "this document needs 12 vCPUs in eastus in all, and 10 of Azure ML's regional \
                 vCPU total are free (limit 24)"
            ),
            "{}",
            v.message
        );
    }
    // declared() reports Azure ML's counters apart, prefixed `ml:`.
    setup();
    let resources = computeguard_policy_core::read::normalize(&doc, Source::Arm);
    let declared = computeguard_policy_core::eval::declared(&resources);
    assert_eq!(
        serde_json::to_value(&declared).unwrap(),
        json!({"eastus": {"ml:cores": 12, "ml:standardnc": 12}})
    );
}

/// The whole change (`settings.quota.declaredInRun`) raises what Azure ML's counters need,
/// by the ids `declared()` gives them.
#[test]
fn aml_quota_is_judged_over_the_whole_change() {
    let settings = json!({"quota": {"declaredInRun": {"eastus": {
        "ml:standardNCFamily": 18, "ml:cores": 18, "standardNCFamily": 999}}}});
    let out = evaluate_with(
        &aml_cluster("Standard_NC6", "eastus", 1, "dedicated"),
        Source::AzureMl,
        &settings,
    );
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert!(
        f[0].message.starts_with(
            "Azure ML compute cluster gpu uses Standard_NC6: this change needs 18 vCPUs of Azure \
             ML quota \"Standard NC Family Cluster Dedicated vCPUs\" in eastus (6 in this \
             document), and 12 are free (limit 24, 12 in use); 18 vCPUs in all, and 10 of Azure \
             ML's regional total are free (limit 24)"
        ),
        "{}",
        f[0].message
    );
}

/// Without Azure ML usage for the region (westus has compute usage only), Azure ML
/// computes are reported as not evaluated (info); a region without any usage is silent.
#[test]
fn azure_ml_compute_quota_is_not_evaluated_without_its_usage() {
    let out = evaluate(
        &aml_cluster("Standard_NC24", "westus", 4, "dedicated"),
        Source::AzureMl,
    );
    let f = findings(&out, "quota-sufficient");
    assert_eq!(f.len(), 1, "{:#?}", out.violations);
    assert_eq!(f[0].severity, Severity::Info);
    assert!(
        f[0].message.ends_with(
            "Azure ML compute and online deployments draw on Azure ML's own quota, which is not \
             evaluated without Azure ML usage for westus (azure.mlUsage: az ml compute \
             list-usage --location westus -o json)"
        ),
        "{}",
        f[0].message
    );
    let out = evaluate(
        &aml_cluster("Standard_NC24", "northeurope", 4, "dedicated"),
        Source::AzureMl,
    );
    assert!(
        findings(&out, "quota-sufficient").is_empty(),
        "{:#?}",
        out.violations
    );
}

/// AKS pools do not draw on Azure ML's quota, nor Azure ML computes on the compute usage:
/// an eastus pool is judged as before, with the regional total of `az vm list-usage`.
#[test]
fn compute_and_azure_ml_quota_are_apart() {
    let doc = aks("eastus", json!([gpu_pool("nc", "Standard_NC6", 4)]));
    assert_eq!(
        cel(
            &doc,
            "[quota(resource.sku, resource.parentRegion)].map(q, q.family + ' ' + string(q.needed) \
             + '/' + string(q.free) + ' regional ' + string(q.regionalNeeded) + '/' + string(q.regionalFree))[0]"
        ),
        "standardNCFamily 24/48 regional 24/100"
    );
}
