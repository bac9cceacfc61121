//! `computeguard-hook`: the `computeguard` CLI under the name the pre-commit hook
//! installs.
//!
//! pre-commit's `language: rust` runs `cargo install --path .` at the repository
//! root, which needs a package there; the workspace root package
//! (`computeguard-hook` in the root `Cargo.toml`) builds this binary. It has its own
//! name so that a workspace build does not produce two `computeguard` binaries.

fn main() -> std::process::ExitCode {
    computeguard::run()
}
