//! One module per subcommand.

pub mod build;
pub mod catalog;
pub mod check;
pub mod explain;
pub mod init;
pub mod inspect;
pub mod lsp;
pub mod new;
pub mod plan;
pub mod policies;
pub mod registry;
pub mod rules;
pub mod serve;
pub mod test;

/// The output of the listing commands (`rules`, `inspect`): `text` (aligned columns) or
/// `json`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFormat {
    /// For people.
    Text,
    /// For tools.
    Json,
}
