#![no_main]
//! `cargo +nightly fuzz run normalize`: see docs/fuzzing.md.

libfuzzer_sys::fuzz_target!(|data: &[u8]| computeguard_policy_core::fuzzing::normalize_json(data));
