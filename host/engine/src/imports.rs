//! Which imports a policy component may have: WASI's interfaces and the contract's
//! types, and for a pre-initialised runtime its pack. Checked when a policy is loaded
//! and when a runtime is recognised for pre-initialisation.

use crate::LoadError;
use wasmtime::component::Component;

/// The interface through which the runtime reads its pack.
pub(crate) const PACK_INTERFACE: &str = "computeguard:policy/pack@0.2.0";
/// The interface through which a policy takes context (catalog overlays, Azure facts).
pub(crate) const CONTEXT_INTERFACE: &str = "computeguard:policy/context@0.2.0";

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
