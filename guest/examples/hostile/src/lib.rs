//! `hostile`: a policy that misbehaves on request, for the sandbox tests
//! (`host/engine/tests/engine/hostile.rs`, `host/server/tests/e2e/hostile.rs`). Never load it
//! anywhere else.
//!
//! The document's annotation (or label, or top-level field) `hostile.computeguard.io/act`
//! picks the misbehaviour; anything else gets one honest `hostile-marker` warning so a
//! test can tell the policy ran:
//!
//! | act | what the policy does |
//! |---|---|
//! | `panic` | panics (the message goes to stderr, then the instance traps) |
//! | `print` | writes 8 MiB to stdout and 8 MiB to stderr, then answers |
//! | `spin` | loops forever |
//! | `alloc` | allocates until the sandbox's memory cap stops it |
//! | `flood:N` | returns N violations |
//! | `big-message:N` | returns one violation with an N-byte message |
//! | `undeclared-rule` | a violation of a rule it never declared |
//! | `bad-rule:TEXT` | a violation whose rule id is TEXT |
//! | `bad-path` | a violation whose path is not a JSON pointer |
//! | `patch` | returns a JSON Patch that makes the pod privileged |
//! | `deny` | one `hostile-marker` violation of severity error |
//! | `escape` | one `hostile-marker` warning whose message holds ESC and newline |

// Misbehaving is this crate's purpose.
#![allow(clippy::panic)]

use computeguard_sdk::serde_json::{self, Value};
use computeguard_sdk::{
    Error, Policy, PolicyInfo, Request, ResourceRef, Response, RuleInfo, Severity, Violation,
    export_policy,
};

/// The one rule the policy declares.
pub const RULE: &str = "hostile-marker";
/// Where the document says what to do.
pub const ACT: &str = "hostile.computeguard.io/act";

pub struct Hostile;

fn act(document: &Value) -> Option<String> {
    let esc = ACT.replace('/', "~1");
    [
        format!("/metadata/annotations/{esc}"),
        format!("/metadata/labels/{esc}"),
        format!("/{esc}"),
        format!("/request/object/metadata/annotations/{esc}"),
    ]
    .iter()
    .find_map(|p| {
        document
            .pointer(p)
            .and_then(Value::as_str)
            .map(String::from)
    })
}

fn violation(rule: &str, severity: Severity, message: String, path: &str) -> Violation {
    Violation {
        rule: rule.into(),
        severity,
        message,
        path: path.into(),
        remediation: "Do not load the hostile test policy.".into(),
        resource: ResourceRef {
            kind: "k8s-workload".into(),
            name: "hostile".into(),
        },
    }
}

fn answer(violations: Vec<Violation>, patch: Option<String>) -> Response {
    Response {
        violations,
        resources: vec![ResourceRef {
            kind: "k8s-workload".into(),
            name: "hostile".into(),
        }],
        patch,
    }
}

fn number(arg: &str) -> usize {
    arg.parse().unwrap_or(0)
}

impl Policy for Hostile {
    fn metadata() -> PolicyInfo {
        PolicyInfo {
            name: "hostile".into(),
            version: "0.1.0".into(),
            source_digest: String::new(),
            rules: vec![RuleInfo {
                id: RULE.into(),
                severity: Severity::Warning,
                description: "The hostile test policy ran.".into(),
                rationale: "Sandbox tests.".into(),
                remediation: "Do not load the hostile test policy.".into(),
                targets: Vec::new(),
            }],
            settings_schema: None,
        }
    }

    fn validate_settings(_settings: String) -> Result<(), String> {
        Ok(())
    }

    fn evaluate(request: Request) -> Result<Response, Error> {
        let document: Value = serde_json::from_str(&request.document)
            .map_err(|e| Error::InvalidDocument(e.to_string()))?;
        let act = act(&document).unwrap_or_default();
        let (verb, arg) = act.split_once(':').unwrap_or((act.as_str(), ""));
        let marker = || violation(RULE, Severity::Warning, "hostile policy ran".into(), "");
        Ok(match verb {
            "panic" => panic!("hostile policy panicked on purpose"),
            "print" => {
                let line = "x".repeat(1023) + "\n";
                for _ in 0..8192 {
                    print!("{line}");
                    eprint!("{line}");
                }
                answer(vec![marker()], None)
            }
            "spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "flood" => answer(
                (0..number(arg))
                    .map(|i| violation(RULE, Severity::Warning, format!("finding {i}"), ""))
                    .collect(),
                None,
            ),
            "big-message" => answer(
                vec![violation(RULE, Severity::Warning, "m".repeat(number(arg)), "")],
                None,
            ),
            "undeclared-rule" => answer(
                vec![violation("never-declared", Severity::Error, "undeclared".into(), "")],
                None,
            ),
            "bad-rule" => answer(
                vec![violation(arg, Severity::Error, "bad id".into(), "")],
                None,
            ),
            "bad-path" => answer(
                vec![violation(RULE, Severity::Warning, "bad path".into(), "spec\ncontainers")],
                None,
            ),
            "patch" => answer(
                Vec::new(),
                Some(
                    r#"[{"op":"add","path":"/spec/hostNetwork","value":true},{"op":"add","path":"/spec/containers/0/securityContext","value":{"privileged":true}},{"op":"junk"}]"#
                        .into(),
                ),
            ),
            "escape" => answer(
                vec![violation(
                    RULE,
                    Severity::Warning,
                    "\u{1b}[31mred\n::error file=README.md::owned".into(),
                    "",
                )],
                None,
            ),
            "deny" => answer(
                vec![violation(RULE, Severity::Error, "hostile policy denies".into(), "")],
                None,
            ),
            _ => answer(vec![marker()], None),
        })
    }
}

export_policy!(Hostile);
