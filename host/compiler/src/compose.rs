//! Joins the CEL runtime component with a pack into one policy component.
//!
//! The pack becomes a tiny generated component exporting
//! `computeguard:policy/pack@0.2.0` (`bytes: func() -> list<u8>` returning a data
//! segment). `wac-graph` plugs it into the runtime's `pack` import, the same
//! composition `wac plug` performs, so the result imports only what the runtime
//! needs from WASI and exports only `computeguard:policy/evaluator` and
//! `computeguard:policy/context`.

use computeguard_policy_core::pack::Pack;
use std::fmt::Write as _;
use wac_graph::types::Package;
use wac_graph::{CompositionGraph, EncodeOptions};

/// The interface name the runtime imports for its pack.
pub const PACK_INTERFACE: &str = "computeguard:policy/pack@0.2.0";
/// The interface every policy exports.
pub const EVALUATOR_INTERFACE: &str = "computeguard:policy/evaluator@0.2.0";
/// The interface through which a built policy takes context (world `policy-with-context`).
pub const CONTEXT_INTERFACE: &str = "computeguard:policy/context@0.2.0";

/// Why composition failed (a broken runtime component, not user input).
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    /// The component generated for the pack does not validate.
    #[error("the generated pack component is invalid: {0}")]
    PackComponent(String),
    /// The CEL runtime component could not be read as a component.
    #[error("the runtime component could not be loaded: {0}")]
    Runtime(String),
    /// Linking the pack into the runtime failed.
    #[error("composition failed: {0}")]
    Graph(String),
}

/// The generated component that carries an encoded pack.
pub fn pack_component(pack_bytes: &[u8]) -> Result<Vec<u8>, ComposeError> {
    // Memory layout: [0..8) the (ptr, len) return area, [16..) the pack bytes.
    let len = pack_bytes.len();
    let pages = (16 + len).div_ceil(65536).max(1);
    let mut data = String::with_capacity(len * 3);
    for b in pack_bytes {
        let _ = write!(data, "\\{b:02x}");
    }
    let mut ret = String::new();
    for b in 16u32
        .to_le_bytes()
        .iter()
        .chain(&(len as u32).to_le_bytes())
    {
        let _ = write!(ret, "\\{b:02x}");
    }
    let wat = format!(
        r#"(component
  (core module $m
    (memory (export "memory") {pages})
    (data (i32.const 0) "{ret}")
    (data (i32.const 16) "{data}")
    (func (export "bytes") (result i32) i32.const 0))
  (core instance $i (instantiate $m))
  (func $bytes (result (list u8)) (canon lift (core func $i "bytes") (memory (core memory $i "memory"))))
  (instance $pack (export "bytes" (func $bytes)))
  (export "{PACK_INTERFACE}" (instance $pack)))"#
    );
    wat::parse_str(&wat).map_err(|e| ComposeError::PackComponent(e.to_string()))
}

/// Composes the runtime with `pack` into one self-contained policy component.
pub fn compose(runtime: &[u8], pack: &Pack) -> Result<Vec<u8>, ComposeError> {
    let plug_bytes = pack_component(&pack.encode())?;
    let mut graph = CompositionGraph::new();
    let runtime_pkg = Package::from_bytes(
        "computeguard:runtime",
        None,
        runtime.to_vec(),
        graph.types_mut(),
    )
    .map_err(|e| ComposeError::Runtime(format!("{e:#}")))?;
    let plug_pkg = Package::from_bytes("computeguard:pack", None, plug_bytes, graph.types_mut())
        .map_err(|e| ComposeError::PackComponent(format!("{e:#}")))?;
    let socket = graph
        .register_package(runtime_pkg)
        .map_err(|e| ComposeError::Graph(format!("{e:#}")))?;
    let plug = graph
        .register_package(plug_pkg)
        .map_err(|e| ComposeError::Graph(format!("{e:#}")))?;
    // What `wac plug` does, except that only the evaluator and the context interface
    // are exported (the `policy-with-context` world): the runtime's `prepare` (for hosts
    // that snapshot the runtime, docs/architecture.md) is not part of what embedders load.
    let graph_err = |e: &dyn std::fmt::Display| ComposeError::Graph(e.to_string());
    let runtime = graph.instantiate(socket);
    let pack = graph.instantiate(plug);
    let bytes = graph
        .alias_instance_export(pack, PACK_INTERFACE)
        .map_err(|e| graph_err(&e))?;
    graph
        .set_instantiation_argument(runtime, PACK_INTERFACE, bytes)
        .map_err(|e| graph_err(&e))?;
    let evaluator = graph
        .alias_instance_export(runtime, EVALUATOR_INTERFACE)
        .map_err(|e| graph_err(&e))?;
    graph
        .export(evaluator, EVALUATOR_INTERFACE)
        .map_err(|e| graph_err(&e))?;
    let context = graph
        .alias_instance_export(runtime, CONTEXT_INTERFACE)
        .map_err(|e| graph_err(&e))?;
    graph
        .export(context, CONTEXT_INTERFACE)
        .map_err(|e| graph_err(&e))?;
    graph
        .encode(EncodeOptions::default())
        .map_err(|e| ComposeError::Graph(format!("{e:#}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_component_is_a_valid_component() {
        let bytes = pack_component(b"CGPK\x01\x00\x00\x00hello").expect("builds");
        assert_eq!(&bytes[0..4], b"\0asm");
        // Component binaries have layer 1 in the version field.
        assert_eq!(bytes[6], 1);
    }
}
