//! The computeguard host engine: wasmtime with the component model.
//!
//! Who should use this crate: the `computeguard` CLI and webhook, and Rust tools
//! that want computeguard's sandboxing and caching. Tools that only want to call
//! a policy can use the WIT contract directly (see `docs/embedding.md`).
//!
//! ```no_run
//! use computeguard_engine::{Engine, EngineConfig, Request};
//! let engine = Engine::new(EngineConfig::default())?;
//! let bytes = std::fs::read("policy.wasm")?;
//! let policy = engine.load(&bytes, "policy.wasm")?;
//! let response = policy.evaluate(&Request::new(r#"{"type":"amlcompute","size":"Standard_NC6"}"#, "2026-11-22"))?;
//! for v in response.violations { println!("{}: {}", v.rule, v.message); }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Core concepts:
//! - [`Engine`]: one per process. Holds the wasmtime engine (pooling allocator,
//!   epoch interruption), the linker with the WASI subset policies may use, the
//!   epoch ticker thread and the compiled-artifact cache. Cheap to share (`Arc` inside).
//! - [`Policy`]: a loaded component, type-checked and pre-instantiated
//!   (`InstancePre`) once. Every [`Policy::evaluate`] gets a fresh `Store` and
//!   instance (tens of microseconds), a deadline and a memory cap, so one
//!   evaluation can never see or break another.
//!
//! Sandbox defaults (threat: a policy is untrusted code):
//! - no filesystem preopens, no environment, no arguments, no network;
//! - clocks are frozen at the Unix epoch (policies judge time by `as-of`);
//! - a component importing anything outside `wasi:cli`, `wasi:io`, `wasi:clocks`,
//!   `wasi:random`, `wasi:filesystem` is refused at load with the import named;
//! - [`EngineConfig::deadline`] per call (default 1 s, wall clock) and
//!   [`EngineConfig::memory_limit`] per instance (default 64 MiB);
//! - what a policy prints is captured (the first [`STDIO_CAPTURE_BYTES`], quoted in
//!   trap errors) and never reaches the host's stdio;
//! - what a policy returns is bounded by [`OutputLimits`] before it is copied, and
//!   checked: rule ids must be declared in its metadata, paths must be JSON pointers;
//! - components over [`EngineConfig::max_component_bytes`] are refused before
//!   they are parsed.

#![deny(missing_docs)]

mod bindings;
mod cache;
mod imports;
mod output;
mod policy;
mod preinit;
mod sandbox;
pub mod text;

pub use output::{
    MAX_POLICY_NAME, MAX_RULE_ID, MAX_RULES, MetadataError, OutputLimits, valid_rule_id,
};
pub use sandbox::STDIO_CAPTURE_BYTES;

/// Hex SHA-256 of component bytes: what `sha256:` pins and [`Policy::digest`] name.
pub fn digest(bytes: &[u8]) -> String {
    cache::digest(bytes)
}

pub use bindings::{
    Operation, PolicyInfo, Request, ResourceRef, Response, RuleInfo, Severity, SourceKind,
    Violation,
};
pub use policy::Policy;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wasmtime::component::Linker;

/// Engine settings. Every default is documented on its field.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Wall-time budget of one call into a policy. Default 1 s; the webhook sets it
    /// below its `timeoutSeconds`.
    pub deadline: Duration,
    /// Maximum linear memory of one policy instance. Default 64 MiB.
    pub memory_limit: usize,
    /// Directory for compiled artifacts (`.cwasm`, keyed by content digest and engine
    /// settings). Default: `$COMPUTEGUARD_CACHE_DIR`, else `$XDG_CACHE_HOME/computeguard`,
    /// else `~/.cache/computeguard`; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    /// Instances that may be alive at once (pooling allocator slots). Default 64.
    pub max_concurrent_instances: u32,
    /// Pre-initialise CEL policies built by `computeguard build` on load: run their
    /// pack decoding once and start every fresh instance from a snapshot of it
    /// (`wasmtime-wizer`; see `docs/architecture.md`). Default `true`; `false` runs
    /// the component exactly as built (the results are the same, only slower).
    pub preinitialise: bool,
    /// Bounds on what one evaluation may return (violations, string and total bytes).
    pub output: OutputLimits,
    /// Largest component [`Engine::load`] accepts, checked before anything is parsed
    /// or compiled: compiling is the one step no deadline interrupts (a 9 MB component
    /// took over a minute). Default 8 MiB; the built-in policy is under 2 MiB.
    pub max_component_bytes: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            deadline: Duration::from_secs(1),
            memory_limit: 64 << 20,
            cache_dir: default_cache_dir(),
            max_concurrent_instances: 64,
            preinitialise: true,
            output: OutputLimits::default(),
            max_component_bytes: 8 << 20,
        }
    }
}

/// The default artifact cache directory (see [`EngineConfig::cache_dir`]).
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("COMPUTEGUARD_CACHE_DIR") {
        return (!dir.is_empty()).then(|| PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("computeguard"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/computeguard"))
}

/// How often the epoch ticks. At each tick a running policy compares the wall clock
/// with its deadline, so a deadline is enforced to within one tick (plus however
/// late a busy machine wakes the ticker thread).
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// Why a policy could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The bytes are not a valid WebAssembly component.
    #[error("`{origin}` is not a valid policy component: {reason}")]
    Invalid {
        /// Where the component came from: its path, or `builtin:NAME`.
        origin: String,
        /// What went wrong, as the layer below said it.
        reason: String,
    },
    /// The component imports an interface outside the allowed WASI set.
    #[error("`{origin}` imports `{import}`, which computeguard does not provide to policies")]
    ForbiddenImport {
        /// Where the component came from: its path, or `builtin:NAME`.
        origin: String,
        /// The import computeguard refused.
        import: String,
    },
    /// The component does not export `computeguard:policy/evaluator`.
    #[error("`{origin}` does not export the computeguard:policy/evaluator interface: {reason}")]
    NotAPolicy {
        /// Where the component came from: its path, or `builtin:NAME`.
        origin: String,
        /// What went wrong, as the layer below said it.
        reason: String,
    },
    /// The component's `metadata` call failed.
    #[error("`{origin}`: metadata call failed: {reason}")]
    Metadata {
        /// Where the component came from: its path, or `builtin:NAME`.
        origin: String,
        /// What went wrong, as the layer below said it.
        reason: String,
    },
    /// What the policy declares about itself (its name, its rule ids) is not usable.
    #[error("`{origin}`: metadata call failed: {problem}")]
    InvalidMetadata {
        /// Where the component came from: its path, or `builtin:NAME`.
        origin: String,
        /// What is wrong with it.
        problem: MetadataError,
    },
    /// The settings schema the policy declares is not a valid JSON Schema.
    #[error("`{origin}`: its settings schema is not a valid JSON Schema: {reason}")]
    Schema {
        /// Where the component came from: its path, or `builtin:NAME`.
        origin: String,
        /// What went wrong, as the layer below said it.
        reason: String,
    },
    /// The policy refused the context it was given (`configure` returned an error).
    #[error("`{origin}` refused its context: {reason}")]
    Context {
        /// Where the component came from: its path, or `builtin:NAME`.
        origin: String,
        /// The policy's own error text: every problem it found.
        reason: String,
    },
    /// The component is larger than `EngineConfig::max_component_bytes`.
    #[error(
        "`{origin}` is {} ({size} bytes), over the {} limit for a policy component (EngineConfig::max_component_bytes); refusing to compile it",
        human_bytes(*size),
        human_bytes(*limit)
    )]
    TooLarge {
        /// Where the component came from: its path, or `builtin:NAME`.
        origin: String,
        /// The component's size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
}

/// Knowledge a policy gets once per instance through `computeguard:policy/context`:
/// catalog overlays and the subscription's facts, as the JSON text `configure` takes
/// (see `wit/policy.wit`). For a policy `computeguard build` made, the engine gives it
/// while pre-initialising, so the snapshot every evaluation starts from already holds
/// it and an evaluation pays nothing for it, however large; any other policy that
/// exports the interface gets it in each fresh instance.
#[derive(Clone, Debug)]
pub struct PolicyContext {
    json: Arc<str>,
    digest: String,
}

impl PolicyContext {
    /// A context from its JSON text (checked by the policy when it is loaded).
    pub fn new(json: String) -> Self {
        let digest = cache::digest(json.as_bytes());
        Self {
            json: json.into(),
            digest,
        }
    }

    /// The JSON text.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// `sha256` hex of the JSON text: part of a pre-initialised snapshot's cache key.
    pub fn digest(&self) -> &str {
        &self.digest
    }
}

/// Why an evaluation produced no response.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The policy ran past its deadline and was stopped.
    #[error("policy `{policy}` exceeded its {deadline:?} deadline and was stopped")]
    Timeout {
        /// The policy's name.
        policy: String,
        /// The deadline it ran past.
        deadline: Duration,
    },
    /// The policy trapped (a bug in the policy, or it hit the memory cap).
    #[error("policy `{policy}` trapped: {reason}")]
    Trap {
        /// The policy's name.
        policy: String,
        /// What went wrong, as the layer below said it.
        reason: String,
    },
    /// The policy returned an error result.
    #[error("policy `{policy}`: {reason}")]
    Policy {
        /// The policy's name.
        policy: String,
        /// What went wrong, as the layer below said it.
        reason: String,
    },
    /// The policy asked for more memory than the sandbox allows. The message names no
    /// front end's setting; `check` and the webhook each add their own way to raise it.
    #[error(
        "policy `{policy}` ran out of its {} sandbox memory{document}; raise the sandbox's memory limit or split the input",
        human_bytes(*limit)
    )]
    MemoryLimit {
        /// The policy's name.
        policy: String,
        /// The sandbox's memory limit in bytes.
        limit: usize,
        /// ` (the document is 200 MiB as JSON)`, or empty.
        document: String,
    },
    /// The policy returned an answer the host refuses (too large, undeclared rule id,
    /// a path that is not a JSON pointer). See [`OutputLimits`].
    #[error("policy `{policy}` returned an answer computeguard refuses: {reason}")]
    Output {
        /// The policy's name.
        policy: String,
        /// What went wrong, as the layer below said it.
        reason: String,
    },
    /// The host could not set up the sandbox.
    #[error("host error running policy `{policy}`: {reason}")]
    Host {
        /// The policy's name.
        policy: String,
        /// What went wrong, as the layer below said it.
        reason: String,
    },
}

impl EvalError {
    /// A short, bounded label for metrics and logs: `timeout`, `trap`, `memory`,
    /// `output`, `policy` or `host`.
    pub fn kind(&self) -> &'static str {
        match self {
            EvalError::Timeout { .. } => "timeout",
            EvalError::Trap { .. } => "trap",
            EvalError::MemoryLimit { .. } => "memory",
            EvalError::Output { .. } => "output",
            EvalError::Policy { .. } => "policy",
            EvalError::Host { .. } => "host",
        }
    }
}

/// `512 KiB`, `64 MiB`, `1.5 GiB`: sizes in messages.
pub fn human_bytes(n: usize) -> String {
    const KIB: f64 = 1024.0;
    let f = n as f64;
    if f >= KIB * KIB * KIB {
        format!("{:.1} GiB", f / (KIB * KIB * KIB))
    } else if f >= KIB * KIB {
        let mib = f / (KIB * KIB);
        if mib.fract() == 0.0 {
            format!("{mib:.0} MiB")
        } else {
            format!("{mib:.1} MiB")
        }
    } else if f >= KIB {
        format!("{:.0} KiB", f / KIB)
    } else {
        format!("{n} bytes")
    }
}

/// Why settings were refused.
#[derive(Debug, thiserror::Error)]
#[error("invalid settings for policy `{policy}`: {}", problems.join("; "))]
pub struct SettingsError {
    /// The policy's name.
    pub policy: String,
    /// One entry per problem: the JSON pointer into the settings and what was expected.
    pub problems: Vec<String>,
}

struct Shared {
    engine: wasmtime::Engine,
    linker: Linker<sandbox::Ctx>,
    linker_async: Linker<sandbox::Ctx>,
    config: EngineConfig,
    stop: Arc<AtomicBool>,
    /// Artifacts this engine compiled (cache misses), see [`Engine::compiled`].
    compiled: std::sync::atomic::AtomicUsize,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What a policy may import besides WASI: the types-only interface policies import
/// alongside `evaluator`, and the pack interface. A pre-initialised CEL runtime still
/// imports its pack but never reads it (the snapshot holds it decoded); asking anyway is
/// a bug, answered with a trap.
fn policy_imports(linker: &mut Linker<sandbox::Ctx>) -> wasmtime::Result<()> {
    linker.instance("computeguard:policy/types@0.2.0")?;
    linker.instance(imports::PACK_INTERFACE)?.func_wrap(
        "bytes",
        |_, ()| -> wasmtime::Result<(Vec<u8>,)> {
            Err(wasmtime::format_err!(
                "a pre-initialised policy asked for its pack again"
            ))
        },
    )?;
    Ok(())
}

/// The shared wasmtime engine. See the crate docs.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

impl Engine {
    /// Creates the engine and starts the epoch ticker thread (stopped on drop).
    pub fn new(config: EngineConfig) -> Result<Self, wasmtime::Error> {
        let mut wc = wasmtime::Config::new();
        wc.wasm_component_model(true);
        wc.epoch_interruption(true);
        // Policies are WASI 0.2 components with synchronous exports. Without the component
        // model's async ABI (on by default in wasmtime 48) an async call is one fiber,
        // not a task in the concurrent scheduler, and dropping its store disposes of no
        // task state (docs/benchmarks.md, section 10). A component that needs that ABI
        // is refused at compile time.
        wc.concurrency_support(false);
        // `perf record` can name the policies' compiled functions when wasmtime writes a
        // perf map (`/tmp/perf-PID.map`); profiling only, see docs/benchmarks.md.
        if std::env::var_os("COMPUTEGUARD_PERF_MAP").is_some() {
            wc.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        let mut pool = wasmtime::PoolingAllocationConfig::default();
        let slots = config.max_concurrent_instances.max(1);
        pool.total_component_instances(slots);
        pool.total_core_instances(slots * 8);
        pool.total_memories(slots * 4);
        pool.total_tables(slots * 4);
        // One fiber stack per evaluation driven by an async runtime (wasmtime's default,
        // 1000, costs a guard-page `mprotect` each at start).
        pool.total_stacks(slots);
        pool.max_memory_size(config.memory_limit);
        // Keep up to 1 MiB of each memory slot mapped between instances and reset
        // only the pages the last instance dirtied, found with `PAGEMAP_SCAN`
        // (Linux 6.7+; elsewhere wasmtime falls back to memset). Without the scan,
        // every fresh instance memset 1 MiB and then took ~20 page faults (a few µs
        // each in a VM): together about a third of an evaluation of `{}`.
        // Measurements: docs/benchmarks.md, section 1.
        pool.linear_memory_keep_resident(1 << 20);
        pool.pagemap_scan(wasmtime::Enabled::Auto);
        pool.table_keep_resident(1 << 16);
        wc.allocation_strategy(wasmtime::InstanceAllocationStrategy::Pooling(pool));
        let engine = wasmtime::Engine::new(&wc)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        policy_imports(&mut linker)?;
        // The same sandbox for evaluations driven by an async runtime
        // ([`Policy::evaluate_async`]): WASI's blocking wrappers would start a runtime
        // inside the caller's and panic it, so those stores get WASI's async functions.
        let mut linker_async = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker_async)?;
        policy_imports(&mut linker_async)?;
        let stop = Arc::new(AtomicBool::new(false));
        {
            let engine = engine.weak();
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("computeguard-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(EPOCH_TICK);
                        match engine.upgrade() {
                            Some(e) => e.increment_epoch(),
                            None => break,
                        }
                    }
                })
                .map_err(wasmtime::Error::from)?;
        }
        Ok(Engine {
            shared: Arc::new(Shared {
                engine,
                linker,
                linker_async,
                config,
                stop,
                compiled: Default::default(),
            }),
        })
    }

    /// How many artifacts this engine compiled because the cache did not hold them.
    ///
    /// Compiling leaves memory behind in the engine (Cranelift keeps its contexts for
    /// reuse) and in the allocator; a long-lived process that loaded with misses can
    /// load again with a new engine, from the now warm cache, and drop this one.
    pub fn compiled(&self) -> usize {
        self.shared.compiled.load(Ordering::Relaxed)
    }

    pub(crate) fn count_compile(&self) {
        self.shared.compiled.fetch_add(1, Ordering::Relaxed);
    }

    /// The configuration the engine was made with.
    pub fn config(&self) -> &EngineConfig {
        &self.shared.config
    }

    /// Loads a policy component: checks its imports, compiles it (or loads the cached
    /// artifact), pre-instantiates it and reads its metadata. `origin` names it in errors.
    pub fn load(&self, bytes: &[u8], origin: &str) -> Result<Policy, LoadError> {
        policy::load(self, bytes, origin, None)
    }

    /// [`Engine::load`], giving the policy `context` (see [`PolicyContext`]). A policy
    /// that refuses it is not loaded ([`LoadError::Context`]); a policy that does not
    /// export `computeguard:policy/context` loads without it
    /// ([`Policy::takes_context`] says which).
    pub fn load_with_context(
        &self,
        bytes: &[u8],
        origin: &str,
        context: Option<&PolicyContext>,
    ) -> Result<Policy, LoadError> {
        policy::load(self, bytes, origin, context)
    }
}
