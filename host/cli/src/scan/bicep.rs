//! Bicep and ARM files in a scan: parameter files, and local modules followed with what the
//! call passes.
//!
//! Parameter files give values to a template's parameters, lowest precedence first: the
//! template's defaults, then the files paired with it by name (`X.parameters.json` and
//! `X.bicepparam` beside `X.bicep` or `X.json`; a `.bicepparam` only when its `using` names
//! that template), then the files given with `--param-file` (or named on the command line),
//! in order. A JSON parameters file (the `deploymentParameters.json` schema) applies to every
//! root template checked, for the parameters it declares; a `.bicepparam` to the template its
//! `using` names. A Key Vault reference or a value known only at deploy time
//! (`readEnvironmentVariable(...)`) leaves the parameter unresolved.
//!
//! A module call (`module gpu './gpu.bicep' = { params: {...} }`) to a local `.bicep` or
//! `.json` file is followed: the module is checked as a document of its own file, its
//! parameters bound to what the call passes (evaluated in the caller's scope); a value the
//! caller cannot know leaves the parameter without a value, so what depends on it is
//! unresolved. A call whose `if` is false deploys nothing; a loop over a known array checks
//! the module once per item. A registry (`br:`, `br/alias:`) or template spec (`ts:`)
//! module is not read: it is an unresolved fact naming what it receives.

use super::{DocContext, FileResult, Input, Scan, Syntax, Via};
use crate::report::{FileError, ResourceRef, SkipKind, Unresolved};
use crate::suppress::Directives;
use computeguard_decode::{DecodeError, Document, decode_bicep, decode_bicepparam, decode_json};
use computeguard_policy_core::read::arm::evaluate;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Most bytes of what a registry module receives shown in its unresolved entry.
const RECEIVED_LIMIT: usize = 600;

/// Decodes inputs for the pre-passes of `check` (the change-wide quota sums, the workspace
/// region, the cross-file facts) as the evaluation sees them: a Bicep or ARM template with
/// its parameter files applied and, for Bicep, each instance of a local module it calls as a
/// document of its own with the call's values bound; a module file that another input calls
/// gives nothing alone (its instances come with its caller).
pub struct Expander<'s> {
    scan: &'s Scan<'s>,
    called: HashMap<PathBuf, String>,
}

impl<'s> Scan<'s> {
    /// The [`Expander`] of `inputs`.
    pub fn expander(&'s self, inputs: &[Input]) -> Expander<'s> {
        Expander {
            scan: self,
            called: called_modules(inputs),
        }
    }
}

impl Expander<'_> {
    /// The documents of `input` (whose text is `text`) and the source to read them as.
    ///
    /// # Errors
    ///
    /// As [`super::decode_for_model`]: the input does not decode (reported by the
    /// evaluation itself).
    pub fn decode(
        &self,
        input: &Input,
        text: &str,
    ) -> Result<(Vec<Document>, super::Source), String> {
        let scan = self.scan;
        let path = input.path.as_path();
        if std::fs::canonicalize(path)
            .ok()
            .is_some_and(|p| self.called.contains_key(&p))
        {
            return Ok((Vec::new(), super::Source::Bicep));
        }
        if is_bicepparam(path) {
            return match parse_param_file(path, text) {
                Ok(ParamFile {
                    using_other: Some(module),
                    ..
                }) => Ok((
                    registry_params_document(path, text, &module)
                        .into_iter()
                        .collect(),
                    super::Source::Bicep,
                )),
                _ => Ok((Vec::new(), super::Source::Bicep)),
            };
        }
        let (mut docs, source) = super::decode_for_model(path, text, &scan.var_files)?;
        let bicep = decode_module_is_bicep(path);
        let json = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if !(bicep || json) || docs.len() != 1 {
            return Ok((docs, source));
        }
        if let Some(doc) = docs.first_mut() {
            if json && is_parameters_json(&doc.value) {
                return Ok((Vec::new(), source));
            }
            scan.apply_param_files(path, &mut doc.value);
            if bicep {
                read_known_modules(&mut doc.value);
            }
        }
        if bicep && let Some(root) = docs.first().cloned() {
            let mut stack = vec![std::fs::canonicalize(path).unwrap_or_default()];
            self.modules(path, &root, &mut stack, &mut docs);
        }
        Ok((docs, source))
    }

    /// Appends the bound instances of the local modules `doc` (of `path`) calls, nested ones
    /// too; what cannot be read adds nothing (the evaluation reports it).
    fn modules(
        &self,
        path: &Path,
        doc: &Document,
        stack: &mut Vec<PathBuf>,
        out: &mut Vec<Document>,
    ) {
        for call in module_calls(path, path, &doc.value) {
            let (Some(file), Some(instances)) = (&call.file, instances(&doc.value, &call)) else {
                continue;
            };
            let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
            if !file.is_file() || stack.contains(&key) || stack.len() > super::MAX_MODULE_DEPTH {
                continue;
            }
            let input = Input {
                name: file.display().to_string(),
                path: file.clone(),
                text: None,
            };
            let Ok(text) = self.scan.read(&input) else {
                continue;
            };
            let Ok(decoded) = decode_module(file, &text) else {
                continue;
            };
            stack.push(key);
            for (instance, values) in instances {
                let mut module_doc = decoded.clone();
                bind_module(&mut module_doc.value, &values, &instance.unknown);
                if decode_module_is_bicep(file) {
                    read_known_modules(&mut module_doc.value);
                    self.modules(file, &module_doc, stack, out);
                }
                out.push(module_doc);
            }
            stack.pop();
        }
    }
}

/// The document of a `.bicepparam` whose `using` names the registry module `module`: a call
/// of that module with the file's values (positions: the file's), and the aliases that put
/// what is found in it at the file's lines.
fn registry_params_call(
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
fn registry_params_document(path: &Path, text: &str, module: &str) -> Option<Document> {
    registry_params_call(path, text, module)
        .ok()
        .map(|(d, _)| d)
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
    pub(super) fn param_file(&self, name: &str, path: &Path, text: &str) -> FileResult {
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

    /// A `.bicepparam` file whose `using` names a registry module or template spec
    /// (`using 'br/public:avm/...:0.10.0'`): its values are what a deployment of that module
    /// receives, so it is checked as a call of that module (the AVM AKS module is read from
    /// its documented parameters, at the lines of the file; another module is an unresolved
    /// fact naming what it receives).
    fn registry_params(&self, name: &str, path: &Path, text: &str, module: &str) -> FileResult {
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

    /// Gives the root template `path` (decoded as `template`) the values of the parameters
    /// files paired with it, then of the `--param-file`s that apply to it.
    pub(super) fn apply_param_files(&self, path: &Path, template: &mut Value) {
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

    /// Checks the modules the Bicep document `doc` (of `path`, shown as `name`) calls: each
    /// local module file as a document of its own, once per instance, with the parameters
    /// the call passes bound; a registry or template spec module is an unresolved fact.
    /// `parent`: the call that deploys `doc`, when it is a module itself; `stack`: the files
    /// on the way here (a module that calls itself is followed once).
    #[expect(
        clippy::too_many_arguments,
        reason = "a recursion over module calls; the arguments are its position"
    )]
    pub(super) fn bicep_modules(
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
            if stack.len() > super::MAX_MODULE_DEPTH {
                out.unresolved.push(Unresolved {
                    file: name.to_string(),
                    line,
                    resource: ResourceRef {
                        kind: "bicep-module".into(),
                        name: call.name.clone(),
                    },
                    display: format!("Bicep module `{}`{from}", call.name),
                    field: "module-depth".into(),
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
fn parameters_used(expression: &str) -> Vec<String> {
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
    pub(super) fn describe(&self, display: &str) -> String {
        format!("{display} (deployed by {})", self.site)
    }
}

/// The module files (canonical) that the Bicep files among `inputs` call, each with its
/// first caller (`main.bicep (module gpu)`): checked through the call, not alone.
pub(super) fn called_modules(inputs: &[Input]) -> HashMap<PathBuf, String> {
    let mut called = HashMap::new();
    for input in inputs {
        if !decode_module_is_bicep(&input.path) {
            continue;
        }
        let text = match &input.text {
            Some(t) => std::borrow::Cow::Borrowed(t.as_str()),
            None => match std::fs::read_to_string(&input.path) {
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

fn decode_module_is_bicep(file: &Path) -> bool {
    file.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("bicep"))
}

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
    let text = std::fs::read_to_string(path)
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
            && let Ok(text) = std::fs::read_to_string(p)
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
fn written_lines(doc: &Document, value: &Value) -> Vec<(String, u32)> {
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
        && let Ok(text) = std::fs::read_to_string(&json_file)
        && let Ok(p) = parse_param_file(&json_file, &text)
    {
        out.push(p);
    }
    let bicepparam = path.with_file_name(format!("{stem}.bicepparam"));
    if bicepparam.is_file()
        && let Ok(text) = std::fs::read_to_string(&bicepparam)
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
fn bind(p: &mut Value, value: Option<&Value>) {
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
fn escape(v: &Value) -> Value {
    match v {
        Value::String(s) if s.starts_with('[') => Value::String(format!("[{s}")),
        Value::Array(a) => Value::Array(a.iter().map(escape).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), escape(v))).collect()),
        other => other.clone(),
    }
}

/// Whether a module path (or `using` target) is a registry module or template spec rather
/// than a local file.
fn is_remote(source: &str) -> bool {
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
/// only at deploy time gives one instance in which what depends on the item is unknown.
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
        Some(Some(Value::Array(items))) => (0..items.len()).map(Some).collect(),
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
fn with_index(v: &Value, i: usize) -> Value {
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
fn shown_value(v: &Value) -> String {
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
const ALL_PARAMETERS: &str = "*";

/// The registry path of the Azure Verified Module for AKS clusters, after `br/public:` (or
/// `br:mcr.microsoft.com/bicep/`) and before `:version`.
const AVM_AKS: &str = "avm/res/container-service/managed-cluster";

/// Whether a module path names the Azure Verified Module for AKS clusters (any version).
fn is_avm_aks(source: &str) -> bool {
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
pub(super) fn relocate(
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
fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => Path::new("."),
    }
}

/// `base` joined with the relative path `rel`, `.` and `..` applied lexically.
fn lexical_join(base: &Path, rel: &str) -> PathBuf {
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

    #[test]
    fn the_parameters_an_expression_uses() {
        assert_eq!(
            parameters_used("[if(parameters('On'), parameters('size'), 'x')]"),
            vec!["on", "size"]
        );
        assert!(parameters_used("[variables('a')]").is_empty());
    }

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
