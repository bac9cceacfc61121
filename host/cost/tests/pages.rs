//! The cost model on every real Retail Prices page of `tests/fixtures/prices/` (copied from
//! `../shared/corpus/azure-prices/`, sources in `tests/fixtures/SOURCES.tsv`) and on the
//! hand-written GPU page beside them. Every amount is checked by hand: the arithmetic is
//! in the test name or the comment (`hourly x nodes x 730 h`, rounded to the cent).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use computeguard_cost::{Estimate, Os, PriceError, PriceSheet, Priority, Subject, money};
use computeguard_policy_core::compute::Resource;
use std::path::PathBuf;

fn page(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/prices")
        .join(name)
}

const D2S_V3: &str = "rshade-eastus-d2s-v3-consumption-spot-lowpri-windows.json";
const D2ALS_V7: &str =
    "rshade-eastus-d2als-v7-preview-consumption-reservation-savingsplan-devtest.json";
const B1S: &str = "rshade-northeurope-b1s-linux-windows.json";
const WESTEUROPE: &str = "armestimator-westeurope-dsv3-windows-p10-with-url-key.json";
const GPU: &str = "handwritten-eastus-gpu-nc-a100-t4.json";

fn sheet(names: &[&str]) -> PriceSheet {
    PriceSheet::load(&names.iter().map(|n| page(n)).collect::<Vec<_>>()).expect("pages read")
}

fn hourly(s: &PriceSheet, sku: &str, region: &str, os: Os, p: Priority) -> Option<f64> {
    s.lookup(sku, region, os, p).map(|p| p.hourly)
}

fn pool(sku: &str, region: &str, nodes: i64) -> Resource {
    Resource {
        kind: "aks-node-pool".into(),
        display: format!("AKS node pool {sku}"),
        sku: Some(sku.into()),
        region: Some(region.into()),
        instance_count: Some(nodes),
        ..Resource::default()
    }
}

fn estimate(resources: &[Resource], s: &PriceSheet) -> Estimate {
    let subjects: Vec<Subject<'_>> = resources
        .iter()
        .map(|r| Subject {
            file: "f",
            line: 1,
            resource: r,
            workspace_region: None,
            cluster_region: None,
        })
        .collect();
    Estimate::of(&subjects, s)
}

#[test]
fn d2s_v3_eastus_page_prices_all_six_meters() {
    let s = sheet(&[D2S_V3]);
    assert_eq!(s.prices().len(), 6);
    let cases = [
        (Os::Linux, Priority::Regular, 0.096),
        (Os::Linux, Priority::Spot, 0.018816),
        (Os::Linux, Priority::LowPriority, 0.019),
        (Os::Windows, Priority::Regular, 0.188),
        (Os::Windows, Priority::Spot, 0.036848),
        (Os::Windows, Priority::LowPriority, 0.075),
    ];
    for (os, p, want) in cases {
        assert_eq!(
            hourly(&s, "Standard_D2s_v3", "eastus", os, p),
            Some(want),
            "{os:?} {p:?}"
        );
    }
    // isPrimaryMeterRegion is false on the regular rows: they are still the price.
    assert_eq!(
        hourly(
            &s,
            "standard_d2s_v3",
            "East US",
            Os::Linux,
            Priority::Regular
        ),
        Some(0.096)
    );
}

#[test]
fn d2s_v3_three_nodes_linux_210_24_spot_41_21_windows_411_72() {
    // 0.096 x 3 x 730 = 210.24; Spot 0.018816 x 3 x 730 = 41.20704; Windows 0.188 x 3 x 730 = 411.72
    let s = sheet(&[D2S_V3]);
    let linux = pool("Standard_D2s_v3", "eastus", 3);
    let spot = Resource {
        priority: Some("spot".into()),
        ..linux.clone()
    };
    let windows = Resource {
        os_type: Some("windows".into()),
        ..linux.clone()
    };
    let low = Resource {
        priority: Some("low-priority".into()),
        os_type: Some("windows".into()),
        ..linux.clone()
    };
    let e = estimate(&[linux, spot, windows, low], &s);
    let floors: Vec<Option<f64>> = e.resources.iter().map(|c| c.floor_monthly).collect();
    // Windows Low Priority 0.075 x 3 x 730 = 164.25
    assert_eq!(
        floors,
        [Some(210.24), Some(41.21), Some(411.72), Some(164.25)]
    );
    // 210.24 + 41.21 + 411.72 + 164.25 = 827.42
    assert_eq!(e.total.floor_monthly, 827.42);
    assert_eq!(e.total.ceiling_monthly, 827.42);
    assert_eq!(money(e.total.floor_monthly, &e.currency), "$827.42");
    assert!(e.unknown.is_empty(), "{:?}", e.unknown);
}

#[test]
fn d2als_v7_page_skips_reservations_and_devtest_rows() {
    // Consumption rows only: Linux 0.0804 (not the Reservation rows 416.0 / 803.0), Windows
    // 0.172 (not the DevTestConsumption 0.0804), Windows Spot 0.033368 (not DevTest 0.015598).
    let s = sheet(&[D2ALS_V7]);
    assert_eq!(s.prices().len(), 4);
    assert_eq!(s.pages()[0].1.items, 8);
    let sku = "Standard_D2als_v7";
    assert_eq!(
        hourly(&s, sku, "eastus", Os::Linux, Priority::Regular),
        Some(0.0804)
    );
    assert_eq!(
        hourly(&s, sku, "eastus", Os::Windows, Priority::Regular),
        Some(0.172)
    );
    assert_eq!(
        hourly(&s, sku, "eastus", Os::Linux, Priority::Spot),
        Some(0.015598)
    );
    assert_eq!(
        hourly(&s, sku, "eastus", Os::Windows, Priority::Spot),
        Some(0.033368)
    );
    assert_eq!(
        hourly(&s, sku, "eastus", Os::Linux, Priority::LowPriority),
        None
    );
}

#[test]
fn d2als_v7_one_node_58_69_windows_125_56_low_priority_unknown() {
    // 0.0804 x 730 = 58.692; Windows 0.172 x 730 = 125.56; no Low Priority meter on the page
    let s = sheet(&[D2ALS_V7]);
    let linux = pool("Standard_D2als_v7", "eastus", 1);
    let windows = Resource {
        os_type: Some("windows".into()),
        ..linux.clone()
    };
    let low = Resource {
        priority: Some("low-priority".into()),
        ..linux.clone()
    };
    let e = estimate(&[linux, windows, low], &s);
    assert_eq!(
        e.total.floor_monthly, 184.25,
        "58.69 + 125.56, the unknown one left out"
    );
    assert_eq!(e.total.unknown, 1);
    assert_eq!(e.unknown.len(), 1);
    assert_eq!(
        e.unknown[0].reason,
        "no price for Standard_D2als_v7 in eastus (linux low-priority): the price files list only linux regular, linux spot, windows regular, windows spot for it"
    );
    assert_eq!(e.resources[2].floor_monthly, None, "unknown, never 0");
}

#[test]
fn b1s_northeurope_linux_8_25_windows_11_17() {
    // 0.0113 x 730 = 8.249; Windows (listed first) 0.0153 x 730 = 11.169
    let s = sheet(&[B1S]);
    let linux = pool("Standard_B1s", "northeurope", 1);
    let windows = Resource {
        os_type: Some("windows".into()),
        ..linux.clone()
    };
    let e = estimate(&[linux, windows], &s);
    assert_eq!(e.resources[0].floor_monthly, Some(8.25));
    assert_eq!(e.resources[1].floor_monthly, Some(11.17));
    assert_eq!(e.by_region["northeurope"].floor_monthly, 19.42);
}

#[test]
fn westeurope_estimator_page_windows_154_76_and_the_disk_is_not_a_vm_price() {
    // 0.212 x 730 = 154.76; the P10 disk row (Storage, 1/Month) is not a VM price; the extra
    // "Url" key is ignored.
    let s = sheet(&[WESTEUROPE]);
    assert_eq!(s.prices().len(), 1);
    let windows = Resource {
        os_type: Some("windows".into()),
        ..pool("Standard_D2s_v3", "westeurope", 1)
    };
    let linux = pool("Standard_D2s_v3", "westeurope", 1);
    let e = estimate(&[windows, linux], &s);
    assert_eq!(e.resources[0].floor_monthly, Some(154.76));
    assert_eq!(
        e.resources[0].meter.as_ref().map(|m| m.source.as_str()),
        Some(format!("{}:29", page(WESTEUROPE).display()).as_str())
    );
    assert_eq!(
        e.unknown[0].reason,
        "no price for Standard_D2s_v3 in westeurope (linux regular): the price files list only windows regular for it"
    );
}

#[test]
fn all_pages_together_a_size_in_a_region_without_prices_is_named() {
    let s = sheet(&[D2S_V3, D2ALS_V7, B1S, WESTEUROPE, GPU]);
    let e = estimate(
        &[
            pool("Standard_D2s_v3", "westus2", 1),
            pool("Standard_NC48ads_A100_v4", "eastus", 1),
        ],
        &s,
    );
    let reasons: Vec<&str> = e.unknown.iter().map(|u| u.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "no price for Standard_D2s_v3 in westus2 (linux regular): the price files list no prices in westus2",
            "no price for Standard_NC48ads_A100_v4 in eastus (linux regular): the price files list no Standard_NC48ads_A100_v4 in any region",
        ]
    );
    assert_eq!(e.total.floor_monthly, 0.0);
    assert_eq!(e.total.unknown, 2);
}

#[test]
fn gpu_page_a100_pool_1_to_4_nodes_2_681_29_to_10_725_16() {
    // 3.673 x 1 x 730 = 2,681.29; 3.673 x 4 x 730 = 10,725.16 (not the Reservation row 19,308)
    let s = sheet(&[GPU]);
    let r = Resource {
        autoscale: Some(true),
        min_nodes: Some(1),
        max_nodes: Some(4),
        instance_count: None,
        ..pool("Standard_NC24ads_A100_v4", "eastus", 0)
    };
    let e = estimate(&[r], &s);
    assert_eq!(money(e.total.floor_monthly, &e.currency), "$2,681.29");
    assert_eq!(money(e.total.ceiling_monthly, &e.currency), "$10,725.16");
    assert_eq!(e.resources[0].floor.basis, "autoscale min count 1");
}

#[test]
fn counts_by_kind() {
    let s = sheet(&[GPU]);
    let a100 = |kind: &str| Resource {
        kind: kind.into(),
        display: kind.into(),
        sku: Some("Standard_NC24ads_A100_v4".into()),
        region: Some("eastus".into()),
        ..Resource::default()
    };
    let cluster = Resource {
        min_nodes: None,
        instance_count: Some(1),
        ..a100("aml-compute-cluster")
    };
    let instance = a100("aml-compute-instance");
    let kaito = a100("kaito-workspace");
    let deployment = a100("aml-online-deployment");
    let e = estimate(&[cluster, instance, kaito, deployment], &s);
    let got: Vec<(Option<i64>, Option<i64>)> = e
        .resources
        .iter()
        .map(|c| (c.floor.nodes, c.ceiling.nodes))
        .collect();
    assert_eq!(
        got,
        [
            (Some(0), Some(1)),
            (Some(1), Some(1)),
            (Some(1), Some(1)),
            (None, None)
        ]
    );
    assert_eq!(
        e.resources[0].floor.basis,
        "min nodes not stated: Azure ML's default 0"
    );
    assert_eq!(
        e.resources[2].floor.basis,
        "resource.count not stated: KAITO's default 1"
    );
    assert_eq!(
        e.unknown
            .iter()
            .map(|u| u.reason.as_str())
            .collect::<Vec<_>>(),
        [
            "no idle floor: instance_count not stated",
            "no full-scale ceiling: instance_count not stated"
        ]
    );
}

#[test]
fn a_resource_that_is_not_compute_by_the_node_is_not_priced() {
    let s = sheet(&[GPU]);
    let pod = Resource {
        kind: "k8s-workload".into(),
        ..pool("Standard_NC24ads_A100_v4", "eastus", 1)
    };
    assert!(estimate(&[pod], &s).resources.is_empty());
}

fn refused(text: &str) -> String {
    let mut s = PriceSheet::default();
    match s.add_page("p.json", text) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted: {text}"),
    }
}

#[test]
fn anything_but_a_page_is_refused_naming_the_file_and_what_was_expected() {
    assert_eq!(
        refused("{\"Items\": [}"),
        "p.json:1:12: not JSON (invalid json: expected a value); expected an Azure Retail Prices API page (the body of GET https://prices.azure.com/api/retail/prices, as curl or az rest saves it)"
    );
    let page = "an Azure Retail Prices API page (the body of GET https://prices.azure.com/api/retail/prices, as curl or az rest saves it)";
    assert_eq!(
        refused("[{\"name\": \"Standard_D2s_v3\"}]"),
        format!(
            "p.json:1: not {page}: at the top level expected an object with an \"Items\" array, found an array of 1 item(s)"
        )
    );
    assert_eq!(
        refused("{\"value\": []}"),
        format!(
            "p.json:1: not {page}: at /Items expected an array of price items, found no \"Items\" key (the object has keys \"value\")"
        )
    );
    assert_eq!(
        refused("{\"Items\": [\n {\"armRegionName\": \"eastus\", \"retailPrice\": 1}\n]}"),
        format!(
            "p.json:2: not {page}: at /Items/0/armSkuName expected a string, found no \"armSkuName\" key (the item has keys \"armRegionName\", \"retailPrice\")"
        )
    );
    assert_eq!(
        refused(
            "{\"Items\": [\n {\"armSkuName\": \"x\", \"armRegionName\": \"eastus\",\n  \"retailPrice\": \"0.5\"}\n]}"
        ),
        format!(
            "p.json:3: not {page}: at /Items/0/retailPrice expected a number, found the string \"0.5\""
        )
    );
    assert_eq!(
        refused("{\"Items\": [{\"armSkuName\": \"x\", \"armRegionName\": 1, \"retailPrice\": 1}]}"),
        format!(
            "p.json:1: not {page}: at /Items/0/armRegionName expected a string, found the number 1"
        )
    );
}

#[test]
fn pages_in_two_currencies_are_refused() {
    let item = |c: &str| {
        format!(
            "{{\"Items\": [{{\"currencyCode\": \"{c}\", \"armSkuName\": \"Standard_B1s\", \"armRegionName\": \"eastus\", \"retailPrice\": 1, \"serviceName\": \"Virtual Machines\", \"type\": \"Consumption\", \"unitOfMeasure\": \"1 Hour\"}}]}}"
        )
    };
    let mut s = PriceSheet::default();
    s.add_page("usd.json", &item("USD")).expect("usd");
    let err = s.add_page("eur.json", &item("EUR")).expect_err("eur");
    assert!(matches!(err, PriceError::Currency { .. }));
    assert_eq!(
        err.to_string(),
        "eur.json: prices in EUR, but usd.json prices in USD; fetch every page with the same `currencyCode`"
    );
}

#[test]
fn a_next_page_link_is_reported() {
    let mut s = PriceSheet::default();
    let summary = s
        .add_page("p1.json", "{\"Items\": [], \"NextPageLink\": \"https://prices.azure.com/api/retail/prices?$skip=1000\"}")
        .expect("page");
    assert_eq!(
        summary.next_page.as_deref(),
        Some("https://prices.azure.com/api/retail/prices?$skip=1000")
    );
}
