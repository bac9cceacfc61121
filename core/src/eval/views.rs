//! The catalog data handed to CEL: what `sku(name)` and `region(name)` return
//! ([`SkuView`], [`RegionView`]), the cached undated `sku()` answers, the
//! alternatives a SKU view suggests, and the per-evaluation memo through which
//! `sku()` answers at its evaluation's date.

use crate::catalog::{self, SkuFacts};
use crate::cel_value::to_cel;
use crate::{region, version};
use cel_interpreter::Value as Cel;
use serde::Serialize;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

/// What `sku(name)` returns to CEL.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SkuView {
    known: bool,
    /// Canonical spelling when known, else the name as given.
    name: String,
    well_formed: bool,
    gpu_family: bool,
    series: Option<&'static str>,
    vendor: Option<&'static str>,
    gpu_model: Option<&'static str>,
    architecture: Option<&'static str>,
    compute_capability: Option<&'static str>,
    /// None when the catalog does not know it (CEL `null`); sizes it does not know at
    /// all count 0, as `known` says.
    gpu_count: Option<f64>,
    infiniband: bool,
    rdma: bool,
    isolated: bool,
    status: Option<&'static str>,
    retired: bool,
    retirement_date: Option<&'static str>,
    retirement_announced: bool,
    mig_capable: bool,
    requires_approval: bool,
    aks_supported: Option<bool>,
    kaito_supported: Option<bool>,
    online_endpoint: Option<bool>,
    first_cuda: Option<&'static str>,
    last_cuda: Option<&'static str>,
    sources: Vec<&'static str>,
    /// A current size with the same GPU generation or newer and no InfiniBand.
    non_infiniband_alternative: Option<&'static str>,
    /// A current size to move to from a retired or retiring one.
    replacement: Option<&'static str>,
}

/// The answer of `sku(name)` for each catalog entry, without its date: built on first
/// use, and all at once by [`Evaluator::prepare`](super::Evaluator::prepare) so that a pre-initialised instance
/// starts with them. Building one took two scans of the catalog and a 27-entry map.
static SKU_ANSWERS: OnceLock<Box<[OnceLock<Cel>]>> = OnceLock::new();

/// The fields of a `sku()` answer that depend on the evaluation date.
struct Dated {
    retired: bool,
    retirement_announced: bool,
}

fn dated(f: &SkuFacts, as_of: &str) -> Dated {
    Dated {
        retired: catalog::retired_at(f, as_of),
        retirement_announced: f.retirement_date.is_some_and(|d| d >= as_of),
    }
}

fn sku_answer_cells() -> &'static [OnceLock<Cel>] {
    SKU_ANSWERS.get_or_init(|| catalog::freeze().iter().map(|_| OnceLock::new()).collect())
}

/// Builds every catalog entry's undated answer now.
pub(super) fn prepare_sku_answers() {
    for ((key, _), cell) in catalog::skus().iter().zip(sku_answer_cells()) {
        cell.get_or_init(|| to_cel(&sku_view(key, "")));
    }
}

/// `sku(name)` at `as_of`: the same value as `to_cel(&sku_view(name, as_of))`.
fn sku_answer(name: &str, as_of: &str) -> Cel {
    let entry = catalog::sku_index(name)
        .and_then(|i| Some((catalog::skus().get(i)?, sku_answer_cells().get(i)?)));
    let Some(((key, facts), cell)) = entry else {
        return to_cel(&sku_view(name, as_of));
    };
    // The entry's key answers exactly as `name` does: every name-derived field goes
    // through the same normalised key.
    let Cel::Map(undated) = cell.get_or_init(|| to_cel(&sku_view(key, ""))) else {
        return to_cel(&sku_view(name, as_of));
    };
    let mut map = (*undated.map).clone();
    let d = dated(facts, as_of);
    for (field, value) in [
        ("retired", d.retired),
        ("retirementAnnounced", d.retirement_announced),
    ] {
        map.insert(
            cel_interpreter::objects::Key::String(Arc::new(field.to_string())),
            Cel::Bool(value),
        );
    }
    Cel::Map(cel_interpreter::objects::Map { map: Arc::new(map) })
}

fn sku_view(name: &str, as_of: &str) -> SkuView {
    let facts = catalog::sku(name);
    let arch = facts
        .and_then(|f| f.compute_capability)
        .and_then(catalog::architecture);
    SkuView {
        known: facts.is_some(),
        name: facts.map_or_else(|| name.to_string(), |f| f.name.to_string()),
        well_formed: catalog::sku_well_formed(name),
        gpu_family: catalog::sku_gpu_family(name),
        series: facts.map(|f| f.series),
        vendor: facts.and_then(|f| f.vendor),
        gpu_model: facts.map(|f| f.gpu_model).filter(|m| !m.is_empty()),
        architecture: facts.and_then(|f| f.architecture),
        compute_capability: facts.and_then(|f| f.compute_capability),
        gpu_count: facts.map_or(Some(0.0), |f| f.gpu_count),
        infiniband: facts.is_some_and(|f| f.infiniband),
        rdma: facts.is_some_and(|f| f.rdma || f.infiniband),
        isolated: facts.is_some_and(|f| f.isolated),
        status: facts.map(|f| f.status),
        retired: facts.is_some_and(|f| dated(f, as_of).retired),
        retirement_date: facts.and_then(|f| f.retirement_date),
        retirement_announced: facts.is_some_and(|f| dated(f, as_of).retirement_announced),
        mig_capable: facts.is_some_and(|f| f.mig_capable),
        requires_approval: facts.is_some_and(|f| f.requires_approval == Some(true)),
        aks_supported: facts.and_then(|f| f.aks_supported),
        kaito_supported: facts.and_then(|f| f.kaito_supported),
        online_endpoint: facts.and_then(|f| f.online_endpoint),
        first_cuda: arch.and_then(|a| a.first_cuda),
        last_cuda: arch.and_then(|a| a.last_cuda),
        sources: facts.map(|f| f.sources.to_vec()).unwrap_or_default(),
        non_infiniband_alternative: facts.filter(|f| f.infiniband).and_then(|f| {
            alternative(f, as_of, |c| {
                !c.infiniband && !c.rdma && c.gpu_model == f.gpu_model
            })
            .or_else(|| {
                alternative(f, as_of, |c| {
                    !c.infiniband && !c.rdma && c.architecture == f.architecture
                })
            })
        }),
        // At least the GPUs and the GPU memory it replaces: a size whose memory the
        // catalog does not know is not offered for one whose memory it does.
        replacement: facts.filter(|f| f.retirement_date.is_some()).and_then(|f| {
            alternative(f, as_of, |c| {
                c.infiniband == f.infiniband
                    && c.gpu_count >= f.gpu_count
                    && match (c.gpu_memory_gib, f.gpu_memory_gib) {
                        (Some(a), Some(b)) => a >= b,
                        (None, Some(_)) => false,
                        (_, None) => true,
                    }
            })
        }),
    }
}

/// The smallest current (no retirement date), non-isolated GPU size of the same
/// vendor, with at least the same compute capability, that satisfies `pred`
/// (smallest by GPU count, then vCPUs).
fn alternative(
    f: &SkuFacts,
    _as_of: &str,
    pred: impl Fn(&SkuFacts) -> bool,
) -> Option<&'static str> {
    catalog::skus()
        .iter()
        .map(|(_, c)| c)
        .filter(|c| c.name == c.alias && c.category == "gpu" && c.vendor == f.vendor)
        .filter(|c| c.retirement_date.is_none() && c.status == "GA" && !c.isolated)
        .filter(|c| c.name != f.name && pred(c))
        .filter(|c| match (c.compute_capability, f.compute_capability) {
            (Some(a), Some(b)) => version::compare(a, b).is_some_and(|o| o.is_ge()),
            _ => true,
        })
        .min_by(|a, b| {
            let count = |f: &SkuFacts| f.gpu_count.unwrap_or(f64::INFINITY);
            count(a)
                .total_cmp(&count(b))
                .then(a.vcpus.cmp(&b.vcpus))
                .then(a.name.cmp(b.name))
        })
        .map(|c| c.name)
}

/// What `region(name)` returns to CEL.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RegionView {
    known: bool,
    name: String,
    display_name: Option<&'static str>,
    geography: Option<&'static str>,
    area: Option<&'static str>,
    country: Option<&'static str>,
    eu: bool,
    eea: bool,
}

pub(super) fn region_view(name: &str) -> RegionView {
    let facts = region::region(name);
    RegionView {
        known: facts.is_some(),
        name: facts.map_or_else(|| region::normalize(name), |f| f.name.to_string()),
        display_name: facts.map(|f| f.display_name),
        geography: facts.map(|f| f.geography),
        area: facts.map(|f| f.area),
        country: facts.map(|f| f.country),
        eu: facts.is_some_and(|f| f.eu),
        eea: facts.is_some_and(|f| f.eea),
    }
}

/// `sku(name)` answers of one evaluation, at its date. `sku(resource.sku)` is called
/// by nearly every rule, and each answer takes two scans of the catalog plus a
/// 27-entry map: answer each name once per evaluation.
pub(super) struct SkuMemo {
    pub(super) as_of: String,
    pub(super) entries: RefCell<Vec<(String, Cel)>>,
}

impl SkuMemo {
    pub(super) fn get(&self, name: &str) -> Cel {
        if let Some((_, value)) = self.entries.borrow().iter().find(|(n, _)| n == name) {
            return value.clone();
        }
        let value = sku_answer(name, &self.as_of);
        self.entries
            .borrow_mut()
            .push((name.to_string(), value.clone()));
        value
    }
}

thread_local! {
    /// The `sku()` memo (and date) of the evaluation running on this thread. The
    /// function table is built once per evaluator, so `sku()` finds its evaluation
    /// here; evaluation is synchronous, so the thread identifies it.
    pub(super) static CURRENT_MEMO: RefCell<Option<Rc<SkuMemo>>> = const { RefCell::new(None) };
}

/// Installs an evaluation's memo for its duration and restores the previous one.
pub(super) struct CurrentMemo(Option<Rc<SkuMemo>>);

impl CurrentMemo {
    pub(super) fn set(memo: Rc<SkuMemo>) -> Self {
        CurrentMemo(CURRENT_MEMO.with(|c| c.replace(Some(memo))))
    }
}

impl Drop for CurrentMemo {
    fn drop(&mut self) {
        CURRENT_MEMO.with(|c| *c.borrow_mut() = self.0.take());
    }
}

/// Fields of the map `sku(name)` returns.
pub const SKU_FIELDS: &[&str] = &[
    "known",
    "name",
    "wellFormed",
    "gpuFamily",
    "series",
    "vendor",
    "gpuModel",
    "architecture",
    "computeCapability",
    "gpuCount",
    "infiniband",
    "rdma",
    "isolated",
    "status",
    "retired",
    "retirementDate",
    "retirementAnnounced",
    "migCapable",
    "requiresApproval",
    "aksSupported",
    "kaitoSupported",
    "onlineEndpoint",
    "firstCuda",
    "lastCuda",
    "sources",
    "nonInfinibandAlternative",
    "replacement",
];
/// Fields of the map `region(name)` returns.
pub const REGION_FIELDS: &[&str] = &[
    "known",
    "name",
    "displayName",
    "geography",
    "area",
    "country",
    "eu",
    "eea",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::Input;
    use crate::eval::tests::{pack, rule};
    use crate::model::Source;
    use serde_json::json;

    /// A retired size's suggested successor has at least its GPUs and GPU memory (the
    /// embedding contract's overlay that retires an A100 80 GB size was offered a third
    /// of an A10 before).
    #[test]
    fn a_replacement_has_at_least_the_gpu_memory_it_replaces() {
        for name in catalog::skus().iter().map(|(k, _)| *k) {
            let Some(f) = catalog::sku(name) else {
                continue;
            };
            let view = sku_view(name, "2031-01-01");
            let Some(r) = view.replacement else { continue };
            let c = catalog::sku(r).expect("a catalog size");
            if let Some(need) = f.gpu_memory_gib {
                let has = c.gpu_memory_gib.expect("known memory");
                assert!(has >= need, "{name} ({need} GiB) -> {r} ({has} GiB)");
            }
            assert!(c.gpu_count >= f.gpu_count, "{name} -> {r}");
        }
        let a100 = catalog::sku("Standard_NC24ads_A100_v4").expect("A100");
        assert_eq!(a100.gpu_memory_gib, Some(80.0));
    }

    #[test]
    fn cached_sku_answers_equal_the_view_at_every_date() {
        let names = catalog::skus().iter().map(|(k, _)| k.to_string()).chain([
            "Standard_NC6".into(),
            "nc6".into(),
            "Standard_Nope9".into(),
            String::new(),
        ]);
        for name in names {
            for as_of in ["2020-01-01", "2023-09-06", "2026-11-22", "2031-01-01"] {
                // Twice: the first call may build the cached answer, the second reads it.
                for _ in 0..2 {
                    assert_eq!(
                        sku_answer(&name, as_of),
                        to_cel(&sku_view(&name, as_of)),
                        "{name} at {as_of}"
                    );
                }
            }
        }
    }

    #[test]
    fn sku_answers_at_each_evaluations_own_date_across_threads() {
        // One evaluator (one function table) shared by threads evaluating at different
        // dates: `sku()` must answer at the date of the evaluation that calls it.
        let e = pack(vec![rule(
            "retired",
            None,
            "!sku('Standard_NC6').retired && !sku(resource.sku).retired",
            None,
        )]);
        let doc = json!({"type": "amlcompute", "name": "old", "size": "Standard_NC6", "min_instances": 0});
        let at = |as_of: &str| {
            e.evaluate(&Input {
                document: &doc,
                source: Source::Unknown,
                settings: &json!({}),
                as_of,
            })
            .expect("evaluates")
            .violations
            .len()
        };
        std::thread::scope(|s| {
            let threads: Vec<_> = (0..4)
                .map(|i| {
                    let at = &at;
                    s.spawn(move || {
                        // NC6 retired on 2023-09-06.
                        let (date, expected) = if i % 2 == 0 {
                            ("2023-01-01", 0)
                        } else {
                            ("2026-11-22", 1)
                        };
                        (0..50).all(|_| at(date) == expected)
                    })
                })
                .collect();
            for t in threads {
                assert!(t.join().expect("no panic"));
            }
        });
    }
}
