//! What a whole change declares of each quota counter: `check` reads every file it checks
//! once more, natively, before evaluating, sums what its resources need per region and
//! quota counter with the same code the policy uses for one document
//! (`computeguard_policy_core::eval::declared`), and gives the totals to the built-in
//! policy (`settings.quota.declaredInRun`), so that `quota-sufficient` judges two pools
//! added in two files together.

use super::{Input, Scan};
use computeguard_policy_core::read;
use std::collections::BTreeMap;

/// vCPUs per region and usage id (`cores`, `lowPriorityCores`, a family key).
pub type Totals = BTreeMap<String, BTreeMap<String, u64>>;

impl Scan<'_> {
    /// The sums over every document of `inputs` that decodes (the others are reported by
    /// the evaluation itself), with the `--var-file` values `check` applies. Needs the
    /// context installed in this process.
    pub fn declared_quota(&self, inputs: &[Input]) -> Totals {
        let mut totals = Totals::new();
        // Bicep and ARM templates with their parameter files and modules, as check sees them.
        let expander = self.expander(inputs);
        for input in inputs {
            let Ok(text) = self.read(input) else {
                continue;
            };
            let Ok((docs, source)) = expander.decode(input, &text) else {
                continue;
            };
            for doc in docs {
                let mut resources: Vec<_> = match read::parts(&doc.value) {
                    Some(parts) => parts
                        .iter()
                        .flat_map(|(_, p)| read::normalize(p, source))
                        .collect(),
                    None => read::normalize(&doc.value, source),
                };
                // As the policy sees them: Azure ML deployments in their workspace's region.
                computeguard_policy_core::context::fill_workspace_region(&mut resources);
                for (region, counters) in computeguard_policy_core::eval::declared(&resources) {
                    let into = totals.entry(region).or_default();
                    for (id, vcpus) in counters {
                        let n = into.entry(id).or_default();
                        *n = n.saturating_add(vcpus);
                    }
                }
            }
        }
        totals
    }
}
