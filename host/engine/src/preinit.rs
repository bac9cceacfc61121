//! Pre-initialised CEL policies.
//!
//! A policy built by `computeguard build` is the CEL runtime composed with a small
//! component that carries the encoded pack. A fresh instance of it decodes the pack
//! and every expression it needs before it can evaluate anything, and the webhook
//! makes a fresh instance per request: that decoding was most of the cost of a
//! small document (`docs/benchmarks.md`, section 1).
//!
//! So, when it loads such a policy, the engine splits it into its two parts, runs
//! the runtime's `prepare` export once under `wasmtime-wizer` with the pack
//! supplied by the host, and snapshots the result. The snapshot is a component
//! whose initial memory already holds the decoded pack; it is compiled and cached
//! like any policy. Isolation does not change: every evaluation still gets a new
//! instance, created from that same initial image, and nothing an evaluation does
//! survives it.
//!
//! The split is strict, so that it never changes what a policy means: the outer
//! component must contain exactly two components and no core module of its own;
//! one must import `computeguard:policy/pack` and export `prepare` and the
//! evaluator, the other must import nothing and export the pack. Anything else
//! (plain Rust policies, other compositions, runtimes older than `prepare`) is
//! loaded as it is. `prepare` runs the runtime's code before the load has checked
//! what the policy imports, so the split also requires that every import of the
//! runtime is one a policy may have; it runs in the same empty sandbox, with the
//! same memory cap, as an evaluation, and under a 10 s deadline.

use crate::imports::{CONTEXT_INTERFACE, PACK_INTERFACE, import_allowed};
use crate::sandbox::Ctx;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use wasmparser::{Parser, Payload};
use wasmtime::component::{Component, Linker};
use wasmtime::{Store, error::Context as _};

/// The runtime export that decodes everything; the snapshot is taken after it.
const PREPARE: &str = "prepare";
/// Epoch ticks `prepare` may run before it is stopped (a runaway runtime must not
/// hang a load): 10 s at the 1 ms tick.
const PREPARE_TICKS: u64 = 10_000;

/// The two components a `computeguard build` policy is made of.
pub(crate) struct Parts<'a> {
    /// The CEL runtime: imports the pack, exports `prepare` and the evaluator.
    pub runtime: &'a [u8],
    /// The generated component that exports the pack.
    pub pack: &'a [u8],
}

#[derive(Default)]
struct Nested<'a> {
    bytes: &'a [u8],
    imports: Vec<&'a str>,
    exports: Vec<&'a str>,
}

/// Finds the runtime and the pack component of a composed policy, or `None` when
/// `bytes` is not exactly that composition (see the module docs).
pub(crate) fn split(bytes: &[u8]) -> Option<Parts<'_>> {
    let mut nested: Vec<Nested<'_>> = Vec::new();
    // One entry per open module or component below the outer one: the index into
    // `nested` for components directly inside the outer component.
    let mut open: Vec<Option<usize>> = Vec::new();
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.ok()? {
            Payload::ModuleSection { .. } if open.is_empty() => return None,
            Payload::ModuleSection { .. } => open.push(None),
            Payload::ComponentSection {
                unchecked_range, ..
            } => {
                if open.is_empty() {
                    nested.push(Nested {
                        bytes: bytes.get(unchecked_range)?,
                        ..Nested::default()
                    });
                    open.push(Some(nested.len() - 1));
                } else {
                    open.push(None);
                }
            }
            Payload::End(_) => {
                open.pop();
            }
            Payload::ComponentImportSection(reader) => {
                if let [Some(i)] = open[..] {
                    for import in reader {
                        nested[i].imports.push(import.ok()?.name.name);
                    }
                }
            }
            Payload::ComponentExportSection(reader) => {
                if let [Some(i)] = open[..] {
                    for export in reader {
                        nested[i].exports.push(export.ok()?.name.name);
                    }
                }
            }
            _ => {}
        }
    }
    let [a, b] = &nested[..] else {
        return None;
    };
    // The runtime's code runs during pre-initialisation, before the load checks the
    // imports of what it compiled: a runtime that imports anything a policy may not
    // is left to that check, which refuses it by name.
    let is_runtime = |n: &Nested<'_>| {
        n.imports.iter().all(|i| import_allowed(i, true))
            && n.imports.contains(&PACK_INTERFACE)
            && n.exports.contains(&PREPARE)
            && n.exports
                .iter()
                .any(|e| e.starts_with("computeguard:policy/evaluator@"))
    };
    let is_pack = |n: &Nested<'_>| n.imports.is_empty() && n.exports == [PACK_INTERFACE];
    let (runtime, pack) = match (is_runtime(a), is_runtime(b)) {
        (true, false) if is_pack(b) => (a, b),
        (false, true) if is_pack(a) => (b, a),
        _ => return None,
    };
    Some(Parts {
        runtime: runtime.bytes,
        pack: pack.bytes,
    })
}

/// The policy refused the context given to it while pre-initialising: its text.
#[derive(Debug)]
pub(crate) struct ContextRefused(pub String);

impl std::fmt::Display for ContextRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ContextRefused {}

/// `configure: func(context: string) -> result<_, string>` as a typed function.
pub(crate) type Configure = wasmtime::component::TypedFunc<(String,), (Result<(), String>,)>;

/// The `configure` export of an instance of a policy that takes context; none for a
/// policy without the context interface.
pub(crate) fn configure_func(
    store: &mut Store<Ctx>,
    instance: &wasmtime::component::Instance,
) -> wasmtime::Result<Option<Configure>> {
    let Some(interface) = instance.get_export_index(&mut *store, None, CONTEXT_INTERFACE) else {
        return Ok(None);
    };
    let func = instance
        .get_export_index(&mut *store, Some(&interface), "configure")
        .context("the context interface has no `configure`")?;
    Ok(Some(instance.get_typed_func(&mut *store, func)?))
}

/// What `configure` answered, as the error [`ContextRefused`] when it said no.
pub(crate) fn refused(answer: Result<(), String>) -> wasmtime::Result<()> {
    answer.map_err(|e| ContextRefused(e).into())
}

/// Runs the runtime's `prepare` with the pack (after `configure` with `context`, when
/// there is one) and returns the snapshot component.
pub(crate) fn prepare(
    engine: &wasmtime::Engine,
    parts: &Parts<'_>,
    new_ctx: impl Fn() -> Ctx,
    context: Option<&str>,
) -> wasmtime::Result<Vec<u8>> {
    let pack = pack_bytes(engine, parts.pack, new_ctx())?;
    let mut linker = Linker::<Ctx>::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    linker.instance("computeguard:policy/types@0.2.0")?;
    linker
        .instance(PACK_INTERFACE)?
        .func_wrap("bytes", move |_, ()| Ok((pack.clone(),)))?;
    let mut store = Store::new(engine, new_ctx());
    store.limiter(|c| c.limiter());
    store.set_epoch_deadline(PREPARE_TICKS);
    store.epoch_deadline_trap();
    let mut wizer = wasmtime_wizer::Wizer::new();
    // Keep `prepare` exported: wasmtime-wizer 48 drops the core export but leaves
    // the component's lift of it, which does not validate. Calling it again is a
    // no-op, and the engine's bindings never do.
    wizer.init_func(PREPARE).keep_init_func(true);
    let (snapshot, _) =
        block_on(
            wizer.run_component(&mut store, parts.runtime, async |store, component| {
                let instance = linker.instantiate_async(&mut *store, component).await?;
                if let Some(context) = context
                    && let Some(configure) = configure_func(store, &instance)?
                {
                    let (answer,) = configure
                        .call_async(&mut *store, (context.to_string(),))
                        .await?;
                    refused(answer)?;
                }
                Ok(instance)
            }),
        )
        .context("pre-initialising the runtime")?;
    Ok(snapshot)
}

/// Calls the pack component's `bytes` in a throwaway instance.
fn pack_bytes(engine: &wasmtime::Engine, component: &[u8], ctx: Ctx) -> wasmtime::Result<Vec<u8>> {
    let component = Component::new(engine, component).context("compiling the pack component")?;
    let mut store = Store::new(engine, ctx);
    store.set_epoch_deadline(PREPARE_TICKS);
    store.epoch_deadline_trap();
    let instance = Linker::<Ctx>::new(engine).instantiate(&mut store, &component)?;
    let interface = instance
        .get_export_index(&mut store, None, PACK_INTERFACE)
        .context("the pack component has no pack export")?;
    let func = instance
        .get_export_index(&mut store, Some(&interface), "bytes")
        .context("the pack export has no `bytes`")?;
    let bytes = instance
        .get_typed_func::<(), (Vec<u8>,)>(&mut store, func)?
        .call(&mut store, ())?
        .0;
    Ok(bytes)
}

/// Drives a future whose every await completes without waiting: the only host
/// functions involved are synchronous, so nothing ever has to wake it.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin() -> &'static [u8] {
        computeguard_builtins::BUILTINS[0].component
    }

    #[test]
    fn a_built_policy_splits_into_runtime_and_pack() {
        let parts = split(builtin()).expect("the built-in policy is a composition");
        // The runtime is the embedded runtime build, byte for byte.
        assert_eq!(parts.runtime, computeguard_builtins::RUNTIME);
        assert!(parts.pack.len() < 64 << 10, "{}", parts.pack.len());
        assert_eq!(&parts.pack[..4], b"\0asm");
    }

    #[test]
    fn a_built_policy_exports_only_the_evaluator_and_the_context() {
        // `prepare` belongs to the nested runtime; embedders see the
        // `policy-with-context` world.
        let mut depth = 0;
        let mut exports = Vec::new();
        for payload in Parser::new(0).parse_all(builtin()) {
            match payload.expect("valid") {
                Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
                Payload::End(_) => depth -= 1,
                Payload::ComponentExportSection(r) if depth == 0 => {
                    exports.extend(r.into_iter().map(|e| e.expect("export").name.name));
                }
                _ => {}
            }
        }
        assert_eq!(
            exports,
            [
                "computeguard:policy/evaluator@0.2.0",
                "computeguard:policy/context@0.2.0"
            ]
        );
    }

    /// A composition with the shape `split` looks for, the runtime importing `extra`.
    /// (`split` reads names only, so empty instances stand in for the real items.)
    fn shaped_like_a_policy(extra: &str) -> Vec<u8> {
        wat::parse_str(format!(
            r#"(component
  (component $runtime
    (import "{PACK_INTERFACE}" (instance))
    (import "{extra}" (instance $x))
    (export "prepare" (instance $x))
    (export "computeguard:policy/evaluator@0.2.0" (instance $x)))
  (component $pack
    (instance $i)
    (export "{PACK_INTERFACE}" (instance $i))))"#
        ))
        .expect("valid text")
    }

    #[test]
    fn a_runtime_that_imports_what_a_policy_may_not_is_not_run() {
        assert!(split(&shaped_like_a_policy("wasi:cli/environment@0.2.6")).is_some());
        // Left to the load's import check, which refuses it by name.
        assert!(split(&shaped_like_a_policy("wasi:sockets/tcp@0.2.6")).is_none());
    }

    #[test]
    fn anything_else_is_not_split() {
        // The runtime alone (nothing nested), a truncated policy, and not wasm.
        assert!(split(computeguard_builtins::RUNTIME).is_none());
        let b = builtin();
        assert!(split(&b[..b.len() / 2]).is_none());
        assert!(split(b"not wasm").is_none());
    }
}
