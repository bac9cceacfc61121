//! Walks paths, decodes files with positions, evaluates every document with every
//! policy, and maps findings back to file:line.

use crate::config::{Config, Level};
use crate::policies::Loaded;
use crate::report::{FileError, Finding, Report, ResourceRef, Severity, SuppressionKind};
use crate::suppress::{Directives, MISSING_REASON_RULE};
use computeguard_decode::{Document, decode_bicep, decode_json, decode_yaml};
use computeguard_engine::Request;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

mod terraform;

/// Extensions `check` reads.
pub const SUPPORTED: &[&str] = &["yaml", "yml", "json", "bicep", "tf", "tfvars"];

/// Marker of an inline suppression: `# computeguard:ignore <rule-id> <reason>`.
pub use crate::suppress::IGNORE_MARKER;

pub struct Scan<'a> {
    pub policies: &'a [Loaded],
    pub config: &'a Config,
    pub as_of: String,
}

/// Files to check under `paths` (directories are walked honouring `.gitignore`).
/// Missing paths are errors.
/// Files that were not checked, with the reason.
pub type Skipped = Vec<(String, String)>;

pub fn collect(paths: &[PathBuf]) -> anyhow::Result<(Vec<PathBuf>, Skipped)> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        if !p.exists() {
            anyhow::bail!("path `{}` does not exist", p.display());
        }
        if p.is_file() {
            if supported(p) {
                files.push(p.clone());
            } else {
                skipped.push((p.display().to_string(), "not a YAML or JSON file".into()));
            }
            continue;
        }
        // Hidden directories are walked (`.azureml/` holds compute definitions); `.git`
        // and what `.gitignore` excludes are not.
        let walker = ignore::WalkBuilder::new(p)
            .require_git(false)
            .hidden(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        for entry in walker {
            let entry = entry?;
            if entry.file_type().is_some_and(|t| t.is_file()) {
                let path = entry.into_path();
                if supported(&path) {
                    files.push(path);
                } else {
                    skipped.push((path.display().to_string(), "not a YAML or JSON file".into()));
                }
            }
        }
    }
    files.sort();
    files.dedup();
    Ok((files, skipped))
}

/// A Bicep file: decoded to the ARM template shape (`source-kind` `bicep`).
fn is_bicep(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("bicep"))
}

fn supported(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SUPPORTED.contains(&e.to_ascii_lowercase().as_str()))
}

/// What one file contributed.
#[derive(Default)]
struct FileResult {
    findings: Vec<Finding>,
    errors: Vec<FileError>,
    documents: usize,
    resources: usize,
    suppressed: Vec<Finding>,
    skipped: Option<String>,
    /// Documents of a multi-document file that declare no compute: `(file:line, why)`.
    skipped_documents: Vec<(String, String)>,
}

impl Scan<'_> {
    pub fn run(&self, files: &[PathBuf], mut report: Report) -> Report {
        let progress = crate::progress::Progress::new(files.len());
        let results: Vec<FileResult> = files
            .par_iter()
            .map(|f| {
                let r = self.file(f);
                progress.tick(&f.display().to_string());
                r
            })
            .collect();
        progress.finish();
        report.summary.files = files.len();
        report.summary.as_of = self.as_of.clone();
        for (path, r) in files.iter().zip(results) {
            report.findings.extend(r.findings);
            report.errors.extend(r.errors);
            report.summary.documents += r.documents;
            report.summary.resources += r.resources;
            report.suppressed.extend(r.suppressed);
            if let Some(why) = r.skipped {
                report.skipped.push((path.display().to_string(), why));
            } else {
                report.skipped_documents.extend(r.skipped_documents);
                report.checked.push(path.display().to_string());
            }
        }
        report.finish();
        report
    }

    fn file(&self, path: &Path) -> FileResult {
        let name = path.display().to_string();
        let mut out = FileResult::default();
        let text = match std::fs::read(path) {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(_) => {
                    out.errors.push(FileError {
                        file: name,
                        line: 0,
                        message: "file is not valid UTF-8".into(),
                    });
                    return out;
                }
            },
            Err(e) => {
                out.errors.push(FileError {
                    file: name,
                    line: 0,
                    message: format!("cannot read file: {e}"),
                });
                return out;
            }
        };
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let terraform_kind = terraform::kind(path);
        if terraform_kind == Some(terraform::Kind::Vars) {
            out.skipped = Some(
                "Terraform variable values: applied when the .tf files beside them are checked"
                    .into(),
            );
            return out;
        }
        let is_bicep = is_bicep(path);
        let decoded = if let Some(kind) = terraform_kind {
            terraform::decode(path, &text, kind).map(|d| vec![d])
        } else if is_bicep {
            decode_bicep(&text).map(|d| vec![d])
        } else if is_json {
            decode_json(&text).map(|d| vec![d])
        } else {
            decode_yaml(&text)
        };
        let docs = match decoded {
            Ok(d) => d,
            Err(e) if !is_json && terraform_kind.is_none() && text.contains("{{") => {
                out.skipped = Some(format!(
                    "template (Helm/Go) that is not YAML until rendered: {e}"
                ));
                return out;
            }
            Err(e) => {
                let what = if is_bicep {
                    "Bicep"
                } else if terraform_kind == Some(terraform::Kind::Hcl) {
                    "HCL"
                } else if is_json {
                    "JSON"
                } else {
                    "YAML"
                };
                out.errors.push(FileError {
                    file: name,
                    line: e.line,
                    message: format!(
                        "invalid {what} at line {}, column {}: {}",
                        e.line,
                        e.column,
                        e.message
                            .strip_prefix("invalid yaml: ")
                            .or_else(|| e.message.strip_prefix("invalid json: "))
                            .or_else(|| e.message.strip_prefix("invalid hcl: "))
                            .or_else(|| e.message.strip_prefix("invalid bicep: "))
                            .unwrap_or(&e.message)
                    ),
                });
                return out;
            }
        };
        let lines: Vec<&str> = text.lines().collect();
        let directives = Directives::parse(path, &text);
        for doc in &docs {
            self.document(path, &name, &lines, &directives, doc, &mut out);
        }
        self.incomplete_suppressions(&name, &directives, &mut out);
        if out.resources == 0 && out.errors.is_empty() {
            out.skipped = Some("no compute resources recognised".into());
        }
        out
    }

    fn document(
        &self,
        path: &Path,
        name: &str,
        lines: &[&str],
        directives: &Directives,
        doc: &Document,
        out: &mut FileResult,
    ) {
        out.documents += 1;
        if !doc.value.is_object() {
            return;
        }
        let json = doc.value.to_string();
        let mut recognised = 0;
        for loaded in self.policies {
            let mut request = Request::new(json.clone(), self.as_of.clone());
            if terraform::kind(path).is_some() {
                request.source_kind = computeguard_engine::SourceKind::Terraform;
            }
            if is_bicep(path) {
                request.source_kind = computeguard_engine::SourceKind::Bicep;
            }
            request.settings.clone_from(&loaded.settings_text);
            let response = match loaded.policy.evaluate(&request) {
                Ok(r) => r,
                Err(e) => {
                    let line = doc.positions.locate("").map_or(0, |s| s.line);
                    out.errors.push(FileError {
                        file: name.to_string(),
                        line,
                        message: e.to_string(),
                    });
                    continue;
                }
            };
            recognised = recognised.max(response.resources.len());
            for v in response.violations {
                let severity = match self.config.rules.get(&v.rule) {
                    Some(Level::Off) => continue,
                    Some(Level::Error) => Severity::Error,
                    Some(Level::Warning) => Severity::Warning,
                    Some(Level::Info) => Severity::Info,
                    None => v.severity.into(),
                };
                let span = doc.positions.locate(&v.path);
                let (line, column) = span.map_or((0, 0), |s| (s.line, s.column));
                let suppression = match directives.find(line, &v.rule) {
                    Some(d) => Some((
                        SuppressionKind::Inline,
                        d.reason.clone().unwrap_or_default(),
                    )),
                    None => self
                        .config
                        .ignored(&v.rule, path, &v.path)
                        .map(|i| (SuppressionKind::Config, i.reason.clone())),
                };
                let finding = Finding {
                    rule: v.rule,
                    severity,
                    message: v.message,
                    file: name.to_string(),
                    line,
                    column,
                    path: v.path,
                    resource: ResourceRef {
                        kind: v.resource.kind,
                        name: v.resource.name,
                    },
                    policy: loaded.policy.info().name.clone(),
                    remediation: v.remediation,
                    document: doc.index,
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
        out.resources += recognised;
        if recognised == 0 {
            let line = doc.positions.locate("").map_or(1, |s| s.line.max(1));
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

impl Scan<'_> {
    /// A `suppression-missing-reason` warning for every `computeguard:ignore` comment
    /// that names no rule or gives no reason (such a comment suppresses nothing).
    fn incomplete_suppressions(&self, name: &str, directives: &Directives, out: &mut FileResult) {
        let severity = match self.config.rules.get(MISSING_REASON_RULE) {
            Some(Level::Off) => return,
            Some(Level::Error) => Severity::Error,
            Some(Level::Info) => Severity::Info,
            Some(Level::Warning) | None => Severity::Warning,
        };
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
                source_line: Some(d.source.clone()),
                suppressed: false,
                suppression: None,
            });
        }
    }
}
