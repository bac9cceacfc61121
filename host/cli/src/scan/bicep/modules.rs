//! Module calls: which modules a Bicep document calls, the instances a call deploys (its
//! `if`, its loop), the values it binds to the module's parameters, the module files checked
//! through their calls, and where a value the call cannot know must be given.

use super::avm::{read_known_modules, relocate};
use super::params::bind;
use crate::report::{FileError, ResourceRef, Unresolved};
use crate::scan::{DocContext, FileResult, Input, Scan, Syntax, Via};
use crate::suppress::Directives;
use computeguard_decode::{DecodeError, Document, decode_bicep, decode_json};
use computeguard_policy_core::read::arm::evaluate;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Most instances of one module loop checked one by one: a loop over a longer array is
/// checked once, with what depends on the item unresolved (a loop's instances multiply
/// through nested modules; each is an evaluation by every policy).
pub(in crate::scan) const MAX_LOOP_INSTANCES: usize = 256;

/// Most documents one root file gives with its modules: a module call beyond is an
/// unresolved fact (`module-limit`), so nested loops cannot multiply without bound.
pub(in crate::scan) const MAX_MODULE_DOCUMENTS: usize = 4096;

/// Most bytes of what a registry module receives shown in its unresolved entry.
pub(super) const RECEIVED_LIMIT: usize = 600;

/// Where the value of a module parameter the caller could not know is given: the argument
/// of the outermost call that passes it (a root parameter passed down is set at the root).
#[derive(Clone, Debug)]
pub struct Origin {
    /// The calling file (as shown) and the line of the argument.
    file: String,
    line: u32,
    /// JSON pointer of the argument in the calling document.
    path: String,
    /// What the call writes (`[parameters('vmSize')]`).
    expression: String,
}

/// The parameters an ARM expression refers to (`parameters('x')`), lowercased.
pub(super) fn parameters_used(expression: &str) -> Vec<String> {
    let lower = expression.to_ascii_lowercase();
    lower
        .match_indices("parameters('")
        .filter_map(|(i, m)| {
            let rest = lower.get(i + m.len()..)?;
            rest.split_once("')").map(|(name, _)| name.to_string())
        })
        .collect()
}

impl Via {
    /// The origin of the first parameter `expression` uses that this call could not bind.
    fn origin(&self, expression: &str) -> Option<&Origin> {
        self.origin_of(expression).map(|(_, o)| o)
    }

    /// The parameter and origin of [`Via::origin`].
    fn origin_of(&self, expression: &str) -> Option<(&str, &Origin)> {
        parameters_used(expression).iter().find_map(|p| {
            self.origins
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(p))
                .map(|(name, o)| (name.as_str(), o))
        })
    }

    /// Points the unresolved `entry` of a resource this call deploys at where its value is
    /// given, when it comes from a parameter the call could not bind: the caller's argument
    /// (the outermost one), with what it writes.
    fn retarget(&self, entry: &mut Unresolved) {
        let Some((param, origin)) = entry.expression.as_deref().and_then(|e| self.origin_of(e))
        else {
            return;
        };
        let suffix = format!(" (deployed by {})", self.site);
        let base = entry
            .display
            .strip_suffix(&suffix)
            .unwrap_or(&entry.display);
        entry.display = format!(
            "{base} ({}:{}, deployed by {}, through its parameter `{param}`)",
            entry.file, entry.line, self.site
        );
        entry.file.clone_from(&origin.file);
        entry.line = origin.line;
        entry.path.clone_from(&origin.path);
        entry.expression = Some(origin.expression.clone());
    }

    /// The resource `display` of an unresolved fact of a resource this call deploys: with
    /// the call site.
    pub(in crate::scan) fn describe(&self, display: &str) -> String {
        format!("{display} (deployed by {})", self.site)
    }
}

/// The module files (canonical) that the Bicep files among `inputs` call, each with its
/// first caller (`main.bicep (module gpu)`): checked through the call, not alone.
pub(in crate::scan) fn called_modules(inputs: &[Input]) -> HashMap<PathBuf, String> {
    let mut called = HashMap::new();
    for input in inputs {
        if !decode_module_is_bicep(&input.path) {
            continue;
        }
        let text = match &input.text {
            Some(t) => std::borrow::Cow::Borrowed(t.as_str()),
            None => match crate::scan::open::read_to_string(&input.path) {
                Ok(t) => std::borrow::Cow::Owned(t),
                Err(_) => continue,
            },
        };
        let Ok(doc) = decode_bicep(&text) else {
            continue;
        };
        let shown = PathBuf::from(&input.name);
        for call in module_calls(&input.path, &shown, &doc.value) {
            if let Some(file) = call.file.and_then(|f| std::fs::canonicalize(f).ok()) {
                called
                    .entry(file)
                    .or_insert_with(|| format!("{} (module {})", input.name, call.name));
            }
        }
    }
    called
}

pub(super) fn decode_module_is_bicep(file: &Path) -> bool {
    file.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("bicep"))
}

/// Whether a module path (or `using` target) is a registry module or template spec rather
/// than a local file.
pub(super) fn is_remote(source: &str) -> bool {
    let lower = source.to_ascii_lowercase();
    ["br:", "br/", "ts:", "ts/"]
        .iter()
        .any(|p| lower.starts_with(p))
}

/// One `module` of a Bicep document.
pub struct ModuleCall {
    /// The symbolic name: `gpu` in `module gpu './gpu.bicep'`.
    pub name: String,
    /// JSON pointer of the call in the calling document.
    pub pointer: String,
    /// The module path as written.
    pub source: String,
    /// The module file, when it is local.
    pub file: Option<PathBuf>,
    /// The module file as shown in findings.
    pub shown: Option<PathBuf>,
    /// The call as written (its `condition`, `copy`, `properties.parameters`).
    pub call: Value,
}

/// The `module` declarations of the Bicep document `doc` of the file `path` (shown as
/// `shown`).
pub fn module_calls(path: &Path, shown: &Path, doc: &Value) -> Vec<ModuleCall> {
    let Some(Value::Array(resources)) = doc.get("resources") else {
        return Vec::new();
    };
    resources
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let source = r.get("module")?.as_str()?.to_string();
            let local = !is_remote(&source);
            Some(ModuleCall {
                name: r
                    .get("symbolicName")
                    .and_then(Value::as_str)
                    .unwrap_or("module")
                    .to_string(),
                pointer: format!("/resources/{i}"),
                file: local.then(|| lexical_join(folder(path), &source)),
                shown: local.then(|| lexical_join(folder(shown), &source)),
                source,
                call: r.clone(),
            })
        })
        .collect()
}

/// One instance of a module call: the module's template with its parameters bound.
pub struct Instance {
    /// `gpu` or, in a loop, `gpu[1]`.
    pub label: String,
    /// The passed parameters the caller could not know: name and what the call writes.
    pub unknown: Vec<(String, String)>,
}

/// What a module call deploys, in the scope of the calling template `caller`:
/// `None` when its `if` is false (nothing is deployed), else one list of passed values per
/// instance (one, or one per item of a loop over a known array). A loop over an array known
/// only at deploy time, or longer than [`MAX_LOOP_INSTANCES`], gives one instance in which
/// what depends on the item is unknown.
pub fn instances(caller: &Value, call: &ModuleCall) -> Option<Vec<(Instance, Map<String, Value>)>> {
    if let Some(cond) = call.call.get("condition")
        && evaluate(caller, cond) == Some(Value::Bool(false))
    {
        return None;
    }
    let passed = call
        .call
        .pointer("/properties/parameters")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // `params: someObject` (an expression, not an object literal): all of them at once.
    let opaque = call
        .call
        .pointer("/properties/parameters")
        .filter(|p| !p.is_object());
    let count = call
        .call
        .pointer("/copy/count")
        .and_then(Value::as_str)
        .and_then(|c| c.strip_prefix("[length(")?.strip_suffix(")]"))
        .map(|collection| evaluate(caller, &Value::String(format!("[{collection}]"))));
    let indices: Vec<Option<usize>> = match &count {
        None => vec![None],
        // A longer array is checked once, with what depends on the item unresolved.
        Some(Some(Value::Array(items))) if items.len() <= MAX_LOOP_INSTANCES => {
            (0..items.len()).map(Some).collect()
        }
        Some(_) => vec![None],
    };
    let looped = count.is_some();
    let mut out = Vec::new();
    for index in indices {
        let mut values = Map::new();
        let mut unknown = Vec::new();
        if let Some(written) = opaque {
            let written = index.map_or_else(|| written.clone(), |i| with_index(written, i));
            match evaluate(caller, &written) {
                Some(Value::Object(known)) => values = known,
                // Which parameters it sets is unknown: none of the module's defaults holds.
                _ => unknown.push((ALL_PARAMETERS.to_string(), shown_value(&written))),
            }
        }
        for (name, p) in &passed {
            let Some(written) = p.get("value") else {
                unknown.push((name.clone(), "a Key Vault reference".into()));
                continue;
            };
            let written = match index {
                Some(i) => with_index(written, i),
                None => written.clone(),
            };
            match evaluate(caller, &written) {
                Some(v) => {
                    values.insert(name.clone(), v);
                }
                None => unknown.push((name.clone(), shown_value(&written))),
            }
        }
        let label = match (looped, index) {
            (true, Some(i)) => format!("{}[{i}]", call.name),
            (true, None) => format!("{}[*]", call.name),
            _ => call.name.clone(),
        };
        out.push((Instance { label, unknown }, values));
    }
    Some(out)
}

/// `v` with every `copyIndex()` of its expressions replaced by `i`.
pub(super) fn with_index(v: &Value, i: usize) -> Value {
    match v {
        Value::String(s) if s.starts_with('[') && !s.starts_with("[[") => {
            Value::String(s.replace("copyIndex()", &i.to_string()))
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| with_index(x, i)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), with_index(x, i)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A value as the text shown in messages (strings without quotes).
pub(super) fn shown_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Decodes the module file `file` (`.bicep`, else an ARM JSON template).
pub fn decode_module(file: &Path, text: &str) -> Result<Document, DecodeError> {
    if decode_module_is_bicep(file) {
        decode_bicep(text)
    } else {
        decode_json(text)
    }
}

/// Binds the module template `module` to the values passed (`values`) and the passes the
/// caller could not know (`unknown`, left without a value).
pub fn bind_module(module: &mut Value, values: &Map<String, Value>, unknown: &[(String, String)]) {
    let Some(Value::Object(params)) = module.get_mut("parameters") else {
        return;
    };
    let all = unknown.iter().any(|(k, _)| k == ALL_PARAMETERS);
    for (key, p) in params.iter_mut() {
        if let Some((_, v)) = values.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)) {
            bind(p, Some(v));
        } else if all || unknown.iter().any(|(k, _)| k.eq_ignore_ascii_case(key)) {
            bind(p, None);
        }
    }
}

/// The name under which an `unknown` list says that a call passes an object known only at
/// deploy time as its `params`: every parameter of the module may be set by it.
pub(super) const ALL_PARAMETERS: &str = "*";

/// What a registry module receives, for its unresolved entry: the parameters most likely to
/// carry compute facts first, each value as known (or as written), at most `limit` bytes.
pub fn received(caller: &Value, call: &ModuleCall, limit: usize) -> String {
    // `params: settings`: the one expression, as known or as written.
    if let Some(written) = call
        .call
        .pointer("/properties/parameters")
        .filter(|p| !p.is_object())
    {
        let shown =
            evaluate(caller, written).map_or_else(|| shown_value(written), |v| v.to_string());
        return shown.chars().take(limit).collect();
    }
    let passed = call
        .call
        .pointer("/properties/parameters")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let compute = |k: &str| {
        let k = k.to_ascii_lowercase();
        ![
            "size", "sku", "pool", "vm", "node", "gpu", "location", "zone", "count",
        ]
        .iter()
        .any(|w| k.contains(w))
    };
    let mut keys: Vec<&String> = passed.keys().collect();
    keys.sort_by_key(|k| (compute(k), k.to_ascii_lowercase()));
    let mut out = String::new();
    for k in keys {
        let written = passed.get(k).and_then(|p| p.get("value"));
        let value = written
            .and_then(|w| evaluate(caller, w))
            .map(|v| match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .or_else(|| written.map(shown_value))
            .unwrap_or_else(|| "a Key Vault reference".into());
        let part = format!("{k} = {value}");
        if !out.is_empty() {
            out.push_str("; ");
        }
        if out.len() + part.len() > limit {
            out.push('…');
            break;
        }
        out.push_str(&part);
    }
    if out.is_empty() {
        out.push_str("no parameters");
    }
    out
}

/// The folder of `path` (`.` for a bare file name).
pub(super) fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => Path::new("."),
    }
}

/// `base` joined with the relative path `rel`, `.` and `..` applied lexically.
pub(super) fn lexical_join(base: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(rel).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

impl Scan<'_> {
    /// Checks the modules the Bicep document `doc` (of `path`, shown as `name`) calls: each
    /// local module file as a document of its own, once per instance, with the parameters
    /// the call passes bound; a registry or template spec module is an unresolved fact.
    /// `parent`: the call that deploys `doc`, when it is a module itself; `stack`: the files
    /// on the way here (a module that calls itself is followed once).
    #[expect(
        clippy::too_many_arguments,
        reason = "a recursion over module calls; the arguments are its position"
    )]
    pub(in crate::scan) fn bicep_modules(
        &self,
        path: &Path,
        shown: &Path,
        name: &str,
        doc: &Document,
        parent: Option<&Via>,
        stack: &mut Vec<PathBuf>,
        out: &mut FileResult,
    ) {
        let from = parent.map_or_else(String::new, |p| format!(", from {}", p.site));
        for call in module_calls(path, shown, &doc.value) {
            let line = doc.positions.locate(&call.pointer).map_or(0, |s| s.line);
            let Some(instances) = instances(&doc.value, &call) else {
                // `if` is false: the module is not deployed.
                continue;
            };
            let (Some(file), Some(shown_file)) = (&call.file, &call.shown) else {
                if call.call.pointer("/properties/template").is_some() {
                    // Read from its documented parameters (`read_known_modules`).
                    continue;
                }
                out.unresolved.push(Unresolved {
                    file: name.to_string(),
                    line,
                    resource: ResourceRef {
                        kind: "bicep-module".into(),
                        name: call.name.clone(),
                    },
                    display: format!(
                        "Bicep module `{}`{from}, which receives {}",
                        call.name,
                        received(&doc.value, &call, RECEIVED_LIMIT)
                    ),
                    field: "registry-module".into(),
                    expression: Some(call.source.clone()),
                    path: format!("{}/module", call.pointer),
                });
                continue;
            };
            if !file.is_file() {
                // Not here (a file copied without its modules, a path built at deploy
                // time): what it deploys is a blind spot, said so.
                out.unresolved.push(Unresolved {
                    file: name.to_string(),
                    line,
                    resource: ResourceRef {
                        kind: "bicep-module".into(),
                        name: call.name.clone(),
                    },
                    display: format!("Bicep module `{}`{from}", call.name),
                    field: "module-missing".into(),
                    expression: Some(shown_file.display().to_string()),
                    path: format!("{}/module", call.pointer),
                });
                continue;
            }
            let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
            if stack.contains(&key) {
                continue;
            }
            let too_deep = stack.len() > crate::scan::MAX_MODULE_DEPTH;
            if too_deep || out.documents >= MAX_MODULE_DOCUMENTS {
                out.unresolved.push(Unresolved {
                    file: name.to_string(),
                    line,
                    resource: ResourceRef {
                        kind: "bicep-module".into(),
                        name: call.name.clone(),
                    },
                    display: format!("Bicep module `{}`{from}", call.name),
                    field: if too_deep {
                        "module-depth"
                    } else {
                        "module-limit"
                    }
                    .into(),
                    expression: Some(call.source.clone()),
                    path: format!("{}/module", call.pointer),
                });
                continue;
            }
            let shown_name = shown_file.display().to_string();
            let input = Input {
                name: shown_name.clone(),
                path: file.clone(),
                text: None,
            };
            let text = match self.read(&input) {
                Ok(t) => t,
                Err(message) => {
                    out.errors.push(FileError {
                        file: shown_name,
                        line: 0,
                        message: format!(
                            "module `{}` (called at {name}:{line}): {message}",
                            call.name
                        ),
                    });
                    continue;
                }
            };
            let decoded = match decode_module(file, &text) {
                Ok(d) => d,
                Err(e) => {
                    out.errors.push(FileError {
                        file: shown_name,
                        line: e.line,
                        message: format!(
                            "module `{}` (called at {name}:{line}): invalid file at line {}, column {}: {}",
                            call.name, e.line, e.column, e.message
                        ),
                    });
                    continue;
                }
            };
            let syntax = if decode_module_is_bicep(file) {
                Syntax::Bicep
            } else {
                Syntax::Json
            };
            let lines: Vec<&str> = text.lines().collect();
            let directives = Directives::parse(file, &text);
            stack.push(key);
            for (instance, values) in instances {
                let mut module_doc = decoded.clone();
                bind_module(&mut module_doc.value, &values, &instance.unknown);
                let aliases = if syntax == Syntax::Bicep {
                    read_known_modules(&mut module_doc.value)
                } else {
                    Vec::new()
                };
                let origins = instance
                    .unknown
                    .iter()
                    .map(|(param, written)| {
                        let pointer = format!(
                            "{}/properties/parameters/{}/value",
                            call.pointer,
                            computeguard_decode::escape_key(param)
                        );
                        // A parameter of the caller passed down: where the caller gets it.
                        let outer = parent.and_then(|p| p.origin(written)).cloned();
                        let origin = outer.unwrap_or_else(|| Origin {
                            file: name.to_string(),
                            line: doc.positions.locate(&pointer).map_or(line, |s| s.line),
                            path: pointer,
                            expression: written.clone(),
                        });
                        (param.clone(), origin)
                    })
                    .collect();
                let via = Via {
                    site: format!("module `{}` at {name}:{line}{from}", instance.label),
                    label: match parent {
                        Some(p) => format!("{}/{}", p.label, instance.label),
                        None => instance.label,
                    },
                    origins,
                };
                let ctx = DocContext {
                    path: file,
                    syntax,
                    name: &shown_name,
                    lines: &lines,
                    directives: &directives,
                    module: None,
                    via: Some(&via),
                };
                let before = out.unresolved.len();
                self.document(&ctx, &module_doc, out);
                relocate(out, &shown_name, &module_doc, &lines, &aliases);
                for entry in out.unresolved.iter_mut().skip(before) {
                    via.retarget(entry);
                }
                if syntax == Syntax::Bicep {
                    self.bicep_modules(
                        file,
                        shown_file,
                        &shown_name,
                        &module_doc,
                        Some(&via),
                        stack,
                        out,
                    );
                }
            }
            stack.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_parameters_an_expression_uses() {
        assert_eq!(
            parameters_used("[if(parameters('On'), parameters('size'), 'x')]"),
            vec!["on", "size"]
        );
        assert!(parameters_used("[variables('a')]").is_empty());
    }

    #[test]
    fn params_given_as_one_expression_bind_all_or_nothing() {
        let caller = json!({"variables": {"known": {"size": "Standard_NC6"}},
                            "parameters": {"open": {"type": "object"}}});
        let call = |params: &str| ModuleCall {
            name: "m".into(),
            pointer: "/resources/0".into(),
            source: "./m.bicep".into(),
            file: None,
            shown: None,
            call: json!({"properties": {"parameters": params}}),
        };
        let module = json!({"parameters": {
            "size": {"type": "string", "defaultValue": "Standard_D2s_v3"},
            "zone": {"type": "string", "defaultValue": "1"}}});
        let bound = |params: &str| {
            let got = instances(&caller, &call(params)).unwrap_or_default();
            let (instance, values) = got.into_iter().next().expect("one instance");
            let mut m = module.clone();
            bind_module(&mut m, &values, &instance.unknown);
            m
        };
        let known = bound("[variables('known')]");
        assert_eq!(known["parameters"]["size"]["defaultValue"], "Standard_NC6");
        assert_eq!(known["parameters"]["zone"]["defaultValue"], "1");
        // An object known only at deploy time may set any parameter: no default holds.
        let open = bound("[parameters('open')]");
        assert!(open["parameters"]["size"].get("defaultValue").is_none());
        assert!(open["parameters"]["zone"].get("defaultValue").is_none());
    }

    #[test]
    fn a_loop_over_a_longer_array_than_the_limit_is_checked_once() {
        let items: Vec<Value> = (0..=MAX_LOOP_INSTANCES)
            .map(|i| json!({"size": format!("s{i}")}))
            .collect();
        let caller = json!({"variables": {"pools": items}});
        let call = ModuleCall {
            name: "pool".into(),
            pointer: "/resources/0".into(),
            source: "./pool.bicep".into(),
            file: None,
            shown: None,
            call: json!({"copy": {"count": "[length(variables('pools'))]"},
                "properties": {"parameters": {
                    "size": {"value": "[variables('pools')[copyIndex()].size]"}}}}),
        };
        let got = instances(&caller, &call).unwrap_or_default();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0.label, "pool[*]");
        assert_eq!(got[0].0.unknown[0].0, "size");
    }

    #[test]
    fn module_loops_expand_over_known_arrays() {
        let caller = json!({"parameters": {"pools": {"type": "array",
            "defaultValue": [{"size": "Standard_NC6"}, {"size": "Standard_NC24ads_A100_v4"}]},
            "other": {"type": "array"}}});
        let call = |count: &str| ModuleCall {
            name: "pool".into(),
            pointer: "/resources/0".into(),
            source: "./pool.bicep".into(),
            file: None,
            shown: None,
            call: json!({"copy": {"count": count},
                "properties": {"parameters": {
                    "size": {"value": "[parameters('pools')[copyIndex()].size]"},
                    "fixed": {"value": "x"}}}}),
        };
        let known = instances(&caller, &call("[length(parameters('pools'))]")).unwrap_or_default();
        let got: Vec<(String, Value)> = known
            .iter()
            .map(|(i, v)| (i.label.clone(), v["size"].clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("pool[0]".into(), json!("Standard_NC6")),
                ("pool[1]".into(), json!("Standard_NC24ads_A100_v4"))
            ]
        );
        let unknown =
            instances(&caller, &call("[length(parameters('other'))]")).unwrap_or_default();
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].0.label, "pool[*]");
        assert_eq!(unknown[0].0.unknown[0].0, "size");
        assert_eq!(unknown[0].1["fixed"], "x");
    }
}
