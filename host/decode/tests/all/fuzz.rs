//! A stable smoke run of the fuzz target bodies (`computeguard_decode::fuzzing`): every seed
//! from the fixtures and the shared corpus, then thousands of deterministic mutations, and
//! never-panic property tests for HCL and Bicep (YAML and JSON are in `props.rs`).
//! `cargo fuzz` runs the same bodies for longer; see docs/fuzzing.md.

use computeguard_decode::fuzzing;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// Mutations per target: about a second each in a debug build.
const ITERATIONS: usize = 3_000;

/// Files under the fixtures (and `../shared/corpus` when present) whose name ends in one of
/// `suffixes`, read as bytes.
fn seeds(suffixes: &[&str]) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in [root.join("tests/fixtures"), root.join("../shared/corpus")] {
        walk(&dir, &mut files);
    }
    files.sort();
    files
        .into_iter()
        .filter(|f| {
            let name = f.to_string_lossy().to_ascii_lowercase();
            suffixes.iter().any(|s| name.ends_with(s))
        })
        .filter_map(|f| std::fs::read(f).ok())
        .filter(|bytes| bytes.len() < 64 * 1024)
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn fuzz_smoke_yaml() {
    let seeds = seeds(&[".yaml", ".yml"]);
    assert!(seeds.len() > 10, "expected the YAML fixtures as seeds");
    assert_eq!(
        fuzzing::smoke(fuzzing::yaml, &seeds, ITERATIONS, 1),
        seeds.len() + ITERATIONS
    );
}

#[test]
fn fuzz_smoke_json() {
    let seeds = seeds(&[".json"]);
    assert!(seeds.len() > 5, "expected the JSON fixtures as seeds");
    fuzzing::smoke(fuzzing::json, &seeds, ITERATIONS, 2);
}

#[test]
fn fuzz_smoke_hcl() {
    let seeds = seeds(&[".tf", ".tfvars"]);
    assert!(seeds.len() >= 5, "expected the Terraform fixtures as seeds");
    fuzzing::smoke(fuzzing::hcl, &seeds, ITERATIONS, 3);
}

#[test]
fn fuzz_smoke_bicep() {
    let seeds = seeds(&[".bicep"]);
    assert!(!seeds.is_empty(), "expected the Bicep fixtures as seeds");
    fuzzing::smoke(fuzzing::bicep, &seeds, ITERATIONS / 3, 4);
}

#[test]
fn fuzz_bodies_reject_nothing_they_should_accept() {
    // The bodies check invariants on what decodes: a valid file must pass them.
    fuzzing::hcl(b"resource \"a\" \"b\" {\n  x = var.y\n  n { m = [1, \"${var.z}\"] }\n}\n");
    fuzzing::json(br#"{"a": [1, {"b": "c"}]}"#);
    fuzzing::yaml(b"a: &x [1, 2]\nb: *x\n");
}

/// Text assembled from the pieces HCL is made of, to reach deep into the parser.
fn hclish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("\n".to_owned()),
        Just(" ".to_owned()),
        Just("resource ".to_owned()),
        Just("\"l\" ".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(" = ".to_owned()),
        Just(", ".to_owned()),
        Just("\"".to_owned()),
        Just("${".to_owned()),
        Just("%{ if x }".to_owned()),
        Just("var.".to_owned()),
        Just("<<-EOT\n".to_owned()),
        Just("EOT\n".to_owned()),
        Just("# c\n".to_owned()),
        Just("/* c */".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just(" ? ".to_owned()),
        Just(" : ".to_owned()),
        Just("for x in y : ".to_owned()),
        Just("\u{feff}".to_owned()),
        "[a-z0-9_é.]{1,6}",
    ];
    prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn hcl_and_bicep_decoding_never_panics_on_arbitrary_text(text in any::<String>()) {
        fuzzing::hcl(text.as_bytes());
        fuzzing::bicep(text.as_bytes());
    }

    #[test]
    fn hcl_decoding_never_panics_on_hcl_like_text(text in hclish()) {
        fuzzing::hcl(text.as_bytes());
    }
}
