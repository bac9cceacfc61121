//! Issue 38 in the webhook: what one AKS pool object shows is judged as `check` judges it
//! (`tests/cli/gpu_rules.rs` has the same objects and messages): a B-series system pool
//! and a MIG pool on Windows are denied; a pool that turns the GPU driver off is admitted,
//! the webhook seeing no more than the object (whether the GPU Operator installs the
//! driver is not visible in it).

use super::{answer, review, start, warnings};
use serde_json::{Value, json};

fn pool(spec: Value) -> Value {
    json!({
        "apiVersion": "containerservice.azure.com/v1api20231001",
        "kind": "ManagedClustersAgentPool",
        "metadata": {"name": "gpu", "namespace": "infra"},
        "spec": spec,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_judges_an_aks_pool_object_as_check_does() {
    let s = start(json!({})).await;
    let mut c = s.conn().await;

    let system = pool(
        json!({"owner": {"name": "aks-ml"}, "azureName": "system", "mode": "System",
        "vmSize": "Standard_B2s", "count": 2}),
    );
    let r = answer(&mut c, "/validate", review("uid-b2s", "infra", system)).await;
    assert_eq!(r["allowed"], false, "{r}");
    let msg = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains(
            "[aks-sku-restricted] AKS node pool infra/system (system pool) uses Standard_B2s, a \
             B-series size, which AKS does not support for system node pools"
        ),
        "{msg}"
    );

    let mig = pool(json!({"owner": {"name": "aks-ml"}, "azureName": "migwin",
        "vmSize": "Standard_NC24ads_A100_v4", "osType": "Windows", "osSKU": "Windows2022",
        "orchestratorVersion": "1.30.1", "gpuInstanceProfile": "MIG1g", "count": 1,
        "nodeTaints": ["sku=gpu:NoSchedule"]}));
    let r = answer(&mut c, "/validate", review("uid-migwin", "infra", mig)).await;
    assert_eq!(r["allowed"], false, "{r}");
    let msg = r["status"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains(
            "[mig-profile-valid] AKS node pool infra/migwin uses MIG profile MIG1g on OS SKU \
             Windows2022: MIG is documented for Linux node pools only"
        ),
        "{msg}"
    );

    // Azure Linux supports MIG since the 2026 AKS text: nothing to say about the OS.
    let mig = pool(json!({"owner": {"name": "aks-ml"}, "azureName": "migal",
        "vmSize": "Standard_NC24ads_A100_v4", "osSKU": "AzureLinux",
        "gpuInstanceProfile": "MIG1g", "count": 1, "nodeTaints": ["sku=gpu:NoSchedule"]}));
    let r = answer(&mut c, "/validate", review("uid-migal", "infra", mig)).await;
    assert_eq!(r["allowed"], true, "{r}");
    assert!(
        !warnings(&r)
            .iter()
            .any(|w| w.contains("[mig-profile-valid]")),
        "{r}"
    );

    // The driver off: not judgeable from one object (info), so admitted.
    let none = pool(json!({"owner": {"name": "aks-ml"}, "azureName": "byo",
        "vmSize": "Standard_NC24ads_A100_v4", "count": 1, "nodeTaints": ["sku=gpu:NoSchedule"],
        "gpuProfile": {"driver": "None"}}));
    let r = answer(&mut c, "/validate", review("uid-byo", "infra", none)).await;
    assert_eq!(r["allowed"], true, "{r}");
    assert!(
        !warnings(&r)
            .iter()
            .any(|w| w.starts_with("[gpu-driver-ownership]")),
        "an info is not a warning: {r}"
    );
    s.shutdown().await;
}
