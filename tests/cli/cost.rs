//! What a change costs (issue 33, docs/cost.md): `azure.prices` pages read as they are,
//! each kind of GPU compute priced from them, unknown prices named in every format.
//!
//! The fixtures in `tests/fixtures/cost/` are priced by `tests/fixtures/cost-config/`: the
//! real D2s v3 eastus page and the hand-written GPU page (`tests/fixtures/prices/README.md`).
//! Every amount below is `hourly x nodes x 730`, rounded to the cent, checked by hand:
//!
//! | resource | price/h | floor | ceiling |
//! |---|---|---|---|
//! | Terraform AKS system pool, D2s v3, 2 nodes | 0.096 | 140.16 | 140.16 |
//! | Terraform AKS GPU pool, A100, 1-4 | 3.673 | 2,681.29 | 10,725.16 |
//! | Terraform AKS Spot pool, A100 Spot, 0-8 | 0.7346 | 0 | 4,290.06 |
//! | Azure ML cluster YAML, A100 Low Priority, 0-4 | 0.9183 | 0 | 2,681.44 |
//! | Azure ML cluster Terraform, A100, 1-2 | 3.673 | 2,681.29 | 5,362.58 |
//! | KAITO workspace, A100, count 2 (the AKS clusters' eastus) | 3.673 | 5,362.58 | 5,362.58 |
//! | online deployment, T4, 2 instances (workspace eastus) | 0.526 | 767.96 | 767.96 |
//! | Bicep system pool, D2s v3, 1 | 0.096 | 70.08 | 70.08 |
//! | Bicep Windows GPU pool, A100 Windows, 2 | 3.857 | 5,631.22 | 5,631.22 |
//! | ARM VM scale set, D2s v3 Spot, capacity 3 | 0.018816 | 41.21 | 41.21 |
//! | Azure ML cluster, NC48ads A100 v4 (no price) | - | unknown | unknown |
//! | **total** | | **17,375.79** | **35,072.45** |

use crate::*;

const CONFIG: &str = "tests/fixtures/cost-config/computeguard.yaml";

fn priced(paths: &[&str]) -> (i32, Value) {
    let mut args = vec!["--config", CONFIG];
    args.extend_from_slice(paths);
    check_json(&args)
}

fn resource<'a>(cost: &'a Value, file: &str, name: &str) -> &'a Value {
    cost["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["file"] == format!("tests/fixtures/cost/{file}") && r["resource"] == name)
        .unwrap_or_else(|| panic!("{file} {name} in {cost:#}"))
}

fn monthly(r: &Value) -> (Option<f64>, Option<f64>) {
    (r["floorMonthly"].as_f64(), r["ceilingMonthly"].as_f64())
}

#[test]
fn every_kind_priced_total_17_375_79_idle_35_072_45_at_full_scale() {
    let (_, report) = priced(&["tests/fixtures/cost"]);
    let cost = &report["cost"];
    assert_eq!(cost["currency"], "USD");
    assert_eq!(cost["hoursPerMonth"], 730.0);
    assert_eq!(cost["total"]["floorMonthly"], 17375.79);
    assert_eq!(cost["total"]["ceilingMonthly"], 35072.45);
    assert_eq!(cost["total"]["resources"], 11);
    assert_eq!(cost["total"]["unknown"], 1);
    assert_eq!(cost["byRegion"]["eastus"]["floorMonthly"], 17375.79);
    // 140.16 + 2,681.29 + 0 = 2,821.45 idle; 140.16 + 10,725.16 + 4,290.06 = 15,155.38
    let tf = &cost["byFile"]["tests/fixtures/cost/aks-tf/main.tf"];
    assert_eq!(
        (tf["floorMonthly"].as_f64(), tf["ceilingMonthly"].as_f64()),
        (Some(2821.45), Some(15155.38))
    );
    let cases = [
        (
            "aks-tf/main.tf",
            "azurerm_kubernetes_cluster_node_pool gpu",
            (2681.29, 10725.16),
        ),
        (
            "aks-tf/main.tf",
            "azurerm_kubernetes_cluster_node_pool spot",
            (0.0, 4290.06),
        ),
        (
            "aml-cluster.yml",
            "Azure ML compute cluster lowpri-a100",
            (0.0, 2681.44),
        ),
        (
            "aml-tf/main.tf",
            "Azure ML compute cluster train",
            (2681.29, 5362.58),
        ),
        (
            "kaito.yaml",
            "KAITO workspace llama-3-1-8b",
            (5362.58, 5362.58),
        ),
        (
            "online-deployment.yml",
            "Azure ML online deployment blue",
            (767.96, 767.96),
        ),
        ("pool.bicep", "AKS node pool gpuwin", (5631.22, 5631.22)),
        ("vmss.json", "VM scale set batch-spot", (41.21, 41.21)),
    ];
    for (file, name, (floor, ceiling)) in cases {
        assert_eq!(
            monthly(resource(cost, file, name)),
            (Some(floor), Some(ceiling)),
            "{file} {name}"
        );
    }
}

#[test]
fn spot_low_priority_and_windows_use_their_own_meters() {
    let (_, report) = priced(&["tests/fixtures/cost"]);
    let cost = &report["cost"];
    let meter = |file: &str, name: &str| {
        let r = resource(cost, file, name);
        (
            r["os"].as_str().unwrap_or_default().to_string(),
            r["priority"].as_str().unwrap_or_default().to_string(),
            r["hourly"].as_f64(),
            r["meter"]["meter"].as_str().unwrap_or_default().to_string(),
        )
    };
    let s = |x: &str| x.to_string();
    assert_eq!(
        meter(
            "aks-tf/main.tf",
            "azurerm_kubernetes_cluster_node_pool spot"
        ),
        (
            s("linux"),
            s("spot"),
            Some(0.7346),
            s("NC24ads A100 v4 Spot")
        )
    );
    assert_eq!(
        meter("aml-cluster.yml", "Azure ML compute cluster lowpri-a100"),
        (
            s("linux"),
            s("low-priority"),
            Some(0.9183),
            s("NC24ads A100 v4 Low Priority")
        )
    );
    // Windows: the "... Series Windows" product, not the DevTestConsumption row (3.673).
    assert_eq!(
        meter("pool.bicep", "AKS node pool gpuwin"),
        (
            s("windows"),
            s("regular"),
            Some(3.857),
            s("NC24ads A100 v4")
        )
    );
    // Real D2s v3 page: the Linux Spot meter.
    assert_eq!(
        meter("vmss.json", "VM scale set batch-spot"),
        (s("linux"), s("spot"), Some(0.018816), s("D2s v3 Spot"))
    );
    let source = resource(cost, "vmss.json", "VM scale set batch-spot")["meter"]["source"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        source.ends_with("prices/rshade-eastus-d2s-v3-consumption-spot-lowpri-windows.json:1"),
        "{source}"
    );
}

#[test]
fn a_size_without_a_price_is_named_in_text_and_json_never_0() {
    let (_, report) = priced(&["tests/fixtures/cost/unpriced.yml"]);
    let cost = &report["cost"];
    let reason = "no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region";
    assert_eq!(cost["unknown"][0]["reason"], reason);
    assert_eq!(
        cost["unknown"][0]["resource"],
        "Azure ML compute cluster h100-warm"
    );
    assert_eq!(cost["resources"][0]["floorMonthly"], Value::Null);
    assert_eq!(cost["resources"][0]["hourly"], Value::Null);
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains(&format!(
            "cost unknown: Azure ML compute cluster h100-warm: {reason}\n  --> tests/fixtures/cost/unpriced.yml:1\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("computeguard: cost: $0.00/month idle, $0.00/month at full scale (1 priced resource, USD retail prices, 730 h/month); not in the sums: 1 resource with an unknown price or count (listed above)\n"),
        "{text}"
    );
}

#[test]
fn the_text_summary_prints_one_line_of_totals() {
    let out = run(&["check", "--config", CONFIG, "tests/fixtures/cost"]);
    let text = stdout(&out);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("computeguard: cost:"))
        .collect();
    assert_eq!(
        lines,
        [
            "computeguard: cost: $17,375.79/month idle, $35,072.45/month at full scale (11 priced resources, USD retail prices, 730 h/month); not in the sums: 1 resource with an unknown price or count (listed above)"
        ]
    );
}

#[test]
fn without_prices_nothing_is_priced_or_printed() {
    let (_, report) = check_json(&["tests/fixtures/cost/pool.bicep"]);
    assert!(report.get("cost").is_none(), "{report:#}");
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "tests/fixtures/cost/pool.bicep",
    ]);
    let text = stdout(&out);
    assert!(
        !text.contains("computeguard: cost") && !text.contains("cost unknown"),
        "{text}"
    );
}

#[test]
fn inspect_shows_the_cost_of_each_resource() {
    let out = run(&[
        "inspect",
        "--config",
        CONFIG,
        "tests/fixtures/cost/aks-tf/main.tf",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("  cost  $3.673/h (linux regular, meter NC24ads A100 v4, tests/fixtures/cost-config/../prices/handwritten-eastus-gpu-nc-a100-t4.json:6) x 1-4 nodes: $2,681.29/month idle, $10,725.16/month at full scale\n"),
        "{text}"
    );
    let out = run(&[
        "inspect",
        "--format",
        "json",
        "--config",
        CONFIG,
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v[0]["cost"]["floorMonthly"], Value::Null);
    assert_eq!(
        v[0]["cost"]["unknown"][0],
        "no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region"
    );
}

#[test]
fn a_file_that_is_not_a_price_page_is_refused_naming_it() -> Result<(), Box<dyn std::error::Error>>
{
    let dir = tempfile::tempdir()?;
    std::fs::write(
        dir.path().join("skus.json"),
        "[{\"name\": \"Standard_NC6\", \"resourceType\": \"virtualMachines\"}]",
    )?;
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(&config, "azure:\n  prices: [skus.json]\n")?;
    let out = run(&[
        "check",
        "--config",
        config.to_str().ok_or("path")?,
        "tests/fixtures/cost/pool.bicep",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let file = dir.path().join("skus.json");
    assert!(
        stderr(&out).contains(&format!(
            "{}:1: not an Azure Retail Prices API page (the body of GET https://prices.azure.com/api/retail/prices, as curl or az rest saves it): at the top level expected an object with an \"Items\" array, found an array of 1 item(s)",
            file.display()
        )),
        "{}",
        stderr(&out)
    );
    Ok(())
}

const BUDGET: &str = "tests/fixtures/cost-budget/computeguard.yaml";

fn idle_findings(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "gpu-idle-cost")
        .map(|f| {
            (
                f["resource"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn gpu_idle_cost_is_off_without_a_budget() {
    let (_, report) = priced(&["tests/fixtures/cost"]);
    assert!(idle_findings(&report).is_empty());
}

#[test]
fn gpu_idle_cost_over_2000_names_the_amount_and_the_saving() {
    // Budget $2,000: the GPU pool (2,681.29), the Azure ML cluster train (2,681.29), the KAITO
    // workspace (5,362.58) and the Windows pool (5,631.22) are over; the T4 deployment
    // (767.96), the Spot and Low Priority floors (0) and the CPU pools are not.
    let (_, report) = check_json(&["--config", BUDGET, "tests/fixtures/cost"]);
    let found = idle_findings(&report);
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "azurerm_kubernetes_cluster_node_pool gpu",
            "Azure ML compute cluster train",
            "KAITO workspace llama-3-1-8b",
            "AKS node pool gpuwin"
        ]
    );
    // Spot: 0.7346 x 1 x 730 = 536.26; 2,681.29 - 536.26 = 2,145.03
    assert_eq!(
        found[1].1,
        "Azure ML compute cluster train costs $2,681.29/month idle (1 node(s) of Standard_NC24ads_A100_v4 at $3.673/h, linux regular), over the idle budget of $2,000.00/month (settings.computeguard.cost.maxIdleMonthly); scaling it to zero when idle saves $2,681.29/month; for interruptible training, Spot nodes ($0.7346/h) would cost $536.26/month idle, $2,145.03 less"
    );
    // Windows Spot: 0.9186 x 2 x 730 = 1,341.16; 5,631.22 - 1,341.16 = 4,290.06
    assert!(
        found[3]
            .1
            .ends_with("Spot nodes ($0.9186/h) would cost $1,341.16/month idle, $4,290.06 less"),
        "{}",
        found[3].1
    );
    assert!(
        found[3].1.contains("; with the cluster autoscaler from 0 nodes it would scale to zero when idle, saving $5,631.22/month;"),
        "{}",
        found[3].1
    );
    assert!(
        found[2]
            .1
            .ends_with("it does not scale to zero: each node fewer saves $2,681.29/month"),
        "{}",
        found[2].1
    );
    let f = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "gpu-idle-cost")
        .expect("one");
    assert_eq!(
        (
            f["severity"].as_str(),
            f["policy"].as_str(),
            f["line"].as_u64()
        ),
        (Some("warning"), Some("computeguard"), Some(20))
    );
}

#[test]
fn gpu_idle_cost_of_the_change_when_no_resource_alone_is_over()
-> Result<(), Box<dyn std::error::Error>> {
    // Budget $6,000: no resource alone (the largest is the Windows pool, 5,631.22), but the GPU
    // floors together are 2,681.29 + 0 + 0 + 2,681.29 + 5,362.58 + 767.96 + 5,631.22 = 17,124.34;
    // the pools and clusters at zero save 2,681.29 + 0 + 0 + 2,681.29 + 5,631.22 = 10,993.80.
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("computeguard.yaml");
    let prices = root().join("tests/fixtures/prices");
    std::fs::write(
        &config,
        format!(
            "azure:\n  workspaceRegion: eastus\n  prices: [{0}/rshade-eastus-d2s-v3-consumption-spot-lowpri-windows.json, {0}/handwritten-eastus-gpu-nc-a100-t4.json]\nsettings:\n  computeguard: {{cost: {{maxIdleMonthly: 6000}}}}\n",
            prices.display()
        ),
    )?;
    let (_, report) = check_json(&[
        "--config",
        config.to_str().ok_or("path")?,
        "tests/fixtures/cost",
    ]);
    let found = idle_findings(&report);
    assert_eq!(
        found,
        [(
            "AKS node pool gpuwin".to_string(),
            "this change's GPU compute costs $17,124.34/month idle over 5 resources, over the idle budget of $6,000.00/month (settings.computeguard.cost.maxIdleMonthly); the largest is AKS node pool gpuwin at $5,631.22/month, and scaling the pools and clusters to zero when idle saves up to $10,993.80/month".to_string()
        )]
    );
    Ok(())
}

#[test]
fn min_nodes_zero_says_what_the_idle_nodes_cost() {
    let (_, report) = priced(&[
        "tests/fixtures/cost/aml-tf/main.tf",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["rule"] == "min-nodes-zero")
        .filter_map(|f| f["message"].as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "Azure ML compute cluster train keeps 1 idle node(s) of Standard_NC24ads_A100_v4 when there is no work; set the minimum to 0 (the idle node(s) cost $2,681.29/month at $3.673/h)",
            // No price: nothing added, never $0.
            "Azure ML compute cluster h100-warm keeps 1 idle node(s) of Standard_NC48ads_A100_v4 when there is no work; set the minimum to 0",
        ]
    );
}

#[test]
fn a_budget_without_prices_says_gpu_idle_cost_was_not_evaluated()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(
        &config,
        "settings:\n  computeguard: {cost: {maxIdleMonthly: 10}}\n",
    )?;
    let path = config.to_str().ok_or("path")?;
    let (_, report) = check_json(&["--config", path, "tests/fixtures/cost/pool.bicep"]);
    let message = "gpu-idle-cost was not evaluated: `settings.computeguard.cost.maxIdleMonthly` is set, but the configuration names no `azure.prices` (Azure Retail Prices API pages; docs/cost.md)";
    assert!(
        report["notEvaluated"]
            .as_array()
            .expect("list")
            .iter()
            .any(|n| n["message"] == message),
        "{report:#}"
    );
    let out = run(&["check", "--config", path, "tests/fixtures/cost/pool.bicep"]);
    assert!(
        stderr(&out).contains(&format!("computeguard: {message}\n")),
        "{}",
        stderr(&out)
    );
    std::fs::write(
        &config,
        "settings:\n  computeguard: {cost: {maxIdle: 10}}\n",
    )?;
    let out = run(&["check", "--config", path, "tests/fixtures/cost/pool.bicep"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(
            "`settings.computeguard`.cost: unknown key `maxIdle`; expected maxIdleMonthly"
        ),
        "{}",
        stderr(&out)
    );
    Ok(())
}

#[test]
fn gpu_idle_cost_is_suppressed_by_an_inline_comment_and_listed_by_rules_and_explain()
-> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("warm.yml");
    std::fs::write(
        &file,
        "# computeguard:ignore gpu-idle-cost warm node for the nightly SLA\n$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: warm\ntype: amlcompute\nsize: Standard_NC24ads_A100_v4\nlocation: eastus\nmin_instances: 1\nmax_instances: 2\n",
    )?;
    let (_, report) = check_json(&[
        "--config",
        BUDGET,
        "--show-suppressed",
        file.to_str().ok_or("path")?,
    ]);
    let f = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "gpu-idle-cost")
        .expect("shown as suppressed");
    assert_eq!(f["suppression"]["reason"], "warm node for the nightly SLA");
    let out = run(&["rules", "--config", BUDGET]);
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("gpu-idle-cost") && l.contains("warning")),
        "{}",
        stdout(&out)
    );
    let out = run(&["rules"]);
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l.starts_with("gpu-idle-cost") && l.contains(" off ")),
        "{}",
        stdout(&out)
    );
    let out = run(&["explain", "gpu-idle-cost"]);
    assert!(
        stdout(&out).starts_with("gpu-idle-cost (off, reported by computeguard itself)"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("More: docs/rules/gpu-idle-cost.md"));
    Ok(())
}

/// A base checkout holding the AKS Terraform (its GPU pool scaling 0-2 instead of 1-4)
/// and the scale set, at the same paths as the change.
fn base_checkout() -> Result<tempfile::TempDir, Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let cost = dir.path().join("tests/fixtures/cost");
    std::fs::create_dir_all(cost.join("aks-tf"))?;
    let tf = std::fs::read_to_string(fixtures().join("cost/aks-tf/main.tf"))?
        .replace("min_count             = 1", "min_count             = 0")
        .replace("max_count             = 4", "max_count             = 2");
    std::fs::write(cost.join("aks-tf/main.tf"), tf)?;
    std::fs::copy(fixtures().join("cost/vmss.json"), cost.join("vmss.json"))?;
    Ok(dir)
}

#[test]
fn compare_to_a_base_17_194_42_more_idle_25_238_44_more_at_full_scale()
-> Result<(), Box<dyn std::error::Error>> {
    // Base: system pool 140.16 + GPU pool 0-2 (0 / 3.673 x 2 x 730 = 5,362.58) + Spot pool
    // (0 / 4,290.06) + scale set 41.21 = 181.37 idle, 9,834.01 at full scale.
    // Change: 17,375.79 and 35,072.45 (above): +17,194.42 and +25,238.44.
    let base = base_checkout()?;
    let dir = base.path().to_str().ok_or("path")?;
    let (_, report) = priced(&["--compare-to", dir, "tests/fixtures/cost"]);
    let diff = &report["costDiff"];
    assert_eq!(diff["baseTotal"]["floorMonthly"], 181.37);
    assert_eq!(diff["baseTotal"]["ceilingMonthly"], 9834.01);
    assert_eq!(diff["floorDelta"], 17194.42);
    assert_eq!(diff["ceilingDelta"], 25238.44);
    let changed: Vec<(&str, &str)> = diff["changes"]
        .as_array()
        .ok_or("changes")?
        .iter()
        .map(|c| {
            (
                c["what"].as_str().unwrap_or(""),
                c["resource"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        changed[0],
        ("changed", "azurerm_kubernetes_cluster_node_pool gpu")
    );
    assert_eq!(
        changed.len(),
        8,
        "the GPU pool changed, 7 resources added: {changed:?}"
    );
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--compare-to",
        dir,
        "tests/fixtures/cost",
    ]);
    assert!(
        stdout(&out).contains(&format!(
            "computeguard: cost against {dir}: +$17,194.42/month idle, +$25,238.44/month at full scale (of the known prices: 1 resource(s) of the change and 0 of the base have an unknown price or count)\n"
        )),
        "{}",
        stdout(&out)
    );
    Ok(())
}

#[test]
fn compare_to_needs_prices() {
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "--compare-to",
        "tests",
        "tests/fixtures/cost/pool.bicep",
    ]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("`--compare-to` compares what the change costs, but the configuration names no `azure.prices`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn markdown_is_a_pull_request_comment_with_findings_blind_spots_and_cost()
-> Result<(), Box<dyn std::error::Error>> {
    let base = base_checkout()?;
    let dir = base.path().to_str().ok_or("path")?;
    let out = run(&[
        "check",
        "--config",
        BUDGET,
        "--format",
        "markdown",
        "--compare-to",
        dir,
        "tests/fixtures/cost",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let md = stdout(&out);
    for expected in [
        "## computeguard\n\n:warning: **0 errors, 10 warnings, 0 infos** in 8 files (13 resources); as of 2026-11-22\n",
        &format!(
            "### Cost\n\n**+$17,194.42/month idle, +$25,238.44/month at full scale** against `{dir}` (of the known prices: 1 resource(s) of the change and 0 of the base have an unknown price or count)\n"
        ),
        "| base | $181.37/month | $9,834.01/month |\n| this change | $17,375.79/month | $35,072.45/month |\n| difference | +$17,194.42/month | +$25,238.44/month |\n",
        "| changed | azurerm_kubernetes_cluster_node_pool gpu | `tests/fixtures/cost/aks-tf/main.tf` | $0.00 → $2,681.29 | $5,362.58 → $10,725.16 |\n",
        "| added | KAITO workspace llama-3-1-8b | `tests/fixtures/cost/kaito.yaml` | - → $5,362.58 | - → $5,362.58 |\n",
        "| AKS node pool gpuwin | `tests/fixtures/cost/pool.bicep:19` | Standard_NC24ads_A100_v4 eastus | windows regular | $3.857 | 2-2 | $5,631.22 | $5,631.22 |\n",
        "| :warning: warning | `gpu-idle-cost` | `tests/fixtures/cost/kaito.yaml:1` | KAITO workspace llama-3-1-8b costs $5,362.58/month idle",
        "### Blind spots\n",
        "- cost unknown: `tests/fixtures/cost/unpriced.yml:1` Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region\n",
        "- not evaluated: quota-sufficient was not evaluated",
    ] {
        assert!(md.contains(expected), "missing {expected:?} in\n{md}");
    }
    Ok(())
}

#[test]
fn markdown_escapes_what_files_write() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("pipe.yml");
    std::fs::write(
        &file,
        "$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json\nname: \"a|b<script>\"\ntype: amlcompute\nsize: Standard_NC24ads_A100_v4\nmin_instances: 1\nmax_instances: 2\n",
    )?;
    let out = run(&[
        "check",
        "--as-of",
        "2026-11-22",
        "--format",
        "markdown",
        file.to_str().ok_or("path")?,
    ]);
    let md = stdout(&out);
    assert!(
        md.contains("Azure ML compute cluster a\\|b&lt;script&gt; keeps 1 idle node(s)"),
        "{md}"
    );
    assert!(!md.contains("<script>"), "{md}");
    Ok(())
}

#[test]
fn plan_ranks_alternatives_by_price_when_prices_are_known() -> Result<(), Box<dyn std::error::Error>>
{
    // Without prices the Azure ML cluster's alternatives come by closeness to the current
    // size: NC40ads H100 v5, NCC40ads H100 v5, NC128ds xl RTXPRO6000BSE v6. A page written
    // here in the API's shape prices them in the opposite order, which plan then follows.
    let args = |config: &str| {
        vec![
            "plan".to_string(),
            "--format".into(),
            "json".into(),
            "--config".into(),
            config.to_string(),
            "tests/fixtures/cost/aml-tf/main.tf".into(),
        ]
    };
    let sizes = |out: &std::process::Output| -> Vec<(String, Option<String>)> {
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["resources"][0]["alternatives"]
            .as_array()
            .expect("alternatives")
            .iter()
            .map(|a| {
                (
                    a["size"].as_str().unwrap_or_default().to_string(),
                    a["price"].as_str().map(str::to_string),
                )
            })
            .collect()
    };
    let unpriced = computeguard().args(args(CONFIG)).output()?;
    let names: Vec<String> = sizes(&unpriced).into_iter().map(|(s, _)| s).collect();
    assert_eq!(
        names,
        [
            "Standard_NC40ads_H100_v5",
            "Standard_NCC40ads_H100_v5",
            "Standard_NC128ds_xl_RTXPRO6000BSE_v6"
        ]
    );
    let dir = tempfile::tempdir()?;
    let item = |sku: &str, price: f64| {
        format!(
            "{{\"currencyCode\": \"USD\", \"retailPrice\": {price}, \"armRegionName\": \"eastus\", \"armSkuName\": \"{sku}\", \"meterName\": \"x\", \"productName\": \"Virtual Machines X Series\", \"serviceName\": \"Virtual Machines\", \"unitOfMeasure\": \"1 Hour\", \"type\": \"Consumption\"}}"
        )
    };
    std::fs::write(
        dir.path().join("page.json"),
        format!(
            "{{\"Items\": [{}, {}, {}], \"NextPageLink\": null, \"Count\": 3}}",
            item("Standard_NC40ads_H100_v5", 6.98),
            item("Standard_NCC40ads_H100_v5", 5.0),
            item("Standard_NC128ds_xl_RTXPRO6000BSE_v6", 4.0)
        ),
    )?;
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(&config, "asOf: 2026-11-22\nazure:\n  prices: [page.json]\n")?;
    let priced = computeguard()
        .args(args(config.to_str().ok_or("path")?))
        .output()?;
    assert_eq!(
        sizes(&priced),
        [
            // 4.0 x 730 = 2,920; 5.0 x 730 = 3,650; 6.98 x 730 = 5,095.40
            (
                "Standard_NC128ds_xl_RTXPRO6000BSE_v6".to_string(),
                Some("$4/h, $2,920.00/month per node (linux regular)".to_string())
            ),
            (
                "Standard_NCC40ads_H100_v5".to_string(),
                Some("$5/h, $3,650.00/month per node (linux regular)".to_string())
            ),
            (
                "Standard_NC40ads_H100_v5".to_string(),
                Some("$6.98/h, $5,095.40/month per node (linux regular)".to_string())
            ),
        ]
    );
    Ok(())
}

#[test]
fn html_shows_the_cost_and_names_unknown_prices() {
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "html",
        "tests/fixtures/cost/aks-tf/main.tf",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let html = stdout(&out);
    assert!(
        html.contains("<section id=\"cost\"><h2>Cost</h2><p><strong>$2,821.45/month idle, $15,155.38/month at full scale</strong> (4 priced resources, USD retail prices, 730 h/month; not in the sums: 1 with an unknown price or count)</p>"),
        "{html}"
    );
    assert!(
        html.contains("<td>$3.673</td><td>1-4</td><td>$2,681.29</td><td>$10,725.16</td>"),
        "{html}"
    );
    assert!(html.contains("<li>cost unknown: <code>tests/fixtures/cost/unpriced.yml:1</code> Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular)"), "{html}");
}

#[test]
fn github_annotations_carry_the_cost_and_the_unknown_prices() {
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "github",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("::notice file=tests/fixtures/cost/unpriced.yml,line=1,title=computeguard cost unknown::Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region\n"),
        "{text}"
    );
    assert!(text.contains("::notice title=computeguard cost::$0.00/month idle, $0.00/month at full scale (1 priced resource"), "{text}");
}

#[test]
fn catalog_prices_checks_pages_and_refuses_what_is_not_one() {
    let out = run(&[
        "catalog",
        "prices",
        "tests/fixtures/prices/rshade-eastus-d2als-v7-preview-consumption-reservation-savingsplan-devtest.json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // 8 items: 4 Consumption VM rows; the 2 Reservation and 2 DevTestConsumption rows are not prices.
    assert_eq!(
        stdout(&out),
        "tests/fixtures/prices/rshade-eastus-d2als-v7-preview-consumption-reservation-savingsplan-devtest.json: Azure Retail Prices page, 8 item(s), 4 hourly VM price(s) of 1 size(s) in 1 region(s) (eastus)\ncatalog prices: 4 hourly VM price(s) in 1 file(s), USD\n"
    );
    let out = run(&["catalog", "prices", "tests/fixtures/context/overlay.yaml"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("error: tests/fixtures/context/overlay.yaml:1:1: not JSON (invalid json: expected a value); expected an Azure Retail Prices API page"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn sarif_notes_the_cost_and_each_unknown_price() {
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "sarif",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).expect("sarif");
    let notes = v["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .expect("notifications");
    let unknown = notes
        .iter()
        .find(|n| n["properties"]["kind"] == "cost-unknown")
        .expect("a cost-unknown note");
    assert_eq!(
        unknown["message"]["text"],
        "cost unknown: Azure ML compute cluster h100-warm: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region"
    );
    assert_eq!(
        unknown["locations"][0]["physicalLocation"]["region"]["startLine"],
        1
    );
    assert!(notes.iter().any(|n| n["properties"]["kind"] == "cost"));
}

#[test]
fn junit_skips_each_unknown_price() {
    let out = run(&[
        "check",
        "--config",
        CONFIG,
        "--format",
        "junit",
        "tests/fixtures/cost/unpriced.yml",
    ]);
    let xml = stdout(&out);
    assert!(
        xml.contains("  <testsuite name=\"computeguard cost\" tests=\"1\" failures=\"0\" errors=\"0\" skipped=\"1\">\n    <testcase classname=\"tests/fixtures/cost/unpriced.yml\" name=\"cost unknown at line 1: Azure ML compute cluster h100-warm\" file=\"tests/fixtures/cost/unpriced.yml\" line=\"1\">\n      <skipped message=\"cost unknown: no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region\"/>"),
        "{xml}"
    );
    roxmltree::Document::parse(&xml).expect("well-formed XML");
}
