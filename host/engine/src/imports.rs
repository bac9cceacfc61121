//! Which imports a policy component may have: WASI's interfaces and the contract's
//! types, and for a pre-initialised runtime its pack. Checked when a policy is loaded
//! and when a runtime is recognised for pre-initialisation.

use crate::LoadError;
use wasmtime::component::Component;

/// The interface through which the runtime reads its pack.
pub(crate) const PACK_INTERFACE: &str = "computeguard:policy/pack@0.2.0";
/// The interface through which a policy takes context (catalog overlays, Azure facts).
pub(crate) const CONTEXT_INTERFACE: &str = "computeguard:policy/context@0.2.0";

/// The contract version this engine speaks (`wit/policy.wit`).
pub(crate) const CONTRACT_VERSION: &str = "0.2.0";
/// The evaluator export of this engine's contract.
pub(crate) const EVALUATOR_INTERFACE: &str = "computeguard:policy/evaluator@0.2.0";
/// computeguard's runtime's own export for documents the engine has already read (not
/// part of the policy contract; a finished policy does not export it).
pub(crate) const READ_MODEL_INTERFACE: &str = "computeguard:policy/read-model@0.2.0";

/// WASI interfaces a policy may import. Everything else is refused at load time.
/// `computeguard:policy/types` carries only types (no functions); components that
/// export `evaluator` import it for the types `evaluator` uses.
const ALLOWED_IMPORTS: &[&str] = &[
    "wasi:cli/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    "computeguard:policy/types@0.2.",
];

/// Whether a policy may import `name` (see [`check_imports`]).
pub(crate) fn import_allowed(name: &str, prepared: bool) -> bool {
    ALLOWED_IMPORTS.iter().any(|p| name.starts_with(p)) || (prepared && name == PACK_INTERFACE)
}

/// Refuses imports outside [`ALLOWED_IMPORTS`]. A pre-initialised runtime still
/// imports its pack (the engine's linker answers with a trap: the snapshot never
/// asks), so `prepared` allows that one interface too.
pub(crate) fn check_imports(
    engine: &wasmtime::Engine,
    component: &Component,
    origin: &str,
    prepared: bool,
) -> Result<(), LoadError> {
    for (name, _) in component.component_type().imports(engine) {
        if !import_allowed(name, prepared) {
            return Err(LoadError::ForbiddenImport {
                origin: origin.to_string(),
                import: name.to_string(),
            });
        }
    }
    Ok(())
}

/// Refuses a component built for another version of the contract, naming both: without
/// this, a component of another version was refused for its `types` import or for the
/// missing `evaluator@0.2.0` export, neither of which says what to do. What changed
/// between versions is in `wit/CHANGELOG.md`. Components with no evaluator of any
/// version are left to the checks after this one.
pub(crate) fn check_contract(
    engine: &wasmtime::Engine,
    component: &Component,
    origin: &str,
) -> Result<(), LoadError> {
    let ty = component.component_type();
    let mut other = None;
    for (name, _) in ty.exports(engine) {
        if name == EVALUATOR_INTERFACE {
            return Ok(());
        }
        if let Some(version) = name.strip_prefix("computeguard:policy/evaluator@") {
            other = Some(version.to_string());
        }
    }
    match other {
        Some(version) => Err(LoadError::NotAPolicy {
            origin: origin.to_string(),
            reason: format!(
                "it was built for the computeguard:policy@{version} contract; this engine requires {CONTRACT_VERSION} \
                 (what changed: wit/CHANGELOG.md). Rebuild it with `computeguard build`, or regenerate its bindings from wit/policy.wit"
            ),
        }),
        None => Ok(()),
    }
}
