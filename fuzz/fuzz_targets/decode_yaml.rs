#![no_main]
//! `cargo +nightly fuzz run decode_yaml`: see docs/fuzzing.md.

libfuzzer_sys::fuzz_target!(|data: &[u8]| computeguard_decode::fuzzing::yaml(data));
