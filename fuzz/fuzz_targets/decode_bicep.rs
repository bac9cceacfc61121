#![no_main]
//! `cargo +nightly fuzz run decode_bicep`: see docs/fuzzing.md.

libfuzzer_sys::fuzz_target!(|data: &[u8]| computeguard_decode::fuzzing::bicep(data));
