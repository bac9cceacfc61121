//! `computeguard build PACK.yaml -o PACK.wasm`

use crate::{Outcome, policies};
use anyhow::Context as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// The rule pack to compile.
    pub pack: PathBuf,
    /// Where to write the component (default: the pack's path with `.wasm`).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

pub fn run(args: BuildArgs) -> anyhow::Result<Outcome> {
    let compiled = policies::compile_pack(&args.pack)?;
    let component = computeguard_compiler::compose(computeguard_builtins::RUNTIME, &compiled.pack)?;
    let out = args
        .output
        .unwrap_or_else(|| args.pack.with_extension("wasm"));
    std::fs::write(&out, &component)
        .with_context(|| format!("cannot write `{}`", out.display()))?;
    eprintln!(
        "built {} {} ({} rule{}, {} KiB) -> {}",
        compiled.pack.name,
        compiled.pack.version,
        compiled.pack.rules.len(),
        if compiled.pack.rules.len() == 1 {
            ""
        } else {
            "s"
        },
        component.len() / 1024,
        out.display()
    );
    Ok(Outcome::Clean)
}
