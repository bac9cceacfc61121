//! One admission decision: exclusions, the fast path for objects that declare no
//! compute, every policy in a fresh sandbox, severities, enforcement and failure modes,
//! and the opt-in mutations.

use crate::admission::{Answer, Operation, Review};
use crate::config::{Enforcement, FailureMode, WebhookConfig};
use crate::decision::{Decision, Failure, Finding, Mode, Verdict};
use crate::mutate;
use crate::template::{Hashed, Kept, TemplateCache};
use computeguard_engine::{Request, Response, SourceKind};
use computeguard_policy_core::model::{self, Source};
use computeguard_policyset::Severity;
use computeguard_policyset::template::Template;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Instant;

pub use computeguard_policyset::Level;

pub use computeguard_policyset::LoadedPolicy;

/// Everything one generation of the server evaluates with. Built by a [`crate::Loader`]
/// and swapped atomically on reload.
pub struct PolicySet {
    /// Every policy, run in this order on each request that reaches evaluation.
    pub policies: Vec<LoadedPolicy>,
    /// Severity overrides and `off`, by rule id.
    pub levels: BTreeMap<String, Level>,
    /// The config's `webhook:` section: enforcement, failure modes, exclusions,
    /// mutations and limits.
    pub webhook: WebhookConfig,
    /// Fixed evaluation date (`asOf`), else today in UTC at each request.
    pub as_of: Option<String>,
    /// The name-blind policies' answers by template (see [`crate::template`]); sized by
    /// `webhook.limits`, new with every generation.
    pub templates: TemplateCache,
}

impl PolicySet {
    /// A generation with an empty template cache sized by `webhook.limits`.
    pub fn new(
        policies: Vec<LoadedPolicy>,
        levels: BTreeMap<String, Level>,
        webhook: WebhookConfig,
        as_of: Option<String>,
    ) -> PolicySet {
        let templates = TemplateCache::new(
            webhook.limits.template_cache_entries,
            webhook.limits.template_cache_bytes,
        );
        PolicySet {
            policies,
            levels,
            webhook,
            as_of,
            templates,
        }
    }
}

impl Decision {
    fn skip(why: &'static str) -> Decision {
        Decision {
            answer: Answer::allow(),
            verdict: Verdict::Skipped,
            skipped: Some(why),
            findings: Vec::new(),
            failures: Vec::new(),
            refused_patches: Vec::new(),
            template: None,
        }
    }

    /// The object cannot be decoded (too deeply nested, a number out of range, ...):
    /// nothing can judge it, so the failure mode decides, as for a failed policy.
    fn undecodable(
        cfg: &WebhookConfig,
        review: &Review<'_>,
        mode: Mode,
        error: String,
    ) -> Decision {
        let failure = Failure {
            policy: "computeguard".into(),
            kind: "input",
            message: format!("the object cannot be decoded: {error}"),
            mode: cfg.failure_policy.0,
        };
        let answer = match mode {
            Mode::Validate => {
                validate_answer(cfg, &subject(review), &[], std::slice::from_ref(&failure))
            }
            Mode::Mutate => Answer::allow(),
        };
        Decision {
            verdict: if answer.allowed {
                Verdict::Warned
            } else {
                Verdict::Denied
            },
            answer,
            skipped: None,
            findings: Vec::new(),
            failures: vec![failure],
            refused_patches: Vec::new(),
            template: None,
        }
    }
}

/// Today in UTC as `YYYY-MM-DD`.
pub fn today() -> String {
    chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string()
}

/// An admission request that declares compute: what [`evaluate`] needs, owned, so it
/// can move to the slow lane (`crate::lanes`).
pub struct Prepared {
    /// The object as sent (JSON text), handed to every policy.
    document: String,
    object: Value,
    resources: Vec<model::Resource>,
    operation: computeguard_engine::Operation,
    /// How messages name the object: `Pod ml/trainer`.
    subject: String,
    /// The object's template, when some policy is name-blind and the cache is on, with
    /// its key's hash in the cache.
    template: Option<(Template, Hashed)>,
    /// What the cache held for the template when [`prepare`] looked (answers that some
    /// policies, not all, could take), so [`evaluate`] does not look again.
    kept: Option<crate::template::Answers>,
    /// The evaluation date.
    as_of: String,
}

/// Decides one admission request: [`prepare`], then [`evaluate`]. Blocking (it runs
/// the evaluation on a runtime of its own): for tests and tools, not for an async task.
pub fn decide(set: &PolicySet, review: &Review<'_>, mode: Mode, deadline: Instant) -> Decision {
    match prepare(set, review, mode) {
        Precheck::Evaluate(prepared) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build();
            match runtime {
                Ok(runtime) => runtime.block_on(evaluate(set, prepared, mode, deadline)),
                Err(e) => unevaluated(set, prepared, mode, &format!("cannot start a runtime: {e}")),
            }
        }
        Precheck::Decided(decision) => decision,
    }
}

/// What the native pre-check found.
pub enum Precheck {
    /// Decided without a sandbox: skipped, or undecodable and decided by the failure mode.
    Decided(Decision),
    /// Declares compute: the policies must run.
    Evaluate(Prepared),
}

/// The native part of a decision, which never starts a sandbox: exclusions, decoding
/// and the compute check. Only requests that declare compute start a sandbox.
pub fn prepare(set: &PolicySet, review: &Review<'_>, mode: Mode) -> Precheck {
    let decided = Precheck::Decided;
    let cfg = &set.webhook;
    let raw = match (review.operation, review.object) {
        (Operation::Create | Operation::Update, Some(raw)) => raw,
        _ => return decided(Decision::skip("operation without an object to check")),
    };
    if let Some(ns) = &review.namespace
        && cfg.exclude_namespaces.iter().any(|n| n == ns)
    {
        return decided(Decision::skip("excluded namespace"));
    }
    let object = match serde_json::from_str::<Value>(raw.get()) {
        Ok(o) => o,
        Err(e) => return decided(Decision::undecodable(cfg, review, mode, e.to_string())),
    };
    if let Some(Value::Object(labels)) = object.pointer("/metadata/labels")
        && cfg
            .exclude_labels
            .iter()
            .any(|(k, v)| labels.get(k).and_then(Value::as_str) == Some(v.as_str()))
    {
        return decided(Decision::skip("excluded label"));
    }
    let operation = match review.operation {
        Operation::Create => computeguard_engine::Operation::Create,
        Operation::Update => computeguard_engine::Operation::Update,
        Operation::Delete => computeguard_engine::Operation::Delete,
        Operation::Connect => computeguard_engine::Operation::Connect,
    };
    let as_of = set.as_of.clone().unwrap_or_else(today);
    // The object's template, when the cache is on. A template seen before decides here,
    // without reading the object's compute model: what its objects declare (and so
    // whether they declare compute, and whether each policy is name-blind for them) is
    // the same for all of them, since they differ only where no reader looks.
    let template = set
        .templates
        .enabled()
        .then(|| {
            let rest = format!("{:?}\n{as_of}", review.operation);
            Template::of(&object, raw.get(), &rest)
        })
        .flatten();
    // Hashed once, for the look-up here and the insert that may follow.
    let template = template.map(|t| {
        let hash = set.templates.hash(t.key());
        (t, hash)
    });
    let kept = template
        .as_ref()
        .and_then(|(t, hash)| set.templates.get(t.key(), *hash));
    if let (Some((t, _)), Some(kept)) = (&template, &kept) {
        match &**kept {
            Kept::Skipped(why) => {
                let mut decision = Decision::skip(why);
                decision.template = Some("hit");
                return decided(decision);
            }
            Kept::Answers {
                answers,
                every: true,
            } => {
                let mut out = Outcome::default();
                for (i, response) in answers {
                    if let Some(loaded) = set.policies.get(*i) {
                        out.add(set, loaded, t.answer(response));
                    }
                }
                // Only a mutation reads the compute model (for the patch it proposes).
                let resources = match mode {
                    Mode::Mutate => model::normalize(&object, Source::Kubernetes),
                    Mode::Validate => Vec::new(),
                };
                let prepared = Prepared {
                    document: String::new(),
                    object,
                    resources,
                    operation,
                    subject: subject(review),
                    template: None,
                    kept: None,
                    as_of,
                };
                let mut decision = finish(set, prepared, mode, out);
                decision.template = Some("hit");
                return decided(decision);
            }
            // Some policy reads the name: the object is read and evaluated below, the
            // name-blind policies answered from the template there.
            Kept::Answers { .. } => {}
        }
    }
    // The decoders decide what is compute: anything they do not recognise is admitted
    // without starting a sandbox (and the template, when there is one, is kept as such).
    let resources = model::normalize(&object, Source::Kubernetes);
    let skipped = if resources.is_empty() {
        Some("no compute declared")
    } else if set.policies.iter().all(LoadedPolicy::only_compute_facts)
        && !resources.iter().any(model::Resource::declares_compute)
    {
        Some("no compute fact declared")
    } else {
        None
    };
    if let Some(why) = skipped {
        if let Some((t, hash)) = template {
            set.templates.insert(t.into_key(), hash, Kept::Skipped(why));
        }
        return decided(Decision::skip(why));
    }
    let template = template.filter(|_| set.policies.iter().any(|p| p.name_blind_for(&resources)));
    Precheck::Evaluate(Prepared {
        document: raw.get().to_string(),
        object,
        resources,
        operation,
        subject: subject(review),
        template,
        kept: kept.filter(|k| matches!(**k, Kept::Answers { .. })),
        as_of,
    })
}

/// What the policies answered, after the configuration.
#[derive(Default)]
struct Outcome {
    findings: Vec<Finding>,
    failures: Vec<Failure>,
    refused_patches: Vec<String>,
}

impl Outcome {
    /// Adds `loaded`'s `response`: its findings at their configured severity and
    /// enforcement (rules turned off dropped), a patch it returned refused.
    fn add(&mut self, set: &PolicySet, loaded: &LoadedPolicy, response: Response) {
        let cfg = &set.webhook;
        for v in response.violations {
            let Some(severity) =
                computeguard_policyset::severity_of(&set.levels, &v.rule, v.severity.into())
            else {
                continue;
            };
            let enforcement = cfg
                .enforcement
                .get(&v.rule)
                .copied()
                .unwrap_or(match severity {
                    Severity::Error => Enforcement::Deny,
                    Severity::Warning => Enforcement::Warn,
                    Severity::Info => Enforcement::Audit,
                });
            self.findings.push(Finding {
                rule: v.rule,
                severity,
                enforcement,
                // Shown by kubectl on a terminal and written to the log: a policy's
                // control characters are escaped, not passed on.
                message: if v.message.chars().any(char::is_control) {
                    computeguard_engine::text::escape_control(&v.message)
                } else {
                    v.message
                },
                path: v.path,
                kind: v.resource.kind,
                resource: v.resource.name,
            });
        }
        if response.patch.is_some() {
            self.refused_patches.push(loaded.policy.info().name.clone());
        }
    }

    /// `loaded` could not answer: `e`, per its failure mode.
    fn fail(&mut self, set: &PolicySet, loaded: &LoadedPolicy, e: &computeguard_engine::EvalError) {
        let name = &loaded.policy.info().name;
        self.failures.push(Failure {
            policy: name.clone(),
            kind: e.kind(),
            message: match e {
                computeguard_engine::EvalError::MemoryLimit { .. } => {
                    format!("{e} (webhook.limits.memoryMiB)")
                }
                _ => e.to_string(),
            },
            mode: set.webhook.failure_mode(name),
        });
    }
}

/// Runs every policy on a prepared request, each stopped at `deadline` (wall clock),
/// and applies severities, enforcement and failure modes. The evaluations run on the
/// awaiting task and yield at every epoch tick after the first (see
/// `Policy::evaluate_async`); [`crate::lanes`] decides where a long one goes on.
pub async fn evaluate(
    set: &PolicySet,
    mut prepared: Prepared,
    mode: Mode,
    deadline: Instant,
) -> Decision {
    let request = |document: &str, loaded: &LoadedPolicy| Request {
        document: document.to_string(),
        source_kind: SourceKind::Kubernetes,
        operation: prepared.operation,
        settings: loaded.settings_text.clone(),
        as_of: prepared.as_of.clone(),
    };
    // The compute model `prepare` read, handed to the policies that take it
    // (`Policy::evaluate_read_async`) so the sandbox does not read the object again; only
    // for an object the policies would read as it is (`evaluate` refuses one that is not
    // what its source kind promises, and must go on doing so).
    let vouched = computeguard_policy_core::read::readable(&prepared.object)
        && computeguard_policy_core::read::source_mismatch(&prepared.object, Source::Kubernetes)
            .is_none();
    // The template's model, derived when a policy first evaluates the template.
    let mut template_model: Option<Option<std::borrow::Cow<'_, [model::Resource]>>> = None;
    // The name-blind policies' answers for this template, when another object had it.
    let cached = prepared.kept.take();
    let mut fresh: Vec<(usize, Response)> = Vec::new();
    let mut complete = true;
    let mut out = Outcome::default();
    for (i, loaded) in set.policies.iter().enumerate() {
        let template = prepared
            .template
            .as_ref()
            .map(|(t, _)| t)
            .filter(|_| loaded.name_blind_for(&prepared.resources));
        if let (Some(t), Some(Kept::Answers { answers, .. })) = (template, cached.as_deref())
            && let Some((_, response)) = answers.iter().find(|(at, _)| *at == i)
        {
            out.add(set, loaded, t.answer(response));
            continue;
        }
        if let Some(t) = template {
            let request = request(t.document(), loaded);
            let derived = template_model
                .get_or_insert_with(|| vouched.then(|| t.resources(&prepared.resources)).flatten());
            let answer = match derived {
                Some(model) => {
                    loaded
                        .policy
                        .evaluate_read_async(&request, model, deadline)
                        .await
                }
                None => loaded.policy.evaluate_async(&request, deadline).await,
            };
            match answer {
                Ok(response) => {
                    out.add(set, loaded, t.answer(&response));
                    fresh.push((i, response));
                    continue;
                }
                // The template's answer is kept only when it has one; the object is then
                // judged as it is, so a failure is always the object's own.
                Err(_) => complete = false,
            }
        }
        let request = request(&prepared.document, loaded);
        let answer = if vouched {
            loaded
                .policy
                .evaluate_read_async(&request, &prepared.resources, deadline)
                .await
        } else {
            loaded.policy.evaluate_async(&request, deadline).await
        };
        match answer {
            Ok(response) => out.add(set, loaded, response),
            Err(e) => out.fail(set, loaded, &e),
        }
    }
    let template = match (prepared.template.take(), cached) {
        (None, _) => None,
        (Some(_), Some(_)) => Some("hit"),
        (Some((t, hash)), None) => {
            if complete && !fresh.is_empty() {
                let every = set
                    .policies
                    .iter()
                    .all(|p| p.name_blind_for(&prepared.resources));
                set.templates.insert(
                    t.into_key(),
                    hash,
                    Kept::Answers {
                        answers: fresh,
                        every,
                    },
                );
            }
            Some("miss")
        }
    };
    let mut decision = finish(set, prepared, mode, out);
    decision.template = template;
    decision
}

/// Every policy failed with `why` before it ran (answered per each one's failure mode).
fn unevaluated(set: &PolicySet, prepared: Prepared, mode: Mode, why: &str) -> Decision {
    let failures = set
        .policies
        .iter()
        .map(|loaded| {
            let name = &loaded.policy.info().name;
            Failure {
                policy: name.clone(),
                kind: "host",
                message: why.to_string(),
                mode: set.webhook.failure_mode(name),
            }
        })
        .collect();
    let out = Outcome {
        failures,
        ..Outcome::default()
    };
    finish(set, prepared, mode, out)
}

/// The answer for what the policies found and which of them failed.
fn finish(set: &PolicySet, prepared: Prepared, mode: Mode, out: Outcome) -> Decision {
    let Outcome {
        findings,
        failures,
        refused_patches,
    } = out;
    let cfg = &set.webhook;
    let Prepared {
        object,
        resources,
        subject,
        ..
    } = prepared;
    let answer = match mode {
        Mode::Validate => validate_answer(cfg, &subject, &findings, &failures),
        Mode::Mutate => {
            let ops = mutate::patch(cfg, &object, &resources, &findings);
            Answer {
                allowed: true,
                status: None,
                warnings: Vec::new(),
                patch: (!ops.is_empty()).then_some(Value::Array(ops)),
            }
        }
    };
    let verdict = if !answer.allowed {
        Verdict::Denied
    } else if !answer.warnings.is_empty() {
        Verdict::Warned
    } else {
        Verdict::Allowed
    };
    Decision {
        answer,
        verdict,
        skipped: None,
        findings,
        failures,
        refused_patches,
        template: None,
    }
}

/// How messages name the object: `Deployment ml/trainer`.
fn subject(review: &Review<'_>) -> String {
    let kind = if review.kind.kind.is_empty() {
        "object"
    } else {
        review.kind.kind.as_str()
    };
    match (&review.namespace, &review.name) {
        (Some(ns), Some(n)) => format!("{kind} {ns}/{n}"),
        (None, Some(n)) => format!("{kind} {n}"),
        _ => kind.to_string(),
    }
}

fn validate_answer(
    cfg: &WebhookConfig,
    subject: &str,
    findings: &[Finding],
    failures: &[Failure],
) -> Answer {
    let mut deny: Vec<String> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();
    let mut code = 403;
    for f in findings {
        let line = format!("[{}] {}", f.rule, f.message);
        match f.enforcement {
            Enforcement::Deny => deny.push(line),
            Enforcement::Warn => warnings.push(line),
            Enforcement::Audit => {}
        }
    }
    for f in failures {
        match f.mode {
            FailureMode::Fail => {
                if deny.is_empty() {
                    code = 500;
                }
                deny.push(format!(
                    "policy `{}` could not be evaluated (failurePolicy Fail): {}",
                    f.policy, f.message
                ));
            }
            FailureMode::Ignore => warnings.push(format!(
                "policy `{}` could not be evaluated (failurePolicy Ignore): {}",
                f.policy, f.message
            )),
        }
    }
    if deny.is_empty() {
        return Answer {
            allowed: true,
            status: None,
            warnings,
            patch: None,
        };
    }
    if cfg.dry_run {
        let mut w: Vec<String> = deny
            .into_iter()
            .map(|d| format!("dry-run, would deny: {d}"))
            .collect();
        w.extend(warnings);
        return Answer {
            allowed: true,
            status: None,
            warnings: w,
            patch: None,
        };
    }
    let message = format!("computeguard denied {subject}: {}", deny.join("; "));
    Answer {
        allowed: false,
        status: Some((code, message)),
        warnings,
        patch: None,
    }
}

/// The failure mode's answer for a request turned away because `maxInFlight`
/// evaluations were running.
pub(crate) fn overloaded(set: &PolicySet, mode: Mode) -> Answer {
    unjudged(
        set,
        mode,
        503,
        "computeguard is overloaded: webhook.limits.maxInFlight requests are already being evaluated",
    )
}

/// The failure mode's answer for a request whose evaluation ran past
/// `evaluationTimeoutMs` (or panicked).
pub(crate) fn timed_out(set: &PolicySet, mode: Mode) -> Answer {
    unjudged(
        set,
        mode,
        504,
        "computeguard could not finish the evaluation within webhook.limits.evaluationTimeoutMs",
    )
}

/// The failure mode's answer for a request nothing could judge.
fn unjudged(set: &PolicySet, mode: Mode, code: u16, message: &str) -> Answer {
    match (mode, set.webhook.failure_policy.0) {
        (Mode::Validate, FailureMode::Fail) if !set.webhook.dry_run => Answer {
            allowed: false,
            status: Some((code, format!("{message} (failurePolicy Fail)"))),
            ..Answer::default()
        },
        _ => Answer {
            allowed: true,
            warnings: vec![format!(
                "{message}; admitted unchecked (failurePolicy Ignore)"
            )],
            ..Answer::default()
        },
    }
}
