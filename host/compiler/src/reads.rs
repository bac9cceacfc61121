//! What a pack's expressions read: whether a host may answer several objects that differ
//! only in their name from one evaluation (the webhook's template cache,
//! docs/architecture.md).

use computeguard_policy_core::ast::Expr;
use computeguard_policy_core::pack::Pack;

/// Fields of `resource` that carry the object's name.
const NAME_FIELDS: [&str; 2] = ["name", "display"];

/// True when every rule of `pack` decides without the object's name or its raw document:
///
/// - no expression reads `object` (the raw document, with fields such as `metadata.uid`
///   that differ between otherwise identical objects);
/// - `when`, `assert` and `severityExpression` read `resource` only through fields other
///   than `name` and `display`, and never hand `resource` whole to a function.
///
/// Messages may show the name. Two objects that differ only in `metadata.name` then get
/// the same findings, with the name where the messages show it. Anything the check cannot
/// see through counts as reading the name: a `false` is always safe.
pub fn name_blind(pack: &Pack) -> bool {
    name_reading_targets(pack).is_empty()
}

/// The targets (compute-model kinds) of the rules that may decide by the object's name or
/// read its raw document, sorted and without repeats; `*` when such a rule has no
/// targets (it runs on every kind). A rule runs only on resources of its targets, so an
/// object none of whose resources is of these kinds is decided without its name: the
/// webhook answers it by template (`LoadedPolicy::name_blind_for`). Empty: the whole
/// pack is [`name_blind`].
pub fn name_reading_targets(pack: &Pack) -> Vec<String> {
    let mut kinds: Vec<String> = pack
        .rules
        .iter()
        .filter(|rule| {
            let decides = rule
                .when
                .iter()
                .chain(std::iter::once(&rule.assert))
                .chain(rule.severity_expression.iter());
            let shows = rule.message_expression.iter();
            !(decides.into_iter().all(|e| blind(e, false))
                && shows.into_iter().all(|e| blind(e, true)))
        })
        .flat_map(|rule| {
            if rule.meta.targets.is_empty() {
                vec!["*".to_string()]
            } else {
                rule.meta.targets.clone()
            }
        })
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Whether `e` avoids `object`, and (unless `names_allowed`) the name fields of `resource`.
fn blind(e: &Expr, names_allowed: bool) -> bool {
    match e {
        Expr::Ident(name) => name != "object" && (names_allowed || name != "resource"),
        Expr::Select { operand, field, .. } => match operand.as_ref() {
            Expr::Ident(root) if root == "resource" => {
                names_allowed || !NAME_FIELDS.contains(&field.as_str())
            }
            other => blind(other, names_allowed),
        },
        Expr::Call { target, args, .. } => {
            target.iter().all(|t| blind(t, names_allowed))
                && args.iter().all(|a| blind(a, names_allowed))
        }
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .all(|x| blind(x, names_allowed)),
        Expr::List(items) => items.iter().all(|x| blind(x, names_allowed)),
        Expr::Map(entries) => entries
            .iter()
            .all(|(k, v, _)| blind(k, names_allowed) && blind(v, names_allowed)),
        Expr::Struct(_, fields) => fields.iter().all(|(_, v, _)| blind(v, names_allowed)),
        Expr::Literal(_) => true,
        Expr::Unspecified => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn pack(when: &str, assert: &str, message: &str) -> Pack {
        let text = format!(
            "apiVersion: computeguard.io/v1\nkind: RulePack\nmetadata: {{name: t, version: 0.1.0}}\nrules:\n  - id: r\n    severity: warning\n    targets: [k8s-workload]\n    description: d\n    rationale: r\n    remediation: r\n    when: {when:?}\n    assert: {assert:?}\n    messageExpression: {message:?}\n"
        );
        crate::compile("t.yaml", &text)
            .map_err(|d| format!("{d:?}"))
            .unwrap()
            .pack
    }

    /// Only `mig-autoscale` matches a pool by its name (the pool a MIG workload selects,
    /// across the change): every other kind, Pods included, is answered by template.
    #[test]
    fn the_builtin_pack_decides_without_names_except_for_aks_pools() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../policies/builtin.yaml"
        ))
        .unwrap();
        let compiled = crate::compile("builtin.yaml", &text).unwrap();
        assert_eq!(name_reading_targets(&compiled.pack), ["aks-node-pool"]);
        assert!(!name_blind(&compiled.pack));
    }

    #[test]
    fn a_rule_that_decides_by_name_names_its_targets_only() {
        let p = pack(
            "resource.sku != null",
            "resource.name != 'x'",
            "resource.display",
        );
        assert_eq!(name_reading_targets(&p), ["k8s-workload"]);
    }

    #[test]
    fn names_in_messages_only_are_blind() {
        assert!(name_blind(&pack(
            "resource.sku != null",
            "resource.gpuRequests < 2.0",
            "resource.display + ' asks for ' + string(resource.gpuRequests)"
        )));
    }

    #[test]
    fn deciding_on_a_name_or_the_object_is_not() {
        for (when, assert, message) in [
            ("resource.name.startsWith('gpu')", "true", "'m'"),
            ("true", "resource.display != 'x'", "'m'"),
            ("true", "size(resource.name) < 5", "'m'"),
            ("has(object.metadata)", "true", "'m'"),
            ("true", "true", "object.metadata.uid"),
            (
                "true",
                "[resource].exists(r, r.name == 'x')",
                "resource.display",
            ),
        ] {
            assert!(
                !name_blind(&pack(when, assert, message)),
                "{when} / {assert} / {message}"
            );
        }
    }
}
