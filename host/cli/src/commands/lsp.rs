//! `computeguard lsp`: the language server over standard input and output.

use crate::Outcome;

#[derive(clap::Args, Debug)]
pub struct LspArgs {
    /// Evaluation date, YYYY-MM-DD (default: config `asOf`, else today in UTC).
    #[arg(long, value_parser = crate::config::parse_date)]
    pub as_of: Option<String>,
    /// Accepted for clients that pass it (VS Code's language client); stdio is the only
    /// transport.
    #[arg(long, hide = true)]
    pub stdio: bool,
}

pub fn run(args: LspArgs) -> anyhow::Result<Outcome> {
    crate::lsp::Backend { as_of: args.as_of }.serve_stdio()?;
    Ok(Outcome::Clean)
}
