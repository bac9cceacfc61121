//! Terraform files in a scan: which files are Terraform, and decoding a `.tf` / `.tf.json`
//! file with the variables of its module folder resolved.
//!
//! A module is the set of `*.tf` and `*.tf.json` files of one directory (Terraform's own
//! rule). Its variables take, lowest precedence first, the `variable` blocks' defaults, then
//! `terraform.tfvars`, `terraform.tfvars.json` and `*.auto.tfvars(.json)` of the same
//! directory: the files `terraform plan` loads without `-var-file`; then the files given
//! with `--var-file`, in order (Terraform's `-var-file`), for the variables the folder
//! declares. Other `.tfvars` files are not applied, since nothing says which environment
//! they belong to.
//!
//! A configuration that calls a local module (`module "gpu" { source = "./modules/pool"
//! ... }`) is followed into the module's folder: its files are decoded with the call's
//! arguments bound to the module's variables (its own `terraform.tfvars` does not apply,
//! as in Terraform), and what they declare is checked as `module.gpu.<type>.<name>`.

use computeguard_decode::{
    DecodeError, Document, TerraformVariables, decode_hcl, decode_json, labelled_blocks,
    tfvars_precedence,
};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

/// Deepest chain of module calls followed (a root calling a module calling a module...).
pub const MAX_MODULE_DEPTH: usize = 8;

/// How a Terraform file takes part in a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `.tf`: HCL configuration.
    Hcl,
    /// `.tf.json`: configuration in the JSON syntax.
    Json,
    /// `.tfvars`, `.tfvars.json`: variable values, an input of resolution only.
    Vars,
}

/// The Terraform kind of `path` by its name, if it is a Terraform file.
pub fn kind(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?.to_ascii_lowercase();
    if name.ends_with(".tf") {
        Some(Kind::Hcl)
    } else if name.ends_with(".tf.json") {
        Some(Kind::Json)
    } else if name.ends_with(".tfvars") || name.ends_with(".tfvars.json") {
        Some(Kind::Vars)
    } else {
        None
    }
}

/// Decodes a `.tf` or `.tf.json` file and replaces `var.x` references with the values its
/// module folder and the `--var-file`s (`var_files`, decoded, in order) give them. Sibling
/// files that cannot be read or decoded add nothing here (they are reported when they are
/// checked themselves).
pub fn decode(
    path: &Path,
    text: &str,
    kind: Kind,
    var_files: &[VarFile],
) -> Result<Document, DecodeError> {
    let mut doc = parse(text, kind)?;
    let folder = module_folder(path, &doc.value);
    let mut variables = folder.variables;
    if !var_files.is_empty() {
        let declared: HashSet<&str> = folder.declared.iter().map(String::as_str).collect();
        for (_, values) in var_files {
            variables.add_var_file(values, &declared);
        }
    }
    variables.add_module(std::iter::once(&doc.value).chain(&folder.siblings));
    variables.resolve_document(&mut doc);
    Ok(doc)
}

/// A `--var-file`: the path as given and its decoded assignments.
pub type VarFile = (PathBuf, Value);

/// Decodes a `.tf` or `.tf.json` file as written, no variable resolved (what the module
/// calls of a scan's pre-pass need: a module's `source` is always a literal).
pub fn parse(text: &str, kind: Kind) -> Result<Document, DecodeError> {
    match kind {
        Kind::Json => decode_json(text),
        Kind::Hcl | Kind::Vars => decode_hcl(text),
    }
}

/// The configuration files (`.tf`, `.tf.json`) of the folder `dir`, sorted by name.
fn configuration_files(dir: &Path) -> Vec<(PathBuf, Kind)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(PathBuf, Kind)> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .filter_map(|p| match kind(&p) {
            Some(k @ (Kind::Hcl | Kind::Json)) => Some((p, k)),
            _ => None,
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files
}

/// The folder of `path` (`.` for a bare file name).
fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => Path::new("."),
    }
}

/// A `module` block of a configuration.
pub struct ModuleCall {
    /// The block's label: `gpu_pool` in `module "gpu_pool"`.
    pub name: String,
    /// JSON pointer of the block in the calling document.
    pub pointer: String,
    /// Its `source`, as written.
    pub source: String,
    /// The module's folder, when the source is a local path (`./` or `../`).
    pub dir: Option<PathBuf>,
    /// The folder as shown in findings: the caller's shown name's folder joined with the
    /// source.
    pub shown_dir: Option<PathBuf>,
    /// The arguments with known values (bound to the module's variables).
    pub inputs: Map<String, Value>,
}

/// Arguments of a `module` block that are not inputs.
const META_ARGUMENTS: &[&str] = &[
    "source",
    "version",
    "count",
    "for_each",
    "providers",
    "depends_on",
];

/// The `module` blocks of `config`, the decoded (and resolved) file at `path`, shown as
/// `shown`.
pub fn module_calls(path: &Path, shown: &Path, config: &Value) -> Vec<ModuleCall> {
    let mut calls = Vec::new();
    for (name, body) in labelled_blocks(config, "module") {
        let source = body
            .get("source")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let local = source.starts_with("./") || source.starts_with("../");
        let inputs = body
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| !META_ARGUMENTS.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let pointer = format!("/module/{}", computeguard_policy_core::read::escape(name));
        calls.push(ModuleCall {
            name: name.to_string(),
            pointer,
            dir: local.then(|| lexical_join(folder(path), &source)),
            shown_dir: local.then(|| lexical_join(folder(shown), &source)),
            source,
            inputs,
        });
    }
    calls
}

/// One file of a called module, decoded with the call's inputs bound.
pub struct ModuleFile {
    pub path: PathBuf,
    /// The path as shown in findings.
    pub shown: PathBuf,
    pub text: String,
    pub decoded: Result<Document, DecodeError>,
}

/// The configuration files of the module `call` (which must have a local `dir`), each
/// decoded with the module's variable defaults, then the call's inputs, resolved.
pub fn module_files(call: &ModuleCall) -> Vec<ModuleFile> {
    let (Some(dir), Some(shown_dir)) = (&call.dir, &call.shown_dir) else {
        return Vec::new();
    };
    let files = configuration_files(dir);
    let mut texts = Vec::new();
    let mut variables = TerraformVariables::default();
    variables.add_tfvars(&Value::Object(call.inputs.clone()));
    for (file, k) in &files {
        let text = crate::scan::open::read_to_string(file);
        let decoded = match &text {
            Ok(t) => parse(t, *k),
            Err(e) => Err(DecodeError {
                line: 0,
                column: 0,
                message: computeguard_decode::Message {
                    syntax: None,
                    text: format!("cannot read file: {e}"),
                },
            }),
        };
        if let Ok(doc) = &decoded {
            variables.add_defaults(&doc.value);
        }
        texts.push((file.clone(), text.unwrap_or_default(), decoded));
    }
    variables.add_module(
        texts
            .iter()
            .filter_map(|(_, _, d)| d.as_ref().ok().map(|d| &d.value)),
    );
    texts
        .into_iter()
        .map(|(path, text, decoded)| {
            let decoded = decoded.map(|mut doc| {
                variables.resolve_document(&mut doc);
                doc
            });
            let shown = path
                .file_name()
                .map_or_else(|| shown_dir.clone(), |n| shown_dir.join(n));
            ModuleFile {
                path,
                shown,
                text,
                decoded,
            }
        })
        .collect()
}

/// `base` joined with the relative path `rel`, `.` and `..` applied lexically (a module
/// source is a path relative to the calling folder, not to the working directory).
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

/// What the other files of a module folder give a file's expressions.
struct Folder {
    /// Defaults of every file, then the auto-loaded `.tfvars` in Terraform's order.
    variables: TerraformVariables,
    /// Names of the variables the folder declares.
    declared: Vec<String>,
    /// The other configuration files, decoded (locals and resources to refer to).
    siblings: Vec<Value>,
}

/// The module folder of `path`, whose own decoded content is `own` (each sibling file is
/// read once).
fn module_folder(path: &Path, own: &Value) -> Folder {
    let mut folder = Folder {
        variables: TerraformVariables::default(),
        declared: declared_in(own),
        siblings: Vec::new(),
    };
    folder.variables.add_defaults(own);
    let dir = match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => return folder,
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return folder;
    };
    let mut siblings: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p != path && p.is_file())
        .collect();
    siblings.sort();
    let mut tfvars = Vec::new();
    for sibling in siblings {
        let Some(name) = sibling
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
        else {
            continue;
        };
        match kind(&sibling) {
            Some(k @ (Kind::Hcl | Kind::Json)) => {
                if let Some(doc) = read(&sibling, k) {
                    folder.variables.add_defaults(&doc.value);
                    folder.declared.extend(declared_in(&doc.value));
                    folder.siblings.push(doc.value);
                }
            }
            Some(Kind::Vars) => {
                if let Some(rank) = tfvars_precedence(&name) {
                    tfvars.push((rank, name, sibling));
                }
            }
            None => {}
        }
    }
    tfvars.sort();
    for (_, name, file) in tfvars {
        let k = if name.ends_with(".json") {
            Kind::Json
        } else {
            Kind::Vars
        };
        if let Some(doc) = read(&file, k) {
            folder.variables.add_tfvars(&doc.value);
        }
    }
    folder
}

/// Names of the `variable` blocks of a decoded configuration.
fn declared_in(config: &Value) -> Vec<String> {
    labelled_blocks(config, "variable")
        .into_iter()
        .map(|(n, _)| n.to_string())
        .collect()
}

fn read(path: &Path, kind: Kind) -> Option<Document> {
    let text = crate::scan::open::read_to_string(path).ok()?;
    parse(&text, kind).ok()
}

/// Terraform's "value for undeclared variable" warnings, as `file:line: message`: a name
/// set in an auto-loaded `.tfvars` of a root folder (`roots`, the folders of the
/// configurations checked) that the folder does not declare, and a name set in a var file
/// (`var_files`) that no root folder declares. Such a value is not applied: a misspelt
/// name would otherwise leave the variable at its default in silence.
pub fn undeclared_values(roots: &[PathBuf], var_files: &[PathBuf]) -> Vec<String> {
    let mut warnings = Vec::new();
    let mut everywhere: Vec<String> = Vec::new();
    for root in roots {
        let mut declared = Vec::new();
        for (file, k) in configuration_files(root) {
            if let Some(doc) = read(&file, k) {
                declared.extend(declared_in(&doc.value));
            }
        }
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut auto: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| tfvars_precedence(n).is_some())
            })
            .collect();
        auto.sort();
        for file in auto {
            warnings.extend(undeclared_in(
                &file,
                &declared,
                "its folder declares no such variable",
            ));
        }
        everywhere.extend(declared);
    }
    everywhere.sort();
    everywhere.dedup();
    for file in var_files {
        warnings.extend(undeclared_in(
            file,
            &everywhere,
            "no Terraform folder checked declares it",
        ));
    }
    warnings.dedup();
    warnings
}

/// The warnings for the names `file` sets that `declared` does not hold.
fn undeclared_in(file: &Path, declared: &[String], why: &str) -> Vec<String> {
    let k = if file
        .to_string_lossy()
        .to_ascii_lowercase()
        .ends_with(".json")
    {
        Kind::Json
    } else {
        Kind::Vars
    };
    let Some(doc) = read(file, k) else {
        return Vec::new();
    };
    let Value::Object(values) = &doc.value else {
        return Vec::new();
    };
    values
        .keys()
        .filter(|name| !declared.contains(name))
        .map(|name| {
            let line = doc
                .positions
                .get(&format!("/{}", computeguard_decode::escape_key(name)))
                .map_or(0, |s| s.line);
            let hint = computeguard_policyset::suggest::did_you_mean(name, declared)
                .map(|best| format!(" (did you mean `{best}`?)"))
                .unwrap_or_default();
            format!(
                "{}:{line}: value for undeclared variable `{name}`: {why}, so the value is not applied{hint}; declare it with a `variable` block or remove it",
                file.display()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Kind, decode, kind};
    use std::path::Path;

    #[test]
    fn terraform_files_are_known_by_name() {
        assert_eq!(kind(Path::new("infra/main.tf")), Some(Kind::Hcl));
        assert_eq!(kind(Path::new("main.TF")), Some(Kind::Hcl));
        assert_eq!(kind(Path::new("infra/main.tf.json")), Some(Kind::Json));
        assert_eq!(kind(Path::new("prod.tfvars")), Some(Kind::Vars));
        assert_eq!(kind(Path::new("x.auto.tfvars.json")), Some(Kind::Vars));
        assert_eq!(kind(Path::new("plan.json")), None);
        assert_eq!(kind(Path::new("main.tftest.hcl")), None);
    }

    #[test]
    fn module_folder_defaults_then_tfvars_in_terraform_order()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let main = dir.path().join("main.tf");
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text);
        write(
            "variables.tf",
            "variable \"size\" { default = \"a\" }\nvariable \"min\" { default = 3 }\nvariable \"zone\" { default = \"z\" }\n",
        )?;
        write("terraform.tfvars", "size = \"b\"\n")?;
        write("b.auto.tfvars", "size = \"d\"\n")?;
        write("a.auto.tfvars.json", "{\"size\": \"c\", \"min\": 0}")?;
        write("prod.tfvars", "zone = \"never\"\n")?;
        write("broken.tf", "this is { not hcl")?;
        let text = "resource \"t\" \"n\" {\n  size = var.size\n  min = var.min\n  zone = var.zone\n  other = var.other\n}\n";
        std::fs::write(&main, text)?;
        let doc = decode(&main, text, Kind::Hcl, &[])?;
        assert_eq!(
            doc.value["resource"]["t"]["n"],
            serde_json::json!({"size": "d", "min": 0, "zone": "z", "other": "${var.other}"})
        );
        // --var-file comes after the auto files, in order, for declared variables only.
        let first = serde_json::json!({"size": "e", "zone": "y", "other": "never"});
        let second = serde_json::json!({"size": "f"});
        let files = [("a".into(), first), ("b".into(), second)];
        let doc = decode(&main, text, Kind::Hcl, &files)?;
        assert_eq!(
            doc.value["resource"]["t"]["n"],
            serde_json::json!({"size": "f", "min": 0, "zone": "y", "other": "${var.other}"})
        );
        Ok(())
    }

    #[test]
    fn module_sources_join_the_callers_folder_lexically() {
        use super::lexical_join;
        assert_eq!(
            lexical_join(Path::new("infra"), "./modules/pool"),
            Path::new("infra/modules/pool")
        );
        assert_eq!(
            lexical_join(Path::new("infra/envs/prod"), "../../modules/pool"),
            Path::new("infra/modules/pool")
        );
        assert_eq!(lexical_join(Path::new("."), "../x"), Path::new("../x"));
    }
}
