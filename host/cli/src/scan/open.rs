//! The text the editor holds of open files (`computeguard lsp`), read instead of the disk's.
//!
//! A file checked in the editor reads other files from disk: a Terraform folder's
//! `terraform.tfvars` and variable defaults, a called module's files, a Bicep template's
//! parameters files and modules. While one of those is open with unsaved changes, its
//! buffer is what the author sees, so it is what the check reads: every read of another
//! file in the scan goes through [`read_to_string`], which answers from the text set
//! here when the file is open. `computeguard check` never sets any, so it reads the disk.
//!
//! The set is process-wide, since the scan reads files from many places and threads
//! (`rayon` runs documents in parallel). Each language server (a thread: the tests run
//! several in one process) owns the entries of the documents it has open, and replaces
//! only those before each check ([`set`]); a file is looked up by its path whoever opened
//! it. It holds no file that is not open in some server.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::thread::ThreadId;

/// Path (canonical where it exists) -> the server that has it open, and its text.
type Open = HashMap<PathBuf, (ThreadId, Arc<str>)>;

static OPEN: RwLock<Option<Open>> = RwLock::new(None);

/// The documents the calling server has open and their text, replacing the ones it set
/// before (those of other servers stay); paths are made canonical where they exist.
pub fn set(files: impl IntoIterator<Item = (PathBuf, String)>) {
    let me = std::thread::current().id();
    let mine: Vec<(PathBuf, Arc<str>)> = files
        .into_iter()
        .map(|(path, text)| (std::fs::canonicalize(&path).unwrap_or(path), text.into()))
        .collect();
    if let Ok(mut open) = OPEN.write() {
        let open = open.get_or_insert_with(HashMap::new);
        open.retain(|_, (owner, _)| *owner != me);
        for (path, text) in mine {
            open.insert(path, (me, text));
        }
    }
}

/// The editor's text of `path` when it is open.
pub(crate) fn text(path: &Path) -> Option<String> {
    let open = OPEN.read().ok()?;
    let open = open.as_ref().filter(|o| !o.is_empty())?;
    if let Some((_, text)) = open.get(path) {
        return Some(text.to_string());
    }
    open.get(&std::fs::canonicalize(path).ok()?)
        .map(|(_, text)| text.to_string())
}

/// `std::fs::read_to_string`, answered from the editor's text when `path` is open.
pub(crate) fn read_to_string(path: &Path) -> std::io::Result<String> {
    match text(path) {
        Some(text) => Ok(text),
        None => std::fs::read_to_string(path),
    }
}
