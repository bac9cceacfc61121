//! One module per subcommand.

pub mod build;
pub mod check;
pub mod explain;
pub mod init;
pub mod inspect;
pub mod new;
pub mod policies;
pub mod rules;
pub mod serve;
pub mod test;
