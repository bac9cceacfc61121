//! The engine's integration tests, in one test binary: each links wasmtime and Cranelift
//! (about 150 MB in a debug build), so one binary instead of four keeps the test suite's
//! disk use within what CI has.

mod context;
mod hostile;
mod preinit;
mod sandbox;
