//! Issue 38: the failures GPU teams hit after review, checked before merge: Azure ML's
//! upgrade reservation in `quota-sufficient`, `aks-sku-restricted`, `mig-profile-valid`'s
//! OS check, `mig-autoscale` and `gpu-driver-ownership`, on real files and real `az`
//! output shapes.

use crate::*;

/// A scratch folder holding `files` (name, text) and a `computeguard.yaml` of `config`.
fn folder(config: &str, files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("computeguard.yaml"), config).expect("config");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    dir
}

fn fixture(path: &str) -> String {
    std::fs::read_to_string(fixtures().join(path)).expect("fixture")
}

/// (rule, severity, line, message) of every finding of `rules`, sorted.
fn found(dir: &Path, files: &[&str], rules: &[&str]) -> Vec<(String, String, u64, String)> {
    let mut args = vec!["check", "--format", "json"];
    args.extend_from_slice(files);
    let out = run_in(dir, &args).expect("run");
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    let mut v: Vec<_> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| rules.contains(&f["rule"].as_str().unwrap_or_default()))
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_string(),
                f["severity"].as_str().unwrap_or_default().to_string(),
                f["line"].as_u64().unwrap_or(0),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Azure ML usage (the REST specs' Usages - List example: 10 of Azure ML's regional 24
/// dedicated vCPUs free in eastus), the eastus SKU list, and the workspace's region.
const ML_CONFIG: &str = "asOf: 2026-11-22\nazure:\n  workspaceRegion: eastus\n  skus: [skus.json]\n  mlUsage:\n    eastus: ml-usage.json\n";

fn ml_folder(files: &[(&str, String)]) -> tempfile::TempDir {
    let mut all = vec![
        ("skus.json", fixture("context/ml/eastus-skus.json")),
        ("ml-usage.json", fixture("context/ml/eastus-ml-usage.json")),
    ];
    all.extend(files.iter().cloned());
    folder(ML_CONFIG, &all)
}

/// A managed online deployment needs `ceil(1.2 x instances) x vCPUs` of Azure ML quota:
/// the real Triton deployment (one Standard_NC4as_T4_v3, 4 vCPUs) fits the 10 free vCPUs
/// as 4 but not as two instances (8), and the message states the reservation. The
/// deployment YAML has no region: it takes its workspace's, `azure.workspaceRegion`.
#[test]
fn azure_ml_reserves_twenty_percent_for_managed_online_deployments() {
    let triton = fixture("azureml/online-deployment-triton-nc4as-t4-v3.yaml");
    let one = triton.clone();
    let two = one.replace("instance_count: 1", "instance_count: 2");
    assert_ne!(one, two, "the fixture declares one instance");
    let dir = ml_folder(&[("one.yaml", one), ("two.yaml", two)]);
    let one = found(dir.path(), &["one.yaml"], &["quota-sufficient"]);
    assert_eq!(one.len(), 1, "{one:?}");
    let (_, severity, line, message) = &one[0];
    // The family is not in Azure ML's usage: unknown (info), never enough, and the
    // reservation is still said.
    assert_eq!((severity.as_str(), *line), ("info", 10), "{message}");
    assert!(
        message.starts_with(
            "Azure ML online deployment blue uses Standard_NC4as_T4_v3 (Azure ML reserves 20% \
             more for upgrades: ceil(1.2 x 1) = 2 instances x 4 vCPUs = 8 vCPUs): the quota \
             of its family in eastus is unknown"
        ),
        "{message}"
    );
    let two = found(dir.path(), &["two.yaml"], &["quota-sufficient"]);
    assert_eq!(two.len(), 1, "{two:?}");
    assert_eq!(two[0].1, "warning", "{two:?}");
    assert!(
        two[0].3.contains(
            "(Azure ML reserves 20% more for upgrades: ceil(1.2 x 2) = 3 instances x 4 vCPUs \
             = 12 vCPUs): this document needs at least 12 vCPUs in eastus in all, and 10 of \
             Azure ML's regional vCPU total are free (limit 24)"
        ),
        "{two:?}"
    );
}

/// The sizes the SKU list exempts ("Skip 20% Reservation") need instances x vCPUs: the
/// real Llama 3 70B deployment on one Standard_NC48ads_A100_v4 needs 48, not 96.
#[test]
fn exempt_sizes_need_no_reservation() {
    let llama = fixture("azureml/online-deployment-llama3-70b-nc48ads-a100.yml");
    let dir = ml_folder(&[("llama.yml", llama.clone())]);
    let out = found(dir.path(), &["llama.yml"], &["quota-sufficient"]);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].1, "warning");
    assert!(
        out[0].3.starts_with(
            "Azure ML online deployment demo uses Standard_NC48ads_A100_v4: this document \
             needs at least 48 vCPUs in eastus in all, and 10 of Azure ML's regional vCPU \
             total are free"
        ),
        "{out:?}"
    );
    // An overlay can take the exemption away (a workspace on an older list): then 96.
    // `check` with a catalog overlay and usage exited 2 before (the workspace-region scan
    // fixed the catalog before the quota sums installed the overlays).
    let overlay = "kind: CatalogOverlay\nskus:\n  - name: Standard_NC48ads_A100_v4\n    \
                   source: test\n    azureMlSkipReservation: false\n";
    let dir = folder(
        &format!("{ML_CONFIG}catalog: [overlay.yaml]\n"),
        &[
            ("skus.json", fixture("context/ml/eastus-skus.json")),
            ("ml-usage.json", fixture("context/ml/eastus-ml-usage.json")),
            ("overlay.yaml", overlay.to_string()),
            ("llama.yml", llama.clone()),
        ],
    );
    let out = found(dir.path(), &["llama.yml"], &["quota-sufficient"]);
    assert!(
        out.len() == 1
            && out[0]
                .3
                .contains("ceil(1.2 x 1) = 2 instances x 48 vCPUs = 96 vCPUs"),
        "{out:?}"
    );
    // The exemption is catalog data: `catalog show` gives it with its origin.
    let show = |args: &[&str]| -> String {
        let dir = folder(
            "asOf: 2026-11-22\n",
            &[(
                "overlay.yaml",
                "kind: CatalogOverlay\nskus:\n  - name: Standard_NC48ads_A100_v4\n    \
                 source: an older SKU list\n    azureMlSkipReservation: false\n"
                    .to_string(),
            )],
        );
        let mut all = vec!["catalog", "show", "Standard_NC48ads_A100_v4"];
        all.extend_from_slice(args);
        let out = run_in(dir.path(), &all).expect("run");
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
            .lines()
            .find(|l| l.trim_start().starts_with("azureMlSkipReservation"))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .unwrap_or_default()
    };
    assert_eq!(show(&[]), "azureMlSkipReservation true built-in");
    assert_eq!(
        show(&["--catalog", "overlay.yaml"]),
        "azureMlSkipReservation false overlay overlay.yaml: an older SKU list"
    );
}

/// A size whose vCPUs nobody knows leaves the need unknown (info, with the reason and
/// the reservation in instances), never "fits".
#[test]
fn reservation_of_a_size_of_unknown_vcpus_is_unresolved() {
    let triton = fixture("azureml/online-deployment-triton-nc4as-t4-v3.yaml");
    let text = triton
        .clone()
        .replace("STANDARD_NC4AS_T4_V3", "Standard_E4s_v3");
    let dir = ml_folder(&[("e4.yaml", text)]);
    let out = found(dir.path(), &["e4.yaml"], &["quota-sufficient"]);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].1, "info");
    assert!(
        out[0]
            .3
            .contains("(Azure ML reserves 20% more for upgrades: ceil(1.2 x 1) = 2 instances)")
            && out[0]
                .3
                .contains("the vCPUs of Standard_E4s_v3 are not known"),
        "{out:?}"
    );
}

/// (rule, severity, message) of `rules` for one file of `text` checked with `config`.
fn one_file(
    config: &str,
    extra: &[(&str, String)],
    name: &str,
    text: &str,
    rules: &[&str],
) -> Vec<(String, String, String)> {
    let mut files = vec![(name, text.to_string())];
    files.extend(extra.iter().cloned());
    let dir = folder(config, &files);
    found(dir.path(), &[name], rules)
        .into_iter()
        .map(|(r, s, _, m)| (r, s, m))
        .collect()
}

/// `az aks show` output (a real shape: the pool's `mode`, `vmSize`, camelCase fields) with
/// the pool's size replaced: AKS refuses a B-series system pool and a Promo size, whatever
/// the SKU list says; with the subscription's SKU list (real `az vm list-skus` output),
/// a size's vCPUs and memory come from it, and a size missing from it is unknown (info).
#[test]
fn aks_refuses_small_b_series_and_promo_sizes_for_node_pools() {
    let show = fixture("audit/az-aks-show-gpumig-nd96asr-v4.json")
        .replace("\"gpuInstanceProfile\": \"MIG3g\",", "");
    let with = |size: &str| show.replace("Standard_ND96asr_v4", size);
    let plain = "asOf: 2026-11-22\n";
    let rules = ["aks-sku-restricted"];
    let b = one_file(plain, &[], "b.json", &with("Standard_B2s"), &rules);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0].1, "error");
    assert!(
        b[0].2.starts_with(
            "AKS node pool clustername1/nodepool1 (system pool) uses Standard_B2s, a B-series \
             size, which AKS does not support for system node pools; AKS refuses it for the pool"
        ),
        "{b:?}"
    );
    let promo = one_file(plain, &[], "p.json", &with("Standard_D13_v2_Promo"), &rules);
    assert!(
        promo.len() == 1
            && promo[0]
                .2
                .contains("a Promo size, which AKS does not offer for node pools"),
        "{promo:?}"
    );
    // Without a SKU list, a CPU size the catalog does not describe is not evaluated.
    assert_eq!(
        one_file(plain, &[], "e.json", &with("Standard_E2s_v3"), &rules),
        Vec::new()
    );
    let skus = [(
        "skus.json",
        std::fs::read_to_string(root().join("examples/azure/eastus-skus.json")).expect("skus"),
    )];
    let config = "asOf: 2026-11-22\nazure:\n  skus: [skus.json]\n";
    // Standard_D2_v2: 2 vCPUs and 7 GB in the SKU list, enough for a system pool.
    assert_eq!(
        one_file(config, &skus, "d.json", &with("Standard_D2_v2"), &rules),
        Vec::new()
    );
    // A size the subscription's list restricts in the pool's region (the real list's
    // Location restriction, NotAvailableForSubscription, on a size of another name).
    let restricted = [(
        "skus.json",
        skus[0]
            .1
            .replace("Standard_D13_v2_Promo", "Standard_D13_v2"),
    )];
    let in_eastus = with("Standard_D13_v2").replace("\"location1\"", "\"eastus\"");
    let r = one_file(config, &restricted, "r.json", &in_eastus, &rules);
    assert!(
        r.len() == 1
            && r[0].1 == "error"
            && r[0].2.contains(
                "restricted for this subscription in eastus (NotAvailableForSubscription)"
            ),
        "{r:?}"
    );
    let unknown = one_file(config, &skus, "e.json", &with("Standard_E2s_v3"), &rules);
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert_eq!(unknown[0].1, "info");
    assert!(
        unknown[0]
            .2
            .contains("the vCPUs and memory of Standard_E2s_v3 are not known"),
        "{unknown:?}"
    );
}

/// MIG's OS support follows the current (2026) AKS page: on the real REST example pool
/// (Standard_ND96asr_v4, MIG2g), Azure Linux is accepted, a Windows pool is an error, and
/// an OS SKU the catalog does not list is unknown (info), never a pass.
#[test]
fn mig_pools_need_a_linux_os_sku_aks_supports() {
    let body = fixture("arm/arm-rest-agentpool-create-gpumig-nd96asr-v4.json");
    let with = |os: &str| body.replacen("\"osType\": \"Linux\",", os, 1);
    let plain = "asOf: 2026-11-22\n";
    let rules = ["mig-profile-valid"];
    assert_eq!(
        one_file(plain, &[], "u.json", &body, &rules),
        Vec::new(),
        "Ubuntu by default"
    );
    assert_eq!(
        one_file(
            plain,
            &[],
            "al.json",
            &with("\"osType\": \"Linux\", \"osSKU\": \"AzureLinux\","),
            &rules
        ),
        Vec::new()
    );
    let win = one_file(
        plain,
        &[],
        "w.json",
        &with("\"osType\": \"Windows\", \"osSKU\": \"Windows2022\","),
        &rules,
    );
    assert_eq!(
        win,
        vec![(
            "mig-profile-valid".to_string(),
            "error".to_string(),
            "AKS node pool agentpool1 uses MIG profile MIG2g on OS SKU Windows2022: MIG is \
             documented for Linux node pools only (NVIDIA supports MIG on Linux only); use an \
             Ubuntu or Azure Linux pool (AKS MIG docs, 2026)"
                .to_string()
        )]
    );
    let new = one_file(
        plain,
        &[],
        "n.json",
        &with("\"osType\": \"Linux\", \"osSKU\": \"Ubuntu2604\","),
        &rules,
    );
    assert!(
        new.len() == 1
            && new[0].1 == "info"
            && new[0]
                .2
                .contains("whether AKS supports MIG there is unknown"),
        "{new:?}"
    );
}

/// (rule, severity, file, line, message) of `rules` for `files` of tests/fixtures/gpu-stack.
fn stack(files: &[&str], rules: &[&str]) -> Vec<(String, String, String, u64, String)> {
    let dir = fixtures().join("gpu-stack");
    let mut args = vec!["check", "--as-of", "2026-11-22", "--format", "json"];
    args.extend_from_slice(files);
    let out = run_in(&dir, &args).expect("run");
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| rules.contains(&f["rule"].as_str().unwrap_or_default()))
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_string(),
                f["severity"].as_str().unwrap_or_default().to_string(),
                f["file"].as_str().unwrap_or_default().to_string(),
                f["line"].as_u64().unwrap_or(0),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// One owner of the GPU driver, judged across the files of the change: a pool with the
/// driver off needs the GPU Operator (or a driver DaemonSet) somewhere in the change; a
/// pool where AKS installs it must not also get the operator's driver.
#[test]
fn the_gpu_driver_has_one_owner_across_the_change() {
    let rules = ["gpu-driver-ownership"];
    let alone = stack(&["gpu-nodepool-driver-none.bicep"], &rules);
    assert_eq!(alone.len(), 1, "{alone:?}");
    let (_, severity, file, line, message) = &alone[0];
    assert_eq!(
        (severity.as_str(), file.as_str(), *line),
        ("warning", "gpu-nodepool-driver-none.bicep", 22),
        "at `driver: 'None'`: {message}"
    );
    assert!(
        message.starts_with(
            "AKS node pool gpu turns the GPU driver off (gpuDriver None) and nothing in this \
             change installs one"
        ),
        "{message}"
    );
    // The GPU Operator in another file of the change installs it: one owner.
    assert_eq!(
        stack(
            &["gpu-nodepool-driver-none.bicep", "gpu-operator.tf"],
            &rules
        ),
        Vec::new()
    );
    // AKS installs it (the default) and so does the operator: two owners, at the size.
    for other in ["gpu-operator.tf", "cluster-policy.yaml"] {
        let two = stack(&["gpu-nodepool-default-driver.bicep", other], &rules);
        assert_eq!(two.len(), 1, "{other}: {two:?}");
        assert_eq!((two[0].1.as_str(), two[0].3), ("warning", 11), "{two:?}");
        assert!(
            two[0]
                .4
                .contains("lets AKS install the GPU driver (the default) and ")
                && two[0]
                    .4
                    .contains("installs it too (driver.enabled is on): two owners"),
            "{two:?}"
        );
    }
    // The operator with `driver.enabled: false` in its values leaves the driver to AKS.
    assert_eq!(
        stack(
            &[
                "gpu-nodepool-default-driver.bicep",
                "gpu-operator-driver-off.tf"
            ],
            &rules
        ),
        Vec::new()
    );
    // Values from a file computeguard does not read: unknown (info), never "installed".
    let unknown = stack(
        &[
            "gpu-nodepool-driver-none.bicep",
            "gpu-operator-values-file.tf",
        ],
        &rules,
    );
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert_eq!(unknown[0].1, "info");
    assert!(
        unknown[0].4.contains(
            "whether helm_release gpu_operator (chart gpu-operator) installs one is unknown"
        ),
        "{unknown:?}"
    );
}

/// An autoscaled MIG pool and a workload of the change that requests a MIG slice on it:
/// the cluster autoscaler does not scale the pool for it.
#[test]
fn an_autoscaled_mig_pool_with_mig_workloads_is_reported() {
    let rules = ["mig-autoscale"];
    assert_eq!(
        stack(&["mig-pool.bicep"], &rules),
        Vec::new(),
        "no MIG workload"
    );
    let both = stack(&["mig-pool.bicep", "mig-job.yaml"], &rules);
    assert_eq!(both.len(), 1, "{both:?}");
    let (_, severity, file, line, message) = &both[0];
    assert_eq!(
        (severity.as_str(), file.as_str(), *line),
        ("warning", "mig-pool.bicep", 13),
        "at enableAutoScaling: {message}"
    );
    assert_eq!(
        message,
        "AKS node pool gpu autoscales with MIG profile MIG1g and Job \
         team-b/team-b-job-mig-1g10gb requests nvidia.com/mig-1g.10gb: the cluster autoscaler \
         counts only nvidia.com/gpu and does not scale the pool for MIG requests \
         (kubernetes/autoscaler#8095, Azure/AKS#5161); give the pool a fixed node count or \
         request whole GPUs"
    );
    // A workload that selects another pool is not this pool's.
    let other = std::fs::read_to_string(fixtures().join("gpu-stack/mig-job.yaml"))
        .expect("job")
        .replace(
            "kubernetes.azure.com/agentpool: gpu",
            "kubernetes.azure.com/agentpool: cpu",
        );
    let dir = folder("asOf: 2026-11-22\n", &[("job.yaml", other)]);
    std::fs::copy(
        fixtures().join("gpu-stack/mig-pool.bicep"),
        dir.path().join("mig-pool.bicep"),
    )
    .expect("copy");
    assert_eq!(
        found(dir.path(), &["mig-pool.bicep", "job.yaml"], &rules),
        Vec::new()
    );
}
