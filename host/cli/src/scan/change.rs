//! What a whole change holds besides compute, for the rules about AKS pools that look
//! across files (`gpu-driver-ownership`, `mig-autoscale`): `check` reads every file it
//! checks once more, natively, collects what installs a GPU driver and which workloads
//! request MIG slices with the same code the policy uses for one document
//! (`computeguard_policy_core::eval::change`), and gives them to the built-in policy as
//! `settings.change` with `complete: true`.

use super::{Input, Scan};
use computeguard_policy_core::eval::change::{ChangeFacts, change_facts};
use computeguard_policy_core::read;

impl Scan<'_> {
    /// The facts of every document of `inputs` that decodes (the others are reported by
    /// the evaluation itself), each Kubernetes `List` item and export row on its own.
    pub fn change_facts(&self, inputs: &[Input]) -> ChangeFacts {
        let mut facts = ChangeFacts::default();
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
                match read::parts(&doc.value) {
                    Some(parts) => {
                        for (_, p) in parts {
                            facts.extend(change_facts(&p, &read::normalize(&p, source)));
                        }
                    }
                    None => facts.extend(change_facts(
                        &doc.value,
                        &read::normalize(&doc.value, source),
                    )),
                }
            }
        }
        facts
    }
}

/// Gives the built-in policies `settings.change`: `facts`, as those of the whole change.
pub fn give_to_builtin(loaded: &mut [crate::policies::Loaded], facts: &ChangeFacts) {
    for l in loaded.iter_mut().filter(|l| l.builtin) {
        let mut settings = l.settings.clone();
        match settings.as_object_mut() {
            Some(object) => {
                object.insert("change".into(), facts.to_settings(true));
            }
            None => settings = serde_json::json!({ "change": facts.to_settings(true) }),
        }
        l.settings_text = settings.to_string();
        l.settings = settings;
    }
}
