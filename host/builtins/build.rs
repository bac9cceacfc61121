//! Builds the CEL runtime component (`guest/runtime`, target `wasm32-wasip2`,
//! profile `guest`) with a nested cargo, then compiles every pack in `policies/`
//! and composes it with the runtime. The outputs are embedded by `src/lib.rs`, so
//! `cargo build --release` alone yields a self-contained `computeguard` binary.
//!
//! The nested build uses its own target directory (`target/guest`) so it neither
//! deadlocks on the outer build's lock nor rebuilds when host flags change. If the
//! `wasm32-wasip2` target is missing, it is installed with rustup.

// A build script reports failure by panicking; that is its interface to cargo.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let root = manifest
        .join("../..")
        .canonicalize()
        .expect("workspace root");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    for dir in [
        "core",
        "guest",
        "wit",
        "policies",
        "vendor",
        "Cargo.lock",
        "Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }

    ensure_target();
    let runtime = build_guest(&root, "computeguard-runtime", "computeguard_runtime");
    if std::env::var_os("CARGO_FEATURE_TEST_POLICIES").is_some() {
        let hostile = build_guest(&root, "hostile-policy", "hostile_policy");
        std::fs::copy(&hostile, out.join("hostile.wasm")).expect("copy hostile policy");
    }
    std::fs::copy(&runtime, out.join("computeguard-runtime.wasm")).expect("copy runtime");
    let runtime_bytes = std::fs::read(&runtime).expect("read runtime component");

    let mut index = String::from("&[\n");
    let mut packs: Vec<PathBuf> = std::fs::read_dir(root.join("policies"))
        .expect("read policies/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    packs.sort();
    for path in packs {
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        let text = std::fs::read_to_string(&path).expect("read pack");
        let compiled = match computeguard_compiler::compile(&rel, &text) {
            Ok(c) => c,
            Err(diags) => {
                for d in &diags {
                    eprintln!("{d}");
                }
                panic!(
                    "built-in pack {rel} does not compile ({} problems above)",
                    diags.len()
                );
            }
        };
        let component = computeguard_compiler::compose(&runtime_bytes, &compiled.pack)
            .unwrap_or_else(|e| panic!("composing {rel}: {e}"));
        let file = format!("{}.wasm", compiled.pack.name);
        std::fs::write(out.join(&file), component).expect("write component");
        index.push_str(&format!(
            "    Builtin {{ name: {:?}, version: {:?}, source: {:?}, name_reads: &{:?}, component: include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{file}\")) }},\n",
            compiled.pack.name,
            compiled.pack.version,
            rel,
            computeguard_compiler::name_reading_targets(&compiled.pack),
        ));
    }
    index.push(']');
    std::fs::write(out.join("builtins.rs"), index).expect("write index");
}

/// Builds guest `package` for wasm32-wasip2 (profile `guest`) and returns the path of
/// its `artifact.wasm`.
fn build_guest(root: &Path, package: &str, artifact: &str) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let target_dir = root.join("target/guest");
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args([
            "build",
            "-p",
            package,
            "--target",
            TARGET,
            "--profile",
            "guest",
        ])
        .arg("--target-dir")
        .arg(&target_dir);
    // Flags meant for the host build must not leak into the wasm build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WORKSPACE_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    // 128-bit SIMD, which wasmtime, Node (V8) and wasmtime-py all run: the runtime
    // evaluates 4-6% faster and is 20 KB smaller (docs/benchmarks.md, section 11).
    cmd.env(
        "CARGO_TARGET_WASM32_WASIP2_RUSTFLAGS",
        "-C target-feature=+simd128",
    );
    let status = cmd.status().expect("run cargo for a guest component");
    assert!(status.success(), "building {package} for {TARGET} failed");
    target_dir
        .join(TARGET)
        .join(format!("guest/{artifact}.wasm"))
}

/// Installs the wasm target when rustup is present and the target is missing.
fn ensure_target() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| PathBuf::from(s.trim()));
    if libdir.as_ref().is_some_and(|d| d.exists()) {
        return;
    }
    println!("cargo:warning=installing the {TARGET} target with rustup");
    let ok = Command::new("rustup")
        .args(["target", "add", TARGET])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the {TARGET} target is missing; run `rustup target add {TARGET}`"
    );
}
