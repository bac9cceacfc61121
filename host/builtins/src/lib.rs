//! The policy components computeguard ships, compiled at build time (see `build.rs`).
//!
//! - [`RUNTIME`]: the CEL policy runtime component (imports `computeguard:policy/pack`);
//!   `computeguard build` composes it with a user's pack.
//! - [`BUILTINS`]: one finished policy component per pack in `policies/`.

#![deny(missing_docs)]

/// One built-in policy component.
#[derive(Debug)]
pub struct Builtin {
    /// Pack name, e.g. `computeguard-builtin`.
    pub name: &'static str,
    /// Pack version (semver).
    pub version: &'static str,
    /// The pack source it was built from, relative to the repository root.
    pub source: &'static str,
    /// The kinds of resource for which some rule may decide by the object's name or raw
    /// document (`computeguard_compiler::name_reading_targets`, checked when it was
    /// built); empty when none does.
    pub name_reads: &'static [&'static str],
    /// The component binary.
    pub component: &'static [u8],
}

/// The built-in policies.
pub static BUILTINS: &[Builtin] = include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// The CEL runtime component, before a pack is joined to it.
pub static RUNTIME: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/computeguard-runtime.wasm"));

/// Policies that exist only to test the sandbox (feature `test-policies`; never in a
/// release build).
#[cfg(feature = "test-policies")]
pub mod test_policies {
    /// `guest/examples/hostile`: panics, prints, spins, floods and lies on request
    /// (see its crate docs for the annotation that picks the misbehaviour).
    pub static HOSTILE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hostile.wasm"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_components_are_embedded() {
        let b = BUILTINS
            .iter()
            .find(|b| b.name == "computeguard-builtin")
            .expect("builtin pack");
        assert_eq!(&b.component[..4], b"\0asm");
        assert!(
            b.component.len() > RUNTIME.len(),
            "the pack adds to the runtime"
        );
        assert!(
            b.component.len() < 2_000_000,
            "a CEL policy component stays under 2 MB, read in decimal units: {} bytes",
            b.component.len()
        );
    }
}
