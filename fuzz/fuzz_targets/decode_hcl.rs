#![no_main]
//! `cargo +nightly fuzz run decode_hcl`: see docs/fuzzing.md.

libfuzzer_sys::fuzz_target!(|data: &[u8]| computeguard_decode::fuzzing::hcl(data));
