//! The cost of a change (issue 33, docs/cost.md): the price pages `azure.prices` names,
//! read by `computeguard-cost` and refused when they are not Retail Prices API pages, and
//! the lines the reports print. Prices never reach a policy.

use computeguard_cost::{Estimate, PriceSheet, money};

/// The pages the configuration names, read; `None` when it names none. A page with a
/// `NextPageLink` is reported on standard error: the next page must be saved and listed too.
///
/// # Errors
///
/// A file that cannot be read or is not a Retail Prices page, named with what was expected.
pub fn load_prices(config: &crate::config::Config) -> anyhow::Result<Option<PriceSheet>> {
    let files = &config.context.prices;
    if files.is_empty() {
        return Ok(None);
    }
    let sheet = PriceSheet::load(files)?;
    for (file, page) in sheet.pages() {
        if let Some(next) = &page.next_page {
            eprintln!(
                "warning: {file}: its NextPageLink names a next page ({next}); save it too and list it in `azure.prices`, or sizes on it have no price"
            );
        }
    }
    Ok(Some(sheet))
}

/// `$2,681.29/month idle, $10,725.16/month at full scale`, with what is left out.
pub fn totals_line(e: &Estimate) -> String {
    let t = &e.total;
    let mut line = format!(
        "{}/month idle, {}/month at full scale ({} priced resource{}, {} retail prices, {} h/month)",
        money(t.floor_monthly, &e.currency),
        money(t.ceiling_monthly, &e.currency),
        t.resources,
        if t.resources == 1 { "" } else { "s" },
        e.currency,
        e.hours_per_month
    );
    if t.unknown > 0 {
        line.push_str(&format!(
            "; not in the sums: {} resource{} with an unknown price or count (listed above)",
            t.unknown,
            if t.unknown == 1 { "" } else { "s" }
        ));
    }
    line
}
