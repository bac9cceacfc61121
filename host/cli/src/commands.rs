//! One module per subcommand.

pub mod build;
pub mod check;
pub mod explain;
pub mod policies;
pub mod test;
