//! The Azure ML workspace region a change states: an Azure ML deployment or job file names
//! no region (it runs in its workspace's), so `check` looks for the workspace among the
//! files it is given (an `az ml` workspace YAML, an ARM/Bicep template, an ASO object) and
//! gives its region to the policies as `azure.workspaceRegion`, as if the configuration
//! named it.

use super::{Input, Scan};
use computeguard_policy_core::read;
use std::collections::BTreeSet;

impl Scan<'_> {
    /// The regions of the Azure ML workspaces `inputs` declare with a region known before
    /// deployment (programmatic names).
    pub fn workspace_regions(&self, inputs: &[Input]) -> BTreeSet<String> {
        let mut regions = BTreeSet::new();
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
                let resources = match read::parts(&doc.value) {
                    Some(parts) => parts
                        .iter()
                        .flat_map(|(_, p)| read::normalize(p, source))
                        .collect(),
                    None => read::normalize(&doc.value, source),
                };
                regions.extend(
                    resources
                        .into_iter()
                        .filter(|r| r.kind == "aml-workspace")
                        .filter_map(|r| r.region),
                );
            }
        }
        regions
    }
}
