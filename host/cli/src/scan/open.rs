//! The text the editor holds of open files (`computeguard lsp`), read instead of the disk's.
//!
//! A file checked in the editor reads other files from disk: a Terraform folder's
//! `terraform.tfvars` and variable defaults, a called module's files, a Bicep template's
//! parameters files and modules. While one of those is open with unsaved changes, its
//! buffer is what the author sees, so it is what the check reads: every read of another
//! file in the scan goes through [`read_to_string`], which answers from the text set
//! here when the file is open. `computeguard check` never sets any, so it reads the disk.
//!
//! The set is process-wide (the scan reads files from many places and threads, as
//! `rayon` runs documents in parallel) and replaced as a whole before each check by the
//! language server, the only caller of [`set`]; it holds no file that is not open.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

type Open = Arc<HashMap<PathBuf, String>>;

static OPEN: RwLock<Option<Open>> = RwLock::new(None);

/// The open files and their text, replacing what was set before; paths are made
/// canonical where they exist.
pub fn set(files: impl IntoIterator<Item = (PathBuf, String)>) {
    let map: HashMap<PathBuf, String> = files
        .into_iter()
        .map(|(path, text)| (std::fs::canonicalize(&path).unwrap_or(path), text))
        .collect();
    if let Ok(mut open) = OPEN.write() {
        *open = (!map.is_empty()).then(|| Arc::new(map));
    }
}

/// The editor's text of `path` when it is open.
pub(crate) fn text(path: &Path) -> Option<String> {
    let open = OPEN.read().ok()?.clone()?;
    if let Some(text) = open.get(path) {
        return Some(text.clone());
    }
    open.get(&std::fs::canonicalize(path).ok()?).cloned()
}

/// `std::fs::read_to_string`, answered from the editor's text when `path` is open.
pub(crate) fn read_to_string(path: &Path) -> std::io::Result<String> {
    match text(path) {
        Some(text) => Ok(text),
        None => std::fs::read_to_string(path),
    }
}
