//! Checks a pack's settings against its settings schema, inside the policy.
//!
//! Embedders call a policy component directly (jco, wasmtime-py, Rust bindgen!),
//! often without a JSON Schema library of their own, so the component checks its
//! own settings: a setting of the wrong shape must be refused, never read as
//! "not set" (which would silently switch a rule off).
//!
//! A full JSON Schema implementation does not fit the component's size budget
//! (docs/architecture.md), so this module implements a documented subset,
//! [`KEYWORDS`] plus the ignored [`ANNOTATIONS`]. The compiler refuses any pack
//! whose schema uses another keyword ([`check_schema`]), so for every pack that
//! compiles this validator is complete. A schema that reaches the runtime with an
//! unsupported keyword anyway (a hand-made pack) makes every settings value
//! invalid: the policy fails closed.

use serde_json::{Map, Value};
use std::fmt;

/// The JSON Schema keywords the validator enforces.
pub const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "additionalProperties",
    "required",
    "items",
    "enum",
    "const",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
];

/// The keywords a settings schema may use, for messages.
pub fn supported() -> String {
    format!(
        "{}; ignored: {}",
        KEYWORDS.join(", "),
        ANNOTATIONS.join(", ")
    )
}

/// Keywords that carry no constraint and are accepted and ignored.
pub const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "$schema",
    "$comment",
];

/// The type names `type` accepts.
const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "integer", "string",
];

/// One way a settings value breaks its schema, or one way a schema leaves the
/// supported subset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// RFC 6901 JSON pointer into the settings (or, from [`check_schema`], into the
    /// schema); `""` is the whole value.
    pub pointer: String,
    /// What is wrong there (`expected a string, got an integer`), without the place;
    /// [`Display`](fmt::Display) adds it.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "at the top level: {}", self.message)
        } else {
            write!(f, "at `{}`: {}", self.pointer, self.message)
        }
    }
}

/// Joins problems into one line, the form `validate-settings` and
/// `invalid-settings` return.
pub fn render(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

fn push(out: &mut Vec<Problem>, pointer: &str, message: impl Into<String>) {
    out.push(Problem {
        pointer: pointer.to_string(),
        message: message.into(),
    });
}

fn child(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", token.replace('~', "~0").replace('/', "~1"))
}

/// Checks that `schema` stays within the supported subset and that each keyword's
/// value has the shape JSON Schema gives it. Pointers are into the schema. An
/// empty answer means [`validate`] enforces every constraint the schema states.
pub fn check_schema(schema: &Value) -> Vec<Problem> {
    let mut out = Vec::new();
    check_at(schema, "", &mut out);
    out
}

fn check_at(schema: &Value, at: &str, out: &mut Vec<Problem>) {
    let map = match schema {
        Value::Bool(_) => return,
        Value::Object(m) => m,
        _ => return push(out, at, "a schema must be an object or a boolean"),
    };
    for (key, value) in map {
        let here = child(at, key);
        match key.as_str() {
            "type" => {
                let names: Vec<&Value> = match value {
                    Value::Array(a) if !a.is_empty() => a.iter().collect(),
                    Value::Array(_) => {
                        push(out, &here, "`type` needs at least one type");
                        continue;
                    }
                    v => vec![v],
                };
                for n in names {
                    if !n.as_str().is_some_and(|n| TYPES.contains(&n)) {
                        push(
                            out,
                            &here,
                            format!(
                                "`type` must name {} (or be a list of them), got {n}",
                                TYPES.join(", ")
                            ),
                        );
                    }
                }
            }
            "properties" => match value {
                Value::Object(props) => {
                    for (name, sub) in props {
                        check_at(sub, &child(&here, name), out);
                    }
                }
                _ => push(out, &here, "`properties` must be an object of schemas"),
            },
            "additionalProperties" | "items" => check_at(value, &here, out),
            "required" => {
                if !value
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string))
                {
                    push(out, &here, "`required` must be a list of field names");
                }
            }
            "enum" => {
                if !value.is_array() {
                    push(out, &here, "`enum` must be a list of values");
                }
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" => {
                if value.as_u64().is_none() {
                    push(
                        out,
                        &here,
                        format!("`{key}` must be a non-negative integer"),
                    );
                }
            }
            "pattern" => match value.as_str().map(regex_lite::Regex::new) {
                Some(Ok(_)) => {}
                Some(Err(e)) => push(
                    out,
                    &here,
                    format!(
                        "`pattern` is not a regular expression the policy can check \
                         (Rust `regex-lite` syntax: no look-around, no backreferences, \
                         no Unicode classes): {e}"
                    ),
                ),
                None => push(out, &here, "`pattern` must be a string"),
            },
            "minimum" | "maximum" => {
                if !value.is_number() {
                    push(out, &here, format!("`{key}` must be a number"));
                }
            }
            "const" => {}
            k if ANNOTATIONS.contains(&k) => {}
            k => push(
                out,
                &here,
                format!("JSON Schema keyword `{k}` is not supported in settings schemas"),
            ),
        }
    }
}

/// Checks `value` against `schema` and returns every problem, in document order.
/// A schema outside the supported subset ([`check_schema`]) refuses every value.
/// A caller that validates many values against one schema builds a [`Schema`] once.
pub fn validate(schema: &Value, value: &Value) -> Vec<Problem> {
    Schema::new(schema.clone()).validate(value)
}

/// A settings schema checked once against the supported subset, ready to validate
/// any number of values. Checking compiles every `pattern`, which was most of the
/// settings' cost in a fresh policy instance; the runtime keeps one per instance.
#[derive(Clone, Debug)]
pub struct Schema {
    checked: Result<Value, Problem>,
}

impl Schema {
    /// Checks `schema` against the supported subset. A schema outside it is kept as one
    /// problem, naming what is unsupported, that every value then fails with.
    pub fn new(schema: Value) -> Self {
        let unsupported = check_schema(&schema);
        let checked = if unsupported.is_empty() {
            Ok(schema)
        } else {
            Err(Problem {
                pointer: String::new(),
                message: format!(
                    "the policy's settings schema cannot be checked ({}); no settings are accepted",
                    unsupported
                        .iter()
                        .map(|p| format!("schema `{}`: {}", p.pointer, p.message))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            })
        };
        Schema { checked }
    }

    /// Every problem of `value`, in document order: the same answer as [`validate`].
    pub fn validate(&self, value: &Value) -> Vec<Problem> {
        match &self.checked {
            Ok(schema) => {
                let mut out = Vec::new();
                validate_at(schema, value, "", &mut out);
                out
            }
            Err(unsupported) => vec![unsupported.clone()],
        }
    }
}

/// What a value is, for messages: "a string", "an object", ...
pub fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn article(t: &str) -> &'static str {
    match t {
        "null" => "null",
        "boolean" => "a boolean",
        "object" => "an object",
        "array" => "an array",
        "number" => "a number",
        "integer" => "an integer",
        "string" => "a string",
        _ => "a value of an unknown type",
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "number" => v.is_number(),
        // JSON Schema: a number with a zero fractional part is an integer.
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "string" => v.is_string(),
        _ => false,
    }
}

/// Compares numbers by value (`1` equals `1.0`, as JSON Schema's `enum` and `const` do).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_eq(a, b)))
        }
        _ => a == b,
    }
}

fn plural(n: u64, one: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {one}s")
    }
}

fn validate_at(schema: &Value, value: &Value, at: &str, out: &mut Vec<Problem>) {
    let map: &Map<String, Value> = match schema {
        Value::Bool(true) => return,
        Value::Object(m) => m,
        // `false`, and anything [`check_schema`] refused.
        _ => return push(out, at, "no value is allowed here"),
    };
    if let Some(t) = map.get("type") {
        let names: Vec<&str> = match t {
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            v => v.as_str().into_iter().collect(),
        };
        if !names.iter().any(|n| is_type(value, n)) {
            let expected: Vec<&str> = names.iter().map(|n| article(n)).collect();
            push(
                out,
                at,
                format!(
                    "expected {}, got {}",
                    expected.join(" or "),
                    describe(value)
                ),
            );
            // Other keywords would only repeat the type mismatch.
            return;
        }
    }
    if let Some(options) = map.get("enum").and_then(Value::as_array)
        && !options.iter().any(|o| json_eq(o, value))
    {
        let list: Vec<String> = options.iter().map(|o| format!("`{o}`")).collect();
        push(
            out,
            at,
            format!("expected one of {}, got `{value}`", list.join(", ")),
        );
    }
    if let Some(c) = map.get("const")
        && !json_eq(c, value)
    {
        push(out, at, format!("expected `{c}`, got `{value}`"));
    }
    match value {
        Value::String(s) => {
            // An unanchored search, as in JSON Schema; a pattern that does not compile
            // was refused by `check_schema` and refuses every string.
            if let Some(p) = map.get("pattern").and_then(Value::as_str)
                && !regex_lite::Regex::new(p).is_ok_and(|r| r.is_match(s))
            {
                push(
                    out,
                    at,
                    format!("expected a string matching `{p}`, got `{value}`"),
                );
            }
            let len = s.chars().count() as u64;
            if let Some(min) = map.get("minLength").and_then(Value::as_u64)
                && len < min
            {
                push(
                    out,
                    at,
                    format!("expected at least {}, got {len}", plural(min, "character")),
                );
            }
            if let Some(max) = map.get("maxLength").and_then(Value::as_u64)
                && len > max
            {
                push(
                    out,
                    at,
                    format!("expected at most {}, got {len}", plural(max, "character")),
                );
            }
        }
        Value::Number(n) => {
            // JSON numbers are finite, so `as_f64` always answers; a number that
            // cannot be compared is refused rather than let through.
            let x = n.as_f64();
            let bound = |key: &str| map.get(key).and_then(|b| Some((b, b.as_f64()?)));
            if let Some((min, m)) = bound("minimum")
                && x.is_none_or(|x| x < m)
            {
                push(out, at, format!("expected a number >= {min}, got {n}"));
            }
            if let Some((max, m)) = bound("maximum")
                && x.is_none_or(|x| x > m)
            {
                push(out, at, format!("expected a number <= {max}, got {n}"));
            }
        }
        Value::Array(items) => {
            let len = items.len() as u64;
            if let Some(min) = map.get("minItems").and_then(Value::as_u64)
                && len < min
            {
                push(
                    out,
                    at,
                    format!("expected at least {}, got {len}", plural(min, "item")),
                );
            }
            if let Some(max) = map.get("maxItems").and_then(Value::as_u64)
                && len > max
            {
                push(
                    out,
                    at,
                    format!("expected at most {}, got {len}", plural(max, "item")),
                );
            }
            if let Some(item_schema) = map.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate_at(item_schema, item, &child(at, &i.to_string()), out);
                }
            }
        }
        Value::Object(fields) => validate_object(map, fields, at, out),
        Value::Null | Value::Bool(_) => {}
    }
}

fn validate_object(
    schema: &Map<String, Value>,
    fields: &Map<String, Value>,
    at: &str,
    out: &mut Vec<Problem>,
) {
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                push(out, &child(at, name), "required field is missing");
            }
        }
    }
    for (name, v) in fields {
        let here = child(at, name);
        if let Some(sub) = properties.and_then(|p| p.get(name)) {
            validate_at(sub, v, &here, out);
            continue;
        }
        match schema.get("additionalProperties") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => {
                let known: Vec<&str> = properties
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                let message = if known.is_empty() {
                    "unknown field; no fields are allowed here".to_string()
                } else {
                    format!("unknown field; expected one of {}", known.join(", "))
                };
                push(out, &here, message);
            }
            Some(extra) => validate_at(extra, v, &here, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The built-in pack's schema (policies/builtin.yaml).
    fn builtin() -> Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "regions": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "allowed": {
                            "description": "Regions",
                            "type": "array",
                            "items": {"type": "string", "minLength": 1}
                        },
                        "allowedGeographies": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1}
                        }
                    }
                }
            }
        })
    }

    /// The rendered problems, sorted by pointer: object fields are visited in the
    /// map's order, which serde_json's `preserve_order` feature changes.
    fn errors(schema: &Value, value: Value) -> String {
        let mut problems = validate(schema, &value);
        problems.sort_by(|a, b| a.pointer.cmp(&b.pointer));
        render(&problems)
    }

    #[test]
    fn valid_settings_have_no_problems() {
        for ok in [
            json!({}),
            json!({"regions": {}}),
            json!({"regions": {"allowed": ["eastus"], "allowedGeographies": ["EU"]}}),
            json!({"regions": {"allowed": []}}),
        ] {
            assert_eq!(errors(&builtin(), ok.clone()), "", "{ok}");
        }
    }

    #[test]
    fn a_wrong_type_names_the_field_and_both_types() {
        assert_eq!(
            errors(&builtin(), json!({"regions": "eastus"})),
            "at `/regions`: expected an object, got a string"
        );
        assert_eq!(
            errors(&builtin(), json!({"regions": {"allowed": "eastus"}})),
            "at `/regions/allowed`: expected an array, got a string"
        );
        assert_eq!(
            errors(&builtin(), json!([1])),
            "at the top level: expected an object, got an array"
        );
    }

    #[test]
    fn an_unknown_field_lists_the_known_ones() {
        assert_eq!(
            errors(&builtin(), json!({"regions": {"alowed": ["eastus"]}})),
            "at `/regions/alowed`: unknown field; expected one of allowed, allowedGeographies"
        );
        assert_eq!(
            errors(&builtin(), json!({"region": {}})),
            "at `/region`: unknown field; expected one of regions"
        );
    }

    #[test]
    fn every_problem_is_reported_with_escaped_pointers() {
        assert_eq!(
            errors(
                &builtin(),
                json!({"a/b~c": 1, "regions": {"allowed": ["", 3], "allowedGeographies": [""]}})
            ),
            "at `/a~1b~0c`: unknown field; expected one of regions; \
             at `/regions/allowed/0`: expected at least 1 character, got 0; \
             at `/regions/allowed/1`: expected a string, got an integer; \
             at `/regions/allowedGeographies/0`: expected at least 1 character, got 0"
        );
    }

    #[test]
    fn each_keyword_of_the_subset_is_enforced() {
        let schema = json!({
            "type": "object",
            "required": ["mode"],
            "properties": {
                "mode": {"enum": ["strict", "lenient", 1]},
                "version": {"const": 2},
                "name": {"type": "string", "maxLength": 3},
                "day": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
                "count": {"type": "integer", "minimum": 1, "maximum": 10},
                "ratio": {"type": ["number", "null"]},
                "tags": {"type": "array", "minItems": 1, "maxItems": 2},
                "flag": false
            },
            "additionalProperties": {"type": "boolean"}
        });
        assert_eq!(
            errors(
                &schema,
                json!({"mode": 1.0, "version": 2, "ratio": null, "tags": [1], "extra": true,
                       "day": "2027-01-01"})
            ),
            ""
        );
        assert_eq!(
            errors(&schema, json!({"count": 2.0, "ratio": 0.5})),
            "at `/mode`: required field is missing"
        );
        assert_eq!(
            errors(
                &schema,
                json!({"mode": "x", "version": 3, "name": "long", "count": 11, "ratio": "1",
                       "tags": [], "flag": 1, "extra": "no", "day": "2027-1-1"})
            ),
            [
                "at `/count`: expected a number <= 10, got 11",
                "at `/day`: expected a string matching `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`, got `\"2027-1-1\"`",
                "at `/extra`: expected a boolean, got a string",
                "at `/flag`: no value is allowed here",
                "at `/mode`: expected one of `\"strict\"`, `\"lenient\"`, `1`, got `\"x\"`",
                "at `/name`: expected at most 3 characters, got 4",
                "at `/ratio`: expected a number or null, got a string",
                "at `/tags`: expected at least 1 item, got 0",
                "at `/version`: expected `2`, got `3`",
            ]
            .join("; ")
        );
        assert_eq!(
            errors(&schema, json!({"mode": 1, "count": 0.5, "tags": [1, 2, 3]})),
            "at `/count`: expected an integer, got a number; \
             at `/tags`: expected at most 2 items, got 3"
        );
        assert_eq!(
            errors(&schema, json!({"mode": 1, "count": 0})),
            "at `/count`: expected a number >= 1, got 0"
        );
    }

    #[test]
    fn the_subset_is_checked_with_schema_pointers() {
        assert!(check_schema(&builtin()).is_empty());
        let problems = check_schema(&json!({
            "type": "object",
            "title": "t",
            "properties": {
                "a": {"type": "string", "format": "date"},
                "b": {"type": "text"},
                "c": {"pattern": "(?=x)"},
                "d": {"pattern": "^[a-z]+$"}
            },
            "required": "a",
            "anyOf": [],
            "items": {"minItems": -1}
        }));
        let mut at: Vec<&str> = problems.iter().map(|p| p.pointer.as_str()).collect();
        at.sort_unstable();
        assert_eq!(
            at,
            [
                "/anyOf",
                "/items/minItems",
                "/properties/a/format",
                "/properties/b/type",
                "/properties/c/pattern",
                "/required"
            ]
        );
        assert!(
            problems.iter().any(|p| p.pointer == "/anyOf"
                && p.message
                    .starts_with("JSON Schema keyword `anyOf` is not supported")),
            "{problems:?}"
        );
    }

    #[test]
    fn a_schema_outside_the_subset_refuses_every_value() {
        let problems = validate(&json!({"type": "object", "oneOf": []}), &json!({}));
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0]
                .message
                .contains("settings schema cannot be checked"),
            "{}",
            problems[0].message
        );
    }

    #[test]
    fn a_schema_checked_once_answers_every_value_as_validate_does() {
        let values = [
            json!({}),
            json!({"regions": {"allowed": ["eastus"]}}),
            json!({"regions": "eastus"}),
            json!({"region": {}}),
            json!([1]),
        ];
        for schema in [builtin(), json!({"type": "object", "oneOf": []})] {
            let checked = Schema::new(schema.clone());
            for value in &values {
                // Twice: a checked schema holds no state between values.
                for _ in 0..2 {
                    assert_eq!(checked.validate(value), validate(&schema, value), "{value}");
                }
            }
        }
    }
}
