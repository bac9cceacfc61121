//! Terraform files in a scan: which files are Terraform, and decoding a `.tf` / `.tf.json`
//! file with the variables of its module folder resolved.
//!
//! A module is the set of `*.tf` and `*.tf.json` files of one directory (Terraform's own
//! rule). Its variables take, lowest precedence first, the `variable` blocks' defaults, then
//! `terraform.tfvars`, `terraform.tfvars.json` and `*.auto.tfvars(.json)` of the same
//! directory: the files `terraform plan` loads without `-var-file`. Other `.tfvars` files are
//! not applied, since nothing says which environment they belong to.

use computeguard_decode::{
    DecodeError, Document, TerraformVariables, decode_hcl, decode_json, tfvars_precedence,
};
use std::path::Path;

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
/// module folder gives them. Sibling files that cannot be read or decoded add nothing here
/// (they are reported when they are checked themselves).
pub fn decode(path: &Path, text: &str, kind: Kind) -> Result<Document, DecodeError> {
    let mut doc = match kind {
        Kind::Json => decode_json(text)?,
        Kind::Hcl | Kind::Vars => decode_hcl(text)?,
    };
    let variables = module_variables(path, &doc.value);
    variables.resolve(&mut doc.value);
    Ok(doc)
}

/// The variables of the module folder of `path`, whose own decoded content is `own`.
fn module_variables(path: &Path, own: &serde_json::Value) -> TerraformVariables {
    let mut variables = TerraformVariables::default();
    variables.add_defaults(own);
    let dir = match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => return variables,
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return variables;
    };
    let mut tfvars = Vec::new();
    for entry in entries.flatten() {
        let sibling = entry.path();
        if sibling == path || !sibling.is_file() {
            continue;
        }
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
                    variables.add_defaults(&doc.value);
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
            variables.add_tfvars(&doc.value);
        }
    }
    variables
}

fn read(path: &Path, kind: Kind) -> Option<Document> {
    let text = std::fs::read_to_string(path).ok()?;
    match kind {
        Kind::Json => decode_json(&text).ok(),
        Kind::Hcl | Kind::Vars => decode_hcl(&text).ok(),
    }
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
        let doc = decode(&main, text, Kind::Hcl)?;
        assert_eq!(
            doc.value["resource"]["t"]["n"],
            serde_json::json!({"size": "d", "min": 0, "zone": "z", "other": "${var.other}"})
        );
        Ok(())
    }
}
