//! Fuzz target bodies, as plain functions so that both `cargo fuzz` (nightly, `fuzz/`) and a
//! stable `cargo test` smoke run (`tests/all/fuzz.rs`) exercise the same code.
//!
//! Each body takes arbitrary bytes, decodes them when they are UTF-8 and checks what every
//! decoder promises besides not panicking: every node of a decoded value has a position, and
//! that position is a character boundary inside the text. A broken promise panics, which is
//! how a fuzzer learns of it. [`smoke`] mutates seed inputs with a small deterministic
//! generator, so a test can run each body over thousands of inputs without libFuzzer.
//!
//! Not part of the stable API: hidden from the docs, for the fuzz crate and tests only.

use serde_json::Value;

use crate::{
    Document, TerraformVariables, decode_bicep, decode_hcl, decode_json, decode_yaml, escape_key,
};

/// Fuzz body for [`decode_yaml`].
pub fn yaml(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(documents) = decode_yaml(text)
    {
        for document in &documents {
            check_document(document, text);
        }
    }
}

/// Fuzz body for [`decode_json`].
pub fn json(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(document) = decode_json(text)
    {
        check_document(&document, text);
    }
}

/// Fuzz body for [`decode_hcl`] and [`TerraformVariables`]: the decoded value is also valid
/// JSON syntax (it survives [`decode_json`] unchanged), and resolution (variables, locals,
/// resources, `count`/`for_each` instances) terminates and keeps every node located.
pub fn hcl(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mut document) = decode_hcl(text) else {
        return;
    };
    check_document(&document, text);
    let json = document.value.to_string();
    match decode_json(&json) {
        Ok(again) => assert!(
            again.value == document.value,
            "the JSON syntax of {text:?} decodes back differently"
        ),
        // Nested blocks with labels can exceed JSON's nesting limit; that is not a defect.
        Err(e) => assert!(
            e.message.text.contains("nesting too deep"),
            "the JSON syntax of {text:?} does not decode back: {e}"
        ),
    }
    let mut variables = TerraformVariables::default();
    variables.add_defaults(&document.value);
    variables.add_tfvars(&document.value);
    variables.resolve(&mut document.value.clone());
    // Locals, resources and count/for_each instances: bounded, and every instance is
    // located.
    variables.add_module([&document.value]);
    variables.resolve_document(&mut document);
    check_document(&document, text);
}

/// Fuzz body for [`decode_bicep`].
pub fn bicep(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(document) = decode_bicep(text)
    {
        check_document(&document, text);
    }
}

/// Every node of `document.value` has a position on a character boundary of `text`.
fn check_document(document: &Document, text: &str) {
    let mut pointers = Vec::new();
    collect_pointers(&document.value, String::new(), &mut pointers, 0);
    for pointer in pointers {
        let span = document.positions.locate(&pointer);
        assert!(
            span.is_some() || document.positions.is_empty(),
            "no position for `{pointer}` in {text:?}"
        );
        if let Some(span) = span {
            assert!(
                span.offset <= text.len() && text.is_char_boundary(span.offset),
                "position of `{pointer}` ({span:?}) is outside {text:?}"
            );
            assert!(span.line >= 1 && span.column >= 1, "{span:?}");
        }
    }
}

/// Pointers of a value's nodes, to a bounded depth (deep values are checked down to it).
fn collect_pointers(value: &Value, pointer: String, out: &mut Vec<String>, depth: usize) {
    if depth > 64 || out.len() > 10_000 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                collect_pointers(
                    child,
                    format!("{pointer}/{}", escape_key(key)),
                    out,
                    depth + 1,
                );
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_pointers(child, format!("{pointer}/{i}"), out, depth + 1);
            }
        }
        _ => {}
    }
    out.push(pointer);
}

/// Runs `body` on every seed, then on `iterations` mutations of them (bit flips, syntax
/// tokens inserted, ranges deleted or duplicated, seeds spliced), drawn from a deterministic
/// generator started at `seed`. Returns the number of inputs run.
pub fn smoke(body: fn(&[u8]), seeds: &[Vec<u8>], iterations: usize, seed: u64) -> usize {
    const TOKENS: &[&[u8]] = &[
        b"{",
        b"}",
        b"[",
        b"]",
        b"\"",
        b"'",
        b"${",
        b"%{",
        b"=",
        b":",
        b",",
        b"\n",
        b"  ",
        b"- ",
        b"#",
        b"//",
        b"/*",
        b"*/",
        b"<<EOF\n",
        b"EOF\n",
        b"&a ",
        b"*a",
        b"var.",
        b"resource ",
        b"param ",
        b"\\",
        b"\xc3\xa9",
        b"0x",
        b"1e999",
        b"null",
        b"---\n",
    ];
    let mut rng = XorShift(seed | 1);
    let mut runs = 0;
    for s in seeds {
        body(s);
        runs += 1;
    }
    if seeds.is_empty() {
        return runs;
    }
    for _ in 0..iterations {
        let mut input = seeds[rng.below(seeds.len())].clone();
        for _ in 0..=rng.below(4) {
            let at = rng.below(input.len() + 1);
            match rng.below(5) {
                0 if !input.is_empty() => {
                    let i = at.min(input.len() - 1);
                    input[i] ^= 1 << rng.below(8);
                }
                1 => {
                    let token = TOKENS[rng.below(TOKENS.len())];
                    input.splice(at..at, token.iter().copied());
                }
                2 => {
                    let end = (at + rng.below(64)).min(input.len());
                    input.drain(at..end);
                }
                3 => {
                    let end = (at + rng.below(64)).min(input.len());
                    let copy = input[at..end].to_vec();
                    input.splice(at..at, copy);
                }
                _ => {
                    let other = &seeds[rng.below(seeds.len())];
                    let from = rng.below(other.len() + 1);
                    input.truncate(at);
                    input.extend_from_slice(&other[from..]);
                }
            }
        }
        body(&input);
        runs += 1;
    }
    runs
}

/// Marsaglia's xorshift64: reproducible, dependency-free, good enough to pick mutations.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number in `0..n` (`0` when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}
