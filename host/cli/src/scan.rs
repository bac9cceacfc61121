//! Walks paths, decodes files with positions, evaluates every document with every
//! policy, and maps findings back to file:line.

use crate::config::Config;
use crate::policies::Loaded;
use crate::report::{
    FileError, Finding, Report, ResourceRef, Severity, SkipKind, Skipped, SuppressionKind,
    Unresolved,
};
use crate::suppress::{Directives, MISSING_REASON_RULE};
use computeguard_decode::{Document, decode_bicep, decode_json, decode_yaml};
use computeguard_engine::{EvalError, Request, Response};
use computeguard_policy_core::compute::Source;
use computeguard_policyset::template::Template;
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

mod bicep;
pub mod change;
pub mod cost;
pub(crate) mod open;
pub mod quota;
mod terraform;
mod workspace;

pub use bicep::{ParamFile, named_param_files, read_param_file};

pub use terraform::MAX_MODULE_DEPTH;

/// Extensions `check` reads.
pub const SUPPORTED: &[&str] = &["yaml", "yml", "json", "bicep", "bicepparam", "tf", "tfvars"];

/// Marker of an inline suppression: `# computeguard:ignore <rule-id> <reason>`.
pub use crate::suppress::IGNORE_MARKER;

pub struct Scan<'a> {
    pub policies: &'a [Loaded],
    pub config: &'a Config,
    pub as_of: String,
    /// Larger files are refused before they are read (`--max-file-mib`).
    pub max_file_bytes: u64,
    /// `--var-file`s (the path as given, decoded), in order: applied to every Terraform
    /// folder checked, for the variables it declares.
    pub var_files: Vec<terraform::VarFile>,
    /// `--param-file`s (and parameters files named on the command line), in order: a JSON
    /// parameters file applies to every Bicep/ARM template checked, a `.bicepparam` to the
    /// template its `using` names, for the parameters it declares.
    pub param_files: Vec<ParamFile>,
}

/// Where one document comes from, for locating and naming what is found in it.
struct DocContext<'t> {
    /// The path (format, `ignore:` matching).
    path: &'t Path,
    syntax: Syntax,
    /// The name shown in findings.
    name: &'t str,
    lines: &'t [&'t str],
    directives: &'t Directives,
    /// `module.NAME.` (nested: `module.a.module.b.`) for a document of a called Terraform
    /// module: resources are then named by their module address.
    module: Option<&'t str>,
    /// For a document of a Bicep module: the call that deploys it.
    via: Option<&'t Via>,
}

/// Where the unknown value of each variable of a called Terraform module is written: in the
/// root configuration when the calls pass a root variable down, so that the unresolved
/// entry points at what the user must set.
type Origins = std::collections::HashMap<String, Origin>;

#[derive(Clone, Debug)]
struct Origin {
    /// The file (as shown) and line of the argument of the outermost call.
    file: String,
    line: u32,
    /// JSON pointer of that argument in its document.
    path: String,
    /// What that call writes (`${var.user_node_pool_vm_size}`).
    expression: String,
}

/// Points the unresolved `entry` of a resource of the Terraform module at `module`
/// (`module.a.`) at the caller's argument its variable takes its value from, if any.
fn retarget(entry: &mut Unresolved, origins: &Origins, module: &str) {
    let Some(variable) = entry
        .expression
        .as_deref()
        .and_then(computeguard_decode::variable_reference)
    else {
        return;
    };
    let Some(origin) = origins.get(&variable) else {
        return;
    };
    entry.display = format!(
        "{} of {} (its `var.{variable}`)",
        entry.display,
        module.trim_end_matches('.')
    );
    entry.file.clone_from(&origin.file);
    entry.line = origin.line;
    entry.expression = Some(origin.expression.clone());
    entry.path.clone_from(&origin.path);
}

/// The Bicep module call that deploys a document: named in its findings and unresolved facts.
struct Via {
    /// `module `gpu` at main.bicep:12` (`gpu[1]` in a loop; nested calls joined by `, from `).
    site: String,
    /// The instance label (`gpu`, `gpu[1]`), added to resource names.
    label: String,
    /// For each passed parameter the caller could not know, where the user gives the value:
    /// the outermost call that passes it.
    origins: Vec<(String, bicep::Origin)>,
}

/// The name of standard input in findings when `--stdin-filename` is not given.
pub const STDIN_NAME: &str = "<stdin>";

/// Default of `--max-file-mib`: larger files (and standard input) are refused before they
/// are read. A document must fit, as JSON, in a policy's sandbox memory (64 MiB by default)
/// and the YAML reader stops at one million nodes (about 10 MB of manifests), so a larger
/// file could not be checked anyway; refusing it first keeps the host from decoding it.
pub const DEFAULT_MAX_FILE_MIB: u32 = 64;

/// One input of a scan: a file, or standard input already read.
#[derive(Clone, Debug)]
pub struct Input {
    /// The name in findings: the path as found, or `<stdin>` / `--stdin-filename`.
    pub name: String,
    /// The path whose name decides the format, the Terraform module folder and `ignore:`
    /// matching. For standard input: `--stdin-filename`, else `<stdin>`.
    pub path: PathBuf,
    /// The text of standard input; `None` for a file, read by the scan.
    pub text: Option<String>,
}

impl Input {
    fn file(path: PathBuf) -> Input {
        Input {
            name: path.display().to_string(),
            path,
            text: None,
        }
    }
}

/// What a file system entry is, for the messages about entries that are not files.
fn describe(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_symlink() {
        return "a symbolic link";
    }
    if t.is_dir() {
        return "a directory";
    }
    "not a regular file"
}

/// Files to check under `paths` (directories are walked honouring `.gitignore`), and
/// what was skipped, with the reason.
///
/// - A missing path is an error; so is a path naming something that is neither a regular
///   file nor a directory (a FIFO, `/dev/zero`): reading it could block or never end.
/// - `-` is standard input, read here (at most `max_bytes`), named `stdin_name`.
/// - In a walk, symbolic links are followed, to files and to directories; a link that
///   leads back into its own ancestry (a loop) or nowhere is skipped, unchecked, with the
///   reason, and so is a FIFO, socket or device found there. A file reached twice (through
///   a link and directly) is checked once, under its shortest name.
pub fn collect(
    paths: &[PathBuf],
    stdin_name: Option<&str>,
    max_bytes: u64,
) -> anyhow::Result<(Vec<Input>, Vec<Skipped>)> {
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    let mut inputs = Vec::new();
    let mut skipped = Vec::new();
    let mut stdin_read = false;
    for p in paths {
        if p.as_os_str() == "-" {
            if stdin_read {
                anyhow::bail!("`-` (standard input) is named twice; it can be read only once");
            }
            stdin_read = true;
            inputs.push(read_stdin(stdin_name, max_bytes)?);
            continue;
        }
        // `metadata` follows links: a link named on the command line is its target.
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if std::fs::symlink_metadata(p).is_ok() {
                    anyhow::bail!(
                        "path `{}` is a symbolic link to a path that does not exist",
                        p.display()
                    );
                }
                anyhow::bail!("path `{}` does not exist", p.display());
            }
            Err(e) => anyhow::bail!("cannot read `{}`: {e}", p.display()),
        };
        if meta.is_file() {
            if supported(p) {
                files.push((p.clone(), false));
            } else {
                skipped.push(Skipped::file(
                    p.display().to_string(),
                    SkipKind::Unchecked,
                    "named on the command line, but not a file type computeguard reads (YAML, JSON, Bicep, Terraform)",
                ));
            }
            continue;
        }
        if !meta.is_dir() {
            anyhow::bail!(
                "`{}` is {}, not a regular file or a directory; computeguard does not read it (to check a stream, pipe it to `computeguard check -`)",
                p.display(),
                describe(meta.file_type())
            );
        }
        walk(p, &mut files, &mut skipped);
    }
    if stdin_name.is_some() && !stdin_read {
        anyhow::bail!("`--stdin-filename` names standard input, but `-` is not among the paths");
    }
    // The same file twice (named and walked, or through links): once, under its shortest
    // name, preferring the one that is not itself a link.
    let mut keyed: Vec<(PathBuf, usize, bool, PathBuf)> = files
        .into_iter()
        .map(|(path, via_link)| {
            let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
            (key, path.components().count(), via_link, path)
        })
        .collect();
    keyed.sort();
    keyed.dedup_by(|b, a| a.0 == b.0);
    let mut paths: Vec<PathBuf> = keyed.into_iter().map(|(_, _, _, p)| p).collect();
    paths.sort();
    inputs.extend(paths.into_iter().map(Input::file));
    Ok((inputs, skipped))
}

/// Walks `dir` following links, adding files (with whether a link led to them) and
/// skipped entries.
fn walk(dir: &Path, files: &mut Vec<(PathBuf, bool)>, skipped: &mut Vec<Skipped>) {
    // Hidden directories are walked (`.azureml/` holds compute definitions); `.git`
    // and what `.gitignore` excludes are not.
    let walker = ignore::WalkBuilder::new(dir)
        .require_git(false)
        .hidden(false)
        .follow_links(true)
        .filter_entry(|e| e.file_name() != ".git")
        .build();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                skipped.push(walk_error(dir, &e));
                continue;
            }
        };
        let Some(t) = entry.file_type() else { continue };
        if t.is_dir() {
            continue;
        }
        let via_link = entry.path_is_symlink();
        let path = entry.into_path();
        if t.is_file() {
            if supported(&path) {
                files.push((path, via_link));
            } else {
                skipped.push(Skipped::file(
                    path.display().to_string(),
                    SkipKind::OtherFile,
                    "not a YAML, JSON, Bicep or Terraform file",
                ));
            }
        } else {
            let kind = if supported(&path) {
                SkipKind::Unchecked
            } else {
                SkipKind::OtherFile
            };
            skipped.push(Skipped::file(
                path.display().to_string(),
                kind,
                format!("{}, not a regular file: not read", describe(t)),
            ));
        }
    }
}

/// A walk error (a link loop, a broken link, an unreadable directory) as a skipped entry.
fn walk_error(dir: &Path, e: &ignore::Error) -> Skipped {
    let mut err = e;
    let mut file = dir.display().to_string();
    // Unwrap the path / depth context `ignore` adds.
    loop {
        match err {
            ignore::Error::WithPath { path, err: inner } => {
                file = path.display().to_string();
                err = inner;
            }
            ignore::Error::WithDepth { err: inner, .. }
            | ignore::Error::WithLineNumber { err: inner, .. } => {
                err = inner;
            }
            _ => break,
        }
    }
    let reason = match err {
        ignore::Error::Loop { ancestor, child } => {
            file = child.display().to_string();
            format!(
                "symbolic link loop: leads back to `{}`; not followed",
                ancestor.display()
            )
        }
        ignore::Error::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            "symbolic link to a path that does not exist".to_string()
        }
        other => format!("cannot be read: {other}"),
    };
    Skipped::file(file, SkipKind::Unchecked, reason)
}

/// Reads standard input (at most `max_bytes`) as an input named `name`.
fn read_stdin(name: Option<&str>, max_bytes: u64) -> anyhow::Result<Input> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| anyhow::anyhow!("cannot read standard input: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        anyhow::bail!(
            "standard input is over the {} limit for one input; raise it with `--max-file-mib` or split the input",
            computeguard_engine::human_bytes(usize::try_from(max_bytes).unwrap_or(usize::MAX))
        );
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("standard input is not valid UTF-8"))?;
    let name = name.unwrap_or(STDIN_NAME).to_string();
    Ok(Input {
        path: PathBuf::from(&name),
        name,
        text: Some(text),
    })
}

/// How an input is decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Syntax {
    Yaml,
    Json,
    Bicep,
    Terraform(terraform::Kind),
}

impl Syntax {
    /// By the name's extension; `None` if the name says nothing computeguard reads.
    fn of(path: &Path) -> Option<Syntax> {
        if let Some(kind) = terraform::kind(path) {
            return Some(Syntax::Terraform(kind));
        }
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "json" => Some(Syntax::Json),
            "bicep" => Some(Syntax::Bicep),
            "yaml" | "yml" => Some(Syntax::Yaml),
            _ => None,
        }
    }

    /// Standard input without a telling name: JSON if the text starts with `{` or `[`,
    /// else YAML.
    fn sniff(text: &str) -> Syntax {
        match text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .chars()
            .next()
        {
            Some('{' | '[') => Syntax::Json,
            _ => Syntax::Yaml,
        }
    }

    /// Decodes `text`, the content of `path`, in this syntax; Terraform with the
    /// variables of its folder and the `--var-file` values.
    fn decode(
        self,
        path: &Path,
        text: &str,
        var_files: &[terraform::VarFile],
    ) -> Result<Vec<Document>, computeguard_decode::DecodeError> {
        match self {
            Syntax::Terraform(kind) => {
                terraform::decode(path, text, kind, var_files).map(|d| vec![d])
            }
            Syntax::Bicep => decode_bicep(text).map(|d| vec![d]),
            Syntax::Json => decode_json(text).map(|d| vec![d]),
            Syntax::Yaml => decode_yaml(text),
        }
    }

    /// The source kind a policy is told, when the syntax alone decides it.
    fn source_kind(self) -> Option<computeguard_engine::SourceKind> {
        match self {
            Syntax::Terraform(_) => Some(computeguard_engine::SourceKind::Terraform),
            Syntax::Bicep => Some(computeguard_engine::SourceKind::Bicep),
            Syntax::Yaml | Syntax::Json => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Syntax::Yaml => "YAML",
            Syntax::Json | Syntax::Terraform(terraform::Kind::Json) => "JSON",
            Syntax::Bicep => "Bicep",
            Syntax::Terraform(_) => "HCL",
        }
    }
}

fn supported(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SUPPORTED.contains(&e.to_ascii_lowercase().as_str()))
}

/// The deepest nesting of arrays and objects a policy reads: the policy runtime parses the
/// document with `serde_json`, whose recursion limit (128) refuses the 128th nested level
/// (measured: 127 levels are read, 128 fail with "recursion limit exceeded"). A deeper
/// document would reach the policy as "not valid JSON" located in the re-encoded JSON text,
/// not the file; it is refused before evaluation, at the line of the first level too deep.
pub const MAX_POLICY_DEPTH: usize = 127;

/// The pointer of the first node nested deeper than `limit` levels, if any. Recursion is
/// bounded by `limit`.
fn too_deep(value: &serde_json::Value, level: usize, limit: usize) -> Option<String> {
    use serde_json::Value;
    if level > limit && matches!(value, Value::Array(_) | Value::Object(_)) {
        return Some(String::new());
    }
    // The pointer is built only on the way back from a node that is too deep; a
    // document within the limit costs a walk and no allocation.
    match value {
        Value::Array(items) => items.iter().enumerate().find_map(|(i, child)| {
            too_deep(child, level + 1, limit).map(|rest| format!("/{i}{rest}"))
        }),
        Value::Object(map) => map.iter().find_map(|(k, child)| {
            too_deep(child, level + 1, limit)
                .map(|rest| format!("/{}{rest}", computeguard_decode::escape_key(k)))
        }),
        _ => None,
    }
}

/// What one file contributed.
#[derive(Default)]
struct FileResult {
    findings: Vec<Finding>,
    errors: Vec<FileError>,
    documents: usize,
    resources: usize,
    suppressed: Vec<Finding>,
    skipped: Option<(SkipKind, String)>,
    /// Documents of a multi-document file that declare no compute: `(file:line, why)`.
    skipped_documents: Vec<(String, String)>,
    /// Documents that were not evaluated (not a mapping).
    unchecked_documents: Vec<Skipped>,
    /// Facts left to deploy time.
    unresolved: Vec<Unresolved>,
}

impl Scan<'_> {
    pub fn run(&self, inputs: &[Input], mut report: Report) -> Report {
        let progress = crate::progress::Progress::new(inputs.len());
        let called = called_modules(inputs);
        let bicep_called = bicep::called_modules(inputs);
        let results: Vec<FileResult> = inputs
            .par_iter()
            .map(|f| {
                if let Some(caller) = std::fs::canonicalize(&f.path)
                    .ok()
                    .and_then(|p| bicep_called.get(&p))
                {
                    progress.tick(&f.name);
                    return FileResult {
                        skipped: Some((
                            SkipKind::Module,
                            format!(
                                "Bicep module deployed by {caller}: checked through that call, with its parameters"
                            ),
                        )),
                        ..FileResult::default()
                    };
                }
                let caller = matches!(
                    terraform::kind(&f.path),
                    Some(terraform::Kind::Hcl | terraform::Kind::Json)
                )
                .then(|| std::fs::canonicalize(terraform_folder(&f.path)).ok())
                .flatten()
                .and_then(|dir| called.get(&dir));
                let r = match caller {
                    Some(caller) => FileResult {
                        skipped: Some((
                            SkipKind::Module,
                            format!(
                                "Terraform module called by {caller}: checked through that call, with its arguments"
                            ),
                        )),
                        ..FileResult::default()
                    },
                    None => self.file(f),
                };
                progress.tick(&f.name);
                r
            })
            .collect();
        progress.finish();
        report.summary.files = inputs.len();
        report.summary.as_of = self.as_of.clone();
        for (input, r) in inputs.iter().zip(results) {
            report.findings.extend(r.findings);
            report.errors.extend(r.errors);
            report.unresolved.extend(r.unresolved);
            report.summary.documents += r.documents;
            report.summary.resources += r.resources;
            report.suppressed.extend(r.suppressed);
            if let Some((kind, why)) = r.skipped {
                report
                    .skipped
                    .push(Skipped::file(input.name.clone(), kind, why));
            } else {
                report.skipped_documents.extend(r.skipped_documents);
                report.skipped.extend(r.unchecked_documents);
                report.checked.push(input.name.clone());
            }
        }
        report.finish();
        report
    }

    /// Reads a file: at most `max_file_bytes`, valid UTF-8.
    pub(crate) fn read(&self, input: &Input) -> Result<String, String> {
        use std::io::Read;
        if let Some(text) = &input.text {
            return Ok(text.clone());
        }
        let limit = self.max_file_bytes;
        // A file the editor holds open (a module, a parameters file) is read as it is there.
        let open = open::text(&input.path);
        let too_large = |size: u64| {
            format!(
                "file is {}, over the {} limit for one input; raise it with `--max-file-mib` or split the file",
                computeguard_engine::human_bytes(usize::try_from(size).unwrap_or(usize::MAX)),
                computeguard_engine::human_bytes(usize::try_from(limit).unwrap_or(usize::MAX))
            )
        };
        if let Some(text) = open {
            return if text.len() as u64 > limit {
                Err(too_large(text.len() as u64))
            } else {
                Ok(text)
            };
        }
        let file =
            std::fs::File::open(&input.path).map_err(|e| format!("cannot read file: {e}"))?;
        if let Ok(meta) = file.metadata()
            && meta.len() > limit
        {
            return Err(too_large(meta.len()));
        }
        let mut bytes = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read file: {e}"))?;
        if bytes.len() as u64 > limit {
            return Err(too_large(bytes.len() as u64));
        }
        String::from_utf8(bytes).map_err(|_| "file is not valid UTF-8".to_string())
    }

    fn file(&self, input: &Input) -> FileResult {
        let name = input.name.clone();
        let path = input.path.as_path();
        let mut out = FileResult::default();
        let text = match self.read(input) {
            Ok(t) => t,
            Err(message) => {
                out.errors.push(FileError {
                    file: name,
                    line: 0,
                    message,
                });
                return out;
            }
        };
        if bicep::is_bicepparam(path) {
            return self.param_file(&name, path, &text);
        }
        let syntax = Syntax::of(path).unwrap_or_else(|| Syntax::sniff(&text));
        if syntax == Syntax::Terraform(terraform::Kind::Vars) {
            let file_name = path
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            let same = |p: &Path| {
                std::fs::canonicalize(p).ok() == std::fs::canonicalize(path).ok() || p == path
            };
            let why = if self.var_files.iter().any(|(p, _)| same(p)) {
                "Terraform variable values: a var file (named on the command line or with `--var-file`), applied after terraform.tfvars and *.auto.tfvars to the folders checked"
            } else if computeguard_decode::tfvars_precedence(&file_name).is_some() {
                "Terraform variable values: applied when the .tf files beside them are checked"
            } else {
                "Terraform variable values that Terraform loads only with `-var-file`: not applied; name the file on the command line (or pass `--var-file FILE`) to apply them"
            };
            out.skipped = Some((SkipKind::Variables, why.into()));
            return out;
        }
        let decoded = syntax.decode(path, &text, &self.var_files);
        let mut docs = match decoded {
            Ok(d) => d,
            Err(e) if syntax == Syntax::Yaml && text.contains("{{") => {
                out.skipped = Some((
                    SkipKind::Unchecked,
                    format!(
                        "template (Helm/Go) that is not YAML until rendered: {e}; render it first (`helm template ... | computeguard check -`)"
                    ),
                ));
                return out;
            }
            Err(e) => {
                out.errors.push(FileError {
                    file: name,
                    line: e.line,
                    message: format!(
                        "invalid {} at line {}, column {}: {}",
                        syntax.name(),
                        e.line,
                        e.column,
                        e.message.text
                    ),
                });
                return out;
            }
        };
        if let (Syntax::Json, [doc]) = (syntax, docs.as_slice())
            && bicep::is_parameters_json(&doc.value)
        {
            return self.param_file(&name, path, &text);
        }
        let mut aliases = Vec::new();
        if let (Syntax::Bicep | Syntax::Json, [doc]) = (syntax, docs.as_mut_slice()) {
            self.apply_param_files(path, &mut doc.value);
            if syntax == Syntax::Bicep {
                aliases = bicep::read_known_modules(&mut doc.value);
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        // Comments follow the syntax, also when it was recognised from the content.
        let directives = match (Syntax::of(path), syntax) {
            (None, Syntax::Yaml) => Directives::parse(Path::new("input.yaml"), &text),
            _ => Directives::parse(path, &text),
        };
        let ctx = DocContext {
            path,
            syntax,
            name: &name,
            lines: &lines,
            directives: &directives,
            module: None,
            via: None,
        };
        for doc in &docs {
            self.document(&ctx, doc, &mut out);
        }
        if let [doc] = docs.as_slice() {
            bicep::relocate(&mut out, &name, doc, &lines, &aliases);
        }
        if let (Syntax::Terraform(_), [doc]) = (syntax, docs.as_slice()) {
            let shown = PathBuf::from(&name);
            let mut stack = vec![std::fs::canonicalize(terraform_folder(path)).unwrap_or_default()];
            self.modules(path, &shown, &name, doc, "", None, &mut stack, &mut out);
        }
        if let (Syntax::Bicep, [doc]) = (syntax, docs.as_slice()) {
            let shown = PathBuf::from(&name);
            let mut stack = vec![std::fs::canonicalize(path).unwrap_or_default()];
            let before = out.resources;
            self.bicep_modules(path, &shown, &name, doc, None, &mut stack, &mut out);
            // What its modules deploy is this file's: not a file without compute.
            if out.resources > before {
                let own = format!("{name}:");
                out.skipped_documents
                    .retain(|(at, _)| !at.starts_with(&own));
            }
        }
        self.incomplete_suppressions(&name, &directives, &mut out);
        if out.resources == 0 && out.errors.is_empty() {
            out.skipped = Some(if out.unchecked_documents.is_empty() {
                (
                    SkipKind::NoResources,
                    "no compute resources recognised".into(),
                )
            } else {
                let reasons: Vec<String> = out
                    .unchecked_documents
                    .iter()
                    .map(|d| d.reason.clone())
                    .collect();
                (SkipKind::Unchecked, reasons.join("; "))
            });
        }
        out
    }

    /// Checks the local modules the Terraform document `doc` (of the file `path`, shown
    /// as `name`) calls, each file of a module as a document of its own, with the call's
    /// arguments bound; a module whose source is not a local folder is an unresolved fact
    /// (its resources are not seen). `stack` holds the module folders on the way here (a
    /// module that calls itself is followed once).
    #[expect(
        clippy::too_many_arguments,
        reason = "a recursion over module calls; the arguments are its position"
    )]
    fn modules(
        &self,
        path: &Path,
        shown: &Path,
        name: &str,
        doc: &Document,
        prefix: &str,
        outer: Option<&Origins>,
        stack: &mut Vec<PathBuf>,
        out: &mut FileResult,
    ) {
        for call in terraform::module_calls(path, shown, &doc.value) {
            let address = format!("{prefix}module.{}.", call.name);
            let line = doc.positions.locate(&call.pointer).map_or(0, |s| s.line);
            // The arguments whose value is not known, and where the user gives it: this
            // call's argument, or the outer call's when it passes a variable down.
            let origins: Origins = call
                .inputs
                .iter()
                .filter_map(|(variable, value)| {
                    let text = value.as_str().filter(|t| t.contains("${"))?;
                    let passed = computeguard_decode::variable_reference(text)
                        .and_then(|v| outer?.get(&v).cloned());
                    let pointer = format!(
                        "{}/{}",
                        call.pointer,
                        computeguard_decode::escape_key(variable)
                    );
                    let origin = passed.unwrap_or_else(|| Origin {
                        file: name.to_string(),
                        line: doc.positions.locate(&pointer).map_or(line, |s| s.line),
                        path: pointer,
                        expression: text.to_string(),
                    });
                    Some((variable.clone(), origin))
                })
                .collect();
            let unfollowed = |why: String| Unresolved {
                file: name.to_string(),
                line,
                resource: ResourceRef {
                    kind: "terraform-module".into(),
                    name: address.trim_end_matches('.').to_string(),
                },
                display: format!("Terraform module {}", address.trim_end_matches('.')),
                field: "module".into(),
                expression: Some(why),
                path: format!("{}/source", call.pointer),
            };
            let Some(dir) = &call.dir else {
                out.unresolved.push(unfollowed(call.source.clone()));
                continue;
            };
            let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
            if !dir.is_dir() {
                out.errors.push(FileError {
                    file: name.to_string(),
                    line,
                    message: format!(
                        "module `{}`: its source `{}` is not a folder ({} does not exist)",
                        call.name,
                        call.source,
                        dir.display()
                    ),
                });
                continue;
            }
            // A module that calls itself was checked once on the way here (Terraform
            // refuses such a configuration anyway).
            if stack.contains(&key) {
                continue;
            }
            // Deeper than computeguard follows: its resources are a blind spot, said so.
            if stack.len() > terraform::MAX_MODULE_DEPTH {
                let mut fact = unfollowed(call.source.clone());
                fact.field = "module-depth".into();
                out.unresolved.push(fact);
                continue;
            }
            stack.push(key);
            for file in terraform::module_files(&call) {
                let shown_file = file.shown.display().to_string();
                let module_doc = match file.decoded {
                    Ok(d) => d,
                    Err(e) => {
                        out.errors.push(FileError {
                            file: shown_file,
                            line: e.line,
                            message: format!(
                                "module `{}` (called at {name}:{line}): invalid file at line {}, column {}: {}",
                                call.name,
                                e.line,
                                e.column,
                                // "invalid file" says what `invalid hcl: ` would; a
                                // `.tf.json` file keeps `invalid json: `.
                                match e.message.syntax {
                                    Some(computeguard_decode::Syntax::Hcl) => e.message.text,
                                    _ => e.message.to_string(),
                                }
                            ),
                        });
                        continue;
                    }
                };
                let lines: Vec<&str> = file.text.lines().collect();
                let directives = Directives::parse(&file.path, &file.text);
                let syntax =
                    Syntax::of(&file.path).unwrap_or(Syntax::Terraform(terraform::Kind::Hcl));
                let ctx = DocContext {
                    path: &file.path,
                    syntax,
                    name: &shown_file,
                    lines: &lines,
                    directives: &directives,
                    module: Some(&address),
                    via: None,
                };
                let before = out.unresolved.len();
                self.document(&ctx, &module_doc, out);
                for entry in out.unresolved.iter_mut().skip(before) {
                    retarget(entry, &origins, &address);
                }
                self.modules(
                    &file.path,
                    &file.shown,
                    &shown_file,
                    &module_doc,
                    &address,
                    Some(&origins),
                    stack,
                    out,
                );
            }
            stack.pop();
        }
    }

    fn document(&self, ctx: &DocContext<'_>, doc: &Document, out: &mut FileResult) {
        let DocContext {
            path,
            syntax,
            name,
            lines,
            directives,
            module,
            via,
        } = *ctx;
        out.documents += 1;
        let start = doc.positions.locate("").map_or(1, |s| s.line.max(1));
        let what = match &doc.value {
            serde_json::Value::Object(_) => None,
            // `az ... list` and Resource Graph results are arrays of Azure resources, read
            // row by row below (a row that is not an object is then refused at its line).
            serde_json::Value::Array(_)
                if computeguard_policy_core::read::parts(&doc.value).is_some() =>
            {
                None
            }
            serde_json::Value::Array(_) => Some("a sequence"),
            serde_json::Value::String(_) => Some("a string"),
            serde_json::Value::Number(_) => Some("a number"),
            serde_json::Value::Bool(_) => Some("a boolean"),
            serde_json::Value::Null => Some("null"),
        };
        if let Some(what) = what {
            out.unchecked_documents.push(Skipped {
                file: name.to_string(),
                line: Some(start),
                kind: SkipKind::Unchecked,
                reason: format!(
                    "document {} is {what}, not a mapping: computeguard checks mappings (Kubernetes objects, Azure ML, ARM and Terraform files)",
                    doc.index + 1
                ),
            });
            return;
        }
        if let Some(pointer) = too_deep(&doc.value, 1, MAX_POLICY_DEPTH) {
            let span = doc.positions.locate(&pointer);
            out.errors.push(FileError {
                file: name.to_string(),
                line: span.map_or(start, |s| s.line),
                message: format!(
                    "nesting too deep at `{pointer}`: expected at most {MAX_POLICY_DEPTH} levels of sequences and mappings, the most a policy reads; the document was not checked"
                ),
            });
            return;
        }
        // A `List` (a `kubectl get` dump) or an Azure export is evaluated item by item:
        // each item alone within the sandbox's memory, the items of a large dump in
        // parallel; pointers are made relative to the whole document again below.
        let units: Vec<(String, std::borrow::Cow<'_, serde_json::Value>)> =
            computeguard_policy_core::read::parts(&doc.value)
                .unwrap_or_else(|| vec![(String::new(), std::borrow::Cow::Borrowed(&doc.value))]);
        let source = match syntax {
            Syntax::Terraform(_) => Source::Terraform,
            Syntax::Bicep => Source::Bicep,
            Syntax::Yaml | Syntax::Json => Source::Unknown,
        };
        let answers = self.evaluate_units(&units, syntax, source);
        let mut recognised = 0;
        for ((prefix, _), (native, answers)) in units.iter().zip(answers) {
            // The compute model natively: what stayed unresolved, and module addresses.
            let address = |display: &str| -> Option<String> {
                let m = module?;
                native
                    .iter()
                    .find(|r| computeguard_policy_core::eval::display_name(r) == display)
                    .map(|r| format!("{m}{}.{}", r.source_kind, r.name))
            };
            for r in &native {
                let display = computeguard_policy_core::eval::display_name(r);
                let mut facts = open_facts(&doc.value, prefix, r);
                // An Azure ML deployment or job runs in its workspace's region: with the
                // subscription's facts to judge it by and no region for it, say so.
                let azure = &self.config.context;
                if azure.workspace_region.is_none()
                    && !(azure.skus.is_empty()
                        && azure.usage.is_empty()
                        && azure.ml_usage.is_empty())
                    && computeguard_policy_core::context::takes_workspace_region(r)
                {
                    facts.push(OpenFact {
                        field: "workspaceRegion".into(),
                        pointer: format!("{prefix}{}", r.pointer),
                        expression: None,
                    });
                }
                for fact in facts {
                    out.unresolved.push(Unresolved {
                        file: name.to_string(),
                        line: doc
                            .positions
                            .locate(&fact.pointer)
                            .map_or(start, |s| s.line),
                        resource: ResourceRef {
                            kind: r.kind.clone(),
                            name: match via {
                                Some(v) => format!("{display} (module {})", v.label),
                                None => address(&display).unwrap_or_else(|| display.clone()),
                            },
                        },
                        display: match via {
                            Some(v) => v.describe(&r.display),
                            None => r.display.clone(),
                        },
                        field: fact.field,
                        expression: fact.expression,
                        path: fact.pointer,
                    });
                }
            }
            let mut unit_recognised = 0;
            for (loaded, answer) in self.policies.iter().zip(answers) {
                let response = match answer {
                    Ok(r) => r,
                    Err(e) => {
                        out.errors.push(FileError {
                            file: name.to_string(),
                            line: doc.positions.locate(prefix).map_or(start, |s| s.line),
                            message: self.eval_message(&e),
                        });
                        continue;
                    }
                };
                unit_recognised = unit_recognised.max(response.resources.len());
                for v in response.violations {
                    let v_path = format!("{prefix}{}", v.path);
                    let object = object_at(&doc.value, &v_path);
                    let Some(severity) = computeguard_policyset::severity_of(
                        &self.config.rules,
                        &v.rule,
                        v.severity.into(),
                    ) else {
                        continue;
                    };
                    let span = doc.positions.locate(&v_path);
                    let (line, column) = span.map_or((0, 0), |s| (s.line, s.column));
                    let suppression = match directives.find(line, &v.rule) {
                        Some(d) => Some((
                            SuppressionKind::Inline,
                            d.reason.clone().unwrap_or_default(),
                        )),
                        None => self
                            .config
                            .ignored(&v.rule, path, &v_path)
                            .map(|i| (SuppressionKind::Config, i.reason.clone())),
                    };
                    let finding = Finding {
                        rule: v.rule,
                        severity,
                        message: match via {
                            Some(via) => format!("{} (deployed by {})", v.message, via.site),
                            None => v.message,
                        },
                        file: name.to_string(),
                        line,
                        column,
                        path: v_path,
                        resource: ResourceRef {
                            kind: v.resource.kind,
                            name: match via {
                                Some(via) => format!("{} (module {})", v.resource.name, via.label),
                                None => address(&v.resource.name).unwrap_or(v.resource.name),
                            },
                        },
                        policy: loaded.policy.info().name.clone(),
                        remediation: v.remediation,
                        document: doc.index,
                        object,
                        source_line: (line > 0)
                            .then(|| lines.get(line as usize - 1).map(|l| l.to_string()))
                            .flatten(),
                        suppressed: false,
                        suppression: None,
                    };
                    match suppression {
                        Some((kind, reason)) => out.suppressed.push(finding.suppress(kind, reason)),
                        None => out.findings.push(finding),
                    }
                }
            }
            recognised += unit_recognised;
        }
        out.resources += recognised;
        // A Bicep module without compute (a role assignment, a network) is part of its
        // caller, which says whether anything was recognised.
        if recognised == 0 && via.is_none() {
            let line = start;
            let kind = doc
                .value
                .get("kind")
                .and_then(serde_json::Value::as_str)
                .map_or_else(String::new, |k| format!(" (kind {k})"));
            out.skipped_documents.push((
                format!("{name}:{line}"),
                format!(
                    "document {}{kind}: no compute resources recognised",
                    doc.index + 1
                ),
            ));
        }
    }
}

/// Every policy's answer for one unit, in the order of the run's policies.
type Answers = Vec<Result<Response, EvalError>>;

/// One item of a document (the document itself, or an item of a `List` or an export):
/// its text, its compute model read natively, which policies decide it without its
/// name, and its template.
struct Unit {
    json: String,
    native: Vec<computeguard_policy_core::compute::Resource>,
    blind: Vec<bool>,
    template: Option<Template>,
}

impl Scan<'_> {
    /// Every policy's answer for every unit, with each unit's compute model. The items
    /// of a dump that share a template (the Pods of one ReplicaSet, the Jobs of one
    /// CronJob) are evaluated once by the policies that decide without the name
    /// ([`computeguard_policyset::template`]), and each item gets that answer with its
    /// own name; every other policy, every item whose template no other item has, and
    /// every item whose template's evaluation failed is evaluated as it is. Units run in
    /// parallel when there are several.
    fn evaluate_units(
        &self,
        units: &[(String, std::borrow::Cow<'_, serde_json::Value>)],
        syntax: Syntax,
        source: Source,
    ) -> Vec<(Vec<computeguard_policy_core::compute::Resource>, Answers)> {
        let many = units.len() > 1;
        let read = |(_, value): &(String, std::borrow::Cow<'_, serde_json::Value>)| {
            let json = value.to_string();
            let native = computeguard_policy_core::read::normalize(value, source);
            let blind: Vec<bool> = self
                .policies
                .iter()
                .map(|p| many && p.name_blind_for(&native))
                .collect();
            let template = blind
                .contains(&true)
                .then(|| Template::of(value, &json, ""))
                .flatten();
            Unit {
                json,
                native,
                blind,
                template,
            }
        };
        let read: Vec<Unit> = if many {
            units.par_iter().map(read).collect()
        } else {
            units.iter().map(read).collect()
        };
        // The items each template stands for; a template only one item has is no saving,
        // and that item is evaluated as it is.
        let mut by_key: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, unit) in read.iter().enumerate() {
            if let Some(t) = &unit.template {
                by_key.entry(t.key()).or_default().push(i);
            }
        }
        let mut groups: Vec<Vec<usize>> = by_key.into_values().filter(|g| g.len() > 1).collect();
        groups.sort_unstable();
        let mut group_of: Vec<Option<usize>> = vec![None; read.len()];
        for (g, items) in groups.iter().enumerate() {
            for &i in items {
                group_of[i] = Some(g);
            }
        }
        let evaluate = |json: &str, loaded: &Loaded| {
            let mut request = Request::new(json.to_string(), self.as_of.clone());
            if let Some(kind) = syntax.source_kind() {
                request.source_kind = kind;
            }
            request.settings.clone_from(&loaded.settings_text);
            loaded.policy.evaluate(&request)
        };
        let by_template: Vec<Vec<Option<Result<Response, EvalError>>>> = groups
            .par_iter()
            .map(|items| {
                let unit = &read[items[0]];
                let document = unit.template.as_ref().map_or("", |t| t.document());
                self.policies
                    .iter()
                    .zip(&unit.blind)
                    .map(|(loaded, blind)| blind.then(|| evaluate(document, loaded)))
                    .collect()
            })
            .collect();
        if !groups.is_empty() {
            tracing::debug!(
                items = units.len(),
                templates = groups.len(),
                answered = groups.iter().map(Vec::len).sum::<usize>(),
                "a dump evaluated by template"
            );
        }
        let answer = |(i, unit): (usize, Unit)| {
            let from_template = unit
                .template
                .as_ref()
                .zip(group_of[i].and_then(|g| by_template.get(g)));
            let answers = self
                .policies
                .iter()
                .enumerate()
                .map(|(p, loaded)| match from_template {
                    Some((t, answers)) if unit.blind[p] => match answers.get(p) {
                        Some(Some(Ok(response))) => Ok(t.answer(response)),
                        _ => evaluate(&unit.json, loaded),
                    },
                    _ => evaluate(&unit.json, loaded),
                })
                .collect();
            (unit.native, answers)
        };
        if many {
            read.into_par_iter().enumerate().map(answer).collect()
        } else {
            read.into_iter().enumerate().map(answer).collect()
        }
    }

    /// The message of a failed evaluation. Running out of sandbox memory names the CLI's
    /// own way to raise the limit.
    fn eval_message(&self, e: &computeguard_engine::EvalError) -> String {
        match e {
            computeguard_engine::EvalError::MemoryLimit {
                policy,
                limit,
                document,
            } => format!(
                "policy `{policy}` ran out of its {} sandbox memory{document}; raise the memory limit with `--memory-limit-mib` or split the input",
                computeguard_engine::human_bytes(*limit)
            ),
            other => other.to_string(),
        }
    }

    /// A `suppression-missing-reason` warning for every `computeguard:ignore` comment
    /// that names no rule or gives no reason (such a comment suppresses nothing).
    fn incomplete_suppressions(&self, name: &str, directives: &Directives, out: &mut FileResult) {
        let Some(severity) = computeguard_policyset::severity_of(
            &self.config.rules,
            MISSING_REASON_RULE,
            Severity::Warning,
        ) else {
            return;
        };
        // A rule id no loaded policy declares suppresses nothing: an error at its line,
        // as an unknown id in computeguard.yaml is.
        let mut known: Vec<String> = self
            .policies
            .iter()
            .flat_map(|l| l.policy.info().rules.iter().map(|r| r.id.clone()))
            .collect();
        known.push(MISSING_REASON_RULE.into());
        known.push(crate::cost::rule::IDLE_COST_RULE.into());
        for d in directives.all() {
            for rule in &d.rules {
                if !known.contains(rule) {
                    out.errors.push(FileError {
                        file: name.to_string(),
                        line: d.line,
                        message: format!(
                            "`computeguard:ignore`: {}",
                            crate::suggest::unknown_rule(rule, &known)
                        ),
                    });
                }
            }
        }
        for d in directives.incomplete() {
            let message = match d.rules.first() {
                None => "`computeguard:ignore` names no rule, so it suppresses nothing".to_string(),
                Some(rule) => format!(
                    "the suppression of `{rule}` gives no reason, so it suppresses nothing; say why after the rule id"
                ),
            };
            out.findings.push(Finding {
                rule: MISSING_REASON_RULE.into(),
                severity,
                message,
                file: name.to_string(),
                line: d.line,
                column: d.column,
                path: String::new(),
                resource: ResourceRef {
                    kind: "suppression".into(),
                    name: d.rules.join(","),
                },
                policy: "computeguard".into(),
                remediation: crate::suppress::MISSING_REASON_REMEDIATION.into(),
                document: 0,
                object: None,
                source_line: Some(d.source.clone()),
                suppressed: false,
                suppression: None,
            });
        }
    }
}

/// The folders (canonical) of the local Terraform modules that the Terraform files among
/// `inputs` call, each with its first caller (`main.tf (module.gpu_pool)`).
fn called_modules(inputs: &[Input]) -> std::collections::HashMap<PathBuf, String> {
    let mut called = std::collections::HashMap::new();
    for input in inputs {
        let Some(kind @ (terraform::Kind::Hcl | terraform::Kind::Json)) =
            terraform::kind(&input.path)
        else {
            continue;
        };
        let text = match &input.text {
            Some(t) => std::borrow::Cow::Borrowed(t.as_str()),
            None => match open::read_to_string(&input.path) {
                Ok(t) => std::borrow::Cow::Owned(t),
                Err(_) => continue,
            },
        };
        // A module's `source` is a literal: no variables to resolve, no siblings to read.
        let Ok(doc) = terraform::parse(&text, kind) else {
            continue;
        };
        let shown = PathBuf::from(&input.name);
        for call in terraform::module_calls(&input.path, &shown, &doc.value) {
            if let Some(dir) = call
                .dir
                .as_ref()
                .and_then(|d| std::fs::canonicalize(d).ok())
            {
                called
                    .entry(dir)
                    .or_insert_with(|| format!("{} (module.{})", input.name, call.name));
            }
        }
    }
    called
}

/// A fact of a resource that the document leaves to deploy time.
pub struct OpenFact {
    /// The compute-model field (`sku`, `region`, ...).
    pub field: String,
    /// JSON pointer, within the whole document, of what the document writes for it (the
    /// resource itself when the reader did not record where the field comes from).
    pub pointer: String,
    /// What the document writes there (`${var.gpu_vm_size}`); `None` when the reader did
    /// not record the field's place, so nothing is shown rather than the wrong text.
    pub expression: Option<String>,
}

/// The unresolved facts of `r`, read from the unit at `prefix` of `doc` (`check`'s
/// unresolved list and `inspect` both show them).
pub fn open_facts(
    doc: &serde_json::Value,
    prefix: &str,
    r: &computeguard_policy_core::compute::Resource,
) -> Vec<OpenFact> {
    r.unresolved
        .iter()
        .map(|field| match r.fields.get(field) {
            Some(at) => {
                let pointer = format!("{prefix}{at}");
                let expression = doc.pointer(&pointer).map(|v| match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                });
                OpenFact {
                    field: field.clone(),
                    pointer,
                    expression,
                }
            }
            None => OpenFact {
                field: field.clone(),
                pointer: format!("{prefix}{}", r.pointer),
                expression: None,
            },
        })
        .collect()
}

/// A file decoded the way `check` decodes it (the format from the name, else the content;
/// Terraform with its folder's variables and `var_files`, `--var-file` values), with the
/// source kind to evaluate it as. For `computeguard test` fixtures and check's pre-pass.
pub fn decode_like_check(
    path: &Path,
    text: &str,
    var_files: &[terraform::VarFile],
) -> Result<(Vec<Document>, Option<computeguard_engine::SourceKind>), String> {
    if bicep::is_bicepparam(path) {
        return Err(
            "a Bicep parameters file holds no resources; check the template it is `using`".into(),
        );
    }
    let syntax = Syntax::of(path).unwrap_or_else(|| Syntax::sniff(text));
    if syntax == Syntax::Terraform(terraform::Kind::Vars) {
        return Err(
            "a Terraform variable definitions file holds no resources; use the .tf file".into(),
        );
    }
    let docs = syntax.decode(path, text, var_files).map_err(|e| {
        format!(
            "invalid {} at line {}, column {}: {}",
            syntax.name(),
            e.line,
            e.column,
            e.message
        )
    })?;
    Ok((docs, syntax.source_kind()))
}

/// A file decoded the way `check` decodes it, with the source its readers take it as
/// (`computeguard inspect`).
pub fn decode_for_model(
    path: &Path,
    text: &str,
    var_files: &[terraform::VarFile],
) -> Result<(Vec<Document>, Source), String> {
    let (docs, _) = decode_like_check(path, text, var_files)?;
    let syntax = Syntax::of(path).unwrap_or_else(|| Syntax::sniff(text));
    let source = match syntax {
        Syntax::Terraform(_) => Source::Terraform,
        Syntax::Bicep => Source::Bicep,
        Syntax::Yaml | Syntax::Json => Source::Unknown,
    };
    Ok((docs, source))
}

/// The Terraform variable definitions files (`.tfvars`, `.tfvars.json`) among the paths named
/// on the command line: each is a var file, applied after the auto-loaded ones as
/// `terraform plan -var-file` is (`check main.tf prod.tfvars`).
pub fn named_var_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter(|p| p.as_os_str() != "-" && p.is_file())
        .filter(|p| terraform::kind(p) == Some(terraform::Kind::Vars))
        .cloned()
        .collect()
}

impl Scan<'_> {
    /// Terraform's "value for undeclared variable" warnings for this scan (`file:line:
    /// message`): names set in the auto-loaded `.tfvars` of the root folders checked that the
    /// folder does not declare, and names set in the var files that no root folder declares.
    pub fn var_file_warnings(&self, inputs: &[Input]) -> Vec<String> {
        let called = called_modules(inputs);
        let mut roots: Vec<(PathBuf, PathBuf)> = inputs
            .iter()
            .filter(|i| i.text.is_none())
            .filter(|i| {
                matches!(
                    terraform::kind(&i.path),
                    Some(terraform::Kind::Hcl | terraform::Kind::Json)
                )
            })
            .filter_map(|i| {
                let folder = terraform_folder(&i.path).to_path_buf();
                let key = std::fs::canonicalize(&folder).ok()?;
                (!called.contains_key(&key)).then_some((key, folder))
            })
            .collect();
        roots.sort();
        roots.dedup_by(|a, b| a.0 == b.0);
        let roots: Vec<PathBuf> = roots.into_iter().map(|(_, f)| f).collect();
        let files: Vec<PathBuf> = self.var_files.iter().map(|(p, _)| p.clone()).collect();
        terraform::undeclared_values(&roots, &files)
    }
}

/// Reads and decodes a `--var-file` (`.tfvars` HCL or `.tfvars.json`).
pub fn read_var_file(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text = open::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("--var-file `{}`: cannot read: {e}", path.display()))?;
    let json = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().to_ascii_lowercase().ends_with(".json"));
    let doc = if json {
        decode_json(&text)
    } else {
        computeguard_decode::decode_hcl(&text)
    }
    .map_err(|e| {
        anyhow::anyhow!(
            "--var-file {}:{}:{}: {}",
            path.display(),
            e.line,
            e.column,
            e.message
        )
    })?;
    if !doc.value.is_object() {
        anyhow::bail!(
            "--var-file `{}`: expected variable assignments (`name = value`)",
            path.display()
        );
    }
    Ok(doc.value)
}

/// The folder of a Terraform file (`.` for a bare name).
fn terraform_folder(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if d.as_os_str().is_empty() => Path::new("."),
        Some(d) => d,
        None => Path::new("."),
    }
}

/// The Kubernetes object a finding at `pointer` is about: the innermost object on the
/// pointer's way that has `apiVersion`, `kind` and `metadata.name` (an item of a `List`,
/// the `request.object` of an AdmissionReview, the document itself).
fn object_at(doc: &serde_json::Value, pointer: &str) -> Option<crate::report::ObjectRef> {
    use serde_json::Value;
    let of = |v: &Value| {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        Some(crate::report::ObjectRef {
            api_version: s("/apiVersion")?,
            kind: s("/kind")?,
            name: s("/metadata/name")?,
            namespace: s("/metadata/namespace"),
            uid: s("/metadata/uid"),
        })
    };
    let mut node = doc;
    let mut found = of(node);
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        node = match node {
            Value::Object(m) => match m.get(&token) {
                Some(v) => v,
                None => break,
            },
            Value::Array(a) => match token.parse::<usize>().ok().and_then(|i| a.get(i)) {
                Some(v) => v,
                None => break,
            },
            _ => break,
        };
        if let Some(o) = of(node) {
            found = Some(o);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::open_facts;
    use computeguard_policy_core::compute::Resource;
    use serde_json::json;

    #[test]
    fn an_open_fact_shows_the_expression_only_where_the_reader_recorded_it() {
        let doc = json!({"items": [{"res": {"size": "${var.size}", "name": "gpu"}}]});
        let mut r = Resource {
            pointer: "/res".into(),
            unresolved: vec!["sku".into(), "region".into()],
            ..Resource::default()
        };
        r.fields.insert("sku".into(), "/res/size".into());
        let facts = open_facts(&doc, "/items/0", &r);
        assert_eq!(facts[0].field, "sku");
        assert_eq!(facts[0].pointer, "/items/0/res/size");
        assert_eq!(facts[0].expression.as_deref(), Some("${var.size}"));
        // No recorded place: the resource's pointer and no text, never the resource's
        // whole JSON passed off as the expression.
        assert_eq!(facts[1].field, "region");
        assert_eq!(facts[1].pointer, "/items/0/res");
        assert_eq!(facts[1].expression, None);
    }
}
