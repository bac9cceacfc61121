//! Input computeguard cannot judge never passes silently: numbers JSON cannot hold,
//! nesting deeper than a policy reads, documents that are not mappings, oversized
//! files, links, FIFOs and devices, standard input, and skipped files in every format.
//! Text from documents never reaches a terminal or CI log unescaped.

use crate::formats_out::{sarif_validator, schema_errors};
use crate::*;
use serde_json::Value;
use std::path::Path;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn write(dir: &Path, name: &str, text: &str) -> std::io::Result<()> {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, text)
}

/// `check --format FORMAT --as-of 2026-11-22 ARGS` in `dir`: (exit code, stdout, stderr).
fn check_in(dir: &Path, format: &str, args: &[&str]) -> std::io::Result<(i32, String, String)> {
    let mut all = vec!["check", "--format", format, "--as-of", "2026-11-22"];
    all.extend_from_slice(args);
    let out = run_in(dir, &all)?;
    Ok((code(&out), stdout(&out), stderr(&out)))
}

fn json_in(dir: &Path, args: &[&str]) -> Result<(i32, Value), Box<dyn std::error::Error>> {
    check_json_in(dir, args)
}

/// The one entry of `errors[]`, as (line, message).
fn only_error(report: &Value) -> (u64, String) {
    let errors = report["errors"].as_array().cloned().unwrap_or_default();
    assert_eq!(errors.len(), 1, "{report:#}");
    (
        errors[0]["line"].as_u64().unwrap_or(0),
        errors[0]["message"].as_str().unwrap_or("").to_string(),
    )
}

// ---- 1. numbers out of range, nesting, documents that are not mappings ----

#[test]
fn a_yaml_number_json_cannot_hold_is_an_input_error_at_its_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    // Before: `1e309` stayed the string "1e309" and the cluster was judged on the rest.
    write(
        dir.path(),
        "cluster.yml",
        &format!("{RETIRED_CLUSTER}tags:\n  budget: 1e309\n"),
    )?;
    let (code, report) = json_in(dir.path(), &["cluster.yml"])?;
    assert_eq!(code, 2, "{report:#}");
    let (line, message) = only_error(&report);
    assert_eq!(line, 8);
    assert!(
        message.contains("number out of range: expected a finite number"),
        "{message}"
    );
    // Quoted, it is text and the file is checked.
    write(
        dir.path(),
        "cluster.yml",
        &format!("{RETIRED_CLUSTER}tags:\n  budget: \"1e309\"\n"),
    )?;
    let (code, report) = json_in(dir.path(), &["cluster.yml"])?;
    assert_eq!(code, 1, "{report:#}");
    Ok(())
}

#[test]
fn a_json_number_json_cannot_hold_is_an_input_error_at_its_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    write(
        dir.path(),
        "cluster.json",
        "{\n  \"type\": \"amlcompute\",\n  \"name\": \"c\",\n  \"size\": \"Standard_NC6\",\n  \"min_instances\": 1e309\n}\n",
    )?;
    let (code, report) = json_in(dir.path(), &["cluster.json"])?;
    assert_eq!(code, 2, "{report:#}");
    let (line, message) = only_error(&report);
    assert_eq!(line, 5);
    assert!(message.contains("number out of range"), "{message}");
    Ok(())
}

/// A retired cluster whose `tags.deep` nests `levels` flow sequences (the cluster itself
/// is level 1, `tags` level 2).
fn nested_cluster(levels: usize) -> String {
    let inner = levels - 2;
    format!(
        "{RETIRED_CLUSTER}tags:\n  deep: {}{}\n",
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

#[test]
fn nesting_deeper_than_a_policy_reads_is_an_input_error_at_its_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    // Exactly as deep as the policies read: checked.
    write(dir.path(), "ok.yml", &nested_cluster(127))?;
    let (code, report) = json_in(dir.path(), &["ok.yml"])?;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["errors"], serde_json::json!([]), "{report:#}");
    // One level more: before, the policy failed on "document is not valid JSON".
    write(dir.path(), "deep.yml", &nested_cluster(128))?;
    let (code, report) = json_in(dir.path(), &["deep.yml"])?;
    assert_eq!(code, 2, "{report:#}");
    let (line, message) = only_error(&report);
    assert_eq!(line, 8);
    assert!(
        message.starts_with("nesting too deep at `/tags/deep/0/0/"),
        "{message}"
    );
    assert!(message.contains("at most 127 levels"), "{message}");
    Ok(())
}

#[test]
fn documents_that_are_not_mappings_are_listed_as_unchecked() -> TestResult {
    let dir = tempfile::tempdir()?;
    write(
        dir.path(),
        "stream.yaml",
        &format!("{RETIRED_CLUSTER}---\n- op: add\n  path: /spec\n---\njust text\n"),
    )?;
    write(dir.path(), "patch.yaml", "- op: add\n  path: /spec/x\n")?;
    let (code, report) = json_in(dir.path(), &["stream.yaml", "patch.yaml"])?;
    assert_eq!(code, 1, "{report:#}");
    let skipped = report["skipped"].as_array().cloned().unwrap_or_default();
    let got: Vec<(String, Option<u64>, String)> = skipped
        .iter()
        .map(|s| {
            (
                s["file"].as_str().unwrap_or("").to_string(),
                s["line"].as_u64(),
                s["kind"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("patch.yaml".into(), None, "unchecked".into()),
            ("stream.yaml".into(), Some(8), "unchecked".into()),
            ("stream.yaml".into(), Some(11), "unchecked".into()),
        ],
        "{report:#}"
    );
    assert!(
        skipped[1]["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("document 2 is a sequence, not a mapping"),
        "{report:#}"
    );
    assert!(
        skipped[2]["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("document 3 is a string, not a mapping"),
        "{report:#}"
    );
    assert_eq!(report["summary"]["skippedFiles"], 1);
    assert_eq!(report["summary"]["unchecked"], 3);
    // The text format lists them without --verbose.
    let (_, text, _) = check_in(dir.path(), "text", &["stream.yaml"])?;
    assert!(
        text.contains("skipped: not checked: document 2 is a sequence, not a mapping")
            && text.contains("  --> stream.yaml:8\n"),
        "{text}"
    );
    Ok(())
}

// ---- 2. control characters from documents are escaped for humans ----

const HOSTILE_NAME: &str = "\"gpu\\n::error file=README.md::owned\\e[31mred\\e[0m\"";

#[test]
fn text_and_github_escape_control_characters_from_documents() -> TestResult {
    let dir = tempfile::tempdir()?;
    write(
        dir.path(),
        "evil.yml",
        &RETIRED_CLUSTER.replace("name: gpu-cluster", &format!("name: {HOSTILE_NAME}")),
    )?;
    for format in ["text", "github"] {
        let (code, out, _) = check_in(dir.path(), format, &["evil.yml"])?;
        assert_eq!(code, 1, "{out}");
        assert!(out.contains("gpu\\n::error file=README.md::owned"), "{out}");
        assert!(
            !out.contains('\u{1b}'),
            "{format}: ESC reached the output: {out:?}"
        );
        assert!(
            !out.lines().any(|l| l.starts_with("::error file=README.md")),
            "{format}: a workflow command was injected: {out}"
        );
    }
    // Structured formats keep the text as it is, validly encoded.
    let (_, report) = json_in(dir.path(), &["evil.yml"])?;
    let message = report["findings"][0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("gpu\n::error file=README.md::owned\u{1b}[31m"),
        "{message}"
    );
    Ok(())
}

#[test]
fn a_source_line_with_control_characters_keeps_its_caret_aligned() -> TestResult {
    let dir = tempfile::tempdir()?;
    // A raw ESC in a comment on the reported line.
    write(
        dir.path(),
        "c.yml",
        &RETIRED_CLUSTER.replace("size: Standard_NC6", "size: Standard_NC6 # \u{1b}[2J wiped"),
    )?;
    let (_, out, _) = check_in(dir.path(), "text", &["c.yml"])?;
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(
        out.contains("4 | size: Standard_NC6 # \\u{1b}[2J wiped\n  | ^^^^^^^^"),
        "{out}"
    );
    Ok(())
}

// ---- 3. memory and size limits ----

/// A retired cluster with a `description` of `mib` MiB.
fn big_cluster(mib: usize) -> String {
    format!("{RETIRED_CLUSTER}description: {}\n", "x".repeat(mib << 20))
}

#[test]
fn a_document_too_large_for_the_sandbox_names_the_limit_and_the_flag() -> TestResult {
    let dir = tempfile::tempdir()?;
    write(dir.path(), "big.yml", &big_cluster(4))?;
    let (code, _, err) = check_in(dir.path(), "text", &["big.yml"])?;
    assert_eq!(code, 1, "fits in the default 64 MiB: {err}");
    let (code, report) = json_in(dir.path(), &["--memory-limit-mib", "8", "big.yml"])?;
    assert_eq!(code, 2, "{report:#}");
    let (_, message) = only_error(&report);
    assert!(
        message.contains("ran out of its 8 MiB sandbox memory (the document is 4.0 MiB as JSON); raise the memory limit with `--memory-limit-mib` or split the input"),
        "{message}"
    );
    assert!(!message.contains("trapped"), "{message}");
    // A small document fits in the same limit.
    write(dir.path(), "small.yml", RETIRED_CLUSTER)?;
    let (code, report) = json_in(dir.path(), &["--memory-limit-mib", "8", "small.yml"])?;
    assert_eq!(code, 1, "{report:#}");
    Ok(())
}

#[test]
fn a_file_over_the_size_limit_is_refused_before_it_is_read() -> TestResult {
    let dir = tempfile::tempdir()?;
    write(dir.path(), "big.yml", &big_cluster(2))?;
    let (code, report) = json_in(dir.path(), &["--max-file-mib", "1", "big.yml"])?;
    assert_eq!(code, 2, "{report:#}");
    let (_, message) = only_error(&report);
    assert_eq!(
        message,
        "file is 2.0 MiB, over the 1 MiB limit for one input; raise it with `--max-file-mib` or split the file"
    );
    Ok(())
}

// ---- 4. links, FIFOs, devices ----

#[cfg(unix)]
#[test]
fn walked_links_are_followed_and_loops_and_broken_links_are_listed() -> TestResult {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir()?;
    write(dir.path(), "shared/cluster.yml", RETIRED_CLUSTER)?;
    let infra = dir.path().join("infra");
    std::fs::create_dir(&infra)?;
    // Before: the linked manifest was silently ignored (0 files, exit 0).
    symlink("../shared/cluster.yml", infra.join("cluster.yml"))?;
    symlink("missing.yml", infra.join("broken.yml"))?;
    symlink(".", infra.join("loop"))?;
    let (code, report) = json_in(dir.path(), &["infra"])?;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        findings(&report),
        triples(&[
            ("sku-retired", "infra/cluster.yml", 4),
            ("min-nodes-zero", "infra/cluster.yml", 5),
        ])
    );
    let skipped: Vec<(String, String, String)> = report["skipped"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|s| {
            (
                s["file"].as_str().unwrap_or("").to_string(),
                s["kind"].as_str().unwrap_or("").to_string(),
                s["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(skipped.len(), 2, "{report:#}");
    assert_eq!(skipped[0].0, "infra/broken.yml");
    assert_eq!(skipped[0].1, "unchecked");
    assert_eq!(skipped[0].2, "symbolic link to a path that does not exist");
    assert_eq!(skipped[1].0, "infra/loop");
    assert_eq!(skipped[1].1, "unchecked");
    assert!(skipped[1].2.starts_with("symbolic link loop"), "{report:#}");
    // The same file reached directly and through a link is checked once.
    let (_, report) = json_in(dir.path(), &["shared", "infra/cluster.yml"])?;
    assert_eq!(report["summary"]["files"], 1, "{report:#}");
    Ok(())
}

#[cfg(unix)]
fn mkfifo(path: &Path) -> std::io::Result<()> {
    let status = std::process::Command::new("mkfifo").arg(path).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("mkfifo failed"))
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_or_device_named_on_the_command_line_is_an_input_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    mkfifo(&dir.path().join("pipe.yaml"))?;
    // Before: exit 0 with "0 files".
    let (code, out, err) = check_in(dir.path(), "text", &["pipe.yaml"])?;
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains("`pipe.yaml` is a FIFO (named pipe), not a regular file or a directory"),
        "{err}"
    );
    let (code, out, err) = check_in(dir.path(), "text", &["/dev/zero"])?;
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("`/dev/zero` is a character device"), "{err}");
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_broken_link_named_on_the_command_line_is_an_input_error() -> TestResult {
    let dir = tempfile::tempdir()?;
    std::os::unix::fs::symlink("missing.yml", dir.path().join("gone.yml"))?;
    let (code, _, err) = check_in(dir.path(), "text", &["gone.yml"])?;
    assert_eq!(code, 2);
    assert!(
        err.contains("path `gone.yml` is a symbolic link to a path that does not exist"),
        "{err}"
    );
    Ok(())
}

#[test]
fn explain_escapes_control_characters_from_a_policy() -> TestResult {
    let dir = tempfile::tempdir()?;
    let pack = std::fs::read_to_string(fixtures().join("packs/gpu-owner.yaml"))?.replace(
        "description: Every GPU cluster names an owning team.",
        "description: \"Every GPU cluster\\e]0;pwned\\a\\n::error file=README.md::x\"",
    );
    write(dir.path(), "pack.yaml", &pack)?;
    let out = run_in(
        dir.path(),
        &["explain", "gpu-owner-tag", "--policy", "pack.yaml"],
    )?;
    let text = stdout(&out);
    assert_eq!(code(&out), 0, "{text}{}", stderr(&out));
    assert!(
        text.contains("Every GPU cluster\\u{1b}]0;pwned\\u{7}\\n::error file=README.md::x"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    Ok(())
}

#[cfg(unix)]
#[test]
fn a_fifo_in_a_walked_directory_is_listed_and_not_opened() -> TestResult {
    let dir = tempfile::tempdir()?;
    write(dir.path(), "infra/cluster.yml", RETIRED_CLUSTER)?;
    mkfifo(&dir.path().join("infra/pipe.yaml"))?;
    let (code, report) = json_in(dir.path(), &["infra"])?;
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        report["skipped"],
        serde_json::json!([{
            "file": "infra/pipe.yaml",
            "kind": "unchecked",
            "reason": "a FIFO (named pipe), not a regular file: not read",
        }]),
        "{report:#}"
    );
    Ok(())
}

// ---- 5. standard input ----

fn check_stdin(
    args: &[&str],
    input: &str,
) -> Result<(i32, String, String), Box<dyn std::error::Error>> {
    check_piped(args, input.as_bytes())
}

#[test]
fn dash_reads_yaml_from_a_pipe_named_stdin() -> TestResult {
    // Before: "path `-` does not exist".
    let stream =
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\n{RETIRED_CLUSTER}");
    let (code, out, err) = check_stdin(&["--format", "json", "-"], &stream)?;
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out)?;
    assert_eq!(
        findings(&report),
        triples(&[
            ("sku-retired", "<stdin>", 9),
            ("min-nodes-zero", "<stdin>", 10)
        ])
    );
    assert_eq!(report["summary"]["files"], 1);
    assert_eq!(report["summary"]["documents"], 2);
    Ok(())
}

#[test]
fn stdin_filename_names_the_input_and_decides_its_format() -> TestResult {
    let (code, out, err) = check_stdin(
        &["--format", "json", "--stdin-filename", "infra/gpu.yml", "-"],
        RETIRED_CLUSTER,
    )?;
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out)?;
    assert_eq!(report["findings"][0]["file"], "infra/gpu.yml");
    // JSON is recognised from the content without a name...
    let json = r#"{"type": "amlcompute", "name": "c", "size": "Standard_NC6", "min_instances": 0}"#;
    let (code, out, _) = check_stdin(&["--format", "json", "-"], json)?;
    assert_eq!(code, 1, "{out}");
    let report: Value = serde_json::from_str(&out)?;
    assert_eq!(findings(&report), triples(&[("sku-retired", "<stdin>", 1)]));
    // ...and a name's extension wins over the content: this is not valid JSON.
    let (code, out, _) = check_stdin(
        &["--format", "json", "--stdin-filename", "c.json", "-"],
        RETIRED_CLUSTER,
    )?;
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("invalid JSON at line 1"), "{out}");
    Ok(())
}

#[test]
fn inline_suppressions_work_on_standard_input() -> TestResult {
    let text = RETIRED_CLUSTER.replace(
        "min_instances: 2",
        "min_instances: 2 # computeguard:ignore min-nodes-zero warm pool for the nightly run",
    );
    let (code, out, err) = check_stdin(&["--format", "json", "-"], &text)?;
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out)?;
    assert_eq!(findings(&report), triples(&[("sku-retired", "<stdin>", 4)]));
    assert_eq!(report["summary"]["suppressed"], 1);
    Ok(())
}

#[test]
fn stdin_misuse_is_a_usage_error() -> TestResult {
    let (code, _, err) = check_stdin(&["-", "-"], RETIRED_CLUSTER)?;
    assert_eq!(code, 2);
    assert!(err.contains("named twice"), "{err}");
    let (code, _, err) = check_stdin(&["--stdin-filename", "x.yml", "tests/fixtures/azureml"], "")?;
    assert_eq!(code, 2);
    assert!(err.contains("`-` is not among the paths"), "{err}");
    let (code, _, err) = check_stdin(&["--max-file-mib", "1", "-"], &big_cluster(2))?;
    assert_eq!(code, 2);
    assert!(
        err.contains("standard input is over the 1 MiB limit"),
        "{err}"
    );
    Ok(())
}

// ---- 6. skipped files in every format, --fail-on-skipped ----

/// A walked directory with a checked cluster, an unrendered template (unchecked), a
/// ConfigMap (no resources) and a README (not an input).
fn skipping_repo() -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    write(dir.path(), "repo/cluster.yml", RETIRED_CLUSTER)?;
    write(
        dir.path(),
        "repo/chart/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  {{- toYaml .Values.spec | nindent 2 }}\n",
    )?;
    write(
        dir.path(),
        "repo/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    )?;
    write(dir.path(), "repo/README.md", "# infra\n")?;
    Ok(dir)
}

#[test]
fn json_lists_every_skipped_file_with_its_kind_and_reason() -> TestResult {
    let dir = skipping_repo()?;
    let (code, report) = json_in(dir.path(), &["repo"])?;
    assert_eq!(code, 1, "{report:#}");
    let skipped = report["skipped"].as_array().cloned().unwrap_or_default();
    let got: Vec<(&str, &str)> = skipped
        .iter()
        .map(|s| {
            (
                s["file"].as_str().unwrap_or(""),
                s["kind"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("repo/README.md", "other-file"),
            ("repo/chart/deployment.yaml", "unchecked"),
            ("repo/config.yaml", "no-resources"),
        ]
    );
    assert!(
        skipped[1]["reason"]
            .as_str()
            .unwrap_or("")
            .starts_with("template (Helm/Go) that is not YAML until rendered"),
        "{report:#}"
    );
    assert_eq!(report["summary"]["skippedFiles"], 3);
    assert_eq!(report["summary"]["unchecked"], 1);
    Ok(())
}

#[test]
fn fail_on_skipped_exits_2_only_for_what_was_not_checked() -> TestResult {
    let dir = skipping_repo()?;
    let (code, out, err) = check_in(dir.path(), "text", &["--fail-on-skipped", "repo"])?;
    assert_eq!(code, 2, "{out}");
    assert!(
        err.contains(
            "1 skipped file(s) or document(s) were not checked, and `--fail-on-skipped` is set"
        ),
        "{err}"
    );
    assert!(
        out.contains("skipped: not checked: template (Helm/Go)"),
        "{out}"
    );
    // Without the template: the ConfigMap and the README do not fail it.
    std::fs::remove_file(dir.path().join("repo/chart/deployment.yaml"))?;
    let (code, out, _) = check_in(
        dir.path(),
        "text",
        &[
            "--fail-on-skipped",
            "--fail-on",
            "error",
            "repo/config.yaml",
            "repo/README.md",
        ],
    )?;
    // README.md named on the command line is a file computeguard cannot read: unchecked.
    assert_eq!(code, 2, "{out}");
    let (code, out, _) = check_in(
        dir.path(),
        "text",
        &["--fail-on-skipped", "repo/config.yaml"],
    )?;
    assert_eq!(code, 0, "{out}");
    Ok(())
}

#[test]
fn sarif_lists_skipped_files_as_tool_notifications() -> TestResult {
    let dir = skipping_repo()?;
    let (code, out, _) = check_in(dir.path(), "sarif", &["repo"])?;
    assert_eq!(code, 1, "{out}");
    let sarif: Value = serde_json::from_str(&out)?;
    assert_eq!(
        schema_errors(&sarif_validator()?, &sarif),
        Vec::<String>::new()
    );
    // Rules not evaluated (no `azure:` facts) are notifications with an `associatedRule`.
    let notes: Vec<Value> = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|n| n.get("associatedRule").is_none())
        .collect();
    let got: Vec<(&str, &str)> = notes
        .iter()
        .map(|n| {
            (
                n["level"].as_str().unwrap_or(""),
                n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("note", "repo/README.md"),
            ("warning", "repo/chart/deployment.yaml"),
            ("note", "repo/config.yaml"),
        ]
    );
    assert!(
        notes[1]["message"]["text"]
            .as_str()
            .unwrap_or("")
            .starts_with("skipped: template (Helm/Go)"),
        "{out}"
    );
    // Skipping is not a failed execution.
    assert_eq!(
        sarif["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
    Ok(())
}

#[test]
fn junit_has_a_skipped_case_per_skipped_file() -> TestResult {
    let dir = skipping_repo()?;
    let (code, xml, _) = check_in(dir.path(), "junit", &["repo"])?;
    assert_eq!(code, 1, "{xml}");
    let doc = roxmltree::Document::parse(&xml)?;
    // The suite `computeguard` holds the rules not evaluated (no `azure:` facts).
    let not_evaluated = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite") && n.attribute("name") == Some("computeguard"))
        .filter_map(|n| n.attribute("skipped")?.parse::<usize>().ok())
        .sum::<usize>();
    let skipped: Vec<(String, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("skipped"))
        .filter(|n| n.parent().and_then(|c| c.attribute("classname")) != Some("computeguard"))
        .map(|n| {
            let case = n
                .parent()
                .map(|p| p.attribute("classname").unwrap_or("").to_string());
            (
                case.unwrap_or_default(),
                n.attribute("message").unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(skipped.len(), 3, "{xml}");
    assert_eq!(skipped[1].0, "repo/chart/deployment.yaml");
    assert!(
        skipped[1].1.starts_with("not checked: template (Helm/Go)"),
        "{xml}"
    );
    assert_eq!(
        doc.root_element().attribute("skipped"),
        Some((3 + not_evaluated).to_string().as_str())
    );
    Ok(())
}

#[test]
fn github_annotates_what_was_not_checked() -> TestResult {
    let dir = skipping_repo()?;
    let (_, out, _) = check_in(dir.path(), "github", &["repo"])?;
    let warnings: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("title=computeguard skipped"))
        .collect();
    assert_eq!(warnings.len(), 1, "{out}");
    assert!(
        warnings[0].starts_with(
            "::warning file=repo/chart/deployment.yaml,line=1,title=computeguard skipped::not checked: template (Helm/Go)"
        ),
        "{out}"
    );
    Ok(())
}
