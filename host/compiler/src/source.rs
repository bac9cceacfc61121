//! Reads a rule pack's YAML source into a checked [`Pack`], collecting every
//! problem with its file, line and column.

use crate::check;
use crate::diagnostic::Diagnostic;
use computeguard_decode::{Positions, decode_yaml};
use computeguard_policy_core::ast::{self, Expr};
use computeguard_policy_core::pack::{Pack, Rule, RuleMeta, Severity};
use computeguard_policy_core::settings;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// A pack that compiled, with its own test cases.
#[derive(Clone, Debug)]
pub struct CompiledPack {
    /// The checked, pre-parsed pack the runtime reads.
    pub pack: Pack,
    /// Its `tests:`, for `computeguard test`.
    pub tests: Vec<PackTest>,
}

/// One `tests:` entry of a pack.
#[derive(Clone, Debug)]
pub struct PackTest {
    /// Shown in the test output.
    pub name: String,
    /// The document the test evaluates.
    pub document: TestDocument,
    /// Rule ids expected to fire (order does not matter; each at least once).
    pub expect: Vec<String>,
    /// Settings for this test (default `{}`).
    pub settings: Option<Value>,
    /// The evaluation date (default: today).
    pub as_of: Option<String>,
    /// Line of the test in the pack file.
    pub line: u32,
}

/// Where a test's document comes from.
#[derive(Clone, Debug)]
pub enum TestDocument {
    /// Written in the pack.
    Inline(Value),
    /// A path relative to the pack file.
    File(String),
}

const PACK_KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "settings",
    "rules",
    "tests",
];
const RULE_KEYS: &[&str] = &[
    "id",
    "severity",
    "targets",
    "description",
    "rationale",
    "remediation",
    "when",
    "assert",
    "message",
    "messageExpression",
    "severityExpression",
    "path",
    "field",
    "sources",
];
const TEST_KEYS: &[&str] = &["name", "document", "file", "expect", "settings", "asOf"];

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
    positions: &'a Positions,
    errors: Vec<Diagnostic>,
}

impl Ctx<'_> {
    fn err(&mut self, pointer: &str, message: impl Into<String>) -> &mut Diagnostic {
        let (line, column) = self
            .positions
            .locate(pointer)
            .map_or((0, 0), |s| (s.line, s.column));
        self.errors
            .push(Diagnostic::at(self.file, self.text, line, column, message));
        let last = self.errors.len() - 1;
        &mut self.errors[last]
    }

    fn line(&self, pointer: &str) -> u32 {
        self.positions.locate(pointer).map_or(0, |s| s.line)
    }

    fn string(
        &mut self,
        obj: &Map<String, Value>,
        ptr: &str,
        key: &str,
        required: bool,
    ) -> Option<String> {
        match obj.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(_) => {
                self.err(&format!("{ptr}/{key}"), format!("`{key}` must be a string"));
                None
            }
            None if required => {
                self.err(ptr, format!("missing `{key}`"));
                None
            }
            None => None,
        }
    }

    fn unknown_keys(&mut self, obj: &Map<String, Value>, ptr: &str, allowed: &[&str], what: &str) {
        for k in obj.keys() {
            if !allowed.contains(&k.as_str()) {
                let hint = check::closest(k, allowed).map(|a| format!("did you mean `{a}`?"));
                let d = self.err(
                    &format!("{ptr}/{}", k.replace('~', "~0").replace('/', "~1")),
                    format!("unknown {what} field `{k}`"),
                );
                if let Some(h) = hint {
                    d.help = Some(h);
                } else {
                    d.help = Some(format!("expected one of: {}", allowed.join(", ")));
                }
            }
        }
    }

    /// Parses and checks one CEL expression at `ptr`.
    fn cel(&mut self, src: &str, ptr: &str) -> Option<Expr> {
        match ast::parse(src) {
            Ok(expr) => {
                for problem in check::check(&expr) {
                    let (line, column) =
                        self.locate_in_expr(ptr, src, problem.needle.as_deref(), 1, None);
                    let mut d = Diagnostic::at(self.file, self.text, line, column, problem.message);
                    d.help = problem.help;
                    self.errors.push(d);
                }
                Some(expr)
            }
            Err(errs) => {
                for e in errs {
                    let (line, column) =
                        self.locate_in_expr(ptr, src, None, e.line, Some(e.column));
                    self.errors.push(
                        Diagnostic::at(
                            self.file,
                            self.text,
                            line,
                            column,
                            format!("invalid CEL: {}", e.message),
                        )
                        .with_help(format!("in `{}`", src.trim())),
                    );
                }
                None
            }
        }
    }

    /// File line/column of a place inside the expression written at `ptr`.
    fn locate_in_expr(
        &self,
        ptr: &str,
        src: &str,
        needle: Option<&str>,
        expr_line: u32,
        expr_col: Option<u32>,
    ) -> (u32, u32) {
        let key_line = self.line(ptr);
        let lines: Vec<&str> = self.text.lines().collect();
        // Find the file line where the expression's text starts (same line as the key for
        // plain and quoted scalars, the next lines for block scalars).
        let first = src
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        let start = (key_line as usize..(key_line as usize + 3).min(lines.len() + 1))
            .find(|&n| {
                n > 0
                    && lines
                        .get(n - 1)
                        .is_some_and(|l| !first.is_empty() && l.contains(first))
            })
            .unwrap_or(key_line as usize);
        let Some(line_text) = lines.get(start.wrapping_sub(1)) else {
            return (key_line, 1);
        };
        let base_col = line_text.find(first).unwrap_or(0);
        if let Some(n) = needle {
            for (i, l) in lines
                .iter()
                .enumerate()
                .skip(start.saturating_sub(1))
                .take(src.lines().count().max(1))
            {
                if let Some(c) = l.find(n) {
                    return (i as u32 + 1, c as u32 + 1);
                }
            }
            return (start as u32, base_col as u32 + 1);
        }
        let line = start as u32 + expr_line.saturating_sub(1);
        let column = if expr_line <= 1 {
            base_col as u32 + expr_col.unwrap_or(1)
        } else {
            let l = lines.get(line as usize - 1).unwrap_or(&"");
            (l.len() - l.trim_start().len()) as u32 + expr_col.unwrap_or(1)
        };
        (line, column)
    }
}

fn is_kebab(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('-')
        && !id.ends_with('-')
        && !id.contains("--")
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Keys whose value is a CEL expression.
const EXPRESSION_KEYS: &[&str] = &["when", "assert", "messageExpression", "severityExpression"];

/// A hint for a YAML error on a line `KEY: EXPR` where KEY takes a CEL expression that
/// starts with a quote (`assert: 'team' in resource.labels`): YAML reads the quoted part
/// as the whole value and stops at what follows.
fn unquoted_expression(text: &str, line: u32) -> Option<String> {
    let source = text
        .lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)?;
    let entry = source.trim_start().trim_start_matches("- ");
    let (key, value) = entry.split_once(':')?;
    let value = value.trim();
    if !EXPRESSION_KEYS.contains(&key.trim())
        || !(value.starts_with('\'') || value.starts_with('"'))
    {
        return None;
    }
    let quoted = if value.contains('"') {
        format!("'{}'", value.replace('\'', "''"))
    } else {
        format!("\"{value}\"")
    };
    Some(format!(
        "quote the whole CEL expression, not just its first string: `{}: {quoted}`",
        key.trim()
    ))
}

/// Compiles a pack's source text. `file` is used in diagnostics.
pub fn compile(file: &str, text: &str) -> Result<CompiledPack, Vec<Diagnostic>> {
    let docs = decode_yaml(text).map_err(|e| {
        let d = Diagnostic::at(file, text, e.line, e.column, e.message.clone());
        vec![match unquoted_expression(text, e.line) {
            Some(help) => d.with_help(help),
            None => d,
        }]
    })?;
    let Some(doc) = docs.into_iter().next() else {
        return Err(vec![Diagnostic::at(
            file,
            text,
            1,
            1,
            "empty rule pack: expected `apiVersion: computeguard.io/v1`, `kind: RulePack`",
        )]);
    };
    let mut cx = Ctx {
        file,
        text,
        positions: &doc.positions,
        errors: Vec::new(),
    };
    let Some(root) = doc.value.as_object() else {
        cx.err("", "a rule pack must be a mapping");
        return Err(cx.errors);
    };
    cx.unknown_keys(root, "", PACK_KEYS, "pack");
    if root.get("apiVersion").and_then(Value::as_str) != Some("computeguard.io/v1") {
        cx.err("/apiVersion", "expected `apiVersion: computeguard.io/v1`");
    }
    if root.get("kind").and_then(Value::as_str) != Some("RulePack") {
        cx.err("/kind", "expected `kind: RulePack`");
    }
    let meta = root
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if root.get("metadata").is_none() {
        cx.err("", "missing `metadata` (name and version)");
    }
    let name = cx
        .string(&meta, "/metadata", "name", true)
        .unwrap_or_default();
    if !name.is_empty() && !is_kebab(&name) {
        cx.err(
            "/metadata/name",
            format!("pack name `{name}` must be kebab-case (a-z, 0-9, -)"),
        );
    }
    let version = cx
        .string(&meta, "/metadata", "version", true)
        .unwrap_or_default();
    if !version.is_empty() && semver::Version::parse(&version).is_err() {
        cx.err(
            "/metadata/version",
            format!("version `{version}` is not semver (e.g. 1.2.0)"),
        );
    }
    let settings_schema = match root.get("settings") {
        None => None,
        Some(Value::Object(s)) => match s.get("schema") {
            Some(schema @ Value::Object(_)) => {
                // The component validates settings itself with a JSON Schema subset
                // (computeguard_policy_core::settings); a keyword outside it would
                // go unchecked in every embedder, so it is refused here.
                for p in settings::check_schema(schema) {
                    cx.err(&format!("/settings/schema{}", p.pointer), p.message)
                        .help = Some(format!(
                        "a policy checks its own settings with a JSON Schema subset: {} \
                         (see \"Settings\" in docs/writing-policies.md)",
                        settings::supported()
                    ));
                }
                Some(schema.to_string())
            }
            _ => {
                cx.err(
                    "/settings",
                    "`settings` needs a `schema` (a JSON Schema object)",
                );
                None
            }
        },
        Some(_) => {
            cx.err("/settings", "`settings` must be a mapping with a `schema`");
            None
        }
    };

    let mut rules = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    match root.get("rules") {
        Some(Value::Array(list)) if !list.is_empty() => {
            for (i, r) in list.iter().enumerate() {
                let ptr = format!("/rules/{i}");
                let Some(obj) = r.as_object() else {
                    cx.err(&ptr, "a rule must be a mapping");
                    continue;
                };
                if let Some(rule) = compile_rule(&mut cx, obj, &ptr) {
                    if !seen.insert(rule.meta.id.clone()) {
                        cx.err(
                            &format!("{ptr}/id"),
                            format!("duplicate rule id `{}`", rule.meta.id),
                        );
                    }
                    rules.push(rule);
                }
            }
        }
        _ => {
            cx.err("/rules", "a pack needs a non-empty `rules` list");
        }
    }

    let mut tests = Vec::new();
    if let Some(t) = root.get("tests") {
        match t {
            Value::Array(list) => {
                for (i, t) in list.iter().enumerate() {
                    let ptr = format!("/tests/{i}");
                    let Some(obj) = t.as_object() else {
                        cx.err(&ptr, "a test must be a mapping");
                        continue;
                    };
                    cx.unknown_keys(obj, &ptr, TEST_KEYS, "test");
                    let name = cx.string(obj, &ptr, "name", true).unwrap_or_default();
                    let document = match (obj.get("document"), obj.get("file")) {
                        (Some(d), None) => Some(TestDocument::Inline(d.clone())),
                        (None, Some(Value::String(f))) => Some(TestDocument::File(f.clone())),
                        _ => {
                            cx.err(
                                &ptr,
                                "a test needs exactly one of `document` (inline) or `file`",
                            );
                            None
                        }
                    };
                    let expect = match obj.get("expect") {
                        Some(Value::Array(ids)) => ids
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect(),
                        _ => {
                            cx.err(&ptr, "a test needs `expect`: the list of rule ids that fire (`[]` for none)");
                            Vec::new()
                        }
                    };
                    for (j, id) in expect.iter().enumerate() {
                        if !seen.contains(id) {
                            cx.err(
                                &format!("{ptr}/expect/{j}"),
                                format!("test expects unknown rule `{id}`"),
                            );
                        }
                    }
                    if let Some(document) = document {
                        tests.push(PackTest {
                            name,
                            document,
                            expect,
                            settings: obj.get("settings").cloned(),
                            as_of: obj.get("asOf").and_then(Value::as_str).map(str::to_string),
                            line: cx.line(&ptr),
                        });
                    }
                }
            }
            _ => {
                cx.err("/tests", "`tests` must be a list");
            }
        }
    }

    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Ok(CompiledPack {
        pack: Pack {
            name,
            version,
            source_digest: format!("sha256:{hex}"),
            settings_schema,
            rules,
        },
        tests,
    })
}

fn compile_rule(cx: &mut Ctx<'_>, obj: &Map<String, Value>, ptr: &str) -> Option<Rule> {
    cx.unknown_keys(obj, ptr, RULE_KEYS, "rule");
    let id = cx.string(obj, ptr, "id", true)?;
    if !is_kebab(&id) {
        cx.err(
            &format!("{ptr}/id"),
            format!("rule id `{id}` must be kebab-case (a-z, 0-9, -)"),
        );
    }
    let severity = match obj.get("severity").and_then(Value::as_str) {
        Some("error") => Severity::Error,
        Some("warning") => Severity::Warning,
        Some("info") => Severity::Info,
        Some(other) => {
            cx.err(
                &format!("{ptr}/severity"),
                format!("unknown severity `{other}`"),
            )
            .help = Some("expected one of: error, warning, info".into());
            Severity::Error
        }
        None => {
            cx.err(
                ptr,
                format!("rule `{id}` has no `severity` (error, warning or info)"),
            );
            Severity::Error
        }
    };
    let targets: Vec<String> = match obj.get("targets") {
        None => Vec::new(),
        Some(Value::Array(t)) => t
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        Some(_) => {
            cx.err(
                &format!("{ptr}/targets"),
                "`targets` must be a list of compute-model kinds",
            );
            Vec::new()
        }
    };
    for (i, t) in targets.iter().enumerate() {
        if !check::KINDS.contains(&t.as_str()) {
            cx.err(
                &format!("{ptr}/targets/{i}"),
                format!("unknown compute-model kind `{t}`"),
            )
            .help = Some(format!("expected one of: {}", check::KINDS.join(", ")));
        }
    }
    let description = cx.string(obj, ptr, "description", true).unwrap_or_default();
    let rationale = cx.string(obj, ptr, "rationale", false).unwrap_or_default();
    let remediation = cx.string(obj, ptr, "remediation", true).unwrap_or_default();
    let mut cel = |key: &str, required: bool| -> Option<Expr> {
        let src = cx.string(obj, ptr, key, required)?;
        cx.cel(&src, &format!("{ptr}/{key}"))
    };
    let when = cel("when", false);
    let assert = cel("assert", true);
    let message_expression = cel("messageExpression", false);
    let severity_expression = cel("severityExpression", false);
    let message = cx.string(obj, ptr, "message", false);
    let path = cx.string(obj, ptr, "path", false);
    if let Some(p) = &path
        && !p.starts_with('/')
    {
        cx.err(
            &format!("{ptr}/path"),
            format!("`path` must be a JSON pointer starting with `/`, got `{p}`"),
        );
    }
    let field = cx.string(obj, ptr, "field", false);
    if let Some(f) = &field {
        let root = f.split('.').next().unwrap_or_default();
        if !computeguard_policy_core::eval::RESOURCE_FIELDS.contains(&root) {
            cx.err(
                &format!("{ptr}/field"),
                format!("`field` names unknown compute-model field `{f}`"),
            );
        }
    }
    Some(Rule {
        meta: RuleMeta {
            id,
            severity,
            targets,
            description,
            rationale,
            remediation,
            message,
            path,
            field,
        },
        when,
        assert: assert?,
        message_expression,
        severity_expression,
    })
}
