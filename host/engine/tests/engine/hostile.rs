//! A hostile policy (`guest/examples/hostile`, a real Rust component) against the
//! sandbox: everything it does wrong costs it its own answer, with an error that
//! names the cause, and nothing else. Each case picks its misbehaviour through the
//! `hostile.computeguard.io/act` field of the document.

use computeguard_engine::{Engine, EngineConfig, EvalError, LoadError, OutputLimits, Request};
use std::time::{Duration, Instant};

const HOSTILE: &[u8] = computeguard_builtins::test_policies::HOSTILE;

fn engine_with(f: impl FnOnce(&mut EngineConfig)) -> anyhow::Result<Engine> {
    let mut config = EngineConfig {
        // Generous: only the runaway test relies on a deadline, and sets its own.
        deadline: Duration::from_secs(20),
        memory_limit: 16 << 20,
        cache_dir: Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache")),
        output: OutputLimits {
            max_violations: 100,
            max_resources: 100,
            max_string_bytes: 4096,
            max_total_bytes: 64 << 10,
        },
        ..EngineConfig::default()
    };
    f(&mut config);
    Ok(Engine::new(config)?)
}

fn request(act: &str) -> Request {
    let doc = serde_json::json!({"hostile.computeguard.io/act": act});
    Request::new(doc.to_string(), "2026-11-22")
}

fn evaluate(act: &str) -> anyhow::Result<Result<computeguard_engine::Response, EvalError>> {
    let engine = engine_with(|_| {})?;
    let policy = engine.load(HOSTILE, "hostile.wasm")?;
    Ok(policy.evaluate(&request(act)))
}

#[test]
fn an_honest_answer_passes_the_checks() -> anyhow::Result<()> {
    let response = evaluate("")?.map_err(|e| anyhow::anyhow!("{e}"))?;
    assert_eq!(response.violations.len(), 1);
    assert_eq!(response.violations[0].rule, "hostile-marker");
    Ok(())
}

#[test]
fn a_panic_is_a_trap_that_quotes_what_the_policy_printed() -> anyhow::Result<()> {
    let err = evaluate("panic")?.expect_err("panics");
    assert!(matches!(err, EvalError::Trap { .. }), "{err}");
    assert!(err.to_string().contains("it printed: thread"), "{err}");
    assert!(
        err.to_string()
            .contains("hostile policy panicked on purpose"),
        "{err}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn printing_or_panicking_inside_an_async_runtime_does_not_panic_the_host()
-> anyhow::Result<()> {
    // wasmtime-wasi's blocking stdio panics a tokio worker ("Cannot start a runtime
    // from within a runtime"); the engine must answer instead, even when called
    // straight from an async task.
    let engine = engine_with(|_| {})?;
    let policy = engine.load(HOSTILE, "hostile.wasm")?;
    let printed = policy.evaluate(&request("print"));
    assert!(
        printed.as_ref().is_ok_and(|r| r.violations.len() == 1),
        "{printed:?}"
    );
    let panicked = policy.evaluate(&request("panic"));
    assert!(
        matches!(panicked, Err(EvalError::Trap { .. })),
        "{panicked:?}"
    );
    Ok(())
}

#[test]
fn a_policy_that_prints_megabytes_still_answers() -> anyhow::Result<()> {
    // 16 MiB printed to stdout and stderr: captured up to a cap, never the host's stdio.
    let response = evaluate("print")?.map_err(|e| anyhow::anyhow!("{e}"))?;
    assert_eq!(response.violations.len(), 1);
    Ok(())
}

#[test]
fn a_runaway_is_stopped_at_the_wall_clock_deadline_even_with_busy_cpus() -> anyhow::Result<()> {
    let engine = engine_with(|_| {})?;
    let policy = engine.load(HOSTILE, "hostile.wasm")?;
    // Keep every CPU busy so that the epoch ticker wakes late.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            })
        })
        .collect();
    let started = Instant::now();
    let budget = Duration::from_millis(400);
    let err = policy
        .evaluate_until(&request("spin"), started + budget)
        .expect_err("stopped");
    let took = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for b in busy {
        let _ = b.join();
    }
    assert!(matches!(err, EvalError::Timeout { .. }), "{err}");
    // Counting 1 ms sleeps stretched 400 ms to 500-800 ms on busy CPUs; the wall
    // clock holds it to the deadline plus a late tick or two.
    assert!(took >= budget, "{took:?}");
    assert!(took < budget + Duration::from_millis(150), "{took:?}");
    Ok(())
}

#[test]
fn running_out_of_memory_is_named_with_the_limit() -> anyhow::Result<()> {
    let err = evaluate("alloc")?.expect_err("capped");
    assert!(matches!(err, EvalError::MemoryLimit { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("ran out of its 16 MiB sandbox memory"),
        "{text}"
    );
    assert!(text.contains("the document is"), "{text}");
    // The engine serves both front ends: it names neither's setting (issue 24); `check`
    // adds `--memory-limit-mib`, the webhook `webhook.limits.memoryMiB`.
    assert!(text.contains("raise the sandbox's memory limit"), "{text}");
    assert!(
        !text.contains("--memory-limit-mib") && !text.contains("webhook."),
        "{text}"
    );
    Ok(())
}

#[test]
fn answers_past_the_output_limits_are_refused_before_they_are_copied() -> anyhow::Result<()> {
    // At the limit: accepted.
    let ok = evaluate("flood:100")?.map_err(|e| anyhow::anyhow!("{e}"))?;
    assert_eq!(ok.violations.len(), 100);
    for (act, says) in [
        ("flood:101", "a list of 101 items"),
        ("flood:5000", "a list of 5000 items"),
        ("big-message:5000", "a message of 5000 bytes (limit 4096)"),
        ("big-message:70000", "more than 65536 bytes of text"),
    ] {
        let err = evaluate(act)?.expect_err(act);
        assert!(matches!(err, EvalError::Output { .. }), "{act}: {err}");
        assert!(err.to_string().contains(says), "{act}: {err}");
    }
    Ok(())
}

#[test]
fn rule_ids_and_paths_are_checked() -> anyhow::Result<()> {
    for (act, says) in [
        (
            "undeclared-rule",
            "names rule `never-declared`, which the policy does not declare",
        ),
        ("bad-rule:", "names rule ``"),
        ("bad-rule:Hostile-Marker", "names rule `Hostile-Marker`"),
        (
            "bad-path",
            "has path `spec\\ncontainers`, which is not a JSON pointer",
        ),
    ] {
        let err = evaluate(act)?.expect_err(act);
        assert!(matches!(err, EvalError::Output { .. }), "{act}: {err}");
        assert!(err.to_string().contains(says), "{act}: {err}");
    }
    Ok(())
}

#[test]
fn the_engine_passes_a_policy_patch_on_as_data_only() -> anyhow::Result<()> {
    // The engine does not apply patches; the webhook refuses policy patches (tested
    // in host/server/tests/e2e/hostile.rs).
    let response = evaluate("patch")?.map_err(|e| anyhow::anyhow!("{e}"))?;
    assert!(response.patch.is_some_and(|p| p.contains("privileged")));
    Ok(())
}

#[test]
fn an_oversized_component_is_refused_before_it_is_compiled() -> anyhow::Result<()> {
    let engine = engine_with(|c| c.max_component_bytes = HOSTILE.len() - 1)?;
    let started = Instant::now();
    let err = engine.load(HOSTILE, "hostile.wasm").expect_err("too large");
    assert!(matches!(err, LoadError::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains("over the"), "{err}");
    // Refused on its size alone: no compilation happened (which takes seconds).
    assert!(started.elapsed() < Duration::from_millis(500));
    Ok(())
}

/// What an answer is, for comparing the blocking and the async paths.
fn outcome(r: &Result<computeguard_engine::Response, EvalError>) -> String {
    match r {
        Ok(r) => format!(
            "ok {:?}",
            r.violations
                .iter()
                .map(|v| (&v.rule, &v.message, &v.path))
                .collect::<Vec<_>>()
        ),
        Err(e) => format!("{} {e}", e.kind()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_async_path_answers_every_misbehaviour_as_the_blocking_one_does() -> anyhow::Result<()>
{
    // Same sandbox, limits and checks on a runtime worker (the webhook's path): a
    // policy that prints or panics must not panic the runtime (WASI's blocking stdio
    // would), and every refusal must be the same one.
    let engine = engine_with(|_| {})?;
    let policy = std::sync::Arc::new(engine.load(HOSTILE, "hostile.wasm")?);
    for act in [
        "",
        "panic",
        "print",
        "alloc",
        "flood",
        "big-message",
        "undeclared-rule",
        "bad-rule",
        "bad-path",
        "patch",
        "escape",
        "deny",
    ] {
        let deadline = Instant::now() + Duration::from_secs(20);
        let blocking = {
            let policy = policy.clone();
            tokio::task::spawn_blocking(move || policy.evaluate_until(&request(act), deadline))
                .await?
        };
        let awaited = policy.evaluate_async(&request(act), deadline).await;
        assert_eq!(outcome(&awaited), outcome(&blocking), "act `{act}`");
    }
    Ok(())
}

#[tokio::test(flavor = "current_thread")]
async fn an_async_runaway_yields_to_the_runtime_and_is_stopped_at_its_deadline()
-> anyhow::Result<()> {
    let engine = engine_with(|_| {})?;
    let policy = engine.load(HOSTILE, "hostile.wasm")?;
    // On a one-thread runtime, a ticker task can only run when the runaway yields.
    let ticks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let ticker = {
        let ticks = ticks.clone();
        tokio::spawn(async move {
            loop {
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        })
    };
    let started = Instant::now();
    let budget = Duration::from_millis(300);
    let err = policy
        .evaluate_async(&request("spin"), started + budget)
        .await
        .expect_err("stopped");
    let took = started.elapsed();
    ticker.abort();
    assert!(matches!(err, EvalError::Timeout { .. }), "{err}");
    assert!(
        took >= budget && took < budget + Duration::from_millis(150),
        "{took:?}"
    );
    // About one yield per 1 ms tick.
    let n = ticks.load(std::sync::atomic::Ordering::Relaxed);
    assert!(n >= 50, "the runtime ran other tasks {n} times in {took:?}");
    Ok(())
}

/// The hostile component with its contract names moved to `@0.1.0`, byte for byte. The names
/// keep their length, so the binary stays valid, and the 0.1.0 and 0.2.0 evaluators have
/// the same shape (wit/CHANGELOG.md): it is what a policy built for 0.1.0 looks like to
/// the engine.
fn built_for_0_1_0() -> Vec<u8> {
    let mut bytes = HOSTILE.to_vec();
    let prefix = b"computeguard:policy/";
    let mut i = 0;
    let mut renamed = 0;
    while let Some(at) = bytes[i..].windows(prefix.len()).position(|w| w == prefix) {
        let start = i + at + prefix.len();
        let name_end = bytes[start..]
            .iter()
            .position(|b| !(b.is_ascii_lowercase() || *b == b'-'))
            .map_or(bytes.len(), |n| start + n);
        if bytes[name_end..].starts_with(b"@0.2.0") {
            bytes[name_end..name_end + 6].copy_from_slice(b"@0.1.0");
            renamed += 1;
        }
        i = name_end;
    }
    assert!(renamed >= 2, "renamed {renamed} names");
    bytes
}

#[test]
fn a_policy_built_for_the_previous_contract_is_refused_naming_both_versions() -> anyhow::Result<()>
{
    let engine = engine_with(|_| {})?;
    // The same bytes at 0.2.0 load (the control).
    engine.load(HOSTILE, "hostile.wasm")?;
    let Err(err) = engine.load(&built_for_0_1_0(), "hostile-0.1.0.wasm") else {
        panic!("a 0.1.0 component was loaded");
    };
    let text = err.to_string();
    assert!(matches!(err, LoadError::NotAPolicy { .. }), "{text}");
    // Before, the refusal named the `types@0.1.0` import as forbidden, or the missing
    // `evaluator@0.2.0` export, and neither version it was built for.
    assert!(
        text.contains("built for the computeguard:policy@0.1.0 contract")
            && text.contains("this engine requires 0.2.0")
            && text.contains("wit/CHANGELOG.md"),
        "{text}"
    );
    Ok(())
}
