//! `computeguard catalog`: the VM size catalog the rules read, made inspectable and
//! extensible (issue 25).
//!
//! - `validate FILE...`: check overlays (YAML or JSON) against the overlay format, each
//!   problem at `FILE:LINE` with its JSON pointer;
//! - `import FILE...`: write an overlay from `az vm list-skus`, REST Resource Skus - List and
//!   Azure ML Virtual Machine Sizes - List output ([`import`]);
//! - `show SIZE`: every fact of one size and where it comes from; `list`: every size, with
//!   filters ([`show`]);
//! - `diff OVERLAY...`: what overlays would add or change against the built-in data ([`diff`]);
//! - `prices FILE...`: check Azure Retail Prices API pages as `azure.prices` reads them
//!   (docs/cost.md).
//!
//! `show` and `list` take `--catalog OVERLAY` (repeatable): the overlays are read and checked
//! as `validate` checks them, then installed once over the built-in catalog.

mod diff;
mod facts;
mod import;
mod input;
mod prices;
mod show;

use crate::Outcome;
use input::Limit;
use std::io::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CatalogArgs {
    #[command(subcommand)]
    pub command: CatalogCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum CatalogCommand {
    /// Check catalog overlays (YAML or JSON): every problem with file, line and JSON pointer.
    Validate(ValidateArgs),
    /// Write an overlay from `az vm list-skus -o json`, REST Resource Skus - List or Azure ML
    /// Virtual Machine Sizes - List output.
    Import(import::ImportArgs),
    /// Every fact of a VM size and where it comes from (built-in source or overlay).
    Show(show::ShowArgs),
    /// The VM sizes the catalog knows, one line each (canonical names, not aliases).
    List(show::ListArgs),
    /// What overlays would add or change against the built-in catalog.
    Diff(diff::DiffArgs),
    /// Check Azure Retail Prices API pages (`azure.prices`): what each holds, or why it
    /// cannot be used.
    Prices(prices::PricesArgs),
}

#[derive(clap::Args, Debug)]
pub struct ValidateArgs {
    /// Catalog overlay files (YAML or JSON).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub limit: Limit,
}

pub fn run(args: CatalogArgs) -> anyhow::Result<Outcome> {
    match args.command {
        CatalogCommand::Validate(a) => validate(a),
        CatalogCommand::Import(a) => import::run(a),
        CatalogCommand::Show(a) => show::run_show(a),
        CatalogCommand::List(a) => show::run_list(a),
        CatalogCommand::Diff(a) => diff::run(a),
        CatalogCommand::Prices(a) => prices::run(a),
    }
}

/// `FILE: valid overlay, N sizes (M new, K changed)` per valid file, every problem of the
/// others; exit 2 when any is not valid.
fn validate(args: ValidateArgs) -> anyhow::Result<Outcome> {
    let c = crate::report::clean;
    let mut out = std::io::stdout().lock();
    let mut bad = 0;
    for path in &args.files {
        match input::load(path, args.limit) {
            Ok(loaded) => {
                let changes = diff::changes(std::slice::from_ref(&loaded.overlay));
                let new = changes.iter().filter(|ch| ch.new).count();
                let changed = changes
                    .iter()
                    .filter(|ch| !ch.new && !ch.facts.is_empty())
                    .count();
                let n = loaded.overlay.skus.len();
                // KAITO's figures, when the overlay gives them (kaito-preset-fits).
                let kaito = loaded.overlay.kaito.as_ref().map_or(String::new(), |k| {
                    let k = computeguard_policy_core::catalog::kaito::KaitoData::from_json(k);
                    format!(
                        "; KAITO {}{}: {} preset(s), {} instance type(s)",
                        k.version,
                        if k.replace {
                            ", replacing the built-in data"
                        } else {
                            ""
                        },
                        k.presets.len(),
                        k.instance_types.len()
                    )
                });
                writeln!(
                    out,
                    "{}: valid overlay, {n} size{} ({new} new, {changed} changed){}",
                    c(&loaded.name),
                    if n == 1 { "" } else { "s" },
                    c(&kaito)
                )?;
            }
            Err(problems) => {
                bad += 1;
                for p in &problems {
                    writeln!(out, "{}", c(p))?;
                }
            }
        }
    }
    if bad > 0 {
        anyhow::bail!(
            "{bad} of {} file{} {} not a valid catalog overlay",
            args.files.len(),
            if args.files.len() == 1 { "" } else { "s" },
            if bad == 1 { "is" } else { "are" }
        );
    }
    Ok(Outcome::Clean)
}
