//! `computeguard init`: writes a commented starter `computeguard.yaml`.

use crate::Outcome;
use anyhow::{Context as _, bail};
use std::path::PathBuf;

/// The starter configuration. Every key holds its default value, so the file changes
/// nothing until edited; each `# default for KEY:` line quotes the default documented
/// in `docs/configuration.md` (a test keeps the two equal).
pub const TEMPLATE: &str = r#"# computeguard configuration. Every key is optional and the values below are the
# defaults, so this file changes nothing until you edit it. Reference:
# docs/configuration.md in the computeguard repository.

# The evaluation date: rules that depend on time (VM size retirements) judge
# against it. Pin it in CI for reproducible results; `--as-of` overrides it.
# default for asOf: today (UTC)
# asOf: 2026-11-22

regions:
  # Regions resources may run in, programmatic or display names
  # (eastus, "East US 2"); read by the rule region-allowed.
  # default for regions.allowed: [] (no restriction)
  allowed: []
  # Groups of regions: a geography or country ("United States", Germany), an area
  # (Europe, "Asia Pacific"), EU or EEA. A region passes if either list allows it.
  # default for regions.allowedGeographies: [] (no restriction)
  allowedGeographies: []

# Severity overrides per rule id: error, warning, info or off.
# `computeguard policies` and `computeguard explain RULE` list and explain the rules.
# default for rules: each rule's own severity
rules: {}
#  min-nodes-zero: error
#  sku-requires-approval: off

# Extra policies next to the built-in one: rule packs (.yaml) or components
# (.wasm), relative to this file; pin one with {path: ..., digest: sha256:...}.
# default for policies: [] (only the built-in policy)
policies: []

# Settings of extra policies, by policy name (validated against each policy's
# settings schema). The built-in policy's settings come from `regions`.
# default for settings: {} for extra policies; the built-in policy's settings come from regions
settings: {}

# Findings to ignore: a rule, the files (globs relative to this file), optionally
# a JSON pointer (for JSON files, which cannot carry inline comments), and why.
# Inline, in YAML, Terraform or Bicep, a comment on the line before the finding:
# `# computeguard:ignore RULE-ID REASON` (this one, inside a comment, is only an example).
# default for ignore: []
ignore: []
#  - rule: min-nodes-zero
#    paths: ["infra/legacy/**"]
#    reason: warm pool for the nightly SLA
#  - rule: sku-retired
#    paths: ["arm/gpu-vm.json"]
#    pointer: /resources/0/properties/hardwareProfile/vmSize
#    reason: replaced by the Q3 migration

# VM size catalog overlays (docs/catalog.md): facts that add to or correct the
# built-in catalog, applied in order, relative to this file or oci:// references.
# default for catalog: [] (the built-in catalog only)
catalog: []
#  - overlays/azure-2026-11.yaml

# The subscription's own facts, as `az` prints them, for the rules
# sku-available-in-region and quota-sufficient (without them those two rules are
# not evaluated, and every output format says so); Azure Retail Prices pages for
# what the change costs (docs/cost.md).
# default for azure: none: the rules that need them are not evaluated, nothing is priced
# azure:
#   skus: [eastus-skus.json]        # az vm list-skus --all -o json
#   usage:
#     eastus: eastus-usage.json     # az vm list-usage --location eastus -o json
#   mlUsage:
#     eastus: eastus-ml-usage.json  # az ml compute list-usage --location eastus -o json
#   prices: [prices/eastus-1.json]  # curl https://prices.azure.com/api/retail/prices (docs/cost.md)

# The admission webhook (`computeguard serve`); `check` ignores it. Every key is
# in docs/configuration.md, "webhook".
# default for webhook: enforcement by severity, failurePolicy: Fail, no exclusions, no mutations, 3 MiB / 2 s limits
webhook: {}
#  dryRun: false
#  failurePolicy: Fail
#  enforcement: {}
#  exclude: {namespaces: [], labels: {}}

# Signatures that oci:// policies and overlays must carry (docs/distribution.md).
# Absent: no signature is required; present without `require`: every oci://
# reference must be signed by one of the keys.
# default for verify: none: oci:// references need no signature
# verify:
#   keys: [keys/cosign.pub]
#   require: ["oci://myacr.azurecr.io/*"]

# Registries reached over plain HTTP.
# default for registries: [] (loopback registries only)
registries:
  insecure: []
"#;

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// Where to write the file.
    #[arg(default_value = crate::config::FILE_NAME)]
    pub path: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: InitArgs) -> anyhow::Result<Outcome> {
    if args.path.exists() && !args.force {
        bail!(
            "`{}` already exists; pass --force to overwrite it",
            args.path.display()
        );
    }
    std::fs::write(&args.path, TEMPLATE)
        .with_context(|| format!("cannot write `{}`", args.path.display()))?;
    eprintln!(
        "wrote {}; edit it, then run `computeguard check`",
        args.path.display()
    );
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_loads_as_the_defaults() -> anyhow::Result<()> {
        let c = crate::config::Config::parse(std::path::Path::new("computeguard.yaml"), TEMPLATE)?;
        assert_eq!(c.as_of, None);
        assert!(c.regions_allowed.is_empty() && c.allowed_geographies.is_empty());
        assert!(c.rules.is_empty() && c.policies.is_empty() && c.settings.is_empty());
        assert!(c.ignore.is_empty());
        // The example suppression is prose inside a comment, not a directive.
        let d =
            crate::suppress::Directives::parse(std::path::Path::new("computeguard.yaml"), TEMPLATE);
        assert_eq!(d.all().count(), 0);
        Ok(())
    }
}
