//! `computeguard policies [--export DIR]`

use crate::{Outcome, load_config, policies};
use anyhow::Context as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct PoliciesArgs {
    /// Write each built-in policy as `<name>.wasm`, plus the WIT contract, to DIR.
    #[arg(long, value_name = "DIR")]
    pub export: Option<PathBuf>,
    /// Configuration file (default: computeguard.yaml found upward from the working directory).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Extra policy: a rule pack (.yaml) or a component (.wasm), optionally pinned to a digest. Repeatable.
    #[arg(long = "policy", value_parser = crate::config::PolicyRef::parse, value_name = "FILE[@sha256:HEX]")]
    pub policies: Vec<crate::config::PolicyRef>,
}

/// The WIT contract, shipped with exported components.
const WIT: &str = include_str!("../../../../wit/policy.wit");

pub fn run(args: PoliciesArgs) -> anyhow::Result<Outcome> {
    if let Some(dir) = &args.export {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
        for b in computeguard_builtins::BUILTINS {
            let path = dir.join(format!("{}.wasm", b.name));
            std::fs::write(&path, b.component)
                .with_context(|| format!("cannot write `{}`", path.display()))?;
            println!("{}", path.display());
        }
        // The contract the components implement, for embedders' bindings generators
        // (docs/embedding.md).
        let wit_dir = dir.join("wit");
        std::fs::create_dir_all(&wit_dir)
            .with_context(|| format!("cannot create `{}`", wit_dir.display()))?;
        let wit = wit_dir.join("policy.wit");
        std::fs::write(&wit, WIT).with_context(|| format!("cannot write `{}`", wit.display()))?;
        println!("{}", wit.display());
        return Ok(Outcome::Clean);
    }
    let config = load_config(args.config.as_ref())?;
    let engine = crate::engine()?;
    for l in policies::load_all(&engine, &config, &args.policies)? {
        let info = l.policy.info();
        let n = info.rules.len();
        println!(
            "{} {}  {n} rule{}  {}  ({})",
            crate::report::clean(&info.name),
            crate::report::clean(&info.version),
            if n == 1 { "" } else { "s" },
            l.policy.digest(),
            crate::report::clean(l.policy.origin())
        );
    }
    Ok(Outcome::Clean)
}
