//! What `skuOffer(sku, region, zones)` and `quota(sku, region)` hand to CEL: the
//! subscription's SKU and usage lists installed with the context ([`crate::context`]),
//! asked about one size in one region.
//!
//! `quota()` compares free quota with what the whole document declares, so the demand of
//! every resource is summed once per evaluation ([`AzureScope::new`], before the rules
//! run) by region and quota family, and kept in a thread-local for the evaluation's
//! duration like the `sku()` memo. Answers are memoised per evaluation too: a rule asks
//! the same question in `when`, `assert` and its message.
//!
//! Azure ML compute clusters and instances and online deployments draw on Azure ML's own
//! quota (`azure.mlUsage`, `az ml compute list-usage`): their family's subscription-wide
//! "Cluster Dedicated vCPUs" entry (or "Cluster LowPriority vCPUs" for a low-priority
//! cluster) and Azure ML's regional total of the same priority, summed apart from what
//! AKS pools, scale sets and VMs draw on.
//!
//! Nothing here guesses: a size missing from the SKU lists is `unknown` (not "not
//! offered"), and a family, vCPU count, node count or usage entry that is not known makes
//! the quota `known: false` with the reason (never "enough", never 0).

use crate::azure::{
    MlLimit, MlPriority, MlScope, MlUsageEntry, OfferAnswer, QuotaAnswer, REGIONAL_TOTAL_ID,
    family_key,
};
use crate::catalog;
use crate::cel_value::{key, map, text as cel_text};
use crate::compute::Resource;
use crate::context::{self, AzureFacts};
use crate::region::normalize;
use cel_interpreter::Value as Cel;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The usage id of the regional Spot / low-priority vCPU counter ("Total Regional
/// Low-priority vCPUs"), which Spot VMs draw on instead of their family's quota.
pub const SPOT_TOTAL_ID: &str = "lowPriorityCores";

/// Most regions an answer's `offeredInText` names before "and N more".
const REGIONS_NAMED: usize = 8;

/// What `skuOffer(sku, region, zones)` returns to CEL (fields as in [`SKU_OFFER_FIELDS`]).
struct OfferView {
    /// SKU lists were given as context.
    evaluated: bool,
    /// `offered`, `not-offered`, `restricted`, `zones-not-offered` or `unknown` (the size
    /// is not in the lists, or nothing was given).
    answer: &'static str,
    /// The restriction's `reasonCode` (`NotAvailableForSubscription`), when one applies.
    reason_code: Option<String>,
    /// Regions where the lists offer the size without a `Location` restriction (lower
    /// case, sorted); empty unless `not-offered` or `restricted`.
    offered_in: Vec<String>,
    /// `offeredIn` for a message: `eastus, westus2` (at most [`REGIONS_NAMED`], then
    /// `and N more`); empty when `offeredIn` is.
    offered_in_text: String,
    /// The zones asked for that are not offered (`zones-not-offered`), in the order asked.
    zones: Vec<String>,
    /// `zones` for a message: `1, 3`.
    zones_text: String,
}

/// Fields of the map `skuOffer(sku, region, zones)` returns.
pub const SKU_OFFER_FIELDS: &[&str] = &[
    "evaluated",
    "answer",
    "reasonCode",
    "offeredIn",
    "offeredInText",
    "zones",
    "zonesText",
];

/// What `quota(sku, region)` returns to CEL (fields as in [`QUOTA_FIELDS`]).
#[derive(Default)]
struct QuotaView {
    /// Usage lists (compute or Azure ML) were given for at least one region.
    evaluated: bool,
    /// Usage was given for this region (for an Azure ML resource, compute or Azure ML
    /// usage).
    region_listed: bool,
    /// The family's free quota and what the document needs of it are both known.
    known: bool,
    /// Why not `known`; null when it is.
    reason: Option<String>,
    /// The usage id of the counter (`standardNCFamily`, `lowPriorityCores` for Spot; for
    /// an Azure ML resource the name of Azure ML's entry, "Standard NC Family Cluster
    /// Dedicated vCPUs"), or the size's family as the SKU lists or the catalog spell it
    /// when the usage has no entry for it; null when the family is not known.
    family: Option<String>,
    /// vCPUs the document declares of that family in that region (at least this many
    /// when not `known`), or what the whole change declares when the host says more
    /// (`settings.quota.declaredInRun`); null when the family is not known.
    needed: Option<i64>,
    /// vCPUs this document alone declares of that counter; equal to `needed` unless the
    /// host passed what the whole change declares.
    needed_in_document: Option<i64>,
    /// `limit - current` of the family; null when not in the usage, or unlimited (an Azure
    /// ML limit of -1).
    free: Option<i64>,
    /// The family's quota; null when unlimited.
    limit: Option<i64>,
    /// The family's vCPUs in use.
    current: Option<i64>,
    /// vCPUs the document declares in that region over every family (dedicated VMs; for
    /// an Azure ML resource, Azure ML's of its priority), at least; null for Spot, which
    /// the regional total does not count.
    regional_needed: Option<i64>,
    /// `limit - current` of the regional total (`cores`; for an Azure ML resource "Total
    /// Cluster Dedicated Regional vCPUs" or its low-priority twin); null when not in the
    /// usage or unlimited.
    regional_free: Option<i64>,
    /// The regional total's quota.
    regional_limit: Option<i64>,
    /// How the resource's own need was counted when it is more than instances x vCPUs
    /// (Azure ML's 20% reservation for a managed online deployment); null otherwise.
    headroom: Option<String>,
}

/// Fields of the map `quota(sku, region)` returns.
pub const QUOTA_FIELDS: &[&str] = &[
    "evaluated",
    "regionListed",
    "known",
    "reason",
    "family",
    "needed",
    "neededInDocument",
    "free",
    "limit",
    "current",
    "regionalNeeded",
    "regionalFree",
    "regionalLimit",
    "headroom",
];

/// One field of an answer, before it becomes a CEL value.
enum Field<'a> {
    Bool(bool),
    Text(Option<&'a str>),
    Int(Option<i64>),
    Texts(&'a [String]),
}

/// A CEL map of `names` and `values`, in the same order. Built by hand, through one
/// conversion, rather than through the serde serializer: each answer type would cost
/// the policy component its own copy of the conversion.
fn cel_map(names: &[&str], values: &[Field<'_>]) -> Cel {
    map(names.iter().zip(values).map(|(n, v)| {
        let value = match v {
            Field::Bool(b) => Cel::Bool(*b),
            Field::Text(t) => t.map_or(Cel::Null, cel_text),
            Field::Int(i) => i.map_or(Cel::Null, Cel::Int),
            Field::Texts(items) => Cel::List(std::sync::Arc::new(
                items.iter().map(|s| cel_text(s)).collect(),
            )),
        };
        (key(n), value)
    }))
}

impl OfferView {
    fn to_cel(&self) -> Cel {
        cel_map(
            SKU_OFFER_FIELDS,
            &[
                Field::Bool(self.evaluated),
                Field::Text(Some(self.answer)),
                Field::Text(self.reason_code.as_deref()),
                Field::Texts(&self.offered_in),
                Field::Text(Some(&self.offered_in_text)),
                Field::Texts(&self.zones),
                Field::Text(Some(&self.zones_text)),
            ],
        )
    }
}

impl QuotaView {
    fn to_cel(&self) -> Cel {
        cel_map(
            QUOTA_FIELDS,
            &[
                Field::Bool(self.evaluated),
                Field::Bool(self.region_listed),
                Field::Bool(self.known),
                Field::Text(self.reason.as_deref()),
                Field::Text(self.family.as_deref()),
                Field::Int(self.needed),
                Field::Int(self.needed_in_document),
                Field::Int(self.free),
                Field::Int(self.limit),
                Field::Int(self.current),
                Field::Int(self.regional_needed),
                Field::Int(self.regional_free),
                Field::Int(self.regional_limit),
                Field::Text(self.headroom.as_deref()),
            ],
        )
    }
}

/// Which quota a resource's nodes draw on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Draw {
    /// Its family's quota and the regional total (dedicated VMs: AKS pools, scale sets, VMs).
    Dedicated,
    /// The regional Spot / low-priority total ([`SPOT_TOTAL_ID`]).
    Spot,
    /// Azure ML's own quota (compute clusters and instances, online deployments): its
    /// family's dedicated vCPUs, or low-priority ones for a low-priority cluster.
    AzureMl {
        /// A low-priority (or Spot) compute cluster.
        low_priority: bool,
    },
    /// None this counts: the resource runs on nodes declared elsewhere (a Kubernetes
    /// workload, a job) or is no compute (a cluster, a workspace).
    Nothing,
}

/// One resource's part in the document's demand.
#[derive(Debug)]
struct Part {
    /// [`catalog::sku_key`] of its size.
    sku_key: Option<String>,
    /// Its region, normalised: its own, else its cluster's or workspace's.
    region: Option<String>,
    draw: Draw,
    /// Nodes it may run, or why that is not known.
    nodes: Result<u64, String>,
    /// How its nodes were counted when they are more than it runs ([`headroom_text`]).
    headroom: Option<String>,
}

/// vCPUs summed over resources, with the first reason the sum is incomplete.
#[derive(Clone, Debug, Default)]
struct Tally {
    vcpus: u64,
    missing: Option<String>,
}

impl Tally {
    fn add(&mut self, part: Result<u64, String>) {
        match part {
            Ok(n) => self.vcpus = self.vcpus.saturating_add(n),
            Err(reason) => {
                self.missing.get_or_insert(reason);
            }
        }
    }
}

/// What one document declares of each counter in each region: vCPUs by
/// [`Demand::key`]. A linear list: a document declares a handful of pools, and a map
/// type of its own cost the policy component more code than it saves.
#[derive(Clone, Debug, Default)]
struct Demand(Vec<(String, Tally)>);

/// Which counter of a region a [`Demand`] entry sums.
#[derive(Clone, Copy)]
enum Counter<'a> {
    /// A VM family, by [`family_key`].
    Family(&'a str),
    /// The regional total of dedicated vCPUs (`cores`).
    Regional,
    /// The regional Spot / low-priority total.
    Spot,
    /// An Azure ML family's dedicated or low-priority vCPUs, by [`family_key`].
    MlFamily(&'a str, bool),
    /// Azure ML's regional total of dedicated or low-priority vCPUs.
    MlRegional(bool),
}

/// The prefix of Azure ML's counters in `declaredInRun`.
const ML_PREFIX: &str = "ml:";
/// After [`ML_PREFIX`], what marks an Azure ML low-priority family counter.
const ML_LOW_PRIORITY: &str = "lowPriority:";

impl Counter<'_> {
    /// The id [`declared`] reports the counter under: a family by [`family_key`], `cores`,
    /// `lowPriorityCores`; Azure ML's prefixed with `ml:` (`ml:standardnc`,
    /// `ml:lowPriority:standardnc`, `ml:cores`, `ml:lowPriorityCores`).
    fn id(self) -> String {
        match self {
            Counter::Family(f) => f.to_string(),
            Counter::Regional => RUN_REGIONAL.to_string(),
            Counter::Spot => SPOT_TOTAL_ID.to_string(),
            Counter::MlFamily(f, false) => format!("{ML_PREFIX}{f}"),
            Counter::MlFamily(f, true) => format!("{ML_PREFIX}{ML_LOW_PRIORITY}{f}"),
            Counter::MlRegional(false) => format!("{ML_PREFIX}{RUN_REGIONAL}"),
            Counter::MlRegional(true) => format!("{ML_PREFIX}{SPOT_TOTAL_ID}"),
        }
    }
}

/// A `declaredInRun` id as [`Counter::id`] writes it, from any spelling (case, a family
/// with or without `Family`).
fn run_id(id: &str) -> String {
    let plain = |id: &str| {
        if id.eq_ignore_ascii_case(RUN_REGIONAL) {
            RUN_REGIONAL.to_string()
        } else if id.eq_ignore_ascii_case(SPOT_TOTAL_ID) {
            SPOT_TOTAL_ID.to_string()
        } else {
            family_key(id)
        }
    };
    let strip = |s: &str, prefix: &str| {
        s.get(..prefix.len())
            .filter(|p| p.eq_ignore_ascii_case(prefix))
            .map(|_| s[prefix.len()..].to_string())
    };
    match strip(id, ML_PREFIX) {
        None => plain(id),
        Some(rest) => match strip(&rest, ML_LOW_PRIORITY) {
            Some(family) => Counter::MlFamily(&family_key(&family), true).id(),
            None => format!("{ML_PREFIX}{}", plain(&rest)),
        },
    }
}

impl Demand {
    fn key(region: &str, counter: Counter<'_>) -> String {
        format!("{region} {}", counter.id())
    }

    fn get(&self, region: &str, counter: Counter<'_>) -> Option<&Tally> {
        let key = Self::key(region, counter);
        self.0.iter().find(|(k, _)| *k == key).map(|(_, t)| t)
    }

    fn add(&mut self, region: &str, counter: Counter<'_>, need: Result<u64, String>) {
        let key = Self::key(region, counter);
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, t)) => t.add(need),
            None => {
                let mut t = Tally::default();
                t.add(need);
                self.0.push((key, t));
            }
        }
    }
}

/// The Azure facts of one evaluation: each resource's part, the document's demand, the resource being evaluated and the answers given so far.
pub(super) struct AzureScope {
    parts: Vec<Part>,
    /// What the document declares, raised to what the whole change declares.
    demand: Demand,
    /// What the document alone declares.
    own: Demand,
    current: Cell<Option<usize>>,
    answers: RefCell<Vec<(String, Cel)>>,
}

/// The region a resource runs in: its own, else its cluster's or workspace's.
pub(super) fn region_of(r: &Resource) -> Option<&str> {
    r.region.as_deref().or(r.parent_region.as_deref())
}

fn draw_of(r: &Resource) -> Draw {
    match r.kind.as_str() {
        "aks-node-pool" | "vm" | "vm-scale-set" => {
            if matches!(r.priority.as_deref(), Some("spot" | "low-priority")) {
                Draw::Spot
            } else {
                Draw::Dedicated
            }
        }
        "aml-compute-cluster" => Draw::AzureMl {
            low_priority: matches!(r.priority.as_deref(), Some("spot" | "low-priority")),
        },
        "aml-compute-instance" | "aml-online-deployment" => Draw::AzureMl {
            low_priority: false,
        },
        _ => Draw::Nothing,
    }
}

/// Nodes a resource may run: an AKS pool's maximum when it autoscales, else its count; a
/// scale set's capacity; a VM's one; an Azure ML cluster's maximum (its readers fill in
/// the CLI's default of 1), a compute instance's one, an online deployment's instance
/// count (its maximum when it autoscales to more).
fn nodes_of(r: &Resource) -> Result<u64, String> {
    // A negative count is not a count of nothing: it cannot be judged.
    let count = |n: i64| {
        u64::try_from(n).map_err(|_| format!("{} declares a negative node count ({n})", r.display))
    };
    let none = |what: &str| Err(format!("{} declares no {what}", r.display));
    match r.kind.as_str() {
        "vm" | "aml-compute-instance" => Ok(1),
        "aml-compute-cluster" => r.max_nodes.or(r.instance_count).map_or_else(
            || none("maximum node count (max_instances / maxNodeCount / max_node_count)"),
            count,
        ),
        "aml-online-deployment" => {
            let max = r.max_nodes.filter(|_| r.autoscale == Some(true));
            match (r.instance_count, max) {
                (None, None) => none("instance count (instance_count)"),
                (n, m) => count(n.unwrap_or(0).max(m.unwrap_or(0)))
                    .map(|n| headroom_of(r, n).map_or(n, |h| h.reserved)),
            }
        }
        "vm-scale-set" => r
            .instance_count
            .map_or_else(|| none("capacity (sku.capacity / instances)"), count),
        _ => match (r.autoscale, r.max_nodes, r.instance_count) {
            (Some(true), Some(max), _) => count(max),
            (Some(true), None, _) => none("maximum node count (maxCount / max_count)"),
            (_, _, Some(n)) => count(n),
            (None, Some(max), None) => count(max),
            _ => none("node count (count / node_count)"),
        },
    }
}

/// Azure ML's upgrade reservation for a managed online deployment: instances requested,
/// and instances whose vCPUs its quota must have free.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Headroom {
    requested: u64,
    reserved: u64,
}

/// For a managed online deployment of `instances` on a size that is not exempt, the
/// reservation: "you must have a quota for `ceil(1.2 * number of instances requested for
/// deployment) * number of cores for the VM SKU`" (Azure ML "Virtual machine quota
/// allocation for deployment"). The exempt sizes are the catalog's (the "Skip 20%
/// Reservation" column of the managed online endpoints SKU list, which lists every exempt
/// size; an overlay may add one). None for an exempt size, a Kubernetes online deployment
/// (it runs on the attached cluster's nodes) and any other kind.
fn headroom_of(r: &Resource, instances: u64) -> Option<Headroom> {
    let managed = r.kind == "aml-online-deployment" && r.source_kind != "kubernetes";
    let exempt = r
        .sku
        .as_deref()
        .and_then(catalog::sku)
        .is_some_and(|f| f.ml_skip_reservation);
    (managed && !exempt).then(|| Headroom {
        requested: instances,
        // ceil(1.2 n) = ceil(6n / 5), in integers.
        reserved: instances.saturating_mul(6).saturating_add(4) / 5,
    })
}

/// The reservation as a message says it: `Azure ML reserves 20% for upgrades:
/// ceil(1.2 x 5) = 6 instances x 2 vCPUs`.
fn headroom_text(facts: &AzureFacts, r: &Resource) -> Option<String> {
    let instances = r.instance_count.unwrap_or(0).max(
        r.max_nodes
            .filter(|_| r.autoscale == Some(true))
            .unwrap_or(0),
    );
    let h = headroom_of(r, u64::try_from(instances).ok()?)?;
    let vcpus = r
        .sku
        .as_deref()
        .and_then(|s| vcpus_of(facts, s))
        .map_or_else(String::new, |v| {
            format!(" x {v} vCPUs = {} vCPUs", h.reserved.saturating_mul(v))
        });
    Some(format!(
        "Azure ML reserves 20% more for upgrades: ceil(1.2 x {}) = {} instances{vcpus}",
        h.requested, h.reserved
    ))
}

/// The quota family of a size: from the SKU lists, else the catalog (an overlay sets it).
fn family_of(facts: &AzureFacts, sku: &str) -> Option<String> {
    facts
        .availability
        .as_ref()
        .and_then(|a| a.sku(sku).iter().find_map(|o| o.family.clone()))
        .or_else(|| catalog::sku(sku).and_then(|f| f.family).map(str::to_string))
}

/// vCPUs per VM of a size: from the catalog, else the SKU lists.
fn vcpus_of(facts: &AzureFacts, sku: &str) -> Option<u64> {
    catalog::sku(sku).and_then(|f| f.vcpus).or_else(|| {
        facts
            .availability
            .as_ref()
            .and_then(|a| a.sku(sku).iter().find_map(|o| o.vcpus()))
    })
}

/// The part each of `resources` plays and what they declare together of each counter.
fn demand_of(facts: &AzureFacts, resources: &[Resource]) -> (Vec<Part>, Demand) {
    let mut parts = Vec::with_capacity(resources.len());
    let mut demand = Demand::default();
    let usage = facts.quota.is_some();
    let ml_usage = facts.ml_usage.is_some();
    for r in resources {
        let part = Part {
            sku_key: r.sku.as_deref().map(catalog::sku_key),
            region: region_of(r).map(normalize),
            draw: draw_of(r),
            nodes: nodes_of(r),
            headroom: headroom_text(facts, r),
        };
        let counted = match part.draw {
            Draw::Dedicated | Draw::Spot => usage,
            Draw::AzureMl { .. } => ml_usage,
            Draw::Nothing => false,
        };
        if counted && let (Some(sku), Some(region)) = (r.sku.as_deref(), &part.region) {
            let vcpus = vcpus_of(facts, sku)
                .ok_or_else(|| format!("the vCPUs of {sku} ({}) are not known", r.display));
            let need = match (&part.nodes, vcpus) {
                (Ok(n), Ok(v)) => Ok(n.saturating_mul(v)),
                (Err(e), _) => Err(e.clone()),
                (_, Err(e)) => Err(e),
            };
            // A part the regional total cannot count leaves it incomplete, never smaller.
            if let Draw::AzureMl { low_priority } = part.draw {
                demand.add(region, Counter::MlRegional(low_priority), need.clone());
                if let Some(family) = family_of(facts, sku) {
                    demand.add(
                        region,
                        Counter::MlFamily(&family_key(&family), low_priority),
                        need,
                    );
                }
            } else if part.draw == Draw::Spot {
                demand.add(region, Counter::Spot, need);
            } else {
                demand.add(region, Counter::Regional, need.clone());
                if let Some(family) = family_of(facts, sku) {
                    demand.add(region, Counter::Family(&family_key(&family)), need);
                }
            }
        }
        parts.push(part);
    }
    (parts, demand)
}

/// The usage id of the regional total in `declaredInRun` (`cores`).
const RUN_REGIONAL: &str = REGIONAL_TOTAL_ID;

/// What `resources` declare of each quota counter, per region (normalised) and usage id
/// (`cores` for the regional total, `lowPriorityCores` for Spot, a family by
/// [`family_key`]; Azure ML's own quota as `ml:` and a family by [`family_key`],
/// `ml:lowPriority:` and a family, `ml:cores` and `ml:lowPriorityCores` for its regional
/// totals): the sums `quota-sufficient` judges one document by. A host that checks a
/// change of several documents adds these up over all of them and passes the totals as
/// the built-in policy's `settings.quota.declaredInRun`, so that the change is judged as
/// a whole (`computeguard check` does). Empty without usage in the context.
pub fn declared(
    resources: &[Resource],
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> {
    let mut out: std::collections::BTreeMap<String, std::collections::BTreeMap<String, u64>> =
        std::collections::BTreeMap::new();
    let Some(facts) = context::azure() else {
        return out;
    };
    let (_, demand) = demand_of(facts, resources);
    for (key, tally) in &demand.0 {
        let Some((region, id)) = key.split_once(' ') else {
            continue;
        };
        let n = out
            .entry(region.to_string())
            .or_default()
            .entry(id.to_string())
            .or_default();
        *n = n.saturating_add(tally.vcpus);
    }
    out
}

/// Raises each of `demand`'s sums to what `settings.quota.declaredInRun` says the whole
/// change declares (keys compared as [`declared`] writes them).
fn raise_to_run(demand: &mut Demand, settings: &serde_json::Value) {
    let Some(run) = settings
        .pointer("/quota/declaredInRun")
        .and_then(serde_json::Value::as_object)
    else {
        return;
    };
    for (region, counters) in run {
        let region = normalize(region);
        for (id, vcpus) in counters.as_object().into_iter().flatten() {
            let Some(vcpus) = vcpus.as_u64() else {
                continue;
            };
            let key = format!("{region} {}", run_id(id));
            match demand.0.iter_mut().find(|(k, _)| *k == key) {
                Some((_, t)) => t.vcpus = t.vcpus.max(vcpus),
                None => demand.0.push((
                    key,
                    Tally {
                        vcpus,
                        missing: None,
                    },
                )),
            }
        }
    }
}

impl AzureScope {
    /// The scope of one evaluation of `resources`; none without Azure facts in the context
    /// (the functions then answer "not evaluated" without it, at no cost). `settings` may
    /// say what the whole change declares (`quota.declaredInRun`).
    pub(super) fn new(resources: &[Resource], settings: &serde_json::Value) -> Option<Self> {
        // Nothing to sum without SKU or usage lists (an overlay-only context): the
        // evaluation then costs what it costs without a context.
        let facts = context::azure()
            .filter(|f| f.availability.is_some() || f.quota.is_some() || f.ml_usage.is_some())?;
        let (parts, own) = demand_of(facts, resources);
        let mut demand = own.clone();
        raise_to_run(&mut demand, settings);
        Some(AzureScope {
            parts,
            demand,
            own,
            current: Cell::new(None),
            answers: RefCell::default(),
        })
    }

    /// Marks resource `index` (of the list given to [`AzureScope::new`]) as the one the
    /// rules are evaluated on.
    pub(super) fn set_current(&self, index: usize) {
        self.current.set(Some(index));
    }

    fn memo(&self, key: String, answer: impl FnOnce() -> Cel) -> Cel {
        if let Some((_, v)) = self.answers.borrow().iter().find(|(k, _)| *k == key) {
            return v.clone();
        }
        let v = answer();
        self.answers.borrow_mut().push((key, v.clone()));
        v
    }

    /// The resource being evaluated, when it has size `sku` in `region` (normalised).
    fn current_part(&self, sku: &str, region: &str) -> Option<(usize, &Part)> {
        let i = self.current.get()?;
        let p = self.parts.get(i)?;
        (p.region.as_deref() == Some(region)
            && p.sku_key.as_deref() == Some(&catalog::sku_key(sku)))
        .then_some((i, p))
    }
}

thread_local! {
    /// The Azure scope of the evaluation running on this thread (see `CURRENT_MEMO`).
    static CURRENT_AZURE: RefCell<Option<Rc<AzureScope>>> = const { RefCell::new(None) };
}

/// Installs an evaluation's Azure scope (or none) for its duration and restores the
/// previous one.
pub(super) struct CurrentAzure(Option<Rc<AzureScope>>);

impl CurrentAzure {
    pub(super) fn set(scope: Option<Rc<AzureScope>>) -> Self {
        CurrentAzure(CURRENT_AZURE.with(|c| c.replace(scope)))
    }
}

impl Drop for CurrentAzure {
    fn drop(&mut self) {
        CURRENT_AZURE.with(|c| *c.borrow_mut() = self.0.take());
    }
}

fn scope() -> Option<Rc<AzureScope>> {
    CURRENT_AZURE.with(|c| c.borrow().clone())
}

fn text(v: &Cel) -> Option<&str> {
    match v {
        Cel::String(s) => Some(s.as_str()),
        _ => None,
    }
}

/// Zones as CEL gives them: a list of strings or ints; anything else is none.
fn zones_arg(v: &Cel) -> Vec<String> {
    match v {
        Cel::List(items) => items
            .iter()
            .filter_map(|z| match z {
                Cel::String(s) => Some(s.trim().to_string()),
                Cel::Int(n) => Some(n.to_string()),
                Cel::UInt(n) => Some(n.to_string()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn listing(items: &[String]) -> String {
    let mut out = items
        .iter()
        .take(REGIONS_NAMED)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > REGIONS_NAMED {
        out.push_str(&format!(" and {} more", items.len() - REGIONS_NAMED));
    }
    out
}

fn offer_view(
    facts: Option<&AzureFacts>,
    sku: Option<&str>,
    region: Option<&str>,
    zones: &[String],
) -> OfferView {
    let availability = facts.and_then(|f| f.availability.as_ref());
    let answer = match (availability, sku, region) {
        (Some(a), Some(s), Some(r)) => a.offer(s, r, zones),
        _ => OfferAnswer::Unknown,
    };
    let (answer, reason_code, offered_in, zones) = match answer {
        OfferAnswer::Offered => ("offered", None, Vec::new(), Vec::new()),
        OfferAnswer::NotOffered { offered_in } => ("not-offered", None, offered_in, Vec::new()),
        OfferAnswer::Restricted {
            reason_code,
            offered_in,
        } => ("restricted", reason_code, offered_in, Vec::new()),
        OfferAnswer::ZonesNotOffered { zones, reason_code } => {
            ("zones-not-offered", reason_code, Vec::new(), zones)
        }
        OfferAnswer::Unknown => ("unknown", None, Vec::new(), Vec::new()),
    };
    OfferView {
        evaluated: availability.is_some(),
        answer,
        reason_code,
        offered_in_text: listing(&offered_in),
        offered_in,
        zones_text: zones.join(", "),
        zones,
    }
}

/// `skuOffer(sku, region, zones)`.
pub(super) fn sku_offer(sku: &Cel, region: &Cel, zones: &Cel) -> Cel {
    let zones = zones_arg(zones);
    let (sku, region) = (text(sku), text(region));
    let Some(facts) = context::azure() else {
        return offer_view(None, sku, region, &zones).to_cel();
    };
    let answer = || offer_view(Some(facts), sku, region, &zones).to_cel();
    match scope() {
        Some(s) => s.memo(
            format!(
                "offer\0{}\0{}\0{}",
                sku.unwrap_or_default(),
                region.unwrap_or_default(),
                zones.join("\0")
            ),
            answer,
        ),
        None => answer(),
    }
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// What Azure ML's usage says about one of its counters.
enum MlAnswer<'a> {
    /// The entry, as printed.
    Found(&'a MlUsageEntry),
    /// No entry, or entries that disagree: why.
    Unknown(String),
}

/// Whether an Azure ML usage entry counts low-priority vCPUs (`Some(true)`), dedicated ones
/// (`Some(false)`) or neither ("Clusters"). "Low Priority" in two words counts too.
fn ml_low_priority(e: &MlUsageEntry) -> Option<bool> {
    match e.priority {
        Some(MlPriority::LowPriority) => Some(true),
        Some(MlPriority::Dedicated) => Some(false),
        None => e
            .name
            .to_ascii_lowercase()
            .contains("low priority")
            .then_some(true),
    }
}

/// The Azure ML usage entries given for `region` (normalised); none when no list was.
fn ml_entries<'a>(facts: &'a AzureFacts, region: &str) -> Option<Vec<&'a MlUsageEntry>> {
    let lists = facts.ml_usage.as_ref()?;
    let mut given = false;
    let mut out = Vec::new();
    for (_, entries) in lists.iter().filter(|(r, _)| normalize(r) == region) {
        given = true;
        out.extend(entries);
    }
    given.then_some(out)
}

/// The subscription-wide entry among `entries` that `pick` selects; unknown when there is
/// none (`what` says which) or several that disagree.
fn ml_pick<'a>(
    entries: &[&'a MlUsageEntry],
    region: &str,
    what: &str,
    pick: impl Fn(&MlUsageEntry) -> bool,
) -> MlAnswer<'a> {
    let found: Vec<&MlUsageEntry> = entries
        .iter()
        .copied()
        .filter(|e| e.scope == MlScope::Subscription && pick(e))
        .collect();
    match found.first() {
        None => MlAnswer::Unknown(format!(
            "the Azure ML usage of region {region:?} has no subscription entry for {what}"
        )),
        Some(first)
            if found
                .iter()
                .any(|e| e.limit != first.limit || e.current != first.current) =>
        {
            MlAnswer::Unknown(format!(
                "the Azure ML usage of region {region:?} has disagreeing entries for {what}"
            ))
        }
        Some(first) => MlAnswer::Found(first),
    }
}

/// `free`, `limit` and `current` of an Azure ML entry: `free` and `limit` null when
/// unlimited.
fn ml_counts(e: &MlUsageEntry) -> (Option<i64>, Option<i64>, i64) {
    match e.limit {
        MlLimit::Unlimited => (None, None, e.current),
        MlLimit::Max(l) => {
            let l = as_i64(l);
            (Some(l.saturating_sub(e.current)), Some(l), e.current)
        }
    }
}

/// `quota()` for an Azure ML resource being evaluated: Azure ML's own usage of the region,
/// its family's entry of the resource's priority and Azure ML's regional total of it.
#[allow(clippy::too_many_arguments)]
fn ml_quota_view(
    mut v: QuotaView,
    facts: &AzureFacts,
    demand: &Demand,
    own: &Demand,
    part: &Part,
    sku: &str,
    region: &str,
    reg: &str,
    low_priority: bool,
) -> QuotaView {
    let Some(entries) = ml_entries(facts, reg) else {
        v.reason = Some(format!(
            "Azure ML compute and online deployments draw on Azure ML's own quota, which is \
             not evaluated without Azure ML usage for {region} (azure.mlUsage: az ml compute \
             list-usage --location {region} -o json)"
        ));
        return v;
    };
    v.region_listed = true;
    let priority = if low_priority {
        "LowPriority"
    } else {
        "Dedicated"
    };
    let mut reasons: Vec<String> = Vec::new();
    let regional = ml_pick(
        &entries,
        region,
        &format!("its regional total of {priority} vCPUs"),
        |e| {
            e.family.is_none()
                && ml_low_priority(e) == Some(low_priority)
                && (e.name.to_ascii_lowercase().contains("regional")
                    || e.usage_type.contains("dedicatedCores/")
                    || e.usage_type.contains("lowPriorityCores/"))
        },
    );
    if let MlAnswer::Found(e) = regional {
        let (free, limit, _) = ml_counts(e);
        v.regional_free = free;
        v.regional_limit = limit;
    }
    let regional = demand.get(reg, Counter::MlRegional(low_priority));
    v.regional_needed = Some(as_i64(regional.map_or(0, |t| t.vcpus)));
    reasons.extend(regional.and_then(|t| t.missing.clone()));
    match family_of(facts, sku) {
        None => reasons.push(format!(
            "the quota family of {sku} is not known: give a SKU list that has the size \
             (az vm list-skus --all) or its family in a catalog overlay"
        )),
        Some(f) => {
            let key = family_key(&f);
            v.family = Some(f.clone());
            match ml_pick(
                &entries,
                region,
                &format!("{f:?} ({priority} vCPUs)"),
                |e| {
                    e.family_key().as_deref() == Some(key.as_str())
                        && ml_low_priority(e) == Some(low_priority)
                },
            ) {
                MlAnswer::Found(e) => {
                    let (free, limit, current) = ml_counts(e);
                    v.family = Some(e.name.clone());
                    v.free = free;
                    v.limit = limit;
                    v.current = Some(current);
                }
                MlAnswer::Unknown(reason) => reasons.push(reason),
            }
            let counter = Counter::MlFamily(&key, low_priority);
            let tally = demand.get(reg, counter);
            v.needed = Some(as_i64(tally.map_or(0, |t| t.vcpus)));
            v.needed_in_document = Some(as_i64(own.get(reg, counter).map_or(0, |t| t.vcpus)));
            reasons.extend(tally.and_then(|t| t.missing.clone()));
        }
    }
    if vcpus_of(facts, sku).is_none() {
        reasons.push(format!("the vCPUs of {sku} are not known"));
    }
    if let Err(e) = &part.nodes {
        reasons.push(e.clone());
    }
    // The same reason can come from the family's and the regional total's sums.
    let mut said = std::collections::BTreeSet::new();
    reasons.retain(|r| said.insert(r.clone()));
    v.known = reasons.is_empty();
    if !v.known {
        v.reason = Some(reasons.join("; "));
    }
    v
}

fn quota_view(
    facts: &AzureFacts,
    scope: Option<&AzureScope>,
    sku: Option<&str>,
    region: Option<&str>,
) -> QuotaView {
    let mut v = QuotaView::default();
    let quota = facts
        .quota
        .as_ref()
        .filter(|q| q.regions().next().is_some());
    let ml_given = facts.ml_usage.as_ref().is_some_and(|l| !l.is_empty());
    if quota.is_none() && !ml_given {
        v.reason = Some("no usage lists were given (az vm list-usage)".into());
        return v;
    }
    v.evaluated = true;
    let (Some(sku), Some(region)) = (sku, region) else {
        v.reason = Some("no VM size or no region".into());
        return v;
    };
    let reg = normalize(region);
    v.region_listed = quota.is_some_and(|q| q.regions().any(|r| normalize(r) == reg));
    let mine = scope
        .and_then(|s| s.current_part(sku, &reg))
        .map(|(_, p)| p);
    let empty = Demand::default();
    let demand = scope.map_or(&empty, |s| &s.demand);
    let own = scope.map_or(&empty, |s| &s.own);
    v.headroom = mine.and_then(|p| p.headroom.clone());
    if let Some(p) = mine
        && let Draw::AzureMl { low_priority } = p.draw
    {
        return ml_quota_view(v, facts, demand, own, p, sku, region, &reg, low_priority);
    }
    let quota = quota.filter(|_| v.region_listed);
    let mut reasons: Vec<String> = Vec::new();
    if !v.region_listed {
        reasons.push(format!("no usage was given for region {region}"));
    }
    let free = |v: &mut QuotaView, answer: QuotaAnswer, reasons: &mut Vec<String>| match answer {
        QuotaAnswer::Free {
            family_id,
            limit,
            current,
            free,
        } => {
            v.family = Some(family_id);
            v.free = Some(free);
            v.limit = Some(limit);
            v.current = Some(current);
        }
        QuotaAnswer::Unknown { reason } => reasons.push(reason),
    };
    if mine.is_some_and(|p| p.draw == Draw::Spot) {
        v.family = Some(SPOT_TOTAL_ID.into());
        let tally = demand.get(&reg, Counter::Spot);
        v.needed = Some(as_i64(tally.map_or(0, |t| t.vcpus)));
        v.needed_in_document = Some(as_i64(own.get(&reg, Counter::Spot).map_or(0, |t| t.vcpus)));
        if let Some(quota) = quota {
            free(&mut v, quota.free(region, SPOT_TOTAL_ID), &mut reasons);
        }
        reasons.extend(tally.and_then(|t| t.missing.clone()));
    } else {
        if let Some(quota) = quota {
            if let QuotaAnswer::Free { limit, free, .. } = quota.free(region, REGIONAL_TOTAL_ID) {
                v.regional_free = Some(free);
                v.regional_limit = Some(limit);
            }
            let regional = demand.get(&reg, Counter::Regional);
            v.regional_needed = Some(as_i64(regional.map_or(0, |t| t.vcpus)));
            reasons.extend(regional.and_then(|t| t.missing.clone()));
        }
        let family = family_of(facts, sku);
        match &family {
            None => reasons.push(format!(
                "the quota family of {sku} is not known: give a SKU list that has the size \
                 (az vm list-skus --all) or its family in a catalog overlay"
            )),
            Some(f) => {
                v.family = Some(f.clone());
                if let Some(quota) = quota {
                    free(&mut v, quota.free(region, f), &mut reasons);
                }
            }
        }
        if vcpus_of(facts, sku).is_none() {
            reasons.push(format!("the vCPUs of {sku} are not known"));
        }
        if let Some(f) = &family {
            let tally = demand.get(&reg, Counter::Family(&family_key(f)));
            v.needed = Some(as_i64(tally.map_or(0, |t| t.vcpus)));
            v.needed_in_document = Some(as_i64(
                own.get(&reg, Counter::Family(&family_key(f)))
                    .map_or(0, |t| t.vcpus),
            ));
            reasons.extend(tally.and_then(|t| t.missing.clone()));
        }
    }
    if let Some(Err(e)) = mine.map(|p| &p.nodes) {
        reasons.push(e.clone());
    }
    // The same reason can come from the family's and the regional total's sums.
    let mut said = std::collections::BTreeSet::new();
    reasons.retain(|r| said.insert(r.clone()));
    v.known = reasons.is_empty();
    if !v.known {
        v.reason = Some(reasons.join("; "));
    }
    v
}

/// `quota(sku, region)`.
pub(super) fn quota(sku: &Cel, region: &Cel) -> Cel {
    let (sku, region) = (text(sku), text(region));
    let Some(facts) = context::azure() else {
        return QuotaView {
            reason: Some("no usage lists were given (az vm list-usage)".into()),
            ..QuotaView::default()
        }
        .to_cel();
    };
    match scope() {
        Some(s) => {
            let current = region
                .zip(sku)
                .and_then(|(r, k)| s.current_part(k, &normalize(r)))
                .map(|(i, _)| i);
            s.memo(
                format!(
                    "quota\0{}\0{}\0{current:?}",
                    sku.unwrap_or_default(),
                    region.unwrap_or_default()
                ),
                || quota_view(facts, Some(&s), sku, region).to_cel(),
            )
        }
        None => quota_view(facts, None, sku, region).to_cel(),
    }
}

#[cfg(test)]
mod tests {
    //! No context is installed in the unit tests (the integration test `context_rules`
    //! installs one in its own process): the functions answer "not evaluated" and the
    //! built-in rules that read them stay silent.

    use super::*;
    use crate::ast;
    use crate::eval::tests::{pack, rule, run};
    use crate::pack::{Rule, RuleMeta};
    use serde_json::{Value, json};

    /// `ids` from `policies/builtin.yaml`, each expression parsed as the compiler does.
    fn builtin_rules(ids: &[&str]) -> Vec<Rule> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../policies/builtin.yaml");
        let text = std::fs::read_to_string(path).expect("builtin.yaml");
        let doc: Value = serde_yaml_ng::from_str(&text).expect("yaml");
        let rules: Vec<Rule> = doc["rules"]
            .as_array()
            .expect("rules")
            .iter()
            .filter(|r| ids.contains(&r["id"].as_str().unwrap_or_default()))
            .map(|r| {
                let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_string);
                let expr = |k: &str| text(k).map(|src| ast::parse(&src).expect("parses"));
                Rule {
                    meta: RuleMeta {
                        id: text("id").unwrap_or_default(),
                        severity: serde_json::from_value(r["severity"].clone()).expect("severity"),
                        targets: vec![],
                        description: text("description").unwrap_or_default(),
                        rationale: text("rationale").unwrap_or_default(),
                        remediation: text("remediation").unwrap_or_default(),
                        message: None,
                        path: None,
                        field: text("field"),
                    },
                    when: expr("when"),
                    assert: expr("assert").expect("assert"),
                    message_expression: expr("messageExpression"),
                    severity_expression: expr("severityExpression"),
                }
            })
            .collect();
        assert_eq!(rules.len(), ids.len(), "{ids:?} in builtin.yaml");
        rules
    }

    #[test]
    fn without_a_context_the_rules_are_silent() {
        assert!(context::azure().is_none());
        let e = pack(builtin_rules(&[
            "sku-available-in-region",
            "quota-sufficient",
        ]));
        let doc = json!({"$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
            "resources": [{"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
                "name": "aks", "location": "eastus", "properties": {"agentPoolProfiles": [
                    {"name": "nv6", "vmSize": "Standard_NV6", "count": 40, "availabilityZones": ["1"]}]}},
                {"type": "Microsoft.Compute/virtualMachines", "apiVersion": "2024-07-01", "name": "vm",
                 "location": "westeurope", "zones": [1],
                 "properties": {"hardwareProfile": {"vmSize": "Standard_ND96isr_H100_v5"}}}]});
        let out = run(&e, &doc).expect("evaluates");
        assert_eq!(out.resources.len(), 3);
        assert!(out.violations.is_empty(), "{:?}", out.violations);
    }

    #[test]
    fn without_a_context_the_functions_answer_not_evaluated() {
        let e = pack(vec![rule(
            "f",
            None,
            "!skuOffer('Standard_NV6', 'eastus', ['1']).evaluated \
              && skuOffer('Standard_NV6', 'eastus', resource.zones).answer == 'unknown' \
              && size(skuOffer('Standard_NV6', 'eastus', []).offeredIn) == 0 \
              && !quota('Standard_NV6', 'eastus').evaluated && !quota('Standard_NV6', 'eastus').known \
              && quota('Standard_NV6', 'eastus').reason == 'no usage lists were given (az vm list-usage)' \
              && quota(resource.sku, null).needed == null",
            None,
        )]);
        let out = run(&e, &crate::eval::tests::cluster(0)).expect("ok");
        assert!(out.violations.is_empty(), "{:?}", out.violations);
    }

    #[test]
    fn node_counts_follow_the_kind() {
        let r =
            |kind: &str, autoscale: Option<bool>, max: Option<i64>, count: Option<i64>| Resource {
                kind: kind.into(),
                display: format!("{kind} x"),
                autoscale,
                max_nodes: max,
                instance_count: count,
                ..Resource::default()
            };
        assert_eq!(
            nodes_of(&r("aks-node-pool", Some(true), Some(5), Some(1))),
            Ok(5)
        );
        assert_eq!(
            nodes_of(&r("aks-node-pool", Some(false), Some(5), Some(2))),
            Ok(2)
        );
        assert_eq!(nodes_of(&r("aks-node-pool", None, Some(3), None)), Ok(3));
        assert_eq!(
            nodes_of(&r("aks-node-pool", Some(true), None, Some(1))),
            Err("aks-node-pool x declares no maximum node count (maxCount / max_count)".into())
        );
        assert!(nodes_of(&r("aks-node-pool", Some(false), None, None)).is_err());
        assert_eq!(nodes_of(&r("vm-scale-set", None, None, Some(7))), Ok(7));
        assert!(nodes_of(&r("vm-scale-set", None, None, None)).is_err());
        assert_eq!(nodes_of(&r("vm", None, None, None)), Ok(1));
        assert_eq!(
            nodes_of(&r("aks-node-pool", Some(false), None, Some(-2))),
            Err("aks-node-pool x declares a negative node count (-2)".into()),
            "a negative count is unknown, not 0"
        );
        let spot = Resource {
            priority: Some("spot".into()),
            ..r("aks-node-pool", None, None, Some(1))
        };
        assert_eq!(draw_of(&spot), Draw::Spot);
        assert_eq!(
            draw_of(&r("aml-online-deployment", None, None, None)),
            Draw::AzureMl {
                low_priority: false
            }
        );
        let low = Resource {
            priority: Some("low-priority".into()),
            ..r("aml-compute-cluster", Some(true), Some(4), Some(4))
        };
        assert_eq!(draw_of(&low), Draw::AzureMl { low_priority: true });
        assert_eq!(nodes_of(&low), Ok(4));
        assert_eq!(
            nodes_of(&r("aml-compute-cluster", Some(true), None, Some(1))),
            Ok(1)
        );
        assert!(nodes_of(&r("aml-compute-cluster", None, None, None)).is_err());
        assert_eq!(
            nodes_of(&r("aml-compute-instance", None, None, None)),
            Ok(1)
        );
        // With Azure ML's 20% upgrade reservation: ceil(1.2 x 5) = 6, ceil(1.2 x 2) = 3.
        assert_eq!(
            nodes_of(&r("aml-online-deployment", Some(true), Some(5), Some(2))),
            Ok(6)
        );
        assert_eq!(
            nodes_of(&r("aml-online-deployment", Some(false), Some(5), Some(2))),
            Ok(3)
        );
        assert_eq!(
            nodes_of(&r("aml-online-deployment", None, None, None)),
            Err("aml-online-deployment x declares no instance count (instance_count)".into())
        );
        assert_eq!(draw_of(&r("k8s-workload", None, None, None)), Draw::Nothing);
    }

    /// Azure ML's 20% reservation: `ceil(1.2 x instances)` for a managed online deployment
    /// (the docs' example: 10 instances need 12), none for the exempt sizes of the catalog,
    /// a Kubernetes online deployment or a compute cluster.
    #[test]
    fn managed_online_deployments_count_the_upgrade_reservation() {
        let dep = |sku: &str, ty: &str, count: i64| Resource {
            kind: "aml-online-deployment".into(),
            source_kind: ty.into(),
            display: "d".into(),
            sku: Some(sku.into()),
            instance_count: Some(count),
            ..Resource::default()
        };
        for (n, reserved) in [(1, 2), (3, 4), (5, 6), (10, 12), (0, 0)] {
            assert_eq!(
                nodes_of(&dep("Standard_DS3_v2", "aml-online-deployment", n)),
                Ok(reserved),
                "{n} instances"
            );
        }
        // A size the exempt list does not name is not exempt (the list is complete).
        assert_eq!(
            nodes_of(&dep("Standard_D2_v2", "aml-online-deployment", 5)),
            Ok(6)
        );
        for exempt in [
            "Standard_NC24ads_A100_v4",
            "STANDARD_ND96ASR_V4",
            "Standard_ND96isr_H100_v5",
            "Standard_NC40ads_H100_v5",
        ] {
            assert_eq!(
                nodes_of(&dep(exempt, "aml-online-deployment", 10)),
                Ok(10),
                "{exempt}"
            );
        }
        assert_eq!(
            nodes_of(&dep("Standard_NC4as_T4_v3", "kubernetes", 10)),
            Ok(10),
            "a Kubernetes online deployment runs on its cluster's nodes"
        );
        let facts = AzureFacts::default();
        assert_eq!(
            headroom_text(&facts, &dep("Standard_DS3_v2", "aml-online-deployment", 10)).as_deref(),
            Some(
                "Azure ML reserves 20% more for upgrades: ceil(1.2 x 10) = 12 instances \
                 x 4 vCPUs = 48 vCPUs"
            )
        );
        assert_eq!(
            headroom_text(
                &facts,
                &dep("Standard_NC24ads_A100_v4", "aml-online-deployment", 1)
            ),
            None
        );
    }

    #[test]
    fn answers_have_exactly_the_documented_fields() {
        let fields = |v: Cel| match v {
            Cel::Map(m) => {
                let mut k: Vec<String> = m.map.keys().map(|k| format!("{k}")).collect();
                k.sort();
                k
            }
            other => vec![format!("{other:?}")],
        };
        let sorted = |f: &[&str]| {
            let mut f: Vec<String> = f.iter().map(|s| (*s).to_string()).collect();
            f.sort();
            f
        };
        let s = |t: &str| Cel::String(std::sync::Arc::new(t.to_string()));
        assert_eq!(
            fields(sku_offer(&s("Standard_NV6"), &s("eastus"), &Cel::Null)),
            sorted(SKU_OFFER_FIELDS)
        );
        assert_eq!(
            fields(quota(&s("Standard_NV6"), &s("eastus"))),
            sorted(QUOTA_FIELDS)
        );
    }

    #[test]
    fn declared_in_run_ids_of_every_spelling() {
        assert_eq!(run_id("standardNVFamily"), "standardnv");
        assert_eq!(run_id("Standard NV Family"), "standardnv");
        assert_eq!(run_id("CORES"), "cores");
        assert_eq!(run_id("lowprioritycores"), "lowPriorityCores");
        assert_eq!(run_id("ml:standardNCFamily"), "ml:standardnc");
        assert_eq!(run_id("ML:Standard NC Family"), "ml:standardnc");
        assert_eq!(
            run_id("ml:lowpriority:standardNCFamily"),
            "ml:lowPriority:standardnc"
        );
        assert_eq!(run_id("ml:cores"), "ml:cores");
        assert_eq!(run_id("ml:LowPriorityCores"), "ml:lowPriorityCores");
        assert_eq!(
            Counter::MlFamily("standardnc", true).id(),
            run_id("ml:lowPriority:StandardNCFamily")
        );
        assert_eq!(
            Counter::Family("standardnv").id(),
            run_id("standardNVFamily")
        );
    }

    #[test]
    fn arguments_and_listings() {
        let list = Cel::List(std::sync::Arc::new(vec![
            Cel::String(std::sync::Arc::new(" 1 ".into())),
            Cel::Int(2),
            Cel::Null,
        ]));
        assert_eq!(zones_arg(&list), ["1", "2"]);
        assert!(zones_arg(&Cel::Null).is_empty());
        let regions: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
        assert_eq!(listing(&regions[..2]), "r0, r1");
        assert_eq!(
            listing(&regions),
            "r0, r1, r2, r3, r4, r5, r6, r7 and 2 more"
        );
    }
}
