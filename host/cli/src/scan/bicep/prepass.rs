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
            self.modules(path, &shown, &root, &mut stack, &mut docs);
        }
        Ok((docs, source))
    }

    /// Appends the bound instances of the local modules `doc` (of `path`) calls, nested ones
    /// too; what cannot be read adds nothing (the evaluation reports it).
    fn modules(
        &self,
        path: &Path,
        shown: &Path,
        doc: &Document,
        stack: &mut Vec<PathBuf>,
        out: &mut Vec<(String, Document)>,
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
            stack.push(key);
            for (instance, values) in instances {
                let mut module_doc = decoded.clone();
                bind_module(&mut module_doc.value, &values, &instance.unknown);
                if decode_module_is_bicep(file) {
                    read_known_modules(&mut module_doc.value);
                    self.modules(file, shown_file, &module_doc, stack, out);
                }
                out.push((shown_file.display().to_string(), module_doc));
            }
            stack.pop();
        }
    }
}
