//! The set of policies a run evaluates: the built-ins plus `policies:` from the
//! config plus `--policy` flags. A `.yaml` pack is compiled and composed on the
//! fly; a `.wasm` component is loaded as is.

use crate::config::{Config, PolicyRef};
use anyhow::{Result, anyhow, bail};
use computeguard_engine::{Engine, Policy};
use serde_json::Value;
use std::path::Path;

/// A loaded policy and the settings it runs with (the policy-set layer's type, shared
/// with the webhook).
pub use computeguard_policyset::LoadedPolicy as Loaded;

/// Loads every policy and validates its settings. Errors name the file (and line,
/// for packs that do not compile).
pub fn load_all(engine: &Engine, config: &Config, extra: &[PolicyRef]) -> Result<Vec<Loaded>> {
    let mut out = Vec::new();
    for b in computeguard_builtins::BUILTINS {
        let policy = engine.load(b.component, &format!("builtin:{}", b.name))?;
        out.push(prepare(policy, config, true)?);
    }
    for r in config.policies.iter().chain(extra) {
        let path = &r.path;
        let (bytes, source_digest) = component_and_source_digest(path)?;
        // The pin is checked before the component is compiled or run: a mismatch
        // must never execute a line of the policy.
        if let Some(pinned) = &r.digest {
            let actual = format!("sha256:{}", computeguard_engine::digest(&bytes));
            // A pack may be pinned by its source digest or by the digest of the component
            // built from it (the one `computeguard policies` lists).
            if &actual != pinned && source_digest.as_ref() != Some(pinned) {
                bail!(
                    "`{}` has digest {actual}, but it is pinned to {pinned}; refusing to run it (update the pin if the change is intended)",
                    path.display()
                );
            }
        }
        let policy = engine.load(&bytes, &path.display().to_string())?;
        if out
            .iter()
            .any(|l: &Loaded| l.policy.info().name == policy.info().name)
        {
            bail!(
                "`{}`: a policy named `{}` is already loaded",
                path.display(),
                policy.info().name
            );
        }
        out.push(prepare(policy, config, false)?);
    }
    let known: Vec<String> = out
        .iter()
        .flat_map(|l| l.policy.info().rules.iter().map(|r| r.id.clone()))
        .collect();
    // computeguard's own rule (an incomplete suppression) may be configured too.
    let mut configurable = known.clone();
    configurable.push(crate::suppress::MISSING_REASON_RULE.to_string());
    if let Some((id, line)) = config.unknown_rules(&configurable).first() {
        let file = config
            .path
            .as_ref()
            .map_or_else(|| "computeguard.yaml".into(), |p| p.display().to_string());
        bail!(
            "{file}:{line}: {}",
            crate::suggest::unknown_rule(id, &known)
        );
    }
    Ok(out)
}

fn prepare(policy: Policy, config: &Config, builtin: bool) -> Result<Loaded> {
    let name = policy.info().name.clone();
    let settings = match config.settings.get(&name) {
        Some(s) => s.clone(),
        None if builtin => config.builtin_settings(),
        None => Value::Object(Default::default()),
    };
    policy.validate_settings(&settings).map_err(|e| {
        let at = config
            .path
            .as_ref()
            .map(|p| format!("{}: ", p.display()))
            .unwrap_or_default();
        anyhow!("{at}{e}")
    })?;
    Ok(Loaded::new(policy, settings, builtin))
}

/// Compiles a pack (`.yaml`/`.yml`) or reads a component (`.wasm`) into a component.
pub fn component_bytes(path: &Path) -> Result<Vec<u8>> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default();
    match ext {
        "wasm" => {
            std::fs::read(path).map_err(|e| anyhow!("cannot read policy `{}`: {e}", path.display()))
        }
        "yaml" | "yml" => {
            let compiled = compile_pack(path)?;
            Ok(computeguard_compiler::compose(
                computeguard_builtins::RUNTIME,
                &compiled.pack,
            )?)
        }
        _ => bail!(
            "`{}`: a policy is a rule pack (.yaml) or a component (.wasm)",
            path.display()
        ),
    }
}

/// Compiles a pack file, turning diagnostics into one error with every problem.
pub fn compile_pack(path: &Path) -> Result<computeguard_compiler::CompiledPack> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("cannot read pack `{}`: {e}", path.display()))?;
    computeguard_compiler::compile(&path.display().to_string(), &text).map_err(|diags| {
        let n = diags.len();
        let body: Vec<String> = diags.iter().map(ToString::to_string).collect();
        anyhow!(
            "{}\n\n{n} problem{} in `{}`",
            body.join("\n\n"),
            if n == 1 { "" } else { "s" },
            path.display()
        )
    })
}

/// The component for `path` and, for a pack, the digest of its source.
fn component_and_source_digest(path: &Path) -> Result<(Vec<u8>, Option<String>)> {
    let is_pack = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e == "yaml" || e == "yml");
    if !is_pack {
        return Ok((component_bytes(path)?, None));
    }
    let compiled = compile_pack(path)?;
    let source = compiled.pack.source_digest.clone();
    let bytes = computeguard_compiler::compose(computeguard_builtins::RUNTIME, &compiled.pack)?;
    Ok((bytes, Some(source)))
}
