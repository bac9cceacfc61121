//! `computeguard lsp`: the language server (host/lsp) with `check`'s scan as its
//! [`computeguard_lsp::Checker`].
//!
//! The protocol lives in `computeguard-lsp`; what a diagnostic says is decided here, by
//! the same steps `check` takes for one path: the nearest `computeguard.yaml` (found upward
//! from the file's folder, as `check` run there finds it), `prepare` (policies, context,
//! var and parameter files, the change-wide facts) and [`scan::Scan::run`], with the
//! editor's buffer in place of the file's text.

use crate::config::Config;
use crate::prepare::{PrepareArgs, Prepared, prepare};
use crate::report::{Report, Severity};
use crate::scan;
use computeguard_lsp::{Checked, Edit, Finding, Fix, Note, Problem};
use computeguard_policy_core::catalog;
use std::path::{Path, PathBuf};

/// `check`'s scan, one file at a time, for the language server.
#[derive(Default)]
pub struct Backend {
    /// `--as-of` for every check (tests pin it); default: the configuration's, else today.
    pub as_of: Option<String>,
}

impl Backend {
    /// Serves the Language Server Protocol on standard input and output until the client
    /// exits.
    pub fn serve_stdio(self) -> anyhow::Result<()> {
        let (connection, io) = computeguard_lsp::lsp_server::Connection::stdio();
        computeguard_lsp::run(connection, self)?;
        io.join()?;
        Ok(())
    }
}

/// `file:LINE:` at the start of `message`, for an error that names where it is.
fn located(message: &str) -> Option<(PathBuf, u32)> {
    // Paths may hold `:` on other systems; here the first `:N:` after an existing file.
    let mut from = 0;
    while let Some(i) = message.get(from..)?.find(':') {
        let at = from + i;
        let file = message.get(..at)?.trim_start_matches("error: ");
        let rest = message.get(at + 1..)?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && Path::new(file).is_file() {
            return Some((PathBuf::from(file), digits.parse().ok()?));
        }
        from = at + 1;
    }
    None
}

/// The fix of `min-nodes-zero` where the finding's line writes the minimum as a number
/// (`min_instances: 1`, `min_count = 2`, `"minCount": 1`): that number becomes 0. A
/// variable or expression there (`var.min_nodes`) gets no fix: the value is elsewhere.
fn zero_fix(text: &str, line: u32) -> Option<Fix> {
    let l = text.lines().nth(line.checked_sub(1)? as usize)?;
    let sep = l.find([':', '='])?;
    let key = l.get(..sep)?.trim().trim_matches('"');
    let rest = l.get(sep + 1..)?;
    let value = rest.trim_start();
    let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
    let after = value.get(digits.len()..)?.trim();
    if digits.is_empty() || digits.chars().all(|c| c == '0') || !(after.is_empty() || after == ",")
    {
        return None;
    }
    let start = l.get(..l.len() - value.len())?.chars().count() as u32 + 1;
    Some(Fix {
        rule: "min-nodes-zero".into(),
        line,
        title: format!("Set `{key}` to 0 (no idle GPU nodes)"),
        edits: vec![Edit {
            line,
            start,
            end: start + digits.len() as u32,
            new_text: "0".into(),
        }],
    })
}

/// What stopped `document` from being checked, on the file the error names (the
/// configuration, a context file), else on `document` itself.
fn problem(document: &Path, e: &anyhow::Error) -> Checked {
    let message = format!("{e:#}");
    let (file, line) = located(&message).unwrap_or_else(|| (document.to_path_buf(), 0));
    Checked {
        problem: Some(Problem {
            file,
            line,
            message,
        }),
        ..Checked::default()
    }
}

impl Backend {
    /// What `check PATH` prepares and reports, with `text` as the content of `path`.
    fn report(
        &self,
        path: &Path,
        text: &str,
        config: Option<&PathBuf>,
    ) -> anyhow::Result<(Prepared, Report)> {
        let paths = [path.to_path_buf()];
        let mut prepared = prepare(&PrepareArgs {
            paths: &paths,
            stdin_filename: None,
            config,
            policies: &[],
            as_of: self.as_of.as_deref(),
            var_files: &[],
            param_files: &[],
            memory_limit_mib: crate::DEFAULT_MEMORY_LIMIT_MIB,
            max_file_mib: scan::DEFAULT_MAX_FILE_MIB,
        })?;
        for input in prepared.files.iter_mut().filter(|i| i.path == path) {
            input.text = Some(text.to_string());
        }
        let report = crate::commands::check::first_report(&prepared);
        Ok((prepared, report))
    }
}

impl computeguard_lsp::Checker for Backend {
    fn open_documents(&mut self, documents: &[(&Path, &str)]) {
        crate::scan::open::set(
            documents
                .iter()
                .map(|(path, text)| (path.to_path_buf(), (*text).to_string())),
        );
    }

    fn check(&mut self, path: &Path, text: &str) -> Checked {
        let config = path.parent().and_then(Config::discover);
        if let Some(c) = &config
            && let Err(e) = Config::load(c)
        {
            return problem(path, &e.into());
        }
        let report = match self.report(path, text, config.as_ref()) {
            Ok((_, r)) => r,
            Err(e) => return problem(path, &e),
        };
        let name = path.display().to_string();
        let mut findings: Vec<Finding> = report
            .findings
            .iter()
            .filter(|f| f.file == name)
            .map(|f| Finding {
                rule: f.rule.clone(),
                severity: match f.severity {
                    Severity::Error => computeguard_lsp::Severity::Error,
                    Severity::Warning => computeguard_lsp::Severity::Warning,
                    _ => computeguard_lsp::Severity::Info,
                },
                message: f.message.clone(),
                line: f.line,
                column: f.column,
                remediation: f.remediation.clone(),
                help_uri: report
                    .rules
                    .iter()
                    .any(|r| r.id == f.rule && r.documented)
                    .then(|| crate::report::sarif::help_uri(&f.rule)),
                fix: (f.rule == "min-nodes-zero")
                    .then(|| zero_fix(text, f.line))
                    .flatten(),
            })
            .collect();
        // A file that cannot be read (a YAML error while typing) is an error where it is.
        findings.extend(
            report
                .errors
                .iter()
                .filter(|e| e.file == name)
                .map(|e| Finding {
                    rule: "invalid-input".into(),
                    severity: computeguard_lsp::Severity::Error,
                    message: e.message.clone(),
                    line: e.line.max(1),
                    column: 1,
                    remediation: String::new(),
                    help_uri: None,
                    fix: None,
                }),
        );
        let unresolved = report
            .unresolved
            .iter()
            .filter(|u| u.file == name)
            .map(|u| Note {
                line: u.line,
                message: u.message(),
            })
            .collect();
        let comment = crate::suppress::comment_markers(path)
            .first()
            .map(|m| (*m).to_string());
        Checked {
            findings,
            unresolved,
            problem: None,
            comment,
        }
    }

    /// `plan`'s best alternative for each finding it clears, where its edits are all in
    /// this file (a size, a region), as `check --suggest` names it.
    fn fixes(&mut self, path: &Path, text: &str) -> Vec<Fix> {
        let config = path.parent().and_then(Config::discover);
        let Ok((mut prepared, report)) = self.report(path, text, config.as_ref()) else {
            return Vec::new();
        };
        let name = path.display().to_string();
        crate::plan::best_alternatives(&mut prepared, &report)
            .into_iter()
            .filter_map(|(i, alt)| {
                let f = report.findings.get(i).filter(|f| f.file == name)?;
                let edits = alt
                    .edits
                    .iter()
                    .map(|e| {
                        if e.file.is_some() {
                            return None;
                        }
                        let line = text.lines().nth(e.line.checked_sub(1)? as usize)?;
                        let at = line.find(&e.from)?;
                        let start = line.get(..at)?.chars().count() as u32 + 1;
                        Some(Edit {
                            line: e.line,
                            start,
                            end: start + e.from.chars().count() as u32,
                            new_text: e.to.clone(),
                        })
                    })
                    .collect::<Option<Vec<Edit>>>()
                    .filter(|e| !e.is_empty())?;
                let target = match &alt.region {
                    Some(region) => format!("{} in {region}", alt.size),
                    None => alt.size.clone(),
                };
                Some(Fix {
                    rule: f.rule.clone(),
                    line: f.line,
                    title: format!(
                        "Move to {target} (computeguard plan: clears {})",
                        alt.clears.join(", ")
                    ),
                    edits,
                })
            })
            .collect()
    }

    fn hover(&mut self, _path: &Path, word: &str) -> Option<String> {
        hover(
            word,
            self.as_of.clone().unwrap_or_else(crate::today).as_str(),
        )
    }
}

/// What the catalog knows of `word`, as Markdown: a VM size (`catalog show` in short), a
/// KAITO preset, or a CUDA image (the architectures its CUDA version runs on).
pub fn hover(word: &str, as_of: &str) -> Option<String> {
    size_hover(word, as_of)
        .or_else(|| preset_hover(word))
        .or_else(|| image_hover(word))
}

fn preset_hover(word: &str) -> Option<String> {
    let p = catalog::kaito::preset(word)?;
    let mut out = format!(
        "**KAITO preset {}** ({})\n\n",
        p.name,
        catalog::kaito::version()
    );
    if let Some(m) = &p.model {
        out.push_str(&format!("- model: {m}\n"));
    }
    if p.deprecated {
        out.push_str("- deprecated (KAITO refuses it)\n");
    }
    for (mode, need) in [("inference", &p.inference), ("tuning", &p.tuning)] {
        let Some(n) = need else { continue };
        let mut parts = Vec::new();
        if let Some(g) = n.gpus {
            parts.push(format!("{g} GPU(s)"));
        }
        if let Some(m) = &n.total_gpu_memory {
            parts.push(format!("{m} of GPU memory in all"));
        }
        if let Some(m) = &n.per_gpu_memory {
            parts.push(format!("{m} per GPU"));
        }
        out.push_str(&format!("- {mode}: {}\n", parts.join(", ")));
    }
    out.push_str(&format!("\n`computeguard catalog show {}`", p.name));
    Some(out)
}

fn image_hover(word: &str) -> Option<String> {
    let cuda = computeguard_policy_core::cuda::cuda_of_image(word)?;
    let mut yes: Vec<String> = Vec::new();
    let mut no: Vec<String> = Vec::new();
    for (_, f) in catalog::skus() {
        let (Some(cc), Some(arch)) = (f.compute_capability, f.architecture) else {
            continue;
        };
        let label = format!("{arch} ({cc})");
        let list = match catalog::cuda_supported(cc, &cuda) {
            Some(true) => &mut yes,
            Some(false) => &mut no,
            None => continue,
        };
        if !list.contains(&label) {
            list.push(label);
        }
    }
    yes.sort();
    no.sort();
    Some(format!(
        "**CUDA {cuda}** (from the image tag)\n\n- runs on: {}\n- not on: {}\n",
        if yes.is_empty() {
            "-".into()
        } else {
            yes.join(", ")
        },
        if no.is_empty() {
            "-".into()
        } else {
            no.join(", ")
        },
    ))
}

fn size_hover(word: &str, as_of: &str) -> Option<String> {
    let f = catalog::sku(word).filter(|_| catalog::sku_well_formed(word))?;
    let mut out = format!("**{}**", f.name);
    if let Some(family) = f.family {
        out.push_str(&format!(" ({family})"));
    }
    out.push_str("\n\n");
    match (f.gpu_model, f.gpu_count) {
        (model, Some(count)) if !model.is_empty() => {
            out.push_str(&format!("- GPU: {count} × {model}\n"));
        }
        _ => out.push_str("- GPU: none\n"),
    }
    if let Some(cc) = f.compute_capability {
        let arch = catalog::architecture(cc);
        out.push_str(&format!(
            "- architecture: {} (compute capability {cc})\n",
            f.architecture.unwrap_or("?")
        ));
        if let Some(a) = arch {
            out.push_str(&format!(
                "- CUDA: {} to {}\n",
                a.first_cuda.unwrap_or("?"),
                a.last_cuda.unwrap_or("current")
            ));
        }
    }
    out.push_str(&format!(
        "- InfiniBand: {}\n",
        if f.infiniband { "yes" } else { "no" }
    ));
    let status = catalog::status_at(f, as_of);
    match f.retirement_date {
        Some(date) => out.push_str(&format!("- status: {status} (retirement {date})\n")),
        None => out.push_str(&format!("- status: {status}\n")),
    }
    out.push_str(&format!(
        "\n`computeguard catalog show {}` (catalog as of {})",
        f.name,
        catalog::DATA_DATE
    ));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::zero_fix;

    #[test]
    fn zero_fix_replaces_a_written_minimum_only() {
        let tf = "pool {\n  min_count    = 2\n}\n";
        let fix = zero_fix(tf, 2).map(|f| f.edits);
        assert_eq!(
            fix.as_deref()
                .map(|e| (e[0].start, e[0].end, e[0].new_text.as_str())),
            Some((18, 19, "0"))
        );
        assert_eq!(
            zero_fix("  \"minCount\": 3,\n", 1)
                .map(|f| f.title)
                .as_deref(),
            Some("Set `minCount` to 0 (no idle GPU nodes)")
        );
        assert!(zero_fix("min_node_count = var.min_nodes\n", 1).is_none());
        assert!(zero_fix("min_instances: 0\n", 1).is_none());
    }
}
