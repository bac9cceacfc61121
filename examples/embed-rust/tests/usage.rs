//! The example's error paths. Evaluation itself is tested end to end, against the
//! exported built-in component and the other hosts, by `scripts/test-embedding.sh`.

// Test code: a helper that cannot do its job fails the test with the reason.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_embed-rust"))
        .args(args)
        .output()
        .expect("run embed-rust")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn no_arguments_prints_usage_and_exits_2() {
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("usage: embed-rust POLICY.wasm"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn as_of_is_required() {
    let out = run(&["policy.wasm", "doc.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`--as-of` is required"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unknown_option_is_named() {
    let out = run(&["policy.wasm", "--as-of", "2026-11-22", "--fuel", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown option `--fuel`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_file_that_is_not_a_component_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("embed-rust-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let fake = dir.join("not-a-policy.wasm");
    std::fs::write(&fake, b"this is text, not wasm").expect("write");
    let out = run(&[fake.to_str().expect("utf-8 path"), "--as-of", "2026-11-22"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("not-a-policy.wasm") && err.contains("is not a loadable component"),
        "{err}"
    );
}

#[test]
fn a_missing_settings_file_is_named() {
    let out = run(&[
        "policy.wasm",
        "--as-of",
        "2026-11-22",
        "--settings",
        "/nonexistent/settings.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot read settings `/nonexistent/settings.json`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_missing_context_file_is_named() {
    let out = run(&[
        "policy.wasm",
        "--as-of",
        "2026-11-22",
        "--context",
        "/nonexistent/context.json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot read context `/nonexistent/context.json`"),
        "{}",
        stderr(&out)
    );
}
