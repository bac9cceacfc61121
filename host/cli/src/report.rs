//! One report model, several renderers: `text` (people), `json` (machines, the
//! contract in DESIGN.md), `github` (workflow annotations).

use serde::Serialize;
use std::io::Write;

/// How serious a finding is after configuration overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl From<computeguard_engine::Severity> for Severity {
    fn from(s: computeguard_engine::Severity) -> Self {
        match s {
            computeguard_engine::Severity::Error => Severity::Error,
            computeguard_engine::Severity::Warning => Severity::Warning,
            computeguard_engine::Severity::Info => Severity::Info,
        }
    }
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
    /// Whether `self` is at or above `threshold` (error > warning > info).
    pub fn at_least(self, threshold: Severity) -> bool {
        self <= threshold
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ResourceRef {
    pub kind: String,
    pub name: String,
}

/// One finding, located in a file.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub rule: String,
    pub severity: Severity,
    pub message: String,
    pub file: String,
    pub line: u32,
    pub column: u32,
    /// JSON pointer within the document.
    pub path: String,
    pub resource: ResourceRef,
    pub policy: String,
    pub remediation: String,
    /// Index of the document within a multi-document file.
    pub document: usize,
    #[serde(skip)]
    pub source_line: Option<String>,
}

/// A file that could not be checked, or a policy that failed on it.
#[derive(Clone, Debug, Serialize)]
pub struct FileError {
    pub file: String,
    pub line: u32,
    pub message: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub files: usize,
    pub documents: usize,
    pub resources: usize,
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    pub suppressed: usize,
    #[serde(rename = "failedFiles")]
    pub failed_files: usize,
    #[serde(rename = "skippedFiles")]
    pub skipped_files: usize,
    #[serde(rename = "asOf")]
    pub as_of: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub errors: Vec<FileError>,
    pub summary: Summary,
    #[serde(skip)]
    pub skipped: Vec<(String, String)>,
}

/// Output format of `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Github,
}

struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
}

impl Report {
    pub fn finish(&mut self) {
        self.findings.sort_by(|a, b| {
            (a.file.as_str(), a.line, a.column, a.rule.as_str()).cmp(&(
                b.file.as_str(),
                b.line,
                b.column,
                b.rule.as_str(),
            ))
        });
        self.errors
            .sort_by(|a, b| (a.file.as_str(), a.line).cmp(&(b.file.as_str(), b.line)));
        let s = &mut self.summary;
        s.errors = self
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        s.warnings = self
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
            .count();
        s.infos = self
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Info)
            .count();
        s.failed_files = {
            let mut files: Vec<&str> = self.errors.iter().map(|e| e.file.as_str()).collect();
            files.dedup();
            files.len()
        };
        s.skipped_files = self.skipped.len();
    }

    pub fn render(
        &self,
        format: Format,
        color: bool,
        verbose: bool,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        match format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut *out, self).map_err(|e| {
                    match e.io_error_kind() {
                        Some(kind) => std::io::Error::from(kind),
                        None => std::io::Error::other(e),
                    }
                })?;
                writeln!(out)
            }
            Format::Github => {
                for f in &self.findings {
                    let level = match f.severity {
                        Severity::Error => "error",
                        Severity::Warning => "warning",
                        Severity::Info => "notice",
                    };
                    writeln!(
                        out,
                        "::{level} file={},line={},col={},title=computeguard {}::{}",
                        esc_prop(&f.file),
                        f.line,
                        f.column.max(1),
                        esc_prop(&f.rule),
                        esc_data(&format!("{} Fix: {}", f.message, f.remediation))
                    )?;
                }
                for e in &self.errors {
                    writeln!(
                        out,
                        "::error file={},line={},title=computeguard::{}",
                        esc_prop(&e.file),
                        e.line.max(1),
                        esc_data(&e.message)
                    )?;
                }
                Ok(())
            }
            Format::Text => self.render_text(&Style { on: color }, verbose, out),
        }
    }

    fn render_text(&self, st: &Style, verbose: bool, out: &mut dyn Write) -> std::io::Result<()> {
        for f in &self.findings {
            let (code, label) = match f.severity {
                Severity::Error => ("1;31", "error"),
                Severity::Warning => ("1;33", "warning"),
                Severity::Info => ("1;36", "info"),
            };
            writeln!(
                out,
                "{}{} {}",
                st.paint(code, &format!("{label}[{}]", f.rule)),
                st.paint("1", ":"),
                st.paint("1", &f.message)
            )?;
            writeln!(
                out,
                "  {} {}:{}:{}",
                st.paint("34", "-->"),
                f.file,
                f.line,
                f.column.max(1)
            )?;
            if let Some(src) = &f.source_line {
                let gutter = f.line.to_string();
                let pad = " ".repeat(gutter.len());
                let col = f.column.max(1) as usize - 1;
                let width = src
                    .chars()
                    .skip(col)
                    .collect::<String>()
                    .trim_end()
                    .chars()
                    .count()
                    .max(1);
                let lead: String = src
                    .chars()
                    .take(col)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                writeln!(out, "{pad} {}", st.paint("34", "|"))?;
                writeln!(
                    out,
                    "{} {} {src}",
                    st.paint("34", &gutter),
                    st.paint("34", "|")
                )?;
                writeln!(
                    out,
                    "{pad} {} {lead}{}",
                    st.paint("34", "|"),
                    st.paint(code, &"^".repeat(width))
                )?;
            }
            writeln!(out, "  {} fix: {}", st.paint("34", "="), f.remediation)?;
            writeln!(out)?;
        }
        for e in &self.errors {
            writeln!(
                out,
                "{}{} {}",
                st.paint("1;31", "error"),
                st.paint("1", ":"),
                st.paint("1", &e.message)
            )?;
            if e.line > 0 {
                writeln!(out, "  {} {}:{}", st.paint("34", "-->"), e.file, e.line)?;
            } else {
                writeln!(out, "  {} {}", st.paint("34", "-->"), e.file)?;
            }
            writeln!(out)?;
        }
        if verbose {
            for (file, why) in &self.skipped {
                writeln!(out, "skipped {file}: {why}")?;
            }
        }
        let s = &self.summary;
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut line = format!(
            "{}, {}, {} in {} ({}, {})",
            plural(s.errors, "error", "errors"),
            plural(s.warnings, "warning", "warnings"),
            plural(s.infos, "info", "infos"),
            plural(s.files, "file", "files"),
            plural(s.documents, "document", "documents"),
            plural(s.resources, "resource", "resources"),
        );
        if s.suppressed > 0 {
            line.push_str(&format!("; {} suppressed", s.suppressed));
        }
        if s.failed_files > 0 {
            line.push_str(&format!(
                "; {} could not be checked",
                plural(s.failed_files, "file", "files")
            ));
        }
        if s.skipped_files > 0 && !verbose {
            line.push_str(&format!(
                "; {} skipped (--verbose lists them)",
                plural(s.skipped_files, "file", "files")
            ));
        }
        line.push_str(&format!("; as of {}", s.as_of));
        let code = if s.errors > 0 || s.failed_files > 0 {
            "1;31"
        } else if s.warnings > 0 {
            "1;33"
        } else {
            "1;32"
        };
        writeln!(out, "{} {line}", st.paint(code, "computeguard:"))
    }
}

fn esc_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn esc_prop(s: &str) -> String {
    esc_data(s).replace(':', "%3A").replace(',', "%2C")
}
