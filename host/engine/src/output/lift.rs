//! The one place computeguard uses wasmtime's hidden API
//! (`wasmtime::component::__internal`): two types that lift a policy's answer like
//! `String` and `Vec<T>` but check each length against the answer's budget **before**
//! a byte is copied out of the sandbox.
//!
//! Why it is worth a hidden API: a policy is untrusted, and with the public `String` /
//! `Vec<T>` lifts the host copies whatever the guest built before anything can be
//! checked. With these, a policy that builds a 400,000-violation answer costs the host
//! nothing beyond its own sandbox (`docs/security.md`; the engine's hostile tests refuse
//! such answers as `output` errors). The API can change in any wasmtime release:
//! [`tests::wasmtime_is_the_version_this_lift_was_written_for`] fails on an upgrade, so
//! whoever upgrades re-reads these impls against the new `Lift` / `ComponentType` and
//! then moves the pin.

use super::{charge_list, charge_string};
use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift};

/// The length half of a canonical-ABI pointer pair stored in memory.
fn memory_len(bytes: &[u8]) -> usize {
    bytes
        .get(4..8)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(usize::MAX, |b| u32::from_le_bytes(b) as usize)
}

/// A `string` whose length is checked against the budget before it is copied.
pub(crate) struct BoundedString(pub(crate) String);

// SAFETY: the same canonical ABI as `String`, to which every method delegates.
#[allow(unsafe_code)]
unsafe impl ComponentType for BoundedString {
    type Lower = <String as ComponentType>::Lower;
    const ABI: CanonicalAbiInfo = <String as ComponentType>::ABI;
    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <String as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: delegates to `String`'s lift after checking the length it reads.
#[allow(unsafe_code)]
unsafe impl Lift for BoundedString {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        charge_string(src[1].get_u32() as usize)?;
        Ok(BoundedString(String::linear_lift_from_flat(cx, ty, src)?))
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        charge_string(memory_len(bytes))?;
        Ok(BoundedString(String::linear_lift_from_memory(
            cx, ty, bytes,
        )?))
    }
}

/// A `list<T>` whose length is checked against the budget before it is copied.
pub(crate) struct BoundedList<T>(pub(crate) Vec<T>);

// SAFETY: the same canonical ABI as `Vec<T>`, to which every method delegates.
#[allow(unsafe_code)]
unsafe impl<T: ComponentType> ComponentType for BoundedList<T> {
    type Lower = <Vec<T> as ComponentType>::Lower;
    const ABI: CanonicalAbiInfo = <Vec<T> as ComponentType>::ABI;
    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <Vec<T> as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: delegates to `Vec<T>`'s lift after checking the length it reads.
#[allow(unsafe_code)]
unsafe impl<T: Lift> Lift for BoundedList<T> {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        charge_list(src[1].get_u32() as usize)?;
        Ok(BoundedList(Vec::<T>::linear_lift_from_flat(cx, ty, src)?))
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        charge_list(memory_len(bytes))?;
        Ok(BoundedList(Vec::<T>::linear_lift_from_memory(
            cx, ty, bytes,
        )?))
    }
}

#[cfg(test)]
mod tests {
    /// The wasmtime major version the impls above were checked against.
    const CHECKED_AGAINST: &str = "48.";

    #[test]
    fn wasmtime_is_the_version_this_lift_was_written_for() {
        let lock = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock"),
        )
        .unwrap_or_default();
        let version = lock
            .split("[[package]]")
            .find(|p| p.contains("\nname = \"wasmtime\"\n"))
            .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = ")))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default();
        assert!(
            version.starts_with(CHECKED_AGAINST),
            "wasmtime is {version}: host/engine/src/output/lift.rs implements `Lift` with \
             wasmtime::component::__internal, which may have changed; re-check both impls \
             against the new traits, run the engine's hostile tests, then update CHECKED_AGAINST"
        );
    }
}
