#![no_main]
//! `cargo +nightly fuzz run decode_json`: see docs/fuzzing.md.

libfuzzer_sys::fuzz_target!(|data: &[u8]| computeguard_decode::fuzzing::json(data));
