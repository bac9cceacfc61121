//! JUnit XML for CI test reports: one `<testsuite>` per checked file, one
//! `<testcase>` per finding. Findings at or above `--fail-on` are `<failure>`s,
//! findings below it pass (their message in `<system-out>`), suppressed findings
//! are `<skipped>`, files that could not be checked are `<error>`s, a skipped file
//! (or unchecked document) is a `<skipped>` case with the reason, and a clean
//! file is one passing case, so the report counts every file checked.
//!
//! Blind spots are cases too, never a pass: each unresolved fact is a case in its
//! file's suite, a `<failure>` with `--fail-on-unresolved` (which makes the run exit 2)
//! and `<skipped>` without; a file or document that could not be checked is a
//! `<failure>` with `--fail-on-skipped`; and each rule that was not evaluated (no
//! `azure:` facts) is a `<skipped>` case of a suite named `computeguard`; each price or
//! count of the cost estimate that is not known (`azure.prices`) is a `<skipped>` case of a
//! suite named `computeguard cost`.

use super::{Finding, RenderOptions, Report, SkipKind};
use std::collections::BTreeMap;
use std::io::Write;

/// Escapes text for XML 1.0 attributes and content; characters XML cannot carry
/// (most C0 controls) become U+FFFD.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[derive(Default)]
struct Suite<'a> {
    findings: Vec<&'a Finding>,
    errors: Vec<&'a super::FileError>,
    skipped: Vec<&'a super::Skipped>,
    unresolved: Vec<&'a super::Unresolved>,
}

fn case_name(f: &Finding) -> String {
    let what = if f.resource.name.is_empty() {
        f.resource.kind.clone()
    } else {
        format!("{} {}", f.resource.kind, f.resource.name)
    };
    format!("{} at line {}: {}", f.rule, f.line, what.trim())
}

pub fn render(report: &Report, opts: &RenderOptions, out: &mut dyn Write) -> std::io::Result<()> {
    let mut suites: BTreeMap<&str, Suite> = BTreeMap::new();
    for file in &report.checked {
        suites.entry(file.as_str()).or_default();
    }
    for f in report.visible(opts.show_suppressed) {
        suites.entry(f.file.as_str()).or_default().findings.push(f);
    }
    for e in &report.errors {
        suites.entry(e.file.as_str()).or_default().errors.push(e);
    }
    for s in &report.skipped {
        suites.entry(s.file.as_str()).or_default().skipped.push(s);
    }
    for u in &report.unresolved {
        suites
            .entry(u.file.as_str())
            .or_default()
            .unresolved
            .push(u);
    }
    let mut body = String::new();
    let (mut tests, mut failures, mut errors, mut skipped) = (0, 0, 0, 0);
    for (file, suite) in &suites {
        let file_x = xml_escape(file);
        let mut cases = String::new();
        let (mut t, mut fl, mut er, mut sk) = (0, 0, 0, 0);
        for f in &suite.findings {
            t += 1;
            let attrs = format!(
                "classname=\"{file_x}\" name=\"{}\" file=\"{file_x}\" line=\"{}\"",
                xml_escape(&case_name(f)),
                f.line
            );
            let detail = format!(
                "{}[{}] {}\n  --> {}:{}:{}\n  = fix: {}",
                f.severity.as_str(),
                f.rule,
                f.message,
                f.file,
                f.line,
                f.column.max(1),
                f.remediation
            );
            if let Some(s) = &f.suppression {
                sk += 1;
                cases.push_str(&format!(
                    "    <testcase {attrs}>\n      <skipped message=\"{}\"/>\n      <system-out>{}</system-out>\n    </testcase>\n",
                    xml_escape(&format!("suppressed: {}", s.reason)),
                    xml_escape(&detail)
                ));
            } else if f.severity.at_least(opts.fail_on) {
                fl += 1;
                cases.push_str(&format!(
                    "    <testcase {attrs}>\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    </testcase>\n",
                    xml_escape(&f.rule),
                    xml_escape(&format!("{}: {}", f.severity.as_str(), f.message)),
                    xml_escape(&detail)
                ));
            } else {
                cases.push_str(&format!(
                    "    <testcase {attrs}>\n      <system-out>{}</system-out>\n    </testcase>\n",
                    xml_escape(&detail)
                ));
            }
        }
        for e in &suite.errors {
            t += 1;
            er += 1;
            cases.push_str(&format!(
                "    <testcase classname=\"{file_x}\" name=\"file could not be checked\" file=\"{file_x}\" line=\"{}\">\n      <error message=\"{}\">{}</error>\n    </testcase>\n",
                e.line,
                xml_escape(&e.message),
                xml_escape(&format!("{}:{}: {}", e.file, e.line, e.message))
            ));
        }
        for s in &suite.skipped {
            t += 1;
            let name = match s.line {
                Some(line) => format!("document at line {line} skipped"),
                None => "file skipped".to_string(),
            };
            let kind = match s.kind {
                SkipKind::Unchecked => "not checked",
                SkipKind::NoResources => "no compute resources",
                SkipKind::Variables => "variables",
                SkipKind::Module => "module checked through its callers",
                SkipKind::OtherFile => "not an input",
            };
            let message = xml_escape(&format!("{kind}: {}", s.reason));
            let attrs = format!(
                "classname=\"{file_x}\" name=\"{}\" file=\"{file_x}\" line=\"{}\"",
                xml_escape(&name),
                s.line.unwrap_or(0)
            );
            if s.kind == SkipKind::Unchecked && opts.fail_on_skipped {
                fl += 1;
                cases.push_str(&format!(
                    "    <testcase {attrs}>\n      <failure type=\"not-checked\" message=\"{message}\">{}</failure>\n    </testcase>\n",
                    xml_escape(&format!("{}: not checked, and --fail-on-skipped is set: {}", s.place(), s.reason))
                ));
            } else {
                sk += 1;
                cases.push_str(&format!(
                    "    <testcase {attrs}>\n      <skipped message=\"{message}\"/>\n    </testcase>\n"
                ));
            }
        }
        for u in &suite.unresolved {
            t += 1;
            let attrs = format!(
                "classname=\"{file_x}\" name=\"{}\" file=\"{file_x}\" line=\"{}\"",
                xml_escape(&format!(
                    "unresolved at line {}: {} {}",
                    u.line, u.display, u.field
                )),
                u.line
            );
            let message = xml_escape(&format!("unresolved: {}", u.message()));
            if opts.fail_on_unresolved {
                fl += 1;
                cases.push_str(&format!(
                    "    <testcase {attrs}>\n      <failure type=\"unresolved\" message=\"{message}\">{}</failure>\n    </testcase>\n",
                    xml_escape(&format!(
                        "{}:{}: {}\n  = --fail-on-unresolved is set: give the value in the checked files (a default, a var or parameter file) or drop the flag",
                        u.file,
                        u.line,
                        u.message()
                    ))
                ));
            } else {
                sk += 1;
                cases.push_str(&format!(
                    "    <testcase {attrs}>\n      <skipped message=\"{message}\"/>\n    </testcase>\n"
                ));
            }
        }
        if t == 0 {
            t = 1;
            cases.push_str(&format!(
                "    <testcase classname=\"{file_x}\" name=\"no findings\" file=\"{file_x}\"/>\n"
            ));
        }
        body.push_str(&format!(
            "  <testsuite name=\"{file_x}\" tests=\"{t}\" failures=\"{fl}\" errors=\"{er}\" skipped=\"{sk}\">\n{cases}  </testsuite>\n"
        ));
        tests += t;
        failures += fl;
        errors += er;
        skipped += sk;
    }
    if !report.not_evaluated.is_empty() {
        // Rules that ran on no resource: one skipped case each, so the CI summary shows them.
        let mut cases = String::new();
        for n in &report.not_evaluated {
            cases.push_str(&format!(
                "    <testcase classname=\"computeguard\" name=\"{} not evaluated\">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                xml_escape(&n.rule),
                xml_escape(&n.message)
            ));
        }
        let n = report.not_evaluated.len();
        body.push_str(&format!(
            "  <testsuite name=\"computeguard\" tests=\"{n}\" failures=\"0\" errors=\"0\" skipped=\"{n}\">\n{cases}  </testsuite>\n"
        ));
        tests += n;
        skipped += n;
    }
    if let Some(cost) = report.cost.as_ref().filter(|c| !c.unknown.is_empty()) {
        // Prices or counts that are not known (`azure.prices`): a skipped case each, never
        // a pass and never $0.
        let mut cases = String::new();
        for u in &cost.unknown {
            cases.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"cost unknown at line {}: {}\" file=\"{}\" line=\"{}\">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                xml_escape(&u.file),
                u.line,
                xml_escape(&u.resource),
                xml_escape(&u.file),
                u.line,
                xml_escape(&format!("cost unknown: {}", u.reason))
            ));
        }
        let n = cost.unknown.len();
        body.push_str(&format!(
            "  <testsuite name=\"computeguard cost\" tests=\"{n}\" failures=\"0\" errors=\"0\" skipped=\"{n}\">\n{cases}  </testsuite>\n"
        ));
        tests += n;
        skipped += n;
    }
    write!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"computeguard\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">\n{body}</testsuites>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            xml_escape("a<b & \"c\" 'd'\u{1}"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos;\u{FFFD}"
        );
    }
}
