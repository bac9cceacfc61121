//! Reading the files the catalog commands are given: at most `--max-file-mib` (the limit
//! `check` puts on one input), decoded as YAML or JSON with the position of every node, and
//! overlays checked with each problem at `FILE:LINE`.

use computeguard_decode::{DecodeError, Document, decode_json, decode_yaml};
use computeguard_policy_core::catalog::overlay::{self, Overlay};
use std::path::{Path, PathBuf};

/// `--max-file-mib`, shared by every catalog command that reads files.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Limit {
    /// Largest file read, in MiB (the same limit and default as `check`).
    #[arg(long, value_name = "MIB", default_value_t = crate::scan::DEFAULT_MAX_FILE_MIB)]
    pub max_file_mib: u32,
}

impl Limit {
    fn bytes(self) -> u64 {
        u64::from(self.max_file_mib) << 20
    }
}

/// A file's text: at most the limit, valid UTF-8. The error says why, without the file
/// name (the caller adds it).
pub fn read(path: &Path, limit: Limit) -> Result<String, String> {
    use std::io::Read;
    let max = limit.bytes();
    let too_large = |size: u64| {
        format!(
            "file is {}, over the {} limit for one input; raise it with `--max-file-mib` or split the file",
            computeguard_engine::human_bytes(usize::try_from(size).unwrap_or(usize::MAX)),
            computeguard_engine::human_bytes(usize::try_from(max).unwrap_or(usize::MAX))
        )
    };
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read file: {e}"))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read file: {e}"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > max {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read file: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| "file is not valid UTF-8".to_string())
}

/// JSON for `.json`, YAML for `.yaml` / `.yml`; otherwise JSON when the text starts with
/// `{` or `[`, else YAML.
fn is_json(path: &Path, text: &str) -> bool {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("json") => true,
        Some("yaml" | "yml") => false,
        _ => text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with(['{', '[']),
    }
}

/// The documents of a file, with positions; a syntax error as `FILE:LINE:COLUMN: ...`.
pub fn decode(name: &str, path: &Path, text: &str) -> Result<Vec<Document>, String> {
    let decoded = if is_json(path, text) {
        decode_json(text).map(|d| vec![d])
    } else {
        decode_yaml(text)
    };
    decoded.map_err(|e: DecodeError| format!("{name}:{}:{}: {}", e.line, e.column, e.message))
}

/// The one document of a file, or the message saying there is none or more than one.
pub fn single(name: &str, docs: Vec<Document>) -> Result<Document, String> {
    let mut docs = docs.into_iter();
    let Some(first) = docs.next() else {
        return Err(format!(
            "{name}:1: empty file; expected a catalog overlay (`kind: CatalogOverlay`)"
        ));
    };
    if let Some(second) = docs.next() {
        let line = second.positions.locate("").map_or(1, |s| s.line);
        return Err(format!(
            "{name}:{line}: a second YAML document; a catalog overlay file holds one document"
        ));
    }
    Ok(first)
}

/// An overlay read from a file.
pub struct Loaded {
    /// The file as given.
    pub name: String,
    /// What it says.
    pub overlay: Overlay,
}

/// Reads and checks one overlay file. The error lists every problem, one line each:
/// `FILE:LINE: at `/skus/3/vcpus`: expected ...` (a missing field at the line of the
/// nearest field that exists), or `FILE:LINE:COLUMN: invalid YAML: ...`.
pub fn load(path: &Path, limit: Limit) -> Result<Loaded, Vec<String>> {
    let name = path.display().to_string();
    let text = read(path, limit).map_err(|e| vec![format!("{name}: {e}")])?;
    let doc = decode(&name, path, &text)
        .and_then(|docs| single(&name, docs))
        .map_err(|e| vec![e])?;
    match overlay::parse(&doc.value) {
        Ok(overlay) => Ok(Loaded { name, overlay }),
        Err(e) => Err(e
            .problems
            .iter()
            .map(|p| {
                let line = doc.positions.locate(&p.pointer).map_or(1, |s| s.line);
                format!("{name}:{line}: {p}")
            })
            .collect()),
    }
}

/// Reads every `--catalog` overlay; any problem is printed (as `catalog validate` prints
/// it) and the run stops with an error.
pub fn load_all(paths: &[PathBuf], limit: Limit) -> anyhow::Result<Vec<Loaded>> {
    let mut loaded = Vec::new();
    let mut bad = Vec::new();
    for path in paths {
        match load(path, limit) {
            Ok(l) => loaded.push(l),
            Err(lines) => {
                for line in &lines {
                    eprintln!("{}", crate::report::clean(line));
                }
                bad.push(format!("`{}`", path.display()));
            }
        }
    }
    if !bad.is_empty() {
        anyhow::bail!(
            "not a valid catalog overlay: {} (check it with `computeguard catalog validate`)",
            bad.join(", ")
        );
    }
    Ok(loaded)
}

/// Reads the `--catalog` overlays and installs them over the built-in catalog (once, before
/// any lookup); without overlays the built-in catalog is used as it is.
pub fn install(paths: &[PathBuf], limit: Limit) -> anyhow::Result<Vec<Loaded>> {
    let loaded = load_all(paths, limit)?;
    if !loaded.is_empty() {
        let overlays: Vec<Overlay> = loaded.iter().map(|l| l.overlay.clone()).collect();
        computeguard_policy_core::catalog::install(&overlays)?;
    }
    Ok(loaded)
}
