//! The policy side of computeguard, as plain Rust.
//!
//! This crate is compiled twice: into the CEL policy runtime component
//! (`wasm32-wasip2`, see `guest/runtime`) and natively into the host, which uses
//! it to check rule packs at build time and as the native baseline in benchmarks.
//! It has no I/O and no clock: everything it knows comes from its arguments and
//! from the catalog compiled in from `policies/catalog/`.
//!
//! Core concepts:
//! - [`compute`]: the compute model type, [`compute::Resource`].
//! - [`read`]: the readers, one per source family, that turn one raw document (JSON) into
//!   [`compute::Resource`]s; [`model`] re-exports both under the path hosts use.
//! - [`catalog`]: SKU, GPU architecture / CUDA and region facts, each with its source.
//! - [`cuda`] and [`version`]: CUDA inference from image references and version maths.
//! - [`pack`]: a rule pack, pre-parsed (CEL ASTs), in the binary form a component carries.
//! - [`eval`]: runs a pack's rules over one document; `cel_value` builds what the rules see.
//! - [`heap`]: the allocator the policy runtime component installs (size classes over `malloc`).
//! - [`bytes`]: the `memcmp` the policy runtime component links (eight bytes at a time).
//! - [`settings`]: checks settings against a pack's settings schema (a documented JSON Schema subset).

#![deny(missing_docs)]

pub mod ast;
pub mod azure;
pub mod bytes;
pub mod catalog;
mod cel_value;
pub mod compute;
pub mod context;
pub mod cuda;
pub mod eval;
#[doc(hidden)]
pub mod fuzzing;
pub mod handoff;
pub mod heap;
pub mod model;
pub mod pack;
pub mod read;
pub mod region;
pub mod settings;
pub mod version;
