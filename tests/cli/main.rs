//! End-to-end tests: run the real `computeguard` binary on fixture files and
//! assert the exact findings, exit codes and messages.

// Test code: a helper that cannot do its job fails the test with the reason.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod audit;
mod baseline;
mod blind_spots;
mod catalog;
mod check;
mod commands;
mod context;
mod corpus;
mod cost;
mod deploy;
mod docs;
mod formats_arm;
mod formats_bicep;
mod formats_out;
mod formats_tf;
mod formats_workloads;
mod gpu_rules;
mod init;
mod inputs;
mod kaito;
mod layout;
mod lsp;
mod plan;
mod registry;
mod report_html;
mod sdk;
mod serve;
mod suppress;
mod workspace_region;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("root")
}

pub fn fixtures() -> PathBuf {
    root().join("tests/fixtures")
}

/// The binary with a shared artifact cache, no colour, run from the repository root
/// with no configuration found.
pub fn computeguard() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_computeguard"));
    cmd.current_dir(root()).env("NO_COLOR", "1").env(
        "COMPUTEGUARD_CACHE_DIR",
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache"),
    );
    cmd
}

/// `check --as-of 2026-11-22 ARGS` with `input` written to its standard input through a
/// real pipe: (exit code, stdout, stderr).
pub fn check_piped(
    args: &[&str],
    input: &[u8],
) -> Result<(i32, String, String), Box<dyn std::error::Error>> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = computeguard()
        .args(["check", "--as-of", "2026-11-22"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let text = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&text));
    let out = child.wait_with_output()?;
    // A run that stops before reading all of it (a usage error) closes the pipe early.
    match writer.join().map_err(|_| "writer panicked")? {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => return Err(e.into()),
        _ => {}
    }
    Ok((code(&out), stdout(&out), stderr(&out)))
}

pub fn run(args: &[&str]) -> Output {
    computeguard()
        .args(args)
        .output()
        .expect("run computeguard")
}

/// Runs the binary with `dir` as the working directory (so its computeguard.yaml is found).
pub fn run_in(dir: &Path, args: &[&str]) -> std::io::Result<Output> {
    computeguard().current_dir(dir).args(args).output()
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("exit code")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// `check --format json` with `args`; returns (exit code, report).
#[allow(clippy::panic)] // a test helper: the message shows what the binary printed
pub fn check_json(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["check", "--format", "json", "--as-of", "2026-11-22"];
    all.extend_from_slice(args);
    let out = run(&all);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "json output: {e}\nstdout: {}\nstderr: {}",
            stdout(&out),
            stderr(&out)
        )
    });
    (code(&out), report)
}

/// (rule, file relative to the fixtures dir, line) of every finding.
pub fn findings(report: &Value) -> Vec<(String, String, u64)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let file = f["file"]
                .as_str()
                .expect("file")
                .replace("tests/fixtures/", "");
            (
                f["rule"].as_str().expect("rule").to_string(),
                file,
                f["line"].as_u64().expect("line"),
            )
        })
        .collect()
}

pub fn triples(list: &[(&str, &str, u64)]) -> Vec<(String, String, u64)> {
    list.iter()
        .map(|(r, f, l)| (r.to_string(), f.to_string(), *l))
        .collect()
}

/// An Azure ML cluster on a retired size (`sku-retired`, line 4) that keeps two idle
/// nodes (`min-nodes-zero`, line 5).
pub const RETIRED_CLUSTER: &str =
    "$schema: https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json
name: gpu-cluster
type: amlcompute
size: Standard_NC6
min_instances: 2
max_instances: 4
";

/// `check --format json --as-of 2026-11-22 ARGS` run in `dir`; returns (exit code, report).
pub fn check_json_in(
    dir: &Path,
    args: &[&str],
) -> Result<(i32, Value), Box<dyn std::error::Error>> {
    let mut all = vec!["check", "--format", "json", "--as-of", "2026-11-22"];
    all.extend_from_slice(args);
    let out = run_in(dir, &all)?;
    let v: Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{e}: {} {}", stdout(&out), stderr(&out)))?;
    Ok((code(&out), v))
}
