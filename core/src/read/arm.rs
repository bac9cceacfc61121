//! ARM templates (and Bicep, which the host translates into the same shape) to compute-model
//! resources.
//!
//! Three document shapes are recognised:
//! - a deployment template: `$schema` naming `deploymentTemplate.json`, or a `resources` list
//!   (or, in `languageVersion` 2.0, a map) whose entries carry `type` and `apiVersion`;
//! - a bare ARM REST resource body: `type` (`Microsoft.…/…`) and `properties`;
//! - an Azure REST API specification example: the request body at `/parameters/parameters`,
//!   its resource type taken from a response body.
//!
//! Values are read through the template's expressions. Literal expressions are resolved:
//! `[parameters('x')]` (the parameter's `defaultValue`), `[variables('y')]`, `concat`,
//! `format`, `toLower`/`toUpper`, `if`, `equals`, `not`/`and`/`or`, `empty`, `string`/`int`/
//! `bool`, `json`, `coalesce`, property access and indexing. Anything that is only known at
//! deploy time (`resourceGroup()`, `reference()`, `copyIndex()`, a parameter without a default)
//! is **unresolved**: the model field stays `null`, its name is listed in
//! [`Resource::unresolved`] and its provenance still points at the field that uses it, so no
//! rule guesses a value. A resource whose `condition` resolves to `false` is not deployed and
//! gives nothing. Nested deployments (`Microsoft.Resources/deployments` with an inline
//! `template`) are followed with ARM's scoping: `inner` scope gets the parameters passed to it,
//! evaluated in the outer scope; the default `outer` scope shares the parent's.

use super::common::{escape, int_of, merge_labels, resolve_intent, set_region, set_sku, set_zones};
use crate::compute::Resource;
use crate::read::common::At;
use crate::region;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// Deepest nesting of deployments, variables referring to variables and expression calls that
/// is followed; deeper references are treated as unresolved (they are never legitimate).
const MAX_DEPTH: usize = 32;

/// Most items a `range()` or a `[for ...]` expression is evaluated for; a longer one is
/// unresolved rather than expanded.
const MAX_ITEMS: usize = 1024;

const COMPUTES: &str = "microsoft.machinelearningservices/workspaces/computes";
const WORKSPACES: &str = "microsoft.machinelearningservices/workspaces";
const CLUSTERS: &str = "microsoft.containerservice/managedclusters";
const POOLS: &str = "microsoft.containerservice/managedclusters/agentpools";
const DEPLOYMENTS: &str = "microsoft.resources/deployments";
const VMS: &str = "microsoft.compute/virtualmachines";
const SCALE_SETS: &str = "microsoft.compute/virtualmachinescalesets";

/// Whether `doc` looks like an ARM template, an ARM REST body or a REST specification example.
pub fn recognise(doc: &Value) -> bool {
    let Some(obj) = doc.as_object() else {
        return false;
    };
    let schema = obj
        .get("$schema")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if schema.contains("deploymentTemplate.json") {
        return true;
    }
    if is_template(doc) {
        return true;
    }
    if rest_example_type(doc).is_some() {
        return true;
    }
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or_default();
    ty.to_ascii_lowercase().starts_with("microsoft.")
        && ty.contains('/')
        && obj.get("properties").is_some_and(Value::is_object)
}

/// Evaluates `value` (a JSON value whose strings may be ARM expressions, as in a template) in
/// the scope of `template`'s parameters (their `defaultValue`) and variables: the value, or
/// `None` when any part is known only at deploy time. The host binds the parameters a Bicep
/// module call passes with it.
pub fn evaluate(template: &Value, value: &Value) -> Option<Value> {
    Scope::from_template(template)
        .value(value, 0)
        .and_then(known)
}

fn is_template(doc: &Value) -> bool {
    let resource = |r: &Value| {
        r.get("type").is_some_and(Value::is_string)
            && r.get("apiVersion").is_some_and(Value::is_string)
    };
    match doc.get("resources") {
        Some(Value::Array(list)) => !list.is_empty() && list.iter().all(resource),
        Some(Value::Object(map)) => !map.is_empty() && map.values().all(resource),
        _ => false,
    }
}

/// The resource type of an Azure REST API specification example (`parameters.api-version`,
/// request body `parameters.parameters`, `responses.<code>.body.type`).
fn rest_example_type(doc: &Value) -> Option<String> {
    doc.at("/parameters/api-version")?;
    doc.at("/parameters/parameters").filter(|v| v.is_object())?;
    let Some(Value::Object(responses)) = doc.get("responses") else {
        return None;
    };
    responses
        .values()
        .find_map(|r| r.at("/body/type").and_then(Value::as_str))
        .map(str::to_string)
}

/// Normalises an ARM document. Call [`recognise`] first (or know the source is ARM/Bicep).
pub fn normalize(doc: &Value) -> Vec<Resource> {
    let mut walk = Walk::default();
    if let Some(ty) = rest_example_type(doc) {
        if let Some(body) = doc.at("/parameters/parameters") {
            let name = [
                "computeName",
                "agentPoolName",
                "resourceName",
                "workspaceName",
            ]
            .iter()
            .find_map(|k| doc.at(&format!("/parameters/{k}")).and_then(Value::as_str))
            .unwrap_or("<unnamed>")
            .to_string();
            let mut body = body.clone();
            if let Some(m) = body.as_object_mut() {
                m.insert("type".into(), Value::String(ty));
                m.entry("name").or_insert(Value::String(name));
            }
            let scope = Scope::default();
            walk.resource(&body, "/parameters/parameters", &scope, 0, None);
        }
    } else if is_template(doc) || doc.get("$schema").is_some() {
        walk.template(doc, "", &Scope::from_template(doc), 0);
    } else {
        walk.resource(doc, "", &Scope::default(), 0, None);
    }
    walk.finish()
}

// ---------------------------------------------------------------------------
// Expressions

/// A parsed ARM template expression.
#[derive(Clone, Debug, PartialEq)]
enum Expr {
    Str(String),
    Int(i64),
    Call(String, Vec<Expr>),
    Prop(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Canonical text: the same expression written with other spacing or case reads the same.
    fn canonical(&self) -> String {
        match self {
            Expr::Str(s) => format!("'{}'", s.replace('\'', "''")),
            Expr::Int(i) => i.to_string(),
            Expr::Call(f, args) => format!(
                "{}({})",
                f.to_ascii_lowercase(),
                args.iter()
                    .map(Expr::canonical)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Expr::Prop(e, p) => format!("{}.{p}", e.canonical()),
            Expr::Index(e, i) => format!("{}[{}]", e.canonical(), i.canonical()),
        }
    }
}

/// `Some(expression text)` when `s` is an ARM expression (`[...]` but not the `[[` escape).
fn expression_text(s: &str) -> Option<&str> {
    let t = s.trim();
    if t.starts_with("[[") {
        return None;
    }
    t.strip_prefix('[')?.strip_suffix(']')
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn parse(text: &str) -> Option<Expr> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let e = p.expr(0)?;
        p.ws();
        (p.i == p.s.len()).then_some(e)
    }

    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self, depth: usize) -> Option<Expr> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        let mut e = match *self.s.get(self.i)? {
            b'\'' => {
                self.i += 1;
                let mut out = Vec::new();
                loop {
                    let c = *self.s.get(self.i)?;
                    self.i += 1;
                    if c == b'\'' {
                        if self.s.get(self.i) == Some(&b'\'') {
                            self.i += 1;
                            out.push(b'\'');
                        } else {
                            break;
                        }
                    } else {
                        out.push(c);
                    }
                }
                Expr::Str(String::from_utf8(out).ok()?)
            }
            c if c.is_ascii_digit() || c == b'-' => {
                let start = self.i;
                self.i += 1;
                while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                    self.i += 1;
                }
                Expr::Int(
                    std::str::from_utf8(&self.s[start..self.i])
                        .ok()?
                        .parse()
                        .ok()?,
                )
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let name = self.ident()?;
                if !self.eat(b'(') {
                    return None;
                }
                let mut args = Vec::new();
                if !self.eat(b')') {
                    loop {
                        args.push(self.expr(depth + 1)?);
                        if self.eat(b')') {
                            break;
                        }
                        if !self.eat(b',') {
                            return None;
                        }
                    }
                }
                Expr::Call(name, args)
            }
            _ => return None,
        };
        loop {
            if self.eat(b'.') {
                self.ws();
                e = Expr::Prop(Box::new(e), self.ident()?);
            } else if self.eat(b'[') {
                let index = self.expr(depth + 1)?;
                if !self.eat(b']') {
                    return None;
                }
                e = Expr::Index(Box::new(e), Box::new(index));
            } else {
                return Some(e);
            }
        }
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$')
        {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }
}

/// Where a parameter's value comes from.
#[derive(Clone, Debug)]
enum Param {
    /// Already evaluated (passed to an inner-scope deployment); `None` when unresolved.
    Given(Option<Value>),
    /// The template's `defaultValue`, evaluated in the template's own scope when used, and
    /// the JSON pointer where it is written.
    Default(Value, String),
    /// Declared without a default: known only at deploy time.
    Missing,
}

/// Stands, inside an evaluated object or array, for a part known only at deploy time (the
/// rest of the value stays known: a pool whose subnet is a deployment output still has its
/// size). Never a whole value: that is `None`.
const UNKNOWN: &str = "\u{0}computeguard:unresolved";

/// Key, inside an evaluated object, of the map from each of its keys to the JSON pointer
/// where that key's value is written in the document (a variable's object literal), so a
/// value read through variables points at the line that writes it. Removed before any
/// value leaves the evaluator.
const AT: &str = "\u{0}computeguard:at";

fn is_unknown(v: &Value) -> bool {
    v.as_str() == Some(UNKNOWN)
}

/// Whether any part of `v` is known only at deploy time.
fn has_unknown(v: &Value) -> bool {
    match v {
        Value::String(s) => s == UNKNOWN,
        Value::Array(a) => a.iter().any(has_unknown),
        Value::Object(m) => m.iter().any(|(k, x)| k != AT && has_unknown(x)),
        _ => false,
    }
}

/// `v` without the places it was read from.
fn plain(v: Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.into_iter().map(plain).collect()),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| k != AT)
                .map(|(k, x)| (k, plain(x)))
                .collect(),
        ),
        other => other,
    }
}

/// `v` when it is known throughout, as plain JSON.
fn known(v: Value) -> Option<Value> {
    (!has_unknown(&v)).then(|| plain(v))
}

/// A whole value: `None` rather than the unknown marker.
fn whole(v: Value) -> Option<Value> {
    (!is_unknown(&v)).then_some(v)
}

/// `ARM union()` of objects: keys of later objects win; an object under a key present in
/// both is merged the same way (arrays and other values are replaced).
fn merge_objects(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        let existing = into
            .keys()
            .find(|x| x.eq_ignore_ascii_case(&k) && (*x == AT) == (k == AT))
            .cloned();
        match (existing.and_then(|e| into.remove_entry(&e)), v) {
            (Some((key, Value::Object(mut a))), Value::Object(b)) => {
                merge_objects(&mut a, b);
                into.insert(key, Value::Object(a));
            }
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// Parameters and variables visible to expressions (names compared case-insensitively).
#[derive(Clone, Debug, Default)]
struct Scope {
    params: BTreeMap<String, Param>,
    /// Each variable's value and the JSON pointer where it is written.
    vars: BTreeMap<String, (Value, String)>,
    /// Distinguishes scopes, so two `parameters('x')` of different inner deployments differ.
    id: usize,
    /// The items of the `forEach` loops being evaluated, innermost last: the item's and the
    /// index's names, the item and its index.
    loops: RefCell<Vec<(String, String, Value, usize)>>,
}

impl Scope {
    fn from_template(t: &Value) -> Scope {
        let mut s = Scope::default();
        s.declare(t, "");
        s
    }

    /// Declares the parameters and variables of the template `t`, at the JSON pointer `base`
    /// of the document.
    fn declare(&mut self, t: &Value, base: &str) {
        if let Some(Value::Object(params)) = t.get("parameters") {
            for (k, p) in params {
                let param = match p.get("defaultValue") {
                    Some(d) => Param::Default(
                        d.clone(),
                        format!("{base}/parameters/{}/defaultValue", escape(k)),
                    ),
                    None => Param::Missing,
                };
                self.params.insert(k.to_ascii_lowercase(), param);
            }
        }
        if let Some(Value::Object(vars)) = t.get("variables") {
            for (k, v) in vars {
                self.vars.insert(
                    k.to_ascii_lowercase(),
                    (v.clone(), format!("{base}/variables/{}", escape(k))),
                );
            }
        }
    }

    /// Evaluates a JSON value: expressions are evaluated, containers recursively. `None` when
    /// the value is only known at deploy time; a container with such parts keeps them as
    /// [`UNKNOWN`] (see [`known`]).
    fn value(&self, v: &Value, depth: usize) -> Option<Value> {
        self.value_at(v, None, depth)
    }

    /// [`Scope::value`] of the value written at the pointer `at`: the objects it holds record
    /// where each of their keys is written ([`AT`]).
    fn value_at(&self, v: &Value, at: Option<&str>, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        match v {
            Value::String(s) => match expression_text(s) {
                Some(text) => self.eval(&Parser::parse(text)?, depth + 1),
                None => Some(Value::String(
                    s.strip_prefix('[')
                        .filter(|r| r.starts_with('['))
                        .unwrap_or(s)
                        .to_string(),
                )),
            },
            Value::Array(a) => Some(Value::Array(
                a.iter()
                    .enumerate()
                    .map(|(i, x)| {
                        let p = at.map(|p| format!("{p}/{i}"));
                        self.value_at(x, p.as_deref(), depth + 1)
                            .unwrap_or_else(|| Value::String(UNKNOWN.into()))
                    })
                    .collect(),
            )),
            Value::Object(m) => {
                let mut out = Map::new();
                let mut places = Map::new();
                for (k, x) in m.iter().filter(|(k, _)| *k != AT) {
                    let p = at.map(|p| format!("{p}/{}", escape(k)));
                    out.insert(
                        k.clone(),
                        self.value_at(x, p.as_deref(), depth + 1)
                            .unwrap_or_else(|| Value::String(UNKNOWN.into())),
                    );
                    if let Some(p) = p {
                        places.insert(k.clone(), Value::String(p));
                    }
                }
                if !places.is_empty() {
                    out.insert(AT.into(), Value::Object(places));
                }
                Some(Value::Object(out))
            }
            other => Some(other.clone()),
        }
    }

    /// Evaluates an expression: `None` when it is known only at deploy time; an object or
    /// array may hold parts that are ([`UNKNOWN`]).
    fn eval(&self, e: &Expr, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        // An argument as far as it is known (containers may hold unknown parts).
        let part = |a: &Expr| self.eval(a, depth + 1).and_then(whole);
        // An argument known throughout, as plain JSON (what scalar functions need).
        let arg = |args: &[Expr], i: usize| args.get(i).and_then(part).and_then(known);
        let text = |v: Value| match v {
            Value::String(s) => Some(s),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        let int = |args: &[Expr], i: usize| arg(args, i).as_ref().and_then(int_of);
        let lookup = |m: &Map<String, Value>, key: &str| {
            m.iter()
                .find(|(k, _)| *k != AT && k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.clone())
        };
        match e {
            Expr::Str(s) => Some(Value::String(s.clone())),
            Expr::Int(i) => Some(Value::from(*i)),
            Expr::Prop(inner, p) => match part(inner)? {
                Value::Object(m) => lookup(&m, p).and_then(whole),
                _ => None,
            },
            Expr::Index(inner, i) => {
                let v = part(inner)?;
                match (v, part(i).and_then(known)?) {
                    (Value::Array(a), Value::Number(n)) => a
                        .get(usize::try_from(n.as_u64()?).ok()?)
                        .cloned()
                        .and_then(whole),
                    (Value::Object(m), Value::String(k)) => lookup(&m, &k).and_then(whole),
                    _ => None,
                }
            }
            Expr::Call(f, args) => match f.to_ascii_lowercase().as_str() {
                "parameters" => {
                    let name = text(arg(args, 0)?)?.to_ascii_lowercase();
                    match self.params.get(&name)? {
                        Param::Given(v) => v.clone(),
                        Param::Default(d, at) => self.value_at(d, Some(at), depth + 1),
                        Param::Missing => None,
                    }
                }
                "variables" => {
                    let name = text(arg(args, 0)?)?.to_ascii_lowercase();
                    let (v, at) = self.vars.get(&name)?;
                    self.value_at(v, Some(at), depth + 1)
                }
                "concat" => {
                    let vals = args.iter().map(part).collect::<Option<Vec<_>>>()?;
                    if vals.iter().all(Value::is_array) {
                        Some(Value::Array(
                            vals.into_iter()
                                .flat_map(|v| v.as_array().cloned().unwrap_or_default())
                                .collect(),
                        ))
                    } else {
                        vals.into_iter()
                            .map(|v| known(v).and_then(text))
                            .collect::<Option<String>>()
                            .map(Value::String)
                    }
                }
                "format" => {
                    let fmt = text(arg(args, 0)?)?;
                    let vals = (1..args.len())
                        .map(|i| arg(args, i).and_then(text))
                        .collect::<Option<Vec<_>>>()?;
                    format_string(&fmt, &vals).map(Value::String)
                }
                "tolower" => Some(Value::String(text(arg(args, 0)?)?.to_lowercase())),
                "toupper" => Some(Value::String(text(arg(args, 0)?)?.to_uppercase())),
                "string" => Some(Value::String(match arg(args, 0)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                })),
                "int" => int_of(&arg(args, 0)?).map(Value::from),
                "bool" => match arg(args, 0)? {
                    Value::Bool(b) => Some(Value::Bool(b)),
                    Value::String(s) => s.parse::<bool>().ok().map(Value::Bool),
                    Value::Number(n) => Some(Value::Bool(n.as_i64()? != 0)),
                    _ => None,
                },
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                "null" => Some(Value::Null),
                "json" => serde_json::from_str(&text(arg(args, 0)?)?).ok(),
                "if" => match arg(args, 0)? {
                    Value::Bool(true) => args.get(1).and_then(part),
                    Value::Bool(false) => args.get(2).and_then(part),
                    _ => None,
                },
                "equals" => Some(Value::Bool(arg(args, 0)? == arg(args, 1)?)),
                "not" => Some(Value::Bool(!arg(args, 0)?.as_bool()?)),
                "and" | "or" => {
                    // One known `false` decides `and` (one `true` decides `or`), whatever
                    // the others are; otherwise every operand must be known.
                    let decisive = !f.eq_ignore_ascii_case("and");
                    let vals: Vec<Option<bool>> = args
                        .iter()
                        .map(|a| part(a).and_then(known)?.as_bool())
                        .collect();
                    if vals.contains(&Some(decisive)) {
                        Some(Value::Bool(decisive))
                    } else if vals.iter().all(Option::is_some) {
                        Some(Value::Bool(!decisive))
                    } else {
                        None
                    }
                }
                "empty" => Some(Value::Bool(match args.first().and_then(part)? {
                    Value::Null => true,
                    Value::String(s) => s.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    Value::Object(m) => m.keys().all(|k| k == AT),
                    _ => false,
                })),
                "length" => match args.first().and_then(part)? {
                    Value::Array(a) => Some(Value::from(a.len())),
                    Value::Object(m) => Some(Value::from(m.keys().filter(|k| *k != AT).count())),
                    Value::String(s) => Some(Value::from(s.chars().count())),
                    _ => None,
                },
                "coalesce" => args
                    .iter()
                    .map(part)
                    .find(|v| !matches!(v, Some(Value::Null)))
                    .flatten(),
                "createarray" => Some(Value::Array(
                    args.iter()
                        .map(|a| part(a).unwrap_or_else(|| Value::String(UNKNOWN.into())))
                        .collect(),
                )),
                "createobject" => {
                    let mut m = Map::new();
                    for pair in args.chunks(2) {
                        let key = text(part(pair.first()?).and_then(known)?)?;
                        if key == AT {
                            return None;
                        }
                        let v = pair
                            .get(1)
                            .and_then(part)
                            .unwrap_or_else(|| Value::String(UNKNOWN.into()));
                        m.insert(key, v);
                    }
                    Some(Value::Object(m))
                }
                // `array(x)`: an array as it is, anything else as its only item.
                "array" => match args.first().and_then(part)? {
                    Value::Array(a) => Some(Value::Array(a)),
                    other => Some(Value::Array(vec![other])),
                },
                "union" => {
                    let vals = args.iter().map(part).collect::<Option<Vec<_>>>()?;
                    if vals.iter().all(Value::is_object) {
                        let mut out = Map::new();
                        for v in vals {
                            if let Value::Object(m) = v {
                                merge_objects(&mut out, m);
                            }
                        }
                        Some(Value::Object(out))
                    } else if vals.iter().all(Value::is_array) {
                        // Distinct items in order: which are equal must be known.
                        let mut out: Vec<Value> = Vec::new();
                        for v in vals {
                            for item in v.as_array().cloned().unwrap_or_default() {
                                let item = known(item)?;
                                if !out.contains(&item) {
                                    out.push(item);
                                }
                            }
                        }
                        Some(Value::Array(out))
                    } else {
                        None
                    }
                }
                "contains" => match (arg(args, 0)?, arg(args, 1)?) {
                    (Value::Array(a), x) => Some(Value::Bool(a.contains(&x))),
                    (Value::Object(m), Value::String(k)) => {
                        Some(Value::Bool(m.keys().any(|x| x.eq_ignore_ascii_case(&k))))
                    }
                    (Value::String(s), x) => Some(Value::Bool(s.contains(&text(x)?))),
                    _ => None,
                },
                "greater" | "less" | "greaterorequals" | "lessorequals" => {
                    let ord = match (arg(args, 0)?, arg(args, 1)?) {
                        (Value::String(a), Value::String(b)) => a.cmp(&b),
                        (a, b) => int_of(&a)?.cmp(&int_of(&b)?),
                    };
                    let f = f.to_ascii_lowercase();
                    Some(Value::Bool(match f.as_str() {
                        "greater" => ord.is_gt(),
                        "less" => ord.is_lt(),
                        "greaterorequals" => ord.is_ge(),
                        _ => ord.is_le(),
                    }))
                }
                "add" | "sub" | "mul" | "div" | "mod" => {
                    let (a, b) = (int(args, 0)?, int(args, 1)?);
                    match f.to_ascii_lowercase().as_str() {
                        "add" => a.checked_add(b),
                        "sub" => a.checked_sub(b),
                        "mul" => a.checked_mul(b),
                        "div" => a.checked_div(b),
                        _ => a.checked_rem(b),
                    }
                    .map(Value::from)
                }
                "min" | "max" => {
                    let vals = (0..args.len())
                        .map(|i| int(args, i))
                        .collect::<Option<Vec<_>>>()?;
                    if f.eq_ignore_ascii_case("min") {
                        vals.into_iter().min()
                    } else {
                        vals.into_iter().max()
                    }
                    .map(Value::from)
                }
                "take" | "skip" => {
                    let n = usize::try_from(int(args, 1)?.max(0)).ok()?;
                    let take = f.eq_ignore_ascii_case("take");
                    match args.first().and_then(part)? {
                        Value::Array(a) => Some(Value::Array(if take {
                            a.into_iter().take(n).collect()
                        } else {
                            a.into_iter().skip(n).collect()
                        })),
                        v => {
                            let s = text(known(v)?)?;
                            Some(Value::String(if take {
                                s.chars().take(n).collect()
                            } else {
                                s.chars().skip(n).collect()
                            }))
                        }
                    }
                }
                "first" | "last" => match args.first().and_then(part)? {
                    Value::Array(a) => {
                        let item = if f.eq_ignore_ascii_case("first") {
                            a.into_iter().next()
                        } else {
                            a.into_iter().last()
                        };
                        item.and_then(whole)
                    }
                    v => {
                        let s = text(known(v)?)?;
                        let c = if f.eq_ignore_ascii_case("first") {
                            s.chars().next()
                        } else {
                            s.chars().last()
                        };
                        Some(Value::String(c.map(String::from).unwrap_or_default()))
                    }
                },
                "range" => {
                    let (start, count) = (int(args, 0)?, int(args, 1)?);
                    let count = usize::try_from(count).ok().filter(|c| *c <= MAX_ITEMS)?;
                    Some(Value::Array(
                        (0..count)
                            .map(|i| i64::try_from(i).ok().and_then(|i| start.checked_add(i)))
                            .map(|v| v.map(Value::from))
                            .collect::<Option<Vec<_>>>()?,
                    ))
                }
                // A Bicep `[for x in list: body]` (the host writes it so): the body once per
                // item, with `loopItem('x')` / `loopIndex('i')` bound; with a filter (fifth
                // argument), the items whose filter is true. A filter that cannot be
                // evaluated leaves which items there are unknown.
                "foreach" => {
                    let Value::Array(items) = args.first().and_then(part)? else {
                        return None;
                    };
                    if items.len() > MAX_ITEMS {
                        return None;
                    }
                    let item_name = text(arg(args, 1)?)?;
                    let index_name = text(arg(args, 2)?)?;
                    let mut out = Vec::new();
                    for (i, item) in items.into_iter().enumerate() {
                        self.loops.borrow_mut().push((
                            item_name.clone(),
                            index_name.clone(),
                            item,
                            i,
                        ));
                        let keep = match args.get(4) {
                            Some(filter) => part(filter).and_then(known).and_then(|v| v.as_bool()),
                            None => Some(true),
                        };
                        let body = (keep == Some(true)).then(|| {
                            args.get(3)
                                .and_then(part)
                                .unwrap_or_else(|| Value::String(UNKNOWN.into()))
                        });
                        self.loops.borrow_mut().pop();
                        match keep {
                            None => return None,
                            Some(_) => out.extend(body),
                        }
                    }
                    Some(Value::Array(out))
                }
                "loopitem" | "loopindex" => {
                    let name = text(arg(args, 0)?)?;
                    let loops = self.loops.borrow();
                    if f.eq_ignore_ascii_case("loopitem") {
                        loops
                            .iter()
                            .rev()
                            .find(|(n, ..)| *n == name)
                            .and_then(|(_, _, v, _)| whole(v.clone()))
                    } else {
                        loops
                            .iter()
                            .rev()
                            .find(|(_, n, ..)| *n == name)
                            .map(|(.., i)| Value::from(*i))
                    }
                }
                // resourceGroup(), subscription(), reference(), resourceId(), copyIndex(),
                // uniqueString(), utcNow(), ...: known only at deploy time.
                _ => None,
            },
        }
    }
}

/// .NET composite formatting as ARM's `format()` uses it, for `{0}`-style items.
fn format_string(fmt: &str, vals: &[String]) -> Option<String> {
    let mut out = String::new();
    let mut chars = fmt.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let mut item = String::new();
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                    item.push(d);
                }
                let index: usize = item.split([',', ':']).next()?.trim().parse().ok()?;
                out.push_str(vals.get(index)?);
            }
            c => out.push(c),
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------
// Walking templates

/// A workspace or cluster that computes may belong to.
#[derive(Debug)]
struct Parent {
    /// Resolved name, or `<scope>:<canonical expression>` for a name known only at deploy time.
    key: String,
    region: Option<String>,
    region_unresolved: bool,
    region_ptr: String,
    display: String,
}

/// A compute resource waiting for its parent.
struct Pending {
    resource: Resource,
    parent_key: Option<String>,
    parent_index: Option<usize>,
}

#[derive(Default)]
struct Walk {
    parents: Vec<Parent>,
    pending: Vec<Pending>,
    scopes: usize,
}

/// One resource read through a scope: its values with expressions evaluated, the JSON
/// pointers (into the document) of the values that are known only at deploy time, and where
/// the values read through variables and parameters are written.
#[derive(Default)]
pub(super) struct Resolved {
    pub(super) value: Value,
    pub(super) unresolved: BTreeSet<String>,
    /// Pointer of a value within the resource -> pointer where the document writes it, for
    /// values that an expression brings from elsewhere (`properties: aksProperties` reads
    /// the pool's size from the variable that writes it).
    pub(super) origins: BTreeMap<String, String>,
}

impl Resolved {
    /// Where the document writes the value at `ptr` (a pointer within the resource): the
    /// place a variable or parameter writes it, else `ptr` itself.
    pub(super) fn source(&self, ptr: &str) -> String {
        let mut prefix = ptr;
        loop {
            if let Some(o) = self.origins.get(prefix) {
                return format!("{o}{}", &ptr[prefix.len()..]);
            }
            match prefix.rfind('/') {
                Some(i) => prefix = &prefix[..i],
                None => return ptr.to_string(),
            }
        }
    }

    /// The pointer, `ptr` or one of its ancestors, whose value is known only at deploy
    /// time, if any: then what `ptr` holds is not known.
    fn unresolved_at(&self, ptr: &str) -> Option<String> {
        let mut prefix = ptr;
        loop {
            if self.unresolved.contains(prefix) {
                return Some(prefix.to_string());
            }
            prefix = &prefix[..prefix.rfind('/')?];
        }
    }
}

fn resolve_tree(v: &Value, ptr: &str, scope: &Scope, out: &mut Resolved, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        out.unresolved.insert(ptr.to_string());
        return Value::Null;
    }
    match v {
        Value::String(s) if expression_text(s).is_some() => match scope.value(v, 0) {
            Some(x) => settle(x, ptr, out),
            None => {
                out.unresolved.insert(ptr.to_string());
                Value::Null
            }
        },
        Value::String(s) => Value::String(
            s.strip_prefix('[')
                .filter(|r| r.starts_with('['))
                .unwrap_or(s)
                .to_string(),
        ),
        Value::Array(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, x)| resolve_tree(x, &format!("{ptr}/{i}"), scope, out, depth + 1))
                .collect(),
        ),
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "resources" && k.as_str() != "template")
                .map(|(k, x)| {
                    (
                        k.clone(),
                        resolve_tree(x, &format!("{ptr}/{}", escape(k)), scope, out, depth + 1),
                    )
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// An evaluated value at `ptr` as plain JSON: its parts known only at deploy time become
/// `null` and are listed as unresolved, and where its parts are written is recorded.
fn settle(v: Value, ptr: &str, out: &mut Resolved) -> Value {
    match v {
        Value::String(s) if s == UNKNOWN => {
            out.unresolved.insert(ptr.to_string());
            Value::Null
        }
        Value::Array(a) => Value::Array(
            a.into_iter()
                .enumerate()
                .map(|(i, x)| settle(x, &format!("{ptr}/{i}"), out))
                .collect(),
        ),
        Value::Object(mut m) => {
            if let Some(Value::Object(places)) = m.remove(AT) {
                for (k, at) in places {
                    if let Value::String(at) = at {
                        out.origins.insert(format!("{ptr}/{}", escape(&k)), at);
                    }
                }
            }
            Value::Object(
                m.into_iter()
                    .map(|(k, x)| {
                        let p = format!("{ptr}/{}", escape(&k));
                        (k, settle(x, &p, out))
                    })
                    .collect(),
            )
        }
        other => other,
    }
}

/// The resource's name split into (parent part, own name), resolved where possible.
fn split_name(raw: &Value, scope: &Scope) -> (Option<String>, Option<String>) {
    let Some(s) = raw.as_str() else {
        return (None, None);
    };
    let key_of = |e: &Expr| match scope.eval(e, 0) {
        Some(Value::String(v)) => v,
        _ => format!("{}:{}", scope.id, e.canonical()),
    };
    if let Some(text) = expression_text(s) {
        if let Some(v) = scope
            .value(raw, 0)
            .and_then(|v| v.as_str().map(str::to_string))
        {
            return match v.rsplit_once('/') {
                Some((p, n)) => (Some(p.to_string()), Some(n.to_string())),
                None => (None, Some(v)),
            };
        }
        let Some(expr) = Parser::parse(text) else {
            return (None, None);
        };
        // `format('{0}/{1}', A, B)` and `concat(A, '/', B)`: the parent is A.
        if let Expr::Call(f, args) = &expr {
            let f = f.to_ascii_lowercase();
            if f == "format"
                && args.len() == 3
                && args.first() == Some(&Expr::Str("{0}/{1}".into()))
            {
                let own = name_part(&args[2], scope);
                return (Some(key_of(&args[1])), own);
            }
            if f == "concat" && args.len() == 3 && args.get(1) == Some(&Expr::Str("/".into())) {
                let own = name_part(&args[2], scope);
                return (Some(key_of(&args[0])), own);
            }
        }
        return (None, None);
    }
    match s.rsplit_once('/') {
        Some((p, n)) => (Some(p.to_string()), Some(n.to_string())),
        None => (None, Some(s.to_string())),
    }
}

/// A name segment: its value, or `[expression]` when it is known only at deploy time.
fn name_part(e: &Expr, scope: &Scope) -> Option<String> {
    match scope.eval(e, 0) {
        Some(Value::String(v)) => Some(v),
        _ => Some(format!("[{}]", e.canonical())),
    }
}

/// The key a resource is known by as a parent: resolved name, else its expression.
fn parent_key(raw: &Value, scope: &Scope) -> Option<String> {
    let s = raw.as_str()?;
    match expression_text(s) {
        Some(text) => match scope.value(raw, 0) {
            Some(Value::String(v)) => Some(v),
            _ => Some(format!("{}:{}", scope.id, Parser::parse(text)?.canonical())),
        },
        None => Some(s.to_string()),
    }
}

fn resources_of<'a>(t: &'a Value, base: &str) -> Vec<(String, &'a Value)> {
    match t.get("resources") {
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(i, r)| (format!("{base}/resources/{i}"), r))
            .collect(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, r)| (format!("{base}/resources/{}", escape(k)), r))
            .collect(),
        _ => Vec::new(),
    }
}

impl Walk {
    fn template(&mut self, t: &Value, base: &str, scope: &Scope, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        for (ptr, r) in resources_of(t, base) {
            self.resource(r, &ptr, scope, depth, None);
        }
    }

    /// One resource (and its nested children). `parent`: the index in `self.parents` of the
    /// resource this one is nested in, with the parent's full type.
    fn resource(
        &mut self,
        r: &Value,
        ptr: &str,
        scope: &Scope,
        depth: usize,
        parent: Option<(usize, String)>,
    ) {
        if depth > MAX_DEPTH || !r.is_object() {
            return;
        }
        if let Some(cond) = r.get("condition")
            && scope.value(cond, 0) == Some(Value::Bool(false))
        {
            return;
        }
        let written = r.get("type").and_then(Value::as_str).unwrap_or_default();
        let ty = match &parent {
            Some((_, pty)) if !written.contains('/') => format!("{pty}/{written}"),
            _ => written.to_string(),
        }
        .to_ascii_lowercase();
        let mut res = Resolved::default();
        let value = resolve_tree(r, ptr, scope, &mut res, 0);
        res.value = value;
        let before = self.pending.len();
        let existing = r.get("existing") == Some(&Value::Bool(true));
        let (name_parent, own_name) = split_name(r.get("name").unwrap_or(&Value::Null), scope);
        let name = own_name
            .or_else(|| {
                r.get("symbolicName")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .or_else(|| r.get("name").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| "<unnamed>".into());
        let parent_index = parent.as_ref().map(|(i, _)| *i);
        let mut this_parent = None;
        match ty.as_str() {
            DEPLOYMENTS => {
                if let Some(inner) = r.at("/properties/template") {
                    let inner_ptr = format!("{ptr}/properties/template");
                    let inner_scope = r
                        .at("/properties/expressionEvaluationOptions/scope")
                        .and_then(Value::as_str)
                        .is_some_and(|s| s.eq_ignore_ascii_case("inner"));
                    if inner_scope {
                        self.scopes += 1;
                        let mut s = Scope {
                            id: self.scopes,
                            ..Scope::default()
                        };
                        s.declare(inner, &inner_ptr);
                        if let Some(Value::Object(passed)) = r.at("/properties/parameters") {
                            for (k, p) in passed {
                                if let Some(v) = p.get("value") {
                                    s.params.insert(
                                        k.to_ascii_lowercase(),
                                        Param::Given(scope.value(v, 0)),
                                    );
                                } else {
                                    // A Key Vault reference or another deploy-time value.
                                    s.params.insert(k.to_ascii_lowercase(), Param::Given(None));
                                }
                            }
                        }
                        self.template(inner, &inner_ptr, &s, depth + 1);
                    } else {
                        self.template(inner, &inner_ptr, scope, depth + 1);
                    }
                }
            }
            WORKSPACES | CLUSTERS => {
                let key = parent_key(r.get("name").unwrap_or(&Value::Null), scope)
                    .unwrap_or_else(|| name.clone());
                let loc_ptr = format!("{ptr}/location");
                let region = res
                    .value
                    .get("location")
                    .and_then(Value::as_str)
                    .map(region::normalize);
                let what = if ty == WORKSPACES {
                    "workspace"
                } else {
                    "cluster"
                };
                let display = match &region {
                    Some(reg) => format!("{what} {name} in {reg}"),
                    None => format!("{what} {name}"),
                };
                self.parents.push(Parent {
                    key,
                    region,
                    region_unresolved: res.unresolved.contains(&loc_ptr),
                    region_ptr: res.source(&loc_ptr),
                    display,
                });
                this_parent = Some(self.parents.len() - 1);
                if ty == WORKSPACES {
                    let mut ws = base_resource(&res, ptr, "aml-workspace", "workspace", &name);
                    read_location(&mut ws, &res, ptr, "/location");
                    resolve_intent(&mut ws, "unknown");
                    self.pending.push(Pending {
                        resource: ws,
                        parent_key: None,
                        parent_index: None,
                    });
                } else {
                    for r in cluster(&res, ptr, &name) {
                        self.pending.push(Pending {
                            resource: r,
                            parent_key: None,
                            parent_index: None,
                        });
                    }
                }
            }
            COMPUTES => {
                if let Some(c) = compute(&res, ptr, &name) {
                    self.pending.push(Pending {
                        resource: c,
                        parent_key: name_parent,
                        parent_index,
                    });
                }
            }
            POOLS => {
                let mut pool = base_resource(&res, ptr, "aks-node-pool", "agentPool", &name);
                if let Some(p) = res.value.get("properties") {
                    read_agent_pool(&mut pool, p, &format!("{ptr}/properties"));
                }
                mark_unresolved(&mut pool, &res, &format!("{ptr}/properties"), POOL_FIELDS);
                self.pending.push(Pending {
                    resource: pool,
                    parent_key: name_parent,
                    parent_index,
                });
            }
            VMS | SCALE_SETS => {
                self.pending.push(Pending {
                    resource: virtual_machine(&res, ptr, &name, ty == VMS),
                    parent_key: None,
                    parent_index: None,
                });
            }
            _ => {}
        }
        if existing {
            // `existing`: a reference to a resource deployed elsewhere, not deployed here. It
            // is still the parent its children find (its name, its region if written).
            self.pending.truncate(before);
        }
        // What a variable or parameter brought in is located where the document writes it.
        for p in self.pending.iter_mut().skip(before) {
            let r = &mut p.resource;
            r.pointer = res.source(&r.pointer);
            for at in r.fields.values_mut() {
                *at = res.source(at);
            }
        }
        // Child resources declared inside this one (`"type": "computes"`).
        if let Some(Value::Array(children)) = r.get("resources") {
            let full = written.to_string();
            for (i, c) in children.iter().enumerate() {
                let p = this_parent.map(|idx| (idx, full.clone()));
                let p = p.or_else(|| Some((usize::MAX, full.clone())));
                self.resource(c, &format!("{ptr}/resources/{i}"), scope, depth + 1, p);
            }
        }
    }

    fn finish(self) -> Vec<Resource> {
        let Walk {
            parents, pending, ..
        } = self;
        pending
            .into_iter()
            .map(|p| {
                let mut r = p.resource;
                let parent = p.parent_index.and_then(|i| parents.get(i)).or_else(|| {
                    p.parent_key
                        .as_ref()
                        .and_then(|k| parents.iter().find(|x| x.key.eq_ignore_ascii_case(k)))
                });
                if let Some(parent) = parent {
                    if r.kind == "aks-node-pool" {
                        // A pool runs where its cluster runs: its region for the rules
                        // that need one (availability, quota). Not a fact to compare, so
                        // a cluster location known only at deploy time is not reported
                        // again on every pool.
                        if let Some(reg) = &parent.region {
                            r.parent_region = Some(reg.clone());
                            r.fields
                                .insert("parentRegion".into(), parent.region_ptr.clone());
                        }
                    } else if let Some(reg) = &parent.region {
                        r.parent_region = Some(reg.clone());
                        r.fields
                            .insert("parentRegion".into(), parent.region_ptr.clone());
                    } else if parent.region_unresolved {
                        r.unresolved.push("parentRegion".into());
                        r.fields
                            .insert("parentRegion".into(), parent.region_ptr.clone());
                    }
                    r.parent = Some(parent.display.clone());
                }
                r
            })
            .collect()
    }
}

pub(super) fn base_resource(
    res: &Resolved,
    ptr: &str,
    kind: &str,
    source_kind: &str,
    name: &str,
) -> Resource {
    let mut r = Resource {
        kind: kind.into(),
        source_kind: source_kind.into(),
        name: name.to_string(),
        pointer: ptr.to_string(),
        ..Resource::default()
    };
    merge_labels(&mut r, res.value.get("tags"), &format!("{ptr}/tags"));
    r
}

pub(super) fn read_location(r: &mut Resource, res: &Resolved, ptr: &str, rel: &str) {
    let p = format!("{ptr}{rel}");
    if let Some(loc) = res.value.at(rel).and_then(Value::as_str) {
        set_region(r, loc, p);
    } else if res.unresolved.contains(&p) {
        r.unresolved.push("region".into());
        r.fields.insert("region".into(), p);
    }
}

/// Model field -> pointer (relative to the pool's properties) it is read from.
const POOL_FIELDS: &[(&str, &str)] = &[
    ("sku", "/vmSize"),
    ("minNodes", "/minCount"),
    ("maxNodes", "/maxCount"),
    ("autoscale", "/enableAutoScaling"),
    ("instanceCount", "/count"),
    ("osType", "/osType"),
    ("kubernetesVersion", "/orchestratorVersion"),
    ("priority", "/scaleSetPriority"),
    ("gpuInstanceProfile", "/gpuInstanceProfile"),
    ("poolMode", "/mode"),
    ("osSku", "/osSKU"),
    ("gpuDriver", "/gpuProfile/driver"),
    ("taints", "/nodeTaints"),
    ("zones", "/availabilityZones"),
];

/// Records the fields whose source is only known at deploy time, pointing at their use.
fn mark_unresolved(r: &mut Resource, res: &Resolved, base: &str, table: &[(&str, &str)]) {
    for (field, rel) in table {
        let p = format!("{base}{rel}");
        if res.unresolved.contains(&p) {
            if !r.unresolved.iter().any(|f| f == field) {
                r.unresolved.push((*field).to_string());
            }
            r.fields.insert((*field).to_string(), p);
        }
    }
}

fn cluster(res: &Resolved, ptr: &str, name: &str) -> Vec<Resource> {
    let mut c = base_resource(res, ptr, "aks-cluster", "managedCluster", name);
    read_location(&mut c, res, ptr, "/location");
    let version = res
        .value
        .at("/properties/kubernetesVersion")
        .and_then(Value::as_str)
        .map(str::to_string);
    let version_ptr = format!("{ptr}/properties/kubernetesVersion");
    if let Some(v) = &version {
        c.kubernetes_version = Some(v.clone());
        c.fields
            .insert("kubernetesVersion".into(), version_ptr.clone());
    }
    let version_unresolved = res.unresolved.contains(&version_ptr);
    if version_unresolved {
        c.unresolved.push("kubernetesVersion".into());
        c.fields
            .insert("kubernetesVersion".into(), version_ptr.clone());
    }
    resolve_intent(&mut c, "unknown");
    // The node pools: a list whose value (or one of whose items) cannot be evaluated is an
    // unresolved fact of the cluster naming what is written, never a cluster without pools.
    let pools_ptr = format!("{ptr}/properties/agentPoolProfiles");
    let pools = res.value.at("/properties/agentPoolProfiles");
    let open = match pools {
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .find(|(_, p)| !p.is_object())
            .map(|(i, _)| format!("{pools_ptr}/{i}")),
        Some(Value::Null) | None => res.unresolved_at(&pools_ptr),
        // Evaluated into something that is not a list of pools.
        Some(_) => Some(pools_ptr.clone()),
    };
    if let Some(at) = open {
        c.unresolved.push("agentPoolProfiles".into());
        c.fields.insert("agentPoolProfiles".into(), at);
    }
    let c_region = c.region.clone();
    let mut out = vec![c];
    if let Some(Value::Array(pools)) = pools {
        for (i, p) in pools.iter().enumerate().filter(|(_, p)| p.is_object()) {
            let pool_name = p.get("name").and_then(Value::as_str).unwrap_or("<unnamed>");
            let mut pool = base_resource(
                res,
                ptr,
                "aks-node-pool",
                "agentPool",
                &format!("{name}/{pool_name}"),
            );
            pool.labels.clear();
            pool.fields.clear();
            let pp = format!("{ptr}/properties/agentPoolProfiles/{i}");
            pool.pointer.clone_from(&pp);
            // The pool inherits the cluster's Kubernetes version unless it sets its own.
            pool.kubernetes_version = version.clone();
            pool.fields
                .insert("kubernetesVersion".into(), version_ptr.clone());
            if version_unresolved {
                pool.unresolved.push("kubernetesVersion".into());
            }
            // The pool runs in the cluster's region (see `finish`).
            if let Some(reg) = &c_region {
                pool.parent_region = Some(reg.clone());
                pool.fields
                    .insert("parentRegion".into(), format!("{ptr}/location"));
            }
            read_agent_pool(&mut pool, p, &pp);
            mark_unresolved(&mut pool, res, &pp, POOL_FIELDS);
            if pool.kubernetes_version.is_some() {
                pool.unresolved.retain(|f| f != "kubernetesVersion");
            }
            out.push(pool);
        }
    }
    out
}

/// Model field -> pointer (relative to the compute resource) it is read from.
const COMPUTE_FIELDS: &[(&str, &str)] = &[
    ("sku", "/properties/properties/vmSize"),
    (
        "minNodes",
        "/properties/properties/scaleSettings/minNodeCount",
    ),
    (
        "maxNodes",
        "/properties/properties/scaleSettings/maxNodeCount",
    ),
    ("priority", "/properties/properties/vmPriority"),
    ("osType", "/properties/properties/osType"),
];

pub(super) fn compute(res: &Resolved, ptr: &str, name: &str) -> Option<Resource> {
    let v = &res.value;
    let compute_type = v
        .at("/properties/computeType")
        .and_then(Value::as_str)?
        .to_ascii_lowercase();
    let (kind, implied) = match compute_type.as_str() {
        "amlcompute" => ("aml-compute-cluster", "unknown"),
        "computeinstance" => ("aml-compute-instance", "interactive"),
        "kubernetes" | "aks" => ("aml-kubernetes-compute", "unknown"),
        _ => return None,
    };
    let source_kind = v
        .at("/properties/computeType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut r = base_resource(res, ptr, kind, source_kind, name);
    let props = "/properties/properties";
    if let Some(size) = v.at(&format!("{props}/vmSize")).and_then(Value::as_str) {
        set_sku(&mut r, size, format!("{ptr}{props}/vmSize"));
    }
    let int = |rel: &str| v.at(&format!("{props}{rel}")).and_then(int_of);
    if let Some(min) = int("/scaleSettings/minNodeCount") {
        r.min_nodes = Some(min);
        r.fields.insert(
            "minNodes".into(),
            format!("{ptr}{props}/scaleSettings/minNodeCount"),
        );
    }
    if let Some(max) = int("/scaleSettings/maxNodeCount") {
        r.max_nodes = Some(max);
        r.fields.insert(
            "maxNodes".into(),
            format!("{ptr}{props}/scaleSettings/maxNodeCount"),
        );
    }
    if kind == "aml-compute-cluster" {
        // ARM's default minNodeCount is 0; maxNodeCount is required.
        let min = r.min_nodes.unwrap_or(0);
        if let Some(max) = r.max_nodes {
            r.autoscale = Some(max > min);
            r.instance_count = Some(max);
        }
    }
    if let Some(p) = v.at(&format!("{props}/vmPriority")).and_then(Value::as_str) {
        r.priority = Some(if p.eq_ignore_ascii_case("lowpriority") {
            "low-priority".into()
        } else {
            p.to_ascii_lowercase()
        });
        r.fields
            .insert("priority".into(), format!("{ptr}{props}/vmPriority"));
    }
    if let Some(os) = v.at(&format!("{props}/osType")).and_then(Value::as_str) {
        r.os_type = Some(os.to_ascii_lowercase());
        r.fields
            .insert("osType".into(), format!("{ptr}{props}/osType"));
    }
    // Where the nodes run: `computeLocation` when written, else the resource's location.
    if v.at("/properties/computeLocation").is_some() {
        read_location(&mut r, res, ptr, "/properties/computeLocation");
    } else {
        read_location(&mut r, res, ptr, "/location");
    }
    mark_unresolved(&mut r, res, ptr, COMPUTE_FIELDS);
    resolve_intent(&mut r, implied);
    Some(r)
}

/// Model field -> pointer (relative to the resource) it is read from, for a virtual machine
/// and for a scale set.
const VM_FIELDS: &[(&str, &str)] = &[
    ("sku", "/properties/hardwareProfile/vmSize"),
    ("priority", "/properties/priority"),
    ("osType", "/properties/storageProfile/osDisk/osType"),
    ("zones", "/zones"),
];
const SCALE_SET_FIELDS: &[(&str, &str)] = &[
    ("sku", "/sku/name"),
    ("instanceCount", "/sku/capacity"),
    ("priority", "/properties/virtualMachineProfile/priority"),
    (
        "osType",
        "/properties/virtualMachineProfile/storageProfile/osDisk/osType",
    ),
    ("zones", "/zones"),
];

/// A `Microsoft.Compute/virtualMachines` (`vm`) or `virtualMachineScaleSets`
/// (`vm-scale-set`): size, region, instance count, priority and OS.
fn virtual_machine(res: &Resolved, ptr: &str, name: &str, single: bool) -> Resource {
    let (kind, source_kind, table) = if single {
        ("vm", "virtualMachine", VM_FIELDS)
    } else {
        ("vm-scale-set", "virtualMachineScaleSet", SCALE_SET_FIELDS)
    };
    let mut r = base_resource(res, ptr, kind, source_kind, name);
    read_location(&mut r, res, ptr, "/location");
    let v = &res.value;
    let at = |field: &str| {
        table
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, rel)| (*rel, v.at(rel)))
    };
    if let Some((rel, Some(Value::String(size)))) = at("sku") {
        set_sku(&mut r, size, format!("{ptr}{rel}"));
    }
    set_zones(&mut r, v.get("zones"), format!("{ptr}/zones"), |_| true);
    if single {
        r.instance_count = Some(1);
    } else if let Some((rel, Some(n))) = at("instanceCount")
        && let Some(n) = int_of(n)
    {
        r.instance_count = Some(n);
        r.fields
            .insert("instanceCount".into(), format!("{ptr}{rel}"));
    }
    if let Some((rel, Some(Value::String(p)))) = at("priority") {
        r.priority = Some(match p.to_ascii_lowercase().as_str() {
            "spot" => "spot".into(),
            "low" => "low-priority".into(),
            "regular" => "dedicated".into(),
            other => other.to_string(),
        });
        r.fields.insert("priority".into(), format!("{ptr}{rel}"));
    }
    if let Some((rel, Some(Value::String(os)))) = at("osType") {
        r.os_type = Some(os.to_ascii_lowercase());
        r.fields.insert("osType".into(), format!("{ptr}{rel}"));
    }
    mark_unresolved(&mut r, res, ptr, table);
    resolve_intent(&mut r, "unknown");
    r
}

/// An AKS agent pool profile (ARM `agentPoolProfiles[]`, an `agentPools` body, an ASO pool
/// `spec`) into an `aks-node-pool`.
pub(super) fn read_agent_pool(r: &mut Resource, p: &Value, ptr: &str) {
    r.kind = "aks-node-pool".into();
    r.source_kind = "agentPool".into();
    if let Some(size) = p.get("vmSize").and_then(Value::as_str) {
        set_sku(r, size, format!("{ptr}/vmSize"));
    }
    let int = |k: &str| p.get(k).and_then(int_of);
    r.autoscale = p.get("enableAutoScaling").and_then(Value::as_bool);
    if r.autoscale.is_some() {
        r.fields
            .insert("autoscale".into(), format!("{ptr}/enableAutoScaling"));
    }
    if let Some(min) = int("minCount") {
        r.min_nodes = Some(min);
        r.fields
            .insert("minNodes".into(), format!("{ptr}/minCount"));
    }
    if let Some(max) = int("maxCount") {
        r.max_nodes = Some(max);
        r.fields
            .insert("maxNodes".into(), format!("{ptr}/maxCount"));
    }
    r.instance_count = int("count");
    set_zones(
        r,
        p.get("availabilityZones"),
        format!("{ptr}/availabilityZones"),
        |_| true,
    );
    if let Some(os) = p.get("osType").and_then(Value::as_str) {
        r.os_type = Some(os.to_ascii_lowercase());
        r.fields.insert("osType".into(), format!("{ptr}/osType"));
    }
    if let Some(v) = p.get("orchestratorVersion").and_then(Value::as_str) {
        r.kubernetes_version = Some(v.to_string());
        r.fields.insert(
            "kubernetesVersion".into(),
            format!("{ptr}/orchestratorVersion"),
        );
    }
    if let Some(g) = p.get("gpuInstanceProfile").and_then(Value::as_str) {
        r.gpu_instance_profile = Some(g.to_string());
        r.fields.insert(
            "gpuInstanceProfile".into(),
            format!("{ptr}/gpuInstanceProfile"),
        );
    }
    if let Some(m) = p.get("mode").and_then(Value::as_str) {
        r.pool_mode = Some(m.to_ascii_lowercase());
        r.fields.insert("poolMode".into(), format!("{ptr}/mode"));
    }
    // ARM and ASO spell it `osSKU`, `az` output `osSku`.
    if let Some((key, os)) = ["osSKU", "osSku"]
        .iter()
        .find_map(|k| p.get(*k).and_then(Value::as_str).map(|v| (*k, v)))
    {
        r.os_sku = Some(os.to_string());
        r.fields.insert("osSku".into(), format!("{ptr}/{key}"));
    }
    if let Some(d) = p.at("/gpuProfile/driver").and_then(Value::as_str) {
        r.gpu_driver = Some(d.to_ascii_lowercase());
        r.fields
            .insert("gpuDriver".into(), format!("{ptr}/gpuProfile/driver"));
    }
    if let Some(pr) = p.get("scaleSetPriority").and_then(Value::as_str) {
        r.priority = Some(if pr.eq_ignore_ascii_case("spot") {
            "spot".into()
        } else {
            "dedicated".into()
        });
        r.fields
            .insert("priority".into(), format!("{ptr}/scaleSetPriority"));
    }
    if let Some(Value::Array(t)) = p.get("nodeTaints") {
        r.taints = t
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        r.fields
            .insert("taints".into(), format!("{ptr}/nodeTaints"));
    }
    merge_labels(r, p.get("nodeLabels"), &format!("{ptr}/nodeLabels"));
    merge_labels(r, p.get("tags"), &format!("{ptr}/tags"));
    resolve_intent(r, "unknown");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(resources: Value, parameters: Value) -> Value {
        json!({"$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#",
               "contentVersion": "1.0.0.0", "parameters": parameters, "resources": resources})
    }

    #[test]
    fn expressions_parse_and_print_canonically() {
        let e =
            Parser::parse("format( '{0}/{1}', parameters('a'),variables( 'b' ))").expect("present");
        assert_eq!(
            e.canonical(),
            "format('{0}/{1}', parameters('a'), variables('b'))"
        );
        let e = Parser::parse("reference(resourceId('x', 'y'), '2020-10-01').outputs.id.value")
            .expect("present");
        assert!(matches!(e, Expr::Prop(..)));
        assert_eq!(
            Parser::parse("concat('it''s', 1)").expect("present"),
            Expr::Call(
                "concat".into(),
                vec![Expr::Str("it's".into()), Expr::Int(1)]
            )
        );
        assert_eq!(Parser::parse("parameters('a'"), None);
        assert_eq!(Parser::parse("a b"), None);
    }

    #[test]
    fn literal_expressions_resolve_and_deploy_time_ones_do_not() {
        let t = json!({"parameters": {"size": {"type": "string", "defaultValue": "Standard_NC6"},
                                      "loc": {"type": "string", "defaultValue": "[resourceGroup().location]"},
                                      "n": {"type": "int"}},
                       "variables": {"v": "[toUpper(parameters('size'))]", "o": {"k": "[parameters('size')]"}}});
        let s = Scope::from_template(&t);
        let ev = |x: &str| s.value(&json!(x), 0);
        assert_eq!(ev("[parameters('SIZE')]"), Some(json!("Standard_NC6")));
        assert_eq!(ev("[variables('v')]"), Some(json!("STANDARD_NC6")));
        assert_eq!(ev("[variables('o').k]"), Some(json!("Standard_NC6")));
        assert_eq!(ev("[format('{0}-{1}', 'a', 2)]"), Some(json!("a-2")));
        assert_eq!(
            ev("[concat('a', parameters('size'))]"),
            Some(json!("aStandard_NC6"))
        );
        assert_eq!(ev("[if(equals(1, 1), 'x', 'y')]"), Some(json!("x")));
        assert_eq!(
            ev("[[not an expression]"),
            Some(json!("[not an expression]"))
        );
        assert_eq!(ev("[parameters('loc')]"), None);
        assert_eq!(ev("[parameters('n')]"), None);
        assert_eq!(ev("[parameters('undeclared')]"), None);
        assert_eq!(ev("[resourceGroup().location]"), None);
    }

    #[test]
    fn presets_merge_with_union_and_operators_evaluate() {
        let t = json!({"parameters": {"tier": {"type": "string", "defaultValue": "Standard"},
                                      "custom": {"type": "object", "defaultValue": {}},
                                      "on": {"type": "bool", "defaultValue": true},
                                      "open": {"type": "string"}},
                       "variables": {
                           "base": {"vmSize": "Standard_B2s", "count": 1, "nested": {"a": 1, "b": 2}},
                           "presets": {"Standard": {"vmSize": "Standard_D4ds_v5", "nested": {"b": 3}}}}});
        let ev = |x: &str| evaluate(&t, &json!(x));
        // The later object wins, nested objects merge, the preset is picked by a parameter.
        assert_eq!(
            ev(
                "[union(variables('base'), if(and(equals(parameters('tier'), 'Custom'), not(equals(parameters('custom'), createObject()))), parameters('custom'), variables('presets')[parameters('tier')]))]"
            ),
            Some(json!({"vmSize": "Standard_D4ds_v5", "count": 1, "nested": {"a": 1, "b": 3}}))
        );
        assert_eq!(
            ev("[concat(array(variables('base')), createArray())]")
                .map(|v| v.as_array().map(Vec::len)),
            Some(Some(1))
        );
        assert_eq!(ev("[array(createArray(1, 2))]"), Some(json!([1, 2])));
        assert_eq!(
            ev("[union(createArray(1, 2), createArray(2, 3))]"),
            Some(json!([1, 2, 3]))
        );
        assert_eq!(ev("[empty(parameters('custom'))]"), Some(json!(true)));
        assert_eq!(ev("[greater(20, 3)]"), Some(json!(true)));
        assert_eq!(ev("[take('userpool01', 6)]"), Some(json!("userpo")));
        assert_eq!(ev("[length(variables('base'))]"), Some(json!(3)));
        // One known operand decides `and`/`or`; otherwise an unknown one leaves it unknown.
        assert_eq!(ev("[and(false(), parameters('open'))]"), Some(json!(false)));
        assert_eq!(
            ev("[or(parameters('on'), parameters('open'))]"),
            Some(json!(true))
        );
        assert_eq!(ev("[and(true(), equals(parameters('open'), 'x'))]"), None);
        // An object with a part known only at deploy time is not a value for `evaluate`...
        assert_eq!(
            ev("[createObject('a', 1, 'b', resourceGroup().location)]"),
            None
        );
        // ... but its known parts are read by the walk, the rest is unresolved.
        let s = Scope::from_template(&t);
        let mut res = Resolved::default();
        let v = resolve_tree(
            &json!("[union(variables('base'), createObject('subnet', reference('x').id))]"),
            "/p",
            &s,
            &mut res,
            0,
        );
        assert_eq!(v["vmSize"], "Standard_B2s");
        assert_eq!(v["subnet"], Value::Null);
        assert_eq!(res.unresolved.iter().collect::<Vec<_>>(), ["/p/subnet"]);
        // Where each known part is written: the variable's key.
        assert_eq!(res.source("/p/vmSize"), "/variables/base/vmSize");
        assert_eq!(res.source("/p/nested/a"), "/variables/base/nested/a");
        assert_eq!(res.source("/q"), "/q");
    }

    #[test]
    fn for_expressions_evaluate_per_item() {
        let t = json!({"parameters": {"pools": {"type": "array", "defaultValue": [
                           {"name": "a", "size": "Standard_NC6", "on": true},
                           {"name": "b", "size": "Standard_D4ds_v5", "on": false}]},
                       "open": {"type": "array"}}});
        let ev = |x: &str| evaluate(&t, &json!(x));
        assert_eq!(
            ev(
                "[forEach(parameters('pools'), 'p', 'i', createObject('name', concat(loopItem('p').name, string(loopIndex('i'))), 'vmSize', loopItem('p').size))]"
            ),
            Some(
                json!([{"name": "a0", "vmSize": "Standard_NC6"}, {"name": "b1", "vmSize": "Standard_D4ds_v5"}])
            )
        );
        assert_eq!(
            ev("[forEach(parameters('pools'), 'p', '', loopItem('p').name, loopItem('p').on)]"),
            Some(json!(["a"]))
        );
        assert_eq!(
            ev("[forEach(range(1, 3), '', 'i', loopIndex('i'))]"),
            Some(json!([0, 1, 2]))
        );
        assert_eq!(
            ev("[forEach(parameters('open'), 'p', '', loopItem('p'))]"),
            None
        );
        // A filter that cannot be evaluated: which items exist is unknown.
        assert_eq!(
            ev("[forEach(parameters('pools'), 'p', '', loopItem('p'), reference('x').on)]"),
            None
        );
    }

    #[test]
    fn pools_that_cannot_be_evaluated_are_an_unresolved_fact_of_the_cluster() {
        let doc = template(
            json!([{"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
                    "name": "a", "location": "eastus", "properties": {"agentPoolProfiles": "[parameters('pools')]"}},
                   {"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
                    "name": "b", "location": "eastus", "properties": {"agentPoolProfiles": "[createObject('vmSize', 'x')]"}},
                   {"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
                    "name": "c", "location": "eastus", "properties": {"agentPoolProfiles": "[createArray(reference('p'))]"}},
                   {"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
                    "name": "d", "existing": true, "properties": {"agentPoolProfiles": [{"name": "x", "vmSize": "Standard_NC6"}]}}]),
            json!({"pools": {"type": "array"}}),
        );
        let out = crate::read::normalize(&doc, crate::compute::Source::Arm);
        let got: Vec<(&str, &[String], Option<&String>)> = out
            .iter()
            .map(|r| {
                (
                    r.name.as_str(),
                    r.unresolved.as_slice(),
                    r.fields.get("agentPoolProfiles"),
                )
            })
            .collect();
        let open = ["agentPoolProfiles".to_string()];
        assert_eq!(
            got,
            vec![
                (
                    "a",
                    &open[..],
                    Some(&"/resources/0/properties/agentPoolProfiles".to_string())
                ),
                (
                    "b",
                    &open[..],
                    Some(&"/resources/1/properties/agentPoolProfiles".to_string())
                ),
                (
                    "c",
                    &open[..],
                    Some(&"/resources/2/properties/agentPoolProfiles/0".to_string())
                ),
            ],
            "an `existing` cluster is not deployed here"
        );
    }

    #[test]
    fn self_referencing_variables_stop_at_the_depth_limit() {
        let t = json!({"variables": {"a": "[variables('b')]", "b": "[variables('a')]"}});
        assert_eq!(
            Scope::from_template(&t).value(&json!("[variables('a')]"), 0),
            None
        );
    }

    #[test]
    fn aml_compute_reads_parameter_defaults_and_points_at_the_use() {
        let doc = template(
            json!([{"type": "Microsoft.MachineLearningServices/workspaces/computes", "apiVersion": "2024-04-01",
                    "name": "[format('{0}/{1}', parameters('ws'), 'gpu')]", "location": "[parameters('loc')]",
                    "properties": {"computeType": "AmlCompute", "properties": {
                        "vmSize": "[parameters('size')]", "vmPriority": "LowPriority",
                        "scaleSettings": {"minNodeCount": 2, "maxNodeCount": 4}}}}]),
            json!({"ws": {"type": "string"}, "size": {"type": "string", "defaultValue": "Standard_NC6"},
                   "loc": {"type": "string", "defaultValue": "[resourceGroup().location]"}}),
        );
        assert!(recognise(&doc));
        let r = crate::read::normalize(&doc, crate::compute::Source::Unknown).remove(0);
        assert_eq!(
            (r.kind.as_str(), r.name.as_str()),
            ("aml-compute-cluster", "gpu")
        );
        assert_eq!(r.sku.as_deref(), Some("Standard_NC6"));
        assert_eq!(r.fields["sku"], "/resources/0/properties/properties/vmSize");
        assert_eq!(
            (r.min_nodes, r.max_nodes, r.priority.as_deref()),
            (Some(2), Some(4), Some("low-priority"))
        );
        assert_eq!(r.region, None);
        assert_eq!(r.unresolved, vec!["region".to_string()]);
        assert_eq!(r.fields["region"], "/resources/0/location");
    }

    #[test]
    fn unresolved_sku_is_listed_and_left_null() {
        let doc = template(
            json!([{"type": "Microsoft.ContainerService/managedClusters/agentPools", "apiVersion": "2024-09-01",
                    "name": "aks/gpu", "properties": {"vmSize": "[parameters('size')]", "count": 1}}]),
            json!({"size": {"type": "string"}}),
        );
        let r = crate::read::normalize(&doc, crate::compute::Source::Arm).remove(0);
        assert_eq!(r.sku, None);
        assert_eq!(r.unresolved, vec!["sku".to_string()]);
        assert_eq!(r.fields["sku"], "/resources/0/properties/vmSize");
    }

    #[test]
    fn nested_child_compute_gets_its_workspace_region() {
        let doc = template(
            json!([{"type": "Microsoft.MachineLearningServices/workspaces", "apiVersion": "2024-04-01",
                    "name": "ml-prod", "location": "West Europe", "properties": {},
                    "resources": [{"type": "computes", "apiVersion": "2024-04-01", "name": "gpu",
                                   "location": "eastus", "properties": {"computeType": "AmlCompute",
                                   "properties": {"vmSize": "Standard_NC24ads_A100_v4",
                                                  "scaleSettings": {"maxNodeCount": 2}}}}]}]),
            json!({}),
        );
        let out = crate::read::normalize(&doc, crate::compute::Source::Unknown);
        let c = out
            .iter()
            .find(|r| r.kind == "aml-compute-cluster")
            .expect("present");
        assert_eq!(c.region.as_deref(), Some("eastus"));
        assert_eq!(c.parent_region.as_deref(), Some("westeurope"));
        assert_eq!(c.parent.as_deref(), Some("workspace ml-prod in westeurope"));
        assert_eq!(c.fields["parentRegion"], "/resources/0/location");
        assert_eq!(
            c.fields["sku"],
            "/resources/0/resources/0/properties/properties/vmSize"
        );
    }

    #[test]
    fn sibling_compute_finds_its_workspace_by_name_expression() {
        let doc = template(
            json!([{"type": "Microsoft.MachineLearningServices/workspaces", "apiVersion": "2024-04-01",
                    "name": "[parameters('ws')]", "location": "eastus", "properties": {}},
                   {"type": "Microsoft.MachineLearningServices/workspaces/computes", "apiVersion": "2024-04-01",
                    "name": "[format('{0}/{1}', parameters('ws'), 'gpu')]", "location": "westus",
                    "properties": {"computeType": "ComputeInstance", "properties": {"vmSize": "Standard_NC6s_v3"}}}]),
            json!({"ws": {"type": "string"}}),
        );
        let out = crate::read::normalize(&doc, crate::compute::Source::Arm);
        let c = out
            .iter()
            .find(|r| r.kind == "aml-compute-instance")
            .expect("present");
        assert_eq!(
            (c.region.as_deref(), c.parent_region.as_deref()),
            (Some("westus"), Some("eastus"))
        );
    }

    #[test]
    fn nested_inner_deployment_gets_passed_parameters_and_conditions_apply() {
        let inner = json!({"parameters": {"sku": {"type": "string"}},
            "resources": [{"type": "Microsoft.ContainerService/managedClusters/agentPools", "apiVersion": "2024-09-01",
                           "name": "c/gpu", "properties": {"vmSize": "[parameters('sku')]"}}]});
        let doc = template(
            json!([{"type": "Microsoft.Resources/deployments", "apiVersion": "2020-10-01", "name": "one",
                    "properties": {"expressionEvaluationOptions": {"scope": "inner"}, "mode": "Incremental",
                                   "parameters": {"sku": {"value": "[parameters('outerSku')]"}}, "template": inner}},
                   {"type": "Microsoft.Resources/deployments", "apiVersion": "2020-10-01", "name": "two",
                    "condition": "[parameters('second')]",
                    "properties": {"expressionEvaluationOptions": {"scope": "inner"}, "mode": "Incremental",
                                   "parameters": {"sku": {"value": "Standard_NC6"}}, "template": inner}}]),
            json!({"outerSku": {"type": "string", "defaultValue": "Standard_NC12"}, "second": {"type": "bool", "defaultValue": false}}),
        );
        let out = crate::read::normalize(&doc, crate::compute::Source::Arm);
        assert_eq!(
            out.len(),
            1,
            "the deployment whose condition is false gives nothing"
        );
        assert_eq!(out[0].sku.as_deref(), Some("Standard_NC12"));
        assert_eq!(
            out[0].fields["sku"],
            "/resources/0/properties/template/resources/0/properties/vmSize"
        );
    }

    #[test]
    fn managed_cluster_gives_cluster_and_pools() {
        let doc = template(
            json!([{"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
                    "name": "aks", "location": "[parameters('location')]",
                    "properties": {"kubernetesVersion": "1.28.5", "agentPoolProfiles": [
                        {"name": "gpu", "vmSize": "[parameters('gpuSize')]", "count": 1, "minCount": 1, "maxCount": 3,
                         "enableAutoScaling": true, "osType": "Windows", "nodeTaints": ["sku=gpu:NoSchedule"],
                         "scaleSetPriority": "Spot"}]}}]),
            json!({"location": {"type": "string", "defaultValue": "eastus2"},
                   "gpuSize": {"type": "string", "defaultValue": "Standard_NC24ads_A100_v4"}}),
        );
        let out = crate::read::normalize(&doc, crate::compute::Source::Arm);
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].kind.as_str(), out[0].region.as_deref()),
            ("aks-cluster", Some("eastus2"))
        );
        let p = &out[1];
        assert_eq!(
            (p.name.as_str(), p.sku.as_deref()),
            ("aks/gpu", Some("Standard_NC24ads_A100_v4"))
        );
        assert_eq!(
            (p.min_nodes, p.max_nodes, p.autoscale),
            (Some(1), Some(3), Some(true))
        );
        assert_eq!(
            (
                p.os_type.as_deref(),
                p.kubernetes_version.as_deref(),
                p.priority.as_deref()
            ),
            (Some("windows"), Some("1.28.5"), Some("spot"))
        );
        assert_eq!(p.taints, vec!["sku=gpu:NoSchedule".to_string()]);
        assert_eq!(
            p.fields["sku"],
            "/resources/0/properties/agentPoolProfiles/0/vmSize"
        );
    }

    #[test]
    fn rest_example_reads_the_request_body() {
        let doc = json!({"parameters": {"api-version": "2024-04-01", "computeName": "compute123",
            "parameters": {"location": "eastus", "properties": {"computeType": "AmlCompute",
                "properties": {"scaleSettings": {"maxNodeCount": 4, "minNodeCount": 4}}}}},
            "responses": {"200": {"body": {"type": "Microsoft.MachineLearningServices/workspaces/computes",
                "properties": {"computeType": "AmlCompute", "properties": {"vmSize": "STANDARD_NC6"}}}}}});
        assert!(recognise(&doc));
        let out = crate::read::normalize(&doc, crate::compute::Source::Unknown);
        assert_eq!(
            out.len(),
            1,
            "responses are what Azure returns, not what is declared"
        );
        assert_eq!(
            (
                out[0].name.as_str(),
                out[0].min_nodes,
                out[0].sku.as_deref()
            ),
            ("compute123", Some(4), None)
        );
        assert_eq!(
            out[0].fields["minNodes"],
            "/parameters/parameters/properties/properties/scaleSettings/minNodeCount"
        );
    }

    #[test]
    fn bare_rest_body_and_unrelated_json() {
        let body = json!({"type": "Microsoft.ContainerService/managedClusters/agentPools", "name": "gpu",
                          "properties": {"vmSize": "Standard_NC6"}});
        assert!(recognise(&body));
        assert_eq!(
            crate::read::normalize(&body, crate::compute::Source::Unknown)[0]
                .sku
                .as_deref(),
            Some("Standard_NC6")
        );
        assert!(!recognise(&json!({"parameters": {"x": {"value": 1}}})));
        assert!(!recognise(&json!({"resources": []})));
    }

    #[test]
    fn aso_workspaces_compute_reads_union_and_arm_style_properties() {
        let union = json!({"apiVersion": "machinelearningservices.azure.com/v1api20240401", "kind": "WorkspacesCompute",
            "metadata": {"name": "gpu", "namespace": "ml", "labels": {"team": "a"}},
            "spec": {"location": "eastus", "owner": {"name": "ws"},
                     "properties": {"amlCompute": {"properties": {"vmSize": "Standard_NC6",
                         "scaleSettings": {"minNodeCount": 1, "maxNodeCount": 2}}}}}});
        let r = crate::read::normalize(&union, crate::compute::Source::Kubernetes).remove(0);
        assert_eq!(
            (r.kind.as_str(), r.sku.as_deref(), r.min_nodes),
            ("aml-compute-cluster", Some("Standard_NC6"), Some(1))
        );
        assert_eq!(
            r.fields["sku"],
            "/spec/properties/amlCompute/properties/vmSize"
        );
        assert_eq!(r.fields["region"], "/spec/location");
        assert_eq!(r.labels.get("team").map(String::as_str), Some("a"));
        let arm_style = json!({"apiVersion": "machinelearningservices.azure.com/v1api20210701", "kind": "WorkspacesCompute",
            "metadata": {"name": "ci"},
            "spec": {"azureName": "dev-box", "properties": {"computeType": "ComputeInstance",
                     "properties": {"vmSize": "Standard_NC4as_T4_v3"}}}});
        let r = crate::read::normalize(&arm_style, crate::compute::Source::Unknown).remove(0);
        assert_eq!(
            (r.kind.as_str(), r.name.as_str(), r.workload.as_str()),
            ("aml-compute-instance", "dev-box", "interactive")
        );
        assert_eq!(r.fields["sku"], "/spec/properties/properties/vmSize");
        let ws = json!({"apiVersion": "machinelearningservices.azure.com/v1api20240401", "kind": "Workspace",
            "metadata": {"name": "ws"}, "spec": {"location": "West Europe"}});
        let r = crate::read::normalize(&ws, crate::compute::Source::Unknown).remove(0);
        assert_eq!(
            (r.kind.as_str(), r.region.as_deref()),
            ("aml-workspace", Some("westeurope"))
        );
    }

    #[test]
    fn aml_cli_kubernetes_compute_is_recognised() {
        let doc = json!({"name": "k8s", "type": "kubernetes", "namespace": "azureml",
            "resource_id": "/subscriptions/x/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks"});
        let r = crate::read::normalize(&doc, crate::compute::Source::AzureMl).remove(0);
        assert_eq!(
            (r.kind.as_str(), r.sku.as_deref()),
            ("aml-kubernetes-compute", None)
        );
    }

    #[test]
    fn zones_of_pools_scale_sets_and_vms_and_the_pools_region() {
        let doc = template(
            json!([
                {"type": "Microsoft.ContainerService/managedClusters", "apiVersion": "2024-09-01",
                 "name": "aks", "location": "East US",
                 "properties": {"agentPoolProfiles": [
                    {"name": "gpu", "vmSize": "Standard_NV6", "count": 1, "availabilityZones": ["1", 2]},
                    {"name": "any", "vmSize": "Standard_NV6", "count": 1, "availabilityZones": []}]}},
                {"type": "Microsoft.Compute/virtualMachineScaleSets", "apiVersion": "2024-07-01",
                 "name": "ss", "location": "eastus", "zones": "[parameters('zones')]",
                 "sku": {"name": "Standard_NV6", "capacity": 2}, "properties": {}},
                {"type": "Microsoft.Compute/virtualMachines", "apiVersion": "2024-07-01",
                 "name": "vm", "location": "eastus", "zones": ["[parameters('zone')]"],
                 "properties": {"hardwareProfile": {"vmSize": "Standard_NV6"}}}
            ]),
            json!({"zones": {"type": "array", "defaultValue": ["3"]}, "zone": {"type": "string"}}),
        );
        let out = crate::read::normalize(&doc, crate::compute::Source::Arm);
        let by = |name: &str| {
            out.iter()
                .find(|r| r.name == name)
                .cloned()
                .unwrap_or_default()
        };
        let gpu = by("aks/gpu");
        assert_eq!(gpu.zones, ["1", "2"]);
        assert_eq!(
            gpu.fields["zones"],
            "/resources/0/properties/agentPoolProfiles/0/availabilityZones"
        );
        assert_eq!(
            (gpu.region.as_deref(), gpu.parent_region.as_deref()),
            (None, Some("eastus"))
        );
        assert!(by("aks/any").zones.is_empty() && !by("aks/any").fields.contains_key("zones"));
        assert_eq!(by("ss").zones, ["3"], "a parameter's default");
        let vm = by("vm");
        assert!(vm.zones.is_empty());
        assert_eq!(
            vm.unresolved,
            ["zones"],
            "a parameter without a value is not guessed"
        );
        assert_eq!(vm.fields["zones"], "/resources/2/zones");
    }
}
