//! The set of policies a run evaluates: the built-ins plus `policies:` from the
//! config plus `--policy` flags, loaded by the policy-set layer
//! (`computeguard_policyset::load`); this module adds only what is the CLI's own.

use crate::config::{Config, PolicyRef};
use anyhow::Result;
use computeguard_engine::Engine;
use std::path::Path;

/// A loaded policy and the settings it runs with (the policy-set layer's type, shared
/// with the webhook).
pub use computeguard_policyset::LoadedPolicy as Loaded;

/// Rule ids the CLI reports itself (an incomplete suppression, idle GPU spend), which the configuration
/// may name like a policy's.
pub const OWN_RULES: &[&str] = &[
    crate::suppress::MISSING_REASON_RULE,
    crate::cost::rule::IDLE_COST_RULE,
];

/// Loads every policy and validates its settings. Errors name the file (and line,
/// for packs that do not compile).
pub fn load_all(engine: &Engine, config: &Config, extra: &[PolicyRef]) -> Result<Vec<Loaded>> {
    Ok(computeguard_policyset::load_policies(
        engine, config, extra, OWN_RULES,
    )?)
}

/// [`load_all`], also returning the context the policies were given.
pub fn load_all_with_context(
    engine: &Engine,
    config: &Config,
    extra: &[PolicyRef],
) -> Result<(
    Vec<Loaded>,
    Option<computeguard_policyset::context::LoadedContext>,
)> {
    Ok(computeguard_policyset::load_policies_with_context(
        engine, config, extra, OWN_RULES,
    )?)
}

/// Compiles a pack file, turning diagnostics into one error with every problem.
pub fn compile_pack(path: &Path) -> Result<computeguard_compiler::CompiledPack> {
    Ok(computeguard_policyset::load::compile_pack(path)?)
}
