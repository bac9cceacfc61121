//! The CEL functions registered for rules: `sku`, `region`, `inGeography`, `cudaOf`,
//! `versionAtLeast`, `cudaSupported`, `skuOffer` and `quota` (documented for users in
//! `docs/compute-model.md`), and the two internal functions the evaluator's rewrites
//! call (`@iterable`, `@unsupported`). The table is built once per evaluator.

use super::type_name;
use crate::catalog;
use crate::cel_value::to_cel;
use crate::eval::azure;
use crate::eval::views::{CURRENT_MEMO, region_view};
use crate::{cuda, region, version};
use cel_interpreter::{Context, Value as Cel};
use std::sync::Arc;

/// Internal function wrapped around every macro's range (see
/// [`guard_panics`](super::guard_panics)); the `@` keeps it out of reach of CEL source.
pub(super) const ITERABLE: &str = "@iterable";
/// Internal function standing for an expression the interpreter cannot evaluate.
pub(super) const UNSUPPORTED: &str = "@unsupported";

fn text_arg(v: &Cel) -> Option<&str> {
    match v {
        Cel::String(s) => Some(s.as_str()),
        _ => None,
    }
}

fn opt(v: Option<String>) -> Cel {
    v.map_or(Cel::Null, |s| Cel::String(Arc::new(s)))
}

/// CEL's standard functions plus computeguard's.
pub(super) fn functions() -> Context<'static> {
    type R = Result<Cel, cel_interpreter::ExecutionError>;
    let mut ctx = Context::default();
    ctx.add_function("sku", |v: Cel| -> R {
        let name = text_arg(&v).unwrap_or("");
        match CURRENT_MEMO.with(|c| c.borrow().clone()) {
            Some(memo) => Ok(memo.get(name)),
            None => Err(cel_interpreter::ExecutionError::function_error(
                "sku",
                "called outside an evaluation",
            )),
        }
    });
    ctx.add_function(ITERABLE, |v: Cel| -> R {
        match v {
            Cel::List(_) | Cel::Map(_) => Ok(v),
            other => Err(cel_interpreter::ExecutionError::function_error(
                "macro",
                format!(
                    "`all`, `exists`, `exists_one`, `map` and `filter` need a list or a map, got {}",
                    type_name(&other)
                ),
            )),
        }
    });
    ctx.add_function(UNSUPPORTED, |v: Cel| -> R {
        Err(cel_interpreter::ExecutionError::function_error(
            "unsupported",
            format!("{} cannot be evaluated", text_arg(&v).unwrap_or("this")),
        ))
    });
    ctx.add_function("region", |v: Cel| -> R {
        Ok(MapFunction::Region.call(&[v]))
    });
    ctx.add_function("inGeography", |r: Cel, g: Cel| -> R {
        Ok(in_geography(text_arg(&r), text_arg(&g)).map_or(Cel::Null, Cel::Bool))
    });
    ctx.add_function("cudaOf", |v: Cel| -> R {
        Ok(opt(text_arg(&v).and_then(cuda::cuda_of_image)))
    });
    ctx.add_function("versionAtLeast", |a: Cel, b: Cel| -> R {
        Ok(version_at_least(text_arg(&a), text_arg(&b)).map_or(Cel::Null, Cel::Bool))
    });
    ctx.add_function("skuOffer", |s: Cel, r: Cel, z: Cel| -> R {
        Ok(MapFunction::SkuOffer.call(&[s, r, z]))
    });
    ctx.add_function("quota", |s: Cel, r: Cel| -> R {
        Ok(MapFunction::Quota.call(&[s, r]))
    });
    ctx.add_function("aksPoolSize", |s: Cel, r: Cel, m: Cel| -> R {
        Ok(MapFunction::AksPoolSize.call(&[s, r, m]))
    });
    ctx.add_function("migOs", |o: Cel, t: Cel| -> R {
        Ok(MapFunction::MigOs.call(&[o, t]))
    });
    ctx.add_function("kaitoFit", |p: Cel, s: Cel, n: Cel, m: Cel| -> R {
        Ok(MapFunction::KaitoFit.call(&[p, s, n, m]))
    });
    ctx.add_function("cudaSupported", |s: Cel, c: Cel| -> R {
        Ok(cuda_supported(text_arg(&s), text_arg(&c)).map_or(Cel::Null, Cel::Bool))
    });
    ctx
}

/// computeguard's functions that answer a map (or null), shared with the typed programs
/// (`typed.rs`), which call them with the same arguments.
#[derive(Clone, Copy, Debug)]
pub(super) enum MapFunction {
    Region,
    SkuOffer,
    Quota,
    AksPoolSize,
    MigOs,
    KaitoFit,
}

impl MapFunction {
    /// The function called `name` taking `arity` arguments.
    pub(super) fn named(name: &str, arity: usize) -> Option<Self> {
        let f = match name {
            "region" => MapFunction::Region,
            "skuOffer" => MapFunction::SkuOffer,
            "quota" => MapFunction::Quota,
            "aksPoolSize" => MapFunction::AksPoolSize,
            "migOs" => MapFunction::MigOs,
            "kaitoFit" => MapFunction::KaitoFit,
            _ => return None,
        };
        (f.arity() == arity).then_some(f)
    }

    fn arity(self) -> usize {
        match self {
            MapFunction::Region => 1,
            MapFunction::Quota | MapFunction::MigOs => 2,
            MapFunction::SkuOffer | MapFunction::AksPoolSize => 3,
            MapFunction::KaitoFit => 4,
        }
    }

    /// The answer for `args` (as many as [`MapFunction::named`] was given).
    pub(super) fn call(self, args: &[Cel]) -> Cel {
        let arg = |i: usize| args.get(i).unwrap_or(&Cel::Null);
        match self {
            MapFunction::Region => to_cel(&region_view(text_arg(arg(0)).unwrap_or(""))),
            MapFunction::SkuOffer => azure::sku_offer(arg(0), arg(1), arg(2)),
            MapFunction::Quota => azure::quota(arg(0), arg(1)),
            MapFunction::AksPoolSize => super::aks::pool_size(arg(0), arg(1), arg(2)),
            MapFunction::MigOs => super::aks::mig_os(arg(0), arg(1)),
            MapFunction::KaitoFit => {
                let count = match arg(2) {
                    Cel::Int(i) => *i,
                    Cel::UInt(u) => i64::try_from(*u).unwrap_or(i64::MAX),
                    _ => 1,
                };
                match (text_arg(arg(0)), text_arg(arg(1))) {
                    (Some(p), Some(s)) => fit_view(catalog::kaito::fit(
                        p,
                        s,
                        count,
                        text_arg(arg(3)).unwrap_or("inference"),
                    )),
                    _ => Cel::Null,
                }
            }
        }
    }
}

// The functions of strings that answer a bool or null, shared with the typed programs
// (`typed.rs`): an argument that is not a string is `None`, and the answer `None` is
// CEL's `null`.

/// `inGeography(region, geography)`.
pub(super) fn in_geography(region: Option<&str>, geography: Option<&str>) -> Option<bool> {
    region::in_group(region?, geography?)
}

/// `versionAtLeast(version, minimum)`.
pub(super) fn version_at_least(version: Option<&str>, minimum: Option<&str>) -> Option<bool> {
    version::at_least(version?, minimum?)
}

/// `cudaSupported(sku, cuda)`.
pub(super) fn cuda_supported(sku: Option<&str>, cuda: Option<&str>) -> Option<bool> {
    let cc = catalog::sku(sku?)?.compute_capability?;
    catalog::cuda_supported(cc, cuda?)
}

/// What `kaitoFit()` returns, field by field ([`KAITO_FIT_FIELDS`]): built directly rather
/// than through the serializer, which would add its code for one more type to the component.
fn fit_view(f: catalog::kaito::Fit) -> Cel {
    use crate::cel_value::{key, map};
    let int = |v: Option<i64>| v.map_or(Cel::Null, Cel::Int);
    let values = [
        Cel::String(Arc::new(f.answer.to_string())),
        Cel::String(Arc::new(f.reason)),
        Cel::String(Arc::new(f.kaito_version)),
        int(f.required_gpus),
        int(f.provided_gpus),
        opt(f.required_memory),
        opt(f.provided_memory),
        Cel::Bool(f.instance_type_listed),
    ];
    map(KAITO_FIT_FIELDS.iter().map(|k| key(k)).zip(values))
}

/// Names of the functions CEL rules can use besides CEL's standard ones (for
/// build-time checks).
pub const FUNCTIONS: &[&str] = &[
    "sku",
    "region",
    "inGeography",
    "cudaOf",
    "cudaSupported",
    "versionAtLeast",
    "skuOffer",
    "quota",
    "aksPoolSize",
    "migOs",
    "kaitoFit",
];

/// Fields of the map `kaitoFit(preset, instanceType, count, mode)` returns
/// ([`catalog::kaito::Fit`]).
pub const KAITO_FIT_FIELDS: &[&str] = &[
    "answer",
    "reason",
    "kaitoVersion",
    "requiredGpus",
    "providedGpus",
    "requiredMemory",
    "providedMemory",
    "instanceTypeListed",
];

#[cfg(test)]
mod tests {
    use crate::eval::tests::{cluster, pack, rule, run};

    #[test]
    fn domain_functions_answer_from_the_catalog() {
        let e = pack(vec![rule(
            "f",
            None,
            "!(sku('standard_nd96isr_h100_v5').infiniband && region('East US 2').name == 'eastus2' \
              && cudaOf('nvidia/cuda:12.4.1-runtime-ubuntu22.04') == '12.4.1' \
              && versionAtLeast('12.4', '12.1') && cudaSupported('Standard_NC6', '12.1') == false \
              && sku('Standard_NC6s_v3').retired && sku('Standard_ND96isr_H100_v5').nonInfinibandAlternative == 'Standard_NC40ads_H100_v5')",
            None,
        )]);
        assert_eq!(run(&e, &cluster(2)).expect("ok").violations.len(), 1);
    }
}
