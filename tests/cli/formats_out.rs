//! `check --format sarif|junit|github|json|text`: each output is read back with a
//! parser of its format (the official SARIF 2.1.0 schema, an XML parser, the
//! workflow-command grammar) and compared with the JSON findings.

use crate::*;
use serde_json::Value;
use std::collections::BTreeMap;

const AS_OF: &str = "2026-11-22";

fn check_format(format: &str, args: &[&str]) -> (i32, String) {
    let mut all = vec!["check", "--format", format, "--as-of", AS_OF];
    all.extend_from_slice(args);
    let out = run(&all);
    (code(&out), stdout(&out))
}

pub(crate) fn sarif_validator() -> Result<jsonschema::Validator, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(fixtures().join("schemas/sarif-2.1.0-rtm.5.json"))?;
    let mut schema: Value = serde_json::from_str(&text)?;
    // Formats are checked (`uri`, `uri-reference`, `date-time` in the instance), and
    // with them the schema itself is meta-validated. The `language` pattern of the rtm.5
    // schema (on `run` and `toolComponent`) has a stray `]`
    // (`^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$`) that strict ECMA `regex` checking
    // refuses; use its intended form. computeguard never writes `language`, so this
    // relaxes nothing it is tested for.
    let fixed = fix_language_patterns(&mut schema);
    assert_eq!(fixed, 2, "the vendored schema changed");
    Ok(jsonschema::draft4::options()
        .should_validate_formats(true)
        .build(&schema)?)
}

fn fix_language_patterns(v: &mut Value) -> usize {
    match v {
        Value::Object(m) => {
            let mut n = 0;
            for (k, x) in m.iter_mut() {
                if k == "pattern" && x == "^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$" {
                    *x = "^[a-zA-Z]{2}(-[a-zA-Z]{2})?$".into();
                    n += 1;
                } else {
                    n += fix_language_patterns(x);
                }
            }
            n
        }
        Value::Array(a) => a.iter_mut().map(fix_language_patterns).sum(),
        _ => 0,
    }
}

pub(crate) fn schema_errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn sarif_is_valid_and_matches_the_findings() -> Result<(), Box<dyn std::error::Error>> {
    let validator = sarif_validator()?;
    let (code, text) = check_format(
        "sarif",
        &["tests/fixtures/azureml", "tests/fixtures/kubernetes"],
    );
    assert_eq!(code, 1, "{text}");
    let sarif: Value = serde_json::from_str(&text)?;
    assert_eq!(schema_errors(&validator, &sarif), Vec::<String>::new());

    // The validator is real: a log without `version` or with a bad level is refused.
    let mut broken = sarif.clone();
    broken.as_object_mut().ok_or("object")?.remove("version");
    assert!(!schema_errors(&validator, &broken).is_empty());
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!schema_errors(&validator, &broken).is_empty());

    let (_, json) = check_json(&["tests/fixtures/azureml", "tests/fixtures/kubernetes"]);
    let run = &sarif["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().ok_or("rules")?;
    assert!(
        rules.len() >= 16,
        "every built-in rule is described: {}",
        rules.len()
    );
    for r in rules {
        let id = r["id"].as_str().ok_or("id")?;
        let uri = r["helpUri"].as_str().ok_or("helpUri")?;
        assert!(
            uri.starts_with("https://github.com/computeguard/computeguard/")
                && uri.ends_with(&format!("/docs/rules/{id}.md")),
            "{uri}"
        );
        assert!(
            root().join(format!("docs/rules/{id}.md")).is_file(),
            "helpUri of `{id}` points at a page that exists"
        );
        assert!(!r["help"]["text"].as_str().ok_or("help")?.is_empty());
        assert!(
            r["help"]["markdown"]
                .as_str()
                .ok_or("md")?
                .starts_with("**Fix:**")
        );
        assert!(
            !r["shortDescription"]["text"]
                .as_str()
                .ok_or("short")?
                .is_empty()
        );
    }
    let results = run["results"].as_array().ok_or("results")?;
    let expected: Vec<(String, String, u64)> = findings(&json);
    let got: Vec<(String, String, u64)> = results
        .iter()
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"];
            (
                r["ruleId"].as_str().unwrap_or_default().to_string(),
                loc["artifactLocation"]["uri"]
                    .as_str()
                    .unwrap_or_default()
                    .replace("tests/fixtures/", ""),
                loc["region"]["startLine"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(got, expected);
    for (r, f) in results
        .iter()
        .zip(json["findings"].as_array().ok_or("findings")?)
    {
        let index = r["ruleIndex"].as_u64().ok_or("ruleIndex")? as usize;
        assert_eq!(
            rules[index]["id"], r["ruleId"],
            "ruleIndex points at the rule"
        );
        let level = match f["severity"].as_str() {
            Some("info") => "note",
            Some(s) => s,
            None => "",
        };
        assert_eq!(r["level"], level);
        assert_eq!(r["message"]["text"], f["message"]);
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .ok_or("uri")?;
        assert!(
            !uri.starts_with('/') && !uri.contains('\\') && !uri.starts_with("./"),
            "{uri}"
        );
        assert!(r.get("suppressions").is_none());
    }
    Ok(())
}

#[test]
fn sarif_file_errors_are_notifications_and_still_valid() -> Result<(), Box<dyn std::error::Error>> {
    let (code, text) = check_format("sarif", &["tests/fixtures/invalid/broken.yaml"]);
    assert_eq!(code, 2);
    let sarif: Value = serde_json::from_str(&text)?;
    assert_eq!(
        schema_errors(&sarif_validator()?, &sarif),
        Vec::<String>::new()
    );
    let inv = &sarif["runs"][0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false);
    let n = &inv["toolExecutionNotifications"][0];
    assert_eq!(n["level"], "error");
    assert_eq!(
        n["locations"][0]["physicalLocation"]["region"]["startLine"],
        4
    );
    Ok(())
}

#[test]
fn junit_has_a_suite_per_file_and_a_failure_per_finding() -> Result<(), Box<dyn std::error::Error>>
{
    let (code, xml) = check_format("junit", &["tests/fixtures/azureml"]);
    assert_eq!(code, 1);
    let doc = roxmltree::Document::parse(&xml)?;
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let (_, json) = check_json(&["tests/fixtures/azureml"]);
    let mut per_file: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for f in json["findings"].as_array().ok_or("findings")? {
        per_file
            .entry(f["file"].as_str().ok_or("file")?.to_string())
            .or_default()
            .push((
                f["rule"].as_str().ok_or("rule")?.to_string(),
                f["severity"].as_str().ok_or("severity")?.to_string(),
            ));
    }
    // The suite `computeguard` holds the rules that were not evaluated (no `azure:`).
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.is_element() && n.attribute("name") != Some("computeguard"))
        .collect();
    let attr = |n: &roxmltree::Node, a: &str| -> usize {
        n.attribute(a)
            .and_then(|v| v.parse().ok())
            .unwrap_or(usize::MAX)
    };
    let mut total = 0;
    let mut failures = 0;
    for s in &suites {
        assert_eq!(s.tag_name().name(), "testsuite");
        let file = s.attribute("name").ok_or("suite name")?;
        let cases: Vec<_> = s
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(attr(s, "tests"), cases.len(), "{file}");
        let failed: Vec<_> = cases
            .iter()
            .filter_map(|c| c.children().find(|n| n.has_tag_name("failure")))
            .collect();
        assert_eq!(attr(s, "failures"), failed.len(), "{file}");
        let expected_failures: Vec<String> = per_file
            .get(file)
            .map(|v| {
                v.iter()
                    .filter(|(_, sev)| sev == "error")
                    .map(|(r, _)| r.clone())
                    .collect()
            })
            .unwrap_or_default();
        let got: Vec<String> = failed
            .iter()
            .map(|f| f.attribute("type").unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            got, expected_failures,
            "{file}: errors fail, warnings and infos pass"
        );
        for c in &cases {
            assert_eq!(c.attribute("classname"), Some(file));
        }
        total += cases.len();
        failures += failed.len();
    }
    assert_eq!(
        Some(suites.len() as u64),
        json["summary"]["files"].as_u64(),
        "every checked file has a suite, the clean one included"
    );
    let not_evaluated: usize = root
        .children()
        .filter(|n| n.attribute("name") == Some("computeguard"))
        .map(|n| attr(&n, "tests"))
        .sum();
    assert_eq!(
        not_evaluated, 2,
        "sku-available-in-region and quota-sufficient"
    );
    assert_eq!(attr(&root, "tests"), total + not_evaluated);
    assert_eq!(attr(&root, "failures"), failures);
    assert_eq!(failures, 3);

    // --fail-on warning makes the warning a failure too.
    let (_, xml) = check_format("junit", &["tests/fixtures/azureml", "--fail-on", "warning"]);
    let doc = roxmltree::Document::parse(&xml)?;
    assert_eq!(doc.root_element().attribute("failures"), Some("4"));
    Ok(())
}

/// One `::level props::message` workflow command, unescaped.
#[derive(Debug, PartialEq)]
struct Command {
    level: String,
    props: BTreeMap<String, String>,
    message: String,
}

fn unescape(s: &str) -> String {
    s.replace("%0A", "\n")
        .replace("%0D", "\r")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
}

/// Parses the grammar GitHub's runner accepts: `::name k=v,k=v::data`, where
/// property values escape `%`, CR, LF, `:` and `,`, and data escapes `%`, CR, LF.
fn parse_command(line: &str) -> Result<Command, String> {
    let rest = line
        .strip_prefix("::")
        .ok_or(format!("no leading `::`: {line}"))?;
    let (head, data) = rest
        .split_once("::")
        .ok_or(format!("no `::` before data: {line}"))?;
    let (level, props) = head.split_once(' ').unwrap_or((head, ""));
    let mut map = BTreeMap::new();
    for p in props.split(',').filter(|p| !p.is_empty()) {
        let (k, v) = p
            .split_once('=')
            .ok_or(format!("property without `=`: {p}"))?;
        if v.contains(':') || v.contains('\n') {
            return Err(format!("unescaped value: {p}"));
        }
        map.insert(k.to_string(), unescape(v));
    }
    if data.contains('\n') || data.contains('\r') {
        return Err(format!("unescaped data: {data}"));
    }
    Ok(Command {
        level: level.to_string(),
        props: map,
        message: unescape(data),
    })
}

#[test]
fn github_commands_parse_and_match_the_findings() -> Result<(), Box<dyn std::error::Error>> {
    let (_, text) = check_format(
        "github",
        &["tests/fixtures/azureml", "tests/fixtures/kubernetes"],
    );
    let (_, json) = check_json(&["tests/fixtures/azureml", "tests/fixtures/kubernetes"]);
    let mut commands: Vec<Command> = text.lines().map(parse_command).collect::<Result<_, _>>()?;
    // The rules not evaluated (no `azure:` facts) come last, as notices without a file.
    let (not_evaluated, findings): (Vec<Command>, Vec<Command>) = std::mem::take(&mut commands)
        .into_iter()
        .partition(|c| !c.props.contains_key("file"));
    commands = findings;
    let expected: Vec<String> = json["notEvaluated"]
        .as_array()
        .ok_or("notEvaluated")?
        .iter()
        .map(|n| {
            format!(
                "computeguard {} not evaluated",
                n["rule"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let got: Vec<String> = not_evaluated
        .iter()
        .map(|c| c.props.get("title").cloned().unwrap_or_default())
        .collect();
    assert_eq!(got, expected);
    assert!(not_evaluated.iter().all(|c| c.level == "notice"));
    let list = json["findings"].as_array().ok_or("findings")?;
    assert_eq!(commands.len(), list.len());
    for (c, f) in commands.iter().zip(list) {
        let level = match f["severity"].as_str() {
            Some("info") => "notice",
            Some(s) => s,
            None => "",
        };
        assert_eq!(c.level, level);
        assert_eq!(c.props.get("file").map(String::as_str), f["file"].as_str());
        assert_eq!(c.props.get("line"), Some(&f["line"].to_string()));
        assert_eq!(
            c.props.get("title"),
            Some(&format!(
                "computeguard {}",
                f["rule"].as_str().unwrap_or_default()
            ))
        );
        assert!(
            c.message
                .starts_with(f["message"].as_str().ok_or("message")?),
            "{c:?}"
        );
    }
    // The parser is strict: it refuses an unescaped property.
    assert!(parse_command("::error file=a:b.yml,line=1::x").is_err());
    Ok(())
}

#[test]
fn text_has_a_code_frame_with_a_caret_and_a_summary() -> Result<(), String> {
    let (_, text) = check_format("text", &["tests/fixtures/azureml/gpu-cluster-idle-nc6.yml"]);
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("warning[min-nodes-zero]: "))
        .ok_or_else(|| format!("no min-nodes-zero warning in:\n{text}"))?;
    assert_eq!(
        lines[at + 1],
        "  --> tests/fixtures/azureml/gpu-cluster-idle-nc6.yml:7:1"
    );
    assert_eq!(lines[at + 2], "  |");
    assert!(lines[at + 3].starts_with("7 | min_instances: "), "{text}");
    let src = &lines[at + 3]["7 | ".len()..];
    assert_eq!(
        lines[at + 4],
        format!("  | {}", "^".repeat(src.trim_end().len()))
    );
    assert!(lines[at + 5].starts_with("  = fix: "));
    let summary = lines.last().copied().unwrap_or_default();
    assert!(
        summary.starts_with(
            "computeguard: 1 error, 1 warning, 0 infos in 1 file read (1 document, 1 resource)"
        ),
        "{summary}"
    );
    assert!(!text.contains('\x1b'), "NO_COLOR and a pipe: no colour");
    Ok(())
}

/// Runs the binary with a pseudo-terminal as stdout and stderr (`script` from util-linux).
fn run_on_tty(args: &str, no_color: bool) -> std::io::Result<String> {
    let bin = env!("CARGO_BIN_EXE_computeguard");
    let mut cmd = std::process::Command::new("script");
    cmd.args(["-qec", &format!("{bin} {args}"), "/dev/null"])
        .current_dir(root())
        .env(
            "COMPUTEGUARD_CACHE_DIR",
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache"),
        )
        .env_remove("NO_COLOR");
    if no_color {
        cmd.env("NO_COLOR", "1");
    }
    let out = cmd.output()?;
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

#[test]
fn text_is_coloured_on_a_terminal_unless_no_color() -> std::io::Result<()> {
    let args = format!("check --as-of {AS_OF} tests/fixtures/azureml/gpu-cluster-idle-nc6.yml");
    let tty = run_on_tty(&args, false)?;
    assert!(
        tty.contains("\x1b[1;33mwarning[min-nodes-zero]\x1b[0m"),
        "{tty:?}"
    );
    let plain = run_on_tty(&args, true)?;
    assert!(plain.contains("warning[min-nodes-zero]:"), "{plain:?}");
    assert!(!plain.contains("\x1b[1;"), "{plain:?}");
    Ok(())
}

#[test]
fn progress_shows_on_a_terminal_and_not_when_piped() -> std::io::Result<()> {
    let args = format!("check --as-of {AS_OF} --format json tests/fixtures");
    let tty = run_on_tty(&args, true)?;
    let files = {
        let (_, json) = check_json(&["tests/fixtures"]);
        json["summary"]["files"].as_u64().unwrap_or_default()
    };
    assert!(
        tty.contains(&format!(
            "computeguard: checked {files}/{files} files (100%)"
        )),
        "{tty:?}"
    );
    assert!(tty.contains("\r\x1b[2K"), "the line is erased at the end");
    let out = run(&[
        "check",
        "--as-of",
        AS_OF,
        "--format",
        "json",
        "tests/fixtures",
    ]);
    assert!(
        !stderr(&out).contains("computeguard: checked") && !stderr(&out).contains('\r'),
        "{}",
        stderr(&out)
    );
    Ok(())
}
