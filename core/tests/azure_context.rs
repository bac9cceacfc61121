//! Azure knowledge (`computeguard_policy_core::azure`) against every real sample in
//! `shared/corpus/azure-context/` (see its SOURCES.tsv): REST bodies as-is, and bodies
//! extracted here from SDK / CLI test recordings (the library reads only what `az` and the
//! REST API print). Also the `az` CLI printing forms built from the REST samples, and the
//! shape errors for documents that are something else.

// Helpers outside #[test] functions read fixtures: a missing or malformed fixture is a
// failed test, so they unwrap.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use computeguard_policy_core::azure::{
    Availability, MlLimit, MlPriority, MlScope, OfferAnswer, Quota, QuotaAnswer, RestrictionKind,
    SkuOffer, UsageEntry, family_key, next_link, parse_ml_sizes, parse_ml_usage, parse_skus,
    parse_usage,
};
use serde_json::{Value, json};
use std::path::PathBuf;

// ---------------------------------------------------------------------------------------
// Corpus access
// ---------------------------------------------------------------------------------------

const SKEWER_EASTUS: &str = "skus-rest-skewer-eastus-4skus-nv6-restricted.json";
const JAVA_SKUS_EASTUS2: &str = "skus-recording-java-eastus2-2020-canListSkusByRegion.json";
const REST_SKUS_WESTUS: &str =
    "skus-rest-example-ListAvailableResourceSkusForARegion-2021-07-01.json";
const JAVA_USAGE_EASTUS: &str = "usage-recording-java-eastus-2021-canListComputeUsages.json";
const CLI_USAGE_WESTUS: &str = "usage-recording-azurecli-westus-2023-test_vm_usage.yaml";
const REST_USAGE_MAXSET: &str = "usage-rest-example-Usage_List_MaximumSet_Gen-2024-07-01.json";
const ML_SIZES: &str = "ml-vmsizes-rest-example-VirtualMachineSize_list-2024-04-01.json";
const ML_USAGE: &str = "ml-usage-rest-example-Usage_list-2024-04-01.json";

const ALL_SAMPLES: [&str; 8] = [
    SKEWER_EASTUS,
    JAVA_SKUS_EASTUS2,
    REST_SKUS_WESTUS,
    JAVA_USAGE_EASTUS,
    CLI_USAGE_WESTUS,
    REST_USAGE_MAXSET,
    ML_SIZES,
    ML_USAGE,
];

fn corpus_dir() -> PathBuf {
    // core/ -> the workspace (/work/main) -> its sibling shared/.
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/azure-context")
}

fn text(name: &str) -> String {
    let path = corpus_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_file(name: &str) -> Value {
    serde_json::from_str(&text(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `responses."200".body` of an azure-rest-api-specs example.
fn rest_example_body(name: &str) -> Value {
    json_file(name)["responses"]["200"]["body"].clone()
}

/// `networkCallRecords[i].Response.Body` of a Java SDK session record: a JSON string.
fn java_record_body(name: &str, i: usize) -> Value {
    let record = json_file(name);
    let body = record["networkCallRecords"][i]["Response"]["Body"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: networkCallRecords[{i}].Response.Body is no string"));
    serde_json::from_str(body).unwrap()
}

/// `networkCallRecords[i].Uri` of a Java SDK session record.
fn java_record_uri(name: &str, i: usize) -> String {
    json_file(name)["networkCallRecords"][i]["Uri"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `interactions[0]` of the azure-cli vcrpy recording, as JSON.
fn cli_interaction() -> Value {
    let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text(CLI_USAGE_WESTUS)).unwrap();
    let as_json: Value = serde_json::to_value(yaml).unwrap();
    as_json["interactions"][0].clone()
}

/// `interactions[0].response.body.string` of the azure-cli recording: the REST body.
fn cli_recorded_body() -> Value {
    let interaction = cli_interaction();
    let body = interaction["response"]["body"]["string"].as_str().unwrap();
    serde_json::from_str(body).unwrap()
}

fn find<'a>(skus: &'a [SkuOffer], name: &str) -> &'a SkuOffer {
    skus.iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{name} not in the list"))
}

fn zones(z: &[&str]) -> Vec<String> {
    z.iter().map(|s| s.to_string()).collect()
}

fn free(family_id: &str, limit: i64, current: i64) -> QuotaAnswer {
    QuotaAnswer::Free {
        family_id: family_id.to_string(),
        limit,
        current,
        free: limit - current,
    }
}

fn is_unknown(a: &QuotaAnswer) -> bool {
    matches!(a, QuotaAnswer::Unknown { .. })
}

#[test]
fn every_sample_file_is_covered() {
    let mut on_disk: Vec<String> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "SOURCES.tsv")
        .collect();
    on_disk.sort();
    let mut covered: Vec<String> = ALL_SAMPLES.iter().map(|s| s.to_string()).collect();
    covered.sort();
    assert_eq!(
        on_disk, covered,
        "a sample without a test, or a test without its sample"
    );
    let sources = text("SOURCES.tsv");
    for name in ALL_SAMPLES {
        assert!(
            sources.lines().any(|l| l.starts_with(&format!("{name}\t"))),
            "{name} is not explained in SOURCES.tsv"
        );
    }
}

// ---------------------------------------------------------------------------------------
// SKUs
// ---------------------------------------------------------------------------------------

#[test]
fn skewer_eastus_four_skus() {
    let doc = json_file(SKEWER_EASTUS);
    let skus = parse_skus(&doc).unwrap();
    let names: Vec<&str> = skus.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Standard_D2_v2",
            "Standard_D13_v2_Promo",
            "Standard_D4s_v3",
            "Standard_NV6"
        ]
    );
    assert_eq!(next_link(&doc), None);

    let nv6 = find(&skus, "Standard_NV6");
    assert_eq!(nv6.family.as_deref(), Some("standardNVFamily"));
    assert_eq!(nv6.tier.as_deref(), Some("Standard"));
    assert_eq!(nv6.size.as_deref(), Some("NV6"));
    assert_eq!(nv6.gpus(), Some(1.0));
    assert_eq!(nv6.vcpus(), Some(6));
    assert_eq!(nv6.vcpus_available(), Some(6));
    assert_eq!(nv6.memory_gib(), Some(56.0));
    assert_eq!(nv6.rdma(), Some(false));
    assert_eq!(nv6.accelerated_networking(), Some(false));
    assert_eq!(nv6.low_priority_capable(), Some(true));
    assert_eq!(nv6.cpu_architecture(), Some("x64"));
    assert_eq!(nv6.capability("RetirementDateUtc"), Some("08/31/2023"));
    assert_eq!(
        nv6.capability("gpus"),
        Some("1"),
        "names also match case-insensitively"
    );
    assert_eq!(nv6.locations, ["eastus"]);
    // locationInfo lists only zones 2 and 3 for NV6 ...
    assert_eq!(nv6.zones_in("eastus"), ["2", "3"]);
    // ... and its only restriction is a Zone one, covering all three zones.
    assert_eq!(nv6.restrictions.len(), 1);
    let r = &nv6.restrictions[0];
    assert_eq!(r.kind, RestrictionKind::Zone);
    assert_eq!(
        r.reason_code.as_deref(),
        Some("NotAvailableForSubscription")
    );
    assert_eq!(r.locations, ["eastus"]);
    assert_eq!(r.zones, ["1", "2", "3"]);
    assert!(nv6.location_restriction("eastus").is_none());

    let promo = find(&skus, "Standard_D13_v2_Promo");
    assert_eq!(promo.gpus(), None, "no GPUs capability: unknown, not 0");
    assert_eq!(promo.vcpus(), Some(8));
    let kinds: Vec<&RestrictionKind> = promo.restrictions.iter().map(|r| &r.kind).collect();
    assert_eq!(kinds, [&RestrictionKind::Location, &RestrictionKind::Zone]);
    assert_eq!(
        promo
            .location_restriction("East US")
            .and_then(|r| r.reason_code.as_deref()),
        Some("NotAvailableForSubscription")
    );

    let d4s = find(&skus, "Standard_D4s_v3");
    assert_eq!(d4s.hyperv_generations(), ["V1", "V2"]);
    assert_eq!(d4s.premium_io(), Some(true));
    assert_eq!(d4s.vcpus_per_core(), Some(2));
    assert_eq!(d4s.zones_in("eastus"), ["1", "2", "3"]);
    assert!(d4s.restrictions.is_empty());

    let d2 = find(&skus, "Standard_D2_v2");
    assert_eq!(
        (d2.vcpus(), d2.memory_gib(), d2.gpus()),
        (Some(2), Some(7.0), None)
    );
}

#[test]
fn skewer_eastus_availability() {
    let avail = Availability::new(parse_skus(&json_file(SKEWER_EASTUS)).unwrap());
    // NV6: the region is offered, no zone is (1 is not listed, 2 and 3 are restricted).
    assert_eq!(
        avail.offer("Standard_NV6", "eastus", &[]),
        OfferAnswer::Offered
    );
    assert_eq!(
        avail.offer("standard_nv6", "East US", &[]),
        OfferAnswer::Offered
    );
    for z in ["1", "2", "3"] {
        assert_eq!(
            avail.offer("Standard_NV6", "eastus", &zones(&[z])),
            OfferAnswer::ZonesNotOffered {
                zones: zones(&[z]),
                reason_code: Some("NotAvailableForSubscription".into()),
            },
            "zone {z}"
        );
    }
    // D13_v2_Promo: a Location restriction, and no other region in the data.
    assert_eq!(
        avail.offer("Standard_D13_v2_Promo", "eastus", &zones(&["1"])),
        OfferAnswer::Restricted {
            reason_code: Some("NotAvailableForSubscription".into()),
            offered_in: vec![],
        }
    );
    // D4s_v3: unrestricted in all three zones.
    assert_eq!(
        avail.offer("Standard_D4s_v3", "eastus", &zones(&["3", "1", "2"])),
        OfferAnswer::Offered
    );
    assert_eq!(
        avail.offer("Standard_D4s_v3", "eastus", &zones(&["4", "1", "4"])),
        OfferAnswer::ZonesNotOffered {
            zones: zones(&["4"]),
            reason_code: None
        }
    );
    // A size the data lists only in eastus.
    assert_eq!(
        avail.offer("Standard_NV6", "westeurope", &[]),
        OfferAnswer::NotOffered {
            offered_in: vec!["eastus".into()]
        }
    );
    assert_eq!(
        avail.offer("Standard_D13_v2_Promo", "westeurope", &[]),
        OfferAnswer::NotOffered { offered_in: vec![] }
    );
    // Absent from the data: unknown (list-skus without --all hides restricted sizes).
    assert_eq!(
        avail.offer("Standard_NC6", "eastus", &[]),
        OfferAnswer::Unknown
    );
    assert_eq!(avail.sku("STANDARD_D2_V2").len(), 1);
}

#[test]
fn java_recording_eastus2_2020() {
    let uri = java_record_uri(JAVA_SKUS_EASTUS2, 0);
    assert!(
        uri.contains("skus?$filter=location%20eq%20%27eastus2%27"),
        "{uri}"
    );
    let body = java_record_body(JAVA_SKUS_EASTUS2, 0);
    assert_eq!(
        body["value"].as_array().unwrap().len(),
        292,
        "all resource types"
    );
    let skus = parse_skus(&body).unwrap();
    assert_eq!(skus.len(), 243, "virtualMachines only");
    assert!(skus.iter().all(|s| s.locations == ["eastus2"]));
    let count = |kind: RestrictionKind| {
        skus.iter()
            .flat_map(|s| &s.restrictions)
            .filter(|r| r.kind == kind)
            .count()
    };
    assert_eq!(count(RestrictionKind::Location), 8);
    assert_eq!(count(RestrictionKind::Zone), 111);
    assert!(
        skus.iter()
            .flat_map(|s| &s.restrictions)
            .all(|r| r.reason_code.as_deref() == Some("NotAvailableForSubscription"))
    );
    // 18 sizes print a GPUs capability; the other 225 (a 2020 response) do not.
    assert_eq!(skus.iter().filter(|s| s.gpus().is_some()).count(), 18);
    assert_eq!(skus.iter().filter(|s| s.gpus().is_none()).count(), 225);

    let d2 = find(&skus, "Standard_D2_v2");
    assert_eq!(
        d2.gpus(),
        None,
        "absent GPUs capability is unknown, never 0"
    );
    assert_eq!(d2.vcpus(), Some(2));
    assert_eq!(d2.cpu_architecture(), None, "not printed in 2020");

    let nc24r = find(&skus, "Standard_NC24r");
    assert_eq!(nc24r.family.as_deref(), Some("standardNCFamily"));
    assert_eq!((nc24r.gpus(), nc24r.vcpus()), (Some(4.0), Some(24)));
    assert_eq!(nc24r.memory_gib(), Some(224.0));
    assert_eq!(nc24r.rdma(), Some(true));

    let nc6s = find(&skus, "Standard_NC6s_v3");
    assert_eq!(nc6s.family.as_deref(), Some("standardNCSv3Family"));
    assert_eq!(nc6s.gpus(), Some(1.0));

    let avail = Availability::new(skus.clone());
    // NC6: offered in the region; locationInfo lists zone 3 only, and a Zone restriction
    // covers 1-3.
    assert_eq!(find(&skus, "Standard_NC6").zones_in("eastus2"), ["3"]);
    assert_eq!(
        avail.offer("Standard_NC6", "eastus2", &[]),
        OfferAnswer::Offered
    );
    assert_eq!(
        avail.offer("Standard_NC6", "EastUS2", &zones(&["3"])),
        OfferAnswer::ZonesNotOffered {
            zones: zones(&["3"]),
            reason_code: Some("NotAvailableForSubscription".into())
        }
    );
    // The 8 Location restrictions: NCv3 and the NC Promo sizes.
    let restricted: Vec<&str> = skus
        .iter()
        .filter(|s| s.location_restriction("eastus2").is_some())
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        restricted,
        [
            "Standard_NC6s_v3",
            "Standard_NC12s_v3",
            "Standard_NC24rs_v3",
            "Standard_NC24s_v3",
            "Standard_NC6_Promo",
            "Standard_NC12_Promo",
            "Standard_NC24_Promo",
            "Standard_NC24r_Promo"
        ]
    );
    assert_eq!(
        avail.offer("Standard_NC24rs_v3", "East US 2", &[]),
        OfferAnswer::Restricted {
            reason_code: Some("NotAvailableForSubscription".into()),
            offered_in: vec![]
        }
    );
    assert_eq!(
        avail.offer("Standard_D2_v2", "eastus2", &zones(&["1", "2", "3"])),
        OfferAnswer::Offered
    );
    assert_eq!(
        avail.offer("Standard_D2_v2", "westus", &[]),
        OfferAnswer::NotOffered {
            offered_in: vec!["eastus2".into()]
        }
    );
    // No A100 in a 2020 list.
    assert_eq!(
        avail.offer("Standard_NC24ads_A100_v4", "eastus2", &[]),
        OfferAnswer::Unknown
    );

    // The second call: location eq 'unknown' -> an empty list, which is no error.
    assert!(java_record_uri(JAVA_SKUS_EASTUS2, 1).contains("%27unknown%27"));
    assert_eq!(
        parse_skus(&java_record_body(JAVA_SKUS_EASTUS2, 1)).unwrap(),
        vec![]
    );
}

#[test]
fn rest_example_westus_two_sizes() {
    let body = rest_example_body(REST_SKUS_WESTUS);
    assert_eq!(next_link(&body), None, "nextLink is null");
    let skus = parse_skus(&body).unwrap();
    assert_eq!(skus.len(), 2);
    let a0 = find(&skus, "Standard_A0");
    assert_eq!(a0.family.as_deref(), Some("standardA0_A7Family"));
    assert_eq!(a0.memory_gib(), Some(0.75));
    assert_eq!(a0.vcpus(), Some(1));
    assert_eq!(a0.gpus(), None);
    assert!(a0.restrictions.is_empty(), "no restrictions key at all");
    assert_eq!(a0.zones_in("westus"), ["1", "2"]);
    let a1 = find(&skus, "Standard_A1");
    assert_eq!(a1.memory_gib(), Some(1.75));
    assert_eq!(a1.zones_in("westus"), ["1", "2", "3"]);

    let avail = Availability::new(skus);
    assert_eq!(
        avail.offer("Standard_A0", "westus", &zones(&["2", "3"])),
        OfferAnswer::ZonesNotOffered {
            zones: zones(&["3"]),
            reason_code: None
        }
    );
    assert_eq!(
        avail.offer("Standard_A1", "West US", &zones(&["3"])),
        OfferAnswer::Offered
    );
}

// ---------------------------------------------------------------------------------------
// Usage and quota
// ---------------------------------------------------------------------------------------

#[test]
fn java_usage_eastus_2020() {
    assert!(java_record_uri(JAVA_USAGE_EASTUS, 0).contains("/locations/eastus/usages"));
    let usage = parse_usage(&java_record_body(JAVA_USAGE_EASTUS, 0)).unwrap();
    assert_eq!(usage.len(), 77);
    assert_eq!(
        usage[1],
        UsageEntry {
            id: "cores".into(),
            display: Some("Total Regional vCPUs".into()),
            current: 0,
            limit: 100,
            unit: Some("Count".into()),
        }
    );
    let quota = Quota::new(vec![("eastus".into(), usage)]);
    assert_eq!(quota.regional_total("eastus"), free("cores", 100, 0));
    assert_eq!(quota.regional_total("East US"), free("cores", 100, 0));
    assert_eq!(
        quota.free("eastus", "standardNCFamily"),
        free("standardNCFamily", 48, 0)
    );
    assert_eq!(
        quota.free("EASTUS", "Standard NC Family"),
        free("standardNCFamily", 48, 0)
    );
    assert_eq!(
        quota.free("eastus", "standardNVFamily"),
        free("standardNVFamily", 24, 0)
    );
    // A zero limit is known: nothing free.
    let ncsv3 = quota.free("eastus", "standardNCSv3Family");
    assert_eq!(ncsv3, free("standardNCSv3Family", 0, 0));
    assert_eq!(ncsv3.fits(6), Some(false));
    assert_eq!(
        quota.free("eastus", "standardNCFamily").fits(48),
        Some(true)
    );
    assert_eq!(
        quota.free("eastus", "standardNCFamily").fits(49),
        Some(false)
    );
    // A family the 2020 list does not carry, and a region without data: unknown.
    let a100 = quota.free("eastus", "standardNCADSA100v4Family");
    assert!(is_unknown(&a100), "{a100:?}");
    assert_eq!(a100.fits(1), None);
    assert!(is_unknown(&quota.free("westus", "standardNCFamily")));
    assert!(is_unknown(&quota.regional_total("westus")));
    assert_eq!(quota.regions().collect::<Vec<_>>(), ["eastus"]);

    // A size from the eastus2 SKU list, its family looked up in eastus usage.
    let skus = parse_skus(&java_record_body(JAVA_SKUS_EASTUS2, 0)).unwrap();
    assert_eq!(
        quota.free_for("eastus", find(&skus, "Standard_NC24r")),
        free("standardNCFamily", 48, 0)
    );
    assert_eq!(
        quota.free_for("eastus", find(&skus, "Standard_NV12_Promo")),
        free("standardNVPromoFamily", 24, 0)
    );
    // Every VM family of that SKU list has a usage entry in the eastus list.
    let missing: Vec<&str> = skus
        .iter()
        .filter(|s| is_unknown(&quota.free_for("eastus", s)))
        .map(|s| s.name.as_str())
        .collect();
    assert!(missing.is_empty(), "{missing:?}");
}

#[test]
fn azure_cli_recording_westus_2023() {
    let interaction = cli_interaction();
    assert_eq!(
        interaction["request"]["headers"]["CommandName"][0],
        "vm list-usage"
    );
    assert!(
        interaction["request"]["uri"]
            .as_str()
            .unwrap()
            .contains("/locations/westus/usages")
    );
    let usage = parse_usage(&cli_recorded_body()).unwrap();
    assert_eq!(usage.len(), 139);
    let quota = Quota::new(vec![("westus".into(), usage)]);
    assert_eq!(quota.regional_total("westus"), free("cores", 100, 9));
    assert_eq!(
        quota.free("westus", "standardNCFamily"),
        free("standardNCFamily", 48, 0)
    );
    assert_eq!(
        quota.free("westus", "standardDSv2Family"),
        free("standardDSv2Family", 100, 5)
    );
    // Usage ids that differ from SKU families in case and spacing.
    assert_eq!(
        quota.free("westus", "standardNCADSA100v4Family"),
        free("StandardNCADSA100v4Family", 0, 0)
    );
    assert_eq!(
        quota.free("westus", "standardNCASv3_T4Family"),
        free("Standard NCASv3_T4 Family", 0, 0)
    );
    assert_eq!(
        quota.free("westus", "standardNDAMSv4_A100Family"),
        free("standard NDAMSv4_A100Family", 0, 0)
    );
    assert_eq!(
        quota.free("westus", "StandardNDASv4_A100Family"),
        free("Standard NDASv4_A100 Family", 0, 0)
    );
    assert_eq!(
        quota.free("westus", "standardNVADSA10v5Family"),
        free("StandardNVADSA10v5Family", 0, 0)
    );
    // The display text of NCADS_A100_v4 ("Standard NCADS_A100_v4 Family vCPUs") is not an
    // id: only name.value is matched.
    assert!(is_unknown(
        &quota.free("westus", "Standard NCADS_A100_v4 Family")
    ));
    assert!(is_unknown(
        &quota.free("westus", "standardNCadsH100v5Family")
    ));
    // The fits of the regional total.
    assert_eq!(quota.regional_total("West US").fits(91), Some(true));
    assert_eq!(quota.regional_total("West US").fits(92), Some(false));
}

#[test]
fn family_keys() {
    let same = [
        ("StandardNCADSA100v4Family", "standardNCADSA100v4Family"),
        ("StandardNCADSA100v4Family", "standardNCadsA100v4Family"),
        ("Standard NCASv3_T4 Family", "standardNCASv3_T4Family"),
        ("Standard NCASv3_T4 Family", "StandardNCASv3_T4Family"),
        ("standard NDAMSv4_A100Family", "standardNDAMSv4_A100Family"),
        ("Standard NDASv4_A100 Family", "StandardNDASv4_A100Family"),
        ("standardNCFamily", "Standard NC Family"),
        ("standardNCFamily", "standardNC"),
    ];
    for (a, b) in same {
        assert_eq!(family_key(a), family_key(b), "{a} vs {b}");
    }
    assert_eq!(family_key("Standard NCASv3_T4 Family"), "standardncasv3_t4");
    assert_eq!(family_key("cores"), "cores");
    assert_eq!(family_key("Family"), "family", "nothing left to strip from");
    assert_ne!(
        family_key("standardNCFamily"),
        family_key("standardNCPromoFamily")
    );
    assert_ne!(
        family_key("standardNCFamily"),
        family_key("standardNCSv3Family")
    );
}

#[test]
fn maximum_set_example_junk_name() {
    let body = rest_example_body(REST_USAGE_MAXSET);
    assert_eq!(next_link(&body), Some("aaaaaaaaaaaaaaaaaaaaaaaaaaa"));
    let usage = parse_usage(&body).unwrap();
    assert_eq!(
        usage,
        [UsageEntry {
            id: "aaaaaaaaaaaaaaaaaa".into(),
            display: Some("aaaaaaaaaaaaaa".into()),
            current: 17,
            limit: 19,
            unit: Some("Count".into()),
        }]
    );
    // The example's location parameter is "4_.".
    let region = json_file(REST_USAGE_MAXSET)["parameters"]["location"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(region, "4_.");
    let quota = Quota::new(vec![(region.clone(), usage)]);
    for family in [
        "standardNCFamily",
        "standardNCADSA100v4Family",
        "standardDSv2Family",
    ] {
        let a = quota.free(&region, family);
        assert!(is_unknown(&a), "{family}: {a:?}");
        assert_eq!(a.fits(0), None);
    }
    assert!(is_unknown(&quota.regional_total(&region)));
    assert_eq!(
        quota.free(&region, "aaaaaaaaaaaaaaaaaa"),
        free("aaaaaaaaaaaaaaaaaa", 19, 17)
    );
}

#[test]
fn disagreeing_entries_are_unknown_and_agreeing_merge() {
    let entry = |id: &str, current, limit| UsageEntry {
        id: id.into(),
        display: None,
        current,
        limit,
        unit: None,
    };
    let quota = Quota::new(vec![
        ("East US".into(), vec![entry("standardNCFamily", 0, 48)]),
        ("eastus".into(), vec![entry("Standard NC Family", 0, 24)]),
        ("westus".into(), vec![entry("standardNCFamily", 6, 48)]),
        ("WestUS".into(), vec![entry("standardNCFamily", 6, 48)]),
    ]);
    let QuotaAnswer::Unknown { reason } = quota.free("eastus", "standardNCFamily") else {
        panic!("disagreeing entries must be unknown")
    };
    assert!(reason.contains("disagreeing"), "{reason}");
    assert_eq!(
        quota.free("westus", "standardNCFamily"),
        free("standardNCFamily", 48, 6)
    );
    assert_eq!(quota.entries("West US", "standardNCFamily").len(), 2);
    assert_eq!(quota.regions().collect::<Vec<_>>(), ["East US", "westus"]);
}

// ---------------------------------------------------------------------------------------
// Azure ML
// ---------------------------------------------------------------------------------------

#[test]
fn ml_usage_eastus() {
    let usage = parse_ml_usage(&rest_example_body(ML_USAGE)).unwrap();
    assert_eq!(usage.len(), 35);
    assert_eq!(
        usage
            .iter()
            .filter(|u| u.limit == MlLimit::Unlimited)
            .count(),
        15
    );
    let count = |f: fn(&MlScope) -> bool| usage.iter().filter(|u| f(&u.scope)).count();
    assert_eq!(count(|s| *s == MlScope::Subscription), 23);
    assert_eq!(count(|s| matches!(s, MlScope::Workspace { .. })), 5);
    assert_eq!(count(|s| matches!(s, MlScope::Compute { .. })), 7);
    assert_eq!(usage.iter().filter(|u| u.family.is_some()).count(), 32);
    let prio = |p| usage.iter().filter(|u| u.priority == Some(p)).count();
    assert_eq!(prio(MlPriority::Dedicated), 18);
    assert_eq!(prio(MlPriority::LowPriority), 16);

    // The subscription's NC dedicated quota: 12 of 24, matched to the compute SKU family.
    let nc: Vec<_> = usage
        .iter()
        .filter(|u| {
            u.scope == MlScope::Subscription
                && u.family_key() == Some(family_key("standardNCFamily"))
                && u.priority == Some(MlPriority::Dedicated)
        })
        .collect();
    assert_eq!(nc.len(), 1);
    assert_eq!(nc[0].name, "Standard NC Family Cluster Dedicated vCPUs");
    assert_eq!(nc[0].family.as_deref(), Some("Standard NC Family"));
    assert_eq!((nc[0].current, nc[0].limit), (12, MlLimit::Max(24)));
    assert_eq!(
        nc[0].usage_type,
        "Microsoft.MachineLearningServices/vmFamily/usages"
    );
    // Low priority per family: unlimited.
    let nc_low = usage
        .iter()
        .find(|u| {
            u.scope == MlScope::Subscription
                && u.name.starts_with("Standard NC Family Cluster LowPriority")
        })
        .unwrap();
    assert_eq!((nc_low.current, nc_low.limit), (18, MlLimit::Unlimited));
    // "Clusters" (type totalCores) names no family and no priority.
    assert_eq!(usage[0].name, "Clusters");
    assert_eq!(
        (usage[0].family.as_deref(), usage[0].priority),
        (None, None)
    );
    assert_eq!((usage[0].current, usage[0].limit), (7, MlLimit::Max(100)));
    // Workspace-scope entries typed "workspace/usages" (sic) are still workspaces.
    let ws1 = usage
        .iter()
        .find(|u| u.usage_type == "Microsoft.MachineLearningServices/workspace/usages")
        .unwrap();
    assert_eq!(
        ws1.scope,
        MlScope::Workspace {
            workspace: Some("demo_workspace1".into())
        }
    );
    assert!(usage.iter().any(|u| u.scope
        == MlScope::Compute {
            workspace: Some("demo_workspace2".into()),
            compute: Some("demo_cluser1_nc".into())
        }));
}

#[test]
fn ml_vm_sizes_eastus() {
    let sizes = parse_ml_sizes(&rest_example_body(ML_SIZES)).unwrap();
    assert_eq!(sizes.len(), 9);
    assert!(
        sizes
            .iter()
            .all(|s| s.family.as_deref() == Some("standardDSv2Family") && s.gpus == Some(0))
    );
    let ds1 = &sizes[0];
    assert_eq!(ds1.name, "Standard_DS1_v2");
    assert_eq!((ds1.vcpus, ds1.memory_gib), (Some(1), Some(3.5)));
    assert_eq!(ds1.max_resource_volume_mb, Some(7168));
    assert_eq!(ds1.os_vhd_size_mb, Some(1047552));
    assert_eq!(
        (ds1.low_priority_capable, ds1.premium_io),
        (Some(true), Some(true))
    );
    assert_eq!(
        ds1.supported_compute_types,
        ["AmlCompute", "ComputeInstance"]
    );
    let ds14 = sizes.iter().find(|s| s.name == "Standard_DS14_v2").unwrap();
    assert_eq!((ds14.vcpus, ds14.memory_gib), (Some(16), Some(112.0)));
    assert!(sizes[1].supported_compute_types.iter().any(|t| t == "MIR"));
}

// ---------------------------------------------------------------------------------------
// What `az` prints
// ---------------------------------------------------------------------------------------

/// `az vm list-usage -o json`: a bare array; `currentValue` and `limit` as strings;
/// `localName` added (azure-cli's transform_vm_usage_list); no `unit`.
fn as_cli_usage(rest: &Value) -> Value {
    Value::Array(
        rest["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                json!({
                    "currentValue": e["currentValue"].to_string(),
                    "limit": e["limit"].to_string(),
                    "localName": e["name"]["localizedValue"],
                    "name": e["name"],
                })
            })
            .collect(),
    )
}

/// `az vm list-skus -o json`: a bare array of the same objects, with the model's unset
/// fields as `null` and (to check lower-casing) a region in mixed case.
fn as_cli_skus(rest: &Value) -> Value {
    Value::Array(
        rest["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let mut e = e.clone();
                let o = e.as_object_mut().unwrap();
                for key in ["apiVersions", "capacity", "costs", "kind"] {
                    o.entry(key).or_insert(Value::Null);
                }
                if o.get("restrictions").is_none() {
                    o.insert("restrictions".into(), json!([]));
                }
                if let Some(Value::Array(locs)) = o.get_mut("locations") {
                    for l in locs.iter_mut() {
                        if l == "eastus" {
                            *l = json!("EastUS");
                        }
                    }
                }
                for info in o["locationInfo"].as_array_mut().unwrap() {
                    info["extendedLocations"] = Value::Null;
                    info["type"] = Value::Null;
                }
                e
            })
            .collect(),
    )
}

#[test]
fn cli_printing_forms() {
    // Usage: same entries from the CLI form (display from name.localizedValue, no unit).
    for rest in [
        java_record_body(JAVA_USAGE_EASTUS, 0),
        cli_recorded_body(),
        rest_example_body(REST_USAGE_MAXSET),
    ] {
        let from_rest = parse_usage(&rest).unwrap();
        let cli = as_cli_usage(&rest);
        assert!(cli[0]["limit"].is_string());
        let from_cli = parse_usage(&cli).unwrap();
        let without_unit: Vec<UsageEntry> = from_rest
            .into_iter()
            .map(|e| UsageEntry { unit: None, ..e })
            .collect();
        assert_eq!(from_cli, without_unit);
    }
    // localName alone also gives the display text.
    let only_local = json!([{"currentValue": "9", "limit": "100", "localName": "Total Regional vCPUs",
                             "name": {"value": "cores"}}]);
    assert_eq!(
        parse_usage(&only_local).unwrap()[0].display.as_deref(),
        Some("Total Regional vCPUs")
    );
    let cli = as_cli_usage(&cli_recorded_body());
    let quota = Quota::new(vec![("West US".into(), parse_usage(&cli).unwrap())]);
    assert_eq!(quota.regional_total("westus"), free("cores", 100, 9));

    // SKUs: same sizes from the CLI form; mixed-case regions are lower-cased.
    for rest in [
        json_file(SKEWER_EASTUS),
        rest_example_body(REST_SKUS_WESTUS),
        java_record_body(JAVA_SKUS_EASTUS2, 0),
    ] {
        let cli = as_cli_skus(&rest);
        assert_eq!(parse_skus(&cli).unwrap(), parse_skus(&rest).unwrap());
    }
    let cli = as_cli_skus(&json_file(SKEWER_EASTUS));
    assert_eq!(cli[0]["locations"][0], "EastUS");
    let avail = Availability::new(parse_skus(&cli).unwrap());
    assert_eq!(
        avail.offer("Standard_NV6", "eastus", &[]),
        OfferAnswer::Offered
    );
}

// ---------------------------------------------------------------------------------------
// Shape errors
// ---------------------------------------------------------------------------------------

#[test]
fn shape_errors() {
    let skus_doc = "a VM size list (`az vm list-skus -o json` or a REST Resource Skus - List body)";

    // A usage body given to parse_skus.
    let e = parse_skus(&java_record_body(JAVA_USAGE_EASTUS, 0)).unwrap_err();
    assert_eq!(e.pointer, "/value/0");
    assert_eq!(
        e.to_string(),
        format!(
            "not {skus_doc}: at /value/0 expected a resource SKU object (with \"name\" and \
             \"resourceType\"), found a usage entry (with \"currentValue\" and \"limit\"): that \
             is `az vm list-usage` or REST Usage - List output, read by parse_usage"
        )
    );
    // And the CLI form of it.
    let e = parse_skus(&as_cli_usage(&cli_recorded_body())).unwrap_err();
    assert_eq!(e.pointer, "/0");

    // An array of non-objects.
    let e = parse_skus(&json!([1, 2])).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "not {skus_doc}: at /0 expected a resource SKU object (with \"name\" and \
             \"resourceType\"), found the number 1"
        )
    );
    // An object without value.
    let e = parse_skus(&json!({})).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "not {skus_doc}: at /value expected an array (the \"value\" of a REST Resource \
             Skus - List body), found no \"value\" key (the object is empty)"
        )
    );
    // The REST example file itself, not its body.
    let e = parse_skus(&json_file(REST_SKUS_WESTUS)).unwrap_err();
    assert_eq!(e.pointer, "/value");
    assert_eq!(
        e.found,
        "no \"value\" key (the object has keys \"parameters\", \"responses\")"
    );
    // Neither an array nor an object.
    let e = parse_skus(&json!("Standard_NC6")).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "not {skus_doc}: at the top level expected a JSON array (`az vm list-skus -o \
             json`) or an object with a \"value\" array (REST Resource Skus - List body), \
             found the string \"Standard_NC6\""
        )
    );
    let e = parse_skus(&json!({"value": {"name": "x"}})).unwrap_err();
    assert_eq!(
        (e.pointer.as_str(), e.found.as_str()),
        ("/value", "an object with keys \"name\"")
    );
    // Entries without name, or of the wrong types.
    let e = parse_skus(&json!({"value": [{"resourceType": "virtualMachines"}]})).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "not {skus_doc}: at /value/0/name expected a string, found no \"name\" key (the \
             object has keys \"resourceType\")"
        )
    );
    let e = parse_skus(
        &json!([{"name": "Standard_X", "resourceType": "virtualMachines",
                                 "locations": "eastus"}]),
    )
    .unwrap_err();
    assert_eq!(e.pointer, "/0/locations");
    assert_eq!(e.found, "the string \"eastus\"");
    let e = parse_skus(
        &json!([{"name": "Standard_X", "resourceType": "virtualMachines",
                                 "capabilities": [{"name": "GPUs", "value": ["1"]}]}]),
    )
    .unwrap_err();
    assert_eq!(e.pointer, "/0/capabilities/0/value");
    let e = parse_skus(
        &json!([{"name": "Standard_X", "resourceType": "virtualMachines",
                                 "restrictions": [{"reasonCode": "QuotaId"}]}]),
    )
    .unwrap_err();
    assert_eq!(e.pointer, "/0/restrictions/0/type");

    // A SKU list given to parse_usage.
    let e = parse_usage(&json_file(SKEWER_EASTUS)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not a compute usage list (`az vm list-usage -o json` or a REST Usage - List body): \
         at /value/0 expected a usage object (with \"name\": {\"value\": ...}, \
         \"currentValue\" and \"limit\"), found a resource SKU (resourceType \
         \"virtualMachines\"): that is `az vm list-skus` or REST Resource Skus - List output, \
         read by parse_skus"
    );
    // An Azure ML usage body given to parse_usage, and the other way round.
    let e = parse_usage(&rest_example_body(ML_USAGE)).unwrap_err();
    assert!(e.found.contains("parse_ml_usage"), "{e}");
    let e = parse_ml_usage(&java_record_body(JAVA_USAGE_EASTUS, 0)).unwrap_err();
    assert_eq!(e.pointer, "/value/0");
    assert!(e.found.contains("read by parse_usage"), "{e}");
    // Counts that are not integers.
    let e =
        parse_usage(&json!([{"name": {"value": "cores"}, "currentValue": "nine", "limit": 100}]))
            .unwrap_err();
    assert_eq!(
        e.to_string(),
        "not a compute usage list (`az vm list-usage -o json` or a REST Usage - List body): \
         at /0/currentValue expected an integer (a JSON number or a string of digits), found \
         the string \"nine\""
    );
    let e = parse_usage(&json!({"value": [{"name": "cores", "currentValue": 1, "limit": 2}]}))
        .unwrap_err();
    assert_eq!(e.pointer, "/value/0/name");

    // ML sizes: a compute SKU list, and numbers as strings.
    let e = parse_ml_sizes(&json_file(SKEWER_EASTUS)).unwrap_err();
    assert_eq!(e.pointer, "/value/0");
    assert!(e.found.contains("parse_skus"), "{e}");
    let e =
        parse_ml_sizes(&json!({"value": [{"name": "Standard_DS1_v2", "vCPUs": "1"}]})).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an Azure ML VM size list (REST Virtual Machine Sizes - List body): at \
         /value/0/vCPUs expected a non-negative integer or null, found the string \"1\""
    );
    // An ML limit below -1.
    let e = parse_ml_usage(&json!({"value": [{"type": "Microsoft.MachineLearningServices/vmFamily/usages",
        "name": {"value": "Standard NC Family Cluster Dedicated vCPUs"}, "currentValue": 0, "limit": -2}]}))
    .unwrap_err();
    assert_eq!(e.pointer, "/value/0/limit");
}

#[test]
fn other_resource_types_are_skipped_not_errors() {
    let doc = json!({"value": [
        {"resourceType": "disks", "name": "Premium_LRS", "locations": ["eastus"]},
        {"resourceType": "virtualMachines", "name": "Standard_X", "locations": ["EastUS2"],
         "locationInfo": [{"location": "EastUS2", "zones": ["2", "1"]}, {"location": "westus"}],
         "capabilities": [{"name": "GPUs", "value": "0.5"}, {"name": "vCPUs", "value": "n/a"},
                          {"name": "RdmaEnabled", "value": "TRUE"}, {"name": "MemoryGB", "value": null}]}
    ]});
    let skus = parse_skus(&doc).unwrap();
    assert_eq!(skus.len(), 1);
    let x = &skus[0];
    assert_eq!(x.locations, ["eastus2", "westus"]);
    assert_eq!(x.zones_in("East US 2"), ["1", "2"]);
    assert!(x.zones_in("westus").is_empty());
    assert_eq!(x.gpus(), Some(0.5));
    assert_eq!(x.vcpus(), None, "unreadable is unknown");
    assert_eq!(x.rdma(), Some(true));
    assert_eq!(x.memory_gib(), None);
}
