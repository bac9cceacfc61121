//! Registry modules read from their documented parameters where the call states them: the
//! Azure Verified Module for AKS (`br/public:avm/res/container-service/managed-cluster`),
//! called from a Bicep file or named by a `.bicepparam` file's `using`.

use super::params::escape;
use crate::report::{FileError, SkipKind};
use crate::scan::{DocContext, FileResult, Scan, Syntax};
use crate::suppress::Directives;
use computeguard_decode::{DecodeError, Document, decode_bicepparam};
use computeguard_policy_core::read::arm::evaluate;
use serde_json::{Map, Value, json};
use std::path::Path;

/// The document of a `.bicepparam` whose `using` names the registry module `module`: a call
/// of that module with the file's values (positions: the file's), and the aliases that put
/// what is found in it at the file's lines.
pub(super) fn registry_params_call(
    path: &Path,
    text: &str,
    module: &str,
) -> Result<(Document, Vec<(String, String)>), DecodeError> {
    let parsed = decode_bicepparam(text)?;
    let symbol = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("params")
        .to_string();
    let written = &parsed.document.value;
    let mut value = json!({
        "parameters": {},
        "variables": written.get("variables").cloned().unwrap_or(json!({})),
        "resources": [{
            "type": "Microsoft.Resources/deployments",
            "apiVersion": "2022-09-01",
            "symbolicName": symbol,
            "module": module,
            "properties": {
                "mode": "Incremental",
                "parameters": written.get("parameters").cloned().unwrap_or(json!({})),
            },
        }],
    });
    // What the call writes is where the file writes it: `/parameters/...`.
    const CALL_PARAMS: &str = "/resources/0/properties/parameters";
    let aliases = read_known_modules(&mut value)
        .into_iter()
        .map(|(from, to)| match to.strip_prefix(CALL_PARAMS) {
            Some(rest) => (from, format!("/parameters{rest}")),
            None => (from, to),
        })
        .collect();
    let doc = Document {
        index: 0,
        value,
        positions: parsed.document.positions,
    };
    Ok((doc, aliases))
}

/// [`registry_params_call`]'s document alone.
pub(super) fn registry_params_document(path: &Path, text: &str, module: &str) -> Option<Document> {
    registry_params_call(path, text, module)
        .ok()
        .map(|(d, _)| d)
}

/// The registry path of the Azure Verified Module for AKS clusters, after `br/public:` (or
/// `br:mcr.microsoft.com/bicep/`) and before `:version`.
pub(super) const AVM_AKS: &str = "avm/res/container-service/managed-cluster";

/// Whether a module path names the Azure Verified Module for AKS clusters (any version).
pub(super) fn is_avm_aks(source: &str) -> bool {
    let lower = source.to_ascii_lowercase();
    let path = lower
        .strip_prefix("br/public:")
        .or_else(|| lower.strip_prefix("br:mcr.microsoft.com/bicep/"));
    path.and_then(|p| p.split(':').next()) == Some(AVM_AKS)
}

/// Reads the calls of the Bicep document `doc` to registry modules whose parameters are
/// documented and deploy compute, from what the call states: the Azure Verified Module for
/// AKS (`br/public:avm/res/container-service/managed-cluster`) deploys a managed cluster
/// whose pools are `primaryAgentPoolProfiles` (`primaryAgentPoolProfile` before 0.6) and
/// `agentPools`, with the ARM agent pool fields (`vmSize`, `count`, `minCount`, ...), in
/// `location` (default: the resource group's). The call gets an inline template of those
/// resources, evaluated in the caller's scope, so their facts are judged at the call. Returns
/// the pointer prefixes of that template paired with where the call writes each part (for
/// [`relocate`]); a call whose `params`, pool lists or pools are expressions known only at
/// deploy time is not read (it stays an unresolved module).
pub fn read_known_modules(doc: &mut Value) -> Vec<(String, String)> {
    let scope = doc.clone();
    let mut read = Vec::new();
    let Some(Value::Array(resources)) = doc.get_mut("resources") else {
        return read;
    };
    for (i, r) in resources.iter_mut().enumerate() {
        let Some(source) = r.get("module").and_then(Value::as_str) else {
            continue;
        };
        if !is_avm_aks(source)
            || !r
                .pointer("/properties/parameters")
                .is_some_and(Value::is_object)
        {
            continue;
        }
        let passed = |k: &str| {
            r.pointer(&format!("/properties/parameters/{k}/value"))
                .cloned()
        };
        let call = format!("/resources/{i}");
        let synthesized = format!("{call}/properties/template/resources/0");
        let written = |k: &str| format!("{call}/properties/parameters/{k}/value");
        let mut here = Vec::new();
        // Each pool an object (as written, or known from an expression); a pool list or a
        // pool that is known only at deploy time leaves the module unread.
        let objects = |items: Vec<Value>| -> Option<Vec<Value>> {
            items
                .into_iter()
                .map(|item| match item {
                    Value::Object(_) => Some(item),
                    other => match evaluate(&scope, &other)? {
                        known @ Value::Object(_) => Some(escape(&known)),
                        _ => None,
                    },
                })
                .collect()
        };
        let primary = if passed("primaryAgentPoolProfiles").is_some() {
            "primaryAgentPoolProfiles"
        } else {
            "primaryAgentPoolProfile"
        };
        let profiles = match passed(primary) {
            None => None,
            Some(Value::Array(items)) => match objects(items) {
                Some(p) => Some(Value::Array(p)),
                None => continue,
            },
            Some(w) => match evaluate(&scope, &w) {
                Some(Value::Array(items)) => Some(escape(&Value::Array(items))),
                _ => continue,
            },
        };
        let pools = match passed("agentPools") {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                let Some(items) = objects(items) else {
                    continue;
                };
                for k in 0..items.len() {
                    let pool = format!("{synthesized}/resources/{k}");
                    let at = format!("{}/{k}", written("agentPools"));
                    here.push((format!("{pool}/properties"), at.clone()));
                    here.push((format!("{pool}/name"), format!("{at}/name")));
                    here.push((pool, at));
                }
                items
            }
            Some(w) => match evaluate(&scope, &w) {
                Some(Value::Array(items)) => {
                    here.push((format!("{synthesized}/resources"), written("agentPools")));
                    items.iter().map(escape).collect()
                }
                _ => continue,
            },
        };
        here.push((
            format!("{synthesized}/properties/agentPoolProfiles"),
            written(primary),
        ));
        for k in ["location", "name"] {
            here.push((format!("{synthesized}/{k}"), written(k)));
        }
        here.push((synthesized, call));
        let mut cluster = Map::new();
        cluster.insert(
            "type".into(),
            json!("Microsoft.ContainerService/managedClusters"),
        );
        cluster.insert("apiVersion".into(), json!("2024-09-01"));
        cluster.insert(
            "name".into(),
            passed("name").unwrap_or_else(|| json!("<unnamed>")),
        );
        cluster.insert(
            "location".into(),
            passed("location").unwrap_or_else(|| json!("[resourceGroup().location]")),
        );
        let mut props = Map::new();
        if let Some(profiles) = profiles {
            props.insert("agentPoolProfiles".into(), profiles);
        }
        if let Some(v) = passed("kubernetesVersion") {
            props.insert("kubernetesVersion".into(), v);
        }
        cluster.insert("properties".into(), Value::Object(props));
        let nested: Vec<Value> = pools
            .into_iter()
            .map(|mut item| {
                let name = item
                    .as_object_mut()
                    .and_then(|m| m.remove("name"))
                    .unwrap_or_else(|| json!("<unnamed>"));
                json!({"type": "agentPools", "apiVersion": "2024-09-01", "name": name, "properties": item})
            })
            .collect();
        if !nested.is_empty() {
            cluster.insert("resources".into(), Value::Array(nested));
        }
        if let Some(Value::Object(p)) = r.get_mut("properties") {
            p.insert(
                "template".into(),
                json!({"resources": [Value::Object(cluster)]}),
            );
        }
        read.extend(here);
    }
    read
}

/// Moves what was found in the inline template of a module read by [`read_known_modules`]
/// to where the call writes it: the pointer (first matching prefix of `aliases`), the line,
/// column and source line, in the file `name` of `doc` (whose lines are `lines`).
pub(in crate::scan) fn relocate(
    out: &mut FileResult,
    name: &str,
    doc: &Document,
    lines: &[&str],
    aliases: &[(String, String)],
) {
    if aliases.is_empty() {
        return;
    }
    let moved = |path: &str| {
        aliases.iter().find_map(|(from, to)| {
            let rest = path.strip_prefix(from.as_str())?;
            (rest.is_empty() || rest.starts_with('/')).then(|| format!("{to}{rest}"))
        })
    };
    for f in out.findings.iter_mut().chain(out.suppressed.iter_mut()) {
        if f.file != name {
            continue;
        }
        if let Some(to) = moved(&f.path)
            && let Some(span) = doc.positions.locate(&to)
        {
            f.path = to;
            f.line = span.line;
            f.column = span.column;
            f.source_line = (span.line > 0)
                .then(|| lines.get(span.line as usize - 1).map(|l| l.to_string()))
                .flatten();
        }
    }
    for u in out.unresolved.iter_mut().filter(|u| u.file == name) {
        if let Some(to) = moved(&u.path)
            && let Some(span) = doc.positions.locate(&to)
        {
            u.path = to;
            u.line = span.line;
        }
    }
}

impl Scan<'_> {
    /// A `.bicepparam` file whose `using` names a registry module or template spec
    /// (`using 'br/public:avm/...:0.10.0'`): its values are what a deployment of that module
    /// receives, so it is checked as a call of that module (the AVM AKS module is read from
    /// its documented parameters, at the lines of the file; another module is an unresolved
    /// fact naming what it receives).
    pub(in crate::scan) fn registry_params(
        &self,
        name: &str,
        path: &Path,
        text: &str,
        module: &str,
    ) -> FileResult {
        let mut out = FileResult::default();
        let (doc, aliases) = match registry_params_call(path, text, module) {
            Ok(d) => d,
            Err(e) => {
                out.errors.push(FileError {
                    file: name.to_string(),
                    line: e.line,
                    message: format!("invalid parameters file: {e}"),
                });
                return out;
            }
        };
        let lines: Vec<&str> = text.lines().collect();
        // Bicep comments: `// computeguard:ignore ...`.
        let directives = Directives::parse(Path::new("params.bicep"), text);
        let ctx = DocContext {
            path,
            syntax: Syntax::Bicep,
            name,
            lines: &lines,
            directives: &directives,
            module: None,
            via: None,
        };
        self.document(&ctx, &doc, &mut out);
        relocate(&mut out, name, &doc, &lines, &aliases);
        let mut stack = vec![std::fs::canonicalize(path).unwrap_or_default()];
        self.bicep_modules(
            path,
            Path::new(name),
            name,
            &doc,
            None,
            &mut stack,
            &mut out,
        );
        for u in out
            .unresolved
            .iter_mut()
            .filter(|u| u.path == "/resources/0/module")
        {
            // The `using` line.
            u.line = 1.max(
                text.lines()
                    .position(|l| l.trim_start().starts_with("using"))
                    .map_or(1, |i| i as u32 + 1),
            );
        }
        self.incomplete_suppressions(name, &directives, &mut out);
        if out.resources == 0 {
            out.skipped_documents.clear();
            if out.unresolved.is_empty() && out.errors.is_empty() {
                out.skipped = Some((
                    SkipKind::NoResources,
                    format!(
                        "Bicep parameter values for `{module}`: no compute resources recognised"
                    ),
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_avm_aks_module_is_known_by_its_path_in_any_version() {
        assert!(is_avm_aks(
            "br/public:avm/res/container-service/managed-cluster:0.10.0"
        ));
        assert!(is_avm_aks(
            "br:mcr.microsoft.com/bicep/avm/res/container-service/managed-cluster:0.1.0"
        ));
        assert!(!is_avm_aks(
            "br/public:avm/res/container-service/managed-cluster/agent-pool:0.1.0"
        ));
        assert!(!is_avm_aks(
            "br:contoso.azurecr.io/avm/res/container-service/managed-cluster:1"
        ));
    }
}
