//! What `check`'s pre-passes (the change-wide quota sums, the workspace region, the
//! cross-file facts) read of a Bicep or ARM input: the documents the evaluation sees.

use super::avm::{read_known_modules, registry_params_document};
use super::modules::{
    MAX_MODULE_DOCUMENTS, bind_module, called_modules, decode_module, decode_module_is_bicep,
    instances, module_calls,
};
use super::params::{ParamFile, is_bicepparam, is_parameters_json, parse_param_file};
use crate::scan::{Input, Scan};
use computeguard_decode::Document;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
    /// The `Expander` of `inputs`.
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
    /// As [`crate::scan::decode_for_model`]: the input does not decode (reported by the
    /// evaluation itself).
    pub fn decode(
        &self,
        input: &Input,
        text: &str,
    ) -> Result<(Vec<Document>, crate::scan::Source), String> {
        let (named, source) = self.decode_named(input, text)?;
        Ok((named.into_iter().map(|(_, d)| d).collect(), source))
    }

    /// [`Expander::decode`], each document with the name of the file it comes from (a
    /// module's file, joined to the caller's name as findings show it).
    ///
    /// # Errors
    ///
    /// As [`Expander::decode`].
    pub fn decode_named(
        &self,
        input: &Input,
        text: &str,
    ) -> Result<(Vec<(String, Document)>, crate::scan::Source), String> {
        let scan = self.scan;
        let path = input.path.as_path();
        if std::fs::canonicalize(path)
            .ok()
            .is_some_and(|p| self.called.contains_key(&p))
        {
            return Ok((Vec::new(), crate::scan::Source::Bicep));
        }
        if is_bicepparam(path) {
            return match parse_param_file(path, text) {
                Ok(ParamFile {
                    using_other: Some(module),
                    ..
                }) => Ok((
                    registry_params_document(path, text, &module)
                        .into_iter()
                        .map(|d| (input.name.clone(), d))
                        .collect(),
                    crate::scan::Source::Bicep,
                )),
                _ => Ok((Vec::new(), crate::scan::Source::Bicep)),
            };
        }
        let (docs, source) = crate::scan::decode_for_model(path, text, &scan.var_files)?;
        let mut docs: Vec<(String, Document)> =
            docs.into_iter().map(|d| (input.name.clone(), d)).collect();
        let bicep = decode_module_is_bicep(path);
        let json = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if !(bicep || json) || docs.len() != 1 {
            return Ok((docs, source));
        }
        if let Some((_, doc)) = docs.first_mut() {
            if json && is_parameters_json(&doc.value) {
                return Ok((Vec::new(), source));
            }
            scan.apply_param_files(path, &mut doc.value);
            if bicep {
                read_known_modules(&mut doc.value);
            }
        }
        if bicep && let Some((_, root)) = docs.first().cloned() {
            let mut stack = vec![std::fs::canonicalize(path).unwrap_or_default()];
            let shown = PathBuf::from(&input.name);
            let chain = [(path.to_path_buf(), input.name.clone())];
            let mut modules = Vec::new();
            self.labelled(path, &shown, &root, None, &chain, &mut stack, &mut modules);
            docs.extend(modules.into_iter().map(|m| (m.name, m.doc)));
        }
        Ok((docs, source))
    }

    /// The documents of the local modules `input` (whose text is `text`) calls, Bicep or
    /// Terraform, nested ones too, each bound as `check` binds it and named as `check` names
    /// what it deploys: for `plan`, which edits where a module's size is set. Empty for a
    /// file another input calls (its documents come with its caller).
    pub fn module_documents(&self, input: &Input, text: &str) -> Vec<ModuleDocument> {
        let Ok((docs, _)) = self.decode_named(input, text) else {
            return Vec::new();
        };
        let mut roots = docs.into_iter().filter(|(n, _)| *n == input.name);
        let (Some((_, root)), None) = (roots.next(), roots.next()) else {
            return Vec::new();
        };
        let path = input.path.as_path();
        let root_file = (path.to_path_buf(), input.name.clone());
        let mut out = Vec::new();
        if decode_module_is_bicep(path) {
            let mut stack = vec![std::fs::canonicalize(path).unwrap_or_default()];
            let shown = PathBuf::from(&input.name);
            let chain = vec![root_file];
            self.labelled(path, &shown, &root, None, &chain, &mut stack, &mut out);
        } else if matches!(
            crate::scan::terraform::kind(path),
            Some(crate::scan::terraform::Kind::Hcl | crate::scan::terraform::Kind::Json)
        ) {
            let folder = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let mut stack = vec![std::fs::canonicalize(folder).unwrap_or_default()];
            let shown = PathBuf::from(&input.name);
            let chain = vec![root_file];
            terraform_modules(path, &shown, &root, "", &chain, &mut stack, &mut out);
        }
        out
    }

    /// Appends the bound instances of the local modules `doc` (of `path`) calls, nested ones
    /// first, each with its instance label and the files on the way; what cannot be read
    /// adds nothing (the evaluation reports it). `check` keeps the documents, `plan` the rest.
    #[expect(
        clippy::too_many_arguments,
        reason = "a recursion over module calls; the arguments are its position"
    )]
    fn labelled(
        &self,
        path: &Path,
        shown: &Path,
        doc: &Document,
        parent: Option<&str>,
        chain: &[(PathBuf, String)],
        stack: &mut Vec<PathBuf>,
        out: &mut Vec<ModuleDocument>,
    ) {
        for call in module_calls(path, shown, &doc.value) {
            let (Some(file), Some(shown_file), Some(instances)) =
                (&call.file, &call.shown, instances(&doc.value, &call))
            else {
                continue;
            };
            let key = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
            if !file.is_file()
                || stack.contains(&key)
                || stack.len() > crate::scan::MAX_MODULE_DEPTH
                || out.len() >= MAX_MODULE_DOCUMENTS
            {
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
            let line = doc.positions.locate(&call.pointer).map_or(0, |s| s.line);
            let caller = chain.last().map_or("", |(_, n)| n.as_str()).to_string();
            let mut inner = chain.to_vec();
            inner.push((file.clone(), shown_file.display().to_string()));
            stack.push(key);
            for (instance, values) in instances {
                let mut module_doc = decoded.clone();
                bind_module(&mut module_doc.value, &values, &instance.unknown);
                let label = match parent {
                    Some(p) => format!("{p}/{}", instance.label),
                    None => instance.label.clone(),
                };
                if decode_module_is_bicep(file) {
                    read_known_modules(&mut module_doc.value);
                    self.labelled(
                        file,
                        shown_file,
                        &module_doc,
                        Some(&label),
                        &inner,
                        stack,
                        out,
                    );
                }
                out.push(ModuleDocument {
                    name: shown_file.display().to_string(),
                    via: format!("module `{}` at {caller}:{line}", instance.label),
                    instance: ModuleInstance::Bicep(label),
                    chain: inner.clone(),
                    doc: module_doc,
                });
            }
            stack.pop();
        }
    }
}

/// How `check` names what a module instance deploys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleInstance {
    /// A Bicep module's instance label (`gpu`, `pools[1]`, nested `cluster/gpuPool`): a
    /// resource is `NAME (module LABEL)`.
    Bicep(String),
    /// A Terraform module's address (`module.gpu.`): a resource is `module.gpu.TYPE.NAME`.
    Terraform(String),
}

/// A document of a local module an input calls.
#[derive(Clone, Debug)]
pub struct ModuleDocument {
    /// The module's file as findings name it.
    pub name: String,
    /// The call that deploys it (`module `gpu` at main.bicep:4`, `module.gpu at main.tf:12`).
    pub via: String,
    pub instance: ModuleInstance,
    /// The files on the way, the calling input first and the module's file last: (path,
    /// name as findings show it).
    pub chain: Vec<(PathBuf, String)>,
    /// The module's document, bound to what the call passes.
    pub doc: Document,
}

impl ModuleDocument {
    /// How `check` names `r` of this document in its findings.
    pub fn resource_name(&self, r: &computeguard_policy_core::compute::Resource) -> String {
        match &self.instance {
            ModuleInstance::Bicep(label) => format!(
                "{} (module {label})",
                computeguard_policy_core::eval::display_name(r)
            ),
            ModuleInstance::Terraform(address) => {
                format!("{address}{}.{}", r.source_kind, r.name)
            }
        }
    }
}

/// The Terraform modules `doc` (of `path`, shown as `shown`) calls, as `check` follows them
/// (`Scan::modules`): each file of a local module with the call's arguments bound.
fn terraform_modules(
    path: &Path,
    shown: &Path,
    doc: &Document,
    prefix: &str,
    chain: &[(PathBuf, String)],
    stack: &mut Vec<PathBuf>,
    out: &mut Vec<ModuleDocument>,
) {
    use crate::scan::terraform;
    for call in terraform::module_calls(path, shown, &doc.value) {
        let Some(dir) = &call.dir else {
            continue;
        };
        let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if !dir.is_dir() || stack.contains(&key) || stack.len() > terraform::MAX_MODULE_DEPTH {
            continue;
        }
        let address = format!("{prefix}module.{}.", call.name);
        let line = doc.positions.locate(&call.pointer).map_or(0, |s| s.line);
        let caller = chain.last().map_or("", |(_, n)| n.as_str()).to_string();
        stack.push(key);
        for file in terraform::module_files(&call) {
            let Ok(module_doc) = file.decoded else {
                continue;
            };
            let mut inner = chain.to_vec();
            inner.push((file.path.clone(), file.shown.display().to_string()));
            terraform_modules(
                &file.path,
                &file.shown,
                &module_doc,
                &address,
                &inner,
                stack,
                out,
            );
            out.push(ModuleDocument {
                name: file.shown.display().to_string(),
                via: format!("{} at {caller}:{line}", address.trim_end_matches('.')),
                instance: ModuleInstance::Terraform(address.clone()),
                chain: inner,
                doc: module_doc,
            });
        }
        stack.pop();
    }
}
