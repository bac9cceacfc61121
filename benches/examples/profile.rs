//! A fixed number of evaluations of one benchmark document, for instruction-count
//! profiles that the shared machine's load cannot skew:
//!
//! ```sh
//! cargo build --profile bench -p computeguard-benches --example profile
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out \
//!     target/release/examples/profile native k8s_h100_inference 200
//! callgrind_annotate /tmp/cg.out | head -40
//! ```
//!
//! Modes: `native` (prepared evaluator), `native_fresh` (pack decode + evaluate),
//! `normalize` (JSON parse and `read::normalize` only),
//! `component` (`Policy::evaluate`, fresh instance). The document is a
//! `benches/src/lib.rs` id, `empty_document` or `@FILE` (a JSON document of one's own).
//! Setup (compiling the pack, loading the component) runs once before the loop; subtract
//! a run with 0 iterations to get the loop alone. `component` also reads
//! `PROFILE_ASYNC=1` (evaluate as the webhook does, `evaluate_async` on a tokio runtime)
//! and `PROFILE_SLOTS=N` (N pooling slots instead of 1), and `PROFILE_READ=1` (the
//! webhook's way since issue 36's handover: each evaluation parses and reads the document
//! natively, then hands the model over with `evaluate_read_async`; implies
//! `PROFILE_ASYNC=1`). See docs/benchmarks.md.

use computeguard_benches::{AS_OF, BUILTIN_PACK, BUILTIN_PACK_PATH, DOCUMENTS, EMPTY_DOCUMENT};
use computeguard_engine::{Engine, EngineConfig, Request};
use computeguard_policy_core::eval::{Evaluator, Input};
use computeguard_policy_core::model::Source;
use std::hint::black_box;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(doc), Some(n)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!(
            "usage: profile native|native_fresh|normalize|component <document-id> <iterations>"
        );
        return ExitCode::from(2);
    };
    let Ok(n) = n.parse::<u32>() else {
        eprintln!("iterations must be a number, got `{n}`");
        return ExitCode::from(2);
    };
    // `@FILE`: a document of one's own (an AdmissionReview's `request.object`, say).
    let file;
    let json = if doc == "empty_document" || mode == "compose" {
        EMPTY_DOCUMENT
    } else if let Some(path) = doc.strip_prefix('@') {
        file = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::FAILURE;
            }
        };
        file.as_str()
    } else if let Some(d) = DOCUMENTS.iter().find(|d| d.id == doc) {
        d.json
    } else {
        eprintln!("unknown document `{doc}`");
        return ExitCode::from(2);
    };
    let settings = serde_json::json!({});
    let mut findings = 0;
    match mode.as_str() {
        // Only the reading: the JSON parse and `read::normalize`, which the webhook's
        // pre-check and the policy both run on every document.
        "normalize" => {
            for _ in 0..n {
                let document: serde_json::Value = match serde_json::from_str(black_box(json)) {
                    Ok(v) => v,
                    Err(e) => {
                        eprintln!("{e}");
                        return ExitCode::FAILURE;
                    }
                };
                findings +=
                    computeguard_policy_core::read::normalize(&document, Source::Unknown).len();
            }
        }
        "native" | "native_fresh" => {
            let pack = match computeguard_compiler::compile(BUILTIN_PACK_PATH, BUILTIN_PACK) {
                Ok(c) => c.pack,
                Err(d) => {
                    eprintln!("the built-in pack does not compile: {d:?}");
                    return ExitCode::FAILURE;
                }
            };
            let encoded = pack.encode();
            let prepared = Evaluator::new(pack);
            for _ in 0..n {
                let fresh;
                let e = if mode == "native" {
                    &prepared
                } else {
                    match Evaluator::from_bytes(black_box(&encoded)) {
                        Ok(e) => {
                            fresh = e;
                            &fresh
                        }
                        Err(e) => {
                            eprintln!("{e}");
                            return ExitCode::FAILURE;
                        }
                    }
                };
                let document: serde_json::Value = match serde_json::from_str(black_box(json)) {
                    Ok(v) => v,
                    Err(e) => {
                        eprintln!("{e}");
                        return ExitCode::FAILURE;
                    }
                };
                match e.evaluate(&Input {
                    document: &document,
                    source: Source::Unknown,
                    settings: &settings,
                    as_of: AS_OF,
                }) {
                    Ok(out) => findings += out.violations.len(),
                    Err(e) => {
                        eprintln!("{e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
        "component" => {
            // The default cache directory (`$COMPUTEGUARD_CACHE_DIR`) keeps Cranelift
            // out of the profile after the first run.
            // One pooling slot by default: a profile needs no more, and a small reservation.
            // `PROFILE_SLOTS=N`: N slots, as a server has (64 by default).
            let slots = match std::env::var("PROFILE_SLOTS") {
                Err(_) => 1,
                Ok(s) => match s.parse::<u32>() {
                    Ok(n) if n > 0 => n,
                    _ => {
                        eprintln!("PROFILE_SLOTS must be a number above 0, got `{s}`");
                        return ExitCode::from(2);
                    }
                },
            };
            let engine = match Engine::new(EngineConfig {
                max_concurrent_instances: slots,
                ..EngineConfig::default()
            }) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            let Some(builtin) = computeguard_builtins::BUILTINS
                .iter()
                .find(|b| b.name == "computeguard-builtin")
            else {
                eprintln!("the built-in component is not embedded");
                return ExitCode::FAILURE;
            };
            // `PROFILE_COMPONENT=file.wasm` profiles another build of the component
            // (see the `compose` mode).
            let bytes = match std::env::var_os("PROFILE_COMPONENT") {
                Some(path) => match std::fs::read(&path) {
                    Ok(b) => b,
                    Err(e) => {
                        eprintln!("{}: {e}", path.to_string_lossy());
                        return ExitCode::FAILURE;
                    }
                },
                None => builtin.component.to_vec(),
            };
            let policy = match engine.load(&bytes, "builtin:computeguard-builtin") {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("{e}");
                    return ExitCode::FAILURE;
                }
            };
            let request = Request::new(json, AS_OF);
            // `PROFILE_ASYNC=1`: the webhook's way, `evaluate_async` on a tokio runtime.
            let (asynchronous, read) = match (flag("PROFILE_ASYNC"), flag("PROFILE_READ")) {
                (Ok(a), Ok(r)) => (a, r),
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("{e}");
                    return ExitCode::from(2);
                }
            };
            let asynchronous = asynchronous || read;
            let runtime = asynchronous.then(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
            });
            let deadline = || std::time::Instant::now() + std::time::Duration::from_secs(10);
            for _ in 0..n {
                let answer = match &runtime {
                    Some(Ok(rt)) if read => {
                        // What the host does before it hands the model over.
                        let value: serde_json::Value = match serde_json::from_str(black_box(json)) {
                            Ok(v) => v,
                            Err(e) => {
                                eprintln!("the document is not JSON: {e}");
                                return ExitCode::FAILURE;
                            }
                        };
                        let resources =
                            computeguard_policy_core::model::normalize(&value, Source::Unknown);
                        rt.block_on(policy.evaluate_read_async(
                            black_box(&request),
                            &resources,
                            deadline(),
                        ))
                    }
                    Some(Ok(rt)) => {
                        rt.block_on(policy.evaluate_async(black_box(&request), deadline()))
                    }
                    Some(Err(e)) => {
                        eprintln!("cannot start a runtime: {e}");
                        return ExitCode::FAILURE;
                    }
                    None => policy.evaluate(black_box(&request)),
                };
                match answer {
                    Ok(r) => findings += r.violations.len(),
                    Err(e) => {
                        eprintln!("{e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
        "compose" => {
            // `profile compose RUNTIME.wasm OUT.wasm`: the built-in pack joined with
            // another build of the runtime (e.g. another opt-level), for A/B runs.
            let pack = match computeguard_compiler::compile(BUILTIN_PACK_PATH, BUILTIN_PACK) {
                Ok(c) => c.pack,
                Err(d) => {
                    eprintln!("the built-in pack does not compile: {d:?}");
                    return ExitCode::FAILURE;
                }
            };
            let (runtime, out) = (doc, args.get(4));
            let _ = json;
            let Some(out) = out else {
                eprintln!("usage: profile compose RUNTIME.wasm 0 OUT.wasm");
                return ExitCode::from(2);
            };
            let composed = std::fs::read(runtime)
                .map_err(|e| e.to_string())
                .and_then(|r| computeguard_compiler::compose(&r, &pack).map_err(|e| e.to_string()))
                .and_then(|c| std::fs::write(out, c).map_err(|e| e.to_string()));
            if let Err(e) = composed {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
        other => {
            eprintln!("unknown mode `{other}`");
            return ExitCode::from(2);
        }
    }
    println!("{findings} finding(s) over {n} evaluation(s)");
    ExitCode::SUCCESS
}

/// An environment variable that is unset, `0` or `1`.
fn flag(name: &str) -> Result<bool, String> {
    match std::env::var(name).as_deref() {
        Err(_) | Ok("0") => Ok(false),
        Ok("1") => Ok(true),
        Ok(other) => Err(format!("{name} must be 0 or 1, got `{other}`")),
    }
}
