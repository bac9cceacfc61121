//! Rule pack compiler.
//!
//! `computeguard build PACK.yaml -o PACK.wasm` is [`compile`] followed by
//! [`compose`]: the pack source is decoded with positions, every CEL expression is
//! parsed and checked against the compute model (errors name the file, line and
//! column), and the checked, pre-parsed pack is joined with the CEL runtime
//! component into one self-contained policy component.
//!
//! ```no_run
//! let text = std::fs::read_to_string("policies/builtin.yaml")?;
//! let compiled = computeguard_compiler::compile("policies/builtin.yaml", &text)
//!     .map_err(|d| anyhow::anyhow!("{} problems", d.len()))?;
//! # let runtime: Vec<u8> = Vec::new();
//! let component = computeguard_compiler::compose(&runtime, &compiled.pack)?;
//! # Ok::<(), anyhow::Error>(())
//! ```

#![deny(missing_docs)]

mod check;
mod compose;
mod diagnostic;
mod reads;
mod source;

pub use compose::{ComposeError, compose, pack_component};
pub use diagnostic::Diagnostic;
pub use reads::{name_blind, name_reading_targets};
pub use source::{CompiledPack, PackTest, TestDocument, compile};
