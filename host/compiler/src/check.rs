//! Build-time checks of CEL expressions against the compute model: unknown
//! variables, unknown `resource` fields, unknown functions, unknown fields of
//! `sku()` / `region()` / `skuOffer()` / `quota()` results.

use computeguard_policy_core::ast::Expr;
use computeguard_policy_core::eval::{
    FUNCTIONS, KAITO_FIT_FIELDS, QUOTA_FIELDS, REGION_FIELDS, RESOURCE_FIELDS, SKU_FIELDS,
    SKU_OFFER_FIELDS, VARIABLES,
};

/// Compute-model kinds a rule may target: every kind of docs/compute-model.md's table
/// (a test keeps the two equal).
pub const KINDS: &[&str] = &[
    "aml-compute-cluster",
    "aml-compute-instance",
    "aml-online-deployment",
    "aml-batch-deployment",
    "aml-job",
    "k8s-workload",
    "kaito-workspace",
    "aks-cluster",
    "aml-workspace",
    "aml-kubernetes-compute",
    "aks-node-pool",
    "vm",
    "vm-scale-set",
];

/// Functions the CEL interpreter provides (standard library).
const CEL_FUNCTIONS: &[&str] = &[
    "contains",
    "size",
    "max",
    "min",
    "startsWith",
    "endsWith",
    "string",
    "bytes",
    "double",
    "int",
    "uint",
    "matches",
    "duration",
    "timestamp",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "has",
    "all",
    "exists",
    "exists_one",
    "map",
    "filter",
];

/// A problem found in an expression.
pub struct Problem {
    pub message: String,
    pub help: Option<String>,
    /// Text to point the caret at within the expression.
    pub needle: Option<String>,
}

/// The option closest to `name` (case-insensitive edit distance of at most 3).
pub(crate) fn closest<'a>(name: &str, options: &[&'a str]) -> Option<&'a str> {
    options
        .iter()
        .copied()
        .min_by_key(|o| distance(o, name))
        .filter(|o| distance(o, name) <= 3)
}

fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push(
                (prev[j] + usize::from(ca != *cb))
                    .min(prev[j + 1] + 1)
                    .min(cur[j] + 1),
            );
        }
        prev = cur;
    }
    prev[b.len()]
}

fn unknown(what: &str, name: &str, options: &[&str]) -> Problem {
    Problem {
        message: format!("unknown {what} `{name}`"),
        help: Some(match closest(name, options) {
            Some(c) => format!("did you mean `{c}`?"),
            None => format!("expected one of: {}", options.join(", ")),
        }),
        needle: Some(name.to_string()),
    }
}

/// Checks one expression; an empty list means it is fine.
pub fn check(e: &Expr) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut bound = Vec::new();
    walk(e, &mut bound, &mut problems);
    problems
}

fn walk(e: &Expr, bound: &mut Vec<String>, out: &mut Vec<Problem>) {
    match e {
        Expr::Ident(name) => {
            if !VARIABLES.contains(&name.as_str()) && !bound.contains(name) {
                out.push(unknown("variable", name, VARIABLES));
            }
        }
        Expr::Select { operand, field, .. } => {
            match operand.as_ref() {
                Expr::Ident(root)
                    if root == "resource"
                        && !bound.contains(root)
                        && !RESOURCE_FIELDS.contains(&field.as_str()) =>
                {
                    out.push(unknown(
                        "compute-model field",
                        &format!("resource.{field}"),
                        &RESOURCE_FIELDS
                            .iter()
                            .map(|f| f.to_string())
                            .collect::<Vec<_>>()
                            .iter()
                            .map(String::as_str)
                            .collect::<Vec<_>>(),
                    ));
                    if let Some(p) = out.last_mut() {
                        p.needle = Some(field.clone());
                        p.help = closest(field, RESOURCE_FIELDS)
                            .map(|c| format!("did you mean `resource.{c}`?"))
                            .or_else(|| Some(format!("fields: {}", RESOURCE_FIELDS.join(", "))));
                    }
                }
                Expr::Call { func, .. }
                    if func == "sku" && !SKU_FIELDS.contains(&field.as_str()) =>
                {
                    out.push(unknown("field of sku()", field, SKU_FIELDS));
                }
                Expr::Call { func, .. }
                    if func == "region" && !REGION_FIELDS.contains(&field.as_str()) =>
                {
                    out.push(unknown("field of region()", field, REGION_FIELDS));
                }
                Expr::Call { func, .. }
                    if func == "skuOffer" && !SKU_OFFER_FIELDS.contains(&field.as_str()) =>
                {
                    out.push(unknown("field of skuOffer()", field, SKU_OFFER_FIELDS));
                }
                Expr::Call { func, .. }
                    if func == "quota" && !QUOTA_FIELDS.contains(&field.as_str()) =>
                {
                    out.push(unknown("field of quota()", field, QUOTA_FIELDS));
                }
                Expr::Call { func, .. }
                    if func == "kaitoFit" && !KAITO_FIT_FIELDS.contains(&field.as_str()) =>
                {
                    out.push(unknown("field of kaitoFit()", field, KAITO_FIT_FIELDS));
                }
                _ => {}
            }
            walk(operand, bound, out);
        }
        Expr::Call { func, target, args } => {
            let operator = func.starts_with('_')
                || func.starts_with('!')
                || func.starts_with('@')
                || func == "-_";
            if !operator
                && !FUNCTIONS.contains(&func.as_str())
                && !CEL_FUNCTIONS.contains(&func.as_str())
            {
                let all: Vec<&str> = FUNCTIONS.iter().chain(CEL_FUNCTIONS).copied().collect();
                out.push(unknown("function", func, &all));
            }
            if let Some(t) = target {
                walk(t, bound, out);
            }
            for a in args {
                walk(a, bound, out);
            }
        }
        Expr::Comprehension(c) => {
            walk(&c.iter_range, bound, out);
            let before = bound.len();
            bound.push(c.iter_var.clone());
            bound.extend(c.iter_var2.clone());
            bound.push(c.accu_var.clone());
            for x in [&c.accu_init, &c.loop_cond, &c.loop_step, &c.result] {
                walk(x, bound, out);
            }
            bound.truncate(before);
        }
        Expr::List(l) => l.iter().for_each(|x| walk(x, bound, out)),
        Expr::Map(m) => m.iter().for_each(|(k, v, _)| {
            walk(k, bound, out);
            walk(v, bound, out);
        }),
        Expr::Struct(_, f) => f.iter().for_each(|(_, v, _)| walk(v, bound, out)),
        Expr::Literal(_) | Expr::Unspecified => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use computeguard_policy_core::ast::parse;

    fn problems(src: &str) -> Vec<String> {
        check(&parse(src).expect("parses"))
            .into_iter()
            .map(|p| p.message)
            .collect()
    }

    #[test]
    fn every_documented_kind_may_be_targeted() {
        // The "Resources and kinds" table of docs/compute-model.md, first column.
        let doc = include_str!("../../../docs/compute-model.md");
        let table = doc
            .split("| Kind (`resource.kind`) | Produced from |")
            .nth(1)
            .expect("kinds table");
        let documented: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.split('`').nth(1))
            .collect();
        assert!(documented.len() > 10, "{documented:?}");
        let mut kinds = KINDS.to_vec();
        kinds.sort_unstable();
        let mut documented = documented;
        documented.sort_unstable();
        assert_eq!(kinds, documented);
        // The `targets` paragraph of docs/writing-policies.md names each of them.
        let guide = include_str!("../../../docs/writing-policies.md");
        let targets = guide
            .split("**`targets`** (optional)")
            .nth(1)
            .and_then(|t| t.split("\n\n").next())
            .expect("targets paragraph");
        for k in KINDS {
            assert!(targets.contains(&format!("`{k}`")), "{k} in: {targets}");
        }
    }

    #[test]
    fn valid_expressions_pass() {
        assert!(problems("resource.minNodes > 0 && sku(resource.sku).infiniband").is_empty());
        assert!(problems("resource.images.exists(i, cudaOf(i) != null)").is_empty());
        // Documented in compute-model.md and bound by the runtime; the checker once
        // refused it as unknown.
        assert!(problems("resource.azureId != null").is_empty());
        assert!(
            problems("has(resource.labels.owner) && size(settings) >= 0 && asOf > ''").is_empty()
        );
    }

    #[test]
    fn unknown_names_are_reported() {
        assert_eq!(
            problems("resource.minNode > 0"),
            vec!["unknown compute-model field `resource.minNode`"]
        );
        assert_eq!(
            problems("skew(resource.sku)"),
            vec!["unknown function `skew`"]
        );
        assert_eq!(
            problems("sku(resource.sku).infiniBand"),
            vec!["unknown field of sku() `infiniBand`"]
        );
        assert_eq!(
            problems("resources.sku == ''"),
            vec!["unknown variable `resources`"]
        );
        assert_eq!(problems("[1].all(x, y > 0)"), vec!["unknown variable `y`"]);
    }
}
