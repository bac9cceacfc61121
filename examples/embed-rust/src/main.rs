//! Evaluates JSON documents with a computeguard policy component from Rust, using
//! only the WIT contract (`wit/policy.wit`) and wasmtime: no computeguard crate.
//!
//! ```text
//! embed-rust POLICY.wasm --as-of YYYY-MM-DD [--settings FILE] [--context FILE] [--timings] DOCUMENT.json...
//! embed-rust POLICY.wasm --as-of YYYY-MM-DD [--context FILE] --contract TABLE.jsonl [--reuse]
//! ```
//!
//! `--context` gives every fresh instance the JSON text of FILE through the contract's
//! `context` interface (`configure`: catalog overlays and Azure facts) before its first
//! call; a context the policy refuses is an error (exit 2).
//!
//! `--contract` runs a table of calls (docs/embedding.md, "The contract test"): each
//! line names a `call` (`evaluate` or `validate-settings`), the `settings` text, and for
//! `evaluate` a `document` file (relative to the table) and a `source-kind`. Each call
//! gets a fresh instance; with `--reuse`, every call goes to one instance instead. A
//! call with a `context` file (relative to the table) always gets a fresh instance,
//! configured with it first; when the policy refuses it, the line is
//! `{"case":…,"configure":"<the policy's error>"}` and the call is not made.
//!
//! Prints one line per document in the canonical form of `docs/embedding.md`
//! (the Node and Python examples print the same bytes). `--timings` adds one JSON
//! line on stderr: compile, instantiate and first-evaluation times.
//!
//! Exit codes: 0 every document evaluated (with or without violations, or with a
//! policy error result, which is printed); 2 usage error, unreadable file, a policy
//! that cannot be loaded, refused settings, or a trap.

use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;
use wasmtime::component::{Component, InstancePre, Linker, ResourceTable};
use wasmtime::error::Context as _;
use wasmtime::{Config, Engine, Result, Store, StoreLimits, StoreLimitsBuilder, bail, format_err};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

// The host side of the contract, generated from the same WIT file the policies use.
// `policy-with-context` is the world of every policy `computeguard build` makes: the
// evaluator plus `context` (configure). Each export is bound on its own (its
// `GuestIndices`), so a policy without `context`, which reads only its own built-in
// facts, still loads; only `--context` needs it.
mod bindings {
    wasmtime::component::bindgen!({
        world: "policy-with-context",
        path: "../../wit",
    });
}

use bindings::exports::computeguard::policy::{context, evaluator};

use bindings::computeguard::policy::types::{
    Error as PolicyError, Operation, Request, SourceKind, Violation,
};

/// Linear memory one policy instance may use.
const MEMORY_LIMIT: usize = 64 << 20;
/// Instructions (roughly) one call may execute before it traps: a runaway policy
/// stops instead of hanging the host. An evaluation of the built-in pack uses a
/// few million.
const FUEL: u64 = 2_000_000_000;

/// Per-store state: an empty WASI context (no files, no environment, no
/// network, stdio discarded) and the memory cap.
struct Host {
    wasi: WasiCtx,
    table: ResourceTable,
    limits: StoreLimits,
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

struct Args {
    policy: PathBuf,
    as_of: String,
    settings: Option<PathBuf>,
    context: Option<PathBuf>,
    timings: bool,
    contract: Option<PathBuf>,
    reuse: bool,
    documents: Vec<PathBuf>,
}

const USAGE: &str = "usage: embed-rust POLICY.wasm --as-of YYYY-MM-DD [--settings FILE] [--context FILE] [--timings] DOCUMENT.json...\n       embed-rust POLICY.wasm --as-of YYYY-MM-DD [--context FILE] --contract TABLE.jsonl [--reuse]";

fn parse_args() -> Result<Args> {
    let mut policy = None;
    let mut as_of = None;
    let mut settings = None;
    let mut context = None;
    let mut timings = false;
    let mut contract = None;
    let mut reuse = false;
    let mut documents = Vec::new();
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--as-of") => {
                let v = args.next().context("`--as-of` needs a date (YYYY-MM-DD)")?;
                as_of = Some(
                    v.into_string()
                        .map_err(|_| format_err!("`--as-of` needs a date (YYYY-MM-DD)"))?,
                );
            }
            Some("--settings") => {
                settings = Some(PathBuf::from(
                    args.next().context("`--settings` needs a file")?,
                ));
            }
            Some("--context") => {
                context = Some(PathBuf::from(
                    args.next().context("`--context` needs a file")?,
                ));
            }
            Some("--timings") => timings = true,
            Some("--contract") => {
                contract = Some(PathBuf::from(
                    args.next().context("`--contract` needs a table file")?,
                ));
            }
            Some("--reuse") => reuse = true,
            Some(s) if s.starts_with("--") => bail!("unknown option `{s}`\n{USAGE}"),
            _ if policy.is_none() => policy = Some(PathBuf::from(arg)),
            _ => documents.push(PathBuf::from(arg)),
        }
    }
    Ok(Args {
        policy: policy.context(USAGE)?,
        as_of: as_of.with_context(|| format!("`--as-of` is required\n{USAGE}"))?,
        settings,
        context,
        timings,
        contract,
        reuse,
        documents,
    })
}

/// One violation in the canonical output (field order is part of the format).
#[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
struct CanonicalViolation {
    rule: String,
    severity: &'static str,
    message: String,
    path: String,
    remediation: String,
    resource: CanonicalResource,
}

#[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
struct CanonicalResource {
    kind: String,
    name: String,
}

#[derive(Serialize)]
struct CanonicalError {
    kind: &'static str,
    message: String,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Line {
    Violations {
        case: String,
        violations: Vec<CanonicalViolation>,
    },
    Error {
        case: String,
        error: CanonicalError,
    },
    Settings {
        case: String,
        #[serde(rename = "validate-settings")]
        validate_settings: Option<String>,
    },
    /// The policy refused the call's context; the call was not made.
    Configure {
        case: String,
        configure: String,
    },
}

impl From<Violation> for CanonicalViolation {
    fn from(v: Violation) -> Self {
        use bindings::computeguard::policy::types::Severity;
        CanonicalViolation {
            rule: v.rule,
            severity: match v.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "info",
            },
            message: v.message,
            path: v.path,
            remediation: v.remediation,
            resource: CanonicalResource {
                kind: v.resource.kind,
                name: v.resource.name,
            },
        }
    }
}

/// The loaded policy: compiled and pre-instantiated once; every call gets a fresh
/// store and instance, so no state leaks from one document to the next.
struct Policy {
    path: PathBuf,
    engine: Engine,
    pre: InstancePre<Host>,
    evaluator: evaluator::GuestIndices,
    /// None when the policy does not export `computeguard:policy/context`.
    context: Option<context::GuestIndices>,
}

/// A fresh instance: its store and its exports.
struct Instance {
    store: Store<Host>,
    evaluator: evaluator::Guest,
    context: Option<context::Guest>,
}

impl Policy {
    fn load(path: &Path) -> Result<Self> {
        let mut config = Config::new();
        config.consume_fuel(true);
        let engine = Engine::new(&config)?;
        let component = Component::from_file(&engine, path)
            .with_context(|| format!("`{}` is not a loadable component", path.display()))?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
        // Policies import the types-only interface of the contract; it has no
        // functions, so an empty instance satisfies it.
        linker.instance("computeguard:policy/types@0.2.0")?;
        let pre = linker.instantiate_pre(&component).with_context(|| {
            format!(
                "`{}` imports something this host does not provide",
                path.display()
            )
        })?;
        let evaluator = evaluator::GuestIndices::new(&pre).with_context(|| {
            format!(
                "`{}` does not export computeguard:policy/evaluator@0.2.0",
                path.display()
            )
        })?;
        let context = context::GuestIndices::new(&pre).ok();
        Ok(Policy {
            path: path.to_path_buf(),
            engine,
            pre,
            evaluator,
            context,
        })
    }

    fn instantiate(&self) -> Result<Instance> {
        let host = Host {
            // `WasiCtxBuilder::new()` grants nothing: no preopened directories,
            // no environment or arguments, no sockets, stdin empty, stdout and
            // stderr discarded.
            wasi: WasiCtxBuilder::new().build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new().memory_size(MEMORY_LIMIT).build(),
        };
        let mut store = Store::new(&self.engine, host);
        store.limiter(|h| &mut h.limits);
        store.set_fuel(FUEL)?;
        let instance = self.pre.instantiate(&mut store)?;
        Ok(Instance {
            evaluator: self.evaluator.load(&mut store, &instance)?,
            context: match &self.context {
                Some(indices) => Some(indices.load(&mut store, &instance)?),
                None => None,
            },
            store,
        })
    }

    /// A fresh instance given `context` (when there is one) before any other call.
    /// The second value is the policy's refusal, which leaves the instance as it was.
    fn instantiate_with(&self, context: Option<&str>) -> Result<(Instance, Option<String>)> {
        let mut instance = self.instantiate()?;
        let refused = match context {
            Some(text) => {
                let Some(configure) = &instance.context else {
                    bail!(
                        "`{}` does not export computeguard:policy/context@0.2.0, so it takes no context",
                        self.path.display()
                    );
                };
                configure
                    .call_configure(&mut instance.store, text)
                    .context("the policy trapped in `configure`")?
                    .err()
            }
            None => None,
        };
        Ok((instance, refused))
    }
}

/// The text of a `--context` file.
fn read_context(path: Option<&Path>) -> Result<Option<String>> {
    path.map(|p| {
        std::fs::read_to_string(p).with_context(|| format!("cannot read context `{}`", p.display()))
    })
    .transpose()
}

/// The error for a `--context` file the policy refuses (the name comes from a call
/// on the same instance, which a refused context leaves as it was).
fn context_refused(
    instance: &mut Instance,
    file: Option<&Path>,
    problem: String,
) -> wasmtime::Error {
    let name = instance
        .evaluator
        .call_metadata(&mut instance.store)
        .map_or_else(|_| "?".to_string(), |info| info.name);
    let place = file
        .map(|p| format!(" in `{}`", p.display()))
        .unwrap_or_default();
    format_err!("policy `{name}` refuses the context{place}: {problem}")
}

fn error_line(case: String, error: PolicyError) -> Line {
    let (kind, message) = match error {
        PolicyError::InvalidDocument(m) => ("invalid-document", m),
        PolicyError::InvalidSettings(m) => ("invalid-settings", m),
        PolicyError::RuleFailed(m) => ("rule-failed", m),
    };
    Line::Error {
        case,
        error: CanonicalError { kind, message },
    }
}

/// One line of a contract table.
#[derive(serde::Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct ContractCall {
    case: String,
    call: String,
    #[serde(default)]
    document: Option<String>,
    #[serde(default)]
    source_kind: Option<String>,
    settings: String,
    /// A context file (relative to the table): the call gets a fresh instance,
    /// configured with it first.
    #[serde(default)]
    context: Option<String>,
}

fn source_kind(name: &str) -> Result<SourceKind> {
    Ok(match name {
        "kubernetes" => SourceKind::Kubernetes,
        "admission-review" => SourceKind::AdmissionReview,
        "azure-ml" => SourceKind::AzureMl,
        "arm" => SourceKind::Arm,
        "bicep" => SourceKind::Bicep,
        "terraform" => SourceKind::Terraform,
        "unknown" => SourceKind::Unknown,
        other => bail!("unknown source kind `{other}`"),
    })
}

fn canonical_result(
    case: String,
    result: std::result::Result<bindings::computeguard::policy::types::Response, PolicyError>,
) -> Line {
    match result {
        Ok(response) => {
            let mut violations: Vec<CanonicalViolation> =
                response.violations.into_iter().map(Into::into).collect();
            violations.sort();
            Line::Violations { case, violations }
        }
        Err(e) => error_line(case, e),
    }
}

/// `--contract`: every call of the table, each on a fresh instance (or, with
/// `--reuse`, all on one), one canonical line per call.
fn run_contract(args: &Args, table: &Path) -> Result<()> {
    let context = read_context(args.context.as_deref())?;
    let policy = Policy::load(&args.policy)?;
    let text = std::fs::read_to_string(table)
        .with_context(|| format!("cannot read `{}`", table.display()))?;
    let dir = table.parent().unwrap_or(Path::new("."));
    let mut shared: Option<Instance> = None;
    let mut out = String::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let call: ContractCall = serde_json::from_str(line)
            .with_context(|| format!("`{}` line {}", table.display(), i + 1))?;
        let mut own: Option<Instance>;
        let instance = if let Some(file) = &call.context {
            // A call with its own context: always a fresh instance, configured first.
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read context `{}`", path.display()))?;
            let (instance, refused) = policy.instantiate_with(Some(&text))?;
            if let Some(problem) = refused {
                let line = Line::Configure {
                    case: call.case,
                    configure: problem,
                };
                out.push_str(&serde_json::to_string(&line)?);
                out.push('\n');
                continue;
            }
            own = Some(instance);
            own.as_mut().context("no instance")?
        } else {
            if shared.is_none() || !args.reuse {
                let (mut instance, refused) = policy.instantiate_with(context.as_deref())?;
                if let Some(problem) = refused {
                    return Err(context_refused(
                        &mut instance,
                        args.context.as_deref(),
                        problem,
                    ));
                }
                shared = Some(instance);
            }
            shared.as_mut().context("no instance")?
        };
        let (evaluator, store) = (&instance.evaluator, &mut instance.store);
        let line = match call.call.as_str() {
            "validate-settings" => Line::Settings {
                case: call.case,
                validate_settings: evaluator
                    .call_validate_settings(&mut *store, &call.settings)?
                    .err(),
            },
            "evaluate" => {
                let path = dir.join(
                    call.document
                        .as_deref()
                        .context("`evaluate` needs a `document`")?,
                );
                let request = Request {
                    document: std::fs::read_to_string(&path)
                        .with_context(|| format!("cannot read `{}`", path.display()))?,
                    source_kind: source_kind(call.source_kind.as_deref().unwrap_or("unknown"))?,
                    operation: Operation::None,
                    settings: call.settings,
                    as_of: args.as_of.clone(),
                };
                let result = evaluator
                    .call_evaluate(&mut *store, &request)
                    .with_context(|| format!("the policy trapped on case `{}`", call.case))?;
                canonical_result(call.case, result)
            }
            other => bail!("unknown call `{other}` on line {}", i + 1),
        };
        out.push_str(&serde_json::to_string(&line)?);
        out.push('\n');
    }
    print!("{out}");
    Ok(())
}

fn run() -> Result<()> {
    let args = parse_args()?;
    if let Some(table) = &args.contract {
        return run_contract(&args, table);
    }
    let settings = match &args.settings {
        Some(p) => std::fs::read_to_string(p)
            .with_context(|| format!("cannot read settings `{}`", p.display()))?,
        None => "{}".to_string(),
    };
    let context = read_context(args.context.as_deref())?;

    let start = Instant::now();
    let policy = Policy::load(&args.policy)?;
    let compiled = start.elapsed();

    let start = Instant::now();
    let (mut first, refused) = policy.instantiate_with(context.as_deref())?;
    let instantiated = start.elapsed();
    if let Some(problem) = refused {
        return Err(context_refused(
            &mut first,
            args.context.as_deref(),
            problem,
        ));
    }
    let Instance {
        mut store,
        evaluator,
        ..
    } = first;
    let info = evaluator.call_metadata(&mut store)?;
    let refused = |problem: String| {
        let place = args
            .settings
            .as_ref()
            .map(|p| format!(" in `{}`", p.display()))
            .unwrap_or_default();
        format_err!(
            "policy `{}` refuses the settings{place}: {problem}",
            info.name
        )
    };
    // The host checks settings against the policy's JSON Schema, for its library's
    // wording, then asks the policy, which checks them against the same schema itself.
    if let Some(schema) = &info.settings_schema {
        let schema: serde_json::Value = serde_json::from_str(schema)
            .with_context(|| format!("policy `{}` has an invalid settings schema", info.name))?;
        let validator = jsonschema::validator_for(&schema).map_err(|e| {
            format_err!("policy `{}` has an invalid settings schema: {e}", info.name)
        })?;
        let value: serde_json::Value =
            serde_json::from_str(&settings).map_err(|e| refused(format!("not valid JSON: {e}")))?;
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("at `{}`: {e}", e.instance_path()))
            .collect();
        if !problems.is_empty() {
            return Err(refused(problems.join("; ")));
        }
    }
    if let Err(problem) = evaluator.call_validate_settings(&mut store, &settings)? {
        return Err(refused(problem));
    }

    let mut first_evaluation = None;
    let mut out = String::new();
    for doc in &args.documents {
        let case = doc
            .file_name()
            .map_or_else(|| doc.display().to_string(), |n| n.to_string_lossy().into());
        let document = std::fs::read_to_string(doc)
            .with_context(|| format!("cannot read `{}`", doc.display()))?;
        let request = Request {
            document,
            source_kind: SourceKind::Unknown,
            operation: Operation::None,
            settings: settings.clone(),
            as_of: args.as_of.clone(),
        };
        let start = Instant::now();
        let (mut fresh, refused) = policy.instantiate_with(context.as_deref())?;
        if let Some(problem) = refused {
            // The first instance took this context; a policy that answers otherwise now
            // is not deterministic.
            bail!(
                "policy `{}` refused the context it accepted before: {problem}",
                info.name
            );
        }
        let result = fresh
            .evaluator
            .call_evaluate(&mut fresh.store, &request)
            .with_context(|| format!("policy `{}` trapped on `{}`", info.name, doc.display()))?;
        first_evaluation.get_or_insert(start.elapsed());
        let line = canonical_result(case, result);
        out.push_str(&serde_json::to_string(&line)?);
        out.push('\n');
    }
    print!("{out}");
    if args.timings {
        let ms = |d: std::time::Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
        eprintln!(
            "{}",
            serde_json::json!({
                "host": "rust",
                "compileMs": ms(compiled),
                "instantiateMs": ms(instantiated),
                "firstEvaluateMs": first_evaluation.map(ms),
            })
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
