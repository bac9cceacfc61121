//! `catalog prices FILE...`: checks Azure Retail Prices API pages as `azure.prices` reads
//! them (docs/cost.md), and says what each holds; a file that is not a page is refused,
//! naming the line and what was expected.

use crate::Outcome;
use computeguard_cost::PriceSheet;
use std::io::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct PricesArgs {
    /// Pages of `https://prices.azure.com/api/retail/prices`, as curl or az rest saved them.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
}

/// One line per file (`FILE: N items, M hourly VM prices of K sizes in R regions`), every
/// problem of the others; exit 2 when any file is not a page.
pub fn run(args: PricesArgs) -> anyhow::Result<Outcome> {
    let c = crate::report::clean;
    let mut out = std::io::stdout().lock();
    let mut bad = 0;
    let mut all = PriceSheet::default();
    for path in &args.files {
        match PriceSheet::load(std::slice::from_ref(path)) {
            Ok(one) => {
                let mut sizes: Vec<String> = one
                    .prices()
                    .iter()
                    .map(|p| p.sku.to_ascii_lowercase())
                    .collect();
                sizes.sort();
                sizes.dedup();
                let mut regions: Vec<&str> =
                    one.prices().iter().map(|p| p.region.as_str()).collect();
                regions.sort_unstable();
                regions.dedup();
                let (_, page) = one.pages().first().cloned().unwrap_or_default();
                writeln!(
                    out,
                    "{}: Azure Retail Prices page, {} item(s), {} hourly VM price(s) of {} size(s) in {} region(s) ({}){}",
                    c(&path.display().to_string()),
                    page.items,
                    page.hourly_vm_prices,
                    sizes.len(),
                    regions.len(),
                    c(&regions.join(", ")),
                    page.next_page
                        .as_ref()
                        .map_or_else(String::new, |next| format!(
                            "; NextPageLink names a next page ({}): save it and list it too",
                            c(next)
                        ))
                )?;
                let text = std::fs::read_to_string(path)?;
                if let Err(e) = all.add_page(&path.display().to_string(), &text) {
                    eprintln!("error: {}", c(&e.to_string()));
                    bad += 1;
                }
            }
            Err(e) => {
                eprintln!("error: {}", c(&e.to_string()));
                bad += 1;
            }
        }
    }
    if bad > 0 {
        anyhow::bail!(
            "{bad} of {} file(s) cannot be used as `azure.prices`",
            args.files.len()
        );
    }
    writeln!(
        out,
        "catalog prices: {} hourly VM price(s) in {} file(s), {}",
        all.prices().len(),
        args.files.len(),
        all.currency()
    )?;
    Ok(Outcome::Clean)
}
