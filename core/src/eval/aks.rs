//! What `aksPoolSize(sku, region, mode)` and `migOs(osSku, osType)` hand to CEL: the AKS
//! facts of `policies/catalog/aks.yaml` ([`catalog::aks`]) applied to one pool, with the
//! size's vCPUs and memory from the catalog, else from the SKU lists of the context, and
//! the subscription's restriction of the size in the region from those lists.
//!
//! `aksPoolSize` returns `{evaluated, answer, reason, sources}`: `answer` is `allowed`,
//! `refused`, `discouraged` or `unknown`; `evaluated` is false only when the answer would
//! be `unknown` because nothing says the size's vCPUs and memory and no SKU list was given
//! (the rule is then not evaluated, as `sku-available-in-region` without SKU lists).
//! `migOs` returns `{answer, reason, sources}`.

use crate::azure::OfferAnswer;
use crate::catalog::{self, aks::Verdict};
use crate::cel_value::{key, map, text};
use crate::context;
use cel_interpreter::Value as Cel;

/// Fields of the map `aksPoolSize(sku, region, mode)` returns.
pub const AKS_POOL_SIZE_FIELDS: &[&str] = &["evaluated", "answer", "reason", "sources"];
/// Fields of the map `migOs(osSku, osType)` returns.
pub const MIG_OS_FIELDS: &[&str] = &["answer", "reason", "sources"];

fn arg(v: &Cel) -> Option<&str> {
    match v {
        Cel::String(s) => Some(s.as_str()),
        _ => None,
    }
}

fn answer(evaluated: Option<bool>, v: &Verdict) -> Cel {
    let (a, reason, sources): (&str, Option<&str>, &[String]) = match v {
        Verdict::Allowed => ("allowed", None, &[]),
        Verdict::Refused(r, s) => ("refused", Some(r), s),
        Verdict::Discouraged(r, s) => ("discouraged", Some(r), s),
        Verdict::Unknown(r) => ("unknown", Some(r), &[]),
    };
    let mut fields = vec![
        (key("answer"), text(a)),
        (key("reason"), reason.map_or(Cel::Null, text)),
        (key("sources"), text(&sources.join(", "))),
    ];
    if let Some(e) = evaluated {
        fields.push((key("evaluated"), Cel::Bool(e)));
    }
    map(fields.into_iter())
}

/// `aksPoolSize(sku, region, mode)`.
pub(super) fn pool_size(sku: &Cel, region: &Cel, mode: &Cel) -> Cel {
    let Some(sku) = arg(sku) else {
        return answer(Some(false), &Verdict::Unknown("no VM size".into()));
    };
    let availability = context::azure().and_then(|f| f.availability.as_ref());
    let offers = availability.map_or(&[][..], |a| a.sku(sku));
    let facts = catalog::sku(sku);
    let vcpus = facts
        .and_then(|f| f.vcpus)
        .or_else(|| offers.iter().find_map(|o| o.vcpus()));
    let memory = facts
        .and_then(|f| f.memory_gib)
        .or_else(|| offers.iter().find_map(|o| o.capability_f64("MemoryGB")));
    let verdict = catalog::aks::pool_size(sku, arg(mode), vcpus, memory);
    // The subscription's own restriction of the size in the region (az vm list-skus).
    let restricted = match (availability, arg(region)) {
        (Some(a), Some(r)) => match a.offer(sku, r, &[]) {
            OfferAnswer::Restricted { reason_code, .. } => Some(format!(
                "restricted for this subscription in {r} ({})",
                reason_code.as_deref().unwrap_or("no reason code")
            )),
            _ => None,
        },
        _ => None,
    };
    let verdict = match (verdict, restricted) {
        (Verdict::Refused(why, s), _) => Verdict::Refused(why, s),
        (_, Some(why)) => Verdict::Refused(why, vec!["az vm list-skus".into()]),
        (v, None) => v,
    };
    // Unknown only because nothing says the size's vCPUs and memory, and no SKU list
    // could: not evaluated, like the other rules that need the SKU lists.
    let unjudged = availability.is_none()
        && (vcpus.is_none() || memory.is_none())
        && matches!(&verdict, Verdict::Unknown(r) if r.contains("are not known"));
    answer(Some(!unjudged), &verdict)
}

/// `migOs(osSku, osType)`.
pub(super) fn mig_os(os_sku: &Cel, os_type: &Cel) -> Cel {
    answer(None, &catalog::aks::mig_os(arg(os_sku), arg(os_type)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn s(t: &str) -> Cel {
        Cel::String(Arc::new(t.to_string()))
    }

    fn field(v: &Cel, f: &str) -> Cel {
        match v {
            Cel::Map(m) => m.map.get(&key(f)).cloned().unwrap_or(Cel::Null),
            _ => Cel::Null,
        }
    }

    #[test]
    fn without_a_sku_list_an_unknown_size_is_not_evaluated() {
        let v = pool_size(&s("Standard_E4s_v3"), &s("eastus"), &s("user"));
        assert_eq!(field(&v, "answer"), s("unknown"));
        assert_eq!(field(&v, "evaluated"), Cel::Bool(false));
        // Name-based facts need no data.
        let v = pool_size(&s("Standard_B2s"), &s("eastus"), &s("system"));
        assert_eq!(field(&v, "answer"), s("refused"));
        assert_eq!(field(&v, "evaluated"), Cel::Bool(true));
        // A GPU size the catalog knows: judged.
        let v = pool_size(&s("Standard_NC4as_T4_v3"), &s("eastus"), &s("system"));
        assert_eq!(field(&v, "answer"), s("allowed"));
    }
}
