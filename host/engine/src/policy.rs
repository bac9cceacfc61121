//! One loaded policy component and its evaluations.

use crate::{Engine, EngineConfig, EvalError, LoadError, SettingsError, cache, preinit};
use std::time::Duration;
use wasmtime::component::{Component, ResourceTable};
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({
        world: "policy",
        path: "../../wit",
    });
}

use bindings::computeguard::policy::types::Error as GuestError;
pub use bindings::computeguard::policy::types::{
    Operation, PolicyInfo, Request, ResourceRef, Response, RuleInfo, Severity, SourceKind,
    Violation,
};

/// WASI interfaces a policy may import. Everything else is refused at load time.
/// `computeguard:policy/types` carries only types (no functions); components that
/// export `evaluator` import it for the types `evaluator` uses.
const ALLOWED_IMPORTS: &[&str] = &[
    "wasi:cli/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    "computeguard:policy/types@0.1",
];

/// Per-store state: an empty WASI context and the limits.
pub(crate) struct Ctx {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl Ctx {
    /// An empty sandbox: no preopens, environment or arguments, frozen clocks, and
    /// the configured memory cap.
    pub(crate) fn new(config: &EngineConfig) -> Self {
        Ctx {
            wasi: WasiCtxBuilder::new()
                .wall_clock(FrozenClock)
                .monotonic_clock(FrozenClock)
                .build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(config.memory_limit)
                .instances(64)
                .tables(64)
                .memories(16)
                .build(),
        }
    }

    pub(crate) fn limits(&mut self) -> &mut StoreLimits {
        &mut self.limits
    }
}

impl WasiView for Ctx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A clock stuck at the Unix epoch: policies have no wall clock.
struct FrozenClock;

impl wasmtime_wasi::HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl wasmtime_wasi::HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

impl Request {
    /// A request for `document` (JSON text) at `as_of` (`YYYY-MM-DD`), no settings,
    /// source kind detected by the policy, no admission operation.
    pub fn new(document: impl Into<String>, as_of: impl Into<String>) -> Self {
        Request {
            document: document.into(),
            source_kind: SourceKind::Unknown,
            operation: Operation::None,
            settings: "{}".into(),
            as_of: as_of.into(),
        }
    }
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// A loaded, pre-instantiated policy component. Cheap to share across threads.
pub struct Policy {
    engine: Engine,
    pre: bindings::PolicyPre<Ctx>,
    info: PolicyInfo,
    digest: String,
    origin: String,
    schema: Option<jsonschema::Validator>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.info.name)
            .field("origin", &self.origin)
            .finish()
    }
}

pub(crate) fn load(engine: &Engine, bytes: &[u8], origin: &str) -> Result<Policy, LoadError> {
    let shared = &engine.shared;
    let invalid = |reason: String| LoadError::Invalid {
        origin: origin.to_string(),
        reason,
    };
    let digest = cache::digest(bytes);
    let dir = shared.config.cache_dir.as_deref();
    let prepared_key = format!("{digest}-prepared");
    let prepared = if !shared.config.preinitialise {
        None
    } else if let Some(component) = cache::cached(&shared.engine, dir, &prepared_key) {
        // A snapshot cached for these exact bytes means they split before: no need
        // to parse them again.
        Some(component)
    } else {
        preinit::split(bytes).and_then(|parts| {
            cache::load_or_compile(&shared.engine, dir, &prepared_key, || {
                let snapshot =
                    preinit::prepare(&shared.engine, &parts, || Ctx::new(&shared.config))?;
                Component::new(&shared.engine, snapshot)
            })
            .inspect_err(|e| {
                tracing::warn!(policy = origin, error = %format!("{e:#}"), "pre-initialisation failed; evaluating the policy as built")
            })
            .ok()
        })
    };
    let (component, prepared) = match prepared {
        Some(component) => (component, true),
        None => (
            cache::load_or_compile(&shared.engine, dir, &digest, || {
                Component::new(&shared.engine, bytes)
            })
            .map_err(|e| invalid(format!("{e:#}")))?,
            false,
        ),
    };
    check_imports(&shared.engine, &component, origin, prepared)?;
    let instance_pre = shared
        .linker
        .instantiate_pre(&component)
        .map_err(|e| invalid(format!("{e:#}")))?;
    let pre = bindings::PolicyPre::new(instance_pre).map_err(|e| LoadError::NotAPolicy {
        origin: origin.to_string(),
        reason: format!("{e:#}"),
    })?;
    let mut policy = Policy {
        engine: engine.clone(),
        pre,
        info: PolicyInfo {
            name: origin.to_string(),
            version: String::new(),
            source_digest: String::new(),
            rules: Vec::new(),
            settings_schema: None,
        },
        digest: format!("sha256:{digest}"),
        origin: origin.to_string(),
        schema: None,
    };
    let info = policy
        .call(|p, store| p.computeguard_policy_evaluator().call_metadata(store))
        .map_err(|e| LoadError::Metadata {
            origin: origin.to_string(),
            reason: e.to_string(),
        })?;
    if let Some(schema) = &info.settings_schema {
        let value: serde_json::Value =
            serde_json::from_str(schema).map_err(|e| LoadError::Schema {
                origin: origin.to_string(),
                reason: e.to_string(),
            })?;
        policy.schema = Some(
            jsonschema::validator_for(&value).map_err(|e| LoadError::Schema {
                origin: origin.to_string(),
                reason: e.to_string(),
            })?,
        );
    }
    policy.info = info;
    Ok(policy)
}

/// Whether a policy may import `name` (see [`check_imports`]).
pub(crate) fn import_allowed(name: &str, prepared: bool) -> bool {
    ALLOWED_IMPORTS.iter().any(|p| name.starts_with(p))
        || (prepared && name == preinit::PACK_INTERFACE)
}

/// Refuses imports outside [`ALLOWED_IMPORTS`]. A pre-initialised runtime still
/// imports its pack (the engine's linker answers with a trap: the snapshot never
/// asks), so `prepared` allows that one interface too.
fn check_imports(
    engine: &wasmtime::Engine,
    component: &Component,
    origin: &str,
    prepared: bool,
) -> Result<(), LoadError> {
    for (name, _) in component.component_type().imports(engine) {
        if !import_allowed(name, prepared) {
            return Err(LoadError::ForbiddenImport {
                origin: origin.to_string(),
                import: name.to_string(),
            });
        }
    }
    Ok(())
}

impl Policy {
    /// What the policy says about itself.
    pub fn info(&self) -> &PolicyInfo {
        &self.info
    }

    /// `sha256:<hex>` of the component bytes.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Where the policy came from (file path or `builtin:<name>`).
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Validates settings against the policy's JSON Schema (host side, `jsonschema`),
    /// then asks the policy itself.
    pub fn validate_settings(&self, settings: &serde_json::Value) -> Result<(), SettingsError> {
        let err = |problems: Vec<String>| SettingsError {
            policy: self.info.name.clone(),
            problems,
        };
        if let Some(schema) = &self.schema {
            let problems: Vec<String> = schema
                .iter_errors(settings)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("at `{at}`: {e}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(err(problems));
            }
        }
        let text = settings.to_string();
        match self.call(|p, store| {
            p.computeguard_policy_evaluator()
                .call_validate_settings(store, &text)
        }) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(err(vec![message])),
            Err(e) => Err(err(vec![e.to_string()])),
        }
    }

    /// Evaluates one request in a fresh instance.
    pub fn evaluate(&self, request: &Request) -> Result<Response, EvalError> {
        match self.call(|p, store| {
            p.computeguard_policy_evaluator()
                .call_evaluate(store, request)
        })? {
            Ok(response) => Ok(response),
            Err(e) => Err(EvalError::Policy {
                policy: self.info.name.clone(),
                reason: match e {
                    GuestError::InvalidDocument(m) => format!("invalid document: {m}"),
                    GuestError::InvalidSettings(m) => format!("invalid settings: {m}"),
                    GuestError::RuleFailed(m) => m,
                },
            }),
        }
    }

    /// Runs `f` against a fresh instance with the deadline and memory cap applied.
    fn call<T>(
        &self,
        f: impl FnOnce(&bindings::Policy, &mut Store<Ctx>) -> wasmtime::Result<T>,
    ) -> Result<T, EvalError> {
        let shared = &self.engine.shared;
        let name = || self.info.name.clone();
        let mut store = Store::new(&shared.engine, Ctx::new(&shared.config));
        store.limiter(|c| c.limits());
        let ticks = shared
            .config
            .deadline
            .as_millis()
            .div_ceil(crate::EPOCH_TICK.as_millis())
            .max(1);
        store.set_epoch_deadline(u64::try_from(ticks).unwrap_or(u64::MAX));
        store.epoch_deadline_trap();
        let instance = self
            .pre
            .instantiate(&mut store)
            .map_err(|e| classify(e, name(), shared.config.deadline))?;
        // The store (and instance) is dropped after this call, trapped or not.
        f(&instance, &mut store).map_err(|e| classify(e, name(), shared.config.deadline))
    }
}

fn classify(e: wasmtime::Error, policy: String, deadline: Duration) -> EvalError {
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => EvalError::Timeout { policy, deadline },
        Some(trap) => EvalError::Trap {
            policy,
            reason: trap.to_string(),
        },
        None => EvalError::Host {
            policy,
            reason: format!("{e:#}"),
        },
    }
}
