//! The report model (findings, errors, what was skipped or left unresolved, the summary)
//! and the choice of renderer. Each renderer has its own file in `report/`: `text`
//! (people), `github` (workflow annotations), `sarif` (code scanning), `junit` (CI test
//! reports), `policyreport` (Kubernetes PolicyReport objects) and `html` (one
//! self-contained page with charts and a filterable table); `json` (the contract in
//! docs/configuration.md, "Output formats") is the model serialised. `escape` keeps
//! untrusted text from driving a terminal or a CI runner; `fingerprint` names a finding
//! for baselines and SARIF.

mod escape;
pub mod fingerprint;
mod github;
mod html;
mod junit;
mod markdown;
mod policyreport;
pub(crate) mod sarif;
mod text;

use serde::{Deserialize, Serialize};
use std::io::Write;

pub use escape::{clean, clean_lines};
use text::Style;

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
    /// Terraform variable values (applied when the `.tf` files beside them are checked) or
    /// Bicep/ARM parameter values (`.bicepparam`, `*.parameters.json`: applied to their
    /// template when it is checked, paired by name or given with `--param-file`).
    Variables,
    /// A file of a Terraform module folder, or a Bicep/ARM module file, that a file in the
    /// same scan calls: checked through that call, with its arguments bound (alone, its
    /// variables or parameters would all be unresolved).
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
            ("module-missing", Some(file)) => format!(
                "{what}: its file `{file}` does not exist, so its resources are not checked"
            ),
            ("registry-module", Some(source)) => format!(
                "{what}: `{source}` is a registry module or template spec, not read, so its resources are not checked (computeguard follows local `.bicep` and `.json` modules)"
            ),
            ("module-limit", Some(source)) => format!(
                "{what}: `{source}` is not followed: this file's modules already gave the most documents computeguard checks from one file, so its resources are not checked"
            ),
            ("module-depth", Some(source)) => format!(
                "{what}: `{source}` is nested deeper than computeguard follows module calls, so its resources are not checked"
            ),
            ("workspaceRegion", _) => format!(
                "{what}: its region is its Azure ML workspace's, which neither a workspace file of this change nor `azure.workspaceRegion` in computeguard.yaml states, so sku-available-in-region and quota-sufficient did not judge it"
            ),
            // An AKS cluster's pools given by an expression that was not evaluated into a
            // list of pools: none of its pools is judged.
            ("agentPoolProfiles", Some(e)) => format!(
                "{what}: its node pools (`agentPoolProfiles`) are `{e}`, which computeguard could not evaluate into a list of pools (a value known only at deploy time, a function it does not evaluate, or not a list), so none of them was judged"
            ),
            (field, Some(e)) => match computeguard_decode::variable_reference(e) {
                // A Terraform variable: say how to give it a value.
                Some(var) => format!(
                    "{what}: `{field}` is `{e}`, known only at deploy time, so no rule judged it; give `var.{var}` a value in a .tfvars file named on the command line or with `--var-file`, in terraform.tfvars or *.auto.tfvars beside the .tf files, or as its `default`"
                ),
                None => match arm_parameter(e) {
                    // An ARM/Bicep parameter: say how to give it a value.
                    Some(param) => format!(
                        "{what}: `{field}` is `{e}`, known only at deploy time, so no rule judged it; give parameter `{param}` a value in a parameters file (`X.parameters.json` or `X.bicepparam` beside the template, or one given with `--param-file`) or as its default"
                    ),
                    None => format!(
                        "{what}: `{field}` is `{e}`, known only at deploy time, so no rule judged it"
                    ),
                },
            },
            (field, None) => {
                format!("{what}: `{field}` is known only at deploy time, so no rule judged it")
            }
        }
    }
}

/// The parameter an ARM expression is exactly (`[parameters('vmSize')]` -> `vmSize`).
fn arm_parameter(expression: &str) -> Option<&str> {
    let name = expression
        .strip_prefix("[parameters('")?
        .strip_suffix("')]")?;
    (!name.is_empty() && !name.contains('\'')).then_some(name)
}

/// A rule that judges against the subscription's own facts (`azure:` in the configuration)
/// and had none to judge with: it ran on no resource. Said in every format, so that its
/// silence is never read as a pass.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct NotEvaluated {
    /// The rule id (`sku-available-in-region`, `quota-sufficient`).
    pub rule: String,
    /// The configuration key that would give it its facts (`azure.skus`).
    pub needs: String,
    /// One sentence for humans.
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
    /// Rules that were not evaluated for want of the subscription's facts.
    pub not_evaluated: Vec<NotEvaluated>,
    pub summary: Summary,
    /// What the change costs, when `azure.prices` names price pages (docs/cost.md).
    pub cost: Option<computeguard_cost::Estimate>,
    /// What it adds to the cost of its base (`--compare-to`).
    pub cost_diff: Option<computeguard_cost::Comparison>,
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
    /// One self-contained HTML page: summary, charts, a sortable, filterable table.
    Html,
    /// A pull-request comment body: the verdict, the change's cost, findings, blind spots.
    Markdown,
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
    /// `--fail-on-unresolved`: JUnit reports each unresolved fact as a failing case
    /// (else a skipped one).
    pub fail_on_unresolved: bool,
    /// `--fail-on-skipped`: JUnit reports what was not checked as failing cases (else
    /// skipped ones).
    pub fail_on_skipped: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            color: false,
            verbose: false,
            show_suppressed: false,
            fail_on: Severity::Error,
            fail_on_unresolved: false,
            fail_on_skipped: false,
        }
    }
}

#[derive(Serialize)]
struct JsonView<'a> {
    findings: Vec<&'a Finding>,
    errors: &'a [FileError],
    unresolved: &'a [Unresolved],
    #[serde(rename = "notEvaluated")]
    not_evaluated: &'a [NotEvaluated],
    skipped: &'a [Skipped],
    summary: &'a Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<&'a computeguard_cost::Estimate>,
    #[serde(rename = "costDiff", skip_serializing_if = "Option::is_none")]
    cost_diff: Option<&'a computeguard_cost::Comparison>,
}

fn finding_order(a: &Finding, b: &Finding) -> std::cmp::Ordering {
    (a.file.as_str(), a.line, a.column, a.rule.as_str()).cmp(&(
        b.file.as_str(),
        b.line,
        b.column,
        b.rule.as_str(),
    ))
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

    /// Whole files skipped for a reason other than "could not be checked" (those are
    /// counted in `summary.unchecked` and listed): read with nothing to judge, applied
    /// through other files, or not read.
    pub fn skipped_whole_files(&self) -> usize {
        self.skipped
            .iter()
            .filter(|x| x.kind != SkipKind::Unchecked && x.line.is_none())
            .count()
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
                    not_evaluated: &self.not_evaluated,
                    skipped: &self.skipped,
                    summary: &self.summary,
                    cost: self.cost.as_ref(),
                    cost_diff: self.cost_diff.as_ref(),
                };
                write_json(&view, out)
            }
            Format::Github => self.render_github(opts, out),
            Format::Sarif => write_json(&sarif::log(self, opts), out),
            Format::Junit => junit::render(self, opts, out),
            Format::Policyreport => write_json(&policyreport::list(self, opts), out),
            Format::Html => html::render(self, opts, out),
            Format::Markdown => markdown::render(self, opts, out),
            Format::Text => self.render_text(&Style { on: opts.color }, opts, out),
        }
    }
}

fn write_json(value: &impl Serialize, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(|e| match e.io_error_kind() {
        Some(kind) => std::io::Error::from(kind),
        None => std::io::Error::other(e),
    })?;
    writeln!(out)
}
