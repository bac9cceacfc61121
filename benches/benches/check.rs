//! `computeguard check <folder> --format json` as a process, the way a pre-commit
//! hook or CI runs it: process start, config lookup, folder walk, decode, engine
//! start, built-in policy load, parallel evaluation, JSON rendering.
//!
//! - `check/warm_cache`: `COMPUTEGUARD_CACHE_DIR` holds the compiled artifact.
//! - `check/cold_cache`: the cache directory is emptied before every run (not timed),
//!   so every run compiles the component with Cranelift and writes the artifact.
//!
//! The binary is `<workspace>/target/release/computeguard` (run `cargo build
//! --release` first; the benchmark is skipped with a message otherwise). The folder
//! is `$COMPUTEGUARD_BENCH_DIR` if set, else the first non-empty one of `examples/`,
//! `tests/fixtures/`, `../shared/corpus/`.
//! Results: docs/benchmarks.md.

// Test code: a helper that cannot do its job fails the test with the reason.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use computeguard_benches::{AS_OF, check_corpus, release_binary, temp_dir, workspace_root};
use criterion::{Criterion, criterion_group, criterion_main};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn run(bin: &Path, corpus: &Path, cache: &Path) -> Option<i32> {
    Command::new(bin)
        .current_dir(workspace_root())
        .env("COMPUTEGUARD_CACHE_DIR", cache)
        .args(["check", "--format", "json", "--as-of", AS_OF])
        .arg(corpus)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run computeguard")
        .code()
}

fn benches(c: &mut Criterion) {
    let Some(bin) = release_binary() else {
        eprintln!(
            "check: skipped: {}/target/release/computeguard not found; run `cargo build --release` first",
            workspace_root().display()
        );
        return;
    };
    let Some(corpus) = check_corpus() else {
        eprintln!(
            "check: skipped: none of examples/, tests/fixtures/, ../shared/corpus/ holds a file"
        );
        return;
    };
    let cache = temp_dir("check");

    // One untimed run, reported, so a broken binary or corpus is visible.
    let output = Command::new(&bin)
        .current_dir(workspace_root())
        .env("COMPUTEGUARD_CACHE_DIR", &cache)
        .args(["check", "--format", "json", "--as-of", AS_OF])
        .arg(&corpus)
        .output()
        .expect("run computeguard");
    let summary = serde_json::from_slice::<serde_json::Value>(&output.stdout)
        .ok()
        .and_then(|v| v.get("summary").cloned());
    eprintln!(
        "check: {} check {} -> exit {:?}, summary {}",
        bin.display(),
        corpus.display(),
        output.status.code(),
        summary.map_or_else(|| "<no JSON summary>".into(), |s| s.to_string())
    );

    let mut g = c.benchmark_group("check");
    g.sample_size(10);
    g.bench_function("warm_cache", |b| b.iter(|| run(&bin, &corpus, &cache)));
    g.bench_function("cold_cache", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let _ = std::fs::remove_dir_all(&cache);
                let start = Instant::now();
                run(&bin, &corpus, &cache);
                total += start.elapsed();
            }
            total
        })
    });
    g.finish();
    let _ = std::fs::remove_dir_all(&cache);
}

criterion_group!(check, benches);
criterion_main!(check);
