//! Parameter files: `.bicepparam` and `deploymentParameters.json` files read into values,
//! paired with a template by name or given with `--param-file`, applied to a template's
//! parameters, met as inputs (skipped with where they apply), and the warnings about values
//! that apply to nothing.

use super::modules::{
    called_modules, decode_module, decode_module_is_bicep, folder, is_remote, lexical_join,
};
use crate::report::{FileError, SkipKind};
use crate::scan::{FileResult, Input, Scan};
use computeguard_decode::{DecodeError, Document, decode_bicepparam, decode_json};
use computeguard_policy_core::read::arm::evaluate;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A parameters file: where it is and the values it gives.
#[derive(Clone, Debug)]
pub struct ParamFile {
    /// The path as given.
    pub path: PathBuf,
    /// For a `.bicepparam`: the template its `using` names, joined to its folder
    /// (lexically); `None` for a JSON parameters file, which names no template.
    pub using: Option<PathBuf>,
    /// `using` as written when it is not a local file (`br/public:...`, `none`).
    pub using_other: Option<String>,
    /// Parameter name -> its value, or `None` when known only at deploy time.
    pub values: Vec<(String, Option<Value>)>,
    /// The line each value is written on (for warnings about names no template declares).
    pub lines: Vec<(String, u32)>,
}

/// Whether `path` is a `.bicepparam` file.
pub fn is_bicepparam(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("bicepparam"))
}

/// Whether the decoded JSON `doc` is an ARM/Bicep parameters file: its `$schema` names
/// `deploymentParameters.json`, or (without a schema) it holds only `parameters` whose
/// entries each have `value` or `reference`, and `contentVersion`.
pub fn is_parameters_json(doc: &Value) -> bool {
    let Some(obj) = doc.as_object() else {
        return false;
    };
    if let Some(schema) = obj.get("$schema").and_then(Value::as_str) {
        return schema.contains("deploymentParameters.json");
    }
    let Some(Value::Object(params)) = obj.get("parameters") else {
        return false;
    };
    !params.is_empty()
        && obj
            .keys()
            .all(|k| matches!(k.as_str(), "parameters" | "contentVersion"))
        && params.values().all(|p| {
            p.as_object()
                .is_some_and(|p| p.contains_key("value") || p.contains_key("reference"))
        })
}

/// Reads a parameters file (`--param-file`, or one named on the command line).
///
/// # Errors
///
/// The file cannot be read, is not valid, or is not a parameters file.
pub fn read_param_file(path: &Path) -> anyhow::Result<ParamFile> {
    let text = crate::scan::open::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("--param-file `{}`: cannot read: {e}", path.display()))?;
    parse_param_file(path, &text).map_err(|e| anyhow::anyhow!("--param-file {e}"))
}

/// The parameters files among the `paths` named on the command line (a `.bicepparam`, or a
/// JSON file with the parameters schema): applied as if given with `--param-file`; and the
/// templates a named `.bicepparam` is `using` that are not among `paths`, to check as well.
///
/// # Errors
///
/// A named `.bicepparam` that cannot be read or decoded.
pub fn named_param_files(paths: &[PathBuf]) -> anyhow::Result<(Vec<ParamFile>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    let mut targets: Vec<PathBuf> = Vec::new();
    for p in paths.iter().filter(|p| p.is_file()) {
        let json = p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if is_bicepparam(p) {
            let file = read_param_file(p)?;
            if let Some(target) = &file.using
                && target.is_file()
                && !paths.iter().chain(&targets).any(|q| same_file(q, target))
            {
                targets.push(target.clone());
            }
            files.push(file);
        } else if json
            && let Ok(text) = crate::scan::open::read_to_string(p)
            && let Ok(file) = parse_param_file(p, &text)
        {
            files.push(file);
        }
    }
    Ok((files, targets))
}

/// Decodes the parameters file `path` whose content is `text`; the error names the file.
pub fn parse_param_file(path: &Path, text: &str) -> Result<ParamFile, String> {
    let at = |e: DecodeError| format!("{}:{}:{}: {}", path.display(), e.line, e.column, e.message);
    if is_bicepparam(path) {
        let p = decode_bicepparam(text).map_err(at)?;
        let doc = &p.document.value;
        // The file's own scope: every `var` and `param` of it, as variables.
        let scope = json!({"variables": doc.get("variables").cloned().unwrap_or(json!({}))});
        let values = doc
            .get("parameters")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| {
                        let value = v.get("value").and_then(|v| evaluate(&scope, v));
                        (k.clone(), value)
                    })
                    .collect()
            })
            .unwrap_or_default();
        let lines = written_lines(&p.document, doc);
        let (using, using_other) = match p.using {
            Some(u) if !is_remote(&u) => (Some(lexical_join(folder(path), &u)), None),
            Some(u) => (None, Some(u)),
            // `using none`: values for no template in particular, like a JSON file.
            None => (None, None),
        };
        return Ok(ParamFile {
            path: path.to_path_buf(),
            using,
            using_other,
            values,
            lines,
        });
    }
    let doc = decode_json(text).map_err(at)?;
    if !is_parameters_json(&doc.value) {
        return Err(format!(
            "`{}`: not a parameters file (expected the deploymentParameters.json schema: `{{\"parameters\": {{\"name\": {{\"value\": ...}}}}}}`)",
            path.display()
        ));
    }
    let values = doc
        .value
        .get("parameters")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                // A literal value; a Key Vault `reference` is known at deploy time only.
                .map(|(k, v)| (k.clone(), v.get("value").cloned()))
                .collect()
        })
        .unwrap_or_default();
    Ok(ParamFile {
        path: path.to_path_buf(),
        using: None,
        using_other: None,
        values,
        lines: written_lines(&doc, &doc.value),
    })
}

/// The line of each entry of `parameters` in a decoded parameters file.
pub(super) fn written_lines(doc: &Document, value: &Value) -> Vec<(String, u32)> {
    value
        .get("parameters")
        .and_then(Value::as_object)
        .map(|m| {
            m.keys()
                .map(|k| {
                    let at = format!("/parameters/{}", computeguard_decode::escape_key(k));
                    (k.clone(), doc.positions.locate(&at).map_or(0, |s| s.line))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The parameters files paired by name with the template `path`: `X.parameters.json` and
/// `X.bicepparam` (when its `using` names `X`) beside `X.bicep` / `X.json`. Files that
/// cannot be read or decoded add nothing here (they are reported when they are checked).
pub fn paired(path: &Path) -> Vec<ParamFile> {
    let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let json_file = path.with_file_name(format!("{stem}.parameters.json"));
    if json_file.is_file()
        && let Ok(text) = crate::scan::open::read_to_string(&json_file)
        && let Ok(p) = parse_param_file(&json_file, &text)
    {
        out.push(p);
    }
    let bicepparam = path.with_file_name(format!("{stem}.bicepparam"));
    if bicepparam.is_file()
        && let Ok(text) = crate::scan::open::read_to_string(&bicepparam)
        && let Ok(p) = parse_param_file(&bicepparam, &text)
        && p.using.as_deref().is_some_and(|u| same_file(u, path))
    {
        out.push(p);
    }
    out
}

/// The template a parameters file beside it is paired with by name (`X.parameters.json` or
/// `X.bicepparam` -> `X.bicep`, else `X.json`), if that template exists.
pub fn paired_template(param_file: &Path) -> Option<PathBuf> {
    let name = param_file.file_name()?.to_str()?;
    let lower = name.to_ascii_lowercase();
    let stem = if lower.ends_with(".parameters.json") {
        &name[..name.len() - ".parameters.json".len()]
    } else if lower.ends_with(".bicepparam") {
        &name[..name.len() - ".bicepparam".len()]
    } else {
        return None;
    };
    ["bicep", "json"]
        .iter()
        .map(|ext| param_file.with_file_name(format!("{stem}.{ext}")))
        .find(|p| p.is_file())
}

/// Whether two paths name the same file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// Gives the parameters of `template` (an ARM-shaped template) the values of `files`, in
/// order, for the parameters it declares: a known value becomes the parameter's
/// `defaultValue`, one known only at deploy time removes it. Returns the names set.
pub fn apply(template: &mut Value, files: &[&ParamFile]) -> Vec<String> {
    let mut set = Vec::new();
    let Some(Value::Object(params)) = template.get_mut("parameters") else {
        return set;
    };
    for file in files {
        for (name, value) in &file.values {
            let Some((key, p)) = params
                .iter_mut()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
            else {
                continue;
            };
            bind(p, value.as_ref());
            set.push(key.clone());
        }
    }
    set
}

/// Sets the `defaultValue` of the parameter declaration `p` to the literal `value`, or
/// removes it (`None`: known only at deploy time).
pub(super) fn bind(p: &mut Value, value: Option<&Value>) {
    let Some(p) = p.as_object_mut() else {
        return;
    };
    match value {
        Some(v) => {
            p.insert("defaultValue".into(), escape(v));
        }
        None => {
            p.remove("defaultValue");
        }
    }
}

/// A literal as a template writes it: a string starting with `[` escaped as `[[`.
pub(super) fn escape(v: &Value) -> Value {
    match v {
        Value::String(s) if s.starts_with('[') => Value::String(format!("[{s}")),
        Value::Array(a) => Value::Array(a.iter().map(escape).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), escape(v))).collect()),
        other => other.clone(),
    }
}

impl Scan<'_> {
    /// Warnings about parameter files whose values apply to nothing (`file:line: message`),
    /// as Terraform warns about a value for an undeclared variable: a name no template it
    /// applies to declares, a `using` template that is not checked, a file for a registry
    /// module given only with `--param-file`.
    pub fn param_file_warnings(&self, inputs: &[Input]) -> Vec<String> {
        let called = called_modules(inputs);
        // The root templates checked and the parameters each declares (lowercased).
        let mut templates: Vec<(PathBuf, Vec<String>)> = Vec::new();
        for input in inputs.iter().filter(|i| i.text.is_none()) {
            let bicep = decode_module_is_bicep(&input.path);
            let json = input
                .path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.eq_ignore_ascii_case("json"));
            if !(bicep || json)
                || std::fs::canonicalize(&input.path)
                    .ok()
                    .is_some_and(|p| called.contains_key(&p))
            {
                continue;
            }
            let Ok(text) = self.read(input) else {
                continue;
            };
            let Ok(doc) = decode_module(&input.path, &text) else {
                continue;
            };
            let is_template = doc.value.get("parameters").is_some_and(Value::is_object)
                && (doc.value.get("resources").is_some() || doc.value.get("$schema").is_some());
            if !is_template || is_parameters_json(&doc.value) {
                continue;
            }
            let declared = doc
                .value
                .get("parameters")
                .and_then(Value::as_object)
                .map(|m| m.keys().map(|k| k.to_ascii_lowercase()).collect())
                .unwrap_or_default();
            templates.push((input.path.clone(), declared));
        }
        let mut out = Vec::new();
        let undeclared = |file: &ParamFile, declared: &dyn Fn(&str) -> bool, whose: &str| {
            file.lines
                .iter()
                .filter(|(name, _)| !declared(&name.to_ascii_lowercase()))
                .map(|(name, line)| {
                    format!(
                        "{}:{line}: `{name}` is not a parameter of {whose}: its value applies to nothing",
                        file.path.display()
                    )
                })
                .collect::<Vec<_>>()
        };
        for file in &self.param_files {
            let shown = file.path.display();
            match (&file.using, &file.using_other) {
                (_, Some(module)) => {
                    if !inputs.iter().any(|i| same_file(&i.path, &file.path)) {
                        out.push(format!(
                            "{shown}:1: its `using` names the registry module `{module}`: name the file among the paths to check what it deploys"
                        ));
                    }
                }
                (Some(target), _) => {
                    match templates.iter().find(|(p, _)| same_file(p, target)) {
                        None => out.push(format!(
                            "{shown}:1: its `using` template `{}` is not among the files checked: its values apply to nothing",
                            target.display()
                        )),
                        Some((p, declared)) => out.extend(undeclared(
                            file,
                            &|n| declared.iter().any(|d| d == n),
                            &format!("`{}`", p.display()),
                        )),
                    }
                }
                (None, None) if templates.is_empty() => out.push(format!(
                    "{shown}: no ARM or Bicep template is checked: its values apply to nothing"
                )),
                (None, None) => out.extend(undeclared(
                    file,
                    &|n| templates.iter().any(|(_, d)| d.iter().any(|x| x == n)),
                    "any template checked",
                )),
            }
        }
        for (path, declared) in &templates {
            for file in paired(path) {
                out.extend(undeclared(
                    &file,
                    &|n| declared.iter().any(|d| d == n),
                    &format!("`{}`", path.display()),
                ));
            }
        }
        out.dedup();
        out
    }

    /// A parameters file met as an input: skipped (it holds no resources), saying whether and
    /// where its values apply; an invalid one is an error.
    pub(in crate::scan) fn param_file(&self, name: &str, path: &Path, text: &str) -> FileResult {
        let mut out = FileResult::default();
        let parsed = match parse_param_file(path, text) {
            Ok(p) => p,
            Err(message) => {
                out.errors.push(FileError {
                    file: name.to_string(),
                    line: 0,
                    message: format!("invalid parameters file: {message}"),
                });
                return out;
            }
        };
        if let Some(module) = &parsed.using_other
            && is_bicepparam(path)
        {
            return self.registry_params(name, path, text, module);
        }
        if let Some(target) = &parsed.using
            && !target.is_file()
        {
            out.errors.push(FileError {
                file: name.to_string(),
                line: 1,
                message: format!(
                    "its `using` names `{}`, which does not exist",
                    target.display()
                ),
            });
            return out;
        }
        let given = self.param_files.iter().any(|p| same_file(&p.path, path));
        let paired = paired_template(path);
        let why = match (&parsed.using, &parsed.using_other) {
            (_, Some(other)) => {
                format!("Bicep parameter values for `{other}`, not a local template: not applied")
            }
            (Some(target), _) if given => format!(
                "Bicep parameter values for `{}`: applied with `--param-file` when it is checked",
                target.display()
            ),
            (Some(target), _) if paired.as_deref().is_some_and(|t| same_file(t, target)) => {
                format!(
                    "Bicep parameter values for `{}`: applied when it is checked",
                    target.display()
                )
            }
            (Some(target), _) => format!(
                "Bicep parameter values for `{}` (its `using`), not named after it: not applied; pass `--param-file {name}`",
                target.display()
            ),
            (None, None) if given => {
                "ARM/Bicep parameter values: applied with `--param-file` to the templates checked"
                    .to_string()
            }
            (None, None) => match paired {
                Some(t) => format!(
                    "ARM/Bicep parameter values for `{}`: applied when it is checked",
                    t.display()
                ),
                None => format!(
                    "ARM/Bicep parameter values not named after a template beside them (`X.parameters.json` beside `X.bicep` or `X.json`): not applied; pass `--param-file {name}` with the template"
                ),
            },
        };
        out.skipped = Some((SkipKind::Variables, why));
        out
    }

    /// Gives the root template `path` (decoded as `template`) the values of the parameters
    /// files paired with it, then of the `--param-file`s that apply to it.
    pub(in crate::scan) fn apply_param_files(&self, path: &Path, template: &mut Value) {
        let looks_like_template = template.get("parameters").is_some_and(Value::is_object)
            && (template.get("resources").is_some() || template.get("$schema").is_some());
        if !looks_like_template {
            return;
        }
        let paired = paired(path);
        let given = self.param_files.iter().filter(|p| match &p.using {
            Some(target) => same_file(target, path),
            None => p.using_other.is_none(),
        });
        let files: Vec<&ParamFile> = paired.iter().chain(given).collect();
        apply(template, &files);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parameters_json_is_recognised_by_schema_or_shape() {
        assert!(is_parameters_json(&json!({
            "$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentParameters.json#",
            "contentVersion": "1.0.0.0", "parameters": {}
        })));
        assert!(is_parameters_json(
            &json!({"parameters": {"a": {"value": 1}, "b": {"reference": {}}}})
        ));
        // A template has parameters too, but declarations, and resources.
        assert!(!is_parameters_json(&json!({
            "parameters": {"a": {"type": "string"}}, "resources": []
        })));
    }

    #[test]
    fn values_bind_in_order_and_a_reference_unbinds() {
        let mut t = json!({"parameters": {
            "vmSize": {"type": "string", "defaultValue": "Standard_D2s_v3"},
            "pw": {"type": "securestring", "defaultValue": "x"},
            "tag": {"type": "string"}}});
        let first = ParamFile {
            path: "a".into(),
            using: None,
            using_other: None,
            values: vec![
                ("VMSIZE".into(), Some(json!("Standard_NC6"))),
                ("pw".into(), None),
                ("undeclared".into(), Some(json!(1))),
            ],
            lines: Vec::new(),
        };
        let second = ParamFile {
            values: vec![("tag".into(), Some(json!("[not an expression]")))],
            ..first.clone()
        };
        let set = apply(&mut t, &[&first, &second]);
        assert_eq!(set, vec!["vmSize", "pw", "tag"]);
        assert_eq!(t["parameters"]["vmSize"]["defaultValue"], "Standard_NC6");
        assert!(t["parameters"]["pw"].get("defaultValue").is_none());
        assert_eq!(
            t["parameters"]["tag"]["defaultValue"],
            "[[not an expression]"
        );
    }
}
