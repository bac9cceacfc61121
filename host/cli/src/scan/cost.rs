//! What the change costs (issue 33): the compute model of every file, read natively as
//! `check` reads it (Terraform modules through their calls, Bicep modules and parameter
//! files applied), priced by `computeguard-cost` from the pages `azure.prices` names.
//! Nothing here reaches a policy: prices never enter an evaluation.

use super::{Input, Scan, called_modules, terraform, terraform_folder};
use computeguard_cost::{Estimate, PriceSheet, Subject};
use computeguard_policy_core::compute::Resource;
use computeguard_policy_core::read;

/// A resource of the change, with its file and line.
pub struct Declared {
    pub file: String,
    pub line: u32,
    pub resource: Resource,
}

impl Scan<'_> {
    /// Every compute-model resource the inputs declare, once each (a called Terraform or
    /// Bicep module's resources in their caller).
    pub fn declared(&self, inputs: &[Input]) -> Vec<Declared> {
        let called = called_modules(inputs);
        let expander = self.expander(inputs);
        let mut out = Vec::new();
        for input in inputs {
            let is_module = matches!(
                terraform::kind(&input.path),
                Some(terraform::Kind::Hcl | terraform::Kind::Json)
            ) && std::fs::canonicalize(terraform_folder(&input.path))
                .ok()
                .is_some_and(|dir| called.contains_key(&dir));
            if is_module {
                continue;
            }
            let Ok(text) = self.read(input) else {
                continue;
            };
            let Ok((docs, source)) = expander.decode_named(input, &text) else {
                continue;
            };
            for (name, doc) in &docs {
                let parts = read::parts(&doc.value).unwrap_or_else(|| {
                    vec![(String::new(), std::borrow::Cow::Borrowed(&doc.value))]
                });
                for (prefix, value) in &parts {
                    for r in read::normalize(value, source) {
                        let line = doc
                            .positions
                            .locate(&format!("{prefix}{}", r.pointer))
                            .map_or(1, |s| s.line);
                        out.push(Declared {
                            file: name.clone(),
                            line,
                            resource: r,
                        });
                    }
                }
            }
        }
        out
    }

    /// What the inputs cost with the prices of `sheet`.
    pub fn estimate(&self, inputs: &[Input], sheet: &PriceSheet) -> Estimate {
        estimate_of(
            &self.declared(inputs),
            sheet,
            self.config.context.workspace_region.as_deref(),
        )
    }
}

/// The estimate of `declared`: Azure ML resources without a region in the workspace's
/// (`workspace_region`), KAITO workspaces in the region of the change's AKS cluster when
/// the change declares clusters in one region only.
pub fn estimate_of(
    declared: &[Declared],
    sheet: &PriceSheet,
    workspace_region: Option<&str>,
) -> Estimate {
    let mut clusters: Vec<&str> = declared
        .iter()
        .filter(|d| d.resource.kind == "aks-cluster" || d.resource.kind == "aks-node-pool")
        .filter_map(|d| {
            d.resource
                .region
                .as_deref()
                .or(d.resource.parent_region.as_deref())
        })
        .collect();
    clusters.sort_unstable();
    clusters.dedup();
    let cluster_region = match clusters.as_slice() {
        [one] => Some(*one),
        _ => None,
    };
    let subjects: Vec<Subject<'_>> = declared
        .iter()
        .map(|d| Subject {
            file: &d.file,
            line: d.line,
            resource: &d.resource,
            workspace_region,
            cluster_region,
        })
        .collect();
    Estimate::of(&subjects, sheet)
}
