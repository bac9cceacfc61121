//! Native CEL evaluation vs the embedded built-in policy component, per document.
//!
//! - `native/<doc>`: JSON text -> `serde_json::Value` -> `Evaluator::evaluate`, with the
//!   evaluator built once (the host-side best case).
//! - `native_fresh/<doc>`: the same, plus decoding the encoded pack and building the
//!   `Evaluator` each time. That is the work a fresh component instance repeats per
//!   evaluation (the runtime decodes its pack on first use), without the sandbox.
//! - `component/<doc>`: `Policy::evaluate` of the built-in component (a fresh
//!   instance per call, as in production).
//! - `component/instantiate_only`: `Policy::evaluate` of `{}`, which the policy
//!   recognises as nothing: instantiate + pack decode + a trivial call.
//! - `engine_load_cached`: `Engine::load` of the built-in bytes with a warm artifact
//!   cache (deserialise the `.cwasm`, type-check, pre-instantiate, call `metadata`).
//! - `first_verdict_cached`: `Engine::new` + `Engine::load` (warm cache) + one
//!   `evaluate`, i.e. the in-process cost of the first verdict.
//!
//! Results: docs/benchmarks.md.

// Test code: a helper that cannot do its job fails the test with the reason.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use computeguard_benches::{
    AS_OF, BUILTIN_PACK, BUILTIN_PACK_PATH, DOCUMENTS, EMPTY_DOCUMENT, temp_dir,
};
use computeguard_engine::{Engine, EngineConfig, Policy, Request};
use computeguard_policy_core::eval::{Evaluator, Input};
use computeguard_policy_core::model::Source;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::Path;

fn builtin_component() -> &'static [u8] {
    computeguard_builtins::BUILTINS
        .iter()
        .find(|b| b.name == "computeguard-builtin")
        .expect("the built-in pack is embedded")
        .component
}

fn native_evaluator() -> Evaluator {
    let compiled = computeguard_compiler::compile(BUILTIN_PACK_PATH, BUILTIN_PACK)
        .expect("policies/builtin.yaml compiles");
    Evaluator::new(compiled.pack)
}

fn engine(cache: &Path) -> Engine {
    Engine::new(EngineConfig {
        cache_dir: Some(cache.to_path_buf()),
        ..EngineConfig::default()
    })
    .expect("engine")
}

fn native_eval(e: &Evaluator, json: &str, settings: &serde_json::Value) -> usize {
    let document: serde_json::Value = serde_json::from_str(json).expect("valid JSON");
    let out = e
        .evaluate(&Input {
            document: &document,
            source: Source::Unknown,
            settings,
            as_of: AS_OF,
        })
        .expect("native evaluation");
    out.violations.len()
}

fn component_eval(p: &Policy, req: &Request) -> usize {
    p.evaluate(req)
        .expect("component evaluation")
        .violations
        .len()
}

/// Checks that both paths agree before timing anything, and prints the findings.
fn sanity(e: &Evaluator, p: &Policy) {
    let settings = serde_json::json!({});
    for d in DOCUMENTS {
        let document: serde_json::Value = serde_json::from_str(d.json).expect("valid JSON");
        let native = e
            .evaluate(&Input {
                document: &document,
                source: Source::Unknown,
                settings: &settings,
                as_of: AS_OF,
            })
            .expect("native evaluation");
        let component = p
            .evaluate(&Request::new(d.json, AS_OF))
            .expect("component evaluation");
        let n: Vec<&str> = native.violations.iter().map(|v| v.rule.as_str()).collect();
        let c: Vec<&str> = component
            .violations
            .iter()
            .map(|v| v.rule.as_str())
            .collect();
        assert_eq!(n, c, "native and component disagree on {}", d.id);
        eprintln!("{}: {} finding(s) {:?}", d.id, n.len(), n);
    }
    let empty = p
        .evaluate(&Request::new(EMPTY_DOCUMENT, AS_OF))
        .expect("component evaluation of {}");
    assert!(empty.resources.is_empty() && empty.violations.is_empty());
}

fn benches(c: &mut Criterion) {
    let cache = temp_dir("eval");
    let engine = engine(&cache);
    let bytes = builtin_component();
    // The first load compiles and fills the cache; every later load is warm.
    let policy = engine
        .load(bytes, "builtin:computeguard-builtin")
        .expect("load built-in component");
    let evaluator = native_evaluator();
    let encoded = evaluator.pack().encode();
    let settings = serde_json::json!({});
    sanity(&evaluator, &policy);

    {
        let mut g = c.benchmark_group("native");
        for d in DOCUMENTS {
            g.bench_function(d.id, |b| {
                b.iter(|| native_eval(&evaluator, black_box(d.json), &settings))
            });
        }
        g.finish();
    }
    {
        let mut g = c.benchmark_group("native_fresh");
        for d in DOCUMENTS {
            g.bench_function(d.id, |b| {
                b.iter(|| {
                    let e = Evaluator::from_bytes(black_box(&encoded)).expect("pack decodes");
                    native_eval(&e, black_box(d.json), &settings)
                })
            });
        }
        g.bench_function("empty_document", |b| {
            b.iter(|| {
                let e = Evaluator::from_bytes(black_box(&encoded)).expect("pack decodes");
                native_eval(&e, black_box(EMPTY_DOCUMENT), &settings)
            })
        });
        g.finish();
    }
    {
        let mut g = c.benchmark_group("component");
        for d in DOCUMENTS {
            let req = Request::new(d.json, AS_OF);
            g.bench_function(d.id, |b| {
                b.iter(|| component_eval(&policy, black_box(&req)))
            });
        }
        let req = Request::new(EMPTY_DOCUMENT, AS_OF);
        g.bench_function("instantiate_only", |b| {
            b.iter(|| component_eval(&policy, black_box(&req)))
        });
        g.finish();
    }

    c.bench_function("engine_load_cached", |b| {
        b.iter(|| {
            engine
                .load(black_box(bytes), "builtin:computeguard-builtin")
                .expect("load")
        })
    });

    let first = DOCUMENTS[0];
    c.bench_function("first_verdict_cached", |b| {
        b.iter(|| {
            let engine = self::engine(&cache);
            let policy = engine
                .load(black_box(bytes), "builtin:computeguard-builtin")
                .expect("load");
            component_eval(&policy, &Request::new(first.json, AS_OF))
        })
    });

    let _ = std::fs::remove_dir_all(&cache);
}

criterion_group! {
    name = evaluation;
    config = Criterion::default();
    targets = benches
}
criterion_main!(evaluation);
