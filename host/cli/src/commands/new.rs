//! `computeguard new pack NAME`: scaffolds a rule pack with one rule and its tests.

use crate::Outcome;
use anyhow::{Context as _, bail};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct NewArgs {
    #[command(subcommand)]
    pub what: NewWhat,
}

#[derive(clap::Subcommand, Debug)]
pub enum NewWhat {
    /// A rule pack `NAME.yaml` with one rule and two test cases.
    Pack {
        /// Pack name, kebab-case (e.g. `org-rules`).
        name: String,
        /// Directory to write into.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
}

pub fn run(args: NewArgs) -> anyhow::Result<Outcome> {
    let NewWhat::Pack { name, dir } = args.what;
    let kebab = !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !kebab {
        bail!("pack name `{name}` must be kebab-case (a-z, 0-9, -), e.g. `org-rules`");
    }
    let path = dir.join(format!("{name}.yaml"));
    if path.exists() {
        bail!("`{}` already exists; not overwriting it", path.display());
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    std::fs::write(&path, template(&name))
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    println!("created {}", path.display());
    println!(
        "next: computeguard test {0}   then   computeguard build {0}",
        path.display()
    );
    Ok(Outcome::Clean)
}

fn template(name: &str) -> String {
    format!(
        r#"# A computeguard rule pack. Reference: docs/writing-policies.md
apiVersion: computeguard.io/v1
kind: RulePack
metadata:
  name: {name}
  version: 0.1.0
rules:
  - id: gpu-owner-tag
    severity: warning
    targets: [aml-compute-cluster, aks-node-pool, k8s-workload]
    description: Every GPU resource names an owning team.
    rationale: Cost reports group GPU spend by the `owner` tag or label (internal FinOps policy).
    remediation: Add an `owner` tag (Azure) or label (Kubernetes) naming the team.
    # CEL: `resource` is the compute model (docs/compute-model.md); `sku()` reads the catalog.
    when: resource.sku != null && sku(resource.sku).gpuCount > 0
    assert: "'owner' in resource.labels"
    messageExpression: "resource.display + ' runs on ' + resource.sku + ' without an owner tag'"
    field: sku
tests:
  - name: untagged GPU cluster is reported
    document:
      type: amlcompute
      name: gpu-cluster
      size: Standard_NC24ads_A100_v4
    expect: [gpu-owner-tag]
  - name: tagged GPU cluster is fine
    document:
      type: amlcompute
      name: gpu-cluster
      size: Standard_NC24ads_A100_v4
      tags: {{owner: ml-platform}}
    expect: []
"#
    )
}
