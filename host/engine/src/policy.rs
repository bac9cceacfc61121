//! One loaded policy component and its evaluations.

use crate::bindings::{self, GuestError, PolicyInfo, Request, Response};
use crate::imports::{EVALUATOR_INTERFACE, READ_MODEL_INTERFACE, check_contract, check_imports};
use crate::output::{self, RawError, RawResponse};
use crate::sandbox::Ctx;
use crate::{Engine, EvalError, LoadError, PolicyContext, SettingsError, cache, preinit};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use wasmtime::component::{Component, ComponentExportIndex};
use wasmtime::{AsContextMut, Store};

/// A loaded, pre-instantiated policy component. Cheap to share across threads.
pub struct Policy {
    engine: Engine,
    pre: bindings::PolicyPre<Ctx>,
    /// The same component linked with WASI's async functions ([`Policy::evaluate_async`]).
    pre_async: wasmtime::component::InstancePre<Ctx>,
    info: PolicyInfo,
    digest: String,
    origin: String,
    schema: Option<jsonschema::Validator>,
    /// The rule ids the metadata declares: a violation naming any other is refused.
    declared: HashSet<String>,
    /// `evaluator.evaluate`, called through a lazily lifted signature (see `output`).
    evaluate: ComponentExportIndex,
    /// `read-model.evaluate-read`, when the component is computeguard's runtime and
    /// exports it with the expected signature ([`Policy::evaluate_read_async`]).
    evaluate_read: Option<ComponentExportIndex>,
    /// Context every fresh instance is configured with before use; none when there is
    /// none or the pre-initialised snapshot already holds it.
    context: Option<std::sync::Arc<str>>,
    /// The policy exports `computeguard:policy/context`.
    takes_context: bool,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.info.name)
            .field("origin", &self.origin)
            .finish()
    }
}

pub(crate) fn load(
    engine: &Engine,
    bytes: &[u8],
    origin: &str,
    context: Option<&PolicyContext>,
) -> Result<Policy, LoadError> {
    let shared = &engine.shared;
    let invalid = |reason: String| LoadError::Invalid {
        origin: origin.to_string(),
        reason,
    };
    let max = shared.config.max_component_bytes;
    if bytes.len() > max {
        return Err(LoadError::TooLarge {
            origin: origin.to_string(),
            size: bytes.len(),
            limit: max,
        });
    }
    let digest = cache::digest(bytes);
    let dir = shared.config.cache_dir.as_deref();
    // A snapshot holds the context it was configured with: the key names both.
    let prepared_key = match context {
        Some(c) => format!("{digest}-prepared-{}", c.digest()),
        None => format!("{digest}-prepared"),
    };
    let prepared = if !shared.config.preinitialise {
        None
    } else if let Some(component) = cache::cached(&shared.engine, dir, &prepared_key) {
        // A snapshot cached for these exact bytes means they split before: no need
        // to parse them again.
        Some(component)
    } else {
        match preinit::split(bytes).map(|parts| {
            cache::load_or_compile(&shared.engine, dir, &prepared_key, || {
                engine.count_compile();
                let snapshot = preinit::prepare(
                    &shared.engine,
                    &parts,
                    || Ctx::new(&shared.config),
                    context.map(PolicyContext::json),
                )?;
                Component::new(&shared.engine, snapshot)
            })
        }) {
            None => None,
            Some(Ok(component)) => Some(component),
            Some(Err(e)) => {
                if let Some(refused) = e.downcast_ref::<preinit::ContextRefused>() {
                    return Err(LoadError::Context {
                        origin: origin.to_string(),
                        reason: refused.0.clone(),
                    });
                }
                tracing::warn!(policy = origin, error = %format!("{e:#}"), "pre-initialisation failed; evaluating the policy as built");
                None
            }
        }
    };
    let (component, prepared) = match prepared {
        Some(component) => (component, true),
        None => (
            cache::load_or_compile(&shared.engine, dir, &digest, || {
                engine.count_compile();
                Component::new(&shared.engine, bytes)
            })
            .map_err(|e| invalid(format!("{e:#}")))?,
            false,
        ),
    };
    check_contract(&shared.engine, &component, origin)?;
    check_imports(&shared.engine, &component, origin, prepared)?;
    let instance_pre = shared
        .linker
        .instantiate_pre(&component)
        .map_err(|e| invalid(format!("{e:#}")))?;
    let pre = bindings::PolicyPre::new(instance_pre).map_err(|e| LoadError::NotAPolicy {
        origin: origin.to_string(),
        reason: format!("{e:#}"),
    })?;
    let pre_async = shared
        .linker_async
        .instantiate_pre(&component)
        .map_err(|e| invalid(format!("{e:#}")))?;
    let not_a_policy = |reason: &str| LoadError::NotAPolicy {
        origin: origin.to_string(),
        reason: reason.to_string(),
    };
    let evaluator = component
        .get_export_index(None, EVALUATOR_INTERFACE)
        .ok_or_else(|| not_a_policy(&format!("no `{EVALUATOR_INTERFACE}` export")))?;
    let evaluate = component
        .get_export_index(Some(&evaluator), "evaluate")
        .ok_or_else(|| not_a_policy("`evaluator` has no `evaluate`"))?;
    let takes_context = component
        .get_export_index(None, crate::imports::CONTEXT_INTERFACE)
        .is_some();
    let evaluate_read = component
        .get_export_index(None, READ_MODEL_INTERFACE)
        .and_then(|i| component.get_export_index(Some(&i), "evaluate-read"));
    let mut policy = Policy {
        engine: engine.clone(),
        pre,
        pre_async,
        declared: HashSet::new(),
        evaluate,
        evaluate_read: None,
        // Given to each fresh instance unless the snapshot holds it already.
        context: context
            .filter(|_| takes_context && !prepared)
            .map(|c| std::sync::Arc::from(c.json())),
        takes_context,
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
    if policy.context.is_some() {
        // Configure one instance now, so that a context the policy refuses is a load
        // error rather than every evaluation's.
        match policy.call(|_, _| Ok(())) {
            Err(EvalError::Policy { reason, .. }) => {
                return Err(LoadError::Context {
                    origin: origin.to_string(),
                    reason,
                });
            }
            Err(e) => {
                return Err(LoadError::Context {
                    origin: origin.to_string(),
                    reason: e.to_string(),
                });
            }
            Ok(()) => {}
        }
    }
    let mut policy_read = None;
    let info = policy
        .call(|p, store| {
            check_type::<EvaluateParams>(p, store, &evaluate)?;
            // An export of another shape is not the runtime's: evaluate as for any policy.
            policy_read =
                evaluate_read.filter(|i| check_type::<EvaluateReadParams>(p, store, i).is_ok());
            p.bindings(store)?
                .computeguard_policy_evaluator()
                .call_metadata(store)
        })
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
    output::check_metadata(&info).map_err(|problem| LoadError::InvalidMetadata {
        origin: origin.to_string(),
        problem,
    })?;
    policy.declared = info.rules.iter().map(|r| r.id.clone()).collect();
    policy.info = info;
    policy.evaluate_read = policy_read;
    Ok(policy)
}

impl Policy {
    /// What the policy says about itself.
    pub fn info(&self) -> &PolicyInfo {
        &self.info
    }

    /// The policy exports `computeguard:policy/context` and so reads the context it is
    /// loaded with ([`Engine::load_with_context`]); a policy that does not reads only
    /// what it has built in.
    pub fn takes_context(&self) -> bool {
        self.takes_context
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
        self.validate_settings_in_policy(&settings.to_string())
    }

    /// Asks only the policy's own `validate-settings` (settings as JSON text), without
    /// the host-side JSON Schema check of [`Policy::validate_settings`]: the answer an
    /// embedder gets who calls the component directly.
    pub fn validate_settings_in_policy(&self, settings: &str) -> Result<(), SettingsError> {
        let err = |problems: Vec<String>| SettingsError {
            policy: self.info.name.clone(),
            problems,
        };
        match self.call(|p, store| {
            p.bindings(store)?
                .computeguard_policy_evaluator()
                .call_validate_settings(store, settings)
        }) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(err(vec![message])),
            Err(e) => Err(err(vec![e.to_string()])),
        }
    }

    /// Evaluates one request in a fresh instance, within the engine's deadline.
    pub fn evaluate(&self, request: &Request) -> Result<Response, EvalError> {
        self.evaluate_until(request, Instant::now() + self.engine.shared.config.deadline)
    }

    /// Evaluates one request in a fresh instance that is stopped at `deadline` (wall
    /// clock) or at the engine's deadline from now, whichever comes first. What the
    /// policy returns is bounded by [`crate::EngineConfig::output`] and checked
    /// (declared rule ids, JSON-pointer paths) before it is copied to the host.
    pub fn evaluate_until(
        &self,
        request: &Request,
        deadline: Instant,
    ) -> Result<Response, EvalError> {
        let limits = &self.engine.shared.config.output;
        self.call_until(deadline, Some(request.document.len()), |p, store| {
            let func = p.bounded::<EvaluateParams>(store, &self.evaluate)?;
            let (raw,) = output::bounded(limits, || func.call(store.as_context_mut(), (request,)))?;
            Ok(self.response(raw))
        })?
    }

    /// [`Policy::evaluate_until`] for a caller on an async runtime (the webhook): the
    /// evaluation runs on the task that awaits it, with no thread hand-off.
    ///
    /// It runs without interruption for at least one epoch tick (1 ms), then yields to
    /// the runtime at every tick until it ends or `deadline` (or the engine's deadline)
    /// stops it, so a caller can move a long evaluation elsewhere after its first
    /// `Pending` (the webhook moves it off the threads that serve health checks).
    /// Same sandbox, limits and checks as `evaluate_until`; WASI's functions are the
    /// async ones, so a policy that writes or polls cannot block the runtime.
    pub async fn evaluate_async(
        &self,
        request: &Request,
        deadline: Instant,
    ) -> Result<Response, EvalError> {
        self.evaluate_with(request, None, deadline).await
    }

    /// `evaluate_async`, through `read-model` when `model` is given and the policy
    /// exports it.
    async fn evaluate_with(
        &self,
        request: &Request,
        model: Option<&[u8]>,
        deadline: Instant,
    ) -> Result<Response, EvalError> {
        let shared = &self.engine.shared;
        let deadline = self.deadline(deadline)?;
        let limits = &shared.config.output;
        // Two ticks: the next one may come at once, the one after comes no sooner than
        // a full tick from now. Then a yield at every tick, and a stop at `deadline`.
        let mut store = self.store(deadline, 2, wasmtime::UpdateDeadline::Yield);
        let called = output::Bounded::new(limits, async {
            let instance = self.pre_async.instantiate_async(&mut store).await?;
            if let Some(context) = &self.context
                && let Some(configure) = preinit::configure_func(&mut store, &instance)?
            {
                let (answer,) = configure
                    .call_async(&mut store, (context.to_string(),))
                    .await?;
                preinit::refused(answer)?;
            }
            let instance = Instance { instance };
            if let (Some(model), Some(index)) = (model, &self.evaluate_read) {
                let func = instance.bounded::<EvaluateReadParams>(&mut store, index)?;
                let (raw,) = func.call_async(&mut store, (request, model)).await?;
                return Ok(raw);
            }
            let func = instance.bounded::<EvaluateParams>(&mut store, &self.evaluate)?;
            let (raw,) = func.call_async(&mut store, (request,)).await?;
            Ok(raw)
        })
        .await;
        match called {
            Ok(raw) => self.response(raw),
            Err(e) => Err(classify(
                e,
                self.info.name.clone(),
                shared.config.deadline,
                store.data(),
                &shared.config,
                Some(request.document.len()),
            )),
        }
    }

    /// Whether the policy evaluates a model the host has read
    /// ([`Policy::evaluate_read_async`]): computeguard's pre-initialised runtime does.
    pub fn reads_models(&self) -> bool {
        self.evaluate_read.is_some()
    }

    /// [`Policy::evaluate_async`] of a document whose compute model the caller has
    /// already read: `resources` must be what `computeguard_policy_core::read::normalize`
    /// gives for `request.document` (a document the policy would read) at
    /// `request.source_kind`. A policy that [`reads_models`](Policy::reads_models) gets
    /// them (`read-model` in the WIT) and does not read the document again; any other is
    /// evaluated as by `evaluate_async`. The answer is the same either way; the sandbox,
    /// limits and checks are the same.
    pub async fn evaluate_read_async(
        &self,
        request: &Request,
        resources: &[computeguard_policy_core::model::Resource],
        deadline: Instant,
    ) -> Result<Response, EvalError> {
        if self.evaluate_read.is_none() {
            return self.evaluate_async(request, deadline).await;
        }
        let model = computeguard_policy_core::handoff::encode(resources);
        self.evaluate_with(request, Some(&model), deadline).await
    }

    /// Checks what `evaluate` returned (see [`Policy::evaluate_until`]).
    fn response(&self, raw: Result<RawResponse, RawError>) -> Result<Response, EvalError> {
        let limits = &self.engine.shared.config.output;
        let policy = || self.info.name.clone();
        match raw {
            Ok(raw) => output::check_response(raw, limits, &self.declared).map_err(|refused| {
                EvalError::Output {
                    policy: policy(),
                    reason: refused.0,
                }
            }),
            Err(e) => Err(EvalError::Policy {
                policy: policy(),
                reason: match output::error_text(e, limits) {
                    GuestError::InvalidDocument(m) => format!("invalid document: {m}"),
                    GuestError::InvalidSettings(m) => format!("invalid settings: {m}"),
                    GuestError::RuleFailed(m) => m,
                },
            }),
        }
    }

    /// Runs `f` against a fresh instance with the engine's deadline and memory cap.
    fn call<T: Send>(
        &self,
        f: impl FnOnce(&Instance, &mut Store<Ctx>) -> wasmtime::Result<T> + Send,
    ) -> Result<T, EvalError> {
        self.call_until(Instant::now() + self.engine.shared.config.deadline, None, f)
    }

    /// Runs `f` against a fresh instance, stopped at `deadline` (wall clock), with the
    /// memory cap applied. `document_bytes` names the input size when the memory cap
    /// is hit. Called from inside an async runtime (where wasmtime-wasi's blocking
    /// stdio would panic the runtime), the call runs on a scoped thread of its own.
    fn call_until<T: Send>(
        &self,
        deadline: Instant,
        document_bytes: Option<usize>,
        f: impl FnOnce(&Instance, &mut Store<Ctx>) -> wasmtime::Result<T> + Send,
    ) -> Result<T, EvalError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return std::thread::scope(|scope| {
                std::thread::Builder::new()
                    .name("computeguard-eval".into())
                    .spawn_scoped(scope, || self.call_here(deadline, document_bytes, f))
                    .map_err(|e| EvalError::Host {
                        policy: self.info.name.clone(),
                        reason: format!("cannot start an evaluation thread: {e}"),
                    })?
                    .join()
                    .unwrap_or_else(|_| {
                        Err(EvalError::Host {
                            policy: self.info.name.clone(),
                            reason: "the evaluation thread panicked".into(),
                        })
                    })
            });
        }
        self.call_here(deadline, document_bytes, f)
    }

    /// `deadline`, capped at the engine's own evaluation deadline from now; `Timeout`
    /// when it has already passed.
    fn deadline(&self, deadline: Instant) -> Result<Instant, EvalError> {
        let budget = self.engine.shared.config.deadline;
        let deadline = deadline.min(Instant::now() + budget);
        if Instant::now() >= deadline {
            return Err(EvalError::Timeout {
                policy: self.info.name.clone(),
                deadline: budget,
            });
        }
        Ok(deadline)
    }

    /// A store with the sandbox's context and memory cap, stopped at `deadline`. The
    /// epoch ticks every millisecond; from the `first` tick on, at each tick the store
    /// compares the wall clock with the deadline (so a busy machine, with late ticks,
    /// cannot stretch it) and otherwise goes on with `then(1)`: `Continue` or `Yield`.
    fn store(
        &self,
        deadline: Instant,
        first: u64,
        then: fn(u64) -> wasmtime::UpdateDeadline,
    ) -> Store<Ctx> {
        let shared = &self.engine.shared;
        let mut store = Store::new(&shared.engine, Ctx::new(&shared.config));
        store.limiter(|c| c.limiter());
        store.set_epoch_deadline(first);
        store.epoch_deadline_callback(move |_| {
            Ok(if Instant::now() >= deadline {
                wasmtime::UpdateDeadline::Interrupt
            } else {
                then(1)
            })
        });
        store
    }

    fn call_here<T>(
        &self,
        deadline: Instant,
        document_bytes: Option<usize>,
        f: impl FnOnce(&Instance, &mut Store<Ctx>) -> wasmtime::Result<T>,
    ) -> Result<T, EvalError> {
        let shared = &self.engine.shared;
        let deadline = self.deadline(deadline)?;
        let budget = shared.config.deadline;
        let mut store = self.store(deadline, 1, wasmtime::UpdateDeadline::Continue);
        let fail = |store: &Store<Ctx>, e: wasmtime::Error| {
            classify(
                e,
                self.info.name.clone(),
                budget,
                store.data(),
                &shared.config,
                document_bytes,
            )
        };
        let instance = match self.pre.instance_pre().instantiate(&mut store) {
            Ok(i) => i,
            Err(e) => return Err(fail(&store, e)),
        };
        if let Some(context) = &self.context {
            let configured = preinit::configure_func(&mut store, &instance).and_then(|f| match f {
                Some(configure) => {
                    preinit::refused(configure.call(&mut store, (context.to_string(),))?.0)
                }
                None => Ok(()),
            });
            if let Err(e) = configured {
                return Err(fail(&store, e));
            }
        }
        let handle = Instance { instance };
        // The store (and instance) is dropped after this call, trapped or not.
        f(&handle, &mut store).map_err(|e| fail(&store, e))
    }
}

/// A fresh instance. `evaluate` is called through the bounded signature; the other
/// exports through the generated bindings, built on demand (they cost a few name
/// lookups and type checks, which the per-document path skips).
pub(crate) struct Instance {
    instance: wasmtime::component::Instance,
}

impl Instance {
    fn bindings(&self, store: &mut Store<Ctx>) -> wasmtime::Result<bindings::Policy> {
        bindings::Policy::new(store, &self.instance)
    }

    /// An evaluating export (`evaluate`, `evaluate-read`) with the bounded result types.
    /// Its type was checked against them when the policy was loaded ([`check_type`]).
    fn bounded<P>(
        &self,
        store: &mut Store<Ctx>,
        index: &ComponentExportIndex,
    ) -> wasmtime::Result<BoundedFunc<P>>
    where
        P: wasmtime::component::ComponentNamedList + wasmtime::component::Lower,
    {
        let func = self
            .instance
            .get_func(store.as_context_mut(), index)
            .ok_or_else(|| wasmtime::format_err!("an evaluating export is missing"))?;
        // SAFETY: the component is the one whose export was type-checked against this
        // signature at load time, and every instance of it has the same types.
        #[allow(unsafe_code)]
        Ok(unsafe { BoundedFunc::<P>::new_unchecked(func) })
    }
}

/// An export that answers a `response` or an `error`, lifted lazily (see `output`).
type BoundedFunc<P> = wasmtime::component::TypedFunc<P, (Result<RawResponse, RawError>,)>;
/// `evaluator.evaluate`.
type EvaluateParams<'a> = (&'a Request,);
/// `read-model.evaluate-read`.
type EvaluateReadParams<'a> = (&'a Request, &'a [u8]);

/// Checks once, at load, that an evaluating export has the signature the bounded lift
/// expects.
fn check_type<P>(
    instance: &Instance,
    store: &mut Store<Ctx>,
    index: &ComponentExportIndex,
) -> wasmtime::Result<()>
where
    P: wasmtime::component::ComponentNamedList + wasmtime::component::Lower,
{
    instance
        .instance
        .get_typed_func::<P, (Result<RawResponse, RawError>,)>(store, index)
        .map(|_| ())
}

fn classify(
    e: wasmtime::Error,
    policy: String,
    deadline: Duration,
    ctx: &Ctx,
    config: &crate::EngineConfig,
    document_bytes: Option<usize>,
) -> EvalError {
    let printed = ctx
        .printed()
        .map(|p| format!("; it printed: {p}"))
        .unwrap_or_default();
    if let Some(refused) = e.downcast_ref::<output::Refused>() {
        return EvalError::Output {
            policy,
            reason: refused.0.clone(),
        };
    }
    match e.downcast_ref::<wasmtime::Trap>() {
        Some(wasmtime::Trap::Interrupt) => EvalError::Timeout { policy, deadline },
        Some(_) | None if ctx.memory_denied() => EvalError::MemoryLimit {
            policy,
            limit: config.memory_limit,
            document: document_bytes
                .map(|n| format!(" (the document is {} as JSON)", crate::human_bytes(n)))
                .unwrap_or_default(),
        },
        Some(trap) => EvalError::Trap {
            policy,
            reason: format!("{trap}{printed}"),
        },
        None => EvalError::Host {
            policy,
            reason: format!("{e:#}{printed}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EngineConfig;
    use crate::bindings::SourceKind;

    /// The object of the contract's GPU Pod review, as the webhook hands it over.
    fn gpu_pod() -> anyhow::Result<String> {
        let review: serde_json::Value = serde_json::from_str(include_str!(
            "../../../examples/embed-cases/contract/admission-review-gpu-pod.json"
        ))?;
        Ok(review["request"]["object"].to_string())
    }

    #[test]
    fn a_gpu_pod_is_evaluated_in_the_snapshot_heap_without_growing_memory() -> anyhow::Result<()> {
        // Growing a memory, and shrinking it back for the next instance, changes page
        // protections: on the webhook each shrink flushed every CPU's TLB. The built-in
        // policy's snapshot keeps a free heap (`HEAP_RESERVE` in the CEL runtime) so an
        // ordinary review never grows it. Before the reserve this review grew it once.
        let engine = Engine::new(EngineConfig {
            cache_dir: None,
            ..EngineConfig::default()
        })?;
        let policy = engine.load(computeguard_builtins::BUILTINS[0].component, "builtin")?;
        let request = Request {
            source_kind: SourceKind::Kubernetes,
            ..Request::new(gpu_pod()?, "2026-11-22")
        };
        let (answered, grown) = policy.call(|p, store| {
            let func = p.bounded::<EvaluateParams>(store, &policy.evaluate)?;
            let (raw,) = func.call(store.as_context_mut(), (&request,))?;
            Ok((raw.is_ok(), store.data().memory_grown()))
        })?;
        assert!(answered, "the policy answered");
        assert_eq!(grown, 0, "memory grew during the evaluation");
        // The same from the model the webhook hands over.
        let object: serde_json::Value = serde_json::from_str(&request.document)?;
        let model =
            computeguard_policy_core::handoff::encode(&computeguard_policy_core::model::normalize(
                &object,
                computeguard_policy_core::model::Source::Kubernetes,
            ));
        let index = policy.evaluate_read.expect("the snapshot reads models");
        let (answered, grown) = policy.call(|p, store| {
            let func = p.bounded::<EvaluateReadParams>(store, &index)?;
            let (raw,) = func.call(store.as_context_mut(), (&request, model.as_slice()))?;
            Ok((raw.is_ok(), store.data().memory_grown()))
        })?;
        assert!(answered, "the policy answered from the model");
        assert_eq!(grown, 0, "memory grew during the evaluation from the model");
        Ok(())
    }
}
