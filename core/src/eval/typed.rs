//! Typed programs: rule expressions evaluated without the interpreter's generic
//! machinery where that is certain to give the interpreter's answer (issue 36).
//!
//! cel-interpreter walks a generic tree over dynamic values. Every `resource.x` looks
//! `resource` up through the scopes by name and then `x` in a 37-entry map, which was
//! built for the resource (its lists and JSON converted) before its first rule ran;
//! every intermediate value is a [`Cel`] that is cloned and dropped. Yet the built-in
//! pack's conditions are mostly comparisons and logic over fields of `resource`, of
//! `sku(resource.sku)` and of `settings`, a few functions of strings, and `exists` or
//! `all` over a resource's lists and maps; its messages are mostly concatenations.
//! When an expression is decoded, [`compile`] turns it into a [`Program`] in which
//! fields are direct reads of the [`Resource`], of the SKU answer and of `settings`
//! (borrowed, not converted), and operators keep the interpreter's exact semantics
//! (truthiness for `!`, `&&`, `||` and `?:`, numeric equality across `int`, `uint` and
//! `double`, comparisons that fail between other kinds).
//!
//! The interpreter stays the reference. A program answers only with a bool or a
//! string reached without anything it does not compile (another function, another
//! macro, an index, arithmetic) and without an error (a missing key, values that do
//! not compare, a concatenation of a non-string). Otherwise [`Program::run`] answers
//! `None`, and the interpreter evaluates the whole expression again from the start,
//! which is sound because evaluating an expression changes nothing. Where the
//! interpreter's answer could depend on the order it iterates a map in (a hash
//! order), a program answers only when no order could change it. So a program can
//! make an answer cheaper, never different. The tests hold it to that: every
//! operator over every kind of value here, and the built-in pack over every fixture
//! and corpus file in `host/compiler/tests/typed_programs.rs`.

use super::SKU_OF_RESOURCE;
use super::functions;
use crate::ast::{self, Expr as E};
use crate::cel_value::{self, Collection, CollectionField, Scalar, ScalarField, json_scalar, key};
use crate::compute::Resource;
use cel_interpreter::Value as Cel;
use cel_interpreter::objects::Key;
use serde_json::Value as Json;
use std::cmp::Ordering;
use std::sync::Arc;

/// A compiled expression; see the module documentation.
#[derive(Debug)]
pub(super) struct Program {
    root: Node,
}

/// What a program reads besides the resource.
pub(super) struct Env<'a> {
    pub(super) resource: &'a Resource,
    /// The evaluation's `settings`.
    pub(super) settings: &'a Cel,
    /// `sku(resource.sku)`, when the expression reads it (bound by the caller, as for
    /// the interpreter).
    pub(super) sku: Option<&'a Cel>,
}

#[derive(Debug)]
enum Node {
    /// A literal other than bytes.
    Literal(ast::Literal),
    /// `resource.<field>` for a field that holds a scalar.
    Field(ScalarField),
    /// `resource.<field>` for a field that holds a list or a map.
    Collection(CollectionField),
    /// `settings`.
    Settings,
    /// `sku(resource.sku)`.
    Sku,
    /// A macro's variable: its slot among the enclosing macros' variables.
    Local(usize),
    /// `operand.field` for any operand but `resource`.
    Member(Box<Node>, Key),
    /// `has(operand.field)`.
    Has(Box<Node>, String),
    /// `size(x)`.
    Size(Box<Node>),
    /// `string(x)`.
    String(Box<Node>),
    /// One of computeguard's functions of two strings that answer a bool or null.
    Call(StringFunction, Box<[Node; 2]>),
    /// One of computeguard's functions that answer a map, called with its arguments
    /// converted as the interpreter would pass them.
    MapCall(functions::MapFunction, Vec<Node>),
    /// A list literal.
    List(Vec<Node>),
    /// A method of strings: `target.contains(arg)`, `startsWith`, `endsWith`.
    Method(StringMethod, Box<[Node; 2]>),
    Not(Box<Node>),
    And(Box<[Node; 2]>),
    Or(Box<[Node; 2]>),
    /// `c ? a : b`.
    Conditional(Box<[Node; 3]>),
    Equals(Box<[Node; 2]>),
    NotEquals(Box<[Node; 2]>),
    /// `<`, `<=`, `>`, `>=`: true when the operands' order is one of these.
    Compare(Box<[Node; 2]>, [Ordering; 2]),
    /// `x in [literals]` (none of them bytes).
    InList(Box<Node>, Vec<ast::Literal>),
    /// `a + b + ...` of strings.
    Concat(Vec<Node>),
    /// `range.exists(v, body)` (`all: false`) or `range.all(v, body)`, the body seeing
    /// each item (or map key) in the local slot `var`.
    Macro {
        all: bool,
        range: Box<Node>,
        var: usize,
        body: Box<Node>,
    },
    /// Anything else: the interpreter answers.
    Defer,
}

/// Functions of two strings answering a bool or null (`functions.rs`).
#[derive(Clone, Copy, Debug)]
enum StringFunction {
    InGeography,
    VersionAtLeast,
    CudaSupported,
}

impl StringFunction {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "inGeography" => StringFunction::InGeography,
            "versionAtLeast" => StringFunction::VersionAtLeast,
            "cudaSupported" => StringFunction::CudaSupported,
            _ => return None,
        })
    }

    fn call(self, a: Option<&str>, b: Option<&str>) -> Option<bool> {
        match self {
            StringFunction::InGeography => functions::in_geography(a, b),
            StringFunction::VersionAtLeast => functions::version_at_least(a, b),
            StringFunction::CudaSupported => functions::cuda_supported(a, b),
        }
    }
}

/// cel-interpreter's methods of strings.
#[derive(Clone, Copy, Debug)]
enum StringMethod {
    Contains,
    StartsWith,
    EndsWith,
}

/// What a node evaluates to: borrowed wherever the value lives, owned only for a
/// concatenation.
#[derive(Clone, Debug)]
enum Val<'a> {
    Scalar(Scalar<'a>),
    /// A value of `settings` or of the SKU answer, lists and maps included.
    Value(&'a Cel),
    /// An item of a JSON list field (`resource.tolerations`), or a field of one.
    Json(&'a Json),
    /// A list or map field of `resource`.
    Collection(Collection<'a>),
    /// A string made by the program.
    Text(String),
    /// A value made by the program: a function's answer, a list literal, or a part of
    /// either.
    Owned(Cel),
}

impl Val<'_> {
    /// The scalar, or None for a list, map or other non-scalar value.
    fn scalar(&self) -> Option<Scalar<'_>> {
        match self {
            Val::Scalar(s) => Some(*s),
            Val::Value(v) => Scalar::of(v),
            Val::Owned(v) => Scalar::of(v),
            Val::Json(j) => json_scalar(j),
            Val::Collection(_) => None,
            Val::Text(t) => Some(Scalar::Str(t)),
        }
    }

    /// The CEL value, when it is one already.
    fn cel(&self) -> Option<&Cel> {
        match self {
            Val::Value(v) => Some(v),
            Val::Owned(v) => Some(v),
            _ => None,
        }
    }

    /// The value as the interpreter holds it (what a function is passed).
    fn to_cel(&self) -> Cel {
        match self {
            Val::Scalar(s) => s.to_cel(),
            Val::Value(v) => (*v).clone(),
            Val::Owned(v) => v.clone(),
            Val::Json(j) => cel_value::to_cel(j),
            Val::Collection(c) => c.to_cel(),
            Val::Text(t) => cel_value::text(t),
        }
    }

    /// The string, if the value is one.
    fn text(&self) -> Option<&str> {
        match self.scalar()? {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    /// cel-interpreter's `Value::to_bool`.
    fn truthy(&self) -> bool {
        match self {
            Val::Value(Cel::List(l)) | Val::Owned(Cel::List(l)) => !l.is_empty(),
            Val::Value(Cel::Map(m)) | Val::Owned(Cel::Map(m)) => !m.map.is_empty(),
            Val::Value(Cel::Bytes(b)) | Val::Owned(Cel::Bytes(b)) => !b.is_empty(),
            Val::Json(Json::Array(a)) => !a.is_empty(),
            Val::Json(Json::Object(o)) => !o.is_empty(),
            Val::Collection(c) => c.len() > 0,
            other => other.scalar().is_some_and(truthy),
        }
    }
}

/// A literal's scalar; None for bytes, which a program leaves to the interpreter.
fn literal(l: &ast::Literal) -> Option<Scalar<'_>> {
    Some(match l {
        ast::Literal::Null => Scalar::Null,
        ast::Literal::Bool(b) => Scalar::Bool(*b),
        ast::Literal::Int(i) => Scalar::Int(*i),
        ast::Literal::UInt(u) => Scalar::UInt(*u),
        ast::Literal::Double(f) => Scalar::Float(*f),
        ast::Literal::String(s) => Scalar::Str(s),
        ast::Literal::Bytes(_) => return None,
    })
}

/// The program for `e`, the expression as the interpreter runs it (after
/// `sku(resource.sku)` is bound); None when its root is nothing a program evaluates.
pub(super) fn compile(e: &E) -> Option<Program> {
    match node(e, &mut Vec::new()) {
        Node::Defer => None,
        root => Some(Program { root }),
    }
}

/// `e` compiled where the names in `locals` are the enclosing macros' variables.
fn node(e: &E, locals: &mut Vec<String>) -> Node {
    let global = |e: &E, name: &str, locals: &[String]| matches!(e, E::Ident(n) if n == name && !locals.iter().any(|l| l == name));
    let pair =
        |a: &E, b: &E, locals: &mut Vec<String>| Box::new([node(a, locals), node(b, locals)]);
    match e {
        E::Literal(l) if literal(l).is_some() => Node::Literal(l.clone()),
        E::Ident(n) => match locals.iter().rposition(|l| l == n) {
            Some(slot) => Node::Local(slot),
            None if n == "settings" => Node::Settings,
            None if n == SKU_OF_RESOURCE => Node::Sku,
            None => Node::Defer,
        },
        E::Select {
            operand,
            field,
            test: false,
        } if global(operand, "resource", locals) => ScalarField::named(field)
            .map(Node::Field)
            .or_else(|| CollectionField::named(field).map(Node::Collection))
            .unwrap_or(Node::Defer),
        E::Select {
            operand,
            field,
            test,
        } => match node(operand, locals) {
            Node::Defer => Node::Defer,
            operand if *test => Node::Has(Box::new(operand), field.clone()),
            operand => Node::Member(Box::new(operand), key(field)),
        },
        E::Call {
            func,
            target: Some(target),
            args,
        } => match (func.as_str(), args.as_slice()) {
            ("contains", [a]) => Node::Method(StringMethod::Contains, pair(target, a, locals)),
            ("startsWith", [a]) => Node::Method(StringMethod::StartsWith, pair(target, a, locals)),
            ("endsWith", [a]) => Node::Method(StringMethod::EndsWith, pair(target, a, locals)),
            _ => Node::Defer,
        },
        E::Call {
            func,
            target: None,
            args,
        } => match (func.as_str(), args.as_slice()) {
            ("!_", [a]) => Node::Not(Box::new(node(a, locals))),
            ("_&&_", [a, b]) => Node::And(pair(a, b, locals)),
            ("_||_", [a, b]) => Node::Or(pair(a, b, locals)),
            ("_?_:_", [c, a, b]) => Node::Conditional(Box::new([
                node(c, locals),
                node(a, locals),
                node(b, locals),
            ])),
            ("_==_", [a, b]) => Node::Equals(pair(a, b, locals)),
            ("_!=_", [a, b]) => Node::NotEquals(pair(a, b, locals)),
            ("_<_", [a, b]) => Node::Compare(pair(a, b, locals), [Ordering::Less; 2]),
            ("_<=_", [a, b]) => {
                Node::Compare(pair(a, b, locals), [Ordering::Less, Ordering::Equal])
            }
            ("_>_", [a, b]) => Node::Compare(pair(a, b, locals), [Ordering::Greater; 2]),
            ("_>=_", [a, b]) => {
                Node::Compare(pair(a, b, locals), [Ordering::Greater, Ordering::Equal])
            }
            ("_+_", [_, _]) => {
                let mut parts = Vec::new();
                concat_parts(e, &mut parts);
                Node::Concat(parts.into_iter().map(|p| node(p, locals)).collect())
            }
            ("size", [a]) => Node::Size(Box::new(node(a, locals))),
            ("string", [a]) => Node::String(Box::new(node(a, locals))),
            ("@in", [a, E::List(items)]) => {
                let literals = items.iter().map(|i| match i {
                    E::Literal(l) if literal(l).is_some() => Some(l.clone()),
                    _ => None,
                });
                match literals.collect::<Option<Vec<_>>>() {
                    Some(list) => Node::InList(Box::new(node(a, locals)), list),
                    None => Node::Defer,
                }
            }
            (name, args) => match (
                StringFunction::named(name),
                functions::MapFunction::named(name, args.len()),
            ) {
                (Some(f), _) if args.len() == 2 => Node::Call(f, pair(&args[0], &args[1], locals)),
                (_, Some(f)) => Node::MapCall(f, args.iter().map(|a| node(a, locals)).collect()),
                _ => Node::Defer,
            },
        },
        E::Comprehension(c) => macro_node(c, locals).unwrap_or(Node::Defer),
        E::List(items) => Node::List(items.iter().map(|i| node(i, locals)).collect()),
        _ => Node::Defer,
    }
}

/// The operands of a chain of `+` (left to right).
fn concat_parts<'e>(e: &'e E, out: &mut Vec<&'e E>) {
    match e {
        E::Call {
            func,
            target: None,
            args,
        } if func == "_+_" && args.len() == 2 => {
            concat_parts(&args[0], out);
            concat_parts(&args[1], out);
        }
        other => out.push(other),
    }
}

/// `exists` or `all` as cel-parser expands them (`core/src/ast.rs` keeps that shape);
/// None for any other comprehension.
fn macro_node(c: &ast::Comprehension, locals: &mut Vec<String>) -> Option<Node> {
    let accu = |e: &E| matches!(e, E::Ident(n) if *n == c.accu_var);
    fn call1<'e>(e: &'e E, name: &str) -> Option<&'e E> {
        match e {
            E::Call {
                func,
                target: None,
                args,
            } if func == name && args.len() == 1 => args.first(),
            _ => None,
        }
    }
    let step = match &c.loop_step {
        E::Call {
            func,
            target: None,
            args,
        } if args.len() == 2 && accu(&args[0]) => Some((func.as_str(), &args[1])),
        _ => None,
    };
    let not_strictly_false = call1(&c.loop_cond, "@not_strictly_false")?;
    let (all, body) = match (&c.accu_init, step?) {
        (E::Literal(ast::Literal::Bool(false)), ("_||_", body))
            if call1(not_strictly_false, "!_").is_some_and(accu) =>
        {
            (false, body)
        }
        (E::Literal(ast::Literal::Bool(true)), ("_&&_", body)) if accu(not_strictly_false) => {
            (true, body)
        }
        _ => return None,
    };
    if c.iter_var2.is_some() || !accu(&c.result) {
        return None;
    }
    let range = node(&c.iter_range, locals);
    locals.push(c.iter_var.clone());
    let var = locals.len() - 1;
    let body = node(body, locals);
    locals.pop();
    Some(Node::Macro {
        all,
        range: Box::new(range),
        var,
        body: Box::new(body),
    })
}

impl Program {
    /// The expression's value when it is a bool or a string the program reaches by
    /// itself; None when the interpreter must answer.
    pub(super) fn run(&self, env: &Env<'_>) -> Option<Cel> {
        match value(&self.root, env, &mut Vec::new())? {
            Val::Text(t) => Some(Cel::String(Arc::new(t))),
            v => match v.scalar()? {
                Scalar::Bool(b) => Some(Cel::Bool(b)),
                Scalar::Str(s) => Some(Cel::String(Arc::new(s.to_string()))),
                _ => None,
            },
        }
    }
}

/// A node's value; None where the interpreter would report an error or where the
/// program does not know the answer.
fn value<'a>(n: &'a Node, env: &Env<'a>, locals: &mut Vec<Val<'a>>) -> Option<Val<'a>> {
    let bool = |b| Some(Val::Scalar(Scalar::Bool(b)));
    match n {
        Node::Literal(l) => literal(l).map(Val::Scalar),
        Node::Field(f) => Some(Val::Scalar(f.read(env.resource))),
        Node::Collection(f) => Some(Val::Collection(f.read(env.resource))),
        Node::Settings => Some(Val::Value(env.settings)),
        Node::Sku => env.sku.map(Val::Value),
        Node::Local(slot) => locals.get(*slot).cloned(),
        // A field present in a map; else the interpreter's error (or its function value).
        Node::Member(operand, k) => match value(operand, env, locals)? {
            Val::Value(Cel::Map(m)) => m.map.get(k).map(Val::Value),
            Val::Owned(Cel::Map(m)) => m.map.get(k).cloned().map(Val::Owned),
            Val::Json(Json::Object(o)) => match k {
                Key::String(field) => o.get(field.as_str()).map(Val::Json),
                _ => None,
            },
            Val::Collection(Collection::Map(m)) => match k {
                Key::String(field) => m.get(field.as_str()).map(|v| Val::Scalar(Scalar::Str(v))),
                _ => None,
            },
            _ => None,
        },
        // The interpreter's `has` on a map compares each key's text with the field; on
        // anything else it is false.
        Node::Has(operand, field) => {
            let v = value(operand, env, locals)?;
            bool(match v.cel() {
                Some(Cel::Map(m)) => m.map.keys().any(|k| match k {
                    Key::String(s) => s.as_str() == field,
                    other => other.to_string() == *field,
                }),
                Some(_) => false,
                None => match v {
                    Val::Json(Json::Object(o)) => o.contains_key(field),
                    Val::Collection(Collection::Map(m)) => m.contains_key(field),
                    _ => false,
                },
            })
        }
        // cel-interpreter's `size`: a string's bytes, a list's items, a map's entries.
        Node::Size(a) => {
            let v = value(a, env, locals)?;
            let n = match (v.cel(), &v) {
                (Some(Cel::List(l)), _) => l.len(),
                (Some(Cel::Map(m)), _) => m.map.len(),
                (Some(Cel::Bytes(b)), _) => b.len(),
                (_, Val::Json(Json::Array(a))) => a.len(),
                (_, Val::Json(Json::Object(o))) => o.len(),
                (_, Val::Collection(c)) => c.len(),
                _ => v.text()?.len(),
            };
            Some(Val::Scalar(Scalar::Int(i64::try_from(n).ok()?)))
        }
        // cel-interpreter's `string` of a string or a number; an error for anything else.
        Node::String(a) => {
            let v = value(a, env, locals)?;
            Some(Val::Text(match v.scalar()? {
                Scalar::Str(s) => s.to_string(),
                Scalar::Int(i) => i.to_string(),
                Scalar::UInt(u) => u.to_string(),
                Scalar::Float(f) => f.to_string(),
                Scalar::Null | Scalar::Bool(_) => return None,
            }))
        }
        Node::Call(f, args) => {
            let a = value(&args[0], env, locals)?;
            let b = value(&args[1], env, locals)?;
            Some(Val::Scalar(
                f.call(a.text(), b.text())
                    .map_or(Scalar::Null, Scalar::Bool),
            ))
        }
        Node::MapCall(f, args) => {
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(value(a, env, locals)?.to_cel());
            }
            Some(Val::Owned(f.call(&values)))
        }
        Node::List(items) => {
            let mut values = Vec::with_capacity(items.len());
            for i in items {
                values.push(value(i, env, locals)?.to_cel());
            }
            Some(Val::Owned(Cel::List(Arc::new(values))))
        }
        Node::Method(m, args) => {
            let target = value(&args[0], env, locals)?;
            let arg = value(&args[1], env, locals)?;
            match m {
                // `contains` of a string: false for an argument that is not one; a
                // list's or a map's `contains` is left to the interpreter.
                StringMethod::Contains => match target.scalar()? {
                    Scalar::Str(s) => bool(arg.text().is_some_and(|a| s.contains(a))),
                    _ => bool(false),
                },
                // Both take strings only; anything else is an error.
                StringMethod::StartsWith => bool(target.text()?.starts_with(arg.text()?)),
                StringMethod::EndsWith => bool(target.text()?.ends_with(arg.text()?)),
            }
        }
        Node::Not(a) => bool(!value(a, env, locals)?.truthy()),
        Node::And(p) => {
            bool(value(&p[0], env, locals)?.truthy() && value(&p[1], env, locals)?.truthy())
        }
        // `a || b` is `a` itself when `a` is truthy, else `b` itself.
        Node::Or(p) => match value(&p[0], env, locals)? {
            left if left.truthy() => Some(left),
            _ => value(&p[1], env, locals),
        },
        Node::Conditional(p) => {
            if value(&p[0], env, locals)?.truthy() {
                value(&p[1], env, locals)
            } else {
                value(&p[2], env, locals)
            }
        }
        Node::Equals(p) | Node::NotEquals(p) => {
            let (a, b) = (value(&p[0], env, locals)?, value(&p[1], env, locals)?);
            let same = equal(a.scalar()?, b.scalar()?);
            bool(if matches!(n, Node::Equals(_)) {
                same
            } else {
                !same
            })
        }
        Node::Compare(p, accepted) => {
            let (a, b) = (value(&p[0], env, locals)?, value(&p[1], env, locals)?);
            bool(accepted.contains(&compare(a.scalar()?, b.scalar()?)?))
        }
        Node::InList(a, list) => {
            let x = value(a, env, locals)?;
            let x = x.scalar()?;
            bool(list.iter().filter_map(literal).any(|l| equal(l, x)))
        }
        Node::Concat(parts) => {
            let mut out = String::new();
            for p in parts {
                out.push_str(value(p, env, locals)?.text()?);
            }
            Some(Val::Text(out))
        }
        Node::Macro {
            all,
            range,
            var,
            body,
        } => macro_value(*all, value(range, env, locals)?, *var, body, env, locals),
        Node::Defer => None,
    }
}

/// `exists` or `all` over `range`. Over a list, the interpreter's loop: in order,
/// stopping where the interpreter stops, `exists` keeping the body's value itself.
/// Over a map, whose keys the interpreter visits in hash order, every key is
/// evaluated and an answer given only where the order cannot matter: no key defers,
/// and for `exists` every body is a bool.
fn macro_value<'a>(
    all: bool,
    range: Val<'a>,
    var: usize,
    body: &'a Node,
    env: &Env<'a>,
    locals: &mut Vec<Val<'a>>,
) -> Option<Val<'a>> {
    let items: Vec<Val<'a>> = match range {
        Val::Value(Cel::List(l)) => l.iter().map(Val::Value).collect(),
        Val::Owned(Cel::List(l)) => l.iter().cloned().map(Val::Owned).collect(),
        Val::Owned(Cel::Map(m)) => {
            let keys = m.map.keys().map(|k| Val::Owned(Cel::from(k)));
            return over_keys(all, keys.collect(), var, body, env, locals);
        }
        Val::Json(Json::Array(a)) => a.iter().map(Val::Json).collect(),
        Val::Collection(Collection::Strings(l)) => {
            l.iter().map(|s| Val::Scalar(Scalar::Str(s))).collect()
        }
        Val::Collection(Collection::Json(l)) => l.iter().map(Val::Json).collect(),
        Val::Value(Cel::Map(m)) => {
            let keys = m.map.keys().map(|k| match k {
                Key::String(s) => Val::Scalar(Scalar::Str(s)),
                Key::Int(i) => Val::Scalar(Scalar::Int(*i)),
                Key::Uint(u) => Val::Scalar(Scalar::UInt(*u)),
                Key::Bool(b) => Val::Scalar(Scalar::Bool(*b)),
            });
            return over_keys(all, keys.collect(), var, body, env, locals);
        }
        Val::Json(Json::Object(o)) => {
            let keys = o.keys().map(|k| Val::Scalar(Scalar::Str(k)));
            return over_keys(all, keys.collect(), var, body, env, locals);
        }
        Val::Collection(Collection::Map(m)) => {
            let keys = m.keys().map(|k| Val::Scalar(Scalar::Str(k)));
            return over_keys(all, keys.collect(), var, body, env, locals);
        }
        // The interpreter's `@iterable` refuses anything else.
        _ => return None,
    };
    let mut accu = Val::Scalar(Scalar::Bool(all));
    for item in items {
        // The loop condition: `@not_strictly_false(!accu)` for `exists` (accu is falsy
        // until it stops), `@not_strictly_false(accu)` for `all` (accu is a bool).
        let go_on = if all {
            !matches!(accu.scalar(), Some(Scalar::Bool(false)))
        } else {
            !accu.truthy()
        };
        if !go_on {
            break;
        }
        let b = with_local(var, item, locals, |locals| value(body, env, locals))?;
        // `accu || body` with accu falsy is the body; `accu && body` with accu true is
        // the body's truthiness.
        accu = if all {
            Val::Scalar(Scalar::Bool(b.truthy()))
        } else {
            b
        };
    }
    Some(accu)
}

fn over_keys<'a>(
    all: bool,
    keys: Vec<Val<'a>>,
    var: usize,
    body: &'a Node,
    env: &Env<'a>,
    locals: &mut Vec<Val<'a>>,
) -> Option<Val<'a>> {
    let mut answer = all;
    for k in keys {
        let b = with_local(var, k, locals, |locals| value(body, env, locals))?;
        let b = if all {
            b.truthy()
        } else {
            match b.scalar()? {
                Scalar::Bool(b) => b,
                _ => return None,
            }
        };
        answer = if all { answer && b } else { answer || b };
    }
    Some(Val::Scalar(Scalar::Bool(answer)))
}

/// Runs `f` with `item` in the local slot `var` (the slots of the enclosing macros
/// below it).
fn with_local<'a, T>(
    var: usize,
    item: Val<'a>,
    locals: &mut Vec<Val<'a>>,
    f: impl FnOnce(&mut Vec<Val<'a>>) -> T,
) -> T {
    locals.truncate(var);
    locals.push(item);
    let out = f(locals);
    locals.truncate(var);
    out
}

/// cel-interpreter's `Value::to_bool` on a scalar.
fn truthy(v: Scalar<'_>) -> bool {
    match v {
        Scalar::Null => false,
        Scalar::Bool(b) => b,
        Scalar::Int(i) => i != 0,
        Scalar::UInt(u) => u != 0,
        Scalar::Float(f) => f != 0.0,
        Scalar::Str(s) => !s.is_empty(),
    }
}

/// cel-interpreter's `==` on scalars: numbers compare across `int`, `uint` and
/// `double`; other kinds only with their own.
fn equal(a: Scalar<'_>, b: Scalar<'_>) -> bool {
    use Scalar as S;
    match (a, b) {
        (S::Null, S::Null) => true,
        (S::Bool(a), S::Bool(b)) => a == b,
        (S::Int(a), S::Int(b)) => a == b,
        (S::UInt(a), S::UInt(b)) => a == b,
        (S::Float(a), S::Float(b)) => a == b,
        (S::Str(a), S::Str(b)) => a == b,
        (S::Int(a), S::UInt(b)) | (S::UInt(b), S::Int(a)) => u64::try_from(a) == Ok(b),
        (S::Int(a), S::Float(b)) | (S::Float(b), S::Int(a)) => a as f64 == b,
        (S::UInt(a), S::Float(b)) | (S::Float(b), S::UInt(a)) => a as f64 == b,
        _ => false,
    }
}

/// cel-interpreter's order on scalars; None where it reports values that do not
/// compare (and for NaN).
fn compare(a: Scalar<'_>, b: Scalar<'_>) -> Option<Ordering> {
    use Scalar as S;
    match (a, b) {
        (S::Null, S::Null) => Some(Ordering::Equal),
        (S::Bool(a), S::Bool(b)) => Some(a.cmp(&b)),
        (S::Int(a), S::Int(b)) => Some(a.cmp(&b)),
        (S::UInt(a), S::UInt(b)) => Some(a.cmp(&b)),
        (S::Float(a), S::Float(b)) => a.partial_cmp(&b),
        (S::Str(a), S::Str(b)) => Some(a.cmp(b)),
        // An int that does not fit a uint is negative, so less.
        (S::Int(a), S::UInt(b)) => Some(u64::try_from(a).map_or(Ordering::Less, |a| a.cmp(&b))),
        // A uint that does not fit an int is above every int.
        (S::UInt(a), S::Int(b)) => Some(i64::try_from(a).map_or(Ordering::Greater, |a| a.cmp(&b))),
        (S::Int(a), S::Float(b)) => (a as f64).partial_cmp(&b),
        (S::UInt(a), S::Float(b)) => (a as f64).partial_cmp(&b),
        (S::Float(a), S::Int(b)) => a.partial_cmp(&(b as f64)),
        (S::Float(a), S::UInt(b)) => a.partial_cmp(&(b as f64)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel_value::{self, json_to_cel};
    use crate::eval::functions::functions;
    use cel_interpreter::Context;
    use serde_json::json;

    /// Operands of every scalar kind: literals, fields of `resource` (set and unset),
    /// fields of the SKU answer (present, null, missing) and `has` on settings.
    const OPERANDS: &[&str] = &[
        "null",
        "true",
        "false",
        "0",
        "1",
        "-1",
        "0u",
        "1u",
        "18446744073709551615u",
        "0.0",
        "1.0",
        "-2.5",
        "''",
        "'a'",
        "'b'",
        "resource.sku",
        "resource.region",
        "resource.minNodes",
        "resource.gpuRequests",
        "resource.autoscale",
        "resource.kind",
        "resource.zones",
        "resource.nosuchfield",
        "@sku(resource.sku).known",
        "@sku(resource.sku).gpuCount",
        "@sku(resource.sku).vendor",
        "@sku(resource.sku).nosuchfield",
        "has(settings.regions)",
        "has(settings.change)",
        "settings.regions",
        "settings.regions.allowed",
        "has(settings.regions.allowed)",
        "size(settings.regions.allowed)",
        "size(settings.regions)",
        "size(resource.zones)",
        "size(resource.nodeSelection)",
        "size(resource.sku)",
        "size('abc')",
        "versionAtLeast(resource.kubernetesVersion, '1.29')",
        "cudaSupported(resource.sku, resource.cuda)",
        "inGeography(resource.region, 'Europe')",
        "resource.tolerations.exists(t, has(t.key) && t.key == 'sku')",
        "resource.tolerations.all(t, t.operator == 'Exists')",
        "resource.tolerations.exists(t, t.tolerationSeconds > 10)",
        "resource.nodeSelection.exists(k, k.contains('gpu') || k == 'sku')",
        "resource.nodeSelection.all(k, k.startsWith('agent'))",
        "resource.labels.exists(k, resource.labels.exists(j, j != k))",
        "settings.regions.allowed.exists(a, a == resource.region)",
        "resource.zones.exists(z, z)",
        "resource.sku + '/' + resource.kind",
        "string(resource.minNodes) + string(resource.gpuRequests)",
        "resource.kind.endsWith('pool')",
        "resource.nodeSelection.agentpool",
        "region(resource.region).known",
        "region(resource.region).geography",
        "skuOffer(resource.sku, resource.region, resource.zones).answer",
        "quota(resource.sku, resource.region).evaluated",
        "migOs(resource.osSku, resource.osType).answer",
        "aksPoolSize(resource.sku, resource.region, resource.poolMode).answer",
        "kaitoFit('phi-4', resource.sku, resource.instanceCount, resource.workload).answer",
        "[quota(resource.sku, resource.region)].all(q, q.known || !q.known)",
        "[resource.sku, 'a'].exists(x, x == 'a')",
        "size([resource.sku])",
    ];

    /// `src` (with `@sku(resource.sku)` standing for the bound answer) parsed as the
    /// evaluator decodes it.
    fn parse(src: &str) -> E {
        let bound = src.replace("@sku(resource.sku)", "sku(resource.sku)");
        let e = ast::parse(&bound).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        super::super::bind_sku_of_resource(e)
    }

    /// The typed answer and the interpreter's, for `src` on a resource.
    fn both(
        functions: &Context<'static>,
        src: &str,
        r: &Resource,
        sku: &Cel,
        settings: &Cel,
    ) -> (Option<Cel>, String) {
        let e = parse(src);
        let typed = compile(&e).and_then(|p| {
            p.run(&Env {
                resource: r,
                settings,
                sku: Some(sku),
            })
        });
        let mut scope = functions.new_inner_scope();
        scope.add_variable_from_value("settings", settings.clone());
        scope.add_variable_from_value("resource", cel_value::resource(r));
        scope.add_variable_from_value(SKU_OF_RESOURCE, sku.clone());
        let expr = ast::to_cel(&super::super::guard_panics(e));
        let reference = format!("{:?}", Cel::resolve(&expr, &scope));
        (typed, reference)
    }

    fn resources() -> Vec<Resource> {
        let set = Resource {
            kind: "aks-node-pool".into(),
            sku: Some("Standard_NC24ads_A100_v4".into()),
            region: Some("eastus".into()),
            zones: vec!["1".into()],
            min_nodes: Some(0),
            autoscale: Some(true),
            gpu_requests: 1.0,
            kubernetes_version: Some("1.30.2".into()),
            cuda: Some("12.4".into()),
            node_selection: [
                ("agentpool".to_string(), "gpu".to_string()),
                ("sku".to_string(), String::new()),
            ]
            .into(),
            labels: [
                ("a".to_string(), "1".to_string()),
                ("b".to_string(), "2".to_string()),
            ]
            .into(),
            tolerations: vec![
                json!({"key": "sku", "operator": "Equal", "value": "gpu", "tolerationSeconds": 300}),
                json!({"operator": "Exists", "tolerationSeconds": -5}),
            ],
            ..Resource::default()
        };
        let unknown = Resource {
            sku: Some("Standard_Nope".into()),
            region: Some("westeurope".into()),
            min_nodes: Some(-1),
            gpu_requests: 0.5,
            kubernetes_version: Some("1.27".into()),
            cuda: Some("8.0".into()),
            zones: vec!["".into(), "2".into()],
            node_selection: [("gpu-type".to_string(), "a100".to_string())].into(),
            tolerations: vec![json!({"key": "nvidia.com/gpu"}), json!("odd"), json!(1.5)],
            ..Resource::default()
        };
        vec![Resource::default(), set, unknown]
    }

    #[test]
    fn every_operator_over_every_scalar_kind_answers_as_the_interpreter() {
        let functions = functions();
        // Every resource under every settings value, with the interpreter's scope.
        let settings = [
            json!({}),
            json!({"regions": {"allowed": ["eastus"], "allowedGeographies": "Europe"}}),
            json!(["not", "a", "map"]),
        ];
        let mut envs = Vec::new();
        for r in resources() {
            let sku = super::super::views::SkuMemo {
                as_of: "2026-11-22".into(),
                entries: Default::default(),
            }
            .get(r.sku.as_deref().unwrap_or(""));
            for s in &settings {
                let settings = json_to_cel(s);
                let mut scope = functions.new_inner_scope();
                scope.add_variable_from_value("settings", settings.clone());
                scope.add_variable_from_value("resource", cel_value::resource(&r));
                scope.add_variable_from_value(SKU_OF_RESOURCE, sku.clone());
                envs.push((r.clone(), sku.clone(), settings, scope));
            }
        }
        // Operands that are a scalar wherever they have a value: between two of them,
        // `==`, `!=` and `&&` answered by the interpreter must be answered by a program.
        let scalar = |o: &str| {
            ![
                "resource.zones",
                "settings.regions",
                "settings.regions.allowed",
            ]
            .contains(&o)
                && !o.contains("nosuchfield")
                && !o.contains("exists(z, z)")
        };
        // The operator calls as cel-parser writes them, over operands parsed once.
        let call = |func: &str, args: Vec<E>| E::Call {
            func: func.into(),
            target: None,
            args,
        };
        let literal = |l| E::Literal(l);
        let list = E::List(vec![
            literal(ast::Literal::Int(1)),
            literal(ast::Literal::String("a".into())),
            literal(ast::Literal::Null),
            literal(ast::Literal::Bool(true)),
            literal(ast::Literal::Double(1.0)),
        ]);
        let (yes, no) = (
            literal(ast::Literal::Bool(true)),
            literal(ast::Literal::Bool(false)),
        );
        let binary = [
            ("==", "_==_"),
            ("!=", "_!=_"),
            ("<", "_<_"),
            ("<=", "_<=_"),
            (">", "_>_"),
            (">=", "_>=_"),
            ("&&", "_&&_"),
            ("||", "_||_"),
        ];
        let operands: Vec<(&str, E)> = OPERANDS.iter().map(|o| (*o, parse(o))).collect();
        let mut cases = Vec::new();
        for (a, ea) in &operands {
            let must = scalar(a);
            cases.push((format!("!{a}"), call("!_", vec![ea.clone()]), must));
            let is_in = call("@in", vec![ea.clone(), list.clone()]);
            cases.push((format!("{a} in [1, 'a', null, true, 1.0]"), is_in, must));
            let choose = call("_?_:_", vec![ea.clone(), yes.clone(), no.clone()]);
            cases.push((format!("{a} ? true : false"), choose, must));
            for (b, eb) in &operands {
                for (op, func) in binary {
                    let must = must && scalar(b) && ["==", "!=", "&&"].contains(&op);
                    let e = call(func, vec![ea.clone(), eb.clone()]);
                    cases.push((format!("{a} {op} {b}"), e, must));
                }
                let choose = call("_?_:_", vec![ea.clone(), eb.clone(), no.clone()]);
                cases.push((format!("{a} ? {b} : false"), choose, false));
            }
        }
        let mut answered = 0;
        for (src, e, must_answer) in cases {
            let program = compile(&e);
            let expr = ast::to_cel(&super::super::guard_panics(e));
            for (r, sku, settings, scope) in &envs {
                let env = Env {
                    resource: r,
                    settings,
                    sku: Some(sku),
                };
                let typed = program.as_ref().and_then(|p| p.run(&env));
                let reference = format!("{:?}", Cel::resolve(&expr, scope));
                match typed {
                    Some(v) => {
                        answered += 1;
                        let answer = format!("{:?}", Ok::<_, ()>(v));
                        assert_eq!(answer, reference, "{src} on {}", r.name);
                    }
                    None => assert!(
                        !(must_answer && reference.starts_with("Ok(")),
                        "no program answered {src}: {reference}"
                    ),
                }
            }
        }
        assert!(answered > 30_000, "programs answered {answered}");
    }

    #[test]
    fn what_a_program_cannot_answer_it_leaves_to_the_interpreter() {
        let r = &resources()[1];
        let sku = Cel::Map(cel_interpreter::objects::Map {
            map: std::sync::Arc::new(
                [
                    (key("known"), Cel::Bool(true)),
                    (key("sources"), Cel::List(Default::default())),
                ]
                .into_iter()
                .collect(),
            ),
        });
        let settings = json_to_cel(&json!({}));
        let functions = functions();
        let run = |src: &str| both(&functions, src, r, &sku, &settings).0;
        // A function call, a list field, a missing key, values that do not compare, a
        // number as the answer, a list answer of the SKU, another variable, a macro's
        // missing field, a body over a map's keys that is not a bool: None.
        for src in [
            "cudaOf(resource.sku) == null",
            "resource.zones == []",
            "size(resource.namespace) == 0",
            "settings.regions == null",
            "@sku(resource.sku).nosuchfield == null",
            "resource.sku < 1",
            "resource.minNodes",
            "@sku(resource.sku).sources == null",
            "asOf == ''",
            "resource.sku in ['a', resource.region]",
            "false || resource.minNodes",
            "resource.tolerations.exists(t, t.nosuchfield)",
            "resource.nodeSelection.exists(k, k)",
        ] {
            assert_eq!(run(src), None, "{src}");
        }
        // Reached only past what decides the answer, the same parts do not matter.
        let (yes, no) = (Some(Cel::Bool(true)), Some(Cel::Bool(false)));
        assert_eq!(run("false && cudaOf(resource.sku) == null"), no);
        assert_eq!(run("@sku(resource.sku).known || resource.sku < 1"), yes);
        assert_eq!(run("resource.region == 'eastus' ? true : asOf"), yes);
        // What a program does answer besides bools: strings.
        assert_eq!(
            run("resource.region + '/' + string(resource.minNodes)"),
            Some(Cel::String(Arc::new("eastus/0".into())))
        );
    }

    #[test]
    fn only_expressions_with_something_to_evaluate_compile() {
        assert!(compile(&parse("cudaOf(resource.sku)")).is_none());
        assert!(compile(&parse("region(resource.region).known")).is_some());
        assert!(compile(&parse("asOf")).is_none());
        assert!(compile(&parse("resource.zones == []")).is_some());
        assert!(compile(&parse("resource.sku != null")).is_some());
    }
}
