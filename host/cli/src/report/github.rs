//! The `github` renderer: workflow commands that GitHub Actions shows as annotations on
//! the pull request.

use super::escape::{clean, esc_data, esc_prop};
use super::{RenderOptions, Report, Severity};
use std::io::Write;

impl Report {
    pub(super) fn render_github(
        &self,
        opts: &RenderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
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
        // What the change costs (`azure.prices`): a notice on the run, and one on each
        // resource whose price or count is unknown (never taken as $0).
        if let Some(cost) = &self.cost {
            writeln!(
                out,
                "::notice title=computeguard cost::{}",
                esc_data(&clean(
                    &crate::cost::totals_line(cost).replace(" (listed above)", "")
                ))
            )?;
            for u in &cost.unknown {
                writeln!(
                    out,
                    "::notice file={},line={},title=computeguard cost unknown::{}",
                    esc_prop(&clean(&u.file)),
                    u.line.max(1),
                    esc_data(&clean(&format!("{}: {}", u.resource, u.reason)))
                )?;
            }
        }
        if let Some(diff) = &self.cost_diff {
            writeln!(
                out,
                "::notice title=computeguard cost against the base::{}",
                esc_data(&clean(&diff.summary()))
            )?;
        }
        // Rules that ran on no resource: a notice on the run, with no file.
        for n in &self.not_evaluated {
            writeln!(
                out,
                "::notice title={}::{}",
                esc_prop(&clean(&format!("computeguard {} not evaluated", n.rule))),
                esc_data(&clean(&n.message))
            )?;
        }
        Ok(())
    }
}
