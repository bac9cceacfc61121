//! One report model, several renderers: `text` (people), `json` (machines, the
//! contract in docs/configuration.md, "Output formats"), `github` (workflow annotations), `sarif` (code
//! scanning, in `report/sarif.rs`), `junit` (CI test reports, `report/junit.rs`) and
//! `policyreport` (Kubernetes PolicyReport objects, `report/policyreport.rs`).

pub mod fingerprint;
mod junit;
mod policyreport;
mod sarif;

use serde::{Deserialize, Serialize};
use std::io::Write;

/// How serious a finding is after configuration overrides (the policy-set layer's one
/// severity type).
pub use computeguard_policyset::Severity;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ResourceRef {
    pub kind: String,
    pub name: String,
}

/// A Kubernetes object, as a PolicyReport result references it.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
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
    /// The Kubernetes object the finding is in, when it is in one (PolicyReport results
    /// reference it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectRef>,
    #[serde(skip)]
    pub source_line: Option<String>,
    /// Shown only with `--show-suppressed`; `true` when `suppression` is set.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub suppressed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppression: Option<Suppression>,
}

impl Finding {
    /// The Azure resource id, for a finding on a resource read from an Azure export.
    pub fn azure_id(&self) -> Option<&str> {
        let n = self.resource.name.as_str();
        computeguard_policy_core::read::export::is_resource_id(n).then_some(n)
    }

    /// Marks the finding as suppressed.
    pub fn suppress(mut self, kind: SuppressionKind, reason: impl Into<String>) -> Finding {
        self.suppressed = true;
        self.suppression = Some(Suppression {
            kind,
            reason: reason.into(),
        });
        self
    }
}

/// Why a finding is not counted.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Suppression {
    pub kind: SuppressionKind,
    pub reason: String,
}

/// Where a suppression comes from.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SuppressionKind {
    /// A `computeguard:ignore` comment in the file.
    Inline,
    /// An `ignore:` entry of the configuration.
    Config,
    /// An entry of the `--baseline` file.
    Baseline,
}

/// What a rule is, for formats that describe rules (SARIF `tool.driver.rules`).
#[derive(Clone, Debug)]
pub struct RuleDoc {
    pub id: String,
    pub severity: Severity,
    pub description: String,
    pub rationale: String,
    pub remediation: String,
    pub policy: String,
    /// Documented under `docs/rules/<id>.md` of this repository.
    pub documented: bool,
}

impl RuleDoc {
    /// The id SARIF gives to an unresolved fact (a note, not a finding).
    pub const UNRESOLVED: &'static str = "unresolved";

    /// The pseudo-rule of unresolved facts, for SARIF's rule list.
    pub fn unresolved() -> RuleDoc {
        RuleDoc {
            id: Self::UNRESOLVED.into(),
            severity: Severity::Info,
            description: "A fact a rule reads is known only at deploy time (a variable or parameter without a value, a deploy-time expression, a module that is not followed), so no rule judged it.".into(),
            rationale: "A value computeguard cannot see is reported as unknown, never guessed: a size passed in at deploy time could be any size.".into(),
            remediation: "Give the value in the checked files (a default, a tfvars file, `--var-file`), or accept the blind spot; `--fail-on-unresolved` makes CI fail on it.".into(),
            policy: "computeguard".into(),
            documented: true,
        }
    }

    /// The rule reported for an incomplete inline suppression.
    pub fn missing_reason() -> RuleDoc {
        RuleDoc {
            id: crate::suppress::MISSING_REASON_RULE.into(),
            severity: Severity::Warning,
            description: crate::suppress::MISSING_REASON_DESCRIPTION.into(),
            rationale: "A suppression that does not say why cannot be reviewed, and one that names no rule would silence everything; computeguard ignores it and says so.".into(),
            remediation: crate::suppress::MISSING_REASON_REMEDIATION.into(),
            policy: "computeguard".into(),
            documented: true,
        }
    }
}

/// A file that could not be checked, or a policy that failed on it.
#[derive(Clone, Debug, Serialize)]
pub struct FileError {
    pub file: String,
    pub line: u32,
    pub message: String,
}

/// Why something was skipped, which decides whether `--fail-on-skipped` fails on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkipKind {
    /// Input computeguard could not judge: an unrendered template, a document that is not a
    /// mapping, a link that leads nowhere or in a loop, a file that is not a regular file, a
    /// file named on the command line that computeguard does not read. A blind spot:
    /// always listed, and `--fail-on-skipped` fails on it.
    Unchecked,
    /// Read and evaluated by every policy; no compute resource recognised (a ConfigMap, a
    /// rule pack).
    NoResources,
    /// Terraform variable values, applied when the `.tf` files beside them are checked.
    Variables,
    /// A file of a Terraform module folder that a configuration in the same scan calls:
    /// checked through that call, with its arguments bound (alone, its variables would
    /// all be unresolved).
    Module,
    /// Found while walking a directory, of a type computeguard does not read (README.md).
    OtherFile,
}

/// A file (or, with `line`, a document of a file) that was not checked, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub file: String,
    /// The document's first line, when one document of a checked file was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub kind: SkipKind,
    pub reason: String,
}

impl Skipped {
    /// A whole file.
    pub fn file(file: impl Into<String>, kind: SkipKind, reason: impl Into<String>) -> Skipped {
        Skipped {
            file: file.into(),
            line: None,
            kind,
            reason: reason.into(),
        }
    }

    /// `file` or `file:line`.
    pub fn place(&self) -> String {
        match self.line {
            Some(l) => format!("{}:{l}", self.file),
            None => self.file.clone(),
        }
    }
}

/// A fact a rule reads that the file leaves to deploy time: a Terraform variable with no
/// value in the folder, an ARM/Bicep parameter without a default, an expression such as
/// `resourceGroup().location`, or a module computeguard cannot follow. The model field stays
/// unknown, so no rule judged it: a blind spot, listed in every format, and
/// `--fail-on-unresolved` fails on it.
#[derive(Clone, Debug, Serialize)]
pub struct Unresolved {
    pub file: String,
    pub line: u32,
    pub resource: ResourceRef,
    /// The resource as messages name it (`azurerm_kubernetes_cluster_node_pool gpu`).
    pub display: String,
    /// The compute-model field (`sku`, `region`, `gpuCount`, ...), or `module` for a module
    /// that was not followed.
    pub field: String,
    /// What the file writes instead of a value (`${var.gpu_vm_size}`,
    /// `[parameters('vmSize')]`, a module's source).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// JSON pointer of the expression in the document.
    pub path: String,
}

impl Unresolved {
    /// One sentence for humans.
    pub fn message(&self) -> String {
        let what = &self.display;
        match (self.field.as_str(), &self.expression) {
            ("module", Some(source)) => format!(
                "{what}: its source `{source}` is not a local folder, so its resources are not checked (computeguard follows `./` and `../` modules)"
            ),
            (field, Some(e)) => format!(
                "{what}: `{field}` is `{e}`, known only at deploy time, so no rule judged it"
            ),
            (field, None) => {
                format!("{what}: `{field}` is known only at deploy time, so no rule judged it")
            }
        }
    }
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
    /// Findings matched by the `--baseline` file.
    pub baselined: usize,
    #[serde(rename = "failedFiles")]
    pub failed_files: usize,
    #[serde(rename = "skippedFiles")]
    pub skipped_files: usize,
    /// Entries of `skipped` (files and documents) of kind `unchecked`: blind spots.
    pub unchecked: usize,
    /// Facts left to deploy time (`unresolved`): blind spots inside checked resources.
    pub unresolved: usize,
    /// The configuration file used; `None`: none was found and the defaults applied.
    #[serde(rename = "configFile")]
    pub config_file: Option<String>,
    #[serde(rename = "asOf")]
    pub as_of: String,
    /// Findings per rule, subscription and resource group, when some finding is on an Azure
    /// resource read from an export (its resource name is the Azure resource id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estate: Option<Estate>,
}

/// What a platform team reads first about an Azure estate: where the findings are.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Estate {
    /// Every finding, by rule id.
    pub by_rule: std::collections::BTreeMap<String, usize>,
    /// Findings on Azure resources, by subscription id.
    pub by_subscription: std::collections::BTreeMap<String, usize>,
    /// Findings on Azure resources, by `<subscription>/<resource group>` (lower case).
    pub by_resource_group: std::collections::BTreeMap<String, usize>,
}

impl Estate {
    fn of(findings: &[Finding]) -> Option<Estate> {
        let mut e = Estate::default();
        let mut azure = false;
        for f in findings {
            *e.by_rule.entry(f.rule.clone()).or_default() += 1;
            if let Some(id) = f.azure_id() {
                azure = true;
                let (sub, rg) = computeguard_policy_core::read::export::scope_of(id);
                let sub = sub.unwrap_or("(none)").to_ascii_lowercase();
                if let Some(rg) = rg {
                    *e.by_resource_group
                        .entry(format!("{sub}/{}", rg.to_ascii_lowercase()))
                        .or_default() += 1;
                }
                *e.by_subscription.entry(sub).or_default() += 1;
            }
        }
        azure.then_some(e)
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub errors: Vec<FileError>,
    /// Facts of checked resources that stayed unresolved.
    pub unresolved: Vec<Unresolved>,
    pub summary: Summary,
    /// Skipped files (and unchecked documents of checked files), with the reason.
    #[serde(skip)]
    pub skipped: Vec<Skipped>,
    /// Documents skipped inside checked files (`file:line`, why); listed by `--verbose`.
    #[serde(skip)]
    pub skipped_documents: Vec<(String, String)>,
    /// Findings silenced by an inline comment, `ignore:` or the baseline.
    #[serde(skip)]
    pub suppressed: Vec<Finding>,
    /// Every rule of the loaded policies (SARIF lists them).
    #[serde(skip)]
    pub rules: Vec<RuleDoc>,
    /// Files that were read (JUnit lists the clean ones as passing test cases).
    #[serde(skip)]
    pub checked: Vec<String>,
}

/// Output format of `check`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Github,
    Sarif,
    Junit,
    /// Kubernetes `PolicyReport` / `ClusterPolicyReport` objects (`wgpolicyk8s.io/v1alpha2`)
    /// in a `v1` `List`, for `kubectl apply -f -`.
    Policyreport,
}

/// How to render a report.
#[derive(Clone, Copy, Debug)]
pub struct RenderOptions {
    /// ANSI colours (text only).
    pub color: bool,
    /// List skipped files (text only).
    pub verbose: bool,
    /// Include suppressed findings, marked as such.
    pub show_suppressed: bool,
    /// The `--fail-on` threshold: JUnit reports findings below it as passing cases.
    pub fail_on: Severity,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            color: false,
            verbose: false,
            show_suppressed: false,
            fail_on: Severity::Error,
        }
    }
}

#[derive(Serialize)]
struct JsonView<'a> {
    findings: Vec<&'a Finding>,
    errors: &'a [FileError],
    unresolved: &'a [Unresolved],
    skipped: &'a [Skipped],
    summary: &'a Summary,
}

fn finding_order(a: &Finding, b: &Finding) -> std::cmp::Ordering {
    (a.file.as_str(), a.line, a.column, a.rule.as_str()).cmp(&(
        b.file.as_str(),
        b.line,
        b.column,
        b.rule.as_str(),
    ))
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
        self.findings.sort_by(finding_order);
        self.suppressed.sort_by(finding_order);
        self.checked.sort();
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
        self.skipped
            .sort_by(|a, b| (a.file.as_str(), a.line).cmp(&(b.file.as_str(), b.line)));
        s.skipped_files = self.skipped.iter().filter(|x| x.line.is_none()).count();
        self.unresolved.sort_by(|a, b| {
            (a.file.as_str(), a.line, a.field.as_str()).cmp(&(
                b.file.as_str(),
                b.line,
                b.field.as_str(),
            ))
        });
        self.unresolved.dedup_by(|a, b| {
            a.file == b.file && a.path == b.path && a.resource.name == b.resource.name
        });
        s.unresolved = self.unresolved.len();
        s.unchecked = self
            .skipped
            .iter()
            .filter(|x| x.kind == SkipKind::Unchecked)
            .count();
        s.suppressed = self
            .suppressed
            .iter()
            .filter(|f| {
                f.suppression
                    .as_ref()
                    .is_some_and(|x| x.kind != SuppressionKind::Baseline)
            })
            .count();
        s.baselined = self.suppressed.len() - s.suppressed;
        s.estate = Estate::of(&self.findings);
    }

    /// What could not be judged (kind `unchecked`), files and documents.
    pub fn unchecked(&self) -> impl Iterator<Item = &Skipped> {
        self.skipped
            .iter()
            .filter(|s| s.kind == SkipKind::Unchecked)
    }

    /// The findings to show: the counted ones, plus the suppressed ones if asked, in order.
    pub fn visible(&self, show_suppressed: bool) -> Vec<&Finding> {
        let mut v: Vec<&Finding> = self.findings.iter().collect();
        if show_suppressed {
            v.extend(self.suppressed.iter());
            v.sort_by(|a, b| finding_order(a, b));
        }
        v
    }

    pub fn render(
        &self,
        format: Format,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        match format {
            Format::Json => {
                let view = JsonView {
                    findings: self.visible(opts.show_suppressed),
                    errors: &self.errors,
                    unresolved: &self.unresolved,
                    skipped: &self.skipped,
                    summary: &self.summary,
                };
                write_json(&view, out)
            }
            Format::Github => self.render_github(opts, out),
            Format::Sarif => write_json(&sarif::log(self, opts), out),
            Format::Junit => junit::render(self, opts, out),
            Format::Policyreport => write_json(&policyreport::list(self, opts), out),
            Format::Text => self.render_text(&Style { on: opts.color }, opts, out),
        }
    }

    fn render_github(&self, opts: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
        for u in &self.unresolved {
            writeln!(
                out,
                "::notice file={},line={},title=computeguard unresolved::{}",
                esc_prop(&u.file),
                u.line.max(1),
                esc_data(&u.message())
            )?;
        }
        for f in self.visible(opts.show_suppressed) {
            let level = match (&f.suppression, f.severity) {
                (Some(_), _) => "notice",
                (None, Severity::Error) => "error",
                (None, Severity::Warning) => "warning",
                (None, Severity::Info) => "notice",
            };
            let mut title = format!("computeguard {}", f.rule);
            let mut text = format!("{} Fix: {}", f.message, f.remediation);
            if let Some(s) = &f.suppression {
                title.push_str(" (suppressed)");
                text = format!("{text} (suppressed: {})", s.reason);
            }
            let (title, text) = (clean(&title), clean(&text));
            let mut props = format!("file={}", esc_prop(&clean(&f.file)));
            if f.line > 0 {
                props.push_str(&format!(",line={},col={}", f.line, f.column.max(1)));
            }
            writeln!(
                out,
                "::{level} {props},title={}::{}",
                esc_prop(&title),
                esc_data(&text)
            )?;
        }
        for e in &self.errors {
            writeln!(
                out,
                "::error file={},line={},title=computeguard::{}",
                esc_prop(&clean(&e.file)),
                e.line.max(1),
                esc_data(&clean(&e.message))
            )?;
        }
        for s in self.unchecked() {
            writeln!(
                out,
                "::warning file={},line={},title=computeguard skipped::not checked: {}",
                esc_prop(&clean(&s.file)),
                s.line.unwrap_or(1),
                esc_data(&clean(&s.reason))
            )?;
        }
        Ok(())
    }

    fn render_text(
        &self,
        st: &Style,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        let verbose = opts.verbose;
        for f in self.visible(opts.show_suppressed) {
            let (code, label) = match f.severity {
                Severity::Error => ("1;31", "error"),
                Severity::Warning => ("1;33", "warning"),
                Severity::Info => ("1;36", "info"),
            };
            let (code, mark) = if f.suppressed {
                ("2", " (suppressed)")
            } else {
                (code, "")
            };
            writeln!(
                out,
                "{}{} {}",
                st.paint(code, &format!("{label}[{}]{mark}", clean(&f.rule))),
                st.paint("1", ":"),
                st.paint("1", &clean(&f.message))
            )?;
            writeln!(
                out,
                "  {} {}:{}:{}",
                st.paint("34", "-->"),
                clean(&f.file),
                f.line,
                f.column.max(1)
            )?;
            if let Some(id) = f.azure_id() {
                writeln!(out, "  {} resource: {}", st.paint("34", "="), clean(id))?;
            }
            if let Some(raw) = &f.source_line {
                let gutter = f.line.to_string();
                let pad = " ".repeat(gutter.len());
                let col = f.column.max(1) as usize - 1;
                // A long line (minified JSON, one REST response on one line) is cut around
                // the column, with an ellipsis where text is left out.
                let (head, tail, cut_tail) = excerpt(raw, col);
                // Escaped like the rest; the caret follows the escaped text.
                let (head, tail) = (clean_source(&head), clean_source(&tail));
                let src = format!("{head}{tail}{}", if cut_tail { "…" } else { "" });
                let width = tail.trim_end().chars().count().max(1);
                let lead: String = head
                    .chars()
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
            writeln!(
                out,
                "  {} fix: {}",
                st.paint("34", "="),
                clean(&f.remediation)
            )?;
            if let Some(s) = &f.suppression {
                let how = match s.kind {
                    SuppressionKind::Inline => "by an inline comment",
                    SuppressionKind::Config => "by the configuration",
                    SuppressionKind::Baseline => "by the baseline",
                };
                writeln!(
                    out,
                    "  {} suppressed {how}: {}",
                    st.paint("34", "="),
                    clean(&s.reason)
                )?;
            }
            writeln!(out)?;
        }
        for e in &self.errors {
            writeln!(
                out,
                "{}{} {}",
                st.paint("1;31", "error"),
                st.paint("1", ":"),
                st.paint("1", &clean(&e.message))
            )?;
            let file = clean(&e.file);
            if e.line > 0 {
                writeln!(out, "  {} {file}:{}", st.paint("34", "-->"), e.line)?;
            } else {
                writeln!(out, "  {} {file}", st.paint("34", "-->"))?;
            }
            writeln!(out)?;
        }
        // Blind spots are always listed; the rest of what was skipped with --verbose.
        for s in self.unchecked() {
            writeln!(
                out,
                "{}{} not checked: {}",
                st.paint("1;33", "skipped"),
                st.paint("1", ":"),
                clean(&s.reason)
            )?;
            writeln!(out, "  {} {}", st.paint("34", "-->"), clean(&s.place()))?;
            writeln!(out)?;
        }
        for u in &self.unresolved {
            writeln!(
                out,
                "{}{} {}",
                st.paint("1;33", "unresolved"),
                st.paint("1", ":"),
                clean(&u.message())
            )?;
            writeln!(
                out,
                "  {} {}:{}",
                st.paint("34", "-->"),
                clean(&u.file),
                u.line
            )?;
            writeln!(out)?;
        }
        if s_files_zero(self) {
            writeln!(
                out,
                "{}{} nothing was checked: the paths hold no file computeguard reads (Kubernetes, Azure ML, ARM, Bicep or Terraform)",
                st.paint("1;33", "warning"),
                st.paint("1", ":"),
            )?;
            writeln!(out)?;
        }
        if verbose {
            let others = self
                .skipped
                .iter()
                .filter(|s| s.kind != SkipKind::Unchecked)
                .map(|s| (s.place(), s.reason.clone()));
            for (file, why) in others.chain(self.skipped_documents.iter().cloned()) {
                writeln!(out, "skipped {}: {}", clean(&file), clean(&why))?;
            }
        }
        let s = &self.summary;
        if let Some(e) = &s.estate {
            let list = |m: &std::collections::BTreeMap<String, usize>| {
                let mut v: Vec<(&String, &usize)> = m.iter().collect();
                v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                v.iter()
                    .map(|(k, n)| format!("{} {n}", clean(k)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            for (title, counts) in [
                ("findings by rule:", &e.by_rule),
                (
                    "findings on Azure resources by subscription:",
                    &e.by_subscription,
                ),
                (
                    "findings on Azure resources by resource group:",
                    &e.by_resource_group,
                ),
            ] {
                writeln!(out, "{}", st.paint("1", title))?;
                writeln!(out, "  {}", list(counts))?;
            }
            writeln!(out)?;
        }
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
        if s.baselined > 0 {
            line.push_str(&format!("; {} in the baseline", s.baselined));
        }
        if s.failed_files > 0 {
            line.push_str(&format!(
                "; {} could not be checked",
                plural(s.failed_files, "file", "files")
            ));
        }
        if s.unchecked > 0 {
            line.push_str(&format!("; {} not checked (listed above)", s.unchecked));
        }
        if s.unresolved > 0 {
            line.push_str(&format!(
                "; {} unresolved (listed above)",
                plural(s.unresolved, "fact", "facts")
            ));
        }
        // The unchecked ones are listed above; the hint is for the others.
        let others = self
            .skipped
            .iter()
            .any(|x| x.kind != SkipKind::Unchecked && x.line.is_none());
        if s.skipped_files > 0 && !verbose && others {
            line.push_str(&format!(
                "; {} skipped (--verbose lists them)",
                plural(s.skipped_files, "file", "files")
            ));
        }
        line.push_str(&format!("; as of {}", s.as_of));
        match &s.config_file {
            Some(file) => line.push_str(&format!("; config {}", clean(file))),
            None => line.push_str("; no computeguard.yaml found, defaults apply"),
        }
        let code = if s.errors > 0 || s.failed_files > 0 {
            "1;31"
        } else if s.warnings > 0 || s.unchecked > 0 || s.unresolved > 0 || s.files == 0 {
            "1;33"
        } else {
            "1;32"
        };
        writeln!(out, "{} {line}", st.paint(code, "computeguard:"))
    }
}

/// Whether no file was read at all (an empty folder, a path with nothing computeguard
/// reads).
fn s_files_zero(report: &Report) -> bool {
    report.summary.files == 0
}

/// Longest source line shown whole under a finding, in characters.
const EXCERPT_MAX: usize = 160;
/// Characters kept before the finding's column in a cut line.
const EXCERPT_BEFORE: usize = 40;
/// Characters kept from the finding's column on in a cut line.
const EXCERPT_AFTER: usize = 80;

/// The part of `line` before `col` and the part from it on; a line longer than
/// [`EXCERPT_MAX`] keeps [`EXCERPT_BEFORE`] characters before the column (an ellipsis
/// in front when more were left out) and [`EXCERPT_AFTER`] from it on (the `bool`: text
/// after it was left out).
fn excerpt(line: &str, col: usize) -> (String, String, bool) {
    let chars: Vec<char> = line.chars().collect();
    let col = col.min(chars.len());
    if chars.len() <= EXCERPT_MAX {
        return (
            chars[..col].iter().collect(),
            chars[col..].iter().collect(),
            false,
        );
    }
    let start = col.saturating_sub(EXCERPT_BEFORE);
    let end = (col + EXCERPT_AFTER).min(chars.len());
    let mut head: String = if start > 0 {
        "…".into()
    } else {
        String::new()
    };
    head.extend(&chars[start..col]);
    (head, chars[col..end].iter().collect(), end < chars.len())
}

fn write_json(value: &impl Serialize, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(|e| match e.io_error_kind() {
        Some(kind) => std::io::Error::from(kind),
        None => std::io::Error::other(e),
    })?;
    writeln!(out)
}

/// Text from a document, a policy or a file name, for a human format: control characters
/// escaped (`\n`, `\u{1b}`), so that nothing printed can move the cursor, set colours or
/// start a CI workflow command on a line of its own.
pub fn clean(s: &str) -> String {
    computeguard_engine::text::escape_control(s)
}

/// Like [`clean`] but line breaks are kept: for messages that are several lines by design
/// (a rule pack's compile diagnostic with its caret snippet).
/// A continuation line that would start with `::` or `##` (a GitHub or Azure Pipelines
/// command) is indented, so only the first line can start a line of the log.
pub fn clean_lines(s: &str) -> String {
    s.split('\n')
        .enumerate()
        .map(|(i, line)| {
            let line = clean(line);
            if i > 0 && (line.starts_with("::") || line.starts_with("##")) {
                format!("  {line}")
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A source line for the caret snippet: like [`clean`], but tabs stay tabs (they align the
/// caret).
fn clean_source(s: &str) -> String {
    s.split('\t').map(clean).collect::<Vec<_>>().join("\t")
}

fn esc_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn esc_prop(s: &str) -> String {
    esc_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::{EXCERPT_AFTER, EXCERPT_BEFORE, clean, clean_lines, clean_source, excerpt};

    #[test]
    fn a_long_line_is_cut_around_the_column_with_ellipses() {
        let line = format!(
            "{{\"a\":\"{}\",\"vmSize\":\"Standard_NC6\",\"b\":\"{}\"}}",
            "x".repeat(3000),
            "y".repeat(3000)
        );
        let col = line.find("\"vmSize\"").unwrap_or_default();
        let (head, tail, cut) = excerpt(&line, col);
        assert!(head.starts_with('…') && head.chars().count() == EXCERPT_BEFORE + 1);
        assert!(tail.starts_with("\"vmSize\":\"Standard_NC6\""), "{tail}");
        assert_eq!(tail.chars().count(), EXCERPT_AFTER);
        assert!(cut);
        let (head, tail, cut) = excerpt("size: Standard_NC6", 0);
        assert_eq!(
            (head.as_str(), tail.as_str(), cut),
            ("", "size: Standard_NC6", false)
        );
    }

    #[test]
    fn human_text_cannot_start_a_ci_command_or_an_escape_sequence() {
        assert_eq!(
            clean("gpu\n::error file=README.md::x\u{1b}[31m"),
            "gpu\\n::error file=README.md::x\\u{1b}[31m"
        );
        assert_eq!(clean_source("\tname: a\u{7}"), "\tname: a\\u{7}");
        assert_eq!(
            clean_lines(
                "error: bad\n  --> p.yaml:2\n::error file=x::y\n##vso[task.complete]\u{1b}"
            ),
            "error: bad\n  --> p.yaml:2\n  ::error file=x::y\n  ##vso[task.complete]\\u{1b}"
        );
    }
}
