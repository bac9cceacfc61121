//! The text renderer: findings with their source line and caret, errors, what was
//! not checked or left unresolved, and the summary line people read.

use super::escape::{clean, clean_source};
use super::{RenderOptions, Report, Severity, SkipKind, SuppressionKind};
use std::io::Write;

pub(super) struct Style {
    pub(super) on: bool,
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
    pub(super) fn render_text(
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
        for u in self.cost.iter().flat_map(|c| &c.unknown) {
            writeln!(
                out,
                "{}{} {}: {}",
                st.paint("1;33", "cost unknown"),
                st.paint("1", ":"),
                clean(&u.resource),
                clean(&u.reason)
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
        // No file was read at all: an empty folder, a path with nothing computeguard reads.
        if self.summary.files == 0 {
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
            "{}, {}, {} in {} read ({}, {})",
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
            // Files and documents apart: "1 not checked" alone does not say of what.
            let files = self.unchecked().filter(|x| x.line.is_none()).count();
            let documents = s.unchecked - files;
            let what = match (files, documents) {
                (f, 0) => plural(f, "file", "files"),
                (0, d) => plural(d, "document", "documents"),
                (f, d) => format!(
                    "{} and {}",
                    plural(f, "file", "files"),
                    plural(d, "document", "documents")
                ),
            };
            line.push_str(&format!("; {what} not checked (listed above)"));
        }
        if s.unresolved > 0 {
            line.push_str(&format!(
                "; {} unresolved (listed above)",
                plural(s.unresolved, "fact", "facts")
            ));
        }
        // The other skipped files by why, so that no count reads as a share of another;
        // parameter files and modules named by what they are (Terraform or Bicep/ARM).
        let count = |kind: SkipKind, terraform: Option<bool>| {
            self.skipped
                .iter()
                .filter(|x| {
                    x.kind == kind
                        && x.line.is_none()
                        && terraform.is_none_or(|t| is_terraform(&x.file) == t)
                })
                .count()
        };
        let parts: Vec<String> = [
            (SkipKind::NoResources, None, "with no compute resources"),
            (
                SkipKind::Variables,
                Some(true),
                "of Terraform variables (applied to their folder)",
            ),
            (
                SkipKind::Variables,
                Some(false),
                "of Bicep/ARM parameters (values for their templates)",
            ),
            (
                SkipKind::Module,
                Some(true),
                "of Terraform modules (checked through their callers)",
            ),
            (
                SkipKind::Module,
                Some(false),
                "of Bicep/ARM modules (checked through their callers)",
            ),
            (SkipKind::OtherFile, None, "computeguard does not read"),
        ]
        .into_iter()
        .filter_map(|(kind, terraform, what)| {
            let n = count(kind, terraform);
            (n > 0).then(|| format!("{} {what}", plural(n, "file", "files")))
        })
        .collect();
        if !parts.is_empty() {
            line.push_str(&format!(
                "; skipped ({}): {}",
                if verbose {
                    "listed above"
                } else {
                    "--verbose lists them"
                },
                parts.join(", ")
            ));
        }
        line.push_str(&format!("; as of {}", s.as_of));
        match &s.config_file {
            Some(file) => line.push_str(&format!("; config {}", clean(file))),
            None => line.push_str("; no computeguard.yaml found, defaults apply"),
        }
        if let Some(cost) = &self.cost {
            writeln!(
                out,
                "{} cost: {}",
                st.paint("1", "computeguard:"),
                clean(&crate::cost::totals_line(cost))
            )?;
        }
        if let Some(diff) = &self.cost_diff {
            writeln!(
                out,
                "{} cost against {}: {}{}",
                st.paint("1", "computeguard:"),
                clean(&diff.base_label()),
                clean(&diff.summary()),
                diff.unknown_note()
                    .map_or_else(String::new, |n| format!(" ({})", clean(&n)))
            )?;
        }
        let code = if s.errors > 0 || s.failed_files > 0 {
            "1;31"
        } else if s.warnings > 0
            || s.unchecked > 0
            || s.unresolved > 0
            || s.files == 0
            || !self.not_evaluated.is_empty()
        {
            "1;33"
        } else {
            "1;32"
        };
        writeln!(out, "{} {line}", st.paint(code, "computeguard:"))
    }
}

/// Whether `file` is a Terraform file (`.tf`, `.tfvars`, their `.json` forms), rather than
/// a Bicep or ARM one (`.bicep`, `.bicepparam`, `.json`).
fn is_terraform(file: &str) -> bool {
    let f = file.to_ascii_lowercase();
    [".tf", ".tfvars", ".tf.json", ".tfvars.json"]
        .iter()
        .any(|e| f.ends_with(e))
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
pub(super) fn excerpt(line: &str, col: usize) -> (String, String, bool) {
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

#[cfg(test)]
mod tests {
    use super::{EXCERPT_AFTER, EXCERPT_BEFORE, excerpt};

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
}
