//! Loading the policy set both front ends run: the built-in policies, then the extra
//! ones (`policies:` in `computeguard.yaml`, then the front end's own, e.g. `--policy`).
//! A `.yaml` pack is compiled and composed with the CEL runtime on the fly; a `.wasm`
//! component is loaded as it is. A pinned policy's digest is checked before a line of it
//! is compiled or run, every policy's settings are validated, and every rule id the
//! configuration names must belong to a loaded policy.

use crate::LoadedPolicy;
use crate::config::{Config, PolicyRef};
use computeguard_compiler::{CompiledPack, ComposeError, Diagnostic};
use computeguard_engine::{Engine, Policy, SettingsError};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Why the policy set could not be loaded: the policy file (or, for a built-in, its
/// `builtin:NAME` origin) or the configuration at fault, and what went wrong.
///
/// Each message is complete on its own (a front end prints it as it is, after its own
/// `error: `), so no variant chains a [`std::error::Error::source`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A component (`.wasm`) could not be read.
    #[error("cannot read policy `{}`: {error}", path.display())]
    ReadComponent {
        /// The component's path.
        path: PathBuf,
        /// What reading it said.
        error: std::io::Error,
    },
    /// A rule pack (`.yaml`) could not be read.
    #[error("cannot read pack `{}`: {error}", path.display())]
    ReadPack {
        /// The pack's path.
        path: PathBuf,
        /// What reading it said.
        error: std::io::Error,
    },
    /// A rule pack does not compile.
    #[error("{}", compile_message(path, diagnostics))]
    Compile {
        /// The pack's path.
        path: PathBuf,
        /// Every problem, with its line and column (never empty).
        diagnostics: Vec<Diagnostic>,
    },
    /// A compiled pack could not be composed with the CEL runtime into a component.
    #[error("{error}")]
    Compose {
        /// The pack's path.
        path: PathBuf,
        /// What composing said.
        error: ComposeError,
    },
    /// The file is neither a rule pack nor a component.
    #[error("`{}`: a policy is a rule pack (.yaml) or a component (.wasm)", path.display())]
    UnknownKind {
        /// The file's path.
        path: PathBuf,
    },
    /// A pinned policy's digest is not the pinned one (checked before the component is
    /// compiled or run).
    #[error(
        "`{}` has digest {actual}, but it is pinned to {pinned}; refusing to run it (update the pin if the change is intended)",
        path.display()
    )]
    DigestMismatch {
        /// The policy's path.
        path: PathBuf,
        /// `sha256:<hex>` of the component.
        actual: String,
        /// `sha256:<hex>` it is pinned to.
        pinned: String,
    },
    /// The engine refused the component (the message names `origin`).
    #[error("{error}")]
    Component {
        /// The policy's path, or `builtin:NAME`.
        origin: String,
        /// What the engine said.
        error: computeguard_engine::LoadError,
    },
    /// Two loaded policies have the same name.
    #[error("`{}`: a policy named `{name}` is already loaded", path.display())]
    DuplicateName {
        /// The path of the second policy of that name.
        path: PathBuf,
        /// The name both declare.
        name: String,
    },
    /// A policy refuses its settings (from `settings:` in the configuration, or the
    /// built-in policies' settings derived from `regions:`).
    #[error("{}{error}", config.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    Settings {
        /// The configuration file the settings came from (`None`: defaults).
        config: Option<PathBuf>,
        /// What the policy said, naming itself and each field at fault.
        error: SettingsError,
    },
    /// A catalog overlay or Azure fact file the configuration names could not be read
    /// or is not what it should be.
    #[error(transparent)]
    Context(#[from] crate::context::ContextLoadError),
    /// An `oci://` policy or overlay could not be pulled, or was refused (a digest that
    /// is not its pin or not its content, a missing or untrusted signature, nothing
    /// verified in the cache while the registry is unreachable).
    #[error(transparent)]
    Oci(#[from] crate::oci::OciError),
    /// The configuration names a rule id (in `rules:`, `ignore:` or
    /// `webhook.enforcement`) that no loaded policy declares.
    #[error("{file}:{line}: {}", crate::suggest::unknown_rule(rule, known))]
    UnknownRule {
        /// The configuration file, as shown (`computeguard.yaml` for defaults).
        file: String,
        /// The line of the rule id.
        line: u32,
        /// The rule id.
        rule: String,
        /// The rule ids the loaded policies declare.
        known: Vec<String>,
    },
}

fn compile_message(path: &Path, diagnostics: &[Diagnostic]) -> String {
    let n = diagnostics.len();
    let body: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
    format!(
        "{}\n\n{n} problem{} in `{}`",
        body.join("\n\n"),
        if n == 1 { "" } else { "s" },
        path.display()
    )
}

/// Loads the built-in policies, then `config.policies`, then `extra` (in that order), and
/// validates every policy's settings. `own_rules` are rule ids the front end itself
/// reports (so the configuration may name them) besides those the policies declare.
pub fn load_policies(
    engine: &Engine,
    config: &Config,
    extra: &[PolicyRef],
    own_rules: &[&str],
) -> Result<Vec<LoadedPolicy>, LoadError> {
    load_policies_with_context(engine, config, extra, own_rules).map(|(policies, _)| policies)
}

/// [`load_policies`], also returning the context the policies were given (none when the
/// configuration names no overlays or Azure facts): what a front end needs to judge
/// across documents as the policies judge one (`check`'s quota sums).
pub fn load_policies_with_context(
    engine: &Engine,
    config: &Config,
    extra: &[PolicyRef],
    own_rules: &[&str],
) -> Result<(Vec<LoadedPolicy>, Option<crate::context::LoadedContext>), LoadError> {
    // `oci://` references become their verified cached files (pin and signatures checked)
    // before anything else is read, compiled or run.
    let resolved = crate::oci::resolve(config, extra)?;
    let (config, extra) = match &resolved {
        Some((c, e)) => (c, e.as_slice()),
        None => (config, extra),
    };
    // The context files are checked before any policy is loaded: a bad overlay names
    // its file and line, and nothing runs with half a context.
    let loaded_context = crate::context::load(&config.context)?;
    let context = loaded_context.as_ref().map(|c| &c.context);
    let mut out = Vec::new();
    for b in computeguard_builtins::BUILTINS {
        let origin = format!("builtin:{}", b.name);
        // The built-in pack is our runtime with rules whose reads the build checked:
        // whether they decide without the object's name (the webhook's template cache).
        let name_reads = b.name_reads.iter().map(|k| k.to_string()).collect();
        let policy = engine
            .load_with_context(b.component, &origin, context)
            .map_err(|error| LoadError::Component { origin, error })?;
        out.push(prepare(policy, config, true)?.with_name_reads(name_reads));
    }
    for r in config.policies.iter().chain(extra) {
        let (policy, name_reads) = load_ref(engine, r, context)?;
        if out
            .iter()
            .any(|l: &LoadedPolicy| l.policy.info().name == policy.info().name)
        {
            return Err(LoadError::DuplicateName {
                path: r.path.clone(),
                name: policy.info().name.clone(),
            });
        }
        let loaded = prepare(policy, config, false)?;
        out.push(match name_reads {
            Some(kinds) => loaded.with_name_reads(kinds),
            None => loaded,
        });
    }
    let known: Vec<String> = out
        .iter()
        .flat_map(|l| l.policy.info().rules.iter().map(|r| r.id.clone()))
        .collect();
    let mut configurable = known.clone();
    configurable.extend(own_rules.iter().map(|r| r.to_string()));
    if let Some((rule, line)) = config.unknown_rules(&configurable).first() {
        return Err(LoadError::UnknownRule {
            file: config.path.as_ref().map_or_else(
                || crate::config::FILE_NAME.to_string(),
                |p| p.display().to_string(),
            ),
            line: *line,
            rule: rule.to_string(),
            known,
        });
    }
    Ok((out, loaded_context))
}

/// Loads one extra policy, checking its pin before it is compiled or run; with, for a
/// pack, the kinds of resource its rules may decide by name (a component's reads are
/// never known: `None`).
fn load_ref(
    engine: &Engine,
    r: &PolicyRef,
    context: Option<&computeguard_engine::PolicyContext>,
) -> Result<(Policy, Option<Vec<String>>), LoadError> {
    let path = &r.path;
    let (bytes, source_digest, name_reads) = component_and_source_digest(path)?;
    // The pin is checked before the component is compiled or run: a mismatch must never
    // execute a line of the policy.
    if let Some(pinned) = &r.digest {
        let actual = format!("sha256:{}", computeguard_engine::digest(&bytes));
        // A pack may be pinned by its source digest or by the digest of the component
        // built from it (the one `computeguard policies` lists).
        if &actual != pinned && source_digest.as_ref() != Some(pinned) {
            return Err(LoadError::DigestMismatch {
                path: path.clone(),
                actual,
                pinned: pinned.clone(),
            });
        }
    }
    let origin = path.display().to_string();
    let policy = engine
        .load_with_context(&bytes, &origin, context)
        .map_err(|error| LoadError::Component { origin, error })?;
    Ok((policy, name_reads))
}

/// Validates the settings `config` gives `policy` (for a built-in without its own
/// `settings:` entry, those derived from `regions:`; for another policy, `{}`).
fn prepare(policy: Policy, config: &Config, builtin: bool) -> Result<LoadedPolicy, LoadError> {
    let settings = match config.settings.get(&policy.info().name) {
        Some(s) => s.clone(),
        None if builtin => config.builtin_settings(),
        None => Value::Object(Default::default()),
    };
    policy
        .validate_settings(&settings)
        .map_err(|error| LoadError::Settings {
            config: config.path.clone(),
            error,
        })?;
    Ok(LoadedPolicy::new(policy, settings, builtin))
}

/// Whether `path` names a rule pack (`.yaml` or `.yml`).
fn is_pack(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e == "yaml" || e == "yml")
}

/// The component a policy file holds (a pack compiled and composed with the CEL runtime,
/// or a component as it is) and, for a pack, the digest of its source and the kinds its
/// rules may decide by name.
type Loaded = (Vec<u8>, Option<String>, Option<Vec<String>>);

fn component_and_source_digest(path: &Path) -> Result<Loaded, LoadError> {
    if is_pack(path) {
        let compiled = compile_pack(path)?;
        let bytes = compose(path, &compiled)?;
        let name_reads = computeguard_compiler::name_reading_targets(&compiled.pack);
        return Ok((bytes, Some(compiled.pack.source_digest), Some(name_reads)));
    }
    if path.extension().is_some_and(|e| e == "wasm") {
        let bytes = std::fs::read(path).map_err(|error| LoadError::ReadComponent {
            path: path.to_path_buf(),
            error,
        })?;
        return Ok((bytes, None, None));
    }
    Err(LoadError::UnknownKind {
        path: path.to_path_buf(),
    })
}

/// Reads and compiles a pack file; every problem is in [`LoadError::Compile`].
pub fn compile_pack(path: &Path) -> Result<CompiledPack, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|error| LoadError::ReadPack {
        path: path.to_path_buf(),
        error,
    })?;
    computeguard_compiler::compile(&path.display().to_string(), &text).map_err(|diagnostics| {
        LoadError::Compile {
            path: path.to_path_buf(),
            diagnostics,
        }
    })
}

/// Composes the pack compiled from `path` with the CEL runtime into a policy component.
fn compose(path: &Path, compiled: &CompiledPack) -> Result<Vec<u8>, LoadError> {
    computeguard_compiler::compose(computeguard_builtins::RUNTIME, &compiled.pack).map_err(
        |error| LoadError::Compose {
            path: path.to_path_buf(),
            error,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn engine() -> Result<Engine, Box<dyn std::error::Error>> {
        Ok(Engine::new(computeguard_engine::EngineConfig::default())?)
    }

    fn extra(path: &Path, digest: Option<String>) -> Vec<PolicyRef> {
        vec![PolicyRef {
            path: path.to_path_buf(),
            digest,
        }]
    }

    #[test]
    fn the_built_ins_load_with_their_settings() -> TestResult {
        let loaded = load_policies(&engine()?, &Config::default(), &[], &[])?;
        assert!(!loaded.is_empty());
        assert!(loaded.iter().all(|l| l.builtin && l.settings_text == "{}"));
        // The built-in rules decide without the object's name except for AKS pools
        // (mig-autoscale): the webhook answers the Pods of one ReplicaSet from one
        // evaluation.
        assert!(
            loaded
                .iter()
                .all(|l| l.name_reads.as_deref() == Some(&["aks-node-pool".to_string()][..])),
            "{:?}",
            loaded.iter().map(|l| &l.name_reads).collect::<Vec<_>>()
        );
        Ok(())
    }

    /// The built-in pack decides an AKS pool by its name (mig-autoscale matches the pool
    /// a MIG workload selects), so an ASO agent pool is evaluated as it is, while a Pod,
    /// which yields no pool, is still answered by template.
    #[test]
    fn the_built_ins_are_name_blind_for_a_pod_and_not_for_an_agent_pool() -> TestResult {
        use computeguard_policy_core::model::{Source, normalize};
        let loaded = load_policies(&engine()?, &Config::default(), &[], &[])?;
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "train-0"},
            "spec": {"containers": [{"name": "c", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                "resources": {"limits": {"nvidia.com/gpu": 1}}}]}});
        let pool = serde_json::json!({
            "apiVersion": "containerservice.azure.com/v1api20240901",
            "kind": "ManagedClustersAgentPool",
            "metadata": {"name": "gpumig"},
            "spec": {"owner": {"name": "aks"}, "vmSize": "Standard_NC24ads_A100_v4",
                "enableAutoScaling": true, "minCount": 0, "maxCount": 3,
                "gpuInstanceProfile": "MIG1g"}});
        let pod = normalize(&pod, Source::Kubernetes);
        let pool = normalize(&pool, Source::Kubernetes);
        assert!(!pod.is_empty() && !pool.is_empty());
        assert!(loaded.iter().all(|l| l.name_blind_for(&pod)));
        assert!(loaded.iter().all(|l| !l.name_blind_for(&pool)), "{pool:?}");
        Ok(())
    }

    #[test]
    fn a_pack_is_name_blind_when_its_rules_decide_without_names_and_a_component_never_is()
    -> TestResult {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let engine = engine()?;
        let config = Config::default();
        let blind = |path: &Path| -> Result<bool, Box<dyn std::error::Error>> {
            let loaded = load_policies(&engine, &config, &extra(path, None), &[])?;
            Ok(loaded.last().ok_or("nothing loaded")?.name_reads == Some(Vec::new()))
        };
        // `'team' in resource.labels`: no name read.
        assert!(blind(&root.join("examples/policies/team-tag.yaml"))?);
        // `int(resource.name) > 0` decides on the name.
        let pack = root.join("examples/embed-cases/contract/rule-failed-pack.yaml");
        assert!(!blind(&pack)?);
        // The same rules as a component: nobody can see what it reads.
        let dir = tempfile::tempdir()?;
        let wasm = dir.path().join("team-tag.wasm");
        let compiled = compile_pack(&root.join("examples/policies/team-tag.yaml"))?;
        std::fs::write(&wasm, compose(&wasm, &compiled)?)?;
        assert!(!blind(&wasm)?);
        Ok(())
    }

    #[test]
    fn errors_name_the_policy_and_what_went_wrong() -> TestResult {
        let dir = tempfile::tempdir()?;
        let engine = engine()?;
        let config = Config::default();

        let txt = dir.path().join("rules.txt");
        std::fs::write(&txt, "")?;
        let err = load_policies(&engine, &config, &extra(&txt, None), &[])
            .err()
            .ok_or("a .txt policy loaded")?;
        assert!(matches!(&err, LoadError::UnknownKind { path } if path == &txt));
        assert!(
            err.to_string()
                .ends_with("a policy is a rule pack (.yaml) or a component (.wasm)")
        );

        // Bytes that are no component: the pin is checked before anything compiles them.
        let wasm = dir.path().join("tampered.wasm");
        std::fs::write(&wasm, b"\0asm not really a component")?;
        let pin = format!("sha256:{}", "0".repeat(64));
        let err = load_policies(&engine, &config, &extra(&wasm, Some(pin.clone())), &[])
            .err()
            .ok_or("a tampered policy loaded")?;
        match &err {
            LoadError::DigestMismatch { path, pinned, .. } => {
                assert_eq!((path, pinned), (&wasm, &pin));
            }
            other => return Err(format!("not a digest mismatch: {other}").into()),
        }
        assert!(
            err.to_string().contains("but it is pinned to sha256:000"),
            "{err}"
        );

        let err = load_policies(&engine, &config, &extra(&wasm, None), &[])
            .err()
            .ok_or("a tampered policy loaded")?;
        assert!(
            matches!(&err, LoadError::Component { origin, .. } if origin == &wasm.display().to_string())
        );

        let pack = dir.path().join("broken.yaml");
        std::fs::write(&pack, "name: [\n")?;
        let err = load_policies(&engine, &config, &extra(&pack, None), &[])
            .err()
            .ok_or("a broken pack loaded")?;
        assert!(matches!(&err, LoadError::Compile { diagnostics, .. } if diagnostics.len() == 1));
        assert!(
            err.to_string()
                .ends_with(&format!("\n\n1 problem in `{}`", pack.display())),
            "{err}"
        );

        let missing = dir.path().join("missing.wasm");
        let err = load_policies(&engine, &config, &extra(&missing, None), &[])
            .err()
            .ok_or("a missing policy loaded")?;
        assert!(
            err.to_string()
                .starts_with(&format!("cannot read policy `{}`: ", missing.display())),
            "{err}"
        );
        Ok(())
    }

    #[test]
    fn a_pin_is_a_sha256_digest_and_a_date_is_a_day() {
        let hex = "AB".repeat(32);
        assert_eq!(
            PolicyRef::parse(&format!("p.wasm@sha256:{hex}")),
            Ok(PolicyRef {
                path: PathBuf::from("p.wasm"),
                digest: Some(format!("sha256:{}", hex.to_ascii_lowercase())),
            })
        );
        let err = PolicyRef::parse("p.wasm@sha256:abc");
        assert_eq!(
            err,
            Err(crate::config::InvalidDigest {
                digest: "sha256:abc".into()
            })
        );
        assert_eq!(
            err.map_err(|e| e.to_string()),
            Err("`sha256:abc` is not a digest; expected sha256: followed by 64 hex digits".into())
        );
        assert_eq!(
            crate::config::parse_date(" 2026-01-31 "),
            Ok("2026-01-31".into())
        );
        let err = crate::config::parse_date("2026-02-30").map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err("`2026-02-30` is not a date; expected YYYY-MM-DD".into())
        );
    }

    #[test]
    fn a_configured_rule_must_exist_or_be_the_front_ends_own() -> TestResult {
        let engine = engine()?;
        let config = Config::parse(
            Path::new("cg.yaml"),
            "rules:\n  min-nodes-zer0: off\n  front-end-rule: off\n",
        )?;
        let err = load_policies(&engine, &config, &[], &["front-end-rule"])
            .err()
            .ok_or("an unknown rule was accepted")?;
        assert!(
            err.to_string()
                .starts_with("cg.yaml:2: unknown rule `min-nodes-zer0` (did you mean `min-nodes-zero`?); known rules: min-nodes-zero, "),
            "{err}"
        );
        let config = Config::parse(Path::new("cg.yaml"), "rules:\n  front-end-rule: off\n")?;
        assert!(load_policies(&engine, &config, &[], &["front-end-rule"]).is_ok());
        assert!(load_policies(&engine, &config, &[], &[]).is_err());
        Ok(())
    }

    #[test]
    fn settings_a_policy_refuses_name_the_configuration() -> TestResult {
        let engine = engine()?;
        let name = load_policies(&engine, &Config::default(), &[], &[])?
            .first()
            .map(|l| l.policy.info().name.clone())
            .ok_or("no built-in policy")?;
        let config = Config::parse(
            Path::new("cg.yaml"),
            &format!("settings:\n  {name}:\n    regions: 3\n"),
        )?;
        let err = load_policies(&engine, &config, &[], &[])
            .err()
            .ok_or("bad settings were accepted")?;
        assert!(matches!(&err, LoadError::Settings { .. }), "{err}");
        assert!(err.to_string().starts_with("cg.yaml: "), "{err}");
        Ok(())
    }
}
